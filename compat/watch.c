/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watch.c - the token scheme on servers with WATCH but no Lua (Redis
 * 2.2 - 2.4): compare the lock key inside WATCH and change it in
 * MULTI/EXEC, which the server refuses (nil) if the key changed; and the
 * token acquire of those servers: WATCH, check absent, MULTI, SET,
 * EXPIRE in whole seconds rounded up, EXEC.  Built on transaction.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

/*
 * WATCH the lock key and GET it, in one round trip; with line not NULL
 * (a release that wakes one waiter), read the first entries of the line
 * of waiters in it too.
 */
static int watch_get_line(tslock_lock *l, redisReply **value, redisReply **line)
{
    const char *keys[1] = {l->key};
    const char *get[2] = {"GET", l->key};
    const char *zrange[4] = {"ZRANGE", l->queue_key, "0", "3"};
    const struct tslock__queued q[2] = {{TSLOCK_STEP_GET, 2, get},
                                        {TSLOCK_STEP_ZRANGE, 4, zrange}};
    redisReply *r[2] = {NULL, NULL};
    int rc = tslock__watch_read(l, 1, keys, line != NULL ? 2 : 1, q, r);

    *value = r[0];
    if (line != NULL)
        *line = r[1];
    return rc;
}

static int watch_get(tslock_lock *l, redisReply **value)
{
    return watch_get_line(l, value, NULL);
}

/*
 * guarded_watch_once's EXEC came back nil: the key changed after WATCH,
 * nothing ran, and it is to be read again (at most WATCH_CHANGES_MAX
 * times in all).
 */
#define WATCH_CHANGED     1
#define WATCH_CHANGES_MAX 4

/*
 * The key did not hold our value.  UNWATCH goes out anyway, so it takes
 * a GET with it: a GETSET that lost a takeover writes its stamp over ours
 * and then puts ours back (race k of doc/races.md), and if ours is back
 * by now, the hold stands and the operation is tried again.  Otherwise
 * the loss stands, as of this last look.
 */
