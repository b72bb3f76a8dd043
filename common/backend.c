/* backend.c — choosing the backend (sim or cuda) and the runtime's side of the GPU backend:
 * world and rank GPU state, device memory for tensors, collectives through NCCL or the
 * device-memory transport. All CUDA calls go through cuda_backend.h; in a build without
 * CUDA only the probe and the resolution remain, and they say why there is no GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "apiwatch.h"
#include "internal.h"
#ifdef RL_HAVE_CUDA
#include "cuda_backend.h"
#endif

RL_API_WATCHED
int rl_backend_built_cuda(void)
{
    RL_API_ENTRY();
#ifdef RL_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

RL_API_WATCHED
int rl_backend_built_nccl(void)
{
    RL_API_ENTRY();
#ifdef RL_HAVE_NCCL
    return 1;
#else
    return 0;
#endif
}

RL_API_WATCHED
int rl_backend_built_mpi(void)
{
    RL_API_ENTRY();
#ifdef RL_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

RL_API_WATCHED
int rl_backend_probe(char *why, int len)
{
    RL_API_ENTRY();
#ifdef RL_HAVE_CUDA
    char buf[256];
    int n = rl_cuda_device_count(buf, sizeof buf);
    if (n < 1 && why)
        snprintf(why, (size_t)len, "%s", buf);
    return n;
#else
    if (why)
        snprintf(why, (size_t)len, "this build has no CUDA backend (nvcc was not found when it was built, or CUDA=0)");
    return 0;
#endif
}

RL_API_WATCHED
int rl_backend_resolve(const rl_opts *o, int *use_cuda, int *ngpus)
{
    RL_API_ENTRY();
    char why[320];
    *use_cuda = 0;
    *ngpus = 0;
    if (o->backend == RL_BACKEND_SIM)
        return 0;
    int n = rl_backend_probe(why, sizeof why);
    if (n < 1) {
        if (o->backend == RL_BACKEND_CUDA) {
            /* the one-line message the no-driver acceptance test looks for */
            if (strncmp(why, "no CUDA driver/GPU found", 24) == 0)
                fprintf(stderr, "ringlab: no CUDA driver/GPU found; use --backend sim%s\n", why + 24);
            else
                fprintf(stderr, "ringlab: --backend cuda: %s; use --backend sim\n", why);
            return RL_ERR_UNSUPPORTED;
        }
        if (!o->quiet)
            fprintf(stderr, "ringlab: --backend auto: %s, using sim\n", why);
        return 0;
    }
    *use_cuda = 1;
    *ngpus = n;
    if (o->backend == RL_BACKEND_AUTO && !o->quiet)
        fprintf(stderr, "ringlab: --backend auto: %d GPU%s found, using cuda\n", n, n > 1 ? "s" : "");
    return 0;
}

RL_API_WATCHED
int rl_dist_decide(const rl_dist_facts *f, rl_dist_plan *plan, char *msg, int len)
{
    RL_API_ENTRY();
    memset(plan, 0, sizeof *plan);
    msg[0] = 0;
    if (!f->use_cuda) {
        /* sim runs every rank as a thread of this process: a launcher's variables only
         * matter when they say that other processes hold other ranks */
        if (f->env_found == 1 && f->env.world_size > 1) {
            snprintf(msg, (size_t)len,
                     "RANK/WORLD_SIZE say this is process %d of %d, but %s runs every rank as a thread of one "
                     "process: start one process with --ranks %d, or use --backend cuda on GPUs",
                     f->env.rank, f->env.world_size,
                     f->backend == RL_BACKEND_AUTO ? "--backend auto found no GPU, and sim" : "--backend sim",
                     f->env.world_size);
            return RL_ERR_ARG;
        }
        if (f->env_found < 0) { /* a launcher's variables that make no sense: say so, do not guess */
            snprintf(msg, (size_t)len, "%s; %s runs every rank as a thread of one process: unset RANK and "
                     "WORLD_SIZE, or fix them", f->env_err ? f->env_err : "bad launcher variables",
                     f->backend == RL_BACKEND_AUTO ? "--backend auto found no GPU, and sim" : "--backend sim");
            return RL_ERR_ARG;
        }
        return 0;
    }
    if (f->env_found < 0) {
        snprintf(msg, (size_t)len, "--backend cuda with one process per rank: %s", f->env_err ? f->env_err : "bad "
                 "launcher variables");
        return RL_ERR_ARG;
    }
    if (f->env_found == 0) {
        if (!f->under_mpi)
            return 0; /* one process, a thread per rank */
        snprintf(msg, (size_t)len,
                 "started by mpirun, but %s: export RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT "
                 "to each process (mpirun -x), or use a build with MPI (mpicc on PATH when building)",
                 f->built_mpi ? "MPI did not say this process's rank" : "this build has no MPI and no RANK/WORLD_SIZE "
                 "(or OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE) is set");
        return RL_ERR_ARG;
    }
    if (!f->built_nccl) {
        snprintf(msg, (size_t)len,
                 "RANK/WORLD_SIZE say this is process %d of %d, but this build has no NCCL, which one process per "
                 "rank needs: rebuild with NCCL, or start one process with --ranks %d",
                 f->env.rank, f->env.world_size, f->env.world_size);
        return RL_ERR_UNSUPPORTED;
    }
    if (f->env.local_rank >= f->ngpus) {
        snprintf(msg, (size_t)len,
                 "LOCAL_RANK=%d (rank %d of %d) but this process sees %d GPU%s (0..%d): start at most %d process%s "
                 "per node (srun --gpus-per-node, torchrun --nproc-per-node), or check CUDA_VISIBLE_DEVICES",
                 f->env.local_rank, f->env.rank, f->env.world_size, f->ngpus, f->ngpus == 1 ? "" : "s",
                 f->ngpus - 1, f->ngpus, f->ngpus == 1 ? "" : "es");
        return RL_ERR_ARG;
    }
    plan->dist = 1;
    plan->by_mpi = f->under_mpi && f->built_mpi;
    plan->env = f->env;
    return 0;
}

#ifdef RL_HAVE_CUDA

/* ------------------------------------------------------------------ world and ranks */

/* Whether one process per rank checks that every rank calls the same collective (NCCL does
 * not): for --fault mismatch (whose wrong count only a check can see) or with
 * RL_CHECK_COLLECTIVES=1. (In one process the calls meet on the host: rl_comm_meet.) */
static int checks_calls(const rl_world *w)
{
    const char *env = getenv("RL_CHECK_COLLECTIVES");
    if (env && strcmp(env, "0") != 0)
        return 1;
    for (int i = 0; i < w->opts.nfaults; i++)
        if (w->opts.faults[i].kind == RL_FAULT_MISMATCH)
            return 1;
    return 0;
}

/* Says once, at start-up, that the NCCL path checks the ranks' calls (when it does: one
 * process per rank; in one process the ranks' calls meet on the host, as on sim). */
static void say_checks_calls(const rl_world *w)
{
    if (w->dist && checks_calls(w) && !w->opts.quiet)
        fprintf(stderr, "ringlab: --backend cuda: NCCL does not check that ranks call the same collective, so each "
                "collective is checked first: an all-gather of its kind, count, dtype, op and root (as "
                "TORCH_DISTRIBUTED_DEBUG=DETAIL does; for --fault mismatch or RL_CHECK_COLLECTIVES=1)\n");
}

