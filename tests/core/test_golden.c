/* The golden corpus: scenarios over every preset and task, every contact formulation and
 * friction law, schedules, wrenches, a motion specification and Monte Carlo draws, 1,000+
 * control steps each, and the state digest (rs_core.h) each ends with, recorded in
 * tests/golden/digests.txt. The digests are recorded outputs by design: a build that
 * reproduces them computes bit for bit what the recording build computed (scripts/test runs
 * this on x86-64, scripts/test-arm64 under qemu on arm64).
 *
 *   test_golden [--update] [FILE]   check (or rewrite) FILE, by default the committed corpus
 *
 * When a physics change alters digests on purpose, `scripts/golden --update` rewrites the file
 * and the commit says why. */
#include "motion_spec_fixture.h"
#include "rs_core.h"
#include "rs_montecarlo.h"
#include "rs_motion_spec.h"
#include "rs_robot.h"
#include "rs_task.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ROBOSIM_GOLDEN_FILE
#define ROBOSIM_GOLDEN_FILE "tests/golden/digests.txt"
#endif

#define STEPS 1000
#define MAX_SCENARIOS 128

typedef struct result {
    char name[64];
    char hex[2 * RS_DIGEST_BYTES + 1];
} result_t;

static result_t results[MAX_SCENARIOS];
static int nresults, failures;

/* A fixed pseudo-random sequence for the commands (xorshift64): the same on every platform,
 * and each scenario's own, seeded from its name (seed_from), so adding a scenario, a preset or
 * a task changes no other scenario's draws. */
static uint64_t prng = 0x9e3779b97f4a7c15ULL;

static void seed_from(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, 64 bits */
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = (h ^ *c) * 0x100000001b3ULL;
    prng = h ? h : 0x9e3779b97f4a7c15ULL; /* xorshift's state must not be 0 */
}
static double uniform01(void)
{
    prng ^= prng << 13;
    prng ^= prng >> 7;
    prng ^= prng << 17;
    return (double)(prng >> 11) * 0x1.0p-53;
}

/* A value inside [lower, upper] (unbounded sides taken as +-scale), away from the bounds. */
static double inside(double lower, double upper, double scale)
{
    double lo = lower > -scale ? lower : -scale, hi = upper < scale ? upper : scale;
    return lo + (hi - lo) * (0.2 + 0.6 * uniform01());
}

static void record(const char *name, const char *hex)
{
    if (nresults == MAX_SCENARIOS)
        return;
    snprintf(results[nresults].name, sizeof results[0].name, "%s", name);
    snprintf(results[nresults].hex, sizeof results[0].hex, "%s", hex);
    nresults++;
}

static void fail(const char *name, const char *what, const char *why)
{
    fprintf(stderr, "scenario %s: %s: %s\n", name, what, why);
    failures++;
    record(name, "failed");
}

/* Random commands for every entity, new every 10 control steps, stepped in slices of 1 and 9
 * (the digest does not depend on the slicing); `hook` runs before each slice. */
static void run_world(const char *name, rs_world_t *w, uint64_t steps,
                      void (*hook)(rs_world_t *, uint64_t))
{
    rs_status_t st;
    const rs_model_t *m = w->model;
    seed_from(name);
    for (uint64_t k = 0; k < steps;) {
        if (hook)
            hook(w, k);
        if (k % 10 == 0 && !hook) {
            for (int e = 0; e < m->nentities; e++) {
                const rs_entity_model_t *em = &m->ent[e];
                double u[RS_MAX_ACTUATORS];
                for (int a = 0; a < em->nu && a < RS_MAX_ACTUATORS; a++)
                    u[a] = inside(em->robot->actuators[a].lower, em->robot->actuators[a].upper,
                                  2.0);
                if (rs_set_commands(m, w->data, e, u, (size_t)em->nu, &st) < 0)
                    return fail(name, "commands", st.message);
            }
        }
        uint64_t n = k % 10 == 0 ? 1 : 9;
        if (rs_step(m, w->data, n, &st) < 0)
            return fail(name, "step", st.message);
        k += n;
    }
    char hex[2 * RS_DIGEST_BYTES + 1];
    rs_digest_hex(w->data, hex);
    record(name, hex);
}

static void preset_run(const char *name, const char *preset, const rs_param_t *p, size_t np,
                       void (*hook)(rs_world_t *, uint64_t))
{
    rs_status_t st;
    rs_world_t *w = rs_world_new(preset, p, np, 1, &st);
    if (!w)
        return fail(name, "world", st.message);
    run_world(name, w, STEPS, hook);
    rs_world_destroy(&w);
}

