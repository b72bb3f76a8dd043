# Planted bug: the scratch tensor is as large as the whole buffer (count elements) instead of
# one chunk, ceil(count/n): right sums, (n-1)/n of the buffer more memory on every GPU.
# step: 28.1
# caught-by: scratch: one RL_MEM_COMM tensor of ceil(count/n) elements
s|RL_MEM_COMM, (count + n - 1) / n);|RL_MEM_COMM, count);|
