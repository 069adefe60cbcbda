/* Writes the seed corpora of the language harnesses from valid inputs, so nothing binary is
 * committed:
 *   make_lang_corpus TASK_DOC_DIR MOTION_SPEC_DIR RANDOMIZE_DIR
 * TASK_DOC_DIR gets every built-in task's document (the -v1 ones with "extends") and
 * documents that use each construct (commands, events, update, at_reset with until, argmin,
 * require, reset items by distribution, value, expression and quantity); MOTION_SPEC_DIR the
 * test fixture's specification and the examples (examples/specs), each behind the byte of
 * every preset that loads it; RANDOMIZE_DIR, for every world the harness knows, ranges over
 * its first entity's scalar parameters (uniform over the parameter's bounds, a normal at
 * their middle). Each seed is checked to be accepted, so the seeds reach past the checks. */
#include "fuzz_lang.h"
#include "motion_spec_fixture.h"
#include "rs_motion_spec.h"
#include "rs_randomize.h"
#include "rs_snapshot.h"
#include "rs_task_doc.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>

static int nseeds;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "make_lang_corpus: %s: %s\n", what, why);
    exit(1);
}

static void write_seed(const char *dir, const char *name, const void *p, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%03d-%s", dir, nseeds++, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        die(path, "cannot write");
}

/* Documents for the constructs the built-in tasks do not all use. */
static const char *const extra_docs[] = {
    /* commands, events, a target drawn at reset, update, reset items by distribution */
    "{\"name\": \"SeedReach-v0\", \"preset\": \"serial_arm\", \"entity\": \"arm\","
    " \"params\": [{\"entity\": \"\", \"name\": \"control_dt\", \"values\": [0.05]}],"
    " \"quantities\": {\"x\": \"arm.x\", \"y\": \"arm.y\", \"q1\": \"arm.theta1\","
    "   \"u1\": {\"command\": \"arm.joint1\"}, \"stops\": {\"events\": \"arm.stop\"},"
    "   \"tx\": {\"dist\": \"uniform\", \"a\": -0.3, \"b\": 0.3},"
    "   \"ty\": {\"dist\": \"normal\", \"a\": 0, \"b\": 0.1},"
    "   \"n\": {\"update\": \"n + 1\", \"init\": 0},"
    "   \"d\": {\"expr\": \"hypot(x - tx, y - ty)\"}},"
    " \"observation\": [{\"expr\": \"x - tx\", \"scale\": 0.5, \"low\": -1, \"high\": 1},"
    "   \"d\", {\"expr\": \"wrap(q1)\", \"name\": \"angle\", \"unit\": \"rad\", \"doc\": \"q\"}],"
    " \"action\": [{\"actuator\": \"joint1\", \"low\": -1, \"high\": 1, \"command\": [-3, 3]},"
    "   {\"actuator\": \"joint2\", \"low\": -1, \"high\": 1, \"command\": [-3, 3]}],"
    " \"reward\": \"-d - 0.01 * u1^2 + if(gt(n, 3), 1, 0)\", \"reward_scale\": 0.5,"
    " \"success\": \"lt(d, 0.002)\", \"termination\": \"gt(stops, 2)\", \"max_steps\": 40,"
    " \"reset\": [{\"item\": \"arm.theta0[0]\", \"dist\": \"uniform\", \"a\": 0.5, \"b\": 1.0},"
    "   {\"item\": \"arm.theta0[1]\", \"dist\": \"normal\", \"a\": 0.2, \"b\": 0.01}],"
    " \"info\": [\"d\", \"success\", \"stops\"], \"clip_observation\": true}",
    /* parameters as quantities, start-only draws redrawn until clear, argmins, require, reset
     * items taking a quantity, a value and an expression */
    "{\"name\":\"SeedRing-v0\",\"preset\":\"diff_drive\",\"entity\":\"robot\","
    "\"params\":[{\"entity\":\"robot\",\"name\":\"obstacles\",\"values\":[0,0,0.5,1,1,0.2]},"
    "{\"entity\":\"robot\",\"name\":\"x0\",\"values\":[-1.5]},"
    "{\"entity\":\"robot\",\"name\":\"y0\",\"values\":[1.5]}],"
    "\"require\":[{\"expr\":\"gt(R, 0.05)\",\"error\":\"the robot must be wider than 5 cm\"}],"
    "\"quantities\":{\"R\":{\"param\":\"robot.robot_radius\"},"
    "\"sx\":{\"at_reset\":\"uniform(-1, 1)\",\"held\":false},"
    "\"sy\":{\"at_reset\":\"normal(0, 0.5)\",\"held\":false},"
    "\"c0\":{\"argmin\":\"hypot(sx - ox, sy - oy) - R - orad\",\"over\":\"robot.obstacles\","
    "\"group\":3,\"as\":[\"ox\",\"oy\",\"orad\"],\"none\":10,\"held\":false,"
    "\"until\":\"ge(c0, 0.2)\",\"redraw\":\"sx\",\"tries\":500,\"error\":\"no room\"},"
    "\"gx\":{\"at_reset\":\"uniform(-1, 1)\",\"until\":\"gt(abs(gx - sx), 0.1)\","
    "\"redraw\":\"gx\",\"tries\":100},"
    "\"x\":\"robot.x\",\"y\":\"robot.y\","
    "\"near_x\":{\"argmin\":\"hypot(x - ox, y - oy) - orad\",\"over\":\"robot.obstacles\","
    "\"group\":3,\"as\":[\"ox\",\"oy\",\"orad\"],\"value\":\"ox\"}},"
    "\"reset\":[{\"item\":\"robot.x0\",\"quantity\":\"sx\"},"
    "{\"item\":\"robot.y0\",\"quantity\":\"sy\"},"
    "{\"item\":\"robot.theta0\",\"expr\":\"uniform(-pi, pi)\"}],"
    "\"observation\":[\"x\",\"y\",\"near_x\",\"gx\"],"
    "\"action\":[{\"actuator\":\"phi1_dot\",\"low\":-1,\"high\":1},"
    "{\"actuator\":\"phi2_dot\",\"low\":-1,\"high\":1}],"
    "\"reward\":\"-abs(x - gx)\",\"max_steps\":20}",
    /* a document extending a built-in one */
    "{\"name\": \"SeedPush-v1\", \"extends\": \"FingerPush-v1\", \"reward\": \"-abs(steps)\"}",
};

