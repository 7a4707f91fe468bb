/*
** types.h — the static type of an array value: dtype[shape]{axes}.
**
** `vma` is the variance set: a bitmask over the axes of the mesh of the
** enclosing shard_map (bit k = the mesh's k-th axis).  Outside any
** shard_map it is 0.  `weak` marks an untyped literal whose dtype is still
** open (JAX's weak typing): it adopts the dtype of the other operand.
*/
#ifndef SHM_TYPES_H
#define SHM_TYPES_H

#include "common.h"
#include "dtype.h"

typedef struct Type {
  uint8_t dt;
  uint8_t rank;
  bool weak;
  bool bad;              /* the result of a statement that failed to check */
  uint32_t vma;
  int64_t shape[SHM_MAXRANK];
} Type;

static inline bool type_same_shape(const Type *a, const Type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

static inline int64_t type_size(const Type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

#endif
