/* rules.h — what a lab file may use: the rules in grader/allow/ (common.txt and one file per
 * lab), read by the object check before a grader links a lab file and by the grader's judge,
 * which holds what the code under test called at run time against them.
 * A rules file: `#` starts a comment (after a rule: the reason shown with a refusal);
 *   define NAME STEP         a function of the lab's API (the only globals allowed)
 *   allow PATTERN ...        symbols every function may reference (PATTERN: a name or a prefix*)
 *   deny PATTERN ...         symbols no function may reference (beats allow)
 *   deny FUNC: PATTERN ...   symbols FUNC may not reach
 *   reference FILE NAME ...  functions of FILE (grader or runtime code) a lab file may not paste */
#ifndef RL_RULES_H
#define RL_RULES_H
#include <stdio.h>

typedef struct rl_rule {
    int kind;             /* 'd' define, 'a' allow, 'n' deny (everywhere), 'f' deny for one function,
                             'r' reference */
    char *func;           /* 'f': the function; 'd': the name; 'r': the file */
    char *step;           /* 'd': the step */
    char **pats;
    int npats;
    char *why;            /* the rule's comment, or "" */
} rl_rule;

typedef struct rl_rules {
    rl_rule *r;
    int n, cap;
} rl_rules;

/* Adds the rules read from f (named name in messages); 0, or -1 with a message on stderr. */
int rl_rules_read(FILE *f, const char *name, rl_rules *rs);
/* Adds the rules of the file at path; 0, or -1 with a message on stderr. */
int rl_rules_read_file(const char *path, rl_rules *rs);
/* The define rule of name, or NULL. */
const rl_rule *rl_rules_define(const rl_rules *rs, const char *name);
/* The first rule of kind (and function, for 'f') with a pattern matching name, or NULL. */
const rl_rule *rl_rules_find(const rl_rules *rs, int kind, const char *func, const char *name);
/* 1 when name matches pat (a name, or a prefix ending in '*'). */
int rl_rules_match(const char *pat, const char *name);
/* Frees every rule. */
void rl_rules_free(rl_rules *rs);

#endif
