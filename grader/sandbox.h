/* sandbox.h — what a grading child may do, set just before it runs code under test.
 *
 * The child's files: Landlock (Linux 5.13+) limits every file it opens to its scratch folder
 * (and /dev/null); its system calls: a seccomp filter (libseccomp) refuses new executable
 * memory (mmap/mprotect with PROT_EXEC), ptrace and process_vm_*, exec and new processes
 * (threads stay allowed), signals to other processes, io_uring, namespaces, mounts and
 * sockets, process_madvise and remap_file_pages. Neither can be lifted once set. */
#ifndef RL_SANDBOX_H
#define RL_SANDBOX_H
#include <stddef.h>

/* What the filter keeps as it is besides: the program's own mappings (nothing in the 4 GiB
 * windows that hold [image_lo, image_hi) may be mapped, unmapped, reprotected, remapped or
 * advised — so a page the grader sealed read-only stays so; NULL: no such rule) and one file
 * descriptor (not closed or replaced; -1: none). */
typedef struct rl_sandbox_keep {
    const void *image_lo, *image_hi;
    int fd;
    int without_landlock; /* tests: confine as on a kernel without Landlock */
} rl_sandbox_keep;

/* Confines this process: files to scratch_dir (its cwd), then the system calls above and
 * keep's (NULL: none). Returns 0, or -1 with the reason in err. *no_files is 0 with Landlock;
 * 1 when the kernel has none: files are then limited only by the user's permissions, but /proc
 * is read-only in a mount namespace of the process's own (no /proc/self/mem to write its own
 * code through); 2 when that could not be set up either (no root, no user namespaces). */
int rl_sandbox_enter(const char *scratch_dir, const rl_sandbox_keep *keep, int *no_files, char *err, size_t errlen);

#endif
