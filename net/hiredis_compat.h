/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hiredis_compat.h - the one place that knows which hiredis tslock was
 * built with: calls added after hiredis 0.11.0 reach the code through
 * these names, mapped to hiredis's own where configure found them and to
 * the replacements in hiredis_compat.c where it did not.
 */
#ifndef TSLOCK_HIREDIS_COMPAT_H
#define TSLOCK_HIREDIS_COMPAT_H

#include "config.h"

#include <stdlib.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>

/*
 * freeReplyObject(NULL) and redisFree(NULL) do nothing from hiredis 0.12
 * on, and tslock relies on that; 0.11 dereferences the pointer.  There
 * the two names are routed through NULL checks (the parenthesised names
 * below call hiredis's own functions, not these macros).
 */
#ifdef TSLOCK_HIREDIS_FREE_NEEDS_NONNULL
static inline void tslock__free_reply(void *r)
{
    if (r != NULL)
        (freeReplyObject)(r);
}
static inline void tslock__redis_free(redisContext *ctx)
{
    if (ctx != NULL)
        (redisFree)(ctx);
}
#define freeReplyObject(r) tslock__free_reply(r)
#define redisFree(ctx)     tslock__redis_free(ctx)
#endif

/*
 * A reply's length as size_t: redisReply.len is an int before hiredis
 * 0.13 and a size_t from then on.
 */
#define TSLOCK__REPLY_LEN(r) ((size_t)(r)->len)

/*
 * Where a connection handed to tslock_client_wrap() leads, kept when it
 * is wrapped: hiredis before 0.13 keeps no address in its context, so
 * the replacement of redisReconnect finds the server again through this.
 * With hiredis's own redisReconnect it is kept but not read.
 */
struct tslock__peer {
    struct sockaddr_storage addr;
    socklen_t len; /* 0: nothing to reconnect to (a socketpair, say) */
};

/* Note where ctx is connected; never fails (len 0 when unknown). */
void tslock__peer_remember(struct tslock__peer *peer, const redisContext *ctx);

/*
 * redisReconnect(): close ctx's socket and connect it again to where it
 * led, with fresh buffers, in place (the caller's pointer stays valid).
 * REDIS_OK, or REDIS_ERR with ctx->err and ctx->errstr set.  The
 * replacement connects within connect_ms (0: no bound), as hiredis's own
 * does within the connect timeout given to redisConnectWithTimeout().
 */
int tslock__redis_reconnect(redisContext *ctx, const struct tslock__peer *peer,
                            int connect_ms);

/* redisFreeCommand(): free what redisFormatCommandArgv() allocated. */
#ifdef HAVE_REDISFREECOMMAND
#define tslock__redis_free_command redisFreeCommand
#else
#define tslock__redis_free_command free
#endif

/*
 * redisConnectFd(): a blocking context over a connected socket fd, which
 * it owns from then on.  Used by the tests' socketpair clients.
 */
#ifdef HAVE_REDISCONNECTFD
#define tslock__redis_connect_fd redisConnectFd
#else
redisContext *tslock__redis_connect_fd(int fd);
#endif

#endif
