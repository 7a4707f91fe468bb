/*
** diag.c — the source-file table and the diagnostics collector.
*/
#include <stdarg.h>
#include <stdlib.h>
#include "buf.h"
#include "diag.h"
#include "err.h"

typedef struct SrcFile {
  char *name;
  char *text;
  size_t len;
  uint32_t *lines;   /* byte offset of the start of each line */
  int nlines;
  uint32_t hide;     /* bytes of line 1 not shown (diag_hide_prefix) */
} SrcFile;

static SrcFile *files;
static int nfiles, capfiles;

typedef struct Diag {
  Span sp;
  char *msg;
  char *note;        /* optional */
  Span note_sp;
  int hold;          /* held back by diag_hold_since (not printed), or 0 */
  int seq;           /* insertion order, to keep sorting stable */
} Diag;

static Diag *diags;
static int ndiags, capdiags;
static int nheld;            /* how many of them are held back */

int diag_add_file(const char *name, char *text, size_t len) {
  /* `text` is ours even if we run out of memory here (err.h cleanups);
     the entry is filled in only when everything is allocated. */
  err_defer(mem_free, text);
  int n = 1;
  for (size_t i = 0; i < len; i++) n += text[i] == '\n';
  uint32_t *lines = mem_alloc(sizeof(uint32_t) * (size_t)n);
  err_defer(mem_free, lines);
  char *nm = mem_strndup(name, strlen(name));
  err_defer(mem_free, nm);
  VEC_GROW(files, capfiles, nfiles + 1);
  err_undefer(nm);
  err_undefer(lines);
  err_undefer(text);
  SrcFile *f = &files[nfiles];
  f->name = nm;
  f->text = text;
  f->len = len;
  f->lines = lines;
  f->hide = 0;
  n = 0;
  lines[n++] = 0;
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\n') lines[n++] = (uint32_t)(i + 1);
  f->nlines = n;
  return nfiles++;
}

const char *diag_file_name(int file) {
  return file >= 0 && file < nfiles ? files[file].name : "<none>";
}

const char *diag_file_text(int file, size_t *len) {
  if (file < 0 || file >= nfiles) { if (len) *len = 0; return ""; }
  if (len) *len = files[file].len;
  return files[file].text;
}

int diag_file_count(void) { return nfiles; }

void diag_hide_prefix(int file, uint32_t n) {
  if (file >= 0 && file < nfiles) files[file].hide = n;
}

void diag_linecol(int file, uint32_t off, int *line, int *col) {
  if (file < 0 || file >= nfiles) { *line = 0; *col = 0; return; }
  SrcFile *f = &files[file];
  int lo = 0, hi = f->nlines - 1;
  while (lo < hi) {                    /* last line start <= off */
    int mid = (lo + hi + 1) / 2;
    if (f->lines[mid] <= off) lo = mid; else hi = mid - 1;
  }
  *line = lo + 1;
  *col = (int)(off - f->lines[lo]) + 1;
  if (lo == 0 && f->hide) *col = off >= f->hide ? *col - (int)f->hide : 1;
}

Str diag_line_text(int file, int line) {
  Str s = {"", 0};
  if (file < 0 || file >= nfiles || line < 1 || line > files[file].nlines) return s;
  SrcFile *f = &files[file];
  uint32_t b = f->lines[line - 1];
  uint32_t e = b;
  while (e < f->len && f->text[e] != '\n') e++;
  if (e > b && f->text[e - 1] == '\r') e--;
  if (line == 1 && f->hide) b = f->hide < e ? f->hide : e;
  s.p = f->text + b;
  s.n = (int)(e - b);
  return s;
}

static char *vformat(const char *fmt, va_list ap) {
  Buf b = {0};
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  char *s = mem_alloc((size_t)n + 1);
  vsnprintf(s, (size_t)n + 1, fmt, aq);
  va_end(aq);
  (void)b;
  return s;
}

void diag_verror(Span sp, const char *fmt, va_list ap) {
  VEC_GROW(diags, capdiags, ndiags + 1);
  Diag *d = &diags[ndiags];
  d->sp = sp;
  d->msg = vformat(fmt, ap);
  d->note = NULL;
  d->hold = 0;
  d->seq = ndiags;
  ndiags++;
}

void diag_error(Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(sp, fmt, ap);
  va_end(ap);
}

bool diag_error_once(bool *reported, Span sp, const char *fmt, va_list ap) {
  if (*reported) return false;
  *reported = true;
  diag_verror(sp, fmt, ap);
  return false;
}

void diag_note(Span sp, const char *fmt, ...) {
  if (!ndiags) return;
  Diag *d = &diags[ndiags - 1];
  if (d->note) return;
  va_list ap;
  va_start(ap, fmt);
  d->note = vformat(fmt, ap);
  d->note_sp = sp;
  va_end(ap);
}

