/* launch.h — the launcher: common options of every ringlab program, and rl_launch, which
 * runs a function on every rank and returns when all have returned (or one failed: then
 * all are stopped with a report). */
#ifndef RL_LAUNCH_H
#define RL_LAUNCH_H
#include <stdint.h>
#include <stdio.h>
#include "cost.h"
#include "fault.h"
#include "mem.h"
#include "optnum.h"
#include "trace.h"

typedef struct rl_ctx rl_ctx;

typedef enum { RL_BACKEND_SIM = 0, RL_BACKEND_CUDA, RL_BACKEND_AUTO } rl_backend;

/* Options every lab binary and tool accepts. */
typedef struct rl_opts {
    int ranks;               /* --ranks N (default 4) */
    int ranks_given;         /* 1 when --ranks was given (one process per rank then says it is replaced) */
    rl_backend backend;      /* --backend sim|cuda|auto (default sim) */
    const rl_hw *hw;         /* --hw PROFILE (default h100-nvlink) */
    const char *trace_path;  /* --trace FILE (NULL: no trace file) */
    int trace_wall;          /* --trace-wall: also write wall-clock times into the trace */
    int tui;                 /* --tui or --tui=VIEW */
    char tui_view[16];       /* the view the live TUI opens on ("" = timeline) */
    uint64_t seed;           /* --seed N (default 1) */
    double timeout_s;        /* --timeout S: watchdog limit for one collective (default 30) */
    int timeout_given;       /* 1 when --timeout was given (multi-process start-up waits 120 s otherwise) */
    int nfaults;
    rl_fault faults[RL_MAX_FAULTS]; /* --fault SPEC (repeatable) */
    int quiet;               /* --quiet: no launcher messages */
} rl_opts;

/* Exit statuses of ringlab programs. */
enum { RL_EXIT_OK = 0, RL_EXIT_FAIL = 1, RL_EXIT_USAGE = 2, RL_EXIT_HANG = 3, RL_EXIT_MISMATCH = 4 };

/* Default options. */
void rl_opts_init(rl_opts *o);
/* Consumes the common options from argv (argc updated, the rest kept in order for the
 * caller). Returns 0, or -1 with a one-line message in err for a bad option or value. */
int rl_opts_parse(rl_opts *o, int *argc, char **argv, char *err, int errlen);
/* The common options that take a number, with their ranges: --ranks, --seed, --timeout. */
#define RL_OPTS_NNUMBERS 3
extern const rl_optnum_decl rl_opts_numbers[RL_OPTS_NNUMBERS];
/* When arg is RL_OPTNUM_LIST_FLAG: prints the program's own numeric options (own[0..n)) and
 * the common ones, and returns 1 (the program then exits 0); else 0. */
int rl_opts_list_numbers(const char *arg, const rl_optnum_decl *own, int n);
/* Prints the common options' help with the program's defaults (NULL: rl_opts_init's). */
void rl_opts_usage(FILE *f, const rl_opts *defaults);

/* The function every rank runs. Its return value is the rank's status (0 = ok). */
typedef int (*rl_rank_fn)(rl_ctx *ctx, void *arg);

/* Runs fn on opts->ranks ranks. Returns 0 when every rank returned 0; otherwise the first
 * error (RL_ERR_HANG after the watchdog fired, RL_ERR_MISMATCH ...), with the report
 * already printed to stderr. If out_trace is not NULL it receives the merged trace
 * (caller frees it with rl_trace_free).
 * When a run fails, the ranks still inside a communicator call end their thread there: what
 * they allocated with rl_tensor_new is freed with the run, but memory from malloc is not —
 * hold per-rank buffers in tensors where a run may be stopped (fault-injection labs). */
