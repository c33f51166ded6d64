/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * migration.c - the record of legacy writers kept in Redis beside the
 * locks, and survey --since, which reads it.  The exporter notes each
 * legacy write MONITOR shows and flushes once a second:
 *
 *   tslock:legacy-writers    sorted set; member "ADDRESS KEY" (the
 *                            client's host, without its port; "?" before
 *                            Redis 2.6), score: last seen, server ms;
 *                            the newest --record-max members are kept
 *   tslock:legacy-recorders  hash; field: who recorded ("HOST ADDR:PORT"
 *                            of the exporter), value "FIRST_MS LAST_MS",
 *                            the span its MONITOR stream was on
 *
 * doc/observability.md documents the layout and its bounds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hiredis_compat.h"

#include "cli.h"

#define RECORD_KEY    "tslock:legacy-writers"
#define RECORDERS_KEY "tslock:legacy-recorders"
#define MAX_PENDING   4096  /* (address, key) pairs between two flushes */
#define GAP_MS        60000 /* a recorder silent longer starts a new span */

/* "127.0.0.1:51234" -> "127.0.0.1"; "unix:/s" and "?" stay as they are. */
static size_t host_len(const char *client)
{
    const char *colon = strrchr(client, ':');

    if (strncmp(client, "unix:", 5) == 0 || colon == NULL)
        return strlen(client);
    return (size_t)(colon - client);
}

void cli_record_note(struct cli_legacy_record *r,
                     const struct cli_legacy_write *w)
{
    size_t h = host_len(w->client), n = h + 1 + w->key_len;
    struct cli_record_entry *grown;
    int i;

    for (i = 0; i < r->n; i++)
        if (r->pending[i].len == n
            && memcmp(r->pending[i].member, w->client, h) == 0
            && r->pending[i].member[h] == ' '
            && memcmp(r->pending[i].member + h + 1, w->key, w->key_len) == 0) {
            if (w->at_ms > r->pending[i].at_ms)
                r->pending[i].at_ms = w->at_ms;
            return;
        }
    if (r->n == MAX_PENDING) {
        r->dropped++;
        return;
    }
    if (r->n == r->cap) {
        int cap = r->cap == 0 ? 64 : r->cap * 2;
        grown = realloc(r->pending, (size_t)cap * sizeof(*grown));
        if (grown == NULL) {
            r->dropped++;
            return;
        }
        r->pending = grown;
        r->cap = cap;
    }
    if ((r->pending[r->n].member = malloc(n)) == NULL) {
        r->dropped++;
        return;
    }
    memcpy(r->pending[r->n].member, w->client, h);
    r->pending[r->n].member[h] = ' ';
    memcpy(r->pending[r->n].member + h + 1, w->key, w->key_len);
    r->pending[r->n].len = n;
    r->pending[r->n].at_ms = w->at_ms;
    r->n++;
}

static void clear_pending(struct cli_legacy_record *r)
{
    int i;

    for (i = 0; i < r->n; i++)
        free(r->pending[i].member);
    r->n = 0;
}

void cli_record_free(struct cli_legacy_record *r)
{
    clear_pending(r);
    free(r->pending);
    r->pending = NULL;
    r->cap = 0;
}

/* The span this recorder continues: its old FIRST_MS unless a gap. */
static void learn_first(redisContext *ctx, struct cli_legacy_record *r,
                        int64_t now_ms)
{
    redisReply *rep =
        cli_raw_command(ctx, "HGET " RECORDERS_KEY " %s", r->name);
    long long first = 0, last = 0;

    r->first_ms = now_ms;
    if (rep != NULL && rep->type == REDIS_REPLY_STRING
        && sscanf(rep->str, "%lld %lld", &first, &last) == 2
        && now_ms - last < GAP_MS && first <= now_ms)
        r->first_ms = first;
    freeReplyObject(rep);
}

