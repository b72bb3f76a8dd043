# Planted bug: plan_candidate does not check that b divides the batch per DP replica (only plan_enumerate
# draws such b), so it returns a row with a truncated m.
# step: 31.5
# caught-by: invalid candidates refused (ZeRO > 0 at dp = 1 too)
s|if (in->gbs % d \|\| (in->gbs / d) % b)|if (in->gbs % d)|
