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
#include "rs_prefetch.h"

#include <arkode/arkode_erkstep.h>
#include <sundials/sundials_config.h>
#include <sundials/sundials_context.h>

/* ARKODE's functions common to its steppers: ERKStep* up to SUNDIALS 7.0, ARKode* from 7.1 on
 * (where the ERKStep* names are deprecated). ERKStepCreate and the table setters stay ERKStep's. */
#if SUNDIALS_VERSION_MAJOR > 7 || (SUNDIALS_VERSION_MAJOR == 7 && SUNDIALS_VERSION_MINOR >= 1)
#define ARK(name) ARKode##name
#else
#define ARK(name) ERKStep##name
#endif

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Vectors the slab inside the integrator's block holds: the state and ERKStep's clones of it
 * (15 in all with the 5-stage default table and root finding, 18 with Dormand-Prince's 7
 * stages and its higher-degree interpolation, SUNDIALS 6.4.1; test_integrator counts them).
 * More (another table, another SUNDIALS) are one malloc each. */
#define VECTOR_SLOTS 18
/* The separate allocations rs_integrator_prefetch loads (record_far), and how much of ARKODE's
 * opaque memory: its ARKodeMemRec is 688 bytes in SUNDIALS 6.4 (a prefetch past an allocation's
 * end loads a line, never faults) */
#define FAR_MAX 24
#define FAR_ARK_BYTES 768

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
    /* event refinement (order 8, refine_root): the states at the ends of the last two steps,
     * recorded by ark_guards; guards masked while refining */
    int refine, masked;
    double t_prev, t_last;
    double *y_prev, *y_last;
    double *gbuf; /* ng guard values */
    double *gprev; /* ng guard values at the refined step's start (order 8 only) */
    /* guards exactly 0 at the interval's start (arm_zero_guards): ARKODE leaves them inactive
     * until a step ends with them non-zero, so a crossing within that first step is lost; they
     * are watched step by step from the start (t0, y0) until they leave 0 */
    int *unarmed, nunarmed;
    double t0, *y0;
    double *block; /* gbuf, y0, y_prev, y_last, gprev (order 8 only), fired, rootdir, unarmed */
    /* recovery from a non-finite derivative: the time and state an evolve started from, and
     * whether the right-hand side reported one */
    double t_entry;
    double *x_entry;
    int nonfinite;
    /* error weights by group (rs_integrator_set_groups): component i's weight times wscale[i]
     * (NULL: one group, ARKODE's own weights) */
    double *wscale;
    double rtol, atol;
    long max_steps;  /* the options rs_integrator_configure set, for renew_stepper */
    double max_step;
    int at_root;     /* an evolve on this memory returned at a root (renew_stepper) */
    int zero_start;  /* an interval on this memory started with a guard at 0 (renew_stepper) */
    long carried;    /* steps of a renewed memory not yet handed out (take_steps) */
    /* the memory beyond this block a step reads, for rs_integrator_prefetch: the guards' block,
     * ARKODE's memory and its method's table (each row of it allocated apart), recorded when
     * they are made so that a prefetch reads no pointer out of them */
    const void *far[FAR_MAX];
    size_t far_bytes[FAR_MAX];
    int nfar;
    size_t block_bytes; /* of block */
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
    int rc = in->rhs(t, rs_nvec_data(y), rs_nvec_data(ydot), in->user);
    if (rc > 0)
        in->nonfinite = 1; /* a stage too far out: a shorter step may do (evolve retries) */
    return rc ? (rc > 0 ? 1 : -1) : 0;
}


static int ark_guards(sunrealtype t, N_Vector y, sunrealtype *g, void *user_data)
{
    rs_integrator_t *in = user_data;
    if (in->masked) { /* refining an event: no root is looked for */
        for (int i = 0; i < in->ng; i++)
            g[i] = 1.0;
        return 0;
    }
    double tcur;
    if (in->refine && t > in->t_last && ARK(GetCurrentTime)(in->mem, &tcur) == ARK_SUCCESS &&
        t == tcur) {
        /* ARKODE checks the guards at the end of every step (its current time), on the step's
         * own solution: keep the last two step ends. Its other calls are not solutions: root
         * finding's interpolated points, and the forward Euler point t0 + max(ttol, h/10) it
         * probes after a start with a guard at 0, whose state is O(h^2) off */
        double *keep = in->y_prev;
        in->y_prev = in->y_last;
        in->t_prev = in->t_last;
        in->y_last = keep;
        in->t_last = t;
        memcpy(keep, rs_nvec_data(y), (size_t)in->n * sizeof(double));
    }
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
    char *name = ARK(GetReturnFlagName)(flag); /* malloc'd by SUNDIALS */
    rs_fail(st, code, "%s failed: %s (%s)", what, name ? name : "unknown flag",
            in->last_error[0] ? in->last_error : "no detail");
    free(name);
    return code;
}

/* the call as text with ARK(...) expanded: the function's real name in the message */
#define CALL_TEXT(call) #call
#define ARK_NAME_(expanded) CALL_TEXT(expanded)
#define ARK_NAME(name) ARK_NAME_(ARK(name))
#define ARK_CHECK(in, st, call)                                                                \
    do {                                                                                       \
        int flag_ = (call);                                                                    \
        if (flag_ != ARK_SUCCESS)                                                              \
            return ark_fail(in, st, flag_ == ARK_MEM_FAIL ? RS_EEXHAUSTED : RS_EINTERNAL,      \
                            CALL_TEXT(call), flag_);                                           \
    } while (0)

