/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * timestamp.c - the classic timestamp lock of the Redis SETNX page and
 * the early articles: SETNX of an expiry stamp, GETSET takeover of an
 * expired stamp, and a release that deletes only our own unexpired stamp,
 * in the strongest form the server allows.  No TTL is ever set here: on
 * Redis 2.0 the next SETNX would delete a key that has one.
 */
#include <inttypes.h>
#include <string.h>

#include "tslock_int.h"

/* SETNX, GET and DEL on a key that vanished: tries before giving up. */
#define VANISH_RETRIES 3

/*
 * Format the stamp for a lease starting now into buf; *lease_end gets
 * when our lease ends.  For the timestamp scheme that is the stamp
 * itself, except in float seconds: redis-py calls "1700000030.000"
 * expired as soon as time.time() passes it, within the millisecond that
 * our clock still reads as 1700000030000, so our lease ends one
 * millisecond sooner.  A bridge stamp lies a little past the lease (a
 * per-holder random amount), and the lease ends at now + ttl (less that
 * millisecond in float seconds, where the random part is under 1 ms).
 *
 * A wall clock before 2000 (a host that booted without its clock) would
 * write a stamp every client reads as unreadable and never takes over,
 * so the lock would stay taken for good: that is refused.
 */
int tslock__ts_make_stamp(tslock_lock *l, char *buf, size_t size,
                          int64_t ttl_ms, int64_t *lease_end)
{
    tslock_client *c = l->client;
    int64_t now = tslock__now(c, TSLOCK_CLOCK_WALL);
    int bridge = l->used == TSLOCK_SCHEME_BRIDGE;
    int n;

    if (now < TSLOCK__STAMP_MIN_MS)
        return tslock__fail(c, TSLOCK_ECLOCK,
                            "wall clock reads %" PRId64
                            " ms, before 2000: a stamp written now would be "
                            "unreadable to every client",
                            now);
    n = tslock__dialect_format(&l->dialect, buf, size, now, ttl_ms, bridge,
                               tslock__dialect_wants_random(&l->dialect, bridge)
                                   ? tslock__random64(c)
                                   : 0,
                               lease_end);
    if (n < 0)
        return tslock__fail(
            c, TSLOCK_ECLOCK,
            "wall clock gave an implausible time (%" PRId64 " ms)", now);
    return TSLOCK_OK;
}

/* The lease we wrote is ours from now on. */
static int hold(tslock_lock *l, int64_t lease_end)
{
    l->expires_ms = lease_end;
    l->held = 1;
    return TSLOCK_OK;
}

/*
 * Where the server can compare and set atomically, put the winner's stamp
 * back after losing a GETSET race, so the winner's release still finds
 * its own value.  The articles leave the loser's stamp in place, which is
 * harmless to exclusion but makes the winner's release report a loss.
 */
static void restore_winner(tslock_lock *l, const char *winner)
{
    char keep[TSLOCK__ERRSTR_SIZE];

    if (!(l->client->caps & (TSLOCK_CAP_LUA | TSLOCK_CAP_WATCH)))
        return;
    memcpy(keep, l->client->errstr, sizeof(keep));
    (void)tslock__guarded(l, TSLOCK_RELEASE_BEST, GUARDED_SET, l->value, winner,
                          0, "restored");
    memcpy(l->client->errstr, keep, sizeof(keep));
}

/* GETSET takeover of the expired stamp `seen`. */
static int take_over(tslock_lock *l, const char *seen)
{
    redisReply *r = NULL;
    int64_t exp = 0, lease_end = 0;
    int rc = tslock__ts_make_stamp(l, l->value, sizeof(l->value), l->ttl_ms,
                                   &lease_end);

    if (rc == TSLOCK_OK)
        rc = tslock__key_command(l, TSLOCK_STEP_GETSET, l->value, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL) {
        /*
         * The key was deleted after our GET, so GETSET acted as a SET on
         * a free lock: every later SETNX or GETSET sees our stamp.
         */
        rc = hold(l, lease_end);
    } else if (r->type == REDIS_REPLY_STRING && strcmp(r->str, seen) == 0
               && TSLOCK__REPLY_LEN(r) == strlen(seen)) {
        rc = hold(l, lease_end);
        if (rc == TSLOCK_OK)
            tslock__count_takeover(l->stats_client, l->key, l->used);
    } else if (r->type == REDIS_REPLY_STRING) {
        /* Another client's GETSET came first: it holds the lock. */
        if (tslock__dialect_parse(&l->dialect, r->str, r->len, &exp,
                                  &(const char *){NULL}, NULL)
            != TSLOCK_OK)
            exp = 0;
        restore_winner(l, r->str);
        rc = tslock__ts_busy(l, exp);
    } else {
        rc = tslock__unexpected(l->client, "GETSET", "a bulk string or nil", r);
    }
    freeReplyObject(r);
    return rc;
}

