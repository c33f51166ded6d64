/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watch.c - the watch form: follow MONITOR and show who touches the
 * given lock keys.  It owns the MONITOR line parser (all generations),
 * the per-key record of who wrote and read what, the kind, dialect,
 * danger, blind-overwrite and skew verdicts, and the per-client summary
 * printed at the end.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hiredis_compat.h"

#include "cli.h"

#define MAX_ARGS   16
#define MAX_TEXT   512
#define MAX_CLIENT 128
#define MAX_SEEN   64 /* distinct clients counted in the summary */
#define MAX_READS  16 /* clients whose last GET of a key is remembered */
#define MAX_NAMED  4  /* stamp dialects counted per client */

enum dialect { W_NONE, W_TOKEN, W_MS, W_S, W_FLOAT, W_BRIDGE, W_OTHER, N_W };
static const char *const dialect_names[N_W] = {
    "-",      "token", "timestamp-ms", "timestamp-s", "timestamp-float",
    "bridge", "other"};

/* One MONITOR line, parsed; arguments are copies cut to MAX_TEXT bytes. */
struct line {
    char time[32];
    char client[MAX_CLIENT];
    char args[MAX_ARGS][MAX_TEXT];
    size_t lens[MAX_ARGS];
    int n;
};

/* What a client's last GET of a key found, by the stream's account. */
struct read_seen {
    char client[MAX_CLIENT];
    int empty;      /* the key held no value */
    int64_t expiry; /* the stamp it held: its expiry, 0 for none */
};

/* What the stream has shown of one watched key (or its owner key). */
struct key_state {
    char name[MAX_TEXT];
    size_t len;
    char value[MAX_TEXT];
    size_t value_len;
    int has_value;
    char writer[MAX_CLIENT]; /* "" when written before the watch began */
    /* The value before this one: a write of it again is a restore. */
    char before[MAX_TEXT];
    size_t before_len;
    int has_before;
    /* Who read the key last, and whether it has changed since. */
    char reader[MAX_CLIENT];
    int changed_since_read;
    /* Who wrote the value before: its writer again when it is put back. */
    char before_writer[MAX_CLIENT];
    /* Each client's last GET since its last write (oldest dropped). */
    struct read_seen reads[MAX_READS];
    int n_reads;
};

struct client_count {
    char client[MAX_CLIENT];
    long writes[N_W];
    long danger;
    long skewed;      /* writes that put its clock off the server's */
    int64_t ahead_ms; /* the largest such offset seen (negative: behind) */
    long blind;       /* blind GETSETs */
    struct {
        char name[96];
        long writes;
    } named[MAX_NAMED]; /* stamps written, by dialect */
    int n_named;
};

/* A writer whose clock seems off the server's (skew.c), or none. */
struct skew {
    int seen;
    int64_t ahead_ms;
    const char *why;
};

/* A blind overwrite (see blind_of()), or none. */
struct blind {
    int seen;
    int empty_read; /* its GET found the key empty (else: it sent none) */
    int over_live;  /* the key held a live stamp (else: it was empty) */
};

struct watch {
    redisContext *ctx;
    const struct cli_options *o;
    int major, minor;
    int cluster; /* a Redis Cluster: MONITOR of the keys' master */
    struct key_state *keys;
    int n_keys;
    char script_caller[MAX_CLIENT]; /* who ran the last EVAL/EVALSHA */
    struct client_count seen[MAX_SEEN];
    int n_seen;
};

/* The value of one hex digit, or -1. */
static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/*
 * Read one escape after a backslash; returns the bytes it took.  Only
 * the bytes before end are read: the line is not NUL-terminated where
 * it ends (sscanf would have looked for a NUL past it).
 */
static size_t unescape(const char *p, const char *end, char *out)
{
    static const char from[] = "nrtab\"\\", to[] = "\n\r\t\a\b\"\\";
    const char *hit;

    if (p >= end) {
        *out = '\\';
        return 0;
    }
    if (*p == 'x' && end - p >= 3 && hex_digit(p[1]) >= 0
        && hex_digit(p[2]) >= 0) {
        *out = (char)(hex_digit(p[1]) * 16 + hex_digit(p[2]));
        return 3;
    }
    hit = strchr(from, *p);
    *out = hit != NULL && *p != '\0' ? to[hit - from] : *p;
    return 1;
}

/* One quoted argument at p; returns where it ended, or NULL. */
static const char *parse_arg(const char *p, const char *end, char *out,
                             size_t *len)
{
    char c;

    *len = 0;
    if (p >= end || *p != '"')
        return NULL;
    for (p++; p < end && *p != '"';) {
        c = *p++;
        if (c == '\\')
            p += unescape(p, end, &c);
        if (*len < MAX_TEXT - 1)
            out[(*len)++] = c;
    }
    out[*len] = '\0';
    return p < end ? p + 1 : NULL;
}