/* ---- lifecycle -------------------------------------------------------------------------- */

void rs_integrator_destroy(rs_integrator_t **pin)
{
    rs_integrator_t *in = *pin;
    if (!in)
        return;
    if (in->mem)
        ARK(Free)(&in->mem);
    if (in->y)
        N_VDestroy(in->y);
    if (in->ctx)
        SUNContext_Free(&in->ctx);
    free(in->block); /* guard values, states, fired, rootdir */
    free(in->x_entry);
    free(in->wscale);
    free(in); /* and the slab */
    *pin = NULL;
}

static int create_stepper(rs_integrator_t *in, int order, rs_status_t *st);
static void record_far(rs_integrator_t *in);

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

/* The explicit Runge-Kutta methods by order:
 *   4  Zonneveld 4(3), 5 stages (ARKODE_ZONNEVELD_5_3_4: ERKStep's default up to SUNDIALS 7.2,
 *      named here so that 7.3's new default changes nothing)
 *   5  Dormand-Prince 5(4), 7 stages, first same as last (ARKODE_DORMAND_PRINCE_7_4_5)
 *   8  Verner's "most efficient" 8(7), 13 stages (verner_8_7 below)
 * An order between these reads as the next lower one (why no 6th order: docs/design.md). */
static int method_order(int order)
{
    return order >= 8 ? 8 : order >= 5 ? 5 : 4;
}

/* Verner's 8(7) pair, "most efficient" of his 2010 families (J. H. Verner, Numerical solution
 * of the IVP by explicit RK methods of orders 8 and 9, Numer. Algorithms 53 (2010), DOI
 * 10.1007/s11075-009-9290-3; the same coefficients as SUNDIALS 6.7+'s ARKODE_VERNER_13_7_8),
 * with a 14th stage f(t + h, y_new) (row b, weight 0) appended, so that ERKStep 6.x's "first
 * same as last" shortcut starts each step from the true derivative at y_new (docs/design.md). */
static ARKodeButcherTable verner_8_7(void)
{
    /* c, b (order 8), d (the embedded order 7) and A of the 13 stages, zeros written out */
    static const double c[13] = {0, 0.05, 0.1065625, 0.15984375, 0.39, 0.465, 0.155, 0.943,
        0.901802041735856958259707940678372149956, 0.909, 0.94, 1.0, 1.0};
    static const double b[13] = {0.04427989419007951074716746668098518862111, 0, 0, 0, 0,
        0.3541049391724448744815552028733568354121,
        0.2479692154956437828667629415370663023884,
        -15.69420203883808405099207034271191213468,
        25.08406496555856261343930031237186278518,
        -31.73836778626027646833156112007297739997,
        22.93828327398878395231483560344797018313,
        -0.2361324633071542145259900641263517600737, 0};
    static const double d[13] = {0.04431261522908979212486436510209029764893, 0, 0, 0, 0,
        0.3546095642343226447863179350895055038855,
        0.2478480431366653069619986721504458660017,
        4.448134732475784492725128317159648871312,
        19.84688636611873369930932399297687935291,
        -23.58162337746561841969517960870394965085, 0, 0,
        -0.360167943728977516212453673774620240911};
    static const double A[13][13] = {
        {0},
        {0.05},
        {-0.0069931640625, 0.1135556640625},
        {0.0399609375, 0, 0.1198828125},
        {0.3613975628004575124052940721184028345129, 0,
            -1.341524066700492771819987788202715834917,
            1.370126503900035259414693716084313000404},
        {0.0490472027972027972027972027972027972028, 0, 0,
            0.2350972042214404739862988335493427143122,
            0.180855592981356728810903963653454488485},
        {0.06169289044289044289044289044289044289044, 0, 0,
            0.1123656831464027662262557035130015442303,
            -0.03885046071451366767049048108111244567456,
            0.01979188712522045855379188712522045855379},
        {-1.767630240222326875735597119572145586714, 0, 0, -62.5,
            -6.061889377376669100821361459659331999758,
            5.650823198222763138561298030600840174201,
            65.62169641937623283799566054863063741227},
        {-1.180945066554970799825116282628297957882, 0, 0,
            -41.50473441114320841606641502701994225874,
            -4.434438319103725011225169229846100211776,
            4.260408188586133024812193710744693240761,
            43.75364022446171584987676829438379303004,
            0.00787142548991231068744647504422630755086},
        {-1.281405999441488405459510291182054246266, 0, 0,
            -45.04713996013986630220754257136007322267,
            -4.731362069449576477311464265491282810943,
            4.514967016593807841185851584597240996214,
            47.44909557172985134869022392235929015114,
            0.01059228297111661135687393955516542875228,
            -0.005746842263844616254432318478286296232021},
        {-1.724470134262485191756709817484481861731, 0, 0,
            -60.92349008483054016518434619253765246063,
            -5.95151837622239245520283276706185486829,
            5.556523730698456235979791650843592496839,
            63.98301198033305336837536378635995939281,
            0.01464202825041496159275921391759452676003,
            0.06460408772358203603621865144977650714892,
            -0.07930323169008878984024452548693373291447},
        {-3.301622667747079016353994789790983625569, 0, 0,
            -118.011272359752508566692330395789886851,
            -10.14142238845611248642783916034510897595,
            9.139311332232057923544012273556827000619,
            123.3759428284042683684847180986501894364,
            4.623244378874580474839807625067630924792,
            -3.383277738068201923652550971536811240814,
            4.527592100324618189451265339351129035325,
            -5.828495485811622963193088019162985703755},
        {-3.039515033766309030040102851821200251056, 0, 0,
            -109.2608680894176254686444192322164623352,
            -9.290642497400293449717665542656897549158,
            8.430504981764911142134299253836167803454,
            114.2010010378331313557424041095523427476,
            -0.9637271342145479358162375658987901652762,
            -5.034884088802189791198680336183332323118,
            5.958130824002923177540402165388172072794, 0, 0},
    };
    ARKodeButcherTable B = ARKodeButcherTable_Alloc(14, SUNTRUE);
    if (!B)
        return NULL;
    B->q = 8;
    B->p = 7;
    for (int i = 0; i < 13; i++) {
        B->c[i] = c[i];
        B->b[i] = b[i];
        B->d[i] = d[i];
        for (int j = 0; j < i; j++)
            B->A[i][j] = A[i][j];
        B->A[13][i] = b[i]; /* the appended stage: f at y_new */
    }
    B->c[13] = 1.0;
    return B;
}

