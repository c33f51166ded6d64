/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_ab.c - the uncontended token acquire + release of two builds of
 * libtslock, A and B, loaded side by side (dlmopen, one link namespace
 * each) and run in alternating blocks against one server, each block
 * after a block of PINGs on the same server, so that both see the same
 * machine.  Prints pairs/s of each, the ratio A/B and PINGs per pair.
 * Run by `make bench-ab` (this build against a baseline commit); only
 * the public API is used, so any 1.x build of the library will do.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlmopen */
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_util.h"
#include "harness.h"

/* The calls of one build, looked up in its own namespace. */
struct build {
    const char *name, *path;
    void *dl;
    int (*client_new)(tslock_client **);
    int (*connect_unix)(tslock_client *, const char *);
    int (*lock_new)(tslock_lock **, tslock_client *, const char *);
    int (*set_scheme)(tslock_lock *, tslock_scheme);
    int (*acquire)(tslock_lock *, int64_t);
    int (*release)(tslock_lock *);
    const char *(*errstr)(const tslock_client *);
    void (*lock_free)(tslock_lock *);
    void (*client_free)(tslock_client *);
    tslock_client *c;
    tslock_lock *l;
    double *pairs_s, *pings_per_pair, *client_us, *server_us;
};

#define LOOK(b, field, sym)                                                    \
    (*(void **)&(b)->field = dlsym((b)->dl, sym)) != NULL

static int build_load(struct build *b)
{
    b->dl = dlmopen(LM_ID_NEWLM, b->path, RTLD_NOW | RTLD_LOCAL);
    if (b->dl == NULL) {
        fprintf(stderr, "bench_ab: %s: %s\n", b->path, dlerror());
        return -1;
    }
    if (LOOK(b, client_new, "tslock_client_new")
        && LOOK(b, connect_unix, "tslock_client_connect_unix")
        && LOOK(b, lock_new, "tslock_lock_new")
        && LOOK(b, set_scheme, "tslock_lock_set_scheme")
        && LOOK(b, acquire, "tslock_acquire")
        && LOOK(b, release, "tslock_release")
        && LOOK(b, errstr, "tslock_client_errstr")
        && LOOK(b, lock_free, "tslock_lock_free")
        && LOOK(b, client_free, "tslock_client_free"))
        return 0;
    fprintf(stderr, "bench_ab: %s lacks a public call: %s\n", b->path,
            dlerror());
    return -1;
}

/* A client and a token lock of build b on the server's socket. */
static int build_open(struct build *b, const th_server *srv, const char *key)
{
    if (b->client_new(&b->c) != TSLOCK_OK
        || b->connect_unix(b->c, srv->socket) != TSLOCK_OK
        || b->lock_new(&b->l, b->c, key) != TSLOCK_OK
        || b->set_scheme(b->l, TSLOCK_SCHEME_TOKEN) != TSLOCK_OK) {
        fprintf(stderr, "bench_ab: %s: cannot open a lock: %s\n", b->name,
                b->c != NULL ? b->errstr(b->c) : "no client");
        return -1;
    }
    return 0;
}

/* n acquire + release pairs; their time in ns, or -1. */
static int64_t pairs(struct build *b, int n)
{
    int64_t t0 = bench_now_ns();
    int i;

    for (i = 0; i < n; i++)
        if (b->acquire(b->l, 0) != TSLOCK_OK || b->release(b->l) != TSLOCK_OK) {
            fprintf(stderr, "bench_ab: %s: %s\n", b->name, b->errstr(b->c));
            return -1;
        }
    return bench_now_ns() - t0;
}

/* n PINGs on raw; their time in ns, or -1. */
static int64_t pings(redisContext *raw, int n)
{
    int64_t t0 = bench_now_ns(), ns;
    int i;

    for (i = 0; i < n; i++)
        if (bench_ping(raw, &ns) != 0)
            return -1;
    return bench_now_ns() - t0;
}

