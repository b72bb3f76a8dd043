# Planted bug: the mismatch test compares op and count but not the dtype: a rank calling with bf16
# while the others use f32 is not seen.
# step: 31.4
# caught-by: hidden mismatch scenarios
s/return strcmp(a->op, b->op) == 0 \&\& a->count == b->count \&\& strcmp(a->dtype, b->dtype) == 0;/return strcmp(a->op, b->op) == 0 \&\& a->count == b->count;/
