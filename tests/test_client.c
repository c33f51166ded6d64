/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_client.c - the client against real redis-server processes:
 * TCP and Unix sockets, AUTH with a password and with an ACL user, SELECT,
 * a wrapped connection, capabilities, a dropped connection and reconnect,
 * command timeouts, and connection errors with their causes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <fcntl.h>

#include "harness.h"

static th_server srv;      /* plain */
static th_server auth_srv; /* requirepass and an ACL user */

static tslock_client *fresh(void)
{
    tslock_client *c = NULL;

    CU_ASSERT_FATAL(tslock_client_new(&c) == TSLOCK_OK);
    return c;
}

static void try_lock(tslock_client *c, const char *key)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
}

static void test_tcp_and_unix(void)
{
    tslock_client *c = fresh();
    int major = 0, minor = 0, patch = 0;

    CU_ASSERT_EQUAL(tslock_client_caps(c), 0);
    CU_ASSERT_EQUAL(tslock_client_server_version(c, &major, NULL, NULL),
                    TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_client_connect_tcp(c, "127.0.0.1", srv.port),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_server_version(c, &major, &minor, &patch),
                    TSLOCK_OK);
    CU_ASSERT_TRUE(major >= 2);
    /* A modern server has everything. */
    CU_ASSERT_EQUAL(tslock_client_caps(c),
                    TSLOCK_CAP_WATCH | TSLOCK_CAP_LUA | TSLOCK_CAP_TIME
                        | TSLOCK_CAP_SET_NX_PX | TSLOCK_CAP_TTL_KEEPS);
    CU_ASSERT_FALSE(tslock_client_is_broken(c));
    try_lock(c, "client:tcp");
    tslock_client_free(c);

    c = fresh();
    CU_ASSERT_EQUAL(tslock_client_connect_unix(c, srv.socket), TSLOCK_OK);
    try_lock(c, "client:unix");
    tslock_client_free(c);
}

/* Descriptors open in this process that an exec would pass on. */
static int inheritable_fds(void)
{
    int fd, n = 0;

    for (fd = 3; fd < 1024; fd++) {
        int flags = fcntl(fd, F_GETFD);
        if (flags != -1 && !(flags & FD_CLOEXEC))
            n++;
    }
    return n;
}

/*
 * A program that runs commands while it holds a lock (the tslock command
 * does) must not pass the library's Redis connection to them: both
 * transports, and a reconnect, open it close-on-exec.
 */
static void test_connections_close_on_exec(void)
{
    int before = inheritable_fds();
    tslock_client *c = fresh(), *d = fresh();

    CU_ASSERT_EQUAL(tslock_client_connect_tcp(c, "127.0.0.1", srv.port),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_connect_unix(d, srv.socket), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_reconnect(d), TSLOCK_OK);
    CU_ASSERT_EQUAL(inheritable_fds(), before);
    tslock_client_free(c);
    tslock_client_free(d);
}

static void test_probe_writes_nothing(void)
{
    redisContext *r = th_redis(&srv);
    redisReply *reply;

    tslock_client_free(th_client(&srv));
    reply = redisCommand(r, "EXISTS tslock:probe");
    CU_ASSERT_EQUAL(reply->integer, 0);
    freeReplyObject(reply);
    redisFree(r);
}

static void test_connect_errors(void)
{
    tslock_client *c = fresh();
    char path[400];

    /* Nothing listens on port 1. */
    CU_ASSERT_EQUAL(tslock_client_connect_tcp(c, "127.0.0.1", 1), TSLOCK_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "127.0.0.1:1"));
    CU_ASSERT_TRUE(tslock_client_is_broken(c));
    tslock_client_free(c);

    c = fresh();
    snprintf(path, sizeof(path), "%s/no-such.sock", srv.dir);
    CU_ASSERT_EQUAL(tslock_client_connect_unix(c, path), TSLOCK_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "no-such.sock"));
    tslock_client_free(c);

    c = fresh();
    CU_ASSERT_EQUAL(tslock_client_connect_tcp(c, NULL, 6379), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_connect_tcp(c, "127.0.0.1", 0),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_connect_tcp(c, "127.0.0.1", 70000),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_connect_unix(c, ""), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_reconnect(c), TSLOCK_ESTATE);
    CU_ASSERT_EQUAL(tslock_client_set_timeouts(c, -1, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_set_db(c, -1), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_set_auth(c, "user", NULL), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_wrap(c, NULL), TSLOCK_EINVAL);
    tslock_client_free(c);
    tslock_client_free(NULL);
    CU_ASSERT_EQUAL(tslock_client_new(NULL), TSLOCK_EINVAL);
    CU_ASSERT_STRING_EQUAL(tslock_client_errstr(NULL), "");
    CU_ASSERT_EQUAL(tslock_client_set_step_hook(NULL, NULL, NULL),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_client_set_clock(NULL, NULL, NULL), TSLOCK_EINVAL);
}

