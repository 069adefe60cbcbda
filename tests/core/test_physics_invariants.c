/* Physics invariants over randomized, seeded scenarios, for every preset and every contact
 * formulation its robots support (property-based testing in the manner of QuickCheck: the
 * scenario generator is seeded, every failure prints the seed that reproduces it, and a failing
 * scenario is shrunk by reverting its random parameters to the preset's values one at a time).
 *
 * A scenario: a preset with random parameters drawn within the robot's parameter table bounds
 * (scale parameters log-uniformly around the preset's value, then clipped to the table), a random
 * initial state, and either bounded random commands held for random spells (with random external
 * wrenches where the robot takes them) or zero commands (a passive scenario, for rest checks).
 * After every control step, per entity:
 *   - all states and sensors finite; the step itself succeeds;
 *   - no penetration beyond the formulation's tolerance: hybrid 1e-9 (1 + |x|) m (root finding
 *     locates guards to about 100 ulps of time; the jump maps put bodies back on the surface),
 *     time_stepping 1e-8 (1 + |x|) m (the velocity-level LCP keeps gap + h v+ >= 0 up to its
 *     projected Gauss-Seidel residual), compliant: the depth d into the boundary layer within the
 *     bound of the layer's own law (below, per robot);
 *   - momentum: an impact between finger and object (Coulomb law) keeps their momentum;
 *   - energy: E(t+dt) - E(t) <= W + tol, E the mechanical energy (layer spring energy 1/2 k d^2
 *     included under compliant) and W the work of the actuators and wrenches over the step, exact
 *     from the step ends where the force is constant over the step (F dx), so checked where it
 *     is: the finger (its applied_work state), the brick, the arms in torque mode, the mobile
 *     manipulator's passive base (not servoed wheels, whose forces are unknown); tol = 1e-6 of
 *     the energies and work involved. An impact event never raises the kinetic energy
 *     (before/after states of the event log);
 *   - joint stops, the parallel arm's closure, obstacles and the table never violated;
 *   - rest in finite time when nothing drives and friction dissipates, by a closed-form bound;
 *   - bit-exact determinism: a fork (rs_data_copy) made halfway runs the same commands and stays
 *     bit-identical to the original after every step.
 *
 * With --set-params (or ROBOSIM_PHYSICS_SET_PARAMS=1) every scenario is short (1 to 20 control
 * steps, a SetParams of random parameters drawn around the live state, 20 steps more) and the
 * change itself is checked (change_params): a refusal changes nothing, an accepted change
 * leaves no body inside another, past a stop or unassemblable, and no compliant layer holding
 * more than before; the steps after it are checked as above under the new parameters.
 *
 * Usage: test_physics_invariants [--scenarios N] [--seconds S] [--groups a,b] [--list]
 *                                [--base-seed S] [--no-shrink] [--set-params]
 *   N scenarios per group (default 40), at most S seconds in all (default 60), shared evenly by the
 *   groups; groups are "preset/formulation" (--list prints them; ROBOSIM_PHYSICS_GROUPS is the
 *   same as --groups). ROBOSIM_PHYSICS_SEED=group:seed runs that one scenario and shrinks it;
 *   ROBOSIM_PHYSICS_VERBOSE=1 with it prints every step's state, events and energy balance.
 * Prints "group: N scenarios, V violations" per group; exits 1 on any violation. */
#include "contact.h"
#include "rs_robot.h"

#include <sundials/sundials_dense.h>

#include <float.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARAMS 128
#define MAX_VALUES 16
#define MAX_STEPS 2000
#define NKINDS 9 /* kinds of check a group's summary counts (check_names) */
#define MAX_REST_STEPS 1500 /* a rest bound beyond this many steps is not checked */

static const char *const formulation_names[3] = {"hybrid", "time_stepping", "compliant"};

/* ---- seeded random numbers (splitmix64) ------------------------------------------------ */

typedef struct rng {
    uint64_t s;
} rng_t;