static int ts_try_acquire(tslock_lock *l)
{
    tslock_client *c = l->client;
    int attempt, rc = TSLOCK_OK;

    for (attempt = 0; attempt < VANISH_RETRIES; attempt++) {
        redisReply *r = NULL;
        int64_t exp, lease_end = 0;

        rc = tslock__ts_make_stamp(l, l->value, sizeof(l->value), l->ttl_ms,
                                   &lease_end);
        if (rc == TSLOCK_OK)
            rc = tslock__key_command(l, TSLOCK_STEP_SETNX, l->value, &r);
        if (rc != TSLOCK_OK)
            return rc;
        if (r->type != REDIS_REPLY_INTEGER) {
            rc = tslock__unexpected(c, "SETNX", "an integer", r);
            freeReplyObject(r);
            return rc;
        }
        if (r->integer == 1) {
            freeReplyObject(r);
            return hold(l, lease_end);
        }
        freeReplyObject(r);
        rc = tslock__key_command(l, TSLOCK_STEP_GET, NULL, &r);
        if (rc != TSLOCK_OK)
            return rc;
        if (r->type == REDIS_REPLY_NIL) { /* released meanwhile */
            freeReplyObject(r);
            continue;
        }
        if (r->type != REDIS_REPLY_STRING)
            rc = tslock__unexpected(c, "GET", "a bulk string or nil", r);
        else if ((rc = tslock__ts_read_stamp(l, r, &exp)) != TSLOCK_OK)
            ;
        else if (!tslock__stamp_expired(l, exp))
            rc = tslock__ts_busy(l, exp);
        else
            rc = take_over(l, r->str);
        freeReplyObject(r);
        return rc;
    }
    return tslock__fail(c, TSLOCK_EBUSY,
                        "lock '%s' was released and retaken %d times in a row",
                        l->key, VANISH_RETRIES);
}

/* ------------------------------------------- release, extend, read */

static int ts_release(tslock_lock *l)
{
    return tslock__guarded(l, l->release_form, GUARDED_DEL, l->value, NULL, 1,
                           "released");
}

/* Write a new stamp in place of ours, only while ours is there. */
static int ts_extend(tslock_lock *l, int64_t ttl_ms)
{
    char stamp[TSLOCK__VALUE_SIZE];
    int64_t lease_end = 0;
    int rc = tslock__ts_make_stamp(l, stamp, sizeof(stamp), ttl_ms, &lease_end);

    if (rc == TSLOCK_OK) {
        /* Until its reply comes, the new stamp may or may not be there. */
        memcpy(l->pending, stamp, sizeof(stamp));
        l->pending_end = lease_end;
        rc = tslock__guarded(l, TSLOCK_RELEASE_BEST, GUARDED_SET, l->value,
                             stamp, 1, "extended");
    }
    if (rc == TSLOCK_OK) {
        memcpy(l->value, stamp, sizeof(stamp));
        l->expires_ms = lease_end; /* the hold's count stays */
    }
    return rc;
}

static int ts_time_left(tslock_lock *l, int64_t *ms_left)
{
    redisReply *r = NULL;
    int rc = tslock__key_command(l, TSLOCK_STEP_GET, NULL, &r);
    int64_t left;

    if (rc != TSLOCK_OK)
        return rc;
    rc = tslock__guard_compare(l, r, l->value, "read");
    freeReplyObject(r);
    left = l->expires_ms - tslock__now(l->client, TSLOCK_CLOCK_WALL);
    if (rc == TSLOCK_OK)
        *ms_left = left > 0 ? left : 0;
    return rc;
}

const struct tslock__scheme_ops tslock__timestamp_ops = {
    ts_try_acquire, ts_release, ts_extend, ts_time_left};
