/* data.c — the synthetic data sets: a random teacher network and a Markov token task. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "data.h"
#include "err.h"
#include "mem.h"
#include "rng.h"

enum { TASK_REGRESSION = 0, TASK_TOKENS = 1 };
#define TEACHER_HIDDEN_MULT 2
#define TOKEN_NOISE 0.1
#define STREAM_PARAMS 0xA11CEull

struct rl_data {
    int task;
    int in_dim, out_dim, hidden; /* regression */
    float *w1, *w2;              /* teacher: [hidden, in], [out, hidden] */
    int vocab, seq;              /* tokens */
    int *table;                  /* [vocab·vocab] next token of (previous, current) */
    uint64_t seed;
};

rl_data *rl_data_regression(rl_ctx *ctx, int in_dim, int out_dim, uint64_t seed)
{
    if (in_dim < 1 || out_dim < 1) {
        rl_error(ctx, RL_ERR_ARG, "data: regression needs in_dim and out_dim >= 1 (got %d, %d)", in_dim, out_dim);
        return NULL;
    }
    rl_data *d = calloc(1, sizeof *d);
    int hidden = TEACHER_HIDDEN_MULT * in_dim;
    if (d) {
        d->w1 = malloc(sizeof(float) * (size_t)hidden * (size_t)in_dim);
        d->w2 = malloc(sizeof(float) * (size_t)out_dim * (size_t)hidden);
    }
    if (!d || !d->w1 || !d->w2) {
        rl_data_free(d);
        rl_rank_out_of_memory(ctx, "data: no memory for the teacher network");
        return NULL;
    }
    d->task = TASK_REGRESSION;
    d->in_dim = in_dim;
    d->out_dim = out_dim;
    d->hidden = hidden;
    d->seed = seed;
    rl_rng r = rl_rng_make(seed, STREAM_PARAMS);
    /* w1 ~ N(0, 0.7²/in): tanh mildly curved; w2 ~ N(0, 1/hidden): y has variance ≈ 0.3. */
    for (int i = 0; i < hidden * in_dim; i++)
        d->w1[i] = (float)(rl_rng_normal(&r) * 0.7 / sqrt((double)in_dim));
    for (int i = 0; i < out_dim * hidden; i++)
        d->w2[i] = (float)(rl_rng_normal(&r) / sqrt((double)hidden));
    return d;
}

rl_data *rl_data_tokens(rl_ctx *ctx, int vocab, int seq, uint64_t seed)
{
    if (vocab < 2 || seq < 2) {
        rl_error(ctx, RL_ERR_ARG, "data: the token task needs vocab >= 2 and seq >= 2 (got %d, %d)", vocab, seq);
        return NULL;
    }
    rl_data *d = calloc(1, sizeof *d);
    if (d)
        d->table = malloc(sizeof(int) * (size_t)vocab * (size_t)vocab);
    if (!d || !d->table) {
        rl_data_free(d);
        rl_rank_out_of_memory(ctx, "data: no memory for the token table");
        return NULL;
    }
    d->task = TASK_TOKENS;
    d->vocab = vocab;
    d->seq = seq;
    d->seed = seed;
    rl_rng r = rl_rng_make(seed, STREAM_PARAMS);
    for (int i = 0; i < vocab * vocab; i++)
        d->table[i] = (int)rl_rng_below(&r, (uint64_t)vocab);
    return d;
}

void rl_data_free(rl_data *d)
{
    if (!d)
        return;
    free(d->w1);
    free(d->w2);
    free(d->table);
    free(d);
}

int rl_data_in_dim(const rl_data *d) { return !d ? 0 : d->task == TASK_TOKENS ? d->vocab : d->in_dim; }
int rl_data_out_dim(const rl_data *d) { return !d ? 0 : d->task == TASK_TOKENS ? d->seq : d->out_dim; }

/* The generator of sample k of global step s. */
static rl_rng sample_rng(const rl_data *d, int64_t step, int64_t k)
{
    return rl_rng_make(d->seed, ((uint64_t)step << 24) ^ (uint64_t)k);
}

static void regression_sample(const rl_data *d, int64_t step, int64_t k, float *x, float *y)
{
    rl_rng r = sample_rng(d, step, k);
    for (int i = 0; i < d->in_dim; i++)
        x[i] = (float)rl_rng_normal(&r);
    for (int o = 0; o < d->out_dim; o++)
        y[o] = 0.0f;
    for (int j = 0; j < d->hidden; j++) {
        double a = 0;
        for (int i = 0; i < d->in_dim; i++)
            a += (double)d->w1[j * d->in_dim + i] * x[i];
        float t = (float)tanh(a);
        for (int o = 0; o < d->out_dim; o++)
            y[o] += d->w2[o * d->hidden + j] * t;
    }
}

