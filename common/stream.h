/* stream.h — per-rank compute and comm streams with virtual clocks, events between them,
 * and how ops report their cost (the sim backend advances the stream's clock by the cost
 * model and records a trace event). */
#ifndef RL_STREAM_H
#define RL_STREAM_H
#include "dtype.h"
#include "trace.h"

typedef struct rl_ctx rl_ctx;

typedef enum { RL_STREAM_COMPUTE = 0, RL_STREAM_COMM = 1, RL_NSTREAMS } rl_stream;

/* A point on a stream's timeline (virtual seconds). */
typedef struct rl_event { rl_stream stream; double vtime; } rl_event;

/* The virtual clock of a stream, in seconds since the run started. */
double rl_stream_time(rl_ctx *ctx, rl_stream s);
/* Records an event at the stream's current time. */
rl_event rl_event_record(rl_ctx *ctx, rl_stream s);
/* Makes stream s wait for ev: its clock moves to max(clock, ev.vtime). */
void rl_stream_wait_event(rl_ctx *ctx, rl_stream s, rl_event ev);
/* The stream ops go to (compute by default). */
void rl_set_stream(rl_ctx *ctx, rl_stream s);
rl_stream rl_current_stream(rl_ctx *ctx);

/* Charges an op to the current stream: its clock advances by the roofline time of
 * (flops, bytes) on the modelled hardware; a trace event records it with its shapes
 * (may be NULL) and the wall time since wall_start (from rl_wall_now). Returns the
 * modelled duration in seconds. */
double rl_compute_record(rl_ctx *ctx, const char *name, rl_dtype dtype, double flops,
                         double bytes, const char *shapes, double wall_start);
/* Adds a fixed virtual delay on the current stream (e.g. a straggler's slow step). */
void rl_compute_delay(rl_ctx *ctx, const char *name, double seconds);
/* Wall-clock seconds since the run started. */
double rl_wall_now(rl_ctx *ctx);

/* Sets a lab tag on every event recorded from now on (value -1 clears it). */
void rl_set_tag(rl_ctx *ctx, rl_tag tag, int value);
/* Sets the pipeline phase ('F', 'B', 'W' or 0) on events recorded from now on. */
void rl_set_phase(rl_ctx *ctx, char phase);
/* Sets the region of the training step ('F' forward, 'B' backward, 'O' optimizer, or 0) recorded
 * on compute events from now on, for the timeline's phase band; returns the one it replaces.
 * rl_model_forward, rl_model_backward and the optimizer steps set it themselves. */
char rl_set_region(rl_ctx *ctx, char region);
/* Marks the start of training step `step` (tags events, applies straggler faults). */
void rl_step_begin(rl_ctx *ctx, int step);
/* Marks the end of a step; returns the step's virtual duration on the compute stream. */
double rl_step_end(rl_ctx *ctx);
/* Samples the memory account into the trace (the memory view's time series). */
void rl_mem_sample_now(rl_ctx *ctx);

#endif
