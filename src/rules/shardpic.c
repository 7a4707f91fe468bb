/*
** shardpic.c — pictures of where the blocks of an array are (see shardpic.h).
*/
#include "shardpic.h"

#include <langinfo.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "err.h"
#include "mem.h"
#include "tiling.h"

enum { LAYOUT_MAXH = 3 };

int pic_width(void) {
  if (!isatty(STDOUT_FILENO)) return 80;
  const char *c = getenv("COLUMNS");
  if (c && atoi(c) >= 20) return atoi(c);
  struct winsize ws;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  return 80;
}

bool pic_unicode(void) {
  const char *old = setlocale(LC_CTYPE, NULL);
  char *keep = old ? mem_strndup(old, strlen(old)) : NULL;
  setlocale(LC_CTYPE, "");
  const char *cs = nl_langinfo(CODESET);
  bool utf8 = cs && (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8"));
  if (keep) setlocale(LC_CTYPE, keep);
  mem_free(keep);
  return utf8;
}

/* The block index along each of (up to 2) picture dimensions that device
   d holds: rows in *r, columns in *c (a block start, in blocks). */
static void cell_of(const Mesh *m, const Spec *spc, int rank, int64_t d, int64_t *r, int64_t *c) {
  static const int64_t one[2] = {1, 1};
  int64_t coords[SHM_MAXAXES], idx[2] = {0, 0};
  til_coords(m, d, coords);
  til_block_start(m, spc, coords, one, rank < 2 ? rank : 2, idx);
  *r = rank == 2 ? idx[0] : 0;
  *c = rank == 2 ? idx[1] : idx[0];
}

/* "CPU 0,2,4,6" (runs of three or more as 0-3): the devices holding cell. */
static void cell_label(Buf *b, const Mesh *m, const Spec *spc, int rank, int64_t row, int64_t col) {
  buf_puts(b, "CPU ");
  if (!m) { buf_putc(b, '0'); return; }
  int64_t prev = -2, run = -1;
  bool first = true;
  for (int64_t d = 0; d <= m->ndev; d++) {
    int64_t r = -1, c = -1;
    if (d < m->ndev) cell_of(m, spc, rank, d, &r, &c);
    bool in = d < m->ndev && r == row && c == col;
    if (in && d == prev + 1 && run >= 0) { prev = d; continue; }
    if (run >= 0) {                      /* close the run run..prev */
      if (prev - run >= 2) buf_printf(b, "-%lld", (long long)prev);
      else if (prev > run) buf_printf(b, ",%lld", (long long)prev);
      run = -1;
    }
    if (!in) continue;
    buf_printf(b, "%s%lld", first ? "" : ",", (long long)d);
    first = false;
    run = prev = d;
  }
}

/* One horizontal rule: left, fill, joint, right pieces. */
static void rule_line(Buf *b, int64_t ncols, int w, const char *l, const char *f, const char *j, const char *r) {
  buf_puts(b, l);
  for (int64_t c = 0; c < ncols; c++) {
    if (c) buf_puts(b, j);
    for (int i = 0; i < w; i++) buf_puts(b, f);
  }
  buf_puts(b, r);
  buf_putc(b, '\n');
}

/* The boxes' labels, released by a runtime error too. */
typedef struct Labels {
  Buf *b;
  int64_t n;
} Labels;

static void labels_free(void *p) {
  Labels *L = p;
  for (int64_t i = 0; i < L->n; i++) buf_free(&L->b[i]);
  mem_free(L->b);
}

bool pic_draw(Buf *b, const Mesh *m, const Spec *spc, int rank, const int64_t *shape, int width, bool unicode) {
  if (rank > 2) {
    buf_printf(b, "a picture shows arrays of rank 1 or 2, not %d", rank);
    return false;
  }
  int64_t nrows = rank == 2 ? til_blocks_along(m, spc, 0) : 1, ncols = rank == 2 ? til_blocks_along(m, spc, 1)
                                                                   : rank == 1 ? til_blocks_along(m, spc, 0) : 1;
  Labels L = {mem_calloc(sizeof(Buf) * (size_t)(nrows * ncols)), nrows * ncols};
  Buf *labels = L.b;
  err_defer(labels_free, &L);
  size_t maxlab = 0;
  for (int64_t r = 0; r < nrows; r++)
    for (int64_t c = 0; c < ncols; c++) {
      Buf *l = &labels[r * ncols + c];
      cell_label(l, m, spc, rank, r, c);
      if (l->n > maxlab) maxlab = l->n;
    }
  /* proportions: a 2-D array as wide as its columns against its rows */
  double ratio = rank == 2 && shape[0] > 0 ? (double)shape[1] / (double)shape[0] : 1.0;
  int total = ratio < 1 ? (int)(width * ratio) : width - 1;
  int w = (int)((total - 1) / ncols) - 1;
  if (w < (int)maxlab + 2) w = (int)maxlab + 2;
  int h = 1;
  if (rank == 2) {
    h = (int)((double)(ncols * (w + 1)) / ratio / 3.0 / (double)nrows);
    if (h < 1) h = 1;
    if (h > LAYOUT_MAXH) h = LAYOUT_MAXH;
  }
  const char *H = unicode ? "\u2500" : "-", *V = unicode ? "\u2502" : "|";
  rule_line(b, ncols, w, unicode ? "\u250c" : "+", H, unicode ? "\u252c" : "+", unicode ? "\u2510" : "+");
  for (int64_t r = 0; r < nrows; r++) {
    if (r) rule_line(b, ncols, w, unicode ? "\u251c" : "+", H, unicode ? "\u253c" : "+", unicode ? "\u2524" : "+");
    for (int line = 0; line < h; line++) {
      for (int64_t c = 0; c < ncols; c++) {
        buf_puts(b, V);
        Buf *l = &labels[r * ncols + c];
        int n = line == h / 2 ? (int)l->n : 0, left = (w - n) / 2;
        buf_printf(b, "%*s%.*s%*s", left, "", n, buf_cstr(l), w - n - left, "");
      }
      buf_puts(b, V);
      buf_putc(b, '\n');
    }
  }
  rule_line(b, ncols, w, unicode ? "\u2514" : "+", H, unicode ? "\u2534" : "+", unicode ? "\u2518" : "+");
  err_undefer(&L);
  labels_free(&L);
  return true;
}
