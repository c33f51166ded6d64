/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_noscript.c - the NOSCRIPT fallback and the function library's
 * reload, where production loses them: SCRIPT FLUSH and FUNCTION FLUSH
 * under a hold, and a replica promoted (REPLICAOF NO ONE) whose script
 * cache never had tslock's scripts (Redis 7 replicates scripts by their
 * effects) or that lacks the function library.  A real master and
 * replica of redis-server 7.0; holds cross over by handle, as a process
 * reconnecting to the new master would.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static th_server master, replica;
static const char *library; /* tslock_functions_library()'s name */

static redisReply *raw(const th_server *s, const char *fmt, const char *arg)
{
    redisContext *c = th_redis(s);
    redisReply *r = redisCommand(c, fmt, arg);

    CU_ASSERT_FATAL(r != NULL);
    redisFree(c);
    return r;
}

static void raw_ok(const th_server *s, const char *fmt, const char *arg)
{
    redisReply *r = raw(s, fmt, arg);

    CU_ASSERT_TRUE(r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

static int exists(const th_server *s, const char *key)
{
    redisReply *r = raw(s, "EXISTS %s", key);
    int n = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;

    freeReplyObject(r);
    return n;
}

static int has_library(const th_server *s)
{
    redisReply *r = raw(s, "FUNCTION LIST LIBRARYNAME %s", library);
    int n = r->type == REDIS_REPLY_ARRAY ? (int)r->elements : -1;

    freeReplyObject(r);
    return n;
}

/*
 * The replica has every write the master has: WAIT counts the replicas
 * that acknowledged the writes of its own connection, so that connection
 * writes first, after everything the clients wrote.
 */
static void replicated(void)
{
    redisContext *c = th_redis(&master);
    redisReply *r = redisCommand(c, "SET ns:sync 1");

    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommand(c, "WAIT 1 5000");
    CU_ASSERT_TRUE(r != NULL && r->type == REDIS_REPLY_INTEGER
                   && r->integer == 1);
    freeReplyObject(r);
    redisFree(c);
}

/* The steps a client sent, comma-separated. */
static char trace[256];

static int trace_hook(tslock_client *c, tslock_step step, const char *key,
                      void *ud)
{
    size_t n = strlen(trace);

    (void)c;
    (void)key;
    (void)ud;
    snprintf(trace + n, sizeof(trace) - n, "%s%s", n ? "," : "",
             tslock_step_name(step));
    return 0;
}

/*
 * A client of s: the default user, or "fn", whose ACL refuses EVAL and
 * EVALSHA (Functions, mode as given).
 */
static tslock_client *client_of(const th_server *s, int fn,
                                tslock_functions mode)
{
    tslock_client *c = NULL;

    CU_ASSERT_FATAL(tslock_client_new(&c) == TSLOCK_OK);
    if (fn) {
        CU_ASSERT_FATAL(tslock_client_set_auth(c, "fn", "pw-fn") == TSLOCK_OK);
        CU_ASSERT_FATAL(tslock_client_set_functions(c, mode) == TSLOCK_OK);
    }
    CU_ASSERT_FATAL(tslock_client_connect_unix(c, s->socket) == TSLOCK_OK);
    CU_ASSERT_EQUAL(!!(tslock_client_caps(c) & TSLOCK_CAP_FUNCTIONS), fn);
    CU_ASSERT_FATAL(tslock_client_set_step_hook(c, trace_hook, NULL)
                    == TSLOCK_OK);
    return c;
}

static tslock_lock *new_lock(tslock_client *c, const char *key,
                             tslock_scheme scheme)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_scheme(l, scheme) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_ttl(l, 30000) == TSLOCK_OK);
    return l;
}

static const tslock_scheme schemes[] = {TSLOCK_SCHEME_TOKEN,
                                        TSLOCK_SCHEME_BRIDGE};
static const char *const scheme_names[] = {"token", "bridge"};

/*
 * SCRIPT FLUSH under a hold: its extend and its release each meet
 * NOSCRIPT and run the script with EVAL, once; the next release finds it
 * cached again.
 */
