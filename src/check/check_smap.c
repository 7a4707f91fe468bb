/*
** check_smap.c — checking shard_map: the equation, its specs, and
** @shard_map defs.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "show.h"
#include "tiling.h"

/* ---- shard_map ----------------------------------------------------------------------------- */

/* A mesh written inline, {i: 8, j: 2}, as show prints the mesh of a pmap
   (which has no name). */
static Mesh *inline_mesh(Ctx *cx, RuleCtx *r, PVal *v) {
  Mesh *m = NEW(cx->C, Mesh);
  m->ndev = 1;
  if (v->n > SHM_MAXAXES) {
    rule_param_error(r, "mesh", "a mesh has at most %d axes", SHM_MAXAXES);
    return NULL;
  }
  for (int i = 0; i < v->n; i++) {
    PVal *a = v->items[i]->k == PV_PAIR ? pv_unparen(pv_key(v, i)) : NULL;
    PVal *n = a ? pv_unparen(pv_val(v, i)) : NULL;
    if (!a || (a->k != PV_NAME && a->k != PV_STR) || n->k != PV_INT) {
      rule_param_error(r, "mesh", "a mesh written inline reads {axis: size, ...}");
      return NULL;
    }
    for (int j = 0; j < i; j++)
      if (str_eq(m->axis[j], a->s)) {
        rule_param_error(r, "mesh", "mesh axis '%.*s' named twice", a->s.n, a->s.p);
        return NULL;
      }
    if (n->i < 1 || m->ndev > SHM_MAX_INSTANCES / n->i) {
      rule_param_error(r, "mesh", n->i < 1 ? "mesh axis '%.*s' must have a size of at least 1"
                                           : "mesh has more than 4194304 devices (axis '%.*s')", a->s.n, a->s.p);
      return NULL;
    }
    m->axis[i] = a->s;
    m->size[i] = n->i;
    m->ndev *= n->i;
  }
  m->naxes = v->n;
  return m;
}

Mesh *smap_mesh_value(Ctx *cx, RuleCtx *r, PVal *v) {
  v = pv_unparen(v);
  if (!v) { rule_missing(r, "mesh"); return NULL; }
  if (v->k == PV_DICT) {
    Mesh *m = inline_mesh(cx, r, v);
    if (!m) r->failed = true;
    return m;
  }
  if (v->k == PV_CALL) return jax_mesh(cx, r, v);
  if (v->k != PV_NAME) { rule_param_error(r, "mesh", "parameter 'mesh' must name a mesh"); return NULL; }
  Binding *b = check_lookup(cx->scope, B_MESH, v->s);
  if (!b) {
    diag_error(v->sp, "unknown mesh '%.*s'", v->s.n, v->s.p);
    r->failed = true;
    return NULL;
  }
  return b->mesh;
}

PVal *smap_mesh_pv(Ctx *cx, const Mesh *m) {
  if (m->inline_src) return m->inline_src;
  PVal *v = NEW(cx->C, PVal);
  v->sp = span_none();
  if (m->name.n) {
    v->k = PV_NAME;
    v->s = m->name;
    return v;
  }
  v->k = PV_DICT;
  v->n = m->naxes;
  v->items = NEWN(cx->C, PVal *, m->naxes);
  for (int i = 0; i < m->naxes; i++) {
    PVal *e = v->items[i] = NEWN(cx->C, PVal, 3);
    e->k = PV_PAIR;
    e->n = 2;
    e->items = NEWN(cx->C, PVal *, 2);
    e->items[0] = &e[1];
    e->items[1] = &e[2];
    e[1].k = PV_NAME;
    e[1].s = m->axis[i];
    e[2].k = PV_INT;
    e[2].i = m->size[i];
    e->sp = e[1].sp = e[2].sp = span_none();
  }
  return v;
}

/* The specs of a parameter: a tuple of P(...), or one P(...) standing for
   all `want` of them (a pytree prefix, as in JAX: in_specs=P(i) splits
   every argument the same way). */
static bool spec_list(RuleCtx *r, const char *key, PVal *v, int want, PVal ***items, int *n) {
  v = pv_unparen(v);
  if (!v) return rule_missing(r, key);
  if (v->k == PV_SPEC || v->k == PV_NONE) {
    *n = want > 1 ? want : 1;
    *items = arena_alloc(r->arena, sizeof(PVal *) * (size_t)*n);
    for (int i = 0; i < *n; i++) (*items)[i] = v;
    return true;
  }
  if (v->k != PV_TUPLE && v->k != PV_LIST)
    return rule_param_error(r, key, "%s must be a partition spec P(...) or a tuple of them", key);
  *items = v->items;
  *n = v->n;
  return true;
}

/* JAX 0.4's in_names / out_names: a tuple of dicts {dimension: (axes...)},
   one per operand, as specs. */
