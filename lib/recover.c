/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * recover.c - keeping a hold through a dropped connection: release and
 * extend reconnect with bounded, jittered backoff and finish their work
 * while the lease leaves room, after settling what the interrupted
 * command did on the server.  tslock(7), FAILURES, states the rules.
 */
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "tslock_int.h"

#define BACKOFF_FIRST_MS 10
#define BACKOFF_MAX_MS   1000

/* One recovery in progress. */
struct recovery {
    tslock_lock *l;
    enum tslock__recover_op op;
    int64_t ttl_ms;   /* extend: the lease asked for */
    int64_t real_end; /* monotonic ms, real clock: the hard bound */
    int64_t started;  /* monotonic ms, real clock */
    int64_t delay;    /* next backoff, before jitter */
    int attempts;
    int first_rc;                    /* the fault that started it */
    char first[TSLOCK__ERRSTR_SIZE]; /* its detail */
    char server[sizeof(((tslock_client *)0)->run_id)]; /* run_id before */
    int restarted; /* the server came back with another run_id */
};

int64_t tslock__recovery_margin_ms(const tslock_lock *l)
{
    /* The clock drift allowance of Redlock: 1% of the lease plus 2 ms. */
    int64_t drift = l->ttl_ms / 100 + 2;

    return l->margin_ms > drift ? l->margin_ms : drift;
}

/*
 * Whether our lease end is known.  A token handle adopted from another
 * process (tslock extend/release KEY HANDLE) carries none: expires_ms is
 * 0 until an extension sets it.
 */
static int lease_known(const tslock_lock *l)
{
    return l->expires_ms > 0;
}

/*
 * How long the recovery may still go on, in ms; <= 0 when it is over.
 * With the lease end unknown only the real bound counts: what the
 * recovery then does is guarded by our value on the server (settle_*),
 * never by our clock.
 */
static int64_t room_left(const struct recovery *r)
{
    tslock_lock *l = r->l;
    int64_t lease = l->expires_ms - tslock__recovery_margin_ms(l)
                    - tslock__now(l->client, TSLOCK_CLOCK_WALL);
    int64_t real = r->real_end - tslock__system_ms(TSLOCK_CLOCK_MONOTONIC);

    return lease_known(l) && lease < real ? lease : real;
}

/* Sleep the next backoff, jittered to 50-100%, never past the room. */
static void back_off(struct recovery *r, int64_t room)
{
    int64_t ms = r->delay / 2
                 + (int64_t)(tslock__random64(r->l->client)
                             % (uint64_t)(r->delay / 2 + 1));

    if (ms > room)
        ms = room;
    if (ms > 0)
        (void)poll(NULL, 0, (int)ms);
    r->delay = r->delay * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : r->delay * 2;
}

/*
 * Read what the key holds now: 1 our value, 2 the stamp an interrupted
 * extension sent, 3 another value, 0 nothing; or a negative code.
 */
static int holds_now(tslock_lock *l)
{
    redisReply *r = NULL;
    int rc = tslock__key_command(l, TSLOCK_STEP_GET, NULL, &r);

    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL)
        rc = 0;
    else if (r->type != REDIS_REPLY_STRING)
        rc = tslock__unexpected(l->client, "GET", "a bulk string or nil", r);
    else if (TSLOCK__REPLY_LEN(r) == strlen(l->value)
             && memcmp(r->str, l->value, r->len) == 0)
        rc = 1;
    else if (l->pending[0] != '\0' && TSLOCK__REPLY_LEN(r) == strlen(l->pending)
             && memcmp(r->str, l->pending, r->len) == 0)
        rc = 2;
    else
        rc = 3;
    freeReplyObject(r);
    return rc;
}

/* ELOST for a key found gone or foreign, naming a restart if seen. */
static int not_ours(struct recovery *r, int gone)
{
    static const char *const why[3][2] = {
        {"the key holds another value", "the key is gone"},
        {"the server restarted (its run_id changed) and the key holds "
         "another value",
         "the server restarted (its run_id changed) and the key is gone"},
        {"the sentinels named another master (a failover; replication is "
         "asynchronous) and the key there holds another value",
         "the sentinels named another master (a failover; replication is "
         "asynchronous) and the key is not there"}};
    int which = !r->restarted ? 0 : r->l->client->nsentinels > 0 ? 2 : 1;

    return tslock__guard_lost(
        r->l, r->op == RECOVER_RELEASE ? "released" : "extended",
        why[which][gone]);
}

