/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.c - what a lock costs, as a multiple of one round trip to the
 * same server measured in the same run (these machines are shared and
 * noisy, so absolute times mean little).  For each scheme and server
 * generation: an uncontended acquire + release, a busy try, and an
 * extend, against PING on the same endpoint (the proxy, for emulated
 * servers).  Run with `make bench`; not part of `make check`.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "harness_cluster.h"

enum op { OP_PING, OP_CYCLE, OP_BUSY, OP_EXTEND, N_OPS };

static int rounds;
static int64_t *samples, *pings;

/* One timed sample of op; 0 when the library said what was expected. */
static int sample(enum op op, redisContext *raw, tslock_lock *a, tslock_lock *b,
                  int64_t *ns)
{
    int64_t t0 = bench_now_ns();
    int ok = 1;

    switch (op) {
    case OP_PING: {
        redisReply *r = redisCommand(raw, "PING");
        ok = r != NULL;
        freeReplyObject(r);
        break;
    }
    case OP_CYCLE:
        ok =
            tslock_acquire(a, 0) == TSLOCK_OK && tslock_release(a) == TSLOCK_OK;
        break;
    case OP_BUSY:
        ok = tslock_acquire(b, 0) == TSLOCK_EBUSY;
        break;
    case OP_EXTEND:
        ok = tslock_extend(a, 0) == TSLOCK_OK;
        break;
    default:
        break;
    }
    *ns = bench_now_ns() - t0;
    return ok ? 0 : -1;
}

static int bench_clients(const char *name, redisContext *raw, tslock_client *c1,
                         tslock_client *c2, tslock_scheme scheme,
                         const char *scheme_name);

static int bench_target(const char *name, const th_server *endpoint,
                        tslock_scheme scheme, const char *scheme_name)
{
    return bench_clients(name, th_redis(endpoint), th_client(endpoint),
                         th_client(endpoint), scheme, scheme_name);
}

/* A client over TCP to node i of a cluster. */
static tslock_client *cluster_client(const th_cluster *cl, int i)
{
    tslock_client *c = NULL;

    if (tslock_client_new(&c) != TSLOCK_OK
        || tslock_client_connect_tcp(c, "127.0.0.1", cl->node[i].port)
               != TSLOCK_OK) {
        fprintf(stderr, "bench: cluster node %d: %s\n", i,
                tslock_client_errstr(c));
        tslock_client_free(c);
        return NULL;
    }
    return c;
}

/*
 * On a three-master cluster: the ratios against a PING over TCP to the
 * key's master, for clients that reached the cluster through that master
 * ("cluster") and through another node ("cluster/via"), whose commands
 * the slot map sends straight to the master too.
 */
static int bench_cluster(tslock_scheme scheme, const char *scheme_name,
                         const th_cluster *cl)
{
    int owner = th_cluster_owner(cl, "bench:lock"), via = (owner + 1) % cl->n;
    struct timeval tv = {5, 0};
    int rc = 0, round;

    for (round = 0; round < 2; round++) {
        int seed = round == 0 ? owner : via;
        redisContext *raw =
            redisConnectWithTimeout("127.0.0.1", cl->node[owner].port, tv);
        tslock_client *c1 = cluster_client(cl, seed),
                      *c2 = cluster_client(cl, seed);

        if (raw == NULL || raw->err) {
            redisFree(raw);
            raw = NULL;
        }
        if (bench_clients(round == 0 ? "cluster" : "cluster/via", raw, c1, c2,
                          scheme, scheme_name)
            != 0)
            rc = -1;
    }
    return rc;
}

