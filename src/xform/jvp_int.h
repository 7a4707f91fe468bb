/*
** jvp_int.h — the JVP's internals, shared by jvp.c (the transformation:
** functions, calls, control flow, shard_map), jvp_rules.c (the rule of
** each primitive, the `jvp` column of prims.def) and custom.c (custom
** derivative rules).  Not for use outside
** them: jvp.h is the interface.
*/
#ifndef SHM_JVP_INT_H
#define SHM_JVP_INT_H

#include "jvp.h"
#include "prims.h"

/* What one JVP shares across the functions it makes. */
typedef struct JvRoot {
  IrProg *P;
  IrFunc *parent;       /* the parent of every function made (the static link) */
  bool failed;
} JvRoot;

/* One function being differentiated: src's variables map to atoms of the
   function B writes (the same for an inlined call as for its caller). */
typedef struct Jv {
  JvRoot *R;
  Builder *B;
  IrFunc *src;
  struct Jv *up;        /* the caller, for an inlined call */
  IrAtom *prim;         /* by slot of src: the primal value */
  IrAtom *tan;          /* by slot of src: the tangent, where has[] */
  bool *has;
  /* variables of an enclosing function that src captured, passed in as
     parameters: cv[i] maps to cp[i] (tangent ct[i] where ch[i]) */
  IrVar **cv;
  IrAtom *cp, *ct;
  bool *ch;
  int ncv;
} Jv;

/* The context of one primitive's rule: the equation, its operands and
   their tangents (mapped), its primal results (already emitted); the rule
   sets tout[j] and hout[j] for the results that have a tangent. */
typedef struct JvpCx {
  Jv *J;
  const IrStmt *st;
  IrAtom *in, *tin;
  bool *has;
  IrAtom *out, *tout;
  bool *hout;
} JvpCx;

typedef bool (*JvpFn)(JvpCx *cx);

#define JVP_RULES(X)                                                                     \
  X(zero) X(linear) X(pbroadcast) X(add) X(sub) X(mul) X(div) X(rem) X(pow) X(max)         \
  X(min) X(atan2) X(abs) X(square) X(exp) X(exp2) X(expm1) X(log) X(log1p) X(tanh)         \
  X(logistic) X(sqrt) X(rsqrt) X(cbrt) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan)        \
  X(sinh) X(cosh) X(asinh) X(acosh) X(atanh) X(erf) X(erfc) X(erf_inv) X(lgamma) X(digamma)           \
  X(polygamma) X(integer_pow) X(convert_element_type) X(clamp) X(select_n) X(reduce_prod)  \
  X(reduce_chooser) X(cumulative) X(dot_general) X(gather) X(scatter) X(scatter_mul)        \
  X(scatter_extremal) X(cond) X(while) X(fori_loop)                                        \
  X(scan) X(shard_map) X(call) X(sort) X(top_k) X(reduce_window_chooser) X(reduce_window) X(select_window)  \
  X(conv_general_dilated) X(split) X(igamma) X(bessel_i0e) X(bessel_i1e) X(betainc)

#define X(n) bool jvp_##n(JvpCx *cx);
JVP_RULES(X)
#undef X

/* The rule of a primitive (the jvp column), or NULL. */
JvpFn jvp_rule(int prim);

/* ---- helpers for rules (jvp_rules.c) ---------------------------------------- */
/* Emit prim[params] on in[] with one result; false after a diagnostic
   (the JVP has failed; the atom returned is then in[0]). */
IrAtom jv_emit(JvpCx *cx, int prim, const IrParam *ps, int np, IrAtom *in, int nin);
/* A scalar literal of dtype dt. */
IrAtom jv_lit(JvpCx *cx, int dt, double v);
/* Set the tangent of result j (broadcast to the result's shape). */
void jv_set(JvpCx *cx, int j, IrAtom t);

/* ---- the transformation (jvp.c), for the control-flow rules ------------------- */
/* Name a tangent after its primal: x -> xdot. */
void jv_name(Jv *J, IrAtom *t, Str primal);
/* Fail with a diagnostic at the equation. */
bool jv_error(JvpCx *cx, const char *fmt, ...) SHM_PRINTF(2, 3);
/* An operand mapped: its primal; *t its tangent, *h whether it has one. */
IrAtom jv_atom(Jv *J, const IrAtom *a, IrAtom *t, bool *h);
/* Variable v (of J->src) is p, with tangent *t (none when t is NULL). */
void jv_bind(Jv *J, IrVar *v, IrAtom p, const IrAtom *t);
/* A call st of g: g's equations differentiated in place. */
void jv_inline(Jv *J, const IrStmt *st, IrFunc *g);
/* Do the functions of st read values of the functions being
   differentiated (which a copy of st could not)? */
bool jv_reads_locals(Jv *J, const IrStmt *st);
/* ---- custom derivative rules (custom.c) ---------------------------------------- */
/* Is st a call written as custom_jvp_call or custom_vjp_call (or made by
   `def f = custom_jvp g g_jvp`)? */
bool cust_is_custom(const IrStmt *st);
/* The JVP of custom call st, in J: its results and their tangents bound. */
void cust_jvp(Jv *J, const IrStmt *st);

/* prim a b, prim a, and lax.select(pred, on_true, on_false). */
IrAtom jv_bin(JvpCx *cx, int prim, IrAtom a, IrAtom b);
IrAtom jv_un(JvpCx *cx, int prim, IrAtom a);
IrAtom jv_sel(JvpCx *cx, IrAtom pred, IrAtom on_true, IrAtom on_false);

#endif
