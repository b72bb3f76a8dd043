/* objcheck.c — checks a lab file's object before a grader links it.
 *
 *   objcheck --rules FILE [--rules FILE ...] --source LAB.c [--preprocessed LAB.i] LAB.o
 *
 * LAB.o is the lab file compiled on its own with the check's fixed flags (-ffunction-sections
 * -fdata-sections, no stack protector, no fortify, no sanitizers: see the Makefile), so that
 * every function and object sits in a section of its own. The object is refused, with one
 * line per problem naming the symbol, the function and the step, when it has:
 *  - writable data of its own (static or global variables: .data, .bss, .tdata, .tbss);
 *  - a section other than code, read-only data, data, bss, notes, debug info and their
 *    relocations — constructors and destructors (.init_array, .fini_array, .preinit_array,
 *    .ctors, .dtors) run outside the graded functions;
 *  - a GNU indirect function (STT_GNU_IFUNC), or a global symbol that is not one of the lab's
 *    functions (`define` below): a global `_exit`, `exit` or `rl_calc_zero` would replace the
 *    library's for the whole grader;
 *  - a reference to a symbol the rules do not allow, or one that a function may not reach
 *    (through its own code, the static helpers it calls and the data it points to);
 *  - a function that is, token for token with names changed, mostly a reference function a
 *    `reference` rule names (a grader's or the runtime's own version of the step, pasted);
 *  - in the lab file's own lines (LAB.i): inline assembly (raw system calls), builtins that read
 *    or move the stack or jump out of a function, attributes that place code elsewhere or
 *    change how it is built (section, constructor, alias, weak, optimize, target ...), pragmas.
 * The rules: rules.h.
 * Exit status 0 when the object passes, 1 when it is refused, 2 on bad usage or input. */
#include <ctype.h>
#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "paste.h"
#include "rules.h"

typedef struct obj {
    unsigned char *bytes;
    size_t size;
    const Elf64_Shdr *sh;
    int nsh;
    const char *shstr;
    const Elf64_Sym *sym;
    int nsym;
    const char *str;
    int **edges_sec;      /* per section: sections it refers to (-1 terminated lists, malloc'd) */
    int *nedges_sec;
    const char ***edges_und; /* per section: undefined names it refers to */
    int *nedges_und;
} obj;

static int problems;

/* Prints one refusal line. */
static void refuse(const char *src, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(const char *src, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("objcheck: %s: ", src);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    problems++;
}

/* Loads and validates an ELF64 relocatable object; returns 0 or -1 (a message printed). */
static int load(const char *path, obj *o)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "objcheck: cannot read %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    o->bytes = malloc(size > 0 ? (size_t)size : 1);
    o->size = fread(o->bytes, 1, size > 0 ? (size_t)size : 0, f);
    fclose(f);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)o->bytes;
    if (o->size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_type != ET_REL || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff + (Elf64_Off)eh->e_shnum * sizeof(Elf64_Shdr) > o->size || eh->e_shstrndx >= eh->e_shnum) {
        fprintf(stderr, "objcheck: %s is not a 64-bit ELF object file\n", path);
        return -1;
    }
    o->sh = (const Elf64_Shdr *)(o->bytes + eh->e_shoff);
    o->nsh = eh->e_shnum;
    for (int i = 0; i < o->nsh; i++)
        if (o->sh[i].sh_type != SHT_NOBITS && o->sh[i].sh_offset + o->sh[i].sh_size > o->size) {
            fprintf(stderr, "objcheck: %s: section %d lies outside the file\n", path, i);
            return -1;
        }
    o->shstr = (const char *)o->bytes + o->sh[eh->e_shstrndx].sh_offset;
    for (int i = 0; i < o->nsh; i++)
        if (o->sh[i].sh_type == SHT_SYMTAB) {
            o->sym = (const Elf64_Sym *)(o->bytes + o->sh[i].sh_offset);
            o->nsym = (int)(o->sh[i].sh_size / sizeof(Elf64_Sym));
            if (o->sh[i].sh_link >= (Elf64_Word)o->nsh)
                return -1;
            o->str = (const char *)o->bytes + o->sh[o->sh[i].sh_link].sh_offset;
        }
    return 0;
}

