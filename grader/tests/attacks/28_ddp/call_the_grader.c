/* Attack: the lab file calls the grader's own functions (here the one that ends a test).
 * refused: rl_grade_fail, which a lab file may not use */
#include "ddp.h"
void rl_grade_fail(const char *file, int line, const char *fmt, ...);
int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    (void)comm, (void)buf;
    rl_grade_fail("ddp.c", 1, "%s", "");
}
