/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock.c - tslock._tslock.Redlock: one lock over several independent
 * masters (tslock_redlock_*), each reached through its own Client's pool.
 * A hold keeps one connection of every Client from acquire to release;
 * the wait runs without the GIL, and Ctrl-C cancels it as for a Lock.
 */
#include "pytslock.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    PyObject_HEAD PyObject *clients; /* tuple of Client */
    char *name;
    int64_t ttl_ms;
    int retry_min_ms, retry_max_ms, server_timeout_ms;
    tslock_redlock *rl;    /* non-NULL while held */
    pytslock_conn **conns; /* one per client while held */
    tslock_redlock *waiting;
    int busy;
    pid_t pid;
} pytslock_redlock;

static Py_ssize_t n_clients(pytslock_redlock *self)
{
    return PyTuple_GET_SIZE(self->clients);
}

static pytslock_client *client_at(pytslock_redlock *self, Py_ssize_t i)
{
    return (pytslock_client *)PyTuple_GET_ITEM(self->clients, i);
}

static void give_all(pytslock_redlock *self, pytslock_conn **conns)
{
    Py_ssize_t i;

    for (i = 0; i < n_clients(self); i++)
        if (conns[i] != NULL)
            pytslock_pool_give(client_at(self, i), conns[i]);
    free(conns);
}

/* A Redlock over one pooled connection of every client, or NULL. */
static tslock_redlock *make(pytslock_redlock *self, pytslock_conn ***out)
{
    Py_ssize_t i, n = n_clients(self);
    pytslock_conn **conns = calloc((size_t)n, sizeof(*conns));
    tslock_client **cs = calloc((size_t)n, sizeof(*cs));
    tslock_redlock *rl = NULL;
    int rc;

    if (conns == NULL || cs == NULL) {
        free(conns);
        free(cs);
        return (tslock_redlock *)PyErr_NoMemory();
    }
    for (i = 0; i < n; i++) {
        /* A master that cannot be reached is the algorithm's to count. */
        conns[i] = pytslock_pool_take_or_broken(client_at(self, i));
        if (conns[i] == NULL)
            goto fail;
        cs[i] = conns[i]->client;
    }
    rc = tslock_redlock_new(&rl, cs, (size_t)n, self->name);
    if (rc == TSLOCK_OK)
        rc = tslock_redlock_set_ttl(rl, self->ttl_ms);
    if (rc == TSLOCK_OK)
        rc = tslock_redlock_set_retry(rl, self->retry_min_ms,
                                      self->retry_max_ms);
    if (rc == TSLOCK_OK)
        rc = tslock_redlock_set_server_timeout(rl, self->server_timeout_ms);
    if (rc != TSLOCK_OK) {
        pytslock_raise(rc, rl != NULL ? tslock_redlock_errstr(rl) : NULL);
        tslock_redlock_free(rl);
        goto fail;
    }
    free(cs);
    *out = conns;
    return rl;
fail:
    free(cs);
    give_all(self, conns);
    return NULL;
}

static void drop_hold(pytslock_redlock *self)
{
    tslock_redlock_free(self->rl);
    self->rl = NULL;
    give_all(self, self->conns);
    self->conns = NULL;
}

/* In a fork child the hold is the parent's: forget it, sending nothing. */
static void check_fork(pytslock_redlock *self)
{
    Py_ssize_t i;

    if (self->pid == getpid())
        return;
    self->pid = getpid();
    self->busy = 0;
    self->waiting = NULL;
    if (self->rl == NULL)
        return;
    tslock_redlock_free(self->rl);
    self->rl = NULL;
    for (i = 0; i < n_clients(self); i++)
        pytslock_conn_close(self->conns[i]);
    free(self->conns);
    self->conns = NULL;
}

static int enter(pytslock_redlock *self)
{
    check_fork(self);
    if (self->busy) {
        pytslock_raise(TSLOCK_ESTATE,
                       "Redlock object in use by another thread: it serves "
                       "one thread at a time");
        return -1;
    }
    self->busy = 1;
    return 0;
}

/*
 * The opening of acquire and adopt: enter, refuse a second hold with
 * the message held, and make the Redlock over a connection of every
 * client.  Returns NULL with an exception set and the object left.
 */
static tslock_redlock *begin_hold(pytslock_redlock *self, const char *held,
                                  pytslock_conn ***conns)
{
    tslock_redlock *rl;

    if (enter(self) < 0)
        return NULL;
    if (self->rl != NULL) {
        self->busy = 0;
        pytslock_raise(TSLOCK_ESTATE, held);
        return NULL;
    }
    if ((rl = make(self, conns)) == NULL)
        self->busy = 0;
    return rl;
}

