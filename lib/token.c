/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * token.c - the token lock: a random 128-bit token with a server-side
 * TTL.  SET key token NX PX ttl where the server has it (2.6.12); the
 * compat/ paths on older servers; release, extend and time-left compare
 * the token first, so a lock that moved on is never touched.
 */
#include <stdio.h>
#include <string.h>

#include "tslock_int.h"

/*
 * The key exists: read it and its TTL in one round trip.  GET fails with
 * WRONGTYPE when the key is not a string (a hash, a list), which must be
 * reported, not waited on; PTTL tells when the holder's lease ends.  Only
 * the busy path pays this round trip.
 */
static int read_holder(tslock_lock *l, int64_t *holder_pttl)
{
    const char *get[2] = {"GET", l->key}, *pttl[2] = {"PTTL", l->key};
    const struct tslock__queued q[2] = {{TSLOCK_STEP_GET, 2, get},
                                        {TSLOCK_STEP_PTTL, 2, pttl}};
    redisReply *r[2];
    int rc = tslock__pipeline(l->client, l->key, 2, q, r);

    if (rc != TSLOCK_OK)
        return rc;
    if (r[0]->type == REDIS_REPLY_ERROR)
        rc = tslock__reply_error(l->client, "GET", r[0]);
    else if (r[0]->type == REDIS_REPLY_NIL)
        *holder_pttl = 0; /* expired since the SET: try again at once */
    else if (r[1]->type == REDIS_REPLY_INTEGER)
        *holder_pttl = r[1]->integer;
    tslock__free_replies(2, r);
    return rc == TSLOCK_OK ? TSLOCK_EBUSY : rc;
}

/*
 * SET key token NX PX ttl: +OK when taken, nil when held.  With replicas
 * asked for (tslock_lock_set_replicas()), WAIT goes in the same round
 * trip; its verdict is judged only when the SET took the key.
 */
static int acquire_set_nx_px(tslock_lock *l, int joins, int64_t *holder_pttl)
{
    char ms[TSLOCK__I64_STR], n[TSLOCK__I64_STR], wait_ms[TSLOCK__I64_STR];
    const char *argv[6] = {"SET", l->key, l->value, "NX", "PX", ms};
    const char *wait[3] = {"WAIT", n, wait_ms};
    const struct tslock__queued q[2] = {{TSLOCK_STEP_SET, 6, argv},
                                        {TSLOCK_STEP_WAIT, 3, wait}};
    redisReply *r[2] = {NULL, NULL};
    int rc;

    *holder_pttl = -1;
    /* Built on every acquire: without snprintf, WAIT's only when sent. */
    tslock__i64_str(ms, l->ttl_ms);
    if (l->replicas > 0) {
        tslock__i64_str(n, l->replicas);
        tslock__i64_str(wait_ms, l->replicas_ms);
    }
    rc = tslock__pipeline(l->client, l->key, l->replicas > 0 ? 2 : 1, q, r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r[0]->type == REDIS_REPLY_STATUS)
        rc = TSLOCK_OK;
    else if (r[0]->type == REDIS_REPLY_NIL)
        rc = TSLOCK_EBUSY;
    else
        rc = tslock__unexpected(l->client, "SET NX PX", "+OK or nil", r[0]);
    if (rc == TSLOCK_OK && r[1] != NULL) {
        l->replicas_seen = 1;
        l->replicas_rc = tslock__replicas_judge(l, r[1]);
    }
    tslock__free_replies(2, r);
    /*
     * A wait that joins the line reads the holder in the line's script.
     * Woken by a release and beaten to the key by another waiter: the new
     * holder is a tslock client, whose release will wake us too, so the
     * herd goes back to sleep without reading it (one round trip each).
     */
    if (rc == TSLOCK_EBUSY && !joins && !(l->listening && l->woken))
        rc = read_holder(l, holder_pttl);
    return rc;
}

/*
 * An acquire whose connection failed may still have set its token: the
 * reply was lost, not necessarily the command.  The next attempt of this
 * lock object sends the same token; when the key turns out to hold it,
 * the hold is ours, with the lease counted from the interrupted attempt
 * (the server's TTL started no earlier), instead of a key nobody holds
 * blocking everyone until it expires.
 */
static int reclaim_orphan(tslock_lock *l)
{
    redisReply *r = NULL;
    int rc = tslock__key_command(l, TSLOCK_STEP_GET, NULL, &r);

    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_STRING && strcmp(r->str, l->orphan) == 0) {
        l->expires_ms = l->orphan_at + l->ttl_ms;
        l->held = 1;
        rc = TSLOCK_OK;
    } else {
        rc = TSLOCK_EBUSY;
    }
    freeReplyObject(r);
    return rc;
}

