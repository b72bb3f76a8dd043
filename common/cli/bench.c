/* bench.c — `ringlab bench COLLECTIVE`: the nccl-tests table (size, count, type, redop,
 * root, then out-of-place and in-place time/algbw/busbw/#wrong) on the chosen backend.
 * On sim the first table is modelled (virtual) time for --hw; the second is wall time on
 * this machine, where ranks are threads moving real bytes through shared memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "optnum.h"
#include "backend.h"
#include "ringlab.h"

#define MAX_ROWS 64

typedef struct {
    int64_t bytes, count;
    double vtime[2], wtime[2]; /* per call, seconds: [0] out-of-place, [1] in-place */
    int64_t wrong[2];
} bench_row;

typedef struct {
    int kind;          /* rl_coll_kind, or -1 for sendrecv */
    rl_dtype dtype;
    rl_redop op;
    int root;
    int64_t min_bytes, max_bytes;
    double factor;
    int64_t step_bytes;
    int iters, warmup, check;
    int process_rank;  /* one process per rank: this process's rank; -1 when ranks are threads */
    int64_t own_wrong; /* one process per rank: wrong values this rank found in its own results */
    int nrows;
    int on_gpu;        /* the run went to --backend cuda */
    double last_note;  /* rank 0: wall time of the last progress line (0: none yet) */
    bench_row rows[MAX_ROWS];
} bench_cfg;

#define KIND_SENDRECV (-1)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ringlab bench COLLECTIVE [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-n ITERS] [-w WARMUP]\n"
            "                    [-c 0|1] [-d float|bfloat16] [-o sum|avg|max|min] [-r ROOT] [common options]\n"
            "COLLECTIVE: all_reduce reduce_scatter all_gather broadcast reduce all_to_all all_to_allv sendrecv, or gemm\n"
            "  -b, -e     smallest and largest size in bytes (suffixes K, M, G; default 8 and 128M)\n"
            "  -f, -i     multiply (default 2) or add (-i) between sizes\n"
            "  -n, -w     timed and warm-up iterations (default 20 and 5)\n"
            "  -c         check results (#wrong column; default 1)\n"
            "  -d, -o, -r data type, reduction op, root (as nccl-tests)\n"
            "Size is the whole buffer as in nccl-tests: for reduce_scatter the input, for all_gather the\n"
            "output, for all_to_all one rank's buffer. algbw = size / time; busbw = algbw x 2(n-1)/n\n"
            "(all_reduce), (n-1)/n (reduce_scatter, all_gather, all_to_all), 1 (others); GB/s = 1e9 B/s.\n"
            "The first table is modelled time on --hw; the second is wall time on this machine.\n\n");
    rl_opts_usage(f, NULL);
}

/* bench's options that take a number, with their ranges (sizes -b -e -i are parse_size's). */
static const rl_optnum_decl bench_numbers[] = {
    { "-f", 1.01, 1024, 0 }, { "-n", 1, 100000, 1 }, { "-w", 0, 100000, 1 }, { "-c", 0, 1, 1 }, { "-r", 0, 4095, 1 },
};
#define NBENCH_NUMBERS (int)(sizeof bench_numbers / sizeof bench_numbers[0])

static int parse_size(const char *s, int64_t *out)
{
    if (!strchr("0123456789.", s[0]) || strpbrk(s, "xXpP")) /* decimal digits first: no nan, inf, hex, sign */
        return -1;
    char *end;
    double v = strtod(s, &end);
    double mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1024, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1024.0 * 1024, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1024.0 * 1024 * 1024, end++;
    if (end == s || *end || !(v >= 0) || v * mul > 64.0 * 1024 * 1024 * 1024)
        return -1;
    *out = (int64_t)(v * mul);
    return 0;
}

/* The value rank q holds at element i of its send buffer: small integers, so sums are exact
 * in bf16 too. */
static float pattern(int q, int64_t i) { return (float)((q * 7 + i) % 5 + 1); }

/* Element counts of send and recv for a size in bytes. */
static void counts_for(const bench_cfg *b, int n, int64_t bytes, int64_t *send, int64_t *recv)
{
    int64_t c = bytes / (int64_t)rl_dtype_size(b->dtype);
    switch (b->kind) {
    case RL_COLL_REDUCE_SCATTER: *recv = c / n; *send = *recv * n; break;
    case RL_COLL_ALL_GATHER: *send = c / n; *recv = *send * n; break;
    case RL_COLL_ALL_TO_ALL:
    case RL_COLL_ALL_TO_ALLV: *send = *recv = c / n * n; break;
    default: *send = *recv = c; break;
    }
}

