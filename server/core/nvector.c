/* robosim's N_Vector (rs_nvector.h): a slab of slots per integrator, one static ops table. */
#include "rs_nvector.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One vector: SUNDIALS' generic header, our content, then the values (a clone's own). */
typedef struct {
    struct _generic_N_Vector v;
    rs_nvec_content_t c;
    sunrealtype data[];
} slot_t;

struct rs_nvec_slab {
    SUNContext ctx;
    sunindextype n;
    size_t slot_bytes;
    int nslots;
    uint32_t used; /* bit i: slot i holds a live vector */
    int beyond;    /* live vectors malloc'd beyond the slots */
    char *slots;
};

#define SLAB_HEAD ((sizeof(rs_nvec_slab_t) + 15) & ~(size_t)15)

static size_t slot_bytes(sunindextype n)
{
    return sizeof(slot_t) + (size_t)n * sizeof(sunrealtype);
}

size_t rs_nvec_slab_bytes(sunindextype n, int slots)
{
    return SLAB_HEAD + (size_t)slots * slot_bytes(n);
}

rs_nvec_slab_t *rs_nvec_slab_init(void *mem, sunindextype n, int slots, SUNContext ctx)
{
    rs_nvec_slab_t *slab = mem;
    memset(slab, 0, sizeof *slab);
    slab->ctx = ctx;
    slab->n = n;
    slab->slot_bytes = slot_bytes(n);
    slab->nslots = slots < 0 ? 0 : slots > 32 ? 32 : slots;
    slab->slots = (char *)mem + SLAB_HEAD;
    return slab;
}

void rs_nvec_slab_count(const rs_nvec_slab_t *slab, int *in_slots, int *beyond)
{
    *in_slots = __builtin_popcount(slab->used);
    *beyond = slab->beyond;
}

static const struct _generic_N_Vector_Ops nvec_ops;

/* A new vector of the slab: its first free slot, else one malloc'd block of the same layout.
 * own_data: the values are the slot's (a clone), else NULL until set (an empty clone). */
static N_Vector nvec_new(rs_nvec_slab_t *slab, int own_data)
{
    uint32_t free_slots = ~slab->used & (slab->nslots >= 32 ? ~0u : (1u << slab->nslots) - 1u);
    slot_t *s;
    if (free_slots) {
        int i = __builtin_ctz(free_slots);
        slab->used |= 1u << i;
        s = (slot_t *)(slab->slots + (size_t)i * slab->slot_bytes);
    } else {
        if (!(s = malloc(slab->slot_bytes)))
            return NULL;
        slab->beyond++;
    }
    /* SUNDIALS' ops pointer is not const-qualified; nothing writes through it (robosim never
     * calls the N_VEnable* functions, which would; ARKODE only reads the table) */
    s->v.ops = (N_Vector_Ops)&nvec_ops;
    s->v.content = &s->c;
    s->v.sunctx = slab->ctx;
    s->c.n = slab->n;
    s->c.data = own_data ? s->data : NULL;
    s->c.slab = slab;
    return &s->v;
}

N_Vector rs_nvec_make(rs_nvec_slab_t *slab, sunrealtype *x)
{
    N_Vector v = nvec_new(slab, 0);
    if (v)
        ((rs_nvec_content_t *)v->content)->data = x;
    return v;
}

/* ---- constructors, destructor, utilities ------------------------------------------------ */

static rs_nvec_content_t *content(N_Vector v)
{
    return v->content;
}

static N_Vector_ID nvec_id(N_Vector v)
{
    (void)v;
    return SUNDIALS_NVEC_CUSTOM;
}

static N_Vector nvec_clone(N_Vector w)
{
    return nvec_new(content(w)->slab, 1);
}

static N_Vector nvec_clone_empty(N_Vector w)
{
    return nvec_new(content(w)->slab, 0);
}

static void nvec_destroy(N_Vector v)
{
    rs_nvec_slab_t *slab = content(v)->slab;
    char *p = (char *)v;
    size_t span = (size_t)slab->nslots * slab->slot_bytes;
    if (p >= slab->slots && p < slab->slots + span) {
        slab->used &= ~(1u << ((size_t)(p - slab->slots) / slab->slot_bytes));
    } else {
        slab->beyond--;
        free(v);
    }
}

static void nvec_space(N_Vector v, sunindextype *lrw, sunindextype *liw)
{
    *lrw = content(v)->n;
    *liw = 1;
}

static sunrealtype *nvec_get_array(N_Vector v)
{
    return content(v)->data;
}

static void nvec_set_array(sunrealtype *data, N_Vector v)
{
    content(v)->data = data;
}

static sunindextype nvec_length(N_Vector v)
{
    return content(v)->n;
}

/* ---- element-wise operations ------------------------------------------------------------ */

