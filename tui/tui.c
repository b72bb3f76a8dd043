/* tui.c — the TUI's frame (header, status line, help overlay, too-small message), key
 * handling, headless rendering, and the replay and live loops on top of term.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "err.h"
#include "render_text.h"
#include "term.h"
#include "views.h"

static const char *const view_names[RL_NVIEWS] = { "timeline", "pipeline", "shapes", "memory", "mesh" };

void rl_tui_state_init(rl_tui_state *s)
{
    memset(s, 0, sizeof *s);
    s->view = RL_VIEW_TIMELINE;
    s->follow = 1;
    s->cursor_col = -1;
    s->search_ev = -1;
}

int rl_tui_view_parse(const char *name)
{
    for (int v = 0; name && v < RL_NVIEWS; v++)
        if (strcmp(name, view_names[v]) == 0)
            return v;
    return -1;
}

const char *rl_tui_view_name(rl_tui_view v) { return v >= 0 && v < RL_NVIEWS ? view_names[v] : "?"; }

/* The pipeline view's zoom: in (dir > 0) or out by 2 around the window's middle, 1 to 64. */
static void pipe_zoom(rl_tui_state *s, int dir)
{
    double w = 1.0 / (1 << s->pipe_zoom), mid = s->pipe_from + w / 2;
    if ((dir > 0 && s->pipe_zoom >= 6) || (dir < 0 && s->pipe_zoom <= 0))
        return;
    s->pipe_zoom += dir;
    w = 1.0 / (1 << s->pipe_zoom);
    s->pipe_from = mid - w / 2 < 0 ? 0 : mid + w / 2 > 1 ? 1 - w : mid - w / 2;
}

/* Pans the pipeline view's window by a fraction of its width, kept inside the step. */
static void pipe_pan(rl_tui_state *s, double frac)
{
    double w = 1.0 / (1 << s->pipe_zoom), from = s->pipe_from + frac * w;
    s->pipe_from = from < 0 ? 0 : from + w > 1 ? 1 - w : from;
}

/* The view whose tab covers column x of the header (as draw_header lays them out), or -1. */
static int tab_at(int x)
{
    int at = 9; /* (after " ringlab ") */
    for (int v = 0; v < RL_NVIEWS; v++) {
        int w = 4 + (int)strlen(view_names[v]);
        if (x >= at + 1 && x < at + 1 + w)
            return v;
        at += w;
    }
    return -1;
}

/* A mouse event (see rl_tui_handle_key). */
static void handle_mouse(rl_tui_state *s, const rl_tui_model *m, int what, int x, int y)
{
    if (s->help) {
        if (what == RL_MOUSE_CLICK)
            s->help = 0;
        else
            s->help_top = s->help_top + (what == RL_MOUSE_WHEEL_DOWN ? 1 : s->help_top > 0 ? -1 : 0);
        return;
    }
    if (y == 0 && what == RL_MOUSE_CLICK) {
        int v = tab_at(x);
        if (v >= 0)
            s->view = (rl_tui_view)v;
        return;
    }
    if (s->view == RL_VIEW_PIPELINE && !s->ticks) { /* (the grid zooms as the timeline does) */
        if (what != RL_MOUSE_CLICK)
            pipe_zoom(s, what == RL_MOUSE_WHEEL_UP ? 1 : -1);
        return;
    }
    if (s->view != RL_VIEW_TIMELINE) {
        if (what != RL_MOUSE_CLICK)
            rl_tui_handle_key(s, m, what == RL_MOUSE_WHEEL_UP ? RL_KEY_UP : RL_KEY_DOWN);
        return;
    }
    int in_plot = x >= s->plot_x && x < s->plot_x + s->plot_w;
    if (in_plot)
        s->cursor_col = x - s->plot_x;
    if (what == RL_MOUSE_CLICK && y >= s->lane_y && y < s->lane_y + s->lane_rows &&
        s->lane_top + y - s->lane_y < m->nlanes)
        s->lane = s->lane_top + y - s->lane_y;
    else if (what != RL_MOUSE_CLICK)
        rl_tui_timeline_zoom(s, m, what == RL_MOUSE_WHEEL_UP ? 0.5 : 2.0);
}

