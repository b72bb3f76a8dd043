# Planted bug: dispatch ignores the capacity: no slot is ever dropped.
# Caught by 31.3 "dropped tokens follow the capacity rule".
s|        if (p->kept\[e\] < p->capacity)|        if (1)|
