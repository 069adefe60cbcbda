/* Between the core's structures and the protocol's messages. Everything returned is allocated in
 * the arena and lives until it is reset. */
#ifndef RS_CODEC_H
#define RS_CODEC_H

#include "arena.h"
#include "robosim/v1/robosim.pb-c.h"
#include "rs_core.h"

/* WorldInfo for world `id`; NULL when out of memory. */
Robosim__V1__WorldInfo *rs_codec_world_info(rs_arena_t *a, uint64_t id, const rs_world_t *w);

/* The world's State (entities, events of the last step, stats). */
Robosim__V1__State *rs_codec_state(rs_arena_t *a, uint64_t id, const rs_world_t *w);

/* The world's Spec (entities' variables, actuators, sensors, parameters, modes, events). */
Robosim__V1__Spec *rs_codec_spec(rs_arena_t *a, uint64_t id, const rs_world_t *w);

/* The request's parameters as core rs_param_t (pointing into the request). */
rs_param_t *rs_codec_params(rs_arena_t *a, Robosim__V1__Param *const *params, size_t n);

/* The motion specification of world w as a MotionSpecReply (loaded = 0 without one), in arena a;
 * NULL when out of memory. */
Robosim__V1__MotionSpecReply *rs_codec_motion_spec(rs_arena_t *a, const rs_world_t *w);

/* Randomized parameters (randomize_codec.c). The request's samplers as core items (pointing
 * into the request; NULL when out of memory). */
struct rs_randomize_item *rs_codec_randomize_items(rs_arena_t *a,
                                                   Robosim__V1__Sampler *const *s, size_t n);
/* State.randomized and Spec.randomize of world w (nothing when it has none): 0 or -1 (memory). */
int rs_codec_state_randomized(rs_arena_t *a, Robosim__V1__State *s, const rs_world_t *w);
int rs_codec_spec_randomize(rs_arena_t *a, Robosim__V1__Spec *sp, const rs_world_t *w);
/* BatchArraysReply.randomized_items from world `like` and NaN rows for nworlds (0 or -1), and
 * world i's row from w (NULL: NaN). */
int rs_codec_arrays_randomized_new(rs_arena_t *a, Robosim__V1__BatchArraysReply *out,
                                   const rs_world_t *like, size_t nworlds);
void rs_codec_arrays_randomized_row(Robosim__V1__BatchArraysReply *out, size_t i,
                                    const rs_world_t *w);

/* State.jacobian from a Step's sensitivity (jacobian_codec.c); NULL with st set when the
 * propagation failed or memory ran out. params: the Step's parameter names (kept by pointer). */
struct rs_sens;
Robosim__V1__Jacobian *rs_codec_jacobian(rs_arena_t *a, struct rs_sens *sens,
                                         char *const *params, rs_status_t *st);

#endif
