/* fault.c — parsing of --fault specs and the queries lab code makes about them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"
#include "fault.h"
#include "internal.h"
#include "launch.h"

static const char *const kind_names[RL_FAULT_NKINDS] = { "hang", "straggler", "mismatch", "nan", "hot-expert" };

/* Keys each kind takes (required ones first), for parsing and messages. */
static const char *const kind_keys[RL_FAULT_NKINDS] = { "rank, seq", "rank, ms", "rank, seq", "rank, step, layer",
                                                        "expert, frac" };

const char *rl_fault_kind_name(rl_fault_kind k)
{
    return (k >= 0 && k < RL_FAULT_NKINDS) ? kind_names[k] : "?";
}

const char *rl_fault_help(void)
{
    return "  hang:rank=R:seq=S        rank R never enters collective S on the world communicator\n"
           "  straggler:rank=R:ms=X    rank R's compute is X ms slower every step (virtual time)\n"
           "  mismatch:rank=R:seq=S    rank R calls collective S with a wrong count\n"
           "  nan:rank=R:step=S[:layer=L]  a NaN appears in rank R's layer-L activation (default 0) at step S\n"
           "  hot-expert:expert=E:frac=F   a fraction F (0..1) of the tokens goes to MoE expert E\n";
}

/* Does the kind take this key? */
static int kind_takes(int kind, const char *key)
{
    const char *keys = kind_keys[kind];
    size_t n = strlen(key);
    if (n == 0) /* ("nan:rank=2:=3": strstr finds "" everywhere, past the end too) */
        return 0;
    for (const char *p = strstr(keys, key); p; p = strstr(p + 1, key))
        if ((p == keys || p[-1] == ' ') && (p[n] == 0 || p[n] == ','))
            return 1;
    return 0;
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
    f->step = -1;
    f->layer = -1;
    f->expert = -1;
    f->frac = -1;
    if (strchr(spec, ',')) {
        snprintf(err, (size_t)errlen, "--fault '%s': one --fault takes one fault; give --fault again for another "
                 "(--fault KIND:key=value --fault KIND:key=value)", spec);
        return -1;
    }
    char *save = NULL, *tok = strtok_r(buf, ":", &save);
    int kind = -1;
    for (int i = 0; tok && i < RL_FAULT_NKINDS; i++)
        if (strcmp(tok, kind_names[i]) == 0)
            kind = i;
    if (kind < 0) {
        snprintf(err, (size_t)errlen,
                 "--fault '%s': unknown kind '%s' (use hang, straggler, mismatch, nan or hot-expert)", spec,
                 tok ? tok : "");
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
        if (!*val || *end || !(v >= 0) || !isfinite(v) || strspn(val, "0123456789.") != strlen(val)) {
            snprintf(err, (size_t)errlen, "--fault '%s': %s=%s is not a plain decimal number >= 0 (digits and a point, "
                     "e.g. %s=%s)", spec, tok, val, tok, !strcmp(tok, "frac") ? "0.6" : !strcmp(tok, "ms") ? "800" : "3");
            return -1;
        }
        char key[64];
        int times = 0;
        snprintf(key, sizeof key, ":%s=", tok);
        for (const char *p = strstr(spec, key); p; p = strstr(p + 1, key))
            times++;
        if (times > 1) {
            snprintf(err, (size_t)errlen, "--fault '%s': %s is given twice; give it once", spec, tok);
            return -1;
        }
        int whole = v == floor(v) && v < 2e9;
        if (!kind_takes(kind, tok)) {
            snprintf(err, (size_t)errlen, "--fault '%s': unknown key '%s' (%s takes %s)", spec, tok,
                     kind_names[kind], kind_keys[kind]);
            return -1;
        }
        if (strcmp(tok, "ms") != 0 && strcmp(tok, "frac") != 0 && !whole) {
            snprintf(err, (size_t)errlen, "--fault '%s': %s=%s must be a whole number", spec, tok, val);
            return -1;
        }
        if (strcmp(tok, "rank") == 0)
            f->rank = (int)v;
        else if (strcmp(tok, "seq") == 0)
            f->seq = (int64_t)v;
        else if (strcmp(tok, "ms") == 0) {
            if (v > 3600000) {
                snprintf(err, (size_t)errlen, "--fault '%s': ms=%s is not a number from 0 to 3600000 (an hour)", spec,
                         val);
                return -1;
            }
            f->ms = v;
        }
        else if (strcmp(tok, "step") == 0)
            f->step = (int64_t)v;
        else if (strcmp(tok, "layer") == 0)
            f->layer = (int)v;
        else if (strcmp(tok, "expert") == 0)
            f->expert = (int)v;
        else if (strcmp(tok, "frac") == 0) {
            if (v > 1) {
                snprintf(err, (size_t)errlen, "--fault '%s': frac=%s must be a fraction between 0 and 1 (0.6 = 60%%)",
                         spec, val);
                return -1;
            }
            f->frac = v;
        }
    }
    switch (f->kind) {
    case RL_FAULT_HANG:
    case RL_FAULT_MISMATCH:
    case RL_FAULT_STRAGGLER: {
        int need_seq = f->kind != RL_FAULT_STRAGGLER;
        if (f->rank < 0 || (need_seq && f->seq < 0) || (!need_seq && f->ms < 0)) {
            snprintf(err, (size_t)errlen, "--fault '%s': %s needs rank=R and %s", spec, kind_names[kind],
                     need_seq ? "seq=S" : "ms=X");
            return -1;
        }
        break;
    }
    case RL_FAULT_NAN:
        if (f->rank < 0 || f->step < 0) {
            snprintf(err, (size_t)errlen, "--fault '%s': nan needs rank=R and step=S (layer=L optional, default 0)",
                     spec);
            return -1;
        }
        if (f->layer < 0)
            f->layer = 0;
        break;
    case RL_FAULT_HOT_EXPERT:
        if (f->expert < 0 || f->frac < 0) {
            snprintf(err, (size_t)errlen, "--fault '%s': hot-expert needs expert=E and frac=F (e.g. expert=3:frac=0.6)",
                     spec);
            return -1;
        }
        break;
    default: break;
    }
    return 0;
}

