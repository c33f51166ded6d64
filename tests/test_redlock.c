/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_redlock.c - one lock over three independent masters of three
 * generations: a modern server, Redis 2.6.0 and Redis 2.2.15 (each old
 * one played by the proxy in front of a server of its own).  Mutual
 * exclusion across processes, checked in shared memory, with a control
 * that needs no majority and is caught overlapping; one master down (the
 * lock works), two down (TSLOCK_ENOQUORUM, nothing left behind); a late
 * answer cleaned up; a majority taken or extended too slowly (the test
 * clock moved by the step hook); release and extend on every master;
 * handles; Redis 2.0 refused.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

#define N 3
static th_server srv[N];   /* the three real servers */
static th_server proxy260; /* 2.6.0 in front of srv[1] */
static th_server proxy22;  /* 2.2.15 in front of srv[2] */
static th_server proxy20;  /* 2.0.5 in front of srv[2], for the refusal */

/* Where tslock talks to master i: the server itself or its proxy. */
static const th_server *endpoint(int i)
{
    return i == 0 ? &srv[0] : i == 1 ? &proxy260 : &proxy22;
}

static void clients(tslock_client *c[N])
{
    int i;

    for (i = 0; i < N; i++)
        c[i] = th_client(endpoint(i));
}

static void free_clients(tslock_client *c[N])
{
    int i;

    for (i = 0; i < N; i++)
        tslock_client_free(c[i]);
}

static tslock_redlock *redlock(tslock_client *c[N], const char *key)
{
    tslock_redlock *rl = NULL;

    CU_ASSERT_FATAL(tslock_redlock_new(&rl, c, N, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_redlock_set_ttl(rl, 10000) == TSLOCK_OK);
    return rl;
}

/* What master i's real server holds under key: 1 and the value, or 0. */
static int server_get(int i, const char *key, char *value, size_t size)
{
    redisContext *r = th_redis(&srv[i]);
    redisReply *rep = redisCommand(r, "GET %s", key);
    int found = rep != NULL && rep->type == REDIS_REPLY_STRING;

    if (value != NULL)
        snprintf(value, size, "%s", found ? rep->str : "");
    freeReplyObject(rep);
    redisFree(r);
    return found;
}

static long long server_pttl(int i, const char *key)
{
    redisContext *r = th_redis(&srv[i]);
    redisReply *rep = redisCommand(r, "PTTL %s", key);
    long long v =
        rep != NULL && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -9;

    freeReplyObject(rep);
    redisFree(r);
    return v;
}

/* How many masters hold anything under key. */
static int holders(const char *key)
{
    int i, n = 0;

    for (i = 0; i < N; i++)
        n += server_get(i, key, NULL, 0);
    return n;
}

static void test_arguments(void)
{
    tslock_client *c[N];
    tslock_client *twice[N];
    tslock_redlock *rl = NULL;

    clients(c);
    twice[0] = c[0];
    twice[1] = c[1];
    twice[2] = c[0];
    CU_ASSERT_EQUAL(tslock_redlock_new(NULL, c, N, "k"), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_new(&rl, NULL, N, "k"), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_new(&rl, c, N, NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_new(&rl, c, N, ""), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_new(&rl, c, 2, "k"), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_new(&rl, c, 1, "k"), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_new(&rl, twice, N, "k"), TSLOCK_EINVAL);
    CU_ASSERT_PTR_NULL(rl);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(NULL, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_release(NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_extend(NULL, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_set_ttl(NULL, 1), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_adopt(NULL, "x"), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_cancel(NULL), TSLOCK_EINVAL);
    CU_ASSERT_PTR_NULL(tslock_redlock_handle(NULL));
    CU_ASSERT_STRING_EQUAL(tslock_redlock_errstr(NULL), "");
    CU_ASSERT_EQUAL(tslock_redlock_validity_ms(NULL), 0);
    rl = redlock(c, "rl:args");
    CU_ASSERT_EQUAL(tslock_redlock_set_ttl(rl, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_set_server_timeout(rl, -1), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_set_retry(rl, 0, 5), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_set_retry(rl, 5, 4), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_redlock_extend(rl, 0), TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, -2), TSLOCK_EINVAL);
    tslock_redlock_free(rl);
    tslock_redlock_free(NULL);
    free_clients(c);
}

/*
 * Acquire writes one token to all three generations; extend sets the
 * lease on all three; release deletes it from all three.
 */
static void test_all_masters(void)
{
    tslock_client *c[N];
    tslock_redlock *rl;
    const char *handle;
    char v[N][64];
    int i;

    clients(c);
    rl = redlock(c, "rl:all");
    CU_ASSERT_EQUAL_FATAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    CU_ASSERT_TRUE(tslock_redlock_is_held(rl));
    CU_ASSERT_EQUAL(tslock_redlock_taken(rl), 3);
    CU_ASSERT_TRUE(tslock_redlock_validity_ms(rl) > 0);
    CU_ASSERT_TRUE(tslock_redlock_validity_ms(rl) <= 10000 - 102);
    handle = tslock_redlock_handle(rl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(handle);
    CU_ASSERT_EQUAL(strncmp(handle, "redlock:", 8), 0);
    for (i = 0; i < N; i++) {
        CU_ASSERT_TRUE(server_get(i, "rl:all", v[i], sizeof(v[i])));
        CU_ASSERT_STRING_EQUAL(v[i], handle + 8);
        CU_ASSERT_TRUE(server_pttl(i, "rl:all") > 0);
        CU_ASSERT_TRUE(server_pttl(i, "rl:all") <= 11000);
    }
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_redlock_extend(rl, 60000), TSLOCK_OK);
    for (i = 0; i < N; i++)
        CU_ASSERT_TRUE(server_pttl(i, "rl:all") > 20000);
    CU_ASSERT_TRUE(tslock_redlock_validity_ms(rl) > 10000);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_OK);
    CU_ASSERT_FALSE(tslock_redlock_is_held(rl));
    CU_ASSERT_PTR_NULL(tslock_redlock_handle(rl));
    CU_ASSERT_EQUAL(holders("rl:all"), 0);
    /* Free again: taken again at once. */
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_OK);
    tslock_redlock_free(rl);
    free_clients(c);
}

/* A single-server token lock of another owner on master i. */
static tslock_lock *foreign_hold(tslock_client *c, const char *key)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN);
    tslock_lock_set_ttl(l, 10000);
    CU_ASSERT_FATAL(tslock_acquire(l, 0) == TSLOCK_OK);
    return l;
}

