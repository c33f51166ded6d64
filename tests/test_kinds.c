/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_kinds.c - reentrant locks, sets of locks taken all or nothing, and
 * tslock_with(), on a modern server and on Redis 2.2 and 2.0 played by
 * the proxy, in every scheme each one runs.
 *
 * Reentrant: a re-acquire adds a hold and sends nothing; the key stays
 * taken until the last release; a re-acquire after the lease ran out by
 * our clock is refused.  Sets: a busy key makes the set give back what it
 * took, shown command by command by the step hook; a failed give-back is
 * reported and its lock stays held; a held lock, a cancel and a set
 * across two clients behave as documented; processes taking {a,b} and {b,a}
 * never overlap (a shared-memory checker, shown to count overlaps on a
 * broken control that takes one key of the two) and never deadlock.
 * tslock_with: the result comes back; a lease run out inside is reported
 * lost; with renewal a function outlives several leases and keeps it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

static th_server srv, proxy22, proxy20;

/* The generations, and the schemes each one runs. */
static const struct target {
    const char *name;
    const th_server *endpoint;
    int n_schemes;
    struct {
        tslock_scheme scheme;
        int fair;
    } schemes[5];
} targets[] = {
    {"modern",
     &srv,
     5,
     {{TSLOCK_SCHEME_AUTO, 0},
      {TSLOCK_SCHEME_TIMESTAMP, 0},
      {TSLOCK_SCHEME_TOKEN, 0},
      {TSLOCK_SCHEME_BRIDGE, 0},
      {TSLOCK_SCHEME_TOKEN, 1}}},
    {"2.2.15 (WATCH)",
     &proxy22,
     4,
     {{TSLOCK_SCHEME_TIMESTAMP, 0},
      {TSLOCK_SCHEME_TOKEN, 0},
      {TSLOCK_SCHEME_BRIDGE, 0},
      {TSLOCK_SCHEME_TOKEN, 1}}},
    {"2.0.5 (no WATCH)",
     &proxy20,
     2,
     {{TSLOCK_SCHEME_TIMESTAMP, 0}, {TSLOCK_SCHEME_BRIDGE, 0}}},
};
#define N_TARGETS 3
static const struct target *cur;
static int next_target;
static th_clock clk;

static int target_init(void)
{
    cur = &targets[next_target++];
    return 0;
}

/* A client on the current target, on the test clock when clocked. */
static tslock_client *client(int clocked)
{
    tslock_client *c = th_client(cur->endpoint);

    if (clocked)
        tslock_client_set_clock(c, th_clock_fn, &clk);
    return c;
}

static tslock_lock *lock_on(tslock_client *c, const char *key, int k,
                            int64_t ttl_ms)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_scheme(l, cur->schemes[k].scheme)
                    == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_fair(l, cur->schemes[k].fair) == TSLOCK_OK);
    tslock_lock_set_ttl(l, ttl_ms);
    tslock_lock_set_retry(l, 1, 3);
    return l;
}

/* Whether the key exists, asked over a connection of its own. */
static int key_exists(const char *key)
{
    redisContext *r = th_redis(cur->endpoint);
    redisReply *rep = redisCommand(r, "EXISTS %s", key);
    int yes =
        rep != NULL && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;

    freeReplyObject(rep);
    redisFree(r);
    return yes;
}

static void del_keys(const char *a, const char *b, const char *c)
{
    redisContext *r = th_redis(cur->endpoint);

    freeReplyObject(redisCommand(r, "DEL %s %s %s", a, b, c));
    redisFree(r);
}

/* Counts the commands a client sends. */
static int sent;
static int count_hook(tslock_client *c, tslock_step step, const char *key,
                      void *ud)
{
    (void)c;
    (void)step;
    (void)key;
    (void)ud;
    sent++;
    return 0;
}

/* Counts a watchdog's renewals: the commands its client sent. */
static atomic_int renew_sent;
static int renew_hook(tslock_client *c, tslock_step step, const char *key,
                      void *ud)
{
    (void)c;
    (void)step;
    (void)key;
    (void)ud;
    atomic_fetch_add(&renew_sent, 1);
    return 0;
}