static bool names_list(Ctx *cx, RuleCtx *r, const char *key, PVal *v, PVal ***items, int *n) {
  v = pv_unparen(v);
  if (!v || (v->k != PV_TUPLE && v->k != PV_LIST))
    return rule_param_error(r, key, "%s must be a tuple of dicts {dimension: (axes...)}", key);
  *n = v->n;
  *items = arena_alloc(r->arena, sizeof(PVal *) * (size_t)(v->n ? v->n : 1));
  for (int i = 0; i < v->n; i++)
    if (!((*items)[i] = jax_names_spec(cx, r, key, v->items[i]))) return false;
  return true;
}

/* The specs of one side: `specs` (P(...)s) or JAX 0.4's `names`. */
static bool side_specs(Ctx *cx, RuleCtx *r, const char *specs, const char *names, int want, PVal ***items, int *n) {
  PVal *v = rule_get(r, specs);
  PVal *nv = rule_get(r, names);
  if (!v && nv) return names_list(cx, r, names, nv, items, n);
  return spec_list(r, specs, v, want, items, n);
}

/* The names a set parameter lists: frozenset({'x', 'y'}), {x, y}, (x, y),
   x; -1 when it is not such a set. */
static int set_names(PVal *v, PVal ***items) {
  v = pv_unparen(v);
  if (!v || v->k == PV_NONE) return -1;
  PVal *set = v->k == PV_CALL && v->n == 1 ? pv_unparen(v->items[0]) : v;
  if (v->k == PV_CALL && v->n == 0) {        /* frozenset() */
    *items = NULL;
    return 0;
  }
  if (set->k == PV_NAME || set->k == PV_STR) {
    *items = NULL;
    return -2;
  }
  if (set->k != PV_DICT && set->k != PV_TUPLE && set->k != PV_LIST) return -1;
  *items = set->items;
  return set->n;
}

/* Add the axes named by a set parameter to *mask; false (an error at the
   parameter) for a name that is not an axis of m. */
static bool names_mask(RuleCtx *r, const char *key, const Mesh *m, uint32_t *mask) {
  PVal *v = pv_unparen(rule_get(r, key)), **items, *one[1];
  int n = set_names(v, &items);
  if (n == -2) {
    one[0] = v->k == PV_CALL ? pv_unparen(v->items[0]) : v;
    items = one;
    n = 1;
  }
  if (n < 0) return rule_param_error(r, key, "%s must be a set of mesh axes, such as {x} or frozenset({'x'})", key);
  for (int i = 0; i < n; i++) {
    PVal *e = pv_unparen(items[i]);
    int k = -1;
    for (int a = 0; e && (e->k == PV_NAME || e->k == PV_STR) && a < m->naxes; a++)
      if (str_eq(m->axis[a], e->s)) k = a;
    if (k < 0)
      return rule_param_error(r, key, "%s names '%.*s', which is not an axis of the mesh", key, e ? e->s.n : 0,
                              e ? e->s.p : "");
    *mask |= 1u << k;
  }
  return true;
}

/* The manual axes of the shard_map: axis_names (jax.shard_map's), JAX's
   printed manual_axes or newly_manual_axes, or the complement of auto;
   all of them when none is given (or an empty set: JAX's full manual). */
static bool manual_mask(RuleCtx *r, const Mesh *m, uint32_t *manual) {
  uint32_t all = (m->naxes >= 32 ? 0u : 1u << m->naxes) - 1u;
  *manual = all;
  static const char *const keys[] = {"axis_names", "manual_axes", "newly_manual_axes"};
  for (int k = 0; k < 3; k++) {
    PVal **items;
    int n = set_names(rule_get(r, keys[k]), &items);
    if (n == -1 && !rule_has(r, keys[k])) continue;
    if (n == 0) continue;
    uint32_t mk = 0;
    if (!names_mask(r, keys[k], m, &mk)) return false;
    *manual = mk;
  }
  PVal **items;
  if (rule_has(r, "auto") && set_names(rule_get(r, "auto"), &items) != 0 &&
      pv_unparen(rule_get(r, "auto"))->k != PV_NONE) {
    uint32_t au = 0;
    if (!names_mask(r, "auto", m, &au)) return false;
    *manual = all & ~au;
  }
  if (!*manual) return rule_error(r, "shard_map needs at least one manual axis");
  rule_get(r, "rewrite");
  return true;
}

/* The mesh of a partial-manual body: the manual axes of m, in m's order,
   `full` pointing back at m. */
static Mesh *manual_mesh(Ctx *cx, const Mesh *m, uint32_t manual) {
  Mesh *s = NEW(cx->C, Mesh);
  *s = *m;
  s->naxes = 0;
  s->ndev = 1;
  for (int a = 0; a < m->naxes; a++)
    if (manual & (1u << a)) {
      s->axis[s->naxes] = m->axis[a];
      s->size[s->naxes++] = m->size[a];
      s->ndev *= m->size[a];
    }
  s->full = m;
  return s;
}

