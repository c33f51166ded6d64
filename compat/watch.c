/*
 * watch.c - optimistic transactions for servers with WATCH but no Lua
 * (Redis 2.2 - 2.4): compare the lock key inside WATCH and change it in
 * MULTI/EXEC, which the server refuses (nil) if the key changed.  Also
 * the token acquire of those servers: WATCH, check absent, MULTI, SET,
 * EXPIRE in whole seconds rounded up, EXEC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tslock_int.h"

static int bare(tslock_lock *l, tslock_step step, redisReply **r)
{
    const char *argv[1] = {tslock_step_name(step)};

    return tslock__command(l->client, step, l->key, 1, argv, NULL, r);
}

/* Leave no WATCH behind on the connection, keeping the first error. */
void tslock__unwatch(tslock_lock *l)
{
    char keep[TSLOCK__ERRSTR_SIZE];
    redisReply *r = NULL;

    if (l->client->broken)
        return;
    memcpy(keep, l->client->errstr, sizeof(keep));
    if (bare(l, TSLOCK_STEP_UNWATCH, &r) == TSLOCK_OK)
        freeReplyObject(r);
    memcpy(l->client->errstr, keep, sizeof(keep));
}

int tslock__watch_keys(tslock_lock *l, int nkeys, const char *const *keys)
{
    const char *argv[3] = {"WATCH", keys[0], nkeys > 1 ? keys[1] : NULL};
    redisReply *r = NULL;
    int rc = tslock__command(l->client, TSLOCK_STEP_WATCH, l->key,
                             nkeys > 1 ? 3 : 2, argv, NULL, &r);

    if (rc == TSLOCK_OK && r->type != REDIS_REPLY_STATUS)
        rc = tslock__unexpected(l->client, "WATCH", "+OK", r);
    freeReplyObject(r);
    return rc;
}

static int watch(tslock_lock *l)
{
    const char *keys[1] = {l->key};

    return tslock__watch_keys(l, 1, keys);
}

int tslock__transaction(tslock_lock *l, int n, const struct tslock__queued *q,
                        redisReply **out)
{
    redisReply *r = NULL;
    int i, rc = bare(l, TSLOCK_STEP_MULTI, &r);

    *out = NULL;
    freeReplyObject(r);
    for (i = 0; rc == TSLOCK_OK && i < n; i++) {
        rc = tslock__command(l->client, q[i].step, l->key, q[i].argc, q[i].argv,
                             NULL, &r);
        if (rc == TSLOCK_OK && r->type == REDIS_REPLY_ERROR)
            rc = tslock__reply_error(l->client, q[i].argv[0], r);
        freeReplyObject(r);
    }
    if (rc != TSLOCK_OK) {
        if (!l->client->broken && bare(l, TSLOCK_STEP_EXEC, &r) == TSLOCK_OK)
            freeReplyObject(r); /* EXEC ends the MULTI either way */
        return rc;
    }
    rc = bare(l, TSLOCK_STEP_EXEC, out);
    if (rc == TSLOCK_OK && (*out)->type != REDIS_REPLY_NIL
        && ((*out)->type != REDIS_REPLY_ARRAY
            || (*out)->elements != (size_t)n)) {
        rc = tslock__unexpected(l->client, "EXEC", "an array or nil", *out);
        freeReplyObject(*out);
        *out = NULL;
    }
    return rc;
}

/* MULTI, "STEP key [arg]" for each step, EXEC. */
static int transaction(tslock_lock *l, int n, const tslock_step *steps,
                       const char *const *args, redisReply **out)
{
    struct tslock__queued q[2];
    const char *argv[2][3];
    int i;

    for (i = 0; i < n && i < 2; i++) {
        argv[i][0] = tslock_step_name(steps[i]);
        argv[i][1] = l->key;
        argv[i][2] = args[i];
        q[i].step = steps[i];
        q[i].argc = args[i] == NULL ? 2 : 3;
        q[i].argv = argv[i];
    }
    return tslock__transaction(l, i, q, out);
}

void tslock__seconds_up(char *buf, size_t size, int64_t ms)
{
    snprintf(buf, size, "%lld", (long long)((ms + 999) / 1000));
}

int tslock__guarded_watch(tslock_lock *l, enum tslock__guarded_op op,
                          const char *expect, const char *arg, int check_lease,
                          const char *verb)
{
    static const tslock_step steps[] = {TSLOCK_STEP_DEL, TSLOCK_STEP_SET,
                                        TSLOCK_STEP_EXPIRE};
    char secs[24];
    redisReply *r = NULL;
    int rc = watch(l);

    if (rc != TSLOCK_OK)
        return rc;
    rc = tslock__key_command(l, TSLOCK_STEP_GET, NULL, &r);
    if (rc == TSLOCK_OK) {
        rc = tslock__guard_compare(l, r, expect, verb);
        freeReplyObject(r);
        r = NULL;
    }
    if (rc == TSLOCK_OK && check_lease && !tslock__lease_runs(l))
        rc = tslock__guard_lost(l, verb, "our lease ran out");
    if (rc != TSLOCK_OK) {
        tslock__unwatch(l);
        return rc;
    }
    if (op == GUARDED_PEXPIRE) {
        tslock__seconds_up(secs, sizeof(secs), strtoll(arg, NULL, 10));
        arg = secs;
    }
    rc = transaction(l, 1, &steps[op], &arg, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL)
        rc = tslock__guard_lost(l, verb,
                                "the key changed between WATCH and EXEC");
    else if (r->element[0]->type == REDIS_REPLY_ERROR)
        rc = tslock__reply_error(l->client, tslock_step_name(steps[op]),
                                 r->element[0]);
    else if (r->element[0]->type == REDIS_REPLY_INTEGER
             && r->element[0]->integer != 1)
        rc = tslock__guard_lost(l, verb, "the key vanished before EXEC");
    freeReplyObject(r);
    return rc;
}

int tslock__token_acquire_watch(tslock_lock *l, int64_t *holder_pttl)
{
    static const tslock_step steps[] = {TSLOCK_STEP_SET, TSLOCK_STEP_EXPIRE};
    char secs[24];
    const char *args[2] = {l->value, secs};
    redisReply *r = NULL;
    int rc = watch(l);

    *holder_pttl = -1;
    if (rc != TSLOCK_OK)
        return rc;
    rc = tslock__key_command(l, TSLOCK_STEP_GET, NULL, &r);
    if (rc == TSLOCK_OK && r->type == REDIS_REPLY_ERROR)
        rc = tslock__reply_error(l->client, "GET", r);
    else if (rc == TSLOCK_OK && r->type != REDIS_REPLY_NIL)
        rc = TSLOCK_EBUSY;
    freeReplyObject(r);
    if (rc != TSLOCK_OK) {
        tslock__unwatch(l);
        return rc;
    }
    tslock__seconds_up(secs, sizeof(secs), l->ttl_ms);
    rc = transaction(l, 2, steps, args, &r);
    if (rc != TSLOCK_OK)
        return rc;
    rc = r->type == REDIS_REPLY_NIL ? TSLOCK_EBUSY /* another raced in */
                                    : TSLOCK_OK;
    freeReplyObject(r);
    return rc;
}
