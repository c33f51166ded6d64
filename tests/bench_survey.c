/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_survey.c - the survey benchmark of `make bench` and `make
 * bench-cluster`: loads keys of mixed dialects and non-locks into a
 * private server, then times `tslock survey --json` against `redis-cli
 * --scan` on the same server in the same run, with the survey's peak
 * memory, at each size of TSLOCK_BENCH_SURVEY_KEYS ("200000"; "10000
 * 100000 1000000" in bench-cluster), and with TSLOCK_BENCH_SURVEY_CLUSTER=3
 * again on a 3-master cluster.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness_cluster.h"

#define LOAD_BATCH 5000

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The write of key i: one of seven kinds, as legacy clients write them. */
static void append_key(redisContext *c, long i, int64_t now_ms)
{
    switch (i % 7) {
    case 0:
        redisAppendCommand(c, "SETNX k:%ld %" PRId64, i, now_ms + 600000);
        break;
    case 1:
        redisAppendCommand(c, "SETNX k:%ld %" PRId64, i, now_ms / 1000 + 600);
        break;
    case 2:
        redisAppendCommand(c, "SETNX k:%ld %" PRId64 ".5", i,
                           now_ms / 1000 + 600);
        break;
    case 3:
        redisAppendCommand(c, "SET k:%ld %032lx NX PX 600000", i, i);
        break;
    case 4: /* a bridge hold: a stamp and its owner key */
        redisAppendCommand(c, "SET {k:%ld}:owner %032lx", i, i);
        redisAppendCommand(c, "SETNX k:%ld %" PRId64, i, now_ms + 600000);
        break;
    case 5:
        redisAppendCommand(c, "HSET k:%ld f v", i);
        break;
    default:
        redisAppendCommand(c, "SET k:%ld not-a-lock", i);
    }
}

/*
 * Keys from .. n-1 into c, pipelined LOAD_BATCH at a time.  On a cluster
 * (cl != NULL) each write goes to the master of its key's slot, so each
 * key is written alone to its node, the bridge's two keys too (they
 * share the key's slot by its hash tag).
 */
static int load(redisContext *c, long from, long n)
{
    int64_t now_ms = th_wall_us() / 1000;
    long i, j, replies;
    void *r;

    for (i = from; i < n; i += LOAD_BATCH) {
        replies = 0;
        for (j = i; j < n && j < i + LOAD_BATCH; j++) {
            append_key(c, j, now_ms);
            replies += j % 7 == 4 ? 2 : 1;
        }
        while (replies-- > 0) {
            if (redisGetReply(c, &r) != REDIS_OK)
                return -1;
            freeReplyObject(r);
        }
    }
    return 0;
}

/* CRC16 (XMODEM) of Redis Cluster, for the slot of a key without a tag. */
static unsigned crc16(const char *buf, size_t len)
{
    unsigned crc = 0;
    size_t i;
    int b;

    for (i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)buf[i] << 8;
        for (b = 0; b < 8; b++)
            crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
        crc &= 0xffff;
    }
    return crc;
}

/*
 * The same keys on a cluster: key i (and its owner key, tagged "{k:i}")
 * hashes as "k:i", so each goes over the connection of its slot's master.
 */
static int load_cluster(th_cluster *cl, const int *slot_node, long from, long n)
{
    int64_t now_ms = th_wall_us() / 1000;
    redisContext *c[TH_CLUSTER_MAX];
    long pending[TH_CLUSTER_MAX], i;
    char key[32];
    int k, rc = 0;
    void *r;

    for (k = 0; k < cl->n; k++) {
        c[k] = th_redis(&cl->node[k]);
        pending[k] = 0;
    }
    for (i = from; i < n && rc == 0; i++) {
        int len = snprintf(key, sizeof(key), "k:%ld", i);
        k = slot_node[crc16(key, (size_t)len) & 16383];
        append_key(c[k], i, now_ms);
        pending[k] += i % 7 == 4 ? 2 : 1;
        if (pending[k] < LOAD_BATCH && i + 1 < n)
            continue;
        for (k = 0; k < cl->n; k++)
            for (; pending[k] > 0 && rc == 0; pending[k]--) {
                rc = redisGetReply(c[k], &r) == REDIS_OK ? 0 : -1;
                freeReplyObject(r);
            }
    }
    for (k = 0; k < cl->n; k++)
        redisFree(c[k]);
    return rc;
}

