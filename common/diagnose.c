/* diagnose.c — flight-dump analysis, spread / straggler detection, spike detection. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apiwatch.h"
#include "diagnose.h"
#include "err.h"

#define FAIL(code, ...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); return code; } while (0)

static const char *const kind_names[] = { "none", "hang", "mismatch", "p2p" };

RL_API_WATCHED
const char *rl_diag_kind_name(rl_diag_kind k)
{
    RL_API_ENTRY();
    return (k >= 0 && k <= RL_DIAG_P2P) ? kind_names[k] : "?";
}

RL_API_WATCHED
void rl_diag_flight_free(rl_diag_flight *fl)
{
    RL_API_ENTRY();
    if (!fl)
        return;
    free(fl->rec);
    memset(fl, 0, sizeof *fl);
}

static void copy_str(char *dst, size_t size, json_t *v)
{
    snprintf(dst, size, "%s", json_is_string(v) ? json_string_value(v) : "");
}

RL_API_WATCHED
int rl_diag_flight_load(const char *path, rl_diag_flight *fl, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!path || !fl)
        FAIL(RL_ERR_ARG, "rl_diag_flight_load: path and fl must not be NULL");
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root)
        FAIL(RL_ERR_IO, "%s: cannot read the flight dump (%s, line %d column %d); it is written as TRACE.flight.json "
                        "when the watchdog fires with --trace TRACE", path, je.text, je.line, je.column);
    json_t *ranks = json_object_get(root, "ranks");
    if (!json_is_array(ranks)) {
        json_decref(root);
        FAIL(RL_ERR_ARG, "%s: not a flight dump (no \"ranks\" array)", path);
    }
    if (!fl->verdict[0])
        copy_str(fl->verdict, sizeof fl->verdict, json_object_get(root, "verdict"));
    size_t i;
    json_t *rk;
    json_array_foreach(ranks, i, rk) {
        json_t *jr = json_object_get(rk, "rank"), *recs = json_object_get(rk, "records");
        if (!json_is_integer(jr) || !json_is_array(recs)) {
            json_decref(root);
            FAIL(RL_ERR_ARG, "%s: entry %zu of \"ranks\" lacks \"rank\" or \"records\"", path, i);
        }
        json_int_t jrank = json_integer_value(jr);
        if (jrank < 0 || jrank >= RL_DIAG_MAX_RANKS) {
            json_decref(root);
            FAIL(RL_ERR_ARG, "%s: entry %zu of \"ranks\" is rank %lld, outside 0..%d", path, i, (long long)jrank,
                 RL_DIAG_MAX_RANKS - 1);
        }
        int rank = (int)jrank;
        if (rank + 1 > fl->nranks)
            fl->nranks = rank + 1;
        size_t j;
        json_t *r;
        size_t add = json_array_size(recs);
        rl_diag_rec *nr = realloc(fl->rec, sizeof *nr * (size_t)(fl->nrec + (int)add + 1));
        if (!nr) {
            json_decref(root);
            FAIL(RL_ERR_NOMEM, "out of memory");
        }
        fl->rec = nr;
        json_array_foreach(recs, j, r) {
            rl_diag_rec *d = &fl->rec[fl->nrec++];
            memset(d, 0, sizeof *d);
            d->rank = rank;
            d->seq = json_integer_value(json_object_get(r, "seq"));
            d->p2p_seq = json_integer_value(json_object_get(r, "p2p_seq"));
            d->count = json_integer_value(json_object_get(r, "count"));
            d->peer = (int)json_integer_value(json_object_get(r, "peer"));
            d->t_enqueued = json_number_value(json_object_get(r, "t_enqueued"));
            copy_str(d->op, sizeof d->op, json_object_get(r, "op"));
            copy_str(d->dtype, sizeof d->dtype, json_object_get(r, "dtype"));
            copy_str(d->comm, sizeof d->comm, json_object_get(r, "comm"));
            copy_str(d->state, sizeof d->state, json_object_get(r, "state"));
            if (!json_is_integer(json_object_get(r, "seq")) || !d->op[0] || !d->comm[0]) {
                json_decref(root);
                FAIL(RL_ERR_ARG, "%s: rank %d record %zu lacks seq, op or comm", path, rank, j);
            }
            if (d->seq < -1) {
                json_decref(root);
                FAIL(RL_ERR_ARG, "%s: rank %d record %zu has seq %lld (a collective's seq is 0 or more, a "
                     "send/recv's -1)", path, rank, j, (long long)d->seq);
            }
        }
    }
    json_decref(root);
    return RL_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int same_call(const rl_diag_rec *a, const rl_diag_rec *b)
{
    return strcmp(a->op, b->op) == 0 && a->count == b->count && strcmp(a->dtype, b->dtype) == 0;
}

/* The record of rank r at seq on comm (collectives), NULL if none. */
static const rl_diag_rec *find(const rl_diag_flight *fl, const char *comm, int r, int64_t seq)
{
    for (int i = 0; i < fl->nrec; i++)
        if (fl->rec[i].rank == r && fl->rec[i].seq == seq && strcmp(fl->rec[i].comm, comm) == 0)
            return &fl->rec[i];
    return NULL;
}

