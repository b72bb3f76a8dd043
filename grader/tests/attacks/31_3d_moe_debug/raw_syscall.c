/* Attack: exit_group(0) as a raw system call, no libc function named.
 * refused: __asm__ (inline assembly) */
#include "lab31.h"
int diagnose(const rl_diag_flight *fl, diag_result *out)
{
    (void)fl, (void)out;
    long nr = 231, rc;
    __asm__ volatile("syscall" : "=a"(rc) : "a"(nr), "D"(0L) : "rcx", "r11", "memory");
    return (int)rc;
}
