/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * session.c - what every form of the command shares: messages on stderr,
 * connecting as the URL says, making a lock as the options say, taking it
 * with -w, and turning library codes into exit statuses and one-line
 * messages.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "cli.h"

int cli_verbosity;

static void vmessage(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0)));

static void vmessage(const char *fmt, va_list ap)
{
    char line[1024];

    /* One write per line, so lines from two threads never interleave. */
    vsnprintf(line, sizeof(line), fmt, ap);
    fprintf(stderr, "tslock: %s\n", line);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

void cli_info(const char *fmt, ...)
{
    va_list ap;

    if (cli_verbosity < 0)
        return;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

void cli_verbose(const char *fmt, ...)
{
    va_list ap;

    if (cli_verbosity < 1)
        return;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

int64_t cli_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cli_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *cli_scheme_name(tslock_scheme scheme)
{
    switch (scheme) {
    case TSLOCK_SCHEME_AUTO:
        return "auto";
    case TSLOCK_SCHEME_TIMESTAMP:
        return "timestamp";
    case TSLOCK_SCHEME_TOKEN:
        return "token";
    case TSLOCK_SCHEME_BRIDGE:
        return "bridge";
    }
    return "?";
}

const char *cli_unit_name(tslock_unit unit)
{
    switch (unit) {
    case TSLOCK_UNIT_MS:
        return "ms";
    case TSLOCK_UNIT_S:
        return "s";
    case TSLOCK_UNIT_FLOAT:
        return "float";
    }
    return "?";
}

int cli_status_for(int code)
{
    switch (code) {
    case TSLOCK_EIO:
    case TSLOCK_ETIMEDOUT:
    case TSLOCK_EAUTH:
    case TSLOCK_ENOQUORUM:
    case TSLOCK_EREPLICAS:
    case TSLOCK_ECLUSTER:
        return CLI_EXIT_UNAVAILABLE;
    case TSLOCK_ENOMEM:
        return CLI_EXIT_OSERR;
    case TSLOCK_ENOPERM:
        return CLI_EXIT_NOPERM;
    case TSLOCK_ETLS:
        return CLI_EXIT_TLS;
    default:
        return CLI_EXIT_SOFTWARE;
    }
}

int cli_fail(tslock_client *c, int rc, const char *what)
{
    const char *detail = tslock_client_errstr(c);

    cli_error("%s: %s: %s", what, tslock_errname(rc),
              detail[0] != '\0' ? detail : tslock_strerror(rc));
    return cli_status_for(rc);
}

static void describe_caps(unsigned caps, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s%s%s%s%s%s", caps == 0 ? " none" : "",
             caps & TSLOCK_CAP_WATCH ? " WATCH" : "",
             caps & TSLOCK_CAP_LUA ? " Lua" : "",
             caps & TSLOCK_CAP_TIME ? " TIME" : "",
             caps & TSLOCK_CAP_SET_NX_PX ? " SET-NX-PX" : "",
             caps & TSLOCK_CAP_TTL_KEEPS ? " TTL-keeps" : "",
             caps & TSLOCK_CAP_CLUSTER ? " cluster" : "",
             caps & TSLOCK_CAP_FUNCTIONS ? " Functions (EVAL refused)" : "");
}

static int o_pubsub_asked; /* the --pubsub of the client reported */

static void report_server(tslock_client *c)
{
    int major, minor, patch;
    char caps[128];

    if (cli_verbosity < 1)
        return;
    describe_caps(tslock_client_caps(c), caps, sizeof(caps));
    if (tslock_client_server_version(c, &major, &minor, &patch) == TSLOCK_OK)
        cli_verbose("server: Redis %d.%d.%d; capabilities:%s", major, minor,
                    patch, caps);
    else
        cli_verbose("server: version unknown; capabilities:%s", caps);
    cli_verbose("server clock minus this host's: %" PRId64 " ms",
                tslock_client_clock_offset(c));
    cli_report_pubsub(c, o_pubsub_asked);
}

/*
 * Verbose: how waiters are woken, and, where it is classic pub/sub
 * although sharded was possible or asked, why.
 */
void cli_report_pubsub(tslock_client *c, int asked)
{
    int major = 0, minor = 0, patch = 0;
    int known = tslock_client_server_version(c, &major, &minor, &patch);
    int cluster = (tslock_client_caps(c) & TSLOCK_CAP_CLUSTER) != 0;

    if (cli_verbosity < 1)
        return;
    if (tslock_client_get_pubsub(c) == TSLOCK_PUBSUB_SHARDED)
        cli_verbose("wake-ups: sharded pub/sub (SSUBSCRIBE at the key's "
                    "master, SPUBLISH)");
    else if (asked == TSLOCK_PUBSUB_CLASSIC)
        cli_verbose("wake-ups: classic pub/sub (--pubsub classic)");
    else if (known != TSLOCK_OK || major < 7)
        cli_verbose("wake-ups: classic pub/sub, falling back: the server "
                    "(%s) has no sharded pub/sub, which needs Redis 7.0",
                    known != TSLOCK_OK ? "version unknown" : "before 7.0");
    else if (asked == TSLOCK_PUBSUB_AUTO && !cluster)
        cli_verbose("wake-ups: classic pub/sub (a single server: sharded "
                    "saves nothing; --pubsub sharded to use it)");
    else
        cli_verbose("wake-ups: classic pub/sub, falling back: the server "
                    "or a proxy refused SSUBSCRIBE");
}

int cli_client_for(const struct cli_options *o, const struct tslock_url *u,
                   tslock_client **out)
{
    tslock_client *c = NULL;
    char where[512];
    int rc;

    *out = NULL;
    tslock_url_describe(u, where, sizeof(where));
    cli_verbose("connecting to %s", where);
    rc = tslock_client_new(&c);
    if (rc != TSLOCK_OK)
        return rc;
    *out = c;
    rc = tslock_client_set_time_source(c, o->time_source);
    if (rc == TSLOCK_OK)
        rc = tslock_client_set_functions(c, o->functions);
    if (rc == TSLOCK_OK)
        rc = tslock_client_set_pubsub(c, o->pubsub);
    o_pubsub_asked = o->pubsub;
    if (rc == TSLOCK_OK)
        rc = tslock_client_set_timeouts(c, o->timeout_ms, o->timeout_ms);
    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_parsed_url(c, u);
    if (rc == TSLOCK_OK)
        report_server(c);
    return rc;
}

int cli_connect(const struct cli_options *o, tslock_client **out)
{
    tslock_client *c = NULL;
    int rc = cli_client_for(o, &o->url, &c);

    *out = NULL;
    if (rc != TSLOCK_OK) {
        int status = c != NULL ? cli_fail(c, rc, "cannot use the server")
                               : cli_status_for(rc);
        tslock_client_free(c);
        return status;
    }
    *out = c;
    return CLI_EXIT_OK;
}

int cli_lock_new(const struct cli_options *o, tslock_client *c, const char *key,
                 tslock_lock **out)
{
    tslock_lock *l = NULL;
    int rc = tslock_lock_new(&l, c, key);

    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_scheme(l, o->scheme);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_ttl(l, o->ttl_ms);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_unit(l, o->unit);
    if (rc == TSLOCK_OK && o->dialect != NULL)
        rc = tslock_lock_set_dialect(l, o->dialect);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_takeover_grace(l, o->takeover_grace_ms);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_fair(l, o->fair);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_wakeup(l, !o->poll);
    if (rc == TSLOCK_OK && o->rw != TSLOCK_RW_OFF)
        rc = tslock_lock_set_rw(l, o->rw);
    if (rc == TSLOCK_OK && o->permits > 0)
        rc = tslock_lock_set_permits(l, o->permits);
    if (rc == TSLOCK_OK && o->fence)
        rc = tslock_lock_set_fencing(l, 1);
    if (rc == TSLOCK_OK && o->replicas > 0)
        rc = tslock_lock_set_replicas(l, o->replicas, o->replicas_timeout_ms);
    if (rc != TSLOCK_OK) {
        tslock_lock_free(l);
        *out = NULL;
        return cli_fail(c, rc, "cannot set up the lock");
    }
    *out = l;
    return CLI_EXIT_OK;
}

/* What became of an attempt to take the lock: the message, the status. */
static int taken_or_not(const struct cli_options *o, tslock_client *c,
                        tslock_lock *l, const char *key, int rc)
{
    const char *detail = tslock_client_errstr(c);
    int sig = cli_signals_received();

    if (sig != 0) {
        /* A signal during the attempt: give up, even if it succeeded. */
        if (rc == TSLOCK_OK)
            (void)tslock_release(l);
        cli_info("stopped by signal %d while taking '%s'", sig, key);
        return CLI_EXIT_SIGNAL_BASE + sig;
    }
    switch (rc) {
    case TSLOCK_OK:
        cli_verbose("took '%s' with the %s scheme (asked: %s), lease %" PRId64
                    " ms",
                    key, cli_scheme_name(tslock_lock_scheme_used(l)),
                    cli_scheme_name(o->scheme), o->ttl_ms);
        if (o->wait_ms != 0 && !o->poll)
            cli_report_pubsub(c, o->pubsub); /* a refusal shows in a wait */
        return CLI_EXIT_OK;
    case TSLOCK_EBUSY:
    case TSLOCK_EUNREADABLE:
        if (o->wait_ms > 0)
            cli_info("busy after waiting %" PRId64 " ms: %s", o->wait_ms,
                     detail[0] != '\0' ? detail : "lock is held");
        else
            cli_info("busy: %s", detail[0] != '\0' ? detail : "lock is held");
        return o->busy_status;
    default:
        return cli_fail(c, rc, "cannot take the lock");
    }
}

void cli_note_wakeups(tslock_client *c)
{
    static int said;
    const char *why;

    if (!said && tslock_client_wakeups(c, &why) != 0) {
        said = 1;
        cli_verbose("wake-ups fell back: %s", why);
    }
}

int cli_take(const struct cli_options *o, tslock_client *c, tslock_lock *l,
             const char *key)
{
    int rc;

    cli_signals_wait_on(l);
    rc = tslock_acquire(l, 0);
    if ((rc == TSLOCK_EBUSY || rc == TSLOCK_EUNREADABLE) && o->wait_ms != 0
        && cli_signals_received() == 0) {
        if (o->wait_ms < 0)
            cli_verbose("'%s' is held; waiting until it is free", key);
        else
            cli_verbose("'%s' is held; waiting up to %" PRId64 " ms", key,
                        o->wait_ms);
        rc = tslock_acquire(l, o->wait_ms);
    }
    cli_signals_wait_on(NULL);
    cli_note_wakeups(c);
    return taken_or_not(o, c, l, key, rc);
}

/* What became of an attempt to take a set: the message, the status. */
static int set_taken_or_not(const struct cli_options *o, tslock_client *c,
                            tslock_lock **locks, int n, int rc)
{
    const char *detail = tslock_client_errstr(c);
    int sig = cli_signals_received();

    if (sig != 0) {
        if (rc == TSLOCK_OK)
            (void)tslock_release_all(locks, (size_t)n);
        cli_info("stopped by signal %d while taking %d keys", sig, n);
        return CLI_EXIT_SIGNAL_BASE + sig;
    }
    switch (rc) {
    case TSLOCK_OK:
        cli_verbose("took all %d keys with the %s scheme (asked: %s), "
                    "lease %" PRId64 " ms",
                    n, cli_scheme_name(tslock_lock_scheme_used(locks[0])),
                    cli_scheme_name(o->scheme), o->ttl_ms);
        return CLI_EXIT_OK;
    case TSLOCK_EBUSY:
    case TSLOCK_EUNREADABLE:
        if (o->wait_ms > 0)
            cli_info("busy after waiting %" PRId64 " ms: %s; none of the "
                     "keys is held",
                     o->wait_ms, detail[0] != '\0' ? detail : "a key is held");
        else
            cli_info("busy: %s; none of the keys is held",
                     detail[0] != '\0' ? detail : "a key is held");
        return o->busy_status;
    default:
        return cli_fail(c, rc, "cannot take the keys");
    }
}

int cli_take_set(const struct cli_options *o, tslock_client *c,
                 tslock_lock **locks, char **keys, int n)
{
    int rc;

    if (n == 1)
        return cli_take(o, c, locks[0], keys[0]);
    cli_signals_wait_on_set(locks, n);
    rc = tslock_acquire_all(locks, (size_t)n, 0);
    if ((rc == TSLOCK_EBUSY || rc == TSLOCK_EUNREADABLE) && o->wait_ms != 0
        && cli_signals_received() == 0) {
        if (o->wait_ms < 0)
            cli_verbose("a key of the %d is held; waiting until all are free",
                        n);
        else
            cli_verbose("a key of the %d is held; waiting up to %" PRId64 " ms",
                        n, o->wait_ms);
        rc = tslock_acquire_all(locks, (size_t)n, o->wait_ms);
    }
    cli_signals_wait_on_set(NULL, 0);
    return set_taken_or_not(o, c, locks, n, rc);
}
