/* main.c — Lab 30 driver (not edited by learners): runs every part of your mp.c on
 * simulated GPUs — the tensor-parallel MLP and attention, the sequence-parallel block, one
 * pipeline step under the chosen schedule, ring attention — checks each against a one-rank
 * dense reference, prints the pipeline view (bubbles shaded) and ends with a summary that
 * answers Shape / Cost / Machine. --tui shows the pipeline run live (pipeline view). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calc.h"
#include "mp.h"
#include "optnum.h"
#include "tui.h"

static void usage(FILE *f)
{
    mp_config d = mp_config_default();
    fprintf(f, "usage: make run LAB=30 [RANKS=4] [ARGS=\"...\"]   (or build/labs/30_tp_pp_sp_cp/run [options])\n"
               "Runs your TP MLP and attention, sequence parallelism, a pipeline schedule and ring attention\n"
               "(labs/30_tp_pp_sp_cp/mp.c) and prints a summary. --ranks is t (TP/SP) and cp.\n"
               "Lab options:\n"
               "  --schedule S   gpipe | 1f1b | interleaved (default %s)\n"
               "  --stages P     pipeline stages p (default %d)     --microbatches M  m (default %d)\n"
               "  --chunks V     interleaved: virtual_pipeline_model_parallel_size v (default %d)\n"
               "  --seq S --hidden H --heads A --batch B   the TP/SP/CP model (default %lld, %lld, %d, %lld)\n",
            rl_pp_kind_name(d.schedule), d.p, d.m, d.v, (long long)d.s, (long long)d.h, d.heads, (long long)d.b);
    rl_opts_usage(f, &d.opts);
}

static void part_line(const mp_stats *s, int i, const char *name)
{
    if (s->rc[i])
        printf("  %-28s %s\n", name, s->err[i]);
}

/* The GPUs of the run's profile, and its name. */
static int hw_gpus(const mp_config *c)
{
    const rl_hw *hw = c->opts.hw ? c->opts.hw : rl_hw_default();
    return hw->gpus_per_node * hw->nodes;
}
static const char *hw_name(const mp_config *c) { return (c->opts.hw ? c->opts.hw : rl_hw_default())->name; }

/* The driver's numeric options and the range each accepts. */
static const rl_optnum_decl nums[] = {
    { "--stages", 1, 4096, 1 }, { "--microbatches", 1, 4096, 1 }, { "--chunks", 1, 4096, 1 }, { "--seq", 1, 4096, 1 },
    { "--hidden", 1, 4096, 1 }, { "--heads", 1, 4096, 1 }, { "--batch", 1, 4096, 1 },
};
#define NNUMS ((int)(sizeof nums / sizeof nums[0]))