RL_API_WATCHED
int rl_backend_dist_init(rl_world *w, const rl_dist_plan *plan)
{
    RL_API_ENTRY();
    char err[600], name[160], how[320];
    const rl_dist_env *e = &plan->env;
    rl_ctx *c = w->ctxs[w->dist_rank];
    w->ngpus = 1;
    w->gpu_mode = RL_GPU_NCCL;
    if (!(c->gpu = rl_cuda_rank_new(e->local_rank, err, sizeof err))) {
        fprintf(stderr, "ringlab: --backend cuda: rank %d on GPU %d: %s\n", e->rank, e->local_rank, err);
        return RL_ERR_UNSUPPORTED;
    }
    if (rl_cuda_timer_base(c->gpu, rl_wall_now(c), err, sizeof err)) {
        fprintf(stderr, "ringlab: --backend cuda: rank %d: timing events: %s\n", e->rank, err);
        return RL_ERR_UNSUPPORTED;
    }
    unsigned char id[RL_BOOTSTRAP_MAX_ID];
    int bytes = rl_nccl_id_bytes();
    memset(id, 0, sizeof id);
    if (e->rank == 0 && rl_nccl_get_unique_id(id, err, sizeof err)) {
        fprintf(stderr, "ringlab: --backend cuda: rank 0: NCCL unique id: %s\n", err);
        return RL_ERR_UNSUPPORTED;
    }
    if (plan->by_mpi) {
        rl_dist_env from_mpi;
        if (rl_bootstrap_mpi(&from_mpi, id, bytes, err, sizeof err)) {
            fprintf(stderr, "ringlab: --backend cuda: rank %d: %s\n", e->rank, err);
            return RL_ERR_UNSUPPORTED;
        }
        snprintf(how, sizeof how, "by MPI_Bcast");
    } else {
        double timeout = w->opts.timeout_given ? w->opts.timeout_s : 120.0;
        if (rl_bootstrap_tcp(e, id, bytes, timeout, err, sizeof err)) {
            fprintf(stderr, "ringlab: --backend cuda: %s\n", err);
            return RL_ERR_UNSUPPORTED;
        }
        snprintf(how, sizeof how, "by TCP from %s:%d", e->master_addr, e->master_port);
    }
    void *comm = NULL;
    if (rl_nccl_init_rank(e->world_size, e->rank, e->local_rank, id, &comm, err, sizeof err)) {
        fprintf(stderr, "ringlab: --backend cuda: rank %d of %d: NCCL: %s\n", e->rank, e->world_size, err);
        return RL_ERR_UNSUPPORTED;
    }
    c->world_comm->nccl = comm;
    rl_cuda_device_name(e->local_rank, name, sizeof name);
    char meta[240];
    snprintf(meta, sizeof meta, "cuda, %s, NCCL, process of rank %d of %d", name, e->rank, e->world_size);
    rl_trace_set_meta(c->trace, "backend", meta);
    if (!w->opts.quiet)
        fprintf(stderr, "ringlab: --backend cuda: process for rank %d of %d on GPU %d (%s), unique id %s, "
                "collectives through NCCL\n", e->rank, e->world_size, e->local_rank, name, how);
    say_checks_calls(w);
    return 0;
}

RL_API_WATCHED
void rl_backend_abort_nccl(rl_world *w)
{
    RL_API_ENTRY();
    if (!w->dist || w->gpu_mode != RL_GPU_NCCL)
        return;
    rl_ctx *c = w->ctxs[w->dist_rank];
    pthread_mutex_lock(&c->qmu); /* dist mode attaches split communicators under qmu */
    if (!w->nccl_aborted)
        for (rl_comm *cm = c->comms; cm; cm = cm->next_in_ctx)
            rl_nccl_free(cm->nccl, 1);
    w->nccl_aborted = 1;
    pthread_mutex_unlock(&c->qmu);
}

RL_API_WATCHED
int rl_backend_world_init(rl_world *w, int ngpus)
{
    RL_API_ENTRY();
    char err[512];
    int n = w->n;
    if (n < 1 || ngpus < 1)
        return RL_ERR_ARG;
    int nccl = rl_nccl_built() && n <= ngpus && !getenv("RL_NO_NCCL");
    int used = n < ngpus ? n : ngpus;
    w->ngpus = used;
    w->gpu_mode = nccl ? RL_GPU_NCCL : RL_GPU_DEVMEM;
    for (int r = 0; r < n; r++) {
        if (!(w->ctxs[r]->gpu = rl_cuda_rank_new(r % used, err, sizeof err))) {
            fprintf(stderr, "ringlab: --backend cuda: rank %d: %s\n", r, err);
            return RL_ERR_UNSUPPORTED;
        }
        /* the measured timeline's time 0 (issue 6): trace times from CUDA events are on the run's clock */
        if (rl_cuda_timer_base(w->ctxs[r]->gpu, rl_wall_now(w->ctxs[r]), err, sizeof err)) {
            fprintf(stderr, "ringlab: --backend cuda: rank %d: timing events: %s\n", r, err);
            return RL_ERR_UNSUPPORTED;
        }
    }
    char name[160], meta[200];
    rl_cuda_device_name(0, name, sizeof name);
    /* the trace says where it was measured (lab summaries print measured figures then) */
    snprintf(meta, sizeof meta, "cuda, %s, %s", name, nccl ? "NCCL" : "device-memory transport");
    for (int r = 0; r < n; r++)
        rl_trace_set_meta(w->ctxs[r]->trace, "backend", meta);
    if (nccl) {
        int *devs = malloc((size_t)n * sizeof *devs);
        void **comms = calloc((size_t)n, sizeof *comms);
        unsigned char id[256];
        int rc = 0;
        for (int r = 0; r < n; r++)
            devs[r] = r;
        if (rl_nccl_get_unique_id(id, err, sizeof err) || rl_nccl_init_local(n, devs, id, comms, err, sizeof err)) {
            fprintf(stderr, "ringlab: --backend cuda: NCCL: %s\n", err);
            rc = RL_ERR_UNSUPPORTED;
        } else {
            for (int r = 0; r < n; r++)
                w->ctxs[r]->world_comm->nccl = comms[r];
        }
        free(devs);
        free(comms);
        if (rc)
            return rc;
        if (!w->opts.quiet)
            fprintf(stderr, "ringlab: --backend cuda: %d rank%s, one GPU each (%s%s), collectives through NCCL\n", n,
                    n > 1 ? "s" : "", name, ngpus > 1 ? ", ..." : "");
        return 0;
    }
    if (used > 1 && rl_cuda_enable_peers(used, err, sizeof err)) {
        fprintf(stderr, "ringlab: --backend cuda: %s\n", err);
        return RL_ERR_UNSUPPORTED;
    }
    if (!w->opts.quiet)
        fprintf(stderr,
                "ringlab: --backend cuda: %d rank%s on %d GPU%s (%s): %scollectives use the device-memory "
                "transport; NCCL is not used for %s%s\n",
                n, n > 1 ? "s" : "", used, used > 1 ? "s" : "", name, n > used ? "ranks share GPUs, so " : "",
                n > 1 ? "these ranks" : "this rank",
                !rl_nccl_built() ? " (this build has no NCCL)" : (getenv("RL_NO_NCCL") ? " (RL_NO_NCCL is set)" : ""));
    return 0;
}

RL_API_WATCHED
void rl_backend_world_free(rl_world *w)
{
    RL_API_ENTRY();
    if (!w->gpu_mode)
        return;
    for (int r = 0; r < w->n; r++) {
        rl_ctx *c = w->ctxs[r];
        if (!c)
            continue; /* dist mode: another process's rank */
        for (rl_comm *cm = c->comms; cm; cm = cm->next_in_ctx) {
            if (!w->nccl_aborted) /* (the watchdog's abort has freed them already) */
                rl_nccl_free(cm->nccl, w->aborted);
            cm->nccl = NULL;
        }
        rl_cuda_free(c->dist_buf);
        c->dist_buf = NULL;
        rl_cuda_rank_free(c->gpu);
        c->gpu = NULL;
    }
}

/* ------------------------------------------------------------------ memory */

RL_API_WATCHED
void *rl_backend_alloc(rl_ctx *ctx, int64_t bytes, char *err, int errlen)
{
    RL_API_ENTRY();
    return rl_cuda_malloc(ctx ? ctx->gpu : NULL, bytes, err, errlen);
}

RL_API_WATCHED
void rl_backend_free(void *p) { RL_API_ENTRY(); rl_cuda_free(p); }

RL_API_WATCHED
int rl_backend_copy(rl_ctx *ctx, void *dst, const void *src, int64_t bytes, char *err, int errlen)
{
    RL_API_ENTRY();
    return rl_cuda_memcpy(ctx ? ctx->gpu : NULL, 0, dst, src, bytes, err, errlen);
}

RL_API_WATCHED
int rl_backend_comm_copy(rl_ctx *ctx, void *dst, const void *src, int64_t bytes, char *err, int errlen)
{
    RL_API_ENTRY();
    return rl_cuda_memcpy(ctx->gpu, 1, dst, src, bytes, err, errlen);
}

RL_API_WATCHED
void rl_backend_comm_after_compute(rl_ctx *ctx)
{
    RL_API_ENTRY();
    char err[256];
    if (ctx->gpu && rl_cuda_comm_after_compute(ctx->gpu, err, sizeof err))
        rl_world_abort(ctx->world, RL_ERR_UNSUPPORTED, err);
}