const rl_fault *rl_fault_find(const rl_ctx *ctx, rl_fault_kind kind)
{
    if (!ctx)
        return NULL;
    const rl_opts *o = rl_ctx_opts(ctx);
    for (int i = 0; o && i < o->nfaults && i < RL_MAX_FAULTS; i++)
        if (o->faults[i].kind == kind)
            return &o->faults[i];
    return NULL;
}

int rl_fault_nan_due(const rl_ctx *ctx, int64_t step, int layer)
{
    if (!ctx)
        return 0;
    const rl_opts *o = rl_ctx_opts(ctx);
    for (int i = 0; o && i < o->nfaults && i < RL_MAX_FAULTS; i++) {
        const rl_fault *f = &o->faults[i];
        if (f->kind == RL_FAULT_NAN && f->rank == rl_rank(ctx) && f->step == step && f->layer == layer) {
            __atomic_store_n(&ctx->world->fault_fired[i], 1, __ATOMIC_RELAXED);
            return 1;
        }
    }
    return 0;
}

int rl_fault_hot_expert(const rl_ctx *ctx, int *expert, double *frac)
{
    const rl_fault *f = rl_fault_find(ctx, RL_FAULT_HOT_EXPERT);
    if (!f)
        return 0;
    if (expert)
        *expert = f->expert;
    if (frac)
        *frac = f->frac;
    return 1;
}

int rl_fault_skew_routing(rl_ctx *ctx, int64_t tokens, int top_k, int experts, int *expert_ids)
{
    int hot;
    double frac;
    if (!rl_fault_hot_expert(ctx, &hot, &frac))
        return 0;
    if (tokens < 0 || top_k < 1 || experts < 1 || top_k > experts || (tokens > 0 && !expert_ids))
        return rl_error(ctx, RL_ERR_ARG,
                        "rl_fault_skew_routing: need tokens >= 0, 1 <= top_k (%d) <= experts (%d) and the expert ids",
                        top_k, experts);
    if (hot >= experts)
        return rl_error(ctx, RL_ERR_ARG,
                        "--fault hot-expert:expert=%d: the model has only %d experts (use expert=0..%d)", hot, experts,
                        experts - 1);
    int moved = 0;
    for (int64_t t = 0; t < tokens; t++) {
        if (floor((double)(t + 1) * frac + 1e-9) <= floor((double)t * frac + 1e-9))
            continue;
        int *e = expert_ids + t * top_k, j = 0;
        while (j < top_k && e[j] != hot)
            j++;
        if (j == top_k)
            e[0] = hot;
        else {
            e[j] = e[0];
            e[0] = hot;
        }
        moved++;
    }
    return moved;
}

void rl_fault_report_unfired(const rl_world *w, FILE *out)
{
    const rl_opts *o = &w->opts;
    for (int i = 0; i < o->nfaults && i < RL_MAX_FAULTS; i++) {
        const rl_fault *f = &o->faults[i];
        if (f->kind == RL_FAULT_HOT_EXPERT || __atomic_load_n(&w->fault_fired[i], __ATOMIC_RELAXED))
            continue; /* (hot-expert skews whatever routing runs: nothing to miss) */
        if (f->kind == RL_FAULT_HANG || f->kind == RL_FAULT_MISMATCH)
            fprintf(out, "ringlab: warning: --fault %s:rank=%d:seq=%lld never fired: %s\n", rl_fault_kind_name(f->kind),
                    f->rank, (long long)f->seq, f->rank >= w->n ? "the run has no such rank (see --ranks)"
                                                                : "that rank made fewer calls on the world communicator");
        else if (f->kind == RL_FAULT_STRAGGLER)
            fprintf(out, "ringlab: warning: --fault straggler:rank=%d never fired: %s\n", f->rank,
                    f->rank >= w->n ? "the run has no such rank (see --ranks)" : "that rank began no step");
        else if (f->kind == RL_FAULT_NAN)
            fprintf(out, "ringlab: warning: --fault nan:rank=%d:step=%lld:layer=%d never fired: rank %d never ran "
                    "layer %d at step %lld\n", f->rank, (long long)f->step, f->layer, f->rank, f->layer,
                    (long long)f->step);
    }
}