/* ERKStep's memory for the method of the given order (method_order). A change of table
 * changes ERKStep's stage storage, which only a fresh ERKStepCreate sizes: the memory is made
 * anew, and the guards registered again by the next rs_integrator_configure. */
static int create_stepper(rs_integrator_t *in, int order, rs_status_t *st)
{
    if (in->mem)
        ARK(Free)(&in->mem);
    in->ng = -1;
    in->order = 0;
    in->folded = 0; /* a new memory counts its steps from 0 */
    if (!(in->mem = ERKStepCreate(ark_rhs, 0.0, in->y, in->ctx)))
        return rs_fail(st, RS_EEXHAUSTED, "ERKStepCreate failed (out of memory?)");
    ARK_CHECK(in, st, ARK(SetUserData)(in->mem, in));
#if SUNDIALS_VERSION_MAJOR < 7
    ARK_CHECK(in, st, ERKStepSetErrHandlerFn(in->mem, ark_error, in));
#endif
    /* the higher orders take longer steps at tight tolerances (docs/design.md) */
    int m = method_order(order);
    if (m == 8) {
        ARKodeButcherTable B = verner_8_7();
        if (!B)
            return rs_fail(st, RS_EEXHAUSTED, "out of memory for the Verner 8(7) table");
        int flag = ERKStepSetTable(in->mem, B);
        ARKodeButcherTable_Free(B); /* ERKStep keeps its own copy */
        if (flag != ARK_SUCCESS)
            return ark_fail(in, st, RS_EINTERNAL, "ERKStepSetTable(Verner 8(7))", flag);
        /* A cubic dense output: events are refined on the trajectory itself (refine_root), so
         * the interpolant only brackets them, and ARKODE's Hermite interpolants of degree 4
         * and 5 cost two more right-hand sides each time they are evaluated, at every
         * control step's end among them (serial arm PID: 2.5 of 41 per control step) */
        ARK_CHECK(in, st, ARK(SetInterpolantDegree)(in->mem, 3));
    } else {
        ARK_CHECK(in, st, ERKStepSetTableNum(in->mem, m == 5 ? ARKODE_DORMAND_PRINCE_7_4_5
                                                             : ARKODE_ZONNEVELD_5_3_4));
    }
    in->order = m;
    in->refine = m == 8;
    record_far(in);
    return 0;
}

/* Note the allocations beyond the integrator's block that a step reads (in->far), after the
 * guards' block or ARKODE's memory changed. */
static void record_far(rs_integrator_t *in)
{
    in->nfar = 0;
#define FAR(p, bytes)                                                                              \
    do {                                                                                           \
        if ((p) && in->nfar < FAR_MAX) {                                                           \
            in->far[in->nfar] = (p);                                                               \
            in->far_bytes[in->nfar++] = (bytes);                                                   \
        }                                                                                          \
    } while (0)
    FAR(in->block, in->block_bytes);
    FAR(in->mem, FAR_ARK_BYTES);
    ARKodeButcherTable B = NULL;
    if (in->mem && ERKStepGetCurrentButcherTable(in->mem, &B) == ARK_SUCCESS && B) {
        size_t q = (size_t)B->stages;
        FAR(B, sizeof *B);
        FAR(B->A, q * sizeof *B->A);
        for (size_t i = 0; B->A && i < q; i++)
            FAR(B->A[i], q * sizeof **B->A);
        FAR(B->b, q * sizeof *B->b);
        FAR(B->c, q * sizeof *B->c);
        FAR(B->d, q * sizeof *B->d);
    }
#undef FAR
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
    if (!(in->x_entry = malloc((size_t)(n > 0 ? n : 1) * sizeof(double)))) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for the integrator");
        rs_integrator_destroy(&in);
        return NULL;
    }
    if (integrator_init(in, n, x, st) < 0)
        rs_integrator_destroy(&in);
    return in;
}