RL_API_WATCHED
int rl_backend_comm_ready(rl_ctx *ctx)
{
    RL_API_ENTRY();
    char err[256];
    if (ctx->gpu && rl_cuda_stream_sync(ctx->gpu, 1, err, sizeof err)) {
        rl_world_abort(ctx->world, RL_ERR_UNSUPPORTED, err);
        return RL_ERR_UNSUPPORTED;
    }
    return 0;
}

RL_API_WATCHED
void *rl_backend_scratch_alloc(rl_world *w, int64_t bytes)
{
    RL_API_ENTRY();
    char err[256];
    (void)w;
    return rl_cuda_malloc(NULL, bytes, err, sizeof err);
}

RL_API_WATCHED
void rl_backend_scratch_free(rl_world *w, void *p)
{
    RL_API_ENTRY();
    (void)w;
    rl_cuda_free(p);
}

/* ------------------------------------------------------------------ device transport */

RL_API_WATCHED
int rl_backend_reduce(rl_ctx *ctx, int dtype, int op, int n, const void *const *srcs, void *dst,
                      int64_t lo, int64_t hi)
{
    RL_API_ENTRY();
    char err[256];
    if (rl_cuda_reduce(ctx->gpu, 1, dtype, op, n, srcs, dst, lo, hi, err, sizeof err))
        return rl_error(ctx, RL_ERR_UNSUPPORTED, "device transport: %s", err);
    return 0;
}

/* ------------------------------------------------------------------ NCCL */

RL_API_WATCHED
int rl_backend_work_on_host(const rl_work *w)
{
    RL_API_ENTRY();
    if (w->ctx->world->dist)
        return 0; /* the other ranks are other processes: NCCL does barrier and comm_split too */
    for (int i = 0; i < w->nops; i++)
        if (w->ops[i].kind == RL_COLL_SPLIT || w->ops[i].kind == RL_COLL_BARRIER)
            return 1;
    return 0;
}

RL_API_WATCHED
int rl_backend_nccl_split(rl_ctx *ctx, rl_op_desc *d)
{
    RL_API_ENTRY();
    char err[512];
    void *out = NULL;
    if (rl_nccl_split(d->comm->nccl, d->color, d->key, &out, err, sizeof err))
        return rl_error(ctx, RL_ERR_UNSUPPORTED, "comm_split on %s: %s", d->comm->g->name, err);
    if (d->split_out)
        d->split_out->nccl = out;
    else
        rl_nccl_free(out, 0);
    return 0;
}

/* Waits for the rank's comm stream, noticing an abort (the watchdog) instead of hanging:
 * 0 done, RL_ERR_ABORTED, or -1 with a CUDA/NCCL error in err. */
