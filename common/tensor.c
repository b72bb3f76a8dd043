/* tensor.c — tensors on host memory, or on device memory under --backend cuda (the GPU
 * backend's hooks are marked "issue 6"; the CUDA calls live in backend.c and the .cu files). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apiwatch.h"
#include "bf16.h"
#include "internal.h"

/* ------------------------------------------------------------------ GPU backend hooks (issue 6)
 * On a world running --backend cuda, tensors live in device memory (cudaMalloc, charged to
 * the same account). Element access goes through host copies here; ops use device kernels. */

static int on_gpu(const rl_tensor *t) { return t && t->device == RL_CUDA; }

/* The tensor's elements as a fresh host f32 array (caller frees), or NULL with an error. */
static float *dev_to_host_f32(const rl_tensor *t)
{
    float *h = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof(float));
    if (!h || rl_tensor_to_f32(t, h, t->numel)) {
        free(h);
        return NULL;
    }
    return h;
}

/* dst (device) ← n f32 host values converted to dst's dtype. */
static int dev_from_host_f32(rl_tensor *t, const float *src, int64_t n)
{
    char err[256];
    size_t es = rl_dtype_size(t->dtype);
    void *h = t->dtype == RL_F32 ? (void *)src : malloc((size_t)(n > 0 ? n : 1) * es);
    if (!h)
        return rl_rank_out_of_memory(t->ctx, "tensor '%s': no host memory for a copy", t->name);
    if (t->dtype == RL_BF16)
        for (int64_t i = 0; i < n; i++)
            ((rl_bf16 *)h)[i] = rl_f32_to_bf16(src[i]);
    int rc = rl_backend_copy(t->ctx, rl_tensor_data(t), h, n * (int64_t)es, err, sizeof err);
    if (h != src)
        free(h);
    return rc ? rl_error(t->ctx, RL_ERR_UNSUPPORTED, "tensor '%s': copy to the GPU failed: %s", t->name, err) : 0;
}

/* dst (host f32) ← the device tensor's n elements. */
static int dev_to_f32(const rl_tensor *t, float *dst, int64_t n)
{
    char err[256];
    size_t es = rl_dtype_size(t->dtype);
    void *h = t->dtype == RL_F32 ? (void *)dst : malloc((size_t)(n > 0 ? n : 1) * es);
    if (!h)
        return rl_rank_out_of_memory(t->ctx, "tensor '%s': no host memory for a copy", t->name);
    int rc = rl_backend_copy(t->ctx, h, rl_tensor_data(t), n * (int64_t)es, err, sizeof err);
    if (!rc && t->dtype == RL_BF16)
        for (int64_t i = 0; i < n; i++)
            dst[i] = rl_bf16_to_f32(((rl_bf16 *)h)[i]);
    if (h != dst)
        free(h);
    return rc ? rl_error(t->ctx, RL_ERR_UNSUPPORTED, "tensor '%s': copy from the GPU failed: %s", t->name, err) : 0;
}
/* ------------------------------------------------------------------ end of GPU backend hooks */

/* A tensor as allocated: the public struct plus its place in the rank's live list. */
struct rl_tensor_node {
    rl_tensor t;
    struct rl_tensor_node *prev, *next;
};

static void live_add(rl_ctx *ctx, struct rl_tensor_node *n)
{
    if (!ctx)
        return;
    n->next = ctx->tensors;
    if (ctx->tensors)
        ctx->tensors->prev = n;
    ctx->tensors = n;
}

static void live_remove(rl_ctx *ctx, struct rl_tensor_node *n)
{
    if (!ctx)
        return;
    if (n->prev)
        n->prev->next = n->next;
    else if (ctx->tensors == n)
        ctx->tensors = n->next;
    if (n->next)
        n->next->prev = n->prev;
}

void rl_tensor_set_dims(rl_tensor *t, const char *dims)
{
    if (!t)
        return;
    memset(t->dims, 0, sizeof t->dims);
    if (!dims)
        return;
    int d = 0, k = 0;
    for (const char *p = dims; *p && d < RL_MAX_DIMS; p++) {
        if (*p == ',') {
            d++;
            k = 0;
        } else if (k < RL_DIM_NAME - 1) {
            t->dims[d][k++] = *p;
        }
    }
}

static int check_shape(rl_ctx *ctx, const char *name, int ndim, const int64_t *shape, int64_t *numel)
{
    if (ndim < 1 || ndim > RL_MAX_DIMS || !shape)
        return rl_error(ctx, RL_ERR_ARG, "tensor '%s': ndim %d is out of range; use 1 to %d dims",
                        name ? name : "?", ndim, RL_MAX_DIMS);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return rl_error(ctx, RL_ERR_ARG, "tensor '%s': dim %d has negative size %lld",
                            name ? name : "?", i, (long long)shape[i]);
        n *= shape[i];
    }
    *numel = n;
    return 0;
}

