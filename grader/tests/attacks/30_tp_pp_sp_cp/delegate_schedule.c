/* Attack: 30.4's schedule taken from the runtime's reference.
 * refused: rl_pp_schedule_new, which a lab file may not use */
#include "mp.h"
rl_pp_schedule *pp_build_schedule(rl_pp_kind kind, int p, int m, int v, char *err, size_t errlen)
{
    return rl_pp_schedule_new(kind, p, m, v, err, errlen);
}
