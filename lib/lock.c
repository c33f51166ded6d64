/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.c - the lock object: its settings, choosing a scheme from what the
 * server can do, the wait loop with its deadline and randomized retry
 * delay, cancellation, fencing numbers, and dispatch to the schemes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tslock_int.h"

static int make_cancel_pipe(int fds[2])
{
#ifdef HAVE_PIPE2
    return pipe2(fds, O_CLOEXEC | O_NONBLOCK);
#else
    int i;
    if (pipe(fds) != 0)
        return -1;
    for (i = 0; i < 2; i++) {
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
        fcntl(fds[i], F_SETFL, O_NONBLOCK);
    }
    return 0;
#endif
}

int tslock_lock_new(tslock_lock **out, tslock_client *client, const char *key)
{
    tslock_lock *l;

    if (out == NULL)
        return TSLOCK_EINVAL;
    *out = NULL;
    if (client == NULL || key == NULL || key[0] == '\0')
        return TSLOCK_EINVAL;
    l = calloc(1, sizeof(*l));
    if (l == NULL)
        return TSLOCK_ENOMEM;
    l->key = strdup(key);
    if (l->key == NULL || make_cancel_pipe(l->cancel_pipe) != 0) {
        free(l->key);
        free(l);
        return errno == ENOMEM ? TSLOCK_ENOMEM : TSLOCK_EIO;
    }
    l->client = client;
    l->stats_client = client;
    l->ttl_ms = 30000;
    tslock__dialect_plain(&l->dialect, TSLOCK_UNIT_MS);
    l->retry_min_ms = 50;
    l->retry_max_ms = 100;
    l->reconnect_ms = -1;
    l->wakeup = 1;
    *out = l;
    return TSLOCK_OK;
}

void tslock_lock_free(tslock_lock *l)
{
    if (l == NULL)
        return;
    close(l->cancel_pipe[0]);
    close(l->cancel_pipe[1]);
    free(l->key);
    free(l->owner_key);
    free(l->channel);
    free(l->queue_key);
    free(l->alive_key);
    free(l->seq_key);
    free(l->wake_prefix);
    free(l->holders_key);
    free(l->intent_key);
    free(l);
}

int tslock_lock_set_scheme(tslock_lock *l, tslock_scheme scheme)
{
    if (l == NULL || scheme > TSLOCK_SCHEME_BRIDGE)
        return TSLOCK_EINVAL;
    if (l->held)
        return TSLOCK_ESTATE;
    l->scheme = scheme;
    return TSLOCK_OK;
}

int tslock_lock_set_ttl(tslock_lock *l, int64_t ttl_ms)
{
    /* A lease longer than ten years is a mistake, not a lease. */
    if (l == NULL || ttl_ms <= 0 || ttl_ms > INT64_C(315360000000))
        return TSLOCK_EINVAL;
    l->ttl_ms = ttl_ms;
    return TSLOCK_OK;
}

int tslock_lock_set_unit(tslock_lock *l, tslock_unit unit)
{
    if (l == NULL || unit > TSLOCK_UNIT_FLOAT)
        return TSLOCK_EINVAL;
    if (l->held)
        return TSLOCK_ESTATE;
    l->unit = unit;
    tslock__dialect_plain(&l->dialect, unit);
    return TSLOCK_OK;
}

int tslock_lock_set_dialect(tslock_lock *l, const char *dialect)
{
    struct tslock__dialect d;
    char err[TSLOCK__ERRSTR_SIZE - 64];

    if (l == NULL || dialect == NULL)
        return TSLOCK_EINVAL;
    if (l->held)
        return TSLOCK_ESTATE;
    if (tslock__dialect_compile(&d, dialect, err, sizeof(err)) != TSLOCK_OK)
        return tslock__fail(l->client, TSLOCK_EINVAL, "dialect: %s", err);
    l->dialect = d;
    l->unit = d.unit;
    return TSLOCK_OK;
}

const char *tslock_lock_get_dialect(tslock_lock *l)
{
    return l != NULL ? l->dialect.spec : NULL;
}

