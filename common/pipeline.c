/* pipeline.c — pipeline schedules: generators, validator, timeline, trace measurements. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apiwatch.h"
#include "err.h"
#include "launch.h"
#include "pipeline.h"
#include "stream.h"

#define FAIL(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); return RL_ERR_ARG; } while (0)

static const char *const kind_names[] = { "gpipe", "1f1b", "interleaved", "zb-h1", "custom" };

const char *rl_pp_kind_name(rl_pp_kind k)
{
    return ((int)k >= 0 && (int)k <= RL_PP_CUSTOM) ? kind_names[k] : "?";
}

int rl_pp_kind_parse(const char *s)
{
    for (int i = 0; s && i <= RL_PP_CUSTOM; i++)
        if (strcmp(s, kind_names[i]) == 0)
            return i;
    if (s && (strcmp(s, "zbh1") == 0 || strcmp(s, "zb_h1") == 0))
        return RL_PP_ZB_H1;
    return -1;
}

static int check_pmv(int p, int m, int v, char *err, size_t errlen)
{
    if (p < 1 || p > RL_PP_MAX_STAGES)
        FAIL("pipeline: p = %d stages; use 1 to %d", p, RL_PP_MAX_STAGES);
    if (m < 1 || m > 100000)
        FAIL("pipeline: m = %d micro-batches; use 1 to 100000", m);
    if (v < 1 || v > 64)
        FAIL("pipeline: v = %d chunks per stage; use 1 to 64", v);
    return RL_OK;
}

rl_pp_schedule *rl_pp_schedule_empty(int p, int m, int v, int split_w, char *err, size_t errlen)
{
    if (check_pmv(p, m, v, err, errlen))
        return NULL;
    rl_pp_schedule *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->kind = RL_PP_CUSTOM;
    s->p = p;
    s->m = m;
    s->v = v;
    s->split_w = split_w ? 1 : 0;
    s->nops = calloc((size_t)p, sizeof *s->nops);
    s->cap = calloc((size_t)p, sizeof *s->cap);
    s->ops = calloc((size_t)p, sizeof *s->ops);
    if (!s->nops || !s->cap || !s->ops) {
        rl_pp_schedule_free(s);
        if (err && errlen)
            snprintf(err, errlen, "pipeline: out of memory");
        return NULL;
    }
    return s;
}

int rl_pp_schedule_append(rl_pp_schedule *s, int stage, char kind, int mb, int chunk)
{
    if (!s || stage < 0 || stage >= s->p)
        return RL_ERR_ARG;
    if (s->nops[stage] == s->cap[stage]) {
        int nc = s->cap[stage] ? 2 * s->cap[stage] : 16;
        rl_pp_op *o = realloc(s->ops[stage], (size_t)nc * sizeof *o);
        if (!o)
            return RL_ERR_NOMEM;
        s->ops[stage] = o;
        s->cap[stage] = nc;
    }
    s->ops[stage][s->nops[stage]++] = (rl_pp_op){ kind, mb, chunk };
    return RL_OK;
}

void rl_pp_schedule_free(rl_pp_schedule *s)
{
    if (!s)
        return;
    for (int r = 0; s->ops && r < s->p; r++)
        free(s->ops[r]);
    free(s->ops);
    free(s->nops);
    free(s->cap);
    free(s);
}

int rl_pp_virtual_stage(const rl_pp_schedule *s, int stage, int chunk) { return chunk * s->p + stage; }

void rl_pp_op_peers(const rl_pp_schedule *s, int stage, const rl_pp_op *op, int *recv_from, int *send_to)
{
    int rf = -1, st = -1;
    if (s && op && s->p > 0) {
        int vs = op->chunk * s->p + stage, V = s->v * s->p;
        if (op->kind == 'F') {
            if (vs > 0)
                rf = (vs - 1) % s->p;
            if (vs < V - 1)
                st = (vs + 1) % s->p;
        } else if (op->kind == 'B') {
            if (vs < V - 1)
                rf = (vs + 1) % s->p;
            if (vs > 0)
                st = (vs - 1) % s->p;
        }
        if (rf == stage)
            rf = -1;
        if (st == stage)
            st = -1;
    }
    if (recv_from)
        *recv_from = rf;
    if (send_to)
        *send_to = st;
}

static void op_name(const rl_pp_schedule *s, const rl_pp_op *o, char *buf, size_t size)
{
    if (s->v > 1)
        snprintf(buf, size, "%c%d.%d", o->kind, o->mb, o->chunk);
    else
        snprintf(buf, size, "%c%d", o->kind, o->mb);
}

const char *rl_pp_stage_string(const rl_pp_schedule *s, int stage, char *buf, size_t size)
{
    if (!buf || !size)
        return "";
    buf[0] = 0;
    if (!s || stage < 0 || stage >= s->p)
        return buf;
    size_t k = 0;
    for (int i = 0; i < s->nops[stage] && k < size; i++) {
        char n[32];
        op_name(s, &s->ops[stage][i], n, sizeof n);
        k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? " " : "", n);
    }
    return buf;
}

/* ------------------------------------------------------------------ generators */

