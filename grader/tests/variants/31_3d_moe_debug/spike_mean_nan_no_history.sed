# Correct variant: with no finite earlier value the recent mean is NaN instead of 0 (only a
# non-finite norm can be found without history; lab31.h: its recent_mean may be any value).
# step: 31.4
s/double mean = have ? sum \/ have : 0;/double mean = have ? sum \/ have : NAN;/