/* ------------------------------------------------------- reentrant */

/*
 * Taken three times, released three times: the re-acquires and the inner
 * releases send nothing, another client finds the key taken until the
 * last release, and a fourth release is refused.
 */
static void test_reentrant_count(void)
{
    int k;

    th_clock_init(&clk);
    for (k = 0; k < cur->n_schemes; k++) {
        tslock_client *c = client(1), *c2 = client(1);
        tslock_lock *l = lock_on(c, "re:count", k, 10000);
        tslock_lock *other = lock_on(c2, "re:count", k, 10000);
        int i;

        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        /* Off by default: a second acquire is a mistake. */
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_ESTATE);
        CU_ASSERT_EQUAL(tslock_lock_set_reentrant(l, 1), TSLOCK_OK);
        tslock_client_set_step_hook(c, count_hook, NULL);
        sent = 0;
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(l, 5000), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_lock_set_reentrant(l, 0), TSLOCK_ESTATE);
        /* A watchdog renews the one hold and hands the count back. */
        {
            tslock_client *renew = client(1);
            tslock_watchdog *w = NULL;
            atomic_store(&renew_sent, 0);
            tslock_client_set_step_hook(renew, renew_hook, NULL);
            CU_ASSERT_EQUAL(tslock_watchdog_start(&w, l, renew, 1, NULL, NULL),
                            TSLOCK_OK);
            while (w != NULL && atomic_load(&renew_sent) < 2)
                th_sleep_us(1000);
            CU_ASSERT_EQUAL(tslock_watchdog_stop(w), TSLOCK_OK);
            tslock_client_free(renew);
        }
        for (i = 0; i < 2; i++) {
            CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
            CU_ASSERT_TRUE(tslock_lock_is_held(l));
            CU_ASSERT_EQUAL(tslock_acquire(other, 0), TSLOCK_EBUSY);
        }
        CU_ASSERT_EQUAL(sent, 0); /* no round trip so far */
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        CU_ASSERT_TRUE(sent > 0);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ESTATE);
        CU_ASSERT_EQUAL(tslock_acquire(other, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(other), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_lock_set_reentrant(NULL, 1), TSLOCK_EINVAL);
        tslock_lock_free(other);
        tslock_lock_free(l);
        tslock_client_free(c2);
        tslock_client_free(c);
    }
}

/*
 * Extend acts on the one hold, whatever its count.  A re-acquire once
 * the lease has run out by our clock is refused with ELOST and changes
 * nothing; the last release then asks the server: the stamp schemes
 * report the loss (their lease is the stamp), the token scheme finds its
 * token still there (the server's TTL has not run out) and releases.
 */
static void test_reentrant_lease(void)
{
    int k;

    th_clock_init(&clk);
    for (k = 0; k < cur->n_schemes; k++) {
        tslock_client *c = client(1);
        tslock_lock *l = lock_on(c, "re:lease", k, 4000);

        tslock_lock_set_reentrant(l, 1);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_extend(l, 0), TSLOCK_OK);
        th_clock_advance(&clk, 5000); /* past the stamp's "+1" too */
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_ELOST);
        CU_ASSERT_PTR_NOT_NULL(
            strstr(tslock_client_errstr(c), "lease ran out"));
        CU_ASSERT_TRUE(tslock_lock_is_held(l));
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK); /* the inner one */
        CU_ASSERT_EQUAL(tslock_release(l),
                        tslock_lock_scheme_used(l) == TSLOCK_SCHEME_TOKEN
                            ? TSLOCK_OK
                            : TSLOCK_ELOST);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ESTATE);
        tslock_lock_free(l);
        tslock_client_free(c);
        del_keys("re:lease", "{re:lease}:owner", "re:lease:fence");
    }
}

/* --------------------------------------------------- several keys */

