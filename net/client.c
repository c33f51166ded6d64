/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client.c - the client: connecting over TCP, a Unix socket or to the
 * master Sentinel names (or wrapping the caller's connection), AUTH and
 * SELECT, reconnecting, and learning once per connection what the
 * server can do.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "net.h"

int tslock_client_new(tslock_client **out)
{
    tslock_client *c;

    if (out == NULL)
        return TSLOCK_EINVAL;
    *out = NULL;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return TSLOCK_ENOMEM;
    c->connect_ms = 5000;
    c->command_ms = 5000;
    c->version[0] = c->version[1] = c->version[2] = -1;
    c->caps_allowed = ~0u;
    *out = c;
    return TSLOCK_OK;
}

static void drop_connection(tslock_client *c)
{
    if (c->cluster != NULL) {
        tslock__cluster_close(c); /* c->ctx is one of its nodes' */
        return;
    }
    if (c->ctx != NULL && c->transport != TRANSPORT_WRAPPED)
        tslock__ctx_free(c->ctx);
    if (c->transport != TRANSPORT_WRAPPED)
        c->ctx = NULL;
}

void tslock_client_free(tslock_client *c)
{
    if (c == NULL)
        return;
    drop_connection(c);
    tslock__cluster_free(c);
    tslock__sub_close(c);
    tslock__sentinel_free(c);
    free(c->host);
    free(c->user);
    if (c->password != NULL) {
        /* Do not leave the password in freed memory. */
        memset(c->password, 0, strlen(c->password));
        free(c->password);
    }
    (void)tslock__replace_string(&c->sentinel_user, NULL);
    (void)tslock__replace_string(&c->sentinel_password, NULL);
    tslock_tls_free(c->tls);
    free(c);
}

int tslock_client_set_timeouts(tslock_client *c, int connect_ms, int command_ms)
{
    if (c == NULL || connect_ms < 0 || command_ms < 0)
        return TSLOCK_EINVAL;
    c->connect_ms = connect_ms;
    c->command_ms = command_ms;
    if (c->cluster != NULL && !c->broken)
        return tslock__cluster_set_timeout(c);
    if (c->ctx != NULL && !c->broken
        && redisSetTimeout(c->ctx, tslock__ms_to_timeval(command_ms))
               != REDIS_OK)
        return tslock__io_failure(c, "set command timeout");
    return TSLOCK_OK;
}

int tslock_client_set_auth(tslock_client *c, const char *user,
                           const char *password)
{
    int rc;

    if (c == NULL || (user != NULL && password == NULL))
        return TSLOCK_EINVAL;
    rc = tslock__replace_string(&c->user, user);
    if (rc == TSLOCK_OK)
        rc = tslock__replace_string(&c->password, password);
    return rc;
}

int tslock_client_set_db(tslock_client *c, int db)
{
    if (c == NULL || db < 0)
        return TSLOCK_EINVAL;
    c->db = db;
    return TSLOCK_OK;
}

/*
 * An error reply while connecting.  No key is involved, so a line that
 * merely mentions WRONGTYPE is the server refusing, not a wrong type.
 */
static int setup_error(tslock_client *c, const char *what, const redisReply *r)
{
    int rc = tslock__reply_error(c, what, r);

    return rc == TSLOCK_EWRONGTYPE ? TSLOCK_ESERVER : rc;
}

/* A command sent while setting up a connection: no step hook. */
static int setup_command(tslock_client *c, const char *what, int argc,
                         const char **argv, redisReply **out)
{
    if (tslock__roundtrip(c->ctx, argc, argv, out) != REDIS_OK)
        return tslock__io_failure(c, what);
    if ((*out)->type == REDIS_REPLY_ERROR) {
        int rc = setup_error(c, what, *out);
        freeReplyObject(*out);
        *out = NULL;
        return rc;
    }
    return TSLOCK_OK;
}

static int authenticate(tslock_client *c)
{
    const char *argv[3] = {"AUTH", c->user, c->password};
    redisReply *r = NULL;
    int rc;

    if (c->password == NULL)
        return TSLOCK_OK;
    if (c->user == NULL)
        argv[1] = c->password;
    rc = setup_command(c, "AUTH", c->user != NULL ? 3 : 2, argv, &r);
    freeReplyObject(r);
    if (rc == TSLOCK_ESERVER)
        rc = TSLOCK_EAUTH; /* every refusal of AUTH is an auth failure */
    return rc;
}

static int select_db(tslock_client *c)
{
    char num[16];
    const char *argv[2] = {"SELECT", num};
    redisReply *r = NULL;
    int rc;

    if (c->db == 0)
        return TSLOCK_OK;
    snprintf(num, sizeof(num), "%d", c->db);
    rc = setup_command(c, "SELECT", 2, argv, &r);
    freeReplyObject(r);
    return rc;
}

/*
 * A server on a TLS port reads plain text as a broken handshake and
 * closes the connection (or resets it) without a word: say what that
 * usually means.
 */
static void hint_tls(tslock_client *c)
{
    static const char hint[] =
        " (the server may require TLS: use rediss:// or --tls)";
    size_t len = strlen(c->errstr);

    if ((strstr(c->errstr, "closed the connection") == NULL
         && strstr(c->errstr, "reset by peer") == NULL)
        || len + sizeof(hint) > sizeof(c->errstr))
        return;
    memcpy(c->errstr + len, hint, sizeof(hint));
}

/* Everything done after the socket is up: AUTH, SELECT, probe. */
static int finish_connect(tslock_client *c, int send_auth)
{
    int rc = TSLOCK_OK;

    c->broken = 0;
    tslock__clear_error(c);
    if (c->command_ms > 0
        && redisSetTimeout(c->ctx, tslock__ms_to_timeval(c->command_ms))
               != REDIS_OK)
        return tslock__io_failure(c, "set command timeout");
    if (send_auth)
        rc = authenticate(c);
    if (rc == TSLOCK_OK && send_auth)
        rc = select_db(c);
    if (rc == TSLOCK_OK)
        rc = tslock__probe(c);
    /* A cluster node: learn the slot map (a wrapped one stays as it is). */
    if (rc == TSLOCK_OK && c->transport == TRANSPORT_WRAPPED)
        c->caps &= ~TSLOCK_CAP_CLUSTER;
    if (rc == TSLOCK_OK && !(c->caps & TSLOCK_CAP_CLUSTER)
        && c->cluster != NULL) {
        redisContext *keep = c->ctx; /* not one of the old nodes' */
        c->ctx = NULL;
        tslock__cluster_free(c);
        c->ctx = keep;
    }
    if (rc == TSLOCK_OK && (c->caps & TSLOCK_CAP_CLUSTER))
        rc = tslock__cluster_setup(c);
    if (rc != TSLOCK_OK)
        c->broken = 1;
    if (rc == TSLOCK_EIO && c->ctx != NULL && !TSLOCK__IS_TLS(c->ctx)
        && c->transport != TRANSPORT_UNIX)
        hint_tls(c);
    return rc;
}

/*
 * Connect to the address asked for; on a cluster whose node there is
 * down, to the other nodes the slot map named, in turn.
 */
static redisContext *connect_first(tslock_client *c, const char **at,
                                   int *at_port)
{
    struct timeval tv = tslock__ms_to_timeval(c->connect_ms);
    redisContext *ctx = c->connect_ms > 0
                            ? redisConnectWithTimeout(c->host, c->port, tv)
                            : redisConnect(c->host, c->port);
    const char *host;
    int i, port;

    *at = c->host;
    *at_port = c->port;
    for (i = 0; c->cluster != NULL && ctx != NULL && ctx->err
                && tslock__cluster_seed(c, i, &host, &port);
         i++) {
        redisContext *next = c->connect_ms > 0
                                 ? redisConnectWithTimeout(host, port, tv)
                                 : redisConnect(host, port);
        if (next != NULL && !next->err) {
            tslock__ctx_free(ctx);
            *at = host;
            *at_port = port;
            return next;
        }
        tslock__ctx_free(next);
    }
    return ctx;
}

int tslock__open_socket(tslock_client *c)
{
    struct timeval tv = tslock__ms_to_timeval(c->connect_ms);
    const char *at = c->host;
    int rc, flags, at_port = c->port;

    drop_connection(c);
    if (c->transport == TRANSPORT_TCP)
        c->ctx = connect_first(c, &at, &at_port);
    else
        c->ctx = c->connect_ms > 0 ? redisConnectUnixWithTimeout(c->host, tv)
                                   : redisConnectUnix(c->host);
    if (c->ctx == NULL)
        return tslock__fail(c, TSLOCK_ENOMEM, "cannot allocate a connection");
    if (c->ctx->err) {
        char where[300];
        if (c->transport == TRANSPORT_TCP)
            snprintf(where, sizeof(where), "%s:%d", c->host, c->port);
        else
            snprintf(where, sizeof(where), "%s", c->host);
        c->broken = 1;
        rc = strstr(c->ctx->errstr, "timed out") != NULL ? TSLOCK_ETIMEDOUT
                                                         : TSLOCK_EIO;
        return tslock__fail(c, rc, "connect to %s: %s", where, c->ctx->errstr);
    }
    /* A program that forks and execs must not pass our connection on. */
    flags = fcntl(c->ctx->fd, F_GETFD);
    if (flags != -1)
        (void)fcntl(c->ctx->fd, F_SETFD, flags | FD_CLOEXEC);
    if (c->transport == TRANSPORT_TCP
        && (rc = tslock__tls_attach(c, c->ctx, at, at_port)) != TSLOCK_OK) {
        c->broken = 1;
        return rc;
    }
    return finish_connect(c, 1);
}

/* The subscriber connection of waiting acquires (wakeup.c), if any. */
void tslock__sub_close(tslock_client *c)
{
    if (c->sub != NULL)
        tslock__ctx_free(c->sub);
    c->sub = NULL;
    free(c->sub_channel);
    c->sub_channel = NULL;
    free(c->sub_own);
    c->sub_own = NULL;
    free(c->sub_classic);
    c->sub_classic = NULL;
    free(c->sub_host);
    c->sub_host = NULL;
    c->sub_port = 0;
    c->sub_sharded = 0;
}

/*
 * A second connection to the same server, with the same timeouts and
 * credentials: for subscriptions, which take a connection over.  No
 * SELECT (channels are not per database) and no probe.
 */
int tslock__connect_side(tslock_client *c, redisContext **out)
{
    return tslock__connect_node(c, c->host, c->port, out);
}

static int connect_to(tslock_client *c, enum tslock__transport t,
                      const char *where, int port)
{
    int rc;

    if (c == NULL || where == NULL || where[0] == '\0'
        || (t == TRANSPORT_TCP && (port <= 0 || port > 65535)))
        return TSLOCK_EINVAL;
    if (c->transport == TRANSPORT_WRAPPED)
        return tslock__fail(c, TSLOCK_ESTATE,
                            "client wraps a caller's connection");
    rc = tslock__replace_string(&c->host, where);
    if (rc != TSLOCK_OK)
        return rc;
    tslock__sentinel_free(c); /* a plain address from now on */
    c->transport = t;
    c->port = port;
    return tslock__open_socket(c);
}

int tslock_client_connect_tcp(tslock_client *c, const char *host, int port)
{
    return connect_to(c, TRANSPORT_TCP, host, port);
}

int tslock_client_connect_unix(tslock_client *c, const char *path)
{
    return connect_to(c, TRANSPORT_UNIX, path, 0);
}

int tslock_client_connect_sentinel(tslock_client *c, int n,
                                   const char *const *hosts, const int *ports,
                                   const char *master_name)
{
    int i;

    if (c == NULL || n < 1 || hosts == NULL || ports == NULL
        || master_name == NULL || master_name[0] == '\0')
        return TSLOCK_EINVAL;
    for (i = 0; i < n; i++)
        if (hosts[i] == NULL || hosts[i][0] == '\0' || ports[i] <= 0
            || ports[i] > 65535)
            return TSLOCK_EINVAL;
    if (c->transport == TRANSPORT_WRAPPED)
        return tslock__fail(c, TSLOCK_ESTATE,
                            "client wraps a caller's connection");
    tslock__sentinel_free(c);
    c->sentinel_hosts = calloc((size_t)n, sizeof(*c->sentinel_hosts));
    c->sentinel_ports = calloc((size_t)n, sizeof(*c->sentinel_ports));
    c->master_name = strdup(master_name);
    if (c->sentinel_hosts == NULL || c->sentinel_ports == NULL
        || c->master_name == NULL) {
        tslock__sentinel_free(c);
        return TSLOCK_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        c->sentinel_hosts[i] = strdup(hosts[i]);
        c->sentinel_ports[i] = ports[i];
        c->nsentinels = i + 1;
        if (c->sentinel_hosts[i] == NULL) {
            tslock__sentinel_free(c);
            return TSLOCK_ENOMEM;
        }
    }
    c->transport = TRANSPORT_TCP;
    return tslock__sentinel_connect(c, tslock__open_socket);
}

int tslock_client_wrap(tslock_client *c, struct redisContext *ctx)
{
    if (c == NULL || ctx == NULL)
        return TSLOCK_EINVAL;
    if (c->ctx != NULL && c->transport != TRANSPORT_WRAPPED)
        return tslock__fail(c, TSLOCK_ESTATE, "client is already connected");
    if (ctx->err)
        return tslock__fail(c, TSLOCK_EIO, "wrapped connection failed: %s",
                            ctx->errstr);
    c->ctx = ctx;
    c->transport = TRANSPORT_WRAPPED;
    tslock__peer_remember(&c->wrapped_peer, ctx);
    return finish_connect(c, 0);
}

int tslock_client_reconnect(tslock_client *c)
{
    if (c == NULL)
        return TSLOCK_EINVAL;
    switch (c->transport) {
    case TRANSPORT_NONE:
        return tslock__fail(c, TSLOCK_ESTATE, "client was never connected");
    case TRANSPORT_WRAPPED:
        if (tslock__reconnect_ctx(c->ctx, &c->wrapped_peer, c->connect_ms)
            != REDIS_OK) {
            c->broken = 1;
            return tslock__fail(c, TSLOCK_EIO, "reconnect: %s", c->ctx->errstr);
        }
        return finish_connect(c, 1);
    default:
        return c->nsentinels > 0
                   ? tslock__sentinel_connect(c, tslock__open_socket)
                   : tslock__open_socket(c);
    }
}

int tslock_client_address(const tslock_client *c, const char **host, int *port)
{
    if (c == NULL)
        return TSLOCK_EINVAL;
    if (c->host == NULL || c->transport == TRANSPORT_WRAPPED)
        return TSLOCK_ESTATE;
    if (host != NULL)
        *host = c->host;
    if (port != NULL)
        *port = c->transport == TRANSPORT_TCP ? c->port : 0;
    return TSLOCK_OK;
}

int tslock_client_is_broken(const tslock_client *c)
{
    return c != NULL && (c->broken || c->ctx == NULL) && c->transport != 0;
}

const char *tslock_client_errstr(const tslock_client *c)
{
    return c == NULL ? "" : c->errstr;
}

unsigned tslock_client_caps(const tslock_client *c)
{
    return c == NULL ? 0 : c->caps;
}

void tslock__wakeups_fall_back(tslock_client *c, unsigned bit, const char *fmt,
                               ...)
{
    va_list ap;

    if (c->wakeups == 0) {
        va_start(ap, fmt);
        vsnprintf(c->wakeups_why, sizeof(c->wakeups_why), fmt, ap);
        va_end(ap);
    }
    c->wakeups |= bit;
}

unsigned tslock_client_wakeups(const tslock_client *c, const char **why)
{
    if (why != NULL)
        *why = c == NULL || c->wakeups == 0 ? "" : c->wakeups_why;
    return c == NULL ? 0 : c->wakeups;
}

int tslock_client_set_functions(tslock_client *c, tslock_functions mode)
{
    if (c == NULL || mode < TSLOCK_FUNCTIONS_LOAD
        || mode > TSLOCK_FUNCTIONS_OFF)
        return TSLOCK_EINVAL;
    c->functions_mode = mode;
    return TSLOCK_OK;
}

int tslock_client_set_pubsub(tslock_client *c, int mode)
{
    if (c == NULL || mode < TSLOCK_PUBSUB_AUTO || mode > TSLOCK_PUBSUB_SHARDED)
        return TSLOCK_EINVAL;
    c->pubsub_mode = mode;
    return TSLOCK_OK;
}

int tslock__sharded(const tslock_client *c)
{
    if (c->pubsub_mode == TSLOCK_PUBSUB_CLASSIC || c->sharded_refused
        || c->version[0] < 7)
        return 0;
    return c->cluster != NULL || c->pubsub_mode == TSLOCK_PUBSUB_SHARDED;
}

int tslock_client_get_pubsub(const tslock_client *c)
{
    if (c == NULL)
        return TSLOCK_EINVAL;
    return tslock__sharded(c) ? TSLOCK_PUBSUB_SHARDED : TSLOCK_PUBSUB_CLASSIC;
}

int tslock_client_limit_caps(tslock_client *c, unsigned allowed)
{
    if (c == NULL)
        return TSLOCK_EINVAL;
    c->caps_allowed = allowed;
    c->caps &= allowed | TSLOCK_CAP_CLUSTER; /* a topology, not a choice */
    return TSLOCK_OK;
}

int tslock_client_server_version(const tslock_client *c, int *major, int *minor,
                                 int *patch)
{
    if (c == NULL)
        return TSLOCK_EINVAL;
    if (c->version[0] < 0)
        return TSLOCK_ESTATE;
    if (major != NULL)
        *major = c->version[0];
    if (minor != NULL)
        *minor = c->version[1];
    if (patch != NULL)
        *patch = c->version[2];
    return TSLOCK_OK;
}

int tslock_client_set_step_hook(tslock_client *c, tslock_step_hook hook,
                                void *userdata)
{
    if (c == NULL)
        return TSLOCK_EINVAL;
    c->hook = hook;
    c->hook_ud = userdata;
    return TSLOCK_OK;
}

int tslock_client_set_time_source(tslock_client *c, tslock_time_source source)
{
    if (c == NULL
        || (source != TSLOCK_TIME_LOCAL && source != TSLOCK_TIME_SERVER))
        return TSLOCK_EINVAL;
    c->time_source = source;
    return TSLOCK_OK;
}

int64_t tslock_client_clock_offset(const tslock_client *c)
{
    return c == NULL || !(c->caps & TSLOCK_CAP_TIME) ? 0 : c->clock_offset_ms;
}

int tslock_client_set_clock(tslock_client *c, tslock_clock_fn clock,
                            void *userdata)
{
    if (c == NULL)
        return TSLOCK_EINVAL;
    c->clock = clock;
    c->clock_ud = userdata;
    return TSLOCK_OK;
}

/* Read "redis_version:X.Y.Z" out of an INFO reply. */
static void parse_version(tslock_client *c, const redisReply *r)
{
    const char *p;

    c->version[0] = c->version[1] = c->version[2] = -1;
    if (r == NULL || r->type != REDIS_REPLY_STRING)
        return;
    p = strstr(r->str, "redis_version:");
    if (p == NULL)
        return;
    if (sscanf(p + 14, "%d.%d.%d", &c->version[0], &c->version[1],
               &c->version[2])
        < 2)
        c->version[0] = c->version[1] = c->version[2] = -1;
    else if (c->version[2] < 0)
        c->version[2] = 0;
}

/*
 * Read "run_id:<40 hex>" out of an INFO reply: a new run_id after a
 * reconnect means the server restarted, and lost what it did not persist.
 */
static void parse_run_id(tslock_client *c, const redisReply *r)
{
    const char *p;
    size_t n = 0;

    c->run_id[0] = '\0';
    if (r == NULL || r->type != REDIS_REPLY_STRING
        || (p = strstr(r->str, "run_id:")) == NULL)
        return;
    p += 7;
    while (n + 1 < sizeof(c->run_id)
           && ((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'f')))
        n++;
    memcpy(c->run_id, p, n);
    c->run_id[n] = '\0';
}

/*
 * TIME's reply in Unix ms: ["seconds", "microseconds"].  A reply outside
 * 1970 .. 2100 is no clock to trust (and its seconds * 1000 could
 * overflow), so the server counts as having no TIME.
 */
static int time_reply_ms(const redisReply *r, int64_t *ms)
{
    long long s, us;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_STRING
        || r->element[1]->type != REDIS_REPLY_STRING)
        return 0;
    s = strtoll(r->element[0]->str, NULL, 10);
    us = strtoll(r->element[1]->str, NULL, 10);
    if (s < 0 || s > 4102444800LL || us < 0 || us > 999999)
        return 0;
    *ms = (int64_t)s * 1000 + us / 1000;
    return 1;
}

