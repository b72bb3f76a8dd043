# Correct variant: the merge walks rows outer and heads inner and writes the new lse as
# max + log1p(exp(-|lse - lse_b|)) (the form common/attn_blocks.c uses).
# step: 30.5
/^        for (int hh = 0; hh < n_heads; hh++)$/{
N
s|^        for (int hh = 0; hh < n_heads; hh++)\n            for (int64_t i = 0; i < sq; i++) {$|        for (int64_t i = 0; i < sq; i++) /* rows outer, heads inner */\n            for (int hh = 0; hh < n_heads; hh++) {|
}
s|^                double lnew = mx + log(exp(l - mx) + exp(lb - mx));$|                double lnew = mx + log1p(exp(-fabs(l - lb)));|
