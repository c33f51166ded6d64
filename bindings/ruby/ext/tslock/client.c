/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client.c - Tslock::Client: where to connect, read once by the library's
 * URL parser (tslock_url_parse()), with TLS settings added by name
 * (tslock_tls_set()).  It holds no connection: each lock opens its own
 * when first used, so a Client is shared freely between threads and a
 * fork child never touches its parent's sockets.
 */
#include "rbtslock.h"

#include <string.h>

static void client_free(void *p)
{
    rbt_client *t = p;

    if (t->parsed)
        tslock_url_free(&t->url);
    xfree(t);
}

static size_t client_size(const void *p)
{
    (void)p;
    return sizeof(rbt_client);
}

static const rb_data_type_t client_type = {
    "Tslock::Client",
    {NULL, client_free, client_size, NULL, {NULL}},
    NULL,
    NULL,
    RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE client_alloc(VALUE klass)
{
    rbt_client *t;

    return TypedData_Make_Struct(klass, rbt_client, &client_type, t);
}

rbt_client *rbt_client_get(VALUE self)
{
    rbt_client *t = rb_check_typeddata(self, &client_type);

    if (!t->parsed)
        rb_raise(rb_eRuntimeError, "Tslock::Client not initialized");
    return t;
}

/* _setup(url, connect_ms, command_ms): parse the URL; raises InvalidError. */
static VALUE client_setup(VALUE self, VALUE url, VALUE connect_ms,
                          VALUE command_ms)
{
    rbt_client *t = rb_check_typeddata(self, &client_type);
    char err[256] = "";
    int rc;

    if (t->parsed)
        rb_raise(rb_eRuntimeError, "Tslock::Client already set up");
    rc = tslock_url_parse(StringValueCStr(url), 0, &t->url, err, sizeof(err));
    if (rc != TSLOCK_OK)
        rbt_raise(rc, err);
    t->parsed = 1;
    t->connect_ms = NUM2INT(connect_ms);
    t->command_ms = NUM2INT(command_ms);
    return self;
}

/* _tls_set(name, value): one setting of tslock_tls_set(). */
static VALUE client_tls_set(VALUE self, VALUE name, VALUE value)
{
    rbt_client *t = rbt_client_get(self);
    char err[256] = "";
    int rc;

    if (t->url.tls == NULL && (rc = tslock_tls_new(&t->url.tls)) != TSLOCK_OK)
        rbt_raise(rc, "TLS settings");
    rc = tslock_tls_set(t->url.tls, StringValueCStr(name),
                        StringValueCStr(value), err, sizeof(err));
    if (rc != TSLOCK_OK)
        rbt_raise(rc, err);
    return Qnil;
}

/* describe: where the client connects, never the password. */
static VALUE client_describe(VALUE self)
{
    rbt_client *t = rbt_client_get(self);
    char buf[512];

    tslock_url_describe(&t->url, buf, sizeof(buf));
    return rb_str_new_cstr(buf);
}

static VALUE client_tls_p(VALUE self)
{
    return rbt_client_get(self)->url.tls != NULL ? Qtrue : Qfalse;
}

int rbt_client_connect(const rbt_client *t, tslock_client *c)
{
    int rc = tslock_client_set_timeouts(c, t->connect_ms, t->command_ms);

    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_parsed_url(c, &t->url);
    return rc;
}

void rbt_init_client(void)
{
    rbt_cClient = rb_define_class_under(rbt_mTslock, "Client", rb_cObject);
    rb_define_alloc_func(rbt_cClient, client_alloc);
    rb_define_private_method(rbt_cClient, "_setup", client_setup, 3);
    rb_define_private_method(rbt_cClient, "_tls_set", client_tls_set, 2);
    rb_define_method(rbt_cClient, "describe", client_describe, 0);
    rb_define_method(rbt_cClient, "tls?", client_tls_p, 0);
}
