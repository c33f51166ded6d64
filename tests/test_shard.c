/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard.c - sharded wake-ups (SSUBSCRIBE, SPUBLISH) on a real Redis
 * 7.0 Cluster of three masters with one replica each, and waiters that
 * survive what moves a slot: a migration, a manual failover (plain and
 * FORCE) and a master killed with SIGKILL.  Every hold is checked by an
 * overlap checker that tells overlaps asynchronous replication allows
 * (a hold no replica acknowledged, on a master since replaced) from real
 * ones, and is itself shown to fail on a known-broken client.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness_cluster.h"

static th_cluster cl;

#define WAITERS 16
/*
 * Waiters retry only every 30 s: every acquisition within the bounds
 * below came from a wake-up or from the retry after a lost
 * subscription, never from polling.
 */
#define RETRY_MS 30000
/* The documented bound (doc/topologies.md) this test holds them to. */
#define BOUND_MS 10000

static tslock_client *client_on(int node, int pubsub)
{
    tslock_client *c = NULL;
    int rc = tslock_client_new(&c);

    if (rc == TSLOCK_OK)
        rc = tslock_client_set_pubsub(c, pubsub);
    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_tcp(c, "127.0.0.1", cl.node[node].port);
    if (rc != TSLOCK_OK) {
        fprintf(stderr, "client_on(%d): %s: %s\n", node, tslock_errname(rc),
                tslock_client_errstr(c));
        exit(2);
    }
    return c;
}

static tslock_lock *waiting_lock(tslock_client *c, const char *key)
{
    tslock_lock *l = NULL;

    if (tslock_lock_new(&l, c, key) != TSLOCK_OK)
        exit(2);
    tslock_lock_set_ttl(l, 60000);
    tslock_lock_set_retry(l, RETRY_MS, RETRY_MS);
    return l;
}

/* The sum over the live nodes of a CLUSTER INFO counter. */
static long bus_stat(const char *field)
{
    long sum = 0;
    int i;

    for (i = 0; i < cl.n; i++) {
        redisContext *c;
        redisReply *r;
        const char *p;

        if (cl.node[i].pid == 0)
            continue;
        c = th_redis(&cl.node[i]);
        r = redisCommand(c, "CLUSTER INFO");
        if (r != NULL && r->type == REDIS_REPLY_STRING
            && (p = strstr(r->str, field)) != NULL)
            sum += atol(p + strlen(field) + 1);
        freeReplyObject(r);
        redisFree(c);
    }
    return sum;
}

/* A raw command on node i: its reply, or NULL. */
static redisReply *on_node(int i, const char *fmt, ...)
{
    redisContext *c = th_redis(&cl.node[i]);
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

/*
 * Wait (10 s at most) until master i itself lists a replica of its own
 * over a connected link: SPUBLISH reaches the shard's other nodes by the
 * master's own view (its replicas, their links), which right after the
 * cluster is made can still lack the replica that every other node
 * already names.
 */
static int await_own_replica(int i)
{
    char want[64];
    int k;

    snprintf(want, sizeof(want), "slave %s ", cl.id[i]);
    for (k = 0; k < 1000; k++) {
        redisReply *r = on_node(i, "CLUSTER NODES");
        const char *line =
            r != NULL && r->type == REDIS_REPLY_STRING ? r->str : NULL;
        int found = 0;

        while (line != NULL && *line != '\0' && !found) {
            const char *eol = strchr(line, '\n'), *at = strstr(line, want);
            const char *up = strstr(line, " connected");

            found = at != NULL && up != NULL && (eol == NULL || up < eol)
                    && (eol == NULL || at < eol);
            line = eol != NULL ? eol + 1 : NULL;
        }
        freeReplyObject(r);
        if (found)
            return 1;
        poll(NULL, 0, 10);
    }
    return 0;
}

/* Subscribers of channel (which: NUMSUB or SHARDNUMSUB), asked on raw. */
static long long numsub_on(redisContext *raw, const char *which,
                           const char *channel)
{
    redisReply *r = redisCommand(raw, "PUBSUB %s %s", which, channel);
    long long n = -1;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2
        && r->element[1]->type == REDIS_REPLY_INTEGER)
        n = r->element[1]->integer;
    freeReplyObject(r);
    return n;
}

/* Node i's count of subscribers of channel, on a connection of its own. */
static long long subscribers(int i, const char *which, const char *channel)
{
    redisContext *c = th_redis(&cl.node[i]);
    long long n = numsub_on(c, which, channel);

    redisFree(c);
    return n;
}

/* Wait (10 s at most) for n subscribers of channel on node i. */
static int await_subscribers(int i, const char *which, const char *channel,
                             long long n)
{
    int k;

    for (k = 0; k < 2000; k++) {
        if (subscribers(i, which, channel) >= n)
            return 1;
        poll(NULL, 0, 5);
    }
    return 0;
}

/* The length of key's line, asked through a client of node i. */
static long long line_length(int i, const char *key)
{
    tslock_client *c = NULL;
    tslock_lock *l = NULL;
    int64_t n = -1;

    if (tslock_client_new(&c) == TSLOCK_OK
        && tslock_client_connect_tcp(c, "127.0.0.1", cl.node[i].port)
               == TSLOCK_OK
        && tslock_lock_new(&l, c, key) == TSLOCK_OK
        && tslock_lock_queue_length(l, &n) != TSLOCK_OK)
        n = -1;
    tslock_lock_free(l);
    tslock_client_free(c);
    return (long long)n;
}

/* Wait (BOUND_MS at most) until key's line is n long. */
static int await_line(int i, const char *key, long long n)
{
    int64_t end = th_mono_ms() + BOUND_MS;

    while (th_mono_ms() < end) {
        if (line_length(i, key) == n)
            return 1;
        poll(NULL, 0, 5);
    }
    return 0;
}

/* A key whose slot the master `owner` serves. */
static void key_on(int owner, const char *prefix, char *out, size_t size)
{
    int i;

    for (i = 0;; i++) {
        snprintf(out, size, "%s:%d", prefix, i);
        if (th_cluster_owner(&cl, out) == owner)
            return;
    }
}

/* A node other than these (a seed for clients that must be redirected). */
static int other_node(int a, int b)
{
    int i;

    for (i = 0; i < cl.n; i++)
        if (i != a && i != b && cl.node[i].pid != 0)
            return i;
    return -1;
}

/* ------------------------------------------------- one waiter, threads */

