/*
** array.h — n-dimensional arrays.
**
** An Array is a header followed, in the same allocation, by its elements in
** row-major (C) order.  Arrays are reference counted and immutable once
** built: a function that creates an array (arr_new and friends) returns it
** with one reference, fills it, and from then on nobody writes to it.  That
** makes sharing free — an invariant value inside a shard_map body is one
** Array referenced by every instance that holds it.
**
** Ownership rule, followed everywhere: a function returning Array* hands the
** caller a new reference; a function taking Array* borrows it unless its
** comment says it consumes it.  arr_ref/arr_unref adjust the count.
**
** A slab (arr_slab) is the exception to "header then elements": several
** arrays of one dtype and shape in one allocation, their headers in a row
** and their elements after them, contiguous and in the same order, so that
** an elementwise operation can run over all of them at once (eval.c does
** that for the blocks of a value).  Each array of a slab is an ordinary
** array to everyone else, with its own reference count; `slab` points to
** the allocation, freed with the last of its arrays.  A carved slab
** (arr_carve, arr_views) holds only headers: its arrays' elements are
** those of another array, released with the last of them.
**
** A pitched view (arr_views with a pitch) is the one array whose elements
** are not contiguous: a rank-2 block of a bigger rank-2 array, its rows
** `pitch` elements apart.  Only dot_general reads one as it is (BLAS takes
** the row pitch as its leading dimension); eval.c makes them only for a
** shard_map operand whose blocks the body gives to nothing else, and
** arr_contig copies one into an ordinary array.
*/
#ifndef SHM_ARRAY_H
#define SHM_ARRAY_H

#include "common.h"
#include "dtype.h"

typedef struct Array {
  int32_t refc;
  uint8_t dt;                   /* DType */
  uint8_t rank;
  int64_t size;                 /* number of elements (product of shape) */
  int64_t shape[SHM_MAXRANK];
  void *data;                   /* points just past the header, or into the slab */
  struct Slab *slab;            /* NULL, or the slab holding this array */
  int64_t pitch;                /* 0; for a pitched view, its rows' distance in elements */
} Array;

/* A new array with uninitialised elements. */
Array *arr_new(DType dt, int rank, const int64_t *shape);
/* n new arrays of one type in one slab, each with uninitialised elements
   and one reference: out[k] is out[0] + k, its elements right after those
   of out[k-1]. */
void arr_slab(DType dt, int rank, const int64_t *shape, int64_t n, Array **out);
/* n arrays of one shape whose elements are g's, in a row: out[k] reads
   the k-th run of shape's size of g's elements (which the caller has laid
   out so).  A slab of headers alone, holding a reference to g until the
   last of them is freed; to everyone else ordinary arrays.  Needs g's
   dtype, and n times shape's size at most g's size. */
void arr_carve(Array *g, int rank, const int64_t *shape, int64_t n, Array **out);
/* n arrays of one shape whose elements are g's, out[k]'s starting at
   element off[k] of g: a slab of headers alone, holding a reference to g
   until the last of them is freed.  pitch 0: each reads a contiguous run
   of g; otherwise (rank 2) each is a pitched view whose rows are pitch
   elements apart. */
void arr_views(Array *g, int rank, const int64_t *shape, int64_t n, const int64_t *off, int64_t pitch,
               Array **out);
/* a itself (a new reference) if its elements are contiguous, else a copy
   of the pitched view a that is an ordinary array. */
Array *arr_contig(Array *a);
/* Whether blk[0..n) are arrays of one slab in a row whose elements are
   contiguous, in that order. */
bool arr_in_slab(Array *const *blk, int64_t n);
/* Whether blk[0..n) are held by nothing but these references: one array
   of its own (n == 1), or every array of a slab (not a carved one) in a
   row, each with one reference.  Then whoever holds the references may
   write the elements in place. */
bool arr_owned(Array *const *blk, int64_t n);
/* A new array of zeros. */
Array *arr_zeros(DType dt, int rank, const int64_t *shape);
/* Scalars (rank 0). */
Array *arr_scalar_f(DType dt, double v);
Array *arr_scalar_i(DType dt, int64_t v);
/* A copy of `a` converted to dtype `dt`, as JAX's convert_element_type
   does: integers wrap, floats become integers by truncation toward zero,
   saturating at the range (NaN: 0), floats round to nearest even (bf16
   through f32), complex becomes real by dropping the imaginary part, and
   anything becomes bool by comparison with 0. */
Array *arr_convert(const Array *a, DType dt);
/* The same into r, of a's shape (r->dt the target). */
void arr_convert_into(const Array *a, Array *r);

static inline Array *arr_ref(Array *a) { if (a) a->refc++; return a; }
void arr_free_(Array *a);
static inline void arr_unref(Array *a) {
  if (a && --a->refc == 0) arr_free_(a);
}

size_t arr_nbytes(const Array *a);
/* Element access by flat index, through double or int64 (or uint64, or a
   complex pair), converting as arr_convert does: a complex element reads as
   its real part, an unsigned one above INT64_MAX as its bits. */
double arr_getf(const Array *a, int64_t i);
int64_t arr_geti(const Array *a, int64_t i);
uint64_t arr_getu(const Array *a, int64_t i);
void arr_getc(const Array *a, int64_t i, double *re, double *im);
void arr_setf(Array *a, int64_t i, double v);
void arr_seti(Array *a, int64_t i, int64_t v);
void arr_setu(Array *a, int64_t i, uint64_t v);
void arr_setc(Array *a, int64_t i, double re, double im);
/* Equal dtype, shape and bytes. */
bool arr_identical(const Array *a, const Array *b);
/* Row-major strides (in elements) of a shape. */
void arr_strides(int rank, const int64_t *shape, int64_t *strides);
/* Product of a shape; -1 on overflow past INT64_MAX / 16. */
int64_t shape_size(int rank, const int64_t *shape);

/* Copy a box of `box` elements per dimension from a row-major array of
   shape sshape (at sstart) into one of shape dshape (at dstart).  Either
   array may be viewed with dimensions of size 1 added, which does not
   change its layout. */
void arr_copy_box(void *dst, const int64_t *dshape, const int64_t *dstart,
                  const void *src, const int64_t *sshape, const int64_t *sstart,
                  const int64_t *box, int rank, size_t elem_size);
/* The copy engine: copy the elements of a box of the given shape from src
   to dst.  dstr and sstr are each layout's strides in bytes (0 repeats an
   element, a negative stride runs backwards); rows contiguous on both
   sides move with one memcpy.  Every shape and indexing kernel is one or
   two calls of it. */
void arr_copy_strided(void *dst, const int64_t *dstr, const void *src, const int64_t *sstr, int rank,
                      const int64_t *shape, size_t es);
/* Row-major strides of a shape, in bytes for elements of es bytes. */
void arr_byte_strides(int rank, const int64_t *shape, size_t es, int64_t *st);
/* A copy of a with its dimensions permuted: result dim k is a's dim
   perm[k].  The identity permutation returns a new reference to a. */
Array *arr_permuted(Array *a, const int *perm);
/* A copy of the box of `a` starting at `start` with the given shape. */
Array *arr_block(const Array *a, const int64_t *start, const int64_t *shape);
/* Remove dimension d, of size 1, from an array still being built (its
   layout does not change). */
void arr_drop_dim(Array *a, int d);
/* Copy all of `src` into `dst` (same dtype and rank) at offset `start`.
   Only for arrays still being built. */
void arr_put_block(Array *dst, const int64_t *start, const Array *src);

#endif
