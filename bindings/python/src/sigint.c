/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sigint.c - Ctrl-C during a wait: for one blocking wait on the main
 * thread (where Python runs its signal handlers), a SIGINT handler chained
 * in front of Python's cancels the wait (tslock_lock_cancel(), which is
 * async-signal-safe) and then runs Python's, which the caller reads back
 * with PyErr_CheckSignals() once the wait has returned.
 */
#include "pytslock.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static volatile sig_atomic_t sigint_seen;
static int (*volatile sigint_cancel)(void *);
static void *volatile sigint_target;
static struct sigaction sigint_prev;

static void on_sigint(int sig, siginfo_t *info, void *uctx)
{
    int saved = errno;
    int (*cancel)(void *) = sigint_cancel;

    sigint_seen = 1;
    if (cancel != NULL)
        (void)cancel(sigint_target);
    if (sigint_prev.sa_flags & SA_SIGINFO) {
        if (sigint_prev.sa_sigaction != NULL)
            sigint_prev.sa_sigaction(sig, info, uctx);
    } else if (sigint_prev.sa_handler != SIG_DFL
               && sigint_prev.sa_handler != SIG_IGN) {
        sigint_prev.sa_handler(sig);
    }
    errno = saved;
}

int pytslock_sigint_hook(int (*cancel)(void *), void *target)
{
    struct sigaction cur, sa;

    if (PyThread_get_thread_ident() != pytslock_main_thread)
        return 0;
    if (sigaction(SIGINT, NULL, &cur) != 0)
        return 0;
    /* A default SIGINT ends the process anyway; an ignored one asks for
     * nothing. */
    if (!(cur.sa_flags & SA_SIGINFO)
        && (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN))
        return 0;
    sigint_prev = cur;
    sigint_seen = 0;
    sigint_target = target;
    sigint_cancel = cancel;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigint;
    sa.sa_mask = cur.sa_mask;
    sa.sa_flags = SA_SIGINFO | (cur.sa_flags & SA_ONSTACK);
    if (sigaction(SIGINT, &sa, NULL) != 0) {
        sigint_cancel = NULL;
        return 0;
    }
    return 1;
}

void pytslock_sigint_unhook(void)
{
    (void)sigaction(SIGINT, &sigint_prev, NULL);
    sigint_cancel = NULL;
    sigint_target = NULL;
}

int pytslock_sigint_seen(void)
{
    return sigint_seen;
}
