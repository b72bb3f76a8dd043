/* test_objcheck.c — the object check a lab file passes before a grader links it
 * (grader/objcheck.c, rules in grader/allow/), compiled with gcc and with clang: every
 * attack in grader/tests/attacks/NN_name/ (one .c file each) is refused with the reason its header names
 * ("refused: ..."), the skeletons, the reference solutions and every correct variant pass,
 * and bad input is an error, not a pass. And every runtime function a rule denies is watched
 * at run time (common/apiwatch.h), so the judge sees it called through a pointer too. */
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

/* The check's fixed flags: the Makefile's OBJCHECK_FLAGS to preprocess, then the build's own
 * optimisation and OBJCHECK_CC to compile the preprocessed text (the object a grade links). */
#define CHECK_FLAGS "-std=c11 -D_GNU_SOURCE -O0 -w -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=0 -Icommon -Itui"
#define COMPILE_FLAGS                                                                                                \
    "-std=c11 -O2 -w -fno-optimize-sibling-calls -fno-stack-protector -fno-sanitize=all -ffunction-sections "      \
    "-fdata-sections"


/* Compiles src (includes from inc) with cc and checks it against lab's rules; returns
 * objcheck's exit status, its output in *out. */
static int check_file(const char *cc, const char *lab, const char *src, const char *inc, char **out)
{
    char obj[64], pre[64], cmd[2048];
    snprintf(obj, sizeof obj, "/tmp/rl_objcheck_%d.o", (int)getpid());
    snprintf(pre, sizeof pre, "/tmp/rl_objcheck_%d.i", (int)getpid());
    snprintf(cmd, sizeof cmd, "%s " CHECK_FLAGS " -I%s -E %s -o %s 2>&1 && %s " COMPILE_FLAGS " -c %s -o %s 2>&1", cc,
             inc, src, pre, cc, pre, obj);
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

/* 1 when name matches a deny pattern of grader/allow/ (a name, or a prefix ending in '*'). */
static int denied(char **pats, int npats, const char *name)
{
    for (int i = 0; i < npats; i++) {
        size_t n = strlen(pats[i]);
        if (pats[i][n - 1] == '*' ? !strncmp(pats[i], name, n - 1) : !strcmp(pats[i], name))
            return 1;
    }
    return 0;
}

/* 1 when src defines name as a watched function: RL_API_WATCHED on the line before its
 * definition and RL_API_ENTRY(); first in its body. */
static int watched_in(const char *src, const char *name)
{
    char pat[160];
    snprintf(pat, sizeof pat, "%s(", name);
    for (const char *p = src; (p = strstr(p, pat)); p++) {
        const char *bol = p;
        while (bol > src && bol[-1] != '\n')
            bol--;
        if (bol == src || *bol == ' ' || *bol == '\t' || *bol == '#' || (p > bol && p[-1] != ' ' && p[-1] != '*'))
            continue; /* not a definition at the start of a line */
        const char *prev = bol - 1;
        while (prev > src && prev[-1] != '\n')
            prev--;
        const char *brace = strchr(p, '{'), *semi = strchr(p, ';');
        if (!brace || (semi && semi < brace))
            continue; /* a declaration or a call */
        const char *body = brace + 1 + strspn(brace + 1, " \n");
        if (strncmp(prev, "RL_API_WATCHED\n", 15) ||
            (strncmp(body, "RL_API_ENTRY();", 15) && strncmp(body, "RL_API_ENTRY_THREAD();", 22)))
            return 0;
        return 1;
    }
    return 0;
}

START_TEST(test_denied_functions_watched)
{
    /* the deny patterns of every rules file */
    char *pats[256];
    int npats = 0;
    const char *files[] = { "common", "28_ddp", "29_zero_fsdp", "30_tp_pp_sp_cp", "31_3d_moe_debug" };
    for (int f = 0; f < 5; f++) {
        char path[128], line[1024];
        snprintf(path, sizeof path, "grader/allow/%s.txt", files[f]);
        FILE *fp = fopen(path, "r");
        ck_assert_ptr_nonnull(fp);
        while (fgets(line, sizeof line, fp)) {
            line[strcspn(line, "#")] = 0;
            char *save, *w = strtok_r(line, " \t\n", &save);
            if (!w || strcmp(w, "deny"))
                continue;
            while ((w = strtok_r(NULL, " \t\n", &save)) && npats < 256)
                if (w[strlen(w) - 1] != ':')
                    pats[npats++] = strdup(w);
        }
        fclose(fp);
    }
    /* every function of the runtime and the labs' support files a pattern names */
    char cmd[512], *out;
    snprintf(cmd, sizeof cmd, "nm -g --defined-only %s/libringlab.a %s/obj/labs/*/*_support.o | awk '$2 == \"T\" "
             "{ print $3 }' | sort -u", rl_test_build(), rl_test_build());
    ck_assert_int_eq(rl_test_run(cmd, &out), 0);
    char *srcs;
    ck_assert_int_eq(rl_test_run("cat common/*.c labs/*/*_support.c", &srcs), 0);
    int n = 0;
    char bad[4096] = "";
    for (char *save, *name = strtok_r(out, "\n", &save); name; name = strtok_r(NULL, "\n", &save)) {
        if (!denied(pats, npats, name) || !strncmp(name, "rl_api_", 7)) /* (the watch itself) */
            continue;
        n++;
        if (!watched_in(srcs, name) && strlen(bad) + strlen(name) + 2 < sizeof bad)
            strcat(strcat(bad, " "), name);
    }
    ck_assert_msg(!bad[0], "functions a rule denies but the runtime does not watch (give each RL_API_WATCHED and "
                  "RL_API_ENTRY(), common/apiwatch.h):%s", bad);
    ck_assert_int_ge(n, 100);
    free(out);
    free(srcs);
    for (int i = 0; i < npats; i++)
        free(pats[i]);
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
    tcase_add_test(t, test_denied_functions_watched);
    suite_add_tcase(s, t);
    return s;
}
