# Correct variant: ddp_train_step calls ddp_finalize_backward after every micro-step's backward
# (inside no_sync it returns 0 at once; after the last one it waits and averages) instead of
# once after the loop.
# step: 28.4
/^            rc = rl_model_backward(r->model, 1.0f \/ (float)accum_steps);$/a\
        if (!rc)\
            rc = ddp_finalize_backward(r); /* inside no_sync: returns 0 at once */
/^    if (!rc)$/{
N
N
N
s|^    if (!rc)\n        rc = ddp_finalize_backward(r);\n    else\n        ddp_reducer_reset(r);$|    if (rc)\n        ddp_reducer_reset(r);|
}
