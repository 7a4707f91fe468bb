/*
** check_int.h — the checker's internals, shared by its files.
**
** The checker is one subsystem in the files check*.c of this folder:
** check.c (scopes, statements, equations, functions and their instances,
** the public entry points) and one file per concern beside it (the
** folder's README lists them).  Not for use outside them: check.h is the
** checker's interface.
*/
#ifndef SHM_CHECK_INT_H
#define SHM_CHECK_INT_H

#include "check.h"
#include "emit.h"
#include "prims.h"
#include "rule.h"

typedef enum { B_VAR, B_FUNC, B_MESH, B_STATIC } BindKind;

struct FuncDef;

/* A scope is a persistent list of bindings, newest first: a function's
   scope extends the scope it was defined in, and both go on.  Lookups go
   through an index so that a scope of 100k names costs no more per lookup
   than one of ten: the bindings that were each made on the newest binding
   of the list they extend form a run (ScopeRun); the checker's hash table
   gives, per run, kind and name, the newest binding of that name in the
   run, and each binding the one before it (prev_same).  A lookup from a
   binding s takes its run's newest of that name not newer than s (seq),
   or goes on in the run its run grew from (base). */
typedef struct ScopeRun {
  struct Binding *head;    /* its newest binding */
  struct Binding *base;    /* the binding it extends, or NULL */
  struct Checker *C;       /* whose index holds it */
} ScopeRun;

typedef struct Binding {
  BindKind k;
  Str name;
  IrVar *var;
  struct FuncDef *fn;
  Mesh *mesh;
  PVal *pv;                /* B_STATIC: the value a call gave (NULL while resolving) */
  struct Binding *next;
  int seq;                 /* its place in the list: next's + 1 */
  ScopeRun *run;
  struct Binding *prev_same; /* the binding of its run with its kind and name before it */
} Binding;

/* The scope index: (run, kind, name) -> the run's newest such binding. */
typedef struct ScopeSlot {
  ScopeRun *run;
  Binding *latest;
} ScopeSlot;

typedef struct Instance {
  Type *args;
  int nargs;
  Mesh *mesh;
  uint32_t ctrl;
  uint32_t *outvma;        /* results widened to these variance sets, or NULL */
  int noutvma;
  IrFunc *ir;              /* NULL when the instance failed to check */
  bool lenient;            /* checked in a loop's trial round (Checker.lenient) */
  char *skey;              /* the static parameters' values, "axis=i, n=2", or NULL */
  bool open;               /* failed only because it names axes that a call binds (Checker.open_axes) */
  struct Instance *next;
} Instance;

typedef struct FuncDef {
  AstFunc *ast;
  Str name;
  Binding *scope;          /* the scope the def saw (closure) */
  IrFunc *parent;          /* the IR function the def stands in */
  Instance *inst;
  bool checking;           /* recursion guard */
  IrFunc *latest;          /* most recent successful instance, for show */
  int xform;               /* a transformation's def (FN_TRANSPOSE form): its XForm */
  struct FuncDef *target;  /* the function transformed */
  struct FuncDef *rule;    /* custom_jvp: the rule attached to the target */
  IntList lin;             /* linear_transpose: linear=(...); grad: argnums=(...) */
  bool lin_given;
  bool resolved;           /* resolved without types (never checked) */
  int held;                /* the tag of errors its check at the def held back, or 0 */
  bool used;               /* a statement names it (looked up, checked or not) */
} FuncDef;

typedef struct ImportedFile {
  char *path;
  struct ImportedFile *next;
} ImportedFile;

