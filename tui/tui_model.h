/* tui_model.h — what the views read: a trace plus an index of its events per lane (rank x
 * stream) sorted by start, with prefix sums of busy time per category, so a view finds
 * the events of a time window by binary search and sums sub-cell events in O(log n). */
#ifndef RL_TUI_TUI_MODEL_H
#define RL_TUI_TUI_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "trace.h"

/* The lane categories a timeline cell can show (RL_CAT_MEMORY events are not drawn). */
#define RL_TUI_NLANECATS ((int)RL_CAT_MEMORY)

#define RL_TUI_MAXROLES 8 /* roles named in the timeline's legend (more are drawn, not named) */

typedef struct rl_tui_span {
    double start, end;   /* virtual seconds */
    uint32_t ev;         /* index into trace->ev */
    uint8_t cat;         /* rl_cat */
} rl_tui_span;

typedef struct rl_tui_lane {
    int rank, stream;
    size_t n;
    rl_tui_span *spans;  /* sorted by start */
    double *maxend;      /* maxend[i] = max end of spans[0..i] */
    double *cum;         /* (n+1) x RL_TUI_NLANECATS prefix sums of span durations */
} rl_tui_lane;

typedef struct rl_tui_model {
    const rl_trace *trace;   /* not owned */
    int nlanes;              /* 2 per rank: lane 2r = compute, 2r+1 = comm */
    rl_tui_lane *lanes;
    double t_min, t_max;     /* extent of all events (0..1e-6 when there are none) */
    double *bounds;          /* every drawn event's start and end, sorted, each once (playback's [ ]) */
    size_t nbounds;
    double *ops;             /* starts of schedule ops (compute with phase F/B/W), sorted, each once ({ }) */
    size_t nops;
    int *stage_of;           /* per rank: the pipeline stage its ops are tagged with (-1: none) */
    int nstages;             /* highest stage tag + 1 (0: no pipeline) */
    int *stage_rank;         /* per stage: its lowest rank (-1: none) */
    int nchunks;             /* highest chunk tag + 1 of the schedule ops (interleaved: v) */
    int has_regions;         /* some compute event carries a region (forward, backward, optimizer) */
    char roles[RL_TUI_MAXROLES][8]; /* the communicator roles of drawn comm events, in order of first use */
    int nroles;
    int nbuckets;            /* highest bucket tag + 1 of drawn events (0: no buckets) */
} rl_tui_model;

/* Builds the index of a trace (which must outlive the model). NULL when out of memory. */
rl_tui_model *rl_tui_model_new(const rl_trace *t);
/* Frees the index (not the trace). */
void rl_tui_model_free(rl_tui_model *m);
/* First span index of a lane whose end is after t (n if none). */
size_t rl_tui_lane_first_after(const rl_tui_lane *l, double t);
/* First span index of a lane whose start is at or after t (n if none). */
size_t rl_tui_lane_first_start_at(const rl_tui_lane *l, double t);
/* Busy time per category of a lane inside [a, b) into cov[RL_TUI_NLANECATS] (exact when
 * the lane's events do not overlap each other, as on a stream). */
void rl_tui_lane_coverage(const rl_tui_lane *l, double a, double b, double *cov);
/* The innermost span covering time t, or NULL. */
const rl_tui_span *rl_tui_lane_at(const rl_tui_lane *l, double t);
/* The first of the n sorted times v strictly after t (dir > 0) or before it (dir < 0); t
 * itself when there is none. */
double rl_tui_time_step(const double *v, size_t n, double t, int dir);
/* Share of comm-stream busy time in [a, b) that overlaps compute-stream busy time of the
 * same rank, summed over ranks (0..1; -1 when there is no comm in the window). */
double rl_tui_comm_hidden(const rl_tui_model *m, double a, double b);

#endif
