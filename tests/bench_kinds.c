/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_kinds.c - what the kinds of lock cost, as a multiple of one PING
 * to the same endpoint measured alternately in the same run: a plain
 * acquire + release, a reentrant re-acquire + inner release, a set of two
 * keys (tslock_acquire_all + tslock_release_all), and tslock_with around
 * an empty function.  Auto scheme, on the modern server and on 2.2 and
 * 2.0 played by the proxy.  Run with `make bench`; not part of make check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"
#include "harness.h"

enum op { OP_CYCLE, OP_REENTER, OP_SET2, OP_WITH, N_OPS };

static int rounds;
static int64_t *samples, *pings;

static int nothing(tslock_lock *lock, void *userdata)
{
    (void)lock;
    (void)userdata;
    return 0;
}

/* One timed sample: 0 when every call said what was expected. */
static int sample(enum op op, tslock_lock **set, int64_t *ns)
{
    int64_t t0 = bench_now_ns();
    int ok = 0, result = -1;

    switch (op) {
    case OP_CYCLE:
        ok = tslock_acquire(set[0], 0) == TSLOCK_OK
             && tslock_release(set[0]) == TSLOCK_OK;
        break;
    case OP_REENTER: /* set[0] is held already */
        ok = tslock_acquire(set[0], 0) == TSLOCK_OK
             && tslock_release(set[0]) == TSLOCK_OK;
        break;
    case OP_SET2:
        ok = tslock_acquire_all(set, 2, 0) == TSLOCK_OK
             && tslock_release_all(set, 2) == TSLOCK_OK;
        break;
    default:
        ok = tslock_with(set[0], 0, NULL, nothing, NULL, &result) == TSLOCK_OK
             && result == 0;
        break;
    }
    *ns = bench_now_ns() - t0;
    return ok ? 0 : -1;
}

static int bench_target(const char *name, const th_server *ep)
{
    redisContext *raw = th_redis(ep);
    tslock_client *c = th_client(ep);
    tslock_lock *set[2] = {NULL, NULL};
    double ratio[N_OPS], ping_us = 0;
    int op, i, failed = 0;

    if (tslock_lock_new(&set[0], c, "bench:k1") != TSLOCK_OK
        || tslock_lock_new(&set[1], c, "bench:k2") != TSLOCK_OK)
        return -1;
    tslock_lock_set_reentrant(set[0], 1);
    /* Warm the connection and the script cache first. */
    for (i = 0; i < 20 && !failed; i++)
        failed |= sample(OP_SET2, set, &samples[0]) != 0;
    for (op = 0; op < N_OPS && !failed; op++) {
        if (op == OP_REENTER)
            failed |= tslock_acquire(set[0], 0) != TSLOCK_OK;
        for (i = 0; i < rounds && !failed; i++)
            failed |= bench_ping(raw, &pings[i]) != 0
                      || sample((enum op)op, set, &samples[i]) != 0;
        if (op == OP_REENTER)
            failed |= tslock_release(set[0]) != TSLOCK_OK;
        if (failed)
            break;
        ping_us += bench_median(pings, rounds) / 1000.0 / N_OPS;
        ratio[op] = bench_median(samples, rounds) / bench_median(pings, rounds);
    }
    if (failed)
        printf("%-8s failed: %s\n", name, tslock_client_errstr(c));
    else
        printf("%-8s %8.1f | %6.2f %8.2f %6.2f %6.2f\n", name, ping_us,
               ratio[OP_CYCLE], ratio[OP_REENTER], ratio[OP_SET2],
               ratio[OP_WITH]);
    tslock_lock_free(set[0]);
    tslock_lock_free(set[1]);
    tslock_client_free(c);
    redisFree(raw);
    return failed ? -1 : 0;
}

int main(void)
{
    static const char *const old[] = {"2.2.15", "2.0.5"};
    th_server srv, proxy;
    size_t t;
    int rc = 0;

    rounds = th_rounds(2000);
    samples = calloc((size_t)rounds, sizeof(*samples));
    pings = calloc((size_t)rounds, sizeof(*pings));
    if (samples == NULL || pings == NULL || th_server_start(&srv, NULL) != 0)
        return 1;
    printf("medians of %d samples; ratios to one PING on the same endpoint\n"
           "%-8s %8s | %6s %8s %6s %6s\n",
           rounds, "server", "PING us", "cycle", "re-enter", "set2", "with");
    rc |= bench_target("modern", &srv);
    for (t = 0; t < sizeof(old) / sizeof(old[0]); t++) {
        if (th_proxy_start(&proxy, &srv, old[t]) != 0) {
            rc = 1;
            break;
        }
        rc |= bench_target(old[t], &proxy);
        th_proxy_stop(&proxy);
    }
    printf("cycle = acquire + release; re-enter = a reentrant re-acquire + "
           "inner release;\nset2 = tslock_acquire_all + tslock_release_all "
           "of two free keys; with =\ntslock_with around an empty function\n");
    th_server_stop(&srv);
    free(samples);
    free(pings);
    return rc;
}
