/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * signals.c - what tslock does with SIGINT, SIGTERM and SIGHUP: while it
 * waits for a lock they cancel the wait; while COMMAND runs they are
 * passed on to it, so the lock is released only once COMMAND has exited.
 * SIGPIPE is ignored so a server that hangs up gives an error, not death.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "cli.h"

static const int handled[] = {SIGINT, SIGTERM, SIGHUP};
#define N_HANDLED (sizeof(handled) / sizeof(handled[0]))

static struct sigaction saved[N_HANDLED];
static struct sigaction saved_pipe;
static int installed;
static int pipe_ignored;

static volatile sig_atomic_t received;
static volatile sig_atomic_t child_pid;
static tslock_lock *volatile wait_lock;
static tslock_redlock *volatile wait_redlock;
static tslock_lock **volatile wait_set;
static volatile sig_atomic_t wait_set_n;

static void on_signal(int sig, siginfo_t *info, void *context)
{
    int saved_errno = errno;

    (void)context;
    received = sig;
    if (child_pid > 0) {
        /*
         * A signal from the terminal (SI_KERNEL) went to the whole
         * foreground process group, COMMAND included: sending it again
         * would make COMMAND see two.
         */
        if (info == NULL || info->si_code != SI_KERNEL)
            kill((pid_t)child_pid, sig);
    } else if (wait_lock != NULL) {
        tslock_lock_cancel(wait_lock); /* async-signal-safe */
    } else if (wait_set != NULL) {
        int i;
        for (i = 0; i < wait_set_n; i++)
            tslock_lock_cancel(wait_set[i]);
    } else if (wait_redlock != NULL) {
        tslock_redlock_cancel(wait_redlock); /* async-signal-safe too */
    }
    errno = saved_errno;
}

void cli_signals_install(void)
{
    struct sigaction sa;
    size_t i;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < N_HANDLED; i++) {
        sigaction(handled[i], NULL, &saved[i]);
        /*
         * A signal ignored when we started (nohup, a background job of a
         * script) stays ignored, for us and for COMMAND, as in shells.
         */
        if (saved[i].sa_handler != SIG_IGN)
            sigaction(handled[i], &sa, NULL);
    }
    installed = 1;
}

void cli_signals_ignore_pipe(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, &saved_pipe);
    pipe_ignored = 1;
}

void cli_signals_restore(void)
{
    size_t i;

    for (i = 0; installed && i < N_HANDLED; i++)
        sigaction(handled[i], &saved[i], NULL);
    if (pipe_ignored)
        sigaction(SIGPIPE, &saved_pipe, NULL);
}

void cli_signals_block(sigset_t *old)
{
    sigset_t block;
    size_t i;

    sigemptyset(&block);
    for (i = 0; i < N_HANDLED; i++)
        sigaddset(&block, handled[i]);
    pthread_sigmask(SIG_BLOCK, &block, old);
}

void cli_signals_wait_on(tslock_lock *l)
{
    wait_lock = l;
}

void cli_signals_wait_on_set(tslock_lock **locks, int n)
{
    wait_set = NULL; /* never a set with the wrong count */
    wait_set_n = locks != NULL ? n : 0;
    wait_set = locks;
}

void cli_signals_forward_to(int pid)
{
    child_pid = pid;
}

int cli_signals_received(void)
{
    return received;
}

void cli_signals_wait_on_redlock(tslock_redlock *rl)
{
    wait_redlock = rl;
}