/*
 * "[0 127.0.0.1:5000]", "[0 unix:/s]" or "[0 lua]": the client part.  A
 * Unix socket's path is written as it is, ']' and spaces included: the
 * part ends at the "] " before the first argument's quote, or at a ']'
 * that ends the line.
 */
static const char *parse_client(const char *p, const char *end, struct line *l)
{
    const char *space = memchr(p, ' ', (size_t)(end - p)), *close = NULL;
    const char *q;
    size_t n;

    for (q = space; q != NULL && q < end; q++)
        if (*q == ']'
            && (q + 1 == end || (end - q >= 3 && q[1] == ' ' && q[2] == '"'))) {
            close = q;
            break;
        }
    if (close == NULL || space == NULL)
        return NULL;
    n = (size_t)(close - space - 1);
    if (n >= MAX_CLIENT)
        n = MAX_CLIENT - 1;
    memcpy(l->client, space + 1, n);
    l->client[n] = '\0';
    return close + 1;
}

/*
 * A MONITOR line of any generation: 2.6+ has "[db addr]" after the time,
 * 2.2-2.4 has no address, 2.0 a leading '+'.  Returns 0 or -1 (the
 * "OK" reply and anything else that is not a command).
 */
static int parse_line(const char *s, size_t len, struct line *l)
{
    const char *p = s, *end = s + len, *sp;
    size_t i;

    memset(l, 0, sizeof(*l));
    if (p < end && *p == '+')
        p++;
    sp = memchr(p, ' ', (size_t)(end - p));
    if (sp == NULL || (size_t)(sp - p) >= sizeof(l->time))
        return -1;
    memcpy(l->time, p, (size_t)(sp - p));
    p = sp + 1;
    strcpy(l->client, "?");
    if (p < end && *p == '[' && (p = parse_client(p, end, l)) == NULL)
        return -1;
    while (p < end && l->n < MAX_ARGS) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            break;
        p = parse_arg(p, end, l->args[l->n], &l->lens[l->n]);
        if (p == NULL)
            return -1;
        l->n++;
    }
    if (l->n == 0)
        return -1;
    /* Command names in one case, however each client spelled them. */
    for (i = 0; i < l->lens[0]; i++)
        l->args[0][i] = (char)tolower((unsigned char)l->args[0][i]);
    return 0;
}

/* The watched key a command names (its first key argument), or NULL. */
static struct key_state *watched(struct watch *w, const struct line *l)
{
    int i, a;

    for (a = 1; a < l->n; a++) {
        for (i = 0; i < w->n_keys; i++)
            if (w->keys[i].len == l->lens[a]
                && memcmp(w->keys[i].name, l->args[a], l->lens[a]) == 0)
                return &w->keys[i];
        /* Only DEL names several keys; every other key is argument 1. */
        if (strcasecmp(l->args[0], "del") != 0)
            break;
    }
    return NULL;
}

static int is_owner_key(const struct key_state *k)
{
    return k->len > 6 && memcmp(k->name + k->len - 6, ":owner", 6) == 0;
}

/*
 * The kind of a value written to k, and in names the presets whose
 * clients could have written it ("unknown-stamp", or "" for none).  The
 * keys are the ones watched, so a bare "1" or "true" is a lock's.
 */
static enum dialect dialect_of(const struct key_state *k, const char *v,
                               size_t len, char *names, size_t size)
{
    struct cli_stamp st;

    names[0] = '\0';
    if (is_owner_key(k))
        return W_BRIDGE;
    switch (cli_stamp_name(NULL, 0, v, len, &st)) {
    case CLI_STAMP_TOKEN:
        return W_TOKEN;
    case CLI_STAMP_STAMP:
        snprintf(names, size, "%s", st.dialect);
        return st.unit == TSLOCK_UNIT_S       ? W_S
               : st.unit == TSLOCK_UNIT_FLOAT ? W_FLOAT
                                              : W_MS;
    case CLI_STAMP_UNKNOWN:
        snprintf(names, size, "%s", st.dialect);
        return W_OTHER;
    default:
        return W_OTHER;
    }
}

/* Which argument a write stores, or 0 for commands that store none. */
static int value_arg(const struct line *l)
{
    const char *c = l->args[0];

    if (strcasecmp(c, "set") == 0 || strcasecmp(c, "setnx") == 0
        || strcasecmp(c, "getset") == 0)
        return l->n >= 3 ? 2 : 0;
    if (strcasecmp(c, "setex") == 0 || strcasecmp(c, "psetex") == 0)
        return l->n >= 4 ? 3 : 0;
    return 0;
}

