/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_load.c - many processes contend on one key; a check inside the
 * critical section counts overlaps (two holders at once) and lost
 * updates.  For every configuration the count must be zero: 8 processes
 * on each stamp unit and release form, and 64 waiters in each waiting
 * mode (polling, wake-up, fair) on the modern server and through the
 * proxy playing 2.2.15.  A known-broken lock runs through the same check
 * and must show overlaps, so a zero means something.
 *
 * The check lives in shared memory, not in Redis, so it judges the lock
 * without trusting the server the lock runs on.
 */
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static int rounds, rounds_many;
#define WORKERS 8
#define MANY    64 /* waiters of the waiting-mode runs */

static th_server srv, proxy22;

struct shared {
    atomic_int inside;
    atomic_int overlaps;
    atomic_int acquisitions;
    atomic_int failures;
    atomic_int ready;        /* workers connected, at the start gate */
    atomic_int waiting;      /* workers inside an acquisition now */
    atomic_int most_waiting; /* the most at once */
    int counter; /* updated without atomics: lost updates show overlaps */
};

static struct shared *sh;

static void critical_section(void)
{
    int seen;

    if (atomic_fetch_add(&sh->inside, 1) != 0)
        atomic_fetch_add(&sh->overlaps, 1);
    seen = sh->counter;
    sched_yield(); /* widen the window a second holder would fall into */
    sh->counter = seen + 1;
    atomic_fetch_sub(&sh->inside, 1);
}

/* How a run's workers hold the key. */
enum load_lock {
    LOCK_STAMPS, /* timestamp scheme, one unit and release form */
    LOCK_MODE,   /* the default scheme, polling, wake-up or fair */
    LOCK_BROKEN  /* the known-broken control: look, then take */
};

struct load_job {
    const char *key, *label;
    const th_server *endpoint;
    int workers, rounds;
    enum load_lock kind;
    tslock_unit unit;         /* LOCK_STAMPS */
    tslock_release_form form; /* LOCK_STAMPS */
    int wakeup, fair;         /* LOCK_MODE */
};

/* One worker's hold on the key: a tslock lock, or the control's. */
struct holder {
    const struct load_job *job;
    tslock_client *client;
    tslock_lock *lock;
    redisContext *raw; /* LOCK_BROKEN */
};

static void holder_open(struct holder *h, const struct load_job *job)
{
    memset(h, 0, sizeof(*h));
    h->job = job;
    if (job->kind == LOCK_BROKEN) {
        h->raw = th_redis(job->endpoint);
        return;
    }
    h->client = th_client(job->endpoint);
    if (tslock_lock_new(&h->lock, h->client, job->key) != TSLOCK_OK)
        _exit(3);
    tslock_lock_set_ttl(h->lock, 10000);
    if (job->kind == LOCK_STAMPS) {
        tslock_lock_set_scheme(h->lock, TSLOCK_SCHEME_TIMESTAMP);
        tslock_lock_set_unit(h->lock, job->unit);
        tslock_lock_set_release_form(h->lock, job->form);
        /*
         * Each release wakes every listening waiter at once (stamps have
         * no line), so the waiters race for the key at each handoff; the
         * retry is only the fallback.  Retrying every 1-3 ms as well made
         * the work grow with the time a loaded machine took, not with
         * the acquisitions.
         */
        tslock_lock_set_retry(h->lock, 50, 100);
    } else {
        tslock_lock_set_wakeup(h->lock, job->wakeup);
        tslock_lock_set_fair(h->lock, job->fair);
    }
}

static void holder_close(struct holder *h)
{
    tslock_lock_free(h->lock);
    tslock_client_free(h->client);
    if (h->raw != NULL)
        redisFree(h->raw);
}

/*
 * The control: GET finds the key free, SET takes it a round trip later.
 * Two workers that both look in between hold it at once, the race that
 * SETNX exists to close; the release deletes whatever is there.
 */
static int broken_acquire(struct holder *h)
{
    struct timespec tick = {0, 200000};
    redisReply *r;
    int free_key;

    for (;;) {
        r = redisCommand(h->raw, "GET %s", h->job->key);
        if (r == NULL)
            return -1;
        free_key = r->type == REDIS_REPLY_NIL;
        freeReplyObject(r);
        if (free_key)
            break;
        nanosleep(&tick, NULL);
    }
    sched_yield(); /* as a preempted client would, between look and take */
    r = redisCommand(h->raw, "SET %s %d", h->job->key, (int)getpid());
    freeReplyObject(r);
    return r != NULL ? 0 : -1;
}

