/* err.c — per-rank error messages. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "apiwatch.h"
#include "internal.h"
#include "mem.h"

int rl_error(rl_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (ctx) { /* through a copy: the arguments may quote ctx->err itself (rl_last_error) */
        char msg[sizeof ctx->err];
        vsnprintf(msg, sizeof msg, fmt, ap);
        memcpy(ctx->err, msg, sizeof msg);
    } else {
        fprintf(stderr, "ringlab: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
    return code;
}

const char *rl_last_error(const rl_ctx *ctx)
{
    return ctx ? ctx->err : "";
}

void rl_clear_error(rl_ctx *ctx)
{
    if (ctx)
        ctx->err[0] = 0;
}

const char *rl_status_name(int code)
{
    switch (code) {
    case RL_OK: return "ok";
    case RL_ERR_ARG: return "bad argument";
    case RL_ERR_MISMATCH: return "collective mismatch";
    case RL_ERR_HANG: return "hang (watchdog)";
    case RL_ERR_ABORTED: return "aborted";
    case RL_ERR_NOMEM: return "out of memory";
    case RL_ERR_IO: return "i/o error";
    case RL_ERR_UNSUPPORTED: return "unsupported";
    case RL_ERR_NOT_IMPLEMENTED: return "not implemented";
    default: return "error";
    }
}

static void check_stdout(int status, void *arg)
{
    int closed = arg != NULL; /* (stdout was closed when the program started: /dev/full stands in) */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        if (e != EPIPE) { /* EPIPE: the reader went away (SIGPIPE ignored): nothing to say to anyone */
            fprintf(stderr, "ringlab: cannot write the output: %s\n", closed ? "standard output is closed"
                    : e ? strerror(e) : "write error");
            _exit(1);
        }
    }
    /* Under ulimit -v, OpenBLAS's own threads may be retrying for ever to allocate their work
     * buffers, and the library's exit handler waits for them: leave without running it. */
    if (rl_mem_address_space_left() >= 0) {
        fflush(NULL);
        _exit(status);
    }
}

RL_API_WATCHED
void rl_out_of_memory_exit(size_t bytes, const char *what)
{
    RL_API_ENTRY();
    fprintf(stderr, "ringlab: out of memory: needed %zu bytes for %s (free some memory, or raise ulimit -v)\n",
            bytes, what);
    exit(1); /* RL_EXIT_FAIL */
}

RL_API_WATCHED
void *rl_xcalloc(size_t n, size_t size, const char *what)
{
    RL_API_ENTRY();
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        rl_out_of_memory_exit(n * size, what);
    return p;
}

RL_API_WATCHED
void *rl_xrealloc(void *p, size_t bytes, const char *what)
{
    RL_API_ENTRY();
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q)
        rl_out_of_memory_exit(bytes, what);
    return q;
}

RL_API_WATCHED
FILE *rl_file_read_regular(const char *path)
{
    RL_API_ENTRY();
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), e = 0; /* (a FIFO with no writer: no wait) */
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode))
        e = EINVAL;
    else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
        e = errno;
    FILE *f = e ? NULL : fdopen(fd, "r");
    if (!f) {
        e = e ? e : errno;
        close(fd);
        errno = e;
    }
    return f;
}

RL_API_WATCHED
int rl_file_writable(const char *path)
{
    RL_API_ENTRY();
    int existed = access(path, F_OK) == 0;
    FILE *f = fopen(path, "a");
    if (!f)
        return errno ? errno : EIO;
    fclose(f);
    if (!existed)
        remove(path);
    return 0;
}

RL_API_WATCHED
FILE *rl_file_begin(const char *path, char *tmp, size_t tmplen)
{
    RL_API_ENTRY();
    if ((size_t)snprintf(tmp, tmplen, "%s.tmp-XXXXXX", path) >= tmplen) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    int fd = mkstemp(tmp);
    if (fd >= 0) { /* mkstemp makes it 0600: give it the mode fopen would (others may read the record) */
        mode_t um = umask(0);
        umask(um);
        fchmod(fd, 0666 & ~um);
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && !f) {
        close(fd);
        unlink(tmp);
    }
    return f;
}

