/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_races.c - the races of the classic articles, replayed command by
 * command.  Each replay runs the broken scheme and shows mutual exclusion
 * lost, then runs tslock through the same interleaving and shows it kept.
 *
 * Ordering comes from step hooks, never from timing: the client that the
 * article pauses is the outer one, and its hook runs the other client's
 * whole operation at the exact command where the article interleaves it.
 * Lease expiry comes from a shared test clock.  See doc/races.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classroom.h"
#include "harness.h"
#include "naive.h"
#include "races.h"

static th_server srv;
static th_clock clk;
static char trace[512];

/*
 * An actor in a replay: records every command it is about to send into
 * the shared trace, and at its `at` step (once) runs `action`, which
 * plays the other client's part or moves the clock.
 */
typedef struct actor {
    const char *name;
    const char *at;
    int (*action)(struct actor *self);
    int fired;
    int inner_rc; /* what the other client's operation, run inside this
                     actor's pause, returned */
} actor;

/* An actor that only records; one that pauses at `step` to run `fn`. */
#define ACTOR(n)                                                               \
    {                                                                          \
        .name = (n)                                                            \
    }
#define PAUSING(n, step, fn)                                                   \
    {                                                                          \
        .name = (n), .at = (step), .action = (fn)                              \
    }

/*
 * The trace shows commands in the order the server receives them: an
 * actor's paused command is recorded after the other client's part runs.
 * A NOSCRIPT fallback to EVAL belongs to the EVALSHA before it and is not
 * recorded again, so traces do not depend on the server's script cache.
 */
static int actor_step(actor *a, const char *step)
{
    size_t used;
    int rc = 0;

    if (a->action != NULL && !a->fired && a->at != NULL
        && strcmp(step, a->at) == 0) {
        a->fired = 1;
        rc = a->action(a);
    }
    if (strcmp(step, "EVAL") == 0)
        return rc;
    used = strlen(trace);
    snprintf(trace + used, sizeof(trace) - used, "%s%s:%s", used ? " " : "",
             a->name, step);
    return rc;
}

static int lib_hook(tslock_client *c, tslock_step step, const char *key,
                    void *ud)
{
    return actor_step(ud, tslock_step_name(step));
}

static int naive_step_hook(const char *step, void *ud)
{
    return actor_step(ud, step);
}

static tslock_client *client_as(actor *a)
{
    tslock_client *c = th_client(&srv);

    tslock_client_set_clock(c, th_clock_fn, &clk);
    tslock_client_set_step_hook(c, lib_hook, a);
    return c;
}

static naive_client naive_as(actor *a, redisContext *redis)
{
    naive_client n = {redis, &clk.wall_ms, naive_step_hook, a, ""};
    return n;
}

/* The stored value of key, or "(nil)". */
static const char *stored(redisContext *r, const char *key, char *buf,
                          size_t size)
{
    redisReply *reply = redisCommand(r, "GET %s", key);

    snprintf(buf, size, "%s",
             reply != NULL && reply->type == REDIS_REPLY_STRING ? reply->str
                                                                : "(nil)");
    freeReplyObject(reply);
    return buf;
}

/* Leave a lock that expired `ago` ms before now, as if P1 had died. */
static void plant_expired_stamp(redisContext *r, const char *key, int64_t ago)
{
    char stamp[32];

    snprintf(stamp, sizeof(stamp), "%" PRId64, clk.wall_ms - ago);
    freeReplyObject(redisCommand(r, "SET %s %s", key, stamp));
}

static void reset(void)
{
    th_clock_init(&clk);
    trace[0] = '\0';
}

/* ---------------------------------------------- a. DEL after expiry */

static naive_client *race_a_p2;

static int race_a_naive_p2(actor *self)
{
    self->inner_rc = naive_del_recovery_acquire(race_a_p2, "race:a:naive", 500);
    return 0;
}

/*
 * P2 and P3 both see P1's expired stamp.  P3 is paused before its DEL;
 * P2 deletes and SETNXes; then P3 deletes P2's lock and SETNXes too.
 */
static void test_race_a_naive_del_lets_both_hold(void)
{
    redisContext *r2 = th_redis(&srv), *r3 = th_redis(&srv);
    actor p2 = ACTOR("P2"), p3 = PAUSING("P3", "DEL", race_a_naive_p2);
    naive_client n2, n3;
    char buf[64];
    int rc3;

    reset();
    n2 = naive_as(&p2, r2);
    n3 = naive_as(&p3, r3);
    race_a_p2 = &n2;
    plant_expired_stamp(r2, "race:a:naive", 1000);
    rc3 = naive_del_recovery_acquire(&n3, "race:a:naive", 500);
    CU_ASSERT_STRING_EQUAL(trace, "P3:SETNX P3:GET P2:SETNX P2:GET P2:DEL "
                                  "P2:SETNX P3:DEL P3:SETNX");
    /* The broken outcome: both hold the lock. */
    CU_ASSERT_EQUAL(p3.inner_rc, NAIVE_HELD); /* P2 */
    CU_ASSERT_EQUAL(rc3, NAIVE_HELD);
    CU_ASSERT_STRING_EQUAL(stored(r2, "race:a:naive", buf, sizeof(buf)),
                           n3.value);
    redisFree(r2);
    redisFree(r3);
}

static tslock_lock *race_a_l2;

static int race_a_lib_p2(actor *self)
{
    self->inner_rc = tslock_acquire(race_a_l2, 0);
    return 0;
}

/* The same interleaving with GETSET takeover: exactly one holds. */
static void test_race_a_getset_lets_one_hold(void)
{
    redisContext *r = th_redis(&srv);
    actor p2 = ACTOR("P2"), p3 = PAUSING("P3", "GETSET", race_a_lib_p2);
    tslock_client *c2, *c3;
    tslock_lock *l3;
    char buf[64];

    reset();
    c2 = client_as(&p2);
    c3 = client_as(&p3);
    race_a_l2 = th_stamp_lock(c2, "race:a:lib", 500);
    l3 = th_stamp_lock(c3, "race:a:lib", 500);
    plant_expired_stamp(r, "race:a:lib", 1000);

    CU_ASSERT_EQUAL(tslock_acquire(l3, 0), TSLOCK_EBUSY);
    CU_ASSERT_STRING_EQUAL(trace, "P3:SETNX P3:GET P2:SETNX P2:GET P2:GETSET "
                                  "P3:GETSET P3:EVALSHA");
    CU_ASSERT_EQUAL(p3.inner_rc, TSLOCK_OK); /* P2 won */
    CU_ASSERT_TRUE(tslock_lock_is_held(race_a_l2));
    CU_ASSERT_FALSE(tslock_lock_is_held(l3));
    /* The loser put the winner's stamp back, so the winner releases. */
    CU_ASSERT_STRING_EQUAL(stored(r, "race:a:lib", buf, sizeof(buf)),
                           tslock_lock_value(race_a_l2));
    CU_ASSERT_EQUAL(tslock_release(race_a_l2), TSLOCK_OK);

    tslock_lock_free(l3);
    tslock_lock_free(race_a_l2);
    tslock_client_free(c2);
    tslock_client_free(c3);
    redisFree(r);
}