static int broken_release(struct holder *h)
{
    redisReply *r = redisCommand(h->raw, "DEL %s", h->job->key);

    freeReplyObject(r);
    return r != NULL ? 0 : -1;
}

/* 0 once held; -1, said on stderr, when the acquisition failed. */
static int holder_acquire(struct holder *h)
{
    int rc;

    if (h->job->kind == LOCK_BROKEN)
        return broken_acquire(h);
    rc = tslock_acquire(h->lock, 60000);
    if (rc != TSLOCK_OK)
        fprintf(stderr, "worker %d: acquire: %s (%s)\n", (int)getpid(),
                tslock_strerror(rc), tslock_client_errstr(h->client));
    return rc == TSLOCK_OK ? 0 : -1;
}

static int holder_release(struct holder *h)
{
    int rc;

    if (h->job->kind == LOCK_BROKEN)
        return broken_release(h);
    rc = tslock_release(h->lock);
    if (rc != TSLOCK_OK)
        fprintf(stderr, "worker %d: release: %s (%s)\n", (int)getpid(),
                tslock_strerror(rc), tslock_client_errstr(h->client));
    return rc == TSLOCK_OK ? 0 : -1;
}

/*
 * Every worker connects, then waits for the others, so that all of them
 * contend from the first round on (64 waiters means 64 at once, not the
 * early ones done before the late ones connect).  They sleep in poll(),
 * where 64 workers polling each millisecond took the CPU from the ones
 * still connecting on a loaded machine.  A worker that died before the
 * gate lets the others through after 120 s (valgrind is slow to start
 * 64), as a failure.
 */
static int gate[2]; /* the start gate: a pipe the last worker fills */

static void start_gate(int workers)
{
    struct pollfd p = {gate[0], POLLIN, 0};
    char one = 'g';
    int i;

    /* Sleep till the last one in writes a byte for each, not polling. */
    if (atomic_fetch_add(&sh->ready, 1) + 1 == workers)
        for (i = 0; i < workers; i++)
            if (write(gate[1], &one, 1) != 1)
                atomic_fetch_add(&sh->failures, 1);
    if (poll(&p, 1, 120000) != 1 || read(gate[0], &one, 1) != 1)
        atomic_fetch_add(&sh->failures, 1);
}

/* Acquire, keeping the most workers seen waiting at once. */
static int counted_acquire(struct holder *h)
{
    int now = atomic_fetch_add(&sh->waiting, 1) + 1;
    int most = atomic_load(&sh->most_waiting);
    int rc;

    while (now > most
           && !atomic_compare_exchange_weak(&sh->most_waiting, &most, now))
        ;
    rc = holder_acquire(h);
    atomic_fetch_sub(&sh->waiting, 1);
    return rc;
}