/* finger: a schedule of the push force over the first 8 s */
static void schedule_hook(rs_world_t *w, uint64_t k)
{
    if (k != 0)
        return;
    static const double t[] = {0.0, 1.0, 2.5, 4.0, 8.0}, v[] = {0.5, 2.0, 0.2, 1.5, 0.0};
    rs_status_t st;
    if (rs_set_schedule(w->model, w->data, 0, 0, t, v, 5, &st) < 0)
        fprintf(stderr, "schedule: %s\n", st.message);
}

/* finger: a held push and a wrench on the finger every few control steps */
static void wrench_hook(rs_world_t *w, uint64_t k)
{
    rs_status_t st;
    if (k == 0) {
        double f = 1.0;
        rs_set_commands(w->model, w->data, 0, &f, 1, &st);
    }
    if (k % 20 == 0) {
        double f = inside(-1.0, 1.0, 1.0);
        if (rs_apply_wrench(w->model, w->data, 0, "finger", &f, 1, &st) < 0)
            fprintf(stderr, "wrench: %s\n", st.message);
    }
}

static const char *mm_spec = RS_TEST_BASE_SPEC;

static void spec_run(void)
{
    const char *name = "mobile_manipulator_motion_spec";
    rs_status_t st;
    rs_world_t *w = rs_world_new("mobile_manipulator", NULL, 0, 1, &st);
    if (!w)
        return fail(name, "world", st.message);
    if (rs_set_motion_spec(w->model, w->data, mm_spec, strlen(mm_spec), &st) < 0)
        fail(name, "motion spec", st.message);
    else
        run_world(name, w, STEPS, NULL);
    rs_world_destroy(&w);
}

/* Monte Carlo: runs of the finger with drawn initial conditions; the digest of their outputs */
static void montecarlo_run(void)
{
    const char *name = "finger_montecarlo";
    rs_status_t st;
    rs_world_t *w = rs_world_new("finger", NULL, 0, 1, &st);
    if (!w)
        return fail(name, "world", st.message);
    const rs_model_t *m = w->model;
    rs_mc_sampler_t s[2];
    rs_mc_item_t items[4];
    const char *item_names[] = {"finger.x_f", "finger.v_f", "finger.x_o", "finger.v_o"};
    int ok = rs_mc_parse_sampler(m, "finger.object_x0", "uniform", 1.0, 2.0, &s[0], &st) == 0 &&
             rs_mc_parse_sampler(m, "finger.finger_x0", "normal", 0.0, 0.1, &s[1], &st) == 0;
    for (int i = 0; ok && i < 4; i++)
        ok = rs_mc_parse_item(m, item_names[i], &items[i], &st) == 0;
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, RS_DIGEST_BYTES);
    double u = 1.5;
    for (uint64_t run = 0; ok && run < 8; run++) {
        double values[2], out[4], t_end;
        rs_mc_draw(s, 2, 42, run, values);
        ok = rs_mc_run(m, &u, s, 2, values, 7 + run, STEPS, NULL, items, 4, out, &t_end, &st) == 0;
        crypto_generichash_update(&h, (const unsigned char *)out, sizeof out);
        crypto_generichash_update(&h, (const unsigned char *)&t_end, sizeof t_end);
    }
    rs_world_destroy(&w);
    if (!ok)
        return fail(name, "run", st.message);
    unsigned char b[RS_DIGEST_BYTES];
    crypto_generichash_final(&h, b, sizeof b);
    char hex[2 * RS_DIGEST_BYTES + 1];
    for (int i = 0; i < RS_DIGEST_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    record(name, hex);
}

/* A task: random actions one control step each, a new episode (seeded in turn) when one ends;
 * the digest of the episodes' final digests (a reset restarts the chain) */
static void task_run(const char *task)
{
    char name[64];
    snprintf(name, sizeof name, "task_%s", task);
    rs_status_t st;
    rs_world_t *w = rs_world_new_task(task, NULL, NULL, 0, 7, &st);
    if (!w)
        return fail(name, "world", st.message);
    const rs_task_t *t = w->task;
    uint64_t episodes = 0;
    seed_from(name);
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, RS_DIGEST_BYTES);
    uint8_t b[RS_DIGEST_BYTES];
    for (int k = 0; k < STEPS; k++) {
        double a[RS_TASK_MAX_ACT];
        for (int i = 0; i < t->nact; i++)
            a[i] = inside(t->act[i].lower, t->act[i].upper, 2.0);
        if (rs_world_task_step(w, a, (size_t)t->nact, 1, &st) < 0) {
            rs_world_destroy(&w);
            return fail(name, "step", st.message);
        }
        if (w->data->task[RS_TASK_TERMINATED] != 0.0 || w->data->task[RS_TASK_TRUNCATED] != 0.0) {
            rs_digest_bytes(w->data, b);
            crypto_generichash_update(&h, b, sizeof b);
            rs_world_reset(w, 100 + ++episodes, &st);
        }
    }
    rs_digest_bytes(w->data, b);
    crypto_generichash_update(&h, b, sizeof b);
    crypto_generichash_final(&h, b, sizeof b);
    char hex[2 * RS_DIGEST_BYTES + 1];
    for (int i = 0; i < RS_DIGEST_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    printf("%s: %llu episodes ended\n", name, (unsigned long long)episodes);
    record(name, hex);
    rs_world_destroy(&w);
}

