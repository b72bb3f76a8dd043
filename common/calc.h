/* calc.h — the course's cost calculators: one implementation of every formula the labs use
 * (ZeRO memory and traffic, collective α-β times and bus bandwidth, TP traffic, activation
 * memory, pipeline bubbles, training FLOPs and MFU, MoE capacity and all-to-all volume; each
 * with its source in `ringlab calc TOPIC --help`) and a parallelism planner. `ringlab calc`,
 * the graders and the lab summaries all call these; collective times come from cost.h.
 *
 * Conventions: every function fills an output struct and returns RL_OK, or RL_ERR_ARG with
 * a message in err (what was wrong and how to fix it); none prints or aborts. Bytes are
 * plain bytes (GB = 1e9, GiB = 2^30 is the printer's business); times are seconds;
 * parameter and token counts are plain numbers (7.5e9). err may be NULL. */
#ifndef RL_CALC_H
#define RL_CALC_H
#include <stddef.h>
#include "cost.h"

/* ------------------------------------------------------------------ ZeRO / FSDP */
typedef enum {
    RL_CALC_DDP = 0, RL_CALC_ZERO1, RL_CALC_ZERO2, RL_CALC_ZERO3, RL_CALC_HSDP, RL_CALC_ZERO_NKINDS
} rl_calc_zero_kind;

typedef struct {
    double params;      /* Ψ, parameters */
    int dp;             /* Nd, data-parallel ranks */
    double k;           /* optimizer bytes per parameter (0 → 12: fp32 master + m + v) */
    int group;          /* hsdp: shard inside groups of G ranks, replicate across Nd/G groups
                           (0 → the largest divisor of Nd that is ≤ 8, one node) */
    double comm_bytes;  /* bytes per communicated element (0 → 2, bf16) */
} rl_calc_zero_in;

typedef struct {
    double bytes[RL_CALC_ZERO_NKINDS];         /* model states per rank, bytes */
    double traffic_elems[RL_CALC_ZERO_NKINDS]; /* elements one rank sends per step (ring, exact) */
    double traffic_bytes[RL_CALC_ZERO_NKINDS]; /* traffic_elems × comm_bytes */
    double traffic_paper[RL_CALC_ZERO_NKINDS]; /* the paper's large-Nd figure, elements: 2Ψ, 2Ψ, 2Ψ, 3Ψ, 3Ψ+2Ψ/G */
    int group;                                 /* G used for hsdp */
    double k, comm_bytes;                      /* the values used */
} rl_calc_zero_out;

/* "ddp", "zero1", "zero2", "zero3", "hsdp" (the JSON keys). */
const char *rl_calc_zero_name(rl_calc_zero_kind k);
/* Per-rank bytes (ddp (4+K)Ψ, zero1 4Ψ+KΨ/Nd, zero2 2Ψ+(2+K)Ψ/Nd, zero3 (4+K)Ψ/Nd,
 * hsdp (4+K)Ψ/G) and traffic per rank per step (ddp, zero1, zero2 2(Nd−1)/Nd·Ψ;
 * zero3 3(Nd−1)/Nd·Ψ; hsdp 3(G−1)/G·Ψ + 2(R−1)/R·Ψ/G with R = Nd/G groups). */
int rl_calc_zero(const rl_calc_zero_in *in, rl_calc_zero_out *out, char *err, size_t errlen);

/* ------------------------------------------------------------------ collectives */
typedef struct {
    rl_coll_kind kind;  /* all_reduce, reduce_scatter, all_gather, all_to_all (also broadcast, reduce) */
    rl_algo algo;       /* ring, or tree (all_reduce only) */
    int ranks;          /* n */
    double bytes;       /* S, the whole buffer as in nccl-tests */
    const rl_hw *hw;    /* profile; its inter-node link is used when n > GPUs per node */
    const rl_link *link;/* optional: use this link instead of choosing one from hw */
} rl_calc_coll_in;

typedef struct {
    double time;           /* α-β time, s (rl_ab_time) */
    double algbw, busbw;   /* B/s: algbw = S/t, busbw = algbw × factor */
    double factor;         /* nccl-tests bus-bandwidth factor (rl_busbw_factor) */
    double latency_steps;  /* α terms: ring all-reduce 2(n−1), ring RS/AG/A2A n−1, tree 2·log2 n */
    double bytes_per_rank; /* bytes one rank sends: ring (rl_ring_bytes_per_rank), tree 2S */
    const rl_link *link;   /* the link the model used */
    int crosses_nodes;     /* 1 when n > the profile's GPUs per node */
} rl_calc_coll_out;

