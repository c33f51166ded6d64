/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * explore_main.c - the explorer's table: every tslock scheme on every
 * server generation, the broken schemes of the articles as controls, and
 * tslock beside each legacy client, each through every interleaving of
 * its scenario.  `tests/explore` (make check) exhausts the two-client
 * scenarios; `tests/explore --full` (make explore) adds three clients
 * and retries.  One line per row:
 *
 *   explore SCHEME GENERATION SCENARIO schedules=N exhausted=yes|no
 *   violations=N
 *
 * then the shortest counterexample as numbered steps; for the classic
 * release form, the same schedule again with the WATCH form, which must
 * hold.  `--html FILE` also draws every counterexample as the classroom
 * page (tools/class/classroom.c).  Exit status 1 when a tslock scheme broke a
 * property, a control did not, the WATCH form broke on the classic
 * form's counterexample, or a two-client space was not exhausted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classroom.h"
#include "explore.h"
#include "harness.h"

static const char *const generations[] = {"modern", "2.6.11", "2.6.0",
                                          "2.4.18", "2.2.15", "2.0.5"};
#define N_GEN 6

static th_server srv, proxies[N_GEN];
static int failures;
static long total_schedules;
static double total_seconds;
static const char *only;
static int verbose;
static const char *html_path; /* --html: the classroom page, or NULL */
static const char *doc_url = "doc/races.md";

/*
 * The page's scenes: one per distinct counterexample, with the rows that
 * found it.  A side is a schedule as the explorer ran it.
 */
typedef struct xside {
    char label[96];
    char verdict[200];
    int broken, mark;
    long long start_ms;
    explore_step steps[EXPLORE_MAX_STEPS];
    int n;
} xside;

typedef struct xscene {
    char id[8];
    char title[160];
    char about[1200];
    char doc[256];
    xside sides[2];
    int n_sides;
} xscene;

static xscene *xscenes;
static size_t n_xscenes, cap_xscenes;

/*
 * What a row must show.  SAFE: no violation, except those of a kind
 * named as the row's known finding (none today: race k of doc/races.md,
 * the one race this explorer found in tslock, is fixed).  GAP: a
 * release form with a documented gap (classic GET, compare, DEL; the
 * only form on Redis 2.0).  CONTROL: a broken scheme of the articles.
 */
enum expect { SAFE, GAP, CONTROL };

static const char *const kind_names[EXPLORE_V_KINDS] = {
    "exclusion", "foreign-delete", "untruthful",
    "told-lost", "liveness",       "error"};

typedef struct scenario {
    const char *name;
    int n, tries, dead, clock, crash, depth;
    long max_schedules;
    int full_only;
    int preemptions; /* -1: every schedule */
} scenario;

static const scenario scenarios[] = {
    {"two", 2, 1, 0, 1, 0, 40, 0, 0, -1},
    {"two-dead", 2, 1, 1, 1, 0, 40, 0, 0, -1},
    {"two-crash", 2, 2, 0, 1, 1, 48, 0, 0, -1},
    {"two-retry", 2, 2, 1, 1, 0, 56, 0, 1, -1},
    {"three", 3, 1, 0, 1, 0, 48, 100000, 1, 2},
    {"three-dead", 3, 1, 1, 1, 0, 48, 100000, 1, 2},
};
#define N_SCEN (sizeof(scenarios) / sizeof(scenarios[0]))

static int gen_has(int g, const char *what)
{
    if (strcmp(what, "lua") == 0)
        return g <= 2;
    if (strcmp(what, "watch") == 0)
        return g <= 4;
    return 1;
}

/* ------------------------------------------------ the classroom page */

static void xside_fill(xside *x, const char *label, const char *verdict,
                       int broken, int mark, const explore_result *res,
                       const explore_step *steps, int n)
{
    x->start_ms = res->start_ms;
    snprintf(x->label, sizeof(x->label), "%s", label);
    snprintf(x->verdict, sizeof(x->verdict), "%s", verdict);
    x->broken = broken;
    x->mark = mark;
    x->n = n < EXPLORE_MAX_STEPS ? n : EXPLORE_MAX_STEPS;
    memcpy(x->steps, steps, sizeof(explore_step) * (size_t)x->n);
}

