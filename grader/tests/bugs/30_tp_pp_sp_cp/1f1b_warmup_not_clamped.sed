# Planted bug: the 1F1B warm-up is p-r-1 forwards without min(., m): with m < p-1 stage 0
# lists forwards of micro-batches that do not exist (fine for every m >= p-1).
# step: 30.4
# caught-by: schedules validate (dependencies, no deadlock)
# caught-by: op lists in the handout's order
s|^            int warm = p - r - 1 < m ? p - r - 1 : m;|            int warm = p - r - 1;|
