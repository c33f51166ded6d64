/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_redlock.c - what a Redlock over three masters costs, as a
 * multiple of one PING to the first master measured in the same run,
 * next to a token lock on one server: an uncontended acquire + release,
 * a busy try, an extend, and the cycle with one master down.  Run with
 * `make bench`; not part of `make check`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"
#include "harness.h"

#define N 3

static int rounds;
static int64_t *samples, *pings;
static th_server srv[N];
static redisContext *raw;

enum op { SINGLE_CYCLE, CYCLE, BUSY, EXTEND };

/* One timed sample; 0 when every call said what was expected. */
static int sample(enum op op, tslock_lock *single, tslock_redlock *a,
                  tslock_redlock *b, int64_t *ns)
{
    int64_t t0 = bench_now_ns();
    int ok;

    switch (op) {
    case SINGLE_CYCLE:
        ok = tslock_acquire(single, 0) == TSLOCK_OK
             && tslock_release(single) == TSLOCK_OK;
        break;
    case CYCLE:
        ok = tslock_redlock_acquire(a, 0) == TSLOCK_OK
             && tslock_redlock_release(a) == TSLOCK_OK;
        break;
    case BUSY:
        ok = tslock_redlock_acquire(b, 0) == TSLOCK_EBUSY;
        break;
    default:
        ok = tslock_redlock_extend(a, 0) == TSLOCK_OK;
        break;
    }
    *ns = bench_now_ns() - t0;
    return ok ? 0 : -1;
}

/* The median ratio of op to PING, sampled alternately; < 0 on failure. */
static double measure(enum op op, tslock_lock *single, tslock_redlock *a,
                      tslock_redlock *b)
{
    int i;

    for (i = 0; i < rounds; i++) {
        bench_ping(raw, &pings[i]);
        if (sample(op, single, a, b, &samples[i]) != 0) {
            printf("failed: %s\n", tslock_redlock_errstr(a));
            return -1;
        }
    }
    return bench_median(samples, rounds) / bench_median(pings, rounds);
}

int main(void)
{
    tslock_client *c[N], *d[N], *one;
    tslock_redlock *a = NULL, *b = NULL;
    tslock_lock *single = NULL;
    double r[5];
    int i;

    rounds = th_rounds(1000);
    samples = calloc((size_t)rounds, sizeof(*samples));
    pings = calloc((size_t)rounds, sizeof(*pings));
    if (samples == NULL || pings == NULL)
        return 1;
    for (i = 0; i < N; i++)
        if (th_server_start(&srv[i], NULL) != 0)
            return 1;
    raw = th_redis(&srv[0]);
    for (i = 0; i < N; i++) {
        c[i] = th_client(&srv[i]);
        d[i] = th_client(&srv[i]);
    }
    one = th_client(&srv[0]);
    if (tslock_redlock_new(&a, c, N, "bench:rl") != TSLOCK_OK
        || tslock_redlock_new(&b, d, N, "bench:rl") != TSLOCK_OK
        || tslock_lock_new(&single, one, "bench:one") != TSLOCK_OK)
        return 1;
    tslock_lock_set_scheme(single, TSLOCK_SCHEME_TOKEN);
    r[0] = measure(SINGLE_CYCLE, single, a, b);
    r[1] = measure(CYCLE, single, a, b);
    if (tslock_redlock_acquire(a, 0) != TSLOCK_OK)
        return 1;
    r[2] = measure(BUSY, single, a, b);
    r[3] = measure(EXTEND, single, a, b);
    if (tslock_redlock_release(a) != TSLOCK_OK)
        return 1;
    th_server_kill(&srv[2]);
    r[4] = measure(CYCLE, single, a, b);
    printf("medians of %d samples; ratios to one PING to the first master\n"
           "token lock, one server:      cycle %6.2f\n"
           "Redlock, 3 masters:          cycle %6.2f  busy %6.2f  extend "
           "%6.2f\n"
           "Redlock, 1 of 3 masters down: cycle %6.2f\n"
           "cycle = acquire + release of a free lock; busy = one try on a "
           "held lock\n",
           rounds, r[0], r[1], r[2], r[3], r[4]);
    tslock_lock_free(single);
    tslock_redlock_free(a);
    tslock_redlock_free(b);
    for (i = 0; i < N; i++) {
        tslock_client_free(c[i]);
        tslock_client_free(d[i]);
    }
    tslock_client_free(one);
    redisFree(raw);
    for (i = 0; i < N; i++)
        th_server_stop(&srv[i]);
    free(samples);
    free(pings);
    return 0;
}
