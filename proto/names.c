/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * names.c - the names tslock gives beside a lock key: the bridge owner
 * key, the release channel, and the line of waiters with its wake
 * channels.  Each lands in the lock key's Cluster hash
 * slot, so a script or transaction that names both never crosses slots.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/*
 * A hash tag of digits that hashes to key's slot: the first of "0", "1",
 * "2"... that does, so every client finds the same one.  The slots of
 * the numbers below 10^6 cover all 16384 (CRC16 over them is well
 * spread; a few tens of thousands of tries at most, once per lock).
 */
static void slot_tag(const char *key, char out[12])
{
    unsigned want = tslock__slot(key, strlen(key));
    long n;

    for (n = 0; n < 10000000; n++) {
        int len = snprintf(out, 12, "%ld", n);
        if (tslock__slot(out, (size_t)len) == want)
            return;
    }
    out[0] = '\0';
}

/* The names of the wake-ups, which a sharded '}' key may take a tag for. */
static int is_wakeup_name(const char *suffix)
{
    return strcmp(suffix, ":released") == 0 || strcmp(suffix, ":queue") == 0
           || strcmp(suffix, ":alive") == 0 || strcmp(suffix, ":queue-seq") == 0
           || strcmp(suffix, ":wake:") == 0;
}

/*
 * A key with a usable hash tag ("{x}...") keeps it, so its companions
 * hash with it; a key without one is made the tag ("{key}:owner").  A key
 * with a '}' but no usable tag gets the plain suffix, since wrapping it
 * in braces would make a different tag; with sharded wake-ups, its
 * wake-up names instead take a tag of digits that hashes to its slot
 * ("{4711}a}b:released"), since a sharded channel must share the slot.
 */
int tslock__companion(tslock_lock *l, char **slot, const char *suffix)
{
    const char *k = l->key, *open = strchr(k, '{');
    const char *close = open != NULL ? strchr(open + 1, '}') : NULL;
    int tagged = close != NULL && close > open + 1;
    size_t len = strlen(k) + strlen(suffix) + 3 + 12;
    char tag[12];

    if (*slot != NULL)
        return TSLOCK_OK;
    tag[0] = '\0';
    if (!tagged && strchr(k, '}') != NULL && l->client->cluster != NULL
        && tslock__sharded(l->client) && is_wakeup_name(suffix))
        slot_tag(k, tag);
    /*
     * "a}b" hashes whole, and no name with a suffix can: neither
     * "a}b:owner" nor "{a}b}:owner" shares its slot.  On a cluster that
     * would be CROSSSLOT or another node, so it is refused by name.  The
     * classic channel is no key: classic PUBLISH reaches every node.
     */
    if (!tagged && tag[0] == '\0' && strchr(k, '}') != NULL
        && l->client->cluster != NULL && strcmp(suffix, ":released") != 0)
        return tslock__fail(l->client, TSLOCK_ECLUSTER,
                            "key '%s' has a '}' but no hash tag, so its "
                            "companion '%s%s' cannot share its Cluster hash "
                            "slot; give the key a hash tag ('{tag}...')",
                            k, k, suffix);
    *slot = malloc(len);
    if (*slot == NULL)
        return tslock__fail(l->client, TSLOCK_ENOMEM,
                            "no memory for the name '%s%s'", k, suffix);
    if (tag[0] != '\0')
        snprintf(*slot, len, "{%s}%s%s", tag, k, suffix);
    else if (tagged || strchr(k, '}') != NULL)
        snprintf(*slot, len, "%s%s", k, suffix);
    else
        snprintf(*slot, len, "{%s}%s", k, suffix);
    return TSLOCK_OK;
}

int tslock__fence_key(tslock_lock *l, char **out)
{
    size_t len = strlen(l->key);

    *out = NULL;
    if (l->client->cluster != NULL)
        return tslock__companion(l, out, ":fence");
    *out = malloc(len + sizeof(":fence"));
    if (*out == NULL)
        return tslock__fail(l->client, TSLOCK_ENOMEM,
                            "no memory for the fence key");
    memcpy(*out, l->key, len);
    memcpy(*out + len, ":fence", sizeof(":fence"));
    return TSLOCK_OK;
}

int tslock__channel(tslock_lock *l)
{
    return tslock__companion(l, &l->channel, ":released");
}

int tslock__publish_queued(tslock_lock *l, const char *argv[3],
                           struct tslock__queued *q)
{
    if (l->client->publish_refused || l->channel == NULL)
        return 0;
    argv[0] = tslock__announce_sharded(l) ? "SPUBLISH" : "PUBLISH";
    argv[1] = l->channel;
    argv[2] = l->key;
    q->step = TSLOCK_STEP_PUBLISH;
    q->argc = 3;
    q->argv = argv;
    return 1;
}

