/*
** hostplace.c — placements of host-level values (hostplace.h).
*/
#include <stdio.h>
#include "hlosharding.h"
#include "rule.h"
#include "tiling.h"
#include "hostplace.h"

void hp_replicate(HpSplit *s, int rank) {
  s->rank = rank;
  for (int d = 0; d < SHM_MAXRANK; d++) s->ways[d] = 1;
}

bool hp_is_split(const HpSplit *s) {
  for (int d = 0; d < s->rank; d++)
    if (s->ways[d] > 1) return true;
  return false;
}

bool hp_same(const HpSplit *a, const HpSplit *b) {
  bool as = hp_is_split(a), bs = hp_is_split(b);
  if (!as || !bs) return as == bs;
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->ways[d] != b->ways[d]) return false;
  return true;
}

int64_t hp_tiles(const HpSplit *s) {
  int64_t n = 1;
  for (int d = 0; d < s->rank; d++) n *= s->ways[d];
  return n;
}

void hp_text(const HpSplit *s, char *out, size_t n) {
  if (!hp_is_split(s)) {
    snprintf(out, n, "replicated");
    return;
  }
  size_t k = (size_t)snprintf(out, n, "split ");
  for (int d = 0; d < s->rank && k < n; d++) k += (size_t)snprintf(out + k, n - k, "%s%lld", d ? "x" : "", (long long)s->ways[d]);
}

/* ---- reading shardings ------------------------------------------------------------------ */

static bool is_call(const PVal *v, const char *name) { return v->k == PV_CALL && str_eqc(v->s, name); }

static const PVal *kw(const PVal *v, const char *key) {
  for (int i = 0; i < v->n; i++)
    if (v->items[i]->k == PV_KW && str_eqc(v->items[i]->s, key)) return v->items[i]->items[0];
  return NULL;
}

/* The size of mesh axis `name` of a Mesh(...) value or a named mesh. */
static int64_t axis_size(const PVal *mesh, Str name, const Mesh *const *meshes, int n) {
  mesh = pv_unparen((PVal *)mesh);
  if (mesh->k == PV_NAME) {
    for (int i = 0; i < n; i++)
      if (meshes[i] && str_eq(meshes[i]->name, mesh->s))
        for (int a = 0; a < meshes[i]->naxes; a++)
          if (str_eq(meshes[i]->axis[a], name)) return meshes[i]->size[a];
    return -1;
  }
  if (mesh->k != PV_CALL) return -1;
  for (int i = 0; i < mesh->n; i++) {
    const PVal *p = mesh->items[i];
    if (p->k == PV_PAIR && p->items[0]->k == PV_STR && str_eq(p->items[0]->s, name) && p->items[1]->k == PV_INT)
      return p->items[1]->i;
  }
  return -1;
}

static bool from_named(const PVal *v, const Type *t, const Mesh *const *meshes, int n, HpSplit *s) {
  const PVal *mesh = kw(v, "mesh"), *spec = kw(v, "spec");
  if (!mesh || !spec) return false;
  spec = pv_unparen((PVal *)spec);
  if (spec->k != PV_SPEC && !is_call(spec, "PartitionSpec") && !is_call(spec, "P")) return false;
  hp_replicate(s, t->rank);
  for (int d = 0; d < spec->n; d++) {
    const PVal *e = pv_unparen(spec->items[d]);
    if (e->k == PV_KW) break;
    if (d >= t->rank) return false;
    const PVal *one[1] = {e};
    const PVal *const *ax = one;
    int na = 1;
    if (e->k == PV_NONE) na = 0;
    else if (e->k == PV_TUPLE || e->k == PV_LIST) ax = (const PVal *const *)e->items, na = e->n;
    for (int k = 0; k < na; k++) {
      const PVal *a = pv_unparen((PVal *)ax[k]);
      if (a->k != PV_NAME && a->k != PV_STR) return false;
      int64_t z = axis_size(mesh, a->s, meshes, n);
      if (z < 1) return false;
      s->ways[d] *= z;
    }
  }
  return true;
}

static bool from_gspmd(const PVal *v, const Type *t, HpSplit *s) {
  if (v->n < 1 || v->items[0]->k != PV_REPR) return false;
  HloSharding h;
  char err[200];
  if (!hsh_parse(v->items[0]->s.p, v->items[0]->s.n, &h, err, sizeof err)) return false;
  bool ok = true;
  hp_replicate(s, t->rank);
  if (h.kind == HSH_TILED) {
    int r = hsh_array_rank(&h);
    ok = r == t->rank;
    for (int d = 0; ok && d < r; d++) s->ways[d] = h.dims[d];
  } else {
    ok = h.kind == HSH_REPLICATED;
  }
  hsh_free(&h);
  return ok;
}

