/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bridge.c - the bridge scheme: a lock that unmodified legacy timestamp
 * clients share.  The key holds a classic expiry stamp, which they read
 * as a valid lock and take over by the classic rules once it expires.
 *
 * A stamp alone cannot prove who holds the lock: two holders in the same
 * millisecond (or second) write the same number, and a legacy release
 * that deletes our key lets another client write that number again.  So
 * where the server keeps TTLs and can change keys atomically (Lua from
 * 2.6, WATCH from 2.2), a bridge hold is ours while
 *
 *   1. the key holds our stamp,
 *   2. the key has a TTL: we set one in the same atomic step as the
 *      stamp, and legacy clients never set one (their SETNX makes a key
 *      without, their GETSET removes it), so a key rewritten by a legacy
 *      client since our write has none, and
 *   3. the owner key holds our random token: it tells us from another
 *      bridge holder that wrote the same stamp.
 *
 * The claim writes all three at once, so no client ever sees our stamp
 * without them; release and extend check all three at once.  On Redis
 * 2.0 (no TTL survives a legacy SETNX, no Lua, no WATCH) the bridge
 * scheme is the timestamp scheme with randomised stamps (timestamp.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tslock_int.h"

/* Claims that find the key changed under them: tries before giving up. */
#define CLAIM_RETRIES 4

static int proof_possible(const tslock_client *c)
{
    return (c->caps & TSLOCK_CAP_TTL_KEEPS)
           && (c->caps & (TSLOCK_CAP_LUA | TSLOCK_CAP_WATCH));
}

/* The owner key: "<key>:owner" in the lock key's slot (names.c). */
static int owner_key(tslock_lock *l)
{
    return tslock__companion(l, &l->owner_key, ":owner");
}

const char *tslock_lock_owner_key(tslock_lock *l)
{
    if (l == NULL || owner_key(l) != TSLOCK_OK)
        return NULL;
    return l->owner_key;
}

int tslock_lock_peek_owner(tslock_lock *l, char *token, size_t size)
{
    const char *argv[2];
    redisReply *r = NULL;
    int rc;

    if (l == NULL || token == NULL || size < 33)
        return TSLOCK_EINVAL;
    token[0] = '\0';
    tslock__clear_error(l->client);
    if ((rc = owner_key(l)) != TSLOCK_OK)
        return rc;
    argv[0] = "GET";
    argv[1] = l->owner_key;
    rc = tslock__command(l->client, TSLOCK_STEP_GET, l->key, 2, argv, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_ERROR)
        rc = tslock__reply_error(l->client, "GET of the owner key", r);
    else if (r->type == REDIS_REPLY_STRING && tslock__is_token(r->str, r->len))
        memcpy(token, r->str, 33);
    else if (r->type == REDIS_REPLY_STRING)
        rc = tslock__fail(l->client, TSLOCK_EUNREADABLE,
                          "owner key '%s' holds \"%.*s\", not a token of 32 "
                          "hex digits",
                          l->owner_key, r->len > 64 ? 64 : (int)r->len, r->str);
    else if (r->type != REDIS_REPLY_NIL)
        rc = tslock__unexpected(l->client, "GET of the owner key",
                                "a bulk string or nil", r);
    freeReplyObject(r);
    return rc;
}

/* The safety TTL: until a second past the stamp (ms from now). */
static int64_t safety_ms(tslock_lock *l, const char *stamp)
{
    int64_t stamp_ms = 0, ms;
    const char *why;

    if (tslock__dialect_parse(&l->dialect, stamp, strlen(stamp), &stamp_ms,
                              &why, NULL)
            != TSLOCK_OK
        || stamp_ms == INT64_MAX)
        stamp_ms = 0;
    ms = stamp_ms - tslock__now(l->client, TSLOCK_CLOCK_WALL) + 1000;
    return ms > 1000 ? ms : 1000;
}

/*
 * One claim with the script: 0 claimed, 1 to try again, else a code.
 * *seen is the expired value to take over, or NULL for an absent key;
 * it is replaced by what the script found.
 */
static int claim_lua(tslock_lock *l, const char *stamp, int64_t ttl_ms,
                     redisReply **seen)
{
    const char *keys[2] = {l->key, l->owner_key};
    char ms[24];
    const char *args[4] = {stamp, ms, l->owner_token,
                           *seen != NULL ? (*seen)->str : ""};
    redisReply *r = NULL;
    int rc;

    snprintf(ms, sizeof(ms), "%" PRId64, ttl_ms);
    rc = tslock__script_run_keys(l->client, SCRIPT_BRIDGE_CLAIM, 2, keys, 4,
                                 args, &r);
    if (rc != TSLOCK_OK)
        return rc;
    freeReplyObject(*seen);
    *seen = NULL;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) {
        freeReplyObject(r);
        return TSLOCK_OK;
    }
    if (r->type == REDIS_REPLY_NIL) { /* released meanwhile */
        freeReplyObject(r);
        return 1;
    }
    if (r->type != REDIS_REPLY_STRING) {
        rc = tslock__unexpected(l->client, "bridge claim script",
                                "1, a bulk string or nil", r);
        freeReplyObject(r);
        return rc;
    }
    rc = tslock__bridge_may_take(l, r);
    if (rc == TSLOCK_OK) {
        *seen = r; /* expired: take it over next */
        return 1;
    }
    freeReplyObject(r);
    return rc;
}

