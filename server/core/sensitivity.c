/* Derivatives of a step through events: see rs_sensitivity.h. */
#include "rs_sensitivity.h"
#include "rs_data.h"
#include "rs_integrator.h"
#include "rs_montecarlo.h"
#include "rs_robot.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_REL 6e-6      /* central-difference step, relative to max(1, |z|) */
#define GRAZING 1e-6     /* |g_x f- + g_t| below this times |g_x| |f-| + |g_t|: grazing */
#define GRAZING_STEP 1e-2 /* a^2 below this times kappa d: grazing at a difference step's scale
                             (grazing_at_step) */
#define SAME_TIME 1e-6   /* simultaneous guards: event-time sensitivities equal to this */
#define SAME_ORDER 1e-6  /* guards crossed together, composed in either order: the same column
                            to this, relative (split_events) */
#define NEAR_ORDER 1e-4  /* two guards crossed together whose orders' columns differ by more
                            than SAME_ORDER but within this, relative: the column served is the
                            orders' mean (the step's one-sided derivatives' mean, split_events) */
#define NEAR_EVENT 1e-9  /* s per s of the event time: a guard that has not fired but would
                            cross within this of another's event crossed with it (split_events:
                            a robot's own tolerances merge such contacts into one jump) */
#define PAST_EVENT 1e-12 /* s per s of the event time: a jump's perturbed inputs are taken this
                            far past the guard's surface (column_eval) */
#define RS_MAX_STATE 32  /* an entity's state variables, for the stack buffers below */
#define MAX_LOCAL (RS_MAX_STATE + RS_MAX_ACTUATORS + RS_MAX_PARAMS + 1) /* an entity's columns */

/* One named parameter: the entity it belongs to, its slot in em->p, and the entity's model
 * with the value moved by +h and -h (compiled, as the model would be). */
typedef struct sens_param {
    int e, slot;
    double h;
    rs_entity_model_t plus, minus;
} sens_param_t;

struct rs_sens {
    const rs_model_t *m;
    int n, ncmd, q, ncol, started, failed, code, differentiable;
    int split_events;        /* some columns undefined (simultaneous events) */
    char split_message[320];
    double t;                            /* the last hook's time */
    double h_next;                       /* the flow's next step (0: let ARKODE estimate it) */
    double *x;                           /* the state there (the flow starts from it) */
    double *phi;                         /* n x ncol, row-major */
    double *u;                           /* the Step's commands (ncmd) */
    sens_param_t *par;
    int use_differences;                 /* 1: difference derivs even where a robot has its
                                            jacobian (rs_sens_use_differences) */
    int eslot[RS_MAX_ENTITIES][RS_MAX_PARAMS]; /* entity e's named parameters: slots in em->p */
    int epar[RS_MAX_ENTITIES][RS_MAX_PARAMS];  /* and their indices in par */
    rs_entity_data_t ent[RS_MAX_ENTITIES]; /* modes and run variables the flow runs in */
    rs_entity_data_t pre[RS_MAX_ENTITIES]; /* before a map */
    double *x_pre, t_pre;
    int dirty_pre;
    int begun;                           /* the Step's first control-step start was seen */
    rs_data_t *scratch;                  /* replayed maps log their events here */
    rs_integrator_t *integ;
    double *y;                           /* x then phi, for the flow */
    double *rows;                        /* n x ncol: new rows at a map */
    double *wbuf;                        /* 2 ncol: the event time's sensitivities at a map */
    char *undefined;                     /* per column: no derivative along this input (kept
                                            0 while propagating, NaN in the result) */
    char *split;                         /* per column, at an event: 1 the fired guards' times
                                            move apart along it, 2 their order matters */
    const double *phi_map;               /* while a map is differenced: the entity's rows of
                                            phi before it (nx x ncol), along which a column
                                            with no derivative is undefined; NULL: the whole
                                            Step is said not differentiable instead */
    char message[320];
    rs_step_hooks_t hooks;
};

/* ---- the functions differentiated ------------------------------------------------------- */

enum { FN_FLOW, FN_GUARDS, FN_JUMP, FN_BEGIN };

typedef struct fn_ctx {
    int kind;
    const int *fired; /* FN_JUMP: the entity's fired guards */
    /* FN_JUMP on the guard's surface: guard `guard` keeps its value g0 at the event by moves
     * along f- (fm) of (g - g0) / a, a = dg/dt there (NULL fm: not held) */
    int guard;
    double g0, a;
    const double *fm;
    double dt;        /* FN_BEGIN */
    int settle;       /* FN_BEGIN: settle ran first */
} fn_ctx_t;

/* Entity e's function `c->kind` at (t, x, u) under model em: derivs or guards in the modes of
 * the flow / before the map, or the map replayed on copies (out then holds its result, and
 * *after, where given, the entity's data after it). Returns, after a map, the entity's mode
 * and the kinds of the events the map logged (MAP_MODE() extracts the mode: a change that
 * makes the map log another event, an impact at a control step's start, leaves it like a mode
 * change), 0 for the others. */
static int entity_map(rs_sens_t *s, const rs_entity_model_t *em, int e, double t,
                      const double *x, const double *u, double *out, const fn_ctx_t *c,
                      rs_entity_data_t *after)
{
    const rs_robot_t *r = em->robot;
    if (c->kind == FN_FLOW) {
        r->derivs(em, &s->ent[e], t, x, u, out);
        return 0;
    }
    if (c->kind == FN_GUARDS) {
        r->guards(em, &s->pre[e], t, x, u, out);
        return 0;
    }
    rs_entity_data_t ed = s->pre[e];
    rs_entity_data_t *sd = &s->scratch->ent[e];
    ed.data = s->scratch;
    ed.u = sd->u;
    ed.s = sd->s;
    memcpy(sd->u, u, (size_t)em->nu * sizeof *u);
    memcpy(out, x, (size_t)em->nx * sizeof *x);
    if (c->kind == FN_JUMP) {
        r->jump(em, &ed, t, out, u, c->fired);
    } else {
        if (c->settle && r->settle)
            r->settle(em, &ed, t, out, u);
        if (r->step_begin)
            r->step_begin(em, &ed, t, out, c->dt);
        if (r->advance)
            r->advance(em, &ed, t, out, u, c->dt);
    }
    unsigned logged = 0;
    for (int i = 0; i < s->scratch->nevents; i++)
        logged = logged * 31u + (unsigned)s->scratch->events[i].kind + 1u;
    s->scratch->nevents = 0;
    s->scratch->events_dropped = 0;
    s->scratch->step_events = 0;
    if (after)
        *after = ed;
    return ed.mode | (int)((logged & 0x7fffffu) << 8);
}

#define MAP_MODE(outcome) ((outcome) & 0xff) /* the mode of entity_map's outcome */

static int entity_fn(rs_sens_t *s, const rs_entity_model_t *em, int e, double t,
                     const double *x, const double *u, double *out, const fn_ctx_t *c)
{
    return entity_map(s, em, e, t, x, u, out, c, NULL);
}

/* The number of entity e's local columns: its state, its commands, its parameters, time. */
static int local_cols(const rs_sens_t *s, const rs_entity_model_t *em, int e, int *qe)
{
    *qe = 0;
    for (int j = 0; j < s->q; j++)
        *qe += s->par[j].e == e;
    return em->nx + em->nu + *qe + 1;
}

static double step_of(double z) { return FD_REL * fmax(1.0, fabs(z)); }

/* State variable i's step: an angle's (unit rad) is FD_REL whatever the angle, since the
 * functions of it are periodic and curve no less at 400 rad than at 1 (a mobile manipulator's
 * arm spun to 400 rad: its flow's differenced Jacobian 1e-6 off at a step of 2.4e-3 rad, the
 * Step's Jacobian 1e-3 off after the spin's amplification); any other's scales with its size. */
static double state_step(const rs_entity_model_t *em, const double *x, int i)
{
    return strcmp(em->robot->state[i].unit, "rad") == 0 ? FD_REL : step_of(x[i]);
}