static void test_auth(void)
{
    tslock_client *c = fresh();

    /* No password: the server refuses INFO, and says so. */
    CU_ASSERT_EQUAL(tslock_client_connect_unix(c, auth_srv.socket),
                    TSLOCK_EAUTH);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "NOAUTH"));
    tslock_client_free(c);

    c = fresh();
    tslock_client_set_auth(c, NULL, "wrong");
    CU_ASSERT_EQUAL(tslock_client_connect_unix(c, auth_srv.socket),
                    TSLOCK_EAUTH);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "AUTH"));
    tslock_client_free(c);

    c = fresh();
    tslock_client_set_auth(c, NULL, "s3cret");
    CU_ASSERT_EQUAL(tslock_client_connect_unix(c, auth_srv.socket), TSLOCK_OK);
    try_lock(c, "client:auth");
    tslock_client_free(c);

    /* An ACL user (Redis 6+): AUTH user password. */
    c = fresh();
    tslock_client_set_auth(c, "locker", "pw2");
    CU_ASSERT_EQUAL(tslock_client_connect_tcp(c, "127.0.0.1", auth_srv.port),
                    TSLOCK_OK);
    try_lock(c, "client:acl");
    tslock_client_free(c);

    /*
     * The ACL user has no channels (Redis 7's default), so PUBLISH is
     * refused: inside the script it is a pcall, and in the WATCH and
     * classic forms the refusal is remembered and the release made
     * without it.  Every release still deletes the key.
     */
    {
        static const unsigned limits[] = {
            TSLOCK_CAP_WATCH | TSLOCK_CAP_TTL_KEEPS, 0};
        redisContext *raw = redisConnect("127.0.0.1", auth_srv.port);
        redisReply *r;
        size_t i;

        CU_ASSERT_FATAL(raw != NULL && raw->err == 0);
        freeReplyObject(redisCommand(raw, "AUTH locker pw2"));
        r = redisCommand(raw, "PUBLISH {client:acl2}:released x");
        CU_ASSERT_FATAL(r != NULL);
        CU_ASSERT_EQUAL(r->type, REDIS_REPLY_ERROR); /* no channels */
        freeReplyObject(r);
        redisFree(raw);
        for (i = 0; i < 2; i++) {
            tslock_lock *l = NULL;
            c = fresh();
            tslock_client_set_auth(c, "locker", "pw2");
            CU_ASSERT_EQUAL(
                tslock_client_connect_tcp(c, "127.0.0.1", auth_srv.port),
                TSLOCK_OK);
            tslock_client_limit_caps(c, limits[i]);
            CU_ASSERT_FATAL(tslock_lock_new(&l, c, "client:acl2") == TSLOCK_OK);
            tslock_lock_set_scheme(l, TSLOCK_SCHEME_TIMESTAMP);
            CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
            CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
            CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
            CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
            tslock_lock_free(l);
            tslock_client_free(c);
        }
    }

    /* A password where none is set is a configuration error. */
    c = fresh();
    tslock_client_set_auth(c, NULL, "unneeded");
    CU_ASSERT_EQUAL(tslock_client_connect_unix(c, srv.socket), TSLOCK_EAUTH);
    tslock_client_free(c);
}

