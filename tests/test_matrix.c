/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_matrix.c - the lock suite for every scheme on every server
 * generation: a modern redis-server, the same server with capabilities
 * held back (tslock_client_limit_caps), and the proxy answering as Redis
 * 2.6.11, 2.6.0, 2.4.18, 2.2.15 and 2.0.5.  Each combination runs
 * acquire, busy, wait, release, lost, extend and a load test with an
 * overlap count, and counts the commands of each operation (through the
 * step hook; a pipeline sends several in one round trip) against the
 * table in doc/compat.md.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static int rounds;
#define WORKERS  8
#define ALL_CAPS ~0u

struct target {
    const char *name;
    const char *emulate; /* proxy version, or NULL for the real server */
    unsigned limit;      /* tslock_client_limit_caps() */
    th_server proxy;
};

static th_server srv;
static struct target targets[] = {
    {"modern", NULL, ALL_CAPS, {0}},
    {"modern without SET NX PX", NULL, ~TSLOCK_CAP_SET_NX_PX, {0}},
    {"modern with WATCH only",
     NULL,
     TSLOCK_CAP_WATCH | TSLOCK_CAP_TTL_KEEPS,
     {0}},
    {"modern with nothing", NULL, 0, {0}},
    {"2.6.11", "2.6.11", ALL_CAPS, {0}},
    {"2.6.0", "2.6.0", ALL_CAPS, {0}},
    {"2.4.18", "2.4.18", ALL_CAPS, {0}},
    {"2.2.15", "2.2.15", ALL_CAPS, {0}},
    {"2.0.5", "2.0.5", ALL_CAPS, {0}},
};
#define N_TARGETS (sizeof(targets) / sizeof(targets[0]))

static const tslock_scheme schemes[] = {TSLOCK_SCHEME_TIMESTAMP,
                                        TSLOCK_SCHEME_TOKEN, TSLOCK_SCHEME_AUTO,
                                        TSLOCK_SCHEME_BRIDGE};
static const char *const scheme_names[] = {"timestamp", "token", "auto",
                                           "bridge"};
#define N_SCHEMES 4

/* The combination the running suite tests, set by its init. */
static struct target *cur;
static tslock_scheme cur_scheme;
static const char *cur_scheme_name;
static int next_combo;
static char suite_names[N_TARGETS * N_SCHEMES][96];
static char key[64];

static const th_server *endpoint(const struct target *t)
{
    return t->emulate != NULL ? &t->proxy : &srv;
}

static tslock_client *connect_target(void)
{
    tslock_client *c = th_client(endpoint(cur));

    tslock_client_limit_caps(c, cur->limit);
    return c;
}

static tslock_lock *lock_for(tslock_client *c, int64_t ttl)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    tslock_lock_set_scheme(l, cur_scheme);
    tslock_lock_set_ttl(l, ttl);
    tslock_lock_set_retry(l, 1, 5);
    return l;
}

/* What the combination should do: the token scheme needs one of these. */
static int token_possible(unsigned caps)
{
    return (caps & (TSLOCK_CAP_SET_NX_PX | TSLOCK_CAP_LUA | TSLOCK_CAP_WATCH))
           != 0;
}

static int combo_init(void)
{
    int t = next_combo / N_SCHEMES, s = next_combo % N_SCHEMES;

    next_combo++;
    cur = &targets[t];
    cur_scheme = schemes[s];
    cur_scheme_name = scheme_names[s];
    snprintf(key, sizeof(key), "matrix:%d:%d", t, s);
    return 0;
}

/* ------------------------------------------------- counting commands */

static int steps_seen;

static int evals_seen;

static int count_hook(tslock_client *c, tslock_step step, const char *k,
                      void *ud)
{
    /*
     * The NOSCRIPT fallback is not part of the steady state, and in it
     * there must be none: an EVAL there means a script's SHA-1 in
     * proto/scripts.c is not the server's, so every call pays twice.
     */
    if (step != TSLOCK_STEP_EVAL)
        steps_seen++;
    else
        evals_seen++;
    return 0;
}

