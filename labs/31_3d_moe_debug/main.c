/* main.c — Lab 31 driver (not edited by learners). --part picks what to run:
 *   mesh      your 31.1 layout of --dp/--pp/--tp/--cp/--ep on --ranks, its groups and nodes,
 *             the communicators built on the ranks (--tui: the mesh view)
 *   3d        a TP x PP (1F1B) x DP + ZeRO-1 training run with your 31.2 composition
 *   moe       one expert-parallel MoE layer with your 31.3 code (--fault hot-expert:...)
 *   diagnose  a run failing the way --fault asks, then your 31.4 analyses of it
 *   plan      your 31.5 planner on a model and a cluster
 * Each part ends with a summary answering Shape / Cost / Machine. */
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lab31.h"
#include "optnum.h"
#include "moe.h"
#include "tui.h"

typedef struct args {
    rl_opts opts;
    const char *part;
    int dp, pp, tp, cp, ep, m, steps, experts, top_k;
    double cf;
    rl_mesh_order order;
} args;

static void usage(FILE *f)
{
    fprintf(f, "usage: make run LAB=31 [RANKS=8] [ARGS=\"--part mesh|3d|moe|diagnose|plan ...\"]\n"
               "  --part P         mesh (default), 3d, moe, diagnose, plan\n"
               "  --dp --pp --tp --cp --ep N   mesh / 3d sizes (default dp = ranks/(pp·tp·cp), pp = tp = 2)\n"
               "  --order O        mesh rank order: tp-cp-dp-pp (default, Megatron-LM's \"tp-cp-ep-dp-pp\": PP\n"
               "                   outermost) or tp-cp-pp-dp (DP outermost)\n"
               "  --m N            micro-batches per step (3d, default 4)   --steps N (3d, default 8)\n"
               "  --experts E --top-k K --capacity-factor F   (moe; default 8, 2, 1.25)\n");
    rl_opts d;
    rl_opts_init(&d);
    d.ranks = 8; /* this lab's default: a 2x2x2 mesh */
    rl_opts_usage(f, &d);
}

/* ------------------------------------------------------------------ mesh */
typedef struct mesh_run {
    mesh_layout *lay;
    int rc;
} mesh_run;

static int mesh_rank(rl_ctx *ctx, void *arg)
{
    mesh_run *mr = arg;
    mesh_comms mc;
    memset(&mc, 0, sizeof mc);
    int rc = mesh_build_comms(ctx, mr->lay, &mc);
    if (rc && rl_rank(ctx) == 0) {
        mr->rc = rc;
        fprintf(stderr, "%s\n", rl_last_error(ctx));
    }
    if (!rc && rl_rank(ctx) == 0) /* one all-reduce per group so the timeline shows them */
        mr->rc = 0;
    if (!rc)
        for (int d = 0; d < MESH_NDIMS; d++) {
            rl_tensor *t = rl_tensor_new_1d(ctx, mesh_dim_name((mesh_dim)d), RL_BF16, RL_MEM_COMM, 1 << 16);
            if (t && mc.c[d] && rl_comm_size(mc.c[d]) > 1)
                rl_all_reduce(mc.c[d], t, t, RL_SUM, 0);
            rl_tensor_free(t);
        }
    mesh_comms_free(&mc);
    return 0;
}