static uint64_t next_u64(rng_t *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unif(rng_t *r, double a, double b)
{
    return a + (b - a) * ((double)(next_u64(r) >> 11) * 0x1.0p-53);
}

static int coin(rng_t *r, double p) { return unif(r, 0, 1) < p; }

/* ---- scenario generation --------------------------------------------------------------- */

typedef struct gen_param {
    char entity[RS_NAME_MAX];
    const char *name;
    double v[MAX_VALUES];
    int n;
} gen_param_t;

/* What one scenario is: everything follows from (group, seed); `keep` is the shrinker's mask of
 * which random parameters are applied, zero_commands its switch for the commands. */
typedef struct scenario {
    int group;
    uint64_t seed;
    rng_t r;
    const rs_model_t *base; /* the preset's model without overrides: defaults and bounds */
    int formulation;
    int passive;            /* zero commands, no wrenches: the rest checks apply */
    int nsteps, hold;
    int change;             /* --set-params: the control step before which the change comes */
    gen_param_t p[MAX_PARAMS];
    int np;
} scenario_t;

static const rs_param_desc_t *param_desc(const rs_robot_t *robot, const char *name)
{
    for (int i = 0; i < robot->np; i++)
        if (!strcmp(robot->params[i].name, name))
            return &robot->params[i];
    fprintf(stderr, "physics suite: robot '%s' has no parameter '%s'\n", robot->kind, name);
    abort(); /* a renamed parameter: the generator must follow it */
}

/* Parameter `name` of entity e: values v (clipped to the table's bounds). */
static void set_values(scenario_t *s, int e, const char *name, const double *v, int n)
{
    const rs_param_desc_t *pd = param_desc(s->base->ent[e].robot, name);
    gen_param_t *g = &s->p[s->np++];
    snprintf(g->entity, sizeof g->entity, "%s", s->base->ent[e].name);
    g->name = pd->name;
    g->n = n;
    for (int i = 0; i < n; i++)
        g->v[i] = fmin(fmax(v[i], pd->lower), pd->upper);
}

static double set1(scenario_t *s, int e, const char *name, double v)
{
    set_values(s, e, name, &v, 1);
    return s->p[s->np - 1].v[0];
}

/* The preset's value i of `name` (the table default where the preset sets none). */
static double preset_value(const scenario_t *s, int e, const char *name, int i)
{
    double v = rs_model_param(s->base, e, name, i);
    return isnan(v) ? param_desc(s->base->ent[e].robot, name)->def : v;
}

/* A scale parameter: the preset's value times a log-uniform factor in [1/f, f]. */
static double scale1(scenario_t *s, int e, const char *name, double f)
{
    return set1(s, e, name, preset_value(s, e, name, 0) * exp(unif(&s->r, -log(f), log(f))));
}

static void scale2(scenario_t *s, int e, const char *name, double f)
{
    double v[2];
    for (int i = 0; i < 2; i++)
        v[i] = preset_value(s, e, name, i) * exp(unif(&s->r, -log(f), log(f)));
    set_values(s, e, name, v, 2);
}

/* Uniform in [a, b] intersected with the table's bounds. */
static double unif1(scenario_t *s, int e, const char *name, double a, double b)
{
    const rs_param_desc_t *pd = param_desc(s->base->ent[e].robot, name);
    return set1(s, e, name, unif(&s->r, fmax(a, pd->lower), fmin(b, pd->upper)));
}

static void bounds(const scenario_t *s, int e, const char *name, double *lo, double *hi)
{
    const rs_param_desc_t *pd = param_desc(s->base->ent[e].robot, name);
    *lo = pd->lower, *hi = pd->upper;
}

static double harmonic(double a, double b) { return a > 0 && b > 0 ? 2 * a * b / (a + b) : 0; }

/* ---- running a scenario ---------------------------------------------------------------- */

/* Where a check found a violation: the first one ends the run. */
typedef struct verdict {
    int failed, step;
    int painleve; /* ended in a reported inconsistency that the suite verified (not a failure) */
    char check[32];
    char what[400];
} verdict_t;

typedef struct run {
    const scenario_t *s;
    const rs_model_t *m;
    rs_data_t *d;
    int step;          /* control steps done */
    double t0, t1;     /* the step's ends */
    double *x0;        /* world state at the step's start */
    double u[RS_MAX_ENTITIES][RS_MAX_ACTUATORS];
    double wrench[RS_MAX_ENTITIES][RS_WRENCH_MAX]; /* applied during this step, table order */
    double t_rest[RS_MAX_ENTITIES];  /* the rest bound (INFINITY: no rest check) */
    int invalid;       /* begin() found the start outside the scenario space */
    int at_change;     /* checking the state at a SetParams: the sensors are the last step's */
    uint64_t nsteps;   /* the integrator's internal steps in this control step */
    verdict_t *v;
} run_t;

static int verbose_run; /* print each step (one scenario, ROBOSIM_PHYSICS_VERBOSE) */
static double run_deadline = INFINITY; /* rs_clock() past which a scenario is abandoned */
#define STEP_SECONDS_MAX 10.0 /* a control step that computes longer than this is a violation */

/* The watchdog: a timer that sets the worlds' abort flag, so that one control step that would
 * run for minutes (thousands of jumps without an event) ends, as a violation, or as an
 * abandoned scenario where the group's time is up first. */
static atomic_int step_abort;

static void on_alarm(int sig)
{
    (void)sig;
    atomic_store(&step_abort, 1);
}

static void arm_watchdog(double seconds)
{
    struct itimerval it = {{0, 0}, {(time_t)seconds, (suseconds_t)(1e6 * (seconds - floor(seconds)))}};
    if (seconds <= 0)
        it.it_value.tv_usec = 1;
    atomic_store(&step_abort, 0);
    signal(SIGALRM, on_alarm);
    setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm_watchdog(void)
{
    struct itimerval it = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void violate(run_t *r, const char *check, const char *fmt, ...)
{
    if (r->v->failed)
        return;
    r->v->failed = 1;
    r->v->step = r->step;
    snprintf(r->v->check, sizeof r->v->check, "%s", check);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->v->what, sizeof r->v->what, fmt, ap);
    va_end(ap);
}

/* Energy check: E1 - E0 <= W + tol, tol relative to what is involved. */
static void check_energy(run_t *r, int e, double E0, double E1, double W, double scale)
{
    double tol = 1e-6 * (fabs(E0) + fabs(E1) + fabs(W) + scale) + 1e-12;
    if (verbose_run)
        printf("  %s energy %.12g -> %.12g, work %.12g, excess %.3g (tol %.2g)\n",
               r->m->ent[e].name, E0, E1, W, E1 - E0 - W, tol);
    if (E1 - E0 > W + tol)
        violate(r, "energy",
                "entity %s: energy %.9g -> %.9g J (+%.3g J) over a step with work %.9g J: %.3g J more (tol %.2g)",
                r->m->ent[e].name, E0, E1, E1 - E0, W, E1 - E0 - W, tol);
}

static double tol_len(int formulation, double scale)
{
    return (formulation == RS_CONTACT_TIME_STEPPING ? 1e-8 : 1e-9) * (1.0 + scale);
}

/* One robot kind's generator and checks. */
typedef struct checker {
    const char *kind;
    /* random parameters of entity e into s (formulation s->formulation) */
    void (*sample)(scenario_t *s, int e);
    /* commands (and wrenches, in table order) of entity e for the next spell */
    void (*commands)(const scenario_t *s, rng_t *r, const rs_model_t *m, int e, double *u,
                     double *w);
    /* set up per-entity bookkeeping after the world is made (rest bound, ...) */
    void (*begin)(run_t *r, int e);
    /* the checks after a control step: x0, x1 the entity's states at its ends */
    void (*check)(run_t *r, int e, const double *x0, const double *x1);
    /* --set-params: a random change of entity e's parameters into ch, drawn around its live
     * state x (stops around the angles, obstacles and tables at the body, paddings, shapes) */
    void (*mutate)(scenario_t *ch, const run_t *r, int e, const double *x);
    /* --set-params, after an accepted change: the compliant layer's oracle, the layer under the
     * new parameters (now) holding no more than under the old (was) at the live state x; NULL
     * where the robot has no compliant layer */
    void (*layer)(run_t *now, const run_t *was, int e, const double *x);
} checker_t;

#define P(name, i) rs_model_param(r->m, e, name, i)

/* ---- finger ------------------------------------------------------------------------------ */

enum { F_XF, F_VF, F_XO, F_VO, F_IMP, F_WORK };

static void finger_sample(scenario_t *s, int e)
{
    if (s->formulation >= 0)
        set1(s, e, "contact_model", s->formulation);
    scale1(s, e, "finger_mass", 5);
    scale1(s, e, "object_mass", 5);
    set1(s, e, "finger_drag_law", coin(&s->r, 0.5));
    set1(s, e, "object_drag_law", coin(&s->r, 0.5));
    scale1(s, e, "finger_drag", 10);
    scale1(s, e, "object_drag", 10);
    double fs = scale1(s, e, "static_friction", 10);
    set1(s, e, "kinetic_friction", fs * unif(&s->r, 0, 1));
    unif1(s, e, "restitution", 0, 1);
    set1(s, e, "friction_law", coin(&s->r, 0.25));
    double xf = unif1(s, e, "finger_x0", -1, 1);
    set1(s, e, "object_x0", xf + (coin(&s->r, 0.15) ? 0.0 : unif(&s->r, 0, 1.5)));
    double vf = unif(&s->r, -3, 3);
    set1(s, e, "finger_v0", s->passive ? -fabs(vf) : vf); /* passive: the finger moves away */
    unif1(s, e, "object_v0", -3, 3);
    scale1(s, e, "ts_step", 10);
    scale1(s, e, "finger_padding", 4);
    unif1(s, e, "object_padding", 0, 0.005);
    scale1(s, e, "finger_stiffness", 10);
    scale1(s, e, "object_stiffness", 10);
    scale1(s, e, "finger_damping", 10);
    scale1(s, e, "object_damping", 10);
}

static void finger_commands(const scenario_t *s, rng_t *r, const rs_model_t *m, int e,
                            double *u, double *w)
{
    (void)s, (void)m, (void)e;
    u[0] = unif(r, -1, 1) * pow(10, unif(r, -1, 1.3));
    w[0] = coin(r, 0.2) ? unif(r, -5, 5) : 0.0;
    w[1] = coin(r, 0.2) ? unif(r, -5, 5) : 0.0; /* on the object */
}

static double finger_k(const run_t *r, int e)
{
    return harmonic(P("finger_stiffness", 0), P("object_stiffness", 0));
}

static double finger_pad(const run_t *r, int e)
{
    return P("finger_padding", 0) + P("object_padding", 0);
}

static double finger_kinetic(const run_t *r, int e, const double *x)
{
    return 0.5 * P("finger_mass", 0) * x[F_VF] * x[F_VF] +
           0.5 * P("object_mass", 0) * x[F_VO] * x[F_VO];
}

static double finger_energy(const run_t *r, int e, const double *x)
{
    double E = finger_kinetic(r, e, x);
    if (P("contact_model", 0) == RS_CONTACT_COMPLIANT) {
        double d = finger_pad(r, e) - (x[F_XO] - x[F_XF]);
        if (d > 0)
            E += 0.5 * finger_k(r, e) * d * d;
    }
    return E;
}

/* Rest: nothing drives, the finger moves away and Coulomb friction F_k acts on the object: its
 * momentum only loses magnitude (impacts from behind slow it), at a rate >= F_k while it slides,
 * so it stops by m_o |v_o0| / F_k (compliant: below slip_speed by then, when the layer starts
 * uncompressed: a compressed one would push the object off). */
static void finger_begin(run_t *r, int e)
{
    double fk = P("kinetic_friction", 0);
    int compressed = P("contact_model", 0) == RS_CONTACT_COMPLIANT &&
                     P("object_x0", 0) - P("finger_x0", 0) < finger_pad(r, e);
    if (r->s->passive && fk > 0 && P("friction_law", 0) == 0 && P("finger_v0", 0) <= 0 &&
        !compressed)
        r->t_rest[e] = P("object_mass", 0) * fabs(P("object_v0", 0)) / fk;
}

static void finger_check(run_t *r, int e, const double *x0, const double *x1)
{
    int model = (int)P("contact_model", 0);
    double gap = x1[F_XO] - x1[F_XF], scale = fabs(x1[F_XF]) + fabs(x1[F_XO]);
    double W = x1[F_WORK] - x0[F_WORK];
    double E0 = finger_energy(r, e, x0), E1 = finger_energy(r, e, x1);
    if (model == RS_CONTACT_COMPLIANT) {
        /* the layer stores 1/2 k d^2 and its damping only dissipates, so the depth is bounded by
         * the energy available: 1/2 k d^2 <= E0 + W - KE1 */
        double d = finger_pad(r, e) - gap, k = finger_k(r, e);
        double avail = fmax(0.0, E0 + W - finger_kinetic(r, e, x1));
        double bound = sqrt(2 * avail / k) * (1 + 1e-6) + 1e-9;
        if (d > finger_pad(r, e) && d > bound)
            violate(r, "penetration",
                    "finger tip %.3g m past the object's face (layer %.3g m); the layer's energy "
                    "bound allows depth %.3g m",
                    d - finger_pad(r, e), finger_pad(r, e), bound);
    } else if (gap < -tol_len(model, scale)) {
        violate(r, "penetration", "finger tip %.3g m past the object's face (tol %.2g)", -gap,
                tol_len(model, scale));
    }
    /* Time stepping's own terms in the balance: the contact holds gap >= 0 only to its
     * solver's residual (the penetration tolerance above), and a penetration delta left at the
     * step's start is undone by the constraint (gap + h v+ >= 0: v+ = delta / h apart), which
     * pushes a finger pressed on with force F back by delta: work -|F| delta with no energy to
     * show for it. And W is the difference of the running sum applied_work, to which each of
     * the dt / h substeps adds F h v+, rounding by half an ulp of the sum (and the positions by
     * theirs). So the balance holds to |F| (delta_0 + (dt / h + 1) 4 eps (1 + |x_f| + |x_o|))
     * + (dt / h + 1) eps |sum| (the check's scale, as 1e-6 of it). */
    double acc = 0;
    if (model == RS_CONTACT_TIME_STEPPING) {
        double nsub = ceil(r->m->control_dt / P("ts_step", 0)) + 1;
        double F = fabs(r->u[e][0] + r->wrench[e][0]), pen0 = fmax(0.0, x0[F_XF] - x0[F_XO]);
        acc = F * (pen0 + nsub * 4 * DBL_EPSILON * (1 + scale)) +
              nsub * DBL_EPSILON * fmax(fabs(x0[F_WORK]), fabs(x1[F_WORK]));
    }
    check_energy(r, e, E0, E1, W, 1e6 * acc);
    /* impacts: kinetic energy never rises across a bounce or merge */
    for (int i = 0; i < r->d->nevents; i++) {
        const rs_event_t *ev = &r->d->events[i];
        const char *kind = rs_event_kind_name(r->m, ev);
        if (ev->entity != e || ev->nvalues < 4 || (strcmp(kind, "bounce") && strcmp(kind, "merge")))
            continue;
        double kb[6] = {0, ev->before[1], 0, ev->before[3]}, ka[6] = {0, ev->after[1], 0, ev->after[3]};
        double K0 = finger_kinetic(r, e, kb), K1 = finger_kinetic(r, e, ka);
        if (K1 > K0 * (1 + 1e-12) + 1e-15)
            violate(r, "impact_energy", "finger %s at t = %.17g: kinetic energy %.9g -> %.9g J",
                    kind, ev->t, K0, K1);
        /* Coulomb law: the impact is internal to the pair, so it keeps their momentum */
        double mf = P("finger_mass", 0), mo = P("object_mass", 0);
        double p0 = mf * ev->before[1] + mo * ev->before[3], p1 = mf * ev->after[1] + mo * ev->after[3];
        double pscale = fabs(mf * ev->before[1]) + fabs(mo * ev->before[3]);
        if (P("friction_law", 0) == 0 && fabs(p1 - p0) > 1e-12 * pscale + 1e-300)
            violate(r, "momentum", "finger %s at t = %.17g: momentum %.17g -> %.17g N s", kind,
                    ev->t, p0, p1);
    }
    if (r->t1 >= r->t_rest[e] + 2 * r->m->control_dt) {
        double vmax = model == RS_CONTACT_COMPLIANT ? P("slip_speed", 0) * (1 + 1e-6) : 1e-12;
        if (fabs(x1[F_VO]) > vmax)
            violate(r, "rest", "object still sliding at %.3g m/s at t = %.4g s, past the bound "
                    "m_o |v_o0| / F_k = %.4g s", x1[F_VO], r->t1, r->t_rest[e]);
    }
}

/* ---- the two arms (shared helpers) ------------------------------------------------------ */

/* The actuators' torques when both joints are in torque mode (constant over a step: the
 * command, capped), or 0 and returns 0 when a joint runs PID (its torque then varies within the
 * step and its work is not known from the step ends). */
static int arm_torques(const run_t *r, int e, double tau[2])
{
    for (int j = 0; j < 2; j++) {
        if (P("actuator_mode", j) != 0)
            return 0;
        double cap = P("tau_max", j), u = r->u[e][j];
        tau[j] = cap > 0 ? fmin(fmax(u, -cap), cap) : 0.0;
    }
    return 1;
}

static void arm_sample_common(scenario_t *s, int e, double qlo, double qhi)
{
    double mode[2] = {0, 0};
    for (int j = 0; j < 2 && !s->passive; j++)
        mode[j] = coin(&s->r, 0.5);
    set_values(s, e, "actuator_mode", mode, 2);
    scale2(s, e, "kP", 10);
    scale2(s, e, "kI", 10);
    scale2(s, e, "kD", 10);
    scale2(s, e, "tau_max", 10);
    double muD[2], muV[2];
    for (int j = 0; j < 2; j++) {
        muD[j] = coin(&s->r, 0.6) ? unif(&s->r, 0, 0.05) : 0.0;
        muV[j] = coin(&s->r, 0.6) ? unif(&s->r, 0, 0.01) : 0.0;
    }
    set_values(s, e, "mu_D", muD, 2);
    set_values(s, e, "mu_V", muV, 2);
    double lo[2], hi[2], q0[2], qd0[2];
    for (int j = 0; j < 2; j++) {
        lo[j] = unif(&s->r, qlo, 0.5 * (qlo + qhi));
        hi[j] = unif(&s->r, lo[j] + 0.05 * (qhi - qlo), qhi);
        q0[j] = unif(&s->r, lo[j], hi[j]);
        qd0[j] = unif(&s->r, -4, 4);
    }
    if (param_desc(s->base->ent[e].robot, "theta_min")->len_min > 0 || coin(&s->r, 0.7)) {
        set_values(s, e, "theta_min", lo, 2);
        set_values(s, e, "theta_max", hi, 2);
    }
    set_values(s, e, "theta0", q0, 2);
    set_values(s, e, "theta_dot0", qd0, 2);
}

static void arm_commands(const rs_model_t *m, int e, rng_t *r, double *u)
{
    for (int j = 0; j < 2; j++)
        u[j] = rs_model_param(m, e, "actuator_mode", j) != 0
                   ? unif(r, -M_PI / 2, M_PI / 2)
                   : 1.5 * rs_model_param(m, e, "tau_max", j) * unif(r, -1, 1);
}

/* Joint stops: each limited joint within [theta_min, theta_max] up to the root finder. */
static void arm_check_stops(run_t *r, int e, const double *x1)
{
    for (int j = 0; j < 2; j++) {
        double lo = P("theta_min", j), hi = P("theta_max", j), q = x1[j];
        double tol = 1e-9 * (1 + fabs(q));
        if ((!isnan(lo) && q < lo - tol) || (!isnan(hi) && q > hi + tol))
            violate(r, "joint_stop", "joint %d at %.12g rad, outside its stops [%.12g, %.12g]",
                    j + 1, q, lo, hi);
    }
}

static void arm_check_rest(run_t *r, int e, const double *x1)
{
    if (r->t1 >= r->t_rest[e] + 2 * r->m->control_dt &&
        (fabs(x1[2]) > 1e-12 || fabs(x1[3]) > 1e-12))
        violate(r, "rest", "joint rates %.3g, %.3g rad/s at t = %.4g s, past the rest bound %.4g s",
                x1[2], x1[3], r->t1, r->t_rest[e]);
}

/* ---- serial arm ------------------------------------------------------------------------- */

typedef struct serial_links {
    double a1, a2, m1, m2, lc1, lc2, I1, I2, g;
} serial_links_t;

static serial_links_t serial_links(const run_t *r, int e)
{
    serial_links_t L = {P("a1", 0), P("a2", 0), P("m1", 0), P("m2", 0), P("lc1", 0), P("lc2", 0),
                        P("I1", 0), P("I2", 0), P("gravity", 0)};
    if (isnan(L.lc1)) L.lc1 = L.a1 / 2; /* unset: uniform rods */
    if (isnan(L.lc2)) L.lc2 = L.a2 / 2;
    if (isnan(L.I1)) L.I1 = L.m1 * L.a1 * L.a1 / 12;
    if (isnan(L.I2)) L.I2 = L.m2 * L.a2 * L.a2 / 12;
    return L;
}

/* T + V of the two-link arm (Lagrange: M(q) from the links, V = g sum m y_c). */
static double serial_energy(const serial_links_t *L, const double *x)
{
    double c2 = cos(x[1]);
    double M11 = L->I1 + L->I2 + L->m1 * L->lc1 * L->lc1 +
                 L->m2 * (L->a1 * L->a1 + L->lc2 * L->lc2 + 2 * L->a1 * L->lc2 * c2);
    double M12 = L->I2 + L->m2 * (L->lc2 * L->lc2 + L->a1 * L->lc2 * c2);
    double M22 = L->I2 + L->m2 * L->lc2 * L->lc2;
    double T = 0.5 * (M11 * x[2] * x[2] + 2 * M12 * x[2] * x[3] + M22 * x[3] * x[3]);
    double V = L->g * (L->m1 * L->lc1 * sin(x[0]) +
                       L->m2 * (L->a1 * sin(x[0]) + L->lc2 * sin(x[0] + x[1])));
    return T + V;
}

static void serial_sample(scenario_t *s, int e)
{
    arm_sample_common(s, e, -M_PI, M_PI);
    scale1(s, e, "a1", 2);
    scale1(s, e, "a2", 2);
    scale1(s, e, "m1", 2);
    scale1(s, e, "m2", 2);
    set1(s, e, "gravity", coin(&s->r, 0.4) ? 0.0 : unif(&s->r, 0, 15));
}

static void serial_commands(const scenario_t *s, rng_t *r, const rs_model_t *m, int e, double *u,
                            double *w)
{
    (void)s;
    arm_commands(m, e, r, u);
    for (int i = 0; i < 5; i++) /* end_effector fx fy tau, link1 tau, link2 tau */
        w[i] = coin(r, 0.15) ? unif(r, -0.5, 0.5) : 0.0;
}

/* Rest without gravity or torques: dE/dt <= -mu_min (|qd1| + |qd2|) and E <= lmax |qd|^2 / 2
 * (lmax <= trace M) give d sqrt(E)/dt <= -mu_min / sqrt(2 lmax): at rest by
 * sqrt(2 lmax E0) / mu_min. */
static void serial_begin(run_t *r, int e)
{
    serial_links_t L = serial_links(r, e);
    double mu = fmin(P("mu_D", 0), P("mu_D", 1));
    if (!r->s->passive || L.g != 0 || !(mu > 0))
        return;
    double trace = L.I1 + 2 * L.I2 + L.m1 * L.lc1 * L.lc1 +
                   L.m2 * (L.a1 * L.a1 + 2 * L.lc2 * L.lc2 + 2 * L.a1 * L.lc2);
    const double *x = r->d->x + r->m->ent[e].x_off;
    r->t_rest[e] = sqrt(2 * trace * serial_energy(&L, x)) / mu;
}

static void serial_check(run_t *r, int e, const double *x0, const double *x1)
{
    serial_links_t L = serial_links(r, e);
    arm_check_stops(r, e, x1);
    double tau[2];
    if (arm_torques(r, e, tau)) {
        const double *w = r->wrench[e];
        double W = tau[0] * (x1[0] - x0[0]) + tau[1] * (x1[1] - x0[1]);
        /* a constant force at the tip does F . (p1 - p0); couples tau d(angle) */
        double p0x = L.a1 * cos(x0[0]) + L.a2 * cos(x0[0] + x0[1]);
        double p0y = L.a1 * sin(x0[0]) + L.a2 * sin(x0[0] + x0[1]);
        double p1x = L.a1 * cos(x1[0]) + L.a2 * cos(x1[0] + x1[1]);
        double p1y = L.a1 * sin(x1[0]) + L.a2 * sin(x1[0] + x1[1]);
        double d12 = x1[0] + x1[1] - x0[0] - x0[1];
        W += w[0] * (p1x - p0x) + w[1] * (p1y - p0y) + w[2] * d12 + w[3] * (x1[0] - x0[0]) +
             w[4] * d12;
        double E0 = serial_energy(&L, x0), E1 = serial_energy(&L, x1);
        double scale = fabs(L.g) * (L.m1 + L.m2) * (L.a1 + L.a2); /* the potential's range */
        /* the integrator's own error, its local error test (rtol |y_i| per component, in an RMS
         * norm over the state's n components: sqrt(n) rtol |y_i| at most) summed over the
         * internal steps of this control step: on the kinetic energy 2 T of it, on the work
         * |tau_j| |q_j| (an arm spinning at 3,500 rad/s, q at 2,600 rad, takes 100 steps a
         * control step: 2.6e-6 of its 1e4 J, beyond the fixed 1e-6) */
        double T1 = E1 - serial_energy(&L, (double[]){x1[0], x1[1], 0, 0});
        double integ = sqrt((double)r->m->nx) * r->m->rtol * (double)r->nsteps *
                       (2 * fabs(T1) + fabs(tau[0]) * fabs(x1[0]) + fabs(tau[1]) * fabs(x1[1]));
        check_energy(r, e, E0, E1, W, scale + 1e6 * integ);
    }
    arm_check_rest(r, e, x1);
}

/* ---- parallel arm ----------------------------------------------------------------------- */

static void pa_elbows(const run_t *r, int e, const double *q, double A[2], double B[2])
{
    double L0 = P("L0", 0), L1 = P("L1", 0);
    A[0] = -0.5 * L0 - L1 * cos(q[0]), A[1] = L1 * sin(q[0]); /* base along x, y down */
    B[0] = 0.5 * L0 + L1 * cos(q[1]), B[1] = L1 * sin(q[1]);
}

static void pa_sample(scenario_t *s, int e)
{
    double lo, hi;
    bounds(s, e, "theta0", &lo, &hi);
    arm_sample_common(s, e, lo, hi);
    scale1(s, e, "L0", 1.4);
    scale1(s, e, "L1", 1.4);
    scale1(s, e, "L2", 1.4);
    scale2(s, e, "J", 3);
}

static void pa_commands(const scenario_t *s, rng_t *r, const rs_model_t *m, int e, double *u,
                        double *w)
{
    (void)s;
    arm_commands(m, e, r, u);
    for (int i = 0; i < 2; i++)
        w[i] = coin(r, 0.15) ? unif(r, -0.05, 0.05) : 0.0;
}

static double pa_energy(const run_t *r, int e, const double *x)
{
    return 0.5 * P("J", 0) * x[2] * x[2] + 0.5 * P("J", 1) * x[3] * x[3];
}

/* Rest without torques: the servos' dry friction takes dE/dt <= -mu_min (|qd1| + |qd2|), and
 * E <= J_max (|qd1| + |qd2|)^2 / 2, so d sqrt(E)/dt <= -mu_min / sqrt(2 J_max): at rest by
 * sqrt(2 J_max E0) / mu_min. The taut linkage's impacts and the stops only take energy away;
 * not speed from each servo: a taut impact can pass one servo's momentum to the other, so a
 * bound per servo, J |qd0| / mu_D, does not hold (a servo still turning at 0.028 rad/s twice
 * past it). */
static void pa_begin(run_t *r, int e)
{
    double mu = fmin(P("mu_D", 0), P("mu_D", 1));
    if (!r->s->passive || !(mu > 0))
        return;
    const double *x = r->d->x + r->m->ent[e].x_off;
    double J = fmax(P("J", 0), P("J", 1));
    r->t_rest[e] = sqrt(2 * J * pa_energy(r, e, x)) / mu;
}

static void pa_check(run_t *r, int e, const double *x0, const double *x1)
{
    arm_check_stops(r, e, x1);
    /* closure: the elbows at most 2 L2 apart, the reported end effector L2 from both */
    double A[2], B[2], L2 = P("L2", 0);
    pa_elbows(r, e, x1, A, B);
    double u = hypot(B[0] - A[0], B[1] - A[1]);
    const double *sn = r->d->sensors + r->m->ent[e].s_off;
    double da = hypot(sn[0] - A[0], sn[1] - A[1]), db = hypot(sn[0] - B[0], sn[1] - B[1]);
    if (u > 2 * L2 * (1 + 1e-9))
        violate(r, "closure", "elbows %.12g m apart, the passive links reach %.12g m", u, 2 * L2);
    else if (!r->at_change && (fabs(da - L2) > 1e-9 * (1 + L2) || fabs(db - L2) > 1e-9 * (1 + L2)))
        violate(r, "closure", "end effector (%.9g, %.9g) at %.12g and %.12g m from the elbows; "
                "the passive links are %.12g m", sn[0], sn[1], da, db, L2);
    double tau[2];
    if (arm_torques(r, e, tau)) {
        double W = (tau[0] + r->wrench[e][0]) * (x1[0] - x0[0]) +
                   (tau[1] + r->wrench[e][1]) * (x1[1] - x0[1]);
        /* the taut linkage's event places the servos exactly at u = 2 L2 (a jump of the root
         * finder's residual, at rest): a displacement no force works along, so out of W */
        for (int i = 0; i < r->d->nevents; i++) {
            const rs_event_t *ev = &r->d->events[i];
            if (ev->entity == e && ev->nvalues >= 2 &&
                !strcmp(rs_event_kind_name(r->m, ev), "stretched"))
                for (int j = 0; j < 2; j++)
                    W -= (tau[j] + r->wrench[e][j]) * (ev->after[j] - ev->before[j]);
        }
        check_energy(r, e, pa_energy(r, e, x0), pa_energy(r, e, x1), W, 0);
    }
    arm_check_rest(r, e, x1);
}

/* ---- differential drive ------------------------------------------------------------------ */

static void dd_sample(scenario_t *s, int e)
{
    if (s->formulation >= 0)
        set1(s, e, "contact_model", s->formulation);
    double R = scale1(s, e, "robot_radius", 2);
    scale1(s, e, "wheel_radius", 2);
    scale1(s, e, "half_axle", 2);
    double x0 = unif1(s, e, "x0", -1, 1), y0 = unif1(s, e, "y0", -1, 1);
    double th = unif1(s, e, "theta0", -M_PI, M_PI);
    double pad = unif1(s, e, "padding", 0, 0.01) + unif1(s, e, "obstacle_padding", 0, 0.005);
    scale1(s, e, "ts_step", 10);
    scale1(s, e, "stiffness", 10);
    scale1(s, e, "damping", 10);
    scale1(s, e, "obstacle_stiffness", 10);
    scale1(s, e, "obstacle_damping", 10);
    double ob[12];
    int n = 0;
    if (coin(&s->r, 0.3)) { /* a wedge: two disks either side of the heading, narrower than 2 R */
        double ahead = R + unif(&s->r, 0.05, 0.5), r0 = unif(&s->r, 0.05, 0.3);
        double half_gap = R * unif(&s->r, 0.3, 0.95);
        for (int side = -1; side <= 1; side += 2) {
            double lat = side * (half_gap + r0);
            ob[3 * n] = x0 + ahead * cos(th) - lat * sin(th);
            ob[3 * n + 1] = y0 + ahead * sin(th) + lat * cos(th);
            ob[3 * n + 2] = r0;
            n++;
        }
    }
    int more = (int)unif(&s->r, n ? 0 : 1, 3);
    for (int i = 0; i < more; i++) {
        double r0 = unif(&s->r, 0.05, 0.4), a = th + unif(&s->r, -2, 2);
        double dist = R + r0 + pad + unif(&s->r, 0.002, 0.5);
        ob[3 * n] = x0 + dist * cos(a), ob[3 * n + 1] = y0 + dist * sin(a), ob[3 * n + 2] = r0;
        n++;
    }
    /* the start must be clear of every obstacle (and its layer): drop the ones it is not */
    int k = 0;
    for (int i = 0; i < n; i++)
        if (hypot(ob[3 * i] - x0, ob[3 * i + 1] - y0) > R + ob[3 * i + 2] + pad + 1e-6)
            memmove(ob + 3 * k++, ob + 3 * i, 3 * sizeof(double));
    if (k)
        set_values(s, e, "obstacles", ob, 3 * k);
}

static void dd_commands(const scenario_t *s, rng_t *r, const rs_model_t *m, int e, double *u,
                        double *w)
{
    (void)s, (void)m, (void)e, (void)w;
    /* straight ahead (into a wedge ahead), turning in place (out of a contact), or anything */
    double pick = unif(r, 0, 1), fwd = unif(r, -10, 10), turn = unif(r, -10, 10);
    if (pick < 0.3)
        fwd = fabs(fwd), turn = 0;
    else if (pick < 0.55)
        fwd = 0;
    else if (pick < 0.8)
        turn *= 0.1;
    u[0] = fwd + turn, u[1] = fwd - turn;
}

static void dd_check(run_t *r, int e, const double *x0, const double *x1)
{
    int model = (int)P("contact_model", 0), nob = 0;
    double R = P("robot_radius", 0), pad = P("padding", 0) + P("obstacle_padding", 0);
    double k = harmonic(P("stiffness", 0), P("obstacle_stiffness", 0));
    double c = harmonic(P("damping", 0), P("obstacle_damping", 0));
    double v = 0.5 * P("wheel_radius", 0) * fabs(r->u[e][0] + r->u[e][1]);
    while (nob < 8 && !isnan(P("obstacles", 3 * nob)))
        nob++;
    int in_layer0 = 0, in_layer1 = 0;
    double clear0[8], clear1[8];
    for (int i = 0; i < nob; i++) {
        double ox = P("obstacles", 3 * i), oy = P("obstacles", 3 * i + 1), ro = P("obstacles", 3 * i + 2);
        clear0[i] = hypot(x0[0] - ox, x0[1] - oy) - R - ro;
        clear1[i] = hypot(x1[0] - ox, x1[1] - oy) - R - ro;
        in_layer0 += clear0[i] < pad;
        in_layer1 += clear1[i] < pad;
    }
    for (int i = 0; i < nob; i++) {
        double scale = fabs(x1[0]) + fabs(x1[1]) + R;
        if (model != RS_CONTACT_COMPLIANT) {
            if (clear1[i] < -tol_len(model, scale))
                violate(r, "obstacle", "robot %.3g m inside obstacle %d (tol %.2g)", -clear1[i], i,
                        tol_len(model, scale));
            continue;
        }
        /* compliant: under its layer the obstacle is rigid, whatever the number of layers
         * pushing at once (a wedge, a gap narrower than the robot): the centre never inside
         * it beyond the integrator's error on the centre (a slide along a held surface) */
        double err = 10.0 * (r->m->rtol * scale + r->m->atol);
        if (clear1[i] < -err)
            violate(r, "obstacle", "robot %.9g m inside obstacle %d under its %.3g m layer "
                    "(%d layers at once; tol %.2g)", -clear1[i], i, pad, in_layer1, err);
        /* compliant: the layer pushes back along the normal at (k / c) d, so the depth obeys
         * d' <= v - (k / c) d and stays below max(d0, c v / k) (one obstacle's layer at a time),
         * to the integrator's error on the centre (rtol |x| + atol per component: at the steady
         * depth c v / k the depth is a difference of positions a metre or so in size, held
         * there to that error; ten times it allows for its accumulation over a control step) */
        double d0 = pad - clear0[i], d1 = pad - clear1[i];
        double bound = fmax(d0, c * v / k) * (1 + 1e-6) + 10.0 * (r->m->rtol * scale + r->m->atol);
        if (in_layer0 <= 1 && in_layer1 <= 1 && d1 > 0 && d1 > bound)
            violate(r, "obstacle", "robot %.9g m deep in obstacle %d's layer (%.3g m thick; "
                    "%.3g m inside the obstacle); a normal spring-damper allows %.9g m "
                    "(from %.9g m, at %.9g m/s)",
                    d1, i, pad, d1 - pad, bound, d0, v);
    }
    /* rest: with no command nothing moves (compliant: while clear of every layer) */
    if (r->s->passive && !(model == RS_CONTACT_COMPLIANT && in_layer0) &&
        (x1[0] != x0[0] || x1[1] != x0[1] || x1[2] != x0[2]))
        violate(r, "rest", "robot moved (%.3g, %.3g, %.3g) under zero wheel speeds",
                x1[0] - x0[0], x1[1] - x0[1], x1[2] - x0[2]);
}

/* ---- brick -------------------------------------------------------------------------------- */

enum { B_X, B_Y, B_TH, B_VX, B_VY, B_W };

static void brick_corner(double w, double h, double th, int i, double *rx, double *ry)
{
    static const double sx[4] = {-0.5, 0.5, 0.5, -0.5}, sy[4] = {-0.5, -0.5, 0.5, 0.5};
    double cx = sx[i] * w, cy = sy[i] * h;
    *rx = cos(th) * cx - sin(th) * cy;
    *ry = sin(th) * cx + cos(th) * cy;
}

static void brick_sample(scenario_t *s, int e)
{
    if (s->formulation >= 0)
        set1(s, e, "contact_model", s->formulation);
    scale1(s, e, "mass", 5);
    double w = scale1(s, e, "width", 2), h = scale1(s, e, "height", 2);
    scale1(s, e, "gravity", 2);
    double e_lo = s->passive ? 0 : 0, e_hi = s->passive ? 0.5 : 1;
    double mu_lo = s->passive ? 0.3 : 0, mu_hi = 1.5;
    unif1(s, e, "restitution", e_lo, e_hi);
    unif1(s, e, "ground_restitution", e_lo, e_hi);
    unif1(s, e, "friction", mu_lo, mu_hi);
    unif1(s, e, "ground_friction", mu_lo, mu_hi);
    double pad = unif1(s, e, "padding", 0.001, 0.005) + unif1(s, e, "ground_padding", 0, 0.002);
    scale1(s, e, "stiffness", 10);
    scale1(s, e, "ground_stiffness", 10);
    scale1(s, e, "damping", 10);
    scale1(s, e, "ground_damping", 10);
    scale1(s, e, "ts_step", 10);
    double th = coin(&s->r, 0.2) ? (int)unif(&s->r, -2, 3) * M_PI / 2 : unif(&s->r, -M_PI, M_PI);
    set1(s, e, "theta0", th);
    double low = 0, rx, ry;
    for (int i = 0; i < 4; i++) {
        brick_corner(w, h, th, i, &rx, &ry);
        low = fmin(low, ry);
    }
    set1(s, e, "y0", -low + pad + unif(&s->r, 0.01, 1.0));
    unif1(s, e, "x0", -1, 1);
    unif1(s, e, "vx0", -2, 2);
    unif1(s, e, "vy0", -3, 1);
    unif1(s, e, "omega0", -10, 10);
}

static void brick_commands(const scenario_t *s, rng_t *r, const rs_model_t *m, int e, double *u,
                           double *w)
{
    (void)s, (void)w;
    u[0] = unif(r, -0.5, 0.5) * rs_model_param(m, e, "mass", 0) * rs_model_param(m, e, "gravity", 0);
}

static double brick_kinetic(const run_t *r, int e, const double *x)
{
    double m = P("mass", 0), w = P("width", 0), h = P("height", 0);
    return 0.5 * m * (x[B_VX] * x[B_VX] + x[B_VY] * x[B_VY]) +
           0.5 * m * (w * w + h * h) / 12 * x[B_W] * x[B_W];
}

/* depth of corner i into the layer (compliant) or below the ground (others) */
static double brick_depth(const run_t *r, int e, const double *x, int i, double pad)
{
    double rx, ry;
    brick_corner(P("width", 0), P("height", 0), x[B_TH], i, &rx, &ry);
    return pad - (x[B_Y] + ry);
}

static double brick_energy(const run_t *r, int e, const double *x, double *spring)
{
    double E = brick_kinetic(r, e, x) + P("mass", 0) * P("gravity", 0) * x[B_Y];
    *spring = 0;
    if (P("contact_model", 0) == RS_CONTACT_COMPLIANT) {
        double k = harmonic(P("stiffness", 0), P("ground_stiffness", 0));
        double pad = P("padding", 0) + P("ground_padding", 0);
        for (int i = 0; i < 4; i++) {
            double d = brick_depth(r, e, x, i, pad);
            if (d > 0)
                *spring += 0.5 * k * d * d;
        }
    }
    return E + *spring;
}

/* Rest (no push, restitution <= 0.5, friction >= 0.3): a generous bound, three times the time
 * of a bounce series from the highest the brick can rise, (1 + e) / (1 - e) fall times, plus
 * the time friction needs to stop the slide, plus 1 s. Under compliant e is the layer's own
 * (brick.c: from the damping): a linear spring-damper's exp(-zeta pi / sqrt(1 - zeta^2)) at
 * its least damping ratio, zeta = c / (2 sqrt(k m)) (one corner, the whole mass), if larger.
 * A brick that rocks (pivoting on one corner, then the other) loses less than that: Housner's
 * rocking block (Bull. Seismol. Soc. Am. 53(2), 1963) keeps r = 1 - 3/2 sin^2 alpha of its
 * angular velocity at each corner impact, alpha = atan(b / c) for a face of half-width b under
 * a half-height c (from I about a corner = 4/3 m R^2), even with no restitution, and the time
 * between impacts shrinks with the rate as a bounce series' does: e is at least r of the
 * slenderest stance, alpha = atan(min(w, h) / max(w, h)) (a tall brick standing on its narrow
 * face rocks longest; w / h = 0.2 gives r = 0.94). */
static void brick_begin(run_t *r, int e)
{
    if (!r->s->passive)
        return;
    double g = P("gravity", 0), m = P("mass", 0), w = P("width", 0), h = P("height", 0);
    double ee = 0.5 * (P("restitution", 0) + P("ground_restitution", 0));
    double sa = sin(atan(fmin(w, h) / fmax(w, h)));
    ee = fmax(ee, 1 - 1.5 * sa * sa);
    if (P("contact_model", 0) == RS_CONTACT_COMPLIANT) {
        double k = harmonic(P("stiffness", 0), P("ground_stiffness", 0));
        double zeta = harmonic(P("damping", 0), P("ground_damping", 0)) / (2 * sqrt(k * m));
        ee = fmax(ee, zeta < 1 ? exp(-zeta * M_PI / sqrt(1 - zeta * zeta)) : 0.0);
    }
    double mu = harmonic(P("friction", 0), P("ground_friction", 0));
    const double *x = r->d->x + r->m->ent[e].x_off;
    double H = x[B_Y] + 0.5 * hypot(w, h) + brick_kinetic(r, e, x) / (m * g);
    double v = sqrt(2 * brick_kinetic(r, e, x) / m + 2 * g * H);
    r->t_rest[e] = 3 * (sqrt(2 * H / g) * (1 + ee) / (1 - ee) + v / (mu * g)) + 1;
}

static void brick_check(run_t *r, int e, const double *x0, const double *x1)
{
    int model = (int)P("contact_model", 0);
    double W = r->u[e][0] * (x1[B_X] - x0[B_X]); /* the push, constant over the step */
    double s0, s1, E0 = brick_energy(r, e, x0, &s0), E1 = brick_energy(r, e, x1, &s1);
    double w = P("width", 0), h = P("height", 0);
    double pad = model == RS_CONTACT_COMPLIANT ? P("padding", 0) + P("ground_padding", 0) : 0;
    double k = harmonic(P("stiffness", 0), P("ground_stiffness", 0));
    double avail = fmax(0.0, E0 + W - (E1 - s1)); /* what the layer's springs can hold */
    for (int i = 0; i < 4; i++) {
        double d = brick_depth(r, e, x1, i, pad);
        if (model != RS_CONTACT_COMPLIANT) {
            if (d > tol_len(model, w + h + fabs(x1[B_Y])))
                violate(r, "penetration", "corner %d %.3g m below the ground (tol %.2g)", i, d,
                        tol_len(model, w + h + fabs(x1[B_Y])));
        } else {
            double bound = sqrt(2 * avail / k) * (1 + 1e-6) + 1e-9;
            if (d > pad && d > bound)
                violate(r, "penetration", "corner %d %.3g m below the ground (layer %.3g m); the "
                        "layer's energy bound allows depth %.3g m", i, d - pad, pad, bound);
        }
    }
    check_energy(r, e, E0, E1, W, 0);
    for (int i = 0; i < r->d->nevents; i++) {
        const rs_event_t *ev = &r->d->events[i];
        if (ev->entity != e || ev->nvalues < 6 || strcmp(rs_event_kind_name(r->m, ev), "impact"))
            continue;
        double K0 = brick_kinetic(r, e, ev->before), K1 = brick_kinetic(r, e, ev->after);
        if (K1 > K0 * (1 + 1e-9) + 1e-12)
            violate(r, "impact_energy", "impact at t = %.17g: kinetic energy %.9g -> %.9g J "
                    "(%+.3g%%)", ev->t, K0, K1, 100 * (K1 - K0) / K0);
    }
    if (r->t1 >= r->t_rest[e]) {
        double vmax = model == RS_CONTACT_COMPLIANT ? fmax(P("slip_speed", 0), 1e-3) : 1e-9;
        double low[4];
        for (int i = 0; i < 4; i++)
            low[i] = -brick_depth(r, e, x1, i, 0);
        /* on a face: its two lowest corners level */
        double a = INFINITY, b = INFINITY;
        for (int i = 0; i < 4; i++)
            if (low[i] < a) b = a, a = low[i];
            else if (low[i] < b) b = low[i];
        if (hypot(x1[B_VX], x1[B_VY]) > vmax || fabs(x1[B_W]) * hypot(w, h) > vmax ||
            b - a > 1e-6 * (w + h))
            violate(r, "rest", "not at rest on a face at t = %.4g s (bound %.4g s): v (%.3g, %.3g) "
                    "m/s, omega %.3g rad/s, lowest corners %.3g and %.3g m, y %.3g m", r->t1,
                    r->t_rest[e], x1[B_VX], x1[B_VY], x1[B_W], a, b, x1[B_Y]);
    }
}

/* ---- mobile manipulator ------------------------------------------------------------------ */

enum { M_X, M_Y, M_TH, M_Q, M_V = 11, M_W = 12 };

static void mm_ee(const run_t *r, int e, const double *x, int k, double p[2])
{
    double a1 = P("a1", 0), a2 = P("a2", 0), side = k == 0 ? 1 : -1;
    const double *q = x + M_Q + 4 * k;
    double bx = P("shoulder_x", 0) + a1 * cos(q[0]) + a2 * cos(q[0] + q[1]);
    double by = side * P("shoulder_y", 0) + a1 * sin(q[0]) + a2 * sin(q[0] + q[1]);
    p[0] = x[M_X] + cos(x[M_TH]) * bx - sin(x[M_TH]) * by;
    p[1] = x[M_Y] + sin(x[M_TH]) * bx + cos(x[M_TH]) * by;
}

/* How deep point p is inside the table (y > table_y between its ends); <= 0 outside. */
static double mm_inside(const run_t *r, int e, const double p[2])
{
    return fmin(p[1] - P("table_y", 0), fmin(p[0] - P("table_x_min", 0), P("table_x_max", 0) - p[0]));
}

/* Kinetic energy of base and uniform-rod links, from the velocities in the base frame: a point r
 * fixed in the base frame moves at (v, 0) + w (-r_y, r_x) plus its joint-driven velocity. */
static double mm_kinetic(const run_t *r, int e, const double *x)
{
    double v = x[M_V], w = x[M_W], a[2] = {P("a1", 0), P("a2", 0)}, m[2] = {P("m1", 0), P("m2", 0)};
    double T = 0.5 * P("base_mass", 0) * v * v + 0.5 * P("base_inertia", 0) * w * w;
    for (int k = 0; k < 2; k++) {
        const double *q = x + M_Q + 4 * k;
        double sx = P("shoulder_x", 0), sy = (k == 0 ? 1 : -1) * P("shoulder_y", 0);
        double ang[2] = {q[0], q[0] + q[1]}, rate[2] = {q[2], q[2] + q[3]};
        double jx = sx, jy = sy, jvx = 0, jvy = 0; /* the link's joint, position and velocity */
        for (int l = 0; l < 2; l++) {
            double cx = jx + 0.5 * a[l] * cos(ang[l]), cy = jy + 0.5 * a[l] * sin(ang[l]);
            double vx = v - w * cy + jvx - 0.5 * a[l] * sin(ang[l]) * rate[l];
            double vy = w * cx + jvy + 0.5 * a[l] * cos(ang[l]) * rate[l];
            double om = w + rate[l];
            T += 0.5 * m[l] * (vx * vx + vy * vy) + 0.5 * m[l] * a[l] * a[l] / 12 * om * om;
            jvx -= a[l] * sin(ang[l]) * rate[l], jvy += a[l] * cos(ang[l]) * rate[l];
            jx += a[l] * cos(ang[l]), jy += a[l] * sin(ang[l]);
        }
    }
    return T;
}

static void mm_sample(scenario_t *s, int e)
{
    scale1(s, e, "a1", 1.4);
    scale1(s, e, "a2", 1.4);
    scale1(s, e, "m1", 2);
    scale1(s, e, "m2", 2);
    unif1(s, e, "mu", 0, 1.5);
    double th = preset_value(s, e, "theta0", 0);
    set1(s, e, "theta0", th + unif(&s->r, -0.6, 0.6));
    unif1(s, e, "y0", -0.4, 0.3);
    static const char *const q0[4] = {"left_theta1_0", "left_theta2_0", "right_theta1_0",
                                      "right_theta2_0"};
    for (int i = 0; i < 4; i++)
        set1(s, e, q0[i], preset_value(s, e, q0[i], 0) + unif(&s->r, -1, 1));
    double xmin = unif(&s->r, -1.5, 0.5);
    set1(s, e, "table_x_min", xmin);
    set1(s, e, "table_x_max", xmin + unif(&s->r, 0.2, 3));
    scale1(s, e, "base_mass", 2);
    scale1(s, e, "base_inertia", 2);
    scale1(s, e, "roll_force", 10);
    scale1(s, e, "roll_torque", 10);
    scale1(s, e, "roll_damping", 10);
    scale1(s, e, "turn_damping", 10);
}

static void mm_commands(const scenario_t *s, rng_t *r, const rs_model_t *m, int e, double *u,
                        double *w)
{
    (void)s, (void)m, (void)e, (void)w;
    u[0] = unif(r, -3, 3), u[1] = unif(r, -3, 3);
    double cap = 10 * pow(10, unif(r, -1, 0.5));
    for (int j = 2; j < 6; j++)
        u[j] = unif(r, -cap, cap);
}

/* No rest check (the arms' joints have no friction); a start with an end effector inside the
 * table is not a scenario. */
static void mm_begin(run_t *r, int e)
{
    for (int k = 0; k < 2; k++) {
        double p[2];
        mm_ee(r, e, r->d->x + r->m->ent[e].x_off, k, p);
        if (mm_inside(r, e, p) > 0)
            r->invalid = 1;
    }
}

static void mm_check(run_t *r, int e, const double *x0, const double *x1)
{
    for (int k = 0; k < 2; k++) {
        double p[2];
        mm_ee(r, e, x1, k, p);
        double depth = mm_inside(r, e, p), tol = 1e-9 * (1 + fabs(p[0]) + fabs(p[1]));
        if (depth > tol)
            violate(r, "table", "%s end effector (%.6g, %.6g) %.3g m inside the table (edge y = "
                    "%.6g, x in [%.6g, %.6g])", k ? "right" : "left", p[0], p[1], depth,
                    P("table_y", 0), P("table_x_min", 0), P("table_x_max", 0));
    }
    if (P("base_mode", 0) == 1) { /* passive base: the joint torques are the only drive */
        double W = 0;
        for (int j = 0; j < 4; j++)
            W += r->u[e][2 + j] * (x1[M_Q + (j / 2) * 4 + j % 2] - x0[M_Q + (j / 2) * 4 + j % 2]);
        check_energy(r, e, mm_kinetic(r, e, x0), mm_kinetic(r, e, x1), W, 0);
    }
}

/* A reported Painleve inconsistency of the mobile manipulator, verified here rather than taken
 * from the robot: at the state where the step stopped, arm k's end effector is on its face (no
 * normal velocity) and slides (tangential velocity v_t != 0), so sliding friction mu acts against
 * v_t and the single-contact problem at the acceleration level is
 *     a_n = a0 + b lambda,  lambda >= 0,  a_n >= 0,  lambda a_n = 0,
 * a_n the end effector's acceleration away from the face, lambda the normal force, the force
 * lambda (n - mu sgn(v_t) t). b = n . J M_c^-1 J^T (n - mu sgn(v_t) t), with the mass matrix M
 * from this suite's own kinetic energy (mm_kinetic, polarised: M_ij = T(e_i + e_j) - T(e_i) -
 * T(e_j)), the Jacobian J of the end effector in the generalised speeds (v, w, joint rates) by
 * central differences of this suite's mm_ee, and M_c the system with the other constraints
 * (a stuck base speed, the other arm's contact) held. a0 = n . (J nudot_f + (dJ/dt) nu): nudot_f
 * the model's own accelerations with this arm free (its flow, which the energy checks test), the
 * velocity term from the end effector's path at constant nu (a fourth-order difference along the
 * base's arc and the joints' lines). No lambda >= 0 satisfies it exactly when b < 0 and a0 < 0:
 * then it is accepted, not counted as a violation. */
/* Solve A z = b (n x n, row-major, n <= 12; b becomes z) with SUNDIALS' dense LU. */
static int solve_small(int n, double *A, double *b)
{
    double col[12][12], *cols[12];
    sunindextype piv[12];
    for (int j = 0; j < n; j++) {
        cols[j] = col[j];
        for (int i = 0; i < n; i++)
            col[j][i] = A[i * n + j];
    }
    if (SUNDlsMat_denseGETRF(cols, n, n, piv) != 0)
        return -1;
    SUNDlsMat_denseGETRS(cols, n, piv, b);
    return 0;
}

static int aux_of(const rs_robot_t *robot, const char *name)
{
    for (int i = 0; i < robot->naux; i++)
        if (!strcmp(robot->aux_vars[i].name, name))
            return i;
    fprintf(stderr, "physics suite: robot '%s' has no aux '%s'\n", robot->kind, name);
    abort();
}

/* The state index of generalised speed j: v, w, left qd1, qd2, right qd1, qd2. */
static int mm_speed(int j) { return j == 0 ? M_V : j == 1 ? M_W : M_Q + 4 * ((j - 2) / 2) + 2 + j % 2; }

/* The end effector k with generalised coordinate j moved by s (0: along the heading, 1: the
 * heading, then the joints). */
static void mm_ee_moved(const run_t *r, int e, const double *x, int k, int j, double s, double p[2])
{
    double y[13];
    memcpy(y, x, sizeof y);
    if (j == 0)
        y[M_X] += s * cos(x[M_TH]), y[M_Y] += s * sin(x[M_TH]);
    else if (j == 1)
        y[M_TH] += s;
    else
        y[M_Q + 4 * ((j - 2) / 2) + j % 2] += s;
    mm_ee(r, e, y, k, p);
}

/* The end effector k at time s along the motion with constant generalised speeds. */
static void mm_ee_path(const run_t *r, int e, const double *x, int k, double s, double p[2])
{
    double y[13], v = x[M_V], w = x[M_W], th = x[M_TH];
    memcpy(y, x, sizeof y);
    y[M_TH] = th + w * s;
    if (fabs(w * s) > 1e-9) {
        y[M_X] += v / w * (sin(th + w * s) - sin(th));
        y[M_Y] += v / w * (cos(th) - cos(th + w * s));
    } else {
        y[M_X] += v * s * cos(th + 0.5 * w * s);
        y[M_Y] += v * s * sin(th + 0.5 * w * s);
    }
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 2; i++)
            y[M_Q + 4 * a + i] += x[M_Q + 4 * a + 2 + i] * s;
    mm_ee(r, e, y, k, p);
}

static void mm_jacobian(const run_t *r, int e, const double *x, int k, double J[2][6])
{
    for (int j = 0; j < 6; j++) {
        double h = 1e-6, pp[2], pm[2];
        mm_ee_moved(r, e, x, k, j, h, pp);
        mm_ee_moved(r, e, x, k, j, -h, pm);
        for (int i = 0; i < 2; i++)
            J[i][j] = (pp[i] - pm[i]) / (2 * h);
    }
}

static void mm_face(int face, double n[2], double t[2])
{
    /* the robot's documented faces: edge n = (0, -1), t = (1, 0); side x_min n = (-1, 0), side
     * x_max n = (1, 0), both t = (0, 1) */
    n[0] = face == 0 ? 0 : face == 1 ? -1 : 1, n[1] = face == 0 ? -1 : 0;
    t[0] = face == 0 ? 1 : 0, t[1] = face == 0 ? 0 : 1;
}

/* Returns 1 when the inconsistency holds at x (the entity's state), else 0 with why. */
static int mm_painleve_holds(run_t *r, int e, const double *x, char *why, size_t nwhy)
{
    const rs_robot_t *robot = r->m->ent[e].robot;
    const rs_entity_data_t *ed = &r->d->ent[e];
    int k = (int)ed->aux[aux_of(robot, "jammed")] - 1;
    if (k < 0 || k > 1) {
        snprintf(why, nwhy, "no jammed arm in the robot's state");
        return 0;
    }
    const char *mode = robot->mode_names[ed->mode], *comma = strchr(mode, ',');
    char side[2][16];
    snprintf(side[0], sizeof side[0], "%.*s", (int)(comma - mode), mode);
    snprintf(side[1], sizeof side[1], "%s", comma + 1);
    double mu = P("mu", 0), n[2][2], t[2][2];
    for (int a = 0; a < 2; a++)
        mm_face((int)ed->aux[aux_of(robot, a ? "right_face" : "left_face")], n[a], t[a]);
    /* on the face, not moving across it, sliding */
    double J[2][2][6], nu[6], p[2], vn = 0, vt = 0, vs = 0;
    for (int j = 0; j < 6; j++)
        nu[j] = x[mm_speed(j)];
    for (int a = 0; a < 2; a++)
        mm_jacobian(r, e, x, a, J[a]);
    for (int j = 0; j < 6; j++) {
        vn += (n[k][0] * J[k][0][j] + n[k][1] * J[k][1][j]) * nu[j];
        vt += (t[k][0] * J[k][0][j] + t[k][1] * J[k][1][j]) * nu[j];
        vs += (fabs(J[k][0][j]) + fabs(J[k][1][j])) * fabs(nu[j]);
    }
    mm_ee(r, e, x, k, p);
    double gap = n[k][0] * p[0] + n[k][1] * p[1] -
                 (n[k][1] != 0 ? -P("table_y", 0) : n[k][0] < 0 ? -P("table_x_min", 0) : P("table_x_max", 0));
    if (fabs(gap) > 1e-9 * (1 + fabs(p[0]) + fabs(p[1])) || fabs(vn) > 1e-6 * (vs + 1e-9)) {
        snprintf(why, nwhy, "not on the face: gap %.3g m, normal velocity %.3g m/s", gap, vn);
        return 0;
    }
    int sliding = fabs(vt) > 1e-6 * (vs + 1e-9);
    /* M by polarisation of the kinetic energy (quadratic in the speeds) */
    double M[6][6], T1[6], y[13];
    memcpy(y, x, sizeof y);
    for (int j = 0; j < 6; j++)
        y[mm_speed(j)] = 0;
    for (int i = 0; i < 6; i++) {
        y[mm_speed(i)] = 1;
        T1[i] = mm_kinetic(r, e, y);
        y[mm_speed(i)] = 0;
    }
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            y[mm_speed(i)] = 1, y[mm_speed(j)] = 1;
            M[i][j] = i == j ? 2 * T1[i] : mm_kinetic(r, e, y) - T1[i] - T1[j];
            y[mm_speed(i)] = 0, y[mm_speed(j)] = 0;
        }
    /* the other constraints: base speeds held, the other arm's contact */
    double G[6][6], A[6][6];
    int m = 0, o = 1 - k;
    memset(G, 0, sizeof G), memset(A, 0, sizeof A);
    for (int i = 0; i < 2; i++)
        if (P("base_mode", 0) == 0 || ed->aux[aux_of(robot, i ? "base_w_dir" : "base_v_dir")] == 0)
            G[m][i] = A[m][i] = 1, m++;
    if (!strcmp(side[o], "stick"))
        for (int c = 0; c < 2; c++, m++)
            for (int j = 0; j < 6; j++)
                G[m][j] = A[m][j] = J[o][c][j];
    if (!strcmp(side[o], "slide")) {
        double od = ed->aux[aux_of(robot, o ? "right_dir" : "left_dir")];
        for (int j = 0; j < 6; j++) {
            A[m][j] = n[o][0] * J[o][0][j] + n[o][1] * J[o][1][j];
            G[m][j] = (n[o][0] - mu * od * t[o][0]) * J[o][0][j] +
                      (n[o][1] - mu * od * t[o][1]) * J[o][1][j];
        }
        m++;
    }
    /* W = [n; t] J M_c^-1 J^T [n t] from [M -G^T; A 0] (y) = (J^T f, 0), f = n, t */
    double W[2][2], nt[2][2] = {{n[k][0], n[k][1]}, {t[k][0], t[k][1]}};
    for (int s = 0; s < 2; s++) {
        int nn = 6 + m;
        double K[144] = {0}, z[12] = {0};
        for (int i = 0; i < 6; i++) {
            for (int j = 0; j < 6; j++)
                K[i * nn + j] = M[i][j];
            for (int c = 0; c < m; c++)
                K[i * nn + 6 + c] = -G[c][i], K[(6 + c) * nn + i] = A[c][i];
            z[i] = nt[s][0] * J[k][0][i] + nt[s][1] * J[k][1][i];
        }
        if (solve_small(nn, K, z)) {
            snprintf(why, nwhy, "a singular constrained mass matrix");
            return 0;
        }
        for (int a = 0; a < 2; a++) {
            W[a][s] = 0;
            for (int j = 0; j < 6; j++)
                W[a][s] += (nt[a][0] * J[k][0][j] + nt[a][1] * J[k][1][j]) * z[j];
        }
    }
    /* a0: the model's free flow of this arm, and the path's acceleration at constant nu */
    rs_entity_data_t free_ed = *ed;
    char want[40];
    snprintf(want, sizeof want, "%s,%s", k ? side[0] : "free", k ? "free" : side[1]);
    for (int i = 0; i < robot->nmodes; i++)
        if (!strcmp(robot->mode_names[i], want))
            free_ed.mode = i;
    free_ed.aux[aux_of(robot, k ? "right_dir" : "left_dir")] = 0;
    free_ed.aux[aux_of(robot, "jammed")] = 0;
    double xdot[13], acc[2] = {0, 0}, pth[5][2], rate = fabs(x[M_V]) + fabs(x[M_W]);
    robot->derivs(&r->m->ent[e], &free_ed, r->d->t, x, ed->u, xdot);
    for (int a = 0; a < 2; a++)
        rate += fabs(x[M_Q + 4 * a + 2]) + fabs(x[M_Q + 4 * a + 3]);
    double h = 1e-3 / (1 + rate);
    for (int i = 0; i < 5; i++)
        mm_ee_path(r, e, x, k, (i - 2) * h, pth[i]);
    double af[2] = {0, 0}, as = 0; /* the free acceleration along n and t */
    for (int c = 0; c < 2; c++) {
        acc[c] = (-pth[0][c] + 16 * pth[1][c] - 30 * pth[2][c] + 16 * pth[3][c] - pth[4][c]) /
                 (12 * h * h);
        as += fabs(acc[c]);
        for (int j = 0; j < 6; j++)
            acc[c] += J[k][c][j] * xdot[mm_speed(j)], as += fabs(J[k][c][j] * xdot[mm_speed(j)]);
    }
    for (int a = 0; a < 2; a++)
        af[a] = nt[a][0] * acc[0] + nt[a][1] * acc[1];
    /* every mode must fail by more than the differences' error: tol_a on accelerations, tol_w
     * on W's entries (relative 1e-6) */
    double tol_a = 1e-6 * as + 1e-12, tol_w = 1e-6 * (fabs(W[0][0]) + fabs(W[1][1]));
    int n_ok = 0; /* modes not clearly inconsistent */
    char *w = why;
    size_t left = nwhy;
#define WHY(...) do { int c_ = snprintf(w, left, __VA_ARGS__); if (c_ > 0 && (size_t)c_ < left) w += c_, left -= (size_t)c_; } while (0)
    WHY("%s at %.3g m/s, mu %.4g, free a_n %.6g m/s^2 (tol %.2g), W [%.5g %.5g; %.5g %.5g]:",
        sliding ? "sliding" : "at rest on the face", vt, mu, af[0], tol_a, W[0][0], W[0][1],
        W[1][0], W[1][1]);
    n_ok += !(af[0] < -tol_a); /* free: a_n = a0 >= 0 */
    for (int sd = -1; sd <= 1; sd += 2) { /* sliding to +t or -t: force lambda (n - mu sd t) */
        if (sliding && sd != (vt > 0 ? 1 : -1))
            continue;
        double bn = W[0][0] - mu * sd * W[0][1], bt = W[1][0] - mu * sd * W[1][1];
        if (!(fabs(bn) > tol_w)) {
            n_ok++;
            continue;
        }
        double lam = -af[0] / bn, at = af[1] + lam * bt;
        /* consistent: lam >= 0 and (at rest) accelerating its own way */
        int clearly_not = lam * fabs(bn) < -tol_a || (!sliding && sd * at < -tol_a - fabs(lam) * tol_w);
        WHY(" slide %ct: lambda %.6g, a_t %.6g%s;", sd > 0 ? '+' : '-', lam, at,
            clearly_not ? "" : " (consistent)");
        n_ok += !clearly_not;
    }
    if (!sliding) { /* stick: W f = -a_free, f_n >= 0, |f_t| <= mu f_n */
        double det = W[0][0] * W[1][1] - W[0][1] * W[1][0];
        double fn = (-af[0] * W[1][1] + af[1] * W[0][1]) / det;
        double ft = (-af[1] * W[0][0] + af[0] * W[1][0]) / det;
        double tol_f = 1e-6 * (fabs(fn) + fabs(ft)) + tol_a / (fabs(W[0][0]) + fabs(W[1][1]));
        int clearly_not = fn < -tol_f || fabs(ft) > mu * fn + tol_f;
        WHY(" stick: f_n %.6g, f_t %.6g%s", fn, ft, clearly_not ? "" : " (consistent)");
        n_ok += !clearly_not || !(fabs(det) > tol_w * tol_w);
    }
#undef WHY
    return n_ok == 0;
}