struct waiter {
    tslock_lock *lock;
    int rc;
    int64_t took_ms; /* monotonic, when the acquire returned */
    pthread_t thread;
    th_bound bound;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;

    w->rc = tslock_acquire(w->lock, BOUND_MS);
    w->took_ms = th_mono_ms();
    return NULL;
}

static void waiter_start(struct waiter *w, tslock_lock *l)
{
    w->lock = l;
    w->rc = -1000;
    th_bound_start(&w->bound, l);
    CU_ASSERT_FATAL(pthread_create(&w->thread, NULL, wait_thread, w) == 0);
}

static void waiter_join(struct waiter *w)
{
    pthread_join(w->thread, NULL);
    th_bound_end(&w->bound);
}

/* ------------------------------------------------- sharded wake-ups */

/*
 * One release woken waiter, once with sharded and once with classic
 * pub/sub: the cluster bus carries the sharded wake-up only inside the
 * key's shard (its master's one replica), the classic one to every
 * node.  The waiter retries only every 30 s, so its acquisition within
 * the bound is the wake-up's.
 */
static void release_and_count(int pubsub, long *publish, long *shard)
{
    int owner, seed;
    char key[32];
    tslock_client *hc, *wc;
    tslock_lock *h, *w;
    struct waiter wt;
    long p0, s0;

    owner = th_cluster_owner(&cl, "{wk}");
    snprintf(key, sizeof(key), "{wk}:%d", pubsub);
    seed = other_node(owner, -1);
    hc = client_on(seed, pubsub);
    wc = client_on(seed, pubsub);
    CU_ASSERT_EQUAL(tslock_client_get_pubsub(hc),
                    pubsub == TSLOCK_PUBSUB_CLASSIC ? TSLOCK_PUBSUB_CLASSIC
                                                    : TSLOCK_PUBSUB_SHARDED);
    h = waiting_lock(hc, key);
    w = waiting_lock(wc, key);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    waiter_start(&wt, w);
    CU_ASSERT_FATAL(await_line(owner, key, 1));
    CU_ASSERT_FATAL(await_own_replica(owner));
    p0 = bus_stat("cluster_stats_messages_publish_sent");
    s0 = bus_stat("cluster_stats_messages_publishshard_sent");
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    waiter_join(&wt);
    CU_ASSERT_EQUAL(wt.rc, TSLOCK_OK);
    *publish = bus_stat("cluster_stats_messages_publish_sent") - p0;
    *shard = bus_stat("cluster_stats_messages_publishshard_sent") - s0;
    CU_ASSERT_EQUAL(tslock_release(w), TSLOCK_OK);
    tslock_lock_free(h);
    tslock_lock_free(w);
    tslock_client_free(hc);
    tslock_client_free(wc);
}

static void test_sharded_stays_in_shard(void)
{
    long pub, shard, cpub, cshard;

    release_and_count(TSLOCK_PUBSUB_AUTO, &pub, &shard);
    release_and_count(TSLOCK_PUBSUB_CLASSIC, &cpub, &cshard);
    printf("\n    bus messages per wake-up: sharded %ld publish + %ld "
           "publishshard; classic %ld publish + %ld publishshard (%d nodes) ",
           pub, shard, cpub, cshard, cl.n);
    CU_ASSERT_EQUAL(pub, 0);
    CU_ASSERT_TRUE(shard >= 1 && shard <= 1); /* the master's one replica */
    CU_ASSERT_EQUAL(cpub, cl.n - 1);          /* every other node */
    CU_ASSERT_EQUAL(cshard, 0);
}

/*
 * A sharded client's announcements outside the release scripts stay in
 * the shard too: a timestamp lock released in the classic form (GET,
 * compare, DEL, then the announcement by itself), and a lock broken
 * (tslock_lock_break) by another sharded client.  Counted on the bus as
 * above: no publish message, the master's one replica's publishshard.
 */
static void announce_and_count(int do_break, long *publish, long *shard)
{
    int owner = th_cluster_owner(&cl, "{an}"), seed = other_node(owner, -1);
    tslock_client *hc = client_on(seed, TSLOCK_PUBSUB_SHARDED);
    tslock_client *bc = client_on(seed, TSLOCK_PUBSUB_SHARDED);
    tslock_lock *h = waiting_lock(hc, "{an}:lock");
    tslock_lock *b = waiting_lock(bc, "{an}:lock");
    char value[128];
    long p0, s0;
    int rc;

    CU_ASSERT_EQUAL(tslock_lock_set_scheme(h, TSLOCK_SCHEME_TIMESTAMP),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_release_form(h, TSLOCK_RELEASE_CLASSIC),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(tslock_lock_peek(b, value, sizeof(value), NULL),
                          TSLOCK_OK);
    CU_ASSERT_FATAL(await_own_replica(owner));
    p0 = bus_stat("cluster_stats_messages_publish_sent");
    s0 = bus_stat("cluster_stats_messages_publishshard_sent");
    rc = do_break ? tslock_lock_break(b, value) : tslock_release(h);
    CU_ASSERT_EQUAL(rc, TSLOCK_OK);
    *publish = bus_stat("cluster_stats_messages_publish_sent") - p0;
    *shard = bus_stat("cluster_stats_messages_publishshard_sent") - s0;
    if (do_break)
        CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_ELOST);
    tslock_lock_free(h);
    tslock_lock_free(b);
    tslock_client_free(hc);
    tslock_client_free(bc);
}

static void test_classic_release_and_break_stay_in_shard(void)
{
    long rpub, rshard, bpub, bshard;

    announce_and_count(0, &rpub, &rshard);
    announce_and_count(1, &bpub, &bshard);
    printf("\n    bus messages: classic-form release %ld publish + %ld "
           "publishshard; break %ld publish + %ld publishshard ",
           rpub, rshard, bpub, bshard);
    CU_ASSERT_EQUAL(rpub, 0);
    CU_ASSERT_EQUAL(rshard, 1); /* the master's one replica */
    CU_ASSERT_EQUAL(bpub, 0);
    CU_ASSERT_EQUAL(bshard, 1);
}

/*
 * tslock 1.0's release of a token lock with a line, verbatim (SHA1
 * 74490905): it knows only 'w' (classic) entries, takes an 's' entry
 * for a polling one and announces on the key's classic channel.
 */
