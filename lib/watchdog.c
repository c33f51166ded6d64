/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watchdog.c - keeping a held lock renewed from a thread of its own, on a
 * connection of its own, so a caller busy with its work never delays a
 * renewal.  The thread works on a copy of the hold and hands it back when
 * stopped.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include "tslock_atomic.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tslock_int.h"

struct tslock_watchdog {
    tslock_lock *lock; /* the caller's, untouched while we run */
    tslock_lock *copy; /* the hold, on the renewing client */
    int64_t interval_ms;
    tslock_watchdog_fn on_failure;
    void *userdata;
    pthread_mutex_t warn_mutex; /* guards on_warning and warn_userdata */
    tslock_watchdog_fn on_warning;
    void *warn_userdata;
    atomic_uint recoveries;
    atomic_int status;
    int stop_pipe[2];
    pthread_t thread;
};

/* Wait interval_ms, or until stopped: 1 when stopped. */
static int stopped_during(tslock_watchdog *w)
{
    struct pollfd pfd = {.fd = w->stop_pipe[0], .events = POLLIN};
    struct timespec ts;
    int64_t end, left;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    end = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + w->interval_ms;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        left = end - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        if (left <= 0)
            return 0;
        if (poll(&pfd, 1, left > 60000 ? 60000 : (int)left) > 0)
            return 1;
    }
}

/* A fault the renewal rode out: count it, and tell the caller. */
static void warn_recovered(tslock_watchdog *w)
{
    tslock_watchdog_fn fn;
    void *ud;

    atomic_fetch_add(&w->recoveries, 1);
    pthread_mutex_lock(&w->warn_mutex);
    fn = w->on_warning;
    ud = w->warn_userdata;
    pthread_mutex_unlock(&w->warn_mutex);
    if (fn != NULL)
        fn(w->copy->recovered_code, w->copy->recovered_why, ud);
}

/* A renewal the replicas did not acknowledge in time: a warning. */
static void warn_replicas(tslock_watchdog *w)
{
    tslock_watchdog_fn fn;
    void *ud;

    pthread_mutex_lock(&w->warn_mutex);
    fn = w->on_warning;
    ud = w->warn_userdata;
    pthread_mutex_unlock(&w->warn_mutex);
    if (fn != NULL)
        fn(TSLOCK_EREPLICAS, tslock_client_errstr(w->copy->client), ud);
}

/*
 * Renew until stopped.  tslock_extend() itself reconnects and retries
 * through a transient fault while the lease leaves room, so the loop
 * ends only on a loss, or on a fault that outlasted the lease's room.
 */
static void *renew_loop(void *arg)
{
    tslock_watchdog *w = arg;

    tslock_client *counted = w->lock->client; /* the caller's client */

    while (!stopped_during(w)) {
        unsigned seen = w->copy->recoveries;
        int rc = tslock_extend(w->copy, 0);

        if (rc == TSLOCK_OK || rc == TSLOCK_EREPLICAS)
            TSLOCK__COUNT(counted, renewals);
        else
            TSLOCK__COUNT(counted, renewal_failures);
        if (rc == TSLOCK_OK && w->copy->recoveries != seen)
            warn_recovered(w);
        if (rc == TSLOCK_EREPLICAS) {
            /* Renewed on the master, not acknowledged by enough replicas. */
            warn_replicas(w);
            continue;
        }
        if (rc != TSLOCK_OK) {
            atomic_store(&w->status, rc);
            if (w->on_failure != NULL)
                w->on_failure(rc, tslock_client_errstr(w->copy->client),
                              w->userdata);
            break;
        }
    }
    return NULL;
}

static tslock_lock *copy_hold(const tslock_lock *l, tslock_client *c)
{
    tslock_lock *copy = NULL;
    int fds[2];

    if (tslock_lock_new(&copy, c, l->key) != TSLOCK_OK)
        return NULL;
    /* Everything but the client and the copy's own cancel pipe. */
    memcpy(fds, copy->cancel_pipe, sizeof(fds));
    free(copy->key);
    memcpy(copy, l, sizeof(*copy));
    copy->client = c;
    copy->in_watchdog = 1; /* stats_client stays the caller's */
    memcpy(copy->cancel_pipe, fds, sizeof(fds));
    copy->owner_key = NULL; /* the copy names them again on first use */
    copy->channel = NULL;
    copy->queue_key = copy->alive_key = copy->seq_key = NULL;
    copy->wake_prefix = NULL;
    copy->key = strdup(l->key);
    if (copy->key == NULL) {
        tslock_lock_free(copy);
        return NULL;
    }
    return copy;
}

