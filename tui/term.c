/* term.c — the ncurses (ncursesw) front end. The only file of ringlab that uses ncurses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "term.h"
#include "tui.h"

#ifdef RL_HAVE_NCURSES
#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>

/* The terminal's modes before the UI took it, for the signals ncurses does not catch (HUP,
 * QUIT, ABRT): the one process-wide copy, as the terminal itself is one. */
static struct termios saved_modes;
static volatile sig_atomic_t have_saved_modes;

/* A signal that ends the program while the UI is up: the terminal's modes back, the screen and
 * the mouse as they were (async-signal-safe calls only), then the signal's own ending. */
static void restore_on_signal(int sig)
{
    static const char reset[] = "\033[?1000l\033[?1006l\033[?25h\033[?1049l\r\n";
    if (have_saved_modes) {
        tcsetattr(STDIN_FILENO, TCSANOW, &saved_modes);
        ssize_t w = write(STDOUT_FILENO, reset, sizeof reset - 1);
        (void)w;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

struct rl_term {
    SCREEN *screen;
    int utf8;          /* the locale is UTF-8: draw real glyphs */
    int colors;        /* 0 (none), 8, 16 or more */
    int default_ok;    /* use_default_colors worked: -1 is the terminal's own colour */
    short pairs[RL_NCOLORS][RL_NCOLORS];
    int next_pair;
};

rl_term *rl_term_open(char *err, int errlen)
{
    const char *term = getenv("TERM");
    if (!term || !*term) {
        snprintf(err, (size_t)errlen, "the live TUI needs a terminal: TERM is not set");
        return NULL;
    }
    if (!strcmp(term, "dumb")) {
        snprintf(err, (size_t)errlen, "the TUI needs a terminal that can move its cursor; TERM=dumb cannot (set TERM, "
                 "e.g. xterm-256color, or print a chart: ringlab view FILE --render timeline --size 120x40)");
        return NULL;
    }
    rl_term *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, (size_t)errlen, "out of memory");
        return NULL;
    }
    if (tcgetattr(STDIN_FILENO, &saved_modes) == 0) {
        have_saved_modes = 1;
        static const int sigs[] = { SIGHUP, SIGQUIT, SIGABRT };
        for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
            signal(sigs[i], restore_on_signal);
    }
    setlocale(LC_ALL, "");
    const char *cs = nl_langinfo(CODESET);
    t->utf8 = cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
    t->screen = newterm(NULL, stdout, stdin);
    if (!t->screen) {
        snprintf(err, (size_t)errlen, "cannot start the terminal UI on TERM=%s (unknown terminal type?)", term);
        free(t);
        return NULL;
    }
    set_term(t->screen);
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    /* clicks and the wheel (shift-drag still selects text in most terminals) */
    mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
    mouseinterval(0);
    const char *no_color = getenv("NO_COLOR"); /* no-color.org: set and not empty means no colours */
    if (!(no_color && no_color[0]) && has_colors() && start_color() == OK) {
        t->default_ok = use_default_colors() == OK;
        t->colors = COLORS >= 16 ? 16 : COLORS >= 8 ? 8 : 0;
    }
    t->next_pair = 1;
    return t;
}

void rl_term_close(rl_term *t)
{
    if (!t)
        return;
    endwin();
    delscreen(t->screen);
    free(t);
    have_saved_modes = 0;
    static const int sigs[] = { SIGHUP, SIGQUIT, SIGABRT };
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        signal(sigs[i], SIG_DFL);
}

void rl_term_size(rl_term *t, int *w, int *h)
{
    (void)t;
    int y, x;
    getmaxyx(stdscr, y, x);
    *w = x;
    *h = y;
}

/* The curses colour of a canvas colour; *bold is set when a bright colour is shown as
 * bold on an 8-colour terminal. */
static short curses_color(const rl_term *t, int c, int *bold)
{
    if (c == RL_COLOR_DEFAULT)
        return -1;
    if (c <= RL_COLOR_WHITE)
        return (short)(c - 1);
    if (t->colors >= 16)
        return (short)(c - 1);
    if (c == RL_COLOR_GREY) /* 8 colours: grey as dim white (black would vanish on a dark screen) */
        return COLOR_WHITE;
    if (bold)
        *bold = 1;
    return (short)(c - RL_COLOR_GREY);
}

static short pair_for(rl_term *t, int fg, int bg, int *bold)
{
    if ((fg == 0 && bg == 0) || t->colors == 0 || fg >= RL_NCOLORS || bg >= RL_NCOLORS)
        return 0;
    if (t->pairs[fg][bg])
        return t->pairs[fg][bg];
    if (t->next_pair >= COLOR_PAIRS || t->next_pair > 32000)
        return 0;
    int dummy = 0;
    short f = curses_color(t, fg, bold), b = curses_color(t, bg, &dummy);
    if (!t->default_ok) {
        if (f < 0)
            f = COLOR_WHITE;
        if (b < 0)
            b = COLOR_BLACK;
    }
    if (init_pair((short)t->next_pair, f, b) != OK)
        return 0;
    t->pairs[fg][bg] = (short)t->next_pair;
    return (short)t->next_pair++;
}

