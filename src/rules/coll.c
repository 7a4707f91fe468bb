/*
** coll.c — the shape rules of the collectives (rows of prims.def): which
** parameters each takes and the type of its result.  The variance rules
** are the table's vrule column; the fabric (fabric.c) runs them.
*/
#include "coll.h"

/* axis_index_groups is accepted only as None (JAX prints it). */
static bool no_groups(RuleCtx *cx) {
  if (!rule_has(cx, "axis_index_groups")) return true;
  IntList l;
  if (!rule_ints(cx, "axis_index_groups", false, &l)) return false;
  if (l.n) return rule_param_error(cx, "axis_index_groups", "axis_index_groups is not supported: use a mesh axis");
  return true;
}

/* The axis-name parameter: `axes` for reductions, `axis_name` otherwise;
   either spelling is accepted. */
static bool read_axes(RuleCtx *cx, const char *key, Attrs *at) {
  const char *other = !strcmp(key, "axes") ? "axis_name" : "axes";
  if (!rule_has(cx, key) && rule_has(cx, other)) return rule_axes(cx, other, true, at);
  return rule_axes(cx, key, true, at);
}

/* psum, pmax, pmin, pmean: result has the operand's shape.  Attrs: axes. */
bool coll_rule_reduce(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  if (!read_axes(cx, "axes", at) || !no_groups(cx)) return false;
  if (dtype_is_key((DType)in[0].dt))
    return rule_error(cx, "%s does not accept keys (%s)", rule_prim_name(cx), dtype_names[in[0].dt]);
  if (in[0].dt == DT_BOOL && strcmp(rule_prim_name(cx), "pmax") && strcmp(rule_prim_name(cx), "pmin"))
    return rule_error(cx, "%s does not accept bool operands", rule_prim_name(cx));
  bool minmax = !strcmp(rule_prim_name(cx), "pmax") || !strcmp(rule_prim_name(cx), "pmin");
  if (minmax && dtype_is_complex((DType)in[0].dt))
    return rule_error(cx, "%s does not accept complex operands", rule_prim_name(cx));
  out[0] = in[0];
  if (!strcmp(rule_prim_name(cx), "pmean") && !dtype_is_float((DType)in[0].dt) && !dtype_is_complex((DType)in[0].dt) &&
      !in[0].weak)
    out[0].dt = DT_F32;
  return true;
}

/* pbroadcast: the operand's shape.  Attrs: axes. */
bool coll_rule_pbroadcast(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  if (!read_axes(cx, "axes", at) || !no_groups(cx)) return false;
  out[0] = in[0];
  return true;
}

/* pbroadcast[axis_name, source] (JAX's collective broadcast): every member
   of a group gets member `source`'s block.  Attrs: axes; i[0] source. */
bool coll_rule_pbroadcast_source(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  int64_t src;
  if (!read_axes(cx, "axis_name", at) || !rule_int(cx, "source", true, 0, &src)) return false;
  int64_t p = rule_group_size(cx, at);
  if (src < 0 || src >= p)
    return rule_error(cx, "pbroadcast's source %lld is not a member of a group of %lld (0..%lld)", (long long)src,
                      (long long)p, (long long)p - 1);
  at->i[0] = src;
  out[0] = in[0];
  return true;
}

/* JAX's axis_size parameter, when written: the size of the group. */
static bool axis_size_ok(RuleCtx *cx, const Attrs *at) {
  if (!rule_has(cx, "axis_size")) return true;
  int64_t s;
  if (!rule_int(cx, "axis_size", false, 0, &s)) return false;
  if (s != rule_group_size(cx, at))
    return rule_param_error(cx, "axis_size", "%s axis_size=%lld, but its axes have %lld devices", rule_prim_name(cx),
                            (long long)s, (long long)rule_group_size(cx, at));
  return true;
}