/* z = a x + b y; a == b as a (x + y) and a == -b as a (x - y), as NVECTOR_SERIAL does: ARKODE's
 * differences of two vectors (a == 1, b == -1) are then exact. */
static void nvec_linear_sum(sunrealtype a, N_Vector x, sunrealtype b, N_Vector y, N_Vector z)
{
    sunindextype n = content(z)->n;
    const sunrealtype *xd = rs_nvec_data(x), *yd = rs_nvec_data(y);
    sunrealtype *zd = rs_nvec_data(z);
    if (a == b)
        for (sunindextype i = 0; i < n; i++)
            zd[i] = a * (xd[i] + yd[i]);
    else if (a == -b)
        for (sunindextype i = 0; i < n; i++)
            zd[i] = a * (xd[i] - yd[i]);
    else
        for (sunindextype i = 0; i < n; i++)
            zd[i] = a * xd[i] + b * yd[i];
}

static void nvec_const(sunrealtype c, N_Vector z)
{
    sunindextype n = content(z)->n;
    sunrealtype *zd = rs_nvec_data(z);
    for (sunindextype i = 0; i < n; i++)
        zd[i] = c;
}

static void nvec_prod(N_Vector x, N_Vector y, N_Vector z)
{
    sunindextype n = content(z)->n;
    const sunrealtype *xd = rs_nvec_data(x), *yd = rs_nvec_data(y);
    sunrealtype *zd = rs_nvec_data(z);
    for (sunindextype i = 0; i < n; i++)
        zd[i] = xd[i] * yd[i];
}

static void nvec_div(N_Vector x, N_Vector y, N_Vector z)
{
    sunindextype n = content(z)->n;
    const sunrealtype *xd = rs_nvec_data(x), *yd = rs_nvec_data(y);
    sunrealtype *zd = rs_nvec_data(z);
    for (sunindextype i = 0; i < n; i++)
        zd[i] = xd[i] / yd[i];
}

/* z = c x (c == 1: a copy, which is what ARKODE asks for most) */
static void nvec_scale(sunrealtype c, N_Vector x, N_Vector z)
{
    sunindextype n = content(z)->n;
    const sunrealtype *xd = rs_nvec_data(x);
    sunrealtype *zd = rs_nvec_data(z);
    if (c == 1.0) {
        if (zd != xd)
            memcpy(zd, xd, (size_t)n * sizeof *zd);
        return;
    }
    for (sunindextype i = 0; i < n; i++)
        zd[i] = c * xd[i];
}

static void nvec_abs(N_Vector x, N_Vector z)
{
    sunindextype n = content(z)->n;
    const sunrealtype *xd = rs_nvec_data(x);
    sunrealtype *zd = rs_nvec_data(z);
    for (sunindextype i = 0; i < n; i++)
        zd[i] = fabs(xd[i]);
}

static void nvec_inv(N_Vector x, N_Vector z)
{
    sunindextype n = content(z)->n;
    const sunrealtype *xd = rs_nvec_data(x);
    sunrealtype *zd = rs_nvec_data(z);
    for (sunindextype i = 0; i < n; i++)
        zd[i] = 1.0 / xd[i];
}

static void nvec_add_const(N_Vector x, sunrealtype b, N_Vector z)
{
    sunindextype n = content(z)->n;
    const sunrealtype *xd = rs_nvec_data(x);
    sunrealtype *zd = rs_nvec_data(z);
    for (sunindextype i = 0; i < n; i++)
        zd[i] = xd[i] + b;
}

/* ---- reductions ------------------------------------------------------------------------- */

static sunrealtype nvec_max_norm(N_Vector x)
{
    sunindextype n = content(x)->n;
    const sunrealtype *xd = rs_nvec_data(x);
    sunrealtype max = 0.0;
    for (sunindextype i = 0; i < n; i++)
        if (fabs(xd[i]) > max)
            max = fabs(xd[i]);
    return max;
}

/* sqrt(sum (x_i w_i)^2 / n): ARKODE's error norm */
static sunrealtype nvec_wrms_norm(N_Vector x, N_Vector w)
{
    sunindextype n = content(x)->n;
    const sunrealtype *xd = rs_nvec_data(x), *wd = rs_nvec_data(w);
    sunrealtype sum = 0.0;
    for (sunindextype i = 0; i < n; i++) {
        sunrealtype p = xd[i] * wd[i];
        sum += p * p;
    }
    return sqrt(sum / (sunrealtype)n);
}

static sunrealtype nvec_min(N_Vector x)
{
    sunindextype n = content(x)->n;
    const sunrealtype *xd = rs_nvec_data(x);
    sunrealtype min = n > 0 ? xd[0] : 0.0;
    for (sunindextype i = 1; i < n; i++)
        if (xd[i] < min)
            min = xd[i];
    return min;
}

/* ---- fused operations ------------------------------------------------------------------- */

#define LINCOMB_MAX 16

