# Planted bug: the hook's piece of grad_shard is numel / n long instead of U->shard: right
# whenever n divides the unit, wrong (a refused reduce-scatter) when the unit is padded.
# step: 29.3
# caught-by: parameters = baseline, gradients ready out of order
s|rl_tensor \*mine = rl_tensor_slice(e->grad_shard, U->shard_off, U->shard);|rl_tensor *mine = rl_tensor_slice(e->grad_shard, U->shard_off, U->numel / e->n);|