/* axis_names as show prints it: (x, y). */
static PVal *axis_names_pv(Ctx *cx, const Mesh *s) {
  PVal *v = NEW(cx->C, PVal);
  v->k = PV_TUPLE;
  v->sp = span_none();
  v->n = s->naxes;
  v->items = NEWN(cx->C, PVal *, s->naxes);
  for (int i = 0; i < s->naxes; i++) {
    PVal *e = v->items[i] = NEW(cx->C, PVal);
    e->k = PV_NAME;
    e->s = s->axis[i];
    e->sp = span_none();
  }
  return v;
}

/* The mask of the axes of a set {'x', 'y'} (or frozenset({...})). */
static bool spec_axis_set(const Mesh *m, PVal *v, uint32_t *mask) {
  v = pv_unparen(v);
  if (v->k == PV_CALL && v->n <= 1) v = v->n ? pv_unparen(v->items[0]) : NULL;
  if (!v) return true;
  if (v->k != PV_DICT && v->k != PV_TUPLE && v->k != PV_LIST) {
    diag_error(v->sp, "expected a set of mesh axes, as {'x'}");
    return false;
  }
  for (int i = 0; i < v->n; i++) {
    PVal *a = pv_unparen(v->items[i]);
    int idx = -1;
    for (int k = 0; (a->k == PV_NAME || a->k == PV_STR) && k < m->naxes; k++)
      if (str_eq(m->axis[k], a->s)) idx = k;
    if (idx < 0) {
      diag_error(a->sp, "not a mesh axis of %.*s", m->name.n ? m->name.n : 8, m->name.n ? m->name.p : "the mesh");
      return false;
    }
    *mask |= 1u << idx;
  }
  return true;
}

/* unreduced={...}, reduced={...}, unreduced_kind=max of a spec. */
static bool spec_keyword(const Mesh *m, PVal *kw, Spec *out) {
  PVal *val = pv_unparen(kw->items[0]);
  if (str_eqc(kw->s, "unreduced")) return spec_axis_set(m, val, &out->unred);
  if (str_eqc(kw->s, "reduced")) return spec_axis_set(m, val, &out->red);
  if (str_eqc(kw->s, "unreduced_kind")) {
    Str k = val->s;
    if (val->k == PV_NAME && k.n > 14 && !strncmp(k.p, "UnreducedKind.", 14)) { k.p += 14; k.n -= 14; }
    if (val->k == PV_NONE) return true;
    if ((val->k != PV_NAME && val->k != PV_STR) || !(str_eqc(k, "sum") || str_eqc(k, "max") || str_eqc(k, "min"))) {
      diag_error(val->sp, "unreduced_kind is sum, max or min");
      return false;
    }
    out->ukind = str_eqc(k, "max") ? UK_MAX : str_eqc(k, "min") ? UK_MIN : UK_SUM;
    return true;
  }
  diag_error(kw->sp, "unknown keyword '%.*s' in a partition spec (JAX's: unreduced, reduced, unreduced_kind)",
             kw->s.n, kw->s.p);
  return false;
}

/* Parse one spec; `rank` < 0 skips the rank check.  Errors at the spec. */
bool smap_parse_spec(Ctx *cx, const Mesh *m, PVal *v, Spec *out) {
  (void)cx;
  memset(out, 0, sizeof *out);
  out->src = v;
  v = pv_unparen(v);
  if (v->k == PV_NONE) return true;     /* None: replicated, like P() */
  if (v->k != PV_SPEC) {
    diag_error(v->sp, "expected a partition spec P(...)");
    return false;
  }
  int nd = 0;
  while (nd < v->n && v->items[nd]->k != PV_KW) nd++;
  if (nd > SHM_MAXRANK) {
    diag_error(v->sp, "partition spec longer than the largest rank");
    return false;
  }
  for (int k = nd; k < v->n; k++)
    if (!spec_keyword(m, v->items[k], out)) return false;
  out->ndims = nd;
  for (int d = 0; d < nd; d++) {
    PVal *e = pv_unparen(v->items[d]);
    PVal *one[1] = {e};
    PVal **ax = one;
    int na = 1;
    if (e->k == PV_NONE) na = 0;
    else if (e->k == PV_TUPLE || e->k == PV_LIST) { ax = e->items; na = e->n; }
    for (int k = 0; k < na; k++) {
      PVal *a = pv_unparen(ax[k]);
      if (a->k != PV_NAME && a->k != PV_STR) {
        diag_error(a->sp, "a partition spec entry is None, a mesh axis or a tuple of mesh axes");
        return false;
      }
      int idx = -1;
      for (int i = 0; i < m->naxes; i++)
        if (str_eq(m->axis[i], a->s)) idx = i;
      for (int i = 0; idx < 0 && m->full && i < m->full->naxes; i++)
        if (str_eq(m->full->axis[i], a->s)) {
          Buf man = {0};
          for (int b = 0; b < m->naxes; b++) buf_printf(&man, "%s%.*s", b ? ", " : "", m->axis[b].n, m->axis[b].p);
          diag_error(a->sp, "partition spec names '%.*s', an automatic axis of this shard_map: values are whole "
                     "along it, and specs may name only the manual axes (%s)", a->s.n, a->s.p, buf_cstr(&man));
          buf_free(&man);
          return false;
        }
      if (idx < 0) {
        Buf ax = {0};     /* name the mesh's axes: "has axes i, j" */
        err_defer(buf_release, &ax);
        for (int i = 0; i < m->naxes; i++) buf_printf(&ax, "%s%.*s", i ? ", " : "axes ", m->axis[i].n, m->axis[i].p);
        diag_error(a->sp, "unknown mesh axis '%.*s' in a partition spec (mesh %.*s has %s)", a->s.n, a->s.p,
                   m->name.n, m->name.p, m->naxes ? buf_cstr(&ax) : "no axes");
        err_undefer(&ax);
        buf_free(&ax);
        return false;
      }
      if ((out->mask | out->unred | out->red) & (1u << idx)) {
        diag_error(a->sp, "mesh axis '%.*s' appears twice in a partition spec", a->s.n, a->s.p);
        return false;
      }
      out->mask |= 1u << idx;
      out->dim[d].axes[out->dim[d].naxes++] = (uint8_t)idx;
    }
  }
  if (out->unred & out->red) {
    diag_error(v->sp, "a mesh axis is both unreduced and reduced in a partition spec");
    return false;
  }
  return true;
}

