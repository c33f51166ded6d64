/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bridge_watch.c - the bridge scheme's claim and proof on servers with
 * WATCH but no Lua (Redis 2.2 - 2.4).  The stamp, its TTL and the owner
 * token are written by one MULTI/EXEC (SETEX, whole seconds rounded up),
 * which the server refuses if the lock key changed after WATCH.  Each
 * takes two round trips: WATCH with the reads, then MULTI ... EXEC.
 */
#include <string.h>

#include "compat.h"

static int bridge_claim_watch_once(tslock_lock *l, const char *stamp,
                                   int64_t ttl_ms)
{
    const char *keys[1] = {l->key};
    char secs[24];
    const char *setex_key[4] = {"SETEX", l->key, secs, stamp};
    const char *setex_owner[4] = {"SETEX", l->owner_key, secs, l->owner_token};
    const struct tslock__queued q[2] = {{TSLOCK_STEP_SETEX, 4, setex_key},
                                        {TSLOCK_STEP_SETEX, 4, setex_owner}};
    const char *get[2] = {"GET", l->key};
    const struct tslock__queued read[1] = {{TSLOCK_STEP_GET, 2, get}};
    redisReply *r = NULL;
    size_t i;
    int rc = tslock__watch_read(l, 1, keys, 1, read, &r);

    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_STRING)
        rc = tslock__bridge_may_take(l, r); /* OK when expired */
    else if (r->type != REDIS_REPLY_NIL)
        rc = tslock__unexpected(l->client, "GET", "a bulk string or nil", r);
    freeReplyObject(r);
    r = NULL;
    if (rc != TSLOCK_OK) {
        tslock__unwatch(l);
        return rc;
    }
    tslock__seconds_up(secs, sizeof(secs), ttl_ms);
    rc = tslock__transaction(l, 2, q, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return 1; /* another client wrote the key after our GET */
    }
    for (i = 0; i < r->elements && rc == TSLOCK_OK; i++)
        if (r->element[i]->type == REDIS_REPLY_ERROR)
            rc = tslock__reply_error(l->client, "SETEX", r->element[i]);
    freeReplyObject(r);
    return rc;
}

int tslock__bridge_claim_watch(tslock_lock *l, const char *stamp,
                               int64_t ttl_ms)
{
    int rc, tries = 0;

    (void)tslock__rewatch(l->client); /* nothing left from before */
    do
        rc = bridge_claim_watch_once(l, stamp, ttl_ms);
    while (tslock__rewatch(l->client) && ++tries < TSLOCK__REWATCH_MAX);
    return rc;
}

static int bridge_guard_watch_once(tslock_lock *l, const char *op,
                                   const char *stamp, int64_t ttl_ms,
                                   int check_lease, const char *verb)
{
    const char *keys[2] = {l->key, l->owner_key};
    char secs[24];
    const char *del[3] = {"DEL", l->key, l->owner_key};
    const char *setex[4] = {"SETEX", l->key, secs, stamp};
    const char *expire[3] = {"EXPIRE", l->owner_key, secs}, *publish[3];
    struct tslock__queued q[2] = {{TSLOCK_STEP_DEL, 3, del},
                                  {TSLOCK_STEP_EXPIRE, 3, expire}};
    int set = strcmp(op, "set") == 0, n = set ? 2 : 1;
    struct tslock__proof_reads b;
    redisReply *r = NULL, *proof[3];
    size_t i;
    int rc;

    tslock__bridge_proof_reads(l, &b);
    rc = tslock__watch_read(l, 2, keys, 3, b.q, proof);
    if (rc != TSLOCK_OK)
        return rc;
    rc = tslock__bridge_judge(l, proof, verb);
    tslock__free_replies(3, proof);
    if (rc == TSLOCK_OK && check_lease && !tslock__lease_runs(l))
        rc = tslock__guard_lost(l, verb, "our lease ran out");
    if (rc != TSLOCK_OK || strcmp(op, "read") == 0) {
        tslock__unwatch(l);
        return rc;
    }
    if (set) {
        q[0].step = TSLOCK_STEP_SETEX;
        q[0].argc = 4;
        q[0].argv = setex;
    } else {
        n += tslock__publish_queued(l, publish, &q[1]); /* the announcement */
    }
    tslock__seconds_up(secs, sizeof(secs), ttl_ms);
    rc = tslock__transaction(l, n, q, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL)
        rc = tslock__guard_lost(l, verb,
                                "the key changed between WATCH and EXEC");
    for (i = 0; rc == TSLOCK_OK && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_ERROR)
            rc = tslock__reply_error(l->client, q[i].argv[0], r->element[i]);
    freeReplyObject(r);
    return rc;
}

int tslock__bridge_guard_watch(tslock_lock *l, const char *op,
                               const char *stamp, int64_t ttl_ms,
                               int check_lease, const char *verb)
{
    int rc, tries = 0;

    (void)tslock__rewatch(l->client); /* nothing left from before */
    do
        rc = bridge_guard_watch_once(l, op, stamp, ttl_ms, check_lease, verb);
    while (tslock__rewatch(l->client) && ++tries < TSLOCK__REWATCH_MAX);
    return rc;
}
