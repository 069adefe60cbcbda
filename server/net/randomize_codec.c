/* Randomized physics per episode on the wire (CreateWorld.randomize, Reset.randomize,
 * State.randomized, Spec.randomize, BatchArraysReply.randomized): see rs_randomize.h. */
#include "rs_codec.h"
#include "rs_randomize.h"

#include <math.h>
#include <string.h>

rs_randomize_item_t *rs_codec_randomize_items(rs_arena_t *a, Robosim__V1__Sampler *const *s,
                                              size_t n)
{
    rs_randomize_item_t *out = rs_arena_alloc(a, n * sizeof *out + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++)
        out[i] = (rs_randomize_item_t){s[i]->item, s[i]->dist, s[i]->a, s[i]->b};
    return out;
}

int rs_codec_state_randomized(rs_arena_t *a, Robosim__V1__State *s, const rs_world_t *w)
{
    size_t n = rs_world_randomize_count(w);
    if (!n)
        return 0;
    const double *v = rs_world_randomized(w);
    Robosim__V1__Draw **draws = rs_arena_alloc(a, n * sizeof *draws);
    if (!draws)
        return -1;
    for (size_t i = 0; i < n; i++) {
        Robosim__V1__Draw *d = rs_arena_alloc(a, sizeof *d);
        if (!d)
            return -1;
        robosim__v1__draw__init(d);
        d->item = (char *)rs_world_randomize_item(w, i)->item;
        d->value = v[i];
        draws[i] = d;
    }
    s->n_randomized = n;
    s->randomized = draws;
    return 0;
}

int rs_codec_spec_randomize(rs_arena_t *a, Robosim__V1__Spec *sp, const rs_world_t *w)
{
    size_t n = rs_world_randomize_count(w);
    if (!n)
        return 0;
    Robosim__V1__Sampler **out = rs_arena_alloc(a, n * sizeof *out);
    if (!out)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const rs_randomize_item_t *it = rs_world_randomize_item(w, i);
        Robosim__V1__Sampler *p = rs_arena_alloc(a, sizeof *p);
        if (!p)
            return -1;
        robosim__v1__sampler__init(p);
        p->item = (char *)it->item;
        p->dist = (char *)it->dist;
        p->a = it->a;
        p->b = it->b;
        out[i] = p;
    }
    sp->n_randomize = n;
    sp->randomize = out;
    return 0;
}

int rs_codec_arrays_randomized_new(rs_arena_t *a, Robosim__V1__BatchArraysReply *out,
                                   const rs_world_t *like, size_t nworlds)
{
    size_t k = like ? rs_world_randomize_count(like) : 0;
    if (!k)
        return 0;
    char **items = rs_arena_alloc(a, k * sizeof *items);
    double *rows = rs_arena_alloc(a, k * nworlds * sizeof *rows + 1);
    if (!items || !rows)
        return -1;
    for (size_t i = 0; i < k; i++)
        items[i] = (char *)rs_world_randomize_item(like, i)->item;
    for (size_t i = 0; i < k * nworlds; i++)
        rows[i] = NAN;
    out->n_randomized_items = k;
    out->randomized_items = items;
    out->n_randomized = k * nworlds;
    out->randomized = rows;
    return 0;
}

void rs_codec_arrays_randomized_row(Robosim__V1__BatchArraysReply *out, size_t i,
                                    const rs_world_t *w)
{
    size_t k = out->n_randomized_items, n = w ? rs_world_randomize_count(w) : 0;
    const double *v = w ? rs_world_randomized(w) : NULL;
    for (size_t j = 0; j < k; j++) {
        double x = NAN;
        for (size_t q = 0; q < n; q++)
            if (strcmp(rs_world_randomize_item(w, q)->item, out->randomized_items[j]) == 0)
                x = v[q];
        out->randomized[i * k + j] = x;
    }
}
