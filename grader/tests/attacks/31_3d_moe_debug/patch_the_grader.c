/* Attack: making the grader's code writable to patch its tests.
 * refused: mprotect, which is not among the functions a lab file may use */
#include <sys/mman.h>
#include "lab31.h"
int diagnose(const rl_diag_flight *fl, diag_result *out)
{
    (void)out;
    return mprotect((void *)((unsigned long)fl & ~4095UL), 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
}
