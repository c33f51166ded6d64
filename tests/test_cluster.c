/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cluster.c - tslock on a real three-master Redis Cluster reached
 * through one node: hash slots against CLUSTER KEYSLOT, every companion
 * in its key's slot, every scheme on keys of every node, a waiter woken
 * across nodes, the CLI through one node's URL, and a load of processes
 * while a slot holding the lock keys migrates (the -ASK and -MOVED paths
 * counted by the servers), with a control showing the checker fails.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness_cluster.h"

static th_cluster cl;

static tslock_client *client_on(int node)
{
    tslock_client *c = NULL;
    int rc = tslock_client_new(&c);

    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_tcp(c, "127.0.0.1", cl.node[node].port);
    if (rc != TSLOCK_OK) {
        fprintf(stderr, "client_on(%d): %s: %s\n", node, tslock_errname(rc),
                tslock_client_errstr(c));
        exit(2);
    }
    return c;
}

/* A command on the node that owns key (or on node i when i >= 0). */
static redisReply *on_owner(const char *key, const char *fmt, const char *arg)
{
    int owner = th_cluster_owner(&cl, key);
    redisContext *c;
    redisReply *r;

    CU_ASSERT_FATAL(owner >= 0);
    c = th_redis(&cl.node[owner]);
    r = redisCommand(c, fmt, arg);
    redisFree(c);
    return r;
}

static int exists_on_owner(const char *key)
{
    redisReply *r = on_owner(key, "EXISTS %s", key);
    int n = r != NULL && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;

    freeReplyObject(r);
    return n;
}

/* ------------------------------------------------------------ slots */

/*
 * tslock_key_slot() against CLUSTER KEYSLOT for the hash tag's edge
 * cases, bytes a C string cannot hold, and the spec's CRC16 check value
 * ("123456789" gives 0x31C3, slot 12739).
 */
static void test_key_slot(void)
{
    static const struct {
        const char *key;
        size_t len;
    } keys[] = {
        {"", 0},
        {"123456789", 9},
        {"foo", 3},
        {"{foo}bar", 8},
        {"bar{foo}", 8},
        {"{}foo", 5},
        {"foo{}", 5},
        {"{foo", 4},
        {"foo}", 4},
        {"}{foo}", 6},
        {"{{foo}}", 7},
        {"{a}{b}", 6},
        {"a{b}c}", 6},
        {"{}{a}", 5},
        {"a\0{b}", 5},
        {"{\0}x", 4},
        {"\xff\xfe{\x80}", 6},
        {"user:{123}:profile", 18},
        {"lock:{}:{x}", 11},
        {"{", 1},
        {"}", 1},
        {"{}", 2},
    };
    size_t i;

    CU_ASSERT_EQUAL(tslock_key_slot("123456789", 9), 0x31C3 & 16383);
    CU_ASSERT_EQUAL(tslock_key_slot(NULL, 0), TSLOCK_EINVAL);
    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        int want =
            th_cluster_keyslot(&cl, (int)(i % 3), keys[i].key, keys[i].len);
        CU_ASSERT_TRUE(want >= 0);
        if (tslock_key_slot(keys[i].key, keys[i].len) != want)
            fprintf(stderr, "key #%zu: tslock %d, CLUSTER KEYSLOT %d\n", i,
                    tslock_key_slot(keys[i].key, keys[i].len), want);
        CU_ASSERT_EQUAL(tslock_key_slot(keys[i].key, keys[i].len), want);
    }
}

static int same_slot(const char *a, const char *b)
{
    return th_cluster_keyslot(&cl, 0, a, strlen(a))
           == th_cluster_keyslot(&cl, 0, b, strlen(b));
}

/*
 * Every companion in the lock key's slot, for keys with no tag, a tag, a
 * '{' but no tag: the owner key as tslock_lock_owner_key() names it, and
 * the fence counter, the queue keys and the channel as tslock(7) names
 * them, checked where they are really written.
 */
static void test_companions(void)
{
    static const char *const lock_keys[] = {"plain", "{tag}rest", "a{b",
                                            "x{y}z{w}", "{{a}}"};
    static const char *const suffixes[] = {":fence", ":queue", ":alive",
                                           ":queue-seq", ":released"};
    tslock_client *c = client_on(0);
    size_t i, j;

    for (i = 0; i < sizeof(lock_keys) / sizeof(lock_keys[0]); i++) {
        const char *k = lock_keys[i];
        const char *open = strchr(k, '{');
        const char *close = open != NULL ? strchr(open + 1, '}') : NULL;
        int tagged = close != NULL && close > open + 1;
        tslock_lock *l = NULL;
        char name[128], fence[128];
        redisReply *r;
        int rc;

        CU_ASSERT_FATAL(tslock_lock_new(&l, c, k) == TSLOCK_OK);
        tslock_lock_set_scheme(l, TSLOCK_SCHEME_BRIDGE);
        tslock_lock_set_fencing(l, 1);
        tslock_lock_set_ttl(l, 10000);
        rc = tslock_acquire(l, 0);
        if (rc != TSLOCK_OK)
            fprintf(stderr, "acquire %s: %s: %s\n", k, tslock_errname(rc),
                    tslock_client_errstr(c));
        CU_ASSERT_EQUAL_FATAL(rc, TSLOCK_OK);
        CU_ASSERT_PTR_NOT_NULL_FATAL(tslock_lock_owner_key(l));
        CU_ASSERT_TRUE(same_slot(k, tslock_lock_owner_key(l)));
        CU_ASSERT_EQUAL(exists_on_owner(tslock_lock_owner_key(l)), 1);
        for (j = 0; j < sizeof(suffixes) / sizeof(suffixes[0]); j++) {
            snprintf(name, sizeof(name), tagged ? "%s%s" : "{%s}%s", k,
                     suffixes[j]);
            CU_ASSERT_TRUE(same_slot(k, name));
        }
        snprintf(fence, sizeof(fence), tagged ? "%s:fence" : "{%s}:fence", k);
        r = on_owner(fence, "GET %s", fence);
        CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_STRING
                       && atoll(r->str) == tslock_lock_fence(l));
        freeReplyObject(r);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        tslock_lock_free(l);
    }
    tslock_client_free(c);
}

