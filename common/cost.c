/* cost.c — hardware profiles, α-β collective times and roofline op times. */
#include "apiwatch.h"
#include "cost.h"
#include <math.h>
#include <string.h>


static const rl_hw profiles[] = {
    {
        .name = "h100-nvlink",
        .summary = "one node of 8x H100 SXM5 80 GB, NVLink4 through NVSwitch (450 GB/s each way per GPU)",
        .source = "NVIDIA H100 Tensor Core GPU datasheet (SXM5: 989 TFLOP/s dense BF16, 67 TFLOP/s FP32, "
                  "3.35 TB/s HBM3, NVLink 900 GB/s bidirectional); alpha 1 us per ring step and 3 us "
                  "minimum kernel time are modelling assumptions of the order NCCL and CUDA show",
        .gpus_per_node = 8, .nodes = 1,
        .peak_flops_bf16 = 989e12, .peak_flops_f32 = 67e12,
        .hbm_bw = 3.35e12, .hbm_bytes = 80e9, .op_min_time = 3e-6,
        .intra = { "NVLink4 (NVSwitch)", 450e9, 1.0e-6 },
        .inter = { "InfiniBand NDR 400 Gb/s", 50e9, 5.0e-6 },
    },
    {
        .name = "a100-pcie",
        .summary = "one node of 8x A100 PCIe 80 GB, no NVLink: GPUs talk over PCIe Gen4 x16 (32 GB/s each way)",
        .source = "NVIDIA A100 Tensor Core GPU datasheet (PCIe 80 GB: 312 TFLOP/s dense BF16, 19.5 TFLOP/s "
                  "FP32, 1.935 TB/s HBM2e, PCIe Gen4 64 GB/s bidirectional); alpha 5 us per ring step and "
                  "4 us minimum kernel time are modelling assumptions",
        .gpus_per_node = 8, .nodes = 1,
        .peak_flops_bf16 = 312e12, .peak_flops_f32 = 19.5e12,
        .hbm_bw = 1.935e12, .hbm_bytes = 80e9, .op_min_time = 4e-6,
        .intra = { "PCIe Gen4 x16", 32e9, 5.0e-6 },
        .inter = { "PCIe Gen4 x16", 32e9, 5.0e-6 },
    },
    {
        .name = "h100-2node-ib",
        .summary = "two nodes of 8x H100 SXM5 (NVLink4 inside a node), one NDR 400 Gb/s InfiniBand NIC per GPU "
                   "between nodes (50 GB/s each way)",
        .source = "NVIDIA H100 datasheet as h100-nvlink; NVIDIA ConnectX-7 / Quantum-2 NDR: 400 Gb/s = 50 GB/s "
                  "per port, one port per GPU as in DGX H100; alpha 5 us per inter-node step is a modelling "
                  "assumption",
        .gpus_per_node = 8, .nodes = 2,
        .peak_flops_bf16 = 989e12, .peak_flops_f32 = 67e12,
        .hbm_bw = 3.35e12, .hbm_bytes = 80e9, .op_min_time = 3e-6,
        .intra = { "NVLink4 (NVSwitch)", 450e9, 1.0e-6 },
        .inter = { "InfiniBand NDR 400 Gb/s", 50e9, 5.0e-6 },
    },
};

static const char *const coll_names[RL_COLL_NKINDS] = {
    "all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce",
    "all_to_all", "all_to_allv", "send", "recv", "comm_split", "barrier"
};

const char *rl_coll_name(rl_coll_kind k)
{
    return (k >= 0 && k < RL_COLL_NKINDS) ? coll_names[k] : "?";
}

int rl_coll_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < RL_COLL_NKINDS; i++) {
        const char *a = coll_names[i], *b = name;
        /* compare ignoring '_' so "allreduce" and "all_reduce" both work */
        while (*a || *b) {
            if (*a == '_') { a++; continue; }
            if (*b == '_' || *b == '-') { b++; continue; }
            if (*a != *b)
                break;
            a++;
            b++;
        }
        if (!*a && !*b)
            return i;
    }
    return -1;
}

const rl_hw *rl_hw_profiles(int *count)
{
    if (count)
        *count = (int)(sizeof profiles / sizeof profiles[0]);
    return profiles;
}

const rl_hw *rl_hw_find(const char *name)
{
    int n;
    const rl_hw *p = rl_hw_profiles(&n);
    for (int i = 0; name && i < n; i++)
        if (strcmp(p[i].name, name) == 0)
            return &p[i];
    return NULL;
}