/* Keeps the hold taken or adopted, and leaves the object. */
static void keep_hold(pytslock_redlock *self, tslock_redlock *rl,
                      pytslock_conn **conns)
{
    self->rl = rl;
    self->conns = conns;
    self->busy = 0;
}

/*
 * Frees a Redlock that is not kept and gives its connections back to
 * their pools; leaves the object.
 */
static void let_go(pytslock_redlock *self, tslock_redlock *rl,
                   pytslock_conn **conns)
{
    tslock_redlock_free(rl);
    give_all(self, conns);
    self->busy = 0;
}

static int cancel_redlock(void *rl)
{
    return tslock_redlock_cancel(rl);
}

static int redlock_init(pytslock_redlock *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {
        "clients",           "name", "ttl_ms", "retry_min_ms", "retry_max_ms",
        "server_timeout_ms", NULL};
    PyObject *clients;
    const char *name;
    Py_ssize_t name_len, i;
    long long ttl_ms = 30000;
    int rmin = 50, rmax = 100, server_ms = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!s#|Liii", names,
                                     &PyTuple_Type, &clients, &name, &name_len,
                                     &ttl_ms, &rmin, &rmax, &server_ms))
        return -1;
    if (self->rl != NULL || self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Redlock initialized twice");
        return -1;
    }
    for (i = 0; i < PyTuple_GET_SIZE(clients); i++)
        if (!PyObject_TypeCheck(PyTuple_GET_ITEM(clients, i),
                                &pytslock_client_type)) {
            PyErr_SetString(PyExc_TypeError,
                            "clients: expected a tuple of tslock.Client");
            return -1;
        }
    if (name_len == 0 || strlen(name) != (size_t)name_len || ttl_ms <= 0
        || rmin < 1 || rmax < rmin || server_ms < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "expected a non-empty name without NUL bytes, ttl > "
                        "0, 1 <= retry min <= retry max and a server "
                        "timeout >= 0 (ms)");
        return -1;
    }
    free(self->name);
    if ((self->name = strdup(name)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_INCREF(clients);
    Py_XSETREF(self->clients, clients);
    self->ttl_ms = ttl_ms;
    self->retry_min_ms = rmin;
    self->retry_max_ms = rmax;
    self->server_timeout_ms = server_ms;
    self->pid = getpid();
    return 0;
}

static void redlock_dealloc(pytslock_redlock *self)
{
    check_fork(self);
    /* Dropped while held: the hold stays until its lease runs out. */
    if (self->rl != NULL && self->clients != NULL)
        drop_hold(self);
    Py_CLEAR(self->clients);
    free(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *redlock_acquire(pytslock_redlock *self, PyObject *args)
{
    long long wait_ms;
    int64_t deadline;
    pytslock_conn **conns = NULL;
    tslock_redlock *rl;
    int rc, hooked;

    if (!PyArg_ParseTuple(args, "L", &wait_ms))
        return NULL;
    rl = begin_hold(self, "this Redlock object already holds the lock", &conns);
    if (rl == NULL)
        return NULL;
    deadline = wait_ms > 0 ? pytslock_mono_ms() + wait_ms : 0;
    for (;;) {
        hooked = wait_ms != 0 ? pytslock_sigint_hook(cancel_redlock, rl) : 0;
        self->waiting = rl;
        {
            PyThreadState *gil_ = PyEval_SaveThread();
            rc = tslock_redlock_acquire(rl, wait_ms);
            PyEval_RestoreThread(gil_);
        }
        self->waiting = NULL;
        if (hooked)
            pytslock_sigint_unhook();
        if (!hooked || !pytslock_sigint_seen())
            break;
        if (PyErr_CheckSignals() < 0) {
            if (rc == TSLOCK_OK) {
                {
                    PyThreadState *gil_ = PyEval_SaveThread();
                    (void)tslock_redlock_release(rl);
                    PyEval_RestoreThread(gil_);
                }
            }
            goto fail;
        }
        if (rc != TSLOCK_ECANCELED)
            break;
        if (wait_ms > 0 && (wait_ms = deadline - pytslock_mono_ms()) <= 0) {
            rc = TSLOCK_EBUSY;
            break;
        }
    }
    if (rc == TSLOCK_OK) {
        keep_hold(self, rl, conns);
        Py_RETURN_TRUE;
    }
    if (rc == TSLOCK_EBUSY || rc == TSLOCK_ECANCELED) {
        let_go(self, rl, conns);
        Py_RETURN_FALSE;
    }
    pytslock_raise(rc, tslock_redlock_errstr(rl));
fail:
    let_go(self, rl, conns);
    return NULL;
}

/* release() or extend(ttl_ms) of the hold: which = 'r' or 'e'. */
static PyObject *operate(pytslock_redlock *self, int which, long long ttl_ms)
{
    int rc;

    if (enter(self) < 0)
        return NULL;
    if (self->rl == NULL) {
        self->busy = 0;
        return pytslock_raise(TSLOCK_ESTATE, which == 'r' ? "Cannot release an "
                                                            "unlocked Redlock"
                                                          : "Cannot extend an "
                                                            "unlocked Redlock");
    }
    {
        PyThreadState *gil_ = PyEval_SaveThread();
        rc = which == 'r' ? tslock_redlock_release(self->rl)
                          : tslock_redlock_extend(self->rl, ttl_ms);
        PyEval_RestoreThread(gil_);
    }
    if (rc != TSLOCK_OK)
        pytslock_raise(rc, tslock_redlock_errstr(self->rl));
    if (!tslock_redlock_is_held(self->rl))
        drop_hold(self);
    self->busy = 0;
    if (rc != TSLOCK_OK)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *redlock_release(pytslock_redlock *self, PyObject *Py_UNUSED(x))
{
    return operate(self, 'r', 0);
}

static PyObject *redlock_extend(pytslock_redlock *self, PyObject *args)
{
    long long ttl_ms;

    if (!PyArg_ParseTuple(args, "L", &ttl_ms))
        return NULL;
    if (ttl_ms < 0)
        return PyErr_Format(PyExc_ValueError,
                            "extend: expected a lease >= 0 ms, got %lld",
                            ttl_ms);
    return operate(self, 'e', ttl_ms);
}

static PyObject *redlock_adopt(pytslock_redlock *self, PyObject *args)
{
    const char *handle;
    pytslock_conn **conns = NULL;
    tslock_redlock *rl;
    int rc;

    if (!PyArg_ParseTuple(args, "s", &handle))
        return NULL;
    rl = begin_hold(self, "adopt: this Redlock object already holds the lock",
                    &conns);
    if (rl == NULL)
        return NULL;
    if ((rc = tslock_redlock_adopt(rl, handle)) != TSLOCK_OK) {
        pytslock_raise(rc, tslock_redlock_errstr(rl));
        let_go(self, rl, conns);
        return NULL;
    }
    keep_hold(self, rl, conns);
    Py_RETURN_NONE;
}

static PyObject *redlock_cancel(pytslock_redlock *self, PyObject *Py_UNUSED(x))
{
    if (self->waiting != NULL)
        (void)tslock_redlock_cancel(self->waiting);
    Py_RETURN_NONE;
}

/* The hold's facts (no I/O): None when not held. */
static PyObject *redlock_hold_info(pytslock_redlock *self,
                                   PyObject *Py_UNUSED(x))
{
    check_fork(self);
    if (self->rl == NULL || self->busy)
        Py_RETURN_NONE;
    return Py_BuildValue("{s:z,s:L,s:i}", "handle",
                         tslock_redlock_handle(self->rl), "validity_ms",
                         (long long)tslock_redlock_validity_ms(self->rl),
                         "taken", tslock_redlock_taken(self->rl));
}

static PyObject *redlock_get_name(pytslock_redlock *self, void *Py_UNUSED(c))
{
    return PyUnicode_FromString(self->name ? self->name : "");
}

static PyGetSetDef redlock_getset[] = {
    {"name", (getter)redlock_get_name, NULL, "The lock's key.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef redlock_methods[] = {
    {"_acquire", (PyCFunction)redlock_acquire, METH_VARARGS,
     "_acquire(wait_ms) -> bool"},
    {"_release", (PyCFunction)redlock_release, METH_NOARGS, "_release()"},
    {"_extend", (PyCFunction)redlock_extend, METH_VARARGS, "_extend(ttl_ms)"},
    {"_adopt", (PyCFunction)redlock_adopt, METH_VARARGS, "_adopt(handle)"},
    {"_hold_info", (PyCFunction)redlock_hold_info, METH_NOARGS,
     "_hold_info() -> dict or None"},
    {"cancel", (PyCFunction)redlock_cancel, METH_NOARGS,
     "cancel()\n\nMake a blocking acquire() running in another thread "
     "return False now."},
    {NULL, NULL, 0, NULL}};

PyTypeObject pytslock_redlock_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tslock._tslock.Redlock",
    .tp_basicsize = sizeof(pytslock_redlock),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "One lock over several independent masters.  See "
              "tslock.Redlock.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)redlock_init,
    .tp_dealloc = (destructor)redlock_dealloc,
    .tp_methods = redlock_methods,
    .tp_getset = redlock_getset,
};