/* An error at a spec (or at `sp` when the spec has no place: a generated
   function's), with the spec's text as the first %s of fmt. */
static void spec_error(Span sp, const PVal *v, const Spec *spc, const Mesh *m, const char *fmt, ...) {
  Buf b = {0};
  err_defer(buf_release, &b);
  rule_spec_text(&b, spc, m);
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  diag_error(v->sp.file >= 0 ? v->sp : sp, msg, buf_cstr(&b));
  err_undefer(&b);
  buf_free(&b);
}

/* The specs of the arguments, and the block each instance gets: a
   dimension split over n devices by its spec is n times smaller, and the
   block varies over exactly the axes the spec names. */
static bool in_blocks(Ctx *cx, RuleCtx *r, Span sp, const Mesh *m, PVal **ins, ShardMap *sm, const Type *args,
                      int nargs, Type *block) {
  for (int i = 0; i < nargs; i++) {
    if (!smap_parse_spec(cx, m, ins[i], &sm->in[i])) return !(r->failed = true);
    Spec *spc = &sm->in[i];
    block[i] = args[i];
    if (spc->ndims > args[i].rank) {
      spec_error(sp, ins[i], spc, m, "argument %d is %s, of rank %d, but its spec %%s has %d entr%s", i + 1,
                 check_type_text(cx, &args[i]), args[i].rank, spc->ndims, spc->ndims == 1 ? "y" : "ies");
      return !(r->failed = true);
    }
    for (int d = 0; d < spc->ndims; d++) {
      int64_t f = til_blocks_along(m, spc, d);
      if (args[i].shape[d] % f) {
        spec_error(sp, ins[i], spc, m,
                   "argument %d is %s, but its spec %%s splits its dimension %d into %lld blocks: %lld is not "
                   "divisible by %lld", i + 1, check_type_text(cx, &args[i]), d, (long long)f,
                   (long long)args[i].shape[d], (long long)f);
        return !(r->failed = true);
      }
      block[i].shape[d] /= f;
    }
    block[i].vma = spc->mask | spc->unred;     /* a summand on each device along an unreduced axis */
    block[i].unred = spc->unred;
    block[i].ukind = spc->unred ? spc->ukind : UK_SUM;
    block[i].red = spc->red;
    block[i].lay = NULL;
    if (args[i].lay && args[i].lay->unred.n && !spc->unred) {
      spec_error(sp, ins[i], spc, m, "argument %d is %s, unreduced: its spec %%s must say so "
                 "(P(..., unreduced={...}))", i + 1, check_type_text(cx, &args[i]));
      return !(r->failed = true);
    }
  }
  return true;
}

/* "(i, j)" or "i": the axes of mask. */
static void put_axes_tuple(Buf *b, const Mesh *m, uint32_t mask, bool quote) {
  int n = 0;
  for (int k = 0; k < m->naxes; k++) n += (mask >> k) & 1;
  buf_puts(b, n > 1 ? "(" : quote ? "'" : "");
  for (int k = 0, c = 0; k < m->naxes; k++)
    if (mask & (1u << k)) buf_printf(b, "%s%.*s", c++ ? ", " : "", m->axis[k].n, m->axis[k].p);
  buf_puts(b, n > 1 ? ")" : quote ? "'" : "");
}

/* An out_spec that leaves out axes `extra` the result varies over: what
   it promises, and the two fixes (reduce over them, or split along them). */
