/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_chaos.c - a chaos soak: worker processes contend for one key while
 * a supervisor SIGKILLs one of them every 150 ms and forks a replacement.
 * A checker in shared memory, which trusts neither Redis nor the library,
 * counts overlaps of live holders for every scheme on every server
 * generation, and for a broken control scheme that must show them.
 * make check runs it short; make soak runs it long and prints a table.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "naive.h"

#define MAX_WORKERS   16
#define KILL_EVERY_MS 150
/*
 * A uniform choice rarely finds the holder, which is inside for about a
 * millisecond at a time, so one kill in this many goes to a worker inside
 * its section when there is one: those kills leave a lease behind for
 * the others to take over, the path the schemes differ on.
 */
#define TARGET_HOLDER_ONE_IN 4
/*
 * tslock's lease and critical section.  The section is 1/500 of the
 * lease, so only a pause of half a second lets a live holder's lease run
 * out inside it.
 */
#define LEASE_MS   500
#define SECTION_US 1000
/* The control holds across its lease, so its lease runs out every time. */
#define CONTROL_LEASE_MS   10
#define CONTROL_SECTION_US 15000
#define N_CODES            32 /* slots for -TSLOCK_E* codes */
#define N_STEPS            32 /* slots for tslock_step values */

/* ------------------------------------------------------ shared state */

/*
 * One record per worker slot.  The supervisor marks a record doomed
 * before it sends SIGKILL and clears it after waitpid() has reaped the
 * worker, so a dead holder is never taken for a live one.
 */
struct holder_rec {
    atomic_int inside;      /* 1 while the slot's worker is in its section */
    atomic_int doomed;      /* the supervisor is killing this worker */
    atomic_llong lease_end; /* last wall ms of the current hold's lease */
};

struct chaos_shared {
    struct holder_rec rec[MAX_WORKERS];
    atomic_int counter; /* read, yield, write: lost updates show overlaps */
    atomic_llong acquisitions, overlaps, stale_overlaps, lost_updates;
    atomic_llong expiries, early_losses, late_releases, recoveries;
    atomic_int orphans; /* holders killed inside, whose lease nobody took */
    atomic_llong first_overlap_ms; /* monotonic ms, 0 when none yet */
    atomic_llong errors[N_CODES];  /* by -code; other kinds below */
    atomic_llong wrong_scheme, unexpected_exits;
    atomic_llong steps[N_STEPS]; /* commands sent, by tslock_step */
    atomic_int detail_taken;
    char detail[256]; /* the first error, for the log */
};

static struct chaos_shared *sh;

/* ---------------------------------------------------- configurations */

struct target {
    const char *name;
    const char *emulate; /* proxy version, or NULL for the real server */
    th_server proxy;
};

static th_server srv;
static struct target targets[] = {
    {"modern", NULL, {0}},     {"2.6.11", "2.6.11", {0}},
    {"2.6.0", "2.6.0", {0}},   {"2.4.18", "2.4.18", {0}},
    {"2.2.15", "2.2.15", {0}}, {"2.0.5", "2.0.5", {0}},
};
#define N_TARGETS (sizeof(targets) / sizeof(targets[0]))
#define T_REDIS20 (N_TARGETS - 1)

struct chaos_config {
    char name[40];
    const th_server *endpoint;
    int control;             /* the naive scheme instead of tslock */
    tslock_scheme scheme;    /* what the lock is set to */
    tslock_scheme want_used; /* what tslock_lock_scheme_used() must say */
    int strict_loss;         /* no TSLOCK_ELOST before our lease ends */
    int64_t lease_ms;
    int section_us;
    char key[48];
};

struct chaos_result {
    char name[40];
    double secs;
    long long acquisitions, kills, kills_inside, overlaps, stale_overlaps;
    long long lost_updates, errors, expiries, early_losses, late_releases;
    long long recoveries;
    long long steps[N_STEPS];
    long long first_overlap_ms; /* after the start; -1 when none */
};

static int n_workers;
static int64_t lease_ms = LEASE_MS;
static double seconds;
static int soak;
static struct chaos_result results[N_TARGETS * 4 + 1];
static int n_results;
static uint64_t rng_state;
static int64_t started_ms; /* monotonic */

