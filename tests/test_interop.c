/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_interop.c - tslock on the same key as the legacy clients fleets
 * already run (tests/legacy.c): the Java RedisLock of the articles, the
 * Redis documentation's SETNX pattern and the redis-py 2.x Lock, in the
 * timestamp and bridge schemes with the peer's unit; and the token scheme
 * beside Debian's redis-py Lock.
 *
 * Load runs put 4 tslock and 4 legacy processes on one key.  A check in
 * the critical section, in shared memory, records every pair of holders
 * inside at once; each hold records its value, lease and release, and the
 * legacy releases record what each DEL removed, so after the run every
 * overlap can be put down to a cause.  With leases long against the hold
 * there must be no overlap at all.  With short leases and holds that
 * pause past their lease, an overlap inside both leases must trace back
 * to a legacy client's own flaw, never to tslock; a bridge release must
 * never delete another holder's lock.  The report at the end is the table
 * doc/migration.md quotes.
 *
 * $TSLOCK_INTEROP_ONLY runs only the tests whose name contains it;
 * $INTEROP_DEBUG prints the holds and events around every overlap that
 * counts against tslock; $PYTHON names the Python with redis-py.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "legacy.h"

extern char **environ;

static th_server srv;

/* ------------------------------------------------------------- clocks */

/* A legacy_clock_fn reading a harness test clock. */
static int64_t legacy_th_clock(void *userdata)
{
    return ((th_clock *)userdata)->wall_ms * 1000;
}

/* ------------------------------------------------------- small helpers */

static redisContext *raw;

static void raw_del(const char *key)
{
    freeReplyObject(redisCommand(raw, "DEL %s", key));
}

/* The stored value into buf ("" when absent). */
static const char *raw_get(const char *key, char *buf, size_t size)
{
    redisReply *r = redisCommand(raw, "GET %s", key);

    snprintf(buf, size, "%s",
             r != NULL && r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return buf;
}

static long long raw_pttl(const char *key)
{
    redisReply *r = redisCommand(raw, "PTTL %s", key);
    long long v =
        r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -99;

    freeReplyObject(r);
    return v;
}

static tslock_lock *new_lock(tslock_client *c, const char *key,
                             tslock_scheme scheme, tslock_unit unit,
                             int64_t ttl_ms)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    tslock_lock_set_scheme(l, scheme);
    tslock_lock_set_unit(l, unit);
    tslock_lock_set_ttl(l, ttl_ms);
    return l;
}

static const char *unit_name(tslock_unit u)
{
    return u == TSLOCK_UNIT_MS ? "ms" : u == TSLOCK_UNIT_S ? "s" : "float";
}

static const char *scheme_name(tslock_scheme s)
{
    return s == TSLOCK_SCHEME_BRIDGE      ? "bridge"
           : s == TSLOCK_SCHEME_TIMESTAMP ? "timestamp"
                                          : "token";
}

/* =================================================== the unit guard ==== */

/*
 * A client set up for one unit meets a live legacy stamp in another: read
 * in the wrong unit it lies in 1970 (or after 2100), so it must be left
 * alone, not taken over as long expired, however long the client waits.
 * The legacy holder keeps its lock, and its own release deletes it.
 */
static void refuses_live_stamp(const char *key, legacy_kind kind,
                               tslock_unit unit, const char *why)
{
    static const tslock_scheme schemes[] = {TSLOCK_SCHEME_TIMESTAMP,
                                            TSLOCK_SCHEME_BRIDGE};
    tslock_client *c = th_client(&srv);
    redisContext *rc = th_redis(&srv);
    char before[64], after[64];
    size_t i;

    for (i = 0; i < 2; i++) {
        legacy_client peer;
        tslock_lock *l = new_lock(c, key, schemes[i], unit, 5000);
        int64_t t0;

        raw_del(key);
        legacy_init(&peer, kind, rc, 10000);
        CU_ASSERT_EQUAL_FATAL(legacy_try(&peer, key), LEGACY_HELD);
        raw_get(key, before, sizeof(before));

        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EUNREADABLE);
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), before));
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), why));
        printf("\n    %s %s meets \"%s\": %s", scheme_name(schemes[i]),
               unit_name(unit), before, tslock_client_errstr(c));
        t0 = th_mono_ms();
        CU_ASSERT_EQUAL(tslock_acquire(l, 300), TSLOCK_EUNREADABLE);
        CU_ASSERT_TRUE(th_mono_ms() - t0 >= 300);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_STRING_EQUAL(raw_get(key, after, sizeof(after)), before);

        CU_ASSERT_EQUAL(legacy_unlock(&peer, key), 1);
        CU_ASSERT_STRING_EQUAL(raw_get(key, after, sizeof(after)), "");
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        tslock_lock_free(l);
    }
    redisFree(rc);
    tslock_client_free(c);
}

/* Set up for milliseconds, it meets the Redis docs' whole seconds. */
static void test_ms_client_refuses_seconds_stamp(void)
{
    refuses_live_stamp("interop:guard:s", LEGACY_REDISDOC, TSLOCK_UNIT_MS,
                       "before the year 2000");
}

/* Set up for seconds, it meets the Java client's milliseconds. */
static void test_seconds_client_refuses_ms_stamp(void)
{
    refuses_live_stamp("interop:guard:ms", LEGACY_JAVA, TSLOCK_UNIT_S,
                       "after the year 2100");
}

/*
 * Who reads whom, live and long expired, on test clocks.  A stamp read in
 * the wrong unit is never taken over, however old it looks; whole seconds
 * are also float seconds, so a float client reads the docs' stamps.
 */
static void test_unit_matrix(void)
{
    static const struct {
        legacy_kind kind;
        int readable[3]; /* as TSLOCK_UNIT_MS, _S, _FLOAT */
    } rows[] = {
        {LEGACY_JAVA, {1, 0, 0}},
        {LEGACY_REDISDOC, {0, 1, 1}},
        {LEGACY_REDISPY2, {0, 0, 1}},
    };
    const char *key = "interop:matrix";
    tslock_client *c = th_client(&srv);
    redisContext *rc = th_redis(&srv);
    th_clock legacy_clk, tslock_clk;
    size_t i;
    int u, s;

    th_clock_init(&legacy_clk);
    tslock_client_set_clock(c, th_clock_fn, &tslock_clk);
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        for (u = 0; u < 3; u++)
            for (s = 0; s < 2; s++) {
                tslock_scheme scheme =
                    s ? TSLOCK_SCHEME_BRIDGE : TSLOCK_SCHEME_TIMESTAMP;
                tslock_lock *l = new_lock(c, key, scheme, (tslock_unit)u, 5000);
                legacy_client lc;
                char stored[64], now[64];
                int readable = rows[i].readable[u];

                raw_del(key);
                legacy_init(&lc, rows[i].kind, rc, 10000);
                lc.clock = legacy_th_clock;
                lc.clock_ud = &legacy_clk;
                CU_ASSERT_EQUAL_FATAL(legacy_try(&lc, key), LEGACY_HELD);
                raw_get(key, stored, sizeof(stored));

                tslock_clk = legacy_clk;
                CU_ASSERT_EQUAL(tslock_acquire(l, 0),
                                readable ? TSLOCK_EBUSY : TSLOCK_EUNREADABLE);
                th_clock_advance(&tslock_clk, 3600 * 1000);
                CU_ASSERT_EQUAL(tslock_acquire(l, 0),
                                readable ? TSLOCK_OK : TSLOCK_EUNREADABLE);
                if (readable) {
                    CU_ASSERT_STRING_NOT_EQUAL(raw_get(key, now, sizeof(now)),
                                               stored);
                    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
                } else {
                    CU_ASSERT_STRING_EQUAL(raw_get(key, now, sizeof(now)),
                                           stored);
                }
                tslock_lock_free(l);
            }
    redisFree(rc);
    tslock_client_free(c);
}

/* ================================================ tokens and stamps ==== */

/* How many decimal digits a value starts with. */
static size_t leading_digits(const char *s)
{
    return strspn(s, "0123456789");
}

/*
 * Why token and timestamp clients must not share a key: each legacy
 * client meets a token the way its language parses numbers.  Java's
 * Long.parseLong throws, redis-py's float() raises, a careful reading of
 * the docs' pattern rejects it -- and one that parses like atol() or
 * PHP's (int) reads the leading digits as a time long past and takes the
 * lock over while its holder still holds it.
 */
static void test_legacy_meets_token(void)
{
    const char *key = "interop:token";
    tslock_client *c = th_client(&srv);
    redisContext *rc = th_redis(&srv);
    tslock_lock *l =
        new_lock(c, key, TSLOCK_SCHEME_TOKEN, TSLOCK_UNIT_MS, 10000);
    legacy_client lc;
    char token[64], now[64];
    int k;

    raw_del(key);
    /*
     * About one token in a hundred starts with ten or more digits, which a
     * lenient reader takes for a time that may lie ahead; take another.
     */
    do {
        if (tslock_lock_is_held(l))
            CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    } while (leading_digits(tslock_lock_value(l)) >= 10);
    snprintf(token, sizeof(token), "%s", tslock_lock_value(l));

    for (k = LEGACY_JAVA; k <= LEGACY_REDISPY2; k++) {
        legacy_init(&lc, (legacy_kind)k, rc, 10000);
        CU_ASSERT_EQUAL(legacy_try(&lc, key), LEGACY_EPARSE);
        printf("\n    %-8s meets token %s: %s", legacy_kind_name(k), token,
               lc.errstr);
    }
    CU_ASSERT_STRING_EQUAL(raw_get(key, now, sizeof(now)), token);

    legacy_init(&lc, LEGACY_REDISDOC, rc, 10000);
    lc.lenient_parse = 1;
    CU_ASSERT_EQUAL(legacy_try(&lc, key), LEGACY_HELD);
    printf("\n    redisdoc reading like atol() took the token lock over: "
           "key now \"%s\"",
           raw_get(key, now, sizeof(now)));
    CU_ASSERT_STRING_EQUAL(now, lc.value);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ELOST);
    CU_ASSERT_EQUAL(legacy_unlock(&lc, key), 1);
    tslock_lock_free(l);
    redisFree(rc);
    tslock_client_free(c);
}

/*
 * The other way round: a legacy stamp carries no TTL, so a token client
 * waits on a crashed legacy holder's key for ever, while the stamp
 * schemes take it over once it has expired.
 */
