/* hints.c — a lab's hint ladder and the record of the hints shown (hints.h). */
#include "err.h"
#include "hints.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FAIL(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* Reads a whole regular file of at most 16 MiB into a NUL-terminated buffer (NULL on error,
 * errno set). */
static char *slurp(const char *path)
{
    FILE *f = rl_file_read_regular(path);
    if (!f)
        return NULL; /* (EINVAL: not a regular file) */
    struct stat st;
    int bad = fstat(fileno(f), &st) ? errno : S_ISDIR(st.st_mode) ? EISDIR
                                   : !S_ISREG(st.st_mode) || st.st_size > (16 << 20) ? EFBIG : 0;
    if (bad) {
        fclose(f);
        errno = bad;
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *more = realloc(buf, cap *= 2);
            if (!more)
                free(buf);
            buf = more;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = 0;
    return buf;
}

/* Trims blank lines and trailing spaces around a rung's text, in place. */
static const char *trim_block(char *s)
{
    while (*s == '\n' || *s == '\r')
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

int rl_hints_load(const char *path, rl_hints *h, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    h->buf = slurp(path);
    if (!h->buf)
        FAIL("%s: %s", path, errno == EINVAL ? "not a regular file" : strerror(errno));
    rl_hint_step *st = NULL;
    char *text = NULL; /* the open rung's text starts here */
    int line = 0;
    for (char *p = h->buf; p && *p; line++) {
        char *eol = strchr(p, '\n');
        char *next = eol ? eol + 1 : NULL;
        int is_step = !strncmp(p, "## ", 3), is_rung = !strncmp(p, "### ", 4);
        if (is_step || is_rung) {
            if (p > h->buf)
                p[-1] = 0; /* ends the text before this line */
            if (eol)
                *eol = 0;
            if (text)
                st->rung_text[st->nrungs - 1] = text;
            text = NULL;
            if (p[strlen(p) - 1] == '\r')
                p[strlen(p) - 1] = 0;
        }
        if (is_step) {
            if (h->nsteps == RL_HINTS_MAX_STEPS)
                FAIL("%s:%d: more than %d steps", path, line + 1, RL_HINTS_MAX_STEPS);
            st = &h->steps[h->nsteps++];
            char *id = p + 3, *sp = strchr(id, ' ');
            size_t idlen = sp ? (size_t)(sp - id) : strlen(id);
            if (idlen == 0 || idlen >= RL_HINTS_ID_LEN)
                FAIL("%s:%d: a step line is '## <step id> <title>'", path, line + 1);
            memcpy(st->id, id, idlen);
            st->title = sp ? sp + 1 : "";
        } else if (is_rung) {
            if (!st)
                FAIL("%s:%d: a rung ('### ...') before any step ('## ...')", path, line + 1);
            if (st->nrungs == RL_HINTS_MAX_RUNGS)
                FAIL("%s:%d: step %s has more than %d rungs", path, line + 1, st->id, RL_HINTS_MAX_RUNGS);
            st->rung_title[st->nrungs] = p + 4;
            st->rung_text[st->nrungs] = "";
            st->nrungs++;
            text = next;
        }
        p = next;
    }
    if (text)
        st->rung_text[st->nrungs - 1] = text;
    for (int s = 0; s < h->nsteps; s++) {
        if (h->steps[s].nrungs == 0)
            FAIL("%s: step %s has no rungs ('### ...')", path, h->steps[s].id);
        for (int r = 0; r < h->steps[s].nrungs; r++)
            h->steps[s].rung_text[r] = trim_block((char *)h->steps[s].rung_text[r]);
    }
    return 0;
}

void rl_hints_free(rl_hints *h)
{
    free(h->buf);
    memset(h, 0, sizeof *h);
}

const rl_hint_step *rl_hints_find(const rl_hints *h, const char *id)
{
    for (int s = 0; id && s < h->nsteps; s++)
        if (!strcmp(h->steps[s].id, id))
            return &h->steps[s];
    return NULL;
}

int rl_hints_used_load(const char *path, rl_hints_used *u, char *err, size_t errlen)
{
    memset(u, 0, sizeof *u);
    FILE *f = rl_file_read_regular(path);
    if (!f) {
        if (errno == ENOENT)
            return 0;
        FAIL("%s: %s", path, errno == EINVAL ? "not a regular file of hints shown" : strerror(errno));
    }
    struct stat st;
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) { /* (/dev/zero never ends) */
        fclose(f);
        FAIL("%s: not a regular file of hints shown (at most 1 MiB)", path);
    }
    char line[256];
    int no = 0;
    while (fgets(line, sizeof line, f)) {
        no++;
        char id[RL_HINTS_ID_LEN + 1], extra[2];
        int n;
        if (line[0] == '#' || strspn(line, " \t\r\n") == strlen(line))
            continue;
        if (sscanf(line, "%16s %d %1s", id, &n, extra) != 2 || strlen(id) >= RL_HINTS_ID_LEN || n < 0 ||
            n > RL_HINTS_MAX_RUNGS || rl_hints_used_set(u, id, n > rl_hints_used_get(u, id) ? n : rl_hints_used_get(u, id))) {
            fclose(f);
            FAIL("%s:%d: a line is '<step> <hints shown>' (e.g. '28.1 2'), not '%.40s'", path, no,
                 strtok(line, "\r\n") ? line : "");
        }
    }
    fclose(f);
    return 0;
}

int rl_hints_used_get(const rl_hints_used *u, const char *id)
{
    for (int i = 0; i < u->n; i++)
        if (!strcmp(u->id[i], id))
            return u->shown[i];
    return 0;
}

int rl_hints_used_set(rl_hints_used *u, const char *id, int n)
{
    int i = 0;
    while (i < u->n && strcmp(u->id[i], id))
        i++;
    if (i == u->n) {
        if (u->n == RL_HINTS_MAX_STEPS || strlen(id) >= RL_HINTS_ID_LEN)
            return -1;
        snprintf(u->id[u->n++], RL_HINTS_ID_LEN, "%s", id);
    }
    u->shown[i] = n;
    return 0;
}

int rl_hints_used_save(const char *path, const rl_hints_used *u, char *err, size_t errlen)
{
    char tmp[4200];
    FILE *f = rl_file_begin(path, tmp, sizeof tmp);
    if (!f)
        FAIL("%s: %s", path, strerror(errno));
    fprintf(f, "# The hints `make hint` has shown, per step (submitted with your work; `make grade` lists them).\n");
    for (int i = 0; i < u->n; i++)
        fprintf(f, "%s %d\n", u->id[i], u->shown[i]);
    if (rl_file_commit(f, tmp, path))
        FAIL("%s: %s (the record is as it was)", path, strerror(errno));
    return 0;
}
