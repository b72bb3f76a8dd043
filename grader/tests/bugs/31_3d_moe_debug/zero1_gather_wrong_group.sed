# Planted bug: the ZeRO-1 all-gather of the updated pieces runs on the TP group instead of the
# DP group: with tp = dp = 2 it "works" but hands every rank its TP partner's piece.
# step: 31.2
# caught-by: dp2 x pp2 x tp2 = one-rank run after 3 steps
s|rc = rl_all_gather(dp, p, e->flat_param, 0)|rc = rl_all_gather(e->comms.tp, p, e->flat_param, 0)|