int main(int argc, char **argv)
{
    rl_program_start();
    mp_config cfg = mp_config_default();
    char err[256];
    if (rl_opts_parse(&cfg.opts, &argc, argv, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (rl_opts_check_faults(&cfg.opts, RL_FAULTS_COMM, "lab 30")) {
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (rl_require_one_process(&cfg.opts, "lab 30"))
        return RL_EXIT_USAGE;
    int chunks_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc, k;
        double d;
        if (rl_opts_list_numbers(a, nums, NNUMS))
            return 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (has && !strcmp(a, "--schedule")) {
            int k = rl_pp_kind_parse(argv[++i]);
            if (k != RL_PP_GPIPE && k != RL_PP_1F1B && k != RL_PP_INTERLEAVED) {
                fprintf(stderr, "--schedule: '%s' is not gpipe, 1f1b or interleaved\n", argv[i]);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            cfg.schedule = (rl_pp_kind)k;
        } else if ((k = rl_optnum_find(nums, NNUMS, a, has ? argv[i + 1] : NULL, &d, err, sizeof err)) != -1) {
            if (k == -2) {
                fprintf(stderr, "%s\n", err);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            long v = (long)d;
            i++;
            if (!strcmp(a, "--stages"))
                cfg.p = (int)v;
            else if (!strcmp(a, "--microbatches"))
                cfg.m = (int)v;
            else if (!strcmp(a, "--chunks"))
                cfg.v = (int)v, chunks_given = 1;
            else if (!strcmp(a, "--seq"))
                cfg.s = v;
            else if (!strcmp(a, "--hidden"))
                cfg.h = v;
            else if (!strcmp(a, "--heads"))
                cfg.heads = (int)v;
            else
                cfg.b = v;
        } else {
            fprintf(stderr, "unknown argument '%s'\n", a);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
    }
    int t = cfg.opts.ranks;
    char why[256] = "";
    if (cfg.p > MP_MAX_RANKS || t > MP_MAX_RANKS)
        snprintf(why, sizeof why, "pipeline stages p = %d and ranks t = %d: at most %d each", cfg.p, t, MP_MAX_RANKS);
    else if (cfg.m > MP_MAX_MB)
        snprintf(why, sizeof why, "micro-batches m = %d: at most %d", cfg.m, MP_MAX_MB);
    else if (cfg.v > MP_MAX_CHUNKS)
        snprintf(why, sizeof why, "chunks per stage v = %d: at most %d", cfg.v, MP_MAX_CHUNKS);
    else if (chunks_given && cfg.schedule != RL_PP_INTERLEAVED)
        snprintf(why, sizeof why, "--chunks %d applies to --schedule interleaved only (%s runs one chunk per stage)",
                 cfg.v, rl_pp_kind_name(cfg.schedule));
    else if (cfg.schedule == RL_PP_INTERLEAVED && (cfg.p < 2 || cfg.v < 2 || cfg.m % cfg.p))
        snprintf(why, sizeof why, "--schedule interleaved needs --stages p >= 2, --chunks v from 2 to %d and "
                 "--microbatches m a multiple of p (got p = %d, v = %d, m = %d)", MP_MAX_CHUNKS, cfg.p, cfg.v, cfg.m);
    else if (cfg.s % (2 * t))
        snprintf(why, sizeof why, "--seq %lld is not divisible by 2t = %d (zig-zag chunks for %d ranks)", (long long)cfg.s,
                 2 * t, t);
    else if (cfg.heads % t)
        snprintf(why, sizeof why, "--heads %d is not divisible by --ranks t = %d (TP attention gives each rank heads/t "
                 "whole heads)", (int)cfg.heads, t);
    else if (cfg.p > hw_gpus(&cfg))
        snprintf(why, sizeof why, "--stages %d: the profile %s models %d GPUs, one per stage: use 1 to %d stages",
                 cfg.p, hw_name(&cfg), hw_gpus(&cfg), hw_gpus(&cfg));
    else if (cfg.h % cfg.heads)
        snprintf(why, sizeof why, "--hidden %lld is not divisible by --heads %d", (long long)cfg.h, (int)cfg.heads);
    if (why[0]) {
        fprintf(stderr, "%s\n", why);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    /* the largest tensors, f32: activations [b, s, 4h], attention scores [b, a, s, s] and the MLP's
     * weights, held by every rank and by the dense references beside them */
    double big = 4.0 * ((double)cfg.b * cfg.s * 4 * cfg.h + (double)cfg.b * cfg.heads * cfg.s * cfg.s +
                        8.0 * cfg.h * cfg.h), need = big * (t + 3), avail = rl_mem_available();
    if (avail >= 0 && need > avail) {
        char b1[32], b2[32];
        fprintf(stderr, "out of memory: b = %lld, s = %lld, h = %lld, a = %d need about %s ([b, s, 4h] activations, "
                        "[b, a, s, s] scores and the weights, on %d ranks and in the dense references); about %s is "
                        "available: choose smaller --batch, --seq, --hidden or --heads\n", (long long)cfg.b,
                (long long)cfg.s, (long long)cfg.h, cfg.heads, rl_fmt_bytes(need, b1, sizeof b1), t,
                rl_fmt_bytes(avail, b2, sizeof b2));
        return RL_EXIT_FAIL;
    }
    const rl_hw *hw = cfg.opts.hw ? cfg.opts.hw : rl_hw_default();
    printf("Lab 30: model parallelism on %s: t = cp = %d ranks (b = %lld, s = %lld, h = %lld, a = %d, f = 4h), "
           "pipeline p = %d, m = %d, %s%s\n", hw->name, t, (long long)cfg.b, (long long)cfg.s, (long long)cfg.h,
           cfg.heads, cfg.p, cfg.m, rl_pp_kind_name(cfg.schedule), cfg.schedule == RL_PP_INTERLEAVED ? " (v chunks)" : "");
    fflush(stdout);
    mp_stats s;
    rl_trace *tr = NULL;
    int rc = mp_run(&cfg, MP_PART_ALL, &s, &tr);
    if (rc == RL_ERR_UNSUPPORTED && cfg.opts.tui) {
        rl_trace_free(tr);
        return RL_EXIT_USAGE;
    }
    if (tr && !s.rc[3] && !cfg.opts.tui) {
        printf("\nPipeline view of the step (stage x time, F/B cells with micro-batch numbers, bubbles shaded; "
               "replay with --trace FILE then make view TRACE=FILE, key 2):\n");
        if (rl_tui_print_chart(tr, RL_VIEW_PIPELINE, 2 * cfg.p + 12, stdout, err, sizeof err))
            printf("(no pipeline chart: %s)\n", err);
        printf("\nThe same schedule as a tick table (one op per tick, messages free, as PyTorch's schedule dump; "
               "'.': the stage idles):\n");
        if (rl_pp_print_trace_ticks(tr, stdout, err, sizeof err))
            printf("(no tick table: %s)\n", err);
    }
    rl_trace_free(tr);
    int v = cfg.schedule == RL_PP_INTERLEAVED ? cfg.v : 1;
    printf("\n== Lab 30 summary (%s, virtual time) ==\n", hw->name);
    if (rc) {
        printf("Not done yet / failing:\n");
        part_line(&s, 0, "30.1 TP MLP:");
        part_line(&s, 1, "30.2 TP attention:");
        part_line(&s, 2, "30.3 sequence parallel:");
        part_line(&s, 3, "30.4 pipeline:");
        part_line(&s, 4, "30.5 ring attention:");
    }
    printf("Shape   TP MLP on %d ranks: x[b=%lld,s=%lld,h=%lld] x %s -> %s (4h/t columns each); w2 %s\n", t,
           (long long)cfg.b, (long long)cfg.s, (long long)cfg.h, s.w1_shape[0] ? s.w1_shape : "?",
           s.hpre_shape[0] ? s.hpre_shape : "?", s.w2_shape[0] ? s.w2_shape : "?");
    printf("        attention: %d heads -> %d per rank; SP: activations [s/t=%lld, b, h] outside the MLP; CP: %lld "
           "positions per rank (zig-zag chunks r and 2cp-1-r)\n", cfg.heads, cfg.heads / t, (long long)(cfg.s / t),
           (long long)(cfg.s / t));
    if (!s.rc[0])
        printf("        max rel. difference to the dense layer: y %.2g, dx %.2g, gradient shards %.2g\n", s.mlp_y_err,
               s.mlp_dx_err, s.mlp_dw_err);
    if (!s.rc[1])
        printf("        TP attention: max rel. difference to dense attention %.2g\n", s.attn_err);
    rl_calc_tp_in ti = { (double)cfg.b, (double)cfg.s, (double)cfg.h, t, 4, hw };
    rl_calc_tp_out to;
    if (!rl_calc_tp(&ti, &to, NULL, 0))
        printf("Cost    TP MLP: %lld all-reduce(s) forward, %lld backward (Megatron: 1 + 1 per MLP, 2 + 2 per layer); "
               "each of b*s*h = %.0f elements\n", (long long)s.ar_fwd, (long long)s.ar_bwd, to.allreduce_elems);
    if (!s.rc[2])
        printf("        block fwd+bwd: TP sent %lld B (%lld all-reduces), TP+SP sent %lld B (%lld all-gathers + %lld "
               "reduce-scatters): same volume; activations held %lld B (TP) vs %lld B (SP)\n", (long long)s.tp_bytes,
               (long long)s.tp_calls[RL_COLL_ALL_REDUCE], (long long)s.sp_bytes,
               (long long)s.sp_calls[RL_COLL_ALL_GATHER], (long long)s.sp_calls[RL_COLL_REDUCE_SCATTER],
               (long long)s.tp_act, (long long)s.sp_act);
    rl_calc_bubble_in bi = { cfg.p, cfg.m, v,
                             cfg.schedule == RL_PP_GPIPE ? RL_CALC_SCHED_GPIPE
                             : cfg.schedule == RL_PP_1F1B ? RL_CALC_SCHED_1F1B : RL_CALC_SCHED_INTERLEAVED };
    rl_calc_bubble_out bo;
    if (!s.rc[3] && !rl_calc_bubble(&bi, &bo, NULL, 0))
        printf("        pipeline %s: bubble %.1f%% measured from the trace, formula %.1f%% ((p-1)/(%sm+p-1)); peak "
               "in-flight micro-batches on stage 0: %.1f (GPipe m = %d, 1F1B <= p = %d)\n", rl_pp_kind_name(cfg.schedule),
               100 * s.pp.bubble_frac, 100 * bo.frac_total, v > 1 ? "v*" : "", s.pp.peak_inflight[0], cfg.m, cfg.p);
    if (!s.rc[4]) {
        int64_t mx = 0, mn = INT64_MAX, mxc = 0, mnc = INT64_MAX;
        for (int r = 0; r < t; r++) {
            mx = s.cp_work[r] > mx ? s.cp_work[r] : mx, mn = s.cp_work[r] < mn ? s.cp_work[r] : mn;
            mxc = s.cp_work_contig[r] > mxc ? s.cp_work_contig[r] : mxc;
            mnc = s.cp_work_contig[r] < mnc ? s.cp_work_contig[r] : mnc;
        }
        printf("        ring attention (causal) score entries per rank: zig-zag %lld..%lld, contiguous %lld..%lld; "
               "max rel. difference to full attention %.2g\n", (long long)mn, (long long)mx, (long long)mnc,
               (long long)mxc, s.cp_err);
    }
    printf("Machine TP traffic for this model: %.0f bytes per layer (8bsh x 4 B: this lab's activations are f32; "
           "bytes counted once); on %s %s "
           "a layer's 4 all-reduces take %.2f us\n", to.layer_bytes, hw->name, to.crosses_nodes ? "ACROSS NODES:" : "in one node:",
           to.layer_time * 1e6);
    if (!s.rc[3]) {
        printf("        pipeline step %.3f ms of virtual time on %d stages (t_f = %.1f ms, t_b = %.1f ms per stage and "
               "micro-batch); p2p send/recv paired in groups (Megatron)\n", s.pp.makespan * 1e3, cfg.p, cfg.t_f * 1e3,
               cfg.t_b * 1e3);
        if (!rl_calc_bubble(&bi, &bo, NULL, 0) && bo.frac_total < 1) {
            /* a stage's work m·(t_f + t_b) is (1 − bubble) of the makespan when sends are free */
            double ideal = cfg.m * (cfg.t_f + cfg.t_b) / (1 - bo.frac_total);
            printf("Ideal   (cost model) %s with free sends: m·(t_f + t_b) / (1 − bubble) = %.3f ms; yours %.3f ms\n"
                   "        (%+.1f%%: the sends, and any op that waits longer than the schedule needs)\n",
                   rl_pp_kind_name(cfg.schedule), ideal * 1e3, s.pp.makespan * 1e3,
                   100 * (s.pp.makespan - ideal) / ideal);
        }
        printf("        pipeline gradients vs the unpipelined model: max rel. difference %.2g (%s); loss %.6g vs %.6g\n",
               s.pp_grad_err, s.pp_grad_err <= 1e-4 ? "right" : "WRONG: an op missing, run twice or fed the wrong input",
               s.pp_loss, s.pp_ref_loss);
    }
    if (rc && rc != RL_ERR_NOT_IMPLEMENTED)
        fprintf(stderr, "a part failed (%s): the message above says why; when it names a step of yours, fix it, "
                "then: make grade LAB=30\n", rl_status_name(rc));
    return rc ? rl_exit_status(rc) : 0;
}