struct costs {
    int acquire, busy, release, extend;
};

/* Where a bridge hold carries its ownership proof (TTL, owner key). */
static int proof_possible(unsigned caps)
{
    return (caps & TSLOCK_CAP_TTL_KEEPS)
           && (caps & (TSLOCK_CAP_LUA | TSLOCK_CAP_WATCH));
}

/* The commands doc/compat.md promises for the path this takes. */
static struct costs expected_costs(unsigned caps, tslock_scheme used)
{
    struct costs k;
    int lua = caps & TSLOCK_CAP_LUA, watch = caps & TSLOCK_CAP_WATCH;

    if (used == TSLOCK_SCHEME_TOKEN) {
        k.acquire = caps & TSLOCK_CAP_SET_NX_PX ? 1 : lua ? 1 : 6;
        k.busy = caps & TSLOCK_CAP_SET_NX_PX ? 3 : lua ? 1 : 3;
        /*
         * The WATCH form reads the line of waiters beside the key (WATCH,
         * GET, ZRANGE) and PUBLISHes in MULTI: WATCH, GET, ZRANGE, MULTI,
         * DEL, PUBLISH, EXEC, in two round trips.
         */
        k.release = lua ? 1 : 7;
        k.extend = lua ? 1 : 5;
    } else if (used == TSLOCK_SCHEME_BRIDGE && proof_possible(caps)) {
        /*
         * The claim and the proof: one script with Lua; with WATCH only,
         * WATCH, GET, MULTI, SETEX, SETEX, EXEC to claim (WATCH, GET,
         * UNWATCH when busy) and WATCH, GET, TTL, GET, MULTI, the change
         * (DEL and PUBLISH; or SETEX and EXPIRE), EXEC to release or
         * extend.
         */
        k.acquire = lua ? 1 : 6;
        k.busy = lua ? 1 : 3;
        k.release = lua ? 1 : 8;
        k.extend = lua ? 1 : 8;
    } else {
        /* Timestamp, and bridge where it has no proof (Redis 2.0). */
        k.acquire = 1;
        k.busy = 2;
        k.release = lua ? 1 : watch ? 6 : 3; /* with its PUBLISH */
        k.extend = lua ? 1 : watch ? 5 : 2;
    }
    return k;
}

/* ------------------------------------------------------------- tests */

