/*
** lexer.re — the tokens of shm (docs/language.md), for re2c.
**
** Besides shm's own tokens the lexer reads what jax.make_jaxpr prints,
** in every version's layout (docs/jaxpr.md):
**
**   - keywords are keywords only where they can be: JAX names variables
**     a, b, ..., z, ba, ... so a long jaxpr has a variable `in` (and a
**     shared jaxpr may be called `lambda`); such a word is a name when it
**     stands where a keyword cannot (contextual_keyword below);
**   - inside a jaxpr `{ lambda ... }` the header may break over lines,
**     and a line indented deeper than the start of the equation it
**     follows continues that equation (JAX breaks long binder and operand
**     lists so);
**   - Python reprs in parameter values: `<function f at 0x...>`,
**     GSPMDSharding({devices=[2,4]<=[8]}) (XLA's text in the braces), the
**     lines of a `Wrapped function:` up to its `Core: ...` line,
**     `frozenset({'i'})`, `Mesh('i': 4)` (a name right before `(` inside
**     brackets is a call), dotted names (`Precision.DEFAULT`) and complex
**     numbers `(1+2j)`.
*/
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "esc.h"
#include "lex.h"
#include "parser.h"

void lex_init(Lexer *L, Arena *arena, int file, const char *src, size_t len) {
  memset(L, 0, sizeof *L);
  L->src = src;
  L->cur = src;
  L->lim = src + len;
  L->file = file;
  L->arena = arena;
  L->at_line_start = true;
  L->prev = TK_NL;
}

static const struct { const char *w; int tk; } keywords[] = {
  {"def", TK_DEF}, {"return", TK_RETURN}, {"lambda", TK_LAMBDA},
  {"let", TK_LET}, {"in", TK_IN}, {"import", TK_IMPORT},
  {"print", TK_PRINT}, {"show", TK_SHOW}, {"mesh", TK_MESH},
  {"None", TK_NONE}, {"True", TK_TRUE}, {"False", TK_FALSE},
  {"load", TK_LOAD}, {"save", TK_SAVE}, {"visualize", TK_VISUALIZE},
};

/* Decode a quoted string's escapes into the arena. */
static Str decode_string(Lexer *L, const char *b, const char *e) {
  char *out = arena_alloc(L->arena, (size_t)(e - b) + 1);
  int n = 0;
  for (const char *p = b; p < e; p++) {
    if (*p == '\\' && p + 1 < e) {
      p++;
      switch (*p) {
      case 'n': out[n++] = '\n'; break;
      case 't': out[n++] = '\t'; break;
      default: out[n++] = *p; break;
      }
    } else {
      out[n++] = *p;
    }
  }
  Str s = {out, n};
  return s;
}

/* The innermost open bracket ('(' '[' '{', 'L' for a jaxpr's brace), or 0. */
static char top(const Lexer *L) {
  return L->depth > 0 && L->depth <= LEX_MAXNEST ? L->nest[L->depth - 1] : 0;
}

static bool newline_significant(const Lexer *L) {
  if (L->depth > LEX_MAXNEST) return false;   /* already an error */
  return L->depth == 0 || top(L) == '{' || top(L) == 'L';
}

/* Open a bracket; false (an error token) beyond LEX_MAXNEST levels.  The
   depth still counts it, so the closing brackets stay balanced. */
static bool push(Lexer *L, char c) {
  if (L->depth < LEX_MAXNEST) {
    L->nest[L->depth] = c;
    L->header[L->depth] = false;
    L->stmt_col[L->depth] = -1;
  }
  L->depth++;
  if (L->depth <= LEX_MAXNEST) return true;
  L->error = "brackets nested too deeply (the limit is " LEX_MAXNEST_TEXT " levels)";
  L->too_deep = true;
  return false;
}

static void pop(Lexer *L) {
  if (L->depth > 0) L->depth--;
}

/* The first character after p that is not a blank, on the same line. */
static char next_char(const Lexer *L, const char *p) {
  while (p < L->lim && (*p == ' ' || *p == '\t')) p++;
  return p < L->lim ? *p : '\n';
}

/* The column of p on its line. */
static int column(const Lexer *L, const char *p) {
  const char *s = p;
  while (s > L->src && s[-1] != '\n') s--;
  return (int)(p - s);
}

