/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * survey.c - the survey form: list the locks already in a server, read
 * only.  It owns the key walk (SCAN, or KEYS on request where SCAN is
 * missing), the pipelined reads, the kind, dialect and state of each
 * key, and the table, JSON Lines and summary it prints.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hiredis_compat.h"

#include "cli.h"

/* Keys asked of SCAN per call: big batches keep the round trips few. */
#define SCAN_COUNT "1000"
/* KEYS answers at once; its keys are read in batches of this many. */
#define KEYS_BATCH 1000

/*
 * A key's kind: the scheme and unit tslock would read it in.  The JSON
 * field and the exporter's label that carry it are named "dialect", as
 * they were before dialects had presets; the table heads it KIND.
 */
enum dialect {
    D_TOKEN,
    D_MS,
    D_S,
    D_FLOAT,
    D_BRIDGE_MS,
    D_BRIDGE_S,
    D_BRIDGE_FLOAT,
    D_UNKNOWN, /* looks like a lock, but no dialect reads it */
    D_NOT_A_LOCK,
    N_DIALECTS
};
static const char *const dialect_names[N_DIALECTS] = {
    "token",    "timestamp-ms", "timestamp-s",   "timestamp-float", "bridge-ms",
    "bridge-s", "bridge-float", "unknown-stamp", "not-a-lock"};

/*
 * never: a "never expires" sentinel (redis-objects' "1", resque's
 * "true"); unreadable: an unknown stamp, which tslock never takes over.
 */
enum state {
    S_LIVE,
    S_EXPIRED,
    S_NO_TTL,
    S_NEVER,
    S_UNREADABLE,
    S_NONE,
    N_STATES
};
static const char *const state_names[N_STATES] = {
    "live", "expired", "no-ttl", "never", "unreadable", "-"};

/* One key of a batch, as read. */
struct entry {
    const char *key; /* borrowed from the SCAN or KEYS reply */
    size_t len;
    enum dialect dialect;
    enum state state;
    int64_t expires_ms; /* 0: unknown (a token without a TTL) */
    int64_t ttl_ms;     /* -1: none */
    int skip;           /* vanished meanwhile, or not a lock without --all */
    char holder[24];    /* a token's first bytes, for tslock top; "" else */
    char stamp[96];     /* the dialects it matches, "unknown-stamp", or "" */
};

struct survey {
    redisContext *ctx;
    const struct cli_options *o;
    int has_pttl; /* PTTL from 2.6; TTL in whole seconds before */
    int64_t now_ms;
    long counts[N_DIALECTS][N_STATES];
    struct cli_survey_tally named; /* only .named and .n_named are used */
    long seen;
    int header_done; /* the table's header, once the walk has begun well */
    int cluster;     /* INFO said cluster_enabled:1 */
    int has_time;    /* TIME answered: clock_offset_ms is the server's
                        clock minus this host's */
    int64_t clock_offset_ms;
    size_t nodes; /* masters walked on a cluster */
    /* cli_survey_locks(): each lock to this, nothing printed, and the
       walk stops after max_keys keys (0: no bound). */
    cli_survey_each_fn each;
    void *each_arg;
    long max_keys;
    int cut; /* the walk stopped at max_keys before SCAN's end */
    /* cli_survey_step (the exporter): count only, and the fair lines. */
    int quiet;
    long waiters;
};

/* Whether the server has PTTL (2.6.0), from INFO's redis_version. */
static int learn_version(struct survey *s)
{
    int major = 0, minor = 0;
    int status = cli_raw_version(s->ctx, &major, &minor, &s->cluster);

    if (status != 0)
        return status;
    s->has_pttl = major > 2 || (major == 2 && minor >= 6);
    cli_verbose("server: Redis %d.%d; %s", major, minor,
                s->has_pttl ? "PTTL" : "TTL (no PTTL before 2.6)");
    return 0;
}

/*
 * The companions tslock makes beside a lock key are not locks.  (The
 * ":released" name is a channel, not a key, so a key named so is judged
 * by its value like any other.)
 */
static int is_companion(const char *key, size_t len)
{
    static const char *const suffixes[] = {":owner", ":fence", ":queue",
                                           ":alive", ":queue-seq"};
    size_t i, n;

    for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        n = strlen(suffixes[i]);
        if (len >= n && memcmp(key + len - n, suffixes[i], n) == 0)
            return 1;
    }
    return 0;
}