/* Looks for the first anomaly on one communicator; returns 1 and fills res (and *when). */
RL_API_WATCHED
static int analyze_comm(const rl_diag_flight *fl, const char *comm, rl_diag_result *res, double *when)
{
    RL_API_ENTRY();
    int n = fl->nranks;
    int64_t *lo = malloc(sizeof(int64_t) * (size_t)(n + 1)), *hi = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *seqs = malloc(sizeof(int64_t) * (size_t)(fl->nrec + 1));
    char *member = calloc((size_t)n + 1, 1);
    int found = 0, nseq = 0;
    if (!lo || !hi || !member || !seqs)
        goto out;
    for (int r = 0; r < n; r++)
        lo[r] = INT64_MAX, hi[r] = -1, member[r] = strcmp(comm, "world") == 0;
    for (int i = 0; i < fl->nrec; i++) {
        const rl_diag_rec *d = &fl->rec[i];
        if (d->seq < 0 || d->rank < 0 || d->rank >= n || strcmp(d->comm, comm))
            continue;
        member[d->rank] = 1;
        lo[d->rank] = d->seq < lo[d->rank] ? d->seq : lo[d->rank];
        hi[d->rank] = d->seq > hi[d->rank] ? d->seq : hi[d->rank];
        seqs[nseq++] = d->seq;
    }
    /* the seqs some rank reached, in order (a seq nobody reached has nothing to compare) */
    qsort(seqs, (size_t)nseq, sizeof *seqs, cmp_i64);
    for (int k = 0; k < nseq && !found; k++) {
        int64_t s = seqs[k];
        if (k > 0 && s == seqs[k - 1])
            continue;
        const rl_diag_rec *recs[4096];
        int present = 0, absent = -1, nabsent = 0, incomplete = 0;
        for (int r = 0; r < n && r < 4096; r++) {
            recs[r] = NULL;
            if (!member[r])
                continue;
            const rl_diag_rec *d = find(fl, comm, r, s);
            if (d) {
                recs[r] = d;
                present++;
                incomplete |= strcmp(d->state, "completed") != 0;
            } else if (hi[r] < s) { /* never got that far (lo[r] > s: rolled out of the recorder, done) */
                if (absent < 0)
                    absent = r;
                nabsent++;
            }
        }
        if (!present)
            continue;
        /* mismatch: a call that differs from the majority */
        int culprit = -1, best = -1, agree_with_best = 0;
        for (int r = 0; r < n && r < 4096; r++) {
            if (!recs[r])
                continue;
            int agree = 0;
            for (int q = 0; q < n && q < 4096; q++)
                agree += recs[q] && same_call(recs[r], recs[q]);
            if (agree > agree_with_best)
                agree_with_best = agree, best = r;
        }
        for (int r = 0; r < n && r < 4096 && best >= 0; r++)
            if (recs[r] && !same_call(recs[r], recs[best])) {
                culprit = r;
                break;
            }
        *when = INFINITY;
        for (int r = 0; r < n && r < 4096; r++)
            if (recs[r] && recs[r]->t_enqueued < *when)
                *when = recs[r]->t_enqueued;
        res->seq = s;
        snprintf(res->comm, sizeof res->comm, "%s", comm);
        if (culprit >= 0) {
            const rl_diag_rec *a = recs[best], *b = recs[culprit];
            res->kind = RL_DIAG_MISMATCH;
            res->rank = culprit;
            snprintf(res->op, sizeof res->op, "%s", a->op);
            snprintf(res->message, sizeof res->message,
                     "mismatch at seq %lld on %s: rank %d called %s(count=%lld, %s) but %d rank%s called %s(count=%lld, "
                     "%s)", (long long)s, comm, culprit, b->op, (long long)b->count, b->dtype, agree_with_best,
                     agree_with_best == 1 ? "" : "s", a->op, (long long)a->count, a->dtype);
            found = 1;
        } else if (nabsent > 0) {
            res->kind = RL_DIAG_HANG;
            res->rank = absent;
            snprintf(res->op, sizeof res->op, "%s", recs[best]->op);
            snprintf(res->message, sizeof res->message,
                     "hang at seq %lld on %s: rank %d never called %s (its last seq there: %lld) while %d rank%s wait%s "
                     "in it%s", (long long)s, comm, absent, recs[best]->op, (long long)hi[absent], present,
                     present == 1 ? "" : "s", present == 1 ? "s" : "", nabsent > 1 ? " (other ranks missing too)" : "");
            found = 1;
        } else if (incomplete) {
            res->kind = RL_DIAG_HANG;
            res->rank = -1;
            snprintf(res->op, sizeof res->op, "%s", recs[best]->op);
            snprintf(res->message, sizeof res->message,
                     "hang at seq %lld on %s: every rank entered %s but it never completed (a rank is stuck on another "
                     "communicator or in a send/recv)", (long long)s, comm, recs[best]->op);
            found = 1;
        }
    }
out:
    free(lo);
    free(hi);
    free(member);
    free(seqs);
    return found;
}

