/* render_text.c — prints a canvas as plain text (UTF-8 or ASCII). */
#include <stdlib.h>
#include <string.h>
#include "render_text.h"

/* Appends the UTF-8 encoding of cp to out; returns the number of bytes. */
static int put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

char *rl_canvas_to_text(const rl_canvas *c, int utf8)
{
    if (!c)
        return NULL;
    size_t cap = (size_t)c->h * ((size_t)c->w * (utf8 ? 4 : 1) + 1) + 1;
    char *out = malloc(cap), *p = out;
    if (!out)
        return NULL;
    for (int y = 0; y < c->h; y++) {
        char *line = p, *last = p; /* last: just after the last non-blank */
        for (int x = 0; x < c->w; x++) {
            const rl_cell *cell = &c->cells[(size_t)y * (size_t)c->w + (size_t)x];
            if (utf8)
                p += put_utf8(p, cell->cp ? cell->cp : ' ');
            else
                *p++ = (cell->ascii > 0x1F && cell->ascii < 0x7F) ? cell->ascii : '?';
            if (p[-1] != ' ')
                last = p;
        }
        p = last > line ? last : line;
        *p++ = '\n';
    }
    *p = 0;
    return out;
}

int rl_canvas_write_text(const rl_canvas *c, int utf8, FILE *f)
{
    char *s = rl_canvas_to_text(c, utf8);
    if (!s)
        return -1;
    int rc = fputs(s, f) < 0 ? -1 : 0;
    free(s);
    return rc;
}
