/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shared_watch.c - shared holds, semaphore permits and the exclusive side
 * of a read-write lock on servers with WATCH but no Lua (Redis 2.2 -
 * 2.4): read the lock key, its holders and the intent key under WATCH,
 * decide here, then write in one MULTI/EXEC, which the server refuses if
 * any of them changed.  The rules are the scripts' in proto/scripts.c;
 * TTLs are whole seconds, rounded up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

#define N_READS      5 /* WATCH, GET key, ZRANGE holders, GET intent, TTL key */
#define TRIES        4 /* refused transactions made again at once */
#define CHANGE_TRIES 200 /* a release or extension tries harder */

/* What the reads under WATCH found. */
struct view {
    redisReply *r[N_READS];
    const redisReply *value, *all, *intent;
    long long ttl; /* the lock key's, in seconds */
    size_t n;      /* entries in the holders set */
    int marked;    /* the key is absent or the latest entry's stamp */
};

static const char *entry(const struct view *v, size_t i)
{
    return v->all->element[2 * i]->str;
}

static int64_t score(const struct view *v, size_t i)
{
    return (int64_t)strtod(v->all->element[2 * i + 1]->str, NULL);
}

static int read_view(tslock_lock *l, struct view *v)
{
    const char *watch[4] = {"WATCH", l->key, l->holders_key, l->intent_key};
    const char *get[2] = {"GET", l->key};
    const char *all[5] = {"ZRANGE", l->holders_key, "0", "-1", "WITHSCORES"};
    const char *intent[2] = {"GET", l->intent_key};
    const char *ttl[2] = {"TTL", l->key};
    const struct tslock__queued q[N_READS] = {{TSLOCK_STEP_WATCH, 4, watch},
                                              {TSLOCK_STEP_GET, 2, get},
                                              {TSLOCK_STEP_ZRANGE, 5, all},
                                              {TSLOCK_STEP_GET, 2, intent},
                                              {TSLOCK_STEP_TTL, 2, ttl}};
    int i, rc = tslock__pipeline(l->client, l->key, N_READS, q, v->r);

    if (rc != TSLOCK_OK)
        return rc;
    for (i = 0; i < N_READS && rc == TSLOCK_OK; i++)
        if (v->r[i]->type == REDIS_REPLY_ERROR)
            rc = tslock__reply_error(l->client, q[i].argv[0], v->r[i]);
    if (rc == TSLOCK_OK
        && (v->r[2]->type != REDIS_REPLY_ARRAY || v->r[2]->elements % 2 != 0
            || v->r[4]->type != REDIS_REPLY_INTEGER
            || (v->r[1]->type != REDIS_REPLY_NIL
                && v->r[1]->type != REDIS_REPLY_STRING)))
        rc = tslock__unexpected(l->client, "shared hold reads",
                                "a value, a scored set and a TTL", v->r[2]);
    if (rc != TSLOCK_OK) {
        tslock__free_replies(N_READS, v->r);
        tslock__unwatch(l);
        return rc;
    }
    v->value = v->r[1];
    v->all = v->r[2];
    v->intent = v->r[3];
    v->ttl = v->r[4]->integer;
    v->n = v->all->elements / 2;
    v->marked = v->value->type == REDIS_REPLY_NIL
                || (v->n > 0 && strlen(entry(v, v->n - 1)) > 32
                    && strcmp(v->value->str, entry(v, v->n - 1) + 32) == 0);
    return TSLOCK_OK;
}

static void drop_view(tslock_lock *l, struct view *v, int unwatch)
{
    tslock__free_replies(N_READS, v->r);
    if (unwatch)
        tslock__unwatch(l);
}

/*
 * The writes that leave the set holding the live entries other than
 * `skip`, plus `add` (NULL for none) at add_score, and the key holding
 * the latest one's stamp with a TTL to its end, or both deleted.
 */
struct writes {
    struct tslock__queued q[TSLOCK__MAX_QUEUED];
    const char *argv[TSLOCK__MAX_QUEUED][4];
    char bound[24], score[24], secs[24];
    int n;
};

static void put(struct writes *w, tslock_step step, int argc, const char *a0,
                const char *a1, const char *a2, const char *a3)
{
    w->argv[w->n][0] = a0;
    w->argv[w->n][1] = a1;
    w->argv[w->n][2] = a2;
    w->argv[w->n][3] = a3;
    w->q[w->n].step = step;
    w->q[w->n].argc = argc;
    w->q[w->n].argv = w->argv[w->n];
    w->n++;
}