static void replication_error(Span at, const Mesh *m, const Spec *spc, const IrAtom *o, uint32_t extra) {
  Buf b = {0}, ax = {0}, fix = {0}, ex = {0};
  err_defer(buf_release, &b);
  err_defer(buf_release, &ax);
  err_defer(buf_release, &fix);
  err_defer(buf_release, &ex);
  rule_spec_text(&b, spc, m);
  show_vma_message(&ax, o->t.vma, m);
  put_axes_tuple(&ex, m, extra, true);
  size_t q = ex.n;
  put_axes_tuple(&ex, m, extra, false);    /* unquoted, after the quoted */
  const char *nm = o->var && o->var->name.n ? o->var->name.p : "the result";
  int nl = o->var && o->var->name.n ? o->var->name.n : (int)strlen("the result");
  /* the spec with the missing axes added to its first unsplit dimension */
  Spec s2 = *spc;
  int d = 0;
  while (d < s2.ndims && s2.dim[d].naxes) d++;
  if (d >= o->t.rank) d = 0;
  if (d >= s2.ndims) s2.ndims = d + 1;
  for (int k = 0; k < m->naxes; k++)
    if (extra & (1u << k)) s2.dim[d].axes[s2.dim[d].naxes++] = (uint8_t)k;
  rule_spec_text(&fix, &s2, m);
  bool one = !(extra & (extra - 1));
  diag_error(at, "out_specs %s promises that the result is the same on every device along mesh ax%s %.*s, but "
             "%.*s varies over %s; reduce it over %.*s first (psum[axes=%s] %.*s, or pmean), or split the result "
             "along %.*s (out_specs %s)", buf_cstr(&b), one ? "is" : "es", (int)q, buf_cstr(&ex), nl, nm,
             buf_cstr(&ax), (int)q,
             buf_cstr(&ex), buf_cstr(&ex) + q, nl, nm, (int)q, buf_cstr(&ex), buf_cstr(&fix));
  err_undefer(&ex);
  buf_free(&ex);
  err_undefer(&fix);
  buf_free(&fix);
  err_undefer(&ax);
  buf_free(&ax);
  err_undefer(&b);
  buf_free(&b);
}

/* The layout a shard_map's result has outside: unreduced or reduced by
   name (a global value; the evaluator completes the sum at the exit). */
static const TypeLay *global_layout(Ctx *cx, const Mesh *m, const Spec *spc) {
  if (!spc->unred && !spc->red) return NULL;
  TypeLay *l = NEW(cx->C, TypeLay);
  uint32_t sets[2] = {spc->unred, spc->red};
  for (int s = 0; s < 2; s++) {
    if (!sets[s]) continue;
    Buf b = {0};
    err_defer(buf_release, &b);
    int n = 0;
    for (int k = 0; k < m->naxes; k++) n += (sets[s] >> k) & 1;
    if (n > 1) buf_putc(&b, '(');
    for (int k = 0, c = 0; k < m->naxes; k++)
      if (sets[s] & (1u << k)) buf_printf(&b, "%s%.*s", c++ ? "," : "", m->axis[k].n, m->axis[k].p);
    if (n > 1) buf_putc(&b, ')');
    Str t = {arena_strndup(&cx->C->prog.arena, buf_cstr(&b), (size_t)b.n), b.n};
    if (s) l->red = t; else l->unred = t;
    err_undefer(&b);
    buf_free(&b);
  }
  l->ukind = spc->ukind;
  return l;
}

/* The specs of the body's results, and the global type each assembles
   to; with check_vma a result may not vary over an axis its spec leaves
   out (that would promise a replication the result does not have). */
static bool out_globals(Ctx *sub, RuleCtx *r, Span sp, const Mesh *m, PVal **outs, ShardMap *sm, const IrFunc *f,
                        Type *gout) {
  for (int i = 0; i < sm->nout; i++) {
    if (!smap_parse_spec(sub, m, outs[i], &sm->out[i])) return !(r->failed = true);
    Spec *spc = &sm->out[i];
    const IrAtom *o = &f->outs[i];
    if (spc->ndims > o->t.rank) {
      spec_error(sp, outs[i], spc, m, "result %d is %s, of rank %d, but its spec %%s has %d entr%s", i + 1,
                 check_type_text(sub, &o->t), o->t.rank, spc->ndims, spc->ndims == 1 ? "y" : "ies");
      return !(r->failed = true);
    }
    if (o->t.unred != spc->unred || (o->t.unred && o->t.ukind != spc->ukind)) {
      Buf b = {0};
      err_defer(buf_release, &b);
      show_type(&b, &o->t, m);
      if (o->t.unred & ~spc->unred)
        spec_error(o->sp.file >= 0 ? o->sp : sp, outs[i], spc, m, "result %d is %s, unreduced (a summand on each "
                   "device), but out_specs %%s leaves the sum to no one: complete it first (psum), or say "
                   "unreduced in the spec, as P(unreduced={...})", i + 1, buf_cstr(&b));
      else
        spec_error(o->sp.file >= 0 ? o->sp : sp, outs[i], spc, m, "out_specs %%s says result %d is unreduced, "
                   "but it is %s", i + 1, buf_cstr(&b));
      err_undefer(&b);
      buf_free(&b);
      return !(r->failed = true);
    }
    uint32_t extra = o->t.vma & ~spc->mask & ~o->t.unred;
    if (sm->check_vma && extra) {
      replication_error(o->sp.file >= 0 ? o->sp : sp, m, spc, o, extra);
      return !(r->failed = true);
    }
    gout[i] = o->t;
    gout[i].vma = 0;
    gout[i].unred = gout[i].red = 0;
    gout[i].ukind = UK_SUM;
    gout[i].lay = global_layout(sub, m, spc);
    for (int d = 0; d < spc->ndims; d++) gout[i].shape[d] *= til_blocks_along(m, spc, d);
  }
  return true;
}

