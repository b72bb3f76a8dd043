# Planted bug: ddp_assign_buckets refuses bad caps and mixed dtypes but accepts negative
# sizes and a tied_to that is not -1 or an earlier index.
# step: 28.2
# caught-by: negative sizes, bad tied_to, mixed dtypes refused
/^        if (params\[i\].numel < 0)$/,+2d
/^        if (params\[i\].tied_to < -1 || params\[i\].tied_to >= i)$/,+2d