/* xorshift64*: the supervisor's victim choice, not a security matter. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static int64_t wall_ms(void)
{
    return th_wall_us() / 1000;
}

static int64_t mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---------------------------------------------------------- checker */

/* Keep the first error's detail; later ones are only counted. */
static void note_error(const char *what, const char *name, const char *detail)
{
    if (atomic_exchange(&sh->detail_taken, 1) == 0)
        snprintf(sh->detail, sizeof(sh->detail), "%s: %s (%s)", what, name,
                 detail);
}

static void count_code(int rc, const char *op, const tslock_client *c)
{
    int i = -rc;

    atomic_fetch_add(&sh->errors[i > 0 && i < N_CODES ? i : 0], 1);
    note_error(op, tslock_errname(rc), tslock_client_errstr(c));
}

/*
 * Every other record that is inside, and not being killed, is a second
 * holder.  Two holders break mutual exclusion if both their leases still
 * run when one sees the other (the last millisecond of each is given up
 * to the clocks' truncation to whole ms).  If either lease has run out,
 * a live holder paused past its lease, which the lease model allows:
 * the other may have taken the lock over, or this one may have entered
 * its section only after its own lease ended.  Both records are set
 * before they are read (sequentially consistent atomics), so of two
 * holders inside at once at least one sees the other.
 */
static void scan_for_overlap(int slot, int64_t lease_end)
{
    int64_t now = wall_ms();
    int j;

    for (j = 0; j < n_workers; j++) {
        const struct holder_rec *r = &sh->rec[j];
        if (j == slot || !atomic_load(&r->inside) || atomic_load(&r->doomed))
            continue;
        if (now < lease_end && now < atomic_load(&r->lease_end)) {
            long long zero = 0;
            atomic_fetch_add(&sh->overlaps, 1);
            atomic_compare_exchange_strong(&sh->first_overlap_ms, &zero,
                                           th_mono_ms());
        } else {
            atomic_fetch_add(&sh->stale_overlaps, 1);
        }
    }
}

/*
 * The critical section: announce the hold, look for another, then a
 * read-yield-write of the counter that a second holder would disturb.
 */
static void critical_section(int slot, int64_t lease_end, int section_us)
{
    struct holder_rec *me = &sh->rec[slot];
    int64_t t0 = mono_us(), left;
    int seen;

    atomic_store(&me->lease_end, lease_end);
    atomic_store(&me->inside, 1);
    scan_for_overlap(slot, lease_end);
    seen = atomic_load_explicit(&sh->counter, memory_order_relaxed);
    sched_yield(); /* widen the window a second holder would fall into */
    left = section_us - (mono_us() - t0);
    th_sleep_us(left);
    if (atomic_load_explicit(&sh->counter, memory_order_relaxed) != seen)
        atomic_fetch_add(&sh->lost_updates, 1);
    atomic_store_explicit(&sh->counter, seen + 1, memory_order_relaxed);
    atomic_store(&me->inside, 0);
}

/* --------------------------------------------------------- workers */

/*
 * A release that finds the lock lost: after our lease ended it is the
 * lease model at work (a pause past the lease); before, someone wrote
 * over a lease that still ran.
 */
static void count_loss(int64_t lease_end)
{
    if (wall_ms() > lease_end)
        atomic_fetch_add(&sh->expiries, 1);
    else
        atomic_fetch_add(&sh->early_losses, 1);
}

/*
 * A holder killed inside its section leaves its key held until its lease
 * runs out; the next acquisition, whoever makes it, takes that lease over.
 */
static void count_recovery(void)
{
    int orphans = atomic_load(&sh->orphans);

    while (
        orphans > 0
        && !atomic_compare_exchange_weak(&sh->orphans, &orphans, orphans - 1))
        ;
    if (orphans > 0)
        atomic_fetch_add(&sh->recoveries, 1);
}

/* The step hook: which commands the workers' lock operations sent. */
static int count_step(tslock_client *c, tslock_step step, const char *key,
                      void *userdata)
{
    (void)c;
    (void)key;
    (void)userdata;
    if ((int)step >= 0 && (int)step < N_STEPS)
        atomic_fetch_add(&sh->steps[step], 1);
    return 0;
}

