/*
** ast.h — the syntax tree of a shm file, and the builder the grammar calls.
**
** Every node lives in the Arena of its Parser and carries the Span of the
** text it came from.  Lists are growable arrays of pointers (AstList) so
** that Lemon actions stay one-line calls: `A = ast_list_add(P, A, X)`.
**
** The tree is exactly what was written: names are not resolved, literals
** are not typed, functions are not checked.  check.c turns it into the
** checked program (ir.h).
*/
#ifndef SHM_AST_H
#define SHM_AST_H

#include "common.h"
#include "types.h"

/* ---- tokens (the lexer's product, the parser's input) ------------------ */

typedef struct Tok {
  int type;        /* TK_* from the generated parser.h */
  Str text;        /* raw text (for strings: the decoded contents) */
  Span sp;
  int64_t ival;    /* INT */
  double fval;     /* FLOAT; COMPLEX: the real part */
  double fval2;    /* COMPLEX: the imaginary part */
} Tok;

/* ---- lists -------------------------------------------------------------- */

typedef struct AstList {
  void **v;
  int n, cap;
} AstList;

/* ---- parameter values: Python-literal-like ----------------------------- */

typedef enum PVKind {
  PV_INT, PV_FLOAT, PV_STR, PV_NAME, PV_NONE, PV_BOOL,
  PV_TUPLE, PV_LIST, PV_SPEC, PV_FUNC,
  /* Python reprs JAX prints in parameters */
  PV_COMPLEX,            /* (1+2j): f and f2 */
  PV_REPR,               /* <function f at 0x...>: s is the text, brackets included */
  PV_CALL,               /* Name(items): s is the name (frozenset, Mesh, array) */
  PV_DICT,               /* {items}: PV_PAIR items (a dict) or values (a set) */
  PV_PAIR,               /* key: value, in a dict or a call: items[0], items[1] */
  PV_KW,                 /* key=value in a call: s is the key, items[0] the value */
  PV_ELLIPSIS            /* ... (xmap's [batch, ...]) */
} PVKind;

struct AstFunc;

typedef struct PVal {
  PVKind k;
  Span sp;
  int64_t i;             /* PV_INT, PV_BOOL */
  double f;              /* PV_FLOAT, PV_COMPLEX (real part) */
  double f2;             /* PV_COMPLEX: the imaginary part */
  Str s;                 /* PV_STR (decoded), PV_NAME */
  struct PVal **items;   /* PV_TUPLE, PV_LIST, PV_SPEC, PV_DICT, PV_CALL, PV_PAIR, PV_KW */
  int n;
  bool paren_only;       /* PV_TUPLE written `(x)`: one item, no comma */
  struct AstFunc *fn;    /* PV_FUNC: a nested `{ lambda ; ... }` */
} PVal;

typedef struct AstParam {
  Str key;
  Span sp;               /* the key */
  PVal *v;
} AstParam;

/* ---- types, binders, literals, arguments --------------------------------- */

typedef struct AstType {
  Span sp;
  Str dtype;
  int rank;
  int64_t shape[SHM_MAXRANK];
  bool rank_overflow;
  bool has_vma;          /* a `{...}` was written */
  int naxes;
  Str axes[SHM_MAXAXES];     /* varying: {i,j} or {V:(i,j)} */
  Span axes_sp;
  /* JAX's unreduced and reduced axes: {U:x}, {U_max:x}, {R:y} */
  int nunred, nred;
  Str unred[SHM_MAXAXES], red[SHM_MAXAXES];
  int ukind;                 /* UK_SUM, UK_MAX, UK_MIN */
  Span bad_group;            /* a group whose letter is none of V, U, U_max, U_min, R (len 0: none) */
  bool grouped;              /* written {V:...} rather than {i,j} */
  /* an explicit-sharding layout: dim_shard[d] the axes dimension d is
     split over, as text ("x", "(model,data)"); has_shard: some are */
  bool has_shard;
  Str dim_shard[SHM_MAXRANK];
  /* a named shape `<batch:20, ...>` (xmap bodies) */
  bool has_named;
  int nnamed;
  Str named[SHM_MAXAXES];
  int64_t named_size[SHM_MAXAXES];
  Span named_sp;
  /* written without brackets: JAX's token type `Tok` (anything else is
     refused when resolved) */
  bool bare;
  /* JAX's AbstractFuture{f32[8]} (an async collective's start): the
     type is the awaited value's, future set */
  bool future;
} AstType;

typedef struct AstBinder {
  Str name;              /* "_" for a wildcard */
  Span sp;
  AstType *type;         /* NULL when not annotated */
} AstBinder;

typedef enum { LIT_INT, LIT_FLOAT, LIT_BOOL, LIT_COMPLEX } LitKind;

typedef struct AstLit {
  LitKind k;
  Span sp;
  int64_t i;
  double f;
  double im;             /* LIT_COMPLEX: the imaginary part (f the real) */
  AstType *type;         /* `1.0:f32[]` */
} AstLit;

typedef enum { ARG_NAME, ARG_LIT, ARG_STR } ArgKind;

