/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proof.c - what a hold is judged by, in every scheme and on every server
 * generation: whether our lease still runs by our clock, whether the key
 * still holds our value, what a found stamp says (busy, expired or
 * unreadable), the bridge scheme's three-part proof, and the words of an
 * ELOST.  The schemes in lib/ and the forms in compat/ both call these;
 * nothing here calls either.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"

int tslock__lease_runs(tslock_lock *l)
{
    return tslock__now(l->client, TSLOCK_CLOCK_WALL) + l->margin_ms
           <= l->expires_ms;
}

int tslock__guard_lost(tslock_lock *l, const char *verb, const char *why)
{
    return tslock__fail(l->client, TSLOCK_ELOST,
                        "lock '%s' was not %s: %s; nothing changed", l->key,
                        verb, why);
}

int tslock__guard_compare(tslock_lock *l, const redisReply *r,
                          const char *expect, const char *verb)
{
    char why[448], found[200], ours[200];

    if (r->type == REDIS_REPLY_NIL)
        return tslock__guard_lost(l, verb, "the key is gone");
    if (r->type != REDIS_REPLY_STRING)
        return tslock__unexpected(l->client, "GET", "a bulk string or nil", r);
    if (TSLOCK__REPLY_LEN(r) != strlen(expect)
        || memcmp(r->str, expect, r->len) != 0) {
        tslock__quote_value(found, sizeof(found), r->str, r->len);
        tslock__quote_value(ours, sizeof(ours), expect, strlen(expect));
        snprintf(why, sizeof(why), "it now holds %s, not our %s", found, ours);
        return tslock__guard_lost(l, verb, why);
    }
    return TSLOCK_OK;
}

int tslock__key_command(tslock_lock *l, tslock_step step, const char *arg,
                        redisReply **r)
{
    const char *argv[3] = {tslock_step_name(step), l->key, arg};

    return tslock__command(l->client, step, l->key, arg == NULL ? 2 : 3, argv,
                           r);
}

/* ------------------------------------------- a stamp found on the key */

int tslock__ts_read_stamp(tslock_lock *l, const redisReply *r, int64_t *exp)
{
    const char *why = "", *closest;
    char quoted[200], hint[120] = "";
    int rc =
        tslock__dialect_parse(&l->dialect, r->str, r->len, exp, &why, NULL);

    if (rc == TSLOCK_OK && *exp == INT64_MAX) {
        tslock__quote_value(quoted, sizeof(quoted), r->str, r->len);
        return tslock__fail(l->client, TSLOCK_EBUSY,
                            "lock '%s' holds %s, which dialect %s writes for "
                            "a lock that never expires; it is never taken "
                            "over",
                            l->key, quoted, l->dialect.spec);
    }
    if (rc != TSLOCK_OK) {
        tslock__quote_value(quoted, sizeof(quoted), r->str, r->len);
        closest = tslock__dialect_closest(r->str, r->len);
        if (closest != NULL && strcmp(closest, l->dialect.spec) != 0
            && strcmp(closest, l->dialect.name) != 0)
            snprintf(hint, sizeof(hint), " (closest preset: %s)", closest);
        tslock__fail(l->client, rc,
                     "lock '%s' holds %s, which %s for a stamp of dialect "
                     "%s, in %s; it is treated as held and never taken "
                     "over%s",
                     l->key, quoted, why, l->dialect.spec,
                     tslock__unit_name(l->dialect.unit), hint);
    }
    return rc;
}

int tslock__ts_busy(tslock_lock *l, int64_t holder_expires_ms)
{
    l->expires_ms = holder_expires_ms;
    return tslock__fail(l->client, TSLOCK_EBUSY,
                        "lock '%s' is held until %" PRId64 " (Unix ms)", l->key,
                        holder_expires_ms);
}

/*
 * The stamp schemes' takeover rule, shared by the GETSET path of every
 * generation and the bridge claim: a stamp ending at exp counts as
 * expired only once our wall clock is past exp plus the takeover grace,
 * room for a holder whose clock runs behind ours.  The token schemes
 * keep no stamp; their lease is the server's TTL.
 */
