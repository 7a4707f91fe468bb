/*
** check_xmap.c — xmap: its parameters, its body checked over named axes,
** and the equation a call becomes (check_xlower.c makes what runs);
** also the statements that mean other primitives: a reduction over named
** axes in an xmap body, pdot in a shard_map body.
**
** An xmap body is checked as a shard_map body over a mesh of the named
** axes (Mesh.named): a value's named shape is its variance set there, so
** broadcasting by name is the checker's lifting, a collective over named
** axes removes them, and axis_index varies over exactly its axes.  The
** parameters follow jax.experimental.maps.xmap, and so do the messages of
** its errors.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "show.h"

/* ---- statements that mean other primitives --------------------------------------- */

/* The name of the value between the two statements of a desugared one:
   no program can write it. */
static Str tmp_name(void) { return str_c("'"); }

static AstParam *mk_param(Ctx *cx, const char *key, Span sp, PVal *v) {
  AstParam *p = NEW(cx->C, AstParam);
  p->key = str_c(key);
  p->sp = sp;
  p->v = v;
  return p;
}

/* `binder = callee[ps] args`, at the place of s; binder NULL: the value
   named tmp_name(). */
static AstStmt *mk_stmt(Ctx *cx, const AstStmt *s, AstBinder *binder, const char *callee, AstParam **ps, int nps,
                        AstArg **args, int nargs) {
  AstStmt *t = NEW(cx->C, AstStmt);
  *t = *s;
  if (!binder) {
    binder = NEW(cx->C, AstBinder);
    binder->name = tmp_name();
    binder->sp = s->outs[0]->sp;
  }
  t->outs = NEWN(cx->C, AstBinder *, 1);
  t->outs[0] = binder;
  t->nouts = 1;
  t->callee = str_c(callee);
  t->params = ps;
  t->nparams = nps;
  t->has_params = true;
  t->args = args;
  t->nargs = nargs;
  return t;
}

/* Check `first` (bound to tmp_name()), then `second`, which reads it; the
   value between takes the name of s's binder. */
static void check_pair(Ctx *cx, AstStmt *s, AstStmt *first, AstStmt *second) {
  check_stmt(cx, first);
  Binding *b = check_lookup(cx->scope, B_VAR, tmp_name());
  if (b) b->var->name = str_eqc(s->outs[0]->name, "_") ? str_c("") : s->outs[0]->name;
  check_stmt(cx, second);
}

static AstArg **tmp_arg(Ctx *cx, Span sp) {
  AstArg **a = NEWN(cx->C, AstArg *, 1);
  a[0] = NEW(cx->C, AstArg);
  a[0]->k = ARG_NAME;
  a[0]->sp = sp;
  a[0]->name = tmp_name();
  return a;
}

static PVal *param_of(const AstStmt *s, const char *key) {
  for (int i = 0; i < s->nparams; i++)
    if (str_eqc(s->params[i]->key, key)) return s->params[i]->v;
  return NULL;
}

/* An error at s: its results bound to the bad type. */
static bool reject(Ctx *cx, AstStmt *s, Span sp, const char *fmt, ...) SHM_PRINTF(4, 5);
static bool reject(Ctx *cx, AstStmt *s, Span sp, const char *fmt, ...) {
  bool reported = false;
  va_list ap;
  va_start(ap, fmt);
  diag_error_once(&reported, sp, fmt, ap);
  va_end(ap);
  check_bind_bad(cx, s);
  return true;
}

/* pdot in a shard_map body: dot_general of the positional dimensions,
   then psum over the axes. */
static bool desugar_pdot(Ctx *cx, AstStmt *s) {
  for (int i = 0; i < s->nparams; i++)
    if (!prim_accepts(P_PDOT, s->params[i]->key))
      return reject(cx, s, s->params[i]->sp, "pdot has no parameter '%.*s' (its parameters: %s)",
                    s->params[i]->key.n, s->params[i]->key.p, prim_table[P_PDOT].params);
  if (s->nargs != 2)
    return reject(cx, s, s->callee_sp, "pdot takes 2 operands, but %d %s given", s->nargs, s->nargs == 1 ? "was" : "were");
  if (s->nouts != 1)
    return reject(cx, s, s->outs[0]->sp, "pdot gives 1 result, but %d names are bound", s->nouts);
  PVal *axes = param_of(s, "axis_name");
  if (!axes) axes = param_of(s, "axes");
  if (!axes) return reject(cx, s, s->callee_sp, "pdot requires the parameter 'axis_name'");
  PVal *dn = NEW(cx->C, PVal);
  dn->k = PV_TUPLE;
  dn->n = 2;
  dn->items = NEWN(cx->C, PVal *, 2);
  dn->sp = s->callee_sp;
  for (int k = 0; k < 2; k++) {
    PVal *v = param_of(s, k ? "pos_batch" : "pos_contract");
    if (!v) {                  /* ((), ()) */
      v = NEW(cx->C, PVal);
      v->k = PV_TUPLE;
      v->n = 2;
      v->items = NEWN(cx->C, PVal *, 2);
      for (int j = 0; j < 2; j++) {
        v->items[j] = NEW(cx->C, PVal);
        v->items[j]->k = PV_TUPLE;
        v->items[j]->sp = s->callee_sp;
      }
      v->sp = s->callee_sp;
    }
    dn->items[k] = v;
  }
  AstParam **ps = NEWN(cx->C, AstParam *, 3);
  int n = 0;
  ps[n++] = mk_param(cx, "dimension_numbers", s->callee_sp, dn);
  for (int i = 0; i < s->nparams; i++)
    if (str_eqc(s->params[i]->key, "precision") || str_eqc(s->params[i]->key, "preferred_element_type"))
      ps[n++] = s->params[i];
  AstParam **ps2 = NEWN(cx->C, AstParam *, 1);
  ps2[0] = mk_param(cx, "axes", s->callee_sp, axes);
  AstStmt *dot = mk_stmt(cx, s, NULL, "dot_general", ps, n, s->args, s->nargs);
  AstStmt *sum = mk_stmt(cx, s, s->outs[0], "psum", ps2, 1, tmp_arg(cx, s->callee_sp), 1);
  check_pair(cx, s, dot, sum);
  return true;
}

