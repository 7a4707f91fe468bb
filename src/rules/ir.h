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
#include "types.h"

/* ---- primitives: their ids and decoded parameters ---------------------------
** The rows of prims.def name the primitives; prims.h has the table of
** their rules, kernels and names.
*/
typedef enum PrimId {
#define PRIM(tag, name, alias, nmin, nmax, nout, params, shape, vrule, kernel, exec, tr, jvp, cost) P_##tag,
#include "prims.def"
#undef PRIM
  P_COUNT
} PrimId;

/* How the variance set of the result follows from the operands'.
   "lift" means the checker inserts pbroadcast equations. */
typedef enum VarRule {
  VR_ELEM,        /* operands lifted to the union of their sets; result: the union */
  VR_NULLARY,     /* made from nothing: result invariant ({}) */
  VR_REDUCE,      /* psum/pmax/pmin/pmean: operand lifted to include axes; result S - axes */
  VR_PBCAST,      /* pbroadcast: operand invariant along axes; result S + axes */
  VR_VARY,        /* all_gather, psum_scatter, ppermute, all_to_all: lift; result S + axes */
  VR_GATHER_INV,  /* all_gather_invariant: lift; result S - axes */
  VR_PSCATTER,    /* pscatter: operand invariant along axes; result S + axes */
  VR_AXIS_INDEX,  /* result: exactly the named axes */
  VR_PDOT,        /* pdot: operands lifted to their union plus axes; result that minus axes */
  VR_RAGGED,      /* ragged_all_to_all: nothing lifted; result: the union of all operands' sets plus axes */
  VR_SPECIAL,     /* control flow and shard_map: the checker's own logic */
  /* unreduced and reduced values (unred.c): an unreduced axis is also in
     the variance set (each instance holds its own summand), a reduced
     axis never is (each holds the same value) */
  VR_UCAST,       /* vary_unreduced_cast: operand varying along axes; result unreduced along them */
  VR_RCAST,       /* preduced: operand invariant along axes; result reduced along them */
  VR_RVCAST,      /* reduced_vary_cast: operand reduced along axes; result varying along them */
  VR_UREDUCE,     /* unreduced_psum/pmax/pmin: operand unreduced along axes; result S - axes */
  VR_USCATTER,    /* unreduced_reduce_scatter: operand unreduced along axes; result varying along them */
  VR_GATHER_RED   /* all_gather_reduced: operand varying along axes; result reduced along them */
} VarRule;

/* Does a primitive with this rule move data between instances, so that
   every member of a group must reach it?  pbroadcast, pscatter and
   axis_index name axes but move nothing: they may run where only some
   instances do (under a predicate that varies along their axes). */
static inline bool vrule_communicates(VarRule r) {
  return r == VR_REDUCE || r == VR_VARY || r == VR_GATHER_INV || r == VR_RAGGED || r == VR_UREDUCE ||
         r == VR_USCATTER || r == VR_GATHER_RED;
}

typedef struct IntList {
  int n;
  int64_t *v;
} IntList;

struct IrFunc;

/* Decoded parameters of one equation.  Which field holds which parameter
   is each primitive's business (documented beside its rule in prims.c);
   kernels read the fields their rule filled. */
typedef struct Attrs {
  int dtype;             /* a dtype parameter, or -1 */
  int64_t i[4];          /* integer parameters */
  double f[3];           /* float parameters */
  bool b[2];             /* boolean parameters */
  IntList l[6];          /* integer-list parameters */
  /* collectives: the named mesh axes, in the order written */
  int naxes;
  uint8_t axes[SHM_MAXAXES];
  uint32_t axmask;
  /* higher-order primitives: branches, loop bodies, shard_map body */
  struct IrFunc **fns;
  int nfns;
  /* a local primitive that carries a scalar function (reduce_window's body,
     scatter_apply's update_jaxpr, at fns[0]): how its kernel runs it on
     whole arrays (body.h's body_run, set where the equation is typed:
     emit.c; a pointer, so that the kernels need not know the table of
     primitives the runner calls) */
  void (*run)(const struct IrFunc *f, Array *const *args, Array **outs);
  void *ext;             /* primitive-specific data (shard_map specs) */
} Attrs;

/* A mesh: named axes with sizes; devices numbered row-major.  A mesh
   written inline (`mesh={i: 8}`) or made by pmap has an empty name.  The
   named axes of an xmap body form a mesh too, marked `named`: a value
   "varies" over the named axes of its named shape (types print them as
   `<batch:20>`); it has no devices (ndev 0), since the body runs only as
   its lowering (check_xmap.c). */
