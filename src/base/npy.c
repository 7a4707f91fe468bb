/*
** npy.c — reading and writing NumPy's .npy format, reading .npz archives.
**
** The header is parsed as the small Python dict literal it is, fully
** validated: exactly the keys descr, fortran_order and shape, each once; a
** descr shmapi has a dtype for; a shape of non-negative integers whose
** element count fits; then exactly as many data bytes as that needs.
*/
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <zip.h>
#include "dynlib.h"
#include "err.h"
#include "npy.h"

static const unsigned char MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* err = the formatted message; returns NULL (false) for `return fail(...)`. */
static void *fail(char *err, const char *fmt, ...) SHM_PRINTF(2, 3);
static void *fail(char *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, NPY_ERRLEN, fmt, ap);
  va_end(ap);
  return NULL;
}

/* ---- the header: a Python dict literal ----------------------------------------- */

typedef struct Hdr {
  const char *p, *e;
  int dt;                        /* -1 until descr is read */
  bool swap;                     /* big-endian data */
  bool fortran;
  int rank;
  int64_t shape[SHM_MAXRANK];
  int seen;                      /* bits: descr 1, fortran_order 2, shape 4 */
} Hdr;

static void ws(Hdr *h) {
  while (h->p < h->e && (*h->p == ' ' || *h->p == '\t')) h->p++;
}

static bool eat(Hdr *h, char c) {
  ws(h);
  if (h->p < h->e && *h->p == c) { h->p++; return true; }
  return false;
}

/* A quoted string into out (no escapes: NumPy writes none here). */
static bool str_lit(Hdr *h, char *out, size_t cap) {
  ws(h);
  if (h->p >= h->e || (*h->p != '\'' && *h->p != '"')) return false;
  char q = *h->p++;
  size_t n = 0;
  while (h->p < h->e && *h->p != q) {
    if (*h->p == '\\' || n + 1 >= cap) return false;
    out[n++] = *h->p++;
  }
  if (h->p >= h->e) return false;
  h->p++;
  out[n] = 0;
  return true;
}

/* The dtype of a descr: a byte order (<, >, |, =), a kind and a size. */
static int descr_dtype(const char *d, bool *swap) {
  static const struct { const char *k; int dt; } kinds[] = {
    {"b1", DT_BOOL}, {"i1", DT_I8}, {"i2", DT_I16}, {"i4", DT_I32}, {"i8", DT_I64},
    {"u1", DT_U8}, {"u2", DT_U16}, {"u4", DT_U32}, {"u8", DT_U64}, {"f2", DT_F16},
    {"f4", DT_F32}, {"f8", DT_F64}, {"c8", DT_C64}, {"c16", DT_C128}, {"V2", DT_BF16},
  };
  char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return -1;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strcmp(d + 1, kinds[i].k)) {
      *swap = order == '>' && dtype_sizes[kinds[i].dt] > 1;
      return kinds[i].dt;
    }
  return -1;
}

static bool hdr_descr(Hdr *h, char *err) {
  char d[64];
  ws(h);
  if (h->p < h->e && *h->p == '[')
    return fail(err, "it holds a structured dtype (records of named fields), which shmapi has not"), false;
  if (!str_lit(h, d, sizeof d)) return fail(err, "its header's 'descr' is not a dtype string such as '<f4'"), false;
  h->dt = descr_dtype(d, &h->swap);
  if (h->dt < 0)
    return fail(err, "its dtype '%s' is not one shmapi has (bool, int8 ... uint64, float16, float32, float64, "
                "complex64, complex128, and bfloat16 as '<V2')", d), false;
  return true;
}

static bool hdr_bool(Hdr *h, bool *out) {
  ws(h);
  if (h->e - h->p >= 4 && !memcmp(h->p, "True", 4)) { h->p += 4; *out = true; return true; }
  if (h->e - h->p >= 5 && !memcmp(h->p, "False", 5)) { h->p += 5; *out = false; return true; }
  return false;
}

