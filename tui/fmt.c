/* fmt.c — number formatting and styles shared by the views. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mem.h"
#include "views.h"

char *rl_tui_fmt_time(double s, char *buf, size_t n)
{
    static const char *const units[] = { "ns", "µs", "ms", "s" };
    double v = fabs(s) * 1e9;
    int u = 0;
    while (v >= 999.5 && u < 3) {
        v /= 1000;
        u++;
    }
    const char *sign = s < 0 ? "-" : "";
    if (v < 1e-3) /* below a picosecond: rounding noise */
        snprintf(buf, n, "0 s");
    else if (v >= 99.95 || u == 0)
        snprintf(buf, n, "%s%.0f %s", sign, v, units[u]);
    else if (v >= 9.995)
        snprintf(buf, n, "%s%.1f %s", sign, v, units[u]);
    else
        snprintf(buf, n, "%s%.2f %s", sign, v, units[u]);
    return buf;
}

char *rl_tui_fmt_flops(double f, char *buf, size_t n)
{
    static const char *const units[] = { "", "K", "M", "G", "T", "P", "E" };
    int u = 0;
    while (fabs(f) >= 1000 && u < 6) {
        f /= 1000;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%.0f FLOP", f);
    else
        snprintf(buf, n, "%.2f %sFLOP", f, units[u]);
    return buf;
}

char *rl_tui_fmt_bytes(double bytes, char *buf, size_t n)
{
    return rl_fmt_bytes(bytes, buf, (int)n);
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int rl_tui_distinct_steps(const rl_trace *t, int (*keep)(const rl_trace_event *e), int **out)
{
    *out = NULL;
    int n = 0, cap = 0, *v = NULL;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        int step = e->tags[RL_TAG_STEP];
        if (step < 0 || (keep && !keep(e)))
            continue;
        if (n > 0 && v[n - 1] == step)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            int *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv)
                break;
            v = nv;
        }
        v[n++] = step;
    }
    if (n == 0) {
        free(v);
        return 0;
    }
    qsort(v, (size_t)n, sizeof *v, int_cmp);
    int k = 1;
    for (int i = 1; i < n; i++)
        if (v[i] != v[k - 1])
            v[k++] = v[i];
    *out = v;
    return k;
}

int rl_tui_dim_color(int d)
{
    static const uint8_t c[RL_MESH_MAX] = { RL_COLOR_BRIGHT_CYAN, RL_COLOR_BRIGHT_MAGENTA, RL_COLOR_BRIGHT_GREEN,
                                            RL_COLOR_BRIGHT_RED, RL_COLOR_BRIGHT_BLUE, RL_COLOR_YELLOW };
    return c[(d % RL_MESH_MAX + RL_MESH_MAX) % RL_MESH_MAX];
}

int rl_tui_role_color(const rl_trace *t, const char *role)
{
    static const char *const known[] = { "tp", "cp", "pp", "dp", "ep", "edp" };
    size_t n = strcspn(role, "-");
    if (!n)
        return -1;
    for (int d = 0; d < t->mesh_ndims; d++)
        if (strlen(t->mesh_names[d]) == n && !strncmp(t->mesh_names[d], role, n))
            return rl_tui_dim_color(d);
    for (int d = 0; d < (int)(sizeof known / sizeof *known); d++)
        if (strlen(known[d]) == n && !strncmp(known[d], role, n))
            return rl_tui_dim_color(d);
    return rl_tui_dim_color((int)n + role[0]); /* (another name: a colour of its own, the same every time) */
}

rl_style rl_tui_cat_style(rl_cat cat, int bucket)
{
    static const uint8_t bucket_colors[] = { RL_COLOR_YELLOW, RL_COLOR_BRIGHT_MAGENTA, RL_COLOR_CYAN,
                                             RL_COLOR_BRIGHT_RED, RL_COLOR_BRIGHT_YELLOW, RL_COLOR_BRIGHT_CYAN };
    switch (cat) {
    case RL_CAT_COMPUTE: return RL_STYLE(RL_COLOR_GREEN, RL_COLOR_DEFAULT, 0);
    case RL_CAT_COMM:
        return RL_STYLE(bucket >= 0 ? bucket_colors[bucket % 6] : RL_COLOR_YELLOW, RL_COLOR_DEFAULT, 0);
    case RL_CAT_P2P: return RL_STYLE(RL_COLOR_MAGENTA, RL_COLOR_DEFAULT, 0);
    case RL_CAT_IDLE: return RL_STYLE(RL_COLOR_GREY, RL_COLOR_DEFAULT, 0);
    default: return RL_STYLE_PLAIN;
    }
}

rl_glyph rl_tui_cat_glyph(rl_cat cat)
{
    switch (cat) {
    case RL_CAT_COMPUTE: return RL_G_FULL;
    case RL_CAT_COMM: return RL_G_DARK;
    case RL_CAT_P2P: return RL_G_MEDIUM;
    case RL_CAT_IDLE: return RL_G_LIGHT;
    default: return RL_G_SPACE;
    }
}

/* t with the digits that tell ticks step apart: "2.930125 ms" (for the base of relative labels). */
static char *fmt_time_to(double t, double step, char *buf, size_t n)
{
    static const char *const units[] = { "ns", "µs", "ms", "s" };
    static const double scale[] = { 1e-9, 1e-6, 1e-3, 1 };
    int u = 3;
    while (u > 0 && fabs(t) < scale[u])
        u--;
    int digits = (int)ceil(-log10(step / scale[u]) - 1e-9);
    digits = digits < 0 ? 0 : digits > 9 ? 9 : digits;
    snprintf(buf, n, "%.*f %s", digits, t / scale[u], units[u]);
    return buf;
}

void rl_tui_draw_axis(rl_canvas *c, int x0, int y, int w, double t0, double t1)
{
    double dt = (t1 - t0) / w;
    /* a nice tick step (1, 2, 5 x 10^k) leaving >= 12 columns between labels */
    double want = dt * 12, step = pow(10, floor(log10(want)));
    if (step * 2 >= want)
        step *= 2;
    else if (step * 5 >= want)
        step *= 5;
    else
        step *= 10;
    /* Deep in a long run, three digits cannot tell ticks apart ("2.93 ms" at every tick): then
     * the first tick says the time in full and the others how far past it they are ("+2.00 µs"). */
    double first = ceil(t0 / step) * step;
    char buf[48], prev[48] = "";
    int relative = 0;
    for (double t = first; t < t1 && !relative; t += step) {
        rl_tui_fmt_time(fabs(t) < step * 1e-6 ? 0 : t, buf, sizeof buf);
        relative = !strcmp(buf, prev);
        memcpy(prev, buf, sizeof prev);
    }
    double base = NAN; /* (the first tick drawn, in relative labels) */
    for (double t = first; t < t1; t += step) {
        int x = (int)floor((t - t0) / dt);
        if (x < 0 || x >= w)
            continue;
        rl_canvas_put(c, x0 + x, y, RL_G_TICK, RL_TUI_DIM);
        if (!relative) {
            rl_tui_fmt_time(fabs(t) < step * 1e-6 ? 0 : t, buf, sizeof buf);
        } else if (isnan(base)) {
            base = t;
            fmt_time_to(t, step, buf, sizeof buf);
        } else {
            buf[0] = '+';
            rl_tui_fmt_time(t - base, buf + 1, sizeof buf - 1);
        }
        rl_canvas_text(c, x0 + x + 1, y, w - x - 1, RL_TUI_DIM, buf);
    }
}
