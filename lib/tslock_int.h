/*
 * tslock_int.h - private declarations shared between the files of
 * libtslock: the client and lock structures, the command path every lock
 * operation goes through, clocks, waiting and the Lua scripts.
 */
#ifndef TSLOCK_INT_H
#define TSLOCK_INT_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "hiredis_compat.h"

#include "tslock.h"

#define TSLOCK__ERRSTR_SIZE 512
#define TSLOCK__VALUE_SIZE  64
/* 2000-01-01 in Unix ms: the earliest plausible stamp. */
#define TSLOCK__STAMP_MIN_MS INT64_C(946684800000)
/* The longest takeover grace: one day. */
#define TSLOCK__GRACE_MAX_MS INT64_C(86400000)

enum tslock__transport {
    TRANSPORT_NONE,
    TRANSPORT_TCP,
    TRANSPORT_UNIX,
    TRANSPORT_WRAPPED
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
    /* The subscriber connection of waiting acquires (wakeup.c). */
    redisContext *sub;
    char *sub_channel;  /* what sub is subscribed to: the key's channel */
    char *sub_own;      /* and this client's own wake channel for that key */
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
    uint64_t rng; /* xorshift state for retry jitter */
    /* Redis Cluster (cluster.c): NULL on a single server. */
    struct tslock__cluster *cluster;
    int cluster_seen; /* the last probe's INFO said cluster_enabled:1 */
    struct tslock__peer wrapped_peer; /* a wrapped connection's server */
    char errstr[TSLOCK__ERRSTR_SIZE];
};

