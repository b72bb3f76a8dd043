/* train.c — `ringlab train --model mlp|transformer|moe --steps N`: one-rank training of a
 * model from common/model.h on its synthetic task, printing the loss as it falls. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "model.h"
#include "optnum.h"
#include "ringlab.h"

typedef struct {
    rl_model_kind kind;
    int steps, batch, every, bf16;
    float lr;
    float first_loss, last_loss;
} train_args;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ringlab train [--model mlp|transformer|moe] [--steps N] [--lr LR] [--batch B] [--every K]\n"
            "                     [--bf16] [common options]\n"
            "One-rank training on the synthetic task of the model (mlp, moe: regression on a random\n"
            "teacher network; transformer: a second-order Markov token task), AdamW, printing the loss\n"
            "every K steps and a last line 'initial loss X, final loss Y (Z× lower)'; exit 1 when the\n"
            "training diverged (a final loss over 4× the first, or not a number).\n"
            "  --model     mlp (default), transformer or moe\n"
            "  --steps     training steps (default 300)\n"
            "  --lr        AdamW learning rate (default 3e-3)\n"
            "  --batch     samples per step (default 32; transformer 16)\n"
            "  --every     print every K steps (default steps/10)\n"
            "  --bf16      bf16 parameters and gradients (fp32 master weights, m and v)\n\n");
    rl_opts_usage(f, NULL);
}

static int train_rank(rl_ctx *ctx, void *arg)
{
    train_args *a = arg;
    rl_model_config cfg = rl_model_config_default(a->kind);
    cfg.seed = rl_ctx_seed(ctx);
    if (a->bf16)
        cfg.param_dtype = cfg.grad_dtype = RL_BF16;
    rl_model *m = rl_model_new(ctx, &cfg);
    rl_data *data = !m ? NULL
                    : a->kind == RL_MODEL_TRANSFORMER ? rl_data_tokens(ctx, cfg.vocab, cfg.seq, cfg.seed + 100)
                                                      : rl_data_regression(ctx, cfg.hidden, cfg.out_dim, cfg.seed + 100);
    rl_adamw_cfg ocfg = rl_adamw_defaults();
    ocfg.lr = a->lr;
    rl_model_optim *opt = data ? rl_model_adamw_new(m, ocfg) : NULL;
    int rc = opt ? 0 : RL_ERR_ARG;
    if (rc)
        fprintf(stderr, "ringlab train: %s\n", rl_last_error(ctx));
    if (!rc)
        printf("model %s: %lld parameters (%s), %d layers, hidden %d; batch %d; %.3g GFLOP per forward\n",
               rl_model_kind_name(a->kind), (long long)rl_model_numel(m), rl_dtype_name(cfg.param_dtype), cfg.layers,
               cfg.hidden, a->batch, rl_model_forward_flops(m, a->batch) * 1e-9);
    rl_batch batch = { 0 };
    for (int step = 0; !rc && step < a->steps; step++) {
        float loss = 0;
        rl_step_begin(ctx, step);
        rc = rl_data_shard(data, ctx, step, 0, a->batch, &batch);
        if (!rc)
            rc = rl_model_zero_grad(m);
        if (!rc)
            rc = rl_model_forward(m, &batch, &loss);
        if (!rc)
            rc = rl_model_backward(m, 1.0f);
        if (!rc)
            rc = rl_model_adamw_step(opt);
        rl_step_end(ctx);
        if (rc) {
            fprintf(stderr, "ringlab train: step %d: %s\n", step, rl_last_error(ctx));
            break;
        }
        if (step == 0)
            a->first_loss = loss;
        a->last_loss = loss;
        if (step % a->every == 0 || step == a->steps - 1)
            printf("step %5d  loss %.5f\n", step, loss);
    }
    rl_batch_free(&batch);
    rl_model_optim_free(opt);
    rl_data_free(data);
    rl_model_free(m);
    return rc;
}

int rl_cmd_train(int argc, char **argv)
{
    rl_opts opts;
    rl_opts_init(&opts);
    opts.ranks = 1;
    char err[256];
    if (rl_opts_parse(&opts, &argc, argv, err, sizeof err)) {
        fprintf(stderr, "ringlab train: %s\n", err);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (rl_opts_check_faults(&opts, 0, "ringlab train")) { /* none would take effect: say so */
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (opts.tui) {
        fprintf(stderr, "ringlab train: --tui: train prints its losses and has no live view; write a trace with "
                "--trace FILE and open it with ringlab view FILE (or see ringlab view --demo --tui)\n");
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    train_args a = { RL_MODEL_MLP, 300, 0, 0, 0, 3e-3f, 0, 0 };
    static const rl_optnum_decl nums[] = {
        { "--steps", 1, 10000000, 1 }, { "--batch", 1, 65536, 1 }, { "--every", 1, 10000000, 1 }, { "--lr", 1e-9, 10, 0 },
    };
    enum { NNUMS = (int)(sizeof nums / sizeof nums[0]) };
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double num;
        int k;
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            usage(stdout);
            return RL_EXIT_OK;
        } else if (strcmp(o, "--bf16") == 0) {
            a.bf16 = 1;
        } else if (v && strcmp(o, "--model") == 0) {
            int k = rl_model_kind_parse(v);
            if (k < 0) {
                fprintf(stderr, "ringlab train: unknown model '%s'; use mlp, transformer or moe\n", v);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            a.kind = (rl_model_kind)k, i++;
        } else if (rl_opts_list_numbers(o, nums, NNUMS)) {
            return RL_EXIT_OK;
        } else if ((k = rl_optnum_find(nums, NNUMS, o, v, &num, err, sizeof err)) != -1) {
            if (k == -2) {
                fprintf(stderr, "ringlab train: %s\n", err);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            if (k == 0)
                a.steps = (int)num;
            else if (k == 1)
                a.batch = (int)num;
            else if (k == 2)
                a.every = (int)num;
            else
                a.lr = (float)num;
            i++;
        } else {
            fprintf(stderr, "ringlab train: unknown option or missing value: '%s'\n", o);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
    }
    if (a.batch <= 0)
        a.batch = a.kind == RL_MODEL_TRANSFORMER ? 16 : 32;
    if (a.every <= 0)
        a.every = a.steps >= 10 ? a.steps / 10 : 1;
    if (opts.ranks != 1 && !opts.quiet)
        fprintf(stderr, "ringlab train: trains on one rank; ignoring --ranks %d\n", opts.ranks);
    opts.ranks = 1;
    int rc = rl_launch(&opts, train_rank, &a, NULL);
    if (rc)
        return rl_exit_status(rc);
    if (!isfinite(a.last_loss) || a.last_loss > 4 * a.first_loss) {
        printf("initial loss %.5f, final loss %.5g: the training diverged (try a smaller --lr)\n", a.first_loss,
               a.last_loss);
        return RL_EXIT_FAIL;
    }
    if (a.last_loss > a.first_loss) /* (a few noisy steps can end a little higher) */
        printf("initial loss %.5f, final loss %.5f (%.2f× higher)\n", a.first_loss, a.last_loss,
               a.first_loss > 0 ? a.last_loss / a.first_loss : 0.0);
    else
        printf("initial loss %.5f, final loss %.5f (%.1f× lower)\n", a.first_loss, a.last_loss,
               a.last_loss > 0 ? a.first_loss / a.last_loss : 0.0);
    return RL_EXIT_OK;
}