/*
 * The line's time in Unix ms, or 0 for one that is no plausible time
 * (negative, not a number, past the year 33658): a double too large for
 * an int64_t is undefined behaviour to convert.
 */
static int64_t line_ms(const struct line *l)
{
    double s = strtod(l->time, NULL);

    return s >= 0 && s < 1e12 ? (int64_t)(s * 1000.0) : 0;
}

/*
 * The expiry of the stamp in k's current value, in any dialect:
 * INT64_MAX for a never-expires sentinel, 0 for none.
 */
static int64_t stamp_expiry(const struct key_state *k)
{
    struct cli_stamp st;

    if (!k->has_value
        || cli_stamp_name(NULL, 0, k->value, k->value_len, &st)
               != CLI_STAMP_STAMP)
        return 0;
    return st.expires_ms;
}

/*
 * Whether MONITOR tells this client from the others: over TCP on 2.6+
 * it gives an address each; every client of a Unix socket is the same
 * "unix:PATH", and before 2.6 all are "?".
 */
static int client_known(const char *client)
{
    return strcmp(client, "?") != 0 && strncmp(client, "unix:", 5) != 0;
}

static struct read_seen *read_by(struct key_state *k, const char *client)
{
    int i;

    for (i = 0; i < k->n_reads; i++)
        if (strcmp(k->reads[i].client, client) == 0)
            return &k->reads[i];
    return NULL;
}

static void forget_read(struct key_state *k, const char *client)
{
    struct read_seen *r = read_by(k, client);

    if (r != NULL)
        *r = k->reads[--k->n_reads];
}

/* Remember what client's GET found in k now (the oldest dropped). */
static void note_read(struct key_state *k, const char *client)
{
    struct read_seen *r;

    forget_read(k, client);
    if (k->n_reads == MAX_READS)
        memmove(&k->reads[0], &k->reads[1],
                (MAX_READS - 1) * sizeof(k->reads[0]));
    else
        k->n_reads++;
    r = &k->reads[k->n_reads - 1];
    snprintf(r->client, sizeof(r->client), "%s", client);
    r->empty = !k->has_value;
    r->expiry = stamp_expiry(k);
}

/*
 * Whether a GETSET is a blind overwrite.  MONITOR shows commands, not
 * replies, but the order of lines says what each GET found: the key's
 * value as the stream had left it.  So a GETSET by client C is blind
 * when C's last GET of the key since its own last write found it empty
 * (C took an empty GET for an expired lock, as Ruby's nil.to_f and
 * PHP's time() > "" do), or when C sent no GET and the key is empty or
 * holds a live stamp now.  A GETSET after a GET that found a stamp is
 * judged against that stamp by judge_skew() instead.  Clients MONITOR
 * does not tell apart are not judged.
 */
static void blind_of(struct key_state *k, const struct line *l, struct blind *b)
{
    const struct read_seen *r;
    int64_t expiry = stamp_expiry(k);
    int live = k->has_value && expiry > line_ms(l);

    memset(b, 0, sizeof(*b));
    if (strcmp(l->args[0], "getset") != 0 || !client_known(l->client))
        return;
    r = read_by(k, l->client);
    b->over_live = live;
    if (r != NULL && r->empty)
        b->seen = b->empty_read = 1;
    else if (r == NULL && (!k->has_value || live))
        b->seen = 1;
}

static int is_ttl_command(const char *c)
{
    return strcasecmp(c, "expire") == 0 || strcasecmp(c, "pexpire") == 0
           || strcasecmp(c, "setex") == 0 || strcasecmp(c, "psetex") == 0;
}

/* Why line l is dangerous, or NULL. */
static const char *danger_of(const struct watch *w, const struct key_state *k,
                             const struct line *l, enum dialect d,
                             const struct blind *b)
{
    const char *c = l->args[0];

    if (strcasecmp(c, "del") == 0 && k->has_value && k->writer[0] != '\0'
        && strcmp(k->writer, l->client) != 0)
        return "DEL of a value another client wrote";
    if (b->seen)
        return b->over_live ? "blind GETSET over a live stamp"
                            : "blind GETSET of an empty key";
    if (strcasecmp(c, "getset") == 0 && stamp_expiry(k) > line_ms(l))
        return "GETSET over a live stamp";
    if (w->major == 2 && w->minor == 0 && is_ttl_command(c)
        && (d == W_MS || d == W_S || d == W_FLOAT
            || (d == W_NONE && stamp_expiry(k) != 0)))
        return "TTL on a timestamp key on Redis 2.0 (the next SETNX "
               "deletes it)";
    return NULL;
}