/* Check the specs and operands of a shard_map, its body at the block
   types, and build its equation's attributes and canonical parameters. */
static IrFunc *build_shard_map(Ctx *cx, RuleCtx *r, Span sp, FuncDef *body, const Type *args, int nargs,
                               Attrs *at, Type **outp, int *noutp) {
  if (cx->mesh) {
    rule_error(r, "shard_map inside a shard_map body is not supported");
    return NULL;
  }
  Mesh *m = smap_mesh_value(cx, r, rule_get(r, "mesh"));
  if (!m) return NULL;
  PVal **ins, **outs;
  int nin, nout;
  if (!side_specs(cx, r, "in_specs", "in_names", nargs, &ins, &nin)) return NULL;
  if (!pv_unparen(rule_get(r, "out_specs")) && !pv_unparen(rule_get(r, "out_names")))
    return rule_missing(r, "out_specs"), NULL;
  bool check_vma = true;
  PVal *cr = pv_unparen(rule_get(r, "check_rep"));
  if (cr && cr->k != PV_BOOL) return rule_param_error(r, "check_rep", "check_rep must be True or False"), NULL;
  if (!rule_bool(r, "check_vma", cr ? cr->i != 0 : true, &check_vma)) return NULL;
  uint32_t manual;
  if (!manual_mask(r, m, &manual)) return NULL;
  if (!rule_unused(r, "f mesh in_specs out_specs check_vma axis_names")) return NULL;
  const Mesh *whole = m;
  if (manual != (m->naxes >= 32 ? 0u : 1u << m->naxes) - 1u) m = manual_mesh(cx, m, manual);
  if (nin != nargs) {
    rule_param_error(r, "in_specs", "shard_map has %d in_specs for %d argument%s", nin, nargs, nargs == 1 ? "" : "s");
    return NULL;
  }
  ShardMap *sm = NEW(cx->C, ShardMap);
  sm->mesh = m;
  sm->check_vma = check_vma;
  sm->in = NEWN(cx->C, Spec, nin);
  sm->nin = nin;
  Type *block = NEWN(cx->C, Type, nargs);
  if (!in_blocks(cx, r, sp, m, ins, sm, args, nargs, block)) return NULL;
  Ctx sub = *cx;
  sub.mesh = m;
  sub.ctrl = 0;
  IrFunc *f = check_instantiate(&sub, body, block, nargs, sp);
  if (!f) { r->failed = true; return NULL; }
  if (!side_specs(cx, r, "out_specs", "out_names", f->nouts, &outs, &nout)) return NULL;
  if (nout != f->nouts) {
    rule_param_error(r, "out_specs", "shard_map has %d out_specs for %d result%s", nout, f->nouts, f->nouts == 1 ? "" : "s");
    return NULL;
  }
  sm->out = NEWN(cx->C, Spec, nout);
  sm->nout = nout;
  Type *gout = NEWN(cx->C, Type, nout);
  if (!out_globals(&sub, r, sp, m, outs, sm, f, gout)) return NULL;
  at->ext = sm;
  check_add_fn(cx, at, f);
  /* canonical parameters */
  rule_record(r, "f", check_fn_ref(cx, 0));
  rule_record(r, "mesh", smap_mesh_pv(cx, whole));
  if (m->full) rule_record(r, "axis_names", axis_names_pv(cx, m));
  PVal *it = NEW(cx->C, PVal), *ot = NEW(cx->C, PVal);
  it->k = ot->k = PV_TUPLE;
  it->items = ins; it->n = nin;
  ot->items = outs; ot->n = nout;
  rule_record(r, "in_specs", it);
  rule_record(r, "out_specs", ot);
  *outp = gout;
  *noutp = nout;
  return f;
}