/*
 * Another owner on one master: still a majority.  On two: busy, and the
 * one master we took is released again.
 */
static void test_busy(void)
{
    tslock_client *c[N], *o[N];
    tslock_lock *f0, *f1;
    tslock_redlock *rl;
    char v[64];

    clients(c);
    clients(o);
    rl = redlock(c, "rl:busy");
    f0 = foreign_hold(o[0], "rl:busy");
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_taken(rl), 2);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_OK);
    CU_ASSERT_EQUAL(holders("rl:busy"), 1);
    f1 = foreign_hold(o[1], "rl:busy");
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_EBUSY);
    CU_ASSERT_FALSE(tslock_redlock_is_held(rl));
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_redlock_errstr(rl), "1 of 3"));
    CU_ASSERT_FALSE(server_get(2, "rl:busy", v, sizeof(v)));
    /* A waiting acquire gets it once the other owner lets go. */
    CU_ASSERT_EQUAL(tslock_release(f1), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 5000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(f0), TSLOCK_OK);
    CU_ASSERT_EQUAL(holders("rl:busy"), 0);
    tslock_lock_free(f0);
    tslock_lock_free(f1);
    tslock_redlock_free(rl);
    free_clients(o);
    free_clients(c);
}

/* ---- contention across processes, judged in shared memory */

struct shared {
    atomic_int inside;
    atomic_int overlaps;
    atomic_int acquisitions;
    atomic_int failures;
    int counter; /* updated without atomics: lost updates show overlaps */
};
static struct shared *sh;
static int rounds;

/*
 * The critical section.  rendezvous (the control only): stay inside
 * until another worker is inside too, or 2 s have passed, so a lock that
 * lets two in is caught every time, not by luck.
 */
static void critical_section(int rendezvous)
{
    int64_t until = th_mono_ms() + 2000;
    int seen;

    if (atomic_fetch_add(&sh->inside, 1) != 0)
        atomic_fetch_add(&sh->overlaps, 1);
    seen = sh->counter;
    while (rendezvous && atomic_load(&sh->inside) < 2 && th_mono_ms() < until)
        sched_yield();
    sched_yield();
    sh->counter = seen + 1;
    atomic_fetch_sub(&sh->inside, 1);
}

