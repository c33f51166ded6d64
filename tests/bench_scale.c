/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_scale.c - the scale table of `make bench`: 8, 64 and 256 waiters
 * on one key in polling, wake-up and fair mode, and redis-py's Lock, on
 * the modern server and through the proxy playing 2.2.15, with the
 * targets for handoff at scale evaluated against the measured rows.
 *
 * Waiters are threads, one tslock client each, in a few processes; all
 * connect and take one warm-up hold before the clock starts, so a row
 * measures handoffs, not connecting.  Environment:
 * TSLOCK_BENCH_SCALE_SECONDS (4 a row), TSLOCK_BENCH_SCALE_PROCS (8).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_contend.h"
#include "bench_util.h"

#define SCALE_MAX_WAITERS 1024
#define SCALE_MAX_PROCS   64
#define SCALE_MAX_SAMPLES 1000000
#define SCALE_MAX_SIZES   16
#define N_GENS            2

/*
 * Shared by the parent and every waiter.  phase moves 0 (setting up) ->
 * 1 (run until end_ms) -> 2 (tear down) under mu, broadcast on cv; the
 * parent reads the server's command count between the phases, so set-up
 * and tear-down are not counted.
 */
struct scale_shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int phase;
    double end_ms;
    atomic_int ready, done, failures, reported;
    atomic_long n_samples;
    atomic_long requests; /* commands the waiters sent, the INCR included */
    long holds[SCALE_MAX_WAITERS]; /* each written by its waiter only */
    float waits_ms[SCALE_MAX_SAMPLES];
};

struct waiter {
    int index;
    enum mode mode;
    tslock_client *client;
    redisContext *raw; /* the INCR of a hold */
    tslock_lock *lock;
    pthread_t thread;
};

static struct scale_shared *ss;
static double scale_seconds = 4;
static int scale_procs = 8;

/* The first failure of a row goes to stderr; the row says the rest. */
static void waiter_failed(const char *what, const char *detail)
{
    atomic_fetch_add(&ss->failures, 1);
    if (atomic_fetch_add(&ss->reported, 1) == 0)
        fprintf(stderr, "scale: %s: %s\n", what, detail);
}

static void wait_phase(int phase)
{
    pthread_mutex_lock(&ss->mu);
    while (ss->phase < phase)
        pthread_cond_wait(&ss->cv, &ss->mu);
    pthread_mutex_unlock(&ss->mu);
}

static void set_phase(int phase)
{
    pthread_mutex_lock(&ss->mu);
    ss->phase = phase;
    pthread_cond_broadcast(&ss->cv);
    pthread_mutex_unlock(&ss->mu);
}

static void record_wait(double ms)
{
    long i = atomic_fetch_add(&ss->n_samples, 1);

    if (i < SCALE_MAX_SAMPLES)
        ss->waits_ms[i] = (float)ms;
}

/* One hold: the INCR, the release, then the pause between holds. */
static void hold_and_release(struct waiter *w)
{
    struct timespec pause = {0, 500000};
    int rc;

    freeReplyObject(redisCommand(w->raw, "INCR bench:counter"));
    atomic_fetch_add(&ss->requests, 1);
    if ((rc = tslock_release(w->lock)) != TSLOCK_OK)
        waiter_failed("release", tslock_strerror(rc));
    nanosleep(&pause, NULL);
}

/*
 * A wait that the end of the run cuts off counts with its length so far,
 * so a waiter that never gets the lock still shows in the percentiles.
 */
static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    double t0, end;
    int rc;

    if (w->lock != NULL) {
        if ((rc = tslock_acquire(w->lock, 60000)) == TSLOCK_OK)
            hold_and_release(w);
        else
            waiter_failed("warm-up acquire", tslock_strerror(rc));
    }
    atomic_fetch_add(&ss->ready, 1);
    wait_phase(1);
    end = ss->end_ms;
    while (w->lock != NULL && (t0 = contend_now_ms()) < end) {
        rc = tslock_acquire(w->lock, (int64_t)(end - t0) + 1);
        record_wait(contend_now_ms() - t0);
        if (rc == TSLOCK_OK) {
            hold_and_release(w);
            ss->holds[w->index]++;
        } else if (rc != TSLOCK_EBUSY) {
            waiter_failed("acquire", tslock_strerror(rc));
            break;
        }
    }
    atomic_fetch_add(&ss->done, 1);
    wait_phase(2);
    return NULL;
}