static struct rl_tensor_node *node_new(rl_ctx *ctx, const char *name, rl_dtype dtype, int ndim,
                                       const int64_t *shape, const char *dims, int64_t numel)
{
    struct rl_tensor_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    rl_tensor *t = &n->t;
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    t->numel = numel;
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
    rl_tensor_set_dims(t, dims);
    return n;
}

/* A new tensor on the GPU (gpu = 1, charged) or in host memory (gpu = 0; charged unless
 * it is a host staging buffer of a GPU run, which the account of device memory leaves out). */
static rl_tensor *tensor_new(rl_ctx *ctx, const char *name, rl_dtype dtype, rl_mem_cat cat, int ndim,
                             const int64_t *shape, const char *dims, int gpu, int charge)
{
    int64_t numel;
    if (check_shape(ctx, name, ndim, shape, &numel))
        return NULL;
    if ((dtype != RL_F32 && dtype != RL_BF16) || cat < 0 || cat >= RL_MEM_NCAT) {
        rl_error(ctx, RL_ERR_ARG, "tensor '%s': unknown dtype %d or memory category %d",
                 name ? name : "?", (int)dtype, (int)cat);
        return NULL;
    }
    struct rl_tensor_node *n = node_new(ctx, name, dtype, ndim, shape, dims, numel);
    rl_storage *s = calloc(1, sizeof *s);
    int64_t bytes = numel * (int64_t)rl_dtype_size(dtype);
    char gerr[300] = "";
    void *data = gpu ? rl_backend_alloc(ctx, bytes, gerr, sizeof gerr) : calloc(1, bytes > 0 ? (size_t)bytes : 1);
    if (gpu && !data) {
        free(n);
        free(s);
        rl_error(ctx, RL_ERR_NOMEM, "tensor '%s': %s", name ? name : "?", gerr);
        return NULL;
    }
    if (!n || !s || !data) {
        free(n);
        free(s);
        free(data);
        char nb[32];
        rl_rank_out_of_memory(ctx, "needed %s of host memory for tensor '%s'", rl_fmt_bytes((double)bytes, nb, sizeof nb),
                              name ? name : "?");
        return NULL;
    }
    s->data = data;
    s->bytes = bytes;
    s->refs = 1;
    s->device = gpu ? RL_CUDA : RL_CPU;
    s->cat = cat;
    s->ctx = ctx;
    n->t.storage = s;
    n->t.cat = cat;
    n->t.device = s->device;
    s->charged = charge;
    if (ctx && charge)
        rl_mem_charge(&ctx->mem, cat, bytes);
    live_add(ctx, n);
    return &n->t;
}

rl_tensor *rl_tensor_new(rl_ctx *ctx, const char *name, rl_dtype dtype, rl_mem_cat cat,
                         int ndim, const int64_t *shape, const char *dims)
{
    int gpu = ctx && ctx->world->gpu_mode; /* GPU backend hook (issue 6): device memory */
    return tensor_new(ctx, name, dtype, cat, ndim, shape, dims, gpu, 1);
}

rl_tensor *rl_tensor_new_host(rl_ctx *ctx, const char *name, rl_dtype dtype, int64_t n)
{
    int gpu_run = ctx && ctx->world->gpu_mode;
    return tensor_new(ctx, name, dtype, RL_MEM_OTHER, 1, &n, NULL, 0, !gpu_run);
}

rl_tensor *rl_tensor_new_1d(rl_ctx *ctx, const char *name, rl_dtype dtype, rl_mem_cat cat, int64_t n)
{
    return rl_tensor_new(ctx, name, dtype, cat, 1, &n, NULL);
}

rl_tensor *rl_tensor_view(rl_tensor *base, const char *name, int64_t offset, int ndim,
                          const int64_t *shape, const char *dims)
{
    if (!base)
        return NULL;
    int64_t numel;
    if (check_shape(base->ctx, name, ndim, shape, &numel))
        return NULL;
    if (offset < 0 || offset + numel > base->numel) {
        rl_error(base->ctx, RL_ERR_ARG,
                 "view '%s' of %lld elements at offset %lld does not fit in '%s' (%lld elements)",
                 name ? name : "?", (long long)numel, (long long)offset, base->name,
                 (long long)base->numel);
        return NULL;
    }
    struct rl_tensor_node *n = node_new(base->ctx, name, base->dtype, ndim, shape, dims, numel);
    if (!n) {
        rl_rank_out_of_memory(base->ctx, "view '%s': no memory left", name ? name : "?");
        return NULL;
    }
    n->t.storage = base->storage;
    n->t.storage->refs++;
    n->t.offset = base->offset + offset;
    n->t.cat = base->cat;
    n->t.device = base->device;
    live_add(base->ctx, n);
    return &n->t;
}