static int part_mesh(const args *a)
{
    rl_mesh_shape s = { a->dp, a->pp, a->tp, a->cp, a->ep, a->order };
    const rl_hw *hw = a->opts.hw ? a->opts.hw : rl_hw_default();
    mesh_layout *L = calloc(1, sizeof *L);
    char err[256];
    int rc = L ? mesh_layout_make(&s, a->opts.ranks, hw, L, err, sizeof err) : RL_ERR_NOMEM;
    if (rc) {
        fprintf(stderr, "%s\n", err);
        free(L);
        return rc == RL_ERR_NOT_IMPLEMENTED ? 1 : RL_EXIT_USAGE;
    }
    printf("Mesh dp=%d x pp=%d x cp=%d x tp=%d (ep=%d) on %d ranks of %s (%d GPUs per node)\n", a->dp, a->pp, a->cp,
           a->tp, a->ep, a->opts.ranks, hw->name, L->gpus_per_node);
    int show = a->opts.ranks < 32 ? a->opts.ranks : 32;
    printf("  rank node  tp cp pp dp ep edp   TP-group PP-group DP-group (ids = smallest rank)\n");
    for (int r = 0; r < show; r++) {
        const rl_mesh_coord *c = &L->coord[r];
        printf("  %4d %4d  %2d %2d %2d %2d %2d %3d   %8d %8d %8d\n", r, L->node[r], c->tp, c->cp, c->pp, c->dp, c->ep,
               c->edp, L->group[MESH_TP][r], L->group[MESH_PP][r], L->group[MESH_DP][r]);
    }
    if (L->warning[0])
        printf("  %s\n", L->warning);
    mesh_run mr = { L, 0 };
    rl_opts o = a->opts;
    rl_trace *tr = NULL;
    if (o.tui && !o.tui_view[0])
        snprintf(o.tui_view, sizeof o.tui_view, "mesh");
    rc = o.tui ? rl_tui_run_live(&o, mesh_rank, &mr, &tr) : rl_launch(&o, mesh_rank, &mr, &tr);
    if (rc == RL_ERR_UNSUPPORTED && o.tui) { /* no terminal for --tui: the runtime said so */
        free(L);
        return RL_EXIT_USAGE;
    }
    if (!rc && !o.tui && tr) {
        char e2[128];
        printf("\nMesh view (groups highlighted; --tui to explore it live):\n");
        if (rl_tui_print_chart(tr, RL_VIEW_MESH, 24, stdout, e2, sizeof e2))
            printf("(no mesh chart: %s)\n", e2);
    }
    printf("\n== Lab 31.1 summary ==\n");
    int dp_outer = a->order == RL_MESH_ORDER_TP_CP_PP_DP, inner = a->tp * a->cp;
    printf("Shape   each rank has 6 coordinates; TP groups of %d consecutive ranks, PP groups stride %d, DP groups "
           "stride %d (order %s)\n", a->tp, dp_outer ? inner : inner * a->dp, dp_outer ? inner * a->pp : inner,
           dp_outer ? "tp-cp-pp-dp: DP outermost" : "tp-cp-dp-pp, Megatron-LM's default: PP outermost");
    printf("Cost    TP: 2 all-reduces of b·s·h per layer forward and 2 backward -> keep it on NVLink; DP: one gradient "
           "reduction per step\n");
    printf("Machine %s\n", L->tp_crosses_node ? L->warning : "every TP group sits inside one node (NVLink)");
    rl_trace_free(tr);
    free(L);
    return rc ? rl_exit_status(rc) : mr.rc ? 1 : 0;
}

/* ------------------------------------------------------------------ 3d */
typedef struct td_run {
    td_config cfg;
    int steps;
    float loss[64];
    int rc;
    double step_time;
    int64_t dp_bytes, tp_bytes, pp_bytes;
} td_run;

static int td_rank_fn(rl_ctx *ctx, void *arg)
{
    td_run *t = arg;
    rl_data *data = rl_data_regression(ctx, t->cfg.model.hidden, t->cfg.model.out_dim, t->cfg.data_seed);
    td_engine *e = data ? td_engine_new(ctx, &t->cfg, data) : NULL;
    int rc = e ? 0 : RL_ERR_ARG;
    for (int s = 0; s < t->steps && !rc; s++) {
        rl_step_begin(ctx, s);
        double t0 = rl_stream_time(ctx, RL_STREAM_COMPUTE);
        float l = 0;
        rc = td_train_step(e, s, &l);
        double dt = rl_stream_time(ctx, RL_STREAM_COMPUTE) - t0;
        rl_step_end(ctx);
        if (!rc && e->stage == t->cfg.pp - 1 && e->tp_rank == 0 && s < 64)
            t->loss[s] += l / (float)t->cfg.dp;
        if (rl_rank(ctx) == 0 && dt > t->step_time)
            t->step_time = dt;
    }
    if (rc && rl_rank(ctx) == 0) {
        t->rc = rc;
        fprintf(stderr, "rank 0: %s\n", rl_last_error(ctx));
    }
    if (e && rl_rank(ctx) == 0) {
        t->dp_bytes = rl_comm_get_counters(e->comms.dp).bytes_sent;
        t->tp_bytes = rl_comm_get_counters(e->comms.tp).bytes_sent;
        t->pp_bytes = rl_comm_get_counters(e->comms.pp).bytes_sent;
    }
    td_engine_free(e);
    rl_data_free(data);
    return rc;
}

