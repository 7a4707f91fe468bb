/*
** diag.c — the source-file table and the diagnostics collector.
*/
#include <stdarg.h>
#include <stdlib.h>
#include "buf.h"
#include "diag.h"
#include "esc.h"
#include "err.h"
#include "state.h"

typedef struct SrcFile {
  char *name;
  char *text;
  size_t len;
  uint32_t *lines;   /* byte offset of the start of each line */
  int nlines;
  uint32_t hide;     /* bytes of line 1 not shown (diag_hide_prefix) */
} SrcFile;


typedef struct Diag {
  Span sp;
  char *msg;
  char *note;        /* optional */
  Span note_sp;
  int hold;          /* held back by diag_hold_since (not printed), or 0 */
  int seq;           /* insertion order, to keep sorting stable */
} Diag;

/* The files and the diagnostics are the current state's (state.h: files,
   nfiles, capfiles; diags, ndiags, capdiags, and nheld: how many of them are
   held back). */

int diag_add_file(const char *name, char *text, size_t len) {
  ShmState *s = state_cur();
  /* `text` is ours even if we run out of memory here (err.h cleanups);
     the entry is filled in only when everything is allocated. */
  err_defer(mem_free, text);
  int n = 1;
  for (size_t i = 0; i < len; i++) n += text[i] == '\n';
  uint32_t *lines = mem_alloc(sizeof(uint32_t) * (size_t)n);
  err_defer(mem_free, lines);
  char *nm = mem_strndup(name, strlen(name));
  err_defer(mem_free, nm);
  VEC_GROW(s->files, s->capfiles, s->nfiles + 1);
  err_undefer(nm);
  err_undefer(lines);
  err_undefer(text);
  SrcFile *f = &s->files[s->nfiles];
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
  return s->nfiles++;
}

const char *diag_file_name(int file) {
  ShmState *s = state_cur();
  return file >= 0 && file < s->nfiles ? s->files[file].name : "<none>";
}

const char *diag_file_text(int file, size_t *len) {
  ShmState *s = state_cur();
  if (file < 0 || file >= s->nfiles) { if (len) *len = 0; return ""; }
  if (len) *len = s->files[file].len;
  return s->files[file].text;
}

int diag_file_count(void) { ShmState *s = state_cur(); return s->nfiles; }

void diag_hide_prefix(int file, uint32_t n) {
  ShmState *s = state_cur();
  if (file >= 0 && file < s->nfiles) s->files[file].hide = n;
}

void diag_linecol(int file, uint32_t off, int *line, int *col) {
  ShmState *s = state_cur();
  if (file < 0 || file >= s->nfiles) { *line = 0; *col = 0; return; }
  SrcFile *f = &s->files[file];
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
  ShmState *st = state_cur();
  Str s = {"", 0};
  if (file < 0 || file >= st->nfiles || line < 1 || line > st->files[file].nlines) return s;
  SrcFile *f = &st->files[file];
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
  ShmState *s = state_cur();
  VEC_GROW(s->diags, s->capdiags, s->ndiags + 1);
  Diag *d = &s->diags[s->ndiags];
  d->sp = sp;
  d->msg = vformat(fmt, ap);
  d->note = NULL;
  d->hold = 0;
  d->seq = s->ndiags;
  s->ndiags++;
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
  ShmState *s = state_cur();
  if (!s->ndiags) return;
  Diag *d = &s->diags[s->ndiags - 1];
  if (d->note) return;
  va_list ap;
  va_start(ap, fmt);
  d->note = vformat(fmt, ap);
  d->note_sp = sp;
  va_end(ap);
}

/* Print a diagnostic of this kind now, to the state's errout sink, unless
   this place had one (each place is warned about once). */
