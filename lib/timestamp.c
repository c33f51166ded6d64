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

/* Send "STEP key [arg]", the shape of every command but MULTI/EXEC. */
static int simple(tslock_lock *l, tslock_step step, const char *arg,
                  redisReply **r)
{
    const char *argv[3] = {tslock_step_name(step), l->key, arg};

    return tslock__command(l->client, step, l->key, arg == NULL ? 2 : 3,
                           argv, NULL, r);
}

/* Format our stamp for a lease starting now into l->value. */
static int make_stamp(tslock_lock *l)
{
    tslock_client *c = l->client;
    int64_t now = tslock__now(c, TSLOCK_CLOCK_WALL);

    if (tslock_stamp_format(l->value, sizeof(l->value), l->unit, now,
                            l->ttl_ms) < 0)
        return tslock__fail(c, TSLOCK_ECLOCK,
                            "wall clock gave an implausible time (%" PRId64
                            " ms)",
                            now);
    return TSLOCK_OK;
}

/* The lease we wrote is ours from now on. */
static int hold(tslock_lock *l)
{
    const char *why = NULL;

    tslock__stamp_parse(l->value, strlen(l->value), l->unit, &l->expires_ms,
                        &why);
    l->held = 1;
    return TSLOCK_OK;
}

/* A stored value read back: EUNREADABLE with the reason, or its expiry. */
static int read_stamp(tslock_lock *l, const redisReply *r, int64_t *exp)
{
    const char *why = "";
    int rc = tslock__stamp_parse(r->str, r->len, l->unit, exp, &why);

    if (rc != TSLOCK_OK)
        tslock__fail(l->client, rc,
                     "lock '%s' holds \"%.*s\", which %s for a stamp in %s; "
                     "it is treated as held and never taken over",
                     l->key, r->len > 64 ? 64 : (int)r->len, r->str, why,
                     tslock__unit_name(l->unit));
    return rc;
}

static int busy(tslock_lock *l, int64_t holder_expires_ms)
{
    l->expires_ms = holder_expires_ms;
    return tslock__fail(l->client, TSLOCK_EBUSY,
                        "lock '%s' is held until %" PRId64 " (Unix ms)",
                        l->key, holder_expires_ms);
}

/*
 * Where the server can compare and set atomically, put the winner's stamp
 * back after losing a GETSET race, so the winner's release still finds
 * its own value.  The articles leave the loser's stamp in place, which is
 * harmless to exclusion but makes the winner's release report a loss.
 */
static void restore_winner(tslock_lock *l, const char *winner)
{
    const char *args[2] = {l->value, winner};
    redisReply *r = NULL;

    if (l->client->caps & TSLOCK_CAP_LUA) {
        (void)tslock__script_run(l->client, SCRIPT_SET_IF_EQUAL, l->key, 2,
                                 args, &r);
        freeReplyObject(r);
    }
}

/* GETSET takeover of the expired stamp `seen`. */
static int take_over(tslock_lock *l, const char *seen)
{
    redisReply *r = NULL;
    int64_t exp = 0;
    int rc = make_stamp(l);

    if (rc == TSLOCK_OK)
        rc = simple(l, TSLOCK_STEP_GETSET, l->value, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL) {
        /*
         * The key was deleted after our GET, so GETSET acted as a SET on
         * a free lock: every later SETNX or GETSET sees our stamp.
         */
        rc = hold(l);
    } else if (r->type == REDIS_REPLY_STRING && strcmp(r->str, seen) == 0
               && r->len == strlen(seen)) {
        rc = hold(l);
    } else if (r->type == REDIS_REPLY_STRING) {
        /* Another client's GETSET came first: it holds the lock. */
        if (tslock__stamp_parse(r->str, r->len, l->unit, &exp,
                                &(const char *){NULL})
            != TSLOCK_OK)
            exp = 0;
        restore_winner(l, r->str);
        rc = busy(l, exp);
    } else {
        rc = tslock__unexpected(l->client, "GETSET", "a bulk string or nil",
                                r);
    }
    freeReplyObject(r);
    return rc;
}

int tslock__ts_try_acquire(tslock_lock *l)
{
    tslock_client *c = l->client;
    int attempt, rc = TSLOCK_OK;

    for (attempt = 0; attempt < VANISH_RETRIES; attempt++) {
        redisReply *r = NULL;
        int64_t exp;

        rc = make_stamp(l);
        if (rc == TSLOCK_OK)
            rc = simple(l, TSLOCK_STEP_SETNX, l->value, &r);
        if (rc != TSLOCK_OK)
            return rc;
        if (r->type != REDIS_REPLY_INTEGER) {
            rc = tslock__unexpected(c, "SETNX", "an integer", r);
            freeReplyObject(r);
            return rc;
        }
        if (r->integer == 1) {
            freeReplyObject(r);
            return hold(l);
        }
        freeReplyObject(r);
        rc = simple(l, TSLOCK_STEP_GET, NULL, &r);
        if (rc != TSLOCK_OK)
            return rc;
        if (r->type == REDIS_REPLY_NIL) { /* released meanwhile */
            freeReplyObject(r);
            continue;
        }
        if (r->type != REDIS_REPLY_STRING)
            rc = tslock__unexpected(c, "GET", "a bulk string or nil", r);
        else if ((rc = read_stamp(l, r, &exp)) != TSLOCK_OK)
            ;
        else if (exp >= tslock__now(c, TSLOCK_CLOCK_WALL))
            rc = busy(l, exp);
        else
            rc = take_over(l, r->str);
        freeReplyObject(r);
        return rc;
    }
    return tslock__fail(c, TSLOCK_EBUSY,
                        "lock '%s' was released and retaken %d times in a row",
                        l->key, VANISH_RETRIES);
}

