/* What evaluating a declared task costs: FingerPush-v0 is a task document (tasks/finger.json),
 * its expressions compiled once; this times its reward-and-observation evaluation (the task's
 * evaluate and observe, once per control step) against the same formulas written in C (the
 * task's former C row, kept here as the reference), interleaved in blocks on the same states,
 * and checks the two give the same bits. A control step of the world is timed for scale.
 *
 *   bench_core_task_doc [rounds, default 20] */
#include "rs_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STATES 64   /* episode states evaluated per block */
#define REPEAT 200  /* evaluations of each state per block */

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The C reference: FingerPush-v0's evaluate and observe as its C row had them (state x_f,
 * v_f, x_o, v_o at x_off + 0..3, the tip_force sensor, the target in task[RS_TASK_PRIVATE]). */
static double c_evaluate(const rs_model_t *m, const rs_data_t *d, const int *ix, double *info,
                         int *terminated)
{
    double xf = d->x[ix[0]], xo = d->x[ix[2]], vo = d->x[ix[3]];
    double target = d->task[RS_TASK_PRIVATE];
    double dist = fabs(xo - target), gap = fmax(0.0, xo - xf);
    double u = d->u[m->ent[0].u_off] / 5.0, effort = u * u;
    int success = dist < 0.05 && fabs(vo) < 1e-3;
    info[0] = dist, info[1] = gap, info[2] = effort, info[3] = success;
    *terminated = success;
    return -dist - 0.1 * gap - 0.01 * effort + 10.0 * success;
}

static void c_observe(const rs_data_t *d, const int *ix, double *obs)
{
    obs[0] = d->x[ix[0]];
    obs[1] = d->x[ix[1]];
    obs[2] = d->x[ix[2]];
    obs[3] = d->x[ix[3]];
    obs[4] = d->task[RS_TASK_PRIVATE];
    obs[5] = d->sensors[ix[4]];
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    rs_status_t st;
    rs_world_t *w = rs_world_new_task("FingerPush-v0", NULL, NULL, 0, 1, &st);
    if (!w) {
        fprintf(stderr, "bench_core_task_doc: %s\n", st.message);
        return 1;
    }
    const rs_task_t *t = w->task;
    const rs_model_t *m = w->model;
    const rs_entity_model_t *em = &m->ent[0];
    int ix[5] = {em->x_off + 0, em->x_off + 1, em->x_off + 2, em->x_off + 3, -1};
    for (int i = 0; i < em->ns; i++)
        if (strcmp(em->robot->sensors[i].name, "tip_force") == 0)
            ix[4] = em->s_off + i;
    /* states along an episode (random forces), kept as copies of the data's vectors */
    static rs_data_t *states[STATES];
    double step_wall = 0, step_cpu = 0;
    int nsteps = 0;
    uint64_t r = 12345;
    for (int s = 0; s < STATES; s++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        double a = -5.0 + 10.0 * (double)(r >> 11) * 0x1.0p-53;
        double w0 = wall(), c0 = cpu();
        if (rs_world_task_step(w, &a, 1, 1, &st) < 0 && rs_world_reset(w, (uint64_t)s, &st) < 0) {
            fprintf(stderr, "bench_core_task_doc: %s\n", st.message);
            return 1;
        }
        step_wall += wall() - w0, step_cpu += cpu() - c0, nsteps++;
        if (w->data->task[RS_TASK_TERMINATED] != 0.0 || w->data->task[RS_TASK_TRUNCATED] != 0.0)
            rs_world_reset(w, (uint64_t)s + 100, &st);
        states[s] = rs_data_new(m, 1, &st);
        if (!states[s] || rs_data_copy(m, states[s], w->data, &st) < 0) {
            fprintf(stderr, "bench_core_task_doc: %s\n", st.message);
            return 1;
        }
    }
    rs_task_bind_t b = w->task_bind;
    int same = 1;
    double sink = 0, best_doc = INFINITY, best_c = INFINITY, cpu_doc = 0, cpu_c = 0;
    double ratios[256];
    int nratio = 0;
    for (int round = 0; round < rounds && round < 256; round++) {
        double tb[2], cb[2];
        for (int which = 0; which < 2; which++) { /* declared, then C, in turn */
            double w0 = wall(), c0 = cpu();
            for (int s = 0; s < STATES; s++) {
                rs_data_t *d = states[s];
                for (int k = 0; k < REPEAT; k++) {
                    double info[RS_TASK_MAX_INFO], obs[RS_TASK_MAX_OBS];
                    int term = 0;
                    double rew = 0;
                    if (which == 0) {
                        t->evaluate(m, d, &b, d->nevents, &rew, &term, info, NULL);
                        t->observe(m, d, &b, obs, NULL);
                    } else {
                        rew = c_evaluate(m, d, ix, info, &term);
                        c_observe(d, ix, obs);
                    }
                    sink += rew + obs[5] + info[2];
                }
            }
            tb[which] = wall() - w0, cb[which] = cpu() - c0;
        }
        ratios[nratio++] = tb[0] / tb[1];
        best_doc = fmin(best_doc, tb[0]), best_c = fmin(best_c, tb[1]);
        cpu_doc += cb[0], cpu_c += cb[1];
    }
    for (int s = 0; s < STATES; s++) { /* the same bits */
        double i1[RS_TASK_MAX_INFO], i2[RS_TASK_MAX_INFO], o1[RS_TASK_MAX_OBS], o2[RS_TASK_MAX_OBS];
        int t1 = 0, t2 = 0;
        double r1 = 0;
        t->evaluate(m, states[s], &b, states[s]->nevents, &r1, &t1, i1, NULL);
        double r2 = c_evaluate(m, states[s], ix, i2, &t2);
        t->observe(m, states[s], &b, o1, NULL);
        c_observe(states[s], ix, o2);
        same &= memcmp(&r1, &r2, sizeof r1) == 0 && t1 == t2 &&
                memcmp(i1, i2, 4 * sizeof(double)) == 0 && memcmp(o1, o2, 6 * sizeof(double)) == 0;
    }
    for (int i = 1; i < nratio; i++) /* median of the ratios (insertion sort) */
        for (int j = i; j > 0 && ratios[j] < ratios[j - 1]; j--) {
            double x = ratios[j];
            ratios[j] = ratios[j - 1], ratios[j - 1] = x;
        }
    double n = (double)STATES * REPEAT;
    printf("FingerPush-v0, %d rounds of %d evaluations each way (evaluate + observe), "
           "interleaved:\n", nratio, (int)n);
    printf("  declared (compiled expressions)  %7.1f ns per control step (best round), "
           "CPU %7.1f ns\n", best_doc / n * 1e9, cpu_doc / nratio / n * 1e9);
    printf("  the same formulas in C           %7.1f ns per control step (best round), "
           "CPU %7.1f ns\n", best_c / n * 1e9, cpu_c / nratio / n * 1e9);
    printf("  ratio declared / C (median of rounds) %.2f; same bits: %s\n", ratios[nratio / 2],
           same ? "yes" : "NO");
    printf("  for scale: one control step of the world %.1f us (wall), %.1f us (CPU), mean of "
           "%d\n", step_wall / nsteps * 1e6, step_cpu / nsteps * 1e6, nsteps);
    for (int s = 0; s < STATES; s++)
        rs_data_destroy(&states[s]);
    rs_world_destroy(&w);
    return sink == 12345.678 ? 2 : (same ? 0 : 1);
}
