/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * races.h - the scenario table of doc/races.md: each race's steps, the
 * broken scheme and tslock run through the same interleaving, and the
 * documented outcome of each.  Shared by `tslock replay` and
 * tests/test_races.c, so the narration and the assertions cannot drift.
 */
#ifndef TSLOCK_TOOLS_RACES_H
#define TSLOCK_TOOLS_RACES_H

#include <stdint.h>

#include "hiredis_compat.h"

#include "tslock.h"

/*
 * One step of a replay, as the observer saw it once the server answered:
 * who sent what, the key's value after it ("(nil)" for none), its PTTL
 * (-1: no expiry, -2: no key) and the replay clock, in ms since the side
 * began.  The strings are borrowed for the call.
 */
typedef struct race_step {
    const char *actor;
    const char *command;
    const char *value;
    long long pttl;
    int64_t clock_ms;
} race_step;

/*
 * Where a replay runs: fresh connections to the server under test (the
 * caller's, handed over to the replay, which frees them), a callback that
 * sees every command once the server answered it, with the key after it,
 * and the replay clock (Unix ms), which the replay moves.  race_play()
 * also calls narrate with NULL as each side begins.
 */
typedef struct race_env {
    redisContext *(*raw)(void *ud);
    tslock_client *(*client)(void *ud);
    void (*narrate)(const race_step *step, void *ud);
    void *ud;
    int64_t wall_ms;
    int64_t mono_ms;
} race_env;

/*
 * What one side of a race left, for its two actors in the order of
 * race.actors: who believes it holds the lock, and who really does.
 */
typedef struct race_result {
    int holds[2];    /* believes it holds, and its value is in the key */
    int believes[2]; /* the client says it holds the lock */
    int stuck;       /* nobody holds it, yet the key stays */
    int runs;        /* holds[] count who ran the job, not who holds */
    char trace[512]; /* "P3:SETNX P3:GET ...", as the server saw them */
    char error[256]; /* set when the replay itself failed */
} race_result;

typedef struct race {
    const char *id;
    const char *title;
    const char *actors[2];
    const char *broken; /* the broken scheme, e.g. "naive DEL recovery" */
    const char *fixed;  /* what tslock does, e.g. "GETSET takeover" */
    int (*run_broken)(race_env *env, const char *key, race_result *out);
    int (*run_tslock)(race_env *env, const char *key, race_result *out);
    int broken_holders; /* documented: how many hold at the end */
    int tslock_holders;
    const char *broken_trace; /* documented command order */
    const char *tslock_trace;
    /*
     * The step that decides each side, as "ACTOR:what it did" in the
     * narration: where the broken scheme loses the property, and where
     * tslock, at the same moment of the story, keeps it.
     */
    const char *broken_at;
    const char *tslock_at;
    const char *doc_anchor; /* its section of doc/races.md */
} race;

extern const race races[];
extern const size_t n_races;

/* The race named id ("a"), or NULL. */
const race *race_find(const char *id);

/* How many actors of r really hold the lock. */
int race_holders(const race_result *r);

/*
 * Describe a side's outcome in words: "both P2 and P3 hold the lock --
 * mutual exclusion lost", "only P2 holds it", "nobody holds it".
 */
void race_verdict(const race *rc, const race_result *r, char *buf, size_t size);

/* ------------------------------------------------ a race, both sides */

#define RACE_MAX_STEPS 40

/* A narrated step, kept. */
typedef struct race_step_rec {
    char actor[12];
    char command[48];
    char value[64];
    long long pttl;
    int64_t clock_ms;
} race_step_rec;

/*
 * One side of a race as it ran: the result, every step narrated, the
 * step named by the table's broken_at or tslock_at (or -1), the verdict
 * in one sentence, and whether it ended as documented, or why not.
 */
typedef struct race_side {
    race_result res;
    race_step_rec steps[RACE_MAX_STEPS];
    int n_steps;
    int mark;
    char verdict[160];
    int documented;
    char mismatch[256];
    int64_t start_ms; /* the replay clock (Unix ms) as the side began */
} race_side;

/*
 * Run both sides of r on key (the broken scheme, then tslock, each from
 * the clock env holds on entry), keeping every step, and compare each
 * side with the table: its holders, its trace and its marked step.
 * env->narrate, if set, still sees every step as it happens.  Returns 0
 * when both ended as documented, 1 when one did not (see mismatch), -1
 * when a replay itself failed (res.error).
 */
int race_play(const race *r, race_env *env, const char *key, race_side out[2]);

#endif