int tslock_lock_set_release_form(tslock_lock *l, tslock_release_form form)
{
    if (l == NULL || form > TSLOCK_RELEASE_LUA)
        return TSLOCK_EINVAL;
    l->release_form = form;
    return TSLOCK_OK;
}

int tslock_lock_set_release_margin(tslock_lock *l, int64_t margin_ms)
{
    if (l == NULL || margin_ms < 0)
        return TSLOCK_EINVAL;
    l->margin_ms = margin_ms;
    return TSLOCK_OK;
}

/* A grace past a day would leave a crashed holder's lock taken that long. */
int tslock_lock_set_takeover_grace(tslock_lock *l, int64_t grace_ms)
{
    if (l == NULL || grace_ms < 0 || grace_ms > TSLOCK__GRACE_MAX_MS)
        return TSLOCK_EINVAL;
    l->grace_ms = grace_ms;
    return TSLOCK_OK;
}

int tslock_lock_set_retry(tslock_lock *l, int min_ms, int max_ms)
{
    if (l == NULL || min_ms < 1 || max_ms < min_ms)
        return TSLOCK_EINVAL;
    l->retry_min_ms = min_ms;
    l->retry_max_ms = max_ms;
    return TSLOCK_OK;
}

int tslock_lock_set_reconnect(tslock_lock *l, int64_t max_ms)
{
    if (l == NULL || max_ms < -1)
        return TSLOCK_EINVAL;
    l->reconnect_ms = max_ms;
    return TSLOCK_OK;
}

int tslock_lock_set_fencing(tslock_lock *l, int enabled)
{
    if (l == NULL)
        return TSLOCK_EINVAL;
    l->fencing = enabled != 0;
    return TSLOCK_OK;
}

int tslock_lock_set_reentrant(tslock_lock *l, int enabled)
{
    if (l == NULL)
        return TSLOCK_EINVAL;
    if (!enabled && l->held > 1)
        return tslock__fail(l->client, TSLOCK_ESTATE,
                            "lock '%s' is held %d times: release it down to "
                            "one hold before turning reentrancy off",
                            l->key, l->held);
    l->reentrant = enabled != 0;
    return TSLOCK_OK;
}

/*
 * A reentrant lock taken again by its holder: one more hold, counted in
 * the object, with no round trip.  It needs what release and extend check
 * before they ask the server: our lease, less the margin, still runs by
 * our clock.  If it does not, the hold may be lost already; the object
 * is left as it is, for release (or extend) to ask the server.
 */
static int reenter(tslock_lock *l)
{
    tslock_client *c = l->client;

    tslock__clear_error(c);
    if (!tslock__lease_runs(l))
        return tslock__fail(c, TSLOCK_ELOST,
                            "lock '%s' was not taken again: our lease ran "
                            "out by our clock, so another owner may hold it; "
                            "it is still counted %d time%s until released",
                            l->key, l->held, l->held == 1 ? "" : "s");
    if (l->held == INT_MAX)
        return tslock__fail(c, TSLOCK_ESTATE, "lock '%s' is held %d times",
                            l->key, l->held);
    l->held++;
    return TSLOCK_OK;
}

/*
 * The scheme this acquisition uses.  Auto takes the token scheme wherever
 * it can be had atomically (SET NX PX, a Lua script, or WATCH), and the
 * timestamp scheme on servers with none of them (Redis 2.0).  Fair mode
 * always takes the token scheme; fair.c says what a server lacks for it.
 * With a dialect, auto takes the bridge scheme (Lua or WATCH, 2.2 and
 * later) and the timestamp scheme on 2.0: a token is no value of any
 * dialect, so its clients would not see the lock.
 */
