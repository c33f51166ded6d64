/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * demo.h - the race demonstration shared between its orchestrator
 * (demo.c: private redis-server, rounds, table) and its workers
 * (demo_worker.c: the six schemes and the check inside the critical
 * section).  The counters live in memory shared by all processes.
 */
#ifndef TSLOCK_DEMO_H
#define TSLOCK_DEMO_H

#include "tslock_atomic.h"
#include <stdint.h>
#include <stdio.h>

#define DEMO_MAX_WORKERS 64
#define DEMO_KEY         "tslock-demo"
#define DEMO_MAX_EVENTS  1024 /* holds kept per worker for --svg */

/* What a hold's bar is marked with in the timeline. */
#define DEMO_EV_OVERLAP    1
#define DEMO_EV_PAST_LEASE 2
#define DEMO_EV_REFUSED    4 /* the resource refused its stale fence */

enum demo_scheme {
    DEMO_NAIVE,     /* SETNX, GET, DEL if expired, SETNX (broken) */
    DEMO_JAVA,      /* the articles' Java RedisLock (broken) */
    DEMO_TIMESTAMP, /* libtslock, TSLOCK_SCHEME_TIMESTAMP */
    DEMO_TOKEN,     /* libtslock, TSLOCK_SCHEME_TOKEN */
    DEMO_MIGRATION, /* Java RedisLock and libtslock's bridge on one key */
    DEMO_FENCING,   /* libtslock token with fencing, a fenced resource */
    DEMO_N_SCHEMES
};

/* One worker's place in the critical-section check. */
struct demo_slot {
    atomic_int inside;
    atomic_llong expires_ms; /* its lease end, wall-clock Unix ms */
};

/* One hold, in ms since its round began (monotonic clock). */
struct demo_event {
    int32_t start_ms;
    int32_t end_ms;
    int32_t flags; /* DEMO_EV_* */
};

/*
 * One worker's holds in one round.  Bounded: past DEMO_MAX_EVENTS a
 * worker only counts `dropped`, so memory stays fixed however long the
 * demo runs.
 */
struct demo_lane {
    int n;
    long dropped;
    struct demo_event ev[DEMO_MAX_EVENTS];
};

/* Every round's lanes, kept for the SVG until the demo ends. */
struct demo_timeline {
    struct demo_lane lane[DEMO_N_SCHEMES][DEMO_MAX_WORKERS];
};

/* What the workers of one round saw; zeroed before each round. */
struct demo_shared {
    int64_t start_mono_ms; /* the round's time zero, set before the fork */
    struct demo_slot slot[DEMO_MAX_WORKERS];
    atomic_long holds;
    atomic_long overlaps;        /* entered while another in-lease holder */
    atomic_long past_lease;      /* still inside after its lease ended */
    atomic_long foreign_deletes; /* a DEL removed a value not meant */
    atomic_long lost;            /* TSLOCK_ELOST on release */
    atomic_long errors;
    /*
     * The fenced resource of scheme 6: a counter and the highest fence
     * it has seen, packed into one word (fence << 32 | value) so one
     * compare-and-swap checks the fence and writes the value together.
     */
    atomic_ullong resource;
    atomic_long writes_accepted;
    atomic_long writes_refused; /* carried an older fence than seen */
    atomic_long damage;         /* accepted, yet lost an update */
};

struct demo_config {
    const char *socket; /* the private server's Unix socket */
    int workers;
    int64_t ttl_ms;
    int64_t duration_ms;            /* per scheme */
    int pause_one_in;               /* one hold in this many pauses 1.5 x ttl */
    struct demo_timeline *timeline; /* shared; NULL without --svg */
};

/* One scheme's row of the table. */
struct demo_row {
    long holds, overlaps, past_lease, foreign_deletes, lost, errors;
    long accepted, refused, damage; /* scheme 6's fenced writes */
};

/*
 * demo_svg.c: write the timeline of every round to f, one panel per
 * scheme.  Returns 0, or -1 with errno set when a write failed.  f stays
 * open: the caller closes it.
 */
int demo_write_svg(FILE *f, const struct demo_config *cfg,
                   const char *const *labels, const struct demo_row *rows);

/* A worker process's whole run; returns its exit status. */
int demo_worker(const struct demo_config *cfg, enum demo_scheme scheme,
                int index, struct demo_shared *sh);

#endif /* TSLOCK_DEMO_H */
