/*
 * fair.c - fair mode: waiters take the lock in the order they asked.
 * The queue lives in Redis beside the key, in its hash slot: the waiters
 * by arrival ({KEY}:queue), when each was last seen alive ({KEY}:alive)
 * and an arrival counter ({KEY}:queue-seq).  One script (Redis 2.6 and
 * later) drops waiters that stopped refreshing, joins, refreshes, and
 * lets only the head take a free key.
 */
#include <stdio.h>
#include <string.h>

#include "compat.h"

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

static int queue_names(tslock_lock *l)
{
    int rc = tslock__companion(l, &l->queue_key, ":queue");

    if (rc == TSLOCK_OK)
        rc = tslock__companion(l, &l->alive_key, ":alive");
    if (rc == TSLOCK_OK)
        rc = tslock__companion(l, &l->seq_key, ":queue-seq");
    return rc;
}

/* What the script said: taken, or busy with the holder's PTTL and rank. */
static int fair_verdict(tslock_lock *l, const redisReply *r, int64_t now)
{
    const redisReply *const *e = (const redisReply *const *)r->element;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3
        || e[0]->type != REDIS_REPLY_INTEGER
        || e[1]->type != REDIS_REPLY_INTEGER)
        return tslock__unexpected(l->client, "fair queue script",
                                  "an array of three integers", r);
    if (e[0]->integer == 1) {
        l->expires_ms = now + l->ttl_ms;
        l->held = 1;
        l->fair_id[0] = '\0'; /* out of the queue with the hold */
        return TSLOCK_OK;
    }
    l->queue_rank = e[2]->type == REDIS_REPLY_INTEGER ? e[2]->integer : -1;
    l->expires_ms = e[1]->integer >= 0 ? now + e[1]->integer : 0;
    return tslock__fail(l->client, TSLOCK_EBUSY,
                        "lock '%s' is held; %lld waiter%s ahead of us in "
                        "the fair queue",
                        l->key, (long long)l->queue_rank,
                        l->queue_rank == 1 ? "" : "s");
}

/* Redis 2.2 - 2.4: the same rules in a WATCH transaction. */
static int fair_watch(tslock_lock *l, int64_t now)
{
    int64_t holder_ttl = -1;
    int rc = tslock__fair_try_watch(l, now, now + alive_ms(l), 2 * alive_ms(l),
                                    &holder_ttl);

    if (rc == TSLOCK_OK) {
        l->expires_ms = now + l->ttl_ms;
        l->held = 1;
        l->fair_id[0] = '\0';
    } else if (rc == TSLOCK_EBUSY) {
        l->expires_ms = holder_ttl >= 0 ? now + holder_ttl : 0;
        tslock__fail(l->client, rc,
                     "lock '%s' is held; we wait in its fair "
                     "queue",
                     l->key);
    }
    return rc;
}

int tslock__fair_try(tslock_lock *l)
{
    tslock_client *c = l->client;
    char ttl[24], now_s[24], alive[24], idle[24];
    const char *keys[4], *args[5] = {l->fair_id, ttl, now_s, alive, idle};
    redisReply *r = NULL;
    int64_t now;
    int rc;

    if (!(c->caps & (TSLOCK_CAP_LUA | TSLOCK_CAP_WATCH)))
        return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                            "fair mode needs Lua or WATCH (Redis 2.2 or "
                            "later): its queue must change atomically");
    if ((rc = queue_names(l)) != TSLOCK_OK)
        return rc;
    if (l->fair_id[0] == '\0' && (rc = tslock__make_token(c, l->fair_id)))
        return rc;
    memcpy(l->value, l->fair_id, sizeof(l->fair_id));
    now = tslock__now(c, TSLOCK_CLOCK_WALL);
    if (!(c->caps & TSLOCK_CAP_LUA))
        return fair_watch(l, now);
    snprintf(ttl, sizeof(ttl), "%lld", (long long)l->ttl_ms);
    snprintf(now_s, sizeof(now_s), "%lld", (long long)now);
    snprintf(alive, sizeof(alive), "%lld", (long long)(now + alive_ms(l)));
    snprintf(idle, sizeof(idle), "%lld", (long long)(2 * alive_ms(l)));
    keys[0] = l->key;
    keys[1] = l->queue_key;
    keys[2] = l->alive_key;
    keys[3] = l->seq_key;
    rc = tslock__script_run_keys(c, SCRIPT_FAIR_ACQUIRE, 4, keys, 5, args, &r);
    if (rc == TSLOCK_OK)
        rc = fair_verdict(l, r, now);
    freeReplyObject(r);
    return rc;
}

/*
 * Leave the queue: an acquisition that ends without the lock (try-once,
 * deadline, cancel, error) takes its entry out at once, so it never
 * holds the line.  Best effort: an entry left behind lapses by itself.
 */
void tslock__fair_leave(tslock_lock *l)
{
    const char *zq[3] = {"ZREM", l->queue_key, l->fair_id};
    const char *za[3] = {"ZREM", l->alive_key, l->fair_id};
    const struct tslock__queued q[2] = {{TSLOCK_STEP_ZREM, 3, zq},
                                        {TSLOCK_STEP_ZREM, 3, za}};
    char keep[TSLOCK__ERRSTR_SIZE];
    redisReply *r[2];

    if (l->fair_id[0] == '\0' || l->queue_key == NULL || l->client->broken)
        return;
    memcpy(keep, l->client->errstr, sizeof(keep));
    if (tslock__pipeline(l->client, l->key, 2, q, r) == TSLOCK_OK)
        tslock__free_replies(2, r);
    memcpy(l->client->errstr, keep, sizeof(keep));
    l->fair_id[0] = '\0';
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
    if ((rc = queue_names(l)) != TSLOCK_OK)
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
