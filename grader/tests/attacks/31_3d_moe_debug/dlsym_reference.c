/* Attack: looking a reference up by name at run time.
 * refused: dlsym, which is not among the functions a lab file may use */
#include <dlfcn.h>
#include "lab31.h"
double moe_aux_loss(const float *probs, const int *expert, int64_t tokens, int experts, int top_k, double alpha)
{
    double (*f)(const float *, const int *, int64_t, int, int, double) =
        (double (*)(const float *, const int *, int64_t, int, int, double))dlsym(RTLD_DEFAULT, "rl_moe_aux_loss");
    return f ? f(probs, expert, tokens, experts, top_k, alpha) : 0;
}