/*
 * The step hook sees every command a client sends, pipelined or not, a
 * script as one: what the clients ask of the server, where INFO
 * commandstats also counts the commands a script runs inside.
 */
static int count_request(tslock_client *c, tslock_step step, const char *key,
                         void *userdata)
{
    (void)c;
    (void)step;
    (void)key;
    (void)userdata;
    atomic_fetch_add(&ss->requests, 1);
    return 0;
}

static void waiter_open(struct waiter *w, const th_server *endpoint)
{
    int rc = tslock_client_new(&w->client);

    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_unix(w->client, endpoint->socket);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_new(&w->lock, w->client, "bench:scale");
    if (rc != TSLOCK_OK) {
        waiter_failed("connect", w->client != NULL
                                     ? tslock_client_errstr(w->client)
                                     : tslock_strerror(rc));
        w->lock = NULL;
        return;
    }
    tslock_client_set_step_hook(w->client, count_request, NULL);
    tslock_lock_set_ttl(w->lock, 10000);
    tslock_lock_set_wakeup(w->lock, w->mode != MODE_POLL);
    tslock_lock_set_fair(w->lock, w->mode == MODE_FAIR);
    w->raw = redisConnectUnix(endpoint->socket);
    if (w->raw == NULL || w->raw->err) {
        waiter_failed("connect", w->raw != NULL ? w->raw->errstr : "no memory");
        tslock_lock_free(w->lock);
        w->lock = NULL;
    }
}

/*
 * One process of waiters first .. first+count-1: it connects them one
 * after the other (so hundreds of connects do not arrive at once), then
 * runs each in its own thread.
 */
static void waiters_process(const th_server *endpoint, enum mode mode,
                            int first, int count)
{
    struct waiter *w = calloc((size_t)count, sizeof(*w));
    int i;

    if (w == NULL)
        _exit(3);
    for (i = 0; i < count; i++) {
        w[i].index = first + i;
        w[i].mode = mode;
        waiter_open(&w[i], endpoint);
    }
    for (i = 0; i < count; i++)
        if (pthread_create(&w[i].thread, NULL, waiter_main, &w[i]) != 0) {
            waiter_failed("thread", strerror(errno));
            w[i].thread = 0;
            atomic_fetch_add(&ss->ready, 1);
            atomic_fetch_add(&ss->done, 1);
        }
    for (i = 0; i < count; i++) {
        if (w[i].thread != 0)
            pthread_join(w[i].thread, NULL);
        tslock_lock_free(w[i].lock);
        tslock_client_free(w[i].client);
        if (w[i].raw != NULL)
            redisFree(w[i].raw);
    }
    free(w);
    _exit(0);
}

/*
 * Wait until counter reaches n: 0, or -1 when a process of waiters ended
 * before its time or limit_ms passed.
 */
static int wait_count(atomic_int *counter, int n, const pid_t *pids, int procs,
                      double limit_ms)
{
    struct timespec tick = {0, 2000000};
    double give_up = contend_now_ms() + limit_ms;
    int i, status;

    while (atomic_load(counter) < n) {
        for (i = 0; i < procs; i++)
            if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                fprintf(stderr, "scale: a waiter process ended early\n");
                return -1;
            }
        if (contend_now_ms() > give_up) {
            fprintf(stderr, "scale: waiters not %s in time\n",
                    counter == &ss->ready ? "ready" : "done");
            return -1;
        }
        nanosleep(&tick, NULL);
    }
    return 0;
}

