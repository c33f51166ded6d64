/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shared.c - holds that several owners keep at once: the shared side of
 * a read-write lock and the permits of a semaphore.  The holders live in
 * a sorted set beside the key, scored by lease end on the server's clock;
 * the lock key itself holds a stamp covering the latest lease, so every
 * other client finds it held.  One script per operation (Redis 2.6 and
 * later); compat/shared_watch.c has the WATCH forms (2.2 - 2.4).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tslock_int.h"

int tslock__kind_names(tslock_lock *l)
{
    int rc = tslock__companion(l, &l->holders_key,
                               l->permits > 0 ? ":permits" : ":readers");

    if (rc == TSLOCK_OK)
        rc = tslock__companion(l, &l->intent_key, ":writer");
    if (rc == TSLOCK_OK)
        rc = tslock__channel(l);
    return rc;
}

/* What a read-write lock or semaphore needs of the server and settings. */
static int kind_supported(tslock_lock *l)
{
    tslock_client *c = l->client;
    const char *kind = l->permits > 0 ? "a semaphore" : "a read-write lock";

    if (!(c->caps & (TSLOCK_CAP_LUA | TSLOCK_CAP_WATCH)))
        return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                            "%s needs Redis 2.2 or later (Lua or WATCH): "
                            "this server has neither, so its holders cannot "
                            "be counted and added in one step",
                            kind);
    if (l->scheme != TSLOCK_SCHEME_AUTO && l->scheme != TSLOCK_SCHEME_TOKEN)
        return tslock__fail(
            c, TSLOCK_EUNSUPPORTED,
            "%s takes the token scheme (auto or token), "
            "not %s",
            kind, l->scheme == TSLOCK_SCHEME_BRIDGE ? "bridge" : "timestamp");
    if (l->fair)
        return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                            "%s has no fair mode: shared holders and "
                            "permits are not queued",
                            kind);
    return tslock__kind_names(l);
}

int tslock__kind_try(tslock_lock *l)
{
    int rc = kind_supported(l);

    if (rc != TSLOCK_OK)
        return rc;
    l->used = TSLOCK_SCHEME_TOKEN;
    l->ops = l->rw == TSLOCK_RW_EXCLUSIVE ? &tslock__rw_exclusive_ops
                                          : &tslock__shared_ops;
    return l->ops->try_acquire(l);
}

/*
 * Our entry in the holders set: our token, then the stamp this lease
 * shows to legacy clients (a bridge stamp: the classic stamp of the
 * lock's unit, made unique), which the lock key holds while ours is the
 * latest lease.
 */
static int make_member(tslock_lock *l, char *buf, size_t size, int64_t now,
                       int64_t ttl_ms, int fresh)
{
    tslock_client *c = l->client;
    int rc;

    if (now < TSLOCK__STAMP_MIN_MS)
        return tslock__fail(c, TSLOCK_ECLOCK,
                            "wall clock reads %lld ms, before 2000: the "
                            "lock key's stamp would be unreadable",
                            (long long)now);
    if (fresh && (rc = tslock__make_token(c, buf)) != TSLOCK_OK)
        return rc;
    if (!fresh)
        memcpy(buf, l->value, 32); /* an extension keeps our token */
    if (tslock__bridge_stamp(buf + 32, size - 32, l->unit, now, ttl_ms,
                             tslock__random64(c))
        < 0)
        return tslock__fail(c, TSLOCK_ECLOCK,
                            "wall clock gave an implausible time (%lld ms)",
                            (long long)now);
    return TSLOCK_OK;
}

static int shared_busy(tslock_lock *l, int64_t now,
                       const struct tslock__shared_verdict *v)
{
    static const char *const why[] = {" by an exclusive holder",
                                      ": a writer is waiting for it",
                                      ": every permit is taken"};

    l->expires_ms = v->wait_ms >= 0 ? now + v->wait_ms : 0;
    return tslock__fail(l->client, TSLOCK_EBUSY, "lock '%s' is held%s", l->key,
                        why[v->why >= 0 && v->why <= 2 ? v->why : 0]);
}

