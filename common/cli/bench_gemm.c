/* bench_gemm.c — `ringlab bench gemm`: wall-clock GFLOP/s of an fp32 GEMM through
 * rl_matmul (OpenBLAS on one thread when built with it), next to an estimate of this
 * machine's single-core fp32 peak from its CPU flags and clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "ringlab.h"
#include "ops.h"
#include "optnum.h"

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The core's running clock in MHz, measured: a chain of dependent integer adds retires one
 * add per cycle, so adds per second = cycles per second. 0 where not measurable (non-x86). */
static double measured_mhz(void)
{
#if defined(__x86_64__)
    const long n = 50 * 1000 * 1000;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        unsigned long x = 0;
        double t0 = mono();
        for (long i = 0; i < n; i += 10)
            __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                             "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                             : "+r"(x));
        double mhz = (double)n / (mono() - t0) * 1e-6;
        best = mhz > best ? mhz : best;
    }
    return best;
#else
    return 0;
#endif
}

/* A single-core fp32 peak estimate (FLOP/s) and a sentence saying how it was made. */
static double peak_estimate(char *how, int howlen)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192], vendor[64] = "?", model[128] = "?";
    int avx512 = 0, avx2 = 0, fma = 0, family = 0;
    double mhz = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "vendor_id", 9))
            sscanf(strchr(line, ':') + 1, " %63s", vendor);
        else if (!strncmp(line, "model name", 10))
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2), model[strcspn(model, "\n")] = 0;
        else if (!strncmp(line, "cpu family", 10))
            family = atoi(strchr(line, ':') + 1);
        else if (!strncmp(line, "cpu MHz", 7)) {
            double v = atof(strchr(line, ':') + 1);
            mhz = v > mhz ? v : mhz;
        } else if (!strncmp(line, "flags", 5)) {
            avx512 = strstr(line, " avx512f") != NULL;
            avx2 = strstr(line, " avx2") != NULL;
            fma = strstr(line, " fma") != NULL;
        }
    }
    if (f)
        fclose(f);
    const char *clock_src = "/proc/cpuinfo 'cpu MHz' (nominal)";
    double run_mhz = measured_mhz();
    char src[128];
    if (run_mhz > 0 && run_mhz < 7000 && (mhz <= 0 || run_mhz < 2.5 * mhz)) {
        snprintf(src, sizeof src, "measured with a dependent-add loop; cpuinfo says %.0f MHz", mhz);
        mhz = run_mhz;
        clock_src = src;
    } else if (run_mhz > 0) { /* a loop the compiler or a busy machine made meaningless: the nominal clock */
        snprintf(src, sizeof src, "cpuinfo's nominal clock: the dependent-add loop measured an implausible %.0f MHz",
                 run_mhz);
        clock_src = src;
    }
    /* fp32 FLOPs per cycle = FMA pipes × lanes × 2. AMD Zen 4 (family 25) splits AVX-512 over
     * two 256-bit FMA pipes, so it peaks like AVX2; Intel server cores and Zen 5 have two
     * 512-bit FMA pipes. */
    int zen4 = !strcmp(vendor, "AuthenticAMD") && family == 25;
    int per_cycle = avx512 ? (zen4 ? 32 : 64) : (avx2 && fma) ? 32 : avx2 ? 16 : 8;
    const char *isa = avx512 ? (zen4 ? "AVX-512 on 2×256-bit FMA pipes (AMD Zen 4)" : "AVX-512, 2 FMA pipes")
                      : (avx2 && fma) ? "AVX2 + FMA, 2 FMA pipes" : avx2 ? "AVX2, no FMA" : "SSE";
    snprintf(how, (size_t)howlen, "%s: %s → %d fp32 FLOP/cycle × %.0f MHz (%s)", model, isa, per_cycle, mhz,
             clock_src);
    return per_cycle * mhz * 1e6;
}


static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define GEMM_USAGE "usage: ringlab bench gemm [-s SIZE] [-n RUNS]\n"

