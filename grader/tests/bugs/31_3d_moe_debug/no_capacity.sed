# Planted bug: dispatch ignores the capacity: no slot is ever dropped.
# step: 31.3
# caught-by: dropped tokens follow the capacity rule
s|        if (p->kept\[e\] < p->capacity)|        if (1)|