/* ARKODE's error weights 1 / (rtol |y_i| + atol), each times its group's scale. */
static int ark_weights(N_Vector y, N_Vector ewt, void *user_data)
{
    rs_integrator_t *in = user_data;
    const double *x = rs_nvec_data(y);
    double *w = rs_nvec_data(ewt);
    for (int i = 0; i < in->n; i++) {
        double tol = in->rtol * fabs(x[i]) + in->atol;
        if (!(tol > 0.0))
            return -1;
        w[i] = in->wscale[i] / tol;
    }
    return 0;
}

int rs_integrator_set_groups(rs_integrator_t *in, int ngroups, const int *len, rs_status_t *st)
{
    int total = 0;
    for (int g = 0; g < ngroups; g++)
        total += len[g];
    if (total != in->n)
        return rs_fail(st, RS_EINTERNAL, "error groups cover %d of %d components", total, in->n);
    int many = 0;
    for (int g = 0; g < ngroups; g++)
        many += len[g] > 0;
    if (many <= 1) { /* one group: ARKODE's own weighted RMS norm */
        free(in->wscale);
        in->wscale = NULL;
        return 0;
    }
    if (!in->wscale && !(in->wscale = malloc((size_t)in->n * sizeof(double))))
        return rs_fail(st, RS_EEXHAUSTED, "out of memory for the error weights");
    /* with weights sqrt(n / n_g), ARKODE's RMS norm over all n components is the root sum of
     * squares of each group's own RMS norm: every group held to the tolerance it has alone */
    for (int g = 0, i = 0; g < ngroups; g++)
        for (int k = 0; k < len[g]; k++)
            in->wscale[i++] = sqrt((double)in->n / (double)len[g]);
    return 0;
}

/* The tolerances and step limits rs_integrator_configure recorded, set on the memory. */
static int apply_options(rs_integrator_t *in, rs_status_t *st)
{
    ARK_CHECK(in, st, ARK(SStolerances)(in->mem, in->rtol, in->atol));
    if (in->wscale)
        ARK_CHECK(in, st, ARK(WFtolerances)(in->mem, ark_weights));
    ARK_CHECK(in, st, ARK(SetMaxNumSteps)(in->mem, in->max_steps));
    ARK_CHECK(in, st, ARK(SetMaxStep)(in->mem, in->max_step)); /* 0: no limit */
    /* error test failures in one step before ARKODE gives up (its default is 7): a restart's
     * first step is the one the flow before the event had reached, and after an event that
     * changes the flow sharply (a joint's slip reversed while the other spins at 1e5 rad/s:
     * 3e9 rad/s^2 at once) it can be 1e3 to 1e4 times too long, more than 7 of ARKODE's
     * reductions take back; an accepted step's error is held to the tolerance either way */
    ARK_CHECK(in, st, ARK(SetMaxErrTestFails)(in->mem, 20));
    return 0;
}

/* The ng guards (the block sized for them) registered with ARKODE, falling through 0. */
static int register_guards(rs_integrator_t *in, int ng, rs_status_t *st)
{
    ARK_CHECK(in, st, ARK(RootInit)(in->mem, ng, ng ? ark_guards : NULL));
    in->ng = ng;
    if (ng) { /* both need ARKODE's root memory, which ERKStepRootInit makes */
        ARK_CHECK(in, st, ARK(SetRootDirection)(in->mem, in->rootdir));
        ARK_CHECK(in, st, ARK(SetNoInactiveRootWarn)(in->mem));
    }
    return 0;
}

/* A fresh ERKStep memory with the same method, options and guards. ERKStepReInit leaves two
 * things of ARKODE's root finding as they were, which only a new memory resets, so that a world
 * restarted here would not step as its fork (a new memory) does:
 * - which guards are inactive: a guard exactly 0 at an interval's start and just after it is
 *   left out of root finding until a step ends with it non-zero, and a later restart, with the
 *   guard non-zero, does not bring it back; a crossing within that interval's first step was
 *   lost (a diff-drive robot blocked by an obstacle turned past the heading where it is free);
 * - that its last return was at a root: an evolve that continues a run (ARK_ONE_STEP, from its
 *   second call on) first re-examines the guards at that old time, and a guard exactly 0 there
 *   and just after it, as at a contact held to rounding on a surface, is reported as a close
 *   pair of roots (ARK_ILL_INPUT, "Root found at and very near t").
 * So a restart after an interval that started with a guard at 0, or one after a root that will
 * be watched step by step (arm_zero_guards), starts on a new memory, as a fork's does. */
static int renew_stepper(rs_integrator_t *in, rs_status_t *st)
{
    int ng = in->ng, rc;
    long nst = 0;
    if (ARK(GetNumSteps)(in->mem, &nst) == ARK_SUCCESS && nst > in->folded)
        in->carried += nst - in->folded;
    in->at_root = in->zero_start = 0;
    if ((rc = create_stepper(in, in->order, st)) < 0 || (rc = apply_options(in, st)) < 0)
        return rc;
    return register_guards(in, ng, st);
}