/* α-β time, algbw and busbw of one collective on a profile (time via cost.h). */
int rl_calc_coll(const rl_calc_coll_in *in, rl_calc_coll_out *out, char *err, size_t errlen);

/* ------------------------------------------------------------------ tensor parallelism */
typedef struct {
    double b, s, h;        /* micro-batch size, sequence length, hidden size */
    int t;                 /* TP size */
    double dtype_bytes;    /* bytes per activation element (0 → 2) */
    const rl_hw *hw;       /* profile for the time (NULL → no time) */
} rl_calc_tp_in;

typedef struct {
    double allreduce_elems;        /* b·s·h elements in each all-reduce buffer */
    /* the course's figure (ring, large t: each rank sends ≈ 2× the buffer per all-reduce) */
    double fwd_elems, bwd_elems;   /* 2 all-reduces each: 4bsh elements */
    double layer_elems;            /* 8bsh elements */
    double layer_bytes;            /* 8bsh × dtype_bytes (bytes counted once) */
    /* exact ring for this t: each all-reduce sends 2(t−1)/t·bsh elements per rank */
    double fwd_elems_ring, bwd_elems_ring, layer_bytes_ring;
    double fwd_time, bwd_time, layer_time; /* s, 2 (or 4) ring all-reduces of bsh·dtype_bytes on t ranks */
    const rl_link *link;
    int crosses_nodes;             /* 1 when t > GPUs per node: every layer waits on the slow link */
} rl_calc_tp_out;

/* Megatron TP traffic per transformer layer (2 all-reduces forward, 2 backward) and time. */
int rl_calc_tp(const rl_calc_tp_in *in, rl_calc_tp_out *out, char *err, size_t errlen);

/* ------------------------------------------------------------------ activation memory */
typedef enum { RL_CALC_RECOMPUTE_NONE = 0, RL_CALC_RECOMPUTE_SELECTIVE, RL_CALC_RECOMPUTE_FULL } rl_calc_recompute;

typedef struct {
    double s, b, h, a;     /* sequence, micro-batch, hidden, attention heads */
    int t;                 /* TP size (0 → 1) */
    int sp;                /* 1: sequence parallelism (with t > 1) */
    rl_calc_recompute recompute;
    int layers;            /* L (0 → 1) */
} rl_calc_act_in;

typedef struct {
    double coeff;          /* bytes per layer ÷ sbh */
    double per_layer;      /* bytes per layer (Korthikanti et al. 2022, Table 2) */
    double total;          /* per_layer × L */
    const char *formula;   /* the formula used, e.g. "sbh(10 + 24/t + 5as/(ht))" */
} rl_calc_act_out;

/* "none", "selective", "full". */
const char *rl_calc_recompute_name(rl_calc_recompute r);
/* Parses a recompute name; -1 when unknown. */
int rl_calc_recompute_parse(const char *s);
/* Activation bytes per layer: none sbh(34+5as/h); TP sbh(10+24/t+5as/(ht)); TP+SP
 * sbh(34/t+5as/(ht)); selective sbh(10+24/t), with SP 34sbh/t; full recompute 2sbh. */
int rl_calc_activation(const rl_calc_act_in *in, rl_calc_act_out *out, char *err, size_t errlen);

/* ------------------------------------------------------------------ pipeline bubble */
typedef enum {
    RL_CALC_SCHED_NAIVE = 0, RL_CALC_SCHED_GPIPE, RL_CALC_SCHED_1F1B, RL_CALC_SCHED_INTERLEAVED, RL_CALC_SCHED_ZB_H1
} rl_calc_schedule;

typedef struct {
    int p, m;              /* stages, micro-batches (naive ignores m: one batch) */
    int v;                 /* virtual stages per rank, interleaved only (0 → 2 for interleaved, else 1) */
    rl_calc_schedule sched;
} rl_calc_bubble_in;

typedef struct {
    double frac_total;     /* bubble ÷ total time: (p−1)/(m+p−1); interleaved (p−1)/(vm+p−1); zb-h1 (p−1)/(3m+p−1) */
    double frac_ideal;     /* bubble ÷ ideal time: (p−1)/m; interleaved (p−1)/(vm); zb-h1 (p−1)/(3m) */
    double bubble_slots;   /* bubble time in units of one micro-batch's t_f+t_b on one stage */
    double peak_inflight;  /* micro-batches of activations held by stage 0 at the peak */
    int m, v;              /* the values used */
} rl_calc_bubble_out;

