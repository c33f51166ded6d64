/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_survey.c - the survey benchmark of `make bench`: loads N keys of
 * mixed dialects and non-locks into a private server, then times
 * `tslock survey --json` against `redis-cli --scan` on the same server in
 * the same run, and prints keys/s of each and their ratio.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"

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

static int load(redisContext *c, long n)
{
    int64_t now_ms = th_wall_us() / 1000;
    long i, j, replies;
    void *r;

    for (i = 0; i < n; i += LOAD_BATCH) {
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

/* The best of three runs of a shell command, in seconds; < 0 on failure. */
static double best_of_three(const char *command)
{
    double best = -1, t0, t;
    int i;

    for (i = 0; i < 3; i++) {
        t0 = now_s();
        if (system(command) != 0) {
            fprintf(stderr, "bench_survey: failed: %s\n", command);
            return -1;
        }
        t = now_s() - t0;
        if (best < 0 || t < best)
            best = t;
    }
    return best;
}

int main(void)
{
    const char *env = getenv("TSLOCK_BENCH_SURVEY_KEYS");
    const char *top = getenv("top_builddir");
    const char *rcli = getenv("REDIS_CLI");
    long n = env != NULL && atol(env) > 0 ? atol(env) : 200000;
    char cmd_survey[1024], cmd_scan[1024];
    double t_survey, t_scan;
    long keys;
    th_server s;

    if (th_server_start(&s, NULL) != 0)
        return 1;
    if (load(th_redis(&s), n) != 0) {
        fprintf(stderr, "bench_survey: loading the keys failed\n");
        return 1;
    }
    keys = n + n / 7; /* the owner keys are keys too */
    snprintf(cmd_survey, sizeof(cmd_survey),
             "%s/tools/tslock -q -u unix://%s survey --json >/dev/null",
             top != NULL ? top : ".", s.socket);
    snprintf(cmd_scan, sizeof(cmd_scan), "%s -s %s --scan >/dev/null",
             rcli != NULL ? rcli : "redis-cli", s.socket);
    t_survey = best_of_three(cmd_survey);
    t_scan = best_of_three(cmd_scan);
    th_server_stop(&s);
    if (t_survey <= 0 || t_scan <= 0)
        return 1;
    printf("survey of %ld keys (best of 3):\n", keys);
    printf("  redis-cli --scan       %10.0f keys/s\n", keys / t_scan);
    printf("  tslock survey --json   %10.0f keys/s  (%.2fx the time of "
           "redis-cli --scan)\n",
           keys / t_survey, t_survey / t_scan);
    return 0;
}