static void test_script_flush(void)
{
    size_t i;

    for (i = 0; i < 2; i++) {
        tslock_client *c = client_of(&master, 0, TSLOCK_FUNCTIONS_LOAD);
        tslock_lock *l = new_lock(c, "ns:flush", schemes[i]);

        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        raw_ok(&master, "SCRIPT %s", "FLUSH");
        trace[0] = '\0';
        CU_ASSERT_EQUAL(tslock_extend(l, 30000), TSLOCK_OK);
        CU_ASSERT_STRING_EQUAL(trace, "EVALSHA,EVAL");
        raw_ok(&master, "SCRIPT %s", "FLUSH");
        trace[0] = '\0';
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        CU_ASSERT_STRING_EQUAL(trace, "EVALSHA,EVAL");
        CU_ASSERT_EQUAL(exists(&master, "ns:flush"), 0);
        CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
        trace[0] = '\0';
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        CU_ASSERT_STRING_EQUAL(trace, "EVALSHA");
        printf("\n    %-6s extend and release through SCRIPT FLUSH: ok ",
               scheme_names[i]);
        tslock_lock_free(l);
        tslock_client_free(c);
    }
}

/*
 * FUNCTION FLUSH under a hold, where EVAL is refused: mode "use" fails
 * naming the missing library and keeps the hold; mode "load" loads it
 * again and goes on.
 */
static void test_function_flush(void)
{
    size_t i;

    for (i = 0; i < 2; i++) {
        tslock_client *c = client_of(&master, 1, TSLOCK_FUNCTIONS_LOAD);
        tslock_client *u = client_of(&master, 1, TSLOCK_FUNCTIONS_USE);
        tslock_lock *l = new_lock(c, "ns:fflush", schemes[i]);
        tslock_lock *m = new_lock(u, "ns:fflush", schemes[i]);
        char handle[160];

        /* The library is there (an operator loaded it), then flushed. */
        freeReplyObject(raw(&master, "FUNCTION LOAD REPLACE %s",
                            tslock_functions_library(NULL)));
        CU_ASSERT_EQUAL(has_library(&master), 1);
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
        snprintf(handle, sizeof(handle), "%s", tslock_lock_handle(l));
        raw_ok(&master, "FUNCTION %s", "FLUSH");
        CU_ASSERT_EQUAL(tslock_lock_adopt(m, handle), TSLOCK_OK);
        CU_ASSERT_EQUAL(tslock_release(m), TSLOCK_ESERVER);
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(u), library));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(tslock_client_errstr(u), "tslock functions load"));
        CU_ASSERT_TRUE(tslock_lock_is_held(m));
        CU_ASSERT_EQUAL(exists(&master, "ns:fflush"), 1);
        CU_ASSERT_EQUAL(has_library(&master), 0);
        trace[0] = '\0';
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        /* FCALL, not found; FUNCTION LOAD; FCALL. */
        CU_ASSERT_STRING_EQUAL(trace, "EVALSHA,EVAL,EVALSHA");
        CU_ASSERT_EQUAL(has_library(&master), 1);
        CU_ASSERT_EQUAL(exists(&master, "ns:fflush"), 0);
        printf("\n    %-6s release through FUNCTION FLUSH: use fails, "
               "load reloads ",
               scheme_names[i]);
        tslock_lock_free(l);
        tslock_lock_free(m);
        tslock_client_free(c);
        tslock_client_free(u);
    }
}

/*
 * A replica promoted under holds taken on the master: its script cache
 * never had tslock's scripts, and (flushed while it was a writable
 * replica) it has no function library.  Each hold is released through
 * the new master by handle: EVAL after NOSCRIPT; FCALL fails in mode
 * "use", naming the library, and loads it in mode "load".
 */
