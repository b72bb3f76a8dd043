/* test_tui.c — the TUI: snapshot tests of headless renders of every view on small
 * handmade traces, key handling, malformed trace files, the non-tty refusal of the live
 * TUI, and a tmux-driven smoke test of the interactive viewer. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ringlab.h"
#include "render_text.h"
#include "synth.h"
#include "tests/testutil.h"
#include "tui.h"
#include "views.h"

/* ---------------------------------------------------------------- helpers */

static rl_trace_event mk(int rank, int stream, rl_cat cat, const char *name, double start_us, double dur_us)
{
    rl_trace_event e;
    rl_trace_event_init(&e);
    e.rank = rank;
    e.stream = stream;
    e.cat = cat;
    snprintf(e.name, sizeof e.name, "%s", name);
    e.vstart = start_us * 1e-6;
    e.vend = (start_us + dur_us) * 1e-6;
    return e;
}

/* Renders a view of t with a state after the given keys (a string; 0-terminated). */
static char *render_keys(const rl_trace *t, rl_tui_view view, int w, int h, int utf8, const int *keys)
{
    rl_tui_model *m = rl_tui_model_new(t);
    rl_canvas *c = rl_canvas_new(w, h);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(c);
    rl_tui_state s;
    rl_tui_state_init(&s);
    s.view = view;
    rl_tui_draw(c, m, &s); /* a first frame sets the plot geometry, as on screen */
    for (const int *k = keys; k && *k; k++) {
        rl_tui_handle_key(&s, m, *k);
        rl_tui_draw(c, m, &s);
    }
    char *txt = rl_canvas_to_text(c, utf8);
    rl_canvas_free(c);
    rl_tui_model_free(m);
    return txt;
}

static char *render(const rl_trace *t, rl_tui_view view, int w, int h)
{
    return render_keys(t, view, w, h, 0, NULL);
}

#define ck_assert_has(hay, needle) \
    ck_assert_msg(strstr((hay), (needle)) != NULL, "expected \"%s\" in:\n%s", (needle), (hay))
#define ck_assert_lacks(hay, needle) \
    ck_assert_msg(strstr((hay), (needle)) == NULL, "did not expect \"%s\" in:\n%s", (needle), (hay))

/* Compares text with tui/tests/snapshots/NAME.txt (RL_UPDATE_SNAPSHOTS=1 rewrites it). */
static void snapshot(const char *name, const char *text)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    snprintf(path, sizeof path, "%s/snapshots/%s.txt", dir, name);
    if (getenv("RL_UPDATE_SNAPSHOTS")) {
        FILE *f = fopen(path, "w");
        ck_assert_msg(f != NULL, "cannot write %s", path);
        fputs(text, f);
        fclose(f);
        return;
    }
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "snapshot %s is missing (run with RL_UPDATE_SNAPSHOTS=1 to create it)", path);
    static char want[1 << 16];
    size_t n = fread(want, 1, sizeof want - 1, f);
    want[n] = 0;
    fclose(f);
    ck_assert_msg(strcmp(want, text) == 0, "render differs from %s\n--- expected\n%s--- got\n%s", path, want, text);
}

/* Two ranks of a DDP step: forward, backward, two bucket all-reduces (b0 overlaps the
 * backward, b1 does not), optimizer. Comm busy 200 µs per rank, 100 µs of it under
 * compute: comm hidden 50%. */
static rl_trace *ddp_trace(void)
{
    rl_trace *t = rl_trace_new(2);
    snprintf(t->hw, sizeof t->hw, "h100-nvlink");
    for (int r = 0; r < 2; r++) {
        rl_trace_event e = mk(r, 0, RL_CAT_COMPUTE, "linear_fwd", 0, 100);
        e.tags[RL_TAG_STEP] = 0;
        e.flops = 2e9;
        e.bytes = 4 << 20;
        rl_trace_add(t, &e);
        e = mk(r, 0, RL_CAT_COMPUTE, "linear_bwd", 100, 200);
        e.tags[RL_TAG_STEP] = 0;
        e.flops = 4e9;
        e.bytes = 8 << 20;
        rl_trace_add(t, &e);
        e = mk(r, 0, RL_CAT_IDLE, "wait", 300, 100);
        rl_trace_add(t, &e);
        e = mk(r, 0, RL_CAT_COMPUTE, "adam_step", 400, 50);
        rl_trace_add(t, &e);
        for (int b = 0; b < 2; b++) {
            e = mk(r, 1, RL_CAT_COMM, "all_reduce", 200 + 100 * b, 100);
            e.tags[RL_TAG_BUCKET] = b;
            e.bytes = 2 << 20;
            e.seq = b;
            rl_trace_add(t, &e);
        }
    }
    rl_trace_set_meta(t, "step time", "450 us");
    return t;
}

/* GPipe, p = 2 stages, m = 2 micro-batches, every op 100 µs: busy 8 of 12 cells, bubble
 * 1/3 = (p-1)/(m+p-1). */
static rl_trace *pipe_trace(void)
{
    static const struct { int stage; char phase; int mb; double start; } ops[] = {
        { 0, 'F', 0, 0 }, { 0, 'F', 1, 100 }, { 1, 'F', 0, 100 }, { 1, 'F', 1, 200 },
        { 1, 'B', 0, 300 }, { 1, 'B', 1, 400 }, { 0, 'B', 0, 400 }, { 0, 'B', 1, 500 },
    };
    rl_trace *t = rl_trace_new(2);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        rl_trace_event e = mk(ops[i].stage, 0, RL_CAT_COMPUTE, ops[i].phase == 'F' ? "fwd" : "bwd", ops[i].start, 100);
        e.phase = ops[i].phase;
        e.tags[RL_TAG_MICROBATCH] = ops[i].mb;
        e.tags[RL_TAG_STAGE] = ops[i].stage;
        e.tags[RL_TAG_STEP] = 0;
        rl_trace_add(t, &e);
    }
    return t;
}

/* Tensor-parallel MLP on 2 ranks: fc1 column-parallel (4h/t), fc2 row-parallel, then the
 * all-reduce; rank 1's fc2 has a different (wrong) shape so it is listed apart. */
static rl_trace *shapes_trace(void)
{
    rl_trace *t = rl_trace_new(2);
    for (int r = 0; r < 2; r++) {
        rl_trace_event e = mk(r, 0, RL_CAT_COMPUTE, "mlp_fc1", 0, 10);
        e.tags[RL_TAG_STEP] = 0;
        e.shapes = "x[b=8,h=64] w[h=64,4h/t=128] -> y[b=8,4h/t=128]";
        rl_trace_add(t, &e);
        e = mk(r, 0, RL_CAT_COMPUTE, "mlp_fc2", 10, 10);
        e.tags[RL_TAG_STEP] = 0;
        e.shapes = r == 0 ? "y[b=8,4h/t=128] w[4h/t=128,h=64] -> z[b=8,h=64]"
                          : "y[b=8,4h/t=128] w[4h/t=256,h=64] -> z[b=8,h=64]";
        rl_trace_add(t, &e);
        e = mk(r, 1, RL_CAT_COMM, "all_reduce", 20, 5);
        e.tags[RL_TAG_STEP] = 0;
        e.shapes = "z[b=8,h=64]";
        rl_trace_add(t, &e);
        e = mk(r, 0, RL_CAT_COMPUTE, "mlp_fc1", 100, 10); /* step 1: not shown with step 0 */
        e.tags[RL_TAG_STEP] = 1;
        e.shapes = "x[b=8,h=64] w[h=64,4h/t=128] -> y[b=8,4h/t=128]";
        rl_trace_add(t, &e);
    }
    return t;
}

#define MIB (1024 * 1024)

/* Memory samples of 2 ranks: rank 0 peaks at 2 ms with 8 MiB, ends with 6 MiB. */
static rl_trace *memory_trace(void)
{
    rl_trace *t = rl_trace_new(2);
    rl_trace_event e = mk(0, 0, RL_CAT_COMPUTE, "step", 0, 3000);
    rl_trace_add(t, &e);
    for (int r = 0; r < 2; r++)
        for (int k = 1; k <= 3; k++) {
            rl_mem_sample m = { .rank = r, .vtime = k * 1e-3 };
            m.current[RL_MEM_PARAM] = MIB;
            m.current[RL_MEM_GRAD] = MIB;
            m.current[RL_MEM_OPTIM] = k >= 2 ? 4 * MIB : 0;
            m.current[RL_MEM_ACTIVATION] = k == 2 ? 2 * MIB : 0;
            m.current[RL_MEM_COMM] = r == 1 ? MIB / 2 : 0;
            rl_trace_add_mem(t, &m);
            for (int c = 0; c < RL_MEM_NCAT; c++)
                if (m.current[c] > t->peak[r][c])
                    t->peak[r][c] = m.current[c];
        }
    return t;
}

/* 8 ranks on a dp x pp x tp = 2 x 2 x 2 mesh. */
static rl_trace *mesh_trace(void)
{
    rl_trace *t = rl_trace_new(8);
    for (int r = 0; r < 8; r++) {
        rl_trace_event e = mk(r, 0, RL_CAT_COMPUTE, "op", 0, 10);
        rl_trace_add(t, &e);
    }
    const char *names[] = { "dp", "pp", "tp" };
    int sizes[] = { 2, 2, 2 };
    rl_trace_set_mesh(t, 3, names, sizes);
    return t;
}

/* ---------------------------------------------------------------- canvas and text */

START_TEST(test_canvas_text_render)
{
    rl_canvas *c = rl_canvas_new(6, 2);
    ck_assert_ptr_nonnull(c);
    rl_canvas_put(c, 0, 0, RL_G_FULL, RL_STYLE_PLAIN);
    rl_canvas_put(c, 1, 0, RL_G_LIGHT, RL_STYLE_PLAIN);
    rl_canvas_text(c, 2, 0, -1, RL_STYLE_PLAIN, "5 µs");
    rl_canvas_text(c, 0, 1, 4, RL_STYLE_PLAIN, "abcdefgh");
    char *a = rl_canvas_to_text(c, 0), *u = rl_canvas_to_text(c, 1);
    ck_assert_str_eq(a, "#.5 us\nabc~\n");
    ck_assert_str_eq(u, "█░5 µs\nabc…\n");
    free(a);
    free(u);
    /* drawing outside and odd input is ignored, never a crash */
    rl_canvas_put(c, -1, 99, RL_G_FULL, RL_STYLE_PLAIN);
    rl_canvas_text(c, 3, 1, -1, RL_STYLE_PLAIN, "\xff\xfe\x01 bad utf-8");
    rl_canvas_box(c, -3, -3, 100, 100, RL_STYLE_PLAIN);
    ck_assert_int_eq(rl_canvas_resize(c, 3, 1), 0);
    a = rl_canvas_to_text(c, 0);
    ck_assert_str_eq(a, "\n");
    free(a);
    ck_assert_ptr_null(rl_canvas_new(0, 5));
    rl_canvas_free(c);
}
END_TEST

/* ---------------------------------------------------------------- views */

START_TEST(test_timeline_snapshot)
{
    rl_trace *t = ddp_trace();
    char *txt = render(t, RL_VIEW_TIMELINE, 100, 14);
    snapshot("timeline_ddp", txt);
    ck_assert_has(txt, "[1 timeline]");
    ck_assert_has(txt, " r0 compute");
    ck_assert_has(txt, " r1 comm");
    ck_assert_has(txt, "all_reduce b0");          /* bucket labels inside the boxes */
    ck_assert_has(txt, "comm hidden: 50%");       /* 100 of 200 us under compute, per rank */
    ck_assert_has(txt, "linear_bwd [compute step 0]"); /* the event under the cursor (225 us) */
    ck_assert_has(txt, "dur 200 us");
    ck_assert_has(txt, "8.00 MiB");
    ck_assert_has(txt, "4.00 GFLOP");
    ck_assert_has(txt, "step time: 450 us");      /* headline figures in the status line */
    free(txt);
    /* UTF-8: real block glyphs and units */
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 1, NULL);
    ck_assert_has(txt, "███");
    ck_assert_has(txt, "▓▓▓");
    ck_assert_has(txt, "dur 200 µs");
    free(txt);
    rl_trace_free(t);
}
END_TEST

