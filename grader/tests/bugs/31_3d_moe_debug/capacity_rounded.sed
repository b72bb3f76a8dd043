# Planted bug: the capacity is rounded to the nearest integer instead of up: C = round(T·k/E·cf).
# step: 31.3
# caught-by: capacity, dropping and dispatch order = moe.h's plan
s/p->capacity = (int64_t)ceil(/p->capacity = (int64_t)llround(/