/* A reported self-locking of the mobile manipulator, verified here: with the wheels servoed
 * (base_mode 0, the base's speeds the commands', constant within the control step), arm k's end
 * effector is stuck on its face (on it, at rest), so the shoulder's distance r(s) from it over
 * the rest of the control step follows from the base's arc alone (this suite's kinematics); r
 * leaves the arm's reach [|a1 - a2|, a1 + a2] within it (no joint motion keeps the end effector
 * there), and the force along the arm that would hold it (d = (p - shoulder) / r at full reach,
 * -d folded) lies strictly inside the friction cone (the contact cannot slip or let go). */
static int mm_lock_holds(run_t *r, int e, const double *x, char *why, size_t nwhy)
{
    const rs_robot_t *robot = r->m->ent[e].robot;
    const rs_entity_data_t *ed = &r->d->ent[e];
    int k = (int)ed->aux[aux_of(robot, "jammed")] - 3;
    const char *mode = robot->mode_names[ed->mode], *comma = strchr(mode, ',');
    if (k < 0 || k > 1 || P("base_mode", 0) != 0 ||
        strncmp(k ? comma + 1 : mode, "stick", 5)) {
        snprintf(why, nwhy, "not a stuck arm of a servoed base (jammed %g, mode %s)",
                 ed->aux[aux_of(robot, "jammed")], mode);
        return 0;
    }
    double n[2], t[2], J[2][6], p[2], vx = 0, vy = 0, vs = 0, mu = P("mu", 0);
    mm_face((int)ed->aux[aux_of(robot, k ? "right_face" : "left_face")], n, t);
    mm_jacobian(r, e, x, k, J);
    for (int j = 0; j < 6; j++) {
        vx += J[0][j] * x[mm_speed(j)], vy += J[1][j] * x[mm_speed(j)];
        vs += (fabs(J[0][j]) + fabs(J[1][j])) * fabs(x[mm_speed(j)]);
    }
    mm_ee(r, e, x, k, p);
    double gap = n[0] * p[0] + n[1] * p[1] -
                 (n[1] != 0 ? -P("table_y", 0) : n[0] < 0 ? -P("table_x_min", 0) : P("table_x_max", 0));
    if (fabs(gap) > 1e-9 * (1 + fabs(p[0]) + fabs(p[1])) || hypot(vx, vy) > 1e-6 * (vs + 1e-9)) {
        snprintf(why, nwhy, "not at rest on the face: gap %.3g m, speed %.3g m/s", gap, hypot(vx, vy));
        return 0;
    }
    double a1 = P("a1", 0), a2 = P("a2", 0), sb[2] = {P("shoulder_x", 0), (k ? -1 : 1) * P("shoulder_y", 0)};
    double v = x[M_V], w = x[M_W], th = x[M_TH], rmax = a1 + a2, rmin = fabs(a1 - a2), d0[2] = {0, 0}, r0 = 0;
    double T = r->t0 + r->m->control_dt - r->d->t, left = 0, right = 0;
    if (!(T > 0))
        T = r->m->control_dt;
    for (int i = 0; i <= 400; i++) { /* s from 1e-12 T to T, geometrically, and s = 0 first */
        double sv = i == 0 ? 0 : T * pow(1e-12, 1.0 - (i - 1) / 399.0), bx = x[M_X], by = x[M_Y];
        double ts = th + w * sv;
        if (fabs(w * sv) > 1e-9)
            bx += v / w * (sin(ts) - sin(th)), by += v / w * (cos(th) - cos(ts));
        else
            bx += v * sv * cos(th + 0.5 * w * sv), by += v * sv * sin(th + 0.5 * w * sv);
        double sx = bx + cos(ts) * sb[0] - sin(ts) * sb[1], sy = by + sin(ts) * sb[0] + cos(ts) * sb[1];
        double rr = hypot(p[0] - sx, p[1] - sy);
        if (i == 0) {
            r0 = rr, d0[0] = (p[0] - sx) / rr, d0[1] = (p[1] - sy) / rr;
            continue;
        }
        if (rr > rmax * (1 + 1e-12) && !left)
            left = sv; /* out of reach: stretched past a1 + a2 */
        if (rr < rmin * (1 - 1e-12) && !right)
            right = sv; /* inside the fold: below |a1 - a2| */
    }
    int stretched = r0 > 0.5 * (rmax + rmin);
    double out = stretched ? left : right, sg = stretched ? 1 : -1;
    double fn = sg * (n[0] * d0[0] + n[1] * d0[1]), ft = sg * (t[0] * d0[0] + t[1] * d0[1]);
    int inside = fn > 0 && fabs(ft) < mu * fn * (1 - 1e-9);
    snprintf(why, nwhy, "stuck at (%.6g, %.6g), the shoulder %.9g m from it (reach [%.6g, %.6g]), "
             "%s it after %.3g s of the commanded arc (v %.4g m/s, w %.4g rad/s); the force along "
             "the arm: friction ratio %.4g against mu %.4g%s",
             p[0], p[1], r0, rmin, rmax, out > 0 ? "out of" : "never out of", out, v, w,
             fn > 0 ? fabs(ft) / fn : INFINITY, mu, inside ? " (inside the cone)" : "");
    return out > 0 && inside;
}

