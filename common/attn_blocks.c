/* attn_blocks.c — blockwise attention with log-sum-exp, the merge rule, zig-zag chunks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apiwatch.h"
#include "attn_blocks.h"
#include "err.h"
#include "stream.h"

static int check_shapes(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v, int nh,
                        const rl_tensor *out, const rl_tensor *lse, int64_t *B, int64_t *SQ, int64_t *SK, int64_t *H)
{
    const char *fn = "attn_block";
    if (!q || !k || !v || !out || !lse)
        return rl_error(ctx, RL_ERR_ARG, "%s: q, k, v, out and lse must not be NULL", fn);
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 || out->ndim != 3)
        return rl_error(ctx, RL_ERR_ARG, "%s: q, k, v and out must be [b, s, nh·hd] (3 dims)", fn);
    *B = q->shape[0];
    *SQ = q->shape[1];
    *SK = k->shape[1];
    *H = q->shape[2];
    if (nh < 1 || *H % nh)
        return rl_error(ctx, RL_ERR_ARG, "%s: %d heads do not divide the width %lld (use a head count dividing it)",
                        fn, nh, (long long)*H);
    if (k->shape[0] != *B || v->shape[0] != *B || k->shape[2] != *H || v->shape[2] != *H || v->shape[1] != *SK)
        return rl_error(ctx, RL_ERR_ARG, "%s: k and v must be [b=%lld, sk, %lld] with the same sk", fn, (long long)*B,
                        (long long)*H);
    if (out->shape[0] != *B || out->shape[1] != *SQ || out->shape[2] != *H)
        return rl_error(ctx, RL_ERR_ARG, "%s: out must have q's shape [%lld, %lld, %lld]", fn, (long long)*B,
                        (long long)*SQ, (long long)*H);
    if (lse->dtype != RL_F32 || lse->numel != *B * nh * *SQ)
        return rl_error(ctx, RL_ERR_ARG, "%s: lse must be f32 [b, nh, sq] = %lld elements", fn,
                        (long long)(*B * nh * *SQ));
    return RL_OK;
}

static int block_forward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v, int nh, int mode,
                         int64_t qo, int64_t ko, const int64_t *qp, const int64_t *kp, rl_tensor *out, rl_tensor *lse)
{
    int64_t B = 0, SQ = 0, SK = 0, H = 0;
    int rc = check_shapes(ctx, q, k, v, nh, out, lse, &B, &SQ, &SK, &H);
    if (rc)
        return rc;
    double w0 = ctx ? rl_wall_now(ctx) : 0;
    float *Q = malloc(sizeof(float) * (size_t)(q->numel + 1)), *K = malloc(sizeof(float) * (size_t)(k->numel + 1));
    float *V = malloc(sizeof(float) * (size_t)(v->numel + 1)), *O = calloc((size_t)out->numel + 1, sizeof(float));
    float *L = malloc(sizeof(float) * (size_t)(lse->numel + 1)), *S = malloc(sizeof(float) * (size_t)(SK + 1));
    if (!Q || !K || !V || !O || !L || !S)
        rc = rl_rank_out_of_memory(ctx, "attn_block: no memory left");
    if (!rc)
        rc = rl_tensor_to_f32(q, Q, q->numel) || rl_tensor_to_f32(k, K, k->numel) || rl_tensor_to_f32(v, V, v->numel)
                 ? rl_error(ctx, RL_ERR_UNSUPPORTED, "attn_block: q, k, v must be readable host tensors")
                 : RL_OK;
    int64_t hd = nh > 0 && H > 0 ? H / nh : 1;
    float scale = 1.0f / sqrtf((float)hd);
    for (int64_t b = 0; !rc && b < B; b++)
        for (int64_t h = 0; h < nh; h++)
            for (int64_t i = 0; i < SQ; i++) {
                const float *qi = Q + (b * SQ + i) * H + h * hd;
                int64_t pi = mode == 1 ? qo + i : mode == 2 && qp ? qp[i] : 0;
                float mx = -INFINITY;
                for (int64_t j = 0; j < SK; j++) {
                    int64_t pj = mode == 1 ? ko + j : mode == 2 && kp ? kp[j] : 0;
                    int masked = (mode == 1 || (mode == 2 && qp && kp)) && pi < pj;
                    if (masked) {
                        S[j] = -INFINITY;
                        continue;
                    }
                    const float *kj = K + (b * SK + j) * H + h * hd;
                    float s = 0;
                    for (int64_t d = 0; d < hd; d++)
                        s += qi[d] * kj[d];
                    S[j] = s * scale;
                    mx = S[j] > mx ? S[j] : mx;
                }
                float *oi = O + (b * SQ + i) * H + h * hd;
                float *li = L + (b * nh + h) * SQ + i;
                if (mx == -INFINITY) { /* every key masked */
                    *li = -INFINITY;
                    continue;
                }
                double sum = 0;
                for (int64_t j = 0; j < SK; j++)
                    if (S[j] != -INFINITY) {
                        float e = expf(S[j] - mx);
                        sum += e;
                        const float *vj = V + (b * SK + j) * H + h * hd;
                        for (int64_t d = 0; d < hd; d++)
                            oi[d] += e * vj[d];
                    }
                for (int64_t d = 0; d < hd; d++)
                    oi[d] = (float)(oi[d] / sum);
                *li = mx + (float)log(sum);
            }
    if (!rc)
        rc = rl_tensor_from_f32(out, O, out->numel) || rl_tensor_from_f32(lse, L, lse->numel)
                 ? rl_error(ctx, RL_ERR_UNSUPPORTED, "attn_block: out and lse must be writable host tensors")
                 : RL_OK;
    if (!rc && ctx) {
        char shapes[160];
        snprintf(shapes, sizeof shapes, "q[b=%lld,sq=%lld,h=%lld] kv[sk=%lld] -> out, lse[nh=%d]", (long long)B,
                 (long long)SQ, (long long)H, (long long)SK, nh);
        double es = (double)rl_dtype_size(q->dtype);
        int64_t pairs = 0; /* unmasked (query, key) pairs: the scores this block computed per batch row and head */
        for (int64_t i = 0; i < SQ; i++)
            for (int64_t j = 0; j < SK; j++)
                pairs += !((mode == 1 && qo + i < ko + j) || (mode == 2 && qp && kp && qp[i] < kp[j]));
        rl_compute_record(ctx, "attn_block", q->dtype, 4.0 * B * H * (double)pairs,
                          es * (q->numel + k->numel + v->numel + out->numel) + 4.0 * lse->numel, shapes, w0);
    }
    free(Q);
    free(K);
    free(V);
    free(O);
    free(L);
    free(S);
    return rc;
}

