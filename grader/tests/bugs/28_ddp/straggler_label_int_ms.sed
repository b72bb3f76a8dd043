# Planted bug: the straggler row's label prints the delay as a whole number of milliseconds
# ("+0 ms" for a 0.5 ms straggler).
# step: 28.5
# caught-by: the sweep produces a table
s|"straggler rank %d +%g ms", cfg->straggler_rank, cfg->straggler_ms);|"straggler rank %d +%d ms", cfg->straggler_rank, (int)cfg->straggler_ms);|
