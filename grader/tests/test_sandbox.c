/* test_sandbox.c — the sandbox a grading child runs in (grader/sandbox.c): after
 * rl_sandbox_enter, each thing the child may not do fails — new executable memory, ptrace,
 * exec, a new process, a signal to another process, a socket, a file outside its scratch
 * folder (with Landlock), changing the program's own pages or the watch's descriptor — while
 * what a test needs still works: threads, memory, files in the scratch folder, /dev/null;
 * and the run-time watch (common/apiwatch.c) reports a call through a library callback. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "../sandbox.h"
#include "apiwatch.h"
#include "cost.h"
#include "mem.h"
#include "testutil.h"

static void *thread_fn(void *arg) { return arg; }

/* In the sandboxed child: one line per probe, "name ok" or "name WRONG (what happened)". */
static void probe(FILE *out, const char *name, int ok, const char *what)
{
    fprintf(out, "%s %s%s%s%s\n", name, ok ? "ok" : "WRONG", ok ? "" : " (", ok ? "" : what, ok ? "" : ")");
}

/* The sandbox with Landlock as the kernel has it (1), or as if it had none (0). */
static void sandbox_probes(int landlock)
{
    char dir[] = "/tmp/rl_sandbox_XXXXXX", outpath[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(outpath, sizeof outpath, "%s.out", dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        FILE *out = fopen(outpath, "w");
        char err[256];
        int no_files = 0;
        if (!out || chdir(dir) || rl_sandbox_enter(".", &(rl_sandbox_keep){ .fd = -1, .without_landlock = !landlock }, &no_files, err, sizeof err)) {
            if (out)
                fprintf(out, "enter WRONG (%s)\n", err);
            _exit(3);
        }
        setvbuf(out, NULL, _IONBF, 0);
        fprintf(out, "landlock %s\n", no_files ? "absent" : "present");
        pid_t parent = getppid();
        void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        probe(out, "mmap-rw", m != MAP_FAILED, strerror(errno));
        probe(out, "mprotect-exec", mprotect(m, 4096, PROT_READ | PROT_EXEC) != 0, "allowed");
        probe(out, "mmap-exec", mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED,
              "allowed");
        pthread_t th;
        int trc = pthread_create(&th, NULL, thread_fn, NULL);
        probe(out, "thread", trc == 0 && pthread_join(th, NULL) == 0, strerror(trc));
        pid_t c = fork();
        if (c == 0)
            _exit(0);
        probe(out, "fork", c < 0, "allowed");
        probe(out, "exec", execl("/bin/true", "true", (char *)NULL) != 0, "allowed");
        probe(out, "ptrace", ptrace(PTRACE_ATTACH, parent, NULL, NULL) != 0, "allowed");
        probe(out, "kill-other", kill(parent, 0) != 0, "allowed");
        probe(out, "kill-self", kill(getpid(), 0) == 0, strerror(errno));
        probe(out, "socket", socket(AF_INET, SOCK_STREAM, 0) < 0, "allowed");
        int fd = open("inside.txt", O_WRONLY | O_CREAT, 0600);
        probe(out, "file-inside", fd >= 0 && write(fd, "x", 1) == 1, strerror(errno));
        probe(out, "dev-null", open("/dev/null", O_WRONLY) >= 0, strerror(errno));
        if (!no_files) {
            probe(out, "file-outside-read", open("/etc/hostname", O_RDONLY) < 0, "allowed");
            probe(out, "file-outside-write", open("../rl_sandbox_escape", O_WRONLY | O_CREAT, 0600) < 0, "allowed");
        }
        if (no_files < 2) { /* Landlock, or else a read-only /proc */
            probe(out, "proc-self-mem", open("/proc/self/mem", O_RDWR) < 0, "allowed");
            probe(out, "proc-pid-mem", open("/proc/thread-self/mem", O_WRONLY) < 0, "allowed");
            probe(out, "proc-maps-read", open("/proc/self/maps", O_RDONLY) >= 0, strerror(errno));
        }
        fprintf(out, "proc %s\n", no_files == 2 ? "writable" : "guarded");
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    long len;
    char *text = rl_test_slurp(outpath, &len);
    ck_assert_msg(text && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the sandboxed child ended with status %d:\n%s", st,
                  text ? text : "");
    ck_assert_msg(!strstr(text, "WRONG"), "the sandbox let through or refused the wrong things:\n%s", text);
    ck_assert_msg(strstr(text, "socket ok") && strstr(text, "file-inside ok"), "probes missing:\n%s", text);
    if ((getenv("CI") || !getuid()) && strstr(text, "proc writable")) /* root can always mount */
        ck_abort_msg("neither Landlock nor a read-only /proc: the graders' children could write their own code "
                     "through /proc/self/mem:\n%s", text);
    if (landlock && getenv("CI") && strstr(text, "landlock absent"))
        ck_abort_msg("this kernel has no Landlock: the graders' children may open files outside their folder");
    free(text);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s /tmp/rl_sandbox_escape", dir, outpath);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_sandbox_refuses_and_allows)
{
    sandbox_probes(1);
}
END_TEST

/* Issue: without Landlock a child could write its own code through /proc/self/mem; /proc is
 * then read-only in the child's own mount namespace. */
START_TEST(test_sandbox_without_landlock_guards_proc)
{
    sandbox_probes(0);
}
END_TEST

/* A page of this program's own, sealed read-only before the sandbox (as the watch is). */
static char sealed[4096] __attribute__((aligned(4096)));
extern char __executable_start[], _end[];

/* What a keep of the sandbox holds (the program's pages, the watch's descriptor), and the
 * watch itself: a watched function reached through a C library callback is reported. */
START_TEST(test_sandbox_keeps_the_sealed_page_and_the_watch)
{
    char dir[] = "/tmp/rl_sandbox_XXXXXX", outpath[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(outpath, sizeof outpath, "%s.out", dir);
    int wp[2];
    ck_assert_int_eq(pipe(wp), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(wp[0]);
        FILE *out = fopen(outpath, "w");
        char err[256];
        int no_files = 0;
        rl_api_watch(NULL, NULL, wp[1]);
        rl_sandbox_keep keep = { .image_lo = __executable_start, .image_hi = _end, .fd = wp[1] };
        if (!out || rl_api_watch_seal() || mprotect(sealed, sizeof sealed, PROT_READ) || chdir(dir) ||
            rl_sandbox_enter(".", &keep, &no_files, err, sizeof err)) {
            if (out)
                fprintf(out, "enter WRONG (%s)\n", err);
            _exit(3);
        }
        setvbuf(out, NULL, _IONBF, 0);
        probe(out, "reprotect", mprotect(sealed, sizeof sealed, PROT_READ | PROT_WRITE) != 0, "allowed");
        probe(out, "pkey-reprotect", syscall(SYS_pkey_mprotect, sealed, sizeof sealed, PROT_READ | PROT_WRITE, -1) != 0,
              "allowed");
        probe(out, "unmap", munmap(sealed, sizeof sealed) != 0, "allowed");
        probe(out, "advise", madvise(sealed, sizeof sealed, MADV_DONTNEED) != 0, "allowed");
        probe(out, "map-over", mmap(sealed, sizeof sealed, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                                    -1, 0) == MAP_FAILED, "allowed");
        probe(out, "map-below", mmap((void *)((uintptr_t)__executable_start - 2 * 4096), 4096, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED, "allowed");
        void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        probe(out, "map-elsewhere", m != MAP_FAILED && mprotect(m, 4096, PROT_READ) == 0, strerror(errno));
        probe(out, "remap-onto", mremap(m, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, sealed) == MAP_FAILED, "allowed");
        void *big = malloc((size_t)64 << 20);
        probe(out, "malloc-64MiB", big != NULL, "failed");
        free(big);
        pthread_t th;
        probe(out, "thread", pthread_create(&th, NULL, thread_fn, NULL) == 0 && pthread_join(th, NULL) == 0, "failed");
        probe(out, "close-watch", close(wp[1]) != 0, "allowed");
        probe(out, "replace-watch", dup2(0, wp[1]) < 0, "allowed");
        probe(out, "close-range", syscall(SYS_close_range, 3, ~0u, 0) != 0, "allowed");
        /* a watched function as a C library callback: reported; called from this program's code: not */
        rl_mem_account acc[2];
        memset(acc, 0, sizeof acc);
        qsort(acc, 2, sizeof acc[0], (int (*)(const void *, const void *))(void (*)(void))rl_mem_reset_peaks);
        probe(out, "busbw", rl_busbw_factor(RL_COLL_ALL_REDUCE, 4) == 1.5, "wrong value");
        _exit(0);
    }
    close(wp[1]);
    int st;
    waitpid(pid, &st, 0);
    char called[4096] = { 0 };
    ssize_t k = read(wp[0], called, sizeof called - 1);
    close(wp[0]);
    long len;
    char *text = rl_test_slurp(outpath, &len);
    ck_assert_msg(text && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the sandboxed child ended with status %d:\n%s", st,
                  text ? text : "");
    ck_assert_msg(!strstr(text, "WRONG") && strstr(text, "close-range ok") && strstr(text, "busbw ok"),
                  "the sandbox let through or refused the wrong things:\n%s", text);
    int reports = 0, others = 0; /* one per call (a sanitizer's qsort may call the comparator more than once) */
    for (ssize_t off = 0; off < k; off += (ssize_t)strlen(called + off) + 1)
        strcmp(called + off, "rl_mem_reset_peaks") ? others++ : reports++;
    ck_assert_msg(reports >= 1 && !others, "the watch reported '%.*s' (%zd bytes), not rl_mem_reset_peaks alone",
                  (int)(k > 0 ? k : 0), called, k);
    free(text);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, outpath);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The watch's test for a true return address: the bytes before it are a call in one of its
 * encodings, and not a jump, a ret or padding (what a return address forged onto a stray ret
 * byte of the runtime is preceded by). */
START_TEST(test_watch_knows_a_call)
{
    static const struct {
        unsigned char code[12];
        int len, call;
        const char *what;
    } cases[] = {
        { { 0xE8, 1, 2, 3, 4 }, 5, 1, "call rel32" },
        { { 0xFF, 0xD0 }, 2, 1, "call *%rax" },
        { { 0x41, 0xFF, 0xD3 }, 3, 1, "call *%r11" },
        { { 0x3E, 0xFF, 0xD2 }, 3, 1, "notrack call *%rdx" },
        { { 0xFF, 0x15, 1, 2, 3, 4 }, 6, 1, "call *disp32(%rip)" },
        { { 0xFF, 0x54, 0x24, 0x08 }, 4, 1, "call *8(%rsp)" },
        { { 0xFF, 0x50, 0x10 }, 3, 1, "call *16(%rax)" },
        { { 0x41, 0xFF, 0x94, 0x24, 1, 2, 3, 4 }, 8, 1, "call *disp32(%r12)" },
        { { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xC3 }, 10, 0, "nops and a ret" },
        { { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xFF, 0xE0 }, 10, 0, "jmp *%rax" },
        { { 0x90, 0x90, 0x90, 0x90, 0x90, 0xE9, 1, 2, 3, 4 }, 10, 0, "jmp rel32" },
        { { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x5D, 0xC3 }, 10, 0, "pop %rbp; ret" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char buf[32];
        memset(buf, 0x90, sizeof buf);
        memcpy(buf + 16 - cases[i].len, cases[i].code, (size_t)cases[i].len);
        ck_assert_msg(rl_api_after_call(buf + 16) == cases[i].call, "%s: %s a call", cases[i].what,
                      cases[i].call ? "is" : "is not");
    }
    /* and a return address this program made */
    ck_assert(rl_api_after_call(__builtin_return_address(0)));
}
END_TEST

Suite *sandbox_suite(void)
{
    Suite *s = suite_create("sandbox");
    TCase *tc = tcase_create("sandbox");
    tcase_add_test(tc, test_sandbox_refuses_and_allows);
    tcase_add_test(tc, test_sandbox_without_landlock_guards_proc);
    tcase_add_test(tc, test_sandbox_keeps_the_sealed_page_and_the_watch);
    tcase_add_test(tc, test_watch_knows_a_call);
    suite_add_tcase(s, tc);
    return s;
}
