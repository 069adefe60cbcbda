/* The serial two-link arm side by side with MuJoCo (Debian's libmujoco-dev, 2.2):
 * the same arm (the example-systems chapter's defaults: a1 0.15 m, a2 0.10 m, m1 0.2 kg, m2 0.1 kg,
 * uniform rods, gravity 9.81 m/s^2 along -y, no friction) written as MJCF below, driven the
 * same way for the same simulated time, one core:
 *   "pid"      PID mode (kP 1, kI 0.5, kD 0.05, caps 1 N m): new joint setpoints every 1 s from
 *              a fixed sequence; MuJoCo runs the same PID law in its control loop;
 *   "torques"  torque mode: random torques within the caps, a new pair every 10 ms, each
 *              uniform in [-1, 1] N m. Kept for comparison with earlier runs, but it measures
 *              nothing useful: the light arm (M ~ 1e-3 kg m^2) spins up to hundreds of rad/s,
 *              MuJoCo reports its state unstable (NaN/Inf in QACC) and every method's angles
 *              leave the reference by 1e2-1e4 rad, so neither speed nor accuracy compare;
 *   "torques-physical"  torque mode as a user would drive the arm: every 10 ms the torques
 *              tau = G(q) - c qd + A r(t) from the state at hand, gravity compensation G
 *              (closed form, gravity_torques()), joint damping c = 0.005 N m s, and smooth
 *              random excursions r_j(t), a sum of three sines (0.2-1.7 Hz, fixed phases) of
 *              amplitude A = 0.05 N m in all: |tau| stays below 0.4 N m, inside the 1 N m
 *              caps, and the joints move at up to about 9 rad/s (printed as "regime");
 *              MuJoCo stays stable. Judged by the goal (within
 *              1.5x of MuJoCo at 2 ms, at equal or better accuracy);
 *   "swing"    no torque: a free swing from the horizontal, whose energy
 *              E = 1/2 qd^T M(q) qd + g (m1 lc1 sin t1 + m2 (a1 sin t1 + lc2 sin(t1 + t2)))
 *              is conserved: the drift |E(T) - E(0)| is each method's own error.
 * Robosim: 10 ms control steps, rtol 1e-8, atol 1e-10, the integrator of order 5 (erk_order
 * 5, Dormand-Prince 5(4)) and 8 (the serial arm's default, Verner 8(7)); MuJoCo: 2 ms steps,
 * its default semi-implicit Euler and RK4. Accuracy of pid and torques: the largest joint-angle error at
 * every 10 ms against a robosim run at rtol 1e-13 (order 5), the closest thing to the exact
 * trajectory at hand (order 5; the arm is chaotic once it spins: over long runs in torque mode and in
 * the swing every method's angles leave the reference, and the energy drift is the measure
 * there). CPU time: the thread's clock.
 *
 * Each timed run is repeated (default 3 rounds, the four methods in turn within a round) and
 * the least CPU time kept: on a shared machine a run's thread CPU time can double from one run
 * to the next (measured here: MuJoCo Euler 0.5 and 1.0 ms per simulated s for the same run).
 *
 *   bench_mujoco_serial_arm [simulated seconds per scenario, default 20] [rounds, default 3] */
#include "rs_core.h"

#include <math.h>
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CONTROL_DT 0.01
#define A1 0.15
#define A2 0.10
#define M1 0.2
#define M2 0.1
#define G 9.81
#define TAU_MAX 1.0
#define KP 1.0
#define KI 0.5
#define KD 0.05

static const char *mjcf_fmt =
    "<mujoco model='serial_arm'>"
    "  <option timestep='0.002' gravity='0 -9.81 0' integrator='%s'>"
    "    <flag contact='disable'/>"
    "  </option>"
    "  <worldbody>"
    "    <body name='link1'>"
    "      <joint name='j1' type='hinge' axis='0 0 1'/>"
    "      <inertial pos='0.075 0 0' mass='0.2' diaginertia='1e-9 3.75e-4 3.75e-4'/>"
    "      <body name='link2' pos='0.15 0 0'>"
    "        <joint name='j2' type='hinge' axis='0 0 1'/>"
    "        <inertial pos='0.05 0 0' mass='0.1' diaginertia='1e-9 8.333333333333333e-5 "
    "8.333333333333333e-5'/>"
    "      </body>"
    "    </body>"
    "  </worldbody>"
    "  <actuator>"
    "    <motor joint='j1' ctrllimited='true' ctrlrange='-1 1'/>"
    "    <motor joint='j2' ctrllimited='true' ctrlrange='-1 1'/>"
    "  </actuator>"
    "</mujoco>";

