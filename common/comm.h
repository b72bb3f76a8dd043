/* comm.h — communicators, modelled on NCCL and c10d. Every call takes tensors, an op where
 * it applies and flags; with RL_ASYNC it returns at once with a work handle to rl_wait on,
 * without it it returns when the collective is complete. Calls go to the rank's comm
 * stream and run in the order they were issued. Every communicator counts calls and bytes
 * sent/received per rank. */
#ifndef RL_COMM_H
#define RL_COMM_H
#include <stdint.h>
#include "cost.h"
#include "tensor.h"

typedef struct rl_comm rl_comm;
typedef struct rl_work rl_work;

typedef enum { RL_SUM = 0, RL_AVG, RL_MAX, RL_MIN } rl_redop;

enum { RL_ASYNC = 1 };          /* flag: return at once with a work handle */
#define RL_COLOR_NONE (-1)      /* rl_comm_split color for "not in any new communicator" */

/* Per-rank counters of one communicator. */
typedef struct rl_comm_counters {
    int64_t issued[RL_COLL_NKINDS]; /* calls made by this rank (counted when called, even RL_ASYNC) */
    int64_t calls[RL_COLL_NKINDS];  /* calls completed on the comm stream */
    int64_t bytes_sent;
    int64_t bytes_recv;
} rl_comm_counters;

/* The communicator of all ranks. */
rl_comm *rl_comm_world(rl_ctx *ctx);
/* This rank's index in comm, and comm's number of ranks. */
int rl_comm_rank(const rl_comm *comm);
int rl_comm_size(const rl_comm *comm);
/* The global (world) rank of comm's rank r. */
int rl_comm_global_rank(const rl_comm *comm, int r);
/* The communicator's name in traces and reports ("world", "world/c1.s0" ...). */
const char *rl_comm_name(const rl_comm *comm);
/* Names what this rank's handle of comm is for ("tp", "pp", "dp", "cp", "ep", "shard" ...: 1 to 7
 * lower-case letters, digits or '-'; else ignored): traces carry it and the TUI names and colours
 * the traffic by it. The role of a communicator without one is "". */
void rl_comm_set_role(rl_comm *comm, const char *role);
const char *rl_comm_role(const rl_comm *comm);
/* The rank context a communicator belongs to. */
rl_ctx *rl_comm_ctx(const rl_comm *comm);
/* Collective over parent: ranks with the same color form a new communicator, ordered by
 * (key, parent rank). Returns NULL for color RL_COLOR_NONE (and on error). */
rl_comm *rl_comm_split(rl_comm *parent, int color, int key);
/* Releases a communicator made by rl_comm_split (optional: every handle is released when the run ends). */
void rl_comm_free(rl_comm *comm);
/* A copy of this rank's counters on comm (all zero for NULL): the runtime's own stay its own. */
rl_comm_counters rl_comm_get_counters(const rl_comm *comm);
/* Zeroes this rank's counters on comm. */
void rl_comm_reset_counters(rl_comm *comm);

/* Collectives. send == recv means in place. Counts come from the tensors:
 * all_reduce: send and recv have the same numel.
 * reduce_scatter: send has n × recv.numel elements; rank r gets the reduced chunk r.
 * all_gather: recv has n × send.numel elements; chunk r comes from rank r. send may be this
 *   rank's own chunk of recv (in place, as NCCL's), never another part of it.
 * broadcast: root's send is copied into every rank's recv.
 * reduce: the reduction lands in root's recv (recv may be NULL elsewhere).
 * all_to_all: send and recv have n equal chunks; chunk q of send goes to rank q, chunk q
 * of recv comes from rank q.
 * Each returns a work handle (or NULL on error: see rl_last_error). */
rl_work *rl_all_reduce(rl_comm *comm, const rl_tensor *send, rl_tensor *recv, rl_redop op, int flags);
rl_work *rl_reduce_scatter(rl_comm *comm, const rl_tensor *send, rl_tensor *recv, rl_redop op, int flags);
rl_work *rl_all_gather(rl_comm *comm, const rl_tensor *send, rl_tensor *recv, int flags);
rl_work *rl_broadcast(rl_comm *comm, const rl_tensor *send, rl_tensor *recv, int root, int flags);
rl_work *rl_reduce(rl_comm *comm, const rl_tensor *send, rl_tensor *recv, rl_redop op, int root, int flags);
rl_work *rl_all_to_all(rl_comm *comm, const rl_tensor *send, rl_tensor *recv, int flags);
/* all_to_allv: element counts and offsets per peer (arrays of comm size), as MPI_Alltoallv. */
rl_work *rl_all_to_allv(rl_comm *comm, const rl_tensor *send, const int64_t *send_counts,
                        const int64_t *send_displs, rl_tensor *recv, const int64_t *recv_counts,
                        const int64_t *recv_displs, int flags);
/* Blocks until every rank of comm has called it. */
rl_work *rl_barrier(rl_comm *comm, int flags);

/* Point to point: a send completes when the matching recv (same peers, in order) has the
 * data. Ring exchanges must be grouped (rl_group_start/end) or they deadlock, as in NCCL. */
rl_work *rl_send(rl_comm *comm, const rl_tensor *t, int peer, int flags);
rl_work *rl_recv(rl_comm *comm, rl_tensor *t, int peer, int flags);
/* Calls between group_start and group_end are issued together as one operation (sends and
 * receives of a ring step cannot deadlock). group_end blocks until they complete unless
 * every call in the group had RL_ASYNC. Returns 0 or an error. Inside a group a call without
 * RL_ASYNC returns a handle that is already complete (rl_wait on it returns 0 at once; it
 * needs no wait) and makes group_end block; a call with RL_ASYNC returns a handle that
 * completes with the whole group — wait on each such handle once. */
int rl_group_start(rl_ctx *ctx);
int rl_group_end(rl_ctx *ctx);

/* Waits for a work handle to complete and releases it; the current stream's virtual
 * clock moves to the work's end. Returns 0 or the error of the operation. */
int rl_wait(rl_work *work);
/* 1 if the work has completed (the handle stays valid until rl_wait), 0 if not. */
int rl_test(rl_work *work);
/* Virtual time (s) the work ended, or -1 while in flight. */
double rl_work_end_time(const rl_work *work);
/* Waits, at most timeout_s seconds of wall time, until every call this rank issued has
 * completed (handles lost or not), so that cleanup after an error never frees a buffer a
 * collective still reads or writes. The clocks do not move. 0 when drained, RL_ERR_HANG when
 * calls are still in flight at the timeout, RL_ERR_ABORTED when the run is being stopped. */
int rl_comm_drain(rl_ctx *ctx, double timeout_s);

#endif