int rl_attn_block_forward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v, int n_heads,
                          int causal, int64_t q_offset, int64_t k_offset, rl_tensor *out, rl_tensor *lse)
{
    return block_forward(ctx, q, k, v, n_heads, causal ? 1 : 0, q_offset, k_offset, NULL, NULL, out, lse);
}

int rl_attn_block_forward_pos(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v, int n_heads,
                              const int64_t *q_pos, const int64_t *k_pos, rl_tensor *out, rl_tensor *lse)
{
    return block_forward(ctx, q, k, v, n_heads, 2, 0, 0, q_pos, k_pos, out, lse);
}

/* One row: lse' = lse + log(1 + exp(lse_b − lse)), written around the larger of the two. */
RL_API_WATCHED
static void merge_row(float *o, float *l, const float *ob, float lb, int64_t d)
{
    RL_API_ENTRY();
    float la = *l;
    if (lb == -INFINITY)
        return;
    if (la == -INFINITY) {
        memcpy(o, ob, sizeof(float) * (size_t)d);
        *l = lb;
        return;
    }
    float mx = la > lb ? la : lb;
    float ln = mx + log1pf(expf(-fabsf(la - lb)));
    float wa = expf(la - ln), wb = expf(lb - ln);
    for (int64_t i = 0; i < d; i++)
        o[i] = wa * o[i] + wb * ob[i];
    *l = ln;
}

RL_API_WATCHED
void rl_attn_merge_rows(float *out, float *lse, const float *out_b, const float *lse_b, int64_t rows, int64_t d)
{
    RL_API_ENTRY();
    if (!out || !lse || !out_b || !lse_b)
        return;
    for (int64_t r = 0; r < rows; r++)
        merge_row(out + r * d, lse + r, out_b + r * d, lse_b[r], d);
}