int rl_tui_handle_key(rl_tui_state *s, const rl_tui_model *m, int key)
{
    if (key >= RL_KEY_MOUSE) {
        int v = key - RL_KEY_MOUSE;
        if (!s->prompting)
            handle_mouse(s, m, v >> 20, v & 1023, (v >> 10) & 1023);
        return 0;
    }
    if (s->prompting) /* g or /: the keys are the time or the name being typed */
        return rl_tui_play_key(s, m, key), 0;
    if (key == 'q' || key == 'Q')
        return 1;
    if (key == '?') {
        s->help = !s->help;
        return 0;
    }
    if (s->help) { /* the help is modal: Esc or ? closes it, q quits, the arrows scroll it */
        if (key == RL_KEY_ESC)
            s->help = 0;
        else if (key == 'j' || key == RL_KEY_DOWN || key == RL_KEY_PGDN || key == RL_KEY_END)
            s->help_top += key == RL_KEY_DOWN || key == 'j' ? 1 : key == RL_KEY_PGDN ? 10 : 1000;
        else if (key == 'k' || key == RL_KEY_UP || key == RL_KEY_PGUP || key == RL_KEY_HOME)
            s->help_top -= key == RL_KEY_UP || key == 'k' ? 1 : key == RL_KEY_PGUP ? 10 : 1000;
        s->help_top = s->help_top < 0 ? 0 : s->help_top; /* (the drawing clamps the other end) */
        return 0;
    }
    if (rl_tui_play_key(s, m, key))
        return 0;
    if (key == RL_KEY_ESC)
        return 0;
    if (key >= '1' && key < '1' + RL_NVIEWS) {
        s->view = (rl_tui_view)(key - '1');
        s->help = 0;
        return 0;
    }
    switch (s->view) {
    case RL_VIEW_TIMELINE:
        switch (key) {
        case '+': case '=': case 'w': rl_tui_timeline_zoom(s, m, 0.5); break; /* (w a s d: as in Perfetto) */
        case '-': case '_': case 's': rl_tui_timeline_zoom(s, m, 2.0); break;
        case '0': s->follow = 1; break;
        case 'h': case 'a': case RL_KEY_LEFT: rl_tui_timeline_pan(s, m, -0.25); break;
        case 'l': case 'd': case RL_KEY_RIGHT: rl_tui_timeline_pan(s, m, 0.25); break;
        case RL_KEY_HOME: rl_tui_timeline_pan(s, m, -1e12); break;
        case RL_KEY_END: rl_tui_timeline_pan(s, m, 1e12); break;
        case 'k': case RL_KEY_UP: if (s->lane > 0) s->lane--; break;
        case 'j': case RL_KEY_DOWN: if (s->lane + 1 < m->nlanes) s->lane++; break;
        case ',': rl_tui_timeline_jump(s, m, -1); break;
        case '.': rl_tui_timeline_jump(s, m, 1); break;
        case '/': s->prompting = '/', s->prompt[0] = 0, s->search_miss = 0; break;
        case 'n': rl_tui_timeline_search(s, m, 1); break;
        case 'N': rl_tui_timeline_search(s, m, -1); break;
        default: break;
        }
        break;
    case RL_VIEW_PIPELINE:
    case RL_VIEW_SHAPES:
        if (s->view == RL_VIEW_PIPELINE && key == 't')
            s->ticks = !s->ticks, s->scroll = 0;
        else if (s->view == RL_VIEW_PIPELINE && s->ticks && (key == 'j' || key == RL_KEY_DOWN))
            s->scroll++;
        else if (s->view == RL_VIEW_PIPELINE && s->ticks && (key == 'k' || key == RL_KEY_UP) && s->scroll > 0)
            s->scroll--;
        else if (s->view == RL_VIEW_PIPELINE && !s->ticks && key > 0 && key < 128 && strchr("+=w-_s", key))
            pipe_zoom(s, strchr("+=w", key) ? 1 : -1);
        else if (s->view == RL_VIEW_PIPELINE && !s->ticks &&
                 (key == RL_KEY_RIGHT || key == RL_KEY_LEFT || (key < 128 && key && strchr("hlad", key))))
            pipe_pan(s, key == RL_KEY_RIGHT || key == 'l' || key == 'd' ? 0.25 : -0.25);
        else if (key == 'n')
            s->step_idx++, s->scroll = 0;
        else if (key == 'p' && s->step_idx > 0)
            s->step_idx--, s->scroll = 0;
        else if (s->view == RL_VIEW_SHAPES && (key == 'j' || key == RL_KEY_DOWN))
            s->scroll++;
        else if (s->view == RL_VIEW_SHAPES && (key == 'k' || key == RL_KEY_UP) && s->scroll > 0)
            s->scroll--;
        else if (s->view == RL_VIEW_SHAPES && key == RL_KEY_PGDN)
            s->scroll += 10;
        else if (s->view == RL_VIEW_SHAPES && key == RL_KEY_PGUP)
            s->scroll = s->scroll > 10 ? s->scroll - 10 : 0;
        break;
    case RL_VIEW_MEMORY:
        if ((key == 'k' || key == RL_KEY_UP) && s->rank > 0)
            s->rank--;
        else if ((key == 'j' || key == RL_KEY_DOWN) && s->rank + 1 < m->trace->nranks)
            s->rank++;
        break;
    case RL_VIEW_MESH:
        if (key == 'h' || key == RL_KEY_LEFT)
            rl_tui_mesh_move(s, m, -1, 0);
        else if (key == 'l' || key == RL_KEY_RIGHT)
            rl_tui_mesh_move(s, m, 1, 0);
        else if (key == 'k' || key == RL_KEY_UP)
            rl_tui_mesh_move(s, m, 0, -1);
        else if (key == 'j' || key == RL_KEY_DOWN)
            rl_tui_mesh_move(s, m, 0, 1);
        break;
    default:
        break;
    }
    return 0;
}

