# Correct variant: ring attention passes the K/V blocks the other way round the ring (send to
# r-1, receive from r+1; the block of step j comes from rank r+j) — the same on every rank.
# step: 30.5
s|!rl_send(cp, kv\[cur\]\[0\], (r + 1) % n, 0) \|\| !rl_send(cp, kv\[cur\]\[1\], (r + 1) % n, 0)|!rl_send(cp, kv[cur][0], (r + n - 1) % n, 0) \|\| !rl_send(cp, kv[cur][1], (r + n - 1) % n, 0)|
s|!rl_recv(cp, kv\[1 - cur\]\[0\], (r + n - 1) % n, 0) \|\| !rl_recv(cp, kv\[1 - cur\]\[1\], (r + n - 1) % n, 0)|!rl_recv(cp, kv[1 - cur][0], (r + 1) % n, 0) \|\| !rl_recv(cp, kv[1 - cur][1], (r + 1) % n, 0)|
s|^        int src = (r - step + n) % n; /\* whose block arrived \*/|        int src = (r + step) % n; /* whose block arrived */|
