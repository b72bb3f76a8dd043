# Planted bug: on the never-ready error finalize returns at once: the buckets it launched are
# still in flight, and the reducer keeps this backward's marks and counts, so the next
# backward fails with "marked ready twice".
# step: 28.3
# caught-by: after that error: launched buckets waited for, reducer reset
/^        for (int j = 0; j < b; j++) \/\* the buckets launched before it finish before the reset \*\/$/,/^        ddp_reducer_reset(r);$/d
