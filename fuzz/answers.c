/* answers.c — fuzz target: the answers-file reader (key = value lines, comments, answers given
 * twice) and the number and letter parsers, on every value of every key the input has. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz.h"
#include "grade.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], value[256];
    int fd = rl_fuzz_file(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    /* the keys: the text before each '=' of the input (and a few the labs use) */
    static const char *const fixed[] = { "learner", "h1_ddp_gb", "i1_reverse_order", "" };
    char *text = rl_fuzz_string(data, size);
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
        rl_grade_answer(path, fixed[k], value, sizeof value);
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = 0;
        while (*line == ' ' || *line == '\t')
            line++;
        for (char *e = line + strlen(line); e > line && (e[-1] == ' ' || e[-1] == '\t');)
            *--e = 0;
        if (rl_grade_answer(path, line, value, sizeof value) == 1) {
            double v;
            rl_grade_parse_number(value, &v);
            rl_grade_parse_choice(value);
        }
    }
    free(text);
    close(fd);
    return 0;
}
