# Planted bug: the hook ignores no_sync: it marks and launches buckets in every micro-step;
# the next micro-step then marks the same parameters again (and all-reduces K times).
# step: 28.4
# caught-by: 3 micro-steps = one rank's 3x batch
# caught-by: one collective set per 4 micro-steps
/^    if (!r->require_sync)$/{
N
/no_sync: backward only accumulates/d
}
