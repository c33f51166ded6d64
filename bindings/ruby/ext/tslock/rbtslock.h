/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rbtslock.h - what the files of the Ruby extension share: the client and
 * lock structures behind Tslock::Client and Tslock::Lock, and how errors
 * become Tslock::Error exceptions.  Only the public tslock.h is used.
 */
#ifndef RBTSLOCK_H
#define RBTSLOCK_H

#include <ruby.h>
#include <ruby/thread.h>
#include <ruby/util.h>
#include <sys/types.h>

#include <tslock.h>

/* Where to connect: one parsed URL, shared by every lock of the client. */
typedef struct rbt_client {
    struct tslock_url url; /* from tslock_url_parse(); url.tls owned here */
    int parsed;
    int connect_ms, command_ms;
} rbt_client;

/* The options of a lock, kept so a fork child can make its own again. */
typedef struct rbt_opts {
    int scheme; /* tslock_scheme */
    int64_t ttl_ms;
    int unit;      /* tslock_unit, or -1 for the default */
    char *dialect; /* NULL for none */
    int fencing, fair, reentrant, wakeup; /* wakeup: -1 default */
    int rw;                               /* tslock_rw */
    int64_t permits;                      /* 0: not a semaphore */
    int retry_min, retry_max;             /* 0: default */
    int64_t grace_ms, margin_ms;          /* -1: default */
} rbt_opts;

typedef struct rbt_lock {
    VALUE client; /* the Tslock::Client (marked) */
    rbt_client *target;
    char *name;
    rbt_opts opts;
    tslock_client *conn; /* this lock's own connection, made lazily */
    int connected;
    tslock_lock *lock;
    pid_t pid;         /* the process that made conn and lock */
    volatile int busy; /* a call is running without the GVL */
    /* The watchdog (renew:) and how its loss reaches Ruby. */
    tslock_watchdog *wd;
    tslock_client *wd_conn;
    int loss_pipe[2];     /* one byte per renewal: 'L' lost, 'S' stopped */
    volatile int wd_lost; /* the watchdog's callback ran */
    int wd_code;
    char wd_detail[256];
} rbt_lock;

extern VALUE rbt_mTslock, rbt_cClient, rbt_cLock, rbt_eError;

/* Raise the Tslock::Error subclass of code with detail (or the message). */
VALUE rbt_error_new(int code, const char *detail);
NORETURN(void rbt_raise(int code, const char *detail));

rbt_client *rbt_client_get(VALUE self);
/* Connect c to the client's target; runs without the GVL. */
int rbt_client_connect(const rbt_client *t, tslock_client *c);

void rbt_init_errors(void);
void rbt_init_client(void);
void rbt_init_lock(void);
void rbt_init_watchdog(void);

/* Watchdog (watchdog.c), called by lock.c. */
int rbt_watchdog_start(rbt_lock *l, int64_t interval_ms, char *detail,
                       size_t size);
int rbt_watchdog_stop(rbt_lock *l);
void rbt_watchdog_forget(rbt_lock *l);

/* Run fn(arg) without the GVL, uninterruptible (bounded by timeouts). */
void rbt_nogvl(void *(*fn)(void *), void *arg);

#endif
