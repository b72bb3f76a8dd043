# Planted bug: the ring's scratch tensor is charged to RL_MEM_GRAD (like the buffer it reduces)
# instead of RL_MEM_COMM: right sums and sizes, but the memory view books communication
# buffers as gradients.
# step: 28.1
# caught-by: scratch: one RL_MEM_COMM tensor of ceil(count/n) elements
s|"ring_recv", buf->dtype, RL_MEM_COMM,|"ring_recv", buf->dtype, RL_MEM_GRAD,|
