/* tui_model.c — per-lane index of a trace's events for the views. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tui_model.h"

static int span_cmp(const void *pa, const void *pb)
{
    const rl_tui_span *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->end != b->end)
        return a->end > b->end ? -1 : 1; /* enclosing span first */
    return a->ev < b->ev ? -1 : a->ev > b->ev;
}

static int lane_of(const rl_trace *t, const rl_trace_event *e)
{
    if (e->rank < 0 || e->rank >= t->nranks || (int)e->cat < 0 || (int)e->cat >= RL_TUI_NLANECATS)
        return -1;
    return 2 * e->rank + (e->stream == 1 ? 1 : 0);
}

void rl_tui_model_free(rl_tui_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nlanes; i++) {
        free(m->lanes[i].spans);
        free(m->lanes[i].maxend);
        free(m->lanes[i].cum);
    }
    free(m->lanes);
    free(m->bounds);
    free(m->ops);
    free(m->stage_of);
    free(m->stage_rank);
    free(m);
}

static int time_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Sorts v[0..n) and drops repeats; returns the new count. */
static size_t sort_unique(double *v, size_t n)
{
    qsort(v, n, sizeof *v, time_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || v[i] != v[k - 1])
            v[k++] = v[i];
    return k;
}

/* Adds a comm event's role to the model's list of roles, once. */
static void note_role(rl_tui_model *m, const rl_trace_event *e)
{
    if (!e->role[0] || (e->cat != RL_CAT_COMM && e->cat != RL_CAT_P2P) || m->nroles == RL_TUI_MAXROLES)
        return;
    for (int k = 0; k < m->nroles; k++)
        if (!strncmp(m->roles[k], e->role, sizeof m->roles[k]))
            return;
    snprintf(m->roles[m->nroles++], sizeof m->roles[0], "%.7s", e->role);
}

/* The playback stops, roles and buckets: every drawn event's start and end, and the schedule ops' starts. */
static int index_times(rl_tui_model *m)
{
    const rl_trace *t = m->trace;
    m->bounds = malloc((2 * t->n + 1) * sizeof *m->bounds);
    m->ops = malloc((t->n + 1) * sizeof *m->ops);
    if (!m->bounds || !m->ops)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (lane_of(t, e) < 0)
            continue;
        m->bounds[m->nbounds++] = e->vstart;
        m->bounds[m->nbounds++] = e->vend >= e->vstart ? e->vend : e->vstart;
        if (e->cat == RL_CAT_COMPUTE && (e->phase == 'F' || e->phase == 'B' || e->phase == 'W'))
            m->ops[m->nops++] = e->vstart;
        m->has_regions |= e->region != 0;
        if (e->tags[RL_TAG_BUCKET] + 1 > m->nbuckets)
            m->nbuckets = e->tags[RL_TAG_BUCKET] + 1;
        note_role(m, e);
    }
    m->nbounds = sort_unique(m->bounds, m->nbounds);
    m->nops = sort_unique(m->ops, m->nops);
    return 0;
}

/* The pipeline's stages: each rank's stage tag, each stage's lowest rank, the chunks. */
static int index_stages(rl_tui_model *m)
{
    const rl_trace *t = m->trace;
    m->stage_of = malloc(((size_t)t->nranks + 1) * sizeof *m->stage_of);
    if (!m->stage_of)
        return -1;
    for (int r = 0; r < t->nranks; r++)
        m->stage_of[r] = -1;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        int st = e->tags[RL_TAG_STAGE];
        if (lane_of(t, e) < 0 || !e->phase || st < 0 || st >= t->nranks)
            continue;
        if (m->stage_of[e->rank] < 0)
            m->stage_of[e->rank] = st;
        if (st + 1 > m->nstages)
            m->nstages = st + 1;
        if (e->tags[RL_TAG_CHUNK] + 1 > m->nchunks)
            m->nchunks = e->tags[RL_TAG_CHUNK] + 1;
    }
    m->stage_rank = malloc(((size_t)m->nstages + 1) * sizeof *m->stage_rank);
    if (!m->stage_rank)
        return -1;
    for (int st = 0; st < m->nstages; st++)
        m->stage_rank[st] = -1;
    for (int r = t->nranks - 1; r >= 0; r--)
        if (m->stage_of[r] >= 0)
            m->stage_rank[m->stage_of[r]] = r;
    return 0;
}