static void redlock_worker(int index, void *userdata)
{
    tslock_client *c[N];
    tslock_redlock *rl = NULL;
    int i, rc;

    (void)index;
    (void)userdata;
    clients(c);
    if (tslock_redlock_new(&rl, c, N, "rl:load") != TSLOCK_OK)
        _exit(3);
    tslock_redlock_set_ttl(rl, 10000);
    tslock_redlock_set_retry(rl, 1, 5);
    for (i = 0; i < rounds; i++) {
        rc = tslock_redlock_acquire(rl, 60000);
        if (rc != TSLOCK_OK) {
            fprintf(stderr, "worker %d: acquire: %s (%s)\n", (int)getpid(),
                    tslock_errname(rc), tslock_redlock_errstr(rl));
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        atomic_fetch_add(&sh->acquisitions, 1);
        critical_section(0);
        rc = tslock_redlock_release(rl);
        if (rc != TSLOCK_OK) {
            fprintf(stderr, "worker %d: release: %s (%s)\n", (int)getpid(),
                    tslock_errname(rc), tslock_redlock_errstr(rl));
            atomic_fetch_add(&sh->failures, 1);
        }
    }
    tslock_redlock_free(rl);
    free_clients(c);
    _exit(0);
}

/*
 * The control: a "Redlock" that does not require a majority.  Worker
 * index starts at master index and counts itself the holder as soon as
 * one master is taken, as a client that trusted any one master would.
 */
static void no_majority_worker(int index, void *userdata)
{
    tslock_client *c[N];
    tslock_lock *l[N];
    int i, k;

    (void)userdata;
    clients(c);
    for (k = 0; k < N; k++) {
        if (tslock_lock_new(&l[k], c[k], "rl:control") != TSLOCK_OK)
            _exit(3);
        tslock_lock_set_scheme(l[k], TSLOCK_SCHEME_TOKEN);
    }
    for (i = 0; i < 3; i++) {
        int took = -1;
        for (k = 0; k < N && took < 0; k++) {
            int m = (index + k) % N;
            if (tslock_acquire(l[m], 0) == TSLOCK_OK)
                took = m;
        }
        if (took < 0)
            continue;
        atomic_fetch_add(&sh->acquisitions, 1);
        critical_section(1);
        tslock_release(l[took]);
    }
    for (k = 0; k < N; k++)
        tslock_lock_free(l[k]);
    free_clients(c);
    _exit(0);
}

static void test_control_caught(void)
{
    memset(sh, 0, sizeof(*sh));
    CU_ASSERT_TRUE(th_workers(2, no_majority_worker, NULL));
    printf("\n  control (no majority): %d acquisitions, %d overlaps ",
           atomic_load(&sh->acquisitions), atomic_load(&sh->overlaps));
    CU_ASSERT_TRUE(atomic_load(&sh->overlaps) > 0);
}

#define WORKERS 4
static void test_contention(void)
{
    memset(sh, 0, sizeof(*sh));
    CU_ASSERT_TRUE(th_workers(WORKERS, redlock_worker, NULL));
    printf("\n  redlock: %d processes, %d acquisitions, %d overlaps, %d lost "
           "updates ",
           WORKERS, atomic_load(&sh->acquisitions), atomic_load(&sh->overlaps),
           atomic_load(&sh->acquisitions) - sh->counter);
    CU_ASSERT_EQUAL(atomic_load(&sh->failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->acquisitions), WORKERS * rounds);
    CU_ASSERT_EQUAL(atomic_load(&sh->overlaps), 0);
    CU_ASSERT_EQUAL(sh->counter, WORKERS * rounds);
    CU_ASSERT_EQUAL(holders("rl:load"), 0);
}

/* ---- masters down */

static void test_one_down(void)
{
    tslock_client *c[N];
    tslock_redlock *rl;

    clients(c);
    rl = redlock(c, "rl:down1");
    th_server_kill(&srv[0]);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_taken(rl), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_redlock_errstr(rl), "master 1"));
    CU_ASSERT_EQUAL(tslock_redlock_extend(rl, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_OK);
    CU_ASSERT_FALSE(server_get(1, "rl:down1", NULL, 0));
    CU_ASSERT_FALSE(server_get(2, "rl:down1", NULL, 0));
    /* Back again: it takes part in the next acquisition. */
    CU_ASSERT_FATAL(th_server_restart(&srv[0]) == 0);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_taken(rl), 3);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_OK);
    CU_ASSERT_EQUAL(holders("rl:down1"), 0);
    tslock_redlock_free(rl);
    free_clients(c);
}

