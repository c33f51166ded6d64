/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * naive.c - broken lock variants from the articles, for the race replays.
 * Each is written as the article writes it, with the flaw left in.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "naive.h"
#include "rawcmd.h"

static int step(naive_client *n, const char *name)
{
    return n->hook != NULL ? n->hook(name, n->hook_ud) : 0;
}

static redisReply *cmd(naive_client *n, const char *fmt, const char *key,
                       const char *arg)
{
    redisReply *r = cli_raw_command(n->redis, fmt, key, arg);

    if (r == NULL) {
        fprintf(stderr, "naive client: %s\n", n->redis->errstr);
        exit(2);
    }
    return r;
}

/* Java: Long.parseLong(value) < System.currentTimeMillis(). */
static int java_expired(naive_client *n, const redisReply *r)
{
    return r->type != REDIS_REPLY_STRING
           || strtoll(r->str, NULL, 10) < *n->wall_ms;
}

static int setnx(naive_client *n, const char *key, int64_t ttl_ms)
{
    redisReply *r;
    int won;

    snprintf(n->value, sizeof(n->value), "%" PRId64, *n->wall_ms + ttl_ms + 1);
    if (step(n, "SETNX"))
        return NAIVE_CRASHED;
    r = cmd(n, "SETNX %s %s", key, n->value);
    won = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return won ? NAIVE_HELD : NAIVE_BUSY;
}

/* The step both expiry recoveries share: SETNX, then GET a stale stamp. */
#define SEEN_EXPIRED 2

static int setnx_or_see_expired(naive_client *n, const char *key,
                                int64_t ttl_ms)
{
    redisReply *r;
    int expired, rc = setnx(n, key, ttl_ms);

    if (rc != NAIVE_BUSY)
        return rc;
    if (step(n, "GET"))
        return NAIVE_CRASHED;
    r = cmd(n, "GET %s", key, NULL);
    expired = java_expired(n, r);
    freeReplyObject(r);
    return expired ? SEEN_EXPIRED : NAIVE_BUSY;
}

int naive_del_recovery_acquire(naive_client *n, const char *key, int64_t ttl_ms)
{
    int rc = setnx_or_see_expired(n, key, ttl_ms);

    if (rc != SEEN_EXPIRED)
        return rc;
    if (step(n, "DEL"))
        return NAIVE_CRASHED;
    freeReplyObject(cmd(n, "DEL %s", key, NULL));
    return setnx(n, key, ttl_ms);
}

int naive_unconditional_release(naive_client *n, const char *key)
{
    if (step(n, "DEL"))
        return NAIVE_CRASHED;
    freeReplyObject(cmd(n, "DEL %s", key, NULL));
    return 1;
}

int naive_java_release(naive_client *n, const char *key)
{
    redisReply *r;
    int expired;

    if (step(n, "GET"))
        return NAIVE_CRASHED;
    r = cmd(n, "GET %s", key, NULL);
    expired = java_expired(n, r);
    freeReplyObject(r);
    if (expired)
        return 0;
    return naive_unconditional_release(n, key);
}

int naive_setnx_expire_acquire(naive_client *n, const char *key, int ttl_s)
{
    char secs[16];
    redisReply *r;
    int won;

    snprintf(n->value, sizeof(n->value), "naive-%p", (void *)n);
    if (step(n, "SETNX"))
        return NAIVE_CRASHED;
    r = cmd(n, "SETNX %s %s", key, n->value);
    won = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    if (!won)
        return NAIVE_BUSY;
    if (step(n, "EXPIRE"))
        return NAIVE_CRASHED;
    snprintf(secs, sizeof(secs), "%d", ttl_s);
    freeReplyObject(cmd(n, "EXPIRE %s %s", key, secs));
    return NAIVE_HELD;
}

int naive_blind_getset_acquire(naive_client *n, const char *key, int64_t ttl_ms)
{
    int rc = setnx_or_see_expired(n, key, ttl_ms);

    if (rc != SEEN_EXPIRED)
        return rc;
    if (step(n, "GETSET"))
        return NAIVE_CRASHED;
    snprintf(n->value, sizeof(n->value), "%" PRId64, *n->wall_ms + ttl_ms + 1);
    freeReplyObject(cmd(n, "GETSET %s %s", key, n->value));
    return NAIVE_HELD;
}

int naive_token_get_then_del(naive_client *n, const char *key,
                             const char *token)
{
    redisReply *r;
    int ours;

    if (step(n, "GET"))
        return NAIVE_CRASHED;
    r = cmd(n, "GET %s", key, NULL);
    ours = r->type == REDIS_REPLY_STRING && strcmp(r->str, token) == 0;
    freeReplyObject(r);
    if (!ours)
        return 0;
    return naive_unconditional_release(n, key);
}
