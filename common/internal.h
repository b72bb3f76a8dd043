/* internal.h — runtime internals shared by the runtime's own modules (never included by
 * labs): the rank context, the world, communicator groups, work items, flight records. */
#ifndef RL_INTERNAL_H
#define RL_INTERNAL_H
#include <pthread.h>
#include <stdint.h>
#include "ringlab.h"
#include "backend.h"

#define RL_FLIGHT_N 64   /* flight records kept per rank */
#define RL_NSLOTS 4      /* collectives of one communicator in flight at once */

struct rl_storage {
    void *data;
    int64_t bytes;
    int refs;
    rl_device device;
    rl_mem_cat cat;
    rl_ctx *ctx;
    int charged;            /* counted in ctx's memory account (not a GPU run's host staging) */
};

/* Flight record states. */
enum { RL_FR_ENQUEUED = 0, RL_FR_STARTED, RL_FR_COMPLETED, RL_FR_FAILED };

typedef struct rl_flight_rec {
    int64_t id;           /* running number on this rank */
    int64_t seq;          /* collective seq on its communicator; p2p: -1 */
    int64_t p2p_seq;      /* p2p: running number on (comm, peer); else -1 */
    rl_coll_kind kind;
    int64_t count;        /* elements */
    rl_dtype dtype;
    int peer;             /* root for rooted collectives, peer for send/recv, -1 otherwise */
    int peer_world;       /* that rank's world rank, -1 when peer is */
    int grouped;          /* issued between rl_group_start and rl_group_end */
    char comm[24];
    int comm_size;
    int state;
    double t_enq, t_start, t_end; /* wall seconds */
} rl_flight_rec;

typedef struct rl_commgroup rl_commgroup;
typedef struct rl_world rl_world;

/* A point-to-point message waiting in a channel. */
typedef struct rl_msg {
    const void *data;
    int64_t count;
    rl_dtype dtype;
    int src, dst;
    int64_t p2p_seq;
    double ready_v, end_v;
    int consumed;
    int error;
    struct rl_msg *next;
} rl_msg;

/* One communicator operation as issued by a rank. */
typedef struct rl_op_desc {
    rl_coll_kind kind;
    rl_comm *comm;
    int64_t seq;            /* collectives: seq on comm; p2p: -1 */
    int64_t p2p_seq;
    const void *send;
    void *recv;
    int64_t send_numel, recv_numel;
    rl_dtype dtype;
    rl_redop op;
    int root;               /* root or peer */
    int64_t *counts;        /* all_to_allv: 4 arrays of n (scounts, sdispls, rcounts, rdispls) */
    int color, key;         /* comm_split */
    int sig_delta;          /* mismatch fault: the count this rank claims is off by this */
    int meet_only;          /* GPU backend: the host rendezvous moves no data (NCCL does) */
    rl_comm *split_out;     /* comm_split result on this rank */
    rl_msg msg;             /* send: the posted message */
    int64_t flight;         /* id of the rank's flight record */
    double end_v;
} rl_op_desc;

/* A unit of work on a rank's comm stream: one call, or a group of calls. */
struct rl_work {
    rl_ctx *ctx;
    rl_op_desc *ops;
    int nops, capops;
    int refs;               /* handles given out (RL_ASYNC calls) + the queue's own */
    int done;
    int status;
    double enq_v;           /* virtual time the data was ready on the issuing stream */
    double vstart, vend;
    double t_enq;           /* wall */
    int tags[RL_NTAGS];
    char phase;
    int sentinel;           /* the ctx's static "done" handle */
    struct rl_work *next;
    struct rl_work *live_prev, *live_next; /* the rank's list of live work items */
};

typedef struct rl_slot {
    int64_t seq;
    int in_use;
    int arrived, mid, left, exited;
    int present;            /* ranks that posted at this seq (a mismatch waits for them all) */
    int mismatch;           /* some rank's call differs from another's */
    char mismatch_msg[512]; /* the report, written once by the first rank to make it ("" before) */
    rl_op_desc **posted;    /* n */
    double *ready;          /* n */
    int first;              /* comm rank that posted first */
    double vstart, vend;
    void *scratch;
    int64_t scratch_bytes;
    int error;
    rl_commgroup **split_group; /* n */
    int *split_rank;            /* n */
} rl_slot;