static void not_differentiable(rs_sens_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* One column of D: the derivative of fn along a change of one input, evaluated by eval(k)
 * (k = +1, -1, +2, -2 steps of h). Maps are differentiated within the mode they end in: where a
 * step to one side ends in another mode (a perturbation off a contact constraint, across a
 * mode's boundary) the second-order one-sided difference of the other side is taken; where
 * both sides leave it the map has no derivative there. */
typedef struct column {
    rs_sens_t *s;
    const rs_entity_model_t *em;
    int e, k, mode0, which; /* which: 0 x, 1 u, 2 p (j), 3 t */
    int j;
    const fn_ctx_t *c;
    double t;
    const double *x, *u;
    const double *shift; /* with the input, x moves by shift (nx values) per unit; or NULL */
    const rs_entity_data_t *after; /* a map's: the entity's data it ends in (or NULL) */
    const double *phi_e; /* a map's: the entity's rows of phi it applies to (or NULL) */
    int probe; /* 1: where the map has no derivative, NaN alone (the Step not told) */
} column_t;

static int column_eval(const column_t *cl, int steps, double h, double *out)
{
    double xp[RS_MAX_STATE], up[RS_MAX_ACTUATORS];
    const rs_entity_model_t *em = cl->em;
    memcpy(xp, cl->x, (size_t)em->nx * sizeof *xp);
    memcpy(up, cl->u, (size_t)em->nu * sizeof *up);
    double t = cl->t;
    for (int i = 0; cl->shift && i < em->nx; i++)
        xp[i] += steps * h * cl->shift[i];
    if (cl->which == 0)
        xp[cl->j] += steps * h;
    else if (cl->which == 1)
        up[cl->j] += steps * h;
    else if (cl->which == 3)
        t += steps * h;
    rs_entity_model_t far; /* two steps out, for a one-sided difference */
    const rs_entity_model_t *use = em;
    if (cl->which == 2) {
        sens_param_t *p = &cl->s->par[cl->j];
        if ((steps == 1 || steps == -1) && h == p->h) {
            use = steps > 0 ? &p->plus : &p->minus;
        } else {
            far = *em;
            far.p[p->slot] += steps * h;
            if (em->robot->compile)
                em->robot->compile(&far);
            use = &far;
        }
    }
    const fn_ctx_t *c = cl->c;
    if (c->kind == FN_JUMP && c->fm && cl->shift) {
        /* back onto the guard's surface (its value at the event) along f-: the first-order
         * slide leaves it off by the square of the change, which a decision at the guard's
         * threshold (stick or slip) could see. Then on along f- for PAST_EVENT: landing on the
         * value itself, rounding would put the state on either side of the threshold, and the
         * jump decide as if the guard had not crossed (seen: a joint's stick-to-slip event
         * re-decided as stuck for both signs of a change); the same small shift of both sides
         * of the difference changes the derivative by about that much. */
        double g[64], target = c->g0 + c->a * PAST_EVENT * fmax(1.0, fabs(t));
        for (int it = 0; it < 2; it++) {
            use->robot->guards(use, &cl->s->pre[cl->e], t, xp, up, g);
            double back = (g[c->guard] - target) / c->a;
            for (int i = 0; i < em->nx; i++)
                xp[i] -= back * c->fm[i];
        }
    }
    return entity_fn(cl->s, use, cl->e, t, xp, up, out, c);
}

static int global_col(const rs_sens_t *s, const rs_entity_model_t *em, int e, int c);

/* A control step's start where the robot says moving state variable cl->j to a side is an
 * excursion (rs_robot_t.excursion): D's column is the mean of the two sides' first-order
 * effects, a side that keeps the mode differentiated by a one-sided difference of the map.
 * Returns 0 where neither side is an excursion, or the other side leaves the mode (the rules
 * of column() apply). */
static int excursion_column(const column_t *cl, double h, const double *f0, double *D, int L,
                            int col)
{
    const rs_robot_t *r = cl->em->robot;
    double ex[2][RS_MAX_STATE], f1[RS_MAX_STATE + 64], f2[RS_MAX_STATE + 64];
    int has[2], k = cl->k;
    for (int i = 0; i < 2; i++)
        has[i] = r->excursion(cl->em, cl->after, f0, cl->u, cl->j, i ? -1 : 1, ex[i]) == 0;
    if (!has[0] && !has[1])
        return 0;
    for (int i = 0; i < 2; i++) {
        int side = i ? -1 : 1;
        if (has[i])
            continue;
        if (MAP_MODE(column_eval(cl, side, h, f1)) != MAP_MODE(cl->mode0) ||
            MAP_MODE(column_eval(cl, 2 * side, h, f2)) != MAP_MODE(cl->mode0))
            return 0;
        for (int row = 0; row < k; row++)
            ex[i][row] = side * (-3 * f0[row] + 4 * f1[row] - f2[row]) / (2 * h);
    }
    for (int row = 0; row < k; row++)
        D[row * L + col] = 0.5 * (ex[0][row] + ex[1][row]);
    return 1;
}

/* An input's difference step h, shortened where the slide along f- that comes with it (shift,
 * per unit of the input) moves a state variable farther than that variable's own step: near a
 * grazing guard the slide is long (1 / (g_x f-)), and over it the guard's surface and the
 * trajectory curve, so that a difference at the full step is off at second order in the slide
 * (a diff drive meeting its obstacle at a shallow angle: the heading's row 1e-3 off, where its
 * derivative is exactly the identity's). At most a thousandfold shorter (rounding). */
static double slide_step(double h, const double *shift, const rs_entity_model_t *em,
                         const double *x)
{
    double k = 1.0;
    for (int i = 0; shift && i < em->nx; i++)
        k = fmax(k, h * fabs(shift[i]) / state_step(em, x, i));
    return h / fmin(k, 1e3);
}

static int column(const column_t *cl, double h, const double *f0, double *D, int L, int col)
{
    double fp[RS_MAX_STATE + 64], fm[RS_MAX_STATE + 64], f2[RS_MAX_STATE + 64];
    int k = cl->k;
    if (cl->which == 0 && cl->phi_e) {
        /* a state variable whose row of phi is 0 (put onto a constraint by an earlier map:
         * the mode's projection) moves with no input: its column multiplies nothing, and a
         * change of it that would leave the mode is none the Step can make */
        const double *row = cl->phi_e + (size_t)cl->j * cl->s->ncol;
        int moved = 0;
        for (int c = 0; c < cl->s->ncol && !moved; c++)
            moved = row[c] != 0.0;
        if (!moved) {
            for (int r = 0; r < k; r++)
                D[r * L + col] = 0.0;
            return 2;
        }
    }
    if (cl->c->kind == FN_BEGIN && cl->which == 0 && cl->after && cl->em->robot->excursion &&
        excursion_column(cl, h, f0, D, L, col))
        return 2;
    int mp = column_eval(cl, 1, h, fp), mm = column_eval(cl, -1, h, fm);
    int map = cl->c->kind == FN_JUMP || cl->c->kind == FN_BEGIN;
    /* a side that logs other events than the point itself in the same mode (an impact that a
     * change makes at a control step's start) may have crossed a boundary that lies within the
     * step h of the point, not at it (a gap of 1.8 cm where h, relative to |x_f| = 5389 m, is
     * 3.2 cm): where both sides of a step 32 times smaller log what the point does, the map
     * is smooth there and that difference is taken; a boundary nearer is on the point */
    if (map && cl->which < 2 && (mp != cl->mode0 || mm != cl->mode0) &&
        MAP_MODE(mp) == MAP_MODE(cl->mode0) && MAP_MODE(mm) == MAP_MODE(cl->mode0)) {
        double gp[RS_MAX_STATE + 64], gm[RS_MAX_STATE + 64], hs = h / 32.0;
        if (column_eval(cl, 1, hs, gp) == cl->mode0 && column_eval(cl, -1, hs, gm) == cl->mode0) {
            h = hs, mp = mm = cl->mode0;
            memcpy(fp, gp, (size_t)k * sizeof *fp);
            memcpy(fm, gm, (size_t)k * sizeof *fm);
        }
    }
    if (!map || (mp == cl->mode0 && mm == cl->mode0)) {
        for (int r = 0; r < k; r++)
            D[r * L + col] = (fp[r] - fm[r]) / (2 * h);
        return 0;
    }
    /* on the boundary: its sides by their modes (the events a change to one side logs, put
     * back onto a constraint at a start, are the corner the mean of the sides serves) */
    int m0 = MAP_MODE(cl->mode0);
    mp = MAP_MODE(mp), mm = MAP_MODE(mm);
    if (mp == m0 && mm == m0) {
        for (int r = 0; r < k; r++)
            D[r * L + col] = (fp[r] - fm[r]) / (2 * h);
        return 0;
    }
    int side = mp == m0 ? 1 : mm == m0 ? -1 : 0, root = 0;
    if (side && MAP_MODE(column_eval(cl, 2 * side, h, f2)) == m0) {
        const double *f1 = side > 0 ? fp : fm, *base = f0;
        /* at a jump the sides are taken PAST_EVENT beyond the guard's surface (column_eval),
         * so the point too: a central difference cancels that offset, a one-sided one takes
         * 3 / (2 h) of it (a servo's PID integral, whose rate u - q was 1e5, 0.45 off) */
        double fz[RS_MAX_STATE + 64];
        if (cl->c->kind == FN_JUMP && cl->c->fm && cl->shift &&
            MAP_MODE(column_eval(cl, 0, h, fz)) == m0)
            base = fz;
        for (int r = 0; r < k; r++)
            D[r * L + col] = side * (-3 * base[r] + 4 * f1[r] - f2[r]) / (2 * h);
        /* the Step's first start (Phi still the identity) on a contact that the change to
         * the other side lifts the body off: where the robot says what that side amounts to,
         * the mean of the two sides, as at the other corners of a start on a constraint's
         * boundary. At a later map Phi's directions keep the contact, along which the side
         * that stays on it is exact */
        double lifted[RS_MAX_STATE];
        const rs_robot_t *rb = cl->em->robot;
        int how = cl->c->kind == FN_BEGIN && !cl->s->begun && cl->which == 0 && cl->after &&
                          rb->rejoin
                      ? rb->rejoin(cl->em, cl->after, f0, cl->u, cl->j, -side, lifted)
                      : 0;
        if (how > 0) {
            /* rows the robot leaves NaN move as the start's map moves them on the lifted side
             * (variables the excursion does not touch: a wheeled base's other arm, whose rates
             * the new speeds' impulse moves with the pose): that side's one-sided difference */
            int own = 0;
            for (int r = 0; r < k; r++)
                own |= isnan(lifted[r]);
            const double *fl = side > 0 ? fm : fp;
            if (own && MAP_MODE(column_eval(cl, -2 * side, h, f2)) != MAP_MODE(side > 0 ? mm : mp))
                how = 0; /* that side's map is not one mode's: it cannot be said */
            for (int r = 0; r < k && how > 0; r++) {
                if (isnan(lifted[r]))
                    lifted[r] = -side * (-3 * f0[r] + 4 * fl[r] - f2[r]) / (2 * h);
                D[r * L + col] = 0.5 * (D[r * L + col] + lifted[r]);
            }
        }
        if (how >= 0)
            return side;
        /* the lifted side has no first-order effect (it lands with a change of the order of
         * the root of the lift): no derivative along this input, as below */
        root = 1;
    }
    const rs_robot_t *held_by = cl->em->robot;
    /* held by the mode before the map or by the mode it ends in (a stretched linkage that
     * the commands let go, a joint left on its stop) */
    int held = !root && cl->which == 0 &&
               (held_by->holds ? held_by->holds(cl->em, &cl->s->pre[cl->e], cl->x, cl->j) ||
                                     (cl->after &&
                                      held_by->holds(cl->em, cl->after, cl->x, cl->j))
                               : cl->c->kind == FN_BEGIN);
    if (held) {
        /* a state variable the mode holds (a stuck body's velocity, a joint held at its stop
         * or by dry friction): a change to either side starts a slide or a bounce that the
         * mode's friction or stop ends within a time of the order of the change, moving the
         * state by its square: the step takes it back, column 0. At a control step's start
         * and at an event's jump alike, where the robot says which it holds (rs_robot_t.holds);
         * at a start, every state variable of a robot that does not say */
        for (int r = 0; r < k; r++)
            D[r * L + col] = 0.0;
        return 2;
    }
    if (cl->probe) {
        for (int r = 0; r < k; r++)
            D[r * L + col] = NAN;
        return 2;
    }
    if (cl->which == 0 && mp == mm && held_by->glides &&
        held_by->glides(cl->em, &cl->s->pre[cl->e], cl->x, cl->j)) {
        /* both sides leave the mode into one whose motion the mode's flow gives at the
         * changed state (rs_robot_t.glides): the map differenced as within the mode */
        for (int r = 0; r < k; r++)
            D[r * L + col] = (fp[r] - fm[r]) / (2 * h);
        return 0;
    }
    char what[96];
    const rs_robot_t *rb = cl->em->robot;
    const char *how_left = root ? "to one side lifts the body off a contact of"
                                : "to either side leaves";
    if (cl->which == 0)
        snprintf(what, sizeof what, "state variable %s", rb->state[cl->j].name);
    else if (cl->which == 1)
        snprintf(what, sizeof what, "command %s", rb->actuators[cl->j].name);
    else
        snprintf(what, sizeof what, "%s", cl->which == 2 ? "a parameter" : "time");
    int g = cl->which < 3 ? global_col(cl->s, cl->em, cl->e, col) : -1;
    const double *phi_e = cl->s->phi_map;
    if (g >= 0 && phi_e) {
        /* the Step has no derivative along the inputs that move this one (the Step's
         * columns whose phi has a nonzero in this state variable's row; a command's or
         * parameter's own column): undefined, NaN in the result; the others go on. At the
         * Step's first start phi is the identity: this input's column alone */
        rs_sens_t *s = cl->s;
        int moved = 0; /* whether any of the Step's inputs moves this one */
        for (int cc = 0; cc < s->ncol; cc++) {
            int along = cl->which == 0 ? phi_e[(size_t)cl->j * s->ncol + cc] != 0.0 : cc == g;
            s->undefined[cc] |= along;
            moved |= along;
        }
        if (moved && !s->split_events) {
            s->split_events = 1;
            snprintf(s->split_message, sizeof s->split_message,
                     "entity '%s' (%s) at t = %.9g s: a change of %s %s the mode '%s' the %s "
                     "ends in, so the Step has no derivative along the inputs that move it",
                     cl->em->name, cl->em->robot->kind, cl->t, what, how_left,
                     cl->em->robot->mode_names[MAP_MODE(cl->mode0)],
                     cl->c->kind == FN_JUMP ? "event's jump" : "control step's start");
        }
        for (int r = 0; r < k; r++)
            D[r * L + col] = 0.0;
        return 2;
    }
    not_differentiable(cl->s,
                       "entity '%s' (%s) at t = %.9g s: a change of %s %s the mode '%s' the "
                       "%s ends in, so the step has no derivative there",
                       cl->em->name, cl->em->robot->kind, cl->t, what, how_left,
                       cl->em->robot->mode_names[MAP_MODE(cl->mode0)],
                       cl->c->kind == FN_JUMP ? "event's jump" : "control step's start");
    for (int r = 0; r < k; r++)
        D[r * L + col] = NAN;
    return 2;
}

/* column() at step h, where that was shortened for a long slide (below h_plain, slide_step),
 * Richardson-extrapolated: the surface and the trajectory curving across the slide leave the
 * difference a second-order error (a diff drive grazing its obstacle, whose heading's row the
 * short step alone left 0.02 off where its derivative is exactly the identity's). Its rounding
 * grows as the step shrinks (the guard's rounding over its rate, times f-, over the step), so
 * the extrapolation is taken at the step, doubled from h up to h_plain, where it changes least
 * to the next (an arm spun to 1292 rad/s touching at 0.44 m/s, |f-| 2.3e5: the rates' rows of
 * a control step's Jacobian 1.5e-4 off at the thousandfold floor, amplified to 3 % over the
 * Step's next one; 1e-5 at the step chosen). A column that 2 h leaves unchanged (a guard linear
 * in the state: an arm's stop) is taken as it is. */
static void column_sliding(const column_t *cl, double h, double h_plain, const double *f0,
                           double *D, int L, int col)
{
    enum { LEVELS = 12 };
    int how = column(cl, h, f0, D, L, col);
    if (!(h < h_plain) || how == 2)
        return;
    column_t probe = *cl;
    probe.probe = 1;
    double twice[RS_MAX_STATE * (MAX_LOCAL + 1)], lv[LEVELS][RS_MAX_STATE], dif = 0.0;
    if (column(&probe, 2.0 * h, f0, twice, L, col) != how)
        return; /* differenced otherwise at 2 h (a side across a mode's boundary) */
    for (int r = 0; r < cl->k; r++) {
        dif = fmax(dif, fabs(twice[r * L + col] - D[r * L + col]));
        lv[0][r] = D[r * L + col], lv[1][r] = twice[r * L + col];
    }
    if (dif == 0.0)
        return;
    int n = 2; /* lv[j]: the column at 2^j h */
    for (; n < LEVELS && ldexp(h, n) <= h_plain; n++) {
        if (column(&probe, ldexp(h, n), f0, twice, L, col) != how)
            break;
        for (int r = 0; r < cl->k; r++)
            lv[n][r] = twice[r * L + col];
    }
    int best = 0; /* the level whose extrapolation (4 lv[j] - lv[j + 1]) / 3 moves least */
    double least = INFINITY;
    for (int j = 0; j + 2 < n; j++) {
        double change = 0.0;
        for (int r = 0; r < cl->k; r++)
            change = fmax(change, fabs(4.0 * lv[j][r] - 5.0 * lv[j + 1][r] + lv[j + 2][r]));
        if (change < least)
            least = change, best = j;
    }
    for (int r = 0; r < cl->k; r++)
        D[r * L + col] = (4.0 * lv[best][r] - lv[best + 1][r]) / 3.0;
}

/* D (k x L, row-major, L = local_cols) = d fn / d(x_e, u_e, p_e, t) by central differences
 * (one-sided for maps at a mode's boundary: column()), the time column for the guards only (0
 * for the flow and the maps, where it is not used); f0 (k values) the function at the point
 * itself. With slide (L values) and along (nx values), input column c moves x by -slide[c]
 * along too: at an event, a change of the inputs together with the shift of the event time
 * it causes, so that the jump map is evaluated on its guard's surface, where it is defined. */
static void entity_jacobian(rs_sens_t *s, int e, const fn_ctx_t *c, double t, const double *x,
                            const double *u, int k, double *D, double *f0, const double *slide,
                            const double *along, const double *phi_e)
{
    const rs_entity_model_t *em = &s->m->ent[e];
    int qe, L = local_cols(s, em, e, &qe), col = 0;
    double shift[RS_MAX_STATE];
    column_t cl = {s, em, e, k, 0, 0, 0, c, t, x, u, slide ? shift : NULL, NULL, phi_e, 0};
    rs_entity_data_t after;
    cl.mode0 = entity_map(s, em, e, t, x, u, f0, c, &after);
    if (c->kind == FN_JUMP || c->kind == FN_BEGIN)
        cl.after = &after;
    if (c->kind == FN_JUMP && c->fm && slide) {
        /* the mode the sides are judged against: the point's, taken past the guard's surface as
         * theirs are (column_eval): a root found a rounding short of the crossing can keep the
         * mode where every side past it leaves it (a joint's release from its stop, re-found
         * and made by the next root at the same instant) */
        double fz[RS_MAX_STATE + 64];
        for (int i = 0; i < em->nx; i++)
            shift[i] = 0.0;
        int past = column_eval(&cl, 0, FD_REL, fz);
        if (MAP_MODE(past) != MAP_MODE(cl.mode0))
            cl.mode0 = past;
    }
#define SLIDE(col)                                                                             \
    for (int i_ = 0; slide && i_ < em->nx; i_++)                                               \
        shift[i_] = -slide[col] * along[i_];
    for (int i = 0; i < em->nx; i++, col++) {
        SLIDE(col)
        cl.which = 0, cl.j = i;
        column_sliding(&cl, slide_step(state_step(em, x, i), cl.shift, em, x),
                       state_step(em, x, i), f0, D, L, col);
    }
    for (int a = 0; a < em->nu; a++, col++) {
        SLIDE(col)
        cl.which = 1, cl.j = a;
        column_sliding(&cl, slide_step(step_of(u[a]), cl.shift, em, x), step_of(u[a]), f0,
                       D, L, col);
    }
    for (int j = 0; j < s->q; j++) {
        if (s->par[j].e != e)
            continue;
        SLIDE(col)
        cl.which = 2, cl.j = j;
        column_sliding(&cl, slide_step(s->par[j].h, cl.shift, em, x), s->par[j].h, f0, D,
                       L, col++);
    }
    cl.which = 3;
    cl.shift = NULL;
    if (c->kind == FN_GUARDS) /* g_t; the flow and the maps' time columns are not used */
        column(&cl, step_of(t), f0, D, L, col);
    else
        for (int r = 0; r < k; r++)
            D[r * L + col] = 0.0;
#undef SLIDE
}

/* The global column of entity e's local column c (c < L - 1: not time). */
static int global_col(const rs_sens_t *s, const rs_entity_model_t *em, int e, int c)
{
    if (c < em->nx)
        return em->x_off + c;
    if (c < em->nx + em->nu)
        return s->n + em->u_off + (c - em->nx);
    int k = c - em->nx - em->nu;
    for (int j = 0; j < s->q; j++)
        if (s->par[j].e == e && k-- == 0)
            return s->n + s->ncmd + j;
    return -1;
}

/* row (ncol values) = d (nx values) times the nx rows of phi from phi_e (ncol columns each); the
 * zeros of d skipped (a robot's Jacobian is mostly zeros) */
static void times_phi(const double *d, int nx, const double *phi_e, int ncol, double *row)
{
    memset(row, 0, (size_t)ncol * sizeof *row);
    for (int k = 0; k < nx; k++) {
        double dk = d[k];
        if (dk == 0.0)
            continue;
        const double *pk = phi_e + (size_t)k * ncol;
        for (int c = 0; c < ncol; c++)
            row[c] += dk * pk[c];
    }
}

/* rows (entity e's nx rows, ncol columns) = R_x phi_e + R_z, from D (nx x L) of a map and the
 * entity's rows of phi before it (phi_e). */
static void map_rows(const rs_sens_t *s, int e, const double *D, const double *phi_e,
                     double *rows)
{
    const rs_entity_model_t *em = &s->m->ent[e];
    int qe, L = local_cols(s, em, e, &qe), nx = em->nx, ncol = s->ncol;
    for (int i = 0; i < nx; i++) {
        double *row = rows + (size_t)i * ncol;
        times_phi(D + (size_t)i * L, nx, phi_e, ncol, row);
        for (int c = nx; c < L - 1; c++)
            row[global_col(s, em, e, c)] += D[i * L + c];
    }
}

static void not_differentiable(rs_sens_t *s, const char *fmt, ...)
{
    if (!s->differentiable)
        return; /* the first reason stands */
    s->differentiable = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->message, sizeof s->message, fmt, ap);
    va_end(ap);
}

static void fail(rs_sens_t *s, int code, const char *msg)
{
    if (s->failed)
        return;
    s->failed = 1;
    s->code = code;
    snprintf(s->message, sizeof s->message, "%s", msg);
}

/* ---- the variational equations ------------------------------------------------------------ */

/* The flow's D (nx x L) and f (nx) of entity e from its robot's jacobian, the parameter columns
 * it leaves unknown by central differences of derivs; -1 where the robot gives none in this
 * mode. */
static int flow_jacobian(rs_sens_t *s, const rs_entity_model_t *em, int e, double t,
                         const double *x, const double *u, double *D, double *f)
{
    int qe, L = local_cols(s, em, e, &qe);
    unsigned char known[RS_MAX_PARAMS] = {0};
    if (em->robot->jacobian(em, &s->ent[e], t, x, u, qe, s->eslot[e], f, D, L, known) < 0)
        return -1;
    fn_ctx_t c = {.kind = FN_FLOW};
    column_t cl = {s, em, e, em->nx, 0, 2, 0, &c, t, x, u, NULL, NULL, NULL, 0};
    for (int k = 0; k < qe; k++) {
        if (known[k])
            continue;
        cl.j = s->epar[e][k];
        column(&cl, s->par[cl.j].h, f, D, L, em->nx + em->nu + k);
    }
    return 0;
}

static int augmented_rhs(double t, const double *y, double *yd, void *user)
{
    rs_sens_t *s = user;
    const rs_model_t *m = s->m;
    int n = s->n, ncol = s->ncol;
    const double *phi = y + n;
    double *phid = yd + n;
    fn_ctx_t c = {.kind = FN_FLOW};
    double D[RS_MAX_STATE * (MAX_LOCAL + 1)];
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        int qe, L = local_cols(s, em, e, &qe);
        const double *xe = y + em->x_off, *ue = s->u + em->u_off;
        if (s->use_differences || !em->robot->jacobian ||
            flow_jacobian(s, em, e, t, xe, ue, D, yd + em->x_off) < 0)
            entity_jacobian(s, e, &c, t, xe, ue, em->nx, D, yd + em->x_off, NULL, NULL, NULL);
        for (int i = 0; i < em->nx; i++) {
            double *row = phid + (size_t)(em->x_off + i) * ncol;
            times_phi(D + (size_t)i * L, em->nx, phi + (size_t)em->x_off * ncol, ncol, row);
            for (int cc = em->nx; cc < L - 1; cc++)
                row[global_col(s, em, e, cc)] += D[i * L + cc];
        }
    }
    /* any yd not finite: its exponent bits all set, where adding one to the exponent carries
     * into the sign bit (integer operations without branches, which vectorise) */
    uint64_t carry = 0;
    for (int i = 0; i < n + n * ncol; i++) {
        uint64_t bits;
        memcpy(&bits, &yd[i], sizeof bits);
        carry |= (bits & 0x7ff0000000000000ull) + 0x0010000000000000ull;
    }
    return carry >> 63 ? 1 : 0;
}

