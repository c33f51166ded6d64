/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exporter.c - tslock exporter: /metrics for Prometheus (text format
 * 0.0.4, or OpenMetrics 1.0 when the Accept header asks) over one or
 * more servers.  It owns the single-threaded loop (HTTP clients and one
 * MONITOR stream per server), the metric families, the per-prefix
 * counts with their cap, and feeding the legacy-writer record
 * (migration.c).  doc/observability.md describes every family.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "hiredis_compat.h"

#include "cli.h"

#define MAX_CLIENTS          16
#define MONITOR_WINDOW       10000 /* ms: --monitor-duty is a share of this */
#define RETRY_MS             1000 /* a lost MONITOR stream is retried so often */
#define FLUSH_MS             1000 /* the record is written so often */
#define MONITOR_HANDSHAKE_MS 1000 /* connect, AUTH and MONITOR's +OK */
#define OVERFLOW             "(other)"

struct prefix_count {
    char *name;
    long writes;
};

struct server {
    struct cli_options o; /* the options, with this server's URL */
    char label[300];
    redisContext *ctx; /* scrapes and the record; NULL until connected */
    int has_pttl;
    int told_cluster; /* the cluster warning was printed */
    char cursor[32];
    struct cli_survey_tally pass, last; /* in progress; last complete */
    int have_last;
    int64_t last_pass_ms;
    int has_time;
    int64_t clock_offset_ms;
    int up;
    double scrape_seconds;
    long scrape_errors;
    redisContext *mon; /* the MONITOR stream, while on */
    int64_t mon_off_at, mon_next_at;
    int64_t mon_retry_ms; /* the wait before the next try, after a failure */
    long mon_lines, mon_sessions;
    struct prefix_count *prefixes;
    int n_prefixes;
    long overflow;
    struct cli_legacy_record rec;
};

struct client {
    int fd;
    char buf[CLI_HTTP_MAX_REQUEST];
    size_t len;
    int64_t since_ms;
};

struct exporter {
    const struct cli_options *o;
    struct server *servers;
    int n_servers;
    int listen_fd;
    struct client clients[MAX_CLIENTS];
    int n_clients;
    long scrapes;
};

/* ---- the response body: a growable buffer */

struct out {
    char *p;
    size_t len, cap;
    int failed;
};

static void put(struct out *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(struct out *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = b->failed ? 0 : vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (b->failed || n < 0)
            return;
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        {
            size_t cap = (b->cap + (size_t)n + 1) * 2;
            char *p = realloc(b->p, cap);
            if (p == NULL) {
                b->failed = 1;
                return;
            }
            b->p = p;
            b->cap = cap;
        }
    }
}

/*
 * A label value: \\, \" and \n as the format says; other bytes outside
 * printable ASCII as the text \xHH, so a key of any bytes stays valid
 * UTF-8.
 */
static void put_label(struct out *b, const char *p, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c == '\\' || c == '"')
            put(b, "\\%c", c);
        else if (c == '\n')
            put(b, "\\n");
        else if (c < 0x20 || c >= 0x7f)
            put(b, "\\\\x%02x", c);
        else
            put(b, "%c", c);
    }
}

/* # HELP and # TYPE; a counter's family drops _total in OpenMetrics. */
static void family(struct out *b, int om, const char *name, const char *type,
                   const char *help)
{
    size_t n = strlen(name);

    if (om && strcmp(type, "counter") == 0 && n > 6
        && strcmp(name + n - 6, "_total") == 0)
        n -= 6;
    put(b, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)n, name, help, (int)n, name,
        type);
}

/* name{server="..." */
static void sample_start(struct out *b, const char *name,
                         const struct server *s)
{
    put(b, "%s{server=\"", name);
    put_label(b, s->label, strlen(s->label));
    put(b, "\"");
}

static void sample_end(struct out *b, double v)
{
    put(b, "} %.15g\n", v);
}

/* A whole family of one sample per server. */
static void per_server(struct out *b, const struct exporter *e, int om,
                       const char *name, const char *type, const char *help,
                       double (*value)(const struct server *), int only_up)
{
    int i;

    family(b, om, name, type, help);
    for (i = 0; i < e->n_servers; i++) {
        const struct server *s = &e->servers[i];

        if (only_up && value(s) != value(s)) /* NaN: no value to give */
            continue;
        sample_start(b, name, s);
        sample_end(b, value(s));
    }
}