static void resolve_scheme(tslock_lock *l)
{
    unsigned token_caps =
        TSLOCK_CAP_SET_NX_PX | TSLOCK_CAP_LUA | TSLOCK_CAP_WATCH;

    switch (l->scheme) {
    case TSLOCK_SCHEME_AUTO:
        if (!tslock__dialect_is_plain(&l->dialect))
            /* A dialect is asked for to share locks with its clients. */
            l->used = l->client->caps & (TSLOCK_CAP_LUA | TSLOCK_CAP_WATCH)
                          ? TSLOCK_SCHEME_BRIDGE
                          : TSLOCK_SCHEME_TIMESTAMP;
        else
            l->used = l->fair || (l->client->caps & token_caps)
                          ? TSLOCK_SCHEME_TOKEN
                          : TSLOCK_SCHEME_TIMESTAMP;
        break;
    default:
        l->used = l->scheme;
        break;
    }
    l->ops = l->used == TSLOCK_SCHEME_TOKEN    ? &tslock__token_ops
             : l->used == TSLOCK_SCHEME_BRIDGE ? &tslock__bridge_ops
                                               : &tslock__timestamp_ops;
}

static int try_once(tslock_lock *l)
{
    int rc = tslock__check_usable(l->client);

    if (rc != TSLOCK_OK)
        return rc;
    resolve_scheme(l);
    if (l->rw != TSLOCK_RW_OFF || l->permits > 0)
        return tslock__kind_try(l);
    if (!l->fair)
        return l->ops->try_acquire(l);
    if (l->used != TSLOCK_SCHEME_TOKEN)
        return tslock__fail(l->client, TSLOCK_EUNSUPPORTED,
                            "fair mode takes the token scheme (auto or "
                            "token), not %s",
                            l->used == TSLOCK_SCHEME_BRIDGE ? "bridge"
                                                            : "timestamp");
    return tslock__fair_try(l);
}

/*
 * The fencing number: INCR of a companion key that never expires, so it
 * only grows.  If it cannot be had, the hold is given back, so a caller
 * that asked for fencing never holds a lock without its number.
 *
 * A master that Sentinel promoted continues from the counter as far as
 * it was replicated, which can be behind what its old master, cut off
 * but still serving, has handed out: both would hand out the same
 * numbers (doc/partitions.md).  So when the sentinel named the master
 * with a config-epoch E > 0 (the failover that made it), the number is
 * at least E * 2^32 + 1: every master of a later failover hands out
 * numbers above every master of an earlier one, and two masters never
 * share a number.  Epoch 0 (no failover yet, no Sentinel, a sentinel
 * that does not say) is a plain INCR, as before.
 */
#define FENCE_EPOCH_MAX ((INT64_C(1) << 21) - 1) /* E * 2^32 below 2^53 */

static int take_fence(tslock_lock *l)
{
    tslock_client *c = l->client;
    char *fence_key = NULL;
    const char *argv[2] = {"INCR", NULL};
    char floor[24];
    const char *args[1] = {floor};
    redisReply *r = NULL;
    int64_t epoch = c->failover_epoch;
    int rc;

    if (epoch > FENCE_EPOCH_MAX)
        return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                            "fencing: the master's failover epoch is %lld, "
                            "expected at most %lld (fences carry it above "
                            "bit 32, within Lua's exact integers)",
                            (long long)epoch, (long long)FENCE_EPOCH_MAX);
    if (epoch > 0 && !(c->caps & TSLOCK_CAP_LUA))
        return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                            "fencing after a failover (epoch %lld) needs "
                            "Lua scripts, which this server refuses",
                            (long long)epoch);
    rc = tslock__fence_key(l, &fence_key);
    if (rc != TSLOCK_OK)
        return rc;
    if (epoch > 0) {
        snprintf(floor, sizeof(floor), "%lld", (long long)((epoch << 32) + 1));
        rc = tslock__script_run(c, SCRIPT_FENCE_FLOOR, fence_key, 1, args, &r);
    } else {
        argv[1] = fence_key;
        rc = tslock__command(c, TSLOCK_STEP_INCR, l->key, 2, argv, &r);
    }
    if (rc == TSLOCK_OK && r->type == REDIS_REPLY_INTEGER)
        l->fence = r->integer;
    else if (rc == TSLOCK_OK)
        rc = tslock__unexpected(c, "INCR fence", "an integer", r);
    freeReplyObject(r);
    free(fence_key);
    return rc;
}

