/* test_gpu_ops.c — the GPU dispatch of the ops API, as far as it can be tested without a GPU:
 * a tensor on the GPU on a rank without GPU state (sim, or a build without CUDA) is refused
 * with a message naming the op and the fix, never touched; tensors on two devices are
 * refused; the GPU entry points refuse on a sim rank; the measured-timeline hooks are
 * no-ops on sim (its traces stay byte-identical: the runtime suite checks that); a sim
 * run records every op as before. The GPU numerics themselves are checked by make gpu-check. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "backend.h"
#include "ops.h"
#include "ringlab.h"
#include "testutil.h"

/* A CPU tensor that claims to be on the GPU (its memory is host memory: a refused op never reads it). */
static rl_tensor *fake_gpu(rl_ctx *ctx, const char *name, int64_t r, int64_t c)
{
    rl_tensor *t = rl_tensor_new(ctx, name, RL_F32, RL_MEM_OTHER, 2, (int64_t[]){ r, c }, NULL);
    ck_assert_ptr_nonnull(t);
    t->device = RL_CUDA;
    return t;
}

/* The last error says the op, the GPU and the way out. */
static void assert_refusal(rl_ctx *ctx, int rc, const char *op)
{
    const char *m = rl_last_error(ctx);
    ck_assert_msg(rc == RL_ERR_UNSUPPORTED, "%s: rc %d (%s)", op, rc, m);
    ck_assert_msg(strstr(m, op) && strstr(m, "GPU") && strstr(m, "--backend sim"), "%s: message '%s'", op, m);
    ck_assert_ptr_null(strchr(m, '\n'));
}

START_TEST(test_device_tensors_refused_without_gpu)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_tensor *a = fake_gpu(ctx, "a", 8, 16), *b = fake_gpu(ctx, "b", 16, 4), *c = fake_gpu(ctx, "c", 8, 4);
    rl_tensor *x = fake_gpu(ctx, "x", 8, 16), *y = fake_gpu(ctx, "y", 8, 16);
    rl_tensor *g = fake_gpu(ctx, "g", 1, 16), *mu = fake_gpu(ctx, "mu", 1, 8), *rs = fake_gpu(ctx, "rs", 1, 8);
    int targets[8] = { 0 };
    float loss = 0;
    double s = 0;
    assert_refusal(ctx, rl_matmul(ctx, a, 0, b, 0, c, 0.0f), "matmul");
    assert_refusal(ctx, rl_matmul_backward(ctx, a, 0, b, 0, c, a, 0.0f, b, 1.0f), "matmul_bwd_a");
    assert_refusal(ctx, rl_add(ctx, x, y, y), "add");
    assert_refusal(ctx, rl_axpy(ctx, 2.0f, x, y), "axpy");
    assert_refusal(ctx, rl_fill(ctx, y, 1.0f), "fill");
    assert_refusal(ctx, rl_gelu_forward(ctx, x, y), "gelu");
    assert_refusal(ctx, rl_bias_add(ctx, y, g), "bias_add");
    assert_refusal(ctx, rl_layernorm_forward(ctx, x, g, NULL, 1e-5f, y, mu, rs), "layernorm");
    assert_refusal(ctx, rl_softmax_forward(ctx, x, y), "softmax");
    assert_refusal(ctx, rl_cross_entropy(ctx, x, targets, 1.0f, NULL, &loss), "cross_entropy");
    assert_refusal(ctx, rl_mse_loss(ctx, x, y, 1.0f, NULL, &loss), "mse_loss");
    assert_refusal(ctx, rl_sum(ctx, x, &s), "sum");
    assert_refusal(ctx, rl_sgd_step(ctx, 0.1f, x, y, NULL), "sgd");
    rl_adamw_cfg cfg = rl_adamw_defaults();
    assert_refusal(ctx, rl_adamw_step(ctx, &cfg, 1, x, y, NULL, x, y), "adamw");
    /* nothing was written: the host memory behind the fakes still holds zeros */
    a->device = RL_CPU;
    for (int64_t i = 0; i < a->numel; i++)
        ck_assert(rl_tensor_get(a, i) == 0.0f);
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(test_mixed_devices_refused)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_tensor *d = fake_gpu(ctx, "dev", 4, 4);
    rl_tensor *h = rl_tensor_new(ctx, "host", RL_F32, RL_MEM_OTHER, 2, (int64_t[]){ 4, 4 }, NULL);
    int rc = rl_add(ctx, h, d, h);
    ck_assert_int_eq(rc, RL_ERR_ARG);
    ck_assert_msg(strstr(rl_last_error(ctx), "one device"), "%s", rl_last_error(ctx));
    rc = rl_matmul(ctx, h, 0, d, 0, h, 0.0f);
    ck_assert_int_eq(rc, RL_ERR_ARG);
    ck_assert_msg(strstr(rl_last_error(ctx), "'dev' is on the GPU"), "%s", rl_last_error(ctx));
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(test_gpu_entry_points_refuse_on_sim)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_tensor *x = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_OTHER, 2, (int64_t[]){ 4, 4 }, NULL);
    double t = 0;
    ck_assert_int_eq(rl_backend_has_gpu(ctx), 0);
    ck_assert_int_eq(rl_backend_has_gpu(NULL), 0);
    ck_assert_int_eq(rl_backend_lincomb(ctx, 1.0f, 0.0f, NULL, 0.0f, NULL, x), RL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(rl_last_error(ctx), "GPU") || strstr(rl_last_error(ctx), "CUDA"), "%s", rl_last_error(ctx));
    ck_assert_int_eq(rl_backend_sum(ctx, x, 1, &t), RL_ERR_UNSUPPORTED);
    ck_assert_int_eq(rl_backend_layernorm_forward(ctx, x, x, NULL, 1e-5f, x, x, x), RL_ERR_UNSUPPORTED);
    ck_assert_int_eq(rl_backend_attention_forward(ctx, x, x, x, 1, x, x), RL_ERR_UNSUPPORTED);
    char why[200] = "";
    rl_backend_no_gpu_reason(ctx, why, sizeof why);
    ck_assert_msg(strlen(why) > 10 && !strchr(why, '\n'), "%s", why);
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(test_timeline_hooks_are_noops_on_sim)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    ck_assert_int_eq(rl_backend_timer_start(ctx, 0), -1);
    ck_assert(rl_backend_stream_now(ctx, 0) < 0);
    rl_backend_op_begin(ctx, "x");
    ck_assert_int_eq(rl_backend_op_end(ctx), -1);
    ck_assert_int_eq(rl_backend_delay(ctx, "straggler", 0.001), -1);
    rl_backend_timer_stop(ctx, 0, -1);
    rl_backend_timer_drop(ctx, -1);
    rl_backend_timeline_resolve(ctx);
    rl_backend_nvtx_push(ctx, "x");
    rl_backend_nvtx_pop(ctx);
    /* the virtual clock is the stream time on sim, and ops still advance it */
    double t0 = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    rl_tensor *x = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_OTHER, 2, (int64_t[]){ 64, 64 }, NULL);
    rl_tensor *y = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_OTHER, 2, (int64_t[]){ 64, 64 }, NULL);
    ck_assert_int_eq(rl_matmul(ctx, x, 0, x, 0, y, 0.0f), 0);
    double t1 = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    ck_assert(t1 > t0);
    rl_event ev = rl_event_record(ctx, RL_STREAM_COMPUTE);
    ck_assert(ev.vtime == t1);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* A sim rank's step: a step's duration is its compute stream's virtual time, as before. */