/* Remember what line l leaves in k, and who wrote it. */
static void record(struct key_state *k, const struct line *l, int v)
{
    const char *c = l->args[0];
    char writer[MAX_CLIENT];
    int restore;

    if (strcasecmp(c, "get") == 0) {
        snprintf(k->reader, sizeof(k->reader), "%s", l->client);
        k->changed_since_read = 0;
        note_read(k, l->client);
        return;
    }
    /* A write ends what the writer's last GET told it. */
    if (v != 0 || strcasecmp(c, "del") == 0)
        forget_read(k, l->client);
    if (strcasecmp(c, "del") == 0) {
        k->has_value = 0;
        k->has_before = 0;
        k->changed_since_read = 1;
        return;
    }
    /* A SETNX or SET NX that found the key taken changes nothing, but
     * MONITOR does not say which; the last writer is the best guess. */
    if (v == 0 || (k->has_value && strcasecmp(c, "setnx") == 0))
        return;
    /* The GETSET loser putting back the winner's value: the winner's
     * again, so the winner's own release is not another's DEL. */
    restore = k->has_before && k->before_len == l->lens[v]
              && memcmp(k->before, l->args[v], l->lens[v]) == 0;
    snprintf(writer, sizeof(writer), "%s",
             restore ? k->before_writer : l->client);
    memcpy(k->before, k->value, k->value_len);
    k->before_len = k->value_len;
    k->has_before = k->has_value;
    snprintf(k->before_writer, sizeof(k->before_writer), "%s", k->writer);
    k->changed_since_read = 1;
    memcpy(k->value, l->args[v], l->lens[v]);
    k->value_len = l->lens[v];
    k->has_value = 1;
    snprintf(k->writer, sizeof(k->writer), "%s", writer);
}

static struct client_count *count_for(struct watch *w, const char *client)
{
    int i;

    for (i = 0; i < w->n_seen; i++)
        if (strcmp(w->seen[i].client, client) == 0)
            return &w->seen[i];
    if (w->n_seen == MAX_SEEN)
        return NULL;
    snprintf(w->seen[w->n_seen].client, MAX_CLIENT, "%s", client);
    return &w->seen[w->n_seen++];
}

/* An event's verdicts beyond its kind and danger. */
struct verdict {
    const char *names; /* the stamp dialects of the value written, or "" */
    struct skew sk;
    struct blind bl;
};

static void print_json_event(const struct line *l, const struct key_state *k,
                             enum dialect d, const char *danger,
                             const struct verdict *vd)
{
    const struct skew *sk = &vd->sk;
    int i;

    printf("{\"time\":%s,\"client\":", l->time);
    cli_print_json_string(l->client, strlen(l->client));
    fputs(",\"command\":", stdout);
    cli_print_json_string(l->args[0], l->lens[0]);
    fputs(",\"args\":[", stdout);
    for (i = 1; i < l->n; i++) {
        if (i > 1)
            putchar(',');
        cli_print_json_string(l->args[i], l->lens[i]);
    }
    fputs("],\"key\":", stdout);
    cli_print_json_string(k->name, k->len);
    printf(",\"dialect\":%s%s%s,\"stamp_dialect\":", d == W_NONE ? "" : "\"",
           d == W_NONE ? "null" : dialect_names[d], d == W_NONE ? "" : "\"");
    if (vd->names[0] != '\0')
        cli_print_json_string(vd->names, strlen(vd->names));
    else
        fputs("null", stdout);
    fputs(",\"danger\":", stdout);
    if (danger != NULL)
        cli_print_json_string(danger, strlen(danger));
    else
        fputs("null", stdout);
    /* Only on a blind GETSET, as the skew fields below. */
    if (vd->bl.seen)
        printf(",\"blind\":\"%s\"", vd->bl.empty_read ? "empty-get" : "no-get");
    /* Only on a skewed write, so the other lines keep their shape. */
    if (sk->seen) {
        printf(",\"clock_ahead_ms\":%" PRId64 ",\"skew\":", sk->ahead_ms);
        cli_print_json_string(sk->why, strlen(sk->why));
    }
    fputs("}\n", stdout);
}

/*
 * BLIND: CLIENT (DIALECT): how it overwrote, after the event's line.  It
 * says what the stream showed of the writer's GET, and that this is not
 * clock skew, which watch called it before it told the two apart.
 */
static void print_blind(const struct line *l, const struct verdict *vd)
{
    printf("BLIND: %s (%s): GETSET %s %s; not clock skew\n", l->client,
           vd->names[0] != '\0' ? vd->names : "no known dialect",
           vd->bl.over_live ? "over a live stamp" : "of an empty key",
           vd->bl.empty_read
               ? "after its GET found the key empty (a client that takes an "
                 "empty GET for an expired lock)"
               : "without a GET of the key first");
}

