/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.c - tslock._tslock.Lock: one named lock over a Client's pool.  A
 * hold keeps its connection from acquire to release; waits run without
 * the GIL, and Ctrl-C on the main thread cancels them (tslock_lock_cancel
 * from a chained SIGINT handler), leaving nothing held.
 */
#include "pytslock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What the watchdog's thread reports; outlives nothing it points to. */
struct wd_report {
    PyObject *on_lost; /* strong reference, or NULL */
    int code;          /* written once, before the thread ends */
    char detail[512];
};

typedef struct {
    PyObject_HEAD pytslock_client *client;
    char *name;
    /* configuration */
    char *dialect; /* a preset or format, NULL: the plain unit */
    int64_t ttl_ms;
    int scheme, unit, rw, fair, fencing, wakeup;
    int64_t permits;
    int retry_min_ms, retry_max_ms;
    int64_t release_margin_ms;
    int auto_renew;
    int64_t renew_interval_ms;
    PyObject *on_lost;
    /* state */
    tslock_lock *lock;    /* non-NULL while held */
    pytslock_conn *conn;  /* the hold's connection */
    tslock_lock *waiting; /* the lock object of a running acquire */
    tslock_watchdog *wd;  /* running watchdog, or NULL */
    pytslock_conn *wd_conn;
    struct wd_report *report;
    int busy; /* an operation is running (in another thread) */
    pid_t pid;
    PyObject *weakrefs;
} pytslock_lock;

/* ---------------------------------------------------------- waits */

static int cancel_lock(void *l)
{
    return tslock_lock_cancel(l);
}

int64_t pytslock_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------ state helpers */

static PyObject *raise_on(pytslock_conn *conn, int code)
{
    return pytslock_raise(code, tslock_client_errstr(conn->client));
}

/* A new lock object on conn, configured as self says. */
static int lock_make(pytslock_lock *self, pytslock_conn *conn,
                     tslock_lock **out)
{
    tslock_lock *l = NULL;
    int rc = tslock_lock_new(&l, conn->client, self->name);

    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_scheme(l, (tslock_scheme)self->scheme);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_ttl(l, self->ttl_ms);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_unit(l, (tslock_unit)self->unit);
    if (rc == TSLOCK_OK && self->dialect != NULL)
        rc = tslock_lock_set_dialect(l, self->dialect);
    if (rc == TSLOCK_OK && self->rw != TSLOCK_RW_OFF)
        rc = tslock_lock_set_rw(l, (tslock_rw)self->rw);
    if (rc == TSLOCK_OK && self->permits > 0)
        rc = tslock_lock_set_permits(l, self->permits);
    if (rc == TSLOCK_OK && self->fair)
        rc = tslock_lock_set_fair(l, 1);
    if (rc == TSLOCK_OK && self->fencing)
        rc = tslock_lock_set_fencing(l, 1);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_wakeup(l, self->wakeup);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_retry(l, self->retry_min_ms, self->retry_max_ms);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_release_margin(l, self->release_margin_ms);
    if (rc != TSLOCK_OK) {
        raise_on(conn, rc);
        tslock_lock_free(l);
        return -1;
    }
    *out = l;
    return 0;
}

/*
 * A pooled connection and a new lock object on it, for a hold or an
 * inspection.  Returns -1 with an exception set and nothing taken, so
 * that no caller has a connection to give back on that path.
 */
static int take_fresh(pytslock_lock *self, pytslock_conn **conn,
                      tslock_lock **l)
{
    if ((*conn = pytslock_pool_take(self->client)) == NULL)
        return -1;
    if (lock_make(self, *conn, l) != 0) {
        pytslock_pool_give(self->client, *conn);
        return -1;
    }
    return 0;
}

/* Forget the hold (after release, loss, or in a fork child). */
static void drop_hold(pytslock_lock *self)
{
    tslock_lock_free(self->lock);
    self->lock = NULL;
    pytslock_pool_give(self->client, self->conn);
    self->conn = NULL;
}

/*
 * In a child of the process that took the hold: the hold, its
 * connections and its watchdog's thread are the parent's.  The child
 * forgets them without sending anything (the watchdog's memory is left:
 * its thread does not exist here to be joined).
 */
