# Planted bug: diagnose() blames the first rank waiting inside the stuck collective instead of
# the rank that never arrived.
# step: 31.4
# caught-by: hidden hang scenarios: culprit rank and seq
s|                present++;|                present++, absent = absent < 0 ? r : absent;|
s|                absent = r; /\* the missing rank: it never got this far \*/|                (void)0;|