static void test_select(void)
{
    tslock_client *c = fresh();
    redisContext *r = th_redis(&srv);
    tslock_lock *l = NULL;
    redisReply *reply;

    tslock_client_set_db(c, 3);
    CU_ASSERT_EQUAL_FATAL(tslock_client_connect_unix(c, srv.socket), TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "client:db") == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    reply = redisCommand(r, "EXISTS client:db");
    CU_ASSERT_EQUAL(reply->integer, 0);
    freeReplyObject(reply);
    freeReplyObject(redisCommand(r, "SELECT 3"));
    reply = redisCommand(r, "GET client:db");
    CU_ASSERT_FATAL(reply->type == REDIS_REPLY_STRING);
    CU_ASSERT_STRING_EQUAL(reply->str, tslock_lock_value(l));
    freeReplyObject(reply);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);

    c = fresh();
    tslock_client_set_db(c, 999);
    CU_ASSERT_EQUAL(tslock_client_connect_unix(c, srv.socket), TSLOCK_ESERVER);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "SELECT"));
    tslock_client_free(c);
    redisFree(r);
}

static void test_wrap(void)
{
    redisContext *ctx = th_redis(&srv);
    tslock_client *c = fresh();
    redisReply *reply;

    CU_ASSERT_EQUAL(tslock_client_wrap(c, ctx), TSLOCK_OK);
    CU_ASSERT_TRUE(tslock_client_caps(c) & TSLOCK_CAP_LUA);
    try_lock(c, "client:wrap");
    tslock_client_free(c);
    /* The caller's connection is still the caller's, and still works. */
    reply = redisCommand(ctx, "PING");
    CU_ASSERT_FATAL(reply != NULL);
    CU_ASSERT_STRING_EQUAL(reply->str, "PONG");
    freeReplyObject(reply);
    redisFree(ctx);
}

/*
 * A wrapped connection reconnects in place to where it led, over a Unix
 * socket and over TCP, so the caller's pointer keeps working; with the
 * server gone it is EIO.  On hiredis before 0.13 this is our own
 * redisReconnect (net/hiredis_compat.c), on later ones hiredis's.
 */
static void test_wrap_reconnect(void)
{
    redisContext *ctx[2];
    tslock_client *c[2];
    redisReply *reply;
    int i;

    ctx[0] = th_redis(&srv);
    ctx[1] = redisConnect("127.0.0.1", srv.port);
    CU_ASSERT_FATAL(ctx[1] != NULL && !ctx[1]->err);
    for (i = 0; i < 2; i++) {
        c[i] = fresh();
        CU_ASSERT_EQUAL(tslock_client_wrap(c[i], ctx[i]), TSLOCK_OK);
    }
    CU_ASSERT_FATAL(th_server_restart(&srv) == 0);
    for (i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(tslock_client_reconnect(c[i]), TSLOCK_OK);
        CU_ASSERT_FALSE(tslock_client_is_broken(c[i]));
        try_lock(c[i], "client:wrap-reconnect");
        reply = redisCommand(ctx[i], "PING");
        CU_ASSERT_FATAL(reply != NULL);
        CU_ASSERT_STRING_EQUAL(reply->str, "PONG");
        freeReplyObject(reply);
    }
    th_server_kill(&srv);
    for (i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(tslock_client_reconnect(c[i]), TSLOCK_EIO);
        CU_ASSERT_TRUE(tslock_client_is_broken(c[i]));
        CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c[i]), "reconnect"));
        tslock_client_free(c[i]);
        redisFree(ctx[i]);
    }
    CU_ASSERT_FATAL(th_server_restart(&srv) == 0);
}

/*
 * A server that dies mid-use: EIO with the cause, then reconnect.  The
 * lock's own reconnecting is off, to show what the client does alone;
 * tests/test_resilience.c shows the recovery.
 */
