/* trace.c — fuzz target: the trace readers (Chrome JSON from a file, and the graders' packed
 * records) and, on every trace they accept, each view rendered headless, with and without a
 * playhead (the narration), the pipeline's tick table too. */
#include <stdio.h>
#include <unistd.h>
#include "fuzz.h"
#include "trace.h"
#include "tui.h"

/* Every view of t, at two sizes, with the playhead off, then in the middle of the run. */
static void render_all(const rl_trace *t)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        return;
    char err[256];
    double lo = 0, hi = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (i == 0 || t->ev[i].vstart < lo)
            lo = t->ev[i].vstart;
        if (i == 0 || t->ev[i].vend > hi)
            hi = t->ev[i].vend;
    }
    for (int v = 0; v < RL_NVIEWS; v++) {
        rl_tui_render_text(t, (rl_tui_view)v, 80, 24, 1, sink, err, sizeof err);
        rl_tui_render_text(t, (rl_tui_view)v, RL_TUI_MIN_W, RL_TUI_MIN_H, 0, sink, err, sizeof err);
        rl_tui_state s;
        rl_tui_state_init(&s);
        s.view = (rl_tui_view)v;
        s.play_on = 1;
        s.playhead = lo + (hi - lo) / 2;
        s.ticks = v == RL_VIEW_PIPELINE;
        rl_tui_render_state(t, &s, 120, 40, 1, sink, err, sizeof err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[256];
    int fd = rl_fuzz_file(data, size, path, sizeof path);
    if (fd >= 0) {
        rl_trace *t = rl_trace_read_json(path, err, sizeof err);
        close(fd);
        if (t) {
            render_all(t);
            rl_trace_free(t);
        }
    }
    rl_trace *p = rl_trace_unpack(data, size, err, sizeof err);
    if (p) {
        render_all(p);
        rl_trace_free(p);
    }
    return 0;
}