static void check_fork(pytslock_lock *self)
{
    if (self->pid == getpid())
        return;
    self->pid = getpid();
    self->busy = 0;
    self->waiting = NULL;
    self->wd = NULL;
    self->report = NULL;
    pytslock_conn_close(self->wd_conn);
    self->wd_conn = NULL;
    tslock_lock_free(self->lock);
    self->lock = NULL;
    pytslock_conn_close(self->conn);
    self->conn = NULL;
}

/* The report whose on_lost runs on this thread (the watchdog's). */
static __thread struct wd_report *on_lost_running;

static int enter(pytslock_lock *self)
{
    check_fork(self);
    if (self->report != NULL && self->report == on_lost_running) {
        /* Stopping the watchdog from its own thread would join itself. */
        pytslock_raise(TSLOCK_ESTATE,
                       "on_lost runs on the watchdog's thread and must not "
                       "use its own Lock; note the loss and act on it "
                       "elsewhere (release() raises it too)");
        return -1;
    }
    if (self->busy) {
        char msg[256];

        snprintf(msg, sizeof(msg),
                 "Lock '%.100s' is in use by another thread: a Lock object "
                 "serves one thread at a time (share the Client, not the "
                 "Lock)",
                 self->name);
        pytslock_raise(TSLOCK_ESTATE, msg);
        return -1;
    }
    self->busy = 1;
    return 0;
}

static void leave(pytslock_lock *self)
{
    self->busy = 0;
}

/* ----------------------------------------------------------- watchdog */

static void on_watchdog_failure(int code, const char *detail, void *userdata)
{
    struct wd_report *r = userdata;
    PyGILState_STATE gil;
    PyObject *exc, *res;

    snprintf(r->detail, sizeof(r->detail), "%s", detail ? detail : "");
    r->code = code;
    if (r->on_lost == NULL)
        return;
#if PY_VERSION_HEX >= 0x030D0000
    if (Py_IsFinalizing())
        return;
#else
    if (_Py_IsFinalizing())
        return;
#endif
    gil = PyGILState_Ensure();
    exc = pytslock_exception(code, r->detail);
    if (exc == NULL) {
        PyErr_WriteUnraisable(r->on_lost);
        PyGILState_Release(gil);
        return;
    }
    on_lost_running = r;
    res = PyObject_CallFunctionObjArgs(r->on_lost, exc, NULL);
    on_lost_running = NULL;
    if (res == NULL)
        PyErr_WriteUnraisable(r->on_lost);
    Py_XDECREF(res);
    Py_XDECREF(exc);
    PyGILState_Release(gil);
}

