/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_account.c - the account table of `make bench`: what a handoff
 * costs the server, step by step, against what an uncontended acquire +
 * release pair costs it, in the same run on the same server.
 *
 * A row is W processes (a tslock client each) taking one key in turn,
 * each hold one INCR and a pause of 0.5 ms between holds (as the
 * contended table), or one process acquiring and releasing a key nobody
 * else wants (the uncontended pair).  Between the row's start and its
 * end the server keeps every command in its slow log (threshold 0), and
 * CONFIG RESETSTAT zeroes INFO commandstats.  The slow log holds the
 * commands the clients sent, each with its own duration, and not the
 * commands a script runs apart (Redis 7.0 logs them too, from a client
 * without an address, and their time is inside their script's): so the
 * server's command time is the sum of the top-level durations, nothing
 * counted twice, and commandstats' usec of the scripts checks it.  Each command
 * the clients sent is put in a step by what it names:
 *
 *   acquire   SET NX PX, or the SETNX+PEXPIRE script: a first try
 *   join      the line's script with "not in line yet" (its ARGV[8] 0):
 *             a try that joins the line when the key is held
 *   in line   the line's script again (ARGV[8] 1): a woken waiter's
 *             acquire, or a refresh that found the key still held
 *   release   the release script (it wakes the head of the line, or
 *             announces on the key's channel), or compare-and-delete
 *   leave     ZREM of the line and its liveness set (a wait that ended
 *             without the lock)
 *   listen    (S)SUBSCRIBE / (S)UNSUBSCRIBE / PING on the subscriber
 *   hold      the INCR of the hold: the workload, not the lock's cost
 *   other     anything else, by name
 *
 * The wake message is the PUBLISH/SPUBLISH inside the release script:
 * its calls and time are read from the slow log's inner entries (they
 * are part of the release's time, not added to it).  INFO cpu (the server's
 * user + sys time) and the clients' own CPU (getrusage of each waiter, over the
 * row) are given beside it.  Every row runs twice: on the machine as it
 * is, and with a `nice -n 19` CPU burner on every core, since an idle
 * virtual CPU halts and waking it costs more than the work (the row
 * says "idle" or "burner").  Environment: TSLOCK_BENCH_ACCOUNT ("8 64";
 * empty: no table), TSLOCK_BENCH_ACCOUNT_SECONDS (2 a row),
 * TSLOCK_BENCH_ACCOUNT_MODES ("wake fair").
 */
#include <ctype.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_contend.h"

#define ACC_MAX_PROCS 256
#define ACC_KEY       "bench:account"

enum step {
    ST_ACQUIRE,
    ST_JOIN,
    ST_INLINE,
    ST_RELEASE,
    ST_LEAVE,
    ST_LISTEN,
    ST_HOLD,
    ST_OTHER,
    N_STEPS
};

static const char *const step_names[N_STEPS] = {"acquire", "join",  "in line",
                                                "release", "leave", "listen",
                                                "hold",    "other"};

struct acc_shared {
    atomic_int ready, done, failures;
    atomic_int go, finish;
    double end_ms;
    atomic_llong client_us;
    long holds[ACC_MAX_PROCS];
};

struct acc_row {
    long holds;
    double seconds;
    long calls[N_STEPS];
    long inner[N_STEPS]; /* commands the step's scripts ran */
    double usec[N_STEPS];
    long scripts;        /* EVALSHA/EVAL/FCALL the clients sent */
    long inner_calls;    /* commands the scripts ran */
    long publish_calls;  /* the release's wake or announce messages */
    double publish_usec; /* their time, inside the release's */
    double stats_usec;   /* commandstats: the scripts' usec */
    double own_usec;     /* commandstats: SET, the subscriber's */
    long zrem_calls;     /* commandstats: ZREM, scripts' and clients' */
    double zrem_usec;
    double slow_script_us; /* the slow log's: the same calls */
    double cpu_us;         /* INFO cpu, user + sys */
    double client_us;      /* getrusage of the waiters */
    long slowlog_len;
    int truncated;
    int failures;
};

static struct acc_shared *as;
static double acc_seconds = 2;

static double cpu_seconds(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO cpu");
    double user = 0, sys = 0;
    const char *p;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        if ((p = strstr(r->str, "used_cpu_user:")) != NULL)
            user = atof(p + 14);
        if ((p = strstr(r->str, "used_cpu_sys:")) != NULL)
            sys = atof(p + 13);
    }
    freeReplyObject(r);
    return user + sys;
}

