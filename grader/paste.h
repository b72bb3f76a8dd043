/* paste.h — finds a reference function's code pasted into a lab file. A function's code is
 * reduced to its tokens with every identifier but C's keywords, every number and every string
 * replaced by one symbol each (so renaming, reformatting and comments change nothing), and
 * fingerprinted by winnowing: the least hash of every window of W consecutive hashes of K
 * consecutive tokens. The share of a reference's fingerprints found in a lab function says how
 * much of the reference it holds. */
#ifndef RL_PASTE_H
#define RL_PASTE_H
#include <stddef.h>
#include <stdint.h>

/* A function's fingerprints (sorted, distinct). */
typedef struct rl_fingerprint {
    char name[64];
    uint64_t *h;
    int n;
} rl_fingerprint;

/* The fingerprints of every function defined in the C source text (malloc'd array, *n of
 * them; rl_paste_free each and free the array). */
rl_fingerprint *rl_paste_functions(const char *text, int *n);
/* The share (0..1) of ref's fingerprints that f holds too. */
double rl_paste_share(const rl_fingerprint *ref, const rl_fingerprint *f);
/* Frees one function's fingerprints. */
void rl_paste_free(rl_fingerprint *f);

#endif