const rl_hw *rl_hw_default(void) { return &profiles[0]; }

int rl_hw_node_of(const rl_hw *hw, int global_rank)
{
    return hw->gpus_per_node > 0 ? global_rank / hw->gpus_per_node : 0;
}

const rl_link *rl_hw_group_link(const rl_hw *hw, const int *global_ranks, int n)
{
    for (int i = 1; i < n; i++)
        if (rl_hw_node_of(hw, global_ranks[i]) != rl_hw_node_of(hw, global_ranks[0]))
            return &hw->inter;
    return &hw->intra;
}

double rl_hw_peak_flops(const rl_hw *hw, rl_dtype dtype)
{
    return dtype == RL_BF16 ? hw->peak_flops_bf16 : hw->peak_flops_f32;
}

RL_API_WATCHED
double rl_ab_ring_all_reduce(int n, double bytes, double alpha, double bw)
{
    RL_API_ENTRY();
    if (n <= 1)
        return 0.0;
    return 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * bytes / bw;
}

RL_API_WATCHED
double rl_ab_ring_reduce_scatter(int n, double bytes, double alpha, double bw)
{
    RL_API_ENTRY();
    if (n <= 1)
        return 0.0;
    return (n - 1) * alpha + (double)(n - 1) / n * bytes / bw;
}

RL_API_WATCHED
double rl_ab_ring_all_gather(int n, double bytes, double alpha, double bw)
{
    RL_API_ENTRY();
    return rl_ab_ring_reduce_scatter(n, bytes, alpha, bw);
}

RL_API_WATCHED
double rl_ab_tree_all_reduce(int n, double bytes, double alpha, double bw)
{
    RL_API_ENTRY();
    if (n <= 1)
        return 0.0;
    return 2.0 * log2((double)n) * alpha + 2.0 * bytes / bw;
}

RL_API_WATCHED
double rl_ab_time(rl_coll_kind k, rl_algo algo, int n, double bytes, const rl_link *link)
{
    RL_API_ENTRY();
    double a = link->alpha, bw = link->bw;
    if (n <= 1 && k != RL_COLL_SEND && k != RL_COLL_RECV)
        return 0.0;
    switch (k) {
    case RL_COLL_ALL_REDUCE:
        return algo == RL_ALGO_TREE ? rl_ab_tree_all_reduce(n, bytes, a, bw)
                                    : rl_ab_ring_all_reduce(n, bytes, a, bw);
    case RL_COLL_REDUCE_SCATTER:
    case RL_COLL_ALL_GATHER:
    case RL_COLL_ALL_TO_ALL:
    case RL_COLL_ALL_TO_ALLV:
        return rl_ab_ring_reduce_scatter(n, bytes, a, bw);
    case RL_COLL_BROADCAST:
    case RL_COLL_REDUCE:
        /* pipelined ring: the buffer streams once through every link */
        return (n - 1) * a + bytes / bw;
    case RL_COLL_SEND:
    case RL_COLL_RECV:
        return a + bytes / bw;
    case RL_COLL_SPLIT:
    case RL_COLL_BARRIER:
        return 2.0 * (n - 1) * a;
    default:
        return 0.0;
    }
}

RL_API_WATCHED
double rl_busbw_factor(rl_coll_kind k, int n)
{
    RL_API_ENTRY();
    if (n <= 0)
        return 0.0;
    switch (k) {
    case RL_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case RL_COLL_REDUCE_SCATTER:
    case RL_COLL_ALL_GATHER:
    case RL_COLL_ALL_TO_ALL:
    case RL_COLL_ALL_TO_ALLV:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

RL_API_WATCHED
double rl_ring_bytes_per_rank(rl_coll_kind k, int n, double bytes)
{
    RL_API_ENTRY();
    if (n <= 1)
        return 0.0;
    switch (k) {
    case RL_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n * bytes;
    case RL_COLL_REDUCE_SCATTER:
    case RL_COLL_ALL_GATHER:
    case RL_COLL_ALL_TO_ALL:
    case RL_COLL_ALL_TO_ALLV:
        return (double)(n - 1) / n * bytes;
    default:
        return bytes;
    }
}

RL_API_WATCHED
double rl_op_time(const rl_hw *hw, rl_dtype dtype, double flops, double bytes)
{
    RL_API_ENTRY();
    double t = fmax(flops / rl_hw_peak_flops(hw, dtype), bytes / hw->hbm_bw);
    return fmax(t, hw->op_min_time);
}
