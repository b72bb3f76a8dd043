/* trace.c — trace events and Chrome trace-event JSON (jansson). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apiwatch.h"
#include "err.h"
#include "trace.h"

static const char *const cat_names[RL_NCATS] = { "compute", "comm", "p2p", "idle", "memory" };
static const char *const tag_names[RL_NTAGS] = { "step", "bucket", "mb", "stage", "layer", "expert", "chunk" };

const char *rl_cat_name(rl_cat c) { return (c >= 0 && c < RL_NCATS) ? cat_names[c] : "?"; }
const char *rl_tag_name(rl_tag t) { return (t >= 0 && t < RL_NTAGS) ? tag_names[t] : "?"; }

int rl_cat_parse(const char *s)
{
    for (int i = 0; s && i < RL_NCATS; i++)
        if (strcmp(s, cat_names[i]) == 0)
            return i;
    return -1;
}

RL_API_WATCHED
rl_trace *rl_trace_new(int nranks)
{
    RL_API_ENTRY();
    rl_trace *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->nranks = nranks > 0 ? nranks : 1;
    t->peak = calloc((size_t)t->nranks, sizeof *t->peak);
    if (!t->peak) {
        free(t);
        return NULL;
    }
    return t;
}

RL_API_WATCHED
void rl_trace_free(rl_trace *t)
{
    RL_API_ENTRY();
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->ev[i].shapes);
        free(t->ev[i].peer_bytes);
    }
    for (int i = 0; i < t->nmeta; i++) {
        free(t->meta_keys[i]);
        free(t->meta_vals[i]);
    }
    free(t->meta_keys);
    free(t->meta_vals);
    free(t->ev);
    free(t->mem);
    free(t->peak);
    free(t);
}

RL_API_WATCHED
void rl_trace_event_init(rl_trace_event *e)
{
    RL_API_ENTRY();
    memset(e, 0, sizeof *e);
    for (int i = 0; i < RL_NTAGS; i++)
        e->tags[i] = -1;
    e->seq = -1;
    e->peer = -1;
}

RL_API_WATCHED
int rl_trace_add(rl_trace *t, const rl_trace_event *e)
{
    RL_API_ENTRY();
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        rl_trace_event *ev = realloc(t->ev, cap * sizeof *ev);
        if (!ev)
            return RL_ERR_NOMEM;
        t->ev = ev;
        t->cap = cap;
    }
    rl_trace_event *d = &t->ev[t->n];
    *d = *e;
    d->shapes = e->shapes ? strdup(e->shapes) : NULL;
    d->peer_bytes = NULL;
    d->npeers = 0;
    if (e->peer_bytes && e->npeers > 0 && (d->peer_bytes = malloc((size_t)e->npeers * sizeof *d->peer_bytes))) {
        memcpy(d->peer_bytes, e->peer_bytes, (size_t)e->npeers * sizeof *d->peer_bytes);
        d->npeers = e->npeers;
    }
    if ((e->shapes && !d->shapes) || (e->npeers > 0 && e->peer_bytes && !d->peer_bytes)) {
        free(d->shapes);
        free(d->peer_bytes);
        return RL_ERR_NOMEM;
    }
    t->n++;
    return 0;
}

RL_API_WATCHED
int rl_trace_add_mem(rl_trace *t, const rl_mem_sample *s)
{
    RL_API_ENTRY();
    if (t->nmem == t->capmem) {
        size_t cap = t->capmem ? t->capmem * 2 : 64;
        rl_mem_sample *m = realloc(t->mem, cap * sizeof *m);
        if (!m)
            return RL_ERR_NOMEM;
        t->mem = m;
        t->capmem = cap;
    }
    t->mem[t->nmem++] = *s;
    return 0;
}

RL_API_WATCHED
int rl_trace_merge(rl_trace *dst, const rl_trace *src)
{
    RL_API_ENTRY();
    for (size_t i = 0; i < src->n; i++)
        if (rl_trace_add(dst, &src->ev[i]))
            return RL_ERR_NOMEM;
    for (size_t i = 0; i < src->nmem; i++)
        if (rl_trace_add_mem(dst, &src->mem[i]))
            return RL_ERR_NOMEM;
    for (int r = 0; r < src->nranks && r < dst->nranks; r++)
        for (int c = 0; c < RL_MEM_NCAT; c++)
            if (src->peak[r][c] > dst->peak[r][c])
                dst->peak[r][c] = src->peak[r][c];
    return 0;
}

static int ev_cmp(const void *pa, const void *pb)
{
    const rl_trace_event *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->vstart != b->vstart)
        return a->vstart < b->vstart ? -1 : 1;
    if (a->vend != b->vend)
        return a->vend < b->vend ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int mem_cmp(const void *pa, const void *pb)
{
    const rl_mem_sample *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->vtime != b->vtime)
        return a->vtime < b->vtime ? -1 : 1;
    return memcmp(a->current, b->current, sizeof a->current);
}

RL_API_WATCHED
void rl_trace_sort(rl_trace *t)
{
    RL_API_ENTRY();
    /* qsort is not stable: ties are broken on every field above, and events that tie on all
     * of them are identical in the file, so the output is deterministic. */
    if (t->n > 1)
        qsort(t->ev, t->n, sizeof *t->ev, ev_cmp);
    if (t->nmem > 1)
        qsort(t->mem, t->nmem, sizeof *t->mem, mem_cmp);
}