static float reduce_ref(const bench_cfg *b, int n, int64_t i)
{
    float acc = pattern(0, i);
    for (int q = 1; q < n; q++) {
        float v = pattern(q, i);
        if (b->op == RL_MAX)
            acc = v > acc ? v : acc;
        else if (b->op == RL_MIN)
            acc = v < acc ? v : acc;
        else
            acc += v;
    }
    if (b->op == RL_AVG)
        acc /= (float)n;
    return acc;
}

/* Expected value of recv element i on rank r. */
static float expected(const bench_cfg *b, int n, int r, int64_t i, int64_t send_count, int64_t recv_count)
{
    int64_t chunk;
    switch (b->kind) {
    case RL_COLL_ALL_REDUCE:
    case RL_COLL_REDUCE: return reduce_ref(b, n, i);
    case RL_COLL_REDUCE_SCATTER: return reduce_ref(b, n, (int64_t)r * recv_count + i);
    case RL_COLL_ALL_GATHER: return pattern((int)(i / send_count), i % send_count);
    case RL_COLL_BROADCAST: return pattern(b->root, i);
    case RL_COLL_ALL_TO_ALL:
    case RL_COLL_ALL_TO_ALLV:
        chunk = recv_count / n;
        return pattern((int)(i / chunk), (int64_t)r * chunk + i % chunk);
    default: return pattern((r + n - 1) % n, i); /* sendrecv: from the left neighbour */
    }
}

/* Fills a send buffer with rank r's pattern (one bulk copy, host or device). */
static void fill_send(rl_tensor *t, float *host, int r)
{
    for (int64_t i = 0; i < t->numel; i++)
        host[i] = pattern(r, i);
    rl_tensor_from_f32(t, host, t->numel);
}

static int64_t count_wrong(const bench_cfg *b, int n, int r, const rl_tensor *recv, float *host, int64_t sc,
                           int64_t rc)
{
    if (b->kind == RL_COLL_REDUCE && r != b->root)
        return 0;
    rl_tensor_to_f32(recv, host, recv->numel);
    int64_t wrong = 0;
    for (int64_t i = 0; i < recv->numel; i++) {
        float want = expected(b, n, r, i, sc, rc);
        if (recv->dtype == RL_BF16)
            want = rl_round_bf16(want);
        if (host[i] != want)
            wrong++;
    }
    return wrong;
}

static int run_one(rl_comm *comm, const bench_cfg *b, rl_tensor *send, rl_tensor *recv)
{
    int n = rl_comm_size(comm), r = rl_comm_rank(comm);
    rl_work *w = NULL;
    switch (b->kind) {
    case RL_COLL_ALL_REDUCE: w = rl_all_reduce(comm, send, recv, b->op, 0); break;
    case RL_COLL_REDUCE_SCATTER: w = rl_reduce_scatter(comm, send, recv, b->op, 0); break;
    case RL_COLL_ALL_GATHER: w = rl_all_gather(comm, send, recv, 0); break;
    case RL_COLL_BROADCAST: w = rl_broadcast(comm, send, recv, b->root, 0); break;
    case RL_COLL_REDUCE: w = rl_reduce(comm, send, recv, b->op, b->root, 0); break;
    case RL_COLL_ALL_TO_ALL: w = rl_all_to_all(comm, send, recv, 0); break;
    case RL_COLL_ALL_TO_ALLV: {
        int64_t c = send->numel / n, cnt[64], dsp[64];
        for (int q = 0; q < n; q++) {
            cnt[q] = c;
            dsp[q] = c * q;
        }
        w = rl_all_to_allv(comm, send, cnt, dsp, recv, cnt, dsp, 0);
        break;
    }
    default: /* sendrecv around the ring */
        if (n == 1)
            return rl_tensor_copy(recv, send);
        rl_group_start(rl_comm_ctx(comm));
        rl_send(comm, send, (r + 1) % n, 0);
        rl_recv(comm, recv, (r + n - 1) % n, 0);
        return rl_group_end(rl_comm_ctx(comm));
    }
    return w ? 0 : -1;
}

/* On a long run, rank 0 says on stderr where it is: every PROGRESS_S seconds of wall time,
 * the row, the pass and the iteration (a large -e or -n runs for minutes). */