static void run_tslock_row(const th_server *endpoint, const th_server *upstream,
                           enum mode mode, int waiters, struct result *r)
{
    pid_t pids[SCALE_MAX_PROCS];
    int procs = waiters < scale_procs ? waiters : scale_procs;
    int i, status, clean = 1;
    long long before = 0, after = 0, requests = 0;

    ss->phase = 0;
    ss->end_ms = 0;
    atomic_store(&ss->ready, 0);
    atomic_store(&ss->done, 0);
    atomic_store(&ss->failures, 0);
    atomic_store(&ss->reported, 0);
    atomic_store(&ss->n_samples, 0);
    memset(ss->holds, 0, sizeof(ss->holds));
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < procs; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            fprintf(stderr, "scale: fork: %s\n", strerror(errno));
            procs = i;
            clean = 0;
            break;
        }
        if (pids[i] == 0)
            waiters_process(endpoint, mode, i * waiters / procs,
                            (i + 1) * waiters / procs - i * waiters / procs);
    }
    if (!clean || wait_count(&ss->ready, waiters, pids, procs, 120000) != 0)
        clean = 0;
    before = contend_commands_run(upstream);
    requests = atomic_load(&ss->requests);
    pthread_mutex_lock(&ss->mu);
    ss->end_ms = contend_now_ms() + scale_seconds * 1000;
    ss->phase = 1;
    pthread_cond_broadcast(&ss->cv);
    pthread_mutex_unlock(&ss->mu);
    if (clean
        && wait_count(&ss->done, waiters, pids, procs,
                      scale_seconds * 1000 + 60000)
               != 0)
        clean = 0;
    after = contend_commands_run(upstream);
    requests = atomic_load(&ss->requests) - requests;
    set_phase(2);
    for (i = 0; i < procs; i++)
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status)
            || WEXITSTATUS(status) != 0)
            clean = 0;
    {
        long n = atomic_load(&ss->n_samples);
        contend_summarize(r, ss->waits_ms,
                          n > SCALE_MAX_SAMPLES ? SCALE_MAX_SAMPLES : n,
                          ss->holds, waiters, scale_seconds);
    }
    r->ok = clean && atomic_load(&ss->failures) == 0;
    r->cmds = r->holds > 0 ? (double)(after - before - 1) / r->holds : 0;
    r->reqs = r->holds > 0 ? (double)requests / r->holds : 0;
}

/*
 * redis-py's Lock in the same shape (bench_pylock.py --scale): threads in
 * the same number of processes, one redis.Redis each, counting the
 * server's commands between its own start and end.
 */
static void run_py_row(const th_server *endpoint, int waiters,
                       const char *top_srcdir, struct result *r)
{
    const char *python = contend_find_python();
    int procs = waiters < scale_procs ? waiters : scale_procs;
    char cmd[1024], line[512];
    long long cmds, reqs;
    FILE *p;

    memset(r, 0, sizeof(*r));
    if (python == NULL)
        return;
    snprintf(cmd, sizeof(cmd),
             "%s %s/tests/bench_pylock.py --scale %s %d %d %g", python,
             top_srcdir, endpoint->socket, waiters, procs, scale_seconds);
    fflush(stdout);
    p = popen(cmd, "r");
    if (p == NULL)
        return;
    if (fgets(line, sizeof(line), p) != NULL
        && sscanf(line, "%ld %lf %lf %lf %lf %lld %lld", &r->holds, &r->p50,
                  &r->p99, &r->max, &r->jain, &cmds, &reqs)
               == 7) {
        r->ok = 1;
        r->per_s = r->holds / scale_seconds;
        r->cmds = r->holds > 0 ? (double)cmds / r->holds : 0;
        r->reqs = r->holds > 0 ? (double)reqs / r->holds : 0;
    }
    if (pclose(p) != 0)
        r->ok = 0;
}

/*
 * Whether the descriptor limit (which the server and the proxy inherit)
 * holds a row: three connections a waiter, two descriptors each in the
 * proxy; if not, the row says so instead of failing half-way.
 */
