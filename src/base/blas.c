/*
** blas.c — opening OpenBLAS lazily (see blas.h).
*/
#include "blas.h"
#include "dynlib.h"
#include "err.h"

static struct {
  __typeof__(cblas_sgemm) *cblas_sgemm;
  __typeof__(cblas_dgemm) *cblas_dgemm;
} lib;
static DynLib blas = DYN_LIB_INIT;

/* Open the library and find the two entry points (dyn_load: once). */
static void open_lib(void) {
  static const char *const names[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3", NULL};
  void *h = dyn_open(names, blas.why, sizeof blas.why);
  bool ok = h != NULL;
  DYN_SYM(lib, h, cblas_sgemm, ok, blas.why, sizeof blas.why);
  DYN_SYM(lib, h, cblas_dgemm, ok, blas.why, sizeof blas.why);
  blas.ok = ok;
}

static void load(void) {
  if (!dyn_load(&blas, open_lib)) err_throw("matrix products need OpenBLAS (libopenblas.so.0): %s", blas.why);
}

void blas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
                const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  load();
  lib.cblas_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blas_dgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
                const double *a, int lda, const double *b, int ldb, double beta, double *c, int ldc) {
  load();
  lib.cblas_dgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