static int gen_gpipe(rl_pp_schedule *s)
{
    int rc = 0;
    for (int r = 0; r < s->p; r++) {
        for (int i = 0; i < s->m; i++)
            rc |= rl_pp_schedule_append(s, r, 'F', i, 0);
        for (int i = 0; i < s->m; i++)
            rc |= rl_pp_schedule_append(s, r, 'B', i, 0);
    }
    return rc;
}

static int gen_1f1b(rl_pp_schedule *s)
{
    int rc = 0;
    for (int r = 0; r < s->p; r++) {
        int warm = s->p - r - 1 < s->m ? s->p - r - 1 : s->m, f = 0, b = 0;
        while (f < warm)
            rc |= rl_pp_schedule_append(s, r, 'F', f++, 0);
        while (f < s->m) {
            rc |= rl_pp_schedule_append(s, r, 'F', f++, 0);
            rc |= rl_pp_schedule_append(s, r, 'B', b++, 0);
        }
        while (b < s->m)
            rc |= rl_pp_schedule_append(s, r, 'B', b++, 0);
    }
    return rc;
}

/* Megatron-LM's interleaved order: the k-th forward of a stage is chunk (k/p) mod v of
 * micro-batch (k / pv)·p + k mod p; backwards go through the chunks in reverse. */
static int gen_interleaved(rl_pp_schedule *s)
{
    int p = s->p, v = s->v, total = s->m * v, rc = 0;
    for (int r = 0; r < p; r++) {
        int warm = (p - r - 1) * 2 + (v - 1) * p;
        if (warm > total)
            warm = total;
#define FWD(k) rl_pp_schedule_append(s, r, 'F', ((k) / (p * v)) * p + (k) % p, ((k) / p) % v)
#define BWD(k) rl_pp_schedule_append(s, r, 'B', ((k) / (p * v)) * p + (k) % p, v - 1 - ((k) / p) % v)
        int f = 0, b = 0;
        while (f < warm)
            rc |= FWD(f), f++;
        while (f < total) {
            rc |= FWD(f), f++;
            rc |= BWD(b), b++;
        }
        while (b < total)
            rc |= BWD(b), b++;
#undef FWD
#undef BWD
    }
    return rc;
}

/* ZB-H1: 1F1B's order of F and B (warm-up p−r−1 forwards on stage r), with the weight
 * gradients deferred: stage r runs W(i − r) right after B(i) and its last r W passes at the
 * end, so at most p micro-batches are held on any stage (F begun, W not done) — 1F1B's peak.
 * The deferred W passes fill the cool-down: with T_F = T_B = T_W = T and m >= p every stage
 * idles (p−1)·T — the paper's (p−1)(T_F + T_B − T_W), a third of 1F1B's 3(p−1)·T — so the
 * bubble fraction is (p−1)/(3m+p−1); with m < p there are too few W passes to fill it. */
static int gen_zbh1(rl_pp_schedule *s)
{
    int p = s->p, m = s->m, rc = 0;
    for (int r = 0; r < p; r++) {
        int warm = p - r - 1 < m ? p - r - 1 : m, f = 0, b = 0, w = 0;
        while (f < warm)
            rc |= rl_pp_schedule_append(s, r, 'F', f++, 0);
        while (b < m) {
            if (f < m)
                rc |= rl_pp_schedule_append(s, r, 'F', f++, 0);
            rc |= rl_pp_schedule_append(s, r, 'B', b++, 0);
            if (b - w > r)
                rc |= rl_pp_schedule_append(s, r, 'W', w++, 0);
        }
        while (w < m)
            rc |= rl_pp_schedule_append(s, r, 'W', w++, 0);
    }
    return rc;
}

RL_API_WATCHED
rl_pp_schedule *rl_pp_schedule_new(rl_pp_kind kind, int p, int m, int v, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (kind < RL_PP_GPIPE || kind > RL_PP_ZB_H1) {
        if (err && errlen)
            snprintf(err, errlen, "pipeline: unknown schedule %d (use gpipe, 1f1b, interleaved or zb-h1)", (int)kind);
        return NULL;
    }
    if (kind == RL_PP_INTERLEAVED) {
        if (v < 2) {
            if (err && errlen)
                snprintf(err, errlen, "pipeline: interleaved 1F1B needs v >= 2 model chunks per stage, got v = %d "
                                      "(v = 1 is plain 1F1B)", v);
            return NULL;
        }
        if (p >= 1 && m % p) {
            if (err && errlen)
                snprintf(err, errlen, "pipeline: interleaved 1F1B needs m a multiple of p (Megatron-LM): m = %d, "
                                      "p = %d; try m = %d", m, p, (m / p + 1) * p);
            return NULL;
        }
    } else
        v = 1;
    rl_pp_schedule *s = rl_pp_schedule_empty(p, m, v, kind == RL_PP_ZB_H1, err, errlen);
    if (!s)
        return NULL;
    s->kind = kind;
    int rc = kind == RL_PP_GPIPE ? gen_gpipe(s) : kind == RL_PP_1F1B ? gen_1f1b(s)
             : kind == RL_PP_INTERLEAVED ? gen_interleaved(s) : gen_zbh1(s);
    if (rc) {
        if (err && errlen)
            snprintf(err, errlen, "pipeline: out of memory generating the %s schedule", kind_names[kind]);
        rl_pp_schedule_free(s);
        return NULL;
    }
    return s;
}

