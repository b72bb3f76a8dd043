# Planted bug: plan_enumerate tries every tp dividing G, the heads and h, not only powers of two
# (calc.h: "TP a power of two").
# step: 31.5
# caught-by: ranked plans = calc.h planner on 5 model/cluster pairs
s/for (int t = 1; t <= G; t \*= 2) {/for (int t = 1; t <= G; t++) {/
