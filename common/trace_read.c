/* trace_read.c — reads a Chrome trace-event file into an rl_trace as it streams past (yajl's
 * event parser): one event's fields at a time, never the whole document in memory, so a trace
 * of a million events loads in about a second in the memory of its compact records. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include "apiwatch.h"
#include "err.h"
#include "mem.h"
#include "trace.h"

/* The containers the reader knows; anything else is skipped whole. */
typedef enum { C_ROOT, C_TOP, C_EVENTS, C_EVENT, C_ARGS, C_PEER_BYTES, C_RINGLAB, C_PEAKS, C_PEAK, C_MESH,
               C_DIMS, C_SIZES, C_META, C_SKIP } ctype;

/* The keys the reader knows, in every container (one numbering keeps the dispatch simple). */
typedef enum {
    K_OTHER, K_TRACE_EVENTS, K_RINGLAB,                                             /* top */
    K_PH, K_PID, K_TID, K_TS, K_DUR, K_NAME, K_CAT, K_ARGS,                          /* an event */
    K_BYTES, K_FLOPS, K_PHASE, K_SEQ, K_COMM, K_SHAPES, K_PEER, K_PEER_BYTES, K_WALL_TS, K_WALL_DUR, K_ROLE, K_REGION,
    K_TAG0, /* K_TAG0 + tag, then the memory categories */
    K_MEM0 = K_TAG0 + RL_NTAGS,
    K_RANKS = K_MEM0 + RL_MEM_NCAT, K_HW, K_MEMORY_PEAK, K_MESH, K_META, K_VERSION, K_DIMS, K_SIZES,  /* ringlab */
    K_NKEYS
} key;

/* A value as the event's checks need it: absent, an integer, another number, a string, an
 * object, or something else (null, true, an array ...). */
typedef enum { V_NONE, V_INT, V_REAL, V_STRING, V_OBJECT, V_OTHER } vkind;
typedef struct {
    vkind kind;
    long long i;
    double d;
    char s[48]; /* short strings (ph, name, cat, phase, comm) */
} val;

#define MAX_DEPTH 64
#define MAX_PEERS (1 << 16)
#define MAX_RANKS 4096

typedef struct {
    rl_trace *t;
    const char *path;
    char *err;
    int errlen, failed;
    ctype stack[MAX_DEPTH];
    int depth, skip;    /* skip: containers open inside a skipped value */
    key k;              /* the key whose value comes next */
    int saw_events;     /* a traceEvents array (or a top-level array) */
    size_t index;       /* events seen so far */
    size_t other_ph;    /* of them, events of a kind ringlab does not draw (B/E, i, s ...) */
    val ev[K_NKEYS];    /* the event being read: its fields, args included */
    char *shapes;       /* its args.shapes (owned until handed to the trace) */
    int64_t *peers;     /* its args.peer_bytes */
    int npeers, peers_bad;
    int ranks;          /* ringlab.ranks, 0 if not given */
    int max_pid;        /* the largest pid in 0..4095 among all events (the ranks, if not given) */
    int max_pid_xc;     /* ... among the events kept ("X" and "C"), and where it came first */
    size_t max_pid_at;
    int peak_row, peak_rows_stop; /* memory_peak: the row being read; the first row that is not an object */
    int64_t (*peak)[RL_MEM_NCAT];
    int mesh_seen, mesh_bad, mesh_arrays, ndims, nsizes; /* mesh_arrays: 1 dims, 2 sizes seen */
    char dims[RL_MESH_MAX][8];
    int named[RL_MESH_MAX];
    long long sizes[RL_MESH_MAX];
    char meta_key[64];
    const char *json_error; /* a number the reader refused: the file is not valid JSON */
} reader;