struct Checker {
  IrProg prog;             /* syntax trees and the checked program */
  IrFunc *main;
  Binding *top;            /* top-level scope */
  ImportedFile *imports;
  int depth;               /* instantiation depth */
  struct FuncDef **defs;   /* every def checked, for resolve_unchecked */
  const Mesh **def_mesh;   /* the mesh each stood under, if known */
  int ndefs, capdefs;
  bool whole_program;      /* check_set_whole_program */
  int main_file;           /* the file whole_program names (not its imports) */
  int lenient;             /* > 0 in a loop's trial rounds: variance annotations not judged */
  int nheld;               /* tags given to held errors */
  AstList *later;          /* the top-level statements of the file being checked */
  int later_from;          /* the first of them not yet checked */
  int open_axes;           /* > 0 in a def's own check outside any mesh (check_def) */
  int deferred;            /* equations such a check left to the calls: they name axes */
  ScopeSlot *slots;        /* the scope index (see Binding): open addressing */
  size_t nslots, usedslots;
  bool callback_noted;     /* the note that a debug_callback prints only its operands was printed */
  bool fmt_noted;          /* the note that debug_print's format specs are ignored was printed */
};

/* The function being checked. */
typedef struct Ctx {
  Checker *C;
  IrFunc *fn;
  Binding *scope;
  Mesh *mesh;              /* axes in scope, or NULL */
  uint32_t ctrl;           /* variance of enclosing predicates */
  uint32_t stmt_pv;
  int awaiting;            /* the done (prim + 1) whose operand is being resolved, or 0 */        /* variance of the predicate of the statement being bound */
  bool returned;
  AstStmt *ret;            /* readable form: the return statement */
  const AstFunc *inlined;  /* a def whose body is checked in place, into fn (a nested pmap) */
  int file;
} Ctx;

#define NEW(C, T) ((T *)arena_alloc(&(C)->prog.arena, sizeof(T)))
#define NEWN(C, T, n) ((T *)arena_alloc(&(C)->prog.arena, sizeof(T) * (size_t)((n) > 0 ? (n) : 1)))
/* The emitter writing cx's function (emit.h). */
#define EM(cx) (&(Emitter){&(cx)->C->prog, (cx)->fn, (cx)->mesh})

/* The deepest nesting of function instantiations accepted. */
#define MAX_DEPTH 200


/* ---- check.c --------------------------------------------------------------- */
/* A new equation for the statement s (its places and line). */
IrStmt *check_new_eqn(Ctx *cx, const AstStmt *s);
/* "in this call of F with (types)": the note after an error in F's body. */
void check_call_note(Span call, const FuncDef *fd, const Type *args, int nargs, const Mesh *mesh);
/* The same for a call that gave static values ("axis=i"; NULL: none). */
void check_call_note_s(Span call, const FuncDef *fd, const char *statics, const Type *args, int nargs,
                       const Mesh *mesh);
/* The message (a format taking the name as %.*s) for a name used as a
   value (want B_VAR) or shown as a function (B_FUNC) but not bound so. */
const char *check_unbound(Checker *C, Binding *scope, BindKind want, Str name);
/* " (did you mean 'psum'?)": the primitive or function in scope closest
   to an unknown callee, or "". */
const char *check_callee_hint(Checker *C, Binding *scope, Str name, char *out, size_t n);
/* A context checking fn (NULL: none) in a scope, under a mesh and the
   variance of enclosing predicates. */
void check_ctx_init(Ctx *cx, Checker *C, IrFunc *fn, Binding *scope, Mesh *mesh, uint32_t ctrl, int file);
/* An instance record for argument types, under cx's mesh and ctrl. */
Instance *check_new_instance(Ctx *cx, const Type *args, int nargs);
/* A new function for a def (its name, place, parent), under a mesh. */
IrFunc *check_new_func(Checker *C, const FuncDef *fd, Mesh *mesh);
/* A new binding of `name` in front of scope `next`. */
Binding *check_bind(Checker *C, Binding *next, BindKind k, Str name);
/* The innermost binding of `name` of kind k, or NULL. */
Binding *check_lookup(Binding *s, BindKind k, Str name);
/* A type as messages print it (one of four rotating buffers). */
char *check_type_text(Ctx *cx, const Type *t);
/* A shape as jax's messages write it: (7,), (2, 3). */
const char *check_shape_tuple(Ctx *cx, const Type *t);
/* The type of a binder whose statement failed: accepted silently after. */
Type check_bad_type(void);
/* Resolve a written type; false after an error. */
bool check_resolve_type(Ctx *cx, const AstType *at, Type *t, bool *has_vma);
/* Resolve an argument to an atom (literals stay weak unless typed). */
bool check_resolve_arg(Ctx *cx, const AstArg *a, IrAtom *out);
/* Give weak literal atoms their final dtype and value. */
bool check_finish_literals(Ctx *cx, IrAtom *in, const AstArg *const *args, int n);
/* Bind the results of statement s to the types outt (their count and
   annotations checked); `what` names the callee in messages. */