/* ---- mid-run parameter changes (--set-params) -------------------------------------------- */

/* The draws aim at the live state: a change that fits it and one that does not are both
 * likely, so the refusals and the accepted changes are both exercised. */

static void finger_mutate(scenario_t *ch, const run_t *r, int e, const double *x)
{
    (void)r;
    double gap = x[F_XO] - x[F_XF];
    if (coin(&ch->r, 0.5) && ch->formulation >= 0)
        set1(ch, e, "contact_model", (int)unif(&ch->r, 0, 3));
    if (coin(&ch->r, 0.5)) /* around the gap: the tip inside the new layer or clear of it */
        set1(ch, e, "finger_padding", fmax(0.0, gap * unif(&ch->r, 0.5, 2) + unif(&ch->r, -0.01, 0.01)));
    if (coin(&ch->r, 0.3))
        unif1(ch, e, "object_padding", 0, 0.01);
    if (coin(&ch->r, 0.3))
        scale1(ch, e, "finger_stiffness", 100);
    if (coin(&ch->r, 0.2))
        scale1(ch, e, "object_damping", 10);
    if (coin(&ch->r, 0.2))
        scale1(ch, e, "finger_mass", 3);
}

static void finger_layer(run_t *now, const run_t *was, int e, const double *x)
{
    if (rs_model_param(now->m, e, "contact_model", 0) != RS_CONTACT_COMPLIANT)
        return;
    double gap = x[F_XO] - x[F_XF], d = finger_pad(now, e) - gap, d0 = finger_pad(was, e) - gap;
    double E1 = d > 0 ? 0.5 * finger_k(now, e) * d * d : 0.0;
    double E0 = rs_model_param(was->m, e, "contact_model", 0) == RS_CONTACT_COMPLIANT && d0 > 0
                    ? 0.5 * finger_k(was, e) * d0 * d0
                    : 0.0;
    if (E1 > E0 * (1 + 1e-6) + 1e-9)
        violate(now, "layer", "after SetParams the finger's layer holds %.9g J at depth %.6g m, "
                "%.9g J before", E1, d, E0);
}

