/*
** rule.c — the context of a shape rule: reading one equation's parameters.
*/
#include <stdarg.h>
#include <stdio.h>
#include "diag.h"
#include "rule.h"

#define ANEW(A, T) ((T *)arena_alloc((A), sizeof(T)))
#define ANEWN(A, T, n) ((T *)arena_alloc((A), sizeof(T) * (size_t)((n) > 0 ? (n) : 1)))

/* ---- the rule context -------------------------------------------------------------- */

bool rule_error(RuleCtx *r, const char *fmt, ...) {
  if (r->failed) return false;
  r->failed = true;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  diag_error(r->sp, "%s", msg);
  return false;
}

static AstParam *find_param(RuleCtx *r, const char *key, int *idx) {
  for (int i = 0; i < r->nparams; i++)
    if (str_eqc(r->params[i]->key, key)) {
      if (idx) *idx = i;
      return r->params[i];
    }
  return NULL;
}

bool rule_param_error(RuleCtx *r, const char *key, const char *fmt, ...) {
  if (r->failed) return false;
  r->failed = true;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  AstParam *p = find_param(r, key, NULL);
  diag_error(p ? span_join(p->sp, p->v->sp) : r->sp, "%s", msg);
  return false;
}

const char *rule_prim_name(RuleCtx *r) { return r->prim; }

void rule_record(RuleCtx *r, const char *key, PVal *v) {
  for (int i = 0; i < r->ncanon; i++)
    if (!strcmp(r->canon[i].key, key)) { r->canon[i].v = v; return; }
  if (r->ncanon == r->capcanon) {
    int nc = r->capcanon ? r->capcanon * 2 : 8;
    IrParam *n = ANEWN(r->arena, IrParam, nc);
    if (r->ncanon) memcpy(n, r->canon, sizeof(IrParam) * (size_t)r->ncanon);
    r->canon = n;
    r->capcanon = nc;
  }
  r->canon[r->ncanon].key = key;
  r->canon[r->ncanon].v = v;
  r->ncanon++;
}

/* Fetch a parameter, marking it used; NULL when absent. */
PVal *rule_get(RuleCtx *r, const char *key) {
  int i;
  AstParam *p = find_param(r, key, &i);
  if (!p) return NULL;
  r->used[i] = true;
  return p->v;
}

PVal *rule_pv(RuleCtx *r, PVKind k) {
  PVal *v = ANEW(r->arena, PVal);
  v->k = k;
  v->sp = span_none();
  return v;
}

PVal *rule_pv_int(RuleCtx *r, int64_t x) {
  PVal *v = rule_pv(r, PV_INT);
  v->i = x;
  v->f = (double)x;
  return v;
}

/* A one-element tuple written `(x)` stands for x. */
PVal *pv_unparen(PVal *v) {
  while (v && v->k == PV_TUPLE && v->paren_only) v = v->items[0];
  return v;
}

/* Accepted (and ignored) parameters count as used. */
bool rule_has(RuleCtx *r, const char *key) { return rule_get(r, key) != NULL; }

int rule_number_kind(RuleCtx *r, const char *key) {
  AstParam *p = find_param(r, key, NULL);
  PVal *v = p ? pv_unparen(p->v) : NULL;
  return !v ? -1 : v->k == PV_BOOL ? DT_BOOL : v->k == PV_INT ? DT_I32 : v->k == PV_FLOAT ? DT_F32 : -1;
}

int64_t *rule_alloc_ints(RuleCtx *r, int n) { return ANEWN(r->arena, int64_t, n); }

bool rule_missing(RuleCtx *r, const char *key) {
  return rule_error(r, "%s requires the parameter '%s'", r->prim, key);
}

bool rule_int(RuleCtx *r, const char *key, bool required, int64_t dflt, int64_t *out) {
  PVal *v = pv_unparen(rule_get(r, key));
  if (!v) {
    if (required) return rule_missing(r, key);
    *out = dflt;
    rule_record(r, key, rule_pv_int(r, dflt));
    return true;
  }
  if (v->k != PV_INT) return rule_param_error(r, key, "parameter '%s' of %s must be an integer", key, r->prim);
  *out = v->i;
  rule_record(r, key, v);
  return true;
}


bool rule_axis_index(RuleCtx *r, const char *key, int64_t *v, int rank) {
  if (*v < -(int64_t)rank || *v >= rank) return true;   /* the rule reports it, with its own bounds */
  if (*v < 0) *v += rank;
  rule_record(r, key, rule_pv_int(r, *v));
  return true;
}

