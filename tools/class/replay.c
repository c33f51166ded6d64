/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replay.c - the replay form: narrates races of doc/races.md against the
 * server, step by step, with the broken scheme and tslock side by side,
 * and with --html draws them as the classroom page.  The scenarios
 * themselves are the shared table in races.c, run by race_play().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "classroom.h"
#include "cli.h"
#include "races.h"

struct narration {
    const struct cli_options *o;
    const race *r;
    const char *key;
    int side; /* 0 before the broken side, 1 within it, 2 within tslock's */
    int step;
    int failed; /* a connection could not be made */
};

/* A raw connection with the URL's TLS, AUTH and SELECT, or NULL. */
static redisContext *replay_raw(void *ud)
{
    struct narration *n = ud;
    redisContext *c = NULL;

    if (cli_raw_connect(n->o, 1, &c) != 0) {
        n->failed = 1;
        return NULL;
    }
    return c;
}

static tslock_client *replay_client(void *ud)
{
    struct narration *n = ud;
    tslock_client *c = NULL;

    if (cli_connect(n->o, &c) != CLI_EXIT_OK)
        n->failed = 1;
    return c;
}

/* A side begins (step NULL), or one of its steps was answered. */
static void replay_narrate(const race_step *st, void *ud)
{
    struct narration *n = ud;

    if (st == NULL) {
        int broken = n->side++ == 0;
        n->step = 0;
        printf("%s (%s), on %s:\n", broken ? "broken" : "tslock",
               broken ? n->r->broken : n->r->fixed, n->key);
        return;
    }
    printf("  %2d. %-6s %-18s -> %s", ++n->step, st->actor, st->command,
           st->value);
    if (st->pttl >= 0)
        printf("  [TTL %lld ms]", st->pttl);
    printf("\n");
}

/*
 * Play race r with its narration; 0 when both sides ended as documented,
 * 1 when not, -1 when a replay could not run.
 */
static int replay_race(const race *r, struct narration *n, race_side out[2])
{
    race_env env = {replay_raw, replay_client, replay_narrate, n, 0, 0};
    char key[64];
    int rc;

    env.wall_ms = cli_wall_ms();
    env.mono_ms = cli_mono_ms();
    snprintf(key, sizeof(key), "tslock:replay:%s", r->id);
    n->r = r;
    n->key = key;
    n->side = 0;
    printf("race %s: %s\n", r->id, r->title);
    rc = race_play(r, &env, key, out);
    if (rc < 0 || n->failed)
        return -1;
    printf("verdict:\n  broken (%s): %s\n  tslock (%s): %s\n", r->broken,
           out[0].verdict, r->fixed, out[1].verdict);
    if (rc != 0)
        cli_error("race %s did not end as doc/races.md documents: %s", r->id,
                  out[0].documented ? out[1].mismatch : out[0].mismatch);
    return rc;
}

static int replay_list(void)
{
    size_t i;

    for (i = 0; i < n_races; i++)
        printf("%s  %s: %s vs tslock %s\n", races[i].id, races[i].title,
               races[i].broken, races[i].fixed);
    return CLI_EXIT_OK;
}

int cli_replay(const struct cli_options *o, const char *id, int list)
{
    struct narration n = {o, NULL, NULL, 0, 0, 0};
    race_side sides[2];
    const race *r;
    int rc;

    if (list)
        return replay_list();
    if ((r = race_find(id)) == NULL)
        return cli_usage_error("no race '%s' to replay (tslock replay --list)",
                               id);
    rc = replay_race(r, &n, sides);
    return rc < 0    ? CLI_EXIT_UNAVAILABLE
           : rc != 0 ? CLI_EXIT_SOFTWARE
                     : CLI_EXIT_OK;
}

/* ------------------------------------------------------ replay --html */

/* A race's two sides, kept for the page. */
struct played {
    const race *r;
    race_side sides[2];
    classroom_step steps[2][RACE_MAX_STEPS];
    char labels[2][128];
    char doc[512];
};