/* ---------------------------------------------- b. the GETSET loser */

static naive_client *race_b_p5;

static int race_b_naive_p5(actor *self)
{
    self->inner_rc = naive_blind_getset_acquire(race_b_p5, "race:b:naive", 500);
    return 0;
}

/* A takeover that trusts GETSET without reading the old value. */
static void test_race_b_blind_getset_lets_both_hold(void)
{
    redisContext *r4 = th_redis(&srv), *r5 = th_redis(&srv);
    actor p4 = PAUSING("P4", "GETSET", race_b_naive_p5), p5 = ACTOR("P5");
    naive_client n4, n5;
    int rc4;

    reset();
    n4 = naive_as(&p4, r4);
    n5 = naive_as(&p5, r5);
    race_b_p5 = &n5;
    plant_expired_stamp(r4, "race:b:naive", 1000);
    rc4 = naive_blind_getset_acquire(&n4, "race:b:naive", 500);
    CU_ASSERT_STRING_EQUAL(trace, "P4:SETNX P4:GET P5:SETNX P5:GET P5:GETSET "
                                  "P4:GETSET");
    CU_ASSERT_EQUAL(p4.inner_rc, NAIVE_HELD); /* P5 */
    CU_ASSERT_EQUAL(rc4, NAIVE_HELD);         /* both hold */
    redisFree(r4);
    redisFree(r5);
}

static tslock_lock *race_b_l5;

static int race_b_lib_p5(actor *self)
{
    clk.wall_ms += 3; /* P5 comes a moment later: a later stamp */
    self->inner_rc = tslock_acquire(race_b_l5, 0);
    return 0;
}

/*
 * P4 and P5 both GETSET; P5's lands first.  P4's GETSET returns P5's
 * stamp, which lies in the future, so P4 does not hold the lock.
 */
static void test_race_b_getset_loser_does_not_hold(void)
{
    redisContext *r = th_redis(&srv);
    actor p4 = PAUSING("P4", "GETSET", race_b_lib_p5), p5 = ACTOR("P5");
    actor p6 = ACTOR("P6");
    tslock_client *c4, *c5, *c6;
    tslock_lock *l4, *l6;
    char buf[64];

    reset();
    c4 = client_as(&p4);
    c5 = client_as(&p5);
    c6 = client_as(&p6);
    l4 = th_stamp_lock(c4, "race:b:lib", 500);
    race_b_l5 = th_stamp_lock(c5, "race:b:lib", 500);
    l6 = th_stamp_lock(c6, "race:b:lib", 500);
    plant_expired_stamp(r, "race:b:lib", 1000);

    CU_ASSERT_EQUAL(tslock_acquire(l4, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(p4.inner_rc, TSLOCK_OK); /* P5 won */
    /* What P4's GETSET returned: P5's stamp, in the future. */
    CU_ASSERT_EQUAL(tslock_lock_expires_ms(l4),
                    tslock_lock_expires_ms(race_b_l5));
    CU_ASSERT_TRUE(tslock_lock_expires_ms(l4) > clk.wall_ms);
    CU_ASSERT_FALSE(tslock_lock_is_held(l4));
    /* The winner still holds it: a third client is refused... */
    CU_ASSERT_EQUAL(tslock_acquire(l6, 0), TSLOCK_EBUSY);
    /* ...and the stored stamp is the winner's, so its release works. */
    CU_ASSERT_STRING_EQUAL(stored(r, "race:b:lib", buf, sizeof(buf)),
                           tslock_lock_value(race_b_l5));
    CU_ASSERT_EQUAL(tslock_release(race_b_l5), TSLOCK_OK);

    tslock_lock_free(l4);
    tslock_lock_free(race_b_l5);
    tslock_lock_free(l6);
    tslock_client_free(c4);
    tslock_client_free(c5);
    tslock_client_free(c6);
    redisFree(r);
}

/* ------------------------------------------ c. release after expiry */

/*
 * A holds with a 1 s lease and pauses for 2 s; B takes the expired lock
 * over.  Returns B's lock; *la gets A's.
 */
static tslock_lock *c_setup(const char *key, tslock_client *ca,
                            tslock_client *cb, tslock_lock **la)
{
    tslock_lock *lb;

    *la = th_stamp_lock(ca, key, 1000);
    lb = th_stamp_lock(cb, key, 1000);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(*la, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(lb, 0), TSLOCK_EBUSY);
    th_clock_advance(&clk, 2000);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(lb, 0), TSLOCK_OK);
    return lb;
}

static void test_race_c_release_after_expiry(void)
{
    static const char *keys[] = {"race:c:del", "race:c:java", "race:c:lib"};
    redisContext *r = th_redis(&srv);
    actor a = ACTOR("A"), b = ACTOR("B");
    tslock_client *ca, *cb;
    char buf[64];
    int i;

    reset();
    ca = client_as(&a);
    cb = client_as(&b);
    for (i = 0; i < 3; i++) {
        tslock_lock *la, *lb = c_setup(keys[i], ca, cb, &la);
        naive_client na = naive_as(&a, r);

        trace[0] = '\0';
        if (i == 0) {
            /* Unconditional DEL: B's lock is gone, B does not know. */
            naive_unconditional_release(&na, keys[i]);
            CU_ASSERT_STRING_EQUAL(stored(r, keys[i], buf, sizeof(buf)),
                                   "(nil)");
        } else if (i == 1) {
            /* Java RedisLock.unlock0: B's stamp is unexpired, so DEL. */
            CU_ASSERT_EQUAL(naive_java_release(&na, keys[i]), 1);
            CU_ASSERT_STRING_EQUAL(trace, "A:GET A:DEL");
            CU_ASSERT_STRING_EQUAL(stored(r, keys[i], buf, sizeof(buf)),
                                   "(nil)");
        } else {
            /* tslock: the loss is reported, nothing is sent, B holds. */
            CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_ELOST);
            CU_ASSERT_PTR_NOT_NULL(
                strstr(tslock_client_errstr(ca), "lease ran out"));
            CU_ASSERT_STRING_EQUAL(trace, "");
            CU_ASSERT_STRING_EQUAL(stored(r, keys[i], buf, sizeof(buf)),
                                   tslock_lock_value(lb));
            CU_ASSERT_EQUAL(tslock_release(lb), TSLOCK_OK);
        }
        tslock_lock_free(la);
        tslock_lock_free(lb);
    }
    tslock_client_free(ca);
    tslock_client_free(cb);
    redisFree(r);
}