static double v_up(const struct server *s)
{
    return s->up;
}
static double v_scrape(const struct server *s)
{
    return s->scrape_seconds;
}
static double v_errors(const struct server *s)
{
    return (double)s->scrape_errors;
}
static double v_waiters(const struct server *s)
{
    return s->have_last ? (double)s->last.waiters : 0.0 / 0.0;
}
static double v_keys(const struct server *s)
{
    return s->have_last ? (double)s->last.keys : 0.0 / 0.0;
}
static double v_pass(const struct server *s)
{
    return s->have_last ? (double)s->last_pass_ms / 1000.0 : 0.0 / 0.0;
}
static double v_offset(const struct server *s)
{
    return s->has_time ? (double)s->clock_offset_ms / 1000.0 : 0.0 / 0.0;
}
static double v_mon_up(const struct server *s)
{
    return s->mon != NULL;
}
static double v_mon_lines(const struct server *s)
{
    return (double)s->mon_lines;
}
static double v_duty(const struct server *s)
{
    return s->o.monitor_duty / 100.0;
}
static double v_rec_dropped(const struct server *s)
{
    return (double)s->rec.dropped;
}

static void render_locks(struct out *b, const struct exporter *e, int om)
{
    int i, d, st;

    family(b, om, "tslock_locks", "gauge",
           "Lock keys by dialect and state, from the last complete SCAN "
           "pass.");
    for (i = 0; i < e->n_servers; i++) {
        const struct server *s = &e->servers[i];

        if (!s->have_last)
            continue;
        for (d = 0; d < CLI_SURVEY_DIALECTS; d++)
            for (st = 0; st < CLI_SURVEY_STATES; st++) {
                sample_start(b, "tslock_locks", s);
                put(b, ",dialect=\"%s\",state=\"%s\"",
                    cli_survey_dialect_name(d), cli_survey_state_name(st));
                sample_end(b, (double)s->last.locks[d][st]);
            }
    }
}

/*
 * The stamps by the dialect names survey gives them (the presets whose
 * clients could have written the value, joined by '/', or
 * unknown-stamp), one sample per name and state seen in the last pass.
 */
static void render_dialects(struct out *b, const struct exporter *e, int om)
{
    int i, n, st;

    family(b, om, "tslock_dialect_locks", "gauge",
           "Stamp locks by the dialect their value matches (the presets "
           "whose clients could have written it, or unknown-stamp) and "
           "state, from the last complete SCAN pass.");
    for (i = 0; i < e->n_servers; i++) {
        const struct server *s = &e->servers[i];

        if (!s->have_last)
            continue;
        for (n = 0; n <= CLI_SURVEY_NAMED; n++) {
            const struct cli_dialect_count *c = &s->last.named[n];

            if (n >= s->last.n_named && n != CLI_SURVEY_NAMED)
                continue;
            if (c->name[0] == '\0')
                continue; /* "(other)" unused */
            for (st = 0; st < CLI_SURVEY_STATES; st++) {
                sample_start(b, "tslock_dialect_locks", s);
                put(b, ",dialect=\"");
                put_label(b, c->name, strlen(c->name));
                put(b, "\",state=\"%s\"", cli_survey_state_name(st));
                sample_end(b, (double)c->states[st]);
            }
        }
    }
}

static void render_legacy(struct out *b, const struct exporter *e, int om)
{
    int i, k;

    family(b, om, "tslock_legacy_writes_total", "counter",
           "Stamps written by classic clients (SETNX, GETSET or SET outside "
           "a script) seen on MONITOR, by key prefix.");
    for (i = 0; i < e->n_servers; i++) {
        const struct server *s = &e->servers[i];

        for (k = 0; k < s->n_prefixes; k++) {
            sample_start(b, "tslock_legacy_writes_total", s);
            put(b, ",prefix=\"");
            put_label(b, s->prefixes[k].name, strlen(s->prefixes[k].name));
            put(b, "\"");
            sample_end(b, (double)s->prefixes[k].writes);
        }
        if (s->overflow > 0) {
            sample_start(b, "tslock_legacy_writes_total", s);
            put(b, ",prefix=\"" OVERFLOW "\"");
            sample_end(b, (double)s->overflow);
        }
    }
}

