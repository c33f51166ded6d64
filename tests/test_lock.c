/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lock.c - the timestamp lock against a real redis-server: acquire,
 * busy, release, lost, the three stamp units, values it cannot read,
 * wrong types, keys that vanish between steps, waiting, cancel, fencing
 * and the argument checks.
 */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static th_server srv;
static th_clock clk;
static redisContext *raw;

static tslock_client *clocked_client(void)
{
    tslock_client *c = th_client(&srv);

    th_clock_init(&clk);
    tslock_client_set_clock(c, th_clock_fn, &clk);
    return c;
}

static redisReply *raw_cmd(const char *fmt, const char *key, const char *arg)
{
    redisReply *r = redisCommand(raw, fmt, key, arg);

    CU_ASSERT_FATAL(r != NULL);
    return r;
}

static void raw_do(const char *fmt, const char *key, const char *arg)
{
    freeReplyObject(raw_cmd(fmt, key, arg));
}

/* Whether key holds exactly want (NULL: absent). */
static int holds(const char *key, const char *want)
{
    redisReply *r = raw_cmd("GET %s", key, NULL);
    int ok = want == NULL
                 ? r->type == REDIS_REPLY_NIL
                 : r->type == REDIS_REPLY_STRING && strcmp(r->str, want) == 0;

    if (!ok)
        fprintf(stderr, "  %s holds %s, wanted %s\n", key,
                r->type == REDIS_REPLY_STRING ? r->str : "(not a string)",
                want ? want : "(nil)");
    freeReplyObject(r);
    return ok;
}

/* ------------------------------------------------------------ basics */

static void test_acquire_busy_release(void)
{
    tslock_client *c1 = clocked_client(), *c2 = th_client(&srv);
    tslock_lock *a, *b;
    redisReply *ttl;

    tslock_client_set_clock(c2, th_clock_fn, &clk);
    a = th_stamp_lock(c1, "lock:basic", 30000);
    b = th_stamp_lock(c2, "lock:basic", 30000);
    CU_ASSERT_EQUAL(tslock_lock_scheme_used(a), TSLOCK_SCHEME_AUTO);
    CU_ASSERT_EQUAL(tslock_acquire(a, 0), TSLOCK_OK);
    CU_ASSERT_TRUE(tslock_lock_is_held(a));
    CU_ASSERT_EQUAL(tslock_lock_scheme_used(a), TSLOCK_SCHEME_TIMESTAMP);
    /* The Java RedisLock stamp: now + lease + 1, in milliseconds. */
    CU_ASSERT_STRING_EQUAL(tslock_lock_value(a), "1700000030001");
    CU_ASSERT_EQUAL(tslock_lock_expires_ms(a), INT64_C(1700000030001));
    CU_ASSERT_TRUE(holds("lock:basic", "1700000030001"));
    ttl = raw_cmd("TTL %s", "lock:basic", NULL);
    CU_ASSERT_EQUAL(ttl->integer, -1); /* never a TTL in this scheme */
    freeReplyObject(ttl);

    CU_ASSERT_EQUAL(tslock_acquire(a, 0), TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_lock_expires_ms(b), INT64_C(1700000030001));
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c2), "held until"));
    CU_ASSERT_PTR_NULL(tslock_lock_value(b));

    CU_ASSERT_EQUAL(tslock_release(a), TSLOCK_OK);
    CU_ASSERT_FALSE(tslock_lock_is_held(a));
    CU_ASSERT_TRUE(holds("lock:basic", NULL));
    CU_ASSERT_EQUAL(tslock_release(a), TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

/*
 * The token scheme's acquire, busy and release: a second client's try on
 * a held key is EBUSY, holds nothing and leaves the holder's token; the
 * key is free after the release.
 */
static void test_token_busy(void)
{
    tslock_client *c1 = th_client(&srv), *c2 = th_client(&srv);
    tslock_lock *a = NULL, *b = NULL;
    char token[64];

    CU_ASSERT_FATAL(tslock_lock_new(&a, c1, "lock:tokbusy") == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_new(&b, c2, "lock:tokbusy") == TSLOCK_OK);
    tslock_lock_set_scheme(a, TSLOCK_SCHEME_TOKEN);
    tslock_lock_set_scheme(b, TSLOCK_SCHEME_TOKEN);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(a, 0), TSLOCK_OK);
    snprintf(token, sizeof(token), "%s", tslock_lock_value(a));
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_EBUSY);
    CU_ASSERT_FALSE(tslock_lock_is_held(b));
    CU_ASSERT_TRUE(holds("lock:tokbusy", token));
    CU_ASSERT_EQUAL(tslock_release(a), TSLOCK_OK);
    CU_ASSERT_TRUE(holds("lock:tokbusy", NULL));
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

/*
 * An extend of a token lock another owner took is refused (ELOST) and
 * leaves that owner's lease as it was: nothing renews a key not ours.
 */
static void test_token_extend_taken(void)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;
    redisReply *ttl;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "lock:tokext") == TSLOCK_OK);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN);
    tslock_lock_set_ttl(l, 600);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    raw_do("SET %s %s PX 5000", "lock:tokext", "another-owner");
    CU_ASSERT_EQUAL(tslock_extend(l, 60000), TSLOCK_ELOST);
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    CU_ASSERT_TRUE(holds("lock:tokext", "another-owner"));
    ttl = raw_cmd("PTTL %s", "lock:tokext", NULL);
    CU_ASSERT_TRUE(ttl->integer > 0 && ttl->integer <= 5000);
    freeReplyObject(ttl);
    raw_do("DEL %s", "lock:tokext", NULL);
    tslock_lock_free(l);
    tslock_client_free(c);
}