static void test_token_meets_dead_legacy_stamp(void)
{
    const char *key = "interop:dead";
    tslock_client *c = th_client(&srv), *late = th_client(&srv);
    redisContext *rc = th_redis(&srv);
    tslock_lock *token =
        new_lock(c, key, TSLOCK_SCHEME_TOKEN, TSLOCK_UNIT_MS, 5000);
    tslock_lock *bridge =
        new_lock(late, key, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_MS, 5000);
    th_clock clk;
    legacy_client java;

    raw_del(key);
    legacy_init(&java, LEGACY_JAVA, rc, 1000);
    CU_ASSERT_EQUAL_FATAL(legacy_try(&java, key), LEGACY_HELD);
    /* ...and the Java process dies holding it. */
    CU_ASSERT_EQUAL(tslock_acquire(token, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(raw_pttl(key), -1);
    th_clock_init(&clk);
    clk.wall_ms = th_wall_us() / 1000 + 3600 * 1000;
    tslock_client_set_clock(late, th_clock_fn, &clk);
    CU_ASSERT_EQUAL(tslock_acquire(bridge, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(bridge), TSLOCK_OK);
    tslock_lock_free(token);
    tslock_lock_free(bridge);
    redisFree(rc);
    tslock_client_free(c);
    tslock_client_free(late);
}

/* =================================== behaviour the interop tests found ==== */

/*
 * The docs' pattern compares whole seconds: a stamp S is "older than the
 * current Unix time" only from second S + 1, and until then its holder's
 * release (own timeout not expired) still deletes the key.  A tslock
 * client reading seconds must therefore leave S alone for all of second
 * S; taking it over at S.500 makes two holders inside both their leases,
 * and the legacy release then deletes tslock's lock.
 */
static void test_seconds_stamp_held_to_end_of_its_second(void)
{
    static const tslock_scheme schemes[] = {TSLOCK_SCHEME_TIMESTAMP,
                                            TSLOCK_SCHEME_BRIDGE};
    const char *key = "interop:second";
    tslock_client *c = th_client(&srv);
    redisContext *rc = th_redis(&srv);
    th_clock doc_clk, ts_clk;
    size_t i;

    th_clock_init(&doc_clk);
    tslock_client_set_clock(c, th_clock_fn, &ts_clk);
    for (i = 0; i < 2; i++) {
        tslock_lock *l = new_lock(c, key, schemes[i], TSLOCK_UNIT_S, 1000);
        legacy_client doc;
        int64_t stamp;
        char now[64];
        int rc_acq;

        raw_del(key);
        legacy_init(&doc, LEGACY_REDISDOC, rc, 1000);
        doc.clock = legacy_th_clock;
        doc.clock_ud = &doc_clk;
        doc_clk.wall_ms = 1700000000200; /* S = 1700000000 + 1 + 1 */
        CU_ASSERT_EQUAL_FATAL(legacy_try(&doc, key), LEGACY_HELD);
        stamp = strtoll(doc.value, NULL, 10);
        CU_ASSERT_EQUAL(stamp, 1700000002);

        /* Half-way through second S, on both clocks. */
        doc_clk.wall_ms = stamp * 1000 + 500;
        ts_clk = doc_clk;
        rc_acq = tslock_acquire(l, 0);
        printf("\n    %s s at %" PRId64 ".5 on stamp \"%s\": %s",
               scheme_name(schemes[i]), stamp, doc.value,
               tslock_errname(rc_acq));
        CU_ASSERT_EQUAL(rc_acq, TSLOCK_EBUSY);
        if (rc_acq == TSLOCK_OK) {
            /* The legacy holder, still in its lease, releases. */
            int del = legacy_unlock(&doc, key);
            printf(" -- then the docs client's release %s (key \"%s\"), "
                   "and tslock's release says %s",
                   del == 1 ? "sent DEL" : "kept the key",
                   raw_get(key, now, sizeof(now)),
                   tslock_errname(tslock_release(l)));
        } else {
            CU_ASSERT_EQUAL(legacy_unlock(&doc, key), 1);
        }
        tslock_lock_free(l);
    }
    redisFree(rc);
    tslock_client_free(c);
}

/*
 * Stamps are not unique: a bridge stamp in whole seconds for a 5 s lease
 * carries no randomness, and the docs pattern writes now + 5 + 1 too, so
 * on one (test) clock all three holders below write the same number.
 * Bridge holder A's key is deleted behind its back (what the Java
 * client's release does to a live lock); then another bridge holder B,
 * and later a docs-pattern client, take the key with A's very stamp.
 * A's release must tell that the key is no longer its own: B's lock has
 * another owner token, the docs client's key has no TTL.
 */
static void test_bridge_identical_stamps(void)
{
    const char *key = "interop:unique";
    tslock_client *ca = th_client(&srv), *cb = th_client(&srv);
    tslock_lock *a =
        new_lock(ca, key, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_S, 5000);
    tslock_lock *b =
        new_lock(cb, key, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_S, 5000);
    redisContext *rc = th_redis(&srv);
    legacy_client doc;
    th_clock clk;
    char va[64], now[64];
    int rc1, rc2;

    th_clock_init(&clk);
    tslock_client_set_clock(ca, th_clock_fn, &clk);
    tslock_client_set_clock(cb, th_clock_fn, &clk);
    legacy_init(&doc, LEGACY_REDISDOC, rc, 5000);
    doc.clock = legacy_th_clock;
    doc.clock_ud = &clk;
    raw_del(key);

    CU_ASSERT_EQUAL_FATAL(tslock_acquire(a, 0), TSLOCK_OK);
    snprintf(va, sizeof(va), "%s", tslock_lock_value(a));
    raw_del(key);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(b, 0), TSLOCK_OK);
    CU_ASSERT_STRING_EQUAL(tslock_lock_value(b), va);
    rc1 = tslock_release(a);
    printf("\n    A and B both wrote \"%s\"; A's release: %s, key now \"%s\"",
           va, tslock_errname(rc1), raw_get(key, now, sizeof(now)));
    CU_ASSERT_EQUAL(rc1, TSLOCK_ELOST);
    CU_ASSERT_STRING_EQUAL(now, va);
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);

    CU_ASSERT_EQUAL_FATAL(tslock_acquire(a, 0), TSLOCK_OK);
    raw_del(key);
    CU_ASSERT_EQUAL_FATAL(legacy_try(&doc, key), LEGACY_HELD);
    CU_ASSERT_STRING_EQUAL(doc.value, tslock_lock_value(a));
    rc2 = tslock_release(a);
    printf("\n    A and the docs client both wrote \"%s\"; A's release: "
           "%s, key now \"%s\"",
           doc.value, tslock_errname(rc2), raw_get(key, now, sizeof(now)));
    CU_ASSERT_EQUAL(rc2, TSLOCK_ELOST);
    CU_ASSERT_STRING_EQUAL(now, doc.value);
    CU_ASSERT_EQUAL(legacy_unlock(&doc, key), 1);
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(ca);
    tslock_client_free(cb);
    redisFree(rc);
}

/*
 * The bridge claim writes the stamp, its safety TTL and the owner key in
 * one script (one MULTI/EXEC on 2.2 - 2.4), so the TTL cannot land on
 * another client's key.  Here a Java client with a 60 s lease takes the
 * free key just before the claim goes out: the claim finds the Java
 * stamp unexpired and leaves it alone, TTL-less as the Java client wrote
 * it.  A TTL on it would make the key vanish while Java still holds it.
 */
struct ttl_race {
    redisContext *rc;
    legacy_client java;
    int fired;
};

static int java_before_claim(tslock_client *client, tslock_step step,
                             const char *key, void *userdata)
{
    struct ttl_race *race = userdata;

    (void)client;
    if (!race->fired
        && (step == TSLOCK_STEP_EVALSHA || step == TSLOCK_STEP_EVAL)) {
        race->fired = 1;
        CU_ASSERT_EQUAL(legacy_try(&race->java, key), LEGACY_HELD);
    }
    return 0;
}

static void test_bridge_safety_ttl_only_on_own_key(void)
{
    const char *key = "interop:safety-ttl";
    tslock_client *c = th_client(&srv);
    tslock_lock *l =
        new_lock(c, key, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_MS, 1000);
    struct ttl_race race;
    char now[64];
    long long pttl;
    int rc;

    memset(&race, 0, sizeof(race));
    race.rc = th_redis(&srv);
    legacy_init(&race.java, LEGACY_JAVA, race.rc, 60000);
    raw_del(key);
    raw_del("{interop:safety-ttl}:owner");
    tslock_client_set_step_hook(c, java_before_claim, &race);
    rc = tslock_acquire(l, 0);
    tslock_client_set_step_hook(c, NULL, NULL);
    CU_ASSERT_TRUE(race.fired);
    pttl = raw_pttl(key);
    printf("\n    acquire %s; the Java holder's key (\"%s\", a 60 s lease) "
           "has PTTL %lld",
           tslock_errname(rc), raw_get(key, now, sizeof(now)), pttl);
    CU_ASSERT_EQUAL(rc, TSLOCK_EBUSY);
    CU_ASSERT_STRING_EQUAL(now, race.java.value);
    CU_ASSERT_EQUAL(pttl, -1);
    CU_ASSERT_EQUAL(raw_pttl("{interop:safety-ttl}:owner"), -2);
    CU_ASSERT_EQUAL(legacy_unlock(&race.java, key), 1);

    /* Unhindered, the stamp and the owner key come with their TTLs. */
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    pttl = raw_pttl(key);
    CU_ASSERT_TRUE(pttl > 1000 && pttl <= 2200);
    pttl = raw_pttl("{interop:safety-ttl}:owner");
    CU_ASSERT_TRUE(pttl > 1000 && pttl <= 2200);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_EQUAL(raw_pttl(key), -2);
    CU_ASSERT_EQUAL(raw_pttl("{interop:safety-ttl}:owner"), -2);
    tslock_lock_free(l);
    redisFree(race.rc);
    tslock_client_free(c);
}

/* ============================================ the 2.0 release gap ==== */

/*
 * A redis-py 2.x client that read an expired stamp before tslock's claim
 * sends its GETSET only once tslock's release is under way: the loser's
 * overwrite of tslock's stamp.  With `at` the step before which it lands.
 */
struct gap_race {
    redisContext *rc;
    tslock_step at;
    int fired;
    char replaced[64];
};

static int loser_getset(tslock_client *client, tslock_step step,
                        const char *key, void *userdata)
{
    struct gap_race *g = userdata;
    char stamp[64];
    redisReply *r;

    (void)client;
    if (g->fired || step != g->at)
        return 0;
    g->fired = 1;
    legacy_python_repr(stamp, sizeof(stamp), (double)th_wall_us() / 1e6 + 2);
    r = redisCommand(g->rc, "GETSET %s %s", key, stamp);
    snprintf(g->replaced, sizeof(g->replaced), "%s",
             r != NULL && r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return 0;
}

/* One bridge hold on `version`, the loser's GETSET landing before `at`. */
static int release_beside_loser(const char *version, tslock_step at, char *left,
                                size_t size)
{
    const char *key = "interop:gap";
    th_server proxy;
    tslock_client *c;
    tslock_lock *l;
    struct gap_race g;
    char value[64];
    int rc;

    CU_ASSERT_FATAL(th_proxy_start(&proxy, &srv, version) == 0);
    raw_del(key);
    raw_del("{interop:gap}:owner");
    c = th_client(&proxy);
    l = new_lock(c, key, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_FLOAT, 2000);
    memset(&g, 0, sizeof(g));
    g.rc = th_redis(&proxy);
    g.at = at;
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    snprintf(value, sizeof(value), "%s", tslock_lock_value(l));
    tslock_client_set_step_hook(c, loser_getset, &g);
    rc = tslock_release(l);
    tslock_client_set_step_hook(c, NULL, NULL);
    CU_ASSERT_TRUE(g.fired);
    /* The GETSET did replace tslock's own stamp. */
    CU_ASSERT_STRING_EQUAL(g.replaced, value);
    raw_get(key, left, size);
    printf("\n    %s: the loser's GETSET replaced tslock's stamp after the "
           "release's GET; the release says %s, key now \"%s\"",
           version, tslock_errname(rc), left);
    tslock_lock_free(l);
    tslock_client_free(c);
    redisFree(g.rc);
    th_proxy_stop(&proxy);
    raw_del(key);
    raw_del("{interop:gap}:owner");
    return rc;
}

/*
 * Why the Python bridge test cannot claim on 2.0 that every overwrite is
 * reported: there the release is GET, compare, DEL, and a GETSET landing
 * between them is deleted unseen, the release saying TSLOCK_OK.  On 2.2
 * the same GETSET after the WATCHed GET makes EXEC fail: TSLOCK_ELOST,
 * and the loser's stamp stays.
 */
static void test_release_gap_on_2_0(void)
{
    char left[64];

    CU_ASSERT_EQUAL(
        release_beside_loser("2.0.5", TSLOCK_STEP_DEL, left, sizeof(left)),
        TSLOCK_OK);
    CU_ASSERT_STRING_EQUAL(left, "");
    CU_ASSERT_EQUAL(
        release_beside_loser("2.2.15", TSLOCK_STEP_MULTI, left, sizeof(left)),
        TSLOCK_ELOST);
    CU_ASSERT_STRING_NOT_EQUAL(left, "");
}

/* ======================================================= load runs ==== */

#define PER_SIDE   4
#define NPROC      (2 * PER_SIDE)
#define MAX_HOLDS  30000
#define MAX_PAIRS  30000
#define MAX_EVENTS 8192
#define VALUE_SIZE 64

enum side { SIDE_TSLOCK = 0, SIDE_LEGACY = 1 };

/* One acquisition, written by its holder, read by the parent afterwards. */
struct hold {
    int side;
    int tslock; /* taken by tslock (either side) */
    int proc;
    int paused;
    int release_rc;
    int64_t attempt_us;   /* before the acquire call that won */
    int64_t won_us;       /* the SETNX or GETSET that won was sent */
    int64_t acquired_us;  /* the acquire call returned */
    int64_t lease_end_us; /* first instant the holder's rule calls it over */
    int64_t own_end_us;   /* tslock: the end its own lease check sees */
    int64_t rel_start_us;
    int64_t rel_end_us;
    /*
     * The same on the server's clock, which orders the commands of all
     * processes as the server ran them: the winning write ran inside
     * [srv_won_lo, srv_won_hi] (a legacy write carries its own TIME, so
     * both are that; tslock's is bracketed by TIME on a second connection
     * before the write went out and after the acquire returned), and the
     * release inside [srv_rel_lo, srv_rel_hi].
     */
    int64_t srv_won_lo, srv_won_hi;
    int64_t srv_rel_lo, srv_rel_hi;
    char value[VALUE_SIZE];
};

/* Two holders seen inside the critical section at once. */
struct pair {
    int a, b;
    int64_t at_us;
};

enum event_kind { EV_LEGACY_DELETE, EV_LEGACY_GETSET };

/* A legacy release deleted a value, or a lost GETSET overwrote one. */
struct event {
    int kind;
    int proc;
    int own; /* a delete of the value the deleter wrote (as far as it knows) */
    int64_t sent_us; /* the DEL went out */
    int64_t at_us;   /* its reply came */
    int64_t srv_us;  /* it ran, on the server's clock (TIME beside it) */
    char value[VALUE_SIZE];
};

struct shared {
    atomic_int active[NPROC]; /* hold index + 1 inside, or 0 */
    atomic_int nholds;
    atomic_int npairs;
    atomic_int nevents;
    atomic_int errors;
    atomic_int stop;           /* token run: the Python side is done */
    atomic_int token_holds;    /* token run: tslock's holds */
    atomic_int token_overlaps; /* token run: markers tslock found there */
    int counter; /* read and written without atomics: lost updates */
    struct hold holds[MAX_HOLDS];
    struct pair pairs[MAX_PAIRS];
    struct event events[MAX_EVENTS];
};

static struct shared *sh;
static int my_proc; /* in a worker: its index */

struct run {
    legacy_kind kind;
    tslock_scheme scheme;
    tslock_unit unit;
    int64_t ttl_ms;
    int pause_permille; /* holds that sleep 1.5 leases; 0: none */
    int64_t duration_ms;
    int peer_token; /* the other side is tslock's token scheme, not kind */
};

struct result {
    int acquisitions[2];
    int paused[2];
    int in_lease;
    int by_legacy_delete;
    int by_legacy_getset;
    int by_tslock_delete;
    int unexplained;
    int past_lease;
    int own_check_late;      /* ...of which tslock's own check said inside */
    int legacy_deletes;      /* legacy DELs of a value they did not write */
    int legacy_deletes_live; /* ...of a lock someone held at the time */
    int legacy_getsets;      /* lost GETSETs that replaced another value */
    int tslock_deletes;      /* tslock releases that deleted another's */
    int tslock_deletes_late; /* ...after a legacy release deleted theirs */
    int by_tslock_plain;     /* overlaps after a tslock delete that no
                                legacy delete came before */
    int collisions;          /* two live holds with the same value */
    int client_misordered;   /* explained overlaps whose first writer the
                                holders' own clocks put the other way */
    int elost_expired;       /* ELOST after the lease ran out */
    int elost_in_lease;      /* ELOST inside the lease... */
    int elost_unexplained;   /* ...with no legacy event on its value */
    int lost_updates;
    int dropped;
    int errors;
    double seconds;
};

static void record_event(int kind, const char *value, int own, int64_t sent_us,
                         int64_t srv_us)
{
    int i = atomic_fetch_add(&sh->nevents, 1);

    if (i >= MAX_EVENTS)
        return;
    sh->events[i].kind = kind;
    sh->events[i].proc = my_proc;
    sh->events[i].own = own;
    sh->events[i].sent_us = sent_us;
    sh->events[i].at_us = th_wall_us();
    sh->events[i].srv_us = srv_us;
    snprintf(sh->events[i].value, VALUE_SIZE, "%s", value);
}

static void on_delete(const char *value, int own, int64_t sent_us,
                      int64_t srv_us, void *userdata)
{
    (void)userdata;
    record_event(EV_LEGACY_DELETE, value, own, sent_us, srv_us);
}

static void on_lost_getset(const char *value, int64_t sent_us, int64_t srv_us,
                           void *userdata)
{
    (void)userdata;
    record_event(EV_LEGACY_GETSET, value, 0, sent_us, srv_us);
}

static const legacy_observer observer = {on_delete, on_lost_getset, NULL};

/* Count a failure; print the first few. */
static void worker_error(const char *step, const char *what, const char *why)
{
    if (atomic_fetch_add(&sh->errors, 1) < 5)
        fprintf(stderr, "worker %d: %s: %s (%s)\n", my_proc, step, what, why);
}

/*
 * The check inside the critical section: announce ourselves, then look
 * for anyone else inside.  Both steps are sequentially consistent, so of
 * two holders whose stays overlap at least one sees the other.
 */
static void critical_section(int idx, int64_t stay_us)
{
    int p, seen;

    atomic_store(&sh->active[my_proc], idx + 1);
    for (p = 0; p < NPROC; p++) {
        int other = p == my_proc ? 0 : atomic_load(&sh->active[p]);
        int i;

        if (other == 0)
            continue;
        i = atomic_fetch_add(&sh->npairs, 1);
        if (i < MAX_PAIRS) {
            sh->pairs[i].a = other - 1;
            sh->pairs[i].b = idx;
            sh->pairs[i].at_us = th_wall_us();
        }
    }
    seen = sh->counter;
    th_sleep_us(stay_us);
    sh->counter = seen + 1;
    atomic_store(&sh->active[my_proc], 0);
}

struct worker {
    const struct run *run;
    const char *key;
    int side;
    tslock_client *tc;
    tslock_lock *tl;
    redisContext *rc;
    redisContext *time_rc; /* asks the server's clock, nothing else */
    legacy_client lc;
    uint64_t rng;
};

static uint64_t next_random(struct worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

/*
 * When the legacy clients of a unit call a stamp expired: the Java client
 * once the ms clock passes it, the docs' client once the whole second has
 * passed it, redis-py once time.time() passes the float.
 */
static int64_t peer_expiry_us(tslock_unit unit, const char *value)
{
    switch (unit) {
    case TSLOCK_UNIT_MS:
        return (strtoll(value, NULL, 10) + 1) * 1000;
    case TSLOCK_UNIT_S:
        return (strtoll(value, NULL, 10) + 1) * 1000000;
    default:
        return (int64_t)(strtod(value, NULL) * 1e6) + 1;
    }
}

/* The server's clock in Unix microseconds (TIME), 0 when it fails. */
static int64_t server_time_us(redisContext *rc)
{
    redisReply *r = rc != NULL ? redisCommand(rc, "TIME") : NULL;
    int64_t us = 0;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2
        && r->element[0]->type == REDIS_REPLY_STRING
        && r->element[1]->type == REDIS_REPLY_STRING)
        us = strtoll(r->element[0]->str, NULL, 10) * 1000000
             + strtoll(r->element[1]->str, NULL, 10);
    freeReplyObject(r);
    return us;
}

/*
 * When the last command that can win a lock was sent (tslock side): on
 * our clock, and a server TIME answered just before it went out, so the
 * command ran at or after that server time.
 */
static int64_t tslock_write_us, tslock_write_srv_us;

static int note_writes(tslock_client *client, tslock_step step, const char *key,
                       void *userdata)
{
    struct worker *w = userdata;

    (void)client;
    (void)key;
    /* The bridge claim is a script, or EXEC of a WATCH transaction. */
    if (step == TSLOCK_STEP_SETNX || step == TSLOCK_STEP_GETSET
        || step == TSLOCK_STEP_SET || step == TSLOCK_STEP_EVALSHA
        || step == TSLOCK_STEP_EVAL || step == TSLOCK_STEP_EXEC) {
        tslock_write_srv_us = server_time_us(w->time_rc);
        tslock_write_us = th_wall_us();
    }
    return 0;
}

/* 1 held (value and lease filled in), 0 busy, -1 failed. */
static int worker_acquire(struct worker *w, int64_t wait_ms, struct hold *h)
{
    int rc;

    if (w->tl != NULL) {
        rc = tslock_acquire(w->tl, wait_ms);
        if (rc == TSLOCK_OK) {
            int64_t peer;
            snprintf(h->value, VALUE_SIZE, "%s", tslock_lock_value(w->tl));
            h->won_us = tslock_write_us;
            h->srv_won_lo = tslock_write_srv_us;
            h->srv_won_hi = server_time_us(w->time_rc);
            h->tslock = 1;
            /* Its own check lets the lease run while now_ms <= expires. */
            h->own_end_us = (tslock_lock_expires_ms(w->tl) + 1) * 1000;
            /* The peers may end it sooner: its lease is what both grant. */
            peer = tslock_lock_scheme_used(w->tl) == TSLOCK_SCHEME_TOKEN
                       ? h->own_end_us
                       : peer_expiry_us(w->run->unit, h->value);
            h->lease_end_us = peer < h->own_end_us ? peer : h->own_end_us;
            return 1;
        }
        /* Beside token clients, their token is a busy key too. */
        if (rc == TSLOCK_EUNREADABLE && w->run->peer_token)
            rc = TSLOCK_EBUSY;
        if (rc != TSLOCK_EBUSY)
            worker_error("tslock acquire", tslock_errname(rc),
                         tslock_client_errstr(w->tc));
        return rc == TSLOCK_EBUSY ? 0 : -1;
    }
    rc = legacy_lock(&w->lc, w->key, wait_ms);
    if (rc == LEGACY_HELD) {
        snprintf(h->value, VALUE_SIZE, "%s", w->lc.value);
        h->won_us = w->lc.won_us;
        h->srv_won_lo = w->lc.won_server_us;
        h->srv_won_hi = w->lc.won_server_us;
        h->lease_end_us = w->lc.lease_end_us;
        h->own_end_us = w->lc.lease_end_us;
        return 1;
    }
    if (rc != LEGACY_BUSY)
        worker_error("legacy acquire", legacy_kind_name(w->lc.kind),
                     w->lc.errstr);
    return rc == LEGACY_BUSY ? 0 : -1;
}

static void worker_release(struct worker *w, struct hold *h)
{
    h->srv_rel_lo = server_time_us(w->time_rc);
    h->rel_start_us = th_wall_us();
    if (w->tl != NULL) {
        h->release_rc = tslock_release(w->tl);
        if (h->release_rc != TSLOCK_OK && h->release_rc != TSLOCK_ELOST)
            worker_error("tslock release", tslock_errname(h->release_rc),
                         tslock_client_errstr(w->tc));
    } else {
        h->release_rc = legacy_unlock(&w->lc, w->key);
        if (h->release_rc < 0)
            worker_error("legacy release", legacy_kind_name(w->lc.kind),
                         w->lc.errstr);
    }
    h->rel_end_us = th_wall_us();
    h->srv_rel_hi = server_time_us(w->time_rc);
}

static void worker_setup(struct worker *w)
{
    const struct run *run = w->run;

    w->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)th_wall_us() ^ 1u;
    w->time_rc = th_redis(&srv);
    if (w->side == SIDE_TSLOCK || run->peer_token) {
        /* A client of its own per process: its random stream too. */
        w->tc = th_client(&srv);
        if (tslock_lock_new(&w->tl, w->tc, w->key) != TSLOCK_OK)
            _exit(3);
        tslock_lock_set_scheme(
            w->tl, w->side == SIDE_TSLOCK ? run->scheme : TSLOCK_SCHEME_TOKEN);
        tslock_lock_set_unit(w->tl, run->unit);
        tslock_lock_set_ttl(w->tl, run->ttl_ms);
        tslock_lock_set_retry(w->tl, 2, 6);
        tslock_client_set_step_hook(w->tc, note_writes, w);
    } else {
        w->rc = th_redis(&srv);
        legacy_init(&w->lc, run->kind, w->rc, run->ttl_ms);
        /* The originals wait 50-100 ms; a short run needs more holds. */
        w->lc.retry_min_ms = 2;
        w->lc.retry_max_ms = 6;
        w->lc.observer = &observer;
    }
}

#define HOLD_US 1000 /* the work of an ordinary hold */

static void worker_main(const struct run *run, const char *key, int side,
                        int64_t end_ms)
{
    struct worker w;

    memset(&w, 0, sizeof(w));
    w.run = run;
    w.key = key;
    w.side = side;
    worker_setup(&w);
    while (th_mono_ms() < end_ms) {
        struct hold h;
        int64_t wait = end_ms - th_mono_ms(), stay = HOLD_US, pause;
        int idx, got;

        memset(&h, 0, sizeof(h));
        h.attempt_us = th_wall_us();
        got = worker_acquire(&w, wait < 500 ? wait : 500, &h);
        if (got < 0)
            th_sleep_us(10000);
        if (got <= 0)
            continue;
        h.acquired_us = th_wall_us();
        h.side = side;
        h.proc = my_proc;
        /* A few holds stall for 1.5 leases (GC pause, swap, SIGSTOP). */
        pause = (h.lease_end_us - h.acquired_us) * 3 / 2;
        if ((int)(next_random(&w) % 1000) < run->pause_permille
            && th_mono_ms() + pause / 1000 < end_ms) {
            h.paused = 1;
            stay = h.acquired_us + pause - th_wall_us();
        }
        idx = atomic_fetch_add(&sh->nholds, 1);
        if (idx >= MAX_HOLDS) {
            worker_release(&w, &h);
            break;
        }
        sh->holds[idx] = h;
        critical_section(idx, stay);
        worker_release(&w, &sh->holds[idx]);
    }
    _exit(0);
}

/* ------------------------------------------------- the parent's view */

static int same_value(const struct hold *a, const char *v)
{
    return strcmp(a->value, v) == 0;
}

static void dump_hold(const char *what, int i, int64_t at)
{
    const struct hold *h = &sh->holds[i];

    printf("\n      %s #%d %s proc %d value %s paused %d attempt %+lld won "
           "%+lld acquired %+lld lease_end %+lld rel %+lld..%+lld rc %d; "
           "server: won %+lld..%+lld rel %+lld..%+lld",
           what, i, h->side ? "legacy" : "tslock", h->proc, h->value, h->paused,
           (long long)(h->attempt_us - at), (long long)(h->won_us - at),
           (long long)(h->acquired_us - at), (long long)(h->lease_end_us - at),
           (long long)(h->rel_start_us - at), (long long)(h->rel_end_us - at),
           h->release_rc, (long long)(h->srv_won_lo - at),
           (long long)(h->srv_won_hi - at), (long long)(h->srv_rel_lo - at),
           (long long)(h->srv_rel_hi - at));
}

/*
 * Whether some hold may have had `value` as its live lock when e ran, on
 * the server's clock: won before, not yet released.
 */
static int value_held_during(const char *value, const struct event *e)
{
    int j, n = atomic_load(&sh->nholds);

    for (j = 0; j < n && j < MAX_HOLDS; j++)
        if (sh->holds[j].srv_won_lo <= e->srv_us
            && e->srv_us <= sh->holds[j].srv_rel_hi
            && same_value(&sh->holds[j], value))
            return 1;
    return 0;
}

/*
 * Whether a legacy event of kind, from another process than h's, removed
 * h's lock: it ran on the server after h's winning write could have run
 * and no later than `to` (nor after h's release ended), on h's value --
 * or, for a DEL, on a value no holder had then, which can only be a lost
 * GETSET's overwrite of h's value: the DEL took the key h relied on all
 * the same.  The value is what the server held (the GET or GETSET in the
 * event's own transaction), the times are the server's (TIME in the same
 * transaction, and TIME around h's write): no process's own clock orders
 * commands that several processes sent.
 */
static int legacy_event(int kind, const struct hold *h, int64_t to)
{
    int i, n = atomic_load(&sh->nevents);

    if (to > h->srv_rel_hi)
        to = h->srv_rel_hi;
    for (i = 0; i < n && i < MAX_EVENTS; i++) {
        const struct event *e = &sh->events[i];
        if (e->kind != kind || e->proc == h->proc || e->srv_us < h->srv_won_lo
            || e->srv_us > to)
            continue;
        if (strcmp(e->value, h->value) == 0
            || (kind == EV_LEGACY_DELETE && !e->own
                && !value_held_during(e->value, e)))
            return 1;
    }
    return 0;
}

static int by_value(const void *x, const void *y)
{
    const struct hold *a = &sh->holds[*(const int *)x];
    const struct hold *b = &sh->holds[*(const int *)y];

    return strcmp(a->value, b->value);
}

/*
 * Releases by tslock that deleted someone else's lock: a hold y with the
 * same value as x, taken before x's release started and still held after
 * it ended, lost its key to x's compare-and-delete.  Marks each victim,
 * and counts the pairs of live holds that wrote the same value.
 */
static int tslock_foreign_deletes(int n, char *victim, int *collisions,
                                  int *deletes_late)
{
    int *order = malloc(sizeof(int) * (size_t)(n + 1));
    int i, j, k, found = 0;

    *collisions = 0;
    *deletes_late = 0;
    CU_ASSERT_FATAL(order != NULL);
    for (i = 0; i < n; i++)
        order[i] = i;
    qsort(order, (size_t)n, sizeof(int), by_value);
    for (i = 0; i < n; i++)
        for (j = i + 1; j < n && by_value(&order[i], &order[j]) == 0; j++) {
            const struct hold *ha = &sh->holds[order[i]];
            const struct hold *hb = &sh->holds[order[j]];

            if (ha->acquired_us < hb->rel_start_us
                && hb->acquired_us < ha->rel_start_us)
                (*collisions)++;
            for (k = 0; k < 2; k++) {
                const struct hold *x = k ? hb : ha, *y = k ? ha : hb;
                if (x->tslock && x->release_rc == TSLOCK_OK
                    && y->acquired_us < x->rel_start_us
                    && y->rel_start_us > x->rel_end_us) {
                    /*
                     * y could only take the key after x's own lock was
                     * gone: 2 when a legacy release deleted it, else 1.
                     */
                    int late = legacy_event(EV_LEGACY_DELETE, x, x->srv_rel_hi);
                    victim[k ? order[i] : order[j]] = (char)(1 + late);
                    *deletes_late += late;
                    found++;
                    if (getenv("INTEROP_DEBUG") != NULL) {
                        printf("\n    tslock release deleted another's:");
                        dump_hold("x", k ? order[j] : order[i],
                                  x->rel_start_us);
                        dump_hold("y", k ? order[i] : order[j],
                                  x->rel_start_us);
                    }
                }
            }
        }
    free(order);
    return found;
}

static int pair_seen(const struct pair *p, int upto)
{
    int i, lo = p->a < p->b ? p->a : p->b, hi = p->a ^ p->b ^ lo;

    for (i = 0; i < upto; i++) {
        int l2 =
            sh->pairs[i].a < sh->pairs[i].b ? sh->pairs[i].a : sh->pairs[i].b;
        if (l2 == lo && (sh->pairs[i].a ^ sh->pairs[i].b ^ l2) == hi)
            return 1;
    }
    return 0;
}

/*
 * Whether the pair was inside both leases at any sighting: the leases as
 * both sides grant them, or (own) as each holder's own check sees it.
 */
static int pair_in_lease(const struct pair *p, int n, int own)
{
    int i, lo = p->a < p->b ? p->a : p->b, hi = p->a ^ p->b ^ lo;

    for (i = 0; i < n; i++) {
        const struct pair *q = &sh->pairs[i];
        const struct hold *a = &sh->holds[q->a], *b = &sh->holds[q->b];
        int l2 = q->a < q->b ? q->a : q->b;
        if (l2 == lo && (q->a ^ q->b ^ l2) == hi
            && q->at_us < (own ? a->own_end_us : a->lease_end_us)
            && q->at_us < (own ? b->own_end_us : b->lease_end_us))
            return 1;
    }
    return 0;
}

static void dump_pair(const struct pair *p)
{
    int i, n = atomic_load(&sh->nevents);

    printf("\n    unexplained overlap at %lld us:", (long long)p->at_us);
    dump_hold("a", p->a, p->at_us);
    dump_hold("b", p->b, p->at_us);
    for (i = 0; i < n && i < MAX_EVENTS; i++)
        if (sh->events[i].at_us > p->at_us - 300000
            && sh->events[i].at_us < p->at_us + 10000)
            printf("\n      event %d by proc %d on %s sent %+lld at %+lld "
                   "server %+lld",
                   sh->events[i].kind, sh->events[i].proc, sh->events[i].value,
                   (long long)(sh->events[i].sent_us - p->at_us),
                   (long long)(sh->events[i].at_us - p->at_us),
                   (long long)(sh->events[i].srv_us - p->at_us));
    n = atomic_load(&sh->nholds);
    for (i = 0; i < n && i < MAX_HOLDS; i++)
        if (sh->holds[i].rel_end_us > p->at_us - 300000
            && sh->holds[i].attempt_us < p->at_us + 10000)
            dump_hold("h", i, p->at_us);
}

enum cause {
    CAUSE_UNEXPLAINED,
    CAUSE_LEGACY_DELETE,
    CAUSE_LEGACY_GETSET,
    CAUSE_TSLOCK_DELETE,      /* after a legacy delete of the deleter's */
    CAUSE_TSLOCK_DELETE_PLAIN /* with no legacy delete before it */
};

/*
 * Why two holders were inside both leases at once.  One of them won
 * first on the server, and its key was gone (deleted, or overwritten)
 * before the other's write ran: the cause is whatever removed the first
 * one's value in between.  Which one won first is the server's order,
 * not the holders' clocks: a process can read its clock, be descheduled,
 * and send its write after another's.  So each holder is tried as the
 * first that the server times allow (v's write could have run before o's),
 * and the cause must have removed v's very value in that window; *vi
 * says whose lock it was.
 */
static int pair_cause(const struct pair *p, const char *victim_of_tslock,
                      int *vi)
{
    static const int kinds[] = {EV_LEGACY_DELETE, EV_LEGACY_GETSET};
    int k, o;

    for (k = 0; k < 2; k++)
        for (o = 0; o < 2; o++) {
            const struct hold *v = &sh->holds[o ? p->b : p->a];
            const struct hold *other = &sh->holds[o ? p->a : p->b];

            *vi = o ? p->b : p->a;
            if (v->srv_won_lo <= other->srv_won_hi
                && legacy_event(kinds[k], v, other->srv_won_hi))
                return k ? CAUSE_LEGACY_GETSET : CAUSE_LEGACY_DELETE;
        }
    for (o = 0; o < 2; o++) {
        const struct hold *v = &sh->holds[o ? p->b : p->a];
        const struct hold *other = &sh->holds[o ? p->a : p->b];

        *vi = o ? p->b : p->a;
        if (v->srv_won_lo <= other->srv_won_hi && victim_of_tslock[*vi])
            return victim_of_tslock[*vi] == 1 ? CAUSE_TSLOCK_DELETE_PLAIN
                                              : CAUSE_TSLOCK_DELETE;
    }
    *vi = -1;
    return CAUSE_UNEXPLAINED;
}

static void classify_pairs(struct result *res, const char *victim_of_tslock)
{
    int i, n = atomic_load(&sh->npairs);

    res->dropped += n > MAX_PAIRS ? n - MAX_PAIRS : 0;
    if (n > MAX_PAIRS)
        n = MAX_PAIRS;
    for (i = 0; i < n; i++) {
        const struct pair *p = &sh->pairs[i];
        const struct hold *ha = &sh->holds[p->a], *hb = &sh->holds[p->b];
        int vi, cause;

        if (pair_seen(p, i))
            continue;
        if (!pair_in_lease(p, n, 0)) {
            res->past_lease++;
            /* Past its stamp for the peers, inside it for tslock. */
            res->own_check_late += pair_in_lease(p, n, 1);
            continue;
        }
        res->in_lease++;
        cause = pair_cause(p, victim_of_tslock, &vi);
        res->by_legacy_delete += cause == CAUSE_LEGACY_DELETE;
        res->by_legacy_getset += cause == CAUSE_LEGACY_GETSET;
        res->by_tslock_delete +=
            cause == CAUSE_TSLOCK_DELETE || cause == CAUSE_TSLOCK_DELETE_PLAIN;
        res->by_tslock_plain += cause == CAUSE_TSLOCK_DELETE_PLAIN;
        /*
         * How often the holders' own clocks put the first writer the
         * other way round (what this checker once trusted).
         */
        if (vi >= 0 && (ha->won_us <= hb->won_us ? p->a : p->b) != vi)
            res->client_misordered++;
        if (cause == CAUSE_UNEXPLAINED) {
            res->unexplained++;
            if (getenv("INTEROP_DEBUG") != NULL)
                dump_pair(p);
        }
    }
}

static void analyse(struct result *res, int n)
{
    char *victim = calloc((size_t)n + 1, 1);
    int i, j, nev = atomic_load(&sh->nevents);

    CU_ASSERT_FATAL(victim != NULL);
    res->dropped = nev > MAX_EVENTS ? nev - MAX_EVENTS : 0;
    for (i = 0; i < n; i++) {
        const struct hold *h = &sh->holds[i];
        res->acquisitions[h->side]++;
        res->paused[h->side] += h->paused;
        if (!h->tslock || h->release_rc != TSLOCK_ELOST)
            continue;
        if (h->rel_start_us >= h->lease_end_us)
            res->elost_expired++;
        else {
            res->elost_in_lease++;
            if (!legacy_event(EV_LEGACY_DELETE, h, h->srv_rel_hi)
                && !legacy_event(EV_LEGACY_GETSET, h, h->srv_rel_hi)) {
                res->elost_unexplained++;
                if (getenv("INTEROP_DEBUG") != NULL) {
                    int k;
                    printf("\n    ELOST inside the lease:");
                    for (k = 0; k < n; k++)
                        if (sh->holds[k].rel_end_us > h->won_us - 20000
                            && sh->holds[k].attempt_us < h->rel_end_us + 2000)
                            dump_hold(k == i ? "*" : "h", k, h->rel_start_us);
                    for (k = 0; k < nev && k < MAX_EVENTS; k++)
                        if (sh->events[k].at_us > h->won_us - 20000
                            && sh->events[k].sent_us < h->rel_end_us + 2000)
                            printf("\n      event %d by proc %d on %s sent "
                                   "%+lld at %+lld",
                                   sh->events[k].kind, sh->events[k].proc,
                                   sh->events[k].value,
                                   (long long)(sh->events[k].sent_us
                                               - h->rel_start_us),
                                   (long long)(sh->events[k].at_us
                                               - h->rel_start_us));
                }
            }
        }
    }
    for (i = 0; i < nev && i < MAX_EVENTS; i++) {
        const struct event *e = &sh->events[i];
        if (e->kind == EV_LEGACY_GETSET) {
            res->legacy_getsets++;
            continue;
        }
        res->legacy_deletes += !e->own;
        /*
         * Whoever wrote it, was it another process's live lock?  Only when
         * sure: its holder had the lock before the DEL went out, and the
         * DEL was answered before the holder began to release it.
         */
        for (j = 0; j < n; j++)
            if (sh->holds[j].proc != e->proc
                && same_value(&sh->holds[j], e->value)
                && sh->holds[j].acquired_us <= e->sent_us
                && e->at_us <= sh->holds[j].rel_start_us) {
                res->legacy_deletes_live++;
                break;
            }
    }
    res->tslock_deletes = tslock_foreign_deletes(n, victim, &res->collisions,
                                                 &res->tslock_deletes_late);
    classify_pairs(res, victim);
    res->lost_updates = n - sh->counter;
    res->errors = atomic_load(&sh->errors);
    free(victim);
}

/* ------------------------------------------ replays for the checker */

/*
 * The checker fed by one interleaving at a time, ordered by tslock's step
 * hook: holds, events and the sighting go into the same shared record a
 * load run fills, and analyse() judges them as it judges a load run.
 */
struct replay {
    redisContext *time_rc; /* TIME, nothing else */
    legacy_client p;       /* proc 1: a legacy holder about to pause */
    legacy_client q;       /* proc 3: the next legacy holder */
    th_clock q_clk;        /* q's clock */
    int q_reads_first;     /* q reads its clock before tslock's claim */
    int acquired;          /* tslock's acquire has returned */
    int fired;             /* before_release has run */
    int p_idx, q_idx, ts_idx;
    int64_t write_us, write_srv_us; /* tslock's last write, as in a run */
    const char *key;
    void (*before_release)(struct replay *r);
};

static int replay_record(const struct hold *h)
{
    int idx = atomic_fetch_add(&sh->nholds, 1);

    sh->holds[idx] = *h;
    return idx;
}

/* A legacy client's hold as a load worker records it. */
static int replay_legacy_hold(struct replay *r, legacy_client *lc, int proc)
{
    struct hold h;

    memset(&h, 0, sizeof(h));
    h.side = SIDE_LEGACY;
    h.proc = proc;
    snprintf(h.value, VALUE_SIZE, "%s", lc->value);
    h.won_us = lc->won_us;
    h.srv_won_lo = h.srv_won_hi = lc->won_server_us;
    h.acquired_us = th_wall_us();
    h.lease_end_us = h.own_end_us = lc->lease_end_us;
    (void)r;
    return replay_record(&h);
}

static void replay_legacy_release(struct replay *r, legacy_client *lc, int proc,
                                  int idx)
{
    struct hold *h = &sh->holds[idx];

    my_proc = proc;
    h->srv_rel_lo = server_time_us(r->time_rc);
    h->rel_start_us = th_wall_us();
    h->release_rc = legacy_unlock(lc, r->key);
    h->rel_end_us = th_wall_us();
    h->srv_rel_hi = server_time_us(r->time_rc);
}

/* Two holders inside at once, seen by the one entering (b). */
static void replay_sighting(int a, int b)
{
    int i = atomic_fetch_add(&sh->npairs, 1);

    sh->pairs[i].a = a;
    sh->pairs[i].b = b;
    sh->pairs[i].at_us = th_wall_us();
}

/*
 * Before each tslock script: at the claim, note the write as a load
 * worker does (q first reads its clock, when asked); at the release,
 * once, let the legacy clients act.
 */
static int replay_hook(tslock_client *client, tslock_step step, const char *key,
                       void *userdata)
{
    struct replay *r = userdata;

    (void)client;
    (void)key;
    if (step != TSLOCK_STEP_EVALSHA && step != TSLOCK_STEP_EVAL)
        return 0;
    if (!r->acquired) {
        if (r->q_reads_first)
            r->q_clk.wall_ms = th_wall_us() / 1000;
        r->write_srv_us = server_time_us(r->time_rc);
        r->write_us = th_wall_us();
    } else if (!r->fired) {
        r->fired = 1;
        r->before_release(r);
    }
    return 0;
}

/* tslock's bridge hold, taken and released under the hook. */
static int replay_tslock(struct replay *r, tslock_lock *l)
{
    struct hold h;
    int64_t peer;
    int idx;

    memset(&h, 0, sizeof(h));
    my_proc = 0;
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    h.side = SIDE_TSLOCK;
    h.tslock = 1;
    h.srv_won_lo = r->write_srv_us;
    h.srv_won_hi = server_time_us(r->time_rc);
    h.won_us = r->write_us;
    h.acquired_us = th_wall_us();
    snprintf(h.value, VALUE_SIZE, "%s", tslock_lock_value(l));
    h.own_end_us = (tslock_lock_expires_ms(l) + 1) * 1000;
    peer = peer_expiry_us(TSLOCK_UNIT_FLOAT, h.value);
    h.lease_end_us = peer < h.own_end_us ? peer : h.own_end_us;
    idx = r->ts_idx = replay_record(&h);
    r->acquired = 1;
    sh->holds[idx].srv_rel_lo = server_time_us(r->time_rc);
    sh->holds[idx].rel_start_us = th_wall_us();
    sh->holds[idx].release_rc = tslock_release(l);
    my_proc = 0;
    sh->holds[idx].rel_end_us = th_wall_us();
    sh->holds[idx].srv_rel_hi = server_time_us(r->time_rc);
    return idx;
}

static void replay_init(struct replay *r, const char *key, int64_t q_timeout_ms)
{
    memset(sh, 0, sizeof(*sh));
    memset(r, 0, sizeof(*r));
    raw_del(key);
    raw_del("{interop:replay}:owner");
    r->key = key;
    r->time_rc = th_redis(&srv);
    legacy_init(&r->p, LEGACY_REDISPY2, th_redis(&srv), 150);
    legacy_init(&r->q, LEGACY_REDISPY2, th_redis(&srv), q_timeout_ms);
    r->p.observer = r->q.observer = &observer;
    th_clock_init(&r->q_clk);
    r->q_clk.wall_ms = th_wall_us() / 1000;
    r->q.clock = legacy_th_clock;
    r->q.clock_ud = &r->q_clk;
}

static void replay_free(struct replay *r)
{
    redisFree(r->p.redis);
    redisFree(r->q.redis);
    redisFree(r->time_rc);
}

/* The paused holder's release deletes tslock's value; q takes the key. */
static void paused_delete_then_setnx(struct replay *r)
{
    replay_legacy_release(r, &r->p, 1, r->p_idx);
    CU_ASSERT_EQUAL(sh->holds[r->p_idx].release_rc, 1);
    my_proc = 3;
    CU_ASSERT_EQUAL_FATAL(legacy_try(&r->q, r->key), LEGACY_HELD);
    r->q_idx = replay_legacy_hold(r, &r->q, 3);
    replay_sighting(r->q_idx, r->ts_idx);
}

/*
 * The overlap a load run once could not explain, replayed: a redis-py
 * 2.x holder (p) pauses past its lease; a tslock bridge holder takes the
 * expired key; p wakes and its release, finding a stamp later than its
 * own, deletes tslock's; another redis-py client (q), which read its
 * clock before tslock's claim went out, SETNXes the empty key.  Both are
 * inside their leases.  By the holders' clocks q wrote first; on the
 * server tslock did, and a legacy delete of tslock's value came between.
 * The checker must name that cause, and tslock's release must say lost.
 */
static void test_replay_legacy_delete_misordered_clocks(void)
{
    const char *key = "interop:replay";
    tslock_client *c = th_client(&srv);
    tslock_lock *l =
        new_lock(c, key, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_FLOAT, 150);
    struct replay r;
    struct result res;
    th_clock tclk;
    const struct hold *ts, *q;

    replay_init(&r, key, 10000);
    r.q_reads_first = 1;
    r.before_release = paused_delete_then_setnx;
    /* p's lease of 150 ms is over for tslock, a second later. */
    th_clock_init(&tclk);
    tclk.wall_ms = th_wall_us() / 1000 + 1000;
    tslock_client_set_clock(c, th_clock_fn, &tclk);
    my_proc = 1;
    CU_ASSERT_EQUAL_FATAL(legacy_try(&r.p, key), LEGACY_HELD);
    r.p_idx = replay_legacy_hold(&r, &r.p, 1);
    tslock_client_set_step_hook(c, replay_hook, &r);
    replay_tslock(&r, l);
    tslock_client_set_step_hook(c, NULL, NULL);
    CU_ASSERT_TRUE_FATAL(r.fired);
    replay_legacy_release(&r, &r.q, 3, r.q_idx);

    memset(&res, 0, sizeof(res));
    analyse(&res, atomic_load(&sh->nholds));
    ts = &sh->holds[r.ts_idx];
    q = &sh->holds[r.q_idx];
    printf("\n    q's clock put its SETNX %lld us before tslock's claim; the "
           "server ran it %lld us after; tslock's release: %s; in lease %d, "
           "by legacy delete %d, unexplained %d, misordered %d",
           (long long)(ts->won_us - q->won_us),
           (long long)(q->srv_won_lo - ts->srv_won_hi),
           tslock_errname(ts->release_rc), res.in_lease, res.by_legacy_delete,
           res.unexplained, res.client_misordered);
    CU_ASSERT_TRUE(q->won_us < ts->won_us);
    CU_ASSERT_TRUE(q->srv_won_lo > ts->srv_won_hi);
    CU_ASSERT_EQUAL(ts->release_rc, TSLOCK_ELOST);
    CU_ASSERT_EQUAL(sh->holds[r.q_idx].release_rc, 1);
    CU_ASSERT_EQUAL(res.in_lease, 1);
    CU_ASSERT_EQUAL(res.by_legacy_delete, 1);
    CU_ASSERT_EQUAL(res.unexplained, 0);
    CU_ASSERT_EQUAL(res.by_tslock_delete, 0);
    /* The holders' clocks named q as the first writer: the old mistake. */
    CU_ASSERT_EQUAL(res.client_misordered, 1);
    CU_ASSERT_EQUAL(res.elost_in_lease, 1);
    CU_ASSERT_EQUAL(res.elost_unexplained, 0);
    tslock_lock_free(l);
    tslock_client_free(c);
    replay_free(&r);
}

/* The paused holder's release deletes tslock's value; nobody takes it. */
static void paused_delete_after_overlap(struct replay *r)
{
    replay_legacy_release(r, &r->p, 1, r->p_idx);
    CU_ASSERT_EQUAL(sh->holds[r->p_idx].release_rc, 1);
    replay_sighting(r->q_idx, r->ts_idx);
}

/*
 * The checker on something known broken: a tslock client whose clock
 * runs an hour ahead takes a live redis-py lock over (the lease caveat
 * broken by tslock's side, not by a legacy flaw).  A legacy delete of
 * tslock's own value follows, inside tslock's hold and before its
 * release, the kind of event that explains an overlap when it comes
 * between the two claims; here it comes after both, so the server times
 * must keep it from explaining this one: the overlap counts as
 * unexplained.
 */
static void test_checker_fails_a_skewed_takeover(void)
{
    const char *key = "interop:replay";
    tslock_client *c = th_client(&srv);
    tslock_lock *l =
        new_lock(c, key, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_FLOAT, 150);
    struct replay r;
    struct result res;
    th_clock tclk;

    replay_init(&r, key, 10000);
    r.before_release = paused_delete_after_overlap;
    my_proc = 1;
    CU_ASSERT_EQUAL_FATAL(legacy_try(&r.p, key), LEGACY_HELD);
    r.p_idx = replay_legacy_hold(&r, &r.p, 1);
    /* q, a second ahead, takes p's expired stamp over: a 10 s lease. */
    r.q_clk.wall_ms = th_wall_us() / 1000 + 1000;
    my_proc = 3;
    CU_ASSERT_EQUAL_FATAL(legacy_try(&r.q, key), LEGACY_HELD);
    r.q_idx = replay_legacy_hold(&r, &r.q, 3);
    /* tslock, an hour ahead, reads q's live stamp as long expired. */
    th_clock_init(&tclk);
    tclk.wall_ms = th_wall_us() / 1000 + 3600 * 1000;
    tslock_client_set_clock(c, th_clock_fn, &tclk);
    tslock_client_set_step_hook(c, replay_hook, &r);
    replay_tslock(&r, l);
    tslock_client_set_step_hook(c, NULL, NULL);
    CU_ASSERT_TRUE_FATAL(r.fired);
    replay_legacy_release(&r, &r.q, 3, r.q_idx);

    memset(&res, 0, sizeof(res));
    analyse(&res, atomic_load(&sh->nholds));
    printf("\n    tslock an hour ahead took a live redis-py lock: in lease %d, "
           "by legacy delete %d, unexplained %d",
           res.in_lease, res.by_legacy_delete, res.unexplained);
    CU_ASSERT_EQUAL(res.in_lease, 1);
    CU_ASSERT_EQUAL(res.unexplained, 1);
    CU_ASSERT_EQUAL(res.by_legacy_delete + res.by_legacy_getset, 0);
    CU_ASSERT_EQUAL(res.by_tslock_delete, 0);
    tslock_lock_free(l);
    tslock_client_free(c);
    replay_free(&r);
}

/* ------------------------------------------------------ the report */

#define MAX_ROWS 16
static char report[MAX_ROWS][240];
static int report_rows;

static void report_row(const struct run *run, const struct result *r)
{
    char *row;

    if (report_rows >= MAX_ROWS)
        return;
    row = report[report_rows++];
    snprintf(row, sizeof(report[0]),
             "%-8s %-9s %-5s %5" PRId64 " |%5d %5d |%3d %3d |%4d =%4d %3d %3d "
             "%3d |%5d %3d |%4d %4d %3d |%3d %3d |%4d %3d %3d |%5.1f",
             run->peer_token ? "token" : legacy_kind_name(run->kind),
             scheme_name(run->scheme), unit_name(run->unit), run->ttl_ms,
             r->acquisitions[SIDE_TSLOCK], r->acquisitions[SIDE_LEGACY],
             r->paused[SIDE_TSLOCK], r->paused[SIDE_LEGACY], r->in_lease,
             r->by_legacy_delete, r->by_legacy_getset, r->by_tslock_delete,
             r->unexplained, r->past_lease, r->own_check_late,
             r->legacy_deletes, r->legacy_deletes_live, r->legacy_getsets,
             r->tslock_deletes, r->collisions, r->elost_expired,
             r->elost_in_lease, r->elost_unexplained, r->seconds);
    printf("\n    %s", row);
}

/*
 * The columns: holds taken by each side; holds that paused 1.5 leases;
 * overlaps inside both leases = those whose earlier holder's key a legacy
 * release deleted + that a legacy lost GETSET overwrote + that a tslock
 * release deleted + unexplained; overlaps past a lease (the lease
 * caveat), and of those, ones tslock's own ms check would still have
 * counted as inside a float stamp; legacy DELs of values they had not
 * written (of a live holder's), legacy lost GETSETs; tslock releases that
 * deleted another's value; live holds sharing a value; tslock releases
 * that said TSLOCK_ELOST after the lease / inside it (with no legacy
 * event on the value).
 */
static void print_report(void)
{
    int i;

    if (report_rows == 0)
        return;
    printf("\ninterop load runs: %d tslock + %d legacy processes on one key\n"
           "%-8s %-9s %-5s %5s |%11s |%7s |%20s |%9s |%13s |%7s |%11s |%5s\n"
           "%-8s %-9s %-5s %5s |%5s %5s |%3s %3s |%4s =%4s %3s %3s %3s "
           "|%5s %3s |%4s %4s %3s |%3s %3s |%4s %3s %3s |\n",
           PER_SIDE, PER_SIDE, "legacy", "tslock", "unit", "ttl", "acquired",
           "paused", "overlaps in lease", "past", "legacy", "tslock", "ELOST",
           "secs", "", "", "", "ms", "ts", "leg", "ts", "leg", "all", "ldel",
           "lgs", "tdel", "??", "lease", "tsl", "del", "live", "gs", "del",
           "dup", "exp", "in", "??");
    for (i = 0; i < report_rows; i++)
        printf("%s\n", report[i]);
}

/*
 * Under make check-valgrind (TSLOCK_TEST_ROUNDS set) every process runs
 * tens of times slower: shorter runs, leases ten times as long, and no
 * short-lease runs, whose verdicts rest on timings valgrind distorts.
 */
static int slow_mode;

/* What each forked load worker runs: even ones tslock, odd ones legacy. */
struct load_job {
    const struct run *run;
    const char *key;
    int64_t end_ms;
};

static void run_worker(int index, void *userdata)
{
    const struct load_job *job = userdata;

    my_proc = index;
    worker_main(job->run, job->key, index % 2 ? SIDE_LEGACY : SIDE_TSLOCK,
                job->end_ms);
}

static void run_load(const struct run *asked, const char *key)
{
    struct load_job job;
    struct result res;
    struct run slow, *run = &slow;
    int64_t t0 = th_mono_ms(), end_ms;
    int clean, n;

    slow = *asked;
    if (slow_mode) {
        if (slow.pause_permille > 0) {
            printf("\n    skipped: timing-sensitive, TSLOCK_TEST_ROUNDS set");
            return;
        }
        slow.ttl_ms *= 10;
        slow.duration_ms = slow.duration_ms * 3 / 10;
        /*
         * redis-py's blind GETSET on a key that just vanished can leave
         * an orphan stamp that nobody holds; the key then stalls for a
         * lease.  Valgrind widens that window, so these runs get leases
         * three times as long, not ten, and four leases of time: room
         * for stalls, and both sides must still take the lock.
         */
        if (!slow.peer_token && slow.kind == LEGACY_REDISPY2) {
            slow.ttl_ms = asked->ttl_ms * 3;
            slow.duration_ms = slow.ttl_ms * 4;
        }
    }
    memset(sh, 0, sizeof(*sh));
    memset(&res, 0, sizeof(res));
    raw_del(key);
    end_ms = t0 + run->duration_ms;
    job.run = run;
    job.key = key;
    job.end_ms = end_ms;
    clean = th_workers(NPROC, run_worker, &job);
    res.seconds = (double)(th_mono_ms() - t0) / 1000.0;
    n = atomic_load(&sh->nholds);
    if (n > MAX_HOLDS)
        n = MAX_HOLDS;
    analyse(&res, n);
    report_row(run, &res);
    if (res.client_misordered > 0)
        printf("\n    %d explained overlaps had their first writer misordered "
               "by the holders' own clocks",
               res.client_misordered);

    CU_ASSERT_TRUE(clean);
    CU_ASSERT_EQUAL(res.errors, 0);
    CU_ASSERT_TRUE(res.acquisitions[SIDE_TSLOCK] > 0);
    CU_ASSERT_TRUE(res.acquisitions[SIDE_LEGACY] > 0);
    CU_ASSERT_EQUAL(res.dropped, 0);
    /* Whatever the leases: tslock never breaks exclusion itself. */
    CU_ASSERT_EQUAL(res.unexplained, 0);
    CU_ASSERT_EQUAL(res.by_tslock_plain, 0);
    if (run->scheme == TSLOCK_SCHEME_BRIDGE) {
        /*
         * Its holds carry a proof a legacy client or another bridge
         * holder cannot fake with an identical stamp: no foreign deletes.
         */
        CU_ASSERT_EQUAL(res.tslock_deletes, 0);
    } else {
        /*
         * Classic stamps are not unique (two holders in one ms write the
         * same one), so after a legacy release deleted a tslock holder's
         * lock and a client re-took it with an identical stamp, the
         * holder's release deletes that lock.  Reported; never without
         * the legacy delete first.
         */
        CU_ASSERT_EQUAL(res.tslock_deletes, res.tslock_deletes_late);
    }
    if (run->pause_permille == 0) {
        /* No lease ran out: no overlap, no lost update, no live lock lost. */
        CU_ASSERT_EQUAL(res.in_lease + res.past_lease, 0);
        CU_ASSERT_EQUAL(res.lost_updates, 0);
        CU_ASSERT_EQUAL(res.legacy_deletes_live, 0);
        CU_ASSERT_EQUAL(res.elost_expired, 0);
        /*
         * ELOST inside the lease can still come, from a GETSET that lost
         * a takeover of an orphaned stamp and overwrote the winner's: it
         * costs the key until that stamp passes, not exclusion.
         */
    }
}

/*
 * The runs: each legacy client beside tslock in its unit, in the
 * timestamp and the bridge scheme; leases long against the hold (a
 * thousand times; yet short, since an orphaned stamp left by redis-py
 * 2.x's blind GETSET blocks the key until it expires), then short leases
 * (the shortest whole seconds can say) with 4% of holds pausing 1.5
 * leases.
 */
#define LONG(k, s, u, d)                                                       \
    {                                                                          \
        k, s, u, 1000, 0, d, 0                                                 \
    }
#define SHORT(k, s, u, t)                                                      \
    {                                                                          \
        k, s, u, t, 40, (t) >= 1000 ? 6000 : 3000, 0                           \
    }
static const struct run runs[] = {
    LONG(LEGACY_JAVA, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_MS, 2000),
    LONG(LEGACY_REDISDOC, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_S, 2000),
    LONG(LEGACY_REDISPY2, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_FLOAT, 3000),
    LONG(LEGACY_JAVA, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_MS, 2000),
    LONG(LEGACY_REDISDOC, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_S, 2000),
    LONG(LEGACY_REDISPY2, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_FLOAT, 3000),
    SHORT(LEGACY_JAVA, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_MS, 150),
    SHORT(LEGACY_REDISDOC, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_S, 1000),
    SHORT(LEGACY_REDISPY2, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_FLOAT, 150),
    SHORT(LEGACY_JAVA, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_MS, 150),
    SHORT(LEGACY_REDISDOC, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_S, 1000),
    SHORT(LEGACY_REDISPY2, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_FLOAT, 150),
    /*
     * The switch-over: once no legacy client is left, bridge clients
     * move to the token scheme a few at a time, so both share the key for
     * a while.  Neither takes over what the other wrote (a token is
     * unreadable as a stamp; a token client only sets an absent key).
     */
    {LEGACY_JAVA, TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_MS, 1000, 0, 2000, 1},
};
#define N_RUNS (sizeof(runs) / sizeof(runs[0]))

static void run_by_index(size_t i)
{
    char key[80];

    snprintf(key, sizeof(key), "interop:%zu:%s:%s", i,
             runs[i].peer_token ? "token" : legacy_kind_name(runs[i].kind),
             scheme_name(runs[i].scheme));
    run_load(&runs[i], key);
}

#define RUN_TEST(i)                                                            \
    static void test_run_##i(void)                                             \
    {                                                                          \
        run_by_index(i);                                                       \
    }
RUN_TEST(0)
RUN_TEST(1)
RUN_TEST(2)
RUN_TEST(3)
RUN_TEST(4)
RUN_TEST(5)
RUN_TEST(6)
RUN_TEST(7)
RUN_TEST(8)
RUN_TEST(9)
RUN_TEST(10)
RUN_TEST(11)
RUN_TEST(12)
static void (*const run_tests[N_RUNS])(void) = {
    test_run_0,  test_run_1,  test_run_2, test_run_3, test_run_4,
    test_run_5,  test_run_6,  test_run_7, test_run_8, test_run_9,
    test_run_10, test_run_11, test_run_12};

/* ====================================== token mode beside redis-py ==== */

/* Run argv with stdout to out_path (or /dev/null); returns the pid. */
static pid_t spawn(char *const argv[], const char *out_path)
{
    posix_spawn_file_actions_t fa;
    pid_t pid = -1;
    int rc;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path ? out_path : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out_path == NULL)
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc == 0 ? pid : -1;
}