static tslock_lock *worker_lock(const struct chaos_config *cfg,
                                tslock_client **out)
{
    tslock_client *c = NULL;
    tslock_lock *l = NULL;
    int rc = tslock_client_new(&c);

    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_unix(c, cfg->endpoint->socket);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_new(&l, c, cfg->key);
    if (rc != TSLOCK_OK) {
        count_code(rc, "connect", c);
        _exit(3);
    }
    tslock_lock_set_scheme(l, cfg->scheme);
    tslock_lock_set_ttl(l, cfg->lease_ms);
    tslock_lock_set_unit(l, TSLOCK_UNIT_MS);
    tslock_lock_set_retry(l, 2, 10);
    tslock_client_set_step_hook(c, count_step, NULL);
    *out = c;
    return l;
}

static void tslock_worker(int slot, const struct chaos_config *cfg)
{
    tslock_client *c;
    tslock_lock *l = worker_lock(cfg, &c);
    int64_t lease_end;
    int rc;

    for (;;) {
        rc = tslock_acquire(l, 4 * cfg->lease_ms);
        if (rc == TSLOCK_EBUSY)
            continue; /* the wait ran out: wait again */
        if (rc != TSLOCK_OK) {
            count_code(rc, "acquire", c);
            _exit(4);
        }
        atomic_fetch_add(&sh->acquisitions, 1);
        count_recovery();
        if (tslock_lock_scheme_used(l) != cfg->want_used) {
            atomic_fetch_add(&sh->wrong_scheme, 1);
            note_error("acquire", "unexpected scheme", cfg->name);
        }
        lease_end = tslock_lock_expires_ms(l);
        critical_section(slot, lease_end, cfg->section_us);
        rc = tslock_release(l);
        if (rc == TSLOCK_ELOST) {
            count_loss(lease_end);
        } else if (rc == TSLOCK_OK && wall_ms() > lease_end) {
            /* Its DEL may have come after the lease: a pause. */
            atomic_fetch_add(&sh->late_releases, 1);
        } else if (rc != TSLOCK_OK) {
            count_code(rc, "release", c);
            _exit(5);
        }
    }
}

/*
 * The control: the articles' SETNX of an expiry stamp, DEL of an expired
 * stamp and SETNX again, and the plain DEL release.  It holds across its
 * short lease, so every hold is found expired by the waiters, whose DEL
 * races delete each other's fresh locks, and whose holder's DEL deletes
 * its successor's: overlaps with leases that still run, every cycle.
 */
static void control_worker(int slot, const struct chaos_config *cfg)
{
    th_clock clk;
    naive_client n;
    uint64_t rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull | 1;

    memset(&n, 0, sizeof(n));
    th_clock_init(&clk);
    n.wall_ms = &clk.wall_ms;
    n.redis = redisConnectUnix(cfg->endpoint->socket);
    if (n.redis == NULL || n.redis->err) {
        note_error("control", "cannot connect", cfg->endpoint->socket);
        atomic_fetch_add(&sh->errors[-TSLOCK_EIO], 1);
        _exit(3);
    }
    for (;;) {
        clk.wall_ms = wall_ms();
        if (naive_del_recovery_acquire(&n, cfg->key, cfg->lease_ms)
            != NAIVE_HELD) {
            th_sleep_us(1000 + (int64_t)(rng_next(&rng) % 2000));
            continue;
        }
        atomic_fetch_add(&sh->acquisitions, 1);
        critical_section(slot, strtoll(n.value, NULL, 10), cfg->section_us);
        naive_unconditional_release(&n, cfg->key);
    }
}

/* ------------------------------------------------------ supervisor */

static pid_t pids[MAX_WORKERS];
static pid_t supervisor_pid;
static pid_t guard_pid;   /* see "guard" below */
static int guard_fd = -1; /* its pipe; workers close it */

/* However the test ends, no worker outlives it. */
static void kill_workers_at_exit(void)
{
    int i;

    if (getpid() != supervisor_pid)
        return;
    for (i = 0; i < MAX_WORKERS; i++)
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            pids[i] = 0;
        }
}