static void test_units_written(void)
{
    static const struct {
        tslock_unit unit;
        int64_t ttl;
        const char *want;
        int64_t lease_end; /* the last ms every legacy reader grants */
    } cases[] = {
        {TSLOCK_UNIT_MS, 1500, "1700000001501", 1700000001501},
        /* 1700000000 + 2 + 1, valid through its last millisecond */
        {TSLOCK_UNIT_S, 1500, "1700000003", 1700000003999},
        /* redis-py: expired once time.time() passes 1700000001.500 */
        {TSLOCK_UNIT_FLOAT, 1500, "1700000001.500", 1700000001499},
    };
    tslock_client *c = clocked_client();
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tslock_lock *l = th_stamp_lock(c, "lock:units", cases[i].ttl);
        CU_ASSERT_EQUAL(tslock_lock_set_unit(l, cases[i].unit), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_TRUE(holds("lock:units", cases[i].want));
        CU_ASSERT_EQUAL(tslock_lock_expires_ms(l), cases[i].lease_end);
        CU_ASSERT_EQUAL(tslock_lock_set_unit(l, TSLOCK_UNIT_MS), TSLOCK_ESTATE);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        tslock_lock_free(l);
    }
    tslock_client_free(c);
}

/*
 * A host whose clock reads 1970 (booted without its clock) must not write
 * a stamp: every client would read it as unreadable and never take the
 * lock over.  Both stamp schemes refuse, and the key stays free.
 */
static void test_clock_before_2000(void)
{
    static const tslock_scheme schemes[] = {TSLOCK_SCHEME_TIMESTAMP,
                                            TSLOCK_SCHEME_BRIDGE};
    tslock_client *c = clocked_client();
    size_t i;

    clk.wall_ms = 86400000; /* 1970-01-02 */
    for (i = 0; i < 2; i++) {
        tslock_lock *l = th_stamp_lock(c, "lock:1970", 1500);
        tslock_lock_set_scheme(l, schemes[i]);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_ECLOCK);
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "before 2000"));
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_TRUE(holds("lock:1970", NULL));
        tslock_lock_free(l);
    }
    tslock_client_free(c);
}

/* Legacy stamps in each unit are read, and taken over once expired. */
static void test_legacy_stamps_read(void)
{
    static const struct {
        tslock_unit unit;
        const char *live, *expired;
    } cases[] = {
        {TSLOCK_UNIT_MS, "1700000000500", "1699999999999"},
        {TSLOCK_UNIT_S, "1700000001", "1699999999"},
        {TSLOCK_UNIT_FLOAT, "1700000000.25", "1699999999.75"},
    };
    tslock_client *c = clocked_client();
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tslock_lock *l = th_stamp_lock(c, "lock:legacy", 1000);
        tslock_lock_set_unit(l, cases[i].unit);
        raw_do("SET %s %s", "lock:legacy", cases[i].live);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EBUSY);
        CU_ASSERT_TRUE(holds("lock:legacy", cases[i].live));
        raw_do("SET %s %s", "lock:legacy", cases[i].expired);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_TRUE(holds("lock:legacy", tslock_lock_value(l)));
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        tslock_lock_free(l);
    }
    tslock_client_free(c);
}

/* ------------------------------------------------ values it cannot read */

static void test_unreadable_never_taken(void)
{
    static const struct {
        tslock_unit unit;
        const char *value, *reason;
    } cases[] = {
        {TSLOCK_UNIT_MS, "hello", "decimal digit"},
        {TSLOCK_UNIT_MS, "", "empty"},
        {TSLOCK_UNIT_MS, "1700000000 ", "after the number"},
        /* A seconds stamp read as ms lies in 1970: not "expired". */
        {TSLOCK_UNIT_MS, "1600000000", "before the year 2000"},
        /* A ms stamp read as seconds lies far ahead. */
        {TSLOCK_UNIT_S, "1600000000000", "after the year 2100"},
        {TSLOCK_UNIT_S, "1600000000.5", "fraction"},
        {TSLOCK_UNIT_FLOAT, "1.6e9", "after the number"},
    };
    tslock_client *c = clocked_client();
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tslock_lock *l = th_stamp_lock(c, "lock:unreadable", 1000);
        tslock_lock_set_unit(l, cases[i].unit);
        raw_do("SET %s %s", "lock:unreadable", cases[i].value);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EUNREADABLE);
        CU_ASSERT_PTR_NOT_NULL(
            strstr(tslock_client_errstr(c), cases[i].reason));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(tslock_client_errstr(c), "never taken over"));
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_TRUE(holds("lock:unreadable", cases[i].value));
        /* Waiting (on the real clocks) does not change the verdict. */
        tslock_client_set_clock(c, NULL, NULL);
        tslock_lock_set_retry(l, 1, 2);
        CU_ASSERT_EQUAL(tslock_acquire(l, 20), TSLOCK_EUNREADABLE);
        tslock_client_set_clock(c, th_clock_fn, &clk);
        CU_ASSERT_TRUE(holds("lock:unreadable", cases[i].value));
        tslock_lock_free(l);
    }
    tslock_client_free(c);
}

/*
 * A key that is not a string is reported in every scheme, at once even
 * when waiting (there is nothing to wait for), and never written to.
 */