/* Which node serves each slot, by CLUSTER SLOTS of node 0. */
static int map_slots(th_cluster *cl, int *slot_node)
{
    redisContext *c = th_redis(&cl->node[0]);
    redisReply *r = redisCommand(c, "CLUSTER SLOTS");
    size_t i;
    int s, k, mapped = 0;

    for (i = 0; r != NULL && r->type == REDIS_REPLY_ARRAY && i < r->elements;
         i++) {
        redisReply *e = r->element[i];
        for (k = 0; k < cl->n; k++)
            if (e->element[2]->element[1]->integer == cl->node[k].port)
                break;
        for (s = (int)e->element[0]->integer;
             k < cl->n && s <= (int)e->element[1]->integer; s++, mapped++)
            slot_node[s] = k;
    }
    freeReplyObject(r);
    redisFree(c);
    return mapped == 16384 ? 0 : -1;
}

/*
 * Run argv with stdout to /dev/null: its time in seconds and its peak
 * resident set in KiB (wait4's ru_maxrss, the process's own); < 0 on
 * failure.
 */
static double run_measured(char *const argv[], long *maxrss_kb)
{
    double t0 = now_s();
    struct rusage ru;
    int status = 0;
    pid_t pid = fork();

    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status)
        || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_survey: failed: %s\n", argv[0]);
        return -1;
    }
    *maxrss_kb = ru.ru_maxrss;
    return now_s() - t0;
}

/* The best time of runs runs, and the largest peak resident set. */
static double best_of(int runs, char *const argv[], long *maxrss_kb)
{
    double best = -1, t;
    long rss;
    int i;

    *maxrss_kb = 0;
    for (i = 0; i < runs; i++) {
        if ((t = run_measured(argv, &rss)) < 0)
            return -1;
        if (best < 0 || t < best)
            best = t;
        if (rss > *maxrss_kb)
            *maxrss_kb = rss;
    }
    return best;
}

/*
 * The tool itself, not libtool's wrapper script (whose shell would set a
 * floor under the peak): .libs/tslock with the build's library first on
 * LD_LIBRARY_PATH, where the build has one.
 */
static void find_tool(char *out, size_t size, const char *top)
{
    char lib[1200];
    const char *old = getenv("LD_LIBRARY_PATH");

    snprintf(out, size, "%s/tools/.libs/tslock", top);
    if (access(out, X_OK) == 0) {
        snprintf(lib, sizeof(lib), "%s/.libs%s%s", top, old ? ":" : "",
                 old ? old : "");
        setenv("LD_LIBRARY_PATH", lib, 1);
        return;
    }
    snprintf(out, size, "%s/tools/tslock", top);
}

/* TSLOCK_BENCH_SURVEY_KEYS: sizes separated by spaces or commas. */
static int parse_sizes(const char *text, long *sizes, int max)
{
    int n = 0;
    char *end;

    while (n < max && *text != '\0') {
        long v = strtol(text, &end, 10);
        if (end == text) {
            text++;
            continue;
        }
        if (v > 0 && (n == 0 || v > sizes[n - 1]))
            sizes[n++] = v;
        text = end;
    }
    return n;
}

struct where {
    const char *name;
    char url[400];
    const char *socket; /* for redis-cli: a Unix socket, else "" */
    th_cluster *cl;     /* else every master, scanned one after the other */
};

/* redis-cli --scan of every master of w->cl in turn: the summed time. */
static double scan_cluster(const struct where *w, int runs, const char *rcli,
                           long *maxrss_kb)
{
    double sum = 0, t;
    char port[16];
    char *argv[] = {(char *)rcli, "-p", port, "--scan", NULL};
    long rss;
    int k;

    *maxrss_kb = 0;
    for (k = 0; k < w->cl->n; k++) {
        snprintf(port, sizeof(port), "%d", w->cl->node[k].port);
        if ((t = best_of(runs, argv, &rss)) < 0)
            return -1;
        sum += t;
        if (rss > *maxrss_kb)
            *maxrss_kb = rss;
    }
    return sum;
}

