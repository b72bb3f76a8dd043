/* fake_nccl.c — NCCL emulated on the host for the CUDA_FAKE build (tests only), at the level
 * of cuda_backend.h's rl_nccl_* calls, so that the runtime's NCCL path (one GPU per rank in one
 * process: communicators, groups, ncclCommSplit, calls queued on the comm stream and waited
 * for, aborts) runs in CI. With RL_FAKE_GPUS=4, --backend cuda --ranks 4 takes it.
 *
 * Like NCCL, a call is queued on the rank's comm stream and the host thread moves on; on the
 * stream, a collective waits until every rank of the communicator has called it (then the
 * last to arrive computes it for all, with the sim backend's reduction, so results equal
 * sim's bit for bit), a send waits until its receiver has copied it, and the calls of a group
 * run together (sends posted first, so grouped send/recv pairs never deadlock). Unlike NCCL,
 * ranks that call different collectives, or counts that do not match, fail with a message
 * instead of hanging or corrupting memory. Only one process: NCCL across processes (one
 * process per rank) is not emulated. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_backend.h"
#include "fake_cuda.h"
#include "internal.h"

typedef struct fake_clique fake_clique;

/* One rank's handle of a communicator (what ncclComm_t points to here). */
typedef struct {
    fake_clique *c;
    int rank;
} fake_comm;

/* One call as issued: kind is an rl_coll_kind; the fields as rl_nccl_call's. */
typedef struct {
    fake_clique *c; /* holds a reference until the call is freed */
    int me, kind, dtype, op, peer;
    const void *send;
    void *recv;
    int64_t send_numel, recv_numel;
    int64_t *counts; /* all_to_allv: 4 arrays of n (copied) */
    int color, key;  /* split */
    fake_comm *split_out;
} fake_call;

/* A posted send, waiting for its receiver. */
typedef struct fake_msg {
    struct fake_msg *next;
    const fake_call *call;
    int consumed;
} fake_msg;

struct fake_clique {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n, refs, aborted;
    /* the collective in progress: each rank's call, how many have arrived and not yet left */
    const fake_call **parts;
    int arrived, leaving;
    int64_t round;
    char err[400]; /* the round's error (ranks disagreed), "" if none */
    fake_msg *mail;
};

static fake_clique *clique_new(int n)
{
    fake_clique *c = calloc(1, sizeof *c);
    if (!c || !(c->parts = calloc((size_t)n, sizeof *c->parts))) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->n = n;
    return c;
}

static void clique_ref(fake_clique *c, int delta)
{
    pthread_mutex_lock(&c->mu);
    int left = c->refs += delta;
    pthread_mutex_unlock(&c->mu);
    if (left > 0)
        return;
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->parts);
    free(c);
}

static fake_comm *comm_new(fake_clique *c, int rank)
{
    fake_comm *m = malloc(sizeof *m);
    if (m) {
        m->c = c;
        m->rank = rank;
        clique_ref(c, 1);
    }
    return m;
}

static const char *kind_name(int kind)
{
    return kind == RL_COLL_SPLIT ? "ncclCommSplit" : rl_coll_name((rl_coll_kind)kind);
}

static size_t elem_size(int dtype) { return dtype ? 2 : 4; }

/* -1 with a message if the communicator was aborted (ncclCommAbort), else 0. */
static int check_aborted(fake_clique *c, char *err, int len)
{
    if (!c->aborted)
        return 0;
    snprintf(err, (size_t)len, "emulated NCCL: the communicator was aborted (ncclCommAbort) while this rank waited");
    return -1;
}

/* Waits on c's condition (c->mu held); -1 with a message once the communicator is aborted. */
static int clique_wait(fake_clique *c, char *err, int len)
{
    if (!c->aborted)
        pthread_cond_wait(&c->cv, &c->mu);
    return check_aborted(c, err, len);
}

/* ------------------------------------------------------------------ collectives */

/* The element counts that must be the same on every rank for kind: 1 send, 2 recv. */
static int counts_that_match(int kind)
{
    switch (kind) {
    case RL_COLL_BROADCAST: return 2;
    case RL_COLL_REDUCE: return 1;
    case RL_COLL_ALL_TO_ALLV: return 0; /* checked pairwise */
    default: return 3;
    }
}

