/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * module.c - the tslock._tslock module: the exception hierarchy over the
 * TSLOCK_E* codes, the library's pure functions, and a raw connection
 * (hiredis) for the read-only key walk of survey().
 */
#include "pytslock.h"

#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

PyObject *pytslock_LockError;
PyObject *pytslock_LockNotOwnedError;
PyObject *pytslock_LockLostError;
PyObject *pytslock_WrongTypeError;
PyObject *pytslock_UnsupportedError;
unsigned long pytslock_main_thread;

static PyObject *class_of(int code)
{
    switch (code) {
    case TSLOCK_ELOST:
        return pytslock_LockLostError;
    case TSLOCK_EWRONGTYPE:
        return pytslock_WrongTypeError;
    case TSLOCK_EUNSUPPORTED:
        return pytslock_UnsupportedError;
    default:
        return pytslock_LockError;
    }
}

PyObject *pytslock_exception(int code, const char *detail)
{
    PyObject *cls = class_of(code), *exc, *v;
    const char *msg =
        detail != NULL && *detail != '\0' ? detail : tslock_strerror(code);

    exc = PyObject_CallFunction(cls, "s", msg);
    if (exc == NULL) {
        /* A detail that is not UTF-8 (a server's bytes): say so plainly. */
        PyErr_Clear();
        exc = PyObject_CallFunction(cls, "s", tslock_strerror(code));
        if (exc == NULL)
            return NULL;
    }
    if ((v = PyLong_FromLong(code)) == NULL
        || PyObject_SetAttrString(exc, "code", v) < 0)
        goto fail;
    Py_DECREF(v);
    if ((v = PyUnicode_FromString(tslock_errname(code))) == NULL
        || PyObject_SetAttrString(exc, "errname", v) < 0)
        goto fail;
    Py_DECREF(v);
    return exc;
fail:
    Py_XDECREF(v);
    Py_DECREF(exc);
    return NULL;
}

