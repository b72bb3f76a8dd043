/* view_memory.c — per-rank stacked bars of memory by category (param, grad, optim,
 * activation, comm, other): now (the last sample) and at the peak, in bytes; and each rank's
 * total over the run as a row of eighth blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "views.h"

static rl_glyph mem_glyph(int cat)
{
    static const rl_glyph g[RL_MEM_NCAT] = {
        { 0x2588, 'P' }, { 0x2593, 'G' }, { 0x2592, 'O' }, { 0x2591, 'A' }, { 0x259A, 'C' }, { 0x00B7, 'x' },
    };
    return cat >= 0 && cat < RL_MEM_NCAT ? g[cat] : RL_G_SPACE;
}

static rl_style mem_style(int cat)
{
    static const uint8_t col[RL_MEM_NCAT] = { RL_COLOR_BRIGHT_BLUE, RL_COLOR_BRIGHT_RED, RL_COLOR_MAGENTA,
                                              RL_COLOR_GREEN, RL_COLOR_YELLOW, RL_COLOR_GREY };
    return RL_STYLE(col[cat], RL_COLOR_DEFAULT, 0);
}

typedef struct {
    const rl_mem_sample *now;   /* the last sample (at or before the playhead when it is on) */
    double *hist;               /* memory over the run: the total held in each column (-1: before
                                   the first sample), the largest of the samples in it */
} rank_mem;

static double total_of(const int64_t *v)
{
    double s = 0;
    for (int k = 0; k < RL_MEM_NCAT; k++)
        s += (double)v[k];
    return s;
}

/* Fills each rank's hist over w columns spanning [t0, t1]: the largest total of the samples in a
 * column, or, in a column without one, the last sample's before it. */
static int fill_history(const rl_trace *t, rank_mem *rm, int w, double t0, double t1)
{
    size_t cells = (size_t)t->nranks * (size_t)w; /* per rank and column: the last sample's time and total */
    double *last_t = malloc(cells * sizeof *last_t), *last_v = malloc(cells * sizeof *last_v);
    int ok = last_t && last_v;
    for (int r = 0; r < t->nranks && ok; r++) {
        ok = (rm[r].hist = malloc((size_t)w * sizeof *rm[r].hist)) != NULL;
        for (int x = 0; ok && x < w; x++)
            rm[r].hist[x] = -1;
    }
    for (size_t i = 0; ok && i < cells; i++)
        last_t[i] = last_v[i] = -1;
    for (size_t i = 0; ok && i < t->nmem; i++) { /* (one pass over the samples, every rank at once) */
        const rl_mem_sample *ms = &t->mem[i];
        if (ms->rank < 0 || ms->rank >= t->nranks)
            continue;
        int x = t1 > t0 ? (int)((ms->vtime - t0) / (t1 - t0) * w) : 0;
        x = x < 0 ? 0 : x >= w ? w - 1 : x;
        double v = total_of(ms->current), *h = rm[ms->rank].hist;
        size_t k = (size_t)ms->rank * (size_t)w + (size_t)x;
        h[x] = v > h[x] ? v : h[x];
        if (ms->vtime >= last_t[k])
            last_t[k] = ms->vtime, last_v[k] = v;
    }
    for (int r = 0; r < t->nranks && ok; r++) /* (a column without samples holds what the one before ended with) */
        for (int x = 1; x < w; x++) {
            double *h = rm[r].hist, *lv = last_v + (size_t)r * (size_t)w;
            if (h[x] < 0 && h[x - 1] >= 0)
                h[x] = lv[x - 1], lv[x] = lv[x - 1];
        }
    free(last_t);
    free(last_v);
    return ok ? 0 : -1;
}

/* One row of memory over time: each column's height in 8 levels from lo (the lowest) to hi (the
 * full block): the changes show even when most memory is held throughout; nothing held, blank. */
static void draw_history(rl_canvas *c, int x, int y, int w, const double *h, double lo, double hi)
{
    static const char ascii[] = "._-~=+*#";
    for (int k = 0; k < w; k++) {
        if (h[k] <= 0)
            continue;
        int lv = hi > lo ? 1 + (int)((h[k] - lo) / (hi - lo) * 7 + 0.5) : 1;
        lv = lv < 1 ? 1 : lv > 8 ? 8 : lv;
        rl_glyph g = RL_GLYPH(0x2580 + lv, ascii[lv - 1]); /* ▁ .. █ */
        rl_canvas_put(c, x + k, y, g, RL_STYLE(RL_COLOR_CYAN, RL_COLOR_DEFAULT, 0));
    }
}