void check_bind_outs(Ctx *cx, AstStmt *s, IrStmt *st, Type *outt, int nout, const char *what);
/* Bind a failed statement's results with the bad type. */
void check_bind_bad(Ctx *cx, AstStmt *s);
/* Resolve all operands of an equation. */
bool check_resolve_args(Ctx *cx, AstStmt *s, IrAtom *in, bool *silent);
/* A `mesh` statement: bound in cx->scope. */
void check_mesh(Ctx *cx, AstStmt *s);
/* Are all of a function's parameters annotated? */
bool check_all_annotated(const AstFunc *f);
/* Check a function for argument types (cached per types). */
IrFunc *check_instantiate(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call);
/* The same, with the values of the function's static parameters (NULL
   when it has none). */
IrFunc *check_instantiate_s(Ctx *cx, FuncDef *fd, const Type *args, int nargs, PVal **statics, Span call);
/* The same, its results widened to `outvma` (cond branches, loop bodies). */
IrFunc *check_instantiate_w(Ctx *cx, FuncDef *fd, const Type *args, int nargs, const uint32_t *outvma,
                            int noutvma, Span call);
/* Are two types equal (dtype, shape and variance set)? */
bool check_types_equal(const Type *a, const Type *b);
/* Check fd's body in place, in cx's function: its parameters bound to
   `args` (variables), its statements emitted where cx stands, its
   results into *outs (a pmap's body, which becomes part of a shard_map
   body).  False after an error. */
bool check_inline(Ctx *cx, FuncDef *fd, const IrAtom *args, int nargs, Span call, IrAtom **outs, int *nouts);
/* Check one statement. */
void check_stmt(Ctx *cx, AstStmt *s);
/* `(f32[2], i32[]{i})` for a list of atoms. */
void check_describe_types(Ctx *cx, Buf *b, const IrAtom *a, int n);
/* Emit a higher-order equation; `pv`: its predicate's variance. */
void check_emit_special(Ctx *cx, AstStmt *s, int prim, Attrs *at, RuleCtx *r, IrAtom *in, int nin, Type *out,
                        int nout, uint32_t pv);
/* A cond index: a scalar integer or bool. */
bool check_index_operand(Ctx *cx, IrAtom *a, const AstArg *arg, const char *what);
/* A function parameter: a defined name or an inline lambda. */
FuncDef *check_func_param(Ctx *cx, RuleCtx *r, const char *key, PVal *v);
/* The canonical parameter value standing for at->fns[k]. */
PVal *check_fn_ref(Ctx *cx, int k);
/* Append a checked function to an equation's at->fns. */
void check_add_fn(Ctx *cx, Attrs *at, IrFunc *f);

/* ---- check_body.c: the scalar functions primitives carry ------------------ */
/* reduce_window's jaxpr, scatter's update_jaxpr (scatter_apply): checked for
   scalar arguments and put in at->fns[0] (nothing for other primitives, or
   a parameter the shape rule rejects); false after an error. */
bool body_check(Ctx *cx, AstStmt *s, int prim, const IrAtom *in, Attrs *at);

/* ---- check_flow.c: control flow -------------------------------------------- */
/* cond[branches=...] index args... */
void flow_cond(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at);
/* fori_loop[lower, upper, body, reverse] carry... */
void flow_fori(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at);
/* while[cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts] consts... carry... */
void flow_while(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at);
/* scan[jaxpr, length, reverse, num_consts, num_carry, ...] consts... carry... xs... */
void flow_scan(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at);

