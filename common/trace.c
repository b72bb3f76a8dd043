/* trace.c — trace events, and writing them as Chrome trace-event JSON (jansson); trace_read.c
 * reads them back. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
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
    rl_trace_event d = *e;
    d.shapes = e->shapes ? strdup(e->shapes) : NULL;
    d.peer_bytes = NULL;
    d.npeers = 0;
    if (e->peer_bytes && e->npeers > 0 && (d.peer_bytes = malloc((size_t)e->npeers * sizeof *d.peer_bytes))) {
        memcpy(d.peer_bytes, e->peer_bytes, (size_t)e->npeers * sizeof *d.peer_bytes);
        d.npeers = e->npeers;
    }
    if ((e->shapes && !d.shapes) || (e->npeers > 0 && e->peer_bytes && !d.peer_bytes)) {
        free(d.shapes);
        free(d.peer_bytes);
        return RL_ERR_NOMEM;
    }
    return rl_trace_take(t, &d);
}

RL_API_WATCHED
int rl_trace_take(rl_trace *t, rl_trace_event *e)
{
    RL_API_ENTRY();
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        rl_trace_event *ev = realloc(t->ev, cap * sizeof *ev);
        if (!ev) {
            free(e->shapes);
            free(e->peer_bytes);
            return RL_ERR_NOMEM;
        }
        t->ev = ev;
        t->cap = cap;
    }
    t->ev[t->n++] = *e;
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
    if (e->region) {
        char p[2] = { e->region, 0 };
        json_object_set_new(args, "region", json_string(p));
    }
    if (e->seq >= 0)
        json_object_set_new(args, "seq", json_integer(e->seq));
    if (e->comm[0])
        json_object_set_new(args, "comm", json_string(e->comm));
    if (e->role[0])
        json_object_set_new(args, "role", json_string(e->role));
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

/* The "ringlab" object: ranks, profile, peaks, mesh and meta. */
static json_t *ringlab_json(const rl_trace *t)
{
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
    return rl;
}

/* Writes one event object after a comma (none before the first) and frees it. */
static int put_event(FILE *f, json_t *o, size_t *count)
{
    int bad = (*count)++ && fputc(',', f) == EOF;
    bad |= !o || json_dumpf(o, f, JSON_INDENT(0) | JSON_COMPACT | JSON_REAL_PRECISION(15)) != 0;
    json_decref(o);
    return bad;
}

RL_API_WATCHED
int rl_trace_write_json(const rl_trace *t, const char *path, int with_wall, char *err, int errlen)
{
    RL_API_ENTRY();
    /* streamed an event at a time ("ringlab" first: a streaming reader knows the ranks before the
     * events); the whole document as one tree took about 3 KB per event. A file is written beside
     * path and renamed over it when whole (a failed write leaves no truncated trace); a device, a
     * pipe (/dev/stdout) or an open file already unlinked (/proc/self/fd/N) is written as it is. */
    struct stat st;
    char tmp[4200] = "";
    int direct = stat(path, &st) == 0 && (!S_ISREG(st.st_mode) || st.st_nlink == 0); /* (or a file already unlinked) */
    FILE *f = direct ? fopen(path, "w") : rl_file_begin(path, tmp, sizeof tmp);
    if (!f) {
        snprintf(err, (size_t)errlen, "cannot write trace '%s': %s", path, strerror(errno));
        return RL_ERR_IO;
    }
    errno = 0;
    json_t *rl = ringlab_json(t);
    int bad = fputs("{\"ringlab\":", f) == EOF || json_dumpf(rl, f, JSON_INDENT(0) | JSON_COMPACT |
                                                                      JSON_REAL_PRECISION(15)) != 0;
    json_decref(rl);
    bad |= fputs(",\"traceEvents\":[", f) == EOF;
    size_t count = 0;
    char buf[32];
    for (int r = 0; r < t->nranks && !bad; r++) {
        snprintf(buf, sizeof buf, "rank %d", r);
        bad |= put_event(f, meta_event("process_name", r, -1, buf), &count);
        bad |= put_event(f, meta_event("thread_name", r, 0, "compute"), &count);
        bad |= put_event(f, meta_event("thread_name", r, 1, "comm"), &count);
    }
    for (size_t i = 0; i < t->n && !bad; i++)
        bad |= put_event(f, event_json(&t->ev[i], with_wall), &count);
    for (size_t i = 0; i < t->nmem && !bad; i++) {
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
        bad |= put_event(f, o, &count);
    }
    bad |= fputs("],\"displayTimeUnit\":\"ns\"}", f) == EOF;
    int e = bad ? (errno ? errno : EIO) : 0;
    if (ferror(f) && !e)
        e = errno ? errno : EIO;
    if (direct) {
        if (fclose(f) != 0 && !e)
            e = errno ? errno : EIO;
    } else if (e) {
        fclose(f);
        unlink(tmp);
    } else if (rl_file_commit(f, tmp, path)) {
        e = errno ? errno : EIO;
    }
    if (e) {
        snprintf(err, (size_t)errlen, "cannot write trace '%s': %s", path, strerror(e));
        return RL_ERR_IO;
    }
    return 0;
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
