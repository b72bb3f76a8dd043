/* main.c — Lab 29 driver (not edited by learners): trains the MLP block stack (bf16
 * parameters and gradients, fp32 master weights and Adam state) with your ZeRO / FSDP
 * engine (zero.c) on --ranks N simulated GPUs, prints the loss, and ends with a summary
 * answering the three questions for the run — Shape (units, shards, mesh), Cost (memory
 * per rank by category beside your 29.1 formula, bytes on the wire per step beside the
 * cost model) and Machine (step time, exposed comm with and without prefetch, peak memory).
 * --tui shows the run live on the memory view; otherwise the memory view is
 * printed as a text chart after the loss. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calc.h"
#include "optnum.h"
#include "zero.h"

static void usage(FILE *f)
{
    zero_run_config d = zero_run_config_default();
    fprintf(f, "usage: make run LAB=29 [RANKS=4] [ARGS=\"...\"]   (or build/labs/29_zero_fsdp/run [options])\n"
               "Trains an MLP block stack with your ZeRO / FSDP engine (labs/29_zero_fsdp/zero.c) and prints a summary.\n"
               "Lab options:\n"
               "  --stage S            zero1 | zero2 | zero3 | hsdp (default %s; also FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD)\n"
               "  --group G            hsdp: ranks per shard group (default %d; --hw h100-2node-ib --ranks 16 --group 8\n"
               "                       shards inside each node and replicates across the two nodes)\n"
               "  --no-wrap            no auto-wrap policy: the whole model is one unit (default: one unit per block)\n"
               "  --no-prefetch        neither forward_prefetch nor backward_prefetch (zero3, hsdp)\n"
               "  --no-forward-prefetch, --no-backward-prefetch   switch off one of them\n"
               "  --steps N            training steps (default %d; the last one is measured)\n"
               "  --batch B            samples per rank per step (default %lld)\n"
               "  --hidden H --layers L  model width and depth (default %d, %d)\n",
            zero_stage_name(d.zero.stage), d.zero.group, d.steps, (long long)d.micro_batch, d.model.hidden,
            d.model.layers);
    rl_opts_usage(f, &d.opts);
}

/* The driver's numeric options and the range each accepts. */
static const rl_optnum_decl nums[] = {
    { "--group", 1, 4096, 1 }, { "--steps", 1, 10000, 1 }, { "--batch", 1, 65536, 1 }, { "--hidden", 1, 16384, 1 },
    { "--layers", 1, 1024, 1 },
};
#define NNUMS ((int)(sizeof nums / sizeof nums[0]))

/* "12.58 MB (12.00 MiB)" */
static const char *mb(double bytes, char *buf, size_t size)
{
    snprintf(buf, size, "%.3f MB (%.3f MiB)", bytes / 1e6, bytes / 1048576.0);
    return buf;
}

/* The Ideal line, from the cost model alone: the stage's fewest collectives (one of each over the
 * whole bf16 model: ZeRO-1/2 a reduce-scatter and an all-gather, ZeRO-3 two all-gathers and a
 * reduce-scatter; HSDP those of ZeRO-3 in the shard group plus an all-reduce of a shard across
 * groups) as ring α-β times is the least comm any schedule needs; no step beats max(compute, comm). */
static void print_ideal(const rl_hw *hw, zero_stage st, double psi, int W, int n, const zero_run_stats *s)
{
    int ranks[ZERO_MAX_RANKS], R = W / n;
    for (int i = 0; i < W; i++)
        ranks[i] = i;
    double bytes = 2 * psi, comm;
    if (st == ZERO_HSDP) {
        const rl_link *ls = rl_hw_group_link(hw, ranks, n);
        for (int i = 0; i < R; i++)
            ranks[i] = i * n;
        const rl_link *lr = rl_hw_group_link(hw, ranks, R);
        comm = 2 * rl_ab_time(RL_COLL_ALL_GATHER, RL_ALGO_RING, n, bytes, ls) +
               rl_ab_time(RL_COLL_REDUCE_SCATTER, RL_ALGO_RING, n, bytes, ls) +
               (R > 1 ? rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, R, bytes / n, lr) : 0);
    } else {
        const rl_link *l = rl_hw_group_link(hw, ranks, W);
        comm = (st == ZERO_STAGE3 ? 2 : 1) * rl_ab_time(RL_COLL_ALL_GATHER, RL_ALGO_RING, W, bytes, l) +
               rl_ab_time(RL_COLL_REDUCE_SCATTER, RL_ALGO_RING, W, bytes, l);
    }
    double floor = s->compute_time > comm ? s->compute_time : comm;
    printf("Ideal   (cost model) this stage's fewest collectives take %.1f us; with your compute %.1f us no step "
           "beats\n        max(compute, comm) = %.1f us (every byte hidden); yours %.1f us (%+.1f%%), your comm "
           "stream busy %.1f us\n", comm * 1e6, s->compute_time * 1e6, floor * 1e6, s->step_time * 1e6,
           100 * (s->step_time - floor) / floor, s->comm_time * 1e6);
}