/* ---- check_jax.c: what jax.make_jaxpr prints beyond shm's own forms -------- */
/* Is prim one of JAX's call primitives (pjit, xla_call, ...)? */
bool jax_is_call(int prim);
/* A call primitive: a call of the function its jaxpr parameter names. */
void jax_call(Ctx *cx, AstStmt *s, int prim, IrAtom *in, RuleCtx *r, Attrs *at);
/* optimization_barrier: a call of the identity on its operands. */
void jax_barrier(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at);
/* debug_callback: a Python callback the jaxpr names only; it has no
   results, and does nothing here (a note says so, once). */
void jax_debug_callback(Ctx *cx, AstStmt *s, IrAtom *in);
/* debug_print[fmt=...] x...: jax.debug.print as newer JAX prints it, its
   format string in the text: a print of the formatted operands. */
void jax_debug_print(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r);
/* shard_alike x y: x and y (a call of the identity). */
void jax_shard_alike(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at);
/* pure_callback, io_callback: an error naming the Python function. */
void jax_callback(Ctx *cx, AstStmt *s, RuleCtx *r, int prim);
/* xla_pmap[axis_name, axis_size, call_jaxpr, mapped_invars, ...] args... */
void jax_pmap(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at);
/* A mesh written as JAX prints one (Mesh('i': 4), Mesh(device_ids=array(
   ...), axis_names=(...)), AbstractMesh(...)); NULL after an error. */
Mesh *jax_mesh(Ctx *cx, RuleCtx *r, PVal *v);
/* in_names / out_names entries ({0: ('i',)}) as partition specs P(...). */
PVal *jax_names_spec(Ctx *cx, RuleCtx *r, const char *key, PVal *v);
/* Bind the shared jaxprs printed before a jaxpr (`let f = {...} in`),
   all visible to each other and to the jaxpr, in front of scope. */
Binding *jax_bind_lets(Checker *C, const AstFunc *af, Binding *scope, IrFunc *parent);

/* ---- check_smap.c: shard_map and its specs --------------------------------- */
/* The mesh a `mesh=` parameter gives: a mesh's name, or one written
   inline {i: 8}; NULL after an error. */
Mesh *smap_mesh_value(Ctx *cx, RuleCtx *r, PVal *v);
/* A mesh as a parameter value: its name, or inline when it has none. */
PVal *smap_mesh_pv(Ctx *cx, const Mesh *m);
/* One partition spec against a mesh; errors at the spec. */
bool smap_parse_spec(Ctx *cx, const Mesh *m, PVal *v, Spec *out);
/* visualize (check_vis.c): the picture, drawn now, printed when it runs. */
void check_visualize(Ctx *cx, AstStmt *s);
/* print's parameters (global=True or global=P(...)) into st; false after
   an error. */
bool smap_print_params(Ctx *cx, AstStmt *s, IrStmt *st);
/* Can spec spc assemble item a of type t?  False after an error. */
bool smap_print_spec(Ctx *cx, AstArg *a, const Type *t, const Spec *spc);
/* shard_map[f, mesh, in_specs, out_specs, check_vma] args... */
void smap_eqn(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at);
/* The instance of a decorated def (@shard_map, @xmap): a wrapper function
   of the global arguments whose one equation the decorator makes, and
   the def's body as a plain def. */
typedef struct Wrapper {
  Instance *inst;
  IrFunc *w;
  Ctx sub;                 /* checking w */
  IrAtom *in;              /* w's parameters */
  FuncDef *body;
} Wrapper;
void smap_wrap_begin(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Wrapper *W);
/* w's one equation st (its operands w's parameters), results of types
   out named after `named`; the instance done. */