/* ------------------------------------------ d. check, then delete */

static tslock_lock *race_d_lb;

/* A has checked its stamp; now its lease runs out and B takes over. */
static int race_d_takeover(actor *self)
{
    th_clock_advance(&clk, 2000);
    self->inner_rc = tslock_acquire(race_d_lb, 0);
    return 0;
}

static void run_race_d(tslock_release_form form, const char *key,
                       const char *pause_at, const char *want_trace,
                       int want_rc, int b_survives)
{
    redisContext *r = th_redis(&srv);
    actor a = PAUSING("A", pause_at, race_d_takeover), b = ACTOR("B");
    tslock_client *ca, *cb;
    tslock_lock *la;
    char buf[64];

    reset();
    ca = client_as(&a);
    cb = client_as(&b);
    la = th_stamp_lock(ca, key, 1000);
    race_d_lb = th_stamp_lock(cb, key, 1000);
    CU_ASSERT_EQUAL(tslock_lock_set_release_form(la, form), TSLOCK_OK);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(la, 0), TSLOCK_OK);
    trace[0] = '\0';

    CU_ASSERT_EQUAL(tslock_release(la), want_rc);
    CU_ASSERT_STRING_EQUAL(trace, want_trace);
    CU_ASSERT_EQUAL(a.inner_rc, TSLOCK_OK); /* B took the expired lock */
    if (b_survives) {
        CU_ASSERT_STRING_EQUAL(stored(r, key, buf, sizeof(buf)),
                               tslock_lock_value(race_d_lb));
        CU_ASSERT_EQUAL(tslock_release(race_d_lb), TSLOCK_OK);
    } else {
        CU_ASSERT_STRING_EQUAL(stored(r, key, buf, sizeof(buf)), "(nil)");
    }
    tslock_lock_free(la);
    tslock_lock_free(race_d_lb);
    tslock_client_free(ca);
    tslock_client_free(cb);
    redisFree(r);
}

/* Classic GET-compare-DEL: A's DEL lands on B's lock and reports OK. */
static void test_race_d_classic_deletes_other(void)
{
    run_race_d(TSLOCK_RELEASE_CLASSIC, "race:d:classic", "DEL",
               "A:GET B:SETNX B:GET B:GETSET A:DEL A:PUBLISH", TSLOCK_OK, 0);
}

static void test_race_d_watch_keeps_other(void)
{
    run_race_d(TSLOCK_RELEASE_WATCH, "race:d:watch", "MULTI",
               "A:WATCH A:GET B:SETNX B:GET B:GETSET A:MULTI A:DEL A:PUBLISH "
               "A:EXEC A:WATCH A:GET A:UNWATCH",
               TSLOCK_ELOST, 1);
}

static void test_race_d_lua_keeps_other(void)
{
    run_race_d(TSLOCK_RELEASE_LUA, "race:d:lua", "EVALSHA",
               "B:SETNX B:GET B:GETSET A:EVALSHA", TSLOCK_ELOST, 1);
}

/* ------------------------------- e. crash between SETNX and EXPIRE */

static int crash(actor *self)
{
    return 1;
}

static void test_race_e_naive_crash_never_expires(void)
{
    redisContext *r = th_redis(&srv);
    actor a = PAUSING("A", "EXPIRE", crash), b = ACTOR("B");
    naive_client na, nb;
    redisReply *ttl;

    reset();
    na = naive_as(&a, r);
    nb = naive_as(&b, r);
    CU_ASSERT_EQUAL(naive_setnx_expire_acquire(&na, "race:e:naive", 1),
                    NAIVE_CRASHED);
    ttl = redisCommand(r, "TTL race:e:naive");
    CU_ASSERT_FATAL(ttl != NULL && ttl->type == REDIS_REPLY_INTEGER);
    CU_ASSERT_EQUAL(ttl->integer, -1); /* no expiry: held forever */
    freeReplyObject(ttl);
    th_clock_advance(&clk, 86400000);
    CU_ASSERT_EQUAL(naive_setnx_expire_acquire(&nb, "race:e:naive", 1),
                    NAIVE_BUSY);
    redisFree(r);
}

static void test_race_e_stamp_recovers(void)
{
    redisContext *r = th_redis(&srv);
    actor a = ACTOR("A"), b = ACTOR("B");
    tslock_client *ca, *cb;
    tslock_lock *la, *lb;
    redisReply *ttl;

    reset();
    ca = client_as(&a);
    cb = client_as(&b);
    la = th_stamp_lock(ca, "race:e:lib", 1000);
    lb = th_stamp_lock(cb, "race:e:lib", 1000);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(la, 0), TSLOCK_OK);
    /* A dies holding the lock: no release, connection gone. */
    tslock_lock_free(la);
    tslock_client_free(ca);
    ttl = redisCommand(r, "TTL race:e:lib");
    CU_ASSERT_FATAL(ttl != NULL && ttl->type == REDIS_REPLY_INTEGER);
    CU_ASSERT_EQUAL(ttl->integer, -1); /* the scheme never sets a TTL */
    freeReplyObject(ttl);
    CU_ASSERT_EQUAL(tslock_acquire(lb, 0), TSLOCK_EBUSY);
    th_clock_advance(&clk, 1002); /* the stamp passes */
    CU_ASSERT_EQUAL(tslock_acquire(lb, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(lb), TSLOCK_OK);
    tslock_lock_free(lb);
    tslock_client_free(cb);
    redisFree(r);
}

/* ------------------------------------------ tokens: f and g */

static tslock_lock *token_lock(tslock_client *c, const char *k)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, k) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN)
                    == TSLOCK_OK);
    tslock_lock_set_ttl(l, 10000);
    return l;
}

/*
 * The server ends A's lease: PEXPIRE 0 makes the key expire now, which
 * is what the TTL does once A has paused past it.
 */
static void expire_now(const char *k)
{
    redisContext *r = th_redis(&srv);
    freeReplyObject(redisCommand(r, "PEXPIRE %s 0", k));
    redisFree(r);
}