static void draw_header(rl_canvas *c, const rl_tui_state *s)
{
    int x = rl_canvas_text(c, 0, 0, -1, RL_STYLE(RL_COLOR_BLACK, RL_COLOR_CYAN, RL_ATTR_BOLD), " ringlab ");
    if (s->printed) { /* a printed chart: its view's name, nothing to press */
        rl_canvas_printf(c, x + 1, 0, -1, RL_STYLE_PLAIN, "%s view", view_names[s->view]);
        return;
    }
    for (int v = 0; v < RL_NVIEWS; v++) {
        int cur = (int)s->view == v;
        x += rl_canvas_printf(c, x + 1, 0, -1, cur ? RL_STYLE(RL_COLOR_BLACK, RL_COLOR_BRIGHT_YELLOW, RL_ATTR_BOLD) : RL_STYLE_PLAIN,
                              "%c%d %s%c", cur ? '[' : ' ', v + 1, view_names[v], cur ? ']' : ' ');
    }
    const char *keys = "? help  q quit";
    int kw = rl_canvas_text_width(keys);
    if (x + 2 + kw < c->w)
        rl_canvas_text(c, c->w - kw - 1, 0, kw, RL_TUI_DIM, keys);
}

static void draw_status(rl_canvas *c, const rl_tui_model *m, const rl_tui_state *s)
{
    const rl_trace *t = m->trace;
    char buf[1024];
    size_t k = 0;
    rl_tui_play_status(buf, sizeof buf, m, s);
    k = strlen(buf);
    if (s->title)
        k += (size_t)snprintf(buf + k, sizeof buf - k, " %s ·", s->title);
    if (s->live)
        k += (size_t)snprintf(buf + k, sizeof buf - k, " LIVE %s · %zu events ·", s->live, t->n);
    k += (size_t)snprintf(buf + k, sizeof buf - k, " %d rank%s%s%s", t->nranks, t->nranks == 1 ? "" : "s",
                          t->hw[0] ? " · " : "", t->hw);
    for (int i = 0; i < t->nmeta && k < sizeof buf; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, " · %s: %s", t->meta_keys[i], t->meta_vals[i]);
    rl_style st = RL_STYLE(RL_COLOR_BLACK, RL_COLOR_WHITE, 0);
    rl_canvas_fill(c, 0, c->h - 1, c->w, 1, RL_G_SPACE, st);
    rl_canvas_text(c, 0, c->h - 1, c->w, st, buf);
}

