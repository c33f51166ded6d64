/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_skew.c - clocks that disagree.  The takeover grace replayed on
 * every server generation with the step hook and test clocks; then real
 * processes (tests/skew_worker) whose wall clocks libfaketime shifts,
 * contending for one key, with overlaps of their holds counted.
 *
 * libfaketime shifts only CLOCK_REALTIME (and time(), gettimeofday()):
 * FAKETIME_DONT_FAKE_MONOTONIC=1 leaves CLOCK_MONOTONIC alone, as an NTP
 * step or a host without NTP leaves it.  Holds are timed on
 * CLOCK_MONOTONIC, which every process of the host shares, so a checker
 * in this process can compare them.  The redis-server is never shifted.
 *
 * make check runs a few points of the sweep; test_skew --full (make skew)
 * runs all of them and prints the table of doc/races.md, "The skewed
 * takeover".
 */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static th_server srv;
static int full;

/* ------------------------------------ the grace on every generation */

static struct gen {
    const char *name;
    const char *emulate; /* NULL: the real server */
    th_server proxy;
} gens[] = {{"modern", NULL, {0}},     {"2.6.11", "2.6.11", {0}},
            {"2.6.0", "2.6.0", {0}},   {"2.4.18", "2.4.18", {0}},
            {"2.2.15", "2.2.15", {0}}, {"2.0.5", "2.0.5", {0}}};
#define N_GENS (sizeof(gens) / sizeof(gens[0]))

static const struct form {
    const char *name;
    tslock_scheme scheme;
    tslock_unit unit;
} forms[] = {{"timestamp ms", TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_MS},
             {"timestamp s", TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_S},
             {"timestamp float", TSLOCK_SCHEME_TIMESTAMP, TSLOCK_UNIT_FLOAT},
             {"bridge ms", TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_MS},
             {"bridge s", TSLOCK_SCHEME_BRIDGE, TSLOCK_UNIT_S}};
#define N_FORMS (sizeof(forms) / sizeof(forms[0]))

static const th_server *gen_endpoint(const struct gen *g)
{
    return g->emulate != NULL ? &g->proxy : &srv;
}

/*
 * The step hooks.  The taker's counts the commands it sends, and its
 * GETSETs: the takeover of the classic scheme and of Redis 2.0, which the
 * grace must hold back.  The holder's runs the taker's whole acquire at
 * the holder's first release command: the taker tries while the holder
 * still works, the skewed takeover's interleaving.
 */
struct skewed {
    int getsets;
    int steps;
    tslock_lock *taker; /* the holder's hook: whose acquire to run */
    int taker_rc;
    int fired;
};

static int skewed_step(tslock_client *c, tslock_step step, const char *key,
                       void *ud)
{
    struct skewed *s = ud;

    (void)c;
    (void)key;
    s->steps++;
    if (step == TSLOCK_STEP_GETSET)
        s->getsets++;
    if (s->taker != NULL && !s->fired) {
        s->fired = 1;
        s->taker_rc = tslock_acquire(s->taker, 0);
    }
    return 0;
}

/* The end of the lease the holder's stamp says, as every reader parses it. */
static int64_t stamp_end(const tslock_lock *l, tslock_unit unit)
{
    const char *v = tslock_lock_value(l);
    int64_t end = 0;

    CU_ASSERT_EQUAL(tslock_stamp_parse(v, strlen(v), unit, &end), TSLOCK_OK);
    return end;
}

static tslock_lock *form_lock(tslock_client *c, const char *key,
                              const struct form *f, int64_t grace)
{
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, key) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_scheme(l, f->scheme) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_unit(l, f->unit) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_ttl(l, 10000) == TSLOCK_OK);
    CU_ASSERT_FATAL(tslock_lock_set_takeover_grace(l, grace) == TSLOCK_OK);
    return l;
}

/* The value the server holds under key, read past any proxy. */
static void server_value(const char *key, char *out, size_t size)
{
    redisContext *r = th_redis(&srv);
    redisReply *reply = redisCommand(r, "GET %s", key);

    snprintf(out, size, "%s",
             reply != NULL && reply->type == REDIS_REPLY_STRING ? reply->str
                                                                : "(none)");
    freeReplyObject(reply);
    redisFree(r);
}

