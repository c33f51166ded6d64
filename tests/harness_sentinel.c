/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness_sentinel.c - the Sentinel topology of the tests (see
 * harness_sentinel.h): five redis-server processes, and polling with
 * deadlines instead of sleeps that assume how long a failover takes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_sentinel.h"

#define POLL_US   50000
#define SETTLE_MS 15000

/* A reply to fmt on the server's Unix socket; NULL when unreachable. */
static redisReply *ask(const th_server *s, const char *fmt, ...)
{
    struct timeval tv = {1, 0};
    redisContext *c;
    redisReply *r = NULL;
    va_list ap;

    if (s->pid <= 0)
        return NULL;
    c = redisConnectUnixWithTimeout(s->socket, tv);
    if (c != NULL && c->err == 0 && redisSetTimeout(c, tv) == REDIS_OK) {
        va_start(ap, fmt);
        r = redisvCommand(c, fmt, ap);
        va_end(ap);
    }
    redisFree(c);
    return r;
}

int th_sentinel_names(const th_server *s, const char *name)
{
    redisReply *r = ask(s, "SENTINEL get-master-addr-by-name %s", name);
    int port = -1;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2
        && r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    freeReplyObject(r);
    return port;
}

/* A numeric field of "SENTINEL master NAME" (a flat field/value array). */
static long master_field(const th_server *s, const char *name,
                         const char *field)
{
    redisReply *r = ask(s, "SENTINEL master %s", name);
    long v = -1;
    size_t i;

    for (i = 0;
         r != NULL && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
         i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING
            && strcmp(r->element[i]->str, field) == 0
            && r->element[i + 1]->type == REDIS_REPLY_STRING)
            v = atol(r->element[i + 1]->str);
    freeReplyObject(r);
    return v;
}

/* Whether the node's INFO replication carries line. */
static int info_has(const th_server *s, const char *line)
{
    redisReply *r = ask(s, "INFO replication");
    int has = r != NULL && r->type == REDIS_REPLY_STRING
              && strstr(r->str, line) != NULL;

    freeReplyObject(r);
    return has;
}

static int settled(th_topology *t)
{
    int i;

    if (!info_has(&t->node[1], "master_link_status:up"))
        return 0;
    for (i = 0; i < TH_SENTINELS; i++)
        if (master_field(&t->sentinel[i], t->name, "num-slaves") < 1
            || master_field(&t->sentinel[i], t->name, "num-other-sentinels")
                   < TH_SENTINELS - 1)
            return 0;
    return 1;
}

int th_topology_start(th_topology *t, const char *name)
{
    char conf[512];
    int64_t end;
    int i;

    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", name);
    if (th_server_start(&t->node[0], NULL) != 0)
        return -1;
    snprintf(conf, sizeof(conf), "replicaof 127.0.0.1 %d\n", t->node[0].port);
    if (th_server_start(&t->node[1], conf) != 0)
        goto fail;
    snprintf(conf, sizeof(conf),
             "sentinel monitor %s 127.0.0.1 %d 2\n"
             "sentinel down-after-milliseconds %s 400\n"
             "sentinel failover-timeout %s 2000\n",
             name, t->node[0].port, name, name);
    for (i = 0; i < TH_SENTINELS; i++)
        if (th_sentinel_start(&t->sentinel[i], conf) != 0)
            goto fail;
    end = th_mono_ms() + SETTLE_MS;
    while (!settled(t)) {
        if (th_mono_ms() > end) {
            fprintf(stderr, "harness: sentinels did not settle in %d ms\n",
                    SETTLE_MS);
            goto fail;
        }
        th_sleep_us(POLL_US);
    }
    return 0;
fail:
    th_topology_stop(t);
    return -1;
}

void th_topology_stop(th_topology *t)
{
    int i;

    for (i = 0; i < TH_SENTINELS; i++)
        th_server_stop(&t->sentinel[i]);
    th_server_stop(&t->node[1]);
    th_server_stop(&t->node[0]);
}

th_server *th_topology_node(th_topology *t, int port)
{
    int i;

    for (i = 0; i < 2; i++)
        if (t->node[i].port == port)
            return &t->node[i];
    return NULL;
}

