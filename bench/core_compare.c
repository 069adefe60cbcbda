/* One robosim run for bench/compare_peers.py: a preset with parameter overrides stepped
 * in-process for a given simulated time, its trajectory, its events and its CPU time as CSV.
 *
 *   bench_core_compare PRESET T_END [entity.name=v1,v2,... ...] [u:entity=v1,v2,...] [reps=N]
 *                      [sample=DT]
 *
 * An override's entity is empty for world parameters (".control_dt=0.01"). `u:entity=...`
 * holds that entity's commands for the whole run. sample=DT records the trajectory at control
 * steps of DT instead of the model's control_dt (the timed runs keep control_dt): a control step
 * only stops the integrator, so the recorded run is the same solution sampled finer (to see a
 * compliant contact's deepest compression, over in a millisecond). Output, after the run:
 *   x,t,state...          the world state after every control step (the first repetition's)
 *   ev,t,entity,kind      every event, with its exact time
 *   cpu,seconds,reps,internal_steps,rhs_evals
 * CPU time is the process's (CLOCK_PROCESS_CPUTIME_ID) over the stepping only (no output, no
 * world creation), the least over the timed repetitions (default: until 0.2 s of CPU or 20;
 * reps=N: N - 1 timed after the recorded one): on a shared machine a run's CPU time varies from
 * one run to the next. */
#include "rs_core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXP 33 /* 32 overrides and the recorded run's control_dt */
#define MAXV 16

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_values(const char *s, double *v)
{
    int n = 0;
    char *end;
    while (*s && n < MAXV) {
        v[n++] = strtod(s, &end);
        if (end == s)
            return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PRESET T_END [entity.name=v,...] [u:entity=v,...] [reps=N]\n",
                argv[0]);
        return 2;
    }
    const char *preset = argv[1];
    double t_end = atof(argv[2]);
    static char ent[MAXP][RS_NAME_MAX], name[MAXP][RS_NAME_MAX];
    static double vals[MAXP][MAXV];
    rs_param_t p[MAXP];
    int np = 0, reps = 0;
    double sample = 0.0;
    char u_ent[RS_NAME_MAX] = "";
    double u[MAXV];
    int nu = 0;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        if (!eq) {
            fprintf(stderr, "bad argument %s\n", a);
            return 2;
        }
        if (!strncmp(a, "reps=", 5)) {
            reps = atoi(a + 5);
        } else if (!strncmp(a, "sample=", 7)) {
            sample = atof(a + 7);
        } else if (!strncmp(a, "u:", 2)) {
            snprintf(u_ent, sizeof u_ent, "%.*s", (int)(eq - a - 2), a + 2);
            nu = parse_values(eq + 1, u);
        } else {
            const char *dot = strchr(a, '.');
            if (!dot || dot > eq || np == MAXP - 1) {
                fprintf(stderr, "bad parameter %s\n", a);
                return 2;
            }
            snprintf(ent[np], RS_NAME_MAX, "%.*s", (int)(dot - a), a);
            snprintf(name[np], RS_NAME_MAX, "%.*s", (int)(eq - dot - 1), dot + 1);
            int n = parse_values(eq + 1, vals[np]);
            if (n <= 0) {
                fprintf(stderr, "bad values in %s\n", a);
                return 2;
            }
            p[np] = (rs_param_t){ent[np], name[np], vals[np], (size_t)n};
            np++;
        }
    }

    /* repetition 0 is recorded (state and events printed after each control step, outside any
     * timing); repetitions 1.. are timed, the loop alone: at least one, then until 0.2 s of CPU
     * or 20 in all, or exactly reps - 1 of them with reps=N (N >= 2) */
    double best = INFINITY, spent = 0.0;
    int done = 0, rc = 0;
    uint64_t isteps = 0, rhs = 0;
    if (reps == 1)
        reps = 2;
    for (int r = 0; reps ? r < reps : (r < 20 && (r < 2 || spent < 0.2)); r++) {
        rs_status_t st;
        /* the recorded run at control steps of `sample` (an override after the others wins) */
        p[np] = (rs_param_t){"", "control_dt", &sample, 1};
        int npr = np + (r == 0 && sample > 0.0);
        rs_world_t *w = rs_world_new(preset, p, (size_t)npr, 1, &st);
        if (!w) {
            fprintf(stderr, "%s: %s\n", preset, st.message);
            return 1;
        }
        if (nu > 0) {
            int e = rs_model_entity(w->model, u_ent);
            if (e < 0 || rs_set_commands(w->model, w->data, e, u, (size_t)nu, &st) < 0) {
                fprintf(stderr, "commands: %s\n", e < 0 ? "no such entity" : st.message);
                return 1;
            }
        }
        const rs_model_t *m = w->model;
        rs_data_t *d = w->data;
        long nsteps = lround(t_end / m->control_dt);
        if (r == 0) {
            uint64_t is0 = d->internal_steps, rh0 = d->rhs_evals;
            for (long k = 0; k < nsteps; k++) {
                int s = rs_step(m, d, 1, &st);
                for (int i = 0; i < d->nevents; i++)
                    printf("ev,%.17g,%d,%s\n", d->events[i].t, d->events[i].entity,
                           rs_event_kind_name(m, &d->events[i]));
                if (s < 0) {
                    fprintf(stderr, "step failed at t = %g: %s\n", d->t, st.message);
                    printf("fail,%.17g,%s\n", d->t, st.message);
                    rc = 1;
                    break;
                }
                printf("x,%.17g", d->t);
                for (int j = 0; j < m->nx; j++)
                    printf(",%.17g", d->x[j]);
                printf("\n");
            }
            isteps = d->internal_steps - is0;
            rhs = d->rhs_evals - rh0;
        } else {
            double c0 = cpu_now();
            rs_step(m, d, (uint64_t)nsteps, &st);
            double c = cpu_now() - c0;
            best = fmin(best, c);
            spent += c;
            done++;
        }
        rs_world_destroy(&w);
        if (rc)
            break;
    }
    printf("cpu,%.9g,%d,%llu,%llu\n", best, done, (unsigned long long)isteps,
           (unsigned long long)rhs);
    return rc;
}