static const char *sec_name(const obj *o, int i) { return o->shstr + o->sh[i].sh_name; }
static const char *sym_name(const obj *o, int i) { return o->str ? o->str + o->sym[i].st_name : ""; }

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* 1 when a section of this name may be in a lab object. */
static int section_allowed(const char *n)
{
    static const char *ok[] = { ".text", ".rodata", ".data", ".bss", ".tdata", ".tbss", ".note", ".debug",
                                ".comment", ".eh_frame", ".rela", ".symtab", ".strtab", ".shstrtab", ".group",
                                ".llvm_addrsig", ".gnu.build.attributes", NULL };
    if (!*n)
        return 1;
    for (int i = 0; ok[i]; i++)
        if (has_prefix(n, ok[i]))
            return 1;
    return 0;
}

/* The function defined at the start of section s (or the section's name). */
static const char *owner(const obj *o, int s)
{
    const char *best = NULL;
    for (int i = 1; i < o->nsym; i++)
        if (o->sym[i].st_shndx == s && ELF64_ST_TYPE(o->sym[i].st_info) == STT_FUNC) {
            const char *n = sym_name(o, i);
            if (!best || ELF64_ST_BIND(o->sym[i].st_info) != STB_LOCAL)
                best = n;
        }
    if (!best)
        for (int i = 1; i < o->nsym; i++)
            if (o->sym[i].st_shndx == s && ELF64_ST_TYPE(o->sym[i].st_info) == STT_OBJECT)
                return sym_name(o, i);
    return best ? best : sec_name(o, s);
}

/* Builds each section's references (to sections and to undefined names) from the relocations. */
static void build_edges(obj *o)
{
    o->edges_sec = calloc((size_t)o->nsh, sizeof *o->edges_sec);
    o->nedges_sec = calloc((size_t)o->nsh, sizeof *o->nedges_sec);
    o->edges_und = calloc((size_t)o->nsh, sizeof *o->edges_und);
    o->nedges_und = calloc((size_t)o->nsh, sizeof *o->nedges_und);
    for (int i = 0; i < o->nsh; i++) {
        const Elf64_Shdr *h = &o->sh[i];
        if (h->sh_type != SHT_RELA || h->sh_info >= (Elf64_Word)o->nsh || !h->sh_entsize)
            continue;
        int t = (int)h->sh_info;
        const Elf64_Rela *rel = (const Elf64_Rela *)(o->bytes + h->sh_offset);
        for (size_t k = 0; k < h->sh_size / sizeof *rel; k++) {
            int si = (int)ELF64_R_SYM(rel[k].r_info);
            if (si <= 0 || si >= o->nsym)
                continue;
            const Elf64_Sym *s = &o->sym[si];
            if (s->st_shndx == SHN_UNDEF) {
                o->edges_und[t] = realloc(o->edges_und[t], (size_t)(o->nedges_und[t] + 1) * sizeof(char *));
                o->edges_und[t][o->nedges_und[t]++] = sym_name(o, si);
            } else if (s->st_shndx < (Elf64_Half)o->nsh) {
                o->edges_sec[t] = realloc(o->edges_sec[t], (size_t)(o->nedges_sec[t] + 1) * sizeof(int));
                o->edges_sec[t][o->nedges_sec[t]++] = s->st_shndx;
            }
        }
    }
}

/* Names a lab file may take the address of although they are not its own: the C library's
 * streams (a function's address may be taken only of the file's own static functions). */
static const char *const data_names[] = { "stdout", "stderr", "stdin" };

/* Refuses every reference to a name outside the file that is not a call: the address of a
 * runtime, grader or library function is the way to reach, by arithmetic on it, the code the
 * rules deny (a called function is a PLT32 relocation; its address taken, any other kind). */
