/* model.h — small, real, trainable models with hand-written forward and backward (no
 * autograd): an MLP block stack, a transformer (GPT-style) block stack and an MoE stack.
 * This API is the contract the labs build on.
 *
 *   - Parameters are registered in a fixed order (rl_model.params[0..nparams-1]). Each has
 *     a value and a grad tensor. Labs may REPLACE these pointers: DDP points p->grad at a
 *     view into a bucket buffer; ZeRO-3/FSDP points p->value at a gathered buffer before a
 *     unit's forward and away after. Forward and backward read p->value / p->grad afresh at
 *     every use, and backward ACCUMULATES (+=) into p->grad (gradient accumulation, no_sync):
 *     call rl_model_zero_grad before a fresh step.
 *   - The grad-ready hook m->hook(p, m->hook_arg) fires once per parameter during backward,
 *     in the order backward makes gradients ready — not always reverse registration order:
 *     a tied parameter (the transformer's shared embedding / LM-head weight) fires once,
 *     after its last contribution (at the very end of backward), and a model with branches
 *     or reused modules finishes its gradients in yet another order (rl_model_set_ready_order
 *     plays that: code that assumes reverse registration order breaks there). A hook never
 *     fires before its parameter's gradient is final.
 *   - Units (m->units: one per block, plus embedding / head units) list their parameters.
 *     Optional callbacks run before and after each unit's forward and backward, in forward
 *     order and reverse order respectively — FSDP-style code gathers and frees there.
 *     Units: MLP/MoE "block0".."block{L-1}", "head"; transformer "embed", blocks, "head".
 *     A tied weight belongs to the unit that registers it ("embed") but the head reads it
 *     too: keep that unit gathered until the head's backward is done (or wrap both in one).
 *   - Ops issued by the model carry the trace tag RL_TAG_LAYER = block index (embedding and
 *     head: -1).
 *   - Free the model (rl_model_free) before its rank context.
 *
 * Usage (one rank):
 *
 *   rl_model_config cfg = rl_model_config_default(RL_MODEL_MLP);
 *   rl_model *m = rl_model_new(ctx, &cfg);
 *   rl_data *data = rl_data_regression(ctx, cfg.hidden, cfg.out_dim, 7);
 *   rl_model_optim *opt = rl_model_adamw_new(m, rl_adamw_defaults());
 *   m->hook = my_grad_ready; m->hook_arg = &my_state;      // e.g. DDP bucketing
 *   rl_batch batch = {0};
 *   for (int step = 0; step < 100; step++) {
 *       float loss;
 *       rl_data_shard(data, ctx, step, rl_rank(ctx), 32, &batch);
 *       rl_model_zero_grad(m);
 *       rl_model_forward(m, &batch, &loss);
 *       rl_model_backward(m, 1.0f);                          // hooks fire in here
 *       rl_model_adamw_step(opt);
 *   }
 *   rl_batch_free(&batch); rl_model_optim_free(opt); rl_data_free(data); rl_model_free(m);
 */
#ifndef RL_MODEL_H
#define RL_MODEL_H
#include <stdint.h>
#include "data.h"
#include "ops.h"
#include "tensor.h"

typedef struct rl_ctx rl_ctx;

typedef enum { RL_MODEL_MLP = 0, RL_MODEL_TRANSFORMER = 1, RL_MODEL_MOE = 2 } rl_model_kind;

/* One parameter. */
typedef struct rl_param {
    char name[40];          /* "block0.fc1.w" */
    int index;              /* position in registration order */
    int unit;               /* the unit it belongs to */
    rl_tensor *value;       /* the value forward reads (replaceable, see above) */
    rl_tensor *grad;        /* where backward accumulates (replaceable, see above) */
    rl_tensor *own_value;   /* the tensors the model allocated; rl_model_free frees these */
    rl_tensor *own_grad;    /*   (set to NULL if you free them yourself) */
    int ndim;               /* the parameter's shape, valid whatever value points at */
    int64_t shape[RL_MAX_DIMS];
    char dims[32];          /* dim names, "h,4h" */
    int64_t numel;
    int uses;               /* gradient contributions per backward (2 for a tied parameter) */
    int pending;            /* contributions still to come in the running backward (internal) */
} rl_param;

/* A unit: a block of parameters gathered/freed together (FSDP) — a transformer block, the
 * embedding, the head. */
typedef struct rl_unit {
    char name[24];          /* "embed", "block0", "head" */
    int index;
    int layer;              /* block index, -1 for embedding/head units */
    int nparams;
    rl_param **params;      /* in registration order */
} rl_unit;

/* Called when p's gradient is final; return non-zero to stop backward with that error. */
typedef int (*rl_grad_hook)(rl_param *p, void *arg);
/* Called around a unit's forward or backward; return non-zero to stop with that error. */
typedef int (*rl_unit_hook)(rl_unit *u, void *arg);

