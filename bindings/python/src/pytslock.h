/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pytslock.h - what the three files of the tslock extension module share:
 * the Client and Lock types, the exceptions, the connection pool and the
 * fork check.  The module is tslock._tslock; tslock/__init__.py gives it
 * the shape of redis-py's Lock.
 */
#ifndef PYTSLOCK_H
#define PYTSLOCK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <sys/types.h>

#include <tslock.h>

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
#endif

/* A method table entry for a function taking keywords, without a cast
 * that -Wcast-function-type flags. */
#define PYTSLOCK_KW(fn) ((PyCFunction)(void (*)(void))(fn))

struct pytslock_client_s;

/*
 * One pooled connection; the pool's list is kept under the GIL.  Every
 * connection a Client opens is also on its list of live ones (owner,
 * live_prev, live_next), so Client.stats() can add up what each counted.
 */
typedef struct pytslock_conn {
    tslock_client *client;
    struct pytslock_conn *next;
    struct pytslock_client_s *owner; /* borrowed; NULL once forgotten */
    struct pytslock_conn *live_prev, *live_next;
} pytslock_conn;

/* What a Client connects to, and how. */
typedef struct pytslock_target {
    char *host;      /* TCP host, or NULL */
    int port;        /* TCP port */
    char *unix_path; /* Unix socket, or NULL */
    int n_sentinels; /* > 0: connect through Sentinel */
    char **sentinel_hosts;
    int *sentinel_ports;
    char *master_name;
    char *user, *password;
    char *sentinel_user, *sentinel_password;
    int db;
    int connect_ms, command_ms;
    int server_time; /* TSLOCK_TIME_SERVER */
    int pubsub;      /* TSLOCK_PUBSUB_*: how waiters are woken */
    tslock_tls *tls; /* rediss://, ssl=True: TLS settings, or NULL */
} pytslock_target;

/*
 * TLS settings from a dict of tslock_tls_set() names and str values (the
 * Python layer maps redis-py's ssl_* arguments to it), or None: NULL.
 * Returns 0, or -1 with ValueError (or MemoryError) set.
 */
int pytslock_tls_from_dict(PyObject *dict, tslock_tls **out);

typedef struct pytslock_client_s {
    PyObject_HEAD pytslock_target target;
    pytslock_conn *idle; /* idle connections, most recently used first */
    int n_idle;
    pid_t pid;            /* the process whose connections these are */
    unsigned long opened; /* connections opened, for tests and stats */
    PyObject *weakrefs;
    /* Metrics (stats.c of the library, summed over connections). */
    pytslock_conn *live;       /* every open connection of this Client */
    tslock_stats retired;      /* what closed connections counted */
    PyObject *observer;        /* the callable, or NULL; read under the GIL */
    volatile int has_observer; /* read without the GIL, first */
} pytslock_client;

extern PyTypeObject pytslock_client_type;
extern PyTypeObject pytslock_lock_type;
extern PyTypeObject pytslock_redlock_type;

/* The exceptions (new references kept by the module). */
extern PyObject *pytslock_LockError;
extern PyObject *pytslock_LockNotOwnedError;
extern PyObject *pytslock_LockLostError;
extern PyObject *pytslock_WrongTypeError;
extern PyObject *pytslock_UnsupportedError;

/*
 * Raise the exception for a TSLOCK_E* code with the library's detail
 * (may be NULL or "").  Returns NULL, for `return pytslock_raise(...)`.
 */
PyObject *pytslock_raise(int code, const char *detail);

/* The exception instance pytslock_raise() would raise (a new reference,
 * or NULL with an exception set). */
PyObject *pytslock_exception(int code, const char *detail);

/*
 * Take a connected client from the pool, or connect a new one (the GIL
 * is released while connecting).  Returns NULL with an exception set.
 * Called with the GIL held.
 */
pytslock_conn *pytslock_pool_take(pytslock_client *self);

/*
 * As pytslock_pool_take(), but a server that cannot be reached still
 * gives a client, marked broken (a Redlock counts that master as failed
 * and reconnects it on its next operation).
 */
pytslock_conn *pytslock_pool_take_or_broken(pytslock_client *self);

/* Give a connection back (a broken one is closed instead).  GIL held. */
void pytslock_pool_give(pytslock_client *self, pytslock_conn *conn);

/*
 * Close a connection that was taken from the pool.  In a child of the
 * process that opened it the memory is freed but nothing is written.
 */
void pytslock_conn_close(pytslock_conn *conn);

/*
 * Whether self's connections were opened by this process; after fork()
 * the child's first call forgets the parent's idle connections (closing
 * its copies of their sockets, which leaves the parent's alone).
 */
void pytslock_client_check_fork(pytslock_client *self);

/*
 * Chain a SIGINT handler that calls cancel(target) in front of Python's,
 * for one wait; only on the main thread, and only while Python (or the
 * program) handles SIGINT.  Returns 1 when installed: then call
 * pytslock_sigint_unhook() after the wait, and if pytslock_sigint_seen(),
 * PyErr_CheckSignals().
 */
int pytslock_sigint_hook(int (*cancel)(void *), void *target);
void pytslock_sigint_unhook(void);
int pytslock_sigint_seen(void);

/* The monotonic clock in milliseconds. */
int64_t pytslock_mono_ms(void);

/* The id of the main thread, where Ctrl-C is delivered (set at import). */
extern unsigned long pytslock_main_thread;

#endif /* PYTSLOCK_H */
