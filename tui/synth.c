/* synth.c — synthetic traces (DDP, pipeline, large) built in code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "synth.h"

static rl_trace_event ev(int rank, int stream, rl_cat cat, const char *name, double start, double dur)
{
    rl_trace_event e;
    rl_trace_event_init(&e);
    e.rank = rank;
    e.stream = stream;
    e.cat = cat;
    snprintf(e.name, sizeof e.name, "%s", name);
    e.vstart = start;
    e.vend = start + dur;
    return e;
}

rl_trace *rl_tui_synth_ddp(int ranks, int steps)
{
    enum { L = 4 };
    const double tf = 100e-6, tb = 200e-6, tc = 150e-6, topt = 50e-6;
    const double grad_bytes = 8.0 * 1024 * 1024;
    rl_trace *t = rl_trace_new(ranks);
    if (!t)
        return NULL;
    snprintf(t->hw, sizeof t->hw, "h100-nvlink");
    double clock = 0;
    for (int s = 0; s < steps; s++) {
        double comm_end = 0;
        for (int r = 0; r < ranks; r++) {
            double c = clock, cm = clock;
            for (int l = 0; l < L; l++) {
                rl_trace_event e = ev(r, 0, RL_CAT_COMPUTE, "linear_fwd", c, tf);
                e.tags[RL_TAG_STEP] = s;
                e.tags[RL_TAG_LAYER] = l;
                e.flops = 2.0 * 8 * 1024 * 1024;
                e.bytes = grad_bytes / 2;
                e.shapes = l == 0 ? "x[b=8,h=1024] w[h=1024,h=1024] -> y[b=8,h=1024]"
                                  : "y[b=8,h=1024] w[h=1024,h=1024] -> y[b=8,h=1024]";
                rl_trace_add(t, &e);
                c += tf;
            }
            for (int l = L - 1; l >= 0; l--) {
                rl_trace_event e = ev(r, 0, RL_CAT_COMPUTE, "linear_bwd", c, tb);
                e.tags[RL_TAG_STEP] = s;
                e.tags[RL_TAG_LAYER] = l;
                e.flops = 4.0 * 8 * 1024 * 1024;
                e.bytes = grad_bytes;
                rl_trace_add(t, &e);
                c += tb;
                int b = L - 1 - l;
                double start = cm > c ? cm : c;
                rl_trace_event a = ev(r, 1, RL_CAT_COMM, "all_reduce", start, tc);
                a.tags[RL_TAG_STEP] = s;
                a.tags[RL_TAG_BUCKET] = b;
                a.bytes = grad_bytes * 2 * (ranks - 1) / ranks;
                a.seq = (int64_t)s * L + b;
                snprintf(a.comm, sizeof a.comm, "world");
                rl_trace_add(t, &a);
                cm = start + tc;
            }
            if (cm > c) {
                rl_trace_event w = ev(r, 0, RL_CAT_IDLE, "wait all_reduce", c, cm - c);
                w.tags[RL_TAG_STEP] = s;
                rl_trace_add(t, &w);
                c = cm;
            }
            rl_trace_event o = ev(r, 0, RL_CAT_COMPUTE, "adam_step", c, topt);
            o.tags[RL_TAG_STEP] = s;
            rl_trace_add(t, &o);
            c += topt;
            rl_mem_sample ms = { .rank = r, .vtime = c };
            ms.current[RL_MEM_PARAM] = 4 * 2 * 1024 * 1024;
            ms.current[RL_MEM_GRAD] = 4 * 2 * 1024 * 1024;
            ms.current[RL_MEM_OPTIM] = 4 * 12 * 1024 * 1024;
            ms.current[RL_MEM_COMM] = 25 * 1024 * 1024;
            rl_trace_add_mem(t, &ms);
            for (int k = 0; k < RL_MEM_NCAT; k++)
                if (ms.current[k] > t->peak[r][k])
                    t->peak[r][k] = ms.current[k];
            t->peak[r][RL_MEM_ACTIVATION] = 4 * 256 * 1024;
            if (c > comm_end)
                comm_end = c;
        }
        clock = comm_end;
    }
    const char *names[] = { "dp" };
    rl_trace_set_mesh(t, 1, names, &ranks);
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f ms", clock / steps * 1e3);
    rl_trace_set_meta(t, "step time", buf);
    rl_trace_set_meta(t, "buckets", "4 x 8 MiB");
    rl_trace_sort(t);
    return t;
}

rl_trace *rl_tui_synth_pipeline(int p, int m, int one_f_one_b)
{
    if (p < 1 || m < 1 || p > 64 || m > 256)
        return NULL;
    const double tf = 100e-6, tb = 200e-6, tsend = 10e-6;
    rl_trace *t = rl_trace_new(p);
    if (!t)
        return NULL;
    snprintf(t->hw, sizeof t->hw, "h100-nvlink");
    /* per stage: the op list (F = +mb+1, B = -(mb+1)), then list scheduling by dependencies */
    int *ops = calloc((size_t)(p * 2 * m), sizeof *ops), *next = calloc((size_t)p, sizeof *next);
    double *fend = calloc((size_t)(p * m), sizeof *fend), *bend = calloc((size_t)(p * m), sizeof *bend);
    double *free_at = calloc((size_t)p, sizeof *free_at);
    if (!ops || !next || !fend || !bend || !free_at)
        goto out;
    for (int s = 0; s < p; s++) {
        int *o = &ops[s * 2 * m], k = 0;
        if (!one_f_one_b) {
            for (int i = 0; i < m; i++)
                o[k++] = i + 1;
            for (int i = 0; i < m; i++)
                o[k++] = -(i + 1);
        } else {
            int warm = p - s - 1 < m ? p - s - 1 : m, f = 0, b = 0;
            for (; f < warm; f++)
                o[k++] = f + 1;
            while (f < m) {
                o[k++] = ++f;
                o[k++] = -(++b);
            }
            while (b < m)
                o[k++] = -(++b);
        }
    }
    for (int i = 0; i < p * m; i++)
        fend[i] = bend[i] = -1;
    int left = 2 * p * m;
    while (left > 0) {
        int progressed = 0;
        for (int s = 0; s < p; s++) {
            if (next[s] >= 2 * m)
                continue;
            int op = ops[s * 2 * m + next[s]], mb = (op > 0 ? op : -op) - 1;
            double dep;
            if (op > 0)
                dep = s == 0 ? 0 : fend[(s - 1) * m + mb];
            else
                dep = s == p - 1 ? fend[s * m + mb] : bend[(s + 1) * m + mb];
            if (dep < 0)
                continue;
            if (op > 0 && s > 0)
                dep += tsend;
            if (op < 0 && s < p - 1)
                dep += tsend;
            double start = dep > free_at[s] ? dep : free_at[s], dur = op > 0 ? tf : tb;
            rl_trace_event e = ev(s, 0, RL_CAT_COMPUTE, op > 0 ? "stage_fwd" : "stage_bwd", start, dur);
            e.phase = op > 0 ? 'F' : 'B';
            e.tags[RL_TAG_STEP] = 0;
            e.tags[RL_TAG_MICROBATCH] = mb;
            e.tags[RL_TAG_STAGE] = s;
            e.flops = dur * 1e15;
            e.shapes = op > 0 ? "x[mb=4,s=128,h=1024] -> y[mb=4,s=128,h=1024]" : "dy[mb=4,s=128,h=1024] -> dx[mb=4,s=128,h=1024]";
            rl_trace_add(t, &e);
            /* activations of in-flight micro-batches: + at each forward, - at each backward */
            {
                const int64_t act = 4 * 128 * 1024 * 2 * 8;
                int64_t cur = 0;
                for (int k = (int)t->nmem - 1; k >= 0; k--)
                    if (t->mem[k].rank == s) {
                        cur = t->mem[k].current[RL_MEM_ACTIVATION];
                        break;
                    }
                rl_mem_sample ms = { .rank = s, .vtime = start + dur };
                ms.current[RL_MEM_PARAM] = 16 * 1024 * 1024;
                ms.current[RL_MEM_GRAD] = 16 * 1024 * 1024;
                ms.current[RL_MEM_OPTIM] = 96 * 1024 * 1024;
                ms.current[RL_MEM_ACTIVATION] = cur + (op > 0 ? act : -act);
                rl_trace_add_mem(t, &ms);
                for (int k = 0; k < RL_MEM_NCAT; k++)
                    if (ms.current[k] > t->peak[s][k])
                        t->peak[s][k] = ms.current[k];
            }
            free_at[s] = start + dur;
            (op > 0 ? fend : bend)[s * m + mb] = start + dur;
            if ((op > 0 && s < p - 1) || (op < 0 && s > 0)) {
                rl_trace_event x = ev(s, 1, RL_CAT_P2P, op > 0 ? "send act" : "send grad", start + dur, tsend);
                x.tags[RL_TAG_STEP] = 0;
                x.tags[RL_TAG_MICROBATCH] = mb;
                x.tags[RL_TAG_STAGE] = s;
                x.bytes = 4.0 * 128 * 1024 * 2;
                rl_trace_add(t, &x);
            }
            next[s]++;
            left--;
            progressed = 1;
        }
        if (!progressed)
            break; /* cannot happen for these schedules; never loop forever */
    }
    const char *names[] = { "pp" };
    rl_trace_set_mesh(t, 1, names, &p);
    rl_trace_set_meta(t, "schedule", one_f_one_b ? "1F1B" : "GPipe");
    char buf[32];
    snprintf(buf, sizeof buf, "p=%d m=%d", p, m);
    rl_trace_set_meta(t, "pipeline", buf);
    rl_trace_sort(t);
