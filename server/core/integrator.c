/* ARKODE's ERKStep behind rs_integrator.h: the only file of the core that includes ARKODE
 * (nvector.c, its vectors, includes SUNDIALS' vector header only).
 *
 * Public API only: the state is one of robosim's N_Vectors (rs_nvector.h) made over the
 * caller's array, the work vectors are ARKODE's own clones of it, in slots of a slab inside
 * this integrator's block; every ERKStep call's flag is checked. SUNDIALS 6.x and 7.x differ
 * in two places here, both behind SUNDIALS_VERSION_MAJOR: SUNContext_Create's communicator
 * argument, and error reporting (6.x: ERKStepSetErrHandlerFn per integrator memory; 7.x:
 * SUNContext_PushErrHandler on the context, with a different handler signature). */
#include "rs_integrator.h"

#include "rs_nvector.h"

#include <arkode/arkode_erkstep.h>
#include <sundials/sundials_config.h>
#include <sundials/sundials_context.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Vectors the slab inside the integrator's block holds: the state and ERKStep's clones of it
 * (15 in all with the 5-stage default table and root finding, 18 with Dormand-Prince's 7
 * stages and its higher-degree interpolation, SUNDIALS 6.4.1; test_integrator counts them).
 * More (another table, another SUNDIALS) are one malloc each. */
#define VECTOR_SLOTS 18

struct rs_integrator {
    SUNContext ctx;
    N_Vector y;     /* over the caller's state array */
    rs_nvec_slab_t *slab; /* at the end of this block: the vectors' slots */
    int n;          /* the state's length */
    void *mem;      /* ERKStep memory */
    rs_integrator_rhs_fn rhs;
    rs_integrator_guards_fn guards;
    void *user;
    int ng;         /* guards registered with ARKODE */
    int order;      /* of the method: 4, 5 or 8 (method_order) */
    int *fired;     /* root info, ng; one block with rootdir */
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
    return in->rhs(t, rs_nvec_data(y), rs_nvec_data(ydot), in->user) ? -1 : 0;
}

static int ark_guards(sunrealtype t, N_Vector y, sunrealtype *g, void *user_data)
{
    rs_integrator_t *in = user_data;
    in->guards(t, rs_nvec_data(y), g, in->user);
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
    free(in->fired); /* and rootdir */
    free(in); /* and the slab */
    *pin = NULL;
}

static int create_stepper(rs_integrator_t *in, int order, rs_status_t *st);

/* Where the slab starts in the integrator's block (aligned for its doubles and pointers). */
static size_t slab_offset(void)
{
    return (sizeof(rs_integrator_t) + 15) & ~(size_t)15;
}

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
    in->slab = rs_nvec_slab_init((char *)in + slab_offset(), n, VECTOR_SLOTS, in->ctx);
    if (!(in->y = rs_nvec_make(in->slab, x)))
        return rs_fail(st, RS_EEXHAUSTED, "cannot create the state vector");
    return create_stepper(in, 4, st);
}

/* The explicit Runge-Kutta methods by order, ARKODE's tables by their public IDs:
 *   4  ERKStep's default, Zonneveld 4(3), 5 stages (ARKODE_ZONNEVELD_5_3_4)
 *   5  Dormand-Prince 5(4), 7 stages (ARKODE_DORMAND_PRINCE_7_4_5)
 *   8  Fehlberg 8(7), 13 stages (ARKODE_FEHLBERG_13_7_8)
 * An order between these reads as the next lower one. Not offered: ARKODE_VERNER_8_5_6, the
 * only 6th-order table of SUNDIALS 6.4: with fixed steps on x'' = -x its error falls as h^3
 * (2.6e-5, 3.3e-6, 4.1e-7 at h = 0.1, 0.05, 0.025 over t = 3.2), where Dormand-Prince's
 * falls as h^5 and Fehlberg's as h^7; at rtol 1e-10 it missed the closed form by 2e-8. */
static int method_order(int order)
{
    return order >= 8 ? 8 : order >= 5 ? 5 : 4;
}

/* ERKStep's memory for the method of the given order (method_order). A change of table
 * changes ERKStep's stage storage, which only a fresh ERKStepCreate sizes: the memory is made
 * anew, and the guards registered again by the next rs_integrator_configure. */
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
    /* Order 4 keeps ERKStep's default table untouched (no SetTableNum call). The higher-order
     * tables' embedded error estimates are one order higher too, so the step controller takes
     * longer steps at tight tolerances: bench_core_arms 0.7 (serial arm, rtol 1e-8, 10 ms
     * control steps), order 4 -> 5: internal steps per control step 13.0 -> 5.1 (PID targets),
     * 28 -> 4.6 (torques/10). Order 8 does not pay on the arms: serial arm PID targets at rtol
     * 1e-8, per control step, 7.0 steps and 46 right-hand sides with order 5, 6.7 and 105 with
     * order 8 (the PID's damping, kD over the smallest eigenvalue of M, about 450 1/s, keeps
     * the steps near 1 ms whatever the order). */
    int m = method_order(order);
    if (m == 5)
        ARK_CHECK(in, st, ERKStepSetTableNum(in->mem, ARKODE_DORMAND_PRINCE_7_4_5));
    else if (m == 8)
        ARK_CHECK(in, st, ERKStepSetTableNum(in->mem, ARKODE_FEHLBERG_13_7_8));
    in->order = m;
    return 0;
}

rs_integrator_t *rs_integrator_new(int n, double *x, rs_integrator_rhs_fn rhs,
                                   rs_integrator_guards_fn guards, void *user, rs_status_t *st)
{
    /* one block: the integrator, then its vectors' slab */
    rs_integrator_t *in = calloc(1, slab_offset() + rs_nvec_slab_bytes(n, VECTOR_SLOTS));
    if (!in) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for the integrator");
        return NULL;
    }
    in->n = n;
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
    if (method_order(order) != in->order && (rc = create_stepper(in, order, st)) < 0)
        return rc;
    ARK_CHECK(in, st, ERKStepSStolerances(in->mem, rtol, atol));
    ARK_CHECK(in, st, ERKStepSetMaxNumSteps(in->mem, max_steps));
    ARK_CHECK(in, st, ERKStepSetMaxStep(in->mem, max_step)); /* 0: no limit */
    if (ng != in->ng) {
        int *fired = calloc(2 * (size_t)(ng > 0 ? ng : 1), sizeof(int)); /* fired, rootdir */
        if (!fired)
            return rs_fail(st, RS_EEXHAUSTED, "out of memory for %d guards", ng);
        free(in->fired);
        in->fired = fired;
        in->rootdir = fired + (ng > 0 ? ng : 1);
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

void rs_integrator_vectors(const rs_integrator_t *in, int *in_block, int *beyond)
{
    rs_nvec_slab_count(in->slab, in_block, beyond);
}

void rs_integrator_prefetch(const rs_integrator_t *in)
{
    /* the integrator and the slots of its live vectors (the state and ARKODE's work vectors,
     * which every step reads) */
    int used, beyond;
    rs_nvec_slab_count(in->slab, &used, &beyond);
    const char *end = (const char *)in->slab + rs_nvec_slab_bytes(in->n, used);
    for (const char *p = (const char *)in; p < end; p += 64)
        __builtin_prefetch(p);
}
