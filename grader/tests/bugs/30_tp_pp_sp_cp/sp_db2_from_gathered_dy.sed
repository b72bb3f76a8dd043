# Planted bug: under sequence parallelism c's gradient is summed over the gathered dy (the
# whole sequence, as in the TP backward) instead of this rank's rows: db2 is t times the
# partial sum the optimizer's all-reduce expects.
# step: 30.3
# caught-by: gradient shards; db2 over this rank's rows
s|^        rc = rl_bias_backward(m->ctx, dy, m->db2);  /\* this rank's rows only: a partial sum \*/|        rc = 0;|
s|^        rc = mlp_local_backward(m, dyg, dxp);|        rc = rl_bias_backward(m->ctx, dyg, m->db2);\n    if (!rc)\n        rc = mlp_local_backward(m, dyg, dxp);|
