# Correct variant: the cap is compared in elements, rounded up (numel >= ceil(cap / size)),
# which is the same rule as bytes >= cap.
# step: 28.2
s|if (cur->bytes >= limit) {|if (cur->numel >= (limit + (int64_t)rl_dtype_size(params[i].dtype) - 1) / (int64_t)rl_dtype_size(params[i].dtype)) {|
