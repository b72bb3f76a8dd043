# Planted bug: tied duplicates take their bucket and offset from the entry they point at, in a
# pass from the last parameter to the first, one hop only: a duplicate of a duplicate reads
# an entry that has not been resolved yet.
# step: 28.2
# caught-by: tied parameter counted once
/^    for (int i = 0; i < nparams; i++) {$/{
N
s|^    for (int i = 0; i < nparams; i++) {\n        int o = i;$|    for (int i = nparams - 1; i >= 0; i--) {\n        int o = i;|
}
s|^        while (params\[o\].tied_to >= 0)$|        if (params[o].tied_to >= 0)|
