/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * admin.c - the forms that work on a lock across invocations: acquire
 * (print a handle), release and extend (take the handle back), status
 * (read whatever holds a key, whoever wrote it) and break (an operator
 * deletes a stuck lock).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Room for any value status shows; longer ones are cut. */
#define PEEK_SIZE 4096

/*
 * Check a handle before connecting, so a mistyped handle is a usage
 * error even when the server is down.  A lock object needs a client,
 * but not a connected one: adoption sends nothing.
 */
static int check_handle(const char *handle, const char *dialect)
{
    tslock_client *c = NULL;
    tslock_lock *l = NULL;
    int rc = tslock_client_new(&c);

    if (rc == TSLOCK_OK)
        rc = tslock_lock_new(&l, c, "handle-check");
    /* A format's hold is read back in that format (--dialect). */
    if (rc == TSLOCK_OK && dialect != NULL)
        rc = tslock_lock_set_dialect(l, dialect);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_adopt(l, handle);
    if (rc == TSLOCK_EINVAL)
        cli_error("%s", tslock_client_errstr(c));
    else if (rc != TSLOCK_OK)
        cli_error("cannot read the handle: %s", tslock_strerror(rc));
    tslock_lock_free(l);
    tslock_client_free(c);
    return rc == TSLOCK_OK       ? CLI_EXIT_OK
           : rc == TSLOCK_EINVAL ? CLI_EXIT_USAGE
                                 : cli_status_for(rc);
}

/* Connect and make the lock; with a handle, adopt it. */
static int open_lock(const struct cli_options *o, const char *key,
                     const char *handle, tslock_client **c, tslock_lock **l)
{
    int status =
        handle != NULL ? check_handle(handle, o->dialect) : CLI_EXIT_OK;
    int rc;

    *c = NULL;
    *l = NULL;
    if (status == CLI_EXIT_OK)
        status = cli_connect(o, c);
    if (status == CLI_EXIT_OK)
        status = cli_lock_new(o, *c, key, l);
    if (status != CLI_EXIT_OK || handle == NULL)
        return status;
    rc = tslock_lock_adopt(*l, handle);
    return rc == TSLOCK_OK ? CLI_EXIT_OK : cli_fail(*c, rc, "bad handle");
}

static void close_lock(tslock_client *c, tslock_lock *l)
{
    tslock_lock_free(l);
    tslock_client_free(c);
}

static int lost_warning(tslock_client *c, const char *key)
{
    cli_error("WARNING: '%s' is no longer held by this handle (%s); "
              "another holder may have run at the same time: mutual "
              "exclusion may have been broken",
              key, tslock_client_errstr(c));
    return CLI_EXIT_LOST;
}

int cli_acquire(const struct cli_options *o, const char *key)
{
    tslock_client *c;
    tslock_lock *l;
    int status;

    cli_signals_install();
    status = open_lock(o, key, NULL, &c, &l);
    if (status == CLI_EXIT_OK)
        status = cli_take(o, c, l, key);
    if (status == CLI_EXIT_OK) {
        /* With --fence, "HANDLE FENCE": a handle never holds a space. */
        if (o->fence)
            printf("%s %" PRId64 "\n", tslock_lock_handle(l),
                   tslock_lock_fence(l));
        else
            printf("%s\n", tslock_lock_handle(l));
        if (fflush(stdout) != 0) {
            cli_error("cannot print the handle; releasing '%s'", key);
            (void)tslock_release(l);
            status = CLI_EXIT_OSERR;
        }
    }
    close_lock(c, l);
    return status;
}

int cli_release(const struct cli_options *o, const char *key,
                const char *handle)
{
    tslock_client *c;
    tslock_lock *l;
    int status = open_lock(o, key, handle, &c, &l);
    int rc;

    if (status == CLI_EXIT_OK) {
        rc = tslock_release(l);
        cli_note_wakeups(c);
        if (rc == TSLOCK_OK)
            cli_verbose("released '%s'", key);
        else if (rc == TSLOCK_ELOST)
            status = lost_warning(c, key);
        else
            status = cli_fail(c, rc, "cannot release the lock");
    }
    close_lock(c, l);
    return status;
}

