/* err.h — error codes and per-rank error messages. No public function aborts on bad
 * input: it returns one of these codes (or NULL) and leaves a message saying what went
 * wrong and how to fix it, readable with rl_last_error(). */
#ifndef RL_ERR_H
#define RL_ERR_H

#include <stddef.h>
#include <stdio.h>

typedef struct rl_ctx rl_ctx;

typedef enum {
    RL_OK = 0,
    RL_ERR_ARG = -1,       /* bad argument (shape, count, dtype, option ...) */
    RL_ERR_MISMATCH = -2,  /* ranks called different collectives at the same seq */
    RL_ERR_HANG = -3,      /* the watchdog fired: a collective never completed */
    RL_ERR_ABORTED = -4,   /* the run was stopped because another rank failed */
    RL_ERR_NOMEM = -5,     /* allocation failed */
    RL_ERR_IO = -6,        /* file could not be read or written */
    RL_ERR_UNSUPPORTED = -7, /* not available in this build or on this backend */
    RL_ERR_NOT_IMPLEMENTED = -8 /* a lab TODO that is not done yet */
} rl_status;

/* Records a printf-style error message on ctx (may be NULL: then it goes to stderr). */
int rl_error(rl_ctx *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Host memory ran out in a rank: the message goes to ctx's error and, in a rank thread, stops the
 * world with "rank R: out of memory: ..." and ends the thread (the others would wait for it);
 * elsewhere it returns RL_ERR_NOMEM. The runtime's and the labs' given code use it; a lab
 * file reports a failed allocation with rl_error(ctx, RL_ERR_NOMEM, ...). */
int rl_rank_out_of_memory(rl_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The runtime's own bookkeeping (communicator tables, work items, split members): allocates
 * n × size zeroed bytes, or, when even that fails, prints "ringlab: out of memory: needed N
 * bytes for WHAT" and ends the process with status 1 — a run that cannot keep its own books
 * cannot go on, and must not crash or hang. Tensors and buffers use rl_rank_out_of_memory. */
void *rl_xcalloc(size_t n, size_t size, const char *what);
/* rl_xcalloc's realloc: the same message and exit when it fails. */
void *rl_xrealloc(void *p, size_t bytes, const char *what);
/* rl_xcalloc's failure: the message, then exit status 1. */
void rl_out_of_memory_exit(size_t bytes, const char *what) __attribute__((noreturn));
/* 0 when path can be written (a file made for the check is removed again), else the errno
 * that says why: for options checked before a run, not after it. */
int rl_file_writable(const char *path);
/* Opens a new temporary file beside path (its name in tmp) for rl_file_commit: a record
 * rewritten this way is either the old one or the new one, never a truncated one. NULL with
 * errno set when it cannot. */
FILE *rl_file_begin(const char *path, char *tmp, size_t tmplen);
/* Closes f and renames tmp over path: 0, or -1 (tmp removed, errno set) when a write failed. */
int rl_file_commit(FILE *f, const char *tmp, const char *path);
/* Opens path for reading when it is a regular file (never waiting on a FIFO, a terminal or a
 * device): NULL with errno set otherwise (EINVAL: not a regular file). */
FILE *rl_file_read_regular(const char *path);
/* The last error message recorded on this rank ("" if none). */
const char *rl_last_error(const rl_ctx *ctx);
/* Clears the last error message of this rank. */
void rl_clear_error(rl_ctx *ctx);
/* A short name for a status code ("bad argument", "hang" ...). */
const char *rl_status_name(int code);
/* What every program does first: raises a small stack limit (ulimit -s) to 8 MiB where the
 * hard limit allows, or says it is too small and exits 1; and makes the exit check that all it
 * wrote to stdout got out: when a write failed (a full disk, /dev/full) it prints "ringlab:
 * cannot write the output: REASON" and exits 1 instead of 0. (A closed pipe stops the program
 * by SIGPIPE first, as for any filter.) Call once, at the start of main. */
void rl_program_start(void);

#endif
