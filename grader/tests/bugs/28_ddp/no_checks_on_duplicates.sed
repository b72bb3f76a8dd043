# Planted bug: the size and dtype checks skip tied duplicates (they are not bucketed, so the
# code skips them before checking): a duplicate with a negative size or another dtype is
# accepted.
# step: 28.2
# caught-by: negative sizes, bad tied_to, mixed dtypes refused
/^        if (params\[i\].numel < 0)$/i\
        if (params[i].tied_to >= 0 && params[i].tied_to < i)\
            continue; /* a duplicate is bucketed with its original: nothing to check */
