/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_stats.c - the metrics a client counts (tslock_client_stats()) and
 * its observer, against a real redis-server: a client on the test clock
 * does known things -- acquire, busy, a timed-out wait, a wait woken by
 * an announcement, a lease lost to a DEL, a takeover of an expired stamp,
 * a bridge hold taken by a legacy GETSET, a watchdog renewal and a failed
 * one, a cancel, an error -- and every counter, every histogram bucket
 * and every event is checked exactly.  Waits are driven by the step hook
 * moving the test clock, never by sleeps.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static th_server srv;
static th_clock clk;
static redisContext *raw;

static void raw_do(const char *fmt, const char *key, const char *arg)
{
    redisReply *r = redisCommand(raw, fmt, key, arg);

    CU_ASSERT_FATAL(r != NULL);
    freeReplyObject(r);
}

/* ------------------------------------------------------- observer */

#define MAX_EVENTS 32
struct seen {
    tslock_event_type type;
    int result;
    char key[16];
    int64_t duration_ms;
    tslock_scheme scheme;
    int legacy;
};
static struct seen events[MAX_EVENTS];
static int nevents;

static void observe(const tslock_event *e, void *ud)
{
    struct seen *s;

    (void)ud;
    CU_ASSERT_EQUAL(e->size, sizeof(tslock_event));
    CU_ASSERT_FALSE(e->from_watchdog);
    if (nevents == MAX_EVENTS)
        return;
    s = &events[nevents++];
    s->type = e->type;
    s->result = e->result;
    snprintf(s->key, sizeof(s->key), "%s", e->key);
    s->duration_ms = e->duration_ms;
    s->scheme = e->scheme;
    s->legacy = e->legacy;
}

/* ------------------------------------------------------ step hook */

/*
 * The hook of the client under test: each SETNX on "m:b" is an attempt
 * that takes 40 ms by the test clock.  At the first attempt of the woken
 * wait it announces a release (the wait's sleep ends at once on it), and
 * at the second it frees the key, so that attempt takes it.
 */
static int wake_script; /* 0 off; else the SETNX count of the woken wait */

static int clock_hook(tslock_client *c, tslock_step step, const char *key,
                      void *ud)
{
    (void)c;
    (void)ud;
    if (step != TSLOCK_STEP_SETNX || strcmp(key, "m:b") != 0)
        return 0;
    th_clock_advance(&clk, 40);
    if (wake_script > 0 && ++wake_script == 2)
        raw_do("PUBLISH %s %s", "{m:b}:released", "m:b");
    else if (wake_script == 3)
        raw_do("DEL %s", "m:b", NULL);
    return 0;
}

/*
 * The renewing client's hook: commands go through until the caller's
 * client has counted one renewal; the next renewal is stopped.
 */
static int renew_hook(tslock_client *c, tslock_step step, const char *key,
                      void *ud)
{
    tslock_stats s;

    (void)c;
    (void)step;
    (void)key;
    CU_ASSERT_FATAL(tslock_client_stats(ud, &s, sizeof(s)) == TSLOCK_OK);
    return s.renewals >= 1;
}

static int failure_pipe[2];

static void on_failure(int code, const char *detail, void *ud)
{
    (void)detail;
    *(int *)ud = code;
    (void)!write(failure_pipe[1], "x", 1);
}

/* ----------------------------------------------------------- test */

static tslock_lock *new_lock(tslock_client *c, const char *key,
                             tslock_scheme scheme)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_scheme(l, scheme) == TSLOCK_OK);
    return l;
}

/* Cumulative buckets from the finite bucket index of each observation. */
static void expect_hist(const tslock_histogram *h, const int *idx, int n,
                        uint64_t sum_ms, const char *what)
{
    uint64_t want[TSLOCK_STATS_BUCKETS] = {0};
    int i, b;

    for (i = 0; i < n; i++)
        for (b = idx[i]; b < TSLOCK_STATS_BUCKETS; b++)
            want[b]++;
    for (b = 0; b < TSLOCK_STATS_BUCKETS; b++)
        if (h->bucket[b] != want[b]) {
            fprintf(stderr, "  %s bucket %d: %" PRIu64 ", wanted %" PRIu64 "\n",
                    what, b, h->bucket[b], want[b]);
            CU_FAIL("histogram bucket");
        }
    CU_ASSERT_EQUAL(h->count, (uint64_t)n);
    CU_ASSERT_EQUAL(h->sum_ms, sum_ms);
}

