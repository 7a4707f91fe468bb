/*
** fmt_driver.c — feed arrays through fmt_array, for comparison with NumPy.
**
** Reads arrays from stdin, one after another, each as whitespace-separated
** tokens:
**
**     <dtype> <rank> <dim_0> ... <dim_rank-1> <value> ...   (size values)
**
** where <dtype> is bool, i32, i64, f32 or f64.  Integer and bool values are
** decimal (bool: 0 or 1).  Float values are the IEEE bit patterns in hex
** (8 digits for f32, 16 for f64), so every value — -0.0, NaN, subnormals —
** arrives exactly.  For each array it writes fmt_array's output followed by
** a newline and the delimiter line "@@@END@@@".
**
** Build (from the repository root):
**   gcc -std=c11 -Wall -Wextra -O2 -Isrc/base tests/print/_compare/fmt_driver.c \
**       src/base/npprint.c src/base/array.c src/base/mem.c src/base/err.c src/base/dtype.c src/base/buf.c \
**       -lm -o /tmp/fmt_driver
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "array.h"
#include "buf.h"
#include "npprint.h"

/* Read one array and print it; false at end of input. */
static bool one_array(Buf *out) {
  char name[16];
  int rank;
  int64_t shape[SHM_MAXRANK];

  if (scanf("%15s", name) != 1) return false;
  int dt = dtype_lookup(str_c(name));
  if (dt < 0 || scanf("%d", &rank) != 1 || rank < 0 || rank > SHM_MAXRANK) {
    fprintf(stderr, "fmt_driver: bad header at '%s'\n", name);
    exit(2);
  }
  for (int i = 0; i < rank; i++)
    if (scanf("%" SCNd64, &shape[i]) != 1) {
      fprintf(stderr, "fmt_driver: bad shape\n");
      exit(2);
    }
  Array *a = arr_new((DType)dt, rank, shape);
  for (int64_t i = 0; i < a->size; i++) {
    int ok;
    if (dt == DT_F32) {
      uint32_t bits;
      ok = scanf("%" SCNx32, &bits) == 1;
      memcpy((float *)a->data + i, &bits, sizeof bits);
    } else if (dt == DT_F64) {
      uint64_t bits;
      ok = scanf("%" SCNx64, &bits) == 1;
      memcpy((double *)a->data + i, &bits, sizeof bits);
    } else {
      int64_t v;
      ok = scanf("%" SCNd64, &v) == 1;
      arr_seti(a, i, v);
    }
    if (!ok) {
      fprintf(stderr, "fmt_driver: bad value\n");
      exit(2);
    }
  }
  buf_reset(out);
  fmt_array(out, a);
  fputs(buf_cstr(out), stdout);
  fputs("\n@@@END@@@\n", stdout);
  arr_unref(a);
  return true;
}

/* Format every array on stdin. */
int main(void) {
  Buf out = {0};
  while (one_array(&out)) {
  }
  buf_free(&out);
  return 0;
}