/* A reduction over named axes in an xmap body: the positional part, then
   the collective over the named part (jnp.sum(x, axis=(0, 'batch'))). */
static bool desugar_named_reduce(Ctx *cx, AstStmt *s, int prim) {
  int k = -1;
  for (int i = 0; i < s->nparams; i++)
    if (str_eqc(s->params[i]->key, "axes")) k = i;
  PVal *v = k >= 0 ? pv_unparen(s->params[k]->v) : NULL;
  if (!v) return false;
  PVal **items = &v;
  int n = 1;
  if (v->k == PV_TUPLE || v->k == PV_LIST) { items = v->items; n = v->n; }
  int npos = 0, nnamed = 0;
  for (int i = 0; i < n; i++) {
    PVal *e = pv_unparen(items[i]);
    if (e->k == PV_NAME || e->k == PV_STR) nnamed++;
    else npos++;
  }
  if (!nnamed) return false;
  int coll = prim == P_REDUCE_SUM ? P_PSUM : prim == P_REDUCE_MAX ? P_PMAX : prim == P_REDUCE_MIN ? P_PMIN : -1;
  if (coll < 0)
    return reject(cx, s, s->params[k]->v->sp, "%s over a named axis: only reduce_sum, reduce_max and reduce_min "
                  "reduce over named axes, as jnp.sum, jnp.max and jnp.min do", prim_table[prim].name);
  if (s->nouts != 1)
    return reject(cx, s, s->outs[0]->sp, "%s gives 1 result, but %d names are bound", prim_table[prim].name, s->nouts);
  PVal *pos = NEW(cx->C, PVal), *named = NEW(cx->C, PVal);
  pos->k = named->k = PV_TUPLE;
  pos->sp = named->sp = s->params[k]->v->sp;
  pos->items = NEWN(cx->C, PVal *, npos);
  named->items = NEWN(cx->C, PVal *, nnamed);
  for (int i = 0; i < n; i++) {
    PVal *e = pv_unparen(items[i]);
    if (e->k == PV_NAME || e->k == PV_STR) named->items[named->n++] = e;
    else pos->items[pos->n++] = e;
  }
  AstParam **ps2 = NEWN(cx->C, AstParam *, 1);
  ps2[0] = mk_param(cx, "axes", s->params[k]->sp, named);
  if (!npos) {
    check_stmt(cx, mk_stmt(cx, s, s->outs[0], prim_table[coll].name, ps2, 1, s->args, s->nargs));
    return true;
  }
  AstParam **ps = NEWN(cx->C, AstParam *, s->nparams);
  memcpy(ps, s->params, sizeof(AstParam *) * (size_t)s->nparams);
  ps[k] = mk_param(cx, "axes", s->params[k]->sp, pos);
  AstStmt *red = mk_stmt(cx, s, NULL, prim_table[prim].name, ps, s->nparams, s->args, s->nargs);
  AstStmt *sum = mk_stmt(cx, s, s->outs[0], prim_table[coll].name, ps2, 1, tmp_arg(cx, s->callee_sp), 1);
  check_pair(cx, s, red, sum);
  return true;
}

bool xmap_desugar(Ctx *cx, AstStmt *s) {
  if (!cx->mesh || check_lookup(cx->scope, B_FUNC, s->callee)) return false;
  int prim = prim_lookup(s->callee);
  if (prim < 0) return false;
  if (prim == P_PDOT && !cx->mesh->named) return desugar_pdot(cx, s);
  if (!cx->mesh->named) return false;
  if (prim == P_REDUCE_SUM || prim == P_REDUCE_MAX || prim == P_REDUCE_MIN || prim == P_REDUCE_PROD ||
      prim == P_REDUCE_AND || prim == P_REDUCE_OR || prim == P_REDUCE_XOR || prim == P_ARGMAX || prim == P_ARGMIN)
    return desugar_named_reduce(cx, s, prim);
  if (prim == P_SHARD_MAP || prim == P_XMAP)
    return reject(cx, s, s->callee_sp, "%s inside an xmap body is not supported", prim_table[prim].name);
  if (prim == P_PSUM_SCATTER || prim == P_ALL_TO_ALL || prim == P_PSCATTER)
    return reject(cx, s, s->callee_sp, "%s is not supported in an xmap body (over named axes shm lowers psum, pmean, "
                  "pmax, pmin, pdot, all_gather, ppermute, pbroadcast and axis_index)", prim_table[prim].name);
  return false;
}