/* This process's CPU time, user and system, in us. */
static double client_cpu_us(void)
{
    struct rusage u;

    getrusage(RUSAGE_SELF, &u);
    return 1e6 * (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec)
           + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/* The server's CPU time, user and system (INFO cpu), in us; -1 unread. */
static double server_cpu_us(redisContext *raw)
{
    redisReply *r = redisCommand(raw, "INFO cpu");
    const char *sys, *user;
    double us = -1;

    if (r != NULL && r->type == REDIS_REPLY_STRING
        && (sys = strstr(r->str, "used_cpu_sys:")) != NULL
        && (user = strstr(r->str, "used_cpu_user:")) != NULL)
        us = 1e6 * (atof(sys + 13) + atof(user + 14));
    freeReplyObject(r);
    return us;
}

/*
 * One block of b: PINGs, then pairs; pairs/s, PINGs per pair, and the
 * CPU time per pair of this process and of the server, which other
 * load on the machine disturbs much less than the time that passes.
 */
static int block(struct build *b, redisContext *raw, int n, int round)
{
    int64_t p = pings(raw, n), t;
    double c0 = client_cpu_us(), s0 = server_cpu_us(raw), c1, s1;

    t = p < 0 ? -1 : pairs(b, n);
    c1 = client_cpu_us();
    s1 = server_cpu_us(raw);
    if (t <= 0 || s0 < 0 || s1 < 0)
        return -1;
    b->pairs_s[round] = 1e9 * n / (double)t;
    b->pings_per_pair[round] = (double)t / (double)p;
    b->client_us[round] = (c1 - c0) / n;
    b->server_us[round] = (s1 - s0) / n;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median of v[0..n-1] (sorted in place), and its range. */
static double median(double *v, int n, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    *lo = v[0];
    *hi = v[n - 1];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One line: the median of v and its range, with prec decimals. */
static void report(const char *what, double *v, int n, int prec)
{
    double lo, hi, m = median(v, n, &lo, &hi);

    printf("%-28s %9.*f   (%.*f - %.*f)\n", what, prec, m, prec, lo, prec, hi);
}

int main(int argc, char **argv)
{
    struct build b[2];
    int rounds = th_rounds(200), n = 250, r, i, rc = 1;
    double *ratio = calloc((size_t)rounds, sizeof(double));
    redisContext *raw = NULL;
    th_server srv;

    if (argc < 3) {
        fprintf(stderr, "usage: bench_ab LIBTSLOCK_A.so LIBTSLOCK_B.so "
                        "[NAME_A NAME_B]\n");
        return 2;
    }
    memset(b, 0, sizeof(b));
    for (i = 0; i < 2; i++) {
        b[i].path = argv[1 + i];
        b[i].name = argc > 4 ? argv[3 + i] : i == 0 ? "A" : "B";
        b[i].pairs_s = calloc((size_t)rounds, sizeof(double));
        b[i].pings_per_pair = calloc((size_t)rounds, sizeof(double));
        b[i].client_us = calloc((size_t)rounds, sizeof(double));
        b[i].server_us = calloc((size_t)rounds, sizeof(double));
        if (ratio == NULL || b[i].pairs_s == NULL || b[i].pings_per_pair == NULL
            || b[i].client_us == NULL || b[i].server_us == NULL
            || build_load(&b[i]) != 0)
            return 1;
    }
    if (th_server_start(&srv, NULL) != 0)
        return 1;
    raw = th_redis(&srv);
    if (raw == NULL || build_open(&b[0], &srv, "bench:ab:a") != 0
        || build_open(&b[1], &srv, "bench:ab:b") != 0)
        goto out;
    /* Warm both: connections, the script cache, the server's tables. */
    if (block(&b[0], raw, n, 0) != 0 || block(&b[1], raw, n, 0) != 0)
        goto out;
    /* Alternate, and swap who goes first every round. */
    for (r = 0; r < rounds; r++) {
        for (i = 0; i < 2; i++)
            if (block(&b[(r + i) % 2], raw, n, r) != 0)
                goto out;
        ratio[r] = b[0].pairs_s[r] / b[1].pairs_s[r];
    }
    printf("uncontended token acquire + release, %d alternating rounds of "
           "%d pairs each,\nmedian (range); A = %s\n              B = %s\n",
           rounds, n, b[0].path, b[1].path);
    for (i = 0; i < 2; i++) {
        char what[64];
        snprintf(what, sizeof(what), "pairs/s %s", b[i].name);
        report(what, b[i].pairs_s, rounds, 0);
        snprintf(what, sizeof(what), "PINGs per pair %s", b[i].name);
        report(what, b[i].pings_per_pair, rounds, 3);
        snprintf(what, sizeof(what), "client CPU us/pair %s", b[i].name);
        report(what, b[i].client_us, rounds, 2);
        snprintf(what, sizeof(what), "server CPU us/pair %s", b[i].name);
        report(what, b[i].server_us, rounds, 2);
    }
    report("ratio A/B (per round)", ratio, rounds, 3);
    printf("pairs/s and PINGs per pair: wall clock, after a block of as many "
           "PINGs;\nCPU: getrusage of this process, INFO cpu of the server "
           "(user + system)\n");
    rc = 0;
out:
    for (i = 0; i < 2; i++) {
        if (b[i].lock_free != NULL)
            b[i].lock_free(b[i].l);
        if (b[i].client_free != NULL)
            b[i].client_free(b[i].c);
        free(b[i].pairs_s);
        free(b[i].pings_per_pair);
        free(b[i].client_us);
        free(b[i].server_us);
    }
    free(ratio);
    redisFree(raw);
    th_server_stop(&srv);
    return rc;
}
