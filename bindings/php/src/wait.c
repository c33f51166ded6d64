/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wait.c - a waiting acquire that keeps PHP's limits.  The time spent
 * waiting counts against max_execution_time as if it were execution:
 * the wait is cut where PHP's timer has no time left, and ends in PHP's
 * own "Maximum execution time exceeded" with nothing held.  A signal
 * with a handler (pcntl_signal()) cancels the wait (tslock_lock_cancel()
 * is async-signal-safe); the handlers run at once, and one that throws
 * ends the wait with its exception and nothing held, while the wait goes
 * on for the time left after one that returns (as PEP 475 has it).
 */
#include "php_tslock.h"

#include <errno.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>

#include "zend_exceptions.h"

/* Signals whose handlers end a wait; SIGPROF is PHP's execution timer. */
static const int wait_signals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGUSR1, SIGUSR2,
                                   SIGALRM, SIGTERM, SIGCHLD, SIGPROF};
#define WAIT_SIGNALS (sizeof(wait_signals) / sizeof(wait_signals[0]))

static volatile sig_atomic_t signal_seen;
static tslock_lock *volatile signal_target;
static struct sigaction signal_previous[WAIT_SIGNALS];
static bool signal_hooked[WAIT_SIGNALS];

int64_t ptslock_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    int saved = errno;
    tslock_lock *target = signal_target;
    size_t i;

    signal_seen = 1;
    if (target != NULL)
        (void)tslock_lock_cancel(target);
    for (i = 0; i < WAIT_SIGNALS; i++) {
        const struct sigaction *prev = &signal_previous[i];

        if (wait_signals[i] != sig)
            continue;
        if (prev->sa_flags & SA_SIGINFO)
            prev->sa_sigaction(sig, info, uctx);
        else
            prev->sa_handler(sig);
    }
    errno = saved;
}

/* Chain on_signal in front of every handler installed for a wait signal. */
static void hook(tslock_lock *lock)
{
    struct sigaction cur, sa;
    size_t i;

    signal_seen = 0;
    signal_target = lock;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    for (i = 0; i < WAIT_SIGNALS; i++) {
        signal_hooked[i] = false;
        if (sigaction(wait_signals[i], NULL, &cur) != 0)
            continue;
        /* The default action ends the process anyway; an ignored one asks
         * for nothing. */
        if (cur.sa_flags & SA_SIGINFO
                ? cur.sa_sigaction == NULL
                : cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN)
            continue;
        signal_previous[i] = cur;
        sa.sa_mask = cur.sa_mask;
        sa.sa_flags = SA_SIGINFO | (cur.sa_flags & (SA_ONSTACK | SA_RESTART));
        signal_hooked[i] = sigaction(wait_signals[i], &sa, NULL) == 0;
    }
}

static void unhook(void)
{
    size_t i;

    for (i = 0; i < WAIT_SIGNALS; i++)
        if (signal_hooked[i])
            (void)sigaction(wait_signals[i], &signal_previous[i], NULL);
    signal_target = NULL;
}

/* Run the pcntl handlers of the signals that came; false if one threw. */
static bool dispatch_signals(void)
{
    zval fn, ret;

    if (zend_hash_str_exists(CG(function_table), "pcntl_signal_dispatch",
                             sizeof("pcntl_signal_dispatch") - 1)) {
        ZVAL_STRING(&fn, "pcntl_signal_dispatch");
        ZVAL_UNDEF(&ret);
        (void)call_user_function(NULL, NULL, &fn, &ret, 0, NULL);
        zval_ptr_dtor(&fn);
        zval_ptr_dtor(&ret);
    }
    if (zend_atomic_bool_load_ex(&EG(timed_out)))
        zend_timeout();
    return EG(exception) == NULL;
}

/*
 * What PHP's execution timer (ITIMER_PROF, CPU time, on Linux builds
 * without ZEND_MAX_EXECUTION_TIMERS) has left, in ms; -1 when none runs.
 */
static int64_t limit_left_ms(void)
{
    struct itimerval it;

    if (EG(timeout_seconds) <= 0 || getitimer(ITIMER_PROF, &it) != 0)
        return -1;
    if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
        return -1;
    return (int64_t)it.it_value.tv_sec * 1000 + it.it_value.tv_usec / 1000;
}

/*
 * Charge ms of waiting to the timer.  When it has nothing left the timer
 * is left to fire at the next instant of execution (a lock just taken is
 * then released by RSHUTDOWN after PHP's fatal error).
 */
static void limit_spend(int64_t ms)
{
    struct itimerval it;
    int64_t left_us;

    if (ms <= 0 || getitimer(ITIMER_PROF, &it) != 0
        || (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0))
        return;
    left_us =
        (int64_t)it.it_value.tv_sec * 1000000 + it.it_value.tv_usec - ms * 1000;
    if (left_us < 1)
        left_us = 1;
    it.it_value.tv_sec = left_us / 1000000;
    it.it_value.tv_usec = left_us % 1000000;
    (void)setitimer(ITIMER_PROF, &it, NULL);
}

/*
 * tslock_acquire() with PHP's limits.  wait_ms as tslock_acquire() takes
 * it.  Returns its code; with an exception pending when a signal handler
 * threw (nothing held).  Does not return when the time limit ran out.
 */
int ptslock_acquire(tslock_lock *lock, int64_t wait_ms)
{
    int64_t deadline = wait_ms > 0 ? ptslock_now_ms() + wait_ms : 0;
    bool stale_cancel_seen = false;

    for (;;) {
        int64_t slice = wait_ms, left = limit_left_ms(), began;
        bool limited = false;
        int rc;

        if (wait_ms > 0) {
            slice = deadline - ptslock_now_ms();
            if (slice < 0)
                slice = 0;
        }
        if (slice == 0) {
            /* One try: no wait to bound, no signal to listen for. */
            rc = tslock_acquire(lock, 0);
            if (rc == TSLOCK_ECANCELED && !stale_cancel_seen) {
                /* A signal that came after the last wait ended. */
                stale_cancel_seen = true;
                continue;
            }
            return rc;
        }
        if (left >= 0 && (slice < 0 || left <= slice)) {
            slice = left;
            limited = true;
        }
        began = ptslock_now_ms();
        hook(lock);
        rc = slice != 0 ? tslock_acquire(lock, slice) : TSLOCK_EBUSY;
        unhook();
        limit_spend(ptslock_now_ms() - began);
        if (rc == TSLOCK_ECANCELED) {
            if (signal_seen && !dispatch_signals())
                return rc;
            continue;
        }
        if ((rc == TSLOCK_EBUSY || rc == TSLOCK_EUNREADABLE) && limited)
            zend_timeout();
        return rc;
    }
}