/* "naive", "gpipe", "1f1b", "interleaved", "zb-h1". */
const char *rl_calc_schedule_name(rl_calc_schedule s);
/* Parses a schedule name; -1 when unknown. */
int rl_calc_schedule_parse(const char *s);
/* Bubble fraction (of total and of ideal time) and peak in-flight micro-batches. */
int rl_calc_bubble(const rl_calc_bubble_in *in, rl_calc_bubble_out *out, char *err, size_t errlen);

/* ------------------------------------------------------------------ FLOPs and MFU */
typedef struct {
    double params, tokens; /* N parameters, D training tokens */
    int layers;            /* L (0: no attention term) */
    double hidden;         /* model width h = H·Q */
    int heads;             /* H */
    double seq;            /* T, sequence length */
} rl_calc_flops_in;

typedef struct {
    double per_token_6n;   /* 6N */
    double per_token_attn; /* 12·L·H·Q·T (0 without layers) */
    double flops_6nd;      /* 6ND */
    double flops_attn;     /* 12·L·H·Q·T·D */
    double total;          /* (6N + 12·L·H·Q·T)·D */
    double head_dim;       /* Q = h / H */
} rl_calc_flops_out;

/* Training FLOPs: 6ND, plus PaLM's (appendix B) attention term 12·L·H·Q·T per token. */
int rl_calc_flops(const rl_calc_flops_in *in, rl_calc_flops_out *out, char *err, size_t errlen);

typedef struct {
    double flops;          /* model FLOPs done in `time` (all GPUs together) */
    double time;           /* seconds */
    int gpus;              /* GPUs that did them (0 → 1) */
    const rl_hw *hw;       /* peak dense bf16 FLOP/s per GPU from the profile */
} rl_calc_mfu_in;

typedef struct {
    double achieved;       /* FLOP/s, flops / time */
    double peak;           /* FLOP/s, gpus × per-GPU peak */
    double mfu;            /* achieved / peak */
} rl_calc_mfu_out;

/* Model FLOPs utilisation = achieved FLOP/s ÷ peak FLOP/s. */
int rl_calc_mfu(const rl_calc_mfu_in *in, rl_calc_mfu_out *out, char *err, size_t errlen);

/* ------------------------------------------------------------------ MoE */
typedef struct {
    double tokens;         /* tokens routed on one rank per step (per MoE layer) */
    int experts, topk;     /* E, k */
    double cf;             /* capacity factor (0 → 1.0) */
    double hidden;         /* h */
    double dtype_bytes;    /* bytes per element (0 → 2) */
} rl_calc_moe_in;

typedef struct {
    double capacity;       /* ceil(tokens·k/E·cf) tokens per expert */
    double routed;         /* tokens·k (token-expert pairs) */
    double dispatch_elems; /* tokens·k·h: each routed token's vector crosses once ... */
    double dispatch_bytes; /* ... in dispatch (×dtype_bytes, counted once) */
    double combine_bytes;  /* and once back in combine */
    double total_bytes;    /* dispatch + combine, per rank per MoE layer */
    double per_token_bytes;/* 2·k·h·dtype_bytes per token per MoE layer */
} rl_calc_moe_out;

/* Capacity per expert and all-to-all bytes per rank (upper bound: no drops, all remote). */
int rl_calc_moe(const rl_calc_moe_in *in, rl_calc_moe_out *out, char *err, size_t errlen);