typedef struct span {
    double a, b;
} span;

static int span_cmp(const void *x, const void *y)
{
    double d = ((const span *)x)->a - ((const span *)y)->a;
    return d < 0 ? -1 : d > 0;
}

RL_API_WATCHED
double rl_trace_comm_hidden(const rl_trace *t, int rank, int step, int wall, double *comm_s, double *hidden_s)
{
    RL_API_ENTRY();
    size_t ncomp = 0, k = 0;
    for (size_t i = 0; i < t->n; i++)
        ncomp += t->ev[i].rank == rank && t->ev[i].stream == 0 && t->ev[i].cat == RL_CAT_COMPUTE;
    span *comp = malloc((ncomp ? ncomp : 1) * sizeof *comp);
    double comm = 0, hidden = 0;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (e->rank == rank && e->stream == 0 && e->cat == RL_CAT_COMPUTE && (step < 0 || e->tags[RL_TAG_STEP] == step))
            comp[k++] = (span){ wall ? e->wstart : e->vstart, wall ? e->wend : e->vend };
    }
    qsort(comp, k, sizeof *comp, span_cmp);
    /* merge the compute spans into disjoint ones, then intersect each comm span with them */
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && comp[i].a <= comp[m - 1].b) {
            if (comp[i].b > comp[m - 1].b)
                comp[m - 1].b = comp[i].b;
        } else {
            comp[m++] = comp[i];
        }
    }
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (e->rank != rank || e->stream != 1 || e->cat != RL_CAT_COMM || (step >= 0 && e->tags[RL_TAG_STEP] != step))
            continue;
        double a = wall ? e->wstart : e->vstart, b = wall ? e->wend : e->vend;
        comm += b - a;
        for (size_t j = 0; j < m && comp[j].a < b; j++) {
            double lo = comp[j].a > a ? comp[j].a : a, hi = comp[j].b < b ? comp[j].b : b;
            if (hi > lo)
                hidden += hi - lo;
        }
    }
    free(comp);
    if (comm_s)
        *comm_s = comm;
    if (hidden_s)
        *hidden_s = hidden;
    return comm > 0 ? hidden / comm : -1;
}

RL_API_WATCHED
void rl_trace_set_mesh(rl_trace *t, int ndims, const char *const *names, const int *sizes)
{
    RL_API_ENTRY();
    if (ndims < 0 || ndims > RL_MESH_MAX)
        return;
    t->mesh_ndims = ndims;
    for (int i = 0; i < ndims; i++) {
        snprintf(t->mesh_names[i], sizeof t->mesh_names[i], "%s", names[i]);
        t->mesh_sizes[i] = sizes[i];
    }
}