static void draw_help(rl_canvas *c, rl_tui_state *s)
{
    static const char *const lines[] = {
        "Keys",
        "1-5        views: 1 timeline 2 pipeline 3 shapes 4 memory 5 mesh",
        "?  Esc     show / hide this help          q  quit",
        "mouse      click a tab to open it; in the timeline click a lane and",
        "           a time, the wheel zooms there (and the pipeline grid);",
        "           elsewhere it scrolls",
        "playback   space  play / pause    [ ]  previous / next event edge",
        "           { }  previous / next schedule op (F/B/W)    < >  slower /",
        "           faster    g  go to a time (1.5ms)    x  hide the playhead",
        "           timeline, pipeline and memory share the playhead; what",
        "           has not happened yet is dimmed; the narration says what",
        "           runs at the playhead; live (--tui): space pauses the",
        "           run itself (the watchdog's clock stands still)",
        "timeline   + - or w s  zoom in / out at the cursor   0  whole run",
        "           ← → or h l or a d  pan   ↑ ↓ or j k  lane",
        "           , .  lane's previous / next event   / n N  find by name",
        "           phase band: the selected rank's F forward, B backward,",
        "           O optimizer",
        "           comm hidden: share of comm-stream busy time in the",
        "           window that overlaps compute-stream busy time of the",
        "           same rank (100% = all communication hidden)",
        "pipeline   n p  next / previous step; + - or w s zoom, ← → or h l",
        "           or a d pan; bubble = idle share of the step's stage x",
        "           time grid, beside (p-1)/(m+p-1)",
        "           t  tick table of the step (one op per tick, as",
        "           PyTorch's schedule dump)   ↑ ↓ or j k  scroll it",
        "shapes     ↑ ↓ or j k  scroll   PgUp PgDn  page   n p  step",
        "memory     ↑ ↓ or j k  select a rank",
        "mesh       ← → ↑ ↓ or h j k l  select a rank; its group in every",
        "           mesh dim is highlighted",
    };
    int n = (int)(sizeof lines / sizeof lines[0]), w = 0;
    for (int i = 0; i < n; i++)
        if (rl_canvas_text_width(lines[i]) > w)
            w = rl_canvas_text_width(lines[i]);
    w += 4;
    if (w > c->w)
        w = c->w;
    int h = n + 2 < c->h ? n + 2 : c->h;
    int x0 = (c->w - w) / 2, y0 = (c->h - h) / 2;
    rl_style st = RL_STYLE(RL_COLOR_BRIGHT_WHITE, RL_COLOR_BLUE, 0);
    rl_canvas_fill(c, x0, y0, w, h, RL_G_SPACE, st);
    rl_canvas_box(c, x0, y0, w, h, st);
    /* the title stays; the rest scrolls when it does not fit (↑ ↓ Home End) */
    int rows = h - 3, more = n - 1 - rows;
    if (s->help_top > (more > 0 ? more : 0))
        s->help_top = more > 0 ? more : 0;
    rl_canvas_text(c, x0 + 2, y0 + 1, w - 4, RL_STYLE(RL_COLOR_BRIGHT_YELLOW, RL_COLOR_BLUE, RL_ATTR_BOLD), lines[0]);
    if (more > 0)
        rl_canvas_printf(c, x0 + 8, y0 + 1, w - 10, st, "(lines %d-%d of %d: ↑ ↓ Home End scroll)", s->help_top + 1,
                         s->help_top + rows, n - 1);
    for (int i = 0; i < rows && s->help_top + 1 + i < n; i++)
        rl_canvas_text(c, x0 + 2, y0 + 2 + i, w - 4, st, lines[s->help_top + 1 + i]);
}