/* Inside a jaxpr, after a newline at p: does the next line that holds a
   token continue the current equation (it is indented deeper than the
   equation's first line, and does not begin with the `=` of an equation
   without results)? */
static bool continues(const Lexer *L, const char *p) {
  int lv = L->depth - 1;
  if (lv < 0 || lv >= LEX_MAXNEST || L->nest[lv] != 'L' || L->stmt_col[lv] < 0) return false;
  while (p < L->lim) {
    const char *s = p;
    while (p < L->lim && (*p == ' ' || *p == '\t')) p++;
    if (p < L->lim && *p == '\n') { p++; continue; }
    if (p < L->lim && *p == '#') {
      while (p < L->lim && *p != '\n') p++;
      continue;
    }
    /* `    = debug_callback[...] a`: an equation without results, as
       JAX 0.4.2x printed it (an empty binder list, then " = ") */
    if (p + 1 < L->lim && p[0] == '=' && p[1] != '=') return false;
    return p < L->lim && p - s > L->stmt_col[lv];
  }
  return false;
}

/* After `in` at p: one name or number, then the `}` closing the jaxpr
   (shm's `in b }`, a result without parentheses)? */
static bool bare_result(const Lexer *L, const char *p) {
  while (p < L->lim && (*p == ' ' || *p == '\t')) p++;
  const char *w = p;
  while (p < L->lim && (isalnum((unsigned char)*p) || *p == '_' || *p == '.' || *p == '-')) p++;
  return p > w && next_char(L, p) == '}';
}

/* Is the word a keyword here, or a name?  Words JAX may print as names
   are keywords only where a keyword can stand: `def`, `print` ... at the
   start of a statement; `lambda` right after `{`; `let` after the `.` of
   a jaxpr's header or where a shared jaxpr is bound; `in` where a jaxpr's
   results follow.  A word followed by `:` or `=` is a binder. */
static int contextual_keyword(const Lexer *L, int tk, const char *after) {
  char nx = next_char(L, after);
  bool binder = nx == ':' || nx == '=';
  switch (tk) {
  case TK_NONE: case TK_TRUE: case TK_FALSE:
    return tk;
  case TK_LAMBDA:
    return L->prev == TK_LBRACE ? tk : TK_IDENT;
  case TK_LOAD:         /* x = load "file.npy" */
    return L->prev == TK_EQ && (nx == '"' || nx == '\'') ? tk : TK_IDENT;
  case TK_SAVE:         /* save "file.npy" x */
    return L->at_line_start && (nx == '"' || nx == '\'') ? tk : TK_IDENT;
  case TK_LET:
    if (binder) return TK_IDENT;
    if (L->prev == TK_DOT || L->prev == TK_NL) return tk;
    return L->prev == TK_EQ && top(L) != '[' && top(L) != '(' ? tk : TK_IDENT;
  case TK_IN:
    if (binder) return TK_IDENT;
    if (nx == '(' || nx == '[' || bare_result(L, after)) return tk;
    return L->prev == TK_NL || L->prev == TK_SEMI || L->prev == TK_DOT || L->prev == TK_LET ||
           L->prev == TK_RBRACE ? tk : TK_IDENT;
  default:          /* statement keywords */
    return (L->at_line_start || L->prev == TK_LBRACE) && !binder ? tk : TK_IDENT;
  }
}

/* A Python repr in angle brackets, `<function f.<locals>.g at 0x7f>`:
   the end of it on the same line, or NULL. */
static const char *repr_end(const Lexer *L, const char *p) {
  int depth = 0;
  for (; p < L->lim && *p != '\n' && *p; p++) {
    if (*p == '<') depth++;
    else if (*p == '>' && --depth == 0) return p + 1;
  }
  return NULL;
}

/* The repr of a lu.WrappedFun, which JAX 0.5 and 0.6 printed as the value
   of custom_jvp_call's jvp_jaxpr_fun and custom_vjp_call's bwd and
   fwd_jaxpr_thunk: `Wrapped function:`, one line per transformation
   (`0   : _flatten_bwd   (PyTreeDef((*,)), ...)`), blank lines, and
   `Core: NAME`.  The end of the Core line, or NULL. */
static const char *wrapped_end(const Lexer *L, const char *p) {
  while (p < L->lim) {
    while (p < L->lim && *p != '\n') p++;
    if (p < L->lim) p++;
    if ((size_t)(L->lim - p) >= 5 && !strncmp(p, "Core:", 5)) {
      while (p < L->lim && *p != '\n') p++;
      return p;
    }
  }
  return NULL;
}

