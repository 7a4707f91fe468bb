/*
** ir.h — the checked program.
**
** check.c turns syntax into this form; eval.c runs it, show.c prints it,
** transpose.c rewrites it.  It is jaxpr-like: a function has typed
** parameters, a straight list of statements (equations, prints, literal
** bindings) and result atoms.  Every variable has its full static type,
** variance set included, and every `pbroadcast` the checker inserted is a
** real equation here (marked `inserted`).
**
** Variables are numbered slots of their function's frame.  A function
** defined inside another reads the enclosing function's variables through
** `parent` (a static link), as a Python closure would.
*/
#ifndef SHM_IR_H
#define SHM_IR_H

#include "array.h"
#include "ast.h"
#include "prim.h"
#include "types.h"

/* A mesh: named axes with sizes; devices numbered row-major. */
typedef struct Mesh {
  Str name;
  int naxes;
  Str axis[SHM_MAXAXES];
  int64_t size[SHM_MAXAXES];
  int64_t ndev;
} Mesh;

struct IrFunc;

typedef struct IrVar {
  Str name;               /* source name ("" for generated) */
  Type t;
  int slot;
  struct IrFunc *owner;
  Span sp;
  bool captured;          /* read by a function defined inside its owner */
  bool jax_narrow;        /* annotated with the variance set jax_vma, which JAX
                             prints under a varying predicate: t is the sound
                             type, a superset (check.c, vma_jax_narrower) */
  uint32_t jax_vma;
  int last;               /* the last statement of the owner's body that reads
                             or sets it (eval.c, once drops_planned) */
} IrVar;

/* An operand: a variable or a literal (a scalar Array of the atom's type). */
typedef struct IrAtom {
  IrVar *var;
  Array *lit;
  Type t;
  Span sp;
} IrAtom;

/* A parameter as `show` prints it (canonical, every parameter spelled out). */
typedef struct IrParam {
  const char *key;
  PVal *v;
} IrParam;

typedef enum IrStmtKind {
  IS_EQN,      /* out... = prim[params] in...   or a call (prim < 0) */
  IS_CONST,    /* out[0] = an array literal */
  IS_PRINT,    /* print items */
  IS_SHOW      /* show a function (text made at check time) */
} IrStmtKind;

typedef struct IrPrintItem {
  Str text;               /* a string item, when atom.var and atom.lit are NULL */
  IrAtom atom;
} IrPrintItem;

typedef struct IrStmt {
  IrStmtKind k;
  Span sp;                /* the statement (the callee for equations) */
  Span whole;
  int line;
  /* IS_EQN */
  int prim;               /* PrimId, or -1 for a call */
  struct IrFunc *callee;
  Attrs *at;
  IrParam *params;
  int nparams;
  IrAtom *in;
  int nin;
  IrVar **out;
  int nout;
  bool inserted;          /* added by the checker (pbroadcast) */
  /* IS_CONST */
  Array *value;
  /* IS_PRINT */
  IrPrintItem *items;
  int nitems;
  /* IS_SHOW */
  char *text;
} IrStmt;

/* The parameters of a shard_map equation (Attrs.ext). */
typedef struct SpecDim {
  int naxes;
  uint8_t axes[SHM_MAXAXES];   /* mesh axis indices, major first */
} SpecDim;

typedef struct Spec {
  int ndims;                   /* entries written (trailing dims may be omitted) */
  SpecDim dim[SHM_MAXRANK];
  uint32_t mask;               /* every axis the spec mentions */
  PVal *src;
} Spec;

typedef struct ShardMap {
  Mesh *mesh;
  Spec *in;
  int nin;
  Spec *out;
  int nout;
  bool check_vma;
} ShardMap;

typedef struct IrFunc {
  const char *name;
  Span sp;
  AstFunc *ast;                /* NULL for generated functions */
  IrVar **params;
  int nparams;
  IrStmt **body;
  int nbody, capbody;
  IrAtom *outs;
  int nouts;
  int nslots;
  struct IrFunc *parent;       /* lexically enclosing function */
  Mesh *mesh;                  /* axes in scope (the enclosing shard_map's), or NULL */
  IrVar **captured;            /* outer variables read by the body (for show) */
  int ncaptured, capcaptured;
  bool is_shard_map_wrapper;
  struct IrFunc *scope_as;     /* a transpose runs where the function it came from would */
  int end_line;
  bool drops_planned;          /* IrVar.last is set for its variables (eval.c) */
} IrFunc;

#endif