int cli_extend(const struct cli_options *o, const char *key, const char *handle)
{
    tslock_client *c;
    tslock_lock *l;
    int status = open_lock(o, key, handle, &c, &l);
    int rc;

    if (status == CLI_EXIT_OK) {
        rc = tslock_extend(l, 0);
        if (rc == TSLOCK_OK) {
            cli_verbose("extended '%s' to %" PRId64 " ms from now", key,
                        o->ttl_ms);
            printf("%s\n", tslock_lock_handle(l));
        } else if (rc == TSLOCK_ELOST) {
            status = lost_warning(c, key);
        } else {
            status = cli_fail(c, rc, "cannot extend the lock");
        }
    }
    close_lock(c, l);
    return status;
}

/* ------------------------------------------------------------ status */

static void print_state(const char *state)
{
    if (cli_verbosity < 0)
        printf("%s\n", state);
    else
        printf("state: %s\n", state);
}

static void print_server_ttl(int64_t ttl_ms)
{
    if (ttl_ms >= 0)
        printf("server TTL: %" PRId64 " ms\n", ttl_ms);
    else
        printf("server TTL: none\n");
}

/* A value as text a terminal shows safely: C escapes, cut at 200. */
static void print_raw(const char *label, const char *v)
{
    int cut;

    printf("%s: ", label);
    cut = cli_print_quoted(v, strlen(v), 200);
    printf("%s\n", cut ? " (cut)" : "");
}

static void print_time(int64_t unix_ms)
{
    time_t secs = (time_t)(unix_ms / 1000);
    struct tm tm;
    char buf[32];

    if (gmtime_r(&secs, &tm) == NULL)
        return;
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    printf("expires at: %s.%03dZ\n", buf, (int)(unix_ms % 1000));
}

static void print_token(const char *v, int64_t ttl_ms)
{
    print_state("held");
    if (cli_verbosity < 0)
        return;
    printf("scheme: token\nvalue: %s\n", v);
    if (ttl_ms >= 0)
        printf("time left: %" PRId64 " ms (server TTL)\n", ttl_ms);
    else
        printf("time left: unlimited (no server TTL: it never expires on "
               "its own)\n");
}

/*
 * Who wrote a stamp: a tslock bridge hold carries its proof (a TTL and an
 * owner token); a stamp without a TTL comes from a legacy client or from
 * tslock's timestamp scheme.  Migrating fleets use this to see which
 * clients still take the lock (doc/migration.md, step 3).
 */
static void print_writer(tslock_lock *l, int64_t ttl_ms)
{
    char token[40];
    int rc;

    printf("owner key: %s\n", tslock_lock_owner_key(l));
    rc = tslock_lock_peek_owner(l, token, sizeof(token));
    if (rc == TSLOCK_OK && token[0] != '\0' && ttl_ms >= 0)
        printf("owner: %s\nwriter: tslock bridge (a TTL and an owner "
               "token)\n",
               token);
    else if (ttl_ms < 0)
        printf("writer: a legacy client or tslock's timestamp scheme (no "
               "TTL)%s\n",
               rc == TSLOCK_OK && token[0] != '\0'
                   ? "; the owner key is a bridge hold's that this stamp "
                     "replaced"
                   : "");
    else
        printf("writer: unknown (a TTL but no owner token%s)\n",
               rc == TSLOCK_OK ? "" : ": the owner key could not be read");
}

/* Which libraries' clients could have written v (tslock dialects). */
static void print_dialect(const char *v)
{
    char names[256];

    if (tslock_dialect_match(v, strlen(v), names, sizeof(names), NULL)
        == TSLOCK_OK)
        printf("dialect: %s\n", names);
}

/*
 * A timestamp-scheme value: held or expired as every client of its
 * dialect reads it.  unit < 0: a value only a dialect reads (an owner
 * suffix, a PHP array, a never-expires sentinel), printed whole.
 */
static void print_stamp(tslock_lock *l, const char *v, int unit,
                        int64_t expires_ms, int64_t ttl_ms, int64_t now_ms)
{
    /* Expired once the clock passes the stamp, as every client reads it. */
    int64_t left = expires_ms - now_ms;

    print_state(left >= 0 ? "held" : "expired");
    if (cli_verbosity < 0)
        return;
    printf("scheme: timestamp\n");
    if (unit >= 0)
        printf("stamp: %s\nunit: %s\n", v, cli_unit_name((tslock_unit)unit));
    else
        print_raw("value", v);
    print_dialect(v);
    if (expires_ms == INT64_MAX) {
        printf("note: its dialect writes this for a lock that never "
               "expires; tslock never takes it over\n");
    } else {
        print_time(expires_ms);
        if (left >= 0)
            printf("time left: %" PRId64 " ms\n", left);
        else
            printf("expired: %" PRId64 " ms ago (%s may take it over)\n", -left,
                   unit >= 0 ? "the next taker" : "a taker with its --dialect");
    }
    print_server_ttl(ttl_ms);
    print_writer(l, ttl_ms);
}

