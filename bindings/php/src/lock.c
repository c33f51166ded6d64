/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.c - Tslock\Lock: one libtslock lock in the shapes PHP code knows,
 * Symfony's LockInterface (acquire, refresh, isAcquired, release,
 * isExpired, getRemainingLifetime) and Laravel's Lock (get, block, owner,
 * forceRelease), with the library's options (scheme, unit, dialect,
 * fencing, read-write sides, semaphores) given as an array.  Each method
 * is one library call and its result; a held lock is in the request's
 * table until released, and RSHUTDOWN releases what is left there.
 */
#include "php_tslock.h"

#include "zend_exceptions.h"
#include "zend_interfaces.h"

zend_class_entry *ptslock_lock_ce;
static zend_object_handlers lock_handlers;

/* ------------------------------------------------------ the request table */

void ptslock_lock_sync(ptslock_lock_obj *obj)
{
    bool held = obj->lock != NULL && tslock_lock_is_held(obj->lock);

    if (held && !obj->registered && obj->auto_release
        && TSLOCK_G(request_live)) {
        zend_hash_index_update_ptr(&TSLOCK_G(held), obj->std.handle, obj);
        obj->registered = true;
    } else if (!held && obj->registered) {
        zend_hash_index_del(&TSLOCK_G(held), obj->std.handle);
        obj->registered = false;
    }
}

/* RSHUTDOWN: release every lock the request still holds. */
void ptslock_release_held(void)
{
    ptslock_lock_obj *obj;

    ZEND_HASH_FOREACH_PTR(&TSLOCK_G(held), obj)
    {
        obj->registered = false;
        if (tslock_lock_is_held(obj->lock))
            (void)tslock_release(obj->lock);
    }
    ZEND_HASH_FOREACH_END();
    zend_hash_clean(&TSLOCK_G(held));
}

/* ------------------------------------------------------------- objects */

static zend_object *lock_create(zend_class_entry *ce)
{
    ptslock_lock_obj *obj = zend_object_alloc(sizeof(*obj), ce);

    zend_object_std_init(&obj->std, ce);
    object_properties_init(&obj->std, ce);
    obj->std.handlers = &lock_handlers;
    obj->auto_release = true;
    return &obj->std;
}

/* Symfony's autoRelease: a lock object that goes away releases its hold. */
static void lock_free(zend_object *o)
{
    ptslock_lock_obj *obj = ptslock_lock_from(o);

    if (obj->lock != NULL) {
        if (obj->auto_release && tslock_lock_is_held(obj->lock))
            (void)tslock_release(obj->lock);
        obj->auto_release = false;
        ptslock_lock_sync(obj);
        if (obj->registered) {
            zend_hash_index_del(&TSLOCK_G(held), o->handle);
            obj->registered = false;
        }
        tslock_lock_free(obj->lock);
        obj->lock = NULL;
    }
    ptslock_conn_release(obj->conn);
    obj->conn = NULL;
    if (obj->key != NULL)
        zend_string_release(obj->key);
    zend_object_std_dtor(o);
}

/* The lock of $this, or NULL with an exception for an unmade object. */
static ptslock_lock_obj *this_lock(zval *this_ptr)
{
    ptslock_lock_obj *obj = ptslock_lock_from(Z_OBJ_P(this_ptr));

    if (obj->lock == NULL) {
        ptslock_throw(TSLOCK_ESTATE, "the lock was not constructed");
        return NULL;
    }
    return obj;
}

static int fail(ptslock_lock_obj *obj, int rc)
{
    ptslock_lock_sync(obj);
    ptslock_throw_client(rc, obj->conn->client);
    return rc;
}

/* ------------------------------------------------------------- options */

