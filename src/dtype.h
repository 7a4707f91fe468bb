/*
** dtype.h — element types.
**
** One X-macro row per dtype: enum tag, short name (what shm programs and
** `show` write), NumPy name (accepted as a synonym), element size, C type,
** and its kind (B bool, I signed integer, F float).
*/
#ifndef SHM_DTYPE_H
#define SHM_DTYPE_H

#include <stdint.h>
#include "common.h"

#define SHM_DTYPES(X)                                   \
  X(BOOL, "bool", "bool_", 1, uint8_t, 'B')             \
  X(I32, "i32", "int32", 4, int32_t, 'I')               \
  X(I64, "i64", "int64", 8, int64_t, 'I')               \
  X(F32, "f32", "float32", 4, float, 'F')               \
  X(F64, "f64", "float64", 8, double, 'F')

typedef enum DType {
#define X(tag, name, npname, size, ctype, kind) DT_##tag,
  SHM_DTYPES(X)
#undef X
  DT_COUNT
} DType;

extern const char *const dtype_names[DT_COUNT];
extern const char *const dtype_npnames[DT_COUNT];
extern const uint8_t dtype_sizes[DT_COUNT];
extern const char dtype_kinds[DT_COUNT];

static inline bool dtype_is_float(DType d) { return dtype_kinds[d] == 'F'; }
static inline bool dtype_is_int(DType d) { return dtype_kinds[d] == 'I'; }
static inline bool dtype_is_bool(DType d) { return dtype_kinds[d] == 'B'; }

/* Look a dtype up by short or NumPy name; -1 if none. */
int dtype_lookup(Str name);

#endif
