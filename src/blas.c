/*
** blas.c — opening OpenBLAS lazily (see blas.h).
*/
#include <dlfcn.h>
#include "blas.h"
#include "err.h"

typedef void (*SgemmFn)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int, int, int, float, const float *, int,
                        const float *, int, float, float *, int);
typedef void (*DgemmFn)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int, int, int, double, const double *, int,
                        const double *, int, double, double *, int);

static SgemmFn sgemm;
static DgemmFn dgemm;

/* Open the library and find the two entry points, once. */
static void load(void) {
  if (sgemm) return;
  static const char *const names[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3"};
  void *h = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) err_throw("cannot load OpenBLAS (libopenblas.so.0): %s", dlerror());
  union { void *p; SgemmFn f; } s;
  union { void *p; DgemmFn f; } d;
  s.p = dlsym(h, "cblas_sgemm");
  d.p = dlsym(h, "cblas_dgemm");
  if (!s.p || !d.p) err_throw("OpenBLAS has no cblas_sgemm/cblas_dgemm");
  dgemm = d.f;
  sgemm = s.f;
}

void blas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
                const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  load();
  sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blas_dgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
                const double *a, int lda, const double *b, int ldb, double beta, double *c, int ldc) {
  load();
  dgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