static void test_dropped_connection(void)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "client:drop") == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_reconnect(l, -2), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_reconnect(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    th_server_kill(&srv);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_EIO);
    CU_ASSERT_TRUE(tslock_client_is_broken(c));
    CU_ASSERT_NOT_EQUAL(tslock_client_errstr(c)[0], '\0');
    /* Never reported as released: the object still holds. */
    CU_ASSERT_TRUE(tslock_lock_is_held(l));
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_EIO);
    CU_ASSERT_EQUAL(tslock_client_reconnect(c), TSLOCK_EIO);

    CU_ASSERT_FATAL(th_server_restart(&srv) == 0);
    CU_ASSERT_EQUAL(tslock_client_reconnect(c), TSLOCK_OK);
    CU_ASSERT_FALSE(tslock_client_is_broken(c));
    /* The restarted server lost the key (no persistence): lost. */
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_ELOST);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/*
 * A server that does not answer in time: ETIMEDOUT, client broken.  The
 * server is frozen (SIGSTOP) until the test resumes it, so it answers
 * nothing however long the test takes to send; a pause of a fixed length
 * (CLIENT PAUSE 600) could end before a loaded machine sent the acquire,
 * which then succeeded.
 */
static void test_command_timeout(void)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;

    CU_ASSERT_EQUAL(tslock_client_set_timeouts(c, 1000, 100), TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "client:slow") == TSLOCK_OK);
    th_server_pause(&srv);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_ETIMEDOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(tslock_client_errstr(c), "100 ms"));
    CU_ASSERT_TRUE(tslock_client_is_broken(c));
    CU_ASSERT_FALSE(tslock_lock_is_held(l));
    th_server_resume(&srv);
    /* 100 ms is short for a loaded machine's answers; the timeout was
     * shown, what follows shows the reconnect. */
    CU_ASSERT_EQUAL(tslock_client_set_timeouts(c, 5000, 5000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_reconnect(c), TSLOCK_OK);
    tslock_lock_free(l);
    /* The reconnected client works again. */
    try_lock(c, "client:after-timeout");
    tslock_client_free(c);
}

/* Stamps on the server's clock: the offset is measured at connect. */
static void test_server_time(void)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;
    int64_t offset = tslock_client_clock_offset(c), stamp;
    struct timeval tv;

    CU_ASSERT_TRUE(offset > -1000 && offset < 1000); /* same host */
    CU_ASSERT_EQUAL(tslock_client_set_time_source(c, TSLOCK_TIME_SERVER),
                    TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_client_set_time_source(c, (tslock_time_source)7),
                    TSLOCK_EINVAL);
    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "client:time") == TSLOCK_OK);
    tslock_lock_set_scheme(l, TSLOCK_SCHEME_TIMESTAMP);
    tslock_lock_set_ttl(l, 60000);
    CU_ASSERT_EQUAL_FATAL(tslock_acquire(l, 0), TSLOCK_OK);
    gettimeofday(&tv, NULL);
    stamp = strtoll(tslock_lock_value(l), NULL, 10);
    CU_ASSERT_TRUE(
        llabs(stamp - ((int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000 + 60001))
        < 2000);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    /* Without TIME (before 2.6) there is no offset to apply. */
    tslock_client_limit_caps(c, ~TSLOCK_CAP_TIME);
    CU_ASSERT_EQUAL(tslock_client_clock_offset(c), 0);
    tslock_client_free(c);
    CU_ASSERT_EQUAL(tslock_client_clock_offset(NULL), 0);
}

int main(void)
{
    CU_pSuite s;
    int rc;

    if (th_server_start(&srv, NULL) != 0
        || th_server_start(&auth_srv, "requirepass s3cret\n"
                                      "user locker on >pw2 ~* +@all\n")
               != 0)
        return 1;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("client", NULL, NULL);
    CU_add_test(s, "TCP and Unix socket", test_tcp_and_unix);
    CU_add_test(s, "probing writes nothing", test_probe_writes_nothing);
    CU_add_test(s, "connections are close-on-exec",
                test_connections_close_on_exec);
    CU_add_test(s, "connection errors name their cause", test_connect_errors);
    CU_add_test(s, "AUTH with password and ACL user", test_auth);
    CU_add_test(s, "SELECT a database", test_select);
    CU_add_test(s, "wrap a caller's redisContext", test_wrap);
    CU_add_test(s, "dropped connection and reconnect", test_dropped_connection);
    CU_add_test(s, "wrapped connection reconnects", test_wrap_reconnect);
    CU_add_test(s, "command timeout", test_command_timeout);
    CU_add_test(s, "stamps on the server's clock", test_server_time);
    rc = th_run_all();
    th_server_stop(&srv);
    th_server_stop(&auth_srv);
    return rc;
}