/* The places warned about (each is warned about once). */
static Span *warned;
static int nwarned, capwarned;

/* Print a diagnostic of this kind now, unless this place had one. */
static void say_once(Span sp, const char *kind, const char *fmt, va_list ap) {
  for (int i = 0; i < nwarned; i++)
    if (warned[i].file == sp.file && warned[i].off == sp.off) return;
  VEC_GROW(warned, capwarned, nwarned + 1);
  warned[nwarned++] = sp;
  char *msg = vformat(fmt, ap);
  fflush(stdout);
  diag_print(stderr, sp, kind, msg);
  fflush(stderr);
  mem_free(msg);
}

void diag_warning(Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say_once(sp, "warning", fmt, ap);
  va_end(ap);
}

void diag_remark(Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say_once(sp, "note", fmt, ap);
  va_end(ap);
}

int diag_count(void) { return ndiags - nheld; }
int diag_mark(void) { return ndiags; }

static void diag_free_one(Diag *d) {
  mem_free(d->msg);
  mem_free(d->note);
}

void diag_truncate(int mark) {
  while (ndiags > mark) {
    nheld -= diags[ndiags - 1].hold != 0;
    diag_free_one(&diags[--ndiags]);
  }
}

void diag_hold_since(int mark, int tag) {
  for (int i = mark; i < ndiags; i++)
    if (!diags[i].hold) {
      diags[i].hold = tag;
      nheld++;
    }
}

void diag_release(int tag, bool report) {
  int k = 0;
  for (int i = 0; i < ndiags; i++) {
    if (diags[i].hold == tag) {
      nheld--;
      if (!report) { diag_free_one(&diags[i]); continue; }
      diags[i].hold = 0;
    }
    diags[k++] = diags[i];
  }
  ndiags = k;
}

static int cmp_diag(const void *a, const void *b) {
  const Diag *x = a, *y = b;
  if (x->sp.file != y->sp.file) return x->sp.file < y->sp.file ? -1 : 1;
  if (x->sp.off != y->sp.off) return x->sp.off < y->sp.off ? -1 : 1;
  return x->seq - y->seq;
}

/* Print the "  7 | text" line and the caret line under the span. */
static void print_excerpt(FILE *out, Span sp) {
  int line, col;
  diag_linecol(sp.file, sp.off, &line, &col);
  Str text = diag_line_text(sp.file, line);
  fprintf(out, "%5d | %.*s\n", line, text.n, text.p);
  fputs("      | ", out);
  for (int i = 0; i < col - 1 && i < text.n; i++) fputc(text.p[i] == '\t' ? '\t' : ' ', out);
  int len = (int)sp.len;
  if (col - 1 + len > text.n) len = text.n - (col - 1);  /* stay on this line */
  if (len < 1) len = 1;
  fputc('^', out);
  for (int i = 1; i < len; i++) fputc('~', out);
  fputc('\n', out);
}

void diag_print(FILE *out, Span sp, const char *kind, const char *msg) {
  if (sp.file < 0) {
    fprintf(out, "shmapi: %s: %s\n", kind, msg);
    return;
  }
  int line, col;
  diag_linecol(sp.file, sp.off, &line, &col);
  fprintf(out, "%s:%d:%d: %s: %s\n", diag_file_name(sp.file), line, col, kind, msg);
  print_excerpt(out, sp);
}

int diag_flush(FILE *out) {
  if (ndiags) qsort(diags, (size_t)ndiags, sizeof(Diag), cmp_diag);   /* diags may be NULL */
  const Diag *last = NULL;
  for (int i = 0; i < ndiags; i++) {
    const Diag *d = &diags[i];
    /* one error per place: a body checked for several calls fails once */
    if (d->hold || (last && d->sp.file == last->sp.file && d->sp.off == last->sp.off)) continue;
    diag_print(out, d->sp, "error", d->msg);
    if (d->note) diag_print(out, d->note_sp, "note", d->note);
    last = d;
  }
  int n = ndiags - nheld;
  diag_clear();
  return n;
}

void diag_clear(void) { diag_truncate(0); }

void diag_reset(void) {
  diag_clear();
  mem_free(diags);
  diags = NULL;
  capdiags = 0;
  mem_free(warned);
  warned = NULL;
  nwarned = capwarned = 0;
  for (int i = 0; i < nfiles; i++) {
    mem_free(files[i].name);
    mem_free(files[i].text);
    mem_free(files[i].lines);
  }
  mem_free(files);
  files = NULL;
  nfiles = capfiles = 0;
}
