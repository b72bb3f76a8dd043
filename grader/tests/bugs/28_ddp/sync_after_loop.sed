# Planted bug: every micro-step runs inside no_sync, and after the loop the step announces
# every parameter to the hook itself, then finalizes: right gradients and one all-reduce per
# bucket, but they all start after the last backward — nothing overlaps.
# step: 28.4
# caught-by: the last micro-step's backward overlaps the all-reduces
s|r->require_sync = k == accum_steps - 1; /\* no_sync for all but the last micro-step \*/|r->require_sync = 0; /* accumulate only; sync once after the loop */|
/^    r->require_sync = 1;$/a\
    for (int i = r->model->nparams - 1; i >= 0 \&\& !rc; i--)\
        rc = ddp_grad_ready(\&r->model->params[i], r);
