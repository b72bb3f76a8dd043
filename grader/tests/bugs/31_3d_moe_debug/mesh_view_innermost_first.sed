# Planted bug: the mesh view is recorded innermost first ({"tp", "pp", "dp"}): the sizes still
# multiply to the world, but the view places every rank in the wrong cell.
# step: 31.1
# caught-by: one split per kind in mesh_dim order; the mesh view recorded
/^        rl_ctx_set_mesh(ctx, n, names, sizes);$/i\
        for (int i = 0; i < n / 2; i++) { /* innermost first */\
            const char *tn = names[i];\
            int ts = sizes[i];\
            names[i] = names[n - 1 - i], sizes[i] = sizes[n - 1 - i];\
            names[n - 1 - i] = tn, sizes[n - 1 - i] = ts;\
        }