static void test_race_f_token_release_after_expiry(void)
{
    static const char *keys[] = {"race:f:del", "race:f:lib"};
    redisContext *r = th_redis(&srv);
    actor a = ACTOR("A"), b = ACTOR("B");
    tslock_client *ca, *cb;
    char buf[64];
    int i;

    reset();
    ca = client_as(&a);
    cb = client_as(&b);
    for (i = 0; i < 2; i++) {
        tslock_lock *la = token_lock(ca, keys[i]),
                    *lb = token_lock(cb, keys[i]);
        naive_client na = naive_as(&a, r);

        CU_ASSERT_EQUAL_FATAL(tslock_acquire(la, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(lb, 0), TSLOCK_EBUSY);
        expire_now(keys[i]); /* A is paused past its lease */
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(lb, 0), TSLOCK_OK);
        if (i == 0) {
            /* A's unconditional DEL deletes B's lock. */
            naive_unconditional_release(&na, keys[i]);
            CU_ASSERT_STRING_EQUAL(stored(r, keys[i], buf, sizeof(buf)),
                                   "(nil)");
        } else {
            /* tslock compares the token: A learns of the loss, B holds. */
            CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_ELOST);
            CU_ASSERT_STRING_EQUAL(stored(r, keys[i], buf, sizeof(buf)),
                                   tslock_lock_value(lb));
            CU_ASSERT_EQUAL(tslock_release(lb), TSLOCK_OK);
        }
        tslock_lock_free(la);
        tslock_lock_free(lb);
    }
    tslock_client_free(ca);
    tslock_client_free(cb);
    redisFree(r);
}

static tslock_lock *race_g_lb;
static const char *race_g_key;

/* A has seen its own token; its lease ends and B acquires. */
static int race_g_takeover(actor *self)
{
    expire_now(race_g_key);
    self->inner_rc = tslock_acquire(race_g_lb, 0);
    return 0;
}

static void run_race_g(int naive, const char *k, const char *want_trace)
{
    redisContext *r = th_redis(&srv);
    actor a = PAUSING("A", naive ? "DEL" : "EVALSHA", race_g_takeover);
    actor b = ACTOR("B");
    tslock_client *ca, *cb;
    tslock_lock *la;
    char buf[64];

    reset();
    ca = client_as(&a);
    cb = client_as(&b);
    la = token_lock(ca, k);
    race_g_lb = token_lock(cb, k);
    race_g_key = k;
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(la, 0), TSLOCK_OK);
    trace[0] = '\0';
    if (naive) {
        naive_client na = naive_as(&a, r);
        CU_ASSERT_EQUAL(naive_token_get_then_del(&na, k, tslock_lock_value(la)),
                        1);
    } else {
        CU_ASSERT_EQUAL(tslock_release(la), TSLOCK_ELOST);
    }
    CU_ASSERT_STRING_EQUAL(trace, want_trace);
    CU_ASSERT_EQUAL(a.inner_rc, TSLOCK_OK); /* B acquired in the gap */
    if (naive) {
        CU_ASSERT_STRING_EQUAL(stored(r, k, buf, sizeof(buf)), "(nil)");
    } else {
        CU_ASSERT_STRING_EQUAL(stored(r, k, buf, sizeof(buf)),
                               tslock_lock_value(race_g_lb));
        CU_ASSERT_EQUAL(tslock_release(race_g_lb), TSLOCK_OK);
    }
    tslock_lock_free(la);
    tslock_lock_free(race_g_lb);
    tslock_client_free(ca);
    tslock_client_free(cb);
    redisFree(r);
}

/* GET, compare, DEL: B's lock is deleted in the gap. */
static void test_race_g_token_get_then_del(void)
{
    run_race_g(1, "race:g:naive", "A:GET B:SET A:DEL");
}

/* One compare-and-delete script: nothing fits in between. */
static void test_race_g_token_lua(void)
{
    run_race_g(0, "race:g:lua", "B:SET A:EVALSHA");
}

/* ------------------------------------------ h. an identical stamp */

static naive_client *race_h_j1, *race_h_j2;
static tslock_lock *race_h_la;
static const char *race_h_key;

/*
 * Inside A's pause before its release: J1, whose lease ran out while it
 * stalled, releases as the Java client does (its stamp looks unexpired,
 * so DEL: A's live lock is gone), and J2 takes the free key with the
 * very stamp A holds.  Java stamps are now + lockExpires + 1, so a J2
 * with lockExpires = A's stamp - now - 1 writes A's number.
 */
static int race_h_java(actor *self)
{
    int64_t expires =
        strtoll(tslock_lock_value(race_h_la), NULL, 10) - clk.wall_ms - 1;

    CU_ASSERT_EQUAL(naive_java_release(race_h_j1, race_h_key), 1);
    self->inner_rc = naive_del_recovery_acquire(race_h_j2, race_h_key, expires);
    return 0;
}

static void run_race_h(tslock_scheme scheme, const char *key,
                       const char *want_trace, int want_rc)
{
    redisContext *r = th_redis(&srv), *r1 = th_redis(&srv),
                 *r2 = th_redis(&srv);
    actor a = ACTOR("A"), j1 = ACTOR("J1"), j2 = ACTOR("J2");
    naive_client n1 = naive_as(&j1, r1), n2 = naive_as(&j2, r2);
    tslock_client *ca;
    char buf[64], held[64];

    reset();
    ca = client_as(&a);
    race_h_la = th_stamp_lock(ca, key, 1000);
    tslock_lock_set_scheme(race_h_la, scheme);
    race_h_j1 = &n1;
    race_h_j2 = &n2;
    race_h_key = key;
    freeReplyObject(redisCommand(r, "DEL %s", key));
    /* J1 took the lock, then stalled past its 1 s lease; A took over. */
    CU_ASSERT_EQUAL(naive_del_recovery_acquire(&n1, key, 1000), NAIVE_HELD);
    th_clock_advance(&clk, 2000);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(race_h_la, 0), TSLOCK_OK);
    snprintf(held, sizeof(held), "%s", tslock_lock_value(race_h_la));
    trace[0] = '\0';
    a.at = "EVALSHA";
    a.action = race_h_java;

    CU_ASSERT_EQUAL(tslock_release(race_h_la), want_rc);
    CU_ASSERT_STRING_EQUAL(trace, want_trace);
    CU_ASSERT_EQUAL(a.inner_rc, NAIVE_HELD);
    CU_ASSERT_STRING_EQUAL(n2.value, held); /* J2 wrote A's very stamp */
    stored(r, key, buf, sizeof(buf));
    if (want_rc == TSLOCK_OK) {
        /* A's release deleted J2's lock: J2 works with no lock at all. */
        CU_ASSERT_STRING_EQUAL(buf, "(nil)");
    } else {
        /* The proof failed (no TTL): J2's lock stands. */
        CU_ASSERT_STRING_EQUAL(buf, n2.value);
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(ca), "no TTL"));
    }
    freeReplyObject(redisCommand(r, "DEL %s", key));
    tslock_lock_free(race_h_la);
    tslock_client_free(ca);
    redisFree(r);
    redisFree(r1);
    redisFree(r2);
}