static bool hdr_shape(Hdr *h, char *err) {
  if (!eat(h, '(')) return fail(err, "its header's 'shape' is not a tuple"), false;
  h->rank = 0;
  int64_t count = 1;
  for (;;) {
    ws(h);
    if (eat(h, ')')) break;
    if (h->p >= h->e || *h->p < '0' || *h->p > '9') return fail(err, "its header's 'shape' is not a tuple of integers"), false;
    int64_t v = 0;
    while (h->p < h->e && *h->p >= '0' && *h->p <= '9') {
      if (v > (INT64_MAX - 9) / 10) return fail(err, "its header's shape has a dimension too large"), false;
      v = v * 10 + (*h->p++ - '0');
    }
    if (h->p < h->e && *h->p == 'L') h->p++;         /* Python 2's long */
    if (h->rank == SHM_MAXRANK) return fail(err, "its rank is above shmapi's limit of %d", SHM_MAXRANK), false;
    h->shape[h->rank++] = v;
    if (v && count > (INT64_MAX / 16) / v) return fail(err, "its shape has too many elements"), false;
    count *= v;
    if (!eat(h, ',')) {
      if (!eat(h, ')')) return fail(err, "its header's 'shape' is not a tuple of integers"), false;
      if (h->rank == 1) return fail(err, "its header's 'shape' is not a tuple of integers"), false;   /* (3) */
      break;
    }
  }
  return true;
}

/* Parse the header text [p, e): the dict, then spaces and a newline. */
static bool parse_header(Hdr *h, char *err) {
  h->dt = -1;
  if (!eat(h, '{')) return fail(err, "its header is not a Python dict"), false;
  for (;;) {
    if (eat(h, '}')) break;
    char key[32];
    if (!str_lit(h, key, sizeof key)) return fail(err, "its header is not a Python dict of string keys"), false;
    if (!eat(h, ':')) return fail(err, "its header is not a Python dict (a ':' is missing after '%s')", key), false;
    int bit = !strcmp(key, "descr") ? 1 : !strcmp(key, "fortran_order") ? 2 : !strcmp(key, "shape") ? 4 : 0;
    if (!bit) return fail(err, "its header has the key '%s' (a .npy header has descr, fortran_order and shape)", key), false;
    if (h->seen & bit) return fail(err, "its header gives '%s' twice", key), false;
    h->seen |= bit;
    if (bit == 1 && !hdr_descr(h, err)) return false;
    if (bit == 2 && !hdr_bool(h, &h->fortran)) return fail(err, "its header's 'fortran_order' is not True or False"), false;
    if (bit == 4 && !hdr_shape(h, err)) return false;
    if (!eat(h, ',')) {
      if (!eat(h, '}')) return fail(err, "its header is not a Python dict (a ',' or '}' is missing)"), false;
      break;
    }
  }
  if (h->seen != 7)
    return fail(err, "its header lacks '%s'", !(h->seen & 1) ? "descr" : !(h->seen & 2) ? "fortran_order" : "shape"), false;
  while (h->p < h->e && (*h->p == ' ' || *h->p == '\t' || *h->p == '\x0c')) h->p++;
  if (h->p >= h->e || h->e[-1] != '\n' || h->p != h->e - 1)
    return fail(err, "its header has something after the dict"), false;
  return true;
}

/* ---- data ------------------------------------------------------------------------ */