void tslock__drain_cancel(tslock_lock *l)
{
    char buf[64];

    while (read(l->cancel_pipe[0], buf, sizeof(buf)) > 0)
        ;
    l->cancel_flag = 0;
}

static int canceled(tslock_lock *l)
{
    tslock__drain_cancel(l);
    return tslock__fail(l->client, TSLOCK_ECANCELED,
                        "wait for lock '%s' was canceled", l->key);
}

/* How long to sleep before the next attempt, never past what matters. */
static int64_t next_delay(tslock_lock *l, int64_t wait_ms, int64_t deadline)
{
    tslock_client *c = l->client;
    int span = l->retry_max_ms - l->retry_min_ms + 1;
    int64_t delay = l->retry_min_ms + (int64_t)(tslock__random64(c) % span);

    if (wait_ms != TSLOCK_WAIT_FOREVER) {
        int64_t left = deadline - tslock__now(c, TSLOCK_CLOCK_MONOTONIC);
        if (left < delay)
            delay = left;
    }
    if (l->expires_ms > 0) {
        /*
         * Wake just after the holder's lease ends, not a retry later; and
         * at once when it has ended already (a loaded machine can take
         * that long between the try and here).
         */
        int64_t until = tslock__takeover_after(l, l->expires_ms)
                        - tslock__now(c, TSLOCK_CLOCK_WALL) + 1;
        if (until < delay)
            delay = until;
    }
    return delay < 1 ? 1 : delay;
}

/* Internal: "try again now", never returned to a caller. */
#define TSLOCK_EAGAIN__ 1

/*
 * A waiting acquire whose connection failed reconnects and goes on
 * waiting, within its deadline: a dropped connection is not a reason to
 * give up a wait.  Returns TSLOCK_EAGAIN__ to try again at once, or the
 * code to return.  Cancellation works as in any wait.
 */
static int reconnect_while_waiting(tslock_lock *l, int64_t wait_ms,
                                   int64_t deadline, int rc)
{
    tslock_client *c = l->client;
    int64_t left = wait_ms == TSLOCK_WAIT_FOREVER
                       ? INT64_C(60000)
                       : deadline - tslock__now(c, TSLOCK_CLOCK_MONOTONIC);
    int64_t delay = l->retry_min_ms, backoff;
    int tries = l->reconnect_tries;

    if (left <= 0)
        return rc;
    /*
     * The first reconnect at once, later ones after a backoff of their
     * own: 50 ms, doubling to 1 s, or the retry delay when shorter.  A
     * failover takes seconds, and a retry delay as long as the wait
     * (a waiter that counts on wake-ups) left one more reconnect only,
     * after the deadline.
     */
    backoff = INT64_C(50) << (tries > 5 ? 5 : tries > 0 ? tries - 1 : 0);
    if (backoff > 1000)
        backoff = 1000;
    if (backoff < delay)
        delay = backoff;
    if (l->reconnect_tries++ > 0) {
        if (delay > left)
            delay = left;
        if (tslock__wait(l, delay) == TSLOCK_ECANCELED)
            return TSLOCK_ECANCELED;
        left -= delay;
        if (left <= 0)
            return rc;
    }
    rc = tslock__reconnect_within(c, left);
    return rc == TSLOCK_OK || tslock__is_transient(c, rc) ? TSLOCK_EAGAIN__
                                                          : rc;
}

/*
 * Give back a hold the caller cannot use (no fencing number, too few
 * replicas), keeping the detail of why.
 */
static void undo_hold(tslock_lock *l)
{
    tslock_client *c = l->client;
    char why[TSLOCK__ERRSTR_SIZE];
    int rc = TSLOCK_EIO;

    memcpy(why, c->errstr, sizeof(why));
    l->undoing = 1; /* no release of a hold never counted as acquired */
    if (!c->broken)
        rc = tslock_release(l);
    /* Say what is left: nothing, or a key that holds our value until its
     * lease ends (the caller holds nothing either way). */
    if (rc == TSLOCK_OK || rc == TSLOCK_ELOST)
        snprintf(c->errstr, sizeof(c->errstr),
                 "%.*s; the hold was given back, nothing is held",
                 (int)sizeof(why) - 64, why);
    else
        snprintf(c->errstr, sizeof(c->errstr),
                 "%.*s; giving the hold back failed (%s), so '%.*s' may keep "
                 "our value until its lease ends, %lld ms from the take",
                 (int)sizeof(why) - 200, why, tslock_errname(rc), 64, l->key,
                 (long long)l->ttl_ms);
    l->undoing = 0;
    l->held = 0;
}