static void watchdog_renews_once(tslock_client *c)
{
    tslock_client *renew = th_client(&srv);
    tslock_lock *l = new_lock(c, "m:f", TSLOCK_SCHEME_TOKEN);
    tslock_watchdog *w = NULL;
    int code = TSLOCK_OK;
    char byte;

    CU_ASSERT_FATAL(pipe(failure_pipe) == 0);
    tslock_client_set_step_hook(renew, renew_hook, c);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_watchdog_start(&w, l, renew, 1, on_failure, &code),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(read(failure_pipe[0], &byte, 1), 1);
    CU_ASSERT_EQUAL(code, TSLOCK_EHOOK);
    CU_ASSERT_EQUAL(tslock_watchdog_stop(w), TSLOCK_EHOOK);
    /* A hook's stop is no loss: the hold stays ours. */
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(renew);
    close(failure_pipe[0]);
    close(failure_pipe[1]);
}

static void test_counts(void)
{
    static const struct seen want[] = {
        {TSLOCK_EVENT_ACQUIRE, TSLOCK_OK, "m:a", 0, TSLOCK_SCHEME_TOKEN, 0},
        {TSLOCK_EVENT_RELEASE, TSLOCK_OK, "m:a", 30, TSLOCK_SCHEME_TOKEN, 0},
        {TSLOCK_EVENT_ACQUIRE, TSLOCK_EBUSY, "m:b", 0, TSLOCK_SCHEME_TIMESTAMP,
         0},
        {TSLOCK_EVENT_ACQUIRE, TSLOCK_EBUSY, "m:b", 120,
         TSLOCK_SCHEME_TIMESTAMP, 0},
        {TSLOCK_EVENT_ACQUIRE, TSLOCK_OK, "m:b", 80, TSLOCK_SCHEME_TIMESTAMP,
         0},
        {TSLOCK_EVENT_RELEASE, TSLOCK_OK, "m:b", 2000, TSLOCK_SCHEME_TIMESTAMP,
         0},
        {TSLOCK_EVENT_ACQUIRE, TSLOCK_OK, "m:c", 0, TSLOCK_SCHEME_TOKEN, 0},
        {TSLOCK_EVENT_LOST, TSLOCK_ELOST, "m:c", 0, TSLOCK_SCHEME_TOKEN, 0},
        {TSLOCK_EVENT_TAKEOVER, TSLOCK_OK, "m:d", 0, TSLOCK_SCHEME_TIMESTAMP,
         0},
        {TSLOCK_EVENT_ACQUIRE, TSLOCK_OK, "m:d", 0, TSLOCK_SCHEME_TIMESTAMP, 0},
        {TSLOCK_EVENT_RELEASE, TSLOCK_OK, "m:d", 0, TSLOCK_SCHEME_TIMESTAMP, 0},
        {TSLOCK_EVENT_ACQUIRE, TSLOCK_OK, "m:e", 0, TSLOCK_SCHEME_BRIDGE, 0},
        {TSLOCK_EVENT_LOST, TSLOCK_ELOST, "m:e", 0, TSLOCK_SCHEME_BRIDGE, 1},
        {TSLOCK_EVENT_ACQUIRE, TSLOCK_OK, "m:f", 0, TSLOCK_SCHEME_TOKEN, 0},
        {TSLOCK_EVENT_RELEASE, TSLOCK_OK, "m:f", 0, TSLOCK_SCHEME_TOKEN, 0},
        {TSLOCK_EVENT_ACQUIRE, TSLOCK_ECANCELED, "m:g", 0,
         TSLOCK_SCHEME_TIMESTAMP, 0},
        {TSLOCK_EVENT_ACQUIRE, TSLOCK_EWRONGTYPE, "m:h", 0,
         TSLOCK_SCHEME_TIMESTAMP, 0},
    };
    static const int wait_idx[] = {0, 5, 0, 0, 0, 0}; /* 80 ms: le 0.1 */
    static const int hold_idx[] = {4, 9, 0, 0, 0, 0}; /* 30: le .05, 2000 */
    tslock_client *c = th_client(&srv);
    tslock_lock *l;
    tslock_stats s;
    size_t i;

    th_clock_init(&clk);
    tslock_client_set_clock(c, th_clock_fn, &clk);
    tslock_client_set_step_hook(c, clock_hook, NULL);
    CU_ASSERT_EQUAL(tslock_client_set_observer(c, observe, NULL), TSLOCK_OK);
    nevents = 0;

    /* Acquired at once, held 30 ms. */
    l = new_lock(c, "m:a", TSLOCK_SCHEME_TOKEN);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    th_clock_advance(&clk, 30);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);

    /* Busy, then timed out after three attempts of 40 ms, then woken. */
    raw_do("SET %s %s", "m:b", "1800000000000");
    l = new_lock(c, "m:b", TSLOCK_SCHEME_TIMESTAMP);
    tslock_lock_set_retry(l, 1, 1);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EBUSY);
    /* Each counted as what it was: a try is busy, a wait times out. */
    CU_ASSERT_EQUAL(tslock_client_stats(c, &s, sizeof(s)), TSLOCK_OK);
    CU_ASSERT_EQUAL(s.busy, 1);
    CU_ASSERT_EQUAL(s.timed_out, 0);
    tslock_lock_set_wakeup(l, 0);
    CU_ASSERT_EQUAL(tslock_acquire(l, 100), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_client_stats(c, &s, sizeof(s)), TSLOCK_OK);
    CU_ASSERT_EQUAL(s.busy, 1);
    CU_ASSERT_EQUAL(s.timed_out, 1);
    tslock_lock_set_wakeup(l, 1);
    tslock_lock_set_retry(l, 60000, 60000); /* only the wake ends a sleep */
    wake_script = 1;
    CU_ASSERT_EQUAL(tslock_acquire(l, 600000), TSLOCK_OK);
    wake_script = 0;
    th_clock_advance(&clk, 2000);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);

    /* A lease lost to a DEL. */
    l = new_lock(c, "m:c", TSLOCK_SCHEME_TOKEN);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    raw_do("DEL %s", "m:c", NULL);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ELOST);
    tslock_lock_free(l);

    /* A stamp expired by the test clock, taken over. */
    raw_do("SET %s %s", "m:d", "1600000000000");
    l = new_lock(c, "m:d", TSLOCK_SCHEME_TIMESTAMP);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);

    /* A bridge hold taken away by a legacy client's GETSET. */
    l = new_lock(c, "m:e", TSLOCK_SCHEME_BRIDGE);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    raw_do("GETSET %s %s", "m:e", "1700000099001");
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ELOST);
    tslock_lock_free(l);

    /* A watchdog renews once; its next renewal fails. */
    watchdog_renews_once(c);

    /* A canceled wait, and an error. */
    raw_do("SET %s %s", "m:g", "1800000000000");
    l = new_lock(c, "m:g", TSLOCK_SCHEME_TIMESTAMP);
    tslock_lock_cancel(l);
    CU_ASSERT_EQUAL(tslock_acquire(l, 600000), TSLOCK_ECANCELED);
    tslock_lock_free(l);
    raw_do("SADD %s %s", "m:h", "x");
    l = new_lock(c, "m:h", TSLOCK_SCHEME_TIMESTAMP);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EWRONGTYPE);
    tslock_lock_free(l);

    CU_ASSERT_EQUAL(tslock_client_stats(c, &s, sizeof(s)), TSLOCK_OK);
    CU_ASSERT_EQUAL(s.size, sizeof(s));
    CU_ASSERT_EQUAL(s.acquired, 6);
    CU_ASSERT_EQUAL(s.busy, 1);
    CU_ASSERT_EQUAL(s.timed_out, 1);
    CU_ASSERT_EQUAL(s.canceled, 1);
    CU_ASSERT_EQUAL(s.errors, 1);
    CU_ASSERT_EQUAL(s.by_scheme[TSLOCK_SCHEME_AUTO], 0);
    CU_ASSERT_EQUAL(s.by_scheme[TSLOCK_SCHEME_TIMESTAMP], 2);
    CU_ASSERT_EQUAL(s.by_scheme[TSLOCK_SCHEME_TOKEN], 3);
    CU_ASSERT_EQUAL(s.by_scheme[TSLOCK_SCHEME_BRIDGE], 1);
    CU_ASSERT_EQUAL(s.last_scheme, TSLOCK_SCHEME_TOKEN);
    CU_ASSERT_EQUAL(s.released, 4);
    CU_ASSERT_EQUAL(s.lost, 2);
    CU_ASSERT_EQUAL(s.legacy_takeovers, 1);
    CU_ASSERT_EQUAL(s.renewals, 1);
    CU_ASSERT_EQUAL(s.renewal_failures, 1);
    CU_ASSERT_EQUAL(s.takeovers, 1);
    CU_ASSERT_EQUAL(s.wakes, 1);
    CU_ASSERT_EQUAL(s.retries, 3); /* two in the timed-out wait, one woken */
    expect_hist(&s.wait, wait_idx, 6, 80, "wait");
    expect_hist(&s.hold, hold_idx, 6, 2030, "hold");

    CU_ASSERT_EQUAL(nevents, (int)(sizeof(want) / sizeof(want[0])));
    for (i = 0; i < sizeof(want) / sizeof(want[0]) && i < (size_t)nevents;
         i++) {
        const struct seen *g = &events[i], *w = &want[i];
        if (g->type != w->type || g->result != w->result
            || strcmp(g->key, w->key) != 0 || g->duration_ms != w->duration_ms
            || g->scheme != w->scheme || g->legacy != w->legacy) {
            fprintf(stderr,
                    "  event %zu: type %d result %d key %s %" PRId64
                    " ms scheme %d legacy %d; wanted %d %d %s %" PRId64
                    " %d %d\n",
                    i, g->type, g->result, g->key, g->duration_ms, g->scheme,
                    g->legacy, w->type, w->result, w->key, w->duration_ms,
                    w->scheme, w->legacy);
            CU_FAIL("event");
        }
    }

    /* Reset, and a smaller (older) caller's struct. */
    CU_ASSERT_EQUAL(tslock_client_stats_reset(c), TSLOCK_OK);
    memset(&s, 0xff, sizeof(s));
    CU_ASSERT_EQUAL(tslock_client_stats(c, &s, offsetof(tslock_stats, errors)),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(s.size, offsetof(tslock_stats, errors));
    CU_ASSERT_EQUAL(s.acquired, 0);
    CU_ASSERT_TRUE(TSLOCK_STATS_HAS(&s, canceled));
    CU_ASSERT_FALSE(TSLOCK_STATS_HAS(&s, errors));
    CU_ASSERT_EQUAL(s.errors, UINT64_MAX); /* not written past size */
    tslock_client_free(c);
}