/*
 * The owner key's name as tslock_lock_owner_key() makes it: "{KEY}:owner",
 * or "KEY:owner" when KEY already has a hash tag or a '}'.  Caller frees.
 */
static char *owner_key_name(const char *key, size_t len, size_t *out_len)
{
    const char *open = memchr(key, '{', len);
    const char *close =
        open != NULL ? memchr(open + 1, '}', len - (open + 1 - key)) : NULL;
    int bare = (close != NULL && close > open + 1) || memchr(key, '}', len);
    char *name = malloc(len + sizeof(":owner") + 2);

    if (name == NULL)
        return NULL;
    if (bare) {
        memcpy(name, key, len);
        memcpy(name + len, ":owner", 6);
        *out_len = len + 6;
    } else {
        name[0] = '{';
        memcpy(name + 1, key, len);
        memcpy(name + 1 + len, "}:owner", 7);
        *out_len = len + 8;
    }
    return name;
}

/* Read the next pipelined reply; NULL when the connection failed. */
static redisReply *next_reply(struct survey *s)
{
    void *r = NULL;

    if (tslock_conn_get_reply(s->ctx, &r) != REDIS_OK) {
        cli_error("reading the keys: %s", s->ctx->errstr);
        return NULL;
    }
    return r;
}

/* A lock's time left from its TTL reply, in ms; -1 for none or absent. */
static int64_t ttl_of(const struct survey *s, const redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer < 0)
        return -1;
    return s->has_pttl ? r->integer : r->integer * 1000;
}

static void classify_value(struct survey *s, struct entry *e,
                           const redisReply *value)
{
    struct cli_stamp st;

    switch (cli_stamp_name(e->key, e->len, value->str, value->len, &st)) {
    case CLI_STAMP_NONE:
        return; /* not a lock: as set by the caller */
    case CLI_STAMP_UNKNOWN:
        e->dialect = D_UNKNOWN;
        e->state = S_UNREADABLE;
        snprintf(e->stamp, sizeof(e->stamp), "%s", st.dialect);
        return;
    default:
        break;
    }
    if (st.kind == CLI_STAMP_TOKEN) {
        snprintf(e->holder, sizeof(e->holder), "%.*s",
                 (int)(value->len < sizeof(e->holder) - 1
                           ? value->len
                           : sizeof(e->holder) - 1),
                 value->str);
        e->dialect = D_TOKEN;
        e->state = e->ttl_ms < 0 ? S_NO_TTL : S_LIVE;
        e->expires_ms = e->ttl_ms < 0 ? 0 : s->now_ms + e->ttl_ms;
        return;
    }
    e->dialect = st.unit == TSLOCK_UNIT_S    ? D_S
                 : st.unit == TSLOCK_UNIT_MS ? D_MS
                                             : D_FLOAT;
    snprintf(e->stamp, sizeof(e->stamp), "%s", st.dialect);
    if (st.expires_ms == INT64_MAX) {
        e->state = S_NEVER; /* held until a DEL: no expiry to give */
        return;
    }
    e->expires_ms = st.expires_ms;
    /* A stamp in the past is what a legacy client takes over (GETSET). */
    e->state = st.expires_ms <= s->now_ms ? S_EXPIRED : S_LIVE;
}

/*
 * One key from its GET and TTL replies.  GET on a key of another type
 * answers WRONGTYPE, which spares a TYPE call per key.  Returns 0, or -1
 * on an error the server gave for another reason (printed).
 */
static int classify(struct survey *s, struct entry *e, const redisReply *value,
                    const redisReply *ttl)
{
    e->dialect = D_NOT_A_LOCK;
    e->state = S_NONE;
    e->expires_ms = 0;
    e->stamp[0] = '\0';
    e->ttl_ms = ttl_of(s, ttl);
    e->skip = 0;
    if (value->type == REDIS_REPLY_NIL) {
        e->skip = 1; /* gone between SCAN and GET */
        return 0;
    }
    if (value->type == REDIS_REPLY_ERROR) {
        /* Servers before 2.8 say it without the WRONGTYPE prefix. */
        if (strncmp(value->str, "WRONGTYPE", 9) == 0
            || strstr(value->str, "wrong kind of value") != NULL)
            return 0;
        cli_error("GET: the server said: %s", value->str);
        return -1;
    }
    if (value->type == REDIS_REPLY_STRING && !is_companion(e->key, e->len))
        classify_value(s, e, value);
    return 0;
}