static int part_3d(const args *a)
{
    td_run *t = calloc(1, sizeof *t);
    td_config *c = &t->cfg;
    c->dp = a->dp, c->pp = a->pp, c->tp = a->tp, c->micro_batches = a->m, c->micro_batch = 4;
    c->model = rl_model_config_default(RL_MODEL_MLP);
    c->model.hidden = 64, c->model.layers = 4, c->model.out_dim = 8;
    c->model.param_dtype = c->model.grad_dtype = RL_F32;
    c->adamw = rl_adamw_defaults();
    c->adamw.lr = 3e-3f;
    c->data_seed = 5;
    t->steps = a->steps < 64 ? a->steps : 64;
    rl_trace *tr = NULL;
    rl_opts o = a->opts;
    int rc = o.tui ? rl_tui_run_live(&o, td_rank_fn, t, &tr) : rl_launch(&o, td_rank_fn, t, &tr);
    if (rc == RL_ERR_UNSUPPORTED && o.tui) {
        free(t);
        return RL_EXIT_USAGE;
    }
    if (!rc)
        for (int s = 0; s < t->steps; s++)
            printf("step %3d  loss %.5f\n", s, t->loss[s]);
    if (!rc && tr && !o.tui) {
        printf("\nTimeline of the last step (TP all-reduces, PP send/recv, ZeRO-1 reduce-scatter + all-gather):\n");
        rl_tui_print_step_chart(tr, t->steps - 1, stdout);
        char err[256];
        printf("\nThe 1F1B schedule of the first step as a tick table (one op per tick; each stage's lowest "
               "rank):\n");
        if (rl_pp_print_trace_ticks(tr, stdout, err, sizeof err))
            printf("(no tick table: %s)\n", err);
    }
    if (!rc) {
        rl_calc_bubble_in bi = { a->pp, a->m, 1, RL_CALC_SCHED_1F1B };
        rl_calc_bubble_out bo;
        rl_calc_bubble(&bi, &bo, NULL, 0);
        printf("\n== Lab 31.2 summary: dp=%d x pp=%d x tp=%d, m=%d micro-batches of 4 ==\n", a->dp, a->pp, a->tp, a->m);
        printf("Shape   fc1 [h, 4h/t] = [64, %d] and fc2 [4h/t, h] per TP rank; %d blocks per stage; ZeRO-1 piece "
               "= 1/%d of each rank's flat vector\n", 256 / a->tp, 4 / a->pp, a->dp);
        printf("Cost    rank 0 sent in the run's %d steps: TP %lld B, PP %lld B, DP (ZeRO-1) %lld B\n", t->steps,
               (long long)t->tp_bytes, (long long)t->pp_bytes, (long long)t->dp_bytes);
        printf("Machine step time on rank 0 (virtual) %.1f us; --trace FILE then ringlab view FILE shows all three "
               "groups\n", t->step_time * 1e6);
        rl_pp_trace_stats ps;
        char perr[256];
        if (tr && rl_pp_bubble_from_trace(tr, t->steps - 1, &ps, perr, sizeof perr) == 0)
            printf("Ideal   (cost model) 1F1B leaves (p-1)/(m+p-1) = %.1f%% of the step idle with free comm; your last "
                   "step: %.1f%% idle\n        between its first and last F/B op (the TP all-reduces and the sends "
                   "inside the step add to it)\n", 100 * bo.frac_total, 100 * ps.bubble_frac);
    }
    rl_trace_free(tr);
    int r = rc ? rl_exit_status(rc) : t->rc ? 1 : 0;
    free(t);
    return r;
}

/* ------------------------------------------------------------------ moe */
typedef struct moe_run {
    moe_config cfg;
    moe_stats st[LAB31_MAX_RANKS];
    int rc;
} moe_run;

