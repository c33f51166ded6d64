/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * guard.c - changing the lock key only while it still holds our value:
 * delete it, set a new value, or set its TTL.  One Lua script where the
 * server has scripts; the WATCH form lives in compat/; the classic form
 * (GET, compare, then act) is for servers with neither and has a gap.
 */
#include <stdio.h>
#include <string.h>

#include "tslock_int.h"

tslock_release_form tslock__best_form(const tslock_client *c)
{
    return c->caps & TSLOCK_CAP_LUA     ? TSLOCK_RELEASE_LUA
           : c->caps & TSLOCK_CAP_WATCH ? TSLOCK_RELEASE_WATCH
                                        : TSLOCK_RELEASE_CLASSIC;
}

/*
 * The release that wakes the first live waiter of the line alone.  On a
 * single server it names the lock and the line's arrival counter only
 * (the script names the line from the counter), and the cluster flag goes
 * only to a cluster: each argument is a cost on every release, most of
 * which find nobody in line.  On a cluster the line and its liveness set
 * are declared keys too: while the slot migrates, a key the script did
 * not declare may already be on the target, and Redis then refuses the
 * script ("attempted to access a non local key") where, for declared
 * keys, it answers -ASK or -TRYAGAIN, which the client follows.
 */
static int release_wake_one(tslock_lock *l, const char *expect, redisReply **r)
{
    char now[TSLOCK__I64_STR];
    const char *keys[4] = {l->key, l->seq_key, l->queue_key, l->alive_key};
    int cluster = l->client->cluster != NULL;
    const char *args[4] = {expect, l->channel, now,
                           tslock__sharded(l->client) ? "sharded" : "cluster"};
    /*
     * "sharded": a sharded entry of the line is woken by SPUBLISH and
     * counted (entries of either kind are woken as they listen), and
     * with nobody woken the key's channel hears an SPUBLISH: every
     * listening waiter of a token lock, of tslock 1.0 too, joins the
     * line, so no classic listener is left out.
     */

    tslock__i64_str(now, tslock__now(l->client, TSLOCK_CLOCK_WALL));
    return tslock__script_run_keys(l->client, SCRIPT_RELEASE_WAKE,
                                   cluster ? 4 : 2, keys, cluster ? 4 : 3, args,
                                   r);
}

static int guarded_lua(tslock_lock *l, enum tslock__guarded_op op,
                       const char *expect, const char *arg, const char *verb)
{
    static const enum tslock__script scripts[] = {
        SCRIPT_DEL_IF_EQUAL, SCRIPT_SET_IF_EQUAL, SCRIPT_PEXPIRE_IF_EQUAL};
    const char *args[3] = {expect, op == GUARDED_DEL ? l->channel : arg, "s"};
    int nargs = args[1] == NULL                                    ? 1
                : op == GUARDED_DEL && tslock__announce_sharded(l) ? 3
                                                                   : 2;
    redisReply *r = NULL;
    int rc = op == GUARDED_DEL && tslock__wakes_one(l)
                 ? release_wake_one(l, expect, &r)
                 : tslock__script_run(l->client, scripts[op], l->key, nargs,
                                      args, &r);

    if (rc != TSLOCK_OK)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "compare script", "an integer", r);
    else if (r->integer != 1)
        rc = tslock__guard_lost(l, verb, "it no longer holds our value");
    freeReplyObject(r);
    return rc;
}

/* DEL and PUBLISH in one round trip: the classic release's last step. */
static int del_and_announce(tslock_lock *l, const char *verb)
{
    const char *del[2] = {"DEL", l->key}, *publish[3];
    struct tslock__queued q[2] = {{TSLOCK_STEP_DEL, 2, del}};
    redisReply *r[2];
    int n = 1 + tslock__publish_queued(l, publish, &q[1]);
    int rc = tslock__pipeline(l->client, l->key, n, q, r);

    if (rc != TSLOCK_OK)
        return rc;
    if (r[0]->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "DEL", "an integer", r[0]);
    else if (r[0]->integer != 1)
        rc = tslock__guard_lost(l, verb, "the key vanished before DEL");
    if (n == 2)
        (void)tslock__publish_refused(l->client, r[1]);
    tslock__free_replies(n, r);
    return rc;
}