/* The phase band: where the selected rank's compute ran forward, backward and the optimizer
 * (the regions rl_model_forward / rl_model_backward / the optimizer steps record). */
START_TEST(test_timeline_phase_band)
{
    rl_trace *t = ddp_trace();
    char *txt = render(t, RL_VIEW_TIMELINE, 100, 14);
    ck_assert_lacks(txt, "phase"); /* (a trace without regions: no band) */
    free(txt);
    for (size_t i = 0; i < t->n; i++) {
        rl_trace_event *e = &t->ev[i];
        e->region = !strcmp(e->name, "linear_fwd") ? 'F' : !strcmp(e->name, "linear_bwd") ? 'B'
                    : !strcmp(e->name, "adam_step") ? 'O' : 0;
    }
    int down[] = { 'j', 'j', 0 }; /* (the band follows the selected lane's rank: r1) */
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, down);
    /* 450 us over 87 columns: forward 0-100 us (~19), backward to 300 us (~39), the wait, the optimizer */
    ck_assert_has(txt, " r1 phase   F------------------B--------------------------------------");
    ck_assert_has(txt, "O--------");
    ck_assert_has(txt, "r1 compute: linear_bwd [compute step 0 backward]");
    ck_assert_has(txt, ">r1 compute");
    free(txt);
    rl_trace_free(t);
}
END_TEST

/* The time axis: absolute labels while three digits tell the ticks apart; deep in a long run
 * (ticks 200 ns apart at 2.93 ms, where every label read "2.93 ms") the first tick gives the
 * time in full and the others their distance from it. */
START_TEST(test_axis_relative_labels)
{
    static const struct { double t0, t1; const char *want, *then, *lacks; } cases[] = {
        { 0, 1e-3, "'0 s ", "'200 us ", "+" },
        { 2.93e-3, 2.93e-3 + 1e-6, "'2.9300 ms ", "'+200 ns ", "2.93 ms" },
        { 1.5 + 3e-7, 1.5 + 2e-6, "'1.5000005 s ", "'+500 ns ", "1.50 s" },
        { 12e-3 + 5e-6, 12e-3 + 100e-6, "'12.02 ms ", "'+20.0 us ", "12.0 ms" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rl_canvas *c = rl_canvas_new(100, 1);
        rl_tui_draw_axis(c, 0, 0, 100, cases[i].t0, cases[i].t1);
        char *txt = rl_canvas_to_text(c, 0);
        const char *a = strstr(txt, cases[i].want), *b = strstr(txt, cases[i].then);
        ck_assert_msg(a && b && a < b && !strstr(txt, cases[i].lacks), "axis %g..%g s:\n%s\nwant %s then %s",
                      cases[i].t0, cases[i].t1, txt, cases[i].want, cases[i].then);
        free(txt);
        rl_canvas_free(c);
    }
}
END_TEST

START_TEST(test_timeline_zoom_pan_cursor)
{
    rl_trace *t = ddp_trace();
    int zoom_in[] = { '+', 0 };
    char *txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, zoom_in);
    ck_assert_has(txt, "zoom x2");
    ck_assert_lacks(txt, "window 0 s");  /* zoomed around the cursor at 225 us */
    free(txt);
    int zoom_pan[] = { '+', '+', 'h', 'h', 'h', 'h', 'h', 'h', 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, zoom_pan);
    ck_assert_has(txt, "zoom x4");
    ck_assert_has(txt, "window 0 s");   /* panned to the start, clamped */
    ck_assert_has(txt, "linear_fwd");
    free(txt);
    int out_again[] = { '+', '-', 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, out_again);
    ck_assert_has(txt, "zoom x1");
    free(txt);
    /* lane 1 = rank 0's comm stream; '.' jumps the cursor to its next event, bucket 1 (300..400
     * us), ',' back to the one before; w and s zoom as + and -, a and d pan as h and l */
    int lanes[] = { 'j', '.', 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, lanes);
    ck_assert_has(txt, ">r0 comm");
    ck_assert_has(txt, "r0 comm: all_reduce [comm bucket 1 seq 1]");
    free(txt);
    int back[] = { 'j', '.', ',', 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, back);
    ck_assert_has(txt, "r0 comm: all_reduce [comm bucket 0 seq 0]");
    free(txt);
    /* / searches event names on every lane from the cursor (letter case aside), n and N go on
     * from the match (wrapping around), and the details name the group, peer and rate */
    int find[] = { '/', 'A', 'L', 'L', '_', 'r', RL_KEY_ENTER, 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, find);
    ck_assert_has(txt, ">r0 comm");
    ck_assert_has(txt, "r0 comm: all_reduce [comm bucket 1 seq 1]");
    ck_assert_has(txt, "2.00 MiB (21 GB/s)");
    free(txt);
    static const struct { int keys[10]; const char *want; } finds[] = {
        { { '/', 'a', 'd', 'a', 'm', RL_KEY_ENTER, 'n', 0 }, "r1 compute: adam_step" },
        { { '/', 'a', 'd', 'a', 'm', RL_KEY_ENTER, 'n', 'n', 0 }, "r0 compute: adam_step" }, /* (wrapped) */
        { { '/', 'a', 'd', 'a', 'm', RL_KEY_ENTER, 'n', 'N', 'N', 0 }, "r1 compute: adam_step" },
        { { '/', 'z', 'q', 0 }, "search event names: zq_" },
        { { '/', 'z', 'q', RL_KEY_ENTER, 0 }, "no event's name contains 'zq'" },
        { { '/', 'z', 'q', RL_KEY_ENTER, 0 }, "r0 compute: linear_bwd" }, /* (the cursor stays) */
    };
    for (size_t i = 0; i < sizeof finds / sizeof *finds; i++) {
        txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, finds[i].keys);
        ck_assert_has(txt, finds[i].want);
        free(txt);
    }
    /* the mouse: a click selects the lane and puts the cursor under it (the plot starts at
     * column 13 here), the wheel zooms at the mouse, a click on a tab opens its view */
    int click[] = { rl_key_mouse(RL_MOUSE_CLICK, 13 + 75, 5), 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, click);
    ck_assert_has(txt, ">r1 comm");
    ck_assert_has(txt, "r1 comm: all_reduce [comm bucket 1 seq 1]");
    free(txt);
    int wheel[] = { rl_key_mouse(RL_MOUSE_WHEEL_UP, 13 + 2, 2), rl_key_mouse(RL_MOUSE_WHEEL_UP, 13 + 2, 2), 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, wheel);
    ck_assert_has(txt, "zoom x4");
    ck_assert_has(txt, "window 13.6 us"); /* (the time under the mouse, 12.9 us, stays under it) */
    ck_assert_has(txt, "r0 compute: linear_fwd");
    free(txt);
    for (int v = 0; v < RL_NVIEWS; v++) {
        char *tab = render(t, RL_VIEW_TIMELINE, 100, 14), name[32];
        snprintf(name, sizeof name, "%d %s", v + 1, rl_tui_view_name((rl_tui_view)v));
        int col = (int)(strstr(tab, name) - tab);
        free(tab);
        int open_tab[] = { rl_key_mouse(RL_MOUSE_CLICK, col + 1, 0), 0 };
        snprintf(name, sizeof name, "[%d %s]", v + 1, rl_tui_view_name((rl_tui_view)v));
        txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, open_tab);
        ck_assert_has(txt, name);
        free(txt);
    }
    int wasd[] = { 'w', 'w', 'a', 'a', 'a', 'a', 'a', 'a', 's', 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, wasd);
    ck_assert_has(txt, "zoom x2");
    ck_assert_has(txt, "window 0 s");
    free(txt);
    /* comm hidden of a window over bucket 1 only: nothing hidden */
    rl_tui_model *m = rl_tui_model_new(t);
    ck_assert_double_eq_tol(rl_tui_comm_hidden(m, 300e-6, 400e-6), 0.0, 1e-9);
    ck_assert_double_eq_tol(rl_tui_comm_hidden(m, 0, 450e-6), 0.5, 1e-9);
    ck_assert_double_eq_tol(rl_tui_comm_hidden(m, 0, 150e-6), -1.0, 1e-9);
    rl_tui_model_free(m);
    rl_trace_free(t);
}
END_TEST

START_TEST(test_pipeline_snapshot)
{
    rl_trace *t = pipe_trace();
    char *txt = render(t, RL_VIEW_PIPELINE, 80, 12);
    snapshot("pipeline_gpipe", txt);
    ck_assert_has(txt, "[2 pipeline]");
    ck_assert_has(txt, " stage 0 r0");
    ck_assert_has(txt, " stage 1 r1");
    ck_assert_has(txt, "bubble: measured 33.3%");
    ck_assert_has(txt, "formula (p-1)/(m+p-1) = 1/3 = 33.3%");
    ck_assert_has(txt, "p=2 stages, m=2 micro-batches");
    ck_assert_has(txt, "F0>>");     /* forward boxes with micro-batch numbers */
    ck_assert_has(txt, "B1<<");
    ck_assert_has(txt, ".....");    /* the bubble, shaded */
    ck_assert_has(txt, "'200 us"); /* a time axis over the grid */
    free(txt);
    /* + zooms into the middle of the step, ← → (h l, a d) pan, - zooms out; the bubble stays the
     * step's; n and p still choose the step */
    static const int zin[] = { '+', 0 }, zpan[] = { '+', RL_KEY_LEFT, RL_KEY_LEFT, RL_KEY_LEFT, 0 },
                     zout[] = { '+', 'l', '-', 0 };
    txt = render_keys(t, RL_VIEW_PIPELINE, 80, 12, 0, zin);
    ck_assert_has(txt, "step 0 (1 of 1) . zoom x2: 150 us - 450 us of 0 s - 600 us");
    ck_assert_has(txt, "bubble: measured 33.3%");
    ck_assert_has(txt, "stage 0 r0 F1>>"); /* (stage 0's F0 ends at 100 us, out of the window) */
    free(txt);
    txt = render_keys(t, RL_VIEW_PIPELINE, 80, 12, 0, zpan);
    ck_assert_has(txt, "zoom x2: 0 s - 300 us of");
    ck_assert_has(txt, "stage 0 r0 F0>>");
    free(txt);
    txt = render_keys(t, RL_VIEW_PIPELINE, 80, 12, 0, zout);
    ck_assert_lacks(txt, "zoom x");
    free(txt);
    static const int arrows[] = { RL_KEY_UP, RL_KEY_DOWN, 0 }; /* (keys past 127 are no zoom keys) */
    txt = render_keys(t, RL_VIEW_PIPELINE, 80, 12, 0, arrows);
    ck_assert_lacks(txt, "zoom x");
    free(txt);
    const int wheel[] = { rl_key_mouse(RL_MOUSE_WHEEL_UP, 40, 4), 0 };
    txt = render_keys(t, RL_VIEW_PIPELINE, 80, 12, 0, wheel);
    ck_assert_has(txt, "zoom x2");
    free(txt);
    rl_trace_free(t);
    /* a generated 1F1B schedule: p = 4, m = 8 gives 3/11 */
    t = rl_tui_synth_pipeline(4, 8, 1);
    txt = render(t, RL_VIEW_PIPELINE, 120, 16);
    ck_assert_has(txt, "formula (p-1)/(m+p-1) = 3/11 = 27.3%");
    free(txt);
    /* t: the step's tick table; j scrolls it under its header; t again: the grid */
    static const int tkeys[] = { 't', 0 }, scroll[] = { 't', 'j', 'j', 0 }, back[] = { 't', 't', 0 };
    txt = render_keys(t, RL_VIEW_PIPELINE, 120, 16, 0, tkeys);
    ck_assert_has(txt, "one op per tick, messages free (PyTorch's schedule dump)");
    ck_assert_has(txt, "tick  stage0   stage1   stage2   stage3");
    ck_assert_has(txt, "   0  F0       .        .        .");
    ck_assert_has(txt, "   3  F3       F2       F1       F0");
    free(txt);
    txt = render_keys(t, RL_VIEW_PIPELINE, 120, 16, 0, scroll);
    ck_assert_has(txt, "tick  stage0   stage1   stage2   stage3");
    ck_assert_msg(!strstr(txt, "   0  F0 ") && strstr(txt, "   2  F2       F1       F0"), "%s", txt);
    free(txt);
    txt = render_keys(t, RL_VIEW_PIPELINE, 120, 16, 0, back);
    ck_assert_has(txt, "formula (p-1)/(m+p-1) = 3/11 = 27.3%");
    free(txt);
    rl_trace_free(t);
}
END_TEST

