/*
** transpose_int.h — the transpose's internals shared by transpose.c (the
** transformation and most rules) and transpose_win.c (the rules of the
** window and convolution primitives).  Not for use outside them:
** transpose.h is the interface.
*/
#ifndef SHM_TRANSPOSE_INT_H
#define SHM_TRANSPOSE_INT_H

#include "prims.h"
#include "transpose.h"

/* The context of one equation's rule: the equation, which operands are
   linear, and its results' cotangents (made zeros on first read). */
typedef struct TrCtx {
  struct Tr *T;
  IrStmt *st;
  bool checking;      /* first call: only reject a non-linear use */
  bool *lin_in;       /* per operand */
  IrAtom *cts;        /* per result */
  bool *has_ct;
} TrCtx;

/* Operand k in the transpose's terms (a constant), and its type. */
IrAtom tr_in(TrCtx *cx, int k);
const Type *tr_in_type(TrCtx *cx, int k);
Builder *tr_builder(TrCtx *cx);
/* The cotangent of result j; add ct to linear operand k's cotangent. */
IrAtom tr_ct(TrCtx *cx, int j);
void tr_give(TrCtx *cx, int k, IrAtom ct);
/* A diagnostic at the equation; the transpose fails.  Returns false. */
bool tr_error(TrCtx *cx, const char *fmt, ...) SHM_PRINTF(2, 3);
/* prim[params] in... with one result (in[0] after a failure). */
IrAtom tr_emit1(TrCtx *cx, int prim, const IrParam *ps, int np, IrAtom *in, int nin);
/* A scalar literal of t's dtype. */
IrAtom tr_lit(TrCtx *cx, const Type *t, double v);

/* The rules of transpose_win.c. */
bool tr_reduce_window_sum(TrCtx *cx);
bool tr_select_and_gather_add(TrCtx *cx);
bool tr_select_and_scatter_add(TrCtx *cx);
bool tr_conv_general_dilated(TrCtx *cx);

#endif
