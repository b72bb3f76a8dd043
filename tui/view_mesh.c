/* view_mesh.c — ranks laid out on the device mesh (DP x TP x PP (x CP/EP), innermost dim
 * last as in Megatron's rank order), the selected rank's group in each dim highlighted. */
#include <stdio.h>
#include <string.h>
#include "views.h"

typedef struct {
    int nd;
    const char *names[RL_MESH_MAX];
    int sizes[RL_MESH_MAX];
} mesh_dims;

static void dims_of(const rl_trace *t, mesh_dims *d)
{
    if (t->mesh_ndims > 0) {
        d->nd = t->mesh_ndims;
        for (int i = 0; i < d->nd; i++)
            d->names[i] = t->mesh_names[i], d->sizes[i] = t->mesh_sizes[i];
    } else {
        d->nd = 1;
        d->names[0] = "world";
        d->sizes[0] = t->nranks;
    }
}

/* Coordinates of rank r (innermost dim last). */
static void coords(const mesh_dims *d, int r, int *co)
{
    for (int i = d->nd - 1; i >= 0; i--) {
        co[i] = r % d->sizes[i];
        r /= d->sizes[i];
    }
}

/* The dim in which r differs from the selected rank's coordinates, -1 if none or several. */
static int group_dim(const mesh_dims *d, const int *sel, int r)
{
    int co[RL_MESH_MAX], dim = -1;
    coords(d, r, co);
    for (int i = 0; i < d->nd; i++)
        if (co[i] != sel[i]) {
            if (dim >= 0)
                return -1;
            dim = i;
        }
    return dim;
}


void rl_tui_mesh_move(rl_tui_state *s, const rl_tui_model *m, int dx, int dy)
{
    mesh_dims d;
    dims_of(m->trace, &d);
    int cols = d.sizes[d.nd - 1];
    int r = s->rank + dx + dy * cols;
    if (r >= 0 && r < m->trace->nranks)
        s->rank = r;
}

