/* view_shapes.c — the ops of one step in order, with each rank's input and output shapes
 * and dim names; sharded dims (a name with '/', e.g. 4h/t) highlighted and listed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "views.h"

static int has_shapes(const rl_trace_event *e) { return e->shapes != NULL; }

/* One op of one rank, sortable into time order. */
typedef struct {
    double start;
    int stream;
    size_t ev;
} op_ref;

typedef struct {
    op_ref *idx;   /* ops of one rank, in time order */
    int n;
} rank_ops;

static int op_cmp(const void *pa, const void *pb)
{
    const op_ref *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->stream != b->stream)
        return a->stream - b->stream;
    return (a->ev > b->ev) - (a->ev < b->ev);
}

/* Draws a shapes string with sharded dims highlighted; collects their names into
 * sharded (comma-separated, unique). Returns the columns drawn. */
static int draw_shapes(rl_canvas *c, int x, int y, int maxw, const char *shapes, char *sharded, size_t n)
{
    int col = 0, depth = 0;
    const char *p = shapes;
    while (*p && col < maxw) {
        if (*p == '[' || *p == ',' || *p == ']' || depth == 0) {
            if (*p == '[')
                depth++;
            else if (*p == ']')
                depth = depth > 0 ? depth - 1 : 0;
            char ch[2] = { *p, 0 };
            rl_style st = depth == 0 && *p != ']' && *p != ' ' && *p != '-' && *p != '>'
                              ? RL_STYLE(RL_COLOR_BRIGHT_WHITE, RL_COLOR_DEFAULT, RL_ATTR_BOLD)
                              : RL_STYLE_PLAIN;
            if ((unsigned char)*p >= 0x80) { /* a multi-byte character outside a dim */
                const char *q = p + 1;
                while ((*q & 0xC0) == 0x80)
                    q++;
                char tmp[8] = "";
                memcpy(tmp, p, (size_t)(q - p) < 7 ? (size_t)(q - p) : 7);
                col += rl_canvas_text(c, x + col, y, maxw - col, st, tmp);
                p = q;
                continue;
            }
            col += rl_canvas_text(c, x + col, y, maxw - col, st, ch);
            p++;
            continue;
        }
        /* one dim: up to ',' or ']' */
        size_t len = strcspn(p, ",]");
        size_t name_len = strcspn(p, ",]=");
        if (name_len > len)
            name_len = len;
        char dim[128];
        snprintf(dim, sizeof dim, "%.*s", (int)(len < sizeof dim - 1 ? len : sizeof dim - 1), p);
        int is_sharded = memchr(p, '/', name_len) != NULL;
        if (is_sharded) {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(name_len < 63 ? name_len : 63), p);
            if (!strstr(sharded, name) && strlen(sharded) + strlen(name) + 3 < n) {
                if (sharded[0])
                    strcat(sharded, ", ");
                strcat(sharded, name);
            }
        }
        col += rl_canvas_text(c, x + col, y, maxw - col,
                              is_sharded ? RL_STYLE(RL_COLOR_BRIGHT_YELLOW, RL_COLOR_DEFAULT, RL_ATTR_BOLD | RL_ATTR_UNDERLINE)
                                         : RL_STYLE_PLAIN,
                              dim);
        p += len;
    }
    return col;
}

typedef struct { int op, r0, r1; size_t ev; } shape_line; /* r0 < 0: the op's header line */