bool rule_float(RuleCtx *r, const char *key, bool required, double dflt, double *out) {
  PVal *v = pv_unparen(rule_get(r, key));
  if (!v) {
    if (required) return rule_missing(r, key);
    *out = dflt;
    PVal *d = rule_pv(r, PV_FLOAT);
    d->f = dflt;
    rule_record(r, key, d);
    return true;
  }
  if (v->k != PV_INT && v->k != PV_FLOAT && v->k != PV_BOOL)
    return rule_param_error(r, key, "parameter '%s' of %s must be a number", key, r->prim);
  *out = v->k == PV_FLOAT ? v->f : (double)v->i;
  rule_record(r, key, v);
  return true;
}

bool rule_bool(RuleCtx *r, const char *key, bool dflt, bool *out) {
  PVal *v = pv_unparen(rule_get(r, key));
  if (!v) {
    *out = dflt;
    PVal *d = rule_pv(r, PV_BOOL);
    d->i = dflt;
    rule_record(r, key, d);
    return true;
  }
  if (v->k != PV_BOOL && !(v->k == PV_INT && (v->i == 0 || v->i == 1)))
    return rule_param_error(r, key, "parameter '%s' of %s must be True or False", key, r->prim);
  *out = v->i != 0;
  rule_record(r, key, v);
  return true;
}

bool rule_dtype(RuleCtx *r, const char *key, bool required, int dflt, int *out) {
  PVal *v = pv_unparen(rule_get(r, key));
  if (!v || v->k == PV_NONE) {
    if (!v && required) return rule_missing(r, key);
    if (v && dflt >= 0 && required) return rule_missing(r, key);
    *out = dflt;
    if (dflt >= 0) {
      PVal *d = rule_pv(r, PV_NAME);
      d->s = str_c(dtype_names[dflt]);
      rule_record(r, key, d);
    } else {
      rule_record(r, key, rule_pv(r, PV_NONE));
    }
    return true;
  }
  int dt = (v->k == PV_NAME || v->k == PV_STR) ? dtype_lookup(v->s) : -1;
  if (dt < 0) return rule_param_error(r, key, "parameter '%s' of %s must be a dtype (bool, i32, i64, f32, f64)", key, r->prim);
  *out = dt;
  PVal *d = rule_pv(r, PV_NAME);
  d->s = str_c(dtype_names[dt]);
  rule_record(r, key, d);
  return true;
}

/* Read a tuple/list of ints from v into out. */
static bool ints_of(RuleCtx *r, const char *key, PVal *v, IntList *out) {
  v = pv_unparen(v);
  if (v->k == PV_INT) {
    out->n = 1;
    out->v = rule_alloc_ints(r, 1);
    out->v[0] = v->i;
    return true;
  }
  if (v->k == PV_NONE) {
    out->n = 0;
    out->v = rule_alloc_ints(r, 1);
    return true;
  }
  if (v->k != PV_TUPLE && v->k != PV_LIST)
    return rule_param_error(r, key, "parameter '%s' of %s must be a tuple of integers", key, r->prim);
  out->n = v->n;
  out->v = rule_alloc_ints(r, v->n);
  for (int i = 0; i < v->n; i++) {
    PVal *e = pv_unparen(v->items[i]);
    if (e->k != PV_INT)
      return rule_param_error(r, key, "parameter '%s' of %s must be a tuple of integers", key, r->prim);
    out->v[i] = e->i;
  }
  return true;
}

PVal *rule_pv_ints(RuleCtx *r, const int64_t *x, int n, PVKind k) {
  PVal *t = rule_pv(r, k);
  t->n = n;
  t->items = ANEWN(r->arena, PVal *, n);
  for (int i = 0; i < n; i++) t->items[i] = rule_pv_int(r, x[i]);
  return t;
}

void rule_set_ints(RuleCtx *r, const char *key, const IntList *l) { rule_record(r, key, rule_pv_ints(r, l->v, l->n, PV_TUPLE)); }

bool rule_ints(RuleCtx *r, const char *key, bool required, IntList *out) {
  PVal *v = rule_get(r, key);
  if (!v) {
    if (required) return rule_missing(r, key);
    out->n = 0;
    out->v = rule_alloc_ints(r, 1);
    rule_record(r, key, rule_pv(r, PV_NONE));
    return true;
  }
  if (!ints_of(r, key, v, out)) return false;
  rule_record(r, key, pv_unparen(v)->k == PV_NONE ? pv_unparen(v) : rule_pv_ints(r, out->v, out->n, PV_TUPLE));
  return true;
}

