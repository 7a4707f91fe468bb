/*
** hostplace.h — where a host-level value lies on the devices, for the
** cost model's --model-top (timeline.h).
**
** In JAX the statements outside any shard_map run on the devices too, as
** XLA's SPMD partitioner places them: replicated by default, or split as
** a placement says.  A placement here is how many ways each dimension of
** the array is split (an HpSplit; all ones: replicated), read from what
** the program says:
**
**   - pjit's in_shardings / out_shardings and sharding_constraint's,
**     mesh_cast's and device_put's shardings: GSPMDSharding({...}) (XLA's
**     HloSharding text, hlosharding.h: the tile assignment's dimensions
**     less its trailing subgroup dimensions) or NamedSharding(mesh=...,
**     spec=PartitionSpec(...)) (each entry split by the sizes of its
**     axes); UnspecifiedValue, None and the other forms say nothing;
**   - a shard_map's out_specs (each dimension split by its axes).
**
** An elementwise equation (hp_elementwise) of split operands runs on each
** device on its tile (hp_tile_cost) and its result keeps the split; any
** other equation runs replicated.  The timeline propagates placements
** (forward, and backward from where a value is wanted split) and charges
** reshardings as collectives (timeline.c, reshard).
*/
#ifndef SHM_HOSTPLACE_H
#define SHM_HOSTPLACE_H

#include "cost.h"

typedef struct HpSplit {
  int rank;
  int64_t ways[SHM_MAXRANK];
} HpSplit;

void hp_replicate(HpSplit *s, int rank);
bool hp_is_split(const HpSplit *s);
bool hp_same(const HpSplit *a, const HpSplit *b);
int64_t hp_tiles(const HpSplit *s);
/* "replicated" or "split 2x4x1" */
void hp_text(const HpSplit *s, char *out, size_t n);

/* A sharding parameter's value for an array of type t: true and *s when
   it says where the array lies; `meshes` (n) resolve a mesh named by the
   program (NamedSharding(mesh=m, ...)). */
bool hp_from_sharding(const PVal *v, const Type *t, const Mesh *const *meshes, int n, HpSplit *s);
/* The devices a sharding value (or a tuple of them) names: a tiled
   GSPMDSharding's, an inline Mesh(...)'s; 0 when it names none. */
int64_t hp_sharding_devices(const PVal *v);
/* Entry k of call st's parameter `key` (pjit's in_shardings), or NULL. */
const PVal *hp_param_entry(const IrStmt *st, const char *key, int k);
/* The sharding parameter of a placement primitive (sharding_constraint,
   mesh_cast, device_put's k-th), or NULL. */
const PVal *hp_prim_sharding(const IrStmt *st, int k);
/* A shard_map result assembled by spec spc on m, of rank `rank`. */
void hp_from_spec(const Mesh *m, const Spec *spc, int rank, HpSplit *s);

/* Is st elementwise: each result element from the operand elements at its
   index (operands of the result's shape, or scalars)? */
bool hp_elementwise(const IrStmt *st);
/* The cost of st on one device holding the tile of split s of its result
   (its operands of the result's shape split alike). */
Cost hp_tile_cost(const Hw *hw, const IrStmt *st, const HpSplit *s);

#endif
