/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client.c - Tslock\Client: a connection made from a URL by the
 * library's parser (Client::fromUrl()), persistent across requests with
 * ['persistent' => true] as phpredis' pconnect(), and the factory of the
 * locks that use it (lock(), restoreLock()).
 */
#include "php_tslock.h"

zend_class_entry *ptslock_client_ce;
static zend_object_handlers client_handlers;

static zend_object *client_create(zend_class_entry *ce)
{
    ptslock_client_obj *obj = zend_object_alloc(sizeof(*obj), ce);

    zend_object_std_init(&obj->std, ce);
    object_properties_init(&obj->std, ce);
    obj->std.handlers = &client_handlers;
    return &obj->std;
}

static void client_free(zend_object *o)
{
    ptslock_client_obj *obj = ptslock_client_from(o);

    ptslock_conn_release(obj->conn);
    obj->conn = NULL;
    zend_object_std_dtor(o);
}

/* The connection of $this, or NULL with an exception for a bare object. */
static ptslock_conn *this_conn(zval *this_ptr)
{
    ptslock_client_obj *obj = ptslock_client_from(Z_OBJ_P(this_ptr));

    if (obj->conn == NULL)
        ptslock_throw(TSLOCK_ESTATE, "the client is not connected: make it "
                                     "with Tslock\\Client::fromUrl()");
    return obj->conn;
}

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_from_url, 0, 1, Tslock\\Client,
                                       0)
ZEND_ARG_TYPE_INFO(0, url, IS_STRING, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, options, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

/* Client::fromUrl(string $url, array $options = []): Client */
static PHP_METHOD(Client, fromUrl)
{
    zend_string *url;
    HashTable *options = NULL;
    ptslock_conn *conn;

    ZEND_PARSE_PARAMETERS_START(1, 2)
    Z_PARAM_STR(url)
    Z_PARAM_OPTIONAL
    Z_PARAM_ARRAY_HT(options)
    ZEND_PARSE_PARAMETERS_END();
    if ((conn = ptslock_conn_open(url, options)) == NULL)
        RETURN_THROWS();
    object_init_ex(return_value, ptslock_client_ce);
    ptslock_client_from(Z_OBJ_P(return_value))->conn = conn;
}

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_lock, 0, 1, Tslock\\Lock, 0)
ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "300.0")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, options, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

/* Client::lock(string $key, ?float $ttl = 300.0, array $options = []) */
static PHP_METHOD(Client, lock)
{
    zend_string *key;
    zval *ttl = NULL;
    HashTable *options = NULL;
    ptslock_conn *conn;
    zend_object *lock;

    ZEND_PARSE_PARAMETERS_START(1, 3)
    Z_PARAM_STR(key)
    Z_PARAM_OPTIONAL
    Z_PARAM_ZVAL(ttl)
    Z_PARAM_ARRAY_HT(options)
    ZEND_PARSE_PARAMETERS_END();
    if ((conn = this_conn(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    if ((lock = ptslock_lock_make(conn, key, ttl, options)) == NULL)
        RETURN_THROWS();
    RETURN_OBJ(lock);
}

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_restore, 0, 2, Tslock\\Lock, 0)
ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_ARG_TYPE_INFO(0, owner, IS_STRING, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, options, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

/*
 * Client::restoreLock(string $key, string $owner, array $options = []):
 * Laravel's restoreLock(): a lock object holding what another object's
 * owner() handed over (tslock_lock_adopt(); nothing is sent).
 */
static PHP_METHOD(Client, restoreLock)
{
    zend_string *key, *owner;
    HashTable *options = NULL;
    ptslock_conn *conn;
    zend_object *lock;
    ptslock_lock_obj *obj;
    int rc;

    ZEND_PARSE_PARAMETERS_START(2, 3)
    Z_PARAM_STR(key)
    Z_PARAM_STR(owner)
    Z_PARAM_OPTIONAL
    Z_PARAM_ARRAY_HT(options)
    ZEND_PARSE_PARAMETERS_END();
    if ((conn = this_conn(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    if ((lock = ptslock_lock_make(conn, key, NULL, options)) == NULL)
        RETURN_THROWS();
    obj = ptslock_lock_from(lock);
    rc = tslock_lock_adopt(obj->lock, ZSTR_VAL(owner));
    if (rc != TSLOCK_OK) {
        ptslock_throw_client(rc, conn->client);
        OBJ_RELEASE(lock);
        RETURN_THROWS();
    }
    ptslock_lock_sync(obj);
    RETURN_OBJ(lock);
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_is_persistent, 0, 0, _IS_BOOL,
                                        0)
ZEND_END_ARG_INFO()

static PHP_METHOD(Client, isPersistent)
{
    ptslock_conn *conn;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((conn = this_conn(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    RETURN_BOOL(conn->persistent);
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_pool_stats, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

/* Client::poolStats(): ['connections' => n, 'reused' => n] of the process. */
static PHP_METHOD(Client, poolStats)
{
    ZEND_PARSE_PARAMETERS_NONE();
    array_init(return_value);
    add_assoc_long(return_value, "connections",
                   zend_hash_num_elements(&TSLOCK_G(pool)));
    add_assoc_long(return_value, "reused", (zend_long)TSLOCK_G(pool_hits));
}

ZEND_BEGIN_ARG_INFO_EX(arginfo_construct, 0, 0, 0)
ZEND_END_ARG_INFO()

static PHP_METHOD(Client, __construct)
{
    ZEND_PARSE_PARAMETERS_NONE();
}

static const zend_function_entry client_methods[] = {
    PHP_ME(Client, __construct, arginfo_construct, ZEND_ACC_PRIVATE) PHP_ME(
        Client, fromUrl, arginfo_from_url, ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)
        PHP_ME(Client, lock, arginfo_lock, ZEND_ACC_PUBLIC) PHP_ME(
            Client, restoreLock, arginfo_restore, ZEND_ACC_PUBLIC)
            PHP_ME(Client, isPersistent, arginfo_is_persistent, ZEND_ACC_PUBLIC)
                PHP_ME(Client, poolStats, arginfo_pool_stats,
                       ZEND_ACC_PUBLIC | ZEND_ACC_STATIC) PHP_FE_END};

void ptslock_client_minit(void)
{
    zend_class_entry ce;

    INIT_CLASS_ENTRY(ce, "Tslock\\Client", client_methods);
    ptslock_client_ce = zend_register_internal_class(&ce);
    ptslock_client_ce->ce_flags |= ZEND_ACC_FINAL
                                   | ZEND_ACC_NO_DYNAMIC_PROPERTIES
                                   | ZEND_ACC_NOT_SERIALIZABLE;
    ptslock_client_ce->create_object = client_create;
    memcpy(&client_handlers, zend_get_std_object_handlers(),
           sizeof(client_handlers));
    client_handlers.offset = XtOffsetOf(ptslock_client_obj, std);
    client_handlers.free_obj = client_free;
    client_handlers.clone_obj = NULL;
}