static void render(struct out *b, const struct exporter *e, int om)
{
    per_server(b, e, om, "tslock_up", "gauge",
               "1 when the last scrape read the server, else 0.", v_up, 0);
    per_server(b, e, om, "tslock_scrape_duration_seconds", "gauge",
               "How long the last scrape of the server took.", v_scrape, 0);
    per_server(b, e, om, "tslock_scrape_errors_total", "counter",
               "Scrapes of the server that failed.", v_errors, 0);
    render_locks(b, e, om);
    render_dialects(b, e, om);
    per_server(b, e, om, "tslock_waiters", "gauge",
               "Members of fair lines ({KEY}:queue), from the last complete "
               "SCAN pass.",
               v_waiters, 1);
    per_server(b, e, om, "tslock_survey_keys", "gauge",
               "Keys read by the last complete SCAN pass.", v_keys, 1);
    per_server(b, e, om, "tslock_survey_last_pass_timestamp_seconds", "gauge",
               "When the last SCAN pass completed (Unix time).", v_pass, 1);
    per_server(b, e, om, "tslock_clock_offset_seconds", "gauge",
               "The server's clock (TIME) minus the exporter host's.", v_offset,
               1);
    render_legacy(b, e, om);
    per_server(b, e, om, "tslock_legacy_monitor_up", "gauge",
               "1 while the MONITOR stream is attached.", v_mon_up, 0);
    per_server(b, e, om, "tslock_legacy_monitor_duty_ratio", "gauge",
               "The share of the time MONITOR is on (--monitor-duty).", v_duty,
               0);
    per_server(b, e, om, "tslock_legacy_monitor_lines_total", "counter",
               "MONITOR lines read: the stream's volume.", v_mon_lines, 0);
    per_server(b, e, om, "tslock_legacy_record_dropped_total", "counter",
               "Legacy writes not recorded: more (address, key) pairs than "
               "one flush holds.",
               v_rec_dropped, 0);
    if (om)
        put(b, "# EOF\n");
}

/* ---- scraping one server */

static void disconnect(struct server *s)
{
    if (s->ctx != NULL)
        tslock_conn_free(s->ctx);
    s->ctx = NULL;
}

static int ensure_connected(struct server *s)
{
    int major = 0, minor = 0, cluster = 0, status;

    if (s->ctx != NULL)
        return 0;
    status = cli_raw_connect(&s->o, 1, &s->ctx);
    if (status == 0)
        status = cli_raw_version(s->ctx, &major, &minor, &cluster);
    if (status != 0) {
        disconnect(s);
        return status;
    }
    s->has_pttl = major > 2 || (major == 2 && minor >= 6);
    /* One node's keys and one node's MONITOR: each master needs its -u. */
    if (cluster && !s->told_cluster)
        cli_error("%s is a Redis Cluster node: the exporter reads this "
                  "node's keys and commands only; give every master its "
                  "own -u",
                  s->label);
    s->told_cluster |= cluster;
    return 0;
}

static void scrape_server(struct server *s)
{
    int64_t start = cli_mono_ms();
    int status = ensure_connected(s);

    if (status == 0)
        s->has_time = cli_raw_clock_offset(s->ctx, &s->clock_offset_ms);
    if (status == 0)
        status = cli_survey_step(s->ctx, &s->o, s->has_pttl, s->cursor,
                                 (long)s->o.scan_budget, &s->pass);
    if (status == 0 && strcmp(s->cursor, "0") == 0) {
        s->last = s->pass;
        s->have_last = 1;
        s->last_pass_ms = cli_wall_ms();
        memset(&s->pass, 0, sizeof(s->pass));
    }
    if (status != 0) {
        /* The next pass starts afresh on a new connection. */
        disconnect(s);
        strcpy(s->cursor, "0");
        memset(&s->pass, 0, sizeof(s->pass));
        s->scrape_errors++;
    }
    s->up = status == 0;
    s->scrape_seconds = (double)(cli_mono_ms() - start) / 1000.0;
}

/* ---- the legacy writes: MONITOR, on for --monitor-duty of the time */

/* KEY's prefix: its first --prefix-depth parts, without the separator. */
static size_t prefix_len(const struct cli_options *o, const char *key,
                         size_t len)
{
    size_t seplen = strlen(o->prefix_sep), i, cut = 0;
    int parts = 0;

    if (o->prefix_depth == 0)
        return 0;
    for (i = 0; i + seplen <= len; i++)
        if (memcmp(key + i, o->prefix_sep, seplen) == 0) {
            cut = i;
            if (++parts == o->prefix_depth)
                return cut;
            i += seplen - 1;
        }
    /* Fewer parts: all but the last (a key without one: prefix ""). */
    return cut;
}

