/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * once.c - scheduled jobs: tslock --once-per PERIOD KEY -- COMMAND runs
 * COMMAND at most once per period, however far apart the hosts fire, by
 * keeping a record of each period's run beside the lock ("{KEY}:once",
 * and the finished runs in the list "{KEY}:once:history"), read and
 * written only while the lock is held.  Also the history form.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hiredis_compat.h"

#include "cli.h"

#define RECORD_SIZE 512

/* One run as recorded: "period=P host=H pid=N start=MS end=MS status=S". */
struct once_record {
    int64_t period;
    char host[256];
    long pid;
    int64_t start, end;
    char status[32]; /* running, ok, exit:N, signal:N, lost, died */
};

struct cli_once {
    const struct cli_options *o;
    redisContext *ctx;
    char *rec_key, *hist_key;
    int have_time; /* TIME (2.6 and later): periods by the server's clock */
    int keeps_ttl; /* 2.2 and later: a list's TTL survives LPUSH */
    struct once_record run;
};

/* "{key}<suffix>", or "key<suffix>" when key has a hash tag already. */
static char *companion(const char *key, const char *suffix)
{
    int tagged = strchr(key, '{') != NULL || strchr(key, '}') != NULL;
    size_t n = strlen(key) + strlen(suffix) + 3;
    char *s = malloc(n);

    if (s != NULL)
        snprintf(s, n, tagged ? "%s%s" : "{%s}%s", key, suffix);
    return s;
}

/* Unix milliseconds as 2026-11-26T02:00:00.000Z. */
static void iso_time(int64_t ms, char *buf, size_t size)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char date[32];

    if (ms <= 0 || gmtime_r(&t, &tm) == NULL) {
        snprintf(buf, size, "-");
        return;
    }
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%03dZ", date, (int)(ms % 1000));
}

static void record_format(const struct once_record *r, char *buf, size_t size)
{
    snprintf(buf, size,
             "period=%" PRId64 " host=%s pid=%ld start=%" PRId64 " end=%" PRId64
             " status=%s",
             r->period, r->host, r->pid, r->start, r->end, r->status);
}

/* 0, or -1 for text that is not a record. */
static int record_parse(const char *text, struct once_record *r)
{
    long long period, start, end;

    memset(r, 0, sizeof(*r));
    if (sscanf(text,
               "period=%lld host=%255s pid=%ld start=%lld end=%lld "
               "status=%31s",
               &period, r->host, &r->pid, &start, &end, r->status)
        != 6)
        return -1;
    r->period = period;
    r->start = start;
    r->end = end;
    return 0;
}

/* The server's clock by TIME where it has one, else ours. */
static int64_t once_now(struct cli_once *w)
{
    redisReply *r;
    int64_t ms = cli_wall_ms();

    if (!w->have_time)
        return ms;
    r = cli_raw_command(w->ctx, "TIME");
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        ms = strtoll(r->element[0]->str, NULL, 10) * 1000
             + strtoll(r->element[1]->str, NULL, 10) / 1000;
    if (r != NULL)
        freeReplyObject(r);
    return ms;
}

/* One command whose reply is only checked: 0, or an exit status. */
static int once_command(struct cli_once *w, const char *what, int argc,
                        const char **argv)
{
    redisReply *r = cli_raw_reply(
        w->ctx, what, cli_raw_command_argv(w->ctx, argc, argv, NULL));

    if (r == NULL)
        return CLI_EXIT_SOFTWARE;
    freeReplyObject(r);
    return 0;
}

/* Seconds for n periods, rounded up: EXPIRE exists on every version. */
static void keep_seconds(const struct cli_once *w, char *buf, size_t size)
{
    int64_t ms = w->o->keep_periods * w->o->once_per_ms;

    snprintf(buf, size, "%" PRId64, (ms + 999) / 1000);
}

/* SET the record, and let it expire after --keep-periods periods. */
static int record_write(struct cli_once *w, const struct once_record *r)
{
    char text[RECORD_SIZE], secs[24];
    const char *set[3] = {"SET", w->rec_key, text};
    const char *exp[3] = {"EXPIRE", w->rec_key, secs};
    int status;

    record_format(r, text, sizeof(text));
    keep_seconds(w, secs, sizeof(secs));
    status = once_command(w, "SET of the run's record", 3, set);
    return status != 0 ? status
                       : once_command(w, "EXPIRE of the run's record", 3, exp);
}

/*
 * A finished run goes to the history list, cut to --keep-periods entries.
 * On Redis 2.0 a write deletes a key that has a TTL, so there the list
 * only has its length bounded, not a TTL.
 */
