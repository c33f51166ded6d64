/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_binding.c - the C figures a binding's bench is set beside, on the
 * server the binding uses, in the same run (make bench, through
 * tests/test_java.sh --run tslock.BenchRun, which calls this between its
 * own measurements).
 *   bench_binding URL cycle N            N uncontended acquire+release on
 *                                        one lock object: ns per cycle
 *   bench_binding URL contend T MS KEY   T threads, each with a client of
 *                                        its own, take and release KEY for
 *                                        MS ms: handoffs per second
 * Prints one number on stdout.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tslock.h"

static const char *url;
static const char *key;
static int64_t end_ns;
static int64_t total;
static pthread_mutex_t total_mu = PTHREAD_MUTEX_INITIALIZER;

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A connected client and a lock on k, or exit 1 with why. */
static tslock_lock *open_lock(const char *k, tslock_client **c)
{
    tslock_lock *l = NULL;
    int rc = tslock_client_new(c);

    if (rc == TSLOCK_OK)
        rc = tslock_client_connect_url(*c, url);
    if (rc == TSLOCK_OK)
        rc = tslock_lock_new(&l, *c, k);
    if (rc != TSLOCK_OK) {
        fprintf(stderr, "bench_binding: %s: %s\n", tslock_errname(rc),
                *c != NULL ? tslock_client_errstr(*c) : "");
        exit(1);
    }
    return l;
}

static void *contender(void *arg)
{
    tslock_client *c = NULL;
    tslock_lock *l = open_lock(key, &c);
    int64_t n = 0;

    (void)arg;
    while (now_ns() < end_ns) {
        if (tslock_acquire(l, 0) != TSLOCK_OK
            && tslock_acquire(l, 1000) != TSLOCK_OK)
            continue;
        n++;
        tslock_release(l);
    }
    tslock_lock_free(l);
    tslock_client_free(c);
    pthread_mutex_lock(&total_mu);
    total += n;
    pthread_mutex_unlock(&total_mu);
    return NULL;
}

static int contend(int threads, int ms)
{
    pthread_t *t = calloc((size_t)threads, sizeof(*t));
    int64_t t0;
    int i;

    if (t == NULL)
        return 1;
    t0 = now_ns();
    end_ns = t0 + (int64_t)ms * 1000000;
    for (i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, contender, NULL);
    for (i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("%.1f\n", (double)total * 1e9 / (double)(now_ns() - t0));
    free(t);
    return 0;
}

static int cycle(long n, int fresh)
{
    tslock_client *c = NULL;
    tslock_lock *l = open_lock("bench:binding:c", &c);
    int64_t t0 = now_ns();
    long i;

    for (i = 0; i < n; i++) {
        if (fresh) {
            tslock_lock_free(l);
            if (tslock_lock_new(&l, c, "bench:binding:c") != TSLOCK_OK)
                return 1;
        }
        if (tslock_acquire(l, 0) != TSLOCK_OK || tslock_release(l) != TSLOCK_OK)
            return 1;
    }
    printf("%.0f\n", (double)(now_ns() - t0) / (double)n);
    tslock_lock_free(l);
    tslock_client_free(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[2], "cycle") == 0) {
        url = argv[1];
        return cycle(atol(argv[3]), 0);
    }
    if (argc == 4 && strcmp(argv[2], "cycle-fresh") == 0) {
        url = argv[1];
        return cycle(atol(argv[3]), 1);
    }
    if (argc == 6 && strcmp(argv[2], "contend") == 0) {
        url = argv[1];
        key = argv[5];
        return contend(atoi(argv[3]), atoi(argv[4]));
    }
    fprintf(stderr, "usage: bench_binding URL cycle N | "
                    "URL contend THREADS MS KEY\n");
    return 2;
}