/* A named shape `<batch:20, ...>`: the named axes of the xmap body a type
   stands in, with their sizes. */
bool xmap_named_shape(Ctx *cx, const AstType *at, Type *t, bool *has_vma) {
  const Mesh *m = cx ? cx->mesh : NULL;
  if (!m || !m->named) {
    diag_error(at->named_sp, "a named shape <...> stands only inside an xmap body, whose named axes it names");
    return false;
  }
  if (at->has_vma) {
    diag_error(at->named_sp, "a type has a variance set {...} or a named shape <...>, not both");
    return false;
  }
  for (int i = 0; i < at->nnamed; i++) {
    int k = -1;
    for (int a = 0; a < m->naxes; a++)
      if (str_eq(m->axis[a], at->named[i])) k = a;
    if (k < 0) {
      diag_error(at->named_sp, "'%.*s' is not a named axis of this xmap", at->named[i].n, at->named[i].p);
      return false;
    }
    if (at->named_size[i] != m->size[k]) {
      diag_error(at->named_sp, "named axis %.*s has size %lld, not %lld", at->named[i].n, at->named[i].p,
                 (long long)m->size[k], (long long)at->named_size[i]);
      return false;
    }
    if (t->vma & (1u << k)) {
      diag_error(at->named_sp, "named axis %.*s appears twice in a named shape", at->named[i].n, at->named[i].p);
      return false;
    }
    t->vma |= 1u << k;
  }
  *has_vma = true;
  return true;
}

/* ---- the parameters ------------------------------------------------------------------- */

/* `{0: batch}`, `[batch, ...]` as written, for messages. */
static const char *repr(Ctx *cx, const PVal *v) {
  Buf b = {0};
  err_defer(buf_release, &b);
  if (v) show_param_value(&b, v);
  else buf_puts(&b, "{}");
  char *r = arena_strndup(&cx->C->prog.arena, buf_cstr(&b), (size_t)b.n);
  err_undefer(&b);
  buf_free(&b);
  return r;
}

/* Append name to a list "a, b" unless it is there. */
static void add_unique(Buf *b, Str name) {
  const char *t = buf_cstr(b);
  for (const char *q = t; *q;) {
    const char *e = strstr(q, ", ");
    size_t n = e ? (size_t)(e - q) : strlen(q);
    if (n == (size_t)name.n && !memcmp(q, name.p, n)) return;
    if (!e) break;
    q = e + 2;
  }
  buf_printf(b, "%s%.*s", b->n ? ", " : "", name.n, name.p);
}

static int axis_of(const XPlan *p, Str name) {
  for (int k = 0; k < p->naxes; k++)
    if (str_eq(p->ax[k].name, name)) return k;
  return -1;
}

/* A mapping's named axis: defined here (in_axes), or already (out_axes),
   its index; -1 after an error, -2 when undefined (out_axes collects those). */
static int mapping_axis(RuleCtx *r, const char *key, XPlan *p, PVal *e, bool define) {
  int k = axis_of(p, e->s);
  if (k >= 0 || !define) return k >= 0 ? k : -2;
  if (p->naxes == SHM_MAXAXES) {
    rule_param_error(r, key, "an xmap has at most %d named axes", SHM_MAXAXES);
    return -1;
  }
  k = p->naxes++;
  p->ax[k].name = e->s;
  return k;
}

/* Add named axis k at dimension d to m (checking repeats). */
static bool mapping_add(Ctx *cx, RuleCtx *r, const char *key, XMapping *m, int k, int64_t d, PVal *v) {
  for (int i = 0; i < m->n; i++) {
    if (m->axis[i] == k)
      return rule_param_error(r, key, "Named axes should be unique within each %s argument specification, but one "
                              "of them is: %s", key, repr(cx, v));
    if (m->dim[i] == d)
      return rule_param_error(r, key, "dimension %lld is named twice in the %s specification %s", (long long)d, key,
                              repr(cx, v));
  }
  m->axis[m->n] = (uint8_t)k;
  m->dim[m->n++] = (int)d;
  return true;
}

/* One axis mapping: `{dim: name, ...}`, or a list of names (None skips a
   dimension) that ends in `...` or asserts the rank. */
