/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wakeup.c - the wait between attempts, and waiters woken by the release
 * instead of polling.  A waiting acquire subscribes a second connection
 * of its client, before its first try, to the lock's channel and to its
 * own wake channel (names.c), and sleeps until a message on either, the
 * holder's expiry or the retry delay, whichever is first.  A release of
 * a token lock wakes the first waiter of the line on its own channel
 * (fair.c); others, and releases by earlier tslock versions, announce on
 * the lock's channel, which wakes every listener.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int tslock_lock_set_wakeup(tslock_lock *l, int enabled)
{
    if (l == NULL)
        return TSLOCK_EINVAL;
    l->wakeup = enabled != 0;
    return TSLOCK_OK;
}

/* Whether r is a message published on the key's channel or our own. */
static int is_release(const redisReply *r, const tslock_client *c)
{
    return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3
           && r->element[0]->type == REDIS_REPLY_STRING
           && strcmp(r->element[0]->str, "message") == 0
           && r->element[1]->type == REDIS_REPLY_STRING
           && (strcmp(r->element[1]->str, c->sub_channel) == 0
               || (c->sub_own != NULL
                   && strcmp(r->element[1]->str, c->sub_own) == 0));
}

/*
 * Take every message already read or readable without blocking: how many
 * announced a release, or -1 when the subscriber connection failed.
 */
static int drain(tslock_client *c)
{
    int heard = 0;

    for (;;) {
        struct pollfd p = {.fd = c->sub->fd, .events = POLLIN};
        void *r = NULL;

        while (redisGetReplyFromReader(c->sub, &r) == REDIS_OK && r != NULL) {
            heard += is_release(r, c);
            freeReplyObject(r);
            r = NULL;
        }
        if (c->sub->err)
            return -1;
        if (poll(&p, 1, 0) != 1)
            return heard;
        if (tslock__buffer_read(c->sub) != REDIS_OK)
            return -1;
    }
}

/*
 * This client's wake channel for l's key ("{KEY}:wake:<id>w"), or NULL
 * when the key's line cannot be named (then only the key's channel).
 */
static char *own_channel(tslock_lock *l)
{
    char member[35];
    size_t size;
    char *own;

    if (!tslock__queue_named(l))
        return NULL;
    tslock__queue_member(l, 1, member);
    size = strlen(l->wake_prefix) + strlen(member) + 1;
    if ((own = malloc(size)) != NULL)
        snprintf(own, size, "%s%s", l->wake_prefix, member);
    return own;
}

/* Whether r confirms a subscription. */
static int is_subscribed(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3
           && r->element[0]->type == REDIS_REPLY_STRING
           && strcmp(r->element[0]->str, "subscribe") == 0;
}

/* The subscriber on l's channels: kept from the last wait, or made. */
static int subscribe(tslock_lock *l)
{
    tslock_client *c = l->client;
    char *own = own_channel(l);
    const char *argv[3] = {"SUBSCRIBE", l->channel, own};
    redisReply *r = NULL;
    void *second = NULL;
    int ok;

    if (c->sub != NULL && strcmp(c->sub_channel, l->channel) == 0
        && (own == NULL ? c->sub_own == NULL
                        : c->sub_own != NULL && strcmp(c->sub_own, own) == 0)) {
        free(own);
        return TSLOCK_OK;
    }
    tslock__sub_close(c);
    if (tslock__connect_side(c, &c->sub) != TSLOCK_OK) {
        free(own);
        return TSLOCK_EIO;
    }
    ok = tslock__roundtrip(c->sub, own != NULL ? 3 : 2, argv, &r) == REDIS_OK
         && is_subscribed(r);
    if (r != NULL && r->type == REDIS_REPLY_ERROR)
        tslock__wakeups_fall_back(c, TSLOCK_WAKEUPS_POLLING,
                                  "SUBSCRIBE was refused (-%.120s): waits "
                                  "poll at their retry delay",
                                  r->str);
    freeReplyObject(r);
    /* One confirmation per channel. */
    if (ok && own != NULL) {
        ok = tslock__get_reply(c->sub, &second) == REDIS_OK
             && is_subscribed((redisReply *)second);
        if (second != NULL)
            freeReplyObject(second);
    }
    if (ok)
        c->sub_channel = strdup(l->channel);
    c->sub_own = own;
    if (!ok || c->sub_channel == NULL) {
        tslock__sub_close(c); /* refused (an ACL), or no memory: poll */
        return TSLOCK_EIO;
    }
    return TSLOCK_OK;
}

