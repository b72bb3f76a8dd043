# Planted bug: 1F1B with the wrong warm-up (r forwards on stage r instead of p-r-1): stage 0
# waits for B0's gradient while stage 1 waits for F1's activation — a deadlock, caught by
# rl_pp_validate before anything runs (no hang).
# step: 30.4
# caught-by: schedules validate (dependencies, no deadlock)
# caught-by: op lists in the handout's order
s|            int warm = p - r - 1 < m ? p - r - 1 : m;|            int warm = r < m ? r : m;|
