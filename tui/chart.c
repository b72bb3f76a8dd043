/* chart.c — the text charts a lab prints after a non-interactive run (a view rendered
 * headless, as wide as the terminal), and the timeline of one training step. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "tui.h"

/* 1 when the locale asks for UTF-8 output. */
static int locale_utf8(void)
{
    const char *vars[] = { "LC_ALL", "LC_CTYPE", "LANG" };
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8") || strstr(v, "utf-8");
    }
    return 0;
}

int rl_tui_print_width(FILE *out)
{
    struct winsize ws;
    if (out && isatty(fileno(out)) && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col < 40 ? 40 : ws.ws_col > 250 ? 250 : ws.ws_col;
    const char *cols = getenv("COLUMNS");
    char *end;
    long c = cols ? strtol(cols, &end, 10) : 0;
    return cols && *cols && !*end && c >= 40 && c <= 250 ? (int)c : 80;
}

int rl_tui_print_chart(const rl_trace *t, rl_tui_view view, int h, FILE *out, char *err, int errlen)
{
    rl_tui_state s;
    rl_tui_state_init(&s);
    s.view = view;
    s.printed = 1;
    return rl_tui_render_state(t, &s, rl_tui_print_width(out), h, locale_utf8(), out, err, errlen);
}

int rl_tui_print_step_chart(const rl_trace *t, int step, FILE *out)
{
    if (!t)
        return -1;
    rl_trace *s = rl_trace_new(t->nranks);
    if (!s)
        return -1;
    memcpy(s->hw, t->hw, sizeof s->hw);
    double t0 = -1;
    for (size_t i = 0; i < t->n; i++)
        if (t->ev[i].tags[RL_TAG_STEP] == step && (t0 < 0 || t->ev[i].vstart < t0))
            t0 = t->ev[i].vstart;
    for (size_t i = 0; i < t->n; i++) {
        if (t->ev[i].tags[RL_TAG_STEP] != step)
            continue;
        rl_trace_event e = t->ev[i];
        e.vstart -= t0; /* the chart starts at the step's start */
        e.vend -= t0;
        rl_trace_add(s, &e);
    }
    char title[64], err[128];
    snprintf(title, sizeof title, "step %d", step);
    rl_trace_set_meta(s, "chart", title);
    int rc = s->n ? rl_tui_print_chart(s, RL_VIEW_TIMELINE, 2 * t->nranks + 9, out, err, sizeof err) : -1;
    rl_trace_free(s);
    return rc;
}
