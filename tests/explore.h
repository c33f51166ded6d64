/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * explore.h - the schedule explorer of tests/explore.c: every
 * interleaving of a small lock scenario, run against a real server, with
 * mutual exclusion, foreign deletes, truthful reports and liveness
 * checked after every step.
 */
#ifndef TSLOCK_TEST_EXPLORE_H
#define TSLOCK_TEST_EXPLORE_H

#include <stdint.h>

#include "tslock.h"

/* What each client runs: a tslock scheme, a control, a legacy client. */
typedef enum explore_kind {
    EXPLORE_TIMESTAMP = 0,
    EXPLORE_TOKEN,
    EXPLORE_BRIDGE,
    EXPLORE_NAIVE_DEL,    /* SETNX; on an expired stamp DEL, SETNX */
    EXPLORE_BLIND_GETSET, /* SETNX; on an expired stamp GETSET, held */
    EXPLORE_GET_THEN_DEL, /* SET NX PX token; release GET, compare, DEL */
    EXPLORE_SETNX_EXPIRE, /* SETNX, then EXPIRE */
    EXPLORE_JAVA,         /* the Java RedisLock: lock() and unlock0() */
    EXPLORE_LEGACY_JAVA,  /* the same, beside a tslock client */
    EXPLORE_LEGACY_REDISDOC,
    EXPLORE_LEGACY_REDISPY2
} explore_kind;

extern const char *const explore_kind_names[];

typedef struct explore_config {
    const char *key;
    int n_clients;            /* 2 or 3 */
    explore_kind kinds[4];    /* per client */
    int64_t ttl_ms;           /* every lease */
    tslock_unit unit;         /* stamp unit of the stamp schemes */
    tslock_release_form form; /* timestamp release form */
    int tries;                /* acquisition attempts per client */
    int dead;                 /* start from a dead holder's expired stamp */
    int clock;                /* the clock may pass every lease once */
    int crash;                /* one client may crash once */
    int max_depth;            /* steps per schedule (bound) */
    long max_schedules;       /* 0: no bound */
    int preemptions;          /* CHESS's preemption bound; -1: none */
} explore_config;

/* The properties, as counted in explore_result.by_kind. */
enum explore_violation {
    EXPLORE_V_EXCLUSION = 0, /* two live holders, both leases running */
    EXPLORE_V_FOREIGN,       /* a release removed a value it did not write */
    EXPLORE_V_UNTRUTHFUL,    /* told held or released, the server disagrees */
    EXPLORE_V_TOLD_LOST,     /* told lost while its value stands and runs */
    EXPLORE_V_LIVENESS,      /* refused by a value whose lease has ended */
    EXPLORE_V_ERROR,         /* an operation failed */
    EXPLORE_V_KINDS
};

/* The most steps a schedule takes (MAX_DEPTH of explore.c, and events). */
#define EXPLORE_MAX_STEPS 72

/*
 * A step of a counterexample, as the classroom page draws it: who, what
 * it sent, the key after it (and its PTTL: -1 none, -2 no key), the test
 * clock in ms since the schedule began, what the client was told.
 */
typedef struct explore_step {
    char actor[8];
    char what[64];
    char value[64];
    char note[96];
    long long pttl;
    long long clock_ms;
} explore_step;

typedef struct explore_result {
    long schedules;         /* complete schedules run */
    long pruned;            /* partial schedules cut by sleep sets */
    long violations;        /* schedules that broke a property */
    long legacy_violations; /* ... after a legacy client's own flaw */
    int bounded;            /* some bound cut the search */
    int exhausted;          /* every schedule was run */
    double seconds;
    long by_kind[EXPLORE_V_KINDS]; /* violations by the property broken */
    long orphans;                  /* schedules that left the key to nobody */
    /*
     * The shortest counterexample of [0] tslock's (or the control's) own
     * steps, [1] a legacy client's flaw, [2] an orphan: its length, what
     * it broke, its numbered steps as `tslock replay` prints them.
     */
    int n_steps[3];
    char why[3][160];
    char steps[3][6000];
    /*
     * The same counterexamples ([0], [1]) as steps, and the choices that
     * made each (one per step, taken from the schedule to its end, so
     * explore_follow() can run it again on another configuration).
     */
    explore_step example[2][EXPLORE_MAX_STEPS];
    int choices[2][EXPLORE_MAX_STEPS];
    int n_choices[2];
    /* explore_follow(): the first step at which a choice was not
     * enabled and the first enabled one was taken instead, or -1. */
    int diverged;
    int broke_at;       /* explore_follow(): the step (from 1) that broke a
                           property, or 0 */
    long long start_ms; /* the test clock (Unix ms) as a schedule begins */
} explore_result;

/*
 * Explore cfg with every client connected to upstream (a server's or a
 * proxy's Unix socket); ctl_socket is the real server's, for resets and
 * reads.  Returns 0; exits the process with status 2 when the explorer
 * itself cannot go on (a client stuck, a schedule that does not replay).
 */
int explore(const explore_config *cfg, const char *upstream,
            const char *ctl_socket, explore_result *res);

/*
 * Run one schedule of cfg: the choices given (a counterexample's, from
 * another configuration), then the first enabled choice at every step
 * until the schedule is complete.  res->schedules is 1, res->violations 1
 * when it broke a property (res->why[0]); every step, to the end, is in
 * res->example[0] and res->steps[0] (res->n_steps[0]).  Returns 0.
 */
int explore_follow(const explore_config *cfg, const char *upstream,
                   const char *ctl_socket, const int *choices, int n,
                   explore_result *res);

#endif