/* TIME CLIENT DIALECT command "arg"...; "DANGER: why:" in front. */
static void print_event(const struct watch *w, const struct line *l,
                        const struct key_state *k, enum dialect d,
                        const char *danger, const struct verdict *vd)
{
    const struct skew *sk = &vd->sk;
    int i;

    if (w->o->survey_json) {
        print_json_event(l, k, d, danger, vd);
        return;
    }
    if (danger != NULL)
        printf("DANGER: %s: ", danger);
    printf("%s %s %s %s", l->time, l->client, dialect_names[d], l->args[0]);
    for (i = 1; i < l->n; i++) {
        putchar(' ');
        cli_print_quoted(l->args[i], l->lens[i], 0);
    }
    putchar('\n');
    if (vd->bl.seen)
        print_blind(l, vd);
    if (sk->seen)
        printf("SKEW: %s: its clock runs at least %" PRId64 " ms %s the "
               "server's: "
               "%s\n",
               strcmp(l->client, "?") == 0
                   ? "a client (the server gives no addresses before 2.6)"
                   : l->client,
               sk->ahead_ms < 0 ? -sk->ahead_ms : sk->ahead_ms,
               sk->ahead_ms < 0 ? "behind" : "ahead of", sk->why);
}

/*
 * Whether the stamp line l writes to k puts its writer's clock off the
 * server's, whose time the MONITOR line carries.  A write over another
 * client's stamp is a takeover; over its own, an extension.
 */
static void judge_skew(const struct key_state *k, const struct line *l, int v,
                       enum dialect d, const struct blind *b, struct skew *sk)
{
    struct cli_stamp st;
    int64_t expires = 0, prior;
    int takeover;

    memset(sk, 0, sizeof(*sk));
    if (v == 0 || !(d == W_MS || d == W_S || d == W_FLOAT || d == W_BRIDGE)
        || is_owner_key(k)
        || cli_stamp_name(NULL, 0, l->args[v], l->lens[v], &st)
               != CLI_STAMP_STAMP
        || st.expires_ms == INT64_MAX)
        return;
    expires = st.expires_ms;
    /* A SETNX over a taken key writes nothing. */
    if (strcasecmp(l->args[0], "setnx") == 0 && k->has_value)
        return;
    /*
     * A write over another client's stamp is a takeover, unless it puts
     * back the value before (the GETSET loser restoring the winner's) or
     * the key changed since this client read it (the loser's GETSET
     * itself: it judged the value it read, not this one).
     */
    takeover = k->has_value && k->writer[0] != '\0'
               && strcmp(k->writer, l->client) != 0
               && !(k->has_before && k->before_len == l->lens[v]
                    && memcmp(k->before, l->args[v], l->lens[v]) == 0)
               && !(strcmp(k->reader, l->client) == 0 && k->changed_since_read)
               /* A blind overwrite judged no stamp: no clock to read. */
               && !b->seen;
    /* Nor does a takeover of a never-expires sentinel say anything of
     * clocks: the taker's dialect read it as a time long past. */
    prior = stamp_expiry(k);
    if (prior == INT64_MAX)
        takeover = 0;
    sk->seen = cli_writer_skew(expires, line_ms(l), prior, takeover,
                               &sk->ahead_ms, &sk->why);
}

/*
 * Commands a script runs show as client "lua" right after the EVAL or
 * EVALSHA that ran it, so they are put to that caller's account.
 */
static void attribute_script(struct watch *w, struct line *l)
{
    if (strcasecmp(l->args[0], "eval") == 0
        || strcasecmp(l->args[0], "evalsha") == 0)
        snprintf(w->script_caller, MAX_CLIENT, "%s", l->client);
    else if (strcmp(l->client, "lua") == 0 && w->script_caller[0] != '\0')
        snprintf(l->client, MAX_CLIENT, "%s", w->script_caller);
}

/* One event into its client's summary. */
static void count_event(struct client_count *cc, enum dialect d,
                        const char *danger, const struct verdict *vd)
{
    int i;

    cc->writes[d] += d != W_NONE;
    cc->danger += danger != NULL;
    cc->blind += vd->bl.seen;
    if (vd->sk.seen
        && (cc->skewed++ == 0 || llabs(vd->sk.ahead_ms) > llabs(cc->ahead_ms)))
        cc->ahead_ms = vd->sk.ahead_ms;
    if (vd->names[0] == '\0')
        return;
    for (i = 0; i < cc->n_named; i++)
        if (strcmp(cc->named[i].name, vd->names) == 0)
            break;
    if (i == cc->n_named) {
        if (cc->n_named == MAX_NAMED)
            return; /* a client of more dialects than this is rare */
        snprintf(cc->named[i].name, sizeof(cc->named[i].name), "%s", vd->names);
        cc->n_named++;
    }
    cc->named[i].writes++;
}