int rs_integrator_configure(rs_integrator_t *in, int order, double rtol, double atol,
                            long max_steps, double max_step, int ng, rs_status_t *st)
{
    int rc;
    if (method_order(order) != in->order && (rc = create_stepper(in, order, st)) < 0)
        return rc;
    in->rtol = rtol;
    in->atol = atol;
    in->max_steps = max_steps;
    in->max_step = max_step;
    if ((rc = apply_options(in, st)) < 0)
        return rc;
    if (ng != in->ng) {
        /* one block: the guard values, the interval's start state and, with event refinement
         * (order 8), the two step-end states and the guards at a step's start first (doubles,
         * for alignment), then fired, rootdir and unarmed */
        size_t m = (size_t)(ng > 0 ? ng : 1), n = (size_t)in->n;
        size_t nd = m + n + (in->refine ? 2 * n + m : 0);
        size_t bytes = nd * sizeof(double) + 3 * m * sizeof(int);
        double *block = calloc(1, bytes);
        if (!block)
            return rs_fail(st, RS_EEXHAUSTED, "out of memory for %d guards", ng);
        free(in->block);
        in->block = block;
        in->block_bytes = bytes;
        in->gbuf = block;
        in->y0 = block + m;
        in->y_prev = in->refine ? block + m + n : NULL;
        in->y_last = in->refine ? block + m + 2 * n : NULL;
        in->gprev = in->refine ? block + m + 3 * n : NULL;
        in->fired = (int *)(block + nd);
        in->rootdir = in->fired + m;
        in->unarmed = in->rootdir + m;
        in->nunarmed = 0;
        for (int i = 0; i < ng; i++)
            in->rootdir[i] = -1;
        if ((rc = register_guards(in, ng, st)) < 0)
            return rc;
        record_far(in);
    }
    return 0;
}

/* ---- stepping --------------------------------------------------------------------------- */

/* Note the guards exactly 0 at the interval's start t (the state array's values). ARKODE's own
 * check at the start (a forward Euler point just after t) leaves such a guard inactive when its
 * rate is 0 too (a joint released at its stop at rest), and re-activates it only at a step end
 * where it is non-zero: a guard that falls below 0 within that step would never fire. */
static void arm_zero_guards(rs_integrator_t *in, double t)
{
    in->nunarmed = 0;
    if (in->ng <= 0)
        return;
    in->guards(t, rs_nvec_data(in->y), in->gbuf, in->user);
    for (int i = 0; i < in->ng; i++) {
        in->unarmed[i] = in->gbuf[i] == 0.0;
        in->nunarmed += in->unarmed[i];
    }
    if (in->nunarmed) {
        in->t0 = t;
        memcpy(in->y0, rs_nvec_data(in->y), (size_t)in->n * sizeof(double));
    }
}

long rs_integrator_take_steps(rs_integrator_t *in)
{
    long nst = 0, add = in->carried;
    in->carried = 0;
    if (ARK(GetNumSteps)(in->mem, &nst) != ARK_SUCCESS || nst <= in->folded)
        return add; /* a statistic only: a failed query adds nothing */
    add += nst - in->folded;
    in->folded = nst;
    return add;
}

int rs_integrator_restart(rs_integrator_t *in, double t, double h0, double tstop,
                          rs_status_t *st)
{
    /* ERKStepReInit: a start at (t, x) as fresh as a new integrator's, so a world forked or
     * restored here steps on bit-identically. ERKStepReset would keep the step controller's
     * error history (ARKODE's PID uses the last two steps' errors), which a fork does not
     * have. The options set stay; ARKODE's step count restarts (take_steps' difference). */
    in->last_error[0] = '\0';
    arm_zero_guards(in, t);
    if (in->zero_start || (in->at_root && in->nunarmed > 0)) {
        int rc = renew_stepper(in, st);
        if (rc < 0)
            return rc;
    }
    in->zero_start = in->nunarmed > 0;
    ARK_CHECK(in, st, ERKStepReInit(in->mem, ark_rhs, t, in->y));
    in->folded = 0;
    ARK_CHECK(in, st, ARK(SetInitStep)(in->mem, h0));
    ARK_CHECK(in, st, ARK(SetStopTime)(in->mem, tstop));
    in->tstop = tstop;
    in->t_prev = in->t_last = -INFINITY; /* ARKODE's first guard check records (t, x) */
    return 0;
}

/* ---- event refinement ------------------------------------------------------------------- */

/* The state at time t (in the state array) by integrating exactly, guards masked, from
 * (t_from, y_from). 0 or an RS_E* code. */
