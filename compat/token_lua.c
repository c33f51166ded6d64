/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * token_lua.c - the token acquire of servers with Lua but without
 * SET ... NX PX (Redis 2.6.0 - 2.6.11): one script does SETNX and
 * PEXPIRE, so no client ever sees the key without its TTL.
 */
#include <stdio.h>

#include "compat.h"

int tslock__token_acquire_lua(tslock_lock *l, int64_t *holder_pttl)
{
    char ms[24];
    const char *args[2] = {l->value, ms};
    redisReply *r = NULL;
    int rc;

    *holder_pttl = -1;
    snprintf(ms, sizeof(ms), "%lld", (long long)l->ttl_ms);
    rc = tslock__script_run(l->client, SCRIPT_SETNX_PEXPIRE, l->key, 2, args,
                            &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_INTEGER
        || r->element[1]->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "SETNX+PEXPIRE script",
                                "an array of two integers", r);
    else if (r->element[0]->integer == 1)
        rc = TSLOCK_OK;
    else {
        *holder_pttl = r->element[1]->integer;
        rc = TSLOCK_EBUSY;
    }
    freeReplyObject(r);
    return rc;
}