static int fail(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(reader *r, const char *fmt, ...)
{
    if (!r->failed) {
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(r->err, (size_t)r->errlen, "trace '%s': ", r->path);
        if (n >= 0 && n < r->errlen)
            vsnprintf(r->err + n, (size_t)(r->errlen - n), fmt, ap);
        va_end(ap);
        r->failed = 1;
    }
    return 0; /* stops the parser */
}

/* The names of the keys (those of the tags and the memory categories come from trace.c and mem.c). */
static const char *key_name(key k)
{
    static const char *const names[K_NKEYS] = {
        [K_TRACE_EVENTS] = "traceEvents", [K_RINGLAB] = "ringlab", [K_PH] = "ph", [K_PID] = "pid", [K_TID] = "tid",
        [K_TS] = "ts", [K_DUR] = "dur", [K_NAME] = "name", [K_CAT] = "cat", [K_ARGS] = "args", [K_BYTES] = "bytes",
        [K_FLOPS] = "flops", [K_PHASE] = "phase", [K_SEQ] = "seq", [K_COMM] = "comm", [K_SHAPES] = "shapes",
        [K_PEER] = "peer", [K_PEER_BYTES] = "peer_bytes", [K_WALL_TS] = "wall_ts", [K_WALL_DUR] = "wall_dur",
        [K_ROLE] = "role", [K_REGION] = "region",
        [K_RANKS] = "ranks", [K_HW] = "hw", [K_MEMORY_PEAK] = "memory_peak", [K_MESH] = "mesh", [K_META] = "meta",
        [K_VERSION] = "version", [K_DIMS] = "dims", [K_SIZES] = "sizes",
    };
    if (k >= K_TAG0 && k < K_MEM0)
        return rl_tag_name((rl_tag)(k - K_TAG0));
    if (k >= K_MEM0 && k < K_MEM0 + RL_MEM_NCAT)
        return rl_mem_cat_name((rl_mem_cat)(k - K_MEM0));
    return names[k];
}

/* Which of the known keys s is, among those container c may hold (K_OTHER if none). The
 * names' lengths are taken once: this runs for every key of every event. */
static key key_of(ctype c, const unsigned char *s, size_t len)
{
    static size_t lens[K_NKEYS];
    if (!lens[K_PH]) /* (racing threads would write the same lengths) */
        for (int k = 1; k < K_NKEYS; k++)
            lens[k] = strlen(key_name((key)k));
    key lo, hi;
    switch (c) {
    case C_TOP: lo = K_TRACE_EVENTS, hi = K_PH; break;
    case C_EVENT: lo = K_PH, hi = K_BYTES; break;
    case C_ARGS: lo = K_BYTES, hi = K_RANKS; break; /* ("comm" is K_COMM: a string, or a counter's bytes) */
    case C_PEAK: lo = K_MEM0, hi = K_RANKS; break;
    case C_RINGLAB: lo = K_RANKS, hi = K_DIMS; break;
    case C_MESH: lo = K_DIMS, hi = K_NKEYS; break;
    default: return K_OTHER;
    }
    for (int k = (int)lo; k < (int)hi; k++)
        if (lens[k] == len && memcmp(key_name((key)k), s, len) == 0)
            return (key)k;
    return K_OTHER;
}

static ctype top(const reader *r) { return r->skip ? C_SKIP : r->stack[r->depth]; }

static int push(reader *r, ctype c)
{
    if (r->skip || c == C_SKIP || r->depth + 1 >= MAX_DEPTH) {
        r->skip++;
        return 1;
    }
    r->stack[++r->depth] = c;
    return 1;
}

static void clear_event(reader *r)
{
    memset(r->ev, 0, sizeof r->ev);
    free(r->shapes);
    free(r->peers);
    r->shapes = NULL;
    r->peers = NULL;
    r->npeers = r->peers_bad = 0;
}

static int is_num(const val *v) { return v->kind == V_INT || v->kind == V_REAL; }
static double num(const val *v) { return v->kind == V_INT ? (double)v->i : v->d; }
static int int_in(const val *v, long long lo, long long hi) { return v->kind == V_INT && v->i >= lo && v->i < hi; }

/* The event just read, checked as a whole (its keys may come in any order). */
static int finish_event(reader *r)
{
    size_t i = r->index++;
    const val *e = r->ev;
    if (e[K_PH].kind != V_STRING)
        return fail(r, "traceEvents[%zu] has no \"ph\" string", i);
    if (int_in(&e[K_PID], 0, MAX_RANKS) && (int)e[K_PID].i > r->max_pid)
        r->max_pid = (int)e[K_PID].i;
    int counter = strcmp(e[K_PH].s, "C") == 0;
    if (strcmp(e[K_PH].s, "X") && !counter) {
        r->other_ph += strcmp(e[K_PH].s, "M") != 0; /* (M: names of processes and threads) */
        return 1;
    }
    int hi = r->ranks ? r->ranks : MAX_RANKS;
    if (!int_in(&e[K_PID], 0, hi))
        return fail(r, "traceEvents[%zu] has \"pid\" outside 0..%d", i, hi - 1);
    int rank = (int)e[K_PID].i;
    if (rank > r->max_pid_xc) {
        r->max_pid_xc = rank;
        r->max_pid_at = i;
    }
    if (!is_num(&e[K_TS]))
        return fail(r, "traceEvents[%zu] needs a number \"ts\" (microseconds since the run's start)", i);
    if (!(num(&e[K_TS]) >= 0 && num(&e[K_TS]) <= 1e15))
        return fail(r, "traceEvents[%zu].ts is %g: a time from 0 to 1e15 microseconds since the run's start is "
                    "expected (a trace with absolute or negative times is not a ringlab trace)", i, num(&e[K_TS]));
    double ts = num(&e[K_TS]);
    if (e[K_ARGS].kind != V_NONE && e[K_ARGS].kind != V_OBJECT)
        return fail(r, "traceEvents[%zu].args is not an object", i);
    if (counter) {
        rl_mem_sample m = { .rank = rank, .vtime = ts * 1e-6 };
        for (int c = 0; c < RL_MEM_NCAT; c++) {
            const val *v = &e[K_MEM0 + c];
            if (v->kind != V_NONE && (!is_num(v) || num(v) < 0 || num(v) > 1e18))
                return fail(r, "traceEvents[%zu].args.%s must be a byte count", i, rl_mem_cat_name((rl_mem_cat)c));
            m.current[c] = v->kind != V_NONE ? (int64_t)num(v) : 0;
        }
        return rl_trace_add_mem(r->t, &m) ? fail(r, "out of memory") : 1;
    }
    if (e[K_DUR].kind != V_NONE && (!is_num(&e[K_DUR]) || num(&e[K_DUR]) < 0 || num(&e[K_DUR]) > 1e15))
        return fail(r, "traceEvents[%zu].dur must be a finite number >= 0", i);
    double dur = e[K_DUR].kind != V_NONE ? num(&e[K_DUR]) : 0;
    rl_trace_event ev;
    rl_trace_event_init(&ev);
    ev.rank = rank;
    ev.stream = e[K_TID].kind == V_INT && e[K_TID].i == 1;
    _Static_assert(sizeof ev.name == sizeof e[K_NAME].s, "an event's name is read whole");
    if (e[K_NAME].kind == V_STRING)
        memcpy(ev.name, e[K_NAME].s, sizeof ev.name); /* NUL-ended */
    else
        strcpy(ev.name, "?");
    int cat = e[K_CAT].kind == V_STRING ? rl_cat_parse(e[K_CAT].s) : -1;
    ev.cat = cat >= 0 ? (rl_cat)cat : (ev.stream ? RL_CAT_COMM : RL_CAT_COMPUTE);
    ev.vstart = ts * 1e-6;
    ev.vend = (ts + dur) * 1e-6;
    if (is_num(&e[K_BYTES]))
        ev.bytes = num(&e[K_BYTES]);
    if (is_num(&e[K_FLOPS]))
        ev.flops = num(&e[K_FLOPS]);
    for (int k = 0; k < RL_NTAGS; k++) {
        const val *v = &e[K_TAG0 + k];
        int hi = k == RL_TAG_STEP ? 100000000 : 1000000;
        if (v->kind == V_NONE)
            continue;
        if (!int_in(v, 0, (long long)hi + 1))
            return fail(r, "traceEvents[%zu].args.%s must be a whole number from 0 to %d", i, rl_tag_name((rl_tag)k),
                        hi);
        ev.tags[k] = (int)v->i;
    }
    if (e[K_PHASE].kind == V_STRING)
        ev.phase = e[K_PHASE].s[0];
    if (e[K_REGION].kind == V_STRING && strchr("FBO", e[K_REGION].s[0]) && !e[K_REGION].s[1])
        ev.region = e[K_REGION].s[0];
    if (e[K_SEQ].kind == V_INT)
        ev.seq = e[K_SEQ].i;
    if (e[K_COMM].kind == V_STRING)
        memcpy(ev.comm, e[K_COMM].s, sizeof ev.comm - 1); /* ev.comm[last] stays 0 */
    size_t rn = e[K_ROLE].kind == V_STRING ? strlen(e[K_ROLE].s) : 0; /* (as rl_comm_set_role takes it, else none) */
    if (rn >= 1 && rn < sizeof ev.role && strspn(e[K_ROLE].s, "abcdefghijklmnopqrstuvwxyz0123456789-") == rn)
        memcpy(ev.role, e[K_ROLE].s, rn + 1);
    if (int_in(&e[K_PEER], 0, 1 << 30))
        ev.peer = (int)e[K_PEER].i;
    if (is_num(&e[K_WALL_TS])) {
        ev.wstart = num(&e[K_WALL_TS]) * 1e-6;
        if (is_num(&e[K_WALL_DUR]))
            ev.wend = ev.wstart + num(&e[K_WALL_DUR]) * 1e-6;
    }
    ev.shapes = r->shapes; /* handed over: the trace owns them now */
    if (r->npeers > 0 && !r->peers_bad) {
        ev.peer_bytes = r->peers;
        ev.npeers = r->npeers;
        r->peers = NULL;
    }
    r->shapes = NULL;
    return rl_trace_take(r->t, &ev) ? fail(r, "out of memory") : 1;
}

/* A scalar value, where it goes. */
static int value(reader *r, vkind kind, long long i, double d, const unsigned char *s, size_t len)
{
    ctype c = top(r);
    key k = r->k;
    switch (c) {
    case C_ROOT:
        return fail(r, "no \"traceEvents\" array (is it a Chrome trace-event file?)");
    case C_TOP:
        if (k == K_TRACE_EVENTS)
            return fail(r, "no \"traceEvents\" array (is it a Chrome trace-event file?)");
        return 1;
    case C_EVENTS:
        return fail(r, "traceEvents[%zu] is not an object", r->index);
    case C_EVENT:
    case C_ARGS: {
        if (k == K_OTHER)
            return 1; /* a key the reader does not use */
        val *v = &r->ev[k];
        v->kind = kind;
        v->i = i;
        v->d = d;
        if (k == K_COMM) /* a counter event's bytes in the comm category have the same key */
            r->ev[K_MEM0 + RL_MEM_COMM] = *v;
        if (kind == V_STRING) {
            size_t n = strnlen((const char *)s, len); /* a \u0000 ends it, as in C */
            if (k == K_SHAPES) {
                free(r->shapes);
                if (!(r->shapes = strndup((const char *)s, n)))
                    return fail(r, "out of memory");
            }
            n = n < sizeof v->s - 1 ? n : sizeof v->s - 1;
            memcpy(v->s, s, n);
            v->s[n] = 0;
        }
        return 1;
    }
    case C_PEER_BYTES:
        if (r->npeers >= MAX_PEERS) {
            r->peers_bad = 1;
            return 1;
        }
        if (!r->peers && !(r->peers = malloc(MAX_PEERS * sizeof *r->peers)))
            return fail(r, "out of memory");
        r->peers[r->npeers++] = kind == V_INT && i >= 0 ? i : 0;
        return 1;
    case C_RINGLAB:
        if (k == K_RANKS) {
            if (kind != V_INT || i < 1 || i > MAX_RANKS)
                return fail(r, "\"ringlab.ranks\" must be an integer from 1 to %d", MAX_RANKS);
            r->ranks = (int)i;
            if (r->max_pid_xc >= r->ranks)
                return fail(r, "traceEvents[%zu] has \"pid\" outside 0..%d", r->max_pid_at, r->ranks - 1);
        } else if (k == K_VERSION && !(kind == V_INT && i == 1)) {
            return fail(r, "\"ringlab.version\" is not 1: this ringlab reads traces of version 1 (the file was "
                        "written by another version of ringlab, or is not a ringlab trace)");
        } else if (k == K_HW && kind == V_STRING) {
            snprintf(r->t->hw, sizeof r->t->hw, "%.*s", (int)strnlen((const char *)s, len), s);
        } else if (k == K_MESH) {
            r->mesh_seen = r->mesh_bad = 1; /* not an object */
        }
        return 1;
    case C_PEAKS:
        if (r->peak_rows_stop < 0)
            r->peak_rows_stop = r->peak_row;
        r->peak_row++;
        return 1;
    case C_PEAK:
        if (k >= K_MEM0 && k < K_MEM0 + RL_MEM_NCAT && r->peak_row < MAX_RANKS) {
            double x = kind == V_INT ? (double)i : kind == V_REAL ? d : -1;
            if (!(x >= 0 && x < 1e18))
                return fail(r, "\"ringlab.memory_peak\"[%d].%s must be a byte count from 0 to 1e18", r->peak_row,
                            rl_mem_cat_name((rl_mem_cat)(k - K_MEM0)));
            r->peak[r->peak_row][k - K_MEM0] = (int64_t)x;
        }
        return 1;
    case C_MESH:
        if (k == K_DIMS || k == K_SIZES)
            r->mesh_bad = 1; /* not an array */
        return 1;
    case C_DIMS:
        if (r->ndims < RL_MESH_MAX && kind == V_STRING) {
            snprintf(r->dims[r->ndims], sizeof r->dims[0], "%.*s", (int)strnlen((const char *)s, len), s);
            r->named[r->ndims] = 1;
        }
        r->ndims++;
        return 1;
    case C_SIZES:
        if (r->nsizes < RL_MESH_MAX)
            r->sizes[r->nsizes] = kind == V_INT ? i : -1;
        r->nsizes++;
        return 1;
    case C_META:
        if (kind == V_STRING) {
            char *v = strndup((const char *)s, len);
            if (!v)
                return fail(r, "out of memory");
            rl_trace_set_meta(r->t, r->meta_key, v);
            free(v);
        }
        return 1;
    default:
        return 1;
    }
}

static int on_null(void *ctx) { return value(ctx, V_OTHER, 0, 0, NULL, 0); }
static int on_bool(void *ctx, int b) { (void)b; return value(ctx, V_OTHER, 0, 0, NULL, 0); }

/* A JSON number's text (yajl has checked its form) as an integer or a double: the common short
 * ones by exact arithmetic (at most 15 digits and a power of ten up to 22: one correctly rounded
 * operation, as strtod would give), the rest by strtod. A number past the range of its type is
 * not valid JSON here, as for jansson. */
static int on_number(void *ctx, const char *s, size_t len)
{
    reader *r = ctx;
    static const double pow10[] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
    size_t i = 0;
    int neg = s[0] == '-';
    i += (size_t)neg;
    unsigned long long m = 0;
    int digits = 0, frac = 0, real = 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        m = m * 10 + (unsigned long long)(s[i] - '0'); /* (wraps past 19 digits: then strtod decides) */
        digits += m > 0; /* significant digits: leading zeros are not */
    }
    if (i < len && s[i] == '.') {
        real = 1;
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, frac++) {
            m = m * 10 + (unsigned long long)(s[i] - '0');
            digits += m > 0;
        }
    }
    long e = 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        real = 1;
        int eneg = s[++i] == '-';
        i += s[i] == '-' || s[i] == '+';
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            e = e < 100000 ? e * 10 + (s[i] - '0') : e;
        e = eneg ? -e : e;
    }
    if (!real) {
        if (digits > 19 || m > (unsigned long long)LLONG_MAX + (unsigned long long)neg) {
            r->json_error = "integer overflow";
            return 0;
        }
        long long v = neg ? (long long)(0 - m) : (long long)m;
        return value(r, V_INT, v, 0, NULL, 0);
    }
    e -= frac;
    double d;
    if (digits <= 15 && e >= -22 && e <= 22) {
        d = e >= 0 ? (double)m * pow10[e] : (double)m / pow10[-e];
        d = neg ? -d : d;
    } else {
        char text[512];
        if (len >= sizeof text) { /* a number of 512 characters: yajl would have read it the same */
            r->json_error = "number too long";
            return 0;
        }
        memcpy(text, s, len);
        text[len] = 0;
        errno = 0;
        d = strtod(text, NULL);
        if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL)) {
            r->json_error = "numeric (floating point) overflow";
            return 0;
        }
    }
    return value(r, V_REAL, 0, d, NULL, 0);
}
static int on_string(void *ctx, const unsigned char *s, size_t len) { return value(ctx, V_STRING, 0, 0, s, len); }

