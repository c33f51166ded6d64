/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client.c - tslock._tslock.Client: where to connect, and a pool of
 * connections to it, so one Client serves many threads (each operation
 * has a connection to itself) and survives fork() (the child opens its
 * own).
 */
#include "pytslock.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Idle connections kept for reuse; more are closed when given back. */
#define POOL_MAX_IDLE 16

static char *copy_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

static void target_clear(pytslock_target *t)
{
    int i;

    free(t->host);
    free(t->unix_path);
    for (i = 0; i < t->n_sentinels; i++)
        free(t->sentinel_hosts[i]);
    free(t->sentinel_hosts);
    free(t->sentinel_ports);
    free(t->master_name);
    free(t->user);
    if (t->password != NULL) {
        /* Do not leave the password in freed memory. */
        memset(t->password, 0, strlen(t->password));
        free(t->password);
    }
    free(t->sentinel_user);
    free(t->sentinel_password);
    tslock_tls_free(t->tls);
    memset(t, 0, sizeof(*t));
}

/* Connect a new client to t; runs without the GIL. */
static int connect_target(const pytslock_target *t, tslock_client **out,
                          char *detail, size_t size, int keep_failed)
{
    tslock_client *c = NULL;
    int rc;

    *out = NULL;
    if ((rc = tslock_client_new(&c)) != TSLOCK_OK)
        return rc;
    rc = tslock_client_set_timeouts(c, t->connect_ms, t->command_ms);
    if (rc == TSLOCK_OK)
        rc = tslock_client_set_auth(c, t->user, t->password);
    if (rc == TSLOCK_OK)
        rc = tslock_client_set_db(c, t->db);
    if (rc == TSLOCK_OK && t->server_time)
        rc = tslock_client_set_time_source(c, TSLOCK_TIME_SERVER);
    if (rc == TSLOCK_OK)
        rc = tslock_client_set_pubsub(c, t->pubsub);
    if (rc == TSLOCK_OK && t->tls != NULL)
        rc = tslock_client_set_tls(c, t->tls);
    if (rc == TSLOCK_OK && t->n_sentinels > 0) {
        rc = tslock_client_set_sentinel_auth(c, t->sentinel_user,
                                             t->sentinel_password);
        if (rc == TSLOCK_OK)
            rc = tslock_client_connect_sentinel(
                c, t->n_sentinels, (const char *const *)t->sentinel_hosts,
                t->sentinel_ports, t->master_name);
    } else if (rc == TSLOCK_OK && t->unix_path != NULL) {
        rc = tslock_client_connect_unix(c, t->unix_path);
    } else if (rc == TSLOCK_OK) {
        rc = tslock_client_connect_tcp(c, t->host, t->port);
    }
    if (rc != TSLOCK_OK) {
        snprintf(detail, size, "%s", tslock_client_errstr(c));
        if (keep_failed && rc != TSLOCK_ENOMEM && rc != TSLOCK_EINVAL) {
            *out = c; /* broken; a later operation reconnects it */
            return rc;
        }
        tslock_client_free(c);
        return rc;
    }
    *out = c;
    return TSLOCK_OK;
}

/* ------------------------------------------------------------ metrics */

/* into += s, field by field (tslock_client_stats(3)). */
static void stats_add(tslock_stats *into, const tslock_stats *s)
{
    int i;

    into->acquired += s->acquired;
    into->busy += s->busy;
    into->timed_out += s->timed_out;
    into->canceled += s->canceled;
    into->errors += s->errors;
    for (i = 0; i < 4; i++)
        into->by_scheme[i] += s->by_scheme[i];
    into->released += s->released;
    into->lost += s->lost;
    into->renewals += s->renewals;
    into->renewal_failures += s->renewal_failures;
    into->takeovers += s->takeovers;
    into->legacy_takeovers += s->legacy_takeovers;
    into->wakes += s->wakes;
    into->retries += s->retries;
    for (i = 0; i < TSLOCK_STATS_BUCKETS; i++) {
        into->wait.bucket[i] += s->wait.bucket[i];
        into->hold.bucket[i] += s->hold.bucket[i];
    }
    into->wait.sum_ms += s->wait.sum_ms;
    into->wait.count += s->wait.count;
    into->hold.sum_ms += s->hold.sum_ms;
    into->hold.count += s->hold.count;
}

