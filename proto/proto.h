/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto.h - the middle layer of libtslock (proto/): what every scheme of
 * lib/ and every form of compat/ is built from.  The lock structure;
 * tokens and stamps; the names beside a lock key; the Lua scripts; what
 * a hold is judged by; WATCH transactions; the wait between attempts.
 * It builds on net/ (net.h) alone.
 */
#ifndef TSLOCK_PROTO_H
#define TSLOCK_PROTO_H

#include <signal.h>

#include "net.h"

/* Room for any stamp, a PHP-serialized array with a host name among them. */
#define TSLOCK__VALUE_SIZE 160
/* 2000-01-01 in Unix ms: the earliest plausible stamp. */
#define TSLOCK__STAMP_MIN_MS INT64_C(946684800000)
/* The longest takeover grace: one day. */
#define TSLOCK__GRACE_MAX_MS INT64_C(86400000)

/* A legacy stamp dialect, compiled (dialect.c). */
#define TSLOCK__DIALECT_PARTS 8
#define TSLOCK__DIALECT_NEVER 4
enum tslock__part_kind {
    TSLOCK__PART_LITERAL = 0,
    TSLOCK__PART_TIME,
    TSLOCK__PART_PID,
    TSLOCK__PART_TID,
    TSLOCK__PART_HOST
};
struct tslock__part {
    int kind;
    char text[24]; /* a literal, or in a PHP array the field's key */
};
struct tslock__dialect {
    char spec[160]; /* as given: a preset name or a format */
    char name[32];  /* the preset's name, "" for a format */
    tslock_unit unit;
    int plus_one;
    int php; /* a PHP-serialized array of the parts */
    int nparts;
    struct tslock__part part[TSLOCK__DIALECT_PARTS];
    int nnever;
    char never[TSLOCK__DIALECT_NEVER][16];
    int compare_release; /* its clients delete only their exact value */
};

/* A scheme's operations (lib/tslock_int.h); a lock points at its own. */
struct tslock__scheme_ops;