static int token_try_acquire(tslock_lock *l)
{
    tslock_client *c = l->client;
    int64_t now, holder_pttl = -1;
    int reclaim = l->orphan[0] != '\0';
    int rc = TSLOCK_OK, joins;

    if (reclaim)
        memcpy(l->value, l->orphan, sizeof(l->orphan));
    else if (l->given[0] != '\0') /* one token on every Redlock master */
        memcpy(l->value, l->given, sizeof(l->given));
    else
        rc = tslock__make_token(c, l->value);
    if (rc != TSLOCK_OK)
        return rc;
    now = tslock__now(c, TSLOCK_CLOCK_WALL);
    /*
     * Held, and this acquire waits: it joins the line at once, so that a
     * release wakes it alone, in its turn (fair.c); the same script takes
     * the key if it came free since.  Only the busy path pays it.
     */
    joins = !l->queued && !reclaim && tslock__queue_eligible(l);
    if (l->queued)
        rc = tslock__queue_try(l, &holder_pttl); /* in line: refresh too */
    else if (c->caps & TSLOCK_CAP_SET_NX_PX)
        rc = acquire_set_nx_px(l, joins, &holder_pttl);
    else if (c->caps & TSLOCK_CAP_LUA)
        rc = tslock__token_acquire_lua(l, &holder_pttl);
    else if (c->caps & TSLOCK_CAP_WATCH)
        rc = tslock__token_acquire_watch(l, &holder_pttl);
    else
        return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                            "token mode needs Redis 2.2 or later: this "
                            "server has no WATCH and no Lua, and a TTL on a "
                            "lock key is deleted by the next SETNX; use the "
                            "timestamp scheme");
    if (rc == TSLOCK_EBUSY && joins)
        rc = tslock__queue_try(l, &holder_pttl);
    if (tslock__is_transient(c, rc)) {
        if (!reclaim) {
            memcpy(l->orphan, l->value, sizeof(l->orphan));
            l->orphan_at = now;
        }
        return rc;
    }
    if (rc == TSLOCK_EBUSY && reclaim) {
        int got = reclaim_orphan(l);
        if (got == TSLOCK_OK || tslock__is_transient(c, got)) {
            if (got == TSLOCK_OK)
                l->orphan[0] = '\0';
            return got;
        }
    }
    l->orphan[0] = '\0';
    if (rc == TSLOCK_OK) {
        l->expires_ms = now + l->ttl_ms;
        l->held = 1;
    } else if (rc == TSLOCK_EBUSY) {
        l->expires_ms = holder_pttl >= 0 ? now + holder_pttl : 0;
        if (holder_pttl >= 0)
            tslock__fail(c, rc, "lock '%s' is held for %lld ms more", l->key,
                         (long long)holder_pttl);
        else
            tslock__fail(c, rc, "lock '%s' is held", l->key);
    }
    return rc;
}

static int token_release(tslock_lock *l)
{
    return tslock__guarded(l, l->release_form, GUARDED_DEL, l->value, NULL, 0,
                           "released");
}

static int token_extend(tslock_lock *l, int64_t ttl_ms)
{
    char ms[24];
    int64_t now = tslock__now(l->client, TSLOCK_CLOCK_WALL);
    int rc;

    snprintf(ms, sizeof(ms), "%lld", (long long)ttl_ms);
    rc = tslock__guarded(l, TSLOCK_RELEASE_BEST, GUARDED_PEXPIRE, l->value, ms,
                         0, "extended");
    if (rc == TSLOCK_OK)
        l->expires_ms = now + ttl_ms;
    return rc;
}

static int token_time_left(tslock_lock *l, int64_t *ms_left)
{
    const char *args[1] = {l->value};
    redisReply *r = NULL;
    int rc;

    if (!(l->client->caps & TSLOCK_CAP_LUA)) {
        /* 2.2 - 2.4: compare, then the TTL in seconds (a query only). */
        rc = tslock__key_command(l, TSLOCK_STEP_GET, NULL, &r);
        if (rc != TSLOCK_OK)
            return rc;
        rc = tslock__guard_compare(l, r, l->value, "read");
        freeReplyObject(r);
        if (rc == TSLOCK_OK)
            rc = tslock__key_command(l, TSLOCK_STEP_TTL, NULL, &r);
        if (rc != TSLOCK_OK)
            return rc;
        if (r->type == REDIS_REPLY_INTEGER)
            *ms_left = r->integer > 0 ? r->integer * 1000 : 0;
        else
            rc = tslock__unexpected(l->client, "TTL", "an integer", r);
        freeReplyObject(r);
        return rc;
    }
    rc = tslock__script_run(l->client, SCRIPT_PTTL_IF_EQUAL, l->key, 1, args,
                            &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "PTTL script", "an integer", r);
    else if (r->integer == -3)
        rc = tslock__guard_lost(l, "read", "it no longer holds our token");
    else
        *ms_left = r->integer > 0 ? r->integer : 0;
    freeReplyObject(r);
    return rc;
}

const struct tslock__scheme_ops tslock__token_ops = {
    token_try_acquire, token_release, token_extend, token_time_left};