static int fits_fd_limit(const char *server, int waiters, enum mode mode,
                         int proxied)
{
    long need = (proxied ? 6L : 3L) * waiters + 64;
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || (rlim_t)need <= rl.rlim_cur)
        return 1;
    printf("%-7s %7d %-9s   (skipped: needs about %ld descriptors, "
           "ulimit -n is %ld)\n",
           server, waiters, contend_mode_names[mode], need, (long)rl.rlim_cur);
    return 0;
}

static void print_row(const char *server, int waiters, enum mode mode,
                      const struct result *r)
{
    if (!r->ok) {
        printf("%-7s %7d %-9s   (did not run cleanly)\n", server, waiters,
               contend_mode_names[mode]);
        return;
    }
    printf("%-7s %7d %-9s %9.0f %7.2f %8.2f %8.1f %6.3f %8.1f %8.1f\n", server,
           waiters, contend_mode_names[mode], r->per_s, r->p50, r->p99, r->max,
           r->jain, r->reqs, r->cmds);
    fflush(stdout);
}

/* ------------------------------------------------------------ targets */

struct table {
    const int *sizes;
    int n_sizes;
    int ran[N_GENS];
    const th_server *endpoints[N_GENS];
    struct result res[N_GENS][SCALE_MAX_SIZES][N_MODES];
};

static const char *const gen_names[N_GENS] = {"modern", "2.2.15"};

/* The row of waiters in mode, or NULL when the table has none. */
static const struct result *row(const struct table *t, int gen, int waiters,
                                enum mode mode)
{
    int i;

    for (i = 0; i < t->n_sizes; i++)
        if (t->sizes[i] == waiters)
            return t->res[gen][i][mode].ok ? &t->res[gen][i][mode] : NULL;
    return NULL;
}

/* One line: what, the value, the target and whether it is met. */
static void verdict(int gen, const char *what, int have, double value,
                    const char *unit, double goal, int at_least)
{
    char measured[32];

    if (have)
        snprintf(measured, sizeof(measured), "%.2f%s", value, unit);
    printf("%-7s %-36s %10s  (target %s %g%s)  %s\n", gen_names[gen], what,
           have ? measured : "n/a", at_least ? ">=" : "<=", goal, unit,
           !have                                        ? "no row"
           : (at_least ? value >= goal : value <= goal) ? "met"
                                                        : "MISSED");
}

static void ratio_target(int gen, const char *what, const struct result *a,
                         const struct result *b, double goal)
{
    int have = a != NULL && b != NULL && b->per_s > 0;

    verdict(gen, what, have, have ? a->per_s / b->per_s : 0, "x", goal, 1);
}

/*
 * The uncontended cycle, acquire + release of a free key, as a multiple
 * of one PING sampled alternately with it: with wait_ms 0 (one try) and
 * with a wait that listens (the default), which may set up more before
 * its first try.  0, or -1 when a cycle failed.
 */
static int uncontended_cycle(const th_server *endpoint, int wait_ms,
                             double *pings_per_cycle, double *cycle_us)
{
    enum { N = 1000 };
    static int64_t pings[N], cycles[N];
    tslock_client *c = th_client(endpoint);
    redisContext *raw = th_redis(endpoint);
    tslock_lock *l = NULL;
    int i, failed = tslock_lock_new(&l, c, "bench:uncontended") != TSLOCK_OK;
    int64_t t0;

    /* The first cycle opens what later ones reuse (scripts, subscriber). */
    failed = failed || tslock_acquire(l, wait_ms) != TSLOCK_OK
             || tslock_release(l) != TSLOCK_OK;
    for (i = 0; i < N && !failed; i++) {
        failed = bench_ping(raw, &pings[i]) != 0;
        t0 = bench_now_ns();
        failed = failed || tslock_acquire(l, wait_ms) != TSLOCK_OK
                 || tslock_release(l) != TSLOCK_OK;
        cycles[i] = bench_now_ns() - t0;
    }
    if (!failed) {
        *cycle_us = bench_median(cycles, N) / 1000;
        *pings_per_cycle = *cycle_us * 1000 / bench_median(pings, N);
    }
    tslock_lock_free(l);
    tslock_client_free(c);
    redisFree(raw);
    return failed ? -1 : 0;
}

