/* Seeded uniform numbers for the core tests' random scenarios (splitmix64): a test sets
 * rng_state to a scenario's seed, and the scenario replays from it. */
#ifndef RS_TEST_SEEDED_RNG_H
#define RS_TEST_SEEDED_RNG_H

#include <stdint.h>

static uint64_t rng_state;

/* A uniform double in [lo, hi) from rng_state, which it advances. */
static inline double urand(double lo, double hi)
{
    rng_state += 0x9E3779B97F4A7C15ull;
    uint64_t z = rng_state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (double)(z >> 11) / 9007199254740992.0;
}

#endif
