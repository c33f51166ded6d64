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
 * Where a replay runs: fresh connections to the server under test (the
 * caller's, handed over to the replay, which frees them), a callback that
 * sees every command once the server answered it with the key's value
 * after it, and the replay clock (Unix ms), which the replay moves.
 */
typedef struct race_env {
    redisContext *(*raw)(void *ud);
    tslock_client *(*client)(void *ud);
    void (*narrate)(const char *actor, const char *command, const char *value,
                    void *ud);
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

#endif