/* The pipeline view draws one cell per op: the op's sub-ops (four compute events here) merge
 * into one labelled cell, and a TP all-reduce tagged with the op's phase is neither a cell nor
 * busy time (the bubble counts compute only: 320 µs of it per stage in the 580 µs from the first
 * op's start to the last op's compute end). */
START_TEST(test_pipeline_merges_sub_ops)
{
    static const struct { int stage; char phase; int mb; double start; } ops[] = {
        { 0, 'F', 0, 0 }, { 0, 'F', 1, 100 }, { 1, 'F', 0, 100 }, { 1, 'F', 1, 200 },
        { 1, 'B', 0, 300 }, { 1, 'B', 1, 400 }, { 0, 'B', 0, 400 }, { 0, 'B', 1, 500 },
    };
    rl_trace *t = rl_trace_new(2);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        for (int k = 0; k < 4; k++) { /* matmul, bias, gelu, matmul: 80 µs of the op's 100 */
            rl_trace_event e = mk(ops[i].stage, 0, RL_CAT_COMPUTE, "sub", ops[i].start + 20 * k, 20);
            e.phase = ops[i].phase;
            e.tags[RL_TAG_MICROBATCH] = ops[i].mb;
            e.tags[RL_TAG_STAGE] = ops[i].stage;
            e.tags[RL_TAG_STEP] = 0;
            rl_trace_add(t, &e);
        }
        rl_trace_event ar = mk(ops[i].stage, 1, RL_CAT_COMM, "all_reduce", ops[i].start + 80, 20);
        ar.phase = ops[i].phase;
        ar.tags[RL_TAG_MICROBATCH] = ops[i].mb;
        ar.tags[RL_TAG_STAGE] = ops[i].stage;
        ar.tags[RL_TAG_STEP] = 0;
        rl_trace_add(t, &ar);
    }
    char *txt = render(t, RL_VIEW_PIPELINE, 80, 12);
    ck_assert_has(txt, "F0>>");
    ck_assert_has(txt, "B1<<");
    ck_assert_msg(!strstr(txt, "FF") && !strstr(txt, "BB"), "sub-ops drawn as cells of their own:\n%s", txt);
    ck_assert_has(txt, "bubble: measured 44.8%"); /* 1 − 320/580 */
    free(txt);
    rl_trace_free(t);
}
END_TEST

/* Interleaved: chunk 1's cells differ from chunk 0's in colour and are underlined, so the two
 * chunks of a stage are told apart even where a cell is too narrow for its F3.1 label. */
START_TEST(test_pipeline_chunks_told_apart)
{
    rl_trace *t = rl_trace_new(2);
    for (int i = 0; i < 8; i++) { /* stage 0 and 1, micro-batches 0..1, chunks 0..1 */
        rl_trace_event e = mk(i % 2, 0, RL_CAT_COMPUTE, "stage_forward", 100.0 * (i / 2), 100);
        e.phase = 'F';
        e.tags[RL_TAG_STAGE] = i % 2;
        e.tags[RL_TAG_MICROBATCH] = (i / 2) % 2;
        e.tags[RL_TAG_CHUNK] = i / 4;
        e.tags[RL_TAG_STEP] = 0;
        rl_trace_add(t, &e);
    }
    rl_tui_model *m = rl_tui_model_new(t);
    rl_canvas *c = rl_canvas_new(100, 14);
    rl_tui_state s;
    rl_tui_state_init(&s);
    s.view = RL_VIEW_PIPELINE;
    rl_tui_draw(c, m, &s);
    char *txt = rl_canvas_to_text(c, 0);
    ck_assert_has(txt, "F0.1");
    ck_assert_has(txt, "chunk 1 (underlined)");
    const char *row = strstr(txt, " stage 0 r0"), *f00 = strstr(row, "F0.0"), *f01 = strstr(row, "F0.1");
    ck_assert_msg(row && f00 && f01, "no cells of stage 0:\n%s", txt);
    int y = 0;
    for (const char *q = txt; q < row; q++)
        y += *q == '\n';
    const rl_cell *a = rl_canvas_cell(c, (int)(f00 - row), y), *b = rl_canvas_cell(c, (int)(f01 - row), y);
    ck_assert_msg(a->style.bg != b->style.bg && (b->style.attr & RL_ATTR_UNDERLINE) && !(a->style.attr & RL_ATTR_UNDERLINE),
                  "chunk 0 (bg %d attr %d) and chunk 1 (bg %d attr %d) look the same", a->style.bg, a->style.attr,
                  b->style.bg, b->style.attr);
    free(txt);
    rl_canvas_free(c);
    rl_tui_model_free(m);
    rl_trace_free(t);
}
END_TEST

START_TEST(test_shapes_snapshot)
{
    rl_trace *t = shapes_trace();
    char *txt = render(t, RL_VIEW_SHAPES, 100, 14);
    snapshot("shapes_tp", txt);
    ck_assert_has(txt, "step 0 (1 of 2");
    ck_assert_has(txt, "3 ops in rank 0's order");
    ck_assert_has(txt, " 1. mlp_fc1");
    ck_assert_has(txt, " 2. mlp_fc2");
    ck_assert_has(txt, " 3. all_reduce");
    ck_assert_has(txt, "r0-1");   /* identical shapes on both ranks grouped */
    ck_assert_has(txt, "x[b=8,h=64] w[h=64,4h/t=128] -> y[b=8,4h/t=128]   sharded: 4h/t");
    ck_assert_has(txt, "w[4h/t=256,h=64]"); /* rank 1's differing shape listed apart */
    free(txt);
    int next_step[] = { 'n', 0 };
    txt = render_keys(t, RL_VIEW_SHAPES, 100, 14, 0, next_step);
    ck_assert_has(txt, "step 1 (2 of 2");
    ck_assert_lacks(txt, "mlp_fc2");
    free(txt);
    rl_trace_free(t);
}
END_TEST

START_TEST(test_memory_snapshot)
{
    rl_trace *t = memory_trace();
    char *txt = render(t, RL_VIEW_MEMORY, 100, 14);
    snapshot("memory_two_ranks", txt);
    ck_assert_has(txt, "[4 memory]");
    ck_assert_has(txt, ">r0     now");
    ck_assert_has(txt, "6.00 MiB at 3.00 ms");   /* now: the last sample */
    ck_assert_has(txt, "8.00 MiB (categories)"); /* peak: the account's peak of each category */
    ck_assert_has(txt, "8.50 MiB (categories)"); /* rank 1 has 0.5 MiB comm buffers more */
    ck_assert_has(txt, "PPPPP");
    ck_assert_has(txt, "OOOO");
    ck_assert_has(txt, "r0 peaks: param 1.00 MiB, grad 1.00 MiB, optim 4.00 MiB, activation 2.00 MiB, comm 0 B");
    /* over time: blank before the first sample (1 ms), then 2, 8 and 6 MiB in eighths of the
     * samples' range, 2 to 8.5 MiB (rank 1: 2.5, 8.5, 6.5) */
    ck_assert_has(txt, "   over time                    ....................*******************= 2.00 MiB - 8.50 MiB");
    ck_assert_has(txt, "   over time                    ____________________###################+ 2.00 MiB - 8.50 MiB");
    free(txt);
    rl_trace_free(t);
}
END_TEST

/* The memory view shows the account: its peaks per category (not a sample taken while the
 * model was built, which is named apart), identical ranks on one row, and with the playhead
 * the sample at or before it. */
START_TEST(test_memory_account_and_transient)
{
    rl_trace *t = rl_trace_new(3);
    rl_trace_event e = mk(0, 0, RL_CAT_COMPUTE, "step", 0, 3000);
    rl_trace_add(t, &e);
    for (int r = 0; r < 3; r++) {
        rl_mem_sample build = { .rank = r, .vtime = 0 }; /* param and grad twice, before sharding */
        build.current[RL_MEM_PARAM] = 16 * MIB, build.current[RL_MEM_GRAD] = 16 * MIB;
        rl_trace_add_mem(t, &build);
        for (int k = 1; k <= 3; k++) {
            rl_mem_sample m = { .rank = r, .vtime = k * 1e-3 };
            m.current[RL_MEM_PARAM] = 8 * MIB, m.current[RL_MEM_GRAD] = 8 * MIB;
            m.current[RL_MEM_OPTIM] = k * 4 * MIB;
            rl_trace_add_mem(t, &m);
        }
        t->peak[r][RL_MEM_PARAM] = t->peak[r][RL_MEM_GRAD] = 8 * MIB; /* reset for the step */
        t->peak[r][RL_MEM_OPTIM] = 12 * MIB;
    }
    char *txt = render(t, RL_VIEW_MEMORY, 110, 14);
    ck_assert_has(txt, "full bar = 28.00 MiB");
    ck_assert_has(txt, ">r0-2   now");
    ck_assert_has(txt, "28.00 MiB at 3.00 ms");
    ck_assert_has(txt, "28.00 MiB (categories)");
    ck_assert_has(txt, "a transient outside the account's peaks: r0 held 32.00 MiB at 0 s");
    ck_assert_msg(!strstr(txt, "r1 "), "identical ranks listed apart:\n%s", txt);
    free(txt);
    rl_tui_model *m = rl_tui_model_new(t);
    rl_canvas *c = rl_canvas_new(110, 14);
    rl_tui_state s;
    rl_tui_state_init(&s);
    s.view = RL_VIEW_MEMORY, s.play_on = 1, s.playhead = 1.5e-3;
    rl_tui_draw(c, m, &s);
    txt = rl_canvas_to_text(c, 0);
    ck_assert_has(txt, "now: at the playhead");
    ck_assert_has(txt, "20.00 MiB at 1.00 ms");
    free(txt);
    rl_canvas_free(c);
    rl_tui_model_free(m);
    rl_trace_free(t);
}
END_TEST

START_TEST(test_mesh_snapshot)
{
    rl_trace *t = mesh_trace();
    char *txt = render(t, RL_VIEW_MESH, 100, 14);
    snapshot("mesh_dp_pp_tp", txt);
    ck_assert_has(txt, "mesh dp=2 x pp=2 x tp=2 = 8 ranks");
    ck_assert_has(txt, "dp=0");
    ck_assert_has(txt, "dp=1");
    ck_assert_has(txt, "tp group of r0 (size 2): r0 r1");
    free(txt);
    int keys[] = { 'j', 'l', 'l', 'l', 0 };  /* down one row (+2), right 3 (+3): rank 5 */
    txt = render_keys(t, RL_VIEW_MESH, 100, 14, 0, keys);
    ck_assert_has(txt, "*r5");
    ck_assert_has(txt, "selected (dp 1, pp 0, tp 1)");
    ck_assert_has(txt, "dp group of r5 (size 2): r1 r5");
    ck_assert_has(txt, "pp group of r5 (size 2): r5 r7");
    ck_assert_has(txt, "tp group of r5 (size 2): r4 r5");
    ck_assert_has(txt, "tr4");  /* r4 marked as r5's tp peer, r7 as pp peer, r1 as dp peer */
    ck_assert_has(txt, "pr7");
    ck_assert_has(txt, "dr1");
    free(txt);
    rl_trace_free(t);
}
END_TEST