static void arm_mutate_stops(scenario_t *ch, int e, const double *x, double lo_bound, double hi_bound)
{
    double lo[2], hi[2], q0[2];
    for (int j = 0; j < 2; j++) {
        /* stops around the live angle, or cutting it off by up to 0.3 rad */
        lo[j] = fmax(lo_bound, x[j] - unif(&ch->r, -0.3, 0.5));
        hi[j] = fmin(hi_bound, fmax(lo[j] + 0.05, x[j] + unif(&ch->r, -0.3, 0.5)));
        q0[j] = 0.5 * (lo[j] + hi[j]); /* the initial angles within them (a Reset starts there) */
    }
    set_values(ch, e, "theta_min", lo, 2);
    set_values(ch, e, "theta_max", hi, 2);
    if (coin(&ch->r, 0.7))
        set_values(ch, e, "theta0", q0, 2);
}

static void serial_mutate(scenario_t *ch, const run_t *r, int e, const double *x)
{
    (void)r;
    if (coin(&ch->r, 0.6))
        arm_mutate_stops(ch, e, x, -1e3, 1e3);
    if (coin(&ch->r, 0.3))
        scale1(ch, e, "a2", 2);
    if (coin(&ch->r, 0.3)) {
        double mu[2] = {unif(&ch->r, 0, 0.05), unif(&ch->r, 0, 0.05)};
        set_values(ch, e, "mu_D", mu, 2);
    }
}