IrFunc *smap_wrap_end(Wrapper *W, FuncDef *fd, IrStmt *st, const Type *out, const IrAtom *named, int nout);
/* A @shard_map def called with global argument types. */
IrFunc *smap_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call);
/* A @shard_map def whose parameters are all annotated: checked where defined. */
void smap_define(Ctx *cx, FuncDef *fd);

/* ---- check_xform.c: function transformations -------------------------------- */
/* The transformations a `def g = name[params] f` names. */
typedef enum XForm { XF_TRANSPOSE, XF_JVP, XF_VJP, XF_GRAD, XF_VALUE_AND_GRAD, XF_CUSTOM_JVP } XForm;
/* `def g = linear_transpose[...] f` (or jvp, vjp, grad, value_and_grad):
   the target looked up, the parameters read, and g made from the
   instances the target already has. */
void xform_define(Ctx *cx, FuncDef *fd);
/* g for argument types (a call of g). */
IrFunc *xform_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call);

/* ---- check_custom.c: def f = custom_jvp g g_jvp ------------------------------- */
/* The rule looked up and, for an annotated g, checked where f is defined;
   false after an error. */
bool custom_define(Ctx *cx, FuncDef *fd);
/* f for argument types: g's instance called as custom_jvp_call, with the
   rule's instance for them and their tangents; NULL after errors. */
IrFunc *custom_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call);
/* ---- check_static.c: static parameters of user functions ------------------ */
/* Parameters with the bare names of static parameters in scope replaced
   by their values (ps itself when none is mentioned). */
AstParam **stat_subst_params(Ctx *cx, AstParam **ps, int n);
/* A statement with its parameters substituted so (s itself when unchanged). */
AstStmt *stat_subst_stmt(Ctx *cx, AstStmt *s);
/* The static values a call `f[k=v, ...]` gives, in the order of f's
   declaration (*out NULL for a function without static parameters);
   false after an error (unknown, repeated or missing ones). */
bool stat_call_values(Ctx *cx, FuncDef *fd, AstParam **ps, int n, Span call, PVal ***out);
/* The instance key of a call that gives an @xmap function its mesh. */
char *stat_key_mesh(Checker *C, PVal *mesh);
/* Bind a function's static parameters to values in front of scope. */
Binding *stat_bind(Checker *C, Binding *scope, const AstFunc *af, PVal **vals);
/* The values as text, "axis=i, n=2" (the instance key; NULL when none). */
char *stat_key(Checker *C, const AstFunc *af, PVal **vals);
/* Check a call `f[statics] args` of a function: its instance. */
IrFunc *stat_instantiate_call(Ctx *cx, AstStmt *s, FuncDef *fd, const Type *args, int nargs);

/* ---- check_xmap.c and check_xlower.c: xmap ---------------------------------- */
/* One named axis of an xmap: its size, and the mesh axes it is split over. */
typedef struct XAxis {
  Str name;
  int64_t size;                /* global */
  int64_t local;               /* per device: size over its resources' devices */
  int nres;
  uint8_t res[SHM_MAXAXES];    /* resource mesh axes, major first */
  uint32_t resmask;
} XAxis;

/* The axis mapping of one argument or result: named axis k takes
   dimension dim[k] (its position in the argument, or in the result). */
typedef struct XMapping {
  int n;
  uint8_t axis[SHM_MAXAXES];   /* index into XPlan.ax */
  int dim[SHM_MAXAXES];
  int rank;                    /* the rank a list without `...` asserts, or -1 */
  PVal *src;                   /* as written, for messages */
} XMapping;

typedef struct XPlan {
  int naxes;
  XAxis ax[SHM_MAXAXES];
  Mesh *named;                 /* the named axes as a mesh (Mesh.named) */
  Mesh *mesh;                  /* the resource mesh, or NULL when no axis has resources */
  XMapping *in, *out;
  int nin, nout;
  Span where;                  /* the call, for errors */
} XPlan;

/* Desugar what a statement of a named-axis (xmap) body or of a shard_map
   body means in terms of other primitives: a reduction over named axes
   (reduce_sum[axes=(0, batch)] is reduce_sum over 0 then psum over batch),
   pdot in a shard_map body (dot_general then psum).  True when s was
   checked so (or rejected). */
