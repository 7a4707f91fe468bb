/*
** dtype.c — the dtype tables, generated from the X-macro in dtype.h.
*/
#include "dtype.h"

const char *const dtype_names[DT_COUNT] = {
#define X(tag, name, npname, size, ctype, kind) name,
    SHM_DTYPES(X)
#undef X
};
const char *const dtype_npnames[DT_COUNT] = {
#define X(tag, name, npname, size, ctype, kind) npname,
    SHM_DTYPES(X)
#undef X
};
const uint8_t dtype_sizes[DT_COUNT] = {
#define X(tag, name, npname, size, ctype, kind) size,
    SHM_DTYPES(X)
#undef X
};
const char dtype_kinds[DT_COUNT] = {
#define X(tag, name, npname, size, ctype, kind) kind,
    SHM_DTYPES(X)
#undef X
};
const char dtype_list_text[] =
    "bool, i8, i16, i32, i64, u8, u16, u32, u64, bf16, f16, f32, f64, c64, c128";

int dtype_lookup(Str name) {
  for (int d = 0; d < DT_COUNT; d++)
    if (str_eqc(name, dtype_names[d]) || str_eqc(name, dtype_npnames[d]))
      return d;
  if (str_eqc(name, "bool_")) return DT_BOOL;
  return -1;
}