RL_API_WATCHED
int rl_file_commit(FILE *f, const char *tmp, const char *path)
{
    RL_API_ENTRY();
    int bad = ferror(f), e = errno;
    if (fclose(f) != 0 && !bad)
        bad = 1, e = errno;
    if (!bad && rename(tmp, path) != 0)
        bad = 1, e = errno;
    if (bad) {
        unlink(tmp);
        errno = e ? e : EIO;
        return -1;
    }
    return 0;
}

/* OpenBLAS starts a thread per core as the program loads. Under ulimit -v those threads retry
 * their buffers' allocation for ever (and a fork then waits on them); under a small ulimit -u
 * OpenBLAS kills the program with SIGINT when it cannot start them. Under either limit the
 * program runs itself again with one BLAS thread (OPENBLAS_NUM_THREADS=1), before anything else. */
static void one_blas_thread_under_limits(void)
{
    struct rlimit as, np;
    int limited = (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) ||
                  (getrlimit(RLIMIT_NPROC, &np) == 0 && np.rlim_cur < 4096 && geteuid() != 0);
    if (!limited || getenv("OPENBLAS_NUM_THREADS"))
        return;
    static char cmd[1 << 16];
    char *argv[512];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC), argc = 0;
    ssize_t n = fd >= 0 ? read(fd, cmd, sizeof cmd - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0 || n >= (ssize_t)sizeof cmd - 1)
        return; /* (a command line it cannot read whole: run on as it is) */
    cmd[n] = 0;
    for (char *p = cmd; p < cmd + n && argc < 511; p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;
    if (setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0)
        execv("/proc/self/exe", argv);
}

RL_API_WATCHED
void rl_program_start(void)
{
    RL_API_ENTRY();
    one_blas_thread_under_limits();
    struct rlimit np; /* ranks are threads: two per rank and a few more (root is not held to it) */
    if (getrlimit(RLIMIT_NPROC, &np) == 0 && np.rlim_cur < 64 && geteuid() != 0) {
        fprintf(stderr, "ringlab: the limit on processes and threads (ulimit -u %llu) is too small: a run's ranks are "
                "threads, two per rank and a few more, on top of your other processes (ulimit -u 4096)\n",
                (unsigned long long)np.rlim_cur);
        exit(1);
    }
    signal(SIGXFSZ, SIG_IGN); /* past ulimit -f a write fails with EFBIG and says so, not a silent kill */
    struct rlimit as; /* under ulimit -v: each thread's own malloc arena reserves 64 MiB of address
                       * space (eight threads, half a GiB): two arenas for all of them instead */
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
        mallopt(M_ARENA_MAX, 2);
    struct rlimit r; /* the main thread's stack grows up to the soft limit in force when it grows */
    const rlim_t want = (rlim_t)8 << 20, least = (rlim_t)1 << 20;
    if (getrlimit(RLIMIT_STACK, &r) == 0 && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want) {
        rlim_t can = r.rlim_max == RLIM_INFINITY || r.rlim_max > want ? want : r.rlim_max;
        if (can > r.rlim_cur) {
            r.rlim_cur = can;
            setrlimit(RLIMIT_STACK, &r);
        }
        if (can < least) {
            fprintf(stderr, "ringlab: the stack limit (ulimit -s %llu KiB) is too small: it needs 1 MiB at least "
                    "(ulimit -s 8192)\n", (unsigned long long)(can >> 10));
            exit(1);
        }
    }
    /* a standard stream closed (cmd >&-): something stands in for it, or the first file the
     * program opens would take its number and receive its output; writes to /dev/full fail */
    int stdout_closed = 0;
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int n = open(fd ? "/dev/full" : "/dev/null", fd ? O_WRONLY : O_RDONLY);
            if (n >= 0 && n != fd)
                dup2(n, fd), close(n);
            stdout_closed |= fd == 1;
        }
    on_exit(check_stdout, stdout_closed ? (void *)1 : NULL);
}