void smap_eqn(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  const char *fkey = rule_has(r, "f") || !rule_has(r, "jaxpr") ? "f" : "jaxpr";
  FuncDef *fd = check_func_param(cx, r, fkey, rule_get(r, fkey));
  if (!fd) { check_bind_bad(cx, s); return; }
  if (!check_finish_literals(cx, in, (const AstArg *const *)s->args, s->nargs)) { check_bind_bad(cx, s); return; }
  Type *args = NEWN(cx->C, Type, s->nargs);
  for (int i = 0; i < s->nargs; i++) { in[i].t.weak = false; args[i] = in[i].t; }
  Type *out;
  int nout;
  if (!build_shard_map(cx, r, s->callee_sp, fd, args, s->nargs, at, &out, &nout)) { check_bind_bad(cx, s); return; }
  check_emit_special(cx, s, P_SHARD_MAP, at, r, in, s->nargs, out, nout, 0);
}

/* A decorated def called with global argument types: a wrapper function
   whose one equation is the shard_map of the body. */
void smap_wrap_begin(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Wrapper *W) {
  Checker *C = cx->C;
  AstFunc *af = fd->ast;
  W->inst = check_new_instance(cx, args, nargs);
  W->inst->next = fd->inst;
  fd->inst = W->inst;
  IrFunc *w = W->w = check_new_func(C, fd, NULL);
  check_ctx_init(&W->sub, C, w, fd->scope, NULL, 0, af->sp.file);
  w->params = NEWN(C, IrVar *, nargs);
  w->nparams = nargs;
  W->in = NEWN(C, IrAtom, nargs);
  for (int i = 0; i < nargs; i++) {
    w->params[i] = emit_var(EM(&W->sub), i < af->nparams ? af->params[i]->name : str_c("x"), args[i], af->sp);
    W->in[i].var = w->params[i];
    W->in[i].t = args[i];
    W->in[i].sp = af->sp;
  }
  FuncDef *body = W->body = NEW(C, FuncDef);
  *body = *fd;
  body->inst = NULL;
  body->latest = NULL;
  body->parent = fd->parent;
  AstFunc *plain = NEW(C, AstFunc);
  *plain = *af;
  plain->has_deco = false;
  body->ast = plain;
}

IrFunc *smap_wrap_end(Wrapper *W, FuncDef *fd, IrStmt *st, const Type *out, const IrAtom *named, int nout) {
  Checker *C = W->sub.C;
  AstFunc *af = fd->ast;
  IrFunc *w = W->w;
  st->in = W->in;
  st->nin = w->nparams;
  st->out = NEWN(C, IrVar *, nout);
  st->nout = nout;
  w->outs = NEWN(C, IrAtom, nout);
  w->nouts = nout;
  for (int i = 0; i < nout; i++) {
    st->out[i] = emit_var(EM(&W->sub), named[i].var && named[i].var->name.n ? named[i].var->name : str_c("y"), out[i],
                          af->sp);
    w->outs[i].var = st->out[i];
    w->outs[i].t = out[i];
    w->outs[i].sp = af->sp;
  }
  emit_stmt(EM(&W->sub), st);
  W->inst->ir = w;
  fd->latest = w;
  return w;
}

IrFunc *smap_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call) {
  Checker *C = cx->C;
  AstFunc *af = fd->ast;
  if (!str_eqc(af->deco, "shard_map")) {
    diag_error(af->deco_sp, "unknown decorator '@%.*s' (shm knows @shard_map, @pmap and @xmap)", af->deco.n, af->deco.p);
    return NULL;
  }
  if (cx->mesh) {      /* as for the equation form: no shard_map inside a body */
    diag_error(call, "%.*s is a shard_map: it cannot be called inside a shard_map body (a body runs per device)",
               fd->name.n, fd->name.p);
    return NULL;
  }
  Wrapper W;
  smap_wrap_begin(cx, fd, args, nargs, &W);
  W.w->is_shard_map_wrapper = true;
  RuleCtx r;
  rule_init(&r, &C->prog.arena, NULL, "shard_map", af->deco_sp, af->deco_params, af->ndeco_params);
  Attrs *at = NEW(C, Attrs);
  at->dtype = -1;
  Type *out;
  int nout;
  int errs = diag_count();
  IrFunc *f = build_shard_map(&W.sub, &r, call.file >= 0 ? call : af->sp, W.body, args, nargs, at, &out, &nout);
  if (!f) {
    if (diag_count() > errs && (call.file != af->sp.file || call.off != af->sp.off))
      check_call_note(call, fd, args, nargs, NULL);
    return NULL;
  }
  IrStmt *st = emit_new_stmt(EM(&W.sub), IS_EQN, af->deco_sp);
  st->prim = P_SHARD_MAP;
  st->at = at;
  st->params = r.canon;
  st->nparams = r.ncanon;
  return smap_wrap_end(&W, fd, st, out, f->outs, nout);
}

/* A decorated def whose parameters are all annotated (with block types)
   is checked where it is defined: the global types follow from in_specs. */
