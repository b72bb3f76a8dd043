/* fault.h — fault injection specs (--fault KIND:key=value:...). */
#ifndef RL_FAULT_H
#define RL_FAULT_H
#include <stdint.h>

typedef enum {
    RL_FAULT_HANG = 0,    /* hang:rank=R:seq=S — rank R never enters collective seq S (world) */
    RL_FAULT_STRAGGLER,   /* straggler:rank=R:ms=X — rank R's compute is X ms slower per step */
    RL_FAULT_MISMATCH,    /* mismatch:rank=R:seq=S — rank R calls collective S with a wrong count */
    RL_FAULT_NKINDS
} rl_fault_kind;

typedef struct rl_fault {
    rl_fault_kind kind;
    int rank;
    int64_t seq;
    double ms;
} rl_fault;

#define RL_MAX_FAULTS 8

/* Parses one spec into f; on error returns -1 with a message in err. */
int rl_fault_parse(const char *spec, rl_fault *f, char *err, int errlen);
/* "hang", "straggler", "mismatch". */
const char *rl_fault_kind_name(rl_fault_kind k);
/* One line per fault kind for --help. */
const char *rl_fault_help(void);

#endif