static void spawn(int slot, const struct chaos_config *cfg)
{
    struct holder_rec *r = &sh->rec[slot];
    pid_t pid;

    atomic_store(&r->inside, 0);
    atomic_store(&r->lease_end, 0);
    atomic_store(&r->doomed, 0);
    pid = fork();
    if (pid == 0) {
        /* Die with the test process, even if it is SIGKILLed itself. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != supervisor_pid)
            _exit(1);
        if (guard_fd >= 0)
            close(guard_fd); /* the guard waits for the test alone */
        if (cfg->control)
            control_worker(slot, cfg);
        else
            tslock_worker(slot, cfg);
        _exit(0);
    }
    pids[slot] = pid;
    if (pid < 0)
        atomic_fetch_add(&sh->unexpected_exits, 1);
}

/* Kill a worker, reap it, and only then clear its record. */
static int kill_and_reap(int slot)
{
    int inside;

    if (pids[slot] <= 0)
        return 0;
    atomic_store(&sh->rec[slot].doomed, 1);
    kill(pids[slot], SIGKILL);
    while (waitpid(pids[slot], NULL, 0) < 0 && errno == EINTR)
        ;
    pids[slot] = 0;
    /* The worker is dead: its flag is final and says where it died. */
    inside = atomic_load(&sh->rec[slot].inside);
    atomic_store(&sh->rec[slot].inside, 0);
    return inside;
}

/* Workers that ended on their own (an error) are counted and replaced. */
static void reap_unexpected(const struct chaos_config *cfg)
{
    int i, status;

    for (i = 0; i < n_workers; i++)
        if (pids[i] <= 0 || waitpid(pids[i], &status, WNOHANG) == pids[i]) {
            atomic_fetch_add(&sh->unexpected_exits, 1);
            pids[i] = 0;
            atomic_store(&sh->rec[i].inside, 0);
            spawn(i, cfg);
        }
}

/* Uniform, except that one kill in TARGET_HOLDER_ONE_IN goes to a holder. */
static int pick_victim(void)
{
    int i, start = (int)(rng_next(&rng_state) % (uint64_t)n_workers);

    if (rng_next(&rng_state) % TARGET_HOLDER_ONE_IN == 0)
        for (i = 0; i < n_workers; i++) {
            int j = (start + i) % n_workers;
            if (atomic_load(&sh->rec[j].inside))
                return j;
        }
    return start;
}