rl_tensor *rl_tensor_slice(rl_tensor *base, int64_t offset, int64_t n)
{
    return rl_tensor_view(base, base ? base->name : NULL, offset, 1, &n, NULL);
}

static void storage_release(rl_storage *s)
{
    if (--s->refs > 0)
        return;
    if (s->ctx && s->charged)
        rl_mem_charge(&s->ctx->mem, s->cat, -s->bytes);
    if (s->device == RL_CUDA) /* GPU backend hook (issue 6) */
        rl_backend_free(s->data);
    else
        free(s->data);
    free(s);
}

void rl_tensor_free(rl_tensor *t)
{
    if (!t)
        return;
    struct rl_tensor_node *n = (struct rl_tensor_node *)t;
    live_remove(t->ctx, n);
    storage_release(t->storage);
    free(n);
}

RL_API_WATCHED
void rl_tensors_free_all(rl_ctx *ctx)
{
    RL_API_ENTRY();
    while (ctx->tensors)
        rl_tensor_free(&ctx->tensors->t);
}

int64_t rl_tensor_bytes(const rl_tensor *t)
{
    return t ? t->numel * (int64_t)rl_dtype_size(t->dtype) : 0;
}

char *rl_tensor_describe(const rl_tensor *t, char *buf, int size)
{
    int k = snprintf(buf, (size_t)size, "%s[", t->name);
    for (int i = 0; i < t->ndim && k < size; i++) {
        const char *dn = t->dims[i][0] ? t->dims[i] : NULL;
        if (dn)
            k += snprintf(buf + k, (size_t)(size - k), "%s%s=%lld", i ? "," : "", dn, (long long)t->shape[i]);
        else
            k += snprintf(buf + k, (size_t)(size - k), "%s%lld", i ? "," : "", (long long)t->shape[i]);
    }
    if (k < size)
        snprintf(buf + k, (size_t)(size - k), "]");
    return buf;
}