static int history_push(struct cli_once *w, const struct once_record *r)
{
    char text[RECORD_SIZE], last[24], secs[24];
    const char *push[3] = {"LPUSH", w->hist_key, text};
    const char *trim[4] = {"LTRIM", w->hist_key, "0", last};
    const char *exp[3] = {"EXPIRE", w->hist_key, secs};
    int status;

    record_format(r, text, sizeof(text));
    snprintf(last, sizeof(last), "%" PRId64, w->o->keep_periods - 1);
    keep_seconds(w, secs, sizeof(secs));
    status = once_command(w, "LPUSH of the history", 3, push);
    if (status == 0)
        status = once_command(w, "LTRIM of the history", 4, trim);
    if (status == 0 && w->keeps_ttl)
        status = once_command(w, "EXPIRE of the history", 3, exp);
    return status;
}

/* The last run's record: 1 read, 0 none (or unreadable), -1 an error. */
static int record_read(struct cli_once *w, struct once_record *r)
{
    const char *get[2] = {"GET", w->rec_key};
    redisReply *rep = cli_raw_reply(w->ctx, "GET of the run's record",
                                    cli_raw_command_argv(w->ctx, 2, get, NULL));
    int found;

    if (rep == NULL)
        return -1;
    found = rep->type == REDIS_REPLY_STRING && record_parse(rep->str, r) == 0;
    freeReplyObject(rep);
    return found;
}

static void free_once(struct cli_once *w)
{
    if (w == NULL)
        return;
    if (w->ctx != NULL)
        tslock_conn_free(w->ctx);
    free(w->rec_key);
    free(w->hist_key);
    free(w);
}

/* Connect, name the keys, learn what the server can do. */
static int open_once(const struct cli_options *o, const char *key,
                     struct cli_once **out)
{
    struct cli_once *w = calloc(1, sizeof(*w));
    int major = 0, minor = 0, status;