/*
 * One replay: the holder takes the lock by its clock; the taker's clock
 * reads skew_ms past the holder's stamp (it runs that far ahead).  At the
 * holder's first release command, the taker tries.  With grace >= skew it
 * must find the lock busy and send no GETSET, and the holder's release
 * succeeds; with less it takes the live holder's lock, which the holder's
 * release then reports lost.
 */
static void replay_race(const struct gen *g, const struct form *f, int64_t skew,
                        int64_t grace)
{
    static int n;
    th_clock ch, ct;
    tslock_client *h = th_client(gen_endpoint(g)),
                  *t = th_client(gen_endpoint(g));
    struct skewed hs = {0}, ts = {0};
    tslock_lock *lh, *lt;
    char key[64], held[64];
    int rc;

    snprintf(key, sizeof(key), "skew:race:%d", n++);
    th_clock_init(&ch);
    ct = ch;
    tslock_client_set_clock(h, th_clock_fn, &ch);
    tslock_client_set_clock(t, th_clock_fn, &ct);
    lh = form_lock(h, key, f, 0);
    lt = form_lock(t, key, f, grace);
    CU_ASSERT_EQUAL(tslock_acquire(lh, 0), TSLOCK_OK);
    ct.wall_ms = stamp_end(lh, f->unit) + skew;
    tslock_client_set_step_hook(t, skewed_step, &ts);
    hs.taker = lt;
    tslock_client_set_step_hook(h, skewed_step, &hs);
    rc = tslock_release(lh);
    CU_ASSERT_EQUAL(hs.fired, 1);
    CU_ASSERT(ts.steps > 0);
    if (grace >= skew) {
        CU_ASSERT_EQUAL(hs.taker_rc, TSLOCK_EBUSY);
        CU_ASSERT_EQUAL(ts.getsets, 0);
        CU_ASSERT_EQUAL(rc, TSLOCK_OK);
    } else {
        CU_ASSERT_EQUAL(hs.taker_rc, TSLOCK_OK);
        /* Redis 2.0 and the timestamp scheme take over by GETSET. */
        if (f->scheme == TSLOCK_SCHEME_TIMESTAMP
            || (g->emulate != NULL && strcmp(g->emulate, "2.0.5") == 0))
            CU_ASSERT_EQUAL(ts.getsets, 1);
        CU_ASSERT_EQUAL(rc, TSLOCK_ELOST);
        server_value(key, held, sizeof(held));
        CU_ASSERT_STRING_EQUAL(held, tslock_lock_value(lt));
        CU_ASSERT_EQUAL(tslock_release(lt), TSLOCK_OK);
    }
    tslock_lock_free(lh);
    tslock_lock_free(lt);
    tslock_client_free(h);
    tslock_client_free(t);
}

/*
 * The grace's cost: a holder that crashed (never releases) is taken over
 * grace_ms after its stamp ends, by the taker's clock, and not before.
 */
static void replay_crashed(const struct gen *g, const struct form *f,
                           int64_t grace)
{
    static int n;
    th_clock ch, ct;
    tslock_client *h = th_client(gen_endpoint(g)),
                  *t = th_client(gen_endpoint(g));
    tslock_lock *lh, *lt;
    char key[64];
    int64_t end;

    snprintf(key, sizeof(key), "skew:crashed:%d", n++);
    th_clock_init(&ch);
    ct = ch;
    tslock_client_set_clock(h, th_clock_fn, &ch);
    tslock_client_set_clock(t, th_clock_fn, &ct);
    lh = form_lock(h, key, f, 0);
    lt = form_lock(t, key, f, grace);
    CU_ASSERT_EQUAL(tslock_acquire(lh, 0), TSLOCK_OK);
    end = stamp_end(lh, f->unit);
    ct.wall_ms = end + grace;
    CU_ASSERT_EQUAL(tslock_acquire(lt, 0), TSLOCK_EBUSY);
    ct.wall_ms = end + grace + 1;
    CU_ASSERT_EQUAL(tslock_acquire(lt, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(lt), TSLOCK_OK);
    tslock_lock_free(lh);
    tslock_lock_free(lt);
    tslock_client_free(h);
    tslock_client_free(t);
}

static const struct gen *cur_gen;

static int gen_init(void)
{
    static size_t next;

    cur_gen = &gens[next++ % N_GENS];
    return 0;
}

static void test_grace_replay(void)
{
    size_t f;

    for (f = 0; f < N_FORMS; f++) {
        replay_race(cur_gen, &forms[f], 1500, 0);    /* today: taken */
        replay_race(cur_gen, &forms[f], 1500, 1499); /* 1 ms short: taken */
        replay_race(cur_gen, &forms[f], 1500, 1500); /* grace = skew: kept */
        replay_race(cur_gen, &forms[f], 1500, 5000); /* more: kept */
        replay_crashed(cur_gen, &forms[f], 0);
        replay_crashed(cur_gen, &forms[f], 1500);
    }
}

/* The grace changes nothing for a token lock: the server's TTL rules. */
static void test_grace_token(void)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "skew:token") == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_scheme(l, TSLOCK_SCHEME_TOKEN), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_takeover_grace(l, 5000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_acquire(l, 0), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_release(l), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
}

