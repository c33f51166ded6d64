/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * legacy.h - the timestamp locks fleets already run, written in C over
 * hiredis from their published algorithms, so the interop tests can make
 * tslock contend with them on one key.  Each keeps its flaws: these are
 * the clients tslock must live beside, not examples to follow.
 *
 * The three clients:
 *   java     the RedisLock of the early articles, lock() and unlock0():
 *            stamps in milliseconds, now + expires + 1; SETNX, GET,
 *            GETSET won when the old value equals the one read; unlock0()
 *            deletes whenever the *current* value is unexpired, whoever
 *            wrote it.
 *   redisdoc the SETNX locking pattern of the Redis documentation
 *            ("Handling deadlocks", client C4): whole seconds, now +
 *            timeout + 1; GETSET won when the old value returned is still
 *            expired; release checks that our own timeout has not run
 *            out, then DEL.
 *   redispy2 the Lock of redis-py 2.x before the 2.10 rewrite: float
 *            seconds time.time() + timeout, written as repr() writes the
 *            float, no +1; release deletes when the stored value is >= our
 *            own acquired_until.
 *
 * Threads: a legacy_client is used by one thread at a time.
 */
#ifndef TSLOCK_TEST_LEGACY_H
#define TSLOCK_TEST_LEGACY_H

#include <stdint.h>

#include "hiredis_compat.h"

/* The wall clock the legacy client reads, in Unix microseconds. */
typedef int64_t (*legacy_clock_fn)(void *userdata);

/*
 * Optional instrumentation for tests that must say who broke exclusion.
 * With an observer installed, the DEL of a release goes out as MULTI, GET,
 * DEL, TIME, EXEC in one round trip: the same unconditional DEL at the
 * same point of the algorithm, plus an atomic record of what it deleted
 * and of the server's clock when it did.  SETNX and GETSET go out as
 * MULTI, the command, TIME, EXEC, so each write carries the server time
 * at which it ran: the order of writes from several processes is then the
 * server's, not the order in which the processes read their own clocks.
 */
typedef struct legacy_observer {
    /*
     * A release deleted `value`, with a DEL sent at sent_us on the
     * client's clock that ran at server_us on the server's (TIME in the
     * same transaction); own says whether it is the value this client
     * wrote (an identical stamp written by another holder also says own:
     * the client cannot tell them apart).
     */
    void (*deleted)(const char *value, int own, int64_t sent_us,
                    int64_t server_us, void *userdata);
    /*
     * A takeover GETSET sent at sent_us that did not win replaced `value`
     * (another holder's stamp) with ours: the algorithm's loser
     * overwrite.  server_us: when it ran, on the server's clock.
     */
    void (*lost_getset)(const char *value, int64_t sent_us, int64_t server_us,
                        void *userdata);
    void *userdata;
} legacy_observer;

typedef enum legacy_kind {
    LEGACY_JAVA = 0,
    LEGACY_REDISDOC = 1,
    LEGACY_REDISPY2 = 2
} legacy_kind;

enum legacy_result {
    LEGACY_HELD = 1,
    LEGACY_BUSY = 0,
    LEGACY_EREDIS = -1, /* no reply or an error reply; see errstr */
    LEGACY_EPARSE = -2  /* the stored value did not parse: the exception
                           the original would throw, named in errstr */
};

typedef struct legacy_client {
    redisContext *redis; /* borrowed */
    legacy_kind kind;
    legacy_clock_fn clock; /* NULL: CLOCK_REALTIME */
    void *clock_ud;
    /*
     * The lock timeout.  java: lockExpires in ms.  redisdoc: whole
     * seconds, rounded up.  redispy2: timeout = timeout_ms / 1000.0.
     */
    int64_t timeout_ms;
    /* Delay between attempts, uniform in [min, max] ms. */
    int retry_min_ms;
    int retry_max_ms;
    const legacy_observer *observer; /* NULL: plain DEL, as published */
    /*
     * redisdoc only: read stamps as atol() or PHP's (int) cast do (leading
     * digits, else 0) instead of rejecting what is not a whole number.
     */
    int lenient_parse;
    /* The current hold. */
    int held;
    char value[64];       /* what we wrote */
    int64_t lease_end_us; /* first instant our own rule calls it expired */
    int64_t won_us;       /* when the SETNX or GETSET that won was sent */
    int64_t write_us;     /* when the last SETNX or GETSET was sent */
    /*
     * With an observer: the server's TIME beside the SETNX or GETSET that
     * won, and beside the last one sent (0 without an observer).
     */
    int64_t won_server_us;
    int64_t write_server_us;
    double acquired_until; /* redispy2's own record of its stamp */
    uint64_t rng;
    char errstr[200];
} legacy_client;

/*
 * Set up c for kind on a connection the caller owns, with the original
 * retry delays (java 50-99 ms, redisdoc 100 ms, redispy2 100 ms) and the
 * real wall clock.  timeout_ms as in the struct.
 */
void legacy_init(legacy_client *c, legacy_kind kind, redisContext *redis,
                 int64_t timeout_ms);

/* "java", "redisdoc", "redispy2". */
const char *legacy_kind_name(legacy_kind kind);

/* The wall clock c reads, in Unix microseconds. */
int64_t legacy_now_us(legacy_client *c);

/*
 * One attempt, no sleeping: one pass of the original's acquire loop.
 * Returns LEGACY_HELD, LEGACY_BUSY, LEGACY_EREDIS or LEGACY_EPARSE.
 */
int legacy_try(legacy_client *c, const char *key);

/*
 * The original's waiting acquire.  java: tryLock(wait_ms, MILLISECONDS)
 * exactly as published, sleeps included.  redisdoc, redispy2: retry after
 * each failed pass until wait_ms has gone by (the originals loop forever
 * or try once; a deadline keeps tests finite).  wait_ms 0 tries once.
 */
int legacy_lock(legacy_client *c, const char *key, int64_t wait_ms);

/*
 * The original's release.  Returns 1 when it sent DEL, 0 when its check
 * told it not to, LEGACY_EREDIS or LEGACY_EPARSE.  The hold ends either
 * way.
 */
int legacy_unlock(legacy_client *c, const char *key);

/* The per-client functions legacy_try/lock/unlock dispatch to. */
int legacy_java_try_lock(legacy_client *c, const char *key);
int legacy_java_lock(legacy_client *c, const char *key, int64_t wait_ms);
int legacy_java_unlock0(legacy_client *c, const char *key);
int legacy_redisdoc_try(legacy_client *c, const char *key);
int legacy_redisdoc_release(legacy_client *c, const char *key);
int legacy_redispy2_acquire(legacy_client *c, const char *key, int64_t wait_ms);
int legacy_redispy2_release(legacy_client *c, const char *key);

/* The text Python's repr() gives a float, e.g. "1700000010.25". */
void legacy_python_repr(char *buf, size_t size, double x);

#endif