static void say_once(Span sp, const char *kind, const char *fmt, va_list ap) {
  ShmState *s = state_cur();
  for (int i = 0; i < s->nwarned; i++)
    if (s->warned[i].file == sp.file && s->warned[i].off == sp.off) return;
  VEC_GROW(s->warned, s->capwarned, s->nwarned + 1);
  s->warned[s->nwarned++] = sp;
  char *msg = vformat(fmt, ap);
  char *text = diag_render(sp, kind, msg);
  mem_free(msg);
  if (text) state_errout(text, strlen(text));
  free(text);
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

int diag_count(void) { ShmState *s = state_cur(); return s->ndiags - s->nheld; }
int diag_mark(void) { ShmState *s = state_cur(); return s->ndiags; }

static void diag_free_one(Diag *d) {
  mem_free(d->msg);
  mem_free(d->note);
}

void diag_truncate(int mark) {
  ShmState *s = state_cur();
  while (s->ndiags > mark) {
    s->nheld -= s->diags[s->ndiags - 1].hold != 0;
    diag_free_one(&s->diags[--s->ndiags]);
  }
}

void diag_hold_since(int mark, int tag) {
  ShmState *s = state_cur();
  for (int i = mark; i < s->ndiags; i++)
    if (!s->diags[i].hold) {
      s->diags[i].hold = tag;
      s->nheld++;
    }
}

void diag_release(int tag, bool report) {
  ShmState *s = state_cur();
  int k = 0;
  for (int i = 0; i < s->ndiags; i++) {
    if (s->diags[i].hold == tag) {
      s->nheld--;
      if (!report) { diag_free_one(&s->diags[i]); continue; }
      s->diags[i].hold = 0;
    }
    s->diags[k++] = s->diags[i];
  }
  s->ndiags = k;
}

static int cmp_diag(const void *a, const void *b) {
  const Diag *x = a, *y = b;
  if (x->sp.file != y->sp.file) return x->sp.file < y->sp.file ? -1 : 1;
  if (x->sp.off != y->sp.off) return x->sp.off < y->sp.off ? -1 : 1;
  return x->seq - y->seq;
}

/* ---- the quoted line under a diagnostic --------------------------------------- */

/* A line of width up to QUOTE_WHOLE columns is quoted whole; a longer one
   as a window of QUOTE_WINDOW columns around the span, with "..." where it
   is cut, QUOTE_LEFT columns of it before the span when the span is far
   from the start (as rustc and clang clip long lines). */
enum { QUOTE_WHOLE = 160, QUOTE_WINDOW = 120, QUOTE_LEFT = 50, TAB_STOP = 8 };

/* The columns a character of the line takes where the line is shown
   (esc.h), a tab up to the next tab stop. */
static int unit_width(const char *p, size_t n, int at, int *len) {
  char show[9];
  int w;
  *len = esc_char(p, n, ESC_KEEP_TAB, show, &w);
  return *p == '\t' ? TAB_STOP - at % TAB_STOP : w;
}

/* Print the characters of text[b..e) escaped (quote), or what goes under
   each of them (not quote): a tab under a tab (whole lines keep their
   tabs, so the terminal's tab stops agree on both lines) or spaces
   (`expand`, a clipped line, where a tab becomes spaces), '^' then '~'
   under the span [sb, se) (byte offsets).  `at` is the column of b. */
static void quote_units(FILE *out, bool quote, Str text, int b, int e, int sb, int se, bool expand, int at) {
  for (int i = b; i < e && (quote || i < se);) {
    char show[9];
    int w, len;
    esc_char(text.p + i, (size_t)(text.n - i), ESC_KEEP_TAB, show, &w);
    w = unit_width(text.p + i, (size_t)(text.n - i), at, &len);
    bool tab = text.p[i] == '\t', in = i >= sb && i < se;
    if (quote && tab && expand) fprintf(out, "%*s", w, "");
    else if (quote) fputs(show, out);
    else if (tab && !expand) fputc(in ? (i == sb ? '^' : '~') : '\t', out);
    else
      for (int k = 0; k < w; k++) fputc(in ? (i == sb && k == 0 ? '^' : '~') : ' ', out);
    at += w;
    i += len;
  }
}

/* Print the "  7 | text" line and the caret line under the span. */
static void print_excerpt(FILE *out, Span sp) {
  int line, col;
  diag_linecol(sp.file, sp.off, &line, &col);
  Str text = diag_line_text(sp.file, line);
  int sb = col - 1 < text.n ? col - 1 : text.n;            /* the span's bytes on this line */
  int se = sb + (int)sp.len < text.n ? sb + (int)sp.len : text.n;
  if (se <= sb) se = sb + 1;
  /* the columns of the span's two ends, and of the line */
  int total = 0, c0 = -1, c1 = -1;
  for (int i = 0, len; i < text.n; i += len) {
    if (i == sb) c0 = total;
    if (i == se) c1 = total;
    total += unit_width(text.p + i, (size_t)(text.n - i), total, &len);
  }
  if (c0 < 0) c0 = total;
  if (c1 < 0) c1 = total;
  /* the window [lo, hi) of columns shown */
  int lo = 0, hi = total;
  bool clip = total > QUOTE_WHOLE;
  if (clip) {
    if (c1 > QUOTE_WINDOW - 10 && c0 > QUOTE_LEFT) lo = c0 - QUOTE_LEFT;
    hi = lo + QUOTE_WINDOW < total ? lo + QUOTE_WINDOW : total;
    lo = hi - QUOTE_WINDOW;
  }
  /* ... as bytes, cut between characters: [b, e), b at column lo_at */
  int b = 0, e = text.n, lo_at = 0;
  for (int i = 0, len, at = 0; i < text.n && clip; i += len) {
    int w = unit_width(text.p + i, (size_t)(text.n - i), at, &len);
    if (at < lo) b = i + len, lo_at = at + w;
    if (at + w > hi && e == text.n) e = i;
    at += w;
  }
  fprintf(out, "%5d | %s", line, b > 0 ? "..." : "");
  quote_units(out, true, text, b, e, sb, se, clip, lo_at);
  fprintf(out, "%s\n      | %s", e < text.n ? "..." : "", b > 0 ? "   " : "");
  quote_units(out, false, text, b, e, sb, se, clip, lo_at);
  fputs(sb >= e ? "^\n" : "\n", out);    /* (the span at the end of the line) */
}

void diag_print(FILE *out, Span sp, const char *kind, const char *msg) {
  if (sp.file < 0) {
    fprintf(out, "shmapi: %s: ", kind);
    esc_fputs(out, msg, strlen(msg), ESC_KEEP_NL | ESC_KEEP_TAB);
    fputc('\n', out);
    return;
  }
  int line, col;
  diag_linecol(sp.file, sp.off, &line, &col);
  const char *name = diag_file_name(sp.file);
  esc_fputs(out, name, strlen(name), 0);
  fprintf(out, ":%d:%d: %s: ", line, col, kind);
  esc_fputs(out, msg, strlen(msg), ESC_KEEP_NL | ESC_KEEP_TAB);
  fputc('\n', out);
  print_excerpt(out, sp);
}

char *diag_render(Span sp, const char *kind, const char *msg) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  if (kind) diag_print(f, sp, kind, msg);
  else {
    fputs("shmapi: ", f);
    esc_fputs(f, msg, strlen(msg), ESC_KEEP_NL | ESC_KEEP_TAB);
    fputc('\n', f);
  }
  if (fclose(f)) {
    free(text);
    return NULL;
  }
  return text;
}

