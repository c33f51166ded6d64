/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * classroom.c - writes the race classroom page: the template of
 * tools/class/classroom.html (compiled in as classroom_page.h) with the scenes
 * embedded as JSON where it says so.  The page draws itself from that
 * JSON, so what it shows is exactly what the runs recorded.
 */
#include <string.h>

#include "classroom.h"
#include "cli.h"
#include "classroom_page.h"

/* A JSON string safe inside the page's script element, or null for NULL. */
static void json_str(FILE *f, const char *s)
{
    if (s == NULL)
        fputs("null", f);
    else
        cli_write_json_string(f, s, strlen(s), 1);
}

static void json_num(FILE *f, long long v)
{
    if (v == CLASSROOM_UNKNOWN)
        fputs("null", f);
    else
        fprintf(f, "%lld", v);
}

/* The lanes: every actor, in the order it first acts. */
static void write_lanes(FILE *f, const classroom_side *sd)
{
    int i, j, first = 1;

    fputs("\"lanes\":[", f);
    for (i = 0; i < sd->n_steps; i++) {
        for (j = 0; j < i; j++)
            if (strcmp(sd->steps[j].actor, sd->steps[i].actor) == 0)
                break;
        if (j < i)
            continue;
        if (!first)
            fputc(',', f);
        first = 0;
        json_str(f, sd->steps[i].actor);
    }
    fputs("]", f);
}

static void write_side(FILE *f, const classroom_side *sd)
{
    int i;

    fputs("{\"label\":", f);
    json_str(f, sd->label);
    fputs(",\"verdict\":", f);
    json_str(f, sd->verdict);
    fprintf(f, ",\"broken\":%s,\"documented\":%s,\"mark\":%d,",
            sd->broken ? "true" : "false", sd->documented ? "true" : "false",
            sd->mark);
    fputs("\"mismatch\":", f);
    json_str(f, sd->mismatch);
    fputs(",\"start\":", f);
    json_num(f, sd->start_ms);
    fputc(',', f);
    write_lanes(f, sd);
    fputs(",\"steps\":[", f);
    for (i = 0; i < sd->n_steps; i++) {
        const classroom_step *st = &sd->steps[i];
        fputs(i ? ",\n{\"actor\":" : "\n{\"actor\":", f);
        json_str(f, st->actor);
        fputs(",\"command\":", f);
        json_str(f, st->command);
        fputs(",\"value\":", f);
        json_str(f, st->value);
        fputs(",\"note\":", f);
        json_str(f, st->note);
        fputs(",\"pttl\":", f);
        json_num(f, st->pttl);
        fputs(",\"clock\":", f);
        json_num(f, st->clock_ms);
        fputc('}', f);
    }
    fputs("]}", f);
}

static void write_data(FILE *f, const char *title, const char *intro,
                       const char *source, const classroom_scene *scenes,
                       size_t n)
{
    size_t i;
    int k;

    fputs("{\"title\":", f);
    json_str(f, title);
    fputs(",\"intro\":", f);
    json_str(f, intro);
    fputs(",\"source\":", f);
    json_str(f, source);
    fputs(",\"scenes\":[", f);
    for (i = 0; i < n; i++) {
        const classroom_scene *sc = &scenes[i];
        fputs(i ? ",\n{\"id\":" : "\n{\"id\":", f);
        json_str(f, sc->id);
        fputs(",\"title\":", f);
        json_str(f, sc->title);
        fputs(",\"doc\":", f);
        json_str(f, sc->doc);
        fputs(",\"about\":", f);
        json_str(f, sc->about);
        fputs(",\"sides\":[", f);
        for (k = 0; k < sc->n_sides; k++) {
            if (k)
                fputc(',', f);
            write_side(f, &sc->sides[k]);
        }
        fputs("]}", f);
    }
    fputs("]}\n", f);
}

int classroom_write(FILE *f, const char *title, const char *intro,
                    const char *source, const classroom_scene *scenes, size_t n)
{
    const char *t;
    size_t i;

    for (i = 0; classroom_page[i] != NULL; i++) {
        if (strcmp(classroom_page[i], "@TSLOCK_DATA@\n") == 0)
            write_data(f, title, intro, source, scenes, n);
        else if (strcmp(classroom_page[i], "@TSLOCK_TITLE@\n") == 0) {
            /* The title element: the JSON escapes serve HTML too. */
            for (t = title; *t != '\0'; t++)
                if (*t == '<' || *t == '&')
                    fprintf(f, "&#%d;", *t);
                else
                    fputc(*t, f);
            fputc('\n', f);
        } else
            fputs(classroom_page[i], f);
    }
    fflush(f);
    return ferror(f) ? -1 : 0;
}