RL_API_WATCHED
void rl_trace_set_meta(rl_trace *t, const char *key, const char *value)
{
    RL_API_ENTRY();
    for (int i = 0; i < t->nmeta; i++)
        if (strcmp(t->meta_keys[i], key) == 0) {
            free(t->meta_vals[i]);
            t->meta_vals[i] = strdup(value);
            return;
        }
    char **k = realloc(t->meta_keys, (size_t)(t->nmeta + 1) * sizeof *k);
    if (!k)
        return;
    t->meta_keys = k;
    char **v = realloc(t->meta_vals, (size_t)(t->nmeta + 1) * sizeof *v);
    if (!v)
        return;
    t->meta_vals = v;
    t->meta_keys[t->nmeta] = strdup(key);
    t->meta_vals[t->nmeta] = strdup(value);
    t->nmeta++;
}

RL_API_WATCHED
const char *rl_trace_get_meta(const rl_trace *t, const char *key)
{
    RL_API_ENTRY();
    for (int i = 0; i < t->nmeta; i++)
        if (strcmp(t->meta_keys[i], key) == 0)
            return t->meta_vals[i];
    return NULL;
}

/* ---- export ---- */

/* Virtual seconds → trace microseconds, rounded to picoseconds so files are stable. */
static double us(double s) { return round(s * 1e12) / 1e6; }

static json_t *event_json(const rl_trace_event *e, int with_wall)
{
    json_t *args = json_object();
    if (e->bytes)
        json_object_set_new(args, "bytes", json_real(e->bytes));
    if (e->flops)
        json_object_set_new(args, "flops", json_real(e->flops));
    for (int i = 0; i < RL_NTAGS; i++)
        if (e->tags[i] >= 0)
            json_object_set_new(args, tag_names[i], json_integer(e->tags[i]));
    if (e->phase) {
        char p[2] = { e->phase, 0 };
        json_object_set_new(args, "phase", json_string(p));
    }
    if (e->seq >= 0)
        json_object_set_new(args, "seq", json_integer(e->seq));
    if (e->comm[0])
        json_object_set_new(args, "comm", json_string(e->comm));
    if (e->shapes)
        json_object_set_new(args, "shapes", json_string(e->shapes));
    if (e->peer >= 0)
        json_object_set_new(args, "peer", json_integer(e->peer));
    if (e->peer_bytes && e->npeers > 0) {
        json_t *pb = json_array();
        for (int i = 0; i < e->npeers; i++)
            json_array_append_new(pb, json_integer(e->peer_bytes[i]));
        json_object_set_new(args, "peer_bytes", pb);
    }
    if (with_wall) {
        json_object_set_new(args, "wall_ts", json_real(us(e->wstart)));
        json_object_set_new(args, "wall_dur", json_real(us(e->wend - e->wstart)));
    }
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(e->name));
    json_object_set_new(o, "cat", json_string(rl_cat_name(e->cat)));
    json_object_set_new(o, "ph", json_string("X"));
    json_object_set_new(o, "pid", json_integer(e->rank));
    json_object_set_new(o, "tid", json_integer(e->stream));
    json_object_set_new(o, "ts", json_real(us(e->vstart)));
    json_object_set_new(o, "dur", json_real(us(e->vend - e->vstart)));
    json_object_set_new(o, "args", args);
    return o;
}

static json_t *meta_event(const char *what, int pid, int tid, const char *name)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(what));
    json_object_set_new(o, "ph", json_string("M"));
    json_object_set_new(o, "pid", json_integer(pid));
    if (tid >= 0)
        json_object_set_new(o, "tid", json_integer(tid));
    json_object_set_new(o, "args", json_pack("{s:s}", "name", name));
    return o;
}

