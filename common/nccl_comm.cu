/* nccl_comm.cu — thin wrappers over NCCL for the runtime (one GPU per rank): unique ids,
 * communicator init (one process with a thread per GPU, or one process per rank), split,
 * groups, and one collective or send/recv on a stream. Without NCCL (RL_HAVE_NCCL unset)
 * every call says so. Ran with one rank on an H200 (docs/gpu-runs.md); with two or more GPUs it
 * has not run on GPUs yet. The CUDA_FAKE build emulates these calls (cuda_fake/fake_nccl.c). */
#include <stdio.h>
#include <string.h>
#include "cuda_backend.h"
#include "cuda_common.cuh"

#ifdef RL_HAVE_NCCL
#include <nccl.h>

/* The rl_coll_kind values of cost.h (kept in step by the C side: backend.c checks them). */
enum { K_ALL_REDUCE = 0, K_REDUCE_SCATTER, K_ALL_GATHER, K_BROADCAST, K_REDUCE, K_ALL_TO_ALL, K_ALL_TO_ALLV,
       K_SEND, K_RECV };

#define RL_NC(call, what)                                                                       \
    do {                                                                                        \
        ncclResult_t rl_r_ = (call);                                                            \
        if (rl_r_ != ncclSuccess) {                                                             \
            if (err)                                                                            \
                snprintf(err, (size_t)len, "%s: %s (%s)", what, ncclGetErrorString(rl_r_),      \
                         ncclGetLastError(NULL));                                               \
            return -1;                                                                          \
        }                                                                                       \
    } while (0)

extern "C" int rl_nccl_built(void) { return 1; }
extern "C" int rl_nccl_id_bytes(void) { return (int)sizeof(ncclUniqueId); }

extern "C" int rl_nccl_get_unique_id(void *id, char *err, int len)
{
    ncclUniqueId u;
    RL_NC(ncclGetUniqueId(&u), "ncclGetUniqueId");
    memcpy(id, &u, sizeof u);
    return 0;
}

extern "C" int rl_nccl_init_local(int n, const int *devs, const void *id, void **comms, char *err, int len)
{
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    RL_NC(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < n; r++) {
        RL_CU(cudaSetDevice(devs[r]), "cudaSetDevice");
        ncclComm_t c = NULL;
        ncclResult_t res = ncclCommInitRank(&c, n, u, r);
        if (res != ncclSuccess) {
            ncclGroupEnd();
            snprintf(err, (size_t)len, "ncclCommInitRank(rank %d of %d, GPU %d): %s", r, n, devs[r],
                     ncclGetErrorString(res));
            return -1;
        }
        comms[r] = (void *)c;
    }
    RL_NC(ncclGroupEnd(), "ncclCommInitRank (group)");
    return 0;
}

extern "C" int rl_nccl_init_rank(int nranks, int rank, int dev, const void *id, void **comm, char *err, int len)
{
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    RL_CU(cudaSetDevice(dev), "cudaSetDevice");
    ncclComm_t c = NULL;
    RL_NC(ncclCommInitRank(&c, nranks, u, rank), "ncclCommInitRank");
    *comm = (void *)c;
    return 0;
}

extern "C" int rl_nccl_split(void *parent, int color, int key, void **out, char *err, int len)
{
    ncclComm_t c = NULL;
    RL_NC(ncclCommSplit((ncclComm_t)parent, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &c, NULL),
          "ncclCommSplit");
    *out = (void *)c;
    return 0;
}

extern "C" void rl_nccl_free(void *comm, int abort)
{
    if (comm && abort)
        ncclCommAbort((ncclComm_t)comm);
    else if (comm)
        ncclCommDestroy((ncclComm_t)comm);
}

extern "C" int rl_nccl_group_start(char *err, int len)
{
    RL_NC(ncclGroupStart(), "ncclGroupStart");
    return 0;
}

extern "C" int rl_nccl_group_end(char *err, int len)
{
    RL_NC(ncclGroupEnd(), "ncclGroupEnd");
    return 0;
}

static ncclRedOp_t redop(int op)
{
    switch (op) {
    case 1: return ncclAvg;
    case 2: return ncclMax;
    case 3: return ncclMin;
    default: return ncclSum;
    }
}