static int unwatch_and_look_again(tslock_lock *l, const char *expect,
                                  int lost_rc)
{
    const char *unwatch[1] = {"UNWATCH"}, *get[2] = {"GET", l->key};
    const struct tslock__queued q[2] = {{TSLOCK_STEP_UNWATCH, 1, unwatch},
                                        {TSLOCK_STEP_GET, 2, get}};
    char keep[TSLOCK__ERRSTR_SIZE];
    redisReply *r[2] = {NULL, NULL};
    int back;

    memcpy(keep, l->client->errstr, sizeof(keep));
    if (tslock__pipeline(l->client, l->key, 2, q, r) != TSLOCK_OK) {
        memcpy(l->client->errstr, keep, sizeof(keep));
        return lost_rc; /* the loss seen is what we know */
    }
    back = r[1] != NULL && r[1]->type == REDIS_REPLY_STRING
           && strcmp(r[1]->str, expect) == 0;
    tslock__free_replies(2, r);
    if (back)
        return WATCH_CHANGED;
    memcpy(l->client->errstr, keep, sizeof(keep));
    return lost_rc;
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

/*
 * The first classic listening entry of the line, or NULL (fair.c's
 * members).  A sharded listener ('s') is not woken alone here: the
 * transaction's announcement is a classic PUBLISH (transaction.c), which
 * it hears on the key's channel with every other waiter.
 */
static const char *first_listener(const redisReply *line)
{
    size_t i;

    for (i = 0;
         line != NULL && line->type == REDIS_REPLY_ARRAY && i < line->elements;
         i++) {
        const redisReply *e = line->element[i];
        if (e->type == REDIS_REPLY_STRING && TSLOCK__REPLY_LEN(e) > 0
            && e->str[TSLOCK__REPLY_LEN(e) - 1] == 'w')
            return e->str;
    }
    return NULL;
}

/*
 * MULTI, DEL, PUBLISH, EXEC.  The announcement goes to the first
 * listening waiter of the line alone, on its own channel (the prefix and
 * its entry, sent as they are), or on the key's channel when the line
 * has none.
 */
static int del_transaction(tslock_lock *l, const char *wake, redisReply **out)
{
    const char *del[2] = {"DEL", l->key}, *publish[3];
    struct tslock__queued q[2] = {{TSLOCK_STEP_DEL, 2, del}};
    int n = 1 + tslock__publish_queued(l, publish, &q[1]);
    char *channel = NULL;
    int rc;

    if (n == 2 && wake != NULL) {
        size_t size = strlen(l->wake_prefix) + strlen(wake) + 1;
        if ((channel = malloc(size)) == NULL)
            return tslock__fail(l->client, TSLOCK_ENOMEM,
                                "no memory for a wake channel");
        snprintf(channel, size, "%s%s", l->wake_prefix, wake);
        publish[1] = channel;
    }
    rc = tslock__transaction(l, n, q, out);
    free(channel);
    return rc;
}

static int guarded_watch_once(tslock_lock *l, enum tslock__guarded_op op,
                              const char *expect, const char *arg,
                              int check_lease, const char *verb)
{
    static const tslock_step steps[] = {TSLOCK_STEP_DEL, TSLOCK_STEP_SET,
                                        TSLOCK_STEP_EXPIRE};
    char secs[24], wake[40] = "";
    redisReply *r = NULL, *line = NULL;
    int rc = watch_get_line(
        l, &r, op == GUARDED_DEL && tslock__wakes_one(l) ? &line : NULL);
    const char *first;

    if (rc != TSLOCK_OK)
        return rc;
    rc = tslock__guard_compare(l, r, expect, verb);
    if ((first = first_listener(line)) != NULL)
        snprintf(wake, sizeof(wake), "%s", first);
    freeReplyObject(r);
    if (line != NULL)
        freeReplyObject(line);
    r = NULL;
    if (rc == TSLOCK_ELOST && (!check_lease || tslock__lease_runs(l)))
        return unwatch_and_look_again(l, expect, rc);
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
    rc = op == GUARDED_DEL ? del_transaction(l, wake[0] ? wake : NULL, &r)
                           : transaction(l, 1, &steps[op], &arg, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL)
        rc = WATCH_CHANGED;
    else if (r->element[0]->type == REDIS_REPLY_ERROR)
        rc = tslock__reply_error(l->client, tslock_step_name(steps[op]),
                                 r->element[0]);
    else if (r->element[0]->type == REDIS_REPLY_INTEGER
             && r->element[0]->integer != 1)
        rc = tslock__guard_lost(l, verb, "the key vanished before EXEC");
    /*
     * The woken waiter was heard by no subscriber (it died): drop its
     * entry and announce on the key's channel, so every waiter tries.
     * One more round trip, only after a waiter died.
     */
    if (rc == TSLOCK_OK && wake[0] && r->elements == 2
        && r->element[1]->type == REDIS_REPLY_INTEGER
        && r->element[1]->integer == 0 && l->client->cluster == NULL)
        tslock__line_drop(l, wake, 1);
    freeReplyObject(r);
    return rc;
}

/*
 * Again from the WATCH when the key's cluster slot moved under it, or
 * when the key changed between WATCH and EXEC.  A change is not a loss:
 * a GETSET that lost a takeover writes its own stamp and then puts ours
 * back, so the key can change and still be ours (race k of
 * doc/races.md).  Reading it again tells; only a key that keeps changing
 * through every try is reported lost.
 */
int tslock__guarded_watch(tslock_lock *l, enum tslock__guarded_op op,
                          const char *expect, const char *arg, int check_lease,
                          const char *verb)
{
    int rc, tries = 0, changes = 0;

    (void)tslock__rewatch(l->client); /* nothing left from before */
    for (;;) {
        rc = guarded_watch_once(l, op, expect, arg, check_lease, verb);
        if (tslock__rewatch(l->client) && ++tries < TSLOCK__REWATCH_MAX)
            continue;
        if (rc != WATCH_CHANGED)
            return rc;
        if (++changes == WATCH_CHANGES_MAX)
            return tslock__guard_lost(
                l, verb, "the key changed between WATCH and EXEC every time");
    }
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