/* A classic stamp proves nothing: A's release deletes J2's lock. */
static void test_race_h_timestamp_deletes_identical(void)
{
    run_race_h(TSLOCK_SCHEME_TIMESTAMP, "race:h:timestamp",
               "J1:GET J1:DEL J2:SETNX A:EVALSHA", TSLOCK_OK);
}

/* The bridge proof tells the identical stamp from A's: J2's lock stays. */
static void test_race_h_bridge_keeps_identical(void)
{
    run_race_h(TSLOCK_SCHEME_BRIDGE, "race:h:bridge",
               "J1:GET J1:DEL J2:SETNX A:EVALSHA", TSLOCK_ELOST);
}

/* ----------------------------------- the replay table (tslock replay) */

static redisContext *table_raw(void *ud)
{
    return th_redis(&srv);
}

static tslock_client *table_client(void *ud)
{
    return th_client(&srv);
}

/*
 * Every entry of the table `tslock replay` narrates, run through the same
 * code, must end as doc/races.md documents: the broken scheme with its
 * bad outcome, tslock with the good one, each in the documented command
 * order.  So the tool cannot drift from these tests.
 */
static void test_replay_table_matches_documented_outcomes(void)
{
    size_t i;

    CU_ASSERT_TRUE(n_races > 0);
    for (i = 0; i < n_races; i++) {
        const race *r = &races[i];
        race_env env = {table_raw, table_client, NULL, NULL, 0, 0};
        race_side sides[2];
        char key[64];

        th_clock_init(&clk);
        env.wall_ms = clk.wall_ms;
        env.mono_ms = clk.mono_ms;
        snprintf(key, sizeof(key), "race:table:%s", r->id);
        /* race_play() is what `tslock replay` and its page run. */
        CU_ASSERT_EQUAL(race_play(r, &env, key, sides), 0);
        CU_ASSERT_EQUAL(race_holders(&sides[0].res), r->broken_holders);
        CU_ASSERT_STRING_EQUAL(sides[0].res.trace, r->broken_trace);
        CU_ASSERT_EQUAL(race_holders(&sides[1].res), r->tslock_holders);
        CU_ASSERT_STRING_EQUAL(sides[1].res.trace, r->tslock_trace);
        /* The step each side is decided at was narrated. */
        CU_ASSERT_TRUE(sides[0].documented && sides[1].documented);
        CU_ASSERT_TRUE(sides[0].mark >= 0 && sides[1].mark >= 0);
    }
    CU_ASSERT_PTR_NOT_NULL(race_find("a"));
    CU_ASSERT_PTR_NULL(race_find("zz"));
}

/* The data of a page written from sides, in a string of its own. */
static char *page_of(const race *r, race_side sides[2])
{
    classroom_step steps[2][RACE_MAX_STEPS];
    classroom_scene sc;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int k, i;

    memset(&sc, 0, sizeof(sc));
    sc.id = r->id;
    sc.title = r->title;
    sc.doc = r->doc_anchor;
    sc.n_sides = 2;
    for (k = 0; k < 2; k++) {
        for (i = 0; i < sides[k].n_steps; i++) {
            steps[k][i].actor = sides[k].steps[i].actor;
            steps[k][i].command = sides[k].steps[i].command;
            steps[k][i].value = sides[k].steps[i].value;
            steps[k][i].note = NULL;
            steps[k][i].pttl = sides[k].steps[i].pttl;
            steps[k][i].clock_ms = sides[k].steps[i].clock_ms;
        }
        sc.sides[k].label = k == 0 ? r->broken : r->fixed;
        sc.sides[k].start_ms = sides[k].start_ms;
        sc.sides[k].verdict = sides[k].verdict;
        sc.sides[k].broken = k == 0;
        sc.sides[k].documented = sides[k].documented;
        sc.sides[k].mismatch = sides[k].mismatch;
        sc.sides[k].mark = sides[k].mark;
        sc.sides[k].steps = steps[k];
        sc.sides[k].n_steps = sides[k].n_steps;
    }
    if (f == NULL)
        return NULL;
    classroom_write(f, r->title, "", "test_races", &sc, 1);
    fclose(f);
    return buf;
}

/*
 * The page cannot drift from the table either.  A throwaway copy of the
 * table, with one documented outcome changed (race a's broken scheme
 * said to leave one holder), must make race_play() report the mismatch
 * that fails the test above, and the page, drawn from the same run, must
 * show the real outcome (both hold) and flag the side as not documented:
 * page and table disagree, visibly, on both ends.
 */
static void test_page_and_table_cannot_disagree_silently(void)
{
    race copy = *race_find("a");
    race_env env = {table_raw, table_client, NULL, NULL, 0, 0};
    race_side sides[2];
    char *page;

    copy.broken_holders = 1; /* the change: the run still shows 2 */
    th_clock_init(&clk);
    env.wall_ms = clk.wall_ms;
    env.mono_ms = clk.mono_ms;
    CU_ASSERT_EQUAL(race_play(&copy, &env, "race:table:copy", sides), 1);
    CU_ASSERT_FALSE(sides[0].documented);
    CU_ASSERT_PTR_NOT_NULL(strstr(sides[0].mismatch, "documented 1"));
    CU_ASSERT_TRUE(sides[1].documented);
    page = page_of(&copy, sides);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "\"documented\":false"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(page, "both P2 and P3 hold the lock - mutual exclusion lost"));
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "2 holders at the end, documented 1"));
    free(page);

    /* And the table as it is: documented on both sides, on the page too. */
    th_clock_init(&clk);
    env.wall_ms = clk.wall_ms;
    env.mono_ms = clk.mono_ms;
    CU_ASSERT_EQUAL(race_play(race_find("a"), &env, "race:table:a", sides), 0);
    page = page_of(race_find("a"), sides);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NULL(strstr(page, "\"documented\":false"));
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "\"mark\":8"));
    free(page);
}

/* ------------------------------------ the dialects' hazards (o, p, q) */

/*
 * A Ruby or PHP timestamp lock of the libraries tslock's dialects name,
 * written from their documented algorithm over raw hiredis: SETNX of the
 * stamp; else GET, read with to_f (nil and "" read as 0.0, expired, in
 * the blind libraries: redis-objects, the redis-lock gem, PredisLock);
 * if expired, GETSET and hold when the old value reads as expired too.
 * stamp: the value to write, made by the caller (the redis-lock gem makes
 * it once, before its retries).  Returns 1 when it holds.
 */
