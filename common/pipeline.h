/* pipeline.h — pipeline-parallel schedules as per-stage op lists: generators (GPipe, 1F1B,
 * interleaved 1F1B, zero-bubble ZB-H1), a validator (dependencies, each op once, FIFO
 * send/recv matching, deadlock), a timeline simulator (bubble fraction, peak in-flight
 * micro-batches) and the same measurements over a run's trace.
 *
 * Model. p stages (ranks), m micro-batches, v model chunks per rank: chunk c on stage r
 * is virtual stage c·p + r of V = v·p (Megatron's interleaving; v = 1 otherwise).
 * Ops: F(mb, c) forward; B(mb, c) backward — input and weight gradients, or only the input
 * gradient when the schedule splits the backward (split_w); W(mb, c) weight gradient.
 * Communication is implied by the ops: F of virtual stage s > 0 first receives the
 * activation from the stage holding s−1, and F of s < V−1 sends its output to the stage of
 * s+1; B of s < V−1 receives the gradient from s+1 and B of s > 0 sends to s−1
 * (rl_pp_op_peers says who). The validator and the timeline model the schedule itself:
 * an op starts once its input has arrived, sends never hold the sender up, and messages
 * on one link are received in the order they were sent (activations and gradients as two
 * streams: give them two communicators — rl_recv matches in order and has no tags).
 * Executing it on the runtime is harder than modelling it: there a send completes only when
 * the peer posts the matching receive, and a rank's comm calls run in order, so ranks that
 * each send before they receive can wait on each other for ever. Which calls a rank must post
 * together (rl_group_start/rl_group_end) for each schedule to run is part of labs 30.4 and
 * 31.2; the watchdog names the ranks and calls of a deadlock.
 * Dependencies: F(mb, s) after F(mb, s−1); B(mb, s) after F(mb, s) and B(mb, s+1);
 * W(mb, s) after B(mb, s).
 *
 * Costs (rl_pp_costs) are per stage for all its layers: an op of a chunk takes 1/v of it;
 * without W ops, B takes b + w. */
#ifndef RL_PIPELINE_H
#define RL_PIPELINE_H
#include <stddef.h>
#include <stdio.h>
#include "trace.h"

typedef struct rl_ctx rl_ctx;

typedef enum { RL_PP_GPIPE = 0, RL_PP_1F1B, RL_PP_INTERLEAVED, RL_PP_ZB_H1, RL_PP_CUSTOM } rl_pp_kind;

typedef struct rl_pp_op {
    char kind;      /* 'F', 'B' or 'W' (the trace phase) */
    int mb;         /* micro-batch 0..m−1 */
    int chunk;      /* model chunk 0..v−1 on this stage */
} rl_pp_op;

typedef struct rl_pp_schedule {
    rl_pp_kind kind;
    int p, m, v;
    int split_w;    /* 1: backward is B (input grad) + W (weight grad) */
    int *nops;      /* [p] ops per stage */
    rl_pp_op **ops; /* [p][nops] in execution order */
    int *cap;       /* [p] allocated (internal) */
} rl_pp_schedule;

/* "gpipe", "1f1b", "interleaved", "zb-h1", "custom". */
const char *rl_pp_kind_name(rl_pp_kind k);
/* Parses a schedule name; -1 when unknown. */
int rl_pp_kind_parse(const char *s);
/* Generates a schedule: GPipe (all F then all B), 1F1B (warm-up p−r−1 forwards on stage r,
 * then one F one B, then the remaining B), interleaved 1F1B (Megatron-LM's order, v >= 2
 * chunks, m a multiple of p), ZB-H1 (1F1B's F/B order; stage r defers W by r micro-batches,
 * so every stage holds at most p; the W passes fill the cool-down bubble). v is ignored (1) except for interleaved. NULL with a message in err. */
rl_pp_schedule *rl_pp_schedule_new(rl_pp_kind kind, int p, int m, int v, char *err, size_t errlen);
/* An empty custom schedule to fill with rl_pp_schedule_append (learners, tests). */
rl_pp_schedule *rl_pp_schedule_empty(int p, int m, int v, int split_w, char *err, size_t errlen);
/* Appends an op to a stage's list; RL_OK or RL_ERR_ARG (bad stage) / RL_ERR_NOMEM. */
int rl_pp_schedule_append(rl_pp_schedule *s, int stage, char kind, int mb, int chunk);
/* Frees a schedule (NULL is fine). */
void rl_pp_schedule_free(rl_pp_schedule *s);
/* The virtual stage of (stage, chunk): chunk·p + stage. */
int rl_pp_virtual_stage(const rl_pp_schedule *s, int stage, int chunk);
/* Who op talks to: *recv_from (the stage it receives its input from) and *send_to (the
 * stage its output goes to), -1 for none or when it stays on this stage. */
void rl_pp_op_peers(const rl_pp_schedule *s, int stage, const rl_pp_op *op, int *recv_from, int *send_to);
/* Writes a stage's list as text ("F0 F1 B0 F2 B1 ..."; chunks as F0.1) into buf; returns buf. */
const char *rl_pp_stage_string(const rl_pp_schedule *s, int stage, char *buf, size_t size);

