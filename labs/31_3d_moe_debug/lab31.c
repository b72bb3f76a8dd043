/* lab31.c — Lab 31: 3D parallelism, MoE and failure debugging. THE file you edit.
 *
 * Work through the TODOs in order (31.1 → 31.5); README.md in this directory explains each
 * step, its three questions (Shape, Cost, Machine) and what the grader checks.
 *   make grade LAB=31 STEP=31.1      grade one step        make grade LAB=31    all of them
 *   make run LAB=31 RANKS=8          run the driver (--part mesh|3d|moe|diagnose|plan)
 * A step you have not done yet returns RL_ERR_NOT_IMPLEMENTED with a message naming it; the
 * driver and the grader report it and carry on. Declarations and the given pieces (TP and PP
 * building blocks, MoE weights, the fault run, planner helpers) are in lab31.h /
 * lab31_support.c (read them; do not edit them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lab31.h"

#define NOT_YET(ctx, step, what)                                                                        \
    rl_error(ctx, RL_ERR_NOT_IMPLEMENTED, "step " step " (" what ") is not implemented yet — see "      \
             "labs/31_3d_moe_debug/README.md, step " step)

/* ================================================================== 31.1 device mesh */

int mesh_layout_make(const rl_mesh_shape *shape, int world, const rl_hw *hw, mesh_layout *out, char *err,
                     size_t errlen)
{
    /* TODO(31.1): the contract is README.md, step 31.1. In short: fill out with every rank's
     * coordinates (tp changing fastest, then cp, then pp and dp in the shape's order; ep inside
     * dp), its node, and per kind of group the group's id (its smallest rank), the rank's index
     * in it (ascending ranks) and the group size; tp_crosses_node and a warning naming the first
     * TP group that spans two nodes by its first and last rank. Refuse a bad shape (a size < 1,
     * a product that is not the world, ep not dividing dp, an unknown order, a world outside
     * 1..RL_MESH_MAX_RANKS) with RL_ERR_ARG and a message in err saying what to change.
     * Sanity check: dp=2, pp=2, tp=2 on 8 ranks in the default order → TP groups {0,1} {2,3}...,
     * DP {0,2} {1,3} {4,6} {5,7}, PP {0,4} {1,5} {2,6} {3,7}. Stuck: make hint LAB=31 STEP=31.1 */
    (void)shape, (void)world, (void)hw, (void)out;
    if (err && errlen)
        snprintf(err, errlen, "step 31.1 (device mesh) is not implemented yet — see labs/31_3d_moe_debug/README.md, "
                              "step 31.1");
    return RL_ERR_NOT_IMPLEMENTED;
}

int mesh_build_comms(rl_ctx *ctx, const mesh_layout *lay, mesh_comms *out)
{
    /* TODO(31.1): every rank calls this with the same layout. Afterwards out->c[d] is this
     * rank's communicator of each kind, members in ascending rank order, made by exactly one
     * rl_comm_split of the world per kind, in mesh_dim order, with color = the group id, each
     * named for what it carries (its role: the kind's name, "tp" ... "edp"). Rank 0
     * records the mesh for the mesh view (rl_ctx_set_mesh) with names outermost first, e.g.
     * {"pp", "dp", "tp"} in the default order ({"dp", "pp", "tp"} in the order tp-cp-pp-dp; cp
     * only when > 1; dp as {"edp", "ep"} when ep > 1). */
    (void)lay, (void)out;
    return NOT_YET(ctx, "31.1", "device mesh: communicators");
}

/* ================================================================== 31.2 a 3D training step */