RL_API_WATCHED
int rl_trace_write_json(const rl_trace *t, const char *path, int with_wall, char *err, int errlen)
{
    RL_API_ENTRY();
    json_t *root = json_object(), *evs = json_array();
    char buf[32];
    for (int r = 0; r < t->nranks; r++) {
        snprintf(buf, sizeof buf, "rank %d", r);
        json_array_append_new(evs, meta_event("process_name", r, -1, buf));
        json_array_append_new(evs, meta_event("thread_name", r, 0, "compute"));
        json_array_append_new(evs, meta_event("thread_name", r, 1, "comm"));
    }
    for (size_t i = 0; i < t->n; i++)
        json_array_append_new(evs, event_json(&t->ev[i], with_wall));
    for (size_t i = 0; i < t->nmem; i++) {
        const rl_mem_sample *m = &t->mem[i];
        json_t *args = json_object();
        for (int c = 0; c < RL_MEM_NCAT; c++)
            json_object_set_new(args, rl_mem_cat_name(c), json_integer(m->current[c]));
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string("memory"));
        json_object_set_new(o, "ph", json_string("C"));
        json_object_set_new(o, "pid", json_integer(m->rank));
        json_object_set_new(o, "ts", json_real(us(m->vtime)));
        json_object_set_new(o, "args", args);
        json_array_append_new(evs, o);
    }
    json_object_set_new(root, "traceEvents", evs);
    json_object_set_new(root, "displayTimeUnit", json_string("ns"));

    json_t *rl = json_object();
    json_object_set_new(rl, "version", json_integer(1));
    json_object_set_new(rl, "ranks", json_integer(t->nranks));
    json_object_set_new(rl, "hw", json_string(t->hw));
    json_t *peaks = json_array();
    for (int r = 0; r < t->nranks; r++) {
        json_t *p = json_object();
        for (int c = 0; c < RL_MEM_NCAT; c++)
            json_object_set_new(p, rl_mem_cat_name(c), json_integer(t->peak[r][c]));
        json_array_append_new(peaks, p);
    }
    json_object_set_new(rl, "memory_peak", peaks);
    if (t->mesh_ndims > 0) {
        json_t *names = json_array(), *sizes = json_array();
        for (int i = 0; i < t->mesh_ndims; i++) {
            json_array_append_new(names, json_string(t->mesh_names[i]));
            json_array_append_new(sizes, json_integer(t->mesh_sizes[i]));
        }
        json_object_set_new(rl, "mesh", json_pack("{s:o,s:o}", "dims", names, "sizes", sizes));
    }
    json_t *meta = json_object();
    for (int i = 0; i < t->nmeta; i++)
        json_object_set_new(meta, t->meta_keys[i], json_string(t->meta_vals[i]));
    json_object_set_new(rl, "meta", meta);
    json_object_set_new(root, "ringlab", rl);

    int rc = json_dump_file(root, path, JSON_INDENT(0) | JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(root);
    if (rc != 0) {
        snprintf(err, (size_t)errlen, "cannot write trace '%s': %s", path, strerror(errno));
        return RL_ERR_IO;
    }
    return 0;
}

/* ---- import ---- */

static int get_num(json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return 1;
}

#define BAD(...) do { snprintf(err, (size_t)errlen, __VA_ARGS__); goto fail; } while (0)