/* Try, and while busy and time is left, wait and try again. */
static int acquire_loop(tslock_lock *l, int64_t wait_ms, int64_t deadline)
{
    tslock_client *c = l->client;
    int64_t holder_end = 0;
    int unheard = 0, rc;

    l->attempts = 0;
    l->wait_start = wait_ms > 0 ? deadline - wait_ms : INT64_MIN;

    for (;;) {
        l->expires_ms = 0;
        l->replicas_seen = 0;
        if (l->attempts++ > 0)
            TSLOCK__COUNT(c, retries);
        rc = try_once(l);
        /*
         * Taken right after a sleep that listened and heard nothing
         * (fair.c); not after a reconnect, whose dropped subscriber may
         * have lost the announcement.
         */
        if (rc == TSLOCK_OK && unheard)
            tslock__unheard_release(l, holder_end);
        unheard = 0;
        if (tslock__is_transient(c, rc) && wait_ms != 0 && l->reconnect_ms != 0)
            rc = reconnect_while_waiting(l, wait_ms, deadline, rc);
        if (rc == TSLOCK_EAGAIN__)
            continue;
        if (rc == TSLOCK_ECANCELED)
            return canceled(l);
        if (rc != TSLOCK_EBUSY && rc != TSLOCK_EUNREADABLE)
            break;
        if (wait_ms == 0
            || (wait_ms != TSLOCK_WAIT_FOREVER
                && tslock__now(c, TSLOCK_CLOCK_MONOTONIC) >= deadline))
            return rc;
        holder_end = l->expires_ms;
        if (l->wait_start == INT64_MIN) /* waiting forever: from now */
            l->wait_start = tslock__now(c, TSLOCK_CLOCK_MONOTONIC);
        if (tslock__wait(l, next_delay(l, wait_ms, deadline))
            == TSLOCK_ECANCELED)
            return canceled(l);
        if (l->woken)
            TSLOCK__COUNT(c, wakes);
        unheard = l->listening && !l->woken;
    }
    if (rc == TSLOCK_OK && l->replicas > 0) {
        rc = l->replicas_seen ? l->replicas_rc : tslock__replicas_wait(l);
        if (rc != TSLOCK_OK)
            undo_hold(l);
    }
    if (rc == TSLOCK_OK && l->fencing) {
        rc = take_fence(l);
        if (rc != TSLOCK_OK)
            undo_hold(l);
    }
    return rc;
}

/*
 * Count an acquisition and tell the observer.  The wait reuses the clock
 * reads the acquisition made: 0 when the first attempt got the lock,
 * else from the call (or, waiting forever, from the first busy attempt)
 * to the hold.  Only a failed wait reads the clock once more.
 */
static void count_acquire(tslock_lock *l, int64_t wait_ms, int rc)
{
    tslock_client *c = l->stats_client;
    int64_t waited = 0;

    if (l->attempts > 1 && l->wait_start != INT64_MIN)
        waited = (rc == TSLOCK_OK ? l->held_since
                                  : tslock__now(c, TSLOCK_CLOCK_MONOTONIC))
                 - l->wait_start;
    if (rc == TSLOCK_OK) {
        TSLOCK__COUNT(c, acquired);
        TSLOCK__COUNT(c, by_scheme[l->used & 3]);
        tslock__count_store(&c->stats.last_scheme, (int)l->used);
        tslock__hist_observe(&c->stats.wait, waited);
        l->legacy_lost = 0;
    } else if (rc == TSLOCK_EBUSY || rc == TSLOCK_EUNREADABLE) {
        if (wait_ms == 0)
            TSLOCK__COUNT(c, busy);
        else
            TSLOCK__COUNT(c, timed_out);
    } else if (rc == TSLOCK_ECANCELED) {
        TSLOCK__COUNT(c, canceled);
    } else {
        TSLOCK__COUNT(c, errors);
    }
    tslock__notify(c, TSLOCK_EVENT_ACQUIRE, l->key, rc, waited, l->used, 0, 0);
}