static int wait_status(pid_t pid)
{
    int status;

    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * A Python 3 that has the redis package: $PYTHON, else python3 on PATH,
 * else Debian's /usr/bin/python3 (where python3-redis installs, and which
 * a pyenv or virtualenv python3 earlier on PATH does not see).
 */
static const char *find_python(void)
{
    static const char *found;
    const char *candidates[] = {getenv("PYTHON"), "python3",
                                "/usr/bin/python3"};
    size_t i;

    for (i = 0; found == NULL && i < 3; i++) {
        char *argv[] = {(char *)candidates[i], "-c", "import redis.lock", NULL};
        pid_t pid;

        if (candidates[i] == NULL || *candidates[i] == '\0')
            continue;
        pid = spawn(argv, NULL);
        if (pid > 0 && wait_status(pid) == 0)
            found = candidates[i];
    }
    return found;
}

static int find_script(char *path, size_t size)
{
    const char *env = getenv("INTEROP_PYLOCK"), *top = getenv("top_srcdir");
    const char *src = __FILE__, *slash = strrchr(src, '/');

    if (env != NULL && *env != '\0')
        snprintf(path, size, "%s", env);
    else if (top != NULL && *top != '\0')
        snprintf(path, size, "%s/tests/interop_pylock.py", top);
    else if (slash != NULL)
        snprintf(path, size, "%.*s/interop_pylock.py", (int)(slash - src), src);
    else
        snprintf(path, size, "interop_pylock.py");
    return access(path, R_OK) == 0 ? 0 : -1;
}

