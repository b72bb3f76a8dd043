# Planted bug: the hook does not refuse a parameter marked ready twice in one backward; the
# second mark counts its bucket down again.
# step: 28.3
# caught-by: a parameter marked ready twice is refused
/^    if (k.marked\[i\])$/,+1d
