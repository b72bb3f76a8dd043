# Correct variant: plan_enumerate offers ZeRO stages 0..3 for every layout and lets
# plan_candidate refuse stages > 0 at dp = 1 (lab31.h: RL_ERR_ARG there), skipping refusals.
# step: 31.5
s/for (int z = 0; z < (d > 1 ? 4 : 1); z++) {/for (int z = 0; z < 4; z++) {/