static void count_prefix(struct server *s, const char *key, size_t len)
{
    size_t n = prefix_len(&s->o, key, len);
    struct prefix_count *grown;
    int i;

    for (i = 0; i < s->n_prefixes; i++)
        if (strlen(s->prefixes[i].name) == n
            && memcmp(s->prefixes[i].name, key, n) == 0) {
            s->prefixes[i].writes++;
            return;
        }
    /* A key with a NUL in its prefix, or one prefix too many. */
    if (memchr(key, '\0', n) != NULL || s->n_prefixes >= s->o.max_series
        || (grown = realloc(s->prefixes,
                            (size_t)(s->n_prefixes + 1) * sizeof(*grown)))
               == NULL) {
        s->overflow++;
        return;
    }
    s->prefixes = grown;
    if ((grown[s->n_prefixes].name = strndup(key, n)) == NULL) {
        s->overflow++;
        return;
    }
    grown[s->n_prefixes++].writes = 1;
}

static void monitor_off(struct server *s)
{
    if (s->mon != NULL)
        tslock_conn_free(s->mon);
    s->mon = NULL;
}

static void monitor_on(struct server *s)
{
    struct cli_options quick = s->o;
    redisReply *r;

    /*
     * The handshake blocks the loop: a peer that accepts but never
     * answers holds it up for this long at most, not for --timeout.
     */
    if (quick.timeout_ms > MONITOR_HANDSHAKE_MS)
        quick.timeout_ms = MONITOR_HANDSHAKE_MS;
    if (cli_raw_connect_to(&quick, NULL, 0, 0, &s->mon) != 0)
        return;
    r = cli_raw_reply(s->mon, "MONITOR", cli_raw_command(s->mon, "MONITOR"));
    if (r == NULL) {
        monitor_off(s);
        return;
    }
    freeReplyObject(r);
    s->mon_sessions++;
}

/*
 * Start or stop the stream as the duty cycle says.  A stream that cannot
 * be opened is tried again after 1 s, then 2, 4 ... up to 60 s, so a
 * server that is down does not hold up the loop at every turn.
 */
static void monitor_schedule(struct server *s, int64_t now)
{
    int64_t on_ms = (int64_t)s->o.monitor_duty * MONITOR_WINDOW / 100;

    if (s->o.monitor_duty == 0)
        return;
    if (s->mon != NULL && s->o.monitor_duty < 100 && now >= s->mon_off_at)
        monitor_off(s);
    if (s->mon != NULL || now < s->mon_next_at)
        return;
    monitor_on(s);
    if (s->mon == NULL) {
        s->mon_retry_ms = s->mon_retry_ms == 0       ? RETRY_MS
                          : s->mon_retry_ms >= 30000 ? 60000
                                                     : s->mon_retry_ms * 2;
        s->mon_next_at = now + s->mon_retry_ms;
        return;
    }
    s->mon_retry_ms = 0;
    s->mon_off_at = now + on_ms;
    s->mon_next_at = s->o.monitor_duty < 100 ? now + MONITOR_WINDOW : now;
}

static void monitor_read(struct server *s)
{
    struct cli_legacy_write w;
    redisReply *r;

    if (tslock_conn_read(s->mon) != TSLOCK_OK) {
        cli_error("%s: MONITOR: %s", s->label,
                  s->mon->errstr[0] ? s->mon->errstr : "connection lost");
        monitor_off(s);
        return;
    }
    for (;;) {
        r = NULL;
        if (redisReaderGetReply(s->mon->reader, (void **)&r) != REDIS_OK) {
            cli_error("%s: MONITOR: unreadable reply", s->label);
            monitor_off(s);
            return;
        }
        if (r == NULL)
            return;
        if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) {
            s->mon_lines++;
            if (cli_monitor_legacy_write(r->str, r->len, &w)) {
                count_prefix(s, w.key, w.key_len);
                if (s->o.record_max > 0)
                    cli_record_note(&s->rec, &w);
            }
        }
        freeReplyObject(r);
    }
}

/* ---- HTTP */