static void print_unreadable(const char *v, int64_t ttl_ms)
{
    print_state("held");
    if (cli_verbosity < 0)
        return;
    printf("scheme: unknown\n");
    print_raw("value", v);
    printf("note: neither a token nor a plausible stamp in ms, s or float "
           "seconds, nor a value of any dialect (tslock dialects); tslock "
           "treats it as held and never takes it over\n");
    print_server_ttl(ttl_ms);
}

static void print_status(tslock_lock *l, const char *v, int64_t ttl_ms,
                         int64_t now_ms)
{
    tslock_scheme scheme;
    tslock_unit unit;
    int64_t expires_ms;
    char dialects[256];

    if (ttl_ms == -2) {
        print_state("free");
        return;
    }
    if (tslock_value_classify(v, strlen(v), &scheme, &unit, &expires_ms)
            != TSLOCK_OK
        && tslock_dialect_match(v, strlen(v), dialects, sizeof(dialects),
                                &expires_ms)
               == TSLOCK_OK)
        print_stamp(l, v, -1, expires_ms, ttl_ms, now_ms);
    else if (tslock_value_classify(v, strlen(v), &scheme, &unit, &expires_ms)
             != TSLOCK_OK)
        print_unreadable(v, ttl_ms);
    else if (scheme == TSLOCK_SCHEME_TOKEN)
        print_token(v, ttl_ms);
    else
        print_stamp(l, v, (int)unit, expires_ms, ttl_ms, now_ms);
}

/* The fair queue's length, when fair waiters are queued (not with -q). */
static void print_queue(tslock_lock *l)
{
    int64_t n = 0;

    if (cli_verbosity >= 0 && tslock_lock_queue_length(l, &n) == TSLOCK_OK
        && n > 0)
        printf("fair queue: %" PRId64 " waiter%s\n", n, n == 1 ? "" : "s");
}

/*
 * Shared or permit holders, when there are any (not with -q): the stamp
 * printed above is then theirs, covering the latest lease.
 */
static void print_holders(tslock_lock *l)
{
    int64_t n = 0;

    if (cli_verbosity < 0)
        return;
    if (tslock_lock_set_rw(l, TSLOCK_RW_SHARED) == TSLOCK_OK
        && tslock_lock_holders(l, &n) == TSLOCK_OK && n > 0)
        printf("shared holders: %" PRId64 " (the stamp covers the latest "
               "lease)\n",
               n);
    (void)tslock_lock_set_rw(l, TSLOCK_RW_OFF);
    if (tslock_lock_set_permits(l, 1) == TSLOCK_OK
        && tslock_lock_holders(l, &n) == TSLOCK_OK && n > 0)
        printf("permit holders: %" PRId64 " (the stamp covers the latest "
               "lease)\n",
               n);
    (void)tslock_lock_set_permits(l, 0);
}

int cli_status(const struct cli_options *o, const char *key)
{
    static char value[PEEK_SIZE];
    tslock_client *c;
    tslock_lock *l;
    int64_t ttl_ms = -2;
    int status = open_lock(o, key, NULL, &c, &l);
    int rc;

    if (status == CLI_EXIT_OK) {
        rc = tslock_lock_peek(l, value, sizeof(value), &ttl_ms);
        /* With --clock server, judge stamps by the server's clock. */
        int64_t now_ms = cli_wall_ms();
        if (o->time_source == TSLOCK_TIME_SERVER)
            now_ms += tslock_client_clock_offset(c);
        if (rc == TSLOCK_OK)
            print_status(l, value, ttl_ms, now_ms);
        else
            status = cli_fail(c, rc, "cannot read the lock");
        if (rc == TSLOCK_OK) {
            print_queue(l);
            print_holders(l);
            /* Measured by the connect's probe: TIME halfway through. */
            if (cli_verbosity >= 0)
                cli_print_clock_offset(tslock_client_caps(c) & TSLOCK_CAP_TIME,
                                       tslock_client_clock_offset(c));
        }
    }
    close_lock(c, l);
    return status;
}

