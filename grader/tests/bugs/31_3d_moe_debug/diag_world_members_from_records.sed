# Planted bug: the members of "world" are taken from the records like any other communicator's, so a
# rank that hangs before its first collective is no member and the hang is blamed on nobody.
# step: 31.4
# caught-by: hidden hang scenarios: culprit rank and seq
s/hi\[r\] = -1, member\[r\] = strcmp(comm, "world") == 0;/hi[r] = -1, member[r] = 0;/