/* What to build. */
typedef struct rl_model_config {
    rl_model_kind kind;
    int hidden;             /* h (MLP/MoE: also the input width) */
    int layers;             /* blocks */
    int out_dim;            /* MLP/MoE: regression outputs */
    int vocab, seq, heads;  /* transformer: vocabulary, max sequence length, attention heads */
    int tie_embeddings;     /* transformer: LM head reuses the token embedding (a tied parameter) */
    int experts, top_k;     /* MoE: experts per layer, experts per token */
    int ffn;                /* width of the MLP / expert hidden layer; 0 → 4·hidden */
    rl_dtype param_dtype;   /* f32 or bf16 */
    rl_dtype grad_dtype;    /* f32 or bf16 */
    uint64_t seed;          /* initialisation */
} rl_model_config;

/* MoE routing of one layer in the last forward: per token its top-k experts (best first) and
 * renormalised weights (summing to 1). Capacity and dropping are the caller's business. */
typedef struct rl_moe_routing {
    int64_t tokens;
    int experts, top_k;
    int *expert;            /* [tokens·top_k] */
    float *weight;          /* [tokens·top_k] */
    float *probs;           /* [tokens·experts] full router softmax (for an auxiliary loss) */
} rl_moe_routing;

typedef struct rl_model_state rl_model_state;

typedef struct rl_model {
    rl_model_config cfg;
    rl_ctx *ctx;
    int nparams;
    rl_param *params;       /* registration order */
    int nunits;
    rl_unit *units;         /* forward order */
    rl_grad_hook hook;      /* grad-ready hook (NULL: none) and its argument */
    void *hook_arg;
    rl_unit_hook pre_forward, post_forward, pre_backward, post_backward; /* NULL: none */
    void *unit_arg;
    rl_model_state *st;     /* activations and block layout (private) */
} rl_model;

/* Defaults of a kind, small enough to train in seconds on one core. */
rl_model_config rl_model_config_default(rl_model_kind kind);
/* Parses "mlp", "transformer", "moe"; -1 if unknown. */
int rl_model_kind_parse(const char *name);
/* "mlp", "transformer", "moe". */
const char *rl_model_kind_name(rl_model_kind kind);
/* Builds a model with seeded parameters (charged under param/grad on ctx); NULL with a
 * message on a bad config. */
rl_model *rl_model_new(rl_ctx *ctx, const rl_model_config *cfg);
/* Frees the model, its own parameter tensors and its activations. */
void rl_model_free(rl_model *m);
/* Forward over a batch (regression batch for MLP/MoE, token batch for the transformer),
 * keeping the activations; *loss (may be NULL) gets the mean loss (MSE / cross-entropy). */
int rl_model_forward(rl_model *m, const rl_batch *batch, float *loss);
/* Backward of the last forward: grads += grad_scale · ∂loss/∂param (use 1/K over K
 * accumulated micro-batches). Fires the grad-ready hook and the unit callbacks. The batch
 * given to forward must still be alive and unchanged. One backward per forward. */
int rl_model_backward(rl_model *m, float grad_scale);
/* Makes backward announce ready gradients in another order, as a model with parallel
 * branches or reused modules does: each ready parameter is held back, and every `window`
 * of them (and the rest at the end of backward) are given to the hook in a random order
 * drawn from seed and the backward's count — a hook may come late, never early. Pass a
 * seed per rank to make ranks differ. window <= 1: at once, in backward's own order. */
int rl_model_set_ready_order(rl_model *m, uint64_t seed, int window);
/* Every parameter's current grad tensor ← 0, as one multi-tensor kernel (rl_zero_all). */
int rl_model_zero_grad(rl_model *m);
/* The output of the last forward: predictions [b, out] or logits [b, s, vocab]. */
const rl_tensor *rl_model_output(const rl_model *m);
/* The routing of MoE block `layer` in the last forward (NULL if none). */
const rl_moe_routing *rl_model_routing(const rl_model *m, int layer);
/* A parameter by name ("block0.fc1.w"), NULL if none. */
rl_param *rl_model_find_param(rl_model *m, const char *name);
/* Total parameter elements (a tied parameter counted once). */
int64_t rl_model_numel(const rl_model *m);
/* FLOPs of one forward over a batch of `batch` samples (matmuls, as 2·m·n·k). */
double rl_model_forward_flops(const rl_model *m, int64_t batch);

/* AdamW over every parameter of a model: f32 m and v (and an f32 master copy when params are
 * bf16), charged under optim. */
typedef struct rl_model_optim {
    rl_model *m;
    rl_adamw_cfg cfg;
    int64_t step;
    rl_tensor **master, **mom, **var; /* per parameter; master NULL for f32 params */
} rl_model_optim;
/* Creates the optimizer state for every parameter of m. */
rl_model_optim *rl_model_adamw_new(rl_model *m, rl_adamw_cfg cfg);
/* One step over every parameter (reads p->value / p->grad afresh). */
int rl_model_adamw_step(rl_model_optim *o);
/* Frees the optimizer state. */
void rl_model_optim_free(rl_model_optim *o);

#endif
