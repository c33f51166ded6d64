/*
 * demo.h - the race demonstration shared between its orchestrator
 * (demo.c: private redis-server, rounds, table) and its workers
 * (demo_worker.c: the five schemes and the check inside the critical
 * section).  The counters live in memory shared by all processes.
 */
#ifndef TSLOCK_DEMO_H
#define TSLOCK_DEMO_H

#include <stdatomic.h>
#include <stdint.h>

#define DEMO_MAX_WORKERS 64
#define DEMO_KEY         "tslock-demo"

enum demo_scheme {
    DEMO_NAIVE,     /* SETNX, GET, DEL if expired, SETNX (broken) */
    DEMO_JAVA,      /* the articles' Java RedisLock (broken) */
    DEMO_TIMESTAMP, /* libtslock, TSLOCK_SCHEME_TIMESTAMP */
    DEMO_TOKEN,     /* libtslock, TSLOCK_SCHEME_TOKEN */
    DEMO_MIGRATION, /* Java RedisLock and libtslock's bridge on one key */
    DEMO_N_SCHEMES
};

/* One worker's place in the critical-section check. */
struct demo_slot {
    atomic_int inside;
    atomic_llong expires_ms; /* its lease end, wall-clock Unix ms */
};

/* What the workers of one round saw; zeroed before each round. */
struct demo_shared {
    struct demo_slot slot[DEMO_MAX_WORKERS];
    atomic_long holds;
    atomic_long overlaps;        /* entered while another in-lease holder */
    atomic_long past_lease;      /* still inside after its lease ended */
    atomic_long foreign_deletes; /* a DEL removed a value not meant */
    atomic_long lost;            /* TSLOCK_ELOST on release */
    atomic_long errors;
};

struct demo_config {
    const char *socket; /* the private server's Unix socket */
    int workers;
    int64_t ttl_ms;
    int64_t duration_ms; /* per scheme */
    int pause_one_in;    /* one hold in this many pauses 1.5 x ttl */
};

/* A worker process's whole run; returns its exit status. */
int demo_worker(const struct demo_config *cfg, enum demo_scheme scheme,
                int index, struct demo_shared *sh);

#endif /* TSLOCK_DEMO_H */
