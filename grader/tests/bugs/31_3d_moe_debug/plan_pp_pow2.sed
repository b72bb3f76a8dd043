# Planted bug: plan_enumerate tries only powers of two for pp (calc.h: "PP dividing G/TP and L").
# step: 31.5
# caught-by: ranked plans = calc.h planner on 5 model/cluster pairs
s/for (int p = 1; p <= G \/ t; p++) {/for (int p = 1; p <= G \/ t; p *= 2) {/