static void handle_line(struct watch *w, const char *s, size_t len)
{
    struct line l;
    struct key_state *k;
    struct client_count *cc;
    enum dialect d = W_NONE;
    const char *danger;
    struct verdict vd;
    char names[96] = "";
    int v, scripted;

    if (parse_line(s, len, &l) != 0)
        return;
    scripted = strcmp(l.client, "lua") == 0;
    attribute_script(w, &l);
    if ((k = watched(w, &l)) == NULL)
        return;
    v = value_arg(&l);
    if (v != 0)
        d = dialect_of(k, l.args[v], l.lens[v], names, sizeof(names));
    /* A stamp with its own TTL, set by a script: tslock's bridge. */
    if (scripted && (d == W_MS || d == W_S || d == W_FLOAT) && l.n > 3)
        d = W_BRIDGE;
    vd.names = names;
    blind_of(k, &l, &vd.bl);
    danger = danger_of(w, k, &l, d, &vd.bl);
    judge_skew(k, &l, v, d, &vd.bl, &vd.sk);
    print_event(w, &l, k, d, danger, &vd);
    fflush(stdout);
    record(k, &l, v);
    if ((cc = count_for(w, l.client)) != NULL)
        count_event(cc, d, danger, &vd);
}

/* KEY, "{KEY}:owner" and "KEY:owner", each with its value now. */
static int add_key(struct watch *w, const char *name, const char *suffix)
{
    struct key_state *k = &w->keys[w->n_keys];
    redisReply *r;

    snprintf(k->name, MAX_TEXT, suffix[0] == '}' ? "{%s%s" : "%s%s", name,
             suffix);
    k->len = strlen(k->name);
    /* On a cluster only the owner name in KEY's slot is tslock's. */
    if (w->cluster
        && tslock_key_slot(k->name, k->len)
               != tslock_key_slot(name, strlen(name)))
        return 0;
    r = cli_raw_reply(w->ctx, "GET",
                      cli_raw_command(w->ctx, "GET %b", k->name, k->len));
    if (r == NULL)
        return CLI_EXIT_SOFTWARE;
    /* A longer value is kept cut, as the stream's arguments are: the
     * key is not empty, which is what a blind GETSET is judged by. */
    if (r->type == REDIS_REPLY_STRING) {
        k->value_len = r->len < MAX_TEXT ? r->len : MAX_TEXT - 1;
        memcpy(k->value, r->str, k->value_len);
        k->has_value = 1;
    }
    freeReplyObject(r);
    w->n_keys++;
    return 0;
}

static int add_keys(struct watch *w, char **names, int n)
{
    int i, status = 0;

    w->keys = calloc((size_t)n * 3, sizeof(*w->keys));
    if (w->keys == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    for (i = 0; i < n && status == 0; i++) {
        if (strlen(names[i]) + 8 >= MAX_TEXT)
            return cli_usage_error("KEY '%.40s...' is too long to watch",
                                   names[i]);
        status = add_key(w, names[i], "");
        if (status == 0)
            status = add_key(w, names[i], "}:owner");
        if (status == 0)
            status = add_key(w, names[i], ":owner");
    }
    return status;
}

/*
 * Wait up to 200 ms for the socket, so a signal or the deadline is seen
 * soon.  Returns 2 readable, 1 not yet, 0 time to stop, -1 failed.
 */
static int wait_readable(struct watch *w, int64_t end_ms)
{
    struct pollfd pfd;
    int64_t wait = 200;
    int rc;

    if (cli_signals_received() != 0)
        return 0;
    if (end_ms != 0 && (wait = end_ms - cli_mono_ms()) <= 0)
        return 0;
    pfd.fd = w->ctx->fd;
    pfd.events = POLLIN;
    rc = poll(&pfd, 1, wait > 200 ? 200 : (int)wait);
    if (rc < 0 && errno != EINTR) {
        cli_error("poll: %s", strerror(errno));
        return -1;
    }
    return rc > 0 ? 2 : 1;
}

/* Every MONITOR line until --for runs out or a signal comes. */
static int follow(struct watch *w)
{
    int64_t end_ms =
        w->o->watch_for_ms > 0 ? cli_mono_ms() + w->o->watch_for_ms : 0;
    redisReply *r;
    int rc;

    for (;;) {
        if (redisReaderGetReply(w->ctx->reader, (void **)&r) != REDIS_OK) {
            cli_error("MONITOR: unreadable reply from the server");
            return CLI_EXIT_SOFTWARE;
        }
        if (r != NULL) {
            if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING)
                handle_line(w, r->str, r->len);
            freeReplyObject(r);
            continue;
        }
        if ((rc = wait_readable(w, end_ms)) <= 0)
            return rc == 0 ? 0 : CLI_EXIT_OSERR;
        if (rc == 2 && tslock_conn_read(w->ctx) != REDIS_OK) {
            cli_error("MONITOR: %s",
                      w->ctx->errstr[0] ? w->ctx->errstr : "connection lost");
            return CLI_EXIT_UNAVAILABLE;
        }
    }
}