PyObject *pytslock_raise(int code, const char *detail)
{
    PyObject *exc = pytslock_exception(code, detail);

    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* ------------------------------------------------- library functions */

static PyObject *mod_strerror(PyObject *m, PyObject *args)
{
    int code;

    if (!PyArg_ParseTuple(args, "i", &code))
        return NULL;
    return PyUnicode_FromString(tslock_strerror(code));
}

static PyObject *mod_errname(PyObject *m, PyObject *args)
{
    int code;

    if (!PyArg_ParseTuple(args, "i", &code))
        return NULL;
    return PyUnicode_FromString(tslock_errname(code));
}

static PyObject *mod_version(PyObject *m, PyObject *Py_UNUSED(x))
{
    return PyUnicode_FromString(tslock_version());
}

/* classify(value) -> (scheme, unit, expires_ms) or None. */
static PyObject *mod_classify(PyObject *m, PyObject *args)
{
    const char *value;
    Py_ssize_t len;
    tslock_scheme scheme = TSLOCK_SCHEME_AUTO;
    tslock_unit unit = TSLOCK_UNIT_MS;
    int64_t expires = 0;

    if (!PyArg_ParseTuple(args, "y#", &value, &len))
        return NULL;
    if (tslock_value_classify(value, (size_t)len, &scheme, &unit, &expires)
        != TSLOCK_OK)
        Py_RETURN_NONE;
    return Py_BuildValue("(iiL)", (int)scheme, (int)unit, (long long)expires);
}

/* The library's dialect presets: a list of (name, format, library). */
static PyObject *mod_dialects(PyObject *m, PyObject *args)
{
    PyObject *list = PyList_New(0);
    const char *name;
    size_t i;

    (void)m;
    (void)args;
    for (i = 0; list != NULL && (name = tslock_dialect_preset(i)) != NULL;
         i++) {
        PyObject *row =
            Py_BuildValue("(sss)", name, tslock_dialect_format(name),
                          tslock_dialect_library(name));
        if (row == NULL || PyList_Append(list, row) != 0) {
            Py_XDECREF(row);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(row);
    }
    return list;
}

/* The presets that could have written a value, or None. */
static PyObject *mod_dialect_match(PyObject *m, PyObject *args)
{
    const char *value;
    Py_ssize_t len;
    char names[512];
    int64_t expires = 0;

    (void)m;
    if (!PyArg_ParseTuple(args, "y#", &value, &len))
        return NULL;
    if (tslock_dialect_match(value, (size_t)len, names, sizeof(names), &expires)
        != TSLOCK_OK)
        Py_RETURN_NONE;
    return Py_BuildValue("(sL)", names, (long long)expires);
}

/*
 * value_name(key, value) -> (kind, unit, expires_ms, dialects): the
 * library's verdict on a stored value (tslock_value_name()), the one the
 * tslock command's survey gives; key None: a key known to be a lock.
 */
static PyObject *mod_value_name(PyObject *m, PyObject *args)
{
    const char *key = NULL, *value;
    Py_ssize_t key_len = 0, len;
    tslock_value_kind kind = TSLOCK_VALUE_NOT_A_LOCK;
    tslock_unit unit = TSLOCK_UNIT_MS;
    int64_t expires = 0;
    char names[512];

    (void)m;
    if (!PyArg_ParseTuple(args, "z#y#", &key, &key_len, &value, &len))
        return NULL;
    if (tslock_value_name(key, (size_t)key_len, value, (size_t)len, &kind,
                          &unit, &expires, names, sizeof(names))
        != TSLOCK_OK) {
        PyErr_SetString(PyExc_ValueError, "value_name: bad arguments");
        return NULL;
    }
    return Py_BuildValue("(iiLs)", (int)kind, (int)unit, (long long)expires,
                         names);
}

/* The sentinels of a parsed URL as a list of (host, port). */
static PyObject *sentinel_list(const struct tslock_url *u)
{
    PyObject *list = PyList_New(u->nsentinels);
    int i;

    for (i = 0; list != NULL && i < u->nsentinels; i++) {
        PyObject *pair =
            Py_BuildValue("(si)", u->sentinel_hosts[i], u->sentinel_ports[i]);
        if (pair == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, pair);
    }
    return list;
}

/* Client keyword arguments for a parsed URL. */
static PyObject *url_kwargs(const struct tslock_url *u)
{
    PyObject *kw = Py_BuildValue("{s:z,s:z,s:i}", "username", u->user,
                                 "password", u->password, "db", u->db);
    PyObject *more = NULL;

    if (kw == NULL)
        return NULL;
    if (u->nsentinels > 0) {
        PyObject *list = sentinel_list(u);
        if (list != NULL)
            more = Py_BuildValue("{s:N,s:s,s:z}", "sentinels", list,
                                 "service_name", u->master_name,
                                 "sentinel_password", u->sentinel_password);
    } else if (u->is_unix)
        more = Py_BuildValue("{s:s}", "unix_socket_path", u->host);
    else
        more = Py_BuildValue("{s:s,s:i}", "host", u->host, "port", u->port);
    if (more == NULL || PyDict_Update(kw, more) != 0)
        Py_CLEAR(kw);
    Py_XDECREF(more);
    if (kw != NULL && u->tls != NULL
        && PyDict_SetItemString(kw, "ssl", Py_True) != 0)
        Py_CLEAR(kw);
    return kw;
}

int pytslock_tls_from_dict(PyObject *dict, tslock_tls **out)
{
    PyObject *name, *value;
    Py_ssize_t pos = 0;
    char err[256];
    int rc;

    *out = NULL;
    if (dict == Py_None)
        return 0;
    if (!PyDict_Check(dict)) {
        PyErr_SetString(PyExc_TypeError, "tls: expected a dict or None");
        return -1;
    }
    rc = tslock_tls_new(out);
    if (rc == TSLOCK_ENOMEM) {
        PyErr_NoMemory();
        return -1;
    }
    if (rc != TSLOCK_OK) {
        pytslock_raise(rc, "TLS (ssl=True, rediss://): this libtslock was "
                           "built without TLS");
        return -1;
    }
    while (PyDict_Next(dict, &pos, &name, &value)) {
        const char *n = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
        const char *v = PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : NULL;
        if (n == NULL || v == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError,
                                "tls: expected str names and values");
            goto fail;
        }
        rc = tslock_tls_set(*out, n, v, err, sizeof(err));
        if (rc != TSLOCK_OK) {
            if (rc == TSLOCK_ENOMEM)
                PyErr_NoMemory();
            else
                PyErr_SetString(PyExc_ValueError, err);
            goto fail;
        }
    }
    return 0;
fail:
    tslock_tls_free(*out);
    *out = NULL;
    return -1;
}

/* parse_url(url) -> Client keyword arguments; ValueError names the fault. */
static PyObject *mod_parse_url(PyObject *m, PyObject *args)
{
    struct tslock_url u;
    const char *text;
    char err[256];
    PyObject *kw;
    int rc;

    if (!PyArg_ParseTuple(args, "s", &text))
        return NULL;
    rc = tslock_url_parse(text, 0, &u, err, sizeof(err));
    if (rc == TSLOCK_ENOMEM)
        return PyErr_NoMemory();
    if (rc != TSLOCK_OK) {
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    kw = url_kwargs(&u);
    tslock_url_free(&u);
    return kw;
}

/* scrub_url(url) -> the URL with its passwords hidden, for messages. */
static PyObject *mod_scrub_url(PyObject *m, PyObject *args)
{
    const char *text;
    PyObject *shown;
    char *copy;

    if (!PyArg_ParseTuple(args, "s", &text))
        return NULL;
    if ((copy = strdup(text)) == NULL)
        return PyErr_NoMemory();
    tslock_url_scrub(copy);
    shown = PyUnicode_FromString(copy);
    memset(copy, 0, strlen(copy));
    free(copy);
    return shown;
}

/* _exception(code, detail) -> the exception a call failing so raises. */
static PyObject *mod_exception(PyObject *m, PyObject *args)
{
    int code;
    const char *detail = NULL;

    if (!PyArg_ParseTuple(args, "i|z", &code, &detail))
        return NULL;
    return pytslock_exception(code, detail);
}

static PyObject *mod_set_main_thread(PyObject *m, PyObject *args)
{
    unsigned long ident;

    if (!PyArg_ParseTuple(args, "k", &ident))
        return NULL;
    pytslock_main_thread = ident;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------ raw connection */

typedef struct {
    PyObject_HEAD redisContext *ctx;
} raw_conn;

static PyObject *reply_to_python(const redisReply *r)
{
    PyObject *list;
    size_t i;

    switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
        return PyBytes_FromStringAndSize(r->str, (Py_ssize_t)r->len);
    case REDIS_REPLY_INTEGER:
        return PyLong_FromLongLong(r->integer);
    case REDIS_REPLY_ARRAY:
        if ((list = PyList_New((Py_ssize_t)r->elements)) == NULL)
            return NULL;
        for (i = 0; i < r->elements; i++) {
            PyObject *item = reply_to_python(r->element[i]);

            if (item == NULL) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
        }
        return list;
    case REDIS_REPLY_ERROR:
        return pytslock_exception(TSLOCK_ESERVER, r->str);
    default:
        Py_RETURN_NONE;
    }
}

static int raw_init(raw_conn *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"host",       "port", "unix_socket_path",
                            "timeout_ms", "tls",  NULL};
    const char *host = "127.0.0.1", *path = NULL;
    int port = 6379, timeout_ms = 5000, rc = TSLOCK_OK;
    PyObject *tls_dict = Py_None;
    tslock_tls *tls = NULL;
    char why[512] = "";
    struct timeval tv;
    redisContext *ctx;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|siziO", names, &host, &port,
                                     &path, &timeout_ms, &tls_dict))
        return -1;
    if (pytslock_tls_from_dict(tls_dict, &tls) != 0)
        return -1;
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    {
        PyThreadState *gil_ = PyEval_SaveThread();
        ctx = path != NULL ? redisConnectUnixWithTimeout(path, tv)
                           : redisConnectWithTimeout(host, port, tv);
        if (ctx != NULL && ctx->err == 0)
            (void)redisSetTimeout(ctx, tv);
        if (ctx != NULL && ctx->err == 0 && tls != NULL && path == NULL)
            rc = tslock_conn_start_tls(ctx, tls, host, why, sizeof(why));
        PyEval_RestoreThread(gil_);
    }
    tslock_tls_free(tls);
    if (rc != TSLOCK_OK) {
        tslock_conn_free(ctx);
        pytslock_raise(rc, why);
        return -1;
    }
    if (ctx == NULL || ctx->err != 0) {
        char msg[512];

        if (path != NULL)
            snprintf(msg, sizeof(msg), "cannot connect to %.200s: %.200s", path,
                     ctx ? ctx->errstr : "out of memory");
        else
            snprintf(msg, sizeof(msg), "cannot connect to %.200s:%d: %.200s",
                     host, port, ctx ? ctx->errstr : "out of memory");
        tslock_conn_free(ctx);
        pytslock_raise(TSLOCK_EIO, msg);
        return -1;
    }
    if (self->ctx != NULL)
        tslock_conn_free(self->ctx);
    self->ctx = ctx;
    return 0;
}