static void test_two_down(void)
{
    tslock_client *c[N];
    tslock_redlock *rl;
    const char *why;

    clients(c);
    rl = redlock(c, "rl:down2");
    tslock_redlock_set_retry(rl, 30, 40);
    th_server_kill(&srv[0]);
    th_server_kill(&srv[2]);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_ENOQUORUM);
    why = tslock_redlock_errstr(rl);
    printf("\n  %s ", why);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "2 of 3 masters failed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "master 2"));
    CU_ASSERT_FALSE(tslock_redlock_is_held(rl));
    /* The live master took it and gave it back: nothing left behind. */
    CU_ASSERT_FALSE(server_get(1, "rl:down2", NULL, 0));
    /* A waiting acquire keeps trying, then says the same. */
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 100), TSLOCK_ENOQUORUM);
    CU_ASSERT_FALSE(server_get(1, "rl:down2", NULL, 0));
    CU_ASSERT_FATAL(th_server_restart(&srv[0]) == 0);
    CU_ASSERT_FATAL(th_server_restart(&srv[2]) == 0);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_taken(rl), 3);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_OK);
    CU_ASSERT_EQUAL(holders("rl:down2"), 0);
    tslock_redlock_free(rl);
    free_clients(c);
}

/*
 * A hung master: its answer does not come within the per-master timeout,
 * but the write is done once it runs again.  The release deletes it
 * there too.
 */
static void test_late_answer(void)
{
    tslock_client *c[N];
    tslock_redlock *rl;
    char v[64], token[40];
    int i;

    clients(c);
    rl = redlock(c, "rl:late");
    tslock_redlock_set_server_timeout(rl, 1000);
    th_server_pause(&srv[0]);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    th_server_resume(&srv[0]);
    CU_ASSERT_EQUAL(tslock_redlock_taken(rl), 2);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_redlock_errstr(rl), "TSLOCK_ETIMEDOUT"));
    snprintf(token, sizeof(token), "%s", tslock_redlock_handle(rl) + 8);
    /* The hung master wrote our token once it ran again (bound: 5 s). */
    for (i = 0; i < 500 && !server_get(0, "rl:late", v, sizeof(v)); i++)
        th_sleep_us(10000);
    CU_ASSERT_STRING_EQUAL(v, token);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_OK);
    CU_ASSERT_EQUAL(holders("rl:late"), 0);
    tslock_redlock_free(rl);
    free_clients(c);
}

/* ---- too slow: the test clock moved past the validity by the hook */

static th_clock clk;
static int64_t advance_by;

static int advance_hook(tslock_client *c, tslock_step step, const char *key,
                        void *userdata)
{
    (void)c;
    (void)step;
    (void)key;
    (void)userdata;
    th_clock_advance(&clk, advance_by);
    advance_by = 0;
    return 0;
}

static void test_too_slow(void)
{
    tslock_client *c[N];
    tslock_redlock *rl;
    int i;

    clients(c);
    th_clock_init(&clk);
    for (i = 0; i < N; i++)
        tslock_client_set_clock(c[i], th_clock_fn, &clk);
    rl = redlock(c, "rl:slow");
    /* The last master answers after 9950 ms of a 10000 ms lease. */
    tslock_client_set_step_hook(c[2], advance_hook, NULL);
    advance_by = 9950;
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_EBUSY);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_redlock_errstr(rl), "too slowly"));
    CU_ASSERT_FALSE(tslock_redlock_is_held(rl));
    CU_ASSERT_EQUAL(holders("rl:slow"), 0);
    /* 9850 ms still leaves validity: 10000 - 9850 - drift (102) > 0. */
    advance_by = 9850;
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    CU_ASSERT_TRUE(tslock_redlock_validity_ms(rl) > 0);
    CU_ASSERT_TRUE(tslock_redlock_validity_ms(rl) <= 48);
    /* An extension that takes longer than its own lease: lost. */
    advance_by = 20000;
    CU_ASSERT_EQUAL(tslock_redlock_extend(rl, 20000), TSLOCK_ELOST);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_redlock_errstr(rl), "too slowly"));
    CU_ASSERT_FALSE(tslock_redlock_is_held(rl));
    CU_ASSERT_EQUAL(holders("rl:slow"), 0);
    tslock_redlock_free(rl);
    free_clients(c);
}

