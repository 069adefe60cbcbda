/* ARKODE's ERKStep behind rs_integrator.h: the only file of the core that includes SUNDIALS.
 *
 * Public API only: the state is an NVECTOR_SERIAL made over the caller's array
 * (N_VMake_Serial), the work vectors are ARKODE's own clones of it, every ERKStep call's flag
 * is checked. SUNDIALS 6.x and 7.x differ in two places here, both behind
 * SUNDIALS_VERSION_MAJOR: SUNContext_Create's communicator argument, and error reporting
 * (6.x: ERKStepSetErrHandlerFn per integrator memory; 7.x: SUNContext_PushErrHandler on the
 * context, with a different handler signature). */
#include "rs_integrator.h"

#include <arkode/arkode_erkstep.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_config.h>
#include <sundials/sundials_context.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rs_integrator {
    SUNContext ctx;
    N_Vector y;     /* over the caller's state array */
    void *mem;      /* ERKStep memory */
    rs_integrator_rhs_fn rhs;
    rs_integrator_guards_fn guards;
    void *user;
    int ng;         /* guards registered with ARKODE */
    int order;      /* of the method: 4 or 5 (create_stepper) */
    int *fired;     /* root info, ng */
    int *rootdir;   /* all -1: guards fire when they fall through zero */
    double tstop;   /* end of the current interval */
    long folded;    /* ARKODE's step count already handed out (take_steps) */
    const atomic_int *abort; /* never NULL */
    char last_error[200];    /* ARKODE's last message, for the RS_E* message */
};

static const atomic_int never_abort; /* the flag nobody sets */

/* ---- callbacks: ARKODE's signatures to the caller's ------------------------------------- */

static int ark_rhs(sunrealtype t, N_Vector y, N_Vector ydot, void *user_data)
{
    rs_integrator_t *in = user_data;
    /* an interrupted step fails here, within one evaluation; ARKODE then returns
     * ARK_RHSFUNC_FAIL and rs_integrator_evolve reports RS_EDEADLINE */
    if (atomic_load_explicit(in->abort, memory_order_relaxed))
        return -1;
    return in->rhs(t, N_VGetArrayPointer(y), N_VGetArrayPointer(ydot), in->user) ? -1 : 0;
}

static int ark_guards(sunrealtype t, N_Vector y, sunrealtype *g, void *user_data)
{
    rs_integrator_t *in = user_data;
    in->guards(t, N_VGetArrayPointer(y), g, in->user);
    return 0;
}

#if SUNDIALS_VERSION_MAJOR >= 7
static void ark_error(int line, const char *function, const char *file, const char *msg,
                      SUNErrCode code, void *user_data, SUNContext ctx)
{
    rs_integrator_t *in = user_data;
    (void)line;
    (void)file;
    (void)code;
    (void)ctx;
    snprintf(in->last_error, sizeof in->last_error, "%s: %s", function, msg);
}
#else
static void ark_error(int code, const char *module, const char *function, char *msg,
                      void *user_data)
{
    rs_integrator_t *in = user_data;
    (void)code;
    (void)module;
    snprintf(in->last_error, sizeof in->last_error, "%s: %s", function, msg);
}
#endif

/* A failed ERKStep call as an RS_E* error: ARKODE's flag name and its last message. */
static int ark_fail(rs_integrator_t *in, rs_status_t *st, int code, const char *what, int flag)
{
    char *name = ERKStepGetReturnFlagName(flag); /* malloc'd by SUNDIALS */
    rs_fail(st, code, "%s failed: %s (%s)", what, name ? name : "unknown flag",
            in->last_error[0] ? in->last_error : "no detail");
    free(name);
    return code;
}