static void swap_bytes(unsigned char *p, int64_t n, int size) {
  for (int64_t i = 0; i < n; i++, p += size)
    for (int a = 0, b = size - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

static void release_array(void *a) { arr_unref(a); }

Array *npy_parse(const unsigned char *buf, size_t n, const char *what, char *err) {
  if (n >= 4 && !memcmp(buf, "PK\x03\x04", 4))
    return fail(err, "'%s' is an .npz archive: name the array to load (load \"file.npz\" \"name\")", what);
  if (n < 6 || memcmp(buf, MAGIC, 6))
    return fail(err, "'%s' is not a .npy file (it does not begin with NumPy's magic string)", what);
  if (n < 10) return fail(err, "'%s' is truncated: its header is cut off", what);
  int major = buf[6];
  size_t hlen, hoff;
  if (major == 1) { hlen = buf[8] | (size_t)buf[9] << 8; hoff = 10; }
  else if (major == 2 || major == 3) {
    if (n < 12) return fail(err, "'%s' is truncated: its header is cut off", what);
    hlen = buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    hoff = 12;
  } else {
    return fail(err, "'%s' is a .npy file of format version %d.%d, which shmapi does not know (1.0 to 3.0)", what,
                major, buf[7]);
  }
  if (hlen > n - hoff) return fail(err, "'%s' is truncated: its header is cut off", what);
  Hdr h;
  memset(&h, 0, sizeof h);
  h.p = (const char *)buf + hoff;
  h.e = h.p + hlen;
  char msg[NPY_ERRLEN];
  if (!parse_header(&h, msg)) return fail(err, "'%s': %s", what, msg);
  size_t off = hoff + hlen, es = dtype_sizes[h.dt];
  int64_t count = shape_size(h.rank, h.shape);
  if ((uint64_t)count > (n - off) / es) {
    char shp[24 * SHM_MAXRANK + 8];
    int k = 0;
    for (int d = 0; d < h.rank; d++) k += snprintf(shp + k, sizeof shp - (size_t)k, "%s%lld", d ? "," : "", (long long)h.shape[d]);
    shp[k] = 0;
    return fail(err, "'%s' is truncated: %s[%s] needs %lld bytes of data, the file has %zu", what, dtype_names[h.dt], shp,
                (long long)count * (long long)es, n - off);
  }
  /* Fortran order: the data of the transpose, in C order */
  int64_t shp[SHM_MAXRANK];
  for (int d = 0; d < h.rank; d++) shp[d] = h.fortran ? h.shape[h.rank - 1 - d] : h.shape[d];
  Array *a = arr_new((DType)h.dt, h.rank, shp);
  memcpy(a->data, buf + off, (size_t)count * es);
  if (h.swap) swap_bytes(a->data, dtype_is_complex((DType)h.dt) ? 2 * count : count,
                         dtype_is_complex((DType)h.dt) ? (int)es / 2 : (int)es);
  if (h.fortran && h.rank > 1) {
    int perm[SHM_MAXRANK];
    for (int d = 0; d < h.rank; d++) perm[d] = h.rank - 1 - d;
    err_defer(release_array, a);
    Array *t = arr_permuted(a, perm);
    err_undefer(a);
    arr_unref(a);
    a = t;
  }
  return a;
}

/* ---- files ------------------------------------------------------------------------ */

static void close_file(void *f) { fclose(f); }
static void free_at(void *pp) { mem_free(*(void **)pp); }

/* The whole file into *buf (mem_alloc'ed), its size into *n. */
static bool read_file(const char *path, unsigned char **buf, size_t *n, char *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return fail(err, "cannot open '%s': %s", path, strerror(errno)), false;
  err_defer(close_file, f);
  size_t cap = 1 << 16, len = 0;
  *buf = NULL;
  err_defer(free_at, buf);
  *buf = mem_alloc(cap);
  for (;;) {
    if (len == cap) {
      cap *= 2;
      *buf = mem_realloc(*buf, cap);
    }
    size_t got = fread(*buf + len, 1, cap - len, f);
    if (got == 0) break;
    len += got;
  }
  bool bad = ferror(f);
  err_undefer(buf);
  err_undefer(f);
  fclose(f);
  if (bad) {
    mem_free(*buf);
    *buf = NULL;
    return fail(err, "cannot read '%s'", path), false;
  }
  *n = len;
  return true;
}

/* ---- .npz archives, through libzip (opened on first use: dynlib.h) ---------------- */

#define ZIP_FNS(X)                                                                                   \
  X(zip_discard) X(zip_error_init) X(zip_source_buffer_create) X(zip_open_from_source)              \
  X(zip_source_free) X(zip_error_code_zip) X(zip_error_fini) X(zip_open) X(zip_name_locate)         \
  X(zip_get_num_entries) X(zip_get_name) X(zip_stat_index) X(zip_fopen_index) X(zip_fread) X(zip_fclose)
#define ZIP_PTR(fn) __typeof__(fn) *fn;
static struct { ZIP_FNS(ZIP_PTR) } zl;
#undef ZIP_PTR

static DynLib libzip = DYN_LIB_INIT;

static void zip_open_lib(void) {
  static const char *const names[] = {"libzip.so.4", "libzip.so.5", "libzip.so", NULL};
  void *h = dyn_open(names, libzip.why, sizeof libzip.why);
  bool ok = h != NULL;
#define ZIP_SYM(fn) DYN_SYM(zl, h, fn, ok, libzip.why, sizeof libzip.why);
  ZIP_FNS(ZIP_SYM)
#undef ZIP_SYM
  libzip.ok = ok;
}

/* libzip, opened once; false with why in err when it cannot be. */
static bool zip_lib(char *err) {
  if (dyn_load(&libzip, zip_open_lib)) return true;
  fail(err, ".npz archives are read with libzip, which %s", libzip.why);
  return false;
}

static void close_zip(void *z) { zl.zip_discard(z); }
static void close_member(void *f) { zl.zip_fclose(f); }

/* The archive at path, or in data[0..n) when data is not NULL. */
static zip_t *open_zip(const char *path, const unsigned char *data, size_t n, char *err) {
  if (!zip_lib(err)) return NULL;
  int zerr = 0;
  zip_t *z = NULL;
  if (data) {
    zip_error_t ze;
    zl.zip_error_init(&ze);
    zip_source_t *src = zl.zip_source_buffer_create(data, n, 0, &ze);
    if (src && !(z = zl.zip_open_from_source(src, ZIP_RDONLY, &ze))) zl.zip_source_free(src);
    zerr = zl.zip_error_code_zip(&ze);
    zl.zip_error_fini(&ze);
  } else {
    z = zl.zip_open(path, ZIP_RDONLY, &zerr);
  }
  if (!z) {
    if (!data && (zerr == ZIP_ER_NOENT || zerr == ZIP_ER_OPEN)) return fail(err, "cannot open '%s': %s", path, strerror(errno));
    return fail(err, "'%s' is not an .npz archive (not a zip file that libzip can read)", path);
  }
  return z;
}

/* The bytes of the archive member `key.npy` (or `key`). */
static bool read_member(const char *path, const unsigned char *data, size_t dn, const char *key, unsigned char **buf,
                        size_t *n, char *err) {
  zip_t *z = open_zip(path, data, dn, err);
  if (!z) return false;
  err_defer(close_zip, z);
  char name[512];
  snprintf(name, sizeof name, "%s.npy", key);
  zip_int64_t idx = zl.zip_name_locate(z, name, 0);
  if (idx < 0) idx = zl.zip_name_locate(z, key, 0);
  if (idx < 0) {
    char list[256] = "";
    size_t ln = 0;
    zip_int64_t cnt = zl.zip_get_num_entries(z, 0);
    for (zip_int64_t i = 0; i < cnt && ln < sizeof list - 40; i++) {
      const char *nm = zl.zip_get_name(z, (zip_uint64_t)i, 0);
      if (!nm) continue;
      size_t l = strlen(nm);
      if (l > 4 && !strcmp(nm + l - 4, ".npy")) l -= 4;
      ln += (size_t)snprintf(list + ln, sizeof list - ln, "%s'%.*s'", ln ? ", " : "", (int)l, nm);
    }
    err_undefer(z);
    zl.zip_discard(z);
    return fail(err, "'%s' has no array '%s' (it has %s)", path, key, ln ? list : "none"), false;
  }
  zip_stat_t st;
  if (zl.zip_stat_index(z, (zip_uint64_t)idx, 0, &st) || !(st.valid & ZIP_STAT_SIZE) || st.size > ((zip_uint64_t)1 << 40)) {
    err_undefer(z);
    zl.zip_discard(z);
    return fail(err, "'%s': cannot read the member '%s'", path, name), false;
  }
  zip_file_t *zf = zl.zip_fopen_index(z, (zip_uint64_t)idx, 0);
  if (!zf) {
    err_undefer(z);
    zl.zip_discard(z);
    return fail(err, "'%s': cannot read the member '%s' (damaged or compressed in a way libzip cannot read)", path, name), false;
  }
  *buf = NULL;
  err_defer(free_at, buf);
  err_defer(close_member, zf);
  /* Read as the data comes: the size in the archive's directory may lie
     (a damaged or crafted file), so the buffer grows only as far as the
     data really goes, never to a size nothing backs. */
  size_t want = (size_t)st.size, cap = want < ((size_t)1 << 20) ? want : (size_t)1 << 20, len = 0;
  *buf = mem_alloc(cap ? cap : 1);
  zip_int64_t got = 0;
  while (len < want) {
    if (len == cap) {
      cap = cap > want / 2 ? want : cap * 2;
      *buf = mem_realloc(*buf, cap);
    }
    got = zl.zip_fread(zf, *buf + len, cap - len);
    if (got <= 0) break;
    len += (size_t)got;
  }
  err_undefer(zf);
  zl.zip_fclose(zf);
  err_undefer(buf);
  err_undefer(z);
  zl.zip_discard(z);
  if (got < 0 || len != want) {
    mem_free(*buf);
    *buf = NULL;
    return fail(err, "'%s': the member '%s' is damaged (its data does not read back whole)", path, name), false;
  }
  *n = len;
  return true;
}

/* A member of an archive read from a file or held in memory, parsed. */
static Array *load_member(const char *path, const unsigned char *data, size_t dn, const char *key, char *err) {
  unsigned char *buf = NULL;
  size_t n = 0;
  if (!read_member(path, data, dn, key, &buf, &n, err)) return NULL;
  err_defer(free_at, &buf);
  char what[600];
  snprintf(what, sizeof what, "%s[%s]", path, key);
  Array *a = npy_parse(buf, n, what, err);
  err_undefer(&buf);
  mem_free(buf);
  return a;
}

Array *npy_parse_npz(const unsigned char *data, size_t n, const char *key, char *err) {
  return load_member("<memory>", data, n, key, err);
}

Array *npy_load(const char *path, const char *key, char *err) {
  if (key) return load_member(path, NULL, 0, key, err);
  unsigned char *buf = NULL;
  size_t n = 0;
  if (!read_file(path, &buf, &n, err)) return NULL;
  err_defer(free_at, &buf);
  Array *a = npy_parse(buf, n, path, err);
  err_undefer(&buf);
  mem_free(buf);
  return a;
}

/* ---- writing ---------------------------------------------------------------------- */

static const char *descr_of(DType dt) {
  switch (dt) {
  case DT_BOOL: return "|b1";
  case DT_I8: return "|i1";
  case DT_U8: return "|u1";
  case DT_I16: return "<i2";
  case DT_I32: return "<i4";
  case DT_I64: return "<i8";
  case DT_U16: return "<u2";
  case DT_U32: return "<u4";
  case DT_U64: return "<u8";
  case DT_F16: return "<f2";
  case DT_F32: return "<f4";
  case DT_F64: return "<f8";
  case DT_C64: return "<c8";
  case DT_C128: return "<c16";
  case DT_BF16: return "<V2";
  default: return "?";
  }
}

void npy_encode(const Array *a, unsigned char **out, size_t *n) {
  char hdr[64 + 24 * SHM_MAXRANK];
  int h = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr_of((DType)a->dt));
  for (int d = 0; d < a->rank; d++)
    h += snprintf(hdr + h, sizeof hdr - (size_t)h, "%s%lld", d ? ", " : "", (long long)a->shape[d]);
  h += snprintf(hdr + h, sizeof hdr - (size_t)h, "%s), }", a->rank == 1 ? "," : "");
  /* NumPy pads magic, version, length and header to a multiple of 64 */
  size_t total = (size_t)(10 + h + 1 + 63) / 64 * 64, len = total - 10;
  size_t bytes = arr_nbytes(a);
  unsigned char *b = mem_alloc(total + bytes);
  memcpy(b, MAGIC, 6);
  b[6] = 1;
  b[7] = 0;
  b[8] = (unsigned char)(len & 0xff);
  b[9] = (unsigned char)(len >> 8);
  memcpy(b + 10, hdr, (size_t)h);
  memset(b + 10 + h, ' ', len - (size_t)h - 1);
  b[total - 1] = '\n';
  memcpy(b + total, a->data, bytes);
  *out = b;
  *n = total + bytes;
}

bool npy_save(const char *path, const Array *a, char *err) {
  unsigned char *b = NULL;
  size_t n;
  npy_encode(a, &b, &n);
  err_defer(free_at, &b);
  FILE *f = fopen(path, "wb");
  if (!f) {
    err_undefer(&b);
    mem_free(b);
    return fail(err, "cannot write '%s': %s", path, strerror(errno)), false;
  }
  bool ok = fwrite(b, 1, n, f) == n;
  ok = !fclose(f) && ok;
  err_undefer(&b);
  mem_free(b);
  if (!ok) return fail(err, "cannot write '%s': %s", path, strerror(errno)), false;
  return true;
}