static int watchdog_start(pytslock_lock *self)
{
    struct wd_report *r;
    int rc;

    if ((r = calloc(1, sizeof(*r))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (self->wd_conn == NULL
        && (self->wd_conn = pytslock_pool_take(self->client)) == NULL) {
        free(r);
        return -1;
    }
    Py_XINCREF(self->on_lost);
    r->on_lost = self->on_lost;
    rc = tslock_watchdog_start(&self->wd, self->lock, self->wd_conn->client,
                               self->renew_interval_ms, on_watchdog_failure, r);
    if (rc != TSLOCK_OK) {
        Py_XDECREF(r->on_lost);
        free(r);
        self->wd = NULL;
        pytslock_raise(rc, tslock_client_errstr(self->conn->client));
        return -1;
    }
    self->report = r;
    return 0;
}

/*
 * Stop the watchdog (without the GIL: its thread may be waiting for it
 * to report).  Returns its final status; the detail goes to detail.
 */
static int watchdog_stop(pytslock_lock *self, char *detail, size_t size)
{
    struct wd_report *r = self->report;
    tslock_watchdog *wd = self->wd;
    int rc;

    if (wd == NULL)
        return TSLOCK_OK;
    self->wd = NULL;
    self->report = NULL;
    {
        PyThreadState *gil_ = PyEval_SaveThread();
        rc = tslock_watchdog_stop(wd);
        PyEval_RestoreThread(gil_);
    }
    if (detail != NULL)
        snprintf(detail, size, "%s", r->detail);
    Py_XDECREF(r->on_lost);
    free(r);
    pytslock_pool_give(self->client, self->wd_conn);
    self->wd_conn = NULL;
    return rc;
}

/*
 * Stop a running watchdog before an operation on the hold.  Returns 0
 * when the hold is still ours, -1 with LockLostError set (and the hold
 * dropped) when the watchdog found it lost.
 */
static int pause_watchdog(pytslock_lock *self)
{
    char detail[512] = "";
    int rc = watchdog_stop(self, detail, sizeof(detail));

    if (rc == TSLOCK_OK || tslock_lock_is_held(self->lock))
        return 0;
    drop_hold(self);
    pytslock_raise(rc, detail);
    return -1;
}

/* ---------------------------------------------------------- the type */

static int lock_init(pytslock_lock *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"client",
                            "name",
                            "ttl_ms",
                            "scheme",
                            "unit",
                            "rw",
                            "permits",
                            "fair",
                            "fencing",
                            "wakeup",
                            "retry_min_ms",
                            "retry_max_ms",
                            "release_margin_ms",
                            "auto_renew",
                            "renew_interval_ms",
                            "on_lost",
                            "dialect",
                            NULL};
    PyObject *client, *on_lost = Py_None;
    const char *name, *dialect = NULL;
    char why[400];
    Py_ssize_t name_len;
    long long ttl_ms = 30000, permits = 0, margin = 0, renew = 0;
    int scheme = 0, unit = 0, rw = 0, fair = 0, fencing = 0, wakeup = 1;
    int rmin = 50, rmax = 100, auto_renew = 0;

    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "O!s#|LiiiLpppiiLpLOz", names, &pytslock_client_type,
            &client, &name, &name_len, &ttl_ms, &scheme, &unit, &rw, &permits,
            &fair, &fencing, &wakeup, &rmin, &rmax, &margin, &auto_renew,
            &renew, &on_lost, &dialect))
        return -1;
    if (name_len == 0 || strlen(name) != (size_t)name_len) {
        PyErr_SetString(PyExc_ValueError,
                        "name: expected a non-empty key without NUL bytes");
        return -1;
    }
    if (ttl_ms <= 0 || permits < 0 || margin < 0 || renew < 0 || rmin < 1
        || rmax < rmin) {
        PyErr_Format(PyExc_ValueError,
                     "expected ttl > 0, permits >= 0, margin >= 0, renew "
                     "interval >= 0 and 1 <= retry min <= retry max (ms); "
                     "got %lld, %lld, %lld, %lld, %d and %d",
                     ttl_ms, permits, margin, renew, rmin, rmax);
        return -1;
    }
    if (dialect != NULL
        && tslock_dialect_check(dialect, why, sizeof(why)) != TSLOCK_OK) {
        PyErr_Format(PyExc_ValueError, "dialect: %s", why);
        return -1;
    }
    if (on_lost != Py_None && !PyCallable_Check(on_lost)) {
        PyErr_SetString(PyExc_TypeError, "on_lost: expected a callable");
        return -1;
    }
    if (self->lock != NULL || self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Lock initialized twice");
        return -1;
    }
    free(self->name);
    free(self->dialect);
    self->dialect = NULL;
    if ((self->name = strdup(name)) == NULL
        || (dialect != NULL && (self->dialect = strdup(dialect)) == NULL)) {
        PyErr_NoMemory();
        return -1;
    }
    Py_INCREF(client);
    Py_XSETREF(self->client, (pytslock_client *)client);
    self->ttl_ms = ttl_ms;
    self->scheme = scheme;
    self->unit = unit;
    self->rw = rw;
    self->permits = permits;
    self->fair = fair;
    self->fencing = fencing;
    self->wakeup = wakeup;
    self->retry_min_ms = rmin;
    self->retry_max_ms = rmax;
    self->release_margin_ms = margin;
    self->auto_renew = auto_renew;
    self->renew_interval_ms = renew;
    Py_XSETREF(self->on_lost, on_lost == Py_None ? NULL : Py_NewRef(on_lost));
    self->pid = getpid();
    return 0;
}

