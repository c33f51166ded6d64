/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * classroom.h - the race classroom: one self-contained HTML page that
 * steps through races as lanes of clients with the key between them.
 * Written by `tslock replay --html` from the scenario table of races.c and
 * by `tests/explore --html` from the explorer's counterexamples.
 */
#ifndef TSLOCK_TOOLS_CLASSROOM_H
#define TSLOCK_TOOLS_CLASSROOM_H

#include <stddef.h>
#include <stdio.h>

/* A step's PTTL or clock that nobody measured. */
#define CLASSROOM_UNKNOWN (-1000000000LL)

/*
 * One step as the server saw it: who sent what, the key's value after it
 * ("(nil)" for none), its PTTL after it (-1: no expiry, -2: no key), the
 * test clock in ms since the side began, and what the client was told
 * (or NULL).  Borrowed strings.
 */
typedef struct classroom_step {
    const char *actor;
    const char *command;
    const char *value;
    const char *note;
    long long pttl;
    long long clock_ms;
} classroom_step;

/*
 * One side of a scene: a scheme run through the story.  broken: a
 * property breaks at step mark; otherwise mark is the step at which it
 * holds where the other side broke (or -1).  documented: it ended as its
 * table says (mismatch says how not).  start_ms lets the page show a
 * stamp as a time on the side's clock.
 */
typedef struct classroom_side {
    const char *label;
    long long start_ms; /* the wall clock (Unix ms) at step 0, or UNKNOWN */
    const char *verdict;
    int broken;
    int documented;
    const char *mismatch;
    int mark;
    const classroom_step *steps;
    int n_steps;
} classroom_side;

/*
 * A scene: one race, or one counterexample, with one or two sides.  id
 * names it in the page's address (#race-ID); doc links its section of
 * doc/races.md; about is a line under the title, or NULL.
 */
typedef struct classroom_scene {
    const char *id;
    const char *title;
    const char *doc;
    const char *about;
    classroom_side sides[2];
    int n_sides;
} classroom_scene;

/*
 * Write the page to f: the title, a line of introduction, the source
 * (the command that made it) and the scenes, whose data the page embeds
 * as JSON (element #tslock-data) and draws from.  0, or -1 on a write
 * error.
 */
int classroom_write(FILE *f, const char *title, const char *intro,
                    const char *source, const classroom_scene *scenes,
                    size_t n);

#endif