/* Does the `{` at p open the argument of GSPMDSharding(...)?  Its text is
   XLA's HloSharding, not a Python value ({devices=[2,4]<=[8]}): it is read
   whole, as a repr, and hlosharding.c reads it. */
static bool after_gspmd(const Lexer *L, const char *p) {
  static const char w[] = "GSPMDSharding(";
  size_t n = sizeof w - 1;
  return (size_t)(p - L->src) >= n && !strncmp(p - n, w, n);
}

/* The end of the balanced {...} at p on its line (strings skipped), or NULL. */
static const char *brace_end(const Lexer *L, const char *p) {
  int depth = 0;
  bool str = false;
  for (; p < L->lim && *p != '\n' && *p; p++) {
    if (str) { if (*p == '\\') p++; else if (*p == '"') str = false; }
    else if (*p == '"') str = true;
    else if (*p == '{') depth++;
    else if (*p == '}' && --depth == 0) return p + 1;
  }
  return NULL;
}

/* After `fmt` in brackets (debug_print[fmt=x is {x} has_placeholders=...]):
   JAX prints the format string raw, so its text runs to the whitespace
   before the next parameter, has_placeholders (the parameters are sorted);
   a quoted value is an ordinary string.  Sets L->raw_from/raw_to. */
static void raw_fmt(Lexer *L, const char *eq) {
  static const char next[] = "has_placeholders=";
  if (eq >= L->lim || *eq != '=' || eq[1] == '"' || eq[1] == '\'') return;
  const char *from = eq + 1, *p = strstr(from, next);
  while (p && !(p > from && (p[-1] == ' ' || p[-1] == '\n'))) p = strstr(p + 1, next);
  if (!p) return;
  const char *to = p;
  while (to > from && (to[-1] == ' ' || to[-1] == '\n')) to--;
  L->raw_from = from;
  L->raw_to = to;
}

/* The end of the balanced (...) at p on its line (quotes skipped), or NULL:
   PyTreeDef(((*,), {'x': *})), a repr JAX prints as debug_print's in_tree. */
static const char *paren_end(const Lexer *L, const char *p) {
  int depth = 0;
  char q = 0;
  for (; p < L->lim && *p != '\n' && *p; p++) {
    if (q) { if (*p == q) q = 0; }
    else if (*p == '\'' || *p == '"') q = *p;
    else if (*p == '(') depth++;
    else if (*p == ')' && --depth == 0) return p + 1;
  }
  return NULL;
}

/* A float of Python's str(): digits, nan or inf, with an optional sign. */
static double py_float(const char *p, const char **end) {
  bool neg = *p == '-';
  const char *q = p + (*p == '-' || *p == '+');
  if (!strncmp(q, "nan", 3)) { *end = q + 3; return neg ? -NAN : NAN; }
  if (!strncmp(q, "inf", 3)) { *end = q + 3; return neg ? -INFINITY : INFINITY; }
  char *e;
  double v = strtod(p, &e);
  *end = e;
  return v;
}

