/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handle.c - carrying a hold between processes (handles and adoption),
 * and reading any lock's key whoever wrote it (peek and classify), for
 * the tslock command's acquire / release / status.
 */
#include <stdio.h>
#include <string.h>

#include "tslock_int.h"

static const char *const unit_names[] = {"ms", "s", "float"};

/*
 * What a handle names the stamp's form by: its unit for a plain stamp,
 * the preset for a preset's dialect (so a release needs no --dialect),
 * and the unit for a format string, which the adopting lock must be set
 * to (tslock_lock_set_dialect()) before it reads the handle.
 */
static const char *form_name(const tslock_lock *l)
{
    if (!tslock__dialect_is_plain(&l->dialect) && l->dialect.name[0] != '\0')
        return l->dialect.name;
    return unit_names[l->unit];
}

const char *tslock_lock_handle(const tslock_lock *l)
{
    tslock_lock *m = (tslock_lock *)l; /* the buffer is a cache */

    if (l == NULL || !l->held)
        return NULL;
    if (tslock__shared_handle(l, m->handle, sizeof(m->handle)))
        return m->handle;
    if (l->used == TSLOCK_SCHEME_TOKEN)
        snprintf(m->handle, sizeof(m->handle), "token:%s", l->value);
    else if (l->used == TSLOCK_SCHEME_BRIDGE && l->proof)
        snprintf(m->handle, sizeof(m->handle), "bridge-%s:%s/%s", form_name(l),
                 l->value, l->owner_token);
    else
        snprintf(m->handle, sizeof(m->handle), "%s-%s:%s",
                 l->used == TSLOCK_SCHEME_BRIDGE ? "bridge" : "timestamp",
                 form_name(l), l->value);
    return m->handle;
}

int tslock_lock_adopt(tslock_lock *l, const char *handle)
{
    const char *colon, *value, *slash;
    size_t i, len;
    int plain;

    if (l == NULL || handle == NULL)
        return TSLOCK_EINVAL;
    if (l->held)
        return tslock__fail(l->client, TSLOCK_ESTATE,
                            "lock '%s' is already held", l->key);
    if (tslock__shared_adopt(l, handle))
        return TSLOCK_OK;
    plain = tslock__dialect_is_plain(&l->dialect);
    colon = strchr(handle, ':');
    value = colon != NULL ? colon + 1 : "";
    /* A bridge hold with its proof: <stamp>/<owner token>. */
    slash = strchr(value, '/');
    len = slash != NULL ? (size_t)(slash - value) : strlen(value);
    if (slash != NULL && !tslock__is_token(slash + 1, strlen(slash + 1)))
        colon = NULL;
    if (colon != NULL && len < sizeof(l->value)) {
        if ((size_t)(colon - handle) == 5 && strncmp(handle, "token", 5) == 0
            && slash == NULL && tslock__is_token(value, len)) {
            l->used = TSLOCK_SCHEME_TOKEN;
            l->ops = &tslock__token_ops;
            l->expires_ms = 0;
            goto adopt;
        }
        /* A preset's hold: "{timestamp,bridge}-PRESET:<value>[/token]". */
        for (i = 0; tslock_dialect_preset(i / 2) != NULL; i++) {
            const char *name = tslock_dialect_preset(i / 2);
            struct tslock__dialect d;
            int bridge = (int)(i % 2);
            char prefix[48];
            const char *why;
            snprintf(prefix, sizeof(prefix),
                     "%s-%s:", bridge ? "bridge" : "timestamp", name);
            if (strncmp(handle, prefix, strlen(prefix)) != 0
                || (slash != NULL && !bridge)
                || tslock__dialect_compile(&d, name, NULL, 0) != TSLOCK_OK
                || tslock__dialect_parse(&d, value, len, &l->expires_ms, &why,
                                         NULL)
                       != TSLOCK_OK
                || l->expires_ms == INT64_MAX)
                continue;
            l->dialect = d;
            l->unit = d.unit;
            l->used = bridge ? TSLOCK_SCHEME_BRIDGE : TSLOCK_SCHEME_TIMESTAMP;
            l->ops = bridge ? &tslock__bridge_ops : &tslock__timestamp_ops;
            l->proof = slash != NULL;
            if (slash != NULL)
                memcpy(l->owner_token, slash + 1, sizeof(l->owner_token));
            /* The earliest the lease can end: never too late. */
            if (bridge || d.plus_one || d.unit != TSLOCK_UNIT_MS)
                l->expires_ms -=
                    tslock__bridge_bound_ms(d.unit, l->ttl_ms)
                    + (d.unit == TSLOCK_UNIT_S ? 2000 : 1)
                    + (d.plus_one && d.unit == TSLOCK_UNIT_FLOAT ? 1000 : 0);
            goto adopt;
        }
        for (i = 0; i < 6; i++) {
            tslock_unit unit = (tslock_unit)(i % 3);
            int bridge = i >= 3;
            char prefix[24];
            const char *why;
            snprintf(prefix, sizeof(prefix),
                     "%s-%s:", bridge ? "bridge" : "timestamp",
                     unit_names[unit]);
            if (strncmp(handle, prefix, strlen(prefix)) != 0
                || (slash != NULL && !bridge))
                continue;
            /* A hold in a dialect is read back in the lock's dialect. */
            if (plain ? tslock__stamp_parse(value, len, unit, &l->expires_ms,
                                            &why)
                            != TSLOCK_OK
                      : unit != l->dialect.unit
                            || tslock__dialect_parse(&l->dialect, value, len,
                                                     &l->expires_ms, &why, NULL)
                                   != TSLOCK_OK
                            || l->expires_ms == INT64_MAX)
                continue;
            l->used = bridge ? TSLOCK_SCHEME_BRIDGE : TSLOCK_SCHEME_TIMESTAMP;
            l->ops = bridge ? &tslock__bridge_ops : &tslock__timestamp_ops;
            l->unit = unit;
            if (plain)
                tslock__dialect_plain(&l->dialect, unit);
            l->proof = slash != NULL;
            if (slash != NULL)
                memcpy(l->owner_token, slash + 1, sizeof(l->owner_token));
            if (bridge) /* the earliest the lease can end: never too late */
                l->expires_ms -= tslock__bridge_bound_ms(unit, l->ttl_ms)
                                 + (unit == TSLOCK_UNIT_S ? 2000 : 1);
            else if (unit == TSLOCK_UNIT_FLOAT) /* as tslock_acquire */
                l->expires_ms -= 1;
            goto adopt;
        }
    }
    return tslock__fail(l->client, TSLOCK_EINVAL,
                        "handle \"%.80s\" is not token:<32 hex digits>, "
                        "{timestamp,bridge}-{ms,s,float,PRESET}:<stamp> or "
                        "bridge-{ms,s,float,PRESET}:<stamp>/<32 hex digits> or "
                        "{shared,permit}-{ms,s,float}:<32 hex digits><stamp>",
                        handle);
adopt:
    memcpy(l->value, value, len);
    l->value[len] = '\0';
    l->held = 1;
    l->held_since = 0; /* not taken here: a minimum hold counts from now */
    l->fence = 0;
    return TSLOCK_OK;
}