/* One row: keys, redis-cli --scan, tslock survey, redis-cli KEYS. */
static int row(const struct where *w, long n, const char *tool,
               const char *rcli)
{
    long keys = n + n / 7 + (n % 7 > 4); /* the owner keys are keys too */
    int runs = n >= 1000000 ? 1 : 3;
    char *survey[] = {(char *)tool, "-q",     "-u", (char *)w->url,
                      "survey",     "--json", NULL};
    char *scan_sock[] = {(char *)rcli, "-s", (char *)w->socket, "--scan", NULL};
    char *keys_sock[] = {(char *)rcli, "-s", (char *)w->socket,
                         "KEYS",       "*",  NULL};
    char *floor_argv[] = {"/bin/true", NULL};
    long rss_survey, rss_scan, rss_keys = 0, rss_floor = 0;
    double load[1];
    double t_survey, t_scan, t_keys = 0;

    /* What a peak measured this way cannot go below: see the header. */
    if (run_measured(floor_argv, &rss_floor) < 0)
        return -1;

    t_survey = best_of(runs, survey, &rss_survey);
    t_scan = w->cl == NULL ? best_of(runs, scan_sock, &rss_scan)
                           : scan_cluster(w, runs, rcli, &rss_scan);
    if (w->socket[0])
        t_keys = best_of(1, keys_sock, &rss_keys);
    if (t_survey <= 0 || t_scan <= 0 || t_keys < 0)
        return -1;
    printf("%-10s %9ld %4d %10.0f %10.0f %7.2fx %8.2f s %9ld KiB %6ld KiB",
           w->name, keys, runs, keys / t_scan, keys / t_survey,
           t_survey / t_scan, t_survey, rss_survey, rss_floor);
    if (w->socket[0])
        printf(" %9ld KiB", rss_keys);
    else
        printf(" %13s", "-");
    if (getloadavg(load, 1) == 1)
        printf("  (load %.1f)", load[0]);
    putchar('\n');
    fflush(stdout);
    return 0;
}

static const char *header =
    "where           keys runs  scan keys/s survey keys/s  ratio  survey "
    "time  survey peak      floor   KEYS peak\n";

int main(void)
{
    const char *env = getenv("TSLOCK_BENCH_SURVEY_KEYS");
    const char *top = getenv("top_builddir");
    const char *rcli = getenv("REDIS_CLI");
    const char *cl_env = getenv("TSLOCK_BENCH_SURVEY_CLUSTER");
    char tool[1024], rcli_path[1024];
    long sizes[8], loaded = 0;
    int n_sizes = parse_sizes(env != NULL ? env : "200000", sizes, 8), i;
    int masters = cl_env != NULL ? atoi(cl_env) : 0;
    static int slot_node[16384];
    struct where w;
    redisContext *ctx;
    th_server s;
    th_cluster cl;

    find_tool(tool, sizeof(tool), top != NULL ? top : ".");
    /* execv needs a path: redis-cli from PATH unless $REDIS_CLI names one. */
    snprintf(rcli_path, sizeof(rcli_path), "%s",
             rcli != NULL ? rcli : "/usr/bin/redis-cli");
    if (th_server_start(&s, NULL) != 0)
        return 1;
    memset(&w, 0, sizeof(w));
    w.name = "single";
    w.socket = s.socket;
    snprintf(w.url, sizeof(w.url), "unix://%s", s.socket);
    printf("\nsurvey: keys of seven kinds (timestamp ms, s, float, token, "
           "bridge with its owner key, a hash, a plain string); best time "
           "of `runs` runs; peak = the largest resident set of the process "
           "(wait4 ru_maxrss); floor = the same of /bin/true, what such a peak "
           "cannot go below (a forked child starts with this process's pages, "
           "and exec keeps the high-water mark); KEYS peak = redis-cli KEYS "
           "'*', which holds every key at once, as the control that must "
           "grow\n%s",
           header);
    ctx = th_redis(&s);
    for (i = 0; i < n_sizes; i++) {
        if (load(ctx, loaded, sizes[i]) != 0
            || row(&w, sizes[i], tool, rcli_path) != 0) {
            fprintf(stderr, "bench_survey: %ld keys failed\n", sizes[i]);
            redisFree(ctx);
            th_server_stop(&s);
            return 1;
        }
        loaded = sizes[i];
    }
    redisFree(ctx);
    th_server_stop(&s);
    if (masters < 3)
        return 0;
    if (th_cluster_start(&cl, masters) != 0 || map_slots(&cl, slot_node) != 0)
        return 1;
    w.name = "cluster(3)";
    w.socket = "";
    snprintf(w.url, sizeof(w.url), "redis://127.0.0.1:%d", cl.node[0].port);
    w.cl = &cl;
    for (loaded = 0, i = 0; i < n_sizes; i++) {
        if (load_cluster(&cl, slot_node, loaded, sizes[i]) != 0
            || row(&w, sizes[i], tool, rcli_path) != 0) {
            fprintf(stderr, "bench_survey: %ld keys failed\n", sizes[i]);
            th_cluster_stop(&cl);
            return 1;
        }
        loaded = sizes[i];
    }
    th_cluster_stop(&cl);
    return 0;
}