/* ---- extend holds only with a majority; unreachable masters */

static void del_on(int i, const char *key)
{
    redisContext *r = th_redis(&srv[i]);

    freeReplyObject(redisCommand(r, "DEL %s", key));
    redisFree(r);
}

static void test_extend_majority(void)
{
    tslock_client *c[N];
    tslock_redlock *rl;

    clients(c);
    rl = redlock(c, "rl:ext");
    /* Our token gone from two masters: the extension cannot hold. */
    CU_ASSERT_EQUAL_FATAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    del_on(0, "rl:ext");
    del_on(1, "rl:ext");
    CU_ASSERT_EQUAL(tslock_redlock_extend(rl, 20000), TSLOCK_ELOST);
    CU_ASSERT_FALSE(tslock_redlock_is_held(rl));
    CU_ASSERT_EQUAL(holders("rl:ext"), 0); /* the third one released */
    /* Gone from one: a majority extended, the hold stands. */
    CU_ASSERT_EQUAL_FATAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    del_on(2, "rl:ext");
    CU_ASSERT_EQUAL(tslock_redlock_extend(rl, 20000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_taken(rl), 2);
    CU_ASSERT_TRUE(server_pttl(0, "rl:ext") > 10000);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_OK);
    CU_ASSERT_EQUAL(holders("rl:ext"), 0);
    /*
     * Two masters down: the extension reaches too few, but the validity
     * the hold had is not over, so it stands; so does a release that
     * cannot reach a majority.  The killed masters come back empty (no
     * persistence): the token is gone there, and the release says so.
     */
    CU_ASSERT_EQUAL_FATAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    th_server_kill(&srv[0]);
    th_server_kill(&srv[2]);
    CU_ASSERT_EQUAL(tslock_redlock_extend(rl, 0), TSLOCK_ENOQUORUM);
    CU_ASSERT_TRUE(tslock_redlock_is_held(rl));
    CU_ASSERT_TRUE(tslock_redlock_validity_ms(rl) > 0);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_ENOQUORUM);
    CU_ASSERT_TRUE(tslock_redlock_is_held(rl));
    CU_ASSERT_FALSE(server_get(1, "rl:ext", NULL, 0));
    CU_ASSERT_FATAL(th_server_restart(&srv[0]) == 0);
    CU_ASSERT_FATAL(th_server_restart(&srv[2]) == 0);
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_ELOST);
    CU_ASSERT_FALSE(tslock_redlock_is_held(rl));
    tslock_redlock_free(rl);
    free_clients(c);
}

/* ---- cancel: the step hook cancels the wait during an attempt */

static tslock_redlock *to_cancel;

static int cancel_hook(tslock_client *c, tslock_step step, const char *key,
                       void *userdata)
{
    (void)c;
    (void)step;
    (void)key;
    (void)userdata;
    tslock_redlock_cancel(to_cancel);
    return 0;
}

static void test_cancel(void)
{
    tslock_client *c[N], *o[N];
    tslock_lock *f0, *f1;

    clients(c);
    clients(o);
    to_cancel = redlock(c, "rl:cancel");
    f0 = foreign_hold(o[0], "rl:cancel");
    f1 = foreign_hold(o[1], "rl:cancel");
    tslock_client_set_step_hook(c[2], cancel_hook, NULL);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(to_cancel, TSLOCK_WAIT_FOREVER),
                    TSLOCK_ECANCELED);
    CU_ASSERT_FALSE(tslock_redlock_is_held(to_cancel));
    CU_ASSERT_FALSE(server_get(2, "rl:cancel", NULL, 0));
    /* The cancel was used up: the next try runs. */
    tslock_client_set_step_hook(c[2], NULL, NULL);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(to_cancel, 0), TSLOCK_EBUSY);
    tslock_release(f0);
    tslock_release(f1);
    tslock_lock_free(f0);
    tslock_lock_free(f1);
    tslock_redlock_free(to_cancel);
    free_clients(o);
    free_clients(c);
}