/* ------------------------------------------------------------------ validation and simulation */

static int kind_index(char k) { return k == 'F' ? 0 : k == 'B' ? 1 : k == 'W' ? 2 : -1; }

/* Static checks: ranges, each op once, list order, W iff split_w. */
static int check_static(const rl_pp_schedule *s, char *err, size_t errlen)
{
    int m = s->m, v = s->v;
    char *seen = malloc((size_t)3 * m * v);
    if (!seen)
        FAIL("pipeline: out of memory");
    for (int r = 0; r < s->p; r++) {
        memset(seen, 0, (size_t)3 * m * v);
        for (int i = 0; i < s->nops[r]; i++) {
            const rl_pp_op *o = &s->ops[r][i];
            int k = kind_index(o->kind);
            char n[32];
            if (k < 0) {
                free(seen);
                FAIL("stage %d, op %d: unknown op kind '%c' (use 'F', 'B' or 'W')", r, i, o->kind ? o->kind : '?');
            }
            op_name(s, o, n, sizeof n);
            if (o->mb < 0 || o->mb >= m || o->chunk < 0 || o->chunk >= v) {
                free(seen);
                FAIL("stage %d, op %d (%s): micro-batch %d / chunk %d out of range (m = %d, v = %d)", r, i, n, o->mb,
                     o->chunk, m, v);
            }
            if (k == 2 && !s->split_w) {
                free(seen);
                FAIL("stage %d, op %d (%s): a W op in a schedule without split backward (set split_w, or drop W: "
                     "then B computes both gradients)", r, i, n);
            }
            char *me = &seen[(k * m + o->mb) * v + o->chunk];
            if (*me) {
                free(seen);
                FAIL("stage %d: %s appears twice (op %d); every op must run exactly once per micro-batch and chunk", r,
                     n, i);
            }
            if (k >= 1 && !seen[((k - 1) * m + o->mb) * v + o->chunk]) {
                free(seen);
                FAIL("stage %d, op %d: %s comes before its %c%d on this stage (%s needs the %s first)", r, i, n,
                     k == 1 ? 'F' : 'B', o->mb, k == 1 ? "backward" : "weight gradient",
                     k == 1 ? "forward's activations" : "backward's output gradient");
            }
            *me = 1;
        }
        for (int k = 0; k < (s->split_w ? 3 : 2); k++)
            for (int mb = 0; mb < m; mb++)
                for (int c = 0; c < v; c++)
                    if (!seen[(k * m + mb) * v + c]) {
                        char n[32];
                        rl_pp_op o = { "FBW"[k], mb, c };
                        op_name(s, &o, n, sizeof n);
                        free(seen);
                        FAIL("stage %d: %s is missing (%d ops listed; every micro-batch needs F and B%s on every "
                             "chunk)", r, n, s->nops[r], s->split_w ? " and W" : "");
                    }
    }
    free(seen);
    return RL_OK;
}

/* The messages stage a sends to stage b (kind 0 activations, 1 gradients) in a's order, or the
 * ones b expects from a in b's order; each as mb·V + virtual stage of the sender. */
static int link_msgs(const rl_pp_schedule *s, int a, int b, int kind, int recv_side, int *out)
{
    int p = s->p, V = s->v * p, n = 0, who = recv_side ? b : a;
    for (int i = 0; i < s->nops[who]; i++) {
        const rl_pp_op *o = &s->ops[who][i];
        int vs = o->chunk * p + who;
        if (kind == 0 && o->kind == 'F') {
            if (!recv_side && vs < V - 1 && (vs + 1) % p == b && b != a)
                out[n++] = o->mb * V + vs;
            if (recv_side && vs > 0 && (vs - 1) % p == a && b != a)
                out[n++] = o->mb * V + vs - 1;
        } else if (kind == 1 && o->kind == 'B') {
            if (!recv_side && vs > 0 && (vs - 1) % p == b && b != a)
                out[n++] = o->mb * V + vs;
            if (recv_side && vs < V - 1 && (vs + 1) % p == a && b != a)
                out[n++] = o->mb * V + vs + 1;
        }
    }
    return n;
}

