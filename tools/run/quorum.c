/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * quorum.c - the forms over several masters: -u given N times (N odd,
 * at least 3) makes a Redlock over those independent servers for
 * KEY -- COMMAND, acquire, release, extend and status.  What does not fit
 * a quorum (timestamp and bridge schemes, fair queues, fencing numbers,
 * the one-server forms) is refused before anything is sent.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include "tslock_atomic.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Why an option does not fit several servers, or NULL when it does. */
static const char *misfit(const struct cli_options *o, char *buf, size_t size)
{
    if (o->scheme == TSLOCK_SCHEME_TIMESTAMP
        || o->scheme == TSLOCK_SCHEME_BRIDGE) {
        snprintf(buf, size,
                 "-m %s cannot be used with several servers: a Redlock "
                 "needs one random token with a server-side expiry on every "
                 "master, and a %s lock is judged by each client's clock "
                 "and taken over one master at a time, outside any "
                 "majority (use -m auto or -m token)",
                 cli_scheme_name(o->scheme), cli_scheme_name(o->scheme));
        return buf;
    }
    if (o->fair)
        return "--fair works on one server only: each master would keep "
               "a queue of its own";
    if (o->rw != TSLOCK_RW_OFF || o->permits > 0)
        return "--shared, --exclusive and --permits work on one server "
               "only: a Redlock is an exclusive lock held by a majority";
    if (o->fence)
        return "--fence works on one server only: each master keeps its "
               "own counter, and numbers from several masters do not form "
               "one growing sequence (see tslock(7), REDLOCK)";
    return NULL;
}