static int on_key(void *ctx, const unsigned char *s, size_t len)
{
    reader *r = ctx;
    ctype c = top(r);
    r->k = key_of(c, s, len);
    if (c == C_META)
        snprintf(r->meta_key, sizeof r->meta_key, "%.*s", (int)strnlen((const char *)s, len), s);
    return 1;
}

/* A container opens where a value goes: what it is depends on where it is. */
static int open_container(reader *r, int is_map)
{
    ctype c = top(r);
    key k = r->k;
    r->k = K_OTHER;
    if (c == C_ROOT && !is_map) {
        r->saw_events = 1;
        return push(r, C_EVENTS);
    }
    if (c == C_ROOT)
        return push(r, C_TOP);
    if (c == C_TOP && k == K_TRACE_EVENTS) {
        if (is_map)
            return fail(r, "no \"traceEvents\" array (is it a Chrome trace-event file?)");
        r->saw_events = 1;
        return push(r, C_EVENTS);
    }
    if (c == C_TOP && k == K_RINGLAB)
        return push(r, is_map ? C_RINGLAB : C_SKIP);
    if (c == C_EVENTS) {
        if (!is_map)
            return fail(r, "traceEvents[%zu] is not an object", r->index);
        clear_event(r);
        return push(r, C_EVENT);
    }
    if (c == C_EVENT && k == K_ARGS) {
        r->ev[K_ARGS].kind = is_map ? V_OBJECT : V_OTHER;
        return push(r, is_map ? C_ARGS : C_SKIP);
    }
    if (c == C_ARGS && k == K_PEER_BYTES && !is_map) {
        r->npeers = 0;
        return push(r, C_PEER_BYTES);
    }
    if (c == C_EVENT || c == C_ARGS) { /* a container where a known scalar goes counts as "other" */
        if (k != K_OTHER)
            r->ev[k].kind = V_OTHER;
        if (k == K_COMM)
            r->ev[K_MEM0 + RL_MEM_COMM].kind = V_OTHER;
        return push(r, C_SKIP);
    }
    if (c == C_PEER_BYTES) {
        value(r, V_OTHER, 0, 0, NULL, 0);
        return push(r, C_SKIP);
    }
    if (c == C_RINGLAB && k == K_RANKS)
        return fail(r, "\"ringlab.ranks\" must be an integer from 1 to %d", MAX_RANKS);
    if (c == C_RINGLAB && k == K_VERSION)
        return fail(r, "\"ringlab.version\" is not 1: this ringlab reads traces of version 1");
    if (c == C_RINGLAB && k == K_MEMORY_PEAK && !is_map)
        return push(r, C_PEAKS);
    if (c == C_RINGLAB && k == K_MESH) {
        r->mesh_seen = 1;
        r->mesh_bad |= !is_map;
        return push(r, is_map ? C_MESH : C_SKIP);
    }
    if (c == C_RINGLAB && k == K_META && is_map)
        return push(r, C_META);
    if (c == C_PEAKS) {
        if (!is_map && r->peak_rows_stop < 0)
            r->peak_rows_stop = r->peak_row;
        return push(r, is_map ? C_PEAK : C_SKIP);
    }
    if (c == C_MESH && (k == K_DIMS || k == K_SIZES)) {
        r->mesh_arrays |= is_map ? 0 : (k == K_DIMS ? 1 : 2);
        if (is_map)
            r->mesh_bad = 1;
        return push(r, is_map ? C_SKIP : (k == K_DIMS ? C_DIMS : C_SIZES));
    }
    if (c == C_DIMS || c == C_SIZES) {
        value(r, V_OTHER, 0, 0, NULL, 0);
        return push(r, C_SKIP);
    }
    return push(r, C_SKIP);
}

