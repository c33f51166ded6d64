/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_rwsem.c - read-write locks and semaphores on the modern server and
 * on every generation the proxy plays: races replayed step by step (the
 * step hook runs the other side before each command of one side's
 * operation), a crashed reader on the test clock, writer preference,
 * the semaphore's over-admission race on a naive Redis in Action form
 * and on tslock's, what plain and legacy clients see of a shared key,
 * and load tests whose shared-memory checker is first shown to catch a
 * broken control.  Redis 2.0 is checked to refuse.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "legacy.h"

struct gen {
    const char *name;
    const char *emulate; /* proxy version, or NULL for the real server */
    th_server proxy;
};

static th_server srv;
static struct gen gens[] = {
    {"modern", NULL, {0}},     {"2.6.11", "2.6.11", {0}},
    {"2.6.0", "2.6.0", {0}},   {"2.4.18", "2.4.18", {0}},
    {"2.2.15", "2.2.15", {0}}, {"2.0.5", "2.0.5", {0}},
};
#define N_GENS    (sizeof(gens) / sizeof(gens[0]))
#define N_WORKING (N_GENS - 1) /* all but 2.0 */
#define GEN_20    (N_GENS - 1)
static struct gen *cur;
static int next_gen;
static th_clock clk;
static int rounds;

static const th_server *endpoint(const struct gen *g)
{
    return g->emulate != NULL ? &g->proxy : &srv;
}

static tslock_client *client(void)
{
    tslock_client *c = th_client(endpoint(cur));

    tslock_client_set_clock(c, th_clock_fn, &clk);
    return c;
}

static tslock_lock *kind_lock(tslock_client *c, const char *key, tslock_rw mode,
                              int64_t permits, int64_t ttl)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_ttl(l, ttl) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_retry(l, 1, 3) == TSLOCK_OK);
    CU_ASSERT_FATAL((permits > 0 ? tslock_lock_set_permits(l, permits)
                                 : tslock_lock_set_rw(l, mode))
                    == TSLOCK_OK);
    return l;
}

/* base, made this generation's own: they share one server. */
static const char *K(const char *base)
{
    static char ring[8][96];
    static int next;
    char *k = ring[next++ % 8];

    snprintf(k, sizeof(ring[0]), "%s:%s", base, cur->name);
    return k;
}

static int gen_init(void)
{
    cur = &gens[next_gen++];
    th_clock_init(&clk);
    return 0;
}

/* ------------------------------------------------------ race replays */

/*
 * Fire `action` once, before the fire_at-th command (from 0) of the
 * operation running on the hooked client.
 */
struct replay {
    int fire_at, calls, fired;
    void (*action)(struct replay *);
    tslock_lock *other;
    int other_rc;
};

static int replay_hook(tslock_client *c, tslock_step step, const char *k,
                       void *ud)
{
    struct replay *r = ud;

    (void)c;
    (void)step;
    (void)k;
    if (r->calls++ == r->fire_at && !r->fired) {
        r->fired = 1;
        r->action(r);
    }
    return 0;
}

static void other_acquires(struct replay *r)
{
    r->other_rc = tslock_acquire(r->other, 0);
}

static const char *mode_name(tslock_rw m)
{
    return m == TSLOCK_RW_SHARED ? "reader" : "writer";
}

/*
 * Both sides acquire, the second before each command of the first's
 * acquire in turn: exactly one of them holds every time.  Returns how
 * many commands the first side's acquire sent.
 */
static int race_acquires(tslock_rw first, tslock_rw second)
{
    int k;

    for (k = 0;; k++) {
        char key[64];
        tslock_client *a = client(), *b = client();
        tslock_lock *la, *lb;
        struct replay r = {k, 0, 0, other_acquires, NULL, 0};
        int rc;

        snprintf(key, sizeof(key), "rw:acq:%s:%d:%d:%d", cur->name, first,
                 second, k);
        la = kind_lock(a, key, first, 0, 5000);
        lb = kind_lock(b, key, second, 0, 5000);
        r.other = lb;
        tslock_client_set_step_hook(a, replay_hook, &r);
        rc = tslock_acquire(la, 0);
        tslock_client_set_step_hook(a, NULL, NULL);
        if (r.fired) {
            int both = rc == TSLOCK_OK && r.other_rc == TSLOCK_OK;
            int none = rc == TSLOCK_EBUSY && r.other_rc == TSLOCK_EBUSY;
            if (both || none)
                printf("\n    %s %s acquire, %s before command %d: %s, %s",
                       cur->name, mode_name(first), mode_name(second), k,
                       tslock_errname(rc), tslock_errname(r.other_rc));
            CU_ASSERT_FALSE(both);
            CU_ASSERT_FALSE(none);
        }
        if (tslock_lock_is_held(la))
            CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_OK);
        if (tslock_lock_is_held(lb))
            CU_ASSERT_EQUAL(tslock_release(lb), TSLOCK_OK);
        tslock_lock_free(la);
        tslock_lock_free(lb);
        tslock_client_free(a);
        tslock_client_free(b);
        if (!r.fired)
            return k;
    }
}

static void test_race_acquire(void)
{
    int n1 = race_acquires(TSLOCK_RW_SHARED, TSLOCK_RW_EXCLUSIVE);
    int n2 = race_acquires(TSLOCK_RW_EXCLUSIVE, TSLOCK_RW_SHARED);

    printf("\n    %s: reader acquire %d commands, writer acquire %d; each "
           "raced at every one",
           cur->name, n1, n2);
    CU_ASSERT(n1 >= 1);
    CU_ASSERT(n2 >= 1);
}

/*
 * One side holds and releases; the other tries before each command of
 * the release: it is turned away every time (the hold is not over until
 * the release's last command), and gets in once the release is done.
 */