static void test_grace_bad_input(void)
{
    tslock_client *c = th_client(&srv);
    tslock_lock *l = NULL;

    CU_ASSERT_FATAL(tslock_lock_new(&l, c, "skew:bad") == TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_takeover_grace(NULL, 0), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_takeover_grace(l, -1), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_takeover_grace(l, INT64_MIN),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_takeover_grace(l, 86400001), TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_takeover_grace(l, INT64_MAX),
                    TSLOCK_EINVAL);
    CU_ASSERT_EQUAL(tslock_lock_set_takeover_grace(l, 86400000), TSLOCK_OK);
    CU_ASSERT_EQUAL(tslock_lock_set_takeover_grace(l, 0), TSLOCK_OK);
    tslock_lock_free(l);
    tslock_client_free(c);
}

/* ------------------------------------------ real processes, skewed */

#define LEASE_MS 2000
#define WORK_MS  1000
/* Points closer than this to a bound are printed, never asserted. */
#define TIMING_MARGIN_MS 300

static char faketime_lib[512];
static char worker[512];

/* libfaketime: $TSLOCK_LIBFAKETIME, else where Debian's package puts it. */
static int find_faketime(void)
{
    const char *env = getenv("TSLOCK_LIBFAKETIME");
    glob_t g;

    if (env != NULL && env[0] != '\0') {
        snprintf(faketime_lib, sizeof(faketime_lib), "%s", env);
        return access(faketime_lib, R_OK) == 0;
    }
    if (glob("/usr/lib/*/faketime/libfaketime.so.1", 0, NULL, &g) == 0) {
        snprintf(faketime_lib, sizeof(faketime_lib), "%s", g.gl_pathv[0]);
        globfree(&g);
        return 1;
    }
    if (access("/usr/lib/faketime/libfaketime.so.1", R_OK) == 0) {
        snprintf(faketime_lib, sizeof(faketime_lib), "%s",
                 "/usr/lib/faketime/libfaketime.so.1");
        return 1;
    }
    return 0;
}

/* One side of a contest: which client, in which unit, with what grace. */
struct side {
    const char *client; /* timestamp, bridge, token, java, ... */
    const char *unit;
    const char *clock; /* local or server */
    int64_t grace;
};

/*
 * A row of the sweep: the holder keeps the real clock, the taker's runs
 * ahead.  slack: how much later than lease - work + grace the taker's
 * rule can call the stamp expired (the unit's rounding, the bridge's
 * random part); control: a scheme that must never overlap.
 */
struct row {
    const char *name;
    struct side holder, taker;
    int64_t slack;
    int control;
};

