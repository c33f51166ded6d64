/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wakeup.c - the wait between attempts, and waiters woken by the release
 * instead of polling.  A waiting acquire subscribes a second connection
 * of its client, before its first try, to the lock's channel and to its
 * own wake channel (names.c), and sleeps until a message on either, the
 * holder's expiry or the retry delay, whichever is first.  A release of
 * a token lock wakes the first waiter of the line on its own channel
 * (fair.c); others, and releases by earlier tslock versions, announce on
 * the lock's channel, which wakes every listener.  On a Redis 7.0+
 * Cluster the subscriptions are sharded (SSUBSCRIBE at the master of the
 * key's slot; releases SPUBLISH), and a subscription lost to a slot
 * migration or a failover is made again at the new owner, after which
 * the lock is tried once before the wait goes on.  The subscriber
 * connection is kept between waits; a wait on another key moves it to
 * that key's channels in one round trip where it leads to a node that
 * serves them (swap_on()), and opens a new one elsewhere.
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

/* What r is, against the channels c's subscriber listens to. */
static enum tslock__push push_kind(const redisReply *r, const tslock_client *c)
{
    const char *const channels[3] = {c->sub_channel, c->sub_own,
                                     c->sub_classic};

    return tslock__push_kind(r, channels, 3);
}

/* How often a wait whose subscription was lost tries to make it again. */
#define RELISTEN_MS 200

#define DRAIN_FAILED  (-1) /* the subscriber connection failed */
#define DRAIN_DROPPED (-2) /* the server ended a sharded subscription */

/*
 * Take every message already read or readable without blocking: how many
 * announced a release, DRAIN_FAILED when the subscriber connection
 * failed, or DRAIN_DROPPED when the server unsubscribed us unasked: an
 * "sunsubscribe" push, which Redis 7 sends when the slot of a sharded
 * channel leaves the node (a migration, a failover).
 */
static int drain(tslock_client *c)
{
    int heard = 0, dropped = 0;

    for (;;) {
        struct pollfd p = {.fd = c->sub->fd, .events = POLLIN};
        void *r = NULL;

        while (redisGetReplyFromReader(c->sub, &r) == REDIS_OK && r != NULL) {
            enum tslock__push kind = push_kind(r, c);
            heard += kind == TSLOCK__PUSH_MESSAGE;
            dropped |= kind == TSLOCK__PUSH_SUNSUBSCRIBE;
            freeReplyObject(r);
            r = NULL;
        }
        if (c->sub->err)
            return DRAIN_FAILED;
        if (dropped)
            return DRAIN_DROPPED;
        if (poll(&p, 1, 0) != 1)
            return heard;
        if (tslock__buffer_read(c->sub) != REDIS_OK)
            return DRAIN_FAILED;
    }
}

/*
 * This client's wake channel for l's key ("{KEY}:wake:<id>w", or "...s"
 * for a sharded listener), or NULL when the key's line cannot be named
 * (then only the key's channel).
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

/* Whether r confirms a subscription of kind ("subscribe", "ssubscribe"). */
static int is_subscribed(const redisReply *r, const char *kind)
{
    return tslock__push_kind(r, NULL, 0)
           == (strcmp(kind, "ssubscribe") == 0 ? TSLOCK__PUSH_SSUBSCRIBE
                                               : TSLOCK__PUSH_SUBSCRIBE);
}

/*
 * The name classic releases of l's key are announced on: the channel,
 * except for a '}' key without a tag, whose sharded channel took a tag
 * (names.c) but whose classic one is "KEY:released", as ever.
 */
static char *classic_channel(const tslock_lock *l)
{
    size_t size = strlen(l->key) + sizeof(":released");
    char *name;

    if (l->channel[0] != '{' || l->key[0] == '{')
        return strdup(l->channel);
    if (strncmp(l->channel + strcspn(l->channel, "}") + 1, l->key,
                strlen(l->key))
        != 0)
        return strdup(l->channel);
    if ((name = malloc(size)) != NULL)
        snprintf(name, size, "%s:released", l->key);
    return name;
}

/*
 * Read the n confirmations of kind; an error reply instead (a refused
 * SSUBSCRIBE) is handed back in *refused.  0 when all came.
 */
static int confirmed(redisContext *sub, int n, const char *kind,
                     redisReply **refused)
{
    int ok = 1;

    while (n-- > 0) {
        void *r = NULL;
        if (tslock__get_reply(sub, &r) != REDIS_OK || r == NULL)
            return 0;
        if (((redisReply *)r)->type == REDIS_REPLY_ERROR && refused != NULL
            && *refused == NULL) {
            *refused = r;
            ok = 0;
            n = 0; /* one error answers the whole command */
            continue;
        }
        ok = ok && is_subscribed((redisReply *)r, kind);
        freeReplyObject(r);
    }
    return ok;
}

/*
 * One subscribing round trip on a new connection: SSUBSCRIBE to the
 * key's channel and our own, and SUBSCRIBE to the key's classic channel
 * (so that releases by classic clients wake this waiter too), or, in
 * classic mode, SUBSCRIBE to both.  TSLOCK_OK; TSLOCK_ECLUSTER with
 * *moved set after a -MOVED; TSLOCK_EUNSUPPORTED when SSUBSCRIBE was
 * refused; TSLOCK_EIO otherwise.
 */
static int subscribe_on(tslock_client *c, const char *channel, const char *own,
                        const char *classic, int sharded, char *moved,
                        size_t moved_size, int *classic_ok)
{
    const char *argv[3] = {sharded ? "SSUBSCRIBE" : "SUBSCRIBE", channel, own};
    const char *also[2] = {"SUBSCRIBE", classic};
    struct tslock__queued q[2] = {{TSLOCK_STEP_GET, own != NULL ? 3 : 2, argv},
                                  {TSLOCK_STEP_GET, 2, also}};
    redisReply *refused = NULL;
    int ok, rc = TSLOCK_OK;

    if (tslock__send(c->sub, sharded ? 2 : 1, q) != REDIS_OK)
        return TSLOCK_EIO;
    ok = confirmed(c->sub, own != NULL ? 2 : 1,
                   sharded ? "ssubscribe" : "subscribe", &refused);
    /*
     * The classic subscription is a courtesy to classic releasers: an
     * ACL that allows only sharded channels leaves it out, and the wait
     * goes on with the sharded ones (*classic_ok = 0).
     */
    if (sharded) {
        redisReply *no = NULL;
        *classic_ok = confirmed(c->sub, 1, "subscribe", &no);
        if (no != NULL)
            freeReplyObject(no);
        else if (!*classic_ok)
            ok = 0;
    }
    if (refused != NULL) {
        if (strncmp(refused->str, "MOVED ", 6) == 0) {
            snprintf(moved, moved_size, "%s", refused->str);
            rc = TSLOCK_ECLUSTER;
        } else {
            rc = TSLOCK_EUNSUPPORTED;
            /* A refused classic SUBSCRIBE (an ACL, a managed service):
             * waits poll at their retry delay from then on. */
            if (!sharded)
                tslock__wakeups_fall_back(c, TSLOCK_WAKEUPS_POLLING,
                                          "SUBSCRIBE was refused (-%.120s): "
                                          "waits poll at their retry delay",
                                          refused->str);
        }
        freeReplyObject(refused);
        return rc;
    }
    return ok ? TSLOCK_OK : TSLOCK_EIO;
}

/* Whether the subscriber already listens where l's wait needs it to. */
static int listens_for(const tslock_client *c, const tslock_lock *l,
                       const char *own, int sharded)
{
    return c->sub != NULL && strcmp(c->sub_channel, l->channel) == 0
           && c->sub_sharded == sharded
           && (own == NULL
                   ? c->sub_own == NULL
                   : c->sub_own != NULL && strcmp(c->sub_own, own) == 0);
}

/* Whether the open subscriber leads to host:port, in the same mode. */
static int leads_to(const tslock_client *c, const char *host, int port,
                    int sharded)
{
    return c->sub != NULL && !c->sub->err && !c->sub_swap_refused
           && c->sub_channel != NULL && c->sub_sharded == sharded
           && c->sub_port == port && c->sub_host != NULL && host != NULL
           && strcmp(c->sub_host, host) == 0;
}

/* One confirmation a swap waits for: its kind, its channel, its command. */
struct expected {
    const char *kind;
    const char *channel;
    int command;
};

#define SWAP_FAILED  (-1) /* the connection failed or answered otherwise */
#define SWAP_REFUSED (-2) /* an UNSUBSCRIBE was refused (an ACL, a proxy) */

/* Whether r is an "unsubscribe" or "sunsubscribe" push. */
static int is_unsubscribed(const redisReply *r)
{
    return tslock__push_is(r, "unsubscribe", NULL)
           || tslock__push_is(r, "sunsubscribe", NULL);
}

/*
 * Whether an error answering UNSUBSCRIBE refuses it for good (an ACL's
 * -NOPERM, a proxy's unknown command), rather than for now: a -MOVED or
 * -ASK (the old channels' slot left the node), or a cluster or server
 * not ready.
 */
static int refusal(const char *line)
{
    static const char *const now[] = {"MOVED ",      "ASK ",    "TRYAGAIN",
                                      "CLUSTERDOWN", "LOADING", "BUSY",
                                      "MASTERDOWN"};
    size_t i;

    for (i = 0; i < sizeof(now) / sizeof(now[0]); i++)
        if (strncmp(line, now[i], strlen(now[i])) == 0)
            return 0;
    return 1;
}

/*
 * Read the confirmations of a swap's pipeline, in order.  Messages are
 * passed over: those of the old channels were published before their
 * UNSUBSCRIBE ran, and those of the new ones before the first try, which
 * sees the lock as it is (listen_fresh() drops them too).  An unasked
 * "sunsubscribe" of an old channel (its slot left the node before our
 * SUNSUBSCRIBE ran, which Redis then confirms as well) is passed over
 * too.  An error answering the classic SUBSCRIBE, the last command, sets
 * *classic_ok to 0, as on a new connection.  0; SWAP_REFUSED when a
 * refusal() answered an unsubscribing command; SWAP_FAILED on any other
 * error or reply, or when the connection failed.
 */
static int swap_replies(redisContext *sub, const struct expected *e, int n,
                        const char *const *old, const char *const *now,
                        int classic_cmd, int *classic_ok)
{
    int i = 0;

    while (i < n) {
        void *v = NULL;
        redisReply *r;
        int rc = 0;

        if (tslock__get_reply(sub, &v) != REDIS_OK || v == NULL)
            return SWAP_FAILED;
        r = v;
        if (tslock__push_is(r, "message", NULL)
            || tslock__push_is(r, "smessage", NULL)) {
            ; /* before the subscription point: dropped */
        } else if (r->type == REDIS_REPLY_ERROR) {
            if (e[i].command == classic_cmd) {
                *classic_ok = 0; /* an ACL of sharded channels only */
                i = n;
            } else {
                rc = strstr(e[i].kind, "unsub") != NULL && refusal(r->str)
                         ? SWAP_REFUSED
                         : SWAP_FAILED;
            }
        } else if (tslock__push_is(r, e[i].kind, e[i].channel)) {
            i++;
        } else if (!is_unsubscribed(r) || !tslock__push_on(r, old, 3)
                   || tslock__push_on(r, now, 3)) {
            rc = SWAP_FAILED;
        }
        freeReplyObject(r);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/*
 * Move the open subscriber from the channels it listens on to l's, in
 * one round trip: UNSUBSCRIBE (SUNSUBSCRIBE) the old ones and SUBSCRIBE
 * (SSUBSCRIBE) the new ones, pipelined.  Redis answers them in order,
 * so every message of an old channel comes before the last of their
 * confirmations, all of which are read here: none is left for drain()
 * to take for a release.  TSLOCK_OK with *classic_ok set as
 * subscribe_on() sets it; else the connection is to be closed and a new
 * one made (TSLOCK_EUNSUPPORTED: the server refused to unsubscribe, so
 * this client swaps no more).
 */
static int swap_on(tslock_client *c, const char *channel, const char *own,
                   const char *classic, int sharded, int *classic_ok)
{
    const char *old[3] = {c->sub_channel, c->sub_own, c->sub_classic};
    const char *now[3] = {channel, own, classic};
    const char *unsub[3] = {sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE",
                            c->sub_channel, c->sub_own};
    const char *unsub_classic[2] = {"UNSUBSCRIBE", c->sub_classic};
    const char *sub[3] = {sharded ? "SSUBSCRIBE" : "SUBSCRIBE", channel, own};
    const char *sub_classic[2] = {"SUBSCRIBE", classic};
    struct tslock__queued q[4];
    struct expected e[7];
    int nq = 0, ne = 0, classic_cmd = -1, rc;

    e[ne++] = (struct expected){sharded ? "sunsubscribe" : "unsubscribe",
                                c->sub_channel, nq};
    if (c->sub_own != NULL)
        e[ne++] = (struct expected){e[0].kind, c->sub_own, nq};
    q[nq++] = (struct tslock__queued){TSLOCK_STEP_GET,
                                      c->sub_own != NULL ? 3 : 2, unsub};
    if (c->sub_classic != NULL) {
        e[ne++] = (struct expected){"unsubscribe", c->sub_classic, nq};
        q[nq++] = (struct tslock__queued){TSLOCK_STEP_GET, 2, unsub_classic};
    }
    e[ne] =
        (struct expected){sharded ? "ssubscribe" : "subscribe", channel, nq};
    if (own != NULL) {
        e[ne + 1] = (struct expected){e[ne].kind, own, nq};
        ne++;
    }
    ne++;
    q[nq++] =
        (struct tslock__queued){TSLOCK_STEP_GET, own != NULL ? 3 : 2, sub};
    if (classic != NULL) {
        classic_cmd = nq;
        e[ne++] = (struct expected){"subscribe", classic, nq};
        q[nq++] = (struct tslock__queued){TSLOCK_STEP_GET, 2, sub_classic};
    }
    *classic_ok = 1;
    if (tslock__send(c->sub, nq, q) != REDIS_OK)
        return TSLOCK_EIO;
    rc = swap_replies(c->sub, e, ne, old, now, classic_cmd, classic_ok);
    if (rc == SWAP_REFUSED) {
        c->sub_swap_refused = 1;
        return TSLOCK_EUNSUPPORTED;
    }
    return rc == 0 ? TSLOCK_OK : TSLOCK_EIO;
}

/* Note what the subscriber listens on now: TSLOCK_OK or ENOMEM. */
static int listening_on(tslock_client *c, const tslock_lock *l, char *own,
                        char *classic, int sharded)
{
    char *channel = strdup(l->channel);

    if (channel == NULL)
        return TSLOCK_ENOMEM;
    free(c->sub_channel);
    free(c->sub_own);
    free(c->sub_classic);
    c->sub_channel = channel;
    c->sub_own = own;
    c->sub_classic = classic;
    c->sub_sharded = sharded;
    return TSLOCK_OK;
}

/*
 * The subscriber on l's channels: kept from the last wait; or the one
 * open moved to them in one round trip (swap_on()), where it leads to
 * where they are to be heard (always on a single server, and with
 * classic pub/sub, whose messages every node delivers; on a cluster
 * with sharded wake-ups, when the master of the new key's slot is the
 * node it leads to); or made: on a cluster with sharded wake-ups at the
 * master of the key's slot (asking the slot map again with refresh, and
 * following a -MOVED), elsewhere on a second connection to the client's
 * server.  A server or proxy that refuses SSUBSCRIBE turns the client to
 * classic pub/sub for good.
 */
static int subscribe(tslock_lock *l, int refresh)
{
    tslock_client *c = l->client;
    int tries, rc = TSLOCK_EIO;

    for (tries = 0; tries < 4; tries++) {
        int sharded = tslock__sharded(c), port = c->port;
        char *own = own_channel(l), *classic = NULL, moved[300];
        const char *host = c->host;
        int classic_ok = 0;

        if (listens_for(c, l, own, sharded)) {
            free(own);
            return TSLOCK_OK;
        }
        classic = sharded ? classic_channel(l) : NULL;
        if (sharded && classic == NULL) {
            free(own);
            tslock__sub_close(c);
            return TSLOCK_ENOMEM;
        }
        if (sharded)
            tslock__cluster_owner(c, l->channel, refresh, &host, &port);
        if (leads_to(c, host, port, sharded)
            && swap_on(c, l->channel, own, classic, sharded, &classic_ok)
                   == TSLOCK_OK) {
            if (!classic_ok) {
                free(classic); /* refused: sharded only */
                classic = NULL;
            }
            if (listening_on(c, l, own, classic, sharded) == TSLOCK_OK)
                return TSLOCK_OK;
            free(own);
            free(classic);
            tslock__sub_close(c);
            return TSLOCK_ENOMEM;
        }
        tslock__sub_close(c);
        rc = tslock__connect_node(c, host, port, &c->sub);
        if (rc == TSLOCK_OK && (c->sub_host = strdup(host)) == NULL)
            rc = TSLOCK_ENOMEM;
        c->sub_port = port;
        if (rc == TSLOCK_OK)
            rc = subscribe_on(c, l->channel, own, classic, sharded, moved,
                              sizeof(moved), &classic_ok);
        if (rc == TSLOCK_OK && !classic_ok) {
            free(classic); /* refused: sharded only */
            classic = NULL;
        }
        if (rc == TSLOCK_OK) {
            rc = listening_on(c, l, own, classic, sharded);
            if (rc == TSLOCK_OK)
                return TSLOCK_OK;
        }
        free(own);
        free(classic);
        tslock__sub_close(c); /* refused (an ACL), or no memory: poll */
        if (rc == TSLOCK_ECLUSTER)
            tslock__cluster_moved(c, moved); /* to the new owner */
        else if (rc == TSLOCK_EUNSUPPORTED && sharded)
            c->sharded_refused = 1; /* once more, classic */
        else
            return TSLOCK_EIO;
        refresh = 0;
    }
    return rc;
}

/* Subscribe and take what was heard before: 0, or -1 when that failed. */
static int listen_fresh(tslock_lock *l, int refresh)
{
    tslock_client *c = l->client;
    int tries;

    for (tries = 0; tries < 2; tries++) {
        if (subscribe(l, refresh) != TSLOCK_OK)
            break;
        if (drain(c) >= 0)
            return 0;
        /* It died or was dropped since the last wait: once more, anew. */
        tslock__sub_close(c);
        refresh = 1;
    }
    tslock__sub_close(c);
    return -1;
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
    l->listening = 0;
    /* A client whose waits fell back polls from then on. */
    l->lost_listen = 0;
    if (!l->wakeup || (l->client->wakeups & TSLOCK_WAKEUPS_POLLING)
        || tslock__channel(l) != TSLOCK_OK)
        return;
    if (listen_fresh(l, 0) == 0)
        l->listening = 1;
}

/*
 * The subscription was lost in a wait: its connection failed (the node
 * died), or the server dropped a sharded subscription (its slot moved).
 * Subscribe again, at the slot's owner as the cluster names it now, and
 * have the caller try the lock once at once, before it waits again: a
 * release may have gone by while nobody listened.  Where subscribing
 * fails (the owner is down and not yet replaced), the wait polls, and
 * the next wait tries to subscribe again.
 */
static void relisten(tslock_lock *l)
{
    tslock__sub_close(l->client);
    l->listening = listen_fresh(l, 1) == 0;
    l->lost_listen = !l->listening;
    l->woken = 1;
    l->resubscribed++;
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
        if (l->lost_listen && left > RELISTEN_MS)
            left = RELISTEN_MS;
        n = poll(p, 2, left > 60000 ? 60000 : (int)left);
        if (n < 0 && errno != EINTR)
            return TSLOCK_EIO;
        if (p[0].revents != 0 || l->cancel_flag)
            return TSLOCK_ECANCELED;
        /*
         * A subscription lost, whose owner was down then (a master died
         * and its replica is not promoted yet): again every RELISTEN_MS,
         * and once it is made, try the lock before waiting on.
         */
        if (n == 0 && l->lost_listen && l->waiting) {
            relisten(l);
            if (l->listening)
                return TSLOCK_OK;
            continue;
        }
        if (n <= 0 || p[1].fd < 0 || p[1].revents == 0)
            continue;
        heard = drain(c);
        if (heard > 0) {
            l->woken = 1;
            return TSLOCK_OK;
        }
        if (heard < 0) {
            relisten(l); /* made again: try once; else poll for the owner */
            if (l->listening)
                return TSLOCK_OK;
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
