/* Attack: 31.4 handed to the reference analyzer the grader compares against.
 * refused: rl_diag_flight_analyze, which a lab file may not use */
#include <string.h>
#include "lab31.h"
int diagnose(const rl_diag_flight *fl, diag_result *out)
{
    rl_diag_result r;
    int rc = rl_diag_flight_analyze(fl, &r);
    memset(out, 0, sizeof *out);
    return rc;
}
