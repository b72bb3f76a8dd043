# Correct variant: ZeRO-1's reduce-scatter averages over DP itself (RL_AVG) instead of RL_SUM
# followed by a ÷dp scale.
# step: 31.2
s/rc = rl_reduce_scatter(dp, e->flat_grad, g, RL_SUM, 0) ? 0 : RL_ERR_ARG;/rc = rl_reduce_scatter(dp, e->flat_grad, g, RL_AVG, 0) ? 0 : RL_ERR_ARG;/
s|rc = rl_scale(ctx, g, 1.0f / (float)D);|rc = 0;|
