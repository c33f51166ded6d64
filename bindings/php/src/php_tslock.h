/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * php_tslock.h - what the files of the tslock PHP extension share: the
 * module's globals (the persistent connections of the process, the locks
 * held by the request), the objects behind Tslock\Client and Tslock\Lock,
 * and the helpers each file gives the others.  Every lock decision is
 * libtslock's; this extension only carries calls and results across.
 */
#ifndef PHP_TSLOCK_H
#define PHP_TSLOCK_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdint.h>

#include "php.h"
#include <tslock.h>

#define PHP_TSLOCK_VERSION "0.1.0"

extern zend_module_entry tslock_module_entry;
#define phpext_tslock_ptr &tslock_module_entry

/*
 * One libtslock client, counted: the Tslock\Client object holds one
 * reference and each lock made from it another, so the client outlives
 * them in whatever order PHP frees objects at the end of a request.  A
 * persistent one belongs to the process's pool (the module globals) and
 * is freed only at module shutdown.
 */
typedef struct ptslock_conn {
    tslock_client *client;
    uint32_t refs;
    bool persistent;
    pid_t pid; /* the process that connected it */
} ptslock_conn;

typedef struct ptslock_client_obj {
    ptslock_conn *conn;
    zend_object std;
} ptslock_client_obj;

typedef struct ptslock_lock_obj {
    tslock_lock *lock;
    ptslock_conn *conn;
    zend_string *key;
    bool auto_release; /* released by the destructor and at request end */
    bool registered;   /* in TSLOCK_G(held) */
    bool reentrant;    /* acquire() on a hold adds one (the option) */
    zend_object std;
} ptslock_lock_obj;

ZEND_BEGIN_MODULE_GLOBALS(tslock)
HashTable pool;     /* persistent id => ptslock_conn *, process-wide */
HashTable held;     /* object handle => ptslock_lock_obj *, per request */
bool request_live;  /* between RINIT and RSHUTDOWN */
int64_t limit_from; /* monotonic ms the execution time limit counts from */
uint64_t pool_hits; /* persistent connections reused, for tests */
ZEND_END_MODULE_GLOBALS(tslock)

ZEND_EXTERN_MODULE_GLOBALS(tslock)
#define TSLOCK_G(v) ZEND_MODULE_GLOBALS_ACCESSOR(tslock, v)

extern zend_class_entry *ptslock_client_ce, *ptslock_lock_ce,
    *ptslock_timeout_exception_ce;

static inline ptslock_client_obj *ptslock_client_from(zend_object *o)
{
    return (ptslock_client_obj *)((char *)o
                                  - XtOffsetOf(ptslock_client_obj, std));
}

static inline ptslock_lock_obj *ptslock_lock_from(zend_object *o)
{
    return (ptslock_lock_obj *)((char *)o - XtOffsetOf(ptslock_lock_obj, std));
}

/* error.c: the exception classes and the constants of the error table. */
void ptslock_error_minit(int module_number);
void ptslock_throw(int code, const char *detail);
void ptslock_throw_client(int code, const tslock_client *client);

/* conn.c: connections, plain and pooled. */
ptslock_conn *ptslock_conn_open(zend_string *url, HashTable *options);
void ptslock_conn_release(ptslock_conn *conn);
void ptslock_pool_init(void);
void ptslock_pool_free(void);

/* client.c, lock.c: the classes. */
void ptslock_client_minit(void);
void ptslock_lock_minit(void);
zend_object *ptslock_lock_make(ptslock_conn *conn, zend_string *key, zval *ttl,
                               HashTable *options);
void ptslock_lock_sync(ptslock_lock_obj *obj);
void ptslock_release_held(void);

/* wait.c: waits bounded by max_execution_time and ended by signals. */
int64_t ptslock_now_ms(void);
void ptslock_wait_minit(void);
void ptslock_wait_mshutdown(void);
int ptslock_acquire(tslock_lock *lock, int64_t wait_ms);

#endif