static int close_container(reader *r)
{
    if (r->skip) {
        r->skip--;
        return 1;
    }
    ctype c = r->stack[r->depth--];
    r->k = K_OTHER;
    if (c == C_EVENT)
        return finish_event(r);
    if (c == C_PEAK)
        r->peak_row++;
    return 1;
}

static int on_start_map(void *ctx) { return open_container(ctx, 1); }
static int on_start_array(void *ctx) { return open_container(ctx, 0); }
static int on_end(void *ctx) { return close_container(ctx); }

static const yajl_callbacks callbacks = {
    on_null, on_bool, NULL, NULL, on_number, on_string, on_start_map, on_key, on_end, on_start_array, on_end,
};

/* What the whole file says once it is read: ranks, peaks, the mesh. */
static int finish(reader *r)
{
    if (!r->saw_events)
        return fail(r, "no \"traceEvents\" array (is it a Chrome trace-event file?)");
    if (r->t->n == 0 && r->t->nmem == 0 && r->other_ph > 0)
        return fail(r, "none of its %zu events is of a kind ringlab draws: \"ph\" \"X\" (a span) or \"C\" (a memory "
                    "counter)", r->other_ph);
    int nranks = r->ranks ? r->ranks : r->max_pid + 1; /* (max_pid starts at 0: one rank at least) */
    rl_trace *t = r->t;
    t->skipped = r->other_ph;
    int64_t (*peak)[RL_MEM_NCAT] = realloc(t->peak, (size_t)nranks * sizeof *t->peak);
    if (!peak)
        return fail(r, "out of memory");
    t->peak = peak;
    t->nranks = nranks;
    int rows = r->peak_rows_stop >= 0 ? r->peak_rows_stop : r->peak_row;
    memset(t->peak, 0, (size_t)nranks * sizeof *t->peak);
    for (int i = 0; i < rows && i < nranks; i++)
        memcpy(t->peak[i], r->peak[i], sizeof t->peak[i]);
    if (!r->mesh_seen)
        return 1;
    if (r->mesh_bad || r->mesh_arrays != 3 || r->ndims != r->nsizes || r->ndims > RL_MESH_MAX)
        return fail(r, "\"ringlab.mesh\" needs arrays \"dims\" and \"sizes\" of equal length <= %d", RL_MESH_MAX);
    long prod = 1;
    for (int k = 0; k < r->ndims; k++) {
        if (!r->named[k] || r->sizes[k] < 1 || r->sizes[k] > MAX_RANKS)
            return fail(r, "mesh dim %d needs a name and a size from 1 to %d", k, MAX_RANKS);
        snprintf(t->mesh_names[k], sizeof t->mesh_names[k], "%s", r->dims[k]);
        t->mesh_sizes[k] = (int)r->sizes[k];
        prod = prod > nranks ? prod : prod * t->mesh_sizes[k]; /* past nranks it is wrong already */
    }
    if (prod != nranks)
        return fail(r, "mesh sizes multiply to %s%ld but the trace has %d ranks", prod > nranks ? "more than " : "",
                    prod > nranks ? (long)nranks : prod, nranks);
    t->mesh_ndims = r->ndims;
    return 1;
}

