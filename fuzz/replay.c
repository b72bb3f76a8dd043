/* replay.c — runs a fuzz target once on each file given, and on each file of each folder
 * given: the regression corpus, replayed by every build (no libFuzzer needed). Prints how many
 * inputs ran; a crash is the test's failure. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fuzz.h"

/* Runs the target on one file; 0, or -1 when it cannot be read. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap)
            buf = realloc(buf, cap *= 2);
    fclose(f);
    if (!buf)
        return -1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int ran = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) {
            fprintf(stderr, "replay: cannot read %s\n", argv[i]);
            bad = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= replay_file(argv[i]) != 0, ran++;
            continue;
        }
        struct dirent **ents;
        int n = scandir(argv[i], &ents, NULL, alphasort);
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], ents[k]->d_name);
            if (ents[k]->d_name[0] != '.' && !stat(path, &st) && S_ISREG(st.st_mode)) {
                if (replay_file(path))
                    fprintf(stderr, "replay: cannot read %s\n", path), bad = 1;
                ran++;
            }
            free(ents[k]);
        }
        free(ents);
    }
    printf("replayed %d inputs\n", ran);
    return bad;
}