static int start_monitor(struct watch *w)
{
    redisReply *r =
        cli_raw_reply(w->ctx, "MONITOR", cli_raw_command(w->ctx, "MONITOR"));
    char where[512];

    if (r == NULL)
        return CLI_EXIT_SOFTWARE;
    freeReplyObject(r);
    tslock_url_describe(&w->o->url, where, sizeof(where));
    cli_info("watching %d key%s on %s (Redis %d.%d)", w->n_keys / 3,
             w->n_keys == 3 ? "" : "s", where, w->major, w->minor);
    return 0;
}

static void print_counts_text(const struct client_count *cc)
{
    int d;

    printf("summary: %s", cc->client);
    for (d = W_TOKEN; d < N_W; d++)
        if (cc->writes[d] != 0)
            printf(" %s=%ld", dialect_names[d], cc->writes[d]);
    printf(" danger=%ld\n", cc->danger);
    if (cc->n_named != 0) {
        printf("dialects: %s", cc->client);
        for (d = 0; d < cc->n_named; d++)
            printf(" %s=%ld", cc->named[d].name, cc->named[d].writes);
        putchar('\n');
    }
    if (cc->blind != 0)
        printf("blind: %s: %ld blind GETSET%s\n", cc->client, cc->blind,
               cc->blind == 1 ? "" : "s");
    if (cc->skewed != 0)
        printf("skew: %s: its clock runs at least %" PRId64 " ms %s the "
               "server's (%ld write%s)\n",
               cc->client, cc->ahead_ms < 0 ? -cc->ahead_ms : cc->ahead_ms,
               cc->ahead_ms < 0 ? "behind" : "ahead of", cc->skewed,
               cc->skewed == 1 ? "" : "s");
}

static void print_counts_json(const struct client_count *cc, int first)
{
    int d, any = 0;

    fputs(first ? "{\"client\":" : ",{\"client\":", stdout);
    cli_print_json_string(cc->client, strlen(cc->client));
    fputs(",\"writes\":{", stdout);
    for (d = W_TOKEN; d < N_W; d++)
        if (cc->writes[d] != 0)
            printf("%s\"%s\":%ld", any++ ? "," : "", dialect_names[d],
                   cc->writes[d]);
    printf("},\"danger\":%ld", cc->danger);
    if (cc->n_named != 0) {
        fputs(",\"stamp_dialects\":{", stdout);
        for (d = 0; d < cc->n_named; d++) {
            fputs(d != 0 ? "," : "", stdout);
            cli_print_json_string(cc->named[d].name, strlen(cc->named[d].name));
            printf(":%ld", cc->named[d].writes);
        }
        putchar('}');
    }
    if (cc->blind != 0)
        printf(",\"blind\":%ld", cc->blind);
    if (cc->skewed != 0)
        printf(",\"skewed\":%ld,\"clock_ahead_ms\":%" PRId64, cc->skewed,
               cc->ahead_ms);
    putchar('}');
}

/* Per client: writes by dialect and dangerous acts. */
static void print_summary(const struct watch *w)
{
    int i;

    if (w->o->survey_json)
        fputs("{\"summary\":{\"clients\":[", stdout);
    for (i = 0; i < w->n_seen; i++) {
        if (w->o->survey_json)
            print_counts_json(&w->seen[i], i == 0);
        else
            print_counts_text(&w->seen[i]);
    }
    if (w->o->survey_json)
        fputs("]}}\n", stdout);
    else if (w->n_seen == 0)
        fputs("summary: no client touched the keys\n", stdout);
}

/*
 * On a Redis Cluster, MONITOR shows one node's commands: watch the
 * master that owns the keys' slot.  Keys on several masters would need
 * several streams, so they are refused with the masters named.
 */
static int follow_owner(struct watch *w, char **keys, int n_keys)
{
    struct cli_cluster *cl = NULL;
    int status = cli_raw_cluster(w->ctx, w->o->url.host, &cl);
    int i, owner = 0;

    for (i = 0; status == 0 && i < n_keys; i++) {
        int slot = tslock_key_slot(keys[i], strlen(keys[i]));
        int at = cl->owner[slot];

        if (at == 0) {
            cli_error("no cluster master serves slot %d of '%s'", slot,
                      keys[i]);
            status = CLI_EXIT_UNAVAILABLE;
        } else if (owner != 0 && at != owner) {
            cli_error("on a cluster, watch follows one master's MONITOR: "
                      "'%s' lies on %s:%d and '%s' on %s:%d; watch them "
                      "separately, or give the keys one hash tag",
                      keys[0], cl->host[owner - 1], cl->port[owner - 1],
                      keys[i], cl->host[at - 1], cl->port[at - 1]);
            status = CLI_EXIT_USAGE;
        }
        owner = at;
    }
    if (status == 0 && owner != 0) {
        cli_verbose("watching cluster master %s:%d", cl->host[owner - 1],
                    cl->port[owner - 1]);
        tslock_conn_free(w->ctx);
        w->ctx = NULL;
        status = cli_raw_connect_to(w->o, cl->host[owner - 1],
                                    cl->port[owner - 1], 0, &w->ctx);
    }
    cli_cluster_free(cl);
    return status;
}

