/* canvas.h — a grid of character cells (glyph + colours + attributes) that every TUI view
 * draws into. The ncurses front end (term.c) blits it; render_text.c prints it as text.
 * Nothing here depends on ncurses. */
#ifndef RL_TUI_CANVAS_H
#define RL_TUI_CANVAS_H
#include <stdint.h>

/* 16 terminal colours; 0 is the terminal's default. Bright ones fall back to bold on
 * 8-colour terminals. */
typedef enum {
    RL_COLOR_DEFAULT = 0,
    RL_COLOR_BLACK, RL_COLOR_RED, RL_COLOR_GREEN, RL_COLOR_YELLOW,
    RL_COLOR_BLUE, RL_COLOR_MAGENTA, RL_COLOR_CYAN, RL_COLOR_WHITE,
    RL_COLOR_GREY, RL_COLOR_BRIGHT_RED, RL_COLOR_BRIGHT_GREEN, RL_COLOR_BRIGHT_YELLOW,
    RL_COLOR_BRIGHT_BLUE, RL_COLOR_BRIGHT_MAGENTA, RL_COLOR_BRIGHT_CYAN, RL_COLOR_BRIGHT_WHITE,
    RL_NCOLORS
} rl_color;

enum { RL_ATTR_BOLD = 1, RL_ATTR_REVERSE = 2, RL_ATTR_UNDERLINE = 4, RL_ATTR_DIM = 8 };

/* How a cell looks: foreground, background, RL_ATTR_* bits. */
typedef struct rl_style {
    uint8_t fg, bg, attr;
} rl_style;

/* A glyph: a Unicode codepoint and the ASCII character shown when UTF-8 is unavailable. */
typedef struct rl_glyph {
    uint32_t cp;
    char ascii;
} rl_glyph;

typedef struct rl_cell {
    uint32_t cp;
    char ascii;
    rl_style style;
} rl_cell;

typedef struct rl_canvas {
    int w, h;
    rl_cell *cells;   /* h rows of w cells */
} rl_canvas;

#define RL_STYLE(fg, bg, attr) ((rl_style){ (uint8_t)(fg), (uint8_t)(bg), (uint8_t)(attr) })
#define RL_STYLE_PLAIN RL_STYLE(RL_COLOR_DEFAULT, RL_COLOR_DEFAULT, 0)
#define RL_GLYPH(cp, ascii) ((rl_glyph){ (uint32_t)(cp), (ascii) })

/* Block and box glyphs with their ASCII fallbacks. */
#define RL_G_SPACE   RL_GLYPH(' ', ' ')
#define RL_G_FULL    RL_GLYPH(0x2588, '#')  /* █ */
#define RL_G_DARK    RL_GLYPH(0x2593, '=')  /* ▓ */
#define RL_G_MEDIUM  RL_GLYPH(0x2592, '~')  /* ▒ */
#define RL_G_LIGHT   RL_GLYPH(0x2591, '.')  /* ░ */
#define RL_G_HLINE   RL_GLYPH(0x2500, '-')  /* ─ */
#define RL_G_VLINE   RL_GLYPH(0x2502, '|')  /* │ */
#define RL_G_TL      RL_GLYPH(0x250C, '+')  /* ┌ */
#define RL_G_TR      RL_GLYPH(0x2510, '+')  /* ┐ */
#define RL_G_BL      RL_GLYPH(0x2514, '+')  /* └ */
#define RL_G_BR      RL_GLYPH(0x2518, '+')  /* ┘ */
#define RL_G_TICK    RL_GLYPH(0x2575, '\'') /* ╵ */
#define RL_G_UP      RL_GLYPH(0x25B2, '^')  /* ▲ */

/* A w x h canvas of blank cells (NULL on bad size or no memory). */
rl_canvas *rl_canvas_new(int w, int h);
/* Frees a canvas (NULL is fine). */
void rl_canvas_free(rl_canvas *c);
/* Changes the size, blanking every cell; returns 0 or -1 (the canvas is unchanged). */
int rl_canvas_resize(rl_canvas *c, int w, int h);
/* Blanks every cell. */
void rl_canvas_clear(rl_canvas *c);
/* The cell at (x, y), or NULL outside the canvas. */
rl_cell *rl_canvas_cell(rl_canvas *c, int x, int y);
/* Sets one cell (ignored outside the canvas). */
void rl_canvas_put(rl_canvas *c, int x, int y, rl_glyph g, rl_style s);
/* Changes only the style of one cell. */
void rl_canvas_restyle(rl_canvas *c, int x, int y, rl_style s);
/* Fills a rectangle with one glyph. */
void rl_canvas_fill(rl_canvas *c, int x, int y, int w, int h, rl_glyph g, rl_style s);
/* Draws a box outline. */
void rl_canvas_box(rl_canvas *c, int x, int y, int w, int h, rl_style s);
/* Writes UTF-8 text from (x, y), at most maxw columns (maxw < 0: to the right edge); text
 * that does not fit ends with "…". Returns the number of columns written. */
int rl_canvas_text(rl_canvas *c, int x, int y, int maxw, rl_style s, const char *utf8);
/* printf-style rl_canvas_text. */
int rl_canvas_printf(rl_canvas *c, int x, int y, int maxw, rl_style s, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Number of columns UTF-8 text takes on the canvas. */
int rl_canvas_text_width(const char *utf8);
/* The ASCII fallback of a codepoint that appears in text ('?' when there is none). */
char rl_canvas_ascii_for(uint32_t cp);

#endif