int th_topology_wait_master(th_topology *t, int old_port, int deadline_ms)
{
    int64_t end = th_mono_ms() + deadline_ms;

    for (;;) {
        int i, port = -1, agree = 1;
        for (i = 0; i < TH_SENTINELS && agree; i++) {
            int p;
            if (t->sentinel[i].pid <= 0)
                continue;
            p = th_sentinel_names(&t->sentinel[i], t->name);
            if (p <= 0 || p == old_port || (port > 0 && p != port))
                agree = 0;
            port = p;
        }
        if (agree && port > 0 && th_topology_node(t, port) != NULL
            && info_has(th_topology_node(t, port), "role:master"))
            return port;
        if (th_mono_ms() > end)
            return -1;
        th_sleep_us(POLL_US);
    }
}

int th_topology_wait_role(th_topology *t, int port, const char *role,
                          int deadline_ms)
{
    th_server *s = th_topology_node(t, port);
    int64_t end = th_mono_ms() + deadline_ms;
    char line[64];

    snprintf(line, sizeof(line), "role:%s", role);
    while (s != NULL && !info_has(s, line)) {
        if (th_mono_ms() > end)
            return -1;
        th_sleep_us(POLL_US);
    }
    return s != NULL ? 0 : -1;
}

void th_topology_addrs(const th_topology *t, const char *hosts[TH_SENTINELS],
                       int ports[TH_SENTINELS])
{
    int i;

    for (i = 0; i < TH_SENTINELS; i++) {
        hosts[i] = "127.0.0.1";
        ports[i] = t->sentinel[i].port;
    }
}

tslock_client *th_topology_client(const th_topology *t)
{
    const char *hosts[TH_SENTINELS];
    int ports[TH_SENTINELS];
    tslock_client *c = NULL;
    int rc = tslock_client_new(&c);

    th_topology_addrs(t, hosts, ports);
    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_sentinel(c, TH_SENTINELS, hosts, ports,
                                            t->name);
    if (rc != TSLOCK_OK) {
        fprintf(stderr, "th_topology_client: %s: %s\n", tslock_errname(rc),
                tslock_client_errstr(c));
        CU_FAIL("cannot connect through the sentinels");
        tslock_client_free(c);
        return NULL;
    }
    return c;
}

int th_topology_remonitor(th_topology *t, int port)
{
    int i, rc = 0;

    for (i = 0; i < TH_SENTINELS; i++) {
        redisReply *r[4];
        int k;
        if (t->sentinel[i].pid <= 0)
            continue;
        r[0] = ask(&t->sentinel[i], "SENTINEL REMOVE %s", t->name);
        r[1] = ask(&t->sentinel[i], "SENTINEL MONITOR %s 127.0.0.1 %d 2",
                   t->name, port);
        r[2] = ask(&t->sentinel[i],
                   "SENTINEL SET %s down-after-milliseconds 400", t->name);
        r[3] = ask(&t->sentinel[i], "SENTINEL SET %s failover-timeout 2000",
                   t->name);
        for (k = 0; k < 4; k++) {
            if (r[k] == NULL || r[k]->type != REDIS_REPLY_STATUS) {
                fprintf(stderr, "harness: sentinel reconfiguration: %s\n",
                        r[k] != NULL && r[k]->type == REDIS_REPLY_ERROR
                            ? r[k]->str
                            : "no reply");
                rc = -1;
            }
            freeReplyObject(r[k]);
        }
    }
    return rc;
}

int th_node_get(th_topology *t, int port, const char *key, char *buf,
                size_t size)
{
    th_server *s = th_topology_node(t, port);
    redisReply *r = s != NULL ? ask(s, "GET %s", key) : NULL;
    int rc = -1;

    if (r != NULL && r->type == REDIS_REPLY_NIL)
        rc = 0;
    else if (r != NULL && r->type == REDIS_REPLY_STRING) {
        snprintf(buf, size, "%s", r->str);
        rc = 1;
    }
    freeReplyObject(r);
    return rc;
}