RL_API_WATCHED
int rl_attn_merge(rl_ctx *ctx, rl_tensor *out, rl_tensor *lse, const rl_tensor *out_b, const rl_tensor *lse_b,
                  int n_heads)
{
    RL_API_ENTRY();
    if (!out || !lse || !out_b || !lse_b || out->ndim != 3 || !rl_tensor_same_shape(out, out_b) ||
        lse->dtype != RL_F32 || lse_b->dtype != RL_F32 || lse->numel != lse_b->numel || n_heads < 1 ||
        out->shape[2] % n_heads || lse->numel != out->shape[0] * n_heads * out->shape[1])
        return rl_error(ctx, RL_ERR_ARG,
                        "attn_merge: out and out_b must be the same [b, s, nh·hd] shape and lse, lse_b f32 [b, nh, s] "
                        "with nh dividing the width");
    if (out->dtype != RL_F32 || out_b->dtype != RL_F32)
        return rl_error(ctx, RL_ERR_UNSUPPORTED, "attn_merge: out and out_b must be f32 (got %s, %s)",
                        rl_dtype_name(out->dtype), rl_dtype_name(out_b->dtype));
    /* staged through host copies, so device tensors (--backend cuda) merge the same way */
    float *O = malloc(sizeof(float) * (size_t)out->numel), *L = malloc(sizeof(float) * (size_t)lse->numel);
    float *Ob = malloc(sizeof(float) * (size_t)out->numel), *Lb = malloc(sizeof(float) * (size_t)lse->numel);
    int rc = !O || !L || !Ob || !Lb ? rl_rank_out_of_memory(ctx, "attn_merge: no host memory left") : RL_OK;
    if (!rc && (rl_tensor_to_f32(out, O, out->numel) || rl_tensor_to_f32(lse, L, lse->numel) ||
                rl_tensor_to_f32(out_b, Ob, out->numel) || rl_tensor_to_f32(lse_b, Lb, lse->numel)))
        rc = rl_error(ctx, RL_ERR_UNSUPPORTED, "attn_merge: could not read out, lse, out_b or lse_b");
    int64_t B = out->shape[0], S = out->shape[1], H = out->shape[2], hd = H / n_heads;
    for (int64_t b = 0; !rc && b < B; b++)
        for (int64_t h = 0; h < n_heads; h++)
            for (int64_t i = 0; i < S; i++)
                merge_row(O + (b * S + i) * H + h * hd, L + (b * n_heads + h) * S + i, Ob + (b * S + i) * H + h * hd,
                          Lb[(b * n_heads + h) * S + i], hd);
    if (!rc && (rl_tensor_from_f32(out, O, out->numel) || rl_tensor_from_f32(lse, L, lse->numel)))
        rc = rl_error(ctx, RL_ERR_UNSUPPORTED, "attn_merge: could not write out or lse");
    free(O);
    free(L);
    free(Ob);
    free(Lb);
    return rc;
}

int rl_cp_zigzag_chunks(int cp, int rank, int *first, int *second)
{
    if (cp < 1 || rank < 0 || rank >= cp)
        return RL_ERR_ARG;
    if (first)
        *first = rank;
    if (second)
        *second = 2 * cp - rank - 1;
    return RL_OK;
}

RL_API_WATCHED
int rl_cp_zigzag_positions(int64_t seq, int cp, int rank, int64_t *pos, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (cp < 1 || rank < 0 || rank >= cp || !pos) {
        if (err && errlen)
            snprintf(err, errlen, "zigzag: need cp >= 1, 0 <= rank < cp and an output array (cp=%d rank=%d)", cp, rank);
        return RL_ERR_ARG;
    }
    if (seq < 1 || seq % (2 * cp)) {
        if (err && errlen)
            snprintf(err, errlen, "zigzag: the sequence length %lld must be a positive multiple of 2·cp = %d (pad it "
                                  "or pick cp so that 2·cp divides it)", (long long)seq, 2 * cp);
        return RL_ERR_ARG;
    }
    int64_t c = seq / (2 * cp);
    int a, b;
    rl_cp_zigzag_chunks(cp, rank, &a, &b);
    for (int64_t i = 0; i < c; i++) {
        pos[i] = a * c + i;
        pos[c + i] = b * c + i;
    }
    return RL_OK;
}

int64_t rl_cp_causal_work(const int64_t *q_pos, int64_t nq, const int64_t *k_pos, int64_t nk)
{
    int64_t n = 0;
    for (int64_t i = 0; q_pos && k_pos && i < nq; i++)
        for (int64_t j = 0; j < nk; j++)
            n += q_pos[i] >= k_pos[j];
    return n;
}
