/* testutil.h — helpers shared by the test suites. */
#ifndef RL_TESTUTIL_H
#define RL_TESTUTIL_H
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ringlab.h"

/* Options for a quiet sim run of n ranks (profile h100-nvlink unless hw is given). */
static inline rl_opts rl_test_opts(int n, const char *hw)
{
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = n;
    o.quiet = 1;
    o.timeout_s = 20;
    if (hw)
        o.hw = rl_hw_find(hw);
    return o;
}

/* 1 under the sanitizer run (make test-asan), where slow tests use smaller sizes. */
static inline int rl_test_quick(void) { return getenv("RL_TEST_QUICK") != NULL; }

/* The build directory of the binaries under test (build/ or build/asan/). */
static inline const char *rl_test_build(void)
{
    const char *b = getenv("RINGLAB_BUILD");
    return b ? b : "build";
}

/* A TCP port on 127.0.0.1 that was free a moment ago (the test fails if there is none). */
static inline int rl_test_free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ck_assert_int_ge(s, 0);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
    close(s);
    return ntohs(a.sin_port);
}

/* The whole file (malloc'd, NUL-terminated) and its length in *len, or NULL. */
static inline char *rl_test_slurp(const char *path, long *len)
{
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    rewind(f);
    char *b = malloc((size_t)*len + 1);
    size_t got = fread(b, 1, (size_t)*len, f);
    b[got] = 0;
    if (got != (size_t)*len)
        *len = -1;
    fclose(f);
    return b;
}

/* Runs cmd through the shell; returns its exit status (-1 if it did not exit) and its
 * standard output (malloc'd) in *out. */
static inline int rl_test_run(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "cannot run %s", cmd);
    size_t cap = 1 << 16, len = 0, k;
    char *s = malloc(cap);
    while ((k = fread(s + len, 1, cap - len - 1, p)) > 0)
        if ((len += k) + 1 == cap)
            s = realloc(s, cap *= 2);
    s[len] = 0;
    int st = pclose(p);
    *out = s;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* How many times s occurs in out. */
static inline int rl_test_count(const char *out, const char *s)
{
    int n = 0;
    for (const char *p = out; (p = strstr(p, s)); p += strlen(s))
        n++;
    return n;
}

/* Runs a shell command line (stderr with stdout); returns the exit status (-1 if it did not
 * exit) and the output in out. */
static inline int rl_test_run_cmd(const char *cmd, char *out, size_t size)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t k = fread(out, 1, size - 1, p);
    out[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs `PREFIX DIR/ringlab ARGS` (PREFIX: "" or e.g. "env RANK=1"), as rl_test_run_cmd. */
static inline int rl_test_run_ringlab(const char *dir, const char *prefix, const char *args, char *out, size_t size)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s/ringlab %s 2>&1", prefix, dir, args);
    return rl_test_run_cmd(cmd, out, size);
}

#endif
