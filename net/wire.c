/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wire.c - commands on a connection, without hooks: our writer (no
 * SIGPIPE), one or n commands and their replies, the broken-connection
 * rule, and turning replies the library did not expect into codes with
 * a message naming what came.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "net.h"

/*
 * A NULL reply from hiredis means the connection is gone or timed out;
 * either way the context cannot be trusted any more, so the client is
 * marked broken until it reconnects.
 */
int tslock__io_failure(tslock_client *c, const char *what)
{
    redisContext *ctx = c->ctx;
    int timed_out =
        ctx != NULL && ctx->err == REDIS_ERR_IO
        && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT);
    const char *cause =
        ctx != NULL && ctx->errstr[0] ? ctx->errstr : "connection lost";

    c->broken = 1;
    if (timed_out)
        return tslock__fail(c, TSLOCK_ETIMEDOUT,
                            "%s: no reply within %d ms (%s)", what,
                            c->command_ms, cause);
    if (ctx != NULL && ctx->err == REDIS_ERR_EOF)
        return tslock__fail(c, TSLOCK_EIO, "%s: server closed the connection",
                            what);
    /*
     * TLS 1.3 servers judge a client certificate after the handshake: a
     * missing or refused one arrives as an alert on the first read.
     */
    if (ctx != NULL && ctx->err == REDIS_ERR_OTHER
        && strncmp(ctx->errstr, "TLS: ", 5) == 0)
        return tslock__fail(
            c, TSLOCK_ETLS, "%s: the server ended the TLS session: %s%s", what,
            ctx->errstr + 5,
            strstr(ctx->errstr, "certificate required") != NULL
                ? " (it requires a client certificate: --cert and --key, "
                  "ssl_certfile= and ssl_keyfile=)"
            : strstr(ctx->errstr, "unknown ca") != NULL
                    || strstr(ctx->errstr, "bad certificate") != NULL
                    || strstr(ctx->errstr, "expired") != NULL
                ? " (it refused this client's certificate)"
                : "");
    return tslock__fail(c, TSLOCK_EIO, "%s: %s", what, cause);
}

/*
 * Write the whole of buf with send(MSG_NOSIGNAL), so a connection the
 * server closed gives EPIPE and never SIGPIPE, at no cost in system
 * calls; on a TLS context, through its transport (tls.c), likewise.  hiredis's
 * own writer uses write(2), which raises SIGPIPE.  The socket's send timeout
 * (set with the command timeout) bounds a stall.
 */
static int write_plain(redisContext *ctx, const char *buf, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = send(ctx->fd, buf + done, len - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ctx->err = REDIS_ERR_IO;
            snprintf(ctx->errstr, sizeof(ctx->errstr), "%s",
                     n < 0 ? strerror(errno) : "short write");
            return REDIS_ERR;
        }
        done += (size_t)n;
    }
    return REDIS_OK;
}

int tslock__write(redisContext *ctx, const char *buf, size_t len)
{
    const struct tslock__io *t = TSLOCK__TRANSPORT(ctx);

    return t != NULL ? t->write(ctx, buf, len) : write_plain(ctx, buf, len);
}

void tslock__ctx_free(redisContext *ctx)
{
    if (ctx != NULL && ctx->reader != NULL && TSLOCK__IS_TLS(ctx))
        TSLOCK__TRANSPORT(ctx)->close(ctx);
    redisFree(ctx);
}

/* ------------------------------------------ the public context calls */

int tslock_conn_write(redisContext *ctx, const char *buf, size_t len)
{
    if (ctx == NULL || (buf == NULL && len > 0))
        return TSLOCK_EINVAL;
    return tslock__write(ctx, buf, len) == REDIS_OK ? TSLOCK_OK : TSLOCK_EIO;
}

int tslock_conn_get_reply(redisContext *ctx, void **reply)
{
    if (ctx == NULL || reply == NULL)
        return TSLOCK_EINVAL;
    *reply = NULL;
    return tslock__get_reply(ctx, reply) == REDIS_OK ? TSLOCK_OK : TSLOCK_EIO;
}

int tslock_conn_read(redisContext *ctx)
{
    if (ctx == NULL)
        return TSLOCK_EINVAL;
    return tslock__buffer_read(ctx) == REDIS_OK ? TSLOCK_OK : TSLOCK_EIO;
}