/* ---- lifetime ----------------------------------------------------------------------------- */

void rs_sens_destroy(rs_sens_t **ps)
{
    rs_sens_t *s = *ps;
    if (!s)
        return;
    rs_integrator_destroy(&s->integ);
    rs_data_destroy(&s->scratch);
    free(s->x);
    free(s->phi);
    free(s->u);
    free(s->par);
    free(s->x_pre);
    free(s->y);
    free(s->rows);
    free(s->wbuf);
    free(s->undefined);
    free(s->split);
    free(s);
    *ps = NULL;
}

/* The index of parameter `name` in entity em's robot table, or -1. */
static int param_row(const rs_entity_model_t *em, const char *name)
{
    for (int i = 0; i < em->robot->np; i++)
        if (strcmp(em->robot->params[i].name, name) == 0)
            return i;
    return -1;
}

/* The variational equations to the world's own tolerances (at most 1e-10 and 1e-12: the
 * right-hand side's differences are good to about that), by its method where the robots give
 * their right-hand-side Jacobians (Verner 8(7) where the world integrates with order 8, by its
 * erk_order or its robots' choice), else by Dormand-Prince 5(4): the differences' rounding
 * noise (about 1e-10) makes an eighth-order error estimate reject steps (the serial arm: 8
 * times the cost). */
