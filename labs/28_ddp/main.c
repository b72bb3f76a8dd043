/* main.c — Lab 28 driver (not edited by learners): trains the MLP block stack with your DDP
 * (ddp.c) on --ranks N simulated GPUs, prints the loss, and ends with a summary answering
 * the three questions for the run — Shape (buckets), Cost (bytes on the wire), Machine
 * (step time, exposed vs hidden comm, scaling). --sweep runs the 28.5 sweep instead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ddp.h"
#include "optnum.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: make run LAB=28 [RANKS=4] [ARGS=\"...\"]   (or build/labs/28_ddp/run [options])\n"
               "Trains an MLP block stack with your DDP (labs/28_ddp/ddp.c) and prints a summary.\n"
               "Lab options:\n"
               "  --bucket-cap-mb X    bucket cap in MiB (default %g; PyTorch's default is %g)\n"
               "  --first-bucket-mb X  cap of the first bucket in MiB (default %g)\n"
               "  --steps N            training steps (default %d)\n"
               "  --batch B            samples per rank per micro-step (default %lld)\n"
               "  --accum K            micro-steps per step, no_sync on all but the last (default 1)\n"
               "  --hidden H --layers L  model width and depth (default %d, %d)\n"
               "  --sweep              run the 28.5 sweep (bucket caps 1..100 MiB, world sizes 1..8, a straggler)\n",
            ddp_run_config_default().bucket_cap_mb, DDP_DEFAULT_BUCKET_CAP_MB, DDP_DEFAULT_FIRST_BUCKET_MB,
            ddp_run_config_default().steps,
            (long long)ddp_run_config_default().micro_batch, ddp_run_config_default().model.hidden,
            ddp_run_config_default().model.layers);
    ddp_run_config d = ddp_run_config_default();
    rl_opts_usage(f, &d.opts);
}

/* The driver's numeric options and the range each accepts. */
static const rl_optnum_decl nums[] = {
    { "--bucket-cap-mb", 0.001, 4096, 0 }, { "--first-bucket-mb", 0.001, 4096, 0 }, { "--steps", 1, 10000, 1 },
    { "--batch", 1, 65536, 1 }, { "--accum", 1, 1024, 1 }, { "--hidden", 1, 16384, 1 }, { "--layers", 1, 1024, 1 },
};
#define NNUMS ((int)(sizeof nums / sizeof nums[0]))

/* Prints the bucket table of the run's model (Shape); when the buckets are assigned, the cost
 * model's time of all their ring all-reduces on n ranks of link (*ideal) and of the last one's
 * (*last, the bucket that is ready only when backward ends); both -1 otherwise. */
static void print_buckets(const ddp_run_config *cfg, int n, const rl_link *link, double *ideal, double *last)
{
    *ideal = *last = -1;
    rl_ctx *ctx = rl_ctx_new_standalone(cfg->opts.hw, cfg->opts.seed);
    rl_model *m = rl_model_new(ctx, &cfg->model);
    if (!m) {
        rl_ctx_free_standalone(ctx);
        return;
    }
    ddp_param_desc *d = calloc((size_t)m->nparams + 1, sizeof *d);
    for (int i = 0; i < m->nparams; i++)
        d[i] = (ddp_param_desc){ m->params[i].name, m->params[i].numel, RL_F32, -1 };
    ddp_bucket_plan plan;
    if (!ddp_plan_alloc(&plan, m->nparams) &&
        !ddp_assign_buckets(ctx, d, m->nparams, (int64_t)llround(cfg->first_bucket_mb * DDP_MIB),
                            (int64_t)llround(cfg->bucket_cap_mb * DDP_MIB), &plan)) {
        printf("  bucket  params        bytes  gradients (reverse registration order)\n");
        for (int b = 0; b < plan.nbuckets; b++) {
            const ddp_bucket *bk = &plan.buckets[b];
            char by[32];
            printf("  %6d  %6d  %11s  %s", b, bk->nparams, rl_fmt_bytes((double)bk->bytes, by, sizeof by),
                   d[plan.order[bk->first]].name);
            if (bk->nparams > 1)
                printf(" .. %s", d[plan.order[bk->first + bk->nparams - 1]].name);
            printf("\n");
            *last = rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, n, (double)bk->bytes, link);
            *ideal = (b ? *ideal : 0) + *last;
        }
    } else {
        printf("  (no bucket plan: %s)\n", rl_last_error(ctx));
    }
    ddp_plan_free(&plan);
    free(d);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}