/* ---- handles */

static void test_handle(void)
{
    tslock_client *c[N], *d[N];
    tslock_redlock *rl, *other;
    char handle[64];

    clients(c);
    clients(d);
    rl = redlock(c, "rl:handle");
    other = redlock(d, "rl:handle");
    CU_ASSERT_EQUAL_FATAL(tslock_redlock_acquire(rl, 0), TSLOCK_OK);
    snprintf(handle, sizeof(handle), "%s", tslock_redlock_handle(rl));
    CU_ASSERT_EQUAL(tslock_redlock_adopt(other, "token:xyz"), TSLOCK_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_redlock_errstr(other), "redlock:<32 hex digits>"));
    CU_ASSERT_EQUAL(tslock_redlock_adopt(other, handle), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_adopt(other, handle), TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_redlock_validity_ms(other), -1);
    CU_ASSERT_STRING_EQUAL(tslock_redlock_handle(other), handle);
    CU_ASSERT_EQUAL(tslock_redlock_extend(other, 30000), TSLOCK_OK);
    CU_ASSERT_TRUE(tslock_redlock_validity_ms(other) > 0);
    CU_ASSERT_EQUAL(tslock_redlock_release(other), TSLOCK_OK);
    CU_ASSERT_EQUAL(holders("rl:handle"), 0);
    /* The first object finds it gone. */
    CU_ASSERT_EQUAL(tslock_redlock_release(rl), TSLOCK_ELOST);
    CU_ASSERT_FALSE(tslock_redlock_is_held(rl));
    tslock_redlock_free(other);
    tslock_redlock_free(rl);
    free_clients(d);
    free_clients(c);
}

/* ---- Redis 2.0 cannot take part */

static void test_redis20_refused(void)
{
    tslock_client *c[N];
    tslock_redlock *rl = NULL;

    c[0] = th_client(&srv[0]);
    c[1] = th_client(&proxy260);
    c[2] = th_client(&proxy20);
    CU_ASSERT_FATAL(tslock_redlock_new(&rl, c, N, "rl:old") == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_redlock_acquire(rl, 1000), TSLOCK_EUNSUPPORTED);
    printf("\n  %s ", tslock_redlock_errstr(rl));
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_redlock_errstr(rl), "2.2 or later"));
    CU_ASSERT_EQUAL(holders("rl:old"), 0);
    tslock_redlock_free(rl);
    free_clients(c);
}

int main(void)
{
    CU_pSuite s;
    int i, rc;

    rounds = th_rounds(100);
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    for (i = 0; i < N; i++)
        if (th_server_start(&srv[i], NULL) != 0)
            return 1;
    if (th_proxy_start(&proxy260, &srv[1], "2.6.0") != 0
        || th_proxy_start(&proxy22, &srv[2], "2.2.15") != 0
        || th_proxy_start(&proxy20, &srv[2], "2.0.5") != 0)
        return 1;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("redlock over modern, 2.6.0 and 2.2.15", NULL, NULL);
    CU_add_test(s, "arguments", test_arguments);
    CU_add_test(s, "acquire, extend, release on every master",
                test_all_masters);
    CU_add_test(s, "another owner on one, then two masters", test_busy);
    CU_add_test(s, "checker catches a lock without a majority",
                test_control_caught);
    CU_add_test(s, "processes contend: no overlaps", test_contention);
    CU_add_test(s, "one master down: still works", test_one_down);
    CU_add_test(s, "two masters down: ENOQUORUM, nothing left", test_two_down);
    CU_add_test(s, "a late answer is released too", test_late_answer);
    CU_add_test(s, "majority taken or extended too slowly", test_too_slow);
    CU_add_test(s, "extend holds only with a majority", test_extend_majority);
    CU_add_test(s, "a waiting acquire is canceled", test_cancel);
    CU_add_test(s, "handle round trip", test_handle);
    CU_add_test(s, "Redis 2.0 refused", test_redis20_refused);
    rc = th_run_all();
    th_proxy_stop(&proxy20);
    th_proxy_stop(&proxy22);
    th_proxy_stop(&proxy260);
    for (i = 0; i < N; i++)
        th_server_stop(&srv[i]);
    munmap(sh, sizeof(*sh));
    return rc;
}