/* ------------------------------------------------------------- break */

/* Show what is about to go: the value, its TTL, a bridge owner key. */
static void print_breaking(tslock_lock *l, const char *v, int64_t ttl_ms)
{
    char token[40];

    if (cli_verbosity < 0)
        return;
    print_raw("value", v);
    print_server_ttl(ttl_ms);
    if (tslock_lock_peek_owner(l, token, sizeof(token)) == TSLOCK_OK
        && token[0] != '\0')
        printf("owner key: %s (deleted with it)\n", tslock_lock_owner_key(l));
    fflush(stdout);
}

/* "delete ... ? [y/N]" on the terminal; 1 only for y or yes. */
static int confirmed(const char *key, const char *value)
{
    char answer[16];

    fprintf(stderr, "tslock: delete '%s' holding \"%.200s\"? [y/N] ", key,
            value);
    fflush(stderr);
    if (fgets(answer, sizeof(answer), stdin) == NULL)
        return 0;
    answer[strcspn(answer, "\r\n")] = '\0';
    return strcasecmp(answer, "y") == 0 || strcasecmp(answer, "yes") == 0;
}

static int break_value(tslock_client *c, tslock_lock *l, const char *key,
                       const char *value)
{
    int rc = tslock_lock_break(l, value);

    if (rc == TSLOCK_OK) {
        cli_info("broke '%s': deleted \"%.200s\"", key, value);
        return CLI_EXIT_OK;
    }
    if (rc == TSLOCK_ELOST) {
        cli_error("%s", tslock_client_errstr(c));
        return CLI_EXIT_NOT_BROKEN;
    }
    return cli_fail(c, rc, "cannot break the lock");
}

/*
 * Read the key into value (PEEK_SIZE bytes) and show it; CLI_EXIT_OK
 * when there is something to delete: the key exists and, with
 * --if-value, holds that value now.
 */
static int read_for_break(const struct cli_options *o, tslock_client *c,
                          tslock_lock *l, const char *key, char *value)
{
    int64_t ttl_ms = -2;
    int rc = tslock_lock_peek(l, value, PEEK_SIZE, &ttl_ms);

    if (rc != TSLOCK_OK)
        return cli_fail(c, rc, "cannot read the lock");
    if (ttl_ms == -2) {
        cli_error("'%s' is free: nothing to break", key);
        return CLI_EXIT_NOT_BROKEN;
    }
    if (strlen(value) >= PEEK_SIZE - 1) {
        cli_error("the value of '%s' is too long to compare", key);
        return CLI_EXIT_SOFTWARE;
    }
    print_breaking(l, value, ttl_ms);
    if (o->if_value != NULL && strcmp(value, o->if_value) != 0) {
        cli_error("'%s' holds another value than --if-value: nothing "
                  "deleted",
                  key);
        return CLI_EXIT_NOT_BROKEN;
    }
    return CLI_EXIT_OK;
}

/*
 * Read the key, show it, and delete that exact value (or --if-value's).
 * Off a terminal nobody can confirm, so the value must come with the
 * command: a script never deletes a lock it has not seen.
 */
int cli_break(const struct cli_options *o, const char *key)
{
    static char value[PEEK_SIZE];
    int interactive = isatty(0) && isatty(2);
    tslock_client *c;
    tslock_lock *l;
    int status;

    if (!interactive && o->if_value == NULL)
        return cli_usage_error("break needs --if-value VALUE when not on a "
                               "terminal (nobody can confirm): it deletes "
                               "'%s' only while it holds VALUE",
                               key);
    status = open_lock(o, key, NULL, &c, &l);
    if (status == CLI_EXIT_OK)
        status = read_for_break(o, c, l, key, value);
    if (status == CLI_EXIT_OK && interactive && !confirmed(key, value)) {
        cli_error("not confirmed: '%s' left as it is", key);
        status = CLI_EXIT_NOT_BROKEN;
    }
    /* The library deletes only while the key still holds what was read. */
    if (status == CLI_EXIT_OK)
        status = break_value(c, l, key, value);
    close_lock(c, l);
    return status;
}
