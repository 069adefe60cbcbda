/* What CurveZMQ costs a request: two servers, one plaintext and one with CURVE (keys made here
 * with zmq_curve_keypair, an allow-list of this client), each with a finger world; rounds of
 * gym-style Steps (a new force each 10 ms step) alternate between them, so both see the same
 * machine load. Prints each side's median round, the median of the paired differences (a round
 * of each, back to back) and the difference of the best rounds.
 * usage: bench_net_curve [ROUNDS [STEPS_PER_ROUND [PATH/TO/robosim-server]]] */
#include "server_proc.h"
#include "bench_util.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <sys/stat.h>

/* Microseconds per Step of one round of `steps` Steps, or NAN if one failed. */
static double round_us(rsc_client_t *c, uint64_t world, long steps)
{
    double F = 1.5;
    rsc_command_t cmd = {"finger", &F, 1};
    rsc_error_t err;
    rsc_reset(c, world, 1, 1, NULL, &err);
    double t0 = now();
    for (long k = 0; k < steps; k++) {
        F = 1.5 + 0.5 * sin(0.01 * (double)k);
        if (rsc_step(c, world, 1, 0, &cmd, 1, NULL, &err) != 0)
            return NAN;
    }
    return (now() - t0) * 1e6 / (double)steps;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    long steps = argc > 2 ? atol(argv[2]) : 2000;
    char path[PATH_MAX];
    find_server(path, sizeof path, argc > 3 ? argv[3] : NULL);
    if (rounds < 1 || rounds > 1000 || steps < 1) {
        fprintf(stderr, "usage: bench_net_curve [ROUNDS [STEPS_PER_ROUND [robosim-server]]]\n");
        return 2;
    }

    /* keys: the server's pair in a certificate file, this client's key in the allow-list */
    char dir[] = "/tmp/robosim-bench-curve-XXXXXX", cert[64], auth[64];
    if (!mkdtemp(dir))
        return 1;
    snprintf(cert, sizeof cert, "%s/server.key_secret", dir);
    snprintf(auth, sizeof auth, "%s/authorized_keys", dir);
    rsc_options_t o = {.timeout_ms = 5000};
    char server_secret[RSC_KEY_LEN + 1];
    zmq_curve_keypair(o.server_key, server_secret);
    zmq_curve_keypair(o.public_key, o.secret_key);
    FILE *f = fopen(cert, "w");
    fchmod(fileno(f), 0600);
    fprintf(f, "curve\n    public-key = \"%s\"\n    secret-key = \"%s\"\n", o.server_key,
            server_secret);
    fclose(f);
    f = fopen(auth, "w");
    fprintf(f, "%s controller\n", o.public_key);
    fclose(f);

    server_proc_t plain, curve;
    const char *curve_args[] = {"--no-world", "--no-stream", "--curve-secret-file", cert,
                                "--authorized-keys", auth, NULL};
    const char *plain_args[] = {"--no-world", "--no-stream", NULL};
    int ok = server_start(&plain, path, plain_args) == 0 &&
             server_start_with(&curve, path, curve_args, &o) == 0;
    unlink(cert);
    unlink(auth);
    rmdir(dir);
    if (!ok) {
        fprintf(stderr, "bench_net_curve: cannot start %s\n", path);
        server_stop(&plain);
        server_stop(&curve);
        return 1;
    }
    rsc_error_t err;
    rsc_client_t *pc = rsc_connect(plain.endpoint, 5000, &err);
    rsc_client_t *cc = rsc_connect_with(curve.endpoint, &o, &err);
    uint64_t pw = 0, cw = 0;
    if (!pc || !cc || rsc_create_world(pc, "finger", NULL, 0, 1, &pw, &err) != 0 ||
        rsc_create_world(cc, "finger", NULL, 0, 1, &cw, &err) != 0) {
        fprintf(stderr, "bench_net_curve: %s\n", err.message);
        return 1;
    }

    double *p = calloc((size_t)rounds, sizeof *p), *c = calloc((size_t)rounds, sizeof *c),
           *d = calloc((size_t)rounds, sizeof *d);
    round_us(pc, pw, steps / 10 + 1); /* warm both up */
    round_us(cc, cw, steps / 10 + 1);
    int failed = 0;
    for (int r = 0; r < rounds; r++) { /* A B, then B A: neither always goes first */
        if (r % 2 == 0) {
            p[r] = round_us(pc, pw, steps);
            c[r] = round_us(cc, cw, steps);
        } else {
            c[r] = round_us(cc, cw, steps);
            p[r] = round_us(pc, pw, steps);
        }
        failed |= isnan(p[r]) || isnan(c[r]);
        d[r] = c[r] - p[r]; /* paired: the two rounds ran back to back */
    }
    qsort(p, (size_t)rounds, sizeof *p, by_value);
    qsort(c, (size_t)rounds, sizeof *c, by_value);
    qsort(d, (size_t)rounds, sizeof *d, by_value);
    double pm = p[rounds / 2], cm = c[rounds / 2];
    printf("finger Steps over tcp loopback, %d interleaved rounds of %ld Steps each, median:\n",
           rounds, steps);
    printf("  plaintext %.1f us per round trip (%.0f steps/s), range %.1f-%.1f\n", pm, 1e6 / pm,
           p[0], p[rounds - 1]);
    printf("  CURVE     %.1f us per round trip (%.0f steps/s), range %.1f-%.1f\n", cm, 1e6 / cm,
           c[0], c[rounds - 1]);
    printf("  CURVE costs %+.1f us per round trip: median of the paired differences (best "
           "rounds: %+.1f us)%s\n",
           d[rounds / 2], c[0] - p[0], failed ? " -- with failures!" : "");
    free(d);
    free(p);
    free(c);
    memset(&o, 0, sizeof o);
    rsc_close(&pc);
    rsc_close(&cc);
    server_stop(&plain);
    server_stop(&curve);
    return failed;
}