struct rl_commgroup {
    char name[24];
    int n;
    int *granks;
    const rl_link *link;
    rl_algo algo;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rl_slot slots[RL_NSLOTS];
    rl_msg **chan_head, **chan_tail; /* n*n channels, index src*n+dst */
    int64_t *chan_seq;               /* next p2p seq per channel (sender side) */
    rl_world *world;
    rl_commgroup *next_in_world;
};

struct rl_comm {
    rl_ctx *ctx;
    rl_commgroup *g;
    int rank;
    int64_t next_seq;
    int64_t *p2p_send_seq, *p2p_recv_seq; /* per peer */
    rl_comm_counters counters;
    rl_comm *next_in_ctx;
    void *nccl;                 /* GPU backend (issue 6): this rank's ncclComm_t, or NULL */
    char role[8];               /* rl_comm_set_role's, or "" */
};

struct rl_world {
    int n;
    rl_opts opts;
    int fault_fired[RL_MAX_FAULTS]; /* opts.faults[i] took effect (atomic stores by rank threads) */
    int64_t hang_since_ns[RL_MAX_FAULTS]; /* a hang fault's rank stopped at this world clock, in ns
                                             plus 1 (0: not yet): the watchdog counts it as a wait */
    const rl_hw *hw;
    rl_ctx **ctxs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    volatile int aborted;
    int abort_code;
    char abort_msg[2048];
    double t0;                  /* wall start (CLOCK_MONOTONIC seconds) */
    rl_commgroup *groups;       /* every group, for teardown */
    int ranks_done;
    rl_rank_fn fn;
    void *fn_arg;
    int gpu_mode;               /* GPU backend (issue 6): rl_gpu_mode of backend.h, 0 = sim */
    int ngpus;                  /* GPU backend: GPUs this world uses */
    int dist;                   /* 1: one process per rank; only ctxs[dist_rank] exists here */
    int dist_rank;              /* dist: the global rank this process runs */
    int nccl_aborted;           /* dist: the watchdog aborted the NCCL communicators */
    int paused;                 /* rl_run_pause: ranks wait at their next communicator call (mu, cv) */
    int64_t pause_start_ns;     /* monotonic ns when the current pause began, 0 when running */
    int64_t paused_ns;          /* ns spent paused before it: the run's clock (rl_wall_now) skips them */
};

struct rl_ctx {
    int rank;
    rl_world *world;
    rl_comm *world_comm;
    rl_comm *comms;             /* every handle of this rank, for teardown */
    double clock[RL_NSTREAMS];
    rl_stream cur;
    rl_mem_account mem;
    int64_t mem_sampled[RL_MEM_NCAT]; /* the account at its last sample in the trace */
    rl_trace *trace;
    pthread_mutex_t trace_mu;
    int tags[RL_NTAGS];
    char phase;
    char region;            /* 'F' inside rl_model_forward, 'B' inside rl_model_backward, 'O' in an
                               optimizer step, else 0: recorded on compute events */
    int step;
    double step_vstart;
    char err[1024];
    /* comm stream */
    pthread_t worker;
    int worker_started;
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    rl_work *qhead, *qtail;
    int worker_stop;
    /* group calls */
    int group_depth;
    rl_work *group_work;
    int group_sync;
    /* flight recorder */
    rl_flight_rec flight[RL_FLIGHT_N];
    int64_t nflight;
    rl_work done_work;
    rl_work *works;             /* live work items (under qmu), freed at teardown */
    struct rl_tensor_node *tensors; /* live tensors, freed at teardown */
    void *user;
    int thread_done;
    int is_rank_thread;
    int status;                 /* the rank function's result */
    struct rl_cuda_rank *gpu;   /* GPU backend (issue 6): device, streams, cuBLAS; NULL on sim */
    void *dist_buf;             /* dist: small device buffer for barrier and comm_split (comm worker) */
    int64_t dist_buf_bytes;
};

