/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_sentinel.c - what waiting for replicas costs, as a multiple of one
 * PING to the master over TCP measured alternately in the same run: a token
 * acquire + release through a client that found the master through
 * Sentinel, without and with tslock_lock_set_replicas(1), on the SET NX PX
 * path (WAIT in the same round trip) and on the script path (WAIT sent
 * after the write).  A master, a replica and three sentinels.  Run with
 * `make bench`; not part of make check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"
#include "harness_sentinel.h"

#define ROUNDS 1000

/* The median cycle and the median PING between cycles, in ns. */
static int measure(th_topology *t, int replicas, unsigned caps, double *cycle,
                   double *ping)
{
    static int64_t cycles[ROUNDS], pings[ROUNDS];
    tslock_client *c = th_topology_client(t);
    redisContext *raw;
    tslock_lock *l = NULL;
    int i, ok = 1;

    if (c == NULL || tslock_client_limit_caps(c, caps) != TSLOCK_OK
        || tslock_client_reconnect(c) != TSLOCK_OK
        || tslock_lock_new(&l, c, "bench:sentinel") != TSLOCK_OK)
        return -1;
    (void)tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN);
    (void)tslock_lock_set_replicas(l, replicas, 1000);
    /* Over TCP, as the lock client reaches the master the sentinels name. */
    raw = redisConnect("127.0.0.1", t->node[0].port);
    if (raw == NULL || raw->err) {
        redisFree(raw);
        return -1;
    }
    for (i = 0; i < ROUNDS && ok; i++) {
        int64_t t0 = bench_now_ns();
        ok =
            tslock_acquire(l, 0) == TSLOCK_OK && tslock_release(l) == TSLOCK_OK;
        cycles[i] = bench_now_ns() - t0;
        ok = bench_ping(raw, &pings[i]) == 0 && ok;
    }
    if (!ok)
        fprintf(stderr, "bench_sentinel: %s\n", tslock_client_errstr(c));
    redisFree(raw);
    tslock_lock_free(l);
    tslock_client_free(c);
    *cycle = bench_median(cycles, ROUNDS);
    *ping = bench_median(pings, ROUNDS);
    return ok ? 0 : -1;
}

int main(void)
{
    static const struct {
        const char *what;
        int replicas;
        unsigned caps;
    } rows[] = {
        {"SET NX PX, no WAIT", 0, ~0u},
        {"SET NX PX + WAIT 1 (one round trip)", 1, ~0u},
        {"script, no WAIT", 0, ~0u & ~TSLOCK_CAP_SET_NX_PX},
        {"script, then WAIT 1", 1, ~0u & ~TSLOCK_CAP_SET_NX_PX},
    };
    th_topology t;
    size_t i;
    int rc = 0;

    if (th_topology_start(&t, "bench") != 0)
        return 1;
    printf("acquire + release through Sentinel, median of %d, as PINGs:\n",
           ROUNDS);
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        double cycle, ping;
        if (measure(&t, rows[i].replicas, rows[i].caps, &cycle, &ping) != 0) {
            rc = 1;
            break;
        }
        printf("  %-38s %6.1f PINGs (%.0f us)\n", rows[i].what, cycle / ping,
               cycle / 1000);
    }
    th_topology_stop(&t);
    return rc;
}