/* "" if every rank's call agrees with rank 0's (kind, dtype, op, root, counts), else why not. */
static void check_agreement(fake_clique *c, char *why, int len)
{
    const fake_call *a = c->parts[0];
    int n = c->n, reducing = a->kind == RL_COLL_ALL_REDUCE || a->kind == RL_COLL_REDUCE_SCATTER ||
                             a->kind == RL_COLL_REDUCE;
    int rooted = a->kind == RL_COLL_BROADCAST || a->kind == RL_COLL_REDUCE, match = counts_that_match(a->kind);
    why[0] = 0;
    for (int r = 1; r < n && !why[0]; r++) {
        const fake_call *b = c->parts[r];
        if (b->kind != a->kind)
            snprintf(why, (size_t)len, "rank 0 called %s, rank %d called %s", kind_name(a->kind), r, kind_name(b->kind));
        else if (a->kind == RL_COLL_SPLIT)
            continue;
        else if (b->dtype != a->dtype)
            snprintf(why, (size_t)len, "%s: rank 0 sent %s, rank %d %s", kind_name(a->kind), a->dtype ? "bf16" : "f32",
                     r, b->dtype ? "bf16" : "f32");
        else if ((reducing && b->op != a->op) || (rooted && b->peer != a->peer))
            snprintf(why, (size_t)len, "%s: ranks 0 and %d disagree on the %s", kind_name(a->kind), r,
                     b->op != a->op ? "reduction" : "root");
        else if (((match & 1) && b->send_numel != a->send_numel) || ((match & 2) && b->recv_numel != a->recv_numel))
            snprintf(why, (size_t)len, "%s: rank 0 passed %lld/%lld elements (send/recv), rank %d %lld/%lld",
                     kind_name(a->kind), (long long)a->send_numel, (long long)a->recv_numel, r,
                     (long long)b->send_numel, (long long)b->recv_numel);
    }
    for (int r = 0; r < n && !why[0] && a->kind == RL_COLL_ALL_TO_ALLV; r++)
        for (int q = 0; q < n && !why[0]; q++)
            if (c->parts[r]->counts[2 * n + q] != c->parts[q]->counts[r])
                snprintf(why, (size_t)len, "all_to_allv: rank %d expects %lld elements from rank %d, which sends it %lld",
                         r, (long long)c->parts[r]->counts[2 * n + q], q, (long long)c->parts[q]->counts[r]);
    if (why[0])
        return;
    int64_t s = a->send_numel, rc = a->recv_numel;
    if ((a->kind == RL_COLL_ALL_REDUCE || a->kind == RL_COLL_ALL_TO_ALL) && rc != s)
        snprintf(why, (size_t)len, "%s: %lld elements sent, %lld received", kind_name(a->kind), (long long)s,
                 (long long)rc);
    else if (a->kind == RL_COLL_REDUCE_SCATTER && s != n * rc)
        snprintf(why, (size_t)len, "reduce_scatter: %lld elements sent, %lld received, on %d ranks", (long long)s,
                 (long long)rc, n);
    else if (a->kind == RL_COLL_ALL_GATHER && rc != n * s)
        snprintf(why, (size_t)len, "all_gather: %lld elements sent, %lld received, on %d ranks", (long long)s,
                 (long long)rc, n);
    else if (a->kind == RL_COLL_ALL_TO_ALL && s % n)
        snprintf(why, (size_t)len, "all_to_all: %lld elements do not split into %d equal chunks", (long long)s, n);
}

/* The reduction of every rank's send buffer (count elements) into a new buffer, or NULL. */
static void *reduce_all(fake_clique *c, int64_t count)
{
    const fake_call *a = c->parts[0];
    void *out = malloc((size_t)(count > 0 ? count : 1) * elem_size(a->dtype));
    const void **srcs = malloc((size_t)c->n * sizeof *srcs);
    if (out && srcs) {
        for (int r = 0; r < c->n; r++)
            srcs[r] = c->parts[r]->send;
        rl_host_reduce((rl_dtype)a->dtype, (rl_redop)a->op, c->n, srcs, out, 0, count);
    }
    free(srcs);
    return out;
}

/* ncclCommSplit for every rank of c: the members of each color, ordered by key then rank
 * (rl_split_members, the runtime's own rule), get a new communicator. */
