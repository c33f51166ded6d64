/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_sentinel.h - a Sentinel topology for the tests: a master, a
 * replica of it and three sentinels watching them, all real
 * redis-server processes started and stopped by the harness; and the
 * polling a test needs to follow a failover with a deadline.
 */
#ifndef TSLOCK_TEST_HARNESS_SENTINEL_H
#define TSLOCK_TEST_HARNESS_SENTINEL_H

#include "harness.h"

#define TH_SENTINELS 3

typedef struct th_topology {
    th_server node[2]; /* node[0] starts as master, node[1] as replica */
    th_server sentinel[TH_SENTINELS];
    char name[64]; /* the master's name at the sentinels */
} th_topology;

/*
 * Start the topology: "sentinel monitor NAME 127.0.0.1 PORT 2", with
 * down-after-milliseconds 400 and failover-timeout 2000, so a failover
 * takes a few seconds.  Returns once the replica's link is up and every
 * sentinel knows the replica and the two other sentinels (at most about
 * 15 s).  Returns 0, or -1 with a message on stderr (everything started
 * is stopped).
 */
int th_topology_start(th_topology *t, const char *name);
void th_topology_stop(th_topology *t);

/* The master port sentinel s names (get-master-addr-by-name), or -1. */
int th_sentinel_names(const th_server *s, const char *name);

/*
 * Poll every live sentinel until all name the same master, other than
 * old_port, and that node says ROLE master; within deadline_ms.  Returns
 * its port, or -1.
 */
int th_topology_wait_master(th_topology *t, int old_port, int deadline_ms);

/*
 * Poll the node at port until its INFO says "role:ROLE" ("master",
 * "slave"), within deadline_ms: 0, or -1.
 */
int th_topology_wait_role(th_topology *t, int port, const char *role,
                          int deadline_ms);

/* The node listening on port, or NULL. */
th_server *th_topology_node(th_topology *t, int port);

/*
 * The sentinels' addresses in the form tslock_client_connect_sentinel()
 * takes: hosts[i] "127.0.0.1", ports[i].
 */
void th_topology_addrs(const th_topology *t, const char *hosts[TH_SENTINELS],
                       int ports[TH_SENTINELS]);

/*
 * A tslock client connected through the three sentinels; a CUnit
 * failure and NULL when it cannot connect.
 */
tslock_client *th_topology_client(const th_topology *t);

/*
 * Point every live sentinel at the master on port by hand, as an operator
 * does after a switchover of their own: SENTINEL REMOVE, MONITOR, SET.
 * Returns 0, or -1.
 */
int th_topology_remonitor(th_topology *t, int port);

/*
 * GET key on the node at port: 1 and the value into buf, 0 absent,
 * -1 on failure.
 */
int th_node_get(th_topology *t, int port, const char *key, char *buf,
                size_t size);

#endif /* TSLOCK_TEST_HARNESS_SENTINEL_H */
