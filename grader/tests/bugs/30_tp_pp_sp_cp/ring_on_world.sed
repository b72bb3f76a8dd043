# Planted bug: ring attention's sends and receives go to the world communicator with the
# neighbours' CP ranks as peers: right while CP spans every rank, wrong (blocks from the wrong
# ranks, or a deadlock) inside a CP group of a larger world.
# step: 30.5
# caught-by: on a sub-communicator: two CP groups, the ring on the group (trace)
s|!rl_send(cp, kv\[cur\]\[0\]|!rl_send(rl_comm_world(ctx), kv[cur][0]|
s|!rl_send(cp, kv\[cur\]\[1\]|!rl_send(rl_comm_world(ctx), kv[cur][1]|
s|!rl_recv(cp, kv\[1 - cur\]\[0\]|!rl_recv(rl_comm_world(ctx), kv[1 - cur][0]|
s|!rl_recv(cp, kv\[1 - cur\]\[1\]|!rl_recv(rl_comm_world(ctx), kv[1 - cur][1]|