static void summary(const ddp_run_config *cfg, const ddp_run_stats *s, const ddp_run_stats *one)
{
    const rl_hw *hw = cfg->opts.hw ? cfg->opts.hw : rl_hw_default();
    int n = s->ranks;
    char b1[32], b2[32], b3[32];
    int64_t global = (int64_t)n * cfg->micro_batch * cfg->accum_steps;
    printf("\n== Lab 28 summary: DDP on %d rank%s, modelled as %s ==\n", n, n == 1 ? "" : "s", hw->name);
    printf("   (%s)\n", hw->summary);
    printf("Shape   every rank holds the whole model: %lld parameters, %s of f32 gradients,\n", (long long)s->params,
           rl_fmt_bytes((double)s->param_bytes, b1, sizeof b1));
    printf("        in %d bucket%s (cap %g MiB, first bucket %g MiB); x [%lld, %d] per micro-step per rank,\n",
           s->nbuckets, s->nbuckets == 1 ? "" : "s", cfg->bucket_cap_mb, cfg->first_bucket_mb,
           (long long)cfg->micro_batch, cfg->model.hidden);
    printf("        global batch %d ranks x %lld samples x %d micro-step%s = %lld samples per step\n", n,
           (long long)cfg->micro_batch, cfg->accum_steps, cfg->accum_steps == 1 ? "" : "s", (long long)global);
    double ideal = -1, last = -1;
    print_buckets(cfg, n, n > hw->gpus_per_node ? &hw->inter : &hw->intra, &ideal, &last);
    double ring = rl_ring_bytes_per_rank(RL_COLL_ALL_REDUCE, n, (double)s->param_bytes);
    printf("Cost    bytes sent per rank per step: %s (communicator counters, %lld all-reduce call%s)\n",
           rl_fmt_bytes((double)s->bytes_sent, b1, sizeof b1), (long long)s->allreduce_calls,
           s->allreduce_calls == 1 ? "" : "s");
    printf("        ring formula 2(n-1)/n x %s = %s (%.0f bytes = %.3f MB)\n",
           rl_fmt_bytes((double)s->param_bytes, b2, sizeof b2), rl_fmt_bytes(ring, b3, sizeof b3), ring, ring / 1e6);
    /* --backend cuda: the trace's times are CUDA-event measurements, not the cost model's */
    if (s->backend[0])
        printf("Machine measured on the GPU: %s; times from CUDA events\n", s->backend);
    printf("%s step time %.1f us (slowest rank, %s); rank 0: compute %.1f us, comm stream busy %.1f us\n",
           s->backend[0] ? "       " : "Machine", s->step_time * 1e6, s->backend[0] ? "measured" : "virtual",
           s->compute_time * 1e6, s->comm_time * 1e6);
    if (s->first_comm_start >= 0)
        printf("        backward ended at %.1f us; the first bucket's all-reduce started at %.1f us (%s)\n",
               s->backward_end * 1e6, s->first_comm_start * 1e6,
               s->first_comm_start < s->backward_end ? "during backward" : "after backward");
    else
        printf("        backward ended at %.1f us; no all-reduce ran\n", s->backward_end * 1e6);
    if (!s->backend[0])
        printf("        exposed comm %.1f us, hidden %.1f us -> overlap: %.0f%% of comm hidden behind backward\n",
               s->exposed_comm * 1e6,
               (s->comm_time - s->exposed_comm > 0 ? s->comm_time - s->exposed_comm : 0) * 1e6, 100.0 * s->overlap);
    else if (s->measured_overlap < 0)
        printf("        no collective ran in the last step\n");
    else /* on the GPU, from the measured spans: comm time under some compute kernel */
        printf("        comm %.1f us, %.1f us of it under compute -> overlap: %.0f%% of comm hidden (measured)\n",
               s->measured_comm * 1e6, s->measured_hidden * 1e6, 100.0 * s->measured_overlap);
    if (!s->backend[0] && ideal > 0 && n > 1) /* what no code can beat, from the cost model alone */
        printf("Ideal   (cost model) these %d buckets' ring all-reduces take %.1f us (yours kept the comm stream busy "
               "%.1f us);\n        the last one's %.1f us can only start when backward ends -> at least %.0f%% of "
               "the comm can run\n        under backward itself (the rest under what follows it, or exposed)%s\n", s->nbuckets, ideal * 1e6, s->comm_time * 1e6, last * 1e6,
               100.0 * (ideal - last) / ideal, one && one->step_time > 0 ? ";" : "");
    if (!s->backend[0] && ideal > 0 && n > 1 && one && one->step_time > 0)
        printf("        no step on %d ranks is shorter than one rank's (no comm at all): %.1f us; yours is %.1f us "
               "longer\n", n, one->step_time * 1e6, (s->step_time - one->step_time) * 1e6);
    if (cfg->opts.nfaults) {
        printf("        per rank: step time / time waiting on comm (us):");
        for (int r = 0; r < n && r < DDP_MAX_RANKS; r++)
            printf(" %d: %.1f/%.1f", r, s->rank_step[r] * 1e6, s->rank_wait[r] * 1e6);
        printf("\n");
    }
    if (one && one->step_time > 0 && n > 1) {
        double eff = one->step_time / s->step_time;
        printf("Scaling one rank with the same per-rank batch: %.1f us/step; %d ranks: %.1f us/step\n",
               one->step_time * 1e6, n, s->step_time * 1e6);
        printf("        -> %d ranks process %dx the samples: speed-up %.2fx, scaling efficiency %.1f%%\n", n, n,
               n * eff, 100.0 * eff);
        if (strstr(s->backend, "device-memory")) /* more ranks than GPUs: they take turns on one */
            printf("        (measured with the ranks sharing GPUs: their kernels compete for the same SMs)\n");
    }
    if (s->process_rank >= 0)
        printf("        one process per rank: the figures above are rank %d's; no one-rank comparison run\n",
               s->process_rank);
    printf("Loss    %.5f after step 0, %.5f after step %d (%s)\n", s->first_loss, s->last_loss, cfg->steps - 1,
           s->process_rank >= 0 ? "rank 0's shard of the global batch" : "mean over ranks of the global batch");
}