/*
 * Holds are timed only when asked: without an observer or
 * TSLOCK_STATS_HOLD_TIMES the hold histogram stays empty.
 */
static void test_hold_times_asked(void)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = new_lock(c, "m:t", TSLOCK_SCHEME_TOKEN);
    tslock_stats s;

    th_clock_init(&clk);
    tslock_client_set_clock(c, th_clock_fn, &clk);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_set_stats_options(c, TSLOCK_STATS_HOLD_TIMES),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    th_clock_advance(&clk, 400000); /* past the last finite bound */
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_stats(c, &s, sizeof(s)), TSLOCK_OK);
    CU_ASSERT_EQUAL(s.released, 2);
    CU_ASSERT_EQUAL(s.lost, 0);
    CU_ASSERT_EQUAL(s.hold.count, 1);
    CU_ASSERT_EQUAL(s.hold.bucket[TSLOCK_STATS_BUCKETS - 2], 0);
    CU_ASSERT_EQUAL(s.hold.bucket[TSLOCK_STATS_BUCKETS - 1], 1);
    CU_ASSERT_EQUAL(s.hold.sum_ms, 400000);
    tslock_lock_free(l);
    tslock_client_free(c);
}

static void test_arguments(void)
{
    tslock_client *c = th_client(&srv);
    tslock_stats s;

    CU_ASSERT_EQUAL(tslock_client_stats(NULL, &s, sizeof(s)), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_stats(c, NULL, sizeof(s)), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_stats(c, &s, sizeof(size_t)), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_stats_reset(NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_set_stats_options(NULL, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_set_stats_options(c, 2), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_set_observer(NULL, observe, NULL),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_set_observer(c, NULL, NULL), TSLOCK_OK);
    tslock_client_free(c);
}

int main(void)
{
    CU_pSuite s;
    int rc;

    if (th_server_start(&srv, NULL) != 0)
        return 1;
    raw = th_redis(&srv);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("metrics", NULL, NULL);
    CU_add_test(s, "every counter, bucket and event", test_counts);
    CU_add_test(s, "holds are timed only when asked", test_hold_times_asked);
    CU_add_test(s, "argument checks", test_arguments);
    rc = th_run_all();
    redisFree(raw);
    th_server_stop(&srv);
    return rc;
}