static const char *const event_names[] = {"", "acquire", "release", "lost",
                                          "takeover"};
static const char *const scheme_names[] = {"auto", "timestamp", "token",
                                           "bridge"};

/*
 * The observer of every connection of a Client: from the thread of the
 * call, or a watchdog's thread, with or without the GIL.  Nothing is done
 * without a Python observer, so the GIL is taken only when one is set.
 */
static void observe(const tslock_event *e, void *userdata)
{
    pytslock_client *self = userdata;
    PyGILState_STATE gil;
    PyObject *fn, *ev, *out;

    if (!__atomic_load_n(&self->has_observer, __ATOMIC_RELAXED))
        return;
    gil = PyGILState_Ensure();
    fn = self->observer;
    if (fn != NULL) {
        Py_INCREF(fn);
        ev = Py_BuildValue(
            "{s:s,s:s,s:i,s:s,s:N,s:s,s:O,s:O}", "type",
            event_names[e->type >= 1 && e->type <= 4 ? e->type : 0], "key",
            e->key, "code", e->result, "result", tslock_errname(e->result),
            "duration",
            e->duration_ms < 0 ? Py_NewRef(Py_None)
                               : PyFloat_FromDouble(e->duration_ms / 1000.0),
            "scheme", scheme_names[e->scheme & 3], "legacy",
            e->legacy ? Py_True : Py_False, "from_watchdog",
            e->from_watchdog ? Py_True : Py_False);
        out = ev != NULL ? PyObject_CallFunctionObjArgs(fn, ev, NULL) : NULL;
        if (out == NULL)
            PyErr_WriteUnraisable(fn); /* the lock call goes on */
        Py_XDECREF(out);
        Py_XDECREF(ev);
        Py_DECREF(fn);
    }
    PyGILState_Release(gil);
}

static void live_link(pytslock_client *self, pytslock_conn *conn)
{
    conn->owner = self;
    conn->live_prev = NULL;
    conn->live_next = self->live;
    if (self->live != NULL)
        self->live->live_prev = conn;
    self->live = conn;
    (void)tslock_client_set_observer(conn->client, observe, self);
}

/* Keep what a closing connection counted; GIL held. */
static void live_unlink(pytslock_conn *conn)
{
    pytslock_client *self = conn->owner;
    tslock_stats s;

    if (self == NULL)
        return;
    if (tslock_client_stats(conn->client, &s, sizeof(s)) == TSLOCK_OK)
        stats_add(&self->retired, &s);
    if (conn->live_prev != NULL)
        conn->live_prev->live_next = conn->live_next;
    else
        self->live = conn->live_next;
    if (conn->live_next != NULL)
        conn->live_next->live_prev = conn->live_prev;
    conn->owner = NULL;
}

void pytslock_conn_close(pytslock_conn *conn)
{
    if (conn == NULL)
        return;
    live_unlink(conn);
    tslock_client_free(conn->client);
    free(conn);
}

void pytslock_client_check_fork(pytslock_client *self)
{
    pid_t pid = getpid();

    if (pid == self->pid)
        return;
    /*
     * A child: the idle connections are the parent's sockets.  Closing
     * our copies of them sends nothing and leaves the parent's open.
     */
    while (self->idle != NULL) {
        pytslock_conn *c = self->idle;

        self->idle = c->next;
        pytslock_conn_close(c);
    }
    self->n_idle = 0;
    self->pid = pid;
}

static pytslock_conn *take(pytslock_client *self, int keep_failed)
{
    pytslock_conn *conn;
    char detail[512] = "";
    int rc;

    pytslock_client_check_fork(self);
    if (self->idle != NULL) {
        conn = self->idle;
        self->idle = conn->next;
        self->n_idle--;
        conn->next = NULL;
        return conn;
    }
    if ((conn = calloc(1, sizeof(*conn))) == NULL)
        return (pytslock_conn *)PyErr_NoMemory();
    {
        PyThreadState *gil_ = PyEval_SaveThread();
        rc = connect_target(&self->target, &conn->client, detail,
                            sizeof(detail), keep_failed);
        PyEval_RestoreThread(gil_);
    }
    if (rc != TSLOCK_OK && conn->client == NULL) {
        free(conn);
        return (pytslock_conn *)pytslock_raise(rc, detail);
    }
    self->opened++;
    live_link(self, conn);
    return conn;
}

