/* render_text.h — the headless renderer: a canvas printed as plain text (no colours),
 * in UTF-8 or with ASCII fallback glyphs. Used by tests and by labs after a run. */
#ifndef RL_TUI_RENDER_TEXT_H
#define RL_TUI_RENDER_TEXT_H
#include <stdio.h>
#include "canvas.h"

/* The canvas as text, one line per row, trailing blanks removed, each line ending in '\n'
 * (utf8 = 0: ASCII fallbacks). Caller frees; NULL when out of memory. */
char *rl_canvas_to_text(const rl_canvas *c, int utf8);
/* Writes rl_canvas_to_text to f; returns 0 or -1. */
int rl_canvas_write_text(const rl_canvas *c, int utf8, FILE *f);

#endif
