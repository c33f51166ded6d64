/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * demo_svg.c - tslock demo --svg: the rounds as a timeline.  One panel
 * per scheme, one lane per worker, one bar per hold on a common time
 * axis; overlaps get a red outline, holds past their lease red hatching,
 * and a hold whose write the fenced resource refused a black cross.
 * The file is self-contained (inline style, no fonts or scripts) and
 * every bar is one line, `<rect class="hold ...">`, inside its panel's
 * `<g id="scheme-N">`, so a script can count them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "demo.h"

#define LEFT      40  /* room for the lane labels */
#define PLOT_W    900 /* the time axis, in px */
#define LANE_H    10
#define BAR_H     8
#define TITLE_H   20
#define PANEL_GAP 12
#define AXIS_H    24

/* The last hold's end, so a pause past the round still fits. */
static int64_t time_span(const struct demo_config *cfg)
{
    int64_t span = cfg->duration_ms;
    int s, i, k;

    for (s = 0; s < DEMO_N_SCHEMES; s++)
        for (i = 0; i < cfg->workers; i++) {
            const struct demo_lane *l = &cfg->timeline->lane[s][i];
            for (k = 0; k < l->n; k++)
                if (l->ev[k].end_ms > span)
                    span = l->ev[k].end_ms;
        }
    return span;
}

/* A tick step giving at most ten ticks: 1, 2 or 5 times a power of 10. */
static int64_t tick_step(int64_t span)
{
    int64_t step = 1;

    for (;;) {
        if (span / step <= 10)
            return step;
        if (span / (step * 2) <= 10)
            return step * 2;
        if (span / (step * 5) <= 10)
            return step * 5;
        step *= 10;
    }
}

static void write_head(FILE *f, int width, int height)
{
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\">\n"
            "<style>text{font:11px sans-serif}.title{font-weight:bold}"
            ".tick{stroke:#ddd}.hold{fill:#4a8}"
            ".past{fill:url(#hatch)}.overlap{stroke:#d00;stroke-width:1.5}"
            ".refused{stroke:#000}.x{stroke:#000;stroke-width:1.5}"
            "</style>\n"
            "<defs><pattern id=\"hatch\" width=\"4\" height=\"4\" "
            "patternUnits=\"userSpaceOnUse\" "
            "patternTransform=\"rotate(45)\"><rect width=\"4\" height=\"4\" "
            "fill=\"#4a8\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"4\" "
            "stroke=\"#d00\" stroke-width=\"2\"/></pattern></defs>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
            width, height, width, height);
}

/* The time axis on top, its grid lines running through every panel. */
static void write_axis(FILE *f, int64_t span, int height)
{
    int64_t step = tick_step(span), t;

    fputs("<g id=\"axis\">\n", f);
    for (t = 0; t <= span; t += step) {
        double x = LEFT + (double)t * PLOT_W / (double)span;
        fprintf(f,
                "<line class=\"tick\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
                "y2=\"%d\"/><text x=\"%.1f\" y=\"14\" "
                "text-anchor=\"middle\">%" PRId64 " ms</text>\n",
                x, AXIS_H - 6, x, height - 30, x, t);
    }
    fputs("</g>\n", f);
}

/* The labels are ours, but escape them: one '&' would break the XML. */
static void write_escaped(FILE *f, const char *text)
{
    for (; *text != '\0'; text++) {
        if (*text == '&')
            fputs("&amp;", f);
        else if (*text == '<')
            fputs("&lt;", f);
        else if (*text == '>')
            fputs("&gt;", f);
        else
            fputc(*text, f);
    }
}

static void write_bar(FILE *f, const struct demo_event *ev, double scale, int y)
{
    double x = LEFT + ev->start_ms * scale;
    double w = (ev->end_ms - ev->start_ms) * scale;

    if (w < 0.5)
        w = 0.5;
    fprintf(f,
            "<rect class=\"hold%s%s%s\" x=\"%.1f\" y=\"%d\" "
            "width=\"%.1f\" height=\"%d\"/>\n",
            ev->flags & DEMO_EV_PAST_LEASE ? " past" : "",
            ev->flags & DEMO_EV_OVERLAP ? " overlap" : "",
            ev->flags & DEMO_EV_REFUSED ? " refused" : "", x, y, w, BAR_H);
    /* A cross where the write was refused: at the end of the bar. */
    if (ev->flags & DEMO_EV_REFUSED)
        fprintf(f, "<path class=\"x\" d=\"M%.1f %dl6 8m0-8l-6 8\"/>\n",
                x + w - 3, y);
}

/* One scheme: its title, then one lane per worker; returns its height. */
static int write_panel(FILE *f, const struct demo_config *cfg, int s,
                       const char *label, const struct demo_row *row,
                       double scale, int y)
{
    int i, k;
    long dropped = 0;

    fprintf(f, "<g id=\"scheme-%d\">\n", s + 1);
    for (i = 0; i < cfg->workers; i++)
        dropped += cfg->timeline->lane[s][i].dropped;
    fprintf(f, "<text class=\"title\" x=\"0\" y=\"%d\">", y + 14);
    write_escaped(f, label);
    fprintf(f, ": %ld holds, %ld overlaps, %ld past lease%s</text>\n",
            row->holds, row->overlaps, row->past_lease,
            dropped > 0 ? " (some holds not drawn)" : "");
    y += TITLE_H;
    for (i = 0; i < cfg->workers; i++, y += LANE_H) {
        const struct demo_lane *l = &cfg->timeline->lane[s][i];
        fprintf(f, "<text x=\"0\" y=\"%d\">w%d</text>\n", y + BAR_H, i);
        for (k = 0; k < l->n; k++)
            write_bar(f, &l->ev[k], scale, y);
    }
    fputs("</g>\n", f);
    return TITLE_H + cfg->workers * LANE_H + PANEL_GAP;
}

/* One legend entry: a sample bar (and cross) and its text. */
static void write_key(FILE *f, int x, const char *cls, const char *text)
{
    fprintf(f,
            "<rect class=\"%s\" x=\"%d\" y=\"0\" width=\"20\" "
            "height=\"8\"/>",
            cls, x);
    if (strstr(cls, "refused") != NULL)
        fprintf(f, "<path class=\"x\" d=\"M%d 0l6 8m0-8l-6 8\"/>", x + 14);
    fprintf(f, "<text x=\"%d\" y=\"8\">%s</text>", x + 24, text);
}

static void write_legend(FILE *f, int y)
{
    fprintf(f, "<g id=\"legend\" transform=\"translate(%d,%d)\">", LEFT, y);
    write_key(f, 0, "hold", "hold: lock taken to released");
    write_key(f, 200, "hold overlap", "overlap: two holders in lease");
    write_key(f, 410, "hold past", "still inside past its lease");
    write_key(f, 610, "hold past refused", "write refused: stale fence");
    fputs("</g>\n", f);
}

int demo_write_svg(FILE *f, const struct demo_config *cfg,
                   const char *const *labels, const struct demo_row *rows)
{
    int64_t span = time_span(cfg);
    double scale = (double)PLOT_W / (double)span;
    int panel_h = TITLE_H + cfg->workers * LANE_H + PANEL_GAP;
    int height = AXIS_H + DEMO_N_SCHEMES * panel_h + 30, y = AXIS_H, s;

    write_head(f, LEFT + PLOT_W + 20, height);
    write_axis(f, span, height);
    for (s = 0; s < DEMO_N_SCHEMES; s++)
        y += write_panel(f, cfg, s, labels[s], &rows[s], scale, y);
    write_legend(f, y + 4);
    fputs("</svg>\n", f);
    return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