static int ruby_try(redisContext *r, actor *a, const char *key,
                    const char *stamp)
{
    redisReply *reply;
    double now = (double)clk.wall_ms / 1000.0, old;
    int won;

    actor_step(a, "SETNX");
    reply = redisCommand(r, "SETNX %s %s", key, stamp);
    won = reply != NULL && reply->type == REDIS_REPLY_INTEGER
          && reply->integer == 1;
    freeReplyObject(reply);
    if (won)
        return 1;
    actor_step(a, "GET");
    reply = redisCommand(r, "GET %s", key);
    old = reply != NULL && reply->type == REDIS_REPLY_STRING
              ? strtod(reply->str, NULL)
              : 0.0; /* nil.to_f */
    freeReplyObject(reply);
    if (old >= now)
        return 0;
    actor_step(a, "GETSET");
    reply = redisCommand(r, "GETSET %s %s", key, stamp);
    old = reply != NULL && reply->type == REDIS_REPLY_STRING
              ? strtod(reply->str, NULL)
              : 0.0;
    freeReplyObject(reply);
    return old < now;
}

/* redis-objects' stamp: (Time.now + expiration + 1).to_f. */
static const char *objects_stamp(char *buf, size_t size, int64_t ttl_ms)
{
    snprintf(buf, size, "%.7f", (double)(clk.wall_ms + ttl_ms) / 1000.0 + 1.0);
    return buf;
}

/* Whether a legacy stamp still holds by the shared clock (to_f). */
static int stamp_live(redisContext *r, const char *key)
{
    char buf[128];

    return strtod(stored(r, key, buf, sizeof(buf)), NULL)
           >= (double)clk.wall_ms / 1000.0;
}

static redisContext *hz_r;
static const char *hz_key;
static int64_t hz_t2_end; /* T2's lease end, ms */

/* H, the holder, releases (DEL) right after the waiter's SETNX failed. */
static int hz_h_releases(actor *self)
{
    (void)self;
    actor_step(&(actor)ACTOR("H"), "DEL");
    freeReplyObject(redisCommand(hz_r, "DEL %s", hz_key));
    return 0;
}

/* T2 takes the free key with SETNX: a fresh holder for 10 s. */
static int hz_t2_takes(actor *self)
{
    char stamp[64];
    redisReply *reply;

    actor_step(&(actor)ACTOR("T2"), "SETNX");
    reply = redisCommand(hz_r, "SETNX %s %s", hz_key,
                         objects_stamp(stamp, sizeof(stamp), 10000));
    self->inner_rc = reply != NULL && reply->integer == 1;
    freeReplyObject(reply);
    hz_t2_end = clk.wall_ms + 10000;
    return 0;
}

/* Race o's waiter pauses twice: H releases, then T2 takes the key. */
static int hz_o_first(actor *self)
{
    hz_h_releases(self);
    self->at = "GETSET"; /* re-armed for the second pause */
    self->action = hz_t2_takes;
    self->fired = 0;
    return 0;
}

/*
 * o. The blind GETSET after an empty GET.  L (redis-objects, lease 1 s)
 * finds H's lock; H releases before L's GET, so L reads nil as 0.0,
 * expired; T2 takes the free key for 10 s; L's GETSET returns T2's live
 * stamp, so L does not hold, but its own 1 s stamp is now on the key.
 * Three seconds later C takes that stamp over while T2's lease runs:
 * two holders.  tslock in L's place reads the empty key as released and
 * tries SETNX again, which T2's stamp refuses; C finds T2's stamp live.
 */
static void test_race_o_blind_getset_after_empty_get(void)
{
    redisContext *r = th_redis(&srv), *r2 = th_redis(&srv);
    actor l = PAUSING("L", "GET", hz_o_first), c = ACTOR("C");
    char stamp[64], buf[128];
    int held_l, held_c;

    reset();
    hz_r = r2;
    hz_key = "race:o:legacy";
    freeReplyObject(redisCommand(r, "SET %s %s", hz_key,
                                 objects_stamp(stamp, sizeof(stamp), 10000)));
    held_l = ruby_try(r, &l, hz_key, objects_stamp(stamp, sizeof(stamp), 1000));
    CU_ASSERT_EQUAL(l.inner_rc, 1); /* T2 took the free key */
    CU_ASSERT_EQUAL(held_l, 0);     /* T2's stamp was live: L lost... */
    /* ...but its GETSET put its own 1 s stamp over T2's. */
    CU_ASSERT_STRING_EQUAL(stored(r, hz_key, buf, sizeof(buf)), stamp);
    th_clock_advance(&clk, 3000);
    held_c = ruby_try(r, &c, hz_key, objects_stamp(buf, sizeof(buf), 1000));
    CU_ASSERT_STRING_EQUAL(trace, "L:SETNX H:DEL L:GET T2:SETNX L:GETSET "
                                  "C:SETNX C:GET C:GETSET");
    /* The broken outcome: T2's lease runs, and C holds too. */
    CU_ASSERT_TRUE(clk.wall_ms < hz_t2_end);
    CU_ASSERT_EQUAL(held_c, 1);
    redisFree(r);
    redisFree(r2);
}

static int hz_t2_takes_lib(actor *self)
{
    static int n;

    /* tslock's second SETNX: right after it read the empty key. */
    if (n++ == 1)
        return hz_t2_takes(self);
    return 0;
}

static int lib_hook_o(tslock_client *c, tslock_step step, const char *key,
                      void *ud)
{
    actor *a = ud;
    const char *name = tslock_step_name(step);

    (void)c;
    (void)key;
    if (strcmp(name, "GET") == 0 && !a->fired) {
        a->fired = 1;
        hz_h_releases(a);
    } else if (strcmp(name, "SETNX") == 0) {
        hz_t2_takes_lib(a);
    }
    return actor_step(&(actor)ACTOR("L"), name);
}

