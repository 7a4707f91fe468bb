/*
** hlosharding.h — XLA's HloSharding as its text reads (hlosharding.c).
**
** JAX prints a GSPMDSharding in pjit's in_shardings and out_shardings (and
** in sharding_constraint) as GSPMDSharding({...}), the braces holding
** XLA's HloSharding::ToString:
**
**   {replicated}  {manual}  {unknown}  {maximal device=0}
**   {devices=[2,4]0,1,2,3,4,5,6,7}              an explicit device list
**   {devices=[2,4]<=[8]}                        an iota: devices 0..7
**   {devices=[2,4]<=[4,2]T(1,0)}                iota reshaped, transposed
**   {devices=[2,1,2]<=[4] last_tile_dim_replicate}
**   {devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}
**   {{replicated}, {devices=[2]0,1}}            a tuple
**
** hsh_parse reads one into an HloSharding: how many ways each dimension
** of the array is split (the tile assignment less its trailing replicated
** and manual dimensions) and which device holds each tile, so that a
** placement can be computed from it.
*/
#ifndef SHM_HLOSHARDING_H
#define SHM_HLOSHARDING_H

#include "defs.h"

#define HSH_MAXDIMS 16
#define HSH_MAXDEVICES 4096

typedef enum { HSH_REPLICATED, HSH_MANUAL, HSH_UNKNOWN, HSH_MAXIMAL, HSH_TILED, HSH_TUPLE } HshKind;

typedef struct HloSharding {
  HshKind kind;
  int device;                      /* HSH_MAXIMAL */
  /* HSH_TILED: the tile assignment's dimensions; the last nsub of them
     are subgroups (replicated or manual), the others split the array */
  int ndims, nsub;
  int64_t dims[HSH_MAXDIMS];
  int64_t ndevices;                /* the product of dims */
  int32_t *devices;                /* ndevices, in tile order (row-major over dims) */
  /* HSH_TUPLE */
  struct HloSharding *elems;
  int nelems;
} HloSharding;

/* Read the text p[0..n) (the braces included).  On error returns false
   and writes a message to err; *used is how far the text was read.  The
   device lists and tuple elements are malloc'ed: hsh_free. */
bool hsh_parse(const char *p, int n, HloSharding *out, char *err, size_t errn);
void hsh_free(HloSharding *h);
/* The number of array dimensions a tiled sharding splits (ndims - nsub);
   0 for one that is not tiled. */
int hsh_array_rank(const HloSharding *h);

#endif
