/* fault.h — fault injection specs (--fault KIND:key=value:...) and the queries lab code
 * uses to act on them (NaN injection, hot-expert routing skew). */
#ifndef RL_FAULT_H
#define RL_FAULT_H
#include <stdint.h>

typedef struct rl_ctx rl_ctx;

typedef enum {
    RL_FAULT_HANG = 0,    /* hang:rank=R:seq=S — rank R never enters collective seq S (world) */
    RL_FAULT_STRAGGLER,   /* straggler:rank=R:ms=X — rank R's compute is X ms slower per step */
    RL_FAULT_MISMATCH,    /* mismatch:rank=R:seq=S — rank R calls collective S with a wrong count */
    RL_FAULT_NAN,         /* nan:rank=R:step=S[:layer=L] — lab code puts a NaN into rank R's
                             activation of layer L (default 0) at step S (rl_fault_nan_due) */
    RL_FAULT_HOT_EXPERT,  /* hot-expert:expert=E:frac=F — a fraction F of the tokens is routed to
                             expert E on every rank (rl_fault_skew_routing) */
    RL_FAULT_NKINDS
} rl_fault_kind;

typedef struct rl_fault {
    rl_fault_kind kind;
    int rank;       /* -1 when the kind takes no rank (hot-expert) */
    int64_t seq;    /* -1 when unused */
    double ms;      /* -1 when unused */
    int64_t step;   /* nan: the step; -1 when unused */
    int layer;      /* nan: the layer (default 0); -1 when unused */
    int expert;     /* hot-expert: the expert; -1 when unused */
    double frac;    /* hot-expert: fraction of tokens in [0, 1]; -1 when unused */
} rl_fault;

#define RL_MAX_FAULTS 8

/* Parses one spec into f; on error returns -1 with a message in err. */
int rl_fault_parse(const char *spec, rl_fault *f, char *err, int errlen);
/* "hang", "straggler", "mismatch", "nan", "hot-expert". */
const char *rl_fault_kind_name(rl_fault_kind k);
/* One line per fault kind for --help. */
const char *rl_fault_help(void);

/* The first fault of that kind in ctx's options (NULL if none; ctx may be NULL). */
const rl_fault *rl_fault_find(const rl_ctx *ctx, rl_fault_kind kind);
/* 1 if a nan fault asks this rank to put a NaN into layer `layer`'s activation at `step`
 * (call it once per layer in forward, then write NaN into one element), else 0. */
int rl_fault_nan_due(const rl_ctx *ctx, int64_t step, int layer);
/* 1 and the expert and fraction of a hot-expert fault, else 0 (both outputs may be NULL). */
int rl_fault_hot_expert(const rl_ctx *ctx, int *expert, double *frac);
/* Applies a hot-expert fault to a top-k routing (expert ids [tokens·top_k], best first):
 * token t is redirected when floor((t+1)·F) > floor(t·F) — exactly floor(tokens·F) tokens,
 * spread evenly — by making expert E its first choice (swapped to the front if already
 * chosen, else replacing the first choice; weights stay with their slots). Returns the
 * number of tokens redirected (0 without the fault) or RL_ERR_ARG (E ≥ experts ...). */
int rl_fault_skew_routing(rl_ctx *ctx, int64_t tokens, int top_k, int experts, int *expert_ids);

#endif