static void test_race_o_tslock_retries_setnx(void)
{
    redisContext *r = th_redis(&srv), *rc_ = th_redis(&srv);
    actor l = ACTOR("L"), c = ACTOR("C");
    tslock_client *cl = th_client(&srv);
    tslock_lock *lock = NULL;
    char stamp[64], buf[128], t2[128];

    reset();
    hz_r = rc_;
    hz_key = "race:o:tslock";
    freeReplyObject(redisCommand(r, "SET %s %s", hz_key,
                                 objects_stamp(stamp, sizeof(stamp), 10000)));
    tslock_client_set_clock(cl, th_clock_fn, &clk);
    tslock_client_set_step_hook(cl, lib_hook_o, &l);
    CU_ASSERT_FATAL(tslock_lock_new(&lock, cl, hz_key) == TSLOCK_OK);
    tslock_lock_set_scheme(lock, TSLOCK_SCHEME_TIMESTAMP);
    tslock_lock_set_dialect(lock, "redis-objects");
    tslock_lock_set_ttl(lock, 1000);
    CU_ASSERT_EQUAL(tslock_acquire(lock, 0), TSLOCK_EBUSY);
    CU_ASSERT_STRING_EQUAL(trace, "L:SETNX H:DEL L:GET T2:SETNX L:SETNX L:GET");
    /* T2's stamp is untouched, and C finds it live three seconds on. */
    stored(r, hz_key, t2, sizeof(t2));
    CU_ASSERT_TRUE(stamp_live(r, hz_key));
    th_clock_advance(&clk, 3000);
    CU_ASSERT_EQUAL(
        ruby_try(r, &c, hz_key, objects_stamp(buf, sizeof(buf), 1000)), 0);
    CU_ASSERT_STRING_EQUAL(stored(r, hz_key, buf, sizeof(buf)), t2);
    tslock_lock_free(lock);
    tslock_client_free(cl);
    redisFree(r);
    redisFree(rc_);
}

/*
 * p. The stale stamp written after a wait.  G (the redis-lock gem, lease
 * 2 s) makes its stamp "S-PID-TID" once, then waits for H (lease 5 s),
 * who crashes.  Seven seconds on, G takes H's expired stamp over with
 * the stamp it made at the start, which expired four seconds ago, so C
 * takes G's lock over at once: two holders.  tslock in G's place makes a
 * new stamp for every try, and C finds it live.
 */
static void gem_stamp(char *buf, size_t size, int64_t ttl_ms)
{
    snprintf(buf, size, "%" PRId64 "-4242-77",
             clk.wall_ms / 1000 + (ttl_ms + 999) / 1000 + 1);
}

static void test_race_p_stale_stamp_after_wait(void)
{
    redisContext *r = th_redis(&srv);
    actor g = ACTOR("G"), c = ACTOR("C");
    char h[64], gs[64], cs[64];
    int held_g, held_c;

    reset();
    gem_stamp(h, sizeof(h), 5000);
    freeReplyObject(redisCommand(r, "SET race:p:legacy %s", h)); /* H */
    gem_stamp(gs, sizeof(gs), 2000); /* made once, before the retries */
    CU_ASSERT_EQUAL(ruby_try(r, &g, "race:p:legacy", gs), 0);
    th_clock_advance(&clk, 7000); /* H crashed: its stamp runs out */
    held_g = ruby_try(r, &g, "race:p:legacy", gs);
    gem_stamp(cs, sizeof(cs), 2000);
    held_c = ruby_try(r, &c, "race:p:legacy", cs);
    CU_ASSERT_STRING_EQUAL(trace, "G:SETNX G:GET G:SETNX G:GET G:GETSET "
                                  "C:SETNX C:GET C:GETSET");
    CU_ASSERT_EQUAL(held_g, 1);
    CU_ASSERT_EQUAL(held_c, 1); /* both hold: G's stamp was already stale */
    redisFree(r);
}

static void test_race_p_tslock_fresh_stamp(void)
{
    redisContext *r = th_redis(&srv);
    actor g = ACTOR("G"), c = ACTOR("C");
    tslock_client *cl = client_as(&g);
    tslock_lock *lock = NULL;
    char h[64], cs[64];

    reset();
    gem_stamp(h, sizeof(h), 5000);
    freeReplyObject(redisCommand(r, "SET race:p:tslock %s", h)); /* H */
    CU_ASSERT_FATAL(tslock_lock_new(&lock, cl, "race:p:tslock") == TSLOCK_OK);
    tslock_lock_set_scheme(lock, TSLOCK_SCHEME_TIMESTAMP);
    tslock_lock_set_dialect(lock, "redis-lock-gem");
    tslock_lock_set_ttl(lock, 2000);
    CU_ASSERT_EQUAL(tslock_acquire(lock, 0), TSLOCK_EBUSY);
    th_clock_advance(&clk, 7000);
    CU_ASSERT_EQUAL(tslock_acquire(lock, 0), TSLOCK_OK); /* a new stamp */
    gem_stamp(cs, sizeof(cs), 2000);
    CU_ASSERT_EQUAL(ruby_try(r, &c, "race:p:tslock", cs), 0);
    CU_ASSERT_STRING_EQUAL(trace, "G:SETNX G:GET G:SETNX G:GET G:GETSET "
                                  "C:SETNX C:GET");
    CU_ASSERT_EQUAL(tslock_release(lock), TSLOCK_OK);
    tslock_lock_free(lock);
    tslock_client_free(cl);
    redisFree(r);
}

/*
 * q. redis-objects 1.4.2's mixed fleet.  N (1.4.2) takes the lock with
 * SET key "" PX 10000 NX; O (1.4.1) reads "" with to_f as 0.0, expired,
 * and its GETSET returns "", 0.0 again: both hold.  tslock's bridge in
 * N's place writes a stamp O reads as live, with a TTL of its own; and a
 * tslock client reading "" in the redis-objects dialect never takes it.
 */
static void test_race_q_empty_value_read_as_expired(void)
{
    redisContext *r = th_redis(&srv);
    actor n = ACTOR("N"), o = ACTOR("O");
    redisReply *reply;
    char os[64];
    int held_n;

    reset();
    actor_step(&n, "SET");
    reply = redisCommand(r, "SET race:q:legacy %s PX 10000 NX", "");
    held_n = reply != NULL && reply->type == REDIS_REPLY_STATUS;
    freeReplyObject(reply);
    CU_ASSERT_EQUAL(held_n, 1);
    CU_ASSERT_EQUAL(
        ruby_try(r, &o, "race:q:legacy", objects_stamp(os, sizeof(os), 10000)),
        1); /* both hold */
    CU_ASSERT_STRING_EQUAL(trace, "N:SET O:SETNX O:GET O:GETSET");
    redisFree(r);
}