START_TEST(test_help_too_small_and_keys)
{
    rl_trace *t = ddp_trace();
    int help[] = { '?', 0 };
    char *txt = render_keys(t, RL_VIEW_TIMELINE, 100, 24, 0, help);
    ck_assert_has(txt, "Keys");
    ck_assert_has(txt, "comm hidden: share of comm-stream busy time");
    ck_assert_has(txt, "Home End scroll");
    ck_assert_lacks(txt, "group in every"); /* (the last line: below, at 24 rows) */
    free(txt);
    int help_end[] = { '?', RL_KEY_END, 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 24, 1, help_end);
    ck_assert_has(txt, "group in every");
    ck_assert_has(txt, "Keys");
    ck_assert_lacks(txt, "1-5        views");
    free(txt);
    int help_tall[] = { '?', 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 40, 1, help_tall);
    ck_assert_has(txt, "1-5        views");
    ck_assert_has(txt, "group in every");
    ck_assert_lacks(txt, "Home End scroll");
    free(txt);
    txt = render(t, RL_VIEW_TIMELINE, 30, 8);
    ck_assert_str_eq(txt, "terminal 30x8 is too small: r~\n\n\n\n\n\n\n\n");
    free(txt);
    rl_tui_model *m = rl_tui_model_new(t);
    rl_tui_state s;
    rl_tui_state_init(&s);
    ck_assert_int_eq(rl_tui_handle_key(&s, m, '3'), 0);
    ck_assert_int_eq(s.view, RL_VIEW_SHAPES);
    ck_assert_int_eq(rl_tui_handle_key(&s, m, 'q'), 1);
    ck_assert_int_eq(rl_tui_view_parse("mesh"), RL_VIEW_MESH);
    ck_assert_int_eq(rl_tui_view_parse("nope"), -1);
    rl_tui_model_free(m);
    rl_trace_free(t);
}
END_TEST

/* Playback's keys on a 1F1B trace: space plays and pauses, [ ] step event edges, { } schedule
 * ops, < > change the speed, g takes a typed time, x hides the playhead; the help is modal and
 * q typed into the time does not quit. */
START_TEST(test_playback_keys)
{
    rl_trace *t = rl_tui_synth_pipeline(4, 8, 1);
    rl_tui_model *m = rl_tui_model_new(t);
    ck_assert_ptr_nonnull(m);
    rl_tui_state s;
    rl_tui_state_init(&s);
    ck_assert_int_eq(rl_tui_handle_key(&s, m, '?'), 0);
    ck_assert_int_eq(rl_tui_handle_key(&s, m, ' '), 0);
    ck_assert_msg(!s.play_on, "a key behind the open help started playback");
    rl_tui_handle_key(&s, m, RL_KEY_ESC);
    rl_tui_handle_key(&s, m, ' ');
    ck_assert(s.play_on && s.playing && s.playhead == m->t_min);
    rl_tui_play_advance(&s, m, 1.0); /* ×1 plays the whole run in 20 s */
    ck_assert_double_eq_tol(s.playhead, m->t_min + (m->t_max - m->t_min) / 20, 1e-12);
    rl_tui_handle_key(&s, m, ' ');
    ck_assert(!s.playing);
    double at = s.playhead;
    rl_tui_handle_key(&s, m, ']');
    ck_assert_msg(s.playhead > at, "] did not move forward");
    double next = s.playhead;
    int edge = 0; /* ] lands on an event's start or end, and none lies between */
    for (size_t i = 0; i < t->n; i++) {
        edge |= t->ev[i].vstart == next || t->ev[i].vend == next;
        ck_assert(!(t->ev[i].vstart > at && t->ev[i].vstart < next) && !(t->ev[i].vend > at && t->ev[i].vend < next));
    }
    ck_assert(edge);
    rl_tui_handle_key(&s, m, '[');
    ck_assert(s.playhead <= at);
    rl_tui_handle_key(&s, m, '}');
    double op = s.playhead;
    int is_op = 0;
    for (size_t i = 0; i < t->n; i++)
        is_op |= t->ev[i].phase && t->ev[i].vstart == op;
    ck_assert_msg(is_op, "} did not land on a schedule op's start");
    rl_tui_handle_key(&s, m, '}');
    ck_assert(s.playhead > op);
    rl_tui_handle_key(&s, m, '{');
    ck_assert(s.playhead == op);
    rl_tui_handle_key(&s, m, '>');
    rl_tui_handle_key(&s, m, '>');
    ck_assert_int_eq(s.speed_exp, 2);
    rl_tui_handle_key(&s, m, '<');
    ck_assert_int_eq(s.speed_exp, 1);
    const int typed[] = { 'g', '1', '.', '5', 'm', 's', RL_KEY_ENTER, 0 };
    for (const int *k = typed; *k; k++)
        rl_tui_handle_key(&s, m, *k);
    ck_assert_double_eq_tol(s.playhead, 1.5e-3, 1e-15);
    const int bad[] = { 'g', 'q', 'x', RL_KEY_ENTER, 0 };
    for (const int *k = bad; *k; k++)
        ck_assert_int_eq(rl_tui_handle_key(&s, m, *k), 0);
    ck_assert(s.prompt_bad && s.play_on && s.playhead == 1.5e-3);
    rl_tui_handle_key(&s, m, 'x');
    ck_assert(!s.play_on);
    double v;
    ck_assert(rl_tui_parse_time("250us", &v) == 0 && v == 250e-6);
    ck_assert(rl_tui_parse_time("2 s", &v) == 0 && v == 2);
    ck_assert(rl_tui_parse_time("-1ms", &v) == -1 && rl_tui_parse_time("1 h", &v) == -1 &&
              rl_tui_parse_time("", &v) == -1);
    /* the views mark the playhead and dim the future; the memory view reads the account at it */
    s.play_on = 1, s.playhead = 1.5e-3, s.view = RL_VIEW_PIPELINE;
    rl_canvas *c = rl_canvas_new(100, 24);
    rl_tui_draw(c, m, &s);
    char *txt = rl_canvas_to_text(c, 0);
    ck_assert_has(txt, "paused at 1.50 ms");
    ck_assert_has(txt, "at 1.50 ms: stage 0 runs");
    free(txt);
    rl_canvas_free(c);
    rl_tui_model_free(m);
    rl_trace_free(t);
}
END_TEST

/* Runs a solution's driver with --trace into path (ARGS after it); 0 when it wrote the trace. */
static int lab_trace(const char *lab, const char *args, const char *path)
{
    char cmd[512], out[4096];
    snprintf(cmd, sizeof cmd, "build/solutions/%s/run --trace %s %s >/dev/null 2>&1", lab, path, args);
    return rl_test_run_cmd(cmd, out, sizeof out);
}

/* The narration's exact sentences at three playhead positions of a lab 28 and a lab 30 run:
 * what rank 0 computes beside which bucket's all-reduce, and per stage the op, the messages or
 * the bubble. */
START_TEST(test_narration_on_lab_traces)
{
    if (rl_test_quick())
        return; /* the labs' drivers are built by the normal build only */
    static const struct { const char *lab, *args, *at, *want; } cases[] = {
        { "28_ddp", "", "210us", "at 210 µs: rank 0 computes matmul_bwd_a (step 0, layer 7); its all_reduce of bucket 0 "
          "(1.02 MiB sent on world) is 73% done, hidden under compute; step 0: 1 of its 5 buckets launched." },
        { "28_ddp", "", "290us", "at 290 µs: rank 0 computes bias_bwd (step 0, layer 4); no collective runs; step 0: 2 "
          "of its 5 buckets launched." },
        { "28_ddp", "", "500us", "at 500 µs: rank 0 computes adamw (step 0); no collective runs; step 0: 5 of its 5 "
          "buckets launched." },
        { "30_tp_pp_sp_cp", "--schedule 1f1b", "2.0285ms", "at 2.03 ms: stage 0 sends act to stage 1; stage 1 sends act "
          "to stage 2 and receives act from stage 0; stage 2 receives act from stage 1; stage 3 idle (bubble)." },
        { "30_tp_pp_sp_cp", "--schedule 1f1b", "12ms", "at 12.0 ms: stage 0 runs B0; stage 1 runs B1; stage 2 runs F3; "
          "stage 3 runs B2." },
        { "30_tp_pp_sp_cp", "--schedule interleaved", "1.5ms", "at 1.50 ms: stage 0 runs F2.0; stage 1 runs F1.0; "
          "stage 2 runs F0.0; stage 3 idle (bubble)." },
    };
    char path[128], args[256], out[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "/tmp/rl_narrate_%d.json", (int)getpid());
        int same_run = i > 0 && !strcmp(cases[i].lab, cases[i - 1].lab) && !strcmp(cases[i].args, cases[i - 1].args);
        if (!same_run) /* one run per driver and arguments */
            ck_assert_msg(lab_trace(cases[i].lab, cases[i].args, path) == 0, "the %s run did not write its trace",
                          cases[i].lab);
        snprintf(args, sizeof args, "view %s --narrate --at %s", path, cases[i].at);
        ck_assert_int_eq(rl_test_run_ringlab(rl_test_build(), "", args, out, sizeof out), 0);
        out[strcspn(out, "\n")] = 0;
        ck_assert_msg(strcmp(out, cases[i].want) == 0, "%s at %s:\n  got  %s\n  want %s", cases[i].lab, cases[i].at,
                      out, cases[i].want);
    }
    remove(path);
}
END_TEST

/* Every view on odd but valid traces, at odd sizes: never a crash, always some text. */
START_TEST(test_views_on_odd_traces)
{
    rl_trace *traces[4];
    traces[0] = rl_trace_new(1);                   /* no events at all */
    traces[1] = rl_trace_new(3);                   /* zero-length, negative and nested events */
    rl_trace_event e = mk(0, 0, RL_CAT_COMPUTE, "outer", -50, 500);
    rl_trace_add(traces[1], &e);
    e = mk(0, 0, RL_CAT_COMPUTE, "inner", 0, 0);
    e.phase = 'W';
    e.tags[RL_TAG_MICROBATCH] = (1 << 30) - 1;
    rl_trace_add(traces[1], &e);
    e = mk(2, 1, RL_CAT_P2P, "a name much longer than any box could hold", 10, 1e9);
    e.bytes = 1e300;
    e.flops = 1e300;
    e.shapes = "no brackets at all ]]],,[[[ -> x[/=/]";
    rl_trace_add(traces[1], &e);
    traces[2] = rl_tui_synth_ddp(4, 2);
    traces[3] = rl_tui_synth_pipeline(3, 5, 0);
    static const int sizes[][2] = { { 1, 1 }, { 49, 11 }, { 50, 12 }, { 80, 24 }, { 300, 100 } };
    for (int i = 0; i < 4; i++)
        for (int v = 0; v < RL_NVIEWS; v++)
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                int keys[] = { '+', '+', 'l', 'j', '.', 'n', RL_KEY_DOWN, RL_KEY_RIGHT, 0 };
                char *txt = render_keys(traces[i], (rl_tui_view)v, sizes[k][0], sizes[k][1], k % 2, keys);
                ck_assert_ptr_nonnull(txt);
                ck_assert_msg(strlen(txt) > 0, "empty render");
                free(txt);
            }
    char *txt = render(traces[0], RL_VIEW_TIMELINE, 80, 20);
    ck_assert_has(txt, "no events");
    free(txt);
    txt = render(traces[0], RL_VIEW_PIPELINE, 80, 20);
    ck_assert_has(txt, "No pipeline events");
    free(txt);
    txt = render(traces[0], RL_VIEW_MESH, 80, 20);
    ck_assert_has(txt, "no device mesh");
    free(txt);
    for (int i = 0; i < 4; i++)
        rl_trace_free(traces[i]);
}
END_TEST

