/* The stepper (stepper.c): one thread that runs, in arrival order, the work handlers hand it
 * (a Step's control steps that outlast the loop's fuse, MonteCarlo runs), off the loop. */
#ifndef RS_STEPPER_H
#define RS_STEPPER_H

#include "rs_core.h"

typedef struct rs_server rs_server_t;
typedef struct rs_cont rs_cont_t;
typedef struct rs_stepper rs_stepper_t;

/* The stepper's threads' niceness above the loop's: its own, and its crew's helpers'
 * (s->off_crew, made with it as nice_delta). */
#define RS_STEPPER_NICE 5

/* Start server s's stepper: it runs c->off_run(s, c) for each request submitted, its
 * MonteCarlo workers in s->off_pool (made on its thread with s->off_crew's helpers; NULL: runs
 * one at a time) and its work interrupted by s->off_abort. NULL on failure (reason in st). */
rs_stepper_t *rs_stepper_new(rs_server_t *s, rs_status_t *st);

/* Queue c's work (c stays the caller's, untouched until rs_stepper_done says so). 0, or -1
 * when out of memory. */
int rs_stepper_submit(rs_stepper_t *sp, rs_cont_t *c);

/* Whether the stepper has run c's work (then the loop owns c again). */
int rs_stepper_done(rs_stepper_t *sp, const rs_cont_t *c);

/* Whether any work was finished since the last call (and forget it). */
int rs_stepper_finished(rs_stepper_t *sp);

/* Interrupt the work it has (s->off_abort), join it, free its workers (s->off_pool);
 * NULL-safe, clears *p. */
void rs_stepper_destroy(rs_stepper_t **p);

#endif