    *out = w;
    if (w == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    w->o = o;
    w->rec_key = companion(key, ":once");
    w->hist_key = companion(key, ":once:history");
    if (w->rec_key == NULL || w->hist_key == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    status = cli_raw_connect(o, 1, &w->ctx);
    if (status == 0)
        status = cli_raw_version(w->ctx, &major, &minor, NULL);
    w->have_time = major > 2 || (major == 2 && minor >= 6);
    w->keeps_ttl = major > 2 || (major == 2 && minor >= 2);
    return status;
}

/* Floor division: periods before 1970 are not expected, but stay exact. */
static int64_t period_of(const struct cli_options *o, int64_t now)
{
    int64_t t = now + o->takeover_grace_ms - o->period_offset_ms;

    return t >= 0 ? t / o->once_per_ms
                  : -((-t + o->once_per_ms - 1) / o->once_per_ms);
}

/* "skipped ..." naming who ran the period, when, and how it ended. */
static void say_skipped(const struct cli_once *w, const char *key,
                        const struct once_record *r, const char *why)
{
    char p[64], s[64], e[64];

    iso_time(w->run.period * w->o->once_per_ms + w->o->period_offset_ms, p,
             sizeof(p));
    iso_time(r->start, s, sizeof(s));
    iso_time(r->end, e, sizeof(e));
    cli_info("skipped '%s': the period from %s %s on %s (pid %ld), started "
             "%s, ended %s, status %s",
             key, p, why, r->host, r->pid, s, e, r->status);
}

/*
 * Whether this period's record lets us run.  We hold the lock, so a
 * record still saying "running" is a run whose holder died: its lease
 * ended before it wrote how it ended.  That is recorded first.
 */
static int decide(struct cli_once *w, const char *key, struct once_record *r)
{
    int status;

    if (r->period > w->run.period) {
        say_skipped(w, key, r, "is past: a later period already ran");
        return CLI_EXIT_SKIPPED;
    }
    if (r->period < w->run.period)
        return CLI_EXIT_OK;
    if (strcmp(r->status, "running") == 0) {
        snprintf(r->status, sizeof(r->status), "died");
        status = record_write(w, r);
        if (status == 0)
            status = history_push(w, r);
        if (status != 0)
            return status;
        cli_error("the run of '%s' on %s (pid %ld) died: its lease ended "
                  "before it recorded how it ended",
                  key, r->host, r->pid);
    }
    if (strcmp(r->status, "ok") == 0) {
        say_skipped(w, key, r, "ran already");
        return CLI_EXIT_SKIPPED;
    }
    if (!w->o->retry_failed) {
        say_skipped(w, key, r, "failed, not retried without --retry-failed,");
        return CLI_EXIT_SKIPPED;
    }
    cli_info("retrying the failed run of '%s' on %s (--retry-failed)", key,
             r->host);
    return CLI_EXIT_OK;
}

/*
 * COMMAND learns the period it runs for: $TSLOCK_PERIOD (its number) and
 * $TSLOCK_PERIOD_START (Unix ms).  Set before any thread or fork, as
 * setenv must be.
 */
static int export_period(const struct cli_once *w)
{
    char n[24], start[24];

    snprintf(n, sizeof(n), "%" PRId64, w->run.period);
    snprintf(start, sizeof(start), "%" PRId64,
             w->run.period * w->o->once_per_ms + w->o->period_offset_ms);
    if (setenv("TSLOCK_PERIOD", n, 1) != 0
        || setenv("TSLOCK_PERIOD_START", start, 1) != 0) {
        cli_error("cannot set TSLOCK_PERIOD: %s", strerror(errno));
        return CLI_EXIT_OSERR;
    }
    return CLI_EXIT_OK;
}

int cli_once_begin(const struct cli_options *o, const char *key,
                   struct cli_once **out)
{
    struct cli_once *w = NULL;
    struct once_record last;
    int found, status = open_once(o, key, &w);

    *out = NULL;
    if (status != 0) {
        free_once(w);
        return status;
    }
    w->run.period = period_of(o, once_now(w));
    found = record_read(w, &last);
    status = found < 0 ? CLI_EXIT_SOFTWARE
             : found   ? decide(w, key, &last)
                       : CLI_EXIT_OK;
    if (status == CLI_EXIT_OK) {
        if (o->host_name != NULL)
            snprintf(w->run.host, sizeof(w->run.host), "%s", o->host_name);
        else if (gethostname(w->run.host, sizeof(w->run.host) - 1) != 0
                 || w->run.host[0] == '\0')
            snprintf(w->run.host, sizeof(w->run.host), "unknown");
        w->run.host[strcspn(w->run.host, " \t\r\n")] = '\0';
        w->run.pid = (long)getpid();
        w->run.start = once_now(w);
        snprintf(w->run.status, sizeof(w->run.status), "running");
        status = record_write(w, &w->run);
    }
    if (status == CLI_EXIT_OK)
        status = export_period(w);
    if (status != CLI_EXIT_OK) {
        free_once(w);
        return status;
    }
    *out = w;
    return CLI_EXIT_OK;
}

void cli_once_end(struct cli_once *w, int status, int lost)
{
    if (w == NULL)
        return;
    w->run.end = once_now(w);
    if (lost)
        snprintf(w->run.status, sizeof(w->run.status), "lost");
    else if (status == 0)
        snprintf(w->run.status, sizeof(w->run.status), "ok");
    else if (status > CLI_EXIT_SIGNAL_BASE)
        snprintf(w->run.status, sizeof(w->run.status), "signal:%d",
                 status - CLI_EXIT_SIGNAL_BASE);
    else
        snprintf(w->run.status, sizeof(w->run.status), "exit:%d", status);
    if (record_write(w, &w->run) == 0)
        (void)history_push(w, &w->run);
    free_once(w);
}

static void print_run(const struct once_record *r)
{
    char s[64], e[64];

    iso_time(r->start, s, sizeof(s));
    iso_time(r->end, e, sizeof(e));
    printf("%-14" PRId64 " %-24s %-24s %-10s %s (pid %ld)\n", r->period, s, e,
           r->status, r->host, r->pid);
}

int cli_history(const struct cli_options *o, const char *key)
{
    struct cli_once *w = NULL;
    struct once_record r;
    char last[24];
    const char *range[4] = {"LRANGE", NULL, "0", last};
    redisReply *rep = NULL;
    size_t i;
    int status = open_once(o, key, &w);

    if (status == 0)
        printf("%-14s %-24s %-24s %-10s %s\n", "PERIOD", "STARTED", "ENDED",
               "STATUS", "HOST");
    /* A run still going (or dead, not yet found so) is not in the list. */
    if (status == 0 && record_read(w, &r) == 1
        && strcmp(r.status, "running") == 0)
        print_run(&r);
    if (status == 0) {
        range[1] = w->hist_key;
        snprintf(last, sizeof(last), "%" PRId64, o->history_last - 1);
        rep = cli_raw_reply(w->ctx, "LRANGE of the history",
                            cli_raw_command_argv(w->ctx, 4, range, NULL));
        status = rep == NULL ? CLI_EXIT_SOFTWARE : 0;
    }
    for (i = 0;
         rep != NULL && rep->type == REDIS_REPLY_ARRAY && i < rep->elements;
         i++)
        if (rep->element[i]->type == REDIS_REPLY_STRING
            && record_parse(rep->element[i]->str, &r) == 0)
            print_run(&r);
    if (rep != NULL)
        freeReplyObject(rep);
    free_once(w);
    return status;
}