#define PROGRESS_S 2.0
static void progress(rl_ctx *ctx, bench_cfg *b, int row, int ip, const char *phase, int it, int n)
{
    double now = rl_wall_now(ctx);
    if (now - b->last_note < PROGRESS_S)
        return;
    b->last_note = now;
    fprintf(stderr, "# bench: %.0f s: row %d of %d (%lld B), %s, %s iteration %d of %d\n", now, row + 1, b->nrows,
            (long long)b->rows[row].bytes, ip ? "in-place" : "out-of-place", phase, it + 1, n);
}

static int bench_rank(rl_ctx *ctx, void *arg)
{
    bench_cfg *b = arg;
    rl_comm *world = rl_comm_world(ctx);
    int n = rl_comm_size(world), r = rl_comm_rank(world);
    if (r == 0)
        b->on_gpu = rl_backend_has_gpu(ctx);
    rl_tensor *ok = rl_tensor_new_1d(ctx, "ok", RL_F32, RL_MEM_OTHER, 1); /* before any large buffer */
    if (!ok)
        return rl_error(ctx, RL_ERR_NOMEM, "out of memory before the first row");
    for (int row = 0; row < b->nrows; row++) {
        bench_row *br = &b->rows[row];
        int64_t sc, rc;
        counts_for(b, n, br->bytes, &sc, &rc);
        /* every rank's buffers for the row (send, receive, host staging, reduce-scatter's in-place
         * one) and the collective's scratch, against the memory left once every rank has freed the
         * previous row's: rank 0 looks and all learn its answer, so none goes on into a collective
         * alone (a rank that still fails to allocate stops the run, naming the tensor) */
        int rs = b->kind == RL_COLL_REDUCE_SCATTER;
        double big_one = (double)(sc > rc ? sc : rc), on_device = (double)(sc + rc) + (rs ? (double)sc : 0);
        double need = ((rl_backend_has_gpu(ctx) ? big_one : on_device + big_one) * n + big_one) * 4.0; /* host */
        rl_barrier(world, 0);
        double avail = r == 0 ? rl_mem_available() : -1;
        rl_tensor_set(ok, 0, avail < 0 || need <= avail ? 1.0f : 0.0f);
        rl_all_reduce(world, ok, ok, RL_MIN, 0);
        if (rl_tensor_get(ok, 0) < 0.5f) {
            char n1[32], n2[32];
            rl_tensor_free(ok);
            if (r != 0)
                return rl_error(ctx, RL_ERR_ABORTED, "out of memory (see rank 0)");
            return rl_error(ctx, RL_ERR_NOMEM, "out of memory: the %lld-byte row needs about %s of buffers on %d "
                            "ranks (send, receive, host staging, scratch) and about %s is available: try a smaller -e",
                            (long long)br->bytes, rl_fmt_bytes(need, n1, sizeof n1), n,
                            rl_fmt_bytes(avail, n2, sizeof n2));
        }
        rl_tensor *send = rl_tensor_new_1d(ctx, "send", b->dtype, RL_MEM_COMM, sc);
        rl_tensor *recv = rl_tensor_new_1d(ctx, "recv", b->dtype, RL_MEM_COMM, rc);
        /* in place: the send buffer is a view into recv, as nccl-tests lays it out */
        int64_t in_off = b->kind == RL_COLL_ALL_GATHER ? (int64_t)r * sc : 0;
        /* (sendrecv has no in-place form: the buffer would be overwritten while it is sent) */
        int has_in_place = sc <= rc && b->kind != KIND_SENDRECV;
        rl_tensor *in_send = has_in_place && recv ? rl_tensor_slice(recv, in_off, sc) : NULL;
        rl_tensor *in_recv = has_in_place ? recv : NULL;
        rl_tensor *big = NULL;
        if (rs) {
            /* reduce_scatter in place: recv is chunk r of the send buffer */
            big = rl_tensor_new_1d(ctx, "inplace", b->dtype, RL_MEM_COMM, sc);
            in_send = big;
            in_recv = big ? rl_tensor_slice(big, (int64_t)r * rc, rc) : NULL;
        }
        /* a host staging buffer (host memory on the GPU too), as a tensor so an aborted run frees it */
        rl_tensor *staging = rl_tensor_new_host(ctx, "staging", RL_F32, sc > rc ? sc : rc);
        float *host = staging ? rl_tensor_host_data(staging) : NULL;
        if (!send || !recv || !host || (rs && !big))
            return rl_error(ctx, RL_ERR_ARG, "bench: the row's buffers: %s", rl_last_error(ctx));
        for (int ip = 0; ip < 2; ip++) {
            rl_tensor *s = ip ? in_send : send, *d = ip ? in_recv : recv;
            if (!s || !d)
                continue;
            for (int it = 0; it < b->warmup; it++) {
                fill_send(s, host, r);
                if (run_one(world, b, s, d))
                    return -1;
                if (r == 0)
                    progress(ctx, b, row, ip, "warm-up", it, b->warmup);
            }
            if (b->check) {
                fill_send(s, host, r);
                if (run_one(world, b, s, d))
                    return -1;
                int64_t wrong = count_wrong(b, n, r, d, host, sc, rc);
                if (b->process_rank >= 0) /* (b belongs to this process's one rank thread) */
                    b->own_wrong += wrong;
                /* every rank's wrong count ends on rank 0 through an all-reduce */
                rl_tensor *wt = rl_tensor_new_1d(ctx, "wrong", RL_F32, RL_MEM_OTHER, 1);
                rl_tensor_set(wt, 0, (float)wrong);
                rl_all_reduce(world, wt, wt, RL_SUM, 0);
                if (r == 0)
                    br->wrong[ip] = (int64_t)rl_tensor_get(wt, 0);
                rl_tensor_free(wt);
            }
            rl_barrier(world, 0);
            double v0 = rl_stream_time(ctx, RL_STREAM_COMPUTE), w0 = rl_wall_now(ctx);
            for (int it = 0; it < b->iters; it++) {
                if (run_one(world, b, s, d))
                    return -1;
                if (r == 0)
                    progress(ctx, b, row, ip, "timed", it, b->iters);
            }
            double v1 = rl_stream_time(ctx, RL_STREAM_COMPUTE);
            rl_barrier(world, 0);
            double w1 = rl_wall_now(ctx);
            if (r == 0) {
                br->vtime[ip] = (v1 - v0) / b->iters;
                br->wtime[ip] = (w1 - w0) / b->iters;
            }
        }
        rl_tensor_free(staging);
        rl_tensor_free(big);
        if (b->kind == RL_COLL_REDUCE_SCATTER)
            rl_tensor_free(in_recv);
        else
            rl_tensor_free(in_send);
        rl_tensor_free(send);
        rl_tensor_free(recv);
    }
    rl_tensor_free(ok);
    return 0;
}

