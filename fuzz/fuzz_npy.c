/*
** fuzz_npy.c — libFuzzer harness: NumPy files (npy.c) from arbitrary bytes.
**
** An input that begins as a zip archive does ("PK") is read as an .npz
** archive (its member "x", through libzip from memory), any other as a
** .npy file.  What parses is printed (to /dev/null), written back with
** npy_encode and parsed again, which must give the same array.  As in the
** other harnesses, one input in four has an allocation fail, and nothing
** may stay allocated afterwards.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"
#include "npprint.h"
#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void free_at(void *pp) { mem_free(*(void **)pp); }
static void release(void *a) { arr_unref(a); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
  if ((h & 3) == 0) mem_fail_after(1 + (long)((h >> 2) % 400));
  char err[NPY_ERRLEN];
  ErrJmp j;
  if (ERR_TRY(&j)) {
    bool zip = size >= 2 && data[0] == 'P' && data[1] == 'K';
    Array *a = zip ? npy_parse_npz(data, size, "x", err) : npy_parse(data, size, "fuzz.npy", err);
    if (a) {
      err_defer(release, a);
      Buf b = {0};
      err_defer(buf_release, &b);
      if (a->size <= 100000) fmt_array(&b, a);
      err_undefer(&b);
      buf_free(&b);
      unsigned char *enc = NULL;
      size_t n;
      err_defer(free_at, &enc);
      npy_encode(a, &enc, &n);
      Array *again = npy_parse(enc, n, "again", err);
      if (!again || !arr_identical(a, again)) {
        fprintf(stderr, "fuzz: the array does not read back as it was written\n");
        abort();
      }
      arr_unref(again);
      err_undefer(&enc);
      mem_free(enc);
      err_undefer(a);
      arr_unref(a);
    }
    err_end(&j);
  }
  mem_fail_after(0);
  if (mem_in_use() != 0) {
    fprintf(stderr, "fuzz: %zu bytes still allocated after the input was released\n", mem_in_use());
    abort();
  }
  return 0;
}
