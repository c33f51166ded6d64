/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_util.c - the clock, the median and the PING baseline shared by
 * the benchmarks (bench_util.h).
 */
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"

int64_t bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

double bench_median(int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp64);
    return n % 2 ? (double)v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

int bench_ping(redisContext *raw, int64_t *ns)
{
    int64_t t0 = bench_now_ns();
    redisReply *r = redisCommand(raw, "PING");

    *ns = bench_now_ns() - t0;
    freeReplyObject(r);
    return r != NULL ? 0 : -1;
}
