/* The Monte Carlo samplers: parsing "entity.name[k]" items and their distributions against a
 * model, and the seeded draws (Monte Carlo runs, randomized resets and declared tasks share
 * them); see rs_montecarlo.h. */
#include "rs_montecarlo.h"
#include "rs_robot.h"
#include "rs_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Split "entity.name[k]" into the entity index, the name (copied to name[RS_NAME_MAX]) and k
 * (-1 when absent). */
static int split_item(const rs_model_t *m, const char *item, char *name, int *k, rs_status_t *st)
{
    const char *dot = item ? strchr(item, '.') : NULL;
    if (!dot || dot == item || !dot[1])
        return rs_fail(st, RS_EINVAL,
                       "item '%s' is not 'entity.name' (e.g. 'arm.theta0[0]', 'arm.theta1')",
                       item ? item : "");
    char ent[RS_NAME_MAX];
    size_t elen = (size_t)(dot - item), nlen = strlen(dot + 1);
    if (elen >= sizeof ent || nlen >= RS_NAME_MAX)
        return rs_fail(st, RS_EINVAL, "item '%.64s...' is too long", item);
    memcpy(ent, item, elen);
    ent[elen] = 0;
    memcpy(name, dot + 1, nlen + 1);
    *k = -1;
    char *br = strchr(name, '[');
    if (br) {
        char *end = NULL;
        long v = strtol(br + 1, &end, 10);
        if (end == br + 1 || *end != ']' || end[1] || v < 0 || v >= RS_MAX_PARAM_VALUES)
            return rs_fail(st, RS_EINVAL, "item '%s': the element is '[k]', k a small integer >= 0",
                           item);
        *k = (int)v;
        *br = 0;
    }
    int e = rs_model_entity(m, ent);
    if (e < 0)
        return rs_fail(st, RS_ENOTFOUND, "item '%s': this world has no entity '%s'", item, ent);
    return e;
}

int rs_mc_parse_sampler(const rs_model_t *m, const char *item, const char *dist, double a,
                        double b, rs_mc_sampler_t *out, rs_status_t *st)
{
    char name[RS_NAME_MAX];
    int k, e = split_item(m, item, name, &k, st);
    if (e < 0)
        return e;
    const rs_entity_model_t *em = &m->ent[e];
    const rs_robot_t *r = em->robot;
    int pi = 0;
    while (pi < r->np && strcmp(r->params[pi].name, name) != 0)
        pi++;
    if (pi == r->np)
        return rs_fail(st, RS_ENOTFOUND,
                       "sampler '%s': '%s' (a %s) has no parameter '%s'; samplers set "
                       "initial-condition parameters (GetSpec lists them)",
                       item, em->name, r->kind, name);
    int len = em->plen[pi];
    if (k < 0 && len != 1)
        return rs_fail(st, RS_EINVAL, "sampler '%s': '%s' holds %d values; name one as '%s[k]'",
                       item, name, len, name);
    if (k >= len)
        return rs_fail(st, RS_ERANGE, "sampler '%s': '%s' holds %d values (k < %d)", item, name,
                       len, len);
    int d;
    if (dist && strcmp(dist, "uniform") == 0)
        d = RS_MC_UNIFORM;
    else if (dist && strcmp(dist, "normal") == 0)
        d = RS_MC_NORMAL;
    else
        return rs_fail(st, RS_EINVAL, "sampler '%s': distribution '%s' is not 'uniform' or "
                                      "'normal'", item, dist ? dist : "");
    if (!isfinite(a) || !isfinite(b))
        return rs_fail(st, RS_EINVAL, "sampler '%s': a and b must be finite", item);
    if (d == RS_MC_UNIFORM && b < a)
        return rs_fail(st, RS_EINVAL, "sampler '%s': uniform(a = %g, b = %g) needs a <= b", item,
                       a, b);
    if (d == RS_MC_NORMAL && b < 0)
        return rs_fail(st, RS_EINVAL,
                       "sampler '%s': normal(mean %g, deviation %g) needs a deviation >= 0",
                       item, a, b);
    *out = (rs_mc_sampler_t){e, pi, k < 0 ? 0 : k, d, a, b};
    return 0;
}

int rs_mc_parse_item(const rs_model_t *m, const char *item, rs_mc_item_t *out, rs_status_t *st)
{
    static const char *const task_items[] = {"task.return", "task.terminated", "task.truncated"};
    static const int task_slots[] = {RS_TASK_RETURN, RS_TASK_TERMINATED, RS_TASK_TRUNCATED};
    for (int i = 0; i < 3; i++)
        if (item && !strcmp(item, task_items[i])) {
            *out = (rs_mc_item_t){-1, RS_MC_TASK_VALUE, task_slots[i]};
            return 0;
        }
    char name[RS_NAME_MAX];
    int k, e = split_item(m, item, name, &k, st);
    if (e < 0)
        return e;
    const rs_robot_t *r = m->ent[e].robot;
    if (k >= 0)
        return rs_fail(st, RS_EINVAL, "return item '%s': state variables and sensors are "
                                      "named without '[k]'", item);
    for (int i = 0; i < r->nx; i++)
        if (strcmp(r->state[i].name, name) == 0) {
            *out = (rs_mc_item_t){e, 0, i};
            return 0;
        }
    for (int i = 0; i < r->ns; i++)
        if (strcmp(r->sensors[i].name, name) == 0) {
            *out = (rs_mc_item_t){e, 1, i};
            return 0;
        }
    return rs_fail(st, RS_ENOTFOUND,
                   "return item '%s': '%s' (a %s) has no state variable or sensor '%s' "
                   "(GetSpec lists them)",
                   item, m->ent[e].name, r->kind, name);
}

/* splitmix64 (Steele, Lea, Flood 2014): a counter-based stream, so run i's draws need no
 * other run's */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double unit(uint64_t *state) /* [0, 1), 53 bits */
{
    return (double)(splitmix64(state) >> 11) * 0x1.0p-53;
}

void rs_mc_draw(const rs_mc_sampler_t *s, size_t ns, uint64_t seed, uint64_t run,
                double *values)
{
    uint64_t state = seed;
    state = splitmix64(&state) ^ (run * 0xD1B54A32D192ED03ULL);
    for (size_t j = 0; j < ns; j++) {
        if (s[j].dist == RS_MC_UNIFORM) {
            values[j] = s[j].a + (s[j].b - s[j].a) * unit(&state);
        } else { /* Box-Muller, one of the pair */
            double u1 = unit(&state), u2 = unit(&state);
            values[j] = s[j].a + s[j].b * sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
        }
    }
}