static const char release_1_0[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end "
    "redis.call('del', KEYS[1]) local line = redis.call('zrange', "
    "KEYS[2], '0', '3') if line[1] then local now = tonumber(ARGV[3]) "
    "local wake = string.sub(ARGV[2], 1, -10) .. ':wake:' for _, h in "
    "ipairs(line) do local a = tonumber(redis.call('zscore', KEYS[3], "
    "h)) local w = string.sub(h, -1) == 'w' if a and a >= now and w "
    "then local n = redis.pcall('publish', wake .. h, KEYS[1]) if "
    "type(n) ~= 'number' or n > 0 or ARGV[4] == 'cluster' then return "
    "1 end end if not a or a < now or w then redis.call('zrem', "
    "KEYS[2], h) redis.call('zrem', KEYS[3], h) end end end "
    "redis.pcall('publish', ARGV[2], KEYS[1]) return 1";

/*
 * A rolling upgrade: waiters and releasers of both kinds on one key.
 * A sharded waiter is woken by tslock 1.0's release (on the key's
 * classic channel, which it also hears) and by a classic client; a
 * classic waiter by a sharded client (its 'w' entry is woken with
 * PUBLISH); and waiters of timestamp locks, which keep no line, both
 * ways.  Each waiter retries only every 30 s.
 */
static void one_pair(int wmode, int hmode, tslock_scheme scheme, int old)
{
    int owner = th_cluster_owner(&cl, "{mix}");
    tslock_client *hc = client_on(owner, hmode), *wc = client_on(owner, wmode);
    tslock_lock *h = waiting_lock(hc, "{mix}"), *w = waiting_lock(wc, "{mix}");
    struct waiter wt;
    redisReply *r;
    char now[24];

    tslock_lock_set_scheme(h, scheme);
    tslock_lock_set_scheme(w, scheme);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    waiter_start(&wt, w);
    if (scheme == TSLOCK_SCHEME_TOKEN) {
        CU_ASSERT_FATAL(await_line(owner, "{mix}", 1));
    } else {
        CU_ASSERT_FATAL(await_subscribers(
            owner, wmode == TSLOCK_PUBSUB_CLASSIC ? "NUMSUB" : "SHARDNUMSUB",
            "{mix}:released", 1));
    }
    if (old) {
        snprintf(now, sizeof(now), "%lld", (long long)(th_wall_us() / 1000));
        r = on_node(owner,
                    "EVAL %s 3 {mix} {mix}:queue {mix}:alive %s %s %s "
                    "cluster",
                    release_1_0, tslock_lock_value(h), "{mix}:released", now);
        CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER
                       && r->integer == 1);
        freeReplyObject(r);
    } else {
        CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    }
    waiter_join(&wt);
    CU_ASSERT_EQUAL(wt.rc, TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(w), TSLOCK_OK);
    tslock_lock_free(h);
    tslock_lock_free(w);
    tslock_client_free(hc);
    tslock_client_free(wc);
}

static void test_both_kinds_wake_each_other(void)
{
    const int A = TSLOCK_PUBSUB_AUTO, C = TSLOCK_PUBSUB_CLASSIC,
              S = TSLOCK_PUBSUB_SHARDED;

    one_pair(A, C, TSLOCK_SCHEME_TOKEN, 1); /* tslock 1.0's release */
    one_pair(A, C, TSLOCK_SCHEME_TOKEN, 0);
    one_pair(C, A, TSLOCK_SCHEME_TOKEN, 0);
    one_pair(C, A, TSLOCK_SCHEME_TIMESTAMP, 0);
    one_pair(A, C, TSLOCK_SCHEME_TIMESTAMP, 0);
    one_pair(A, S, TSLOCK_SCHEME_TIMESTAMP, 0);
}

/*
 * A key with a '}' and no hash tag: its wake-up names take a tag of
 * digits in its slot, so two waiters queue in its line and the release
 * wakes the first alone, by SPUBLISH, with no classic broadcast.
 */
static void test_brace_key_wakes_one(void)
{
    static const char key[] = "a}b";
    int owner = th_cluster_owner(&cl, key);
    tslock_client *hc = client_on(owner, TSLOCK_PUBSUB_AUTO);
    tslock_client *c1 = client_on(owner, TSLOCK_PUBSUB_AUTO);
    tslock_client *c2 = client_on(owner, TSLOCK_PUBSUB_AUTO);
    tslock_lock *h = waiting_lock(hc, key), *l1 = waiting_lock(c1, key),
                *l2 = waiting_lock(c2, key);
    struct waiter w1, w2;
    long p0;

    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    tslock_lock_set_fair(l1, 1);
    tslock_lock_set_fair(l2, 1);
    waiter_start(&w1, l1);
    CU_ASSERT_FATAL(await_line(owner, key, 1));
    waiter_start(&w2, l2);
    CU_ASSERT_FATAL(await_line(owner, key, 2));
    p0 = bus_stat("cluster_stats_messages_publish_sent");
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    pthread_join(w1.thread, NULL);
    th_bound_end(&w1.bound);
    CU_ASSERT_EQUAL(w1.rc, TSLOCK_OK);
    /* The second is still in line: it was not woken with the first. */
    CU_ASSERT_EQUAL(line_length(owner, key), 1);
    CU_ASSERT_EQUAL(tslock_release(l1), TSLOCK_OK);
    waiter_join(&w2);
    CU_ASSERT_EQUAL(w2.rc, TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l2), TSLOCK_OK);
    CU_ASSERT_EQUAL(bus_stat("cluster_stats_messages_publish_sent") - p0, 0);
    tslock_lock_free(h);
    tslock_lock_free(l1);
    tslock_lock_free(l2);
    tslock_client_free(hc);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

/* An INFO field of a node, asked on a connection kept open; -1. */
static long long info_of(redisContext *raw, const char *section,
                         const char *field)
{
    redisReply *r = redisCommand(raw, "INFO %s", section);
    long long v = -1;
    const char *p;

    if (r != NULL && r->type == REDIS_REPLY_STRING
        && (p = strstr(r->str, field)) != NULL)
        v = atoll(p + strlen(field) + 1);
    freeReplyObject(r);
    return v;
}

/* How many of a node's connections are subscribers. */
static long long pubsub_clients(redisContext *raw)
{
    redisReply *r = redisCommand(raw, "CLIENT LIST TYPE pubsub");
    long long n = -1;
    const char *p;

    if (r != NULL && r->type == REDIS_REPLY_STRING)
        for (n = 0, p = r->str; (p = strstr(p, "id=")) != NULL; p++)
            n++;
    freeReplyObject(r);
    return n;
}