static int xside_same(const xside *a, const xside *b)
{
    return a->n == b->n && a->broken == b->broken && a->mark == b->mark
           && strcmp(a->verdict, b->verdict) == 0
           && strcmp(a->label, b->label) == 0
           && memcmp(a->steps, b->steps, sizeof(explore_step) * (size_t)a->n)
                  == 0;
}

/*
 * Add a scene, or name the row on the scene that already shows the very
 * same schedules (as the generations that behave alike do).
 */
static void xscene_add(const xscene *sc, const char *row_name)
{
    size_t i;
    int k;

    for (i = 0; i < n_xscenes; i++) {
        xscene *o = &xscenes[i];
        if (o->n_sides != sc->n_sides)
            continue;
        for (k = 0; k < sc->n_sides; k++)
            if (!xside_same(&o->sides[k], &sc->sides[k]))
                break;
        if (k == sc->n_sides) {
            size_t used = strlen(o->about);
            snprintf(o->about + used, sizeof(o->about) - used, "; %s",
                     row_name);
            return;
        }
    }
    if (n_xscenes == cap_xscenes) {
        cap_xscenes = cap_xscenes ? cap_xscenes * 2 : 16;
        xscenes = realloc(xscenes, cap_xscenes * sizeof(*xscenes));
        if (xscenes == NULL) {
            fprintf(stderr, "explore: out of memory\n");
            exit(2);
        }
    }
    xscenes[n_xscenes] = *sc;
    snprintf(xscenes[n_xscenes].id, sizeof(sc->id), "%zu", n_xscenes + 1);
    snprintf(xscenes[n_xscenes].about, sizeof(sc->about),
             "Run against a real redis-server; the shortest counterexample "
             "of: %s",
             row_name);
    n_xscenes++;
}

static void to_classroom(const xside *x, classroom_step *out)
{
    int i;

    for (i = 0; i < x->n; i++) {
        out[i].actor = x->steps[i].actor;
        out[i].command = x->steps[i].what;
        out[i].value = x->steps[i].value;
        out[i].note = x->steps[i].note[0] ? x->steps[i].note : NULL;
        out[i].pttl = x->steps[i].pttl;
        out[i].clock_ms = x->steps[i].clock_ms;
    }
}

/* Write the page of every scene collected; 0, or -1. */
static int write_html(void)
{
    classroom_scene *cs = calloc(n_xscenes + 1, sizeof(*cs));
    classroom_step(*steps)[2][EXPLORE_MAX_STEPS] =
        calloc(n_xscenes + 1, sizeof(*steps));
    FILE *f = fopen(html_path, "w");
    size_t i;
    int k, rc = -1;

    if (cs != NULL && steps != NULL && f != NULL) {
        for (i = 0; i < n_xscenes; i++) {
            xscene *x = &xscenes[i];
            cs[i].id = x->id;
            cs[i].title = x->title;
            cs[i].doc = x->doc;
            cs[i].about = x->about;
            cs[i].n_sides = x->n_sides;
            for (k = 0; k < x->n_sides; k++) {
                classroom_side *sd = &cs[i].sides[k];
                to_classroom(&x->sides[k], steps[i][k]);
                sd->label = x->sides[k].label;
                sd->start_ms = x->sides[k].start_ms;
                sd->verdict = x->sides[k].verdict;
                sd->broken = x->sides[k].broken;
                sd->documented = 1; /* the explorer's own checks say */
                sd->mismatch = NULL;
                sd->mark = x->sides[k].mark;
                sd->steps = steps[i][k];
                sd->n_steps = x->sides[k].n;
            }
        }
        rc = classroom_write(f, "tslock: the explorer's counterexamples",
                             "The shortest schedule that breaks a property, "
                             "for every row of tests/explore that has one, "
                             "as the explorer ran it against a real Redis "
                             "server.",
                             "tests/explore --html", cs, n_xscenes);
    }
    if (f == NULL || fclose(f) != 0)
        rc = -1;
    free(cs);
    free(steps);
    return rc;
}

/* The property a violation broke, in words for a title. */
static const char *broken_what(const char *why)
{
    if (strncmp(why, "mutual", 6) == 0)
        return "mutual exclusion lost";
    if (strncmp(why, "foreign", 7) == 0)
        return "a foreign delete";
    if (strncmp(why, "untruthful", 10) == 0)
        return "an untruthful report";
    if (strncmp(why, "liveness", 8) == 0)
        return "locked out for good";
    return "an operation failed";
}

