/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break.c - tslock_lock_break(), the operator's delete of a stuck
 * lock: a token without a TTL, a far-future stamp, a bridge hold and its
 * owner key, a missing key, a value that changes between the read and
 * the delete (ordered by the step hook), on a modern server and through
 * the proxy answering as Redis 2.2.15 and 2.0.5.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"

static th_server srv, proxy22, proxy20;

/* The generation a suite runs against, and where its compare can lose. */
static const th_server *target;
static tslock_step race_step;

static int on_modern(void)
{
    target = &srv;
    race_step = TSLOCK_STEP_EVALSHA;
    return 0;
}

static int on_22(void)
{
    target = &proxy22;
    race_step = TSLOCK_STEP_MULTI; /* after WATCH and GET */
    return 0;
}

static int on_20(void)
{
    target = &proxy20;
    race_step = TSLOCK_STEP_GET; /* 2.0's gap is after the GET: see below */
    return 0;
}

/* Writes go straight to the real server, as another client's would. */
static void cmd(const char *fmt, const char *a, const char *b)
{
    redisContext *r = th_redis(&srv);
    redisReply *rep = redisCommand(r, fmt, a, b);

    CU_ASSERT_FATAL(rep != NULL && rep->type != REDIS_REPLY_ERROR);
    freeReplyObject(rep);
    redisFree(r);
}

static int exists(const char *key)
{
    redisContext *r = th_redis(&srv);
    redisReply *rep = redisCommand(r, "EXISTS %s", key);
    int n = rep != NULL && rep->type == REDIS_REPLY_INTEGER ? (int)rep->integer
                                                            : -1;

    freeReplyObject(rep);
    redisFree(r);
    return n;
}

static tslock_lock *lock_on(tslock_client *c, const char *key)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    return l;
}

/* Break key, expecting value there; the code. */
static int break_key(const char *key, const char *value)
{
    tslock_client *c = th_client(target);
    tslock_lock *l = lock_on(c, key);
    int rc = tslock_lock_break(l, value);

    tslock_lock_free(l);
    tslock_client_free(c);
    return rc;
}

static void test_token_without_ttl(void)
{
    const char *tok = "0123456789abcdef0123456789abcdef";

    cmd("SET %s %s", "brk:tok", tok);
    CU_ASSERT_EQUAL(break_key("brk:tok", tok), TSLOCK_OK);
    CU_ASSERT_EQUAL(exists("brk:tok"), 0);
}

static void test_far_future_stamp(void)
{
    cmd("SET %s %s", "brk:stamp", "4102444800000"); /* 2100-01-01 */
    CU_ASSERT_EQUAL(break_key("brk:stamp", "4102444800000"), TSLOCK_OK);
    CU_ASSERT_EQUAL(exists("brk:stamp"), 0);
}

static void test_bridge_with_owner(void)
{
    cmd("SET %s %s", "brk:br", "4102444800000");
    cmd("SET %s %s", "{brk:br}:owner", "fedcba9876543210fedcba9876543210");
    CU_ASSERT_EQUAL(break_key("brk:br", "4102444800000"), TSLOCK_OK);
    CU_ASSERT_EQUAL(exists("brk:br"), 0);
    CU_ASSERT_EQUAL(exists("{brk:br}:owner"), 0);
}

static void test_missing_key(void)
{
    cmd("DEL %s %s", "brk:none", "{brk:none}:owner");
    CU_ASSERT_EQUAL(break_key("brk:none", "x"), TSLOCK_ELOST);
}

static void test_other_value(void)
{
    cmd("SET %s %s", "brk:other", "new-holder");
    cmd("SET %s %s", "{brk:other}:owner", "fedcba9876543210fedcba9876543210");
    CU_ASSERT_EQUAL(break_key("brk:other", "old-holder"), TSLOCK_ELOST);
    CU_ASSERT_EQUAL(exists("brk:other"), 1);
    CU_ASSERT_EQUAL(exists("{brk:other}:owner"), 1);
}