static void raw_dealloc(raw_conn *self)
{
    if (self->ctx != NULL)
        tslock_conn_free(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Appends one command (a sequence of str or bytes); -1 with an exception. */
static int append_command(raw_conn *self, PyObject *item)
{
    PyObject *cmd = PySequence_Fast(item, "expected a command as a sequence");
    Py_ssize_t j, argc;
    const char **argv;
    size_t *lens;
    int rc = REDIS_OK;

    if (cmd == NULL)
        return -1;
    argc = PySequence_Fast_GET_SIZE(cmd);
    argv = PyMem_Calloc((size_t)argc + 1, sizeof(char *));
    lens = PyMem_Calloc((size_t)argc + 1, sizeof(size_t));
    for (j = 0; argv != NULL && lens != NULL && j < argc; j++) {
        PyObject *a = PySequence_Fast_GET_ITEM(cmd, j);
        Py_ssize_t len = 0;

        if (PyUnicode_Check(a))
            argv[j] = PyUnicode_AsUTF8AndSize(a, &len);
        else if (PyBytes_Check(a)
                 && PyBytes_AsStringAndSize(a, (char **)&argv[j], &len) == 0)
            ;
        else {
            PyErr_SetString(PyExc_TypeError,
                            "command arguments: expected str or bytes");
            argv[j] = NULL;
        }
        if (argv[j] == NULL)
            break;
        lens[j] = (size_t)len;
    }
    if (argv != NULL && lens != NULL && j == argc) {
        /* Formatted here, written by libtslock: plain or TLS alike. */
        char *buf = NULL;
        int len = redisFormatCommandArgv(&buf, (int)argc, argv, lens);
        rc = len < 0 ? REDIS_ERR
                     : tslock_conn_write(self->ctx, buf, (size_t)len);
        free(buf);
        if (rc != TSLOCK_OK)
            rc = REDIS_ERR;
    } else if (!PyErr_Occurred())
        PyErr_NoMemory();
    PyMem_Free(argv);
    PyMem_Free(lens);
    Py_DECREF(cmd);
    if (PyErr_Occurred())
        return -1;
    if (rc != REDIS_OK) {
        pytslock_raise(TSLOCK_EIO, self->ctx->errstr);
        return -1;
    }
    return 0;
}

/* Reads n replies into a new list, the GIL let go while each one comes. */
static PyObject *read_replies(raw_conn *self, Py_ssize_t n)
{
    PyObject *out;
    Py_ssize_t i;
    int rc;

    if ((out = PyList_New(n)) == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        redisReply *r = NULL;
        PyObject *item;

        {
            PyThreadState *gil_ = PyEval_SaveThread();
            rc = tslock_conn_get_reply(self->ctx, (void **)&r);
            PyEval_RestoreThread(gil_);
        }
        if (rc != REDIS_OK || r == NULL) {
            pytslock_raise(TSLOCK_EIO, self->ctx->errstr);
            tslock_conn_free(self->ctx); /* the stream is out of step now */
            self->ctx = NULL;
            Py_DECREF(out);
            return NULL;
        }
        item = reply_to_python(r);
        freeReplyObject(r);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

/*
 * pipeline([args, ...]) -> [reply, ...]: send every command, then read
 * every reply.  A reply that is an error comes back as a LockError
 * instance in its place.  Arguments are str or bytes.
 */
static PyObject *raw_pipeline(raw_conn *self, PyObject *args)
{
    PyObject *cmds, *seq, *out = NULL;
    Py_ssize_t i, n;

    if (!PyArg_ParseTuple(args, "O", &cmds))
        return NULL;
    if (self->ctx == NULL)
        return pytslock_raise(TSLOCK_ESTATE, "not connected");
    if ((seq = PySequence_Fast(cmds, "expected a list of commands")) == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    for (i = 0; i < n; i++)
        if (append_command(self, PySequence_Fast_GET_ITEM(seq, i)) != 0)
            break;
    if (i == n)
        out = read_replies(self, n);
    Py_DECREF(seq);
    return out;
}

static PyMethodDef raw_methods[] = {{"pipeline", (PyCFunction)raw_pipeline,
                                     METH_VARARGS,
                                     "pipeline(commands) -> replies"},
                                    {NULL, NULL, 0, NULL}};

static PyTypeObject raw_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tslock._tslock.RawConnection",
    .tp_basicsize = sizeof(raw_conn),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A plain connection for read-only walks (survey).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)raw_init,
    .tp_dealloc = (destructor)raw_dealloc,
    .tp_methods = raw_methods,
};

/* -------------------------------------------------------------- module */

static PyMethodDef module_methods[] = {
    {"strerror", mod_strerror, METH_VARARGS,
     "strerror(code) -> str: the library's message for a TSLOCK_E* code."},
    {"errname", mod_errname, METH_VARARGS,
     "errname(code) -> str: the symbolic name, e.g. 'TSLOCK_EBUSY'."},
    {"library_version", mod_version, METH_NOARGS,
     "library_version() -> str: the version of libtslock loaded."},
    {"dialects", mod_dialects, METH_NOARGS,
     "dialects() -> [(preset, format, library)]: the library's presets"},
    {"dialect_match", mod_dialect_match, METH_VARARGS,
     "dialect_match(value) -> (names, expires_ms) or None"},
    {"value_name", mod_value_name, METH_VARARGS,
     "value_name(key: bytes | None, value: bytes) -> "
     "(kind, unit, expires_ms, dialects)"},
    {"classify", mod_classify, METH_VARARGS,
     "classify(value: bytes) -> (scheme, unit, expires_ms) or None"},
    {"parse_url", mod_parse_url, METH_VARARGS,
     "parse_url(url) -> dict: Client keyword arguments (libtslock's parser)."},
    {"scrub_url", mod_scrub_url, METH_VARARGS,
     "scrub_url(url) -> str: the URL with its passwords hidden."},
    {"_exception", mod_exception, METH_VARARGS,
     "_exception(code, detail=None) -> the exception for a TSLOCK_E* code."},
    {"_set_main_thread", mod_set_main_thread, METH_VARARGS,
     "_set_main_thread(ident): where Ctrl-C is delivered."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tslock._tslock",
    .m_doc = "The C part of the tslock package: libtslock's types and errors.",
    .m_size = -1,
    .m_methods = module_methods,
};

static int add_error(PyObject *m, const char *name, PyObject *base,
                     const char *doc, PyObject **out)
{
    char full[64];

    snprintf(full, sizeof(full), "tslock.%s", name);
    *out = PyErr_NewExceptionWithDoc(full, doc, base, NULL);
    if (*out == NULL)
        return -1;
    Py_INCREF(*out);
    return PyModule_AddObject(m, name, *out);
}

static int add_codes(PyObject *m)
{
#define ADD_CODE(name, num, msg)                                               \
    if (PyModule_AddIntConstant(m, #name, num) < 0)                            \
        return -1;
    TSLOCK_ERRNO_MAP(ADD_CODE)
#undef ADD_CODE
    return 0;
}

PyMODINIT_FUNC PyInit__tslock(void);

PyMODINIT_FUNC PyInit__tslock(void)
{
    PyObject *m;

    if (PyType_Ready(&pytslock_client_type) < 0
        || PyType_Ready(&pytslock_lock_type) < 0
        || PyType_Ready(&pytslock_redlock_type) < 0
        || PyType_Ready(&raw_type) < 0)
        return NULL;
    if ((m = PyModule_Create(&module_def)) == NULL)
        return NULL;
    pytslock_main_thread = PyThread_get_thread_ident();
    if (add_error(m, "LockError", NULL,
                  "Base of every tslock error; .code is the TSLOCK_E* code,\n"
                  ".errname its name, str() the library's message.",
                  &pytslock_LockError)
            < 0
        || add_error(m, "LockNotOwnedError", pytslock_LockError,
                     "The lock is not ours any more (redis-py's name).",
                     &pytslock_LockNotOwnedError)
               < 0
        || add_error(m, "LockLostError", pytslock_LockNotOwnedError,
                     "TSLOCK_ELOST: the lease ran out or another owner took\n"
                     "the lock; mutual exclusion may have been broken.",
                     &pytslock_LockLostError)
               < 0
        || add_error(m, "WrongTypeError", pytslock_LockError,
                     "TSLOCK_EWRONGTYPE: the key holds a non-string value.",
                     &pytslock_WrongTypeError)
               < 0
        || add_error(m, "UnsupportedError", pytslock_LockError,
                     "TSLOCK_EUNSUPPORTED: the server cannot do this.",
                     &pytslock_UnsupportedError)
               < 0
        || add_codes(m) < 0)
        goto fail;
    Py_INCREF(&pytslock_client_type);
    Py_INCREF(&pytslock_lock_type);
    Py_INCREF(&raw_type);
    Py_INCREF(&pytslock_redlock_type);
    if (PyModule_AddObject(m, "Client", (PyObject *)&pytslock_client_type) < 0
        || PyModule_AddObject(m, "Lock", (PyObject *)&pytslock_lock_type) < 0
        || PyModule_AddObject(m, "RawConnection", (PyObject *)&raw_type) < 0
        || PyModule_AddObject(m, "Redlock", (PyObject *)&pytslock_redlock_type)
               < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
