# Planted bug: pp_execute never frees its three p2p buffers: every training step leaks
# 3 x [rows, h] of comm memory per stage.
# step: 30.4
# caught-by: executor memory: buffers under RL_MEM_COMM, nothing left
/^int pp_execute(/,/^}/{
/^    rl_tensor_free(out);$/d
/^    rl_tensor_free(inb\[0\]);$/d
/^    rl_tensor_free(inb\[1\]);$/d
}