static int comm_stream_wait(rl_ctx *ctx, char *err, int len)
{
    for (;;) {
        int q = rl_cuda_stream_query(ctx->gpu, 1, err, len);
        if (q < 0)
            return -1;
        if (q == 1)
            return 0;
        if (ctx->world->aborted)
            return RL_ERR_ABORTED;
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
}

/* The rank's small device buffer of at least bytes (grown on demand), or NULL: dist mode's
 * barrier and split, and the check of the ranks' calls. */
static void *dist_buffer(rl_ctx *ctx, int64_t bytes, char *err, int len)
{
    if (ctx->dist_buf_bytes >= bytes)
        return ctx->dist_buf;
    rl_cuda_free(ctx->dist_buf);
    ctx->dist_buf_bytes = 0;
    if (!(ctx->dist_buf = rl_cuda_malloc(ctx->gpu, bytes, err, len)))
        return NULL;
    ctx->dist_buf_bytes = bytes;
    return ctx->dist_buf;
}

/* Dist mode: a barrier across processes is an NCCL all-reduce of one float (the value does
 * not matter; completing it means every rank has arrived). */
static int dist_barrier(rl_ctx *ctx, rl_op_desc *d, void *stream, char *err, int len)
{
    void *one = dist_buffer(ctx, (int64_t)sizeof(float), err, len);
    if (!one)
        return -1;
    return rl_nccl_call(d->comm->nccl, stream, RL_COLL_ALL_REDUCE, one, one, 1, 1, 0, 0, -1, NULL, d->comm->g->n,
                        d->comm->rank, err, len);
}

/* Gathers bytes (a multiple of 4) from every rank of comm into all (host, n x bytes, rank
 * order) by an NCCL all-gather through the rank's device buffer; the bytes travel as f32
 * elements, which all-gather copies and never reads as numbers. 0, RL_ERR_ABORTED, or -1
 * with a message. */
static int gather_host(rl_ctx *ctx, rl_comm *comm, void *stream, const void *mine, int64_t bytes, void *all,
                       char *err, int len)
{
    int n = comm->g->n;
    char *dev = dist_buffer(ctx, (1 + n) * bytes, err, len);
    if (!dev || rl_cuda_memcpy(ctx->gpu, 1, dev, mine, bytes, err, len) ||
        rl_nccl_call(comm->nccl, stream, RL_COLL_ALL_GATHER, dev, dev + bytes, bytes / 4, n * bytes / 4, 0, 0, -1,
                     NULL, n, comm->rank, err, len))
        return -1;
    int st = comm_stream_wait(ctx, err, len);
    return st ? st : rl_cuda_memcpy(ctx->gpu, 1, all, dev + bytes, n * bytes, err, len);
}

/* Dist mode: comm_split across processes. Every rank's (color, key) is gathered by an NCCL
 * all-gather, the new group is built by the same rule as the in-process split
 * (rl_split_members, same name), and ncclCommSplit makes its NCCL communicator. Only the
 * local rank is attached to the new group. 0, RL_ERR_ABORTED, or -1 with a message. */
static int dist_split(rl_ctx *ctx, rl_op_desc *d, void *stream, char *err, int len)
{
    rl_comm *parent = d->comm;
    int n = parent->g->n, me = parent->rank;
    int mine[2] = { d->color, d->key };
    int *pairs = malloc((size_t)(2 * n) * sizeof *pairs), *colors = malloc((size_t)n * sizeof *colors);
    int *keys = malloc((size_t)n * sizeof *keys), *members = malloc((size_t)n * sizeof *members);
    int *granks = malloc((size_t)n * sizeof *granks);
    int rc = pairs && colors && keys && members && granks ? 0 : -1;
    if (rc)
        snprintf(err, (size_t)len, "out of host memory");
    else
        rc = gather_host(ctx, parent, stream, mine, (int64_t)sizeof mine, pairs, err, len);
    if (!rc) {
        for (int q = 0; q < n; q++) {
            colors[q] = pairs[2 * q];
            keys[q] = pairs[2 * q + 1];
        }
        int new_rank, m = rl_split_members(n, colors, keys, me, members, &new_rank);
        if (m > 0) {
            for (int i = 0; i < m; i++)
                granks[i] = parent->g->granks[members[i]];
            char name[48];
            snprintf(name, sizeof name, "%s/%lld.%d", parent->g->name, (long long)d->seq, d->color);
            rl_commgroup *ng = rl_commgroup_new(ctx->world, name, granks, m);
            pthread_mutex_lock(&ctx->qmu); /* the watchdog's abort walks ctx->comms */
            d->split_out = rl_comm_attach(ctx, ng, new_rank);
            pthread_mutex_unlock(&ctx->qmu);
        }
        rc = rl_backend_nccl_split(ctx, d) ? -1 : 0;
        if (rc)
            snprintf(err, (size_t)len, "%s", rl_last_error(ctx));
    }
    free(pairs);
    free(colors);
    free(keys);
    free(members);
    free(granks);
    return rc;
}

/* The cross-rank check of collective d (RL_FINGERPRINT_LEN int64s per rank, gathered):
 * 0, RL_ERR_MISMATCH with the message in err, RL_ERR_ABORTED, or -1 with a CUDA/NCCL error. */
static int check_fingerprint(rl_ctx *ctx, rl_op_desc *d, void *stream, char *err, int len)
{
    int64_t mine[RL_FINGERPRINT_LEN], *all = malloc((size_t)d->comm->g->n * sizeof mine);
    if (!all) {
        snprintf(err, (size_t)len, "out of host memory");
        return -1;
    }
    rl_comm_fingerprint(d, mine);
    int st = gather_host(ctx, d->comm, stream, mine, (int64_t)sizeof mine, all, err, len);
    if (!st)
        st = rl_comm_check_fingerprints(d, all, err, (size_t)len) ? RL_ERR_MISMATCH : 0;
    free(all);
    return st;
}

/* Fails a work item: every flight record FAILED, the world aborted with the message. */
static int nccl_fail(rl_ctx *ctx, rl_work *w, const char *what, const char *err)
{
    char msg[700];
    for (int i = 0; i < w->nops; i++)
        rl_flight_set(ctx, w->ops[i].flight, RL_FR_FAILED);
    snprintf(msg, sizeof msg, "rank %d: %s: %s", ctx->rank, what, err);
    rl_world_abort(ctx->world, RL_ERR_UNSUPPORTED, msg);
    return RL_ERR_UNSUPPORTED;
}

/* The NCCL calls of work item w on the rank's comm stream (after the check of the ranks'
 * calls, when it is on), timed by *timer, and the wait for them: 0, RL_ERR_ABORTED, or the
 * status of a failure already reported (nccl_fail, or a mismatch). */
static int nccl_calls(rl_ctx *ctx, rl_work *w, void *stream, int *timer)
{
    char err[512];
    for (int i = 0; i < w->nops && ctx->world->dist && checks_calls(ctx->world); i++) {
        rl_op_desc *d = &w->ops[i];
        if (d->kind == RL_COLL_SEND || d->kind == RL_COLL_RECV || d->kind == RL_COLL_SPLIT ||
            d->kind == RL_COLL_BARRIER || !d->comm->nccl)
            continue;
        int st = check_fingerprint(ctx, d, stream, err, sizeof err);
        if (st == RL_ERR_ABORTED)
            return RL_ERR_ABORTED;
        if (st == RL_ERR_MISMATCH) {
            for (int k = 0; k < w->nops; k++)
                rl_flight_set(ctx, w->ops[k].flight, RL_FR_FAILED);
            rl_world_abort(ctx->world, RL_ERR_MISMATCH, err);
            return RL_ERR_MISMATCH;
        }
        if (st)
            return nccl_fail(ctx, w, "the check of the ranks' calls", err);
    }
    *timer = rl_cuda_timer_start(ctx->gpu, 1); /* the measured span of the work item (trace times) */
    int grouped = w->nops > 1;
    if (grouped && rl_nccl_group_start(err, sizeof err))
        return nccl_fail(ctx, w, "ncclGroupStart", err);
    for (int i = 0; i < w->nops; i++) {
        rl_op_desc *d = &w->ops[i];
        if (!d->comm->nccl) {
            if (grouped)
                rl_nccl_group_end(err, sizeof err);
            return nccl_fail(ctx, w, rl_coll_name(d->kind), "the communicator has no NCCL communicator");
        }
        int rc;
        if (d->kind == RL_COLL_SPLIT) /* dist mode only (else comm_split takes the host rendezvous) */
            rc = dist_split(ctx, d, stream, err, sizeof err);
        else if (d->kind == RL_COLL_BARRIER) /* likewise */
            rc = dist_barrier(ctx, d, stream, err, sizeof err);
        else
            rc = rl_nccl_call(d->comm->nccl, stream, (int)d->kind, d->send, d->recv, d->send_numel, d->recv_numel,
                              (int)d->dtype, (int)d->op, d->root, d->counts, d->comm->g->n, d->comm->rank, err,
                              sizeof err);
        if (rc == RL_ERR_ABORTED) {
            if (grouped)
                rl_nccl_group_end(err, sizeof err);
            return RL_ERR_ABORTED;
        }
        if (rc) {
            if (grouped)
                rl_nccl_group_end(err + strlen(err), (int)(sizeof err - strlen(err)));
            return nccl_fail(ctx, w, rl_coll_name(d->kind), err);
        }
    }
    if (grouped && rl_nccl_group_end(err, sizeof err))
        return nccl_fail(ctx, w, "ncclGroupEnd", err);
    rl_cuda_timer_stop(ctx->gpu, 1, *timer);
    /* wait for the comm stream, noticing an abort (the watchdog) instead of hanging */
    int waited = comm_stream_wait(ctx, err, sizeof err);
    if (waited == RL_ERR_ABORTED)
        return RL_ERR_ABORTED;
    return waited ? nccl_fail(ctx, w, "NCCL", err) : 0;
}

RL_API_WATCHED
int rl_backend_nccl_execute(rl_ctx *ctx, rl_work *w)
{
    RL_API_ENTRY();
    rl_cuda_rank *g = ctx->gpu;
    pthread_mutex_lock(&ctx->qmu);
    double ready = w->enq_v > ctx->clock[RL_STREAM_COMM] ? w->enq_v : ctx->clock[RL_STREAM_COMM];
    pthread_mutex_unlock(&ctx->qmu);
    double ws = rl_wall_now(ctx);
    for (int i = 0; i < w->nops; i++)
        rl_flight_set(ctx, w->ops[i].flight, RL_FR_STARTED);
    rl_cuda_rank_device(g);
    double *vs = calloc((size_t)(2 * w->nops), sizeof *vs), *ve = vs ? vs + w->nops : NULL;
    if (!vs)
        return nccl_fail(ctx, w, "NCCL", "out of host memory");
    /* one process: the ranks meet on the host first (the check, the counters and sim's
     * virtual spans); one process per rank: each rank's spans are its own, from the model */
    int st = ctx->world->dist ? 0 : rl_comm_meet(ctx, w, ready, vs, ve), timer = -1;
    if (st)
        for (int k = 0; k < w->nops; k++)
            rl_flight_set(ctx, w->ops[k].flight, RL_FR_FAILED);
    else
        st = nccl_calls(ctx, w, rl_cuda_rank_stream(g, 1), &timer);
    double end = ready;
    for (int i = 0; i < w->nops && !st; i++) {
        rl_op_desc *d = &w->ops[i];
        if (ctx->world->dist) {
            double S = (double)(d->kind == RL_COLL_ALL_GATHER || d->kind == RL_COLL_BROADCAST ||
                                        d->kind == RL_COLL_RECV ? d->recv_numel : d->send_numel) *
                       (double)rl_dtype_size(d->dtype);
            vs[i] = ready;
            ve[i] = ready + rl_ab_time(d->kind, d->comm->g->algo, d->comm->g->n, S, d->comm->g->link);
            rl_comm_count_op(d->comm, d);
        }
        /* virtual time stays the cost model's (so traces compare with sim); wall time is real */
        rl_comm_trace_op(ctx, w, d, vs[i], ve[i], ws, timer);
        rl_flight_set(ctx, d->flight, RL_FR_COMPLETED);
        end = ve[i] > end ? ve[i] : end;
    }
    free(vs);
    rl_cuda_timer_drop(g, timer); /* (only if nothing was attached) */
    w->vstart = ready;
    w->vend = end;
    return st;
}

/* ------------------------------------------------------------------ ops on device tensors */

/* The GPU state of the rank an op runs on (ctx, else the tensor's), or NULL with an error. */
static rl_cuda_rank *op_gpu(rl_ctx **ctx, const rl_tensor *t, const char *op)
{
    if (!*ctx && t)
        *ctx = t->ctx;
    if (*ctx && (*ctx)->gpu)
        return (*ctx)->gpu;
    rl_error(*ctx, RL_ERR_UNSUPPORTED, "%s on the GPU: the rank has no GPU state (not a --backend cuda run)", op);
    return NULL;
}

static int op_done(rl_ctx *ctx, const char *op, int rc, const char *err)
{
    return rc ? rl_error(ctx, RL_ERR_UNSUPPORTED, "%s on the GPU: %s", op, err) : 0;
}

static void mat_dims(const rl_tensor *t, int64_t *rows, int64_t *cols)
{
    *cols = t->ndim ? t->shape[t->ndim - 1] : 1;
    *rows = *cols ? t->numel / *cols : 0;
}

RL_API_WATCHED
int rl_backend_matmul(rl_ctx *ctx, const rl_tensor *a, int trans_a, const rl_tensor *b, int trans_b,
                      rl_tensor *c, float beta)
{
    RL_API_ENTRY();
    char err[300];
    rl_cuda_rank *g = op_gpu(&ctx, c, "matmul");
    if (!g)
        return RL_ERR_UNSUPPORTED;
    int64_t ar, ac, br, bc, cr, cc;
    mat_dims(a, &ar, &ac);
    mat_dims(b, &br, &bc);
    mat_dims(c, &cr, &cc);
    int64_t m = trans_a ? ac : ar, k = trans_a ? ar : ac, n = trans_b ? br : bc;
    if (cr != m || cc != n || (trans_b ? bc : br) != k)
        return rl_error(ctx, RL_ERR_ARG, "matmul on the GPU: shapes do not chain (m=%lld, k=%lld, n=%lld)",
                        (long long)m, (long long)k, (long long)n);
    return op_done(ctx, "matmul",
                   rl_cuda_matmul(g, rl_tensor_data(a), a->dtype, trans_a, rl_tensor_data(b), b->dtype, trans_b,
                                  rl_tensor_data(c), c->dtype, m, n, k, beta, err, sizeof err), err);
}

RL_API_WATCHED
int rl_backend_add(rl_ctx *ctx, const rl_tensor *a, const rl_tensor *b, rl_tensor *out)
{
    RL_API_ENTRY();
    char err[300];
    rl_cuda_rank *g = op_gpu(&ctx, out, "add");
    return !g ? RL_ERR_UNSUPPORTED
              : op_done(ctx, "add", rl_cuda_add(g, rl_tensor_data(a), a->dtype, rl_tensor_data(b), b->dtype,
                                                rl_tensor_data(out), out->dtype, out->numel, err, sizeof err), err);
}

RL_API_WATCHED
int rl_backend_axpy(rl_ctx *ctx, float alpha, const rl_tensor *x, rl_tensor *y)
{
    RL_API_ENTRY();
    char err[300];
    rl_cuda_rank *g = op_gpu(&ctx, y, "axpy");
    return !g ? RL_ERR_UNSUPPORTED
              : op_done(ctx, "axpy", rl_cuda_axpy(g, alpha, rl_tensor_data(x), x->dtype, rl_tensor_data(y), y->dtype,
                                                  y->numel, err, sizeof err), err);
}

RL_API_WATCHED
int rl_backend_scale(rl_ctx *ctx, rl_tensor *x, float alpha)
{
    RL_API_ENTRY();
    char err[300];
    rl_cuda_rank *g = op_gpu(&ctx, x, "scale");
    return !g ? RL_ERR_UNSUPPORTED
              : op_done(ctx, "scale", rl_cuda_scale(g, rl_tensor_data(x), x->dtype, alpha, x->numel, err, sizeof err),
                        err);
}

RL_API_WATCHED
int rl_backend_gelu_forward(rl_ctx *ctx, const rl_tensor *x, rl_tensor *y)
{
    RL_API_ENTRY();
    char err[300];
    rl_cuda_rank *g = op_gpu(&ctx, y, "gelu_forward");
    return !g ? RL_ERR_UNSUPPORTED
              : op_done(ctx, "gelu_forward", rl_cuda_gelu_forward(g, rl_tensor_data(x), x->dtype, rl_tensor_data(y),
                                                                  y->dtype, y->numel, err, sizeof err), err);
}

RL_API_WATCHED
int rl_backend_gelu_backward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *dy, rl_tensor *dx)
{
    RL_API_ENTRY();
    char err[300];
    rl_cuda_rank *g = op_gpu(&ctx, dx, "gelu_backward");
    return !g ? RL_ERR_UNSUPPORTED
              : op_done(ctx, "gelu_backward",
                        rl_cuda_gelu_backward(g, rl_tensor_data(x), x->dtype, rl_tensor_data(dy), dy->dtype,
                                              rl_tensor_data(dx), dx->dtype, dx->numel, err, sizeof err), err);
}

