/* The integrator: ARKODE's ERKStep with root finding, behind this one interface (core-private).
 *
 * integrator.c is the only file that includes ARKODE. It uses SUNDIALS' public API only
 * (robosim's own N_Vector over the caller's state array, rs_nvector.h, and ERKStep's documented
 * functions), checks every return flag and turns failures into RS_E* codes with a message. It builds against SUNDIALS
 * 6.x (Debian bookworm's 6.4, what scripts/install builds) and 7.x (SUNContext creation and the
 * error handler differ; see SUNDIALS_VERSION_MAJOR in integrator.c).
 *
 * An integration interval starts with rs_integrator_restart at (t, x) with a first step h0 and
 * a stop time, and carries no history from the previous interval: the caller's data (state,
 * time, h0) alone decide the future, which keeps resets, copies and snapshots exact. */
#ifndef RS_INTEGRATOR_H
#define RS_INTEGRATOR_H

#include <stdatomic.h>

#include "rs_errors.h"

typedef struct rs_integrator rs_integrator_t;

/* x' = f(t, x): fill xdot (n values). Returns 0; positive when xdot is not finite (the
 * integrator retries with shorter steps, then reports it); negative: failed, unrecoverable. */
typedef int (*rs_integrator_rhs_fn)(double t, const double *x, double *xdot, void *user);
/* The guard functions g(t, x) (ng values); an event fires where one falls through zero. */
typedef void (*rs_integrator_guards_fn)(double t, const double *x, double *g, void *user);

/* An integrator over the caller's state array x (n values; x stays the caller's, the integrator
 * reads and writes it in place). NULL on failure (reason in st). Free with
 * rs_integrator_destroy. */
rs_integrator_t *rs_integrator_new(int n, double *x, rs_integrator_rhs_fn rhs,
                                   rs_integrator_guards_fn guards, void *user, rs_status_t *st);

/* Free *pin (NULL-safe) and set it to NULL. */
void rs_integrator_destroy(rs_integrator_t **pin);

/* The method's order (4: Zonneveld 4(3); 5: Dormand-Prince 5(4); 8: Verner 8(7);
 * integrator.c's method_order), tolerances,
 * the most internal steps per interval, the largest internal step (max_step; 0: no limit, the
 * world parameter sim_step) and the number of guards (all falling through zero
 * fire). Kept across restarts. 0 or a negative RS_E* code. */
int rs_integrator_configure(rs_integrator_t *in, int order, double rtol, double atol,
                            long max_steps, double max_step, int ng, rs_status_t *st);

/* Start a fresh interval at time t from the state array's current values, with first step h0
 * (0: ARKODE estimates it), ending at tstop (> t). Guards exactly 0 at t (which ARKODE would
 * not watch until they leave 0) are watched step by step until they do, so that one falling
 * below 0 fires too. 0 or a negative RS_E* code. */
int rs_integrator_restart(rs_integrator_t *in, double t, double h0, double tstop,
                          rs_status_t *st);

/* Integrate on towards the interval's stop time. Returns 0 when it was reached (*t = tstop),
 * 1 when guards fired at *t (rs_integrator_fired says which; the state array holds the state
 * there), RS_EDEADLINE when the abort flag interrupted it, RS_ESIMFAIL with ARKODE's reason
 * otherwise (*t: the last good time). */
int rs_integrator_evolve(rs_integrator_t *in, double *t, rs_status_t *st);

/* Which guards fired at the last root return (ng values, non-zero: fired); owned by in. */
const int *rs_integrator_fired(const rs_integrator_t *in);

/* Error control by groups of components (the world's entities, len[g] components each, in
 * order; ngroups of them): each group is held to the tolerances as if integrated alone,
 * rather than its errors averaged with the others'. One group (or all but one empty) keeps
 * ARKODE's own norm. Takes effect at the next rs_integrator_configure. 0 or an RS_E* code. */
int rs_integrator_set_groups(rs_integrator_t *in, int ngroups, const int *len, rs_status_t *st);

/* The number of guards registered by the last rs_integrator_configure (-1: none yet). */
int rs_integrator_nguards(const rs_integrator_t *in);

/* The step size ARKODE would try next (0 if unknown). */
double rs_integrator_next_step(const rs_integrator_t *in);

/* ARKODE's internal steps since the last call (so the caller's data can hold the statistic). */
long rs_integrator_take_steps(rs_integrator_t *in);

/* The abort flag: non-zero interrupts an evolve within one right-hand-side evaluation (NULL:
 * a flag nobody sets). rs_integrator_aborted reads it. */
void rs_integrator_set_abort(rs_integrator_t *in, const atomic_int *flag);
/* The flag set by rs_integrator_set_abort, or NULL for none. */
const atomic_int *rs_integrator_abort_flag(const rs_integrator_t *in);
int rs_integrator_aborted(const rs_integrator_t *in);

/* How many vectors of the integrator (the state and ARKODE's work vectors) live in its own
 * block, and how many beyond it (one malloc each). */
void rs_integrator_vectors(const rs_integrator_t *in, int *in_block, int *beyond);

/* Hints, changing nothing. _head: load the integrator's own fields, so that a later
 * rs_integrator_prefetch reads no line it has to wait for. rs_integrator_prefetch: load its block
 * with its vectors, its guards' block, ARKODE's memory and its method's table. */
void rs_integrator_prefetch_head(const rs_integrator_t *in);
void rs_integrator_prefetch(const rs_integrator_t *in);

#endif
