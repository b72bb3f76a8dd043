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
    /* TODO(31.1): lay out the mesh (lab31.h gives the rank formulas).
     *  - Refuse bad shapes with RL_ERR_ARG and a message in err saying what to change: a size
     *    < 1, dp·pp·cp·tp != world, ep not dividing dp, an unknown order, world outside
     *    1..RL_MESH_MAX_RANKS.
     *  - Per rank r: coordinates (TP innermost: tp = r % TP, cp = r / TP % CP, then pp and dp
     *    in the shape's order; ep = dp % EP, edp = dp / EP); node = r / gpus_per_node.
     *  - Per kind of group and rank: group id = the smallest rank of the group (the rank with
     *    that coordinate at its first value, the others unchanged), index = the coordinate
     *    along the group (dp for DP, ep for EP, edp for EDP); size[] per kind.
     *  - tp_crosses_node and a warning naming the first TP group that spans two nodes.
     * Sanity check: dp=2, pp=2, tp=2 on 8 ranks → TP groups {0,1} {2,3}..., PP {0,2} {1,3}
     * {4,6} {5,7}, DP {0,4} {1,5} {2,6} {3,7}. */
    (void)shape, (void)world, (void)hw, (void)out;
    if (err && errlen)
        snprintf(err, errlen, "step 31.1 (device mesh) is not implemented yet — see labs/31_3d_moe_debug/README.md, "
                              "step 31.1");
    return RL_ERR_NOT_IMPLEMENTED;
}

int mesh_build_comms(rl_ctx *ctx, const mesh_layout *lay, mesh_comms *out)
{
    /* TODO(31.1): one rl_comm_split(rl_comm_world(ctx), color, key) per kind of group, in
     * mesh_dim order (every rank must make the same calls in the same order: they are
     * collectives): color = lay->group[d][rank], key = lay->index[d][rank]. Then rank 0
     * records the mesh for the mesh view: rl_ctx_set_mesh(ctx, n, names, sizes) with names
     * outermost first, e.g. {"dp", "pp", "tp"} ({"pp", "dp", "tp"} in the order tp-cp-dp-pp;
     * cp only when > 1; dp as {"edp", "ep"} when ep > 1). */
    (void)lay, (void)out;
    return NOT_YET(ctx, "31.1", "device mesh: communicators");
}

/* ================================================================== 31.2 a 3D training step */

int td_train_step(td_engine *e, int64_t step, float *loss)
{
    /* TODO(31.2): the composition — the blocks are given (lab31.h), the order is yours.
     *  - zero e->flat_grad (backward accumulates) and e->loss_sum;
     *  - walk this stage's 1F1B list e->sched->ops[e->stage] (e->sched->nops[e->stage] ops):
     *    for each op, first td_p2p(e, <the PP group>, pending, op) — the previous op's output
     *    goes out in the same group as this op's input comes in — then rl_pp_mark, the op
     *    (td_stage_forward / td_stage_backward on <the TP group>), rl_pp_unmark; pending = op;
     *  - after the last op, send what is pending (td_p2p(e, pp, pending, NULL));
     *  - td_zero1_update(e);
     *  - *loss = e->loss_sum / m on the last stage, 0 elsewhere.
     * Which communicator is which: e->comms.tp, e->comms.pp, e->comms.dp. */
    (void)step, (void)loss;
    return NOT_YET(e->ctx, "31.2", "3D training step");
}

int td_zero1_update(td_engine *e)
{
    /* TODO(31.2): ZeRO-1 over the DATA-PARALLEL group (e->comms.dp, size e->cfg.dp):
     *  - mine = the slice of e->flat_grad at e->dp_rank·e->shard (e->shard long);
     *    rl_reduce_scatter(dp, e->flat_grad, mine, RL_SUM, 0), then ÷ dp (rl_scale);
     *  - e->step++; rl_adamw_step(ctx, &e->cfg.adamw, e->step, <my piece of flat_param>,
     *    mine, NULL, e->exp_avg, e->exp_avg_sq) (f32 parameters: no master copy);
     *  - rl_all_gather(dp, <my piece of flat_param>, e->flat_param, 0).
     * With dp = 1 skip the collectives. Free your slices. */
    return NOT_YET(e->ctx, "31.2", "ZeRO-1 update over the DP group");
}