RL_API_WATCHED
rl_trace *rl_trace_read_json(const char *path, char *err, int errlen)
{
    RL_API_ENTRY();
    json_error_t je;
    rl_trace *t = NULL;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        if (je.line <= 0)
            snprintf(err, (size_t)errlen, "cannot read trace '%s': %s", path, je.text);
        else
            snprintf(err, (size_t)errlen, "trace '%s' is not valid JSON at line %d, column %d: %s",
                     path, je.line, je.column, je.text);
        return NULL;
    }
    json_t *evs = json_is_array(root) ? root : json_object_get(root, "traceEvents");
    if (!json_is_array(evs))
        BAD("trace '%s': no \"traceEvents\" array (is it a Chrome trace-event file?)", path);
    json_t *rl = json_is_object(root) ? json_object_get(root, "ringlab") : NULL;
    int nranks = 1;
    json_t *jr = rl ? json_object_get(rl, "ranks") : NULL;
    if (jr && (!json_is_integer(jr) || json_integer_value(jr) < 1 || json_integer_value(jr) > 4096))
        BAD("trace '%s': \"ringlab.ranks\" must be an integer from 1 to 4096", path);
    size_t i;
    json_t *e;
    if (jr) {
        nranks = (int)json_integer_value(jr);
    } else {
        json_array_foreach(evs, i, e) {
            json_t *pid = json_object_get(e, "pid");
            if (json_is_integer(pid) && json_integer_value(pid) >= 0 && json_integer_value(pid) < 4096 &&
                json_integer_value(pid) + 1 > nranks)
                nranks = (int)json_integer_value(pid) + 1;
        }
    }
    t = rl_trace_new(nranks);
    if (!t)
        BAD("trace '%s': out of memory", path);
    json_array_foreach(evs, i, e) {
        if (!json_is_object(e))
            BAD("trace '%s': traceEvents[%zu] is not an object", path, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!ph)
            BAD("trace '%s': traceEvents[%zu] has no \"ph\" string", path, i);
        if (strcmp(ph, "X") && strcmp(ph, "C"))
            continue;
        json_t *pid = json_object_get(e, "pid");
        if (!json_is_integer(pid) || json_integer_value(pid) < 0 || json_integer_value(pid) >= nranks)
            BAD("trace '%s': traceEvents[%zu] has \"pid\" outside 0..%d", path, i, nranks - 1);
        int rank = (int)json_integer_value(pid);
        double ts = 0, dur = 0, v;
        if (get_num(e, "ts", &ts) != 1 || !isfinite(ts) || fabs(ts) > 1e15)
            BAD("trace '%s': traceEvents[%zu] needs a finite number \"ts\" (microseconds)", path, i);
        json_t *args = json_object_get(e, "args");
        if (args && !json_is_object(args))
            BAD("trace '%s': traceEvents[%zu].args is not an object", path, i);
        if (strcmp(ph, "C") == 0) {
            rl_mem_sample m = { .rank = rank, .vtime = ts * 1e-6 };
            for (int c = 0; c < RL_MEM_NCAT; c++) {
                int g = args ? get_num(args, rl_mem_cat_name(c), &v) : 0;
                if (g < 0 || (g && (!isfinite(v) || v < 0 || v > 1e18)))
                    BAD("trace '%s': traceEvents[%zu].args.%s must be a byte count", path, i,
                        rl_mem_cat_name(c));
                m.current[c] = g ? (int64_t)v : 0;
            }
            rl_trace_add_mem(t, &m);
            continue;
        }
        if (get_num(e, "dur", &dur) < 0 || !isfinite(dur) || dur < 0 || dur > 1e15)
            BAD("trace '%s': traceEvents[%zu].dur must be a finite number >= 0", path, i);
        rl_trace_event ev;
        rl_trace_event_init(&ev);
        ev.rank = rank;
        json_t *tid = json_object_get(e, "tid");
        ev.stream = json_is_integer(tid) && json_integer_value(tid) == 1 ? 1 : 0;
        const char *name = json_string_value(json_object_get(e, "name"));
        snprintf(ev.name, sizeof ev.name, "%s", name ? name : "?");
        int cat = rl_cat_parse(json_string_value(json_object_get(e, "cat")));
        ev.cat = cat >= 0 ? (rl_cat)cat : (ev.stream ? RL_CAT_COMM : RL_CAT_COMPUTE);
        ev.vstart = ts * 1e-6;
        ev.vend = (ts + dur) * 1e-6;
        if (args) {
            if (get_num(args, "bytes", &v) == 1 && isfinite(v))
                ev.bytes = v;
            if (get_num(args, "flops", &v) == 1 && isfinite(v))
                ev.flops = v;
            for (int k = 0; k < RL_NTAGS; k++) {
                json_t *tg = json_object_get(args, tag_names[k]);
                if (json_is_integer(tg) && json_integer_value(tg) >= 0 && json_integer_value(tg) < (1 << 30))
                    ev.tags[k] = (int)json_integer_value(tg);
            }
            const char *phase = json_string_value(json_object_get(args, "phase"));
            if (phase)
                ev.phase = phase[0];
            json_t *seq = json_object_get(args, "seq");
            if (json_is_integer(seq))
                ev.seq = json_integer_value(seq);
            const char *comm = json_string_value(json_object_get(args, "comm"));
            if (comm)
                snprintf(ev.comm, sizeof ev.comm, "%s", comm);
            const char *shapes = json_string_value(json_object_get(args, "shapes"));
            ev.shapes = (char *)shapes; /* copied by rl_trace_add */
            json_t *peer = json_object_get(args, "peer");
            if (json_is_integer(peer) && json_integer_value(peer) >= 0 && json_integer_value(peer) < (1 << 30))
                ev.peer = (int)json_integer_value(peer);
            json_t *pb = json_object_get(args, "peer_bytes");
            size_t npb = json_is_array(pb) ? json_array_size(pb) : 0;
            if (npb > 0 && npb <= (1 << 16) && (ev.peer_bytes = calloc(npb, sizeof *ev.peer_bytes))) {
                ev.npeers = (int)npb;
                for (size_t k = 0; k < npb; k++) {
                    json_t *x = json_array_get(pb, k);
                    ev.peer_bytes[k] = json_is_integer(x) && json_integer_value(x) >= 0 ? json_integer_value(x) : 0;
                }
            }
            if (get_num(args, "wall_ts", &v) == 1 && isfinite(v)) {
                ev.wstart = v * 1e-6;
                if (get_num(args, "wall_dur", &v) == 1 && isfinite(v))
                    ev.wend = ev.wstart + v * 1e-6;
            }
        }
        rl_trace_add(t, &ev);
        free(ev.peer_bytes); /* copied by rl_trace_add */
    }
    if (rl) {
        const char *hw = json_string_value(json_object_get(rl, "hw"));
        if (hw)
            snprintf(t->hw, sizeof t->hw, "%s", hw);
        json_t *peaks = json_object_get(rl, "memory_peak"), *p;
        if (json_is_array(peaks))
            json_array_foreach(peaks, i, p) {
                if (i >= (size_t)nranks || !json_is_object(p))
                    break;
                for (int c = 0; c < RL_MEM_NCAT; c++) {
                    double v2;
                    if (get_num(p, rl_mem_cat_name(c), &v2) == 1 && isfinite(v2) && v2 >= 0 && v2 < 1e18)
                        t->peak[i][c] = (int64_t)v2;
                }
            }
        json_t *mesh = json_object_get(rl, "mesh");
        if (mesh) {
            json_t *names = json_object_get(mesh, "dims"), *sizes = json_object_get(mesh, "sizes");
            size_t nd = json_array_size(names);
            if (!json_is_array(names) || !json_is_array(sizes) || nd != json_array_size(sizes) ||
                nd > RL_MESH_MAX)
                BAD("trace '%s': \"ringlab.mesh\" needs arrays \"dims\" and \"sizes\" of equal length <= %d",
                    path, RL_MESH_MAX);
            long prod = 1;
            for (size_t k = 0; k < nd; k++) {
                json_t *s = json_array_get(sizes, k);
                const char *nm = json_string_value(json_array_get(names, k));
                if (!nm || !json_is_integer(s) || json_integer_value(s) < 1 || json_integer_value(s) > 4096)
                    BAD("trace '%s': mesh dim %zu needs a name and a size from 1 to 4096", path, k);
                snprintf(t->mesh_names[k], sizeof t->mesh_names[k], "%s", nm);
                t->mesh_sizes[k] = (int)json_integer_value(s);
                prod = prod > nranks ? prod : prod * t->mesh_sizes[k]; /* past nranks it is wrong already */
            }
            if (prod != nranks)
                BAD("trace '%s': mesh sizes multiply to %s%ld but the trace has %d ranks", path,
                    prod > nranks ? "more than " : "", prod > nranks ? (long)nranks : prod, nranks);
            t->mesh_ndims = (int)nd;
        }
        json_t *meta = json_object_get(rl, "meta");
        const char *key;
        json_t *val;
        if (json_is_object(meta))
            json_object_foreach(meta, key, val)
                if (json_is_string(val))
                    rl_trace_set_meta(t, key, json_string_value(val));
    }
    json_decref(root);
    return t;
