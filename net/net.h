/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net.h - the lowest layer of libtslock (net/): the client and its
 * connections.  The client structure; errors and the per-client detail
 * message; the two clocks; the wire; new connections; the command path
 * every lock operation's commands take; Sentinel and Cluster routing.
 * It knows no lock: the layers above (proto/, compat/, lib/) include it
 * through their own headers, and nothing here includes theirs.
 */
#ifndef TSLOCK_NET_H
#define TSLOCK_NET_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "hiredis_compat.h"
#include "tslock_atomic.h"

#include "tslock.h"

#define TSLOCK__ERRSTR_SIZE 512

enum tslock__transport {
    TRANSPORT_NONE,
    TRANSPORT_TCP,
    TRANSPORT_UNIX,
    TRANSPORT_WRAPPED
};

/* A histogram as counted: per bucket, not cumulative (stats.c). */
struct tslock__hist {
    atomic_ullong bucket[TSLOCK_STATS_BUCKETS];
    atomic_ullong sum_ms;
};

/*
 * What a client counts (stats.c, tslock_client_stats()).  Every field is
 * added to with a relaxed atomic add: a watchdog's thread counts into the
 * client of the lock it renews while the caller's thread counts too, and
 * any thread may read.
 */
struct tslock__stats {
    atomic_ullong acquired, busy, timed_out, canceled, errors;
    atomic_ullong by_scheme[4];
    atomic_int last_scheme;
    atomic_ullong released, lost, renewals, renewal_failures, takeovers,
        legacy_takeovers, wakes, retries;
    struct tslock__hist wait, hold;
};

struct tslock_client {
    redisContext *ctx;
    enum tslock__transport transport;
    char *host; /* TCP host or Unix socket path */
    int port;
    int connect_ms;
    int command_ms;
    char *user;
    char *password;
    int db;
    int broken;
    unsigned caps;
    unsigned caps_allowed; /* tslock_client_limit_caps() */
    int version[3];        /* -1 when INFO had no redis_version */
    tslock_step_hook hook;
    void *hook_ud;
    tslock_clock_fn clock;
    void *clock_ud;
    tslock_time_source time_source;
    int64_t clock_offset_ms; /* server wall clock minus ours, from TIME */
    char run_id[48];         /* INFO's run_id at the last connect, or "" */
    int publish_refused;     /* PUBLISH was refused (an ACL): not sent */
    unsigned wakeups;        /* TSLOCK_WAKEUPS_* fallbacks taken */
    char wakeups_why[256];   /* what made the first of them */
    /* The subscriber connection of waiting acquires (wakeup.c). */
    redisContext *sub;
    char *sub_channel;    /* what sub is subscribed to: the key's channel */
    char *sub_own;        /* and this client's own wake channel for that key */
    int sub_sharded;      /* sub listens with SSUBSCRIBE (tslock__sharded) */
    char *sub_classic;    /* and, then, with SUBSCRIBE to the classic name */
    char *sub_host;       /* where sub leads: a copy of the address it was */
    int sub_port;         /* opened to, to tell whether it serves a new key */
    int sub_swap_refused; /* the server refused UNSUBSCRIBE on sub */
    /*
     * Sharded pub/sub (Redis 7.0): the mode of tslock_client_set_pubsub()
     * and whether a server or proxy refused SSUBSCRIBE on this client,
     * which then uses classic pub/sub for the rest of its life.
     */
    int pubsub_mode;
    int sharded_refused;
    char waiter_id[33]; /* 32 hex digits: this client in a line of waiters */
    /*
     * Sentinel (sentinel.c): where to ask for the master.  With
     * nsentinels > 0 every (re)connect asks them, host and port hold the
     * master they named, and the probe checks the node is the master.
     */
    int nsentinels;
    char **sentinel_hosts;
    int *sentinel_ports;
    char *master_name;
    char *sentinel_user;
    char *sentinel_password;
    /*
     * The config-epoch the sentinel gave with the master's address (read
     * before and after it, equal both times), 0 when none or unknown:
     * the failover epoch that fences from this master carry (lib/lock.c).
     */
    int64_t failover_epoch;
    uint64_t rng; /* xorshift state for retry jitter */
    /* Redis Cluster (cluster.c): NULL on a single server. */
    struct tslock__cluster *cluster;
    int cluster_seen; /* the last probe's INFO said cluster_enabled:1 */
    struct tslock__peer wrapped_peer; /* a wrapped connection's server */
    char op_key[128]; /* the key of the last command sent, for messages */
    /*
     * Redis 7 Functions instead of EVAL (proto/scripts.c): the mode of
     * tslock_client_set_functions(), and whether this connection runs
     * its scripts with FCALL (EVAL refused by an ACL).
     */
    int functions_mode;
    int use_functions;
    tslock_tls *tls; /* tslock_client_set_tls(): TLS on every TCP link */
    /* Metrics (stats.c): counters, options, the observer. */
    struct tslock__stats stats;
    unsigned stats_flags; /* TSLOCK_STATS_* */
    tslock_observer_fn observer;
    void *observer_ud;
    char errstr[TSLOCK__ERRSTR_SIZE];
};