static void check_address_taken(const obj *o, const char *src)
{
    for (int i = 0; i < o->nsh; i++) {
        const Elf64_Shdr *h = &o->sh[i];
        if (h->sh_type != SHT_RELA || h->sh_info >= (Elf64_Word)o->nsh || !h->sh_entsize ||
            has_prefix(sec_name(o, (int)h->sh_info), ".debug"))
            continue;
        const Elf64_Rela *rel = (const Elf64_Rela *)(o->bytes + h->sh_offset);
        for (size_t k = 0; k < h->sh_size / sizeof *rel; k++) {
            int si = (int)ELF64_R_SYM(rel[k].r_info), type = (int)ELF64_R_TYPE(rel[k].r_info);
            if (si <= 0 || si >= o->nsym || o->sym[si].st_shndx != SHN_UNDEF || type == R_X86_64_PLT32)
                continue;
            const char *n = sym_name(o, si);
            int data = 0;
            for (size_t d = 0; d < sizeof data_names / sizeof data_names[0]; d++)
                data |= !strcmp(n, data_names[d]);
            if (data)
                continue;
            refuse(src, "%s takes the address of %s (it does not call it): a lab file calls the runtime's and the C "
                   "library's functions, and passes only its own static functions as pointers",
                   owner(o, (int)h->sh_info), n);
        }
    }
}

/* Marks in seen[] every section reachable from section s. */
static void reach(const obj *o, int s, char *seen)
{
    if (seen[s])
        return;
    seen[s] = 1;
    for (int k = 0; k < o->nedges_sec[s]; k++)
        reach(o, o->edges_sec[s][k], seen);
}

/* The step named for function f ("" when it is not an API function). */
static const char *step_of(const rl_rules *rs, const char *f)
{
    const rl_rule *d = rl_rules_define(rs, f);
    return d ? d->step : "";
}

/* Identifiers a lab file's own lines may not use, and why. */
static const struct { const char *word, *why; } banned[] = {
    { "asm", "inline assembly" }, { "__asm", "inline assembly" }, { "__asm__", "inline assembly" },
    { "__builtin_frame_address", "reading stack frames" }, { "__builtin_return_address", "reading stack frames" },
    { "__builtin_extract_return_addr", "reading stack frames" }, { "__builtin_frob_return_addr", "reading stack frames" },
    { "__builtin_dwarf_cfa", "reading stack frames" }, { "__builtin_unwind_init", "reading stack frames" },
    { "__builtin_eh_return", "jumping out of a function" }, { "__builtin_setjmp", "jumping out of a function" },
    { "__builtin_longjmp", "jumping out of a function" }, { "__builtin_apply", "calling through saved arguments" },
    { "__builtin_apply_args", "calling through saved arguments" }, { "__builtin_return", "calling through saved arguments" },
    { "__builtin_stack_save", "moving the stack" }, { "__builtin_stack_restore", "moving the stack" },
    { "__builtin___clear_cache", "writing code" },
};

/* Attributes a lab file may not give (inside __attribute__((...))), and why. */
static const struct { const char *word, *why; } banned_attrs[] = {
    { "section", "code or data placed in a section of its own" }, { "constructor", "a constructor" },
    { "destructor", "a destructor" }, { "ifunc", "an indirect function" }, { "alias", "a second name for a symbol" },
    { "weak", "a weak symbol" }, { "weakref", "a weak reference" }, { "optimize", "its own optimisation flags" },
    { "target", "its own code-generation flags" }, { "target_clones", "an indirect function" },
    { "no_instrument_function", "its own code-generation flags" }, { "naked", "a function without a frame" },
    { "visibility", "a symbol's visibility" }, { "symver", "a symbol version" },
};

/* The reason word may not be used in a lab file (NULL when it may); in_attr: inside __attribute__. */
static const char *banned_why(const char *w, size_t n, int in_attr)
{
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
        if (strlen(banned[i].word) == n && !strncmp(banned[i].word, w, n))
            return banned[i].why;
    if (in_attr) {
        if (n > 4 && !strncmp(w, "__", 2) && !strncmp(w + n - 2, "__", 2))
            w += 2, n -= 4; /* __section__ is section */
        for (size_t i = 0; i < sizeof banned_attrs / sizeof banned_attrs[0]; i++)
            if (strlen(banned_attrs[i].word) == n && !strncmp(banned_attrs[i].word, w, n))
                return banned_attrs[i].why;
    }
    return NULL;
}

/* Checks the lab file's own lines of the preprocessed source: no inline assembly, no builtin
 * that reads or moves the stack or jumps out of a function, no attribute that places code
 * elsewhere or changes how it is built, and no pragma. */
/* Headers of the runtime's and the grader's insides: their structures are not the lab's API. */
static const char *const private_headers[] = { "internal.h", "ops_internal.h", "apiwatch.h", "grade.h",
                                               "rules.h", "sandbox.h", "paste.h" };