static double rusage_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec
           + ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
}

static void spin_until(atomic_int *flag)
{
    struct timespec ms = {0, 1000000};

    while (!atomic_load(flag))
        nanosleep(&ms, NULL);
}

/* One waiter: as bench_contend.c's, between the parent's go and finish. */
static void acc_worker(int index, const th_server *srv, int fair, int contended)
{
    tslock_client *c = th_client(srv);
    redisContext *raw = th_redis(srv);
    struct timespec pause = {0, 500000};
    tslock_lock *l = NULL;
    double cpu0;

    if (c == NULL || raw == NULL
        || tslock_lock_new(&l, c, contended ? ACC_KEY : ACC_KEY ":alone")
               != TSLOCK_OK)
        _exit(3);
    tslock_lock_set_ttl(l, 10000);
    tslock_lock_set_wakeup(l, 1);
    tslock_lock_set_fair(l, fair);
    /* Connect, subscribe and load the scripts before the clock. */
    if (tslock_acquire(l, 5000) == TSLOCK_OK)
        tslock_release(l);
    atomic_fetch_add(&as->ready, 1);
    spin_until(&as->go);
    cpu0 = rusage_us();
    while (contend_now_ms() < as->end_ms) {
        if (tslock_acquire(l, 2000) != TSLOCK_OK)
            continue;
        if (contended)
            freeReplyObject(redisCommand(raw, "INCR " ACC_KEY ":counter"));
        if (tslock_release(l) != TSLOCK_OK)
            atomic_fetch_add(&as->failures, 1);
        as->holds[index]++;
        if (contended)
            nanosleep(&pause, NULL);
    }
    atomic_fetch_add(&as->client_us, (long long)(rusage_us() - cpu0));
    atomic_fetch_add(&as->done, 1);
    spin_until(&as->finish);
    tslock_lock_free(l);
    tslock_client_free(c);
    redisFree(raw);
}

static int arg_is(const redisReply *a, const char *s)
{
    return a->type == REDIS_REPLY_STRING && strcasecmp(a->str, s) == 0;
}

static int ends_with(const redisReply *a, const char *tail)
{
    size_t n = strlen(tail);

    return a->type == REDIS_REPLY_STRING && a->len >= n
           && memcmp(a->str + a->len - n, tail, n) == 0;
}

/* Which step a command the clients sent belongs to (the header). */
static enum step classify(const redisReply *args)
{
    const redisReply *const *a = (const redisReply *const *)args->element;
    size_t n = args->elements;
    long nk;

    if (n == 0)
        return ST_OTHER;
    if (arg_is(a[0], "evalsha") || arg_is(a[0], "eval")
        || arg_is(a[0], "fcall")) {
        if (n < 4)
            return ST_OTHER;
        nk = strtol(a[2]->str, NULL, 10);
        if (nk == 4 && n == 3 + 4 + 8 && ends_with(a[4], ":queue"))
            return arg_is(a[n - 1], "1") ? ST_INLINE : ST_JOIN;
        if (nk >= 2 && ends_with(a[4], ":queue-seq"))
            return ST_RELEASE;
        if (nk == 1 && n >= 5 && ends_with(a[n - 1], ":released"))
            return ST_RELEASE;
        if (nk == 1 && n == 6)
            return ST_ACQUIRE; /* SETNX+PEXPIRE: value, ms */
        return ST_OTHER;
    }
    if (arg_is(a[0], "set"))
        return ST_ACQUIRE;
    if (arg_is(a[0], "incr"))
        return ST_HOLD;
    if (arg_is(a[0], "zrem"))
        return ST_LEAVE;
    if (arg_is(a[0], "subscribe") || arg_is(a[0], "ssubscribe")
        || arg_is(a[0], "unsubscribe") || arg_is(a[0], "sunsubscribe")
        || arg_is(a[0], "ping"))
        return ST_LISTEN;
    if (arg_is(a[0], "del") || arg_is(a[0], "publish")
        || arg_is(a[0], "spublish"))
        return ST_RELEASE;
    return ST_OTHER;
}

static int is_script(const redisReply *a)
{
    return arg_is(a, "evalsha") || arg_is(a, "eval") || arg_is(a, "fcall");
}

/*
 * The slow log since the row began, into steps.  Redis 7.0 logs the
 * commands a script runs too, by a client without an address ("?:0"),
 * just before the script's own entry: they are counted as the inner
 * commands of the next script, and their time is already in its.
 */
