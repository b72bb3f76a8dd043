/* fake_nccl.c — NCCL emulated on the host for the CUDA_FAKE build (tests only), at the level
 * of cuda_backend.h's rl_nccl_* calls, so that the runtime's NCCL paths run in CI: one process
 * with a thread per "GPU" (RL_FAKE_GPUS=4 --ranks 4) and one process per rank under a launcher
 * (RANK/WORLD_SIZE): communicators, groups, ncclCommSplit, calls queued on the comm stream and
 * waited for, aborts.
 *
 * A communicator is a small file mapped by every rank (in any process): a process-shared
 * mutex, a barrier, each rank's call and a mailbox for send/recv. The unique id names a fresh
 * directory for these files. Like NCCL, a call is queued on the rank's comm stream and the
 * host thread moves on. On the stream, a collective publishes the rank's input as a snapshot
 * file, waits until every rank has called it, computes this rank's output from every rank's
 * snapshot with the sim backend's reduction (so results equal sim's bit for bit) and waits
 * again before dropping its snapshot; a send waits until its receiver has copied it; the
 * calls of a group run together (sends posted first, so grouped send/recv never deadlock);
 * ncclCommAbort ends the waits of the aborting rank only.
 * Unlike NCCL, ranks that call different collectives or counts that do not match fail with
 * a message instead of hanging or corrupting memory. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cuda_backend.h"
#include "fake_cuda.h"
#include "internal.h"

#define FN_MAX_RANKS 64
#define FN_MAILBOX 512
#define FN_ID_BYTES 128

/* One rank's call, as the others see it. */
typedef struct {
    int kind, dtype, op, peer, color, key; /* kind: an rl_coll_kind, or RL_COLL_SPLIT */
    int64_t send_numel, recv_numel;
    int64_t snap, snap_bytes; /* its published input: snapshot id (0: none) and size */
} fn_part;

/* A posted send, waiting for its receiver. */
typedef struct {
    int used, taken, consumed, src, dst, dtype;
    int64_t seq, numel, snap;
} fn_mail;

/* A communicator's shared state (the mapped file). */
typedef struct {
    pthread_mutex_t mu; /* process-shared, as cv */
    pthread_cond_t cv;
    int ready, n, refs;
    int count;   /* ranks in the barrier */
    int64_t gen; /* barriers passed */
    int64_t next_id;
    char err[400]; /* the last collective's disagreement, "" if none */
    fn_part parts[FN_MAX_RANKS];
    int64_t counts[FN_MAX_RANKS][4 * FN_MAX_RANKS]; /* all_to_allv: each rank's 4 arrays */
    fn_mail mail[FN_MAILBOX];
} fn_shared;

/* One rank's handle of a communicator (what ncclComm_t points to here). */
typedef struct {
    fn_shared *s;
    char path[256]; /* the communicator's file; snapshots are path.sID */
    int rank;
    int users;   /* the handle itself and each queued call that uses it (atomic) */
    int aborted; /* ncclCommAbort on this handle: this rank's waits give up (atomic) */
} fake_comm;

/* One call as issued: kind is an rl_coll_kind; the fields as rl_nccl_call's. */
typedef struct {
    fake_comm *comm;
    int kind, dtype, op, peer;
    const void *send;
    void *recv;
    int64_t send_numel, recv_numel;
    int64_t *counts; /* all_to_allv: 4 arrays of n (copied) */
    int color, key;  /* split */
    fake_comm *split_out;
} fake_call;

static size_t elem_size(int dtype) { return dtype ? 2 : 4; }

static const char *kind_name(int kind)
{
    return kind == RL_COLL_SPLIT ? "ncclCommSplit" : rl_coll_name((rl_coll_kind)kind);
}