struct tslock_lock {
    tslock_client *client;
    /*
     * The client whose stats count this lock: client, and still the
     * caller's in a watchdog's copy (lib/watchdog.c) of the hold.
     */
    tslock_client *stats_client;
    int in_watchdog;    /* this is a watchdog's copy */
    int legacy_lost;    /* bridge: the last loss was a legacy client's */
    int undoing;        /* giving back a hold the caller never had */
    unsigned attempts;  /* of the acquisition under way */
    int64_t wait_start; /* monotonic ms its wait began, INT64_MIN: not yet */
    char *key;
    tslock_scheme scheme; /* as asked */
    tslock_scheme used;   /* as used for the current or last hold */
    const struct tslock__scheme_ops *ops; /* of `used` */
    tslock_unit unit; /* the dialect's, kept for handles and messages */
    struct tslock__dialect dialect; /* how stamps are written and read */
    tslock_release_form release_form;
    int64_t ttl_ms;
    int64_t margin_ms;
    int64_t grace_ms; /* tslock_lock_set_takeover_grace() */
    int retry_min_ms;
    int retry_max_ms;
    int fencing;
    int replicas;      /* tslock_lock_set_replicas(): 0 waits for none */
    int replicas_ms;   /* its WAIT timeout */
    int replicas_seen; /* a pipelined WAIT was judged this attempt */
    int replicas_rc;   /* and its verdict */
    int reentrant;     /* tslock_lock_set_reentrant() */
    int held;          /* holds: 0 none; more than 1 re-entered (reentrant) */
    int waiting;       /* inside a waiting acquire */
    int wakeup;        /* waits listen for releases (the default) */
    int listening;     /* this wait listens on the client's subscriber */
    int woken;         /* the last sleep ended on a release announced */
    int lost_listen;   /* a subscription was lost and not made again */
    unsigned resubscribed;          /* subscriptions made again after a loss */
    int reconnect_tries;            /* reconnects of this wait */
    char value[TSLOCK__VALUE_SIZE]; /* what we wrote for our hold */
    char handle[TSLOCK__VALUE_SIZE + 96]; /* tslock_lock_handle() */
    int64_t expires_ms; /* our lease end, or the holder's on EBUSY */
    int64_t held_since; /* monotonic ms when taken: tslock_release_after() */
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

/* ---- value.c: tokens */
/* Exactly 32 lowercase hex digits: a token. */
int tslock__is_token(const char *v, size_t len);
/* 16 random bytes as 32 hex digits and a NUL, into buf[33]. */
int tslock__make_token(tslock_client *c, char *buf);

/* ---- stamp.c */
/* Parse with a reason for the caller's error detail. */
int tslock__stamp_parse(const char *text, size_t len, tslock_unit unit,
                        int64_t *expires_ms, const char **why);
const char *tslock__unit_name(tslock_unit unit);
/* How far past the classic stamp a bridge stamp may lie, in ms. */
int64_t tslock__bridge_bound_ms(tslock_unit unit, int64_t ttl_ms);
int tslock__bridge_stamp(char *buf, size_t size, tslock_unit unit,
                         int64_t now_ms, int64_t ttl_ms, uint64_t random);

/* ---- dialect.c: legacy stamp dialects */
/* Compile a preset name or format; err (may be NULL) says what is wrong. */
int tslock__dialect_compile(struct tslock__dialect *d, const char *spec,
                            char *err, size_t size);
/* The plain dialect of a unit: "{ms+1}", "{s+1}" or "{float}". */
void tslock__dialect_plain(struct tslock__dialect *d, tslock_unit unit);
const char *tslock__plain_format(tslock_unit unit);
int tslock__dialect_is_plain(const struct tslock__dialect *d);
/*
 * Read v: *exp the last valid Unix ms (INT64_MAX: never expires); on
 * EUNREADABLE *why says why and *at (may be NULL) how far it matched.
 */
int tslock__dialect_parse(const struct tslock__dialect *d, const char *v,
                          size_t len, int64_t *exp, const char **why,
                          size_t *at);
/*
 * Write the value of a lease of ttl_ms from now_ms into buf: a bridge
 * value lies a random amount past the lease.  *lease_end: when the lease
 * ends for the writer.  Returns the length, or TSLOCK_EINVAL.
 */
int tslock__dialect_format(const struct tslock__dialect *d, char *buf,
                           size_t size, int64_t now_ms, int64_t ttl_ms,
                           int bridge, uint64_t random, int64_t *lease_end);
/*
 * Whether a value needs random bits: a bridge stamp's offset, or a
 * {tid} unique to the hold.  A plain timestamp stamp needs none.
 */
int tslock__dialect_wants_random(const struct tslock__dialect *d, int bridge);
/* The preset that reads v, or else the one whose parse got furthest. */
const char *tslock__dialect_closest(const char *v, size_t len);
/* "v" in full, or cut with how much was shown. */
void tslock__quote_value(char *buf, size_t size, const char *v, size_t len);

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
/* Whether announcements on that channel go by SPUBLISH (names.c). */
int tslock__announce_sharded(const tslock_lock *l);
/*
 * The line of waiters' keys ("{key}:queue", ":alive", ":queue-seq"), the
 * prefix of its wake channels (":wake:"), and this client's id in it.
 */
int tslock__queue_names(tslock_lock *l);
/* The same, as a yes or no that leaves the client's error as it was. */
int tslock__queue_named(tslock_lock *l);
/*
 * This client's entry in a line: "<waiter id>w" listening classic,
 * "...s" listening sharded, else "...p".
 */
void tslock__queue_member(const tslock_lock *l, int listening, char out[35]);
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
/*
 * Take entry out of l's line and, with announce, announce the release on
 * the key's channel: one round trip, best effort, the error left as it was.
 */
void tslock__line_drop(tslock_lock *l, const char *entry, int announce);

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
    SCRIPT_RELEASE_WAKE,     /* KEYS lock, arrival counter: guard.c */
    SCRIPT_FENCE_FLOOR,      /* KEYS fence, ARGV floor: lib/lock.c */
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

/* ---- push.c: what the subscriber connection reads */
enum tslock__push {
    TSLOCK__PUSH_OTHER,       /* anything else: ignored */
    TSLOCK__PUSH_MESSAGE,     /* "message"/"smessage" on a listened channel */
    TSLOCK__PUSH_SUBSCRIBE,   /* a SUBSCRIBE confirmed */
    TSLOCK__PUSH_SSUBSCRIBE,  /* an SSUBSCRIBE confirmed */
    TSLOCK__PUSH_UNSUBSCRIBE, /* a classic subscription ended */
    TSLOCK__PUSH_SUNSUBSCRIBE /* the server ended a sharded subscription */
};
/*
 * What r is: a three-element array whose first element names the kind
 * exactly (binary-safe), and for a message, whose channel is exactly one
 * of the n channels (NULL entries skipped).  Anything else, malformed
 * included, is TSLOCK__PUSH_OTHER.
 */
enum tslock__push tslock__push_kind(const redisReply *r,
                                    const char *const *channels, size_t n);
/* Whether r is a push of kind exactly ("unsubscribe"), and when channel
 * is not NULL, on that channel exactly. */
int tslock__push_is(const redisReply *r, const char *kind, const char *channel);
/* Whether r is a push whose channel is one of the n channels (NULL
 * entries skipped), byte for byte. */
int tslock__push_on(const redisReply *r, const char *const *channels, size_t n);

/* ---- wakeup.c: waiters woken by the release */
/*
 * Whether a release was announced on the subscriber since the last
 * sleep (read without blocking): a message that arrived after that sleep
 * ended was heard, only late.
 */
int tslock__heard_since(tslock_lock *l);
/* Stop listening for the client's life (TSLOCK_WAKEUPS_POLLING, why). */
void tslock__listen_no_more(tslock_lock *l, const char *why);
/*
 * Before a waiting acquire's first try: subscribe the client's second
 * connection (opened on first use) to the lock's channel, and drop what
 * it heard before.  Sets l->listening; a failure only means polling.
 */
void tslock__listen(tslock_lock *l);
/*
 * Wait up to ms on the lock's cancel pipe and, while listening, for a
 * release message on the subscriber: TSLOCK_OK (woken, l->woken set, or
 * timed out), TSLOCK_ECANCELED or TSLOCK_EIO.  Falls back to a plain
 * wait if the subscriber fails.
 */
int tslock__wait(tslock_lock *l, int64_t ms);

#endif /* TSLOCK_PROTO_H */
