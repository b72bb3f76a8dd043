/* rng.h — a small, seeded, reproducible random generator (splitmix64). */
#ifndef RL_RNG_H
#define RL_RNG_H
#include <math.h>
#include <stdint.h>

typedef struct rl_rng { uint64_t state; } rl_rng;

/* A generator for (seed, stream): different streams give independent sequences. */
static inline rl_rng rl_rng_make(uint64_t seed, uint64_t stream)
{
    rl_rng r = { seed * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull + 1 };
    return r;
}

/* Next 64 random bits. */
static inline uint64_t rl_rng_next(rl_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double rl_rng_uniform(rl_rng *r) { return (double)(rl_rng_next(r) >> 11) * 0x1.0p-53; }

/* Standard normal (Box-Muller). */
static inline double rl_rng_normal(rl_rng *r)
{
    double u1 = rl_rng_uniform(r), u2 = rl_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Uniform integer in [0, n). */
static inline uint64_t rl_rng_below(rl_rng *r, uint64_t n) { return n ? rl_rng_next(r) % n : 0; }

#endif
