/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_contend.c - the contended benchmark of `make bench`: P processes
 * take one key in turn for a few seconds, each hold one INCR, with a
 * short pause between holds.  Polling, wake-up and fair mode (and
 * redis-py's own Lock as the peer to beat) run in the same run on the
 * same server, and are printed as ratios to polling, since these
 * machines are shared.  The scale table (bench_scale.c) follows.
 *
 * Environment: TSLOCK_BENCH_PROCS (8), TSLOCK_BENCH_SECONDS (3);
 * TSLOCK_BENCH_WAITERS ("8 64 256"; empty: no scale table) and those
 * bench_scale.c reads; TSLOCK_BENCH_ACCOUNT ("8 64"; empty: no account
 * table) and those bench_account.c reads.
 */
#include <inttypes.h>
#include <math.h>
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

#define MAX_PROCS   32
#define MAX_SAMPLES 400000
#define MAX_SIZES   16

const char *const contend_mode_names[N_MODES] = {"polling", "wake-up", "fair",
                                                 "redis-py"};

struct shared {
    atomic_long n_samples;
    long holds[MAX_PROCS];
    int failures;
    float waits_ms[MAX_SAMPLES];
};

static struct shared *sh;
static int procs = 8;
static double seconds = 3;
static const char *top_srcdir = ".";

double contend_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

long long contend_commands_run(const th_server *upstream)
{
    redisContext *c = th_redis(upstream);
    redisReply *r = redisCommand(c, "INFO commandstats");
    long long total = 0;
    const char *p;

    for (p = r != NULL ? r->str : ""; (p = strstr(p, "calls=")) != NULL;)
        total += strtoll(p += 6, NULL, 10);
    freeReplyObject(r);
    redisFree(c);
    return total - 1; /* this INFO */
}

/* One worker: hold, INCR, release, pause 0.5 ms, until the end. */
static void worker(int index, const th_server *endpoint, enum mode mode,
                   double end)
{
    tslock_client *c = th_client(endpoint);
    redisContext *raw = th_redis(endpoint);
    struct timespec pause = {0, 500000};
    tslock_lock *l = NULL;

    if (tslock_lock_new(&l, c, "bench:contend") != TSLOCK_OK)
        _exit(3);
    tslock_lock_set_ttl(l, 10000);
    tslock_lock_set_wakeup(l, mode != MODE_POLL);
    tslock_lock_set_fair(l, mode == MODE_FAIR);
    while (contend_now_ms() < end) {
        double t0 = contend_now_ms();
        long i;
        if (tslock_acquire(l, 2000) != TSLOCK_OK)
            continue;
        i = atomic_fetch_add(&sh->n_samples, 1);
        if (i < MAX_SAMPLES)
            sh->waits_ms[i] = (float)(contend_now_ms() - t0);
        freeReplyObject(redisCommand(raw, "INCR bench:counter"));
        if (tslock_release(l) != TSLOCK_OK)
            sh->failures++;
        sh->holds[index]++;
        nanosleep(&pause, NULL);
    }
    tslock_lock_free(l);
    tslock_client_free(c);
    redisFree(raw);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;

    return (x > y) - (x < y);
}

void contend_summarize(struct result *r, float *waits_ms, long n,
                       const long *holds, int k, double span_s)
{
    double sum = 0, sq = 0;
    int i;

    qsort(waits_ms, (size_t)n, sizeof(float), cmp_float);
    r->p50 = n ? waits_ms[n / 2] : 0;
    r->p99 = n ? waits_ms[(long)(n * 0.99)] : 0;
    r->max = n ? waits_ms[n - 1] : 0;
    r->holds = 0;
    for (i = 0; i < k; i++) {
        r->holds += holds[i];
        sum += (double)holds[i];
        sq += (double)holds[i] * (double)holds[i];
    }
    r->jain = sq > 0 ? sum * sum / (k * sq) : 0;
    r->per_s = r->holds / span_s;
}

/* Percentiles, Jain's fairness index and the rate from the samples. */
static void summarize(struct result *r)
{
    long n = atomic_load(&sh->n_samples);

    contend_summarize(r, sh->waits_ms, n > MAX_SAMPLES ? MAX_SAMPLES : n,
                      sh->holds, procs, seconds);
    r->ok = sh->failures == 0;
}

static void run_tslock(const th_server *endpoint, enum mode mode,
                       struct result *r)
{
    pid_t pids[MAX_PROCS];
    double end;
    int i, status;

    memset(sh, 0, sizeof(*sh));
    end = contend_now_ms() + seconds * 1000;
    fflush(stdout);
    for (i = 0; i < procs; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            worker(i, endpoint, mode, end);
            _exit(0);
        }
    }
    for (i = 0; i < procs; i++)
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status)
            || WEXITSTATUS(status) != 0)
            sh->failures++;
    summarize(r);
}

/*
 * Debian's /usr/bin/python3 is where python3-redis installs (a pyenv or
 * virtualenv python3 earlier on PATH does not see it).
 */
const char *contend_find_python(void)
{
    const char *candidates[] = {getenv("PYTHON"), "python3",
                                "/usr/bin/python3"};
    char cmd[512];
    size_t i;

    for (i = 0; i < 3; i++) {
        if (candidates[i] == NULL || candidates[i][0] == '\0')
            continue;
        snprintf(cmd, sizeof(cmd), "%s -c 'import redis.lock' >/dev/null 2>&1",
                 candidates[i]);
        if (system(cmd) == 0)
            return candidates[i];
    }
    return NULL;
}

