# Correct variant: the ring runs the other way round — each step sends to the left
# neighbour and receives from the right one, with the chunk indices mirrored.
# step: 28.1
s|rl_send(comm, s, (r + 1) % n, 0)|rl_send(comm, s, (r + n - 1) % n, 0)|
s|rl_recv(comm, d, (r + n - 1) % n, 0)|rl_recv(comm, d, (r + 1) % n, 0)|
s|int sc = ring_mod(r - s, n), rcv = ring_mod(r - s - 1, n);|int sc = ring_mod(r + s, n), rcv = ring_mod(r + s + 1, n);|
s|int sc = ring_mod(r + 1 - s, n), rcv = ring_mod(r - s, n);|int sc = ring_mod(r - 1 + s, n), rcv = ring_mod(r + s, n);|