static int moe_rank_fn(rl_ctx *ctx, void *arg)
{
    moe_run *mr = arg;
    int w = rl_rank(ctx);
    moe_layer *l = moe_layer_new(ctx, &mr->cfg, w);
    int64_t sh[2] = { 256, mr->cfg.hidden };
    rl_tensor *x = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_ACTIVATION, 2, sh, "tokens,h");
    rl_tensor *y = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_ACTIVATION, 2, sh, "tokens,h");
    float *xs = malloc(sizeof(float) * (size_t)(256 * mr->cfg.hidden)); /* host values, copied once */
    for (int64_t i = 0; xs && i < 256 * mr->cfg.hidden; i++)
        xs[i] = (float)sin(0.37 * (double)i + w);
    rl_comm_set_role(rl_comm_world(ctx), "ep");
    int rc = l && x && y && xs && !rl_tensor_from_f32(x, xs, 256 * mr->cfg.hidden)
                 ? moe_forward(l, rl_comm_world(ctx), x, y, &mr->st[w]) : RL_ERR_ARG;
    free(xs);
    if (rc && w == 0) {
        mr->rc = rc;
        fprintf(stderr, "%s\n", rl_last_error(ctx));
    }
    rl_tensor_free(x), rl_tensor_free(y);
    moe_layer_free(l);
    return rc;
}

static int part_moe(const args *a)
{
    moe_run *mr = calloc(1, sizeof *mr);
    mr->cfg = (moe_config){ .hidden = 32, .ffn = 64, .num_experts = a->experts, .top_k = a->top_k,
                            .ep = a->opts.ranks, .capacity_factor = a->cf, .moe_aux_loss_coeff = 0.01, .seed = 9 };
    rl_opts o = a->opts;
    int rc = rl_launch(&o, moe_rank_fn, mr, NULL);
    if (!rc && !mr->rc) {
        int64_t hist[64] = { 0 }, drop = 0, routed = 0;
        for (int r = 0; r < o.ranks; r++) {
            for (int e = 0; e < a->experts; e++)
                hist[e] += mr->st[r].routed[e];
            drop += mr->st[r].dropped;
        }
        for (int e = 0; e < a->experts; e++)
            routed += hist[e];
        char chart[4096];
        printf("Expert load over all ranks (slots routed, before dropping):\n%s\n",
               rl_moe_load_chart(hist, a->experts, 50, chart, sizeof chart));
        rl_calc_moe_in mi = { 256, a->experts, a->top_k, a->cf, 32, 4 };
        rl_calc_moe_out mo;
        rl_calc_moe(&mi, &mo, NULL, 0);
        printf("== Lab 31.3 summary: E=%d, top_k=%d, capacity_factor %.2f, ep=%d, 256 tokens per rank ==\n",
               a->experts, a->top_k, a->cf, o.ranks);
        printf("Shape   capacity C = ceil(T·k/E·cf) = %lld slots per expert per rank; rank 0 sent %lld rows, received "
               "%lld rows [., h=32]\n", (long long)mr->st[0].capacity, (long long)mr->st[0].rows_sent,
               (long long)mr->st[0].rows_received);
        printf("Cost    %lld of %lld slots dropped (%.1f%%); aux loss on rank 0 %.5f (alpha 0.01 = uniform); all-to-all "
               "bound %.0f B per rank (f32, dispatch + combine)\n", (long long)drop, (long long)routed,
               routed ? 100.0 * drop / routed : 0, mr->st[0].aux_loss, mo.total_bytes);
        printf("Machine the hottest expert's rank computes the most rows; everyone waits for it in the combine "
               "all-to-all%s\n", mr->st[0].hot_redirected ? " (hot-expert fault active)" : "");
        int64_t hot = 0;
        for (int e = 0; e < a->experts; e++)
            hot = hist[e] > hot ? hist[e] : hot;
        if (routed > 0)
            printf("Ideal   balanced routing: %.1f slots per expert; your busiest expert got %lld (%.2fx): its rank's "
                   "expert work, and the wait of everyone else, grow by that factor\n", (double)routed / a->experts,
                   (long long)hot, hot * (double)a->experts / (double)routed);
    }
    int r = rc ? rl_exit_status(rc) : mr->rc ? 1 : 0;
    free(mr);
    return r;
}

/* ------------------------------------------------------------------ diagnose */
/* Removes the trace and flight dump that part_diagnose wrote into its own folder tmp ("" when
 * --trace named the file: then they stay). */
