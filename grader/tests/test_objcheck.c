/* test_objcheck.c — the object check a lab file passes before a grader links it
 * (grader/objcheck.c, rules in grader/allow/), compiled with gcc and with clang: every
 * attack in grader/tests/attacks/NN_name/ (one .c file each) is refused with the reason its header names
 * ("refused: ..."), the skeletons, the reference solutions and every correct variant pass,
 * and bad input is an error, not a pass. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

static const char *const compilers[] = { "gcc", "clang" };
static const char *const lab_dirs[] = { "28_ddp", "29_zero_fsdp", "30_tp_pp_sp_cp", "31_3d_moe_debug" };
static const char *const lab_files[] = { "ddp.c", "zero.c", "mp.c", "lab31.c" };

/* The check's fixed flags (the Makefile's OBJCHECK_FLAGS). */
#define CHECK_FLAGS                                                                                                  \
    "-std=c11 -D_GNU_SOURCE -O0 -w -fno-pic -fno-stack-protector -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=0 "            \
    "-fno-sanitize=all -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -Icommon -Itui"


/* Compiles src (includes from inc) with cc and checks it against lab's rules; returns
 * objcheck's exit status, its output in *out. */
static int check_file(const char *cc, const char *lab, const char *src, const char *inc, char **out)
{
    char obj[64], pre[64], cmd[2048];
    snprintf(obj, sizeof obj, "/tmp/rl_objcheck_%d.o", (int)getpid());
    snprintf(pre, sizeof pre, "/tmp/rl_objcheck_%d.i", (int)getpid());
    snprintf(cmd, sizeof cmd, "%s " CHECK_FLAGS " -I%s -c %s -o %s 2>&1 && %s " CHECK_FLAGS " -I%s -E %s -o %s 2>&1",
             cc, inc, src, obj, cc, inc, src, pre);
    char *cout;
    int rc = rl_test_run(cmd, &cout);
    ck_assert_msg(rc == 0, "%s could not compile %s:\n%s", cc, src, cout);
    free(cout);
    snprintf(cmd, sizeof cmd, "%s/objcheck --rules grader/allow/common.txt --rules grader/allow/%s.txt --source %s "
             "--preprocessed %s %s 2>&1", rl_test_build(), lab, src, pre, obj);
    rc = rl_test_run(cmd, out);
    unlink(obj);
    unlink(pre);
    return rc;
}

/* Fails (naming `make deps`) when cc is not installed: every machine runs both compilers. */
static void need(const char *cc)
{
    char cmd[128], *out;
    snprintf(cmd, sizeof cmd, "command -v %s", cc);
    int rc = rl_test_run(cmd, &out);
    free(out);
    ck_assert_msg(rc == 0, "%s is not installed: run 'make deps' (as root) — the object check is tested with gcc "
                  "and clang", cc);
}

START_TEST(test_attacks_refused)
{
    const char *cc = compilers[_i];
    need(cc);
    int n = 0;
    for (int l = 0; l < 4; l++) {
        char dir[128];
        snprintf(dir, sizeof dir, "grader/tests/attacks/%s", lab_dirs[l]);
        DIR *d = opendir(dir);
        ck_assert_msg(d != NULL, "no %s", dir);
        for (struct dirent *e; (e = readdir(d));) {
            size_t len = strlen(e->d_name);
            if (len < 3 || strcmp(e->d_name + len - 2, ".c"))
                continue;
            char src[384], inc[64], want[256] = "";
            snprintf(src, sizeof src, "%s/%s", dir, e->d_name);
            snprintf(inc, sizeof inc, "labs/%s", lab_dirs[l]);
            FILE *f = fopen(src, "r");
            char line[512];
            while (fgets(line, sizeof line, f))
                if (strstr(line, "refused: ")) {
                    snprintf(want, sizeof want, "%s", strstr(line, "refused: ") + 9);
                    want[strcspn(want, "\n")] = 0;
                    char *end = strstr(want, " */");
                    if (end)
                        *end = 0;
                    break;
                }
            fclose(f);
            ck_assert_msg(*want, "%s: the header names no reason (\"refused: ...\")", src);
            char *out;
            int rc = check_file(cc, lab_dirs[l], src, inc, &out);
            ck_assert_msg(rc == 1 && strstr(out, want), "%s (%s): expected a refusal (exit 1) naming \"%s\"; exit %d:\n%s",
                          src, cc, want, rc, out);
            free(out);
            n++;
        }
        closedir(d);
    }
    ck_assert_int_ge(n, 20);
}
END_TEST

