/*
** show.c — printing checked functions in the jaxpr form.
**
** The output is valid shm: `def f = { lambda consts ; params . let ... in
** (outs,) }`, every binder with its full type, inserted pbroadcasts
** visible, nested functions (shard_map bodies, branches, loop bodies)
** inline, parameters in the order of the primitive table.  Names are the
** source names, made unique across the whole printout.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "err.h"
#include "prims.h"
#include "show.h"
#include "rule.h"
#include "state.h"

/* `{i,j}`, the axes of vma separated by sep. */
static void vma_list(Buf *b, uint32_t vma, const Mesh *mesh, const char *sep) {
  buf_putc(b, '{');
  bool first = true;
  for (int k = 0; mesh && k < mesh->naxes; k++)
    if (vma & (1u << k)) {
      buf_printf(b, "%s%.*s", first ? "" : sep, mesh->axis[k].n, mesh->axis[k].p);
      first = false;
    }
  buf_putc(b, '}');
}

void show_vma(Buf *b, uint32_t vma, const Mesh *mesh) { vma_list(b, vma, mesh, ","); }
void show_vma_message(Buf *b, uint32_t vma, const Mesh *mesh) { vma_list(b, vma, mesh, ", "); }

/* One group of JAX's manual axis type, `V:i` or `U:(x,y)`, after sep. */
static void axis_group(Buf *b, const char *sep, const char *kind, uint32_t m, const Mesh *mesh, Str text) {
  buf_printf(b, "%s%s:", sep, kind);
  if (!m) {
    buf_printf(b, "%.*s", text.n, text.p);
    return;
  }
  int n = 0;
  for (int k = 0; k < mesh->naxes; k++) n += (m >> k) & 1;
  if (n > 1) buf_putc(b, '(');
  bool first = true;
  for (int k = 0; k < mesh->naxes; k++)
    if (m & (1u << k)) {
      buf_printf(b, "%s%.*s", first ? "" : ",", mesh->axis[k].n, mesh->axis[k].p);
      first = false;
    }
  if (n > 1) buf_putc(b, ')');
}

static const char *const ukind_names[] = {"U", "U_max", "U_min"};

/* The braces of a type as JAX prints them today: {V:i, U:x, R:y}. */
static void axis_groups(Buf *b, const Type *t, const Mesh *mesh) {
  Str none = {"", 0}, un = t->lay ? t->lay->unred : none, re = t->lay ? t->lay->red : none;
  uint32_t u = mesh ? t->unred : 0, r = mesh ? t->red : 0;
  int kind = t->unred ? t->ukind : t->lay ? t->lay->ukind : UK_SUM;
  const char *sep = "";
  buf_putc(b, '{');
  uint32_t v = t->vma & ~t->unred;      /* (an unreduced axis is in vma: each device holds its summand) */
  if (v && mesh) { axis_group(b, sep, "V", v, mesh, none); sep = ", "; }
  if (u || un.n) { axis_group(b, sep, ukind_names[kind], u, mesh, un); sep = ", "; }
  if (r || re.n) axis_group(b, sep, "R", r, mesh, re);
  buf_putc(b, '}');
}

static void show_type_inner(Buf *b, const Type *t, const Mesh *mesh);

/* An async collective's future prints as JAX prints it: AbstractFuture{f32[8]{i}}. */
void show_type(Buf *b, const Type *t, const Mesh *mesh) {
  if (!t->future) {
    show_type_inner(b, t, mesh);
    return;
  }
  buf_puts(b, "AbstractFuture{");
  show_type_inner(b, t, mesh);
  buf_putc(b, '}');
}

