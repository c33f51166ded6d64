/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rwlock.c - the exclusive side of a read-write lock: it takes the lock
 * key with its token once no shared lease lives, and while it waits it
 * keeps an intent key set that turns new shared holders away (writer
 * preference).  Release, extend and time-left are the token scheme's.
 */
#include <stdio.h>
#include <string.h>

#include "tslock_int.h"

int tslock_lock_set_rw(tslock_lock *l, tslock_rw mode)
{
    if (l == NULL || mode > TSLOCK_RW_SHARED)
        return TSLOCK_EINVAL;
    if (l->held)
        return TSLOCK_ESTATE;
    if (mode != TSLOCK_RW_OFF && l->permits > 0)
        return tslock__fail(l->client, TSLOCK_EINVAL,
                            "lock '%s' is a semaphore; it has no "
                            "read-write side",
                            l->key);
    l->rw = mode;
    return TSLOCK_OK;
}

/*
 * How long a waiting writer's intent lasts without a refresh: it is
 * refreshed on every attempt, at least once per retry delay, so a live
 * writer never lets it lapse; a dead one stops holding readers back once
 * this has passed (as fair mode's waiter entries).
 */
static int64_t intent_ms(const tslock_lock *l)
{
    return 1000 + 2 * (int64_t)l->retry_max_ms;
}

static int exclusive_try(tslock_lock *l)
{
    tslock_client *c = l->client;
    int64_t now = tslock__now(c, TSLOCK_CLOCK_WALL);
    int64_t srv = tslock__server_now(c);
    int64_t intent = l->waiting ? intent_ms(l) : 0;
    struct tslock__shared_verdict v = {0, -1, 0};
    char ttl[24], now_s[24], intent_s[24];
    const char *keys[3] = {l->key, l->holders_key, l->intent_key};
    const char *args[4] = {l->value, ttl, now_s, intent_s};
    redisReply *r = NULL;
    int rc = TSLOCK_OK;

    /*
     * One token for every attempt of one acquire, kept in next_member
     * until it ends: the intent a waiting attempt leaves is then ours to
     * refresh, to clear when we get in, and to withdraw when we give up.
     */
    if (!tslock__is_token(l->next_member, strlen(l->next_member)))
        rc = tslock__make_token(c, l->next_member);
    if (rc != TSLOCK_OK)
        return rc;
    memcpy(l->value, l->next_member, 33);
    snprintf(ttl, sizeof(ttl), "%lld", (long long)l->ttl_ms);
    tslock__script_now(c, now_s, sizeof(now_s));
    snprintf(intent_s, sizeof(intent_s), "%lld", (long long)intent);
    if (c->caps & TSLOCK_CAP_LUA) {
        rc = tslock__script_run_keys(c, SCRIPT_RW_EXCLUSIVE, 3, keys, 4, args,
                                     &r);
        if (rc == TSLOCK_OK
            && (r->type != REDIS_REPLY_ARRAY || r->elements != 2
                || r->element[0]->type != REDIS_REPLY_INTEGER
                || r->element[1]->type != REDIS_REPLY_INTEGER))
            rc = tslock__unexpected(c, "exclusive script",
                                    "an array of two integers", r);
        if (rc == TSLOCK_OK) {
            v.taken = r->element[0]->integer == 1;
            v.wait_ms = r->element[1]->integer;
        }
        freeReplyObject(r);
    } else {
        rc = tslock__rw_exclusive_watch(l, srv, intent, &v);
    }
    if (rc != TSLOCK_OK)
        return rc;
    if (v.taken) {
        l->expires_ms = now + l->ttl_ms;
        l->held = 1;
        l->next_member[0] = '\0';
        return TSLOCK_OK;
    }
    l->expires_ms = v.wait_ms >= 0 ? now + v.wait_ms : 0;
    return tslock__fail(c, TSLOCK_EBUSY, "lock '%s' is held%s", l->key,
                        intent > 0 ? "; new shared holders wait behind us"
                                   : "");
}

/*
 * A waiting writer that gives up takes its intent back, so readers need
 * not wait for it to lapse, and wakes them.  Best effort: an intent left
 * behind lapses by itself.  Without Lua the compare and the delete are
 * two commands, and may delete another writer's fresh intent, which its
 * next attempt writes again.
 */
void tslock__rw_leave(tslock_lock *l)
{
    tslock_client *c = l->client;
    char keep[TSLOCK__ERRSTR_SIZE];
    char token[33];
    const char *args[3] = {token, l->channel, "s"};
    redisReply *r = NULL;

    if (l->rw != TSLOCK_RW_EXCLUSIVE)
        return;
    memcpy(token, l->next_member, sizeof(token) - 1);
    token[32] = '\0';
    l->next_member[0] = '\0'; /* the next acquire has a new token */
    if (!l->waiting || l->intent_key == NULL || c->broken
        || !tslock__is_token(token, strlen(token)))
        return;
    memcpy(keep, c->errstr, sizeof(keep));
    if (c->caps & TSLOCK_CAP_LUA) {
        if (tslock__script_run(c, SCRIPT_DEL_IF_EQUAL, l->intent_key,
                               tslock__announce_sharded(l) ? 3 : 2, args, &r)
            == TSLOCK_OK)
            freeReplyObject(r);
    } else if (c->caps & TSLOCK_CAP_WATCH) {
        const char *get[2] = {"GET", l->intent_key};
        const char *del[2] = {"DEL", l->intent_key};
        if (tslock__command(c, TSLOCK_STEP_GET, l->key, 2, get, &r)
            == TSLOCK_OK) {
            int ours =
                r->type == REDIS_REPLY_STRING && strcmp(r->str, token) == 0;
            freeReplyObject(r);
            r = NULL;
            if (ours
                && tslock__command(c, TSLOCK_STEP_DEL, l->key, 2, del, &r)
                       == TSLOCK_OK)
                freeReplyObject(r);
        }
    }
    memcpy(c->errstr, keep, sizeof(keep));
}

static int exclusive_release(tslock_lock *l)
{
    return tslock__token_ops.release(l);
}

static int exclusive_extend(tslock_lock *l, int64_t ttl_ms)
{
    return tslock__token_ops.extend(l, ttl_ms);
}

static int exclusive_time_left(tslock_lock *l, int64_t *ms_left)
{
    return tslock__token_ops.time_left(l, ms_left);
}

const struct tslock__scheme_ops tslock__rw_exclusive_ops = {
    exclusive_try, exclusive_release, exclusive_extend, exclusive_time_left};