/* Subscribers of key's channel of kind (NUMSUB, SHARDNUMSUB), on raw:
 * the test's own connection, so no connection is counted by asking. */
static long long numsub(redisContext *raw, const char *kind, const char *key)
{
    char channel[64];

    snprintf(channel, sizeof(channel), "{%s}:released", key);
    return numsub_on(raw, kind, channel);
}

/* A wait that subscribes, tries a few times and runs out: key held. */
static void wait_briefly(tslock_lock *l)
{
    tslock_lock_set_retry(l, 1, 2);
    CU_ASSERT_EQUAL(tslock_acquire(l, 5), TSLOCK_EBUSY);
}

/*
 * The subscriber of a client that waits on another key moves to the new
 * key's channels on its connection when that connection leads to where
 * they are heard, and is made anew where it does not.  Sharded: waits on
 * two keys of master X accept one connection, on X; a wait on a key of
 * master Y then opens one on Y, and the one on X is closed.  Classic
 * (every node delivers every message): one connection for all three.
 * Connections counted by every node's total_connections_received, asked
 * on connections opened before; the waiter's command connections are
 * made by a try on each key first.
 */
static void test_subscriber_follows_the_node(void)
{
    redisContext *raw[TH_CLUSTER_MAX];
    long long n0[TH_CLUSTER_MAX];
    char keys[3][32];
    int x = th_cluster_owner(&cl, "{wk}"), y = -1, i, k, mode;

    for (i = 0; y < 0 || y == x; i++) {
        snprintf(keys[2], sizeof(keys[2]), "swap-y:%d", i);
        y = th_cluster_owner(&cl, keys[2]);
    }
    key_on(x, "swap-a", keys[0], sizeof(keys[0]));
    key_on(x, "swap-b", keys[1], sizeof(keys[1]));
    for (i = 0; i < cl.n; i++)
        raw[i] = th_redis(&cl.node[i]);
    for (mode = TSLOCK_PUBSUB_SHARDED; mode >= TSLOCK_PUBSUB_CLASSIC; mode--) {
        int sharded = mode == TSLOCK_PUBSUB_SHARDED;
        const char *kind = sharded ? "SHARDNUMSUB" : "NUMSUB";
        tslock_client *hc = client_on(x, mode), *wc = client_on(x, mode);
        tslock_lock *h[3], *l[3];
        long long more = 0;

        for (k = 0; k < 3; k++) {
            h[k] = waiting_lock(hc, keys[k]);
            l[k] = waiting_lock(wc, keys[k]);
            CU_ASSERT_EQUAL_FATAL(tslock_acquire(h[k], 0), TSLOCK_OK);
            CU_ASSERT_EQUAL(tslock_acquire(l[k], 0), TSLOCK_EBUSY);
        }
        for (i = 0; i < cl.n; i++)
            n0[i] = info_of(raw[i], "stats", "total_connections_received");
        wait_briefly(l[0]);
        wait_briefly(l[1]);
        CU_ASSERT_EQUAL(numsub(raw[x], kind, keys[0]), 0);
        CU_ASSERT_EQUAL(numsub(raw[x], kind, keys[1]), 1);
        for (i = 0; i < cl.n; i++)
            CU_ASSERT_EQUAL(
                info_of(raw[i], "stats", "total_connections_received"),
                n0[i] + (i == x));
        wait_briefly(l[2]);
        CU_ASSERT_EQUAL(numsub(raw[sharded ? y : x], kind, keys[2]), 1);
        for (i = 0; i < cl.n; i++) {
            long long n =
                info_of(raw[i], "stats", "total_connections_received");
            more += n - n0[i];
            CU_ASSERT_EQUAL(n, n0[i] + (i == x) + (sharded && i == y));
        }
        if (sharded) { /* the one on X was closed: its end comes soon */
            for (k = 0; k < 2000 && pubsub_clients(raw[x]) != 0; k++)
                poll(NULL, 0, 5);
            CU_ASSERT_EQUAL(pubsub_clients(raw[x]), 0);
        }
        CU_ASSERT_EQUAL(more, sharded ? 2 : 1);
        printf("\n    %s: waits on 2 keys of one master, then 1 of another: "
               "%lld subscriber connection(s) ",
               sharded ? "sharded" : "classic", more);
        for (k = 0; k < 3; k++) {
            CU_ASSERT_EQUAL(tslock_release(h[k]), TSLOCK_OK);
            tslock_lock_free(h[k]);
            tslock_lock_free(l[k]);
        }
        tslock_client_free(hc);
        tslock_client_free(wc);
    }
    for (i = 0; i < cl.n; i++)
        redisFree(raw[i]);
}

/* Move key's slot from master `from` to master `to`, keys and all. */
static int move_slot(const char *key, int from, int to)
{
    int slot = th_cluster_keyslot(&cl, from, key, strlen(key));

    return slot >= 0 && th_cluster_migrate_begin(&cl, slot, from, to) == 0
           && th_cluster_migrate_keys(&cl, slot, from, to, 0) >= 0
           && th_cluster_migrate_end(&cl, slot, from, to) == 0;
}

/*
 * A subscription whose slot moved while the client was not waiting: the
 * old master's unasked "sunsubscribe" of it lies on the subscriber's
 * socket when the client next waits, on another key of that master.
 * The move of the subscriber (or, where the old master refuses to
 * SUNSUBSCRIBE channels of a slot it no longer serves, a new
 * connection) must not take it for the loss of the new subscription,
 * nor the old key's release for the new key's: the wait is woken by the
 * new key's release (its retry delay is 30 s).  The slot goes back
 * after.
 */