static int check_fifo(const rl_pp_schedule *s, char *err, size_t errlen)
{
    int maxn = s->m * s->v * 2 + 1, V = s->v * s->p;
    int *snd = malloc(sizeof(int) * (size_t)maxn), *rcv = malloc(sizeof(int) * (size_t)maxn);
    if (!snd || !rcv) {
        free(snd);
        free(rcv);
        FAIL("pipeline: out of memory");
    }
    for (int a = 0; a < s->p; a++)
        for (int b = 0; b < s->p; b++)
            for (int kind = 0; kind < 2; kind++) {
                int ns = link_msgs(s, a, b, kind, 0, snd), nr = link_msgs(s, a, b, kind, 1, rcv);
                for (int i = 0; i < ns && i < nr; i++)
                    if (snd[i] != rcv[i]) {
                        int smb = snd[i] / V, svs = snd[i] % V, rmb = rcv[i] / V, rvs = rcv[i] % V;
                        free(snd);
                        free(rcv);
                        FAIL("stage %d receives %s from stage %d in another order than stage %d sends them: message "
                             "%d is micro-batch %d (virtual stage %d) but stage %d's receive %d wants micro-batch %d "
                             "(virtual stage %d) — rl_recv matches messages in order, so both stages must handle the "
                             "micro-batches in the same order",
                             b, kind ? "gradients" : "activations", a, a, i, smb, svs, b, i, rmb, rvs);
                    }
            }
    free(snd);
    free(rcv);
    return RL_OK;
}

/* Runs the stages in list order, an op starting once its input has arrived (sends never
 * block the sender); fills start/end (may be NULL: unit costs, for validation). */
static int run(const rl_pp_schedule *s, const rl_pp_costs *c, double **start, double **end, char *err, size_t errlen)
{
    int p = s->p, m = s->m, V = s->v * p;
    double *done = malloc(sizeof(double) * (size_t)3 * m * V); /* end time of (kind, mb, vs), -1 not yet */
    int *pos = calloc((size_t)p, sizeof(int));
    double *clock = calloc((size_t)p, sizeof(double));
    if (!done || !pos || !clock) {
        free(done);
        free(pos);
        free(clock);
        FAIL("pipeline: out of memory");
    }
    for (int i = 0; i < 3 * m * V; i++)
        done[i] = -1;
#define DONE(k, mb, vs) done[((k) * m + (mb)) * V + (vs)]
    double tf = c ? c->f / s->v : 1, tb = c ? (s->split_w ? c->b : c->b + c->w) / s->v : 1,
           tw = c ? c->w / s->v : 1, p2p = c ? c->p2p : 0;
    int left = 0;
    for (int r = 0; r < p; r++)
        left += s->nops[r];
    while (left > 0) {
        int progress = 0;
        for (int r = 0; r < p; r++)
            while (pos[r] < s->nops[r]) {
                const rl_pp_op *o = &s->ops[r][pos[r]];
                int vs = o->chunk * p + r;
                double ready = 0, dur;
                if (o->kind == 'F') {
                    if (vs > 0) {
                        double d = DONE(0, o->mb, vs - 1);
                        if (d < 0)
                            break;
                        ready = d + ((vs - 1) % p != r ? p2p : 0);
                    }
                    dur = tf;
                } else if (o->kind == 'B') {
                    ready = DONE(0, o->mb, vs); /* its own F: earlier in the list (checked) */
                    if (vs < V - 1) {
                        double d = DONE(1, o->mb, vs + 1);
                        if (d < 0)
                            break;
                        d += (vs + 1) % p != r ? p2p : 0;
                        ready = d > ready ? d : ready;
                    }
                    dur = tb;
                } else {
                    ready = DONE(1, o->mb, vs);
                    dur = tw;
                }
                double st = ready > clock[r] ? ready : clock[r];
                clock[r] = st + dur;
                DONE(kind_index(o->kind), o->mb, vs) = clock[r];
                if (start)
                    start[r][pos[r]] = st;
                if (end)
                    end[r][pos[r]] = clock[r];
                pos[r]++;
                left--;
                progress = 1;
            }
        if (!progress)
            break;
    }
    if (left > 0 && err && errlen) { /* deadlock: what every blocked stage waits for */
        size_t k = (size_t)snprintf(err, errlen, "the schedule deadlocks:");
        for (int r = 0; r < p && k < errlen; r++) {
            if (pos[r] == s->nops[r])
                continue;
            const rl_pp_op *o = &s->ops[r][pos[r]];
            int vs = o->chunk * p + r, wvs = o->kind == 'F' ? vs - 1 : vs + 1;
            char n[32], w[32];
            op_name(s, o, n, sizeof n);
            rl_pp_op wo = { o->kind, o->mb, wvs / p };
            op_name(s, &wo, w, sizeof w);
            k += (size_t)snprintf(err + k, errlen - k, " stage %d waits at %s for the %s of %s on stage %d;", r, n,
                                  o->kind == 'F' ? "activation" : "gradient", w, wvs % p);
        }
        if (k < errlen)
            snprintf(err + k, errlen - k, " no stage can go on (a cycle of waits: reorder the ops so that every "
                                          "input is produced before it is awaited)");
    }
#undef DONE
    free(done);
    free(pos);
    free(clock);
    return left > 0 ? RL_ERR_ARG : RL_OK;
}

int rl_pp_validate(const rl_pp_schedule *s, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!s || !s->nops || !s->ops)
        FAIL("pipeline: the schedule is NULL");
    int rc = check_pmv(s->p, s->m, s->v, err, errlen);
    if (!rc)
        rc = check_static(s, err, errlen);
    if (!rc)
        rc = check_fifo(s, err, errlen);
    if (!rc)
        rc = run(s, NULL, NULL, NULL, err, errlen);
    return rc;
}