int cli_record_flush(struct redisContext *ctx, struct cli_legacy_record *r,
                     const char *listen, int64_t server_now_ms, int monitor_on,
                     int64_t max)
{
    char host[256] = "?", span[64];
    redisReply *rep;
    int i, n = 0, status = 0;

    if (r->name[0] == '\0') {
        (void)gethostname(host, sizeof(host) - 1);
        snprintf(r->name, sizeof(r->name), "%s %s", host, listen);
    }
    if (monitor_on && r->first_ms == 0)
        learn_first(ctx, r, server_now_ms);
    for (i = 0; i < r->n; i++, n++)
        cli_raw_append(ctx, "ZADD " RECORD_KEY " %" PRId64 " %b",
                       r->pending[i].at_ms, r->pending[i].member,
                       r->pending[i].len);
    if (r->n > 0) {
        cli_raw_append(ctx, "ZREMRANGEBYRANK " RECORD_KEY " 0 %" PRId64,
                       -(max + 1));
        n++;
    }
    if (monitor_on) {
        snprintf(span, sizeof(span), "%" PRId64 " %" PRId64, r->first_ms,
                 server_now_ms);
        cli_raw_append(ctx, "HSET " RECORDERS_KEY " %s %s", r->name, span);
        n++;
    } else
        r->first_ms = 0; /* the next span starts when MONITOR is back */
    for (i = 0; i < n; i++) {
        rep = NULL;
        if (tslock_conn_get_reply(ctx, (void **)&rep) != TSLOCK_OK) {
            cli_error("writing the legacy-writer record: %s", ctx->errstr);
            return -1;
        }
        if (rep->type == REDIS_REPLY_ERROR && status == 0) {
            cli_error("writing the legacy-writer record: the server said: %s",
                      rep->str);
            status = -1;
        }
        freeReplyObject(rep);
    }
    clear_pending(r);
    return status;
}

/* ---- survey --since */

struct since_key {
    char *key;
    size_t len;
    int64_t last_ms;
    char addrs[512]; /* "a,b,c", cut at the size */
};

/* 2026-11-26T22:40:01Z */
static void utc(int64_t ms, char *buf, size_t size)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL
        || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, size, "%" PRId64, ms);
}

static void ago(int64_t ms, char *buf, size_t size)
{
    int64_t s = ms < 0 ? 0 : ms / 1000;

    if (s < 120)
        snprintf(buf, size, "%" PRId64 "s", s);
    else if (s < 7200 && s % 3600 != 0)
        snprintf(buf, size, "%" PRId64 "m", s / 60);
    else if (s < 172800)
        snprintf(buf, size, "%" PRId64 "h", s / 3600);
    else
        snprintf(buf, size, "%" PRId64 "d", s / 86400);
}

static struct since_key *find_key(struct since_key *ks, size_t n,
                                  const char *key, size_t len)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (ks[i].len == len && memcmp(ks[i].key, key, len) == 0)
            return &ks[i];
    return NULL;
}

/* Fold the record's members into one row per key, newest first. */
static struct since_key *group(const redisReply *r, size_t *out_n)
{
    struct since_key *ks = calloc(r->elements / 2 + 1, sizeof(*ks)), *k;
    size_t i, n = 0, alen, used;

    if (ks == NULL)
        return NULL;
    /* ZREVRANGEBYSCORE: newest first, so the first sight is the last. */
    for (i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *m = r->element[i];
        const char *sp = memchr(m->str, ' ', m->len);

        if (m->type != REDIS_REPLY_STRING || sp == NULL)
            continue;
        alen = (size_t)(sp - m->str);
        k = find_key(ks, n, sp + 1, m->len - alen - 1);
        if (k == NULL) {
            k = &ks[n++];
            k->key = sp + 1 == m->str + m->len ? (char *)"" : (char *)(sp + 1);
            k->len = m->len - alen - 1;
            k->last_ms = strtoll(r->element[i + 1]->str, NULL, 10);
        }
        used = strlen(k->addrs);
        if (used + alen + 2 < sizeof(k->addrs))
            snprintf(k->addrs + used, sizeof(k->addrs) - used, "%s%.*s",
                     used > 0 ? "," : "", (int)alen, m->str);
    }
    *out_n = n;
    return ks;
}