static void test_subscriber_after_slot_moved(void)
{
    int x = th_cluster_owner(&cl, "{wk}"), y = -1, i;
    char a[32], b[32], probe[32];
    tslock_client *hc = client_on(x, TSLOCK_PUBSUB_SHARDED);
    tslock_client *wc = client_on(x, TSLOCK_PUBSUB_SHARDED);
    tslock_lock *ha, *hb, *la, *lb;
    struct waiter wt;

    for (i = 0; y < 0 || y == x; i++) {
        snprintf(probe, sizeof(probe), "moved-y:%d", i);
        y = th_cluster_owner(&cl, probe);
    }
    key_on(x, "moved-a", a, sizeof(a));
    key_on(x, "moved-b", b, sizeof(b));
    CU_ASSERT_FATAL(th_cluster_keyslot(&cl, x, a, strlen(a))
                    != th_cluster_keyslot(&cl, x, b, strlen(b)));
    ha = waiting_lock(hc, a);
    hb = waiting_lock(hc, b);
    la = waiting_lock(wc, a);
    lb = waiting_lock(wc, b);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(ha, 0), TSLOCK_OK);
    wait_briefly(la); /* subscribed on x to a's channels */
    CU_ASSERT_EQUAL(tslock_release(ha), TSLOCK_OK);
    CU_ASSERT_FATAL(move_slot(a, x, y));
    snprintf(probe, sizeof(probe), "{%s}:released", a);
    CU_ASSERT_EQUAL(subscribers(x, "SHARDNUMSUB", probe), 0); /* dropped */
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(hb, 0), TSLOCK_OK);
    tslock_lock_set_retry(lb, RETRY_MS, RETRY_MS);
    waiter_start(&wt, lb);
    CU_ASSERT_FATAL(await_line(x, b, 1));
    CU_ASSERT_EQUAL(tslock_release(hb), TSLOCK_OK);
    waiter_join(&wt);
    CU_ASSERT_EQUAL(wt.rc, TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(lb), TSLOCK_OK);
    CU_ASSERT(move_slot(a, y, x));
    tslock_lock_free(ha);
    tslock_lock_free(hb);
    tslock_lock_free(la);
    tslock_lock_free(lb);
    tslock_client_free(hc);
    tslock_client_free(wc);
}

/*
 * Falling back: on a single 7.0 server AUTO is classic (sharded saves no
 * bus there) and SHARDED is sharded; a user whose ACL refuses SSUBSCRIBE
 * (as a proxy that filters it would) falls back to classic at its first
 * wait, says so, and is still woken, here by a sharded client's release.
 * Each waiter retries only every 30 s.
 */
static void test_refused_falls_back(void)
{
    th_server srv;
    tslock_client *hc = NULL, *wc = NULL, *ac = NULL;
    tslock_lock *h, *w;
    struct waiter wt;
    redisContext *raw;
    redisReply *r;

    CU_ASSERT_FATAL(th_server_start(&srv, NULL) == 0);
    raw = th_redis(&srv);
    r = redisCommand(raw, "ACL SETUSER nossub on >pw ~* &* +@all "
                          "-ssubscribe");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(raw);
    ac = th_client(&srv);
    CU_ASSERT_EQUAL(tslock_client_get_pubsub(ac), TSLOCK_PUBSUB_CLASSIC);
    tslock_client_free(ac);
    hc = th_client(&srv);
    CU_ASSERT_EQUAL(tslock_client_set_pubsub(hc, TSLOCK_PUBSUB_SHARDED),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_get_pubsub(hc), TSLOCK_PUBSUB_SHARDED);
    CU_ASSERT_EQUAL(tslock_client_set_pubsub(hc, 3), TSLOCK_EINVAL);
    CU_ASSERT_FATAL(tslock_client_new(&wc) == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_set_pubsub(wc, TSLOCK_PUBSUB_SHARDED),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_set_auth(wc, "nossub", "pw"), TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(tslock_client_connect_unix(wc, srv.socket),
                          TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_get_pubsub(wc), TSLOCK_PUBSUB_SHARDED);
    h = waiting_lock(hc, "fb");
    w = waiting_lock(wc, "fb");
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    waiter_start(&wt, w);
    CU_ASSERT_FATAL(th_await_queue(&srv, "fb", 1));
    CU_ASSERT_EQUAL(tslock_client_get_pubsub(wc), TSLOCK_PUBSUB_CLASSIC);
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    waiter_join(&wt);
    CU_ASSERT_EQUAL(wt.rc, TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(w), TSLOCK_OK);
    tslock_lock_free(w);
    tslock_client_free(wc);
    /*
     * The other way round: a user allowed only sharded channels keeps
     * its sharded subscriptions without the classic one beside them.
     */
    raw = th_redis(&srv);
    r = redisCommand(raw, "ACL SETUSER onlyshard on >pw ~* &* +@all "
                          "-subscribe");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(raw);
    CU_ASSERT_FATAL(tslock_client_new(&wc) == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_set_pubsub(wc, TSLOCK_PUBSUB_SHARDED),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_set_auth(wc, "onlyshard", "pw"), TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(tslock_client_connect_unix(wc, srv.socket),
                          TSLOCK_OK);
    w = waiting_lock(wc, "fb");
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(h, 0), TSLOCK_OK);
    waiter_start(&wt, w);
    CU_ASSERT_FATAL(th_await_queue(&srv, "fb", 1));
    CU_ASSERT_EQUAL(tslock_client_get_pubsub(wc), TSLOCK_PUBSUB_SHARDED);
    CU_ASSERT_EQUAL(tslock_release(h), TSLOCK_OK);
    waiter_join(&wt);
    CU_ASSERT_EQUAL(wt.rc, TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(w), TSLOCK_OK);
    tslock_lock_free(h);
    tslock_lock_free(w);
    tslock_client_free(hc);
    tslock_client_free(wc);
    th_server_stop(&srv);
}

/*
 * tslock -v says which pub/sub its waits use and why; --pubsub takes
 * auto, classic or sharded, and names what it expected otherwise.
 */
static int cli(const char *args, char *out, size_t size)
{
    const char *top = getenv("top_builddir");
    char cmd[1024];
    size_t len = 0;
    FILE *p;
    int status;

    snprintf(cmd, sizeof(cmd), "%s/tools/tslock -v -u %s %s 2>&1",
             top ? top : ".", th_cluster_url(&cl, 0), args);
    p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    out[0] = '\0';
    while (len + 1 < size && fgets(out + len, (int)(size - len), p) != NULL)
        len += strlen(out + len);
    status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_cli_pubsub(void)
{
    char out[8192];

    CU_ASSERT_EQUAL(cli("-w 1000 cli:ps -- true", out, sizeof(out)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "wake-ups: sharded pub/sub"));
    CU_ASSERT_EQUAL(
        cli("--pubsub classic -w 1000 cli:ps -- true", out, sizeof(out)), 0);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(out, "wake-ups: classic pub/sub (--pubsub classic)"));
    CU_ASSERT_NOT_EQUAL(cli("--pubsub loud cli:ps -- true", out, sizeof(out)),
                        0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--pubsub expects auto, classic or "
                                       "sharded, got 'loud'"));
}