static void print_uncontended(int gen, const th_server *endpoint)
{
    static const int waits[] = {0, 1000};
    double ratio = 0, us = 0;
    int i;

    for (i = 0; i < 2; i++)
        if (uncontended_cycle(endpoint, waits[i], &ratio, &us) == 0)
            printf("%-7s uncontended cycle, wait %4d ms %10.2f PINGs  "
                   "(target: unchanged, about 2 on modern)  %.0f us\n",
                   gen_names[gen], waits[i], ratio, us);
        else
            printf("%-7s uncontended cycle, wait %4d ms  failed\n",
                   gen_names[gen], waits[i]);
}

static void print_targets(const struct table *t)
{
    static const enum mode queued[] = {MODE_WAKE, MODE_FAIR};
    const struct result *w8, *w64, *w256, *f8, *f64, *f256, *py64, *r;
    char what[64];
    int g, i, m;

    printf("targets for handoff at scale, against the rows above "
           "(commands per handoff: req/hand, what the clients send, the "
           "INCR included; cmd/hand beside it):\n");
    for (g = 0; g < N_GENS; g++) {
        if (!t->ran[g])
            continue;
        w8 = row(t, g, 8, MODE_WAKE);
        w64 = row(t, g, 64, MODE_WAKE);
        w256 = row(t, g, 256, MODE_WAKE);
        f8 = row(t, g, 8, MODE_FAIR);
        f64 = row(t, g, 64, MODE_FAIR);
        f256 = row(t, g, 256, MODE_FAIR);
        py64 = row(t, g, 64, MODE_PY);
        ratio_target(g, "wake-up 64/8 handoffs/s", w64, w8, 0.8);
        verdict(g, "wake-up 64 Jain", w64 != NULL, w64 ? w64->jain : 0, "",
                0.95, 1);
        verdict(g, "wake-up 64 p99 wait", w64 != NULL, w64 ? w64->p99 : 0,
                " ms", 40, 0);
        if (g == 0)
            ratio_target(g, "wake-up 64 / redis-py 64 handoffs/s", w64, py64,
                         2);
        for (m = 0; m < 2; m++)
            for (i = 0; i < t->n_sizes; i++) {
                if (t->sizes[i] != 8 && t->sizes[i] != 64 && t->sizes[i] != 256)
                    continue;
                r = row(t, g, t->sizes[i], queued[m]);
                snprintf(what, sizeof(what), "%s %d req/hand",
                         contend_mode_names[queued[m]], t->sizes[i]);
                verdict(g, what, r != NULL, r ? r->reqs : 0, "", 6, 0);
                if (r != NULL)
                    printf("%-7s %-34s %10.2f  (all the server ran, "
                           "scripts' commands included)\n",
                           gen_names[g], "  cmd/hand", r->cmds);
            }
        verdict(g, "fair 64 Jain", f64 != NULL, f64 ? f64->jain : 0, "", 0.99,
                1);
        ratio_target(g, "fair 64 / wake-up 64 handoffs/s", f64, w64, 0.8);
        ratio_target(g, "wake-up 256/8 handoffs/s", w256, w8, 0.6);
        ratio_target(g, "fair 256/8 handoffs/s", f256, f8, 0.6);
        print_uncontended(g, t->endpoints[g]);
    }
}

/* ------------------------------------------------------------ the table */