enum { PID, TORQUES, TORQUES_PHYSICAL, SWING, NSCENARIOS };
static const char *scenario_name[] = {
    "pid", "torques (full-cap random torques: the arm spins up, MuJoCo unstable; see header)",
    "torques-physical (gravity compensation + damping + smooth random torques)", "swing"};

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* closed-form energy of the arm (uniform rods: lc = a/2, I = m a^2 / 12 about the centre) */
static double energy(const double *q, const double *qd)
{
    double lc1 = A1 / 2, lc2 = A2 / 2, I1 = M1 * A1 * A1 / 12, I2 = M2 * A2 * A2 / 12;
    double c2 = cos(q[1]);
    double m11 = I1 + I2 + M1 * lc1 * lc1 + M2 * (A1 * A1 + lc2 * lc2 + 2 * A1 * lc2 * c2);
    double m12 = I2 + M2 * (lc2 * lc2 + A1 * lc2 * c2), m22 = I2 + M2 * lc2 * lc2;
    double T = 0.5 * (m11 * qd[0] * qd[0] + 2 * m12 * qd[0] * qd[1] + m22 * qd[1] * qd[1]);
    double V = G * (M1 * lc1 * sin(q[0]) + M2 * (A1 * sin(q[0]) + lc2 * sin(q[0] + q[1])));
    return T + V;
}

/* the closed-form gravity torques G(q) of the arm (the derivative of V in energy()) */
static void gravity_torques(const double *q, double G2[2])
{
    double lc1 = A1 / 2, lc2 = A2 / 2, g12 = M2 * lc2 * G * cos(q[0] + q[1]);
    G2[0] = (M1 * lc1 + M2 * A1) * G * cos(q[0]) + g12;
    G2[1] = g12;
}

/* the command of control step k at state (q, qd): setpoints (pid), torques (torques,
 * torques-physical) or zero (swing) */
static void command(int scenario, long k, const double *q, const double *qd, double u[2])
{
    if (scenario == TORQUES_PHYSICAL) {
        static const double freq[2][3] = {{0.23, 0.71, 1.37}, {0.31, 0.97, 1.73}}; /* Hz */
        static const double phase[2][3] = {{0.4, 2.9, 5.1}, {1.7, 4.2, 0.8}};
        static const double amp[3] = {0.025, 0.015, 0.01}; /* N m, 0.05 in all */
        double t = (double)k * CONTROL_DT, G2[2];
        gravity_torques(q, G2);
        for (int j = 0; j < 2; j++) {
            double r = 0;
            for (int i = 0; i < 3; i++)
                r += amp[i] * sin(2 * M_PI * freq[j][i] * t + phase[j][i]);
            u[j] = G2[j] - 0.005 * qd[j] + r;
        }
        return;
    }
    static const double targets[][2] = {{0.8, -0.5}, {-1.2, 1.0}, {2.0, 0.3}, {0.1, -1.4},
                                        {-0.4, 0.9}, {1.5, -0.2}, {-2.0, 0.5}, {0.6, 1.2}};
    if (scenario == PID) {
        const double *t = targets[(k / 100) % 8];
        u[0] = t[0], u[1] = t[1];
    } else if (scenario == TORQUES) {
        uint64_t z = (uint64_t)k * 0x9e3779b97f4a7c15ULL; /* splitmix64 of k */
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        u[0] = TAU_MAX * (2.0 * (double)(z & 0xffffffff) / 4294967295.0 - 1.0);
        u[1] = TAU_MAX * (2.0 * (double)(z >> 32) / 4294967295.0 - 1.0);
    } else {
        u[0] = u[1] = 0.0;
    }
}