void rl_tui_draw(rl_canvas *c, const rl_tui_model *m, rl_tui_state *s)
{
    rl_canvas_clear(c);
    if (c->w < RL_TUI_MIN_W || c->h < RL_TUI_MIN_H) {
        rl_canvas_printf(c, 0, 0, -1, RL_TUI_HILITE, "terminal %dx%d is too small: ringlab view needs %dx%d (q quits)",
                         c->w, c->h, RL_TUI_MIN_W, RL_TUI_MIN_H);
        return;
    }
    draw_header(c, s);
    int y0 = 1, y1 = c->h - 1;
    switch (s->view) {
    case RL_VIEW_TIMELINE: rl_tui_view_timeline(c, y0, y1, m, s); break;
    case RL_VIEW_PIPELINE: rl_tui_view_pipeline(c, y0, y1, m, s); break;
    case RL_VIEW_SHAPES: rl_tui_view_shapes(c, y0, y1, m, s); break;
    case RL_VIEW_MEMORY: rl_tui_view_memory(c, y0, y1, m, s); break;
    case RL_VIEW_MESH: rl_tui_view_mesh(c, y0, y1, m, s); break;
    default: break;
    }
    draw_status(c, m, s);
    if (s->help)
        draw_help(c, s);
}

int rl_tui_render_text(const rl_trace *t, rl_tui_view view, int w, int h, int utf8, FILE *out, char *err, int errlen)
{
    rl_tui_state s;
    rl_tui_state_init(&s);
    s.view = view;
    return rl_tui_render_state(t, &s, w, h, utf8, out, err, errlen);
}

int rl_tui_render_state(const rl_trace *t, const rl_tui_state *init, int w, int h, int utf8, FILE *out, char *err,
                        int errlen)
{
    rl_tui_view view = init ? init->view : RL_NVIEWS;
    if (!t || view < 0 || view >= RL_NVIEWS) {
        snprintf(err, (size_t)errlen, "no trace or unknown view");
        return -1;
    }
    if (w < 1 || h < 1 || w > 1000 || h > 1000) {
        snprintf(err, (size_t)errlen, "size %dx%d: width and height must be 1 to 1000 cells", w, h);
        return -1;
    }
    rl_tui_model *m = rl_tui_model_new(t);
    rl_canvas *c = rl_canvas_new(w, h);
    int rc = -1;
    if (!m || !c) {
        snprintf(err, (size_t)errlen, "out of memory");
    } else {
        rl_tui_state s = *init;
        rl_tui_draw(c, m, &s);
        rc = rl_canvas_write_text(c, utf8, out);
        if (rc)
            snprintf(err, (size_t)errlen, "cannot write the render");
    }
    rl_canvas_free(c);
    rl_tui_model_free(m);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 1 when stdin and stdout are a terminal, else 0 with the reason in err. */
static int have_tty(char *err, int errlen, const char *what)
{
    if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
        return 1;
    snprintf(err, (size_t)errlen, "%s needs a terminal, but %s is not a tty", what,
             isatty(STDIN_FILENO) ? "stdout" : "stdin");
    return 0;
}

/* Draws one frame on the terminal at its current size. */
static void show(rl_term *term, rl_canvas *c, const rl_tui_model *m, rl_tui_state *s)
{
    int w, h;
    rl_term_size(term, &w, &h);
    if (w < 1)
        w = 1;
    if (h < 1)
        h = 1;
    if (w != c->w || h != c->h)
        rl_canvas_resize(c, w, h);
    rl_tui_draw(c, m, s);
    rl_term_blit(term, c);
}

int rl_tui_replay(const rl_trace *t, const char *title)
{
    char err[256];
    if (!have_tty(err, sizeof err, "the interactive viewer")) {
        fprintf(stderr, "ringlab view: %s; render a view as text instead: ringlab view FILE --render timeline --size 120x40\n",
                err);
        return RL_EXIT_USAGE;
    }
    rl_tui_model *m = rl_tui_model_new(t);
    rl_canvas *c = rl_canvas_new(80, 24);
    if (!m || !c) {
        fprintf(stderr, "ringlab view: out of memory\n");
        rl_tui_model_free(m);
        rl_canvas_free(c);
        return RL_EXIT_FAIL;
    }
    rl_term *term = rl_term_open(err, sizeof err);
    if (!term) {
        fprintf(stderr, "ringlab view: %s\n", err);
        rl_tui_model_free(m);
        rl_canvas_free(c);
        return RL_EXIT_FAIL;
    }
    rl_tui_state s;
    rl_tui_state_init(&s);
    s.title = title;
    double last = now_s();
    for (;;) {
        show(term, c, m, &s);
        int key = rl_term_read_key(term, s.playing ? 40 : 1000);
        double now = now_s();
        rl_tui_play_advance(&s, m, now - last);
        last = now;
        if (key != RL_KEY_NONE && key != RL_KEY_RESIZE && rl_tui_handle_key(&s, m, key))
            break;
    }
    rl_term_close(term);
    rl_canvas_free(c);
    rl_tui_model_free(m);
    return RL_EXIT_OK;
}

/* Copies what was written to the temporary stderr file back to the real stderr. */
static void restore_stderr(FILE *tmp, int saved)
{
    if (saved < 0)
        return;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    if (!tmp)
        return;
    rewind(tmp);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, tmp)) > 0)
        fwrite(buf, 1, n, stderr);
    fclose(tmp);
}