/* ---------------------------------------------------------------- malformed trace files */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Loads path and expects failure with a message containing want. */
static void expect_bad(const char *path, const char *want)
{
    char err[512] = "";
    rl_trace *t = rl_trace_read_json(path, err, sizeof err);
    ck_assert_msg(t == NULL, "trace %s should not load", path);
    ck_assert_msg(strstr(err, want) != NULL, "error for %s: \"%s\" lacks \"%s\"", path, err, want);
}

/* Runs `ringlab view FILE --render timeline` and returns its exit status and stderr. */
static int run_view(const char *file, char *out, size_t n)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/ringlab view '%s' --render timeline --size 80x20 2>&1 >/dev/null </dev/null",
             rl_test_build(), file);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t k = fread(out, 1, n - 1, p);
    out[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The reader streams: what a key means does not depend on where it comes. Keys in any order
 * (ph after args, the ranks after the events), "comm" a communicator's name in a span and the
 * comm bytes in a counter, numbers read to the double strtod gives, and the ranks given after
 * the events still bound their pids. */
/* A lab's printed charts: as wide as the output allows (80 columns into a pipe, $COLUMNS when
 * set), without the viewer's tab bar, key hints, cursor or selection. */
START_TEST(test_printed_charts)
{
    static const struct { const char *lab, *view; } runs[] = {
        { "28_ddp", "timeline view" }, { "29_zero_fsdp", "memory view" }, { "30_tp_pp_sp_cp", "pipeline view" },
    };
    static const char *const chrome[] = { "q quit", "? help", "jk", "n/p", "cursor", "[1 timeline]", ">r0" };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
        for (int cols = 0; cols <= 150; cols += 150) {
            if (rl_test_quick() && (cols != 0) != (i % 2 == 1))
                continue; /* under the sanitizers one width per lab: both widths are still tried */
            char cmd[512], *out;
            snprintf(cmd, sizeof cmd, "%s COLUMNS=%s %s/solutions/%s/run 2>/dev/null", cols ? "" : "unset COLUMNS;",
                     cols ? "150" : "", rl_test_build(), runs[i].lab);
            ck_assert_int_eq(rl_test_run(cmd, &out), 0);
            char *chart = strstr(out, runs[i].view);
            ck_assert_msg(chart != NULL, "`%s` printed no %s:\n%.2000s", cmd, runs[i].view, out);
            int widest = 0, w = 0, lines = 0;
            for (const char *p = chart; *p && lines < 12; p++) { /* display columns: UTF-8 lead bytes */
                if (*p == '\n') {
                    lines++;
                    w = 0;
                } else if ((*p & 0xC0) != 0x80 && ++w > widest) {
                    widest = w;
                }
            }
            int want = cols ? cols : 80;
            ck_assert_msg(widest <= want && widest >= want - 12, "`%s`: the %s is %d columns wide; expected up to %d",
                          cmd, runs[i].view, widest, want);
            for (size_t k = 0; k < sizeof chrome / sizeof chrome[0]; k++) {
                const char *end = strstr(chart, "\n\n\n");
                const char *hit = strstr(chart, chrome[k]);
                ck_assert_msg(!hit || (end && hit > end), "`%s`: the printed %s shows \"%s\" (interactive chrome)",
                              cmd, runs[i].view, chrome[k]);
            }
            free(out);
        }
}
END_TEST

/* Communicator roles: carried by the trace (a bad one dropped on reading), named in labels and
 * details, and coloured as the mesh view colours that dim. */
START_TEST(test_comm_roles)
{
    rl_trace *t = rl_trace_new(2);
    const char *names[] = { "dp", "tp" };
    int sizes[] = { 1, 2 };
    rl_trace_set_mesh(t, 2, names, sizes);
    for (int r = 0; r < 2; r++) {
        rl_trace_event e = mk(r, 1, RL_CAT_COMM, "all_reduce", 0, 100);
        snprintf(e.comm, sizeof e.comm, "world/0.0");
        snprintf(e.role, sizeof e.role, "tp");
        rl_trace_add(t, &e);
        e = mk(r, 1, RL_CAT_COMM, "all_gather", 100, 100);
        snprintf(e.comm, sizeof e.comm, "world");
        snprintf(e.role, sizeof e.role, "odd");
        rl_trace_add(t, &e);
    }
    char path[128], err[256];
    snprintf(path, sizeof path, "/tmp/rl_tui_roles_%d.json", (int)getpid());
    ck_assert_int_eq(rl_trace_write_json(t, path, 0, err, sizeof err), 0);
    rl_trace_free(t);
    char *json = NULL;
    long len = 0;
    json = rl_test_slurp(path, &len);
    ck_assert_ptr_nonnull(json);
    ck_assert_has(json, "\"role\":\"tp\"");
    char *odd = strstr(json, "\"odd\"");
    ck_assert_ptr_nonnull(odd);
    memcpy(odd, "\"O;d\"", 5); /* not a role: dropped on reading */
    write_file(path, json);
    free(json);
    t = rl_trace_read_json(path, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    remove(path);
    ck_assert_str_eq(t->ev[0].role, "tp");
    ck_assert_str_eq(t->ev[1].role, "");
    int lane[] = { 'j', 0 }; /* r0 comm: the cursor (middle) on the all_gather, then , to the all_reduce */
    char *txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, lane);
    ck_assert_has(txt, "all_reduce tp");
    ck_assert_has(txt, "group world");
    free(txt);
    int back[] = { 'j', ',', 0 };
    txt = render_keys(t, RL_VIEW_TIMELINE, 100, 14, 0, back);
    ck_assert_has(txt, "r0 comm: all_reduce [comm] . group tp (world/0.0)");
    free(txt);
    rl_tui_model *m = rl_tui_model_new(t);
    rl_canvas *c = rl_canvas_new(100, 14);
    rl_tui_state s;
    rl_tui_state_init(&s);
    rl_tui_draw(c, m, &s);
    int tp_cells = 0, other = 0;
    for (int x = s.plot_x; x < s.plot_x + s.plot_w / 2 - 1; x++) { /* r0 comm's first half: the tp all-reduce */
        const rl_cell *cell = rl_canvas_cell(c, x, s.lane_y + 1);
        int tp = cell->style.fg == rl_tui_dim_color(1) || cell->style.bg == rl_tui_dim_color(1); /* (labels: bg) */
        tp_cells += tp;
        other += !tp;
    }
    ck_assert_msg(tp_cells > 10 && !other, "the tp all-reduce in the mesh view's tp colour: %d cells, %d others",
                  tp_cells, other);
    /* the legend names the role in that colour */
    char *row = rl_canvas_to_text(c, 1);
    char *legend = strstr(row, "│ roles tp ");
    ck_assert_msg(legend != NULL, "no roles legend:\n%s", row);
    int ly = 0;
    for (const char *q = row; q < legend; q++)
        ly += *q == '\n';
    int lx = -1;
    for (int x = 0; x < c->w && lx < 0; x++)
        if (rl_canvas_cell(c, x, ly)->cp == 't' && rl_canvas_cell(c, x + 1, ly)->cp == 'p')
            lx = x;
    ck_assert_int_ge(lx, 0);
    ck_assert_int_eq(rl_canvas_cell(c, lx, ly)->style.fg, rl_tui_dim_color(1));
    free(row);
    rl_canvas_free(c);
    rl_tui_model_free(m);
    rl_trace_free(t);
}
END_TEST

START_TEST(test_trace_reader_streams)
{
    char path[128], err[512] = "";
    snprintf(path, sizeof path, "/tmp/rl_tui_stream_%d.json", (int)getpid());
    static const char *const nums[] = { "0.1", "123.456", "1e22", "1.7976931348623157e308", "4.9e-324",
                                        "0.30000000000000004", "123456789.123456789", "-2.5e-3", "7" };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        char json[512];
        snprintf(json, sizeof json, "{\"traceEvents\": [{\"args\": {\"comm\": \"tp/0\", \"bytes\": %s}, \"ts\": 1, "
                 "\"pid\": 1, \"ph\": \"X\", \"name\": \"ar\"}, {\"ph\": \"C\", \"pid\": 0, \"ts\": 2, "
                 "\"args\": {\"comm\": 4096, \"other\": 8}}], \"ringlab\": {\"ranks\": 2, \"memory_peak\": "
                 "[{\"comm\": 5}, {\"other\": 6}]}}", nums[i]);
        write_file(path, json);
        rl_trace *t = rl_trace_read_json(path, err, sizeof err);
        ck_assert_msg(t != NULL, "%s: %s", json, err);
        ck_assert_int_eq(t->nranks, 2);
        ck_assert_uint_eq(t->n, 1);
        ck_assert_msg(t->ev[0].bytes == strtod(nums[i], NULL), "%s read as %.17g", nums[i], t->ev[0].bytes);
        ck_assert_str_eq(t->ev[0].comm, "tp/0");
        ck_assert_int_eq(t->ev[0].rank, 1);
        ck_assert_uint_eq(t->nmem, 1);
        ck_assert_int_eq((int)t->mem[0].current[RL_MEM_COMM], 4096);
        ck_assert_int_eq((int)t->mem[0].current[RL_MEM_OTHER], 8);
        ck_assert_int_eq((int)t->peak[0][RL_MEM_COMM], 5);
        ck_assert_int_eq((int)t->peak[1][RL_MEM_OTHER], 6);
        rl_trace_free(t);
    }
    write_file(path, "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"ts\": 1}, {\"ph\": \"X\", \"pid\": 3, "
                     "\"ts\": 1}], \"ringlab\": {\"ranks\": 2}}");
    expect_bad(path, "traceEvents[1] has \"pid\" outside 0..1");
    write_file(path, "{\"traceEvents\": [{\"ph\": \"C\", \"pid\": 0, \"ts\": 1, \"args\": {\"comm\": \"tp\"}}]}");
    expect_bad(path, "args.comm must be a byte count");
    write_file(path, "{\"traceEvents\": [\n{\"ph\": \"X\", \"pid\": 0, \"ts\": 99999999999999999999}]}");
    expect_bad(path, "not valid JSON at line 2");
    remove(path);
}
END_TEST