#define ARK_CHECK(in, st, call)                                                                \
    do {                                                                                       \
        int flag_ = (call);                                                                    \
        if (flag_ != ARK_SUCCESS)                                                              \
            return ark_fail(in, st, flag_ == ARK_MEM_FAIL ? RS_EEXHAUSTED : RS_EINTERNAL,      \
                            #call, flag_);                                                     \
    } while (0)

/* ---- lifecycle -------------------------------------------------------------------------- */

void rs_integrator_destroy(rs_integrator_t **pin)
{
    rs_integrator_t *in = *pin;
    if (!in)
        return;
    if (in->mem)
        ERKStepFree(&in->mem);
    if (in->y)
        N_VDestroy(in->y);
    if (in->ctx)
        SUNContext_Free(&in->ctx);
    free(in->fired);
    free(in->rootdir);
    free(in);
    *pin = NULL;
}

static int create_stepper(rs_integrator_t *in, int order, rs_status_t *st);

static int integrator_init(rs_integrator_t *in, int n, double *x, rs_status_t *st)
{
#if SUNDIALS_VERSION_MAJOR >= 7
    if (SUNContext_Create(SUN_COMM_NULL, &in->ctx) != 0)
        return rs_fail(st, RS_EEXHAUSTED, "cannot create the SUNDIALS context");
    if (SUNContext_PushErrHandler(in->ctx, ark_error, in) != 0)
        return rs_fail(st, RS_EINTERNAL, "cannot install the SUNDIALS error handler");
#else
    if (SUNContext_Create(NULL, &in->ctx) != 0)
        return rs_fail(st, RS_EEXHAUSTED, "cannot create the SUNDIALS context");
#endif
    if (!(in->y = N_VMake_Serial(n, x, in->ctx)))
        return rs_fail(st, RS_EEXHAUSTED, "cannot create the state vector");
    /* ERKStep forms each stage and each solution with N_VLinearCombination; NVECTOR_SERIAL
     * ships its fused kernel switched off, and the fallback chains N_VScale and N_VLinearSum
     * calls. Switched on: 6-8% fewer instructions per control step (finger 11.7k -> 11.0k) and
     * about 8% more steps/s. ARKODE's clones of y (its work vectors) inherit the setting. */
    if (N_VEnableLinearCombination_Serial(in->y, SUNTRUE) != 0)
        return rs_fail(st, RS_EINTERNAL, "cannot enable NVECTOR_SERIAL's fused operations");
    return create_stepper(in, 4, st);
}

/* ERKStep's memory for the method of the given order: 4, ERKStep's default table (Zonneveld
 * 4(3), 5 stages), or 5, Dormand-Prince 5(4) (7 stages). A change of table changes ERKStep's
 * stage storage, which only a fresh ERKStepCreate sizes: the memory is made anew, and the
 * guards registered again by the next rs_integrator_configure. */
static int create_stepper(rs_integrator_t *in, int order, rs_status_t *st)
{
    if (in->mem)
        ERKStepFree(&in->mem);
    in->ng = -1;
    in->order = 0;
    in->folded = 0; /* a new memory counts its steps from 0 */
    if (!(in->mem = ERKStepCreate(ark_rhs, 0.0, in->y, in->ctx)))
        return rs_fail(st, RS_EEXHAUSTED, "ERKStepCreate failed (out of memory?)");
    ARK_CHECK(in, st, ERKStepSetUserData(in->mem, in));
#if SUNDIALS_VERSION_MAJOR < 7
    ARK_CHECK(in, st, ERKStepSetErrHandlerFn(in->mem, ark_error, in));
#endif
    /* The method: Dormand-Prince 5(4), 7 stages (ARKODE's table ARKODE_DORMAND_PRINCE_7_4_5),
     * instead of ERKStep's default 4th-order table (Zonneveld 4(3), 5 stages), whose 3rd-order
     * error estimate makes the step controller take small steps at rtol 1e-8. Measured with
     * bench_core_arms 0.7 (serial arm, rtol 1e-8, 10 ms control steps): internal steps per
     * control step 13.0 -> 5.1 (PID targets), 259 -> 31 (torque mode, full caps), 28 -> 4.6
     * (torques/10); control steps per second 53k -> 97k, 3.0k -> 23k, 33k -> 127k. Verner
     * 6(5) (table 10) and Fehlberg 8(7) (11) took more RHS evaluations per control step here,
     * and failed in torque mode at the step-size floor. Order 4 stays the default: the
     * tests' exact expectations (a servo held bit-exactly still, stops to 1e-12) were written
     * against it; the serial arm's benchmarks ask for 5 (world parameter erk_order). */
    if (order >= 5)
        ARK_CHECK(in, st, ERKStepSetTableNum(in->mem, ARKODE_DORMAND_PRINCE_7_4_5));
    in->order = order >= 5 ? 5 : 4;
    return 0;
}

rs_integrator_t *rs_integrator_new(int n, double *x, rs_integrator_rhs_fn rhs,
                                   rs_integrator_guards_fn guards, void *user, rs_status_t *st)
{
    rs_integrator_t *in = calloc(1, sizeof *in);
    if (!in) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for the integrator");
        return NULL;
    }
    in->rhs = rhs;
    in->guards = guards;
    in->user = user;
    in->ng = -1;
    in->abort = &never_abort;
    if (integrator_init(in, n, x, st) < 0)
        rs_integrator_destroy(&in);
    return in;
}