static int integrate_from(rs_integrator_t *in, double t_from, const double *y_from, double t,
                          rs_status_t *st)
{
    double *x = rs_nvec_data(in->y);
    memcpy(x, y_from, (size_t)in->n * sizeof(double));
    if (t == t_from)
        return 0;
    ARK_CHECK(in, st, ARK(Reset)(in->mem, t_from, in->y));
    ARK_CHECK(in, st, ARK(SetInitStep)(in->mem, t - t_from));
    ARK_CHECK(in, st, ARK(SetStopTime)(in->mem, t));
    double tret = t_from;
    in->masked = 1;
    int flag = ARK(Evolve)(in->mem, t, in->y, &tret, ARK_NORMAL);
    in->masked = 0;
    if (flag < 0 && atomic_load_explicit(in->abort, memory_order_relaxed))
        return rs_fail(st, RS_EDEADLINE, "interrupted at t = %.9g s (refining an event)", t);
    if (flag < 0)
        return ark_fail(in, st, RS_ESIMFAIL, ARK_NAME(Evolve) " (refining an event)", flag);
    return 0;
}

/* integrate_from the start of the step in which ARKODE found the root (t_prev, y_prev) */
static int integrate_from_step_start(rs_integrator_t *in, double t, rs_status_t *st)
{
    return integrate_from(in, in->t_prev, in->y_prev, t, st);
}

/* Guard i on the exactly integrated trajectory at time t (the state array then holds x(t)). */
static int exact_guard(rs_integrator_t *in, int i, double t, double *g, rs_status_t *st)
{
    int rc = integrate_from_step_start(in, t, st);
    if (rc < 0)
        return rc;
    in->guards(t, rs_nvec_data(in->y), in->gbuf, in->user);
    *g = in->gbuf[i];
    return 0;
}

/* Guard i's crossing in [lo, hi] on the exactly integrated trajectory (glo >= 0 at lo, ghi < 0
 * at hi): Illinois (regula falsi) to the tolerance tol, bisecting where the secant stalls.
 * *t: the first time found where the guard has crossed; the state array then holds x(*t). */
static int search_crossing(rs_integrator_t *in, int i, double lo, double glo, double hi,
                           double ghi, double tol, double *t, rs_status_t *st)
{
    double at = NAN; /* the time whose state the array holds */
    int side = 0;    /* Illinois: halve the value of an end kept twice */
    int nudged = 0;  /* the last point was the secant's, moved in from an end */
    for (int k = 0; k < 100 && hi - lo > tol; k++) {
        /* the secant's point; one within rounding of an end (the root as close as the time's
         * resolution to it) is moved in by the tolerance, which then ends the search. Where
         * that does not end it (g exactly 0 over more than the tolerance, as a guard with a
         * rate near 0 reads at rounding level; or glo = 0, where the secant gives lo) the
         * search bisects instead */
        double tm = hi - ghi * (hi - lo) / (ghi - glo), in_by = fmin(tol, 0.5 * (hi - lo)), g;
        int nudge = 0;
        if (nudged || glo == 0.0)
            tm = lo + 0.5 * (hi - lo);
        else if (!(tm > lo))
            tm = lo + in_by, nudge = 1;
        else if (!(tm < hi))
            tm = hi - in_by, nudge = 1;
        nudged = nudge;
        int rc = exact_guard(in, i, tm, &g, st);
        if (rc < 0)
            return rc;
        at = tm;
        if (g >= 0.0) {
            lo = tm, glo = g;
            if (side == -1)
                ghi *= 0.5;
            side = -1;
        } else {
            hi = tm, ghi = g;
            if (side == 1)
                glo *= 0.5;
            side = 1;
        }
    }
    *t = hi; /* the guard has crossed there */
    return at == hi ? 0 : integrate_from_step_start(in, hi, st);
}

/* ARKODE finds a root on its dense output (a cubic Hermite interpolant here), far less accurate
 * than an 8th-order step (docs/design.md). So for order 8 the crossing ARKODE brackets between
 * the last two step ends is found again on the trajectory itself: Illinois on the first fired guard, each value from
 * an exact integration from the step's start, to ARKODE's own root tolerance. Any guard that
 * has crossed by then on the trajectory (another fired one, or one the interpolant missed)
 * crossed earlier and is searched for in turn; fired[] then names the guards crossed at the
 * time returned, whose state the array holds. Where the trajectory itself does not cross (a
 * graze only the interpolant saw) ARKODE's time stands, with the exact state there. */
