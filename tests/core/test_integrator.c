/* integrator.c: ARKODE behind rs_integrator.h, checked on the harmonic
 * oscillator x'' = -x, x(0) = 1, v(0) = 0, whose solution is x = cos t, v = -sin t:
 *   - every method (order 4, 5 and 8) follows the closed form at rtol 1e-10;
 *   - a guard g = x falling through zero fires at t = pi/2 exactly (to the tolerance);
 *   - the method can change between intervals (ERKStep's memory is made anew);
 *   - the state and ARKODE's work vectors (robosim's N_Vector, rs_nvector.h) all live in the
 *     integrator's own block, for both methods, and a method change reuses their slots;
 *   - failures come back as RS_E* codes with ARKODE's reason: too many steps, a failing
 *     right-hand side, the abort flag (RS_EDEADLINE). */
#include "rs_integrator.h"
#include "rs_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int fail_rhs_at_all;

static int oscillator(double t, const double *x, double *xd, void *user)
{
    (void)t;
    (void)user;
    xd[0] = x[1];
    xd[1] = -x[0];
    return fail_rhs_at_all;
}

static void guard_x(double t, const double *x, double *g, void *user)
{
    (void)t;
    (void)user;
    g[0] = x[0];
}

/* From (1, 0) at t = 0 to t_end in one interval; returns the evolve result, time in *t. */
static int run(rs_integrator_t *in, double *x, int order, int ng, double t_end, double *t,
               rs_status_t *st)
{
    x[0] = 1.0, x[1] = 0.0;
    int rc = rs_integrator_configure(in, order, 1e-10, 1e-12, 100000, 0.0, ng, st);
    if (rc == 0)
        rc = rs_integrator_restart(in, 0.0, 0.0, t_end, st);
    *t = 0.0;
    return rc < 0 ? rc : rs_integrator_evolve(in, t, st);
}

int main(void)
{
    rs_status_t st;
    double x[2];
    rs_integrator_t *in = rs_integrator_new(2, x, oscillator, guard_x, NULL, &st);
    CHECK(in != NULL, "%s", st.message);
    if (!in)
        return rs_test_done("test_integrator");

    int vectors[9] = {0};
    for (int order = 4; order <= 8; order += order == 5 ? 3 : 1) {
        double t;
        int rc = run(in, x, order, 0, 3.0, &t, &st);
        CHECK(rc == 0 && t == 3.0, "order %d: reaches the stop time (%d, %s)", order, rc,
              st.message);
        CHECK(fabs(x[0] - cos(3.0)) < 1e-8 && fabs(x[1] + sin(3.0)) < 1e-8,
              "order %d: x(3) = (%.12g, %.12g), closed form (%.12g, %.12g)", order, x[0], x[1],
              cos(3.0), -sin(3.0));
        CHECK(rs_integrator_take_steps(in) > 0 && rs_integrator_take_steps(in) == 0,
              "order %d: steps are handed out once", order);

        rc = run(in, x, order, 1, 3.0, &t, &st);
        CHECK(rc == 1 && fabs(t - M_PI / 2) < 1e-9 && rs_integrator_fired(in)[0] != 0,
              "order %d: the guard x = 0 fires at t = %.12g, closed form pi/2", order, t);

        int beyond;
        rs_integrator_vectors(in, &vectors[order], &beyond);
        printf("order %d: %d vectors in the integrator's block, %d beyond it\n", order,
               vectors[order], beyond);
        /* the state, the stages (5, 7 or 14), the solution, error weights and interpolation's;
         * orders 4 and 5 fit the block's slots, Verner 8(7)'s 14 stages fill them and take
         * the rest as single allocations */
        int stages = order == 4 ? 5 : order == 5 ? 7 : 14;
        CHECK(vectors[order] + beyond >= 1 + stages + 3 && (order == 8 ? vectors[order] == 18
                                                                       : beyond == 0),
              "order %d: the vectors in the block (%d in it, %d beyond)", order, vectors[order],
              beyond);
    }
    /* back to order 4: ERKStep's memory made anew, its vectors in the slots the 7-stage
     * method's left (none lost, none beyond) */
    double t4;
    CHECK(run(in, x, 4, 1, 3.0, &t4, &st) == 1, "order 4 again: the guard fires (%s)", st.message);
    int again, beyond_again;
    rs_integrator_vectors(in, &again, &beyond_again);
    CHECK(again == vectors[4] && beyond_again == 0 && vectors[5] > vectors[4],
          "order 4 again: %d vectors in the block (first time %d; order 5: %d), %d beyond",
          again, vectors[4], vectors[5], beyond_again);
    /* more steps wanted than allowed: ARKODE's too-much-work, as RS_ESIMFAIL */
    x[0] = 1.0, x[1] = 0.0;
    double t = 0.0;
    int rc = rs_integrator_configure(in, 5, 1e-12, 1e-14, 3, 0.0, 0, &st);
    if (rc == 0)
        rc = rs_integrator_restart(in, 0.0, 0.0, 100.0, &st);
    if (rc == 0)
        rc = rs_integrator_evolve(in, &t, &st);
    CHECK(rc == RS_ESIMFAIL && strstr(st.message, "ARK_TOO_MUCH_WORK"),
          "too many steps: %d '%s'", rc, st.message);

    /* a failing right-hand side: unrecoverable (negative) at once; recoverable (positive, a
     * non-finite derivative) after the retries with shorter steps, saying so */
    fail_rhs_at_all = -1;
    rc = run(in, x, 4, 0, 1.0, &t, &st);
    CHECK(rc == RS_ESIMFAIL && strstr(st.message, "integrator failed"),
          "a failing RHS: %d '%s'", rc, st.message);
    fail_rhs_at_all = 1;
    rc = run(in, x, 4, 0, 1.0, &t, &st);
    CHECK(rc == RS_ESIMFAIL && strstr(st.message, "not finite"),
          "a derivative never finite: %d '%s'", rc, st.message);
    fail_rhs_at_all = 0;

    /* the abort flag */
    atomic_int stop = 1;
    rs_integrator_set_abort(in, &stop);
    CHECK(rs_integrator_aborted(in), "the flag reads as set");
    rc = run(in, x, 4, 0, 1.0, &t, &st);
    CHECK(rc == RS_EDEADLINE, "an aborted evolve: %d '%s'", rc, st.message);
    rs_integrator_set_abort(in, NULL);
    CHECK(!rs_integrator_aborted(in), "NULL: a flag nobody sets");

    /* a bad option is refused with ARKODE's reason, not ignored, naming the function
     * (ERKStepSStolerances before SUNDIALS 7.1, ARKodeSStolerances from it on) */
    rc = rs_integrator_configure(in, 4, -1.0, 1e-12, 1000, 0.0, 0, &st);
    CHECK(rc == RS_EINTERNAL && strstr(st.message, "SStolerances(in->mem, in->rtol, in->atol)"),
          "a negative rtol: %d '%s'", rc, st.message);

    rs_integrator_destroy(&in);
    CHECK(in == NULL, "destroy clears the pointer");
    return rs_test_done("test_integrator");
}