static int bench_clients(const char *name, redisContext *raw, tslock_client *c1,
                         tslock_client *c2, tslock_scheme scheme,
                         const char *scheme_name)
{
    tslock_lock *a = NULL, *b = NULL;
    double med[N_OPS];
    int op, i, failed = 0;

    if (raw == NULL || c1 == NULL || c2 == NULL
        || tslock_lock_new(&a, c1, "bench:lock") != TSLOCK_OK
        || tslock_lock_new(&b, c2, "bench:lock") != TSLOCK_OK) {
        failed = 1;
        goto out;
    }
    tslock_lock_set_scheme(a, scheme);
    tslock_lock_set_scheme(b, scheme);
    freeReplyObject(redisCommand(raw, "DEL bench:lock"));
    /* Warm the script cache and the connections. */
    if (tslock_acquire(a, 0) != TSLOCK_OK || tslock_release(a) != TSLOCK_OK) {
        printf("%-12s %-9s %s\n", name, scheme_name, tslock_client_errstr(c1));
        failed = 1;
        goto out;
    }
    /*
     * Each sample of an operation follows a PING sample on the same
     * connection's server, so both see the same load on the machine.
     */
    med[OP_PING] = 0;
    for (op = OP_CYCLE; op < N_OPS; op++) {
        if (op == OP_BUSY || op == OP_EXTEND)
            failed |= tslock_acquire(a, 0) != TSLOCK_OK;
        for (i = 0; i < rounds && !failed; i++)
            failed |= sample(OP_PING, raw, a, b, &pings[i]) != 0
                      || sample((enum op)op, raw, a, b, &samples[i]) != 0;
        if (op == OP_BUSY || op == OP_EXTEND)
            failed |= tslock_release(a) != TSLOCK_OK;
        if (failed)
            break;
        med[OP_PING] += bench_median(pings, rounds) / 3;
        med[op] = bench_median(samples, rounds) / bench_median(pings, rounds);
    }
    if (failed) {
        printf("%-12s %-9s failed: %s\n", name, scheme_name,
               tslock_client_errstr(c1));
        goto out;
    }
    printf("%-12s %-9s %8.1f | %6.2f %6.2f %6.2f\n", name, scheme_name,
           med[OP_PING] / 1000.0, med[OP_CYCLE], med[OP_BUSY], med[OP_EXTEND]);
out:
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
    redisFree(raw);
    return failed ? -1 : 0;
}

int main(void)
{
    static const struct {
        const char *name, *emulate;
    } targets[] = {{"modern", NULL},
                   {"2.6.0", "2.6.0"},
                   {"2.2.15", "2.2.15"},
                   {"2.0.5", "2.0.5"}};
    static const tslock_scheme schemes[] = {
        TSLOCK_SCHEME_TOKEN, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_SCHEME_BRIDGE};
    static const char *const scheme_names[] = {"token", "timestamp", "bridge"};
    th_server srv, proxy;
    th_cluster cl;
    size_t t, s;
    int rc = 0;

    rounds = th_rounds(2000);
    samples = calloc((size_t)rounds, sizeof(*samples));
    pings = calloc((size_t)rounds, sizeof(*pings));
    if (samples == NULL || pings == NULL || th_server_start(&srv, NULL) != 0)
        return 1;
    printf("medians of %d samples; ratios to one PING on the same endpoint,\n"
           "sampled alternately with each operation\n"
           "%-12s %-9s %8s | %6s %6s %6s\n",
           rounds, "server", "scheme", "PING us", "cycle", "busy", "extend");
    for (t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
        const th_server *ep = &srv;
        if (targets[t].emulate != NULL) {
            if (th_proxy_start(&proxy, &srv, targets[t].emulate) != 0) {
                rc = 1;
                break;
            }
            ep = &proxy;
        }
        for (s = 0; s < sizeof(schemes) / sizeof(schemes[0]); s++) {
            if (schemes[s] == TSLOCK_SCHEME_TOKEN && targets[t].emulate != NULL
                && strcmp(targets[t].emulate, "2.0.5") == 0)
                continue; /* no token lock on 2.0 */
            if (bench_target(targets[t].name, ep, schemes[s], scheme_names[s])
                != 0)
                rc = 1;
        }
        if (targets[t].emulate != NULL)
            th_proxy_stop(&proxy);
    }
    if (th_cluster_start(&cl, 3) != 0) {
        rc = 1;
    } else {
        for (s = 0; s < sizeof(schemes) / sizeof(schemes[0]); s++)
            if (bench_cluster(schemes[s], scheme_names[s], &cl) != 0)
                rc = 1;
        th_cluster_stop(&cl);
    }
    printf(
        "cycle = acquire + release of a free lock; busy = one try on a "
        "held lock;\nextend = renew a held lock; cluster: PING over TCP to the "
        "key's master,\nclients connected to it (cluster) or to another "
        "node (cluster/via)\n");
    th_server_stop(&srv);
    free(samples);
    free(pings);
    return rc;
}
