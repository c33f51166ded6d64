/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_contend.h - what the two contended sections of `make bench` (the
 * 8-process table of bench_contend.c and the scale table of
 * bench_scale.c) share: the modes, a row's figures and how they are
 * reduced from the samples, the server's command count, and the Python
 * that runs redis-py's Lock.
 */
#ifndef TSLOCK_TEST_BENCH_CONTEND_H
#define TSLOCK_TEST_BENCH_CONTEND_H

#include "harness.h"

enum mode { MODE_POLL, MODE_WAKE, MODE_FAIR, MODE_PY, N_MODES };
extern const char *const contend_mode_names[N_MODES];

struct result {
    int ok;
    long holds;
    double per_s, p50, p99, max, jain, cmds;
    double reqs; /* commands the clients sent per handoff (scale table) */
};

/* CLOCK_MONOTONIC in ms. */
double contend_now_ms(void);

/* Every command the server ran, from INFO commandstats. */
long long contend_commands_run(const th_server *upstream);

/*
 * Fill r's rate, wait percentiles and Jain's fairness index from n wait
 * samples (sorted here) and the holds of k waiters over span_s seconds; r->ok
 * and r->cmds are the caller's.
 */
void contend_summarize(struct result *r, float *waits_ms, long n,
                       const long *holds, int k, double span_s);

/*
 * A Python 3 with the redis package ($PYTHON, python3 on PATH, or
 * /usr/bin/python3), or NULL.
 */
const char *contend_find_python(void);

/*
 * The scale table: every count in waiters[0..n_waiters-1] times every
 * mode, on srv and through the 2.2.15 proxy, then the targets of the
 * handoff work evaluated against its rows.  Reads its own environment
 * (TSLOCK_BENCH_SCALE_SECONDS, TSLOCK_BENCH_SCALE_PROCS).
 */
void contend_scale_table(th_server *srv, const int *waiters, int n_waiters,
                         const char *top_srcdir);

/*
 * The account table (bench_account.c): the server's command time, CPU,
 * commands and script calls per handoff at each count of
 * TSLOCK_BENCH_ACCOUNT ("8 64") and per uncontended acquire + release
 * pair, step by step, on an idle machine and with a niced CPU burner.
 */
void contend_account_table(th_server *srv);

#endif
