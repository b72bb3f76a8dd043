/* Attack: an indirect function, whose resolver runs while the grader is being loaded.
 * refused: indirect function */
#include "mp.h"
static rl_pp_schedule *impl(rl_pp_kind kind, int p, int m, int v, char *err, size_t errlen)
{
    (void)kind, (void)p, (void)m, (void)v, (void)err, (void)errlen;
    return NULL;
}
static void *resolve(void) { return (void *)impl; }
rl_pp_schedule *pp_build_schedule(rl_pp_kind kind, int p, int m, int v, char *err, size_t errlen)
    __attribute__((ifunc("resolve")));
