/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tslock_int.h - private declarations of the top layer of libtslock
 * (lib/): the wait loop, the schemes, the kinds of lock, recovery.  It
 * includes the layers below through compat/compat.h, which includes
 * proto/proto.h, which includes net/net.h (doc/layers.md).
 */
#ifndef TSLOCK_INT_H
#define TSLOCK_INT_H

#include "compat.h"

/* ---- lock.c */
/* Empty the lock's cancel pipe and clear its cancel flag. */
void tslock__drain_cancel(tslock_lock *l);
/* Count the end of a hold (released or lost) and tell the observer. */
void tslock__count_hold_end(tslock_lock *l, int rc);
/* Count a takeover of an expired stamp and tell the observer. */

/* ---- replicas.c: WAIT after a write */
/*
 * Judge a WAIT reply for lock l: TSLOCK_OK, TSLOCK_EREPLICAS,
 * TSLOCK_EUNSUPPORTED (no WAIT) or a code for another error.
 */
int tslock__replicas_judge(tslock_lock *l, const redisReply *r);
/* Send WAIT for l's replicas and judge the reply. */
int tslock__replicas_wait(tslock_lock *l);

/* ---- fair.c: the line of waiters; fair mode serves it in order */
int tslock__fair_try(tslock_lock *l);
/*
 * Whether a waiting acquire of l joins the line, so that a release wakes
 * it alone (a token lock, listening, on a server with Lua or WATCH).
 */
int tslock__queue_eligible(tslock_lock *l);
/* One attempt from the line: take a free key, or join and refresh. */
int tslock__queue_try(tslock_lock *l, int64_t *holder_pttl);
void tslock__fair_leave(tslock_lock *l);
/*
 * A waiting token acquire took the key after a sleep that listened and
 * heard nothing, and holder_end (our wall clock) was the holder's lease
 * end seen before it: when the key came free well before that end and
 * nobody else is in line to have been woken instead, the release's
 * announcement was refused or lost, and the client's waits poll from
 * now on (fair.c).
 */
void tslock__unheard_release(tslock_lock *l, int64_t holder_end);

/* ---- shared.c, rwlock.c: read-write locks and semaphores */
/* One attempt of a read-write lock or semaphore; sets l->ops. */
int tslock__kind_try(tslock_lock *l);
/* A waiting exclusive side that gave up withdraws its intent. */
void tslock__rw_leave(tslock_lock *l);
/* Now on the server's clock as this client knows it (TIME at connect). */
/* The now given to a shared-hold script: "" to read TIME there. */
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

/* ---- guard.c: change the key only while it holds our value */
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

#endif /* TSLOCK_INT_H */