static void played_scene(struct played *p, const char *doc, classroom_scene *sc)
{
    int k, i;

    memset(sc, 0, sizeof(*sc));
    snprintf(p->doc, sizeof(p->doc), "%s#%s", doc, p->r->doc_anchor);
    sc->id = p->r->id;
    sc->title = p->r->title;
    sc->doc = p->doc;
    sc->n_sides = 2;
    for (k = 0; k < 2; k++) {
        race_side *rs = &p->sides[k];
        classroom_side *cs = &sc->sides[k];
        for (i = 0; i < rs->n_steps; i++) {
            classroom_step *st = &p->steps[k][i];
            st->actor = rs->steps[i].actor;
            st->command = rs->steps[i].command;
            st->value = rs->steps[i].value;
            st->note = NULL;
            st->pttl = rs->steps[i].pttl;
            st->clock_ms = rs->steps[i].clock_ms;
        }
        snprintf(p->labels[k], sizeof(p->labels[k]), "%s: %s",
                 k == 0 ? "broken" : "tslock",
                 k == 0 ? p->r->broken : p->r->fixed);
        cs->label = p->labels[k];
        cs->start_ms = rs->start_ms;
        cs->verdict = rs->verdict;
        /* The broken side loses the property; tslock keeps it. */
        cs->broken = k == 0;
        cs->documented = rs->documented;
        cs->mismatch = rs->mismatch;
        cs->mark = rs->mark;
        cs->steps = p->steps[k];
        cs->n_steps = rs->n_steps;
    }
}

/* Write the page of the races played; CLI_EXIT_* */
static int write_page(const struct cli_options *o, struct played *p, size_t n)
{
    classroom_scene *scenes = calloc(n > 0 ? n : 1, sizeof(*scenes));
    const char *doc = o->doc_url != NULL ? o->doc_url : "doc/races.md";
    FILE *f;
    size_t i;
    int rc;

    if (scenes == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    for (i = 0; i < n; i++)
        played_scene(&p[i], doc, &scenes[i]);
    if ((f = fopen(o->html_path, "w")) == NULL) {
        cli_error("cannot write %s: %s", o->html_path, strerror(errno));
        free(scenes);
        return CLI_EXIT_OSERR;
    }
    rc = classroom_write(f, "tslock: the races, replayed",
                         "Each race of doc/races.md, run against a real "
                         "Redis server: the broken scheme beside tslock, "
                         "through the same interleaving.",
                         "tslock replay --html", scenes, n);
    if (fclose(f) != 0 || rc != 0) {
        cli_error("cannot write %s: %s", o->html_path, strerror(errno));
        rc = -1;
    }
    free(scenes);
    return rc != 0 ? CLI_EXIT_OSERR : CLI_EXIT_OK;
}

int cli_replay_html(const struct cli_options *o, char **ids, int n)
{
    struct narration nar = {o, NULL, NULL, 0, 0, 0};
    size_t count = n > 0 ? (size_t)n : n_races, i;
    struct played *p = calloc(count, sizeof(*p));
    int status = CLI_EXIT_OK, rc;

    if (p == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OSERR;
    }
    for (i = 0; i < count; i++) {
        p[i].r = n > 0 ? race_find(ids[i]) : &races[i];
        if (p[i].r == NULL) {
            free(p);
            return cli_usage_error("no race '%s' to replay (tslock replay "
                                   "--list)",
                                   ids[i]);
        }
    }
    for (i = 0; i < count; i++) {
        rc = replay_race(p[i].r, &nar, p[i].sides);
        if (rc < 0) {
            free(p);
            return CLI_EXIT_UNAVAILABLE;
        }
        if (rc != 0)
            status = CLI_EXIT_SOFTWARE;
    }
    /* A race that did not end as documented is drawn all the same, and
     * marked so on the page. */
    rc = write_page(o, p, count);
    free(p);
    return rc != CLI_EXIT_OK ? rc : status;
}