void rl_tui_view_shapes(rl_canvas *c, int y0, int y1, const rl_tui_model *m, rl_tui_state *s)
{
    const rl_trace *t = m->trace;
    int *steps = NULL;
    int nsteps = rl_tui_distinct_steps(t, has_shapes, &steps);
    if (s->step_idx >= nsteps)
        s->step_idx = nsteps > 0 ? nsteps - 1 : 0;
    if (s->step_idx < 0)
        s->step_idx = 0;
    int step = nsteps > 0 ? steps[s->step_idx] : -1;
    free(steps);

    rank_ops *ro = calloc((size_t)t->nranks, sizeof *ro);
    shape_line *lines = NULL;
    if (!ro)
        return;
    int total = 0;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (e->shapes && (step < 0 || e->tags[RL_TAG_STEP] == step) && e->rank >= 0 && e->rank < t->nranks)
            ro[e->rank].n++, total++;
    }
    int ref = 0; /* the rank with the most ops (the lowest of equals) gives the order */
    for (int r = 0; r < t->nranks; r++)
        if (ro[r].n > ro[ref].n)
            ref = r;
    for (int r = 0; r < t->nranks; r++) {
        ro[r].idx = malloc((size_t)(ro[r].n ? ro[r].n : 1) * sizeof *ro[r].idx);
        if (!ro[r].idx)
            goto done;
        ro[r].n = 0;
    }
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (e->shapes && (step < 0 || e->tags[RL_TAG_STEP] == step) && e->rank >= 0 && e->rank < t->nranks)
            ro[e->rank].idx[ro[e->rank].n++] = (op_ref){ e->vstart, e->stream, i };
    }
    for (int r = 0; r < t->nranks; r++)
        qsort(ro[r].idx, (size_t)ro[r].n, sizeof *ro[r].idx, op_cmp);

    char buf[512];
    int y = y0;
    if (total == 0) {
        rl_canvas_text(c, 1, y + 1, -1, RL_TUI_HILITE, "No op shapes in this trace.");
        rl_canvas_text(c, 1, y + 2, -1, RL_STYLE_PLAIN,
                       "Ops record their tensors' shapes with dim names (x[b=8,h=64] -> y[b=8,4h/t=128]);");
        rl_canvas_text(c, 1, y + 3, -1, RL_STYLE_PLAIN, "this view lists them per op and rank.");
        goto done;
    }
    if (step >= 0)
        snprintf(buf, sizeof buf, "step %d (%d of %d%s) · %d ops in rank %d's order", step,
                 s->step_idx + 1, nsteps, s->printed ? "" : ", n/p: next/previous", ro[ref].n, ref);
    else
        snprintf(buf, sizeof buf, "whole run (no step tags) · %d ops in rank %d's order", ro[ref].n, ref);
    rl_canvas_text(c, 1, y++, c->w - 2, RL_STYLE_PLAIN, buf);
    rl_canvas_text(c, 1, y++, c->w - 2, RL_TUI_DIM,
                   "a dim named with '/' is sharded: 4h/t = 4h split over the t ranks of a group (highlighted)");

    /* lines: per op a header, then ranks grouped where consecutive ranks have the same shapes */
    int nops = ro[ref].n, cap = nops * (1 + t->nranks) + 1, nlines = 0;
    lines = malloc((size_t)cap * sizeof *lines);
    if (!lines)
        goto done;
    for (int op = 0; op < nops; op++) {
        lines[nlines++] = (shape_line){ op, -1, -1, ro[ref].idx[op].ev };
        for (int r = 0; r < t->nranks; r++) {
            if (op >= ro[r].n)
                continue;
            size_t ev = ro[r].idx[op].ev;
            shape_line *last = nlines > 0 ? &lines[nlines - 1] : NULL;
            if (last && last->r0 >= 0 && last->r1 == r - 1 &&
                strcmp(t->ev[last->ev].shapes, t->ev[ev].shapes) == 0 &&
                strcmp(t->ev[last->ev].name, t->ev[ev].name) == 0)
                last->r1 = r;
            else
                lines[nlines++] = (shape_line){ op, r, r, ev };
        }
    }
    int nvis = y1 - y - 1;
    if (nvis < 1)
        nvis = 1;
    if (s->scroll > nlines - nvis)
        s->scroll = nlines - nvis;
    if (s->scroll < 0)
        s->scroll = 0;
    for (int k = s->scroll; k < nlines && y < y1 - 1; k++, y++) {
        const shape_line *ln = &lines[k];
        const rl_trace_event *e = &t->ev[ln->ev];
        if (ln->r0 < 0) {
            char extra[64] = "";
            if (e->phase)
                snprintf(extra, sizeof extra, "  (phase %c)", e->phase);
            if (e->tags[RL_TAG_LAYER] >= 0)
                snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "  layer %d", e->tags[RL_TAG_LAYER]);
            int x = 1 + rl_canvas_printf(c, 1, y, c->w - 2, RL_TUI_TITLE, "%2d. %s", ln->op + 1, e->name);
            rl_canvas_text(c, x, y, c->w - x - 1, RL_TUI_DIM, extra);
            continue;
        }
        char who[64];
        if (ln->r1 > ln->r0)
            snprintf(who, sizeof who, "r%d-%d", ln->r0, ln->r1);
        else
            snprintf(who, sizeof who, "r%d", ln->r0);
        if (strcmp(e->name, t->ev[ro[ref].idx[ln->op].ev].name) != 0)
            snprintf(who + strlen(who), sizeof who - strlen(who), " (%s)", e->name);
        int x = 5;
        x += rl_canvas_text(c, x, y, c->w - x - 1, RL_STYLE(RL_COLOR_CYAN, RL_COLOR_DEFAULT, 0), who) + 2;
        if (x < 14)
            x = 14;
        char sharded[128] = "";
        x += draw_shapes(c, x, y, c->w - x - 1, e->shapes, sharded, sizeof sharded);
        if (sharded[0] && x + 4 < c->w - 1)
            rl_canvas_printf(c, x + 3, y, c->w - x - 4, RL_TUI_HILITE, "sharded: %s", sharded);
    }
    snprintf(buf, sizeof buf, "lines %d-%d of %d%s", nlines ? s->scroll + 1 : 0, s->scroll + (y - y0 - 2), nlines,
             s->printed ? "" : " · ↑↓/jk scroll  PgUp/PgDn page");
    rl_canvas_text(c, 1, y1 - 1, c->w - 2, RL_TUI_DIM, buf);
done:
    for (int r = 0; r < t->nranks; r++)
        free(ro[r].idx);
    free(ro);
    free(lines);
}