bool rule_int_tuples(RuleCtx *r, const char *key, bool required, int width, IntList *out) {
  PVal *v = pv_unparen(rule_get(r, key));
  if (!v) {
    if (required) return rule_missing(r, key);
    out->n = 0;
    out->v = rule_alloc_ints(r, 1);
    PVal *e = rule_pv(r, PV_TUPLE);
    rule_record(r, key, e);
    return true;
  }
  if (v->k != PV_TUPLE && v->k != PV_LIST)
    return rule_param_error(r, key, "parameter '%s' of %s must be a tuple of %d-tuples of integers", key, r->prim, width);
  out->n = v->n * width;
  out->v = rule_alloc_ints(r, out->n);
  PVal *canon = rule_pv(r, PV_TUPLE);
  canon->n = v->n;
  canon->items = ANEWN(r->arena, PVal *, v->n);
  for (int i = 0; i < v->n; i++) {
    IntList one;
    PVal *e = pv_unparen(v->items[i]);
    if ((e->k != PV_TUPLE && e->k != PV_LIST) || !ints_of(r, key, e, &one) || one.n != width)
      return rule_param_error(r, key, "parameter '%s' of %s must be a tuple of %d-tuples of integers", key, r->prim, width);
    memcpy(out->v + i * width, one.v, sizeof(int64_t) * (size_t)width);
    canon->items[i] = rule_pv_ints(r, one.v, width, PV_TUPLE);
  }
  rule_record(r, key, canon);
  return true;
}

/* Sugar spelled out: records `key` as the tuple of width-tuples in l and
   drops `sugar`, the parameter l was computed from, so that `show` prints
   the canonical form (ppermute's shift=k becomes its perm). */
void rule_respell_int_tuples(RuleCtx *r, const char *sugar, const char *key, int width, const IntList *l) {
  PVal *canon = rule_pv(r, PV_TUPLE);
  canon->n = l->n / width;
  canon->items = ANEWN(r->arena, PVal *, canon->n ? canon->n : 1);
  for (int i = 0; i < canon->n; i++) canon->items[i] = rule_pv_ints(r, l->v + i * width, width, PV_TUPLE);
  for (int i = 0; i < r->ncanon; i++)
    if (!strcmp(r->canon[i].key, sugar)) {
      memmove(&r->canon[i], &r->canon[i + 1], sizeof(IrParam) * (size_t)(r->ncanon - i - 1));
      r->ncanon--;
      break;
    }
  rule_record(r, key, canon);
}

bool rule_dimnums(RuleCtx *r, const char *key, IntList out[4]) {
  PVal *v = pv_unparen(rule_get(r, key));
  if (!v) return rule_missing(r, key);
  const char *msg = "dimension_numbers must read (([lhs contracting], [rhs contracting]), ([lhs batch], [rhs batch]))";
  if ((v->k != PV_TUPLE && v->k != PV_LIST) || v->n != 2) return rule_param_error(r, key, "%s", msg);
  PVal *canon = rule_pv(r, PV_TUPLE);
  canon->n = 2;
  canon->items = ANEWN(r->arena, PVal *, 2);
  for (int g = 0; g < 2; g++) {
    PVal *p = pv_unparen(v->items[g]);
    if ((p->k != PV_TUPLE && p->k != PV_LIST) || p->n != 2) return rule_param_error(r, key, "%s", msg);
    PVal *pc = rule_pv(r, PV_TUPLE);
    pc->n = 2;
    pc->items = ANEWN(r->arena, PVal *, 2);
    for (int s = 0; s < 2; s++) {
      PVal *e = pv_unparen(p->items[s]);
      if (e->k != PV_TUPLE && e->k != PV_LIST && e->k != PV_INT) return rule_param_error(r, key, "%s", msg);
      if (!ints_of(r, key, e, &out[g * 2 + s])) return false;
      pc->items[s] = rule_pv_ints(r, out[g * 2 + s].v, out[g * 2 + s].n, PV_LIST);
    }
    canon->items[g] = pc;
  }
  rule_record(r, key, canon);
  return true;
}

