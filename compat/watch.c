/*
 * watch.c - the token scheme on servers with WATCH but no Lua (Redis
 * 2.2 - 2.4): compare the lock key inside WATCH and change it in
 * MULTI/EXEC, which the server refuses (nil) if the key changed; and the
 * token acquire of those servers: WATCH, check absent, MULTI, SET,
 * EXPIRE in whole seconds rounded up, EXEC.  Built on transaction.c.
 */
#include <stdlib.h>
#include <string.h>

#include "compat.h"

/* WATCH the lock key and GET it, in one round trip. */
static int watch_get(tslock_lock *l, redisReply **value)
{
    const char *keys[1] = {l->key};
    const char *get[2] = {"GET", l->key};
    const struct tslock__queued q[1] = {{TSLOCK_STEP_GET, 2, get}};

    return tslock__watch_read(l, 1, keys, 1, q, value);
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
