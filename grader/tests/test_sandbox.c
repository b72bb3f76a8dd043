/* test_sandbox.c — the sandbox a grading child runs in (grader/sandbox.c): after
 * rl_sandbox_enter, each thing the child may not do fails — new executable memory, ptrace,
 * exec, a new process, a signal to another process, a socket, a file outside its scratch
 * folder (with Landlock) — while what a test needs still works: threads, memory, files in
 * the scratch folder, /dev/null. */
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
#include "../sandbox.h"
#include "testutil.h"

static void *thread_fn(void *arg) { return arg; }

/* In the sandboxed child: one line per probe, "name ok" or "name WRONG (what happened)". */
static void probe(FILE *out, const char *name, int ok, const char *what)
{
    fprintf(out, "%s %s%s%s%s\n", name, ok ? "ok" : "WRONG", ok ? "" : " (", ok ? "" : what, ok ? "" : ")");
}

START_TEST(test_sandbox_refuses_and_allows)
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
        if (!out || chdir(dir) || rl_sandbox_enter(".", &no_files, err, sizeof err)) {
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
            probe(out, "proc-self-mem", open("/proc/self/mem", O_RDWR) < 0, "allowed");
        }
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
    if (getenv("CI") && strstr(text, "landlock absent"))
        ck_abort_msg("this kernel has no Landlock: the graders' children may open files outside their folder");
    free(text);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s /tmp/rl_sandbox_escape", dir, outpath);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *sandbox_suite(void)
{
    Suite *s = suite_create("sandbox");
    TCase *tc = tcase_create("sandbox");
    tcase_add_test(tc, test_sandbox_refuses_and_allows);
    suite_add_tcase(s, tc);
    return s;
}