/* Over communicators: does anomaly a (its seq first enqueued at time ta) come before b (at tb)?
 * The earlier time wins; at equal times a mismatch beats a hang, then the name that sorts first. */
static int earlier(const rl_diag_result *a, double ta, const rl_diag_result *b, double tb)
{
    if (ta != tb)
        return ta < tb;
    if ((a->kind == RL_DIAG_MISMATCH) != (b->kind == RL_DIAG_MISMATCH))
        return a->kind == RL_DIAG_MISMATCH;
    return strcmp(a->comm, b->comm) < 0;
}

RL_API_WATCHED
int rl_diag_flight_analyze(const rl_diag_flight *fl, rl_diag_result *out)
{
    RL_API_ENTRY();
    if (!fl || !out || fl->nranks < 0 || fl->nranks > RL_DIAG_MAX_RANKS || fl->nrec < 0 || (fl->nrec && !fl->rec))
        return RL_ERR_ARG;
    memset(out, 0, sizeof *out);
    out->rank = -1;
    out->seq = -1;
    double best = INFINITY;
    for (int i = 0; i < fl->nrec; i++) {
        const char *c = fl->rec[i].comm;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(fl->rec[j].comm, c) == 0;
        if (seen || fl->rec[i].seq < 0)
            continue;
        rl_diag_result r;
        memset(&r, 0, sizeof r);
        double when;
        if (analyze_comm(fl, c, &r, &when) && (out->kind == RL_DIAG_NONE || earlier(&r, when, out, best))) {
            *out = r;
            best = when;
        }
    }
    if (out->kind != RL_DIAG_NONE)
        return RL_OK;
    /* only send/recv stuck: the lowest blocked rank, its oldest call (dump order does not matter) */
    const rl_diag_rec *p = NULL;
    for (int i = 0; i < fl->nrec; i++) {
        const rl_diag_rec *d = &fl->rec[i];
        if (d->seq >= 0 || strcmp(d->state, "completed") == 0)
            continue;
        if (!p || d->rank < p->rank ||
            (d->rank == p->rank && (d->t_enqueued < p->t_enqueued ||
                                    (d->t_enqueued == p->t_enqueued && d->p2p_seq < p->p2p_seq))))
            p = d;
    }
    if (p) {
        int send = strcmp(p->op, "send") == 0;
        out->kind = RL_DIAG_P2P;
        out->rank = p->rank;
        out->seq = p->p2p_seq;
        snprintf(out->comm, sizeof out->comm, "%s", p->comm);
        snprintf(out->op, sizeof out->op, "%s", p->op);
        snprintf(out->message, sizeof out->message,
                 "p2p: rank %d is blocked in %s %s rank %d (p2p #%lld on %s): the peer never posted the matching %s",
                 p->rank, p->op, send ? "to" : "from", p->peer, (long long)p->p2p_seq, p->comm, send ? "recv" : "send");
        return RL_OK;
    }
    snprintf(out->message, sizeof out->message, "no collective or send/recv is stuck or inconsistent in the dump");
    return RL_OK;
}