RL_API_WATCHED
int rl_backend_adamw_step(rl_ctx *ctx, float lr, float beta1, float beta2, float eps, float weight_decay,
                          int64_t step, rl_tensor *param, const rl_tensor *grad, rl_tensor *master, rl_tensor *m,
                          rl_tensor *v)
{
    RL_API_ENTRY();
    char err[300];
    rl_cuda_rank *g = op_gpu(&ctx, param, "adamw_step");
    if (!g)
        return RL_ERR_UNSUPPORTED;
    if (m->dtype != RL_F32 || v->dtype != RL_F32 || (master && master->dtype != RL_F32))
        return rl_error(ctx, RL_ERR_ARG, "adamw_step on the GPU: master, m and v must be f32");
    return op_done(ctx, "adamw_step",
                   rl_cuda_adamw(g, lr, beta1, beta2, eps, weight_decay, step, rl_tensor_data(param), param->dtype,
                                 rl_tensor_data(grad), grad->dtype, master ? rl_tensor_data(master) : NULL,
                                 rl_tensor_data(m), rl_tensor_data(v), param->numel, err, sizeof err), err);
}

/* ------------------------------------------------------------------ the rest of the ops (issue 6) */

#define DP(t) rl_tensor_data(t)
#define DT(t) ((int)(t)->dtype)
/* Runs a GPU op's call (rc from an rl_cuda_* function) and turns a failure into an error. */
#define GPU_OP(name, t, call)                                                                  \
    do {                                                                                       \
        char err[300];                                                                         \
        rl_cuda_rank *g = op_gpu(&ctx, t, name);                                               \
        if (!g)                                                                                \
            return RL_ERR_UNSUPPORTED;                                                         \
        return op_done(ctx, name, call, err);                                                  \
    } while (0)

/* As GPU_OP, but stores the result in rc (for callers that free something after). */
#define GPU_OP_RC(rc, name, t, call)                                                           \
    do {                                                                                       \
        char err[300];                                                                         \
        rl_cuda_rank *g = op_gpu(&ctx, t, name);                                               \
        rc = !g ? RL_ERR_UNSUPPORTED : op_done(ctx, name, call, err);                          \
    } while (0)

/* The ctx errors are reported on. */
static rl_ctx *ops_owner(rl_ctx *ctx, const rl_tensor *t) { return ctx ? ctx : (t ? t->ctx : NULL); }

