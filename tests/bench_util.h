/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_util.h - what every benchmark of `make bench` measures with: a
 * monotonic clock in ns, the median of a run of samples, and one timed
 * PING, the baseline each figure is divided by.
 */
#ifndef TSLOCK_TEST_BENCH_UTIL_H
#define TSLOCK_TEST_BENCH_UTIL_H

#include <stdint.h>

#include "hiredis_compat.h"

/* CLOCK_MONOTONIC in ns. */
int64_t bench_now_ns(void);

/* The median of v[0..n-1], in v's unit; sorts v. */
double bench_median(int64_t *v, int n);

/* Time one PING on raw into *ns: 0, or -1 when no reply came. */
int bench_ping(redisContext *raw, int64_t *ns);

#endif
