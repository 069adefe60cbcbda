/* Randomized physics per episode (domain randomization): named model parameters drawn from
 * distributions at every reset of a world, from the reset's seed, so an episode's seed fixes its
 * physics as it fixes its start. The distributions are the Monte Carlo samplers' (rs_montecarlo.h:
 * "entity.parameter" or "entity.parameter[k]", uniform(a, b) or normal(mean, deviation)), but
 * they set the model's parameters (friction, masses, drag, ...), not only the initial
 * conditions: each reset builds the world's model with the draws (copy on write, as SetParams). */
#ifndef RS_RANDOMIZE_H
#define RS_RANDOMIZE_H

#include "rs_montecarlo.h"

/* One distribution as a client names it. */
typedef struct rs_randomize_item {
    const char *item; /* "finger.static_friction", "arm.link_mass[1]" */
    const char *dist; /* "uniform" or "normal" */
    double a, b;      /* uniform: [a, b]; normal: mean a, deviation b */
} rs_randomize_item_t;

/* Validate n distributions for world w and make them the world's (replacing any it had; n = 0
 * removes them); the next rs_world_reset draws them. A uniform range must lie within the
 * parameter's bounds; a normal's draws are clipped to them. Returns 0, or RS_ENOTFOUND /
 * RS_EINVAL / RS_ERANGE with a message naming the item (the world is then unchanged). */
int rs_world_set_randomize(rs_world_t *w, const rs_randomize_item_t *items, size_t n,
                           rs_status_t *st);

/* The world's distributions: their number, and item i's description (NULL past the end). */
size_t rs_world_randomize_count(const rs_world_t *w);
const rs_randomize_item_t *rs_world_randomize_item(const rs_world_t *w, size_t i);

/* The values drawn at the world's last reset, one per distribution (NULL when it has none). */
const double *rs_world_randomized(const rs_world_t *w);

/* Draw distributions r (a world's w->randomize) from `seed` for model m: the parameters to set
 * (*params, owned by r, valid until the next draw) and their number; rs_world_reset sets them
 * with rs_world_set_params before it resets the data. */
size_t rs_randomize_draw(struct rs_randomize *r, const rs_model_t *m, uint64_t seed,
                         const rs_param_t **params);

/* Free a world's distributions (rs_world_destroy). */
void rs_randomize_free(struct rs_randomize **r);

#endif