static int configure(rs_sens_t *s, rs_status_t *st)
{
    const rs_model_t *m = s->m;
    int order = (int)m->erk_order, analytic = !s->use_differences;
    for (int e = 0; e < m->nentities; e++) {
        if (m->erk_order < 1 && m->ent[e].robot->erk_order > order)
            order = m->ent[e].robot->erk_order; /* 0: the robots' choice, as step.c's */
        analytic &= m->ent[e].robot->jacobian != NULL;
    }
    order = order >= 8 && analytic ? 8 : 5;
    return rs_integrator_configure(s->integ, order, fmax(m->rtol, 1e-10), fmax(m->atol, 1e-12),
                                   1000000, m->sim_step, 0, st);
}

rs_sens_t *rs_sens_new(const rs_model_t *m, const rs_data_t *d, const char *const *params,
                       size_t q, rs_status_t *st)
{
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        int row = param_row(em, "contact_model");
        if (row >= 0 && em->p[em->robot->params[row].offset] != 0.0) {
            double v = em->p[em->robot->params[row].offset];
            rs_fail(st, RS_EUNIMPL,
                    "Jacobians: entity '%s' (%s) runs contact_model %g (%s); a step's "
                    "derivatives need the hybrid formulation's exact events (contact_model 0)",
                    em->name, em->robot->kind, v, v == 1.0 ? "time_stepping" : "compliant");
            return NULL;
        }
        if (d->nsched[e]) {
            rs_fail(st, RS_EPRECOND,
                    "Jacobians: entity '%s' has a command schedule; the derivatives are taken "
                    "with respect to commands held over the Step (clear the schedule)",
                    em->name);
            return NULL;
        }
        if (em->nx > RS_MAX_STATE) {
            rs_fail(st, RS_EUNIMPL, "Jacobians: entity '%s' is too large (%d states)", em->name,
                    em->nx);
            return NULL;
        }
    }
    if (d->spec) {
        rs_fail(st, RS_EPRECOND,
                "Jacobians: a motion specification is loaded; its controllers change the commands "
                "within the Step (clear it to differentiate the Step)");
        return NULL;
    }
    if (q > RS_MAX_PARAMS) {
        rs_fail(st, RS_ERANGE, "Jacobians: %zu parameters; at most %d", q, RS_MAX_PARAMS);
        return NULL;
    }
    rs_sens_t *s = calloc(1, sizeof *s);
    int n = m->nx, ncol = m->nx + m->nu + (int)q;
    size_t N = (size_t)n + (size_t)n * ncol;
    if (!s || !(s->x = calloc((size_t)n + 1, sizeof *s->x)) ||
        !(s->phi = calloc((size_t)n * ncol + 1, sizeof *s->phi)) ||
        !(s->u = calloc((size_t)m->nu + 1, sizeof *s->u)) ||
        !(s->par = calloc(q + 1, sizeof *s->par)) ||
        !(s->x_pre = calloc((size_t)n + 1, sizeof *s->x_pre)) ||
        !(s->y = calloc(N + 1, sizeof *s->y)) ||
        !(s->rows = calloc((size_t)n * ncol + 1, sizeof *s->rows)) ||
        !(s->wbuf = calloc(2 * (size_t)ncol + 1, sizeof *s->wbuf)) ||
        !(s->undefined = calloc((size_t)ncol + 1, 1)) ||
        !(s->split = calloc((size_t)ncol + 1, 1)) ||
        !(s->scratch = rs_data_scratch(m))) {
        rs_sens_destroy(&s);
        rs_fail(st, RS_EEXHAUSTED, "out of memory for a step's Jacobian");
        return NULL;
    }
    s->m = m;
    s->n = n;
    s->ncmd = m->nu;
    s->q = (int)q;
    s->ncol = ncol;
    s->differentiable = 1;
    for (size_t j = 0; j < q; j++) {
        /* the Monte Carlo samplers' parser names the element (a distribution is not used) */
        rs_mc_sampler_t smp;
        if (rs_mc_parse_sampler(m, params[j], "uniform", 0.0, 0.0, &smp, st) < 0) {
            rs_sens_destroy(&s);
            return NULL;
        }
        for (size_t i = 0; i < j; i++)
            if (strcmp(params[i], params[j]) == 0) {
                rs_fail(st, RS_EINVAL, "Jacobians: parameter '%s' is named twice", params[j]);
                rs_sens_destroy(&s);
                return NULL;
            }
        const rs_entity_model_t *em = &m->ent[smp.entity];
        sens_param_t *p = &s->par[j];
        p->e = smp.entity;
        p->slot = em->robot->params[smp.param].offset + smp.index;
        int qe = 0;
        for (size_t i = 0; i < j; i++)
            qe += s->par[i].e == p->e;
        s->eslot[p->e][qe] = p->slot;
        s->epar[p->e][qe] = (int)j;
        p->h = step_of(em->p[p->slot]);
        p->plus = p->minus = *em;
        p->plus.p[p->slot] += p->h;
        p->minus.p[p->slot] -= p->h;
        if (em->robot->compile) {
            em->robot->compile(&p->plus);
            em->robot->compile(&p->minus);
        }
    }
    if (!(s->integ = rs_integrator_new((int)N, s->y, augmented_rhs, NULL, s, st)) ||
        configure(s, st) < 0) {
        rs_sens_destroy(&s);
        return NULL;
    }
    return s;
}