void rule_init(RuleCtx *r, Arena *arena, const Mesh *mesh, const char *prim, Span sp, AstParam **params,
               int nparams) {
  memset(r, 0, sizeof *r);
  r->arena = arena;
  r->mesh = mesh;
  r->prim = prim;
  r->sp = sp;
  r->params = params;
  r->nparams = nparams;
  r->used = ANEWN(arena, bool, nparams);
}

/* Report the first parameter the rule did not read. */
bool rule_unused(RuleCtx *r, const char *known) {
  for (int i = 0; i < r->nparams; i++) {
    if (r->used[i]) continue;
    AstParam *p = r->params[i];
    for (int j = 0; j < i; j++)
      if (str_eq(r->params[j]->key, p->key)) {
        diag_error(p->sp, "parameter '%.*s' given twice", p->key.n, p->key.p);
        return false;
      }
    if (known && *known)
      diag_error(p->sp, "%s has no parameter '%.*s' (its parameters: %s)", r->prim, p->key.n, p->key.p, known);
    else
      diag_error(p->sp, "%s takes no parameters, but '%.*s' was given", r->prim, p->key.n, p->key.p);
    return false;
  }
  return true;
}

/* ---- collectives' axis parameters --------------------------------------------------- */

/* Read an axis-name parameter (one name or a tuple of names) into at->axes. */
bool rule_axes(RuleCtx *r, const char *key, bool required, Attrs *at) {
  PVal *v = rule_get(r, key);
  const Mesh *mesh = r->mesh;
  if (!v) {
    if (required) return rule_missing(r, key);
    return true;
  }
  PVal *one[1];
  PVal **items;
  int n;
  PVal *u = pv_unparen(v);
  if (u->k == PV_TUPLE || u->k == PV_LIST) { items = u->items; n = u->n; }
  else { one[0] = u; items = one; n = 1; }
  PVal *canon = rule_pv(r, PV_TUPLE);
  canon->items = ANEWN(r->arena, PVal *, n);
  canon->n = n;
  for (int i = 0; i < n; i++) {
    PVal *e = pv_unparen(items[i]);
    if (e->k != PV_NAME && e->k != PV_STR)
      return rule_param_error(r, key, "parameter '%s' of %s must name mesh axes", key, r->prim);
    int k = -1;
    for (int a = 0; mesh && a < mesh->naxes; a++)
      if (str_eq(mesh->axis[a], e->s)) k = a;
    if (k < 0) {
      r->failed = true;
      diag_error(e->sp.file >= 0 ? e->sp : r->sp, "unbound axis name '%.*s'%s", e->s.n, e->s.p,
                 mesh ? "" : " (collectives run inside a shard_map)");
      return false;
    }
    if (at->axmask & (1u << k))
      return rule_param_error(r, key, "axis '%.*s' named twice", e->s.n, e->s.p);
    at->axes[at->naxes++] = (uint8_t)k;
    at->axmask |= 1u << k;
    PVal *c = rule_pv(r, PV_NAME);
    c->s = mesh->axis[k];
    canon->items[i] = c;
  }
  rule_record(r, key, canon);
  return true;
}

int64_t rule_group_size(RuleCtx *r, const Attrs *at) {
  int64_t n = 1;
  for (int k = 0; k < at->naxes; k++) n *= r->mesh->size[at->axes[k]];
  return n;
}


bool rule_vary(int prim, const Type *in, int nin, const Attrs *at, const bool *is_lit, uint32_t *lift,
               uint32_t *res) {
  uint32_t u = 0;
  for (int k = 0; k < nin; k++) {
    u |= in[k].vma;
    lift[k] = in[k].vma;
  }
  switch (prim_table[prim].vrule) {
  case VR_ELEM:      /* a literal takes any variance: it is not lifted */
    for (int k = 0; k < nin; k++)
      if (!is_lit[k]) lift[k] = u;
    *res = u;
    return true;
  case VR_NULLARY: *res = 0; return true;
  case VR_REDUCE:
  case VR_GATHER_INV:
    lift[0] = in[0].vma | at->axmask;
    *res = lift[0] & ~at->axmask;
    return true;
  case VR_VARY:
    lift[0] = in[0].vma | at->axmask;
    *res = lift[0] | at->axmask;
    return true;
  case VR_PBCAST:
  case VR_PSCATTER:
    *res = in[0].vma | at->axmask;
    return !(in[0].vma & at->axmask);
  case VR_AXIS_INDEX: *res = at->axmask; return true;
  case VR_SPECIAL: *res = 0; return true;
  }
  return true;
}