static void print_header(const struct table *t)
{
    int i;

    printf("\nscale: waiters on one key, %g s a row after one warm-up hold "
           "each; a hold is one INCR, 0.5 ms between holds\n",
           scale_seconds);
    printf("how: each waiter is a thread with its own tslock client (its "
           "connection, the subscriber connection the library opens to "
           "wait, and one hiredis connection for the INCR), in at most %d "
           "processes:",
           scale_procs);
    for (i = 0; i < t->n_sizes; i++) {
        int procs = t->sizes[i] < scale_procs ? t->sizes[i] : scale_procs;
        printf("%s %d = %d x %s%d", i ? ";" : "", t->sizes[i], procs,
               t->sizes[i] % procs ? "~" : "", t->sizes[i] / procs);
    }
    printf(" (processes x threads)\n");
    printf("redis-py: its Lock at its defaults (0.1 s sleep between tries), "
           "the same threads and processes, one redis.Redis each; on the "
           "modern server only (it needs SET NX PX and Lua, 2.6.12 and "
           "later)\n");
    printf("server  waiters mode      handoff/s  p50 ms   p99 ms   max ms   "
           "Jain req/hand cmd/hand\n");
}

void contend_scale_table(th_server *srv, const int *waiters, int n_waiters,
                         const char *top_srcdir)
{
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    th_server proxy;
    struct table *t = calloc(1, sizeof(*t));
    const char *env;
    int g, i, m;

    if ((env = getenv("TSLOCK_BENCH_SCALE_SECONDS")) != NULL && atof(env) > 0)
        scale_seconds = atof(env);
    if ((env = getenv("TSLOCK_BENCH_SCALE_PROCS")) != NULL && atoi(env) > 0)
        scale_procs = atoi(env) > SCALE_MAX_PROCS ? SCALE_MAX_PROCS : atoi(env);
    ss = mmap(NULL, sizeof(*ss), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (t == NULL || ss == MAP_FAILED) {
        fprintf(stderr, "scale: no memory\n");
        free(t);
        return;
    }
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&ss->mu, &ma);
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_cond_init(&ss->cv, &ca);
    t->sizes = waiters;
    t->n_sizes = n_waiters > SCALE_MAX_SIZES ? SCALE_MAX_SIZES : n_waiters;
    print_header(t);
    for (g = 0; g < N_GENS; g++) {
        const th_server *endpoint = srv;
        if (g == 1) {
            if (th_proxy_start(&proxy, srv, "2.2.15") != 0)
                break;
            endpoint = &proxy;
        }
        t->ran[g] = 1;
        t->endpoints[g] = endpoint;
        for (i = 0; i < t->n_sizes; i++)
            for (m = 0; m < N_MODES; m++) {
                struct result *r = &t->res[g][i][m];
                memset(r, 0, sizeof(*r));
                if (m == MODE_PY && g != 0)
                    continue;
                if (!fits_fd_limit(gen_names[g], t->sizes[i], (enum mode)m,
                                   g == 1))
                    continue;
                if (t->sizes[i] > SCALE_MAX_WAITERS) {
                    printf("%-7s %7d   (skipped: at most %d waiters)\n",
                           gen_names[g], t->sizes[i], SCALE_MAX_WAITERS);
                    continue;
                }
                if (m == MODE_PY && contend_find_python() == NULL) {
                    printf("%-7s %7d %-9s   (skipped: no python3 with the "
                           "redis package)\n",
                           gen_names[g], t->sizes[i], contend_mode_names[m]);
                    continue;
                }
                if (m == MODE_PY)
                    run_py_row(endpoint, t->sizes[i], top_srcdir, r);
                else
                    run_tslock_row(endpoint, srv, (enum mode)m, t->sizes[i], r);
                print_row(gen_names[g], t->sizes[i], (enum mode)m, r);
            }
    }
    printf("waits from asking to holding, a wait the run's end cut off "
           "with its length so far; Jain over the waiters' holds; "
           "req/hand = commands the clients sent per handoff (a script is "
           "one; the INCR included); cmd/hand = every command the server "
           "ran (INFO commandstats on the upstream server, which counts "
           "the commands inside scripts and, through the proxy, its own "
           "translation) per handoff\n");
    print_targets(t);
    if (t->ran[1])
        th_proxy_stop(&proxy);
    pthread_cond_destroy(&ss->cv);
    pthread_mutex_destroy(&ss->mu);
    munmap(ss, sizeof(*ss));
    free(t);
}
