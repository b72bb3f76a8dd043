# Correct variant: top-k by sorting all E experts (a stable insertion sort by probability,
# descending) and taking the first k, instead of k selection passes; ties keep the lower id.
# step: 31.3
/^        double chosen = 0;$/a\
        {\
            int *order = malloc(sizeof(int) * (size_t)experts);\
            if (!order)\
                return RL_ERR_NOMEM;\
            for (int i = 0; i < experts; i++) {\
                int pos = i;\
                while (pos > 0 && p[order[pos - 1]] < p[i]) {\
                    order[pos] = order[pos - 1];\
                    pos--;\
                }\
                order[pos] = i;\
            }\
            for (int j = 0; j < top_k; j++) {\
                expert[t * top_k + j] = order[j];\
                chosen += p[order[j]];\
            }\
            free(order);\
        }\
        if (0)
