/* robosim-drive-example: drive the differential-drive robot of the Example Robotic Systems chapter
 * along the chapter's five-phase wheel-speed schedule, past one disk obstacle, through a robosim
 * server.
 *
 * It connects, creates a "diff_drive" world with an obstacle at (2.4, 1.1) m of radius 0.1 m
 * on the last leg, steps it in 0.5 s Steps (the commands ride on each Step, gym-style), prints the pose after
 * every Step and every event with its exact time, and destroys the world. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robosim_client.h"

#define STEP_S 0.5

/* The chapter's schedule: wheel speeds (phi1_dot, phi2_dot) in rad/s held for a duration in s. */
static const struct phase {
    double phi1_dot, phi2_dot, duration;
} phases[] = {
    {3, 3, 5}, {2, -2, 1}, {3, 3, 4}, {-2, 2, 1}, {3, 3, 5},
};

static const char *endpoint = "tcp://127.0.0.1:5555";
static rsc_client_t *client;
static uint64_t world;

static void usage(FILE *f)
{
    fprintf(f, "usage: robosim-drive-example [--endpoint E]\n"
               "\n"
               "Drive the diff-drive robot along the Example Robotic Systems chapter's five-phase\n"
               "schedule past an obstacle at (2.4, 1.1) m, radius 0.1 m, on a running\n"
               "robosim-server, printing t x y theta mode after every 0.5 s Step and each event\n"
               "with its exact time.\n"
               "\n"
               "  --endpoint E  server endpoint (default $ROBOSIM_ENDPOINT, else %s)\n"
               "  --version     print the version and exit\n"
               "  -h, --help    this text\n",
            "tcp://127.0.0.1:5555");
}

/* Report a failed call, destroy the world if there is one, exit 1. */
static void fail(const char *what, const rsc_error_t *err)
{
    fprintf(stderr, "robosim-drive-example: %s: %s: %s\n", what, rsc_error_name(err->code),
            err->message);
    if (client && world) {
        rsc_error_t ignored;
        rsc_destroy_world(client, world, &ignored);
    }
    rsc_close(&client);
    exit(1);
}

/* Index of state variable `name` of `entity` in the spec, or -1. */
static int state_index(const Robosim__V1__Spec *spec, const char *entity, const char *name)
{
    for (size_t i = 0; i < spec->n_entities; i++) {
        const Robosim__V1__EntitySpec *e = spec->entities[i];
        if (strcmp(e->name, entity) != 0)
            continue;
        int at = 0;
        for (size_t k = 0; k < e->n_state; k++) {
            if (strcmp(e->state[k]->name, name) == 0)
                return at;
            at += e->state[k]->size ? (int)e->state[k]->size : 1;
        }
    }
    return -1;
}

/* v, with values that print as -0.000000 shown as 0 */
static double tidy(double v)
{
    return fabs(v) < 5e-7 ? 0.0 : v;
}

static const Robosim__V1__EntityState *find_entity(const Robosim__V1__State *s, const char *name)
{
    for (size_t i = 0; i < s->n_entities; i++)
        if (strcmp(s->entities[i]->name, name) == 0)
            return s->entities[i];
    return NULL;
}

int main(int argc, char **argv)
{
    const char *env = getenv("ROBOSIM_ENDPOINT");
    if (env && *env)
        endpoint = env;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--endpoint") == 0 && i + 1 < argc) {
            endpoint = argv[++i];
        } else if (strncmp(argv[i], "--endpoint=", 11) == 0) {
            endpoint = argv[i] + 11;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("robosim-drive-example %s (protocol %d.%d)\n", ROBOSIM_VERSION,
                   RSC_PROTOCOL_MAJOR, RSC_PROTOCOL_MINOR);
            return 0;
        } else {
            fprintf(stderr, "robosim-drive-example: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 1;
        }
    }

    rsc_error_t err;
    client = rsc_connect(endpoint, 5000, &err);
    if (!client)
        fail("connect", &err);

    const double obstacle[] = {2.4, 1.1, 0.1}; /* x, y, radius in m (SI, protocol 1.2) */
    const rsc_param_t params[] = {{"robot", "obstacles", obstacle, 3}};
    if (rsc_create_world(client, "diff_drive", params, 1, 0, &world, &err) != 0)
        fail("create world", &err);

    Robosim__V1__Spec *spec = NULL;
    if (rsc_get_spec(client, world, &spec, &err) != 0)
        fail("get spec", &err);
    int ix = state_index(spec, "robot", "x"), iy = state_index(spec, "robot", "y");
    int ith = state_index(spec, "robot", "theta");
    rsc_free(spec);
    if (ix < 0 || iy < 0 || ith < 0) {
        err.code = RSC_EPROTOCOL;
        snprintf(err.message, sizeof err.message,
                 "the diff_drive spec has no robot state x, y, theta");
        fail("get spec", &err);
    }

    printf("world %" PRIu64 " on %s: obstacle at (%g, %g) m, radius %g m\n", world, endpoint,
           obstacle[0], obstacle[1], obstacle[2]);
    printf("%8s %12s %12s %12s  %s   (events of a Step print above its row)\n", "t", "x", "y",
           "theta", "mode");
    size_t nevents = 0;
    for (size_t p = 0; p < sizeof phases / sizeof phases[0]; p++) {
        const double u[] = {phases[p].phi1_dot, phases[p].phi2_dot};
        const rsc_command_t cmd = {"robot", u, 2};
        int nsteps = (int)(phases[p].duration / STEP_S + 0.5);
        for (int k = 0; k < nsteps; k++) {
            Robosim__V1__State *s = NULL;
            if (rsc_step(client, world, 0, STEP_S, &cmd, 1, &s, &err) != 0)
                fail("step", &err);
            const Robosim__V1__EntityState *r = find_entity(s, "robot");
            if (!r || r->n_state <= (size_t)ith) {
                rsc_free(s);
                err.code = RSC_EPROTOCOL;
                snprintf(err.message, sizeof err.message, "the state has no robot pose");
                fail("step", &err);
            }
            for (size_t e = 0; e < s->n_events; e++) {
                const Robosim__V1__Event *ev = s->events[e];
                printf("  event %-8s %s at t = %.17g s (value %g)\n", ev->kind, ev->entity,
                       ev->time, ev->value);
            }
            printf("%8.3f %12.6f %12.6f %12.6f  %s\n", s->time, tidy(r->state[ix]),
                   tidy(r->state[iy]), tidy(r->state[ith]), r->mode);
            nevents += s->n_events;
            rsc_free(s);
        }
    }
    printf("%zu events\n", nevents);

    if (rsc_destroy_world(client, world, &err) != 0) {
        world = 0; /* no second attempt in fail() */
        fail("destroy world", &err);
    }
    rsc_close(&client);
    return 0;
}