/* ---- errors.c */
int tslock__fail(tslock_client *c, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))

#endif
    ;
void tslock__clear_error(tslock_client *c);
/* Whether rc from an operation on c is a fault worth reconnecting for. */
int tslock__is_transient(const tslock_client *c, int rc);

/* ---- stats.c: counted without a round trip */
#define TSLOCK__COUNT(c, field) tslock__count_add(&(c)->stats.field, 1)
void tslock__hist_observe(struct tslock__hist *h, int64_t ms);
/* Whether releases of c's locks are timed (hold times or an observer). */
#define TSLOCK__TIMES_HOLDS(c)                                                 \
    (((c)->stats_flags & TSLOCK_STATS_HOLD_TIMES) || (c)->observer != NULL)
/* Tell c's observer, if any, of one event. */
void tslock__notify(tslock_client *c, tslock_event_type type, const char *key,
                    int result, int64_t duration_ms, tslock_scheme scheme,
                    int legacy, int from_watchdog);
/* A legacy holder taken over: counted, and told to the observer. */
void tslock__count_takeover(tslock_client *c, const char *key,
                            tslock_scheme scheme);

/* ---- clock.c */
int64_t tslock__now(tslock_client *c, tslock_clock_id which);
int64_t tslock__server_now(tslock_client *c);
void tslock__script_now(tslock_client *c, char *buf, size_t size);
int64_t tslock__system_ms(tslock_clock_id which);
uint64_t tslock__random64(tslock_client *c);
int tslock__random_bytes(void *buf, size_t len);

/* ---- wire.c: commands on a connection, no hooks */
/* One command of a pipeline: its step (for the hook) and argv. */
struct tslock__queued {
    tslock_step step;
    int argc;
    const char **argv;
};
/*
 * Send n commands with our own writer (send(2) with MSG_NOSIGNAL, so a
 * closed connection gives EPIPE, never SIGPIPE): REDIS_OK or REDIS_ERR
 * with ctx->errstr set.  No hooks.
 */
int tslock__send(redisContext *ctx, int n, const struct tslock__queued *q);
/*
 * v in decimal into out, which it returns: what a command's numeric
 * arguments are built with, without snprintf's cost on every call.
 */
#define TSLOCK__I64_STR 21
char *tslock__i64_str(char out[TSLOCK__I64_STR], int64_t v);
/* One command and its reply on any context, no hooks: REDIS_OK or _ERR. */
int tslock__roundtrip(redisContext *ctx, int argc, const char **argv,
                      redisReply **out);
/* Send n commands and read their replies, no hooks; as tslock__pipeline. */
int tslock__exchange(tslock_client *c, int n, const struct tslock__queued *q,
                     redisReply **out);
int tslock__io_failure(tslock_client *c, const char *what);
void tslock__free_replies(int n, redisReply **r);
/* Whether an error line is an ACL's refusal (-NOPERM, or in a script). */
int tslock__is_acl_denial(const char *line);
/* Map an error reply to a code with the server's line in errstr. */
int tslock__reply_error(tslock_client *c, const char *what,
                        const redisReply *r);
