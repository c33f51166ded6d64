/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.c - finding the master through Redis Sentinel: asking the
 * sentinels in turn, checking that the node they name is the master,
 * going back to them after a failover.  WAIT, which narrows the window
 * in which a failover loses a lock, is a lock's (lib/replicas.c).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "net.h"

#define SENTINEL_RETRY_MS 100 /* between passes over the sentinels */
#define SENTINEL_DEFAULT_MS                                                    \
    5000 /* passes go on this long without a timeout                           \
          */

void tslock__sentinel_free(tslock_client *c)
{
    int i;

    for (i = 0; i < c->nsentinels; i++)
        free(c->sentinel_hosts[i]);
    free(c->sentinel_hosts);
    free(c->sentinel_ports);
    free(c->master_name);
    c->sentinel_hosts = NULL;
    c->sentinel_ports = NULL;
    c->master_name = NULL;
    c->nsentinels = 0;
    c->failover_epoch = 0; /* fences from a plain address carry none */
}

int tslock_client_set_sentinel_auth(tslock_client *c, const char *user,
                                    const char *password)
{
    int rc;

    if (c == NULL || (user != NULL && password == NULL))
        return TSLOCK_EINVAL;
    rc = tslock__replace_string(&c->sentinel_user, user);
    if (rc == TSLOCK_OK)
        rc = tslock__replace_string(&c->sentinel_password, password);
    return rc;
}

/* Append "; what" to the summary of a pass, as far as it fits. */
static void note(char *buf, size_t size, const char *what)
{
    size_t len = strlen(buf), n = strlen(what);

    if (len > 0 && len + 2 < size) {
        memcpy(buf + len, "; ", 2);
        len += 2;
    }
    if (len + n >= size)
        n = size - len - 1;
    memcpy(buf + len, what, n);
    buf[len + n] = '\0';
}

/* Connects to sentinel i, within the connect timeout when one is set. */
static int connect_sentinel(tslock_client *c, int i, redisContext **ctx,
                            char *why, size_t why_size)
{
    redisContext *made =
        c->connect_ms > 0
            ? redisConnectWithTimeout(c->sentinel_hosts[i],
                                      c->sentinel_ports[i],
                                      tslock__ms_to_timeval(c->connect_ms))
            : redisConnect(c->sentinel_hosts[i], c->sentinel_ports[i]);

    int rc = tslock__ready_connection(c, made, ctx, why, why_size);

    if (rc == TSLOCK_OK
        && (rc = tslock__tls_attach(c, *ctx, c->sentinel_hosts[i],
                                    c->sentinel_ports[i]))
               != TSLOCK_OK) {
        size_t n = strlen(c->errstr);
        if (n >= why_size)
            n = why_size - 1;
        memcpy(why, c->errstr, n);
        why[n] = '\0';
        tslock__ctx_free(*ctx);
        *ctx = NULL;
    }
    return rc;
}

/*
 * Sends AUTH (when set) and the questions in one round trip; *n replies.
 * The address is asked between two SENTINEL MASTER, whose config-epoch
 * says which failover made that master: the two epochs agree when the
 * address belongs to that epoch (a sentinel changes both in one step).
 */
static int query_sentinel(tslock_client *c, redisContext *ctx, redisReply **r,
                          int *n)
{
    const char *auth[3] = {"AUTH", c->sentinel_user, c->sentinel_password};
    const char *ask[3] = {"SENTINEL", "get-master-addr-by-name",
                          c->master_name};
    const char *epoch[3] = {"SENTINEL", "MASTER", c->master_name};
    struct tslock__queued q[4];
    int k, rc = TSLOCK_OK;

    *n = 0;
    if (c->sentinel_password != NULL) {
        if (c->sentinel_user == NULL)
            auth[1] = c->sentinel_password;
        q[*n].step = TSLOCK_STEP_GET;
        q[*n].argc = c->sentinel_user != NULL ? 3 : 2;
        q[(*n)++].argv = auth;
    }
    q[*n].step = TSLOCK_STEP_GET;
    q[*n].argc = 3;
    q[(*n)++].argv = epoch;
    q[*n].step = TSLOCK_STEP_GET;
    q[*n].argc = 3;
    q[(*n)++].argv = ask;
    q[*n].step = TSLOCK_STEP_GET;
    q[*n].argc = 3;
    q[(*n)++].argv = epoch;
    if (tslock__send(ctx, *n, q) != REDIS_OK)
        rc = TSLOCK_EIO;
    for (k = 0; k < *n && rc == TSLOCK_OK; k++) {
        void *reply = NULL;
        if (tslock__get_reply(ctx, &reply) != REDIS_OK || reply == NULL)
            rc = TSLOCK_EIO;
        r[k] = reply;
    }
    return rc;
}

/*
 * The config-epoch of a SENTINEL MASTER answer (a flat list of names and
 * values), or -1 when the answer has none (an error, an ACL refusal, a
 * sentinel too old to say).
 */