static bool parse_mapping(Ctx *cx, RuleCtx *r, const char *key, XPlan *p, PVal *v, bool define, XMapping *m,
                          Buf *missing) {
  memset(m, 0, sizeof *m);
  m->src = v;
  m->rank = -1;
  v = pv_unparen(v);
  const char *bad = "Value mapping specification in xmap %s can be either: a list of axis names (possibly ending "
                    "with ...), or a dictionary that maps positional axes (integers) to axis names (e.g. {2: name}), "
                    "but got: %s";
  if (v->k == PV_DICT) {
    if (!pv_is_map(v)) return rule_param_error(r, key, bad, key, repr(cx, v));
    for (int i = 0; i < v->n; i++) {
      PVal *d = pv_unparen(pv_key(v, i)), *e = pv_unparen(pv_val(v, i));
      if (d->k != PV_INT || (e->k != PV_NAME && e->k != PV_STR)) return rule_param_error(r, key, bad, key, repr(cx, v));
      if (d->i < 0) return rule_param_error(r, key, "xmap doesn't support negative axes in %s", key);
      if (d->i >= SHM_MAXRANK) return rule_param_error(r, key, "dimension %lld is beyond the largest rank", (long long)d->i);
      int k = mapping_axis(r, key, p, e, define);
      if (k == -1) return false;
      if (k == -2) { add_unique(missing, e->s); continue; }
      if (!mapping_add(cx, r, key, m, k, d->i, v)) return false;
    }
    return true;
  }
  if (v->k != PV_LIST && v->k != PV_TUPLE) return rule_param_error(r, key, bad, key, repr(cx, v));
  m->rank = v->n;
  for (int i = 0; i < v->n; i++) {
    PVal *e = pv_unparen(v->items[i]);
    if (e->k == PV_ELLIPSIS && i == v->n - 1) { m->rank = -1; break; }
    if (e->k == PV_NONE) continue;
    if (e->k != PV_NAME && e->k != PV_STR) return rule_param_error(r, key, bad, key, repr(cx, v));
    int k = mapping_axis(r, key, p, e, define);
    if (k == -1) return false;
    if (k == -2) { add_unique(missing, e->s); continue; }
    if (!mapping_add(cx, r, key, m, k, i, v)) return false;
  }
  return true;
}

/* A mapping (not a tuple of them): a dictionary, or a list or tuple of
   names, None and `...`. */
static bool is_mapping(PVal *v) {
  v = pv_unparen(v);
  if (v->k == PV_DICT) return true;
  if (v->k != PV_LIST && v->k != PV_TUPLE) return false;
  for (int i = 0; i < v->n; i++) {
    PVal *e = pv_unparen(v->items[i]);
    if (e->k != PV_NAME && e->k != PV_STR && e->k != PV_NONE && e->k != PV_ELLIPSIS) return false;
  }
  return v->n > 0;
}

/* in_axes or out_axes: one mapping per argument (result), or one for all. */
static bool parse_mappings(Ctx *cx, RuleCtx *r, const char *key, XPlan *p, int want, bool define, XMapping **out) {
  PVal *v = pv_unparen(rule_get(r, key));
  if (!v) return rule_missing(r, key);
  PVal **items = &v;
  int n = 1;
  if (!is_mapping(v)) {
    if (v->k != PV_TUPLE && v->k != PV_LIST) return rule_param_error(r, key, "%s must be an axis mapping or a tuple of them", key);
    items = v->items;
    n = v->n;
  }
  if (n == 1 && want != 1 && items == &v) n = want;      /* one mapping for all */
  else if (n != want) {
    const char *what = define ? "argument" : "result";
    return rule_param_error(r, key, "xmap has %d %s for %d %s%s", n, key, want, what, want == 1 ? "" : "s");
  }
  *out = NEWN(cx->C, XMapping, n);
  Buf missing = {0};
  err_defer(buf_release, &missing);
  bool ok = true;
  for (int i = 0; i < n && ok; i++) ok = parse_mapping(cx, r, key, p, items == &v ? v : items[i], define, &(*out)[i], &missing);
  if (ok && missing.n)
    ok = rule_param_error(r, key, "All axis names appearing in out_axes must also appear in in_axes or axis_sizes, "
                          "but the following are missing: {%s}", buf_cstr(&missing));
  err_undefer(&missing);
  buf_free(&missing);
  return ok;
}

/* axis_sizes={name: size, ...}: named axes no argument maps. */
static bool parse_sizes(Ctx *cx, RuleCtx *r, XPlan *p) {
  (void)cx;
  PVal *v = pv_unparen(rule_get(r, "axis_sizes"));
  if (!v) return true;
  if (!pv_is_map(v)) return rule_param_error(r, "axis_sizes", "axis_sizes must be a dictionary {name: size, ...}");
  for (int i = 0; i < v->n; i++) {
    PVal *e = pv_unparen(pv_key(v, i)), *s = pv_unparen(pv_val(v, i));
    if ((e->k != PV_NAME && e->k != PV_STR) || s->k != PV_INT)
      return rule_param_error(r, "axis_sizes", "axis_sizes must be a dictionary {name: size, ...}");
    if (s->i < 1) return rule_param_error(r, "axis_sizes", "the size of axis %.*s must be at least 1", e->s.n, e->s.p);
    int k = mapping_axis(r, "axis_sizes", p, e, true);
    if (k < 0) return false;
    p->ax[k].size = s->i;
  }
  return true;
}

/* The sizes of the named axes from the arguments: each argument's mapped
   dimensions, consistent with each other and with axis_sizes. */
