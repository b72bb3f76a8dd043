/* options.c — fuzz target: the command line's parsers. The input is a command line, one
 * argument per line: the common options (rl_opts_parse, with --fault's specs), each argument
 * as a declared number, a byte size, a time and a fault spec. */
#include <stdlib.h>
#include <string.h>
#include "calc.h"
#include "fault.h"
#include "fuzz.h"
#include "launch.h"
#include "optnum.h"
#include "tui.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = rl_fuzz_string(data, size), *argv[MAX_ARGS + 2], err[512];
    if (!text)
        return 0;
    int argc = 0;
    argv[argc++] = "ringlab";
    for (char *a = text, *next; a && argc < MAX_ARGS; a = next) {
        next = strchr(a, '\n');
        if (next)
            *next++ = 0;
        argv[argc++] = a;
    }
    argv[argc] = NULL;
    static const rl_optnum_decl decl[] = {
        { "--steps", 1, 10000000, 1 }, { "--lr", 1e-9, 10, 0 }, { "--frac", 0, 1, 0 }, { "--n", -5, 5, 1 },
    };
    for (int i = 1; i < argc; i++) {
        double v;
        int n;
        rl_optnum_find(decl, (int)(sizeof decl / sizeof decl[0]), argv[i], i + 1 < argc ? argv[i + 1] : NULL, &v,
                       err, sizeof err);
        rl_optnum_int("-n", argv[i], 0, 100000, &n, err, sizeof err);
        rl_calc_parse_bytes(argv[i], &v);
        rl_tui_parse_time(argv[i], &v);
        rl_fault f;
        rl_fault_parse(argv[i], &f, err, (int)sizeof err);
    }
    rl_opts o;
    rl_opts_init(&o);
    int left = argc;
    rl_opts_parse(&o, &left, argv, err, (int)sizeof err);
    free(text);
    return 0;
}