static void summary(const zero_run_config *cfg, const zero_run_stats *s, const zero_run_stats *nopf,
                    const zero_run_stats *nowrap)
{
    const rl_hw *hw = cfg->opts.hw ? cfg->opts.hw : rl_hw_default();
    zero_stage st = cfg->zero.stage;
    int W = s->ranks, n = s->n, R = n > 0 ? W / n : 1;
    double psi = (double)s->params;
    char b1[64], b2[64];
    printf("\n== Lab 29 summary: %s on %d rank%s, modelled as %s ==\n", zero_stage_name(st), W, W == 1 ? "" : "s",
           hw->name);
    printf("   (%s)\n", hw->summary);
    printf("Shape   Ψ = %lld parameters (a count, not bytes); bf16 params and grads, fp32 master/m/v (16 bytes per "
           "parameter)\n", (long long)s->params);
    if (st == ZERO_HSDP && n > 0 && R > 0 && W <= ZERO_MAX_RANKS) {
        int sg[ZERO_MAX_RANKS], rg[ZERO_MAX_RANKS];
        for (int i = 0; i < n; i++)
            sg[i] = i;
        for (int i = 0; i < R; i++)
            rg[i] = i * n;
        const rl_link *ls = rl_hw_group_link(hw, sg, n), *lr = rl_hw_group_link(hw, rg, R);
        printf("        2-D mesh: %d replica group%s x %d ranks per shard group (rank w: group w/%d, index w%%%d)\n", R,
               R == 1 ? "" : "s", n, n, n);
        printf("        rank 0's shard group (ranks 0..%d) talks over %s; its replica group (ranks 0, %d, ...) over "
               "%s%s\n", n - 1, ls ? ls->name : "?", n, lr ? lr->name : "?",
               ls == lr ? " (one node: use --hw h100-2node-ib --ranks 16 --group 8 for groups that span nodes)" : "");
    }
    printf("        %d unit%s (%s); each unit's flat vector padded to a multiple of %d and cut in %d pieces; the "
           "largest unit has %lld elements\n", s->nunits, s->nunits == 1 ? "" : "s",
           cfg->zero.wrap_per_block ? "auto-wrap: one per block + the head" : "no wrap policy: the whole model",
           n, n, (long long)s->max_unit_padded);
    zero_mem f;
    int have_f = zero_bytes_per_rank(NULL, psi, W, st, ZERO_DEFAULT_K, n, &f) == 0;
    printf("Cost    model states per rank after the step (memory account) beside your 29.1 formula:\n");
    const char *cat[3] = { "param", "grad", "optim" };
    double pred[3] = { have_f ? f.param : 0, have_f ? f.grad : 0, have_f ? f.optim : 0 };
    int idx[3] = { RL_MEM_PARAM, RL_MEM_GRAD, RL_MEM_OPTIM };
    for (int i = 0; i < 3; i++) {
        printf("          %-6s %32s", cat[i], mb((double)s->mem_current[idx[i]], b1, sizeof b1));
        if (have_f)
            printf("   formula %s", mb(pred[i], b2, sizeof b2));
        printf("   (peak in the step %s)\n", mb((double)s->mem_peak[idx[i]], b1, sizeof b1));
    }
    double states = (double)(s->mem_current[RL_MEM_PARAM] + s->mem_current[RL_MEM_GRAD] + s->mem_current[RL_MEM_OPTIM]);
    printf("          %-6s %32s", "total", mb(states, b1, sizeof b1));
    if (have_f)
        printf("   formula %s = %.4f GB = %.4f GiB", mb(f.total, b2, sizeof b2), f.gb, f.gib);
    else
        printf("   (formula: step 29.1 is not implemented yet)");
    printf("\n");
    rl_calc_zero_in zi = { psi, W, 0, n, 2 };
    rl_calc_zero_out zo;
    int kind = st == ZERO_HSDP ? RL_CALC_HSDP : (int)st;
    int have_c = rl_calc_zero(&zi, &zo, NULL, 0) == 0;
    double sent = (double)(s->shard_sent + s->replica_sent);
    printf("        bytes sent per rank per step (counters): %s", mb(sent, b1, sizeof b1));
    if (have_c)
        printf("; cost model %s = %.3f x Ψ elements of 2 bytes", mb(zo.traffic_bytes[kind], b2, sizeof b2),
               zo.traffic_elems[kind] / psi);
    printf("\n        %lld all-gather, %lld reduce-scatter, %lld all-reduce call%s in the step", (long long)s->all_gathers,
           (long long)s->reduce_scatters, (long long)s->all_reduces, s->all_reduces == 1 ? "" : "s");
    if (st == ZERO_HSDP)
        printf("; inside the shard group %s, across groups %s", mb((double)s->shard_sent, b1, sizeof b1),
               mb((double)s->replica_sent, b2, sizeof b2));
    printf("\n");
    if (have_c)
        printf("        (DDP would send %s per step: ZeRO-1/2 the same 2Ψ, ZeRO-3 3Ψ = 1.5x)\n",
               mb(zo.traffic_bytes[RL_CALC_DDP], b1, sizeof b1));
    printf("Machine step time %.1f us (slowest rank, virtual); rank 0: compute %.1f us, comm stream busy %.1f us, "
           "exposed comm %.1f us\n", s->step_time * 1e6, s->compute_time * 1e6, s->comm_time * 1e6,
           s->exposed_comm * 1e6);
    printf("        peak memory in the step %s (param peak %s)\n", mb((double)s->peak_total, b1, sizeof b1),
           mb((double)s->mem_peak[RL_MEM_PARAM], b2, sizeof b2));
    if (nopf)
        printf("        without prefetch: exposed comm %.1f us, step %.1f us -> prefetch hides %.1f us\n",
               nopf->exposed_comm * 1e6, nopf->step_time * 1e6, (nopf->exposed_comm - s->exposed_comm) * 1e6);
    if (nowrap)
        printf("        one unit for the whole model (no wrap policy): param peak %s vs %s per-block\n",
               mb((double)nowrap->mem_peak[RL_MEM_PARAM], b1, sizeof b1),
               mb((double)s->mem_peak[RL_MEM_PARAM], b2, sizeof b2));
    if (have_c && W > 1 && W <= ZERO_MAX_RANKS && n > 0)
        print_ideal(hw, st, psi, W, n, s);
    printf("Loss    %.5f after step 0, %.5f after step %d (mean over ranks)\n", s->first_loss, s->last_loss,
           cfg->steps - 1);
}