/* Line and column (from 1) of byte `at` of the file, read again (only for the error message). */
static void position(FILE *f, long at, int *line, int *col)
{
    *line = *col = 1;
    rewind(f);
    for (long i = 0; i < at; i++) {
        int ch = getc(f);
        if (ch == EOF)
            break;
        if (ch == '\n') {
            ++*line;
            *col = 1;
        } else if ((ch & 0xC0) != 0x80) { /* a character, not a UTF-8 continuation byte */
            ++*col;
        }
    }
}

RL_API_WATCHED
rl_trace *rl_trace_read_json(const char *path, char *err, int errlen)
{
    RL_API_ENTRY();
    FILE *f = rl_file_read_regular(path);
    if (!f) {
        snprintf(err, (size_t)errlen, "cannot read trace '%s': %s", path,
                 errno == EINVAL ? "not a regular file (a FIFO, a device or a folder)" : strerror(errno));
        return NULL;
    }
    reader *r = calloc(1, sizeof *r);
    unsigned char *buf = malloc(1 << 20);
    yajl_handle h = r && buf ? yajl_alloc(&callbacks, NULL, r) : NULL;
    if (r && buf && h && (r->peak = calloc(MAX_RANKS, sizeof *r->peak)) && (r->t = rl_trace_new(1))) {
        r->path = path;
        r->err = err;
        r->errlen = errlen;
        r->max_pid = 0;
        r->peak_rows_stop = -1;
        yajl_status st = yajl_status_ok;
        size_t n;
        long offset = 0; /* of the chunk being parsed */
        while (st == yajl_status_ok && (n = fread(buf, 1, 1 << 20, f)) > 0) {
            st = yajl_parse(h, buf, n);
            offset += st == yajl_status_ok ? (long)n : (long)yajl_get_bytes_consumed(h);
        }
        if (st == yajl_status_ok && ferror(f)) {
            snprintf(err, (size_t)errlen, "cannot read trace '%s': %s", path, strerror(errno));
            r->failed = 1;
        } else if (st == yajl_status_ok) {
            st = yajl_complete_parse(h); /* (an error here is at the end of the file) */
        }
        if (st == yajl_status_error || (st == yajl_status_client_canceled && r->json_error)) {
            char *why = (char *)yajl_get_error(h, 0, NULL, 0), *colon = strstr(why, ": "); /* "parse error: ..." */
            char *w = colon ? colon + 2 : why;
            w[strcspn(w, "\n")] = 0;
            int line, col;
            position(f, offset, &line, &col);
            snprintf(err, (size_t)errlen, "trace '%s' is not valid JSON at line %d, column %d: %s", path, line, col,
                     r->json_error ? r->json_error : w);
            yajl_free_error(h, (unsigned char *)why);
            r->failed = 1;
        } else if (!r->failed) {
            finish(r);
        }
    } else if (r) {
        snprintf(err, (size_t)errlen, "trace '%s': out of memory", path);
        r->failed = 1;
    }
    fclose(f);
    free(buf);
    if (h)
        yajl_free(h);
    rl_trace *t = NULL;
    if (r) {
        clear_event(r);
        free(r->peak);
        t = r->t;
        if (r->failed) {
            rl_trace_free(t);
            t = NULL;
        }
        free(r);
    }
    return t;
}
