# Planted bug: the spike detector scans step, then rank, then layer: at one step it reports a lower rank's
# anomaly in a later layer before a higher rank's in an earlier layer.
# step: 31.4
# caught-by: spike rules: scan order, the last 5 values, no history at step 0
s|^        for (int l = 0; l < layers; l++)$|        for (int r = 0; r < ranks; r++)|
s|^            for (int r = 0; r < ranks; r++) {$|            for (int l = 0; l < layers; l++) {|