static int name_of(zval *v, const char *const *names, int n, const char *what)
{
    char err[160];
    int i;

    if (Z_TYPE_P(v) == IS_STRING)
        for (i = 0; i < n; i++)
            if (strcmp(Z_STRVAL_P(v), names[i]) == 0)
                return i;
    snprintf(err, sizeof(err), "option %s: expected %s%s%s%s%s%s%s", what,
             names[0], n > 1 ? ", " : "", n > 1 ? names[1] : "",
             n > 2 ? ", " : "", n > 2 ? names[2] : "", n > 3 ? " or " : "",
             n > 3 ? names[3] : "");
    ptslock_throw(TSLOCK_EINVAL, err);
    return -1;
}

static const char *const scheme_names[] = {"auto", "timestamp", "token",
                                           "bridge"};
static const char *const unit_names[] = {"ms", "s", "float"};
static const char *const rw_names[] = {"off", "exclusive", "shared"};

/* retry: milliseconds between tries, one number or [min, max]. */
static int set_retry(tslock_lock *l, zval *v)
{
    zval *lo, *hi;

    if (Z_TYPE_P(v) == IS_ARRAY) {
        lo = zend_hash_index_find(Z_ARRVAL_P(v), 0);
        hi = zend_hash_index_find(Z_ARRVAL_P(v), 1);
        if (lo == NULL || hi == NULL)
            return TSLOCK_EINVAL;
        return tslock_lock_set_retry(l, (int)zval_get_long(lo),
                                     (int)zval_get_long(hi));
    }
    return tslock_lock_set_retry(l, (int)zval_get_long(v),
                                 (int)zval_get_long(v));
}

/* One option; -1 with an exception when it is unknown or refused. */
static int set_option(ptslock_lock_obj *obj, zend_string *name, zval *v)
{
    tslock_lock *l = obj->lock;
    const char *n = name != NULL ? ZSTR_VAL(name) : "";
    int rc, i;
    char err[200];

    if (strcmp(n, "scheme") == 0) {
        if ((i = name_of(v, scheme_names, 4, n)) < 0)
            return -1;
        rc = tslock_lock_set_scheme(l, (tslock_scheme)i);
    } else if (strcmp(n, "unit") == 0) {
        if ((i = name_of(v, unit_names, 3, n)) < 0)
            return -1;
        rc = tslock_lock_set_unit(l, (tslock_unit)i);
    } else if (strcmp(n, "rw") == 0) {
        if ((i = name_of(v, rw_names, 3, n)) < 0)
            return -1;
        rc = tslock_lock_set_rw(l, (tslock_rw)i);
    } else if (strcmp(n, "dialect") == 0) {
        zend_string *s = zval_get_string(v);

        rc = tslock_lock_set_dialect(l, ZSTR_VAL(s));
        zend_string_release(s);
    } else if (strcmp(n, "fencing") == 0) {
        rc = tslock_lock_set_fencing(l, zend_is_true(v));
    } else if (strcmp(n, "reentrant") == 0) {
        rc = tslock_lock_set_reentrant(l, zend_is_true(v));
        if (rc == TSLOCK_OK)
            obj->reentrant = zend_is_true(v);
    } else if (strcmp(n, "fair") == 0) {
        rc = tslock_lock_set_fair(l, zend_is_true(v));
    } else if (strcmp(n, "wakeup") == 0) {
        rc = tslock_lock_set_wakeup(l, zend_is_true(v));
    } else if (strcmp(n, "permits") == 0) {
        rc = tslock_lock_set_permits(l, zval_get_long(v));
    } else if (strcmp(n, "retry") == 0) {
        rc = set_retry(l, v);
    } else if (strcmp(n, "autoRelease") == 0) {
        obj->auto_release = zend_is_true(v);
        rc = TSLOCK_OK;
    } else {
        snprintf(err, sizeof(err),
                 "unknown option %s: expected scheme, unit, dialect, "
                 "fencing, reentrant, fair, wakeup, rw, permits, retry or "
                 "autoRelease",
                 n);
        ptslock_throw(TSLOCK_EINVAL, err);
        return -1;
    }
    if (rc != TSLOCK_OK) {
        snprintf(err, sizeof(err), "option %s: %s", n,
                 tslock_client_errstr(obj->conn->client));
        ptslock_throw(rc, err);
        return -1;
    }
    return 0;
}