int rl_tensor_same_shape(const rl_tensor *a, const rl_tensor *b)
{
    if (!a || !b || a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

void *rl_tensor_data(const rl_tensor *t)
{
    if (!t || !t->storage)
        return NULL;
    return (char *)t->storage->data + t->offset * (int64_t)rl_dtype_size(t->dtype);
}

void *rl_tensor_host_data(const rl_tensor *t)
{
    return (t && t->device == RL_CPU) ? rl_tensor_data(t) : NULL;
}

float rl_tensor_get(const rl_tensor *t, int64_t i)
{
    if (!t || i < 0 || i >= t->numel)
        return NAN;
    if (on_gpu(t)) { /* GPU backend hook (issue 6) */
        rl_tensor one = *t;
        float v;
        one.offset += i;
        one.numel = 1;
        return dev_to_f32(&one, &v, 1) ? NAN : v;
    }
    if (t->dtype == RL_BF16)
        return rl_bf16_to_f32(((const rl_bf16 *)rl_tensor_data(t))[i]);
    return ((const float *)rl_tensor_data(t))[i];
}

void rl_tensor_set(rl_tensor *t, int64_t i, float v)
{
    if (!t || i < 0 || i >= t->numel)
        return;
    if (on_gpu(t)) { /* GPU backend hook (issue 6) */
        rl_tensor one = *t;
        one.offset += i;
        one.numel = 1;
        dev_from_host_f32(&one, &v, 1);
        return;
    }
    if (t->dtype == RL_BF16)
        ((rl_bf16 *)rl_tensor_data(t))[i] = rl_f32_to_bf16(v);
    else
        ((float *)rl_tensor_data(t))[i] = v;
}

int rl_tensor_from_f32(rl_tensor *t, const float *src, int64_t n)
{
    if (!t || !src || n != t->numel)
        return rl_error(t ? t->ctx : NULL, RL_ERR_ARG, "from_f32: '%s' has %lld elements, got %lld",
                        t ? t->name : "?", t ? (long long)t->numel : 0LL, (long long)n);
    if (on_gpu(t)) /* GPU backend hook (issue 6) */
        return dev_from_host_f32(t, src, n);
    if (t->dtype == RL_F32) {
        memcpy(rl_tensor_data(t), src, (size_t)n * sizeof(float));
    } else {
        rl_bf16 *d = rl_tensor_data(t);
        for (int64_t i = 0; i < n; i++)
            d[i] = rl_f32_to_bf16(src[i]);
    }
    return 0;
}

int rl_tensor_to_f32(const rl_tensor *t, float *dst, int64_t n)
{
    if (!t || !dst || n != t->numel)
        return rl_error(t ? t->ctx : NULL, RL_ERR_ARG, "to_f32: '%s' has %lld elements, asked %lld",
                        t ? t->name : "?", t ? (long long)t->numel : 0LL, (long long)n);
    if (on_gpu(t)) /* GPU backend hook (issue 6) */
        return dev_to_f32(t, dst, n);
    if (t->dtype == RL_F32) {
        memcpy(dst, rl_tensor_data(t), (size_t)n * sizeof(float));
    } else {
        const rl_bf16 *s = rl_tensor_data(t);
        for (int64_t i = 0; i < n; i++)
            dst[i] = rl_bf16_to_f32(s[i]);
    }
    return 0;
}

int rl_tensor_copy(rl_tensor *dst, const rl_tensor *src)
{
    if (!dst || !src || dst->numel != src->numel)
        return rl_error(dst ? dst->ctx : NULL, RL_ERR_ARG,
                        "copy: '%s' has %lld elements but '%s' has %lld", dst ? dst->name : "?",
                        dst ? (long long)dst->numel : 0LL, src ? src->name : "?",
                        src ? (long long)src->numel : 0LL);
    if (on_gpu(dst) || on_gpu(src)) { /* GPU backend hook (issue 6): on the device, else through host f32 */
        if (((on_gpu(dst) && on_gpu(src)) || dst->dtype == src->dtype) && rl_backend_tensor_copy(dst, src) == 0)
            return 0;
        float *h = dev_to_host_f32(src);
        int rc = h ? rl_tensor_from_f32(dst, h, src->numel) : RL_ERR_NOMEM;
        free(h);
        return rc;
    }
    if (dst->dtype == src->dtype) {
        memmove(rl_tensor_data(dst), rl_tensor_data(src), (size_t)rl_tensor_bytes(src));
    } else if (dst->dtype == RL_F32) {
        rl_tensor_to_f32(src, rl_tensor_data(dst), src->numel);
    } else {
        rl_tensor_from_f32(dst, rl_tensor_data(src), src->numel);
    }
    return 0;
}

void rl_tensor_fill(rl_tensor *t, float v)
{
    if (!t)
        return;
    if (on_gpu(t) && rl_backend_tensor_fill(t, v) == 0) /* GPU backend hook (issue 6): a fill kernel */
        return;
    if (on_gpu(t)) { /* GPU backend hook (issue 6): through host f32 */
        float *h = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof(float));
        for (int64_t i = 0; h && i < t->numel; i++)
            h[i] = v;
        if (h)
            rl_tensor_from_f32(t, h, t->numel);
        free(h);
        return;
    }
    if (t->dtype == RL_F32) {
        float *d = rl_tensor_data(t);
        for (int64_t i = 0; i < t->numel; i++)
            d[i] = v;
    } else {
        rl_bf16 h = rl_f32_to_bf16(v), *d = rl_tensor_data(t);
        for (int64_t i = 0; i < t->numel; i++)
            d[i] = h;
    }
}

void rl_tensor_zero(rl_tensor *t)
{
    if (on_gpu(t)) /* GPU backend hook (issue 6) */
        rl_tensor_fill(t, 0.0f);
    else if (t)
        memset(rl_tensor_data(t), 0, (size_t)rl_tensor_bytes(t));
}

int rl_tensor_equal(const rl_tensor *a, const rl_tensor *b)
{
    if (!a || !b || a->dtype != b->dtype || a->numel != b->numel)
        return 0;
    if (on_gpu(a) || on_gpu(b)) { /* GPU backend hook (issue 6): f32 images are exact */
        float *x = dev_to_host_f32(a), *y = dev_to_host_f32(b);
        int eq = x && y && memcmp(x, y, (size_t)a->numel * sizeof(float)) == 0;
        free(x);
        free(y);
        return eq;
    }
    return memcmp(rl_tensor_data(a), rl_tensor_data(b), (size_t)rl_tensor_bytes(a)) == 0;
}

double rl_tensor_max_rel_diff(const rl_tensor *a, const rl_tensor *b, double floor)
{
    if (!a || !b || a->numel != b->numel)
        return INFINITY;
    double worst = 0.0;
    float *ha = on_gpu(a) ? dev_to_host_f32(a) : NULL, *hb = on_gpu(b) ? dev_to_host_f32(b) : NULL;
    for (int64_t i = 0; i < a->numel; i++) {
        double x = ha ? ha[i] : rl_tensor_get(a, i), y = hb ? hb[i] : rl_tensor_get(b, i);
        double d = fabs(x - y) / fmax(fabs(y), floor);
        if (isnan(d)) {
            free(ha);
            free(hb);
            return INFINITY;
        }
        if (d > worst)
            worst = d;
    }
    free(ha);
    free(hb);
    return worst;
}