static void test_promoted_replica(void)
{
    tslock_client *c = client_of(&master, 0, TSLOCK_FUNCTIONS_LOAD);
    tslock_client *f = client_of(&master, 1, TSLOCK_FUNCTIONS_LOAD);
    tslock_client *d, *u, *g;
    tslock_lock *held[2], *fheld, *l;
    char handles[2][160], fhandle[160], key[32];
    size_t i;

    for (i = 0; i < 2; i++) {
        snprintf(key, sizeof(key), "ns:promoted:%s", scheme_names[i]);
        held[i] = new_lock(c, key, schemes[i]);
        CU_ASSERT_EQUAL_FATAL(tslock_acquire(held[i], 0), TSLOCK_OK);
        snprintf(handles[i], sizeof(handles[i]), "%s",
                 tslock_lock_handle(held[i]));
    }
    fheld = new_lock(f, "ns:promoted:fn", TSLOCK_SCHEME_TOKEN);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(fheld, 0), TSLOCK_OK);
    snprintf(fhandle, sizeof(fhandle), "%s", tslock_lock_handle(fheld));
    replicated();
    raw_ok(&replica, "FUNCTION %s", "FLUSH");
    raw_ok(&replica, "REPLICAOF NO %s", "ONE");
    CU_ASSERT_EQUAL(has_library(&replica), 0);

    d = client_of(&replica, 0, TSLOCK_FUNCTIONS_LOAD);
    for (i = 0; i < 2; i++) {
        snprintf(key, sizeof(key), "ns:promoted:%s", scheme_names[i]);
        CU_ASSERT_EQUAL(exists(&replica, key), 1);
        l = new_lock(d, key, schemes[i]);
        CU_ASSERT_EQUAL(tslock_lock_adopt(l, handles[i]), TSLOCK_OK);
        trace[0] = '\0';
        CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
        CU_ASSERT_STRING_EQUAL(trace, "EVALSHA,EVAL");
        CU_ASSERT_EQUAL(exists(&replica, key), 0);
        printf("\n    %-6s released on the promoted replica: EVAL after "
               "NOSCRIPT ",
               scheme_names[i]);
        tslock_lock_free(l);
    }

    u = client_of(&replica, 1, TSLOCK_FUNCTIONS_USE);
    l = new_lock(u, "ns:promoted:fn", TSLOCK_SCHEME_TOKEN);
    CU_ASSERT_EQUAL(tslock_lock_adopt(l, fhandle), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ESERVER);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(u), library));
    CU_ASSERT_TRUE(tslock_lock_is_held(l));
    CU_ASSERT_EQUAL(exists(&replica, "ns:promoted:fn"), 1);
    tslock_lock_free(l);

    g = client_of(&replica, 1, TSLOCK_FUNCTIONS_LOAD);
    l = new_lock(g, "ns:promoted:fn", TSLOCK_SCHEME_TOKEN);
    CU_ASSERT_EQUAL(tslock_lock_adopt(l, fhandle), TSLOCK_OK);
    trace[0] = '\0';
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    CU_ASSERT_STRING_EQUAL(trace, "EVALSHA,EVAL,EVALSHA");
    CU_ASSERT_EQUAL(has_library(&replica), 1);
    CU_ASSERT_EQUAL(exists(&replica, "ns:promoted:fn"), 0);
    printf("\n    functions on the promoted replica: use fails naming %s, "
           "load reloads ",
           library);
    tslock_lock_free(l);

    for (i = 0; i < 2; i++)
        tslock_lock_free(held[i]);
    tslock_lock_free(fheld);
    tslock_client_free(c);
    tslock_client_free(f);
    tslock_client_free(d);
    tslock_client_free(u);
    tslock_client_free(g);
}

/* The "fn" user on s: everything but scripts. */
static int add_user(const th_server *s)
{
    redisContext *c = th_redis(s);
    redisReply *r = redisCommand(c, "ACL SETUSER fn reset on >pw-fn ~* &* "
                                    "+@all -eval -evalsha");
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS;

    freeReplyObject(r);
    redisFree(c);
    return ok ? 0 : -1;
}

/* The replica is linked and has the master's data. */
static int linked(void)
{
    int i;

    for (i = 0; i < 1000; i++) {
        redisContext *c = th_redis(&replica);
        redisReply *r = redisCommand(c, "INFO replication");
        int up = r != NULL && r->type == REDIS_REPLY_STRING
                 && strstr(r->str, "master_link_status:up") != NULL;

        freeReplyObject(r);
        redisFree(c);
        if (up)
            return 0;
        poll(NULL, 0, 5);
    }
    return -1;
}

int main(void)
{
    CU_pSuite s;
    char conf[128];
    int rc = 1;

    tslock_functions_library(&library);
    /* A replica's first sync at once, not after the 5 s Redis 7 waits
     * for more replicas to share a diskless one. */
    if (th_server_start(&master, "repl-diskless-sync-delay 0\n") != 0)
        return 1;
    /* Writable, so that it can lose the function library (FUNCTION
     * FLUSH) while a replica, as one restored from an older dump would. */
    snprintf(conf, sizeof(conf),
             "replicaof 127.0.0.1 %d\nreplica-read-only no\n", master.port);
    if (th_server_start(&replica, conf) != 0 || linked() != 0
        || add_user(&master) != 0 || add_user(&replica) != 0)
        goto out;
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    s = CU_add_suite("NOSCRIPT and missing functions", NULL, NULL);
    CU_add_test(s, "token and bridge through SCRIPT FLUSH", test_script_flush);
    CU_add_test(s, "Functions through FUNCTION FLUSH: use fails, load reloads",
                test_function_flush);
    CU_add_test(s,
                "a promoted replica: EVAL after NOSCRIPT, the library "
                "reloaded",
                test_promoted_replica);
    rc = th_run_all();
out:
    th_server_stop(&replica);
    th_server_stop(&master);
    return rc;
}