static void task_docs(const char *dir)
{
    rs_status_t st;
    int n = 0;
    for (const char *const *name = rs_task_names(); *name; name++) {
        const char *src = rs_task_doc_source(rs_task_find(*name));
        if (!src)
            continue;
        char file[96];
        snprintf(file, sizeof file, "%s.json", *name);
        write_seed(dir, file, src, strlen(src));
        n++;
    }
    for (size_t i = 0; i < sizeof extra_docs / sizeof extra_docs[0]; i++) {
        rs_task_t *t = rs_task_doc_parse(extra_docs[i], strlen(extra_docs[i]), &st);
        if (!t)
            die("a seed document does not parse", st.message);
        rs_world_t *w = rs_world_new_with_task(t, NULL, NULL, 0, 1, &st);
        if (!w)
            die("a seed document's world is refused", st.message);
        rs_world_destroy(&w);
        char file[96];
        snprintf(file, sizeof file, "%s.json", t->name);
        write_seed(dir, file, extra_docs[i], strlen(extra_docs[i]));
        rs_task_doc_destroy(&t);
        n++;
    }
    printf("make_lang_corpus: %d task documents\n", n);
}

/* `doc` behind the byte of each preset whose world loads it; the number written. */
static int spec_seeds(const char *dir, const char *name, const char *doc, size_t len,
                      rs_world_t **worlds, int nworlds)
{
    int n = 0;
    uint8_t *seed = malloc(len + 1);
    memcpy(seed + 1, doc, len);
    for (int i = 0; i < nworlds; i++) {
        rs_status_t st;
        rs_world_t *w = rs_world_fork(worlds[i], NULL, 0, &st);
        if (!w)
            die("fork", st.message);
        if (rs_set_motion_spec(w->model, w->data, doc, len, &st) == 0) {
            char file[160];
            snprintf(file, sizeof file, "%s-on-%s", name, w->model->preset);
            seed[0] = (uint8_t)i;
            write_seed(dir, file, seed, len + 1);
            n++;
        }
        rs_world_destroy(&w);
    }
    free(seed);
    return n;
}