/* Refuses a conditional directive (#if, #ifdef, #elif ...) at d (its name) that tests a
 * reserved name (__OPTIMIZE__, _FORTIFY_SOURCE, __has_include ...): those depend on how the
 * file is compiled, and what is graded may not. */
static void check_condition(const char *src, const char *d, long lineno)
{
    static const char *const conds[] = { "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef" };
    size_t n = 0;
    while (isalnum((unsigned char)d[n]) || d[n] == '_')
        n++;
    int cond = 0;
    for (size_t i = 0; i < sizeof conds / sizeof conds[0]; i++)
        cond |= strlen(conds[i]) == n && !strncmp(d, conds[i], n);
    for (const char *p = d + n; cond && *p && *p != '\n';) {
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
            continue;
        }
        if (!(isalpha((unsigned char)*p) || *p == '_')) {
            p++;
            continue;
        }
        const char *w = p;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        if (w[0] == '_' && (w[1] == '_' || isupper((unsigned char)w[1]))) {
            refuse(src, "line %ld: #%.*s tests %.*s, a name the compiler or the C library defines: what is graded "
                   "may not depend on how the file is compiled — remove the condition", lineno, (int)n, d,
                   (int)(p - w), w);
            return;
        }
    }
}

/* Refuses a #line directive or a line marker (# N "file" [flags]) in the lab file's own text,
 * however it is spelled (%: or ??= for #, comments or a spliced line between): one would pass
 * the lines after it off as another file's, which the checks below trust. */
static void check_line_directives(const char *src)
{
    FILE *f = fopen(src, "r");
    if (!f)
        return; /* check_source reports what cannot be read */
    size_t cap = 1 << 16, n = 0;
    char *t = malloc(cap);
    int c;
    while (t && (c = fgetc(f)) != EOF) {
        if (n + 2 >= cap) {
            char *m = realloc(t, cap *= 2);
            if (!m)
                break;
            t = m;
        }
        t[n++] = (char)c;
    }
    fclose(f);
    if (!t)
        return;
    t[n] = 0;
    /* translation phases 1-3: trigraph #, spliced lines, comments (each becomes a space) */
    size_t w = 0;
    for (size_t r = 0; r < n;) {
        if (t[r] == '?' && t[r + 1] == '?' && t[r + 2] == '=')
            t[w++] = '#', r += 3;
        else if (t[r] == '\\' && (t[r + 1] == '\n' || (t[r + 1] == '\r' && t[r + 2] == '\n')))
            r += t[r + 1] == '\n' ? 2 : 3;
        else
            t[w++] = t[r++];
    }
    t[w] = 0;
    long lineno = 1;
    int at_line_start = 1;
    for (size_t r = 0; r < w;) {
        if (t[r] == '"' || t[r] == '\'') { /* a literal */
            char q = t[r++];
            while (r < w && t[r] != q && t[r] != '\n')
                r += (t[r] == '\\' && r + 1 < w) ? 2 : 1;
            r += r < w && t[r] == q;
            at_line_start = 0;
        } else if (t[r] == '/' && t[r + 1] == '*') {
            char *e = strstr(t + r + 2, "*/");
            size_t end = e ? (size_t)(e - t) + 2 : w;
            for (size_t k = r; k < end; k++)
                lineno += t[k] == '\n';
            r = end;
        } else if (t[r] == '/' && t[r + 1] == '/') {
            while (r < w && t[r] != '\n')
                r++;
        } else if (t[r] == '\n') {
            lineno++, r++, at_line_start = 1;
        } else if (t[r] == ' ' || t[r] == '\t' || t[r] == '\r' || t[r] == '\f' || t[r] == '\v') {
            r++;
        } else if (at_line_start && (t[r] == '#' || (t[r] == '%' && t[r + 1] == ':'))) {
            r += t[r] == '#' ? 1 : 2;
            at_line_start = 0;
            for (;;) { /* blanks and comments before the directive's name */
                if (t[r] == ' ' || t[r] == '\t')
                    r++;
                else if (t[r] == '/' && t[r + 1] == '*') {
                    char *e = strstr(t + r + 2, "*/");
                    r = e ? (size_t)(e - t) + 2 : w;
                } else
                    break;
            }
            if ((t[r] >= '0' && t[r] <= '9') || (!strncmp(t + r, "line", 4) && !isalnum((unsigned char)t[r + 4]) &&
                                                  t[r + 4] != '_')) {
                refuse(src, "line %ld: a #line directive or a line marker: a lab file may not renumber its lines "
                       "or give them another file's name — remove it", lineno);
                break;
            }
            check_condition(src, t + r, lineno);
        } else {
            at_line_start = 0, r++;
        }
    }
    free(t);
}

