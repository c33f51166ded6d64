/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rawcmd.h - commands on a raw connection, plain or TLS (the library's
 * tslock_conn_* calls): as redisCommand(), redisCommandArgv() and
 * redisAppendCommand() (sent at once; read the replies with
 * tslock_conn_get_reply()).  Free the connection with tslock_conn_free().
 */
#ifndef TSLOCK_RAWCMD_H
#define TSLOCK_RAWCMD_H

#include <stddef.h>

struct redisContext;
struct redisReply;

struct redisReply *cli_raw_command(struct redisContext *ctx, const char *fmt,
                                   ...);
struct redisReply *cli_raw_command_argv(struct redisContext *ctx, int argc,
                                        const char **argv, const size_t *lens);
int cli_raw_append(struct redisContext *ctx, const char *fmt, ...);

#endif