/* ------------------------------------------------------------------ planner
 * The planner's model (also printed by `ringlab calc plan --help`):
 *  - Layout: G = TP·PP·DP, TP innermost, then PP, DP outermost (mesh.h's
 *    RL_MESH_ORDER_TP_CP_PP_DP, not the mesh's default, which puts PP outermost).
 *    A group uses the profile's intra-node link if all its ranks share a node
 *    (rl_hw_group_link), else the inter-node link. G may exceed the profile: more nodes of
 *    the same kind are assumed.
 *  - Candidates: TP a power of two dividing G, the heads and the hidden size; PP dividing G/TP
 *    and L; DP = G/(TP·PP) dividing the global batch B (sequences); micro-batch size b a power
 *    of two dividing B/DP, m = B/(DP·b) micro-batches; ZeRO stage 0..3 (0 only at DP = 1); recompute
 *    none/selective/full. 1F1B schedule.
 *  - Compute: a micro-batch's training FLOPs (6Ψ + 12·L·h·S per token), shared by the TP·PP
 *    GPUs of a replica, at the profile's peak bf16 rate; selective recompute adds the attention
 *    forward (4·L·h·S per token), full recompute a whole forward (2Ψ + 4·L·h·S per token).
 *  - TP: Megatron's all-reduces of a micro-batch's activations (b·S·h elements, bf16) through a
 *    stage's layers, forward and backward, as ring all-reduces on the TP group's link (the same
 *    with recompute and with sequence parallelism). PP: a
 *    micro-batch's activations to the next stage and their gradient back, one α-β message each
 *    way on the PP group's link. Both are on the critical path of each micro-batch.
 *  - Step: 1F1B's m micro-batches plus the pipeline's fill and drain, each slot as long as one
 *    micro-batch's compute + TP + PP on a stage; then DP, not overlapped: ZeRO-0/1 all-reduce the
 *    gradients once per step; ZeRO-2 reduce-scatters them per micro-batch and all-gathers the
 *    parameters once per step; ZeRO-3 gathers the parameters for each micro-batch's forward and
 *    again for its backward and reduce-scatters its gradients. Each collective moves the GPU's
 *    share of the model in bf16 (its Ψ/(TP·PP) parameters), as a ring on the DP group's link.
 *  - Memory per GPU: ZeRO model states of its Ψ/(TP·PP) parameters (Nd = DP, K = in->k, 0 → 12),
 *    plus the activations of its stage's layers for the micro-batches 1F1B keeps in flight on the
 *    first stage (Korthikanti formulas, with sequence parallelism when TP > 1). Fits if ≤ the
 *    profile's HBM bytes.
 *  - Ranking: candidates that fit, by step time; MFU = 6Ψ+attention model FLOPs per step
 *    ÷ (step time × G × peak). Warnings: TP across nodes, m < 4·PP (PP > 1), out of memory.
 *  - Each row's figures are defined field by field in rl_calc_plan_row below. */
enum { RL_CALC_WARN_TP_NODES = 1, RL_CALC_WARN_FEW_MB = 2, RL_CALC_WARN_OOM = 4 };

typedef struct {
    double params;         /* Ψ */
    int layers, heads;     /* L, a */
    double hidden, seq;    /* h, S */
    int gbs;               /* global batch, sequences per step */
    int gpus;              /* G */
    const rl_hw *hw;
    double k;              /* optimizer bytes per parameter (0 → 12) */
} rl_calc_plan_in;

/* One candidate: its layout, its times per step and its memory per GPU, by the model above.
 *   compute_time, tp_time, pp_time  the m micro-batches' compute, TP and PP seconds on a stage
 *                                    (the fill and drain not included; TP = 0 at TP = 1, PP = 0 at PP = 1)
 *   bubble_time  1F1B's fill and drain
 *   dp_time      the step's DP collectives by ZeRO stage, ring α-β times on the DP group's link
 *   step_time    compute + tp + pp + bubble + dp
 *   mem_states   rl_calc_zero on the GPU's parameter share (Nd = DP, K = in->k).bytes[zero]
 *   mem_act      rl_calc_activation for ONE layer (s = S, b, h, a = heads, t = TP, sp = TP > 1,
 *                recompute) × the stage's layers × the micro-batches in flight
 *   mem_total    mem_states + mem_act
 *   mfu          the global batch's model FLOPs ÷ (step_time × G × peak) (recompute is not model work) */
typedef struct {
    int tp, pp, dp, m, b, zero;
    rl_calc_recompute recompute;
    double step_time, compute_time, bubble_time, tp_time, pp_time, dp_time; /* s per step */
    double mem_states, mem_act, mem_total;                                  /* bytes per GPU */
    double mfu;
    int warnings;          /* RL_CALC_WARN_* bits */
} rl_calc_plan_row;

/* Enumerates candidates; *rows (malloc'd, free() it) sorted: fitting ones by step time,
 * then the rest by step time; equal step times by memory, then tp, pp, b, zero, recompute
 * (each ascending). */
int rl_calc_plan(const rl_calc_plan_in *in, rl_calc_plan_row **rows, int *nrows, char *err, size_t errlen);

/* ------------------------------------------------------------------ parsing helpers */
/* Parses a count: plain or with K/M/B(=G)/T suffix, decimal (7.5B = 7.5e9); -1 on error. */
int rl_calc_parse_count(const char *s, double *out);
/* Parses a byte size: K/M/G/T = KiB/MiB/GiB/TiB as nccl-tests and bench; KB/MB/GB/TB
 * decimal; KiB/MiB/GiB/TiB binary; -1 on error. */
int rl_calc_parse_bytes(const char *s, double *out);

#endif