int cli_masters_parse(const struct cli_request *r, struct cli_options *o,
                      const char *form)
{
    char err[256], why[512];
    const char *bad;
    int i, status, n = r->n_urls;

    if (n <= 1)
        return 0;
    if (form != NULL)
        return cli_usage_error("%s works on one server; -u was given %d "
                               "times",
                               form, n);
    if (n % 2 == 0 || n > CLI_MAX_MASTERS)
        return cli_usage_error(
            "-u given %d times: a Redlock needs an odd number of "
            "independent masters, from 3 to %d (%d masters need %d for a "
            "majority and survive %d failures, no more than %d would)",
            n, CLI_MAX_MASTERS, n, n / 2 + 1, n - (n / 2 + 1), n - 1);
    bad = misfit(o, why, sizeof(why));
    if (bad != NULL)
        return cli_usage_error("%s (-u was given %d times)", bad, n);
    o->masters = calloc((size_t)n, sizeof(*o->masters));
    if (o->masters == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    for (i = 0; i < n; i++) {
        if (cli_url_parse(r->url_copies[i], &o->masters[i], err, sizeof(err))
            != 0) {
            cli_masters_free(o);
            return cli_usage_error("--url (number %d of %d): %s", i + 1, n,
                                   err);
        }
        if ((status =
                 cli_url_finish(r, &o->masters[i], r->url_copies[i], "--url"))
            != 0) {
            tslock_url_free(&o->masters[i]);
            cli_masters_free(o);
            return status;
        }
        o->n_masters = i + 1;
    }
    return 0;
}

void cli_masters_free(struct cli_options *o)
{
    int i;

    for (i = 0; i < o->n_masters; i++)
        tslock_url_free(&o->masters[i]);
    free(o->masters);
    o->masters = NULL;
    o->n_masters = 0;
}

static int quorum_fail(tslock_redlock *rl, int rc, const char *what)
{
    const char *detail = tslock_redlock_errstr(rl);

    cli_error("%s: %s: %s", what, tslock_errname(rc),
              detail[0] != '\0' ? detail : tslock_strerror(rc));
    return cli_status_for(rc);
}

int cli_quorum_open(const struct cli_options *o, const char *key,
                    tslock_client ***clients, tslock_redlock **rl)
{
    tslock_client **c = calloc((size_t)o->n_masters, sizeof(*c));
    char where[512];
    int i, rc = TSLOCK_ENOMEM;

    *clients = c;
    *rl = NULL;
    for (i = 0; c != NULL && i < o->n_masters; i++) {
        rc = cli_client_for(o, &o->masters[i], &c[i]);
        if (c[i] == NULL)
            break;
        if (rc != TSLOCK_OK) { /* the Redlock tries it again itself */
            tslock_url_describe(&o->masters[i], where, sizeof(where));
            cli_verbose("master %d (%s) cannot be used now: %s: %s", i + 1,
                        where, tslock_errname(rc), tslock_client_errstr(c[i]));
        }
        rc = TSLOCK_OK;
    }
    if (rc == TSLOCK_OK)
        rc = tslock_redlock_new(rl, c, (size_t)o->n_masters, key);
    if (rc == TSLOCK_OK)
        rc = tslock_redlock_set_ttl(*rl, o->ttl_ms);
    if (rc != TSLOCK_OK) {
        cli_error("cannot set up the Redlock: %s", tslock_strerror(rc));
        return cli_status_for(rc);
    }
    cli_verbose("Redlock over %d masters, a majority of %d", o->n_masters,
                o->n_masters / 2 + 1);
    return CLI_EXIT_OK;
}

void cli_quorum_close(const struct cli_options *o, tslock_client **clients,
                      tslock_redlock *rl)
{
    int i;

    tslock_redlock_free(rl);
    for (i = 0; clients != NULL && i < o->n_masters; i++)
        tslock_client_free(clients[i]);
    free(clients);
}

int cli_quorum_take(const struct cli_options *o, tslock_redlock *rl,
                    const char *key)
{
    int rc, sig;

    /*
     * A signal before the wait is registered is seen by the check after
     * the first try; one after it cancels the wait, or the next one.
     */
    cli_signals_wait_on_redlock(rl);
    rc = tslock_redlock_acquire(rl, 0);
    if ((rc == TSLOCK_EBUSY || rc == TSLOCK_ENOQUORUM) && o->wait_ms != 0
        && cli_signals_received() == 0) {
        cli_verbose("'%s' is not free on a majority; waiting%s", key,
                    o->wait_ms < 0 ? " until it is" : "");
        rc = tslock_redlock_acquire(rl, o->wait_ms);
    }
    cli_signals_wait_on_redlock(NULL);
    sig = cli_signals_received();
    if (sig != 0) {
        if (rc == TSLOCK_OK)
            (void)tslock_redlock_release(rl);
        cli_info("stopped by signal %d while taking '%s'", sig, key);
        return CLI_EXIT_SIGNAL_BASE + sig;
    }
    switch (rc) {
    case TSLOCK_OK:
        cli_verbose("%s; valid for %" PRId64 " ms", tslock_redlock_errstr(rl),
                    tslock_redlock_validity_ms(rl));
        return CLI_EXIT_OK;
    case TSLOCK_EBUSY:
        cli_info("busy%s: %s", o->wait_ms > 0 ? " after waiting" : "",
                 tslock_redlock_errstr(rl));
        return o->busy_status;
    default:
        return quorum_fail(rl, rc, "cannot take the lock");
    }
}

/* ------------------------------------------------------------ renewal */

struct cli_renewer {
    tslock_redlock *rl;
    int64_t interval_ms;
    tslock_watchdog_fn on_failure, on_warning;
    void *userdata;
    int stop_pipe[2];
    atomic_int status;
    pthread_t thread;
};

static void *renew_loop(void *arg)
{
    struct cli_renewer *w = arg;
    struct pollfd pfd = {.fd = w->stop_pipe[0], .events = POLLIN};
    int rc;

    for (;;) {
        int n = poll(&pfd, 1, (int)w->interval_ms);
        if (n > 0 || (n < 0 && errno != EINTR))
            return NULL;
        rc = tslock_redlock_extend(w->rl, 0);
        if (rc == TSLOCK_OK)
            continue;
        if (rc == TSLOCK_ENOQUORUM && tslock_redlock_validity_ms(w->rl) != 0) {
            if (w->on_warning != NULL)
                w->on_warning(rc, tslock_redlock_errstr(w->rl), w->userdata);
            continue;
        }
        if (rc == TSLOCK_ENOQUORUM)
            rc = TSLOCK_ELOST; /* the validity ran out meanwhile */
        atomic_store(&w->status, rc);
        if (w->on_failure != NULL)
            w->on_failure(rc, tslock_redlock_errstr(w->rl), w->userdata);
        return NULL;
    }
}

int cli_quorum_renew_start(tslock_redlock *rl, int64_t ttl_ms,
                           tslock_watchdog_fn on_failure,
                           tslock_watchdog_fn on_warning, void *userdata,
                           struct cli_renewer **out)
{
    struct cli_renewer *w = calloc(1, sizeof(*w));

    *out = NULL;
    if (w == NULL)
        return TSLOCK_ENOMEM;
    if (pipe(w->stop_pipe) != 0) {
        free(w);
        return TSLOCK_EIO;
    }
    w->rl = rl;
    w->interval_ms = ttl_ms / 3 > 0 ? ttl_ms / 3 : 1;
    if (w->interval_ms > 3600000)
        w->interval_ms = 3600000;
    w->on_failure = on_failure;
    w->on_warning = on_warning;
    w->userdata = userdata;
    if (pthread_create(&w->thread, NULL, renew_loop, w) != 0) {
        close(w->stop_pipe[0]);
        close(w->stop_pipe[1]);
        free(w);
        return TSLOCK_EIO;
    }
    *out = w;
    return TSLOCK_OK;
}

int cli_quorum_renew_stop(struct cli_renewer *w)
{
    int rc;

    if (w == NULL)
        return TSLOCK_OK;
    (void)!write(w->stop_pipe[1], "x", 1);
    pthread_join(w->thread, NULL);
    rc = atomic_load(&w->status);
    close(w->stop_pipe[0]);
    close(w->stop_pipe[1]);
    free(w);
    return rc;
}

/* ------------------------------------------------- acquire ... status */

int cli_quorum_acquire(const struct cli_options *o, const char *key)
{
    tslock_client **c;
    tslock_redlock *rl;
    int status;

    cli_signals_install();
    status = cli_quorum_open(o, key, &c, &rl);
    if (status == CLI_EXIT_OK)
        status = cli_quorum_take(o, rl, key);
    if (status == CLI_EXIT_OK) {
        printf("%s\n", tslock_redlock_handle(rl));
        if (fflush(stdout) != 0) {
            cli_error("cannot print the handle; releasing '%s'", key);
            (void)tslock_redlock_release(rl);
            status = CLI_EXIT_OSERR;
        }
    }
    cli_quorum_close(o, c, rl);
    return status;
}

/* Check the handle's form before connecting: a typo is a usage error. */
static int handle_form(const char *handle)
{
    const char *v = strncmp(handle, "redlock:", 8) == 0 ? handle + 8
                    : strncmp(handle, "token:", 6) == 0 ? handle + 6
                                                        : NULL;
    size_t i;

    for (i = 0; v != NULL && v[i] != '\0'; i++)
        if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
            break;
    if (v != NULL && i == 32 && v[i] == '\0')
        return CLI_EXIT_OK;
    return cli_usage_error("handle \"%.80s\" is not redlock:<32 hex digits> "
                           "(what acquire printed with the same -u list)",
                           handle);
}

static int lost_warning(tslock_redlock *rl, const char *key)
{
    cli_error("WARNING: '%s' is no longer held by this handle (%s); "
              "another holder may have run at the same time: mutual "
              "exclusion may have been broken",
              key, tslock_redlock_errstr(rl));
    return CLI_EXIT_LOST;
}

/* release and extend: adopt the handle on every master, then act. */
static int with_handle(const struct cli_options *o, const char *key,
                       const char *handle, int extend)
{
    tslock_client **c = NULL;
    tslock_redlock *rl = NULL;
    int status = handle_form(handle), rc;

    if (status == CLI_EXIT_OK)
        status = cli_quorum_open(o, key, &c, &rl);
    if (status != CLI_EXIT_OK)
        goto out;
    rc = tslock_redlock_adopt(rl, handle);
    if (rc == TSLOCK_OK)
        rc = extend ? tslock_redlock_extend(rl, 0) : tslock_redlock_release(rl);
    if (rc == TSLOCK_OK) {
        cli_verbose("%s", tslock_redlock_errstr(rl));
        if (extend)
            printf("%s\n", tslock_redlock_handle(rl));
    } else if (rc == TSLOCK_ELOST) {
        status = lost_warning(rl, key);
    } else {
        status = quorum_fail(rl, rc,
                             extend ? "cannot extend the lock"
                                    : "cannot release the lock");
    }
out:
    cli_quorum_close(o, c, rl);
    return status;
}

int cli_quorum_release(const struct cli_options *o, const char *key,
                       const char *handle)
{
    return with_handle(o, key, handle, 0);
}

int cli_quorum_extend(const struct cli_options *o, const char *key,
                      const char *handle)
{
    return with_handle(o, key, handle, 1);
}

/* One master's line of status: 1 when read (value "" when free). */
static int status_line(const struct cli_options *o, tslock_client *c, int i,
                       const char *key, char *value, size_t size)
{
    tslock_lock *l = NULL;
    int64_t ttl = -2;
    char where[512];
    int rc = tslock_lock_new(&l, c, key);

    value[0] = '\0';
    tslock_url_describe(&o->masters[i], where, sizeof(where));
    if (rc == TSLOCK_OK)
        rc = tslock_lock_peek(l, value, size, &ttl);
    if (rc != TSLOCK_OK) {
        printf("master %d (%s): cannot read: %s: %s\n", i + 1, where,
               tslock_errname(rc), tslock_client_errstr(c));
        value[0] = '\0';
    } else if (value[0] == '\0') {
        printf("master %d (%s): free\n", i + 1, where);
    } else {
        printf("master %d (%s): %s, server TTL %" PRId64 " ms\n", i + 1, where,
               value, ttl);
    }
    tslock_lock_free(l);
    return rc == TSLOCK_OK;
}

/*
 * status: what each master holds under KEY, and whether one value holds
 * a majority.  Exit 0 when read from a majority of the masters.
 */
int cli_quorum_status(const struct cli_options *o, const char *key)
{
    static char value[CLI_MAX_MASTERS][128];
    tslock_client **c;
    tslock_redlock *rl;
    int status = cli_quorum_open(o, key, &c, &rl);
    int i, j, read = 0, best = 0, majority = o->n_masters / 2 + 1;
    const char *winner = NULL;

    for (i = 0; status == CLI_EXIT_OK && i < o->n_masters; i++)
        read += status_line(o, c[i], i, key, value[i], sizeof(value[i]));
    for (i = 0; status == CLI_EXIT_OK && i < o->n_masters; i++) {
        int same = 0;
        for (j = 0; value[i][0] != '\0' && j < o->n_masters; j++)
            same += strcmp(value[i], value[j]) == 0;
        if (same > best) {
            best = same;
            winner = value[i];
        }
    }
    if (status == CLI_EXIT_OK && best >= majority)
        printf("held: \"%s\" on %d of %d masters (a majority)\n", winner, best,
               o->n_masters);
    else if (status == CLI_EXIT_OK)
        printf("not held by a majority (%d of %d masters read)\n", read,
               o->n_masters);
    if (status == CLI_EXIT_OK && read < majority)
        status = CLI_EXIT_UNAVAILABLE;
    cli_quorum_close(o, c, rl);
    return status;
}