static void token_sample(const rl_data *d, int64_t step, int64_t k, int *tokens, int *targets)
{
    rl_rng r = sample_rng(d, step, k);
    int prev = (int)rl_rng_below(&r, (uint64_t)d->vocab);
    int cur = (int)rl_rng_below(&r, (uint64_t)d->vocab);
    for (int i = 0; i < d->seq; i++) {
        int next = rl_rng_uniform(&r) < TOKEN_NOISE ? (int)rl_rng_below(&r, (uint64_t)d->vocab)
                                                     : d->table[prev * d->vocab + cur];
        tokens[i] = cur;
        targets[i] = next;
        prev = cur;
        cur = next;
    }
}

/* (Re)allocates a 2-D f32 batch tensor of [rows, cols] unless it already has that shape. */
static int ensure_tensor(rl_ctx *ctx, rl_tensor **t, const char *name, int64_t rows, int64_t cols, const char *dims)
{
    if (*t && (*t)->ndim == 2 && (*t)->shape[0] == rows && (*t)->shape[1] == cols)
        return 0;
    rl_tensor_free(*t);
    int64_t shape[2] = { rows, cols };
    *t = rl_tensor_new(ctx, name, RL_F32, RL_MEM_ACTIVATION, 2, shape, dims);
    return *t ? 0 : RL_ERR_NOMEM;
}

int rl_data_get(rl_data *d, rl_ctx *ctx, int64_t step, int64_t first, int64_t count, rl_batch *out)
{
    if (!d || !out || first < 0 || count < 1 || step < 0)
        return rl_error(ctx, RL_ERR_ARG, "data: bad request (step %lld, first %lld, count %lld); need step >= 0, "
                        "first >= 0, count >= 1 and an output batch", (long long)step, (long long)first,
                        (long long)count);
    if (d->task == TASK_REGRESSION) {
        if (ensure_tensor(ctx, &out->x, "x", count, d->in_dim, "b,in") ||
            ensure_tensor(ctx, &out->y, "y", count, d->out_dim, "b,out"))
            return rl_rank_out_of_memory(ctx, "data: no memory for a batch of %lld", (long long)count);
        float *x = rl_tensor_host_data(out->x), *y = rl_tensor_host_data(out->y);
        /* GPU backend (issue 6): device batches are made on the host and copied once */
        float *hx = x ? NULL : malloc((size_t)(count * d->in_dim) * sizeof(float));
        float *hy = y ? NULL : malloc((size_t)(count * d->out_dim) * sizeof(float));
        if ((!x && !hx) || (!y && !hy)) {
            free(hx);
            free(hy);
            return rl_rank_out_of_memory(ctx, "data: no host memory for a batch of %lld", (long long)count);
        }
        for (int64_t k = 0; k < count; k++)
            regression_sample(d, step, first + k, (x ? x : hx) + k * d->in_dim, (y ? y : hy) + k * d->out_dim);
        int crc = (hx ? rl_tensor_from_f32(out->x, hx, count * d->in_dim) : 0) ||
                  (hy ? rl_tensor_from_f32(out->y, hy, count * d->out_dim) : 0);
        free(hx);
        free(hy);
        if (crc)
            return RL_ERR_UNSUPPORTED;
        out->seq = 0;
    } else {
        if (out->size != count || out->seq != d->seq || !out->tokens) {
            free(out->tokens);
            free(out->targets);
            out->tokens = malloc(sizeof(int) * (size_t)(count * d->seq));
            out->targets = malloc(sizeof(int) * (size_t)(count * d->seq));
            if (!out->tokens || !out->targets)
                return rl_rank_out_of_memory(ctx, "data: no memory for a batch of %lld", (long long)count);
        }
        for (int64_t k = 0; k < count; k++)
            token_sample(d, step, first + k, out->tokens + k * d->seq, out->targets + k * d->seq);
        out->seq = d->seq;
    }
    out->size = count;
    return 0;
}

int rl_data_shard(rl_data *d, rl_ctx *ctx, int64_t step, int rank, int64_t local_batch, rl_batch *out)
{
    if (rank < 0)
        return rl_error(ctx, RL_ERR_ARG, "data: rank %d is negative", rank);
    return rl_data_get(d, ctx, step, (int64_t)rank * local_batch, local_batch, out);
}

void rl_batch_free(rl_batch *b)
{
    if (!b)
        return;
    rl_tensor_free(b->x);
    rl_tensor_free(b->y);
    free(b->tokens);
    free(b->targets);
    memset(b, 0, sizeof *b);
}