int rl_tui_run_live(const rl_opts *opts, rl_rank_fn fn, void *arg, rl_trace **out)
{
    char err[256];
    if (out)
        *out = NULL;
    if (!have_tty(err, sizeof err, "--tui")) {
        fprintf(stderr, "ringlab: %s; run without --tui (add --trace FILE and replay it with 'make view TRACE=FILE')\n",
                err);
        return RL_ERR_UNSUPPORTED;
    }
    rl_canvas *c = rl_canvas_new(80, 24);
    if (!c)
        return RL_ERR_NOMEM;
    rl_term *term = rl_term_open(err, sizeof err);
    if (!term) {
        fprintf(stderr, "ringlab: %s\n", err);
        rl_canvas_free(c);
        return RL_ERR_UNSUPPORTED;
    }
    /* messages printed while the screen is up would garble it: keep them for afterwards */
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = tmp ? dup(STDERR_FILENO) : -1;
    if (saved >= 0)
        dup2(fileno(tmp), STDERR_FILENO);
    rl_run *run = rl_launch_async(opts, fn, arg);
    if (!run) {
        rl_term_close(term);
        restore_stderr(tmp, saved);
        rl_canvas_free(c);
        return RL_ERR_ARG;
    }
    rl_tui_state s;
    rl_tui_state_init(&s);
    s.live = "running";
    if (opts->tui_view[0] && rl_tui_view_parse(opts->tui_view) >= 0)
        s.view = (rl_tui_view)rl_tui_view_parse(opts->tui_view);
    rl_trace *snap = NULL;
    rl_tui_model *m = NULL;
    double last = -1;
    int done = 0, paused = 0;
    for (;;) {
        if (!done && (now_s() - last >= 0.25 || !snap)) {
            done = rl_run_done(run);
            rl_trace *ns = rl_run_snapshot(run);
            rl_tui_model *nm = ns ? rl_tui_model_new(ns) : NULL;
            if (nm) {
                rl_tui_model_free(m);
                rl_trace_free(snap);
                snap = ns;
                m = nm;
            } else {
                rl_trace_free(ns);
            }
            last = now_s();
            if (done)
                s.live = "run finished: press q to quit";
        }
        if (m)
            show(term, c, m, &s);
        int key = rl_term_read_key(term, done ? 1000 : 100);
        if (key == ' ' && !done && !s.help && !s.prompting) { /* pause the run itself, not a playhead */
            paused = !paused;
            rl_run_pause(run, paused);
            s.live = paused ? "paused: the ranks wait at their next collective, the watchdog's clock stands still "
                              "(space resumes)" : "running";
            continue;
        }
        if (key != RL_KEY_NONE && key != RL_KEY_RESIZE && m && rl_tui_handle_key(&s, m, key))
            break;
    }
    if (paused)
        rl_run_pause(run, 0);
    rl_term_close(term);
    restore_stderr(tmp, saved);
    if (!done)
        fprintf(stderr, "ringlab: left the live view; waiting for the ranks to finish ...\n");
    rl_tui_model_free(m);
    rl_trace_free(snap);
    rl_canvas_free(c);
    return rl_run_finish(run, out);
}
