/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.c - TLS (rediss://) on tslock's own wire, with OpenSSL: the
 * settings (tslock_tls), the handshake on a connected hiredis context,
 * and the reads and writes of a TLS connection, whose plaintext feeds
 * hiredis's reader.  A TLS context carries its state in its reader's
 * privdata, so a plain one is told apart by one pointer (doc/tls.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "net.h"

#ifdef TSLOCK_HAVE_TLS
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

enum { VERIFY_REQUIRED, VERIFY_OPTIONAL, VERIFY_NONE };

struct tslock_tls {
    char *cacert, *cacertdir, *cert, *key, *key_password, *sni;
    int verify;
    int check_hostname;
#ifdef TSLOCK_HAVE_TLS
    SSL_CTX *ssl_ctx; /* built by tslock_client_set_tls(), or NULL */
#endif
};

static void wipe_free(char *s)
{
    if (s != NULL) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

static void settings_clear(tslock_tls *t)
{
    free(t->cacert);
    free(t->cacertdir);
    free(t->cert);
    free(t->key);
    wipe_free(t->key_password);
    free(t->sni);
#ifdef TSLOCK_HAVE_TLS
    SSL_CTX_free(t->ssl_ctx);
#endif
    memset(t, 0, sizeof(*t));
}

void tslock_tls_free(tslock_tls *t)
{
    if (t == NULL)
        return;
    settings_clear(t);
    free(t);
}

int tslock_tls_new(tslock_tls **out)
{
    if (out == NULL)
        return TSLOCK_EINVAL;
    *out = NULL;
#ifndef TSLOCK_HAVE_TLS
    return TSLOCK_EUNSUPPORTED;
#else
    *out = calloc(1, sizeof(**out));
    if (*out == NULL)
        return TSLOCK_ENOMEM;
    (*out)->verify = VERIFY_REQUIRED;
    (*out)->check_hostname = 1;
    return TSLOCK_OK;
#endif
}

static int set_fail(char *err, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int set_fail(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && size > 0) {
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return TSLOCK_EINVAL;
}

/* The settings whose value is a string, by both spellings. */
static char **string_slot(tslock_tls *t, const char *name)
{
    static const char *const names[][2] = {
        {"cacert", "ssl_ca_certs"},       {"cacertdir", "ssl_ca_path"},
        {"cert", "ssl_certfile"},         {"key", "ssl_keyfile"},
        {"key_password", "ssl_password"}, {"sni", "ssl_server_hostname"}};
    char **slots[] = {&t->cacert, &t->cacertdir,    &t->cert,
                      &t->key,    &t->key_password, &t->sni};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i][0]) == 0 || strcmp(name, names[i][1]) == 0)
            return slots[i];
    return NULL;
}

int tslock_tls_set(tslock_tls *t, const char *name, const char *value,
                   char *err, size_t errsize)
{
    char **slot;

    if (err != NULL && errsize > 0)
        err[0] = '\0';
    if (t == NULL || name == NULL)
        return set_fail(err, errsize, "expected TLS settings and a name");
    if (strcmp(name, "insecure") == 0) {
        t->verify = VERIFY_NONE;
        return TSLOCK_OK;
    }
    if (value == NULL)
        return set_fail(err, errsize, "the TLS setting '%.40s' needs a value",
                        name);
    if ((slot = string_slot(t, name)) != NULL) {
        char *copy = strdup(value);
        if (copy == NULL)
            return TSLOCK_ENOMEM;
        wipe_free(*slot);
        *slot = copy;
        return TSLOCK_OK;
    }
    if (strcmp(name, "verify") == 0 || strcmp(name, "ssl_cert_reqs") == 0) {
        static const char *const modes[] = {"required", "optional", "none"};
        int i;
        for (i = 0; i < 3; i++)
            if (strcasecmp(value, modes[i]) == 0) {
                t->verify = i;
                return TSLOCK_OK;
            }
        return set_fail(err, errsize,
                        "%s expects required, optional or none, got '%.40s'",
                        name, value);
    }
    if (strcmp(name, "check_hostname") == 0
        || strcmp(name, "ssl_check_hostname") == 0) {
        if (strcasecmp(value, "true") == 0 || strcmp(value, "1") == 0
            || strcasecmp(value, "yes") == 0)
            t->check_hostname = 1;
        else if (strcasecmp(value, "false") == 0 || strcmp(value, "0") == 0
                 || strcasecmp(value, "no") == 0)
            t->check_hostname = 0;
        else
            return set_fail(err, errsize,
                            "%s expects true or false, got '%.40s'", name,
                            value);
        return TSLOCK_OK;
    }
    return set_fail(err, errsize,
                    "unknown TLS setting '%.40s' (expected cacert, "
                    "cacertdir, cert, key, key_password, sni, verify, "
                    "insecure or check_hostname, or redis-py's ssl_* "
                    "names)",
                    name);
}

#ifndef TSLOCK_HAVE_TLS

int tslock_client_set_tls(tslock_client *c, const tslock_tls *tls)
{
    if (c == NULL)
        return TSLOCK_EINVAL;
    if (tls == NULL)
        return TSLOCK_OK;
    return tslock__fail(c, TSLOCK_EUNSUPPORTED,
                        "this libtslock was built without TLS (configure "
                        "--with-tls, with OpenSSL)");
}

int tslock_conn_start_tls(redisContext *ctx, const tslock_tls *tls,
                          const char *host, char *err, size_t errsize)
{
    (void)ctx;
    (void)tls;
    (void)host;
    if (err != NULL && errsize > 0)
        snprintf(err, errsize, "this libtslock was built without TLS");
    return TSLOCK_EUNSUPPORTED;
}

int tslock__tls_attach(tslock_client *c, redisContext *ctx, const char *host,
                       int port)
{
    (void)c;
    (void)ctx;
    (void)host;
    (void)port;
    return TSLOCK_OK;
}

int tslock__reconnect_ctx(redisContext *ctx, const struct tslock__peer *peer,
                          int connect_ms)
{
    return tslock__redis_reconnect(ctx, peer, connect_ms);
}

#else /* TSLOCK_HAVE_TLS */

/* One TLS connection: what its context's reader's privdata points to. */
struct tls_conn {
    const struct tslock__io *io; /* first: see net.h */
    SSL *ssl;
    BIO_METHOD *meth; /* ours: send(MSG_NOSIGNAL), so no SIGPIPE */
    int fd;
    char *host;     /* the name checked, again on reconnect */
    int check_host; /* whether it is checked */
    /*
     * The server asked for a client certificate and none was set: with
     * TLS 1.3 it refuses only after the handshake, and its alert may be
     * lost to the reset that follows, so the first read says so.
     */
    int cert_requested;
    int got_data;
};

#define CONN(ctx) ((struct tls_conn *)(ctx)->reader->privdata)
static const struct tslock__io tls_io; /* at the end of the file */

/*
 * OpenSSL's socket BIO writes with write(2), which raises SIGPIPE on a
 * connection the server closed; this one sends with MSG_NOSIGNAL, as the
 * plain writer does (wire.c).  A timeout (SO_RCVTIMEO) is an error, not
 * a retry: the socket is blocking.
 */
static int bio_write(BIO *b, const char *buf, int len)
{
    struct tls_conn *t = BIO_get_data(b);
    ssize_t n;

    do
        n = send(t->fd, buf, (size_t)len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    BIO_clear_retry_flags(b);
    return (int)n;
}

static int bio_read(BIO *b, char *buf, int len)
{
    struct tls_conn *t = BIO_get_data(b);
    ssize_t n;

    do
        n = recv(t->fd, buf, (size_t)len, 0);
    while (n < 0 && errno == EINTR);
    BIO_clear_retry_flags(b);
    return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static void conn_free(struct tls_conn *t)
{
    if (t == NULL)
        return;
    SSL_free(t->ssl); /* frees the BIO too */
    BIO_meth_free(t->meth);
    free(t->host);
    free(t);
}

/* Called only when the server asks for a certificate and none is set. */
static int client_cert_cb(SSL *ssl, X509 **x509, EVP_PKEY **pkey)
{
    struct tls_conn *t = SSL_get_app_data(ssl);

    (void)x509;
    (void)pkey;
    if (t != NULL)
        t->cert_requested = 1;
    return 0; /* send none */
}

/* OpenSSL never prompts on the terminal: the passphrase given, or none. */
static int key_password_cb(char *buf, int size, int rwflag, void *ud)
{
    const char *pw = ud;
    size_t len = pw != NULL ? strlen(pw) : 0;

    (void)rwflag;
    if (pw == NULL || len >= (size_t)size)
        return 0;
    memcpy(buf, pw, len);
    return (int)len;
}

/* OpenSSL's reason for the last failure, its queue emptied. */
static const char *ssl_reason(char *buf, size_t size)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;

    snprintf(buf, size, "%s", r != NULL ? r : "unknown reason");
    ERR_clear_error();
    return buf;
}

/* The SSL_CTX of t: its CAs, certificate and key loaded.  ETLS in why. */
static int build_ctx(tslock_tls *t, char *why, size_t size)
{
    char reason[160];
    SSL_CTX *sc;
    int ok;

    if (t->ssl_ctx != NULL)
        return TSLOCK_OK;
    ERR_clear_error();
    sc = SSL_CTX_new(TLS_client_method());
    if (sc == NULL)
        return TSLOCK_ENOMEM;
    (void)SSL_CTX_set_min_proto_version(sc, TLS1_2_VERSION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    /* Redis closes without close_notify: an EOF, not a protocol error. */
    SSL_CTX_set_options(sc, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    SSL_CTX_set_mode(sc, SSL_MODE_AUTO_RETRY);
    SSL_CTX_set_default_passwd_cb(sc, key_password_cb);
    SSL_CTX_set_client_cert_cb(sc, client_cert_cb);
    SSL_CTX_set_default_passwd_cb_userdata(sc, t->key_password);
    if (t->cacert != NULL || t->cacertdir != NULL)
        ok = SSL_CTX_load_verify_locations(sc, t->cacert, t->cacertdir);
    else
        ok = SSL_CTX_set_default_verify_paths(sc);
    if (!ok) {
        snprintf(why, size, "cannot load the CA certificates from '%s': %s",
                 t->cacert != NULL ? t->cacert : t->cacertdir,
                 ssl_reason(reason, sizeof(reason)));
        goto fail;
    }
    if (t->key != NULL && t->cert == NULL) {
        snprintf(why, size,
                 "a client key ('%s') needs its certificate "
                 "(--cert, ssl_certfile=)",
                 t->key);
        goto fail;
    }
    if (t->cert != NULL) {
        const char *key = t->key != NULL ? t->key : t->cert;
        if (SSL_CTX_use_certificate_chain_file(sc, t->cert) != 1) {
            snprintf(why, size, "cannot load the client certificate '%s': %s",
                     t->cert, ssl_reason(reason, sizeof(reason)));
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(sc, key, SSL_FILETYPE_PEM) != 1) {
            snprintf(why, size, "cannot load the client key '%s': %s (%s)", key,
                     ssl_reason(reason, sizeof(reason)),
                     t->key_password != NULL
                         ? "is the key's passphrase right?"
                         : "an encrypted key needs its passphrase, "
                           "ssl_password= or $TSLOCK_TLS_KEY_PASSWORD");
            goto fail;
        }
        if (SSL_CTX_check_private_key(sc) != 1) {
            snprintf(why, size,
                     "the client key '%s' does not match the "
                     "certificate '%s'",
                     key, t->cert);
            goto fail;
        }
    }
    /* The passphrase served its purpose: do not keep it in memory. */
    SSL_CTX_set_default_passwd_cb_userdata(sc, NULL);
    t->ssl_ctx = sc;
    return TSLOCK_OK;
fail:
    ERR_clear_error();
    SSL_CTX_free(sc);
    return TSLOCK_ETLS;
}

static int copy_settings(tslock_tls *to, const tslock_tls *from)
{
    const char *const *src[] = {(const char *const *)&from->cacert,
                                (const char *const *)&from->cacertdir,
                                (const char *const *)&from->cert,
                                (const char *const *)&from->key,
                                (const char *const *)&from->key_password,
                                (const char *const *)&from->sni};
    char **dst[] = {&to->cacert, &to->cacertdir,    &to->cert,
                    &to->key,    &to->key_password, &to->sni};
    size_t i;

    memset(to, 0, sizeof(*to));
    to->verify = from->verify;
    to->check_hostname = from->check_hostname;
    for (i = 0; i < sizeof(dst) / sizeof(dst[0]); i++)
        if (*src[i] != NULL && (*dst[i] = strdup(*src[i])) == NULL) {
            settings_clear(to);
            return TSLOCK_ENOMEM;
        }
    return TSLOCK_OK;
}

int tslock_client_set_tls(tslock_client *c, const tslock_tls *tls)
{
    tslock_tls *copy;
    char why[TSLOCK__ERRSTR_SIZE];
    int rc;

    if (c == NULL)
        return TSLOCK_EINVAL;
    if (tls == NULL) {
        tslock_tls_free(c->tls);
        c->tls = NULL;
        return TSLOCK_OK;
    }
    copy = calloc(1, sizeof(*copy));
    if (copy == NULL || copy_settings(copy, tls) != TSLOCK_OK) {
        free(copy);
        return TSLOCK_ENOMEM;
    }
    rc = build_ctx(copy, why, sizeof(why));
    wipe_free(copy->key_password);
    copy->key_password = NULL;
    if (rc != TSLOCK_OK) {
        tslock_tls_free(copy);
        return rc == TSLOCK_ETLS ? tslock__fail(c, rc, "TLS: %s", why) : rc;
    }
    tslock_tls_free(c->tls);
    c->tls = copy;
    return TSLOCK_OK;
}

static int is_ip_literal(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, buf) == 1
           || inet_pton(AF_INET6, host, buf) == 1;
}

/* What a failed certificate check means to the user, after its words. */
static const char *verify_hint(long v)
{
    switch (v) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
        return "the server's certificate is not signed by a CA trusted here "
               "(--cacert, ssl_ca_certs=)";
    case X509_V_ERR_CERT_HAS_EXPIRED:
        return "the server's certificate is past its end date";
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return "the server's certificate is not valid yet (check the clocks)";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        return "the certificate does not name the host connected to "
               "(--sni NAME checks another name)";
    default:
        return "";
    }
}

/*
 * Why SSL_connect() failed, in words a user can act on: the certificate
 * check's own result, a server that did not answer in TLS, or a server
 * that wanted a client certificate.
 */
static void handshake_error(SSL *ssl, int ret, const char *where, char *why,
                            size_t size)
{
    long v = SSL_get_verify_result(ssl);
    int err = SSL_get_error(ssl, ret), saved = errno;
    unsigned long e = ERR_peek_last_error();
    int lib_reason = e != 0 ? ERR_GET_REASON(e) : 0;
    const char *reason = e != 0 ? ERR_reason_error_string(e) : NULL;
    const char *hint;

    if (v != X509_V_OK) {
        hint = verify_hint(v);
        snprintf(why, size,
                 "TLS handshake with %s: certificate verify failed: "
                 "%s%s%s",
                 where, X509_verify_cert_error_string(v), hint[0] ? "; " : "",
                 hint);
    } else if (lib_reason == SSL_R_WRONG_VERSION_NUMBER
               || lib_reason == SSL_R_PACKET_LENGTH_TOO_LONG
               || lib_reason == SSL_R_RECORD_LENGTH_MISMATCH
               || lib_reason == SSL_R_UNEXPECTED_EOF_WHILE_READING
               || (err == SSL_ERROR_SYSCALL && e == 0)) {
        snprintf(why, size,
                 "TLS handshake with %s: the server did not answer in TLS "
                 "(%s; is it a plain-text port? use redis:// without --tls)",
                 where,
                 reason != NULL ? reason
                 : saved == EAGAIN || saved == EWOULDBLOCK
                     ? "no answer before the timeout"
                 : saved != 0 ? strerror(saved)
                              : "it closed the connection");
    } else if (reason != NULL && strstr(reason, "certificate required")) {
        snprintf(why, size,
                 "TLS handshake with %s: the server requires a client "
                 "certificate (%s; give --cert and --key, ssl_certfile= "
                 "and ssl_keyfile=)",
                 where, reason);
    } else if (reason != NULL
               && (strstr(reason, "unknown ca")
                   || strstr(reason, "bad certificate")
                   || strstr(reason, "certificate expired"))) {
        snprintf(why, size,
                 "TLS handshake with %s: the server refused this client's "
                 "certificate (%s)",
                 where, reason);
    } else {
        snprintf(why, size, "TLS handshake with %s failed: %s", where,
                 reason != NULL ? reason
                 : saved != 0 ? strerror(saved)
                              : "no reason given");
    }
    ERR_clear_error();
}

/* A new SSL on ctx's socket, checking host; NULL when out of memory. */
static struct tls_conn *conn_new(SSL_CTX *sc, redisContext *ctx,
                                 const char *host, const char *sni, int verify,
                                 int check_host)
{
    struct tls_conn *t = calloc(1, sizeof(*t));
    const char *name = sni != NULL ? sni : host;
    BIO *bio;

    if (t == NULL)
        return NULL;
    t->fd = ctx->fd;
    t->check_host = check_host && verify != VERIFY_NONE;
    t->host = strdup(name);
    /*
     * A method of our own per connection, so there is no global state;
     * its type is not registered (BIO_get_new_index() hands out an index
     * per call, and would run out of them), as nothing looks it up.
     */
    t->meth = BIO_meth_new(BIO_TYPE_SOURCE_SINK, "tslock socket");
    t->ssl = SSL_new(sc);
    if (t->host == NULL || t->meth == NULL || t->ssl == NULL)
        goto fail;
    BIO_meth_set_write(t->meth, bio_write);
    BIO_meth_set_read(t->meth, bio_read);
    BIO_meth_set_ctrl(t->meth, bio_ctrl);
    BIO_meth_set_create(t->meth, bio_create);
    if ((bio = BIO_new(t->meth)) == NULL)
        goto fail;
    BIO_set_data(bio, t);
    SSL_set_bio(t->ssl, bio, bio);
    SSL_set_app_data(t->ssl, t);
    SSL_set_verify(t->ssl,
                   verify == VERIFY_NONE ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                   NULL);
    if (!is_ip_literal(name))
        (void)SSL_set_tlsext_host_name(t->ssl, name);
    if (t->check_host) {
        X509_VERIFY_PARAM *param = SSL_get0_param(t->ssl);
        if (is_ip_literal(name))
            (void)X509_VERIFY_PARAM_set1_ip_asc(param, name);
        else
            (void)X509_VERIFY_PARAM_set1_host(param, name, 0);
    }
    return t;
fail:
    conn_free(t);
    return NULL;
}

/* Handshake on ctx; on success ctx is a TLS context.  why on failure. */
static int handshake(SSL_CTX *sc, redisContext *ctx, const char *host,
                     const char *sni, int verify, int check_host,
                     const char *where, char *why, size_t size)
{
    struct tls_conn *t;
    int ret;

    if (ctx->reader->privdata != NULL) {
        snprintf(why, size, "the connection's reader privdata is in use");
        return TSLOCK_EINVAL;
    }
    ERR_clear_error();
    t = conn_new(sc, ctx, host, sni, verify, check_host);
    if (t == NULL) {
        snprintf(why, size, "out of memory");
        return TSLOCK_ENOMEM;
    }
    errno = 0;
    ret = SSL_connect(t->ssl);
    if (ret != 1) {
        handshake_error(t->ssl, ret, where, why, size);
        conn_free(t);
        return TSLOCK_ETLS;
    }
    t->io = &tls_io;
    ctx->reader->privdata = t;
    return TSLOCK_OK;
}

int tslock_conn_start_tls(redisContext *ctx, const tslock_tls *tls,
                          const char *host, char *err, size_t errsize)
{
    char why[TSLOCK__ERRSTR_SIZE];
    tslock_tls copy;
    int rc;

    if (ctx == NULL || tls == NULL || host == NULL || ctx->err)
        return TSLOCK_EINVAL;
    if (copy_settings(&copy, tls) != TSLOCK_OK)
        return TSLOCK_ENOMEM;
    rc = build_ctx(&copy, why, sizeof(why));
    if (rc == TSLOCK_OK)
        rc = handshake(copy.ssl_ctx, ctx, host, copy.sni, copy.verify,
                       copy.check_hostname, host, why, sizeof(why));
    settings_clear(&copy); /* the SSL keeps its own reference */
    if (rc != TSLOCK_OK && err != NULL && errsize > 0)
        snprintf(err, errsize, "%s", why);
    return rc;
}

int tslock__tls_attach(tslock_client *c, redisContext *ctx, const char *host,
                       int port)
{
    char why[TSLOCK__ERRSTR_SIZE], where[300];
    int rc;

    if (c->tls == NULL)
        return TSLOCK_OK;
    /* The handshake is bounded by the command timeout, as a command. */
    if (c->command_ms > 0)
        (void)redisSetTimeout(ctx, tslock__ms_to_timeval(c->command_ms));
    snprintf(where, sizeof(where), "%s:%d", host, port);
    rc = handshake(c->tls->ssl_ctx, ctx, host, c->tls->sni, c->tls->verify,
                   c->tls->check_hostname, where, why, sizeof(why));
    return rc == TSLOCK_OK ? rc : tslock__fail(c, rc, "%s", why);
}

static void tls_close(redisContext *ctx)
{
    struct tls_conn *t = CONN(ctx);

    ctx->reader->privdata = NULL;
    /*
     * No close_notify: closing sends nothing, as on a plain connection,
     * so a child after fork() closing its copy of a parent's connection
     * (the Python module's pool does) leaves the parent's TLS session
     * intact.  Redis needs none.
     */
    conn_free(t);
}

/*
 * hiredis reconnects a context in place, with a new reader; a TLS one
 * then needs a new handshake, with the same settings and name.
 */
int tslock__reconnect_ctx(redisContext *ctx, const struct tslock__peer *peer,
                          int connect_ms)
{
    struct tls_conn *t = ctx->reader != NULL ? CONN(ctx) : NULL;
    char why[TSLOCK__ERRSTR_SIZE];
    SSL_CTX *sc;
    int verify, rc;

    if (t == NULL)
        return tslock__redis_reconnect(ctx, peer, connect_ms);
    ctx->reader->privdata = NULL;
    sc = SSL_get_SSL_CTX(t->ssl);
    SSL_CTX_up_ref(sc);
    verify = SSL_get_verify_mode(t->ssl) == SSL_VERIFY_NONE ? VERIFY_NONE
                                                            : VERIFY_REQUIRED;
    rc = tslock__redis_reconnect(ctx, peer, connect_ms);
    if (rc == REDIS_OK) {
        ctx->reader->privdata = NULL;
        rc = handshake(sc, ctx, t->host, NULL, verify, t->check_host, t->host,
                       why, sizeof(why));
        if (rc != TSLOCK_OK) {
            ctx->err = REDIS_ERR_OTHER;
            snprintf(ctx->errstr, sizeof(ctx->errstr), "%.120s", why);
            rc = REDIS_ERR;
        }
    }
    SSL_CTX_free(sc);
    conn_free(t);
    return rc == TSLOCK_OK ? REDIS_OK : REDIS_ERR;
}

/*
 * A failed SSL_read or SSL_write, as hiredis reports I/O: EOF when the
 * server closed, else REDIS_ERR_IO with errno kept (a timeout is
 * EAGAIN, which tslock__io_failure() tells apart).
 */
static int tls_io_error(redisContext *ctx, SSL *ssl, int ret)
{
    int err = SSL_get_error(ssl, ret), saved = errno;
    struct tls_conn *t = SSL_get_app_data(ssl);
    char reason[160];

    if (t->cert_requested && !t->got_data && err != SSL_ERROR_SSL) {
        ctx->err = REDIS_ERR_OTHER;
        snprintf(ctx->errstr, sizeof(ctx->errstr),
                 "TLS: client certificate required by the server, none "
                 "given (%.40s)",
                 saved != 0 ? strerror(saved) : "connection closed");
        ERR_clear_error();
        errno = saved;
        return REDIS_ERR;
    }

    if (err == SSL_ERROR_ZERO_RETURN
        || (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0
            && (ret == 0 || saved == 0))) {
        ctx->err = REDIS_ERR_EOF;
        snprintf(ctx->errstr, sizeof(ctx->errstr),
                 "Server closed the connection");
        ERR_clear_error();
    } else if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        ctx->err = REDIS_ERR_IO;
        snprintf(ctx->errstr, sizeof(ctx->errstr), "%s", strerror(saved));
    } else {
        /* TLS's own failure (an alert, a bad record): tslock__io_failure
         * reports REDIS_ERR_OTHER with "TLS: " as TSLOCK_ETLS. */
        ctx->err = REDIS_ERR_OTHER;
        snprintf(ctx->errstr, sizeof(ctx->errstr), "TLS: %.100s",
                 ssl_reason(reason, sizeof(reason)));
        saved = EPROTO;
    }
    errno = saved;
    return REDIS_ERR;
}

static int tls_write(redisContext *ctx, const char *buf, size_t len)
{
    SSL *ssl = CONN(ctx)->ssl;

    while (len > 0) {
        int chunk = len > INT32_MAX ? INT32_MAX : (int)len;
        int n = SSL_write(ssl, buf, chunk);
        if (n <= 0)
            return tls_io_error(ctx, ssl, n);
        buf += n;
        len -= (size_t)n;
    }
    return REDIS_OK;
}

static int tls_buffer_read(redisContext *ctx)
{
    SSL *ssl = CONN(ctx)->ssl;
    char buf[16384];

    if (ctx->err)
        return REDIS_ERR;
    /* One record, then whatever OpenSSL already holds decrypted. */
    do {
        int n = SSL_read(ssl, buf, sizeof(buf));
        if (n <= 0)
            return tls_io_error(ctx, ssl, n);
        CONN(ctx)->got_data = 1;
        if (redisReaderFeed(ctx->reader, buf, (size_t)n) != REDIS_OK) {
            ctx->err = ctx->reader->err;
            snprintf(ctx->errstr, sizeof(ctx->errstr), "%s",
                     ctx->reader->errstr);
            return REDIS_ERR;
        }
    } while (SSL_pending(ssl) > 0);
    return REDIS_OK;
}

static int reader_reply(redisContext *ctx, void **reply)
{
    if (redisReaderGetReply(ctx->reader, reply) == REDIS_OK)
        return REDIS_OK;
    ctx->err = ctx->reader->err;
    snprintf(ctx->errstr, sizeof(ctx->errstr), "%s", ctx->reader->errstr);
    return REDIS_ERR;
}

static int tls_get_reply(redisContext *ctx, void **reply)
{
    *reply = NULL;
    if (reader_reply(ctx, reply) != REDIS_OK)
        return REDIS_ERR;
    while (*reply == NULL) {
        if (tls_buffer_read(ctx) != REDIS_OK
            || reader_reply(ctx, reply) != REDIS_OK)
            return REDIS_ERR;
    }
    return REDIS_OK;
}

static const struct tslock__io tls_io = {tls_write, tls_buffer_read,
                                         tls_get_reply, tls_close};

#endif /* TSLOCK_HAVE_TLS */