static void split_all(fake_clique *c, char *why, int len)
{
    int n = c->n, *colors = malloc((size_t)n * sizeof *colors), *keys = malloc((size_t)n * sizeof *keys);
    int *members = malloc((size_t)n * sizeof *members);
    fake_clique **made = calloc((size_t)n, sizeof *made); /* by the color's first parent rank */
    if (!colors || !keys || !members || !made)
        snprintf(why, (size_t)len, "ncclCommSplit: out of host memory");
    for (int r = 0; r < n && !why[0]; r++) {
        colors[r] = c->parts[r]->color;
        keys[r] = c->parts[r]->key;
    }
    for (int r = 0; r < n && !why[0]; r++) {
        int new_rank, m = rl_split_members(n, colors, keys, r, members, &new_rank);
        if (m <= 0)
            continue;
        int first = members[0];
        for (int i = 1; i < m; i++)
            first = members[i] < first ? members[i] : first;
        if (!made[first] && !(made[first] = clique_new(m))) {
            snprintf(why, (size_t)len, "ncclCommSplit: out of host memory");
            break;
        }
        fake_call *mine = (fake_call *)c->parts[r];
        if (!(mine->split_out = comm_new(made[first], new_rank)))
            snprintf(why, (size_t)len, "ncclCommSplit: out of host memory");
    }
    free(colors);
    free(keys);
    free(members);
    free(made);
}

/* Computes the round's collective for every rank (c->mu held, every rank arrived): outputs
 * go to fresh buffers first and are copied out last, so in-place calls read clean inputs. */
static void complete_round(fake_clique *c)
{
    char *why = c->err;
    int len = (int)sizeof c->err, n = c->n;
    check_agreement(c, why, len);
    if (why[0])
        return;
    const fake_call *a = c->parts[0];
    if (a->kind == RL_COLL_SPLIT) {
        split_all(c, why, len);
        return;
    }
    size_t es = elem_size(a->dtype);
    char *tmp = NULL;
    switch (a->kind) {
    case RL_COLL_ALL_REDUCE:
    case RL_COLL_REDUCE:
    case RL_COLL_REDUCE_SCATTER:
        tmp = reduce_all(c, a->send_numel);
        break;
    case RL_COLL_ALL_GATHER:
        if ((tmp = malloc((size_t)(a->recv_numel > 0 ? a->recv_numel : 1) * es)))
            for (int r = 0; r < n; r++)
                memcpy(tmp + (size_t)(r * a->send_numel) * es, c->parts[r]->send, (size_t)a->send_numel * es);
        break;
    case RL_COLL_BROADCAST: {
        const fake_call *root = c->parts[a->peer];
        if ((tmp = malloc((size_t)(a->recv_numel > 0 ? a->recv_numel : 1) * es)))
            memcpy(tmp, root->send ? root->send : root->recv, (size_t)a->recv_numel * es);
        break;
    }
    case RL_COLL_ALL_TO_ALL: { /* tmp holds every rank's received buffer, one after another */
        int64_t chunk = a->send_numel / n;
        if ((tmp = malloc((size_t)(n * a->send_numel > 0 ? n * a->send_numel : 1) * es)))
            for (int r = 0; r < n; r++)
                for (int q = 0; q < n; q++)
                    memcpy(tmp + (size_t)((int64_t)r * a->send_numel + q * chunk) * es,
                           (const char *)c->parts[q]->send + (size_t)(r * chunk) * es, (size_t)chunk * es);
        break;
    }
    case RL_COLL_ALL_TO_ALLV: { /* tmp: rank r's received chunks from q, in (r, q) order */
        int64_t total = 0;
        for (int r = 0; r < n; r++)
            for (int q = 0; q < n; q++)
                total += c->parts[r]->counts[2 * n + q];
        if ((tmp = malloc((size_t)(total > 0 ? total : 1) * es))) {
            char *p = tmp;
            for (int r = 0; r < n; r++)
                for (int q = 0; q < n; q++) {
                    const fake_call *from = c->parts[q];
                    size_t bytes = (size_t)c->parts[r]->counts[2 * n + q] * es;
                    memcpy(p, (const char *)from->send + (size_t)from->counts[n + r] * es, bytes);
                    p += bytes;
                }
        }
        break;
    }
    default:
        snprintf(why, (size_t)len, "emulated NCCL: collective kind %d is not emulated", a->kind);
        return;
    }
    if (!tmp) {
        snprintf(why, (size_t)len, "emulated NCCL: %s: out of host memory", kind_name(a->kind));
        return;
    }
    char *p = tmp;
    for (int r = 0; r < n; r++) {
        const fake_call *b = c->parts[r];
        switch (a->kind) {
        case RL_COLL_ALL_REDUCE:
        case RL_COLL_ALL_GATHER:
        case RL_COLL_BROADCAST:
            memcpy(b->recv, tmp, (size_t)a->recv_numel * es);
            break;
        case RL_COLL_REDUCE:
            if (r == a->peer)
                memcpy(b->recv, tmp, (size_t)b->send_numel * es);
            break;
        case RL_COLL_REDUCE_SCATTER:
            memcpy(b->recv, tmp + (size_t)(r * b->recv_numel) * es, (size_t)b->recv_numel * es);
            break;
        case RL_COLL_ALL_TO_ALL:
            memcpy(b->recv, tmp + (size_t)(r * b->send_numel) * es, (size_t)b->send_numel * es);
            break;
        case RL_COLL_ALL_TO_ALLV:
            for (int q = 0; q < n; q++) {
                size_t bytes = (size_t)b->counts[2 * n + q] * es;
                memcpy((char *)b->recv + (size_t)b->counts[3 * n + q] * es, p, bytes);
                p += bytes;
            }
            break;
        }
    }
    free(tmp);
}