fail:
    json_decref(root);
    rl_trace_free(t);
    return NULL;
}

/* ------------------------------------------------------------------ packed traces */

#define PACK_MAGIC 0x524c5450u /* "RLTP" */

/* A growing byte buffer (pack) or a bounded cursor (unpack). */
typedef struct pack_buf {
    unsigned char *p;
    size_t len, cap;
    int failed;
} pack_buf;

static void put(pack_buf *b, const void *src, size_t n)
{
    if (b->failed || !n)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_u64(pack_buf *b, uint64_t v) { put(b, &v, sizeof v); }

static void put_str(pack_buf *b, const char *s)
{
    uint64_t n = s ? strlen(s) + 1 : 0;
    put_u64(b, n);
    put(b, s, (size_t)n);
}

RL_API_WATCHED
void *rl_trace_pack(const rl_trace *t, size_t *len)
{
    RL_API_ENTRY();
    pack_buf b = { 0 };
    put_u64(&b, PACK_MAGIC);
    put_u64(&b, (uint64_t)t->nranks);
    put(&b, t->hw, sizeof t->hw);
    put_u64(&b, t->n);
    for (size_t i = 0; i < t->n; i++) {
        rl_trace_event e = t->ev[i];
        e.shapes = NULL, e.peer_bytes = NULL;
        put(&b, &e, sizeof e);
        put_str(&b, t->ev[i].shapes);
        uint64_t np = t->ev[i].peer_bytes && t->ev[i].npeers > 0 ? (uint64_t)t->ev[i].npeers : 0;
        put_u64(&b, np);
        put(&b, t->ev[i].peer_bytes, (size_t)np * sizeof(int64_t));
    }
    put_u64(&b, t->nmem);
    put(&b, t->mem, t->nmem * sizeof *t->mem);
    put(&b, t->peak, (size_t)t->nranks * sizeof *t->peak);
    put_u64(&b, (uint64_t)t->mesh_ndims);
    put(&b, t->mesh_names, sizeof t->mesh_names);
    put(&b, t->mesh_sizes, sizeof t->mesh_sizes);
    put_u64(&b, (uint64_t)t->nmeta);
    for (int i = 0; i < t->nmeta; i++) {
        put_str(&b, t->meta_keys[i]);
        put_str(&b, t->meta_vals[i]);
    }
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

/* Takes n bytes from the cursor into dst (NULL: skip); 0, or -1 past the end. */
static int take(pack_buf *b, void *dst, size_t n)
{
    if (b->failed || n > b->cap - b->len) {
        b->failed = 1;
        return -1;
    }
    if (dst)
        memcpy(dst, b->p + b->len, n);
    b->len += n;
    return 0;
}

static uint64_t take_u64(pack_buf *b)
{
    uint64_t v = 0;
    take(b, &v, sizeof v);
    return v;
}

/* A string taken from the cursor (malloc'd), NULL when it was NULL; sets failed when malformed. */
static char *take_str(pack_buf *b)
{
    uint64_t n = take_u64(b);
    if (!n || b->failed)
        return NULL;
    if (n > b->cap - b->len || b->p[b->len + n - 1] != 0) {
        b->failed = 1;
        return NULL;
    }
    char *s = malloc((size_t)n);
    if (!s || take(b, s, (size_t)n)) {
        free(s);
        b->failed = 1;
        return NULL;
    }
    return s;
}

RL_API_WATCHED
rl_trace *rl_trace_unpack(const void *bytes, size_t len, char *err, int errlen)
{
    RL_API_ENTRY();
    pack_buf b = { (unsigned char *)bytes, 0, len, 0 };
    rl_trace *t = NULL;
    const char *why = "it ends early";
    if (take_u64(&b) != PACK_MAGIC) {
        why = "it is not a packed trace";
        goto bad;
    }
    uint64_t nranks = take_u64(&b);
    if (b.failed || nranks < 1 || nranks > (1u << 20)) {
        why = "its rank count is out of range";
        goto bad;
    }
    t = rl_trace_new((int)nranks);
    if (!t) {
        why = "out of memory";
        goto bad;
    }
    take(&b, t->hw, sizeof t->hw);
    t->hw[sizeof t->hw - 1] = 0;
    uint64_t n = take_u64(&b);
    if (n > (len - b.len) / sizeof(rl_trace_event))
        goto bad;
    for (uint64_t i = 0; i < n && !b.failed; i++) {
        rl_trace_event e;
        take(&b, &e, sizeof e);
        e.name[sizeof e.name - 1] = 0;
        e.comm[sizeof e.comm - 1] = 0;
        e.shapes = take_str(&b);
        uint64_t np = take_u64(&b);
        e.peer_bytes = NULL;
        e.npeers = 0;
        if (np > (len - b.len) / sizeof(int64_t) || np > INT32_MAX) {
            free(e.shapes);
            goto bad;
        }
        if (np) {
            e.peer_bytes = malloc((size_t)np * sizeof(int64_t));
            if (!e.peer_bytes || take(&b, e.peer_bytes, (size_t)np * sizeof(int64_t)))
                b.failed = 1;
            e.npeers = (int)np;
        }
        if (!b.failed && rl_trace_add(t, &e))
            b.failed = 1;
        free(e.shapes);
        free(e.peer_bytes);
    }
    uint64_t nmem = b.failed ? 0 : take_u64(&b);
    if (b.failed || nmem > (len - b.len) / sizeof(rl_mem_sample))
        goto bad;
    for (uint64_t i = 0; i < nmem && !b.failed; i++) {
        rl_mem_sample s;
        if (!take(&b, &s, sizeof s) && rl_trace_add_mem(t, &s))
            b.failed = 1;
    }
    take(&b, t->peak, (size_t)t->nranks * sizeof *t->peak);
    uint64_t nd = take_u64(&b);
    take(&b, t->mesh_names, sizeof t->mesh_names);
    take(&b, t->mesh_sizes, sizeof t->mesh_sizes);
    if (nd > RL_MESH_MAX)
        goto bad;
    t->mesh_ndims = (int)nd;
    for (int i = 0; i < RL_MESH_MAX; i++)
        t->mesh_names[i][sizeof t->mesh_names[i] - 1] = 0;
    uint64_t nmeta = take_u64(&b);
    if (nmeta > (len - b.len) / (2 * sizeof(uint64_t)))
        goto bad;
    for (uint64_t i = 0; i < nmeta && !b.failed; i++) {
        char *k = take_str(&b), *v = take_str(&b);
        if (k && v)
            rl_trace_set_meta(t, k, v);
        free(k);
        free(v);
    }
    if (b.failed || b.len != len) {
        why = b.failed ? "a length or count in it is out of range" : "bytes follow its end";
        goto bad;
    }
    return t;
bad:
    snprintf(err, (size_t)errlen, "not a packed trace: %s", why);
    rl_trace_free(t);
    return NULL;
}