static void pa_mutate(scenario_t *ch, const run_t *r, int e, const double *x)
{
    if (coin(&ch->r, 0.5)) {
        double lo, hi;
        bounds(ch, e, "theta0", &lo, &hi);
        arm_mutate_stops(ch, e, x, lo, hi);
    }
    if (coin(&ch->r, 0.6)) { /* about half the elbows' live distance: taut or not assemblable */
        double A[2], B[2];
        pa_elbows(r, e, x, A, B);
        set1(ch, e, "L2", 0.5 * hypot(B[0] - A[0], B[1] - A[1]) * unif(&ch->r, 0.7, 1.5));
    }
    if (coin(&ch->r, 0.3))
        scale1(ch, e, "L1", 1.3);
}

static void dd_mutate(scenario_t *ch, const run_t *r, int e, const double *x)
{
    if (coin(&ch->r, 0.4) && ch->formulation >= 0)
        set1(ch, e, "contact_model", (int)unif(&ch->r, 0, 3));
    if (coin(&ch->r, 0.3))
        unif1(ch, e, "padding", 0, 0.05);
    if (coin(&ch->r, 0.3))
        scale1(ch, e, "robot_radius", 1.5);
    if (coin(&ch->r, 0.3))
        scale1(ch, e, "stiffness", 10);
    if (coin(&ch->r, 0.6)) { /* the obstacles kept, one more at the robot: overlapping or not */
        double ob[12];
        int n = 0;
        while (n < 3 && !isnan(rs_model_param(r->m, e, "obstacles", 3 * n))) {
            for (int c = 0; c < 3; c++)
                ob[3 * n + c] = rs_model_param(r->m, e, "obstacles", 3 * n + c);
            n++;
        }
        double r0 = unif(&ch->r, 0.05, 0.3), a = unif(&ch->r, -M_PI, M_PI);
        double dist = rs_model_param(r->m, e, "robot_radius", 0) + r0 + unif(&ch->r, -0.1, 0.1);
        ob[3 * n] = x[0] + dist * cos(a), ob[3 * n + 1] = x[1] + dist * sin(a), ob[3 * n + 2] = r0;
        set_values(ch, e, "obstacles", ob, 3 * (n + 1));
    }
}

/* compliant: the depth into each obstacle's layer no deeper than it was (in the same layer
 * under a compliant formulation before), to rounding */
static void dd_layer(run_t *now, const run_t *was, int e, const double *x)
{
    if (rs_model_param(now->m, e, "contact_model", 0) != RS_CONTACT_COMPLIANT)
        return;
    int before = rs_model_param(was->m, e, "contact_model", 0) == RS_CONTACT_COMPLIANT;
    for (int i = 0; i < 16 && !isnan(rs_model_param(now->m, e, "obstacles", 3 * i)); i++) {
        const rs_model_t *M[2] = {now->m, was->m};
        double d[2] = {0, 0};
        for (int k = 0; k < (before ? 2 : 1); k++) {
            if (isnan(rs_model_param(M[k], e, "obstacles", 3 * i)))
                continue;
            double ox = rs_model_param(M[k], e, "obstacles", 3 * i);
            double oy = rs_model_param(M[k], e, "obstacles", 3 * i + 1);
            double ro = rs_model_param(M[k], e, "obstacles", 3 * i + 2);
            double pad = rs_model_param(M[k], e, "padding", 0) + rs_model_param(M[k], e, "obstacle_padding", 0);
            d[k] = pad - (hypot(x[0] - ox, x[1] - oy) - rs_model_param(M[k], e, "robot_radius", 0) - ro);
        }
        double scale = fabs(x[0]) + fabs(x[1]) + 1;
        if (d[0] > fmax(d[1], 0.0) + 1e-8 * scale)
            violate(now, "layer", "after SetParams the robot is %.9g m deep in obstacle %d's layer "
                    "(%.9g m before)", d[0], i, fmax(d[1], 0.0));
    }
}

static void brick_mutate(scenario_t *ch, const run_t *r, int e, const double *x)
{
    (void)r, (void)x;
    if (coin(&ch->r, 0.4) && ch->formulation >= 0)
        set1(ch, e, "contact_model", (int)unif(&ch->r, 0, 3));
    if (coin(&ch->r, 0.4))
        scale1(ch, e, "height", 2);
    if (coin(&ch->r, 0.3))
        scale1(ch, e, "width", 2);
    if (coin(&ch->r, 0.4))
        unif1(ch, e, "padding", 0, 0.05);
    if (coin(&ch->r, 0.3))
        scale1(ch, e, "stiffness", 100);
    if (coin(&ch->r, 0.2))
        unif1(ch, e, "friction", 0.1, 1.2);
}

/* compliant: the springs hold no more than before, and no corner is deeper below the ground
 * than before */
static void brick_layer(run_t *now, const run_t *was, int e, const double *x)
{
    if (rs_model_param(now->m, e, "contact_model", 0) != RS_CONTACT_COMPLIANT)
        return;
    double s1, s0;
    brick_energy(now, e, x, &s1);
    brick_energy(was, e, x, &s0); /* 0 under a rigid formulation */
    if (s1 > s0 * (1 + 1e-6) + 1e-9)
        violate(now, "layer", "after SetParams the brick's layer holds %.9g J, %.9g J before", s1, s0);
    int same = rs_model_param(was->m, e, "contact_model", 0) == RS_CONTACT_COMPLIANT;
    double tol = tol_len(RS_CONTACT_HYBRID, rs_model_param(now->m, e, "width", 0) +
                         rs_model_param(now->m, e, "height", 0) + fabs(x[B_Y]));
    for (int i = 0; i < 4; i++) {
        double d1 = brick_depth(now, e, x, i, 0), d0 = same ? brick_depth(was, e, x, i, 0) : 0;
        if (d1 > fmax(d0, 0.0) + tol)
            violate(now, "penetration", "after SetParams corner %d is %.3g m below the ground "
                    "(%.3g m before)", i, d1, fmax(d0, 0.0));
    }
}

static void mm_mutate(scenario_t *ch, const run_t *r, int e, const double *x)
{
    if (coin(&ch->r, 0.6)) { /* the table's edge near an end effector: under it or above */
        double p[2];
        mm_ee(r, e, x, (int)unif(&ch->r, 0, 2), p);
        set1(ch, e, "table_y", p[1] + unif(&ch->r, -0.1, 0.2));
        double xmin = p[0] - unif(&ch->r, -0.2, 0.5);
        set1(ch, e, "table_x_min", xmin);
        set1(ch, e, "table_x_max", xmin + unif(&ch->r, 0.1, 1.5));
    }
    if (coin(&ch->r, 0.3))
        scale1(ch, e, "a2", 1.3);
    if (coin(&ch->r, 0.2))
        unif1(ch, e, "mu", 0, 1);
}

/* ---- the robots --------------------------------------------------------------------------- */

static void no_begin(run_t *r, int e) { (void)r, (void)e; }

static const checker_t checkers[] = {
    {"finger", finger_sample, finger_commands, finger_begin, finger_check, finger_mutate,
     finger_layer},
    {"serial_arm", serial_sample, serial_commands, serial_begin, serial_check, serial_mutate,
     NULL},
    {"parallel_arm", pa_sample, pa_commands, pa_begin, pa_check, pa_mutate, NULL},
    {"diff_drive", dd_sample, dd_commands, no_begin, dd_check, dd_mutate, dd_layer},
    {"brick", brick_sample, brick_commands, brick_begin, brick_check, brick_mutate, brick_layer},
    {"mobile_manipulator", mm_sample, mm_commands, mm_begin, mm_check, mm_mutate, NULL},
};

static const checker_t *checker_of(const rs_robot_t *robot)
{
    for (size_t i = 0; i < sizeof checkers / sizeof checkers[0]; i++)
        if (!strcmp(checkers[i].kind, robot->kind))
            return &checkers[i];
    return NULL;
}

/* ---- groups: every preset under every formulation its robots have ------------------------ */

typedef struct group {
    char name[64];
    const char *preset;
    int formulation; /* -1: the robots have no contact_model (their one hybrid formulation) */
    const rs_model_t *base;
    int selected;
    long scenarios, violations, painleve; /* painleve: verified reports, not violations */
    long changes_taken, changes_refused;  /* --set-params: the mid-run changes' outcomes */
    char painleve_example[480];
    long by_check[NKINDS];
    char example[NKINDS][480];
} group_t;

static group_t groups[64];
static int ngroups;
static int set_params_mode; /* --set-params: every scenario changes parameters mid-run */
/* the kinds of check a group's summary counts; geometry: penetration, obstacles, the table,
 * joint stops and the closure */
static const char *const check_names[NKINDS] = {"step", "finite", "geometry", "energy",
                                                "impact_energy", "rest", "determinism",
                                                "momentum", "other"};

static int check_index(const char *check)
{
    for (int i = 0; i < NKINDS - 1; i++)
        if (!strcmp(check_names[i], check))
            return i;
    if (!strcmp(check, "obstacle") || !strcmp(check, "table") || !strcmp(check, "joint_stop") ||
        !strcmp(check, "closure") || !strcmp(check, "penetration"))
        return 2;
    return NKINDS - 1;
}

static int has_param(const rs_robot_t *robot, const char *name)
{
    for (int i = 0; i < robot->np; i++)
        if (!strcmp(robot->params[i].name, name))
            return 1;
    return 0;
}

static void make_groups(void)
{
    for (const char *const *p = rs_preset_names(); *p; p++) {
        rs_status_t st;
        rs_model_t *m = calloc(1, sizeof *m);
        if (!m || rs_model_build(m, *p, NULL, 0, &st)) {
            fprintf(stderr, "physics suite: preset %s: %s\n", *p, m ? st.message : "no memory");
            exit(2);
        }
        int contact = 0;
        for (int e = 0; e < m->nentities; e++) {
            if (!checker_of(m->ent[e].robot)) {
                fprintf(stderr, "physics suite: no invariants for robot kind '%s' (preset %s): "
                        "add its checker\n", m->ent[e].robot->kind, *p);
                exit(2);
            }
            contact |= has_param(m->ent[e].robot, "contact_model");
        }
        for (int f = 0; f < (contact ? 3 : 1); f++) {
            group_t *g = &groups[ngroups++];
            snprintf(g->name, sizeof g->name, "%s/%s", *p, formulation_names[f]);
            g->preset = *p;
            g->formulation = contact ? f : -1;
            g->base = m;
            g->selected = 1;
        }
    }
}

/* The scenario of (group, seed): parameters, passive or driven, length. */
static void generate(scenario_t *s, int group, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->group = group;
    s->seed = seed;
    s->r.s = seed;
    s->base = groups[group].base;
    s->formulation = groups[group].formulation;
    s->passive = coin(&s->r, 0.3);
    s->hold = 1 + (int)unif(&s->r, 0, 50);
    double T = unif(&s->r, 0.5, 2.5);
    for (int e = 0; e < s->base->nentities; e++)
        checker_of(s->base->ent[e].robot)->sample(s, e);
    s->nsteps = (int)fmin(MAX_STEPS, ceil(T / s->base->control_dt));
    if (set_params_mode) { /* short: a change after 1 to 20 steps, then 20 steps under it */
        s->change = 1 + (int)unif(&s->r, 0, 20);
        s->nsteps = s->change + 20;
    }
}

/* A step that stopped with a reported Painleve inconsistency (or, lock set, a self-locking):
 * accepted (v->painleve) only if the world stayed at a consistent state (the entity's invariants
 * hold from the step's start to it, and stepping again fails the same way and changes nothing,
 * bit for bit) and the suite finds the inconsistency itself (mm_painleve_holds, mm_lock_holds);
 * else a violation. */
/* A brick's Painleve report, checked with the suite's own geometry: one corner on the ground
 * (the others clear), not moving along the normal, sliding (s = sgn of its tangential
 * velocity), with both the free normal acceleration a0 = -(g + w^2 ry) and the normal
 * compliance of the slide b = 1/m + (rx^2 + mu s rx ry) / I below 0, each by more than its
 * rounding: then a_n = a0 + b lambda < 0 for every lambda >= 0, and lift-off (lambda = 0) goes
 * into the ground: no mode satisfies Coulomb's law (possible only for mu above 4/3). */
static int brick_painleve_holds(run_t *r, int e, const double *x, char *why, size_t n)
{
    double m = P("mass", 0), w = P("width", 0), h = P("height", 0), g = P("gravity", 0);
    double mu = harmonic(P("friction", 0), P("ground_friction", 0)), I = m * (w * w + h * h) / 12;
    double tol = tol_len(RS_CONTACT_HYBRID, fabs(x[B_X]) + fabs(x[B_Y]) + w + h);
    int k = -1, down = 0;
    for (int i = 0; i < 4; i++) {
        double rx, ry;
        brick_corner(w, h, x[B_TH], i, &rx, &ry);
        if (fabs(x[B_Y] + ry) <= tol)
            k = i, down++;
    }
    if (down != 1) {
        snprintf(why, n, "%d corners at the ground, not one", down);
        return 0;
    }
    double rx, ry;
    brick_corner(w, h, x[B_TH], k, &rx, &ry);
    double vn = x[B_VY] + x[B_W] * rx, vt = x[B_VX] - x[B_W] * ry;
    double vscale = fabs(x[B_VX]) + fabs(x[B_VY]) + fabs(x[B_W]) * (w + h) + 1e-300;
    double s = vt > 0 ? 1.0 : -1.0;
    double a0 = -(g + x[B_W] * x[B_W] * ry);
    double b = 1.0 / m + (rx * rx + mu * s * rx * ry) / I;
    double bscale = 1.0 / m + (rx * rx + mu * fabs(rx * ry)) / I;
    snprintf(why, n, "corner %d sliding at %.3g m/s (normal %.3g), mu %.4g, free a_n %.6g m/s^2, "
             "compliance %.6g 1/kg", k, vt, vn, mu, a0, b);
    return fabs(vn) <= 1e-9 * vscale && fabs(vt) > 1e-9 * vscale &&
           a0 < -1e-9 * (g + x[B_W] * x[B_W] * fabs(ry)) && b < -1e-9 * bscale;
}

static void accept_report(run_t *r, int rc, const rs_status_t *st, int lock)
{
    const char *kind = lock ? "self-locking" : "Painleve";
    const rs_model_t *m = r->m;
    int e = 0, brick = 0;
    while (e < m->nentities && !(!strcmp(m->ent[e].robot->kind, "mobile_manipulator") &&
                                 r->d->ent[e].aux[aux_of(m->ent[e].robot, "jammed")] != 0))
        e++;
    if (e == m->nentities && !lock) { /* a brick's report names it */
        for (e = 0; e < m->nentities; e++) {
            char tag[80];
            snprintf(tag, sizeof tag, "brick '%s': Painleve", m->ent[e].name);
            if (!strcmp(m->ent[e].robot->kind, "brick") && strstr(st->message, tag))
                break;
        }
        brick = e < m->nentities;
    }
    if (e == m->nentities) {
        violate(r, "step", "rs_step at t = %.6g s (%d): %s", r->t0, rc, st->message);
        return;
    }
    int o = m->ent[e].x_off;
    checker_of(m->ent[e].robot)->check(r, e, r->x0 + o, r->d->x + o);
    if (r->v->failed)
        return;
    char why[300];
    if (!(brick ? brick_painleve_holds : lock ? mm_lock_holds : mm_painleve_holds)(
            r, e, r->d->x + o, why, sizeof why)) {
        violate(r, "step", "rs_step at t = %.6g s reports an inconsistency the suite does not "
                "find (%s): %s", r->t0, why, st->message);
        return;
    }
    size_t nx = (size_t)m->nx;
    double *x = malloc(sizeof(double) * nx), t = r->d->t;
    memcpy(x, r->d->x, sizeof(double) * nx);
    rs_status_t st2;
    int rc2 = rs_step(m, r->d, 1, &st2);
    if (!rc2 || !strstr(st2.message, kind) || memcmp(x, r->d->x, sizeof(double) * nx) ||
        memcmp(&t, &r->d->t, sizeof t))
        violate(r, "step", "after a reported inconsistency at t = %.9g s, stepping again %s",
                t, rc2 ? "changed the state" : "succeeded");
    free(x);
    if (r->v->failed)
        return;
    r->v->painleve = 1;
    r->v->step = r->step;
    snprintf(r->v->what, sizeof r->v->what, "verified %s at t = %.9g s: %s", kind, t, why);
    if (verbose_run)
        printf("  accepted: %s\n", r->v->what);
}