static void sleep_until_mono_ms(int64_t when)
{
    struct timespec ts = {.tv_sec = when / 1000,
                          .tv_nsec = (long)(when % 1000) * 1000000};

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* The workload: a kill every KILL_EVERY_MS until `until` (monotonic). */
static void supervise(const struct chaos_config *cfg, int64_t until,
                      struct chaos_result *res)
{
    int64_t next = th_mono_ms() + KILL_EVERY_MS;
    int victim;

    for (; next < until; next += KILL_EVERY_MS) {
        sleep_until_mono_ms(next);
        reap_unexpected(cfg);
        victim = pick_victim();
        res->kills++;
        if (kill_and_reap(victim)) {
            res->kills_inside++;
            atomic_fetch_add(&sh->orphans, 1);
        }
        spawn(victim, cfg);
    }
    sleep_until_mono_ms(until);
}

/* ---------------------------------------------------------- one run */

static long long error_total(void)
{
    long long n =
        atomic_load(&sh->wrong_scheme) + atomic_load(&sh->unexpected_exits);
    int i;

    for (i = 0; i < N_CODES; i++)
        n += atomic_load(&sh->errors[i]);
    return n;
}

static void print_errors(void)
{
    int i;

    for (i = 0; i < N_CODES; i++)
        if (atomic_load(&sh->errors[i]) > 0)
            printf("      %s: %lld\n", tslock_errname(-i),
                   (long long)atomic_load(&sh->errors[i]));
    if (atomic_load(&sh->wrong_scheme) > 0)
        printf("      unexpected scheme: %lld\n",
               (long long)atomic_load(&sh->wrong_scheme));
    if (atomic_load(&sh->unexpected_exits) > 0)
        printf("      workers that ended on their own: %lld\n",
               (long long)atomic_load(&sh->unexpected_exits));
    if (sh->detail[0] != '\0')
        printf("      first: %s\n", sh->detail);
}

static void collect(struct chaos_result *res, int64_t t0)
{
    long long first = atomic_load(&sh->first_overlap_ms);
    int i;

    res->acquisitions = atomic_load(&sh->acquisitions);
    res->overlaps = atomic_load(&sh->overlaps);
    res->stale_overlaps = atomic_load(&sh->stale_overlaps);
    res->lost_updates = atomic_load(&sh->lost_updates);
    res->expiries = atomic_load(&sh->expiries);
    res->early_losses = atomic_load(&sh->early_losses);
    res->late_releases = atomic_load(&sh->late_releases);
    res->recoveries = atomic_load(&sh->recoveries);
    for (i = 0; i < N_STEPS; i++)
        res->steps[i] = atomic_load(&sh->steps[i]);
    res->errors = error_total();
    res->first_overlap_ms = first > 0 ? first - t0 : -1;
    res->secs = (double)(th_mono_ms() - t0) / 1000.0;
}

static void print_row(const struct chaos_result *r)
{
    printf("  %-18s %5.1f %8lld %7.1f %5lld %6lld %5lld %8lld %6lld %8lld "
           "%5lld %5lld %5lld %5lld\n",
           r->name, r->secs, r->acquisitions,
           r->secs > 0 ? (double)r->acquisitions / r->secs : 0.0, r->kills,
           r->kills_inside, r->recoveries, r->overlaps, r->errors, r->expiries,
           r->early_losses, r->late_releases, r->stale_overlaps,
           r->lost_updates);
}

static void print_header(void)
{
    printf("  %-18s %5s %8s %7s %5s %6s %5s %8s %6s %8s %5s %5s %5s %5s\n",
           "configuration", "secs", "acquired", "acq/s", "kills", "inside",
           "recov", "overlaps", "errors", "expiries", "early", "late", "stale",
           "lost");
}

/*
 * Run one configuration: n_workers workers, a kill every KILL_EVERY_MS
 * for `seconds`, then every worker killed and reaped.
 */
static struct chaos_result *run_chaos(const struct chaos_config *cfg)
{
    struct chaos_result *res = &results[n_results++];
    int64_t t0;
    int i;

    memset(sh, 0, sizeof(*sh));
    memset(res, 0, sizeof(*res));
    snprintf(res->name, sizeof(res->name), "%s", cfg->name);
    fflush(stdout); /* no buffered output copied into the workers */
    fflush(stderr);
    t0 = th_mono_ms();
    for (i = 0; i < n_workers; i++)
        spawn(i, cfg);
    supervise(cfg, t0 + (int64_t)(seconds * 1000), res);
    for (i = 0; i < n_workers; i++)
        kill_and_reap(i);
    collect(res, t0);
    printf("\n");
    print_header();
    print_row(res);
    if (res->errors > 0)
        print_errors();
    return res;
}

/* ------------------------------------------------------------- tests */

static struct target *cur;
static int next_target;

/* $TSLOCK_CHAOS_ONLY: run only "control" or the targets it names. */
static int wanted(const char *name)
{
    const char *only = getenv("TSLOCK_CHAOS_ONLY");

    return only == NULL || only[0] == '\0' || strstr(name, only) != NULL;
}

/* Suites run in the order added: the next wanted target. */
static int target_init(void)
{
    while (!wanted(targets[next_target].name))
        next_target++;
    cur = &targets[next_target++];
    return 0;
}

static const th_server *endpoint(const struct target *t)
{
    return t->emulate != NULL ? &t->proxy : &srv;
}

/* A pause past the lease, which the lease model allows, left evidence. */
static long long pause_evidence(const struct chaos_result *r)
{
    return r->expiries + r->late_releases + r->stale_overlaps;
}

/*
 * On Redis 2.0 the release is GET, compare, DEL (doc/compat.md), with no
 * WATCH and no script, and no TTL is ever set on the key, since the next
 * SETNX would delete the key with it: none of these commands may appear.
 */
static void check_redis20_commands(const struct chaos_result *r)
{
    static const tslock_step never[] = {
        TSLOCK_STEP_WATCH, TSLOCK_STEP_UNWATCH, TSLOCK_STEP_MULTI,
        TSLOCK_STEP_EXEC,  TSLOCK_STEP_EVALSHA, TSLOCK_STEP_EVAL,
        TSLOCK_STEP_SET,   TSLOCK_STEP_EXPIRE,  TSLOCK_STEP_PEXPIRE,
        TSLOCK_STEP_SETEX};
    size_t i;

    printf("    SETNX %lld, GET %lld, GETSET %lld, DEL %lld",
           r->steps[TSLOCK_STEP_SETNX], r->steps[TSLOCK_STEP_GET],
           r->steps[TSLOCK_STEP_GETSET], r->steps[TSLOCK_STEP_DEL]);
    for (i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
        if (r->steps[never[i]] != 0)
            printf(", %s %lld", tslock_step_name(never[i]), r->steps[never[i]]);
        CU_ASSERT_EQUAL(r->steps[never[i]], 0);
    }
    printf(" ");
    CU_ASSERT_TRUE(r->steps[TSLOCK_STEP_DEL] > 0);
}

/*
 * What tslock promises under the kills.  Everywhere: no error, no lost
 * update unless a live holder overstayed its lease, and no overlap.  On
 * Redis 2.0 (doc/compat.md, doc/races.md b and d) the release is GET,
 * compare, DEL, whose gap opens only when the holder pauses past its
 * lease between the two, and a GETSET loser's stamp stays: there an
 * overlap is excused only by such a pause, seen by the workers.  A token
 * lease, and a bridge lease with its ownership proof (2.2 and later),
 * is never lost before it ends; a timestamp lease can be, to a GETSET
 * loser (tslock(7), "THE GETSET LOSER").
 */
static void check_tslock(const struct chaos_config *cfg,
                         const struct chaos_result *r, int redis20)
{
    CU_ASSERT_TRUE(r->acquisitions > 0);
    CU_ASSERT_EQUAL(r->errors, 0);
    if (redis20)
        check_redis20_commands(r);
    if (redis20 && r->overlaps > 0)
        printf("    overlaps on 2.0 with a pause past the lease: %lld\n",
               pause_evidence(r));
    if (!redis20 || pause_evidence(r) == 0)
        CU_ASSERT_EQUAL(r->overlaps, 0);
    if (r->stale_overlaps == 0)
        CU_ASSERT_EQUAL(r->lost_updates, 0);
    if (cfg->strict_loss)
        CU_ASSERT_EQUAL(r->early_losses, 0);
}

static void run_scheme(tslock_scheme scheme, const char *scheme_name)
{
    struct chaos_config cfg;
    int redis20 = cur == &targets[T_REDIS20];

    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.name, sizeof(cfg.name), "%s %s", cur->name, scheme_name);
    snprintf(cfg.key, sizeof(cfg.key), "chaos:%s:%s", cur->name, scheme_name);
    cfg.endpoint = endpoint(cur);
    cfg.scheme = scheme;
    cfg.want_used = scheme != TSLOCK_SCHEME_AUTO ? scheme
                    : redis20                    ? TSLOCK_SCHEME_TIMESTAMP
                                                 : TSLOCK_SCHEME_TOKEN;
    cfg.strict_loss = !redis20 && cfg.want_used != TSLOCK_SCHEME_TIMESTAMP;
    cfg.lease_ms = lease_ms;
    cfg.section_us = SECTION_US;
    check_tslock(&cfg, run_chaos(&cfg), redis20);
}