/* One worker process: the job's rounds, each judged by the check. */
static void run_worker(int index, void *userdata)
{
    const struct load_job *job = userdata;
    struct holder h;
    int i;

    (void)index;
    holder_open(&h, job);
    start_gate(job->workers);
    for (i = 0; i < job->rounds; i++) {
        if (counted_acquire(&h) != 0) {
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        atomic_fetch_add(&sh->acquisitions, 1);
        critical_section();
        if (holder_release(&h) != 0)
            atomic_fetch_add(&sh->failures, 1);
    }
    holder_close(&h);
    _exit(0);
}

/*
 * Run the job and judge it: every acquisition and release succeeds, and
 * there is no overlap and no lost update; for the control, overlaps.
 */
static void run_job(const struct load_job *job)
{
    struct timespec t0, t1;
    int clean, total = job->workers * job->rounds;

    memset(sh, 0, sizeof(*sh));
    CU_ASSERT_FATAL(pipe(gate) == 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clean = th_workers(job->workers, run_worker, (void *)job);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    close(gate[0]);
    close(gate[1]);
    printf("\n  load %-28s %d processes, %d acquisitions, %d overlaps, "
           "%d lost updates, %.1f s, up to %d waiting at once\n",
           job->label, job->workers, atomic_load(&sh->acquisitions),
           atomic_load(&sh->overlaps),
           atomic_load(&sh->acquisitions) - sh->counter,
           (double)(t1.tv_sec - t0.tv_sec)
               + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
           atomic_load(&sh->most_waiting));
    CU_ASSERT_TRUE(clean);
    CU_ASSERT_EQUAL(atomic_load(&sh->failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->acquisitions), total);
    if (job->kind == LOCK_BROKEN) {
        CU_ASSERT_TRUE(atomic_load(&sh->overlaps) > 0);
        return;
    }
    CU_ASSERT_EQUAL(atomic_load(&sh->overlaps), 0);
    CU_ASSERT_EQUAL(sh->counter, total);
}

static void run_load(const char *key, tslock_unit unit,
                     tslock_release_form form, const char *label)
{
    struct load_job job;

    memset(&job, 0, sizeof(job));
    job.key = key;
    job.label = label;
    job.endpoint = &srv;
    job.workers = WORKERS;
    job.rounds = rounds;
    job.kind = LOCK_STAMPS;
    job.unit = unit;
    job.form = form;
    run_job(&job);
}

static void test_ms_lua(void)
{
    run_load("load:ms", TSLOCK_UNIT_MS, TSLOCK_RELEASE_LUA,
             "ms stamps, Lua release");
}

static void test_s_watch(void)
{
    run_load("load:s", TSLOCK_UNIT_S, TSLOCK_RELEASE_WATCH,
             "s stamps, WATCH release");
}

static void test_float_classic(void)
{
    run_load("load:float", TSLOCK_UNIT_FLOAT, TSLOCK_RELEASE_CLASSIC,
             "float stamps, classic release");
}

/* ------------------------------------------- 64 waiters in each mode */

static void run_many(const th_server *endpoint, enum load_lock kind, int wakeup,
                     int fair, const char *label)
{
    struct load_job job;

    memset(&job, 0, sizeof(job));
    job.key = "load:many";
    job.label = label;
    job.endpoint = endpoint;
    job.workers = MANY;
    job.rounds = rounds_many;
    job.kind = kind;
    job.wakeup = wakeup;
    job.fair = fair;
    run_job(&job);
}

static void test_many_polling(void)
{
    run_many(&srv, LOCK_MODE, 0, 0, "polling, modern");
}

static void test_many_wakeup(void)
{
    run_many(&srv, LOCK_MODE, 1, 0, "wake-up, modern");
}

static void test_many_fair(void)
{
    run_many(&srv, LOCK_MODE, 1, 1, "fair, modern");
}

static void test_many_control(void)
{
    run_many(&srv, LOCK_BROKEN, 0, 0, "control GET then SET, modern");
}

static void test_many_polling_22(void)
{
    run_many(&proxy22, LOCK_MODE, 0, 0, "polling, 2.2.15");
}

static void test_many_wakeup_22(void)
{
    run_many(&proxy22, LOCK_MODE, 1, 0, "wake-up, 2.2.15");
}

static void test_many_fair_22(void)
{
    run_many(&proxy22, LOCK_MODE, 1, 1, "fair, 2.2.15");
}

static void test_many_control_22(void)
{
    run_many(&proxy22, LOCK_BROKEN, 0, 0, "control GET then SET, 2.2.15");
}

int main(void)
{
    CU_pSuite s;
    int rc = 1;

    rounds = th_rounds(400);
    rounds_many = th_rounds(5);

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    if (th_server_start(&srv, NULL) != 0)
        return 1;
    if (th_proxy_start(&proxy22, &srv, "2.2.15") != 0)
        goto out;
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    s = CU_add_suite("load", NULL, NULL);
    CU_add_test(s, "8 processes, ms stamps, Lua release", test_ms_lua);
    CU_add_test(s, "8 processes, s stamps, WATCH release", test_s_watch);
    CU_add_test(s, "8 processes, float stamps, classic release",
                test_float_classic);
    s = CU_add_suite("64 waiters, modern", NULL, NULL);
    CU_add_test(s, "polling", test_many_polling);
    CU_add_test(s, "wake-up", test_many_wakeup);
    CU_add_test(s, "fair", test_many_fair);
    CU_add_test(s, "control: GET then SET overlaps", test_many_control);
    s = CU_add_suite("64 waiters, 2.2.15", NULL, NULL);
    CU_add_test(s, "polling", test_many_polling_22);
    CU_add_test(s, "wake-up", test_many_wakeup_22);
    CU_add_test(s, "fair", test_many_fair_22);
    CU_add_test(s, "control: GET then SET overlaps", test_many_control_22);
    rc = th_run_all();
out:
    th_proxy_stop(&proxy22);
    th_server_stop(&srv);
    munmap(sh, sizeof(*sh));
    return rc;
}