int tslock_watchdog_start(tslock_watchdog **out, tslock_lock *lock,
                          tslock_client *renew_client, int64_t interval_ms,
                          tslock_watchdog_fn on_failure, void *userdata)
{
    tslock_watchdog *w;
    sigset_t all, old;
    int started;

    if (out == NULL || lock == NULL || renew_client == NULL || interval_ms < 0)
        return TSLOCK_EINVAL;
    *out = NULL;
    if (!lock->held)
        return tslock__fail(lock->client, TSLOCK_ESTATE,
                            "lock '%s' is not held", lock->key);
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return TSLOCK_ENOMEM;
    w->lock = lock;
    w->interval_ms = interval_ms > 0 ? interval_ms : lock->ttl_ms / 3;
    if (w->interval_ms < 1)
        w->interval_ms = 1;
    w->on_failure = on_failure;
    w->userdata = userdata;
    atomic_init(&w->status, TSLOCK_OK);
    atomic_init(&w->recoveries, 0);
    pthread_mutex_init(&w->warn_mutex, NULL);
    w->copy = copy_hold(lock, renew_client);
    if (w->copy == NULL || pipe2(w->stop_pipe, O_CLOEXEC) != 0) {
        tslock_lock_free(w->copy);
        pthread_mutex_destroy(&w->warn_mutex);
        free(w);
        return TSLOCK_ENOMEM;
    }
    /*
     * The thread takes no signals: they stay with the caller's threads,
     * whose handlers expect them, and never interrupt a renewal.  It
     * inherits the mask it is created with.
     */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    started = pthread_create(&w->thread, NULL, renew_loop, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started != 0) {
        close(w->stop_pipe[0]);
        close(w->stop_pipe[1]);
        tslock_lock_free(w->copy);
        pthread_mutex_destroy(&w->warn_mutex);
        free(w);
        return tslock__fail(lock->client, TSLOCK_EIO,
                            "cannot start the watchdog thread");
    }
    *out = w;
    return TSLOCK_OK;
}

int tslock_watchdog_set_on_warning(tslock_watchdog *w,
                                   tslock_watchdog_fn on_warning,
                                   void *userdata)
{
    if (w == NULL)
        return TSLOCK_EINVAL;
    pthread_mutex_lock(&w->warn_mutex);
    w->on_warning = on_warning;
    w->warn_userdata = userdata;
    pthread_mutex_unlock(&w->warn_mutex);
    return TSLOCK_OK;
}

unsigned tslock_watchdog_recoveries(const tslock_watchdog *w)
{
    return w == NULL ? 0 : atomic_load(&((tslock_watchdog *)w)->recoveries);
}

int tslock_watchdog_status(const tslock_watchdog *w)
{
    return w == NULL ? TSLOCK_OK : atomic_load(&((tslock_watchdog *)w)->status);
}

int tslock_watchdog_stop(tslock_watchdog *w)
{
    tslock_lock *l;
    int rc;

    if (w == NULL)
        return TSLOCK_OK;
    (void)!write(w->stop_pipe[1], "x", 1);
    pthread_join(w->thread, NULL);
    rc = atomic_load(&w->status);
    l = w->lock;
    /*
     * Hand the renewed hold back: a new stamp, a new lease end, and a new
     * stamp an interrupted renewal may have written, for the next release
     * to settle.
     */
    memcpy(l->value, w->copy->value, sizeof(l->value));
    memcpy(l->pending, w->copy->pending, sizeof(l->pending));
    l->pending_end = w->copy->pending_end;
    l->expires_ms = w->copy->expires_ms;
    l->held = w->copy->held;
    if (rc != TSLOCK_OK)
        memcpy(l->client->errstr, w->copy->client->errstr,
               sizeof(l->client->errstr));
    close(w->stop_pipe[0]);
    close(w->stop_pipe[1]);
    tslock_lock_free(w->copy);
    pthread_mutex_destroy(&w->warn_mutex);
    free(w);
    return rc;
}