/* Make obj a lock on key; -1 with an exception on failure. */
static int lock_init(ptslock_lock_obj *obj, ptslock_conn *conn,
                     zend_string *key, zval *ttl, HashTable *options)
{
    zend_string *name;
    zval *v;
    int rc;

    if (ZSTR_LEN(key) == 0 || memchr(ZSTR_VAL(key), 0, ZSTR_LEN(key))) {
        ptslock_throw(TSLOCK_EINVAL, "a key is a non-empty string without "
                                     "NUL bytes");
        return -1;
    }
    conn->refs++;
    obj->conn = conn;
    obj->key = zend_string_copy(key);
    rc = tslock_lock_new(&obj->lock, conn->client, ZSTR_VAL(key));
    if (rc != TSLOCK_OK) {
        ptslock_throw(rc, NULL);
        return -1;
    }
    if (ttl != NULL && Z_TYPE_P(ttl) != IS_NULL) {
        double s = zval_get_double(ttl);

        if (!(s > 0 && s < 1e9)
            || tslock_lock_set_ttl(obj->lock, (int64_t)(s * 1000 + 0.5))
                   != TSLOCK_OK) {
            ptslock_throw(TSLOCK_EINVAL, "ttl: seconds, more than 0");
            return -1;
        }
    }
    if (options != NULL) {
        ZEND_HASH_FOREACH_STR_KEY_VAL(options, name, v)
        {
            if (set_option(obj, name, v) != 0)
                return -1;
        }
        ZEND_HASH_FOREACH_END();
    }
    return 0;
}

zend_object *ptslock_lock_make(ptslock_conn *conn, zend_string *key, zval *ttl,
                               HashTable *options)
{
    zend_object *o = lock_create(ptslock_lock_ce);

    if (lock_init(ptslock_lock_from(o), conn, key, ttl, options) != 0) {
        OBJ_RELEASE(o);
        return NULL;
    }
    return o;
}

ZEND_BEGIN_ARG_INFO_EX(arginfo_construct, 0, 0, 2)
ZEND_ARG_OBJ_INFO(0, client, Tslock\\Client, 0)
ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "300.0")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, options, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

/* new Lock(Client $client, string $key, ?float $ttl = 300.0, array $o) */
static PHP_METHOD(Lock, __construct)
{
    zval *client, *ttl = NULL;
    zend_string *key;
    HashTable *options = NULL;
    ptslock_lock_obj *obj = ptslock_lock_from(Z_OBJ_P(ZEND_THIS));
    ptslock_conn *conn;

    ZEND_PARSE_PARAMETERS_START(2, 4)
    Z_PARAM_OBJECT_OF_CLASS(client, ptslock_client_ce)
    Z_PARAM_STR(key)
    Z_PARAM_OPTIONAL
    Z_PARAM_ZVAL(ttl)
    Z_PARAM_ARRAY_HT(options)
    ZEND_PARSE_PARAMETERS_END();
    if (obj->lock != NULL) {
        ptslock_throw(TSLOCK_ESTATE, "the lock is already constructed");
        RETURN_THROWS();
    }
    conn = ptslock_client_from(Z_OBJ_P(client))->conn;
    if (conn == NULL) {
        ptslock_throw(TSLOCK_ESTATE, "the client is not connected");
        RETURN_THROWS();
    }
    if (lock_init(obj, conn, key, ttl, options) != 0)
        RETURN_THROWS();
}

/* --------------------------------------------------- Symfony's shape */

/* Take the lock, waiting wait_ms; true, false, or -1 with an exception. */
static int take(ptslock_lock_obj *obj, int64_t wait_ms)
{
    int rc;

    if (tslock_lock_is_held(obj->lock) && !obj->reentrant) {
        /* Symfony: acquiring a lock this object holds renews its lease
         * (a reentrant one adds a hold instead, in the library). */
        rc = tslock_extend(obj->lock, 0);
        if (rc == TSLOCK_OK)
            return 1;
        ptslock_lock_sync(obj);
        if (rc != TSLOCK_ELOST)
            return fail(obj, rc), -1;
    }
    rc = ptslock_acquire(obj->lock, wait_ms);
    ptslock_lock_sync(obj);
    if (EG(exception) != NULL)
        return -1;
    if (rc == TSLOCK_OK)
        return 1;
    if (rc == TSLOCK_EBUSY || rc == TSLOCK_EUNREADABLE)
        return 0;
    fail(obj, rc);
    return -1;
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_acquire, 0, 0, _IS_BOOL, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, blocking, _IS_BOOL, 0, "false")
ZEND_END_ARG_INFO()

