# Planted bug: the interleaved warm-up (p-r-1)*2 + (v-1)*p is not capped at m*v: with m = p
# (p >= 3) stage 0 lists more forwards than there are.
# step: 30.4
# caught-by: schedules validate (dependencies, no deadlock)
# caught-by: op lists in the handout's order
/^            if (warm > total)$/,/^                warm = total;$/d
