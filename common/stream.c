/* stream.c — virtual clocks of the compute and comm streams, op accounting, tags, steps. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "apiwatch.h"
#include "internal.h"

double rl_mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double rl_wall_now(rl_ctx *ctx)
{
    return rl_world_clock(ctx->world);
}

double rl_world_clock(const rl_world *w)
{
    double paused = 1e-9 * (double)__atomic_load_n(&w->paused_ns, __ATOMIC_ACQUIRE);
    int64_t since = __atomic_load_n(&w->pause_start_ns, __ATOMIC_ACQUIRE);
    double now = rl_mono_now();
    if (since) /* paused now: the clock stands still */
        now = 1e-9 * (double)since;
    return now - w->t0 - paused;
}

/* The virtual clock of stream s. */
static double vclock(rl_ctx *ctx, rl_stream s)
{
    if (s == RL_STREAM_COMM) {
        pthread_mutex_lock(&ctx->qmu);
        double t = ctx->clock[s];
        pthread_mutex_unlock(&ctx->qmu);
        return t;
    }
    return ctx->clock[RL_STREAM_COMPUTE];
}

double rl_stream_time(rl_ctx *ctx, rl_stream s)
{
    if (ctx->gpu) { /* GPU backend (issue 6): the measured time, on the trace's clock */
        double t = rl_backend_stream_now(ctx, s);
        if (t >= 0)
            return t;
    }
    return vclock(ctx, s);
}

rl_event rl_event_record(rl_ctx *ctx, rl_stream s)
{
    rl_event ev = { s, vclock(ctx, s) };
    return ev;
}

void rl_stream_wait_event(rl_ctx *ctx, rl_stream s, rl_event ev)
{
    if (s == RL_STREAM_COMM) {
        pthread_mutex_lock(&ctx->qmu);
        if (ev.vtime > ctx->clock[s])
            ctx->clock[s] = ev.vtime;
        pthread_mutex_unlock(&ctx->qmu);
    } else if (ev.vtime > ctx->clock[s]) {
        ctx->clock[s] = ev.vtime;
    }
}

void rl_set_stream(rl_ctx *ctx, rl_stream s) { ctx->cur = s; }
rl_stream rl_current_stream(rl_ctx *ctx) { return ctx->cur; }

RL_API_WATCHED
void rl_ctx_trace_event(rl_ctx *ctx, rl_trace_event *e, const int *tags, char phase)
{
    RL_API_ENTRY();
    if (!ctx)
        return;
    e->rank = ctx->rank;
    memcpy(e->tags, tags, sizeof e->tags);
    if (e->stream == RL_STREAM_COMPUTE)
        e->region = ctx->region;
    e->phase = phase;
    pthread_mutex_lock(&ctx->trace_mu);
    rl_trace_add(ctx->trace, e);
    pthread_mutex_unlock(&ctx->trace_mu);
}

/* Advances the current stream by dur and records an event for it. */
static void advance(rl_ctx *ctx, const char *name, rl_cat cat, double dur, double flops,
                    double bytes, const char *shapes, double wall_start, int timer)
{
    rl_stream s = ctx->cur;
    rl_trace_event e;
    rl_trace_event_init(&e);
    snprintf(e.name, sizeof e.name, "%s", name);
    e.stream = s;
    e.cat = cat;
    if (s == RL_STREAM_COMM)
        pthread_mutex_lock(&ctx->qmu);
    e.vstart = ctx->clock[s];
    ctx->clock[s] += dur;
    e.vend = ctx->clock[s];
    if (s == RL_STREAM_COMM)
        pthread_mutex_unlock(&ctx->qmu);
    e.wstart = wall_start;
    e.wend = rl_wall_now(ctx);
    e.flops = flops;
    e.bytes = bytes;
    e.shapes = (char *)shapes;
    if (ctx->gpu) /* GPU backend (issue 6): the op's CUDA events give its measured span */
        rl_backend_trace_timed(ctx, &e, ctx->tags, ctx->phase, timer);
    else
        rl_ctx_trace_event(ctx, &e, ctx->tags, ctx->phase);
    if (s == RL_STREAM_COMPUTE && memcmp(ctx->mem.current, ctx->mem_sampled, sizeof ctx->mem_sampled))
        rl_mem_sample_now(ctx); /* memory over time: a sample after each op that changed the account */
}