/*
 * EVAL refused by an ACL: the server has scripts, this user may not send
 * them.  On Redis 7 (or a version INFO did not tell) the scripts run as
 * Functions, FCALL of tslock's library, unless the client was told not
 * to; else, where WATCH is allowed, the WATCH forms serve instead; where
 * it is not either, the scripts are still used, so the user hears
 * TSLOCK_ENOPERM naming EVAL rather than a weaker form.
 */
static void eval_refused(tslock_client *c)
{
    if (c->functions_mode != TSLOCK_FUNCTIONS_OFF
        && (c->version[0] < 0 || c->version[0] >= 7)) {
        c->caps |= TSLOCK_CAP_LUA | TSLOCK_CAP_TTL_KEEPS | TSLOCK_CAP_FUNCTIONS;
    } else if (!(c->caps & TSLOCK_CAP_WATCH)) {
        c->caps |= TSLOCK_CAP_LUA | TSLOCK_CAP_TTL_KEEPS;
    }
}

/*
 * Learn what the server can do, in one pipelined round trip.  A client
 * that found its server through Sentinel also sends ROLE, in the same
 * round trip, to check the node is the master.  The version
 * in INFO is recorded, but the capabilities come from what the server
 * does, because forks and proxies misreport versions.  No probe writes:
 * "SET k v NX XX" is a syntax error where SET takes options (2.6.12) and
 * a wrong-number-of-arguments error where it does not.
 */