/*
 * A hold ended: released (rc TSLOCK_OK) or found lost (TSLOCK_ELOST).
 * Holds are timed only when asked (TSLOCK_STATS_HOLD_TIMES or an
 * observer): it is the one clock read a release adds.
 */
void tslock__count_hold_end(tslock_lock *l, int rc)
{
    tslock_client *c = l->stats_client;
    int64_t held = -1;
    int legacy = 0;

    if ((rc != TSLOCK_OK && rc != TSLOCK_ELOST) || l->undoing)
        return;
    /* The clock of the acquisition: a watchdog's copy renews elsewhere. */
    if (TSLOCK__TIMES_HOLDS(c) && l->held_since > 0) {
        held = tslock__now(c, TSLOCK_CLOCK_MONOTONIC) - l->held_since;
        tslock__hist_observe(&c->stats.hold, held);
    }
    if (rc == TSLOCK_OK) {
        TSLOCK__COUNT(c, released);
    } else {
        TSLOCK__COUNT(c, lost);
        legacy = l->used == TSLOCK_SCHEME_BRIDGE && l->legacy_lost;
        if (legacy)
            TSLOCK__COUNT(c, legacy_takeovers);
    }
    tslock__notify(c,
                   rc == TSLOCK_OK ? TSLOCK_EVENT_RELEASE : TSLOCK_EVENT_LOST,
                   l->key, rc, held, l->used, legacy, l->in_watchdog);
}

/*
 * A dialect names the stamp a legacy library writes; what writes a
 * random token (the token scheme, fair mode, a read-write lock or a
 * semaphore) has no stamp to write in it.  Said before anything is sent,
 * rather than a lock its dialect's clients never see.
 */
static int dialect_conflict(tslock_lock *l)
{
    const char *what = NULL;

    if (tslock__dialect_is_plain(&l->dialect))
        return TSLOCK_OK;
    if (l->scheme == TSLOCK_SCHEME_TOKEN)
        what = "the token scheme";
    else if (l->fair)
        what = "fair mode";
    else if (l->permits > 0)
        what = "a semaphore";
    else if (l->rw != TSLOCK_RW_OFF)
        what = "a read-write lock";
    if (what == NULL)
        return TSLOCK_OK;
    return tslock__fail(l->client, TSLOCK_EINVAL,
                        "lock '%s': the dialect '%s' names a legacy stamp, "
                        "but %s writes a random token; expected the bridge, "
                        "timestamp or auto scheme with a dialect, or no "
                        "dialect",
                        l->key, l->dialect.spec, what);
}

int tslock_acquire(tslock_lock *l, int64_t wait_ms)
{
    tslock_client *c;
    int64_t deadline = 0;
    int rc;

    if (l == NULL)
        return TSLOCK_EINVAL;
    c = l->client;
    if (wait_ms < TSLOCK_WAIT_FOREVER)
        return tslock__fail(c, TSLOCK_EINVAL,
                            "lock '%s': wait_ms expected >= 0 (ms) or "
                            "TSLOCK_WAIT_FOREVER (%d), got %lld",
                            l->key, (int)TSLOCK_WAIT_FOREVER,
                            (long long)wait_ms);
    if (l->held && l->reentrant)
        return reenter(l);
    if (l->held)
        return tslock__fail(c, TSLOCK_ESTATE, "lock '%s' is already held",
                            l->key);
    tslock__clear_error(c);
    if ((rc = dialect_conflict(l)) != TSLOCK_OK)
        return rc;
    if (wait_ms > 0) {
        int64_t now = tslock__now(c, TSLOCK_CLOCK_MONOTONIC);
        if (now < 0)
            return tslock__fail(c, TSLOCK_ECLOCK, "monotonic clock failed");
        deadline = now + wait_ms;
    }
    l->waiting = wait_ms != 0;
    l->reconnect_tries = 0;
    l->woken = 0;
    /*
     * A cancel that came while no wait ran cancels this wait, before its
     * first try: a wait canceled before it began never takes the lock.
     */
    if (l->waiting && l->cancel_flag) {
        l->waiting = 0;
        resolve_scheme(l); /* the scheme its events name */
        rc = canceled(l);
        count_acquire(l, wait_ms, rc);
        return rc;
    }
    if (l->waiting)
        tslock__listen(l); /* before the first try: no release is missed */
    rc = acquire_loop(l, wait_ms, deadline);
    l->listening = 0;
    if (!l->held)
        tslock__fair_leave(l); /* gave up: out of the line at once */
    if (!l->held)
        tslock__rw_leave(l);
    if (rc == TSLOCK_OK && l->held == 1)
        l->held_since = tslock__now(c, TSLOCK_CLOCK_MONOTONIC);
    count_acquire(l, wait_ms, rc);
    return rc;
}