/* acquire(bool $blocking = false): bool */
static PHP_METHOD(Lock, acquire)
{
    bool blocking = false;
    ptslock_lock_obj *obj;
    int got;

    ZEND_PARSE_PARAMETERS_START(0, 1)
    Z_PARAM_OPTIONAL
    Z_PARAM_BOOL(blocking)
    ZEND_PARSE_PARAMETERS_END();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    if ((got = take(obj, blocking ? TSLOCK_WAIT_FOREVER : 0)) < 0)
        RETURN_THROWS();
    RETURN_BOOL(got);
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_refresh, 0, 0, IS_VOID, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

/* refresh(?float $ttl = null): void; LockLostException when lost. */
static PHP_METHOD(Lock, refresh)
{
    double ttl = 0;
    bool ttl_null = true;
    ptslock_lock_obj *obj;
    int rc;

    ZEND_PARSE_PARAMETERS_START(0, 1)
    Z_PARAM_OPTIONAL
    Z_PARAM_DOUBLE_OR_NULL(ttl, ttl_null)
    ZEND_PARSE_PARAMETERS_END();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    if (!ttl_null && !(ttl > 0 && ttl < 1e9)) {
        ptslock_throw(TSLOCK_EINVAL, "ttl: seconds, more than 0");
        RETURN_THROWS();
    }
    rc = tslock_extend(obj->lock, ttl_null ? 0 : (int64_t)(ttl * 1000 + 0.5));
    if (rc != TSLOCK_OK) {
        fail(obj, rc);
        RETURN_THROWS();
    }
}

/*
 * The lease left as the server sees it, in ms: -1 when not held, 0 when
 * it ran out or the key moved on; -2 with an exception on failure.
 */
static int64_t lease_left(ptslock_lock_obj *obj)
{
    int64_t ms = 0;
    int rc;

    if (!tslock_lock_is_held(obj->lock))
        return -1;
    rc = tslock_lock_time_left(obj->lock, &ms);
    if (rc == TSLOCK_ELOST)
        return 0;
    if (rc != TSLOCK_OK)
        return fail(obj, rc), -2;
    return ms;
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_bool, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()

/* isAcquired(): bool, asking the server as Symfony's does. */
static PHP_METHOD(Lock, isAcquired)
{
    ptslock_lock_obj *obj;
    int64_t ms;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL || (ms = lease_left(obj)) == -2)
        RETURN_THROWS();
    RETURN_BOOL(ms > 0);
}

/* isExpired(): bool; false for a lock that holds nothing, as Symfony's. */
static PHP_METHOD(Lock, isExpired)
{
    ptslock_lock_obj *obj;
    int64_t ms;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL || (ms = lease_left(obj)) == -2)
        RETURN_THROWS();
    RETURN_BOOL(ms == 0);
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_lifetime, 0, 0, IS_DOUBLE, 1)
ZEND_END_ARG_INFO()

/* getRemainingLifetime(): ?float seconds; null when nothing is held. */
static PHP_METHOD(Lock, getRemainingLifetime)
{
    ptslock_lock_obj *obj;
    int64_t ms;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL || (ms = lease_left(obj)) == -2)
        RETURN_THROWS();
    if (ms < 0)
        RETURN_NULL();
    RETURN_DOUBLE((double)ms / 1000.0);
}

