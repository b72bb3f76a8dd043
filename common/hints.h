/* hints.h — a lab's hint ladder: the rungs of each step (labs/NN_name/hints.md) and how many of
 * them the learner has been shown (labs/NN_name/hints-used.txt, submitted with the lab file).
 *
 * hints.md: a line "## 28.1 title" starts a step, a line "### title" starts its next rung (the
 * idea, the structure, the traps, near-code); the rung's text runs to the next such line. */
#ifndef RL_HINTS_H
#define RL_HINTS_H

#include <stddef.h>

#define RL_HINTS_MAX_STEPS 16
#define RL_HINTS_MAX_RUNGS 8
#define RL_HINTS_ID_LEN 16

typedef struct {
    char id[RL_HINTS_ID_LEN]; /* "28.1" */
    const char *title;        /* the rest of the "##" line */
    int nrungs;
    const char *rung_title[RL_HINTS_MAX_RUNGS];
    const char *rung_text[RL_HINTS_MAX_RUNGS]; /* trimmed of blank lines at both ends */
} rl_hint_step;

typedef struct {
    int nsteps;
    rl_hint_step steps[RL_HINTS_MAX_STEPS];
    char *buf; /* the file's text, cut in place */
} rl_hints;

/* How many rungs of each step have been shown. */
typedef struct {
    int n;
    char id[RL_HINTS_MAX_STEPS][RL_HINTS_ID_LEN];
    int shown[RL_HINTS_MAX_STEPS];
} rl_hints_used;

/* Reads a hints file; 0, or -1 with err saying which line is wrong. */
int rl_hints_load(const char *path, rl_hints *h, char *err, size_t errlen);
/* Frees what rl_hints_load kept. */
void rl_hints_free(rl_hints *h);
/* The step with this id, or NULL. */
const rl_hint_step *rl_hints_find(const rl_hints *h, const char *id);

/* Reads the record of shown hints (a missing file is an empty record; a step listed twice
 * counts its larger number: a line cannot take back hints shown); 0, or -1 with err. */
int rl_hints_used_load(const char *path, rl_hints_used *u, char *err, size_t errlen);
/* Rungs of step id shown so far (0 if none). */
int rl_hints_used_get(const rl_hints_used *u, const char *id);
/* Records that n rungs of step id have been shown; 0, or -1 when the record is full. */
int rl_hints_used_set(rl_hints_used *u, const char *id, int n);
/* Writes the record; 0, or -1 with err. */
int rl_hints_used_save(const char *path, const rl_hints_used *u, char *err, size_t errlen);

#endif