static bool infer_sizes(Ctx *cx, XPlan *p, const Type *args, int nargs) {
  for (int i = 0; i < nargs; i++) {
    const XMapping *m = &p->in[i];
    const Type *t = &args[i];
    int maxd = -1;
    for (int j = 0; j < m->n; j++) maxd = m->dim[j] > maxd ? m->dim[j] : maxd;
    if (maxd >= t->rank) {
      diag_error(p->where, "One of xmap arguments has an in_axes specification of %s, which implies that it has at "
                 "least %d dimensions, but the argument has rank %d", repr(cx, m->src), maxd + 1, t->rank);
      return false;
    }
    for (int j = 0; j < m->n; j++) {
      XAxis *a = &p->ax[m->axis[j]];
      int64_t s = t->shape[m->dim[j]];
      if (a->size && a->size != s) {
        diag_error(p->where, "The size of axis %.*s was previously inferred to be %lld, but found an argument of shape "
                   "%s with in_axes specification %s. Shape mismatch occurs in dimension %d: %lld != %lld",
                   a->name.n, a->name.p, (long long)a->size, check_shape_tuple(cx, t), repr(cx, m->src), m->dim[j],
                   (long long)s, (long long)a->size);
        return false;
      }
      a->size = s;
    }
    if (m->rank >= 0 && m->rank != t->rank) {
      diag_error(p->where, "xmap argument has an in_axes specification of %s, which asserts that it should be of rank "
                 "%d, but the argument has rank %d (and shape %s)", repr(cx, m->src), m->rank, t->rank,
                 check_shape_tuple(cx, t));
      return false;
    }
  }
  return true;
}

/* axis_resources={name: mesh axes}: against the mesh in scope (the call's
   or the decorator's), which must have every resource named. */
static bool parse_resources(Ctx *cx, RuleCtx *r, XPlan *p, Mesh *mesh) {
  PVal *v = pv_unparen(rule_get(r, "axis_resources"));
  if (!v) return true;
  if (!pv_is_map(v))
    return rule_param_error(r, "axis_resources", "axis_resources must be a dictionary {name: mesh axes, ...}");
  Buf undefined = {0}, missing = {0};
  err_defer(buf_release, &undefined);
  err_defer(buf_release, &missing);
  bool ok = true;
  for (int i = 0; i < v->n && ok; i++) {
    PVal *e = pv_unparen(pv_key(v, i)), *rv = pv_unparen(pv_val(v, i));
    if (e->k != PV_NAME && e->k != PV_STR) {
      ok = rule_param_error(r, "axis_resources", "axis_resources must be a dictionary {name: mesh axes, ...}");
      break;
    }
    int k = axis_of(p, e->s);
    if (k < 0) { add_unique(&undefined, e->s); continue; }
    PVal **items = &rv;
    int n = 1;
    if (rv->k == PV_TUPLE || rv->k == PV_LIST) { items = rv->items; n = rv->n; }
    XAxis *a = &p->ax[k];
    for (int j = 0; j < n && ok; j++) {
      PVal *x = pv_unparen(items[j]);
      if (x->k != PV_NAME && x->k != PV_STR) {
        ok = rule_param_error(r, "axis_resources", "the resources of axis %.*s must be mesh axes", e->s.n, e->s.p);
        break;
      }
      int m = -1;
      for (int q = 0; mesh && q < mesh->naxes; q++)
        if (str_eq(mesh->axis[q], x->s)) m = q;
      if (m < 0) {
        add_unique(&missing, x->s);
        continue;
      }
      if (a->resmask & (1u << m))
        ok = rule_param_error(r, "axis_resources", "Resource assignment of a single axis must be a tuple of distinct "
                              "resources, but specified %s for axis %.*s", repr(cx, rv), e->s.n, e->s.p);
      a->res[a->nres++] = (uint8_t)m;
      a->resmask |= 1u << m;
    }
  }
  if (ok && undefined.n)
    ok = rule_param_error(r, "axis_resources", "All axes that were assigned resources have to appear in in_axes or "
                          "axis_sizes, but the following are missing: {%s}", buf_cstr(&undefined));
  if (ok && missing.n) {
    diag_error(p->where, "In-scope resources are insufficient to execute the xmapped function. The missing resources "
               "are: {%s}", buf_cstr(&missing));
    ok = false;
  }
  err_undefer(&missing);
  buf_free(&missing);
  err_undefer(&undefined);
  buf_free(&undefined);
  return ok;
}

/* The resource text of an axis, `(x, y)`, for messages. */
static const char *res_text(Ctx *cx, const XPlan *p, const XAxis *a) {
  Buf b = {0};
  err_defer(buf_release, &b);
  buf_putc(&b, '(');
  for (int j = 0; j < a->nres; j++)
    buf_printf(&b, "%s%.*s", j ? ", " : "", p->mesh->axis[a->res[j]].n, p->mesh->axis[a->res[j]].p);
  buf_puts(&b, a->nres == 1 ? ",)" : ")");
  char *r = arena_strndup(&cx->C->prog.arena, buf_cstr(&b), (size_t)b.n);
  err_undefer(&b);
  buf_free(&b);
  return r;
}

/* Each named axis's size is divisible by its resources' devices: its
   local size, per device. */
