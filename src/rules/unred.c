/*
** unred.c — unreduced and reduced values: the third and fourth state of
** an axis in a type, beside invariant and varying (JAX's `{U:x}` and
** `{R:x}`).
**
** Along an axis a value is
**
**   invariant   the same on every instance            f32[4]
**   varying     different on each instance            f32[4]{V:x}
**   unreduced   a summand on each instance: the value  f32[4]{U:x}
**               is their sum (U_max:, U_min: their max, min)
**   reduced     the same on every instance, with an    f32[4]{R:x}
**               unreduced cotangent (for autodiff)
**
** Physically an unreduced value differs from instance to instance, so its
** unreduced axes are in the type's variance set too (types.h: unred is a
** subset of vma) and the evaluator and the fabric need nothing new; a
** reduced value is the same everywhere (red never meets vma).  This file
** is the part of the variance rule that tracks the two new states:
** which primitives may read an unreduced value (the linear ones, as JAX's
** unreduced rules say, and the collectives that complete the sum) and what
** their results are.  Anything else reading an unreduced value would read
** one summand as if it were the whole value: it is refused.
*/
#include <stdio.h>
#include "unred.h"
#include "prims.h"

/* How a local primitive treats unreduced operands. */
typedef enum {
  UR_NONE,    /* refuses them */
  UR_ALL,     /* every operand unreduced alike (a sum of sums): add, sub, concatenate */
  UR_FIRST,   /* the first operand's state passes through (a linear map of it); the others complete */
  UR_SCALE,   /* one operand unreduced, the other complete along those axes: mul, dot_general (div: the first) */
} UrKind;

static UrKind ur_kind(int prim, int kind) {
  switch (prim) {
  case P_ADD: case P_SUB: case P_CONCATENATE:
    return kind == UK_SUM ? UR_ALL : UR_NONE;
  case P_NEG: case P_CONVERT_ELEMENT_TYPE: case P_REDUCE_SUM: case P_REDUCE_PRECISION:
    return kind == UK_SUM ? UR_FIRST : UR_NONE;
  case P_REDUCE_MAX: return kind == UK_MAX ? UR_FIRST : UR_NONE;
  case P_REDUCE_MIN: return kind == UK_MIN ? UR_FIRST : UR_NONE;
  case P_BROADCAST_IN_DIM: case P_RESHAPE: case P_TRANSPOSE: case P_SQUEEZE: case P_EXPAND_DIMS:
  case P_REV: case P_SLICE: case P_DYNAMIC_SLICE: case P_COPY: case P_MESH_CAST: case P_SHARDING_CONSTRAINT:
  case P_DEVICE_PUT: case P_RESHARD:
    return UR_FIRST;
  case P_MUL: case P_DIV: case P_DOT_GENERAL:
    return kind == UK_SUM ? UR_SCALE : UR_NONE;
  default:
    return UR_NONE;
  }
}


/* The error for operand k, which is unreduced along `bad`. */
static bool refuse(UnredErr *e, int k, uint32_t bad, const char *fmt) {
  e->operand = k;
  e->axes = bad;
  snprintf(e->msg, sizeof e->msg, "%s", fmt);
  return false;
}

/* A local primitive (VR_ELEM and the like). */
static bool local_rule(int prim, const Type *in, int nin, const bool *lit, uint32_t res, Type *out, int nout,
                       UnredErr *e) {
  uint32_t u = 0, r = 0;
  int kind = UK_SUM, first = -1;
  for (int k = 0; k < nin; k++) {
    r |= in[k].red;
    if (in[k].unred && first < 0) { first = k; kind = in[k].ukind; }
    u |= in[k].unred;
  }
  uint32_t ou = 0;
  if (u) {
    UrKind uk = ur_kind(prim, kind);
    const Type *f = &in[first];
    switch (uk) {
    case UR_NONE:
      return refuse(e, first, f->unred, kind == UK_SUM ? "%s reads %s as if it were complete, but it is unreduced "
                    "over %s: each device holds a summand. Complete it first (in a shard_map psum or "
                    "unreduced_psum, or psum_scatter; outside, reshard)" : "%s reads %s as if it were complete, but it is unreduced "
                    "over %s: each device holds a part of a max or min. Complete it first (unreduced_pmax, "
                    "unreduced_pmin)");
    case UR_ALL:
      for (int k = 0; k < nin; k++)
        if (in[k].unred != f->unred || in[k].ukind != f->ukind)
          return refuse(e, lit[k] ? -1 : k, f->unred ^ in[k].unred,
                        "%s adds operands that are not unreduced alike (%s differs over %s): a summand plus a complete "
                        "value counts the complete value once per device. Complete the unreduced one first "
                        "(psum), or make the other unreduced the same way (pcast to='unreduced')");
      ou = f->unred;
      break;
    case UR_FIRST:
      if (first != 0) return refuse(e, first, f->unred, "%s takes %s, unreduced over %s, where it needs a complete "
                                    "value: complete it first (psum)");
      ou = f->unred;
      break;
    case UR_SCALE:
      for (int k = 0; k < nin; k++) {
        if (k == first) continue;
        if (in[k].unred)
          return refuse(e, k, in[k].unred, "%s multiplies two unreduced values (%s is unreduced over %s): a "
                        "product of sums is not the sum of the products. Complete one first (psum)");
        if (in[k].vma & f->unred)
          return refuse(e, k, in[k].vma & f->unred, "%s scales a summand by %s, which varies over %s: the "
                        "scale must be the same on every device that holds a summand");
      }
      if (prim == P_DIV && first != 0)
        return refuse(e, first, f->unred, "%s divides by %s, unreduced over %s: complete it first (psum)");
      ou = f->unred;
      break;
    }
  }
  for (int k = 0; k < nout; k++) {
    out[k].unred = ou;
    out[k].ukind = (uint8_t)(ou ? kind : UK_SUM);
    out[k].red = r & ~res;      /* lifted to varying there: no longer reduced */
    if (ou) out[k].red &= ~ou;
  }
  return true;
}

