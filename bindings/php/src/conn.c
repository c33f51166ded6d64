/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.c - connections for Tslock\Client::fromUrl(): the URL read by the
 * library's own parser, phpredis' names of the TLS stream context mapped
 * onto tslock_tls_set()'s, and the pool of persistent connections that
 * outlive a request as phpredis' pconnect() ones do.  A pooled client
 * carries no lock between requests: locks are request objects, and the
 * ones still held at the end of a request are released by RSHUTDOWN.
 */
#include "php_tslock.h"

#include <unistd.h>

#include "zend_smart_str.h"

/*
 * The SSL context options of PHP streams (the "stream" array phpredis
 * takes) and the tslock_tls_set() setting each one is.  verify_peer and
 * verify_peer_name are booleans; the rest are strings.
 */
static const struct {
    const char *php, *tslock;
} stream_names[] = {
    {"cafile", "cacert"},           {"capath", "cacertdir"},
    {"local_cert", "cert"},         {"local_pk", "key"},
    {"passphrase", "key_password"}, {"peer_name", "sni"},
    {"verify_peer", "verify"},      {"verify_peer_name", "check_hostname"},
};

static const char *stream_setting(const char *php)
{
    size_t i;

    for (i = 0; i < sizeof(stream_names) / sizeof(stream_names[0]); i++)
        if (strcmp(stream_names[i].php, php) == 0)
            return stream_names[i].tslock;
    return NULL;
}

/* Add the stream options to the URL's TLS settings; throws on failure. */
static int apply_stream(struct tslock_url *u, HashTable *stream)
{
    zend_string *name;
    zval *val;
    char err[256];

    if (u->tls == NULL) {
        ptslock_throw(TSLOCK_EINVAL, "the \"stream\" options need a "
                                     "rediss:// URL");
        return -1;
    }
    ZEND_HASH_FOREACH_STR_KEY_VAL(stream, name, val)
    {
        const char *setting =
            name != NULL ? stream_setting(ZSTR_VAL(name)) : NULL;
        zend_string *text;
        int rc;

        if (setting == NULL) {
            snprintf(err, sizeof(err),
                     "stream option %s: expected one of cafile, capath, "
                     "local_cert, local_pk, passphrase, peer_name, "
                     "verify_peer, verify_peer_name",
                     name != NULL ? ZSTR_VAL(name) : "(a number)");
            ptslock_throw(TSLOCK_EINVAL, err);
            return -1;
        }
        if (strcmp(setting, "verify") == 0)
            text = zend_string_init(zend_is_true(val) ? "required" : "none",
                                    zend_is_true(val) ? 8 : 4, 0);
        else if (strcmp(setting, "check_hostname") == 0)
            text = zend_string_init(zend_is_true(val) ? "true" : "false",
                                    zend_is_true(val) ? 4 : 5, 0);
        else
            text = zval_get_string(val);
        rc = tslock_tls_set(u->tls, setting, ZSTR_VAL(text), err, sizeof(err));
        zend_string_release(text);
        if (rc != TSLOCK_OK) {
            ptslock_throw(rc, err);
            return -1;
        }
    }
    ZEND_HASH_FOREACH_END();
    return 0;
}

/* A timeout option in seconds (float) as milliseconds; -1 when bad. */
static int option_ms(HashTable *options, const char *name)
{
    zval *v = options != NULL ? zend_hash_str_find(options, name, strlen(name))
                              : NULL;
    double s;

    if (v == NULL || Z_TYPE_P(v) == IS_NULL)
        return 0;
    s = zval_get_double(v);
    if (!(s >= 0 && s <= 86400)) {
        ptslock_throw(TSLOCK_EINVAL, "timeouts are seconds from 0 to 86400");
        return -1;
    }
    return (int)(s * 1000 + 0.5);
}

/* Connect a new client; NULL with an exception thrown on failure. */
static tslock_client *connect_new(zend_string *url, HashTable *stream,
                                  int connect_ms, int command_ms)
{
    struct tslock_url u;
    tslock_client *c = NULL;
    char err[256];
    int rc;

    rc = tslock_url_parse(ZSTR_VAL(url), 0, &u, err, sizeof(err));
    if (rc != TSLOCK_OK) {
        ptslock_throw(rc, err);
        return NULL;
    }
    if (stream != NULL && apply_stream(&u, stream) != 0)
        goto out;
    rc = tslock_client_new(&c);
    if (rc == TSLOCK_OK)
        rc = tslock_client_set_timeouts(c, connect_ms, command_ms);
    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_parsed_url(c, &u);
    if (rc != TSLOCK_OK) {
        ptslock_throw_client(rc, c);
        tslock_client_free(c);
        c = NULL;
    }
out:
    tslock_url_free(&u);
    return c;
}