/* A short description of a reply for error messages. */
const char *tslock__reply_describe(const redisReply *r, char *buf, size_t size);
/* Fail with EPROTO naming what was expected and what came. */
int tslock__unexpected(tslock_client *c, const char *what, const char *expected,
                       const redisReply *r);

/*
 * ---- the transport under wire.c.  A plain socket is hiredis's own
 * context; any other (TLS, tls.c) hangs its state on the context's
 * reader's privdata, whose first member points to the functions that
 * move its bytes.  wire.c reads and writes through them and knows no
 * transport by name, so the plain path costs one pointer test, as
 * before: tslock__write, tslock__get_reply and tslock__buffer_read stand
 * for send(2), redisGetReply and redisBufferRead on every context the
 * library made, and tslock__ctx_free for redisFree.
 */
struct tslock__io {
    int (*write)(redisContext *ctx, const char *buf, size_t len);
    int (*read)(redisContext *ctx); /* as redisBufferRead */
    int (*get_reply)(redisContext *ctx, void **reply);
    void (*close)(redisContext *ctx); /* its state only: not redisFree */
};
/* ctx's transport, NULL for a plain socket. */
#define TSLOCK__TRANSPORT(ctx)                                                 \
    ((ctx)->reader->privdata == NULL                                           \
         ? (const struct tslock__io *)0                                        \
         : *(const struct tslock__io *const *)(ctx)->reader->privdata)
#define TSLOCK__IS_TLS(ctx) (TSLOCK__TRANSPORT(ctx) != NULL)
#define tslock__get_reply(ctx, r)                                              \
    (TSLOCK__IS_TLS(ctx) ? TSLOCK__TRANSPORT(ctx)->get_reply((ctx), (r))       \
                         : redisGetReply((ctx), (r)))
#define tslock__buffer_read(ctx)                                               \
    (TSLOCK__IS_TLS(ctx) ? TSLOCK__TRANSPORT(ctx)->read(ctx)                   \
                         : redisBufferRead(ctx))
/* Write len bytes on ctx, plain (send, MSG_NOSIGNAL) or TLS. */
int tslock__write(redisContext *ctx, const char *buf, size_t len);
/* Its transport closed (wire.c), then redisFree. */
void tslock__ctx_free(redisContext *ctx);
/*
 * ---- tls.c: TLS with OpenSSL, a transport.
 * With the client's TLS settings (none: nothing to do), the handshake on
 * a connection just made to host:port.  TSLOCK_ETLS with the reason in
 * the client's errstr; the caller frees ctx.
 */
int tslock__tls_attach(tslock_client *c, redisContext *ctx, const char *host,
                       int port);
/* tslock__redis_reconnect, and a new handshake on a TLS context. */
int tslock__reconnect_ctx(redisContext *ctx, const struct tslock__peer *peer,
                          int connect_ms);

/* ---- connect.c: a new connection, and helpers of every connecting file */
/* (clock.c) ms as a timeval, for redisSetTimeout and redisConnect*. */
struct timeval tslock__ms_to_timeval(int ms);
/*
 * A connection just opened made ready: close-on-exec, the command
 * timeout.  OK, or ENOMEM/EIO with the cause in why (ctx freed).
 */
int tslock__ready_connection(const tslock_client *c, redisContext *ctx,
                             redisContext **out, char *why, size_t why_size);
/* A new connection to host:port, timeouts set, AUTHed. */
int tslock__connect_node(tslock_client *c, const char *host, int port,
                         redisContext **out);

/* ---- command.c */
/* The largest transaction (proto/transaction.c), which a pipeline carries. */
#define TSLOCK__MAX_READS  3  /* commands read after WATCH */
#define TSLOCK__MAX_QUEUED 24 /* commands queued inside MULTI */
/*
 * Send one command of a lock operation: call the step hook, send argv,
 * read the reply.  Server error replies come back as replies (so callers
 * can tell NOSCRIPT from WRONGTYPE); connection failures mark the client
 * broken and return the I/O code with the cause in errstr.
 */
int tslock__command(tslock_client *c, tslock_step step, const char *key,
                    int argc, const char **argv, redisReply **out);