pytslock_conn *pytslock_pool_take(pytslock_client *self)
{
    return take(self, 0);
}

pytslock_conn *pytslock_pool_take_or_broken(pytslock_client *self)
{
    return take(self, 1);
}

void pytslock_pool_give(pytslock_client *self, pytslock_conn *conn)
{
    if (conn == NULL)
        return;
    /*
     * A connection taken before a fork() and given back in the child is
     * the parent's socket too: close our copy instead.
     */
    if (self->pid != getpid() || tslock_client_is_broken(conn->client)
        || self->n_idle >= POOL_MAX_IDLE) {
        pytslock_conn_close(conn);
        return;
    }
    conn->next = self->idle;
    self->idle = conn;
    self->n_idle++;
}

/* ------------------------------------------------------------ the type */

static int parse_sentinels(pytslock_target *t, PyObject *list)
{
    Py_ssize_t i, n;
    PyObject *seq = PySequence_Fast(list, "sentinels: expected a list of "
                                          "(host, port) pairs");

    if (seq == NULL)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > 64) {
        PyErr_Format(PyExc_ValueError,
                     "sentinels: expected 1 to 64 (host, port) pairs, "
                     "got %zd",
                     n);
        goto fail;
    }
    t->sentinel_hosts = calloc((size_t)n, sizeof(char *));
    t->sentinel_ports = calloc((size_t)n, sizeof(int));
    if (t->sentinel_hosts == NULL || t->sentinel_ports == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (i = 0; i < n; i++) {
        const char *host;
        int port;

        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "si", &host,
                              &port))
            goto fail;
        if ((t->sentinel_hosts[i] = strdup(host)) == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        t->sentinel_ports[i] = port;
        t->n_sentinels = (int)i + 1;
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    return -1;
}

/* The names of the TSLOCK_PUBSUB_* modes, by value. */
static const char *const pubsub_names[] = {"auto", "classic", "sharded"};

static int pubsub_mode(const char *name)
{
    int i;

    for (i = 0; i < 3; i++)
        if (strcmp(name, pubsub_names[i]) == 0)
            return i;
    return -1;
}

static int client_init(pytslock_client *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"host",
                            "port",
                            "unix_socket_path",
                            "sentinels",
                            "service_name",
                            "db",
                            "username",
                            "password",
                            "sentinel_username",
                            "sentinel_password",
                            "connect_timeout_ms",
                            "command_timeout_ms",
                            "server_time",
                            "tls",
                            "pubsub",
                            NULL};
    const char *host = "127.0.0.1", *path = NULL, *master = NULL;
    const char *user = NULL, *password = NULL, *s_user = NULL, *s_pass = NULL;
    const char *pubsub = "auto";
    PyObject *sentinels = Py_None, *tls = Py_None;
    int port = 6379, db = 0, connect_ms = 5000, command_ms = 5000;
    int server_time = 0, mode;
    pytslock_target t;

    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "|sizOzizzzziipOs", names, &host, &port, &path,
            &sentinels, &master, &db, &user, &password, &s_user, &s_pass,
            &connect_ms, &command_ms, &server_time, &tls, &pubsub))
        return -1;
    if ((mode = pubsub_mode(pubsub)) < 0) {
        PyErr_Format(PyExc_ValueError,
                     "pubsub: expected \"auto\", \"classic\" or \"sharded\", "
                     "got \"%s\"",
                     pubsub);
        return -1;
    }
    memset(&t, 0, sizeof(t));
    t.pubsub = mode;
    if (pytslock_tls_from_dict(tls, &t.tls) != 0)
        return -1;
    if (port < 1 || port > 65535 || db < 0 || connect_ms < 0
        || command_ms < 0) {
        PyErr_Format(PyExc_ValueError,
                     "expected port 1..65535, db >= 0 and timeouts >= 0; "
                     "got port %d, db %d, timeouts %d and %d ms",
                     port, db, connect_ms, command_ms);
        goto fail;
    }
    if (sentinels != Py_None) {
        if (master == NULL || *master == '\0') {
            PyErr_SetString(PyExc_ValueError,
                            "sentinels given without a service_name "
                            "(the master's name)");
            goto fail;
        }
        if (parse_sentinels(&t, sentinels) != 0)
            goto fail;
    }
    t.host = copy_or_null(host);
    t.unix_path = copy_or_null(path);
    t.master_name = copy_or_null(master);
    t.user = copy_or_null(user);
    t.password = copy_or_null(password);
    t.sentinel_user = copy_or_null(s_user);
    t.sentinel_password = copy_or_null(s_pass);
    t.port = port;
    t.db = db;
    t.connect_ms = connect_ms;
    t.command_ms = command_ms;
    t.server_time = server_time;
    target_clear(&self->target);
    self->target = t;
    self->pid = getpid();
    return 0;