int tslock__probe(tslock_client *c)
{
    static const char *probes[][5] = {{"INFO"},
                                      {"UNWATCH"},
                                      {"EVAL", "return 1", "0"},
                                      {"TIME"},
                                      {"SET", "tslock:probe", "x", "NX", "XX"},
                                      {"ROLE"}};
    static const int argcs[] = {1, 1, 3, 1, 5, 1};
    struct tslock__queued q[6];
    redisReply *r[6] = {NULL};
    int64_t sent, received, server;
    int n = c->nsentinels > 0 ? 6 : 5;
    int i, rc = TSLOCK_OK;

    c->caps = 0;
    c->use_functions = 0;
    c->clock_offset_ms = 0;
    sent = tslock__system_ms(TSLOCK_CLOCK_WALL);
    for (i = 0; i < n; i++) {
        q[i].step = TSLOCK_STEP_GET; /* no hook sees the probe */
        q[i].argc = argcs[i];
        q[i].argv = probes[i];
    }
    if (tslock__send(c->ctx, n, q) != REDIS_OK)
        rc = tslock__io_failure(c, "probe");
    for (i = 0; i < n && rc == TSLOCK_OK; i++) {
        void *reply = NULL;
        if (tslock__get_reply(c->ctx, &reply) != REDIS_OK)
            rc = tslock__io_failure(c, "probe");
        r[i] = reply;
    }
    if (rc != TSLOCK_OK)
        goto out;
    received = tslock__system_ms(TSLOCK_CLOCK_WALL);
    /*
     * A least-privilege ACL user may be denied INFO (it is in @dangerous):
     * the version then stays unknown and the capabilities come from the
     * other probes alone, as they do anyway.
     */
    if (r[0]->type == REDIS_REPLY_ERROR && !tslock__is_acl_denial(r[0]->str)) {
        rc = setup_error(c, "INFO", r[0]);
        goto out;
    }
    parse_version(c, r[0]);
    parse_run_id(c, r[0]);
    if (n == 6 && (rc = tslock__sentinel_check_role(c, r[5], r[0])) != 0)
        goto out;
    if (r[1]->type == REDIS_REPLY_STATUS)
        c->caps |= TSLOCK_CAP_WATCH | TSLOCK_CAP_TTL_KEEPS;
    /*
     * Lua came in 2.6, after the TTL rule of 2.1.3: a server with scripts
     * keeps TTLs through writes even when an ACL denies UNWATCH.
     */
    if (r[2]->type == REDIS_REPLY_INTEGER && r[2]->integer == 1)
        c->caps |= TSLOCK_CAP_LUA | TSLOCK_CAP_TTL_KEEPS;
    else if (r[2]->type == REDIS_REPLY_ERROR
             && tslock__is_acl_denial(r[2]->str))
        eval_refused(c);
    if (time_reply_ms(r[3], &server)) {
        /* The server read its clock about halfway through the trip. */
        c->caps |= TSLOCK_CAP_TIME;
        c->clock_offset_ms = server - (sent + received) / 2;
    }
    if (r[4]->type == REDIS_REPLY_ERROR
        && strstr(r[4]->str, "wrong number of arguments") == NULL
        && strncmp(r[4]->str, "ERR unknown command", 19) != 0)
        c->caps |= TSLOCK_CAP_SET_NX_PX;
    c->caps &= c->caps_allowed;
    c->use_functions = (c->caps & TSLOCK_CAP_FUNCTIONS) != 0;
    /* Default INFO has a Cluster section from 3.0 on: no extra trip. */
    if (r[0]->type == REDIS_REPLY_STRING
        && strstr(r[0]->str, "cluster_enabled:1") != NULL)
        c->caps |= TSLOCK_CAP_CLUSTER;
out:
    for (i = 0; i < n; i++)
        freeReplyObject(r[i]);
    return rc;
}

/*
 * The server's clock as this client knows it (its wall clock plus the
 * measured offset), for the scripts of read-write locks and semaphores,
 * which score holders by lease end on the server's clock.
 */
int64_t tslock__server_now(tslock_client *c)
{
    int64_t now = tslock__now(c, TSLOCK_CLOCK_WALL);

    /*
     * TSLOCK_TIME_SERVER has added the offset already; a test clock
     * plays the server's clock too (the offset was measured against the
     * real one).
     */
    if (c->clock == NULL && c->time_source != TSLOCK_TIME_SERVER)
        now += tslock_client_clock_offset(c);
    return now;
}

/*
 * The now a script is given: empty where the script can read the
 * server's TIME itself and write after it (Redis 3.2 and later, with
 * redis.replicate_commands()), so no client's offset enters; else the
 * server's time as this client knows it (2.6 - 3.0 refuse a write after
 * TIME in a script).  A test clock is always passed on.
 */
void tslock__script_now(tslock_client *c, char *buf, size_t size)
{
    int v32 = c->version[0] > 3 || (c->version[0] == 3 && c->version[1] >= 2);

    if (c->clock == NULL && v32)
        buf[0] = '\0';
    else
        snprintf(buf, size, "%lld", (long long)tslock__server_now(c));
}