void diag_report(Span sp, const char *kind, const char *msg) { diag_report_trace(sp, kind, msg, NULL); }

void diag_report_trace(Span sp, const char *kind, const char *msg, const char *trace) {
  ShmState *s = state_cur();
  if (s->on_report) {
    s->on_report(s->on_report_ud, sp, kind, msg, trace);
    return;
  }
  if (!s->errout) return;
  char *text = diag_render(sp, kind, msg);
  if (trace) state_errout(trace, strlen(trace));
  if (text) state_errout(text, strlen(text));
  free(text);
}

/* ---- tracebacks ------------------------------------------------------------------- */

enum { TRACE_MAX = 40, TRACE_QUOTE = 120 };

static void trace_entry(FILE *f, const DiagCall *c) {
  int line, col;
  diag_linecol(c->at.file, c->at.off, &line, &col);
  const char *name = diag_file_name(c->at.file);
  fputs("  ", f);
  esc_fputs(f, name, strlen(name), 0);
  fprintf(f, ":%d:%d, ", line, col);
  if (c->in) {
    fputs("in ", f);
    esc_fputs(f, c->in, strlen(c->in), 0);
  } else {
    fputs("at top level", f);
  }
  Str text = diag_line_text(c->at.file, line);
  while (text.n && (*text.p == ' ' || *text.p == '\t')) text.p++, text.n--;
  char quote[TRACE_QUOTE + 4];
  fprintf(f, "\n    %s\n", esc_into(quote, sizeof quote, text.p, (size_t)text.n, 0));
}

char *diag_traceback(const DiagCall *calls, int n) {
  if (n <= 0) return NULL;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  fputs("Traceback (most recent call last):\n", f);
  int head = n > TRACE_MAX ? TRACE_MAX / 2 : n;       /* the first calls, and the last */
  for (int i = 0; i < head; i++) trace_entry(f, &calls[i]);
  if (head < n) {
    fprintf(f, "  ... %d more calls ...\n", n - TRACE_MAX);
    for (int i = n - TRACE_MAX / 2; i < n; i++) trace_entry(f, &calls[i]);
  }
  if (fclose(f)) {
    free(text);
    return NULL;
  }
  return text;
}

int diag_take(DiagFn fn, void *ud) {
  ShmState *s = state_cur();
  if (s->ndiags) qsort(s->diags, (size_t)s->ndiags, sizeof(Diag), cmp_diag);   /* (diags may be NULL) */
  const Diag *last = NULL;
  for (int i = 0; i < s->ndiags; i++) {
    const Diag *d = &s->diags[i];
    /* one error per place: a body checked for several calls fails once */
    if (d->hold || (last && d->sp.file == last->sp.file && d->sp.off == last->sp.off)) continue;
    fn(ud, d->sp, "error", d->msg);
    if (d->note) fn(ud, d->note_sp, "note", d->note);
    last = d;
  }
  int n = s->ndiags - s->nheld;
  diag_clear();
  return n;
}

static void print_one(void *out, Span sp, const char *kind, const char *msg) { diag_print(out, sp, kind, msg); }

int diag_flush(FILE *out) { return diag_take(print_one, out); }

void diag_clear(void) { diag_truncate(0); }

void diag_state_release(ShmState *s) {
  (void)s;                       /* (the current state: state_free entered it) */
  diag_reset();
}

void diag_reset(void) {
  ShmState *s = state_cur();
  diag_clear();
  mem_free(s->diags);
  s->diags = NULL;
  s->capdiags = 0;
  mem_free(s->warned);
  s->warned = NULL;
  s->nwarned = s->capwarned = 0;
  for (int i = 0; i < s->nfiles; i++) {
    mem_free(s->files[i].name);
    mem_free(s->files[i].text);
    mem_free(s->files[i].lines);
  }
  mem_free(s->files);
  s->files = NULL;
  s->nfiles = s->capfiles = 0;
}
