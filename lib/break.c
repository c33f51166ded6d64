/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * break.c - the operator's way out of a stuck lock: delete the lock key
 * (and its bridge owner key) only while it holds exactly the value the
 * operator saw, whoever wrote it, however long its lease, and announce it.
 */
#include <stdio.h>
#include <string.h>

#include "tslock_int.h"

static int break_lost(tslock_lock *l, const char *why)
{
    return tslock__fail(l->client, TSLOCK_ELOST,
                        "lock '%s' was not broken: %s; nothing deleted", l->key,
                        why);
}

/* The GET of the WATCH and classic forms: exactly value, or ELOST. */
static int break_compare(tslock_lock *l, const redisReply *r, const char *value)
{
    char why[448], found[200], given[200];

    if (r->type == REDIS_REPLY_NIL)
        return break_lost(l, "the key is gone");
    if (r->type != REDIS_REPLY_STRING)
        return tslock__unexpected(l->client, "GET", "a bulk string or nil", r);
    if (TSLOCK__REPLY_LEN(r) != strlen(value)
        || memcmp(r->str, value, r->len) != 0) {
        tslock__quote_value(found, sizeof(found), r->str, r->len);
        tslock__quote_value(given, sizeof(given), value, strlen(value));
        snprintf(why, sizeof(why), "it now holds %s, not %s", found, given);
        return break_lost(l, why);
    }
    return TSLOCK_OK;
}

/* Redis 2.6 and later: one script compares and deletes. */
static int break_lua(tslock_lock *l, const char *value)
{
    const char *keys[2] = {l->key, l->owner_key};
    const char *args[3] = {value, l->channel, "s"};
    redisReply *r = NULL;
    int rc =
        tslock__script_run_keys(l->client, SCRIPT_BREAK, 2, keys,
                                tslock__announce_sharded(l) ? 3 : 2, args, &r);

    if (rc != TSLOCK_OK)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "break script", "an integer", r);
    else if (r->integer != 1)
        rc = break_lost(l, "it no longer holds that value");
    freeReplyObject(r);
    return rc;
}

/* DEL of both keys, and the announcement unless PUBLISH was refused. */
static int break_queue(tslock_lock *l, const char *del[3],
                       const char *publish[3], struct tslock__queued *q)
{
    del[0] = "DEL";
    del[1] = l->key;
    del[2] = l->owner_key;
    q[0].step = TSLOCK_STEP_DEL;
    q[0].argc = 3;
    q[0].argv = del;
    return 1 + tslock__publish_queued(l, publish, &q[1]);
}

/*
 * Redis 2.2 - 2.4: WATCH and GET, compare, then MULTI, DEL, PUBLISH,
 * EXEC; a nil EXEC means the key changed after the GET.
 */
static int break_watch_once(tslock_lock *l, const char *value)
{
    const char *keys[1] = {l->key}, *get[2] = {"GET", l->key};
    const struct tslock__queued read[1] = {{TSLOCK_STEP_GET, 2, get}};
    const char *del[3], *publish[3];
    struct tslock__queued q[2];
    redisReply *r = NULL;
    int rc = tslock__watch_read(l, 1, keys, 1, read, &r);

    if (rc != TSLOCK_OK)
        return rc;
    rc = break_compare(l, r, value);
    freeReplyObject(r);
    r = NULL;
    if (rc != TSLOCK_OK) {
        tslock__unwatch(l);
        return rc;
    }
    rc = tslock__transaction(l, break_queue(l, del, publish, q), q, &r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL)
        rc = break_lost(l, "the key changed between WATCH and EXEC");
    else if (r->element[0]->type == REDIS_REPLY_ERROR)
        rc = tslock__reply_error(l->client, "DEL", r->element[0]);
    freeReplyObject(r);
    return rc;
}

static int break_watch(tslock_lock *l, const char *value)
{
    int rc, tries = 0;

    (void)tslock__rewatch(l->client); /* nothing left from before */
    do
        rc = break_watch_once(l, value);
    while (tslock__rewatch(l->client) && ++tries < TSLOCK__REWATCH_MAX);
    return rc;
}

/*
 * Redis 2.0 has neither: GET, compare, then DEL.  Another client can
 * write the key between the GET and the DEL, and the DEL then deletes
 * its value; tslock_lock_break(3) documents this gap.
 */
static int break_classic(tslock_lock *l, const char *value)
{
    const char *del[3], *publish[3];
    struct tslock__queued q[2];
    redisReply *r = NULL, *out[2];
    int n, rc = tslock__key_command(l, TSLOCK_STEP_GET, NULL, &r);

    if (rc != TSLOCK_OK)
        return rc;
    rc = break_compare(l, r, value);
    freeReplyObject(r);
    if (rc != TSLOCK_OK)
        return rc;
    n = break_queue(l, del, publish, q);
    rc = tslock__pipeline(l->client, l->key, n, q, out);
    if (rc != TSLOCK_OK)
        return rc;
    if (out[0]->type != REDIS_REPLY_INTEGER)
        rc = tslock__unexpected(l->client, "DEL", "an integer", out[0]);
    else if (out[0]->integer < 1)
        rc = break_lost(l, "the key vanished before DEL");
    if (n == 2)
        (void)tslock__publish_refused(l->client, out[1]);
    tslock__free_replies(n, out);
    return rc;
}

int tslock_lock_break(tslock_lock *l, const char *value)
{
    int rc, refused;

    if (l == NULL || value == NULL || value[0] == '\0')
        return l == NULL ? TSLOCK_EINVAL
                         : tslock__fail(l->client, TSLOCK_EINVAL,
                                        "break needs the value to delete");
    if (l->held)
        return tslock__fail(l->client, TSLOCK_ESTATE,
                            "this lock object holds '%s': release it", l->key);
    tslock__clear_error(l->client);
    rc = tslock__check_usable(l->client);
    if (rc == TSLOCK_OK)
        rc = tslock__companion(l, &l->owner_key, ":owner");
    if (rc == TSLOCK_OK)
        rc = tslock__channel(l);
    if (rc != TSLOCK_OK)
        return rc;
    if (l->client->caps & TSLOCK_CAP_LUA)
        return break_lua(l, value);
    if (!(l->client->caps & TSLOCK_CAP_WATCH))
        return break_classic(l, value);
    refused = l->client->publish_refused;
    rc = break_watch(l, value);
    /* A refused PUBLISH aborted EXEC: once more, without it. */
    if (rc != TSLOCK_OK && !refused && l->client->publish_refused)
        rc = break_watch(l, value);
    return rc;
}
