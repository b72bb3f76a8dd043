/* fault.c — parsing of --fault specs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fault.h"

static const char *const kind_names[RL_FAULT_NKINDS] = { "hang", "straggler", "mismatch" };

const char *rl_fault_kind_name(rl_fault_kind k)
{
    return (k >= 0 && k < RL_FAULT_NKINDS) ? kind_names[k] : "?";
}

const char *rl_fault_help(void)
{
    return "  hang:rank=R:seq=S        rank R never enters collective S on the world communicator\n"
           "  straggler:rank=R:ms=X    rank R's compute is X ms slower every step (virtual time)\n"
           "  mismatch:rank=R:seq=S    rank R calls collective S with a wrong count\n";
}

int rl_fault_parse(const char *spec, rl_fault *f, char *err, int errlen)
{
    char buf[128];
    if (!spec || strlen(spec) >= sizeof buf) {
        snprintf(err, (size_t)errlen, "--fault: spec missing or too long");
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", spec);
    memset(f, 0, sizeof *f);
    f->rank = -1;
    f->seq = -1;
    f->ms = -1;
    char *save = NULL, *tok = strtok_r(buf, ":", &save);
    int kind = -1;
    for (int i = 0; tok && i < RL_FAULT_NKINDS; i++)
        if (strcmp(tok, kind_names[i]) == 0)
            kind = i;
    if (kind < 0) {
        snprintf(err, (size_t)errlen, "--fault '%s': unknown kind '%s' (use hang, straggler or mismatch)",
                 spec, tok ? tok : "");
        return -1;
    }
    f->kind = (rl_fault_kind)kind;
    while ((tok = strtok_r(NULL, ":", &save))) {
        char *eq = strchr(tok, '='), *end;
        if (!eq) {
            snprintf(err, (size_t)errlen, "--fault '%s': '%s' is not key=value", spec, tok);
            return -1;
        }
        *eq = 0;
        const char *val = eq + 1;
        double v = strtod(val, &end);
        if (!*val || *end || v < 0) {
            snprintf(err, (size_t)errlen, "--fault '%s': %s=%s is not a number >= 0", spec, tok, val);
            return -1;
        }
        if (strcmp(tok, "rank") == 0)
            f->rank = (int)v;
        else if (strcmp(tok, "seq") == 0)
            f->seq = (int64_t)v;
        else if (strcmp(tok, "ms") == 0)
            f->ms = v;
        else {
            snprintf(err, (size_t)errlen, "--fault '%s': unknown key '%s' (rank, seq, ms)", spec, tok);
            return -1;
        }
    }
    int need_seq = f->kind != RL_FAULT_STRAGGLER;
    if (f->rank < 0 || (need_seq && f->seq < 0) || (!need_seq && f->ms < 0)) {
        snprintf(err, (size_t)errlen, "--fault '%s': %s needs rank=R and %s", spec, kind_names[kind],
                 need_seq ? "seq=S" : "ms=X");
        return -1;
    }
    return 0;
}
