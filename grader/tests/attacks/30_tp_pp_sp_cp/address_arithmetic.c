/* Attack: the runtime's schedule builder (denied to the lab file) reached by arithmetic on the
 * address of an allowed neighbour, and handed to the C library as a callback so that no call
 * of the lab file's own reaches it.
 * refused: takes the address of rl_pp_schedule_empty */
#include <stdint.h>
#include <stdlib.h>
#include "mp.h"
static int compare(const void *a, const void *b) { (void)a, (void)b; return 0; }
rl_pp_schedule *pp_build_schedule(rl_pp_kind kind, int p, int m, int v, char *err, size_t errlen)
{
    int (*cmp)(const void *, const void *) = compare;
    if (p < 0)
        cmp = (int (*)(const void *, const void *))((uintptr_t)rl_pp_schedule_empty + 0x480);
    int x[2] = { 0, 0 };
    qsort(x, 2, sizeof x[0], cmp);
    (void)kind, (void)m, (void)v, (void)err, (void)errlen;
    return NULL;
}