/* Round trip one: GET and PTTL (TTL before 2.6) of every key at once. */
static int read_values(struct survey *s, struct entry *es, size_t n)
{
    const char *ttl = s->has_pttl ? "PTTL %b" : "TTL %b";
    redisReply *value, *left;
    size_t i;
    int bad = 0;

    for (i = 0; i < n; i++) {
        cli_raw_append(s->ctx, "GET %b", es[i].key, es[i].len);
        cli_raw_append(s->ctx, ttl, es[i].key, es[i].len);
    }
    s->now_ms = cli_wall_ms();
    for (i = 0; i < n; i++) {
        if ((value = next_reply(s)) == NULL)
            return CLI_EXIT_UNAVAILABLE;
        if ((left = next_reply(s)) == NULL) {
            freeReplyObject(value);
            return CLI_EXIT_UNAVAILABLE;
        }
        if (classify(s, &es[i], value, left) != 0)
            bad = 1;
        freeReplyObject(value);
        freeReplyObject(left);
    }
    return bad ? CLI_EXIT_SOFTWARE : 0;
}

/* Whether a stamp key's dialect is a bridge's: its owner key exists. */
static int stamp_dialect(const struct entry *e)
{
    return e->dialect == D_MS || e->dialect == D_S || e->dialect == D_FLOAT;
}

/* Round trip two: EXISTS on the owner key of every stamp at once. */
static int read_owners(struct survey *s, struct entry *es, size_t n)
{
    redisReply *r;
    size_t i, len;
    char *name;

    for (i = 0; i < n; i++) {
        if (!stamp_dialect(&es[i]))
            continue;
        if ((name = owner_key_name(es[i].key, es[i].len, &len)) == NULL) {
            cli_error("out of memory");
            return CLI_EXIT_OSERR;
        }
        cli_raw_append(s->ctx, "EXISTS %b", name, len);
        free(name);
    }
    for (i = 0; i < n; i++) {
        if (!stamp_dialect(&es[i]))
            continue;
        if ((r = next_reply(s)) == NULL)
            return CLI_EXIT_UNAVAILABLE;
        if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
            es[i].dialect += D_BRIDGE_MS - D_MS;
        freeReplyObject(r);
    }
    return 0;
}

/*
 * The exporter's waiters: ZCARD of every fair line ("{KEY}:queue", a
 * sorted set) in the batch, in one more round trip.
 */
static int is_queue(const struct entry *e)
{
    return e->len > 6 && memcmp(e->key + e->len - 6, ":queue", 6) == 0
           && !e->skip;
}

static int read_waiters(struct survey *s, struct entry *es, size_t n)
{
    redisReply *r;
    size_t i;

    for (i = 0; i < n; i++)
        if (is_queue(&es[i]))
            cli_raw_append(s->ctx, "ZCARD %b", es[i].key, es[i].len);
    for (i = 0; i < n; i++) {
        if (!is_queue(&es[i]))
            continue;
        if ((r = next_reply(s)) == NULL)
            return CLI_EXIT_UNAVAILABLE;
        /* WRONGTYPE: a key of another kind that only ends so. */
        if (r->type == REDIS_REPLY_INTEGER)
            s->waiters += (long)r->integer;
        freeReplyObject(r);
    }
    return 0;
}

/* A key for the table: bytes that are not printable ASCII as \xHH. */
static void print_table_key(const char *key, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)key[i];

        if (c < 0x20 || c >= 0x7f || c == '\\')
            printf("\\x%02x", c);
        else
            putchar(c);
    }
}

/* Time left on the lease: the stamp's for stamps, the TTL's for tokens. */
static int64_t left_ms(const struct survey *s, const struct entry *e)
{
    if (e->dialect == D_NOT_A_LOCK || e->dialect == D_UNKNOWN
        || e->expires_ms == 0)
        return e->ttl_ms;
    return e->expires_ms - s->now_ms;
}