START_TEST(test_malformed_traces)
{
    char dir[128], path[256], out[2048];
    snprintf(dir, sizeof dir, "/tmp/rl_tui_bad_%d", (int)getpid());
    mkdir(dir, 0700);

    /* truncated: a real trace cut in half */
    rl_trace *t = ddp_trace();
    char err[512];
    snprintf(path, sizeof path, "%s/full.json", dir);
    ck_assert_int_eq(rl_trace_write_json(t, path, 0, err, sizeof err), 0);
    rl_trace_free(t);
    FILE *f = fopen(path, "r");
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n / 2] = 0;
    snprintf(path, sizeof path, "%s/truncated.json", dir);
    write_file(path, buf);
    expect_bad(path, "is not valid JSON at line 1, column");
    ck_assert_int_eq(run_view(path, out, sizeof out), 1);
    ck_assert_has(out, "ringlab view: trace '");
    ck_assert_has(out, "not valid JSON at line 1, column");

    snprintf(path, sizeof path, "%s/empty.json", dir);
    write_file(path, "");
    expect_bad(path, "not valid JSON");
    ck_assert_int_eq(run_view(path, out, sizeof out), 1);

    snprintf(path, sizeof path, "%s/missing.json", dir);
    expect_bad(path, "cannot read trace");
    ck_assert_int_eq(run_view(path, out, sizeof out), 1);
    ck_assert_has(out, "cannot read trace");

    static const struct {
        const char *file, *json, *want; /* want: in the load error */
        const char *view_want;          /* in `ringlab view`'s error (exit 1); NULL: not run */
    } bad[] = {
        /* wrong types */
        { "types1.json", "{\"traceEvents\": {\"ph\": \"X\"}}", "no \"traceEvents\" array", NULL },
        { "types2.json", "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": \"zero\", \"ts\": 1}]}", "\"pid\"", NULL },
        { "types3.json", "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"ts\": \"soon\"}]}", "\"ts\"", NULL },
        { "types4.json", "{\"traceEvents\": [{\"ph\": \"C\", \"pid\": 0, \"ts\": 1, \"args\": {\"param\": \"lots\"}}]}",
          "args.param must be a byte count", NULL },
        { "types5.json", "[1, 2, 3]", "traceEvents[0] is not an object", "is not an object" },
        /* huge numbers */
        { "huge1.json", "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"ts\": 1e300, \"dur\": 1}]}",
          "ts is 1e+300: a time from 0 to 1e15", NULL },
        { "neg1.json", "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"ts\": -5, \"dur\": 1}]}", "ts is -5",
          NULL },
        { "version.json", "{\"ringlab\": {\"version\": 2}, \"traceEvents\": []}", "\"ringlab.version\" is not 1",
          NULL },
        { "version2.json", "{\"ringlab\": {\"version\": [1]}, \"traceEvents\": []}", "ringlab.version", NULL },
        { "huge2.json", "{\"traceEvents\": [\n{\"ph\": \"X\", \"pid\": 0, \"ts\": 1, \"dur\": 1e999}]}", "line 2", NULL },
        { "huge3.json", "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 99999999999999, \"ts\": 1}]}", "\"pid\"", NULL },
        { "huge4.json", "{\"traceEvents\": [], \"ringlab\": {\"ranks\": 1000000000}}", "ringlab.ranks", NULL },
        { "ph1.json", "{\"traceEvents\": [{\"ph\": \"B\", \"pid\": 0, \"ts\": 1}, {\"ph\": \"E\", \"pid\": 0, \"ts\": 2}]}",
          "none of its 2 events is of a kind ringlab draws", NULL },
        { "tag1.json", "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"ts\": 1, \"args\": {\"bucket\": 1e30}}]}",
          "args.bucket must be a whole number from 0 to 1000000", NULL },
        { "tag2.json", "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"ts\": 1, \"args\": {\"mb\": -5}}]}",
          "args.mb must be a whole number", NULL },
        { "peak1.json", "{\"ringlab\": {\"ranks\": 1, \"memory_peak\": [{\"param\": \"x\"}]}, \"traceEvents\": []}",
          "memory_peak\"[0].param must be a byte count", NULL },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, bad[i].file);
        write_file(path, bad[i].json);
        expect_bad(path, bad[i].want);
        if (bad[i].view_want) {
            ck_assert_int_eq(run_view(path, out, sizeof out), 1);
            ck_assert_has(out, bad[i].view_want);
        }
    }
    /* huge but legal values load and render */
    snprintf(path, sizeof path, "%s/huge5.json", dir);
    write_file(path, "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"tid\": 1, \"cat\": \"comm\", \"name\": \"big\","
                     " \"ts\": 1e14, \"dur\": 1e14, \"args\": {\"bytes\": 1e308, \"flops\": 1e308, \"bucket\": 1000000}}]}");
    t = rl_trace_read_json(path, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    for (int v = 0; v < RL_NVIEWS; v++) {
        char *txt = render(t, (rl_tui_view)v, 120, 30);
        free(txt);
    }
    rl_trace_free(t);
    ck_assert_int_eq(run_view(path, out, sizeof out), 0);
    /* kinds it does not draw beside ones it does: drawn, and the others counted and named */
    snprintf(path, sizeof path, "%s/mixed.json", dir);
    write_file(path, "{\"traceEvents\": [{\"ph\": \"B\", \"pid\": 0, \"ts\": 1}, {\"ph\": \"i\", \"pid\": 0, "
                     "\"ts\": 2}, {\"ph\": \"M\", \"pid\": 0}, {\"ph\": \"X\", \"pid\": 0, \"ts\": 1, \"dur\": 1}]}");
    t = rl_trace_read_json(path, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    ck_assert_uint_eq(t->n, 1);
    ck_assert_uint_eq(t->skipped, 2);
    rl_trace_free(t);
    ck_assert_int_eq(run_view(path, out, sizeof out), 0);
    ck_assert_has(out, "note: 2 events of kinds ringlab does not draw");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The command line: headless render of a file, bad arguments, no terminal. */
START_TEST(test_cli_render_and_refusals)
{
    char path[128], cmd[1024], out[8192];
    snprintf(path, sizeof path, "/tmp/rl_tui_cli_%d.json", (int)getpid());
    rl_trace *t = ddp_trace();
    char err[256];
    ck_assert_int_eq(rl_trace_write_json(t, path, 0, err, sizeof err), 0);
    rl_trace_free(t);
    snprintf(cmd, sizeof cmd, "%s/ringlab view %s --render pipeline --size 90x12 --ascii", rl_test_build(), path);
    FILE *p = popen(cmd, "r");
    size_t k = fread(out, 1, sizeof out - 1, p);
    out[k] = 0;
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_has(out, "[2 pipeline]");
    ck_assert_has(out, "No pipeline events");
    /* the interactive viewer without a terminal refuses, it does not hang */
    snprintf(cmd, sizeof cmd, "%s/ringlab view %s </dev/null 2>&1 | cat", rl_test_build(), path);
    p = popen(cmd, "r");
    k = fread(out, 1, sizeof out - 1, p);
    out[k] = 0;
    pclose(p);
    ck_assert_has(out, "needs a terminal");
    /* --ticks: a DDP trace has no pipeline to tabulate (exit 1, saying so); a 1F1B one its table */
    snprintf(cmd, sizeof cmd, "%s/ringlab view %s --ticks 2>&1", rl_test_build(), path);
    p = popen(cmd, "r");
    k = fread(out, 1, sizeof out - 1, p);
    out[k] = 0;
    ck_assert_int_eq(WEXITSTATUS(pclose(p)), 1);
    ck_assert_has(out, "ringlab view --ticks: no pipeline ops in the trace");
    snprintf(cmd, sizeof cmd, "%s/ringlab view --synth 1f1b --ranks 3 --microbatches 4 --out %s >/dev/null && "
             "%s/ringlab view %s --ticks", rl_test_build(), path, rl_test_build(), path);
    p = popen(cmd, "r");
    k = fread(out, 1, sizeof out - 1, p);
    out[k] = 0;
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_has(out, "tick  stage0   stage1   stage2\n   0  F0       .        .\n");
    ck_assert_has(out, "\n  11  B3       .        .\n"); /* 2(m + p - 1) = 12 ticks */
    snprintf(cmd, sizeof cmd, "%s/ringlab view %s --render bogus >/dev/null 2>&1", rl_test_build(), path);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof cmd, "%s/ringlab view %s --render mesh --size 0x3 >/dev/null 2>&1", rl_test_build(), path);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 2);
    /* sizes and times with something more or something else: refused, exit 2, named */
    static const struct { const char *args, *want; } bad[] = {
        { "--render timeline --size 80x24x3", "--size '80x24x3'" }, { "--render timeline --size 80x", "'80x'" },
        { "--render timeline --size x24", "'x24'" },               { "--render timeline --at 0x10us", "'0x10us'" },
        { "--render timeline --at -5us", "'-5us'" },               { "--render timeline --at inf", "'inf'" },
        { "--narrate --at 10s", "after the run's end" },           { "--render memory --at 1e9", "from 0 to" },
        { "--render timeline --size 49x40", "too small for a view" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s/ringlab view %s %s 2>&1", rl_test_build(), path, bad[i].args);
        p = popen(cmd, "r");
        k = fread(out, 1, sizeof out - 1, p);
        out[k] = 0;
        ck_assert_msg(WEXITSTATUS(pclose(p)) == 2 && strstr(out, bad[i].want), "view %s: expected exit 2 and \"%s\":"
                      "\n%s", bad[i].args, bad[i].want, out);
    }
    remove(path);
}
END_TEST

/* --narrate prints names from the file: never an escape sequence to the terminal. */
START_TEST(test_narrate_no_escapes)
{
    char path[128], cmd[512], out[4096];
    snprintf(path, sizeof path, "/tmp/rl_tui_esc_%d.json", (int)getpid());
    write_file(path, "{\"ringlab\": {\"version\": 1, \"ranks\": 1}, \"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, "
                     "\"tid\": 0, \"ts\": 0, \"dur\": 1000, \"name\": \"\\u001b]0;x\\u0007\\u001b[2J\"}]}");
    snprintf(cmd, sizeof cmd, "%s/ringlab view %s --narrate --at 0.5ms 2>&1", rl_test_build(), path);
    FILE *p = popen(cmd, "r");
    size_t k = fread(out, 1, sizeof out - 1, p);
    out[k] = 0;
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_msg(strstr(out, "computes ?]0;x??[2J") && !strchr(out, 0x1b) && !strchr(out, 0x07), "%s", out);
    remove(path);
}
END_TEST

/* --bench checks memory before it generates, and leaves no file in /tmp, even when killed. */
START_TEST(test_bench_memory_and_no_leftovers)
{
    char cmd[512], out[8192];
    snprintf(cmd, sizeof cmd, "ulimit -v 300000; timeout 60 %s/ringlab view --bench --frames 1 2>&1", rl_test_build());
    FILE *p = popen(cmd, "r");
    size_t k = fread(out, 1, sizeof out - 1, p);
    out[k] = 0;
    ck_assert_msg(WEXITSTATUS(pclose(p)) == 1 && strstr(out, "out of memory: 1000000 events need about"), "%s", out);
    snprintf(cmd, sizeof cmd, "%s/ringlab view --bench --events 2000000 --frames 1 >/dev/null 2>&1 & pid=$!; "
             "sleep 1.5; ls /tmp/ringlab-view-bench-$pid.json 2>/dev/null; ls -l /proc/$pid/fd 2>/dev/null | "
             "grep -c 'ringlab-view-bench.*(deleted)'; kill -TERM $pid; wait $pid; echo rc=$?; "
             "ls /tmp/ringlab-view-bench-$pid.json 2>&1", rl_test_build());
    p = popen(cmd, "r");
    k = fread(out, 1, sizeof out - 1, p);
    out[k] = 0;
    pclose(p);
    ck_assert_msg(!strncmp(out, "1\nrc=143\n", 9) && strstr(out, "No such file"), "while it runs the file is "
                  "unlinked and open, and after SIGTERM nothing is left:\n%s", out);
}
END_TEST

static int live_noop(rl_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return 0;
}

START_TEST(test_live_refuses_without_tty)
{
    int fd = open("/dev/null", O_RDWR);
    ck_assert_int_ge(fd, 0);
    dup2(fd, STDIN_FILENO); /* this test runs in a forked child: stdin is its own */
    dup2(fd, STDERR_FILENO); /* the refusal message is expected; keep the test output clean */
    close(fd);
    rl_opts o = rl_test_opts(2, NULL);
    rl_trace *out = (rl_trace *)1;
    ck_assert_int_eq(rl_tui_run_live(&o, live_noop, NULL, &out), RL_ERR_UNSUPPORTED);
    ck_assert_ptr_null(out);
}
END_TEST

/* ---------------------------------------------------------------- tmux smoke test */

typedef struct {
    char sock[64];
} tmux_session;

static int tmux(const tmux_session *s, const char *fmt, ...)
{
    char args[1024], cmd[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "tmux -L %s -f /dev/null %s >/dev/null 2>&1", s->sock, args);
    return system(cmd);
}

static void capture(const tmux_session *s, char *out, size_t n)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "tmux -L %s capture-pane -p -t v 2>/dev/null", s->sock);
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, n - 1, p) : 0;
    out[k] = 0;
    if (p)
        pclose(p);
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Waits until the pane shows want (up to 5 s); returns 1 if it did. */
static int wait_for(const tmux_session *s, const char *want, char *screen, size_t n)
{
    for (int i = 0; i < 100; i++) {
        capture(s, screen, n);
        if (strstr(screen, want))
            return 1;
        sleep_ms(50);
    }
    return 0;
}