static int64_t config_epoch(const redisReply *a)
{
    size_t i;

    if (a == NULL || a->type != REDIS_REPLY_ARRAY)
        return -1;
    for (i = 0; i + 1 < a->elements; i += 2) {
        const redisReply *k = a->element[i], *v = a->element[i + 1];
        char *end;
        long long e;
        if (k->type != REDIS_REPLY_STRING && k->type != REDIS_REPLY_STATUS)
            continue;
        if (strcmp(k->str, "config-epoch") != 0)
            continue;
        if (v->type == REDIS_REPLY_INTEGER)
            return v->integer >= 0 ? v->integer : -1;
        if (v->type != REDIS_REPLY_STRING)
            return -1;
        e = strtoll(v->str, &end, 10);
        return end != v->str && *end == '\0' && e >= 0 ? e : -1;
    }
    return -1;
}

/* Reads the master's host and port from the answer, or says why not. */
static int read_master(tslock_client *c, const redisReply *a, char *host,
                       size_t size, int *port, char *why, size_t why_size)
{
    char desc[128];

    if (a->type == REDIS_REPLY_NIL) {
        snprintf(why, why_size, "knows no master named '%.100s'",
                 c->master_name);
        return TSLOCK_ESERVER;
    }
    if (a->type == REDIS_REPLY_ERROR) {
        snprintf(why, why_size, "-%.200s", a->str);
        return strncmp(a->str, "NOAUTH", 6) == 0 ? TSLOCK_EAUTH
                                                 : TSLOCK_ESERVER;
    }
    if (a->type != REDIS_REPLY_ARRAY || a->elements != 2
        || a->element[0]->type != REDIS_REPLY_STRING
        || a->element[1]->type != REDIS_REPLY_STRING
        || (*port = atoi(a->element[1]->str)) <= 0 || *port > 65535
        || a->element[0]->len == 0
        || TSLOCK__REPLY_LEN(a->element[0]) >= size) {
        snprintf(why, why_size,
                 "expected [host, port] from SENTINEL "
                 "get-master-addr-by-name, got %s",
                 tslock__reply_describe(a, desc, sizeof(desc)));
        return TSLOCK_EPROTO;
    }
    memcpy(host, a->element[0]->str, a->element[0]->len);
    host[a->element[0]->len] = '\0';
    return TSLOCK_OK;
}

/*
 * Ask sentinel i where the master is: AUTH (when set) and SENTINEL
 * get-master-addr-by-name between two SENTINEL MASTER, in one round trip.
 * TSLOCK_OK with host, port and the master's config-epoch (0 when the
 * sentinel does not say) filled, or a code with the reason in why.
 */
static int ask_sentinel(tslock_client *c, int i, char *host, size_t size,
                        int *port, int64_t *epoch, char *why, size_t why_size)
{
    redisContext *ctx;
    redisReply *r[4] = {NULL, NULL, NULL, NULL};
    int n, k, rc;

    *epoch = 0;
    rc = connect_sentinel(c, i, &ctx, why, why_size);
    if (rc != TSLOCK_OK)
        return rc;
    rc = query_sentinel(c, ctx, r, &n);
    if (rc != TSLOCK_OK) {
        snprintf(why, why_size, "%s",
                 ctx->errstr[0] ? ctx->errstr : "connection lost");
    } else if (n == 4 && r[0]->type == REDIS_REPLY_ERROR) {
        snprintf(why, why_size, "AUTH: -%.200s", r[0]->str);
        rc = TSLOCK_EAUTH;
    } else {
        rc = read_master(c, r[n - 2], host, size, port, why, why_size);
    }
    if (rc == TSLOCK_OK) {
        int64_t before = config_epoch(r[n - 3]), after = config_epoch(r[n - 1]);
        if (before != after) {
            /* A failover reached this sentinel while it answered. */
            snprintf(why, why_size,
                     "its config-epoch went from %lld to %lld while it "
                     "named the master",
                     (long long)before, (long long)after);
            rc = TSLOCK_EIO;
        } else if (before > 0) {
            *epoch = before;
        }
    }
    for (k = 0; k < 4; k++)
        freeReplyObject(r[k]);
    tslock__ctx_free(ctx);
    return rc;
}

/* The sentinel that answered goes first next time (Redis's guidance). */
static void to_front(tslock_client *c, int i)
{
    char *host = c->sentinel_hosts[i];
    int port = c->sentinel_ports[i];

    memmove(c->sentinel_hosts + 1, c->sentinel_hosts,
            (size_t)i * sizeof(*c->sentinel_hosts));
    memmove(c->sentinel_ports + 1, c->sentinel_ports,
            (size_t)i * sizeof(*c->sentinel_ports));
    c->sentinel_hosts[0] = host;
    c->sentinel_ports[0] = port;
}

/*
 * One pass over the sentinels.  TSLOCK_OK connected; else the code worth
 * reporting (a refusal of credentials or an unknown name outranks a
 * connection failure, which may pass), with the pass's story in summary.
 */