/* ================================================================== 31.3 MoE */

int moe_route(rl_ctx *ctx, const float *logits, int64_t tokens, int experts, int top_k, float *probs, int *expert,
              float *weight)
{
    /* TODO(31.3): per token: softmax over all E logits (subtract the max) into probs; the
     * top_k most probable experts, best first (ties → lower id) into expert; their weights
     * renormalised over the chosen ones into weight. */
    (void)logits, (void)tokens, (void)experts, (void)top_k, (void)probs, (void)expert, (void)weight;
    return NOT_YET(ctx, "31.3", "MoE router: softmax and top-k");
}

int moe_plan_make(rl_ctx *ctx, const int *expert, int64_t tokens, int experts, int top_k, int ep, double cf,
                  moe_plan *p)
{
    /* TODO(31.3): capacity C = ceil(T·k / E · cf) (cf <= 0 → 1); visit slots t·k + j in order
     * and keep a slot while its expert has fewer than C kept (count routed, kept, dropped);
     * send_slot = kept slots grouped by expert, arrival order inside; expert_counts = kept;
     * send_counts[q] = rows for the experts of EP rank q (E/ep each), send_displs their
     * prefix sums; nsend. p was allocated by moe_plan_alloc(T, E, k, ep). */
    (void)expert, (void)tokens, (void)experts, (void)top_k, (void)ep, (void)cf, (void)p;
    return NOT_YET(ctx, "31.3", "MoE capacity, dropping and dispatch plan");
}

double moe_aux_loss(const float *probs, const int *expert, int64_t tokens, int experts, int top_k, double alpha)
{
    /* TODO(31.3): α·E·Σᵢ fᵢ·Pᵢ — fᵢ = (slots routed to i) / (T·k), before dropping;
     * Pᵢ = mean over tokens of probs[t·E + i]. Uniform routing gives exactly α. */
    (void)probs, (void)expert, (void)tokens, (void)experts, (void)top_k, (void)alpha;
    return NAN;
}

int moe_forward(moe_layer *l, rl_comm *ep, const rl_tensor *x, rl_tensor *y, moe_stats *stats)
{
    /* TODO(31.3): the expert-parallel forward over ep (E/ep experts per rank):
     *  1. logits = x · l->router_w (rl_matmul), moe_route;
     *  2. the hot-expert fault: rl_fault_skew_routing(ctx, T, k, E, ids) (returns how many
     *     tokens it redirected; 0 without --fault hot-expert) → stats->hot_redirected;
     *  3. moe_plan_alloc + moe_plan_make; stats: capacity, dropped, routed, kept, aux_loss;
     *  4. exchange per-expert counts with rl_all_to_all (an E-element f32 tensor: to rank q
     *     go the counts of q's experts) → rows you will receive from each rank per local expert;
     *  5. dispatch: rl_gather_rows the kept tokens in send order, rl_all_to_allv (counts and
     *     displacements in ELEMENTS: rl_moe_rows_to_elems);
     *  6. each local expert on its received rows (moe_expert_forward), outputs in place;
     *  7. combine: rl_all_to_allv back (the counts swapped), then y = x and
     *     rl_scatter_add_rows(back, token of each row, weight of each row's slot, y).
     * Tensors with 0 rows are not allowed: give empty buffers 1 row. */
    (void)ep, (void)x, (void)y, (void)stats;
    return NOT_YET(l->ctx, "31.3", "MoE forward with expert parallelism");
}

/* ================================================================== 31.4 diagnose failures */

