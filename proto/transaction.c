/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transaction.c - Redis's optimistic transactions (WATCH, MULTI, EXEC):
 * watch keys and read them in one round trip, queue commands and EXEC
 * them in another, and leave no WATCH behind on failure.  The WATCH
 * forms of compat/ and the break of a lock (break.c) are built on these.
 */
#include <stdio.h>
#include <string.h>

#include "proto.h"

static int bare(tslock_lock *l, tslock_step step, redisReply **r)
{
    const char *argv[1] = {tslock_step_name(step)};

    return tslock__command(l->client, step, l->key, 1, argv, r);
}

void tslock__unwatch(tslock_lock *l)
{
    char keep[TSLOCK__ERRSTR_SIZE];
    redisReply *r = NULL;

    if (l->client->broken)
        return;
    memcpy(keep, l->client->errstr, sizeof(keep));
    if (bare(l, TSLOCK_STEP_UNWATCH, &r) == TSLOCK_OK)
        freeReplyObject(r);
    memcpy(l->client->errstr, keep, sizeof(keep));
}

int tslock__watch_read(tslock_lock *l, int nkeys, const char *const *keys,
                       int nreads, const struct tslock__queued *reads,
                       redisReply **out)
{
    const char *watch[3] = {"WATCH", keys[0], nkeys > 1 ? keys[1] : NULL};
    struct tslock__queued q[1 + TSLOCK__MAX_READS];
    redisReply *r[1 + TSLOCK__MAX_READS];
    int i, rc;

    q[0].step = TSLOCK_STEP_WATCH;
    q[0].argc = nkeys > 1 ? 3 : 2;
    q[0].argv = watch;
    for (i = 0; i < nreads; i++)
        q[1 + i] = reads[i];
    rc = tslock__pipeline(l->client, l->key, 1 + nreads, q, r);
    if (rc != TSLOCK_OK)
        return rc;
    if (r[0]->type != REDIS_REPLY_STATUS)
        rc = tslock__unexpected(l->client, "WATCH", "+OK", r[0]);
    for (i = 0; rc == TSLOCK_OK && i < nreads; i++)
        if (r[1 + i]->type == REDIS_REPLY_ERROR)
            rc = tslock__reply_error(l->client, reads[i].argv[0], r[1 + i]);
    if (rc != TSLOCK_OK) {
        tslock__free_replies(1 + nreads, r);
        tslock__unwatch(l);
        return rc;
    }
    freeReplyObject(r[0]);
    for (i = 0; i < nreads; i++)
        out[i] = r[1 + i];
    return TSLOCK_OK;
}

int tslock__transaction(tslock_lock *l, int n, const struct tslock__queued *q,
                        redisReply **out)
{
    const char *multi[1] = {"MULTI"}, *exec[1] = {"EXEC"};
    struct tslock__queued all[2 + TSLOCK__MAX_QUEUED];
    redisReply *r[2 + TSLOCK__MAX_QUEUED];
    int i, rc;

    *out = NULL;
    if (n > TSLOCK__MAX_QUEUED)
        return tslock__fail(l->client, TSLOCK_EINVAL,
                            "%d commands for one transaction", n);
    all[0].step = TSLOCK_STEP_MULTI;
    all[0].argc = 1;
    all[0].argv = multi;
    for (i = 0; i < n; i++) {
        all[1 + i] = q[i];
        /*
         * No SPUBLISH inside MULTI: while a slot migrates, a sharded
         * channel is served by the source until the end, while the keys
         * already moved are served by the target, so the transaction
         * could run on neither.  A classic PUBLISH runs anywhere, and
         * sharded listeners hear it too (wakeup.c).
         */
        if (strcmp(q[i].argv[0], "SPUBLISH") == 0)
            q[i].argv[0] = "PUBLISH";
    }
    all[1 + n].step = TSLOCK_STEP_EXEC;
    all[1 + n].argc = 1;
    all[1 + n].argv = exec;
    /* MULTI, the commands and EXEC in one round trip. */
    rc = tslock__pipeline(l->client, l->key, n + 2, all, r);
    if (rc == TSLOCK_EHOOK)
        tslock__unwatch(l); /* nothing was sent after WATCH */
    if (rc != TSLOCK_OK)
        return rc;
    if (r[0]->type != REDIS_REPLY_STATUS)
        rc = tslock__unexpected(l->client, "MULTI", "+OK", r[0]);
    for (i = 0; rc == TSLOCK_OK && i < n; i++)
        if (r[1 + i]->type == REDIS_REPLY_ERROR) { /* EXEC aborts then */
            rc = tslock__reply_error(l->client, q[i].argv[0], r[1 + i]);
            if (q[i].step == TSLOCK_STEP_PUBLISH)
                (void)tslock__publish_refused(l->client, r[1 + i]);
        }
    if (rc == TSLOCK_OK && r[1 + n]->type == REDIS_REPLY_ERROR)
        rc = tslock__reply_error(l->client, "EXEC", r[1 + n]);
    else if (rc == TSLOCK_OK && r[1 + n]->type != REDIS_REPLY_NIL
             && (r[1 + n]->type != REDIS_REPLY_ARRAY
                 || r[1 + n]->elements != (size_t)n))
        rc = tslock__unexpected(l->client, "EXEC", "an array or nil", r[1 + n]);
    if (rc == TSLOCK_OK) {
        *out = r[1 + n];
        r[1 + n] = NULL;
    }
    tslock__free_replies(n + 2, r);
    return rc;
}

void tslock__seconds_up(char *buf, size_t size, int64_t ms)
{
    snprintf(buf, size, "%lld", (long long)((ms + 999) / 1000));
}
