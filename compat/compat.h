/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * compat.h - the second layer of libtslock (compat/), and the one
 * interface between lib/ and compat/: the forms of lock operations for
 * servers without SET NX PX, Lua or WATCH.  lib/ calls these and nothing
 * else of compat/; compat/ builds them on the layers below both, proto/
 * (proofs, names, scripts, transactions, waiting) and net/ (the command
 * path and the wire), and never calls a scheme of lib/.
 */
#ifndef TSLOCK_COMPAT_H
#define TSLOCK_COMPAT_H

#include "proto.h"

/* What tslock__guarded() (lib/guard.c) and its WATCH form change. */
enum tslock__guarded_op { GUARDED_DEL, GUARDED_SET, GUARDED_PEXPIRE };

/* ---- watch.c: the token scheme and its guard on 2.2 - 2.4 */
/* tslock__guarded() in its WATCH form; the same arguments. */
int tslock__guarded_watch(tslock_lock *l, enum tslock__guarded_op op,
                          const char *expect, const char *arg, int check_lease,
                          const char *verb);
/* WATCH, GET, MULTI, SET, EXPIRE, EXEC: OK, EBUSY or a code. */
int tslock__token_acquire_watch(tslock_lock *l, int64_t *holder_pttl);

/* ---- token_lua.c: the token acquire on 2.6.0 - 2.6.11 (SETNX+PEXPIRE) */
int tslock__token_acquire_lua(tslock_lock *l, int64_t *holder_pttl);

/* ---- bridge_watch.c: the bridge scheme's claim and proof on 2.2 - 2.4 */
/* 0 claimed, 1 the key changed under WATCH (try again), else a code. */
int tslock__bridge_claim_watch(tslock_lock *l, const char *stamp,
                               int64_t ttl_ms);
/* op "del", "set" (a new stamp with TTL ttl_ms) or "read". */
int tslock__bridge_guard_watch(tslock_lock *l, const char *op,
                               const char *stamp, int64_t ttl_ms,
                               int check_lease, const char *verb);

/* ---- fair_watch.c: one attempt from the line of waiters on 2.2 - 2.4:
 * take a free key (in fair mode only as the head, member) or join. */
int tslock__fair_try_watch(tslock_lock *l, const char *member, int fair,
                           int64_t now, int64_t alive_until, int64_t idle_ms,
                           int64_t *holder_ttl_ms);

/* ---- shared_watch.c: read-write locks and semaphores on 2.2 - 2.4 */
/* A verdict: held, or busy with the wait hint (ms) and why (0 held by
 * an exclusive holder, 1 a writer waits, 2 no permit free). */
struct tslock__shared_verdict {
    int taken;
    int64_t wait_ms;
    int why;
};
int tslock__shared_acquire_watch(tslock_lock *l, const char *member,
                                 int64_t score, int64_t now, int64_t limit,
                                 int check_intent,
                                 struct tslock__shared_verdict *v);
/* 1 removed, 0 our entry was gone, -1 the key was taken; or a code. */
int tslock__shared_release_watch(tslock_lock *l, const char *member,
                                 int64_t now, int *outcome);
int tslock__shared_extend_watch(tslock_lock *l, const char *old_member,
                                const char *new_member, int64_t score,
                                int64_t now, int *outcome);
int tslock__rw_exclusive_watch(tslock_lock *l, int64_t now, int64_t intent_ms,
                               struct tslock__shared_verdict *v);

#endif /* TSLOCK_COMPAT_H */