static int refine_root(rs_integrator_t *in, double *t, rs_status_t *st)
{
    int i = 0;
    while (i < in->ng && !in->fired[i])
        i++;
    if (i == in->ng || !isfinite(in->t_prev) || !(in->t_prev < *t) || !(*t <= in->t_last))
        return 0; /* nothing recorded to refine from (a root at the restart itself) */
    double lo = in->t_prev, hi = in->t_last, glo, ghi, gr;
    int rc;
    in->guards(lo, in->y_prev, in->gprev, in->user); /* every guard at the step's start */
    glo = in->gprev[i];
    in->guards(hi, in->y_last, in->gbuf, in->user);
    ghi = in->gbuf[i];
    if ((rc = exact_guard(in, i, *t, &gr, st)) < 0)
        return rc;
    double tol = 100.0 * DBL_EPSILON * (fabs(hi) + fabs(hi - in->t_prev));
    /* the time returned is one where the guard has crossed (g < 0, or ARKODE's own step end):
     * a guard left exactly at 0 would read to the robot as a tie (a joint at its friction
     * limit still holds) and, starting the next interval at 0, never fire again. A guard
     * below 0 at ARKODE's time crossed before it, even where it is back above 0 at the step's
     * end (a dip within one step). A guard that started the step at 0 (left unarmed at a
     * restart) and is above 0 at ARKODE's time has its crossing after it, before the step's
     * end: taken at ARKODE's time, the exact state there was not at the boundary (a joint's
     * slip taken as stopped 1.7e-4 rad/s early, its velocity zeroed beside the other joint's
     * 27 rad/s: +6e-6 J). Without a sign change on the trajectory ARKODE's time stands, with
     * the exact state there */
    int crossed = (glo > 0.0 || (glo == 0.0 && gr > 0.0)) && (gr < 0.0 || !(ghi > 0.0));
    if (crossed) {
        if (gr >= 0.0)
            lo = *t, glo = gr;
        else
            hi = *t, ghi = gr;
        if ((rc = search_crossing(in, i, lo, glo, hi, ghi, tol, t, st)) < 0)
            return rc;
    }
    /* the state array holds x(*t); a guard positive at the step's start and below 0 here
     * crossed within (t_prev, *t], earlier than *t unless at it: the earliest is the event */
    for (int pass = 0; pass < in->ng; pass++) {
        in->guards(*t, rs_nvec_data(in->y), in->gbuf, in->user);
        int k = 0;
        while (k < in->ng && (k == i || !(in->gbuf[k] < 0.0) || !(in->gprev[k] > 0.0)))
            k++;
        if (k == in->ng)
            break;
        double t_k = *t;
        if ((rc = search_crossing(in, k, in->t_prev, in->gprev[k], *t, in->gbuf[k], tol, &t_k,
                                  st)) < 0)
            return rc;
        int earlier = t_k < *t;
        *t = t_k, i = k, crossed = 1;
        if (!earlier)
            break; /* at the same time: both are named below */
    }
    /* fired[]: the guards crossed at *t (and, at a graze, those ARKODE named) */
    in->guards(*t, rs_nvec_data(in->y), in->gbuf, in->user);
    for (int j = 0; j < in->ng; j++) {
        int here = in->gbuf[j] < 0.0 && in->gprev[j] > 0.0;
        in->fired[j] = here ? -1 : crossed ? 0 : in->fired[j];
    }
    return 0;
}

/* The guards left unarmed at the interval's start, at the state array's time tr: those now
 * positive are armed (ARKODE watches them from here); those below 0 crossed after t0, unseen by
 * ARKODE. The first such crossing (of the least of them) is found by bisection on the exactly
 * integrated trajectory from (t0, y0), to the tolerance of refine_root; the state array then
 * holds the state there, where the guard has crossed, and fired[] says which crossed (with
 * those ARKODE found at tr, `merge`, when the crossing is at tr itself). Returns 1 (a
 * crossing), 0 (none) or an RS_E* code. */
static int watch_unarmed(rs_integrator_t *in, double tr, double *t, int merge, rs_status_t *st)
{
    int crossed = 0;
    in->guards(tr, rs_nvec_data(in->y), in->gbuf, in->user);
    for (int i = 0; i < in->ng; i++) {
        if (!in->unarmed[i])
            continue;
        if (in->gbuf[i] > 0.0) {
            in->unarmed[i] = 0;
            in->nunarmed--;
        } else if (in->gbuf[i] < 0.0) {
            crossed = 1;
        }
    }
    if (!crossed)
        return 0;
    double lo = in->t0, hi = tr, at = tr;
    double tol = 100.0 * DBL_EPSILON * (fabs(hi) + fabs(hi - lo));
    for (int k = 0; k < 100 && hi - lo > tol; k++) {
        double tm = lo + 0.5 * (hi - lo), least = INFINITY;
        int rc = integrate_from(in, in->t0, in->y0, tm, st);
        if (rc < 0)
            return rc;
        at = tm;
        in->guards(tm, rs_nvec_data(in->y), in->gbuf, in->user);
        for (int i = 0; i < in->ng; i++)
            if (in->unarmed[i])
                least = fmin(least, in->gbuf[i]);
        if (least >= 0.0)
            lo = tm;
        else
            hi = tm;
    }
    if (at != hi) {
        int rc = integrate_from(in, in->t0, in->y0, hi, st);
        if (rc < 0)
            return rc;
    }
    in->guards(hi, rs_nvec_data(in->y), in->gbuf, in->user);
    merge = merge && hi == tr;
    for (int i = 0; i < in->ng; i++)
        in->fired[i] = in->unarmed[i] && in->gbuf[i] < 0.0 ? -1 : merge ? in->fired[i] : 0;
    in->nunarmed = 0;
    *t = hi;
    return 1;
}

/* How often one evolve starts again after a non-finite derivative, each time with a first
 * step a tenth of the one before, before the failure is reported. */
#define NONFINITE_RETRIES 20

