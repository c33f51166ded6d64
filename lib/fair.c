/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fair.c - the line of waiters, and fair mode.  A waiting acquire of a
 * token lock joins a line kept beside the key, in its hash slot: the
 * waiters by arrival ({KEY}:queue), when each was last seen alive
 * ({KEY}:alive) and an arrival counter ({KEY}:queue-seq).  A release
 * wakes the first live waiter of the line alone (guard.c, compat/watch.c),
 * on its own channel ({KEY}:wake:<entry>).  One script (Redis 2.6 and
 * later) or one WATCH transaction (2.2 - 2.4) per attempt drops waiters
 * that stopped refreshing, joins, refreshes, and takes a free key: any
 * waiter may, but in fair mode only the head.
 */
#include <stdio.h>
#include <string.h>

#include "tslock_int.h"

int tslock_lock_set_fair(tslock_lock *l, int enabled)
{
    if (l == NULL)
        return TSLOCK_EINVAL;
    if (l->held)
        return TSLOCK_ESTATE;
    l->fair = enabled != 0;
    return TSLOCK_OK;
}

/*
 * How long a waiter's entry stays without a refresh: a waiter refreshes
 * it on every attempt, and attempts at least once per retry delay, so a
 * live waiter never lapses; a dead one is dropped by the next attempt of
 * anyone once this has passed since its last attempt.
 */
static int64_t alive_ms(const tslock_lock *l)
{
    return 1000 + 2 * (int64_t)l->retry_max_ms;
}

int tslock__queue_eligible(tslock_lock *l)
{
    return l->waiting && l->listening && l->used == TSLOCK_SCHEME_TOKEN
           && l->given[0] == '\0'
           && (l->client->caps & (TSLOCK_CAP_LUA | TSLOCK_CAP_WATCH))
           && tslock__queue_named(l); /* no line: woken with all */
}

/* What the script said: taken, or busy with the holder's PTTL and rank. */
static int queue_verdict(tslock_lock *l, const redisReply *r,
                         int64_t *holder_pttl)
{
    const redisReply *const *e = (const redisReply *const *)r->element;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3
        || e[0]->type != REDIS_REPLY_INTEGER
        || e[1]->type != REDIS_REPLY_INTEGER)
        return tslock__unexpected(l->client, "waiters' line script",
                                  "an array of three integers", r);
    if (e[0]->integer == 1)
        return TSLOCK_OK;
    l->queue_rank = e[2]->type == REDIS_REPLY_INTEGER ? e[2]->integer : -1;
    *holder_pttl = e[1]->integer;
    return TSLOCK_EBUSY;
}

/* Redis 2.6 and later: the whole attempt is one script. */
static int queue_try_lua(tslock_lock *l, const char *member, int64_t now,
                         int64_t *holder_pttl)
{
    char ttl[24], now_s[24], alive[24], idle[24];
    const char *keys[4] = {l->key, l->queue_key, l->alive_key, l->seq_key};
    const char *args[8] = {member,
                           l->value,
                           ttl,
                           now_s,
                           alive,
                           idle,
                           l->fair ? "1" : "0",
                           l->queued ? "1" : "0"};
    redisReply *r = NULL;
    int rc;

    snprintf(ttl, sizeof(ttl), "%lld", (long long)l->ttl_ms);
    snprintf(now_s, sizeof(now_s), "%lld", (long long)now);
    snprintf(alive, sizeof(alive), "%lld", (long long)(now + alive_ms(l)));
    snprintf(idle, sizeof(idle), "%lld", (long long)(2 * alive_ms(l)));
    rc = tslock__script_run_keys(l->client, SCRIPT_QUEUE_TRY, 4, keys, 8, args,
                                 &r);
    if (rc == TSLOCK_OK)
        rc = queue_verdict(l, r, holder_pttl);
    freeReplyObject(r);
    return rc;
}

int tslock__queue_try(tslock_lock *l, int64_t *holder_pttl)
{
    tslock_client *c = l->client;
    char member[35];
    int64_t now;
    int rc;

    *holder_pttl = -1;
    if ((rc = tslock__queue_names(l)) != TSLOCK_OK)
        return rc;
    tslock__queue_member(l, l->listening, member);
    if (l->queued && strcmp(member, l->member) != 0)
        tslock__fair_leave(l); /* it stopped listening: one entry at most */
    memcpy(l->member, member, sizeof(member));
    now = tslock__now(c, TSLOCK_CLOCK_WALL);
    if (c->caps & TSLOCK_CAP_LUA) {
        rc = queue_try_lua(l, member, now, holder_pttl);
    } else {
        rc = tslock__fair_try_watch(l, member, l->fair, now, now + alive_ms(l),
                                    2 * alive_ms(l), holder_pttl);
    }
    if (rc == TSLOCK_OK)
        l->queued = 0; /* out of the line with the hold */
    else if (rc == TSLOCK_EBUSY)
        l->queued = 1;
    return rc;
}