void lex_next(Lexer *L, Tok *t) {
  const unsigned char *YYCURSOR, *YYMARKER, *start;
  const unsigned char *YYLIMIT = (const unsigned char *)L->lim;
  for (;;) {
    YYCURSOR = (const unsigned char *)L->cur;
    start = YYCURSOR;
    if (L->raw_to && L->cur == L->raw_from) {       /* debug_print's raw fmt */
      t->type = TK_STRING;
      t->text.p = L->raw_from;
      t->text.n = (int)(L->raw_to - L->raw_from);
      t->sp.file = L->file;
      t->sp.off = (uint32_t)(L->raw_from - L->src);
      t->sp.len = (uint32_t)t->text.n;
      L->cur = L->raw_to;
      L->raw_to = NULL;
      L->at_line_start = false;
      L->prev = TK_STRING;
      return;
    }
    t->text.p = (const char *)start;
    t->sp.file = L->file;
    t->sp.off = (uint32_t)((const char *)start - L->src);
    t->ival = 0;
    t->fval = 0;
    t->fval2 = 0;
#define TOK(k) do { t->type = (k); goto done; } while (0)
    /*!re2c
      re2c:define:YYCTYPE = "unsigned char";
      re2c:yyfill:enable = 0;
      re2c:eof = 0;

      digits = [0-9]+;
      exp = [eE] [+-]? digits;
      ident = [A-Za-z_][A-Za-z0-9_]*;
      unum = digits "." [0-9]* exp? | "." digits exp? | digits exp? | "nan" | "inf";

      $ {
        if (!L->at_line_start) { L->at_line_start = true; t->sp.len = 0; t->type = TK_NL; t->text.n = 0; L->prev = TK_NL; return; }
        t->type = 0; t->sp.len = 0; t->text.n = 0; return;
      }
      [ \t\r\f\v]+ | "\\" "\r"? "\n" | "#" [^\n\x00]* { L->cur = (const char *)YYCURSOR; continue; }
      "\n" {
        L->cur = (const char *)YYCURSOR;
        if (!newline_significant(L) || L->at_line_start) continue;
        if (top(L) == 'L' && (L->header[L->depth - 1] || continues(L, L->cur))) continue;
        L->at_line_start = true;
        L->prev = TK_NL;
        t->type = TK_NL; t->sp.len = 1; t->text.n = 1; return;
      }
      "-"? digits {
        errno = 0;
        t->ival = strtoll((const char *)start, NULL, 10);
        if (errno == ERANGE) { L->error = "integer literal out of range"; TOK(TK_ILLEGAL); }
        TOK(TK_INT);
      }
      "-"? (digits "." [0-9]* exp? | "." digits exp? | digits exp) {
        t->fval = strtod((const char *)start, NULL);
        TOK(TK_FLOAT);
      }
      "nan" { t->fval = NAN; TOK(TK_FLOAT); }
      "inf" { t->fval = INFINITY; TOK(TK_FLOAT); }
      "-inf" { t->fval = -INFINITY; TOK(TK_FLOAT); }
      "-"? unum "j" {
        const char *e;
        t->fval2 = py_float((const char *)start, &e);
        TOK(TK_COMPLEX);
      }
      "(" "-"? unum [+-] unum "j)" {
        const char *e;
        t->fval = py_float((const char *)start + 1, &e);
        t->fval2 = py_float(e, &e);
        TOK(TK_COMPLEX);
      }
      "AbstractFuture{" {
        /* an async collective's future, as JAX prints its type */
        TOK(push(L, '{') ? TK_FUTURE : TK_ILLEGAL);
      }
      "key<" ident ">" {
        /* a PRNG key dtype as JAX prints it: key<fry>, key<rbg> */
        TOK(TK_IDENT);
      }
      "Wrapped function:" {
        /* a lu.WrappedFun's repr (JAX 0.5-0.6 parameters), over lines */
        const char *e = wrapped_end(L, (const char *)YYCURSOR);
        if (!e) { L->error = "a 'Wrapped function:' without its 'Core: ...' line"; TOK(TK_ILLEGAL); }
        YYCURSOR = (const unsigned char *)e;
        TOK(TK_REPR);
      }
      "PyTreeDef(" {
        const char *e = paren_end(L, (const char *)YYCURSOR - 1);
        if (!e) { L->error = "unterminated PyTreeDef(...)"; TOK(TK_ILLEGAL); }
        YYCURSOR = (const unsigned char *)e;
        TOK(TK_REPR);
      }
      "P(" | "PartitionSpec(" { TOK(push(L, '(') ? TK_PSPEC : TK_ILLEGAL); }
      /* JAX's scatter primitives have a hyphen in their names: scatter-add
         is one name, as jaxprs print it (shm has no infix minus) */
      "scatter-" ("add" | "sub" | "mul" | "min" | "max") { TOK(TK_IDENT); }
      ident ("." ident)* {
        Str w = {(const char *)start, (int)(YYCURSOR - start)};
        if (str_eqc(w, "fmt") && top(L) == '[') raw_fmt(L, (const char *)YYCURSOR);
        for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
          if (str_eqc(w, keywords[i].w)) TOK(contextual_keyword(L, keywords[i].tk, (const char *)YYCURSOR));
        if (*YYCURSOR == '(' && (top(L) == '[' || top(L) == '(')) {
          YYCURSOR++;
          t->text.n = w.n;
          t->type = push(L, '(') ? TK_CALL : TK_ILLEGAL;
          L->cur = (const char *)YYCURSOR;
          t->sp.len = (uint32_t)(YYCURSOR - start);
          L->at_line_start = false;
          L->prev = t->type;
          return;
        }
        TOK(TK_IDENT);
      }
      "<" {
        /* after a type's ] or {axes}: a named shape, f32[5]<batch:20> */
        if (L->prev == TK_RBRACK || L->prev == TK_RBRACE) TOK(TK_LT);
        const char *e = repr_end(L, (const char *)start);
        if (!e) { L->error = "unterminated <...>"; TOK(TK_ILLEGAL); }
        YYCURSOR = (const unsigned char *)e;
        TOK(TK_REPR);
      }
      "'" ([^'\\\n\x00] | "\\" [^\n\x00])* "'" | "\"" ([^"\\\n\x00] | "\\" [^\n\x00])* "\"" {
        t->type = TK_STRING;
        L->cur = (const char *)YYCURSOR;
        t->sp.len = (uint32_t)(YYCURSOR - start);
        L->at_line_start = false;
        L->prev = TK_STRING;
        t->text = decode_string(L, (const char *)start + 1, (const char *)YYCURSOR - 1);
        return;
      }
      "'" | "\"" {
        /* a NUL byte stops the string: that character is the error */
        const unsigned char *p = YYCURSOR;
        while (p < YYLIMIT && *p && *p != '\n' && *p != *start) p += *p == '\\' && p + 1 < YYLIMIT && p[1] ? 2 : 1;
        if (p < YYLIMIT && !*p) {
          start = p;
          YYCURSOR = p + 1;
          t->text.p = (const char *)p;
          t->sp.off = (uint32_t)((const char *)p - L->src);
          L->error = "unexpected character";
          TOK(TK_ILLEGAL);
        }
        L->error = "unterminated string";
        TOK(TK_ILLEGAL);
      }
      "(" { TOK(push(L, '(') ? TK_LPAREN : TK_ILLEGAL); }
      ")" { pop(L); TOK(TK_RPAREN); }
      "[" { TOK(push(L, '[') ? TK_LBRACK : TK_ILLEGAL); }
      "]" { pop(L); TOK(TK_RBRACK); }
      "{" {
        if (after_gspmd(L, (const char *)start)) {   /* GSPMDSharding({devices=[2,4]<=[8]}) */
          const char *e = brace_end(L, (const char *)start);
          if (!e) { L->error = "unterminated HLO sharding {...}"; TOK(TK_ILLEGAL); }
          YYCURSOR = (const unsigned char *)e;
          TOK(TK_REPR);
        }
        TOK(push(L, '{') ? TK_LBRACE : TK_ILLEGAL);
      }
      "}" { pop(L); TOK(TK_RBRACE); }
      "," { TOK(TK_COMMA); }
      ":" { TOK(TK_COLON); }
      "=" { TOK(TK_EQ); }
      "..." { TOK(TK_ELLIPSIS); }
      "." { TOK(TK_DOT); }
      ">" { TOK(TK_GT); }
      "@" { TOK(TK_AT); }
      ";" { TOK(TK_SEMI); }
      * {                                  /* (a character of UTF-8 whole) */
        char show[9];
        int w;
        YYCURSOR = start + esc_char((const char *)start, (size_t)(YYLIMIT - start), 0, show, &w);
        L->error = "unexpected character";
        TOK(TK_ILLEGAL);
      }
    */
  done:
#undef TOK
    L->cur = (const char *)YYCURSOR;
    t->sp.len = (uint32_t)(YYCURSOR - start);
    t->text.n = (int)(YYCURSOR - start);
    if (L->depth > 0 && L->depth <= LEX_MAXNEST) {
      int lv = L->depth - 1;
      if (t->type == TK_LAMBDA && L->nest[lv] == '{') {   /* a jaxpr's brace; its header begins */
        L->nest[lv] = 'L';
        L->header[lv] = true;
      } else if (t->type == TK_LET && L->nest[lv] == 'L') {
        L->header[lv] = false;
        L->stmt_col[lv] = -1;
      } else if (L->nest[lv] == 'L' && !L->header[lv] && L->at_line_start) {
        L->stmt_col[lv] = column(L, (const char *)start);
      } else if (L->nest[lv] == 'L' && !L->header[lv] && L->prev == TK_LET) {
        L->stmt_col[lv] = column(L, (const char *)start);
      }
    }
    L->at_line_start = t->type == TK_SEMI;
    L->prev = t->type;
    return;
  }
}