static int br_try_acquire(tslock_lock *l)
{
    tslock_client *c = l->client;
    redisReply *seen = NULL;
    int attempt, rc;

    l->proof = 0;
    if (!proof_possible(c))
        return tslock__timestamp_ops.try_acquire(l);
    if ((rc = owner_key(l)) != TSLOCK_OK
        || (rc = tslock__make_token(c, l->owner_token)) != TSLOCK_OK)
        return rc;
    for (attempt = 0; attempt < CLAIM_RETRIES; attempt++) {
        int64_t lease_end = 0;
        int expired = seen != NULL; /* this claim takes it over */

        rc = tslock__ts_make_stamp(l, l->value, sizeof(l->value), l->ttl_ms,
                                   &lease_end);
        if (rc != TSLOCK_OK)
            break;
        if (c->caps & TSLOCK_CAP_LUA)
            rc = claim_lua(l, l->value, safety_ms(l, l->value), &seen);
        else
            rc =
                tslock__bridge_claim_watch(l, l->value, safety_ms(l, l->value));
        if (rc == TSLOCK_OK) {
            l->expires_ms = lease_end;
            l->held = 1;
            l->proof = 1;
            if (expired)
                tslock__count_takeover(l->stats_client, l->key, l->used);
        }
        if (rc != 1)
            break;
    }
    freeReplyObject(seen);
    if (rc == 1)
        rc = tslock__fail(c, TSLOCK_EBUSY,
                          "lock '%s' changed under %d claims in a row", l->key,
                          CLAIM_RETRIES);
    return rc;
}

/* ------------------------------------------------------- the proof */

/* The classic form: the three reads in one round trip, then a verdict. */
static int check_classic(tslock_lock *l, const char *verb)
{
    struct tslock__proof_reads b;
    redisReply *r[3];
    int rc;

    tslock__bridge_proof_reads(l, &b);
    rc = tslock__pipeline(l->client, l->key, 3, b.q, r);
    if (rc != TSLOCK_OK)
        return rc;
    rc = tslock__bridge_judge(l, r, verb);
    tslock__free_replies(3, r);
    return rc;
}

/*
 * Check the proof and act on it: "del", "set" (a new stamp with the TTL
 * ttl_ms) or "read".  Lua checks and acts in one script, WATCH in one
 * transaction; the classic form (a forced release only) has a gap
 * between its check and its DEL, as for the other schemes.
 */
