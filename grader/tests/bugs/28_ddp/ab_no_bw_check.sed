# Planted bug: the alpha-beta functions refuse n < 1, bytes < 0 and a NULL link, but not a link
# with bandwidth <= 0 (they return inf or a negative time).
# step: 28.5
# caught-by: alpha-beta arguments refused
s/if (n < 1 || bytes < 0 || !link || !seconds || !(link->bw > 0))/if (n < 1 || bytes < 0 || !link || !seconds)/