static void test_wrong_type(void)
{
    static const tslock_scheme schemes[] = {
        TSLOCK_SCHEME_TIMESTAMP, TSLOCK_SCHEME_BRIDGE, TSLOCK_SCHEME_TOKEN,
        TSLOCK_SCHEME_AUTO};
    tslock_client *c = clocked_client();
    redisReply *r;
    size_t i;

    for (i = 0; i < 4; i++) {
        tslock_lock *l = th_stamp_lock(c, "lock:list", 1000);
        tslock_lock_set_scheme(l, schemes[i]);
        raw_do("DEL %s", "lock:list", NULL);
        raw_do("RPUSH %s %s", "lock:list", "precious");
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EWRONGTYPE);
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "WRONGTYPE"));
        CU_ASSERT_EQUAL(tslock_acquire(l, TSLOCK_WAIT_FOREVER),
                        TSLOCK_EWRONGTYPE);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        r = raw_cmd("LRANGE %s 0 -1", "lock:list", NULL);
        CU_ASSERT_EQUAL(r->elements, 1);
        CU_ASSERT_STRING_EQUAL(r->element[0]->str, "precious");
        freeReplyObject(r);
        CU_ASSERT_FALSE(tslock_client_is_broken(c));

        /* A held key replaced by a list: release reports, deletes nothing. */
        raw_do("DEL %s", "lock:list", NULL);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        raw_do("DEL %s", "lock:list", NULL);
        raw_do("RPUSH %s %s", "lock:list", "precious");
        CU_ASSERT_EQUAL(tslock_extend(l, 0), TSLOCK_EWRONGTYPE);
        CU_ASSERT_TRUE(tslock_lock_is_held(l));
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_EWRONGTYPE);
        r = raw_cmd("TYPE %s", "lock:list", NULL);
        CU_ASSERT_STRING_EQUAL(r->str, "list");
        freeReplyObject(r);
        raw_do("DEL %s", "lock:list", NULL);
        tslock_lock_free(l);
    }

    /*
     * A bridge hold whose owner key was replaced by a list: the proof
     * cannot be read, so nothing is deleted and the stamp stays until
     * its TTL ends it.
     */
    {
        tslock_lock *l = th_stamp_lock(c, "lock:list", 1000);
        char stamp[64];
        tslock_lock_set_scheme(l, TSLOCK_SCHEME_BRIDGE);
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        snprintf(stamp, sizeof(stamp), "%s", tslock_lock_value(l));
        raw_do("DEL %s", "{lock:list}:owner", NULL);
        raw_do("RPUSH %s %s", "{lock:list}:owner", "precious");
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_EWRONGTYPE);
        CU_ASSERT_TRUE(holds("lock:list", stamp));
        r = raw_cmd("TYPE %s", "{lock:list}:owner", NULL);
        CU_ASSERT_STRING_EQUAL(r->str, "list");
        freeReplyObject(r);
        raw_do("DEL %s", "lock:list", NULL);
        raw_do("DEL %s", "{lock:list}:owner", NULL);
        tslock_lock_free(l);
    }
    tslock_client_free(c);
}

/* ------------------------------------------------ keys that vanish */

static int delete_at_step;

static int vanish_hook(tslock_client *c, tslock_step step, const char *key,
                       void *ud)
{
    if ((int)step == delete_at_step) {
        delete_at_step = -1;
        raw_do("DEL %s", key, NULL);
    }
    return 0;
}

static void test_vanishing_key(void)
{
    tslock_client *c = clocked_client();
    tslock_lock *l = th_stamp_lock(c, "lock:vanish", 1000);
    char live[32];

    tslock_client_set_step_hook(c, vanish_hook, NULL);
    /* Deleted before our GET: back to SETNX, which wins. */
    snprintf(live, sizeof(live), "%" PRId64, clk.wall_ms + 5000);
    raw_do("SET %s %s", "lock:vanish", live);
    delete_at_step = TSLOCK_STEP_GET;
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_TRUE(holds("lock:vanish", tslock_lock_value(l)));
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);

    /* Deleted between GET and GETSET: GETSET returns nil, we hold. */
    raw_do("SET %s %s", "lock:vanish", "1690000000000");
    delete_at_step = TSLOCK_STEP_GETSET;
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_TRUE(holds("lock:vanish", tslock_lock_value(l)));
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/*
 * GETSET's answer decides a takeover: another client's GETSET landing
 * between our GET of the expired stamp and our GETSET (played by the
 * step hook, which writes that client's live stamp) makes ours answer
 * the other stamp, not the expired one we saw.  We do not hold; the
 * winner's stamp is put back and read as the holder's lease end.
 */
static char getset_winner[32];

static int getset_first_hook(tslock_client *c, tslock_step step,
                             const char *key, void *ud)
{
    (void)c;
    (void)ud;
    if (step == TSLOCK_STEP_GETSET && getset_winner[0] != '\0') {
        raw_do("SET %s %s", key, getset_winner);
        getset_winner[0] = '\0';
    }
    return 0;
}

static void test_getset_answer_decides(void)
{
    tslock_client *c = clocked_client();
    tslock_lock *l = th_stamp_lock(c, "lock:getset", 1000);
    char live[32];
    int64_t expires;

    snprintf(live, sizeof(live), "%" PRId64, clk.wall_ms + 5000);
    raw_do("SET %s %s", "lock:getset", "1690000000000"); /* expired */
    snprintf(getset_winner, sizeof(getset_winner), "%s", live);
    tslock_client_set_step_hook(c, getset_first_hook, NULL);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EBUSY);
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    CU_ASSERT_STRING_EQUAL(getset_winner, ""); /* the hook ran */
    CU_ASSERT_TRUE(holds("lock:getset", live));
    expires = tslock_lock_expires_ms(l);
    CU_ASSERT_EQUAL(expires, clk.wall_ms + 5000);
    /* Unhindered, the same takeover holds. */
    raw_do("SET %s %s", "lock:getset", "1690000000000");
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_TRUE(holds("lock:getset", tslock_lock_value(l)));
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_client_set_step_hook(c, NULL, NULL);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/*
 * A bridge hold is ours only while its owner key holds our token: a key
 * with our stamp and its TTL, whose owner key another bridge holder (same
 * stamp, another token) wrote, is not released (in the Lua, WATCH and
 * classic forms) or extended, and is left as it is.
 */
static void test_bridge_owner_token_checked(void)
{
    static const tslock_release_form forms[] = {
        TSLOCK_RELEASE_LUA, TSLOCK_RELEASE_WATCH, TSLOCK_RELEASE_CLASSIC,
        TSLOCK_RELEASE_BEST};
    static const char other[] = "0123456789abcdef0123456789abcdef";
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;
    size_t i;
    int rc;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "lock:proof") == TSLOCK_OK);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_BRIDGE);
    tslock_lock_set_ttl(l, 60000);
    for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        char stamp[64];

        CU_ASSERT_EQUAL(tslock_lock_set_release_form(l, forms[i]), TSLOCK_OK);
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        snprintf(stamp, sizeof(stamp), "%s", tslock_lock_value(l));
        raw_do("SET %s %s PX 60000", "{lock:proof}:owner", other);
        rc = i == 3 ? tslock_extend(l, 60000) /* in the best form */
                    : tslock_release(l);
        CU_ASSERT_EQUAL(rc, TSLOCK_ELOST);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_TRUE(holds("lock:proof", stamp));
        CU_ASSERT_TRUE(holds("{lock:proof}:owner", other));
        raw_do("DEL %s", "lock:proof", NULL);
        raw_do("DEL %s", "{lock:proof}:owner", NULL);
    }
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* ------------------------------------------------ release */

