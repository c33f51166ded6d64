/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * top.c - the top form: a live view of one server's locks, redrawn every
 * --interval.  Where each number comes from (doc/observability.md, "tslock
 * top", says what each costs the server):
 *
 *   locks, kind, dialect, holder, left  a SCAN walk bounded by --scan-max
 *                                       keys (survey.c, cli_survey_locks);
 *   line                                ZCARD of "{KEY}:queue" (token
 *                                       waiters) and PUBSUB NUMSUB of the
 *                                       key's release channel (listening
 *                                       waiters of any dialect), the larger;
 *   waits/s                             growth of "{KEY}:queue-seq" (the
 *                                       line's arrival counter) for tokens,
 *                                       growth of NUMSUB for the others;
 *   releases/s                          messages heard with PSUBSCRIBE on
 *                                       "*:released" and "*:wake:*" (every
 *                                       release announces on one of them,
 *                                       naming its key);
 *   legacy                              distinct clients seen sending SETNX
 *                                       or GETSET to the key over MONITOR.
 *
 * The terminal: raw input, the alternate screen, a hidden cursor, each
 * frame drawn from the home position with every line cleared to its end.
 * Everything is put back on every way out: q, SIGINT, SIGTERM, SIGHUP
 * (handlers that only set a flag) and a server that goes away.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "hiredis_compat.h"

#include "cli.h"
#include "rawcmd.h"

#define MAX_WRITERS 8
#define KEY_MAX     512

struct row {
    char key[KEY_MAX];
    size_t len;
    char dialect[20]; /* the kind; "" when the key holds no lock now */
    char stamp[96];   /* the stamp's dialects, or "" */
    int token;
    int64_t left_ms;
    char holder[24];
    long line;
    long seq, numsub;           /* this frame's readings */
    long seq_prev, numsub_prev; /* the frame before's; -1 none */
    long waits, releases;       /* this interval's counts */
    long releases_heard;        /* heard since the last frame */
    double waits_s, releases_s;
    char writers[MAX_WRITERS][64]; /* legacy writers seen, by address */
    int n_writers;
    int present; /* a lock in this frame's walk */
    int expired; /* a stamp in the past: free for a takeover */
    int never;   /* a never-expires sentinel */
};

enum sort {
    SORT_WAITS,
    SORT_RELEASES,
    SORT_LEFT,
    SORT_NAME,
    SORT_LINE,
    N_SORT
};
static const char *const sort_names[N_SORT] = {"waits", "releases", "left",
                                               "name", "line"};

struct top {
    const struct cli_options *o;
    redisContext *ctx, *sub, *mon;
    struct row *rows;
    size_t n, cap;
    /* rows by key: open addressing, index + 1 (0: empty), 2 * cap slots */
    size_t *index;
    size_t index_size;
    long keys_seen;
    int cut;
    int has_numsub;
    enum sort sort;
    int tty; /* drawing on a terminal */
    int rows_term, cols_term;
    long legacy_writes; /* this interval */
    double legacy_s;
    double secs; /* between the last two readings */
    long releases_total, waits_total;
    int64_t last_ms;
};

static volatile sig_atomic_t got_signal, got_winch;
static struct termios saved_termios;
static int termios_saved, screen_on;

static char held_error[512]; /* said once the screen is back */

static void on_signal(int sig)
{
    got_signal = sig;
}
static void on_winch(int sig)
{
    (void)sig;
    got_winch = 1;
}

static void install_handlers(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_winch;
    sigaction(SIGWINCH, &sa, NULL);
}

/* Put the terminal back as it was: every way out comes through here. */
static void screen_restore(void)
{
    if (screen_on) {
        /* Cursor shown, attributes reset, main screen back. */
        fputs("\033[0m\033[?25h\033[?1049l", stdout);
        fflush(stdout);
        screen_on = 0;
    }
    if (termios_saved) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_termios);
        termios_saved = 0;
    }
}

/* An error: on the drawing screen it would vanish, so it waits. */
static void top_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void top_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (screen_on)
        vsnprintf(held_error, sizeof(held_error), fmt, ap);
    else {
        char text[512];

        vsnprintf(text, sizeof(text), fmt, ap);
        cli_error("%s", text);
    }
    va_end(ap);
}