static void read_slowlog(redisContext *c, struct acc_row *row, long max_len)
{
    redisReply *r = redisCommand(c, "SLOWLOG GET -1");
    long inner = 0, publishes = 0;
    double publish_us = 0;
    size_t i;

    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return;
    }
    row->slowlog_len = (long)r->elements;
    row->truncated = (long)r->elements >= max_len;
    for (i = r->elements; i-- > 0;) { /* oldest first */
        const redisReply *e = r->element[i];
        const redisReply *args;
        enum step s;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 5
            || e->element[3]->type != REDIS_REPLY_ARRAY)
            continue;
        args = e->element[3];
        if (args->elements > 0
            && (arg_is(args->element[0], "config")
                || arg_is(args->element[0], "slowlog")
                || arg_is(args->element[0], "info")))
            continue; /* the bench's own */
        if (e->element[4]->type == REDIS_REPLY_STRING
            && e->element[4]->str[0] == '?') {
            inner++;
            if (args->elements > 0
                && (arg_is(args->element[0], "publish")
                    || arg_is(args->element[0], "spublish"))) {
                publishes++;
                publish_us += (double)e->element[2]->integer;
            }
            continue;
        }
        s = classify(args);
        row->calls[s]++;
        row->usec[s] += (double)e->element[2]->integer;
        if (args->elements > 0 && is_script(args->element[0])) {
            row->scripts++;
            row->slow_script_us += (double)e->element[2]->integer;
            row->inner[s] += inner;
            row->inner_calls += inner;
            if (s == ST_RELEASE) {
                row->publish_calls += publishes;
                row->publish_usec += publish_us;
            }
            inner = publishes = 0;
            publish_us = 0;
        }
    }
    freeReplyObject(r);
}

/*
 * commandstats: the scripts' usec (all of it the clients' commands), and
 * the usec of the other commands a client sends for the lock: SET, the
 * subscriber's, and ZREM (which scripts run too: its share is split by
 * calls, with the slow log's count of the clients' own).
 */
static int stat_of(const char *info, const char *name, long *calls,
                   double *usec)
{
    char pat[80];
    const char *p, *q;

    snprintf(pat, sizeof(pat), "cmdstat_%s:", name);
    if ((p = strstr(info, pat)) == NULL)
        return 0;
    if ((q = strstr(p, "calls=")) != NULL)
        *calls += strtol(q + 6, NULL, 10);
    if ((q = strstr(p, "usec=")) != NULL)
        *usec += atof(q + 5);
    return 1;
}

static void read_commandstats(redisContext *c, struct acc_row *row)
{
    static const char *const scripts[] = {"evalsha", "eval", "fcall"};
    static const char *const own[] = {"set",          "subscribe",
                                      "ssubscribe",   "unsubscribe",
                                      "sunsubscribe", "ping"};
    redisReply *r = redisCommand(c, "INFO commandstats");
    long calls = 0;
    size_t i;

    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return;
    }
    for (i = 0; i < 3; i++)
        stat_of(r->str, scripts[i], &calls, &row->stats_usec);
    for (i = 0; i < 6; i++)
        stat_of(r->str, own[i], &calls, &row->own_usec);
    stat_of(r->str, "zrem", &row->zrem_calls, &row->zrem_usec);
    freeReplyObject(r);
}

static void ctl(redisContext *c, const char *cmd)
{
    freeReplyObject(redisCommand(c, cmd));
}

/* A niced busy loop on every core, until killed (by its pid). */
static int start_burners(pid_t *pids)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    int i;

    if (n < 1)
        n = 1;
    if (n > 16)
        n = 16;
    for (i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            volatile unsigned long x = 0;
            /* A bench killed mid-row must not leave a core spinning. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() == 1)
                _exit(0);
            if (nice(19) == -1) { /* best effort */
            }
            for (;;)
                x++;
        }
    }
    return (int)n;
}

static void stop_burners(pid_t *pids, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
        }
}