/* all_gather, all_gather_invariant.  Attrs: axes; i[0] axis; b[0] tiled. */
bool coll_rule_all_gather(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  int64_t axis;
  bool tiled;
  if (!read_axes(cx, "axis_name", at) || !no_groups(cx)) return false;
  const char *akey = rule_has(cx, "all_gather_dimension") && !rule_has(cx, "axis") ? "all_gather_dimension" : "axis";
  if (!rule_int(cx, akey, false, 0, &axis) || !rule_bool(cx, "tiled", false, &tiled)) return false;
  if (!axis_size_ok(cx, at)) return false;
  /* negative: counted from the end of the result (untiled: one rank more) */
  rule_axis_index(cx, akey, &axis, in[0].rank + !tiled);
  int64_t p = rule_group_size(cx, at);
  out[0] = in[0];
  if (tiled) {
    if (axis < 0 || axis >= in[0].rank)
      return rule_error(cx, "%s axis %lld is out of range for a rank-%d operand (tiled: %d..%d)", rule_prim_name(cx),
                        (long long)axis, in[0].rank, -in[0].rank, in[0].rank - 1);
    out[0].shape[axis] *= p;
  } else {
    if (axis < 0 || axis > in[0].rank)
      return rule_error(cx, "%s axis %lld is out of range for a rank-%d operand (untiled: %d..%d)", rule_prim_name(cx),
                        (long long)axis, in[0].rank, -in[0].rank - 1, in[0].rank);
    if (in[0].rank == SHM_MAXRANK) return rule_error(cx, "result rank above %d", SHM_MAXRANK);
    for (int d = in[0].rank; d > axis; d--) out[0].shape[d] = in[0].shape[d - 1];
    out[0].shape[axis] = p;
    out[0].rank++;
  }
  at->i[0] = axis;
  at->b[0] = tiled;
  return true;
}

/* psum_scatter (scatter_dimension) and pscatter (axis).  Attrs: axes;
   i[0] the dimension; b[0] tiled. */
bool coll_rule_psum_scatter(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  bool ps = !strcmp(rule_prim_name(cx), "pscatter");
  const char *key = ps ? "axis" : "scatter_dimension";
  int64_t dim;
  bool tiled;
  if (!read_axes(cx, "axis_name", at) || !no_groups(cx)) return false;
  if (!rule_int(cx, key, false, 0, &dim) || !rule_bool(cx, "tiled", false, &tiled) || !axis_size_ok(cx, at)) return false;
  rule_axis_index(cx, key, &dim, in[0].rank);
  int64_t p = rule_group_size(cx, at);
  if (dim < 0 || dim >= in[0].rank)
    return rule_error(cx, "%s %s %lld is out of range for a rank-%d operand (%d..%d)", rule_prim_name(cx), key,
                      (long long)dim, in[0].rank, -in[0].rank, in[0].rank - 1);
  out[0] = in[0];
  if (tiled) {
    if (in[0].shape[dim] % p)
      return rule_error(cx, "%s (tiled) splits dimension %lld of size %lld into %lld chunks: not divisible",
                        rule_prim_name(cx), (long long)dim, (long long)in[0].shape[dim], (long long)p);
    out[0].shape[dim] /= p;
  } else {
    if (in[0].shape[dim] != p)
      return rule_error(cx, "%s (untiled) needs dimension %lld to equal the group size %lld, but it is %lld",
                        rule_prim_name(cx), (long long)dim, (long long)p, (long long)in[0].shape[dim]);
    for (int d = (int)dim; d < in[0].rank - 1; d++) out[0].shape[d] = in[0].shape[d + 1];
    out[0].rank--;
  }
  at->i[0] = dim;
  at->b[0] = tiled;
  return true;
}

/* ppermute.  Attrs: axes; l[0] the (src, dst) pairs, flattened.  Instead
   of perm, shift=k (an extension) sends member j to member (j + k) mod the
   group size, whatever that size is: a ring written once for every mesh;
   it is recorded as the perm it stands for. */
