/* fuzz.h — what every fuzz target shares. A target is one function, LLVMFuzzerTestOneInput,
 * built two ways: with clang's libFuzzer (make fuzz; the sanitizer build's smoke test) and with
 * replay.c's main, which runs it once on each file it is given (the regression corpus, in
 * every build, gcc's included). */
#ifndef RL_FUZZ_H
#define RL_FUZZ_H
#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point: one input; returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a file the readers open by path (an in-memory file, /proc/self/fd/N, in path);
 * returns its descriptor (close it after), or -1. */
int rl_fuzz_file(const uint8_t *data, size_t size, char *path, size_t pathlen);
/* The input as a NUL-terminated string (a NUL inside ends it early); free it after. */
char *rl_fuzz_string(const uint8_t *data, size_t size);

#endif