static void lock_dealloc(pytslock_lock *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    check_fork(self);
    /*
     * A Lock dropped while held stays held on the server until its lease
     * runs out, as in the C library and redis-py; only the watchdog stops.
     */
    (void)watchdog_stop(self, NULL, 0);
    if (self->client != NULL && self->lock != NULL)
        drop_hold(self);
    Py_CLEAR(self->client);
    Py_CLEAR(self->on_lost);
    free(self->name);
    free(self->dialect);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int lock_traverse(pytslock_lock *self, visitproc visit, void *arg)
{
    Py_VISIT(self->client);
    Py_VISIT(self->on_lost);
    return 0;
}

static int lock_clear(pytslock_lock *self)
{
    Py_CLEAR(self->on_lost);
    return 0;
}

/*
 * Releases l without the GIL, so other threads run during the round trip;
 * returns the library's status, which only release() reports.  Held at
 * least at_least_ms since it was taken (tslock_release_after()); a
 * negative at_least_ms is a plain release.
 */
static int release_after_without_gil(tslock_lock *l, long long at_least_ms)
{
    PyThreadState *gil_ = PyEval_SaveThread();
    int rc = at_least_ms < 0 ? tslock_release(l)
                             : tslock_release_after(l, at_least_ms);

    PyEval_RestoreThread(gil_);
    return rc;
}

/* Releases l without the GIL: a plain release. */
static int release_without_gil(tslock_lock *l)
{
    return release_after_without_gil(l, -1);
}

/* Waits without the GIL, Ctrl-C cancelling; -1: Python's handler raised. */
static int acquire_interruptibly(pytslock_lock *self, tslock_lock *l,
                                 long long wait_ms, int *rc)
{
    int64_t deadline = wait_ms > 0 ? pytslock_mono_ms() + wait_ms : 0;
    int hooked;

    for (;;) {
        hooked = wait_ms != 0 ? pytslock_sigint_hook(cancel_lock, l) : 0;
        self->waiting = l;
        {
            PyThreadState *gil_ = PyEval_SaveThread();
            *rc = tslock_acquire(l, wait_ms);
            PyEval_RestoreThread(gil_);
        }
        self->waiting = NULL;
        if (hooked)
            pytslock_sigint_unhook();
        if (!hooked || !pytslock_sigint_seen())
            return 0;
        /* Ctrl-C came: Python's handler runs now; if it raises, let go. */
        if (PyErr_CheckSignals() < 0) {
            if (*rc == TSLOCK_OK)
                (void)release_without_gil(l);
            return -1;
        }
        if (*rc != TSLOCK_ECANCELED)
            return 0;
        /* The handler did not raise: wait on for what time is left. */
        if (wait_ms > 0 && (wait_ms = deadline - pytslock_mono_ms()) <= 0) {
            *rc = TSLOCK_EBUSY;
            return 0;
        }
    }
}

/* Keeps the hold and starts its watchdog if asked; -1: raised, let go. */
static int keep_hold(pytslock_lock *self, tslock_lock *l, pytslock_conn *conn)
{
    self->lock = l;
    self->conn = conn;
    if (self->auto_renew && watchdog_start(self) != 0) {
        (void)release_without_gil(l);
        drop_hold(self);
        return -1;
    }
    return 0;
}

static PyObject *lock_acquire(pytslock_lock *self, PyObject *args)
{
    long long wait_ms;
    pytslock_conn *conn;
    tslock_lock *l = NULL;
    int rc;

    if (!PyArg_ParseTuple(args, "L", &wait_ms))
        return NULL;
    if (enter(self) < 0)
        return NULL;
    if (self->lock != NULL) {
        char msg[200];

        leave(self);
        snprintf(msg, sizeof(msg),
                 "lock '%.100s' is already held by this "
                 "Lock object",
                 self->name);
        return pytslock_raise(TSLOCK_ESTATE, msg);
    }
    if (take_fresh(self, &conn, &l) != 0)
        goto fail;
    if (acquire_interruptibly(self, l, wait_ms, &rc) < 0)
        goto fail_lock;
    if (rc == TSLOCK_OK) {
        if (keep_hold(self, l, conn) != 0)
            goto fail;
        leave(self);
        Py_RETURN_TRUE;
    }
    if (rc == TSLOCK_EBUSY || rc == TSLOCK_EUNREADABLE
        || rc == TSLOCK_ECANCELED) {
        tslock_lock_free(l);
        pytslock_pool_give(self->client, conn);
        leave(self);
        Py_RETURN_FALSE;
    }
    raise_on(conn, rc);
fail_lock:
    tslock_lock_free(l);
    pytslock_pool_give(self->client, conn);
fail:
    leave(self);
    return NULL;
}

static PyObject *not_held(pytslock_lock *self, const char *what)
{
    char msg[200];

    snprintf(msg, sizeof(msg), "Cannot %s an unlocked lock ('%.100s')", what,
             self->name);
    return pytslock_raise(TSLOCK_ESTATE, msg);
}

/*
 * The opening of release and extend: enter, refuse when not held (what
 * names the operation), and stop the watchdog, which must not renew
 * while the hold changes.  Returns 0 entered, the hold still ours; -1
 * with an exception set and the object left.
 */
static int begin_on_hold(pytslock_lock *self, const char *what)
{
    if (enter(self) < 0)
        return -1;
    if (self->lock == NULL) {
        leave(self);
        not_held(self, what);
        return -1;
    }
    if (pause_watchdog(self) != 0) {
        leave(self);
        return -1;
    }
    return 0;
}

static PyObject *lock_release(pytslock_lock *self, PyObject *args)
{
    long long at_least_ms = -1;
    int rc;

    if (!PyArg_ParseTuple(args, "|L", &at_least_ms))
        return NULL;
    if (begin_on_hold(self, "release") != 0)
        return NULL;
    rc = release_after_without_gil(self->lock, at_least_ms);
    if (rc == TSLOCK_OK) {
        drop_hold(self);
        leave(self);
        Py_RETURN_NONE;
    }
    raise_on(self->conn, rc);
    if (rc == TSLOCK_ELOST || rc == TSLOCK_EWRONGTYPE
        || !tslock_lock_is_held(self->lock))
        drop_hold(self);
    leave(self);
    return NULL;
}

static PyObject *lock_extend(pytslock_lock *self, PyObject *args)
{
    long long ttl_ms;
    int rc;

    if (!PyArg_ParseTuple(args, "L", &ttl_ms))
        return NULL;
    if (ttl_ms < 0)
        return PyErr_Format(PyExc_ValueError,
                            "extend: expected a lease >= 0 ms, got %lld",
                            ttl_ms);
    if (begin_on_hold(self, "extend") != 0)
        return NULL;
    {
        PyThreadState *gil_ = PyEval_SaveThread();
        rc = tslock_extend(self->lock, ttl_ms);
        PyEval_RestoreThread(gil_);
    }
    if (rc != TSLOCK_OK) {
        raise_on(self->conn, rc);
        if (!tslock_lock_is_held(self->lock))
            drop_hold(self);
        goto fail;
    }
    if (self->auto_renew && watchdog_start(self) != 0)
        goto fail;
    leave(self);
    Py_RETURN_NONE;
fail:
    leave(self);
    return NULL;
}

/* Milliseconds left of our lease, by the server; None when not ours. */
static PyObject *lock_time_left(pytslock_lock *self, PyObject *Py_UNUSED(x))
{
    int64_t left = 0;
    int rc;

    if (enter(self) < 0)
        return NULL;
    if (self->lock == NULL) {
        leave(self);
        Py_RETURN_NONE;
    }
    if (self->wd != NULL) {
        int status = tslock_watchdog_status(self->wd);

        if (status != TSLOCK_OK) {
            leave(self);
            Py_RETURN_NONE;
        }
        if (pause_watchdog(self) != 0) {
            PyErr_Clear();
            leave(self);
            Py_RETURN_NONE;
        }
    }
    {
        PyThreadState *gil_ = PyEval_SaveThread();
        rc = tslock_lock_time_left(self->lock, &left);
        PyEval_RestoreThread(gil_);
    }
    if (rc == TSLOCK_OK && self->auto_renew && watchdog_start(self) != 0) {
        leave(self);
        return NULL;
    }
    leave(self);
    if (rc == TSLOCK_OK)
        return PyLong_FromLongLong(left);
    if (rc == TSLOCK_ELOST)
        Py_RETURN_NONE;
    return raise_on(self->conn, rc);
}

static PyObject *lock_adopt(pytslock_lock *self, PyObject *args)
{
    const char *handle;
    pytslock_conn *conn;
    tslock_lock *l = NULL;
    int rc;

    if (!PyArg_ParseTuple(args, "s", &handle))
        return NULL;
    if (enter(self) < 0)
        return NULL;
    if (self->lock != NULL) {
        leave(self);
        return pytslock_raise(TSLOCK_ESTATE, "adopt: this Lock object already "
                                             "holds the lock");
    }
    if (take_fresh(self, &conn, &l) != 0)
        goto fail;
    if ((rc = tslock_lock_adopt(l, handle)) != TSLOCK_OK) {
        raise_on(conn, rc);
        tslock_lock_free(l);
        pytslock_pool_give(self->client, conn);
        goto fail;
    }
    self->lock = l;
    self->conn = conn;
    if (self->auto_renew && watchdog_start(self) != 0) {
        drop_hold(self);
        goto fail;
    }
    leave(self);
    Py_RETURN_NONE;
fail:
    leave(self);
    return NULL;
}

/* Stop renewing (at exit): the lease then runs out by itself. */
static PyObject *lock_stop_watchdog(pytslock_lock *self, PyObject *Py_UNUSED(x))
{
    if (enter(self) < 0)
        return NULL;
    (void)watchdog_stop(self, NULL, 0);
    leave(self);
    Py_RETURN_NONE;
}

/* Wake a wait of this Lock in another thread: its acquire returns False. */
static PyObject *lock_cancel(pytslock_lock *self, PyObject *Py_UNUSED(x))
{
    if (self->waiting != NULL)
        (void)tslock_lock_cancel(self->waiting);
    Py_RETURN_NONE;
}

/* Whether this object holds the lock, by its own knowledge (no I/O). */
static PyObject *lock_is_held(pytslock_lock *self, PyObject *Py_UNUSED(x))
{
    check_fork(self);
    if (self->lock != NULL && self->wd != NULL)
        return PyBool_FromLong(tslock_watchdog_status(self->wd) == TSLOCK_OK);
    return PyBool_FromLong(self->lock != NULL);
}

/*
 * Run one read-only inspection on a fresh lock object over a pooled
 * connection: 'p' peek, 'h' holders, 'q' queue length, 'b' break.
 */
static PyObject *inspect(pytslock_lock *self, int what, const char *arg)
{
    pytslock_conn *conn;
    tslock_lock *l = NULL;
    char value[1024] = "";
    int64_t n = 0;
    int rc;

    check_fork(self);
    if (take_fresh(self, &conn, &l) != 0)
        return NULL;
    {
        PyThreadState *gil_ = PyEval_SaveThread();
        switch (what) {
        case 'p':
            rc = tslock_lock_peek(l, value, sizeof(value), &n);
            break;
        case 'h':
            rc = tslock_lock_holders(l, &n);
            break;
        case 'q':
            rc = tslock_lock_queue_length(l, &n);
            break;
        default:
            rc = tslock_lock_break(l, arg);
            break;
        }
        PyEval_RestoreThread(gil_);
    }
    if (rc != TSLOCK_OK && !(what == 'b' && rc == TSLOCK_ELOST)) {
        raise_on(conn, rc);
        tslock_lock_free(l);
        pytslock_pool_give(self->client, conn);
        return NULL;
    }
    tslock_lock_free(l);
    pytslock_pool_give(self->client, conn);
    if (what == 'p')
        return Py_BuildValue("(sL)", value, (long long)n);
    if (what == 'b')
        return PyBool_FromLong(rc == TSLOCK_OK);
    return PyLong_FromLongLong(n);
}

static PyObject *lock_peek(pytslock_lock *self, PyObject *Py_UNUSED(x))
{
    return inspect(self, 'p', NULL);
}

static PyObject *lock_holders(pytslock_lock *self, PyObject *Py_UNUSED(x))
{
    return inspect(self, 'h', NULL);
}

static PyObject *lock_queue_length(pytslock_lock *self, PyObject *Py_UNUSED(x))
{
    return inspect(self, 'q', NULL);
}

static PyObject *lock_break(pytslock_lock *self, PyObject *args)
{
    const char *value;

    if (!PyArg_ParseTuple(args, "s", &value))
        return NULL;
    return inspect(self, 'b', value);
}

/* The hold's facts, read from the lock object (no I/O); None if not held. */
static PyObject *lock_hold_info(pytslock_lock *self, PyObject *Py_UNUSED(x))
{
    static const char *const schemes[] = {"auto", "timestamp", "token",
                                          "bridge"};
    tslock_scheme used;

    check_fork(self);
    if (self->lock == NULL || self->busy)
        Py_RETURN_NONE;
    used = tslock_lock_scheme_used(self->lock);
    return Py_BuildValue("{s:z,s:z,s:s,s:L,s:L}", "handle",
                         tslock_lock_handle(self->lock), "value",
                         tslock_lock_value(self->lock), "scheme",
                         (unsigned)used < 4 ? schemes[used] : "?", "expires_ms",
                         (long long)tslock_lock_expires_ms(self->lock), "fence",
                         (long long)tslock_lock_fence(self->lock));
}

static PyObject *lock_get_name(pytslock_lock *self, void *Py_UNUSED(c))
{
    return PyUnicode_FromString(self->name ? self->name : "");
}

static PyObject *lock_get_client(pytslock_lock *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->client ? (PyObject *)self->client : Py_None);
}