static int step_rank(rl_ctx *ctx, void *arg)
{
    double *out = arg;
    rl_tensor *x = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_OTHER, 2, (int64_t[]){ 128, 128 }, NULL);
    rl_tensor *y = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_OTHER, 2, (int64_t[]){ 128, 128 }, NULL);
    rl_step_begin(ctx, 0);
    double t0 = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    rl_matmul(ctx, x, 0, x, 0, y, 0.0f);
    rl_gelu_forward(ctx, y, y);
    double t1 = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    double d = rl_step_end(ctx);
    if (ctx && rl_rank(ctx) == 0) {
        out[0] = t1 - t0;
        out[1] = d;
    }
    return 0;
}

START_TEST(test_sim_step_time_is_virtual)
{
    rl_opts o = rl_test_opts(2, NULL);
    double got[2] = { -1, -1 };
    rl_trace *t = NULL;
    ck_assert_int_eq(rl_launch(&o, step_rank, got, &t), 0);
    ck_assert(got[0] > 0);
    ck_assert_msg(fabs(got[1] - got[0]) < 1e-15, "step %g vs stream %g", got[1], got[0]);
    size_t ops = 0;
    for (size_t i = 0; i < t->n; i++)
        ops += t->ev[i].cat == RL_CAT_COMPUTE && t->ev[i].rank == 0;
    ck_assert_int_eq((int)ops, 2);
    rl_trace_free(t);
}
END_TEST

Suite *gpu_ops_suite(void)
{
    Suite *s = suite_create("gpu_ops");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_device_tensors_refused_without_gpu);
    tcase_add_test(tc, test_mixed_devices_refused);
    tcase_add_test(tc, test_gpu_entry_points_refuse_on_sim);
    tcase_add_test(tc, test_timeline_hooks_are_noops_on_sim);
    tcase_add_test(tc, test_sim_step_time_is_virtual);
    suite_add_tcase(s, tc);
    return s;
}