static void show_type_inner(Buf *b, const Type *t, const Mesh *mesh) {
  buf_printf(b, "%s[", dtype_names[t->dt]);
  for (int i = 0; i < t->rank; i++) {
    buf_printf(b, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    if (t->lay && t->lay->dim[i].n) buf_printf(b, "@%.*s", t->lay->dim[i].n, t->lay->dim[i].p);
  }
  buf_putc(b, ']');
  bool ur = (mesh && (t->unred || t->red)) || (t->lay && (t->lay->unred.n || t->lay->red.n));
  if (ur || (t->vma && mesh && !mesh->named && state_cur()->jax_names)) {
    axis_groups(b, t, mesh);
    return;
  }
  if (t->vma && mesh && mesh->named) {       /* a named shape: <batch:20,hidden:512> */
    buf_putc(b, '<');
    bool first = true;
    for (int k = 0; k < mesh->naxes; k++)
      if (t->vma & (1u << k)) {
        buf_printf(b, "%s%.*s:%lld", first ? "" : ",", mesh->axis[k].n, mesh->axis[k].p, (long long)mesh->size[k]);
        first = false;
      }
    buf_putc(b, '>');
  } else if (t->vma && mesh) {
    show_vma(b, t->vma, mesh);
  }
}

void show_var_type(Buf *b, const IrVar *v) {
  const IrVar *l = v->logical;
  if (l) {                     /* a value of an xmap body, as its lowering holds it */
    show_type(b, &l->t, l->owner ? l->owner->mesh : NULL);
    buf_puts(b, " as ");
  }
  show_type(b, &v->t, v->owner ? v->owner->mesh : NULL);
}

/* A float as shm reads it back: shortest round-trip digits, always with a
   point or exponent. */
static void show_float(Buf *b, double f, bool is_f32) {
  if (isnan(f)) { buf_puts(b, "nan"); return; }
  if (isinf(f)) { buf_puts(b, f < 0 ? "-inf" : "inf"); return; }
  char s[64];
  for (int p = 1; p <= 17; p++) {
    snprintf(s, sizeof s, "%.*g", p, f);
    if (is_f32 ? (float)strtod(s, NULL) == (float)f : strtod(s, NULL) == f) break;
  }
  buf_puts(b, s);
  if (!strpbrk(s, ".eEn")) buf_puts(b, ".0");
}

/* A complex number as Python prints it, `(1+2j)` (`2j` when the real
   part is +0): shm reads it back. */
static void show_complex(Buf *b, double re, double im, bool is_c64) {
  char r[64], i[64];
  Buf t = {0};
  err_defer(buf_release, &t);
  show_float(&t, re, is_c64);
  snprintf(r, sizeof r, "%s", buf_cstr(&t));
  t.n = 0;
  show_float(&t, fabs(im), is_c64);
  snprintf(i, sizeof i, "%s", buf_cstr(&t));
  err_undefer(&t);
  buf_free(&t);
  for (char *x = r; x; x = NULL) {   /* Python drops a trailing ".0" */
    size_t n = strlen(x);
    if (n > 2 && !strcmp(x + n - 2, ".0")) x[n - 2] = 0;
  }
  size_t n = strlen(i);
  if (n > 2 && !strcmp(i + n - 2, ".0")) i[n - 2] = 0;
  bool ineg = signbit(im) && !isnan(im);
  if (re == 0 && !signbit(re)) buf_printf(b, "%s%sj", ineg ? "-" : "", i);
  else buf_printf(b, "(%s%c%sj)", r, ineg ? '-' : '+', i);
}

/* ---- naming ------------------------------------------------------------------ */

typedef struct Names {
  const IrVar **vars;
  char **names;
  int n, cap;
} Names;

static bool taken(Names *N, const char *s) {
  for (int i = 0; i < N->n; i++)
    if (!strcmp(N->names[i], s)) return true;
  return false;
}

static const char *name_of(Names *N, const IrVar *v) {
  for (int i = 0; i < N->n; i++)
    if (N->vars[i] == v) return N->names[i];
  char base[128], cand[160];
  snprintf(base, sizeof base, "%.*s", v->name.n ? v->name.n : 1, v->name.n ? v->name.p : "t");
  snprintf(cand, sizeof cand, "%s", base);
  for (int k = 1; taken(N, cand); k++) snprintf(cand, sizeof cand, "%s_%d", base, k);
  if (N->n == N->cap) {
    N->cap = N->cap ? N->cap * 2 : 32;
    N->vars = mem_realloc(N->vars, sizeof(IrVar *) * (size_t)N->cap);
    N->names = mem_realloc(N->names, sizeof(char *) * (size_t)N->cap);
  }
  N->vars[N->n] = v;
  N->names[N->n] = mem_strndup(cand, strlen(cand));
  return N->names[N->n++];
}

static void names_free(Names *N) {
  for (int i = 0; i < N->n; i++) mem_free(N->names[i]);
  mem_free(N->vars);
  mem_free(N->names);
}

/* ---- values and parameters ---------------------------------------------------------- */

static void show_scalar(Buf *b, const Array *a, int64_t i) {
  double re, im;
  switch ((DType)a->dt) {
  case DT_BOOL: buf_puts(b, arr_geti(a, i) ? "True" : "False"); break;
  case DT_F32: case DT_BF16: case DT_F16: show_float(b, arr_getf(a, i), true); break;
  case DT_F64: show_float(b, arr_getf(a, i), false); break;
  case DT_C64: case DT_C128:
    arr_getc(a, i, &re, &im);
    show_complex(b, re, im, a->dt == DT_C64);
    break;
  default:
    if (dtype_is_unsigned((DType)a->dt)) buf_printf(b, "%llu", (unsigned long long)arr_getu(a, i));
    else buf_printf(b, "%lld", (long long)arr_geti(a, i));
    break;
  }
}

static void show_nested(Buf *b, const Array *a, int d, int64_t *pos) {
  if (d == a->rank) { show_scalar(b, a, (*pos)++); return; }
  buf_putc(b, '[');
  for (int64_t i = 0; i < a->shape[d]; i++) {
    if (i) buf_puts(b, ", ");
    show_nested(b, a, d + 1, pos);
  }
  buf_putc(b, ']');
}

static void show_str(Buf *b, Str s) {
  buf_putc(b, '\'');
  for (int i = 0; i < s.n; i++) {
    char c = s.p[i];
    if (c == '\n') buf_puts(b, "\\n");
    else if (c == '\t') buf_puts(b, "\\t");
    else if (c == '\'' || c == '\\') { buf_putc(b, '\\'); buf_putc(b, c); }
    else buf_putc(b, c);
  }
  buf_putc(b, '\'');
}

/* A primitive's name as show prints it: with --jax-names, as JAX prints
   it today (the variance cast is pvary; two casts keep their _p). */
static const char *shown_name(int prim) {
  if (state_cur()->jax_names) {
    if (prim == P_PBROADCAST) return "pvary";
    if (prim == P_VARY_UNREDUCED_CAST) return "vary_unreduced_cast_p";
    if (prim == P_REDUCED_VARY_CAST) return "reduced_vary_cast_p";
  }
  return prim_table[prim].name;
}

typedef struct Show Show;
static void show_fn(Show *S, const IrFunc *f, int indent);

struct Show {
  Buf *b;
  bool lowered;                /* print a front end's equation (xmap) as the call of its lowering */
  Names names;
  const IrFunc *defs[64];      /* nested functions already printed */
  char *defnames[64];
  int ndefs;
};

/* The name a call prints for its callee.  A function defined inside
   another is printed as a `def` just before its first call, so that the
   output reads back. */
static const char *callee_name(Show *S, const IrFunc *f, int indent) {
  if (!f->parent || !f->parent->parent) return f->name;
  for (int i = 0; i < S->ndefs; i++)
    if (S->defs[i] == f) return S->defnames[i];
  char cand[160];
  snprintf(cand, sizeof cand, "%s", f->name);
  for (int k = 1;; k++) {
    bool used = false;
    for (int i = 0; i < S->ndefs; i++) used |= !strcmp(S->defnames[i], cand);
    if (!used) break;
    snprintf(cand, sizeof cand, "%s_%d", f->name, k);
  }
  if (S->ndefs == 64) return f->name;
  S->defs[S->ndefs] = f;
  S->defnames[S->ndefs] = mem_strndup(cand, strlen(cand));
  const char *name = S->defnames[S->ndefs++];
  buf_printf(S->b, "def %s = ", name);
  show_fn(S, f, indent);
  buf_printf(S->b, "\n%*s", indent, "");
  return name;
}

static void show_pv(Show *S, const PVal *v, const Attrs *at, const Mesh *mesh, int indent) {
  Buf *b = S->b;
  switch (v->k) {
  case PV_INT: buf_printf(b, "%lld", (long long)v->i); break;
  case PV_FLOAT: show_float(b, v->f, false); break;
  case PV_STR: show_str(b, v->s); break;
  case PV_NAME: buf_printf(b, "%.*s", v->s.n, v->s.p); break;
  case PV_NONE: buf_puts(b, "None"); break;
  case PV_BOOL: buf_puts(b, v->i ? "True" : "False"); break;
  case PV_TUPLE:
  case PV_LIST:
  case PV_SPEC: {
    bool fns = v->n && v->items[0]->k == PV_FUNC;
    buf_puts(b, v->k == PV_TUPLE ? "(" : v->k == PV_LIST ? "[" : "P(");
    for (int i = 0; i < v->n; i++) {
      if (fns) buf_printf(b, "\n%*s", indent + 2, "");
      else if (i) buf_puts(b, ", ");
      show_pv(S, v->items[i], at, mesh, indent + 2);
    }
    if (fns) buf_printf(b, "\n%*s", indent, "");
    else if (v->k == PV_TUPLE && v->n == 1) buf_putc(b, ',');
    buf_putc(b, v->k == PV_LIST ? ']' : ')');
    break;
  }
  case PV_FUNC:
    if (at && v->i < at->nfns) show_fn(S, at->fns[v->i], indent);
    else buf_puts(b, "<function>");
    break;
  case PV_COMPLEX: show_complex(b, v->f, v->f2, false); break;
  case PV_REPR: buf_printf(b, "%.*s", v->s.n, v->s.p); break;
  case PV_CALL:
  case PV_DICT:
    if (v->k == PV_CALL) buf_printf(b, "%.*s(", v->s.n, v->s.p);
    else buf_putc(b, '{');
    for (int i = 0; i < v->n; i++) {
      if (i) buf_puts(b, ", ");
      show_pv(S, v->items[i], at, mesh, indent);
    }
    buf_putc(b, v->k == PV_CALL ? ')' : '}');
    break;
  case PV_PAIR:
    show_pv(S, v->items[0], at, mesh, indent);
    buf_puts(b, ": ");
    show_pv(S, v->items[1], at, mesh, indent);
    break;
  case PV_KW:
    buf_printf(b, "%.*s=", v->s.n, v->s.p);
    show_pv(S, v->items[0], at, mesh, indent);
    break;
  case PV_ELLIPSIS: buf_puts(b, "..."); break;
  }
}

static void show_free(Show *S) {
  names_free(&S->names);
  for (int i = 0; i < S->ndefs; i++) mem_free(S->defnames[i]);
}

/* ---- functions -------------------------------------------------------------------------- */

static void show_binder(Show *S, const IrVar *v, const Mesh *mesh) {
  buf_printf(S->b, "%s:", name_of(&S->names, v));
  show_type(S->b, &v->t, mesh);
}

static void show_atom(Show *S, const IrAtom *a, const Mesh *mesh) {
  if (a->var) { buf_puts(S->b, name_of(&S->names, a->var)); return; }
  show_scalar(S->b, a->lit, 0);
  buf_putc(S->b, ':');
  show_type(S->b, &a->t, mesh);
}

/* Does the parameter `key` appear in the space-separated list `list`? */
static int key_rank(const char *list, const char *key) {
  int r = 0;
  size_t kl = strlen(key);
  for (const char *p = list; p && *p;) {
    while (*p == ' ') p++;
    const char *e = p;
    while (*e && *e != ' ') e++;
    if ((size_t)(e - p) == kl && !memcmp(p, key, kl)) return r;
    r++;
    p = e;
  }
  return 1000;
}

/* A fori_loop bound given as a value is an operand of the equation, shown
   as its parameter (`upper=n`) rather than among the carries. */
static const IrAtom *fori_bound_operand(const IrStmt *st, const char *key) {
  if (st->prim != P_FORI_LOOP || !st->at->i[2]) return NULL;
  int64_t m = st->at->i[3];
  if (!strcmp(key, "lower")) return m & 1 ? &st->in[0] : NULL;
  if (!strcmp(key, "upper")) return m & 2 ? &st->in[m & 1 ? 1 : 0] : NULL;
  return NULL;
}

/* The primitive an equation prints as: xmap for the call of its lowering,
   unless the lowering is printed; -1 for a call. */
static int shown_prim(const Show *S, const IrStmt *st) {
  return st->shown_prim >= 0 && !S->lowered ? st->shown_prim : st->prim;
}

static void show_params(Show *S, const IrStmt *st, const Mesh *mesh, int indent) {
  if (!st->nparams) return;
  /* in the table's order; a JAX call primitive's as written */
  const char *order = st->via ? "" : prim_table[shown_prim(S, st)].params;
  int idx[64], n = st->nparams < 64 ? st->nparams : 64;
  for (int i = 0; i < n; i++) idx[i] = i;
  for (int i = 1; i < n; i++)       /* stable insertion sort by table order */
    for (int j = i; j > 0 && key_rank(order, st->params[idx[j]].key) < key_rank(order, st->params[idx[j - 1]].key); j--) {
      int t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t;
    }
  bool multiline = false;
  for (int i = 0; i < n; i++)
    if (st->params[i].v->k == PV_FUNC || (st->params[i].v->n && st->params[i].v->items[0]->k == PV_FUNC))
      multiline = true;
  buf_putc(S->b, '[');
  for (int i = 0; i < n; i++) {
    const IrParam *p = &st->params[idx[i]];
    if (multiline) buf_printf(S->b, "\n%*s", indent + 2, "");
    else if (i) buf_putc(S->b, ' ');
    buf_printf(S->b, "%s=", p->key);
    const IrAtom *bound = fori_bound_operand(st, p->key);
    if (bound) show_atom(S, bound, mesh);
    else show_pv(S, p->v, st->at, mesh, indent + 2);
  }
  if (multiline) buf_printf(S->b, "\n%*s", indent, "");
  buf_putc(S->b, ']');
}

/* A binder that JAX annotated with fewer axes than its sound type (under
   a varying predicate, check.c): a comment line says so, and the binder
   prints its sound type. */
static void show_jax_notes(Show *S, IrVar *const *vars, int n, const Mesh *mesh, int indent) {
  for (int i = 0; i < n; i++) {
    const IrVar *v = vars[i];
    if (!v->jax_narrow) continue;
    buf_printf(S->b, "%*s# %s: annotated ", indent, "", name_of(&S->names, v));
    show_vma(S->b, v->jax_vma, mesh);
    buf_puts(S->b, " (as JAX prints it); it varies over ");
    show_vma(S->b, v->t.vma, mesh);
    buf_puts(S->b, " because a predicate varies over ");
    show_vma(S->b, v->t.vma & ~v->jax_vma, mesh);
    buf_putc(S->b, '\n');
  }
}

static void show_stmt(Show *S, const IrStmt *st, const Mesh *mesh, int indent) {
  Buf *b = S->b;
  if (st->k == IS_EQN) show_jax_notes(S, st->out, st->nout, mesh, indent);
  buf_printf(b, "%*s", indent, "");
  switch (st->k) {
  case IS_EQN: {
    int prim = shown_prim(S, st);
    const char *cname = prim < 0 && !st->via ? callee_name(S, st->callee, indent) : NULL;
    for (int i = 0; i < st->nout; i++) {
      if (i) buf_putc(b, ' ');
      show_binder(S, st->out[i], mesh);
    }
    if (st->nout) buf_puts(b, " = ");
    if (st->via) {
      if (st->via_name.n) buf_printf(b, "%.*s", st->via_name.n, st->via_name.p);
      else buf_puts(b, prim_table[st->via - 1].name);
      show_params(S, st, mesh, indent);
    } else if (prim < 0) {
      buf_puts(b, cname);
      /* a function printed as a nested def is the instance itself */
      const IrFunc *c = st->callee;
      if (c->statics && (!c->parent || !c->parent->parent)) buf_printf(b, "[%s]", c->statics);
    }
    else {
      buf_puts(b, shown_name(prim));
      show_params(S, st, mesh, indent);
    }
    for (int i = st->prim == P_FORI_LOOP ? (int)st->at->i[2] : 0; i < st->nin; i++) {
      buf_putc(b, ' ');
      show_atom(S, &st->in[i], mesh);
    }
    break;
  }
  case IS_CONST: {
    show_binder(S, st->out[0], mesh);
    buf_puts(b, " = ");
    if (st->loaded) {
      buf_puts(b, "load ");
      show_str(b, st->load_path);
      if (st->load_has_key) {
        buf_putc(b, ' ');
        show_str(b, st->load_key);
      }
      break;
    }
    int64_t pos = 0;
    show_nested(b, st->value, 0, &pos);
    break;
  }
  case IS_SAVE:
    buf_puts(b, "save ");
    show_str(b, st->load_path);
    buf_putc(b, ' ');
    show_atom(S, &st->in[0], mesh);
    break;
  case IS_PRINT:
    buf_puts(b, "print");
    if (st->print_spec) {
      buf_puts(b, "[global=");
      rule_spec_text(b, st->print_spec, mesh);
      buf_putc(b, ']');
    } else if (st->print_global) buf_puts(b, "[global=True]");
    for (int i = 0; i < st->nitems; i++) {
      buf_puts(b, i ? ", " : " ");
      if (!st->items[i].atom.var && !st->items[i].atom.lit) show_str(b, st->items[i].text);
      else show_atom(S, &st->items[i].atom, mesh);
    }
    break;
  case IS_SHOW: {
    const char *t = st->text + 4, *e = strchr(t, ' ');
    buf_printf(b, "show %.*s", (int)(e ? e - t : 0), t);
    break;
  }
  }
  buf_putc(b, '\n');
}

static void show_fn(Show *S, const IrFunc *f, int indent) {
  Buf *b = S->b;
  const Mesh *mesh = f->mesh;
  buf_puts(b, "{ lambda ");
  for (int i = 0; i < f->ncaptured; i++) {
    if (i) buf_putc(b, ' ');
    show_binder(S, f->captured[i], f->captured[i]->owner ? f->captured[i]->owner->mesh : NULL);
  }
  buf_puts(b, "; ");
  for (int i = 0; i < f->nparams; i++) {
    if (i) buf_putc(b, ' ');
    show_binder(S, f->params[i], mesh);
  }
  buf_puts(b, ". let\n");
  show_jax_notes(S, f->params, f->nparams, mesh, indent + 4);
  for (int i = 0; i < f->nbody; i++) show_stmt(S, f->body[i], mesh, indent + 4);
  buf_printf(b, "%*sin (", indent + 2, "");
  for (int i = 0; i < f->nouts; i++) {
    if (i) buf_puts(b, ", ");
    show_atom(S, &f->outs[i], mesh);
  }
  buf_puts(b, f->nouts == 1 ? ",) }" : ") }");
}

static void release_show(void *S) { show_free(S); }

void show_param_value(Buf *b, const PVal *v) {
  Show S;
  memset(&S, 0, sizeof S);
  S.b = b;
  err_defer(release_show, &S);
  show_pv(&S, v, NULL, NULL, 0);
  err_undefer(&S);
  show_free(&S);
}

/* The comment before a lowering. */
static const char *p_lowered_note(const IrFunc *f) {
  for (int i = 0; i < f->nbody; i++)
    if (f->body[i]->k == IS_EQN && f->body[i]->shown_prim >= 0 && f->body[i]->callee->is_shard_map_wrapper)
      return "# lowered to shard_map:\n";
  return "# lowered (no axis has resources: vectorized, as vmap):\n";
}

/* Does f call the lowering of a front end's equation (xmap)? */
static bool has_lowering(const IrFunc *f) {
  for (int i = 0; i < f->nbody; i++)
    if (f->body[i]->k == IS_EQN && f->body[i]->shown_prim >= 0) return true;
  return false;
}

static void show_def(Buf *b, const IrFunc *f, const char *name, bool lowered) {
  Show S;
  memset(&S, 0, sizeof S);
  S.b = b;
  S.lowered = lowered;
  err_defer(release_show, &S);
  buf_printf(b, "def %s = ", name);
  show_fn(&S, f, 0);
  buf_putc(b, '\n');
  err_undefer(&S);
  show_free(&S);
}

void show_func(Buf *b, const IrFunc *f, const char *name) {
  show_def(b, f, name, false);
  if (!has_lowering(f)) return;
  /* an xmap: what runs, a definition of the same function */
  buf_puts(b, p_lowered_note(f));
  if (f->is_xmap_wrapper) show_def(b, f->body[0]->callee, name, false);
  else show_def(b, f, name, true);
}

void show_equation(Buf *b, const IrStmt *st, const Mesh *mesh) {
  Show S;
  memset(&S, 0, sizeof S);
  S.b = b;
  err_defer(release_show, &S);
  /* operands take the plain names, results the suffixed ones, as in show_func */
  for (int i = 0; st->k == IS_EQN && i < st->nin; i++)
    if (st->in[i].var) name_of(&S.names, st->in[i].var);
  if (st->k == IS_EQN && st->prim < 0 && !st->via) {
    /* a call: the callee by name, never a nested def */
    for (int i = 0; i < st->nout; i++) {
      if (i) buf_putc(b, ' ');
      show_binder(&S, st->out[i], mesh);
    }
    buf_printf(b, " = %s", st->callee->name);
    if (st->callee->statics) buf_printf(b, "[%s]", st->callee->statics);
    for (int i = 0; i < st->nin; i++) {
      buf_putc(b, ' ');
      show_atom(&S, &st->in[i], mesh);
    }
    buf_putc(b, '\n');
  } else {
    show_stmt(&S, st, mesh, 0);
  }
  err_undefer(&S);
  show_free(&S);
}
