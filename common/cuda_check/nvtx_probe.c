/* nvtx_probe.c — an NVTX injection library (build/nvtx_probe.so) that checks the NVTX ranges a
 * run opens and closes, without Nsight Systems. Run a program with
 *   NVTX_INJECTION64_PATH=/abs/path/build/nvtx_probe.so RINGLAB_NVTX_REPORT=report.txt prog ...
 * On the program's first NVTX call, NVTX (v3, header-only) loads this library and calls
 * InitializeInjectionNvtx2, which puts the functions below into NVTX's core callback table:
 * nvtxRangePushA/Ex and nvtxRangePop (a stack per thread), nvtxRangeStartA/Ex and nvtxRangeEnd.
 * Every other NVTX call stays a no-op. At exit it writes a plain-text report to the file
 * RINGLAB_NVTX_REPORT names (stderr if unset): a title line; one `key: N` line for each of
 * pushes, pops, pops_without_push, open_at_exit (pushed and started ranges never closed),
 * starts, ends, ends_without_start, threads (that made a range call) and max_depth (of a push
 * stack); `ranges by name (pushes and starts):` and one `name count` line per name, sorted; and
 * a `still open on thread T: a > b` line for each thread whose stack is not empty.
 * All state is behind one mutex: ranks are threads. */
#define NVTX_NO_IMPL /* the types and callback ids only: this library is the tool, not a client */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One thread that made a range call: its stack of open pushed ranges (indices into names). */
typedef struct probe_thread {
    int id; /* 1, 2, ... in order of first call */
    int *stack;
    int depth, cap;
    struct probe_thread *next;
} probe_thread;

/* A range name and how many ranges (pushed or started) carried it. */
typedef struct {
    char *name;
    long long count;
} probe_name;

/* Everything the probe counts, behind mu. */
static struct {
    pthread_mutex_t mu;
    long long pushes, pops, pops_without_push, starts, ends, ends_without_start;
    int max_depth;
    probe_name *names; /* in order of first use */
    int nnames, cap_names;
    uint64_t *open_ids; /* ranges started and not yet ended */
    int nopen_ids, cap_open_ids;
    uint64_t next_id;
    probe_thread *threads;
    int nthreads;
    int report_registered;
} probe = { .mu = PTHREAD_MUTEX_INITIALIZER, .next_id = 1 };

static _Thread_local probe_thread *self; /* the calling thread's record (it outlives the thread) */

/* arr (of *cap elements of size elem) grown to hold need; NULL out of memory (arr kept). */
static void *grow(void *arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return arr;
    int n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(arr, (size_t)n * elem);
    if (q)
        *cap = n;
    return q;
}

/* The calling thread's record, created on its first call; NULL out of memory. Holds mu. */
static probe_thread *this_thread(void)
{
    if (self)
        return self;
    probe_thread *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->id = ++probe.nthreads;
    t->next = probe.threads;
    probe.threads = t;
    return self = t;
}

/* Counts one range named name; returns its index in probe.names, or -1. Holds mu. */
static int count_name(const char *name)
{
    for (int i = 0; i < probe.nnames; i++)
        if (strcmp(probe.names[i].name, name) == 0) {
            probe.names[i].count++;
            return i;
        }
    probe_name *names = grow(probe.names, &probe.cap_names, probe.nnames + 1, sizeof *names);
    if (!names)
        return -1;
    probe.names = names;
    char *copy = strdup(name);
    if (!copy)
        return -1;
    names[probe.nnames] = (probe_name){ copy, 1 };
    return probe.nnames++;
}

/* The name an event's attributes carry (ASCII or wide message) in buf. */
static const char *attrib_name(const nvtxEventAttributes_t *a, char *buf, size_t size)
{
    if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message)
        return "(no attributes)";
    if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii)
        return a->message.ascii;
    if (a->messageType == NVTX_MESSAGE_TYPE_UNICODE && a->message.unicode) {
        snprintf(buf, size, "%ls", a->message.unicode);
        return buf;
    }
    return a->messageType == NVTX_MESSAGE_TYPE_REGISTERED ? "(registered string)" : "(no message)";
}

/* nvtxRangePushA: pushes name on the calling thread's stack; returns the range's level (0-based). */
static int probe_push_a(const char *name)
{
    pthread_mutex_lock(&probe.mu);
    probe_thread *t = this_thread();
    int level = -1;
    int *stack = t ? grow(t->stack, &t->cap, t->depth + 1, sizeof *stack) : NULL;
    if (stack) {
        t->stack = stack;
        probe.pushes++;
        t->stack[t->depth] = count_name(name ? name : "(null)");
        level = t->depth++;
        if (t->depth > probe.max_depth)
            probe.max_depth = t->depth;
    }
    pthread_mutex_unlock(&probe.mu);
    return level;
}

/* nvtxRangePushEx: as nvtxRangePushA, with the name from the attributes. */
static int probe_push_ex(const nvtxEventAttributes_t *attrib)
{
    char buf[256];
    return probe_push_a(attrib_name(attrib, buf, sizeof buf));
}

/* nvtxRangePop: pops the calling thread's innermost range; its level, or -1 if none was open. */
static int probe_pop(void)
{
    pthread_mutex_lock(&probe.mu);
    probe_thread *t = this_thread();
    int level = -1;
    probe.pops++;
    if (t && t->depth > 0)
        level = --t->depth;
    else
        probe.pops_without_push++;
    pthread_mutex_unlock(&probe.mu);
    return level;
}

