/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_at_least.c - tslock_release_after(), a hold that lasts at least a
 * minimum since it was taken, in every scheme on every generation (Redis
 * 7 itself, and the proxy answering as 2.6.11, 2.6.0, 2.4.18, 2.2.15 and
 * 2.0.5): the lease shortened to the rest of the minimum, a release once
 * the minimum has passed, never past the lease, a loss reported, and the
 * argument checks.  The library's clocks are a test clock.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define N_GENERATIONS 6

static const char *const generations[N_GENERATIONS] = {
    "modern", "2.6.11", "2.6.0", "2.4.18", "2.2.15", "2.0.5"};
static th_server srv;
static th_server proxies[N_GENERATIONS];
static th_clock clk;
static redisContext *raw; /* upstream, modern: PTTL and GET for the checks */

static const tslock_scheme schemes[3] = {
    TSLOCK_SCHEME_TOKEN, TSLOCK_SCHEME_TIMESTAMP, TSLOCK_SCHEME_BRIDGE};
static const char *const scheme_names[3] = {"token", "timestamp", "bridge"};

static tslock_client *clocked(int g)
{
    tslock_client *c = th_client(&proxies[g]);

    tslock_client_set_clock(c, th_clock_fn, &clk);
    return c;
}

static int64_t raw_int(const char *cmd, const char *key)
{
    redisReply *r = redisCommand(raw, "%s %s", cmd, key);
    int64_t v;

    CU_ASSERT_FATAL(r != NULL);
    v = r->type == REDIS_REPLY_INTEGER ? r->integer : -99;
    freeReplyObject(r);
    return v;
}

