/* mesh.h — the device mesh of 3D (and 4D/5D) parallelism: world = DP × PP × CP × TP, with
 * expert parallelism (EP) carved out of DP, the coordinates of every rank, the ranks of
 * every group, one communicator per group (rl_comm_split), the nodes of the hardware
 * profile each rank sits on, and a warning when a TP group crosses a node.
 *
 * Rank order (RL_MESH_ORDER_TP_CP_DP_PP, the default: Megatron-LM's default order string
 * "tp-cp-ep-dp-pp") — innermost (fastest-changing coordinate) first: tp, cp, dp, pp; inside
 * dp, ep changes before edp.
 * TP (2 all-reduces per layer forward and backward, latency bound) on consecutive ranks, so
 * on one node; then CP (K/V ring every layer); then DP (one gradient reduction per step,
 * overlapped); PP outermost (one activation per micro-batch, point to point: the traffic that
 * best tolerates the links between nodes, so a pipeline stage is a block of whole nodes).
 * RL_MESH_ORDER_TP_CP_PP_DP swaps the two outer ones (pp changes before dp): DP outermost, a
 * data-parallel replica is a block of whole nodes; it is the layout `ringlab calc plan` assumes.
 * EP: Megatron carves the expert-parallel group out of the data-parallel ranks: EP divides
 * DP, an EP group is EP consecutive DP indices (same tp, cp, pp), and the "expert data
 * parallel" group (EDP = DP/EP ranks holding the same experts) reduces expert gradients.
 *
 * A mesh is a plain value (no allocation, no ctx); rl_mesh_build_comms makes the
 * communicators on a running rank. */
#ifndef RL_MESH_H
#define RL_MESH_H
#include <stddef.h>
#include "comm.h"
#include "cost.h"

typedef enum {
    RL_MESH_ORDER_TP_CP_DP_PP = 0, /* the default, Megatron-LM's "tp-cp-ep-dp-pp": TP innermost, PP outermost */
    RL_MESH_ORDER_TP_CP_PP_DP = 1  /* TP innermost, DP outermost */
} rl_mesh_order;

/* Dimension bits, for groups spanning several dimensions (RL_MESH_DP = EP | EDP). */
enum {
    RL_MESH_TP = 1, RL_MESH_CP = 2, RL_MESH_PP = 4, RL_MESH_EP = 8, RL_MESH_EDP = 16,
    RL_MESH_DP = RL_MESH_EP | RL_MESH_EDP
};

/* The sizes of the mesh; every size must be >= 1 (rl_mesh_shape_make fills cp = ep = 1). */
typedef struct rl_mesh_shape {
    int dp, pp, tp, cp, ep;
    rl_mesh_order order;
} rl_mesh_shape;

/* One rank's coordinates (dp combines ep and edp). */
typedef struct rl_mesh_coord {
    int tp, cp, pp, dp, ep, edp;
} rl_mesh_coord;

#define RL_MESH_MAX_RANKS 4096

typedef struct rl_mesh {
    rl_mesh_shape shape;
    int world;              /* dp·pp·cp·tp */
    int gpus_per_node;      /* from the hardware profile (ranks beyond it sit on further nodes) */
    int tp_crosses_node;    /* 1 when some TP group spans two nodes */
    char warning[256];      /* "" or the TP-across-nodes warning */
} rl_mesh;

/* A shape with cp = ep = 1 and the default order. */
rl_mesh_shape rl_mesh_shape_make(int dp, int pp, int tp);
/* Checks the shape against the world size and lays the mesh out on hw's nodes (hw NULL:
 * the default profile). RL_OK, or RL_ERR_ARG with what was wrong and how to fix it in err. */
int rl_mesh_init(rl_mesh *m, const rl_mesh_shape *shape, int world, const rl_hw *hw, char *err, size_t errlen);
/* The coordinates of a rank (RL_ERR_ARG if rank is out of range). */
int rl_mesh_coord_of(const rl_mesh *m, int rank, rl_mesh_coord *c);
/* The rank at coordinates c (c->dp is ignored: ep and edp place it); -1 if out of range. */
int rl_mesh_rank_of(const rl_mesh *m, const rl_mesh_coord *c);
/* The ranks of rank's group over the dimensions in `dims` (RL_MESH_* bits; 0 = just the
 * rank): every rank whose other coordinates equal rank's, ascending (the order is also each
 * member's rank in the group's communicator). Returns the group size, fills ranks (may be
 * NULL) and *index (may be NULL) with the group's number among the groups of that kind. */
int rl_mesh_group(const rl_mesh *m, int dims, int rank, int *ranks, int *index);
/* The node of a rank under the mesh's hardware profile. */
int rl_mesh_node_of(const rl_mesh *m, int rank);
/* 1 if rank's group over `dims` spans more than one node. */
int rl_mesh_group_crosses_node(const rl_mesh *m, int dims, int rank);
/* Short name of a dimension set ("tp", "dp", "dp+cp", ...) into buf; returns buf. */
const char *rl_mesh_dims_name(int dims, char *buf, size_t size);
/* Writes the mesh as text ("dp=2 x pp=2 x tp=2 ...", one line per rank with coordinates
 * and node) into buf; returns buf. */
const char *rl_mesh_describe(const rl_mesh *m, char *buf, size_t size);

/* This rank's communicators, one per group (each a sub-communicator of the world). */
typedef struct rl_mesh_comms {
    rl_comm *tp, *cp, *pp, *dp;   /* dp: all DP ranks (EP × EDP) */
    rl_comm *ep, *edp;            /* expert parallel; expert data parallel (DP/EP ranks) */
    rl_comm *dp_cp;               /* DP × CP: gradient reduction when CP > 1 (Megatron) */
    rl_comm *mp;                  /* model parallel: TP × CP × PP (one replica of the model) */
    rl_mesh_coord coord;          /* this rank's coordinates */
} rl_mesh_comms;

/* Collective over the world: every rank calls it with the same mesh; it splits the world
 * into each group's communicator (8 rl_comm_split calls in a fixed order) and records the
 * mesh in the trace for the TUI's mesh view. RL_OK or an error (rl_last_error). */
int rl_mesh_build_comms(rl_ctx *ctx, const rl_mesh *m, rl_mesh_comms *out);
/* Records the mesh in the trace (rank 0; called by rl_mesh_build_comms): names outermost
 * first, e.g. {"dp","pp","tp"}; cp only when > 1; dp split into {"edp","ep"} when EP > 1. */
void rl_mesh_record(rl_ctx *ctx, const rl_mesh *m);

#endif