static bool check_divisible(Ctx *cx, XPlan *p, bool from_sizes_only) {
  for (int k = 0; k < p->naxes; k++) {
    XAxis *a = &p->ax[k];
    int64_t n = 1;
    for (int j = 0; j < a->nres; j++) n *= p->mesh->size[a->res[j]];
    if (a->size % n) {
      const XMapping *m = NULL;
      int dim = 0;
      for (int i = 0; i < p->nin && !m && !from_sizes_only; i++)
        for (int j = 0; j < p->in[i].n; j++)
          if (p->in[i].axis[j] == k && !m) { m = &p->in[i]; dim = p->in[i].dim[j]; }
      if (m)
        diag_error(p->where, "One of xmap arguments has an in_axes specification of %s, which implies that its size in "
                   "dimension %d (%lld) should be divisible by the number of resources assigned to axis %.*s (%lld)",
                   repr(cx, m->src), dim, (long long)a->size, a->name.n, a->name.p, (long long)n);
      else
        diag_error(p->where, "Size of axis %.*s (%lld) is not divisible by the total number of resources assigned to "
                   "this axis (%s, %lld in total)", a->name.n, a->name.p, (long long)a->size, res_text(cx, p, a),
                   (long long)n);
      return false;
    }
    a->local = a->size / n;
  }
  return true;
}

/* ---- the body and its results ------------------------------------------------------------ */

/* The named axes as a mesh: what the body is checked over. */
static Mesh *named_mesh(Ctx *cx, const XPlan *p) {
  Mesh *m = NEW(cx->C, Mesh);
  m->named = true;
  m->naxes = p->naxes;
  for (int k = 0; k < p->naxes; k++) {
    m->axis[k] = p->ax[k].name;
    m->size[k] = p->ax[k].size;
  }
  return m;
}

/* An argument as the body sees it: its mapped dimensions become named axes. */
static Type block_type(const XPlan *p, const XMapping *m, const Type *t) {
  Type b = *t;
  b.rank = 0;
  b.vma = 0;
  for (int d = 0; d < t->rank; d++) {
    bool named = false;
    for (int j = 0; j < m->n; j++)
      if (m->dim[j] == d) { named = true; b.vma |= 1u << m->axis[j]; }
    if (!named) b.shape[b.rank++] = t->shape[d];
  }
  (void)p;
  return b;
}

/* A result's global type: its named axes inserted where out_axes says.
   The errors of jax's xmap for results that do not fit their mapping. */
static bool result_type(Ctx *cx, const XPlan *p, const XMapping *m, const IrAtom *o, const char *fname, Type *g) {
  const Type *t = &o->t;
  Buf undeclared = {0};
  err_defer(buf_release, &undeclared);
  for (int k = 0; k < p->naxes; k++) {
    bool listed = false;
    for (int j = 0; j < m->n; j++) listed |= m->axis[j] == k;
    if ((t->vma & (1u << k)) && !listed)
      buf_printf(&undeclared, "%s%.*s", undeclared.n ? ", " : "", p->ax[k].name.n, p->ax[k].name.p);
  }
  bool ok = true;
  if (undeclared.n) {
    diag_error(p->where, "One of xmap results has an out_axes specification of %s, but is actually mapped along more "
               "axes defined by this xmap call: %s", repr(cx, m->src), buf_cstr(&undeclared));
    ok = false;
  }
  err_undefer(&undeclared);
  buf_free(&undeclared);
  if (!ok) return false;
  int rank = t->rank + m->n, maxd = -1;
  for (int j = 0; j < m->n; j++) maxd = m->dim[j] > maxd ? m->dim[j] : maxd;
  if (maxd >= rank) {
    diag_error(p->where, "One of xmap outputs has an out_axes specification of %s, which requires the result of the "
               "xmapped function to have at least %d positional dimensions, but it only has %d", repr(cx, m->src),
               maxd - m->n + 1, t->rank);
    return false;
  }
  if (rank > SHM_MAXRANK) {
    diag_error(p->where, "an xmap result would have rank %d, above the limit of %d", rank, SHM_MAXRANK);
    return false;
  }
  *g = *t;
  g->vma = 0;
  g->rank = (uint8_t)rank;
  int pos = 0;
  for (int d = 0; d < rank; d++) {
    int k = -1;
    for (int j = 0; j < m->n; j++)
      if (m->dim[j] == d) k = m->axis[j];
    g->shape[d] = k >= 0 ? p->ax[k].size : t->shape[pos++];
  }
  if (m->rank >= 0 && m->rank != rank) {
    diag_error(p->where, "xmap output has an out_axes specification of %s, which asserts that it should be of rank %d, "
               "but the output has rank %d (and shape %s)", repr(cx, m->src), m->rank, rank, check_type_text(cx, g));
    return false;
  }
  /* broadcast along an axis whose resources the result already uses */
  uint32_t used = 0;
  for (int k = 0; k < p->naxes; k++)
    if (t->vma & (1u << k)) used |= p->ax[k].resmask;
  for (int j = 0; j < m->n; j++) {
    const XAxis *a = &p->ax[m->axis[j]];
    if ((t->vma & (1u << m->axis[j])) || !(a->resmask & used)) continue;
    int by = -1;
    for (int k = 0; k < p->naxes && by < 0; k++)
      if ((t->vma & (1u << k)) && (p->ax[k].resmask & a->resmask)) by = k;
    diag_error(p->where, "One of xmapped function (%s) outputs is broadcast along axis %.*s which is assigned to "
               "resources %s, but the output is already partitioned along them, because its named shape contains %.*s",
               fname, a->name.n, a->name.p, res_text(cx, p, a), p->ax[by].name.n, p->ax[by].name.p);
    return false;
  }
  return true;
}

