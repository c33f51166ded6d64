/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rawconn.c - a plain hiredis connection for the forms that need what no
 * lock offers (survey's SCAN and pipelines, watch's MONITOR): connected
 * as the URL says, with --timeout, AUTH and optionally SELECT, and every
 * reply checked with one message naming the command.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hiredis_compat.h"

#include "cli.h"

redisReply *cli_raw_reply(redisContext *ctx, const char *what, redisReply *r)
{
    if (r == NULL) {
        cli_error("%s: %s", what, ctx->errstr[0] ? ctx->errstr : "no reply");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        cli_error("%s: the server said: %s", what, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

int cli_raw_failed(const redisContext *ctx)
{
    return ctx->err ? CLI_EXIT_UNAVAILABLE : CLI_EXIT_SOFTWARE;
}

/* AUTH, and SELECT when asked, as the URL says; 0 or an exit status. */
static int raw_prepare(redisContext *ctx, const struct tslock_url *u,
                       int select_db)
{
    redisReply *r = NULL;

    if (u->password != NULL && u->user != NULL)
        r = cli_raw_command(ctx, "AUTH %s %s", u->user, u->password);
    else if (u->password != NULL)
        r = cli_raw_command(ctx, "AUTH %s", u->password);
    if (u->password != NULL) {
        if ((r = cli_raw_reply(ctx, "AUTH", r)) == NULL)
            return CLI_EXIT_UNAVAILABLE;
        freeReplyObject(r);
    }
    if (select_db && u->db != 0) {
        r = cli_raw_command(ctx, "SELECT %d", u->db);
        if ((r = cli_raw_reply(ctx, "SELECT", r)) == NULL)
            return cli_raw_failed(ctx);
        freeReplyObject(r);
    }
    return 0;
}

/*
 * With a Sentinel URL, the master's address: the library asks the
 * sentinels and checks the node, and its client is then let go.
 */
static int master_address(const struct cli_options *o, char *host, size_t size,
                          int *port)
{
    tslock_client *c = NULL;
    const char *h = NULL;
    int status = cli_connect(o, &c);

    if (status != CLI_EXIT_OK)
        return status;
    if (tslock_client_address(c, &h, port) != TSLOCK_OK)
        status = CLI_EXIT_SOFTWARE;
    else
        snprintf(host, size, "%s", h);
    tslock_client_free(c);
    return status;
}

int cli_raw_connect(const struct cli_options *o, int select_db,
                    redisContext **out)
{
    return cli_raw_connect_to(o, NULL, 0, select_db, out);
}

int cli_raw_connect_to(const struct cli_options *o, const char *host, int port,
                       int select_db, redisContext **out)
{
    const struct tslock_url *u = &o->url;
    struct timeval tv;
    redisContext *ctx;
    char master[256];
    int flags, status, mport = 0;

    *out = NULL;
    tv.tv_sec = o->timeout_ms / 1000;
    tv.tv_usec = (o->timeout_ms % 1000) * 1000;
    if (host == NULL && u->nsentinels > 0) {
        status = master_address(o, master, sizeof(master), &mport);
        if (status != 0)
            return status;
        host = master;
        port = mport;
    }
    ctx = host != NULL ? redisConnectWithTimeout(host, port, tv)
          : u->is_unix ? redisConnectUnixWithTimeout(u->host, tv)
                       : redisConnectWithTimeout(u->host, u->port, tv);
    if (ctx == NULL || ctx->err) {
        char where[512];

        if (host != NULL && host != master)
            snprintf(where, sizeof(where), "cluster node %s:%d", host, port);
        else if (host != NULL)
            snprintf(where, sizeof(where), "the master %s:%d", host, port);
        else
            tslock_url_describe(u, where, sizeof(where));
        cli_error("cannot connect to %s: %s", where,
                  ctx != NULL ? ctx->errstr : "out of memory");
        redisFree(ctx);
        return CLI_EXIT_UNAVAILABLE;
    }
    redisSetTimeout(ctx, tv);
    if (u->tls != NULL) {
        char why[512];
        int rc = tslock_conn_start_tls(
            ctx, u->tls, host != NULL ? host : u->host, why, sizeof(why));
        if (rc != TSLOCK_OK) {
            cli_error("cannot connect: %s: %s", tslock_errname(rc), why);
            tslock_conn_free(ctx);
            return rc == TSLOCK_ETLS ? CLI_EXIT_TLS : CLI_EXIT_UNAVAILABLE;
        }
    }
    /* A COMMAND of the run form must not inherit it (it never does). */
    flags = fcntl(ctx->fd, F_GETFD);
    if (flags != -1)
        (void)fcntl(ctx->fd, F_SETFD, flags | FD_CLOEXEC);
    status = raw_prepare(ctx, u, select_db);
    if (status != 0)
        tslock_conn_free(ctx);
    else
        *out = ctx;
    return status;
}

int cli_raw_version(redisContext *ctx, int *major, int *minor, int *cluster)
{
    redisReply *r = cli_raw_reply(ctx, "INFO", cli_raw_command(ctx, "INFO"));
    const char *v;

    if (r == NULL)
        return cli_raw_failed(ctx);
    v = r->type == REDIS_REPLY_STRING ? strstr(r->str, "redis_version:") : NULL;
    if (v == NULL || sscanf(v, "redis_version:%d.%d", major, minor) != 2) {
        cli_error("INFO: no redis_version in the reply");
        freeReplyObject(r);
        return CLI_EXIT_SOFTWARE;
    }
    if (cluster != NULL)
        *cluster = strstr(r->str, "cluster_enabled:1") != NULL;
    freeReplyObject(r);
    return 0;
}

void cli_cluster_free(struct cli_cluster *cl)
{
    size_t i;

    if (cl == NULL)
        return;
    for (i = 0; i < cl->n; i++)
        free(cl->host[i]);
    free(cl->host);
    free(cl->port);
    free(cl);
}

/* The index of master host:port in cl, added if new; -1 on ENOMEM. */
static long cluster_node(struct cli_cluster *cl, const char *host, int port)
{
    size_t i;
    char **hosts;
    int *ports;

    for (i = 0; i < cl->n; i++)
        if (cl->port[i] == port && strcmp(cl->host[i], host) == 0)
            return (long)i;
    hosts = realloc(cl->host, (cl->n + 1) * sizeof(*hosts));
    if (hosts != NULL)
        cl->host = hosts;
    ports = realloc(cl->port, (cl->n + 1) * sizeof(*ports));
    if (ports != NULL)
        cl->port = ports;
    if (hosts == NULL || ports == NULL
        || (cl->host[cl->n] = strdup(host)) == NULL)
        return -1;
    cl->port[cl->n] = port;
    return (long)cl->n++;
}

int cli_raw_cluster(redisContext *ctx, const char *fallback_host,
                    struct cli_cluster **out)
{
    redisReply *r = cli_raw_reply(ctx, "CLUSTER SLOTS",
                                  cli_raw_command(ctx, "CLUSTER SLOTS"));
    struct cli_cluster *cl;
    size_t i;

    *out = NULL;
    if (r == NULL)
        return cli_raw_failed(ctx);
    if ((cl = calloc(1, sizeof(*cl))) == NULL) {
        freeReplyObject(r);
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    for (i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *e = r->element[i], *m;
        long long s;
        long idx;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3
            || e->element[0]->type != REDIS_REPLY_INTEGER
            || e->element[1]->type != REDIS_REPLY_INTEGER
            || e->element[2]->type != REDIS_REPLY_ARRAY
            || e->element[2]->elements < 2
            || e->element[2]->element[0]->type != REDIS_REPLY_STRING
            || e->element[2]->element[1]->type != REDIS_REPLY_INTEGER
            || e->element[0]->integer < 0 || e->element[1]->integer > 16383) {
            cli_error("CLUSTER SLOTS: expected [start, end, [ip, port, ...]], "
                      "got another reply");
            freeReplyObject(r);
            cli_cluster_free(cl);
            return CLI_EXIT_SOFTWARE;
        }
        m = e->element[2];
        idx = cluster_node(
            cl, m->element[0]->len ? m->element[0]->str : fallback_host,
            (int)m->element[1]->integer);
        if (idx < 0) {
            freeReplyObject(r);
            cli_cluster_free(cl);
            cli_error("out of memory");
            return CLI_EXIT_OSERR;
        }
        for (s = e->element[0]->integer; s <= e->element[1]->integer; s++)
            cl->owner[s] = (unsigned short)(idx + 1);
    }
    freeReplyObject(r);
    *out = cl;
    return 0;
}
