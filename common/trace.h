/* trace.h — trace events (compute, comm, p2p, idle, memory) with virtual and wall times,
 * bytes, FLOPs, lab tags and op shapes; Chrome trace-event JSON export and import (the
 * file opens in Perfetto and in the TUI). */
#ifndef RL_TRACE_H
#define RL_TRACE_H
#include <stddef.h>
#include <stdint.h>
#include "mem.h"

typedef enum { RL_CAT_COMPUTE = 0, RL_CAT_COMM, RL_CAT_P2P, RL_CAT_IDLE, RL_CAT_MEMORY, RL_NCATS } rl_cat;

/* Lab tags carried by events (-1 = not set). */
typedef enum {
    RL_TAG_STEP = 0, RL_TAG_BUCKET, RL_TAG_MICROBATCH, RL_TAG_STAGE, RL_TAG_LAYER,
    RL_TAG_EXPERT, RL_TAG_CHUNK, RL_NTAGS
} rl_tag;

typedef struct rl_trace_event {
    int rank;
    int stream;             /* 0 compute, 1 comm */
    rl_cat cat;
    char name[48];
    double vstart, vend;    /* virtual (modelled) seconds */
    double wstart, wend;    /* wall seconds since the run started */
    double bytes;           /* bytes moved (ops: memory traffic; comm: bytes sent) */
    double flops;
    int tags[RL_NTAGS];
    char phase;             /* 'F', 'B', 'W' or 0 */
    char region;            /* compute: 'F' forward, 'B' backward, 'O' optimizer (the model's and the
                               optimizer's calls it ran inside), or 0 */
    int64_t seq;            /* collective sequence number, -1 if none */
    char comm[24];          /* communicator name for comm events ("world", "world/0.1") */
    char role[8];           /* what the communicator is for ("tp", "dp" ...: rl_comm_set_role), or "" */
    char *shapes;           /* "x[b=8,h=64] w[h=64,4h=256] -> y[b=8,4h=256]" or NULL (owned) */
    int peer;               /* send/recv: the peer's world rank; -1 otherwise */
    int npeers;             /* all_to_all(v): entries of peer_bytes (the communicator's size); else 0 */
    int64_t *peer_bytes;    /* all_to_all(v): bytes this rank sent to each member, in communicator
                               rank order, or NULL (owned, like shapes) */
} rl_trace_event;

/* A sample of one rank's memory account. */
typedef struct rl_mem_sample {
    int rank;
    double vtime;
    int64_t current[RL_MEM_NCAT];
} rl_mem_sample;

#define RL_MESH_MAX 6

typedef struct rl_trace {
    int nranks;
    char hw[32];
    rl_trace_event *ev;
    size_t n, cap;
    rl_mem_sample *mem;
    size_t nmem, capmem;
    int64_t (*peak)[RL_MEM_NCAT];   /* per rank, nranks rows */
    int mesh_ndims;                 /* 0: no mesh */
    char mesh_names[RL_MESH_MAX][8];
    int mesh_sizes[RL_MESH_MAX];
    char **meta_keys, **meta_vals;  /* headline figures for the status line */
    int nmeta;
    size_t skipped;                 /* read from a file: events of kinds not drawn, left out */
} rl_trace;

/* Category name ("compute", "comm", "p2p", "idle", "memory"); parse returns -1 if unknown. */
const char *rl_cat_name(rl_cat c);
int rl_cat_parse(const char *s);
/* Tag name ("step", "bucket", "mb", "stage", "layer", "expert", "chunk"). */
const char *rl_tag_name(rl_tag t);

/* An empty trace for nranks ranks. */
rl_trace *rl_trace_new(int nranks);
/* Frees a trace and everything it owns. */
void rl_trace_free(rl_trace *t);
/* Initialises an event: tags -1, seq -1, everything else zero. */
void rl_trace_event_init(rl_trace_event *e);
/* Appends an event (the shapes string is copied); returns 0 or RL_ERR_NOMEM. */
int rl_trace_add(rl_trace *t, const rl_trace_event *e);
/* Appends an event that hands over its shapes and peer_bytes (freed here on failure); 0 or
 * RL_ERR_NOMEM. */
int rl_trace_take(rl_trace *t, rl_trace_event *e);
/* Appends a memory sample. */
int rl_trace_add_mem(rl_trace *t, const rl_mem_sample *s);
/* Appends every event and sample of src (events of one rank) to dst. */
int rl_trace_merge(rl_trace *dst, const rl_trace *src);
/* Comm hidden behind compute for one rank and step (step -1: every event), from virtual
 * times (wall 0) or measured wall times (wall 1): *comm_s is the comm-stream busy time
 * (collectives), *hidden_s the part of it under some compute-stream op. Returns
 * hidden/comm, or -1 when the rank had no comm in that step. */
double rl_trace_comm_hidden(const rl_trace *t, int rank, int step, int wall, double *comm_s, double *hidden_s);
/* Sorts events by (rank, stream, vstart, vend, name) — a deterministic order. */
void rl_trace_sort(rl_trace *t);
/* Records the device mesh (e.g. names {"dp","tp"}, sizes {2,2}, outermost first). */
void rl_trace_set_mesh(rl_trace *t, int ndims, const char *const *names, const int *sizes);
/* Sets a headline figure shown in the TUI status line (key/value copied). */
void rl_trace_set_meta(rl_trace *t, const char *key, const char *value);
/* Looks a headline figure up; NULL if absent. */
const char *rl_trace_get_meta(const rl_trace *t, const char *key);

/* The whole trace as one block of bytes (malloc'd, *len its size), for another process of the
 * same build: the graders' records. NULL when out of memory. */
void *rl_trace_pack(const rl_trace *t, size_t *len);
/* A trace from rl_trace_pack's bytes, every length and count checked against len; NULL with
 * a message in err when the bytes are not such a block. */
rl_trace *rl_trace_unpack(const void *bytes, size_t len, char *err, int errlen);

/* Writes Chrome trace-event JSON; wall times are included only when with_wall is set
 * (without them the file is byte-identical from run to run). On --backend cuda the event
 * times (ts, dur) are the measured ones (CUDA events), not the cost model's. Returns 0 or
 * an error, with a message in err. */
int rl_trace_write_json(const rl_trace *t, const char *path, int with_wall, char *err, int errlen);
/* Reads a file written by rl_trace_write_json (or any Chrome trace with ph "X" events).
 * On error returns NULL with a message naming the problem and the line/column. */
rl_trace *rl_trace_read_json(const char *path, char *err, int errlen);

#endif
