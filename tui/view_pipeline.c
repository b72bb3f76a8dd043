/* view_pipeline.c — stage x time grid of forward (F), backward (B) and weight-gradient (W)
 * cells with micro-batch numbers; idle time (the bubble) shaded; the measured bubble
 * fraction beside the formula (p-1)/(m+p-1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline.h"
#include "views.h"

static int is_pipeline_event(const rl_trace_event *e)
{
    return e->phase == 'F' || e->phase == 'B' || e->phase == 'W';
}

/* A schedule op's compute: comm inside it (TP all-reduces, sends) is neither a cell nor busy. */
static int is_op_compute(const rl_trace_event *e) { return is_pipeline_event(e) && e->cat == RL_CAT_COMPUTE; }

/* An event placed for merging into cells: sorted by row, then start. */
typedef struct { int row; double start; size_t ev; } cell_ev;

static int cell_cmp(const void *pa, const void *pb)
{
    const cell_ev *a = pa, *b = pb;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

/* One op's cell: consecutive events of a row with the same phase, micro-batch and chunk. */
static int same_op(const rl_trace_event *a, const rl_trace_event *b)
{
    return a->phase == b->phase && a->tags[RL_TAG_MICROBATCH] == b->tags[RL_TAG_MICROBATCH] &&
           a->tags[RL_TAG_CHUNK] == b->tags[RL_TAG_CHUNK];
}

/* An op's cell colours: its phase's; an odd chunk (interleaved) in a second hue, underlined,
 * so chunk 0 and chunk 1 of a stage are told apart even where the cell is too narrow for F3.1. */
static rl_style phase_style(char phase, int chunk)
{
    int odd = chunk > 0 && chunk % 2;
    int col = phase == 'F' ? (odd ? RL_COLOR_BLUE : RL_COLOR_CYAN)
            : phase == 'B' ? (odd ? RL_COLOR_YELLOW : RL_COLOR_GREEN) : (odd ? RL_COLOR_RED : RL_COLOR_MAGENTA);
    return RL_STYLE(odd && phase != 'B' ? RL_COLOR_WHITE : RL_COLOR_BLACK, col, odd ? RL_ATTR_UNDERLINE : 0);
}

static rl_glyph phase_fill(char phase)
{
    if (phase == 'F')
        return RL_GLYPH(0x2500, '>'); /* ─ */
    if (phase == 'B')
        return RL_GLYPH(0x2550, '<'); /* ═ */
    return RL_GLYPH(0x2504, 'w');     /* ┄ */
}

/* Number of distinct non-negative values (< 2^30) of one tag over the selected events. */
static int count_distinct(const rl_trace *t, const unsigned char *sel, rl_tag tag)
{
    int n = 0, cap = 0, *v = NULL;
    for (size_t i = 0; i < t->n; i++) {
        int x = t->ev[i].tags[tag], seen = 0;
        if (!sel[i] || x < 0)
            continue;
        for (int k = 0; k < n && !seen; k++)
            seen = v[k] == x;
        if (seen)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            int *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv)
                break;
            v = nv;
        }
        v[n++] = x;
    }
    free(v);
    return n;
}

typedef struct { int rank, stage; double busy; } pipe_row;

