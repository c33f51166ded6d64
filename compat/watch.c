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

    return tslock__command(l->client, step, l->key, 1, argv, r);
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

int tslock__watch_read(tslock_lock *l, int nkeys, const char *const *keys,
                       int nreads, const struct tslock__queued *reads,
                       redisReply **out)
{
    const char *watch[3] = {"WATCH", keys[0], nkeys > 1 ? keys[1] : NULL};
    struct tslock__queued q[1 + TSLOCK__MAX_READS];
    redisReply *r[1 + TSLOCK__MAX_READS];
    int i, rc;

    q[0].step = TSLOCK_STEP_WATCH;
    q[0].argc = nkeys > 1 ? 3 : 2;
    q[0].argv = watch;
    for (i = 0; i < nreads; i++)
        q[1 + i] = reads[i];
    rc = tslock__pipeline(l->client, l->key, 1 + nreads, q, r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r[0]->type != REDIS_REPLY_STATUS)
        rc = tslock__unexpected(l->client, "WATCH", "+OK", r[0]);
    for (i = 0; rc == TSLOCK_OK && i < nreads; i++)
        if (r[1 + i]->type == REDIS_REPLY_ERROR)
            rc = tslock__reply_error(l->client, reads[i].argv[0], r[1 + i]);
    if (rc != TSLOCK_OK) {
        tslock__free_replies(1 + nreads, r);
        tslock__unwatch(l);
        return rc;
    }
    freeReplyObject(r[0]);
    for (i = 0; i < nreads; i++)
        out[i] = r[1 + i];
    return TSLOCK_OK;
}

/* WATCH the lock key and GET it, in one round trip. */
static int watch_get(tslock_lock *l, redisReply **value)
{
    const char *keys[1] = {l->key};
    const char *get[2] = {"GET", l->key};
    const struct tslock__queued q[1] = {{TSLOCK_STEP_GET, 2, get}};

    return tslock__watch_read(l, 1, keys, 1, q, value);
}

int tslock__transaction(tslock_lock *l, int n, const struct tslock__queued *q,
                        redisReply **out)
{
    const char *multi[1] = {"MULTI"}, *exec[1] = {"EXEC"};
    struct tslock__queued all[2 + TSLOCK__MAX_QUEUED];
    redisReply *r[2 + TSLOCK__MAX_QUEUED];
    int i, rc;

    *out = NULL;
    if (n > TSLOCK__MAX_QUEUED)
        return tslock__fail(l->client, TSLOCK_EINVAL,
                            "%d commands for one transaction", n);
    all[0].step = TSLOCK_STEP_MULTI;
    all[0].argc = 1;
    all[0].argv = multi;
    for (i = 0; i < n; i++)
        all[1 + i] = q[i];
    all[1 + n].step = TSLOCK_STEP_EXEC;
    all[1 + n].argc = 1;
    all[1 + n].argv = exec;
    /* MULTI, the commands and EXEC in one round trip. */
    rc = tslock__pipeline(l->client, l->key, n + 2, all, r);
    if (rc == TSLOCK_EHOOK)
        tslock__unwatch(l); /* nothing was sent after WATCH */
    if (rc != TSLOCK_OK)
        return rc;
    if (r[0]->type != REDIS_REPLY_STATUS)
        rc = tslock__unexpected(l->client, "MULTI", "+OK", r[0]);
    for (i = 0; rc == TSLOCK_OK && i < n; i++)
        if (r[1 + i]->type == REDIS_REPLY_ERROR) { /* EXEC aborts then */
            rc = tslock__reply_error(l->client, q[i].argv[0], r[1 + i]);
            if (q[i].step == TSLOCK_STEP_PUBLISH)
                (void)tslock__publish_refused(l->client, r[1 + i]);
        }
    if (rc == TSLOCK_OK && r[1 + n]->type == REDIS_REPLY_ERROR)
        rc = tslock__reply_error(l->client, "EXEC", r[1 + n]);
    else if (rc == TSLOCK_OK && r[1 + n]->type != REDIS_REPLY_NIL
             && (r[1 + n]->type != REDIS_REPLY_ARRAY
                 || r[1 + n]->elements != (size_t)n))
        rc = tslock__unexpected(l->client, "EXEC", "an array or nil", r[1 + n]);
    if (rc == TSLOCK_OK) {
        *out = r[1 + n];
        r[1 + n] = NULL;
    }
    tslock__free_replies(n + 2, r);
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

/* MULTI, DEL, PUBLISH (the release's announcement), EXEC. */
static int del_transaction(tslock_lock *l, redisReply **out)
{
    const char *del[2] = {"DEL", l->key}, *publish[3];
    struct tslock__queued q[2] = {{TSLOCK_STEP_DEL, 2, del}};
    int n = 1 + tslock__publish_queued(l, publish, &q[1]);

    return tslock__transaction(l, n, q, out);
}

void tslock__seconds_up(char *buf, size_t size, int64_t ms)
{
    snprintf(buf, size, "%lld", (long long)((ms + 999) / 1000));
}

static int guarded_watch_once(tslock_lock *l, enum tslock__guarded_op op,
                              const char *expect, const char *arg,
                              int check_lease, const char *verb)
{
    static const tslock_step steps[] = {TSLOCK_STEP_DEL, TSLOCK_STEP_SET,
                                        TSLOCK_STEP_EXPIRE};
    char secs[24];
    redisReply *r = NULL;
    int rc = watch_get(l, &r);

    if (rc != TSLOCK_OK)
        return rc;
    rc = tslock__guard_compare(l, r, expect, verb);
    freeReplyObject(r);
    r = NULL;
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
    rc = op == GUARDED_DEL ? del_transaction(l, &r)
                           : transaction(l, 1, &steps[op], &arg, &r);
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

/* Again from the WATCH when the key's cluster slot moved under it. */
int tslock__guarded_watch(tslock_lock *l, enum tslock__guarded_op op,
                          const char *expect, const char *arg, int check_lease,
                          const char *verb)
{
    int rc, tries = 0;

    (void)tslock__rewatch(l->client); /* nothing left from before */
    do
        rc = guarded_watch_once(l, op, expect, arg, check_lease, verb);
    while (tslock__rewatch(l->client) && ++tries < TSLOCK__REWATCH_MAX);
    return rc;
}

static int token_acquire_watch_once(tslock_lock *l, int64_t *holder_pttl)
{
    static const tslock_step steps[] = {TSLOCK_STEP_SET, TSLOCK_STEP_EXPIRE};
    char secs[24];
    const char *args[2] = {l->value, secs};
    redisReply *r = NULL;
    size_t i;
    int rc = watch_get(l, &r);

    *holder_pttl = -1;
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type != REDIS_REPLY_NIL)
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
    /* An error inside EXEC means SET or EXPIRE did not happen: not held. */
    for (i = 0; rc == TSLOCK_OK && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_ERROR)
            rc = tslock__reply_error(l->client, tslock_step_name(steps[i]),
                                     r->element[i]);
    freeReplyObject(r);
    return rc;
}

int tslock__token_acquire_watch(tslock_lock *l, int64_t *holder_pttl)
{
    int rc, tries = 0;

    (void)tslock__rewatch(l->client); /* nothing left from before */
    do
        rc = token_acquire_watch_once(l, holder_pttl);
    while (tslock__rewatch(l->client) && ++tries < TSLOCK__REWATCH_MAX);
    return rc;
}