/* What the hook saw: "key:step" lines, in order. */
static char trace[64][48];
static int n_trace;
static int stop_give_back; /* stop the first command on set:a after set:b */
static int seen_b;

static int trace_hook(tslock_client *c, tslock_step step, const char *key,
                      void *ud)
{
    (void)c;
    (void)ud;
    if (n_trace < 64)
        snprintf(trace[n_trace++], sizeof(trace[0]), "%s %s", key,
                 tslock_step_name(step));
    if (strcmp(key, "set:b") == 0)
        seen_b = 1;
    if (stop_give_back && seen_b && strcmp(key, "set:a") == 0) {
        stop_give_back = 0;
        return 1;
    }
    return 0;
}

static int traced(const char *prefix, int from)
{
    int i;

    for (i = from; i < n_trace; i++)
        if (strncmp(trace[i], prefix, strlen(prefix)) == 0)
            return i;
    return -1;
}

/*
 * {set:c, set:a, set:b} with set:b held elsewhere: the set is tried in
 * key order, set:a is taken, set:b is busy, set:a is given back and
 * set:c is never touched.  Nothing is kept, on the server either.
 */
static void test_set_all_or_nothing(void)
{
    int k;

    th_clock_init(&clk);
    for (k = 0; k < cur->n_schemes; k++) {
        tslock_client *c = client(1), *c2 = client(1);
        tslock_lock *set[3], *b2 = lock_on(c2, "set:b", k, 10000);
        int first_b, back_a, i;

        set[0] = lock_on(c, "set:c", k, 10000);
        set[1] = lock_on(c, "set:a", k, 10000);
        set[2] = lock_on(c, "set:b", k, 10000);
        CU_ASSERT_EQUAL(tslock_acquire(b2, 0), TSLOCK_OK);
        tslock_client_set_step_hook(c, trace_hook, NULL);
        n_trace = 0;
        seen_b = 0;
        CU_ASSERT_EQUAL(tslock_acquire_all(set, 3, 0), TSLOCK_EBUSY);
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "set:b"));
        for (i = 0; i < 3; i++)
            CU_ASSERT_FALSE(tslock_lock_is_held(set[i]));
        first_b = traced("set:b ", 0);
        back_a = traced("set:a ", first_b);
        CU_ASSERT_TRUE(traced("set:a ", 0) >= 0);
        CU_ASSERT_TRUE(traced("set:a ", 0) < first_b);
        CU_ASSERT_TRUE(first_b >= 0 && back_a > first_b); /* given back */
        CU_ASSERT_EQUAL(traced("set:c ", 0), -1);         /* never tried */
        CU_ASSERT_FALSE(key_exists("set:a"));
        CU_ASSERT_FALSE(key_exists("set:c"));
        tslock_client_set_step_hook(c, NULL, NULL);

        /* Free again: the whole set, then all of it released. */
        CU_ASSERT_EQUAL(tslock_release(b2), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire_all(set, 3, 0), TSLOCK_OK);
        for (i = 0; i < 3; i++)
            CU_ASSERT_TRUE(tslock_lock_is_held(set[i]));
        CU_ASSERT_EQUAL(tslock_acquire(b2, 0), TSLOCK_EBUSY);
        CU_ASSERT_EQUAL(tslock_release_all(set, 3), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release_all(set, 3), TSLOCK_ESTATE);
        CU_ASSERT_FALSE(key_exists("set:a") || key_exists("set:b")
                        || key_exists("set:c"));
        for (i = 0; i < 3; i++)
            tslock_lock_free(set[i]);
        tslock_lock_free(b2);
        tslock_client_free(c2);
        tslock_client_free(c);
    }
}

/*
 * The give-back of set:a is stopped (a crash between the busy key and
 * the release): the call says so instead of EBUSY, set:a stays held and
 * on the server, and releasing the set then gives it back.
 */