out:
    free(ops);
    free(next);
    free(fend);
    free(bend);
    free(free_at);
    return t;
}

rl_trace *rl_tui_synth_big(size_t n)
{
    enum { R = 8, LAYERS = 8, MB = 8 };
    rl_trace *t = rl_trace_new(R);
    if (!t)
        return NULL;
    snprintf(t->hw, sizeof t->hw, "h100-nvlink");
    /* every field a lab 31 --part 3d trace has: tags, phase, shapes, communicator, seq, peer */
    static const char *const shapes[] = {
        "x[b=4,s=512,h=4096] w[h=4096,4h/t=8192] -> y[b=4,s=512,4h/t=8192]",
        "y[b=4,s=512,4h/t=8192] w[4h/t=8192,h=4096] -> z[b=4,s=512,h=4096]",
        "x[b=4,s=512,h=4096] block.ln.g[4096] block.ln.b[4096] -> ln[b=4,s=512,h=4096]",
        "dz[b=4,s=512,h=4096] w[4h/t=8192,h=4096] -> dy[b=4,s=512,4h/t=8192]",
    };
    size_t per_rank = n / R;
    uint64_t x = 88172645463325252ull;
    for (int r = 0; r < R; r++) {
        double c = 0, cm = 0;
        int64_t seq = 0;
        for (size_t i = 0; i < per_rank; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            double dur = (1 + (double)(x % 1000) / 100.0) * 1e-6;
            int step = (int)(i / 3000), mb = (int)(i / 30 % MB), layer = (int)(i / 3 % LAYERS);
            int bwd = i % 3000 >= 1500;
            if (i % 3 == 2) { /* every third event is on the comm stream: TP all-reduces, and p2p sends */
                double start = cm > c - dur ? cm : c - dur;
                int p2p = i % 12 == 11;
                rl_trace_event a = ev(r, 1, p2p ? RL_CAT_P2P : RL_CAT_COMM, p2p ? "send" : "all_reduce", start,
                                      dur * 1.5);
                a.tags[RL_TAG_STEP] = step;
                a.tags[RL_TAG_MICROBATCH] = mb;
                a.tags[RL_TAG_LAYER] = layer;
                a.tags[RL_TAG_BUCKET] = (int)(i / 3 % 8);
                a.phase = bwd ? 'B' : 'F';
                a.seq = seq++;
                a.bytes = 4e6;
                a.peer = p2p ? (r + 1) % R : -1;
                snprintf(a.comm, sizeof a.comm, "%s", p2p ? "pp/0" : "tp/1");
                a.shapes = p2p ? "act[b=4,s=512,h=4096]" : "y[b=4,s=512,h=4096]";
                rl_trace_add(t, &a);
                cm = start + dur * 1.5;
            } else {
                rl_trace_event e = ev(r, 0, RL_CAT_COMPUTE, i % 3 ? "matmul_bwd" : "matmul_fwd", c, dur);
                e.flops = dur * 5e14;
                e.bytes = dur * 3e12;
                e.tags[RL_TAG_STEP] = step;
                e.tags[RL_TAG_MICROBATCH] = mb;
                e.tags[RL_TAG_STAGE] = r % 2;
                e.tags[RL_TAG_LAYER] = layer;
                e.tags[RL_TAG_CHUNK] = (int)(i / 300 % 2);
                e.phase = bwd ? 'B' : 'F';
                e.shapes = (char *)shapes[(bwd ? 2 : 0) + (int)(i % 3 == 1)];
                rl_trace_add(t, &e);
                c += dur;
            }
        }
    }
    rl_trace_set_meta(t, "events", "synthetic benchmark trace");
    /* not sorted: the file's order does not matter to readers, and it has no memory samples */
    return t;
}