int rl_cmd_bench_gemm(int argc, char **argv)
{
    static const rl_optnum_decl nums[] = { { "-s", 1, 8192, 1 }, { "-n", 1, 100, 1 } };
    double v[2] = { 1024, 5 };
    for (int i = 1; i < argc; i++) {
        char err[256];
        double num;
        int k = rl_optnum_find(nums, 2, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &num, err, sizeof err);
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(GEMM_USAGE
                   "GFLOP/s (2·n³ / wall time, median of RUNS, default 5) of an n×n×n fp32 GEMM (default n = 1024)\n"
                   "through rl_matmul on one thread, next to an estimate of one core's fp32 peak.\n");
            return 0;
        } else if (!strcmp(argv[i], RL_OPTNUM_LIST_FLAG)) {
            rl_optnum_list(stdout, nums, 2);
            return 0;
        } else if (k >= 0) {
            v[k] = num, i++;
        } else {
            if (k == -1)
                snprintf(err, sizeof err, "unknown option '%s'", argv[i]);
            fprintf(stderr, "ringlab bench gemm: %s\n" GEMM_USAGE, err);
            return RL_EXIT_USAGE;
        }
    }
    int n = (int)v[0], runs = (int)v[1];
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int64_t shape[2] = { n, n };
    rl_tensor *a = rl_tensor_new(ctx, "a", RL_F32, RL_MEM_OTHER, 2, shape, "m,k");
    rl_tensor *b = rl_tensor_new(ctx, "b", RL_F32, RL_MEM_OTHER, 2, shape, "k,n");
    rl_tensor *c = rl_tensor_new(ctx, "c", RL_F32, RL_MEM_OTHER, 2, shape, "m,n");
    if (!a || !b || !c) {
        fprintf(stderr, "ringlab bench gemm: %s\n", rl_last_error(ctx));
        rl_ctx_free_standalone(ctx);
        return RL_EXIT_FAIL;
    }
    rl_rng r = rl_rng_make(1, 2);
    for (int64_t i = 0; i < a->numel; i++) {
        rl_tensor_set(a, i, (float)rl_rng_normal(&r));
        rl_tensor_set(b, i, (float)rl_rng_normal(&r));
    }
    double *t = calloc((size_t)runs, sizeof *t);
    int rc = t ? rl_matmul(ctx, a, 0, b, 0, c, 0.0f) : RL_ERR_NOMEM; /* warm-up */
    for (int i = 0; !rc && i < runs; i++) {
        double t0 = mono();
        rc = rl_matmul(ctx, a, 0, b, 0, c, 0.0f);
        t[i] = mono() - t0;
    }
    if (rc) {
        fprintf(stderr, "ringlab bench gemm: %s\n", rl_last_error(ctx));
    } else {
        qsort(t, (size_t)runs, sizeof *t, cmp_double);
        double med = t[runs / 2], flops = 2.0 * n * (double)n * n;
        char how[512];
        double peak = peak_estimate(how, sizeof how);
#ifdef RL_HAVE_OPENBLAS
        const char *impl = rl_mem_address_space_left() >= 0
                               ? "plain C loop: under ulimit -v OpenBLAS is not used, as its work buffers can "
                                 "hang a run that runs out of address space"
                               : "OpenBLAS cblas_sgemm, 1 thread";
#else
        const char *impl = "plain C loop (built without OpenBLAS)";
#endif
        printf("# fp32 GEMM %d×%d×%d via rl_matmul (%s), median of %d runs\n", n, n, n, impl, runs);
        printf("%-28s %10.3f ms\n", "time", med * 1e3);
        printf("%-28s %10.1f GFLOP/s\n", "measured", flops / med * 1e-9);
        printf("%-28s %10.1f GFLOP/s   (%s)\n", "single-core peak estimate", peak * 1e-9, how);
        if (peak > 0)
            printf("%-28s %10.0f %%\n", "fraction of peak", 100.0 * flops / med / peak);
    }
    free(t);
    rl_tensor_free(a);
    rl_tensor_free(b);
    rl_tensor_free(c);
    rl_ctx_free_standalone(ctx);
    return rc ? RL_EXIT_FAIL : RL_EXIT_OK;
}