/* nvtxRangeStartA: opens a range that any thread may end; returns its id (0 out of memory). */
static nvtxRangeId_t probe_start_a(const char *name)
{
    pthread_mutex_lock(&probe.mu);
    nvtxRangeId_t id = 0;
    uint64_t *ids = grow(probe.open_ids, &probe.cap_open_ids, probe.nopen_ids + 1, sizeof *ids);
    if (ids) {
        probe.open_ids = ids;
        this_thread();
        probe.starts++;
        count_name(name ? name : "(null)");
        id = probe.next_id++;
        probe.open_ids[probe.nopen_ids++] = id;
    }
    pthread_mutex_unlock(&probe.mu);
    return id;
}

/* nvtxRangeStartEx: as nvtxRangeStartA, with the name from the attributes. */
static nvtxRangeId_t probe_start_ex(const nvtxEventAttributes_t *attrib)
{
    char buf[256];
    return probe_start_a(attrib_name(attrib, buf, sizeof buf));
}

/* nvtxRangeEnd: closes the started range id (counted as unmatched if it is not open). */
static void probe_end(nvtxRangeId_t id)
{
    pthread_mutex_lock(&probe.mu);
    this_thread();
    probe.ends++;
    int i = 0;
    while (i < probe.nopen_ids && probe.open_ids[i] != id)
        i++;
    if (i < probe.nopen_ids)
        probe.open_ids[i] = probe.open_ids[--probe.nopen_ids];
    else
        probe.ends_without_start++;
    pthread_mutex_unlock(&probe.mu);
}

/* qsort order of name pointers: by name. */
static int by_name(const void *a, const void *b)
{
    return strcmp((*(const probe_name *const *)a)->name, (*(const probe_name *const *)b)->name);
}

/* Writes the report (atexit): to $RINGLAB_NVTX_REPORT, or stderr. */
static void write_report(void)
{
    pthread_mutex_lock(&probe.mu);
    const char *path = getenv("RINGLAB_NVTX_REPORT");
    FILE *f = path && *path ? fopen(path, "w") : NULL;
    if (path && *path && !f)
        fprintf(stderr, "nvtx_probe: cannot write %s; the report follows here\n", path);
    if (!f)
        f = stderr;
    long long open = probe.nopen_ids;
    for (probe_thread *t = probe.threads; t; t = t->next)
        open += t->depth;
    fprintf(f, "nvtx_probe: NVTX ranges seen through the injection interface\n");
    fprintf(f, "pushes: %lld\npops: %lld\npops_without_push: %lld\nopen_at_exit: %lld\n", probe.pushes, probe.pops,
            probe.pops_without_push, open);
    fprintf(f, "starts: %lld\nends: %lld\nends_without_start: %lld\nthreads: %d\nmax_depth: %d\n", probe.starts,
            probe.ends, probe.ends_without_start, probe.nthreads, probe.max_depth);
    fprintf(f, "ranges by name (pushes and starts):\n");
    const probe_name **order = malloc((size_t)(probe.nnames > 0 ? probe.nnames : 1) * sizeof *order);
    for (int i = 0; order && i < probe.nnames; i++)
        order[i] = &probe.names[i];
    if (order)
        qsort(order, (size_t)probe.nnames, sizeof *order, by_name);
    for (int i = 0; i < probe.nnames; i++) {
        const probe_name *n = order ? order[i] : &probe.names[i];
        fprintf(f, "%s %lld\n", n->name, n->count);
    }
    free(order);
    for (probe_thread *t = probe.threads; t; t = t->next) {
        if (!t->depth)
            continue;
        fprintf(f, "still open on thread %d:", t->id);
        for (int i = 0; i < t->depth; i++)
            fprintf(f, "%s %s", i ? " >" : "", t->stack[i] >= 0 ? probe.names[t->stack[i]].name : "?");
        fprintf(f, "\n");
    }
    if (f != stderr)
        fclose(f);
    pthread_mutex_unlock(&probe.mu);
}

/* Puts fn into slot id of NVTX's core callback table (if the table has it). */
static void attach(NvtxFunctionTable table, unsigned int size, int id, NvtxFunctionPointer fn)
{
    if ((unsigned int)id < size && table[id])
        *table[id] = fn;
}

/* The entry point NVTX looks up after loading the library: attaches the range callbacks and
 * registers the report. Each copy of NVTX in the process (the program's, a library's) calls it
 * on its first use; all feed one report. Returns 1 on success, 0 to make NVTX unload the library. */
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable ||
        !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table)
        return 0;
    const NvtxExportTableVersionInfo *ver = get_export_table(NVTX_ETID_VERSIONINFO);
    if (ver && ver->struct_size >= sizeof *ver && ver->SetInjectionNvtxVersion)
        ver->SetInjectionNvtxVersion(NVTX_VERSION);
    attach(table, size, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)probe_push_a);
    attach(table, size, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)probe_push_ex);
    attach(table, size, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)probe_pop);
    attach(table, size, NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)probe_start_a);
    attach(table, size, NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)probe_start_ex);
    attach(table, size, NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)probe_end);
    pthread_mutex_lock(&probe.mu);
    int ok = probe.report_registered || atexit(write_report) == 0;
    probe.report_registered = ok;
    pthread_mutex_unlock(&probe.mu);
    return ok;
}