int rs_integrator_evolve(rs_integrator_t *in, double *t, rs_status_t *st)
{
    double tret = *t, h0 = in->tstop - *t;
    in->last_error[0] = '\0';
    in->t_entry = *t;
    memcpy(in->x_entry, rs_nvec_data(in->y), (size_t)in->n * sizeof(double));
    int flag;
    for (int retry = 0;; retry++) {
        in->nonfinite = 0;
        long nst0 = 0, nst1 = 0;
        (void)ARK(GetNumSteps)(in->mem, &nst0);
        for (;;) {
            /* one step at a time while a guard is unarmed (arm_zero_guards) */
            int watching = in->nunarmed > 0;
            flag = ARK(Evolve)(in->mem, in->tstop, in->y, &tret,
                               watching ? ARK_ONE_STEP : ARK_NORMAL);
            if (!watching || flag < 0 || flag == ARK_ROOT_RETURN)
                break;
            int rc = watch_unarmed(in, tret, t, 0, st);
            if (rc != 0)
                return rc;
            if (tret >= in->tstop)
                break; /* the interval's end */
        }
        /* SUNDIALS 6's ERKStep ends on a recoverable right-hand-side failure too: a first step
         * whose stage left the region where the derivative is finite (a long step after quiet
         * ones, then a sudden torque) starts the evolve again from where it began, with a first
         * step ten times shorter each time */
        (void)ARK(GetNumSteps)(in->mem, &nst1);
        if (flag >= 0 || !in->nonfinite || retry == NONFINITE_RETRIES || nst1 > nst0 ||
            atomic_load_explicit(in->abort, memory_order_relaxed))
            break; /* steps accepted before it: the state itself diverges, no retry */
        h0 *= 0.1;
        memcpy(rs_nvec_data(in->y), in->x_entry, (size_t)in->n * sizeof(double));
        in->last_error[0] = '\0';
        arm_zero_guards(in, in->t_entry);
        int rc = in->zero_start || (in->at_root && in->nunarmed > 0) ? renew_stepper(in, st) : 0;
        if (rc < 0)
            return rc;
        in->zero_start = in->nunarmed > 0;
        if (ARK(Reset)(in->mem, in->t_entry, in->y) != ARK_SUCCESS ||
            ARK(SetInitStep)(in->mem, h0) != ARK_SUCCESS ||
            ARK(SetStopTime)(in->mem, in->tstop) != ARK_SUCCESS)
            break;
        in->t_prev = in->t_last = -INFINITY;
        tret = in->t_entry;
    }
    if (flag == ARK_ROOT_RETURN) {
        in->at_root = 1;
        *t = tret;
        int gf = ARK(GetRootInfo)(in->mem, in->fired);
        if (gf != ARK_SUCCESS)
            return ark_fail(in, st, RS_EINTERNAL, ARK_NAME(GetRootInfo), gf);
        if (in->refine) {
            int rc = refine_root(in, t, st);
            if (rc < 0)
                return rc;
        }
        /* an unarmed guard may have crossed before ARKODE's root (on the refined state) */
        int rc = in->nunarmed > 0 ? watch_unarmed(in, *t, t, 1, st) : 0;
        if (rc < 0)
            return rc;
        return 1;
    }
    if (flag >= 0) { /* ARK_SUCCESS or ARK_TSTOP_RETURN: the interval's end */
        *t = in->tstop;
        return 0;
    }
    *t = tret;
    if (atomic_load_explicit(in->abort, memory_order_relaxed))
        return rs_fail(st, RS_EDEADLINE, "interrupted at t = %.9g s", tret);
    if (in->nonfinite)
        return rs_fail(st, RS_ESIMFAIL,
                       "the derivative is not finite after t = %.9g s, even with a first step "
                       "1e-%d of the interval (the state diverges: lower the commands or the control_dt)",
                       in->t_entry, NONFINITE_RETRIES);
    char *name = ARK(GetReturnFlagName)(flag); /* malloc'd by SUNDIALS */
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

const char *rs_sundials_version(void)
{
    return SUNDIALS_VERSION;
}

double rs_integrator_next_step(const rs_integrator_t *in)
{
    double h = 0.0;
    if (ARK(GetCurrentStep)(in->mem, &h) != ARK_SUCCESS || !isfinite(h) || h <= 0.0)
        return 0.0;
    return h;
}

void rs_integrator_set_abort(rs_integrator_t *in, const atomic_int *flag)
{
    in->abort = flag ? flag : &never_abort;
}

const atomic_int *rs_integrator_abort_flag(const rs_integrator_t *in)
{
    return in->abort == &never_abort ? NULL : in->abort;
}

int rs_integrator_aborted(const rs_integrator_t *in)
{
    return atomic_load_explicit(in->abort, memory_order_relaxed) != 0;
}

void rs_integrator_vectors(const rs_integrator_t *in, int *in_block, int *beyond)
{
    rs_nvec_slab_count(in->slab, in_block, beyond);
}

void rs_integrator_prefetch_head(const rs_integrator_t *in)
{
    rs_prefetch_range(in, slab_offset() + 64, 0); /* the integrator and its slab's head */
}

void rs_integrator_prefetch(const rs_integrator_t *in)
{
    /* the slots of its live vectors (the state and ARKODE's work vectors, which every step
     * reads), then what lies beyond the block (record_far) */
    int used, beyond;
    rs_nvec_slab_count(in->slab, &used, &beyond);
    rs_prefetch_range(in, (size_t)((const char *)in->slab - (const char *)in) +
                              rs_nvec_slab_bytes(in->n, used), 0);
    for (int i = 0; i < in->nfar; i++)
        rs_prefetch_range(in->far[i], in->far_bytes[i], 0);
}