static void print_entry(const struct survey *s, const struct entry *e)
{
    if (s->o->survey_json) {
        fputs("{\"key\":", stdout);
        cli_print_json_string(e->key, e->len);
        printf(",\"dialect\":\"%s\",\"state\":", dialect_names[e->dialect]);
        if (e->state == S_NONE)
            fputs("null", stdout);
        else
            printf("\"%s\"", state_names[e->state]);
        fputs(",\"stamp_dialect\":", stdout);
        if (e->stamp[0] != '\0')
            cli_print_json_string(e->stamp, strlen(e->stamp));
        else
            fputs("null", stdout);
        if (e->expires_ms != 0)
            printf(",\"expires_ms\":%" PRId64, e->expires_ms);
        else
            fputs(",\"expires_ms\":null", stdout);
        if (e->ttl_ms >= 0)
            printf(",\"ttl_ms\":%" PRId64 "}\n", e->ttl_ms);
        else
            fputs(",\"ttl_ms\":null}\n", stdout);
        return;
    }
    printf("%-16s %-10s %11" PRId64 " %11" PRId64 "  %-35s ",
           dialect_names[e->dialect], state_names[e->state], left_ms(s, e),
           e->ttl_ms, e->stamp[0] != '\0' ? e->stamp : "-");
    print_table_key(e->key, e->len);
    putchar('\n');
}

/*
 * The table's header comes with the first rows, not before the walk, so
 * a server without SCAN gets only its error line.
 */
static void print_header(struct survey *s)
{
    if (s->header_done || s->o->survey_json)
        return;
    printf("%-16s %-10s %11s %11s  %-35s %s\n", "KIND", "STATE", "LEFT_MS",
           "TTL_MS", "DIALECT", "KEY");
    s->header_done = 1;
}

/* cli_survey_locks(): hand each lock of a batch over, print nothing. */
static void report_each(struct survey *s, const struct entry *es, size_t n)
{
    struct cli_lock_seen seen;
    size_t i;

    for (i = 0; i < n; i++) {
        if (es[i].skip)
            continue;
        s->seen++;
        if (es[i].dialect == D_NOT_A_LOCK)
            continue;
        seen.key = es[i].key;
        seen.len = es[i].len;
        seen.dialect = dialect_names[es[i].dialect];
        seen.stamp_dialect = es[i].stamp;
        seen.token = es[i].dialect == D_TOKEN;
        seen.never = es[i].state == S_NEVER;
        seen.left_ms = left_ms(s, &es[i]);
        seen.holder = es[i].holder;
        s->each(s->each_arg, &seen);
    }
}

/* Count, and print unless hidden, the keys of one batch. */
static void report_batch(struct survey *s, const struct entry *es, size_t n)
{
    size_t i;

    if (s->each != NULL) {
        report_each(s, es, n);
        return;
    }
    if (!s->quiet)
        print_header(s);

    for (i = 0; i < n; i++) {
        if (es[i].skip)
            continue;
        s->seen++;
        s->counts[es[i].dialect][es[i].state]++;
        if (es[i].stamp[0] != '\0' && es[i].state < CLI_SURVEY_STATES)
            cli_survey_count_named(&s->named, es[i].stamp, es[i].state, 1);
        if (s->quiet)
            continue;
        if (es[i].dialect != D_NOT_A_LOCK || s->o->survey_all)
            print_entry(s, &es[i]);
    }
}

