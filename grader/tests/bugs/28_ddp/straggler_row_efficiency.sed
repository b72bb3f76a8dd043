# Planted bug: the straggler row also gets an efficiency and a speedup (against world 1),
# fields ddp.h reserves for the world rows (0 elsewhere, printed as '-').
# step: 28.5
# caught-by: the sweep produces a table
/^                       &out->rows\[out->nrows++\]);$/a\
        ddp_sweep_row *sr = &out->rows[out->nrows - 1];\
        if (!st) { /* the straggler's slowdown as an efficiency */\
            sr->efficiency = out->rows[world1].stats.step_time / sr->stats.step_time;\
            sr->speedup = sr->ranks * sr->efficiency;\
        }