/*
 * The counterexample [which] of a row as a scene; with a second side
 * when given (the same schedule on another configuration).
 */
static void collect(const char *label, const char *sc_name,
                    const char *row_name, const explore_result *res, int which,
                    enum expect expect, const xside *beside)
{
    xscene x;
    char side_label[96];

    memset(&x, 0, sizeof(x));
    snprintf(x.title, sizeof(x.title), "%s, %s: %s%s", label, sc_name,
             broken_what(res->why[which]),
             which == 1          ? " (the legacy client's own flaw)"
             : expect == GAP     ? " (the documented gap)"
             : expect == CONTROL ? " (a control)"
                                 : "");
    snprintf(x.doc, sizeof(x.doc), "%s#%s", doc_url,
             expect == CONTROL ? "the-controls-counterexamples"
             : expect == GAP && strncmp(label, "timestamp-classic", 17) == 0
                 ? "d-check-then-delete"
                 : "every-interleaving-the-schedule-explorer");
    snprintf(side_label, sizeof(side_label), "%s (%s)", label, sc_name);
    xside_fill(&x.sides[0], side_label, res->why[which], 1,
               res->n_steps[which] - 1, res, res->example[which],
               res->n_steps[which]);
    x.n_sides = 1;
    if (beside != NULL) {
        x.sides[1] = *beside;
        x.n_sides = 2;
    }
    xscene_add(&x, row_name);
}

/*
 * The classic release's gap beside the WATCH form on the same schedule:
 * run the counterexample's choices with the WATCH form, which must keep
 * every property, from the same choices up to the break.  Returns 1 when
 * it did not.
 */
static int watch_beside(const explore_config *classic, int g,
                        const explore_result *res, xside *out)
{
    explore_config cfg = *classic;
    explore_result *w = malloc(sizeof(*w));
    int bad, at = res->n_steps[0] - 1;

    if (w == NULL)
        exit(2);
    cfg.form = TSLOCK_RELEASE_WATCH;
    explore_follow(&cfg, g == 0 ? srv.socket : proxies[g].socket, srv.socket,
                   res->choices[0], res->n_choices[0], w);
    bad = w->violations > 0 || (w->diverged >= 0 && w->diverged <= at);
    printf("  same schedule, timestamp-watch: %s, %d steps%s\n%s",
           w->violations > 0 ? w->why[0] : "every property held", w->n_steps[0],
           w->diverged >= 0 && w->diverged <= at ? " (diverged)" : "",
           w->steps[0]);
    xside_fill(out, "timestamp-watch, the same schedule",
               w->violations > 0 ? w->why[0]
                                 : "every property held, to the end of the "
                                   "same schedule",
               w->violations > 0, w->violations > 0 ? w->broke_at - 1 : at, w,
               w->example[0], w->n_steps[0]);
    free(w);
    return bad;
}

/* Run one row; returns its violations. */
static void print_example(const explore_result *res, int which,
                          const char *what)
{
    if (res->n_steps[which] > 0)
        printf("  shortest %s, %d steps: %s\n%s", what, res->n_steps[which],
               res->why[which], res->steps[which]);
}

/*
 * Run one row; returns its violations, or -1 when --only left it out.
 * known: a violation kind this row is known to show (or -1).
 */
static long row(const char *label, int g, const scenario *sc, explore_kind a,
                explore_kind b, tslock_unit unit, tslock_release_form form,
                enum expect expect, int known)
{
    long unexpected;
    int k;
    explore_config cfg;
    static explore_result res; /* large: off the stack */
    char name[128];
    int i;