/*
 * A release that did not reach the key -- here a forced form the server
 * (capabilities held back) lacks -- keeps the hold: the key is still
 * ours, and another form releases it.
 */
static void test_release_unsupported_keeps_hold(void)
{
    static const tslock_scheme schemes[] = {TSLOCK_SCHEME_TIMESTAMP,
                                            TSLOCK_SCHEME_BRIDGE};
    tslock_client *c = clocked_client();
    size_t i;

    tslock_client_limit_caps(c, 0);
    for (i = 0; i < 2; i++) {
        tslock_lock *l = th_stamp_lock(c, "lock:keep", 1000);
        tslock_lock_set_scheme(l, schemes[i]);
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        tslock_lock_set_release_form(l, TSLOCK_RELEASE_LUA);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_EUNSUPPORTED);
        CU_ASSERT_TRUE(tslock_lock_is_held(l));
        CU_ASSERT_TRUE(holds("lock:keep", tslock_lock_value(l)));
        tslock_lock_set_release_form(l, TSLOCK_RELEASE_BEST);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_TRUE(holds("lock:keep", NULL));
        tslock_lock_free(l);
    }
    tslock_client_free(c);
}

static void test_release_lost(void)
{
    tslock_client *c = clocked_client();
    tslock_lock *l = th_stamp_lock(c, "lock:lost", 1000);
    static const tslock_release_form forms[] = {
        TSLOCK_RELEASE_BEST, TSLOCK_RELEASE_CLASSIC, TSLOCK_RELEASE_WATCH,
        TSLOCK_RELEASE_LUA};
    size_t i;

    for (i = 0; i < 4; i++) {
        tslock_lock_set_release_form(l, forms[i]);
        /* Plain release in every form. */
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        CU_ASSERT_TRUE(holds("lock:lost", NULL));
        /* Someone else's value: lost, nothing deleted. */
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        raw_do("SET %s %s", "lock:lost", "1700000099999");
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ELOST);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_TRUE(holds("lock:lost", "1700000099999"));
        /* The key is gone: lost. */
        raw_do("DEL %s", "lock:lost", NULL);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        raw_do("DEL %s", "lock:lost", NULL);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ELOST);
        /* Our own stamp, but the lease ran out: lost, kept. */
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        th_clock_advance(&clk, 1002);
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ELOST);
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "lease"));
        raw_do("DEL %s", "lock:lost", NULL);
    }
    tslock_lock_free(l);
    tslock_client_free(c);
}

static void test_release_margin(void)
{
    tslock_client *c = clocked_client();
    tslock_lock *l = th_stamp_lock(c, "lock:margin", 1000);

    CU_ASSERT_EQUAL(tslock_lock_set_release_margin(l, -1), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_release_margin(l, 300), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    th_clock_advance(&clk, 800); /* 201 ms left, less than the margin */
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ELOST);
    CU_ASSERT_TRUE(holds("lock:margin", "1700000001001"));
    raw_do("DEL %s", "lock:margin", NULL);
    tslock_lock_free(l);
    tslock_client_free(c);
}

static const char *script_trace[8];
static int script_steps;

static int script_hook(tslock_client *c, tslock_step step, const char *key,
                       void *ud)
{
    if (script_steps < 8)
        script_trace[script_steps++] = tslock_step_name(step);
    return 0;
}

/* Release survives SCRIPT FLUSH, and the built-in SHA1 is right. */
static void test_script_flush(void)
{
    tslock_client *c = clocked_client();
    tslock_lock *l = th_stamp_lock(c, "lock:flush", 1000);

    tslock_client_set_step_hook(c, script_hook, NULL);
    raw_do("SCRIPT FLUSH", NULL, NULL);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    script_steps = 0;
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_EQUAL(script_steps, 2);
    CU_ASSERT_STRING_EQUAL(script_trace[0], "EVALSHA");
    CU_ASSERT_STRING_EQUAL(script_trace[1], "EVAL");
    /* EVAL cached the script; EVALSHA now finds it by our digest. */
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    script_steps = 0;
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_EQUAL(script_steps, 1);
    CU_ASSERT_STRING_EQUAL(script_trace[0], "EVALSHA");
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* ------------------------------------------------ hooks */

static int stop_hook(tslock_client *c, tslock_step step, const char *key,
                     void *ud)
{
    return step == TSLOCK_STEP_SETNX;
}

static void test_hook_stops(void)
{
    tslock_client *c = clocked_client();
    tslock_lock *l = th_stamp_lock(c, "lock:hook", 1000);

    tslock_client_set_step_hook(c, stop_hook, NULL);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EHOOK);
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    CU_ASSERT_TRUE(holds("lock:hook", NULL));
    CU_ASSERT_FALSE(tslock_client_is_broken(c));
    tslock_client_set_step_hook(c, NULL, NULL);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* ------------------------------------------------ waiting */

static void test_wait_deadline(void)
{
    tslock_client *c1 = th_client(&srv), *c2 = th_client(&srv);
    tslock_lock *a = th_stamp_lock(c1, "lock:wait", 10000);
    tslock_lock *b = th_stamp_lock(c2, "lock:wait", 10000);
    int64_t start;

    CU_ASSERT_EQUAL(tslock_acquire(a, 0), TSLOCK_OK);
    start = th_mono_ms();
    CU_ASSERT_EQUAL(tslock_acquire(b, 150), TSLOCK_EBUSY);
    /* Never gives up before the deadline. */
    CU_ASSERT_TRUE(th_mono_ms() - start >= 150);
    CU_ASSERT_EQUAL(tslock_release(a), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(b, 150), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(b, -2), TSLOCK_EINVAL);
    /* The error says what was expected and what came. */
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c2),
                                  "expected >= 0 (ms) or TSLOCK_WAIT_FOREVER"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c2), "got -2"));
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_extend(b, -1), TSLOCK_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c2), "got -1"));
    CU_ASSERT_TRUE(tslock_lock_is_held(b));
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

/*
 * The waiter wakes when the holder's lease ends, not a whole retry
 * delay later: with a 5 s retry delay and a 40 ms lease left, it gets the
 * lock long before the first retry would have come.
 */