/* ---- canonical parameters, for show ---------------------------------------------------------- */

static PVal *pv_new(Ctx *cx, PVKind k) {
  PVal *v = NEW(cx->C, PVal);
  v->k = k;
  v->sp = span_none();
  return v;
}

static PVal *pv_name(Ctx *cx, Str s) {
  PVal *v = pv_new(cx, PV_NAME);
  v->s = s;
  return v;
}

/* A dictionary entry `key: value`. */
static PVal *pv_pair(Ctx *cx, PVal *key, PVal *value) {
  PVal *v = pv_new(cx, PV_PAIR);
  v->items = NEWN(cx->C, PVal *, 2);
  v->items[0] = key;
  v->items[1] = value;
  v->n = 2;
  return v;
}

/* A mapping as `{dim: name, ...}`, by dimension. */
static PVal *mapping_pv(Ctx *cx, const XPlan *p, const XMapping *m) {
  PVal *v = pv_new(cx, PV_DICT);
  v->items = NEWN(cx->C, PVal *, m->n);
  for (int d = 0; d < SHM_MAXRANK; d++)
    for (int j = 0; j < m->n; j++)
      if (m->dim[j] == d) {
        PVal *k = pv_new(cx, PV_INT);
        k->i = d;
        v->items[v->n++] = pv_pair(cx, k, pv_name(cx, p->ax[m->axis[j]].name));
      }
  return v;
}

static PVal *mappings_pv(Ctx *cx, const XPlan *p, const XMapping *m, int n) {
  PVal *v = pv_new(cx, PV_TUPLE);
  v->items = NEWN(cx->C, PVal *, n);
  for (int i = 0; i < n; i++) v->items[v->n++] = mapping_pv(cx, p, &m[i]);
  return v;
}

static void canonical_params(Ctx *cx, RuleCtx *r, const XPlan *p, PVal *mesh_pv) {
  rule_record(r, "f", check_fn_ref(cx, 0));
  rule_record(r, "in_axes", mappings_pv(cx, p, p->in, p->nin));
  rule_record(r, "out_axes", mappings_pv(cx, p, p->out, p->nout));
  PVal *sizes = pv_unparen(rule_get(r, "axis_sizes"));
  rule_record(r, "axis_sizes", sizes ? sizes : pv_new(cx, PV_DICT));
  PVal *res = pv_new(cx, PV_DICT);
  res->items = NEWN(cx->C, PVal *, p->naxes);
  for (int k = 0; k < p->naxes; k++) {
    const XAxis *a = &p->ax[k];
    if (!a->nres) continue;
    PVal *v = a->nres == 1 ? pv_name(cx, p->mesh->axis[a->res[0]]) : pv_new(cx, PV_TUPLE);
    if (a->nres > 1) {
      v->items = NEWN(cx->C, PVal *, a->nres);
      for (int j = 0; j < a->nres; j++) v->items[v->n++] = pv_name(cx, p->mesh->axis[a->res[j]]);
    }
    res->items[res->n++] = pv_pair(cx, pv_name(cx, a->name), v);
  }
  rule_record(r, "axis_resources", res);
  rule_record(r, "mesh", mesh_pv ? mesh_pv : pv_new(cx, PV_NONE));
}

/* ---- an xmap --------------------------------------------------------------------------------- */

typedef struct XOut {
  IrFunc *body;              /* checked over the named axes */
  IrFunc *lowered;           /* what runs */
  Type *gout;
  int nout;
} XOut;

/* Check an xmap of `body` on arguments of types args: its parameters
   (rule context r), its body, its results; lower it.  `call_mesh`: the
   mesh a call gives, which takes the place of the parameter's. */