RL_API_WATCHED
int rl_backend_lincomb(rl_ctx *ctx, float constant, float ca, const rl_tensor *a, float cb, const rl_tensor *b,
                       rl_tensor *out)
{
    RL_API_ENTRY();
    GPU_OP("lincomb", out,
           rl_cuda_lincomb(g, DP(out), DT(out), out->numel, constant, ca, a ? DP(a) : NULL, a ? DT(a) : 0, cb,
                           b ? DP(b) : NULL, b ? DT(b) : 0, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_bias_add(rl_ctx *ctx, rl_tensor *y, const rl_tensor *bias)
{
    RL_API_ENTRY();
    int64_t rows, n;
    mat_dims(y, &rows, &n);
    GPU_OP("bias_add", y, rl_cuda_bias_add(g, DP(y), DT(y), DP(bias), DT(bias), rows, n, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_bias_backward(rl_ctx *ctx, const rl_tensor *dy, rl_tensor *dbias)
{
    RL_API_ENTRY();
    int64_t rows, n;
    mat_dims(dy, &rows, &n);
    GPU_OP("bias_bwd", dbias,
           rl_cuda_bias_backward(g, DP(dy), DT(dy), DP(dbias), DT(dbias), rows, n, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_layernorm_forward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *gamma, const rl_tensor *beta,
                                 float eps, rl_tensor *y, rl_tensor *mean, rl_tensor *rstd)
{
    RL_API_ENTRY();
    int64_t rows, n;
    mat_dims(x, &rows, &n);
    GPU_OP("layernorm", y,
           rl_cuda_layernorm_forward(g, DP(x), DT(x), DP(gamma), DT(gamma), beta ? DP(beta) : NULL,
                                     beta ? DT(beta) : 0, eps, DP(y), DT(y), DP(mean), DP(rstd), rows, n, err,
                                     sizeof err));
}

RL_API_WATCHED
int rl_backend_layernorm_backward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *gamma, const rl_tensor *mean,
                                  const rl_tensor *rstd, const rl_tensor *dy, rl_tensor *dx, rl_tensor *dgamma,
                                  rl_tensor *dbeta)
{
    RL_API_ENTRY();
    int64_t rows, n;
    mat_dims(x, &rows, &n);
    GPU_OP("layernorm_bwd", dx,
           rl_cuda_layernorm_backward(g, DP(x), DT(x), DP(gamma), DT(gamma), DP(mean), DP(rstd), DP(dy), DT(dy),
                                      DP(dx), DT(dx), dgamma ? DP(dgamma) : NULL, dgamma ? DT(dgamma) : 0,
                                      dbeta ? DP(dbeta) : NULL, dbeta ? DT(dbeta) : 0, rows, n, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_softmax_forward(rl_ctx *ctx, const rl_tensor *x, rl_tensor *y)
{
    RL_API_ENTRY();
    int64_t rows, n;
    mat_dims(x, &rows, &n);
    GPU_OP("softmax", y, rl_cuda_softmax_forward(g, DP(x), DT(x), DP(y), DT(y), rows, n, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_softmax_backward(rl_ctx *ctx, const rl_tensor *y, const rl_tensor *dy, rl_tensor *dx)
{
    RL_API_ENTRY();
    int64_t rows, n;
    mat_dims(y, &rows, &n);
    GPU_OP("softmax_bwd", dx,
           rl_cuda_softmax_backward(g, DP(y), DT(y), DP(dy), DT(dy), DP(dx), DT(dx), rows, n, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_attention_forward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                                 int n_heads, rl_tensor *probs, rl_tensor *out)
{
    RL_API_ENTRY();
    GPU_OP("attention", out,
           rl_cuda_attention_forward(g, DP(q), DT(q), DP(k), DT(k), DP(v), DT(v), DP(probs), DP(out), DT(out),
                                     q->shape[0], q->shape[1], q->shape[2], n_heads, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_attention_backward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                                  const rl_tensor *probs, const rl_tensor *dout, int n_heads, rl_tensor *dq,
                                  rl_tensor *dk, rl_tensor *dv)
{
    RL_API_ENTRY();
    GPU_OP("attention_bwd", dq,
           rl_cuda_attention_backward(g, DP(q), DT(q), DP(k), DT(k), DP(v), DT(v), DP(probs), DP(dout), DT(dout),
                                      DP(dq), DT(dq), DP(dk), DT(dk), DP(dv), DT(dv), q->shape[0], q->shape[1],
                                      q->shape[2], n_heads, err, sizeof err));
}

/* ids (int) widened to row indices (int64) for the row kernels; NULL when out of memory. */
static int64_t *ids_to_rows(const int *ids, int64_t n)
{
    int64_t *rows = malloc((size_t)(n > 0 ? n : 1) * sizeof *rows);
    for (int64_t i = 0; rows && i < n; i++)
        rows[i] = ids[i];
    return rows;
}

RL_API_WATCHED
int rl_backend_embedding_forward(rl_ctx *ctx, const rl_tensor *table, const int *ids, int accumulate,
                                 rl_tensor *out)
{
    RL_API_ENTRY();
    int64_t n, h;
    mat_dims(out, &n, &h);
    int64_t *rows = ids_to_rows(ids, n);
    if (!rows)
        return rl_error(ops_owner(ctx, out), RL_ERR_NOMEM, "embedding on the GPU: out of host memory");
    int rc;
    {
        GPU_OP_RC(rc, "embedding", out,
                  rl_cuda_gather_rows(g, DP(table), DT(table), rows, NULL, accumulate, DP(out), DT(out), n, h, err,
                                      sizeof err));
    }
    free(rows);
    return rc;
}

RL_API_WATCHED
int rl_backend_embedding_backward(rl_ctx *ctx, const int *ids, const rl_tensor *dout, rl_tensor *dtable)
{
    RL_API_ENTRY();
    int64_t n, h;
    mat_dims(dout, &n, &h);
    int64_t *rows = ids_to_rows(ids, n);
    if (!rows)
        return rl_error(ops_owner(ctx, dtable), RL_ERR_NOMEM, "embedding_bwd on the GPU: out of host memory");
    int rc;
    {
        GPU_OP_RC(rc, "embedding_bwd", dtable,
                  rl_cuda_scatter_add_rows(g, DP(dout), DT(dout), rows, NULL, DP(dtable), DT(dtable), dtable->numel,
                                           n, h, err, sizeof err));
    }
    free(rows);
    return rc;
}

RL_API_WATCHED
int rl_backend_gather_rows(rl_ctx *ctx, const rl_tensor *src, const int64_t *rows, const float *scale,
                           rl_tensor *dst)
{
    RL_API_ENTRY();
    int64_t n, h;
    mat_dims(dst, &n, &h);
    GPU_OP("gather_rows", dst,
           rl_cuda_gather_rows(g, DP(src), DT(src), rows, scale, 0, DP(dst), DT(dst), n, h, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_scatter_add_rows(rl_ctx *ctx, const rl_tensor *src, const int64_t *rows, const float *scale,
                                rl_tensor *dst)
{
    RL_API_ENTRY();
    int64_t n, h;
    mat_dims(src, &n, &h);
    GPU_OP("scatter_add_rows", dst,
           rl_cuda_scatter_add_rows(g, DP(src), DT(src), rows, scale, DP(dst), DT(dst), dst->numel, n, h, err,
                                    sizeof err));
}

RL_API_WATCHED
int rl_backend_cross_entropy(rl_ctx *ctx, const rl_tensor *logits, const int *targets, float grad_scale,
                             rl_tensor *dlogits, double *total)
{
    RL_API_ENTRY();
    int64_t rows, V;
    mat_dims(logits, &rows, &V);
    float gs = rows ? grad_scale / (float)rows : 0.0f;
    GPU_OP("cross_entropy", logits,
           rl_cuda_cross_entropy(g, DP(logits), DT(logits), targets, gs, dlogits ? DP(dlogits) : NULL,
                                 dlogits ? DT(dlogits) : 0, rows, V, total, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_mse_loss(rl_ctx *ctx, const rl_tensor *pred, const rl_tensor *target, float grad_scale,
                        rl_tensor *dpred, double *total)
{
    RL_API_ENTRY();
    int64_t n = pred->numel;
    float gs = n ? 2.0f * grad_scale / (float)n : 0.0f;
    GPU_OP("mse_loss", pred,
           rl_cuda_mse(g, DP(pred), DT(pred), DP(target), DT(target), gs, dpred ? DP(dpred) : NULL,
                       dpred ? DT(dpred) : 0, n, total, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_sum(rl_ctx *ctx, const rl_tensor *x, int squares, double *out)
{
    RL_API_ENTRY();
    GPU_OP(squares ? "sum_squares" : "sum", x, rl_cuda_sum(g, DP(x), DT(x), x->numel, squares, out, err, sizeof err));
}

RL_API_WATCHED
int rl_backend_sgd_step(rl_ctx *ctx, float lr, rl_tensor *param, const rl_tensor *grad, rl_tensor *master)
{
    RL_API_ENTRY();
    GPU_OP("sgd", param,
           rl_cuda_sgd(g, lr, DP(param), DT(param), DP(grad), DT(grad), master ? DP(master) : NULL, param->numel, err,
                       sizeof err));
}

RL_API_WATCHED
int rl_backend_tensor_copy(rl_tensor *dst, const rl_tensor *src)
{
    RL_API_ENTRY();
    rl_ctx *ctx = dst->device == RL_CUDA ? dst->ctx : src->ctx;
    if (dst->device != src->device) { /* host ↔ device: one copy when the dtypes agree */
        char err[300];
        if (dst->dtype != src->dtype)
            return RL_ERR_UNSUPPORTED; /* the caller goes through host f32 */
        return rl_backend_copy(ctx, DP(dst), DP(src), rl_tensor_bytes(src), err, sizeof err)
                   ? rl_error(ctx, RL_ERR_UNSUPPORTED, "copy '%s' -> '%s': %s", src->name, dst->name, err)
                   : 0;
    }
    GPU_OP("copy", dst,
           rl_cuda_lincomb(g, DP(dst), DT(dst), dst->numel, 0.0f, 1.0f, DP(src), DT(src), 0.0f, NULL, 0, err,
                           sizeof err));
}

RL_API_WATCHED
int rl_backend_tensor_fill(rl_tensor *t, float v)
{
    RL_API_ENTRY();
    rl_ctx *ctx = t->ctx;
    GPU_OP("fill", t, rl_cuda_lincomb(g, DP(t), DT(t), t->numel, v, 0.0f, NULL, 0, 0.0f, NULL, 0, err, sizeof err));
}

/* ------------------------------------------------------------------ measured timeline (issue 6) */

RL_API_WATCHED
int rl_backend_has_gpu(const rl_ctx *ctx) { RL_API_ENTRY(); return ctx && ctx->gpu; }

RL_API_WATCHED
void rl_backend_no_gpu_reason(const rl_ctx *ctx, char *msg, int len)
{
    RL_API_ENTRY();
    snprintf(msg, (size_t)len, "%s",
             !ctx ? "the op has no rank context (pass the ctx of a --backend cuda run)"
                  : "this rank runs on the sim backend (no GPU state); device tensors need --backend cuda");
}

/* Writes one measured span into the rank's trace (called by the resolver). */
static void put_span(void *arg, int64_t index, double start, double end)
{
    rl_ctx *ctx = arg;
    pthread_mutex_lock(&ctx->trace_mu);
    if (index >= 0 && (size_t)index < ctx->trace->n) {
        ctx->trace->ev[index].vstart = start;
        ctx->trace->ev[index].vend = end;
    }
    pthread_mutex_unlock(&ctx->trace_mu);
}

/* Trace events waiting for their timers before the rank resolves them on its own (a run
 * without rl_step_end would otherwise hold every CUDA event until its end). */
#define RL_TIMELINE_BATCH 8192

RL_API_WATCHED
void rl_backend_op_begin(rl_ctx *ctx, const char *name)
{
    RL_API_ENTRY();
    if (!ctx || !ctx->gpu)
        return;
    if (rl_cuda_timeline_pending(ctx->gpu) >= RL_TIMELINE_BATCH)
        rl_cuda_timeline_resolve(ctx->gpu, put_span, ctx);
    rl_cuda_op_begin(ctx->gpu, name);
}

RL_API_WATCHED
int rl_backend_op_end(rl_ctx *ctx)
{
    RL_API_ENTRY();
    return ctx && ctx->gpu ? rl_cuda_op_end(ctx->gpu) : -1;
}

RL_API_WATCHED
int rl_backend_timer_start(rl_ctx *ctx, int s)
{
    RL_API_ENTRY();
    return ctx && ctx->gpu ? rl_cuda_timer_start(ctx->gpu, s) : -1;
}

RL_API_WATCHED
void rl_backend_timer_stop(rl_ctx *ctx, int s, int timer)
{
    RL_API_ENTRY();
    if (ctx && ctx->gpu && timer >= 0)
        rl_cuda_timer_stop(ctx->gpu, s, timer);
}

RL_API_WATCHED
void rl_backend_timer_drop(rl_ctx *ctx, int timer)
{
    RL_API_ENTRY();
    if (ctx && ctx->gpu && timer >= 0)
        rl_cuda_timer_drop(ctx->gpu, timer);
}

RL_API_WATCHED
void rl_backend_trace_timed(rl_ctx *ctx, rl_trace_event *e, const int *tags, char phase, int timer)
{
    RL_API_ENTRY();
    if (!ctx)
        return;
    if (timer < 0 || !ctx->gpu) {
        rl_ctx_trace_event(ctx, e, tags, phase);
        return;
    }
    e->rank = ctx->rank;
    memcpy(e->tags, tags, sizeof e->tags);
    e->phase = phase;
    pthread_mutex_lock(&ctx->trace_mu);
    int ok = rl_trace_add(ctx->trace, e) == 0;
    int64_t index = (int64_t)ctx->trace->n - 1;
    pthread_mutex_unlock(&ctx->trace_mu);
    if (!ok || rl_cuda_timer_attach(ctx->gpu, timer, index))
        rl_cuda_timer_drop(ctx->gpu, timer);
}

RL_API_WATCHED
void rl_backend_timeline_resolve(rl_ctx *ctx)
{
    RL_API_ENTRY();
    if (ctx && ctx->gpu)
        rl_cuda_timeline_resolve(ctx->gpu, put_span, ctx);
}

RL_API_WATCHED
double rl_backend_stream_now(rl_ctx *ctx, int s)
{
    RL_API_ENTRY();
    return ctx && ctx->gpu ? rl_cuda_stream_now(ctx->gpu, s) : -1;
}

RL_API_WATCHED
void rl_backend_nvtx_push(rl_ctx *ctx, const char *name)
{
    RL_API_ENTRY();
    if (ctx && ctx->gpu)
        rl_cuda_nvtx_push(name);
}

RL_API_WATCHED
void rl_backend_nvtx_pop(rl_ctx *ctx)
{
    RL_API_ENTRY();
    if (ctx && ctx->gpu)
        rl_cuda_nvtx_pop();
}

RL_API_WATCHED
int rl_backend_delay(rl_ctx *ctx, const char *name, double seconds)
{
    RL_API_ENTRY();
    if (!ctx || !ctx->gpu)
        return -1;
    rl_cuda_nvtx_push(name);
    int timer = rl_cuda_timer_start(ctx->gpu, 0);
    struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
    nanosleep(&ts, NULL);
    rl_cuda_timer_stop(ctx->gpu, 0, timer);
    rl_cuda_nvtx_pop();
    return timer;
}

#else /* no CUDA in this build: never reached (rl_backend_resolve never picks cuda) */

RL_API_WATCHED
int rl_backend_world_init(rl_world *w, int ngpus)
{
    RL_API_ENTRY();
    (void)w;
    (void)ngpus;
    return RL_ERR_UNSUPPORTED;
}
RL_API_WATCHED
int rl_backend_dist_init(rl_world *w, const rl_dist_plan *plan)
{
    RL_API_ENTRY();
    (void)w;
    (void)plan;
    return RL_ERR_UNSUPPORTED;
}
RL_API_WATCHED
void rl_backend_abort_nccl(rl_world *w) { RL_API_ENTRY(); (void)w; }
RL_API_WATCHED
void rl_backend_world_free(rl_world *w) { RL_API_ENTRY(); (void)w; }
RL_API_WATCHED
void *rl_backend_alloc(rl_ctx *ctx, int64_t bytes, char *err, int errlen)
{
    RL_API_ENTRY();
    (void)ctx;
    (void)bytes;
    snprintf(err, (size_t)errlen, "this build has no CUDA backend");
    return NULL;
}
RL_API_WATCHED
void rl_backend_free(void *p) { RL_API_ENTRY(); (void)p; }
RL_API_WATCHED
int rl_backend_copy(rl_ctx *ctx, void *dst, const void *src, int64_t bytes, char *err, int errlen)
{
    RL_API_ENTRY();
    (void)ctx;
    memmove(dst, src, (size_t)bytes);
    (void)err;
    (void)errlen;
    return 0;
}
RL_API_WATCHED
int rl_backend_comm_copy(rl_ctx *ctx, void *dst, const void *src, int64_t bytes, char *err, int errlen)
{
    RL_API_ENTRY();
    return rl_backend_copy(ctx, dst, src, bytes, err, errlen);
}
RL_API_WATCHED
void rl_backend_comm_after_compute(rl_ctx *ctx) { RL_API_ENTRY(); (void)ctx; }
RL_API_WATCHED
int rl_backend_comm_ready(rl_ctx *ctx)
{
    RL_API_ENTRY();
    (void)ctx;
    return 0;
}
RL_API_WATCHED
void *rl_backend_scratch_alloc(rl_world *w, int64_t bytes)
{
    RL_API_ENTRY();
    (void)w;
    return malloc((size_t)bytes);
}
RL_API_WATCHED
void rl_backend_scratch_free(rl_world *w, void *p)
{
    RL_API_ENTRY();
    (void)w;
    free(p);
}
RL_API_WATCHED
int rl_backend_reduce(rl_ctx *ctx, int dtype, int op, int n, const void *const *srcs, void *dst, int64_t lo,
                      int64_t hi)
{
    RL_API_ENTRY();
    (void)dtype, (void)op, (void)n, (void)srcs, (void)dst, (void)lo, (void)hi;
    return rl_error(ctx, RL_ERR_UNSUPPORTED, "this build has no CUDA backend");
}
RL_API_WATCHED
int rl_backend_work_on_host(const rl_work *w)
{
    RL_API_ENTRY();
    (void)w;
    return 1;
}
RL_API_WATCHED
int rl_backend_nccl_split(rl_ctx *ctx, rl_op_desc *d)
{
    RL_API_ENTRY();
    (void)d;
    return rl_error(ctx, RL_ERR_UNSUPPORTED, "this build has no CUDA backend");
}
RL_API_WATCHED
int rl_backend_nccl_execute(rl_ctx *ctx, rl_work *w)
{
    RL_API_ENTRY();
    (void)w;
    return rl_error(ctx, RL_ERR_UNSUPPORTED, "this build has no CUDA backend");
}
static int no_gpu_op(rl_ctx *ctx, const char *op)
{
    return rl_error(ctx, RL_ERR_UNSUPPORTED, "%s: this build has no CUDA backend; run with --backend sim", op);
}
RL_API_WATCHED
int rl_backend_matmul(rl_ctx *ctx, const rl_tensor *a, int trans_a, const rl_tensor *b, int trans_b,
                      rl_tensor *c, float beta)
{
    RL_API_ENTRY();
    (void)a, (void)trans_a, (void)b, (void)trans_b, (void)c, (void)beta;
    return no_gpu_op(ctx, "matmul");
}
RL_API_WATCHED
int rl_backend_add(rl_ctx *ctx, const rl_tensor *a, const rl_tensor *b, rl_tensor *out)
{
    RL_API_ENTRY();
    (void)a, (void)b, (void)out;
    return no_gpu_op(ctx, "add");
}
RL_API_WATCHED
int rl_backend_axpy(rl_ctx *ctx, float alpha, const rl_tensor *x, rl_tensor *y)
{
    RL_API_ENTRY();
    (void)alpha, (void)x, (void)y;
    return no_gpu_op(ctx, "axpy");
}
RL_API_WATCHED
int rl_backend_scale(rl_ctx *ctx, rl_tensor *x, float alpha)
{
    RL_API_ENTRY();
    (void)x, (void)alpha;
    return no_gpu_op(ctx, "scale");
}
RL_API_WATCHED
int rl_backend_gelu_forward(rl_ctx *ctx, const rl_tensor *x, rl_tensor *y)
{
    RL_API_ENTRY();
    (void)x, (void)y;
    return no_gpu_op(ctx, "gelu_forward");
}
RL_API_WATCHED
int rl_backend_gelu_backward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *dy, rl_tensor *dx)
{
    RL_API_ENTRY();
    (void)x, (void)dy, (void)dx;
    return no_gpu_op(ctx, "gelu_backward");
}
RL_API_WATCHED
int rl_backend_adamw_step(rl_ctx *ctx, float lr, float beta1, float beta2, float eps, float weight_decay,
                          int64_t step, rl_tensor *param, const rl_tensor *grad, rl_tensor *master, rl_tensor *m,
                          rl_tensor *v)
{
    RL_API_ENTRY();
    (void)lr, (void)beta1, (void)beta2, (void)eps, (void)weight_decay, (void)step;
    (void)param, (void)grad, (void)master, (void)m, (void)v;
    return no_gpu_op(ctx, "adamw_step");
}
/* Stubs of the GPU ops (never reached: no tensor is on a GPU in this build). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
RL_API_WATCHED
int rl_backend_lincomb(rl_ctx *ctx, float constant, float ca, const rl_tensor *a, float cb, const rl_tensor *b,
                       rl_tensor *out) { RL_API_ENTRY(); return no_gpu_op(ctx, "lincomb"); }
RL_API_WATCHED
int rl_backend_bias_add(rl_ctx *ctx, rl_tensor *y, const rl_tensor *bias)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "bias_add");
}
RL_API_WATCHED
int rl_backend_bias_backward(rl_ctx *ctx, const rl_tensor *dy, rl_tensor *dbias)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "bias_bwd");
}
RL_API_WATCHED
int rl_backend_layernorm_forward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *gamma, const rl_tensor *beta,
                                 float eps, rl_tensor *y, rl_tensor *mean, rl_tensor *rstd)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "layernorm");
}
RL_API_WATCHED
int rl_backend_layernorm_backward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *gamma, const rl_tensor *mean,
                                  const rl_tensor *rstd, const rl_tensor *dy, rl_tensor *dx, rl_tensor *dgamma,
                                  rl_tensor *dbeta)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "layernorm_bwd");
}
RL_API_WATCHED
int rl_backend_softmax_forward(rl_ctx *ctx, const rl_tensor *x, rl_tensor *y)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "softmax");
}
RL_API_WATCHED
int rl_backend_softmax_backward(rl_ctx *ctx, const rl_tensor *y, const rl_tensor *dy, rl_tensor *dx)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "softmax_bwd");
}
RL_API_WATCHED
int rl_backend_attention_forward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                                 int n_heads, rl_tensor *probs, rl_tensor *out)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "attention");
}
RL_API_WATCHED
int rl_backend_attention_backward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                                  const rl_tensor *probs, const rl_tensor *dout, int n_heads, rl_tensor *dq,
                                  rl_tensor *dk, rl_tensor *dv)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "attention_bwd");
}
RL_API_WATCHED
int rl_backend_embedding_forward(rl_ctx *ctx, const rl_tensor *table, const int *ids, int accumulate,
                                 rl_tensor *out)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "embedding");
}
RL_API_WATCHED
int rl_backend_embedding_backward(rl_ctx *ctx, const int *ids, const rl_tensor *dout, rl_tensor *dtable)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "embedding_bwd");
}
RL_API_WATCHED
int rl_backend_gather_rows(rl_ctx *ctx, const rl_tensor *src, const int64_t *rows, const float *scale,
                           rl_tensor *dst)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "gather_rows");
}
RL_API_WATCHED
int rl_backend_scatter_add_rows(rl_ctx *ctx, const rl_tensor *src, const int64_t *rows, const float *scale,
                                rl_tensor *dst)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "scatter_add_rows");
}
RL_API_WATCHED
int rl_backend_cross_entropy(rl_ctx *ctx, const rl_tensor *logits, const int *targets, float grad_scale,
                             rl_tensor *dlogits, double *total)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "cross_entropy");
}
RL_API_WATCHED
int rl_backend_mse_loss(rl_ctx *ctx, const rl_tensor *pred, const rl_tensor *target, float grad_scale,
                        rl_tensor *dpred, double *total)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "mse_loss");
}
RL_API_WATCHED
int rl_backend_sum(rl_ctx *ctx, const rl_tensor *x, int squares, double *out)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "sum");
}
RL_API_WATCHED
int rl_backend_sgd_step(rl_ctx *ctx, float lr, rl_tensor *param, const rl_tensor *grad, rl_tensor *master)
{
    RL_API_ENTRY();
    return no_gpu_op(ctx, "sgd");
}
RL_API_WATCHED
int rl_backend_tensor_copy(rl_tensor *dst, const rl_tensor *src)
{
    RL_API_ENTRY();
    return no_gpu_op(dst->ctx, "copy");
}
RL_API_WATCHED
int rl_backend_tensor_fill(rl_tensor *t, float v) { RL_API_ENTRY(); return no_gpu_op(t->ctx, "fill"); }
RL_API_WATCHED
int rl_backend_has_gpu(const rl_ctx *ctx) { RL_API_ENTRY(); return 0; }
RL_API_WATCHED
void rl_backend_no_gpu_reason(const rl_ctx *ctx, char *msg, int len)
{
    RL_API_ENTRY();
    snprintf(msg, (size_t)len, "this build has no CUDA backend (built without nvcc, or with CUDA=0)");
}
RL_API_WATCHED
void rl_backend_op_begin(rl_ctx *ctx, const char *name) { RL_API_ENTRY();}
RL_API_WATCHED
int rl_backend_op_end(rl_ctx *ctx) { RL_API_ENTRY(); return -1; }
RL_API_WATCHED
int rl_backend_timer_start(rl_ctx *ctx, int s) { RL_API_ENTRY(); return -1; }
RL_API_WATCHED
void rl_backend_timer_stop(rl_ctx *ctx, int s, int timer) { RL_API_ENTRY();}
RL_API_WATCHED
void rl_backend_timer_drop(rl_ctx *ctx, int timer) { RL_API_ENTRY();}
RL_API_WATCHED
void rl_backend_trace_timed(rl_ctx *ctx, rl_trace_event *e, const int *tags, char phase, int timer)
{
    RL_API_ENTRY();
    rl_ctx_trace_event(ctx, e, tags, phase);
}
RL_API_WATCHED
void rl_backend_timeline_resolve(rl_ctx *ctx) { RL_API_ENTRY();}
RL_API_WATCHED
double rl_backend_stream_now(rl_ctx *ctx, int s) { RL_API_ENTRY(); return -1; }
RL_API_WATCHED
void rl_backend_nvtx_push(rl_ctx *ctx, const char *name) { RL_API_ENTRY();}
RL_API_WATCHED
void rl_backend_nvtx_pop(rl_ctx *ctx) { RL_API_ENTRY();}
RL_API_WATCHED
int rl_backend_delay(rl_ctx *ctx, const char *name, double seconds) { RL_API_ENTRY(); return -1; }
#pragma GCC diagnostic pop
#endif