void rs_sens_use_differences(rs_sens_t *s, int on)
{
    s->use_differences = on != 0;
    rs_status_t st;
    if (configure(s, &st) < 0)
        fail(s, st.code, st.message);
}

/* At the first hook: Phi = [I | 0 | 0], the Step's commands, the state and modes. */
static void start(rs_sens_t *s, const rs_model_t *m, const rs_data_t *d)
{
    if (s->started)
        return;
    s->started = 1;
    memset(s->phi, 0, (size_t)s->n * s->ncol * sizeof *s->phi);
    for (int i = 0; i < s->n; i++)
        s->phi[(size_t)i * s->ncol + i] = 1.0;
    memcpy(s->u, d->u, (size_t)m->nu * sizeof *s->u);
    memcpy(s->x, d->x, (size_t)s->n * sizeof *s->x);
    memcpy(s->ent, d->ent, (size_t)m->nentities * sizeof *s->ent);
    s->t = d->t;
}

/* ---- hooks -------------------------------------------------------------------------------- */

static void sens_flow(void *ctx, const rs_model_t *m, const rs_data_t *d)
{
    rs_sens_t *s = ctx;
    start(s, m, d);
    if (s->failed || !s->differentiable || d->t <= s->t)
        return; /* a Step found not differentiable stays so: nothing more to carry */
    int n = s->n;
    memcpy(s->y, s->x, (size_t)n * sizeof *s->y);
    memcpy(s->y + n, s->phi, (size_t)n * s->ncol * sizeof *s->y);
    rs_status_t st;
    rs_status_clear(&st);
    double t = s->t;
    /* interrupted by what interrupts the world's own integration (a stop, the budget) */
    rs_integrator_set_abort(s->integ, rs_integrator_abort_flag(d->integ));
    /* on with the step the last interval ended with, as the world's own integration does: a
     * fresh estimate and ramp-up at every control step cost more than the flow itself */
    int rc = rs_integrator_restart(s->integ, t, fmin(s->h_next, d->t - t), d->t, &st);
    while (rc == 0 && t < d->t) {
        rc = rs_integrator_evolve(s->integ, &t, &st);
        if (rc == 1) /* no guards: cannot happen */
            rc = 0;
        else if (rc == 0)
            break;
    }
    if (rc < 0) {
        fail(s, rc, st.message);
        return;
    }
    s->h_next = rs_integrator_next_step(s->integ);
    memcpy(s->phi, s->y + n, (size_t)n * s->ncol * sizeof *s->phi);
    memcpy(s->x, d->x, (size_t)n * sizeof *s->x); /* on along the world's own trajectory */
    s->t = d->t;
}