/* Classify and report the n keys of one SCAN or KEYS reply. */
static int survey_batch(struct survey *s, redisReply **keys, size_t n)
{
    struct entry *es;
    size_t i;
    int status;

    if (n == 0)
        return 0;
    if ((es = calloc(n, sizeof(*es))) == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    for (i = 0; i < n; i++) {
        es[i].key = keys[i]->str;
        es[i].len = keys[i]->len;
    }
    status = read_values(s, es, n);
    if (status == 0)
        status = read_owners(s, es, n);
    if (status == 0 && s->quiet)
        status = read_waiters(s, es, n);
    if (status == 0)
        report_batch(s, es, n);
    free(es);
    return status;
}

/* Servers before 2.8 have no SCAN: a clear refusal unless --keys. */
static int no_scan(const struct survey *s)
{
    if (s->each != NULL) {
        cli_error("the server has no SCAN (it came in Redis 2.8), which "
                  "tslock top needs: it never lists keys with KEYS, which "
                  "blocks the server for the whole scan");
        return CLI_EXIT_UNAVAILABLE;
    }
    cli_error("the server has no SCAN (it came in Redis 2.8); only KEYS can "
              "list its keys, and KEYS blocks the server for the whole scan; "
              "pass --keys to use it anyway");
    return CLI_EXIT_UNAVAILABLE;
}

/* The whole keyspace with KEYS, then read in batches. */
static int walk_keys(struct survey *s)
{
    const char *match = s->o->survey_match ? s->o->survey_match : "*";
    redisReply *r = cli_raw_command(s->ctx, "KEYS %s", match);
    size_t i, n;
    int status = 0;

    if ((r = cli_raw_reply(s->ctx, "KEYS", r)) == NULL)
        return cli_raw_failed(s->ctx);
    cli_verbose("KEYS: %zu keys", r->elements);
    for (i = 0; i < r->elements && status == 0; i += n) {
        n = r->elements - i < KEYS_BATCH ? r->elements - i : KEYS_BATCH;
        status = survey_batch(s, r->element + i, n);
    }
    freeReplyObject(r);
    return status;
}

/*
 * One SCAN call: the batch it returned, and the next cursor in cursor.
 * Returns 0, an exit status, or -1 when the server has no SCAN.
 */
static int scan_step(struct survey *s, char *cursor, size_t size)
{
    const char *match = s->o->survey_match ? s->o->survey_match : "*";
    redisReply *r = cli_raw_command(
        s->ctx, "SCAN %s MATCH %s COUNT " SCAN_COUNT, cursor, match);
    int status;

    if (r != NULL && r->type == REDIS_REPLY_ERROR
        && strstr(r->str, "unknown command") != NULL) {
        cli_verbose("SCAN: %s", r->str);
        freeReplyObject(r);
        return -1;
    }
    if ((r = cli_raw_reply(s->ctx, "SCAN", r)) == NULL)
        return cli_raw_failed(s->ctx);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_STRING
        || r->element[1]->type != REDIS_REPLY_ARRAY) {
        cli_error("SCAN: expected [cursor, keys], got another reply");
        freeReplyObject(r);
        return CLI_EXIT_SOFTWARE;
    }
    snprintf(cursor, size, "%s", r->element[0]->str);
    status = survey_batch(s, r->element[1]->element, r->element[1]->elements);
    freeReplyObject(r);
    return status;
}

/* SCAN until the cursor comes back to 0; KEYS where SCAN is missing. */
static int walk(struct survey *s)
{
    char cursor[32] = "0";
    int status;

    do {
        status = scan_step(s, cursor, sizeof(cursor));
        if (status == -1)
            return s->o->survey_keys ? walk_keys(s) : no_scan(s);
    } while (status == 0 && strcmp(cursor, "0") != 0
             && (s->max_keys == 0 || s->seen < s->max_keys));
    s->cut = strcmp(cursor, "0") != 0;
    return status;
}

/*
 * A Redis Cluster: each master holds only its slots' keys, so every
 * master named by CLUSTER SLOTS is walked in turn, over a connection of
 * its own (AUTH as the URL says; a cluster has only database 0).
 */
static int walk_cluster(struct survey *s)
{
    redisContext *seed = s->ctx;
    struct cli_cluster *cl = NULL;
    int status = cli_raw_cluster(seed, s->o->url.host, &cl);
    size_t i;

    for (i = 0; status == 0 && i < cl->n; i++) {
        cli_verbose("cluster master %s:%d", cl->host[i], cl->port[i]);
        status = cli_raw_connect_to(s->o, cl->host[i], cl->port[i], 0, &s->ctx);
        if (status == 0) {
            status = walk(s);
            tslock_conn_free(s->ctx);
            s->nodes++;
        }
    }
    s->ctx = seed;
    cli_cluster_free(cl);
    return status;
}

