/* flight.c — the per-rank flight recorder of communicator calls, and the report the
 * watchdog prints: every rank's last calls and a one-line verdict naming the culprit. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apiwatch.h"
#include "internal.h"

static const char *const state_names[] = { "enqueued", "started", "completed", "failed" };

RL_API_WATCHED
int64_t rl_flight_add(rl_ctx *ctx, const rl_op_desc *d)
{
    RL_API_ENTRY();
    int64_t id = ctx->nflight++;
    rl_flight_rec *r = &ctx->flight[id % RL_FLIGHT_N];
    memset(r, 0, sizeof *r);
    r->id = id;
    r->seq = d->seq;
    r->p2p_seq = d->p2p_seq;
    r->kind = d->kind;
    r->count = d->kind == RL_COLL_RECV || d->kind == RL_COLL_BROADCAST || d->kind == RL_COLL_REDUCE_SCATTER
                   ? d->recv_numel : d->send_numel;
    r->count += d->sig_delta; /* the count this rank claimed (the mismatch fault changes it) */
    r->dtype = d->dtype;
    r->peer = d->root;
    r->peer_world = d->root >= 0 && d->root < d->comm->g->n ? d->comm->g->granks[d->root] : -1;
    snprintf(r->comm, sizeof r->comm, "%s", d->comm->g->name);
    r->comm_size = d->comm->g->n;
    r->grouped = ctx->group_depth > 0;
    r->state = RL_FR_ENQUEUED;
    r->t_enq = rl_wall_now(ctx);
    return id;
}

RL_API_WATCHED
void rl_flight_set(rl_ctx *ctx, int64_t id, int state)
{
    RL_API_ENTRY();
    pthread_mutex_lock(&ctx->qmu);
    rl_flight_rec *r = &ctx->flight[id % RL_FLIGHT_N];
    if (r->id == id) {
        r->state = state;
        if (state == RL_FR_STARTED)
            r->t_start = rl_wall_now(ctx);
        else
            r->t_end = rl_wall_now(ctx);
    }
    pthread_mutex_unlock(&ctx->qmu);
}

/* Copies a rank's records (oldest first) into out; returns how many. */
static int snapshot(rl_ctx *ctx, rl_flight_rec *out)
{
    pthread_mutex_lock(&ctx->qmu);
    int64_t first = ctx->nflight > RL_FLIGHT_N ? ctx->nflight - RL_FLIGHT_N : 0;
    int k = 0;
    for (int64_t id = first; id < ctx->nflight; id++)
        out[k++] = ctx->flight[id % RL_FLIGHT_N];
    pthread_mutex_unlock(&ctx->qmu);
    return k;
}

static void rec_line(const rl_flight_rec *r, double now, char *buf, size_t size)
{
    char peer[24] = "";
    if (r->kind == RL_COLL_SEND)
        snprintf(peer, sizeof peer, "to %d", r->peer);
    else if (r->kind == RL_COLL_RECV)
        snprintf(peer, sizeof peer, "from %d", r->peer);
    else if (r->peer >= 0)
        snprintf(peer, sizeof peer, "root %d", r->peer);
    char seq[24];
    if (r->seq >= 0)
        snprintf(seq, sizeof seq, "%lld", (long long)r->seq);
    else
        snprintf(seq, sizeof seq, "p2p#%lld", (long long)r->p2p_seq);
    char state[48];
    if (r->state == RL_FR_COMPLETED || r->state == RL_FR_FAILED)
        snprintf(state, sizeof state, "%s", state_names[r->state]);
    else
        snprintf(state, sizeof state, "%s (for %.1f s)", state_names[r->state], now - r->t_enq);
    snprintf(buf, size, "  %8s  %-14s %10lld %-5s %-9s %-16s %s", seq, rl_coll_name(r->kind),
             (long long)r->count, rl_dtype_name(r->dtype), peer, r->comm, state);
}

/* Dist mode's verdict: the other ranks are other processes, so it speaks of this one only. */
static void verdict_one_rank(rl_world *w, const rl_flight_rec *recs, int nrec, double now, char *out, int len)
{
    int r = w->dist_rank;
    for (int i = 0; i < nrec; i++) {
        const rl_flight_rec *f = &recs[i];
        if (f->state == RL_FR_COMPLETED)
            continue;
        char what[64];
        if (f->seq >= 0)
            snprintf(what, sizeof what, "seq %lld", (long long)f->seq);
        else
            snprintf(what, sizeof what, "%s rank %d (p2p #%lld)", f->kind == RL_COLL_SEND ? "to" : "from", f->peer,
                     (long long)f->p2p_seq);
        snprintf(out, (size_t)len,
                 "rank %d: %s %s on %s %s %.1f s ago and has not completed; the other ranks are other processes: "
                 "read their reports", r, rl_coll_name(f->kind), what, f->comm,
                 f->state == RL_FR_ENQUEUED ? "was enqueued" : "started", now - (f->state == RL_FR_ENQUEUED ? f->t_enq
                                                                                                           : f->t_start));
        return;
    }
    snprintf(out, (size_t)len, "rank %d: no communicator call of this rank is in flight; the other ranks are other "
             "processes: read their reports", r);
}