void tslock_conn_free(redisContext *ctx)
{
    tslock__ctx_free(ctx);
}

char *tslock__i64_str(char out[TSLOCK__I64_STR], int64_t v)
{
    char digits[20], *p = out;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int n = 0;

    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u > 0);
    if (v < 0)
        *p++ = '-';
    while (n > 0)
        *p++ = digits[--n];
    *p = '\0';
    return out;
}

/* "<mark><v>\r\n" at p: a RESP count or length; past its end. */
static char *put_count(char *p, char mark, size_t v)
{
    char n[TSLOCK__I64_STR];
    size_t len = strlen(tslock__i64_str(n, (int64_t)v));

    *p++ = mark;
    memcpy(p, n, len);
    p += len;
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* The most bytes n commands can take in RESP. */
static size_t resp_bound(int n, const struct tslock__queued *q)
{
    size_t size = 0;
    int i, a;

    for (i = 0; i < n; i++) {
        size += 3 + TSLOCK__I64_STR;
        for (a = 0; a < q[i].argc; a++)
            size += strlen(q[i].argv[a]) + 5 + TSLOCK__I64_STR;
    }
    return size;
}

/*
 * Format every command into one buffer and send it in one go, with our
 * writer.  Every command of the library goes this way, on the lock
 * connection and on the subscriber alike, so none can raise SIGPIPE.
 * The RESP is written here rather than by redisFormatCommandArgv(),
 * which allocates each command and prints each length with sprintf: a
 * lock's commands are short, and on the stack they cost no allocation.
 */
int tslock__send(redisContext *ctx, int n, const struct tslock__queued *q)
{
    char stack[1024], *buf = stack, *p;
    size_t bound = resp_bound(n, q);
    int i, a, rc;

    stack[0] = '\0'; /* for the compiler: the TLS writer is not inlined */
    if (bound > sizeof(stack) && (buf = malloc(bound)) == NULL) {
        ctx->err = REDIS_ERR_OOM;
        snprintf(ctx->errstr, sizeof(ctx->errstr), "out of memory");
        return REDIS_ERR;
    }
    p = buf;
    for (i = 0; i < n; i++) {
        p = put_count(p, '*', (size_t)q[i].argc);
        for (a = 0; a < q[i].argc; a++) {
            size_t len = strlen(q[i].argv[a]);
            p = put_count(p, '$', len);
            memcpy(p, q[i].argv[a], len);
            p += len;
            *p++ = '\r';
            *p++ = '\n';
        }
    }
    /* The plain writer inlined, as before TLS: one pointer test more. */
    rc = TSLOCK__IS_TLS(ctx)
             ? TSLOCK__TRANSPORT(ctx)->write(ctx, buf, (size_t)(p - buf))
             : write_plain(ctx, buf, (size_t)(p - buf));
    if (buf != stack)
        free(buf);
    return rc;
}

int tslock__roundtrip(redisContext *ctx, int argc, const char **argv,
                      redisReply **out)
{
    const struct tslock__queued q = {TSLOCK_STEP_GET, argc, argv};
    void *r = NULL;

    *out = NULL;
    if (tslock__send(ctx, 1, &q) != REDIS_OK
        || tslock__get_reply(ctx, &r) != REDIS_OK || r == NULL)
        return REDIS_ERR;
    *out = r;
    return REDIS_OK;
}

int tslock__exchange(tslock_client *c, int n, const struct tslock__queued *q,
                     redisReply **out)
{
    int i;

    for (i = 0; i < n; i++)
        out[i] = NULL;
    if (tslock__send(c->ctx, n, q) != REDIS_OK)
        return tslock__io_failure(c, tslock_step_name(q[0].step));
    for (i = 0; i < n; i++) {
        void *r = NULL;
        if (tslock__get_reply(c->ctx, &r) != REDIS_OK || r == NULL) {
            tslock__free_replies(i, out);
            return tslock__io_failure(c, tslock_step_name(q[i].step));
        }
        out[i] = r;
    }
    return TSLOCK_OK;
}

void tslock__free_replies(int n, redisReply **r)
{
    int i;

    for (i = 0; i < n; i++) {
        freeReplyObject(r[i]);
        r[i] = NULL;
    }
}

const char *tslock__reply_describe(const redisReply *r, char *buf, size_t size)
{
    if (r == NULL) {
        snprintf(buf, size, "no reply");
        return buf;
    }
    switch (r->type) {
    case REDIS_REPLY_STRING:
        snprintf(buf, size, "bulk string \"%.*s\"",
                 r->len > 40 ? 40 : (int)r->len, r->str);
        break;
    case REDIS_REPLY_STATUS:
        snprintf(buf, size, "status \"%.*s\"", r->len > 40 ? 40 : (int)r->len,
                 r->str);
        break;
    case REDIS_REPLY_ERROR:
        snprintf(buf, size, "error \"%.*s\"", r->len > 80 ? 80 : (int)r->len,
                 r->str);
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(buf, size, "integer %lld", (long long)r->integer);
        break;
    case REDIS_REPLY_NIL:
        snprintf(buf, size, "nil");
        break;
    case REDIS_REPLY_ARRAY:
        snprintf(buf, size, "array of %zu", (size_t)r->elements);
        break;
    default:
        snprintf(buf, size, "reply of type %d", r->type);
    }
    return buf;
}

/*
 * Redis 6+ refuses what a user's ACL does not allow with -NOPERM (a
 * command, a key or a channel).  A command denied inside a script comes
 * back as -ERR instead, worded "The user executing the script can't ..."
 * (7.0), after "Error running script" on 6.x.
 */
int tslock__is_acl_denial(const char *line)
{
    return strncmp(line, "NOPERM", 6) == 0
           || strstr(line, "user executing the script can't") != NULL
           || strstr(line, "NOPERM ") != NULL;
}

int tslock__reply_error(tslock_client *c, const char *what, const redisReply *r)
{
    int code = TSLOCK_ESERVER;

    /*
     * A master demoted by a failover keeps its connections and refuses
     * writes.  For a client that finds its master through Sentinel that
     * is a connection to the wrong node: broken, so reconnecting asks
     * the sentinels again.
     */
    if (c->nsentinels > 0 && strncmp(r->str, "READONLY", 8) == 0) {
        c->broken = 1;
        return tslock__fail(c, TSLOCK_EIO,
                            "%s: %s:%d is no longer the master of '%s' "
                            "(a failover demoted it): server replied -%s",
                            what, c->host, c->port, c->master_name, r->str);
    }
    /*
     * Servers before 2.8 say "ERR Operation against a key holding the
     * wrong kind of value", without the WRONGTYPE prefix; older servers
     * also wrap a script's error in "ERR Error running script".
     */
    if (tslock__is_acl_denial(r->str))
        return tslock__fail(
            c, TSLOCK_ENOPERM,
            "%s for lock '%s': server replied -%s (an ACL rule of "
            "this user denies it; doc/acl.md lists what "
            "each scheme needs)",
            what, c->op_key, r->str);
    if (strstr(r->str, "WRONGTYPE") != NULL
        || strstr(r->str, "wrong kind of value") != NULL)
        code = TSLOCK_EWRONGTYPE;
    else if (strncmp(r->str, "NOAUTH", 6) == 0
             || strncmp(r->str, "WRONGPASS", 9) == 0
             || strncmp(r->str, "ERR operation not permitted", 27) == 0)
        code = TSLOCK_EAUTH;
    else if (strncmp(r->str, "MOVED ", 6) == 0
             || strncmp(r->str, "ASK ", 4) == 0
             || strncmp(r->str, "TRYAGAIN", 8) == 0
             || strncmp(r->str, "CROSSSLOT", 9) == 0
             || strncmp(r->str, "CLUSTERDOWN", 11) == 0)
        code = TSLOCK_ECLUSTER;
    return tslock__fail(c, code, "%s: server replied -%s", what, r->str);
}

int tslock__unexpected(tslock_client *c, const char *what, const char *expected,
                       const redisReply *r)
{
    char buf[128];

    if (r != NULL && r->type == REDIS_REPLY_ERROR)
        return tslock__reply_error(c, what, r);
    return tslock__fail(c, TSLOCK_EPROTO, "%s: expected %s, got %s", what,
                        expected, tslock__reply_describe(r, buf, sizeof(buf)));
}