static void test_wait_wakes_at_holder_expiry(void)
{
    tslock_client *c1 = th_client(&srv), *c2 = th_client(&srv);
    tslock_lock *a = th_stamp_lock(c1, "lock:expiry", 40);
    tslock_lock *b = th_stamp_lock(c2, "lock:expiry", 1000);
    int64_t start;

    tslock_lock_set_retry(b, 5000, 5000);
    CU_ASSERT_EQUAL(tslock_acquire(a, 0), TSLOCK_OK);
    start = th_mono_ms();
    CU_ASSERT_EQUAL(tslock_acquire(b, 20000), TSLOCK_OK);
    CU_ASSERT_TRUE(th_mono_ms() - start < 5000);
    CU_ASSERT_EQUAL(tslock_release(a), TSLOCK_ELOST);
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

static int setnx_seen;

/* Cancel from inside the second attempt, as a signal handler would. */
static int cancel_hook(tslock_client *c, tslock_step step, const char *key,
                       void *ud)
{
    if (step == TSLOCK_STEP_SETNX && ++setnx_seen == 2)
        tslock_lock_cancel(ud);
    return 0;
}

static void test_cancel(void)
{
    tslock_client *c1 = th_client(&srv), *c2 = th_client(&srv);
    tslock_lock *a = th_stamp_lock(c1, "lock:cancel", 10000);
    tslock_lock *b = th_stamp_lock(c2, "lock:cancel", 10000);

    CU_ASSERT_EQUAL(tslock_acquire(a, 0), TSLOCK_OK);
    tslock_lock_set_retry(b, 1, 2);
    tslock_client_set_step_hook(c2, cancel_hook, b);
    setnx_seen = 0;
    CU_ASSERT_EQUAL(tslock_acquire(b, TSLOCK_WAIT_FOREVER), TSLOCK_ECANCELED);
    CU_ASSERT_EQUAL(setnx_seen, 2);
    tslock_client_set_step_hook(c2, NULL, NULL);

    /* A cancel made while nobody waits cancels the next wait, once. */
    CU_ASSERT_EQUAL(tslock_lock_cancel(b), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(b, TSLOCK_WAIT_FOREVER), TSLOCK_ECANCELED);
    CU_ASSERT_EQUAL(tslock_acquire(b, 30), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_release(a), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(b, TSLOCK_WAIT_FOREVER), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
    /* Even on a free key: a wait canceled before it began takes nothing
     * (a binding's abort may land between its own check and the call). */
    CU_ASSERT_EQUAL(tslock_lock_cancel(b), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(b, TSLOCK_WAIT_FOREVER), TSLOCK_ECANCELED);
    CU_ASSERT_FALSE(tslock_lock_is_held(b));
    CU_ASSERT_EQUAL(tslock_acquire(b, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
    tslock_lock_free(a);
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

/* ------------------------------------------------ fencing */

static void test_fencing(void)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = th_stamp_lock(c, "lock:fenced", 1000);
    int64_t first;

    raw_do("DEL %s", "lock:fenced:fence", NULL);
    CU_ASSERT_EQUAL(tslock_lock_fence(l), 0);
    CU_ASSERT_EQUAL(tslock_lock_set_fencing(l, 1), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    first = tslock_lock_fence(l);
    CU_ASSERT_EQUAL(first, 1);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_fence(l), 0);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_TRUE(tslock_lock_fence(l) > first);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    /* No number, no hold: a fence key of the wrong type gives the lock
     * back, and the lock key is free for the next client. */
    raw_do("DEL %s", "lock:fenced:fence", NULL);
    raw_do("HSET %s f v", "lock:fenced:fence", NULL);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_EWRONGTYPE);
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    CU_ASSERT_EQUAL(tslock_lock_fence(l), 0);
    CU_ASSERT_TRUE(holds("lock:fenced", NULL));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(tslock_client_errstr(c), "the hold was given back"));
    raw_do("DEL %s", "lock:fenced:fence", NULL);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* ------------------------------------------------ handles, peek */

static void test_handles(void)
{
    tslock_client *c1 = th_client(&srv), *c2 = th_client(&srv);
    tslock_lock *a = NULL, *b = NULL;
    static const tslock_scheme schemes[] = {
        TSLOCK_SCHEME_TOKEN, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_SCHEME_BRIDGE};
    static const char *const forms[] = {"token:", "timestamp-s:", "bridge-s:"};
    static const char *bad[] = {"",
                                "token",
                                "token:xyz",
                                "token:0123456789abcdef0123456789ABCDEF",
                                "timestamp-ms:hello",
                                "timestamp-ms:1700000000",
                                "timestamp-hours:1700000000",
                                "bridge:1",
                                "bridge-s:1700000000/xyz",
                                "timestamp-s:1700000000/"
                                "0123456789abcdef0123456789abcdef",
                                "token:0123456789abcdef0123456789abcdef/"
                                "0123456789abcdef0123456789abcdef"};
    size_t i;

    for (i = 0; i < 3; i++) {
        char handle[128];
        CU_ASSERT_FATAL(tslock_lock_new(&a, c1, "lock:handle") == TSLOCK_OK);
        CU_ASSERT_FATAL(tslock_lock_new(&b, c2, "lock:handle") == TSLOCK_OK);
        tslock_lock_set_scheme(a, schemes[i]);
        tslock_lock_set_unit(a, TSLOCK_UNIT_S);
        CU_ASSERT_PTR_NULL(tslock_lock_handle(a));
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(a, 0), TSLOCK_OK);
        snprintf(handle, sizeof(handle), "%s", tslock_lock_handle(a));
        CU_ASSERT_PTR_NOT_NULL(strstr(handle, forms[i]));
        /* A bridge hold carries its owner token: <stamp>/<token>. */
        CU_ASSERT_EQUAL(strchr(handle, '/') != NULL,
                        schemes[i] == TSLOCK_SCHEME_BRIDGE);
        /* Another process (here: client) adopts and extends it. */
        CU_ASSERT_EQUAL(tslock_lock_adopt(b, handle), TSLOCK_OK);
        CU_ASSERT_TRUE(tslock_lock_is_held(b));
        CU_ASSERT_EQUAL(tslock_lock_adopt(b, handle), TSLOCK_ESTATE);
        CU_ASSERT_EQUAL(tslock_extend(b, 20000), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(b), TSLOCK_OK);
        CU_ASSERT_TRUE(holds("lock:handle", NULL));
        tslock_lock_free(a);
        tslock_lock_free(b);
    }
    CU_ASSERT_FATAL(tslock_lock_new(&b, c2, "lock:handle") == TSLOCK_OK);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CU_ASSERT_EQUAL(tslock_lock_adopt(b, bad[i]), TSLOCK_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c2), "handle"));
    }
    CU_ASSERT_EQUAL(tslock_lock_adopt(b, NULL), TSLOCK_EINVAL);
    CU_ASSERT_FALSE(tslock_lock_is_held(b));
    tslock_lock_free(b);
    tslock_client_free(c1);
    tslock_client_free(c2);
}