/* Our side of the marker check: 1 when someone else's marker was there. */
static int marker_enter(const char *marker)
{
    int fd = open(marker, O_CREAT | O_EXCL | O_WRONLY, 0600);

    if (fd < 0)
        return errno == EEXIST ? 1 : -1;
    th_sleep_us(1000);
    close(fd);
    unlink(marker);
    return 0;
}

static void token_worker(const char *key, const char *marker)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;

    if (tslock_lock_new(&l, c, key) != TSLOCK_OK)
        _exit(3);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN);
    tslock_lock_set_ttl(l, 10000);
    tslock_lock_set_retry(l, 1, 3);
    /* Until the parent says the Python side is done. */
    while (!atomic_load(&sh->stop)) {
        int rc = tslock_acquire(l, 200), m;

        if (rc == TSLOCK_EBUSY)
            continue;
        if (rc != TSLOCK_OK) {
            atomic_fetch_add(&sh->errors, 1);
            continue;
        }
        atomic_fetch_add(&sh->token_holds, 1);
        m = marker_enter(marker);
        if (m != 0)
            atomic_fetch_add(m > 0 ? &sh->token_overlaps : &sh->errors, 1);
        if (tslock_release(l) != TSLOCK_OK)
            atomic_fetch_add(&sh->errors, 1);
    }
    _exit(0);
}

