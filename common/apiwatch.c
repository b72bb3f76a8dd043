/* apiwatch.c — the watch on calls into the runtime (apiwatch.h). */
#include "apiwatch.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The one watch of the process, alone on its page so that it can be sealed read-only: set by a
 * grader before the code under test runs. */
static union {
    struct {
        uintptr_t lo, hi;
        int fd;
    } w;
    char page[4096];
} watch __attribute__((aligned(4096))) = { .w = { 0, 0, -1 } };

extern char __executable_start[], etext[]; /* the program's own code (the linker's symbols) */

void rl_api_watch(const void *lo, const void *hi, int fd)
{
    watch.w.lo = (uintptr_t)lo;
    watch.w.hi = (uintptr_t)hi;
    watch.w.fd = fd;
}

int rl_api_watch_seal(void)
{
    return mprotect(&watch, sizeof watch, PROT_READ);
}

int rl_api_after_call(const void *ret)
{
    const unsigned char *r = ret;
    if (r[-5] == 0xE8) /* call rel32 */
        return 1;
    for (int k = 2; k <= 10; k++) { /* [prefixes] FF /2 ModRM [SIB] [disp] ending at r */
        const unsigned char *p = r - k, *q = p;
        for (int n = 0; n < 2 && ((*q >= 0x40 && *q <= 0x4F) || *q == 0x3E || *q == 0x2E); n++)
            q++; /* REX, notrack */
        if (q[0] != 0xFF || ((q[1] >> 3) & 7) != 2)
            continue;
        int mod = q[1] >> 6, rm = q[1] & 7, len = 2;
        if (mod != 3 && rm == 4)
            len += 1 + (mod == 0 && (q[2] & 7) == 5 ? 4 : 0);
        len += mod == 0 && rm == 5 ? 4 : mod == 1 ? 1 : mod == 2 ? 4 : 0;
        if (q + len == r)
            return 1;
    }
    return 0;
}

void rl_api_entered(const char *fn, const void *ret, int thread_entry)
{
    uintptr_t r = (uintptr_t)ret;
    if (watch.w.fd < 0)
        return;
    int from_code_under_test = r >= watch.w.lo && r < watch.w.hi;
    int from_outside = r < (uintptr_t)__executable_start || r >= (uintptr_t)etext;
    if (!from_code_under_test && (thread_entry || (!from_outside && rl_api_after_call(ret))))
        return;
    /* every call, never "already reported": state the code under test could write is not trusted */
    size_t len = strlen(fn) + 1; /* one write under PIPE_BUF bytes: never interleaved with another */
    while (write(watch.w.fd, fn, len) != (ssize_t)len)
        if (errno != EINTR)
            abort(); /* a call that cannot be reported ends the test */
}
