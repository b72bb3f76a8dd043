# Planted bug: on the never-ready error finalize resets the reducer but does not wait for the
# buckets it launched: their all-reduces still run into the bucket buffers after it returned.
# step: 28.3
# caught-by: after that error: launched buckets waited for, reducer reset
/^        for (int j = 0; j < b; j++) \/\* the buckets launched before it finish before the reset \*\/$/,+1d
