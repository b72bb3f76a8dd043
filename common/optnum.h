/* optnum.h — the numbers of the command line: one parser, each option with its declared range,
 * and one message for a bad value ("--batch: '-1' is not a whole number from 1 to 65536"). */
#ifndef RL_OPTNUM_H
#define RL_OPTNUM_H
#include <stddef.h>
#include <stdio.h>

/* Parses text as a number of option name within [min, max] (whole: no fraction, no exponent
 * that leaves one). 0, or -1 with the one-line message in err: the value, the option and the
 * accepted range — a missing value, text that is not a number, inf/nan, an overflow and a
 * value outside the range are all refused. */
int rl_optnum(const char *name, const char *text, double min, double max, int whole, double *out, char *err,
              size_t errlen);
/* An option's declaration: its name and the range it accepts. */
typedef struct rl_optnum_decl {
    const char *name;
    double min, max;
    int whole;
} rl_optnum_decl;
/* When arg is one of the n declared options: parses its value text (NULL when missing) into
 * *out and returns its index, or -2 with rl_optnum's message in err; -1 when arg is none. */
int rl_optnum_find(const rl_optnum_decl *decl, int n, const char *arg, const char *text, double *out, char *err,
                   size_t errlen);
/* The flag that makes a program print its numeric options' declarations and exit 0 (the
 * command-line sweep of make test reads them, so that every declared option is tried). */
#define RL_OPTNUM_LIST_FLAG "--list-numeric-options"
/* Prints the declarations, one per line: "NAME MIN MAX whole|real". */
void rl_optnum_list(FILE *out, const rl_optnum_decl *decl, int n);
/* rl_optnum for a whole number into an int. */
int rl_optnum_int(const char *name, const char *text, int min, int max, int *out, char *err, size_t errlen);

#endif
