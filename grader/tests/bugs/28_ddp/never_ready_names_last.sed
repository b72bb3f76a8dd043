# Planted bug: the never-ready error names the last bucket (nbuckets - 1) instead of the first
# bucket that was never launched (the next one to launch): right only when the missing gradient is in the
# last bucket.
# step: 28.3
# caught-by: a bucket that never becomes ready: finalize fails and names it
s|must take part in the loss", b,$|must take part in the loss", r->plan.nbuckets - 1,|