static void motion_specs(const char *dir, const char *examples)
{
    rs_world_t *worlds[FUZZ_MAX_WORLDS];
    int nworlds = fuzz_lang_worlds(worlds, 0), n = 0;
    static const char fixture[] = RS_TEST_BASE_SPEC;
    if ((n += spec_seeds(dir, "fixture", fixture, sizeof fixture - 1, worlds, nworlds)) == 0)
        die("the test fixture's specification", "no preset loads it");
    DIR *d = opendir(examples);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 8 || strcmp(e->d_name + len - 7, ".jsonld") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", examples, e->d_name);
        FILE *f = fopen(path, "rb");
        static char buf[1 << 20];
        size_t got = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f)
            fclose(f);
        int k = spec_seeds(dir, e->d_name, buf, got, worlds, nworlds);
        if (k == 0)
            die(path, "no preset loads it");
        n += k;
    }
    if (d)
        closedir(d);
    for (int i = 0; i < nworlds; i++)
        rs_world_destroy(&worlds[i]);
    printf("make_lang_corpus: %d motion specifications\n", n);
}

static void randomize_ranges(const char *dir)
{
    rs_world_t *worlds[FUZZ_MAX_WORLDS];
    int nworlds = fuzz_lang_worlds(worlds, 1), n = 0;
    for (int i = 0; i < nworlds; i++) {
        const rs_entity_model_t *em = &worlds[i]->model->ent[0];
        char text[2048];
        size_t len = 0;
        text[len++] = (char)i;
        int items = 0;
        for (int p = 0; p < em->robot->np && items < 3; p++) {
            const rs_param_desc_t *pd = &em->robot->params[p];
            if (em->plen[p] != 1 || !isfinite(pd->lower) || !isfinite(pd->upper) ||
                !(pd->lower < pd->upper))
                continue;
            double mid = em->p[pd->offset];
            char line[256];
            int k = items % 2 == 0
                        ? snprintf(line, sizeof line, "%s.%s uniform %.17g %.17g\n", em->name,
                                   pd->name, fmax(pd->lower, mid - 0.1 * fabs(mid)),
                                   fmin(pd->upper, mid + 0.1 * fabs(mid)))
                        : snprintf(line, sizeof line, "%s.%s normal %.17g %.17g\n", em->name,
                                   pd->name, mid, 0.01 * fabs(mid));
            /* keep the line only if the world accepts the ranges so far with it */
            memcpy(text + len, line, (size_t)k);
            rs_randomize_item_t its[8];
            char copy[2048];
            memcpy(copy, text + 1, len + (size_t)k - 1);
            copy[len + (size_t)k - 1] = 0;
            size_t m = 0;
            for (char *ln = copy, *next; ln && *ln && m < 8; ln = next) {
                next = strchr(ln, '\n');
                if (next)
                    *next++ = 0;
                char item[128], dist[16];
                double a, b;
                if (sscanf(ln, "%127s %15s %lf %lf", item, dist, &a, &b) != 4)
                    break;
                its[m].item = strdup(item);
                its[m].dist = strdup(dist);
                its[m].a = a, its[m].b = b;
                m++;
            }
            rs_status_t st;
            rs_world_t *w = rs_world_fork(worlds[i], NULL, 0, &st);
            int ok = w && rs_world_set_randomize(w, its, m, &st) == 0 &&
                     rs_world_reset(w, 1, &st) == 0;
            rs_world_destroy(&w);
            for (size_t j = 0; j < m; j++) {
                free((char *)its[j].item);
                free((char *)its[j].dist);
            }
            if (ok) {
                len += (size_t)k;
                items++;
            }
        }
        if (items) {
            char file[96];
            snprintf(file, sizeof file, "%s-%d-items", worlds[i]->task ? worlds[i]->task->name
                                                                        : worlds[i]->model->preset,
                     items);
            write_seed(dir, file, text, len);
            n++;
        }
    }
    for (int i = 0; i < nworlds; i++)
        rs_world_destroy(&worlds[i]);
    if (n == 0)
        die("randomize", "no world took any range");
    printf("make_lang_corpus: %d randomize seeds\n", n);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: make_lang_corpus TASK_DOC_DIR MOTION_SPEC_DIR RANDOMIZE_DIR\n");
        return 2;
    }
    task_docs(argv[1]);
    motion_specs(argv[2], ROBOSIM_SOURCE_DIR "/examples/specs");
    randomize_ranges(argv[3]);
    return 0;
}
