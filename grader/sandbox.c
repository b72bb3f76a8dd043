/* sandbox.c — Landlock for the files, seccomp for the system calls of a grading child. */
#include "sandbox.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __clang__
#pragma clang diagnostic ignored "-Wmissing-field-initializers" /* libseccomp's SCMP_A0 .. macros */
#endif

/* The file-system rights of each Landlock ABI version (1..), cumulated. */
static unsigned long long fs_rights(int abi)
{
    unsigned long long r = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: execute .. make_sym */
#ifdef LANDLOCK_ACCESS_FS_REFER
    if (abi >= 2)
        r |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
    if (abi >= 3)
        r |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
    return r;
}

/* Adds a rule: rights under path (a folder, or one file with file rights only). */
static int allow_path(int ruleset, const char *path, unsigned long long rights)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct landlock_path_beneath_attr pb = { .allowed_access = rights, .parent_fd = fd };
    int rc = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
    close(fd);
    return rc;
}

/* Files: read and write beneath scratch_dir only (plus /dev/null, and reading /proc/self/maps,
 * which the sanitizers read to report an error). Returns 0, 1 without Landlock, -1 on error. */
static int confine_files(const char *scratch_dir, char *err, size_t errlen)
{
    int abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1)
        return 1;
    unsigned long long all = fs_rights(abi);
    unsigned long long file = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE;
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
    if (abi >= 3)
        file |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
    struct landlock_ruleset_attr ra = { .handled_access_fs = all };
    int rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
    if (rs < 0) {
        snprintf(err, errlen, "landlock_create_ruleset: %s", strerror(errno));
        return -1;
    }
    int rc = 0;
    if (allow_path(rs, scratch_dir, all & ~(unsigned long long)LANDLOCK_ACCESS_FS_EXECUTE)) {
        snprintf(err, errlen, "landlock: cannot allow %s: %s", scratch_dir, strerror(errno));
        rc = -1;
    }
    allow_path(rs, "/dev/null", file);
    allow_path(rs, "/proc/self/maps", LANDLOCK_ACCESS_FS_READ_FILE);
    if (!rc && syscall(SYS_landlock_restrict_self, rs, 0)) {
        snprintf(err, errlen, "landlock_restrict_self: %s", strerror(errno));
        rc = -1;
    }
    close(rs);
    return rc;
}

/* Without Landlock: /proc read-only in a mount namespace of this process's own, so that no
 * /proc/<pid>/mem opens for writing (a file on a read-only mount does not). Needs root or
 * unprivileged user namespaces (then the process must have one thread). Returns 0 or -1. */
static int readonly_proc(void)
{
    if (unshare(CLONE_NEWNS) && unshare(CLONE_NEWUSER | CLONE_NEWNS))
        return -1;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
        return -1;
    /* a remount keeps the flags a user namespace may not clear */
    struct statvfs sv;
    if (statvfs("/proc", &sv))
        return -1;
    static const unsigned long flags[][2] = { { ST_NOSUID, MS_NOSUID },     { ST_NODEV, MS_NODEV },
                                              { ST_NOEXEC, MS_NOEXEC },     { ST_NOATIME, MS_NOATIME },
                                              { ST_NODIRATIME, MS_NODIRATIME }, { ST_RELATIME, MS_RELATIME } };
    unsigned long keep = 0;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        keep |= sv.f_flag & flags[i][0] ? flags[i][1] : 0;
    return mount(NULL, "/proc", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | keep, NULL);
}

/* The 4 GiB window an address lies in (the filter compares a call's address with it). */
#define WINDOW_MASK (~(scmp_datum_t)0xffffffffu)

