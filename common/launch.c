/* launch.c — common options, the world of rank threads, rl_launch and its watchdog. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "apiwatch.h"
#include "internal.h"

/* ------------------------------------------------------------------ options */

RL_API_WATCHED
void rl_opts_init(rl_opts *o)
{
    RL_API_ENTRY();
    memset(o, 0, sizeof *o);
    o->ranks = 4;
    o->backend = RL_BACKEND_SIM;
    o->hw = rl_hw_default();
    o->seed = 1;
    o->timeout_s = 30.0;
}

RL_API_WATCHED
void rl_opts_usage(FILE *f, const rl_opts *defaults)
{
    RL_API_ENTRY();
    rl_opts d;
    rl_opts_init(&d);
    if (defaults)
        d = *defaults;
    int n;
    const rl_hw *hw = rl_hw_profiles(&n);
    fprintf(f,
            "Common options:\n"
            "  --ranks N          number of ranks (default %d)\n"
            "  --backend B        sim (ranks are threads, modelled time; default), cuda (real GPUs),\n"
            "                     auto (cuda if a GPU is found, else sim)\n"
            "  --hw PROFILE       hardware the sim backend models (default %s):\n",
            d.ranks, d.hw ? d.hw->name : rl_hw_default()->name);
    for (int i = 0; i < n; i++)
        fprintf(f, "                       %-14s %s\n", hw[i].name, hw[i].summary);
    fprintf(f,
            "  --trace FILE       write a Chrome trace (open in Perfetto or `ringlab view FILE`)\n"
            "  --trace-wall       also write wall-clock times into the trace (then it differs run to run)\n"
            "  --tui[=VIEW]       show the run live in the terminal UI, opening on VIEW (timeline,\n"
            "                     pipeline, shapes, memory or mesh)\n"
            "  --seed N           random seed (default %llu)\n"
            "  --timeout S        watchdog: a collective not done after S seconds ends the run (0.1 to 86400; default %g)\n"
            "  --fault SPEC       inject a fault (repeatable):\n%s"
            "  --quiet            no launcher messages\n"
            "  --help             this help\n",
            (unsigned long long)d.seed, d.timeout_s, rl_fault_help());
}

/* Value of option argv[*i] ("--x V" or "--x=V"); advances *i past a separate value. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, char *err, int errlen)
{
    size_t len = strlen(name);
    if (argv[*i][len] == '=')
        return argv[*i] + len + 1;
    if (*i + 1 >= argc) {
        snprintf(err, (size_t)errlen, "%s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

static int is_opt(const char *arg, const char *name)
{
    size_t len = strlen(name);
    return strncmp(arg, name, len) == 0 && (arg[len] == 0 || arg[len] == '=');
}

const rl_optnum_decl rl_opts_numbers[RL_OPTS_NNUMBERS] = {
    { "--ranks", 1, 1024, 1 }, { "--seed", 0, 2147483647, 1 }, { "--timeout", 0.1, 86400, 0 },
};

RL_API_WATCHED
int rl_opts_list_numbers(const char *arg, const rl_optnum_decl *own, int n)
{
    RL_API_ENTRY();
    if (strcmp(arg, RL_OPTNUM_LIST_FLAG) != 0)
        return 0;
    rl_optnum_list(stdout, own, n);
    rl_optnum_list(stdout, rl_opts_numbers, RL_OPTS_NNUMBERS);
    return 1;
}

RL_API_WATCHED
int rl_opts_parse(rl_opts *o, int *argc, char **argv, char *err, int errlen)
{
    RL_API_ENTRY();
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i], *v;
        int k = -1;
        for (int j = 0; j < RL_OPTS_NNUMBERS && k < 0; j++)
            k = is_opt(a, rl_opts_numbers[j].name) ? j : -1;
        if (k >= 0) {
            const rl_optnum_decl *d = &rl_opts_numbers[k];
            double num;
            if (!(v = opt_value(*argc, argv, &i, d->name, err, errlen)) ||
                rl_optnum(d->name, v, d->min, d->max, d->whole, &num, err, (size_t)errlen))
                return -1;
            if (k == 0)
                o->ranks = (int)num, o->ranks_given = 1;
            else if (k == 1)
                o->seed = (uint64_t)num;
            else
                o->timeout_s = num, o->timeout_given = 1;
        } else if (is_opt(a, "--backend")) {
            if (!(v = opt_value(*argc, argv, &i, "--backend", err, errlen)))
                return -1;
            if (strcmp(v, "sim") == 0)
                o->backend = RL_BACKEND_SIM;
            else if (strcmp(v, "cuda") == 0)
                o->backend = RL_BACKEND_CUDA;
            else if (strcmp(v, "auto") == 0)
                o->backend = RL_BACKEND_AUTO;
            else {
                snprintf(err, (size_t)errlen, "--backend '%s': use sim, cuda or auto", v);
                return -1;
            }
        } else if (is_opt(a, "--hw")) {
            if (!(v = opt_value(*argc, argv, &i, "--hw", err, errlen)))
                return -1;
            if (!(o->hw = rl_hw_find(v))) {
                snprintf(err, (size_t)errlen, "--hw '%s': unknown profile (h100-nvlink, a100-pcie, h100-2node-ib)", v);
                return -1;
            }
        } else if (is_opt(a, "--trace")) {
            if (!(v = opt_value(*argc, argv, &i, "--trace", err, errlen)))
                return -1;
            o->trace_path = v;
        } else if (strcmp(a, "--trace-wall") == 0) {
            o->trace_wall = 1;
        } else if (is_opt(a, "--tui")) {
            o->tui = 1;
            if (a[5] == '=') {
                static const char *const views[] = { "timeline", "pipeline", "shapes", "memory", "mesh" };
                int ok = 0;
                for (int k = 0; k < 5; k++)
                    ok |= strcmp(a + 6, views[k]) == 0;
                if (!ok) {
                    snprintf(err, (size_t)errlen, "--tui=%s: use timeline, pipeline, shapes, memory or mesh", a + 6);
                    return -1;
                }
                snprintf(o->tui_view, sizeof o->tui_view, "%s", a + 6);
            }
        } else if (strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
        } else if (is_opt(a, "--fault")) {
            if (!(v = opt_value(*argc, argv, &i, "--fault", err, errlen)))
                return -1;
            if (o->nfaults == RL_MAX_FAULTS) {
                snprintf(err, (size_t)errlen, "--fault: at most %d faults", RL_MAX_FAULTS);
                return -1;
            }
            if (rl_fault_parse(v, &o->faults[o->nfaults], err, errlen))
                return -1;
            o->nfaults++;
        } else {
            argv[out++] = argv[i];
        }
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

/* ------------------------------------------------------------------ world */