static int one_pass(tslock_client *c, int (*open_socket)(tslock_client *),
                    char *summary, size_t size)
{
    char host[256], why[300], line[600];
    int i, port = 0, rc, worst = TSLOCK_EIO;
    int64_t epoch = 0;

    for (i = 0; i < c->nsentinels; i++) {
        rc = ask_sentinel(c, i, host, sizeof(host), &port, &epoch, why,
                          sizeof(why));
        if (rc == TSLOCK_OK) {
            c->failover_epoch = epoch;
            rc = tslock__replace_string(&c->host, host);
            if (rc != TSLOCK_OK)
                return rc;
            c->port = port;
            c->transport = TRANSPORT_TCP;
            rc = open_socket(c);
            if (rc == TSLOCK_OK) {
                to_front(c, i);
                return rc;
            }
            snprintf(why, sizeof(why), "master %.100s:%d: %.180s", host, port,
                     c->errstr);
        }
        snprintf(line, sizeof(line), "sentinel %.100s:%d: %s",
                 c->sentinel_hosts[i], c->sentinel_ports[i], why);
        note(summary, size, line);
        if (rc == TSLOCK_ENOMEM)
            return rc;
        if (rc != TSLOCK_EIO && rc != TSLOCK_ETIMEDOUT)
            worst = rc;
        else if (worst == TSLOCK_EIO)
            worst = rc;
    }
    return worst;
}

/*
 * Ask the sentinels in turn, and while every failure is one a failover
 * explains (a sentinel or the named master unreachable, the named node
 * not yet promoted), pass over them again until the connect timeout.
 * open_socket (the client's) connects to the address they name.
 */
int tslock__sentinel_connect(tslock_client *c,
                             int (*open_socket)(tslock_client *))
{
    int64_t budget = c->connect_ms > 0 ? c->connect_ms : SENTINEL_DEFAULT_MS;
    int64_t end = tslock__system_ms(TSLOCK_CLOCK_MONOTONIC) + budget;
    char summary[TSLOCK__ERRSTR_SIZE];
    int rc, passes = 0;

    for (;;) {
        int64_t left;
        summary[0] = '\0';
        rc = one_pass(c, open_socket, summary, sizeof(summary) - 80);
        passes++;
        if (rc == TSLOCK_OK || (rc != TSLOCK_EIO && rc != TSLOCK_ETIMEDOUT))
            break;
        left = end - tslock__system_ms(TSLOCK_CLOCK_MONOTONIC);
        if (left <= 0)
            break;
        (void)poll(NULL, 0,
                   (int)(left < SENTINEL_RETRY_MS ? left : SENTINEL_RETRY_MS));
    }
    if (rc == TSLOCK_OK)
        return rc;
    c->broken = 1;
    return tslock__fail(c, rc,
                        "no master for '%s' through %d sentinel%s "
                        "(%d pass%s): %s",
                        c->master_name, c->nsentinels,
                        c->nsentinels == 1 ? "" : "s", passes,
                        passes == 1 ? "" : "es", summary);
}

/* The value of "role:" in an INFO reply, into buf; 0 when absent. */
static int info_role(const redisReply *info, char *buf, size_t size)
{
    const char *p;
    size_t n = 0;

    if (info == NULL || info->type != REDIS_REPLY_STRING
        || (p = strstr(info->str, "role:")) == NULL)
        return 0;
    p += 5;
    while (n + 1 < size && p[n] != '\r' && p[n] != '\n' && p[n] != '\0') {
        buf[n] = p[n];
        n++;
    }
    buf[n] = '\0';
    return 1;
}

/*
 * ROLE (2.8.12) answers ["master", offset, replicas]; older servers know
 * no ROLE, and their INFO says "role:master".  Either way a replica
 * means the sentinel spoke before a failover finished (or after one it
 * has not seen yet): a transient fault, so the caller asks again.
 */
int tslock__sentinel_check_role(tslock_client *c, const redisReply *role,
                                const redisReply *info)
{
    char found[32], desc[128];
    const char *how = "ROLE";

    if (role != NULL && role->type == REDIS_REPLY_ARRAY && role->elements > 0
        && role->element[0]->type == REDIS_REPLY_STRING)
        snprintf(found, sizeof(found), "%.30s", role->element[0]->str);
    else if (role != NULL && role->type != REDIS_REPLY_ERROR)
        return tslock__fail(c, TSLOCK_EPROTO, "ROLE: expected an array, got %s",
                            tslock__reply_describe(role, desc, sizeof(desc)));
    else if (how = "INFO", !info_role(info, found, sizeof(found)))
        return tslock__fail(c, TSLOCK_EPROTO,
                            "neither ROLE nor INFO's role: line tells "
                            "whether %s:%d is a master",
                            c->host, c->port);
    if (strcmp(found, "master") == 0)
        return TSLOCK_OK;
    return tslock__fail(c, TSLOCK_EIO,
                        "%s:%d is not the master of '%s': %s says '%s'",
                        c->host, c->port, c->master_name, how, found);
}
