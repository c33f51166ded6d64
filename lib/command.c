/*
 * command.c - the one path every lock operation's command takes: the
 * step hook, the broken-connection rule, and turning replies the library
 * did not expect into codes with a message naming what came.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <string.h>

#include "tslock_int.h"

int tslock__check_usable(tslock_client *c)
{
    if (c->ctx == NULL)
        return tslock__fail(c, TSLOCK_ESTATE, "client is not connected");
    if (c->broken)
        return TSLOCK_EIO; /* keep the first failure's detail */
    return TSLOCK_OK;
}

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
    return tslock__fail(c, TSLOCK_EIO, "%s: %s", what, cause);
}

/*
 * hiredis writes with write(2), so writing to a connection the server has
 * closed (CLIENT KILL, an idle timeout, a restart) raises SIGPIPE, whose
 * default action ends the process.  A library must not make that choice
 * for its caller, and Linux has no per-socket way out, so SIGPIPE is
 * blocked in this thread while a command is on the wire, and one that our
 * write raised is taken back before the mask is restored, as libpq does.
 * A SIGPIPE that was already pending is left for the caller.
 */
void tslock__sigpipe_hold(struct tslock__sigpipe *g)
{
    sigset_t pipe_only, pending;

    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    sigemptyset(&pending);
    (void)sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE) == 1;
    (void)pthread_sigmask(SIG_BLOCK, &pipe_only, &g->old);
}

void tslock__sigpipe_release(struct tslock__sigpipe *g)
{
    static const struct timespec no_wait = {0, 0};
    sigset_t pipe_only, pending;

    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    sigemptyset(&pending);
    if (!g->was_pending && sigpending(&pending) == 0
        && sigismember(&pending, SIGPIPE) == 1)
        while (sigtimedwait(&pipe_only, NULL, &no_wait) < 0 && errno == EINTR)
            ;
    (void)pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

int tslock__command(tslock_client *c, tslock_step step, const char *key,
                    int argc, const char **argv, redisReply **out)
{
    const struct tslock__queued q = {step, argc, argv};

    return tslock__pipeline(c, key, 1, &q, out);
}

/*
 * Write the whole of buf with send(MSG_NOSIGNAL), so a connection the
 * server closed gives EPIPE and never SIGPIPE, at no cost in system
 * calls.  hiredis's own writer uses write(2), which raises SIGPIPE.  The
 * socket's send timeout (set with the command timeout) bounds a stall.
 */
static int send_nosignal(redisContext *ctx, const char *buf, size_t len)
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

/* Format every command into one buffer and send it in one go. */
static int send_commands(tslock_client *c, int n,
                         const struct tslock__queued *q)
{
    char *buf = NULL, *grown;
    size_t len = 0;
    int i, rc = TSLOCK_OK;

    for (i = 0; i < n && rc == TSLOCK_OK; i++) {
        char *cmd = NULL;
        long long cmdlen =
            redisFormatCommandArgv(&cmd, q[i].argc, q[i].argv, NULL);
        grown = cmdlen < 0 ? NULL : realloc(buf, len + (size_t)cmdlen);
        if (grown == NULL) {
            rc = tslock__fail(c, TSLOCK_ENOMEM, "cannot format %s",
                              tslock_step_name(q[i].step));
        } else {
            buf = grown;
            memcpy(buf + len, cmd, (size_t)cmdlen);
            len += (size_t)cmdlen;
        }
        redisFreeCommand(cmd);
    }
    if (rc == TSLOCK_OK && send_nosignal(c->ctx, buf, len) != REDIS_OK)
        rc = tslock__io_failure(c, tslock_step_name(q[0].step));
    free(buf);
    return rc;
}

/*
 * Send every command, then read every reply; the hooks have run.  A
 * blocking context gets our own writer; one the caller made non-blocking
 * keeps hiredis's, with SIGPIPE held back around it instead.
 */
static int send_and_read(tslock_client *c, int n,
                         const struct tslock__queued *q, redisReply **out)
{
    struct tslock__sigpipe guard;
    int blocking = (c->ctx->flags & REDIS_BLOCK) != 0, i, rc = TSLOCK_OK;

    if (blocking)
        rc = send_commands(c, n, q);
    else
        for (i = 0; i < n && rc == TSLOCK_OK; i++)
            if (redisAppendCommandArgv(c->ctx, q[i].argc, q[i].argv, NULL)
                != REDIS_OK)
                rc = tslock__io_failure(c, tslock_step_name(q[i].step));
    if (!blocking)
        tslock__sigpipe_hold(&guard);
    for (i = 0; i < n && rc == TSLOCK_OK; i++) {
        void *r = NULL;
        if (redisGetReply(c->ctx, &r) != REDIS_OK || r == NULL) {
            tslock__free_replies(i, out);
            rc = tslock__io_failure(c, tslock_step_name(q[i].step));
        } else {
            out[i] = r;
        }
    }
    if (!blocking)
        tslock__sigpipe_release(&guard);
    return rc;
}

int tslock__pipeline(tslock_client *c, const char *key, int n,
                     const struct tslock__queued *q, redisReply **out)
{
    int i, rc = tslock__check_usable(c);

    for (i = 0; i < n; i++)
        out[i] = NULL;
    if (rc != TSLOCK_OK)
        return rc;
    /* Every hook first: a stop leaves nothing half sent. */
    for (i = 0; i < n; i++)
        if (c->hook != NULL && c->hook(c, q[i].step, key, c->hook_ud) != 0)
            return tslock__fail(c, TSLOCK_EHOOK, "step hook stopped %s on '%s'",
                                tslock_step_name(q[i].step), key);
    return send_and_read(c, n, q, out);
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

int tslock__reply_error(tslock_client *c, const char *what, const redisReply *r)
{
    int code = TSLOCK_ESERVER;

    /*
     * Servers before 2.8 say "ERR Operation against a key holding the
     * wrong kind of value", without the WRONGTYPE prefix; older servers
     * also wrap a script's error in "ERR Error running script".
     */
    if (strstr(r->str, "WRONGTYPE") != NULL
        || strstr(r->str, "wrong kind of value") != NULL)
        code = TSLOCK_EWRONGTYPE;
    else if (strncmp(r->str, "NOAUTH", 6) == 0
             || strncmp(r->str, "WRONGPASS", 9) == 0
             || strncmp(r->str, "ERR operation not permitted", 27) == 0)
        code = TSLOCK_EAUTH;
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
