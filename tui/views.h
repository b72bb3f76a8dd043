/* views.h — the five views and the helpers they share (inside tui/ only). Each view draws
 * into the rows [y0, y1) of the canvas. */
#ifndef RL_TUI_VIEWS_H
#define RL_TUI_VIEWS_H
#include <stddef.h>
#include "canvas.h"
#include "tui_model.h"
#include "tui.h"

void rl_tui_view_timeline(rl_canvas *c, int y0, int y1, const rl_tui_model *m, rl_tui_state *s);
void rl_tui_view_pipeline(rl_canvas *c, int y0, int y1, const rl_tui_model *m, rl_tui_state *s);
void rl_tui_view_shapes(rl_canvas *c, int y0, int y1, const rl_tui_model *m, rl_tui_state *s);
void rl_tui_view_memory(rl_canvas *c, int y0, int y1, const rl_tui_model *m, rl_tui_state *s);
void rl_tui_view_mesh(rl_canvas *c, int y0, int y1, const rl_tui_model *m, rl_tui_state *s);

/* Timeline navigation (tui.c routes keys here). */
void rl_tui_timeline_zoom(rl_tui_state *s, const rl_tui_model *m, double factor);
void rl_tui_timeline_pan(rl_tui_state *s, const rl_tui_model *m, double fraction);
/* Moves the timeline's cursor to the selected lane's next (dir > 0) or previous event start,
 * panning when it is off the window. */
void rl_tui_timeline_jump(rl_tui_state *s, const rl_tui_model *m, int dir);
/* Selects the next (dir > 0) or previous event, over every lane, whose name contains s->search
 * (letter case aside), from the cursor, wrapping around; sets s->search_miss when none has. */
void rl_tui_timeline_search(rl_tui_state *s, const rl_tui_model *m, int dir);
/* Moves the mesh view's selected rank by (dx, dy) on its grid. */
void rl_tui_mesh_move(rl_tui_state *s, const rl_tui_model *m, int dx, int dy);

/* Playback's marks on a plot [x0, x0 + w) over [t0, t1) in rows [y0, y1): the playhead's column
 * highlighted, everything after it dimmed. */
void rl_tui_play_marks(rl_canvas *c, int x0, int y0, int y1, int w, double t0, double t1, const rl_tui_state *s);
/* The status line's playback part (" ⏸ 1.25 ms ×1 (paused) · "), or the prompt after g. */
void rl_tui_play_status(char *buf, size_t n, const rl_tui_model *m, const rl_tui_state *s);
/* The narration word-wrapped from row y, at most maxlines rows; returns the rows used. */
int rl_tui_draw_narration(rl_canvas *c, int y, int maxlines, const rl_tui_model *m, const rl_tui_state *s);

/* A time axis on row y over columns [x0, x0 + w) for [t0, t1): ticks at 1, 2 or 5 × 10^k, labelled;
 * relative to the first tick ("2.930125 ms", "+1.00 µs") where three digits would repeat. */
void rl_tui_draw_axis(rl_canvas *c, int x0, int y, int w, double t0, double t1);
/* "1.25 ms", "250 µs", "3.00 s" (3 significant digits). */
char *rl_tui_fmt_time(double seconds, char *buf, size_t n);
/* "1.20 GFLOP", "0 FLOP". */
char *rl_tui_fmt_flops(double flops, char *buf, size_t n);
/* "12.50 MiB" (binary units). */
char *rl_tui_fmt_bytes(double bytes, char *buf, size_t n);

/* The distinct values of a tag over the events selected by a filter (sorted, caller
 * frees); returns the count. */
int rl_tui_distinct_steps(const rl_trace *t, int (*keep)(const rl_trace_event *e), int **out);

/* The colour of mesh dim d (the mesh view's), and that of a communicator role: the colour of the
 * trace's mesh dim of that name (of its first part: "tp-sp" is tp's), else of its place in
 * tp cp pp dp ep edp; -1 for none. */
int rl_tui_dim_color(int d);
int rl_tui_role_color(const rl_trace *t, const char *role);

/* Styles shared by the views. */
rl_style rl_tui_cat_style(rl_cat cat, int bucket);
rl_glyph rl_tui_cat_glyph(rl_cat cat);
#define RL_TUI_TITLE  RL_STYLE(RL_COLOR_BRIGHT_WHITE, RL_COLOR_DEFAULT, RL_ATTR_BOLD)
#define RL_TUI_DIM    RL_STYLE(RL_COLOR_GREY, RL_COLOR_DEFAULT, 0)
#define RL_TUI_HILITE RL_STYLE(RL_COLOR_BRIGHT_YELLOW, RL_COLOR_DEFAULT, RL_ATTR_BOLD)

#endif