/*
 * A key with a '}' and no tag hashes whole, so no suffixed name shares
 * its slot: the schemes that need a companion key refuse it by name
 * (TSLOCK_ECLUSTER), and the token scheme, which needs none, works.
 */
static void test_brace_without_tag(void)
{
    tslock_client *c = client_on(1);
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "a}b") == TSLOCK_OK);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_BRIDGE);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_ECLUSTER);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "hash tag"));
    CU_ASSERT_EQUAL(exists_on_owner("a}b"), 0);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(exists_on_owner("a}b"), 1);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_EQUAL(exists_on_owner("a}b"), 0);
    tslock_lock_free(l);
    /*
     * "{}x" too: its braces hold no tag, so it hashes whole.  Its line of
     * waiters needs companions: with classic wake-ups they are refused;
     * with sharded ones (the default on this 7.0 cluster) they take a
     * tag of digits that hashes to the key's slot, and fair mode works.
     */
    CU_ASSERT_EQUAL(tslock_client_get_pubsub(c), TSLOCK_PUBSUB_SHARDED);
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "{}x") == TSLOCK_OK);
    tslock_lock_set_fair(l, 1);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    CU_ASSERT_EQUAL(tslock_client_set_pubsub(c, TSLOCK_PUBSUB_CLASSIC),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_get_pubsub(c), TSLOCK_PUBSUB_CLASSIC);
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "{}x") == TSLOCK_OK);
    tslock_lock_set_fair(l, 1);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_ECLUSTER);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* ------------------------------------------- every scheme, every node */

#define N_KEYS 12

struct variant {
    const char *name;
    tslock_scheme scheme;
    int fair, fencing;
    tslock_release_form form;
};

static const struct variant variants[] = {
    {"timestamp", TSLOCK_SCHEME_TIMESTAMP, 0, 0, TSLOCK_RELEASE_BEST},
    {"token", TSLOCK_SCHEME_TOKEN, 0, 0, TSLOCK_RELEASE_BEST},
    {"bridge", TSLOCK_SCHEME_BRIDGE, 0, 0, TSLOCK_RELEASE_BEST},
    {"auto", TSLOCK_SCHEME_AUTO, 0, 0, TSLOCK_RELEASE_BEST},
    {"token, fair", TSLOCK_SCHEME_TOKEN, 1, 0, TSLOCK_RELEASE_BEST},
    {"token, fenced", TSLOCK_SCHEME_TOKEN, 0, 1, TSLOCK_RELEASE_BEST},
    {"bridge, fenced", TSLOCK_SCHEME_BRIDGE, 0, 1, TSLOCK_RELEASE_BEST},
    {"timestamp, WATCH form", TSLOCK_SCHEME_TIMESTAMP, 0, 0,
     TSLOCK_RELEASE_WATCH},
    {"bridge, WATCH form", TSLOCK_SCHEME_BRIDGE, 0, 0, TSLOCK_RELEASE_WATCH},
    {"timestamp, classic form", TSLOCK_SCHEME_TIMESTAMP, 0, 0,
     TSLOCK_RELEASE_CLASSIC},
};

static tslock_lock *variant_lock(tslock_client *c, const char *key,
                                 const struct variant *v)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_scheme(l, v->scheme) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_fair(l, v->fair) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_fencing(l, v->fencing) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_release_form(l, v->form) == TSLOCK_OK);
    tslock_lock_set_ttl(l, 20000);
    return l;
}

/*
 * Two clients, each connected to one node only, take turns on twelve
 * keys spread over all three nodes; each hold is where the cluster says
 * the key lives, blocks the other client, extends, and is gone after
 * its release.
 */
static void test_every_scheme_every_node(void)
{
    tslock_client *a = client_on(0), *b = client_on(2);
    int seen[TH_CLUSTER_MAX] = {0};
    size_t v;
    int i;

    CU_ASSERT_TRUE(tslock_client_caps(a) & TSLOCK_CAP_CLUSTER);
    for (v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        for (i = 0; i < N_KEYS; i++) {
            char key[64];
            tslock_lock *la, *lb;
            int64_t fence;

            snprintf(key, sizeof(key), "every:%d:%zu", i, v);
            seen[th_cluster_owner(&cl, key)]++;
            la = variant_lock(a, key, &variants[v]);
            lb = variant_lock(b, key, &variants[v]);
            if (tslock_acquire(la, 0) != TSLOCK_OK)
                fprintf(stderr, "%s on %s: %s\n", variants[v].name, key,
                        tslock_client_errstr(a));
            CU_ASSERT_EQUAL(tslock_lock_is_held(la), 1);
            CU_ASSERT_EQUAL(exists_on_owner(key), 1);
            CU_ASSERT_EQUAL(tslock_acquire(lb, 0), TSLOCK_EBUSY);
            CU_ASSERT_EQUAL(tslock_extend(la, 20000), TSLOCK_OK);
            fence = tslock_lock_fence(la);
            CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_OK);
            CU_ASSERT_EQUAL(exists_on_owner(key), 0);
            CU_ASSERT_EQUAL(tslock_acquire(lb, 0), TSLOCK_OK);
            if (variants[v].fencing)
                CU_ASSERT_EQUAL(tslock_lock_fence(lb), fence + 1);
            CU_ASSERT_EQUAL(tslock_release(lb), TSLOCK_OK);
            tslock_lock_free(la);
            tslock_lock_free(lb);
        }
    }
    for (i = 0; i < cl.n; i++)
        CU_ASSERT_TRUE(seen[i] > 0);
    tslock_client_free(a);
    tslock_client_free(b);
}

/* ------------------------------- shared holds and permits on every node */