static void put_holders(tslock_lock *l, const struct view *v, struct writes *w,
                        int64_t now, const char *skip, const char *add,
                        int64_t add_score)
{
    const char *top = add;
    int64_t top_score = add != NULL ? add_score : -1;
    size_t i;

    snprintf(w->bound, sizeof(w->bound), "(%lld", (long long)now);
    put(w, TSLOCK_STEP_ZREMRANGEBYSCORE, 4, "ZREMRANGEBYSCORE", l->holders_key,
        "-inf", w->bound);
    if (skip != NULL)
        put(w, TSLOCK_STEP_ZREM, 3, "ZREM", l->holders_key, skip, NULL);
    if (add != NULL) {
        snprintf(w->score, sizeof(w->score), "%lld", (long long)add_score);
        put(w, TSLOCK_STEP_ZADD, 4, "ZADD", l->holders_key, w->score, add);
    }
    /* The last in ZRANGE's order: by score, ties by member. */
    for (i = 0; i < v->n; i++)
        if (score(v, i) >= now
            && (score(v, i) > top_score
                || (score(v, i) == top_score && strcmp(entry(v, i), top) > 0))
            && (skip == NULL || strcmp(entry(v, i), skip) != 0)
            && strlen(entry(v, i)) > 32) {
            top = entry(v, i);
            top_score = score(v, i);
        }
    if (top == NULL) {
        put(w, TSLOCK_STEP_DEL, 2, "DEL", l->key, NULL, NULL);
        put(w, TSLOCK_STEP_DEL, 2, "DEL", l->holders_key, NULL, NULL);
        return;
    }
    tslock__seconds_up(w->secs, sizeof(w->secs),
                       top_score - now > 1 ? top_score - now : 1);
    put(w, TSLOCK_STEP_SET, 3, "SET", l->key, top + 32, NULL);
    put(w, TSLOCK_STEP_EXPIRE, 3, "EXPIRE", l->key, w->secs, NULL);
    put(w, TSLOCK_STEP_EXPIRE, 3, "EXPIRE", l->holders_key, w->secs, NULL);
}

/* EXEC: OK, 1 when refused (a watched key changed), or a code. */
static int commit(tslock_lock *l, struct writes *w)
{
    redisReply *done = NULL;
    int rc = tslock__transaction(l, w->n, w->q, &done);
    size_t i;

    if (rc != TSLOCK_OK)
        return rc;
    if (done->type != REDIS_REPLY_ARRAY)
        rc = 1;
    for (i = 0; rc == TSLOCK_OK && i < done->elements; i++)
        if (done->element[i]->type == REDIS_REPLY_ERROR)
            rc = tslock__reply_error(l->client, w->q[i].argv[0],
                                     done->element[i]);
    freeReplyObject(done);
    return rc;
}

static size_t live(const struct view *v, int64_t now, int64_t *first_end)
{
    size_t i, count = 0;

    *first_end = -1;
    for (i = 0; i < v->n; i++)
        if (score(v, i) >= now) {
            if (count++ == 0)
                *first_end = score(v, i); /* the set is ordered by score */
        }
    return count;
}

static int acquire_once(tslock_lock *l, const char *member, int64_t add_score,
                        int64_t now, int64_t limit, int check_intent,
                        struct tslock__shared_verdict *out)
{
    struct view v;
    struct writes w;
    int64_t first_end;
    int rc = read_view(l, &v);

    if (rc != TSLOCK_OK)
        return rc;
    out->taken = 0;
    if (!v.marked) {
        out->why = 0;
        out->wait_ms = v.ttl > 0 ? v.ttl * 1000 : -1;
    } else if (check_intent && v.intent->type == REDIS_REPLY_STRING) {
        out->why = 1;
        out->wait_ms = -1;
    } else if (limit > 0 && (int64_t)live(&v, now, &first_end) >= limit) {
        out->why = 2;
        out->wait_ms = first_end - now;
    } else {
        w.n = 0;
        put_holders(l, &v, &w, now, NULL, member, add_score);
        rc = commit(l, &w);
        drop_view(l, &v, 0);
        if (rc == TSLOCK_OK)
            out->taken = 1;
        return rc;
    }
    drop_view(l, &v, 1);
    return TSLOCK_OK;
}

int tslock__shared_acquire_watch(tslock_lock *l, const char *member,
                                 int64_t score, int64_t now, int64_t limit,
                                 int check_intent,
                                 struct tslock__shared_verdict *v)
{
    int tries, rc = 1;

    for (tries = 0; rc == 1 && tries < TRIES; tries++)
        rc = acquire_once(l, member, score, now, limit, check_intent, v);
    if (rc == 1) { /* others kept changing it: busy, try later */
        v->taken = 0;
        v->why = 0;
        v->wait_ms = -1;
        rc = TSLOCK_OK;
    }
    return rc;
}

static int has_entry(const struct view *v, const char *member, int64_t *s)
{
    size_t i;

    for (i = 0; i < v->n; i++)
        if (strcmp(entry(v, i), member) == 0) {
            *s = score(v, i);
            return 1;
        }
    return 0;
}

/*
 * Release (new_member NULL) or extend: 1 done, 0 our entry is gone (or
 * its lease over, for an extension), -1 the key was taken, or EXEC was
 * refused (returned as the code 1).
 */
