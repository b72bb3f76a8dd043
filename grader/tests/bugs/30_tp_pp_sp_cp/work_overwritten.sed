# Planted bug: ring attention sets *work to its own block's count instead of adding to it:
# right whenever the caller starts from 0.
# step: 30.5
# caught-by: causal work: the mask's count, accumulated, balanced
s|^        \*work += rl_cp_causal_work(pos, sl, pos, sl);|        *work = rl_cp_causal_work(pos, sl, pos, sl);|
