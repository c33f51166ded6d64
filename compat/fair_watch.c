/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fair_watch.c - the line of waiters on servers with WATCH but no Lua
 * (Redis 2.2 - 2.4): WATCH the key, read it with the line, then drop
 * lapsed waiters and join, refresh or take the key in one MULTI/EXEC,
 * which the server refuses if the key changed.  Only the key is watched:
 * every write to the line is one waiter's own entry or a drop of a lapsed
 * one, harmless to repeat, and refusing the head's attempt for every
 * other waiter's refresh would starve it.  Waiters that join at the same
 * moment may draw the same arrival number; the server orders them by
 * entry.  The keys and rules are those of the script in proto/scripts.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

#define MAX_DROPS 8                   /* lapsed waiters dropped per attempt */
#define MAX_CMDS  (2 * MAX_DROPS + 6) /* within TSLOCK__MAX_QUEUED */

/* What the reads under WATCH found. */
struct queue_view {
    redisReply *dead, *queue, *value, *ttl, *seq, *alive;
    int queued;       /* our id is in the queue */
    const char *head; /* the first live waiter, or NULL */
};

#define N_READS 7

/* WATCH the four keys and read them in one round trip. */
static int watch_and_read(tslock_lock *l, const char *member, int fair,
                          const char *now, redisReply **r)
{
    const char *watch[2] = {"WATCH", l->key};
    const char *dead[7] = {"ZRANGEBYSCORE", l->alive_key, "-inf", now,
                           "LIMIT",         "0",          "8"};
    /*
     * In fair mode the first nine entries, to find the first live one
     * past the lapsed ones this attempt drops (at most eight).
     */
    const char *queue[4] = {"ZRANGE", l->queue_key, "0", fair ? "8" : "0"};
    const char *get[2] = {"GET", l->key}, *ttl[2] = {"TTL", l->key};
    const char *seq[2] = {"GET", l->seq_key};
    const char *alive[3] = {"ZSCORE", l->alive_key, member};
    const struct tslock__queued q[N_READS] = {
        {TSLOCK_STEP_WATCH, 2, watch},  {TSLOCK_STEP_ZRANGEBYSCORE, 7, dead},
        {TSLOCK_STEP_ZRANGE, 4, queue}, {TSLOCK_STEP_GET, 2, get},
        {TSLOCK_STEP_TTL, 2, ttl},      {TSLOCK_STEP_GET, 2, seq},
        {TSLOCK_STEP_ZSCORE, 3, alive}};
    int i, rc = tslock__pipeline(l->client, l->key, N_READS, q, r);

    if (rc != TSLOCK_OK)
        return rc;
    for (i = 0; i < N_READS && rc == TSLOCK_OK; i++)
        if (r[i]->type == REDIS_REPLY_ERROR)
            rc = tslock__reply_error(l->client, q[i].argv[0], r[i]);
    if (rc == TSLOCK_OK
        && (r[1]->type != REDIS_REPLY_ARRAY || r[2]->type != REDIS_REPLY_ARRAY
            || r[4]->type != REDIS_REPLY_INTEGER))
        rc = tslock__unexpected(l->client, "fair queue reads",
                                "two arrays and a TTL", r[1]);
    if (rc != TSLOCK_OK) {
        tslock__free_replies(N_READS, r);
        tslock__unwatch(l);
    }
    return rc;
}

static int is_dead(const redisReply *dead, const char *id)
{
    size_t i;

    for (i = 0; i < dead->elements; i++)
        if (strcmp(dead->element[i]->str, id) == 0)
            return 1;
    return 0;
}

static void read_view(redisReply **r, struct queue_view *v)
{
    size_t i;

    v->dead = r[1];
    v->queue = r[2];
    v->value = r[3];
    v->ttl = r[4];
    v->seq = r[5];
    v->alive = r[6];
    /* Our liveness entry is written and dropped with our place. */
    v->queued = v->alive->type == REDIS_REPLY_STRING;
    v->head = NULL;
    for (i = 0; i < v->queue->elements && v->head == NULL; i++)
        if (!is_dead(v->dead, v->queue->element[i]->str))
            v->head = v->queue->element[i]->str;
}

/* Queue "STEP key member-or-arg [arg]" into q[*n]. */
static void put(struct tslock__queued *q, const char *(*argv)[4], int *n,
                tslock_step step, int argc, const char *a0, const char *a1,
                const char *a2, const char *a3)
{
    argv[*n][0] = a0;
    argv[*n][1] = a1;
    argv[*n][2] = a2;
    argv[*n][3] = a3;
    q[*n].step = step;
    q[*n].argc = argc;
    q[*n].argv = argv[*n];
    (*n)++;
}

/*
 * One attempt.  A waiter already in line whose entry is fresh (more than
 * half its bound left) and who cannot take the key writes nothing: every
 * write by a waiter would abort the head's transaction, which WATCHes
 * the same keys.  Returns OK (taken), EBUSY, 1 (EXEC refused: the queue
 * changed under us), or a code.
 */