static void print_table(const bench_cfg *b, int n, int wall)
{
    const char *redop[] = { "sum", "avg", "max", "min" };
    int kind = b->kind == KIND_SENDRECV ? RL_COLL_SEND : b->kind;
    int has_op = kind == RL_COLL_ALL_REDUCE || kind == RL_COLL_REDUCE_SCATTER || kind == RL_COLL_REDUCE;
    int has_root = kind == RL_COLL_BROADCAST || kind == RL_COLL_REDUCE;
    double factor = rl_busbw_factor((rl_coll_kind)kind, n), sum = 0;
    int samples = 0;
    printf("#\n#%74s%34s\n", "out-of-place", "in-place");
    printf("#%12s %13s %9s %6s %6s %10s %7s %7s %6s %10s %7s %7s %6s\n", "size", "count", "type", "redop",
           "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("#%12s %13s %9s %6s %6s %10s %7s %7s %6s %10s %7s %7s %6s\n", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    for (int i = 0; i < b->nrows; i++) {
        const bench_row *r = &b->rows[i];
        int64_t sc, rc;
        counts_for(b, n, r->bytes, &sc, &rc);
        int64_t size = (b->kind == RL_COLL_REDUCE_SCATTER ? sc : rc) * (int64_t)rl_dtype_size(b->dtype);
        int64_t count = b->kind == RL_COLL_REDUCE_SCATTER ? rc : (b->kind == RL_COLL_ALL_GATHER ? sc : rc);
        printf(" %12lld %13lld %9s %6s %6d", (long long)size, (long long)count, rl_dtype_nccl_name(b->dtype),
               has_op ? redop[b->op] : "none", has_root ? b->root : -1);
        for (int ip = 0; ip < 2; ip++) {
            if (ip && b->kind == KIND_SENDRECV) {
                printf(" %10s %7s %7s %6s", "N/A", "N/A", "N/A", "N/A");
                continue;
            }
            double t = wall ? r->wtime[ip] : r->vtime[ip];
            double algbw = t > 0 ? (double)size / t / 1e9 : 0, busbw = algbw * factor;
            printf(" %10.2f %7.2f %7.2f", t * 1e6, algbw, busbw);
            if (b->check)
                printf(" %6lld", (long long)r->wrong[ip]);
            else
                printf(" %6s", "N/A");
            sum += busbw;
            samples++;
        }
        printf("\n");
    }
    printf("# Out of bounds values : 0 OK\n");
    printf("# Avg bus bandwidth    : %g \n#\n", samples ? sum / samples : 0.0);
}

