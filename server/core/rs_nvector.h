/* robosim's N_Vector for ARKODE: serial vectors that live in one slab per integrator (core-private,
 * used by integrator.c only).
 *
 * SUNDIALS documents a vector implementation as a struct _generic_N_Vector whose content the
 * implementation defines and whose ops table it fills (sundials_nvector.h, "Implementing a custom
 * NVECTOR"); NVECTOR_SERIAL's allocations suit few large vectors (docs/design.md). Here:
 *   - one static ops table shared by every vector, never freed;
 *   - a vector is one slot [header | content | data] of a slab the caller places in its own
 *     block (the integrator's), so a world's vectors are contiguous; clones beyond the slab's
 *     slots are one malloc each (the same layout);
 *   - only the operations ERKStep and its root finding call (SUNDIALS 6.4 and 7.x: arkode.c's
 *     arkCheckNvector list, the error weights, Hermite interpolation, the stage sums), and the
 *     fused ones they use: linear combination and scale-add-multi. Constraints
 *     (ERKStepSetConstraints), which need nvconstrmask and nvminquotient, are not supported:
 *     ARKODE refuses them with ARK_ILL_INPUT for a vector without these.
 * The kernels are written for short vectors (a robot's state: 2-20 values). Their arithmetic
 * per element is NVECTOR_SERIAL's (a*(x+y) when a == b, sums in the order of the vectors), so
 * results match it where its special cases do. */
#ifndef RS_NVECTOR_H
#define RS_NVECTOR_H

#include <sundials/sundials_nvector.h>

#include <stddef.h>
#include <stdint.h>

typedef struct rs_nvec_slab rs_nvec_slab_t;

/* What a vector's content is: its length, its values (the caller's array for a vector made by
 * rs_nvec_make, its slot's own for a clone) and the slab its clones come from. */
typedef struct {
    sunindextype n;
    sunrealtype *data;
    rs_nvec_slab_t *slab;
} rs_nvec_content_t;

/* A vector's values, without the call through the ops table that N_VGetArrayPointer makes. */
static inline sunrealtype *rs_nvec_data(N_Vector v)
{
    return ((rs_nvec_content_t *)v->content)->data;
}

/* Bytes to reserve for a slab of `slots` vectors of length n (slots at most 32). */
size_t rs_nvec_slab_bytes(sunindextype n, int slots);

/* Lay a slab out in `mem` (rs_nvec_slab_bytes(n, slots) bytes, aligned for doubles; the caller
 * owns and frees it, after every vector of the slab is destroyed). Returns the slab. */
rs_nvec_slab_t *rs_nvec_slab_init(void *mem, sunindextype n, int slots, SUNContext ctx);

/* A vector of the slab's length over the caller's array x (x stays the caller's: destroying the
 * vector does not free it), or NULL when out of memory. Free with N_VDestroy. Its clones
 * (N_VClone, which ARKODE makes of it) come from the slab while it has free slots. */
N_Vector rs_nvec_make(rs_nvec_slab_t *slab, sunrealtype *x);

/* Vectors of the slab alive now: in its slots, and malloc'd beyond them. */
void rs_nvec_slab_count(const rs_nvec_slab_t *slab, int *in_slots, int *beyond);

#endif