static tslock_lock *kind_lock(tslock_client *c, const char *key, int rw,
                              int64_t permits)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    tslock_lock_set_ttl(l, 20000);
    if (rw != TSLOCK_RW_OFF)
        CU_ASSERT_FATAL(tslock_lock_set_rw(l, rw) == TSLOCK_OK);
    if (permits > 0)
        CU_ASSERT_FATAL(tslock_lock_set_permits(l, permits) == TSLOCK_OK);
    return l;
}

/*
 * Readers on two clients, each connected to another node, share a key
 * while a writer is refused; two permits of a semaphore admit two and
 * refuse a third.  The holders' sorted sets live beside the key, in its
 * slot, on whichever node owns it.
 */
static void test_shared_and_permits_every_node(void)
{
    tslock_client *a = client_on(0), *b = client_on(1), *w = client_on(2);
    int seen[TH_CLUSTER_MAX] = {0};
    int i;

    for (i = 0; i < N_KEYS; i++) {
        char key[64];
        tslock_lock *ra, *rb, *wr, *pa, *pb, *pw;
        int64_t n = -1;

        snprintf(key, sizeof(key), "kinds:%d", i);
        seen[th_cluster_owner(&cl, key)]++;
        ra = kind_lock(a, key, TSLOCK_RW_SHARED, 0);
        rb = kind_lock(b, key, TSLOCK_RW_SHARED, 0);
        wr = kind_lock(w, key, TSLOCK_RW_EXCLUSIVE, 0);
        CU_ASSERT_EQUAL(tslock_acquire(ra, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(rb, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_lock_holders(ra, &n), TSLOCK_OK);
        CU_ASSERT_EQUAL(n, 2);
        CU_ASSERT_EQUAL(exists_on_owner(key), 1);
        CU_ASSERT_EQUAL(tslock_acquire(wr, 0), TSLOCK_EBUSY);
        CU_ASSERT_EQUAL(tslock_release(ra), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(rb), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(wr, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(wr), TSLOCK_OK);
        CU_ASSERT_EQUAL(exists_on_owner(key), 0);
        tslock_lock_free(ra);
        tslock_lock_free(rb);
        tslock_lock_free(wr);

        snprintf(key, sizeof(key), "permits:%d", i);
        pa = kind_lock(a, key, TSLOCK_RW_OFF, 2);
        pb = kind_lock(b, key, TSLOCK_RW_OFF, 2);
        pw = kind_lock(w, key, TSLOCK_RW_OFF, 2);
        CU_ASSERT_EQUAL(tslock_acquire(pa, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(pb, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(pw, 0), TSLOCK_EBUSY);
        CU_ASSERT_EQUAL(tslock_release(pa), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(pw, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(pb), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(pw), TSLOCK_OK);
        tslock_lock_free(pa);
        tslock_lock_free(pb);
        tslock_lock_free(pw);
    }
    for (i = 0; i < cl.n; i++)
        CU_ASSERT_TRUE(seen[i] > 0);
    tslock_client_free(a);
    tslock_client_free(b);
    tslock_client_free(w);
}

/* ------------------------------------------- woken across the cluster */

static tslock_lock *holder;
static int released;

static int release_after_failed_try(tslock_client *c, tslock_step step,
                                    const char *key, void *userdata)
{
    (void)c;
    (void)key;
    if (step == *(tslock_step *)userdata && !released) {
        released = 1;
        CU_ASSERT_EQUAL(tslock_release(holder), TSLOCK_OK);
    }
    return 0;
}

/*
 * The token waiter's own wake-up, across nodes: once its entry is in the
 * line on the key's node (read there), the holder releases, and the
 * release script's PUBLISH to the waiter's channel crosses the cluster
 * bus to node 0, where the waiter subscribed.
 */
struct line_release {
    pthread_t thread;
    const char *key;
    int node;
};

static void *release_when_in_line(void *arg)
{
    struct line_release *lr = arg;
    redisContext *raw = th_redis(&cl.node[lr->node]);
    int i;

    for (i = 0; i < 2000; i++) {
        redisReply *r = redisCommand(raw, "ZCARD {%s}:queue", lr->key);
        long long n =
            r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
        freeReplyObject(r);
        if (n == 1)
            break;
        usleep(5000);
    }
    released = 1;
    CU_ASSERT_EQUAL(tslock_release(holder), TSLOCK_OK);
    redisFree(raw);
    return NULL;
}

static void test_woken_in_line_across_nodes(void)
{
    const char *key = NULL;
    char buf[32];
    int i;
    struct line_release lr;
    tslock_client *h, *w;
    tslock_lock *l = NULL;
    th_bound b;

    for (i = 0; key == NULL; i++) {
        snprintf(buf, sizeof(buf), "wake1:%d", i);
        if (th_cluster_owner(&cl, buf) != 0)
            key = buf;
    }
    h = client_on(th_cluster_owner(&cl, key));
    w = client_on(0);
    CU_ASSERT_FATAL(tslock_lock_new(&l, w, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_new(&holder, h, key) == TSLOCK_OK);
    tslock_lock_set_ttl(holder, 30000);
    tslock_lock_set_retry(l, 60000, 60000);
    released = 0;
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(holder, 0), TSLOCK_OK);
    lr.key = key;
    lr.node = th_cluster_owner(&cl, key);
    CU_ASSERT_FATAL(pthread_create(&lr.thread, NULL, release_when_in_line, &lr)
                    == 0);
    th_bound_start(&b, l);
    CU_ASSERT_EQUAL(tslock_acquire(l, TSLOCK_WAIT_FOREVER), TSLOCK_OK);
    th_bound_end(&b);
    pthread_join(lr.thread, NULL);
    CU_ASSERT_TRUE(released);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_lock_free(holder);
    tslock_client_free(h);
    tslock_client_free(w);
}

/*
 * The holder's release (on the key's node) is announced with PUBLISH,
 * which the cluster bus carries to the node the waiter subscribed on;
 * the waiter, whose retry delay is a minute, wakes and takes the lock.
 * The release happens between the waiter's failed try and its wait.
 */
static void test_woken_across_nodes(void)
{
    static const tslock_scheme schemes[] = {TSLOCK_SCHEME_TOKEN,
                                            TSLOCK_SCHEME_TIMESTAMP};
    /*
     * The last command of a failed try: the script that joins the line of
     * waiters (token), or GET (timestamp).  The token waiter is woken on
     * its own channel, the timestamp one on the key's.
     */
    static tslock_step last[] = {TSLOCK_STEP_EVALSHA, TSLOCK_STEP_GET};
    const char *key = NULL;
    char buf[32];
    int i;

    /* A key that is not on node 0, where the waiter subscribes. */
    for (i = 0; key == NULL; i++) {
        snprintf(buf, sizeof(buf), "wake:%d", i);
        if (th_cluster_owner(&cl, buf) != 0)
            key = buf;
    }
    for (i = 0; i < 2; i++) {
        tslock_client *h = client_on(th_cluster_owner(&cl, key)),
                      *w = client_on(0);
        tslock_lock *l = NULL;
        th_bound b;

        CU_ASSERT_FATAL(tslock_lock_new(&l, w, key) == TSLOCK_OK);
        CU_ASSERT_FATAL(tslock_lock_new(&holder, h, key) == TSLOCK_OK);
        tslock_lock_set_scheme(l, schemes[i]);
        tslock_lock_set_scheme(holder, schemes[i]);
        tslock_lock_set_ttl(l, 30000);
        tslock_lock_set_ttl(holder, 30000);
        tslock_lock_set_retry(l, 60000, 60000);
        released = 0;
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(holder, 0), TSLOCK_OK);
        tslock_client_set_step_hook(w, release_after_failed_try, &last[i]);
        th_bound_start(&b, l);
        CU_ASSERT_EQUAL(tslock_acquire(l, TSLOCK_WAIT_FOREVER), TSLOCK_OK);
        th_bound_end(&b);
        CU_ASSERT_TRUE(released);
        tslock_client_set_step_hook(w, NULL, NULL);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        tslock_lock_free(l);
        tslock_lock_free(holder);
        tslock_client_free(h);
        tslock_client_free(w);
    }
}

/* ------------------------------------------ load across a migration */

#define MIG_KEYS    6
#define MIG_WORKERS 4 /* and one migrator */
#define MIG_ROUNDS  3 /* there and back again, each */

/* What every process shares: who is inside each lock's section. */
struct checker {
    atomic_int inside[MIG_KEYS];
    atomic_long overlaps, holds, errors;
    atomic_int stop;
    atomic_int migrations;
    atomic_int ready; /* workers connected (and probed) */
};

static struct checker *shared;

/* Enter key k's section: an overlap when someone is already in it. */
static void enter(struct checker *ck, int k)
{
    if (atomic_fetch_add(&ck->inside[k], 1) != 0)
        atomic_fetch_add(&ck->overlaps, 1);
    atomic_fetch_add(&ck->holds, 1);
}

static void leave(struct checker *ck, int k)
{
    atomic_fetch_sub(&ck->inside[k], 1);
}

/* The keys share the slot of "mig"; each has its own scheme. */
static void mig_key(int k, char *buf, size_t size)
{
    snprintf(buf, size, "{mig}:%d", k);
}

static const struct variant mig_variants[MIG_KEYS] = {
    {"token", TSLOCK_SCHEME_TOKEN, 0, 1, TSLOCK_RELEASE_BEST},
    {"bridge", TSLOCK_SCHEME_BRIDGE, 0, 0, TSLOCK_RELEASE_BEST},
    {"timestamp", TSLOCK_SCHEME_TIMESTAMP, 0, 0, TSLOCK_RELEASE_BEST},
    {"token, fair", TSLOCK_SCHEME_TOKEN, 1, 0, TSLOCK_RELEASE_BEST},
    {"timestamp, WATCH", TSLOCK_SCHEME_TIMESTAMP, 0, 0, TSLOCK_RELEASE_WATCH},
    {"bridge, WATCH", TSLOCK_SCHEME_BRIDGE, 0, 0, TSLOCK_RELEASE_WATCH},
};

static void report(tslock_client *c, const char *what, int k, int rc)
{
    if (atomic_fetch_add(&shared->errors, 1) < 10)
        fprintf(stderr, "worker: %s {mig}:%d: %s: %s\n", what, k,
                tslock_errname(rc), tslock_client_errstr(c));
}

static void mig_worker(int index)
{
    tslock_client *c = NULL;
    tslock_lock *l[MIG_KEYS];
    unsigned seed = (unsigned)index * 7919u;
    int k, rc;

    if (tslock_client_new(&c) != TSLOCK_OK
        || tslock_client_connect_tcp(c, "127.0.0.1", cl.node[index % cl.n].port)
               != TSLOCK_OK)
        _exit(3);
    atomic_fetch_add(&shared->ready, 1);
    for (k = 0; k < MIG_KEYS; k++) {
        char key[32];
        mig_key(k, key, sizeof(key));
        l[k] = NULL;
        if (tslock_lock_new(&l[k], c, key) != TSLOCK_OK)
            _exit(3);
        tslock_lock_set_scheme(l[k], mig_variants[k].scheme);
        tslock_lock_set_fair(l[k], mig_variants[k].fair);
        tslock_lock_set_fencing(l[k], mig_variants[k].fencing);
        tslock_lock_set_release_form(l[k], mig_variants[k].form);
        tslock_lock_set_ttl(l[k], 30000);
        tslock_lock_set_retry(l[k], 1, 5);
    }
    while (!atomic_load(&shared->stop)) {
        k = (int)(rand_r(&seed) % MIG_KEYS);
        rc = tslock_acquire(l[k], 10000);
        if (rc != TSLOCK_OK) {
            report(c, "acquire", k, rc);
            if (tslock_client_is_broken(c))
                (void)tslock_client_reconnect(c);
            continue;
        }
        enter(shared, k);
        th_sleep_us(200 + rand_r(&seed) % 800);
        leave(shared, k);
        rc = tslock_release(l[k]);
        if (rc != TSLOCK_OK)
            report(c, "release", k, rc);
    }
    for (k = 0; k < MIG_KEYS; k++)
        tslock_lock_free(l[k]);
    tslock_client_free(c);
}

/* Move the slot of "mig" back and forth, key by key, with pauses. */
static void migrator(void)
{
    int slot = tslock_key_slot("mig", 3), round, dir, failed = 0;
    int home = th_cluster_owner(&cl, "{mig}:0"), away = (home + 1) % cl.n;

    /*
     * The connect probe's SET (on a key of any slot) may draw a -MOVED:
     * the servers' counts start once every worker has connected.
     */
    for (round = 0; atomic_load(&shared->ready) < MIG_WORKERS; round++) {
        if (round > 1000)
            _exit(5);
        th_sleep_us(10000);
    }
    th_cluster_reset_stats(&cl);
    th_sleep_us(100000);
    for (round = 0; round < MIG_ROUNDS && !failed; round++)
        for (dir = 0; dir < 2 && !failed; dir++) {
            int from = dir == 0 ? home : away, to = dir == 0 ? away : home;
            int moved = 1;

            failed = th_cluster_migrate_begin(&cl, slot, from, to) != 0;
            /* A window with the keys split between the nodes. */
            th_sleep_us(50000);
            while (!failed && moved > 0) {
                moved = th_cluster_migrate_keys(&cl, slot, from, to, 1);
                failed = moved < 0;
                th_sleep_us(20000);
            }
            failed = failed || th_cluster_migrate_end(&cl, slot, from, to) != 0;
            if (!failed)
                atomic_fetch_add(&shared->migrations, 1);
            th_sleep_us(100000);
        }
    atomic_store(&shared->stop, 1);
    if (failed)
        _exit(4);
}

static void mig_child(int index, void *userdata)
{
    (void)userdata;
    if (index == MIG_WORKERS)
        migrator();
    else
        mig_worker(index);
}

/*
 * Four processes, connected to different nodes, take six locks (four
 * schemes, Lua and WATCH forms) whose keys share one slot, while that slot
 * migrates between two nodes six times, key by key: requests for keys already
 * moved get -ASK, multi-key scripts over split keys -TRYAGAIN, and everything
 * after each migration -MOVED.  No two processes are ever inside one
 * lock's section, nothing fails, and the servers counted the -MOVED and
 * -ASK replies and the ASKING commands that answered them.
 */
static void test_load_across_migration(void)
{
    long moved, ask, asking;
    int k;

    shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_FATAL(shared != MAP_FAILED);
    memset(shared, 0, sizeof(*shared));
    CU_ASSERT_TRUE(th_workers(MIG_WORKERS + 1, mig_child, NULL));
    moved = th_cluster_stat(&cl, "errorstats", "errorstat_MOVED");
    ask = th_cluster_stat(&cl, "errorstats", "errorstat_ASK");
    asking = th_cluster_stat(&cl, "commandstats", "cmdstat_asking");
    printf("\n    %ld holds, %d migrations, %ld MOVED, %ld ASK, %ld ASKING, "
           "%ld TRYAGAIN ",
           atomic_load(&shared->holds), atomic_load(&shared->migrations), moved,
           ask, asking,
           th_cluster_stat(&cl, "errorstats", "errorstat_TRYAGAIN"));
    CU_ASSERT_EQUAL(atomic_load(&shared->migrations), 2 * MIG_ROUNDS);
    CU_ASSERT_EQUAL(atomic_load(&shared->overlaps), 0);
    CU_ASSERT_EQUAL(atomic_load(&shared->errors), 0);
    CU_ASSERT_TRUE(atomic_load(&shared->holds) > 0);
    CU_ASSERT_TRUE(moved > 0);
    CU_ASSERT_TRUE(ask > 0);
    CU_ASSERT_TRUE(asking > 0);
    for (k = 0; k < MIG_KEYS; k++)
        CU_ASSERT_EQUAL(atomic_load(&shared->inside[k]), 0);
    munmap(shared, sizeof(*shared));
}

/*
 * The control: the same checker catches a client that does not follow
 * redirections.  Two cluster-unaware clients on two nodes take "a lock"
 * with SET NX PX and count any reply but nil as taken - so the -MOVED
 * the wrong node answers counts as taken, and the checker sees two
 * holders of one lock.
 */
static void test_checker_catches_ignored_redirects(void)
{
    struct checker ck;
    int owner = th_cluster_owner(&cl, "{mig}:naive"), i;

    memset(&ck, 0, sizeof(ck));
    for (i = 0; i < 2; i++) {
        redisContext *c = th_redis(&cl.node[(owner + i) % cl.n]);
        redisReply *r = redisCommand(c, "SET {mig}:naive %d NX PX 10000", i);
        if (r != NULL && r->type != REDIS_REPLY_NIL)
            enter(&ck, 0);
        if (i == 1)
            CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_ERROR
                           && strncmp(r->str, "MOVED", 5) == 0);
        freeReplyObject(r);
        redisFree(c);
    }
    CU_ASSERT_EQUAL(atomic_load(&ck.overlaps), 1);
}

/*
 * A wrapped connection does not route: a key of its own node works, a
 * key of another master fails with TSLOCK_ECLUSTER and the server's
 * -MOVED, and nothing is written there.
 */
static void test_wrapped_does_not_route(void)
{
    redisContext *ctx = th_redis(&cl.node[0]);
    tslock_client *c = NULL;
    tslock_lock *here = NULL, *there = NULL;
    char k0[32] = "", k1[32] = "";
    int i;

    for (i = 0; k0[0] == '\0' || k1[0] == '\0'; i++) {
        char k[32];
        snprintf(k, sizeof(k), "wrap:%d", i);
        if (th_cluster_owner(&cl, k) == 0)
            memcpy(k0, k, sizeof(k0));
        else
            memcpy(k1, k, sizeof(k1));
    }
    CU_ASSERT_FATAL(tslock_client_new(&c) == TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(tslock_client_wrap(c, ctx), TSLOCK_OK);
    CU_ASSERT_FALSE(tslock_client_caps(c) & TSLOCK_CAP_CLUSTER);
    CU_ASSERT_FATAL(tslock_lock_new(&here, c, k0) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_new(&there, c, k1) == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(here, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(here), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(there, 0), TSLOCK_ECLUSTER);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "MOVED"));
    CU_ASSERT_EQUAL(exists_on_owner(k1), 0);
    tslock_lock_free(here);
    tslock_lock_free(there);
    tslock_client_free(c);
    redisFree(ctx);
}

/* ------------------------------------- a slot moved under a WATCH */

static int moved_under_watch; /* migrations the hook made */

/* Move the slot of "{rw}" to the next node, all of it, in one go. */
static void move_rw_slot(void)
{
    int slot = tslock_key_slot("rw", 2), from = th_cluster_owner(&cl, "{rw}");
    int to = (from + 1) % cl.n;

    CU_ASSERT_EQUAL(th_cluster_migrate_begin(&cl, slot, from, to), 0);
    CU_ASSERT_TRUE(th_cluster_migrate_keys(&cl, slot, from, to, 0) >= 1);
    CU_ASSERT_EQUAL(th_cluster_migrate_end(&cl, slot, from, to), 0);
}

/* Before the first MULTI after a WATCH: the slot moves away. */
static int move_before_multi(tslock_client *c, tslock_step step,
                             const char *key, void *userdata)
{
    (void)c;
    (void)key;
    (void)userdata;
    if (step == TSLOCK_STEP_MULTI && moved_under_watch == 0) {
        moved_under_watch = 1;
        move_rw_slot();
    }
    return 0;
}

/*
 * The WATCH forms when the slot moves between WATCH and MULTI (the step
 * hook migrates it there): the transaction is not sent to the new master
 * without its WATCH, nothing runs on the old one, and the whole form is
 * made again on the new master: the release releases, and does not
 * say the lock was lost.
 */
static void test_slot_moved_under_watch(void)
{
    static const tslock_scheme schemes[] = {TSLOCK_SCHEME_TIMESTAMP,
                                            TSLOCK_SCHEME_BRIDGE};
    tslock_client *c = client_on(0);
    int i;

    for (i = 0; i < 2; i++) {
        tslock_lock *l = NULL;
        int before = th_cluster_owner(&cl, "{rw}:lock");

        CU_ASSERT_FATAL(tslock_lock_new(&l, c, "{rw}:lock") == TSLOCK_OK);
        tslock_lock_set_scheme(l, schemes[i]);
        tslock_lock_set_release_form(l, TSLOCK_RELEASE_WATCH);
        tslock_lock_set_ttl(l, 30000);
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        tslock_client_set_step_hook(c, move_before_multi, NULL);
        moved_under_watch = 0;
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        CU_ASSERT_EQUAL(moved_under_watch, 1);
        CU_ASSERT_NOT_EQUAL(th_cluster_owner(&cl, "{rw}:lock"), before);
        CU_ASSERT_EQUAL(exists_on_owner("{rw}:lock"), 0);
        tslock_client_set_step_hook(c, NULL, NULL);
        tslock_lock_free(l);
    }
    tslock_client_free(c);
}

/* --------------------------------------------------- a password */

/*
 * A cluster whose nodes all require a password: a client with it reaches
 * keys on every master (each connection opened on first use sends AUTH),
 * and a client without it is refused at connect.
 */
static void test_password(void)
{
    th_cluster pw;
    tslock_client *c = NULL, *bare = NULL;
    int seen[TH_CLUSTER_MAX] = {0}, i;

    CU_ASSERT_FATAL(th_cluster_start_auth(&pw, 3, "s3cret") == 0);
    CU_ASSERT_FATAL(tslock_client_new(&c) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_client_set_auth(c, NULL, "s3cret") == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_connect_tcp(c, "127.0.0.1", pw.node[1].port),
                    TSLOCK_OK);
    for (i = 0; i < 9; i++) {
        tslock_lock *l = NULL;
        char key[32];

        snprintf(key, sizeof(key), "pw:%d", i);
        seen[th_cluster_owner(&pw, key)]++;
        CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
        tslock_lock_set_scheme(l, i % 2 ? TSLOCK_SCHEME_BRIDGE
                                        : TSLOCK_SCHEME_TOKEN);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        tslock_lock_free(l);
    }
    for (i = 0; i < pw.n; i++)
        CU_ASSERT_TRUE(seen[i] > 0);
    CU_ASSERT_FATAL(tslock_client_new(&bare) == TSLOCK_OK);
    CU_ASSERT_EQUAL(
        tslock_client_connect_tcp(bare, "127.0.0.1", pw.node[0].port),
        TSLOCK_EAUTH);
    tslock_client_free(bare);
    tslock_client_free(c);
    th_cluster_stop(&pw);
}

/* ----------------------------------------------------- a failover */

/* Poll (up to 30 s) until cond(arg) holds; a bound, not an order. */
static int eventually(int (*cond)(const void *), const void *arg)
{
    int i;

    for (i = 0; i < 600; i++) {
        if (cond(arg))
            return 1;
        th_sleep_us(50000);
    }
    return 0;
}

static const th_cluster *fo_cluster;
static int fo_old_owner, fo_replica;

/* The key's master has a replica the cluster knows. */
static int has_replica(const void *key)
{
    return th_cluster_replica(fo_cluster, key) >= 0;
}

/* The replica has the lock key (READONLY lets it answer for its slot). */
static int replica_has_key(const void *key)
{
    redisContext *c = th_redis(&fo_cluster->node[fo_replica]);
    redisReply *r;
    int has;

    freeReplyObject(redisCommand(c, "READONLY"));
    r = redisCommand(c, "EXISTS %s", (const char *)key);
    has = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    redisFree(c);
    return has;
}

/* The key's slot is served again, by a master that is not the dead one. */
static int failed_over(const void *key)
{
    int owner = th_cluster_owner(fo_cluster, key);

    return owner >= 0 && owner != fo_old_owner;
}

/*
 * Three masters with a replica each: the master holding a lock is
 * killed (SIGKILL) and its replica promoted.  The holder, connected
 * through another node, releases: the dropped connection is recovered,
 * the slot map learned again, and the release done on the new master;
 * the lock had reached the replica first, so nothing was lost, and a new
 * acquire works there.  (Had it not, the release would say TSLOCK_ELOST:
 * see tslock(7), CLUSTER.)  A client that reached the cluster through
 * the dead master reconnects through another node it learned of.
 */
static void test_failover(void)
{
    static const char key[] = "fo:lock";
    th_cluster fo;
    tslock_client *c = NULL, *c2 = NULL;
    tslock_lock *l = NULL, *l2 = NULL;
    int seed;

    CU_ASSERT_FATAL(th_cluster_start_opts(&fo, 3, 1, NULL, 1000) == 0);
    fo_cluster = &fo;
    fo_old_owner = th_cluster_owner(&fo, key);
    CU_ASSERT_FATAL(eventually(has_replica, key));
    fo_replica = th_cluster_replica(&fo, key);
    CU_ASSERT_FATAL(fo_old_owner >= 0 && fo_replica >= 0);
    for (seed = 0; seed == fo_old_owner || seed == fo_replica; seed++)
        ;
    CU_ASSERT_FATAL(tslock_client_new(&c) == TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(
        tslock_client_connect_tcp(c, "127.0.0.1", fo.node[seed].port),
        TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    tslock_lock_set_ttl(l, 60000);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_FATAL(eventually(replica_has_key, key));
    /* A second client that reached the cluster through the doomed node. */
    CU_ASSERT_FATAL(tslock_client_new(&c2) == TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(
        tslock_client_connect_tcp(c2, "127.0.0.1", fo.node[fo_old_owner].port),
        TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_new(&l2, c2, "fo:other") == TSLOCK_OK);
    th_server_kill(&fo.node[fo_old_owner]);
    CU_ASSERT_FATAL(eventually(failed_over, key));
    CU_ASSERT_EQUAL(th_cluster_owner(&fo, key), fo_replica);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_FALSE(tslock_client_is_broken(c));
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    /* Its address is dead: the reconnect goes to a node the map named. */
    CU_ASSERT_EQUAL(tslock_client_reconnect(c2), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l2, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l2), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_lock_free(l2);
    tslock_client_free(c);
    tslock_client_free(c2);
    th_cluster_stop(&fo);
}

/* ------------------------------------------------------- reconnects */

/* CLIENT KILL every normal client of node i (the test's own included). */
static void kill_clients(int i)
{
    redisContext *c = th_redis(&cl.node[i]);
    redisReply *r = redisCommand(c, "CLIENT KILL TYPE normal SKIPME yes");

    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER
                   && r->integer >= 1);
    freeReplyObject(r);
    redisFree(c);
}

/*
 * The connection to the key's master drops while a lock is held there
 * (the client reached the cluster through another node): the release
 * reconnects, learns the map again and releases on the right master;
 * an extend does the same; tslock_client_reconnect() works too.
 */
static void test_reconnect_paths(void)
{
    tslock_client *c = client_on(0);
    tslock_lock *l = NULL;
    const char *key = NULL;
    char buf[32];
    int i;

    for (i = 0; key == NULL; i++) {
        snprintf(buf, sizeof(buf), "recon:%d", i);
        if (th_cluster_owner(&cl, buf) != 0)
            key = buf;
    }
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    tslock_lock_set_ttl(l, 30000);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    kill_clients(th_cluster_owner(&cl, key));
    CU_ASSERT_EQUAL(tslock_extend(l, 30000), TSLOCK_OK);
    kill_clients(th_cluster_owner(&cl, key));
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_EQUAL(exists_on_owner(key), 0);
    kill_clients(0);
    kill_clients(th_cluster_owner(&cl, key));
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EIO);
    CU_ASSERT_TRUE(tslock_client_is_broken(c));
    CU_ASSERT_EQUAL(tslock_client_reconnect(c), TSLOCK_OK);
    CU_ASSERT_TRUE(tslock_client_caps(c) & TSLOCK_CAP_CLUSTER);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(exists_on_owner(key), 1);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* ---------------------------------------------------------- the CLI */

/*
 * Run tools/tslock with -u URL of node `node` and args (a shell line);
 * its stdout into out.  Returns its exit status, or -1.
 */
static int cli(int node, const char *args, char *out, size_t size)
{
    const char *top = getenv("top_builddir");
    char cmd[1024];
    size_t len = 0;
    FILE *p;
    int status;

    snprintf(cmd, sizeof(cmd), "%s/tools/tslock -q -u %s %s", top ? top : ".",
             th_cluster_url(&cl, node), args);
    p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    out[0] = '\0';
    while (len + 1 < size && fgets(out + len, (int)(size - len), p) != NULL)
        len += strlen(out + len);
    status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Every form through node 0's URL, on keys of every node: acquire
 * prints a handle, status shows the holder, a second acquire is busy
 * (1), release frees it, the run form runs its command, survey lists
 * the locks of all three masters and says so, and break deletes.
 */
static void test_cli_through_one_node(void)
{
    char out[8192], args[512], handle[128];
    int seen[TH_CLUSTER_MAX] = {0}, i;

    for (i = 0; i < 9; i++) {
        char key[32];
        snprintf(key, sizeof(key), "cli:%d", i);
        seen[th_cluster_owner(&cl, key)]++;
        snprintf(args, sizeof(args), "-m %s acquire %s",
                 i % 3 == 0   ? "token"
                 : i % 3 == 1 ? "bridge"
                              : "timestamp",
                 key);
        CU_ASSERT_EQUAL(cli(0, args, out, sizeof(out)), 0);
        CU_ASSERT_EQUAL(exists_on_owner(key), 1);
        snprintf(handle, sizeof(handle), "%.120s", out);
        handle[strcspn(handle, "\n")] = '\0';
        CU_ASSERT_TRUE(handle[0] != '\0');
        snprintf(args, sizeof(args), "status %s", key);
        CU_ASSERT_EQUAL(cli(1, args, out, sizeof(out)), 0);
        snprintf(args, sizeof(args), "acquire %s", key);
        CU_ASSERT_EQUAL(cli(2, args, out, sizeof(out)), 1);
        if (i % 2 == 0) {
            snprintf(args, sizeof(args), "release %s '%s'", key, handle);
            CU_ASSERT_EQUAL(cli(0, args, out, sizeof(out)), 0);
            CU_ASSERT_EQUAL(exists_on_owner(key), 0);
        }
    }
    for (i = 0; i < cl.n; i++)
        CU_ASSERT_TRUE(seen[i] > 0);
    CU_ASSERT_EQUAL(cli(1, "--fence cli:run -- sh -c 'echo ran $TSLOCK_FENCE'",
                        out, sizeof(out)),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "ran 1"));
    /* Four locks still held (cli:1, 3, 5, 7), on whichever masters. */
    CU_ASSERT_EQUAL(cli(2, "survey --match 'cli:*'", out, sizeof(out)), 0);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(out, "4 keys, 4 locks, on 3 cluster masters"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "bridge-ms"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "token"));
    CU_ASSERT_EQUAL(cli(0, "survey --json --match 'cli:*'", out, sizeof(out)),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"locks\":4,\"cluster_masters\":3"));
    /* break, on a bridge hold (cli:1) and a token hold (cli:3). */
    for (i = 1; i <= 3; i += 2) {
        char key[32];
        redisReply *r;

        snprintf(key, sizeof(key), "cli:%d", i);
        r = on_owner(key, "GET %s", key);
        CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_STRING);
        snprintf(args, sizeof(args), "break %s --if-value '%s'", key, r->str);
        freeReplyObject(r);
        CU_ASSERT_EQUAL(cli(2, args, out, sizeof(out)), 0);
        CU_ASSERT_EQUAL(exists_on_owner(key), 0);
    }
}

/*
 * watch follows MONITOR on the master that owns the keys, not on the
 * node of the URL; keys on two masters are refused (64) by name.
 */
static void test_cli_watch(void)
{
    char out[4096], args[1024], k2[32];
    int i, owner = th_cluster_owner(&cl, "cli:w"), url = (owner + 1) % cl.n;

    i = 0;
    do
        snprintf(k2, sizeof(k2), "cli:w%d", i++);
    while (th_cluster_owner(&cl, k2) == owner);
    snprintf(args, sizeof(args), "watch --for 1 cli:w %s 2>&1", k2);
    CU_ASSERT_EQUAL(cli(url, args, out, sizeof(out)), 64);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "watch them separately"));
    /* The lock is taken once the owner has a MONITOR client, not before. */
    snprintf(args, sizeof(args),
             "watch --for 10000 cli:w > %s/watch.out 2>&1 & "
             "i=0; until redis-cli -p %d CLIENT LIST | grep -q cmd=monitor; "
             "do i=$((i+1)); [ $i -lt 200 ] || break; sleep 0.05; done; "
             "%s/tools/tslock -q -u %s cli:w -- true; "
             "kill -TERM $!; wait; cat %s/watch.out",
             cl.node[0].dir, cl.node[owner].port,
             getenv("top_builddir") ? getenv("top_builddir") : ".",
             th_cluster_url(&cl, url), cl.node[0].dir);
    (void)cli(url, args, out, sizeof(out));
    if (strstr(out, "cli:w") == NULL)
        fprintf(stderr, "watch said: %s\n", out);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "cli:w"));
    CU_ASSERT_PTR_NULL(strstr(out, "no client touched"));
}