RL_API_WATCHED
void rl_world_abort(rl_world *w, int code, const char *msg)
{
    RL_API_ENTRY();
    pthread_mutex_lock(&w->mu);
    if (!w->aborted) {
        w->abort_code = code;
        snprintf(w->abort_msg, sizeof w->abort_msg, "%s", msg);
        w->aborted = 1;
    }
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void rank_finished(rl_ctx *ctx)
{
    rl_mem_sample_now(ctx);
    rl_world *w = ctx->world;
    pthread_mutex_lock(&w->mu);
    ctx->thread_done = 1;
    w->ranks_done++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

RL_API_WATCHED
void rl_rank_exit_aborted(rl_ctx *ctx)
{
    RL_API_ENTRY();
    if (!ctx->is_rank_thread) {
        fprintf(stderr, "ringlab: %s\n", ctx->world->abort_msg);
        exit(RL_EXIT_FAIL);
    }
    ctx->status = RL_ERR_ABORTED;
    rank_finished(ctx);
    pthread_exit(NULL);
}

RL_API_WATCHED
int rl_rank_out_of_memory(rl_ctx *ctx, const char *fmt, ...)
{
    RL_API_ENTRY();
    char what[sizeof ctx->err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    rl_error(ctx, RL_ERR_NOMEM, "out of memory: %s", what);
    if (!ctx || !ctx->is_rank_thread)
        return RL_ERR_NOMEM;
    char msg[sizeof ctx->err + 32];
    snprintf(msg, sizeof msg, "rank %d: %s", ctx->rank, ctx->err);
    rl_world_abort(ctx->world, RL_ERR_NOMEM, msg);
    rl_rank_exit_aborted(ctx);
}

/* Starts a runtime thread with an 8 MiB stack of its own: the default follows ulimit -s, and
 * under a small one (64 KiB) the ranks' kernels overflowed it (SIGSEGV, no message). */
static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr))
        return pthread_create(t, NULL, fn, arg);
    pthread_attr_setstacksize(&attr, (size_t)8 << 20);
    int e = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return e;
}

/* A world of n ranks; only_rank >= 0 (dist mode: one process per rank) makes only that
 * rank's context and comm worker, the others stay NULL. */