static void serve(struct exporter *e, struct client *c)
{
    struct cli_http_request req;
    const char *why = NULL;
    struct out b = {NULL, 0, 0, 0};
    int rc = cli_http_parse(c->buf, c->len, &req, &why), i, head;

    if (rc == 0)
        return;
    if (rc < 0) {
        put(&b, "bad request: %s\n", why);
        cli_http_respond(c->fd, 400, "text/plain; charset=utf-8", b.p, b.len,
                         0);
    } else if (strcmp(req.method, "GET") != 0
               && strcmp(req.method, "HEAD") != 0) {
        put(&b, "expected GET or HEAD, got %s\n", req.method);
        cli_http_respond(c->fd, 405, "text/plain; charset=utf-8", b.p, b.len,
                         0);
    } else if (strcmp(req.path, "/metrics") != 0
               && strncmp(req.path, "/metrics?", 9) != 0) {
        head = strcmp(req.path, "/") == 0;
        put(&b, head ? "tslock exporter: see /metrics\n"
                     : "not found: the metrics are at /metrics\n");
        cli_http_respond(c->fd, head ? 200 : 404, "text/plain; charset=utf-8",
                         b.p, b.len, req.method[0] == 'H');
    } else {
        for (i = 0; i < e->n_servers; i++)
            scrape_server(&e->servers[i]);
        e->scrapes++;
        render(&b, e, req.openmetrics);
        if (b.failed)
            cli_http_respond(c->fd, 500, "text/plain", "out of memory\n", 14,
                             0);
        else
            cli_http_respond(c->fd, 200,
                             req.openmetrics ? "application/openmetrics-text; "
                                               "version=1.0.0; charset=utf-8"
                                             : "text/plain; version=0.0.4; "
                                               "charset=utf-8",
                             b.p, b.len, req.method[0] == 'H');
    }
    free(b.p);
    c->len = sizeof(c->buf) + 1; /* answered: close */
}

static void accept_clients(struct exporter *e)
{
    struct timeval tv = {5, 0};
    int fd;

    while ((fd = accept(e->listen_fd, NULL, NULL)) >= 0) {
        if (e->n_clients == MAX_CLIENTS) {
            close(fd);
            continue;
        }
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        /* Blocking writes, bounded: a scraper that stops reading is
         * dropped after 5 s. */
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        e->clients[e->n_clients].fd = fd;
        e->clients[e->n_clients].len = 0;
        e->clients[e->n_clients].since_ms = cli_mono_ms();
        e->n_clients++;
    }
}

static void read_client(struct exporter *e, struct client *c)
{
    ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);

    if (n <= 0) {
        c->len = sizeof(c->buf) + 1; /* gone, or nothing to read: close */
        return;
    }
    c->len += (size_t)n;
    serve(e, c);
}

/* Close the answered, the gone and the idle (10 s). */
static void reap_clients(struct exporter *e, int64_t now)
{
    int i;

    for (i = 0; i < e->n_clients;) {
        struct client *c = &e->clients[i];

        if (c->len > sizeof(c->buf) || now - c->since_ms > 10000) {
            close(c->fd);
            *c = e->clients[--e->n_clients];
        } else
            i++;
    }
}

/* ---- the loop */

static void flush_records(struct exporter *e, int64_t now)
{
    int i;

    for (i = 0; i < e->n_servers; i++) {
        struct server *s = &e->servers[i];

        if (s->o.record_max == 0 || now - s->rec.last_flush_ms < FLUSH_MS)
            continue;
        s->rec.last_flush_ms = now;
        if (s->mon == NULL && s->rec.n == 0)
            continue;
        if (ensure_connected(s) != 0)
            continue;
        if (s->has_time == 0)
            s->has_time = cli_raw_clock_offset(s->ctx, &s->clock_offset_ms);
        if (cli_record_flush(s->ctx, &s->rec, e->o->listen,
                             cli_wall_ms() + s->clock_offset_ms, s->mon != NULL,
                             s->o.record_max)
            != 0)
            disconnect(s);
    }
}