bool coll_rule_ppermute(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  if (!read_axes(cx, "axis_name", at)) return false;
  int64_t p = rule_group_size(cx, at);
  if (rule_has(cx, "shift")) {
    int64_t k;
    if (rule_has(cx, "perm")) return rule_param_error(cx, "shift", "ppermute takes perm or shift, not both");
    if (!rule_int(cx, "shift", true, 0, &k)) return false;
    at->l[0].n = (int)(2 * p);
    at->l[0].v = rule_alloc_ints(cx, at->l[0].n);
    for (int64_t j = 0; j < p; j++) {
      at->l[0].v[2 * j] = j;
      at->l[0].v[2 * j + 1] = ((j + k) % p + p) % p;
    }
    rule_respell_int_tuples(cx, "shift", "perm", 2, &at->l[0]);
  } else if (!rule_int_tuples(cx, "perm", true, 2, &at->l[0])) {
    return false;
  }
  int np = at->l[0].n / 2;
  for (int i = 0; i < np; i++) {
    int64_t s = at->l[0].v[2 * i], d = at->l[0].v[2 * i + 1];
    if (s < 0 || s >= p || d < 0 || d >= p)
      return rule_param_error(cx, "perm", "%s pair (%lld, %lld) is out of range for a group of %lld",
                              rule_prim_name(cx), (long long)s, (long long)d, (long long)p);
  }
  /* each member a source and a destination at most once: the first pair
     (by where it repeats) of the earliest repetition.  Many pairs are
     looked up in tables of where each member was first seen (a scan of
     the earlier pairs for each pair took 2.7 s for a ring of 65,536); a
     few, in a large group, are scanned (no table of the group's size) */
  bool table = (int64_t)np * np > p;
  int64_t *first = table ? rule_alloc_ints(cx, (int)(2 * p)) : NULL;
  for (int64_t q = 0; table && q < 2 * p; q++) first[q] = -1;
  for (int i = 0; i < np; i++) {
    int64_t s = at->l[0].v[2 * i], d = at->l[0].v[2 * i + 1];
    int64_t fs = -1, fd = -1;
    if (table) fs = first[s], fd = first[p + d];
    for (int j = 0; !table && j < i && fs < 0 && fd < 0; j++) {
      if (at->l[0].v[2 * j] == s) fs = j;
      if (at->l[0].v[2 * j + 1] == d) fd = j;
    }
    if (fs >= 0 && (fd < 0 || fs <= fd))
      return rule_param_error(cx, "perm", "%s source %lld appears twice in perm", rule_prim_name(cx), (long long)s);
    if (fd >= 0)
      return rule_param_error(cx, "perm", "%s destination %lld appears twice in perm", rule_prim_name(cx),
                              (long long)d);
    if (table) first[s] = first[p + d] = i;
  }
  out[0] = in[0];
  return true;
}

/* pshuffle[axis_name, perm=(s0, s1, ...)]: lax.pshuffle, member j gets the
   block of member perm[j]; perm is a permutation of the group.  Attrs:
   axes; l[0] the (source, destination) pairs, as ppermute's. */
bool coll_rule_pshuffle(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  IntList perm;
  if (!read_axes(cx, "axis_name", at) || !rule_ints(cx, "perm", true, &perm)) return false;
  int64_t p = rule_group_size(cx, at);
  if (perm.n != p)
    return rule_param_error(cx, "perm", "pshuffle's perm has %d entries for a group of %lld: it must be a "
                            "permutation of 0..%lld", perm.n, (long long)p, (long long)(p - 1));
  at->l[0].n = (int)(2 * p);
  at->l[0].v = rule_alloc_ints(cx, at->l[0].n);
  int64_t *seen = rule_alloc_ints(cx, (int)p);     /* (a table, not a scan of the earlier entries) */
  for (int64_t j = 0; j < p; j++) seen[j] = 0;
  for (int64_t j = 0; j < p; j++) {
    int64_t s = perm.v[j];
    if (s < 0 || s >= p)
      return rule_param_error(cx, "perm", "pshuffle's perm entry %lld is out of range for a group of %lld",
                              (long long)s, (long long)p);
    if (seen[s]++)
      return rule_param_error(cx, "perm", "pshuffle's perm names member %lld twice: it must be a permutation",
                              (long long)s);
    at->l[0].v[2 * j] = s;
    at->l[0].v[2 * j + 1] = j;
  }
  out[0] = in[0];
  return true;
}

/* all_to_all.  Attrs: axes; i[0] split_axis; i[1] concat_axis; b[0] tiled. */
bool coll_rule_all_to_all(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  int64_t sa, ca;
  bool tiled;
  if (!read_axes(cx, "axis_name", at) || !no_groups(cx)) return false;
  if (!rule_int(cx, "split_axis", true, 0, &sa) || !rule_int(cx, "concat_axis", true, 0, &ca) ||
      !rule_bool(cx, "tiled", false, &tiled))
    return false;
  int r = in[0].rank;
  /* negative: counted from the end (the result has the operand's rank) */
  rule_axis_index(cx, "split_axis", &sa, r);
  rule_axis_index(cx, "concat_axis", &ca, r);
  int64_t p = rule_group_size(cx, at);
  if (sa < 0 || sa >= r)
    return rule_error(cx, "all_to_all split_axis %lld is out of range for rank %d (%d..%d)", (long long)sa, r, -r, r - 1);
  if (ca < 0 || ca >= r)
    return rule_error(cx, "all_to_all concat_axis %lld is out of range for rank %d (%d..%d)", (long long)ca, r, -r, r - 1);
  out[0] = in[0];
  if (tiled) {
    if (in[0].shape[sa] % p)
      return rule_error(cx, "all_to_all (tiled) splits dimension %lld of size %lld into %lld chunks: not divisible",
                        (long long)sa, (long long)in[0].shape[sa], (long long)p);
    out[0].shape[sa] /= p;
    out[0].shape[ca] *= p;
  } else {
    if (in[0].shape[sa] != p)
      return rule_error(cx, "all_to_all (untiled) needs split_axis %lld to equal the group size %lld, but it is %lld",
                        (long long)sa, (long long)p, (long long)in[0].shape[sa]);
    int64_t tmp[SHM_MAXRANK];
    int n = 0;
    for (int d = 0; d < r; d++) if (d != sa) tmp[n++] = in[0].shape[d];
    for (int d = n; d > ca; d--) tmp[d] = tmp[d - 1];
    tmp[ca] = p;
    for (int d = 0; d < r; d++) out[0].shape[d] = tmp[d];
  }
  at->i[0] = sa;
  at->i[1] = ca;
  at->b[0] = tiled;
  return true;
}