/* Checks a schedule: every (op, mb, chunk) exactly once per stage, B after its F and W after
 * its B in the list, W ops present iff split_w, receives in the order the peer sends, and no
 * deadlock (simulates the stages and their messages). RL_OK, or RL_ERR_ARG with the first
 * problem in err ("stage 1 ... : the schedule deadlocks ..."). */
int rl_pp_validate(const rl_pp_schedule *s, char *err, size_t errlen);

/* Per-op costs, seconds (or any unit), for one stage's whole layers. */
typedef struct rl_pp_costs {
    double f, b, w;  /* forward, input-gradient backward, weight-gradient backward */
    double p2p;      /* a send/recv between stages */
} rl_pp_costs;

/* The timeline of a schedule under given costs. */
typedef struct rl_pp_timeline {
    int p;
    double makespan;        /* end of the last op */
    double bubble_frac;     /* mean over stages of idle / makespan */
    double *stage_busy;     /* [p] */
    double *stage_bubble;   /* [p] idle / makespan */
    double *peak_inflight;  /* [p] micro-batches whose F began and whose B (W if split) has not
                               ended, at the peak; chunks count 1/v each */
    double **start, **end;  /* [p][nops] of each op */
} rl_pp_timeline;

/* Simulates the schedule (it must validate) with the costs; NULL with a message on error. */
rl_pp_timeline *rl_pp_simulate(const rl_pp_schedule *s, const rl_pp_costs *c, char *err, size_t errlen);
/* Frees a timeline. */
void rl_pp_timeline_free(rl_pp_timeline *t);
/* Appends the timeline's ops as trace events (rank = stage, compute stream, phase, tags
 * stage/mb/chunk/step) to t, e.g. for the TUI's pipeline view. RL_OK or an error. */
int rl_pp_timeline_to_trace(const rl_pp_schedule *s, const rl_pp_timeline *tl, int step, rl_trace *t);

/* Tags what the current rank records next with the op (stage, mb, chunk, phase); lab code
 * calls it before an op's compute and rl_pp_unmark after. */
void rl_pp_mark(rl_ctx *ctx, int stage, const rl_pp_op *op);
/* Clears the tags set by rl_pp_mark. */
void rl_pp_unmark(rl_ctx *ctx);

#define RL_PP_MAX_STAGES 64

/* Bubble and in-flight figures measured from a trace. */
typedef struct rl_pp_trace_stats {
    int nranks;                              /* ranks with tagged F/B/W events */
    int nstages;                             /* highest stage tag + 1 */
    double t0, makespan;                     /* window of the tagged events */
    double bubble_frac;                      /* mean over those ranks of idle / makespan */
    double stage_bubble[RL_PP_MAX_STAGES];   /* mean over the ranks of each stage */
    double peak_inflight[RL_PP_MAX_STAGES];  /* max over the ranks of each stage */
} rl_pp_trace_stats;

/* Measures the bubble from compute events with phase F/B/W and an RL_TAG_STAGE tag (and
 * RL_TAG_STEP == step, unless step < 0): per rank, idle = window − union of its op time;
 * in-flight per (mb, chunk) from its first F to its last B (or W when the rank has W
 * events), chunks counting 1/(chunks seen). RL_OK, or RL_ERR_ARG when nothing is tagged. */
int rl_pp_bubble_from_trace(const rl_trace *t, int step, rl_pp_trace_stats *out, char *err, size_t errlen);

/* The schedule as PyTorch's schedule dump shows it: every op takes one tick and a message
 * none; at each tick every stage runs its next op when its input is there (F after the
 * previous virtual stage's F, B after its own F and the next virtual stage's B, W after its
 * B). tick[r][i] (caller's, [p][nops]) gets op i of stage r's tick, *nticks the ticks in all.
 * RL_OK, or RL_ERR_ARG with the reason (a deadlock, an op outside p/m/v) in err. */
int rl_pp_ticks(const rl_pp_schedule *s, int **tick, int *nticks, char *err, size_t errlen);
/* Prints the tick table: one line per tick, one column per stage, "F3" (or "F3.1": micro-batch
 * 3, chunk 1 when v > 1) or "." for a stage idle at that tick. RL_OK or an error as above. */
int rl_pp_print_ticks(const rl_pp_schedule *s, FILE *out, char *err, size_t errlen);
/* The schedule a run executed, read back from its trace (the lowest rank of each stage, its
 * F/B/W ops in the order they began; step < 0: every step). NULL with a message in err when
 * the trace has no tagged pipeline ops. */
rl_pp_schedule *rl_pp_schedule_from_trace(const rl_trace *t, int step, char *err, size_t errlen);
/* The tick table of the schedule a traced run executed in its first step with pipeline ops
 * (rl_pp_schedule_from_trace, rl_pp_print_ticks). RL_OK, or an error with a message in err. */
int rl_pp_print_trace_ticks(const rl_trace *t, FILE *out, char *err, size_t errlen);

#endif