typedef struct AstArg {
  ArgKind k;
  Span sp;
  Str name;              /* ARG_NAME; ARG_STR: the string */
  AstLit lit;            /* ARG_LIT */
} AstArg;

/* An array literal: either a leaf literal or a bracketed list of them. */
typedef struct AstALit {
  bool is_list;
  Span sp;
  AstLit lit;
  struct AstALit **items;
  int n;
} AstALit;

/* ---- statements and functions ------------------------------------------ */

typedef enum StmtKind {
  ST_EQN,       /* outs = callee[params] args */
  ST_LIT,       /* outs = literal | [array literal] */
  ST_PRINT,     /* print args */
  ST_VISUALIZE, /* visualize[params] name: a picture of where blocks are */
  ST_SHOW,      /* show name */
  ST_IMPORT,    /* import "path" */
  ST_MESH,      /* mesh name = {axis: size, ...} */
  ST_DEF,       /* def ... */
  ST_RETURN,    /* return args */
  ST_LOAD,      /* outs = load "path" ["key"] (name: the path, key: the key) */
  ST_SAVE,      /* save "path" arg (name: the path, args[0]) */
  ST_ERROR      /* a statement that did not parse (already diagnosed) */
} StmtKind;

typedef struct AstMeshAxis {
  Str name;
  Span sp;
  int64_t size;
  Span size_sp;
} AstMeshAxis;

typedef struct AstStmt {
  StmtKind k;
  Span sp;               /* whole statement */
  int line;              /* first line, for the debugger */
  /* ST_EQN, ST_LIT */
  AstBinder **outs;
  int nouts;
  Str callee;
  Span callee_sp;
  AstParam **params;
  int nparams;
  bool has_params;
  AstArg **args;         /* also ST_PRINT items and ST_RETURN values */
  int nargs;
  AstALit *alit;         /* ST_LIT */
  /* ST_SHOW, ST_MESH, ST_IMPORT, ST_LOAD, ST_SAVE */
  Str name;
  Span name_sp;
  Str key;               /* ST_LOAD: the .npz member, or empty */
  bool has_key;
  AstMeshAxis **axes;
  int naxes;
  /* ST_DEF */
  struct AstFunc *fn;
} AstStmt;

typedef enum FuncForm { FN_READABLE, FN_LAMBDA, FN_TRANSPOSE } FuncForm;

typedef struct AstFunc {
  FuncForm form;
  Str name;              /* empty for an anonymous `{ lambda ... }` */
  Span sp;               /* the name (or the `{`) */
  Span whole;            /* the whole definition */
  AstBinder **consts;    /* lambda constvars (before `;`): closed-over names */
  int nconsts;
  AstBinder **params;
  int nparams;
  AstStmt **body;
  int nbody;
  AstArg **outs;         /* lambda form: `in (...)` */
  int nouts;
  Span outs_sp;
  /* a decorator `@name[params]` */
  bool has_deco;
  Str deco;
  Span deco_sp;
  AstParam **deco_params;
  int ndeco_params;
  /* FN_TRANSPOSE: def g = linear_transpose[params] target */
  Str target;
  Span target_sp;
  Str tprim;
  AstParam **tparams;
  int ntparams;
  /* def f = custom_jvp g g_jvp (g_fwd g_bwd for custom_vjp): the rules */
  Str rules[2];
  Span rules_sp[2];
  int nrules;
  int end_line;          /* last line, for `longlist` */
  /* static parameters `def f[axis, n](...)`, given at each call as f[axis=i, n=2] */
  Str *statics;
  Span *statics_sp;
  int nstatics;
  /* a jaxpr printed after the jaxprs it shares: `let name = {...} in` */
  struct AstFunc **lets;
  int nlets;
} AstFunc;

/* ---- the parse context (Lemon's %extra_context) -------------------------- */

typedef struct Parser {
  struct Arena *arena;
  int file;
  AstList *stmts;        /* the program's top-level statements */
  int nerrors;
  Span last_error;       /* suppresses a second error in the same statement */
  const char *lex_error; /* message for a TK_ILLEGAL token */
  Span at;               /* the token being parsed (a stack overflow names it) */
  int skip_indent;       /* after `def f(a):`, its indentation: lines more
                            indented are its Python body, skipped; else -1 */
  uint32_t skip_after;   /* the end of that def's line */
  int line_file;         /* the line line_at found last (file -1: none), so that */
  uint32_t line_off, line_len; /* many errors on one long line cost its length once */
} Parser;

/* Should the parser skip token t (a line of a Python-style body)? */
bool ast_skip_token(Parser *P, const struct Tok *t);


/* ---- builder (called from grammar actions) ------------------------------- */

AstList *ast_list(Parser *P);
AstList *ast_list_add(Parser *P, AstList *l, void *item);

