/* term.h — the ncurses front end: opens the terminal, blits a canvas (256/16/8 colours or
 * none; UTF-8 glyphs, or their ASCII fallbacks when the locale is not UTF-8), reads keys.
 * All ncurses code of ringlab lives in term.c. */
#ifndef RL_TUI_TERM_H
#define RL_TUI_TERM_H
#include "canvas.h"

typedef struct rl_term rl_term;

/* Opens the full-screen terminal UI; NULL with a message in err when this build has no
 * ncurses or the terminal cannot be used. */
rl_term *rl_term_open(char *err, int errlen);
/* Restores the terminal and frees t (NULL is fine). */
void rl_term_close(rl_term *t);
/* The terminal's current size in cells. */
void rl_term_size(rl_term *t, int *w, int *h);
/* Shows the canvas (cells outside the terminal are skipped). */
void rl_term_blit(rl_term *t, const rl_canvas *c);
/* Waits up to timeout_ms (< 0: forever) for a key; returns it (RL_KEY_* or a character),
 * RL_KEY_RESIZE after a resize, RL_KEY_NONE on timeout. */
int rl_term_read_key(rl_term *t, int timeout_ms);

#endif