/* The skeletons, the solutions and every correct variant (the solution patched by its sed file) pass. */
START_TEST(test_lab_files_pass)
{
    const char *cc = compilers[_i];
    need(cc);
    for (int l = 0; l < 4; l++) {
        char src[512], inc[64], *out;
        snprintf(inc, sizeof inc, "labs/%s", lab_dirs[l]);
        const char *kinds[] = { "labs", "solutions" };
        for (int k = 0; k < 2; k++) {
            snprintf(src, sizeof src, "%s/%s/%s", kinds[k], lab_dirs[l], lab_files[l]);
            int rc = check_file(cc, lab_dirs[l], src, inc, &out);
            ck_assert_msg(rc == 0, "%s (%s) must pass the object check; exit %d:\n%s", src, cc, rc, out);
            free(out);
        }
        char dir[256];
        snprintf(dir, sizeof dir, "grader/tests/variants/%s", lab_dirs[l]);
        DIR *d = opendir(dir);
        ck_assert_msg(d != NULL, "no %s", dir);
        int n = 0;
        for (struct dirent *e; (e = readdir(d));) {
            size_t len = strlen(e->d_name);
            if (len < 5 || strcmp(e->d_name + len - 4, ".sed"))
                continue;
            char cmd[2048], *sout;
            snprintf(src, sizeof src, "/tmp/rl_objcheck_%d_%s", (int)getpid(), lab_files[l]);
            snprintf(cmd, sizeof cmd, "sed -f %s/%s solutions/%s/%s > %s 2>&1", dir, e->d_name, lab_dirs[l], lab_files[l],
                     src);
            ck_assert_int_eq(rl_test_run(cmd, &sout), 0);
            free(sout);
            int rc = check_file(cc, lab_dirs[l], src, inc, &out);
            ck_assert_msg(rc == 0, "the correct variant %s/%s (%s) must pass the object check; exit %d:\n%s", dir,
                          e->d_name, cc, rc, out);
            free(out);
            unlink(src);
            n++;
        }
        closedir(d);
        ck_assert_msg(n >= 3, "lab %s: only %d correct variants found under %s", lab_dirs[l], n, dir);
    }
}
END_TEST

/* Bad input is an error (exit 2) with a message, never a pass. */
START_TEST(test_bad_input)
{
    char cmd[512], *out;
    snprintf(cmd, sizeof cmd, "%s/objcheck --rules grader/allow/common.txt --source x.c grader/allow/common.txt 2>&1",
             rl_test_build());
    int rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 2 && strstr(out, "not a 64-bit ELF object"), "a text file as the object: exit %d:\n%s", rc, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s/objcheck --rules /nonexistent --source x.c x.o 2>&1", rl_test_build());
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 2 && strstr(out, "cannot read the rules file"), "a missing rules file: exit %d:\n%s", rc, out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s/objcheck 2>&1", rl_test_build());
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 2 && strstr(out, "usage:"), "no arguments: exit %d:\n%s", rc, out);
    free(out);
}
END_TEST

Suite *objcheck_suite(void)
{
    Suite *s = suite_create("objcheck");
    TCase *t = tcase_create("objcheck");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, test_attacks_refused, 0, 2);
    tcase_add_loop_test(t, test_lab_files_pass, 0, 2);
    tcase_add_test(t, test_bad_input);
    suite_add_tcase(s, t);
    return s;
}