static void test_set_give_back_fails(void)
{
    tslock_client *c = client(1), *c2 = client(1);
    tslock_lock *set[2], *b2 = lock_on(c2, "set:b", 0, 10000);

    th_clock_init(&clk);
    set[0] = lock_on(c, "set:b", 0, 10000);
    set[1] = lock_on(c, "set:a", 0, 10000);
    CU_ASSERT_EQUAL(tslock_acquire(b2, 0), TSLOCK_OK);
    tslock_client_set_step_hook(c, trace_hook, NULL);
    n_trace = 0;
    seen_b = 0;
    stop_give_back = 1;
    CU_ASSERT_EQUAL(tslock_acquire_all(set, 2, 0), TSLOCK_EHOOK);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "stays held"));
    CU_ASSERT_TRUE(tslock_lock_is_held(set[1]));
    CU_ASSERT_FALSE(tslock_lock_is_held(set[0]));
    CU_ASSERT_TRUE(key_exists("set:a"));
    tslock_client_set_step_hook(c, NULL, NULL);
    CU_ASSERT_EQUAL(tslock_release_all(set, 2), TSLOCK_OK);
    CU_ASSERT_FALSE(key_exists("set:a"));
    CU_ASSERT_EQUAL(tslock_release(b2), TSLOCK_OK);
    tslock_lock_free(set[0]);
    tslock_lock_free(set[1]);
    tslock_lock_free(b2);
    tslock_client_free(c2);
    tslock_client_free(c);
}