/* Wall seconds since the epoch of CLOCK_MONOTONIC. */
double rl_mono_now(void);
/* The run's clock in seconds since it started, standing still while it is paused (rl_run_pause). */
double rl_world_clock(const rl_world *w);
/* The world's abort: records the first reason and wakes everyone. */
void rl_world_abort(rl_world *w, int code, const char *msg);
/* Called by a rank thread on a fatal runtime error: ends the thread cleanly. */
void rl_rank_exit_aborted(rl_ctx *ctx) __attribute__((noreturn));
/* Creates the world and its rank contexts (with comm-stream workers). */
rl_world *rl_world_create(const rl_opts *opts);
/* Stops the workers and frees the world, its contexts, groups and leftover tensors. */
void rl_world_destroy(rl_world *w);
/* Makes a communicator group over the given global ranks. */
rl_commgroup *rl_commgroup_new(rl_world *w, const char *name, const int *granks, int n);
/* A rank's handle of a group. */
rl_comm *rl_comm_attach(rl_ctx *ctx, rl_commgroup *g, int rank);
/* The members of the new communicator of parent rank me in a comm_split, from every parent
 * rank's colors[] and keys[] (n each): their parent ranks, ordered by key then parent rank,
 * into members; returns how many (0 for RL_COLOR_NONE) and me's new rank in *new_rank. */
int rl_split_members(int n, const int *colors, const int *keys, int me, int *members, int *new_rank);
/* dst[lo..hi) = the reduction (op) over srcs[0..n) of elements lo..hi, in rank order, with an
 * f32 accumulator: the sim backend's reduction, which the GPU's must equal bit for bit. */
void rl_host_reduce(rl_dtype dt, rl_redop op, int n, const void *const *srcs, void *dst, int64_t lo, int64_t hi);
/* Comm-stream worker thread body. */
void *rl_comm_worker(void *arg);
/* Adds a flight record on ctx (ctx->qmu held); returns its id. */
int64_t rl_flight_add(rl_ctx *ctx, const rl_op_desc *d);
/* Updates a flight record's state (if it is still kept). */
void rl_flight_set(rl_ctx *ctx, int64_t id, int state);
/* Prints every rank's flight records and the verdict; writes JSON when path is set. The
 * verdict is computed from the records unless vbuf already holds one (e.g. a mismatch). */
void rl_flight_report(rl_world *w, FILE *f, const char *json_path, char *verdict, int vlen);
/* Appends an event to the rank's trace (thread-safe; fills rank, tags and phase). */
void rl_ctx_trace_event(rl_ctx *ctx, rl_trace_event *e, const int *tags, char phase);
/* Frees every work item still alive on ctx (after its worker stopped). */
void rl_works_free_all(rl_ctx *ctx);
/* Frees every tensor still alive on ctx. */
void rl_tensors_free_all(rl_ctx *ctx);
/* GPU backend (issue 6), one process with NCCL: before the NCCL calls of work item w the
 * ranks meet on the host as the sim transport's calls do, moving no data: the calls are
 * matched and checked (a mismatch stops the run with the same message), counted, and given
 * the same virtual spans as on sim (vs[i], ve[i] per op). 0, RL_ERR_MISMATCH or RL_ERR_ABORTED. */
int rl_comm_meet(rl_ctx *ctx, rl_work *w, double ready, double *vs, double *ve);
/* GPU backend (issue 6): NCCL does not compare the ranks' calls, so the NCCL path can check
 * them itself (as TORCH_DISTRIBUTED_DEBUG=DETAIL does): a collective's fingerprint (kind,
 * count as the mismatch check counts it, dtype, op, root) is all-gathered and compared. */
#define RL_FINGERPRINT_LEN 5
void rl_comm_fingerprint(const rl_op_desc *d, int64_t fp[RL_FINGERPRINT_LEN]);
/* 0 if the n fingerprints of d's communicator (rank order) agree, else -1 and the mismatch
 * message, worded as the sim transport's, naming the rank that differs from the others. */
int rl_comm_check_fingerprints(const rl_op_desc *d, const int64_t *all, char *msg, size_t size);
/* GPU backend (issue 6): counts / traces a call done outside the sim rendezvous (comm.c). */
void rl_comm_count_op(rl_comm *comm, const rl_op_desc *d);
/* timer: a CUDA-event timer whose measured span replaces vs/ve (backend.h), or -1. */
void rl_comm_trace_op(rl_ctx *ctx, const rl_work *w, const rl_op_desc *d, double vs, double ve, double ws,
                      int timer);

/* After a run that was not aborted: one warning line per --fault that never took effect
 * (a hang's seq the run never reached, a rank outside --ranks ...). */
void rl_fault_report_unfired(const rl_world *w, FILE *out);

#endif