/* axis_index: i32[].  Attrs: axes. */
bool coll_rule_axis_index(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)in;
  (void)nin;
  if (!read_axes(cx, "axis_name", at)) return false;
  memset(&out[0], 0, sizeof(Type));
  out[0].dt = DT_I32;
  return true;
}

/* ragged_all_to_all operand output input_offsets send_sizes output_offsets
   recv_sizes: the result has the type of `output` (JAX's abstract eval).
   operand and output share the dtype and the dimensions after the first
   (the rows that move); the four index arrays are integer, rank 1 and of
   one length K, a multiple of the group size (K / p slices go to each
   member).  Attrs: axes. */
static const char *const ragged_names[6] = {"operand", "output", "input_offsets", "send_sizes", "output_offsets",
                                            "recv_sizes"};

bool coll_rule_ragged_all_to_all(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  TyBuf a, b;
  if (!read_axes(cx, "axis_name", at) || !no_groups(cx)) return false;
  if (in[0].dt != in[1].dt)
    return rule_error(cx, "ragged_all_to_all's operand (%s) and output (%s) must have one dtype", rule_ty(&a, &in[0]),
                      rule_ty(&b, &in[1]));
  if (dtype_is_key((DType)in[0].dt)) return rule_error(cx, "ragged_all_to_all does not accept keys (%s)", rule_ty(&a, &in[0]));
  bool same = in[0].rank == in[1].rank && in[0].rank >= 1;
  for (int d = 1; same && d < in[0].rank; d++) same = in[0].shape[d] == in[1].shape[d];
  if (!same)
    return rule_error(cx, "ragged_all_to_all's operand %s and output %s must have rank 1 or more and the same "
                      "dimensions after the first (the rows that move)", rule_ty(&a, &in[0]), rule_ty(&b, &in[1]));
  for (int k = 2; k < 6; k++) {
    if (!dtype_is_int((DType)in[k].dt))
      return rule_error(cx, "ragged_all_to_all's %s must have an integer dtype, not %s", ragged_names[k],
                        rule_ty(&a, &in[k]));
    if (in[k].rank != 1 || in[k].shape[0] < 1)
      return rule_error(cx, "ragged_all_to_all's %s must have rank 1 and at least one entry, but it is %s",
                        ragged_names[k], rule_ty(&a, &in[k]));
    if (in[k].shape[0] != in[2].shape[0])
      return rule_error(cx, "ragged_all_to_all's %s (%s) and input_offsets (%s) must have one length",
                        ragged_names[k], rule_ty(&a, &in[k]), rule_ty(&b, &in[2]));
  }
  int64_t p = rule_group_size(cx, at);
  if (in[2].shape[0] % p)
    return rule_error(cx, "ragged_all_to_all's offsets and sizes have %lld entries, not a multiple of the group "
                      "size %lld (each member gets the same number of slices)", (long long)in[2].shape[0],
                      (long long)p);
  out[0] = in[1];
  out[0].weak = false;
  return true;
}

/* axis_size[axis_name]: the number of devices along the named axes, an
   invariant weakly typed i32[] (JAX's lax.axis_size, which JAX folds into
   a literal).  Attrs: axes; i[0] the size. */
bool coll_rule_axis_size(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)in;
  (void)nin;
  if (!read_axes(cx, "axis_name", at)) return false;
  at->i[0] = rule_group_size(cx, at);
  memset(&out[0], 0, sizeof(Type));
  out[0].dt = DT_I32;
  out[0].weak = true;
  return true;
}