int tslock_value_classify(const char *v, size_t len, tslock_scheme *scheme,
                          tslock_unit *unit, int64_t *expires_ms)
{
    static const tslock_unit order[] = {TSLOCK_UNIT_FLOAT, TSLOCK_UNIT_MS,
                                        TSLOCK_UNIT_S};
    int64_t exp = 0;
    const char *why;
    size_t i;

    if (v == NULL)
        return TSLOCK_EINVAL;
    if (tslock__is_token(v, len)) {
        if (scheme != NULL)
            *scheme = TSLOCK_SCHEME_TOKEN;
        if (expires_ms != NULL)
            *expires_ms = 0;
        return TSLOCK_OK;
    }
    for (i = memchr(v, '.', len) != NULL ? 0 : 1; i < 3; i++)
        if (tslock__stamp_parse(v, len, order[i], &exp, &why) == TSLOCK_OK) {
            if (scheme != NULL)
                *scheme = TSLOCK_SCHEME_TIMESTAMP;
            if (unit != NULL)
                *unit = order[i];
            if (expires_ms != NULL)
                *expires_ms = exp;
            return TSLOCK_OK;
        }
    return TSLOCK_EUNREADABLE;
}

int tslock_lock_peek(tslock_lock *l, char *value, size_t size, int64_t *ttl_ms)
{
    redisReply *r = NULL;
    int lua, absent = 0, rc;

    if (l == NULL || value == NULL || size == 0)
        return TSLOCK_EINVAL;
    tslock__clear_error(l->client);
    rc = tslock__key_command(l, TSLOCK_STEP_GET, NULL, &r);
    if (rc != TSLOCK_OK)
        return rc;
    value[0] = '\0';
    if (r->type == REDIS_REPLY_STRING)
        snprintf(value, size, "%.*s", (int)r->len, r->str);
    else if (r->type == REDIS_REPLY_NIL)
        absent = 1;
    else
        rc = tslock__unexpected(l->client, "GET", "a bulk string or nil", r);
    freeReplyObject(r);
    if (rc != TSLOCK_OK || ttl_ms == NULL)
        return rc;
    lua = (l->client->caps & TSLOCK_CAP_LUA) != 0; /* PTTL came with Lua */
    rc = tslock__key_command(l, lua ? TSLOCK_STEP_PTTL : TSLOCK_STEP_TTL, NULL,
                             &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "TTL", "an integer", r);
    else if (absent)
        *ttl_ms = -2; /* before 2.8 a missing key also answers -1 */
    else
        *ttl_ms = r->integer < 0 ? -1 : lua ? r->integer : r->integer * 1000;
    freeReplyObject(r);
    return rc;
}