static void test_bad_arguments(void)
{
    tslock_client *c = th_client(target);
    tslock_lock *l = lock_on(c, "brk:args");

    CU_ASSERT_EQUAL(tslock_lock_break(NULL, "v"), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_break(l, NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_break(l, ""), TSLOCK_EINVAL);
    /* A hold of this very object is released, never broken. */
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_break(l, tslock_lock_value(l)), TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* Another client writes the key just before the step the suite names. */
struct race {
    tslock_step step;
    int fired;
};

static int write_before(tslock_client *c, tslock_step step, const char *key,
                        void *userdata)
{
    struct race *r = userdata;

    (void)c;
    if (step == r->step && !r->fired) {
        r->fired = 1;
        cmd("SET %s %s", key, "a-new-holder");
    }
    return 0;
}

static void test_changed_before_delete(void)
{
    struct race race = {race_step, 0};
    tslock_client *c = th_client(target);
    tslock_lock *l = lock_on(c, "brk:race");

    cmd("SET %s %s", "brk:race", "4102444800000");
    tslock_client_set_step_hook(c, write_before, &race);
    CU_ASSERT_EQUAL(tslock_lock_break(l, "4102444800000"), TSLOCK_ELOST);
    CU_ASSERT_TRUE(race.fired);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "nothing deleted"));
    CU_ASSERT_EQUAL(exists("brk:race"), 1); /* the new holder's, kept */
    tslock_lock_free(l);
    tslock_client_free(c);
}

/*
 * Redis 2.0's documented gap: a value written between the GET and the
 * DEL is deleted too.  Replayed so the documentation stays true.
 */
static void test_20_gap(void)
{
    struct race race = {TSLOCK_STEP_DEL, 0};
    tslock_client *c = th_client(&proxy20);
    tslock_lock *l = lock_on(c, "brk:gap");

    cmd("SET %s %s", "brk:gap", "4102444800000");
    tslock_client_set_step_hook(c, write_before, &race);
    CU_ASSERT_EQUAL(tslock_lock_break(l, "4102444800000"), TSLOCK_OK);
    CU_ASSERT_TRUE(race.fired);
    CU_ASSERT_EQUAL(exists("brk:gap"), 0);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* A break wakes waiters as a release does: it is announced. */
static void test_announced(void)
{
    redisContext *sub = th_redis(&srv);
    redisReply *r = redisCommand(sub, "SUBSCRIBE %s", "{brk:ann}:released");

    CU_ASSERT_FATAL(r != NULL);
    freeReplyObject(r);
    cmd("SET %s %s", "brk:ann", "stuck");
    CU_ASSERT_EQUAL(break_key("brk:ann", "stuck"), TSLOCK_OK);
    r = NULL;
    CU_ASSERT_EQUAL(redisGetReply(sub, (void **)&r), REDIS_OK);
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3
                   && strcmp(r->element[2]->str, "brk:ann") == 0);
    freeReplyObject(r);
    redisFree(sub);
}

static void add_cases(CU_pSuite s)
{
    CU_add_test(s, "a token without a TTL", test_token_without_ttl);
    CU_add_test(s, "a stamp far in the future", test_far_future_stamp);
    CU_add_test(s, "a bridge hold and its owner key", test_bridge_with_owner);
    CU_add_test(s, "a missing key: nothing deleted", test_missing_key);
    CU_add_test(s, "another value: nothing deleted", test_other_value);
    CU_add_test(s, "NULL, empty, and our own hold", test_bad_arguments);
    CU_add_test(s, "changed between the read and the delete",
                test_changed_before_delete);
    CU_add_test(s, "announced to waiters", test_announced);
}

int main(void)
{
    int rc = 1;

    if (th_server_start(&srv, NULL) != 0)
        return 1;
    if (th_proxy_start(&proxy22, &srv, "2.2.15") != 0
        || th_proxy_start(&proxy20, &srv, "2.0.5") != 0)
        goto out;
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    add_cases(CU_add_suite("break: modern (Lua)", on_modern, NULL));
    add_cases(CU_add_suite("break: 2.2.15 (WATCH)", on_22, NULL));
    add_cases(CU_add_suite("break: 2.0.5 (GET, DEL)", on_20, NULL));
    CU_add_test(CU_add_suite("break: 2.0.5's gap", on_20, NULL),
                "written between GET and DEL: deleted too", test_20_gap);
    rc = th_run_all();
out:
    th_proxy_stop(&proxy20);
    th_proxy_stop(&proxy22);
    th_server_stop(&srv);
    return rc;
}
