/*
** types.h — the static type of an array value: dtype[shape]{axes}.
**
** `vma` is the variance set: a bitmask over the axes of the mesh of the
** enclosing shard_map (bit k = the mesh's k-th axis).  Outside any
** shard_map it is 0.  `weak` marks an untyped literal whose dtype is still
** open (JAX's weak typing): it adopts the dtype of the other operand.
**
** `unred` and `red` are the axes along which the value is unreduced
** (`{U:x}`: each instance holds a summand, the value is their sum; or,
** with `ukind`, their max or min) and reduced (`{R:x}`: the same value on
** each instance, whose cotangent is unreduced), over the same mesh.
**
** `lay` is the layout JAX wrote in an explicit-sharding type outside any
** shard_map (`f32[8@x,4]`, `{U:x}` of a global value): names of mesh
** axes that no shm mesh binds there, kept for `show`.  It changes no
** value: the global array is the same whichever way it is laid out.
*/
#ifndef SHM_TYPES_H
#define SHM_TYPES_H

#include "common.h"
#include "dtype.h"

enum { UK_SUM, UK_MAX, UK_MIN };

/* An explicit-sharding layout: per dimension the mesh axes it is split
   over as written ("x", "(model,data)"; empty: not split), and the
   unreduced and reduced axes of a global value ("x", "(a,b)"). */
typedef struct TypeLay {
  Str dim[SHM_MAXRANK];
  Str unred, red;
  uint8_t ukind;
} TypeLay;

typedef struct Type {
  uint8_t dt;
  uint8_t rank;
  bool weak;
  bool bad;              /* the result of a statement that failed to check */
  uint8_t ukind;         /* UK_SUM, UK_MAX, UK_MIN: what the summands of unred combine by */
  uint32_t vma;
  uint32_t unred, red;
  const TypeLay *lay;    /* NULL: no explicit layout */
  /* axes along which the value varies but JAX's type of it says
     invariant: a precv's result (its out_shape carries no variance) and
     what is computed from it; a pvary over them is the identity, as JAX
     prints one there.  No part of the type's identity. */
  uint32_t jaxinv;
  /* JAX's AbstractFuture{...}: the pending result of an async collective's
     start, of this dtype, shape and variance; only its done reads it */
  bool future;
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