static void draw_bar(rl_canvas *c, int x, int y, int w, const int64_t *v, double scale)
{
    double cum = 0;
    int done = 0;
    for (int k = 0; k < RL_MEM_NCAT; k++) {
        cum += (double)v[k];
        int end = scale > 0 ? (int)(cum / scale * w + 0.5) : 0;
        if (end > w)
            end = w;
        if (v[k] > 0 && end == done && done < w)
            end = done + 1; /* a category present gets at least one cell */
        for (; done < end; done++)
            rl_canvas_put(c, x + done, y, mem_glyph(k), mem_style(k));
    }
}

/* Whether rank r shows exactly what rank q shows (then the view lists them as one row). */
static int same_rank(const rl_trace *t, const rank_mem *rm, int w, int r, int q)
{
    if (memcmp(t->peak[r], t->peak[q], sizeof t->peak[r]) || memcmp(rm[r].hist, rm[q].hist, (size_t)w * sizeof *rm[r].hist))
        return 0;
    if (!rm[r].now || !rm[q].now)
        return rm[r].now == rm[q].now;
    return !memcmp(rm[r].now->current, rm[q].now->current, sizeof rm[r].now->current) &&
           rm[r].now->vtime == rm[q].now->vtime;
}

void rl_tui_view_memory(rl_canvas *c, int y0, int y1, const rl_tui_model *m, rl_tui_state *s)
{
    const rl_trace *t = m->trace;
    rank_mem *rm = calloc((size_t)t->nranks, sizeof *rm);
    if (!rm)
        return;
    const rl_mem_sample *top = NULL; /* the largest sample of all: a transient when above the peaks */
    double lo = -1, hi = 0; /* the range of the rows over time (every sample's), shared so that ranks compare */
    for (size_t i = 0; i < t->nmem; i++) {
        const rl_mem_sample *ms = &t->mem[i];
        if (ms->rank < 0 || ms->rank >= t->nranks)
            continue;
        double v = total_of(ms->current);
        if (v > 0) /* (nothing held yet, or any more: drawn blank, out of the range) */
            lo = lo < 0 || v < lo ? v : lo, hi = v > hi ? v : hi;
        rank_mem *r = &rm[ms->rank];
        if ((!r->now || ms->vtime >= r->now->vtime) && (!s->play_on || ms->vtime <= s->playhead))
            r->now = ms; /* with the playhead: the last sample at or before it */
        if (!top || total_of(ms->current) > total_of(top->current))
            top = ms;
    }
    /* the scale: the largest bar drawn (a rank's sample or its account's peaks) */
    double scale = 0, peaks_max = 0;
    int any = 0;
    for (int r = 0; r < t->nranks; r++) {
        double a = rm[r].now ? total_of(rm[r].now->current) : 0, b = total_of(t->peak[r]);
        scale = a > scale ? a : scale;
        scale = b > scale ? b : scale;
        peaks_max = b > peaks_max ? b : peaks_max;
        any |= rm[r].now != NULL || b > 0;
    }
    if (s->rank >= t->nranks)
        s->rank = t->nranks - 1;
    if (s->rank < 0)
        s->rank = 0;
    char buf[512], b1[32], b2[32], b3[32];
    int y = y0;
    if (!any) {
        rl_canvas_text(c, 1, y + 1, -1, RL_TUI_HILITE, "No memory figures in this trace.");
        rl_canvas_text(c, 1, y + 2, -1, RL_STYLE_PLAIN,
                       "Runs record each rank's memory account (param, grad, optim, activation, comm)");
        rl_canvas_text(c, 1, y + 3, -1, RL_STYLE_PLAIN, "after every op that changes it; this view stacks it per rank.");
        free(rm);
        return;
    }
    snprintf(buf, sizeof buf, "now: %s · peak: the account's, per category · full bar = %s · over time: %s – %s",
             s->play_on ? "at the playhead" : "the last sample",
             rl_tui_fmt_bytes(scale, b1, sizeof b1), rl_tui_fmt_time(m->t_min, b2, sizeof b2),
             rl_tui_fmt_time(m->t_max, b3, sizeof b3));
    rl_canvas_text(c, 1, y++, c->w - 2, RL_STYLE_PLAIN, buf);

    int lw = 13, valw = 26, barw = c->w - lw - valw - 2;
    if (barw < 8)
        barw = 8;
    if (fill_history(t, rm, barw, m->t_min, m->t_max)) {
        rl_canvas_text(c, 1, y, -1, RL_TUI_HILITE, "out of memory");
        goto done;
    }
    int nvis = (y1 - y - 4) / 3;
    if (nvis < 1)
        nvis = 1;
    /* rows: runs of ranks that show the same figures, from the one holding the selected rank */
    int first = s->rank;
    while (first > 0 && same_rank(t, rm, barw, first, first - 1))
        first--;
    int shown = 0, r = first;
    for (; r < t->nranks && shown < nvis; shown++) {
        int last = r;
        while (last + 1 < t->nranks && same_rank(t, rm, barw, last + 1, r))
            last++;
        const rank_mem *q = &rm[r];
        int sel = s->rank >= r && s->rank <= last && !s->printed;
        char who[32];
        if (last > r)
            snprintf(who, sizeof who, "r%d-%d", r, last);
        else
            snprintf(who, sizeof who, "r%d", r);
        rl_canvas_printf(c, 0, y, lw, sel ? RL_TUI_HILITE : RL_STYLE_PLAIN, "%c%-6s now", sel ? '>' : ' ', who);
        if (q->now) {
            draw_bar(c, lw, y, barw, q->now->current, scale);
            rl_canvas_printf(c, lw + barw + 1, y, valw, RL_STYLE_PLAIN, "%10s at %s",
                             rl_tui_fmt_bytes(total_of(q->now->current), b1, sizeof b1),
                             rl_tui_fmt_time(q->now->vtime, b2, sizeof b2));
        } else {
            rl_canvas_text(c, lw, y, barw, RL_TUI_DIM, "(no samples yet)");
        }
        y++;
        rl_canvas_text(c, 0, y, lw, sel ? RL_TUI_HILITE : RL_STYLE_PLAIN, "       peak");
        draw_bar(c, lw, y, barw, t->peak[r], scale);
        rl_canvas_printf(c, lw + barw + 1, y, valw, RL_STYLE_PLAIN, "%10s (categories)",
                         rl_tui_fmt_bytes(total_of(t->peak[r]), b1, sizeof b1));
        y++;
        rl_canvas_text(c, 0, y, lw, sel ? RL_TUI_HILITE : RL_STYLE_PLAIN, "   over time");
        draw_history(c, lw, y, barw, q->hist, lo, hi);
        rl_tui_play_marks(c, lw, y, y + 1, barw, m->t_min, m->t_max, s);
        if (lo >= 0)
            rl_canvas_printf(c, lw + barw + 1, y, valw, RL_TUI_DIM, "%s – %s", rl_tui_fmt_bytes(lo, b1, sizeof b1),
                             rl_tui_fmt_bytes(hi, b2, sizeof b2));
        y++;
        r = last + 1;
    }
    if (r < t->nranks)
        rl_canvas_printf(c, 0, y - 1, lw, RL_TUI_DIM, " +%d ranks", t->nranks - r);
    if (top && total_of(top->current) > peaks_max && y < y1) { /* e.g. building the model, before the step */
        snprintf(buf, sizeof buf, "a transient outside the account's peaks: r%d held %s at %s (e.g. while building "
                 "the model, before the measured step)", top->rank, rl_tui_fmt_bytes(total_of(top->current), b1, sizeof b1),
                 rl_tui_fmt_time(top->vtime, b2, sizeof b2));
        rl_canvas_text(c, 1, y++, c->w - 2, RL_TUI_DIM, buf);
    }
    y++;
    int x = 1;
    for (int k = 0; k < RL_MEM_NCAT && y < y1; k++) {
        rl_canvas_put(c, x, y, mem_glyph(k), mem_style(k));
        x += 2 + rl_canvas_text(c, x + 2, y, -1, RL_STYLE_PLAIN, rl_mem_cat_name((rl_mem_cat)k)) + 2;
    }
    if (!s->printed)
        rl_canvas_text(c, x, y, c->w - x - 1, RL_TUI_DIM, "│ ↑↓/jk rank");
    y++;
    size_t k = (size_t)snprintf(buf, sizeof buf, "r%d peaks:", s->rank);
    for (int cat = 0; cat < RL_MEM_NCAT && k < sizeof buf; cat++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s %s %s", cat ? "," : "", rl_mem_cat_name((rl_mem_cat)cat),
                              rl_tui_fmt_bytes((double)t->peak[s->rank][cat], b1, sizeof b1));
    if (y < y1)
        rl_canvas_text(c, 1, y, c->w - 2, RL_STYLE_PLAIN, buf);
done:
    for (int q = 0; q < t->nranks; q++)
        free(rm[q].hist);
    free(rm);
}