int cli_watch(const struct cli_options *o, char **keys, int n_keys)
{
    struct watch w;
    int status, cluster = 0;

    memset(&w, 0, sizeof(w));
    w.o = o;
    cli_signals_install();
    /*
     * A connection of its own: MONITOR turns it into a stream, which no
     * tslock client may become.  No SELECT: MONITOR sees every database.
     */
    status = cli_raw_connect(o, 0, &w.ctx);
    if (status == 0)
        status = cli_raw_version(w.ctx, &w.major, &w.minor, &cluster);
    if (status == 0 && cluster)
        status = follow_owner(&w, keys, n_keys);
    w.cluster = cluster;
    if (status == 0)
        status = add_keys(&w, keys, n_keys);
    if (status == 0)
        status = start_monitor(&w);
    if (status == 0)
        status = follow(&w);
    if (w.n_keys > 0 && (status == 0 || w.n_seen > 0))
        print_summary(&w);
    if (w.ctx != NULL)
        tslock_conn_free(w.ctx);
    free(w.keys);
    if (fflush(stdout) != 0) {
        cli_error("cannot write the watch");
        status = CLI_EXIT_OSERR;
    }
    return status;
}

int cli_monitor_line(const char *s, size_t len, char *client,
                     size_t client_size, char *command, size_t command_size,
                     char *key, size_t key_size, size_t *key_len)
{
    struct line *l = malloc(sizeof(*l));
    int rc = -1;

    if (l == NULL)
        return -1;
    if (parse_line(s, len, l) == 0 && l->n >= 2) {
        snprintf(client, client_size, "%s", l->client);
        snprintf(command, command_size, "%s", l->args[0]);
        *key_len = l->lens[1] < key_size ? l->lens[1] : key_size;
        memcpy(key, l->args[1], *key_len);
        rc = 0;
    }
    free(l);
    return rc;
}

/* ---- the exporter's legacy writes: one MONITOR line judged */

/*
 * Whether the line's command (its first quoted word) is SETNX, GETSET or
 * SET: most lines are not, and are passed over before the full parse.
 */
static int maybe_stamp_write(const char *text, size_t len)
{
    const char *q = memchr(text, '"', len), *end;
    size_t n;

    if (q == NULL)
        return 0;
    end = memchr(q + 1, '"', len - (size_t)(q + 1 - text));
    if (end == NULL)
        return 0;
    n = (size_t)(end - q - 1);
    return (n == 5 && strncasecmp(q + 1, "setnx", 5) == 0)
           || (n == 6 && strncasecmp(q + 1, "getset", 6) == 0)
           || (n == 3 && strncasecmp(q + 1, "set", 3) == 0);
}

int cli_monitor_legacy_write(const char *text, size_t len,
                             struct cli_legacy_write *out)
{
    static struct line l; /* big; the exporter is single-threaded */
    struct cli_stamp st;
    const char *c;
    int v;

    if (!maybe_stamp_write(text, len) || parse_line(text, len, &l) != 0
        || l.n < 3 || strcmp(l.client, "lua") == 0)
        return 0;
    c = l.args[0];
    /*
     * What a classic client writes: SETNX, GETSET or a plain SET of a
     * stamp.  tslock's bridge writes its stamps from a script (client
     * "lua") or with SETEX in a transaction (2.2-2.4), its tokens are
     * not stamps: none of them counts.
     */
    if (strcmp(c, "setnx") != 0 && strcmp(c, "getset") != 0
        && !(strcmp(c, "set") == 0 && l.n == 3))
        return 0;
    v = value_arg(&l);
    /* A stamp of any dialect; a bare "1" only on a key named a lock. */
    if (v == 0
        || cli_stamp_name(l.args[1], l.lens[1], l.args[v], l.lens[v], &st)
               != CLI_STAMP_STAMP)
        return 0;
    memcpy(out->key, l.args[1], l.lens[1] + 1);
    out->key_len = l.lens[1];
    snprintf(out->client, sizeof(out->client), "%s", l.client);
    out->at_ms = line_ms(&l);
    return 1;
}
