/* moe.h — expert-parallel building blocks on top of model.h's top-k routing
 * (rl_moe_routing): expert capacity and token dropping, the dispatch plan for
 * rl_all_to_allv (E experts spread over EP ranks), the Switch auxiliary load-balancing loss
 * and its gradient, and expert-load histograms.
 *
 * Conventions. A routing assigns each of T tokens k experts, slot t·k + j (j = 0 best).
 * Capacity per expert C = ceil(T·k / E · cf) (rl_calc_moe). Dropping is deterministic, in
 * order of arrival: slots are visited t = 0..T−1, j = 0..k−1, and a slot is kept while its
 * expert has fewer than C kept slots; later slots to a full expert are dropped (their token
 * gets nothing from that expert: the residual carries it). Experts live on EP ranks in
 * contiguous blocks: expert e on EP rank e / (E/EP), local index e mod (E/EP). The dispatch
 * order groups kept slots by expert (ascending), arrival order inside an expert, so each
 * destination's rows are contiguous and each local expert's rows contiguous within them. */
#ifndef RL_MOE_H
#define RL_MOE_H
#include <stddef.h>
#include <stdint.h>
#include "comm.h"
#include "model.h"

/* ceil(tokens·top_k / experts · cf) via rl_calc_moe; -1 on bad arguments (cf 0 → 1.0). */
int64_t rl_moe_capacity(int64_t tokens, int experts, int top_k, double cf);

/* Capacity, dropping and the dispatch plan of one rank's tokens. */
typedef struct rl_moe_plan {
    int64_t tokens;
    int experts, top_k, ep, experts_per_rank;
    int64_t capacity;
    int64_t *routed;            /* [E] slots routed to each expert (before dropping) */
    int64_t *kept;              /* [E] slots kept (≤ capacity) */
    int64_t dropped;            /* slots dropped in all */
    int64_t *position;          /* [T·k] the slot's row in its expert's buffer, -1 if dropped */
    int64_t nsend;              /* kept slots = rows this rank sends */
    int64_t *send_slot;         /* [nsend] slot t·k + j of each row, in dispatch order */
    int64_t *send_token;        /* [nsend] its token t (rows for rl_gather_rows) */
    int64_t *send_counts;       /* [ep] rows to each EP rank */
    int64_t *send_displs;       /* [ep] first row for each EP rank */
    /* filled by rl_moe_plan_exchange */
    int64_t nrecv;              /* rows this rank receives */
    int64_t *recv_counts;       /* [ep] rows from each EP rank */
    int64_t *recv_displs;       /* [ep] */
    int64_t *recv_expert_counts;/* [ep · experts_per_rank] rows from rank s for local expert l at [s·epr + l] */
} rl_moe_plan;

/* Builds the plan for expert_ids [tokens·top_k] (best first per token) with E experts over
 * ep ranks and capacity factor cf (0 → 1.0). RL_OK or RL_ERR_ARG (message on ctx, which may
 * be NULL): ids out of range, ep not dividing E ... Free with rl_moe_plan_free. */
int rl_moe_plan_make(rl_ctx *ctx, const int *expert_ids, int64_t tokens, int top_k, int experts, int ep, double cf,
                     rl_moe_plan *plan);
/* Same, from a model routing. */
int rl_moe_plan_from_routing(rl_ctx *ctx, const rl_moe_routing *r, int ep, double cf, rl_moe_plan *plan);
/* Frees the plan's arrays (the struct itself is the caller's). */
void rl_moe_plan_free(rl_moe_plan *plan);
/* Collective over the EP communicator (size must equal plan->ep): exchanges the per-expert
 * row counts with one rl_all_to_all and fills the receive side of the plan. */
int rl_moe_plan_exchange(rl_comm *ep_comm, rl_moe_plan *plan);
/* counts/displs in rows → in elements (× row_elems) for rl_all_to_allv; n entries. */
void rl_moe_rows_to_elems(const int64_t *rows, int n, int64_t row_elems, int64_t *elems);

/* Switch auxiliary loss α·E·Σᵢ fᵢ·Pᵢ over a routing: fᵢ = share of the T·k routed slots
 * sent to expert i (before dropping), Pᵢ = mean router probability of i over the tokens
 * (probs [T·E]). *loss gets the value (= α under uniform routing); dprobs (may be NULL)
 * [T·E] ← ∂loss/∂probs[t,i] = α·E·fᵢ/T (f is a count: no gradient); f and P (may be NULL)
 * [E] receive fᵢ and Pᵢ. RL_OK or RL_ERR_ARG. */
int rl_moe_aux_loss(rl_ctx *ctx, const float *probs, const int *expert_ids, int64_t tokens, int experts, int top_k,
                    double alpha, double *loss, float *dprobs, double *f, double *P);

/* hist [E] ← slots routed to each expert (ids outside 0..E−1 are skipped); returns the
 * number counted or RL_ERR_ARG. */
int64_t rl_moe_expert_load(const int *expert_ids, int64_t nslots, int experts, int64_t *hist);
/* One text line per expert: "e3 ████████ 3200 (2.9× mean)"; bars scaled to width; returns buf. */
const char *rl_moe_load_chart(const int64_t *hist, int experts, int width, char *buf, size_t size);

#endif