void rl_term_blit(rl_term *t, const rl_canvas *c)
{
    int w, h;
    rl_term_size(t, &w, &h);
    erase();
    for (int y = 0; y < c->h && y < h; y++)
        for (int x = 0; x < c->w && x < w; x++) {
            const rl_cell *cell = &c->cells[(size_t)y * (size_t)c->w + (size_t)x];
            attr_t a = A_NORMAL;
            int bold = 0;
            short pair = 0;
            if (t->colors) {
                if (cell->style.fg < RL_NCOLORS && cell->style.bg < RL_NCOLORS)
                    pair = pair_for(t, cell->style.fg, cell->style.bg, &bold);
                if (cell->style.fg >= RL_COLOR_GREY && t->colors < 16) {
                    bold = cell->style.fg != RL_COLOR_GREY;
                    if (cell->style.fg == RL_COLOR_GREY)
                        a |= A_DIM;
                }
            } else if (cell->style.bg != RL_COLOR_DEFAULT) {
                a |= A_REVERSE; /* no colours: coloured backgrounds become reverse video */
            } else if (cell->style.fg == RL_COLOR_GREY) {
                a |= A_DIM;
            }
            if (bold || (cell->style.attr & RL_ATTR_BOLD))
                a |= A_BOLD;
            if (cell->style.attr & RL_ATTR_REVERSE)
                a ^= A_REVERSE;
            if (cell->style.attr & RL_ATTR_UNDERLINE)
                a |= A_UNDERLINE;
            if (cell->style.attr & RL_ATTR_DIM)
                a |= A_DIM;
            wchar_t wc[2] = { (wchar_t)(t->utf8 ? cell->cp : (uint32_t)(unsigned char)cell->ascii), 0 };
            if (wc[0] < 0x20 || (!t->utf8 && wc[0] >= 0x7F))
                wc[0] = '?';
            cchar_t cc;
            if (setcchar(&cc, wc, a, pair, NULL) == OK)
                mvadd_wch(y, x, &cc); /* the bottom-right cell returns ERR after drawing: fine */
        }
    refresh();
}

int rl_term_read_key(rl_term *t, int timeout_ms)
{
    (void)t;
    timeout(timeout_ms);
    wint_t ch;
    int r = get_wch(&ch);
    if (r == ERR)
        return RL_KEY_NONE;
    if (r == KEY_CODE_YES) {
        switch (ch) {
        case KEY_UP: return RL_KEY_UP;
        case KEY_DOWN: return RL_KEY_DOWN;
        case KEY_LEFT: return RL_KEY_LEFT;
        case KEY_RIGHT: return RL_KEY_RIGHT;
        case KEY_HOME: return RL_KEY_HOME;
        case KEY_END: return RL_KEY_END;
        case KEY_PPAGE: return RL_KEY_PGUP;
        case KEY_NPAGE: return RL_KEY_PGDN;
        case KEY_RESIZE: return RL_KEY_RESIZE;
        case KEY_ENTER: return RL_KEY_ENTER;
        case KEY_BACKSPACE: return RL_KEY_BACKSPACE;
        case KEY_MOUSE: {
            MEVENT ev;
            if (getmouse(&ev) != OK)
                return RL_KEY_NONE;
            int what = ev.bstate & BUTTON4_PRESSED ? RL_MOUSE_WHEEL_UP
                     : ev.bstate & BUTTON5_PRESSED ? RL_MOUSE_WHEEL_DOWN
                     : ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED) ? RL_MOUSE_CLICK : 0;
            return what ? rl_key_mouse(what, ev.x, ev.y) : RL_KEY_NONE;
        }
        default: return RL_KEY_NONE;
        }
    }
    if (ch == 27)
        return RL_KEY_ESC;
    return (int)ch;
}

#else /* no ncurses in this build */

struct rl_term {
    int unused;
};

rl_term *rl_term_open(char *err, int errlen)
{
    snprintf(err, (size_t)errlen, "the live TUI needs ncurses: run make deps (then make) — or render a view as "
                                  "text with --render VIEW --size WxH");
    return NULL;
}

void rl_term_close(rl_term *t) { (void)t; }

void rl_term_size(rl_term *t, int *w, int *h)
{
    (void)t;
    *w = 80;
    *h = 24;
}

void rl_term_blit(rl_term *t, const rl_canvas *c)
{
    (void)t;
    (void)c;
}

int rl_term_read_key(rl_term *t, int timeout_ms)
{
    (void)t;
    (void)timeout_ms;
    return 'q';
}

#endif