#define PY_PROCS 4
#define PY_HOLDS 100

static char token_row[200];

static void test_token_beside_redis_py(void)
{
    const char *python = find_python(), *key = "interop:token:redispy";
    char script[512], dir[] = "/tmp/tslock-interop.XXXXXX", marker[600];
    char out[PY_PROCS][600], line[200], count[16];
    pid_t c_pids[PER_SIDE], py_pids[PY_PROCS];
    int i, py_acquired = 0, py_overlaps = 0, py_failed = 0;
    int64_t t0 = th_mono_ms();

    if (python == NULL) {
        printf("\n    skipped: python3-redis not installed "
               "(python3 -c 'import redis' failed)");
        return;
    }
    CU_ASSERT_FATAL(find_script(script, sizeof(script)) == 0);
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    snprintf(marker, sizeof(marker), "%s/held", dir);
    snprintf(count, sizeof(count), "%d", PY_HOLDS);
    memset(sh, 0, sizeof(*sh));
    raw_del(key);
    fflush(stdout);
    for (i = 0; i < PER_SIDE; i++) {
        c_pids[i] = fork();
        CU_ASSERT_FATAL(c_pids[i] >= 0);
        if (c_pids[i] == 0)
            token_worker(key, marker);
    }
    for (i = 0; i < PY_PROCS; i++) {
        char *argv[] = {(char *)python, script, srv.socket, (char *)key,
                        count,          dir,    NULL};
        snprintf(out[i], sizeof(out[i]), "%s/py-%d.out", dir, i);
        py_pids[i] = spawn(argv, out[i]);
        CU_ASSERT(py_pids[i] > 0);
    }
    for (i = 0; i < PY_PROCS; i++) {
        FILE *f;
        int a = 0, o = 0, e = 0;

        if (py_pids[i] <= 0 || wait_status(py_pids[i]) != 0)
            py_failed++;
        f = fopen(out[i], "r");
        if (f != NULL && fgets(line, sizeof(line), f) != NULL) {
            char *p = strstr(line, "acquired=");
            if (p == NULL
                || sscanf(p, "acquired=%d overlaps=%d errors=%d", &a, &o, &e)
                       != 3)
                py_failed++;
            printf("\n    %s", strtok(line, "\n"));
        } else {
            py_failed++;
        }
        if (f != NULL)
            fclose(f);
        unlink(out[i]);
        py_acquired += a;
        py_overlaps += o;
    }
    atomic_store(&sh->stop, 1);
    for (i = 0; i < PER_SIDE; i++)
        CU_ASSERT_EQUAL(wait_status(c_pids[i]), 0);
    unlink(marker);
    rmdir(dir);
    snprintf(token_row, sizeof(token_row),
             "token beside redis-py Lock: tslock %d holds, redis-py %d holds, "
             "overlaps %d (tslock saw %d, redis-py saw %d), %.1f s",
             atomic_load(&sh->token_holds), py_acquired,
             atomic_load(&sh->token_overlaps) + py_overlaps,
             atomic_load(&sh->token_overlaps), py_overlaps,
             (double)(th_mono_ms() - t0) / 1000.0);
    printf("\n    %s", token_row);
    CU_ASSERT_EQUAL(py_failed, 0);
    CU_ASSERT_EQUAL(py_acquired, PY_PROCS * PY_HOLDS);
    CU_ASSERT_EQUAL(py_overlaps, 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->token_overlaps), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh->errors), 0);
    CU_ASSERT_TRUE(atomic_load(&sh->token_holds) > 0);
}