/* The owner key's name keeps the lock key's hash slot; its token reads. */
static void test_owner_key(void)
{
    static const struct {
        const char *key, *owner;
    } names[] = {
        {"lock.foo", "{lock.foo}:owner"},
        {"{jobs}.nightly", "{jobs}.nightly:owner"},
        {"a}b", "a}b:owner"},
        {"{}x", "{}x:owner"},
    };
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;
    char token[40];
    const char *handle;
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        CU_ASSERT_FATAL(tslock_lock_new(&l, c, names[i].key) == TSLOCK_OK);
        CU_ASSERT_STRING_EQUAL(tslock_lock_owner_key(l), names[i].owner);
        tslock_lock_free(l);
    }
    CU_ASSERT_PTR_NULL(tslock_lock_owner_key(NULL));

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "lock:owner") == TSLOCK_OK);
    raw_do("DEL %s", "{lock:owner}:owner", NULL);
    CU_ASSERT_EQUAL(tslock_lock_peek_owner(l, token, 32), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_peek_owner(l, token, sizeof(token)), TSLOCK_OK);
    CU_ASSERT_STRING_EQUAL(token, "");
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_BRIDGE);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    handle = tslock_lock_handle(l);
    CU_ASSERT_EQUAL(tslock_lock_peek_owner(l, token, sizeof(token)), TSLOCK_OK);
    CU_ASSERT_STRING_EQUAL(token, strchr(handle, '/') + 1);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    raw_do("SET %s %s", "{lock:owner}:owner", "junk");
    CU_ASSERT_EQUAL(tslock_lock_peek_owner(l, token, sizeof(token)),
                    TSLOCK_EUNREADABLE);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "junk"));
    raw_do("DEL %s", "{lock:owner}:owner", NULL);
    raw_do("RPUSH %s %s", "{lock:owner}:owner", "x");
    CU_ASSERT_EQUAL(tslock_lock_peek_owner(l, token, sizeof(token)),
                    TSLOCK_EWRONGTYPE);
    raw_do("DEL %s", "{lock:owner}:owner", NULL);
    tslock_lock_free(l);
    tslock_client_free(c);
}

static void test_classify_and_peek(void)
{
    static const struct {
        const char *value;
        int rc;
        tslock_scheme scheme;
        tslock_unit unit;
    } cases[] = {
        {"9f86d081884c7d659a2feaa0c55ad015", TSLOCK_OK, TSLOCK_SCHEME_TOKEN, 0},
        {"1700000030001", TSLOCK_OK, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_MS},
        {"1700000031", TSLOCK_OK, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_S},
        {"1700000030.25", TSLOCK_OK, TSLOCK_SCHEME_TIMESTAMP,
         TSLOCK_UNIT_FLOAT},
        {"hello", TSLOCK_EUNREADABLE, 0, 0},
        {"42", TSLOCK_EUNREADABLE, 0, 0},
    };
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL, *t = NULL;
    char value[64];
    int64_t ttl = 0;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tslock_scheme scheme = TSLOCK_SCHEME_AUTO;
        tslock_unit unit = TSLOCK_UNIT_MS;
        int rc = tslock_value_classify(cases[i].value, strlen(cases[i].value),
                                       &scheme, &unit, NULL);
        CU_ASSERT_EQUAL(rc, cases[i].rc);
        if (rc == TSLOCK_OK) {
            CU_ASSERT_EQUAL(scheme, cases[i].scheme);
            if (scheme == TSLOCK_SCHEME_TIMESTAMP)
                CU_ASSERT_EQUAL(unit, cases[i].unit);
        }
    }
    CU_ASSERT_EQUAL(tslock_value_classify(NULL, 0, NULL, NULL, NULL),
                    TSLOCK_EINVAL);

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "lock:peek") == TSLOCK_OK);
    raw_do("DEL %s", "lock:peek", NULL);
    CU_ASSERT_EQUAL(tslock_lock_peek(l, value, sizeof(value), &ttl), TSLOCK_OK);
    CU_ASSERT_STRING_EQUAL(value, "");
    CU_ASSERT_EQUAL(ttl, -2);
    raw_do("SET %s %s", "lock:peek", "1700000030001");
    CU_ASSERT_EQUAL(tslock_lock_peek(l, value, sizeof(value), &ttl), TSLOCK_OK);
    CU_ASSERT_STRING_EQUAL(value, "1700000030001");
    CU_ASSERT_EQUAL(ttl, -1);
    raw_do("DEL %s", "lock:peek", NULL);
    CU_ASSERT_FATAL(tslock_lock_new(&t, c, "lock:peek") == TSLOCK_OK);
    tslock_lock_set_scheme(t, TSLOCK_SCHEME_TOKEN);
    tslock_lock_set_ttl(t, 5000);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(t, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_peek(l, value, sizeof(value), &ttl), TSLOCK_OK);
    CU_ASSERT_STRING_EQUAL(value, tslock_lock_value(t));
    CU_ASSERT_TRUE(ttl > 0 && ttl <= 5000);
    CU_ASSERT_EQUAL(tslock_release(t), TSLOCK_OK);
    raw_do("RPUSH %s %s", "lock:peek", "x");
    CU_ASSERT_EQUAL(tslock_lock_peek(l, value, sizeof(value), &ttl),
                    TSLOCK_EWRONGTYPE);
    raw_do("DEL %s", "lock:peek", NULL);
    tslock_lock_free(l);
    tslock_lock_free(t);
    tslock_client_free(c);
}