static int run_row(th_server *srv, int waiters, int fair, int burner,
                   int slowlog, struct acc_row *row)
{
    redisContext *c;
    pid_t pids[ACC_MAX_PROCS], burn[16];
    int i, n_burn = 0, status, contended = waiters > 0;
    int procs = contended ? waiters : 1;
    long max_len = 2000000;
    double cpu0, t0;
    struct timespec ms = {0, 1000000};
    char cmd[64];

    memset(row, 0, sizeof(*row));
    memset(as, 0, sizeof(*as));
    if (burner)
        n_burn = start_burners(burn);
    fflush(stdout);
    for (i = 0; i < procs; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            acc_worker(i, srv, fair, contended);
            _exit(0);
        }
    }
    while (atomic_load(&as->ready) < procs)
        nanosleep(&ms, NULL);
    /* Connected after the forks, so that no child inherits it. */
    if ((c = th_redis(srv)) == NULL) {
        atomic_store(&as->go, 1);
        atomic_store(&as->finish, 1);
        for (i = 0; i < procs; i++)
            waitpid(pids[i], &status, 0);
        stop_burners(burn, n_burn);
        return -1;
    }
    if (slowlog) {
        snprintf(cmd, sizeof(cmd), "CONFIG SET slowlog-max-len %ld", max_len);
        ctl(c, cmd);
        ctl(c, "CONFIG SET slowlog-log-slower-than 0");
        ctl(c, "SLOWLOG RESET");
    }
    ctl(c, "CONFIG RESETSTAT");
    cpu0 = cpu_seconds(c);
    t0 = contend_now_ms();
    as->end_ms = t0 + acc_seconds * 1000;
    atomic_store(&as->go, 1);
    while (atomic_load(&as->done) < procs)
        nanosleep(&ms, NULL);
    row->seconds = (contend_now_ms() - t0) / 1000;
    row->cpu_us = (cpu_seconds(c) - cpu0) * 1e6;
    if (slowlog) {
        ctl(c, "CONFIG SET slowlog-log-slower-than 10000");
        read_slowlog(c, row, max_len);
    }
    read_commandstats(c, row);
    if (slowlog) {
        ctl(c, "SLOWLOG RESET");
        ctl(c, "CONFIG SET slowlog-max-len 128");
    }
    atomic_store(&as->finish, 1);
    for (i = 0; i < procs; i++)
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status)
            || WEXITSTATUS(status) != 0)
            as->failures++;
    stop_burners(burn, n_burn);
    for (i = 0; i < procs; i++)
        row->holds += as->holds[i];
    row->client_us = (double)atomic_load(&as->client_us);
    row->failures = atomic_load(&as->failures);
    redisFree(c);
    return 0;
}

/* The lock's own command time: every step but the hold. */
static double lock_usec(const struct acc_row *r)
{
    double sum = 0;
    int s;

    for (s = 0; s < N_STEPS; s++)
        if (s != ST_HOLD)
            sum += r->usec[s];
    return sum;
}

/*
 * The same from commandstats, in a run without the slow log: the
 * clients' ZREMs are a's share of all ZREMs (a run with the slow log).
 */
static double lock_usec_off(const struct acc_row *off, const struct acc_row *a)
{
    double zrem = 0;

    if (off->zrem_calls > 0 && a->holds > 0 && off->holds > 0) {
        double share = ((double)a->calls[ST_LEAVE] / a->holds)
                       / ((double)off->zrem_calls / off->holds);
        zrem = off->zrem_usec * (share > 1 ? 1 : share);
    }
    return off->stats_usec + off->own_usec + zrem;
}

static long lock_calls(const struct acc_row *r)
{
    long sum = 0;
    int s;

    for (s = 0; s < N_STEPS; s++)
        if (s != ST_HOLD)
            sum += r->calls[s];
    return sum;
}

/*
 * A row: the rate, command time, CPU (server's and clients') from the run
 * without the slow log (off); the counts and the split into steps from
 * the run with it (on), the split as each step's share of the command
 * time there.
 */
