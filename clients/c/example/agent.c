/* agent.c: an agent loop in C: a FingerPush-v1 episode (push the object so that it comes to
 * rest at the target) driven by a scripted policy, the server computing observation, reward,
 * termination and truncation. Usage: agent [ENDPOINT] */
#include <math.h>
#include <stdio.h>

#include <robosim_client.h>

/* observation: x_f, v_f, x_o, v_o, target (m, m/s), tip force (5 N); action: force / 5 N */
static double policy(const double *obs)
{
    double dist = obs[4] - obs[2], v_o = obs[3];
    if (dist <= 0 || (v_o > 0 && v_o * v_o / (2 * 0.5) >= dist - 0.01))
        return -1.0; /* let it coast to the target */
    double force = 8.0 * (fmin(0.8, sqrt(dist)) - obs[1]) / 5.0;
    return fmax(-1.0, fmin(1.0, force));
}

int main(int argc, char **argv)
{
    const char *endpoint = argc > 1 ? argv[1] : "tcp://127.0.0.1:5555";
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(endpoint, 2000, &err); /* NULL: err.message says why */
    if (!c) {
        fprintf(stderr, "agent: %s\n", err.message);
        return 1;
    }
    uint64_t world = 0;
    Robosim__V1__State *s = NULL;
    double ret = 0;
    int steps = 0, rc = rsc_create_task_world(c, "FingerPush-v1", NULL, NULL, 0, 0, &world, &err);
    if (rc == 0)
        rc = rsc_reset(c, world, 1, /*seed*/ 0, &s, &err);
    while (rc == 0 && s->task && !s->task->terminated && !s->task->truncated) {
        double action = policy(s->task->observation);
        rsc_free(s);
        s = NULL;
        rc = rsc_step_action(c, world, 1, &action, 1, &s, &err);
        if (rc == 0) {
            ret += s->task->reward;
            steps++;
        }
    }
    if (rc != 0) {
        fprintf(stderr, "agent: %s: %s\n", rsc_error_name(err.code), err.message);
        rsc_close(&c);
        return 1;
    }
    printf("%s after %d steps, return %.3f\n", s->task->terminated ? "solved" : "truncated",
           steps, ret);
    rsc_free(s);
    rsc_destroy_world(c, world, NULL);
    rsc_close(&c);
    return 0;
}