/*
 * The opening every end of a hold shares: a lock that is not held is
 * ESTATE, and an inner hold of a reentrant lock only drops one count.
 * 1 when the caller goes on to end the hold on the server, else the
 * code to return.
 */
static int hold_ending(tslock_lock *l)
{
    if (!l->held)
        return tslock__fail(l->client, TSLOCK_ESTATE, "lock '%s' is not held",
                            l->key);
    tslock__clear_error(l->client);
    if (l->held > 1) { /* an inner hold of a reentrant lock */
        l->held--;
        return TSLOCK_OK;
    }
    return 1;
}

int tslock_release(tslock_lock *l)
{
    int rc;

    if (l == NULL)
        return TSLOCK_EINVAL;
    if ((rc = hold_ending(l)) != 1)
        return rc;
    rc = tslock__settle_pending(l);
    if (rc == TSLOCK_OK)
        rc = l->ops->release(l);
    if (tslock__is_transient(l->client, rc))
        rc = tslock__recover(l, RECOVER_RELEASE, rc, 0);
    /*
     * The hold is over once the key is deleted, or found not to be ours
     * (or not a string at all).  After anything else -- a connection
     * failure, a forced form the server lacks, an error reply -- the key
     * may still hold our value, so the object stays held and the caller
     * may try again (reconnected, or with another form).
     */
    if (rc == TSLOCK_OK || rc == TSLOCK_ELOST || rc == TSLOCK_EWRONGTYPE) {
        tslock__count_hold_end(l, rc);
        l->held = 0;
        l->fence = 0;
    }
    return rc;
}

int tslock_extend(tslock_lock *l, int64_t ttl_ms)
{
    int rc;

    if (l == NULL)
        return TSLOCK_EINVAL;
    if (ttl_ms < 0 || ttl_ms > INT64_C(315360000000))
        return tslock__fail(l->client, TSLOCK_EINVAL,
                            "lock '%s': extend's ttl_ms expected 0 (the "
                            "lock's lease) to 315360000000 (ten years), "
                            "got %lld",
                            l->key, (long long)ttl_ms);
    if (!l->held)
        return tslock__fail(l->client, TSLOCK_ESTATE, "lock '%s' is not held",
                            l->key);
    tslock__clear_error(l->client);
    if (ttl_ms == 0)
        ttl_ms = l->ttl_ms;
    rc = tslock__settle_pending(l);
    if (rc == TSLOCK_OK)
        rc = l->ops->extend(l, ttl_ms);
    if (tslock__is_transient(l->client, rc))
        rc = tslock__recover(l, RECOVER_EXTEND, rc, ttl_ms);
    /* The lease is extended on the master; its replicas may lag. */
    if (rc == TSLOCK_OK && l->replicas > 0
        && (rc = tslock__replicas_wait(l)) != TSLOCK_OK) {
        size_t len = strlen(l->client->errstr);
        snprintf(l->client->errstr + len, sizeof(l->client->errstr) - len,
                 "; the extension itself took effect on the master: the "
                 "lock is still held, for %lld ms",
                 (long long)ttl_ms);
    }
    /* Kept while unsettled: the new stamp may be on the server. */
    if (!tslock__is_transient(l->client, rc))
        l->pending[0] = '\0';
    if (rc == TSLOCK_ELOST) {
        tslock__count_hold_end(l, rc);
        l->held = 0;
    }
    return rc;
}