/* Release; true when deleted, false when not held or lost, -1 thrown. */
static int drop(ptslock_lock_obj *obj)
{
    int rc;

    if (!tslock_lock_is_held(obj->lock))
        return 0;
    rc = tslock_release(obj->lock);
    ptslock_lock_sync(obj);
    if (rc == TSLOCK_OK)
        return 1;
    if (rc == TSLOCK_ELOST)
        return 0;
    fail(obj, rc);
    return -1;
}

/*
 * release(): bool.  True when the lock was deleted; false when this
 * object held nothing or the lock was lost (its lease ran out or another
 * owner took it: nothing was deleted, and mutual exclusion may have been
 * broken).  Laravel's release() returns the same bool.
 */
static PHP_METHOD(Lock, release)
{
    ptslock_lock_obj *obj;
    int done;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL || (done = drop(obj)) < 0)
        RETURN_THROWS();
    RETURN_BOOL(done);
}

/* ---------------------------------------------------- Laravel's shape */

/* Run the callback while held, release, and hand back its result. */
static void run_held(ptslock_lock_obj *obj, zend_fcall_info *fci,
                     zend_fcall_info_cache *fcc, zval *return_value)
{
    zval result;

    ZVAL_UNDEF(&result);
    fci->retval = &result;
    fci->param_count = 0;
    (void)zend_call_function(fci, fcc);
    /* Released whatever the callback did, as Laravel's finally block. */
    (void)drop(obj);
    if (EG(exception) != NULL) {
        zval_ptr_dtor(&result);
        return;
    }
    if (Z_ISUNDEF(result))
        RETURN_NULL();
    RETURN_COPY_VALUE(&result);
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_get, 0, 0, IS_MIXED, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, callback, IS_CALLABLE, 1, "null")
ZEND_END_ARG_INFO()

/* get(?callable $callback = null): mixed, Laravel's one try. */
static PHP_METHOD(Lock, get)
{
    zend_fcall_info fci = empty_fcall_info;
    zend_fcall_info_cache fcc = empty_fcall_info_cache;
    ptslock_lock_obj *obj;
    int got;

    ZEND_PARSE_PARAMETERS_START(0, 1)
    Z_PARAM_OPTIONAL
    Z_PARAM_FUNC_OR_NULL(fci, fcc)
    ZEND_PARSE_PARAMETERS_END();
    if ((obj = this_lock(ZEND_THIS)) == NULL || (got = take(obj, 0)) < 0)
        RETURN_THROWS();
    if (got && ZEND_FCI_INITIALIZED(fci)) {
        run_held(obj, &fci, &fcc, return_value);
        return;
    }
    RETURN_BOOL(got);
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_block, 0, 1, IS_MIXED, 0)
ZEND_ARG_TYPE_INFO(0, seconds, IS_DOUBLE, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, callback, IS_CALLABLE, 1, "null")
ZEND_END_ARG_INFO()

/*
 * block(int|float $seconds, ?callable $callback = null): mixed, Laravel's
 * wait: LockTimeoutException (code Tslock\EBUSY) when not taken in time.
 */
static PHP_METHOD(Lock, block)
{
    double seconds;
    zend_fcall_info fci = empty_fcall_info;
    zend_fcall_info_cache fcc = empty_fcall_info_cache;
    ptslock_lock_obj *obj;
    int got;

    ZEND_PARSE_PARAMETERS_START(1, 2)
    Z_PARAM_DOUBLE(seconds)
    Z_PARAM_OPTIONAL
    Z_PARAM_FUNC_OR_NULL(fci, fcc)
    ZEND_PARSE_PARAMETERS_END();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    if (!(seconds >= 0 && seconds < 1e9)) {
        ptslock_throw(TSLOCK_EINVAL, "seconds: 0 or more");
        RETURN_THROWS();
    }
    if ((got = take(obj, (int64_t)(seconds * 1000 + 0.5))) < 0)
        RETURN_THROWS();
    if (!got) {
        zend_throw_exception_ex(ptslock_timeout_exception_ce, TSLOCK_EBUSY,
                                "TSLOCK_EBUSY: %s still held after %g s",
                                ZSTR_VAL(obj->key), seconds);
        RETURN_THROWS();
    }
    if (ZEND_FCI_INITIALIZED(fci)) {
        run_held(obj, &fci, &fcc, return_value);
        return;
    }
    RETURN_TRUE;
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_nstring, 0, 0, IS_STRING, 1)
ZEND_END_ARG_INFO()