void rl_pp_timeline_free(rl_pp_timeline *t)
{
    if (!t)
        return;
    for (int r = 0; r < t->p; r++) {
        if (t->start)
            free(t->start[r]);
        if (t->end)
            free(t->end[r]);
    }
    free(t->start);
    free(t->end);
    free(t->stage_busy);
    free(t->stage_bubble);
    free(t->peak_inflight);
    free(t);
}

RL_API_WATCHED
rl_pp_timeline *rl_pp_simulate(const rl_pp_schedule *s, const rl_pp_costs *c, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!c || !(c->f >= 0) || !(c->b >= 0) || !(c->w >= 0) || !(c->p2p >= 0) || !isfinite(c->f + c->b + c->w + c->p2p)) {
        if (err && errlen)
            snprintf(err, errlen, "pipeline: costs must be given, finite and >= 0 (f, b, w, p2p)");
        return NULL;
    }
    if (rl_pp_validate(s, err, errlen))
        return NULL;
    int p = s->p;
    rl_pp_timeline *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->p = p;
    t->start = calloc((size_t)p, sizeof *t->start);
    t->end = calloc((size_t)p, sizeof *t->end);
    t->stage_busy = calloc((size_t)p, sizeof(double));
    t->stage_bubble = calloc((size_t)p, sizeof(double));
    t->peak_inflight = calloc((size_t)p, sizeof(double));
    int bad = !t->start || !t->end || !t->stage_busy || !t->stage_bubble || !t->peak_inflight;
    for (int r = 0; r < p && !bad; r++) {
        t->start[r] = calloc((size_t)s->nops[r] + 1, sizeof(double));
        t->end[r] = calloc((size_t)s->nops[r] + 1, sizeof(double));
        bad = !t->start[r] || !t->end[r];
    }
    if (bad || run(s, c, t->start, t->end, err, errlen)) {
        rl_pp_timeline_free(t);
        return NULL;
    }
    for (int r = 0; r < p; r++) {
        int held = 0, peak = 0;
        for (int i = 0; i < s->nops[r]; i++) {
            t->stage_busy[r] += t->end[r][i] - t->start[r][i];
            if (t->end[r][i] > t->makespan)
                t->makespan = t->end[r][i];
            char k = s->ops[r][i].kind;
            held += k == 'F' ? 1 : (k == (s->split_w ? 'W' : 'B')) ? -1 : 0;
            peak = held > peak ? held : peak;
        }
        t->peak_inflight[r] = (double)peak / s->v;
    }
    for (int r = 0; r < p; r++) {
        t->stage_bubble[r] = t->makespan > 0 ? 1.0 - t->stage_busy[r] / t->makespan : 0;
        t->bubble_frac += t->stage_bubble[r] / p;
    }
    return t;
}

int rl_pp_timeline_to_trace(const rl_pp_schedule *s, const rl_pp_timeline *tl, int step, rl_trace *t)
{
    if (!s || !tl || !t || tl->p != s->p)
        return RL_ERR_ARG;
    for (int r = 0; r < s->p; r++)
        for (int i = 0; i < s->nops[r]; i++) {
            const rl_pp_op *o = &s->ops[r][i];
            rl_trace_event e;
            rl_trace_event_init(&e);
            e.rank = r;
            e.stream = 0;
            e.cat = RL_CAT_COMPUTE;
            op_name(s, o, e.name, sizeof e.name);
            e.vstart = tl->start[r][i];
            e.vend = tl->end[r][i];
            e.phase = o->kind;
            e.tags[RL_TAG_STAGE] = r;
            e.tags[RL_TAG_MICROBATCH] = o->mb;
            e.tags[RL_TAG_CHUNK] = o->chunk;
            e.tags[RL_TAG_STEP] = step;
            int rc = rl_trace_add(t, &e);
            if (rc)
                return rc;
        }
    return RL_OK;
}

void rl_pp_mark(rl_ctx *ctx, int stage, const rl_pp_op *op)
{
    if (!ctx || !op)
        return;
    rl_set_tag(ctx, RL_TAG_STAGE, stage);
    rl_set_tag(ctx, RL_TAG_MICROBATCH, op->mb);
    rl_set_tag(ctx, RL_TAG_CHUNK, op->chunk);
    rl_set_phase(ctx, op->kind);
}

void rl_pp_unmark(rl_ctx *ctx)
{
    if (!ctx)
        return;
    rl_set_tag(ctx, RL_TAG_STAGE, -1);
    rl_set_tag(ctx, RL_TAG_MICROBATCH, -1);
    rl_set_tag(ctx, RL_TAG_CHUNK, -1);
    rl_set_phase(ctx, 0);
}

/* ------------------------------------------------------------------ from a trace */

static int is_op_event(const rl_trace_event *e, int step)
{
    return e->cat == RL_CAT_COMPUTE && (e->phase == 'F' || e->phase == 'B' || e->phase == 'W') &&
           e->tags[RL_TAG_STAGE] >= 0 && (step < 0 || e->tags[RL_TAG_STEP] == step) && e->vend >= e->vstart;
}