int rl_cmd_bench(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "gemm") == 0) return rl_cmd_bench_gemm(argc - 1, argv + 1);
    rl_opts opts;
    rl_opts_init(&opts);
    char err[256];
    if (rl_opts_parse(&opts, &argc, argv, err, sizeof err)) {
        fprintf(stderr, "ringlab bench: %s\n", err);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (rl_opts_check_faults(&opts, RL_FAULTS_COMM, "ringlab bench")) {
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    bench_cfg *b = rl_xcalloc(1, sizeof *b, "the benchmark's settings");
    b->dtype = RL_F32;
    b->op = RL_SUM;
    b->min_bytes = 8;
    b->max_bytes = 128 << 20;
    b->factor = 2;
    int factor_given = 0;
    b->iters = 20;
    b->warmup = 5;
    b->check = 1;
    b->kind = -2;
    int rc = RL_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            free(b);
            return 0;
        }
        if (rl_opts_list_numbers(a, bench_numbers, NBENCH_NUMBERS)) {
            printf("-b 0 0 size\n-e 0 0 size\n-i 0 0 size\n");
            free(b);
            return 0;
        }
        if (a[0] != '-') {
            if (b->kind != -2) {
                fprintf(stderr, "ringlab bench: one collective at a time ('%s' and '%s')\n", argv[i - 1], a);
                goto bad;
            }
            int k = rl_coll_parse(a);
            if (strcmp(a, "sendrecv") == 0)
                k = KIND_SENDRECV;
            else if (k < 0 || k == RL_COLL_SEND || k == RL_COLL_RECV || k == RL_COLL_SPLIT || k == RL_COLL_BARRIER) {
                fprintf(stderr, "ringlab bench: unknown collective '%s'\n", a);
                goto bad;
            }
            b->kind = k;
            continue;
        }
        if (strlen(a) != 2 || i + 1 >= argc) {
            fprintf(stderr, "ringlab bench: unknown option '%s'%s\n", a, strlen(a) == 2 ? " (needs a value)" : "");
            goto bad;
        }
        const char *v = argv[++i];
        char verr[256] = "";
        double num;
        int k = rl_optnum_find(bench_numbers, NBENCH_NUMBERS, a, v, &num, verr, sizeof verr);
        if (k == -2)
            goto badnum;
        if (k >= 0) {
            if (k == 0)
                b->factor = num, factor_given = 1;
            else if (k == 1)
                b->iters = (int)num;
            else if (k == 2)
                b->warmup = (int)num;
            else if (k == 3)
                b->check = (int)num;
            else
                b->root = (int)num;
            continue;
        }
        switch (a[1]) {
        case 'b': if (parse_size(v, &b->min_bytes)) goto badval; break;
        case 'e': if (parse_size(v, &b->max_bytes)) goto badval; break;
        case 'i': if (parse_size(v, &b->step_bytes) || b->step_bytes <= 0) goto badval; break;
        case 'd':
            if (strcmp(v, "float") == 0 || strcmp(v, "f32") == 0) b->dtype = RL_F32;
            else if (strcmp(v, "bfloat16") == 0 || strcmp(v, "bf16") == 0) b->dtype = RL_BF16;
            else goto badval;
            break;
        case 'o':
            if (strcmp(v, "sum") == 0) b->op = RL_SUM;
            else if (strcmp(v, "avg") == 0) b->op = RL_AVG;
            else if (strcmp(v, "max") == 0) b->op = RL_MAX;
            else if (strcmp(v, "min") == 0) b->op = RL_MIN;
            else goto badval;
            break;
        default:
            fprintf(stderr, "ringlab bench: unknown option '%s'\n", a);
            goto bad;
        }
        continue;
    badval:
        fprintf(stderr, "ringlab bench: bad value '%s' for %s\n", v, a);
        goto bad;
    badnum:
        fprintf(stderr, "ringlab bench: %s\n", verr);
        goto bad;
    }
    if (b->kind == -2) {
        fprintf(stderr, "ringlab bench: name a collective\n");
        goto bad;
    }
    if (factor_given && b->step_bytes) {
        fprintf(stderr, "ringlab bench: -f %g and -i %lld: sizes grow by a factor or by a step, give one of them\n",
                b->factor, (long long)b->step_bytes);
        goto bad;
    }
    if (b->min_bytes > b->max_bytes) {
        fprintf(stderr, "ringlab bench: -b %lld is larger than -e %lld\n", (long long)b->min_bytes,
                (long long)b->max_bytes);
        goto bad;
    }
    /* one process per rank (docs/launch.md): WORLD_SIZE ranks, and only rank 0 prints the table */
    int nranks;
    b->process_rank = rl_launch_process_rank(&opts, &nranks);
    int dist = b->process_rank >= 0, prints = !dist || b->process_rank == 0;
    if (b->root >= nranks) {
        fprintf(stderr, "ringlab bench: root %d does not exist with %s %d\n", b->root, dist ? "WORLD_SIZE" : "--ranks",
                nranks);
        goto bad;
    }
    if (nranks > 64 && b->kind == RL_COLL_ALL_TO_ALLV) {
        fprintf(stderr, "ringlab bench: all_to_allv supports up to 64 ranks\n");
        goto bad;
    }
    for (int64_t s = b->min_bytes; s <= b->max_bytes && b->nrows < MAX_ROWS;) {
        b->rows[b->nrows++].bytes = s;
        int64_t next = b->step_bytes ? s + b->step_bytes : (int64_t)((double)s * b->factor);
        s = next > s ? next : s + 1;
    }
    if (prints) {
        printf("# ringlab bench %s: %d ranks, backend %s, dtype %s\n",
               b->kind == KIND_SENDRECV ? "sendrecv" : rl_coll_name((rl_coll_kind)b->kind), nranks,
               opts.backend == RL_BACKEND_SIM ? "sim" : opts.backend == RL_BACKEND_CUDA ? "cuda" : "auto",
               rl_dtype_nccl_name(b->dtype));
        if (dist)
            printf("# multi-process: %d processes, one GPU each, NCCL; this is rank 0's view (times of rank 0, "
                   "#wrong summed over all ranks)\n", nranks);
        printf("# nIters %d warmup %d check %d\n", b->iters, b->warmup, b->check);
        printf("# hw %s: %s\n", opts.hw->name, opts.hw->summary);
        fflush(stdout);
    }
    int lr = rl_launch(&opts, bench_rank, b, NULL);
    if (lr) {
        rc = rl_exit_status(lr);
        goto out;
    }
    if (!prints) { /* another process's rank: silent unless its own results were wrong */
        if (b->own_wrong)
            printf("ringlab bench: rank %d: %lld wrong values in its results\n", b->process_rank,
                   (long long)b->own_wrong);
        rc = b->own_wrong ? RL_EXIT_FAIL : 0;
        goto out;
    }
    if (b->on_gpu) /* on the GPU the ranks' clocks are CUDA-event measurements, not the model */
        printf("#\n# Stream time of rank 0 on the GPU (CUDA events; the --hw model is not used)\n");
    else
        printf("#\n# Modelled time on %s (virtual clock of the sim backend, alpha-beta model)\n", opts.hw->name);
    print_table(b, nranks, 0);
    if (dist)
        printf("#\n# Wall time of rank 0 on its GPU (%d processes, one GPU each, NCCL; per call: enqueue, NCCL on the "
               "comm stream and the host's wait for it)\n", nranks);
    else if (b->on_gpu)
        printf("#\n# Wall time on the GPU (%d rank%s; per call: enqueue, the kernels or NCCL on the comm stream, "
               "and the host's wait for them)\n", opts.ranks, opts.ranks == 1 ? "" : "s");
    else
        printf("#\n# Wall time on this machine (%d rank threads through shared memory)\n", opts.ranks);
    print_table(b, nranks, 1);
    rc = b->own_wrong ? RL_EXIT_FAIL : 0;
    for (int i = 0; i < b->nrows; i++)
        if (b->rows[i].wrong[0] || b->rows[i].wrong[1])
            rc = RL_EXIT_FAIL;
    goto out;
bad:
    usage(stderr);
out:
    free(b);
    return rc;
}