static void sens_map_begin(void *ctx, const rs_model_t *m, const rs_data_t *d)
{
    rs_sens_t *s = ctx;
    start(s, m, d);
    memcpy(s->x_pre, d->x, (size_t)s->n * sizeof *s->x_pre);
    memcpy(s->pre, d->ent, (size_t)m->nentities * sizeof *s->pre);
    s->t_pre = d->t;
    s->dirty_pre = d->dirty;
}

/* Whether guard i, reached at the rate a = g_x f- (+ g_t), is grazing at the scale of a
 * difference step: the guard's second derivative along f- (the straight slide back onto its
 * surface that the jump's differences take: the surface's curvature) or along the flow (the
 * trajectory's own curving), kappa, against the change d of the guard over one difference step
 * of each state variable. The event time's dependence on the state is a square root beyond a
 * change of the guard of about a^2 / kappa (the radius of its series); the jump's differences,
 * shortened at most a thousandfold for a long slide (slide_step) and extrapolated, resolve the
 * derivative to about a hundredth of d, and below that it is grazing: where a^2 <
 * GRAZING_STEP kappa d. A diff drive meeting its obstacle with g_x f- 2.7e-4 of its 1.24 m/s
 * while turning at 14.7 rad/s (kappa d / a^2 = 1184): the Step's differences 11 at a step of
 * 1e-5, 35 at 1e-6, and the jump's own left the heading's row 7037 off where it is exactly 0.
 * |g_x| |f-| over the whole state (GRAZING) is no measure of that: a fast turn inflates |f-|
 * with a rate the guard does not see. */
static int grazing_at_step(const rs_entity_model_t *em, const rs_entity_data_t *before, double t,
                           const double *xb, const double *u, const double *fm, const double *gi,
                           int i, double a)
{
    const rs_robot_t *r = em->robot;
    double tau = INFINITY, d = 0.0;
    for (int k = 0; k < em->nx; k++) {
        double hk = state_step(em, xb, k);
        d += fabs(gi[k]) * hk;
        if (fm[k] != 0.0)
            tau = fmin(tau, hk / fabs(fm[k]));
    }
    if (!isfinite(tau) || !(d > 0.0))
        return 0;
    double xp[RS_MAX_STATE], xm[RS_MAX_STATE], gp[64], gm[64], g0[64];
    double fp[RS_MAX_STATE], fmm[RS_MAX_STATE];
    for (int k = 0; k < em->nx; k++)
        xp[k] = xb[k] + tau * fm[k], xm[k] = xb[k] - tau * fm[k];
    r->guards(em, before, t, xb, u, g0);
    r->guards(em, before, t + tau, xp, u, gp);
    r->guards(em, before, t - tau, xm, u, gm);
    r->derivs(em, before, t + tau, xp, u, fp);
    r->derivs(em, before, t - tau, xm, u, fmm);
    double line = (gp[i] + gm[i] - 2.0 * g0[i]) / (tau * tau), turn = 0.0;
    for (int k = 0; k < em->nx; k++)
        turn += gi[k] * (fp[k] - fmm[k]) / (2.0 * tau);
    double kappa = fmax(fabs(line), fabs(line + turn));
    return GRAZING_STEP * kappa * d >= a * a;
}

/* Entity e's rows after the jump of the guards `fired` at time t from the entity's data
 * `before` and state xb, its rows of phi before it phi_in (nx x ncol), into rows:
 *   Phi+ = R_x P Phi- + (R_z - R_x f- g_z / a) + f+ w,  P = I - f- g_x / a,
 * the jump map differentiated along its guard's surface (slide), then the time shift's f+ w, w
 * the event time's sensitivity by the first fired guard. The jump is replayed (its result into
 * *after and xa); f+ is taken at (post, xpost) where given, else there. split (ncol, or NULL)
 * gets 1 at the columns along which another fired guard's time moves differently. -1 where a
 * fired guard is grazing (said not differentiable when `report`). */