static void check_source(const char *ipath, const char *src)
{
    check_line_directives(src);
    char refused_header[sizeof private_headers / sizeof private_headers[0]] = { 0 };
    int refused_other = 0;
    FILE *f = fopen(ipath, "r");
    if (!f) {
        fprintf(stderr, "objcheck: cannot read %s\n", ipath);
        problems++;
        return;
    }
    const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
    char *line = NULL;
    size_t cap = 0;
    int mine = 0, attr_depth = 0, attr_next = 0; /* attr_depth: parentheses open inside __attribute__ */
    long lineno = 0;
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#') {
            char *q = strchr(line, '"'), *e = q ? strchr(q + 1, '"') : NULL;
            if (!strncmp(line, "#pragma", 7) && mine) { /* #pragma and _Pragma(...) of the lab file */
                lineno++;
                refuse(src, "line %ld: a pragma (%.*s) is not allowed in a lab file: the grader builds it with "
                       "fixed flags", lineno, (int)strcspn(line, "\n"), line);
            } else if (q && e) { /* # N "file" flags */
                *e = 0;
                const char *fb = strrchr(q + 1, '/') ? strrchr(q + 1, '/') + 1 : q + 1;
                mine = strcmp(fb, base) == 0;
                size_t fl = strlen(fb);
                int header = fl > 2 && (!strcmp(fb + fl - 2, ".h") || !strcmp(fb + fl - 2, ".c"));
                if (!mine && q[1] != '<' && (!header || strstr(q + 1, "grader/")) && !refused_other) {
                    refused_other = 1;
                    refuse(src, "includes %s, which is not a header of the runtime's API: a lab file includes only "
                           "the headers its handout names", q + 1);
                }
                for (size_t k = 0; k < sizeof private_headers / sizeof private_headers[0]; k++)
                    if (!strcmp(fb, private_headers[k]) && !refused_header[k]) {
                        refused_header[k] = 1;
                        refuse(src, "includes %s (%s), which is the runtime's or the grader's own, not its API: a "
                               "lab file includes only the headers its handout names", fb, q + 1);
                    }
                lineno = strtol(line + 1, NULL, 10) - 1;
            }
            continue;
        }
        lineno++;
        if (!mine)
            continue;
        for (char *p = line; *p;) {
            if (*p == '"' || *p == '\'') { /* skip a literal */
                char qc = *p++;
                while (*p && *p != qc)
                    p += (*p == '\\' && p[1]) ? 2 : 1;
                p += *p != 0;
            } else if (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
                char *w = p;
                while (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))
                    p++;
                size_t n = (size_t)(p - w);
                if ((n == 13 && !strncmp(w, "__attribute__", 13)) || (n == 11 && !strncmp(w, "__attribute", 11)))
                    attr_next = 1;
                const char *why = banned_why(w, n, attr_depth > 0);
                if (why)
                    refuse(src, "line %ld: %s%.*s (%s) is not allowed in a lab file: write the step in plain C with "
                           "the runtime's API", lineno, attr_depth > 0 ? "the attribute " : "", (int)n, w, why);
            } else {
                if (*p == '(' && (attr_next || attr_depth > 0))
                    attr_depth++, attr_next = 0;
                else if (*p == ')' && attr_depth > 0)
                    attr_depth--;
                p++;
            }
        }
    }
    free(line);
    fclose(f);
}

/* The whole text of a file (malloc'd), or NULL. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *t = n >= 0 ? malloc((size_t)n + 1) : NULL;
    size_t k = t ? fread(t, 1, (size_t)n, f) : 0;
    if (t)
        t[k] = 0;
    fclose(f);
    return t;
}

#define PASTE_SHARE 0.85 /* a lab function holding this much of a reference's fingerprints is a paste */
#define PASTE_MIN 15     /* references with fewer fingerprints are too short to tell */