static void print_rows(const struct cli_options *o, struct since_key *ks,
                       size_t n, int64_t now)
{
    char when[32], past[16];
    size_t i;

    if (!o->survey_json && n > 0)
        printf("%-20s %6s  %-24s %s\n", "LAST_SEEN", "AGO", "ADDRESSES", "KEY");
    for (i = 0; i < n; i++) {
        if (o->survey_json) {
            fputs("{\"key\":", stdout);
            cli_print_json_string(ks[i].key, ks[i].len);
            printf(",\"last_seen_ms\":%" PRId64 ",\"addresses\":",
                   ks[i].last_ms);
            cli_print_json_string(ks[i].addrs, strlen(ks[i].addrs));
            fputs("}\n", stdout);
            continue;
        }
        utc(ks[i].last_ms, when, sizeof(when));
        ago(now - ks[i].last_ms, past, sizeof(past));
        printf("%-20s %6s  %-24s ", when, past, ks[i].addrs);
        cli_print_quoted(ks[i].key, ks[i].len, 200);
        putchar('\n');
    }
}

/* Who recorded, and how much of the window their spans cover. */
static int64_t print_recorders(const struct cli_options *o, redisReply *h,
                               int64_t from, int64_t now)
{
    char a[32], b[32];
    int64_t covered = 0;
    size_t i;

    for (i = 0; h != NULL && i + 1 < h->elements; i += 2) {
        long long first = 0, last = 0;

        if (sscanf(h->element[i + 1]->str, "%lld %lld", &first, &last) != 2
            || last < from)
            continue;
        covered += last - (first > from ? first : from);
        if (o->survey_json)
            continue;
        utc(first, a, sizeof(a));
        utc(last, b, sizeof(b));
        printf("recorded by %s from %s to %s\n", h->element[i]->str, a, b);
    }
    (void)now;
    return covered;
}

static int since_report(const struct cli_options *o, redisContext *ctx,
                        int64_t now)
{
    int64_t from = now - o->since_ms, covered;
    redisReply *r, *h;
    struct since_key *ks;
    size_t n = 0;
    char window[16];

    r = cli_raw_reply(ctx, "ZREVRANGEBYSCORE",
                      cli_raw_command(ctx,
                                      "ZREVRANGEBYSCORE " RECORD_KEY
                                      " +inf %" PRId64 " WITHSCORES",
                                      from));
    if (r == NULL)
        return CLI_EXIT_SOFTWARE;
    h = cli_raw_reply(ctx, "HGETALL",
                      cli_raw_command(ctx, "HGETALL " RECORDERS_KEY));
    if ((ks = group(r, &n)) == NULL) {
        freeReplyObject(r);
        freeReplyObject(h);
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    print_rows(o, ks, n, now);
    ago(o->since_ms, window, sizeof(window));
    covered = print_recorders(o, h, from, now);
    if (o->survey_json)
        printf("{\"summary\":{\"since_ms\":%" PRId64 ",\"keys\":%zu,"
               "\"recorded_ms\":%" PRId64 "}}\n",
               o->since_ms, n, covered);
    else {
        printf("%zu key%s had legacy writers in the last %s\n", n,
               n == 1 ? "" : "s", window);
        if (covered == 0)
            printf("warning: no recorder (tslock exporter) ran in this "
                   "window: the record cannot say who wrote\n");
        else if (covered < o->since_ms * 9 / 10)
            printf("warning: the recorders covered %" PRId64 "%% of the "
                   "window\n",
                   covered * 100 / o->since_ms);
    }
    free(ks);
    freeReplyObject(r);
    freeReplyObject(h);
    return 0;
}

int cli_survey_since(const struct cli_options *o)
{
    redisContext *ctx = NULL;
    int64_t offset = 0;
    int status = cli_raw_connect(o, 1, &ctx);

    if (status == 0) {
        /* The record holds the server's time; so does the window. */
        if (!cli_raw_clock_offset(ctx, &offset))
            offset = 0;
        status = since_report(o, ctx, cli_wall_ms() + offset);
    }
    if (ctx != NULL)
        tslock_conn_free(ctx);
    if (status == 0 && fflush(stdout) != 0) {
        cli_error("cannot write the report");
        status = CLI_EXIT_OSERR;
    }
    return status;
}