RL_API_WATCHED
double rl_compute_record(rl_ctx *ctx, const char *name, rl_dtype dtype, double flops,
                         double bytes, const char *shapes, double wall_start)
{
    RL_API_ENTRY();
    if (!ctx)
        return 0.0;
    double dur = rl_op_time(ctx->world->hw, dtype, flops, bytes);
    int timer = ctx->gpu ? rl_backend_op_end(ctx) : -1; /* GPU backend (issue 6): closes the op's range */
    if (ctx->gpu && timer < 0) { /* a cost recorded without a device op: a point on the measured timeline */
        timer = rl_backend_timer_start(ctx, RL_STREAM_COMPUTE);
        rl_backend_timer_stop(ctx, RL_STREAM_COMPUTE, timer);
    }
    advance(ctx, name, RL_CAT_COMPUTE, dur, flops, bytes, shapes, wall_start, timer);
    return dur;
}

void rl_compute_delay(rl_ctx *ctx, const char *name, double seconds)
{
    if (seconds <= 0)
        return;
    double w0 = rl_wall_now(ctx);
    /* GPU backend (issue 6): the delay is real there (the host sleeps, the stream idles) */
    int timer = ctx->gpu ? rl_backend_delay(ctx, name, seconds) : -1;
    advance(ctx, name, RL_CAT_COMPUTE, seconds, 0, 0, NULL, w0, timer);
}

void rl_set_tag(rl_ctx *ctx, rl_tag tag, int value)
{
    if (tag >= 0 && tag < RL_NTAGS)
        ctx->tags[tag] = value;
}

void rl_set_phase(rl_ctx *ctx, char phase) { ctx->phase = phase; }

char rl_set_region(rl_ctx *ctx, char region)
{
    if (!ctx)
        return 0;
    char old = ctx->region;
    ctx->region = region == 'F' || region == 'B' || region == 'O' ? region : 0;
    return old;
}

RL_API_WATCHED
void rl_step_begin(rl_ctx *ctx, int step)
{
    RL_API_ENTRY();
    ctx->step = step;
    ctx->tags[RL_TAG_STEP] = step;
    ctx->step_vstart = ctx->gpu ? rl_stream_time(ctx, RL_STREAM_COMPUTE) /* GPU (issue 6): measured */
                                : ctx->clock[RL_STREAM_COMPUTE];
    const rl_opts *o = &ctx->world->opts;
    for (int i = 0; i < o->nfaults; i++)
        if (o->faults[i].kind == RL_FAULT_STRAGGLER && o->faults[i].rank == ctx->rank) {
            __atomic_store_n(&ctx->world->fault_fired[i], 1, __ATOMIC_RELAXED);
            rl_stream keep = ctx->cur;
            ctx->cur = RL_STREAM_COMPUTE;
            rl_compute_delay(ctx, "straggler (injected)", o->faults[i].ms * 1e-3);
            ctx->cur = keep;
        }
}

RL_API_WATCHED
double rl_step_end(rl_ctx *ctx)
{
    RL_API_ENTRY();
    if (ctx->gpu) /* GPU backend (issue 6): the step's CUDA events into its trace events */
        rl_backend_timeline_resolve(ctx);
    double d = rl_stream_time(ctx, RL_STREAM_COMPUTE) - ctx->step_vstart;
    rl_mem_sample_now(ctx);
    return d;
}

RL_API_WATCHED
void rl_mem_sample_now(rl_ctx *ctx)
{
    RL_API_ENTRY();
    rl_mem_sample m = { .rank = ctx->rank, .vtime = rl_stream_time(ctx, RL_STREAM_COMPUTE) };
    memcpy(m.current, ctx->mem.current, sizeof m.current);
    memcpy(ctx->mem_sampled, m.current, sizeof m.current);
    pthread_mutex_lock(&ctx->trace_mu);
    rl_trace_add_mem(ctx->trace, &m);
    pthread_mutex_unlock(&ctx->trace_mu);
}