PVal *ast_pv_int(Parser *P, Tok t);
PVal *ast_pv_float(Parser *P, Tok t);
PVal *ast_pv_str(Parser *P, Tok t);
PVal *ast_pv_name(Parser *P, Tok t);
PVal *ast_pv_const(Parser *P, Tok t, PVKind k, int64_t v);
PVal *ast_pv_seq(Parser *P, PVKind k, Tok open, AstList *items, Tok close, bool comma);
PVal *ast_pv_func(Parser *P, struct AstFunc *fn);
PVal *ast_pv_complex(Parser *P, Tok t);
/* Name(args): the CALL token is the name and its `(`. */
PVal *ast_pv_call(Parser *P, Tok open, AstList *items, Tok close);
/* The source text from `first` to `last` as a PV_REPR (a type in a repr). */
PVal *ast_pv_text(Parser *P, Tok first, Tok last);
/* key: value (PV_PAIR) or key=value (PV_KW, key a PV_NAME). */
PVal *ast_pv_pair(Parser *P, PVKind k, PVal *key, PVal *v);
/* The items of a then those of b, in a new list. */
AstList *ast_list_cat(Parser *P, AstList *a, AstList *b);
AstParam *ast_param(Parser *P, Tok key, PVal *v);
/* pmap and xmap: named shapes, static parameters. */
AstType *ast_type_named(Parser *P, AstType *t, AstList *dims, Tok open, Tok close);
AstList *ast_named_dim(Parser *P, AstList *dims, Tok name, Tok size);
AstFunc *ast_func_statics(Parser *P, AstFunc *fn, AstList *names);

AstType *ast_type(Parser *P, Tok dtype, AstList *dims, Tok close);
AstType *ast_type_vma(Parser *P, AstType *t, AstList *axes, Tok open, Tok close);
/* A type written as one word (JAX's Tok). */
AstType *ast_type_bare(Parser *P, Tok word);
/* AbstractFuture{t}: t, marked a future. */
AstType *ast_type_future(Parser *P, AstType *t, Tok open, Tok close);
AstType *ast_type_groups(Parser *P, AstType *t, AstList *groups, Tok open, Tok close);
AstList *ast_group(Parser *P, Tok kind, AstList *axes);
Tok ast_sdim(Parser *P, Tok size, AstList *axes, bool paren);
AstList *ast_dim(Parser *P, AstList *dims, Tok t);
AstBinder *ast_binder(Parser *P, Tok name, AstType *type);
AstLit *ast_lit(Parser *P, Tok t, LitKind k, AstType *type);
AstArg *ast_arg_name(Parser *P, Tok t);
AstArg *ast_arg_lit(Parser *P, AstLit *l);
AstArg *ast_arg_str(Parser *P, Tok t);
AstALit *ast_alit_leaf(Parser *P, AstLit *l);
AstALit *ast_alit_list(Parser *P, Tok open, AstList *items, Tok close);

AstStmt *ast_eqn(Parser *P, AstList *outs, Tok callee, AstList *params, bool has_params, AstList *args);
AstStmt *ast_lit_stmt(Parser *P, AstList *outs, AstALit *lit);
AstStmt *ast_print(Parser *P, Tok kw, AstList *items);
/* visualize NAME, visualize[params] NAME (params NULL: none). */
AstStmt *ast_visualize(Parser *P, Tok kw, AstList *params, Tok name);
/* print[global=True] items: the print statement s with its parameters. */
AstStmt *ast_print_params(Parser *P, AstStmt *s, AstList *params);
AstStmt *ast_show(Parser *P, Tok kw, Tok name);
AstStmt *ast_import(Parser *P, Tok kw, Tok path);
AstStmt *ast_load(Parser *P, AstList *outs, Tok kw, Tok path, const Tok *key);
AstStmt *ast_save(Parser *P, Tok kw, Tok path, AstArg *value);
AstStmt *ast_mesh(Parser *P, Tok kw, Tok name, AstList *axes, Tok close);
AstMeshAxis *ast_mesh_axis(Parser *P, Tok name, Tok size);
AstStmt *ast_return(Parser *P, Tok kw, AstList *vals);
AstStmt *ast_def(Parser *P, Tok kw, AstFunc *fn);
AstStmt *ast_error_stmt(Parser *P);
/* Whether a body holds a statement that did not parse: what it lacks
   (its return, say) is a consequence, not a second error. */
bool ast_body_broken(AstStmt *const *body, int n);

AstFunc *ast_func_readable(Parser *P, Tok name, AstList *params, AstList *body, Tok close);
AstFunc *ast_lambda(Parser *P, Tok open, AstList *consts, AstList *params, AstList *body, AstList *outs, Tok close);
AstFunc *ast_func_named(Parser *P, Tok name, AstFunc *lambda);
/* A jaxpr with the shared jaxprs printed before it. */
AstFunc *ast_lets(Parser *P, AstList *lets, AstFunc *main);
AstFunc *ast_func_transpose(Parser *P, Tok name, Tok prim, AstList *params, Tok target);
/* The rules after the target (custom_jvp g g_jvp): r2 may be NULL. */
AstFunc *ast_func_rules(Parser *P, AstFunc *f, const Tok *r1, const Tok *r2);
AstFunc *ast_decorate(Parser *P, Tok at, Tok name, AstList *params, AstFunc *fn);

void ast_syntax_error(Parser *P, Tok t);
/* The parser's stack is full: the statement nests too deeply. */
void ast_stack_overflow(Parser *P);

#endif