static bool build_xmap(Ctx *cx, RuleCtx *r, Span call, FuncDef *body, const Type *args, int nargs, Mesh *call_mesh,
                       const char *name, IrFunc *parent, XOut *out) {
  if (cx->mesh) {
    rule_error(r, "xmap inside a shard_map or xmap body is not supported");
    return false;
  }
  XPlan *p = NEW(cx->C, XPlan);
  p->where = call;
  PVal *mesh_pv = pv_unparen(rule_get(r, "mesh"));
  Mesh *mesh = call_mesh;
  if (!mesh && mesh_pv && mesh_pv->k != PV_NONE) mesh = smap_mesh_value(cx, r, mesh_pv);
  if (r->failed) return false;
  p->nin = nargs;
  if (!parse_mappings(cx, r, "in_axes", p, nargs, true, &p->in) || !parse_sizes(cx, r, p)) return false;
  PVal *outv = rule_get(r, "out_axes");
  if (!outv) return rule_missing(r, "out_axes");
  p->mesh = mesh;
  if (!parse_resources(cx, r, p, mesh) || !rule_unused(r, "f in_axes out_axes axis_sizes axis_resources mesh"))
    return false;
  if (!infer_sizes(cx, p, args, nargs)) return false;
  bool any_res = false;
  for (int k = 0; k < p->naxes; k++) any_res |= p->ax[k].nres > 0;
  if (!any_res) p->mesh = NULL;
  if (!check_divisible(cx, p, false)) return false;
  p->named = named_mesh(cx, p);
  Type *block = NEWN(cx->C, Type, nargs);
  for (int i = 0; i < nargs; i++) block[i] = block_type(p, &p->in[i], &args[i]);
  Ctx sub = *cx;
  sub.mesh = p->named;
  sub.ctrl = 0;
  IrFunc *f = check_instantiate(&sub, body, block, nargs, call);
  if (!f) return !(r->failed = true);
  if (!f->nouts) return rule_error(r, "xmapped functions cannot have no return values");
  p->nout = f->nouts;
  if (!parse_mappings(cx, r, "out_axes", p, f->nouts, false, &p->out)) return false;
  Type *gout = NEWN(cx->C, Type, f->nouts);
  for (int i = 0; i < f->nouts; i++)
    if (!result_type(cx, p, &p->out[i], &f->outs[i], f->name, &gout[i])) return !(r->failed = true);
  IrFunc *low = xlow_lower(cx, p, f, args, gout, name, parent);
  if (!low) return !(r->failed = true);
  canonical_params(cx, r, p, mesh ? smap_mesh_pv(cx, mesh) : NULL);
  out->body = f;
  out->lowered = low;
  out->gout = gout;
  out->nout = f->nouts;
  return true;
}

void xmap_eqn(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  FuncDef *fd = check_func_param(cx, r, "f", rule_get(r, "f"));
  if (!fd) { check_bind_bad(cx, s); return; }
  if (!check_finish_literals(cx, in, (const AstArg *const *)s->args, s->nargs)) { check_bind_bad(cx, s); return; }
  Type *args = NEWN(cx->C, Type, s->nargs);
  for (int i = 0; i < s->nargs; i++) { in[i].t.weak = false; args[i] = in[i].t; }
  char name[160];
  snprintf(name, sizeof name, "xmap_%.*s", fd->name.n, fd->name.p);
  XOut o;
  if (!build_xmap(cx, r, s->callee_sp, fd, args, s->nargs, NULL, name, cx->fn, &o)) {
    fd->resolved = true;       /* its errors are the call's: it is not resolved on its own */
    check_bind_bad(cx, s);
    return;
  }
  check_add_fn(cx, at, o.body);
  IrStmt *st = check_new_eqn(cx, s);
  st->callee = o.lowered;
  st->shown_prim = P_XMAP;
  st->at = at;
  st->params = r->canon;
  st->nparams = r->ncanon;
  st->in = in;
  st->nin = s->nargs;
  check_bind_outs_as(cx, s, st, o.gout, o.nout, "xmap");
  emit_stmt(EM(cx), st);
}

IrFunc *xmap_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, PVal *mesh_pv, Span call) {
  Checker *C = cx->C;
  AstFunc *af = fd->ast;
  if (cx->mesh) {
    diag_error(call, "%.*s is an xmap: it cannot be called inside a shard_map or xmap body", fd->name.n, fd->name.p);
    return NULL;
  }
  Mesh *mesh = NULL;           /* the call's mesh, found where the call stands */
  if (mesh_pv) {
    RuleCtx mr;
    AstParam *mp = NEW(C, AstParam);
    mp->key = str_c("mesh");
    mp->sp = mesh_pv->sp;
    mp->v = mesh_pv;
    rule_init(&mr, &C->prog.arena, NULL, "xmap", call, &mp, 1);
    if (!(mesh = smap_mesh_value(cx, &mr, rule_get(&mr, "mesh")))) return NULL;
  }
  Wrapper W;
  smap_wrap_begin(cx, fd, args, nargs, &W);
  W.inst->skey = mesh_pv ? stat_key_mesh(C, mesh_pv) : NULL;
  W.w->is_xmap_wrapper = true;
  RuleCtx r;
  rule_init(&r, &C->prog.arena, NULL, "xmap", af->deco_sp, af->deco_params, af->ndeco_params);
  Attrs *at = NEW(C, Attrs);
  at->dtype = -1;
  char name[160];
  snprintf(name, sizeof name, "%.*s", fd->name.n, fd->name.p);
  XOut o;
  /* its errors stand at the call, at the decorator, or in the body (whose
     check notes the call) */
  if (!build_xmap(&W.sub, &r, call.file >= 0 ? call : af->sp, W.body, args, nargs, mesh, name, fd->parent, &o))
    return NULL;
  check_add_fn(&W.sub, at, o.body);
  IrStmt *st = emit_new_stmt(EM(&W.sub), IS_EQN, af->deco_sp);
  st->callee = o.lowered;
  st->shown_prim = P_XMAP;
  st->at = at;
  st->params = r.canon;
  st->nparams = r.ncanon;
  return smap_wrap_end(&W, fd, st, o.gout, o.body->outs, o.nout);
}