static rl_world *world_create(const rl_opts *opts, int n, int only_rank)
{
    rl_world *w = rl_xcalloc(1, sizeof *w, "the world");
    w->n = n;
    w->opts = *opts;
    w->opts.ranks = n;
    w->dist = only_rank >= 0;
    w->dist_rank = only_rank >= 0 ? only_rank : 0;
    w->hw = opts->hw ? opts->hw : rl_hw_default();
    w->ctxs = rl_xcalloc((size_t)w->n, sizeof *w->ctxs, "the ranks' contexts");
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->t0 = rl_mono_now();
    int *granks = rl_xcalloc((size_t)w->n, sizeof *granks, "the world's ranks");
    for (int r = 0; r < w->n; r++)
        granks[r] = r;
    rl_commgroup *g = rl_commgroup_new(w, "world", granks, w->n);
    free(granks);
    for (int r = 0; r < w->n; r++) {
        if (w->dist && r != only_rank)
            continue;
        rl_ctx *c = rl_xcalloc(1, sizeof *c, "a rank's context");
        c->rank = r;
        c->world = w;
        if (!(c->trace = rl_trace_new(w->n)))
            rl_out_of_memory_exit(sizeof(rl_trace), "a rank's trace");
        pthread_mutex_init(&c->trace_mu, NULL);
        pthread_mutex_init(&c->qmu, NULL);
        pthread_cond_init(&c->qcv, NULL);
        for (int t = 0; t < RL_NTAGS; t++)
            c->tags[t] = -1;
        c->done_work.sentinel = 1;
        c->done_work.done = 1;
        c->done_work.ctx = c;
        c->world_comm = rl_comm_attach(c, g, r);
        w->ctxs[r] = c;
        c->worker_started = start_thread(&c->worker, rl_comm_worker, c) == 0;
    }
    return w;
}

RL_API_WATCHED
rl_world *rl_world_create(const rl_opts *opts)
{
    RL_API_ENTRY();
    return world_create(opts, opts->ranks, -1);
}

