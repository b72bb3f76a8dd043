/* canvas.c — the character canvas every view draws into. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "canvas.h"

static const rl_cell blank = { ' ', ' ', { 0, 0, 0 } };

rl_canvas *rl_canvas_new(int w, int h)
{
    if (w < 1 || h < 1 || w > 10000 || h > 10000)
        return NULL;
    rl_canvas *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cells = malloc((size_t)w * (size_t)h * sizeof *c->cells);
    if (!c->cells) {
        free(c);
        return NULL;
    }
    c->w = w;
    c->h = h;
    rl_canvas_clear(c);
    return c;
}

void rl_canvas_free(rl_canvas *c)
{
    if (!c)
        return;
    free(c->cells);
    free(c);
}

int rl_canvas_resize(rl_canvas *c, int w, int h)
{
    if (!c || w < 1 || h < 1 || w > 10000 || h > 10000)
        return -1;
    rl_cell *cells = realloc(c->cells, (size_t)w * (size_t)h * sizeof *cells);
    if (!cells)
        return -1;
    c->cells = cells;
    c->w = w;
    c->h = h;
    rl_canvas_clear(c);
    return 0;
}

void rl_canvas_clear(rl_canvas *c)
{
    size_t n = (size_t)c->w * (size_t)c->h;
    for (size_t i = 0; i < n; i++)
        c->cells[i] = blank;
}

rl_cell *rl_canvas_cell(rl_canvas *c, int x, int y)
{
    if (!c || x < 0 || y < 0 || x >= c->w || y >= c->h)
        return NULL;
    return &c->cells[(size_t)y * (size_t)c->w + (size_t)x];
}

void rl_canvas_put(rl_canvas *c, int x, int y, rl_glyph g, rl_style s)
{
    rl_cell *cell = rl_canvas_cell(c, x, y);
    if (cell) {
        cell->cp = g.cp;
        cell->ascii = g.ascii;
        cell->style = s;
    }
}

void rl_canvas_restyle(rl_canvas *c, int x, int y, rl_style s)
{
    rl_cell *cell = rl_canvas_cell(c, x, y);
    if (cell)
        cell->style = s;
}

void rl_canvas_fill(rl_canvas *c, int x, int y, int w, int h, rl_glyph g, rl_style s)
{
    for (int j = y; j < y + h; j++)
        for (int i = x; i < x + w; i++)
            rl_canvas_put(c, i, j, g, s);
}

void rl_canvas_box(rl_canvas *c, int x, int y, int w, int h, rl_style s)
{
    if (w < 2 || h < 2)
        return;
    for (int i = x + 1; i < x + w - 1; i++) {
        rl_canvas_put(c, i, y, RL_G_HLINE, s);
        rl_canvas_put(c, i, y + h - 1, RL_G_HLINE, s);
    }
    for (int j = y + 1; j < y + h - 1; j++) {
        rl_canvas_put(c, x, j, RL_G_VLINE, s);
        rl_canvas_put(c, x + w - 1, j, RL_G_VLINE, s);
    }
    rl_canvas_put(c, x, y, RL_G_TL, s);
    rl_canvas_put(c, x + w - 1, y, RL_G_TR, s);
    rl_canvas_put(c, x, y + h - 1, RL_G_BL, s);
    rl_canvas_put(c, x + w - 1, y + h - 1, RL_G_BR, s);
}

/* Decodes one UTF-8 codepoint at *p and advances; malformed input gives U+FFFD. */
static uint32_t next_cp(const char **p)
{
    const unsigned char *s = (const unsigned char *)*p;
    uint32_t cp;
    int extra;
    if (s[0] < 0x80) {
        *p += 1;
        return s[0];
    } else if ((s[0] & 0xE0) == 0xC0) {
        cp = s[0] & 0x1F, extra = 1;
    } else if ((s[0] & 0xF0) == 0xE0) {
        cp = s[0] & 0x0F, extra = 2;
    } else if ((s[0] & 0xF8) == 0xF0) {
        cp = s[0] & 0x07, extra = 3;
    } else {
        *p += 1;
        return 0xFFFD;
    }
    for (int i = 1; i <= extra; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *p += i;
            return 0xFFFD;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    *p += extra + 1;
    return cp;
}

/* Codepoints that take exactly one column and have a fallback; everything else outside
 * printable ASCII is shown as '?' so that a trace cannot break the layout. */
static const struct { uint32_t cp; char ascii; } fallbacks[] = {
    { 0x00B7, '.' }, { 0x00D7, 'x' }, { 0x00B5, 'u' }, { 0x03BC, 'u' }, { 0x00F7, '/' },
    { 0x2212, '-' }, { 0x2013, '-' }, { 0x2014, '-' }, { 0x2026, '~' }, { 0x2192, '>' },
    { 0x2190, '<' }, { 0x2191, '^' }, { 0x2193, 'v' }, { 0x2248, '~' }, { 0x2264, '<' },
    { 0x2265, '>' }, { 0x03A8, 'P' }, { 0x03B1, 'a' }, { 0x03B2, 'b' }, { 0x2588, '#' },
    { 0x2593, '=' }, { 0x2592, '~' }, { 0x2591, '.' }, { 0x2500, '-' }, { 0x2502, '|' },
    { 0x250C, '+' }, { 0x2510, '+' }, { 0x2514, '+' }, { 0x2518, '+' }, { 0x2575, '\'' },
    { 0x25B2, '^' }, { 0x2550, '=' }, { 0x2504, '-' }, { 0x259A, '%' }, { 0x25CF, '*' },
    { 0x2022, '*' }, { 0x258F, '|' }, { 0x2190, '<' },
};

char rl_canvas_ascii_for(uint32_t cp)
{
    if (cp >= 0x20 && cp < 0x7F)
        return (char)cp;
    for (size_t i = 0; i < sizeof fallbacks / sizeof fallbacks[0]; i++)
        if (fallbacks[i].cp == cp)
            return fallbacks[i].ascii;
    return '?';
}

/* The codepoint a text character is drawn as: itself when it is one column wide and
 * known, else '?'. */
static uint32_t safe_cp(uint32_t cp)
{
    if (cp >= 0x20 && cp < 0x7F)
        return cp;
    return rl_canvas_ascii_for(cp) == '?' ? '?' : cp;
}

int rl_canvas_text_width(const char *utf8)
{
    int n = 0;
    for (const char *p = utf8; p && *p; n++)
        next_cp(&p);
    return n;
}

int rl_canvas_text(rl_canvas *c, int x, int y, int maxw, rl_style s, const char *utf8)
{
    if (!c || !utf8 || y < 0 || y >= c->h)
        return 0;
    if (maxw < 0 || x + maxw > c->w)
        maxw = c->w - x;
    if (maxw <= 0)
        return 0;
    int total = rl_canvas_text_width(utf8), n = 0;
    const char *p = utf8;
    while (*p && n < maxw) {
        uint32_t cp = safe_cp(next_cp(&p));
        if (total > maxw && n == maxw - 1)
            cp = 0x2026; /* … */
        rl_canvas_put(c, x + n, y, RL_GLYPH(cp, rl_canvas_ascii_for(cp)), s);
        n++;
    }
    return n;
}

int rl_canvas_printf(rl_canvas *c, int x, int y, int maxw, rl_style s, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return rl_canvas_text(c, x, y, maxw, s, buf);
}