typedef struct result {
    double cpu;      /* CPU seconds */
    long steps;      /* the simulator's own steps */
    double *q;       /* joint angles at every control step, 2 per step */
    double e0, e1;   /* energy at the start and the end */
    double max_tau;  /* largest |command| sent (torque scenarios: the torques before the cap) */
    double max_qd;   /* largest |joint rate| at the control steps */
} result_t;

/* the regime statistics of control step k */
static void track(result_t *r, const double *u, const double *qd)
{
    for (int j = 0; j < 2; j++) {
        r->max_tau = fmax(r->max_tau, fabs(u[j]));
        r->max_qd = fmax(r->max_qd, fabs(qd[j]));
    }
}

static void run_robosim(int scenario, double order, double rtol, double atol, long n,
                        result_t *r)
{
    rs_status_t st;
    double mode[2] = {scenario == PID ? 1 : 0, scenario == PID ? 1 : 0};
    double ord[] = {order}, rt[] = {rtol}, at[] = {atol};
    rs_param_t p[] = {{"arm", "actuator_mode", mode, 2},
                      {"", "erk_order", ord, 1},
                      {"", "rtol", rt, 1},
                      {"", "atol", at, 1}};
    rs_world_t *w = rs_world_new("serial_arm", p, 4, 1, &st);
    if (!w) {
        fprintf(stderr, "bench_mujoco_serial_arm: %s\n", st.message);
        exit(1);
    }
    *r = (result_t){0};
    r->q = malloc((size_t)n * 2 * sizeof(double));
    r->e0 = energy(w->data->x, w->data->x + 2);
    rs_stats_t s0, s1;
    rs_get_stats(w->data, &s0);
    double c0 = cpu_now();
    for (long k = 0; k < n; k++) {
        double u[2];
        command(scenario, k, w->data->x, w->data->x + 2, u);
        if (rs_set_commands(w->model, w->data, 0, u, 2, &st) != 0 ||
            rs_step(w->model, w->data, 1, &st) != 0) {
            fprintf(stderr, "bench_mujoco_serial_arm: robosim: %s\n", st.message);
            exit(1);
        }
        r->q[2 * k] = w->data->x[0];
        r->q[2 * k + 1] = w->data->x[1];
        track(r, u, w->data->x + 2);
    }
    r->cpu = cpu_now() - c0;
    rs_get_stats(w->data, &s1);
    r->steps = (long)(s1.internal_steps - s0.internal_steps);
    r->e1 = energy(w->data->x, w->data->x + 2);
    rs_world_destroy(&w);
}

static void run_mujoco(int scenario, const char *integrator, long n, result_t *r)
{
    char xml[4096], err[1000] = "";
    snprintf(xml, sizeof xml, mjcf_fmt, integrator);
    mjVFS vfs;
    mj_defaultVFS(&vfs);
    mj_makeEmptyFileVFS(&vfs, "arm.xml", (int)strlen(xml));
    memcpy(vfs.filedata[vfs.nfile - 1], xml, strlen(xml));
    mjModel *m = mj_loadXML("arm.xml", &vfs, err, sizeof err);
    mj_deleteVFS(&vfs);
    if (!m) {
        fprintf(stderr, "bench_mujoco_serial_arm: MuJoCo: %s\n", err);
        exit(1);
    }
    mjData *d = mj_makeData(m);
    int sub = (int)lround(CONTROL_DT / m->opt.timestep);
    double integral[2] = {0, 0};
    *r = (result_t){0};
    r->q = malloc((size_t)n * 2 * sizeof(double));
    r->e0 = energy(d->qpos, d->qvel);
    double c0 = cpu_now();
    for (long k = 0; k < n; k++) {
        double u[2];
        command(scenario, k, d->qpos, d->qvel, u);
        for (int s = 0; s < sub; s++) {
            for (int j = 0; j < 2; j++) {
                if (scenario == PID) { /* Klamp't's PID law, the integral by Euler */
                    double e = u[j] - d->qpos[j];
                    d->ctrl[j] = KP * e - KD * d->qvel[j] + KI * integral[j];
                    integral[j] += e * m->opt.timestep;
                } else {
                    d->ctrl[j] = u[j]; /* clipped to ctrlrange by MuJoCo */
                }
            }
            mj_step(m, d);
        }
        r->q[2 * k] = d->qpos[0];
        r->q[2 * k + 1] = d->qpos[1];
        track(r, u, d->qvel);
    }
    r->cpu = cpu_now() - c0;
    r->steps = n * sub;
    r->e1 = energy(d->qpos, d->qvel);
    mj_deleteData(d);
    mj_deleteModel(m);
}