int td_train_step(td_engine *e, int64_t step, float *loss)
{
    /* TODO(31.2): the contract is README.md, step 31.2. In short: one training step of this
     * rank — afterwards its parameters are those of one AdamW step on the mean loss over the
     * global batch, as a one-rank run has them. Every op of this stage's 1F1B list
     * (e->sched->ops[e->stage]) runs once, in the list's order, each between rl_pp_mark and
     * rl_pp_unmark; all-reduces only in the given blocks, on e->comms.tp; pipeline traffic only
     * through td_p2p, on e->comms.pp; every send and receive of the step done before ZeRO-1
     * begins; *loss the mean micro-batch loss on the last stage, 0 elsewhere (loss may be NULL).
     * Stuck: make hint LAB=31 STEP=31.2 */
    (void)step, (void)loss;
    return NOT_YET(e->ctx, "31.2", "3D training step");
}

int td_zero1_update(td_engine *e)
{
    /* TODO(31.2): ZeRO-1 over the DATA-PARALLEL group (e->comms.dp, size e->cfg.dp). Afterwards
     * every DP rank holds the same updated e->flat_param; each DP rank ran AdamW only on its own
     * piece (e->shard elements; moments e->exp_avg / e->exp_avg_sq; e->step counts the steps
     * from 1; f32 parameters, no master copy) with the mean over DP of the gradients. Traffic:
     * one reduce-scatter and one all-gather of the whole padded vector on the DP group, nothing
     * else (dp = 1: none needed). Free the views you make. */
    return NOT_YET(e->ctx, "31.2", "ZeRO-1 update over the DP group");
}

/* ================================================================== 31.3 MoE */

int moe_route(rl_ctx *ctx, const float *logits, int64_t tokens, int experts, int top_k, float *probs, int *expert,
              float *weight)
{
    /* TODO(31.3): the contract is README.md, step 31.3. In short: per token, probs = the softmax
     * over all E logits (finite for any finite logits); expert = the top_k most probable, best
     * first, ties → lower id; weight = their probabilities renormalised over the chosen ones.
     * Stuck: make hint LAB=31 STEP=31.3 */
    (void)logits, (void)tokens, (void)experts, (void)top_k, (void)probs, (void)expert, (void)weight;
    return NOT_YET(ctx, "31.3", "MoE router: softmax and top-k");
}

int moe_plan_make(rl_ctx *ctx, const int *expert, int64_t tokens, int experts, int top_k, int ep, double cf,
                  moe_plan *p)
{
    /* TODO(31.3): capacity C = ceil(T·k / E · cf) per expert (cf <= 0 means 1); slot t·k + j
     * (token t's j-th choice) arrives in slot order and each expert keeps its first C slots.
     * Fill routed (before dropping), kept, dropped, nsend, send_slot (the kept slots grouped by
     * expert, ascending, arrival order inside), expert_counts (= kept) and per EP rank its rows
     * (send_counts) and first row (send_displs). p was allocated by moe_plan_alloc(T, E, k, ep). */
    (void)expert, (void)tokens, (void)experts, (void)top_k, (void)ep, (void)cf, (void)p;
    return NOT_YET(ctx, "31.3", "MoE capacity, dropping and dispatch plan");
}

double moe_aux_loss(const float *probs, const int *expert, int64_t tokens, int experts, int top_k, double alpha)
{
    /* TODO(31.3): α·E·Σᵢ fᵢ·Pᵢ — fᵢ the share of the T·k routed slots that go to expert i
     * (before dropping), Pᵢ the mean over the tokens of i's probability. Uniform routing gives
     * exactly α. */
    (void)probs, (void)expert, (void)tokens, (void)experts, (void)top_k, (void)alpha;
    return NAN;
}

int moe_forward(moe_layer *l, rl_comm *ep, const rl_tensor *x, rl_tensor *y, moe_stats *stats)
{
    /* TODO(31.3): y = x + Σ over each token's KEPT slots of weight · expert(x), over the EP
     * group ep (E/ep experts per rank), with the router of l, the hot-expert fault applied to
     * the routing (rl_fault_skew_routing; its count → stats->hot_redirected) and every field of
     * stats filled (README.md, step 31.3). Token rows move only in two all-to-all(v) calls on
     * ep — dispatch, and combine back; kept slots only —; any other collective traffic at most
     * 8·E·ep + 64 bytes in all. Each rank runs only its own experts, each row once. A rank may
     * send or receive no row: a tensor cannot have 0 rows. */
    (void)ep, (void)x, (void)y, (void)stats;
    return NOT_YET(l->ctx, "31.3", "MoE forward with expert parallelism");
}

