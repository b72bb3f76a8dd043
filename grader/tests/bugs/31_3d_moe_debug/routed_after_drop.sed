# Planted bug: routed[] counts only the slots that were kept (after dropping) instead of every slot
# routed to the expert.
# step: 31.3
# caught-by: capacity, dropping and dispatch order = moe.h's plan
# caught-by: dropped tokens follow the capacity rule
s/^        p->routed\[e\]++;$/        p->routed[e] += p->kept[e] < p->capacity;/