static double max_error(const result_t *a, const result_t *ref, long n)
{
    double e = 0;
    for (long i = 0; i < 2 * n; i++)
        e = fmax(e, fabs(a->q[i] - ref->q[i]));
    return e;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 20.0;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    long n = lround(seconds / CONTROL_DT);
    if (rounds < 1)
        rounds = 1;
    printf("serial arm, %.0f simulated s per scenario, one core, least CPU time of %d rounds; "
           "robosim 10 ms control steps rtol 1e-8; MuJoCo %s, 2 ms steps\n",
           seconds, rounds, mj_versionString());
    for (int sc = PID; sc < NSCENARIOS; sc++) {
        result_t ref, rs5, rs8, mje, mjr;
        run_robosim(sc, 5, 1e-13, 1e-15, n, &ref);
        for (int round = 0; round < rounds; round++) {
            result_t again[4];
            result_t *keep[4] = {&rs5, &rs8, &mje, &mjr};
            run_robosim(sc, 5, 1e-8, 1e-10, n, &again[0]);
            run_robosim(sc, 8, 1e-8, 1e-10, n, &again[1]);
            run_mujoco(sc, "Euler", n, &again[2]);
            run_mujoco(sc, "RK4", n, &again[3]);
            for (int i = 0; i < 4; i++) { /* the runs are deterministic: keep the first's data */
                if (round == 0) {
                    *keep[i] = again[i];
                    continue;
                }
                keep[i]->cpu = fmin(keep[i]->cpu, again[i].cpu);
                free(again[i].q);
            }
        }
        const result_t *all[] = {&rs5, &rs8, &mje, &mjr};
        const char *names[] = {"robosim order 5", "robosim order 8", "MuJoCo Euler 2 ms",
                               "MuJoCo RK4 2 ms"};
        printf("%s:\n", scenario_name[sc]);
        printf("  regime (reference run): max |command| %.3g %s, max |joint rate| %.3g rad/s\n",
               ref.max_tau, sc == PID ? "rad (setpoints)" : "N m", ref.max_qd);
        for (int i = 0; i < 4; i++) {
            const result_t *r = all[i];
            printf("  %-18s %8.3f ms CPU per simulated s (%6.1fx real time), %9.0f own "
                   "steps/s, max angle error %.2e rad",
                   names[i], 1e3 * r->cpu / seconds, seconds / r->cpu,
                   (double)r->steps / r->cpu, max_error(r, &ref, n));
            if (sc == SWING) /* conserved only without actuation */
                printf(", energy drift %.2e J of |E| scale %.2e J", fabs(r->e1 - r->e0),
                       G * (M1 * A1 / 2 + M2 * (A1 + A2 / 2)));
            printf("\n");
        }
        const char *goal = sc == PID                ? " (goal >= 1)"
                           : sc == TORQUES_PHYSICAL ? " (goal >= 1/1.5 = 0.67)"
                           : sc == TORQUES          ? " (not judged: unphysical, see header)"
                                                    : "";
        printf("  speed ratio robosim/MuJoCo-Euler (simulated time per CPU s): order 5 %.2f, "
               "order 8 (the serial arm's default) %.2f%s\n",
               mje.cpu / rs5.cpu, mje.cpu / rs8.cpu, goal);
        if (sc == PID || sc == TORQUES_PHYSICAL)
            printf("  accuracy: order 8 %.2e rad vs MuJoCo Euler %.2e rad: %s\n",
                   max_error(&rs8, &ref, n), max_error(&mje, &ref, n),
                   max_error(&rs8, &ref, n) <= max_error(&mje, &ref, n) ? "equal or better"
                                                                        : "WORSE");
        for (int i = 0; i < 4; i++)
            free((void *)all[i]->q);
        free(ref.q);
    }
    return 0;
}