extern "C" int rl_nccl_call(void *comm, void *stream, int kind, const void *send, void *recv, int64_t send_numel,
                            int64_t recv_numel, int dtype, int op, int peer, const int64_t *counts, int n, int me,
                            char *err, int len)
{
    ncclComm_t c = (ncclComm_t)comm;
    cudaStream_t s = (cudaStream_t)stream;
    ncclDataType_t t = dtype ? ncclBfloat16 : ncclFloat32;
    size_t es = dtype ? 2 : 4;
    switch (kind) {
    case K_ALL_REDUCE:
        RL_NC(ncclAllReduce(send, recv, (size_t)send_numel, t, redop(op), c, s), "ncclAllReduce");
        return 0;
    case K_REDUCE_SCATTER:
        RL_NC(ncclReduceScatter(send, recv, (size_t)recv_numel, t, redop(op), c, s), "ncclReduceScatter");
        return 0;
    case K_ALL_GATHER:
        RL_NC(ncclAllGather(send, recv, (size_t)send_numel, t, c, s), "ncclAllGather");
        return 0;
    case K_BROADCAST:
        RL_NC(ncclBroadcast(me == peer ? send : recv, recv, (size_t)recv_numel, t, peer, c, s), "ncclBroadcast");
        return 0;
    case K_REDUCE:
        RL_NC(ncclReduce(send, recv, (size_t)send_numel, t, redop(op), peer, c, s), "ncclReduce");
        return 0;
    case K_ALL_TO_ALL: {
        /* NCCL has no all-to-all call: grouped send/recv of equal chunks (the usual way). */
        size_t chunk = (size_t)send_numel / (size_t)n;
        RL_NC(ncclGroupStart(), "ncclGroupStart");
        for (int q = 0; q < n; q++) {
            RL_NC(ncclSend((const char *)send + q * chunk * es, chunk, t, q, c, s), "ncclSend (all_to_all)");
            RL_NC(ncclRecv((char *)recv + q * chunk * es, chunk, t, q, c, s), "ncclRecv (all_to_all)");
        }
        RL_NC(ncclGroupEnd(), "ncclGroupEnd (all_to_all)");
        return 0;
    }
    case K_ALL_TO_ALLV:
        RL_NC(ncclGroupStart(), "ncclGroupStart");
        for (int q = 0; q < n; q++) {
            if (counts[q])
                RL_NC(ncclSend((const char *)send + counts[n + q] * es, (size_t)counts[q], t, q, c, s),
                      "ncclSend (all_to_allv)");
            if (counts[2 * n + q])
                RL_NC(ncclRecv((char *)recv + counts[3 * n + q] * es, (size_t)counts[2 * n + q], t, q, c, s),
                      "ncclRecv (all_to_allv)");
        }
        RL_NC(ncclGroupEnd(), "ncclGroupEnd (all_to_allv)");
        return 0;
    case K_SEND:
        RL_NC(ncclSend(send, (size_t)send_numel, t, peer, c, s), "ncclSend");
        return 0;
    case K_RECV:
        RL_NC(ncclRecv(recv, (size_t)recv_numel, t, peer, c, s), "ncclRecv");
        return 0;
    default:
        snprintf(err, (size_t)len, "NCCL: collective kind %d is not mapped", kind);
        return -1;
    }
}

#else /* no NCCL in this build */

static int no_nccl(char *err, int len)
{
    if (err)
        snprintf(err, (size_t)len, "this build has no NCCL (nccl.h was not found); rebuild with NCCL_HOME=...");
    return -1;
}
extern "C" int rl_nccl_built(void) { return 0; }
extern "C" int rl_nccl_id_bytes(void) { return 128; }
extern "C" int rl_nccl_get_unique_id(void *, char *err, int len) { return no_nccl(err, len); }
extern "C" int rl_nccl_init_local(int, const int *, const void *, void **, char *err, int len) { return no_nccl(err, len); }
extern "C" int rl_nccl_init_rank(int, int, int, const void *, void **, char *err, int len) { return no_nccl(err, len); }
extern "C" int rl_nccl_split(void *, int, int, void **, char *err, int len) { return no_nccl(err, len); }
extern "C" void rl_nccl_free(void *, int) {}
extern "C" int rl_nccl_group_start(char *err, int len) { return no_nccl(err, len); }
extern "C" int rl_nccl_group_end(char *err, int len) { return no_nccl(err, len); }
extern "C" int rl_nccl_call(void *, void *, int, const void *, void *, int64_t, int64_t, int, int, int,
                            const int64_t *, int, int, char *err, int len)
{
    return no_nccl(err, len);
}
#endif
