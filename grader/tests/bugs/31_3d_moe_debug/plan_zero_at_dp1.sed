# Planted bug: plan_candidate accepts a ZeRO stage > 0 at dp = 1 (the enumerator never asks for one, so
# nothing else notices).
# step: 31.5
# caught-by: invalid candidates refused (ZeRO > 0 at dp = 1 too)
s|^    if (d == 1 \&\& z > 0)$|    if (d == 1 \&\& z > 3)|
