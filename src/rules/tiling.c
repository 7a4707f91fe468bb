/*
** tiling.c — block geometry: how a partition spec cuts an array into the
** blocks of a mesh's instances (see tiling.h).
*/
#include "tiling.h"

#include <stdio.h>
#include <string.h>

/* ---- block order ------------------------------------------------------------------ */

int64_t til_nblk(const Mesh *m, uint32_t mask) {
  int64_t n = 1;
  for (int k = 0; m && k < m->naxes; k++)
    if (mask & (1u << k)) n *= m->size[k];
  return n;
}

void til_coords(const Mesh *m, int64_t inst, int64_t *coords) {
  for (int k = m ? m->naxes - 1 : -1; k >= 0; k--) {
    coords[k] = inst % m->size[k];
    inst /= m->size[k];
  }
}

int64_t til_project_(const Mesh *m, uint32_t from, int64_t b, uint32_t to) {
  int64_t r = 0, stride = 1;
  for (int k = m->naxes - 1; k >= 0; k--) {
    if (!(from & (1u << k))) continue;
    int64_t c = b % m->size[k];
    b /= m->size[k];
    if (to & (1u << k)) {
      r += c * stride;
      stride *= m->size[k];
    }
  }
  return r;
}

int64_t til_block_of(const Mesh *m, uint32_t mask, int64_t inst) {
  /* an instance is the block of the mask of every axis */
  return mask ? til_project(m, m->naxes >= 32 ? ~0u : (1u << m->naxes) - 1, inst, mask) : 0;
}

void til_block_coords(const Mesh *m, uint32_t mask, int64_t b, int64_t *coords) {
  for (int k = m->naxes - 1; k >= 0; k--)
    if (mask & (1u << k)) {
      coords[k] = b % m->size[k];
      b /= m->size[k];
    }
}

int64_t til_block_at(const Mesh *m, uint32_t mask, const int64_t *coords) {
  int64_t b = 0;
  for (int k = 0; k < m->naxes; k++)
    if (mask & (1u << k)) b = b * m->size[k] + coords[k];
  return b;
}

int64_t til_first_inst(const Mesh *m, uint32_t mask, int64_t b) {
  if (!m) return 0;
  int64_t coords[SHM_MAXAXES] = {0};
  til_block_coords(m, mask, b, coords);
  return til_block_at(m, ~0u, coords);
}

/* ---- where a block is -------------------------------------------------------------- */

int64_t til_blocks_along(const Mesh *m, const Spec *spc, int d) {
  int64_t n = 1;
  for (int k = 0; m && spc && d < spc->ndims && k < spc->dim[d].naxes; k++) n *= m->size[spc->dim[d].axes[k]];
  return n;
}

Type til_block_type(const Mesh *m, const Spec *spc, const Type *gt) {
  Type bt = *gt;
  for (int d = 0; d < spc->ndims && d < bt.rank; d++) bt.shape[d] /= til_blocks_along(m, spc, d);
  return bt;
}

void til_global_shape(const Mesh *m, const Spec *spc, int rank, const int64_t *bshape, int64_t *gshape) {
  for (int d = 0; d < rank; d++) gshape[d] = bshape[d] * til_blocks_along(m, spc, d);
}

void til_block_start(const Mesh *m, const Spec *spc, const int64_t *coords, const int64_t *bshape, int rank,
                     int64_t *start) {
  for (int d = 0; d < rank; d++) {
    int64_t idx = 0;
    if (d < spc->ndims)
      for (int k = 0; k < spc->dim[d].naxes; k++) {
        int a = spc->dim[d].axes[k];
        idx = idx * m->size[a] + coords[a];
      }
    start[d] = idx * bshape[d];
  }
}

void til_start_of(const Mesh *m, const Spec *spc, int64_t b, const int64_t *bshape, int rank, int64_t *start) {
  int64_t coords[SHM_MAXAXES];
  til_coords(m, til_first_inst(m, spc->mask, b), coords);
  til_block_start(m, spc, coords, bshape, rank, start);
}

int64_t til_block_offset(const Mesh *m, const Spec *spc, int64_t b, const int64_t *bshape, const int64_t *gshape,
                         int rank) {
  int64_t start[SHM_MAXRANK], off = 0, stride = 1;
  til_start_of(m, spc, b, bshape, rank, start);
  for (int d = rank - 1; d >= 0; d--) {
    off += start[d] * stride;
    stride *= gshape[d];
  }
  return off;
}

Type til_pmap_view(const Type *t, int d) {
  Type v = *t;
  for (int j = v.rank; j > d; j--) v.shape[j] = v.shape[j - 1];
  v.shape[d] = 1;
  v.rank++;
  return v;
}

/* ---- specs ------------------------------------------------------------------------- */

void til_default_spec(const Mesh *m, uint32_t mask, Spec *out) {
  memset(out, 0, sizeof *out);
  out->mask = mask;
  if (!mask) return;
  out->ndims = 1;
  for (int k = 0; k < m->naxes; k++)
    if (mask & (1u << k)) out->dim[0].axes[out->dim[0].naxes++] = (uint8_t)k;
}

/* The names of the axes of mask, "{i, j}". */
static void put_axes_of(char *out, size_t n, const Mesh *m, uint32_t mask) {
  size_t len = (size_t)snprintf(out, n, "{");
  for (int k = 0, c = 0; k < m->naxes && len < n; k++)
    if (mask & (1u << k)) len += (size_t)snprintf(out + len, n - len, "%s%.*s", c++ ? ", " : "", m->axis[k].n, m->axis[k].p);
  if (len < n) snprintf(out + len, n - len, "}");
}

bool til_global_ok(const Mesh *m, const Spec *spc, uint32_t mask, int rank, char *err, size_t errlen) {
  if (mask & ~spc->mask) {
    char ax[128];
    put_axes_of(ax, sizeof ax, m, mask & ~spc->mask);
    snprintf(err, errlen, "the value varies over %s, which the spec does not mention: it has no one global view", ax);
    return false;
  }
  if (rank == 0 && spc->mask) {
    char ax[128];
    put_axes_of(ax, sizeof ax, m, mask);
    snprintf(err, errlen, "a scalar varying over %s has no global view: an out_spec needs a dimension to split", ax);
    return false;
  }
  if (spc->ndims > rank) {
    snprintf(err, errlen, "the spec has %d entries for a value of rank %d", spc->ndims, rank);
    return false;
  }
  return true;
}

bool til_same_mesh(const Mesh *a, const Mesh *b) {
  if (a == b) return true;
  if (a->naxes != b->naxes) return false;
  for (int k = 0; k < a->naxes; k++)
    if (a->size[k] != b->size[k] || !str_eq(a->axis[k], b->axis[k])) return false;
  return true;
}

bool til_same_tiling(const Spec *a, const Spec *b) {
  int n = a->ndims > b->ndims ? a->ndims : b->ndims;
  for (int d = 0; d < n; d++) {
    int na = d < a->ndims ? a->dim[d].naxes : 0, nb = d < b->ndims ? b->dim[d].naxes : 0;
    if (na != nb || (na && memcmp(a->dim[d].axes, b->dim[d].axes, (size_t)na))) return false;
  }
  return true;
}