/* ------------------------------------------------------------------ spread */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

RL_API_WATCHED
int rl_diag_spread_of(const double *x, int n, const rl_diag_spread_cfg *cfg, rl_diag_spread *o, char *err,
                      size_t errlen)
{
    RL_API_ENTRY();
    if (!x || !o || n < 1)
        FAIL(RL_ERR_ARG, "spread: need at least one value");
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i]) || x[i] < 0)
            FAIL(RL_ERR_ARG, "spread: value %d is %g; times and counts must be finite and >= 0", i, x[i]);
    rl_diag_spread_cfg c = { 0.4, 3.0, 1.2, 3.5 };
    if (cfg) {
        c.cv_max = cfg->cv_max > 0 ? cfg->cv_max : c.cv_max;
        c.ratio_max = cfg->ratio_max > 0 ? cfg->ratio_max : c.ratio_max;
        c.rel_outlier = cfg->rel_outlier > 0 ? cfg->rel_outlier : c.rel_outlier;
        c.robust_z = cfg->robust_z > 0 ? cfg->robust_z : c.robust_z;
    }
    memset(o, 0, sizeof *o);
    o->n = n;
    o->min = o->max = x[0];
    double sum = 0;
    for (int i = 0; i < n; i++) {
        sum += x[i];
        if (x[i] < o->min)
            o->min = x[i], o->argmin = i;
        if (x[i] > o->max)
            o->max = x[i], o->argmax = i;
    }
    o->mean = sum / n;
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (x[i] - o->mean) * (x[i] - o->mean);
    o->stddev = sqrt(ss / n); /* population: the ranks are all there is */
    o->cv = o->mean > 0 ? o->stddev / o->mean : 0;
    o->ratio = o->min > 0 ? o->max / o->min : (o->max > 0 ? INFINITY : 1);
    double *v = malloc(sizeof(double) * (size_t)n);
    if (!v)
        FAIL(RL_ERR_NOMEM, "out of memory");
    memcpy(v, x, sizeof(double) * (size_t)n);
    o->median = median_of(v, n);
    for (int i = 0; i < n; i++)
        v[i] = fabs(x[i] - o->median);
    o->mad = median_of(v, n);
    free(v);
    o->imbalanced = o->cv > c.cv_max || o->ratio > c.ratio_max;
    o->outlier = -1;
    double worst = 0, scale = 1.4826 * o->mad;
    for (int i = 0; i < n; i++) {
        double z = scale > 0 ? (x[i] - o->median) / scale : (x[i] > o->median ? INFINITY : 0);
        if (z > c.robust_z && x[i] > c.rel_outlier * o->median) {
            o->noutliers++;
            if (x[i] - o->median > worst)
                worst = x[i] - o->median, o->outlier = i;
        }
    }
    o->culprit = o->outlier >= 0 ? o->outlier : o->imbalanced ? o->argmax : -1;
    snprintf(o->message, sizeof o->message,
             "n=%d mean %.4g median %.4g cv %.3f max/min %.3g%s; %d outlier%s%s", n, o->mean, o->median, o->cv, o->ratio,
             o->imbalanced ? " — imbalanced (cv > 0.4 or max/min > 3)" : "", o->noutliers, o->noutliers == 1 ? "" : "s",
             o->culprit >= 0 ? "" : " — balanced");
    return RL_OK;
}