fail:
    target_clear(&t);
    return -1;
}

static void client_dealloc(pytslock_client *self)
{
    if (self->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    pytslock_client_check_fork(self);
    while (self->idle != NULL) {
        pytslock_conn *c = self->idle;

        self->idle = c->next;
        pytslock_conn_close(c);
    }
    /* Connections still out are their holders' now; they count no more. */
    while (self->live != NULL) {
        pytslock_conn *c = self->live;

        self->live = c->live_next;
        (void)tslock_client_set_observer(c->client, NULL, NULL);
        c->owner = NULL;
    }
    Py_CLEAR(self->observer);
    target_clear(&self->target);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The number of connections open and idle in the pool (for tests). */
static PyObject *client_pool_stats(pytslock_client *self,
                                   PyObject *Py_UNUSED(ignored))
{
    pytslock_client_check_fork(self);
    return Py_BuildValue("{s:i,s:k}", "idle", self->n_idle, "opened",
                         self->opened);
}

/* Run fn on a pooled connection: what the server is and can do. */
static PyObject *client_server_info(pytslock_client *self,
                                    PyObject *Py_UNUSED(ignored))
{
    pytslock_conn *conn = pytslock_pool_take(self);
    int major = 0, minor = 0, patch = 0;
    const char *host = NULL;
    int port = 0;
    PyObject *out;

    if (conn == NULL)
        return NULL;
    (void)tslock_client_server_version(conn->client, &major, &minor, &patch);
    (void)tslock_client_address(conn->client, &host, &port);
    out =
        Py_BuildValue("{s:(iii),s:I,s:s,s:i,s:L}", "version", major, minor,
                      patch, "caps", tslock_client_caps(conn->client), "host",
                      host != NULL ? host : "", "port", port, "clock_offset_ms",
                      (long long)tslock_client_clock_offset(conn->client));
    pytslock_pool_give(self, conn);
    return out;
}

/*
 * The pub/sub waiters use now (tslock_client_get_pubsub): "sharded" or
 * "classic", asked of a pooled connection (one is opened if none is
 * idle), as the mode, the server and any refusal decide.
 */
static PyObject *client_get_pubsub(pytslock_client *self, void *closure)
{
    pytslock_conn *conn;
    int used;

    (void)closure;
    if ((conn = pytslock_pool_take(self)) == NULL)
        return NULL;
    used = tslock_client_get_pubsub(conn->client);
    pytslock_pool_give(self, conn);
    return PyUnicode_FromString(
        pubsub_names[used == TSLOCK_PUBSUB_SHARDED ? TSLOCK_PUBSUB_SHARDED
                                                   : TSLOCK_PUBSUB_CLASSIC]);
}

/* The mode asked for at construction: "auto", "classic" or "sharded". */
static PyObject *client_get_pubsub_mode(pytslock_client *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(pubsub_names[self->target.pubsub]);
}

static PyGetSetDef client_getset[] = {
    {"pubsub", (getter)client_get_pubsub, NULL,
     "How waiters are woken now (tslock_client_get_pubsub(3)): \"sharded\"\n"
     "(SSUBSCRIBE, SPUBLISH) or \"classic\" (SUBSCRIBE, PUBLISH), as the\n"
     "pubsub mode, the server and any refusal decide.  Opens a pooled\n"
     "connection when none is idle.",
     NULL},
    {"pubsub_mode", (getter)client_get_pubsub_mode, NULL,
     "The pubsub mode given: \"auto\", \"classic\" or \"sharded\".", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyObject *histogram_dict(const tslock_histogram *h)
{
    static const int64_t le_ms[] = TSLOCK_STATS_BUCKETS_MS;
    PyObject *buckets = PyList_New(TSLOCK_STATS_BUCKETS);
    int i;

    if (buckets == NULL)
        return NULL;
    for (i = 0; i < TSLOCK_STATS_BUCKETS; i++) {
        double le =
            i < TSLOCK_STATS_BUCKETS - 1 ? le_ms[i] / 1000.0 : Py_HUGE_VAL;
        PyObject *pair =
            Py_BuildValue("(dK)", le, (unsigned long long)h->bucket[i]);
        if (pair == NULL) {
            Py_DECREF(buckets);
            return NULL;
        }
        PyList_SET_ITEM(buckets, i, pair);
    }
    return Py_BuildValue("{s:N,s:d,s:K}", "buckets", buckets, "sum",
                         h->sum_ms / 1000.0, "count",
                         (unsigned long long)h->count);
}

/* What every connection of this Client counted, summed, as a dict. */
static PyObject *client_stats(pytslock_client *self,
                              PyObject *Py_UNUSED(ignored))
{
    tslock_stats all = self->retired, s;
    pytslock_conn *c;
    PyObject *wait, *hold;

    pytslock_client_check_fork(self);
    for (c = self->live; c != NULL; c = c->live_next)
        if (tslock_client_stats(c->client, &s, sizeof(s)) == TSLOCK_OK)
            stats_add(&all, &s);
    if ((wait = histogram_dict(&all.wait)) == NULL)
        return NULL;
    if ((hold = histogram_dict(&all.hold)) == NULL) {
        Py_DECREF(wait);
        return NULL;
    }
#define K(field) #field, (unsigned long long)all.field
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:{s:K,s:K,s:K},s:K,s:K,s:K,s:K,s:K,s:K,s:K,"
        "s:K,s:N,s:N}",
        K(acquired), K(busy), K(timed_out), K(canceled), K(errors), "by_scheme",
        "timestamp", (unsigned long long)all.by_scheme[1], "token",
        (unsigned long long)all.by_scheme[2], "bridge",
        (unsigned long long)all.by_scheme[3], K(released), K(lost), K(renewals),
        K(renewal_failures), K(takeovers), K(legacy_takeovers), K(wakes),
        K(retries), "wait", wait, "hold", hold);
#undef K
}

static PyObject *client_set_observer(pytslock_client *self, PyObject *fn)
{
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError,
                     "set_observer: expected a callable or None, got %s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    Py_XSETREF(self->observer, fn == Py_None ? NULL : Py_NewRef(fn));
    __atomic_store_n(&self->has_observer, self->observer != NULL,
                     __ATOMIC_RELAXED);
    Py_RETURN_NONE;
}

static PyMethodDef client_methods[] = {
    {"stats", (PyCFunction)client_stats, METH_NOARGS,
     "stats() -> dict: what this Client's connections counted, summed\n"
     "(tslock_client_stats(3)); times in seconds."},
    {"set_observer", (PyCFunction)client_set_observer, METH_O,
     "set_observer(fn): call fn(event) on every acquire, release, loss\n"
     "and takeover; None to stop."},
    {"_pool_stats", (PyCFunction)client_pool_stats, METH_NOARGS,
     "_pool_stats() -> dict: idle and opened connection counts."},
    {"server_info", (PyCFunction)client_server_info, METH_NOARGS,
     "server_info() -> dict: the server's version, the TSLOCK_CAP_* bits\n"
     "it was found to have, the address connected to (for Sentinel, the\n"
     "master it named) and the clock offset measured at connect."},
    {NULL, NULL, 0, NULL}};

PyTypeObject pytslock_client_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tslock._tslock.Client",
    .tp_basicsize = sizeof(pytslock_client),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A connection pool to one Redis server (or a Sentinel-managed\n"
              "master).  See tslock.Client.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)client_init,
    .tp_dealloc = (destructor)client_dealloc,
    .tp_weaklistoffset = offsetof(pytslock_client, weakrefs),
    .tp_methods = client_methods,
    .tp_getset = client_getset,
};