/* The verdict: which rank is missing from the oldest incomplete collective. */
static void verdict(rl_world *w, rl_flight_rec (*recs)[RL_FLIGHT_N], const int *nrec, char *out, int len)
{
    /* the oldest incomplete collective over all ranks */
    const rl_flight_rec *stuck = NULL;
    for (int r = 0; r < w->n; r++)
        for (int i = 0; i < nrec[r]; i++) {
            const rl_flight_rec *f = &recs[r][i];
            if (f->state == RL_FR_COMPLETED || f->seq < 0)
                continue;
            if (!stuck || f->t_enq < stuck->t_enq)
                stuck = f;
            break;
        }
    if (!stuck) {
        /* only point-to-point calls are stuck */
        for (int r = 0; r < w->n; r++)
            for (int i = 0; i < nrec[r]; i++) {
                const rl_flight_rec *f = &recs[r][i];
                if (f->state != RL_FR_COMPLETED && f->seq < 0) {
                    char where[80]; /* the peer's rank in the communicator, when it is not its world rank */
                    if (f->peer_world != f->peer)
                        snprintf(where, sizeof where, "rank %d of %s, p2p #%lld", f->peer, f->comm,
                                 (long long)f->p2p_seq);
                    else
                        snprintf(where, sizeof where, "p2p #%lld on %s", (long long)f->p2p_seq, f->comm);
                    if (!f->grouped) {
                        snprintf(out, (size_t)len,
                                 "rank %d is blocked in %s %s rank %d (%s): the peer never posted the matching %s — "
                                 "ungrouped send/recv in a ring deadlock; wrap each step in "
                                 "rl_group_start/rl_group_end",
                                 r, rl_coll_name(f->kind), f->kind == RL_COLL_SEND ? "to" : "from", f->peer_world,
                                 where, f->kind == RL_COLL_SEND ? "recv" : "send");
                        return;
                    }
                    /* grouped: the peer is somewhere else in its own list of calls — say where */
                    char peer_at[200] = "";
                    int p = f->peer_world;
                    for (int k = 0; p >= 0 && p < w->n && k < nrec[p] && !peer_at[0]; k++) {
                        const rl_flight_rec *g = &recs[p][k];
                        if (g->state == RL_FR_COMPLETED)
                            continue;
                        if (g->seq < 0)
                            snprintf(peer_at, sizeof peer_at, "rank %d is itself blocked in %s %s rank %d", p,
                                     rl_coll_name(g->kind), g->kind == RL_COLL_SEND ? "to" : "from", g->peer_world);
                        else
                            snprintf(peer_at, sizeof peer_at, "rank %d is itself waiting in %s seq %lld on %s", p,
                                     rl_coll_name(g->kind), (long long)g->seq, g->comm);
                    }
                    if (!peer_at[0])
                        snprintf(peer_at, sizeof peer_at, "rank %d has no call in flight", p);
                    snprintf(out, (size_t)len,
                             "rank %d is blocked in %s %s rank %d (%s, inside a group): %s, so the matching %s is "
                             "never posted — a grouped call completes only when its peer reaches the matching one; "
                             "compare the order of the two ranks' calls",
                             r, rl_coll_name(f->kind), f->kind == RL_COLL_SEND ? "to" : "from", p, where, peer_at,
                             f->kind == RL_COLL_SEND ? "recv" : "send");
                    return;
                }
            }
        snprintf(out, (size_t)len, "no collective is in flight");
        return;
    }
    /* ranks of the stuck communicator that never entered that seq */
    char missing[512] = "", waiting[512] = "";
    int nmiss = 0, nwait = 0;
    for (int r = 0; r < w->n; r++) {
        int member = 0, entered = 0;
        int64_t last_done = -1;
        for (int i = 0; i < nrec[r]; i++) {
            const rl_flight_rec *f = &recs[r][i];
            if (strcmp(f->comm, stuck->comm))
                continue;
            member = 1;
            if (f->seq == stuck->seq)
                entered = 1;
            if (f->seq >= 0 && f->state == RL_FR_COMPLETED && f->seq > last_done)
                last_done = f->seq;
        }
        if (!member && strcmp(stuck->comm, "world") != 0)
            continue;
        char one[96];
        if (entered) {
            snprintf(one, sizeof one, "%s%d", nwait ? ", " : "", r);
            strncat(waiting, one, sizeof waiting - strlen(waiting) - 1);
            nwait++;
        } else {
            if (w->ctxs[r]->thread_done)
                snprintf(one, sizeof one, "%srank %d (returned from its rank function after seq %lld)",
                         nmiss ? ", " : "", r, (long long)last_done);
            else
                snprintf(one, sizeof one, "%srank %d (last completed seq %lld)", nmiss ? ", " : "", r,
                         (long long)last_done);
            strncat(missing, one, sizeof missing - strlen(missing) - 1);
            nmiss++;
        }
    }
    if (nmiss)
        snprintf(out, (size_t)len,
                 "%s seq %lld on %s never completed: %s never called it; rank%s %s %s waiting in it",
                 rl_coll_name(stuck->kind), (long long)stuck->seq, stuck->comm, missing, nwait == 1 ? "" : "s",
                 waiting, nwait == 1 ? "is" : "are");
    else
        snprintf(out, (size_t)len,
                 "%s seq %lld on %s never completed although every rank entered it (a rank is stuck "
                 "on an earlier call on another communicator, or a send/recv inside it has no partner)",
                 rl_coll_name(stuck->kind), (long long)stuck->seq, stuck->comm);
}