static int cmp_iv(const void *pa, const void *pb)
{
    const double *a = pa, *b = pb;
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    return (a[1] > b[1]) - (a[1] < b[1]);
}

int rl_pp_bubble_from_trace(const rl_trace *t, int step, rl_pp_trace_stats *out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!t || !out)
        FAIL("rl_pp_bubble_from_trace: the trace and out must not be NULL");
    memset(out, 0, sizeof *out);
    double t0 = INFINITY, t1 = -INFINITY;
    for (size_t i = 0; i < t->n; i++)
        if (is_op_event(&t->ev[i], step)) {
            t0 = fmin(t0, t->ev[i].vstart);
            t1 = fmax(t1, t->ev[i].vend);
        }
    if (!(t1 >= t0))
        FAIL("no pipeline ops in the trace%s: tag each op's compute with rl_pp_mark (stage, micro-batch, phase "
             "F/B/W)", step >= 0 ? " for this step" : "");
    out->t0 = t0;
    out->makespan = t1 - t0;
    double *iv = malloc(sizeof(double) * 2 * (t->n + 1));
    int nst[RL_PP_MAX_STAGES] = { 0 };
    if (!iv)
        FAIL("out of memory");
    for (int r = 0; r < t->nranks; r++) {
        /* this rank's op intervals, its stage, its (mb, chunk) range and whether it has W */
        size_t n = 0;
        int stage = -1, maxmb = -1, maxc = -1, has_w = 0;
        for (size_t i = 0; i < t->n; i++) {
            const rl_trace_event *e = &t->ev[i];
            if (e->rank != r || !is_op_event(e, step))
                continue;
            iv[2 * n] = e->vstart;
            iv[2 * n + 1] = e->vend;
            n++;
            stage = e->tags[RL_TAG_STAGE];
            maxmb = e->tags[RL_TAG_MICROBATCH] > maxmb ? e->tags[RL_TAG_MICROBATCH] : maxmb;
            maxc = e->tags[RL_TAG_CHUNK] > maxc ? e->tags[RL_TAG_CHUNK] : maxc;
            has_w |= e->phase == 'W';
        }
        if (!n)
            continue;
        if (stage >= RL_PP_MAX_STAGES) {
            free(iv);
            FAIL("stage tag %d is beyond %d stages", stage, RL_PP_MAX_STAGES);
        }
        qsort(iv, n, 2 * sizeof(double), cmp_iv);
        double busy = 0, cs = iv[0], ce = iv[1];
        for (size_t i = 1; i < n; i++) {
            if (iv[2 * i] > ce) {
                busy += ce - cs;
                cs = iv[2 * i];
                ce = iv[2 * i + 1];
            } else if (iv[2 * i + 1] > ce)
                ce = iv[2 * i + 1];
        }
        busy += ce - cs;
        double bub = out->makespan > 0 ? 1.0 - busy / out->makespan : 0;
        out->nranks++;
        out->bubble_frac += bub;
        out->stage_bubble[stage] += bub;
        nst[stage]++;
        if (stage + 1 > out->nstages)
            out->nstages = stage + 1;
        /* in flight: (mb, chunk) from its first F start to its last B (W) end */
        double peak = 0;
        if (maxmb >= 0) {
            int nc = maxc + 1 > 0 ? maxc + 1 : 1, nk = (maxmb + 1) * nc;
            double *first = malloc(sizeof(double) * (size_t)nk), *last = malloc(sizeof(double) * (size_t)nk);
            double *sweep = malloc(sizeof(double) * 4 * (size_t)nk); /* (time, ±1) at acquire and release */
            char *chunks = calloc((size_t)nc, 1);
            if (first && last && sweep && chunks) {
                for (int k = 0; k < nk; k++)
                    first[k] = INFINITY, last[k] = -INFINITY;
                for (size_t i = 0; i < t->n; i++) {
                    const rl_trace_event *e = &t->ev[i];
                    if (e->rank != r || !is_op_event(e, step) || e->tags[RL_TAG_MICROBATCH] < 0)
                        continue;
                    int c = e->tags[RL_TAG_CHUNK] > 0 ? e->tags[RL_TAG_CHUNK] : 0;
                    int k = e->tags[RL_TAG_MICROBATCH] * nc + c;
                    chunks[c] = 1;
                    if (e->phase == 'F')
                        first[k] = fmin(first[k], e->vstart);
                    else if (e->phase == (has_w ? 'W' : 'B'))
                        last[k] = fmax(last[k], e->vend);
                }
                int ns = 0, used = 0;
                for (int c = 0; c < nc; c++)
                    used += chunks[c];
                for (int k = 0; k < nk; k++)
                    if (isfinite(first[k])) {
                        sweep[2 * ns] = first[k];
                        sweep[2 * ns + 1] = 1;
                        ns++;
                        sweep[2 * ns] = isfinite(last[k]) && last[k] >= first[k] ? last[k] : INFINITY;
                        sweep[2 * ns + 1] = -1;
                        ns++;
                    }
                qsort(sweep, (size_t)ns, 2 * sizeof(double), cmp_iv); /* releases (-1) first at equal times */
                double held = 0;
                for (int i = 0; i < ns; i++) {
                    held += sweep[2 * i + 1];
                    peak = held > peak ? held : peak;
                }
                peak /= used > 0 ? used : 1;
            }
            free(first);
            free(last);
            free(sweep);
            free(chunks);
        }
        if (peak > out->peak_inflight[stage])
            out->peak_inflight[stage] = peak;
    }
    free(iv);
    out->bubble_frac /= out->nranks;
    for (int s = 0; s < out->nstages; s++)
        if (nst[s])
            out->stage_bubble[s] /= nst[s];
    return RL_OK;
}

