/*
** rule.c — the context of a shape rule: reading one equation's parameters.
*/
#include <stdarg.h>
#include <stdio.h>
#include "diag.h"
#include "rule.h"
#include "suggest.h"

#define ANEW(A, T) ((T *)arena_alloc((A), sizeof(T)))
#define ANEWN(A, T, n) ((T *)arena_alloc((A), sizeof(T) * (size_t)((n) > 0 ? (n) : 1)))

/* ---- the rule context -------------------------------------------------------------- */

bool rule_error(RuleCtx *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_error_once(&r->failed, r->sp, fmt, ap);
  va_end(ap);
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
  AstParam *p = find_param(r, key, NULL);
  va_list ap;
  va_start(ap, fmt);
  diag_error_once(&r->failed, p ? span_join(p->sp, p->v->sp) : r->sp, fmt, ap);
  va_end(ap);
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

/* A dictionary: every item a key: value pair. */
bool pv_is_map(const PVal *v) {
  if (!v || v->k != PV_DICT) return false;
  for (int i = 0; i < v->n; i++)
    if (v->items[i]->k != PV_PAIR) return false;
  return true;
}

/* The key of a dictionary's i-th entry. */
PVal *pv_key(const PVal *v, int i) { return v->items[i]->items[0]; }

/* The value of a dictionary's i-th entry. */
PVal *pv_val(const PVal *v, int i) { return v->items[i]->items[1]; }

/* Accepted (and ignored) parameters count as used. */
bool rule_has(RuleCtx *r, const char *key) { return rule_get(r, key) != NULL; }

int rule_number_kind(RuleCtx *r, const char *key) {
  AstParam *p = find_param(r, key, NULL);
  PVal *v = p ? pv_unparen(p->v) : NULL;
  return !v ? -1 : v->k == PV_BOOL ? DT_BOOL : v->k == PV_INT ? DT_I32 : v->k == PV_FLOAT ? DT_F32 : -1;
}

int64_t *rule_alloc_ints(RuleCtx *r, int n) { return ANEWN(r->arena, int64_t, n); }

/* Does one name end the other after a '_' (fill_value, value)? */
static bool part_of(Str k, const char *key) {
  int kn = (int)strlen(key);
  const char *lp = k.n > kn ? k.p : key, *sp = k.n > kn ? key : k.p;
  int ln = k.n > kn ? k.n : kn, sn = k.n > kn ? kn : k.n;
  return sn >= 3 && ln > sn && lp[ln - sn - 1] == '_' && !memcmp(lp + ln - sn, sp, (size_t)sn);
}

/* A parameter given but read by no rule, whose name is close to key
   (a misspelling, or a longer or shorter spelling: fill_value for value). */
static AstParam *misspelt_param(RuleCtx *r, const char *key) {
  for (int i = 0; i < r->nparams; i++) {
    Str k = r->params[i]->key;
    if (!r->used[i] && (sug_distance(k.p, k.n, key, (int)strlen(key)) <= (k.n <= 4 ? 1 : 2) || part_of(k, key)))
      return r->params[i];
  }
  return NULL;
}

bool rule_missing(RuleCtx *r, const char *key) {
  AstParam *p = misspelt_param(r, key);
  if (p) {
    r->failed = true;
    diag_error(p->sp, "%s has no parameter '%.*s' (did you mean '%s'?); it requires '%s'", r->prim, p->key.n,
               p->key.p, key, key);
    return false;
  }
  return rule_error(r, "%s requires the parameter '%s'", r->prim, key);
}

/* An int, or a NumPy integer scalar as NumPy 2 writes it, np.int64(3):
   JAX prints a parameter holding one so (jnp.split's sizes, computed by
   np.diff, print as sizes=(np.int64(2), np.int64(3))). */
static bool int_value(const PVal *v, int64_t *out) {
  static const char *const names[] = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                      "intp", "uintp", NULL};
  if (v->k == PV_INT) { *out = v->i; return true; }
  if (v->k != PV_CALL || v->n != 1 || !v->items[0] || pv_unparen(v->items[0])->k != PV_INT) return false;
  Str n = v->s;
  if (n.n > 3 && !memcmp(n.p, "np.", 3)) { n.p += 3; n.n -= 3; }
  else if (n.n > 6 && !memcmp(n.p, "numpy.", 6)) { n.p += 6; n.n -= 6; }
  else return false;
  for (int i = 0; names[i]; i++)
    if (str_eqc(n, names[i])) { *out = pv_unparen(v->items[0])->i; return true; }
  return false;
}