void coll_kern_axis_size(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)in;
  (void)nin;
  (void)outt;
  out[0] = arr_scalar_i(DT_I32, at->i[0]);
}

/* The cycle of a psend/precv perm, if it has one, written "0 -> 1 -> 0"
   into buf (XLA refuses cyclic send/recv pairs: each member would wait
   to send before it receives). */
static bool perm_cycle(const IntList *pairs, char *buf, size_t cap) {
  int np = pairs->n / 2;
  for (int i = 0; i < np; i++) {
    int64_t start = pairs->v[2 * i], at = pairs->v[2 * i + 1];
    int steps = 0;
    size_t len = (size_t)snprintf(buf, cap, "%lld -> %lld", (long long)start, (long long)at);
    while (at != start && steps++ <= np) {
      int k = -1;
      for (int j = 0; j < np && k < 0; j++)
        if (pairs->v[2 * j] == at) k = j;
      if (k < 0) break;
      at = pairs->v[2 * k + 1];
      if (len < cap) len += (size_t)snprintf(buf + len, cap - len, " -> %lld", (long long)at);
    }
    if (at == start) return true;
  }
  return false;
}

/* The perm of psend and precv: ppermute's (unique sources, unique
   destinations, in range), without cycles. */
static bool send_perm(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  if (!coll_rule_ppermute(cx, in, nin, at, out)) return false;
  char cyc[160];
  if (perm_cycle(&at->l[0], cyc, sizeof cyc))
    return rule_param_error(cx, "perm", "%s's perm has a cycle (%s): every member of it would wait to send "
                            "before it receives, and XLA refuses cyclic send/receive pairs", rule_prim_name(cx), cyc);
  return true;
}

/* The token psend makes and precv consumes: bool[0], JAX's token aval
   (core.get_token_aval), which JAX prints `Tok`. */
static void token_type(Type *t, uint32_t vma) {
  memset(t, 0, sizeof *t);
  t->dt = DT_BOOL;
  t->rank = 1;
  t->shape[0] = 0;
  t->vma = vma;
}

/* psend[axis_name, perm] x: sends x along perm; the result is the token a
   precv of the same perm consumes.  Attrs: axes; l[0] the pairs. */
bool coll_rule_psend(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  if (!send_perm(cx, in, nin, at, out)) return false;
  if (dtype_is_key((DType)in[0].dt)) return rule_error(cx, "psend does not accept keys (%s)", dtype_names[in[0].dt]);
  token_type(&out[0], in[0].vma);
  return true;
}

/* precv[axis_name, perm, shape, dtype] token: what the psend that made
   the token sent along perm, of that shape and dtype (zeros on members
   no pair sends to).  Attrs: axes; l[0] the pairs; l[1] the shape;
   dtype. */
/* JAX's out_shape: the aval precv binds, printed by str() (float32[1,2])
   or, inside a repr, ShapedArray(float32[1,2]) (weak_type=... after it
   changes nothing); layouts (8@x) and variance ({V:x}) are not part of
   what is received.  Into *dt and shp. */
static bool precv_aval_text(RuleCtx *cx, Str s, int *dt, IntList *shp) {
  int i = 0;
  while (i < s.n && s.p[i] != '[') i++;
  Str name = {s.p, i};
  *dt = i < s.n ? dtype_lookup(name) : -1;
  if (*dt < 0 || dtype_is_key((DType)*dt))
    return rule_param_error(cx, "out_shape", "precv's out_shape '%.*s' is not an array type (dtype[shape], as "
                            "float32[1,2])", s.n, s.p);
  int64_t *v = rule_alloc_ints(cx, SHM_MAXRANK);
  int n = 0, depth = 0;
  bool num = false, skip = false;
  for (i++; i < s.n && !(s.p[i] == ']' && depth == 0); i++) {
    char c = s.p[i];
    if (c == '(') depth++;
    else if (c == ')') depth--;
    else if (c == ',' && depth == 0) { num = skip = false; continue; }
    else if (c == '@') skip = true;
    if (skip || c == ' ') continue;
    if (c < '0' || c > '9' || (!num && n == SHM_MAXRANK))
      return rule_param_error(cx, "out_shape", "precv's out_shape '%.*s' is not an array type (dtype[shape], as "
                              "float32[1,2])", s.n, s.p);
    if (!num) v[n++] = 0;
    num = true;
    v[n - 1] = v[n - 1] * 10 + (c - '0');
  }
  shp->n = n;
  shp->v = v;
  return true;
}

