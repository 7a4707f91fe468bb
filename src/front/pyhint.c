/*
** pyhint.c — pointers from Python and JAX syntax to the shm form (see
** pyhint.h).  Everything here reads one line of text; nothing is parsed
** for real, so a hint is offered only where the line's shape is plain.
*/
#include "pyhint.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A cursor over one line. */
typedef struct Cur {
  const char *p, *e;
} Cur;

static void skip_ws(Cur *c) {
  while (c->p < c->e && (*c->p == ' ' || *c->p == '\t')) c->p++;
}

static bool is_word(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* A word (letters, digits, '_'; with dots when `dotted`), or an empty Str. */
static Str word(Cur *c, bool dotted) {
  skip_ws(c);
  const char *s = c->p;
  while (c->p < c->e && (is_word(*c->p) || (dotted && *c->p == '.' && c->p > s))) c->p++;
  return (Str){s, (int)(c->p - s)};
}

static bool eat(Cur *c, char ch) {
  skip_ws(c);
  if (c->p < c->e && *c->p == ch) { c->p++; return true; }
  return false;
}

/* The text up to the ')' matching an already eaten '(' (exclusive). */
static Str paren_body(Cur *c) {
  const char *s = c->p;
  int depth = 1;
  while (c->p < c->e) {
    if (*c->p == '(' || *c->p == '[') depth++;
    else if ((*c->p == ')' || *c->p == ']') && --depth == 0) break;
    c->p++;
  }
  Str r = {s, (int)(c->p - s)};
  if (c->p < c->e) c->p++;
  return r;
}

/* The binders before `=` (not `==`), as `a, b = ...`: how many. */
static int binders(Cur *c, Str *names, int max) {
  int n = 0;
  for (;;) {
    Str w = word(c, false);
    if (!w.n || isdigit((unsigned char)w.p[0])) return 0;
    if (eat(c, ':')) {                  /* an annotation: x:f32[4] */
      while (c->p < c->e && *c->p != ',' && *c->p != '=') c->p++;
    }
    if (n < max) names[n] = w;
    n++;
    if (eat(c, ',')) continue;
    skip_ws(c);
    if (c->p + 1 < c->e && c->p[0] == '=' && c->p[1] != '=') { c->p++; return n < max ? n : max; }
    return 0;
  }
}

int pyhint_binders(const char *line, int len, Str *names, int max) {
  Cur c = {line, line + len};
  Str w = word(&c, false);
  if (str_eqc(w, "def") || str_eqc(w, "mesh") || str_eqc(w, "print") || str_eqc(w, "return")) return 0;
  c.p = line;
  return binders(&c, names, max);
}

/* Does the line end in ':' (a comment after it aside)? */
static bool ends_in_colon(const char *line, int len) {
  const char *e = line + len;
  const char *hash = memchr(line, '#', (size_t)len);
  if (hash) e = hash;
  while (e > line && isspace((unsigned char)e[-1])) e--;
  return e > line && e[-1] == ':';
}

bool pyhint_python_def(const char *line, int len) {
  Cur c = {line, line + len};
  return str_eqc(word(&c, false), "def") && ends_in_colon(line, len);
}

bool pyhint_python_block(const char *line, int len) {
  static const char *const heads[] = {"def", "for", "if", "elif", "else", "while", "with", "try", "except", NULL};
  Cur c = {line, line + len};
  Str w = word(&c, false);
  for (int k = 0; heads[k]; k++)
    if (str_eqc(w, heads[k])) return ends_in_colon(line, len);
  return false;
}

/* ---- calls ---------------------------------------------------------------------------- */

/* Python names and the shm form of a call of them: %s stands for the
   operands. */
typedef struct CallForm {
  const char *py, *shm;
} CallForm;

static const CallForm call_forms[] = {
    {"sum", "reduce_sum[axes=...] %s"},        {"max", "reduce_max[axes=...] %s"},
    {"min", "reduce_min[axes=...] %s"},        {"prod", "reduce_prod[axes=...] %s"},
    {"mean", "reduce_sum[axes=...] %s, then div by the count"},
    {"dot", "dot_general[dimension_numbers=(([1], [0]), ([], []))] %s for matrices; "
            "(([0], [0]), ([], [])) for two vectors"},
    {"matmul", "dot_general[dimension_numbers=(([1], [0]), ([], []))] %s"},
    {"add", "add %s"},         {"subtract", "sub %s"},    {"multiply", "mul %s"},
    {"divide", "div %s"},      {"negative", "neg %s"},    {"maximum", "max %s"},
    {"minimum", "min %s"},     {"power", "pow %s"},       {"reshape", "reshape[new_sizes=(...)] %s"},
    {"transpose", "transpose[permutation=(...)] %s"},    {"zeros", "full[shape=(...), value=0.0]"},
    {"ones", "full[shape=(...), value=1.0]"},            {"psum", "psum[axes=...] %s"},
    {"pmean", "pmean[axes=...] %s"},           {"all_gather", "all_gather[axis_name=...] %s"},
    {"help", "help %s"},       {"print", "print %s"},     {"show", "show %s"},
    {NULL, NULL}};

/* The operands of a call's argument text: its leading positional names
   (string arguments, keywords and numbers dropped), space-separated. */
static void operands(Str args, char *out, size_t n) {
  Cur c = {args.p, args.p + args.n};
  size_t len = 0;
  out[0] = 0;
  while (c.p < c.e) {
    Cur save = c;
    Str w = word(&c, false);
    skip_ws(&c);
    bool plain = w.n && !isdigit((unsigned char)w.p[0]) && (c.p == c.e || *c.p == ',');
    if (plain && len < n) len += (size_t)snprintf(out + len, n - len, "%s%.*s", len ? " " : "", w.n, w.p);
    c = save;
    int depth = 0;
    while (c.p < c.e && (depth || *c.p != ',')) {
      if (*c.p == '(' || *c.p == '[') depth++;
      else if (*c.p == ')' || *c.p == ']') depth--;
      c.p++;
    }
    if (c.p < c.e) c.p++;
  }
}

/* The first argument when it is an integer literal (arange(4)). */
static Str int_arg(Str args) {
  Cur c = {args.p, args.p + args.n};
  Str w = word(&c, false);
  skip_ws(&c);
  for (int i = 0; i < w.n; i++)
    if (!isdigit((unsigned char)w.p[i])) return (Str){0, 0};
  return c.p == c.e ? w : (Str){0, 0};
}

/* "lhs = ", or "" for the name the REPL gives an expression line (__v). */
static void lhs_text(Str lhs, char *out, size_t n) {
  if (lhs.n >= 2 && lhs.p[0] == '_' && lhs.p[1] == '_') out[0] = 0;
  else snprintf(out, n, "%.*s = ", lhs.n, lhs.p);
}

/* `lhs = fn(args)`: the shm equation, or false when fn is unknown. */
static bool call_hint(Str lhs, Str fn, Str args, char *out, size_t n) {
  const char *dot = NULL;
  for (int i = 0; i < fn.n; i++)
    if (fn.p[i] == '.') dot = fn.p + i;
  Str base = dot ? (Str){dot + 1, (int)(fn.p + fn.n - dot - 1)} : fn;
  char ops[128], eq[80];
  operands(args, ops, sizeof ops);
  lhs_text(lhs, eq, sizeof eq);
  Str stop = int_arg(args);
  if (str_eqc(base, "arange") && stop.n) {
    snprintf(out, n, " (in shm: %sarange[stop=%.*s]; parameters go in brackets, operands after them)", eq, stop.n,
             stop.p);
    return true;
  }
  for (const CallForm *f = call_forms; f->py; f++)
    if (str_eqc(base, f->py)) {
      char form[256];
      snprintf(form, sizeof form, f->shm, ops);
      snprintf(out, n, " (in shm: %s%s)", eq, form);
      return true;
    }
  snprintf(out, n, " (in shm: %s%.*s%s%s; parameters, if any, go in brackets: %.*s[key=value] ...)", eq, base.n,
           base.p, *ops ? " " : "", ops, base.n, base.p);
  return true;
}

/* ---- infix operators ------------------------------------------------------------------- */

static const char *const infix[][2] = {{"**", "pow"}, {"==", "eq"}, {"!=", "ne"}, {"<=", "le"}, {">=", "ge"},
                                       {"+", "add"},  {"-", "sub"}, {"*", "mul"}, {"/", "div"},  {"<", "lt"},
                                       {">", "gt"},   {"@", "dot_general[dimension_numbers=(([1], [0]), ([], []))]"},
                                       {NULL, NULL}};

/* `lhs = a OP b`: the equation; false when the right side is not that. */
static bool infix_hint(Str lhs, Cur c, char *out, size_t n) {
  Str a = word(&c, true);
  skip_ws(&c);
  for (int k = 0; infix[k][0]; k++) {
    size_t ol = strlen(infix[k][0]);
    if ((size_t)(c.e - c.p) < ol || memcmp(c.p, infix[k][0], ol)) continue;
    Cur r = {c.p + ol, c.e};
    Str b = word(&r, true);
    skip_ws(&r);
    if (!a.n && b.n && !strcmp(infix[k][0], "-") && (r.p == r.e || *r.p == '#')) {
      snprintf(out, n, " (in shm: %.*s = neg %.*s)", lhs.n, lhs.p, b.n, b.p);
      return true;
    }
    if (!a.n || !b.n) {
      snprintf(out, n, " (shm has no infix operators: one equation per operation, t = %s a b)", infix[k][1]);
      return true;
    }
    if (r.p < r.e && *r.p != '#')
      snprintf(out, n, " (shm has no infix operators: one equation per operation, starting t = %s %.*s %.*s)",
               infix[k][1], a.n, a.p, b.n, b.p);
    else
      snprintf(out, n, " (in shm: %.*s = %s %.*s %.*s)", lhs.n, lhs.p, infix[k][1], a.n, a.p, b.n, b.p);
    return true;
  }
  return false;
}

/* ---- Python statements ------------------------------------------------------------------- */

/* A statement Python has and shm spells otherwise: `print(x)`, `help(psum)`,
   `return (a, b)`, `import numpy as np`, `from jax import lax`, `for i in range(3):`,
   `if c:`, `while c:`, `x[0]` used as a value. */
static bool statement_hint(Cur c, char *out, size_t n) {
  Cur w = c;
  Str kw = word(&w, false);
  if (str_eqc(kw, "print") || str_eqc(kw, "help") || str_eqc(kw, "show") || str_eqc(kw, "return")) {
    if (!eat(&w, '(')) return false;
    Str body = paren_body(&w);
    snprintf(out, n, " (in shm: %.*s %.*s; its operands take no parentheses)", kw.n, kw.p, body.n > 80 ? 80 : body.n,
             body.p);
    return true;
  }
  if (str_eqc(kw, "import") || str_eqc(kw, "from")) {
    skip_ws(&w);
    if (w.p < w.e && *w.p == '"') return false;
    snprintf(out, n, " (shm's import reads a .shm file: import \"file.shm\"; NumPy's and JAX's functions are "
                     "primitives here: help primitives lists them)");
    return true;
  }
  if (str_eqc(kw, "for")) {
    snprintf(out, n, " (shm has no for statement: a counted loop is carry = fori_loop[lower=0, upper=N, body=f] "
                     "carry, f taking the index and the carry; see docs/language.md)");
    return true;
  }
  if (str_eqc(kw, "if") || str_eqc(kw, "while")) {
    if (ends_in_colon(c.p, (int)(c.e - c.p))) {
      snprintf(out, n, str_eqc(kw, "if") ? " (shm has no if statement: outs = cond[branches=(f_false, f_true)] pred "
                                            "args..., or select_n for values)"
                                          : " (shm's loop is outs = while[cond_jaxpr=c, body_jaxpr=b] carry..., or "
                                            "fori_loop for a counted loop)");
      return true;
    }
  }
  return false;
}

/* `lhs = x[...]`: indexing with brackets. */
static bool index_hint(Str lhs, Cur c, char *out, size_t n) {
  Str x = word(&c, true);
  if (!x.n || !eat(&c, '[')) return false;
  Str body = paren_body(&c);
  bool ints = body.n > 0;
  for (int i = 0; i < body.n; i++)
    if (!isdigit((unsigned char)body.p[i]) && body.p[i] != ' ') ints = false;
  if (ints)
    snprintf(out, n, " (shm has no indexing syntax: %.*s = slice[start_indices=(%.*s, ...), limit_indices=(%d, ...)] "
                     "%.*s, then squeeze[dimensions=(0,)]; dynamic_slice or gather for a computed index)",
             lhs.n, lhs.p, body.n, body.p, atoi(body.p) + 1, x.n, x.p);
  else
    snprintf(out, n, " (shm has no indexing syntax: slice, dynamic_slice or gather take parts of %.*s)", x.n, x.p);
  return true;
}

/* ---- attributes ------------------------------------------------------------------------------ */

const char *pyhint_attr(Str name, int rank, char *out, size_t n) {
  out[0] = 0;
  int dot = -1;
  for (int i = 0; i < name.n; i++)
    if (name.p[i] == '.') dot = i;
  if (dot <= 0) return out;
  Str x = {name.p, dot}, a = {name.p + dot + 1, name.n - dot - 1};
  if (str_eqc(a, "T") && rank >= 0 && rank <= 1) {
    snprintf(out, n, " (shm has no attributes: %.*s.T of a %d-D array is %.*s itself)", x.n, x.p, rank, x.n, x.p);
  } else if (str_eqc(a, "T")) {
    char perm[96] = "...";
    if (rank >= 0 && rank <= 16) {
      size_t k = 0;
      for (int d = rank - 1; d >= 0; d--) k += (size_t)snprintf(perm + k, sizeof perm - k, "%d%s", d, d ? ", " : "");
    }
    snprintf(out, n, " (shm has no attributes: %.*s.T is transpose[permutation=(%s)] %.*s)", x.n, x.p, perm, x.n,
             x.p);
  } else if (str_eqc(a, "shape") || str_eqc(a, "dtype") || str_eqc(a, "ndim") || str_eqc(a, "size")) {
    snprintf(out, n, " (shm has no attributes: the type of %.*s says its %.*s; print it, or show the function)", x.n,
             x.p, a.n, a.p);
  } else if (str_eqc(a, "astype")) {
    snprintf(out, n, " (in shm: convert_element_type[new_dtype=...] %.*s)", x.n, x.p);
  } else {
    for (const CallForm *f = call_forms; f->py; f++)
      if (str_eqc(a, f->py) && !strchr(f->shm, ';')) {
        char form[256];
        snprintf(form, sizeof form, f->shm, "");
        snprintf(out, n, " (shm has no methods: %.*s.%.*s is %s%.*s)", x.n, x.p, a.n, a.p, form, x.n, x.p);
        return out;
      }
  }
  return out;
}

/* ---- the hint ------------------------------------------------------------------------------ */

/* `@name(...)`: the decorator with brackets. */
static bool decorator_hint(Cur c, char *out, size_t n) {
  if (!eat(&c, '@')) return false;
  Str name = word(&c, false);
  if (!name.n || !eat(&c, '(')) return false;
  Str body = paren_body(&c);
  snprintf(out, n, " (in shm a decorator's parameters go in brackets: @%.*s[%.*s])", name.n, name.p,
           body.n > 120 ? 120 : body.n, body.p);
  return true;
}

const char *pyhint_syntax(const char *line, int len, int col, char *out, size_t n) {
  (void)col;
  out[0] = 0;
  Cur c = {line, line + len};
  if (decorator_hint(c, out, n)) return out;
  if (pyhint_python_def(line, len)) {
    Cur d = {line, line + len};
    word(&d, false);
    Str name = word(&d, false);
    const char *colon = d.p;
    for (const char *p = d.p; p < d.e && *p != '#'; p++)
      if (*p == ':') colon = p;
    skip_ws(&d);
    if (colon < d.p) colon = d.p;
    snprintf(out, n, " (in shm a def's body goes in braces: def %.*s%.*s { ... return ... })", name.n, name.p,
             (int)(colon - d.p), d.p);
    return out;
  }
  if (statement_hint(c, out, n)) return out;
  Str names[8];
  Cur r = c;
  int nb = binders(&r, names, 8);
  if (!nb) return out;
  Str lhs = {line, 0};
  skip_ws(&c);
  lhs.p = c.p;
  lhs.n = (int)(r.p - 1 - c.p);
  while (lhs.n && (lhs.p[lhs.n - 1] == ' ' || lhs.p[lhs.n - 1] == '\t')) lhs.n--;
  Cur rhs = r;
  Str fn = word(&rhs, true);
  if (fn.n && eat(&rhs, '(')) {
    Str args = paren_body(&rhs);
    if (call_hint(lhs, fn, args, out, n)) return out;
  }
  if (infix_hint(lhs, r, out, n)) return out;
  index_hint(lhs, r, out, n);
  return out;
}