int main(void)
{
    CU_pSuite s;
    int rc = 1;

    if (th_cluster_start(&cl, 3) != 0)
        return 2;
    if (CU_initialize_registry() == CUE_SUCCESS) {
        s = CU_add_suite("slots", NULL, NULL);
        CU_add_test(s, "tslock_key_slot is CLUSTER KEYSLOT", test_key_slot);
        CU_add_test(s, "companions share the key's slot", test_companions);
        CU_add_test(s, "a '}' without a tag", test_brace_without_tag);
        s = CU_add_suite("schemes", NULL, NULL);
        CU_add_test(s, "every scheme on every node",
                    test_every_scheme_every_node);
        CU_add_test(s, "shared holds and permits on every node",
                    test_shared_and_permits_every_node);
        CU_add_test(s, "a waiter woken across nodes", test_woken_across_nodes);
        CU_add_test(s, "a waiter in line woken across nodes",
                    test_woken_in_line_across_nodes);
        CU_add_test(s, "reconnects on a cluster", test_reconnect_paths);
        CU_add_test(s, "a cluster with a password", test_password);
        CU_add_test(s, "a master fails over under a hold", test_failover);
        CU_add_test(s, "a wrapped connection does not route",
                    test_wrapped_does_not_route);
        CU_add_test(s, "a slot moved between WATCH and EXEC",
                    test_slot_moved_under_watch);
        s = CU_add_suite("cli", NULL, NULL);
        CU_add_test(s, "every form through one node's URL",
                    test_cli_through_one_node);
        CU_add_test(s, "watch on the keys' master", test_cli_watch);
        s = CU_add_suite("migration", NULL, NULL);
        CU_add_test(s, "the checker catches ignored redirections",
                    test_checker_catches_ignored_redirects);
        CU_add_test(s, "load across slot migrations: zero overlaps",
                    test_load_across_migration);
        rc = th_run_all();
    }
    th_cluster_stop(&cl);
    return rc;
}