/* The kinds and states the exporter counts are survey's, in its order. */
typedef char kinds_match_the_exporter[(CLI_SURVEY_DIALECTS == D_NOT_A_LOCK
                                       && CLI_SURVEY_STATES == S_NONE)
                                          ? 1
                                          : -1];

void cli_survey_count_named(struct cli_survey_tally *t, const char *name,
                            int st, long n)
{
    int i;

    for (i = 0; i < t->n_named; i++)
        if (strcmp(t->named[i].name, name) == 0)
            break;
    if (i == t->n_named) {
        /* The last slot is "(other)", for the names past the cap. */
        if (t->n_named == CLI_SURVEY_NAMED)
            i = CLI_SURVEY_NAMED;
        else
            t->n_named++;
        snprintf(t->named[i].name, sizeof(t->named[i].name), "%s",
                 i == CLI_SURVEY_NAMED ? "(other)" : name);
    }
    t->named[i].states[st] += n;
}

/* The stamps by dialect: the named slots, then "(other)" if used. */
static int named_used(const struct cli_survey_tally *t, int i)
{
    int st;

    if (i < t->n_named)
        return 1;
    for (st = 0; i == CLI_SURVEY_NAMED && st < CLI_SURVEY_STATES; st++)
        if (t->named[i].states[st] != 0)
            return 1;
    return 0;
}

static void print_json_named(const struct survey *s)
{
    int i, st, first = 1, first_s;

    fputs(",\"stamp_dialects\":{", stdout);
    for (i = 0; i <= CLI_SURVEY_NAMED; i++) {
        const struct cli_dialect_count *c = &s->named.named[i];

        if (!named_used(&s->named, i))
            continue;
        fputs(first ? "" : ",", stdout);
        first = 0;
        cli_print_json_string(c->name, strlen(c->name));
        fputs(":{", stdout);
        for (st = 0, first_s = 1; st < CLI_SURVEY_STATES; st++)
            if (c->states[st] != 0) {
                printf("%s\"%s\":%ld", first_s ? "" : ",", state_names[st],
                       c->states[st]);
                first_s = 0;
            }
        putchar('}');
    }
    putchar('}');
}

/* The JSON summary: {"summary":{"keys":N,"locks":N,"dialects":{...}}}. */
static void print_json_summary(const struct survey *s, long locks)
{
    int d, st, first_d = 1, first_s;

    printf("{\"summary\":{\"keys\":%ld,\"locks\":%ld,", s->seen, locks);
    if (s->cluster)
        printf("\"cluster_masters\":%zu,", s->nodes);
    cli_print_clock_offset_json(s->has_time, s->clock_offset_ms);
    fputs(",\"dialects\":{", stdout);
    for (d = 0; d < N_DIALECTS; d++) {
        long total = 0;

        for (st = 0; st < N_STATES; st++)
            total += s->counts[d][st];
        if (total == 0)
            continue;
        printf("%s\"%s\":{", first_d ? "" : ",", dialect_names[d]);
        first_d = 0;
        first_s = 1;
        for (st = 0; st < N_STATES; st++)
            if (s->counts[d][st] != 0) {
                printf("%s\"%s\":%ld", first_s ? "" : ",",
                       st == S_NONE ? "total" : state_names[st],
                       s->counts[d][st]);
                first_s = 0;
            }
        putchar('}');
    }
    putchar('}');
    print_json_named(s);
    fputs("}}\n", stdout);
}

/* The closing lines: counts by dialect, and by state within each. */
static void print_summary(struct survey *s)
{
    long locks = s->seen;
    int d, st;

    for (st = 0; st < N_STATES; st++)
        locks -= s->counts[D_NOT_A_LOCK][st];
    if (s->o->survey_json) {
        print_json_summary(s, locks);
        return;
    }
    print_header(s);
    if (s->cluster)
        printf("\n%ld keys, %ld locks, on %zu cluster master%s\n", s->seen,
               locks, s->nodes, s->nodes == 1 ? "" : "s");
    else
        printf("\n%ld keys, %ld locks\n", s->seen, locks);
    for (d = 0; d < N_DIALECTS; d++)
        for (st = 0; st < N_STATES; st++)
            if (s->counts[d][st] != 0)
                printf("  %-16s %-10s %ld\n", dialect_names[d], state_names[st],
                       s->counts[d][st]);
    for (d = 0; d <= CLI_SURVEY_NAMED; d++)
        for (st = 0; named_used(&s->named, d) && st < CLI_SURVEY_STATES; st++)
            if (s->named.named[d].states[st] != 0)
                printf("  dialect %s %s %ld\n", s->named.named[d].name,
                       state_names[st], s->named.named[d].states[st]);
    cli_print_clock_offset(s->has_time, s->clock_offset_ms);
}

