# Correct variant: zero3_pre_backward allocates the unit's gradient bucket (zero_pre_backward)
# before gathering the unit's parameters instead of after waiting for them.
# step: 29.4
/^int zero3_pre_backward/,/^}/{
s|^    int rc = zero3_gather(e, u);$|    int rc = zero_pre_backward(mu, arg);\n    if (!rc)\n        rc = zero3_gather(e, u);|
/^    if (!rc)$/{
N
/zero_pre_backward/d
}
}
