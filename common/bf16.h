/* bf16.h — bfloat16 storage: round-to-nearest-even from f32, exact widening to f32. */
#ifndef RL_BF16_H
#define RL_BF16_H
#include <stdint.h>
#include <string.h>

typedef uint16_t rl_bf16;

/* f32 → bf16 with round-to-nearest-even; NaN stays NaN (quiet). */
static inline rl_bf16 rl_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (rl_bf16)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (rl_bf16)(u >> 16);
}

/* bf16 → f32 (exact). */
static inline float rl_bf16_to_f32(rl_bf16 h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Rounds an f32 value to the nearest bf16-representable f32. */
static inline float rl_round_bf16(float f) { return rl_bf16_to_f32(rl_f32_to_bf16(f)); }

#endif