/*
 * Redis 2.0 has neither scripts nor WATCH.  DEL: GET, compare, DEL (with
 * its announcement).
 * SET: GET and compare (to keep the gap small), then GETSET and check
 * what it replaced; if that was not ours after all, put it back, which
 * can itself race.  tslock(7) documents both gaps.
 */
static int guarded_classic(tslock_lock *l, enum tslock__guarded_op op,
                           const char *expect, const char *arg, int check_lease,
                           const char *verb)
{
    redisReply *r = NULL;
    int rc;

    if (op == GUARDED_PEXPIRE)
        return tslock__fail(l->client, TSLOCK_EUNSUPPORTED,
                            "a compare-and-expire needs Lua or WATCH");
    rc = tslock__key_command(l, TSLOCK_STEP_GET, NULL, &r);
    if (rc != TSLOCK_OK)
        return rc;
    rc = tslock__guard_compare(l, r, expect, verb);
    freeReplyObject(r);
    if (rc == TSLOCK_OK && check_lease && !tslock__lease_runs(l))
        rc = tslock__guard_lost(l, verb, "our lease ran out");
    if (rc == TSLOCK_OK && op == GUARDED_DEL)
        return del_and_announce(l, verb);
    if (rc == TSLOCK_OK)
        rc = tslock__key_command(l, TSLOCK_STEP_GETSET, arg, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if ((rc = tslock__guard_compare(l, r, expect, verb)) == TSLOCK_ELOST) {
        redisReply *undo = NULL;
        if (r->type == REDIS_REPLY_STRING
            && tslock__key_command(l, TSLOCK_STEP_GETSET, r->str, &undo)
                   == TSLOCK_OK)
            freeReplyObject(undo);
    }
    freeReplyObject(r);
    return rc;
}

int tslock__guarded(tslock_lock *l, tslock_release_form form,
                    enum tslock__guarded_op op, const char *expect,
                    const char *arg, int check_lease, const char *verb)
{
    unsigned caps = l->client->caps;
    int rc = tslock__check_usable(l->client);

    /*
     * A broken client's capabilities may be gone with its failed probe:
     * say EIO, as for any call on it, not that a form is missing.
     */
    if (rc != TSLOCK_OK)
        return rc;
    if (form == TSLOCK_RELEASE_BEST)
        form = tslock__best_form(l->client);
    if (check_lease && !tslock__lease_runs(l))
        return tslock__guard_lost(l, verb, "our lease ran out");
    /* Every release is announced, for the waiters (wakeup.c). */
    if (op == GUARDED_DEL && tslock__channel(l) != TSLOCK_OK)
        return TSLOCK_ENOMEM;
    switch (form) {
    case TSLOCK_RELEASE_LUA:
        if (caps & TSLOCK_CAP_LUA)
            return guarded_lua(l, op, expect, arg, verb);
        break;
    case TSLOCK_RELEASE_WATCH:
        if (caps & TSLOCK_CAP_WATCH) {
            int refused = l->client->publish_refused;
            rc = tslock__guarded_watch(l, op, expect, arg, check_lease, verb);
            /* A refused PUBLISH aborted EXEC: once more, without it. */
            if (rc != TSLOCK_OK && !refused && l->client->publish_refused)
                rc = tslock__guarded_watch(l, op, expect, arg, check_lease,
                                           verb);
            return rc;
        }
        break;
    default:
        return guarded_classic(l, op, expect, arg, check_lease, verb);
    }
    return tslock__form_missing(l->client, form);
}

int tslock__form_missing(tslock_client *c, tslock_release_form form)
{
    return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                        "the %s form needs %s, which this server lacks",
                        form == TSLOCK_RELEASE_LUA ? "Lua" : "WATCH",
                        form == TSLOCK_RELEASE_LUA ? "EVAL" : "WATCH");
}
