/* Shared models: worlds of the same preset and parameters share one
 * const model; SetParams gives a world a new model (copy on write) and leaves the others'
 * alone; a fork shares its source's; the last world to let go frees it. */
#include "rs_core.h"
#include "rs_snapshot.h"
#include "rs_test.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    rs_status_t st;
    int base = rs_model_shared_count();
    rs_world_t *a = rs_world_new("finger", NULL, 0, 1, &st);
    rs_world_t *b = rs_world_new("finger", NULL, 0, 2, &st);
    double dt[] = {0.02};
    rs_param_t p = {"", "control_dt", dt, 1};
    rs_world_t *c = rs_world_new("finger", &p, 1, 3, &st);
    CHECK(a && b && c, "%s", st.message);
    if (!a || !b || !c)
        return rs_test_done("test_model_share");
    CHECK(a->model == b->model, "two finger worlds with default parameters share one model");
    CHECK(c->model != a->model && c->model->control_dt == 0.02,
          "a world with other parameters has its own model");
    CHECK(rs_model_shared_count() == base + 2, "two models for three worlds (%d)",
          rs_model_shared_count() - base);

    /* copy on write: b's change leaves a's model as it was */
    rs_model_t before = *a->model;
    CHECK(rs_world_set_params(b, &p, 1, &st) == 0, "%s", st.message);
    CHECK(b->model != a->model && b->model->control_dt == 0.02 &&
              memcmp(&before, a->model, sizeof before) == 0,
          "SetParams gives b a new model and a keeps the old one, unchanged");
    CHECK(b->model == c->model, "b now shares c's model (same preset and parameters)");
    CHECK(rs_model_shared_count() == base + 2, "still two models (%d)",
          rs_model_shared_count() - base);
    double bad[] = {-1.0};
    rs_param_t q = {"", "control_dt", bad, 1};
    const rs_model_t *kept = b->model;
    CHECK(rs_world_set_params(b, &q, 1, &st) < 0 && b->model == kept &&
              rs_model_shared_count() == base + 2,
          "a refused SetParams keeps the world's model and makes none");

    /* a fork shares its source's model, and stepping a and b apart changes no model */
    rs_world_t *f = rs_world_fork(a, NULL, 0, &st);
    CHECK(f && f->model == a->model, "a fork shares the model");
    double force = 1.0;
    rs_set_commands(a->model, a->data, 0, &force, 1, &st);
    CHECK(rs_step(a->model, a->data, 20, &st) == 0, "%s", st.message);
    CHECK(memcmp(&before, a->model, sizeof before) == 0, "stepping does not write the model");

    rs_world_destroy(&a);
    CHECK(f && f->model->control_dt == before.control_dt, "the fork keeps the model alive");
    rs_world_destroy(&f);
    CHECK(rs_model_shared_count() == base + 1, "the default model is freed with its last world");
    rs_world_destroy(&b);
    rs_world_destroy(&c);
    CHECK(rs_model_shared_count() == base, "no model left (%d)", rs_model_shared_count() - base);
    return rs_test_done("test_model_share");
}