/* System calls: the filter described in sandbox.h. */
static int confine_calls(const rl_sandbox_keep *keep, char *err, size_t errlen)
{
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
    if (!f) {
        snprintf(err, errlen, "seccomp_init failed");
        return -1;
    }
    const pid_t me = getpid();
    int rc = 0;
#define DENY(call, ...) rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(call), __VA_ARGS__)
    /* no new executable memory: the code that runs is the code that was linked */
    DENY(mmap, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
    DENY(mprotect, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
    DENY(pkey_mprotect, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
    DENY(personality, 0);
    DENY(shmat, 0);
    /* no reading or writing another process, no other program, no new process (threads: yes) */
    DENY(ptrace, 0);
    DENY(process_vm_readv, 0);
    DENY(process_vm_writev, 0);
    DENY(execve, 0);
    DENY(execveat, 0);
    DENY(fork, 0);
    DENY(vfork, 0);
    DENY(clone, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); /* glibc falls back to clone */
    /* signals to itself only */
    DENY(kill, 1, SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)me));
    DENY(tgkill, 1, SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)me));
    DENY(tkill, 0);
    DENY(rt_sigqueueinfo, 1, SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)me));
    DENY(rt_tgsigqueueinfo, 1, SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)me));
    DENY(pidfd_open, 0);
    DENY(pidfd_send_signal, 0);
    DENY(pidfd_getfd, 0);
    /* nothing around the file sandbox or outside the machine */
    DENY(io_uring_setup, 0);
    DENY(unshare, 0);
    DENY(setns, 0);
    DENY(mount, 0);
    DENY(umount2, 0);
    DENY(chroot, 0);
    DENY(pivot_root, 0);
    DENY(open_by_handle_at, 0);
    DENY(name_to_handle_at, 0);
    DENY(socket, 0);
    DENY(socketpair, 0);
    DENY(bpf, 0);
    DENY(perf_event_open, 0);
    DENY(userfaultfd, 0);
    DENY(keyctl, 0);
    DENY(add_key, 0);
    DENY(request_key, 0);
    /* the program's own pages stay as the grader left them (a sealed page stays read-only) */
    DENY(process_madvise, 0);
    DENY(remap_file_pages, 0);
    for (int w = 0; keep && keep->image_lo && w < 2; w++) {
        scmp_datum_t win = (scmp_datum_t)(uintptr_t)(w ? keep->image_hi : keep->image_lo) & WINDOW_MASK;
        DENY(mmap, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, WINDOW_MASK, win));
        DENY(munmap, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, WINDOW_MASK, win));
        DENY(mprotect, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, WINDOW_MASK, win));
        DENY(pkey_mprotect, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, WINDOW_MASK, win));
        DENY(madvise, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, WINDOW_MASK, win));
        DENY(mremap, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, WINDOW_MASK, win));
        DENY(mremap, 1, SCMP_A4(SCMP_CMP_MASKED_EQ, WINDOW_MASK, win));
    }
    /* the grader's descriptor stays open and stays what it was */
    if (keep && keep->fd >= 0) {
        DENY(close, 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)keep->fd));
        DENY(dup2, 1, SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)keep->fd));
        DENY(dup3, 1, SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)keep->fd));
        DENY(close_range, 0);
    }
#undef DENY
    if (rc) {
        snprintf(err, errlen, "seccomp_rule_add failed");
        seccomp_release(f);
        return -1;
    }
    rc = seccomp_load(f);
    seccomp_release(f);
    if (rc) {
        snprintf(err, errlen, "seccomp_load: %s", strerror(-rc));
        return -1;
    }
    return 0;
}

int rl_sandbox_enter(const char *scratch_dir, const rl_sandbox_keep *keep, int *no_files, char *err, size_t errlen)
{
    *no_files = 0;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
        snprintf(err, errlen, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
        return -1;
    }
    int files = keep && keep->without_landlock ? 1 : confine_files(scratch_dir, err, errlen);
    if (files < 0)
        return -1;
    *no_files = files == 1;
    if (files == 1 && readonly_proc())
        *no_files = 2;
    return confine_calls(keep, err, errlen);
}
