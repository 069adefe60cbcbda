/* The world's random numbers: xoshiro256** seeded by splitmix64, deterministic for a seed. Its
 * state lives in the data (rs_data_t.rng), so snapshots and copies carry it. */
#include "rs_data.h"

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(uint64_t s[4])
{
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

void rs_rng_seed(uint64_t rng[4], uint64_t seed)
{
    uint64_t sm = seed;
    for (int i = 0; i < 4; i++)
        rng[i] = splitmix64(&sm);
}

double rs_rand_uniform(rs_entity_data_t *ed)
{
    return rs_data_uniform(ed->data);
}

double rs_data_uniform(rs_data_t *d)
{
    return (double)(rng_next(d->rng) >> 11) * 0x1.0p-53;
}