static void run_all(void)
{
    for (const char *const *p = rs_preset_names(); *p; p++) {
        char name[64];
        snprintf(name, sizeof name, "preset_%s", *p);
        preset_run(name, *p, NULL, 0, NULL);
    }
    static const double models[] = {0.0, 1.0, 2.0}, laws[] = {0.0, 1.0};
    for (int i = 0; i < 3; i++) {
        char name[64];
        rs_param_t p = {"brick", "contact_model", &models[i], 1};
        snprintf(name, sizeof name, "brick_drop_contact_model_%d", i);
        preset_run(name, "brick_drop", &p, 1, NULL);
        rs_param_t q = {"finger", "contact_model", &models[i], 1};
        snprintf(name, sizeof name, "finger_contact_model_%d", i);
        preset_run(name, "finger", &q, 1, NULL);
    }
    for (int i = 0; i < 2; i++) {
        char name[64];
        rs_param_t p = {"finger", "friction_law", &laws[i], 1};
        snprintf(name, sizeof name, "finger_friction_law_%d", i);
        preset_run(name, "finger", &p, 1, NULL);
    }
    preset_run("finger_schedule", "finger", NULL, 0, schedule_hook);
    preset_run("finger_wrench", "finger", NULL, 0, wrench_hook);
    spec_run();
    montecarlo_run();
    for (const char *const *t = rs_task_names(); *t; t++)
        task_run(*t);
}

int main(int argc, char **argv)
{
    int update = argc > 1 && strcmp(argv[1], "--update") == 0;
    const char *path = argc > 1 + update ? argv[1 + update] : ROBOSIM_GOLDEN_FILE;
    if (sodium_init() < 0)
        return 1;
    run_all();
    if (update) {
        FILE *f = fopen(path, "w");
        if (!f || failures) {
            fprintf(stderr, "test_golden: %s not written (%d scenarios failed)\n", path, failures);
            return 1;
        }
        fprintf(f, "# The golden corpus: each scenario of tests/core/test_golden.c and the state digest\n"
                   "# it ends with. Regenerate with `scripts/golden --update` (only when a change\n"
                   "# alters the physics on purpose; its commit message says why).\n");
        for (int i = 0; i < nresults; i++)
            fprintf(f, "%s %s\n", results[i].name, results[i].hex);
        fclose(f);
        printf("test_golden: wrote %d digests to %s\n", nresults, path);
        return 0;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "test_golden: cannot read %s; create it with scripts/golden --update\n", path);
        return 1;
    }
    char line[256];
    int checked = 0, diverged = 0, missing = 0;
    int seen[MAX_SCENARIOS] = {0};
    while (fgets(line, sizeof line, f)) {
        char name[64], hex[80];
        if (line[0] == '#' || sscanf(line, "%63s %79s", name, hex) != 2)
            continue;
        int i = 0;
        while (i < nresults && strcmp(results[i].name, name) != 0)
            i++;
        if (i == nresults) {
            fprintf(stderr, "DIVERGED: scenario %s is in the corpus but this build has no such scenario\n", name);
            diverged++;
            continue;
        }
        seen[i] = 1;
        checked++;
        if (strcmp(results[i].hex, hex) != 0) {
            fprintf(stderr, "DIVERGED: scenario %s: expected %s, this build gives %s\n", name, hex,
                    results[i].hex);
            diverged++;
        }
    }
    fclose(f);
    for (int i = 0; i < nresults; i++)
        if (!seen[i]) {
            fprintf(stderr, "DIVERGED: scenario %s (%s) is not in the corpus\n", results[i].name,
                    results[i].hex);
            missing++;
        }
    printf("test_golden: %d scenarios checked, %d diverged, %d not in the corpus (%s)\n", checked,
           diverged, missing, path);
    if (diverged || missing || failures || checked == 0) {
        fprintf(stderr,
                "test_golden: this build does not reproduce the golden corpus. If a change alters "
                "the physics on purpose, regenerate it with `scripts/golden --update` and say why "
                "in the commit message; otherwise the change broke determinism.\n");
        return 1;
    }
    return 0;
}