void smap_define(Ctx *cx, FuncDef *fd) {
  AstFunc *af = fd->ast;
  if (str_eqc(af->deco, "pmap") || str_eqc(af->deco, "xmap")) return;   /* checked at each call */
  if (!check_all_annotated(af) || !str_eqc(af->deco, "shard_map")) {
    if (!str_eqc(af->deco, "shard_map"))
      diag_error(af->deco_sp, "unknown decorator '@%.*s' (shm knows @shard_map, @pmap and @xmap)", af->deco.n,
                 af->deco.p);
    return;
  }
  RuleCtx r;
  rule_init(&r, &cx->C->prog.arena, cx->mesh, "shard_map", af->deco_sp, af->deco_params, af->ndeco_params);
  Mesh *m = smap_mesh_value(cx, &r, rule_get(&r, "mesh"));
  PVal **ins;
  int nin;
  uint32_t manual;
  if (!m || !manual_mask(&r, m, &manual)) return;
  if (manual != (m->naxes >= 32 ? 0u : 1u << m->naxes) - 1u) m = manual_mesh(cx, m, manual);
  if (!spec_list(&r, "in_specs", rule_get(&r, "in_specs"), af->nparams, &ins, &nin)) return;
  if (nin != af->nparams) {
    rule_param_error(&r, "in_specs", "shard_map has %d in_specs for %d parameter%s", nin, af->nparams,
                     af->nparams == 1 ? "" : "s");
    return;
  }
  Type *args = NEWN(cx->C, Type, af->nparams);
  for (int i = 0; i < af->nparams; i++) {
    bool has_vma;
    Ctx sub = *cx;
    sub.mesh = m;
    if (!check_resolve_type(&sub, af->params[i]->type, &args[i], &has_vma)) return;
    Spec spc;
    if (!smap_parse_spec(cx, m, ins[i], &spc)) return;
    if (spc.ndims > args[i].rank) {
      Buf b = {0};
      rule_spec_text(&b, &spc, m);
      diag_error(ins[i]->sp.file >= 0 ? ins[i]->sp : af->deco_sp,
                 "parameter %d (%.*s) is %s, of rank %d, but its spec %s has %d entr%s", i + 1,
                 af->params[i]->name.n, af->params[i]->name.p, check_type_text(&sub, &args[i]), args[i].rank,
                 buf_cstr(&b), spc.ndims, spc.ndims == 1 ? "y" : "ies");
      buf_free(&b);
      return;
    }
    for (int d = 0; d < spc.ndims; d++) args[i].shape[d] *= til_blocks_along(m, &spc, d);
    args[i].vma = 0;
  }
  check_instantiate(cx, fd, args, af->nparams, af->sp);
}

/* ---- print[global=...] ---- */

/* Can spec assemble a value of type t (rank enough, every axis it varies
   over mentioned)? */
bool smap_print_spec(Ctx *cx, AstArg *a, const Type *t, const Spec *spc) {
  uint32_t left = t->vma & ~spc->mask;
  if (spc->ndims <= t->rank && !left) return true;
  Buf b = {0};
  err_defer(buf_release, &b);
  if (spc->ndims > t->rank) {
    rule_spec_text(&b, spc, cx->mesh);
    diag_error(a->sp, "global=%s has %d entries, but this value has rank %d", buf_cstr(&b), spc->ndims, t->rank);
    left = 0;
  }
  for (int k = 0; k < cx->mesh->naxes; k++)
    if (left & (1u << k)) buf_printf(&b, "%s'%.*s'", b.n ? ", " : "", cx->mesh->axis[k].n, cx->mesh->axis[k].p);
  if (left)
    diag_error(a->sp, "this value varies over mesh axis %s, which the spec of global= does not mention: "
               "no one global array holds it", buf_cstr(&b));
  err_undefer(&b);
  buf_free(&b);
  return false;
}

/* print's parameter: global=True (or False), or global=P(...), the spec
   that assembles each value (only inside a shard_map body). */
bool smap_print_params(Ctx *cx, AstStmt *s, IrStmt *st) {
  for (int k = 0; k < s->nparams; k++) {
    AstParam *p = s->params[k];
    PVal *v = p->v;
    if (!str_eqc(p->key, "global")) {
      diag_error(p->sp, "print has one parameter, global=True (the assembled array of each value inside a "
                 "shard_map body), not '%.*s'", p->key.n, p->key.p);
      return false;
    }
    if (!cx->mesh) {
      diag_error(p->sp, "global= is for print inside a shard_map body; here every value is already one array");
      return false;
    }
    if (v->k == PV_BOOL) st->print_global = v->i != 0;
    else if (v->k == PV_SPEC || v->k == PV_CALL) {
      st->print_spec = NEWN(cx->C, Spec, 1);
      if (!smap_parse_spec(cx, cx->mesh, v, st->print_spec)) return false;
      st->print_global = true;
    } else {
      diag_error(v->sp, "global= takes True, False or a partition spec such as P(i)");
      return false;
    }
  }
  return true;
}
