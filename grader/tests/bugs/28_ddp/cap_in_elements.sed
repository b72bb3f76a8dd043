# Planted bug: the cap is turned into elements with an integer division (cap_bytes / size)
# and compared with the bucket's numel: a bucket a few bytes short of an odd cap closes early.
# step: 28.2
# caught-by: a bucket closes when it reaches its cap
s|if (cur->bytes >= limit) {|if (cur->numel >= limit / (int64_t)rl_dtype_size(params[i].dtype)) {|