    snprintf(name, sizeof(name), "%s %s %s", label, generations[g], sc->name);
    if (only != NULL && strstr(name, only) == NULL)
        return -1;
    memset(&cfg, 0, sizeof(cfg));
    cfg.key = "explore:lock";
    cfg.n_clients = sc->n;
    for (i = 0; i < sc->n; i++)
        cfg.kinds[i] = i == 0 ? a : b;
    cfg.ttl_ms = 10000;
    cfg.unit = unit;
    cfg.form = form;
    cfg.tries = sc->tries;
    cfg.dead = sc->dead;
    cfg.clock = sc->clock;
    cfg.crash = sc->crash;
    cfg.max_depth = sc->depth;
    cfg.max_schedules = sc->max_schedules;
    cfg.preemptions = sc->preemptions;
    explore(&cfg, g == 0 ? srv.socket : proxies[g].socket, srv.socket, &res);
    total_schedules += res.schedules;
    total_seconds += res.seconds;
    printf("explore %s schedules=%ld exhausted=%s violations=%ld", name,
           res.schedules, res.exhausted && sc->preemptions < 0 ? "yes" : "no",
           res.violations);
    if (sc->preemptions >= 0)
        printf(" preemptions<=%d%s", sc->preemptions,
               res.exhausted ? " (every such schedule)" : "");
    if (res.legacy_violations > 0 || a != b)
        printf(" legacy-flaws=%ld", res.legacy_violations);
    if (res.orphans > 0)
        printf(" orphans=%ld", res.orphans);
    printf(" pruned=%ld rate=%.0f/s%s", res.pruned,
           res.seconds > 0 ? (double)res.schedules / res.seconds : 0.0,
           expect == GAP       ? " (documented gap)"
           : expect == CONTROL ? " (control)"
                               : "");
    for (k = 0; k < EXPLORE_V_KINDS; k++)
        if (res.by_kind[k] > 0)
            printf(" %s=%ld", kind_names[k], res.by_kind[k]);
    printf("\n");
    print_example(&res, 0, "counterexample");
    if (res.n_steps[0] > 0 && form == TSLOCK_RELEASE_CLASSIC
        && a == EXPLORE_TIMESTAMP && gen_has(g, "watch")) {
        xside w;
        if (watch_beside(&cfg, g, &res, &w) != 0) {
            printf("FAIL: %s: the WATCH form did not hold on the same "
                   "schedule\n",
                   name);
            failures++;
        }
        collect(label, sc->name, name, &res, 0, expect, &w);
    } else if (res.n_steps[0] > 0)
        collect(label, sc->name, name, &res, 0, expect, NULL);
    print_example(&res, 1, "counterexample of the legacy client's own flaw");
    if (res.n_steps[1] > 0)
        collect(label, sc->name, name, &res, 1, expect, NULL);
    if (verbose)
        print_example(&res, 2, "orphan");
    fflush(stdout);
    unexpected = res.violations - (known >= 0 ? res.by_kind[known] : 0);
    if (expect == SAFE && unexpected > 0) {
        printf("FAIL: %s broke a property\n", name);
        failures++;
    }
    if (sc->n == 2 && !sc->full_only && !res.exhausted) {
        printf("FAIL: %s was not exhausted\n", name);
        failures++;
    }
    return res.violations + res.legacy_violations;
}

static void tslock_rows(int full)
{
    size_t s;
    int g;

    for (g = 0; g < N_GEN; g++)
        for (s = 0; s < N_SCEN; s++) {
            const scenario *sc = &scenarios[s];
            if (sc->full_only && !full)
                continue;
            if (gen_has(g, "lua"))
                row("timestamp-lua", g, sc, EXPLORE_TIMESTAMP,
                    EXPLORE_TIMESTAMP, TSLOCK_UNIT_MS, TSLOCK_RELEASE_LUA, SAFE,
                    -1);
            if (gen_has(g, "watch"))
                row("timestamp-watch", g, sc, EXPLORE_TIMESTAMP,
                    EXPLORE_TIMESTAMP, TSLOCK_UNIT_MS, TSLOCK_RELEASE_WATCH,
                    SAFE, -1);
            row("timestamp-classic", g, sc, EXPLORE_TIMESTAMP,
                EXPLORE_TIMESTAMP, TSLOCK_UNIT_MS, TSLOCK_RELEASE_CLASSIC, GAP,
                -1);
            if (gen_has(g, "watch"))
                row("token", g, sc, EXPLORE_TOKEN, EXPLORE_TOKEN,
                    TSLOCK_UNIT_MS, TSLOCK_RELEASE_BEST, SAFE, -1);
            /* On 2.0 the bridge scheme is the timestamp scheme with its
             * classic release (tslock(7)). */
            row("bridge", g, sc, EXPLORE_BRIDGE, EXPLORE_BRIDGE, TSLOCK_UNIT_MS,
                TSLOCK_RELEASE_BEST, gen_has(g, "watch") ? SAFE : GAP, -1);
        }
}