/* What makes two persistent connections the same: all of fromUrl's input. */
static zend_string *pool_key(zend_string *url, zval *id, HashTable *stream,
                             int connect_ms, int command_ms)
{
    smart_str key = {0};
    zend_string *name;
    zval *val;

    smart_str_append(&key, url);
    smart_str_appendc(&key, '\n');
    if (id != NULL && Z_TYPE_P(id) == IS_STRING)
        smart_str_append(&key, Z_STR_P(id));
    smart_str_append_printf(&key, "\n%d\n%d", connect_ms, command_ms);
    if (stream != NULL) {
        ZEND_HASH_FOREACH_STR_KEY_VAL(stream, name, val)
        {
            zend_string *text = zval_get_string(val);

            smart_str_appendc(&key, '\n');
            if (name != NULL)
                smart_str_append(&key, name);
            smart_str_appendc(&key, '=');
            smart_str_append(&key, text);
            zend_string_release(text);
        }
        ZEND_HASH_FOREACH_END();
    }
    smart_str_0(&key);
    return key.s;
}

/*
 * The pooled connection for key, reconnected when it broke or was
 * inherited through fork(); NULL with an exception on failure (the entry
 * stays for the next request to try again).
 */
static ptslock_conn *pool_take(zend_string *key)
{
    ptslock_conn *conn = zend_hash_find_ptr(&TSLOCK_G(pool), key);
    int rc;

    if (conn == NULL)
        return NULL;
    if (conn->pid != getpid() || tslock_client_is_broken(conn->client)) {
        rc = tslock_client_reconnect(conn->client);
        if (rc != TSLOCK_OK) {
            ptslock_throw_client(rc, conn->client);
            return NULL;
        }
        conn->pid = getpid();
    } else {
        TSLOCK_G(pool_hits)++;
    }
    conn->refs++;
    return conn;
}

ptslock_conn *ptslock_conn_open(zend_string *url, HashTable *options)
{
    zval *persistent = NULL, *stream_opt = NULL;
    HashTable *stream = NULL;
    zend_string *key = NULL;
    ptslock_conn *conn = NULL;
    tslock_client *c;
    int connect_ms, command_ms;

    if (options != NULL) {
        persistent =
            zend_hash_str_find(options, "persistent", sizeof("persistent") - 1);
        stream_opt =
            zend_hash_str_find(options, "stream", sizeof("stream") - 1);
        if (stream_opt != NULL && Z_TYPE_P(stream_opt) == IS_ARRAY)
            stream = Z_ARRVAL_P(stream_opt);
        else if (stream_opt != NULL && Z_TYPE_P(stream_opt) != IS_NULL) {
            ptslock_throw(TSLOCK_EINVAL, "\"stream\" must be an array");
            return NULL;
        }
    }
    if ((connect_ms = option_ms(options, "timeout")) < 0
        || (command_ms = option_ms(options, "read_timeout")) < 0)
        return NULL;
    if (persistent != NULL && zend_is_true(persistent)) {
        key = pool_key(url, persistent, stream, connect_ms, command_ms);
        conn = pool_take(key);
        if (conn != NULL || EG(exception) != NULL)
            goto out;
    }
    if ((c = connect_new(url, stream, connect_ms, command_ms)) == NULL)
        goto out;
    conn = pemalloc(sizeof(*conn), key != NULL);
    conn->client = c;
    conn->refs = 1;
    conn->persistent = key != NULL;
    conn->pid = getpid();
    if (key != NULL) {
        zend_string *pkey = zend_string_init(ZSTR_VAL(key), ZSTR_LEN(key), 1);

        conn->refs++; /* the pool's own reference */
        zend_hash_update_ptr(&TSLOCK_G(pool), pkey, conn);
        zend_string_release(pkey);
    }
out:
    if (key != NULL)
        zend_string_release(key);
    return conn;
}

void ptslock_conn_release(ptslock_conn *conn)
{
    if (conn == NULL || --conn->refs > 0)
        return;
    tslock_client_free(conn->client);
    pefree(conn, conn->persistent);
}

static void pool_entry_free(zval *v)
{
    ptslock_conn *conn = Z_PTR_P(v);

    /* Only the pool's reference is left once every request has ended. */
    tslock_client_free(conn->client);
    pefree(conn, 1);
}

void ptslock_pool_init(void)
{
    zend_hash_init(&TSLOCK_G(pool), 8, NULL, pool_entry_free, 1);
}

void ptslock_pool_free(void)
{
    zend_hash_destroy(&TSLOCK_G(pool));
}
