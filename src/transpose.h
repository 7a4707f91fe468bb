/*
** transpose.h — transposition of linear functions (docs/language.md, "linear_transpose").
**
** tr_linear_transpose turns a checked function f, linear in the parameters marked
** in `linear`, into its transpose: it takes f's other parameters followed
** by one cotangent per result and returns one cotangent per linear
** parameter.  Equations that do not touch linear values are kept (they
** compute the constants the transpose needs); the linear ones are walked
** backwards, each through its primitive's transpose rule (the `transpose`
** column of prims.def).  Every new equation is checked by the same rules
** as written code, so variance types hold and `psum` becomes `pbroadcast`
** exactly where the types prove no communication is needed.
**
** A transpose rule is called twice per equation: first with cx->checking
** set, to reject a non-linear use (`mul x x`) with a diagnostic at the
** equation, then to emit the cotangent equations.
*/
#ifndef SHM_TRANSPOSE_H
#define SHM_TRANSPOSE_H

#include "build.h"

IrFunc *tr_linear_transpose(IrProg *P, IrFunc *f, const bool *linear, const char *name, Span where);

/* ---- what a transpose rule sees ------------------------------------------- */
typedef struct TrCtx TrCtx;

bool tr_checking(TrCtx *cx);
const IrStmt *tr_stmt(TrCtx *cx);
bool tr_lin(TrCtx *cx, int k);                 /* is operand k linear? */
IrAtom tr_in(TrCtx *cx, int k);                /* operand k (non-linear operands only) */
const Type *tr_in_type(TrCtx *cx, int k);
IrAtom tr_ct(TrCtx *cx, int j);                /* cotangent of result j (zeros if none) */
void tr_give(TrCtx *cx, int k, IrAtom ct);     /* add a cotangent to operand k */
/* Emit a one-result primitive equation; false after an error. */
bool tr_emit(TrCtx *cx, int prim, const IrParam *params, int nparams, IrAtom *in, int nin, IrAtom *out);
bool tr_error(TrCtx *cx, const char *fmt, ...) SHM_PRINTF(2, 3);
/* Builder access for rules that build more (zeros, parameter values). */
Builder *tr_builder(TrCtx *cx);

#endif