/*
 * Subscribing before the first try is what makes the wake-up safe: a
 * release between a failed try and the wait is already on the
 * subscriber's socket when the wait starts, so it wakes it at once.
 * What was heard before this wait's subscription point is dropped: the
 * first try sees the lock as it is.
 */
void tslock__listen(tslock_lock *l)
{
    tslock_client *c = l->client;

    l->listening = 0;
    /* A client whose waits fell back polls from then on. */
    if (!l->wakeup || (c->wakeups & TSLOCK_WAKEUPS_POLLING)
        || tslock__channel(l) != TSLOCK_OK)
        return;
    if (subscribe(l) != TSLOCK_OK)
        return;
    if (drain(c) < 0) {
        /* It died since the last wait: once more, on a new connection. */
        tslock__sub_close(c);
        if (subscribe(l) != TSLOCK_OK || drain(c) < 0) {
            tslock__sub_close(c);
            return;
        }
    }
    l->listening = 1;
}

/*
 * Sleep up to ms on the cancel pipe and, while the wait listens, on the
 * subscriber: a message there that announces a release ends it early.
 * Without a subscriber the second descriptor is -1, which poll() skips.
 */
static int wait_for_release(tslock_lock *l, int64_t ms)
{
    int64_t end = tslock__system_ms(TSLOCK_CLOCK_MONOTONIC) + ms;
    tslock_client *c = l->client;

    for (;;) {
        struct pollfd p[2] = {{.fd = l->cancel_pipe[0], .events = POLLIN},
                              {.fd = -1, .events = POLLIN}};
        int64_t left = end - tslock__system_ms(TSLOCK_CLOCK_MONOTONIC);
        int n, heard;

        if (l->cancel_flag)
            return TSLOCK_ECANCELED;
        if (left <= 0)
            return TSLOCK_OK;
        if (l->listening && c->sub != NULL)
            p[1].fd = c->sub->fd;
        n = poll(p, 2, left > 60000 ? 60000 : (int)left);
        if (n < 0 && errno != EINTR)
            return TSLOCK_EIO;
        if (p[0].revents != 0 || l->cancel_flag)
            return TSLOCK_ECANCELED;
        if (n <= 0 || p[1].fd < 0 || p[1].revents == 0)
            continue;
        heard = drain(c);
        if (heard > 0) {
            l->woken = 1;
            return TSLOCK_OK;
        }
        if (heard < 0) { /* the subscriber failed: poll from now on */
            tslock__sub_close(c);
            l->listening = 0;
        }
    }
}

int tslock__heard_since(tslock_lock *l)
{
    tslock_client *c = l->client;
    int heard;

    if (c->sub == NULL)
        return 0;
    heard = drain(c);
    if (heard < 0) {
        tslock__sub_close(c);
        l->listening = 0;
    }
    return heard > 0;
}

void tslock__listen_no_more(tslock_lock *l, const char *why)
{
    tslock__wakeups_fall_back(l->client, TSLOCK_WAKEUPS_POLLING, "%s", why);
    tslock__sub_close(l->client);
    l->listening = 0;
}

/*
 * Sleep up to ms, returning early with TSLOCK_ECANCELED when
 * tslock_lock_cancel() writes to the lock's pipe, or, while the wait
 * listens for releases, with TSLOCK_OK when one is announced (wakeup.c).
 */
int tslock__wait(tslock_lock *l, int64_t ms)
{
    l->woken = 0;
    return wait_for_release(l, ms);
}
