/* cost.h — the cost model, in one place: hardware profiles, α-β times of collectives
 * (ring, tree), nccl-tests bus-bandwidth factors and roofline times of ops. The sim
 * backend, the calculators, the lab summaries and the graders all call these. */
#ifndef RL_COST_H
#define RL_COST_H
#include "dtype.h"

/* One level of interconnect: bandwidth each way per GPU and per-message latency. */
typedef struct rl_link {
    const char *name;   /* "NVLink4", "PCIe Gen4 x16", "InfiniBand NDR" */
    double bw;          /* bytes/s, each direction, per GPU (β = 1/bw) */
    double alpha;       /* seconds per message / ring step */
} rl_link;

/* A hardware profile the sim backend models. */
typedef struct rl_hw {
    const char *name;        /* "h100-nvlink" */
    const char *summary;     /* one line for --help and summaries */
    const char *source;      /* where the numbers come from */
    int gpus_per_node, nodes;
    double peak_flops_bf16;  /* dense, FLOP/s */
    double peak_flops_f32;   /* non-tensor-core FP32, FLOP/s */
    double hbm_bw;           /* bytes/s */
    double hbm_bytes;        /* device memory, bytes */
    double op_min_time;      /* shortest time any kernel takes (launch + tail), s */
    rl_link intra;           /* inside a node */
    rl_link inter;           /* between nodes (unused when nodes == 1) */
} rl_hw;

typedef enum { RL_ALGO_RING = 0, RL_ALGO_TREE = 1 } rl_algo;

typedef enum {
    RL_COLL_ALL_REDUCE = 0, RL_COLL_REDUCE_SCATTER, RL_COLL_ALL_GATHER, RL_COLL_BROADCAST,
    RL_COLL_REDUCE, RL_COLL_ALL_TO_ALL, RL_COLL_ALL_TO_ALLV, RL_COLL_SEND, RL_COLL_RECV,
    RL_COLL_SPLIT, RL_COLL_BARRIER, RL_COLL_NKINDS
} rl_coll_kind;

/* "all_reduce", "reduce_scatter", ... as used on the command line and in traces. */
const char *rl_coll_name(rl_coll_kind k);
/* Parses a collective name (also accepts "allreduce" style); -1 when unknown. */
int rl_coll_parse(const char *name);

/* The built-in profiles and their number. */
const rl_hw *rl_hw_profiles(int *count);
/* Looks a profile up by name; NULL when unknown. */
const rl_hw *rl_hw_find(const char *name);
/* The default profile (h100-nvlink). */
const rl_hw *rl_hw_default(void);
/* Node index of a global rank under a profile. */
int rl_hw_node_of(const rl_hw *hw, int global_rank);
/* The slowest link a group of global ranks crosses: intra if all on one node, else inter. */
const rl_link *rl_hw_group_link(const rl_hw *hw, const int *global_ranks, int n);
/* Peak FLOP/s of a profile for a dtype. */
double rl_hw_peak_flops(const rl_hw *hw, rl_dtype dtype);

/* α-β times (seconds) for a buffer of `bytes` over n ranks, latency alpha (s), bandwidth bw (B/s). */
double rl_ab_ring_all_reduce(int n, double bytes, double alpha, double bw);   /* 2(n−1)α + 2(n−1)/n·S/bw */
double rl_ab_ring_reduce_scatter(int n, double bytes, double alpha, double bw); /* (n−1)α + (n−1)/n·S/bw */
double rl_ab_ring_all_gather(int n, double bytes, double alpha, double bw);   /* same as reduce-scatter */
double rl_ab_tree_all_reduce(int n, double bytes, double alpha, double bw);   /* 2·log2(n)·α + 2·S/bw */
/* Time of any collective on a link; bytes is the nccl-tests "size" (whole buffer). */
double rl_ab_time(rl_coll_kind k, rl_algo algo, int n, double bytes, const rl_link *link);
/* nccl-tests bus-bandwidth factor: busbw = algbw × factor. */
double rl_busbw_factor(rl_coll_kind k, int n);
/* Bytes one rank sends in the ring algorithm of a collective of `bytes` (whole buffer). */
double rl_ring_bytes_per_rank(rl_coll_kind k, int n, double bytes);

/* Roofline time of an op: max(flops/peak, bytes/hbm_bw), at least op_min_time. */
double rl_op_time(const rl_hw *hw, rl_dtype dtype, double flops, double bytes);

#endif
