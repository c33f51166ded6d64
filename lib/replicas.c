/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replicas.c - WAIT after a lock's write: how many replicas acknowledged
 * it, which narrows the window in which a failover to a replica loses
 * the lock (tslock_lock_set_replicas(3)).
 */
#include <stdio.h>
#include <string.h>

#include "tslock_int.h"

/*
 * Whether an error reply to WAIT says the server has no WAIT: Redis
 * before 3.0, or a managed service without it (ElastiCache Serverless
 * answers as Redis 7 does a command it lacks; proxies word it their way).
 */
static int wait_missing(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR
           && (strncmp(r->str, "ERR unknown command", 19) == 0
               || strstr(r->str, "wrong number of arguments") != NULL
               || strstr(r->str, "not supported") != NULL
               || strstr(r->str, "nsupported command") != NULL);
}

int tslock__replicas_judge(tslock_lock *l, const redisReply *r)
{
    tslock_client *c = l->client;

    if (wait_missing(r))
        return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                            "lock '%s': waiting for %d replica%s needs WAIT "
                            "(Redis 3.0 or later), which this server does "
                            "not have (an older Redis, or a managed service "
                            "without it, such as ElastiCache Serverless): it "
                            "replied -%.200s; no replica is known to have "
                            "the write",
                            l->key, l->replicas, l->replicas == 1 ? "" : "s",
                            r->str);
    if (r->type != REDIS_REPLY_INTEGER)
        return tslock__unexpected(c, "WAIT", "an integer", r);
    if (r->integer < l->replicas)
        return tslock__fail(c, TSLOCK_EREPLICAS,
                            "lock '%s': %lld of the %d replica%s asked for "
                            "acknowledged the write within %d ms",
                            l->key, (long long)r->integer, l->replicas,
                            l->replicas == 1 ? "" : "s", l->replicas_ms);
    return TSLOCK_OK;
}

int tslock__replicas_wait(tslock_lock *l)
{
    char n[16], ms[16];
    const char *argv[3] = {"WAIT", n, ms};
    redisReply *r = NULL;
    int rc;

    snprintf(n, sizeof(n), "%d", l->replicas);
    snprintf(ms, sizeof(ms), "%d", l->replicas_ms);
    rc = tslock__command(l->client, TSLOCK_STEP_WAIT, l->key, 3, argv, &r);
    if (rc == TSLOCK_OK)
        rc = tslock__replicas_judge(l, r);
    freeReplyObject(r);
    return rc;
}

int tslock_lock_set_replicas(tslock_lock *l, int n, int timeout_ms)
{
    if (l == NULL || n < 0 || timeout_ms < 0 || (n > 0 && timeout_ms == 0))
        return TSLOCK_EINVAL;
    l->replicas = n;
    l->replicas_ms = timeout_ms;
    return TSLOCK_OK;
}