int main(int argc, char **argv)
{
    rl_program_start();
    zero_run_config cfg = zero_run_config_default();
    char err[256];
    if (rl_opts_parse(&cfg.opts, &argc, argv, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (rl_opts_check_faults(&cfg.opts, RL_FAULTS_COMM, "lab 29")) {
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (rl_require_one_process(&cfg.opts, "lab 29"))
        return RL_EXIT_USAGE;
    const char *prefetch_opt = NULL; /* options that apply to some stages only, when given */
    int group_given = 0;
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
        } else if (!strcmp(a, "--no-wrap")) {
            cfg.zero.wrap_per_block = 0;
        } else if (!strcmp(a, "--no-prefetch")) {
            cfg.zero.forward_prefetch = cfg.zero.backward_prefetch = 0, prefetch_opt = a;
        } else if (!strcmp(a, "--no-forward-prefetch")) {
            cfg.zero.forward_prefetch = 0, prefetch_opt = a;
        } else if (!strcmp(a, "--no-backward-prefetch")) {
            cfg.zero.backward_prefetch = 0, prefetch_opt = a;
        } else if (has && !strcmp(a, "--stage")) {
            int s = zero_stage_parse(argv[++i]);
            if (s < ZERO_STAGE1) {
                fprintf(stderr, "--stage: '%s' is not zero1, zero2, zero3 or hsdp\n", argv[i]);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            cfg.zero.stage = (zero_stage)s;
        } else if ((k = rl_optnum_find(nums, NNUMS, a, has ? argv[i + 1] : NULL, &v, err, sizeof err)) != -1) {
            if (k == -2) {
                fprintf(stderr, "%s\n", err);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            i++;
            if (!strcmp(a, "--group"))
                cfg.zero.group = (int)v, group_given = 1;
            else if (!strcmp(a, "--steps"))
                cfg.steps = (int)v;
            else if (!strcmp(a, "--batch"))
                cfg.micro_batch = (int64_t)v;
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
    if (cfg.steps < 1 || cfg.micro_batch < 1 || cfg.model.hidden < 1 || cfg.model.layers < 1) {
        fprintf(stderr, "--steps, --batch, --hidden and --layers must be >= 1\n");
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    const char *stage = zero_stage_name(cfg.zero.stage);
    if ((group_given && cfg.zero.stage != ZERO_HSDP) || (prefetch_opt && cfg.zero.stage < ZERO_STAGE3)) {
        fprintf(stderr, "%s applies to %s only; --stage %s does not use it\n", group_given && cfg.zero.stage != ZERO_HSDP
                ? "--group" : prefetch_opt, group_given && cfg.zero.stage != ZERO_HSDP ? "--stage hsdp"
                : "--stage zero3 and hsdp (the parameters' all-gathers)", stage);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (cfg.zero.stage == ZERO_HSDP && (cfg.zero.group < 1 || cfg.opts.ranks % cfg.zero.group)) {
        fprintf(stderr, "--group %d must divide --ranks %d for hsdp\n", cfg.zero.group, cfg.opts.ranks);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    const rl_hw *hw = cfg.opts.hw ? cfg.opts.hw : rl_hw_default();
    printf("Lab 29: %s training of an MLP (%d blocks, hidden %d, bf16 params/grads, fp32 Adam) on %d rank%s of %s, "
           "%d step%s\n", zero_stage_name(cfg.zero.stage), cfg.model.layers, cfg.model.hidden, cfg.opts.ranks,
           cfg.opts.ranks == 1 ? "" : "s", hw->name, cfg.steps, cfg.steps == 1 ? "" : "s");
    cfg.print_loss = 1;
    cfg.print_chart = 1;
    if (cfg.opts.tui && !cfg.opts.tui_view[0])
        snprintf(cfg.opts.tui_view, sizeof cfg.opts.tui_view, "memory"); /* this lab is about memory */
    fflush(stdout);
    zero_run_stats s;
    int rc = zero_run(&cfg, &s);
    if (rc == RL_ERR_UNSUPPORTED && cfg.opts.tui)
        return RL_EXIT_USAGE; /* no terminal for --tui: the runtime said so */
    if (rc) {
        if (cfg.opts.nfaults)
            fprintf(stderr, "the run stopped (%s) on the fault injected with --fault: see the report above\n",
                    rl_status_name(rc));
        else
            fprintf(stderr, "the run failed (%s): the message above says why; when it names a step of yours, fix it, "
                    "then: make grade LAB=29\n",
                    rl_status_name(rc));
        return rl_exit_status(rc);
    }
    zero_run_stats nopf, nowrap, *nopfp = NULL, *nowrapp = NULL;
    zero_run_config c2 = cfg;
    c2.opts.trace_path = NULL;
    c2.opts.tui = 0;
    c2.print_loss = 0;
    c2.print_chart = 0;
    c2.steps = 2;
    int aux = 0; /* the comparison runs' failure, if one failed */
    if (cfg.zero.stage >= ZERO_STAGE3 && (cfg.zero.forward_prefetch || cfg.zero.backward_prefetch)) {
        c2.zero.forward_prefetch = c2.zero.backward_prefetch = 0;
        if (!(aux = zero_run(&c2, &nopf)))
            nopfp = &nopf;
        c2.zero = cfg.zero;
    }
    if (cfg.zero.stage >= ZERO_STAGE3 && cfg.zero.wrap_per_block && !aux) {
        c2.zero.wrap_per_block = 0;
        if (!(aux = zero_run(&c2, &nowrap)))
            nowrapp = &nowrap;
    }
    summary(&cfg, &s, nopfp, nowrapp);
    if (aux) {
        fprintf(stderr, "the comparison run (%s) failed (%s): the summary leaves its lines out\n",
                nopfp ? "one unit for the whole model" : "without prefetch", rl_status_name(aux));
        return rl_exit_status(aux);
    }
    return 0;
}
