/* Attack: a hand-written line marker with the "entering a file" flag (# 1 "calc.h" 1), so that
 * the preprocessed source shows the lines after it as an included header's, and inline
 * assembly there would go unseen.
 * refused: a #line directive or a line marker */
#include "lab31.h"
# 1 "calc.h" 1
static int zero(void)
{
    int r;
    __asm__ volatile("xor %0, %0" : "=r"(r));
    return r;
}
# 12 "lab31.c" 2
int diagnose(const rl_diag_flight *fl, diag_result *out)
{
    (void)fl, (void)out;
    return zero();
}
