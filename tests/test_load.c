/*
 * test_load.c - many processes contend on one key; a check inside the
 * critical section counts overlaps (two holders at once) and lost
 * updates.  For every configuration the count must be zero.
 *
 * The check lives in shared memory, not in Redis, so it judges the lock
 * without trusting the server the lock runs on.
 */
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

static int rounds;
#define WORKERS 8

static th_server srv;

struct shared {
    atomic_int inside;
    atomic_int overlaps;
    atomic_int acquisitions;
    atomic_int failures;
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

/* One worker process: rounds acquisitions; exits with _exit(). */
static void worker(const char *key, tslock_unit unit, tslock_release_form form)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;
    int i, rc;

    if (tslock_lock_new(&l, c, key) != TSLOCK_OK)
        _exit(3);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_TIMESTAMP);
    tslock_lock_set_ttl(l, 10000);
    tslock_lock_set_unit(l, unit);
    tslock_lock_set_release_form(l, form);
    tslock_lock_set_retry(l, 1, 3);
    for (i = 0; i < rounds; i++) {
        rc = tslock_acquire(l, 60000);
        if (rc != TSLOCK_OK) {
            fprintf(stderr, "worker %d: acquire: %s (%s)\n", (int)getpid(),
                    tslock_strerror(rc), tslock_client_errstr(c));
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        atomic_fetch_add(&sh->acquisitions, 1);
        critical_section();
        rc = tslock_release(l);
        if (rc != TSLOCK_OK) {
            fprintf(stderr, "worker %d: release: %s (%s)\n", (int)getpid(),
                    tslock_strerror(rc), tslock_client_errstr(c));
            atomic_fetch_add(&sh->failures, 1);
        }
    }
    tslock_lock_free(l);
    tslock_client_free(c);
    _exit(0);
}

struct load_job {
    const char *key;
    tslock_unit unit;
    tslock_release_form form;
};

static void run_worker(int index, void *userdata)
{
    const struct load_job *job = userdata;

    (void)index;
    worker(job->key, job->unit, job->form);
}

static void run_load(const char *key, tslock_unit unit,
                     tslock_release_form form, const char *label)
{
    struct load_job job;
    struct timespec t0, t1;
    int clean;

    memset(sh, 0, sizeof(*sh));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    job.key = key;
    job.unit = unit;
    job.form = form;
    clean = th_workers(WORKERS, run_worker, &job);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("\n  load %-28s %d processes, %d acquisitions, %d overlaps, "
           "%d lost updates, %.1f s\n",
           label, WORKERS, atomic_load(&sh->acquisitions),
           atomic_load(&sh->overlaps),
           atomic_load(&sh->acquisitions) - sh->counter,
           (double)(t1.tv_sec - t0.tv_sec)
               + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    CU_ASSERT_TRUE(clean);
    CU_ASSERT_EQUAL(atomic_load(&sh->failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->acquisitions), WORKERS * rounds);
    CU_ASSERT_EQUAL(atomic_load(&sh->overlaps), 0);
    CU_ASSERT_EQUAL(sh->counter, WORKERS * rounds);
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

int main(void)
{
    CU_pSuite s;
    int rc;

    rounds = th_rounds(1000);

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    if (th_server_start(&srv, NULL) != 0)
        return 1;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("load", NULL, NULL);
    CU_add_test(s, "8 processes, ms stamps, Lua release", test_ms_lua);
    CU_add_test(s, "8 processes, s stamps, WATCH release", test_s_watch);
    CU_add_test(s, "8 processes, float stamps, classic release",
                test_float_classic);
    rc = th_run_all();
    th_server_stop(&srv);
    munmap(sh, sizeof(*sh));
    return rc;
}