/* Refuses a lab function that holds most of a reference function's code (paste.h). */
static void check_pastes(const rl_rules *rs, const char *src)
{
    char *text = read_text(src);
    int nf = 0;
    rl_fingerprint *fs = text ? rl_paste_functions(text, &nf) : NULL;
    for (int i = 0; i < rs->n; i++) {
        const rl_rule *r = &rs->r[i];
        if (r->kind != 'r')
            continue;
        char *rtext = read_text(r->func);
        if (!rtext) {
            fprintf(stderr, "objcheck: cannot read %s (a reference rule's file)\n", r->func);
            problems++;
            continue;
        }
        int nr = 0;
        rl_fingerprint *rf = rl_paste_functions(rtext, &nr);
        for (int k = 0; k < r->npats; k++) {
            const rl_fingerprint *ref = NULL;
            for (int j = 0; j < nr && !ref; j++)
                if (!strcmp(rf[j].name, r->pats[k]))
                    ref = &rf[j];
            if (!ref) {
                fprintf(stderr, "objcheck: %s defines no %s (a reference rule)\n", r->func, r->pats[k]);
                problems++;
                continue;
            }
            for (int j = 0; j < nf && ref->n >= PASTE_MIN; j++) {
                double share = rl_paste_share(ref, &fs[j]);
                if (share >= PASTE_SHARE)
                    refuse(src, "%s is %.0f%% the code of %s in %s%s%s: a step is written, not pasted (renamed "
                           "variables and moved lines do not hide it)", fs[j].name, 100 * share, ref->name, r->func,
                           *r->why ? ", " : "", r->why);
            }
        }
        for (int j = 0; j < nr; j++)
            rl_paste_free(&rf[j]);
        free(rf);
        free(rtext);
    }
    for (int j = 0; j < nf; j++)
        rl_paste_free(&fs[j]);
    free(fs);
    free(text);
}

static void free_obj(obj *o)
{
    for (int i = 0; o->edges_sec && i < o->nsh; i++) {
        free(o->edges_sec[i]);
        free(o->edges_und[i]);
    }
    free(o->edges_sec);
    free(o->nedges_sec);
    free(o->edges_und);
    free(o->nedges_und);
    free(o->bytes);
}