static int guard(tslock_lock *l, tslock_release_form form, const char *op,
                 const char *stamp, int64_t ttl_ms, int check_lease,
                 const char *verb)
{
    tslock_client *c = l->client;
    int rc = tslock__check_usable(c);

    if (rc == TSLOCK_OK)
        rc = owner_key(l);
    if (rc == TSLOCK_OK)
        rc = tslock__channel(l); /* a release is announced there */
    if (rc != TSLOCK_OK)
        return rc;
    if (form == TSLOCK_RELEASE_BEST)
        form = tslock__best_form(c);
    if (check_lease && !tslock__lease_runs(l))
        return tslock__guard_lost(l, verb, "our lease ran out");
    if (form == TSLOCK_RELEASE_LUA && (c->caps & TSLOCK_CAP_LUA)) {
        const char *keys[2] = {l->key, l->owner_key};
        char ms[24];
        const char *args[7] = {
            l->value, l->owner_token, op, stamp != NULL ? stamp : "",
            ms,       l->channel,     "s"};
        redisReply *r = NULL;

        snprintf(ms, sizeof(ms), "%" PRId64, ttl_ms);
        rc = tslock__script_run_keys(c, SCRIPT_BRIDGE_GUARD, 2, keys,
                                     tslock__announce_sharded(l) ? 7 : 6, args,
                                     &r);
        if (rc != TSLOCK_OK)
            return rc;
        if (r->type != REDIS_REPLY_INTEGER)
            rc = tslock__unexpected(c, "bridge proof script", "an integer", r);
        else if (r->integer >= -3 && r->integer <= -1)
            rc = tslock__bridge_proof_lost(l, verb, (int)r->integer);
        freeReplyObject(r);
        return rc;
    }
    if (form == TSLOCK_RELEASE_WATCH && (c->caps & TSLOCK_CAP_WATCH)) {
        int refused = c->publish_refused;
        rc =
            tslock__bridge_guard_watch(l, op, stamp, ttl_ms, check_lease, verb);
        /* A refused PUBLISH aborted EXEC: once more, without it. */
        if (rc != TSLOCK_OK && !refused && c->publish_refused)
            rc = tslock__bridge_guard_watch(l, op, stamp, ttl_ms, check_lease,
                                            verb);
        return rc;
    }
    if (form == TSLOCK_RELEASE_CLASSIC && strcmp(op, "set") != 0) {
        const char *del[3] = {"DEL", l->key, l->owner_key}, *publish[3];
        struct tslock__queued q[2] = {{TSLOCK_STEP_DEL, 3, del}};
        redisReply *r[2];
        int n;

        rc = check_classic(l, verb);
        if (rc == TSLOCK_OK && check_lease && !tslock__lease_runs(l))
            rc = tslock__guard_lost(l, verb, "our lease ran out");
        if (rc != TSLOCK_OK || strcmp(op, "del") != 0)
            return rc;
        n = 1 + tslock__publish_queued(l, publish, &q[1]);
        rc = tslock__pipeline(c, l->key, n, q, r);
        if (rc == TSLOCK_OK && r[0]->type != REDIS_REPLY_INTEGER)
            rc = tslock__unexpected(c, "DEL", "an integer", r[0]);
        else if (rc == TSLOCK_OK && r[0]->integer < 1)
            rc = tslock__guard_lost(l, verb, "the key vanished before DEL");
        if (n == 2 && r[1] != NULL)
            (void)tslock__publish_refused(c, r[1]);
        tslock__free_replies(n, r);
        return rc;
    }
    if (form == TSLOCK_RELEASE_CLASSIC) /* "set": extend uses the best */
        return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                            "extending a bridge hold needs Lua or WATCH");
    return tslock__form_missing(c, form);
}

/* ------------------------------------------- release, extend, read */

static int br_release(tslock_lock *l)
{
    if (!l->proof)
        return tslock__timestamp_ops.release(l);
    return guard(l, l->release_form, "del", NULL, 0, 1, "released");
}

static int br_extend(tslock_lock *l, int64_t ttl_ms)
{
    char stamp[TSLOCK__VALUE_SIZE];
    int64_t lease_end = 0;
    int rc;

    if (!l->proof)
        return tslock__timestamp_ops.extend(l, ttl_ms);
    rc = tslock__ts_make_stamp(l, stamp, sizeof(stamp), ttl_ms, &lease_end);
    if (rc == TSLOCK_OK) {
        /* Until its reply comes, the new stamp may or may not be there. */
        memcpy(l->pending, stamp, sizeof(stamp));
        l->pending_end = lease_end;
    }
    if (rc == TSLOCK_OK)
        rc = guard(l, TSLOCK_RELEASE_BEST, "set", stamp, safety_ms(l, stamp), 1,
                   "extended");
    if (rc == TSLOCK_OK) {
        memcpy(l->value, stamp, sizeof(stamp));
        l->expires_ms = lease_end;
    }
    return rc;
}

static int br_time_left(tslock_lock *l, int64_t *ms_left)
{
    int64_t left;
    int rc;

    if (!l->proof)
        return tslock__timestamp_ops.time_left(l, ms_left);
    rc = guard(l, TSLOCK_RELEASE_BEST, "read", NULL, 0, 0, "read");
    left = l->expires_ms - tslock__now(l->client, TSLOCK_CLOCK_WALL);
    if (rc == TSLOCK_OK)
        *ms_left = left > 0 ? left : 0;
    return rc;
}

const struct tslock__scheme_ops tslock__bridge_ops = {
    br_try_acquire, br_release, br_extend, br_time_left};