/* Bad sets are refused before anything is sent. */
static void test_set_refusals(void)
{
    tslock_client *c = client(0);
    tslock_lock *set[3];

    set[0] = lock_on(c, "set:x", 0, 10000);
    set[1] = lock_on(c, "set:y", 0, 10000);
    set[2] = lock_on(c, "set:x", 0, 10000);
    CU_ASSERT_EQUAL(tslock_acquire_all(NULL, 1, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_acquire_all(set, 0, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_acquire_all(set, 3, 0), TSLOCK_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "twice"));
    CU_ASSERT_EQUAL(tslock_acquire_all(set, 2, -2), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_release_all(NULL, 1), TSLOCK_EINVAL);
    CU_ASSERT_FALSE(key_exists("set:x") || key_exists("set:y"));
    tslock_lock_free(set[0]);
    tslock_lock_free(set[1]);
    tslock_lock_free(set[2]);
    tslock_client_free(c);
}

/*
 * A lock of the set that is held already (not reentrant) fails the set
 * with ESTATE, nothing else kept.  Cancels on every lock end a wait with
 * ECANCELED, and are used up: the next wait is not canceled.
 */
static void test_set_held_and_cancel(void)
{
    tslock_client *c = client(0), *c2 = client(0);
    tslock_lock *set[2], *b2 = lock_on(c2, "set:b", 0, 10000);

    set[0] = lock_on(c, "set:b", 0, 10000);
    set[1] = lock_on(c, "set:a", 0, 10000);
    CU_ASSERT_EQUAL(tslock_acquire(set[0], 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire_all(set, 2, 0), TSLOCK_ESTATE);
    CU_ASSERT_FALSE(tslock_lock_is_held(set[1]));
    CU_ASSERT_FALSE(key_exists("set:a"));
    CU_ASSERT_EQUAL(tslock_release(set[0]), TSLOCK_OK);

    CU_ASSERT_EQUAL(tslock_acquire(b2, 0), TSLOCK_OK);
    tslock_lock_cancel(set[0]);
    tslock_lock_cancel(set[1]);
    CU_ASSERT_EQUAL(tslock_acquire_all(set, 2, TSLOCK_WAIT_FOREVER),
                    TSLOCK_ECANCELED);
    CU_ASSERT_FALSE(tslock_lock_is_held(set[0]) || tslock_lock_is_held(set[1]));
    CU_ASSERT_FALSE(key_exists("set:a"));
    CU_ASSERT_EQUAL(tslock_acquire_all(set, 2, 100), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_release(b2), TSLOCK_OK);
    tslock_lock_free(set[0]);
    tslock_lock_free(set[1]);
    tslock_lock_free(b2);
    tslock_client_free(c2);
    tslock_client_free(c);
}

/* A set may span clients (and so servers): one set, two connections. */
static void test_set_two_clients(void)
{
    tslock_client *c1 = client(0), *c2 = client(0), *c3 = client(0);
    tslock_lock *set[2], *probe = lock_on(c3, "set:b", 0, 10000);

    set[0] = lock_on(c1, "set:a", 0, 10000);
    set[1] = lock_on(c2, "set:b", 0, 10000);
    CU_ASSERT_EQUAL(tslock_acquire_all(set, 2, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(probe, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_release_all(set, 2), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(probe, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire_all(set, 2, 0), TSLOCK_EBUSY);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c2), "set:b"));
    CU_ASSERT_FALSE(key_exists("set:a"));
    CU_ASSERT_EQUAL(tslock_release(probe), TSLOCK_OK);
    tslock_lock_free(set[0]);
    tslock_lock_free(set[1]);
    tslock_lock_free(probe);
    tslock_client_free(c3);
    tslock_client_free(c2);
    tslock_client_free(c1);
}

/* A set waits for its busy key, then takes the whole set. */
static void test_set_waits(void)
{
    tslock_client *c = client(0), *c2 = client(0);
    tslock_lock *set[2], *a2 = lock_on(c2, "set:a", 0, 10000);

    set[0] = lock_on(c, "set:b", 0, 10000);
    set[1] = lock_on(c, "set:a", 0, 10000);
    /* Held with a short lease and never released: the wait outlasts it. */
    tslock_lock_set_ttl(a2, 300);
    CU_ASSERT_EQUAL(tslock_acquire(a2, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire_all(set, 2, 20000), TSLOCK_OK);
    CU_ASSERT_TRUE(tslock_lock_is_held(set[0]) && tslock_lock_is_held(set[1]));
    CU_ASSERT_EQUAL(tslock_release_all(set, 2), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(a2), TSLOCK_ELOST);
    tslock_lock_free(set[0]);
    tslock_lock_free(set[1]);
    tslock_lock_free(a2);
    tslock_client_free(c2);
    tslock_client_free(c);
}

/* The load: shared-memory counters of holders inside, per key. */
struct shared {
    atomic_int inside[2];
    atomic_int overlaps;
    atomic_int holds;
    atomic_int failures;
};
static struct shared *sh;
static int control; /* the broken control: take only the first key */
static int load_rounds;
static int load_scheme;

static void touch_both(void)
{
    int i;

    for (i = 0; i < 2; i++)
        if (atomic_fetch_add(&sh->inside[i], 1) != 0)
            atomic_fetch_add(&sh->overlaps, 1);
    th_sleep_us(100); /* widen the window a second holder would fall into */
    for (i = 0; i < 2; i++)
        atomic_fetch_sub(&sh->inside[i], 1);
}

/* Workers of even index ask for {load:a, load:b}, odd ones {b, a}. */
static void set_worker(int index, void *ud)
{
    tslock_client *c = client(0);
    tslock_lock *set[2];
    int i, rc;

    (void)ud;
    set[index % 2] = lock_on(c, "load:a", load_scheme, 10000);
    set[1 - index % 2] = lock_on(c, "load:b", load_scheme, 10000);
    for (i = 0; i < load_rounds; i++) {
        rc = control ? tslock_acquire(set[0], 60000)
                     : tslock_acquire_all(set, 2, 60000);
        if (rc != TSLOCK_OK) {
            fprintf(stderr, "worker %d: %s: %s\n", index, tslock_errname(rc),
                    tslock_client_errstr(c));
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        touch_both();
        atomic_fetch_add(&sh->holds, 1);
        rc = control ? tslock_release(set[0]) : tslock_release_all(set, 2);
        if (rc != TSLOCK_OK)
            atomic_fetch_add(&sh->failures, 1);
    }
    tslock_lock_free(set[0]);
    tslock_lock_free(set[1]);
    tslock_client_free(c);
}

/*
 * Four processes, two asking for {a,b} and two for {b,a}: no overlap,
 * every hold taken within its bound (a deadlock would run it out).  The
 * checker first shows it counts the overlaps of a broken control.
 */
static void test_set_load(void)
{
    int workers = 4;

    load_scheme = 0;
    load_rounds = th_rounds(cur->endpoint == &srv ? 150 : 40);
    memset(sh, 0, sizeof(*sh));
    control = 1;
    CU_ASSERT_TRUE(th_workers(workers, set_worker, NULL));
    printf("\n    control (one key of two): %d holds, %d overlaps",
           atomic_load(&sh->holds), atomic_load(&sh->overlaps));
    CU_ASSERT_TRUE(atomic_load(&sh->overlaps) > 0);

    memset(sh, 0, sizeof(*sh));
    control = 0;
    CU_ASSERT_TRUE(th_workers(workers, set_worker, NULL));
    printf("\n    sets {a,b} and {b,a}:      %d holds, %d overlaps ",
           atomic_load(&sh->holds), atomic_load(&sh->overlaps));
    CU_ASSERT_EQUAL(atomic_load(&sh->overlaps), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->holds), workers * load_rounds);
}

/* ---------------------------------------------------- tslock_with */

struct work {
    tslock_client *other_client;
    const char *key;
    int scheme;
    int64_t advance_ms; /* move the test clock on by this much */
    int64_t sleep_ms;   /* run this long in real time */
    int others_busy;    /* whether another client found the key taken */
    int took;           /* another client took the key (it expired) */
    int release_it;     /* misuse: release inside */
    int ran;
};

static int work_fn(tslock_lock *l, void *ud)
{
    struct work *w = ud;
    tslock_lock *o = lock_on(w->other_client, w->key, w->scheme, 10000);

    w->ran++;
    th_clock_advance(&clk, w->advance_ms);
    th_sleep_us(w->sleep_ms * 1000);
    switch (tslock_acquire(o, 0)) {
    case TSLOCK_EBUSY:
        w->others_busy = 1;
        break;
    case TSLOCK_OK:
        w->took = 1; /* and keeps it: freed, not released */
        break;
    default:
        break;
    }
    if (w->release_it)
        tslock_release(l);
    tslock_lock_free(o);
    return 42;
}

/* fn runs holding the lock, its result comes back, the lock is free. */
static void test_with_result(void)
{
    int k;

    th_clock_init(&clk);
    for (k = 0; k < cur->n_schemes; k++) {
        tslock_client *c = client(1), *c2 = client(1);
        tslock_lock *l = lock_on(c, "with:plain", k, 10000);
        tslock_lock *hold = lock_on(c2, "with:plain", k, 10000);
        struct work w = {c2, "with:plain", k, 0, 0, 0, 0, 0, 0};
        int result = -1;

        CU_ASSERT_EQUAL(tslock_with(l, 0, NULL, work_fn, &w, &result),
                        TSLOCK_OK);
        CU_ASSERT_EQUAL(result, 42);
        CU_ASSERT_TRUE(w.others_busy);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_FALSE(key_exists("with:plain"));
        /* Busy: fn does not run and result is left alone. */
        result = -1;
        w.ran = 0;
        CU_ASSERT_EQUAL(tslock_acquire(hold, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_with(l, 0, NULL, work_fn, &w, &result),
                        TSLOCK_EBUSY);
        CU_ASSERT_EQUAL(w.ran, 0);
        CU_ASSERT_EQUAL(result, -1);
        CU_ASSERT_EQUAL(tslock_release(hold), TSLOCK_OK);
        /* fn that releases the lock itself is told off. */
        w.release_it = 1;
        CU_ASSERT_EQUAL(tslock_with(l, 0, NULL, work_fn, &w, NULL),
                        TSLOCK_ESTATE);
        CU_ASSERT_EQUAL(tslock_with(NULL, 0, NULL, work_fn, &w, NULL),
                        TSLOCK_EINVAL);
        CU_ASSERT_EQUAL(tslock_with(l, 0, NULL, NULL, &w, NULL), TSLOCK_EINVAL);
        tslock_lock_free(hold);
        tslock_lock_free(l);
        tslock_client_free(c2);
        tslock_client_free(c);
    }
}

/*
 * fn runs past the lease with no renewal, and another client takes the
 * expired key meanwhile (the timestamp scheme, on the test clock): the
 * loss is reported, fn's result still comes back, nothing of the new
 * holder's is deleted.
 */
static void test_with_lost(void)
{
    tslock_client *c = client(1), *c2 = client(1);
    tslock_lock *l;
    struct work w = {c2, "with:lost", 0, 0, 0, 0, 0, 0, 0};
    int result = 0, k;

    th_clock_init(&clk);
    for (k = 0; cur->schemes[k].scheme != TSLOCK_SCHEME_TIMESTAMP; k++)
        ;
    w.scheme = k;
    w.advance_ms = 3000;
    l = lock_on(c, "with:lost", k, 2000);
    CU_ASSERT_EQUAL(tslock_with(l, 0, NULL, work_fn, &w, &result),
                    TSLOCK_ELOST);
    CU_ASSERT_EQUAL(result, 42);
    CU_ASSERT_TRUE(w.took); /* the other client took it */
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    CU_ASSERT_TRUE(key_exists("with:lost")); /* the new holder's */
    del_keys("with:lost", "with:lost", "with:lost");
    tslock_lock_free(l);
    tslock_client_free(c2);
    tslock_client_free(c);
}

/*
 * With a renewing client, fn runs for two and a half leases in real
 * time: the key is still taken at its end and the release finds it ours.
 */
static void test_with_renewed(void)
{
    tslock_client *c = client(0), *c2 = client(0), *renew = client(0);
    tslock_lock *l = lock_on(c, "with:renew", 0, 1000);
    struct work w = {c2, "with:renew", 0, 0, 2500, 0, 0, 0, 0};
    int result = 0;

    CU_ASSERT_EQUAL(tslock_with(l, 0, renew, work_fn, &w, &result), TSLOCK_OK);
    CU_ASSERT_EQUAL(result, 42);
    CU_ASSERT_TRUE(w.others_busy);
    CU_ASSERT_FALSE(key_exists("with:renew"));
    tslock_lock_free(l);
    tslock_client_free(renew);
    tslock_client_free(c2);
    tslock_client_free(c);
}

int main(void)
{
    CU_pSuite s;
    int i, rc = 1;

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || th_server_start(&srv, NULL) != 0)
        return 1;
    if (th_proxy_start(&proxy22, &srv, "2.2.15") != 0
        || th_proxy_start(&proxy20, &srv, "2.0.5") != 0)
        goto out;
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    for (i = 0; i < N_TARGETS; i++) {
        s = CU_add_suite(targets[i].name, target_init, NULL);
        CU_add_test(s, "reentrant: counted holds, no round trip",
                    test_reentrant_count);
        CU_add_test(s, "reentrant: a re-acquire after the lease ran out",
                    test_reentrant_lease);
        CU_add_test(s, "set: a busy key, nothing kept",
                    test_set_all_or_nothing);
        CU_add_test(s, "set: a failed give-back is told",
                    test_set_give_back_fails);
        CU_add_test(s, "set: refusals", test_set_refusals);
        CU_add_test(s, "set: a held lock, a cancel", test_set_held_and_cancel);
        CU_add_test(s, "set: across two clients", test_set_two_clients);
        CU_add_test(s, "set: waits for its busy key", test_set_waits);
        CU_add_test(s, "set: {a,b} and {b,a} under load", test_set_load);
        CU_add_test(s, "with: the result, busy, misuse", test_with_result);
        CU_add_test(s, "with: the lease ran out inside", test_with_lost);
        CU_add_test(s, "with: renewed past the lease", test_with_renewed);
    }
    rc = th_run_all();
out:
    th_proxy_stop(&proxy20);
    th_proxy_stop(&proxy22);
    th_server_stop(&srv);
    return rc;
}
