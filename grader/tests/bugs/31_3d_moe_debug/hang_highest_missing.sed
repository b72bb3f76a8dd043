# Planted bug: with several ranks missing from the stuck seq, diagnose() names the highest of them.
# step: 31.4
# caught-by: hidden hang scenarios: culprit rank and seq
s/} else if (member\[r\] \&\& hi\[r\] < s \&\& absent < 0) {/} else if (member[r] \&\& hi[r] < s) {/
