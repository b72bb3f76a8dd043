/* sandbox.h — what a grading child may do, set just before it runs code under test.
 *
 * The child's files: Landlock (Linux 5.13+) limits every file it opens to its scratch folder
 * (and /dev/null); its system calls: a seccomp filter (libseccomp) refuses new executable
 * memory (mmap/mprotect with PROT_EXEC), ptrace and process_vm_*, exec and new processes
 * (threads stay allowed), signals to other processes, io_uring, namespaces, mounts and
 * sockets. Neither can be lifted once set. */
#ifndef RL_SANDBOX_H
#define RL_SANDBOX_H
#include <stddef.h>

/* Confines this process: files to scratch_dir (its cwd), then the system calls above.
 * Returns 0, or -1 with the reason in err; *no_files is set to 1 when the kernel has no
 * Landlock (files are then limited only by the user's permissions). */
int rl_sandbox_enter(const char *scratch_dir, int *no_files, char *err, size_t errlen);

#endif
