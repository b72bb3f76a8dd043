/* hint.c — ringlab hint: a lab's hint ladder, one rung at a time (common/hints.h). */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "hints.h"

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: ringlab hint LABDIR [STEP] [--all] [--used FILE]\n"
               "  LABDIR       the lab's folder (labs/28_ddp): its hints are LABDIR/hints.md\n"
               "  STEP         the step (28.1): prints the next hint you have not seen and records it\n"
               "               (no STEP: every step and how many of its hints you have seen)\n"
               "  --all        prints again every hint of STEP you have seen, and records nothing\n"
               "  --used FILE  the record of hints shown (default LABDIR/hints-used.txt)\n");
    return rc;
}

/* Prints rung k (0-based) of a step. */
static void print_rung(const rl_hint_step *st, int k)
{
    printf("-- hint %d of %d for step %s (%s): %s --\n%s\n\n", k + 1, st->nrungs, st->id, st->title,
           st->rung_title[k], st->rung_text[k]);
}

int rl_cmd_hint(int argc, char **argv)
{
    const char *dir = NULL, *step = NULL, *used_path = NULL;
    int all = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return usage(stdout, 0);
        if (!strcmp(argv[i], "--all"))
            all = 1;
        else if (!strcmp(argv[i], "--used") && i + 1 < argc)
            used_path = argv[++i];
        else if (argv[i][0] == '-')
            return fprintf(stderr, "ringlab hint: unknown option '%s'\n", argv[i]), usage(stderr, 2);
        else if (!dir)
            dir = argv[i];
        else if (!step)
            step = argv[i];
        else
            return fprintf(stderr, "ringlab hint: one step at a time ('%s' is one too many)\n", argv[i]),
                   usage(stderr, 2);
    }
    if (!dir)
        return usage(stderr, 2);
    char path[1024], used_buf[1024], err[512];
    snprintf(path, sizeof path, "%s/hints.md", dir);
    if (!used_path) {
        snprintf(used_buf, sizeof used_buf, "%s/hints-used.txt", dir);
        used_path = used_buf;
    }
    rl_hints h;
    rl_hints_used u;
    if (rl_hints_load(path, &h, err, sizeof err)) {
        fprintf(stderr, "ringlab hint: %s\n", err);
        rl_hints_free(&h);
        return 2;
    }
    if (rl_hints_used_load(used_path, &u, err, sizeof err)) {
        fprintf(stderr, "ringlab hint: %s (fix or delete the line)\n", err);
        rl_hints_free(&h);
        return 2;
    }
    int rc = 0;
    const rl_hint_step *st = step ? rl_hints_find(&h, step) : NULL;
    if (!step) {
        printf("Hints of %s (shown / in the ladder):\n", dir);
        for (int s = 0; s < h.nsteps; s++)
            printf("  %-6s %-44s %d / %d\n", h.steps[s].id, h.steps[s].title, rl_hints_used_get(&u, h.steps[s].id),
                   h.steps[s].nrungs);
        const char *base = strrchr(dir, '/') && strrchr(dir, '/')[1] ? strrchr(dir, '/') + 1 : dir;
        printf("The next hint of a step: make hint LAB=%.*s STEP=<step>   (each is recorded in %s)\n",
               (int)strcspn(base, "_"), base, used_path);
    } else if (!st) {
        fprintf(stderr, "ringlab hint: %s has no hints for step '%s'; its steps:", path, step);
        for (int s = 0; s < h.nsteps; s++)
            fprintf(stderr, " %s", h.steps[s].id);
        fprintf(stderr, "\n");
        rc = 2;
    } else {
        int seen = rl_hints_used_get(&u, st->id);
        if (seen > st->nrungs)
            seen = st->nrungs;
        if (all) {
            if (!seen)
                printf("No hint of step %s shown yet: without ALL=1, make hint shows the first.\n", st->id);
            for (int k = 0; k < seen; k++)
                print_rung(st, k);
        } else if (seen == st->nrungs) {
            for (int k = 0; k < seen; k++)
                print_rung(st, k);
            printf("That is every hint of step %s (%d of %d).\n", st->id, seen, st->nrungs);
        } else {
            if (rl_hints_used_set(&u, st->id, seen + 1) || rl_hints_used_save(used_path, &u, err, sizeof err)) {
                fprintf(stderr, "ringlab hint: could not record the hint, so it is not shown: %s\n", err);
                rc = 1;
            } else {
                print_rung(st, seen);
                printf("Seen %d of %d hints of step %s (recorded in %s, which you submit; ALL=1 shows them "
                       "again).%s\n",
                       seen + 1, st->nrungs, st->id, used_path,
                       seen + 1 < st->nrungs ? " The next one says more: try first with this one." : "");
            }
        }
    }
    rl_hints_free(&h);
    return rc;
}
