/* Attack: a global _exit replaces libc's in the whole grader, so a test that ends early
 * "exits 0" and counts as passed.
 * refused: defines the global symbol _exit */
#include "ddp.h"
#include <unistd.h>
void _exit(int status)
{
    (void)status;
    for (;;) {
    }
}
