/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_cluster.h - a real Redis Cluster for the tests: n redis-server
 * nodes (th_server_start with cluster-enabled yes) joined as masters by
 * redis-cli --cluster create, and the steps of a slot migration done by
 * hand, as redis-cli --cluster reshard does them.
 *
 * Threads: from the test's main thread only.
 */
#ifndef TSLOCK_TEST_HARNESS_CLUSTER_H
#define TSLOCK_TEST_HARNESS_CLUSTER_H

#include "harness.h"

#define TH_CLUSTER_MAX 16

typedef struct th_cluster {
    th_server node[TH_CLUSTER_MAX];
    char id[TH_CLUSTER_MAX][41]; /* CLUSTER MYID of each node */
    int n;
    char password[64]; /* requirepass of every node, or "" */
    int replicas;      /* per master */
} th_cluster;

/*
 * Start n (2 .. TH_CLUSTER_MAX) nodes, join them with redis-cli
 * ($REDIS_CLI, else from PATH) as masters without replicas, and wait
 * until every node says cluster_state:ok and knows every node.  Returns
 * 0, or -1 with a message on stderr (every node stopped).
 */
int th_cluster_start(th_cluster *cl, int n);
/*
 * The same with requirepass and masterauth password on every node (the
 * harness's own commands AUTH with it).
 */
int th_cluster_start_auth(th_cluster *cl, int n, const char *password);
/*
 * masters * (1 + replicas) nodes (at most TH_CLUSTER_MAX), joined by
 * redis-cli with --cluster-replicas, password as above or NULL, and
 * cluster-node-timeout node_timeout_ms (5000 for the calls above): how
 * soon a dead master's replica takes over.
 */
int th_cluster_start_opts(th_cluster *cl, int masters, int replicas,
                          const char *password, int node_timeout_ms);
/* Stop every node by pid.  Idempotent. */
void th_cluster_stop(th_cluster *cl);

/* "redis://127.0.0.1:PORT" of node i, in a static buffer. */
const char *th_cluster_url(const th_cluster *cl, int i);

/*
 * The node that owns key's slot now, by CLUSTER SLOTS of the first node
 * still running; -1 when none does.
 */
int th_cluster_owner(const th_cluster *cl, const char *key);
/* A replica of that master, the same way; -1 for none. */
int th_cluster_replica(const th_cluster *cl, const char *key);
/* CLUSTER KEYSLOT on node i; -1 on failure. */
int th_cluster_keyslot(const th_cluster *cl, int i, const char *key,
                       size_t len);

/*
 * The sum over every node of an INFO field's "count=" or "calls=" value:
 * ("errorstats", "errorstat_MOVED") counts -MOVED replies, ("commandstats",
 * "cmdstat_asking") ASKING commands.  -1 on failure.
 */
long th_cluster_stat(const th_cluster *cl, const char *section,
                     const char *field);
/* CONFIG RESETSTAT on every node. */
void th_cluster_reset_stats(const th_cluster *cl);

/*
 * A slot migration from node `from` to node `to`, in its three steps:
 * begin (SETSLOT IMPORTING on to, then MIGRATING on from), move the keys
 * (GETKEYSINSLOT and MIGRATE, in batches of `batch` keys, all when 0),
 * and end (SETSLOT NODE on to, from, and every other node).  Return 0,
 * or -1 with a message on stderr.
 */
int th_cluster_migrate_begin(const th_cluster *cl, int slot, int from, int to);
/* Moves up to max keys (all when max <= 0); the number moved, or -1. */
int th_cluster_migrate_keys(const th_cluster *cl, int slot, int from, int to,
                            int max);
int th_cluster_migrate_end(const th_cluster *cl, int slot, int from, int to);

#endif /* TSLOCK_TEST_HARNESS_CLUSTER_H */