/* ================================================================ main */

/*
 * Register a test unless $TSLOCK_INTEROP_ONLY is set and not part of its
 * name, so one run can be repeated on its own while chasing a failure.
 */
static void add_test(CU_pSuite s, const char *name, CU_TestFunc fn)
{
    const char *only = getenv("TSLOCK_INTEROP_ONLY");

    if (only == NULL || strstr(name, only) != NULL)
        CU_add_test(s, name, fn);
}

int main(void)
{
    static char names[N_RUNS][100];
    CU_pSuite s;
    size_t i;
    int rc;

    slow_mode = th_rounds(-1) >= 0;
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    if (th_server_start(&srv, NULL) != 0)
        return 1;
    raw = th_redis(&srv);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;

    s = CU_add_suite("unit guard", NULL, NULL);
    add_test(s, "ms client refuses a live seconds stamp (Redis docs)",
             test_ms_client_refuses_seconds_stamp);
    add_test(s, "seconds client refuses a live ms stamp (Java)",
             test_seconds_client_refuses_ms_stamp);
    add_test(s, "unit matrix: live and expired legacy stamps",
             test_unit_matrix);

    s = CU_add_suite("tokens and legacy stamps", NULL, NULL);
    add_test(s, "legacy clients meeting a token lock", test_legacy_meets_token);
    add_test(s, "token client meeting a dead legacy holder's stamp",
             test_token_meets_dead_legacy_stamp);

    s = CU_add_suite("library behaviour found by interop", NULL, NULL);
    add_test(s, "a seconds stamp is held to the end of its second",
             test_seconds_stamp_held_to_end_of_its_second);
    add_test(s, "identical bridge stamps are told apart",
             test_bridge_identical_stamps);
    add_test(s, "bridge safety TTL lands only on its own key",
             test_bridge_safety_ttl_only_on_own_key);
    add_test(s, "on 2.0 a GETSET inside the release's gap goes unseen",
             test_release_gap_on_2_0);

    s = CU_add_suite("the overlap checker, replayed", NULL, NULL);
    add_test(s, "a legacy delete between claims the clocks misorder",
             test_replay_legacy_delete_misordered_clocks);
    add_test(s, "a skewed tslock takeover counts as unexplained",
             test_checker_fails_a_skewed_takeover);

    s = CU_add_suite("interop load", NULL, NULL);
    for (i = 0; i < N_RUNS; i++) {
        const struct run *r = &runs[i];
        snprintf(names[i], sizeof(names[i]), "tslock %s %s beside %s, %s",
                 scheme_name(r->scheme), unit_name(r->unit),
                 r->peer_token ? "token" : legacy_kind_name(r->kind),
                 r->pause_permille ? "short leases and pauses"
                                   : "long leases: no overlap");
        add_test(s, names[i], run_tests[i]);
    }
    add_test(s, "tslock token beside redis-py's Lock",
             test_token_beside_redis_py);

    rc = th_run_all();
    print_report();
    if (token_row[0] != '\0')
        printf("%s\n", token_row);
    redisFree(raw);
    th_server_stop(&srv);
    munmap(sh, sizeof(*sh));
    return rc;
}