static void test_race_q_bridge_stamp_read_as_live(void)
{
    redisContext *r = th_redis(&srv);
    actor n = ACTOR("N"), o = ACTOR("O"), t = ACTOR("T");
    tslock_client *cn = client_as(&n), *ct = client_as(&t);
    tslock_lock *ln = NULL, *lt = NULL;
    char os[64];

    reset();
    CU_ASSERT_FATAL(tslock_lock_new(&ln, cn, "race:q:tslock") == TSLOCK_OK);
    tslock_lock_set_scheme(ln, TSLOCK_SCHEME_BRIDGE);
    tslock_lock_set_dialect(ln, "redis-objects");
    tslock_lock_set_ttl(ln, 10000);
    CU_ASSERT_EQUAL(tslock_acquire(ln, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(
        ruby_try(r, &o, "race:q:tslock", objects_stamp(os, sizeof(os), 10000)),
        0); /* O reads a live stamp */
    CU_ASSERT_EQUAL(tslock_release(ln), TSLOCK_OK);
    /* A tslock client meeting 1.4.2's "" never reads it as expired. */
    freeReplyObject(redisCommand(r, "SET race:q:tslock %s PX 10000", ""));
    CU_ASSERT_FATAL(tslock_lock_new(&lt, ct, "race:q:tslock") == TSLOCK_OK);
    tslock_lock_set_scheme(lt, TSLOCK_SCHEME_TIMESTAMP);
    tslock_lock_set_dialect(lt, "redis-objects");
    CU_ASSERT_EQUAL(tslock_acquire(lt, 0), TSLOCK_EUNREADABLE);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(ct), "empty value"));
    tslock_lock_free(ln);
    tslock_lock_free(lt);
    tslock_client_free(cn);
    tslock_client_free(ct);
    redisFree(r);
}

/*
 * n. the repeated run: H1's job ends 2 s before H2's timer fires.  A plain
 * release lets H2 take the lock and run the job again (two runs, each
 * under a correct lock); tslock_release_after() with a 5 s minimum leaves
 * the key with the 4 s that are left, so H2 finds it held.  The order is
 * the step hook's trace; the page draws both sides as a frame.
 */
static void test_repeated_run(void)
{
    race_env env = {table_raw, table_client, NULL, NULL, 0, 0};
    const race *r = race_find("n");
    race_side sides[2];
    char *page;
    int i, shortened = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    th_clock_init(&clk);
    env.wall_ms = clk.wall_ms;
    env.mono_ms = clk.mono_ms;
    CU_ASSERT_EQUAL(race_play(r, &env, "race:n", sides), 0);
    /* Broken: both ran; H2's SET found no key after H1's release. */
    CU_ASSERT_TRUE(sides[0].res.holds[0] && sides[0].res.holds[1]);
    CU_ASSERT_STRING_EQUAL(sides[0].res.trace, "H1:SET H1:EVALSHA H2:SET");
    /* Fixed: H1's EVALSHA shortened the lease to what is left of 5 s. */
    CU_ASSERT_TRUE(sides[1].res.holds[0] && !sides[1].res.holds[1]);
    for (i = 0; i < sides[1].n_steps; i++)
        if (strcmp(sides[1].steps[i].actor, "H1") == 0
            && strcmp(sides[1].steps[i].command, "EVALSHA") == 0)
            shortened =
                sides[1].steps[i].pttl > 3000 && sides[1].steps[i].pttl <= 4000;
    CU_ASSERT_TRUE(shortened);
    CU_ASSERT_PTR_NOT_NULL(strstr(sides[0].verdict, "ran twice"));
    CU_ASSERT_PTR_NOT_NULL(strstr(sides[1].verdict, "only H1 ran the job"));
    page = page_of(r, sides);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NULL(strstr(page, "\"documented\":false"));
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "finds it held: the job ran"));
    free(page);
}

int main(void)
{
    CU_pSuite s;

    if (th_server_start(&srv, NULL) != 0)
        return 1;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("races", NULL, NULL);
    CU_add_test(s, "a. naive DEL recovery: both hold",
                test_race_a_naive_del_lets_both_hold);
    CU_add_test(s, "a. GETSET takeover: exactly one holds",
                test_race_a_getset_lets_one_hold);
    CU_add_test(s, "b. blind GETSET: both hold",
                test_race_b_blind_getset_lets_both_hold);
    CU_add_test(s, "b. GETSET loser sees a future stamp",
                test_race_b_getset_loser_does_not_hold);
    CU_add_test(s, "c. release after expiry: DEL, Java, tslock",
                test_race_c_release_after_expiry);
    CU_add_test(s, "d. classic GET-compare-DEL deletes B's lock",
                test_race_d_classic_deletes_other);
    CU_add_test(s, "d. WATCH release keeps B's lock",
                test_race_d_watch_keeps_other);
    CU_add_test(s, "d. Lua release keeps B's lock",
                test_race_d_lua_keeps_other);
    CU_add_test(s, "e. naive SETNX+EXPIRE crash: never expires",
                test_race_e_naive_crash_never_expires);
    CU_add_test(s, "e. timestamp lock recovers after a crash",
                test_race_e_stamp_recovers);
    CU_add_test(s, "f. token release after expiry: DEL, tslock",
                test_race_f_token_release_after_expiry);
    CU_add_test(s, "g. token GET, then DEL deletes B's lock",
                test_race_g_token_get_then_del);
    CU_add_test(s, "g. token Lua compare-and-delete keeps B's lock",
                test_race_g_token_lua);
    CU_add_test(s, "h. identical stamp: timestamp release deletes it",
                test_race_h_timestamp_deletes_identical);
    CU_add_test(s, "h. identical stamp: bridge proof keeps it",
                test_race_h_bridge_keeps_identical);
    CU_add_test(s,
                "n. repeated run: a plain release runs the job twice, "
                "release_after once",
                test_repeated_run);
    CU_add_test(s, "o. blind GETSET after an empty GET: two holders",
                test_race_o_blind_getset_after_empty_get);
    CU_add_test(s, "o. tslock reads an empty key as released, not expired",
                test_race_o_tslock_retries_setnx);
    CU_add_test(s, "p. stale stamp written after a wait: two holders",
                test_race_p_stale_stamp_after_wait);
    CU_add_test(s, "p. tslock writes a new stamp for every try",
                test_race_p_tslock_fresh_stamp);
    CU_add_test(s, "q. redis-objects 1.4.2's \"\" read as expired: two holders",
                test_race_q_empty_value_read_as_expired);
    CU_add_test(s, "q. a bridge stamp is read as live; \"\" is never taken",
                test_race_q_bridge_stamp_read_as_live);
    CU_add_test(s, "the replay table matches the documented outcomes",
                test_replay_table_matches_documented_outcomes);
    CU_add_test(s, "a changed outcome shows on the page and fails the table",
                test_page_and_table_cannot_disagree_silently);
    {
        int rc = th_run_all();
        th_server_stop(&srv);
        return rc;
    }
}