static void control_rows(int full)
{
    static const struct {
        const char *name;
        explore_kind kind;
    } controls[] = {{"naive-del", EXPLORE_NAIVE_DEL},
                    {"blind-getset", EXPLORE_BLIND_GETSET},
                    {"get-then-del", EXPLORE_GET_THEN_DEL},
                    {"setnx-expire", EXPLORE_SETNX_EXPIRE},
                    {"java-redislock", EXPLORE_JAVA}};
    size_t c, s;

    for (c = 0; c < sizeof(controls) / sizeof(controls[0]); c++) {
        long found = 0, ran = 0;
        for (s = 0; s < N_SCEN; s++) {
            long v;
            if (scenarios[s].full_only && !full)
                continue;
            v = row(controls[c].name, 0, &scenarios[s], controls[c].kind,
                    controls[c].kind, TSLOCK_UNIT_MS, TSLOCK_RELEASE_BEST,
                    CONTROL, -1);
            if (v >= 0) {
                ran = 1;
                found += v;
            }
        }
        if (ran && found == 0 && only == NULL) {
            printf("FAIL: control %s found no counterexample\n",
                   controls[c].name);
            failures++;
        }
    }
}

/*
 * tslock beside each legacy client, in the legacy client's unit.  On 2.0
 * both schemes release in the classic form, whose gap is documented.
 */
static void legacy_rows(void)
{
    static const struct {
        const char *name;
        explore_kind kind;
        tslock_unit unit;
    } legacy[] = {{"java", EXPLORE_LEGACY_JAVA, TSLOCK_UNIT_MS},
                  {"redisdoc", EXPLORE_LEGACY_REDISDOC, TSLOCK_UNIT_S},
                  {"redispy2", EXPLORE_LEGACY_REDISPY2, TSLOCK_UNIT_FLOAT}};
    scenario sc = {"", 2, 1, 0, 1, 0, 40, 0, 0, -1};
    char scname[64];
    size_t l;
    int g, bridge;

    for (g = 0; g < N_GEN; g++)
        for (l = 0; l < sizeof(legacy) / sizeof(legacy[0]); l++)
            for (bridge = 0; bridge < 2; bridge++) {
                snprintf(scname, sizeof(scname), "beside-%s", legacy[l].name);
                sc.name = scname;
                row(bridge ? "bridge" : "timestamp", g, &sc,
                    bridge ? EXPLORE_BRIDGE : EXPLORE_TIMESTAMP, legacy[l].kind,
                    legacy[l].unit, TSLOCK_RELEASE_BEST,
                    gen_has(g, "watch") ? SAFE : GAP, -1);
            }
}

int main(int argc, char **argv)
{
    int full = 0, i, g;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--full") == 0)
            full = 1;
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--html") == 0 && i + 1 < argc)
            html_path = argv[++i];
        else if (strcmp(argv[i], "--doc") == 0 && i + 1 < argc)
            doc_url = argv[++i];
        else {
            fprintf(stderr, "usage: explore [--full] [--verbose] [--only TEXT] "
                            "[--html FILE [--doc URL]]\n");
            return 2;
        }
    }
    if (th_server_start(&srv, NULL) != 0)
        return 2;
    for (g = 1; g < N_GEN; g++)
        if (th_proxy_start(&proxies[g], &srv, generations[g]) != 0)
            return 2;
    printf("explore: stateless search by re-execution, sleep-set reduction "
           "(reads commute, leaving a critical section commutes)\n");
    tslock_rows(full);
    control_rows(full);
    legacy_rows();
    printf("explore: %ld schedules in %.1f s, %.0f schedules/s\n",
           total_schedules, total_seconds,
           total_seconds > 0 ? (double)total_schedules / total_seconds : 0.0);
    for (g = 1; g < N_GEN; g++)
        th_proxy_stop(&proxies[g]);
    th_server_stop(&srv);
    if (html_path != NULL) {
        if (write_html() != 0) {
            printf("FAIL: cannot write %s\n", html_path);
            failures++;
        } else
            printf("explore: %zu counterexamples drawn in %s\n", n_xscenes,
                   html_path);
    }
    free(xscenes);
    if (failures > 0)
        printf("explore: %d failures\n", failures);
    return failures > 0 ? 1 : 0;
}