/* ================================================================== 31.4 diagnose failures */

int diagnose(const rl_diag_flight *fl, diag_result *out)
{
    /* TODO(31.4): the contract is README.md, step 31.4 (what a dump holds, what to name, the
     * conventions for ties). In short: the anomaly that began first over all communicators — a
     * mismatch names the rank that deviates from the majority, a hang the rank responsible —;
     * else a send/recv never completed (RL_DIAG_P2P); else RL_DIAG_NONE, rank −1, seq −1. The
     * records come in any order; the message is never empty.
     * Stuck: make hint LAB=31 STEP=31.4 */
    if (out) {
        memset(out, 0, sizeof *out);
        out->rank = -1;
        out->seq = -1;
    }
    (void)fl;
    return NOT_YET(NULL, "31.4", "diagnose() over flight dumps");
}

int detect_straggler(const double *step_ms, int n, straggler_result *out)
{
    /* TODO(31.4): mean, cv (population stddev), max/min, median (an even count: the mean of the
     * two middle values), MAD; imbalanced = cv > 0.4 or max/min > 3; an outlier is above
     * 1.2·median and more than 3.5 scaled MADs (1.4826·MAD) above the median (MAD 0: any x above
     * the median passes that test); culprit = the outlier furthest above the median, else the
     * slowest rank when imbalanced, else −1; ties: the lower rank. The course's 32 ranks near
     * 2200 ms and one at 3150 ms pass neither cv nor max/min — only the outlier test finds it. */
    (void)step_ms, (void)n, (void)out;
    return NOT_YET(NULL, "31.4", "straggler detector");
}

int detect_spike(const double *norms, int steps, int ranks, int layers, spike_result *out)
{
    /* TODO(31.4): the first norm in the order step, then layer 0..L−1, then rank, that is not
     * finite, or is > 5× the mean of its (rank, layer)'s last ≤ 5 finite earlier values (at
     * least one). Fill found, step, rank, layer, value, recent_mean, nonfinite. */
    (void)norms, (void)steps, (void)ranks, (void)layers;
    if (out)
        memset(out, 0, sizeof *out);
    return NOT_YET(NULL, "31.4", "loss-spike / NaN detector");
}

/* ================================================================== 31.5 parallelism planner */

int plan_candidate(const rl_calc_plan_in *in, int tp, int pp, int b, rl_calc_recompute rc, int zero,
                   rl_calc_plan_row *row)
{
    /* TODO(31.5): the contract is README.md, step 31.5, and calc.h's planner model (its comment
     * block and rl_calc_plan_row, field by field). In short: every field of row for this
     * candidate, each figure as calc.h defines it, and its warning bits. RL_ERR_ARG for a
     * candidate that is not a valid layout (lab31.h lists them; zero > 0 at dp = 1 too).
     * Stuck: make hint LAB=31 STEP=31.5 */
    (void)in, (void)tp, (void)pp, (void)b, (void)rc, (void)zero, (void)row;
    return NOT_YET(NULL, "31.5", "planner: one candidate's cost");
}

int plan_enumerate(const rl_calc_plan_in *in, rl_calc_plan_row **rows, int *nrows, char *err, size_t errlen)
{
    /* TODO(31.5): every candidate calc.h's rules allow, once, in *rows (malloc'd), sorted:
     * fitting ones first, then by step time, memory, tp, pp, b, zero, recompute (ascending). An
     * invalid input, or one that allows no candidate: RL_ERR_ARG with a message in err. */
    (void)in, (void)rows, (void)nrows;
    if (err && errlen)
        snprintf(err, errlen, "step 31.5 (planner) is not implemented yet — see labs/31_3d_moe_debug/README.md, "
                              "step 31.5");
    return RL_ERR_NOT_IMPLEMENTED;
}
