/* mem.h — the per-rank memory account: every tensor allocation is charged to a category,
 * with current and peak bytes per category and in total (the memory view reads these). */
#ifndef RL_MEM_H
#define RL_MEM_H
#include <stdint.h>

typedef enum {
    RL_MEM_PARAM = 0, RL_MEM_GRAD, RL_MEM_OPTIM, RL_MEM_ACTIVATION, RL_MEM_COMM, RL_MEM_OTHER,
    RL_MEM_NCAT
} rl_mem_cat;

typedef struct rl_mem_account {
    int64_t current[RL_MEM_NCAT];
    int64_t peak[RL_MEM_NCAT];
    int64_t current_total;
    int64_t peak_total;
} rl_mem_account;

/* Category name as printed and written to traces: "param", "grad", "optim", ... */
const char *rl_mem_cat_name(rl_mem_cat cat);
/* Parses a category name; returns -1 when unknown. */
int rl_mem_cat_parse(const char *name);
/* Adds (bytes > 0) or removes (bytes < 0) bytes in a category, updating peaks. */
void rl_mem_charge(rl_mem_account *acc, rl_mem_cat cat, int64_t bytes);
/* Resets the peaks to the current values (e.g. to measure one training step). */
void rl_mem_reset_peaks(rl_mem_account *acc);
/* Bytes this process may still allocate: the smaller of /proc/meminfo's MemAvailable and what
 * the address-space limit (ulimit -v) leaves; -1 when neither can be read. */
double rl_mem_available(void);
/* Bytes of address space the limit (ulimit -v) still leaves this process; -1 when unlimited. */
double rl_mem_address_space_left(void);
/* Formats a byte count with a binary unit ("12.5 MiB") into buf; returns buf. */
char *rl_fmt_bytes(double bytes, char *buf, int size);

#endif