int rs_integrator_configure(rs_integrator_t *in, int order, double rtol, double atol,
                            long max_steps, double max_step, int ng, rs_status_t *st)
{
    int rc;
    if ((order >= 5 ? 5 : 4) != in->order && (rc = create_stepper(in, order, st)) < 0)
        return rc;
    ARK_CHECK(in, st, ERKStepSStolerances(in->mem, rtol, atol));
    ARK_CHECK(in, st, ERKStepSetMaxNumSteps(in->mem, max_steps));
    ARK_CHECK(in, st, ERKStepSetMaxStep(in->mem, max_step)); /* 0: no limit */
    if (ng != in->ng) {
        int *fired = calloc((size_t)(ng > 0 ? ng : 1), sizeof(int));
        int *rootdir = calloc((size_t)(ng > 0 ? ng : 1), sizeof(int));
        if (!fired || !rootdir) {
            free(fired);
            free(rootdir);
            return rs_fail(st, RS_EEXHAUSTED, "out of memory for %d guards", ng);
        }
        free(in->fired);
        free(in->rootdir);
        in->fired = fired;
        in->rootdir = rootdir;
        for (int i = 0; i < ng; i++)
            in->rootdir[i] = -1;
        ARK_CHECK(in, st, ERKStepRootInit(in->mem, ng, ng ? ark_guards : NULL));
        in->ng = ng;
        if (ng) { /* both need ARKODE's root memory, which ERKStepRootInit makes */
            ARK_CHECK(in, st, ERKStepSetRootDirection(in->mem, in->rootdir));
            ARK_CHECK(in, st, ERKStepSetNoInactiveRootWarn(in->mem));
        }
    }
    return 0;
}

/* ---- stepping --------------------------------------------------------------------------- */

long rs_integrator_take_steps(rs_integrator_t *in)
{
    long nst = 0;
    if (ERKStepGetNumSteps(in->mem, &nst) != ARK_SUCCESS || nst <= in->folded)
        return 0; /* a statistic only: a failed query adds nothing */
    long add = nst - in->folded;
    in->folded = nst;
    return add;
}

int rs_integrator_restart(rs_integrator_t *in, double t, double h0, double tstop,
                          rs_status_t *st)
{
    /* ERKStepReset, not ERKStepReInit: the same fresh start at (t, x) for the next step (its
     * size h0 is set here, so no history of the interval before is used: the snapshot, fork
     * and restore tests step on bit-identically), without ReInit's re-initialisation of the
     * options. ARKODE's step count runs on across a Reset (take_steps' difference). */
    in->last_error[0] = '\0';
    ARK_CHECK(in, st, ERKStepReset(in->mem, t, in->y));
    ARK_CHECK(in, st, ERKStepSetInitStep(in->mem, h0));
    ARK_CHECK(in, st, ERKStepSetStopTime(in->mem, tstop));
    in->tstop = tstop;
    return 0;
}

int rs_integrator_evolve(rs_integrator_t *in, double *t, rs_status_t *st)
{
    double tret = *t;
    in->last_error[0] = '\0';
    int flag = ERKStepEvolve(in->mem, in->tstop, in->y, &tret, ARK_NORMAL);
    if (flag == ARK_ROOT_RETURN) {
        *t = tret;
        int gf = ERKStepGetRootInfo(in->mem, in->fired);
        if (gf != ARK_SUCCESS)
            return ark_fail(in, st, RS_EINTERNAL, "ERKStepGetRootInfo", gf);
        return 1;
    }
    if (flag >= 0) { /* ARK_SUCCESS or ARK_TSTOP_RETURN: the interval's end */
        *t = in->tstop;
        return 0;
    }
    *t = tret;
    if (atomic_load_explicit(in->abort, memory_order_relaxed))
        return rs_fail(st, RS_EDEADLINE, "interrupted at t = %.9g s", tret);
    char *name = ERKStepGetReturnFlagName(flag); /* malloc'd by SUNDIALS */
    rs_fail(st, RS_ESIMFAIL, "integrator failed at t = %.9g s: %s (%s)", tret,
            name ? name : "?", in->last_error[0] ? in->last_error : "no detail");
    free(name);
    return RS_ESIMFAIL;
}

const int *rs_integrator_fired(const rs_integrator_t *in)
{
    return in->fired;
}

int rs_integrator_nguards(const rs_integrator_t *in) { return in->ng; }

double rs_integrator_next_step(const rs_integrator_t *in)
{
    double h = 0.0;
    if (ERKStepGetCurrentStep(in->mem, &h) != ARK_SUCCESS || !isfinite(h) || h <= 0.0)
        return 0.0;
    return h;
}

void rs_integrator_set_abort(rs_integrator_t *in, const atomic_int *flag)
{
    in->abort = flag ? flag : &never_abort;
}

int rs_integrator_aborted(const rs_integrator_t *in)
{
    return atomic_load_explicit(in->abort, memory_order_relaxed) != 0;
}

void rs_integrator_prefetch(const rs_integrator_t *in)
{
    for (const char *p = (const char *)in; p < (const char *)(in + 1); p += 64)
        __builtin_prefetch(p);
}