/*
 * Send n commands in one round trip: every step hook is called first (a
 * stop sends nothing), then the commands go out together and out[i]
 * gets the reply to q[i].  On failure every out[i] is NULL.  key is what
 * the hooks are told.
 */
int tslock__pipeline(tslock_client *c, const char *key, int n,
                     const struct tslock__queued *q, redisReply **out);
int tslock__check_usable(tslock_client *c);

/* ---- client.c */
int tslock__probe(tslock_client *c);
/* Open the socket to c->host:c->port, AUTH, SELECT, probe. */
int tslock__open_socket(tslock_client *c);
/* Replace *slot by a copy of value (NULL allowed), wiping the old one. */
int tslock__replace_string(char **slot, const char *value);
/* Close the subscriber connection of waiting acquires, if any. */
void tslock__sub_close(tslock_client *c);
/*
 * Note a fallback of wake-ups (TSLOCK_WAKEUPS_* bit), for
 * tslock_client_wakeups(); the first reason is kept.
 */
void tslock__wakeups_fall_back(tslock_client *c, unsigned bit, const char *fmt,
                               ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* A second connection to the same server, AUTHed, no probe. */
int tslock__connect_side(tslock_client *c, redisContext **out);
/*
 * Whether wake-ups go over sharded pub/sub (SSUBSCRIBE, SPUBLISH): the
 * mode allows it, the server is 7.0 or later, nothing refused it, and
 * (in TSLOCK_PUBSUB_AUTO) it is a cluster, where it saves the bus.
 */
int tslock__sharded(const tslock_client *c);

/* ---- sentinel.c: the master named by Sentinel */
/*
 * Ask the sentinels in turn and connect to the master they name with
 * open_socket (tslock__open_socket).
 */
int tslock__sentinel_connect(tslock_client *c,
                             int (*open_socket)(tslock_client *));
void tslock__sentinel_free(tslock_client *c);
/*
 * Judge the probe's ROLE reply (role) and INFO reply (info): TSLOCK_OK
 * when the node is a master, else a transient failure naming its role.
 */
int tslock__sentinel_check_role(tslock_client *c, const redisReply *role,
                                const redisReply *info);

/* ---- cluster.c: Redis Cluster */
#define TSLOCK__SLOTS 16384
unsigned tslock__slot(const char *key, size_t len);
/*
 * After the probe found a cluster node on c->ctx: learn the slot map
 * (CLUSTER MYID and CLUSTER SLOTS, one round trip) and adopt c->ctx as
 * that node's connection.
 */
int tslock__cluster_setup(tslock_client *c);
/* Close every node connection (c->ctx among them); keep the map. */
void tslock__cluster_close(tslock_client *c);
void tslock__cluster_free(tslock_client *c);
/* Apply the command timeout to every open node connection. */
int tslock__cluster_set_timeout(tslock_client *c);
/* The next known node address to reconnect to after c->host failed. */
int tslock__cluster_seed(tslock_client *c, int i, const char **host, int *port);
/*
 * tslock__pipeline on a cluster: to the node owning key's slot, following
 * -MOVED, -ASK and -TRYAGAIN.  Hooks were called by the caller.
 */
int tslock__cluster_pipeline(tslock_client *c, const char *key, int n,
                             const struct tslock__queued *q, redisReply **out);
/*
 * 1 (once) when the last transaction was refused because its key's slot
 * moved after its WATCH: nothing ran, and the whole WATCH form is to be
 * made again, on the slot's new master.  0 on a single server.
 */
int tslock__rewatch(tslock_client *c);
/*
 * Where a sharded subscription to a channel in key's slot must go: the
 * master the slot map names for that slot, else (a single server, a
 * slot not known yet) the client's own server, c->host and c->port.
 * With refresh, the map is asked again first, of any node that answers.
 * *host points into the map or the client: copy it to keep it.
 */
void tslock__cluster_owner(tslock_client *c, const char *key, int refresh,
                           const char **host, int *port);
/* Note that the slot moved to "host:port" (a -MOVED's target). */
void tslock__cluster_moved(tslock_client *c, const char *moved);
#define TSLOCK__REWATCH_MAX 8

#endif /* TSLOCK_NET_H */