/* Waits (up to 5 s) for the file the tmux command writes as it exits, and checks it says
 * rc=0 ("WHO exited with ..." otherwise); returns 1 if the file appeared. */
static int wait_rc_file(const char *rcfile, const char *who)
{
    int done = 0;
    for (int i = 0; i < 100 && !done; i++) {
        FILE *f = fopen(rcfile, "r");
        char line[32] = "";
        if (f) {
            done = fgets(line, sizeof line, f) != NULL;
            fclose(f);
        }
        if (done)
            ck_assert_msg(strncmp(line, "rc=0", 4) == 0, "%s exited with %s", who, line);
        else
            sleep_ms(50);
    }
    return done;
}

#define EXPECT_SCREEN(s, want)                                                                   \
    do {                                                                                         \
        ck_assert_msg(wait_for((s), (want), screen, sizeof screen), "tmux pane never showed \"%s\"; " \
                      "it shows:\n%s", (want), screen);                                          \
    } while (0)

/* Waits (up to 5 s) until the pane shows want and two captures 100 ms apart agree, then leaves
 * that screen in screen with the trace's path (which names the test's process) as TRACE. */
static void stable_screen(const tmux_session *s, const char *want, const char *trace, char *screen, size_t n)
{
    static char last[1 << 16];
    int same = 0;
    for (int i = 0; i < 50 && !same; i++) {
        capture(s, screen, n);
        same = strstr(screen, want) && !strcmp(screen, last);
        snprintf(last, sizeof last, "%s", screen);
        if (!same)
            sleep_ms(100);
    }
    ck_assert_msg(same, "tmux pane never settled on \"%s\"; it shows:\n%s", want, screen);
    size_t tl = strlen(trace);
    for (char *p = strstr(screen, trace); p; p = strstr(p, trace)) {
        memcpy(p, "TRACE", 5);
        memmove(p + 5, p + tl, strlen(p + tl) + 1);
    }
}

static int have_tmux(void) { return system("command -v tmux >/dev/null 2>&1") == 0; }

/* Starts `ringlab view TRACE` in a new tmux session of w x h (its socket named after tag); the
 * viewer's exit status goes to rcfile. */
static void start_viewer(tmux_session *s, const char *tag, int w, int h, const char *trace, const char *rcfile)
{
    char cwd[512];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    const char *build = rl_test_build();
    snprintf(s->sock, sizeof s->sock, "%s_%d_%ld", tag, (int)getpid(), (long)time(NULL));
    int rc = tmux(s, "new-session -d -s v -x %d -y %d \"cd '%s' && %s%s/ringlab view '%s'; echo rc=\\$? > '%s'\"", w, h,
                  cwd, build[0] == '/' ? "" : "./", build, trace, rcfile);
    ck_assert_msg(rc == 0, "could not start tmux");
}

/* Presses q, checks the viewer exits with status 0, and removes the session and the files. */
static void quit_viewer(const tmux_session *s, const char *trace, const char *rcfile)
{
    tmux(s, "send-keys -t v q");
    int done = wait_rc_file(rcfile, "viewer");
    tmux(s, "kill-server");
    remove(trace);
    remove(rcfile);
    ck_assert_msg(done, "the viewer did not exit after q");
}

START_TEST(test_tmux_smoke)
{
    ck_assert_msg(have_tmux(), "tmux is not installed (make deps installs it)");
    char trace[128], rcfile[128];
    static char screen[1 << 16];
    snprintf(trace, sizeof trace, "/tmp/rl_tui_tmux_%d.json", (int)getpid());
    snprintf(rcfile, sizeof rcfile, "/tmp/rl_tui_tmux_%d.rc", (int)getpid());
    remove(rcfile);
    rl_trace *t = rl_tui_synth_pipeline(4, 8, 1);
    char err[256];
    ck_assert_int_eq(rl_trace_write_json(t, trace, 0, err, sizeof err), 0);
    rl_trace_free(t);
    tmux_session s;
    start_viewer(&s, "rltui", 120, 40, trace, rcfile);

    EXPECT_SCREEN(&s, "[1 timeline]");
    EXPECT_SCREEN(&s, " r3 comm");
    EXPECT_SCREEN(&s, "comm hidden:");
    EXPECT_SCREEN(&s, "schedule: 1F1B");          /* status line: headline figures */
    tmux(&s, "send-keys -t v +");
    EXPECT_SCREEN(&s, "zoom x2");
    tmux(&s, "send-keys -t v Right");
    EXPECT_SCREEN(&s, "zoom x2");
    ck_assert_msg(strstr(screen, "window 0 s") == NULL, "pan right should leave the start:\n%s", screen);
    tmux(&s, "send-keys -t v Left Left Left Left Left Left");
    EXPECT_SCREEN(&s, "window 0 s");
    tmux(&s, "send-keys -t v -");
    EXPECT_SCREEN(&s, "zoom x1)");
    tmux(&s, "send-keys -t v 2");
    EXPECT_SCREEN(&s, "[2 pipeline]");
    EXPECT_SCREEN(&s, "formula (p-1)/(m+p-1) = 3/11 = 27.3%");
    EXPECT_SCREEN(&s, " stage 3 r3");
    tmux(&s, "send-keys -t v 3");
    EXPECT_SCREEN(&s, "[3 shapes]");
    EXPECT_SCREEN(&s, "1. stage_fwd");
    tmux(&s, "send-keys -t v 4");
    EXPECT_SCREEN(&s, "[4 memory]");
    EXPECT_SCREEN(&s, "r0 peaks: param");
    tmux(&s, "send-keys -t v 5");
    EXPECT_SCREEN(&s, "[5 mesh]");
    EXPECT_SCREEN(&s, "pp group of r0 (size 4): r0 r1 r2 r3");
    tmux(&s, "send-keys -t v Right");
    EXPECT_SCREEN(&s, "pp group of r1");
    tmux(&s, "send-keys -t v ?");
    EXPECT_SCREEN(&s, "Keys");
    tmux(&s, "send-keys -t v ?");
    tmux(&s, "send-keys -t v 1");
    EXPECT_SCREEN(&s, "[1 timeline]");
    ck_assert_msg(strstr(screen, "Keys") == NULL, "help should be closed:\n%s", screen);
    /* the mouse, as the terminal reports it (X10: ESC [ M, then 32 + button, column, row from
     * 1): a click on the shapes tab opens it, then the wheel in the timeline zooms */
    int col = (int)(strstr(screen, "3 shapes") - screen) + 1;
    tmux(&s, "send-keys -t v -l '\033[M %c!'", 32 + col + 1);
    EXPECT_SCREEN(&s, "[3 shapes]");
    tmux(&s, "send-keys -t v 1");
    EXPECT_SCREEN(&s, "zoom x1)");
    tmux(&s, "send-keys -t v -l '\033[M`P&'"); /* (64: wheel up; column 47, row 5) */
    EXPECT_SCREEN(&s, "zoom x2");
    /* resize: too small gets a message, larger redraws the view */
    tmux(&s, "resize-window -t v -x 30 -y 8");
    EXPECT_SCREEN(&s, "too small");
    tmux(&s, "resize-window -t v -x 100 -y 30");
    EXPECT_SCREEN(&s, "comm hidden:");
    ck_assert_msg(strstr(screen, "too small") == NULL, "still too small after growing:\n%s", screen);
    quit_viewer(&s, trace, rcfile);
}
END_TEST

/* The interactive viewer plays a lab 30 interleaved run: the pipeline view with the playhead
 * stepped op by op ({ }), its narration, the tick table, play and pause. */
START_TEST(test_tmux_playback)
{
    if (rl_test_quick())
        return; /* the labs' drivers are built by the normal build only */
    ck_assert_msg(have_tmux(), "tmux is not installed (make deps installs it)");
    char trace[128], rcfile[128];
    static char screen[1 << 16];
    snprintf(trace, sizeof trace, "/tmp/rl_tui_play_%d.json", (int)getpid());
    snprintf(rcfile, sizeof rcfile, "/tmp/rl_tui_play_%d.rc", (int)getpid());
    remove(rcfile);
    ck_assert_int_eq(lab_trace("30_tp_pp_sp_cp", "--schedule interleaved", trace), 0);
    tmux_session s;
    start_viewer(&s, "rltuiplay", 120, 32, trace, rcfile);
    EXPECT_SCREEN(&s, "[1 timeline]");
    tmux(&s, "send-keys -t v 2");
    EXPECT_SCREEN(&s, "[2 pipeline]");
    tmux(&s, "send-keys -t v }");
    EXPECT_SCREEN(&s, "paused at 12.0 µs");
    EXPECT_SCREEN(&s, "at 12.0 µs: stage 0 runs F0.0; stage 1 idle (bubble)");
    tmux(&s, "send-keys -t v } } }");
    EXPECT_SCREEN(&s, "stage 1 runs F0.0");
    tmux(&s, "send-keys -t v g 1 . 5 m s Enter");
    EXPECT_SCREEN(&s, "at 1.50 ms: stage 0 runs F2.0; stage 1 runs F1.0; stage 2 runs F0.0; stage 3 idle (bubble).");
    /* the pipeline, timeline and memory views as the terminal shows them, at two playheads */
    static const struct { const char *go, *at; } heads[] = { { "", "1.50 ms" }, { "g 7 . 2 5 m s Enter", "7.25 ms" } };
    static const struct { const char *key, *name; } views[] = { { "2", "pipeline" }, { "1", "timeline" },
                                                                 { "4", "memory" } };
    for (int h = 0; h < 2; h++) {
        if (heads[h].go[0])
            tmux(&s, "send-keys -t v %s", heads[h].go);
        for (int v = 0; v < 3; v++) {
            char want[64], name[64];
            tmux(&s, "send-keys -t v %s", views[v].key);
            snprintf(want, sizeof want, "[%s %s]", views[v].key, views[v].name);
            EXPECT_SCREEN(&s, want);
            snprintf(want, sizeof want, "paused at %s", heads[h].at);
            stable_screen(&s, want, trace, screen, sizeof screen);
            snprintf(name, sizeof name, "tmux_lab30_%s_at_%.4s", views[v].name, heads[h].at);
            snapshot(name, screen);
        }
    }
    tmux(&s, "send-keys -t v 2 g 1 . 5 m s Enter");
    EXPECT_SCREEN(&s, "at 1.50 ms: stage 0 runs F2.0; stage 1 runs F1.0; stage 2 runs F0.0; stage 3 idle (bubble).");
    tmux(&s, "send-keys -t v t");
    EXPECT_SCREEN(&s, "one op per tick");
    EXPECT_SCREEN(&s, "F1.1");
    tmux(&s, "send-keys -t v t");
    EXPECT_SCREEN(&s, "bubble: measured");
    tmux(&s, "send-keys -t v Space");
    EXPECT_SCREEN(&s, "playing at");
    tmux(&s, "send-keys -t v Space");
    EXPECT_SCREEN(&s, "paused at");
    tmux(&s, "send-keys -t v 1");
    EXPECT_SCREEN(&s, "[1 timeline]");
    EXPECT_SCREEN(&s, "paused at"); /* one playhead for every view */
    quit_viewer(&s, trace, rcfile);
}
END_TEST

/* A small DDP trace (2 ranks, 2 steps) in /tmp/rl_tui_TAG_PID.json; its path in path. */
static void write_small_trace(char *path, size_t size, const char *tag)
{
    snprintf(path, size, "/tmp/rl_tui_%s_%d.json", tag, (int)getpid());
    rl_trace *t = rl_tui_synth_ddp(2, 2);
    char err[256];
    ck_assert_int_eq(rl_trace_write_json(t, path, 0, err, sizeof err), 0);
    rl_trace_free(t);
}

/* Ctrl-C in the live TUI (a lab-style run with --tui) and in the viewer: the program ends at
 * once and leaves the terminal as it found it (canonical mode, echo, signals), not raw. */