bool rule_int(RuleCtx *r, const char *key, bool required, int64_t dflt, int64_t *out) {
  PVal *v = pv_unparen(rule_get(r, key));
  if (!v) {
    if (required) return rule_missing(r, key);
    *out = dflt;
    rule_record(r, key, rule_pv_int(r, dflt));
    return true;
  }
  if (!int_value(v, out)) return rule_param_error(r, key, "parameter '%s' of %s must be an integer", key, r->prim);
  rule_record(r, key, v->k == PV_INT ? v : rule_pv_int(r, *out));
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
  if (dt < 0) return rule_param_error(r, key, "parameter '%s' of %s must be a dtype (%s)", key, r->prim, dtype_list_text);
  if (dtype_is_key((DType)dt))
    return rule_param_error(r, key, "parameter '%s' of %s cannot be a key type (%s): random_seed and random_wrap "
                            "make keys", key, r->prim, dtype_names[dt]);
  *out = dt;
  PVal *d = rule_pv(r, PV_NAME);
  d->s = str_c(dtype_names[dt]);
  rule_record(r, key, d);
  return true;
}

/* Read a tuple/list of ints from v into out. */
static bool ints_of(RuleCtx *r, const char *key, PVal *v, IntList *out) {
  v = pv_unparen(v);
  int64_t one;
  if (int_value(v, &one)) {
    out->n = 1;
    out->v = rule_alloc_ints(r, 1);
    out->v[0] = one;
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
    if (!int_value(pv_unparen(v->items[i]), &out->v[i]))
      return rule_param_error(r, key, "parameter '%s' of %s must be a tuple of integers", key, r->prim);
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

bool rule_int_list_pair(RuleCtx *r, const char *key, IntList out[2]) {
  PVal *v = pv_unparen(rule_get(r, key));
  const char *msg = "parameter '%s' of %s must read ((lhs dimensions), (rhs dimensions))";
  out[0].n = out[1].n = 0;
  PVal *canon = rule_pv(r, PV_TUPLE);
  canon->n = 2;
  canon->items = ANEWN(r->arena, PVal *, 2);
  if (v && ((v->k != PV_TUPLE && v->k != PV_LIST) || v->n != 2)) return rule_param_error(r, key, msg, key, r->prim);
  for (int s = 0; s < 2; s++) {
    PVal *e = v ? pv_unparen(v->items[s]) : NULL;
    if (e && e->k != PV_TUPLE && e->k != PV_LIST && e->k != PV_INT) return rule_param_error(r, key, msg, key, r->prim);
    if (e && !ints_of(r, key, e, &out[s])) return false;
    canon->items[s] = rule_pv_ints(r, out[s].v, out[s].n, PV_TUPLE);
  }
  rule_record(r, key, canon);
  return true;
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
    char hint[96];
    if (known && *known)
      diag_error(p->sp, "%s has no parameter '%.*s' (%sits parameters: %s)", r->prim, p->key.n, p->key.p,
                 rule_param_hint(known, p->key, hint, sizeof hint), known);
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
    for (int a = 0; k < 0 && mesh && mesh->full && a < mesh->full->naxes; a++)
      if (str_eq(mesh->full->axis[a], e->s)) {
        r->failed = true;
        Buf man = {0};
        for (int b = 0; b < mesh->naxes; b++) buf_printf(&man, "%s%.*s", b ? ", " : "", mesh->axis[b].n, mesh->axis[b].p);
        diag_error(e->sp.file >= 0 ? e->sp : r->sp, "%s over '%.*s', an automatic axis of the enclosing shard_map: "
                   "values are whole along it, and a collective may name only the manual axes (%s)", r->prim,
                   e->s.n, e->s.p, buf_cstr(&man));
        buf_free(&man);
        return false;
      }
    if (k < 0) {
      r->failed = true;
      char hint[256];
      diag_error(e->sp.file >= 0 ? e->sp : r->sp, "unbound axis name '%.*s'%s", e->s.n, e->s.p,
                 rule_axis_hint(mesh, e->s, hint, sizeof hint));
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


bool rule_vary(VarRule vr, const Type *in, int nin, const Attrs *at, const bool *is_lit, uint32_t *lift,
               uint32_t *res) {
  uint32_t u = 0;
  for (int k = 0; k < nin; k++) {
    u |= in[k].vma;
    lift[k] = in[k].vma;
  }
  switch (vr) {
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
  case VR_PDOT:
    for (int k = 0; k < nin; k++) lift[k] = u | at->axmask;
    *res = u & ~at->axmask;
    return true;
  case VR_RAGGED: *res = u | at->axmask; return true;
  case VR_SPECIAL: *res = 0; return true;
  case VR_UCAST:
  case VR_RCAST:
  case VR_USCATTER: *res = in[0].vma; return true;      /* (unred.c judges the operand) */
  case VR_RVCAST: *res = in[0].vma | at->axmask; return true;
  case VR_UREDUCE:
  case VR_GATHER_RED: *res = in[0].vma & ~at->axmask; return true;
  }
  return true;
}

/* ---- helpers for the shape rules ---------------------------------------------- */


/* The kind bit of a dtype. */
int rule_kind_bit(int dt) {
  return dtype_is_key((DType)dt) ? K_KEY : dtype_is_complex((DType)dt) ? K_COMPLEX : dtype_is_float((DType)dt) ? K_FLOAT
       : dtype_is_int((DType)dt) ? K_INT : K_BOOL;
}

/* Order of kinds for weak typing: bool < int < float < complex. */
int rule_kind_rank(int dt) {
  return dtype_is_complex((DType)dt) ? 3 : dtype_is_float((DType)dt) ? 2 : dtype_is_int((DType)dt) ? 1 : 0;
}

/* A human description of a set of kinds, for "accepts ..." messages. */
const char *rule_kinds_text(int kinds) {
  switch (kinds) {
  case K_FLOAT: return "floating-point dtypes (bf16, f16, f32, f64)";
  case K_INT: return "integer dtypes (i8 ... i64, u8 ... u64)";
  case K_NUM: return "real numeric dtypes (integers and floats)";
  case K_ARITH: return "numeric dtypes (integers, floats and complex)";
  case K_FLOATC: return "floating-point and complex dtypes";
  case K_LOGIC: return "bool and integer dtypes";
  case K_ANY: return "any dtype but complex";
  case K_ALL: return "any dtype but keys";
  default: return "any dtype";
  }
}


/* Formats t into b; returns the text. */
const char *rule_ty(TyBuf *b, const Type *t) {
  int n = snprintf(b->s, sizeof b->s, "%s[", dtype_names[t->dt]);
  for (int i = 0; i < t->rank; i++)
    n += snprintf(b->s + n, sizeof b->s - (size_t)n, "%s%lld", i ? "," : "",
                  (long long)t->shape[i]);
  snprintf(b->s + n, sizeof b->s - (size_t)n, "]");
  return b->s;
}


/* Formats the n ints at v into b; returns the text. */
const char *rule_ls_n(LsBuf *b, const int64_t *v, int n) {
  size_t k = 0;
  k += (size_t)snprintf(b->s + k, sizeof b->s - k, "(");
  for (int i = 0; i < n && k < sizeof b->s - 32; i++)
    k += (size_t)snprintf(b->s + k, sizeof b->s - k, "%s%lld", i ? ", " : "", (long long)v[i]);
  snprintf(b->s + k, sizeof b->s - k, n == 1 ? ",)" : ")");
  return b->s;
}

/* Text of an IntList. */
const char *rule_ls(LsBuf *b, const IntList *l) { return rule_ls_n(b, l->v, l->n); }

/* Sets a result type. */
void rule_set_type(Type *t, int dt, int rank, const int64_t *shape) {
  t->dt = (uint8_t)dt;
  t->rank = (uint8_t)rank;
  for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
}

/* Checks that an operand's dtype is one of `kinds`. */
bool rule_check_kind(RuleCtx *cx, const Type *t, int kinds) {
  if (rule_kind_bit(t->dt) & kinds) return true;
  return rule_error(cx, "%s does not accept dtype %s; it accepts %s", rule_prim_name(cx),
                    dtype_names[t->dt], rule_kinds_text(kinds));
}

/* Checks that a result rank does not exceed SHM_MAXRANK. */
bool rule_check_rank(RuleCtx *cx, int rank) {
  if (rank <= SHM_MAXRANK) return true;
  return rule_error(cx, "%s would make an array of rank %d; at most %d dimensions are supported",
                    rule_prim_name(cx), rank, SHM_MAXRANK);
}

/* Checks a shape parameter: at most SHM_MAXRANK sizes, none negative. */
bool rule_check_shape(RuleCtx *cx, const char *key, const IntList *s) {
  LsBuf b;
  if (!rule_check_rank(cx, s->n)) return false;
  for (int i = 0; i < s->n; i++)
    if (s->v[i] < 0)
      return rule_param_error(cx, key, "%s %s %s has a negative size", rule_prim_name(cx), key,
                              rule_ls(&b, s));
  if (shape_size(s->n, s->v) < 0)
    return rule_param_error(cx, key, "%s %s %s is too large", rule_prim_name(cx), key, rule_ls(&b, s));
  return true;
}

/* Gives the operands in[idx[0..n-1]] one dtype, JAX's weak typing: the
   typed operands must agree, and an untyped literal takes their dtype when
   its own kind is not higher (an int literal may become a float, a float
   literal may not become an int).  With only literals, the highest kind
   wins.  Stores the common dtype in *dt. */
bool rule_unify_dtypes(RuleCtx *cx, Type *in, const int *idx, int n, int *dt) {
  int strong = -1, top = idx[0];
  for (int k = 0; k < n; k++) {
    const Type *t = &in[idx[k]];
    if (t->weak) {
      if (rule_kind_rank(t->dt) > rule_kind_rank(in[top].dt)) top = idx[k];
      continue;
    }
    if (strong < 0) strong = idx[k];
    else if (t->dt != in[strong].dt)
      return rule_error(cx, "%s requires arguments of equal dtype, got %s and %s",
                        rule_prim_name(cx), dtype_names[in[strong].dt], dtype_names[t->dt]);
  }
  int target = strong >= 0 ? in[strong].dt : in[top].dt;
  for (int k = 0; k < n; k++) {
    Type *t = &in[idx[k]];
    if (!t->weak || t->dt == target) continue;
    if (rule_kind_rank(t->dt) > rule_kind_rank(target)) {
      int a = strong < idx[k] ? target : t->dt, b = strong < idx[k] ? t->dt : target;
      return rule_error(cx, "%s requires arguments of equal dtype, got %s and %s",
                        rule_prim_name(cx), dtype_names[a], dtype_names[b]);
    }
    t->dt = (uint8_t)target;
  }
  *dt = target;
  return true;
}

/* For operands of shapes a and b that NumPy would broadcast together and
   lax will not: " NumPy would broadcast ...: broadcast_in_dim[...]" in
   out, for the operand that needs it; else "". */
static const char *numpy_broadcast_hint(const Type *a, const Type *b, char *out, size_t n) {
  out[0] = 0;
  int r = a->rank > b->rank ? a->rank : b->rank;
  int64_t shape[SHM_MAXRANK];
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t x = ia >= 0 ? a->shape[ia] : 1, y = ib >= 0 ? b->shape[ib] : 1;
    if (x != y && x != 1 && y != 1) return out;
    shape[i] = x > y ? x : y;
  }
  const Type *ops[2] = {a, b};
  size_t len = (size_t)snprintf(out, n, "; NumPy would broadcast them to shape (");
  for (int i = 0; i < r && len < n; i++) len += (size_t)snprintf(out + len, n - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (len < n) len += (size_t)snprintf(out + len, n - len, "%s), which lax spells out:", r == 1 ? "," : "");
  for (int k = 0; k < 2 && len < n; k++) {
    const Type *t = ops[k];
    bool same = t->rank == r;
    for (int i = 0; same && i < r; i++) same = t->shape[i] == shape[i];
    if (same) continue;
    TyBuf tb;
    len += (size_t)snprintf(out + len, n - len, " broadcast_in_dim[shape=(");
    for (int i = 0; i < r && len < n; i++) len += (size_t)snprintf(out + len, n - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (len < n) len += (size_t)snprintf(out + len, n - len, "%s), broadcast_dimensions=(", r == 1 ? "," : "");
    for (int i = 0; i < t->rank && len < n; i++)
      len += (size_t)snprintf(out + len, n - len, "%s%d", i ? ", " : "", r - t->rank + i);
    if (len < n) len += (size_t)snprintf(out + len, n - len, "%s)] of the %s operand", t->rank == 1 ? "," : "", rule_ty(&tb, t));
  }
  return out;
}

bool rule_bcast_shapes(RuleCtx *cx, const Type *in, const int *idx, int n, Type *res) {
  int big = -1;
  int64_t shape[SHM_MAXRANK];
  for (int k = 0; k < n; k++) {
    const Type *t = &in[idx[k]];
    if (t->rank == 0) continue;
    if (big < 0) {
      big = idx[k];
      memcpy(shape, t->shape, sizeof(int64_t) * t->rank);
      continue;
    }
    bool ok = t->rank == in[big].rank;
    for (int i = 0; ok && i < t->rank; i++) {
      if (t->shape[i] == shape[i] || t->shape[i] == 1) continue;
      if (shape[i] == 1) shape[i] = t->shape[i];
      else ok = false;
    }
    if (!ok) {
      TyBuf a, b;
      char hint[400];
      return rule_error(cx, "%s needs operands of one shape (lax broadcasts only scalars, and size-1 dimensions at "
                        "equal rank): %s and %s%s", rule_prim_name(cx), rule_ty(&a, &in[big]), rule_ty(&b, t),
                        numpy_broadcast_hint(&in[big], t, hint, sizeof hint));
    }
  }
  const Type *s = big >= 0 ? &in[big] : &in[idx[0]];
  res->rank = s->rank;
  for (int i = 0; i < s->rank; i++) res->shape[i] = big >= 0 ? shape[i] : s->shape[i];
  return true;
}

/* The common shape of elementwise operands in[idx[0..n-1]]: all equal,
   except that scalars broadcast.  Writes it into *res (dt untouched). */
bool rule_unify_shapes(RuleCtx *cx, const Type *in, const int *idx, int n, Type *res) {
  int big = -1;
  for (int k = 0; k < n; k++) {
    const Type *t = &in[idx[k]];
    if (t->rank == 0) continue;
    if (big < 0) big = idx[k];
    else if (!type_same_shape(t, &in[big])) {
      TyBuf a, b;
      char hint[400];
      return rule_error(cx, "%s needs operands of one shape (lax broadcasts only scalars): %s and %s%s",
                        rule_prim_name(cx), rule_ty(&a, &in[big]), rule_ty(&b, t),
                        numpy_broadcast_hint(&in[big], t, hint, sizeof hint));
    }
  }
  const Type *s = big >= 0 ? &in[big] : &in[idx[0]];
  res->rank = s->rank;
  for (int i = 0; i < s->rank; i++) res->shape[i] = s->shape[i];
  return true;
}

/* Normalises an axis number against a rank (negative counts from the end);
   -1 if out of range. */
int64_t rule_norm_axis(int64_t a, int rank) {
  if (a < 0) a += rank;
  return a >= 0 && a < rank ? a : -1;
}

/* Checks that a list of axes is in range for `rank` and has no repeats;
   `neg` allows negative axes, counted from the end: the list is
   normalised into a new list in *l, which `show` prints. */
bool rule_check_axes(RuleCtx *cx, const char *key, IntList *l, int rank, bool neg, const Type *t) {
  LsBuf b;
  TyBuf tb;
  uint32_t seen = 0;
  int64_t *v = l->n ? rule_alloc_ints(cx, l->n) : NULL;
  for (int i = 0; i < l->n; i++) {
    int64_t a = neg ? rule_norm_axis(l->v[i], rank) : (l->v[i] >= 0 && l->v[i] < rank ? l->v[i] : -1);
    if (a < 0) {
      if (t)
        return rule_error(cx, "%s %s %s out of range for %s", rule_prim_name(cx), key, rule_ls(&b, l),
                          rule_ty(&tb, t));
      return rule_error(cx, "%s %s %s out of range for rank %d", rule_prim_name(cx), key,
                        rule_ls(&b, l), rank);
    }
    if (seen & (1u << a))
      return rule_param_error(cx, key, "%s %s %s repeats axis %lld", rule_prim_name(cx), key,
                              rule_ls(&b, l), (long long)a);
    seen |= 1u << a;
    v[i] = a;
  }
  l->v = v;
  if (neg) rule_set_ints(cx, key, l);
  return true;
}

/* ---- partition specs ---- */

void rule_spec_text(Buf *b, const Spec *sp, const Mesh *m) {
  buf_puts(b, "P(");
  for (int d = 0; d < sp->ndims; d++) {
    if (d) buf_puts(b, ", ");
    const SpecDim *sd = &sp->dim[d];
    if (sd->naxes == 0) buf_puts(b, "None");
    else if (sd->naxes == 1) buf_printf(b, "%.*s", m->axis[sd->axes[0]].n, m->axis[sd->axes[0]].p);
    else {
      buf_putc(b, '(');
      for (int k = 0; k < sd->naxes; k++) {
        if (k) buf_puts(b, ", ");
        buf_printf(b, "%.*s", m->axis[sd->axes[k]].n, m->axis[sd->axes[k]].p);
      }
      buf_putc(b, ')');
    }
  }
  const char *const kw[2] = {"unreduced", "reduced"};
  uint32_t sets[2] = {sp->unred, sp->red};
  for (int s = 0; s < 2; s++) {
    if (!sets[s]) continue;
    buf_printf(b, "%s%s={", sp->ndims || (s && sp->unred) ? ", " : "", kw[s]);
    for (int k = 0, c = 0; k < m->naxes; k++)
      if (sets[s] & (1u << k)) buf_printf(b, "%s'%.*s'", c++ ? ", " : "", m->axis[k].n, m->axis[k].p);
    buf_putc(b, '}');
  }
  if (sp->unred && sp->ukind) buf_printf(b, ", unreduced_kind=%s", sp->ukind == UK_MAX ? "max" : "min");
  buf_putc(b, ')');
}

/* ---- hints for misspelt names ---- */

const char *rule_axis_hint(const Mesh *m, Str name, char *out, size_t n) {
  if (!m) { snprintf(out, n, " (collectives run inside a shard_map)"); return out; }
  Suggest sg;
  sug_begin(&sg, name);
  size_t len = m->name.n ? (size_t)snprintf(out, n, " (mesh %.*s has %s ", m->name.n, m->name.p,
                                            m->naxes == 1 ? "axis" : "axes")
                         : (size_t)snprintf(out, n, " (the %s here %s ", m->naxes == 1 ? "axis" : "axes",
                                            m->naxes == 1 ? "is" : "are");
  for (int k = 0; k < m->naxes && len < n; k++) {
    sug_offer(&sg, m->axis[k].p, m->axis[k].n);
    len += (size_t)snprintf(out + len, n - len, "%s%.*s", k ? ", " : "", m->axis[k].n, m->axis[k].p);
  }
  if (len < n && sg.best) len += (size_t)snprintf(out + len, n - len, "; did you mean '%.*s'?", sg.bestlen, sg.best);
  if (len < n) snprintf(out + len, n - len, ")");
  return out;
}

const char *rule_param_hint(const char *params, Str key, char *out, size_t n) {
  Suggest sg;
  sug_begin(&sg, key);
  sug_offer_words(&sg, params);
  if (sg.best) snprintf(out, n, "did you mean '%.*s'? ", sg.bestlen, sg.best);
  else snprintf(out, n, "%s", "");
  return out;
}

PVal *rule_stmt_param(const IrStmt *st, const char *key) {
  for (int i = 0; i < st->nparams; i++)
    if (!strcmp(st->params[i].key, key)) return st->params[i].v;
  return NULL;
}

int rule_read_ints(const PVal *p, int64_t *v, int max) {
  if (!p || p->k == PV_NONE) return 0;
  if (p->k == PV_INT) { v[0] = p->i; return 1; }
  int n = 0;
  for (int i = 0; i < p->n && n < max; i++)
    if (p->items[i]->k == PV_INT) v[n++] = p->items[i]->i;
  return n;
}