/* --set-params: a random change of the parameters of the running world w (drawn around its
 * live state), applied with rs_world_set_params. Refused: the code is one SetParams documents
 * for a change that does not fit (RS_EPRECOND: the live state; RS_EINVAL, RS_ERANGE: values or
 * initial conditions), the message names the entity, and nothing changed (the model and the
 * state bit for bit). Taken: at the live state, under the new parameters, no penetration beyond
 * the formulation's tolerance, no joint past a stop, the linkage closed, no end effector in the
 * table (the checkers' own checks with the state as both ends of a step), and no compliant
 * layer holding more energy or depth than under the old ones (the checkers' layer oracles);
 * the steps after it are checked under the new parameters (the energy balance among them).
 * The rest bounds, computed from the start, no longer apply. */
static void change_params(run_t *r, rs_world_t *w)
{
    const scenario_t *s = r->s;
    static scenario_t ch; /* large: not on the stack */
    memset(&ch, 0, sizeof ch);
    ch.base = s->base;
    ch.formulation = s->formulation;
    ch.r.s = s->seed ^ 0xA5A5A5A5DEADBEEFull;
    const rs_model_t *was = rs_model_retain(w->model);
    int nx = was->nx;
    for (int tries = 0; tries < 20 && ch.np == 0; tries++)
        for (int e = 0; e < was->nentities; e++)
            if (coin(&ch.r, 0.7))
                checker_of(was->ent[e].robot)->mutate(&ch, r, e, w->data->x + was->ent[e].x_off);
    rs_param_t p[MAX_PARAMS];
    for (int i = 0; i < ch.np; i++)
        p[i] = (rs_param_t){ch.p[i].entity, ch.p[i].name, ch.p[i].v, (size_t)ch.p[i].n};
    double *x = malloc(sizeof(double) * (size_t)nx);
    memcpy(x, w->data->x, sizeof(double) * (size_t)nx);
    rs_status_t st;
    int rc = rs_world_set_params(w, p, (size_t)ch.np, &st);
    group_t *G = &groups[s->group];
    if (verbose_run) {
        printf("SetParams before step %d:", r->step);
        for (int i = 0; i < ch.np; i++) {
            printf(" %s.%s=", ch.p[i].entity, ch.p[i].name);
            for (int j = 0; j < ch.p[i].n; j++)
                printf("%s%.9g", j ? "," : "", ch.p[i].v[j]);
        }
        printf(" -> %d %s\n", rc, rc ? st.message : "");
    }
    if (rc) {
        G->changes_refused++;
        int named = 0;
        for (int e = 0; e < was->nentities; e++)
            named |= strstr(st.message, was->ent[e].name) != NULL;
        if (rc != RS_EPRECOND && rc != RS_EINVAL && rc != RS_ERANGE)
            violate(r, "set_params", "SetParams refused with %d: %s", rc, st.message);
        else if (w->model != was || memcmp(x, w->data->x, sizeof(double) * (size_t)nx))
            violate(r, "set_params", "a refused SetParams changed the world: %s", st.message);
        else if (rc == RS_EPRECOND && !named)
            violate(r, "set_params", "the refusal names no entity: %s", st.message);
    } else {
        G->changes_taken++;
        if (memcmp(x, w->data->x, sizeof(double) * (size_t)nx) && verbose_run)
            printf("  (the change's settle moved the state)\n");
        run_t old = *r;
        old.m = was;
        r->m = w->model;
        int nev = r->d->nevents; /* the last step's events were checked under the old model */
        r->d->nevents = 0;
        r->at_change = 1;
        for (int e = 0; e < r->m->nentities && !r->v->failed; e++) {
            const checker_t *c = checker_of(r->m->ent[e].robot);
            const double *xe = w->data->x + r->m->ent[e].x_off;
            r->t_rest[e] = INFINITY;
            c->check(r, e, xe, xe);
            if (c->layer && !r->v->failed)
                c->layer(r, &old, e, x + r->m->ent[e].x_off);
        }
        r->d->nevents = nev;
        r->at_change = 0;
        if (r->v->failed)
            snprintf(r->v->check + strlen(r->v->check), sizeof r->v->check - strlen(r->v->check),
                     "@set");
    }
    free(x);
    rs_model_release(&was);
}

/* Run scenario s with the parameters whose flag is set in keep (NULL: all), commands zeroed if
 * zero_commands, at most max_steps steps; the first violation into v. verbose: print each
 * step's states. */
static void run_scenario(const scenario_t *s, const unsigned char *keep, int zero_commands, int max_steps,
                         verdict_t *v, int verbose)
{
    memset(v, 0, sizeof *v);
    verbose_run = verbose;
    rs_param_t p[MAX_PARAMS];
    size_t n = 0;
    for (int i = 0; i < s->np; i++)
        if (!keep || keep[i])
            p[n++] = (rs_param_t){s->p[i].entity, s->p[i].name, s->p[i].v, (size_t)s->p[i].n};
    rs_status_t st;
    rs_world_t *w = rs_world_new(groups[s->group].preset, p, n, s->seed, &st);
    if (!w) {
        v->step = -1; /* the parameters do not make a world: not a scenario */
        snprintf(v->what, sizeof v->what, "%s", st.message);
        return;
    }
    const rs_model_t *m = w->model;
    run_t r = {.s = s, .m = m, .d = w->data, .v = v};
    double *x0 = malloc(sizeof(double) * (size_t)m->nx);
    r.x0 = x0;
    rs_data_t *fork = NULL;
    rng_t cr = {s->seed ^ 0x5DEECE66Dull};
    int steps = s->nsteps < max_steps ? s->nsteps : max_steps;
    for (int e = 0; e < m->nentities; e++) {
        r.t_rest[e] = INFINITY;
        checker_of(m->ent[e].robot)->begin(&r, e);
        /* long enough to reach the rest bound (not with --set-params: the change voids it) */
        if (!set_params_mode && isfinite(r.t_rest[e]) &&
            r.t_rest[e] + 3 * m->control_dt > steps * m->control_dt)
            steps = (int)fmin(MAX_REST_STEPS, ceil(r.t_rest[e] / m->control_dt) + 3);
    }
    if (r.invalid) {
        v->step = -1;
        snprintf(v->what, sizeof v->what, "the start is inside an obstacle");
        free(x0);
        rs_world_destroy(&w);
        return;
    }
    if (steps > max_steps)
        steps = max_steps;
    for (int k = 0; k < steps && !v->failed; k++) {
        r.step = k;
        if (rs_clock() > run_deadline) { /* out of time: the scenario does not count */
            v->step = -2;
            break;
        }
        if (set_params_mode && k == s->change) {
            change_params(&r, w);
            m = w->model;
            if (v->failed)
                break;
        }
        if (k == steps / 2 && !fork && !set_params_mode) { /* determinism: a fork runs the rest beside */
            fork = rs_data_new(m, 0, &st);
            if (!fork || rs_data_copy(m, fork, w->data, &st)) {
                violate(&r, "other", "fork: %s", st.message);
                break;
            }
        }
        for (int e = 0; e < m->nentities; e++) {
            const checker_t *c = checker_of(m->ent[e].robot);
            const rs_robot_t *robot = m->ent[e].robot;
            if (k % s->hold == 0) {
                double u[RS_MAX_ACTUATORS] = {0}, wr[RS_WRENCH_MAX] = {0};
                c->commands(s, &cr, m, e, u, wr);
                if (s->passive || zero_commands)
                    memset(u, 0, sizeof u), memset(wr, 0, sizeof wr);
                for (int j = 0; j < robot->nu; j++) /* within the actuator table's bounds */
                    u[j] = fmin(fmax(u[j], robot->actuators[j].lower), robot->actuators[j].upper);
                memcpy(r.u[e], u, sizeof u);
                memcpy(r.wrench[e], wr, sizeof wr);
                for (rs_data_t *d = w->data; d; d = d == fork ? NULL : fork)
                    if (rs_set_commands(m, d, e, u, (size_t)robot->nu, &st))
                        violate(&r, "other", "commands refused: %s", st.message);
            }
            int off = 0;
            for (int b = 0; b < robot->nwrench; b++) {
                int any = 0;
                for (int i = 0; i < robot->wrench[b].n; i++)
                    any |= r.wrench[e][off + i] != 0;
                for (rs_data_t *d = w->data; d && any; d = d == fork ? NULL : fork)
                    if (rs_apply_wrench(m, d, e, robot->wrench[b].body, r.wrench[e] + off,
                                        (size_t)robot->wrench[b].n, &st))
                        violate(&r, "other", "wrench refused: %s", st.message);
                off += robot->wrench[b].n;
            }
        }
        memcpy(x0, w->data->x, sizeof(double) * (size_t)m->nx);
        r.t0 = w->data->t;
        double now = rs_clock(), limit = fmin(STEP_SECONDS_MAX, run_deadline - now);
        rs_data_set_abort(w->data, &step_abort);
        arm_watchdog(limit);
        rs_stats_t before, after;
        rs_get_stats(w->data, &before);
        int rc = rs_step(m, w->data, 1, &st);
        rs_get_stats(w->data, &after);
        r.nsteps = after.internal_steps - before.internal_steps;
        disarm_watchdog();
        rs_data_set_abort(w->data, NULL);
        r.t1 = w->data->t;
        if (rc == RS_EDEADLINE && limit < STEP_SECONDS_MAX) { /* the time is up: not counted */
            v->step = -2;
            break;
        }
        if (rc == RS_EDEADLINE) {
            violate(&r, "step", "the control step from t = %.6g s ran past %g s of computing "
                    "(%.3g s of simulated time done)", r.t0, STEP_SECONDS_MAX, r.t1 - r.t0);
            break;
        }
        if (rc && (strstr(st.message, "Painleve") || strstr(st.message, "self-locking"))) {
            accept_report(&r, rc, &st, strstr(st.message, "self-locking") != NULL);
            break;
        }
        if (rc && verbose) /* the failed step's events so far */
            for (int i = 0; i < w->data->nevents && i < 40; i++) {
                const rs_event_t *ev = &w->data->events[i];
                printf("  failed-step event %s t %.17g value %.9g after", rs_event_kind_name(m, ev), ev->t, ev->value);
                for (int j = 0; j < ev->nvalues; j++)
                    printf(" %.9g", ev->after[j]);
                printf("\n");
            }
        if (rc) {
            violate(&r, "step", "rs_step at t = %.6g s: %s", r.t0, st.message);
            break;
        }
        if (fork) {
            rs_data_set_abort(fork, &step_abort);
            arm_watchdog(fmin(STEP_SECONDS_MAX, run_deadline - rs_clock()));
            rc = rs_step(m, fork, 1, &st);
            disarm_watchdog();
            rs_data_set_abort(fork, NULL);
            if (rc == RS_EDEADLINE) { /* as slow as the original was not: out of time */
                v->step = -2;
                break;
            }
            if (rc)
                violate(&r, "determinism", "the fork failed a step the original made: %s",
                        st.message);
        }
        if (fork && (memcmp(fork->x, w->data->x, sizeof(double) * (size_t)m->nx) ||
                     memcmp(fork->sensors, w->data->sensors, sizeof(double) * (size_t)m->ns)))
            for (int i = 0; i < m->nx && !v->failed; i++)
                if (memcmp(&fork->x[i], &w->data->x[i], sizeof(double)) || i == m->nx - 1)
                    violate(&r, "determinism", "a fork made at step %d differs from the original "
                            "after step %d: state %d %.17g != %.17g (or its sensors)", steps / 2,
                            k, i, fork->x[i], w->data->x[i]);
        for (int i = 0; i < m->nx; i++)
            if (!isfinite(w->data->x[i]))
                violate(&r, "finite", "state %d is %g", i, w->data->x[i]);
        for (int i = 0; i < m->ns; i++)
            if (!isfinite(w->data->sensors[i]))
                violate(&r, "finite", "sensor %d is %g", i, w->data->sensors[i]);
        if (verbose) {
            printf("step %d t %.6g:", k, r.t1);
            for (int i = 0; i < m->nx; i++)
                printf(" %.17g", w->data->x[i]);
            printf("  modes");
            for (int e = 0; e < m->nentities; e++)
                printf(" %s", rs_mode_name(m, w->data, e));
            printf("\n");
            for (int i = 0; i < w->data->nevents; i++) {
                const rs_event_t *ev = &w->data->events[i];
                printf("  event %s.%s t %.17g value %.9g after", m->ent[ev->entity].name,
                       rs_event_kind_name(m, ev), ev->t, ev->value);
                for (int j = 0; j < ev->nvalues; j++)
                    printf(" %.9g", ev->after[j]);
                printf("\n");
            }
            for (int i = 0; fork && i < fork->nevents; i++) { /* the fork's, where they differ */
                const rs_event_t *ev = &fork->events[i];
                if (i < w->data->nevents && !memcmp(ev, &w->data->events[i], sizeof *ev))
                    continue;
                printf("  fork's event %d %s.%s t %.17g value %.9g after", i,
                       m->ent[ev->entity].name, rs_event_kind_name(m, ev), ev->t, ev->value);
                for (int j = 0; j < ev->nvalues; j++)
                    printf(" %.9g", ev->after[j]);
                printf("\n");
            }
        }
        for (int e = 0; e < m->nentities && !v->failed; e++) {
            int o = m->ent[e].x_off;
            checker_of(m->ent[e].robot)->check(&r, e, x0 + o, w->data->x + o);
        }
    }
    rs_data_destroy(&fork);
    free(x0);
    rs_world_destroy(&w);
}

/* Shrink a failing scenario: keep only the random parameters without which it passes, and try
 * zero commands; stop at the failing step. Prints the smallest case still failing. */
static void shrink(const scenario_t *s, const verdict_t *first, double deadline)
{
    double outer = run_deadline;
    run_deadline = deadline + 2.0; /* the last rerun below may overrun the search a little */
    unsigned char keep[MAX_PARAMS];
    memset(keep, 1, sizeof keep);
    /* a fork is made halfway: a determinism failure keeps the scenario's length */
    int zero = 0, steps = strcmp(first->check, "determinism") ? first->step + 1 : 1 << 30;
    verdict_t v;
    run_scenario(s, keep, 1, steps, &v, 0);
    if (v.failed && !strcmp(v.check, first->check))
        zero = 1;
    for (int i = 0; i < s->np && rs_clock() < deadline; i++) {
        keep[i] = 0;
        run_scenario(s, keep, zero, steps, &v, 0);
        if (v.failed && !strcmp(v.check, first->check)) {
            if (strcmp(first->check, "determinism"))
                steps = v.step + 1;
        } else
            keep[i] = 1;
    }
    run_scenario(s, keep, zero, steps, &v, 0);
    printf("    shrunk: fails at step %d with %s commands and only these random parameters "
           "(the others at the preset's values):", v.step, zero ? "zero" : "the random");
    for (int i = 0; i < s->np; i++)
        if (keep[i]) {
            printf(" %s.%s=", s->p[i].entity, s->p[i].name);
            for (int j = 0; j < s->p[i].n; j++)
                printf("%s%.6g", j ? "," : "", s->p[i].v[j]);
        }
    printf("\n    shrunk %s: %s\n", v.check, v.failed ? v.what : "(passes, or out of time)");
    run_deadline = outer;
}

