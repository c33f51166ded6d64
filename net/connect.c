/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * connect.c - a new connection to a node with the client's timeouts and
 * credentials (cluster nodes, the subscriber), and the small helpers
 * every connecting file shares.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "net.h"

int tslock__replace_string(char **slot, const char *value)
{
    char *copy = NULL;

    if (value != NULL && (copy = strdup(value)) == NULL)
        return TSLOCK_ENOMEM;
    if (*slot != NULL) {
        memset(*slot, 0, strlen(*slot));
        free(*slot);
    }
    *slot = copy;
    return TSLOCK_OK;
}

/*
 * Ready a connection just opened (redisConnect*, NULL or failed included):
 * close-on-exec, so a program that forks and execs does not pass it on,
 * and the client's command timeout.  TSLOCK_OK with *out set, or
 * TSLOCK_ENOMEM / TSLOCK_EIO with the cause in why (ctx freed).
 */
int tslock__ready_connection(const tslock_client *c, redisContext *ctx,
                             redisContext **out, char *why, size_t why_size)
{
    int flags;

    *out = NULL;
    if (ctx == NULL || ctx->err) {
        if (why != NULL)
            snprintf(why, why_size, "%s",
                     ctx != NULL ? ctx->errstr : "out of memory");
        tslock__ctx_free(ctx);
        return ctx == NULL ? TSLOCK_ENOMEM : TSLOCK_EIO;
    }
    flags = fcntl(ctx->fd, F_GETFD);
    if (flags != -1)
        (void)fcntl(ctx->fd, F_SETFD, flags | FD_CLOEXEC);
    if (c->command_ms > 0)
        (void)redisSetTimeout(ctx, tslock__ms_to_timeval(c->command_ms));
    *out = ctx;
    return TSLOCK_OK;
}

/*
 * A new connection with the client's timeouts and credentials, to
 * host:port, or to the client's own Unix socket when host is c->host and
 * the client speaks over one.
 */
int tslock__connect_node(tslock_client *c, const char *host, int port,
                         redisContext **out)
{
    struct timeval tv = tslock__ms_to_timeval(c->connect_ms);
    const char *argv[3] = {"AUTH", c->user, c->password};
    redisContext *ctx;
    redisReply *r;

    *out = NULL;
    if (c->host == NULL) /* a Sentinel client that never found a master */
        return TSLOCK_EIO;
    if (c->transport == TRANSPORT_TCP || host != c->host)
        ctx = c->connect_ms > 0 ? redisConnectWithTimeout(host, port, tv)
                                : redisConnect(host, port);
    else if (c->transport == TRANSPORT_UNIX)
        ctx = c->connect_ms > 0 ? redisConnectUnixWithTimeout(c->host, tv)
                                : redisConnectUnix(c->host);
    else
        return TSLOCK_EUNSUPPORTED; /* a wrapped connection: where to? */
    if (tslock__ready_connection(c, ctx, &ctx, NULL, 0) != TSLOCK_OK)
        return TSLOCK_EIO;
    if ((c->transport == TRANSPORT_TCP || host != c->host)
        && tslock__tls_attach(c, ctx, host, port) != TSLOCK_OK) {
        tslock__ctx_free(ctx);
        return TSLOCK_ETLS;
    }
    if (c->password != NULL) {
        if (c->user == NULL)
            argv[1] = c->password;
        if (tslock__roundtrip(ctx, c->user != NULL ? 3 : 2, argv, &r)
                != REDIS_OK
            || r->type == REDIS_REPLY_ERROR) {
            freeReplyObject(r);
            tslock__ctx_free(ctx);
            return TSLOCK_EAUTH;
        }
        freeReplyObject(r);
    }
    *out = ctx;
    return TSLOCK_OK;
}