int64_t tslock__takeover_after(const tslock_lock *l, int64_t exp)
{
    if (l->used != TSLOCK_SCHEME_TIMESTAMP && l->used != TSLOCK_SCHEME_BRIDGE)
        return exp;
    if (exp > INT64_MAX - l->grace_ms) /* a stamp that never expires */
        return INT64_MAX;
    return exp + l->grace_ms;
}

int tslock__stamp_expired(tslock_lock *l, int64_t exp)
{
    return tslock__takeover_after(l, exp)
           < tslock__now(l->client, TSLOCK_CLOCK_WALL);
}

int tslock__bridge_may_take(tslock_lock *l, const redisReply *found)
{
    int64_t exp = 0;
    int rc = tslock__ts_read_stamp(l, found, &exp);

    if (rc != TSLOCK_OK)
        return rc;
    if (!tslock__stamp_expired(l, exp))
        return tslock__ts_busy(l, exp);
    return TSLOCK_OK;
}

/* -------------------------------------------------- the bridge proof */

/*
 * ELOST for a failed proof, by the guard script's code: -1 the stamp is
 * not ours, -2 it has no TTL, -3 the owner key names another holder.
 */
int tslock__bridge_proof_lost(tslock_lock *l, const char *verb, int code)
{
    static const char *const why[] = {
        "it no longer holds our stamp",
        "it holds our stamp but no TTL, so a client that sets none wrote "
        "it again after our hold was deleted",
        "it holds our stamp, but its owner key names another holder that "
        "wrote the same stamp"};

    /*
     * Another value, or our stamp without its TTL, while our lease runs
     * (release and extend ask the server only then): what a legacy
     * client's GETSET or SETNX leaves.  Another bridge holder is -3.
     */
    l->legacy_lost = code == -1 || code == -2;
    return tslock__guard_lost(l, verb, why[-code - 1]);
}

int tslock__bridge_judge(tslock_lock *l, redisReply *const *replies,
                         const char *verb)
{
    const redisReply *value = replies[0], *ttl = replies[1],
                     *owner = replies[2];
    int rc = tslock__guard_compare(l, value, l->value, verb);

    l->legacy_lost = rc == TSLOCK_ELOST;
    if (rc != TSLOCK_OK)
        return rc;
    if (ttl->type != REDIS_REPLY_INTEGER)
        return tslock__unexpected(l->client, "TTL", "an integer", ttl);
    if (ttl->integer < 0)
        return tslock__bridge_proof_lost(l, verb, -2);
    if (owner->type != REDIS_REPLY_NIL && owner->type != REDIS_REPLY_STRING)
        return tslock__unexpected(l->client, "GET of the owner key",
                                  "a bulk string or nil", owner);
    if (owner->type == REDIS_REPLY_NIL || strcmp(owner->str, l->owner_token))
        return tslock__bridge_proof_lost(l, verb, -3);
    return TSLOCK_OK;
}

void tslock__bridge_proof_reads(tslock_lock *l, struct tslock__proof_reads *b)
{
    int lua = (l->client->caps & TSLOCK_CAP_LUA) != 0;

    b->get_key[0] = "GET";
    b->get_key[1] = l->key;
    b->ttl_key[0] = lua ? "PTTL" : "TTL";
    b->ttl_key[1] = l->key;
    b->get_owner[0] = "GET";
    b->get_owner[1] = l->owner_key;
    b->q[0].step = TSLOCK_STEP_GET;
    b->q[0].argc = 2;
    b->q[0].argv = b->get_key;
    b->q[1].step = lua ? TSLOCK_STEP_PTTL : TSLOCK_STEP_TTL;
    b->q[1].argc = 2;
    b->q[1].argv = b->ttl_key;
    b->q[2].step = TSLOCK_STEP_GET;
    b->q[2].argc = 2;
    b->q[2].argv = b->get_owner;
}
