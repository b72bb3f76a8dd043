/* chart.c — the text chart a lab prints after a non-interactive run: the timeline of one
 * training step, every rank's compute and comm lanes, rendered headless. */
#include <stdlib.h>
#include <string.h>
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

int rl_tui_print_step_chart(const rl_trace *t, int step, int width, FILE *out)
{
    if (!t || width < 40)
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
    int rc = s->n ? rl_tui_render_text(s, RL_VIEW_TIMELINE, width, 2 * t->nranks + 9, locale_utf8(), out, err,
                                       sizeof err)
                  : -1;
    rl_trace_free(s);
    return rc;
}