/* ------------------------------------------------ watchdog */

static int failure_pipe[2];

static void on_renew_failure(int code, const char *detail, void *ud)
{
    int *seen = ud;

    *seen = code;
    (void)!write(failure_pipe[1], "x", 1);
}

/*
 * The watchdog keeps a 600 ms lease alive for several lease lengths
 * while another client waits in vain; a lease lost behind its back is
 * reported by callback and status.
 */
static void test_watchdog(void)
{
    static const tslock_scheme schemes[] = {
        TSLOCK_SCHEME_TOKEN, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_SCHEME_BRIDGE};
    size_t i;

    CU_ASSERT_FATAL(pipe(failure_pipe) == 0);
    for (i = 0; i < 3; i++) {
        tslock_client *c = th_client(&srv), *renew = th_client(&srv);
        tslock_client *other = th_client(&srv);
        tslock_lock *l = NULL, *o = NULL;
        tslock_watchdog *w = NULL;
        int seen = TSLOCK_OK;
        char byte;

        CU_ASSERT_FATAL(tslock_lock_new(&l, c, "lock:dog") == TSLOCK_OK);
        CU_ASSERT_FATAL(tslock_lock_new(&o, other, "lock:dog") == TSLOCK_OK);
        tslock_lock_set_scheme(l, schemes[i]);
        tslock_lock_set_scheme(o, schemes[i]);
        tslock_lock_set_ttl(l, 600);
        tslock_lock_set_retry(o, 10, 20);
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(
            tslock_watchdog_start(&w, l, renew, 100, on_renew_failure, &seen),
            TSLOCK_OK);
        /* Three lease lengths: the other client never gets in. */
        CU_ASSERT_EQUAL(tslock_acquire(o, 1800), TSLOCK_EBUSY);
        CU_ASSERT_EQUAL(tslock_watchdog_status(w), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_watchdog_stop(w), TSLOCK_OK);
        CU_ASSERT_TRUE(tslock_lock_is_held(l));
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);

        /* Now lose it behind the watchdog's back. */
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        CU_ASSERT_EQUAL(
            tslock_watchdog_start(&w, l, renew, 50, on_renew_failure, &seen),
            TSLOCK_OK);
        raw_do("DEL %s", "lock:dog", NULL);
        CU_ASSERT_EQUAL(read(failure_pipe[0], &byte, 1), 1);
        CU_ASSERT_EQUAL(seen, TSLOCK_ELOST);
        CU_ASSERT_EQUAL(tslock_watchdog_status(w), TSLOCK_ELOST);
        CU_ASSERT_EQUAL(tslock_watchdog_stop(w), TSLOCK_ELOST);
        CU_ASSERT_FALSE(tslock_lock_is_held(l));
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ESTATE);
        tslock_lock_free(l);
        tslock_lock_free(o);
        tslock_client_free(c);
        tslock_client_free(renew);
        tslock_client_free(other);
    }
    CU_ASSERT_EQUAL(tslock_watchdog_stop(NULL), TSLOCK_OK);
    close(failure_pipe[0]);
    close(failure_pipe[1]);
}

/* ------------------------------------------------ arguments */

/*
 * The watchdog thread takes no signals.  Created while this thread
 * accepts SIGUSR1, it would otherwise inherit that; its mask in /proc
 * must block it.  With SIGUSR1 then blocked here too, a signal to the
 * process stays pending until this thread unblocks it.
 */
static pthread_t usr1_thread;
static volatile sig_atomic_t usr1_seen;

static void on_usr1(int sig)
{
    (void)sig;
    usr1_thread = pthread_self();
    usr1_seen = 1;
}

/* Whether key holds a string other than first: a renewal wrote it. */
static int renewed(const char *key, const char *first)
{
    redisReply *r = raw_cmd("GET %s", key, NULL);
    int yes = r->type == REDIS_REPLY_STRING && strcmp(r->str, first) != 0;

    freeReplyObject(r);
    return yes;
}

/*
 * How many threads of this process other than the calling one block sig,
 * read from /proc/self/task/TID/status (SigBlk, a hex mask); -1 when some
 * other thread does not.
 */
static int other_threads_blocking(int sig)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    CU_ASSERT_FATAL(d != NULL);
    while ((e = readdir(d)) != NULL) {
        char path[300], line[128];
        unsigned long long mask = 0;
        FILE *f;
        if (e->d_name[0] == '.' || atoi(e->d_name) == (int)getpid())
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        while (fgets(line, sizeof(line), f) != NULL)
            if (sscanf(line, "SigBlk: %llx", &mask) == 1)
                break;
        fclose(f);
        if (!(mask & (1ULL << (sig - 1)))) {
            n = -1;
            break;
        }
        n++;
    }
    closedir(d);
    return n;
}

/*
 * The watchdog's default interval (0) renews at a third of the lease:
 * another client polling every 10-20 ms never gets in over three lease
 * lengths.  A watchdog that waited a whole lease would renew a key the
 * server had just expired (its clock started after the lease began), and
 * the other client would take it.
 */
static void test_watchdog_default_interval(void)
{
    tslock_client *c = th_client(&srv), *renew = th_client(&srv);
    tslock_client *other = th_client(&srv);
    tslock_lock *l = NULL, *o = NULL;
    tslock_watchdog *w = NULL;
    int seen = TSLOCK_OK;

    CU_ASSERT_FATAL(pipe(failure_pipe) == 0);
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "lock:dog3") == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_new(&o, other, "lock:dog3") == TSLOCK_OK);
    tslock_lock_set_ttl(l, 1500);
    tslock_lock_set_retry(o, 10, 20);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(
        tslock_watchdog_start(&w, l, renew, 0, on_renew_failure, &seen),
        TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(o, 4500), TSLOCK_EBUSY);
    CU_ASSERT_EQUAL(tslock_watchdog_status(w), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_watchdog_stop(w), TSLOCK_OK);
    CU_ASSERT_EQUAL(seen, TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    if (tslock_lock_is_held(o))
        (void)tslock_release(o);
    tslock_lock_free(l);
    tslock_lock_free(o);
    tslock_client_free(c);
    tslock_client_free(renew);
    tslock_client_free(other);
    close(failure_pipe[0]);
    close(failure_pipe[1]);
}