static void print_row(const char *what, const char *machine,
                      const struct acc_row *on, const struct acc_row *off,
                      double pair_us)
{
    double h = on->holds > 0 ? (double)on->holds : 1;
    double ho = off->holds > 0 ? (double)off->holds : 1;
    double lu = lock_usec_off(off, on) / ho, total_on = lock_usec(on);
    int s;

    if (on->holds == 0 || off->holds == 0 || on->failures || off->failures) {
        printf("%-13s %-6s (did not run cleanly: %ld/%ld holds, %d/%d "
               "failures)\n",
               what, machine, on->holds, off->holds, on->failures,
               off->failures);
        return;
    }
    printf("%-13s %-6s %7.0f %7.1f %6.2fx %7.1f %6.1f %5.2f %6.1f %5.2f "
           "%6.1f\n",
           what, machine, off->holds / off->seconds, lu,
           pair_us > 0 ? lu / pair_us : 1.0, off->cpu_us / ho,
           (double)lock_calls(on) / h, (double)on->scripts / h,
           (double)on->inner_calls / h, (double)on->publish_calls / h,
           off->client_us / ho);
    printf("  steps (calls/inner commands per %s, %% of command time, its "
           "share of cmd us):",
           strcmp(what, "uncontended") == 0 ? "pair" : "handoff");
    for (s = 0; s < N_STEPS; s++)
        if (on->calls[s] > 0 && s != ST_HOLD)
            printf(" %s %.2f/%.2f %.0f%% %.1fus", step_names[s],
                   on->calls[s] / h, on->inner[s] / h,
                   total_on > 0 ? 100 * on->usec[s] / total_on : 0,
                   total_on > 0 ? lu * on->usec[s] / total_on : 0);
    printf("\n");
    if (on->truncated)
        printf("  (the slow log filled: the counts above are short)\n");
    if (on->slow_script_us > 0
        && (on->stats_usec / on->slow_script_us > 1.1
            || on->stats_usec / on->slow_script_us < 0.9))
        printf("  (commandstats gives the scripts %.0f us, the slow log %.0f "
               "us)\n",
               on->stats_usec, on->slow_script_us);
}

static int parse_counts(const char *text, int *out, int max)
{
    int n = 0;
    char *end;
    long v;

    while (n < max && *text != '\0') {
        v = strtol(text, &end, 10);
        if (end == text) {
            text++;
            continue;
        }
        if (v > 0 && v <= ACC_MAX_PROCS)
            out[n++] = (int)v;
        text = end;
    }
    return n;
}

void contend_account_table(th_server *srv)
{
    const char *env = getenv("TSLOCK_BENCH_ACCOUNT");
    const char *modes = getenv("TSLOCK_BENCH_ACCOUNT_MODES");
    int counts[8], n, i, b, f;
    struct acc_row row, off;
    char what[32];

    n = parse_counts(env != NULL ? env : "8 64", counts, 8);
    if (n == 0)
        return;
    if ((env = getenv("TSLOCK_BENCH_ACCOUNT_SECONDS")) != NULL && atof(env) > 0)
        acc_seconds = atof(env);
    if (modes == NULL)
        modes = "wake fair";
    as = mmap(NULL, sizeof(*as), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (as == MAP_FAILED)
        return;
    printf("\naccount: what the server does per handoff (W processes on one "
           "key, %g s a row) and per uncontended acquire + release pair\n",
           acc_seconds);
    printf("row           machine  per s  cmd us  /pair  cpu us   cmds "
           "scrpt  inner  wake  cli us\n");
    for (b = 0; b < 2; b++) {
        double pair_us = 0;
        const char *machine = b ? "burner" : "idle";
        run_row(srv, 0, 0, b, 1, &row);
        run_row(srv, 0, 0, b, 0, &off);
        if (off.holds > 0)
            pair_us = lock_usec_off(&off, &row) / off.holds;
        print_row("uncontended", machine, &row, &off, pair_us);
        fflush(stdout);
        for (f = 0; f < 2; f++) {
            if (strstr(modes, f ? "fair" : "wake") == NULL)
                continue;
            for (i = 0; i < n; i++) {
                snprintf(what, sizeof(what), "%s %d", f ? "fair" : "wake-one",
                         counts[i]);
                run_row(srv, counts[i], f, b, 1, &row);
                run_row(srv, counts[i], f, b, 0, &off);
                print_row(what, machine, &row, &off, pair_us);
                fflush(stdout);
            }
        }
    }
    printf("per s = handoffs (pairs) a second; cmd us = the server's "
           "command time for the lock per handoff (pair): INFO commandstats "
           "usec of the scripts, SET, ZREM and the subscriber's commands, "
           "the hold's INCR left out; /pair = over the uncontended pair's on "
           "the same machine; cpu us = INFO cpu (user + sys); cmds = "
           "commands the clients sent for the lock, scrpt = of them scripts, "
           "inner = commands the scripts ran, wake = the release's "
           "PUBLISH/SPUBLISH (a wake message or the announcement); cli us = "
           "the waiters' own CPU (getrusage); all per handoff (pair). The "
           "rate, times and CPU are from a run without the slow log, the "
           "counts and steps from one with it (threshold 0, which slows the "
           "server). idle = the machine as it is (an idle vCPU halts); "
           "burner = a nice -n 19 busy loop on every core\n");
    munmap(as, sizeof(*as));
}