/*
 * A release whose reply was lost may have taken effect.  On the same
 * server, within our lease, a key that no longer holds our value was
 * deleted by us: a token cannot expire before our lease does, and a
 * stamp is not taken over while it runs, so a gone key is ours deleted.
 * Another value in a token key means a waiter took it after our DEL;
 * in a stamp key it may mean a legacy client misjudged our stamp, so
 * that stays a loss.
 */
static int settle_release(struct recovery *r, int now)
{
    tslock_lock *l = r->l;
    /*
     * On a cluster the run_id is the first node's, not the key's master's,
     * which may have failed over to a replica that never had the lock: a
     * gone key proves nothing there.
     */
    int same =
        !r->restarted && r->server[0] != '\0' && l->client->cluster == NULL;
    int known = lease_known(l);

    if (now == 2) { /* an earlier extension's stamp landed: ours */
        memcpy(l->value, l->pending, sizeof(l->value));
        l->expires_ms = l->pending_end;
        l->pending[0] = '\0';
        now = 1;
    }
    if (now == 1)
        return l->ops->release(l);
    if (same && !known)
        return tslock__guard_lost(
            l, "released",
            now == 0 ? "the reply to the release was lost and the key is "
                       "gone; this adopted hold's lease end is unknown, so "
                       "it may have expired before our DEL"
                     : "the reply to the release was lost and the key "
                       "holds another value; this adopted hold's lease end "
                       "is unknown, so it may have expired before our DEL");
    if (same && (now == 0 || l->used == TSLOCK_SCHEME_TOKEN)) {
        tslock__fail(l->client, TSLOCK_OK,
                     "released '%s': the reply to the release was lost, and "
                     "on reconnecting the key no longer held our value on "
                     "the same server within our lease",
                     l->key);
        return TSLOCK_OK;
    }
    return not_ours(r, now == 0);
}

/* An extension whose reply was lost may have written its new stamp. */
static int settle_extend(struct recovery *r, int now)
{
    tslock_lock *l = r->l;

    if (now == 2) {
        memcpy(l->value, l->pending, sizeof(l->value));
        l->expires_ms = l->pending_end;
        return TSLOCK_OK;
    }
    if (now == 1)
        return l->ops->extend(l, r->ttl_ms);
    return not_ours(r, now == 0);
}

/* Cut the client's timeouts to room ms; the old ones go to saved[2]. */
static void cut_timeouts(tslock_client *c, int64_t room, int saved[2])
{
    int cap = room > INT_MAX ? INT_MAX : room < 1 ? 1 : (int)room;

    saved[0] = c->connect_ms;
    saved[1] = c->command_ms;
    c->connect_ms = saved[0] == 0 || saved[0] > cap ? cap : saved[0];
    c->command_ms = saved[1] == 0 || saved[1] > cap ? cap : saved[1];
}

int tslock__reconnect_within(tslock_client *c, int64_t room)
{
    int saved[2], rc;

    cut_timeouts(c, room, saved);
    rc = tslock_client_reconnect(c);
    (void)tslock_client_set_timeouts(c, saved[0], saved[1]);
    return rc;
}

/* One attempt: reconnect with timeouts cut to the room, then settle. */
static int attempt(struct recovery *r, int64_t room)
{
    tslock_client *c = r->l->client;
    int saved[2], rc, now;

    r->attempts++;
    cut_timeouts(c, room, saved);
    rc = tslock_client_reconnect(c);
    if (rc == TSLOCK_OK) {
        if (r->server[0] != '\0' && strcmp(r->server, c->run_id) != 0)
            r->restarted = 1;
        if (tslock__is_shared_hold(r->l)) {
            /* The key holds the latest lease's stamp, not our entry. */
            rc = tslock__shared_settle(r->l, r->op == RECOVER_RELEASE,
                                       !r->restarted && r->server[0] != '\0',
                                       r->ttl_ms);
        } else {
            now = holds_now(r->l);
            rc = now < 0                    ? now
                 : r->op == RECOVER_RELEASE ? settle_release(r, now)
                                            : settle_extend(r, now);
        }
    }
    (void)tslock_client_set_timeouts(c, saved[0], saved[1]);
    return rc;
}