static const struct row rows[] = {
    {"timestamp ms",
     {"timestamp", "ms", "local", 0},
     {"timestamp", "ms", "local", 0},
     1,
     0},
    {"timestamp s",
     {"timestamp", "s", "local", 0},
     {"timestamp", "s", "local", 0},
     2000,
     0},
    {"timestamp float",
     {"timestamp", "float", "local", 0},
     {"timestamp", "float", "local", 0},
     1,
     0},
    {"bridge ms",
     {"bridge", "ms", "local", 0},
     {"bridge", "ms", "local", 0},
     LEASE_MS / 10 + 1,
     0},
    {"token (control)",
     {"token", "ms", "local", 0},
     {"token", "ms", "local", 0},
     0,
     1},
    {"timestamp ms, --clock server (control)",
     {"timestamp", "ms", "server", 0},
     {"timestamp", "ms", "server", 0},
     0,
     1},
    {"java ahead of tslock bridge ms",
     {"bridge", "ms", "local", 0},
     {"java", "ms", "local", 0},
     LEASE_MS / 10 + 1,
     0},
    {"redisdoc ahead of tslock bridge s",
     {"bridge", "s", "local", 0},
     {"redisdoc", "s", "local", 0},
     2000,
     0},
    {"redispy2 ahead of tslock bridge float",
     {"bridge", "float", "local", 0},
     {"redispy2", "float", "local", 0},
     1,
     0},
    {"tslock bridge ms ahead of java",
     {"java", "ms", "local", 0},
     {"bridge", "ms", "local", 0},
     1,
     0},
    {"tslock bridge s ahead of redisdoc",
     {"redisdoc", "s", "local", 0},
     {"bridge", "s", "local", 0},
     2000,
     0},
    {"tslock bridge float ahead of redispy2",
     {"redispy2", "float", "local", 0},
     {"bridge", "float", "local", 0},
     1,
     0},
    {"timestamp ms, grace 1000",
     {"timestamp", "ms", "local", 0},
     {"timestamp", "ms", "local", 1000},
     1,
     0},
    {"timestamp ms, grace 2000",
     {"timestamp", "ms", "local", 0},
     {"timestamp", "ms", "local", 2000},
     1,
     0},
    {"tslock bridge ms ahead of java, grace 3500",
     {"java", "ms", "local", 0},
     {"bridge", "ms", "local", 3500},
     1,
     0},
    {"tslock bridge s ahead of redisdoc, grace 4000",
     {"redisdoc", "s", "local", 0},
     {"bridge", "s", "local", 4000},
     2000,
     0},
};
#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

static const int64_t skews[] = {0, 500, 1000, 1500, 2000, 2500, 3000, 4000};
#define N_SKEWS (sizeof(skews) / sizeof(skews[0]))

/* How the clocks move during a point. */
enum motion {
    STEADY,     /* the taker's clock runs skew ahead throughout */
    CRASH,      /* the same, and the holder exits holding the lock */
    JUMP_TAKER, /* the taker's clock jumps skew ahead mid-hold, then back */
    JUMP_HOLDER /* the holder's clock jumps skew ahead mid-hold */
};

struct proc {
    pid_t pid;
    FILE *out;
    int wants_go; /* started early, let go by a line on its stdin */
    int go;       /* that line's pipe, or -1 */
};

struct outcome {
    int ok;         /* both processes ran as asked */
    int taker_held; /* the taker held the lock at some point */
    int overlap;    /* ... while the holder still held it */
    int64_t delay;  /* taker's hold start - holder's, ms */
    char holder_release[16];
};

/*
 * Start the worker for side s; spec: a libfaketime offset ("+1.500") or
 * NULL for the real clock; tsfile: a file libfaketime re-reads at every
 * clock read (so the clock can jump), or NULL.
 */
static int spawn(struct proc *p, const char *key, const struct side *s,
                 int64_t work, int64_t wait, const char *spec,
                 const char *tsfile)
{
    int fds[2], go[2] = {-1, -1};
    char lease[24], w[24], wt[24], grace[24];

    snprintf(lease, sizeof(lease), "%d", LEASE_MS);
    snprintf(w, sizeof(w), "%" PRId64, work);
    snprintf(wt, sizeof(wt), "%" PRId64, wait);
    snprintf(grace, sizeof(grace), "%" PRId64, s->grace);
    p->go = -1;
    if (pipe(fds) != 0 || (p->wants_go && pipe(go) != 0))
        return -1;
    p->pid = fork();
    if (p->pid < 0)
        return -1;
    if (p->pid == 0) {
        char *argv[] = {worker,
                        srv.socket,
                        (char *)key,
                        (char *)s->client,
                        (char *)s->unit,
                        lease,
                        w,
                        wt,
                        grace,
                        (char *)s->clock,
                        NULL};
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        if (p->wants_go) {
            dup2(go[0], 0);
            close(go[0]);
            close(go[1]);
            setenv("SKEW_WORKER_GO", "1", 1);
        }
        if (spec != NULL || tsfile != NULL) {
            /* Shift the wall clock only; CLOCK_MONOTONIC stays true. */
            setenv("LD_PRELOAD", faketime_lib, 1);
            setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
            /* A sanitizer runtime must otherwise come first. */
            setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
            if (spec != NULL)
                setenv("FAKETIME", spec, 1);
            else {
                setenv("FAKETIME_TIMESTAMP_FILE", tsfile, 1);
                setenv("FAKETIME_NO_CACHE", "1", 1);
            }
        }
        execv(worker, argv);
        _exit(127);
    }
    close(fds[1]);
    if (p->wants_go) {
        close(go[0]);
        p->go = go[1];
    }
    p->out = fdopen(fds[0], "r");
    return p->out != NULL ? 0 : -1;
}