/* ------------------------------------------------------------ release */

static int lost(tslock_lock *l, const char *why)
{
    return tslock__fail(l->client, TSLOCK_ELOST,
                        "lock '%s' was not released: %s; nothing deleted",
                        l->key, why);
}

/* Whether our lease, less the margin, still runs. */
static int lease_runs(tslock_lock *l)
{
    return tslock__now(l->client, TSLOCK_CLOCK_WALL) + l->margin_ms
           <= l->expires_ms;
}

/* GET and compare: TSLOCK_OK when the stored value is still ours. */
static int still_ours(tslock_lock *l)
{
    redisReply *r = NULL;
    int rc = simple(l, TSLOCK_STEP_GET, NULL, &r);

    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL)
        rc = lost(l, "the key is gone");
    else if (r->type != REDIS_REPLY_STRING)
        rc = tslock__unexpected(l->client, "GET", "a bulk string or nil", r);
    else if (r->len != strlen(l->value) || strcmp(r->str, l->value) != 0) {
        char why[160];
        snprintf(why, sizeof(why), "it now holds \"%.*s\", not our \"%s\"",
                 r->len > 64 ? 64 : (int)r->len, r->str, l->value);
        rc = lost(l, why);
    } else if (!lease_runs(l))
        rc = lost(l, "our lease ran out");
    freeReplyObject(r);
    return rc;
}

/* GET, compare, DEL: any server; another client can slip in between. */
static int release_classic(tslock_lock *l)
{
    redisReply *r = NULL;
    int rc = still_ours(l);

    if (rc == TSLOCK_OK)
        rc = simple(l, TSLOCK_STEP_DEL, NULL, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "DEL", "an integer", r);
    else if (r->integer != 1)
        rc = lost(l, "the key vanished before DEL");
    freeReplyObject(r);
    return rc;
}

/* WATCH, GET, compare, MULTI, DEL, EXEC: EXEC fails if the key changed. */
static int release_watch(tslock_lock *l)
{
    redisReply *r = NULL;
    int rc = simple(l, TSLOCK_STEP_WATCH, NULL, &r);

    if (rc == TSLOCK_OK && r->type != REDIS_REPLY_STATUS)
        rc = tslock__unexpected(l->client, "WATCH", "+OK", r);
    freeReplyObject(r);
    if (rc == TSLOCK_OK && (rc = still_ours(l)) != TSLOCK_OK
        && !l->client->broken) {
        /* Leave no WATCH behind on the connection. */
        char keep[TSLOCK__ERRSTR_SIZE];
        memcpy(keep, l->client->errstr, sizeof(keep));
        const char *unwatch[1] = {"UNWATCH"};
        if (tslock__command(l->client, TSLOCK_STEP_UNWATCH, l->key, 1,
                            unwatch, NULL, &r)
            == TSLOCK_OK)
            freeReplyObject(r);
        memcpy(l->client->errstr, keep, sizeof(keep));
    }
    if (rc != TSLOCK_OK)
        return rc;
    {
        const char *multi[1] = {"MULTI"}, *exec[1] = {"EXEC"};
        rc = tslock__command(l->client, TSLOCK_STEP_MULTI, l->key, 1, multi,
                             NULL, &r);
        freeReplyObject(r);
        if (rc == TSLOCK_OK)
            rc = simple(l, TSLOCK_STEP_DEL, NULL, &r);
        if (rc == TSLOCK_OK)
            freeReplyObject(r);
        if (rc == TSLOCK_OK)
            rc = tslock__command(l->client, TSLOCK_STEP_EXEC, l->key, 1,
                                 exec, NULL, &r);
    }
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL)
        rc = lost(l, "the key changed between WATCH and EXEC");
    else if (r->type != REDIS_REPLY_ARRAY || r->elements != 1
             || r->element[0]->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "EXEC", "[DEL result] or nil",
                                r);
    else if (r->element[0]->integer != 1)
        rc = lost(l, "the key vanished before DEL");
    freeReplyObject(r);
    return rc;
}

/* One compare-and-delete script: nothing can slip in. */
static int release_lua(tslock_lock *l)
{
    const char *args[1] = {l->value};
    redisReply *r = NULL;
    int rc;

    if (!lease_runs(l))
        return lost(l, "our lease ran out");
    rc = tslock__script_run(l->client, SCRIPT_DEL_IF_EQUAL, l->key, 1, args,
                            &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "compare-and-delete script",
                                "an integer", r);
    else if (r->integer != 1)
        rc = lost(l, "it no longer holds our stamp");
    freeReplyObject(r);
    return rc;
}

int tslock__ts_release(tslock_lock *l)
{
    unsigned caps = l->client->caps;
    tslock_release_form form = l->release_form;

    if (form == TSLOCK_RELEASE_BEST)
        form = caps & TSLOCK_CAP_LUA     ? TSLOCK_RELEASE_LUA
               : caps & TSLOCK_CAP_WATCH ? TSLOCK_RELEASE_WATCH
                                         : TSLOCK_RELEASE_CLASSIC;
    if (!lease_runs(l))
        return lost(l, "our lease ran out");
    switch (form) {
    case TSLOCK_RELEASE_LUA:
        if (!(caps & TSLOCK_CAP_LUA))
            break;
        return release_lua(l);
    case TSLOCK_RELEASE_WATCH:
        if (!(caps & TSLOCK_CAP_WATCH))
            break;
        return release_watch(l);
    default:
        return release_classic(l);
    }
    return tslock__fail(l->client, TSLOCK_EUNSUPPORTED,
                        "release form %d needs %s, which this server lacks",
                        (int)form, form == TSLOCK_RELEASE_LUA ? "Lua" : "WATCH");
}