/*
 * What is left of a minimum hold of min_ms that began when the lock was
 * taken (from now, for a hold this object did not take itself), capped at
 * what is left of the lease by our clock: a hold is never kept past its
 * lease.  Sets *capped when the lease is the shorter.  -1 if a clock fails.
 */
static int64_t rest_of_minimum(tslock_lock *l, int64_t min_ms, int *capped)
{
    int64_t mono = tslock__now(l->client, TSLOCK_CLOCK_MONOTONIC);
    int64_t wall = tslock__now(l->client, TSLOCK_CLOCK_WALL);
    int64_t rest, lease;

    if (mono < 0 || wall < 0)
        return -1;
    rest = l->held_since > 0 ? min_ms - (mono - l->held_since) : min_ms;
    lease = l->expires_ms - wall;
    *capped = rest >= lease;
    if (*capped)
        rest = lease;
    return rest > 0 ? rest : 0;
}

/*
 * The lease is shorter than the minimum: the key is left as it is, to
 * expire by itself, once the server confirms it still holds our value.
 */
static int leave_to_expire(tslock_lock *l)
{
    int64_t left = 0;
    int rc = tslock__settle_pending(l);

    if (rc == TSLOCK_OK)
        rc = l->ops->time_left(l, &left);
    if (rc == TSLOCK_ELOST) {
        tslock__count_hold_end(l, rc);
        l->held = 0;
    }
    return rc;
}

int tslock_release_after(tslock_lock *l, int64_t min_ms)
{
    int64_t rest;
    int capped = 0, rc;

    if (l == NULL || min_ms < 0 || min_ms > INT64_C(315360000000))
        return TSLOCK_EINVAL;
    if ((rc = hold_ending(l)) != 1)
        return rc;
    rest = rest_of_minimum(l, min_ms, &capped);
    if (rest < 0)
        return tslock__fail(l->client, TSLOCK_ECLOCK, "a clock failed");
    if (rest == 0)
        return tslock_release(l); /* the minimum has passed */
    /* One compare-and-shorten where the scheme's extend is one step. */
    rc = capped ? leave_to_expire(l) : tslock_extend(l, rest);
    if (rc == TSLOCK_OK) {
        tslock__count_hold_end(l, rc);
        l->held = 0;
        l->fence = 0;
    }
    return rc;
}

int tslock_lock_time_left(tslock_lock *l, int64_t *ms_left)
{
    if (l == NULL || ms_left == NULL)
        return TSLOCK_EINVAL;
    if (!l->held)
        return tslock__fail(l->client, TSLOCK_ESTATE, "lock '%s' is not held",
                            l->key);
    tslock__clear_error(l->client);
    return l->ops->time_left(l, ms_left);
}

int tslock_lock_cancel(tslock_lock *l)
{
    int saved = errno; /* async-signal-safe: keep the caller's errno */

    if (l == NULL)
        return TSLOCK_EINVAL;
    l->cancel_flag = 1;
    (void)!write(l->cancel_pipe[1], "x", 1);
    errno = saved;
    return TSLOCK_OK;
}

int tslock_lock_is_held(const tslock_lock *l)
{
    return l != NULL && l->held;
}

const char *tslock_lock_value(const tslock_lock *l)
{
    return l != NULL && l->held ? l->value : NULL;
}

tslock_scheme tslock_lock_scheme_used(const tslock_lock *l)
{
    return l == NULL ? TSLOCK_SCHEME_AUTO : l->used;
}

int64_t tslock_lock_expires_ms(const tslock_lock *l)
{
    return l == NULL ? 0 : l->expires_ms;
}

int64_t tslock_lock_fence(const tslock_lock *l)
{
    return l != NULL && l->held ? l->fence : 0;
}