/* Redis 2.0 has no atomic token lock; tslock refuses to build one. */
static void test_token(void)
{
    tslock_client *c;
    tslock_lock *l = NULL;

    if (cur != &targets[T_REDIS20]) {
        run_scheme(TSLOCK_SCHEME_TOKEN, "token");
        return;
    }
    c = th_client(endpoint(cur));
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "chaos:2.0.5:token") == TSLOCK_OK);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EUNSUPPORTED);
    printf("\n    2.0.5 token: TSLOCK_EUNSUPPORTED, as doc/compat.md says ");
    tslock_lock_free(l);
    tslock_client_free(c);
}

static void test_timestamp(void)
{
    run_scheme(TSLOCK_SCHEME_TIMESTAMP, "timestamp");
}

static void test_bridge(void)
{
    run_scheme(TSLOCK_SCHEME_BRIDGE, "bridge");
}

static void test_auto(void)
{
    run_scheme(TSLOCK_SCHEME_AUTO, "auto");
}

/* The checker is not blind: the broken scheme must show overlaps. */
static void test_control(void)
{
    struct chaos_config cfg;
    struct chaos_result *r;

    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.name, sizeof(cfg.name), "control naive-del");
    snprintf(cfg.key, sizeof(cfg.key), "chaos:control");
    cfg.endpoint = &srv;
    cfg.control = 1;
    cfg.lease_ms = CONTROL_LEASE_MS;
    cfg.section_us = CONTROL_SECTION_US;
    r = run_chaos(&cfg);
    printf("    first overlap after %lld ms ", r->first_overlap_ms);
    CU_ASSERT_TRUE(r->acquisitions > 0);
    CU_ASSERT_TRUE(r->overlaps > 0);
}

