/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * naive.h - the broken lock variants the articles describe, shared by the
 * race replays in tests/ and by `tslock replay`, so both show the same
 * flaws failing beside tslock.  They speak raw hiredis, read a wall clock
 * the caller owns, and call a step hook before every command.
 */
#ifndef TSLOCK_TEST_NAIVE_H
#define TSLOCK_TEST_NAIVE_H

#include <stdint.h>

#include "hiredis_compat.h"

/* Called before each command with its name; non-zero simulates a crash. */
typedef int (*naive_hook)(const char *step, void *userdata);

typedef struct naive_client {
    redisContext *redis;
    const int64_t *wall_ms; /* the caller's clock: Unix ms */
    naive_hook hook;
    void *hook_ud;
    char value[64]; /* what this client wrote when it acquired */
} naive_client;

enum naive_result { NAIVE_HELD = 1, NAIVE_BUSY = 0, NAIVE_CRASHED = -1 };

/*
 * The first recovery the SETNX article shows and rejects: on SETNX 0,
 * GET; if the stamp (ms) is expired, DEL it and SETNX again.
 */
int naive_del_recovery_acquire(naive_client *n, const char *key,
                               int64_t ttl_ms);

/* The release that deletes whatever is there: DEL key. */
int naive_unconditional_release(naive_client *n, const char *key);

/*
 * The Java RedisLock release of the articles (unlock0): GET, and DEL if
 * the *current* value is unexpired, without asking whose it is.
 * Returns 1 when it sent DEL.
 */
int naive_java_release(naive_client *n, const char *key);

/*
 * SETNX key value, then EXPIRE key seconds: two commands, so a crash in
 * between leaves a key that never expires.  Returns NAIVE_CRASHED when
 * the hook stopped it between the two.
 */
int naive_setnx_expire_acquire(naive_client *n, const char *key, int ttl_s);

/*
 * The takeover that trusts GETSET blindly: on an expired stamp, GETSET a
 * new one and consider the lock held without looking at the old value.
 */
int naive_blind_getset_acquire(naive_client *n, const char *key,
                               int64_t ttl_ms);

/*
 * The token release that reads, compares and deletes in three steps:
 * GET, compare with our token, DEL.  Returns 1 when it sent DEL.
 */
int naive_token_get_then_del(naive_client *n, const char *key,
                             const char *token);

#endif