int main(int argc, char **argv)
{
    rl_rules rs = { 0 };
    const char *src = NULL, *ipath = NULL, *opath = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rules") == 0 && i + 1 < argc) {
            if (rl_rules_read_file(argv[++i], &rs)) {
                rl_rules_free(&rs);
                return 2;
            }
        } else if (strcmp(argv[i], "--source") == 0 && i + 1 < argc) {
            src = argv[++i];
        } else if (strcmp(argv[i], "--preprocessed") == 0 && i + 1 < argc) {
            ipath = argv[++i];
        } else if (argv[i][0] != '-' && !opath) {
            opath = argv[i];
        } else {
            opath = NULL;
            break;
        }
    }
    if (!opath || !src) {
        fprintf(stderr, "usage: objcheck --rules FILE [--rules FILE ...] --source LAB.c [--preprocessed LAB.i] "
                        "LAB.o\n");
        rl_rules_free(&rs);
        return 2;
    }
    obj o = { 0 };
    if (load(opath, &o)) {
        free_obj(&o);
        rl_rules_free(&rs);
        return 2;
    }
    if (ipath)
        check_source(ipath, src);
    check_pastes(&rs, src);

    for (int i = 1; i < o.nsh; i++) {
        const char *n = sec_name(&o, i);
        if (has_prefix(n, ".init_array") || has_prefix(n, ".fini_array") || has_prefix(n, ".preinit_array") ||
            has_prefix(n, ".ctors") || has_prefix(n, ".dtors") || !strcmp(n, ".init") || !strcmp(n, ".fini"))
            refuse(src, "section %s: a constructor or destructor runs before or after the graded functions — "
                   "remove it (no __attribute__((constructor)) or ((destructor)))", n);
        else if ((has_prefix(n, ".data") || has_prefix(n, ".bss") || has_prefix(n, ".tdata") || has_prefix(n, ".tbss")) &&
                 o.sh[i].sh_size > 0)
            refuse(src, "%s (section %s) is a variable of the file's own: a lab file keeps no state between calls "
                   "in static or global variables (every rank of a run is a thread of one process, so it would be "
                   "shared by all of them) — keep it in the structures the API gives you", owner(&o, i), n);
        else if (!section_allowed(n))
            refuse(src, "section %s is not code, data or read-only data: a lab file may not place code or "
                   "data in sections of its own", n);
        else if ((o.sh[i].sh_flags & SHF_EXECINSTR) && !has_prefix(n, ".text"))
            refuse(src, "section %s holds code but is not .text", n);
    }

    for (int i = 1; i < o.nsym; i++) {
        const Elf64_Sym *s = &o.sym[i];
        const char *n = sym_name(&o, i);
        int bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
        if (type == STT_GNU_IFUNC)
            refuse(src, "%s is an indirect function (ifunc): its resolver would run while the grader loads", n);
        if (s->st_shndx == SHN_UNDEF || bind == STB_LOCAL || !*n)
            continue;
        const rl_rule *d = rl_rules_define(&rs, n);
        if (!d)
            refuse(src, "defines the global symbol %s, which is not one of the lab's functions: make it static "
                   "(a global of that name would replace the library's or the grader's own for the whole grader)",
                   n);
        else if (type != STT_FUNC)
            refuse(src, "%s (step %s) must be a function", n, d->step);
    }

    build_edges(&o);
    check_address_taken(&o, src);
    /* every undefined name referenced, by the lab-wide rules */
    for (int i = 1; i < o.nsym; i++) {
        const char *n = sym_name(&o, i);
        if (o.sym[i].st_shndx != SHN_UNDEF || !*n)
            continue;
        const rl_rule *deny = rl_rules_find(&rs, 'n', NULL, n), *allow = rl_rules_find(&rs, 'a', NULL, n);
        if (deny || !allow) {
            char users[512] = "";
            for (int s = 1; s < o.nsh; s++)
                for (int k = 0; k < o.nedges_und[s]; k++)
                    if (!strcmp(o.edges_und[s][k], n)) {
                        const char *f = owner(&o, s), *st = step_of(&rs, f);
                        size_t len = strlen(users);
                        snprintf(users + len, sizeof users - len, "%s%s%s%s%s", len ? ", " : "", f, *st ? " (" : "",
                                 st, *st ? ")" : "");
                        break;
                    }
            if (deny)
                refuse(src, "%s calls or refers to %s, which a lab file may not use%s%s", *users ? users : "the file",
                       n, *deny->why ? ": " : "", deny->why);
            else
                refuse(src, "%s calls or refers to %s, which is not among the functions a lab file may use (the "
                       "runtime's API in the handout, and the C library's string, memory, printing and math "
                       "functions)", *users ? users : "the file", n);
        }
    }
    /* what each function of the lab reaches, by the per-function rules */
    char *seen = malloc((size_t)o.nsh);
    for (int i = 1; i < o.nsym; i++) {
        const Elf64_Sym *s = &o.sym[i];
        const char *f = sym_name(&o, i);
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF || s->st_shndx >= o.nsh ||
            !rl_rules_define(&rs, f))
            continue;
        memset(seen, 0, (size_t)o.nsh);
        reach(&o, s->st_shndx, seen);
        for (int sec = 1; sec < o.nsh; sec++) {
            if (!seen[sec])
                continue;
            for (int k = 0; k < o.nedges_und[sec]; k++) {
                const char *n = o.edges_und[sec][k];
                const rl_rule *r = rl_rules_find(&rs, 'f', f, n);
                if (!r)
                    continue;
                refuse(src, "%s (step %s) may not use %s%s%s%s%s", f, step_of(&rs, f), n,
                       sec != (int)s->st_shndx ? ", reached through " : "", sec != (int)s->st_shndx ? owner(&o, sec) : "",
                       *r->why ? ": " : "", r->why);
                seen[sec] = 0;
                break;
            }
        }
    }
    free(seen);
    free_obj(&o);
    rl_rules_free(&rs);
    if (problems) {
        printf("objcheck: %s: %d problem%s; the grader links only lab files that pass this check (the rules: "
               "grader/allow/)\n", src, problems, problems == 1 ? "" : "s");
        return 1;
    }
    return 0;
}