/* One rank's part of a collective (or split): waits for every rank, the last computes it. */
static int collective(const fake_call *call, char *err, int len)
{
    fake_clique *c = call->c;
    pthread_mutex_lock(&c->mu);
    int rc = check_aborted(c, err, len);
    while (c->leaving > 0 && !rc) /* the previous round's ranks are still reading its result */
        rc = clique_wait(c, err, len);
    if (rc) {
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    int64_t round = c->round;
    c->parts[call->me] = call;
    if (++c->arrived == c->n) {
        c->err[0] = 0;
        complete_round(c);
        c->arrived = 0;
        c->leaving = c->n;
        c->round++;
        pthread_cond_broadcast(&c->cv);
    }
    while (c->round == round && !rc)
        rc = clique_wait(c, err, len);
    if (!rc) {
        if (c->err[0]) {
            snprintf(err, (size_t)len, "emulated NCCL, communicator of %d ranks: %s (real NCCL would hang or "
                     "corrupt memory here)", c->n, c->err);
            rc = -1;
        }
        if (--c->leaving == 0)
            pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* ------------------------------------------------------------------ send / recv */

static fake_msg *post_send(const fake_call *call)
{
    fake_clique *c = call->c;
    fake_msg *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->call = call;
    pthread_mutex_lock(&c->mu);
    fake_msg **tail = &c->mail;
    while (*tail)
        tail = &(*tail)->next;
    *tail = m;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return m;
}

/* Waits until m was received (wait = 1; else just withdraws it), then unlinks and frees it. */
static int finish_send(fake_msg *m, int wait, char *err, int len)
{
    fake_clique *c = m->call->c;
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    while (wait && !m->consumed && !rc)
        rc = clique_wait(c, err, len);
    for (fake_msg **p = &c->mail; *p; p = &(*p)->next)
        if (*p == m) {
            *p = m->next;
            break;
        }
    pthread_mutex_unlock(&c->mu);
    free(m);
    return rc;
}

/* Receives from call->peer: the oldest matching send, copied once it is posted. */
static int do_recv(const fake_call *call, char *err, int len)
{
    fake_clique *c = call->c;
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        fake_msg *m = c->mail;
        while (m && (m->consumed || m->call->me != call->peer || m->call->peer != call->me))
            m = m->next;
        if (m) {
            const fake_call *s = m->call;
            if (s->send_numel != call->recv_numel || s->dtype != call->dtype) {
                snprintf(err, (size_t)len, "emulated NCCL: rank %d sends %lld %s to rank %d, which receives %lld %s",
                         s->me, (long long)s->send_numel, s->dtype ? "bf16" : "f32", call->me,
                         (long long)call->recv_numel, call->dtype ? "bf16" : "f32");
                rc = -1;
            } else {
                memcpy(call->recv, s->send, (size_t)call->recv_numel * elem_size(call->dtype));
            }
            m->consumed = 1;
            pthread_cond_broadcast(&c->cv);
            break;
        }
        if ((rc = clique_wait(c, err, len)))
            break;
    }
    pthread_mutex_unlock(&c->mu);
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
    fake_msg **sent = calloc((size_t)ct->ncalls, sizeof *sent);
    int rc = sent ? 0 : -1;
    if (!sent)
        snprintf(err, (size_t)len, "emulated NCCL: out of host memory");
    for (int i = 0; i < ct->ncalls && !rc; i++) /* sends first, as NCCL runs a group's p2p together */
        if (ct->calls[i].kind == RL_COLL_SEND && !(sent[i] = post_send(&ct->calls[i]))) {
            snprintf(err, (size_t)len, "emulated NCCL: out of host memory");
            rc = -1;
        }
    for (int i = 0; i < ct->ncalls && !rc; i++)
        if (ct->calls[i].kind != RL_COLL_SEND && ct->calls[i].kind != RL_COLL_RECV)
            rc = collective(&ct->calls[i], err, len);
    for (int i = 0; i < ct->ncalls && !rc; i++)
        if (ct->calls[i].kind == RL_COLL_RECV)
            rc = do_recv(&ct->calls[i], err, len);
    for (int i = 0; sent && i < ct->ncalls; i++)
        if (sent[i] && finish_send(sent[i], !rc, err, len))
            rc = -1;
    free(sent);
    return rc;
}

static void free_calls(fake_task *t)
{
    call_task *ct = (call_task *)t;
    for (int i = 0; i < ct->ncalls; i++) {
        free(ct->calls[i].counts);
        clique_ref(ct->calls[i].c, -1);
    }
    free(ct);
}

/* The group in progress on this thread (ncclGroupStart .. ncclGroupEnd), as NCCL keeps it. */
static __thread int group_depth;
static __thread call_task *group_calls;
static __thread void *group_stream;

/* ------------------------------------------------------------------ the rl_nccl_* calls */

int rl_nccl_built(void) { return 1; }
int rl_nccl_id_bytes(void) { return 128; }

int rl_nccl_get_unique_id(void *id, char *err, int len)
{
    (void)err;
    (void)len;
    memset(id, 0, 128);
    snprintf(id, 128, "emulated NCCL id");
    return 0;
}

int rl_nccl_init_local(int n, const int *devs, const void *id, void **comms, char *err, int len)
{
    (void)devs;
    (void)id;
    fake_clique *c = n >= 1 ? clique_new(n) : NULL;
    for (int r = 0; c && r < n; r++)
        if (!(comms[r] = comm_new(c, r))) {
            while (r-- > 0)
                rl_nccl_free(comms[r], 0);
            snprintf(err, (size_t)len, "emulated NCCL: out of host memory");
            return -1;
        }
    if (!c) {
        snprintf(err, (size_t)len, "emulated NCCL: cannot make a communicator of %d ranks", n);
        return -1;
    }
    return 0;
}

int rl_nccl_init_rank(int nranks, int rank, int dev, const void *id, void **comm, char *err, int len)
{
    (void)rank;
    (void)dev;
    (void)id;
    (void)comm;
    snprintf(err, (size_t)len, "NCCL across processes (%d ranks, one per process) is not emulated", nranks);
    return -1;
}

int rl_nccl_split(void *parent, int color, int key, void **out, char *err, int len)
{
    fake_comm *p = parent;
    fake_call call = { .c = p->c, .me = p->rank, .kind = RL_COLL_SPLIT, .color = color, .key = key };
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
    if (abort) { /* ncclCommAbort: every rank waiting in this communicator gives up */
        pthread_mutex_lock(&m->c->mu);
        m->c->aborted = 1;
        pthread_cond_broadcast(&m->c->cv);
        pthread_mutex_unlock(&m->c->mu);
    }
    clique_ref(m->c, -1);
    free(m);
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
    if (kind == RL_COLL_ALL_TO_ALLV && n != m->c->n) {
        snprintf(err, (size_t)len, "emulated NCCL: all_to_allv on %d ranks of a communicator of %d", n, m->c->n);
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
    t->calls[k] = (fake_call){ .c = m->c, .me = m->rank, .kind = kind, .dtype = dtype, .op = op, .peer = peer,
                               .send = kind == RL_COLL_BROADCAST && me != peer ? NULL : send, .recv = recv,
                               .send_numel = send_numel, .recv_numel = recv_numel, .counts = copied };
    clique_ref(m->c, 1);
    t->ncalls = k + 1;
    group_stream = stream;
    if (group_depth > 0)
        return 0; /* queued when the group ends */
    group_calls = NULL;
    group_stream = NULL;
    fake_stream_enqueue(stream, &t->task);
    return 0;
}