void rl_tui_view_mesh(rl_canvas *c, int y0, int y1, const rl_tui_model *m, rl_tui_state *s)
{
    const rl_trace *t = m->trace;
    mesh_dims d;
    dims_of(t, &d);
    if (s->rank >= t->nranks)
        s->rank = t->nranks - 1;
    if (s->rank < 0)
        s->rank = 0;
    int sel[RL_MESH_MAX];
    coords(&d, s->rank, sel);
    char buf[512];
    int y = y0, k = 0;
    if (t->mesh_ndims == 0) {
        snprintf(buf, sizeof buf, "no device mesh in this trace (labs record one with rl_ctx_set_mesh); %d ranks in one world group",
                 t->nranks);
    } else {
        k = snprintf(buf, sizeof buf, "mesh ");
        for (int i = 0; i < d.nd && k < (int)sizeof buf; i++)
            k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s=%d", i ? " x " : "", d.names[i], d.sizes[i]);
        if (k < (int)sizeof buf)
            snprintf(buf + k, sizeof buf - (size_t)k, " = %d ranks · rank order: %s innermost", t->nranks, d.names[d.nd - 1]);
    }
    rl_canvas_text(c, 1, y++, c->w - 2, RL_STYLE_PLAIN, buf);

    int cols = d.sizes[d.nd - 1], rows = d.nd >= 2 ? d.sizes[d.nd - 2] : 1, nouter = 1;
    for (int i = 0; i + 2 < d.nd; i++)
        nouter *= d.sizes[i];
    snprintf(buf, sizeof buf, " r%d", t->nranks - 1);
    int cw = (int)strlen(buf) + 2, rlw = d.nd >= 2 ? (int)strlen(d.names[d.nd - 2]) + 5 : 1;
    if (d.nd == 1) { /* one dim: wrap the ranks over as many rows as needed */
        int fit = (c->w - 2 - rlw) / cw;
        if (fit < 1)
            fit = 1;
        if (cols > fit)
            cols = fit, rows = (t->nranks + fit - 1) / fit;
    }
    int bw = rlw + cols * cw, bh = rows + (nouter > 1 ? 2 : 1);
    int per_line = (c->w - 2) / (bw + 2);
    if (per_line < 1)
        per_line = 1;
    int legend_rows = d.nd + 2;
    for (int o = 0; o < nouter; o++) {
        int bx = 1 + (o % per_line) * (bw + 2), by = y + (o / per_line) * (bh + 1);
        if (by + bh > y1 - legend_rows)
            break;
        int yy = by;
        if (nouter > 1) { /* block title: the outer coordinates */
            int rem = o, oc[RL_MESH_MAX], kk = 0;
            for (int i = d.nd - 3; i >= 0; i--)
                oc[i] = rem % d.sizes[i], rem /= d.sizes[i];
            for (int i = 0; i + 2 < d.nd && kk < (int)sizeof buf; i++)
                kk += snprintf(buf + kk, sizeof buf - (size_t)kk, "%s%s=%d", i ? " " : "", d.names[i], oc[i]);
            rl_canvas_text(c, bx, yy++, bw, RL_TUI_TITLE, buf);
        }
        for (int j = 0; j < cols; j++)
            rl_canvas_printf(c, bx + rlw + j * cw, yy, cw, RL_TUI_DIM, " %s%d", d.names[d.nd - 1], j);
        yy++;
        for (int i = 0; i < rows; i++, yy++) {
            if (d.nd >= 2)
                rl_canvas_printf(c, bx, yy, rlw, RL_TUI_DIM, "%s%d", d.names[d.nd - 2], i);
            for (int j = 0; j < cols; j++) {
                int r = (o * rows + i) * cols + j;
                if (r >= t->nranks)
                    break;
                int gd = r == s->rank ? -1 : group_dim(&d, sel, r);
                char mark = r == s->rank ? '*' : gd >= 0 ? d.names[gd][0] : ' ';
                rl_style st = r == s->rank ? RL_STYLE(RL_COLOR_BLACK, RL_COLOR_BRIGHT_YELLOW, RL_ATTR_BOLD)
                              : gd >= 0    ? RL_STYLE(RL_COLOR_BLACK, rl_tui_dim_color(gd), 0)
                                           : RL_STYLE_PLAIN;
                rl_canvas_printf(c, bx + rlw + j * cw, yy, cw - 1, st, "%cr%-*d", mark, cw - 3, r);
            }
        }
    }
    /* legend: the selected rank's group in every dim */
    y = y1 - legend_rows;
    int xx = 1 + rl_canvas_printf(c, 1, y, -1, RL_STYLE(RL_COLOR_BLACK, RL_COLOR_BRIGHT_YELLOW, RL_ATTR_BOLD), "*r%d",
                                  s->rank);
    k = snprintf(buf, sizeof buf, " selected (");
    for (int i = 0; i < d.nd && k < (int)sizeof buf; i++)
        k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s %d", i ? ", " : "", d.names[i], sel[i]);
    if (k < (int)sizeof buf)
        snprintf(buf + k, sizeof buf - (size_t)k, ")%s", s->printed ? "" : " · ←→↑↓/hjkl select a rank");
    rl_canvas_text(c, xx, y++, c->w - xx - 1, RL_STYLE_PLAIN, buf);
    for (int i = 0; i < d.nd && y < y1; i++, y++) {
        int x = 1 + rl_canvas_printf(c, 1, y, -1, RL_STYLE(RL_COLOR_BLACK, rl_tui_dim_color(i), 0), "%c", d.names[i][0]);
        k = snprintf(buf, sizeof buf, " %s group of r%d (size %d):", d.names[i], s->rank, d.sizes[i]);
        int co[RL_MESH_MAX];
        memcpy(co, sel, sizeof co);
        for (int v = 0; v < d.sizes[i] && k < (int)sizeof buf - 8; v++) {
            co[i] = v;
            int r = 0;
            for (int q = 0; q < d.nd; q++)
                r = r * d.sizes[q] + co[q];
            k += snprintf(buf + k, sizeof buf - (size_t)k, " r%d", r);
        }
        rl_canvas_text(c, x, y, c->w - x - 1, RL_STYLE_PLAIN, buf);
    }
}