static bool precv_out_shape(RuleCtx *cx, int *dt, IntList *shp) {
  if (rule_has(cx, "shape") || rule_has(cx, "dtype"))
    return rule_param_error(cx, "out_shape", "precv takes out_shape (JAX's) or shape and dtype, not both");
  PVal *v = rule_get(cx, "out_shape"), *t = v;
  if (t->k == PV_CALL && str_eqc(t->s, "ShapedArray") && t->n >= 1) t = t->items[0];
  if (t->k != PV_REPR)
    return rule_param_error(cx, "out_shape", "precv's out_shape must be an array type, as JAX prints it: "
                            "float32[1,2] or ShapedArray(float32[1,2])");
  if (!precv_aval_text(cx, t->s, dt, shp)) return false;
  rule_record(cx, "out_shape", v);
  return true;
}

bool coll_rule_precv(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  TyBuf b;
  if (in[0].dt != DT_BOOL || in[0].rank != 1 || in[0].shape[0] != 0)
    return rule_error(cx, "precv's operand must be the token a psend made (JAX's Tok, bool[0]), not %s", rule_ty(&b, &in[0]));
  if (!send_perm(cx, in, nin, at, out)) return false;
  IntList shp = {0, NULL};
  int dt;
  if (rule_has(cx, "out_shape")) {
    if (!precv_out_shape(cx, &dt, &shp)) return false;
  } else if (!rule_has(cx, "shape") && !rule_has(cx, "dtype")) {
    return rule_error(cx, "precv requires out_shape (JAX's, as float32[1,2]) or shape and dtype");
  } else if (!rule_ints(cx, "shape", true, &shp) || !rule_dtype(cx, "dtype", true, -1, &dt)) {
    return false;
  }
  if (!rule_check_shape(cx, "shape", &shp)) return false;
  rule_set_type(out, dt, shp.n, shp.v);
  at->l[1] = shp;
  at->dtype = dt;
  return true;
}

/* ---- async collectives ---------------------------------------------------------- */

static const int async_pairs[][3] = {     /* start, the collective it runs, its done */
  {P_ALL_GATHER_START, P_ALL_GATHER, P_ALL_GATHER_DONE},
  {P_ALL_GATHER_REDUCED_START, P_ALL_GATHER_REDUCED, P_ALL_GATHER_DONE},
  {P_PSUM_INVARIANT_START, P_PSUM, P_PSUM_DONE},
  {P_REDUCE_SCATTER_START, P_PSUM_SCATTER, P_REDUCE_SCATTER_DONE},
  {P_ALL_TO_ALL_START, P_ALL_TO_ALL, P_ALL_TO_ALL_DONE},
  {P_PPERMUTE_START, P_PPERMUTE, P_PPERMUTE_DONE},
};
#define N_ASYNC ((int)(sizeof async_pairs / sizeof async_pairs[0]))

int coll_async_base(int prim) {
  for (int i = 0; i < N_ASYNC; i++)
    if (async_pairs[i][0] == prim) return async_pairs[i][1];
  return prim;
}

int coll_async_done(int prim) {
  for (int i = 0; i < N_ASYNC; i++)
    if (async_pairs[i][0] == prim) return async_pairs[i][2];
  return -1;
}

bool coll_is_async_start(int prim) { return coll_async_done(prim) >= 0; }

bool coll_rule_async_done(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  (void)at;
  TyBuf b;
  if (!in[0].future)
    return rule_error(cx, "%s awaits the future an async collective's start gives (AbstractFuture{...}), "
                      "not %s", rule_prim_name(cx), rule_ty(&b, &in[0]));
  out[0] = in[0];
  out[0].future = false;
  return true;
}

/* The bytes one member sends under the ring algorithms (coll.h). */
double coll_ring_bytes(int prim, int64_t p, double n_in, double n_out) {
  double f = p > 0 ? (double)(p - 1) / (double)p : 0;
  switch (prim) {
  case P_PSUM: case P_PMAX: case P_PMIN: case P_PMEAN: return 2 * f * n_in;
  case P_ALL_GATHER: case P_ALL_GATHER_INVARIANT: return f * n_out;
  case P_PSUM_SCATTER: case P_ALL_TO_ALL: case P_RAGGED_ALL_TO_ALL: return f * n_in;
  case P_PPERMUTE: case P_PRECV: return n_in;
  case P_PBROADCAST_SOURCE: return f * n_in;     /* (every member but the source receives it) */
  default: return 0;
  }
}