/* ------------------------------------------------------------------ tick table */

#define SAY(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); } while (0)

/* Index of (virtual stage, mb) in the per-op done-tick arrays. */
#define TICK_AT(vs, mb) ((size_t)(vs) * (size_t)s->m + (size_t)(mb))

int rl_pp_ticks(const rl_pp_schedule *s, int **tick, int *nticks, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!s || !tick || !nticks || s->p < 1 || s->m < 1 || s->v < 1)
        FAIL("rl_pp_ticks: a schedule of p, m, v >= 1 and somewhere to put the ticks are needed");
    int p = s->p, V = s->p * s->v;
    size_t cells = (size_t)V * (size_t)s->m, total = 0;
    int *done[3], *next = calloc((size_t)p, sizeof(int)); /* F, B, W: the tick each ran in, -1 before */
    for (int k = 0; k < 3; k++)
        done[k] = malloc(cells * sizeof(int));
    if (!next || !done[0] || !done[1] || !done[2]) {
        free(next), free(done[0]), free(done[1]), free(done[2]);
        FAIL("out of memory");
    }
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < cells; i++)
            done[k][i] = -1;
    for (int r = 0; r < p; r++)
        total += (size_t)s->nops[r];
    int rc = RL_OK, T = 0;
    for (size_t ran = 0; ran < total; T++) {
        size_t before = ran;
        for (int r = 0; r < p && rc == RL_OK; r++) {
            if (next[r] >= s->nops[r])
                continue;
            const rl_pp_op *op = &s->ops[r][next[r]];
            int vs = op->chunk * p + r, k = op->kind == 'F' ? 0 : op->kind == 'B' ? 1 : 2;
            if (op->mb < 0 || op->mb >= s->m || op->chunk < 0 || op->chunk >= s->v || (op->kind != 'F' &&
                op->kind != 'B' && op->kind != 'W')) {
                SAY("stage %d, op %d: %c%d.%d is not an op of this schedule", r, next[r], op->kind, op->mb,
                    op->chunk);
                rc = RL_ERR_ARG;
                break;
            }
            /* what it waits for ran in an earlier tick: an op takes one tick, a message none */
#define BEFORE(kk, v2) (done[kk][TICK_AT(v2, op->mb)] >= 0 && done[kk][TICK_AT(v2, op->mb)] < T)
            int ready = k == 0 ? vs == 0 || BEFORE(0, vs - 1)
                      : k == 1 ? BEFORE(0, vs) && (vs == V - 1 || BEFORE(1, vs + 1))
                               : BEFORE(1, vs);
#undef BEFORE
            if (ready) {
                done[k][TICK_AT(vs, op->mb)] = T;
                tick[r][next[r]++] = T;
                ran++;
            }
        }
        if (rc != RL_OK)
            break;
        if (ran == before) {
            SAY("the schedule deadlocks at tick %d: no stage's next op has its input", T);
            rc = RL_ERR_ARG;
            break;
        }
    }
    *nticks = T;
    free(next), free(done[0]), free(done[1]), free(done[2]);
    return rc;
}
#undef TICK_AT

int rl_pp_print_ticks(const rl_pp_schedule *s, FILE *out, char *err, size_t errlen)
{
    if (!s || !out)
        FAIL("rl_pp_print_ticks: a schedule and a stream are needed");
    int **tick = calloc((size_t)s->p, sizeof *tick), n = 0, rc = tick ? RL_OK : RL_ERR_NOMEM;
    for (int r = 0; rc == RL_OK && r < s->p; r++)
        if (!(tick[r] = malloc(((size_t)s->nops[r] + 1) * sizeof(int))))
            rc = RL_ERR_NOMEM;
    if (rc == RL_OK)
        rc = rl_pp_ticks(s, tick, &n, err, errlen);
    else
        SAY("out of memory");
    int *at = rc == RL_OK ? calloc((size_t)s->p, sizeof(int)) : NULL;
    for (int T = -1; at && T < n; T++) { /* T = -1: the header */
        char line[16 * RL_PP_MAX_STAGES + 16];
        int k = T < 0 ? snprintf(line, sizeof line, "tick") : snprintf(line, sizeof line, "%4d", T);
        for (int r = 0; r < s->p && r < RL_PP_MAX_STAGES; r++) {
            char cell[24] = ".";
            if (T < 0)
                snprintf(cell, sizeof cell, "stage%d", r);
            else if (at[r] < s->nops[r] && tick[r][at[r]] == T) {
                const rl_pp_op *op = &s->ops[r][at[r]++];
                if (s->v > 1)
                    snprintf(cell, sizeof cell, "%c%d.%d", op->kind, op->mb, op->chunk);
                else
                    snprintf(cell, sizeof cell, "%c%d", op->kind, op->mb);
            }
            if ((size_t)k < sizeof line)
                k += snprintf(line + k, sizeof line - (size_t)k, "  %-7s", cell);
        }
        k = (size_t)k < sizeof line ? k : (int)sizeof line - 1;
        while (k > 0 && line[k - 1] == ' ')
            k--;
        fprintf(out, "%.*s\n", k, line);
    }
    free(at);
    for (int r = 0; tick && r < s->p; r++)
        free(tick[r]);
    free(tick);
    return rc;
}