static int jump_rows(rs_sens_t *s, int e, double t, const int *fired,
                     const rs_entity_data_t *before, const double *xb, const double *u,
                     const double *phi_in, const rs_entity_data_t *post, const double *xpost,
                     rs_entity_data_t *after, double *xa, double *rows, char *split, int report,
                     int *together)
{
    const rs_entity_model_t *em = &s->m->ent[e];
    const rs_robot_t *r = em->robot;
    int qe, L = local_cols(s, em, e, &qe), nx = em->nx, ncol = s->ncol;
    double D[RS_MAX_STATE * (MAX_LOCAL + 1)], G[64 * (MAX_LOCAL + 1)];
    double fm[RS_MAX_STATE], fp[RS_MAX_STATE], r0[RS_MAX_STATE], g0[64];
    double *w = s->wbuf, *wi = s->wbuf + ncol;
    rs_entity_data_t saved = s->pre[e];
    s->pre[e] = *before; /* the guards and the jump are evaluated in the mode before it */
    fn_ctx_t c = {.kind = FN_JUMP, .fired = fired};
    entity_map(s, em, e, t, xb, u, xa, &c, after);
    fn_ctx_t cg = {.kind = FN_GUARDS};
    entity_jacobian(s, e, &cg, t, xb, u, em->ng, G, g0, NULL, NULL, NULL);
    r->derivs(em, before, t, xb, u, fm);
    r->derivs(em, post ? post : after, t, post ? xpost : xa, u, fp);
    int first = 1, rc = 0;
    double slide[MAX_LOCAL + 1] = {0};
    for (int pass = 0; pass < 2 * em->ng; pass++) {
        /* the fired guards, then (with `together`) those about to cross with them: split
         * like them */
        int i = pass % em->ng;
        if (pass < em->ng && together)
            together[i] = fired[i];
        if (pass < em->ng ? !fired[i] : !together || fired[i] || first)
            continue;
        const double *gi = G + (size_t)i * L;
        double a = gi[L - 1], ng = 0, nf = 0;
        for (int k = 0; k < nx; k++) {
            a += gi[k] * fm[k];
            ng += gi[k] * gi[k];
            nf += fm[k] * fm[k];
        }
        if (pass >= em->ng) {
            if (!(g0[i] > 0.0 && a < 0.0) || g0[i] > -a * NEAR_EVENT * fmax(1.0, fabs(t)))
                continue;
            together[i] = 1;
        }
        if (fabs(a) <= GRAZING * (sqrt(ng) * sqrt(nf) + fabs(gi[L - 1])) || a == 0.0 ||
            grazing_at_step(em, before, t, xb, u, fm, gi, i, a)) {
            if (pass >= em->ng) {
                together[i] = 0;
                continue;
            }
            if (report)
                not_differentiable(
                    s,
                    "a grazing event: entity '%s' (%s), guard %d at t = %.9g s is reached "
                    "with rate dg/dt = %.3g (|dg/dx| |f| = %.3g): the event time, and the "
                    "state after the step, depend on the state like a square root there",
                    em->name, r->kind, i, t, a, sqrt(ng) * sqrt(nf));
            rc = -1;
            break;
        }
        for (int cc = 0; cc < ncol; cc++) {
            double v = 0;
            for (int k = 0; k < nx; k++)
                v += gi[k] * phi_in[(size_t)k * ncol + cc];
            wi[cc] = v;
        }
        for (int cc = nx; cc < L - 1; cc++)
            wi[global_col(s, em, e, cc)] += gi[cc];
        for (int cc = 0; cc < ncol; cc++)
            wi[cc] /= a;
        if (first) {
            memcpy(w, wi, (size_t)ncol * sizeof *w);
            for (int cc = 0; cc < L - 1; cc++)
                slide[cc] = gi[cc] / a;
            c.guard = i, c.g0 = g0[i], c.a = a, c.fm = fm;
            first = 0;
            continue;
        }
        /* along an input that moves the guards' times apart the simultaneous jump is one
         * side's only (split_events) */
        double scale = 0;
        for (int cc = 0; cc < ncol; cc++)
            scale = fmax(scale, fmax(fabs(w[cc]), fabs(wi[cc])));
        for (int cc = 0; split && cc < ncol; cc++)
            split[cc] |= fabs(wi[cc] - w[cc]) > SAME_TIME * fmax(scale, 1e-300);
    }
    if (rc == 0) {
        s->phi_map = report ? phi_in : NULL; /* a trial order of split_events: NULL */
        entity_jacobian(s, e, &c, t, xb, u, nx, D, r0, slide, fm, phi_in);
        s->phi_map = NULL;
        map_rows(s, e, D, phi_in, rows);
        for (int i = 0; i < nx; i++)
            for (int cc = 0; cc < ncol; cc++)
                rows[(size_t)i * ncol + cc] += fp[i] * w[cc];
    }
    s->pre[e] = saved;
    return rc;
}

/* Whether guard set `one`'s jump leaves entity e at (ed, x) as it is: its state, mode and run
 * variables unchanged, no event logged, there and at x moved by each state variable's
 * difference step either way (a jump that changes nothing at the point alone, a joint put back
 * onto the stop it is on, has a derivative of its own). Such an event (a guard that only looks:
 * a root the integrator is sent back to) has saltation I wherever it comes, so it takes no part
 * in an order of jumps. */
static int jump_is_identity(rs_sens_t *s, int e, double t, const int *one,
                            const rs_entity_data_t *ed, const double *x, const double *u)
{
    const rs_entity_model_t *em = &s->m->ent[e];
    int nx = em->nx, same = 1;
    double xp[RS_MAX_STATE], xa[RS_MAX_STATE];
    rs_entity_data_t saved = s->pre[e], after;
    s->pre[e] = *ed;
    fn_ctx_t c = {.kind = FN_JUMP, .fired = one};
    for (int k = -1; same && k < 2 * nx; k++) {
        memcpy(xp, x, (size_t)nx * sizeof *xp);
        if (k >= 0)
            xp[k / 2] += (k % 2 ? -1.0 : 1.0) * state_step(em, x, k / 2);
        int outcome = entity_map(s, em, e, t, xp, u, xa, &c, &after);
        same = outcome == ed->mode && memcmp(xa, xp, (size_t)nx * sizeof *xa) == 0 &&
               memcmp(after.aux, ed->aux, sizeof after.aux) == 0;
    }
    s->pre[e] = saved;
    return same;
}

/* Guards of entity e crossed together at t, whose times some inputs (the columns in s->split)
 * move apart: perturbed along such an input the jumps come one after the other, in an order
 * that its sign decides. The jumps are composed one guard at a time in every order (at most
 * three guards), each differentiated on its own guard's surface; where every order gives the
 * same column (decoupled joints stopping together: the order does not matter) the step has
 * that derivative, and s->rows gets it; where they differ, or an order cannot be composed (its
 * jumps do not end in the jump's mode and state `mode_after`, xpost), the step has one-sided
 * derivatives only and the column is undefined; two guards' orders within NEAR_ORDER give their
 * mean. A guard in `fired` that the world has not crossed (`crossed`: about to cross, its own
 * jump comes next) has the orders compared with the first one, and s->rows kept (the world's
 * jump's). A jump that leaves the state as it is where it comes in an order (jump_is_identity)
 * is skipped there: its guard, grazing after another's jump, would leave the order uncomposed. */