static int attempt(tslock_lock *l, const char *member, int fair, int64_t now,
                   int64_t alive_until, int64_t idle_ms, int64_t *holder_ttl_ms)
{
    char now_s[24], until[24], secs[24], idle[24], next_seq[24];
    struct tslock__queued q[MAX_CMDS];
    const char *argv[MAX_CMDS][4];
    struct queue_view v;
    redisReply *r[N_READS], *done = NULL;
    int n = 0, take, fresh, rc;
    size_t i;

    snprintf(now_s, sizeof(now_s), "(%lld", (long long)now);
    snprintf(until, sizeof(until), "%lld", (long long)alive_until);
    tslock__seconds_up(secs, sizeof(secs), l->ttl_ms);
    tslock__seconds_up(idle, sizeof(idle), idle_ms);
    if ((rc = watch_and_read(l, member, fair, now_s, r)) != TSLOCK_OK)
        return rc;
    read_view(r, &v);
    fresh = v.queued && v.alive->type == REDIS_REPLY_STRING
            && atoll(v.alive->str) - now > (alive_until - now) / 2;
    snprintf(next_seq, sizeof(next_seq), "%lld",
             v.seq->type == REDIS_REPLY_STRING ? atoll(v.seq->str) + 1 : 1);
    *holder_ttl_ms = v.ttl->integer > 0 ? v.ttl->integer * 1000 : -1;
    take = v.value->type == REDIS_REPLY_NIL
           && (!fair || v.head == NULL || strcmp(v.head, member) == 0);
    if (!take && fresh && v.dead->elements == 0) {
        tslock__free_replies(N_READS, r);
        tslock__unwatch(l);
        return TSLOCK_EBUSY;
    }
    for (i = 0; i < v.dead->elements && i < MAX_DROPS; i++) {
        const char *id = v.dead->element[i]->str;
        put(q, argv, &n, TSLOCK_STEP_ZREM, 3, "ZREM", l->queue_key, id, NULL);
        put(q, argv, &n, TSLOCK_STEP_ZREM, 3, "ZREM", l->alive_key, id, NULL);
    }
    if (take) {
        put(q, argv, &n, TSLOCK_STEP_SET, 3, "SET", l->key, l->value, NULL);
        put(q, argv, &n, TSLOCK_STEP_EXPIRE, 3, "EXPIRE", l->key, secs, NULL);
        put(q, argv, &n, TSLOCK_STEP_ZREM, 3, "ZREM", l->queue_key, member,
            NULL);
        put(q, argv, &n, TSLOCK_STEP_ZREM, 3, "ZREM", l->alive_key, member,
            NULL);
    } else {
        if (!v.queued) {
            put(q, argv, &n, TSLOCK_STEP_INCR, 2, "INCR", l->seq_key, NULL,
                NULL);
            put(q, argv, &n, TSLOCK_STEP_ZADD, 4, "ZADD", l->queue_key,
                next_seq, member);
        }
        put(q, argv, &n, TSLOCK_STEP_ZADD, 4, "ZADD", l->alive_key, until,
            member);
        put(q, argv, &n, TSLOCK_STEP_EXPIRE, 3, "EXPIRE", l->queue_key, idle,
            NULL);
        put(q, argv, &n, TSLOCK_STEP_EXPIRE, 3, "EXPIRE", l->alive_key, idle,
            NULL);
        put(q, argv, &n, TSLOCK_STEP_EXPIRE, 3, "EXPIRE", l->seq_key, idle,
            NULL);
    }
    rc = tslock__transaction(l, n, q, &done);
    tslock__free_replies(N_READS, r);
    if (rc != TSLOCK_OK)
        return rc;
    for (i = 0; rc == TSLOCK_OK && done->type == REDIS_REPLY_ARRAY
                && i < done->elements;
         i++)
        if (done->element[i]->type == REDIS_REPLY_ERROR)
            rc = tslock__reply_error(l->client, q[i].argv[0], done->element[i]);
    if (rc == TSLOCK_OK && done->type != REDIS_REPLY_ARRAY)
        rc = 1; /* refused: someone changed the queue or the key */
    else if (rc == TSLOCK_OK)
        rc = take ? TSLOCK_OK : TSLOCK_EBUSY;
    freeReplyObject(done);
    return rc;
}

/* A refused transaction is made again at once, a few times. */
int tslock__fair_try_watch(tslock_lock *l, const char *member, int fair,
                           int64_t now, int64_t alive_until, int64_t idle_ms,
                           int64_t *holder_ttl_ms)
{
    int tries, rc = 1;

    for (tries = 0; rc == 1 && tries < 4; tries++)
        rc = attempt(l, member, fair, now, alive_until, idle_ms, holder_ttl_ms);
    return rc == 1 ? TSLOCK_EBUSY : rc;
}