static int race_release(tslock_rw holder, tslock_rw other)
{
    int k;

    for (k = 0;; k++) {
        char key[64];
        tslock_client *a = client(), *b = client();
        tslock_lock *la, *lb;
        struct replay r = {k, 0, 0, other_acquires, NULL, 0};

        snprintf(key, sizeof(key), "rw:rel:%s:%d:%d:%d", cur->name, holder,
                 other, k);
        la = kind_lock(a, key, holder, 0, 5000);
        lb = kind_lock(b, key, other, 0, 5000);
        r.other = lb;
        CU_ASSERT_FATAL(tslock_acquire(la, 0) == TSLOCK_OK);
        tslock_client_set_step_hook(a, replay_hook, &r);
        CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_OK);
        tslock_client_set_step_hook(a, NULL, NULL);
        if (r.fired) {
            CU_ASSERT_EQUAL(r.other_rc, TSLOCK_EBUSY);
            if (tslock_lock_is_held(lb))
                CU_ASSERT_EQUAL(tslock_release(lb), TSLOCK_OK);
            CU_ASSERT_EQUAL(tslock_acquire(lb, 0), TSLOCK_OK);
            CU_ASSERT_EQUAL(tslock_release(lb), TSLOCK_OK);
        }
        tslock_lock_free(la);
        tslock_lock_free(lb);
        tslock_client_free(a);
        tslock_client_free(b);
        if (!r.fired)
            return k;
    }
}

static void test_race_release(void)
{
    int n1 = race_release(TSLOCK_RW_SHARED, TSLOCK_RW_EXCLUSIVE);
    int n2 = race_release(TSLOCK_RW_EXCLUSIVE, TSLOCK_RW_SHARED);

    printf("\n    %s: reader release %d commands, writer release %d; each "
           "raced at every one",
           cur->name, n1, n2);
    CU_ASSERT(n1 >= 1);
    CU_ASSERT(n2 >= 1);
}

static void other_releases(struct replay *r)
{
    r->other_rc = tslock_release(r->other);
}

/*
 * One side holds; the other acquires, and the holder releases before
 * each command of that acquire in turn.  The release always completes
 * as a release (never ELOST: the acquire took nothing from it), and the
 * acquire either gets in or is turned away cleanly, in which case its
 * next try gets in: nothing is left behind by the interleaving.
 */
static int race_acquire_release(tslock_rw holder, tslock_rw acquirer)
{
    int k;

    for (k = 0;; k++) {
        char key[64];
        tslock_client *a = client(), *b = client();
        tslock_lock *la, *lh;
        struct replay r = {k, 0, 0, other_releases, NULL, 0};
        int rc;

        snprintf(key, sizeof(key), "rw:acqrel:%s:%d:%d:%d", cur->name, holder,
                 acquirer, k);
        lh = kind_lock(b, key, holder, 0, 5000);
        la = kind_lock(a, key, acquirer, 0, 5000);
        r.other = lh;
        CU_ASSERT_FATAL(tslock_acquire(lh, 0) == TSLOCK_OK);
        tslock_client_set_step_hook(a, replay_hook, &r);
        rc = tslock_acquire(la, 0);
        tslock_client_set_step_hook(a, NULL, NULL);
        if (r.fired) {
            CU_ASSERT_EQUAL(r.other_rc, TSLOCK_OK);
            CU_ASSERT(rc == TSLOCK_OK || rc == TSLOCK_EBUSY);
            if (rc == TSLOCK_EBUSY)
                CU_ASSERT_EQUAL(tslock_acquire(la, 0), TSLOCK_OK);
        } else {
            CU_ASSERT_EQUAL(rc, TSLOCK_EBUSY);
            CU_ASSERT_EQUAL(tslock_release(lh), TSLOCK_OK);
        }
        if (tslock_lock_is_held(la))
            CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_OK);
        tslock_lock_free(la);
        tslock_lock_free(lh);
        tslock_client_free(a);
        tslock_client_free(b);
        if (!r.fired)
            return k;
    }
}

static void test_race_acquire_release(void)
{
    int n1 = race_acquire_release(TSLOCK_RW_EXCLUSIVE, TSLOCK_RW_SHARED);
    int n2 = race_acquire_release(TSLOCK_RW_SHARED, TSLOCK_RW_EXCLUSIVE);

    printf("\n    %s: a release before each of %d reader-acquire and %d "
           "writer-acquire commands",
           cur->name, n1, n2);
    CU_ASSERT(n1 >= 1);
    CU_ASSERT(n2 >= 1);
}

/* ---------------------------------------------------- crashed reader */

static int crash_hook(tslock_client *c, tslock_step step, const char *k,
                      void *ud)
{
    (void)c;
    (void)step;
    (void)k;
    (void)ud;
    return 1; /* stop: the process died before its release was sent */
}