int main(int argc, char **argv)
{
    rl_program_start();
    ddp_run_config cfg = ddp_run_config_default();
    char err[256];
    if (rl_opts_parse(&cfg.opts, &argc, argv, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (rl_opts_check_faults(&cfg.opts, RL_FAULTS_COMM, "lab 28")) {
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    int sweep = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double v = 0;
        int k;
        int has = i + 1 < argc;
        if (rl_opts_list_numbers(a, nums, NNUMS))
            return 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--sweep")) {
            sweep = 1;
        } else if ((k = rl_optnum_find(nums, NNUMS, a, has ? argv[i + 1] : NULL, &v, err, sizeof err)) != -1) {
            if (k == -2) {
                fprintf(stderr, "%s\n", err);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            i++;
            if (!strcmp(a, "--bucket-cap-mb"))
                cfg.bucket_cap_mb = v;
            else if (!strcmp(a, "--first-bucket-mb"))
                cfg.first_bucket_mb = v;
            else if (!strcmp(a, "--steps"))
                cfg.steps = (int)v;
            else if (!strcmp(a, "--batch"))
                cfg.micro_batch = (int64_t)v;
            else if (!strcmp(a, "--accum"))
                cfg.accum_steps = (int)v;
            else if (!strcmp(a, "--hidden"))
                cfg.model.hidden = (int)v;
            else
                cfg.model.layers = (int)v;
        } else {
            fprintf(stderr, "unknown argument '%s'\n", a);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
    }
    if (cfg.steps < 1 || cfg.micro_batch < 1 || cfg.accum_steps < 1 || cfg.model.hidden < 1 || cfg.model.layers < 1) {
        fprintf(stderr, "--steps, --batch, --accum, --hidden and --layers must be >= 1\n");
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (sweep) {
        ddp_sweep_config sc = ddp_sweep_config_default();
        sc.base = cfg;
        sc.base.steps = 2;
        sc.base.opts.trace_path = NULL;
        sc.straggler_rank = cfg.opts.ranks - 1;
        const rl_hw *hw = cfg.opts.hw ? cfg.opts.hw : rl_hw_default();
        sc.max_ranks = hw->gpus_per_node * hw->nodes < 8 ? hw->gpus_per_node * hw->nodes : 8;
        printf("28.5 sweep on %s: %d ranks for the bucket rows, worlds 1..%d, straggler rank %d +%g ms\n", hw->name,
               cfg.opts.ranks, sc.max_ranks, sc.straggler_rank, sc.straggler_ms);
        ddp_sweep_table *t = calloc(1, sizeof *t);
        int rc = ddp_scaling_sweep(&sc, t);
        if (!rc)
            ddp_sweep_print(t, stdout);
        free(t);
        return rl_exit_status(rc);
    }
    /* one process per rank (docs/launch.md): the world is WORLD_SIZE processes */
    int world = cfg.opts.ranks, me = rl_launch_process_rank(&cfg.opts, &world);
    if (me >= 0)
        cfg.opts.ranks = world;
    const rl_hw *hw = cfg.opts.hw ? cfg.opts.hw : rl_hw_default();
    printf("Lab 28: DDP training of an MLP (%d blocks, hidden %d) on %d rank%s of %s, %d step%s\n", cfg.model.layers,
           cfg.model.hidden, cfg.opts.ranks, cfg.opts.ranks == 1 ? "" : "s", hw->name, cfg.steps,
           cfg.steps == 1 ? "" : "s");
    cfg.print_loss = 1;
    cfg.print_chart = 1;
    fflush(stdout);
    ddp_run_stats s;
    int rc = ddp_run(&cfg, &s);
    if (rc) {
        if (cfg.opts.nfaults)
            fprintf(stderr, "the run stopped (%s) on the fault injected with --fault: see the report above\n",
                    rl_status_name(rc));
        else {
            fprintf(stderr, "the run failed (%s): the message above says why; when it names a step of yours, fix it, "
                    "then: make grade LAB=28\n",
                    rl_status_name(rc));
            if (me <= 0) { /* the bucket plan needs only 28.2: show it all the same */
                double ideal, last;
                printf("Your bucket plan of this model (step 28.2; cap %g MiB, first bucket %g MiB):\n",
                       cfg.bucket_cap_mb, cfg.first_bucket_mb);
                print_buckets(&cfg, cfg.opts.ranks, &hw->intra, &ideal, &last);
            }
        }
        return rl_exit_status(rc);
    }
    if (me > 0) { /* one process per rank: rank 0 prints the summary */
        printf("rank %d of %d: done; loss of this rank's shard %.5f after step 0, %.5f after step %d\n", me, world,
               s.first_loss, s.last_loss, cfg.steps - 1);
        return 0;
    }
    ddp_run_stats one, *onep = NULL;
    if (cfg.opts.ranks > 1 && me < 0) { /* (not in a multi-process run: it would start all processes' world) */
        ddp_run_config c1 = cfg;
        c1.opts.ranks = 1;
        c1.opts.trace_path = NULL;
        c1.opts.nfaults = 0;
        c1.steps = 2;
        c1.print_loss = 0;
        c1.print_chart = 0;
        c1.opts.tui = 0;
        if (!ddp_run(&c1, &one))
            onep = &one;
    }
    summary(&cfg, &s, onep);
    return 0;
}