/* The stamp the key holds (timestamp, bridge), or -1. */
static int64_t raw_stamp(const char *key)
{
    redisReply *r = redisCommand(raw, "GET %s", key);
    int64_t v = -1;

    CU_ASSERT_FATAL(r != NULL);
    if (r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

static int runs_on(int g, int s)
{
    /* The token scheme needs WATCH (2.2) at least. */
    return !(schemes[s] == TSLOCK_SCHEME_TOKEN && g == N_GENERATIONS - 1);
}

/*
 * How long the key is held for, on the server's TTL (token; whole seconds
 * before 2.6) or by its stamp (timestamp and bridge), from the test
 * clock's now.
 */
static int64_t held_for(int g, int s, const char *key)
{
    if (schemes[s] == TSLOCK_SCHEME_TOKEN)
        return g >= 3 ? raw_int("TTL", key) * 1000 : raw_int("PTTL", key);
    /* bridge stamps carry random low digits past the lease: ms unit */
    return raw_stamp(key) - clk.wall_ms;
}

/*
 * The longest a lease of ttl_ms may show: a bridge stamp carries random
 * low digits past the classic stamp, so that it is its holder's alone
 * (at most 1000 ms past it in the ms unit, tslock__bridge_bound_ms()).
 * The acquire's own lease is what counts; release_after() must not add.
 */
static int64_t lease_bound(int s, int64_t ttl_ms)
{
    if (schemes[s] == TSLOCK_SCHEME_BRIDGE)
        return ttl_ms + 1000;
    /* The classic stamp's "+1"; EXPIRE before 2.6 takes whole seconds. */
    return schemes[s] == TSLOCK_SCHEME_TIMESTAMP ? ttl_ms + 1 : ttl_ms + 1000;
}

/* Taken 1 s ago, minimum 5 s: held about 4 s more, then by itself. */
static void test_shortened_to_rest(void)
{
    int g, s;

    for (g = 0; g < N_GENERATIONS; g++)
        for (s = 0; s < 3; s++) {
            tslock_client *c, *c2;
            tslock_lock *l, *o;
            int64_t left;

            if (!runs_on(g, s))
                continue;
            c = clocked(g);
            c2 = clocked(g);
            th_clock_init(&clk);
            CU_ASSERT_EQUAL_FATAL(tslock_lock_new(&l, c, "al:rest"), 0);
            CU_ASSERT_EQUAL_FATAL(tslock_lock_new(&o, c2, "al:rest"), 0);
            tslock_lock_set_scheme(l, schemes[s]);
            tslock_lock_set_scheme(o, schemes[s]);
            tslock_lock_set_ttl(l, 60000);
            CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
            th_clock_advance(&clk, 1000);
            CU_ASSERT_EQUAL(tslock_release_after(l, 5000), TSLOCK_OK);
            CU_ASSERT_FALSE(tslock_lock_is_held(l));
            left = held_for(g, s, "al:rest");
            if (left < 3000 || left > lease_bound(s, 4000))
                fprintf(stderr, "  %s %s: held %" PRId64 " ms more\n",
                        generations[g], scheme_names[s], left);
            CU_ASSERT(left >= 3000);
            CU_ASSERT(left <= lease_bound(s, 4000));
            /* Another holder finds it taken until the minimum is over. */
            CU_ASSERT_EQUAL(tslock_acquire(o, 0), TSLOCK_EBUSY);
            CU_ASSERT_EQUAL(tslock_release_after(l, 5000), TSLOCK_ESTATE);
            tslock_lock_free(l);
            tslock_lock_free(o);
            tslock_client_free(c);
            tslock_client_free(c2);
            freeReplyObject(redisCommand(raw, "FLUSHALL"));
        }
}

/* The minimum has passed: an ordinary release, the key gone. */
static void test_released_after_minimum(void)
{
    int g, s;

    for (g = 0; g < N_GENERATIONS; g++)
        for (s = 0; s < 3; s++) {
            tslock_client *c;
            tslock_lock *l;

            if (!runs_on(g, s))
                continue;
            c = clocked(g);
            th_clock_init(&clk);
            CU_ASSERT_EQUAL_FATAL(tslock_lock_new(&l, c, "al:past"), 0);
            tslock_lock_set_scheme(l, schemes[s]);
            tslock_lock_set_ttl(l, 60000);
            CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
            th_clock_advance(&clk, 6000);
            CU_ASSERT_EQUAL(tslock_release_after(l, 5000), TSLOCK_OK);
            CU_ASSERT_EQUAL(raw_int("EXISTS", "al:past"), 0);
            tslock_lock_free(l);
            tslock_client_free(c);
            freeReplyObject(redisCommand(raw, "FLUSHALL"));
        }
}

/* A minimum longer than the lease: nothing written, held to the lease. */
static void test_never_past_lease(void)
{
    int g, s;

    for (g = 0; g < N_GENERATIONS; g++)
        for (s = 0; s < 3; s++) {
            tslock_client *c;
            tslock_lock *l;
            int64_t before, after, left, lease;

            if (!runs_on(g, s))
                continue;
            c = clocked(g);
            th_clock_init(&clk);
            CU_ASSERT_EQUAL_FATAL(tslock_lock_new(&l, c, "al:lease"), 0);
            tslock_lock_set_scheme(l, schemes[s]);
            tslock_lock_set_ttl(l, 8000);
            CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
            before = raw_stamp("al:lease");
            lease = held_for(g, s, "al:lease");
            CU_ASSERT_EQUAL(tslock_release_after(l, 60000), TSLOCK_OK);
            after = raw_stamp("al:lease");
            CU_ASSERT_FALSE(tslock_lock_is_held(l));
            left = held_for(g, s, "al:lease");
            CU_ASSERT(left <= lease); /* as the acquire left it, or less */
            if (left <= 0 || left > lease_bound(s, 8000))
                fprintf(stderr, "  %s %s: held %" PRId64 " ms more\n",
                        generations[g], scheme_names[s], left);
            CU_ASSERT(left <= lease_bound(s, 8000));
            CU_ASSERT(left > 0);
            if (schemes[s] != TSLOCK_SCHEME_TOKEN)
                CU_ASSERT_EQUAL(before, after); /* the stamp untouched */
            tslock_lock_free(l);
            tslock_client_free(c);
            freeReplyObject(redisCommand(raw, "FLUSHALL"));
        }
}

/* The key was taken from us: ELOST, nothing changed, not held. */
static void test_lost(void)
{
    int g, s;

    for (g = 0; g < N_GENERATIONS; g++)
        for (s = 0; s < 3; s++) {
            tslock_client *c;
            tslock_lock *l;
            redisReply *r;

            if (!runs_on(g, s))
                continue;
            c = clocked(g);
            th_clock_init(&clk);
            CU_ASSERT_EQUAL_FATAL(tslock_lock_new(&l, c, "al:lost"), 0);
            tslock_lock_set_scheme(l, schemes[s]);
            tslock_lock_set_ttl(l, 60000);
            CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
            freeReplyObject(redisCommand(raw, "SET al:lost someone-else"));
            CU_ASSERT_EQUAL(tslock_release_after(l, 5000), TSLOCK_ELOST);
            CU_ASSERT_FALSE(tslock_lock_is_held(l));
            r = redisCommand(raw, "GET al:lost");
            CU_ASSERT(r != NULL && r->type == REDIS_REPLY_STRING
                      && strcmp(r->str, "someone-else") == 0);
            freeReplyObject(r);
            tslock_lock_free(l);
            tslock_client_free(c);
            freeReplyObject(redisCommand(raw, "FLUSHALL"));
        }
}

/* Bad arguments, and an inner hold of a reentrant lock. */
static void test_arguments(void)
{
    tslock_client *c = clocked(0);
    tslock_lock *l;

    th_clock_init(&clk);
    CU_ASSERT_EQUAL(tslock_release_after(NULL, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL_FATAL(tslock_lock_new(&l, c, "al:args"), 0);
    CU_ASSERT_EQUAL(tslock_release_after(l, -1), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_release_after(l, INT64_C(315360000001)),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_release_after(l, 1000), TSLOCK_ESTATE);
    tslock_lock_set_reentrant(l, 1);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release_after(l, 5000), TSLOCK_OK);
    CU_ASSERT_TRUE(tslock_lock_is_held(l)); /* one hold left */
    CU_ASSERT_EQUAL(tslock_release_after(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(raw_int("EXISTS", "al:args"), 0);
    tslock_lock_free(l);
    tslock_client_free(c);
}

int main(void)
{
    CU_pSuite s;
    int g;

    if (th_server_start(&srv, NULL) != 0)
        return 1;
    for (g = 0; g < N_GENERATIONS; g++)
        if (th_proxy_start(&proxies[g], &srv, generations[g]) != 0)
            return 1;
    raw = th_redis(&srv);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("hold at least", NULL, NULL);
    CU_add_test(s, "the lease shortened to the rest of the minimum",
                test_shortened_to_rest);
    CU_add_test(s, "released once the minimum has passed",
                test_released_after_minimum);
    CU_add_test(s, "never held past the lease", test_never_past_lease);
    CU_add_test(s, "a lost hold is reported", test_lost);
    CU_add_test(s, "arguments and reentrant holds", test_arguments);
    return th_run_all();
}