/* ------------------------------------------------- the overlap checker */

#define MAX_INSIDE 64

/*
 * Shared by the processes of one scenario.  A hold records the
 * generation it was taken in (the driver starts a new one just before
 * it changes the master) and whether a replica acknowledged it.  An
 * overlap with a hold of an earlier generation that no replica
 * acknowledged is one asynchronous replication allows (the write was
 * lost with its master); any other overlap is real.
 */
struct shared {
    atomic_int spin;
    int inside_gen[MAX_INSIDE], inside_acked[MAX_INSIDE],
        inside_used[MAX_INSIDE];
    atomic_int gen;
    atomic_int real_overlaps, repl_overlaps, errors, done;
    atomic_llong first_ms; /* monotonic, the first waiter's acquisition */
    atomic_llong last_ms;  /* and the last one's */
    atomic_int broken;     /* the known-broken variant */
    atomic_int pids[WAITERS];
    /* What each waiter did last, told when the line does not fill. */
    atomic_int phase[WAITERS]; /* enum phase */
    atomic_int step[WAITERS];  /* its last step, -1 before the first */
    atomic_int steps[WAITERS]; /* and how many it took */
};
static struct shared *sh;

static int enter(int acked)
{
    int gen = atomic_load(&sh->gen), i, slot = -1;

    while (atomic_exchange(&sh->spin, 1))
        ;
    for (i = 0; i < MAX_INSIDE; i++) {
        if (!sh->inside_used[i]) {
            if (slot < 0)
                slot = i;
            continue;
        }
        if (!sh->inside_acked[i] && sh->inside_gen[i] < gen)
            atomic_fetch_add(&sh->repl_overlaps, 1);
        else
            atomic_fetch_add(&sh->real_overlaps, 1);
    }
    if (slot >= 0) {
        sh->inside_used[slot] = 1;
        sh->inside_gen[slot] = gen;
        sh->inside_acked[slot] = acked;
    }
    atomic_store(&sh->spin, 0);
    return slot;
}

static void leave(int slot)
{
    while (atomic_exchange(&sh->spin, 1))
        ;
    if (slot >= 0)
        sh->inside_used[slot] = 0;
    atomic_store(&sh->spin, 0);
}

