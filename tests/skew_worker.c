/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * skew_worker.c - one lock client as a process of its own, so the skew
 * tests can run it under libfaketime with its wall clock shifted (and
 * its monotonic clock left alone, as an NTP step leaves it).  It takes
 * one lock, holds it, releases it, and prints when, on CLOCK_MONOTONIC,
 * which every process of the host shares.
 *
 *   skew_worker SOCKET KEY CLIENT UNIT LEASE_MS WORK_MS WAIT_MS GRACE_MS CLOCK
 *
 * CLIENT: timestamp, bridge or token (tslock), java, redisdoc or redispy2
 * (tests/legacy.c).  UNIT: ms, s or float (tslock only).  WORK_MS: how
 * long to hold; -1 exits holding the lock, as a crashed holder.  WAIT_MS:
 * how long to wait for the lock.  GRACE_MS: tslock's takeover grace.
 * CLOCK: local or server (tslock's time source).
 *
 * With SKEW_WORKER_GO set, it prints "ready" once connected and waits
 * for a line on standard input before it tries: a driver can start it
 * early and let it go the moment another client holds, so its startup
 * (exec, connect, libfaketime) does not delay its attempt.
 *
 * Prints "held IN_US" once it holds (flushed, so a driver can start the
 * next client), then "done OUT_US RELEASE" just before exiting, where
 * OUT_US is taken before the release is sent and RELEASE is ok, lost
 * (tslock found the lease gone), deleted or kept (a legacy release);
 * or "busy" when it never held.  Exit 0, or 1 on any error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "legacy.h"
#include "tslock.h"

static long long mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void hold_for(long long work_ms)
{
    struct timespec ts = {(time_t)(work_ms / 1000),
                          (long)(work_ms % 1000) * 1000000};

    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* The start signal, when the driver asked for one. */
static void await_go(void)
{
    char line[16];

    if (getenv("SKEW_WORKER_GO") == NULL)
        return;
    printf("ready\n");
    fflush(stdout);
    if (fgets(line, sizeof(line), stdin) == NULL)
        exit(1);
}

static int legacy_kind_of(const char *name, legacy_kind *kind)
{
    static const char *const names[] = {"java", "redisdoc", "redispy2"};
    int i;

    for (i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0) {
            *kind = (legacy_kind)i;
            return 0;
        }
    return -1;
}

static int run_legacy(const char *sock, const char *key, legacy_kind kind,
                      long long lease, long long work, long long wait)
{
    redisContext *r = redisConnectUnix(sock);
    legacy_client lc;
    long long in, out;
    int rc;

    if (r == NULL || r->err) {
        fprintf(stderr, "skew_worker: cannot connect to %s\n", sock);
        return 1;
    }
    legacy_init(&lc, kind, r, lease);
    await_go();
    rc = legacy_lock(&lc, key, wait);
    if (rc != LEGACY_HELD) {
        printf(rc == LEGACY_BUSY ? "busy\n" : "error %s\n", lc.errstr);
        redisFree(r);
        return rc == LEGACY_BUSY ? 0 : 1;
    }
    in = mono_us();
    printf("held %lld\n", in);
    fflush(stdout);
    if (work < 0)
        _exit(0); /* a crashed holder: the stamp stays */
    hold_for(work);
    out = mono_us();
    rc = legacy_unlock(&lc, key);
    printf("done %lld %s\n", out,
           rc == 1   ? "deleted"
           : rc == 0 ? "kept"
                     : "error");
    redisFree(r);
    return rc < 0;
}

static int run_tslock(const char *sock, const char *key, const char *scheme,
                      const char *unit, long long lease, long long work,
                      long long wait, long long grace, const char *clock)
{
    tslock_client *c = NULL;
    tslock_lock *l = NULL;
    long long in, out;
    int rc = tslock_client_new(&c);

    if (rc == TSLOCK_OK)
        rc = tslock_client_set_time_source(c, strcmp(clock, "server") == 0
                                                  ? TSLOCK_TIME_SERVER
                                                  : TSLOCK_TIME_LOCAL);
    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_unix(c, sock);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_new(&l, c, key);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_scheme(
            l, strcmp(scheme, "token") == 0    ? TSLOCK_SCHEME_TOKEN
               : strcmp(scheme, "bridge") == 0 ? TSLOCK_SCHEME_BRIDGE
                                               : TSLOCK_SCHEME_TIMESTAMP);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_unit(l, strcmp(unit, "s") == 0 ? TSLOCK_UNIT_S
                                     : strcmp(unit, "float") == 0
                                         ? TSLOCK_UNIT_FLOAT
                                         : TSLOCK_UNIT_MS);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_ttl(l, lease);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_set_takeover_grace(l, grace);
    if (rc == TSLOCK_OK) {
        await_go();
        rc = tslock_acquire(l, wait);
    }
    if (rc == TSLOCK_EBUSY) {
        printf("busy\n");
        rc = TSLOCK_OK;
        goto out;
    }
    if (rc != TSLOCK_OK)
        goto out;
    in = mono_us();
    printf("held %lld\n", in);
    fflush(stdout);
    if (work < 0)
        _exit(0);
    hold_for(work);
    out = mono_us();
    rc = tslock_release(l);
    printf("done %lld %s\n", out, rc == TSLOCK_OK ? "ok" : "lost");
    if (rc == TSLOCK_ELOST)
        rc = TSLOCK_OK;
out:
    if (rc != TSLOCK_OK)
        fprintf(stderr, "skew_worker: %s: %s\n", tslock_strerror(rc),
                c != NULL ? tslock_client_errstr(c) : "");
    tslock_lock_free(l);
    tslock_client_free(c);
    return rc != TSLOCK_OK;
}

int main(int argc, char **argv)
{
    legacy_kind kind;

    if (argc != 10) {
        fprintf(stderr, "usage: skew_worker SOCKET KEY CLIENT UNIT LEASE_MS "
                        "WORK_MS WAIT_MS GRACE_MS CLOCK\n");
        return 64;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (legacy_kind_of(argv[3], &kind) == 0)
        return run_legacy(argv[1], argv[2], kind, atoll(argv[5]),
                          atoll(argv[6]), atoll(argv[7]));
    return run_tslock(argv[1], argv[2], argv[3], argv[4], atoll(argv[5]),
                      atoll(argv[6]), atoll(argv[7]), atoll(argv[8]), argv[9]);
}
