/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hiredis_compat.c - our own small versions of the hiredis calls that
 * hiredis 0.11 and 0.12 lack (redisReconnect, redisConnectFd), built only
 * where configure did not find hiredis's (hiredis_compat.h says which).
 */
#include "config.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "hiredis_compat.h"

void tslock__peer_remember(struct tslock__peer *peer, const redisContext *ctx)
{
    socklen_t len = sizeof(peer->addr);

    memset(peer, 0, sizeof(*peer));
    if (ctx->fd < 0
        || getpeername(ctx->fd, (struct sockaddr *)&peer->addr, &len) != 0)
        return;
    /* An unnamed Unix socket (a socketpair) leads nowhere we can go back. */
    if (peer->addr.ss_family == AF_UNIX && len <= sizeof(sa_family_t) + 1)
        return;
    if (peer->addr.ss_family != AF_UNIX && peer->addr.ss_family != AF_INET
        && peer->addr.ss_family != AF_INET6)
        return;
    peer->len = len;
}

#ifdef HAVE_REDISRECONNECT
int tslock__redis_reconnect(redisContext *ctx, const struct tslock__peer *peer,
                            int connect_ms)
{
    (void)peer;
    (void)connect_ms;
    return redisReconnect(ctx);
}
#else
/* A new context to where peer leads, NULL only when out of memory. */
static redisContext *connect_peer(const struct tslock__peer *peer,
                                  int connect_ms)
{
    struct timeval tv;
    char host[NI_MAXHOST], port[NI_MAXSERV];

    tv.tv_sec = connect_ms / 1000;
    tv.tv_usec = (connect_ms % 1000) * 1000;
    if (peer->addr.ss_family == AF_UNIX) {
        const struct sockaddr_un *un = (const struct sockaddr_un *)&peer->addr;
        return connect_ms > 0 ? redisConnectUnixWithTimeout(un->sun_path, tv)
                              : redisConnectUnix(un->sun_path);
    }
    if (getnameinfo((const struct sockaddr *)&peer->addr, peer->len, host,
                    sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV)
        != 0)
        return NULL;
    return connect_ms > 0 ? redisConnectWithTimeout(host, atoi(port), tv)
                          : redisConnect(host, atoi(port));
}

/*
 * hiredis 0.11 and 0.12 keep no address in a context, and have no call
 * that connects one in place.  So: connect a fresh context to the
 * remembered address and move its socket, buffer and reader into ctx;
 * freeing the fresh one then closes the old socket and frees the old
 * buffers, as redisReconnect() does.  Only fields public in every
 * hiredis from 0.11 on are touched.
 */
int tslock__redis_reconnect(redisContext *ctx, const struct tslock__peer *peer,
                            int connect_ms)
{
    redisContext *fresh;
    char *obuf;
    redisReader *reader;
    int fd, ok;

    if (peer->len == 0) {
        ctx->err = REDIS_ERR_OTHER;
        snprintf(ctx->errstr, sizeof(ctx->errstr),
                 "Not enough information to reconnect");
        return REDIS_ERR;
    }
    fresh = connect_peer(peer, connect_ms);
    if (fresh == NULL) {
        ctx->err = REDIS_ERR_OOM;
        snprintf(ctx->errstr, sizeof(ctx->errstr), "Out of memory");
        return REDIS_ERR;
    }
    ok = !fresh->err;
    ctx->err = fresh->err;
    memcpy(ctx->errstr, fresh->errstr, sizeof(ctx->errstr));
    fd = ctx->fd;
    obuf = ctx->obuf;
    reader = ctx->reader;
    ctx->fd = ok ? fresh->fd : -1;
    ctx->obuf = fresh->obuf;
    ctx->reader = fresh->reader;
    ctx->flags = ok ? fresh->flags : ctx->flags & ~REDIS_CONNECTED;
    fresh->fd = fd;
    fresh->obuf = obuf;
    fresh->reader = reader;
    redisFree(fresh);
    return ok ? REDIS_OK : REDIS_ERR;
}
#endif

#ifndef HAVE_REDISCONNECTFD
/*
 * hiredis 0.11 makes contexts only by connecting.  One that failed to
 * connect to a path that is no socket is a clean blocking context with
 * no socket, which then takes fd, as redisConnectFd() does.
 */
redisContext *tslock__redis_connect_fd(int fd)
{
    redisContext *ctx = redisConnectUnix("/");

    if (ctx == NULL)
        return NULL;
    if (!ctx->err && ctx->fd > 0)
        close(ctx->fd);
    ctx->fd = fd;
    ctx->err = 0;
    ctx->errstr[0] = '\0';
    ctx->flags |= REDIS_BLOCK | REDIS_CONNECTED;
    return ctx;
}
#endif