static void shared_new(void)
{
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_FATAL(sh != MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
}

/* ------------------------------------------- waiters through a change */

enum change { MIGRATE, FAILOVER, FORCE, KILL, KILL_LOSS, BROKEN };
static const char *const change_names[] = {"slot migration",
                                           "CLUSTER FAILOVER",
                                           "CLUSTER FAILOVER FORCE",
                                           "SIGKILL of the master",
                                           "SIGKILL, write unreplicated",
                                           "known-broken waiters"};

static char cur_key[32];
static int cur_seed;

/* A waiter's progress, in the shared map. */
enum phase { FORKED = 1, ACQUIRING, ACQUIRED, RELEASED, FAILED };
static const char *const phase_names[] = {
    "not started",      "forked, connecting", "in tslock_acquire",
    "holding the lock", "released, leaving",  "failed (see its message)"};

static int note_step(tslock_client *c, tslock_step step, const char *key,
                     void *userdata)
{
    int index = (int)(intptr_t)userdata;

    (void)c;
    (void)key;
    atomic_store(&sh->step[index], (int)step);
    atomic_fetch_add(&sh->steps[index], 1);
    return 0;
}

/* Tell what every waiter not yet done is doing, and its process state. */
static void tell_waiters(void)
{
    int i;

    for (i = 0; i < WAITERS; i++) {
        int phase = atomic_load(&sh->phase[i]),
            step = atomic_load(&sh->step[i]);
        int pid = atomic_load(&sh->pids[i]);
        char path[64], line[256] = "?";
        FILE *f;

        if (phase >= ACQUIRED)
            continue;
        snprintf(path, sizeof(path), "/proc/%d/wchan", pid);
        if (pid > 0 && (f = fopen(path, "r")) != NULL) {
            if (fgets(line, sizeof(line), f) == NULL || line[0] == '\0')
                snprintf(line, sizeof(line), "?");
            line[strcspn(line, "\n")] = '\0';
            fclose(f);
        }
        fprintf(stderr,
                "    waiter %d (pid %d): %s; %d steps, the last %s; "
                "kernel wait channel %s\n",
                i, pid, phase_names[phase < FAILED + 1 ? phase : 0],
                atomic_load(&sh->steps[i]),
                step >= 0 ? tslock_step_name((tslock_step)step) : "none", line);
    }
}

/* One waiter process: one acquisition, checked, then released. */
static void waiter_proc(int index, void *userdata)
{
    tslock_client *c;
    tslock_lock *l;
    int rc, slot;
    long long zero = 0;
    int64_t now;

    (void)userdata;
    atomic_store(&sh->pids[index], (int)getpid());
    atomic_store(&sh->step[index], -1);
    atomic_store(&sh->phase[index], FORKED);
    c = client_on(cur_seed, TSLOCK_PUBSUB_AUTO);
    l = waiting_lock(c, cur_key);
    tslock_client_set_step_hook(c, note_step, (void *)(intptr_t)index);
    atomic_store(&sh->phase[index], ACQUIRING);
    rc = atomic_load(&sh->broken) ? (tslock_acquire(l, 0), TSLOCK_OK)
                                  : tslock_acquire(l, 3 * BOUND_MS);
    if (rc != TSLOCK_OK) {
        fprintf(stderr, "    waiter: %s: %s\n", tslock_errname(rc),
                tslock_client_errstr(c));
        atomic_store(&sh->phase[index], FAILED);
        atomic_fetch_add(&sh->errors, 1);
        return;
    }
    atomic_store(&sh->phase[index], ACQUIRED);
    now = th_mono_ms();
    atomic_compare_exchange_strong(&sh->first_ms, &zero, now);
    atomic_store(&sh->last_ms, now);
    slot = enter(0);
    poll(NULL, 0, 2);
    leave(slot);
    atomic_fetch_add(&sh->done, 1);
    if (!atomic_load(&sh->broken) && (rc = tslock_release(l)) != TSLOCK_OK) {
        fprintf(stderr, "    waiter release: %s: %s\n", tslock_errname(rc),
                tslock_client_errstr(c));
        atomic_fetch_add(&sh->errors, 1);
    }
    atomic_store(&sh->phase[index], RELEASED);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* Wait until key's slot is served by a master other than `old`. */
static int await_new_owner(const char *key, int old)
{
    int64_t end = th_mono_ms() + 3 * BOUND_MS;

    while (th_mono_ms() < end) {
        int owner = th_cluster_owner(&cl, key);
        if (owner >= 0 && owner != old)
            return owner;
        poll(NULL, 0, 10);
    }
    return -1;
}

/* Wait until the cluster names replica as a replica of key's master. */
static int await_replica(const char *key, int replica)
{
    int64_t end = th_mono_ms() + 3 * BOUND_MS;

    while (th_mono_ms() < end) {
        if (th_cluster_replica(&cl, key) == replica)
            return 1;
        poll(NULL, 0, 10);
    }
    return 0;
}

/* Make the change; the new owner, or -1. */
static int make_change(enum change kind, const char *key, int owner,
                       int replica, int target)
{
    int slot = tslock_key_slot(key, strlen(key)), moved = 1;
    redisReply *r;

    switch (kind) {
    case MIGRATE:
        if (th_cluster_migrate_begin(&cl, slot, owner, target) != 0)
            return -1;
        while (moved > 0)
            moved = th_cluster_migrate_keys(&cl, slot, owner, target, 0);
        if (moved < 0 || th_cluster_migrate_end(&cl, slot, owner, target) != 0)
            return -1;
        return target;
    case FAILOVER:
    case FORCE:
        r = on_node(replica, kind == FORCE ? "CLUSTER FAILOVER FORCE"
                                           : "CLUSTER FAILOVER");
        CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
        return await_new_owner(key, owner);
    case KILL:
    case KILL_LOSS:
        atomic_fetch_add(&sh->gen, 1); /* holds from now: a new master's */
        th_server_kill(&cl.node[owner]);
        if (kind == KILL_LOSS)
            th_server_resume(&cl.node[replica]);
        return await_new_owner(key, owner);
    case BROKEN:
        break;
    }
    return owner;
}

/*
 * Cut the replica off its master unreplicated: stop it (SIGSTOP), then
 * have the master drop its link, so that no write after this reaches it;
 * the stopped replica cannot reconnect before its master is gone.
 */
static void cut_replica(int owner, int replica)
{
    redisReply *r;

    th_server_pause(&cl.node[replica]);
    r = on_node(owner, "CLIENT KILL TYPE replica");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER
                   && r->integer == 1);
    freeReplyObject(r);
}

/* The key's channel ("KEY:released" for these tagged keys' "{..}"). */
static const char *channel_of(const char *key)
{
    static char name[64];

    snprintf(name, sizeof(name), "{%s}:released", key);
    return name;
}

/* SIGSTOP or SIGCONT the first n waiters. */
static void signal_waiters(int n, int sig)
{
    int i;

    for (i = 0; i < n; i++)
        kill(atomic_load(&sh->pids[i]), sig);
}

/* Wait until n waiters are done, or BOUND_MS passed. */
static int await_done(int n)
{
    int64_t end = th_mono_ms() + BOUND_MS;

    while (atomic_load(&sh->done) < n && th_mono_ms() < end)
        poll(NULL, 0, 2);
    return atomic_load(&sh->done) >= n;
}

/*
 * The holder takes key, 16 waiters line up behind it (the line shows
 * all 16), the change is made, and the holder releases once the key's
 * slot has its new owner: every waiter must get the lock within
 * BOUND_MS of the change, and the checker sees every overlap.
 *
 * A slot migration or a manual failover unsubscribes the waiters at
 * the old master ("sunsubscribe"); the new owner must show them
 * subscribed again before the holder releases.  In the migration, half
 * of the waiters are stopped (SIGSTOP) first, so the release and the
 * wake-ups of the others go by while they hear nothing, and their
 * entries are dropped as unheard; continued, each must subscribe again
 * and try the lock once, since nothing else would wake it before its
 * 30 s retry.
 */
static void scenario(enum change kind, const char *key, int owner, int replica,
                     int target)
{
    tslock_client *hc;
    tslock_lock *h;
    pid_t workers[WAITERS];
    int64_t began, changed = 0;
    int acked = kind == FAILOVER || kind == FORCE || kind == KILL;
    int hslot, rc, now_owner = owner;

    shared_new();
    snprintf(cur_key, sizeof(cur_key), "%s", key);
    cur_seed = other_node(owner, replica);
    hc = client_on(cur_seed, TSLOCK_PUBSUB_AUTO);
    h = waiting_lock(hc, key);
    if (kind == KILL_LOSS) {
        cut_replica(owner, replica);
        /* With --replicas 1 the unreplicated hold is refused... */
        tslock_lock_set_replicas(h, 1, 300);
        CU_ASSERT_EQUAL(tslock_acquire(h, 0), TSLOCK_EREPLICAS);
        CU_ASSERT_FALSE(tslock_lock_is_held(h));
        tslock_lock_set_replicas(h, 0, 0);
    }
    if (acked)
        tslock_lock_set_replicas(h, 1, 2000);
    rc = tslock_acquire(h, 0);
    CU_ASSERT_EQUAL_FATAL(rc, TSLOCK_OK);
    hslot = enter(acked);
    atomic_store(&sh->broken, kind == BROKEN);
    /*
     * Forked from this, the main thread, while no other thread of the
     * test is busy: a waiter forked while another thread allocated could
     * start with the allocator's lock held for good (AddressSanitizer's
     * allocator has no fork handler) and never join the line.
     */
    began = changed = th_mono_ms(); /* broken waiters take at once */
    th_workers_start(WAITERS, waiter_proc, NULL, workers);
    if (kind == BROKEN) {
        while (atomic_load(&sh->done) + atomic_load(&sh->errors) < WAITERS
               && th_mono_ms() - began < BOUND_MS)
            poll(NULL, 0, 2);
    } else {
        /* Not fatal: the waiters are running, and are waited for below. */
        if (!await_line(owner, key, WAITERS)) {
            CU_FAIL("the line never reached 16");
            fprintf(stderr, "    the line is %lld long, %d waiters done\n",
                    line_length(owner, key), atomic_load(&sh->done));
            tell_waiters();
        }
        if (kind == MIGRATE)
            signal_waiters(WAITERS / 2, SIGSTOP);
        began = th_mono_ms();
        now_owner = make_change(kind, key, owner, replica, target);
        changed = th_mono_ms();
        CU_ASSERT_FATAL(now_owner >= 0);
        if (kind != KILL_LOSS) {
            int want = kind == MIGRATE ? WAITERS / 2 : WAITERS;
            CU_ASSERT_TRUE(await_subscribers(now_owner, "SHARDNUMSUB",
                                             channel_of(key), want));
            printf("\n    %lld waiters subscribed again at the new owner "
                   "before the release",
                   subscribers(now_owner, "SHARDNUMSUB", channel_of(key)));
        }
    }
    if (kind == KILL_LOSS) /* ...and without it, a waiter overlaps it */
        while (atomic_load(&sh->done) == 0 && th_mono_ms() - changed < BOUND_MS)
            poll(NULL, 0, 1);
    leave(hslot);
    rc = tslock_release(h);
    if (kind == MIGRATE) {
        CU_ASSERT_TRUE(await_done(WAITERS / 2));
        signal_waiters(WAITERS / 2, SIGCONT);
    }
    CU_ASSERT_EQUAL(rc, kind == KILL_LOSS ? TSLOCK_ELOST
                        : kind == BROKEN  ? rc
                                          : TSLOCK_OK);
    CU_ASSERT_TRUE(th_workers_wait(WAITERS, workers));
    printf("\n    %s: change %lld ms; first acquisition %lld ms after it "
           "(%lld ms after the change began), last %lld ms; overlaps: %d "
           "real, %d allowed by async replication ",
           change_names[kind], (long long)(changed - began),
           (long long)(atomic_load(&sh->first_ms) - changed),
           (long long)(atomic_load(&sh->first_ms) - began),
           (long long)(atomic_load(&sh->last_ms) - changed),
           atomic_load(&sh->real_overlaps), atomic_load(&sh->repl_overlaps));
    CU_ASSERT_EQUAL(atomic_load(&sh->done), WAITERS);
    CU_ASSERT_EQUAL(atomic_load(&sh->errors), 0);
    if (kind == BROKEN) {
        CU_ASSERT_TRUE(atomic_load(&sh->real_overlaps) > 0); /* caught */
    } else {
        CU_ASSERT_EQUAL(atomic_load(&sh->real_overlaps), 0);
        CU_ASSERT_TRUE(atomic_load(&sh->last_ms) - changed <= BOUND_MS);
    }
    if (kind == KILL_LOSS) {
        CU_ASSERT_TRUE(atomic_load(&sh->repl_overlaps) >= 1);
    } else {
        CU_ASSERT_EQUAL(atomic_load(&sh->repl_overlaps), 0);
    }
    tslock_lock_free(h);
    tslock_client_free(hc);
    munmap(sh, sizeof(*sh));
}

/* The three masters, in the order of their first slots. */
static int masters[3];

static void find_masters(void)
{
    int n = 0, i, j;
    char key[32];

    for (i = 0; n < 3 && i < 10000; i++) {
        int o;
        snprintf(key, sizeof(key), "m:%d", i);
        o = th_cluster_owner(&cl, key);
        for (j = 0; j < n && masters[j] != o; j++)
            ;
        if (o >= 0 && j == n)
            masters[n++] = o;
    }
    CU_ASSERT_FATAL(n == 3);
}

static void test_checker_fails_on_broken(void)
{
    char key[32];

    find_masters();
    key_on(masters[0], "brk", key, sizeof(key));
    scenario(BROKEN, key, masters[0], -1, -1);
}

static void test_migration(void)
{
    char key[32];

    key_on(masters[0], "mg", key, sizeof(key));
    scenario(MIGRATE, key, masters[0], -1, masters[1]);
}

static void test_failover_then_force(void)
{
    char key[32];
    int m = masters[1], r;

    key_on(m, "fo", key, sizeof(key));
    r = th_cluster_replica(&cl, key);
    CU_ASSERT_FATAL(r >= 0);
    scenario(FAILOVER, key, m, r, -1);
    /* The old master is the new one's replica now: back with FORCE. */
    CU_ASSERT_FATAL(await_replica(key, m));
    scenario(FORCE, key, r, m, -1);
}

static void test_master_killed(void)
{
    char key[32];
    int m = masters[2], r;

    key_on(m, "kl", key, sizeof(key));
    r = th_cluster_replica(&cl, key);
    CU_ASSERT_FATAL(r >= 0);
    scenario(KILL, key, m, r, -1);
}

static void test_master_killed_unreplicated(void)
{
    char key[32];
    int m = masters[0], r;

    key_on(m, "ls", key, sizeof(key));
    r = th_cluster_replica(&cl, key);
    CU_ASSERT_FATAL(r >= 0);
    scenario(KILL_LOSS, key, m, r, -1);
}

int main(void)
{
    CU_pSuite s;
    int rc = 1;

    if (th_cluster_start_opts(&cl, 3, 1, NULL, 1000) != 0)
        return 2;
    if (CU_initialize_registry() == CUE_SUCCESS) {
        s = CU_add_suite("sharded wake-ups", NULL, NULL);
        CU_add_test(s, "a wake-up stays in its shard",
                    test_sharded_stays_in_shard);
        CU_add_test(s, "a classic-form release and a break stay in the shard",
                    test_classic_release_and_break_stay_in_shard);
        CU_add_test(s, "both kinds wake each other",
                    test_both_kinds_wake_each_other);
        CU_add_test(s, "a '}' key wakes one", test_brace_key_wakes_one);
        CU_add_test(s, "the subscriber moves, or follows the node",
                    test_subscriber_follows_the_node);
        CU_add_test(s, "the subscriber moves after its slot moved",
                    test_subscriber_after_slot_moved);
        CU_add_test(s, "a refused SSUBSCRIBE falls back to classic",
                    test_refused_falls_back);
        CU_add_test(s, "tslock --pubsub and -v", test_cli_pubsub);
        s = CU_add_suite("slot moves", NULL, NULL);
        CU_add_test(s, "the checker fails on broken waiters",
                    test_checker_fails_on_broken);
        CU_add_test(s, "16 waiters through a slot migration", test_migration);
        CU_add_test(s, "16 waiters through FAILOVER, then FORCE",
                    test_failover_then_force);
        CU_add_test(s, "16 waiters through SIGKILL of the master",
                    test_master_killed);
        CU_add_test(s, "SIGKILL with an unreplicated hold; --replicas",
                    test_master_killed_unreplicated);
        rc = th_run_all();
    }
    th_cluster_stop(&cl);
    return rc;
}