static void split_events(rs_sens_t *s, int e, double t, const int *fired, const int *crossed,
                         const double *xm, const double *u, const double *phi_e, int mode_after,
                         const double *xpost)
{
    const rs_entity_model_t *em = &s->m->ent[e];
    int nx = em->nx, ncol = s->ncol, list[3], k = 0, ok = 1, early = 0;
    for (int i = 0; i < em->ng; i++)
        early |= fired[i] && !crossed[i];
    for (int i = 0; i < em->ng; i++)
        if (fired[i]) {
            if (k == 3) {
                ok = 0;
                break;
            }
            list[k++] = i;
        }
    static const int perms[6][3] = {{0, 1, 2}, {1, 0, 2}, {0, 2, 1},
                                    {2, 0, 1}, {1, 2, 0}, {2, 1, 0}};
    int norders = k == 2 ? 2 : 6;
    size_t block = (size_t)nx * ncol;
    double xend[RS_MAX_STATE];
    double *seq = ok ? malloc(3 * block * sizeof *seq) : NULL; /* the first order's rows, a
                                                                  trial's, its input */
    ok = seq != NULL;
    int saved_diff = s->differentiable;
    char saved_msg[sizeof s->message];
    memcpy(saved_msg, s->message, sizeof saved_msg);
    for (int o = 0; ok && o < norders; o++) {
        double *out = o == 0 ? seq : seq + block, *in = seq + 2 * block, x[RS_MAX_STATE],
               xn[RS_MAX_STATE];
        rs_entity_data_t ed = s->pre[e], next;
        memcpy(in, phi_e, block * sizeof *in);
        memcpy(out, phi_e, block * sizeof *out); /* where every jump is skipped */
        memcpy(x, xm, (size_t)nx * sizeof *x);
        for (int j = 0; ok && j < k; j++) {
            int one[64] = {0}, g = list[perms[o][j]];
            one[g] = fired[g];
            if (jump_is_identity(s, e, t, one, &ed, x, u))
                continue;
            ok = jump_rows(s, e, t, one, &ed, x, u, in, NULL, NULL, &next, xn, out, NULL, 0,
                           NULL) ==
                     0 &&
                 s->differentiable;
            ed = next;
            memcpy(x, xn, (size_t)nx * sizeof *x);
            memcpy(in, out, block * sizeof *in);
        }
        /* with a guard about to cross (`early`: not crossed by the world yet, its jump comes
         * next, on its own) the orders end where the first one does; else where the world's
         * jump did */
        if (early && o == 0) {
            mode_after = ed.mode;
            memcpy(xend, x, (size_t)nx * sizeof *x);
            xpost = xend;
        }
        ok = ok && ed.mode == mode_after;
        for (int i = 0; ok && i < nx; i++)
            ok = fabs(x[i] - xpost[i]) <= 1e-9 * (1.0 + fabs(xpost[i]));
        if (!ok || o == 0)
            continue;
        for (int cc = 0; cc < ncol; cc++) { /* an order that differs: those columns undefined */
            double scale = 1.0, dif = 0.0;
            for (int i = 0; i < nx; i++) {
                scale = fmax(scale, fmax(fabs(seq[i * ncol + cc]), fabs(out[i * ncol + cc])));
                dif = fmax(dif, fabs(seq[i * ncol + cc] - out[i * ncol + cc]));
            }
            if (dif > SAME_ORDER * scale)
                s->split[cc] |= 2;
            /* two guards: an input's two signs take the two orders, one each, so their mean
             * is the mean of the step's one-sided derivatives, a corner's column; served
             * where the orders differ as little as the jumps' own difference quotients do
             * (their rest and stop thresholds), the column is undefined beyond */
            if (k == 2 && dif <= NEAR_ORDER * scale) {
                s->split[cc] &= ~2;
                for (int i = 0; !early && i < nx; i++)
                    seq[i * ncol + cc] = 0.5 * (seq[i * ncol + cc] + out[i * ncol + cc]);
            }
        }
    }
    s->differentiable = saved_diff;
    memcpy(s->message, saved_msg, sizeof saved_msg);
    for (int cc = 0; cc < ncol; cc++) {
        if (!(s->split[cc] & 1) || s->undefined[cc])
            continue;
        if (ok && !(s->split[cc] & 2)) {
            /* the world's jump alone where a guard crosses next: its own jump follows */
            for (int i = 0; !early && i < nx; i++)
                s->rows[(size_t)i * ncol + cc] = seq[(size_t)i * ncol + cc];
            continue;
        }
        s->undefined[cc] = 1;
        if (!s->split_events) {
            s->split_events = 1;
            snprintf(s->split_message, sizeof s->split_message,
                     "simultaneous events: entity '%s' (%s) crossed guards at t = %.9g s whose "
                     "event times depend differently on some inputs, and the state after them "
                     "depends on their order (a perturbation of those inputs separates them): "
                     "the step has only one-sided derivatives along them",
                     em->name, em->robot->kind, t);
        }
    }
    free(seq);
}

static void sens_map_end(void *ctx, const rs_model_t *m, const rs_data_t *d, int kind,
                         const int *fired, double dt)
{
    rs_sens_t *s = ctx;
    if (s->failed || !s->differentiable)
        return;
    int ncol = s->ncol;
    double D[RS_MAX_STATE * (MAX_LOCAL + 1)], r0[RS_MAX_STATE];
    memset(s->wbuf, 0, 2 * (size_t)ncol * sizeof *s->wbuf);
    for (int e = 0; e < m->nentities && !s->failed && s->differentiable; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        const rs_robot_t *r = em->robot;
        int nx = em->nx;
        const double *xm = s->x_pre + em->x_off, *u = s->u + em->u_off;
        double t = s->t_pre;
        /* at the Step's first start the map is differentiated with settle even where the
         * world did not settle (its commands unchanged), for the robots that say what their
         * modes hold: settle keeps a consistent state as it is, and its derivative there is
         * the projection onto the mode's constraints (a held variable's column 0, column()),
         * which the Step's derivative starts from */
        int first_start = kind != RS_STEP_MAP_JUMP && !s->begun && r->holds;
        fn_ctx_t c = {.kind = kind == RS_STEP_MAP_JUMP ? FN_JUMP : FN_BEGIN, .dt = dt,
                      .settle = s->dirty_pre || first_start};
        int nfired = 0;
        if (kind == RS_STEP_MAP_JUMP) {
            c.fired = fired + em->g_off;
            for (int i = 0; i < em->ng; i++)
                nfired += c.fired[i] != 0;
            if (!nfired)
                continue;
        } else if (!(c.settle && r->settle) && !r->step_begin && !r->advance) {
            continue;
        }
        if (kind != RS_STEP_MAP_JUMP) {
            s->phi_map = s->phi + (size_t)em->x_off * ncol;
            entity_jacobian(s, e, &c, t, xm, u, nx, D, r0, NULL, NULL, s->phi_map);
            s->phi_map = NULL;
            map_rows(s, e, D, s->phi + (size_t)em->x_off * ncol, s->rows);
            memcpy(s->phi + (size_t)em->x_off * ncol, s->rows,
                   (size_t)nx * ncol * sizeof *s->phi);
            continue;
        }
        if (em->ng > 64) {
            fail(s, RS_EUNIMPL, "Jacobians: more than 64 guards in one entity");
            break;
        }
        double *phi_e = s->phi + (size_t)em->x_off * ncol, xa[RS_MAX_STATE];
        rs_entity_data_t after;
        int together[64];
        memset(s->split, 0, (size_t)ncol);
        if (jump_rows(s, e, t, c.fired, &s->pre[e], xm, u, phi_e, &d->ent[e],
                      d->x + em->x_off, &after, xa, s->rows, s->split, 1, together) < 0)
            continue;
        int nsplit = 0;
        for (int cc = 0; cc < ncol; cc++)
            nsplit += s->split[cc] && !s->undefined[cc];
        if (nsplit)
            split_events(s, e, t, together, c.fired, xm, u, phi_e, d->ent[e].mode,
                         d->x + em->x_off);
        for (int i = 0; i < nx; i++)
            for (int cc = 0; cc < ncol; cc++)
                if (s->undefined[cc])
                    s->rows[(size_t)i * ncol + cc] = 0.0;
        memcpy(phi_e, s->rows, (size_t)nx * ncol * sizeof *s->phi);
    }
    if (kind != RS_STEP_MAP_JUMP)
        s->begun = 1;
    memcpy(s->x, d->x, (size_t)s->n * sizeof *s->x);
    memcpy(s->ent, d->ent, (size_t)m->nentities * sizeof *s->ent);
    s->t = d->t;
}

const rs_step_hooks_t *rs_sens_hooks(rs_sens_t *s)
{
    s->hooks = (rs_step_hooks_t){sens_map_begin, sens_map_end, sens_flow, s};
    return &s->hooks;
}

int rs_sens_result(rs_sens_t *s, int *n, int *ncmd, int *q, const double **phi,
                   int *differentiable, const char **why, rs_status_t *st)
{
    *n = s->n;
    *ncmd = s->ncmd;
    *q = s->q;
    for (int c = 0; c < s->ncol; c++) /* the inputs along which no derivative exists */
        for (int i = 0; s->undefined[c] && i < s->n; i++)
            s->phi[(size_t)i * s->ncol + c] = NAN;
    *phi = s->phi;
    *differentiable = s->differentiable && !s->failed && !s->split_events;
    *why = !s->differentiable ? s->message : s->split_events ? s->split_message : "";
    if (s->failed)
        return rs_fail(st, s->code, "Jacobians: %s", s->message);
    return 0;
}