static int loop_once(struct exporter *e)
{
    struct pollfd pfd[1 + MAX_CLIENTS + 64];
    int n = 0, i, rc, base;
    int64_t now = cli_mono_ms();

    for (i = 0; i < e->n_servers; i++)
        monitor_schedule(&e->servers[i], now);
    pfd[n].fd = e->listen_fd;
    pfd[n++].events = POLLIN;
    for (i = 0; i < e->n_clients; i++) {
        pfd[n].fd = e->clients[i].fd;
        pfd[n++].events = POLLIN;
    }
    base = n;
    for (i = 0; i < e->n_servers; i++) {
        pfd[n].fd = e->servers[i].mon != NULL ? e->servers[i].mon->fd : -1;
        pfd[n++].events = POLLIN;
    }
    rc = poll(pfd, (nfds_t)n, 200);
    if (rc < 0 && errno != EINTR) {
        cli_error("poll: %s", strerror(errno));
        return CLI_EXIT_OSERR;
    }
    if (rc > 0) {
        for (i = 0; i < e->n_servers; i++)
            if (pfd[base + i].fd >= 0 && pfd[base + i].revents != 0)
                monitor_read(&e->servers[i]);
        for (i = 0; i < e->n_clients; i++)
            if (pfd[1 + i].revents != 0)
                read_client(e, &e->clients[i]);
        if (pfd[0].revents & POLLIN)
            accept_clients(e);
    }
    now = cli_mono_ms();
    reap_clients(e, now);
    flush_records(e, now);
    return 0;
}

/* "host:port/db", "unix:/path/db" or "sentinel:MASTER/db": no password. */
static void make_label(struct server *s)
{
    const struct tslock_url *u = &s->o.url;

    if (u->nsentinels > 0)
        snprintf(s->label, sizeof(s->label), "sentinel:%s/%d", u->master_name,
                 u->db);
    else if (u->is_unix)
        snprintf(s->label, sizeof(s->label), "unix:%s/%d", u->host, u->db);
    else
        snprintf(s->label, sizeof(s->label), "%s:%d/%d", u->host, u->port,
                 u->db);
}

static int open_servers(struct exporter *e, char **urls, int n)
{
    char err[256];
    int i;

    e->servers = calloc((size_t)n, sizeof(*e->servers));
    if (e->servers == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    for (i = 0; i < n; i++) {
        struct server *s = &e->servers[i];

        s->o = *e->o;
        s->o.masters = NULL;
        s->o.n_masters = 0;
        if (cli_url_parse(urls[i], &s->o.url, err, sizeof(err)) != 0)
            return cli_usage_error("--url (number %d of %d): %s", i + 1, n,
                                   err);
        e->n_servers = i + 1;
        make_label(s);
        strcpy(s->cursor, "0");
    }
    return 0;
}

static void close_all(struct exporter *e)
{
    int i, k;

    for (i = 0; i < e->n_clients; i++)
        close(e->clients[i].fd);
    for (i = 0; i < e->n_servers; i++) {
        struct server *s = &e->servers[i];

        disconnect(s);
        monitor_off(s);
        for (k = 0; k < s->n_prefixes; k++)
            free(s->prefixes[k].name);
        free(s->prefixes);
        cli_record_free(&s->rec);
        tslock_url_free(&s->o.url);
    }
    free(e->servers);
    if (e->listen_fd >= 0)
        close(e->listen_fd);
}

int cli_exporter(const struct cli_options *o, char **urls, int n_urls)
{
    struct exporter e;
    int status, i;

    memset(&e, 0, sizeof(e));
    e.o = o;
    e.listen_fd = -1;
    if (o->listen == NULL)
        return cli_usage_error("exporter expects --listen ADDR:PORT");
    if (n_urls > 64)
        return cli_usage_error("exporter takes at most 64 -u, got %d", n_urls);
    status = open_servers(&e, urls, n_urls);
    if (status == 0)
        status = cli_http_listen(o->listen, &e.listen_fd);
    if (status == 0) {
        cli_signals_install();
        cli_info("exporter: serving /metrics on %s for %d server%s", o->listen,
                 e.n_servers, e.n_servers == 1 ? "" : "s");
        for (i = 0; i < e.n_servers; i++)
            cli_verbose("server %s", e.servers[i].label);
    }
    while (status == 0 && cli_signals_received() == 0)
        status = loop_once(&e);
    /* What was seen last still goes into the record. */
    for (i = 0; i < e.n_servers; i++)
        e.servers[i].rec.last_flush_ms = 0;
    if (status == 0)
        flush_records(&e, cli_mono_ms() + FLUSH_MS);
    close_all(&e);
    return status;
}