typedef struct Mesh {
  Str name;              /* empty for a mesh written inline */
  int naxes;
  Str axis[SHM_MAXAXES];
  int64_t size[SHM_MAXAXES];
  int64_t ndev;
  bool named;
  bool pmap;             /* made by a pmap (@pmap or xla_pmap): a pmap nested in its body adds an axis */
  uint32_t busy;         /* pmap: the axes of the pmaps whose bodies are being checked */
  PVal *inline_src;      /* a mesh written as JAX prints it, Mesh('i': 4): the value */
  /* the manual axes of a partial-manual shard_map (axis_names={x}): this
     mesh holds only those; `full` is the mesh it came from, whose other
     axes stay automatic (values are whole along them) */
  const struct Mesh *full;
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
  int fut_start;          /* an async collective's future: its start's prim + 1 (0: none) */
  bool awaited;           /* that future was read by its done (check.c) */
  struct IrVar *logical;  /* in an xmap's lowering: the value of its named-axis
                             body this one holds (check_xlower.c), or NULL */
  int last;               /* the last statement of the owner's body that reads
                             or sets it (drops.c, once drops_planned) */
} IrVar;

/* An operand: a variable or a literal (a scalar Array of the atom's type). */
typedef struct IrAtom {
  IrVar *var;
  Array *lit;
  Type t;
  Span sp;
} IrAtom;

/* The atom reading variable v. */
static inline IrAtom ir_var_atom(IrVar *v) {
  IrAtom a;
  memset(&a, 0, sizeof a);
  a.var = v;
  a.t = v->t;
  a.sp = v->sp;
  return a;
}

/* A parameter as `show` prints it (canonical, every parameter spelled out). */
typedef struct IrParam {
  const char *key;
  PVal *v;
} IrParam;

typedef enum IrStmtKind {
  IS_EQN,      /* out... = prim[params] in...   or a call (prim < 0) */
  IS_CONST,    /* out[0] = an array literal */
  IS_PRINT,    /* print items */
  IS_SHOW,     /* show a function (text made at check time) */
  IS_SAVE      /* save in[0] to the .npy file `path` */
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
  bool backward;          /* made by transposing the equation at sp (a backward pass's) */
  /* a call made by a front end (xmap, check_xmap.c): the callee is its
     lowering, what runs; show prints the equation `shown_prim[params]
     ...` it stands for, with at->fns[0] its body */
  int shown_prim;         /* PrimId, or -1 */
  int via;                /* a call written as JAX's call primitive (pjit ...):
                             that PrimId + 1, printed with `params` and
                             at->fns[0] the callee; 0 for a plain call */
  Str via_name;           /* that primitive's name as written (jit, pjit, ...) */
  /* IS_CONST */
  Array *value;
  /* IS_PRINT */
  IrPrintItem *items;
  bool print_global;      /* print[global=...]: the assembled array of each value */
  bool print_joined;      /* items written with nothing between them (jax.debug.print's format) */
  struct Spec *print_spec; /* print[global=P(...)]: its spec; NULL: the default (valprint.h) */
  int nitems;
  /* IS_SHOW */
  char *text;
  char *svg;              /* visualize: the picture as SVG (shardpic.h), or NULL */
  /* IS_SAVE: the file (resolved against the script's folder); IS_CONST
     made by `load`: the path and key as written, which show prints */
  const char *path;
  Str load_path, load_key;
  bool loaded, load_has_key;
  /* the slots of the variables released after this statement, statement
     drop_at of drop_fn's body (drops.c); ndrop -1: more than fit, found
     variable by variable */
  struct IrFunc *drop_fn;
  int drop_at, ndrop;
  int drop[4];
  /* the length of the chain of elementwise equations starting here that
     may run as one pass (run/fuse.h); 0: none */
  int fuse_n;
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
  uint32_t unred, red;         /* P(unreduced={...}, reduced={...}) */
  uint8_t ukind;               /* unreduced_kind=sum|max|min (UK_*) */
  PVal *src;
} Spec;

typedef struct ShardMap {
  Mesh *mesh;
  Spec *in;
  int nin;
  Spec *out;
  int nout;
  bool check_vma;
  /* xla_pmap: the dimension of each operand (result) the mapped axis takes
     away (adds), or -1; NULL for a shard_map, whose blocks keep the rank */
  int8_t *in_axis;
  int8_t *out_axis;
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
  bool is_xmap_wrapper;        /* a @xmap def's instance: one xmap equation */
  struct IrFunc *scope_as;     /* a transpose runs where the function it came from would */
  const char *statics;         /* the static parameters it was checked for, "axis=i", or NULL */
  int end_line;
  bool drops_planned;          /* IrVar.last and IrStmt.drop are set for it (drops.c) */
} IrFunc;

/* A function the user did not write as such: the one-equation instance of
   a decorated def (@shard_map, @pmap, @xmap) or an xmap's lowering.  The
   debugger stops in the body it calls, never in it. */
static inline bool ir_is_wrapper(const IrFunc *f) { return f->is_shard_map_wrapper || f->is_xmap_wrapper; }

#endif