/*
 * Whether an announcement on the key's channel goes by SPUBLISH.  Only
 * when sharded was asked for by name: under TSLOCK_PUBSUB_AUTO a
 * sharded waiter also listens on the key's classic channel, and waiters
 * of tslock 1.0 (timestamp and bridge locks, which keep no line) listen
 * there alone, so those announcements stay classic while such clients
 * may remain.  The releases of token locks wake their line entry by
 * entry, each in the way it listens (SCRIPT_RELEASE_WAKE), and need
 * no such care.
 */
int tslock__announce_sharded(const tslock_lock *l)
{
    return l->client->pubsub_mode == TSLOCK_PUBSUB_SHARDED
           && tslock__sharded(l->client);
}

/*
 * A server that refuses PUBLISH (a Redis 6+ ACL without channels, a proxy
 * that filters it) must not stop releases: the refusal is remembered and
 * later releases go without their announcement, so waiters poll.
 */
int tslock__publish_refused(tslock_client *c, const redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_ERROR)
        return 0;
    c->publish_refused = 1;
    tslock__wakeups_fall_back(c, TSLOCK_WAKEUPS_UNANNOUNCED,
                              "PUBLISH was refused (-%.120s): this client's "
                              "releases go unannounced, and their waiters "
                              "poll at their retry delay",
                              r->str);
    return 1;
}

/* The line of waiters (fair.c) and the prefix of its wake channels. */
int tslock__queue_names(tslock_lock *l)
{
    int rc = tslock__companion(l, &l->queue_key, ":queue");

    if (rc == TSLOCK_OK)
        rc = tslock__companion(l, &l->alive_key, ":alive");
    if (rc == TSLOCK_OK)
        rc = tslock__companion(l, &l->seq_key, ":queue-seq");
    if (rc == TSLOCK_OK)
        rc = tslock__companion(l, &l->wake_prefix, ":wake:");
    if (rc == TSLOCK_OK && l->client->waiter_id[0] == '\0')
        rc = tslock__make_token(l->client, l->client->waiter_id);
    return rc;
}

/*
 * Whether l's line can be named, leaving no error behind: where it
 * cannot (a '}' key without a tag on a cluster, no memory), waiters are
 * woken with all the others, which is no failure of the call at hand.
 */
int tslock__queue_named(tslock_lock *l)
{
    char keep[TSLOCK__ERRSTR_SIZE];
    int rc;

    /* Named before (the last name is made last): nothing can fail. */
    if (l->wake_prefix != NULL && l->client->waiter_id[0] != '\0')
        return 1;
    memcpy(keep, l->client->errstr, sizeof(keep));
    rc = tslock__queue_names(l);
    memcpy(l->client->errstr, keep, sizeof(keep));
    return rc == TSLOCK_OK;
}

/*
 * The entry names the client and says whether it listens, and how: a
 * release wakes only listeners, on the channel the entry names, with
 * PUBLISH for a classic listener ('w') and SPUBLISH for a sharded one
 * ('s'), and takes a listener that no subscriber hears as gone.  A
 * polling entry ('p') is never woken; it takes its turn at its next
 * retry.  Releases by tslock before sharded wake-ups take an 's' entry
 * for a polling one: they announce on the key's channel instead, which
 * a sharded listener also hears (wakeup.c).
 */
void tslock__queue_member(const tslock_lock *l, int listening, char out[35])
{
    snprintf(out, 35, "%s%c", l->client->waiter_id,
             !listening                   ? 'p'
             : tslock__sharded(l->client) ? 's'
                                          : 'w');
}

/*
 * Whether a release of l wakes one waiter from the line (fair.c): a
 * token lock whose line can be named.  Other schemes' waiters do not
 * queue, and are woken by the announcement on the key's channel.
 */
int tslock__wakes_one(tslock_lock *l)
{
    return l->used == TSLOCK_SCHEME_TOKEN && !l->client->publish_refused
           && tslock__queue_named(l);
}

/*
 * Take entry out of l's line (its place and its liveness) and, with
 * announce, say on the key's channel that the key is free, in one round
 * trip.  Best effort, leaving the client's error as it was: an entry
 * left behind lapses by itself, and a lost announcement leaves waiters
 * to their retry delay.
 */
void tslock__line_drop(tslock_lock *l, const char *entry, int announce)
{
    const char *zq[3] = {"ZREM", l->queue_key, entry};
    const char *za[3] = {"ZREM", l->alive_key, entry};
    const char *publish[3];
    struct tslock__queued q[3] = {{TSLOCK_STEP_ZREM, 3, zq},
                                  {TSLOCK_STEP_ZREM, 3, za}};
    int n = 2 + (announce ? tslock__publish_queued(l, publish, &q[2]) : 0);
    char keep[TSLOCK__ERRSTR_SIZE];
    redisReply *r[3];

    memcpy(keep, l->client->errstr, sizeof(keep));
    if (tslock__pipeline(l->client, l->key, n, q, r) == TSLOCK_OK)
        tslock__free_replies(n, r);
    memcpy(l->client->errstr, keep, sizeof(keep));
}
