# Planted bug: top-k keeps the LAST of equally probable experts (>=): ties go to the higher id.
# step: 31.3
# caught-by: router: softmax, top-k, ties to the lower id
s/if (!used \&\& (best < 0 || p\[i\] > p\[best\]))/if (!used \&\& (best < 0 || p[i] >= p[best]))/
