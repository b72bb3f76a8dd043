# Correct variant: the dispatch order built in one pass over the slots (a counting sort: each
# expert's first row from the prefix sums of the kept counts) instead of one pass per expert.
# step: 31.3
/\/\* dispatch order: by expert, arrival order inside \*\//,/p->nsend = n;/{
/^    for (int e = 0; e < experts; e++) {$/i\
    for (int e = 0; e < experts; e++)\
        seen[e] = e ? seen[e - 1] + p->kept[e - 1] : 0; /* first row of expert e */\
    for (int e = 0; e < experts; e++)\
        p->expert_counts[e] = p->kept[e], n += p->kept[e];\
    {\
        int64_t *used = calloc((size_t)experts, sizeof *used);\
        if (!used) {\
            free(seen);\
            return RL_ERR_NOMEM;\
        }\
        for (int64_t s = 0; s < S; s++)\
            if (used[expert[s]] < p->kept[expert[s]])\
                p->send_slot[seen[expert[s]] + used[expert[s]]++] = s;\
        free(used);\
    }\
    if (0)
}