static int read_verdict(tslock_lock *l, const redisReply *r,
                        struct tslock__shared_verdict *v)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2
        || r->element[0]->type != REDIS_REPLY_INTEGER
        || r->element[1]->type != REDIS_REPLY_INTEGER)
        return tslock__unexpected(l->client, "shared hold script",
                                  "an array of integers", r);
    v->taken = r->element[0]->integer == 1;
    v->wait_ms = r->element[1]->integer;
    v->why = r->elements > 2 && r->element[2]->type == REDIS_REPLY_INTEGER
                 ? (int)r->element[2]->integer
                 : 0;
    return TSLOCK_OK;
}

static int shared_try(tslock_lock *l)
{
    tslock_client *c = l->client;
    int64_t now = tslock__now(c, TSLOCK_CLOCK_WALL);
    int64_t srv = tslock__server_now(c);
    struct tslock__shared_verdict v = {0, -1, 0};
    char ttl[24], now_s[24], limit[24];
    const char *keys[3] = {l->key, l->holders_key, l->intent_key};
    const char *args[5] = {l->value, ttl, now_s, limit, NULL};
    redisReply *r = NULL;
    int rc;

    if ((rc = make_member(l, l->value, sizeof(l->value), now, l->ttl_ms, 1)))
        return rc;
    snprintf(ttl, sizeof(ttl), "%lld", (long long)l->ttl_ms);
    tslock__script_now(c, now_s, sizeof(now_s));
    snprintf(limit, sizeof(limit), "%lld", (long long)l->permits);
    args[4] = l->rw == TSLOCK_RW_SHARED ? "1" : "0";
    if (c->caps & TSLOCK_CAP_LUA) {
        rc = tslock__script_run_keys(c, SCRIPT_SHARED_ACQUIRE, 3, keys, 5, args,
                                     &r);
        if (rc == TSLOCK_OK)
            rc = read_verdict(l, r, &v);
        freeReplyObject(r);
    } else {
        rc = tslock__shared_acquire_watch(l, l->value, srv + l->ttl_ms, srv,
                                          l->permits, l->rw == TSLOCK_RW_SHARED,
                                          &v);
    }
    if (rc != TSLOCK_OK)
        return rc;
    if (!v.taken)
        return shared_busy(l, now, &v);
    l->expires_ms = now + l->ttl_ms;
    l->held = 1;
    l->next_member[0] = '\0';
    return TSLOCK_OK;
}

/* 1 done, 0 our entry was gone, -1 the key was taken: a code. */
static int shared_outcome(tslock_lock *l, int outcome, const char *verb)
{
    if (outcome == 1)
        return TSLOCK_OK;
    if (outcome == 0)
        return tslock__guard_lost(l, verb,
                                  "our entry is gone from its holders: the "
                                  "lease ran out");
    return tslock__guard_lost(l, verb,
                              "the key was taken by an exclusive holder "
                              "(a client that read our stamp as expired)");
}

static int integer_outcome(tslock_lock *l, redisReply *r, int *outcome)
{
    int rc = TSLOCK_OK;

    if (r->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "shared hold script", "an integer",
                                r);
    else
        *outcome = r->integer > 0 ? 1 : (int)r->integer;
    freeReplyObject(r);
    return rc;
}

/* The release; *outcome as shared_outcome() reads it. */
static int release_outcome(tslock_lock *l, int *outcome)
{
    tslock_client *c = l->client;
    int64_t srv = tslock__server_now(c);
    char now_s[24];
    const char *keys[2] = {l->key, l->holders_key};
    const char *args[4] = {l->value, now_s, l->channel, "s"};
    redisReply *r = NULL;
    int rc;

    *outcome = 0;
    tslock__script_now(c, now_s, sizeof(now_s));
    if (c->caps & TSLOCK_CAP_LUA) {
        rc = tslock__script_run_keys(c, SCRIPT_SHARED_RELEASE, 2, keys,
                                     tslock__announce_sharded(l) ? 4 : 3, args,
                                     &r);
        if (rc == TSLOCK_OK)
            rc = integer_outcome(l, r, outcome);
    } else {
        rc = tslock__shared_release_watch(l, l->value, srv, outcome);
    }
    return rc;
}