static void test_crashed_reader(void)
{
    tslock_client *a = client(), *b = client(), *d = client();
    tslock_lock *r1 = kind_lock(a, K("rw:crash"), TSLOCK_RW_SHARED, 0, 5000);
    tslock_lock *r2 = kind_lock(d, K("rw:crash"), TSLOCK_RW_SHARED, 0, 2000);
    tslock_lock *w = kind_lock(b, K("rw:crash"), TSLOCK_RW_EXCLUSIVE, 0, 5000);

    CU_ASSERT_FATAL(tslock_acquire(r1, 0) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_acquire(r2, 0) == TSLOCK_OK);
    tslock_client_set_step_hook(a, crash_hook, NULL);
    CU_ASSERT_EQUAL(tslock_release(r1), TSLOCK_EHOOK);
    CU_ASSERT_EQUAL(tslock_release(r2), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(w, 0), TSLOCK_EBUSY);
    th_clock_advance(&clk, 4000);
    CU_ASSERT_EQUAL(tslock_acquire(w, 0), TSLOCK_EBUSY);
    /*
     * The crashed reader's lease is over: by more than the error of the
     * two clients' offsets to the server's clock (each measured once,
     * at connect, to within half a round trip on loopback).
     */
    th_clock_advance(&clk, 1050);
    CU_ASSERT_EQUAL(tslock_acquire(w, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(w), TSLOCK_OK);
    tslock_lock_free(r1);
    tslock_lock_free(r2);
    tslock_lock_free(w);
    tslock_client_free(a);
    tslock_client_free(b);
    tslock_client_free(d);
}

/* -------------------------------------------------- writer preference */

struct pref {
    tslock_lock *holder, *late_reader;
    tslock_rw writer_mode;
    int calls, late_rc;
};

/* The first command of one attempt of the writer's acquire. */
static int attempt_starts(tslock_rw mode, tslock_step step)
{
    if (step == TSLOCK_STEP_EVALSHA || step == TSLOCK_STEP_WATCH)
        return 1;
    /* A plain token acquire on a modern server is one SET NX PX. */
    return mode == TSLOCK_RW_OFF && step == TSLOCK_STEP_SET;
}

/*
 * Before the writer's second attempt (its first found the reader, and
 * left its intent if it keeps one): a new reader tries, then every
 * reader leaves.
 */
static int pref_hook(tslock_client *c, tslock_step step, const char *k,
                     void *ud)
{
    struct pref *p = ud;

    (void)c;
    (void)k;
    if (attempt_starts(p->writer_mode, step) && p->calls++ == 1) {
        p->late_rc = tslock_acquire(p->late_reader, 0);
        if (p->late_rc == TSLOCK_OK)
            CU_ASSERT_EQUAL(tslock_release(p->late_reader), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(p->holder), TSLOCK_OK);
    }
    return 0;
}

static void preference(tslock_rw writer_mode, int expect_late_rc)
{
    tslock_client *a = client(), *b = client(), *d = client();
    const char *key =
        K(writer_mode == TSLOCK_RW_OFF ? "rw:pref:plain" : "rw:pref");
    tslock_lock *r1 = kind_lock(a, key, TSLOCK_RW_SHARED, 0, 5000);
    tslock_lock *r2 = kind_lock(d, key, TSLOCK_RW_SHARED, 0, 5000);
    tslock_lock *w = kind_lock(b, key, writer_mode, 0, 5000);
    struct pref p = {NULL, NULL, writer_mode, 0, 99};

    tslock_lock_set_wakeup(w, 0);
    p.holder = r1;
    p.late_reader = r2;
    CU_ASSERT_FATAL(tslock_acquire(r1, 0) == TSLOCK_OK);
    tslock_client_set_step_hook(b, pref_hook, &p);
    CU_ASSERT_EQUAL(tslock_acquire(w, 60000), TSLOCK_OK);
    tslock_client_set_step_hook(b, NULL, NULL);
    CU_ASSERT(p.calls >= 2);
    CU_ASSERT_EQUAL(p.late_rc, expect_late_rc);
    CU_ASSERT_EQUAL(tslock_release(w), TSLOCK_OK);
    tslock_lock_free(r1);
    tslock_lock_free(r2);
    tslock_lock_free(w);
    tslock_client_free(a);
    tslock_client_free(b);
    tslock_client_free(d);
}

static void test_writer_preference(void)
{
    preference(TSLOCK_RW_EXCLUSIVE, TSLOCK_EBUSY);
}

static void test_plain_writer_no_preference(void)
{
    preference(TSLOCK_RW_OFF, TSLOCK_OK);
}

/* ------------------------------------ what other kinds of client see */

static void test_others_see_held(void)
{
    tslock_client *a = client(), *b = client();
    tslock_lock *r = kind_lock(a, K("rw:seen"), TSLOCK_RW_SHARED, 0, 5000);
    tslock_lock *plain = kind_lock(b, K("rw:seen"), TSLOCK_RW_OFF, 0, 5000);
    tslock_lock *stamp = th_stamp_lock(b, K("rw:seen"), 5000);
    tslock_lock *sem = kind_lock(b, K("rw:seen"), TSLOCK_RW_OFF, 3, 5000);
    redisContext *raw = th_redis(endpoint(cur));
    redisReply *v;
    int64_t exp = 0;

    CU_ASSERT_FATAL(tslock_acquire(r, 0) == TSLOCK_OK);
    /* The key holds a legacy stamp covering the reader's lease. */
    v = redisCommand(raw, "GET %s", K("rw:seen"));
    CU_ASSERT_FATAL(v != NULL && v->type == REDIS_REPLY_STRING);
    CU_ASSERT_EQUAL(tslock_stamp_parse(v->str, v->len, TSLOCK_UNIT_MS, &exp),
                    TSLOCK_OK);
    CU_ASSERT(exp >= tslock_lock_expires_ms(r));
    freeReplyObject(v);
    CU_ASSERT_EQUAL(tslock_acquire(plain, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_acquire(stamp, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_acquire(sem, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_release(r), TSLOCK_OK);
    v = redisCommand(raw, "EXISTS %s", K("rw:seen"));
    CU_ASSERT(v != NULL && v->integer == 0);
    freeReplyObject(v);
    /* A plain holder turns readers and semaphores away. */
    CU_ASSERT_FATAL(tslock_acquire(plain, 0) == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(r, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_acquire(sem, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_release(plain), TSLOCK_OK);
    tslock_lock_free(r);
    tslock_lock_free(plain);
    tslock_lock_free(stamp);
    tslock_lock_free(sem);
    tslock_client_free(a);
    tslock_client_free(b);
    redisFree(raw);
}

static int64_t legacy_clock(void *ud)
{
    return ((th_clock *)ud)->wall_ms * 1000;
}

/*
 * Legacy timestamp clients (Java RedisLock, the Redis docs' recipe,
 * redis-py 2.x), each beside readers writing its unit: the key's stamp
 * keeps them out for the latest reader's lease; once it has run out (on
 * their clock) they take the key over as they would any expired stamp,
 * and the readers' release says the hold was lost.
 */
static void test_legacy_clients_see_held(void)
{
    static const tslock_unit units[] = {TSLOCK_UNIT_MS, TSLOCK_UNIT_S,
                                        TSLOCK_UNIT_FLOAT};
    int k;

    for (k = 0; k < 3; k++) {
        char key[64];
        tslock_client *a = client();
        redisContext *raw = th_redis(endpoint(cur));
        tslock_lock *r, *w;
        legacy_client lc;

        snprintf(key, sizeof(key), "rw:legacy:%d:%s", k, cur->name);
        r = kind_lock(a, key, TSLOCK_RW_SHARED, 0, 3000);
        w = kind_lock(a, key, TSLOCK_RW_EXCLUSIVE, 0, 3000);
        CU_ASSERT_FATAL(tslock_lock_set_unit(r, units[k]) == TSLOCK_OK);
        legacy_init(&lc, (legacy_kind)k, raw, 3000);
        lc.clock = legacy_clock;
        lc.clock_ud = &clk;
        CU_ASSERT_FATAL(tslock_acquire(r, 0) == TSLOCK_OK);
        CU_ASSERT_EQUAL(legacy_try(&lc, key), LEGACY_BUSY);
        th_clock_advance(&clk, 2000);
        CU_ASSERT_EQUAL(legacy_try(&lc, key), LEGACY_BUSY);
        /* Past the lease, the bridge stamp's bound and a unit's rounding. */
        th_clock_advance(&clk, 13000);
        CU_ASSERT_EQUAL(legacy_try(&lc, key), LEGACY_HELD);
        CU_ASSERT_EQUAL(tslock_release(r), TSLOCK_ELOST);
        CU_ASSERT_EQUAL(tslock_acquire(w, 0), TSLOCK_EBUSY);
        CU_ASSERT_EQUAL(legacy_unlock(&lc, key), 1);
        CU_ASSERT_EQUAL(tslock_acquire(w, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(w), TSLOCK_OK);
        tslock_lock_free(r);
        tslock_lock_free(w);
        tslock_client_free(a);
        redisFree(raw);
    }
}

/* Shared holds overlap; extend and time-left keep one's own lease. */
static void test_readers_share(void)
{
    tslock_client *a = client(), *b = client();
    tslock_lock *r1 = kind_lock(a, K("rw:share"), TSLOCK_RW_SHARED, 0, 5000);
    tslock_lock *r2 = kind_lock(b, K("rw:share"), TSLOCK_RW_SHARED, 0, 8000);
    int64_t n = 0, left = 0;

    CU_ASSERT_FATAL(tslock_acquire(r1, 0) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_acquire(r2, 0) == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_holders(r1, &n), TSLOCK_OK);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(tslock_extend(r1, 20000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_time_left(r1, &left), TSLOCK_OK);
    CU_ASSERT(left > 15000 && left <= 20000);
    CU_ASSERT_EQUAL(tslock_release(r2), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_holders(r1, &n), TSLOCK_OK);
    CU_ASSERT_EQUAL(n, 1);
    th_clock_advance(&clk, 20001);
    CU_ASSERT_EQUAL(tslock_extend(r1, 5000), TSLOCK_ELOST);
    CU_ASSERT_FALSE(tslock_lock_is_held(r1));
    tslock_lock_free(r1);
    tslock_lock_free(r2);
    tslock_client_free(a);
    tslock_client_free(b);
}

/*
 * An extension whose reply is lost (the proxy closes the connection
 * after the server ran it): the library reconnects and sends the same
 * new entry again, which the script or transaction takes as done; the
 * holders set keeps one entry for us, not two.  Then a release whose
 * reply is lost: on reconnecting, our entry is gone on the same server
 * within our lease, so it is reported released.
 */
static void test_extend_reply_lost(void)
{
    tslock_client *a;
    tslock_lock *r;
    redisContext *ctl;
    int64_t n = 0;
    int lua, rc;

    if (cur->emulate == NULL)
        return; /* the fault mode is the proxy's: 2.x generations only */
    a = client();
    r = kind_lock(a, K("rw:lostext"), TSLOCK_RW_SHARED, 0, 60000);
    ctl = th_redis(&cur->proxy);
    lua = (tslock_client_caps(a) & TSLOCK_CAP_LUA) != 0;
    CU_ASSERT_FATAL(tslock_acquire(r, 0) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_extend(r, 0) == TSLOCK_OK); /* scripts loaded */
    th_clock_advance(&clk, 1000);
    /* The script, or the EXEC: 5 reads, MULTI, 6 writes, EXEC. */
    CU_ASSERT_FATAL(th_fault_arm(ctl, "drop-after", lua ? 1 : 13, 0) == 0);
    rc = tslock_extend(r, 30000);
    if (rc != TSLOCK_OK)
        printf("\n    extend: %s (%s)", tslock_errname(rc),
               tslock_client_errstr(a));
    CU_ASSERT_EQUAL(rc, TSLOCK_OK);
    CU_ASSERT_EQUAL(th_fault_fired(ctl), 1);
    CU_ASSERT_EQUAL(tslock_lock_holders(r, &n), TSLOCK_OK);
    CU_ASSERT_EQUAL(n, 1);
    /* The release's reply lost too: our entry gone means released. */
    CU_ASSERT_FATAL(th_fault_arm(ctl, "drop-after", lua ? 1 : 12, 0) == 0);
    rc = tslock_release(r);
    if (rc != TSLOCK_OK)
        printf("\n    release: %s (%s)", tslock_errname(rc),
               tslock_client_errstr(a));
    CU_ASSERT_EQUAL(rc, TSLOCK_OK);
    CU_ASSERT_EQUAL(th_fault_fired(ctl), 1);
    CU_ASSERT_FALSE(tslock_lock_is_held(r));
    CU_ASSERT_EQUAL(tslock_lock_holders(r, &n), TSLOCK_OK);
    CU_ASSERT_EQUAL(n, 0);
    redisFree(ctl);
    tslock_lock_free(r);
    tslock_client_free(a);
}

/* ------------------------------------------------------- semaphores */

/*
 * Redis in Action's counting semaphore as commonly written: drop the
 * expired holders, count, and add when under the limit, as separate
 * commands.  Two clients that count before either adds are both let in.
 */
static void test_naive_semaphore_overadmits(void)
{
    redisContext *a = th_redis(endpoint(cur)), *b = th_redis(endpoint(cur));
    const char *key = K("naive:sem");
    redisReply *r;
    long long count_a, count_b;

    freeReplyObject(redisCommand(a, "DEL %s", key));
    freeReplyObject(redisCommand(a, "ZADD %s 100 expired", key));
    freeReplyObject(redisCommand(a, "ZADD %s 9000 live", key));
    /* now = 1000: one live holder of two permits, one entry expired. */
    freeReplyObject(redisCommand(a, "ZREMRANGEBYSCORE %s -inf (1000", key));
    r = redisCommand(a, "ZCARD %s", key);
    count_a = r->integer;
    freeReplyObject(r);
    freeReplyObject(redisCommand(b, "ZREMRANGEBYSCORE %s -inf (1000", key));
    r = redisCommand(b, "ZCARD %s", key);
    count_b = r->integer;
    freeReplyObject(r);
    if (count_b < 2)
        freeReplyObject(redisCommand(b, "ZADD %s 9000 b", key));
    if (count_a < 2)
        freeReplyObject(redisCommand(a, "ZADD %s 9000 a", key));
    r = redisCommand(a, "ZCARD %s", key);
    printf("\n    naive form: %lld holders of 2 permits", r->integer);
    CU_ASSERT_EQUAL(r->integer, 3); /* over-admitted: the control is broken */
    freeReplyObject(r);
    redisFree(a);
    redisFree(b);
}

/* The same race against tslock's, at every command of the acquire. */
static void test_semaphore_race(void)
{
    int k;

    for (k = 0;; k++) {
        char key[64];
        tslock_client *a = client(), *b = client(), *d = client();
        tslock_lock *la, *lb, *old, *live;
        struct replay r = {k, 0, 0, other_acquires, NULL, 0};
        int64_t n = 0;
        int rc;

        snprintf(key, sizeof(key), "sem:race:%s:%d", cur->name, k);
        old = kind_lock(d, key, TSLOCK_RW_OFF, 2, 1000);
        live = kind_lock(d, key, TSLOCK_RW_OFF, 2, 60000);
        la = kind_lock(a, key, TSLOCK_RW_OFF, 2, 60000);
        lb = kind_lock(b, key, TSLOCK_RW_OFF, 2, 60000);
        CU_ASSERT_FATAL(tslock_acquire(old, 0) == TSLOCK_OK);
        CU_ASSERT_FATAL(tslock_acquire(live, 0) == TSLOCK_OK);
        th_clock_advance(&clk, 1001); /* the first holder's lease is over */
        r.other = lb;
        tslock_client_set_step_hook(a, replay_hook, &r);
        rc = tslock_acquire(la, 0);
        tslock_client_set_step_hook(a, NULL, NULL);
        CU_ASSERT_EQUAL(tslock_lock_holders(live, &n), TSLOCK_OK);
        CU_ASSERT(n <= 2);
        if (r.fired) {
            CU_ASSERT((rc == TSLOCK_OK) != (r.other_rc == TSLOCK_OK));
            CU_ASSERT_EQUAL(n, 2);
        }
        if (tslock_lock_is_held(la))
            CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_OK);
        if (tslock_lock_is_held(lb))
            CU_ASSERT_EQUAL(tslock_release(lb), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(live), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(old), TSLOCK_ELOST);
        tslock_lock_free(la);
        tslock_lock_free(lb);
        tslock_lock_free(old);
        tslock_lock_free(live);
        tslock_client_free(a);
        tslock_client_free(b);
        tslock_client_free(d);
        if (!r.fired) {
            printf("\n    %s: semaphore acquire %d commands, raced at every "
                   "one",
                   cur->name, k);
            break;
        }
    }
}

static void test_semaphore_basics(void)
{
    tslock_client *a = client();
    tslock_lock *p[4];
    int i;
    int64_t n = 0;

    for (i = 0; i < 4; i++)
        p[i] = kind_lock(a, K("sem:basic"), TSLOCK_RW_OFF, 3, 5000);
    for (i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(tslock_acquire(p[i], 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(p[3], 0), TSLOCK_EBUSY);
    CU_ASSERT(strstr(tslock_client_errstr(a), "permit") != NULL);
    CU_ASSERT_EQUAL(tslock_lock_holders(p[0], &n), TSLOCK_OK);
    CU_ASSERT_EQUAL(n, 3);
    CU_ASSERT_EQUAL(tslock_release(p[1]), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(p[3], 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_extend(p[3], 9000), TSLOCK_OK);
    th_clock_advance(&clk, 5001); /* p[0], p[2] lapse; p[3] extended */
    CU_ASSERT_EQUAL(tslock_acquire(p[1], 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_holders(p[0], &n), TSLOCK_OK);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(tslock_release(p[0]), TSLOCK_ELOST);
    CU_ASSERT_EQUAL(tslock_release(p[1]), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(p[3]), TSLOCK_OK);
    for (i = 0; i < 4; i++)
        tslock_lock_free(p[i]);
    tslock_client_free(a);
}

/* ------------------------------------------------------ command counts */

static int commands, attempts, one_attempt;

/* With one_attempt, a waiting acquire is stopped at its second attempt. */
static int count_hook(tslock_client *c, tslock_step step, const char *k,
                      void *ud)
{
    (void)c;
    (void)k;
    (void)ud;
    if (one_attempt
        && (step == TSLOCK_STEP_EVALSHA || step == TSLOCK_STEP_WATCH)
        && attempts++ == 1)
        return 1;
    if (step != TSLOCK_STEP_EVAL) /* a NOSCRIPT fallback is no steady state */
        commands++;
    return 0;
}

#define COUNT(expr)                                                            \
    (commands = 0, tslock_client_set_step_hook(a, count_hook, NULL), (expr),   \
     tslock_client_set_step_hook(a, NULL, NULL), commands)

static void test_costs(void)
{
    tslock_client *a = client(), *b = client();
    tslock_lock *r = kind_lock(a, K("cost:rw"), TSLOCK_RW_SHARED, 0, 5000);
    tslock_lock *w = kind_lock(a, K("cost:rw"), TSLOCK_RW_EXCLUSIVE, 0, 5000);
    tslock_lock *other = kind_lock(b, K("cost:rw"), TSLOCK_RW_SHARED, 0, 5000);
    tslock_lock *s = kind_lock(a, K("cost:sem"), TSLOCK_RW_OFF, 1, 5000);
    tslock_lock *s2 = kind_lock(b, K("cost:sem"), TSLOCK_RW_OFF, 1, 5000);
    int ra, rx, rr, wa, wb, ww, wx, wr, sa, sb, sr;

    CU_ASSERT_FATAL(tslock_acquire(r, 0) == TSLOCK_OK); /* loads scripts */
    CU_ASSERT_FATAL(tslock_release(r) == TSLOCK_OK);
    ra = COUNT(tslock_acquire(r, 0));
    rx = COUNT(tslock_extend(r, 0));
    rr = COUNT(tslock_release(r));
    CU_ASSERT_FATAL(tslock_acquire(other, 0) == TSLOCK_OK);
    wb = COUNT(tslock_acquire(w, 0));
    one_attempt = 1;
    attempts = 0;
    ww = COUNT(tslock_acquire(w, 60000));
    one_attempt = 0;
    CU_ASSERT_FATAL(tslock_release(other) == TSLOCK_OK);
    wa = COUNT(tslock_acquire(w, 0));
    wx = COUNT(tslock_extend(w, 0));
    wr = COUNT(tslock_release(w));
    sa = COUNT(tslock_acquire(s, 0));
    CU_ASSERT_FATAL(tslock_release(s) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_acquire(s2, 0) == TSLOCK_OK);
    sb = COUNT(tslock_acquire(s, 0));
    CU_ASSERT_FATAL(tslock_release(s2) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_acquire(s, 0) == TSLOCK_OK);
    sr = COUNT(tslock_release(s));
    printf("\n    commands %-7s shared acquire %d extend %d release %d | "
           "exclusive acquire %d busy %d busy-waiting %d extend %d release "
           "%d | permit acquire %d busy %d release %d",
           cur->name, ra, rx, rr, wa, wb, ww, wx, wr, sa, sb, sr);
    if (cur->emulate == NULL || strncmp(cur->emulate, "2.6", 3) == 0) {
        /* One script each; the exclusive release is the token scheme's. */
        CU_ASSERT(ra == 1 && rx == 1 && rr == 1 && wa == 1 && wb == 1);
        CU_ASSERT(sa == 1 && sb == 1 && sr == 1 && wr == 1);
    } else {
        /* WATCH + 4 reads, then MULTI ... EXEC: two round trips. */
        CU_ASSERT(ra >= 8 && ra <= 12);
        CU_ASSERT(sb == 6); /* the reads and an UNWATCH */
    }
    tslock_lock_free(r);
    tslock_lock_free(w);
    tslock_lock_free(other);
    tslock_lock_free(s);
    tslock_lock_free(s2);
    tslock_client_free(a);
    tslock_client_free(b);
}

/* --------------------------------------------------------- load tests */

#define NREADERS 4
#define NWRITERS 2
#define NSEM     8
#define PERMITS  3
#define BOUND_US INT64_C(30000000) /* a rendezvous that never comes: 30 s */

struct shared {
    atomic_int readers_in, writers_in, inside, max_in;
    atomic_int violations, failures, acquisitions;
    atomic_int writer_busy[NWRITERS], writer_in[NWRITERS], counted, entered;
};
static struct shared *sh;

struct load_job {
    const char *key;
    int control; /* a broken lock: the checker must catch it */
};

static void note_max(int now_in)
{
    int m = atomic_load(&sh->max_in);

    while (now_in > m && !atomic_compare_exchange_weak(&sh->max_in, &m, now_in))
        ;
}

/* Spin until done() or the bound: 1 when done. */
static int await(int (*done)(void))
{
    int64_t end = th_wall_us() + BOUND_US;

    while (!done()) {
        if (th_wall_us() > end)
            return 0;
        th_sleep_us(200);
    }
    return 1;
}

/*
 * A latch: once every reader has been inside at once.  Polling the count
 * itself could miss the moment (a reader that sleeps while the others
 * leave would wait for a crowd that never comes back).
 */
static int all_readers_in(void)
{
    return atomic_load(&sh->max_in) == NREADERS;
}

/* Every writer has been turned away once, or got in (the control). */
static int writers_tried(void)
{
    int i;

    for (i = 0; i < NWRITERS; i++)
        if (atomic_load(&sh->writer_busy[i]) == 0
            && atomic_load(&sh->writer_in[i]) == 0)
            return 0;
    return 1;
}

static void reader_enter(void)
{
    note_max(atomic_fetch_add(&sh->readers_in, 1) + 1);
    if (atomic_load(&sh->writers_in) > 0)
        atomic_fetch_add(&sh->violations, 1);
}

static void writer_enter(void)
{
    if (atomic_fetch_add(&sh->writers_in, 1) != 0
        || atomic_load(&sh->readers_in) > 0)
        atomic_fetch_add(&sh->violations, 1);
}

static tslock_lock *worker_lock(tslock_client *c, const char *key,
                                tslock_rw mode, int64_t permits)
{
    tslock_lock *l = NULL;

    if (tslock_lock_new(&l, c, key) != TSLOCK_OK)
        _exit(3);
    tslock_lock_set_ttl(l, 10000);
    tslock_lock_set_retry(l, 1, 5);
    if (permits > 0)
        tslock_lock_set_permits(l, permits);
    else
        tslock_lock_set_rw(l, mode);
    return l;
}

static void failed(const char *what, int rc, tslock_client *c)
{
    fprintf(stderr, "worker %d: %s: %s (%s)\n", (int)getpid(), what,
            tslock_strerror(rc), tslock_client_errstr(c));
    atomic_fetch_add(&sh->failures, 1);
}

/*
 * First, all readers hold at once (a mutex could never get there) and
 * stay until every writer has been turned away once; then rounds of
 * both.  The control's writers take shared holds, so they get in beside
 * the readers of the first phase and the checker must count that.
 */
static void rw_worker(int index, void *ud)
{
    const struct load_job *job = ud;
    int writer = index >= NREADERS, i, rc;
    tslock_client *c = th_client(endpoint(cur));
    tslock_lock *l = worker_lock(
        c, job->key,
        writer && !job->control ? TSLOCK_RW_EXCLUSIVE : TSLOCK_RW_SHARED, 0);

    for (i = 0; i < rounds; i++) {
        if (writer && i == 0) {
            if (!await(all_readers_in))
                failed("readers never all held at once", 0, c);
            while ((rc = tslock_acquire(l, 0)) == TSLOCK_EBUSY) {
                atomic_fetch_add(&sh->writer_busy[index - NREADERS], 1);
                th_sleep_us(1000);
            }
        } else {
            rc = tslock_acquire(l, 60000);
        }
        if (rc != TSLOCK_OK) {
            failed("acquire", rc, c);
            continue;
        }
        atomic_fetch_add(&sh->acquisitions, 1);
        if (writer) {
            writer_enter();
            atomic_fetch_add(&sh->writer_in[index - NREADERS], 1);
            sched_yield();
            atomic_fetch_sub(&sh->writers_in, 1);
        } else {
            reader_enter();
            if (i == 0 && (!await(all_readers_in) || !await(writers_tried)))
                failed("first phase never completed", 0, c);
            sched_yield();
            atomic_fetch_sub(&sh->readers_in, 1);
        }
        if ((rc = tslock_release(l)) != TSLOCK_OK) {
            failed("release", rc, c);
        }
    }
    tslock_lock_free(l);
    tslock_client_free(c);
    _exit(0);
}

static void run_rw_load(int control)
{
    struct load_job job = {control ? K("load:rw:control") : K("load:rw"),
                           control};
    int clean;

    memset(sh, 0, sizeof(*sh));
    clean = th_workers(NREADERS + NWRITERS, rw_worker, &job);
    printf("\n    %s rw load%s: %d holds, %d readers at most at once, %d "
           "violations",
           cur->name, control ? " (control: writers take shared holds)" : "",
           atomic_load(&sh->acquisitions), atomic_load(&sh->max_in),
           atomic_load(&sh->violations));
    CU_ASSERT_TRUE(clean);
    CU_ASSERT_EQUAL(atomic_load(&sh->failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->max_in), NREADERS);
    if (control) {
        CU_ASSERT(atomic_load(&sh->violations) > 0);
    } else {
        CU_ASSERT_EQUAL(atomic_load(&sh->violations), 0);
    }
}

static void test_rw_load_control(void)
{
    run_rw_load(1);
}

static void test_rw_load(void)
{
    run_rw_load(0);
}

static int permits_all_taken(void)
{
    return atomic_load(&sh->max_in) >= PERMITS;
}

static void sem_enter(void)
{
    int now_in = atomic_fetch_add(&sh->inside, 1) + 1;

    note_max(now_in);
    if (now_in > PERMITS)
        atomic_fetch_add(&sh->violations, 1);
}

static int all_counted(void)
{
    return atomic_load(&sh->counted) >= NSEM;
}

static int all_entered(void)
{
    return atomic_load(&sh->entered) >= NSEM;
}

/*
 * The control: Redis in Action's check-then-add, every worker counting
 * before any adds (a rendezvous in shared memory orders them).
 */
static void naive_sem_worker(int index, void *ud)
{
    const struct load_job *job = ud;
    redisContext *r = th_redis(endpoint(cur));
    redisReply *rep;
    long long count;

    freeReplyObject(redisCommand(r, "ZREMRANGEBYSCORE %s -inf (%lld", job->key,
                                 (long long)(th_wall_us() / 1000)));
    rep = redisCommand(r, "ZCARD %s", job->key);
    count = rep != NULL ? rep->integer : PERMITS;
    freeReplyObject(rep);
    atomic_fetch_add(&sh->counted, 1);
    if (!await(all_counted))
        atomic_fetch_add(&sh->failures, 1);
    if (count < PERMITS) {
        freeReplyObject(redisCommand(r, "ZADD %s %lld w%d", job->key,
                                     (long long)(th_wall_us() / 1000 + 10000),
                                     index));
        sem_enter();
        atomic_fetch_add(&sh->entered, 1);
        if (!await(all_entered))
            atomic_fetch_add(&sh->failures, 1);
        atomic_fetch_sub(&sh->inside, 1);
        freeReplyObject(redisCommand(r, "ZREM %s w%d", job->key, index));
    }
    redisFree(r);
    _exit(0);
}

static void sem_worker(int index, void *ud)
{
    const struct load_job *job = ud;
    tslock_client *c = th_client(endpoint(cur));
    tslock_lock *l = worker_lock(c, job->key, TSLOCK_RW_OFF, PERMITS);
    int i, rc;

    (void)index;
    for (i = 0; i < rounds; i++) {
        if ((rc = tslock_acquire(l, 60000)) != TSLOCK_OK) {
            failed("acquire", rc, c);
            continue;
        }
        atomic_fetch_add(&sh->acquisitions, 1);
        sem_enter();
        if (i == 0 && !await(permits_all_taken))
            failed("permits never all held at once", 0, c);
        sched_yield();
        atomic_fetch_sub(&sh->inside, 1);
        if ((rc = tslock_release(l)) != TSLOCK_OK)
            failed("release", rc, c);
    }
    tslock_lock_free(l);
    tslock_client_free(c);
    _exit(0);
}

static void test_sem_load_control(void)
{
    struct load_job job = {K("load:sem:naive"), 1};
    int clean;

    memset(sh, 0, sizeof(*sh));
    clean = th_workers(NSEM, naive_sem_worker, &job);
    printf("\n    %s naive semaphore (control): %d holders at most of %d "
           "permits, %d violations",
           cur->name, atomic_load(&sh->max_in), PERMITS,
           atomic_load(&sh->violations));
    CU_ASSERT_TRUE(clean);
    CU_ASSERT_EQUAL(atomic_load(&sh->failures), 0);
    CU_ASSERT(atomic_load(&sh->violations) > 0);
}

static void test_sem_load(void)
{
    struct load_job job = {K("load:sem"), 0};
    int clean;

    memset(sh, 0, sizeof(*sh));
    clean = th_workers(NSEM, sem_worker, &job);
    printf("\n    %s semaphore load: %d holds, %d holders at most of %d "
           "permits, %d violations",
           cur->name, atomic_load(&sh->acquisitions), atomic_load(&sh->max_in),
           PERMITS, atomic_load(&sh->violations));
    CU_ASSERT_TRUE(clean);
    CU_ASSERT_EQUAL(atomic_load(&sh->failures), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->acquisitions), NSEM * rounds);
    CU_ASSERT_EQUAL(atomic_load(&sh->max_in), PERMITS);
    CU_ASSERT_EQUAL(atomic_load(&sh->violations), 0);
}

/* ------------------------------------------------------------ Redis 2.0 */

static void test_redis20_refuses(void)
{
    tslock_client *a;
    tslock_lock *r, *w, *s;
    redisContext *raw;
    redisReply *v;

    cur = &gens[GEN_20];
    a = client();
    r = kind_lock(a, K("rw:20"), TSLOCK_RW_SHARED, 0, 5000);
    w = kind_lock(a, K("rw:20"), TSLOCK_RW_EXCLUSIVE, 0, 5000);
    s = kind_lock(a, K("rw:20"), TSLOCK_RW_OFF, 2, 5000);
    CU_ASSERT_EQUAL(tslock_acquire(r, 0), TSLOCK_EUNSUPPORTED);
    CU_ASSERT(strstr(tslock_client_errstr(a), "Redis 2.2") != NULL);
    CU_ASSERT_EQUAL(tslock_acquire(w, 1000), TSLOCK_EUNSUPPORTED);
    CU_ASSERT_EQUAL(tslock_acquire(s, 0), TSLOCK_EUNSUPPORTED);
    CU_ASSERT(strstr(tslock_client_errstr(a), "semaphore") != NULL);
    raw = th_redis(endpoint(cur));
    v = redisCommand(raw, "EXISTS %s", K("rw:20"));
    CU_ASSERT(v != NULL && v->integer == 0); /* nothing was written */
    freeReplyObject(v);
    redisFree(raw);
    tslock_lock_free(r);
    tslock_lock_free(w);
    tslock_lock_free(s);
    tslock_client_free(a);
}

static void test_settings(void)
{
    tslock_client *a;
    tslock_lock *l = NULL;

    cur = &gens[0];
    a = client();
    CU_ASSERT_FATAL(tslock_lock_new(&l, a, "rw:settings") == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_rw(NULL, TSLOCK_RW_SHARED), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_rw(l, (tslock_rw)3), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_permits(NULL, 2), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_permits(l, -1), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_holders(l, NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_permits(l, 2), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_rw(l, TSLOCK_RW_SHARED), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_permits(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_rw(l, TSLOCK_RW_SHARED), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_permits(l, 2), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_scheme(l, TSLOCK_SCHEME_TIMESTAMP),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EUNSUPPORTED);
    CU_ASSERT_EQUAL(tslock_lock_set_scheme(l, TSLOCK_SCHEME_AUTO), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_scheme_used(l), TSLOCK_SCHEME_TOKEN);
    CU_ASSERT_EQUAL(tslock_lock_set_rw(l, TSLOCK_RW_OFF), TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_lock_set_permits(l, 2), TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(a);
}

int main(void)
{
    char names[N_WORKING][48];
    size_t g;
    int rc = 1;

    rounds = th_rounds(40);
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || th_server_start(&srv, NULL) != 0)
        return 1;
    for (g = 0; g < N_GENS; g++)
        if (gens[g].emulate != NULL
            && th_proxy_start(&gens[g].proxy, &srv, gens[g].emulate) != 0)
            goto out;
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    for (g = 0; g < N_WORKING; g++) {
        CU_pSuite s;
        snprintf(names[g], sizeof(names[g]), "read-write and semaphore, %s",
                 gens[g].name);
        s = CU_add_suite(names[g], gen_init, NULL);
        CU_add_test(s, "readers share; extend and time-left their own lease",
                    test_readers_share);
        CU_add_test(s, "reader and writer acquires raced at every command",
                    test_race_acquire);
        CU_add_test(s, "the other side tries at every command of a release",
                    test_race_release);
        CU_add_test(s, "the holder releases at every command of an acquire",
                    test_race_acquire_release);
        CU_add_test(s, "a crashed reader holds writers off for its lease",
                    test_crashed_reader);
        CU_add_test(s, "a waiting writer turns new readers away",
                    test_writer_preference);
        CU_add_test(s, "control: a plain lock waiting lets readers in",
                    test_plain_writer_no_preference);
        CU_add_test(s, "plain, stamp and semaphore clients see it held",
                    test_others_see_held);
        CU_add_test(s, "legacy clients: held, then taken over after the lease",
                    test_legacy_clients_see_held);
        CU_add_test(s, "lost replies of a shared extend and release: settled",
                    test_extend_reply_lost);
        CU_add_test(s, "semaphore: N permits, leases, extend",
                    test_semaphore_basics);
        CU_add_test(s, "control: naive Redis in Action semaphore over-admits",
                    test_naive_semaphore_overadmits);
        CU_add_test(s, "semaphore acquires raced at every command",
                    test_semaphore_race);
        CU_add_test(s, "commands per operation", test_costs);
        CU_add_test(s, "control: rw checker catches writers beside readers",
                    test_rw_load_control);
        CU_add_test(s, "load: readers overlap, never a writer with anyone",
                    test_rw_load);
        CU_add_test(s, "control: sem checker catches the naive form",
                    test_sem_load_control);
        CU_add_test(s, "load: never more than N permit holders", test_sem_load);
    }
    {
        CU_pSuite s = CU_add_suite("settings and Redis 2.0", NULL, NULL);
        CU_add_test(s, "settings: bad values, mixed kinds, held",
                    test_settings);
        CU_add_test(s, "Redis 2.0 refuses with a clear message",
                    test_redis20_refuses);
    }
    rc = th_run_all();
out:
    for (g = 0; g < N_GENS; g++)
        th_proxy_stop(&gens[g].proxy);
    th_server_stop(&srv);
    munmap(sh, sizeof(*sh));
    return rc;
}