static void test_watchdog_takes_no_signals(void)
{
    tslock_client *c = th_client(&srv), *renew = th_client(&srv);
    tslock_lock *l = NULL;
    tslock_watchdog *w = NULL;
    struct sigaction sa, old_sa;
    sigset_t usr1, old_mask;
    char first[64];
    int64_t deadline;
    /* The harness's own hang watchdog is a thread blocking every signal. */
    int others = other_threads_blocking(SIGUSR1);

    CU_ASSERT_FATAL(others >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, &old_sa);
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &usr1, &old_mask);
    l = th_stamp_lock(c, "lock:dog:signals", 5000);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    snprintf(first, sizeof(first), "%s", tslock_lock_value(l));
    CU_ASSERT_EQUAL_FATAL(tslock_watchdog_start(&w, l, renew, 10, NULL, NULL),
                          TSLOCK_OK);
    /*
     * A new thread starts with every signal blocked and sets its own mask
     * as it begins to run; its first renewal (a new stamp) shows it has.
     */
    for (deadline = th_mono_ms() + 5000;
         !renewed("lock:dog:signals", first) && th_mono_ms() < deadline;)
        ;
    CU_ASSERT_TRUE_FATAL(renewed("lock:dog:signals", first));
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    /* The watchdog thread's own mask, as the kernel keeps it. */
    CU_ASSERT_EQUAL(other_threads_blocking(SIGUSR1), others + 1);
    usr1_seen = 0;
    kill(getpid(), SIGUSR1); /* no thread accepts it: it stays pending */
    CU_ASSERT_FALSE(usr1_seen);
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL); /* delivered here, now */
    CU_ASSERT_TRUE(usr1_seen);
    CU_ASSERT_TRUE(pthread_equal(usr1_thread, pthread_self()));
    CU_ASSERT_EQUAL(tslock_watchdog_stop(w), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    sigaction(SIGUSR1, &old_sa, NULL);
    tslock_lock_free(l);
    tslock_client_free(c);
    tslock_client_free(renew);
}

static void test_arguments(void)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;

    CU_ASSERT_EQUAL(tslock_lock_new(NULL, c, "k"), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_new(&l, NULL, "k"), TSLOCK_EINVAL);
    CU_ASSERT_PTR_NULL(l);
    CU_ASSERT_EQUAL(tslock_lock_new(&l, c, NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_new(&l, c, ""), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_acquire(NULL, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_release(NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_cancel(NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_ttl(NULL, 1), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_scheme(NULL, 0), TSLOCK_EINVAL);
    CU_ASSERT_FALSE(tslock_lock_is_held(NULL));
    CU_ASSERT_PTR_NULL(tslock_lock_value(NULL));
    CU_ASSERT_EQUAL(tslock_lock_expires_ms(NULL), 0);
    CU_ASSERT_EQUAL(tslock_lock_fence(NULL), 0);
    tslock_lock_free(NULL);

    CU_ASSERT_EQUAL_FATAL(tslock_lock_new(&l, c, "lock:args"), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_ttl(l, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_ttl(l, -5), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_unit(l, (tslock_unit)7), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_scheme(l, (tslock_scheme)9), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_release_form(l, (tslock_release_form)9),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_retry(l, 0, 5), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_retry(l, 10, 5), TSLOCK_EINVAL);
    tslock_lock_free(l);
    tslock_client_free(c);
}

int main(void)
{
    CU_pSuite s;
    int rc;

    if (th_server_start(&srv, NULL) != 0)
        return 1;
    raw = th_redis(&srv);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("timestamp lock", NULL, NULL);
    CU_add_test(s, "acquire, busy, release", test_acquire_busy_release);
    CU_add_test(s, "token: acquire, busy, release", test_token_busy);
    CU_add_test(s, "token: extend of a lock another owner took",
                test_token_extend_taken);
    CU_add_test(s, "stamps written in each unit", test_units_written);
    CU_add_test(s, "legacy stamps read in each unit", test_legacy_stamps_read);
    CU_add_test(s, "a wall clock before 2000 writes no stamp",
                test_clock_before_2000);
    CU_add_test(s, "unreadable values are never taken over",
                test_unreadable_never_taken);
    CU_add_test(s, "wrong type: clear error, nothing changed", test_wrong_type);
    CU_add_test(s, "key vanishing between steps", test_vanishing_key);
    CU_add_test(s, "release reports loss in every form", test_release_lost);
    CU_add_test(s, "release margin", test_release_margin);
    CU_add_test(s, "a release form the server lacks keeps the hold",
                test_release_unsupported_keeps_hold);
    CU_add_test(s, "release survives SCRIPT FLUSH", test_script_flush);
    CU_add_test(s, "step hook stops an operation", test_hook_stops);
    CU_add_test(s, "wait until a deadline", test_wait_deadline);
    CU_add_test(s, "wait wakes at the holder's expiry",
                test_wait_wakes_at_holder_expiry);
    CU_add_test(s, "cancel a wait", test_cancel);
    CU_add_test(s, "fencing numbers grow", test_fencing);
    CU_add_test(s, "handles: print and adopt", test_handles);
    CU_add_test(s, "classify and peek at any value", test_classify_and_peek);
    CU_add_test(s, "owner key: its name and its token", test_owner_key);
    CU_add_test(s, "a GETSET answering another's stamp does not hold",
                test_getset_answer_decides);
    CU_add_test(s, "a bridge hold checks its owner token in every form",
                test_bridge_owner_token_checked);
    CU_add_test(s, "watchdog renews and reports a loss", test_watchdog);
    CU_add_test(s, "the watchdog's default interval: a third of the lease",
                test_watchdog_default_interval);
    CU_add_test(s, "the watchdog thread takes no signals",
                test_watchdog_takes_no_signals);
    CU_add_test(s, "argument checks", test_arguments);
    rc = th_run_all();
    redisFree(raw);
    th_server_stop(&srv);
    return rc;
}
