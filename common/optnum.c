/* optnum.c — the command line's numbers, each within its declared range. */
#include "optnum.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rl_optnum(const char *name, const char *text, double min, double max, int whole, double *out, char *err,
              size_t errlen)
{
    char *end = NULL;
    double v = 0;
    /* decimal only: no hex ("0x10"), no leading space (strtod would take both) */
    if (text && *text && !strpbrk(text, "xXpP") && !strchr(" \t\n", text[0])) {
        errno = 0;
        v = strtod(text, &end);
    }
    int ok = text && *text && end && !*end && errno != ERANGE && isfinite(v) && v >= min && v <= max &&
             (!whole || v == floor(v));
    if (ok) {
        *out = v;
        return 0;
    }
    if (err && errlen)
        snprintf(err, errlen, "%s: '%s' is not %s from %.15g to %.15g", name, text ? text : "(missing)",
                 whole ? "a whole number" : "a number", min, max);
    return -1;
}

int rl_optnum_int(const char *name, const char *text, int min, int max, int *out, char *err, size_t errlen)
{
    double v;
    if (rl_optnum(name, text, min, max, 1, &v, err, errlen))
        return -1;
    *out = (int)v;
    return 0;
}

int rl_optnum_find(const rl_optnum_decl *decl, int n, const char *arg, const char *text, double *out, char *err,
                   size_t errlen)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(arg, decl[k].name))
            return rl_optnum(arg, text, decl[k].min, decl[k].max, decl[k].whole, out, err, errlen) ? -2 : k;
    return -1;
}

void rl_optnum_list(FILE *out, const rl_optnum_decl *decl, int n)
{
    for (int k = 0; k < n; k++)
        fprintf(out, "%s %.15g %.15g %s\n", decl[k].name, decl[k].min, decl[k].max, decl[k].whole ? "whole" : "real");
}
