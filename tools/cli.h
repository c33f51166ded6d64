/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli.h - declarations shared by the files of the tslock command: its
 * exit statuses, its options, the URL parser, the connection helpers and
 * the entry points of each form (run, acquire, release, extend, status,
 * break, survey, watch, demo).  tslock(1) documents everything declared here
 * that a user sees.
 */
#ifndef TSLOCK_CLI_H
#define TSLOCK_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tslock.h>

#include "rawcmd.h"

/*
 * Exit statuses.  The busy status is an option (-E); the rest are fixed
 * and documented in tslock(1).  They follow sysexits.h where one fits,
 * and stay clear of 0, 1 and the shell's 126, 127 and 128+N.
 */
#define CLI_EXIT_OK          0
#define CLI_EXIT_BUSY        1  /* default of -E */
#define CLI_EXIT_SKIPPED     3  /* --once-per: this period already ran */
#define CLI_EXIT_NOT_BROKEN  1  /* break deleted nothing */
#define CLI_EXIT_USAGE       64 /* EX_USAGE: bad option, URL or argument */
#define CLI_EXIT_UNAVAILABLE 69 /* EX_UNAVAILABLE: connect, timeout, auth */
#define CLI_EXIT_SOFTWARE    70 /* EX_SOFTWARE: server refused, bad reply */
#define CLI_EXIT_OSERR       71 /* EX_OSERR: fork, pipe, memory, temp dir */
#define CLI_EXIT_LOST        75 /* EX_TEMPFAIL: lease lost while in use */
#define CLI_EXIT_NOPERM      77 /* EX_NOPERM: the server's ACL denied it */
#define CLI_EXIT_TLS         78 /* EX_CONFIG: TLS: certificate, CA, key */
#define CLI_EXIT_NOEXEC      126
#define CLI_EXIT_NOTFOUND    127
#define CLI_EXIT_SIGNAL_BASE 128

/* The most -u a Redlock takes (the library's limit). */
#define CLI_MAX_MASTERS 63

/* Everything the options set; filled by main() before any form runs. */
struct cli_options {
    struct tslock_url url;
    /* -u given N times (N odd, >= 3): a Redlock over these masters. */
    struct tslock_url *masters;
    int n_masters; /* 0 for one server */
    tslock_scheme scheme;
    tslock_unit unit;
    const char *dialect; /* --dialect: a preset or format, NULL: plain */
    int64_t ttl_ms;
    int ttl_given; /* the demo has its own default lease */
    int64_t wait_ms;
    tslock_time_source time_source;
    tslock_functions functions; /* --functions: FCALL where EVAL is refused */
    int pubsub;                 /* --pubsub: TSLOCK_PUBSUB_* for wake-ups */
    /* --takeover-grace: stamps count as expired this much later */
    int64_t takeover_grace_ms;
    int renew;
    int kill_on_loss;
    int busy_status;
    int workers;              /* demo */
    int64_t duration_ms;      /* demo: per scheme */
    const char *svg_path;     /* demo --svg: the timeline's file, or NULL */
    int timeout_ms;           /* --timeout: connecting, and each command */
    int fair;                 /* --fair: waiters in the order they asked */
    tslock_rw rw;             /* --shared, --exclusive: a read-write side */
    int64_t permits;          /* --permits N: a semaphore, or 0 */
    int poll;                 /* --poll: wait by polling, not woken */
    int fence;                /* --fence: a fencing number with each hold */
    int replicas;             /* --replicas: WAIT for this many (0: none) */
    int replicas_timeout_ms;  /* --replicas-timeout */
    const char *if_value;     /* --if-value: what break may delete, or NULL */
    const char *survey_match; /* survey --match: a SCAN pattern, or NULL */
    int survey_json;          /* survey --json: JSON Lines */
    int survey_all;           /* survey --all: list not-a-lock keys too */
    int survey_keys;          /* survey --keys: KEYS where SCAN is missing */
    int64_t watch_for_ms;     /* watch --for: 0 until a signal */
    int replay_list;          /* replay --list: the races, one a line */
    const char *html_path;    /* replay --html: the classroom page, or NULL */
    const char *doc_url;      /* replay --doc: where doc/races.md is read */
    int64_t at_least_ms;      /* --at-least: hold this long at least */
    int64_t once_per_ms;      /* --once-per: the period, 0 for none */
    int64_t period_offset_ms; /* --period-offset: periods start this late */
    int retry_failed;         /* --retry-failed: a failed run may rerun */
    int64_t keep_periods;     /* --keep-periods: records live this long */
    const char *host_name;    /* --host-name: who runs, in the record */
    int64_t history_last;     /* history --last N */
    int wait_given;           /* -w was given */
    int top_once;             /* top --once: one frame, no escapes */
    int64_t top_interval_ms;  /* top --interval: between frames */
    int64_t top_limit;        /* top --limit N: rows at most (0: fit) */
    int64_t top_scan_max;     /* top --scan-max N: keys read per frame */
    int top_no_monitor;       /* top --no-monitor: no legacy column */
    /* exporter (exporter.c) and survey --since (migration.c) */
    const char *listen;     /* --listen ADDR:PORT */
    int prefix_depth;       /* --prefix-depth: separators kept */
    const char *prefix_sep; /* --prefix-sep */
    int max_series;         /* --max-series: prefixes per server */
    int64_t scan_budget;    /* --scan-budget: keys read per scrape */
    int monitor_duty;       /* --monitor-duty: percent of the time */
    int64_t record_max;     /* --record-max: record entries, 0: off */
    int64_t since_ms;       /* survey --since: the window, 0: none */
};