double rl_tui_time_step(const double *v, size_t n, double t, int dir)
{
    size_t lo = 0, hi = n; /* first index with v > t (dir > 0) or v >= t (dir < 0) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (dir > 0 ? v[mid] > t : v[mid] >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (dir > 0)
        return lo < n ? v[lo] : t;
    return lo > 0 ? v[lo - 1] : t;
}

rl_tui_model *rl_tui_model_new(const rl_trace *t)
{
    if (!t || t->n > UINT32_MAX)
        return NULL;
    rl_tui_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->trace = t;
    m->nlanes = 2 * t->nranks;
    m->lanes = calloc((size_t)m->nlanes, sizeof *m->lanes);
    if (!m->lanes)
        goto fail;
    for (size_t i = 0; i < t->n; i++) {
        int l = lane_of(t, &t->ev[i]);
        if (l >= 0)
            m->lanes[l].n++;
    }
    for (int l = 0; l < m->nlanes; l++) {
        rl_tui_lane *lane = &m->lanes[l];
        lane->rank = l / 2;
        lane->stream = l % 2;
        size_t n = lane->n;
        lane->spans = malloc((n ? n : 1) * sizeof *lane->spans);
        lane->maxend = malloc((n ? n : 1) * sizeof *lane->maxend);
        lane->cum = calloc((n + 1) * RL_TUI_NLANECATS, sizeof *lane->cum);
        if (!lane->spans || !lane->maxend || !lane->cum)
            goto fail;
        lane->n = 0;
    }
    double lo = DBL_MAX, hi = -DBL_MAX;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        int l = lane_of(t, e);
        if (l < 0)
            continue;
        rl_tui_lane *lane = &m->lanes[l];
        double end = e->vend >= e->vstart ? e->vend : e->vstart;
        lane->spans[lane->n++] = (rl_tui_span){ e->vstart, end, (uint32_t)i, (uint8_t)e->cat };
        if (e->vstart < lo)
            lo = e->vstart;
        if (end > hi)
            hi = end;
    }
    for (int l = 0; l < m->nlanes; l++) {
        rl_tui_lane *lane = &m->lanes[l];
        int sorted = 1;
        for (size_t i = 1; i < lane->n && sorted; i++)
            sorted = span_cmp(&lane->spans[i - 1], &lane->spans[i]) <= 0;
        if (!sorted)
            qsort(lane->spans, lane->n, sizeof *lane->spans, span_cmp);
        double me = -DBL_MAX;
        for (size_t i = 0; i < lane->n; i++) {
            const rl_tui_span *s = &lane->spans[i];
            if (s->end > me)
                me = s->end;
            lane->maxend[i] = me;
            for (int c = 0; c < RL_TUI_NLANECATS; c++)
                lane->cum[(i + 1) * RL_TUI_NLANECATS + c] =
                    lane->cum[i * RL_TUI_NLANECATS + c] + (c == s->cat ? s->end - s->start : 0);
        }
    }
    if (lo > hi) {
        lo = 0;
        hi = 1e-6;
    } else if (hi - lo < 1e-9) {
        hi = lo + 1e-6;
    }
    m->t_min = lo;
    m->t_max = hi;
    if (index_times(m) || index_stages(m))
        goto fail;
    return m;
fail:
    rl_tui_model_free(m);
    return NULL;
}

size_t rl_tui_lane_first_after(const rl_tui_lane *l, double t)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->maxend[mid] > t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

size_t rl_tui_lane_first_start_at(const rl_tui_lane *l, double t)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->spans[mid].start >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void rl_tui_lane_coverage(const rl_tui_lane *l, double a, double b, double *cov)
{
    for (int c = 0; c < RL_TUI_NLANECATS; c++)
        cov[c] = 0;
    if (l->n == 0 || b <= a)
        return;
    size_t i0 = rl_tui_lane_first_start_at(l, a), i1 = rl_tui_lane_first_start_at(l, b);
    for (int c = 0; c < RL_TUI_NLANECATS; c++)
        cov[c] = l->cum[i1 * RL_TUI_NLANECATS + c] - l->cum[i0 * RL_TUI_NLANECATS + c];
    if (i1 > i0 && l->spans[i1 - 1].end > b)
        cov[l->spans[i1 - 1].cat] -= l->spans[i1 - 1].end - b;
    if (i0 > 0 && l->spans[i0 - 1].end > a) {
        const rl_tui_span *s = &l->spans[i0 - 1];
        cov[s->cat] += (s->end < b ? s->end : b) - a;
    }
    for (int c = 0; c < RL_TUI_NLANECATS; c++) {
        if (cov[c] < 0)
            cov[c] = 0;
        if (cov[c] > b - a)
            cov[c] = b - a;
    }
}

const rl_tui_span *rl_tui_lane_at(const rl_tui_lane *l, double t)
{
    size_t k = rl_tui_lane_first_start_at(l, t);
    while (k < l->n && l->spans[k].start <= t)
        k++;
    for (size_t i = k; i-- > 0;) {
        if (l->maxend[i] <= t)
            break;
        if (l->spans[i].end > t)
            return &l->spans[i];
    }
    return NULL;
}

/* Walks the union of a lane's spans of some categories, clipped to [a, b). */
typedef struct {
    const rl_tui_lane *l;
    size_t i;
    double a, b;
    unsigned cats;   /* bit per rl_cat */
} union_iter;

static int union_next(union_iter *it, double *s, double *e)
{
    const rl_tui_lane *l = it->l;
    int have = 0;
    while (it->i < l->n && l->spans[it->i].start < it->b) {
        const rl_tui_span *sp = &l->spans[it->i];
        if (!(it->cats & (1u << sp->cat)) || sp->end <= it->a || sp->end <= sp->start) {
            it->i++;
            continue;
        }
        double ss = sp->start > it->a ? sp->start : it->a, ee = sp->end < it->b ? sp->end : it->b;
        if (!have) {
            *s = ss, *e = ee, have = 1;
        } else if (ss <= *e) {
            if (ee > *e)
                *e = ee;
        } else {
            return 1;
        }
        it->i++;
    }
    return have;
}

double rl_tui_comm_hidden(const rl_tui_model *m, double a, double b)
{
    double comm = 0, hidden = 0;
    for (int r = 0; r + 1 < m->nlanes; r += 2) {
        const rl_tui_lane *cl = &m->lanes[r], *ml = &m->lanes[r + 1];
        union_iter ci = { cl, rl_tui_lane_first_after(cl, a), a, b, 1u << RL_CAT_COMPUTE };
        union_iter mi = { ml, rl_tui_lane_first_after(ml, a), a, b, (1u << RL_CAT_COMM) | (1u << RL_CAT_P2P) };
        double cs, ce, ms, me;
        int have_c = union_next(&ci, &cs, &ce);
        while (union_next(&mi, &ms, &me)) {
            comm += me - ms;
            while (have_c && ce <= ms)
                have_c = union_next(&ci, &cs, &ce);
            /* every compute interval overlapping [ms, me) */
            while (have_c && cs < me) {
                double lo = cs > ms ? cs : ms, hi = ce < me ? ce : me;
                if (hi > lo)
                    hidden += hi - lo;
                if (ce <= me)
                    have_c = union_next(&ci, &cs, &ce);
                else
                    break;
            }
        }
    }
    return comm > 0 ? hidden / comm : -1;
}