static void screen_start(void)
{
    struct termios raw;

    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_termios) == 0) {
        termios_saved = 1;
        raw = saved_termios;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
    }
    /* Alternate screen, cursor hidden, cleared once. */
    fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
    fflush(stdout);
    screen_on = 1;
}

static void term_size(struct top *t)
{
    struct winsize ws;

    t->rows_term = 24;
    t->cols_term = 80;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0
        && ws.ws_col > 0) {
        t->rows_term = ws.ws_row;
        t->cols_term = ws.ws_col;
    }
}

/* FNV-1a: keys are found in O(1), so a frame of 10000 locks stays cheap. */
static size_t hash_key(const char *key, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037);
    size_t i;

    for (i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * UINT64_C(1099511628211);
    return (size_t)h;
}

/* The slot of key: where it is, or the empty one where it would go. */
static size_t slot_of(const struct top *t, const char *key, size_t len)
{
    size_t mask = t->index_size - 1, i = hash_key(key, len) & mask;

    while (t->index[i] != 0) {
        const struct row *r = &t->rows[t->index[i] - 1];

        if (r->len == len && memcmp(r->key, key, len) == 0)
            break;
        i = (i + 1) & mask;
    }
    return i;
}

/* Index every row again: after a sort, a prune or a growth. */
static int reindex(struct top *t)
{
    size_t i, want = 128;

    while (want < 2 * t->cap)
        want *= 2;
    if (want != t->index_size) {
        size_t *grown = realloc(t->index, want * sizeof(*grown));

        if (grown == NULL)
            return -1;
        t->index = grown;
        t->index_size = want;
    }
    memset(t->index, 0, t->index_size * sizeof(*t->index));
    for (i = 0; i < t->n; i++)
        t->index[slot_of(t, t->rows[i].key, t->rows[i].len)] = i + 1;
    return 0;
}

/* Rows at most: a legacy writer of many keys cannot grow top without end. */
#define MAX_ROWS 100000

static struct row *row_for(struct top *t, const char *key, size_t len)
{
    size_t slot;
    struct row *r;

    if (len >= KEY_MAX)
        len = KEY_MAX - 1;
    if (t->index_size > 0) {
        slot = slot_of(t, key, len);
        if (t->index[slot] != 0)
            return &t->rows[t->index[slot] - 1];
    }
    if (t->n >= MAX_ROWS)
        return NULL;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct row *grown = realloc(t->rows, cap * sizeof(*grown));

        if (grown == NULL)
            return NULL;
        t->rows = grown;
        t->cap = cap;
        if (reindex(t) != 0)
            return NULL;
    }
    slot = slot_of(t, key, len);
    t->index[slot] = t->n + 1;
    r = &t->rows[t->n++];
    memset(r, 0, sizeof(*r));
    memcpy(r->key, key, len);
    r->len = len;
    r->seq_prev = r->numsub_prev = -1;
    r->left_ms = -1;
    return r;
}

static void on_lock(void *arg, const struct cli_lock_seen *l)
{
    struct top *t = arg;
    struct row *r = row_for(t, l->key, l->len);

    if (r == NULL)
        return;
    r->present = 1;
    snprintf(r->dialect, sizeof(r->dialect), "%s", l->dialect);
    snprintf(r->stamp, sizeof(r->stamp), "%s", l->stamp_dialect);
    r->token = l->token;
    r->left_ms = l->left_ms;
    r->never = l->never;
    /* An unknown stamp has no expiry to be past: it is held for good. */
    r->expired = !l->token && !l->never && l->left_ms < 0
                 && strcmp(l->dialect, "unknown-stamp") != 0;
    snprintf(r->holder, sizeof(r->holder), "%s", l->holder);
}

/* A companion's name as names.c makes it: "{KEY}suffix" or "KEYsuffix". */
static int companion(const struct row *r, const char *suffix, char *out,
                     size_t size)
{
    const char *open = memchr(r->key, '{', r->len);
    const char *close =
        open ? memchr(open + 1, '}', r->len - (size_t)(open + 1 - r->key))
             : NULL;
    int bare = (close != NULL && close > open + 1)
               || memchr(r->key, '}', r->len) != NULL;

    return snprintf(out, size, bare ? "%.*s%s" : "{%.*s}%s", (int)r->len,
                    r->key, suffix);
}

