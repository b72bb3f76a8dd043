# Planted bug: pp_execute allocates its output buffer under RL_MEM_ACTIVATION instead of
# RL_MEM_COMM: the memory view counts a p2p buffer as a saved activation.
# step: 30.4
# caught-by: executor memory: buffers under RL_MEM_COMM, nothing left
s|rl_tensor_new(ctx, "p2p_out", RL_F32, RL_MEM_COMM, 2, shape, "b,h")|rl_tensor_new(ctx, "p2p_out", RL_F32, RL_MEM_ACTIVATION, 2, shape, "b,h")|