/* redis-py's Lock, default settings, the same workload (bench_pylock.py). */
static void run_redis_py(const th_server *endpoint, struct result *r)
{
    const char *python = contend_find_python();
    char cmd[1024], line[512];
    FILE *p;

    memset(r, 0, sizeof(*r));
    if (python == NULL)
        return;
    snprintf(cmd, sizeof(cmd), "%s %s/tests/bench_pylock.py %s %d %g", python,
             top_srcdir, endpoint->socket, procs, seconds);
    p = popen(cmd, "r");
    if (p == NULL)
        return;
    if (fgets(line, sizeof(line), p) != NULL
        && sscanf(line, "%ld %lf %lf %lf %lf", &r->holds, &r->p50, &r->p99,
                  &r->max, &r->jain)
               == 5) {
        r->ok = 1;
        r->per_s = r->holds / seconds;
    }
    pclose(p);
}

static void run(const th_server *endpoint, const th_server *upstream,
                enum mode mode, struct result *r)
{
    long long before = contend_commands_run(upstream);

    if (mode == MODE_PY)
        run_redis_py(endpoint, r);
    else
        run_tslock(endpoint, mode, r);
    r->cmds =
        r->holds > 0
            ? (double)(contend_commands_run(upstream) - before - 1) / r->holds
            : 0;
}

static void print_row(const char *server, enum mode mode,
                      const struct result *r, const struct result *poll)
{
    if (!r->ok) {
        printf("%-8s %-9s   (did not run cleanly)\n", server,
               contend_mode_names[mode]);
        return;
    }
    printf("%-8s %-9s %8.0f %6.2fx %7.2f %7.2f %7.1f %6.3f %8.1f\n", server,
           contend_mode_names[mode], r->per_s,
           poll->per_s > 0 ? r->per_s / poll->per_s : 0, r->p50, r->p99, r->max,
           r->jain, r->cmds);
}

static void bench_generation(const char *name, const th_server *endpoint,
                             const th_server *upstream, int with_py,
                             int with_fair)
{
    struct result res[N_MODES];
    int m;

    for (m = 0; m < N_MODES; m++) {
        if ((m == MODE_PY && !with_py) || (m == MODE_FAIR && !with_fair)) {
            if (m == MODE_FAIR)
                printf("%-8s %-9s   (needs Lua or WATCH)\n", name,
                       contend_mode_names[m]);
            continue;
        }
        run(endpoint, upstream, (enum mode)m, &res[m]);
        print_row(name, (enum mode)m, &res[m], &res[MODE_POLL]);
        fflush(stdout);
    }
    if (with_py && res[MODE_PY].ok && res[MODE_PY].per_s > 0)
        printf("%-8s wake-up / redis-py: %.2fx handoffs/s; p99 %.2f ms vs "
               "%.2f ms\n",
               name, res[MODE_WAKE].per_s / res[MODE_PY].per_s,
               res[MODE_WAKE].p99, res[MODE_PY].p99);
}

/*
 * The scale table runs hundreds of clients, three connections each,
 * through a proxy that holds two descriptors per connection: lift the
 * descriptor limit before the server and the proxies start, so that they
 * inherit it; to 65536 where we may raise the hard limit too (root),
 * else to the hard limit.
 */
static void raise_fd_limit(void)
{
    struct rlimit rl, want;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    want.rlim_cur = want.rlim_max = 65536;
    if (rl.rlim_max < want.rlim_max && setrlimit(RLIMIT_NOFILE, &want) == 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* TSLOCK_BENCH_WAITERS: counts separated by spaces or commas. */
static int parse_sizes(const char *text, int *sizes)
{
    int n = 0;
    char *end;
    long v;

    while (n < MAX_SIZES && *text != '\0') {
        v = strtol(text, &end, 10);
        if (end == text) {
            text++;
            continue;
        }
        if (v > 0)
            sizes[n++] = (int)v;
        text = end;
    }
    return n;
}

int main(void)
{
    static const char *const old[] = {"2.2.15", "2.0.5"};
    th_server srv, proxy;
    const char *env;
    int sizes[MAX_SIZES], n_sizes;
    size_t i;

    if ((env = getenv("TSLOCK_BENCH_PROCS")) != NULL && atoi(env) > 0)
        procs = atoi(env) > MAX_PROCS ? MAX_PROCS : atoi(env);
    else if (env != NULL && strcmp(env, "0") == 0)
        procs = 0; /* the scale table only */
    if ((env = getenv("TSLOCK_BENCH_SECONDS")) != NULL && atof(env) > 0)
        seconds = atof(env);
    if ((env = getenv("top_srcdir")) != NULL)
        top_srcdir = env;
    env = getenv("TSLOCK_BENCH_WAITERS");
    n_sizes = parse_sizes(env != NULL ? env : "8 64 256", sizes);
    raise_fd_limit();
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || th_server_start(&srv, NULL) != 0)
        return 1;
    if (procs > 0) {
        printf("\ncontended: %d processes x %g s on one key; a hold is one "
               "INCR, 0.5 ms between holds\n",
               procs, seconds);
        printf("server   mode      handoff/s  ratio  p50 ms  p99 ms  max ms   "
               "Jain  cmd/hand\n");
        bench_generation("modern", &srv, &srv, 1, 1);
        for (i = 0; i < 2; i++) {
            if (th_proxy_start(&proxy, &srv, old[i]) != 0)
                break;
            bench_generation(old[i], &proxy, &srv, 0, i == 0);
            th_proxy_stop(&proxy);
        }
        printf("ratio = handoffs/s over polling's; waits from asking to "
               "holding; cmd/hand = server commands (INFO commandstats, the "
               "INCR included) per handoff\n");
    }
    contend_account_table(&srv);
    if (n_sizes > 0)
        contend_scale_table(&srv, sizes, n_sizes, top_srcdir);
    th_server_stop(&srv);
    return 0;
}
