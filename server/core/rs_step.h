/* Stepping's parts that data.c uses when it allocates and resets data (step.c). Internal to
 * the core. */
#ifndef RS_STEP_H
#define RS_STEP_H

#include "rs_core.h"

/* The integrator's right-hand side and guards over every entity of d (user data: d). */
int rs_step_rhs(double t, const double *x, double *xd, void *user);
void rs_step_guards(double t, const double *x, double *g, void *user);

/* Apply m's integrator options (order, tolerances, step limit, guards) to d's integrator.
 * Called whenever the model may have changed; a restart keeps all of it. 0 or an error. */
int rs_step_configure(const rs_model_t *m, rs_data_t *d, rs_status_t *st);

/* Fill every entity's sensors for an interval of length dt (0: instantaneous readings). */
void rs_step_read_sensors(const rs_model_t *m, rs_data_t *d, double dt);

#endif
