/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls_api.c - libtslock's TLS calls, run by tests/test_tls.sh against its
 * TLS server: the settings and their errors, a client over rediss://, a
 * caller's context started with tslock_conn_start_tls() and wrapped,
 * whose reconnect redoes the handshake, and TLS switched off again.
 * Prints "ok - NAME" or "FAIL - NAME: why" lines for the script to count.
 *
 *   tls_api PORT PLAIN_PORT SOCKET CA CERT KEY OTHER_CA
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "tslock.h"

static int failures;

static void result(int ok, const char *name, const char *why)
{
    if (ok) {
        printf("ok - %s\n", name);
    } else {
        printf("FAIL - %s: %s\n", name, why);
        failures++;
    }
}

static tslock_tls *settings(const char *ca, const char *cert, const char *key)
{
    tslock_tls *t = NULL;

    if (tslock_tls_new(&t) != TSLOCK_OK
        || tslock_tls_set(t, "cacert", ca, NULL, 0) != TSLOCK_OK
        || tslock_tls_set(t, "ssl_certfile", cert, NULL, 0) != TSLOCK_OK
        || tslock_tls_set(t, "key", key, NULL, 0) != TSLOCK_OK) {
        fprintf(stderr, "cannot make TLS settings\n");
        exit(1);
    }
    return t;
}

/* A lock taken and given back on c: TSLOCK_OK or the failing code. */
static int lock_cycle(tslock_client *c, const char *key)
{
    tslock_lock *l = NULL;
    int rc = tslock_lock_new(&l, c, key);

    if (rc == TSLOCK_OK)
        rc = tslock_acquire(l, 0);
    if (rc == TSLOCK_OK)
        rc = tslock_release(l);
    tslock_lock_free(l);
    return rc;
}

static void check_settings(const char *ca)
{
    tslock_tls *t = NULL;
    tslock_client *c = NULL;
    char err[256] = "";
    int rc;

    tslock_tls_new(&t);
    rc = tslock_tls_set(t, "ssl_nope", "x", err, sizeof(err));
    result(rc == TSLOCK_EINVAL && strstr(err, "'ssl_nope'") != NULL,
           "an unknown setting: EINVAL naming it", err);
    rc = tslock_tls_set(t, "ssl_cert_reqs", "maybe", err, sizeof(err));
    result(rc == TSLOCK_EINVAL
               && strstr(err, "required, optional or none") != NULL,
           "ssl_cert_reqs=maybe: EINVAL naming what is expected", err);
    rc = tslock_tls_set(t, "key_password", NULL, err, sizeof(err));
    result(rc == TSLOCK_EINVAL, "a setting without a value: EINVAL", err);
    tslock_tls_set(t, "cacert", "/nonexistent/ca.pem", NULL, 0);
    tslock_client_new(&c);
    rc = tslock_client_set_tls(c, t);
    result(rc == TSLOCK_ETLS
               && strstr(tslock_client_errstr(c),
                         "cannot load the CA certificates from "
                         "'/nonexistent/ca.pem'")
                      != NULL,
           "a missing CA file: ETLS at tslock_client_set_tls",
           tslock_client_errstr(c));
    tslock_tls_set(t, "cacert", ca, NULL, 0);
    tslock_tls_set(t, "cert", ca, NULL, 0); /* no key in it */
    rc = tslock_client_set_tls(c, t);
    result(rc == TSLOCK_ETLS
               && strstr(tslock_client_errstr(c), "cannot load the client key")
                      != NULL,
           "a certificate without its key: ETLS naming the key",
           tslock_client_errstr(c));
    tslock_client_free(c);
    tslock_tls_free(t);
}

static void check_url(int port, const char *ca, const char *cert,
                      const char *key)
{
    struct tslock_url u;
    tslock_client *c = NULL;
    char url[1024], desc[256], err[256];
    int rc;

    snprintf(url, sizeof(url),
             "rediss://localhost:%d/3?ssl_ca_certs=%s&ssl_certfile=%s&"
             "ssl_keyfile=%s",
             port, ca, cert, key);
    rc = tslock_url_parse(url, 0, &u, err, sizeof(err));
    result(rc == TSLOCK_OK && u.tls != NULL && u.db == 3,
           "tslock_url_parse(rediss://): TLS settings and db", err);
    if (rc == TSLOCK_OK) {
        tslock_url_describe(&u, desc, sizeof(desc));
        result(strstr(desc, ", TLS") != NULL, "describe says TLS", desc);
        tslock_url_free(&u);
    }
    tslock_client_new(&c);
    rc = tslock_client_connect_url(c, url);
    result(rc == TSLOCK_OK, "tslock_client_connect_url(rediss://)",
           tslock_client_errstr(c));
    rc = lock_cycle(c, "tls-api-url");
    result(rc == TSLOCK_OK, "a lock over rediss://", tslock_client_errstr(c));
    tslock_client_free(c);
}

/* Every connection to the TLS port closed by the server. */
static void kill_tls_clients(const char *sock, int port)
{
    redisContext *k = redisConnectUnix(sock);
    redisReply *r;

    if (k == NULL || k->err) {
        fprintf(stderr, "cannot reach %s\n", sock);
        exit(1);
    }
    r = redisCommand(k, "CLIENT KILL LADDR 127.0.0.1:%d", port);
    freeReplyObject(r);
    redisFree(k);
}

