/* diagnose.h — reference analyses for failure debugging (lab 31.4): flight-recorder dumps
 * (FILE.flight.json, written by the watchdog; see flight.c) → culprit rank, collective seq
 * and kind of fault; spread of per-rank figures (step times → stragglers, expert hits →
 * hot experts); the first non-finite or spiking norm over (step, rank, layer).
 * Thresholds (the course's MoE-imbalance test, used for stragglers too): CV > 0.4 or
 * max/min > 3 flags an imbalance; a norm above 5× its recent mean (or not finite) is a spike. */
#ifndef RL_DIAGNOSE_H
#define RL_DIAGNOSE_H
#include <stddef.h>
#include <stdint.h>

/* One flight record as dumped. */
typedef struct rl_diag_rec {
    int rank;
    int64_t seq;        /* collective seq on its communicator; -1 for send/recv */
    int64_t p2p_seq;
    char op[24];        /* "all_reduce", "send" ... */
    int64_t count;
    char dtype[8];
    int peer;
    char comm[24];
    char state[12];     /* "enqueued", "started", "completed", "failed" */
    double t_enqueued;
} rl_diag_rec;

#define RL_DIAG_MAX_RANKS 4096 /* a dump's ranks are 0 .. RL_DIAG_MAX_RANKS-1 */

/* Every record of one or more dumps. */
typedef struct rl_diag_flight {
    int nranks;         /* highest rank seen + 1 (at most RL_DIAG_MAX_RANKS) */
    int nrec;
    rl_diag_rec *rec;
    char verdict[512];  /* the watchdog's own verdict line (from the first dump) */
} rl_diag_flight;

/* Reads a flight dump and appends its records to fl (zero it first; several dumps — e.g. one
 * per process — merge). RL_OK, or RL_ERR_IO / RL_ERR_ARG with the problem in err (a rank
 * outside 0..RL_DIAG_MAX_RANKS-1, a seq below -1, a record without seq, op or comm). */
int rl_diag_flight_load(const char *path, rl_diag_flight *fl, char *err, size_t errlen);
/* Frees the records. */
void rl_diag_flight_free(rl_diag_flight *fl);

typedef enum { RL_DIAG_NONE = 0, RL_DIAG_HANG, RL_DIAG_MISMATCH, RL_DIAG_P2P } rl_diag_kind;

typedef struct rl_diag_result {
    rl_diag_kind kind;
    int rank;           /* the culprit, -1 if none can be named */
    int64_t seq;        /* the collective seq (p2p: the p2p seq) */
    char comm[24];
    char op[24];        /* what the others called */
    char message[512];  /* one line: what happened and who is to blame */
} rl_diag_result;

/* "none", "hang", "mismatch", "p2p". */
const char *rl_diag_kind_name(rl_diag_kind k);
/* The root cause of a failed run from every rank's flight records: of the communicators'
 * anomalies (the first seq at which a communicator's members stop agreeing or do not all get
 * through), the one that began first — a mismatch (calls differ; culprit: the rank that deviates
 * from the majority) or a hang (culprit: the rank responsible; -1 when none can be blamed); else
 * a send/recv never matched (p2p); else RL_DIAG_NONE, rank -1, seq -1. The same contract as lab
 * 31's diagnose() (labs/31_3d_moe_debug/README.md, step 31.4, with its conventions for ties).
 * The order of records in the dump does not matter; a record whose rank is outside 0..nranks-1
 * is ignored. RL_OK, or RL_ERR_ARG for NULL arguments or nranks outside 0..RL_DIAG_MAX_RANKS. */
int rl_diag_flight_analyze(const rl_diag_flight *fl, rl_diag_result *out);

/* Thresholds of the spread analysis (zero fields take the defaults shown). */
typedef struct rl_diag_spread_cfg {
    double cv_max;      /* 0.4: coefficient of variation above this is an imbalance */
    double ratio_max;   /* 3: max/min above this is an imbalance */
    double rel_outlier; /* 1.2: an outlier is at least this × the median ... */
    double robust_z;    /* 3.5: ... and this many scaled MADs (1.4826·MAD) above it */
} rl_diag_spread_cfg;

typedef struct rl_diag_spread {
    int n;
    double mean, stddev, cv, min, max, ratio, median, mad;
    int argmin, argmax;
    int imbalanced;     /* cv > cv_max or max/min > ratio_max */
    int noutliers;      /* values high above the rest (robust z and relative test) */
    int outlier;        /* the worst outlier, -1 if none */
    int culprit;        /* outlier if any, else argmax when imbalanced, else -1 */
    char message[256];
} rl_diag_spread;

/* Spread of n values (per-rank step times, per-expert hits ...). RL_OK or RL_ERR_ARG. */
int rl_diag_spread_of(const double *x, int n, const rl_diag_spread_cfg *cfg, rl_diag_spread *out, char *err,
                      size_t errlen);
/* The straggler detector: rl_diag_spread_of over per-rank step times, with a message naming
 * the slow rank and what everyone else waits ("rank 17: 3150 ms vs median 2200 ms ..."). */
int rl_diag_straggler(const double *step_ms, int nranks, const rl_diag_spread_cfg *cfg, rl_diag_spread *out,
                      char *err, size_t errlen);

/* Thresholds of the spike detector (zero fields take the defaults). */
typedef struct rl_diag_spike_cfg {
    int window;         /* 5: the recent mean is over the last `window` finite steps */
    double factor;      /* 5: spike when value > factor × recent mean */
    int min_history;    /* 1: steps of history needed before the factor test applies */
    int reverse_layers; /* 1 for gradient norms: backward visits the last layer first */
} rl_diag_spike_cfg;

typedef struct rl_diag_spike {
    int found;
    int step, rank, layer;
    double value, recent_mean;
    int nonfinite;      /* 1: NaN or Inf, 0: a spike */
    char message[256];
} rl_diag_spike;

/* The first (step, then layer in execution order, then rank) norm that is non-finite or above
 * factor × its (rank, layer)'s recent mean; norms[(step·ranks + rank)·layers + layer].
 * RL_OK (found or not) or RL_ERR_ARG. */
int rl_diag_spike_find(const double *norms, int steps, int ranks, int layers, const rl_diag_spike_cfg *cfg,
                       rl_diag_spike *out, char *err, size_t errlen);

#endif
