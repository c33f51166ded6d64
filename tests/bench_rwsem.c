/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_rwsem.c - what read-write locks and semaphores cost, as a
 * multiple of one PING to the same endpoint measured alternately in the
 * same run: a plain acquire + release, a shared one, an exclusive one,
 * and a permit of a semaphore, each of a free key.  On the modern server
 * and on 2.6.0 and 2.2 played by the proxy.  Run with `make bench`; not
 * part of make check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"
#include "harness.h"

enum op { OP_PLAIN, OP_SHARED, OP_EXCLUSIVE, OP_PERMIT, N_OPS };

static int rounds;
static int64_t *samples, *pings;

/* One timed acquire + release: 0 when both said OK. */
static int sample(tslock_lock *l, int64_t *ns)
{
    int64_t t0 = bench_now_ns();
    int ok =
        tslock_acquire(l, 0) == TSLOCK_OK && tslock_release(l) == TSLOCK_OK;

    *ns = bench_now_ns() - t0;
    return ok ? 0 : -1;
}

static tslock_lock *make(tslock_client *c, const char *key, enum op op)
{
    tslock_lock *l = NULL;

    if (tslock_lock_new(&l, c, key) != TSLOCK_OK)
        return NULL;
    if (op == OP_SHARED)
        tslock_lock_set_rw(l, TSLOCK_RW_SHARED);
    else if (op == OP_EXCLUSIVE)
        tslock_lock_set_rw(l, TSLOCK_RW_EXCLUSIVE);
    else if (op == OP_PERMIT)
        tslock_lock_set_permits(l, 4);
    return l;
}

static int bench_target(const char *name, const th_server *ep)
{
    static const char *const keys[N_OPS] = {"bench:plain", "bench:rw",
                                            "bench:rw", "bench:sem"};
    redisContext *raw = th_redis(ep);
    tslock_client *c = th_client(ep);
    double ratio[N_OPS], ping_us = 0;
    int op, i, failed = 0;

    for (op = 0; op < N_OPS && !failed; op++) {
        tslock_lock *l = make(c, keys[op], (enum op)op);
        if (l == NULL)
            return -1;
        for (i = 0; i < 20 && !failed; i++) /* warm the script cache */
            failed |= sample(l, &samples[0]) != 0;
        for (i = 0; i < rounds && !failed; i++)
            failed |=
                bench_ping(raw, &pings[i]) != 0 || sample(l, &samples[i]) != 0;
        tslock_lock_free(l);
        if (failed)
            break;
        ping_us += bench_median(pings, rounds) / 1000.0 / N_OPS;
        ratio[op] = bench_median(samples, rounds) / bench_median(pings, rounds);
    }
    if (failed)
        printf("%-8s failed: %s\n", name, tslock_client_errstr(c));
    else
        printf("%-8s %8.1f | %6.2f %7.2f %9.2f %7.2f\n", name, ping_us,
               ratio[OP_PLAIN], ratio[OP_SHARED], ratio[OP_EXCLUSIVE],
               ratio[OP_PERMIT]);
    tslock_client_free(c);
    redisFree(raw);
    return failed ? -1 : 0;
}

int main(void)
{
    static const char *const old[] = {"2.6.0", "2.2.15"};
    th_server srv, proxy;
    size_t t;
    int rc = 0;

    rounds = th_rounds(2000);
    samples = calloc((size_t)rounds, sizeof(*samples));
    pings = calloc((size_t)rounds, sizeof(*pings));
    if (samples == NULL || pings == NULL || th_server_start(&srv, NULL) != 0)
        return 1;
    printf("medians of %d samples; ratios to one PING on the same endpoint\n"
           "%-8s %8s | %6s %7s %9s %7s\n",
           rounds, "server", "PING us", "plain", "shared", "exclusive",
           "permit");
    rc |= bench_target("modern", &srv);
    for (t = 0; t < sizeof(old) / sizeof(old[0]); t++) {
        if (th_proxy_start(&proxy, &srv, old[t]) != 0) {
            rc = 1;
            break;
        }
        rc |= bench_target(old[t], &proxy);
        th_proxy_stop(&proxy);
    }
    printf("each: tslock_acquire + tslock_release of a free key (auto "
           "scheme); permit: a\nsemaphore of 4\n");
    th_server_stop(&srv);
    free(samples);
    free(pings);
    return rc;
}