int diagnose(const rl_diag_flight *fl, diag_result *out)
{
    /* TODO(31.4): for each communicator in the dump (fl->rec[i].comm; world's members are
     * all ranks, another's are the ranks with records on it), walk its seqs from the lowest:
     *  - records of the ranks at that seq: if (op, count, dtype) differ, it is a MISMATCH
     *    and the culprit is the first rank whose call differs from the majority's;
     *  - else a member whose highest seq is below it never got there: a HANG, and the culprit
     *    is that missing rank (the lowest one) — not the ranks waiting inside;
     *  - else if a record is not "completed": a hang with rank −1 (stuck elsewhere).
     * Over communicators the earliest anomaly (lowest t_enqueued at its seq) wins; at equal
     * times a mismatch beats a hang, then the name that sorts first. No collective anomaly but
     * a send/recv never completed: RL_DIAG_P2P (lab31.h has the exact rules). Nothing found:
     * kind RL_DIAG_NONE, rank −1, seq −1. */
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
    /* TODO(31.4): mean, population stddev, cv, max/min, median (an even count: the mean of
     * the two middle values), MAD; imbalanced = cv > 0.4 or max/min > 3; outliers x >
     * 1.2·median with (x − median)/(1.4826·MAD) > 3.5 (MAD 0: any x above the median passes
     * that second test); culprit = the outlier furthest above the median, else argmax
     * when imbalanced, else −1. The course's 32 ranks near 2200 ms and one at 3150 ms pass
     * neither cv nor max/min — only the outlier test finds that rank. */
    (void)step_ms, (void)n, (void)out;
    return NOT_YET(NULL, "31.4", "straggler detector");
}

int detect_spike(const double *norms, int steps, int ranks, int layers, spike_result *out)
{
    /* TODO(31.4): scan step by step, layer 0..L−1, rank by rank; flag the first norm that is
     * not finite, or is > 5× the mean of its (rank, layer)'s last ≤ 5 finite earlier values
     * (at least one). Fill found, step, rank, layer, value, recent_mean, nonfinite. */
    (void)norms, (void)steps, (void)ranks, (void)layers;
    if (out)
        memset(out, 0, sizeof *out);
    return NOT_YET(NULL, "31.4", "loss-spike / NaN detector");
}

/* ================================================================== 31.5 parallelism planner */

int plan_candidate(const rl_calc_plan_in *in, int tp, int pp, int b, rl_calc_recompute rc, int zero,
                   rl_calc_plan_row *row)
{
    /* TODO(31.5): calc.h's planner model for one candidate (read its comment block):
     * dp = G/(tp·pp), m = gbs/(dp·b); links plan_group_link(hw, 1, tp), (hw, tp, pp),
     * (hw, tp·pp, dp); per micro-batch compute (6Ψ + 12·L·h·S + recompute extra)·b·S/(tp·pp)
     * / peak, TP 4·(L/pp) ring all-reduces of b·S·h·2 bytes, PP 2·(α + bytes/bw); step =
     * (m + pp − 1)·(all three) + DP time by ZeRO stage; memory = rl_calc_zero(Ψ/(tp·pp),
     * dp).bytes[zero] + rl_calc_activation(per layer, SP when tp > 1) × L/pp × min(m, pp);
     * MFU; warnings (TP across nodes, m < 4·pp with pp > 1, out of memory). RL_ERR_ARG for
     * a candidate that is not a valid layout (lab31.h lists them). */
    (void)in, (void)tp, (void)pp, (void)b, (void)rc, (void)zero, (void)row;
    return NOT_YET(NULL, "31.5", "planner: one candidate's cost");
}

int plan_enumerate(const rl_calc_plan_in *in, rl_calc_plan_row **rows, int *nrows, char *err, size_t errlen)
{
    /* TODO(31.5): every (tp power of two dividing G, heads and h; pp dividing G/tp and L;
     * dp = G/(tp·pp) dividing gbs; b power of two dividing gbs/dp; recompute none, selective,
     * full; zero 0..3, only 0 when dp = 1) through plan_candidate, then qsort: fitting first,
     * then step time, memory, tp, pp, b, zero, recompute. */
    (void)in, (void)rows, (void)nrows;
    if (err && errlen)
        snprintf(err, errlen, "step 31.5 (planner) is not implemented yet — see labs/31_3d_moe_debug/README.md, "
                              "step 31.5");
    return RL_ERR_NOT_IMPLEMENTED;
}