static json_t *rec_json(const rl_flight_rec *f)
{
    return json_pack("{s:I,s:I,s:s,s:I,s:s,s:i,s:s,s:s,s:f,s:f,s:f}", "seq", (json_int_t)f->seq, "p2p_seq",
                     (json_int_t)f->p2p_seq, "op", rl_coll_name(f->kind), "count", (json_int_t)f->count, "dtype",
                     rl_dtype_name(f->dtype), "peer", f->peer, "comm", f->comm, "state", state_names[f->state],
                     "t_enqueued", f->t_enq, "t_started", f->t_start, "t_completed", f->t_end);
}

RL_API_WATCHED
void rl_flight_report(rl_world *w, FILE *f, const char *json_path, char *vbuf, int vlen)
{
    RL_API_ENTRY();
    int n = w->n;
    rl_flight_rec (*recs)[RL_FLIGHT_N] = calloc((size_t)n, sizeof *recs);
    int *nrec = calloc((size_t)n, sizeof *nrec);
    double now = rl_mono_now() - w->t0;
    for (int r = 0; r < n; r++)
        nrec[r] = w->ctxs[r] ? snapshot(w->ctxs[r], recs[r]) : 0;
    if (!vbuf[0] && w->dist)
        verdict_one_rank(w, recs[w->dist_rank], nrec[w->dist_rank], now, vbuf, vlen);
    else if (!vbuf[0])
        verdict(w, recs, nrec, vbuf, vlen);
    if (w->dist)
        fprintf(f, "\n== flight recorder: the last communicator calls of rank %d, this process's rank (newest "
                "last) ==\n", w->dist_rank);
    else
        fprintf(f, "\n== flight recorder: the last communicator calls of every rank (newest last) ==\n");
    fprintf(f, "  %8s  %-14s %10s %-5s %-9s %-16s %s\n", "seq", "op", "count", "dtype", "peer", "comm", "state");
    for (int r = 0; r < n; r++) {
        if (!w->ctxs[r])
            continue; /* dist mode: another process's rank */
        fprintf(f, "rank %d%s\n", r, w->ctxs[r]->thread_done ? " (rank function returned)" : "");
        int from = nrec[r] > 8 ? nrec[r] - 8 : 0;
        if (nrec[r] == 0)
            fprintf(f, "  (no calls)\n");
        for (int i = from; i < nrec[r]; i++) {
            char line[256];
            rec_line(&recs[r][i], now, line, sizeof line);
            fprintf(f, "%s\n", line);
        }
    }
    fprintf(f, "verdict: %s\n", vbuf);
    if (json_path) {
        json_t *root = json_object(), *ranks = json_array();
        for (int r = 0; r < n; r++) {
            if (!w->ctxs[r])
                continue;
            json_t *arr = json_array();
            for (int i = 0; i < nrec[r]; i++)
                json_array_append_new(arr, rec_json(&recs[r][i]));
            json_array_append_new(ranks, json_pack("{s:i,s:o}", "rank", r, "records", arr));
        }
        json_object_set_new(root, "ranks", ranks);
        json_object_set_new(root, "verdict", json_string(vbuf));
        if (json_dump_file(root, json_path, JSON_INDENT(1)) == 0)
            fprintf(f, "flight records written to %s\n", json_path);
        json_decref(root);
    }
    free(recs);
    free(nrec);
}