/* top's defaults: a frame a second, at most this many keys read a frame. */
#define CLI_DEFAULT_TOP_INTERVAL_MS 1000
#define CLI_DEFAULT_TOP_SCAN_MAX    10000

/* --keep-periods and history --last: their defaults. */
#define CLI_DEFAULT_KEEP_PERIODS 30
#define CLI_DEFAULT_HISTORY_LAST 10

/* --replicas-timeout's default: how long WAIT waits for the replicas. */
#define CLI_DEFAULT_REPLICAS_TIMEOUT_MS 1000

/* --timeout's default, for connecting and for each command. */
#define CLI_DEFAULT_TIMEOUT_MS 5000

/* Where to connect when neither -u nor $REDIS_URL says. */
#define CLI_DEFAULT_URL "redis://127.0.0.1:6379"

/* What the command line asks for, before it is checked. */
struct cli_request {
    const char *url_text;
    const char *url_origin; /* "--url", "$REDIS_URL" or "the default URL" */
    char *url_copy;         /* -u's value, owned: argv's copy is scrubbed */
    char *url_copies[CLI_MAX_MASTERS]; /* every -u, owned, in order */
    int n_urls;                        /* how many -u (may exceed the max) */
    int password_in_argv;              /* a -u or -a carried a password */
    int no_auth_warning;
    char *password;   /* -a's value, owned (argv's copy is scrubbed) */
    const char *user; /* --user */
    /* --tls and its settings, for every URL (tslock_tls_set() names). */
    int tls;
    int n_tls;
    const char *tls_name[8];
    const char *tls_value[8];
    const char *tls_key; /* --key: its permissions are checked */
    int help, version;
    char **words; /* KEY, or a form's name and its arguments */
    int n_words;
    char **command; /* after "--", NULL without "--" */
};

/* -1 with -q, 0 by default, 1 with -v. */
extern int cli_verbosity;