int tslock__fair_try(tslock_lock *l)
{
    tslock_client *c = l->client;
    int64_t now, holder_pttl = -1;
    int rc;

    if (!(c->caps & (TSLOCK_CAP_LUA | TSLOCK_CAP_WATCH)))
        return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                            "fair mode needs Lua or WATCH (Redis 2.2 or "
                            "later): its queue must change atomically");
    if ((rc = tslock__queue_names(l)) != TSLOCK_OK)
        return rc;
    if ((rc = tslock__make_token(c, l->value)) != TSLOCK_OK)
        return rc;
    now = tslock__now(c, TSLOCK_CLOCK_WALL);
    rc = tslock__queue_try(l, &holder_pttl);
    if (rc == TSLOCK_OK) {
        l->expires_ms = now + l->ttl_ms;
        l->held = 1;
    } else if (rc == TSLOCK_EBUSY) {
        l->expires_ms = holder_pttl >= 0 ? now + holder_pttl : 0;
        if (c->caps & TSLOCK_CAP_LUA)
            tslock__fail(c, rc,
                         "lock '%s' is held; %lld waiter%s ahead of us in "
                         "the fair queue",
                         l->key, (long long)l->queue_rank,
                         l->queue_rank == 1 ? "" : "s");
        else
            tslock__fail(c, rc, "lock '%s' is held; we wait in its fair queue",
                         l->key);
    }
    return rc;
}

/*
 * Leave the line: an acquisition that ends without the lock (try-once,
 * deadline, cancel, error) takes its entry out at once, so it never
 * holds the line.  Best effort: an entry left behind lapses by itself.
 */
void tslock__fair_leave(tslock_lock *l)
{
    if (l->queued && l->queue_key != NULL && !l->client->broken)
        tslock__line_drop(l, l->member, 0);
    l->queued = 0;
}

void tslock__unheard_release(tslock_lock *l, int64_t holder_end)
{
    tslock_client *c = l->client;
    int64_t now = tslock__now(c, TSLOCK_CLOCK_WALL), others = -1;
    char keep[TSLOCK__ERRSTR_SIZE];

    /*
     * Only the token scheme: legacy timestamp clients never announce.  A
     * key free within a retry delay of the lease's end may have expired.
     */
    if (l->used != TSLOCK_SCHEME_TOKEN || holder_end <= 0 || now < 0
        || holder_end - now <= l->retry_min_ms
        || (c->wakeups & TSLOCK_WAKEUPS_POLLING) || tslock__heard_since(l))
        return;
    /*
     * A release wakes the first waiter of the line alone: with others in
     * line, it may have woken one of them, which is not a loss.
     */
    memcpy(keep, c->errstr, sizeof(keep));
    if (tslock_lock_queue_length(l, &others) != TSLOCK_OK)
        others = -1;
    memcpy(c->errstr, keep, sizeof(keep));
    if (others != 0)
        return;
    tslock__listen_no_more(
        l, "a release was not heard: the key came free well before its "
           "holder's lease ended, with no announcement (a PUBLISH refused "
           "inside a script, or lost on the way, as where a service turns "
           "a script's PUBLISH into SPUBLISH, or a holder that does not "
           "announce): waits poll at their retry delay");
}

int tslock_lock_queue_length(tslock_lock *l, int64_t *length)
{
    const char *argv[2] = {"ZCARD", NULL};
    redisReply *r = NULL;
    int rc;

    if (l == NULL || length == NULL)
        return TSLOCK_EINVAL;
    *length = 0;
    tslock__clear_error(l->client);
    if ((rc = tslock__queue_names(l)) != TSLOCK_OK)
        return rc;
    argv[1] = l->queue_key;
    rc = tslock__command(l->client, TSLOCK_STEP_ZCARD, l->key, 2, argv, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER)
        *length = r->integer;
    else
        rc = tslock__unexpected(l->client, "ZCARD of the fair queue",
                                "an integer", r);
    freeReplyObject(r);
    return rc;
}