bool xmap_desugar(Ctx *cx, AstStmt *s);
/* JAX's retired primitives (select, tie_in, broadcast) as the ones that
   replaced them (check_old.c): the statement to check in s's place, or,
   with *done set, s was checked so (or rejected). */
AstStmt *old_rewrite(Ctx *cx, AstStmt *s, bool *done);
/* A type's named shape `<batch:20, ...>`: the named axes of the xmap body
   it stands in, at their sizes, as its variance set. */
bool xmap_named_shape(Ctx *cx, const AstType *at, Type *t, bool *has_vma);
/* xmap[f, in_axes, out_axes, axis_sizes, axis_resources, mesh] args... */
void xmap_eqn(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at);
/* A @xmap def called with global argument types; `mesh` the mesh the
   call gives (f[mesh=m] x), or NULL. */
IrFunc *xmap_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, PVal *mesh, Span call);
/* Bind a name (annotation checked) to a value made already. */
void check_bind_alias(Ctx *cx, AstBinder *b, IrAtom a);
/* Bind an equation's results (count and annotations checked); `what`
   names the callee in messages. */
void check_bind_outs_as(Ctx *cx, AstStmt *s, IrStmt *st, Type *outt, int nout, const char *what);
/* The function that runs a checked xmap body `body` (its parameters the
   arguments' named-away types): the global arguments in, the global
   results (types gout) out; named axes with resources become a
   shard_map over plan->mesh, the others ordinary dimensions.  NULL after
   an error. */
IrFunc *xlow_lower(Ctx *cx, XPlan *plan, IrFunc *body, const Type *args, const Type *gout, const char *name,
                   IrFunc *parent);

/* ---- check_pmap.c: pmap -------------------------------------------------------------- */
/* A @pmap def called with argument types: at top level a shard_map over
   a mesh of its one axis; inside a pmap's body the inner map, its axis
   added to that mesh (nested pmaps give a multi-axis mesh). */
IrFunc *pmap_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call);
/* A call of a @pmap def inside a pmap's body: its arguments sliced along
   the new axis, its body in place, its results gathered back. */
void pmap_nested_call(Ctx *cx, AstStmt *s, FuncDef *fd, IrAtom *in);
/* The same for JAX's printed xla_pmap inside a pmap's body (r its
   parameters, in_axes per operand, -1 for an unmapped one): nested
   xla_pmaps and @pmaps make the same multi-axis mesh. */
void pmap_nested_jax(Ctx *cx, AstStmt *s, FuncDef *fd, IrAtom *in, RuleCtx *r, Str axis, int64_t size,
                     const int64_t *in_axes);

/* ---- check.c and check_lit.c: constants -------------------------------------- */
/* The Array of a literal of dtype dt; false (with an error) when the
   literal cannot take that dtype. */
bool check_lit_value(Ctx *cx, const AstLit *l, int dt, Array **out);
/* A variance set as text, {i,j}. */
char *check_vma_text(Ctx *cx, uint32_t vma);
/* A binder's annotation, if any, against t (the value of `what`); false
   after an error. */
bool check_annotation(Ctx *cx, const AstBinder *b, Type *t, const char *what);
/* x = [[1.0, 2.0], ...]: an array literal bound to a name. */
void check_lit_stmt(Ctx *cx, AstStmt *s);
/* x = load "file.npy" (or an .npz member): read when the program is checked. */
void check_load(Ctx *cx, AstStmt *s);
/* save "file.npy" x: written when the statement runs. */
void check_save(Ctx *cx, AstStmt *s);

/* ---- check_resolve.c: functions never checked ------------------------------ */
/* Record a def, for resolve_unchecked. */
void resolve_note_def(Checker *C, FuncDef *fd, const Mesh *mesh);
/* Resolve the defs recorded since `from` that no check reached. */
void resolve_unchecked(Checker *C, int from);

#endif