/* One line on stderr, prefixed "tslock: ", always printed. */
void cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Chatter: printed unless -q. */
void cli_info(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Steps: printed only with -v. */
void cli_verbose(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/*
 * With -v, once a process: say that the client's wake-ups fell back to
 * polling or to unannounced releases (tslock_client_wakeups), and why.
 */
void cli_note_wakeups(tslock_client *c);

/* ---- options.c */

/*
 * Read argv into r and o (defaults first, $REDIS_URL included), and
 * scrub the password of every -u from argv in place.  Runs no form and
 * sends nothing.  Returns 0, or an exit status with one line printed.
 * Free r with cli_request_free() either way.
 */
int cli_parse_args(int argc, char **argv, struct cli_request *r,
                   struct cli_options *o);
void cli_request_free(struct cli_request *r);
/* cli_error() the formatted line; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* ---- URLs: the library's parser (tslock_url_parse() and its kin). */

/* Parse as the tool does: a URL without a password takes $REDISCLI_AUTH. */
static inline int cli_url_parse(const char *text, struct tslock_url *out,
                                char *err, size_t errsize)
{
    return tslock_url_parse(text, TSLOCK_URL_ENV_AUTH, out, err, errsize);
}

/*
 * What the options add to a URL just parsed: -a's password, --user, and
 * TLS (--tls, --cacert, ...; $TSLOCK_TLS_KEY_PASSWORD); a key file of
 * --key or of text's ssl_keyfile= that others may read is warned about.
 * 0, or an exit status with the reason printed.
 */
int cli_url_finish(const struct cli_request *r, struct tslock_url *u,
                   const char *text, const char *which);

/* ---- session.c: connections, locks and what their codes mean */

/* The exit status for a tslock code that is an error. */
int cli_status_for(int code);
/* Connect a new client to url; on failure prints why, returns status. */
int cli_connect(const struct cli_options *o, tslock_client **out);
/*
 * A new client for url with the options' settings, connected if it can
 * be: *out is set whenever the client exists, and the connect's code is
 * returned (the client stays usable for a reconnect later).
 */
int cli_client_for(const struct cli_options *o, const struct tslock_url *url,
                   tslock_client **out);
/* A lock on key with the options' scheme, ttl and unit. */
int cli_lock_new(const struct cli_options *o, tslock_client *c, const char *key,
                 tslock_lock **out);
/* "token", "timestamp" ... for messages. */
const char *cli_scheme_name(tslock_scheme scheme);
const char *cli_unit_name(tslock_unit unit);
/* Print "what: TSLOCK_Ex: detail" and return the exit status for rc. */
int cli_fail(tslock_client *c, int rc, const char *what);
/* Current wall-clock time in Unix milliseconds. */
int64_t cli_wall_ms(void);
int64_t cli_mono_ms(void);

/*
 * Take the lock as the options say (-w), reporting busy and errors.  A
 * SIGINT, SIGTERM or SIGHUP during the wait cancels it (the signal
 * handlers must be installed) and gives 128 + the signal, with the lock
 * not held.  Returns CLI_EXIT_OK with the lock held, or the exit status.
 */
int cli_take(const struct cli_options *o, tslock_client *c, tslock_lock *l,
             const char *key);
/*
 * cli_take for the n locks of keys[] as one set (tslock_acquire_all()):
 * every one held, or none.  n == 1 is cli_take.
 */
int cli_take_set(const struct cli_options *o, tslock_client *c,
                 tslock_lock **locks, char **keys, int n);

/* ---- quorum.c: the forms over several masters (Redlock) */

/*
 * Check that several -u fit the form and the options, and parse each URL
 * into o->masters.  form: the form's name, or NULL for KEY -- COMMAND.
 * Returns 0 (also for one -u, which changes nothing), or an exit status
 * with one line printed.
 */
int cli_masters_parse(const struct cli_request *r, struct cli_options *o,
                      const char *form);
void cli_masters_free(struct cli_options *o);
/*
 * Connect to every master (a master that cannot be reached now is only
 * reported: the Redlock reconnects it later) and make the Redlock with
 * the options' ttl.  *clients is new, freed with cli_quorum_close().
 */
int cli_quorum_open(const struct cli_options *o, const char *key,
                    tslock_client ***clients, tslock_redlock **rl);
void cli_quorum_close(const struct cli_options *o, tslock_client **clients,
                      tslock_redlock *rl);
/* Take it as -w says; as cli_take(). */
int cli_quorum_take(const struct cli_options *o, tslock_redlock *rl,
                    const char *key);
/*
 * --renew: extend every ttl/3 from a thread of its own until stopped.
 * on_failure(code, detail, userdata) is called once, from that thread,
 * when the hold is lost or its validity ran out before a majority
 * renewed it; on_warning when a renewal reached too few masters but the
 * validity left still covers the hold.
 */
struct cli_renewer;
int cli_quorum_renew_start(tslock_redlock *rl, int64_t ttl_ms,
                           tslock_watchdog_fn on_failure,
                           tslock_watchdog_fn on_warning, void *userdata,
                           struct cli_renewer **out);
/* Stop and join: TSLOCK_OK, or the code the renewals ended with. */
int cli_quorum_renew_stop(struct cli_renewer *w);
int cli_quorum_acquire(const struct cli_options *o, const char *key);
int cli_quorum_release(const struct cli_options *o, const char *key,
                       const char *handle);
int cli_quorum_extend(const struct cli_options *o, const char *key,
                      const char *handle);
int cli_quorum_status(const struct cli_options *o, const char *key);

/* ---- the forms */
int cli_run(const struct cli_options *o, char **keys, int n_keys,
            char **command);
int cli_acquire(const struct cli_options *o, const char *key);
int cli_release(const struct cli_options *o, const char *key,
                const char *handle);
int cli_extend(const struct cli_options *o, const char *key,
               const char *handle);
int cli_status(const struct cli_options *o, const char *key);
int cli_break(const struct cli_options *o, const char *key);
int cli_demo(const struct cli_options *o);
/* check.c: whether this user's ACL allows what the scheme needs on key. */
int cli_check(const struct cli_options *o, const char *key);
/* Verbose: the pub/sub wake-ups use, and why (session.c). */
void cli_report_pubsub(tslock_client *c, int asked);
/* tslock functions load|print: tslock's Redis 7 function library. */
int cli_functions(const struct cli_options *o, const char *action);
/* survey.c: list the locks in the server, read only. */
int cli_survey(const struct cli_options *o);
/* tslock dialects: the presets, their formats and libraries. */
int cli_dialects(const struct cli_options *o);
/*
 * stampname.c: what a stored value is, as survey, top, watch and the
 * exporter name it.  dialect: the presets whose clients could have
 * written it, joined by '/' (tslock_dialect_match()), "unknown-stamp"
 * for a value that looks like a lock (a plausible number first, or a
 * PHP-serialized array) but that no preset reads, "" for tokens and
 * values that are no lock.
 */
enum cli_stamp_kind {
    CLI_STAMP_NONE,   /* not a lock */
    CLI_STAMP_TOKEN,  /* 32 hex digits */
    CLI_STAMP_STAMP,  /* an expiry stamp of a known dialect */
    CLI_STAMP_UNKNOWN /* looks like a lock, no dialect reads it */
};
struct cli_stamp {
    int kind;           /* enum cli_stamp_kind */
    tslock_unit unit;   /* stamps: the unit of the (first) dialect */
    int64_t expires_ms; /* stamps: INT64_MAX for "never expires" */
    char dialect[96];
};
/*
 * Name the value v[0..len) of key (NULL: a key the caller knows is a
 * lock, whose bare "1" or "true" is a never-expires sentinel; else such a
 * sentinel counts only on a key whose name holds "lock").  Returns the
 * kind, as out->kind.
 */
int cli_stamp_name(const char *key, size_t key_len, const char *v, size_t len,
                   struct cli_stamp *out);
/*
 * survey.c for the exporter: the locks by dialect and state (not-a-lock
 * left out), keys read and members of fair lines ({KEY}:queue).
 */
#define CLI_SURVEY_DIALECTS 8 /* token, timestamp-..., bridge-..., unknown */
#define CLI_SURVEY_STATES   5 /* live, expired, no-ttl, never, unreadable */
/* Stamps by the dialect names their value matches, and state. */
#define CLI_SURVEY_NAMED 24 /* names counted; the rest under "(other)" */
struct cli_dialect_count {
    char name[96];
    long states[CLI_SURVEY_STATES];
};
struct cli_survey_tally {
    long locks[CLI_SURVEY_DIALECTS][CLI_SURVEY_STATES];
    struct cli_dialect_count named[CLI_SURVEY_NAMED + 1]; /* + "(other)" */
    int n_named;
    long keys;
    long waiters;
    long scan_calls;
};
const char *cli_survey_dialect_name(int d);
const char *cli_survey_state_name(int st);
/* Count one stamp of dialect name in state st into t (survey.c). */
void cli_survey_count_named(struct cli_survey_tally *t, const char *name,
                            int st, long n);
/*
 * SCAN on from cursor ("0" to begin) until it comes back to "0" or about
 * budget keys were read, adding what was read to *t.  Returns 0 or an
 * exit status, printed.
 */
struct redisContext;
int cli_survey_step(struct redisContext *ctx, const struct cli_options *o,
                    int has_pttl, char cursor[32], long budget,
                    struct cli_survey_tally *t);
/* migration.c: the record of legacy writers, fed by the exporter. */
struct cli_legacy_write;
struct cli_record_entry {
    char *member; /* "ADDRESS KEY" */
    size_t len;
    int64_t at_ms;
};
struct cli_legacy_record {
    struct cli_record_entry *pending; /* since the last flush */
    int n, cap;
    long dropped;
    int64_t first_ms;      /* this recorder's span began, server ms */
    int64_t last_flush_ms; /* monotonic */
    char name[320];        /* "HOST LISTEN" */
};
void cli_record_note(struct cli_legacy_record *r,
                     const struct cli_legacy_write *w);
/*
 * Write what was noted (ZADD, capped at max members by ZREMRANGEBYRANK)
 * and, with monitor_on, this recorder's span: 0, or -1 printed.
 */
int cli_record_flush(struct redisContext *ctx, struct cli_legacy_record *r,
                     const char *listen, int64_t server_now_ms, int monitor_on,
                     int64_t max);
void cli_record_free(struct cli_legacy_record *r);
/* migration.c: survey --since: the legacy writers the exporter recorded. */
int cli_survey_since(const struct cli_options *o);
/* ---- escape.c: bytes from Redis, printed safely */

/*
 * p[0..len) in double quotes, with \" \\ and \xHH for bytes that are not
 * printable ASCII; at most max bytes (0: all).  1 when it cut, else 0.
 */
int cli_print_quoted(const char *p, size_t len, size_t max);
/* p[0..len) as a JSON string (UTF-8 kept, other bytes as U+FFFD). */
void cli_print_json_string(const char *p, size_t len);
/* The same on f; script_safe escapes '<', '>' and '&' too (for HTML). */
void cli_write_json_string(FILE *f, const char *p, size_t len, int script_safe);

/* ---- once.c: --once-per, its record in Redis, and tslock history */

struct cli_once;
/*
 * With the lock on key held: read this period's record and decide.
 * CLI_EXIT_OK: run COMMAND (the record now says it runs here; *out is
 * new); CLI_EXIT_SKIPPED: the period ran already, the reason printed
 * (-q: not printed); or an exit status with the error printed.
 */
int cli_once_begin(const struct cli_options *o, const char *key,
                   struct cli_once **out);
/* COMMAND ended with status (lost: the lease was lost): record it, free. */
void cli_once_end(struct cli_once *once, int status, int lost);
/* The history form: the last --last runs of key, newest first. */
int cli_history(const struct cli_options *o, const char *key);
/* "1d", "15m", "30s", "250ms" or plain milliseconds: 0, or -1. */
int cli_parse_duration(const char *text, int64_t *out);

/* ---- rawconn.c: a plain connection for survey and watch */

struct redisContext;
struct redisReply;
/* r if it is a reply and not an error; else NULL, the reason printed. */
struct redisReply *cli_raw_reply(struct redisContext *ctx, const char *what,
                                 struct redisReply *r);
/* After cli_raw_reply() gave NULL: EX_UNAVAILABLE when the connection
 * failed (the server went away), EX_SOFTWARE when the server answered
 * with an error. */
int cli_raw_failed(const struct redisContext *ctx);
/*
 * Connect as o's URL says, with --timeout, AUTH and (select_db) SELECT:
 * 0 with *out new (tslock_conn_free() it), or an exit status, the reason
 * printed.  With TLS (rediss://, --tls) the handshake is made first.
 */
int cli_raw_connect(const struct cli_options *o, int select_db,
                    struct redisContext **out);
/* The same to a cluster node at host:port (a NULL host: as the URL says). */
int cli_raw_connect_to(const struct cli_options *o, const char *host, int port,
                       int select_db, struct redisContext **out);
/*
 * INFO's redis_version, and whether INFO says cluster_enabled:1 (cluster
 * may be NULL): 0, or an exit status with the reason printed.
 */
int cli_raw_version(struct redisContext *ctx, int *major, int *minor,
                    int *cluster);
/* A Redis Cluster's masters and who owns each slot, from CLUSTER SLOTS. */
struct cli_cluster {
    size_t n;    /* masters */
    char **host; /* n of them */
    int *port;
    unsigned short owner[16384]; /* master index + 1, 0 for none */
};
/* 0 with *out new (cli_cluster_free() it), or an exit status, printed. */
int cli_raw_cluster(struct redisContext *ctx, const char *fallback_host,
                    struct cli_cluster **out);
void cli_cluster_free(struct cli_cluster *cl);

/* ---- survey.c, for tslock top: the locks of one walk, nothing printed */

struct cli_lock_seen {
    const char *key; /* borrowed for the call only */
    size_t len;
    const char *dialect;       /* survey's kinds: "token", "timestamp-ms" ... */
    const char *stamp_dialect; /* the presets it matches, "unknown-stamp",
                                  or "" for tokens */
    int token;                 /* a token lock (it may have a line) */
    int never;                 /* a never-expires sentinel */
    int64_t left_ms;           /* time left on the lease; -1 for none */
    const char *holder;        /* a token's first 23 bytes; "" for stamps */
};
typedef void (*cli_survey_each_fn)(void *arg, const struct cli_lock_seen *l);
/*
 * SCAN ctx's database (MATCH match, NULL for every key) as survey does,
 * stopping once max_keys keys are read (0: no bound), and call each for
 * every lock.  *keys_seen: keys read; *cut: the bound stopped the walk.
 * Returns 0, or an exit status with the reason printed.
 */
int cli_survey_locks(struct redisContext *ctx, const char *match, long max_keys,
                     cli_survey_each_fn each, void *arg, long *keys_seen,
                     int *cut);

/* ---- watch.c, for tslock top: one MONITOR line */

/*
 * The client address ("?" before 2.6), the command in lower case and its
 * first argument (cut to the sizes given) of one MONITOR line: 0, or -1
 * for a line that is no command (or has no argument).
 */
int cli_monitor_line(const char *s, size_t len, char *client,
                     size_t client_size, char *command, size_t command_size,
                     char *key, size_t key_size, size_t *key_len);

/* ---- top.c: the top form */
int cli_top(const struct cli_options *o);

/* ---- skew.c: how far a clock seems off the server's */

/* Differences within this are not reported: whole seconds, the network. */
#define CLI_SKEW_THRESHOLD_MS 1000
/* No plausible lease is longer than a day. */
#define CLI_SKEW_MAX_LEASE_MS INT64_C(86400000)
/* 1 with the server's clock minus ours from TIME, 0 without TIME. */
int cli_raw_clock_offset(struct redisContext *ctx, int64_t *offset_ms);
/* "clock: ..." for status and survey; its JSON fields, no braces. */
void cli_print_clock_offset(int have, int64_t offset_ms);
void cli_print_clock_offset_json(int have, int64_t offset_ms);
/* Whether a stamp's writer seems skewed, and by how much (see skew.c). */
int cli_writer_skew(int64_t expires_ms, int64_t at_ms, int64_t prior_ms,
                    int takeover, int64_t *ahead_ms, const char **why);

/* watch.c: follow MONITOR for writes to keys (--json shared with survey). */
int cli_watch(const struct cli_options *o, char **keys, int n_keys);
/* A legacy write seen on MONITOR: the key (cut at 511 bytes), who, when. */
struct cli_legacy_write {
    char key[512];
    size_t key_len;
    char client[128]; /* "127.0.0.1:51234", "unix:/s", or "?" before 2.6 */
    int64_t at_ms;    /* the server's clock, from the line */
};
/*
 * 1 when the MONITOR line is a classic client's write of a stamp (SETNX,
 * GETSET or plain SET, outside a script), with *out filled; else 0.
 */
int cli_monitor_legacy_write(const char *text, size_t len,
                             struct cli_legacy_write *out);
int cli_replay(const struct cli_options *o, const char *id, int list);

/*
 * replay --html: run the races named (every race when n is 0) and write
 * the classroom page to o->html_path, narrating each as replay does.
 */
int cli_replay_html(const struct cli_options *o, char **ids, int n);

/* ---- http.c: the exporter's HTTP/1.x */

#define CLI_HTTP_MAX_REQUEST 8192
struct cli_http_request {
    char method[16];
    char path[256];
    int minor;       /* HTTP/1.minor */
    int openmetrics; /* Accept names application/openmetrics-text */
    size_t length;   /* bytes of the request line and headers */
};
/*
 * Parse buf[0..len): 1 complete (*req filled), 0 incomplete, -1 bad
 * (*why says what was expected).  Never reads past len.
 */
int cli_http_parse(const char *buf, size_t len, struct cli_http_request *req,
                   const char **why);
/* A non-blocking listening socket on ADDR:PORT: 0, or an exit status. */
int cli_http_listen(const char *addr, int *out_fd);
/* Status line, headers and body (none with head_only): 0, or -1. */
int cli_http_respond(int fd, int status, const char *content_type,
                     const char *body, size_t len, int head_only);
/* exporter.c: tslock exporter --listen ADDR:PORT [-u URL]... */
int cli_exporter(const struct cli_options *o, char **urls, int n_urls);

/* ---- signals.c: what tslock does with INT, TERM and HUP */

/*
 * Install the handler for SIGINT, SIGTERM and SIGHUP (each unless it was
 * ignored when tslock started, as shells do).  While a wait is
 * registered the handler cancels it; while a child is registered it
 * forwards the signal.
 */
void cli_signals_install(void);
/* Ignore SIGPIPE: a server that hangs up gives an error, not death. */
void cli_signals_ignore_pipe(void);
/*
 * Block SIGINT, SIGTERM and SIGHUP in the calling thread, the old mask
 * in *old.  Threads started meanwhile inherit the block, so the handler
 * only ever runs in the main thread.
 */
void cli_signals_block(sigset_t *old);
/* Put back the dispositions tslock started with (in a child). */
void cli_signals_restore(void);
void cli_signals_wait_on(tslock_lock *l);             /* NULL to stop */
void cli_signals_wait_on_redlock(tslock_redlock *rl); /* NULL to stop */
/* A signal cancels the wait of every lock of the set (NULL to stop). */
void cli_signals_wait_on_set(tslock_lock **locks, int n);
void cli_signals_forward_to(int pid); /* 0 to stop */
/* The last of INT, TERM, HUP received, or 0. */
int cli_signals_received(void);

#endif /* TSLOCK_CLI_H */
