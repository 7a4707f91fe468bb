/*
** blas.h — OpenBLAS, loaded on first use.
**
** shmapi's float dot_general runs on OpenBLAS's sgemm/dgemm.  Loading the
** library costs several milliseconds (it carries kernels for every CPU),
** which would triple the start-up time of every `shmapi` run, so it is
** opened with dlopen the first time a float matrix product runs.
*/
#ifndef SHM_BLAS_H
#define SHM_BLAS_H

#include <cblas.h>

void blas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
                const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
void blas_dgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
                const double *a, int lda, const double *b, int ldb, double beta, double *c, int ldc);

#endif
