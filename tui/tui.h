/* tui.h — the ringlab TUI: five views (timeline, pipeline, shapes, memory, mesh) of a
 * trace, drawn into a canvas; shown live while a run goes, replayed from a trace file, or
 * rendered headless as text. */
#ifndef RL_TUI_H
#define RL_TUI_H
#include <stdio.h>
#include "canvas.h"
#include "launch.h"
#include "tui_model.h"
#include "trace.h"

typedef enum {
    RL_VIEW_TIMELINE = 0, RL_VIEW_PIPELINE, RL_VIEW_SHAPES, RL_VIEW_MEMORY, RL_VIEW_MESH, RL_NVIEWS
} rl_tui_view;

/* Keys: printable ASCII as itself, special keys above Unicode's range. */
enum {
    RL_KEY_NONE = 0,
    RL_KEY_UP = 0x110000, RL_KEY_DOWN, RL_KEY_LEFT, RL_KEY_RIGHT, RL_KEY_HOME, RL_KEY_END,
    RL_KEY_PGUP, RL_KEY_PGDN, RL_KEY_RESIZE, RL_KEY_ESC, RL_KEY_ENTER, RL_KEY_BACKSPACE
};

/* A mouse event as a key: RL_KEY_MOUSE + what, column and row (each below 1024). */
#define RL_KEY_MOUSE 0x40000000
enum { RL_MOUSE_CLICK = 1, RL_MOUSE_WHEEL_UP, RL_MOUSE_WHEEL_DOWN };
static inline int rl_key_mouse(int what, int x, int y)
{
    return x < 0 || y < 0 || x > 1023 || y > 1023 ? RL_KEY_NONE : RL_KEY_MOUSE + (what << 20) + (y << 10) + x;
}

/* The smallest canvas the views are drawn on; smaller gets a one-line message. */
enum { RL_TUI_MIN_W = 50, RL_TUI_MIN_H = 12 };

/* What the user is looking at (everything the keys change). */
typedef struct rl_tui_state {
    rl_tui_view view;
    int help;            /* the help overlay is shown */
    int help_top;        /* its first line shown, when it does not fit */
    int printed;         /* a chart printed after a run: no tab bar, no key hints */
    int follow;          /* timeline window = the whole run (grows in live mode) */
    double t0, t1;       /* timeline window, virtual seconds */
    int cursor_col;      /* cursor column in the timeline plot (-1: the middle) */
    int lane, lane_top;  /* selected timeline lane, first lane shown */
    int rank;            /* selected rank (memory, mesh) */
    int step_idx;        /* which step the pipeline and shapes views show */
    int pipe_zoom;       /* the pipeline view shows 1/2^pipe_zoom of the step (0: all of it) ... */
    double pipe_from;    /* ... from this fraction of it on */
    int ticks;           /* the pipeline view shows the step's tick table instead of the time grid */
    int scroll;          /* first line of the shapes list (and of the tick table) */
    int plot_w;          /* timeline plot width in the last frame (set when drawing) */
    int plot_x, lane_y, lane_rows; /* ... its first column, first lane's row and lanes shown */
    const char *live;    /* NULL when replaying; else the live run's status ("running") */
    const char *title;   /* the file shown (status line), or NULL */
    /* playback: one playhead for the timeline, pipeline and memory views */
    int play_on;         /* the playhead is shown (space, [ ] { } or g start it; x hides it) */
    int playing;         /* it moves with the clock */
    double playhead;     /* virtual seconds */
    int speed_exp;       /* speed ×2^speed_exp; ×1 plays the whole run in 20 s */
    int prompting;       /* 'g': typing a time into prompt; '/': a name to search for */
    char prompt[24];
    int prompt_bad;      /* the last time typed was not one */
    char search[24];     /* the timeline's search: event names containing it (n, N: next, previous) */
    int search_miss;     /* the last search found no event */
    long search_ev;      /* the event it found (-1: none): n and N go on from it */
} rl_tui_state;

/* The initial state: timeline view, whole run. */
void rl_tui_state_init(rl_tui_state *s);
/* Parses a view name ("timeline", "pipeline", "shapes", "memory", "mesh"); -1 if unknown. */
int rl_tui_view_parse(const char *name);
/* The name of a view. */
const char *rl_tui_view_name(rl_tui_view v);
/* Applies one key (or mouse event: a click on a tab opens its view; in the timeline a click
 * selects a lane and puts the cursor there, the wheel zooms at the mouse; the wheel zooms the
 * pipeline grid too, and elsewhere scrolls as ↑ ↓); returns 1 when the key asks to quit, else 0. */
int rl_tui_handle_key(rl_tui_state *s, const rl_tui_model *m, int key);
/* Playback's keys (space, [ ] { } < > g x, and the typing after g); returns 1 when it took the key. */
int rl_tui_play_key(rl_tui_state *s, const rl_tui_model *m, int key);
/* Moves a playing playhead by wall_s seconds of the clock (stops at the end of the run). */
void rl_tui_play_advance(rl_tui_state *s, const rl_tui_model *m, double wall_s);
/* "1.5ms", "250us", "2 s", "0.002" (seconds) → *out in seconds; 0, or -1 if not a time. */
int rl_tui_parse_time(const char *s, double *out);
/* The narration at the playhead, one paragraph: per pipeline stage what it runs, sends or
 * receives, or that it idles; else what the selected lane's rank computes and which collective
 * runs beside it. Returns snprintf's count. */
int rl_tui_narrate(const rl_tui_model *m, const rl_tui_state *s, char *out, size_t n);
/* Draws the current view, header, status line and (if on) help overlay into c. */
void rl_tui_draw(rl_canvas *c, const rl_tui_model *m, rl_tui_state *s);

/* Renders one view of a trace headless as text (w x h, ASCII or UTF-8) to out; for tests
 * and for labs printing a chart after a run. Returns 0, or -1 with a message in err. */
int rl_tui_render_text(const rl_trace *t, rl_tui_view view, int w, int h, int utf8, FILE *out,
                       char *err, int errlen);
/* As rl_tui_render_text, from a given state (its view, playhead, zoom ...). */
int rl_tui_render_state(const rl_trace *t, const rl_tui_state *s, int w, int h, int utf8, FILE *out, char *err,
                        int errlen);
/* The width a printed chart takes on out: the terminal's columns (40 to 250) when out is
 * one, else $COLUMNS when it is a number in that range, else 80. */
int rl_tui_print_width(FILE *out);
/* Prints one view of a trace h rows high, as wide as rl_tui_print_width(out), without the
 * viewer's tab bar and key hints; UTF-8 glyphs when the locale asks for them, ASCII
 * otherwise. What a lab shows after a non-interactive run. Returns 0 or -1 (err says why). */
int rl_tui_print_chart(const rl_trace *t, rl_tui_view view, int h, FILE *out, char *err, int errlen);
/* Prints the timeline of one training step (events tagged with that step, shifted to start
 * at 0) as rl_tui_print_chart does. Returns 0 or -1. */
int rl_tui_print_step_chart(const rl_trace *t, int step, FILE *out);
/* The interactive viewer on a loaded trace (needs a terminal and ncurses); returns the
 * exit status (0 after q). */
int rl_tui_replay(const rl_trace *t, const char *title);
/* Runs fn on every rank (as rl_launch) while showing the timeline growing; stays open at
 * the end until q. Refuses with a message (RL_ERR_UNSUPPORTED) without a terminal or
 * ncurses. Returns as rl_launch; *out (may be NULL) receives the merged trace. */
int rl_tui_run_live(const rl_opts *opts, rl_rank_fn fn, void *arg, rl_trace **out);

#endif
