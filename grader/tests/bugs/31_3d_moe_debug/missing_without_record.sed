# Planted bug: a member without a record at a seq counts as missing even when its records start above
# it (older calls rolled out of its flight recorder): it blames a rank that already passed.
# step: 31.4
# caught-by: hidden hang scenarios: culprit rank and seq
s/} else if (member\[r\] \&\& hi\[r\] < s \&\& absent < 0) {/} else if (member[r] \&\& absent < 0) {/