static int shared_release(tslock_lock *l)
{
    int outcome, rc = release_outcome(l, &outcome);

    return rc == TSLOCK_OK ? shared_outcome(l, outcome, "released") : rc;
}

/*
 * The new entry is kept until the extension is answered, so one retried
 * after a lost reply sends the same entry, which the script and the
 * WATCH form take as done.
 */
static int shared_extend(tslock_lock *l, int64_t ttl_ms)
{
    tslock_client *c = l->client;
    int64_t now = tslock__now(c, TSLOCK_CLOCK_WALL);
    int64_t srv = tslock__server_now(c);
    char ttl[24], now_s[24];
    const char *keys[2] = {l->key, l->holders_key};
    const char *args[4] = {l->value, l->next_member, ttl, now_s};
    redisReply *r = NULL;
    int outcome = 0, rc;

    if (l->next_member[0] == '\0'
        && (rc = make_member(l, l->next_member, sizeof(l->next_member), now,
                             ttl_ms, 0)))
        return rc;
    snprintf(ttl, sizeof(ttl), "%lld", (long long)ttl_ms);
    tslock__script_now(c, now_s, sizeof(now_s));
    if (c->caps & TSLOCK_CAP_LUA) {
        rc = tslock__script_run_keys(c, SCRIPT_SHARED_EXTEND, 2, keys, 4, args,
                                     &r);
        if (rc == TSLOCK_OK)
            rc = integer_outcome(l, r, &outcome);
    } else {
        rc = tslock__shared_extend_watch(l, l->value, l->next_member,
                                         srv + ttl_ms, srv, &outcome);
    }
    if (tslock__is_transient(c, rc))
        return rc;
    if (rc == TSLOCK_OK && outcome == 1) {
        memcpy(l->value, l->next_member, sizeof(l->value));
        l->expires_ms = now + ttl_ms;
    }
    l->next_member[0] = '\0';
    return rc == TSLOCK_OK ? shared_outcome(l, outcome, "extended") : rc;
}

/* Our entry's score less the server's now. */
static int shared_time_left(tslock_lock *l, int64_t *ms_left)
{
    const char *argv[3] = {"ZSCORE", l->holders_key, l->value};
    redisReply *r = NULL;
    int rc =
        tslock__command(l->client, TSLOCK_STEP_ZSCORE, l->key, 3, argv, &r);

    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL) {
        rc =
            tslock__guard_lost(l, "read", "our entry is gone from its holders");
    } else if (r->type == REDIS_REPLY_STRING) {
        int64_t left =
            (int64_t)strtod(r->str, NULL) - tslock__server_now(l->client);
        *ms_left = left > 0 ? left : 0;
    } else {
        rc = tslock__unexpected(l->client, "ZSCORE", "a score or nil", r);
    }
    freeReplyObject(r);
    return rc;
}

const struct tslock__scheme_ops tslock__shared_ops = {
    shared_try, shared_release, shared_extend, shared_time_left};

int tslock_lock_holders(tslock_lock *l, int64_t *count)
{
    char now_s[24];
    const char *argv[4] = {"ZCOUNT", NULL, now_s, "+inf"};
    redisReply *r = NULL;
    int rc;

    if (l == NULL || count == NULL)
        return TSLOCK_EINVAL;
    *count = 0;
    if (l->rw == TSLOCK_RW_OFF && l->permits == 0)
        return tslock__fail(l->client, TSLOCK_EINVAL,
                            "lock '%s' is neither shared nor a semaphore",
                            l->key);
    tslock__clear_error(l->client);
    if ((rc = tslock__kind_names(l)) != TSLOCK_OK)
        return rc;
    argv[1] = l->holders_key;
    snprintf(now_s, sizeof(now_s), "%lld",
             (long long)tslock__server_now(l->client));
    rc = tslock__command(l->client, TSLOCK_STEP_ZCOUNT, l->key, 4, argv, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER)
        *count = r->integer;
    else if (r->type == REDIS_REPLY_ERROR)
        rc = tslock__reply_error(l->client, "ZCOUNT", r);
    else
        rc = tslock__unexpected(l->client, "ZCOUNT", "an integer", r);
    freeReplyObject(r);
    return rc;
}