static void test_basic_and_costs(void)
{
    tslock_client *c1 = connect_target(), *c2 = connect_target();
    tslock_lock *a = lock_for(c1, 10000), *b = lock_for(c2, 10000);
    unsigned caps = tslock_client_caps(c1);
    struct costs want;
    int rc;

    rc = tslock_acquire(a, 0);
    if (cur_scheme == TSLOCK_SCHEME_TOKEN && !token_possible(caps)) {
        /* Redis 2.0: no atomic token lock exists; never build one. */
        CU_ASSERT_EQUAL(rc, TSLOCK_EUNSUPPORTED);
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c1), "2.2"));
        goto out;
    }
    CU_ASSERT_EQUAL_FATAL(rc, TSLOCK_OK);
    if (cur_scheme == TSLOCK_SCHEME_AUTO)
        CU_ASSERT_EQUAL(tslock_lock_scheme_used(a),
                        token_possible(caps) ? TSLOCK_SCHEME_TOKEN
                                             : TSLOCK_SCHEME_TIMESTAMP);
    /* Warm the script cache, then count the steady state. */
    CU_ASSERT_EQUAL(tslock_extend(a, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_release(a), TSLOCK_OK);
    want = expected_costs(caps, tslock_lock_scheme_used(a));
    tslock_client_set_step_hook(c1, count_hook, NULL);
    tslock_client_set_step_hook(c2, count_hook, NULL);

    steps_seen = evals_seen = 0;
    CU_ASSERT_EQUAL(tslock_acquire(a, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(steps_seen, want.acquire);
    steps_seen = 0;
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(steps_seen, want.busy);
    steps_seen = 0;
    CU_ASSERT_EQUAL(tslock_extend(a, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(steps_seen, want.extend);
    steps_seen = 0;
    CU_ASSERT_EQUAL(tslock_release(a), TSLOCK_OK);
    CU_ASSERT_EQUAL(steps_seen, want.release);
    if (steps_seen != want.release)
        fprintf(stderr, "  release took %d commands\n", steps_seen);
    CU_ASSERT_EQUAL(evals_seen, 0); /* every script's SHA-1 is right */
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
out:
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

/* B waits while A's short lease runs out (never released). */
static void test_wait_for_expiry(void)
{
    tslock_client *c1 = connect_target(), *c2 = connect_target();
    tslock_lock *a = lock_for(c1, 300), *b = lock_for(c2, 10000);

    if (cur_scheme == TSLOCK_SCHEME_TOKEN
        && !token_possible(tslock_client_caps(c1)))
        goto out;
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(a, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_acquire(b, 8000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(a), TSLOCK_ELOST);
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
out:
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

/* A's key is deleted behind its back and B takes it: A's release and
 * extend report the loss and leave B's lock alone. */
static void test_lost(void)
{
    tslock_client *c1 = connect_target(), *c2 = connect_target();
    tslock_lock *a = lock_for(c1, 10000), *b = lock_for(c2, 10000);
    redisContext *raw = th_redis(endpoint(cur));
    redisReply *r;
    int64_t left = 0;

    if (cur_scheme == TSLOCK_SCHEME_TOKEN
        && !token_possible(tslock_client_caps(c1)))
        goto out;
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(a, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_extend(a, 5000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_time_left(a, &left), TSLOCK_OK);
    CU_ASSERT_TRUE(left > 1000 && left <= 6000);
    freeReplyObject(redisCommand(raw, "DEL %s", key));
    CU_ASSERT_EQUAL(tslock_lock_time_left(a, &left), TSLOCK_ELOST);
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_extend(a, 5000), TSLOCK_ELOST);
    CU_ASSERT_FALSE(tslock_lock_is_held(a));
    r = redisCommand(raw, "GET %s", key);
    CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_STRING);
    CU_ASSERT_STRING_EQUAL(r->str, tslock_lock_value(b));
    freeReplyObject(r);
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
out:
    redisFree(raw);
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

/*
 * A key that holds a hash is TSLOCK_EWRONGTYPE in every scheme on every
 * generation, at once even for a waiting acquire, and is never written.
 */
static void test_wrong_type(void)
{
    tslock_client *c = connect_target();
    tslock_lock *l = lock_for(c, 5000);
    redisContext *raw = th_redis(endpoint(cur));
    redisReply *r;
    int rc;

    freeReplyObject(redisCommand(raw, "DEL %s", key));
    freeReplyObject(redisCommand(raw, "HSET %s f precious", key));
    rc = tslock_acquire(l, 0);
    if (rc == TSLOCK_EUNSUPPORTED) { /* the token scheme on 2.0 */
        CU_ASSERT_EQUAL(cur_scheme, TSLOCK_SCHEME_TOKEN);
    } else {
        CU_ASSERT_EQUAL(rc, TSLOCK_EWRONGTYPE);
        CU_ASSERT_EQUAL(tslock_acquire(l, 60000), TSLOCK_EWRONGTYPE);
        /* The wording of every generation, with or without WRONGTYPE. */
        CU_ASSERT_PTR_NOT_NULL(
            strstr(tslock_client_errstr(c), "wrong kind of value"));
    }
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    r = redisCommand(raw, "HGETALL %s", key);
    CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_ARRAY);
    CU_ASSERT_EQUAL(r->elements, 2);
    freeReplyObject(r);
    freeReplyObject(redisCommand(raw, "DEL %s", key));
    redisFree(raw);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/*
 * Two bridge holds that write the same stamp: seconds stamps for a 5 s
 * lease carry no randomness, and both clients read one test clock.  A's
 * key is deleted behind its back (the Java client's release does that)
 * and then B, or a legacy client, writes the identical stamp.  Where the
 * server gives the bridge its proof, A's release sees the key is not its
 * own and leaves it; on Redis 2.0 it cannot tell, and deletes it: the
 * documented limit of the bridge there.
 */
static void test_bridge_identical_stamps(void)
{
    tslock_client *c1 = connect_target(), *c2 = connect_target();
    tslock_lock *a = lock_for(c1, 5000), *b = lock_for(c2, 5000);
    redisContext *raw = th_redis(endpoint(cur));
    int proof = proof_possible(tslock_client_caps(c1));
    char va[64];
    redisReply *r;
    th_clock clk;

    if (cur_scheme != TSLOCK_SCHEME_BRIDGE)
        goto out;
    th_clock_init(&clk);
    tslock_client_set_clock(c1, th_clock_fn, &clk);
    tslock_client_set_clock(c2, th_clock_fn, &clk);
    tslock_lock_set_unit(a, TSLOCK_UNIT_S);
    tslock_lock_set_unit(b, TSLOCK_UNIT_S);

    /* Another bridge holder. */
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(a, 0), TSLOCK_OK);
    snprintf(va, sizeof(va), "%s", tslock_lock_value(a));
    freeReplyObject(redisCommand(raw, "DEL %s", key));
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(b, 0), TSLOCK_OK);
    CU_ASSERT_STRING_EQUAL(tslock_lock_value(b), va);
    CU_ASSERT_EQUAL(tslock_release(a), proof ? TSLOCK_ELOST : TSLOCK_OK);
    r = redisCommand(raw, "EXISTS %s", key);
    CU_ASSERT_EQUAL(r->integer, proof ? 1 : 0);
    freeReplyObject(r);
    CU_ASSERT_EQUAL(tslock_release(b), proof ? TSLOCK_OK : TSLOCK_ELOST);

    /* A legacy client, whose SETNX sets no TTL. */
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(a, 0), TSLOCK_OK);
    snprintf(va, sizeof(va), "%s", tslock_lock_value(a));
    freeReplyObject(redisCommand(raw, "DEL %s", key));
    freeReplyObject(redisCommand(raw, "SETNX %s %s", key, va));
    CU_ASSERT_EQUAL(tslock_release(a), proof ? TSLOCK_ELOST : TSLOCK_OK);
    r = redisCommand(raw, "GET %s", key);
    if (proof) {
        CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_STRING);
        CU_ASSERT_STRING_EQUAL(r->str, va);
    } else {
        CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_NIL);
    }
    freeReplyObject(r);
    printf("\n    %-26s identical stamps: %s ", cur->name,
           proof ? "told apart by the proof"
                 : "not told apart (no proof without TTLs that survive "
                   "writes and Lua or WATCH)");
    freeReplyObject(redisCommand(raw, "DEL %s", key));
out:
    redisFree(raw);
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

/* ------------------------------------------------------------ load */

struct shared {
    atomic_int inside, overlaps, acquisitions, failures;
    int counter;
};
static struct shared *sh;

static void worker(int index, void *userdata)
{
    (void)index;
    (void)userdata;
    tslock_client *c = connect_target();
    tslock_lock *l = lock_for(c, 10000);
    int i, seen;

    for (i = 0; i < rounds; i++) {
        if (tslock_acquire(l, 60000) != TSLOCK_OK) {
            fprintf(stderr, "  worker: %s\n", tslock_client_errstr(c));
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        atomic_fetch_add(&sh->acquisitions, 1);
        if (atomic_fetch_add(&sh->inside, 1) != 0)
            atomic_fetch_add(&sh->overlaps, 1);
        seen = sh->counter;
        sched_yield();
        sh->counter = seen + 1;
        atomic_fetch_sub(&sh->inside, 1);
        if (tslock_release(l) != TSLOCK_OK)
            atomic_fetch_add(&sh->failures, 1);
    }
    tslock_lock_free(l);
    tslock_client_free(c);
    _exit(0);
}

static void test_load(void)
{
    int clean;
    tslock_client *probe = connect_target();
    unsigned caps = tslock_client_caps(probe);

    tslock_client_free(probe);
    if (cur_scheme == TSLOCK_SCHEME_TOKEN && !token_possible(caps))
        return;
    memset(sh, 0, sizeof(*sh));
    clean = th_workers(WORKERS, worker, NULL);
    printf("\n    %-26s %-9s %d processes, %d acquisitions, %d overlaps ",
           cur->name, cur_scheme_name, WORKERS, atomic_load(&sh->acquisitions),
           atomic_load(&sh->overlaps));
    CU_ASSERT_TRUE(clean);
    CU_ASSERT_EQUAL(atomic_load(&sh->failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->acquisitions), WORKERS * rounds);
    CU_ASSERT_EQUAL(atomic_load(&sh->overlaps), 0);
    CU_ASSERT_EQUAL(sh->counter, WORKERS * rounds);
}

/* -------------------------------------- the 2.0 hazard, shown for real */

/*
 * On Redis 2.0 a write to a key with a TTL deletes it first, so the naive
 * SETNX + EXPIRE lock is taken twice; tslock never builds it there.
 */
static void test_redis20_setnx_expire_taken_twice(void)
{
    struct target *t20 = &targets[N_TARGETS - 1];
    redisContext *a = th_redis(&t20->proxy), *b = th_redis(&t20->proxy);
    tslock_client *c = th_client(&t20->proxy);
    tslock_lock *l = NULL;
    redisReply *r;

    freeReplyObject(redisCommand(a, "DEL hazard:naive hazard:lib"));
    r = redisCommand(a, "SETNX hazard:naive a");
    CU_ASSERT_EQUAL(r->integer, 1);
    freeReplyObject(r);
    freeReplyObject(redisCommand(a, "EXPIRE hazard:naive 60"));
    r = redisCommand(b, "SETNX hazard:naive b");
    CU_ASSERT_EQUAL(r->integer, 1); /* B holds it too */
    freeReplyObject(r);

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "hazard:lib") == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_scheme_used(l), TSLOCK_SCHEME_TIMESTAMP);
    r = redisCommand(a, "TTL hazard:lib");
    CU_ASSERT_EQUAL(r->integer, -1); /* no TTL for SETNX to trip on */
    freeReplyObject(r);
    r = redisCommand(b, "SETNX hazard:lib b");
    CU_ASSERT_EQUAL(r->integer, 0);
    freeReplyObject(r);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
    redisFree(a);
    redisFree(b);
}

int main(void)
{
    size_t t, s;
    int rc = 1;

    rounds = th_rounds(100);

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || th_server_start(&srv, NULL) != 0)
        return 1;
    for (t = 0; t < N_TARGETS; t++)
        if (targets[t].emulate != NULL
            && th_proxy_start(&targets[t].proxy, &srv, targets[t].emulate) != 0)
            goto out;
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    for (t = 0; t < N_TARGETS; t++)
        for (s = 0; s < N_SCHEMES; s++) {
            char *name = suite_names[t * N_SCHEMES + s];
            CU_pSuite suite;
            snprintf(name, sizeof(suite_names[0]), "%s, %s", targets[t].name,
                     scheme_names[s]);
            suite = CU_add_suite(name, combo_init, NULL);
            CU_add_test(suite, "acquire, busy, extend, release; round trips",
                        test_basic_and_costs);
            CU_add_test(suite, "wait for a lease to run out",
                        test_wait_for_expiry);
            CU_add_test(suite, "lost: release and extend change nothing",
                        test_lost);
            CU_add_test(suite, "a key of the wrong type", test_wrong_type);
            CU_add_test(suite, "load: 8 processes, zero overlaps", test_load);
            if (schemes[s] == TSLOCK_SCHEME_BRIDGE)
                CU_add_test(suite, "identical bridge stamps told apart",
                            test_bridge_identical_stamps);
        }
    CU_add_test(CU_add_suite("Redis 2.0 hazard", NULL, NULL),
                "naive SETNX+EXPIRE taken twice; tslock never builds it",
                test_redis20_setnx_expire_taken_twice);
    rc = th_run_all();
out:
    for (t = 0; t < N_TARGETS; t++)
        th_proxy_stop(&targets[t].proxy);
    th_server_stop(&srv);
    return rc;
}