static void note_recovered(struct recovery *r)
{
    tslock_lock *l = r->l;

    l->recoveries++;
    l->recovered_code = r->first_rc;
    snprintf(
        l->recovered_why, sizeof(l->recovered_why),
        "%.400s; reconnected after %d attempt%s in %lld ms", r->first,
        r->attempts, r->attempts == 1 ? "" : "s",
        (long long)(tslock__system_ms(TSLOCK_CLOCK_MONOTONIC) - r->started));
}

/* Nothing reached the server in time: say which bound ended it. */
static int give_up(struct recovery *r, int last_rc)
{
    tslock_lock *l = r->l;
    const char *verb = r->op == RECOVER_RELEASE ? "released" : "extended";
    char why[TSLOCK__ERRSTR_SIZE];
    int lease_over = lease_known(l)
                     && l->expires_ms - tslock__recovery_margin_ms(l)
                            <= tslock__now(l->client, TSLOCK_CLOCK_WALL);

    snprintf(why, sizeof(why), "%.300s", l->client->errstr);
    if (lease_over)
        return tslock__fail(l->client, TSLOCK_ELOST,
                            "lock '%s' was not %s: our lease ran out before "
                            "the server could be reached again (%d attempt%s; "
                            "last: %s)",
                            l->key, verb, r->attempts,
                            r->attempts == 1 ? "" : "s", why);
    return tslock__fail(l->client, last_rc,
                        "lock '%s' was not %s: gave up reconnecting after "
                        "%d attempt%s (last: %s)",
                        l->key, verb, r->attempts, r->attempts == 1 ? "" : "s",
                        why);
}

/*
 * An extension whose reply was lost and not recovered (reconnecting off,
 * or given up) may have written its new stamp.  Before the next release
 * or extend, one GET settles it: our new stamp there becomes our value.
 */
int tslock__settle_pending(tslock_lock *l)
{
    int now;

    if (l->pending[0] == '\0')
        return TSLOCK_OK;
    now = holds_now(l);
    if (now < 0)
        return now;
    if (now == 2) {
        memcpy(l->value, l->pending, sizeof(l->value));
        l->expires_ms = l->pending_end;
    }
    l->pending[0] = '\0';
    return TSLOCK_OK;
}

int tslock__recover(tslock_lock *l, enum tslock__recover_op op, int first_rc,
                    int64_t ttl_ms)
{
    struct recovery r;
    int64_t budget = l->reconnect_ms >= 0 ? l->reconnect_ms : l->ttl_ms;
    int64_t room;
    int rc = first_rc;

    if (l->reconnect_ms == 0 || l->client->transport == TRANSPORT_NONE)
        return first_rc;
    memset(&r, 0, sizeof(r));
    r.l = l;
    r.op = op;
    r.ttl_ms = ttl_ms;
    r.started = tslock__system_ms(TSLOCK_CLOCK_MONOTONIC);
    r.real_end = r.started + budget;
    r.delay = BACKOFF_FIRST_MS;
    r.first_rc = first_rc;
    snprintf(r.first, sizeof(r.first), "%s: %.440s", tslock_errname(first_rc),
             l->client->errstr);
    memcpy(r.server, l->client->run_id, sizeof(r.server));
    while (tslock__is_transient(l->client, rc) && (room = room_left(&r)) > 0) {
        if (r.attempts > 0)
            back_off(&r, room);
        if ((room = room_left(&r)) <= 0)
            break;
        rc = attempt(&r, room);
    }
    if (tslock__is_transient(l->client, rc))
        return give_up(&r, rc);
    if (rc == TSLOCK_OK || rc == TSLOCK_ELOST)
        note_recovered(&r);
    return rc;
}