bool hp_from_sharding(const PVal *v, const Type *t, const Mesh *const *meshes, int n, HpSplit *s) {
  if (!v) return false;
  v = pv_unparen((PVal *)v);
  if (is_call(v, "GSPMDSharding")) return from_gspmd(v, t, s);
  if (is_call(v, "NamedSharding")) return from_named(v, t, meshes, n, s);
  return false;
}

int64_t hp_sharding_devices(const PVal *v) {
  if (!v) return 0;
  v = pv_unparen((PVal *)v);
  if (v->k == PV_TUPLE || v->k == PV_LIST) {
    int64_t n = 0;
    for (int i = 0; i < v->n; i++) {
      int64_t k = hp_sharding_devices(v->items[i]);
      if (k > n) n = k;
    }
    return n;
  }
  if (is_call(v, "GSPMDSharding") && v->n >= 1 && v->items[0]->k == PV_REPR) {
    HloSharding h;
    char err[200];
    if (!hsh_parse(v->items[0]->s.p, v->items[0]->s.n, &h, err, sizeof err)) return 0;
    int64_t n = h.kind == HSH_TILED ? h.ndevices : 0;
    hsh_free(&h);
    return n;
  }
  const PVal *mesh = is_call(v, "NamedSharding") ? kw(v, "mesh") : NULL;
  if (mesh && (mesh = pv_unparen((PVal *)mesh))->k == PV_CALL) {
    int64_t n = 1;
    for (int i = 0; i < mesh->n; i++)
      if (mesh->items[i]->k == PV_PAIR && mesh->items[i]->items[1]->k == PV_INT) n *= mesh->items[i]->items[1]->i;
    return n;
  }
  return 0;
}

/* Entry k of a tuple (or the value itself, standing for every entry). */
static const PVal *entry(const PVal *v, int k) {
  v = pv_unparen((PVal *)v);
  if (v->k != PV_TUPLE && v->k != PV_LIST) return v;
  return k < v->n ? v->items[k] : NULL;
}

const PVal *hp_param_entry(const IrStmt *st, const char *key, int k) {
  for (int i = 0; i < st->nparams; i++)
    if (st->params[i].key && !strcmp(st->params[i].key, key) && st->params[i].v) return entry(st->params[i].v, k);
  return NULL;
}

const PVal *hp_prim_sharding(const IrStmt *st, int k) {
  if (st->prim == P_SHARDING_CONSTRAINT) return hp_param_entry(st, "sharding", 0);
  if (st->prim == P_MESH_CAST) return hp_param_entry(st, "dst_sharding", 0);
  if (st->prim == P_DEVICE_PUT) return hp_param_entry(st, "devices", k);
  return NULL;
}

void hp_from_spec(const Mesh *m, const Spec *spc, int rank, HpSplit *s) {
  hp_replicate(s, rank);
  for (int d = 0; d < rank; d++) s->ways[d] = til_blocks_along(m, spc, d);
}

/* ---- elementwise work on a tile ------------------------------------------------------------- */

static bool same_shape(const Type *a, const Type *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

bool hp_elementwise(const IrStmt *st) {
  if (st->prim < 0 || st->nout != 1 || !st->out[0]->t.rank) return false;
  if (!cost_is_elementwise(st->prim) && st->prim != P_CONVERT_ELEMENT_TYPE && st->prim != P_COPY &&
      st->prim != P_STOP_GRADIENT)
    return false;
  for (int i = 0; i < st->nin; i++)
    if (st->in[i].t.rank && !same_shape(&st->in[i].t, &st->out[0]->t)) return false;
  return true;
}

static void tile_type(Type *t, const HpSplit *s) {
  if (t->rank != s->rank) return;
  for (int d = 0; d < t->rank; d++) t->shape[d] = (t->shape[d] + s->ways[d] - 1) / s->ways[d];
}

Cost hp_tile_cost(const Hw *hw, const IrStmt *st, const HpSplit *s) {
  enum { MAXOP = 16 };
  if (st->nin > MAXOP || st->nout > MAXOP) return cost_local(hw, st);
  IrStmt c = *st;
  IrAtom in[MAXOP];
  IrVar ov[MAXOP], *op[MAXOP];
  for (int i = 0; i < st->nin; i++) {
    in[i] = st->in[i];
    if (in[i].t.rank) tile_type(&in[i].t, s);
  }
  for (int j = 0; j < st->nout; j++) {
    ov[j] = *st->out[j];
    tile_type(&ov[j].t, s);
    op[j] = &ov[j];
  }
  c.in = in;
  c.out = op;
  return cost_local(hw, &c);
}
