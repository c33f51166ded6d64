/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rawcmd.c - commands on a raw hiredis connection, plain or TLS: hiredis
 * formats them, the library's tslock_conn_* calls carry them, so the
 * tool's own connections (survey, watch, check, the races) work over
 * rediss:// as the library's do.
 */
#include <stdarg.h>
#include <stdio.h>

#include "hiredis_compat.h"

#include <tslock.h>

#include "rawcmd.h"

redisReply *cli_raw_command_argv(redisContext *ctx, int argc, const char **argv,
                                 const size_t *lens)
{
    char *cmd = NULL;
    void *r = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens);

    if (len < 0 || cmd == NULL) {
        snprintf(ctx->errstr, sizeof(ctx->errstr), "out of memory");
        return NULL;
    }
    if (tslock_conn_write(ctx, cmd, (size_t)len) != TSLOCK_OK
        || tslock_conn_get_reply(ctx, &r) != TSLOCK_OK)
        r = NULL;
    tslock__redis_free_command(cmd);
    return r;
}

static int raw_vsend(redisContext *ctx, const char *fmt, va_list ap)
{
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap), rc;

    if (len < 0 || cmd == NULL) {
        snprintf(ctx->errstr, sizeof(ctx->errstr), "out of memory");
        return -1;
    }
    rc = tslock_conn_write(ctx, cmd, (size_t)len);
    tslock__redis_free_command(cmd);
    return rc == TSLOCK_OK ? 0 : -1;
}

redisReply *cli_raw_command(redisContext *ctx, const char *fmt, ...)
{
    void *r = NULL;
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = raw_vsend(ctx, fmt, ap);
    va_end(ap);
    if (rc != 0 || tslock_conn_get_reply(ctx, &r) != TSLOCK_OK)
        return NULL;
    return r;
}

int cli_raw_append(redisContext *ctx, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = raw_vsend(ctx, fmt, ap);
    va_end(ap);
    return rc == 0 ? REDIS_OK : REDIS_ERR;
}
