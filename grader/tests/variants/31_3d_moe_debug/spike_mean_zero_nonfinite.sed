# Correct variant: for a non-finite norm detect_spike leaves recent_mean at 0 (lab31.h: for a
# non-finite norm recent_mean may be any value).
# step: 31.4
s/o->value = v, o->recent_mean = mean;/o->value = v, o->recent_mean = isfinite(v) ? mean : 0;/
