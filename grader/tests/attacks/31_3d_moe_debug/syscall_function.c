/* Attack: exit_group(0) through libc's syscall().
 * refused: syscall, which is not among the functions a lab file may use */
#include <sys/syscall.h>
#include <unistd.h>
#include "lab31.h"
int diagnose(const rl_diag_flight *fl, diag_result *out)
{
    (void)fl, (void)out;
    return (int)syscall(SYS_exit_group, 0);
}
