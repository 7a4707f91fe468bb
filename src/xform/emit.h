/*
** emit.h — writing checked functions: the one place equations are made.
**
** A checked program (IrProg) is an arena holding every function, statement
** and parameter value, and the literal arrays its equations use, released
** with it.  The checker (check.c), which turns syntax into equations, and
** the Builder (irbuild.c), which transformations use to make new functions,
** both write through an Emitter: a function being written, in the mesh
** whose axes are in scope.
**
** emit_prim_shape and emit_prim_vary are the two halves of typing one
** primitive equation, from the primitive table's rules: first its shape
** and parameters, then its variance, lifting operands with inserted
** pbroadcasts where they vary over fewer axes than the rule needs.  (The
** checker gives weak literals their dtype in between.)
*/
#ifndef SHM_EMIT_H
#define SHM_EMIT_H

#include "ir.h"
#include "rule.h"

typedef struct IrProg {
  Arena arena;
  struct LitKeep *kept;      /* literal arrays the equations use */
} IrProg;

void prog_init(IrProg *P);
void prog_free(IrProg *P);
/* Keep a literal array alive as long as the program (takes the reference). */
Array *prog_keep(IrProg *P, Array *a);

typedef struct Emitter {
  IrProg *prog;
  IrFunc *fn;                /* the function being written */
  const Mesh *mesh;          /* the axes in scope, or NULL */
} Emitter;

#define ENEW(E, T) ((T *)arena_alloc(&(E)->prog->arena, sizeof(T)))
#define ENEWN(E, T, n) ((T *)arena_alloc(&(E)->prog->arena, sizeof(T) * (size_t)((n) > 0 ? (n) : 1)))

/* A new variable of fn (its next frame slot). */
IrVar *emit_var(Emitter *E, Str name, Type t, Span sp);
/* A new statement (not yet in fn's body). */
IrStmt *emit_new_stmt(Emitter *E, IrStmtKind k, Span sp);
/* Append a statement to fn's body. */
void emit_stmt(Emitter *E, IrStmt *st);
/* Note that v, a variable of an enclosing function, is read by fn. */
void emit_capture(Emitter *E, IrVar *v);
/* A pbroadcast equation lifting `a` to vary over `to` (no equation when
   it already does); returns the new atom. */
IrAtom emit_lift(Emitter *E, IrAtom a, uint32_t to, Span sp);

/* Typing a primitive equation, first half: its shape rule and parameter
   names (a RuleCtx over params, read into `at` and r->canon).  in[].t may
   be changed (a weak literal's dtype); out[] gets dtypes and shapes.
   at->fns, the functions of a primitive that carries its own
   (reduce_window's body: check_body.c, bld_prim_fns), are kept.
   False after a diagnostic. */
bool emit_prim_shape(Emitter *E, RuleCtx *r, int prim, Span sp, AstParam **params, int nparams, Type *in, int nin,
                     Attrs *at, Type *out);
/* Second half: the variance rule.  Operands are lifted where the rule
   needs (in[] then names the lifted atoms) and out[].vma is set.  False
   after a diagnostic (an operand varying where the rule forbids it). */
bool emit_prim_vary(Emitter *E, int prim, IrAtom *in, int nin, const Attrs *at, Type *out, int nout, Span sp);

#endif