static void report(const scenario_t *s, const verdict_t *v)
{
    printf("VIOLATION %s seed %" PRIu64 " (%s, %d steps of %g s): step %d %s: %s\n"
           "    reproduce: ROBOSIM_PHYSICS_SEED=%s:%" PRIu64 " test_physics_invariants\n",
           groups[s->group].name, s->seed, s->passive ? "passive" : "driven", s->nsteps,
           s->base->control_dt, v->step, v->check, v->what, groups[s->group].name, s->seed);
}

static int select_groups(const char *list)
{
    for (int g = 0; g < ngroups; g++)
        groups[g].selected = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int g = 0; g < ngroups; g++)
            if (!strcmp(groups[g].name, tok) || !strcmp(groups[g].preset, tok))
                groups[g].selected = found = 1;
        if (!found) {
            fprintf(stderr, "physics suite: no group '%s' (--list shows them)\n", tok);
            return -1;
        }
    }
    return 0;
}

static int run_one(const char *spec)
{
    const char *colon = strrchr(spec, ':');
    if (!colon) {
        fprintf(stderr, "ROBOSIM_PHYSICS_SEED=group:seed (e.g. finger/hybrid:123)\n");
        return 2;
    }
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(colon - spec), spec);
    for (int g = 0; g < ngroups; g++) {
        if (strcmp(groups[g].name, name))
            continue;
        scenario_t s;
        verdict_t v;
        generate(&s, g, strtoull(colon + 1, NULL, 0));
        printf("%s seed %" PRIu64 ": %s, %d steps, parameters:", name, s.seed,
               s.passive ? "passive" : "driven", s.nsteps);
        for (int i = 0; i < s.np; i++) {
            printf(" %s.%s=", s.p[i].entity, s.p[i].name);
            for (int j = 0; j < s.p[i].n; j++)
                printf("%s%.17g", j ? "," : "", s.p[i].v[j]);
        }
        printf("\n");
        run_scenario(&s, NULL, 0, 1 << 30, &v, getenv("ROBOSIM_PHYSICS_VERBOSE") != NULL);
        if (v.step < 0) {
            printf("not a scenario: %s\n", v.what);
            return 0;
        }
        if (!v.failed) {
            printf("ok: no violation%s%s\n", v.painleve ? "; " : "", v.painleve ? v.what : "");
            return 0;
        }
        report(&s, &v);
        shrink(&s, &v, rs_clock() + 60);
        return 1;
    }
    fprintf(stderr, "physics suite: no group '%s'\n", name);
    return 2;
}

/* Scenarios that once broke the physics, rerun by every invocation (not with --groups): each
 * must pass, or, where `painleve` is set, end within the watchdog in the mobile manipulator's
 * or the brick's reported inconsistency, verified by the suite (accept_report; before the fix the first ran
 * for minutes, reversing a slide up to a million times without an event; the second was counted
 * as a violation before the suite could verify it). By group and seed: the generator's draws
 * are part of them. */
static const struct regression {
    const char *group;
    uint64_t seed;
    int painleve;
} regressions[] = {
    {"finger/hybrid", 259147433041789, 0},         /* the article's law: object overtaking */
    {"finger/hybrid", 127160669095678, 0},
    {"finger/time_stepping", 112741548602626, 0},  /* a rebound that kept the push's impulse */
    {"finger/time_stepping", 56085939678853, 0},
    {"finger/time_stepping", 125623152264575, 0},  /* a solver residual undone against a push */
    /* slide reversals without an event; then a slip stop reported as a jam where the free
     * motion leaves the face (found by the suite's own check of the report) */
    {"mobile_manipulator_passive/hybrid", 274366893845974, 0},
    /* touch onto a jam, mu 1.44: a verified Painleve report, now the tangential impact */
    {"mobile_manipulator_passive/hybrid", 166431685345210, 0},
    {"parallel_arm/hybrid", 127549682989692, 0},   /* the taut linkage's placement as work */
    {"workshop/compliant", 105030815881128, 0},    /* left a layer a root's tolerance inside */
    {"mobile_manipulator_passive/hybrid", 175244593892163, 0}, /* base rolling against its */
    {"mobile_manipulator_passive/hybrid", 1343542633895, 0},   /* speed after a touch */
    {"diff_drive/compliant", 139455414195559, 0},  /* held at a layer's surface by another */
    {"diff_drive/compliant", 53077236661318, 0},
    {"serial_arm/hybrid", 262872951092871, 0},     /* two stops in turn: Zeno to rest */
    {"serial_arm/hybrid", 139963093308091, 0},
    {"parallel_arm/hybrid", 26082472769687, 0},    /* taut and slack: motion along the set */
    {"parallel_arm/hybrid", 117263088873994, 0},   /* taut with a servo held at its stop */
    {"parallel_arm/hybrid", 251105797287833, 0},   /* the set's drift (stabilisation) */
    {"workshop/compliant", 7109952106727, 0},      /* a layer entered with the last step */
    /* wedged at two layers' surfaces to rounding: ARKODE's stale root flag after a restart */
    {"diff_drive/compliant", 143871173688361, 0},
    {"brick_drop/hybrid", 159333695820856, 0},     /* the same, a corner at rest on the ground */
    {"diff_drive/compliant", 125924953807309, 0},  /* the steady depth, to the integrator's error */
    /* driven through the layer into the obstacle (before its rigid surface under the layer) */
    {"diff_drive/compliant", 102639279878023, 0},
    {"diff_drive/compliant", 245805228501244, 0},
    {"finger/time_stepping", 182440758440716, 0},  /* the rebound held against ground friction */
    {"parallel_arm/hybrid", 69546753012304, 0},    /* taut at rest: started and stopped forever */
    {"diff_drive/hybrid", 261722335548539, 0},     /* a fork found the release its original lost */
    {"finger/time_stepping", 163840193359249, 0},  /* a heavy finger: the iterative solve fell short */
    /* slides pressing into the dynamic jam (the normal compliance falling to 0, the force
     * without bound: ARKODE ran out of steps; the first now leaves at a touch before it, the
     * third takes the jam's impulse, which stops the slip), and a stick left into a slide that
     * accelerated against its own direction where the free motion leaves the face */
    {"mobile_manipulator/hybrid", 154649229822607, 0},
    {"mobile_manipulator/hybrid", 195270249765986, 0},
    {"mobile_manipulator/hybrid", 182695349186624, 0},
    /* a touch resolved to free left the end effector at the root's tolerance inside, its touch
     * guard at 0, unarmed: it then entered the table without an event */
    {"mobile_manipulator/hybrid", 26053131766765, 0},
    {"mobile_manipulator/hybrid", 67558959219548, 0},
    /* the same jam and stick decisions, from earlier soaks */
    {"mobile_manipulator/hybrid", 135824641961893, 0},
    {"mobile_manipulator/hybrid", 34783039857842, 0},
    {"mobile_manipulator_passive/hybrid", 14116199347262, 0}, /* +3.4 J beyond the work */
    /* a slide left pulling (lambda < 0) by the base rolling the other way, and one whose slip
     * the other arm's touch impulse reversed: each kept its friction along the motion */
    {"mobile_manipulator_passive/hybrid", 88216075818006, 0},
    {"mobile_manipulator_passive/hybrid", 4985942821906, 0},
    /* servoed wheels drag the shoulder out of reach of an end effector stuck at the arm's full
     * stretch, its pull inside the cone: joint rates without bound (ARK_TOO_MUCH_WORK); now the
     * reported self-locking, verified */
    {"mobile_manipulator/hybrid", 8621281540178, 1},
    /* released by the jam's impulse at the integrator's drift inside the face (its touch guard
     * past 0: 5.9e-7 m inside later); then the verified Painleve case just past the jam, now
     * continued by the tangential impact */
    {"mobile_manipulator/hybrid", 215662341677147, 0},
    {"serial_arm/hybrid", 111375319575123, 0},     /* a restart's first step 1e4 times too long */
    {"workshop/time_stepping", 182807893677623, 0}, /* a refined slip stop taken too early */
    {"brick_drop/compliant", 146410455588365, 0},  /* a layer's force clip just after an exit */
    {"brick_drop/hybrid", 18897269696153, 0},      /* a closing corner projected to the ground */
    {"brick_drop/hybrid", 210807035466813, 0},     /* a slide from rest that stops in one step */
    {"brick_drop/hybrid", 141180201340567, 0},     /* the step's projection, a corner closing */
    {"brick_drop/hybrid", 32052104832988, 1},      /* Painleve at one sliding corner, mu 1.47 */
    {"diff_drive/hybrid", 208371330303057, 0},     /* released an ulp inside another obstacle */
    {"serial_arm/hybrid", 40284491079201, 0},      /* 3,500 rad/s: the integrator's error */
    {"finger/time_stepping", 250809112757652, 0},  /* a drag on the free velocity only */
};

/* The same, for --set-params: scenarios whose mid-run change once broke the physics */
static const struct regression set_params_regressions[] = {
    /* a joint held at its lower stop, the stop lowered 0.26 rad: snapped onto it (+0.014 J) */
    {"workshop/time_stepping", 233430705868962, 0},
    /* an end effector stuck on a table moved away: pinned in the air, its force working */
    {"mobile_manipulator_passive/hybrid", 30740117218202, 0},
    {"mobile_manipulator_passive/hybrid", 83598768482195, 0},
    /* a link length changed under an end effector on the table: energy created (now refused) */
    {"mobile_manipulator_passive/hybrid", 132635384306993, 0},
    {"mobile_manipulator_passive/hybrid", 270341317122050, 0},
    /* (a refused change) the parallel arm taut with a servo put on its stop: the set's
     * stabilisation drove it back into the stop every 2 us, 1000 events in a control step */
    {"workshop/time_stepping", 122497298520164, 0},
    /* (before the change) a slide at -3.3e-6 m/s with no consistent continuation, stopped as
     * Painleve where stick is consistent at rest: now the tangential impact stops the slip */
    {"mobile_manipulator_passive/hybrid", 180760840232509, 0},
};

static int run_regressions(void)
{
    int bad = 0;
    const struct regression *list = set_params_mode ? set_params_regressions : regressions;
    size_t count = set_params_mode ? sizeof set_params_regressions / sizeof set_params_regressions[0]
                                   : sizeof regressions / sizeof regressions[0];
    for (size_t i = 0; i < count; i++) {
        const struct regression *q = &list[i];
        int g = 0;
        while (g < ngroups && strcmp(groups[g].name, q->group))
            g++;
        if (g == ngroups) {
            printf("regression: no group %s\n", q->group);
            bad++;
            continue;
        }
        scenario_t s;
        verdict_t v;
        generate(&s, g, q->seed);
        run_deadline = INFINITY;
        double t0 = rs_clock();
        run_scenario(&s, NULL, 0, 1 << 30, &v, 0);
        int ok = !v.failed && v.step >= 0 && v.painleve == q->painleve;
        printf("regression %s:%" PRIu64 ": %s (%.2f s)%s%s\n", q->group, q->seed,
               ok ? "ok" : "FAILED", rs_clock() - t0, v.failed || v.painleve ? ": " : "",
               v.failed || v.painleve ? v.what : "");
        bad += !ok;
    }
    return bad;
}

int main(int argc, char **argv)
{
    long per_group = 40;
    double seconds = 60;
    uint64_t base_seed = 1;
    int do_shrink = 1, list = 0;
    const char *sel = getenv("ROBOSIM_PHYSICS_GROUPS");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scenarios") && i + 1 < argc)
            per_group = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--groups") && i + 1 < argc)
            sel = argv[++i];
        else if (!strcmp(argv[i], "--base-seed") && i + 1 < argc)
            base_seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--no-shrink"))
            do_shrink = 0;
        else if (!strcmp(argv[i], "--list"))
            list = 1;
        else if (!strcmp(argv[i], "--set-params"))
            set_params_mode = 1;
        else {
            fprintf(stderr, "usage: %s [--scenarios N] [--seconds S] [--groups a,b] [--list] "
                    "[--base-seed S] [--no-shrink] [--set-params]\n", argv[0]);
            return 2;
        }
    }
    if (getenv("ROBOSIM_PHYSICS_SET_PARAMS"))
        set_params_mode = 1;
    make_groups();
    if (list) {
        for (int g = 0; g < ngroups; g++)
            printf("%s\n", groups[g].name);
        return 0;
    }
    if (getenv("ROBOSIM_PHYSICS_SEED"))
        return run_one(getenv("ROBOSIM_PHYSICS_SEED"));
    if (sel && *sel && select_groups(sel))
        return 2;
    int nsel = 0;
    for (int g = 0; g < ngroups; g++)
        nsel += groups[g].selected;
    printf("physics invariants: base seed %" PRIu64 ", up to %ld scenarios per group, %.0f s\n",
           base_seed, per_group, seconds);
    double start = rs_clock(), end = start + seconds;
    long total = 0, painleve = 0, bad = (sel && *sel) ? 0 : run_regressions();
    int done = 0;
    for (int g = 0; g < ngroups; g++) {
        group_t *G = &groups[g];
        if (!G->selected)
            continue;
        /* each group gets an even share of what time is left */
        double now = rs_clock(), g_end = now + (end - now) / (nsel - done++);
        int shrunk = 0, refused = 0;
        rng_t seeds = {base_seed * 0x2545F4914F6CDD1Dull + (uint64_t)g};
        for (long i = 0; i < per_group && rs_clock() < g_end; i++) {
            scenario_t s;
            verdict_t v;
            generate(&s, g, next_u64(&seeds) >> 16);
            if (getenv("ROBOSIM_PHYSICS_TRACE"))
                fprintf(stderr, "%s:%" PRIu64 "\n", G->name, s.seed);
            run_deadline = g_end + 1.0; /* a slow scenario does not eat later groups' time */
            run_scenario(&s, NULL, 0, 1 << 30, &v, 0);
            if (v.step == -2 && !v.failed)
                break;
            if (v.step < 0) { /* parameters the robot refuses (e.g. a linkage that cannot close) */
                if (++refused > 20 * (i + 1)) {
                    printf("%s: the generator's scenarios are refused: %s\n", G->name, v.what);
                    bad++;
                    break;
                }
                i--;
                continue;
            }
            G->scenarios++;
            if (v.painleve && !G->painleve++)
                snprintf(G->painleve_example, sizeof G->painleve_example, "seed %" PRIu64 ": %s",
                         s.seed, v.what);
            if (!v.failed)
                continue;
            G->violations++;
            int c = check_index(v.check);
            if (!G->by_check[c]++)
                snprintf(G->example[c], sizeof G->example[c], "seed %" PRIu64 ": %s", s.seed,
                         v.what);
            if (G->violations <= 5) /* the rest are counted in the group's summary */
                report(&s, &v);
            if (do_shrink && shrunk++ < 2) /* at most a quarter of the group's share */
                shrink(&s, &v, fmin(g_end, rs_clock() + 0.25 * seconds / nsel));
        }
        printf("%s: %ld scenarios, %ld violations", G->name, G->scenarios, G->violations);
        if (G->painleve)
            printf(", %ld verified Painleve reports (e.g. %s)", G->painleve, G->painleve_example);
        for (int c = 0; c < NKINDS; c++)
            if (G->by_check[c])
                printf(" [%s %ld, e.g. %s]", check_names[c], G->by_check[c], G->example[c]);
        if (set_params_mode) {
            printf("; SetParams mid-run: %ld taken, %ld refused", G->changes_taken,
                   G->changes_refused);
            /* the generator must exercise both sides of the rule */
            if (G->scenarios >= 30 && (!G->changes_taken || !G->changes_refused)) {
                printf(" (one side never drawn: the generator misses the rule)");
                bad++;
            }
        }
        printf("\n");
        fflush(stdout);
        total += G->scenarios;
        painleve += G->painleve;
        bad += G->violations;
    }
    printf("physics invariants: %ld scenarios, %ld violations, %ld verified Painleve reports, "
           "%.1f s\n", total, bad, painleve, rs_clock() - start);
    return bad ? 1 : 0;
}