static long int_reply(const redisReply *r)
{
    if (r == NULL)
        return 0;
    if (r->type == REDIS_REPLY_INTEGER)
        return (long)r->integer;
    if (r->type == REDIS_REPLY_STRING)
        return strtol(r->str, NULL, 10);
    return 0;
}

/* Channels asked of one PUBSUB NUMSUB. */
#define NUMSUB_BATCH 500

/* Read the next pipelined reply into *out: 0, or an exit status. */
static int next(struct top *t, redisReply **out)
{
    void *r = NULL;

    if (tslock_conn_get_reply(t->ctx, &r) != TSLOCK_OK) {
        top_error("reading the lines: %s", t->ctx->errstr);
        return CLI_EXIT_UNAVAILABLE;
    }
    *out = r;
    return 0;
}

/* Ask NUMSUB of the release channels of rows [from, to) in one command. */
static int ask_numsub(struct top *t, size_t from, size_t to)
{
    const char **argv = malloc((to - from + 2) * sizeof(*argv));
    size_t *lens = malloc((to - from + 2) * sizeof(*lens));
    char *names = malloc((to - from) * (KEY_MAX + 16));
    size_t i;

    if (argv == NULL || lens == NULL || names == NULL) {
        free(argv);
        free(lens);
        free(names);
        top_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    argv[0] = "PUBSUB";
    lens[0] = 6;
    argv[1] = "NUMSUB";
    lens[1] = 6;
    for (i = from; i < to; i++) {
        char *name = names + (i - from) * (KEY_MAX + 16);

        argv[i - from + 2] = name;
        lens[i - from + 2] =
            (size_t)companion(&t->rows[i], ":released", name, KEY_MAX + 16);
    }
    {
        char *cmd = NULL;
        int len =
            redisFormatCommandArgv(&cmd, (int)(to - from + 2), argv, lens);

        /* A failed write shows as the error of the next reply read. */
        if (len > 0)
            (void)tslock_conn_write(t->ctx, cmd, (size_t)len);
        tslock__redis_free_command(cmd);
    }
    free(argv);
    free(lens);
    free(names);
    return 0;
}

/*
 * The lines, in one pipeline: ZCARD of the line and GET of its arrival
 * counter for each token lock (stamps have no line), and the listeners
 * of every row's release channel, NUMSUB_BATCH channels a command.
 */
static int read_lines(struct top *t)
{
    char name[KEY_MAX + 16];
    redisReply *a, *b;
    size_t i, j;
    int len, status;

    for (i = 0; i < t->n; i++) {
        struct row *r = &t->rows[i];

        r->numsub = 0;
        r->line = 0;
        if (!r->present || !r->token)
            continue;
        len = companion(r, ":queue", name, sizeof(name));
        cli_raw_append(t->ctx, "ZCARD %b", name, (size_t)len);
        len = companion(r, ":queue-seq", name, sizeof(name));
        cli_raw_append(t->ctx, "GET %b", name, (size_t)len);
    }
    for (i = 0; t->has_numsub && i < t->n; i += NUMSUB_BATCH)
        if ((status = ask_numsub(
                 t, i, t->n - i < NUMSUB_BATCH ? t->n : i + NUMSUB_BATCH))
            != 0)
            return status;
    for (i = 0; i < t->n; i++) {
        struct row *r = &t->rows[i];

        if (!r->present || !r->token)
            continue;
        if ((status = next(t, &a)) != 0)
            return status;
        if ((status = next(t, &b)) != 0) {
            freeReplyObject(a);
            return status;
        }
        r->line = int_reply(a);
        r->seq = int_reply(b);
        freeReplyObject(a);
        freeReplyObject(b);
    }
    for (i = 0; t->has_numsub && i < t->n; i += NUMSUB_BATCH) {
        if ((status = next(t, &a)) != 0)
            return status;
        /* [channel, count, channel, count, ...] in the order asked */
        for (j = 0; a->type == REDIS_REPLY_ARRAY && 2 * j + 1 < a->elements
                    && i + j < t->n;
             j++)
            t->rows[i + j].numsub = int_reply(a->element[2 * j + 1]);
        freeReplyObject(a);
    }
    for (i = 0; i < t->n; i++)
        if (t->rows[i].numsub > t->rows[i].line)
            t->rows[i].line = t->rows[i].numsub;
    return 0;
}

/* Every message waiting on the subscriber: one release of its key each. */
static int drain_sub(struct top *t)
{
    void *m = NULL;

    if (t->sub == NULL)
        return 0;
    for (;;) {
        while (redisReaderGetReply(t->sub->reader, &m) == REDIS_OK
               && m != NULL) {
            redisReply *r = m;

            if (r->type == REDIS_REPLY_ARRAY && r->elements == 4
                && r->element[0]->type == REDIS_REPLY_STRING
                && strcmp(r->element[0]->str, "pmessage") == 0
                && r->element[3]->type == REDIS_REPLY_STRING) {
                struct row *row =
                    row_for(t, r->element[3]->str, r->element[3]->len);

                if (row != NULL)
                    row->releases_heard++;
            }
            freeReplyObject(m);
            m = NULL;
        }
        if (t->sub->err) {
            top_error("the release subscription: %s", t->sub->errstr);
            return CLI_EXIT_UNAVAILABLE;
        }
        {
            struct pollfd p = {.fd = t->sub->fd, .events = POLLIN};

            if (poll(&p, 1, 0) != 1)
                return 0;
        }
        if (tslock_conn_read(t->sub) != TSLOCK_OK) {
            top_error("the release subscription: %s", t->sub->errstr);
            return CLI_EXIT_UNAVAILABLE;
        }
    }
}

static void note_writer(struct top *t, const char *client, const char *key,
                        size_t len)
{
    struct row *r = row_for(t, key, len);
    int i;

    t->legacy_writes++;
    if (r == NULL)
        return;
    for (i = 0; i < r->n_writers; i++)
        if (strcmp(r->writers[i], client) == 0)
            return;
    if (r->n_writers < MAX_WRITERS)
        snprintf(r->writers[r->n_writers++], sizeof(r->writers[0]), "%s",
                 client);
}

/*
 * Every MONITOR line waiting: SETNX and GETSET sent by a client are the
 * legacy writes.  tslock's own come from its scripts (MONITOR says "lua")
 * wherever the server has Lua (2.6+), so they are not counted.
 */
static int drain_monitor(struct top *t)
{
    char client[64], command[16], key[KEY_MAX];
    size_t key_len;
    void *m = NULL;

    if (t->mon == NULL)
        return 0;
    for (;;) {
        while (redisReaderGetReply(t->mon->reader, &m) == REDIS_OK
               && m != NULL) {
            redisReply *r = m;

            if (r->type == REDIS_REPLY_STATUS
                && cli_monitor_line(r->str, r->len, client, sizeof(client),
                                    command, sizeof(command), key, sizeof(key),
                                    &key_len)
                       == 0
                && strcmp(client, "lua") != 0
                && (strcmp(command, "setnx") == 0
                    || strcmp(command, "getset") == 0))
                note_writer(t, client, key, key_len);
            freeReplyObject(m);
            m = NULL;
        }
        if (t->mon->err) {
            top_error("MONITOR: %s", t->mon->errstr);
            return CLI_EXIT_UNAVAILABLE;
        }
        {
            struct pollfd p = {.fd = t->mon->fd, .events = POLLIN};

            if (poll(&p, 1, 0) != 1)
                return 0;
        }
        if (tslock_conn_read(t->mon) != TSLOCK_OK) {
            top_error("MONITOR: %s", t->mon->errstr);
            return CLI_EXIT_UNAVAILABLE;
        }
    }
}

/* Drop the rows with nothing to show: no lock, no activity, no writer. */
static void prune(struct top *t)
{
    size_t i, kept = 0;

    for (i = 0; i < t->n; i++) {
        struct row *r = &t->rows[i];

        if (r->present || r->releases > 0 || r->n_writers > 0 || r->line > 0)
            t->rows[kept++] = *r;
    }
    t->n = kept;
    (void)reindex(t); /* only shrinks: cannot fail for want of memory */
}

/* One reading: walk, lines, what the subscriber and MONITOR heard. */
static int sample(struct top *t)
{
    int64_t now = cli_mono_ms();
    double secs = t->last_ms ? (double)(now - t->last_ms) / 1000.0 : 0;
    size_t i;
    int status;

    for (i = 0; i < t->n; i++) {
        t->rows[i].present = 0;
        t->rows[i].dialect[0] = '\0';
        t->rows[i].stamp[0] = '\0';
        t->rows[i].never = 0;
        t->rows[i].holder[0] = '\0';
        t->rows[i].left_ms = -1;
        t->rows[i].expired = 0;
    }
    status = cli_survey_locks(t->ctx, NULL, t->o->top_scan_max, on_lock, t,
                              &t->keys_seen, &t->cut);
    if (status == 0)
        status = drain_sub(t);
    if (status == 0)
        status = drain_monitor(t);
    if (status == 0)
        status = read_lines(t);
    if (status != 0)
        return status;
    t->releases_total = t->waits_total = 0;
    for (i = 0; i < t->n; i++) {
        struct row *r = &t->rows[i];
        long grown = 0;

        if (r->token && r->seq_prev >= 0 && r->seq > r->seq_prev)
            grown = r->seq - r->seq_prev;
        else if (!r->token && r->numsub_prev >= 0 && r->numsub > r->numsub_prev)
            grown = r->numsub - r->numsub_prev;
        r->waits = grown;
        r->releases = r->releases_heard;
        r->releases_heard = 0;
        r->seq_prev = r->seq;
        r->numsub_prev = r->numsub;
        r->waits_s = secs > 0 ? (double)r->waits / secs : 0;
        r->releases_s = secs > 0 ? (double)r->releases / secs : 0;
        t->releases_total += r->releases;
        t->waits_total += r->waits;
    }
    t->secs = secs;
    t->legacy_s = secs > 0 ? (double)t->legacy_writes / secs : 0;
    t->legacy_writes = 0;
    t->last_ms = now;
    prune(t);
    return 0;
}

/* Where top looks, for its title and its last words. */
static const char *where(const struct cli_options *o)
{
    static char text[300];

    if (o->url.is_unix || o->url.nsentinels > 0)
        snprintf(text, sizeof(text), "%s",
                 o->url.nsentinels > 0 ? o->url.master_name : o->url.host);
    else
        snprintf(text, sizeof(text), "%s:%d", o->url.host, o->url.port);
    return text;
}

static enum sort sort_by;

static int compare(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    int c = 0;

    switch (sort_by) {
    case SORT_WAITS:
        c = (y->waits > x->waits) - (y->waits < x->waits);
        if (c == 0)
            c = (y->line > x->line) - (y->line < x->line);
        break;
    case SORT_RELEASES:
        c = (y->releases > x->releases) - (y->releases < x->releases);
        break;
    case SORT_LEFT:
        c = (y->left_ms > x->left_ms) - (y->left_ms < x->left_ms);
        break;
    case SORT_LINE:
        c = (y->line > x->line) - (y->line < x->line);
        break;
    default:
        break;
    }
    if (c == 0) {
        size_t n = x->len < y->len ? x->len : y->len;

        c = memcmp(x->key, y->key, n);
        if (c == 0)
            c = (x->len > y->len) - (x->len < y->len);
    }
    return c;
}

/* One line of the frame: on a terminal cut to its width, cleared to eol. */
static void emit(const struct top *t, const char *text)
{
    if (t->tty) {
        printf("%.*s\033[K\r\n", t->cols_term, text);
    } else {
        fputs(text, stdout);
        putchar('\n');
    }
}

static void key_text(const struct row *r, char *out, size_t size)
{
    size_t i, o = 0;

    for (i = 0; i < r->len && o + 5 < size; i++) {
        unsigned char c = (unsigned char)r->key[i];

        if (c < 0x20 || c >= 0x7f || c == '\\')
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    out[o] = '\0';
}

static void draw(struct top *t)
{
    char line[1024], key[256], left[24];
    long locks = 0, waiting = 0;
    size_t i, shown, room;

    sort_by = t->sort;
    if (t->n > 1) /* rows is NULL before the first key */
        qsort(t->rows, t->n, sizeof(*t->rows), compare);
    (void)reindex(t);
    for (i = 0; i < t->n; i++) {
        locks += t->rows[i].present;
        waiting += t->rows[i].line;
    }
    if (t->tty)
        fputs("\033[H", stdout);
    snprintf(line, sizeof(line),
             "tslock top - %s  sort %s  locks %ld  waiting %ld  waits/s %.1f  "
             "releases/s %.1f  legacy writes/s %.1f  keys %ld%s",
             where(t->o), sort_names[t->sort], locks, waiting,
             t->secs > 0 ? (double)t->waits_total / t->secs : 0.0,
             t->secs > 0 ? (double)t->releases_total / t->secs : 0.0,
             t->legacy_s, t->keys_seen, t->cut ? " (scan cut)" : "");
    emit(t, line);
    snprintf(line, sizeof(line), "%-24s %-15s %-23s %9s %5s %8s %8s %6s %s",
             "KEY", "KIND", "HOLDER", "LEFT_MS", "LINE", "WAITS/S", "RELS/S",
             "LEGACY", "DIALECT");
    emit(t, line);
    room = t->tty && t->rows_term > 3 ? (size_t)t->rows_term - 3 : SIZE_MAX;
    for (i = 0, shown = 0; i < t->n && shown < room; i++) {
        const struct row *r = &t->rows[i];

        if (t->o->top_limit > 0 && shown >= (size_t)t->o->top_limit)
            break;
        key_text(r, key, sizeof(key));
        if (r->expired)
            snprintf(left, sizeof(left), "expired");
        else if (r->never)
            snprintf(left, sizeof(left), "never");
        else if (r->left_ms >= 0)
            snprintf(left, sizeof(left), "%" PRId64, r->left_ms);
        else
            snprintf(left, sizeof(left), "-");
        snprintf(line, sizeof(line),
                 "%-24s %-15s %-23s %9s %5ld %8.1f %8.1f %6d %s", key,
                 r->dialect[0] ? r->dialect : "-",
                 r->holder[0] ? r->holder : "-", left, r->line, r->waits_s,
                 r->releases_s, r->n_writers, r->stamp[0] ? r->stamp : "-");
        emit(t, line);
        shown++;
    }
    if (t->tty) {
        fputs("\033[J", stdout); /* whatever the last frame left below */
        if (t->rows_term > 0)
            printf("\033[%d;1H\033[7m q quit  w waits  r releases  t time "
                   "left  n name  l line  s next sort \033[0m\033[K",
                   t->rows_term);
    }
    fflush(stdout);
}

/* The keys typed since the last look: 1 to quit. */
static int read_keys(struct top *t)
{
    char buf[32];
    ssize_t n, i;

    n = read(STDIN_FILENO, buf, sizeof(buf));
    for (i = 0; i < n; i++)
        switch (buf[i]) {
        case 'q':
        case 'Q':
            return 1;
        case 'w':
            t->sort = SORT_WAITS;
            break;
        case 'r':
            t->sort = SORT_RELEASES;
            break;
        case 't':
            t->sort = SORT_LEFT;
            break;
        case 'n':
            t->sort = SORT_NAME;
            break;
        case 'l':
            t->sort = SORT_LINE;
            break;
        case 's':
            t->sort = (enum sort)((t->sort + 1) % N_SORT);
            break;
        default:
            break;
        }
    return 0;
}

/*
 * Wait until the next frame is due, a key, a resize or a signal.  The
 * subscriber and MONITOR are read as they speak, so their buffers stay
 * small.  Returns 0 to draw, 1 to quit, or an exit status.
 */
static int wait_frame(struct top *t, int64_t due)
{
    for (;;) {
        struct pollfd p[3];
        int n = 0, status, in = -1, now_left;

        if (got_signal)
            return 1;
        if (got_winch) {
            got_winch = 0;
            term_size(t);
            fputs("\033[2J", stdout);
            return 0;
        }
        now_left = (int)(due - cli_mono_ms());
        if (now_left <= 0)
            return 0;
        if (t->tty) {
            in = n;
            p[n].fd = STDIN_FILENO;
            p[n++].events = POLLIN;
        }
        if (t->sub != NULL) {
            p[n].fd = t->sub->fd;
            p[n++].events = POLLIN;
        }
        if (t->mon != NULL) {
            p[n].fd = t->mon->fd;
            p[n++].events = POLLIN;
        }
        if (poll(p, (nfds_t)n, now_left) < 0) {
            if (errno == EINTR)
                continue;
            return CLI_EXIT_OSERR;
        }
        if (in >= 0 && (p[in].revents & POLLIN)) {
            if (read_keys(t))
                return 1;
            if (!t->tty)
                continue;
            draw(t); /* the new order at once */
        }
        if ((status = drain_sub(t)) != 0 || (status = drain_monitor(t)) != 0)
            return status;
    }
}

/* The release subscriber and MONITOR, each on its own connection. */
static int listen_start(struct top *t)
{
    redisReply *r;
    int status = cli_raw_connect(t->o, 0, &t->sub);

    if (status != 0)
        return status;
    r = cli_raw_command(t->sub, "PSUBSCRIBE *:released *:wake:*");
    if (r == NULL) {
        cli_error("PSUBSCRIBE: %s", t->sub->errstr);
        return CLI_EXIT_UNAVAILABLE;
    }
    freeReplyObject(r);
    r = NULL;
    /* The second pattern's confirmation. */
    if (tslock_conn_get_reply(t->sub, (void **)&r) != TSLOCK_OK) {
        cli_error("PSUBSCRIBE: %s", t->sub->errstr);
        return CLI_EXIT_UNAVAILABLE;
    }
    freeReplyObject(r);
    if (t->o->top_no_monitor)
        return 0;
    if ((status = cli_raw_connect(t->o, 0, &t->mon)) != 0)
        return status;
    r = cli_raw_command(t->mon, "MONITOR");
    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        /* An ACL may refuse MONITOR: the column stays empty, said once. */
        cli_verbose("MONITOR refused: %s", r != NULL ? r->str : t->mon->errstr);
        freeReplyObject(r);
        tslock_conn_free(t->mon);
        t->mon = NULL;
        return 0;
    }
    freeReplyObject(r);
    return 0;
}

static int learn(struct top *t)
{
    int major = 0, minor = 0, cluster = 0;
    int status = cli_raw_version(t->ctx, &major, &minor, &cluster);

    t->has_numsub = major > 2 || (major == 2 && minor >= 8);
    return status;
}

int cli_top(const struct cli_options *o)
{
    struct top t;
    int status, quit = 0;

    memset(&t, 0, sizeof(t));
    t.o = o;
    t.sort = SORT_WAITS;
    t.tty = !o->top_once && isatty(STDOUT_FILENO);
    if (!o->top_once && !isatty(STDOUT_FILENO)) {
        cli_error("top draws on a terminal: stdout is not one (for scripts, "
                  "pass --once)");
        return CLI_EXIT_USAGE;
    }
    status = cli_raw_connect(o, 1, &t.ctx);
    if (status == 0)
        status = learn(&t);
    if (status == 0 && o->top_once) {
        /* Rates need two readings: the interval between them. */
        if ((status = listen_start(&t)) == 0 && (status = sample(&t)) == 0) {
            usleep((useconds_t)o->top_interval_ms * 1000);
            status = sample(&t);
        }
        if (status == 0)
            draw(&t);
    } else if (status == 0) {
        install_handlers();
        status = listen_start(&t);
        if (status == 0) {
            term_size(&t);
            screen_start();
            status = sample(&t);
        }
        while (status == 0 && !quit) {
            int64_t due = cli_mono_ms() + o->top_interval_ms;

            draw(&t);
            status = wait_frame(&t, due);
            if (status == 1) {
                quit = 1;
                status = 0;
            } else if (status == 0) {
                status = sample(&t);
            }
        }
        screen_restore();
        /* The reason, if any, was kept until the screen was back. */
        if (status != 0 && held_error[0] != '\0')
            cli_error("%s", held_error);
        if (status != 0)
            cli_error("top stopped: the server at %s went away or failed "
                      "(exit %d)",
                      where(o), status);
        if (status == 0 && got_signal)
            status = CLI_EXIT_SIGNAL_BASE + (int)got_signal;
    }
    if (t.ctx)
        tslock_conn_free(t.ctx);
    if (t.sub)
        tslock_conn_free(t.sub);
    if (t.mon)
        tslock_conn_free(t.mon);
    free(t.rows);
    free(t.index);
    return status;
}
