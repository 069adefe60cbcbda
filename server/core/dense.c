/* Small dense linear systems: LU with partial pivoting from SUNDIALS' dense routines
 * (SUNDlsMat_denseGETRF / SUNDlsMat_denseGETRS, sundials_dense.h; in the ARKODE library the core
 * already links, built with -ffp-contract=off on both platforms, so the bits are the same on
 * x86-64 and arm64 as the integrator's). */
#include "rs_core.h"

#include <sundials/sundials_dense.h>

int rs_dense_solve(int n, const double *A, double *b)
{
    if (n <= 0 || n > RS_DENSE_MAX)
        return -1;
    /* SUNDIALS' layout: column-major, an array of column pointers */
    double lu[RS_DENSE_MAX * RS_DENSE_MAX], *cols[RS_DENSE_MAX];
    sunindextype piv[RS_DENSE_MAX];
    for (int j = 0; j < n; j++) {
        cols[j] = lu + (size_t)j * (size_t)n;
        for (int i = 0; i < n; i++)
            cols[j][i] = A[i * n + j];
    }
    if (SUNDlsMat_denseGETRF(cols, n, n, piv) != 0)
        return -1; /* a zero pivot: singular */
    SUNDlsMat_denseGETRS(cols, n, piv, b);
    return 0;
}