static void sleep_ms(int ms)
{
    struct timespec ts = { 0, (long)ms * 1000000L };
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ communicators */

/* Maps the communicator file at path (n ranks) as rank `rank`, making it if it is the first. */
static fake_comm *comm_attach(const char *path, int n, int rank, char *err, int len)
{
    if (n < 1 || n > FN_MAX_RANKS) {
        snprintf(err, (size_t)len, "emulated NCCL: %d ranks (it emulates 1 to %d)", n, FN_MAX_RANKS);
        return NULL;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600), creator = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = open(path, O_RDWR);
    struct stat st;
    for (int tries = 0; fd >= 0 && !creator && fstat(fd, &st) == 0 && st.st_size < (off_t)sizeof(fn_shared) &&
                        tries < 6000; tries++)
        sleep_ms(10); /* the first rank is still sizing it */
    if (fd < 0 || (creator && ftruncate(fd, sizeof(fn_shared)))) {
        snprintf(err, (size_t)len, "emulated NCCL: %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    fn_shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    fake_comm *m = calloc(1, sizeof *m);
    if (s == MAP_FAILED || !m) {
        snprintf(err, (size_t)len, "emulated NCCL: cannot map %s", path);
        free(m);
        if (s != MAP_FAILED)
            munmap(s, sizeof *s);
        return NULL;
    }
    if (creator) {
        pthread_mutexattr_t ma;
        pthread_condattr_t ca;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
        pthread_condattr_init(&ca);
        pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&s->mu, &ma);
        pthread_cond_init(&s->cv, &ca);
        s->n = n;
        s->next_id = 1;
        __atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
    }
    for (int tries = 0; !__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) && tries < 6000; tries++)
        sleep_ms(10);
    if (!__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) || s->n != n) {
        snprintf(err, (size_t)len, "emulated NCCL: %s: %s", path,
                 s->ready ? "ranks disagree on the communicator's size" : "never made ready");
        munmap(s, sizeof *s);
        free(m);
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    s->refs++;
    pthread_mutex_unlock(&s->mu);
    m->s = s;
    m->rank = rank;
    m->users = 1;
    snprintf(m->path, sizeof m->path, "%s", path);
    return m;
}

/* Drops a use of m; the last use unmaps it, and the last rank removes the file (and the
 * id's directory once it is empty). */
static void comm_release(fake_comm *m)
{
    if (__atomic_sub_fetch(&m->users, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    pthread_mutex_lock(&m->s->mu);
    int left = --m->s->refs;
    pthread_mutex_unlock(&m->s->mu);
    munmap(m->s, sizeof *m->s);
    if (left == 0) {
        unlink(m->path);
        rmdir(dirname(m->path)); /* (fails while other communicators' files remain) */
    }
    free(m);
}

/* -1 with a message if this rank's handle was aborted (ncclCommAbort), else 0. As with NCCL,
 * an abort in one process does not stop the ranks of other processes: their own watchdogs do. */
static int check_aborted(fake_comm *m, char *err, int len)
{
    if (!__atomic_load_n(&m->aborted, __ATOMIC_ACQUIRE))
        return 0;
    snprintf(err, (size_t)len, "emulated NCCL: the communicator was aborted (ncclCommAbort) while this rank waited");
    return -1;
}

/* Waits on the communicator's condition (mu held); -1 with a message once m is aborted. */
static int shared_wait(fake_comm *m, char *err, int len)
{
    if (!check_aborted(m, err, len))
        pthread_cond_wait(&m->s->cv, &m->s->mu);
    return check_aborted(m, err, len);
}

/* Every rank of m's communicator meets here (mu held); the last to arrive runs on_last first. */
static int barrier(fake_comm *m, void (*on_last)(fn_shared *s), char *err, int len)
{
    fn_shared *s = m->s;
    int64_t gen = s->gen;
    if (++s->count == s->n) {
        if (on_last)
            on_last(s);
        s->count = 0;
        s->gen++;
        pthread_cond_broadcast(&s->cv);
        return 0;
    }
    while (s->gen == gen)
        if (shared_wait(m, err, len))
            return -1;
    return 0;
}

/* ------------------------------------------------------------------ snapshots */

/* Writes bytes of data to a new snapshot file of m; its id (> 0), 0 for nothing, -1 on error. */
static int64_t publish(fake_comm *m, const void *data, int64_t bytes, char *err, int len)
{
    if (bytes <= 0 || !data)
        return 0;
    pthread_mutex_lock(&m->s->mu);
    int64_t id = m->s->next_id++;
    pthread_mutex_unlock(&m->s->mu);
    char path[300];
    snprintf(path, sizeof path, "%s.s%lld", m->path, (long long)id);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    for (int64_t done = 0; fd >= 0 && done < bytes;) {
        ssize_t k = write(fd, (const char *)data + done, (size_t)(bytes - done));
        if (k <= 0) {
            close(fd);
            fd = -1;
        } else {
            done += k;
        }
    }
    if (fd < 0 || close(fd)) {
        snprintf(err, (size_t)len, "emulated NCCL: snapshot %s: %s", path, strerror(errno));
        unlink(path);
        return -1;
    }
    return id;
}

/* Maps snapshot id of m (bytes long) for reading, or NULL. */
static const char *view(fake_comm *m, int64_t id, int64_t bytes)
{
    if (id <= 0 || bytes <= 0)
        return NULL;
    char path[300];
    snprintf(path, sizeof path, "%s.s%lld", m->path, (long long)id);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    void *p = mmap(NULL, (size_t)bytes, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

static void unview(const char *p, int64_t bytes)
{
    if (p)
        munmap((void *)p, (size_t)bytes);
}

static void unpublish(fake_comm *m, int64_t id)
{
    char path[300];
    if (id <= 0)
        return;
    snprintf(path, sizeof path, "%s.s%lld", m->path, (long long)id);
    unlink(path);
}

/* ------------------------------------------------------------------ collectives */

/* The element counts that must be the same on every rank for kind: 1 send, 2 recv. */
static int counts_that_match(int kind)
{
    switch (kind) {
    case RL_COLL_BROADCAST: return 2;
    case RL_COLL_REDUCE: return 1;
    case RL_COLL_ALL_TO_ALLV:
    case RL_COLL_SPLIT: return 0;
    default: return 3;
    }
}

/* s->err: "" if every rank's call agrees with rank 0's (kind, dtype, op, root, counts), else why not. */
static void check_agreement(fn_shared *s)
{
    const fn_part *a = &s->parts[0];
    char *why = s->err;
    size_t len = sizeof s->err;
    int n = s->n, reducing = a->kind == RL_COLL_ALL_REDUCE || a->kind == RL_COLL_REDUCE_SCATTER ||
                             a->kind == RL_COLL_REDUCE;
    int rooted = a->kind == RL_COLL_BROADCAST || a->kind == RL_COLL_REDUCE, match = counts_that_match(a->kind);
    why[0] = 0;
    for (int r = 1; r < n && !why[0]; r++) {
        const fn_part *b = &s->parts[r];
        if (b->kind != a->kind)
            snprintf(why, len, "rank 0 called %s, rank %d called %s", kind_name(a->kind), r, kind_name(b->kind));
        else if (a->kind == RL_COLL_SPLIT)
            continue;
        else if (b->dtype != a->dtype)
            snprintf(why, len, "%s: rank 0 sent %s, rank %d %s", kind_name(a->kind), a->dtype ? "bf16" : "f32", r,
                     b->dtype ? "bf16" : "f32");
        else if ((reducing && b->op != a->op) || (rooted && b->peer != a->peer))
            snprintf(why, len, "%s: ranks 0 and %d disagree on the %s", kind_name(a->kind), r,
                     b->op != a->op ? "reduction" : "root");
        else if (((match & 1) && b->send_numel != a->send_numel) || ((match & 2) && b->recv_numel != a->recv_numel))
            snprintf(why, len, "%s: rank 0 passed %lld/%lld elements (send/recv), rank %d %lld/%lld",
                     kind_name(a->kind), (long long)a->send_numel, (long long)a->recv_numel, r,
                     (long long)b->send_numel, (long long)b->recv_numel);
    }
    for (int r = 0; r < n && !why[0] && a->kind == RL_COLL_ALL_TO_ALLV; r++)
        for (int q = 0; q < n && !why[0]; q++)
            if (s->counts[r][2 * n + q] != s->counts[q][r])
                snprintf(why, len, "all_to_allv: rank %d expects %lld elements from rank %d, which sends it %lld", r,
                         (long long)s->counts[r][2 * n + q], q, (long long)s->counts[q][r]);
    if (why[0])
        return;
    int64_t sn = a->send_numel, rn = a->recv_numel;
    if ((a->kind == RL_COLL_ALL_REDUCE || a->kind == RL_COLL_ALL_TO_ALL) && rn != sn)
        snprintf(why, len, "%s: %lld elements sent, %lld received", kind_name(a->kind), (long long)sn, (long long)rn);
    else if (a->kind == RL_COLL_REDUCE_SCATTER && sn != n * rn)
        snprintf(why, len, "reduce_scatter: %lld elements sent, %lld received, on %d ranks", (long long)sn,
                 (long long)rn, n);
    else if (a->kind == RL_COLL_ALL_GATHER && rn != n * sn)
        snprintf(why, len, "all_gather: %lld elements sent, %lld received, on %d ranks", (long long)sn,
                 (long long)rn, n);
    else if (a->kind == RL_COLL_ALL_TO_ALL && sn % n)
        snprintf(why, len, "all_to_all: %lld elements do not split into %d equal chunks", (long long)sn, n);
}

/* memcpy of bytes (none: src may be NULL then). */
static void copy_bytes(void *dst, const void *src, size_t bytes)
{
    if (bytes)
        memcpy(dst, src, bytes);
}

/* This rank's output of the collective, from every rank's snapshot (v[q], parts as posted). */
static int compute_mine(fake_comm *m, const fake_call *c, const char *const *v, char *err, int len)
{
    fn_shared *s = m->s;
    int n = s->n, me = m->rank;
    size_t es = elem_size(c->dtype);
    const void *srcs[FN_MAX_RANKS];
    for (int q = 0; q < n; q++)
        if (!v[q] && s->parts[q].snap_bytes > 0) {
            snprintf(err, (size_t)len, "emulated NCCL: %s: rank %d's input could not be read", kind_name(c->kind), q);
            return -1;
        }
    switch (c->kind) {
    case RL_COLL_ALL_REDUCE:
    case RL_COLL_REDUCE:
        for (int q = 0; q < n; q++)
            srcs[q] = v[q];
        if (c->kind == RL_COLL_ALL_REDUCE || me == c->peer)
            rl_host_reduce((rl_dtype)c->dtype, (rl_redop)c->op, n, srcs, c->recv, 0, c->send_numel);
        break;
    case RL_COLL_REDUCE_SCATTER:
        for (int q = 0; q < n; q++)
            srcs[q] = v[q] + (size_t)(me * c->recv_numel) * es;
        rl_host_reduce((rl_dtype)c->dtype, (rl_redop)c->op, n, srcs, c->recv, 0, c->recv_numel);
        break;
    case RL_COLL_ALL_GATHER:
        for (int q = 0; q < n; q++)
            copy_bytes((char *)c->recv + (size_t)(q * c->send_numel) * es, v[q], (size_t)c->send_numel * es);
        break;
    case RL_COLL_BROADCAST:
        copy_bytes(c->recv, v[c->peer], (size_t)c->recv_numel * es);
        break;
    case RL_COLL_ALL_TO_ALL: {
        int64_t chunk = c->send_numel / n;
        for (int q = 0; q < n; q++)
            if (chunk)
                memcpy((char *)c->recv + (size_t)(q * chunk) * es, v[q] + (size_t)(me * chunk) * es, (size_t)chunk * es);
        break;
    }
    case RL_COLL_ALL_TO_ALLV:
        for (int q = 0; q < n; q++)
            if (c->counts[2 * n + q])
                memcpy((char *)c->recv + (size_t)c->counts[3 * n + q] * es, v[q] + (size_t)s->counts[q][n + me] * es,
                       (size_t)c->counts[2 * n + q] * es);
        break;
    default:
        snprintf(err, (size_t)len, "emulated NCCL: collective kind %d is not emulated", c->kind);
        return -1;
    }
    return 0;
}

/* ncclCommSplit for this rank: the members of its color, ordered by key then rank
 * (rl_split_members, the runtime's own rule), share a new communicator named by the barrier's
 * generation and the color. */
static int split_mine(fake_comm *m, fake_call *c, int64_t gen, char *err, int len)
{
    fn_shared *s = m->s;
    int n = s->n, colors[FN_MAX_RANKS], keys[FN_MAX_RANKS], members[FN_MAX_RANKS], new_rank;
    for (int q = 0; q < n; q++) {
        colors[q] = s->parts[q].color;
        keys[q] = s->parts[q].key;
    }
    int count = rl_split_members(n, colors, keys, m->rank, members, &new_rank);
    c->split_out = NULL;
    if (count <= 0)
        return 0;
    char path[300];
    snprintf(path, sizeof path, "%s.g%lld.%d", m->path, (long long)gen, c->color);
    return (c->split_out = comm_attach(path, count, new_rank, err, len)) ? 0 : -1;
}

/* One rank's part of a collective (or split): publishes its input, meets every rank,
 * computes its output, and meets them again before its input goes. */
static int collective(fake_call *c, char *err, int len)
{
    fake_comm *m = c->comm;
    fn_shared *s = m->s;
    int n = s->n, me = m->rank;
    size_t es = elem_size(c->dtype);
    const void *in = c->kind == RL_COLL_BROADCAST ? (me == c->peer ? (c->send ? c->send : c->recv) : NULL) : c->send;
    int64_t in_bytes = c->kind == RL_COLL_SPLIT ? 0 : (int64_t)es * (c->kind == RL_COLL_BROADCAST ? c->recv_numel
                                                                                                   : c->send_numel);
    fn_part p = { .kind = c->kind, .dtype = c->dtype, .op = c->op, .peer = c->peer, .color = c->color,
                  .key = c->key, .send_numel = c->send_numel, .recv_numel = c->recv_numel };
    p.snap = publish(m, in, in_bytes, err, len);
    if (p.snap < 0)
        return -1;
    p.snap_bytes = p.snap ? in_bytes : 0;
    pthread_mutex_lock(&s->mu);
    int rc = check_aborted(m, err, len);
    if (!rc) {
        s->parts[me] = p;
        if (c->kind == RL_COLL_ALL_TO_ALLV)
            memcpy(s->counts[me], c->counts, 4 * (size_t)n * sizeof c->counts[0]);
        rc = barrier(m, check_agreement, err, len);
    }
    int64_t gen = s->gen; /* the same on every rank until they all reach the second barrier */
    char why[sizeof s->err];
    snprintf(why, sizeof why, "%s", rc ? "" : s->err);
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        unpublish(m, p.snap);
        return rc;
    }
    /* between the two barriers every rank's part and snapshot stay as posted */
    int st = 0;
    if (why[0]) {
        snprintf(err, (size_t)len, "emulated NCCL, communicator of %d ranks: %s (real NCCL would hang or corrupt "
                 "memory here)", n, why);
        st = -1;
    } else if (c->kind == RL_COLL_SPLIT) {
        st = split_mine(m, c, gen, err, len);
    } else {
        const char *v[FN_MAX_RANKS];
        for (int q = 0; q < n; q++)
            v[q] = view(m, s->parts[q].snap, s->parts[q].snap_bytes);
        st = compute_mine(m, c, v, err, len);
        for (int q = 0; q < n; q++)
            unview(v[q], s->parts[q].snap_bytes);
    }
    pthread_mutex_lock(&s->mu);
    rc = barrier(m, NULL, err, len);
    pthread_mutex_unlock(&s->mu);
    unpublish(m, p.snap);
    return rc ? rc : st;
}

/* ------------------------------------------------------------------ send / recv */

/* Posts a send in the mailbox: its slot, or -1 with a message. */
static int post_send(const fake_call *c, char *err, int len)
{
    fake_comm *m = c->comm;
    fn_shared *s = m->s;
    int64_t bytes = c->send_numel * (int64_t)elem_size(c->dtype);
    int64_t snap = publish(m, c->send, bytes, err, len);
    if (snap < 0)
        return -1;
    pthread_mutex_lock(&s->mu);
    int slot = -1, rc = 0;
    while (slot < 0 && !rc) {
        for (int i = 0; i < FN_MAILBOX && slot < 0; i++)
            if (!s->mail[i].used)
                slot = i;
        if (slot < 0)
            rc = shared_wait(m, err, len);
    }
    if (!rc)
        s->mail[slot] = (fn_mail){ .used = 1, .src = m->rank, .dst = c->peer, .dtype = c->dtype,
                                   .seq = s->next_id++, .numel = c->send_numel, .snap = snap };
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (rc)
        unpublish(m, snap);
    return rc ? -1 : slot;
}

/* Waits until the send in slot was received (wait = 1; else just withdraws it), then frees it. */
static int finish_send(fake_comm *m, int slot, int wait, char *err, int len)
{
    fn_shared *s = m->s;
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    while (wait && !s->mail[slot].consumed && !rc)
        rc = shared_wait(m, err, len);
    int64_t snap = s->mail[slot].snap;
    s->mail[slot].used = 0;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    unpublish(m, snap);
    return rc;
}

/* Receives from c->peer: the oldest matching send, copied once it is posted. */
static int do_recv(const fake_call *c, char *err, int len)
{
    fake_comm *m = c->comm;
    fn_shared *s = m->s;
    int rc = 0, slot = -1;
    pthread_mutex_lock(&s->mu);
    while (slot < 0 && !rc) {
        for (int i = 0; i < FN_MAILBOX; i++) {
            const fn_mail *x = &s->mail[i];
            if (x->used && !x->taken && x->src == c->peer && x->dst == m->rank &&
                (slot < 0 || x->seq < s->mail[slot].seq))
                slot = i;
        }
        if (slot < 0)
            rc = shared_wait(m, err, len);
    }
    fn_mail x = rc ? (fn_mail){ 0 } : s->mail[slot];
    if (!rc)
        s->mail[slot].taken = 1;
    pthread_mutex_unlock(&s->mu);
    if (rc)
        return rc;
    int64_t bytes = x.numel * (int64_t)elem_size(x.dtype);
    if (x.numel != c->recv_numel || x.dtype != c->dtype) {
        snprintf(err, (size_t)len, "emulated NCCL: rank %d sends %lld %s to rank %d, which receives %lld %s", x.src,
                 (long long)x.numel, x.dtype ? "bf16" : "f32", m->rank, (long long)c->recv_numel,
                 c->dtype ? "bf16" : "f32");
        rc = -1;
    } else if (bytes > 0) {
        const char *p = view(m, x.snap, bytes);
        if (p)
            memcpy(c->recv, p, (size_t)bytes);
        else
            snprintf(err, (size_t)len, "emulated NCCL: the send from rank %d could not be read", x.src);
        rc = p ? 0 : -1;
        unview(p, bytes);
    }
    pthread_mutex_lock(&s->mu);
    s->mail[slot].consumed = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ------------------------------------------------------------------ stream tasks */

/* The calls one rank queued at once (one call, or a group's). */
typedef struct {
    fake_task task;
    int ncalls;
    fake_call calls[];
} call_task;

static int run_calls(fake_task *t, char *err, int len)
{
    call_task *ct = (call_task *)t;
    int slots[256], rc = 0, k = ct->ncalls;
    if (k > 256) {
        snprintf(err, (size_t)len, "emulated NCCL: a group of %d calls (it emulates up to 256)", k);
        return -1;
    }
    for (int i = 0; i < k; i++) /* sends first, as NCCL runs a group's p2p together */
        slots[i] = !rc && ct->calls[i].kind == RL_COLL_SEND ? post_send(&ct->calls[i], err, len) : -1;
    for (int i = 0; i < k; i++)
        rc = rc || (ct->calls[i].kind == RL_COLL_SEND && slots[i] < 0);
    for (int i = 0; i < k && !rc; i++)
        if (ct->calls[i].kind != RL_COLL_SEND && ct->calls[i].kind != RL_COLL_RECV)
            rc = collective(&ct->calls[i], err, len);
    for (int i = 0; i < k && !rc; i++)
        if (ct->calls[i].kind == RL_COLL_RECV)
            rc = do_recv(&ct->calls[i], err, len);
    for (int i = 0; i < k; i++)
        if (slots[i] >= 0 && finish_send(ct->calls[i].comm, slots[i], !rc, err, len))
            rc = -1;
    return rc;
}

static void free_calls(fake_task *t)
{
    call_task *ct = (call_task *)t;
    for (int i = 0; i < ct->ncalls; i++) {
        free(ct->calls[i].counts);
        comm_release(ct->calls[i].comm);
    }
    free(ct);
}

/* The group in progress on this thread (ncclGroupStart .. ncclGroupEnd), as NCCL keeps it. */
static __thread int group_depth;
static __thread call_task *group_calls;
static __thread void *group_stream;

/* ------------------------------------------------------------------ the rl_nccl_* calls */

int rl_nccl_built(void) { return 1; }
int rl_nccl_id_bytes(void) { return FN_ID_BYTES; }

/* The id is a fresh directory for the communicators' files. */
int rl_nccl_get_unique_id(void *id, char *err, int len)
{
    const char *tmp = getenv("TMPDIR");
    char dir[FN_ID_BYTES];
    snprintf(dir, sizeof dir, "%s/ringlab-fake-nccl-XXXXXX", tmp && *tmp && strlen(tmp) < 80 ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(err, (size_t)len, "emulated NCCL: cannot make a directory %s: %s", dir, strerror(errno));
        return -1;
    }
    memset(id, 0, FN_ID_BYTES);
    memcpy(id, dir, strlen(dir));
    return 0;
}

/* The world communicator's file in the id's directory. */
static void world_path(const void *id, char *path, int len)
{
    char dir[FN_ID_BYTES + 1];
    memcpy(dir, id, FN_ID_BYTES);
    dir[FN_ID_BYTES] = 0;
    snprintf(path, (size_t)len, "%s/world", dir);
}

int rl_nccl_init_local(int n, const int *devs, const void *id, void **comms, char *err, int len)
{
    (void)devs;
    char path[256];
    world_path(id, path, sizeof path);
    for (int r = 0; r < n; r++)
        if (!(comms[r] = comm_attach(path, n, r, err, len))) {
            while (r-- > 0)
                rl_nccl_free(comms[r], 0);
            return -1;
        }
    return 0;
}

int rl_nccl_init_rank(int nranks, int rank, int dev, const void *id, void **comm, char *err, int len)
{
    (void)dev;
    char path[256];
    world_path(id, path, sizeof path);
    return (*comm = comm_attach(path, nranks, rank, err, len)) ? 0 : -1;
}

int rl_nccl_split(void *parent, int color, int key, void **out, char *err, int len)
{
    fake_call call = { .comm = parent, .kind = RL_COLL_SPLIT, .color = color, .key = key };
    if (collective(&call, err, len))
        return -1;
    *out = call.split_out;
    return 0;
}

void rl_nccl_free(void *comm, int abort)
{
    fake_comm *m = comm;
    if (!m)
        return;
    if (abort) { /* ncclCommAbort: this rank's waits in the communicator give up */
        pthread_mutex_lock(&m->s->mu);
        __atomic_store_n(&m->aborted, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&m->s->cv);
        pthread_mutex_unlock(&m->s->mu);
    }
    comm_release(m);
}

int rl_nccl_group_start(char *err, int len)
{
    (void)err;
    (void)len;
    group_depth++;
    return 0;
}

int rl_nccl_group_end(char *err, int len)
{
    if (group_depth <= 0) {
        snprintf(err, (size_t)len, "emulated NCCL: ncclGroupEnd without ncclGroupStart");
        return -1;
    }
    if (--group_depth > 0 || !group_calls)
        return 0;
    fake_stream_enqueue(group_stream, &group_calls->task);
    group_calls = NULL;
    group_stream = NULL;
    return 0;
}

int rl_nccl_call(void *comm, void *stream, int kind, const void *send, void *recv, int64_t send_numel,
                 int64_t recv_numel, int dtype, int op, int peer, const int64_t *counts, int n, int me, char *err,
                 int len)
{
    fake_comm *m = comm;
    if (kind < RL_COLL_ALL_REDUCE || kind > RL_COLL_RECV) {
        snprintf(err, (size_t)len, "NCCL: collective kind %d is not mapped", kind);
        return -1;
    }
    if (group_calls && group_stream != stream) {
        snprintf(err, (size_t)len, "emulated NCCL: one group on two streams is not emulated");
        return -1;
    }
    if (kind == RL_COLL_ALL_TO_ALLV && n != m->s->n) {
        snprintf(err, (size_t)len, "emulated NCCL: all_to_allv on %d ranks of a communicator of %d", n, m->s->n);
        return -1;
    }
    int64_t *copied = NULL;
    if (kind == RL_COLL_ALL_TO_ALLV && (copied = malloc(4 * (size_t)n * sizeof *copied)))
        memcpy(copied, counts, 4 * (size_t)n * sizeof *copied);
    int k = group_calls ? group_calls->ncalls : 0;
    call_task *t = kind != RL_COLL_ALL_TO_ALLV || copied
                       ? realloc(group_calls, sizeof *t + (size_t)(k + 1) * sizeof t->calls[0]) : NULL;
    if (!t) {
        free(copied);
        snprintf(err, (size_t)len, "emulated NCCL: out of host memory");
        return -1;
    }
    if (!group_calls)
        *t = (call_task){ .task = { .run = run_calls, .free = free_calls } };
    group_calls = t;
    __atomic_add_fetch(&m->users, 1, __ATOMIC_ACQ_REL); /* the queued call keeps the handle */
    t->calls[k] = (fake_call){ .comm = m, .kind = kind, .dtype = dtype, .op = op, .peer = peer,
                               .send = kind == RL_COLL_BROADCAST && me != peer ? NULL : send, .recv = recv,
                               .send_numel = send_numel, .recv_numel = recv_numel, .counts = copied };
    t->ncalls = k + 1;
    group_stream = stream;
    if (group_depth > 0)
        return 0; /* queued when the group ends */
    group_calls = NULL;
    group_stream = NULL;
    fake_stream_enqueue(stream, &t->task);
    return 0;
}
