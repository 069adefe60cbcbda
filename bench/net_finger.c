/* The finger pushing scenario stepped over the server: gym-style Steps (a new force each 10 ms
 * step) per second, and the first touch's event time against the closed form
 * t = (m / sqrt(F c)) acosh(exp(x_o c / m)) for quadratic drag from rest.
 * usage: bench_net_finger [STEPS [PATH/TO/robosim-server]] */
#include "server_proc.h"
#include "bench_util.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 20000;
    char path[PATH_MAX];
    find_server(path, sizeof path, argc > 2 ? argv[2] : NULL);
    server_proc_t sp;
    if (server_start(&sp, path, NULL) != 0) {
        fprintf(stderr, "bench_net_finger: cannot start %s\n", path);
        return 1;
    }
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(sp.endpoint, 2000, &err);
    uint64_t world;
    if (!c || rsc_create_world(c, "finger", NULL, 0, 1, &world, &err) != 0) {
        fprintf(stderr, "bench_net_finger: %s\n", err.message);
        server_stop(&sp);
        return 1;
    }

    /* the event-time error: push with F = 2 N from rest until the touch */
    double F = 2.0, touch = NAN;
    rsc_command_t cmd = {"finger", &F, 1};
    for (int k = 0; k < 300 && isnan(touch); k++) {
        Robosim__V1__State *s = NULL;
        if (rsc_step(c, world, 1, 0, &cmd, 1, &s, &err) != 0)
            break;
        for (size_t i = 0; i < s->n_events; i++)
            if (strcmp(s->events[i]->kind, "touch") == 0)
                touch = s->events[i]->time;
        rsc_free(s);
    }
    double closed = acosh(exp(1.5)) / sqrt(2.0);

    /* throughput: pushing, a new force every step */
    rsc_reset(c, world, 1, 1, NULL, &err);
    long failures = 0;
    double t0 = now();
    for (long k = 0; k < steps; k++) {
        F = 1.5 + 0.5 * sin(0.01 * (double)k);
        Robosim__V1__State *s = NULL;
        if (rsc_step(c, world, 1, 0, &cmd, 1, &s, &err) != 0)
            failures++;
        rsc_free(s);
    }
    double rate = (double)steps / (now() - t0);
    printf("finger over the server (tcp loopback), gym-style 10 ms steps with a new force each:\n");
    printf("  %ld steps: %.0f steps/s (%.1f us per round trip)%s\n", steps, rate, 1e6 / rate,
           failures ? " -- with failures!" : "");
    printf("  first touch at t = %.15f s, closed form %.15f s, error %.2e s\n", touch, closed,
           touch - closed);
    rsc_close(&c);
    server_stop(&sp);
    return failures || isnan(touch) ? 1 : 0;
}
