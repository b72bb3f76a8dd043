# Planted bug: the ring steps are not grouped; to avoid the deadlock, even ranks send first
# and odd ranks receive first (the MPI habit). Right sums, right peers and bytes, but each
# step's send and receive run one after the other: every step takes twice as long.
# step: 28.1
# caught-by: send and recv of a step run together (alpha-beta time)
/^    rl_group_start(ctx);$/d
s|^    int g = rl_group_end(ctx);$|    int g = 0;|
s|^    if (s && !rl_send(comm, s, (r + 1) % n, 0))$|    if (r % 2 == 1 \&\& d \&\& !rl_recv(comm, d, (r + n - 1) % n, 0))\n        rc_ = RL_ERR_ARG;\n&|
s|^    if (d && !rl_recv(comm, d, (r + n - 1) % n, 0))$|    if (r % 2 == 0 \&\& d \&\& !rl_recv(comm, d, (r + n - 1) % n, 0))|