static PyGetSetDef lock_getset[] = {
    {"name", (getter)lock_get_name, NULL, "The lock's key.", NULL},
    {"_client", (getter)lock_get_client, NULL, "The Client.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef lock_methods[] = {
    {"_acquire", (PyCFunction)lock_acquire, METH_VARARGS,
     "_acquire(wait_ms) -> bool"},
    {"_release", (PyCFunction)lock_release, METH_VARARGS,
     "_release([at_least_ms])"},
    {"_extend", (PyCFunction)lock_extend, METH_VARARGS, "_extend(ttl_ms)"},
    {"_time_left", (PyCFunction)lock_time_left, METH_NOARGS,
     "_time_left() -> ms or None"},
    {"_adopt", (PyCFunction)lock_adopt, METH_VARARGS, "_adopt(handle)"},
    {"_is_held", (PyCFunction)lock_is_held, METH_NOARGS, "_is_held()"},
    {"_hold_info", (PyCFunction)lock_hold_info, METH_NOARGS,
     "_hold_info() -> dict or None"},
    {"_peek", (PyCFunction)lock_peek, METH_NOARGS,
     "_peek() -> (value, ttl_ms)"},
    {"_holders", (PyCFunction)lock_holders, METH_NOARGS, "_holders()"},
    {"_queue_length", (PyCFunction)lock_queue_length, METH_NOARGS,
     "_queue_length()"},
    {"_break", (PyCFunction)lock_break, METH_VARARGS, "_break(value)"},
    {"_stop_watchdog", (PyCFunction)lock_stop_watchdog, METH_NOARGS,
     "_stop_watchdog()"},
    {"cancel", (PyCFunction)lock_cancel, METH_NOARGS,
     "cancel()\n\nMake a blocking acquire() of this Lock running in another "
     "thread\nreturn False now.  Safe from any thread."},
    {NULL, NULL, 0, NULL}};

PyTypeObject pytslock_lock_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tslock._tslock.Lock",
    .tp_basicsize = sizeof(pytslock_lock),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One named lock over a Client.  See tslock.Lock.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)lock_init,
    .tp_dealloc = (destructor)lock_dealloc,
    .tp_traverse = (traverseproc)lock_traverse,
    .tp_clear = (inquiry)lock_clear,
    .tp_weaklistoffset = offsetof(pytslock_lock, weakrefs),
    .tp_methods = lock_methods,
    .tp_getset = lock_getset,
};