static const char *axes_state_error(VarRule vr, const Type *a, uint32_t A, int prim, uint32_t *bad) {
  switch (vr) {
  case VR_UCAST:
    if ((*bad = A & ~(a->vma & ~a->unred)))
      return "%s casts varying values to unreduced, but %s is not varying over %s";
    return NULL;
  case VR_RCAST:
    if ((*bad = A & (a->vma | a->red)))
      return "%s casts invariant values to reduced, but %s is not invariant over %s";
    return NULL;
  case VR_RVCAST:
    if ((*bad = A & ~a->red)) return "%s casts reduced values to varying, but %s is not reduced over %s";
    return NULL;
  case VR_UREDUCE:
  case VR_USCATTER: {
    int want = prim == P_UNREDUCED_PMAX ? UK_MAX : prim == P_UNREDUCED_PMIN ? UK_MIN : UK_SUM;
    if ((*bad = A & ~a->unred)) return "%s completes unreduced values, but %s is not unreduced over %s";
    if (a->ukind != want) {
      *bad = A;
      return want == UK_SUM ? "%s completes sums, but %s holds parts of a max or min over %s"
                            : "%s completes a max or min of another kind than %s holds over %s";
    }
    return NULL;
  }
  case VR_GATHER_RED:
    if ((*bad = A & ~(a->vma & ~a->unred))) return "%s gathers varying values, but %s is not varying over %s";
    return NULL;
  default:
    return NULL;
  }
}

bool unred_rule(int prim, VarRule vr, const Type *in, int nin, const bool *lit, const Attrs *at, uint32_t res,
                Type *out, int nout, UnredErr *e) {
  e->operand = 0;
  e->axes = 0;
  e->msg[0] = 0;
  const Type *a = nin ? &in[0] : NULL;
  uint32_t A = at ? at->axmask : 0, bad = 0;
  switch (vr) {
  case VR_ELEM:
  case VR_NULLARY:
  case VR_SPECIAL:
    return local_rule(prim, in, nin, lit, res, out, nout, e);
  case VR_REDUCE:          /* psum completes a sum (as jax.lax.psum does); pmax and pmin their kinds */
    if (a->unred & A) {
      int want = prim == P_PMAX ? UK_MAX : prim == P_PMIN ? UK_MIN : prim == P_PSUM ? UK_SUM : -1;
      if (want != a->ukind)
        return refuse(e, 0, a->unred & A, "%s cannot complete %s, unreduced over %s of another kind "
                      "(psum completes sums, pmax and pmin unreduced maxima and minima)");
    }
    out[0].unred = a->unred & ~A;
    out[0].ukind = out[0].unred ? a->ukind : UK_SUM;
    out[0].red = a->red & ~A;
    return true;
  case VR_VARY:
    if (prim == P_PSUM_SCATTER && (!a->unred || a->ukind == UK_SUM)) {
      out[0].unred = a->unred & ~A;
      out[0].ukind = UK_SUM;
      out[0].red = a->red & ~res;
      return true;
    }
    /* fall through */
  case VR_GATHER_INV:
  case VR_PSCATTER:
  case VR_PDOT:
  case VR_AXIS_INDEX:
    if (a && a->unred)
      return refuse(e, 0, a->unred, "%s moves %s, unreduced over %s, as if it were complete: complete it first "
                    "(psum)");
    for (int k = 0; k < nout; k++) out[k].red = (a ? a->red : 0) & ~res;
    return true;
  case VR_PBCAST:
    if (a->red & A)
      return refuse(e, 0, a->red & A, "%s casts invariant values to varying, but %s is reduced over %s: "
                    "use reduced_vary_cast (jax.lax.pcast(x, axes, to='varying'))");
    out[0].unred = a->unred;
    out[0].ukind = a->ukind;
    out[0].red = a->red;
    return true;
  default: {
    const char *msg = axes_state_error(vr, a, A, prim, &bad);
    if (msg) return refuse(e, 0, bad, msg);
    out[0].ukind = a->ukind;
    out[0].unred = a->unred;
    out[0].red = a->red;
    if (vr == VR_UCAST) out[0].unred |= A, out[0].ukind = UK_SUM;
    if (vr == VR_RCAST || vr == VR_GATHER_RED) out[0].red |= A;
    if (vr == VR_RVCAST) out[0].red &= ~A;
    if (vr == VR_UREDUCE || vr == VR_USCATTER) out[0].unred &= ~A;
    if (!out[0].unred) out[0].ukind = UK_SUM;
    return true;
  }
  }
}