static const char *const unit_names[] = {"ms", "s", "float"};

int tslock__shared_handle(const tslock_lock *l, char *buf, size_t size)
{
    if (l->ops != &tslock__shared_ops)
        return 0;
    snprintf(buf, size, "%s-%s:%s", l->permits > 0 ? "permit" : "shared",
             unit_names[l->unit], l->value);
    return 1;
}

/*
 * "shared-UNIT:" or "permit-UNIT:", then our entry: 32 hex digits and
 * the stamp.  The lock becomes that kind's holder (a semaphore of at
 * least one permit); the lease end is unknown until extended, as for an
 * adopted token.
 */
int tslock__shared_adopt(tslock_lock *l, const char *handle)
{
    int permit = strncmp(handle, "permit-", 7) == 0;
    const char *colon = strchr(handle, ':'), *value;
    int64_t exp;
    const char *why;
    size_t len;
    int i;

    if ((!permit && strncmp(handle, "shared-", 7) != 0) || colon == NULL)
        return 0;
    value = colon + 1;
    len = strlen(value);
    if (len <= 32 || len >= sizeof(l->value) || !tslock__is_token(value, 32))
        return 0;
    for (i = 0; i < 3; i++)
        if ((size_t)(colon - handle - 7) == strlen(unit_names[i])
            && strncmp(handle + 7, unit_names[i], strlen(unit_names[i])) == 0)
            break;
    if (i == 3
        || tslock__stamp_parse(value + 32, len - 32, (tslock_unit)i, &exp, &why)
               != TSLOCK_OK)
        return 0;
    if (permit && l->permits == 0) {
        l->rw = TSLOCK_RW_OFF;
        l->permits = 1;
    } else if (!permit) {
        l->permits = 0;
        l->rw = TSLOCK_RW_SHARED;
    }
    free(l->holders_key);
    l->holders_key = NULL;
    if (tslock__kind_names(l) != TSLOCK_OK)
        return 0;
    memcpy(l->value, value, len + 1);
    l->unit = (tslock_unit)i;
    tslock__dialect_plain(&l->dialect, l->unit);
    l->used = TSLOCK_SCHEME_TOKEN;
    l->ops = &tslock__shared_ops;
    l->expires_ms = 0;
    l->next_member[0] = '\0';
    l->held = 1;
    l->fence = 0;
    return 1;
}

int tslock__is_shared_hold(const tslock_lock *l)
{
    return l->ops == &tslock__shared_ops;
}

/*
 * After a lost reply, on a new connection: an extension is sent again
 * with the same new entry (taken as done if it landed).  A release is
 * sent again; finding our entry gone on the same server within our
 * lease means the lost one removed it (no one drops a live entry).
 */
int tslock__shared_settle(tslock_lock *l, int release, int same_server,
                          int64_t ttl_ms)
{
    int outcome, rc;

    if (!release)
        return shared_extend(l, ttl_ms);
    rc = release_outcome(l, &outcome);
    if (rc != TSLOCK_OK)
        return rc;
    if (outcome == 0 && same_server && tslock__lease_runs(l)) {
        tslock__fail(l->client, TSLOCK_OK,
                     "released '%s': the reply to the release was lost, and "
                     "on reconnecting our entry was gone from its holders on "
                     "the same server within our lease",
                     l->key);
        return TSLOCK_OK;
    }
    return shared_outcome(l, outcome, "released");
}