/* owner(): ?string, the hold's handle (Client::restoreLock() takes it). */
static PHP_METHOD(Lock, owner)
{
    ptslock_lock_obj *obj;
    const char *h;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    if ((h = tslock_lock_handle(obj->lock)) == NULL)
        RETURN_NULL();
    RETURN_STRING(h);
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_void, 0, 0, IS_VOID, 0)
ZEND_END_ARG_INFO()

/*
 * forceRelease(): void, whoever holds the lock: what the key holds now is
 * read and deleted by the library's compare-and-delete
 * (tslock_lock_break()), so a value written after the read is never
 * deleted.  A lock this object holds is released instead.
 */
static PHP_METHOD(Lock, forceRelease)
{
    ptslock_lock_obj *obj;
    const size_t size = 65536;
    char *value;
    int rc;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    if (tslock_lock_is_held(obj->lock)) {
        if (drop(obj) < 0)
            RETURN_THROWS();
        return;
    }
    value = emalloc(size);
    rc = tslock_lock_peek(obj->lock, value, size, NULL);
    if (rc == TSLOCK_OK && strlen(value) == size - 1) {
        /* Cut short: the compare would never match. */
        efree(value);
        ptslock_throw(TSLOCK_EINVAL, "the key holds 64 KiB or more: not a "
                                     "lock value forceRelease() deletes");
        RETURN_THROWS();
    }
    if (rc == TSLOCK_OK && value[0] != '\0')
        rc = tslock_lock_break(obj->lock, value);
    efree(value);
    if (rc != TSLOCK_OK && rc != TSLOCK_ELOST) {
        fail(obj, rc);
        RETURN_THROWS();
    }
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_sleep_for, 0, 1, IS_STATIC, 0)
ZEND_ARG_TYPE_INFO(0, milliseconds, IS_LONG, 0)
ZEND_END_ARG_INFO()

/* betweenBlockedAttemptsSleepFor(int $ms): static, Laravel's retry delay. */
static PHP_METHOD(Lock, betweenBlockedAttemptsSleepFor)
{
    zend_long ms;
    ptslock_lock_obj *obj;
    int rc;

    ZEND_PARSE_PARAMETERS_START(1, 1)
    Z_PARAM_LONG(ms)
    ZEND_PARSE_PARAMETERS_END();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    if (ms < 1 || ms > INT32_MAX
        || (rc = tslock_lock_set_retry(obj->lock, (int)ms, (int)ms))
               != TSLOCK_OK) {
        ptslock_throw(TSLOCK_EINVAL, "milliseconds: 1 or more");
        RETURN_THROWS();
    }
    RETURN_OBJ_COPY(Z_OBJ_P(ZEND_THIS));
}

/* ---------------------------------------------------------- inspection */

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_long, 0, 0, IS_LONG, 0)
ZEND_END_ARG_INFO()

/* getFence(): int, the hold's fencing number; 0 without fencing. */
static PHP_METHOD(Lock, getFence)
{
    ptslock_lock_obj *obj;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    RETURN_LONG((zend_long)tslock_lock_fence(obj->lock));
}

/* holders(): int, the live holders of a shared lock or semaphore. */
static PHP_METHOD(Lock, holders)
{
    ptslock_lock_obj *obj;
    int64_t n = 0;
    int rc;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    if ((rc = tslock_lock_holders(obj->lock, &n)) != TSLOCK_OK) {
        fail(obj, rc);
        RETURN_THROWS();
    }
    RETURN_LONG((zend_long)n);
}

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_string, 0, 0, IS_STRING, 0)
ZEND_END_ARG_INFO()

static PHP_METHOD(Lock, getKey)
{
    ptslock_lock_obj *obj;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    RETURN_STR_COPY(obj->key);
}