static void remove_run_files(const char *tmp, const char *trace, const char *dump)
{
    if (!tmp[0])
        return;
    unlink(trace);
    unlink(dump);
    rmdir(tmp);
}

static int part_diagnose(const args *a)
{
    fault_run_config fc = fault_run_config_default();
    fc.opts = a->opts;
    char tmp[300] = "", path[320], dump[340], err[256];
    if (!fc.opts.trace_path) { /* --trace FILE, else a folder of this run's own, removed at the end */
        /* one folder per user, made here with mode 0700 (or one already so: never a link or another's) */
        snprintf(tmp, sizeof tmp, "%s/rl31-diagnose-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getuid());
        struct stat st;
        if ((mkdir(tmp, 0700) && errno != EEXIST) || lstat(tmp, &st) || !S_ISDIR(st.st_mode) ||
            st.st_uid != getuid() || (st.st_mode & 077)) {
            fprintf(stderr, "cannot use the temporary folder '%s' (it must be this user's own, mode 0700): set TMPDIR "
                    "to a folder you may write to, or give --trace FILE\n", tmp);
            return 1;
        }
        snprintf(path, sizeof path, "%s/trace.json", tmp);
        fc.opts.trace_path = path;
    }
    snprintf(dump, sizeof dump, "%s.flight.json", fc.opts.trace_path);
    unlink(dump); /* never diagnose the records of an earlier run */
    if (fc.opts.timeout_s > 2)
        fc.opts.timeout_s = 1.0;
    fault_run_log log;
    int rc = fault_run(&fc, &log), failed = 0;
    if (rc) {
        remove_run_files(tmp, path, dump);
        return 1;
    }
    printf("fault run on %d ranks: %s\n", fc.opts.ranks, rl_status_name(log.status));
    rl_diag_flight fl;
    memset(&fl, 0, sizeof fl);
    if (log.status && rl_diag_flight_load(dump, &fl, err, sizeof err)) {
        fprintf(stderr, "the fault run failed (%s) but left no flight records to diagnose: %s\n",
                rl_status_name(log.status), err);
        free(log.norms);
        remove_run_files(tmp, path, dump);
        return 1;
    }
    remove_run_files(tmp, path, dump);
    if (log.status && tmp[0])
        printf("(the flight records were read from a temporary folder, now removed: --trace FILE keeps the trace and "
               "FILE.flight.json)\n");
    if (log.status) {
        diag_result d;
        int r = diagnose(&fl, &d);
        printf("diagnose(): %s\n", r ? rl_last_error(NULL) : d.message);
        failed |= r != 0;
        rl_diag_flight_free(&fl);
    }
    straggler_result s;
    int r = detect_straggler(log.step_ms, fc.opts.ranks, &s);
    if (r == 0)
        printf("straggler detector: %s\n", s.message);
    failed |= r != 0;
    spike_result sp;
    int done = 0;
    for (int st = 0; st < log.steps; st++)
        done += !isnan(log.norms[(int64_t)st * log.ranks * log.layers]);
    r = detect_spike(log.norms, done ? done : 1, log.ranks, log.layers, &sp);
    if (r == 0)
        printf("spike detector: %s step %d, rank %d, layer %d\n", sp.found ? (sp.nonfinite ? "first NaN/Inf at" :
               "first spike at") : "nothing found;", sp.step, sp.rank, sp.layer);
    failed |= r != 0;
    printf("\n== Lab 31.4 summary ==\nShape   flight records: per rank and communicator, (seq, op, count, dtype, "
           "state)\nCost    a straggler costs every other rank (its time − median) per step\nMachine which rank "
           "does your diagnose() name, and which would you investigate first: its node, its links?\n");
    free(log.norms);
    if (failed)
        fprintf(stderr, "the run failed: a step of 31.4 above is not done yet (%s)\n", rl_last_error(NULL));
    return failed;
}

/* ------------------------------------------------------------------ plan */
static int part_plan(const args *a)
{
    rl_calc_plan_in in = { 70e9, 80, 64, 8192, 4096, 256, 64, rl_hw_find("h100-2node-ib"), 0 };
    rl_calc_plan_row *rows = NULL;
    int n = 0;
    char err[256] = "";
    (void)a;
    if (plan_enumerate(&in, &rows, &n, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("Planner: 70B (L=80, h=8192, a=64, S=4096), global batch 256, 64 GPUs of h100-2node-ib: %d candidates\n", n);
    printf("  tp pp dp   b   m zero recompute   step (s)   MFU   memory (GB)  warnings\n");
    for (int i = 0; i < n && i < 10; i++) {
        const rl_calc_plan_row *r = &rows[i];
        printf("  %2d %2d %2d %3d %3d %4d %-10s %9.3f %5.1f%% %9.1f   %s%s%s\n", r->tp, r->pp, r->dp, r->b, r->m,
               r->zero, rl_calc_recompute_name(r->recompute), r->step_time, 100 * r->mfu, r->mem_total / 1e9,
               r->warnings & RL_CALC_WARN_TP_NODES ? "TP-across-nodes " : "",
               r->warnings & RL_CALC_WARN_FEW_MB ? "m<4p " : "", r->warnings & RL_CALC_WARN_OOM ? "OOM" : "");
    }
    if (n)
        printf("\n== Lab 31.5 summary ==\nShape   best: TP=%d x PP=%d x DP=%d, b=%d, m=%d\nCost    %.1f GB per GPU "
               "(states %.1f + activations %.1f)\nMachine step %.3f s, MFU %.1f%%\n", rows[0].tp, rows[0].pp,
               rows[0].dp, rows[0].b, rows[0].m, rows[0].mem_total / 1e9, rows[0].mem_states / 1e9,
               rows[0].mem_act / 1e9, rows[0].step_time, 100 * rows[0].mfu);
    free(rows);
    return 0;
}

/* The driver's numeric options and the range each accepts. */
static const rl_optnum_decl nums[] = {
    { "--dp", 1, 4096, 1 }, { "--pp", 1, 4096, 1 }, { "--tp", 1, 4096, 1 }, { "--cp", 1, 4096, 1 },
    { "--ep", 1, 4096, 1 }, { "--m", 1, 256, 1 }, { "--steps", 1, 64, 1 }, { "--experts", 1, 64, 1 },
    { "--top-k", 1, 64, 1 }, { "--capacity-factor", 0.01, 64, 0 },
};
#define NNUMS ((int)(sizeof nums / sizeof nums[0]))

int main(int argc, char **argv)
{
    rl_program_start();
    args a;
    memset(&a, 0, sizeof a);
    char err[256];
    rl_opts_init(&a.opts);
    a.opts.ranks = 8;
    if (rl_opts_parse(&a.opts, &argc, argv, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (rl_require_one_process(&a.opts, "lab 31"))
        return RL_EXIT_USAGE;
    a.part = "mesh", a.pp = 2, a.tp = 2, a.cp = 1, a.ep = 1, a.m = 4, a.steps = 8, a.experts = 8, a.top_k = 2;
    a.cf = 1.25, a.order = RL_MESH_ORDER_TP_CP_DP_PP;
    const char *given[16]; /* the part's options given, to check against the part */
    int ngiven = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int has = i + 1 < argc, k;
        double v;
        if (rl_opts_list_numbers(s, nums, NNUMS))
            return 0;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return 0;
        } else if (has && !strcmp(s, "--part")) {
            a.part = argv[++i];
        } else if (has && !strcmp(s, "--order")) {
            if (ngiven < 16)
                given[ngiven++] = s;
            const char *o = argv[++i];
            if (strcmp(o, "tp-cp-dp-pp") && strcmp(o, "tp-cp-pp-dp")) {
                fprintf(stderr, "--order '%s': use tp-cp-dp-pp (PP outermost, the default) or tp-cp-pp-dp (DP "
                                "outermost)\n", o);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            a.order = strcmp(o, "tp-cp-dp-pp") ? RL_MESH_ORDER_TP_CP_PP_DP : RL_MESH_ORDER_TP_CP_DP_PP;
        } else if ((k = rl_optnum_find(nums, NNUMS, s, has ? argv[i + 1] : NULL, &v, err, sizeof err)) != -1) {
            if (k == -2) {
                fprintf(stderr, "%s\n", err);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            i++;
            if (ngiven < 16)
                given[ngiven++] = s;
            if (!strcmp(s, "--capacity-factor")) {
                a.cf = v;
                continue;
            }
            int *dst = !strcmp(s, "--dp") ? &a.dp : !strcmp(s, "--pp") ? &a.pp : !strcmp(s, "--tp") ? &a.tp
                     : !strcmp(s, "--cp") ? &a.cp : !strcmp(s, "--ep") ? &a.ep : !strcmp(s, "--m") ? &a.m
                     : !strcmp(s, "--steps") ? &a.steps : !strcmp(s, "--experts") ? &a.experts : &a.top_k;
            *dst = (int)v;
        } else {
            fprintf(stderr, "unknown argument '%s'\n", s);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
    }
    static const struct { const char *part, *takes; } part_opts[] = {
        { "mesh", "--dp --pp --tp --cp --ep --order" }, { "3d", "--dp --pp --tp --cp --m --steps" },
        { "moe", "--experts --top-k --capacity-factor" }, { "diagnose", "" }, { "plan", "" },
    };
    for (size_t p = 0; p < sizeof part_opts / sizeof *part_opts; p++)
        for (int g = 0; g < ngiven && !strcmp(a.part, part_opts[p].part); g++) {
            char word[24];
            snprintf(word, sizeof word, "%s ", given[g]);
            char takes[64];
            snprintf(takes, sizeof takes, "%s ", part_opts[p].takes);
            if (strstr(takes, word))
                continue;
            fprintf(stderr, "--part %s does not use %s (%s%s)\n", a.part, given[g],
                    part_opts[p].takes[0] ? "it takes " : "it takes none of the parts' options",
                    part_opts[p].takes);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
    if (!a.dp) {
        int rest = a.pp * a.tp * a.cp;
        if (strcmp(a.part, "mesh") && strcmp(a.part, "3d"))
            rest = 1;
        if (rest < 1 || a.opts.ranks % rest) {
            fprintf(stderr, "--ranks %d is not divisible by pp·tp·cp = %d: pick other sizes\n", a.opts.ranks, rest);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
        a.dp = a.opts.ranks / rest;
    }
    unsigned faults = !strcmp(a.part, "plan") ? 0 /* (it runs no ranks) */
                      : !strcmp(a.part, "moe") ? RL_FAULTS_COMM | 1u << RL_FAULT_HOT_EXPERT
                      : !strcmp(a.part, "diagnose") ? RL_FAULTS_COMM | 1u << RL_FAULT_NAN : RL_FAULTS_COMM;
    char who[64];
    snprintf(who, sizeof who, "lab 31 --part %.20s", a.part);
    if (rl_opts_check_faults(&a.opts, faults, who)) {
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (!strcmp(a.part, "mesh"))
        return part_mesh(&a);
    if (!strcmp(a.part, "3d")) {
        if (a.dp * a.pp * a.tp != a.opts.ranks || a.cp != 1 || 4 % a.pp || 256 % a.tp || a.opts.ranks > LAB31_MAX_RANKS) {
            fprintf(stderr, "--part 3d: need dp·pp·tp = --ranks (<= %d), pp dividing 4 layers, tp dividing 256, and no "
                    "CP (--cp 1)\n", LAB31_MAX_RANKS);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
        return part_3d(&a);
    }
    if (!strcmp(a.part, "moe")) {
        if (a.opts.ranks > LAB31_MAX_RANKS || a.experts > 64 || a.experts % a.opts.ranks || a.top_k > a.experts ||
            !(a.cf > 0)) {
            fprintf(stderr, "--part moe: --ranks (the EP size, <= %d) must divide --experts (<= 64); top_k <= experts; "
                    "capacity factor > 0\n", LAB31_MAX_RANKS);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
        return part_moe(&a);
    }
    if (!strcmp(a.part, "diagnose")) {
        if (a.opts.ranks > LAB31_MAX_RANKS) {
            fprintf(stderr, "--part diagnose: at most %d ranks\n", LAB31_MAX_RANKS);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
        return part_diagnose(&a);
    }
    if (!strcmp(a.part, "plan"))
        return part_plan(&a);
    fprintf(stderr, "--part '%s': use mesh, 3d, moe, diagnose or plan\n", a.part);
    usage(stderr);
    return RL_EXIT_USAGE;
}
