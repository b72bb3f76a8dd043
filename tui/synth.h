/* synth.h — synthetic traces for demos, the viewer's benchmark and tests: a DDP run with
 * bucketed all-reduces overlapping backward, a pipeline schedule (GPipe or 1F1B), and a
 * large trace of n events. */
#ifndef RL_TUI_SYNTH_H
#define RL_TUI_SYNTH_H
#include <stddef.h>
#include "trace.h"

/* DDP: ranks x steps of 4-layer forward/backward with one all-reduce bucket per layer
 * launched as each layer's gradients are ready; memory samples; mesh dp. */
rl_trace *rl_tui_synth_ddp(int ranks, int steps);
/* A pipeline of p stages and m micro-batches (backward = 2 x forward), GPipe (one_f_one_b
 * = 0) or 1F1B, with p2p sends on the comm stream; mesh pp. */
rl_trace *rl_tui_synth_pipeline(int p, int m, int one_f_one_b);
/* About n events on 8 ranks (compute back to back, comm overlapping) for benchmarks. */
rl_trace *rl_tui_synth_big(size_t n);

#endif