/* getScheme(): the scheme of the current or last hold ("auto" before). */
static PHP_METHOD(Lock, getScheme)
{
    ptslock_lock_obj *obj;
    tslock_scheme s;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    s = tslock_lock_scheme_used(obj->lock);
    RETURN_STRING(s <= TSLOCK_SCHEME_BRIDGE ? scheme_names[s] : "auto");
}

/* getDialect(): the dialect stamps are written in (preset or format). */
static PHP_METHOD(Lock, getDialect)
{
    ptslock_lock_obj *obj;
    const char *d;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    d = tslock_lock_get_dialect(obj->lock);
    RETURN_STRING(d != NULL ? d : "");
}

/* getValue(): ?string, what this hold wrote to the key. */
static PHP_METHOD(Lock, getValue)
{
    ptslock_lock_obj *obj;
    const char *v;

    ZEND_PARSE_PARAMETERS_NONE();
    if ((obj = this_lock(ZEND_THIS)) == NULL)
        RETURN_THROWS();
    if ((v = tslock_lock_value(obj->lock)) == NULL)
        RETURN_NULL();
    RETURN_STRING(v);
}

static const zend_function_entry lock_methods[] = {
    PHP_ME(Lock, __construct, arginfo_construct, ZEND_ACC_PUBLIC) PHP_ME(
        Lock, acquire, arginfo_acquire,
        ZEND_ACC_PUBLIC) PHP_ME(Lock, refresh, arginfo_refresh, ZEND_ACC_PUBLIC)
        PHP_ME(Lock, isAcquired, arginfo_bool, ZEND_ACC_PUBLIC) PHP_ME(
            Lock, release, arginfo_bool, ZEND_ACC_PUBLIC)
            PHP_ME(Lock, isExpired, arginfo_bool, ZEND_ACC_PUBLIC) PHP_ME(
                Lock, getRemainingLifetime, arginfo_lifetime,
                ZEND_ACC_PUBLIC) PHP_ME(Lock, get, arginfo_get, ZEND_ACC_PUBLIC)
                PHP_ME(Lock, block, arginfo_block, ZEND_ACC_PUBLIC) PHP_ME(
                    Lock, owner, arginfo_nstring,
                    ZEND_ACC_PUBLIC) PHP_ME(Lock, forceRelease, arginfo_void,
                                            ZEND_ACC_PUBLIC)
                    PHP_ME(Lock, betweenBlockedAttemptsSleepFor,
                           arginfo_sleep_for, ZEND_ACC_PUBLIC)
                        PHP_ME(Lock, getFence, arginfo_long, ZEND_ACC_PUBLIC)
                            PHP_ME(Lock, holders, arginfo_long, ZEND_ACC_PUBLIC)
                                PHP_ME(Lock, getKey, arginfo_string,
                                       ZEND_ACC_PUBLIC) PHP_ME(Lock, getScheme,
                                                               arginfo_string,
                                                               ZEND_ACC_PUBLIC)
                                    PHP_ME(Lock, getDialect, arginfo_string,
                                           ZEND_ACC_PUBLIC)
                                        PHP_ME(Lock, getValue, arginfo_nstring,
                                               ZEND_ACC_PUBLIC) PHP_FE_END};

void ptslock_lock_minit(void)
{
    zend_class_entry ce;

    INIT_CLASS_ENTRY(ce, "Tslock\\Lock", lock_methods);
    ptslock_lock_ce = zend_register_internal_class(&ce);
    ptslock_lock_ce->ce_flags |= ZEND_ACC_FINAL | ZEND_ACC_NO_DYNAMIC_PROPERTIES
                                 | ZEND_ACC_NOT_SERIALIZABLE;
    ptslock_lock_ce->create_object = lock_create;
    memcpy(&lock_handlers, zend_get_std_object_handlers(),
           sizeof(lock_handlers));
    lock_handlers.offset = XtOffsetOf(ptslock_lock_obj, std);
    lock_handlers.free_obj = lock_free;
    lock_handlers.clone_obj = NULL;
}