static int change_once(tslock_lock *l, const char *member,
                       const char *new_member, int64_t new_score, int64_t now,
                       int *outcome)
{
    const char *publish[3];
    struct view v;
    struct writes w;
    int64_t s = 0;
    int rc = read_view(l, &v), present;

    if (rc != TSLOCK_OK)
        return rc;
    present = has_entry(&v, member, &s);
    w.n = 0;
    if (!v.marked) {
        *outcome = -1;
        if (!present) {
            drop_view(l, &v, 1);
            return TSLOCK_OK;
        }
        put(&w, TSLOCK_STEP_ZREM, 3, "ZREM", l->holders_key, member, NULL);
    } else if (new_member != NULL && (!present || s < now)) {
        *outcome = !present && has_entry(&v, new_member, &s) ? 1 : 0;
        drop_view(l, &v, 1);
        return TSLOCK_OK;
    } else {
        *outcome = present ? 1 : 0;
        put_holders(l, &v, &w, now, member, new_member, new_score);
        if (new_member == NULL && tslock__channel(l) == TSLOCK_OK)
            w.n += tslock__publish_queued(l, publish, &w.q[w.n]);
    }
    rc = commit(l, &w);
    drop_view(l, &v, 0);
    return rc;
}

static int change(tslock_lock *l, const char *member, const char *new_member,
                  int64_t new_score, int64_t now, int *outcome)
{
    int tries, rc = 1;

    /*
     * A refused EXEC means another holder's change went through, so
     * each retry follows progress; after a few, a short random pause
     * lets a busy set settle.  A hold is never left standing for it.
     */
    for (tries = 0; rc == 1 && tries < CHANGE_TRIES; tries++) {
        if (tries >= TRIES
            && tslock__wait(l, 1 + (int64_t)(tslock__random64(l->client) % 3))
                   == TSLOCK_ECANCELED)
            return TSLOCK_ECANCELED;
        rc = change_once(l, member, new_member, new_score, now, outcome);
    }
    if (rc == 1)
        return tslock__fail(l->client, TSLOCK_EBUSY,
                            "lock '%s' changed under every one of %d "
                            "transactions; nothing changed",
                            l->key, CHANGE_TRIES);
    return rc;
}

int tslock__shared_release_watch(tslock_lock *l, const char *member,
                                 int64_t now, int *outcome)
{
    return change(l, member, NULL, 0, now, outcome);
}

int tslock__shared_extend_watch(tslock_lock *l, const char *old_member,
                                const char *new_member, int64_t score,
                                int64_t now, int *outcome)
{
    return change(l, old_member, new_member, score, now, outcome);
}

static int exclusive_once(tslock_lock *l, int64_t now, int64_t intent_ms,
                          struct tslock__shared_verdict *out)
{
    char secs[24], intent_secs[24];
    struct view v;
    struct writes w;
    int64_t first_end;
    int rc = read_view(l, &v);

    if (rc != TSLOCK_OK)
        return rc;
    w.n = 0;
    out->taken = 0;
    out->wait_ms = v.ttl > 0 ? v.ttl * 1000 : -1;
    if (v.marked && live(&v, now, &first_end) == 0) {
        tslock__seconds_up(secs, sizeof(secs), l->ttl_ms);
        put(&w, TSLOCK_STEP_SET, 3, "SET", l->key, l->value, NULL);
        put(&w, TSLOCK_STEP_EXPIRE, 3, "EXPIRE", l->key, secs, NULL);
        put(&w, TSLOCK_STEP_DEL, 2, "DEL", l->holders_key, NULL, NULL);
        if (v.intent->type == REDIS_REPLY_STRING
            && strcmp(v.intent->str, l->value) == 0)
            put(&w, TSLOCK_STEP_DEL, 2, "DEL", l->intent_key, NULL, NULL);
        out->taken = 1;
    } else if (intent_ms > 0) {
        tslock__seconds_up(intent_secs, sizeof(intent_secs), intent_ms);
        put(&w, TSLOCK_STEP_SET, 3, "SET", l->intent_key, l->value, NULL);
        put(&w, TSLOCK_STEP_EXPIRE, 3, "EXPIRE", l->intent_key, intent_secs,
            NULL);
    } else {
        drop_view(l, &v, 1);
        return TSLOCK_OK;
    }
    rc = commit(l, &w);
    drop_view(l, &v, 0);
    if (rc == 1 && !out->taken)
        rc = TSLOCK_OK; /* the intent is written again next attempt */
    return rc;
}

int tslock__rw_exclusive_watch(tslock_lock *l, int64_t now, int64_t intent_ms,
                               struct tslock__shared_verdict *v)
{
    int tries, rc = 1;

    for (tries = 0; rc == 1 && tries < TRIES; tries++)
        rc = exclusive_once(l, now, intent_ms, v);
    if (rc == 1) {
        v->taken = 0;
        v->wait_ms = -1;
        rc = TSLOCK_OK;
    }
    return rc;
}