static int row_cmp(const void *pa, const void *pb)
{
    const pipe_row *a = pa, *b = pb;
    if (a->stage != b->stage)
        return a->stage < b->stage ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The step's tick table (rl_pp_print_ticks), from line s->scroll on. */
static void draw_ticks(rl_canvas *c, int y0, int y1, const rl_trace *t, int step, rl_tui_state *s)
{
    char err[256] = "", *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rl_pp_schedule *ps = f ? rl_pp_schedule_from_trace(t, step, err, sizeof err) : NULL;
    int rc = ps ? rl_pp_print_ticks(ps, f, err, sizeof err) : -1;
    rl_pp_schedule_free(ps);
    if (f)
        fclose(f);
    int y = y0;
    char head[160];
    snprintf(head, sizeof head, "%s %d: one op per tick, messages free (PyTorch's schedule dump) · t: time grid",
             step >= 0 ? "step" : "whole run", step);
    rl_canvas_text(c, 1, y++, c->w - 2, RL_STYLE_PLAIN, step >= 0 ? head : strchr(head, ':') + 2);
    if (rc || !text) {
        rl_canvas_text(c, 1, y, c->w - 2, RL_TUI_HILITE, err[0] ? err : "out of memory");
        free(text);
        return;
    }
    /* the header line stays; the ticks scroll under it */
    int nlines = 0;
    for (const char *q = text; *q; q++)
        nlines += *q == '\n';
    if (s->scroll > nlines - 2)
        s->scroll = nlines > 2 ? nlines - 2 : 0;
    int line = 0;
    for (char *q = text, *e; *q && y < y1; q = e + 1, line++) {
        e = strchr(q, '\n');
        if (!e)
            break;
        *e = 0;
        if (line == 0 || line > s->scroll)
            rl_canvas_text(c, 1, y++, c->w - 2, line == 0 ? RL_TUI_HILITE : RL_STYLE_PLAIN, q);
    }
    free(text);
}

void rl_tui_view_pipeline(rl_canvas *c, int y0, int y1, const rl_tui_model *m, rl_tui_state *s)
{
    const rl_trace *t = m->trace;
    int *steps = NULL;
    int nsteps = rl_tui_distinct_steps(t, is_pipeline_event, &steps);
    if (s->step_idx >= nsteps)
        s->step_idx = nsteps > 0 ? nsteps - 1 : 0;
    if (s->step_idx < 0)
        s->step_idx = 0;
    int step = nsteps > 0 ? steps[s->step_idx] : -1;
    free(steps);

    unsigned char *sel = calloc(t->n ? t->n : 1, 1);
    int *row_of = malloc((size_t)t->nranks * sizeof *row_of);
    pipe_row *rows = calloc((size_t)t->nranks, sizeof *rows);
    if (!sel || !row_of || !rows) {
        rl_canvas_text(c, 1, y0, -1, RL_TUI_HILITE, "out of memory");
        goto done;
    }
    double T0 = INFINITY, T1 = -INFINITY;
    size_t nsel = 0;
    for (int r = 0; r < t->nranks; r++)
        row_of[r] = -1;
    int nrows = 0;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (!is_op_compute(e) || (step >= 0 && e->tags[RL_TAG_STEP] != step) || e->rank < 0 ||
            e->rank >= t->nranks)
            continue;
        sel[i] = 1;
        nsel++;
        if (e->vstart < T0)
            T0 = e->vstart;
        if (e->vend > T1)
            T1 = e->vend;
        if (row_of[e->rank] < 0) {
            row_of[e->rank] = nrows;
            rows[nrows++] = (pipe_row){ e->rank, e->tags[RL_TAG_STAGE] >= 0 ? e->tags[RL_TAG_STAGE] : e->rank, 0 };
        }
    }
    if (nsel == 0) {
        rl_canvas_text(c, 1, y0 + 1, -1, RL_TUI_HILITE, "No pipeline events in this trace.");
        rl_canvas_text(c, 1, y0 + 2, -1, RL_STYLE_PLAIN,
                       "Pipeline runs (lab 30.4) tag their ops with phase F/B/W, micro-batch and stage;");
        rl_canvas_text(c, 1, y0 + 3, -1, RL_STYLE_PLAIN, "this view draws them as a stage x time grid.");
        goto done;
    }
    if (s->ticks) {
        draw_ticks(c, y0, y1, t, step, s);
        goto done;
    }
    if (T1 <= T0)
        T1 = T0 + 1e-9;
    qsort(rows, (size_t)nrows, sizeof *rows, row_cmp);
    for (int k = 0; k < nrows; k++)
        row_of[rows[k].rank] = k;

    int p = count_distinct(t, sel, RL_TAG_STAGE), mb = count_distinct(t, sel, RL_TAG_MICROBATCH);
    int v = count_distinct(t, sel, RL_TAG_CHUNK);
    if (p == 0)
        p = nrows;
    if (v < 1)
        v = 1;

    char label[48], buf[512], a[32], b[32];
    snprintf(label, sizeof label, " stage %d r%d ", rows[nrows - 1].stage, t->nranks - 1);
    int lw = (int)strlen(label);
    int plot_x = lw, plot_w = c->w - lw - 1;
    /* the window: 1/2^zoom of the step from pipe_from on (+ - zoom, ← → pan) */
    int zoom = s->pipe_zoom < 0 ? 0 : s->pipe_zoom > 6 ? 6 : s->pipe_zoom;
    double frac = 1.0 / (1 << zoom), from = s->pipe_from < 0 ? 0 : s->pipe_from > 1 - frac ? 1 - frac : s->pipe_from;
    double W0 = T0 + from * (T1 - T0), W1 = W0 + frac * (T1 - T0);
    double dt = (W1 - W0) / plot_w;
    int y = y0;
    char span[96], a2[32], b2[32];
    if (zoom) /* (the window of the step, else the step) */
        snprintf(span, sizeof span, "zoom x%d: %s – %s of %s – %s", 1 << zoom, rl_tui_fmt_time(W0, a, sizeof a),
                 rl_tui_fmt_time(W1, b, sizeof b), rl_tui_fmt_time(T0, a2, sizeof a2), rl_tui_fmt_time(T1, b2, sizeof b2));
    else
        snprintf(span, sizeof span, "%s – %s", rl_tui_fmt_time(T0, a, sizeof a), rl_tui_fmt_time(T1, b, sizeof b));
    if (step >= 0)
        snprintf(buf, sizeof buf, "step %d (%d of %d%s) · %s", step, s->step_idx + 1, nsteps,
                 s->printed || zoom ? "" : ", n/p: next/previous", span);
    else
        snprintf(buf, sizeof buf, "whole run (events carry no step tag) · %s", span);
    rl_canvas_text(c, 1, y++, c->w - 2, RL_STYLE_PLAIN, buf);
    rl_tui_draw_axis(c, plot_x, y++, plot_w, W0, W1);

    int narration = s->play_on ? (y1 - y - 5 > 4 ? 3 : 1) : 0;
    int nvis = y1 - y - 5 - narration;
    if (nvis < 1)
        nvis = 1;
    int ygrid = y;
    for (int k = 0; k < nrows && k < nvis; k++) {
        snprintf(label, sizeof label, " stage %d r%d", rows[k].stage, rows[k].rank);
        rl_canvas_text(c, 0, ygrid + k, lw, RL_STYLE_PLAIN, label);
        rl_canvas_fill(c, plot_x, ygrid + k, plot_w, 1, RL_G_LIGHT, RL_TUI_DIM);
    }
    cell_ev *idx = malloc((nsel ? nsel : 1) * sizeof *idx);
    size_t ni = 0;
    if (!idx) {
        rl_canvas_text(c, 1, y0, -1, RL_TUI_HILITE, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < t->n; i++)
        if (sel[i]) {
            const rl_trace_event *e = &t->ev[i];
            double s0 = e->vstart > T0 ? e->vstart : T0, s1 = e->vend < T1 ? e->vend : T1;
            if (s1 > s0)
                rows[row_of[e->rank]].busy += s1 - s0;
            idx[ni++] = (cell_ev){ row_of[e->rank], e->vstart, i };
        }
    qsort(idx, ni, sizeof *idx, cell_cmp);
    for (size_t i = 0, j; i < ni; i = j) { /* one cell per op: its sub-ops merged */
        const rl_trace_event *e = &t->ev[idx[i].ev];
        double end = e->vend;
        for (j = i + 1; j < ni && idx[j].row == idx[i].row && same_op(&t->ev[idx[j].ev], e); j++)
            end = t->ev[idx[j].ev].vend > end ? t->ev[idx[j].ev].vend : end;
        int k = row_of[e->rank];
        if (k >= nvis)
            continue;
        if (end <= W0 || e->vstart >= W1)
            continue; /* (outside the window) */
        int x0 = (int)lround((e->vstart - W0) / dt), x1 = (int)lround((end - W0) / dt);
        x0 = x0 < 0 ? 0 : x0;
        if (x1 <= x0)
            x1 = x0 + 1;
        if (x1 > plot_w)
            x1 = plot_w;
        rl_style st = phase_style(e->phase, e->tags[RL_TAG_CHUNK]);
        rl_canvas_fill(c, plot_x + x0, ygrid + k, x1 - x0, 1, phase_fill(e->phase), st);
        char lab[32];
        int mbt = e->tags[RL_TAG_MICROBATCH], ch = e->tags[RL_TAG_CHUNK];
        if (mbt >= 0 && v > 1 && ch >= 0)
            snprintf(lab, sizeof lab, "%c%d.%d", e->phase, mbt, ch);
        else if (mbt >= 0)
            snprintf(lab, sizeof lab, "%c%d", e->phase, mbt);
        else
            snprintf(lab, sizeof lab, "%c", e->phase);
        if ((int)strlen(lab) > x1 - x0)
            lab[x1 - x0 > 1 && strchr(lab, '.') && strchr(lab, '.') - lab <= x1 - x0 ? strchr(lab, '.') - lab : 1] = 0;
        st.attr |= RL_ATTR_BOLD;
        rl_canvas_text(c, plot_x + x0, ygrid + k, x1 - x0, st, lab);
    }
    free(idx);
    y = ygrid + (nrows < nvis ? nrows : nvis);
    rl_tui_play_marks(c, plot_x, ygrid, y, plot_w, W0, W1, s);
    if (nrows > nvis)
        rl_canvas_printf(c, 0, y - 1, lw, RL_TUI_DIM, " +%d more", nrows - nvis);

    double busy = 0;
    for (int k = 0; k < nrows; k++)
        busy += rows[k].busy;
    double measured = 1 - busy / (nrows * (T1 - T0));
    if (measured < 0)
        measured = 0;
    y++;
    double formula = (double)(p - 1) / (v * mb + p - 1);
    if (v > 1)
        snprintf(buf, sizeof buf,
                 "bubble: measured %.1f%%   formula (p-1)/(v·m+p-1) = %d/%d = %.1f%%", 100 * measured, p - 1,
                 v * mb + p - 1, 100 * formula);
    else
        snprintf(buf, sizeof buf,
                 "bubble: measured %.1f%%   formula (p-1)/(m+p-1) = %d/%d = %.1f%%", 100 * measured, p - 1,
                 mb + p - 1, 100 * formula);
    rl_canvas_text(c, 1, y++, c->w - 2, RL_TUI_HILITE, buf);
    if (v > 1)
        snprintf(buf, sizeof buf, "p=%d stages, m=%d micro-batches, v=%d chunks per stage · measured = idle share of the grid",
                 p, mb, v);
    else
        snprintf(buf, sizeof buf, "p=%d stages, m=%d micro-batches · measured = idle share of the grid above", p, mb);
    rl_canvas_text(c, 1, y++, c->w - 2, RL_STYLE_PLAIN, buf);
    int x = 1;
    static const char phases[] = { 'F', 'B', 'W' };
    static const char *const names[] = { "forward", "backward", "weight grad" };
    for (int k = 0; k < 3; k++) {
        rl_style st = phase_style(phases[k], 0);
        rl_canvas_printf(c, x, y, 3, st, "%c0", phases[k]);
        rl_canvas_put(c, x + 2, y, phase_fill(phases[k]), st);
        x += 4 + rl_canvas_text(c, x + 4, y, -1, RL_STYLE_PLAIN, names[k]) + 2;
    }
    rl_canvas_put(c, x, y, RL_G_LIGHT, RL_TUI_DIM);
    x += 2 + rl_canvas_text(c, x + 2, y, -1, RL_STYLE_PLAIN, "bubble") + 2;
    rl_canvas_text(c, x, y, c->w - x - 1, RL_TUI_DIM,
                   v > 1 ? "│ F3.1 = micro-batch 3, chunk 1 (underlined)" : "│ number = micro-batch");
    rl_tui_draw_narration(c, y + 1, y1 - y - 1, m, s);
done:
    free(sel);
    free(row_of);
    free(rows);
}