static int finish(struct proc *p)
{
    int status = 0;

    if (p->go >= 0)
        close(p->go);
    p->go = -1;
    if (p->out != NULL)
        fclose(p->out);
    p->out = NULL;
    if (p->pid > 0 && waitpid(p->pid, &status, 0) < 0)
        return -1;
    p->pid = 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void write_offset(const char *path, int64_t ms)
{
    FILE *f = fopen(path, "w");

    if (f != NULL) {
        fprintf(f, "%+.3f\n", (double)ms / 1000.0);
        fclose(f);
    }
}

/*
 * Sleeps order nothing here: they only place a clock jump inside a hold
 * of WORK_MS, with hundreds of milliseconds to spare either side.
 */
static void sleep_ms(int64_t ms)
{
    th_sleep_us(ms * 1000);
}

static struct outcome run_point(const struct row *r, int64_t skew,
                                enum motion m)
{
    static int n;
    struct outcome o = {0};
    struct proc h = {0, NULL, 0, -1}, t = {0, NULL, 0, -1};
    char key[64], spec[32], tsfile[300], line[128];
    long long h_in = 0, h_out = 0, t_in = 0;
    int moving = m == JUMP_TAKER || m == JUMP_HOLDER;

    snprintf(key, sizeof(key), "skew:point:%d", n++);
    snprintf(spec, sizeof(spec), "%+.3f", (double)skew / 1000.0);
    snprintf(tsfile, sizeof(tsfile), "%s/faketime.%d", srv.dir, n);
    write_offset(tsfile, 0);
    /*
     * The taker starts first and connects, then waits; it is let go the
     * moment the holder holds, so its own startup does not delay it.
     */
    t.wants_go = 1;
    if (spawn(&t, key, &r->taker, 50, 4 * LEASE_MS + 4000,
              moving || skew == 0 ? NULL : spec,
              m == JUMP_TAKER ? tsfile : NULL)
            != 0
        || fgets(line, sizeof(line), t.out) == NULL
        || strcmp(line, "ready\n") != 0) {
        finish(&t);
        return o;
    }
    if (spawn(&h, key, &r->holder, m == CRASH ? -1 : WORK_MS, 0, NULL,
              m == JUMP_HOLDER ? tsfile : NULL)
        != 0) {
        finish(&t);
        return o;
    }
    if (fgets(line, sizeof(line), h.out) == NULL
        || sscanf(line, "held %lld", &h_in) != 1
        || write(t.go, "go\n", 3) != 3) {
        finish(&h);
        finish(&t);
        return o;
    }
    if (moving) {
        sleep_ms(300);
        write_offset(tsfile, skew);
        sleep_ms(400);
        if (m == JUMP_TAKER)
            write_offset(tsfile, 0);
    }
    if (m != CRASH) {
        if (fgets(line, sizeof(line), h.out) == NULL
            || sscanf(line, "done %lld %15s", &h_out, o.holder_release) != 2)
            h_out = -1;
    }
    if (fgets(line, sizeof(line), t.out) != NULL
        && sscanf(line, "held %lld", &t_in) == 1)
        o.taker_held = 1;
    o.ok = finish(&h) == 0 && finish(&t) == 0 && h_out >= 0;
    if (o.taker_held) {
        o.delay = (int64_t)(t_in - h_in) / 1000;
        o.overlap = m != CRASH && t_in < h_out;
    }
    unlink(tsfile);
    return o;
}

/* lease - work + grace: the largest skew the row is sure to survive. */
static int64_t bound_of(const struct row *r)
{
    return LEASE_MS - WORK_MS + r->taker.grace;
}

/* Whether the formula decides point (r, skew) well clear of timing. */
static void judge(const struct row *r, int64_t skew, const struct outcome *o)
{
    int64_t b = bound_of(r);

    CU_ASSERT(o->ok);
    if (r->control || skew <= b - TIMING_MARGIN_MS) {
        CU_ASSERT_EQUAL(o->overlap, 0);
    } else if (skew >= b + r->slack + TIMING_MARGIN_MS) {
        CU_ASSERT_EQUAL(o->overlap, 1);
    }
}

static void need_faketime(void)
{
    if (faketime_lib[0] == '\0') {
        CU_FAIL_FATAL("libfaketime not found (apt-get install faketime "
                      "libfaketime; quickstart.sh does)");
    }
}

static void sweep_row(const struct row *r)
{
    size_t i;
    int64_t first = -1;

    printf("\n  %-46s bound %5" PRId64 " ms:", r->name, bound_of(r));
    for (i = 0; i < N_SKEWS; i++) {
        struct outcome o = run_point(r, skews[i], STEADY);
        judge(r, skews[i], &o);
        printf(" %" PRId64 ":%s", skews[i],
               !o.ok       ? "ERR"
               : o.overlap ? "OVERLAP"
                           : "ok");
        if (o.overlap && first < 0)
            first = skews[i];
        fflush(stdout);
    }
    if (first >= 0)
        printf("  (overlaps from %" PRId64 " ms)", first);
}

/* make check: a few points either side of the bound, and the controls. */
static void test_sweep_points(void)
{
    static const struct {
        size_t row;
        int64_t skew;
        int overlap;
    } pts[] = {
        {0, 500, 0},   /* timestamp ms, inside the bound */
        {0, 2000, 1},  /* ... past it: the checker sees the overlap */
        {4, 4000, 0},  /* token: never */
        {5, 4000, 0},  /* --clock server: never */
        {13, 2000, 0}, /* timestamp ms with grace 2000 >= skew */
        {6, 2000, 1},  /* java ahead of a bridge holder: no defence */
        {14, 2000, 0}, /* bridge ahead of java, grace 3500 */
    };
    size_t i;

    need_faketime();
    for (i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
        struct outcome o = run_point(&rows[pts[i].row], pts[i].skew, STEADY);
        printf("\n  %s, skew %" PRId64 " ms: %s", rows[pts[i].row].name,
               pts[i].skew,
               !o.ok       ? "ERR"
               : o.overlap ? "overlap"
                           : "no overlap");
        CU_ASSERT(o.ok);
        CU_ASSERT_EQUAL(o.overlap, pts[i].overlap);
    }
    printf("\n");
}

static void test_sweep_full(void)
{
    size_t r;

    need_faketime();
    printf("\n  lease %d ms, work %d ms; skew of the taker's clock (ms):",
           LEASE_MS, WORK_MS);
    for (r = 0; r < N_ROWS; r++)
        sweep_row(&rows[r]);
    printf("\n");
}

/*
 * A crashed holder: how long the taker waits for the lock.  The grace
 * costs exactly itself: lease + 1 - skew + grace.
 */
static void test_takeover_delay(void)
{
    static const int64_t graces[] = {0, 1000, 2000};
    static const int64_t ds[] = {0, 1000};
    size_t gi, di;

    need_faketime();
    for (gi = 0; gi < 3; gi++)
        for (di = 0; di < 2; di++) {
            struct row r = rows[0];
            int64_t want = LEASE_MS + 1 - ds[di] + graces[gi];
            struct outcome o;

            r.taker.grace = graces[gi];
            o = run_point(&r, ds[di], CRASH);
            printf("\n  timestamp ms, crashed holder, skew %" PRId64
                   ", grace %" PRId64 ": taken after %" PRId64
                   " ms (formula %" PRId64 ")",
                   ds[di], graces[gi], o.delay, want);
            CU_ASSERT(o.ok && o.taker_held);
            CU_ASSERT(o.delay >= want - 50 && o.delay <= want + 500);
        }
    printf("\n");
}

/*
 * Clocks that jump: the taker's clock jumps 3 s ahead 300 ms into the
 * hold and back 400 ms later; the holder's jumps 3 s ahead, or behind,
 * and stays.
 */
static void test_jumps(void)
{
    struct row grace = rows[0];
    struct outcome o;

    need_faketime();
    grace.taker.grace = 3500;
    o = run_point(&rows[0], 3000, JUMP_TAKER);
    printf("\n  taker jumps +3 s, timestamp ms: %s",
           o.overlap ? "overlap" : "no overlap");
    CU_ASSERT(o.ok);
    CU_ASSERT_EQUAL(o.overlap, 1);
    o = run_point(&rows[4], 3000, JUMP_TAKER);
    printf("\n  taker jumps +3 s, token: %s",
           o.overlap ? "overlap" : "no overlap");
    CU_ASSERT(o.ok);
    CU_ASSERT_EQUAL(o.overlap, 0);
    o = run_point(&grace, 3000, JUMP_TAKER);
    printf("\n  taker jumps +3 s, timestamp ms, grace 3500: %s",
           o.overlap ? "overlap" : "no overlap");
    CU_ASSERT(o.ok);
    CU_ASSERT_EQUAL(o.overlap, 0);
    /* The holder's lease has ended by its own clock: it deletes nothing. */
    o = run_point(&rows[0], 3000, JUMP_HOLDER);
    printf("\n  holder jumps +3 s, timestamp ms: release %s, %s",
           o.holder_release, o.overlap ? "overlap" : "no overlap");
    CU_ASSERT(o.ok);
    CU_ASSERT_STRING_EQUAL(o.holder_release, "lost");
    CU_ASSERT_EQUAL(o.overlap, 0);
    /* Back: its lease runs longer by its clock; the others' rule holds. */
    o = run_point(&rows[0], -3000, JUMP_HOLDER);
    printf("\n  holder jumps -3 s, timestamp ms: release %s, %s",
           o.holder_release, o.overlap ? "overlap" : "no overlap");
    CU_ASSERT(o.ok);
    CU_ASSERT_STRING_EQUAL(o.holder_release, "ok");
    CU_ASSERT_EQUAL(o.overlap, 0);
    o = run_point(&rows[4], 3000, JUMP_HOLDER);
    printf("\n  holder jumps +3 s, token: release %s, %s", o.holder_release,
           o.overlap ? "overlap" : "no overlap");
    CU_ASSERT(o.ok);
    CU_ASSERT_STRING_EQUAL(o.holder_release, "ok");
    CU_ASSERT_EQUAL(o.overlap, 0);
    printf("\n");
}

int main(int argc, char **argv)
{
    const char *top = getenv("top_builddir");
    char names[N_GENS][64];
    size_t i;
    int rc = 1;

    full = argc > 1 && strcmp(argv[1], "--full") == 0;
    signal(SIGPIPE, SIG_IGN);
    snprintf(worker, sizeof(worker), "%s/tests/skew_worker",
             top != NULL ? top : ".");
    if (!find_faketime())
        faketime_lib[0] = '\0';
    if (th_server_start(&srv, NULL) != 0)
        return 1;
    for (i = 0; i < N_GENS; i++)
        if (gens[i].emulate != NULL
            && th_proxy_start(&gens[i].proxy, &srv, gens[i].emulate) != 0)
            goto out;
    if (CU_initialize_registry() != CUE_SUCCESS)
        goto out;
    if (!full) {
        CU_pSuite s = CU_add_suite("takeover grace", NULL, NULL);
        CU_add_test(s, "bad input", test_grace_bad_input);
        CU_add_test(s, "token locks ignore it", test_grace_token);
        for (i = 0; i < N_GENS; i++) {
            snprintf(names[i], sizeof(names[i]),
                     "grace on %s: skewed takeover replayed", gens[i].name);
            CU_add_test(
                CU_add_suite(names[i], gen_init, NULL),
                "every stamp form: grace 0 / skew-1 / skew / more; its cost",
                test_grace_replay);
        }
        CU_add_test(
            CU_add_suite("skew sweep, a few points (libfaketime)", NULL, NULL),
            "overlaps past the bound, none inside it or for tokens",
            test_sweep_points);
        CU_add_test(CU_add_suite("clock jumps (libfaketime)", NULL, NULL),
                    "taker and holder clocks jumping mid-hold", test_jumps);
    } else {
        CU_pSuite s = CU_add_suite("skew sweep (libfaketime)", NULL, NULL);
        CU_add_test(s, "every scheme, unit and legacy client", test_sweep_full);
        CU_add_test(s, "takeover delay of a crashed holder",
                    test_takeover_delay);
        CU_add_test(s, "clock jumps", test_jumps);
    }
    rc = th_run_all();
out:
    for (i = 0; i < N_GENS; i++)
        th_proxy_stop(&gens[i].proxy);
    th_server_stop(&srv);
    return rc;
}