struct tslock_lock {
    tslock_client *client;
    char *key;
    tslock_scheme scheme; /* as asked */
    tslock_scheme used;   /* as used for the current or last hold */
    const struct tslock__scheme_ops *ops; /* of `used` */
    tslock_unit unit;
    tslock_release_form release_form;
    int64_t ttl_ms;
    int64_t margin_ms;
    int64_t grace_ms; /* tslock_lock_set_takeover_grace() */
    int retry_min_ms;
    int retry_max_ms;
    int fencing;
    int replicas;        /* tslock_lock_set_replicas(): 0 waits for none */
    int replicas_ms;     /* its WAIT timeout */
    int replicas_seen;   /* a pipelined WAIT was judged this attempt */
    int replicas_rc;     /* and its verdict */
    int reentrant;       /* tslock_lock_set_reentrant() */
    int held;            /* holds: 0 none; more than 1 re-entered (reentrant) */
    int waiting;         /* inside a waiting acquire */
    int wakeup;          /* waits listen for releases (the default) */
    int listening;       /* this wait listens on the client's subscriber */
    int woken;           /* the last sleep ended on a release announced */
    int reconnect_tries; /* reconnects of this wait */
    char value[TSLOCK__VALUE_SIZE];       /* what we wrote for our hold */
    char handle[TSLOCK__VALUE_SIZE + 64]; /* tslock_lock_handle() */
    int64_t expires_ms; /* our lease end, or the holder's on EBUSY */
    int64_t fence;
    /*
     * The bridge scheme's ownership proof (bridge.c): on servers that
     * keep TTLs and have Lua or WATCH, a hold is ours while the key holds
     * our stamp, still has a TTL, and its owner key holds our token.
     */
    int proof;
    char *owner_key; /* computed on first use */
    char *channel;   /* where releases are announced; on first use */
    /* Fair mode (fair.c): the queue's keys, our place in it. */
    int fair;
    char *queue_key, *alive_key, *seq_key;
    int queued;        /* this acquisition has joined the line (fair.c) */
    char member[35];   /* as what: tslock__queue_member() */
    char *wake_prefix; /* "{KEY}:wake:": a waiter's channel, its id after */
    int64_t queue_rank;
    char owner_token[33]; /* 32 hex digits */
    /* Read-write locks and semaphores (shared.c, rwlock.c). */
    int rw;                               /* tslock_rw */
    int64_t permits;                      /* 0: not a semaphore */
    char *holders_key, *intent_key;       /* companions, on first use */
    char next_member[TSLOCK__VALUE_SIZE]; /* an extension's new entry */
    /*
     * Riding out a dropped connection (recover.c): how long release and
     * extend keep reconnecting, the stamp an extension sent but has not
     * seen answered, and the last transient fault that was recovered.
     */
    int64_t reconnect_ms; /* -1: while the lease leaves room */
    char pending[TSLOCK__VALUE_SIZE];
    int64_t pending_end;
    char orphan[33];   /* a token an interrupted acquire may have left */
    char given[33];    /* redlock.c: the token to write, "" for a new one */
    int64_t orphan_at; /* wall ms before that acquire sent it */
    unsigned recoveries;
    int recovered_code;
    char recovered_why[TSLOCK__ERRSTR_SIZE];
    volatile sig_atomic_t cancel_flag;
    int cancel_pipe[2]; /* read end polled while waiting */
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

/* ---- clock.c */
int64_t tslock__now(tslock_client *c, tslock_clock_id which);
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
/* One command and its reply on any context, no hooks: REDIS_OK or _ERR. */
int tslock__roundtrip(redisContext *ctx, int argc, const char **argv,
                      redisReply **out);
/* Send n commands and read their replies, no hooks; as tslock__pipeline. */
int tslock__exchange(tslock_client *c, int n, const struct tslock__queued *q,
                     redisReply **out);
int tslock__io_failure(tslock_client *c, const char *what);
void tslock__free_replies(int n, redisReply **r);
/* Map an error reply to a code with the server's line in errstr. */
int tslock__reply_error(tslock_client *c, const char *what,
                        const redisReply *r);
/* A short description of a reply for error messages. */
const char *tslock__reply_describe(const redisReply *r, char *buf, size_t size);
/* Fail with EPROTO naming what was expected and what came. */
int tslock__unexpected(tslock_client *c, const char *what, const char *expected,
                       const redisReply *r);

/* ---- connect.c: a new connection, and helpers of every connecting file */
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
/*
 * Judge a WAIT reply for lock l: TSLOCK_OK, TSLOCK_EREPLICAS,
 * TSLOCK_EUNSUPPORTED (no WAIT) or a code for another error.
 */
int tslock__replicas_judge(tslock_lock *l, const redisReply *r);
/* Send WAIT for l's replicas and judge the reply. */
int tslock__replicas_wait(tslock_lock *l);

/* ---- lock.c */
/* Empty the lock's cancel pipe and clear its cancel flag. */
void tslock__drain_cancel(tslock_lock *l);

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
#define TSLOCK__REWATCH_MAX 8

/* ---- names.c: companions of a lock key, in its Cluster hash slot */
/*
 * Name key's companion "<key><suffix>" into *slot (once; freed with the
 * lock): "{key}<suffix>", or "key<suffix>" when key has a hash tag or a
 * '}'.  TSLOCK_OK or TSLOCK_ENOMEM.
 */
int tslock__companion(tslock_lock *l, char **slot, const char *suffix);
/*
 * The fencing counter: "key:fence" on a single server (its name since
 * fencing began), the companion "{key}:fence" on a cluster.  Caller frees.
 */
int tslock__fence_key(tslock_lock *l, char **out);
/* The channel releases of l's key are announced on ("{key}:released"). */
int tslock__channel(tslock_lock *l);
/*
 * The line of waiters' keys ("{key}:queue", ":alive", ":queue-seq"), the
 * prefix of its wake channels (":wake:"), and this client's id in it.
 */
int tslock__queue_names(tslock_lock *l);
/* The same, as a yes or no that leaves the client's error as it was. */
int tslock__queue_named(tslock_lock *l);
/*
 * Whether a release of l wakes one waiter from the line: a token lock
 * whose line can be named.  Other schemes' waiters do not queue; they
 * hear the announcement on the key's channel.
 */
int tslock__wakes_one(tslock_lock *l);
/*
 * "PUBLISH channel key", the announcement, as one queued command: 1, or
 * 0 (q untouched) when this client's PUBLISH was refused before.
 */
int tslock__publish_queued(tslock_lock *l, const char *argv[3],
                           struct tslock__queued *q);
/* Whether r answers a PUBLISH that was refused; remembers the refusal. */
int tslock__publish_refused(tslock_client *c, const redisReply *r);

/* ---- fair.c: the line of waiters; fair mode serves it in order */
int tslock__fair_try(tslock_lock *l);
/*
 * Whether a waiting acquire of l joins the line, so that a release wakes
 * it alone (a token lock, listening, on a server with Lua or WATCH).
 */
int tslock__queue_eligible(tslock_lock *l);
/* One attempt from the line: take a free key, or join and refresh. */
int tslock__queue_try(tslock_lock *l, int64_t *holder_pttl);
/* This client's entry in a line: "<waiter id>w" listening, else "...p". */
void tslock__queue_member(const tslock_lock *l, int listening, char out[35]);
void tslock__fair_leave(tslock_lock *l);

/* ---- shared.c, rwlock.c: read-write locks and semaphores */
/* One attempt of a read-write lock or semaphore; sets l->ops. */
int tslock__kind_try(tslock_lock *l);
/* A waiting exclusive side that gave up withdraws its intent. */
void tslock__rw_leave(tslock_lock *l);
/* Now on the server's clock as this client knows it (TIME at connect). */
int64_t tslock__server_now(tslock_client *c);
/* The now given to a shared-hold script: "" to read TIME there. */
void tslock__script_now(tslock_client *c, char *buf, size_t size);
/* The holders set and the intent key, named once. */
int tslock__kind_names(tslock_lock *l);
extern const struct tslock__scheme_ops tslock__shared_ops;
/* recover.c: whether l holds a shared or permit hold. */
int tslock__is_shared_hold(const tslock_lock *l);
/* recover.c: finish a release or extension of one after a lost reply. */
int tslock__shared_settle(tslock_lock *l, int release, int same_server,
                          int64_t ttl_ms);
/* handle.c: a shared or permit hold's handle into buf: 1, else 0. */
int tslock__shared_handle(const tslock_lock *l, char *buf, size_t size);
/* handle.c: 1 when handle is a shared or permit hold's, now adopted. */
int tslock__shared_adopt(tslock_lock *l, const char *handle);
extern const struct tslock__scheme_ops tslock__rw_exclusive_ops;

/* ---- wakeup.c: waiters woken by the release */
/*
 * Before a waiting acquire's first try: subscribe the client's second
 * connection (opened on first use) to the lock's channel, and drop what
 * it heard before.  Sets l->listening; a failure only means polling.
 */
void tslock__listen(tslock_lock *l);
/*
 * While listening, wait up to ms for a release message on the
 * subscriber or a cancel: TSLOCK_OK (woken or timed out), or
 * TSLOCK_ECANCELED.  Falls back to a plain wait if the subscriber fails.
 */
int tslock__wait_for_release(tslock_lock *l, int64_t ms);
/* Wait up to ms on the lock's cancel pipe; TSLOCK_ECANCELED or OK. */
int tslock__wait(tslock_lock *l, int64_t ms);
/* client.c: close the subscriber connection, if any. */
void tslock__sub_close(tslock_client *c);
/* client.c: a second connection to the same server, AUTHed, no probe. */
int tslock__connect_side(tslock_client *c, redisContext **out);

/* ---- recover.c: release and extend across a dropped connection */
enum tslock__recover_op { RECOVER_RELEASE, RECOVER_EXTEND };
/*
 * After the transient failure first_rc of a release or extend, reconnect
 * with bounded, jittered backoff and finish the operation, for as long as
 * the lease leaves room.  Returns the operation's final code.
 */
int tslock__recover(tslock_lock *l, enum tslock__recover_op op, int first_rc,
                    int64_t ttl_ms);
/* Before a release or extend: settle an extension's lost reply. */
int tslock__settle_pending(tslock_lock *l);
/* Reconnect with the connect and command timeouts cut to room ms. */
int tslock__reconnect_within(tslock_client *c, int64_t room);
/* The lease's safety margin for retries: see tslock(7), FAILURES. */
int64_t tslock__recovery_margin_ms(const tslock_lock *l);

/* ---- scripts.c */
enum tslock__script {
    SCRIPT_DEL_IF_EQUAL,     /* ARGV[1]=value, [2]=channel: 1 deleted, 0 */
    SCRIPT_SET_IF_EQUAL,     /* KEYS[1], ARGV[1]=expect, ARGV[2]=new */
    SCRIPT_PEXPIRE_IF_EQUAL, /* ARGV[1]=expect, ARGV[2]=ms: 1 set, 0 not */
    SCRIPT_SETNX_PEXPIRE,    /* ARGV[1]=value, ARGV[2]=ms: {1,0} or {0,pttl} */
    SCRIPT_PTTL_IF_EQUAL,    /* ARGV[1]=expect: pttl, or -3 when not equal */
    SCRIPT_BRIDGE_CLAIM,     /* KEYS lock, owner: see scripts.c */
    SCRIPT_BRIDGE_GUARD,     /* KEYS lock, owner: see scripts.c */
    SCRIPT_QUEUE_TRY,        /* KEYS lock, queue, alive, seq: fair.c */
    SCRIPT_BREAK,            /* KEYS lock, owner: break.c */
    SCRIPT_SHARED_ACQUIRE,   /* KEYS lock, holders, intent: shared.c */
    SCRIPT_SHARED_RELEASE,   /* KEYS lock, holders: shared.c */
    SCRIPT_SHARED_EXTEND,    /* KEYS lock, holders: shared.c */
    SCRIPT_RW_EXCLUSIVE,     /* KEYS lock, readers, intent: rwlock.c */
    SCRIPT_RELEASE_WAKE,     /* KEYS lock, queue, alive: guard.c */
    SCRIPT_COUNT
};
const char *tslock__script_text(enum tslock__script s);
const char *tslock__script_sha(enum tslock__script s);
/*
 * Run a script with EVALSHA, falling back to EVAL on NOSCRIPT.  Error
 * replies are mapped to codes; *out gets any other reply.
 */
int tslock__script_run(tslock_client *c, enum tslock__script s, const char *key,
                       int nargs, const char **args, redisReply **out);
int tslock__script_run_keys(tslock_client *c, enum tslock__script s, int nkeys,
                            const char *const *keys, int nargs,
                            const char *const *args, redisReply **out);

/* ---- stamp.c */
/* Parse with a reason for the caller's error detail. */
int tslock__stamp_parse(const char *text, size_t len, tslock_unit unit,
                        int64_t *expires_ms, const char **why);
const char *tslock__unit_name(tslock_unit unit);
/* How far past the classic stamp a bridge stamp may lie, in ms. */
int64_t tslock__bridge_bound_ms(tslock_unit unit, int64_t ttl_ms);
int tslock__bridge_stamp(char *buf, size_t size, tslock_unit unit,
                         int64_t now_ms, int64_t ttl_ms, uint64_t random);

/* ---- guard.c: change the key only while it holds our value */
enum tslock__guarded_op { GUARDED_DEL, GUARDED_SET, GUARDED_PEXPIRE };
/*
 * With op GUARDED_SET, arg is the new value; with GUARDED_PEXPIRE, the
 * TTL in ms (rounded up to seconds by the WATCH form).  check_lease also
 * requires our lease, less the margin, to run.  verb names the operation
 * in the TSLOCK_ELOST detail ("released", "extended").
 */
int tslock__guarded(tslock_lock *l, tslock_release_form form,
                    enum tslock__guarded_op op, const char *expect,
                    const char *arg, int check_lease, const char *verb);
tslock_release_form tslock__best_form(const tslock_client *c);
/* EUNSUPPORTED for a forced Lua or WATCH form the server lacks. */
int tslock__form_missing(tslock_client *c, tslock_release_form form);

/* ---- proof.c: what a hold is judged by (lib/ and compat/ share it) */
/* Whether our lease, less the margin, still runs by our wall clock. */
int tslock__lease_runs(tslock_lock *l);
/* ELOST: "lock 'K' was not <verb>: <why>; nothing changed". */
int tslock__guard_lost(tslock_lock *l, const char *verb, const char *why);
/* TSLOCK_OK when the GET reply r is exactly expect, else ELOST/EPROTO. */
int tslock__guard_compare(tslock_lock *l, const redisReply *r,
                          const char *expect, const char *verb);
/* Send "STEP key [arg]", the shape of most lock commands. */
int tslock__key_command(tslock_lock *l, tslock_step step, const char *arg,
                        redisReply **r);
/* A stored value read back: EUNREADABLE with the reason, or its expiry. */
int tslock__ts_read_stamp(tslock_lock *l, const redisReply *r, int64_t *exp);
/* EBUSY, remembering when the holder's lease ends. */
int tslock__ts_busy(tslock_lock *l, int64_t holder_expires_ms);
/*
 * The bridge proof: the reads that show it (GET key, PTTL key -- TTL
 * before 2.6 -- and GET of the owner key), and the verdict on their
 * replies: OK, or ELOST saying which part failed.
 */
struct tslock__proof_reads {
    const char *get_key[2], *ttl_key[2], *get_owner[2];
    struct tslock__queued q[3];
};
void tslock__bridge_proof_reads(tslock_lock *l, struct tslock__proof_reads *b);
int tslock__bridge_judge(tslock_lock *l, redisReply *const *replies,
                         const char *verb);
/*
 * ELOST for a failed proof, by the guard script's code: -1 the stamp is
 * not ours, -2 it has no TTL, -3 the owner key names another holder.
 */
int tslock__bridge_proof_lost(tslock_lock *l, const char *verb, int code);
/*
 * Whether the value found by a claim may be taken over: OK (an expired
 * stamp), EBUSY (unexpired) or EUNREADABLE.
 */
int tslock__bridge_may_take(tslock_lock *l, const redisReply *found);
/* When a stamp ending at exp may be taken over: exp plus the grace. */
int64_t tslock__takeover_after(const tslock_lock *l, int64_t exp);
/* Whether a holder's stamp ending at exp is past it by our clock. */
int tslock__stamp_expired(tslock_lock *l, int64_t exp);

/* ---- transaction.c: WATCH, MULTI and EXEC */
#define TSLOCK__MAX_READS  3  /* commands read after WATCH */
#define TSLOCK__MAX_QUEUED 24 /* commands queued inside MULTI */
/*
 * WATCH one or two keys and send nreads read commands, in one round trip;
 * out[i] gets the reply to reads[i].  On failure (error replies too) the
 * WATCH is undone and nothing is left in out.
 */
int tslock__watch_read(tslock_lock *l, int nkeys, const char *const *keys,
                       int nreads, const struct tslock__queued *reads,
                       redisReply **out);
/* Leave no WATCH behind on the connection, keeping the first error. */
void tslock__unwatch(tslock_lock *l);
/*
 * MULTI, the queued commands, EXEC, in one round trip.  *out gets EXEC's
 * reply: nil when a watched key changed, else an array of one reply per
 * queued command.
 */
int tslock__transaction(tslock_lock *l, int n, const struct tslock__queued *q,
                        redisReply **out);
/* ms as whole seconds, rounded up: EXPIRE and SETEX before 2.6. */
void tslock__seconds_up(char *buf, size_t size, int64_t ms);

/* ---- the schemes: timestamp.c, token.c, bridge.c */
struct tslock__scheme_ops {
    int (*try_acquire)(tslock_lock *l); /* one attempt, no waiting */
    int (*release)(tslock_lock *l);
    int (*extend)(tslock_lock *l, int64_t ttl_ms);
    int (*time_left)(tslock_lock *l, int64_t *ms_left);
};
extern const struct tslock__scheme_ops tslock__timestamp_ops;
extern const struct tslock__scheme_ops tslock__token_ops;
extern const struct tslock__scheme_ops tslock__bridge_ops;

/* ---- timestamp.c, shared with bridge.c */
int tslock__ts_make_stamp(tslock_lock *l, char *buf, size_t size,
                          int64_t ttl_ms, int64_t *lease_end);

/* ---- value.c: tokens */
/* Exactly 32 lowercase hex digits: a token. */
int tslock__is_token(const char *v, size_t len);
/* 16 random bytes as 32 hex digits and a NUL, into buf[33]. */
int tslock__make_token(tslock_client *c, char *buf);

#endif /* TSLOCK_INT_H */