int cli_survey(const struct cli_options *o)
{
    struct survey s;
    int status;

    memset(&s, 0, sizeof(s));
    s.o = o;
    /*
     * A connection of its own rather than a tslock client: survey needs
     * SCAN, GETs of any key and pipelining, none of which a lock offers,
     * and it must not probe capabilities by writing anything.
     */
    status = cli_raw_connect(o, 1, &s.ctx);
    if (status == 0)
        status = learn_version(&s);
    /* Before the walk: its states are judged by this host's clock. */
    if (status == 0)
        s.has_time = cli_raw_clock_offset(s.ctx, &s.clock_offset_ms);
    if (status == 0 && s.cluster)
        status = walk_cluster(&s);
    else if (status == 0)
        status = walk(&s);
    if (status == 0)
        print_summary(&s);
    if (s.ctx != NULL)
        tslock_conn_free(s.ctx);
    if (status == 0 && fflush(stdout) != 0) {
        cli_error("cannot write the survey");
        status = CLI_EXIT_OSERR;
    }
    return status;
}

int cli_survey_locks(struct redisContext *ctx, const char *match, long max_keys,
                     cli_survey_each_fn each, void *arg, long *keys_seen,
                     int *cut)
{
    struct cli_options o;
    struct survey s;
    int status;

    memset(&o, 0, sizeof(o));
    o.survey_match = match;
    memset(&s, 0, sizeof(s));
    s.o = &o;
    s.ctx = ctx;
    s.each = each;
    s.each_arg = arg;
    s.max_keys = max_keys;
    status = learn_version(&s);
    if (status == 0 && s.cluster) {
        cli_error("this server is a Redis Cluster node: top shows one "
                  "server; give -u a master's address");
        status = CLI_EXIT_USAGE;
    }
    if (status == 0)
        status = walk(&s);
    *keys_seen = s.seen;
    *cut = s.cut;
    return status;
}

/* ---- the exporter's walk: a few SCAN calls per scrape, counted only */

const char *cli_survey_dialect_name(int d)
{
    return d >= 0 && d < CLI_SURVEY_DIALECTS ? dialect_names[d] : "?";
}

const char *cli_survey_state_name(int st)
{
    return st >= 0 && st < CLI_SURVEY_STATES ? state_names[st] : "?";
}

int cli_survey_step(struct redisContext *ctx, const struct cli_options *o,
                    int has_pttl, char cursor[32], long budget,
                    struct cli_survey_tally *t)
{
    struct survey s;
    int status = 0, d, st;

    memset(&s, 0, sizeof(s));
    s.ctx = ctx;
    s.o = o;
    s.has_pttl = has_pttl;
    s.quiet = 1;
    /* SCAN COUNT 1000 may answer a little more; the budget is in calls. */
    do {
        status = scan_step(&s, cursor, 32);
        t->scan_calls++;
        if (status == -1) {
            cli_error("the server has no SCAN (Redis 2.8): the exporter "
                      "does not walk with KEYS, which blocks the server");
            status = CLI_EXIT_UNAVAILABLE;
        }
    } while (status == 0 && strcmp(cursor, "0") != 0 && s.seen < budget);
    t->keys += s.seen;
    t->waiters += s.waiters;
    for (d = 0; d < CLI_SURVEY_DIALECTS; d++)
        for (st = 0; st < CLI_SURVEY_STATES; st++)
            t->locks[d][st] += s.counts[d][st];
    for (d = 0; d <= CLI_SURVEY_NAMED; d++)
        for (st = 0; named_used(&s.named, d) && st < CLI_SURVEY_STATES; st++)
            if (s.named.named[d].states[st] != 0)
                cli_survey_count_named(t, s.named.named[d].name, st,
                                       s.named.named[d].states[st]);
    return status;
}