static void check_wrapped(int port, const char *sock, tslock_tls *t,
                          tslock_tls *wrong)
{
    redisContext *ctx = redisConnect("localhost", port);
    tslock_client *c = NULL;
    char err[512] = "";
    int rc;

    rc = tslock_conn_start_tls(ctx, t, "localhost", err, sizeof(err));
    result(rc == TSLOCK_OK, "tslock_conn_start_tls on a caller's context", err);
    tslock_client_new(&c);
    rc = tslock_client_wrap(c, ctx);
    result(rc == TSLOCK_OK, "tslock_client_wrap of a TLS context",
           tslock_client_errstr(c));
    result(lock_cycle(c, "tls-api-wrap") == TSLOCK_OK,
           "a lock on the wrapped TLS context", tslock_client_errstr(c));
    kill_tls_clients(sock, port);
    rc = lock_cycle(c, "tls-api-wrap");
    result(rc == TSLOCK_EIO, "the server closed it: EIO",
           tslock_client_errstr(c));
    rc = tslock_client_reconnect(c);
    result(rc == TSLOCK_OK, "tslock_client_reconnect redoes the handshake",
           tslock_client_errstr(c));
    result(lock_cycle(c, "tls-api-wrap") == TSLOCK_OK,
           "a lock after the reconnect", tslock_client_errstr(c));
    tslock_client_free(c);
    tslock_conn_free(ctx);

    ctx = redisConnect("localhost", port);
    rc = tslock_conn_start_tls(ctx, wrong, "localhost", err, sizeof(err));
    result(rc == TSLOCK_ETLS && strstr(err, "certificate verify failed"),
           "tslock_conn_start_tls with a wrong CA: ETLS, OpenSSL's words", err);
    tslock_conn_free(ctx);
}

/* A field of the plain port's INFO stats; -1 when missing. */
static long long accepted(redisContext *plain)
{
    redisReply *r = redisCommand(plain, "INFO stats");
    const char *p = r != NULL && r->type == REDIS_REPLY_STRING
                        ? strstr(r->str, "total_connections_received:")
                        : NULL;
    long long n = p != NULL ? atoll(strchr(p, ':') + 1) : -1;

    freeReplyObject(r);
    return n;
}

/* Subscribers of key's channel, asked on the plain port. */
static long long numsub(redisContext *plain, const char *key)
{
    redisReply *r = redisCommand(plain, "PUBSUB NUMSUB {%s}:released", key);
    long long n = -1;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        n = r->element[1]->integer;
    freeReplyObject(r);
    return n;
}

/* A wait of c on key, held by h: subscribes, runs out (EBUSY). */
static int brief_wait(tslock_client *c, tslock_client *h, const char *key)
{
    tslock_lock *l = NULL, *hl = NULL;
    int rc = tslock_lock_new(&l, c, key);

    if (rc == TSLOCK_OK)
        rc = tslock_lock_new(&hl, h, key);
    if (rc == TSLOCK_OK)
        rc = tslock_acquire(hl, 0);
    if (rc == TSLOCK_OK) {
        tslock_lock_set_retry(l, 1, 2);
        rc = tslock_acquire(l, 5);
        tslock_release(hl);
    }
    tslock_lock_free(l);
    tslock_lock_free(hl);
    return rc;
}

/*
 * Waits on two keys over TLS: the subscriber connection (TLS) is opened
 * once and moved from the first key's channels to the second's on it.
 */
static void check_waits(int port, int plain_port, tslock_tls *t)
{
    redisContext *plain = redisConnect("127.0.0.1", plain_port);
    tslock_client *c = NULL, *h = NULL;
    long long n0;
    int rc1, rc2;

    tslock_client_new(&c);
    tslock_client_new(&h);
    tslock_client_set_tls(c, t);
    tslock_client_set_tls(h, t);
    if (plain == NULL || plain->err
        || tslock_client_connect_tcp(c, "localhost", port) != TSLOCK_OK
        || tslock_client_connect_tcp(h, "localhost", port) != TSLOCK_OK) {
        result(0, "waits on two keys over TLS", "cannot connect");
    } else {
        n0 = accepted(plain);
        rc1 = brief_wait(c, h, "tls-swap-a");
        rc2 = brief_wait(c, h, "tls-swap-b");
        result(rc1 == TSLOCK_EBUSY && rc2 == TSLOCK_EBUSY
                   && accepted(plain) == n0 + 1
                   && numsub(plain, "tls-swap-a") == 0
                   && numsub(plain, "tls-swap-b") == 1,
               "waits on two keys over TLS: one subscriber connection, "
               "moved",
               tslock_client_errstr(c));
    }
    redisFree(plain);
    tslock_client_free(c);
    tslock_client_free(h);
}

int main(int argc, char **argv)
{
    tslock_tls *t, *wrong;
    tslock_client *c = NULL;
    int port, plain;

    if (argc != 8) {
        fprintf(stderr, "usage: tls_api PORT PLAIN_PORT SOCKET CA CERT KEY "
                        "OTHER_CA\n");
        return 2;
    }
    port = atoi(argv[1]);
    plain = atoi(argv[2]);
    t = settings(argv[4], argv[5], argv[6]);
    wrong = settings(argv[7], argv[5], argv[6]);
    check_settings(argv[4]);
    check_url(port, argv[4], argv[5], argv[6]);
    check_wrapped(port, argv[3], t, wrong);
    check_waits(port, plain, t);

    /* TLS on, then off again: the plain port. */
    tslock_client_new(&c);
    tslock_client_set_tls(c, t);
    tslock_client_set_tls(c, NULL);
    result(tslock_client_connect_tcp(c, "127.0.0.1", plain) == TSLOCK_OK
               && lock_cycle(c, "tls-api-plain") == TSLOCK_OK,
           "tslock_client_set_tls(NULL): plain text again",
           tslock_client_errstr(c));
    tslock_client_free(c);
    tslock_tls_free(t);
    tslock_tls_free(wrong);
    return failures == 0 ? 0 : 1;
}