/* ------------------------------------------------------------ guard */

/*
 * The harness stops the server at exit and on the usual signals, and the
 * proxies and workers die with the test (PR_SET_PDEATHSIG), but a test
 * killed outright leaves the server running and the proxies' dirs
 * behind.  A guard process waits on a pipe only the test holds; when it
 * closes without the byte that says the test stopped everything itself,
 * the guard stops the server and the proxies by pid and removes their
 * dirs.
 */
static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Whether pid's command line still names `mark` (pids are reused). */
static int still_names(pid_t pid, const char *mark)
{
    char path[64], cmd[1024];
    FILE *f;
    size_t n, i;

    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    n = fread(cmd, 1, sizeof(cmd) - 1, f);
    fclose(f);
    for (i = 0; i < n; i++)
        if (cmd[i] == '\0')
            cmd[i] = ' ';
    cmd[n] = '\0';
    return strstr(cmd, mark) != NULL;
}

/* SIGTERM through a pidfd, so the signal reaches that process only. */
static void guard_stop(const th_server *s, const char *mark)
{
    int fd = s->pid > 0 ? (int)syscall(SYS_pidfd_open, s->pid, 0) : -1;
    struct pollfd p;

    if (fd >= 0 && still_names(s->pid, mark)) {
        syscall(SYS_pidfd_send_signal, fd, SIGTERM, NULL, 0);
        p.fd = fd;
        p.events = POLLIN; /* readable once the process has exited */
        if (poll(&p, 1, 5000) == 0)
            syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
    }
    if (fd >= 0)
        close(fd);
    if (s->dir[0] != '\0')
        nftw(s->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void guard_run(int fd)
{
    char port[16], done = 0;
    size_t t;

    while (read(fd, &done, 1) < 0 && errno == EINTR)
        ;
    if (done == 'd')
        _exit(0);
    snprintf(port, sizeof(port), ":%d", srv.port);
    for (t = 0; t < N_TARGETS; t++)
        if (targets[t].emulate != NULL)
            guard_stop(&targets[t].proxy, targets[t].proxy.socket);
    guard_stop(&srv, port);
    _exit(0);
}

static void guard_start(void)
{
    int fds[2];

    if (pipe(fds) != 0)
        return;
    fflush(stdout);
    fflush(stderr);
    guard_pid = fork();
    if (guard_pid == 0) {
        close(fds[1]);
        guard_run(fds[0]);
    }
    close(fds[0]);
    guard_fd = fds[1];
}

/* Everything was stopped in order: the guard may go. */
static void guard_release(void)
{
    if (guard_fd >= 0) {
        (void)!write(guard_fd, "d", 1);
        close(guard_fd);
        guard_fd = -1;
    }
    if (guard_pid > 0)
        waitpid(guard_pid, NULL, 0);
    guard_pid = 0;
}

/* ------------------------------------------------------------- main */

static void print_table(void)
{
    int i;

    printf("\nchaos %s: %d workers, %.1f s per configuration, a SIGKILL every "
           "%d ms, lease %d ms, section %d us\n",
           soak ? "soak" : "short run (make soak runs the long one)", n_workers,
           seconds, KILL_EVERY_MS, (int)lease_ms, SECTION_US);
    print_header();
    for (i = 0; i < n_results; i++)
        print_row(&results[i]);
    printf(
        "  inside: kills inside the section; recov: their leases taken over\n"
        "  overlaps: two live holders inside at once, both leases running\n"
        "  errors: codes but OK, EBUSY, ELOST; wrong scheme; workers that "
        "died of them\n"
        "  expiries: live holders' ELOST after their lease ended; early: "
        "ELOST before\n"
        "  late: release OK after the lease ended; stale: two live holders "
        "inside at\n"
        "  once, one past its lease; lost: lost updates of the counter\n"
        "  control: lease %d ms, section %d us; total %.1f s\n",
        CONTROL_LEASE_MS, CONTROL_SECTION_US,
        (double)(th_mono_ms() - started_ms) / 1000.0);
}

/* A positive integer from the environment, or dflt. */
static int env_int(const char *name, int dflt, int max)
{
    const char *env = getenv(name);
    int n = env != NULL ? atoi(env) : 0;

    return n > 0 && n <= max ? n : dflt;
}

/*
 * make check runs the short version, make soak sets TSLOCK_SOAK_SECONDS.
 * TSLOCK_CHAOS_WORKERS and TSLOCK_CHAOS_LEASE_MS are for exploring.
 */
static void configure(void)
{
    const char *env = getenv("TSLOCK_SOAK_SECONDS");
    const char *seed = getenv("TSLOCK_CHAOS_SEED");

    soak = env != NULL && env[0] != '\0';
    seconds = soak ? atof(env) : 1.2;
    if (seconds <= 0)
        seconds = 10;
    n_workers =
        env_int("TSLOCK_CHAOS_WORKERS", soak ? MAX_WORKERS : 8, MAX_WORKERS);
    lease_ms = env_int("TSLOCK_CHAOS_LEASE_MS", LEASE_MS, 600000);
    rng_state = seed != NULL ? strtoull(seed, NULL, 0)
                             : (uint64_t)th_wall_us() ^ (uint64_t)getpid();
    rng_state |= 1;
    printf("chaos: %d workers, %.1f s per configuration, seed %" PRIu64 "%s\n",
           n_workers, seconds, rng_state,
           soak ? "" : " (short run; make soak: 16 workers, 10 s)");
}

/*
 * The kills must have reached holders inside their sections, and their
 * leases must have been taken over, or the runs showed nothing about
 * recovery.  Counted over every tslock configuration, so only when they
 * all run.
 */
static void test_coverage(void)
{
    long long inside = 0, recovered = 0;
    int i;

    for (i = 0; i < n_results; i++)
        if (strncmp(results[i].name, "control", 7) != 0) {
            inside += results[i].kills_inside;
            recovered += results[i].recoveries;
        }
    printf("\n    %lld kills inside the section, %lld leases taken over ",
           inside, recovered);
    CU_ASSERT_TRUE(inside > 0);
    CU_ASSERT_TRUE(recovered > 0);
}

static void add_suites(void)
{
    static char names[N_TARGETS][32];
    size_t t;

    if (wanted("control"))
        CU_add_test(CU_add_suite("control", NULL, NULL),
                    "naive DEL recovery: overlaps found", test_control);
    for (t = 0; t < N_TARGETS; t++) {
        CU_pSuite s;
        if (!wanted(targets[t].name))
            continue;
        snprintf(names[t], sizeof(names[t]), "%s", targets[t].name);
        s = CU_add_suite(names[t], target_init, NULL);
        CU_add_test(s, "token under kills", test_token);
        CU_add_test(s, "timestamp (ms) under kills", test_timestamp);
        CU_add_test(s, "bridge under kills", test_bridge);
        CU_add_test(s, "auto under kills", test_auto);
    }
    if (getenv("TSLOCK_CHAOS_ONLY") == NULL)
        CU_add_test(CU_add_suite("coverage", NULL, NULL),
                    "kills reached holders; their leases were taken over",
                    test_coverage);
}

int main(void)
{
    size_t t;
    int rc = 1;

    started_ms = th_mono_ms();
    configure();
    supervisor_pid = getpid();
    atexit(kill_workers_at_exit);
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || th_server_start(&srv, NULL) != 0)
        return 1;
    for (t = 0; t < N_TARGETS; t++)
        if (targets[t].emulate != NULL
            && th_proxy_start(&targets[t].proxy, &srv, targets[t].emulate) != 0)
            goto out;
    guard_start();
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    add_suites();
    rc = th_run_all();
    print_table();
out:
    kill_workers_at_exit();
    for (t = 0; t < N_TARGETS; t++)
        th_proxy_stop(&targets[t].proxy);
    th_server_stop(&srv);
    guard_release();
    munmap(sh, sizeof(*sh));
    return rc;
}