/* One op of a trace: its first event's start (and index, for ties), and what it is. */
typedef struct trace_op {
    double t;
    size_t at;
    int stage;
    rl_pp_op op;
} trace_op;

static int cmp_trace_op(const void *pa, const void *pb)
{
    const trace_op *a = pa, *b = pb;
    if (a->stage != b->stage)
        return a->stage - b->stage;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->at > b->at) - (a->at < b->at);
}

rl_pp_schedule *rl_pp_schedule_from_trace(const rl_trace *t, int step, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!t) {
        SAY("rl_pp_schedule_from_trace: no trace");
        return NULL;
    }
    /* the ops of the lowest rank of each stage (DP replicas run the same list), deduplicated:
     * a stage op may be several events with the same tags */
    int rank_of[RL_PP_MAX_STAGES], p = 0, m = 0, v = 1, split_w = 0;
    for (int k = 0; k < RL_PP_MAX_STAGES; k++)
        rank_of[k] = -1;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        int st = e->tags[RL_TAG_STAGE];
        if (!is_op_event(e, step) || st >= RL_PP_MAX_STAGES || e->tags[RL_TAG_MICROBATCH] < 0)
            continue;
        if (rank_of[st] < 0 || e->rank < rank_of[st])
            rank_of[st] = e->rank;
        p = st + 1 > p ? st + 1 : p;
        m = e->tags[RL_TAG_MICROBATCH] + 1 > m ? e->tags[RL_TAG_MICROBATCH] + 1 : m;
        v = e->tags[RL_TAG_CHUNK] + 1 > v ? e->tags[RL_TAG_CHUNK] + 1 : v;
        split_w |= e->phase == 'W';
    }
    trace_op *ops = malloc((t->n + 1) * sizeof *ops);
    size_t n = 0;
    for (size_t i = 0; ops && i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        int st = e->tags[RL_TAG_STAGE];
        if (is_op_event(e, step) && st < RL_PP_MAX_STAGES && e->tags[RL_TAG_MICROBATCH] >= 0 && e->rank == rank_of[st])
            ops[n++] = (trace_op){ e->vstart, i, st, { e->phase, e->tags[RL_TAG_MICROBATCH],
                                                       e->tags[RL_TAG_CHUNK] > 0 ? e->tags[RL_TAG_CHUNK] : 0 } };
    }
    if (!ops || !p) {
        SAY(ops ? "no pipeline ops in the trace%s: tag each op's compute with rl_pp_mark"
                                  : "out of memory", step >= 0 ? " for this step" : "");
        free(ops);
        return NULL;
    }
    qsort(ops, n, sizeof *ops, cmp_trace_op);
    rl_pp_schedule *s = rl_pp_schedule_empty(p, m, v, split_w, err, errlen);
    unsigned char *seen = s ? calloc((size_t)p * (size_t)m * (size_t)v * 3, 1) : NULL;
    for (size_t i = 0; seen && i < n; i++) {
        const rl_pp_op *o = &ops[i].op;
        size_t at = (((size_t)ops[i].stage * (size_t)v + (size_t)o->chunk) * (size_t)m + (size_t)o->mb) * 3 +
                    (size_t)(o->kind == 'F' ? 0 : o->kind == 'B' ? 1 : 2);
        if (!seen[at]++ && rl_pp_schedule_append(s, ops[i].stage, o->kind, o->mb, o->chunk) != RL_OK) {
            SAY("out of memory");
            break;
        }
    }
    if (s && !seen) {
        SAY("out of memory");
        rl_pp_schedule_free(s);
        s = NULL;
    }
    free(seen);
    free(ops);
    return s;
}
int rl_pp_print_trace_ticks(const rl_trace *t, FILE *out, char *err, size_t errlen)
{
    int step = -1; /* the first step with pipeline ops, or every event when none is tagged */
    for (size_t i = 0; t && i < t->n; i++)
        if (is_op_event(&t->ev[i], -1) && t->ev[i].tags[RL_TAG_STEP] >= 0 &&
            (step < 0 || t->ev[i].tags[RL_TAG_STEP] < step))
            step = t->ev[i].tags[RL_TAG_STEP];
    rl_pp_schedule *s = rl_pp_schedule_from_trace(t, step, err, errlen);
    if (!s)
        return RL_ERR_ARG;
    int rc = rl_pp_print_ticks(s, out, err, errlen);
    rl_pp_schedule_free(s);
    return rc;
}
#undef SAY