RL_API_WATCHED
int rl_diag_straggler(const double *ms, int n, const rl_diag_spread_cfg *cfg, rl_diag_spread *o, char *err,
                      size_t errlen)
{
    RL_API_ENTRY();
    int rc = rl_diag_spread_of(ms, n, cfg, o, err, errlen);
    if (rc)
        return rc;
    if (o->culprit >= 0)
        snprintf(o->message, sizeof o->message,
                 "straggler: rank %d takes %.4g ms per step vs a median of %.4g ms (+%.0f%%); every other rank waits "
                 "~%.4g ms in the next collective (cv %.3f, max/min %.3g%s)", o->culprit, ms[o->culprit], o->median,
                 100.0 * (ms[o->culprit] / o->median - 1), ms[o->culprit] - o->median, o->cv, o->ratio,
                 o->imbalanced ? ", over the cv/ratio limits" : "");
    else
        snprintf(o->message, sizeof o->message, "no straggler: %d ranks, median %.4g ms, cv %.3f, max/min %.3g", n,
                 o->median, o->cv, o->ratio);
    return RL_OK;
}

/* ------------------------------------------------------------------ spikes */

RL_API_WATCHED
int rl_diag_spike_find(const double *norms, int steps, int ranks, int layers, const rl_diag_spike_cfg *cfg,
                       rl_diag_spike *o, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!norms || !o || steps < 1 || ranks < 1 || layers < 1)
        FAIL(RL_ERR_ARG, "spike: need norms[steps·ranks·layers] with steps, ranks, layers >= 1");
    rl_diag_spike_cfg c = { 5, 5.0, 1, 0 };
    if (cfg) {
        c.window = cfg->window > 0 ? cfg->window : c.window;
        c.factor = cfg->factor > 0 ? cfg->factor : c.factor;
        c.min_history = cfg->min_history > 0 ? cfg->min_history : c.min_history;
        c.reverse_layers = cfg->reverse_layers;
    }
    memset(o, 0, sizeof *o);
    o->step = o->rank = o->layer = -1;
#define AT(s, r, l) norms[((int64_t)(s) * ranks + (r)) * layers + (l)]
    for (int s = 0; s < steps; s++)
        for (int li = 0; li < layers; li++) {
            int l = c.reverse_layers ? layers - 1 - li : li;
            for (int r = 0; r < ranks; r++) {
                double v = AT(s, r, l), sum = 0;
                int have = 0;
                for (int p = s - 1; p >= 0 && have < c.window; p--)
                    if (isfinite(AT(p, r, l))) {
                        sum += AT(p, r, l);
                        have++;
                    }
                double mean = have ? sum / have : 0;
                int bad = !isfinite(v) || (have >= c.min_history && mean > 0 && v > c.factor * mean);
                if (!bad)
                    continue;
                o->found = 1;
                o->step = s;
                o->rank = r;
                o->layer = l;
                o->value = v;
                o->recent_mean = mean;
                o->nonfinite = !isfinite(v);
                if (o->nonfinite)
                    snprintf(o->message, sizeof o->message,
                             "first non-finite norm: step %d, rank %d, layer %d (%g; recent mean %.4g) — skip the batch, "
                             "roll back, tag the sample", s, r, l, v, mean);
                else
                    snprintf(o->message, sizeof o->message,
                             "first spike: step %d, rank %d, layer %d: %.4g = %.1f× its recent mean %.4g (limit %.3g×)", s,
                             r, l, v, v / mean, mean, c.factor);
                return RL_OK;
            }
        }
#undef AT
    snprintf(o->message, sizeof o->message, "no spike or non-finite norm in %d steps × %d ranks × %d layers", steps,
             ranks, layers);
    return RL_OK;
}