START_TEST(test_tmux_ctrl_c)
{
    ck_assert_msg(have_tmux(), "tmux is not installed (make deps installs it)");
    char trace[128], cwd[512], rcfile[128], sttyfile[128];
    static char screen[1 << 16];
    write_small_trace(trace, sizeof trace, "ctrlc");
    snprintf(rcfile, sizeof rcfile, "/tmp/rl_tui_ctrlc_%d.rc", (int)getpid());
    snprintf(sttyfile, sizeof sttyfile, "/tmp/rl_tui_ctrlc_%d.stty", (int)getpid());
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    const char *build = rl_test_build();
    /* Ctrl-C (ncurses' own handler) and Ctrl-\ (QUIT: ringlab's) both give the terminal back */
    const char *const runs[] = { "view --demo --tui --steps 10000 --delay-ms 50", "view", "view" };
    const char *const keys[] = { "C-c", "C-c", "'C-\\'" };
    for (int k = 0; k < 3; k++) {
        remove(rcfile);
        remove(sttyfile);
        tmux_session s;
        snprintf(s.sock, sizeof s.sock, "rltuicc%d_%d_%ld", k, (int)getpid(), (long)time(NULL));
        ck_assert_int_eq(tmux(&s, "new-session -d -s v -x 100 -y 30 \"cd '%s' && %s%s/ringlab %s %s; echo rc=\\$? > "
                              "'%s'; stty -a > '%s'; sleep 30\"", cwd, build[0] == '/' ? "" : "./", build, runs[k],
                              k ? trace : "", rcfile, sttyfile), 0);
        EXPECT_SCREEN(&s, "[1 timeline]");
        tmux(&s, "send-keys -t v %s", keys[k]);
        char line[32] = "", *tty = NULL;
        for (int i = 0; i < 100 && !tty; i++) {
            long len;
            tty = rl_test_slurp(sttyfile, &len);
            if (tty && !strstr(tty, "icanon"))
                free(tty), tty = NULL; /* not written in full yet */
            if (!tty)
                sleep_ms(50);
        }
        FILE *f = fopen(rcfile, "r");
        if (f) {
            if (!fgets(line, sizeof line, f))
                line[0] = 0;
            fclose(f);
        }
        tmux(&s, "kill-server");
        ck_assert_msg(tty, "`ringlab %s`: still running 5 s after %s", runs[k], keys[k]);
        ck_assert_msg(!strstr(tty, "-icanon") && !strstr(tty, "-echo ") && !strstr(tty, "-isig"),
                      "`ringlab %s`: after %s the terminal is left raw (%s):\n%s", runs[k], keys[k], line, tty);
        ck_assert_msg(strncmp(line, "rc=0", 4) != 0, "`ringlab %s`: %s ended it with exit 0", runs[k], keys[k]);
        free(tty);
    }
    remove(trace);
    remove(rcfile);
    remove(sttyfile);
}
END_TEST

/* Colours on an 8-colour terminal (TERM=xterm) and none under NO_COLOR: the timeline's grey
 * axis is drawn as dim white, never as black (which vanishes on a dark screen), and NO_COLOR
 * leaves no colour code on the screen. */
START_TEST(test_tmux_colours)
{
    ck_assert_msg(have_tmux(), "tmux is not installed (make deps installs it)");
    char trace[128], cwd[512], cmd[512];
    static char screen[1 << 16];
    write_small_trace(trace, sizeof trace, "colours");
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    const char *build = rl_test_build();
    static const char *const envs[] = { "TERM=xterm", "NO_COLOR=1" };
    for (int k = 0; k < 2; k++) {
        tmux_session s;
        snprintf(s.sock, sizeof s.sock, "rltuicol%d_%d_%ld", k, (int)getpid(), (long)time(NULL));
        ck_assert_int_eq(tmux(&s, "new-session -d -s v -x 100 -y 30 \"cd '%s' && %s %s%s/ringlab view '%s'\"", cwd,
                              envs[k], build[0] == '/' ? "" : "./", build, trace), 0);
        EXPECT_SCREEN(&s, "comm hidden:");
        snprintf(cmd, sizeof cmd, "tmux -L %s capture-pane -e -p -t v 2>/dev/null", s.sock);
        ck_assert_int_eq(rl_test_run_cmd(cmd, screen, sizeof screen), 0);
        tmux(&s, "kill-server");
        char *axis = strchr(screen, '\n'); /* the second row: the time axis, in grey */
        ck_assert_ptr_nonnull(axis);
        char *end = strchr(axis + 1, '\n');
        if (end)
            *end = 0;
        if (k == 0)
            ck_assert_msg(strstr(axis, "\033[2m\033[37m") && !strstr(axis, "\033[30m"),
                          "TERM=xterm: the axis is not dim white:\n%s", axis);
        else
            for (int c = 30; c <= 47; c++) { /* 38 is the extended-colour prefix, 39 the default colour */
                if (c == 38 || c == 39)
                    continue;
                char code[24];
                snprintf(code, sizeof code, "\033[%dm", c);
                ck_assert_msg(!strstr(screen, code), "NO_COLOR: colour code %d on the screen", c);
            }
    }
    { /* TERM=dumb cannot move its cursor: refused with what to do instead */
        tmux_session s;
        snprintf(s.sock, sizeof s.sock, "rltuidumb_%d_%ld", (int)getpid(), (long)time(NULL));
        ck_assert_int_eq(tmux(&s, "new-session -d -s v -x 100 -y 30 \"cd '%s' && TERM=dumb %s%s/ringlab view '%s'; "
                              "sleep 30\"", cwd, build[0] == '/' ? "" : "./", build, trace), 0);
        EXPECT_SCREEN(&s, "TERM=dumb cannot");
        tmux(&s, "kill-server");
    }
    remove(trace);
}
END_TEST

/* Starts `cd CWD && command` in a new tmux session (110 x 30, its socket named after tag), the
 * command's exit status going to rcfile (a name of size n made here). */
static void start_live(tmux_session *s, const char *tag, const char *command, char *rcfile, size_t n)
{
    char cwd[512];
    snprintf(rcfile, n, "/tmp/rl_tui_%s_%d.rc", tag, (int)getpid());
    remove(rcfile);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(s->sock, sizeof s->sock, "%s_%d_%ld", tag, (int)getpid(), (long)time(NULL));
    int rc = tmux(s, "new-session -d -s v -x 110 -y 30 \"cd '%s' && %s; echo rc=\\$? > '%s'\"", cwd, command, rcfile);
    ck_assert_msg(rc == 0, "could not start tmux");
}

/* Pauses a live run (space) for 1.5 s, three times the tests' --timeout 0.5: it stays paused,
 * no hang is reported; then resumes it. */
static void pause_past_timeout(const tmux_session *s, char *screen, size_t n)
{
    tmux(s, "send-keys -t v Space");
    ck_assert_msg(wait_for(s, "LIVE paused", screen, n), "space did not pause the run:\n%s", screen);
    struct timespec pause = { 1, 500000000L };
    nanosleep(&pause, NULL);
    ck_assert_msg(wait_for(s, "LIVE paused", screen, n), "the paused run did not stay paused:\n%s", screen);
    tmux(s, "send-keys -t v Space");
}

/* Presses q in a live run's session, checks the program exits 0, and removes the session. */
static void quit_live(const tmux_session *s, const char *rcfile, const char *who)
{
    tmux(s, "send-keys -t v q");
    int done = wait_rc_file(rcfile, who);
    tmux(s, "kill-server");
    remove(rcfile);
    ck_assert_msg(done, "%s did not exit after q", who);
}

/* The live TUI on a small DDP demo run: the timeline grows, a pause longer than --timeout stops
 * the watchdog's clock too, the view stays open at the end, q quits. */
START_TEST(test_tmux_live)
{
    ck_assert_msg(have_tmux(), "tmux is not installed (make deps installs it)");
    char rcfile[128], command[512];
    static char screen[1 << 16];
    const char *build = rl_test_build();
    snprintf(command, sizeof command, "%s%s/ringlab view --demo --tui --ranks 3 --steps 4 --delay-ms 150 --timeout 0.5",
             build[0] == '/' ? "" : "./", build);
    tmux_session s;
    start_live(&s, "rltuilive", command, rcfile, sizeof rcfile);
    EXPECT_SCREEN(&s, "LIVE running");
    EXPECT_SCREEN(&s, " r2 comm");
    pause_past_timeout(&s, screen, sizeof screen);
    EXPECT_SCREEN(&s, "LIVE run finished: press q to quit");
    EXPECT_SCREEN(&s, "comm hidden:");
    tmux(&s, "send-keys -t v 5");
    EXPECT_SCREEN(&s, "[5 mesh]");
    quit_live(&s, rcfile, "the live demo");
}
END_TEST

/* A lab 28 run (the solution's driver) paused live for three times its --timeout: the watchdog's
 * clock stands still, and after space the run trains to its end and exits 0. */
START_TEST(test_tmux_live_lab28_paused)
{
    if (rl_test_quick())
        return; /* the labs' drivers are built by the normal build only */
    ck_assert_msg(have_tmux(), "tmux is not installed (make deps installs it)");
    char rcfile[128];
    static char screen[1 << 16];
    tmux_session s;
    start_live(&s, "rltuilive28", "build/solutions/28_ddp/run --tui --steps 40 --timeout 0.5", rcfile, sizeof rcfile);
    EXPECT_SCREEN(&s, "LIVE running");
    pause_past_timeout(&s, screen, sizeof screen);
    int finished = 0;
    for (int i = 0; i < 12 && !finished; i++) /* (40 steps: up to a minute on a busy machine) */
        finished = wait_for(&s, "LIVE run finished", screen, sizeof screen);
    ck_assert_msg(finished, "the run did not finish after it was resumed:\n%s", screen);
    quit_live(&s, rcfile, "the lab 28 run");
}
END_TEST

Suite *tui_suite(void)
{
    Suite *s = suite_create("tui");
    TCase *tc = tcase_create("views");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_canvas_text_render);
    tcase_add_test(tc, test_timeline_snapshot);
    tcase_add_test(tc, test_timeline_zoom_pan_cursor);
    tcase_add_test(tc, test_axis_relative_labels);
    tcase_add_test(tc, test_timeline_phase_band);
    tcase_add_test(tc, test_pipeline_snapshot);
    tcase_add_test(tc, test_pipeline_merges_sub_ops);
    tcase_add_test(tc, test_pipeline_chunks_told_apart);
    tcase_add_test(tc, test_shapes_snapshot);
    tcase_add_test(tc, test_memory_snapshot);
    tcase_add_test(tc, test_memory_account_and_transient);
    tcase_add_test(tc, test_mesh_snapshot);
    tcase_add_test(tc, test_help_too_small_and_keys);
    tcase_add_test(tc, test_views_on_odd_traces);
    tcase_add_test(tc, test_playback_keys);
    suite_add_tcase(s, tc);
    TCase *io = tcase_create("files");
    tcase_set_timeout(io, 60);
    tcase_add_test(io, test_malformed_traces);
    tcase_add_test(io, test_trace_reader_streams);
    tcase_add_test(io, test_printed_charts);
    tcase_add_test(io, test_cli_render_and_refusals);
    tcase_add_test(io, test_narrate_no_escapes);
    if (!rl_test_quick()) /* (ASan's shadow needs the address space) */
        tcase_add_test(io, test_bench_memory_and_no_leftovers);
    tcase_add_test(io, test_live_refuses_without_tty);
    tcase_add_test(io, test_tmux_smoke);
    tcase_add_test(io, test_comm_roles);
    tcase_add_test(io, test_tmux_live);
    tcase_add_test(io, test_tmux_live_lab28_paused);
    tcase_add_test(io, test_narration_on_lab_traces);
    tcase_add_test(io, test_tmux_playback);
    tcase_add_test(io, test_tmux_colours);
    tcase_add_test(io, test_tmux_ctrl_c);
    suite_add_tcase(s, io);
    return s;
}