/* Two values at once (GCC's and Clang's vector extension: one SSE2 register on x86-64); the
 * arithmetic per value is the scalar one, so results are the same bits. */
typedef sunrealtype pair_t __attribute__((vector_size(2 * sizeof(sunrealtype))));

static inline pair_t load2(const sunrealtype *p)
{
    pair_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* z = sum c_i X_i, the terms of each element added in the order of the vectors. ERKStep's
 * stages and solutions, and the Hermite interpolation root finding evaluates, are such sums
 * (3-8 terms, some with X[0] == z). Two elements at a time, all terms summed in registers
 * before z is written, so any X[i] may be z (its cost: docs/design.md). */
static int nvec_linear_combination(int nvec, sunrealtype *c, N_Vector *X, N_Vector z)
{
    if (nvec < 1)
        return -1;
    if (nvec == 2) { /* as N_VLinearSum (its a == b and a == -b forms) */
        nvec_linear_sum(c[0], X[0], c[1], X[1], z);
        return 0;
    }
    sunindextype n = content(z)->n, j = 0;
    sunrealtype *zd = rs_nvec_data(z);
    if (nvec > LINCOMB_MAX) { /* a table of more than 15 stages: the same sums, one by one */
        for (; j < n; j++) {
            sunrealtype s = c[0] * rs_nvec_data(X[0])[j];
            for (int i = 1; i < nvec; i++)
                s += c[i] * rs_nvec_data(X[i])[j];
            zd[j] = s;
        }
        return 0;
    }
    const sunrealtype *xd[LINCOMB_MAX];
    for (int i = 0; i < nvec; i++)
        xd[i] = rs_nvec_data(X[i]);
    /* six elements (three pairs) per pass over the terms: each coefficient is read once per
     * six elements instead of once per two; the sums are the same */
    for (; j + 5 < n; j += 6) {
        pair_t s0 = c[0] * load2(xd[0] + j), s1 = c[0] * load2(xd[0] + j + 2);
        pair_t s2 = c[0] * load2(xd[0] + j + 4);
        for (int i = 1; i < nvec; i++) {
            const sunrealtype *x = xd[i] + j;
            s0 += c[i] * load2(x);
            s1 += c[i] * load2(x + 2);
            s2 += c[i] * load2(x + 4);
        }
        memcpy(zd + j, &s0, sizeof s0);
        memcpy(zd + j + 2, &s1, sizeof s1);
        memcpy(zd + j + 4, &s2, sizeof s2);
    }
    for (; j + 1 < n; j += 2) {
        pair_t s = c[0] * load2(xd[0] + j);
        for (int i = 1; i < nvec; i++)
            s += c[i] * load2(xd[i] + j);
        memcpy(zd + j, &s, sizeof s);
    }
    if (j < n) {
        sunrealtype s = c[0] * xd[0][j];
        for (int i = 1; i < nvec; i++)
            s += c[i] * xd[i][j];
        zd[j] = s;
    }
    return 0;
}

/* Z_i = c_i x + Y_i, i < nvec */
static int nvec_scale_add_multi(int nvec, sunrealtype *c, N_Vector x, N_Vector *Y, N_Vector *Z)
{
    if (nvec < 1)
        return -1;
    sunindextype n = content(x)->n;
    const sunrealtype *xd = rs_nvec_data(x);
    for (int i = 0; i < nvec; i++) {
        const sunrealtype *yd = rs_nvec_data(Y[i]);
        sunrealtype *zd = rs_nvec_data(Z[i]);
        for (sunindextype j = 0; j < n; j++)
            zd[j] = c[i] * xd[j] + yd[j];
    }
    return 0;
}

/* Operations not listed stay NULL: ARKODE's ERKStep does not call them (SUNDIALS' wrappers of
 * the vector-array operations fall back to the ones here). */
static const struct _generic_N_Vector_Ops nvec_ops = {
    .nvgetvectorid = nvec_id,
    .nvclone = nvec_clone,
    .nvcloneempty = nvec_clone_empty,
    .nvdestroy = nvec_destroy,
    .nvspace = nvec_space,
    .nvgetarraypointer = nvec_get_array,
    .nvsetarraypointer = nvec_set_array,
    .nvgetlength = nvec_length,
    .nvlinearsum = nvec_linear_sum,
    .nvconst = nvec_const,
    .nvprod = nvec_prod,
    .nvdiv = nvec_div,
    .nvscale = nvec_scale,
    .nvabs = nvec_abs,
    .nvinv = nvec_inv,
    .nvaddconst = nvec_add_const,
    .nvmaxnorm = nvec_max_norm,
    .nvwrmsnorm = nvec_wrms_norm,
    .nvmin = nvec_min,
    .nvlinearcombination = nvec_linear_combination,
    .nvscaleaddmulti = nvec_scale_add_multi,
};
