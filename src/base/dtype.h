/*
** dtype.h — element types.
**
** One X-macro row per dtype: enum tag, short name (what shm programs and
** `show` write), NumPy name (accepted as a synonym), element size, C type,
** and its kind: B bool, I signed integer, U unsigned integer, F float (f32,
** f64), H a 16-bit float (bf16, f16: stored as bits, computed in f32,
** half.h), C complex (two floats or doubles), K a PRNG key (JAX's typed
** key<fry>: one element is the two uint32 words of a threefry key, rng.h).
**
** SHM_DTYPES lists them all; SHM_PLAIN_DTYPES only those whose C type has
** C's arithmetic (kinds B, I, U, F), for loops written once for all of
** them.  The 16-bit floats and the complex types are structs, so a loop
** that forgets them does not compile.
*/
#ifndef SHM_DTYPE_H
#define SHM_DTYPE_H

#include <stdint.h>
#include "common.h"

typedef struct ShmBf16 { uint16_t bits; } ShmBf16;
typedef struct ShmF16 { uint16_t bits; } ShmF16;
typedef struct ShmC64 { float re, im; } ShmC64;
typedef struct ShmC128 { double re, im; } ShmC128;
typedef struct ShmKey { uint32_t w[2]; } ShmKey;

#define SHM_PLAIN_DTYPES(X)                             \
  X(BOOL, "bool", "bool_", 1, uint8_t, 'B')             \
  X(I8, "i8", "int8", 1, int8_t, 'I')                   \
  X(I16, "i16", "int16", 2, int16_t, 'I')               \
  X(I32, "i32", "int32", 4, int32_t, 'I')               \
  X(I64, "i64", "int64", 8, int64_t, 'I')               \
  X(U8, "u8", "uint8", 1, uint8_t, 'U')                 \
  X(U16, "u16", "uint16", 2, uint16_t, 'U')             \
  X(U32, "u32", "uint32", 4, uint32_t, 'U')             \
  X(U64, "u64", "uint64", 8, uint64_t, 'U')             \
  X(F32, "f32", "float32", 4, float, 'F')               \
  X(F64, "f64", "float64", 8, double, 'F')

#define SHM_OTHER_DTYPES(X)                             \
  X(BF16, "bf16", "bfloat16", 2, ShmBf16, 'H')          \
  X(F16, "f16", "float16", 2, ShmF16, 'H')              \
  X(C64, "c64", "complex64", 8, ShmC64, 'C')            \
  X(C128, "c128", "complex128", 16, ShmC128, 'C')     \
  X(KEY_FRY, "key<fry>", "key<fry>", 8, ShmKey, 'K')

#define SHM_DTYPES(X) SHM_PLAIN_DTYPES(X) SHM_OTHER_DTYPES(X)

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

/* Floats of every width (f32, f64, bf16, f16); complex is not. */
static inline bool dtype_is_float(DType d) { return dtype_kinds[d] == 'F' || dtype_kinds[d] == 'H'; }
/* The 16-bit floats. */
static inline bool dtype_is_half(DType d) { return dtype_kinds[d] == 'H'; }
/* Integers, signed or not. */
static inline bool dtype_is_int(DType d) { return dtype_kinds[d] == 'I' || dtype_kinds[d] == 'U'; }
static inline bool dtype_is_unsigned(DType d) { return dtype_kinds[d] == 'U'; }
static inline bool dtype_is_bool(DType d) { return dtype_kinds[d] == 'B'; }
static inline bool dtype_is_complex(DType d) { return dtype_kinds[d] == 'C'; }
/* PRNG keys (key<fry>): no arithmetic, only moved about. */
static inline bool dtype_is_key(DType d) { return dtype_kinds[d] == 'K'; }
/* The real dtype of a complex one's parts (c64: f32); others: itself. */
static inline DType dtype_real(DType d) { return d == DT_C64 ? DT_F32 : d == DT_C128 ? DT_F64 : d; }

/* Look a dtype up by short or NumPy name; -1 if none. */
int dtype_lookup(Str name);
/* "bool, i8, ..., c128": every dtype's short name, for messages. */
extern const char dtype_list_text[];

#endif