int rl_launch(const rl_opts *opts, rl_rank_fn fn, void *arg, rl_trace **out_trace);
/* A launch in progress (for the live TUI): start it, take snapshots, finish it. */
typedef struct rl_run rl_run;
/* Starts fn on every rank and returns at once (NULL with a message printed on bad options). */
rl_run *rl_launch_async(const rl_opts *opts, rl_rank_fn fn, void *arg);
/* A merged, sorted copy of every rank's trace so far (caller frees it). */
rl_trace *rl_run_snapshot(rl_run *run);
/* 1 once every rank has returned (or the run failed). */
int rl_run_done(rl_run *run);
/* Pauses (on = 1) or resumes a run: each rank waits at its next communicator call, and the
 * run's clock — the watchdog's — stands still meanwhile, so a pause never counts as a hang. */
void rl_run_pause(rl_run *run, int on);
/* Waits for the run to end and frees it; returns as rl_launch does. */
int rl_run_finish(rl_run *run, rl_trace **out_trace);
/* The exit status a program should use for an rl_launch result. */
int rl_exit_status(int launch_result);
/* One process per rank (--backend cuda under torchrun/Slurm/mpirun variables, see
 * docs/launch.md): the global rank this process will run, with *world_size set; -1 (and
 * *world_size = opts->ranks) when one process runs every rank, or when rl_launch will refuse
 * the options. Decides as rl_launch does, printing nothing. */
int rl_launch_process_rank(const rl_opts *opts, int *world_size);
/* The fault kinds that act on any run whose ranks communicate (a mask for rl_opts_check_faults). */
#define RL_FAULTS_COMM ((1u << RL_FAULT_HANG) | (1u << RL_FAULT_STRAGGLER) | (1u << RL_FAULT_MISMATCH))
/* 0 when every --fault in opts is of a kind in `allowed` (bits 1 << rl_fault_kind); else prints
 * "PROGRAM: --fault KIND has no effect here: ..." (where that kind does act) and returns RL_ERR_ARG. */
int rl_opts_check_faults(const rl_opts *opts, unsigned allowed, const char *program);
/* For programs that need every rank's results in one process (labs 29-31): 0 when this
 * process runs every rank; under a multi-process launcher with --backend cuda, prints one
 * line saying so (and what to run instead) and returns RL_ERR_ARG. */
int rl_require_one_process(const rl_opts *opts, const char *program);
/* The trace file of rank `rank` in a multi-process run: rank 0 writes path itself, rank R > 0
 * path with ".rankR" before a final ".json" (else at the end). Returns out. */
char *rl_trace_rank_path(const char *path, int rank, char *out, size_t size);

/* Rank context accessors. */
int rl_rank(const rl_ctx *ctx);
int rl_world_size(const rl_ctx *ctx);
const rl_opts *rl_ctx_opts(const rl_ctx *ctx);
const rl_hw *rl_ctx_hw(const rl_ctx *ctx);
uint64_t rl_ctx_seed(const rl_ctx *ctx);
rl_mem_account *rl_ctx_mem(rl_ctx *ctx);
/* This rank's trace so far (events are appended by the runtime). */
rl_trace *rl_ctx_trace(rl_ctx *ctx);
/* A per-rank slot for lab code (e.g. the lab's model state); NULL until set. */
void *rl_ctx_user(rl_ctx *ctx);
void rl_ctx_set_user(rl_ctx *ctx, void *p);
/* Rank 0 only: sets a headline figure written into the trace's metadata. */
void rl_ctx_set_meta(rl_ctx *ctx, const char *key, const char *value);
/* Rank 0 only: records the device mesh in the trace (mesh view). */
void rl_ctx_set_mesh(rl_ctx *ctx, int ndims, const char *const *names, const int *sizes);
/* A standalone one-rank context (no threads, world of 1) for tools and tests; free it
 * with rl_ctx_free_standalone. hw may be NULL for the default profile. */
rl_ctx *rl_ctx_new_standalone(const rl_hw *hw, uint64_t seed);
void rl_ctx_free_standalone(rl_ctx *ctx);

#endif
