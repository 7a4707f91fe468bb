/*
** hlosharding.c — reading XLA's HloSharding text (hlosharding.h).
*/
#include "hlosharding.h"
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Cur {
  const char *p, *e;
  char *err;
  size_t errn;
  bool failed;
} Cur;

static bool fail(Cur *c, const char *fmt, ...) SHM_PRINTF(2, 3);
static bool fail(Cur *c, const char *fmt, ...) {
  if (c->failed) return false;
  c->failed = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, c->errn, fmt, ap);
  va_end(ap);
  return false;
}

static void blanks(Cur *c) {
  while (c->p < c->e && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n')) c->p++;
}

static bool eat(Cur *c, const char *w) {
  blanks(c);
  size_t n = strlen(w);
  if ((size_t)(c->e - c->p) < n || strncmp(c->p, w, n)) return false;
  c->p += n;
  return true;
}

static bool need(Cur *c, const char *w) {
  return eat(c, w) || fail(c, "expected '%s' in the HLO sharding", w);
}

static bool number(Cur *c, int64_t *v) {
  blanks(c);
  if (c->p >= c->e || !isdigit((unsigned char)*c->p)) return fail(c, "expected a number in the HLO sharding");
  int64_t x = 0;
  while (c->p < c->e && isdigit((unsigned char)*c->p)) {
    x = x * 10 + (*c->p++ - '0');
    if (x > HSH_MAXDEVICES * (int64_t)HSH_MAXDEVICES) return fail(c, "a number too large in the HLO sharding");
  }
  *v = x;
  return true;
}

/* [a,b,...] into v (at most max); the count, or -1. */
static int bracket_list(Cur *c, int64_t *v, int max) {
  if (!need(c, "[")) return -1;
  int n = 0;
  do {
    if (n == max) return fail(c, "more than %d dimensions in the HLO sharding", max), -1;
    if (!number(c, &v[n++])) return -1;
  } while (eat(c, ","));
  return need(c, "]") ? n : -1;
}

/* <=[reshape]T(perm): device i of the tile order is the i-th element of
   iota(prod(reshape)) reshaped and transposed by perm. */
static bool iota_devices(Cur *c, HloSharding *h) {
  int64_t rs[HSH_MAXDIMS], perm[HSH_MAXDIMS];
  int nr = bracket_list(c, rs, HSH_MAXDIMS), np = 0;
  if (nr < 0) return false;
  int64_t total = 1;
  for (int i = 0; i < nr; i++) total *= rs[i];
  if (total != h->ndevices)
    return fail(c, "the iota holds %lld devices, but the tile assignment has %lld tiles", (long long)total,
                (long long)h->ndevices);
  if (eat(c, "T(")) {
    do {
      if (np == HSH_MAXDIMS || !number(c, &perm[np++])) return fail(c, "a bad transpose in the HLO sharding");
    } while (eat(c, ","));
    if (!need(c, ")")) return false;
    if (np != nr) return fail(c, "the transpose T(...) must have one entry per reshape dimension");
    bool seen[HSH_MAXDIMS] = {false};
    for (int i = 0; i < np; i++) {
      if (perm[i] < 0 || perm[i] >= nr || seen[perm[i]]) return fail(c, "the transpose T(...) is not a permutation");
      seen[perm[i]] = true;
    }
  } else {
    for (int i = 0; i < nr; i++) perm[i] = i;
    np = nr;
  }
  /* the transposed array's element k: walk its index in the permuted shape */
  int64_t idx[HSH_MAXDIMS] = {0}, st[HSH_MAXDIMS];
  for (int i = nr - 1, s = 1; i >= 0; i--) { st[i] = s; s *= (int)rs[i]; }
  for (int64_t k = 0; k < total; k++) {
    int64_t off = 0;
    for (int i = 0; i < np; i++) off += idx[i] * st[perm[i]];
    h->devices[k] = (int32_t)off;
    for (int i = np - 1; i >= 0 && ++idx[i] == rs[perm[i]]; i--) idx[i] = 0;
  }
  return true;
}

static bool explicit_devices(Cur *c, HloSharding *h) {
  bool *seen = calloc((size_t)h->ndevices, 1);
  if (!seen) return fail(c, "out of memory");
  bool ok = true;
  for (int64_t k = 0; ok && k < h->ndevices; k++) {
    int64_t d;
    if (k && !eat(c, ",")) { ok = fail(c, "the device list has fewer than the %lld tiles", (long long)h->ndevices); break; }
    if (!number(c, &d)) { ok = false; break; }
    if (d >= h->ndevices || seen[d]) ok = fail(c, "device %lld is out of range or listed twice", (long long)d);
    else { seen[d] = true; h->devices[k] = (int32_t)d; }
  }
  free(seen);
  if (ok && eat(c, ",")) return fail(c, "the device list has more than the %lld tiles", (long long)h->ndevices);
  return ok;
}

/* last_tile_dim_replicate | last_tile_dims={manual, replicated, ...} */
static bool subgroups(Cur *c, HloSharding *h) {
  if (eat(c, "last_tile_dim_replicate")) h->nsub = 1;
  else if (eat(c, "last_tile_dims={")) {
    do {
      if (!eat(c, "manual") && !eat(c, "replicated") && !eat(c, "maximal") && !eat(c, "unknown"))
        return fail(c, "last_tile_dims holds manual, replicated, maximal or unknown");
      h->nsub++;
    } while (eat(c, ","));
    if (!need(c, "}")) return false;
  }
  if (h->nsub > h->ndims) return fail(c, "more subgroup dimensions than tile dimensions");
  return true;
}

static bool tiled(Cur *c, HloSharding *h) {
  h->kind = HSH_TILED;
  int n = bracket_list(c, h->dims, HSH_MAXDIMS);
  if (n < 0) return false;
  h->ndims = n;
  h->ndevices = 1;
  for (int i = 0; i < n; i++) h->ndevices *= h->dims[i];
  if (h->ndevices < 1 || h->ndevices > HSH_MAXDEVICES)
    return fail(c, "%lld tiles: the limit is %d", (long long)h->ndevices, HSH_MAXDEVICES);
  h->devices = malloc(sizeof(int32_t) * (size_t)h->ndevices);
  if (!h->devices) return fail(c, "out of memory");
  if (!(eat(c, "<=") ? iota_devices(c, h) : explicit_devices(c, h))) return false;
  return subgroups(c, h);
}

/* metadata={...} (op names XLA attaches): skipped, strings and braces balanced. */
static void metadata(Cur *c) {
  if (!eat(c, "metadata={")) return;
  int depth = 1;
  bool str = false;
  for (; c->p < c->e && depth; c->p++) {
    if (str) { if (*c->p == '\\') c->p++; else if (*c->p == '"') str = false; }
    else if (*c->p == '"') str = true;
    else if (*c->p == '{') depth++;
    else if (*c->p == '}') depth--;
  }
}

static bool one(Cur *c, HloSharding *h, int depth);

static bool tuple(Cur *c, HloSharding *h, int depth) {
  h->kind = HSH_TUPLE;
  do {
    if (h->nelems == HSH_MAXDIMS * 4) return fail(c, "a tuple sharding of too many elements");
    HloSharding *e = realloc(h->elems, sizeof *e * (size_t)(h->nelems + 1));
    if (!e) return fail(c, "out of memory");
    h->elems = e;
    memset(&h->elems[h->nelems], 0, sizeof *e);
    if (!one(c, &h->elems[h->nelems++], depth + 1)) return false;
  } while (eat(c, ","));
  return need(c, "}");
}

static bool one(Cur *c, HloSharding *h, int depth) {
  if (depth > 8) return fail(c, "a tuple sharding nested too deeply");
  if (!need(c, "{")) return false;
  blanks(c);
  if (c->p < c->e && *c->p == '{') return tuple(c, h, depth);
  if (eat(c, "}")) { h->kind = HSH_TUPLE; return true; }   /* the empty tuple */
  if (eat(c, "replicated")) h->kind = HSH_REPLICATED;
  else if (eat(c, "manual")) h->kind = HSH_MANUAL;
  else if (eat(c, "unknown")) h->kind = HSH_UNKNOWN;
  else if (eat(c, "maximal")) {
    int64_t d;
    h->kind = HSH_MAXIMAL;
    if (!need(c, "device=") || !number(c, &d)) return false;
    if (d >= HSH_MAXDEVICES) return fail(c, "device %lld: the limit is %d", (long long)d, HSH_MAXDEVICES - 1);
    h->device = (int)d;
  } else if (eat(c, "devices=")) {
    if (!tiled(c, h)) return false;
  } else {
    return fail(c, "expected replicated, manual, unknown, maximal device=N or devices=[...] in the HLO sharding");
  }
  metadata(c);
  return need(c, "}");
}

bool hsh_parse(const char *p, int n, HloSharding *out, char *err, size_t errn) {
  memset(out, 0, sizeof *out);
  Cur c = {p, p + n, err, errn, false};
  if (!one(&c, out, 0)) { hsh_free(out); return false; }
  blanks(&c);
  if (c.p != c.e) { fail(&c, "text after the HLO sharding's closing brace"); hsh_free(out); return false; }
  return true;
}

void hsh_free(HloSharding *h) {
  for (int i = 0; i < h->nelems; i++) hsh_free(&h->elems[i]);
  free(h->elems);
  free(h->devices);
  memset(h, 0, sizeof *h);
}

int hsh_array_rank(const HloSharding *h) { return h->kind == HSH_TILED ? h->ndims - h->nsub : 0; }