static void commgroup_free(rl_commgroup *g)
{
    for (int s = 0; s < RL_NSLOTS; s++) {
        free(g->slots[s].posted);
        free(g->slots[s].ready);
        free(g->slots[s].split_group);
        free(g->slots[s].split_rank);
        if (g->world->gpu_mode) /* GPU backend hook (issue 6): device scratch */
            rl_backend_scratch_free(g->world, g->slots[s].scratch);
        else
            free(g->slots[s].scratch);
    }
    free(g->chan_head);
    free(g->chan_tail);
    free(g->chan_seq);
    free(g->granks);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

RL_API_WATCHED
void rl_world_destroy(rl_world *w)
{
    RL_API_ENTRY();
    for (int r = 0; r < w->n; r++) {
        rl_ctx *c = w->ctxs[r];
        if (!c)
            continue; /* dist mode: another process's rank */
        pthread_mutex_lock(&c->qmu);
        c->worker_stop = 1;
        pthread_cond_broadcast(&c->qcv);
        pthread_mutex_unlock(&c->qmu);
    }
    for (int r = 0; r < w->n; r++)
        if (w->ctxs[r] && w->ctxs[r]->worker_started)
            pthread_join(w->ctxs[r]->worker, NULL);
    rl_backend_world_free(w); /* GPU backend hook (issue 6): NCCL communicators, streams */
    for (int r = 0; r < w->n; r++) {
        rl_ctx *c = w->ctxs[r];
        if (!c)
            continue;
        while (c->comms) {
            rl_comm *next = c->comms->next_in_ctx;
            free(c->comms->p2p_send_seq);
            free(c->comms->p2p_recv_seq);
            free(c->comms);
            c->comms = next;
        }
        rl_works_free_all(c);
        rl_tensors_free_all(c);
        rl_trace_free(c->trace);
        pthread_mutex_destroy(&c->trace_mu);
        pthread_mutex_destroy(&c->qmu);
        pthread_cond_destroy(&c->qcv);
        free(c);
    }
    while (w->groups) {
        rl_commgroup *next = w->groups->next_in_world;
        commgroup_free(w->groups);
        w->groups = next;
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->ctxs);
    free(w);
}

/* ------------------------------------------------------------------ launch */

static void *rank_main(void *arg)
{
    rl_ctx *ctx = arg;
    ctx->status = ctx->world->fn(ctx, ctx->world->fn_arg);
    if (ctx->status && ctx->status != RL_ERR_ABORTED) {
        /* the others would wait for it in their next collective until the watchdog: stop them
         * now, as torchrun stops a job when one of its workers fails */
        char msg[sizeof ctx->err + 64];
        snprintf(msg, sizeof msg, "rank %d failed (%s)%s%s", ctx->rank, rl_status_name(ctx->status),
                 ctx->err[0] ? ": " : "", ctx->err[0] ? ctx->err : ", with no message");
        rl_world_abort(ctx->world, ctx->status, msg);
    }
    rl_backend_timeline_resolve(ctx); /* GPU backend hook (issue 6): measured times into the trace */
    rank_finished(ctx);
    return NULL;
}

/* Seconds the oldest unfinished communicator call of any rank has waited (0 if none). */
static double oldest_wait(rl_world *w)
{
    double now = rl_world_clock(w), worst = 0; /* the clock stands still while the run is paused */
    for (int r = 0; r < w->n; r++) {
        rl_ctx *c = w->ctxs[r];
        if (!c)
            continue;
        pthread_mutex_lock(&c->qmu);
        int64_t first = c->nflight > RL_FLIGHT_N ? c->nflight - RL_FLIGHT_N : 0;
        for (int64_t id = first; id < c->nflight; id++) {
            const rl_flight_rec *f = &c->flight[id % RL_FLIGHT_N];
            if (f->state == RL_FR_ENQUEUED || f->state == RL_FR_STARTED) {
                if (now - f->t_enq > worst)
                    worst = now - f->t_enq;
                break;
            }
        }
        pthread_mutex_unlock(&c->qmu);
    }
    for (int i = 0; i < w->opts.nfaults; i++) { /* a rank stopped by --fault hang waits too */
        int64_t since = __atomic_load_n(&w->hang_since_ns[i], __ATOMIC_ACQUIRE);
        if (since > 0 && now - 1e-9 * (double)(since - 1) > worst)
            worst = now - 1e-9 * (double)(since - 1);
    }
    return worst;
}

static int queues_empty(rl_world *w)
{
    for (int r = 0; r < w->n; r++) {
        if (!w->ctxs[r])
            continue;
        pthread_mutex_lock(&w->ctxs[r]->qmu);
        int busy = w->ctxs[r]->qhead != NULL;
        pthread_mutex_unlock(&w->ctxs[r]->qmu);
        if (busy)
            return 0;
    }
    return 1;
}

/* The flight-recorder JSON path beside the trace (NULL without --trace); dist mode: one
 * file per rank, FILE.rankR.flight.json. */
static const char *flight_json_path(rl_world *w, char *buf, size_t size)
{
    if (!w->opts.trace_path)
        return NULL;
    if (w->dist)
        snprintf(buf, size, "%s.rank%d.flight.json", w->opts.trace_path, w->dist_rank);
    else
        snprintf(buf, size, "%s.flight.json", w->opts.trace_path);
    return buf;
}

/* Ranks whose threads run in this process: all of them, or one in dist mode. */
static int local_ranks(const rl_world *w) { return w->dist ? 1 : w->n; }

static void fire_watchdog(rl_world *w)
{
    char verdict[1024] = "", json_path[1024];
    fprintf(stderr, "\nringlab watchdog: a collective did not complete within %.3g s (--timeout %.3g)\n",
            w->opts.timeout_s, w->opts.timeout_s);
    rl_flight_report(w, stderr, flight_json_path(w, json_path, sizeof json_path), verdict, sizeof verdict);
    for (int i = 0; i < w->opts.nfaults; i++) /* a hang with nobody left to wait for it */
        if (!strncmp(verdict, "no collective is in flight", 26) && __atomic_load_n(&w->hang_since_ns[i], __ATOMIC_ACQUIRE))
            snprintf(verdict, sizeof verdict, "rank %d never entered collective seq %lld on world (--fault hang), and "
                     "no other rank was left in a collective to wait for it", w->opts.faults[i].rank,
                     (long long)w->opts.faults[i].seq);
    char msg[1200];
    snprintf(msg, sizeof msg, "watchdog: %s", verdict);
    rl_world_abort(w, RL_ERR_HANG, msg);
    rl_backend_abort_nccl(w); /* dist mode: NCCL would wait for the other processes forever */
}

/* After a mismatch: the flight records with the mismatch as the verdict, once the comm
 * streams have settled (a call that finished as the run stopped is then recorded as done). */
static void report_mismatch(rl_world *w)
{
    for (int i = 0; i < 200 && !queues_empty(w); i++) {
        struct timespec ts = { 0, 5000000L };
        nanosleep(&ts, NULL);
    }
    char verdict[sizeof w->abort_msg], json_path[1024];
    snprintf(verdict, sizeof verdict, "%s", w->abort_msg);
    rl_flight_report(w, stderr, flight_json_path(w, json_path, sizeof json_path), verdict, sizeof verdict);
}

/* Waits for every rank (and their comm streams) to finish, watching for hangs. */
static void supervise(rl_world *w)
{
    double abort_seen = -1;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        int ranks_done = w->ranks_done == local_ranks(w);
        pthread_mutex_unlock(&w->mu);
        if (ranks_done && (w->aborted || queues_empty(w)))
            return;
        if (!w->aborted && oldest_wait(w) > w->opts.timeout_s)
            fire_watchdog(w);
        if (w->aborted) {
            if (abort_seen < 0)
                abort_seen = rl_mono_now();
            else if (rl_mono_now() - abort_seen > 5.0) {
                fprintf(stderr, "ringlab: ranks did not stop within 5 s after the failure (stuck outside the "
                                "runtime, e.g. in an endless loop); exiting\n");
                _exit(rl_exit_status(w->abort_code));
            }
        }
        pthread_mutex_lock(&w->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
}

/* A merged, sorted copy of every rank's trace (safe while ranks run). */
static rl_trace *collect_trace(rl_world *w)
{
    rl_trace *t = rl_trace_new(w->n);
    snprintf(t->hw, sizeof t->hw, "%s", w->hw->name);
    for (int r = 0; r < w->n; r++) {
        rl_ctx *c = w->ctxs[r];
        if (!c)
            continue; /* dist mode: that rank's process writes its own trace */
        pthread_mutex_lock(&c->trace_mu);
        rl_trace_merge(t, c->trace);
        memcpy(t->peak[r], c->mem.peak, sizeof t->peak[r]);
        if (r == 0) {
            for (int i = 0; i < c->trace->nmeta; i++)
                rl_trace_set_meta(t, c->trace->meta_keys[i], c->trace->meta_vals[i]);
            t->mesh_ndims = c->trace->mesh_ndims;
            memcpy(t->mesh_names, c->trace->mesh_names, sizeof t->mesh_names);
            memcpy(t->mesh_sizes, c->trace->mesh_sizes, sizeof t->mesh_sizes);
        }
        pthread_mutex_unlock(&c->trace_mu);
    }
    rl_trace_sort(t);
    return t;
}

/* Resolves the backend and decides whether this process runs every rank or one rank of a
 * multi-process launch (rl_dist_decide); quiet: prints nothing (rl_launch_process_rank). */
static int plan_launch(const rl_opts *o, int quiet, int *use_cuda, int *ngpus, rl_dist_plan *plan)
{
    rl_dist_facts f;
    char env_err[320] = "", msg[640];
    memset(&f, 0, sizeof f);
    memset(plan, 0, sizeof *plan);
    *use_cuda = *ngpus = 0;
    if (quiet) {
        char why[320];
        int n = o->backend == RL_BACKEND_SIM ? 0 : rl_backend_probe(why, sizeof why);
        if (n < 1 && o->backend == RL_BACKEND_CUDA)
            return RL_ERR_UNSUPPORTED;
        *use_cuda = n > 0;
        *ngpus = n > 0 ? n : 0;
    } else {
        int rc = rl_backend_resolve(o, use_cuda, ngpus);
        if (rc)
            return rc;
    }
    f.backend = o->backend;
    f.use_cuda = *use_cuda;
    f.ngpus = *ngpus;
    f.env_found = rl_dist_env_read(&f.env, env_err, sizeof env_err);
    f.env_err = env_err;
    f.under_mpi = rl_bootstrap_under_mpi();
    f.built_mpi = rl_backend_built_mpi();
    f.built_nccl = rl_backend_built_nccl();
    if (f.env_found == 0 && f.under_mpi && f.built_mpi && f.use_cuda) {
        /* an MPI launcher whose variables we do not know: ask MPI itself (every process
         * calls this, so the one-byte broadcast inside is matched) */
        unsigned char nothing = 0;
        if (rl_bootstrap_mpi(&f.env, &nothing, 1, env_err, sizeof env_err) == 0)
            f.env_found = 1;
    }
    int rc = rl_dist_decide(&f, plan, msg, sizeof msg);
    if (rc && !quiet)
        fprintf(stderr, "ringlab: %s\n", msg);
    return rc;
}

/* Checks the options against the backend and the hardware profile; *use_cuda, *ngpus and
 * *plan say whether the run goes on GPUs, and whether this process runs one rank of many. */
static int check_launch(const rl_opts *o, int *use_cuda, int *ngpus, rl_dist_plan *plan)
{
    const rl_hw *hw = o->hw ? o->hw : rl_hw_default();
    int rc = plan_launch(o, 0, use_cuda, ngpus, plan);
    if (rc)
        return rc;
    int ranks = plan->dist ? plan->env.world_size : o->ranks;
    if (plan->dist && o->ranks_given && o->ranks != ranks && !o->quiet)
        fprintf(stderr, "ringlab: note: --ranks %d is replaced by WORLD_SIZE=%d (one process per rank)\n", o->ranks,
                ranks);
    int max = hw->gpus_per_node * hw->nodes;
    /* (dist mode runs on real GPUs: the profile only models time, so it does not bound the ranks) */
    if (!plan->dist && (o->ranks < 1 || o->ranks > max)) {
        fprintf(stderr, "ringlab: --ranks %d: the profile %s models %d GPUs (%d node%s of %d); use 1 to %d ranks%s\n",
                o->ranks, hw->name, max, hw->nodes, hw->nodes > 1 ? "s" : "", hw->gpus_per_node, max,
                hw->nodes == 1 ? " or --hw h100-2node-ib for 16" : "");
        return RL_ERR_ARG;
    }
    for (int i = 0; i < o->nfaults; i++)
        if (o->faults[i].rank >= ranks) {
            fprintf(stderr, "ringlab: --fault %s: rank %d does not exist with %s %d\n",
                    rl_fault_kind_name(o->faults[i].kind), o->faults[i].rank, plan->dist ? "WORLD_SIZE" : "--ranks",
                    ranks);
            return RL_ERR_ARG;
        }
    return 0;
}

RL_API_WATCHED
int rl_launch_process_rank(const rl_opts *opts, int *world_size)
{
    RL_API_ENTRY();
    int use_cuda, ngpus;
    rl_dist_plan plan;
    *world_size = opts->ranks;
    if (plan_launch(opts, 1, &use_cuda, &ngpus, &plan) || !plan.dist)
        return -1;
    *world_size = plan.env.world_size;
    return plan.env.rank;
}

RL_API_WATCHED
int rl_require_one_process(const rl_opts *opts, const char *program)
{
    RL_API_ENTRY();
    int world = opts->ranks, me = rl_launch_process_rank(opts, &world);
    if (me < 0)
        return 0;
    fprintf(stderr, "ringlab: %s runs every rank in one process (it compares all ranks' results), but this is "
            "process %d of %d under a launcher: start it once with --ranks %d --backend cuda (ranks share or "
            "split the GPUs), or run lab 28 or ringlab bench one process per rank\n", program, me, world, world);
    return RL_ERR_ARG;
}

RL_API_WATCHED
int rl_opts_check_faults(const rl_opts *opts, unsigned allowed, const char *program)
{
    RL_API_ENTRY();
    for (int i = 0; i < opts->nfaults; i++) {
        rl_fault_kind k = opts->faults[i].kind;
        if (allowed & (1u << k))
            continue;
        fprintf(stderr, "%s: --fault %s has no effect here: %s\n", program, rl_fault_kind_name(k),
                k == RL_FAULT_NAN ? "lab 31's diagnose run injects it (make run LAB=31 ARGS=\"--part diagnose --fault ...\")"
                : k == RL_FAULT_HOT_EXPERT ? "it skews lab 31's MoE routing (make run LAB=31 ARGS=\"--part moe --fault ...\")"
                : "it acts on the collectives of a run whose ranks communicate (labs 28-31, ringlab bench)");
        return RL_ERR_ARG;
    }
    return 0;
}

RL_API_WATCHED
char *rl_trace_rank_path(const char *path, int rank, char *out, size_t size)
{
    RL_API_ENTRY();
    size_t len = strlen(path);
    if (rank == 0)
        snprintf(out, size, "%s", path);
    else if (len >= 5 && strcmp(path + len - 5, ".json") == 0)
        snprintf(out, size, "%.*s.rank%d.json", (int)(len - 5), path, rank);
    else
        snprintf(out, size, "%s.rank%d", path, rank);
    return out;
}

struct rl_run {
    rl_world *w;
    pthread_t *threads;
    pthread_t supervisor;
    int supervise_inline; /* the supervisor thread could not start: rl_run_finish runs it */
    int done;
    pthread_mutex_t mu;
};

static void *supervisor_main(void *arg)
{
    rl_run *run = arg;
    supervise(run->w);
    for (int r = 0; r < run->w->n; r++)
        if (run->threads[r])
            pthread_join(run->threads[r], NULL);
    pthread_mutex_lock(&run->mu);
    run->done = 1;
    pthread_mutex_unlock(&run->mu);
    return NULL;
}

/* Refuses, before the run, a --trace file that cannot be written (no such folder, no
 * permission), rather than after it; a file it had to create for the check is removed. */
static int check_trace_path(const char *trace_path, int rank)
{
    char path[1024];
    const char *to = rank ? rl_trace_rank_path(trace_path, rank, path, sizeof path) : trace_path;
    int e = rl_file_writable(to);
    if (e)
        return rl_error(NULL, RL_ERR_IO, "cannot write trace '%s': %s (--trace FILE: a file in a folder that exists "
                        "and that you may write to); nothing was run", to, strerror(e));
    return RL_OK;
}

/* Starts a run; on bad options returns NULL with *rc set and the message printed. */
static rl_run *start_run(const rl_opts *opts, rl_rank_fn fn, void *arg, int *rc)
{
    if (!opts || !fn) {
        *rc = rl_error(NULL, RL_ERR_ARG, "rl_launch: options and rank function are required");
        return NULL;
    }
    int use_cuda = 0, ngpus = 0;
    rl_dist_plan plan;
    if ((*rc = check_launch(opts, &use_cuda, &ngpus, &plan)))
        return NULL;
    if (opts->trace_path && (*rc = check_trace_path(opts->trace_path, plan.dist ? plan.env.rank : 0)))
        return NULL;
    /* Each rank's thread and its comm-stream worker reserve address space for their stacks (GEMM
     * work buffers are checked by the GEMMs themselves): under ulimit -v say so up front. */
    double need = (plan.dist ? 1 : opts->ranks) * 16.0 * 1048576.0, left = rl_mem_address_space_left();
    if (left >= 0 && left < need) {
        char n1[32], n2[32];
        *rc = rl_error(NULL, RL_ERR_NOMEM, "out of memory: %d rank(s) need about %s of address space (two thread "
                       "stacks each) and ulimit -v leaves %s: use fewer --ranks or raise the limit",
                       plan.dist ? 1 : opts->ranks, rl_fmt_bytes(need, n1, sizeof n1), rl_fmt_bytes(left, n2, sizeof n2));
        return NULL;
    }
    rl_world *w = plan.dist ? world_create(opts, plan.env.world_size, plan.env.rank) : rl_world_create(opts);
    if (plan.dist)
        *rc = rl_backend_dist_init(w, &plan); /* one process per rank: NCCL across processes */
    else if (use_cuda)
        *rc = rl_backend_world_init(w, ngpus); /* GPU backend hook (issue 6) */
    if (*rc) {
        rl_world_destroy(w);
        return NULL;
    }
    for (int r = 0; r < w->n; r++)
        if (w->ctxs[r] && !w->ctxs[r]->worker_started) {
            *rc = rl_error(NULL, RL_ERR_NOMEM, "out of memory: could not start rank %d's comm-stream thread: use "
                           "fewer --ranks or raise the limits (ulimit -v: memory, ulimit -u: threads)", r);
            rl_world_destroy(w);
            return NULL;
        }
    rl_run *run = rl_xcalloc(1, sizeof *run, "the run");
    run->w = w;
    pthread_mutex_init(&run->mu, NULL);
    w->fn = fn;
    w->fn_arg = arg;
    run->threads = rl_xcalloc((size_t)w->n, sizeof *run->threads, "the ranks' threads");
    for (int r = 0; r < w->n; r++) {
        if (!w->ctxs[r])
            continue; /* dist mode: another process runs it */
        w->ctxs[r]->is_rank_thread = 1;
        int e = start_thread(&run->threads[r], rank_main, w->ctxs[r]);
        if (e) {
            char msg[256];
            snprintf(msg, sizeof msg, "out of memory: could not start rank %d's thread (%s): use fewer --ranks or "
                     "raise the limits (ulimit -v: memory, ulimit -u: threads)", r, strerror(e));
            rl_world_abort(w, RL_ERR_NOMEM, msg);
            pthread_mutex_lock(&w->mu);
            w->ctxs[r]->thread_done = 1;
            w->ranks_done++;
            pthread_mutex_unlock(&w->mu);
            run->threads[r] = 0;
        }
    }
    int e = start_thread(&run->supervisor, supervisor_main, run);
    if (e) { /* no thread left for it: the ranks stop, and rl_run_finish supervises them itself */
        char msg[256];
        snprintf(msg, sizeof msg, "out of memory: could not start the run's supervisor thread (%s): use fewer "
                 "--ranks or raise the limits (ulimit -v: memory, ulimit -u: threads)", strerror(e));
        rl_world_abort(w, RL_ERR_NOMEM, msg);
        run->supervise_inline = 1;
        run->done = 1; /* rl_run_poll: nothing to wait for but rl_run_finish */
    }
    return run;
}

RL_API_WATCHED
rl_run *rl_launch_async(const rl_opts *opts, rl_rank_fn fn, void *arg)
{
    RL_API_ENTRY();
    int rc;
    return start_run(opts, fn, arg, &rc);
}

RL_API_WATCHED
rl_trace *rl_run_snapshot(rl_run *run)
{
    RL_API_ENTRY();
    return collect_trace(run->w);
}

RL_API_WATCHED
void rl_run_pause(rl_run *run, int on)
{
    RL_API_ENTRY();
    if (!run)
        return;
    rl_world *w = run->w;
    pthread_mutex_lock(&w->mu);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (on && !w->paused) {
        w->paused = 1;
        __atomic_store_n(&w->pause_start_ns, now, __ATOMIC_RELEASE);
    } else if (!on && w->paused) {
        __atomic_store_n(&w->paused_ns, w->paused_ns + (now - w->pause_start_ns), __ATOMIC_RELEASE);
        __atomic_store_n(&w->pause_start_ns, 0, __ATOMIC_RELEASE);
        w->paused = 0;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

RL_API_WATCHED
int rl_run_done(rl_run *run)
{
    RL_API_ENTRY();
    pthread_mutex_lock(&run->mu);
    int d = run->done;
    pthread_mutex_unlock(&run->mu);
    return d;
}

RL_API_WATCHED
int rl_run_finish(rl_run *run, rl_trace **out_trace)
{
    RL_API_ENTRY();
    if (out_trace)
        *out_trace = NULL;
    if (!run)
        return RL_ERR_ARG;
    if (run->supervise_inline)
        supervisor_main(run);
    else
        pthread_join(run->supervisor, NULL);
    rl_world *w = run->w;
    const rl_opts *opts = &w->opts;
    int result = 0;
    if (w->aborted) {
        result = w->abort_code;
        if (result == RL_ERR_MISMATCH)
            report_mismatch(w);
        fprintf(stderr, "ringlab: %s\n", w->abort_msg);
    } else { /* (a rank that failed aborted the world, unless it said it was aborted itself) */
        rl_fault_report_unfired(w, stderr);
        for (int r = 0; r < w->n && !result; r++)
            if (w->ctxs[r] && w->ctxs[r]->status) {
                result = w->ctxs[r]->status;
                fprintf(stderr, "ringlab: rank %d failed (%s)%s%s\n", r, rl_status_name(result),
                        w->ctxs[r]->err[0] ? ": " : "", w->ctxs[r]->err);
            }
    }
    rl_trace *t = collect_trace(w);
    if (opts->trace_path) {
        char err[512], path[1024];
        if (w->gpu_mode) /* GPU backend (issue 6): event times are CUDA-event measurements */
            rl_trace_set_meta(t, "clock", "measured on the GPU (CUDA events)");
        /* dist mode: each process writes its own rank's events to its own file */
        const char *to = w->dist ? rl_trace_rank_path(opts->trace_path, w->dist_rank, path, sizeof path)
                                 : opts->trace_path;
        if (rl_trace_write_json(t, to, opts->trace_wall, err, sizeof err)) {
            fprintf(stderr, "ringlab: %s\n", err);
            if (!result)
                result = RL_ERR_IO;
        } else if (!opts->quiet && w->dist) {
            fprintf(stderr, "ringlab: rank %d: trace written to %s (%zu events, this rank's only; every process "
                    "writes its own rank: rank 0 to %s, rank R to it with .rankR before .json)\n", w->dist_rank, to,
                    t->n, opts->trace_path);
        } else if (!opts->quiet) {
            fprintf(stderr, "ringlab: trace written to %s (%zu events%s)\n", opts->trace_path, t->n,
                    w->gpu_mode ? ", times measured with CUDA events" : "");
        }
    }
    if (out_trace)
        *out_trace = t;
    else
        rl_trace_free(t);
    rl_world_destroy(w);
    free(run->threads);
    pthread_mutex_destroy(&run->mu);
    free(run);
    return result;
}

RL_API_WATCHED
int rl_launch(const rl_opts *opts, rl_rank_fn fn, void *arg, rl_trace **out_trace)
{
    RL_API_ENTRY();
    if (out_trace)
        *out_trace = NULL;
    int rc;
    rl_run *run = start_run(opts, fn, arg, &rc);
    return run ? rl_run_finish(run, out_trace) : rc;
}

RL_API_WATCHED
int rl_exit_status(int r)
{
    RL_API_ENTRY();
    switch (r) {
    case 0: return RL_EXIT_OK;
    case RL_ERR_HANG: return RL_EXIT_HANG;
    case RL_ERR_MISMATCH: return RL_EXIT_MISMATCH;
    case RL_ERR_ARG: return RL_EXIT_USAGE;
    default: return RL_EXIT_FAIL;
    }
}

/* ------------------------------------------------------------------ context accessors */

int rl_rank(const rl_ctx *ctx) { return ctx->rank; }
int rl_world_size(const rl_ctx *ctx) { return ctx->world->n; }
const rl_opts *rl_ctx_opts(const rl_ctx *ctx) { return &ctx->world->opts; }
const rl_hw *rl_ctx_hw(const rl_ctx *ctx) { return ctx->world->hw; }
uint64_t rl_ctx_seed(const rl_ctx *ctx) { return ctx->world->opts.seed; }
rl_mem_account *rl_ctx_mem(rl_ctx *ctx) { return &ctx->mem; }
RL_API_WATCHED
rl_trace *rl_ctx_trace(rl_ctx *ctx) { RL_API_ENTRY(); return ctx->trace; }
void *rl_ctx_user(rl_ctx *ctx) { return ctx->user; }
void rl_ctx_set_user(rl_ctx *ctx, void *p) { ctx->user = p; }

RL_API_WATCHED
void rl_ctx_set_meta(rl_ctx *ctx, const char *key, const char *value)
{
    RL_API_ENTRY();
    if (ctx->rank != 0)
        return;
    pthread_mutex_lock(&ctx->trace_mu);
    rl_trace_set_meta(ctx->trace, key, value);
    pthread_mutex_unlock(&ctx->trace_mu);
}

void rl_ctx_set_mesh(rl_ctx *ctx, int ndims, const char *const *names, const int *sizes)
{
    if (ctx->rank != 0)
        return;
    pthread_mutex_lock(&ctx->trace_mu);
    rl_trace_set_mesh(ctx->trace, ndims, names, sizes);
    pthread_mutex_unlock(&ctx->trace_mu);
}

RL_API_WATCHED
rl_ctx *rl_ctx_new_standalone(const rl_hw *hw, uint64_t seed)
{
    RL_API_ENTRY();
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = 1;
    o.seed = seed;
    if (hw)
        o.hw = hw;
    return rl_world_create(&o)->ctxs[0];
}

RL_API_WATCHED
void rl_ctx_free_standalone(rl_ctx *ctx)
{
    RL_API_ENTRY();
    if (ctx)
        rl_world_destroy(ctx->world);
}
