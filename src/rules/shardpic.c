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

/* "CPU 0,2,4,6" (runs of three or more as 0-3): the devices dev[0..n)
   (ascending) holding a cell; past LABEL_RUNS runs the first three and
   the last two, "..." between. */
enum { LABEL_RUNS = 6, PIC_WHOLE = 16, PIC_EDGE = 4 };

static void cell_label(Buf *b, const int64_t *dev, int64_t n) {
  buf_puts(b, "CPU ");
  int64_t nruns = 0;
  for (int64_t i = 0; i < n; i++) nruns += !i || dev[i] != dev[i - 1] + 1;
  bool first = true;
  for (int64_t i = 0, k = 0; i < n; k++) {
    int64_t j = i;                       /* the run dev[i..j] */
    while (j + 1 < n && dev[j + 1] == dev[j] + 1) j++;
    if (nruns <= LABEL_RUNS || k < 3 || k >= nruns - 2) {
      buf_printf(b, "%s%lld", first ? "" : ",", (long long)dev[i]);
      if (j - i >= 2) buf_printf(b, "-%lld", (long long)dev[j]);
      else if (j > i) buf_printf(b, ",%lld", (long long)dev[j]);
      first = false;
    } else if (k == 3) {
      buf_puts(b, ",...");
    }
    i = j + 1;
  }
  if (nruns > LABEL_RUNS) buf_printf(b, " (%lld)", (long long)n);
}

/* The cells shown along a dimension of n: all up to PIC_WHOLE, else the
   first and the last PIC_EDGE with -1 (a cell of "...") between; their
   count. */
static int shown_cells(int64_t n, int64_t *idx) {
  int k = 0;
  for (int64_t i = 0; i < n; i++) {
    if (n > PIC_WHOLE && i == PIC_EDGE) {
      idx[k++] = -1;
      i = n - PIC_EDGE - 1;
      continue;
    }
    idx[k++] = i;
  }
  return k;
}

/* One horizontal rule: left, fill, joint, right pieces. */
static void rule_line(Buf *b, int ncols, int w, const char *l, const char *f, const char *j, const char *r) {
  buf_puts(b, l);
  for (int c = 0; c < ncols; c++) {
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

/* The devices of each cell: cell_dev[cell_at[c] .. cell_at[c + 1]) for
   cell c = row * ncols + col, ascending (one pass over the devices). */
typedef struct Cells {
  int64_t *at, *dev;
} Cells;

static void cells_free(void *p) {
  Cells *C = p;
  mem_free(C->at);
  mem_free(C->dev);
}

static void cells_build(Cells *C, const Mesh *m, const Spec *spc, int rank, int64_t ncells, int64_t ncols) {
  int64_t n = m ? m->ndev : 1;
  C->at = mem_calloc(sizeof(int64_t) * (size_t)(ncells + 1));
  C->dev = NULL;
  err_defer(cells_free, C);
  C->dev = mem_alloc(sizeof(int64_t) * (size_t)n);
  int64_t *fill = mem_calloc(sizeof(int64_t) * (size_t)ncells);
  err_defer(mem_free, fill);
  for (int pass = 0; pass < 2; pass++)
    for (int64_t d = 0; d < n; d++) {
      int64_t r = 0, c = 0;
      if (m) cell_of(m, spc, rank, d, &r, &c);
      int64_t cell = r * ncols + c;
      if (pass == 0) C->at[cell + 1]++;
      else C->dev[C->at[cell] + fill[cell]++] = d;
      if (pass == 0 && d == n - 1)
        for (int64_t k = 0; k < ncells; k++) C->at[k + 1] += C->at[k];
    }
  err_undefer(fill);
  mem_free(fill);
  err_undefer(C);
}

bool pic_draw(Buf *b, const Mesh *m, const Spec *spc, int rank, const int64_t *shape, int width, bool unicode) {
  if (rank > 2) {
    buf_printf(b, "a picture shows arrays of rank 1 or 2, not %d", rank);
    return false;
  }
  int64_t nrows = rank == 2 ? til_blocks_along(m, spc, 0) : 1, ncols = rank == 2 ? til_blocks_along(m, spc, 1)
                                                                   : rank == 1 ? til_blocks_along(m, spc, 0) : 1;
  /* the rows and columns drawn: a mesh of thousands of devices gives a
     picture of its first and last blocks, in time linear in the devices */
  int64_t rows[2 * PIC_EDGE + 1 + PIC_WHOLE], cols[2 * PIC_EDGE + 1 + PIC_WHOLE];
  int nr = shown_cells(nrows, rows), nc = shown_cells(ncols, cols);
  Cells C;
  cells_build(&C, m, spc, rank, nrows * ncols, ncols);
  err_defer(cells_free, &C);
  Labels L = {mem_calloc(sizeof(Buf) * (size_t)(nr * nc)), nr * nc};
  Buf *labels = L.b;
  err_defer(labels_free, &L);
  size_t maxlab = 0;
  for (int r = 0; r < nr; r++)
    for (int c = 0; c < nc; c++) {
      Buf *l = &labels[r * nc + c];
      int64_t cell = rows[r] * ncols + cols[c];
      if (rows[r] < 0 || cols[c] < 0) buf_puts(l, "...");
      else cell_label(l, C.dev + C.at[cell], C.at[cell + 1] - C.at[cell]);
      if (l->n > maxlab) maxlab = l->n;
    }
  /* proportions: a 2-D array as wide as its columns against its rows */
  double ratio = rank == 2 && shape[0] > 0 ? (double)shape[1] / (double)shape[0] : 1.0;
  int total = ratio < 1 ? (int)(width * ratio) : width - 1;
  int w = (int)((total - 1) / nc) - 1;
  if (w < (int)maxlab + 2) w = (int)maxlab + 2;
  int h = 1;
  if (rank == 2) {
    h = (int)((double)(nc * (w + 1)) / ratio / 3.0 / (double)nr);
    if (h < 1) h = 1;
    if (h > LAYOUT_MAXH) h = LAYOUT_MAXH;
  }
  const char *H = unicode ? "\u2500" : "-", *V = unicode ? "\u2502" : "|";
  rule_line(b, nc, w, unicode ? "\u250c" : "+", H, unicode ? "\u252c" : "+", unicode ? "\u2510" : "+");
  for (int r = 0; r < nr; r++) {
    if (r) rule_line(b, nc, w, unicode ? "\u251c" : "+", H, unicode ? "\u253c" : "+", unicode ? "\u2524" : "+");
    for (int line = 0; line < h; line++) {
      for (int c = 0; c < nc; c++) {
        buf_puts(b, V);
        Buf *l = &labels[r * nc + c];
        int n = line == h / 2 ? (int)l->n : 0, left = (w - n) / 2;
        buf_printf(b, "%*s%.*s%*s", left, "", n, buf_cstr(l), w - n - left, "");
      }
      buf_puts(b, V);
      buf_putc(b, '\n');
    }
  }
  rule_line(b, nc, w, unicode ? "\u2514" : "+", H, unicode ? "\u2534" : "+", unicode ? "\u2518" : "+");
  err_undefer(&L);
  labels_free(&L);
  err_undefer(&C);
  cells_free(&C);
  return true;
}

/* ---- the picture as SVG ------------------------------------------------------------------------ */

enum { SVG_WIDTH = 480, SVG_CAPTION = 22, SVG_GAP = 14, SVG_CHAR = 7 };

/* Colours of the boxes: the boxes a set of devices holds share one. */
static const char *const svg_colors[] = {"#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f", "#cab2d6", "#ffff99",
                                         "#8dd3c7", "#bebada", "#80b1d3", "#fccde5", "#d9d9d9", "#ccebc5"};

static void svg_text(Buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '<') buf_puts(b, "&lt;");
    else if (c == '>') buf_puts(b, "&gt;");
    else if (c == '&') buf_puts(b, "&amp;");
    else if (c == '"') buf_puts(b, "&quot;");
    else if ((unsigned char)c >= 0x20 || c == '\t') buf_putc(b, c);
  }
}

/* One layout at height y of the picture; returns its height and sets
   *width to its width (pixels). */
static int svg_layout(Buf *b, const PicLayout *L, int y, int *width) {
  int rank = L->rank;
  int64_t nrows = rank == 2 ? til_blocks_along(L->m, L->spc, 0) : 1,
          ncols = rank == 2 ? til_blocks_along(L->m, L->spc, 1) : rank == 1 ? til_blocks_along(L->m, L->spc, 0) : 1;
  int64_t rows[2 * PIC_EDGE + 1 + PIC_WHOLE], cols[2 * PIC_EDGE + 1 + PIC_WHOLE];
  int nr = shown_cells(nrows, rows), nc = shown_cells(ncols, cols);
  Cells C;
  cells_build(&C, L->m, L->spc, rank, nrows * ncols, ncols);
  err_defer(cells_free, &C);
  Labels lab = {mem_calloc(sizeof(Buf) * (size_t)(nr * nc)), nr * nc};
  err_defer(labels_free, &lab);
  size_t maxlab = 0;
  for (int r = 0; r < nr; r++)
    for (int c = 0; c < nc; c++) {
      Buf *l = &lab.b[r * nc + c];
      int64_t cell = rows[r] * ncols + cols[c];
      if (rows[r] < 0 || cols[c] < 0) buf_puts(l, "...");
      else cell_label(l, C.dev + C.at[cell], C.at[cell + 1] - C.at[cell]);
      if (l->n > maxlab) maxlab = l->n;
    }
  /* the array's proportions, each box wide enough for its label */
  double ratio = rank == 2 && L->shape[0] > 0 ? (double)L->shape[1] / (double)L->shape[0] : 1.0;
  double w = ratio < 1 && rank == 2 ? SVG_WIDTH * ratio : SVG_WIDTH;
  if (w < 160) w = 160;
  double cw = w / nc, minw = (double)maxlab * SVG_CHAR + 12;
  if (cw < minw) cw = minw;
  double ch = rank == 2 ? cw * nc / ratio / nr : 36;
  if (ch < 28) ch = 28;
  if (ch > 120) ch = 120;
  int top = y + SVG_CAPTION;
  buf_printf(b, "<text x=\"0\" y=\"%d\" class=\"cap\">", y + 15);
  svg_text(b, L->caption, strlen(L->caption));
  buf_puts(b, "</text>\n");
  /* a colour per label, in the order labels first appear */
  int *color = mem_calloc(sizeof(int) * (size_t)(nr * nc));
  err_defer(mem_free, color);
  for (int k = 0, ncolors = 0; k < nr * nc; k++) {
    int q = 0;
    while (q < k && strcmp(buf_cstr(&lab.b[q]), buf_cstr(&lab.b[k]))) q++;
    color[k] = q < k ? color[q] : ncolors++;
  }
  for (int r = 0; r < nr; r++)
    for (int c = 0; c < nc; c++) {
      Buf *l = &lab.b[r * nc + c];
      bool dots = rows[r] < 0 || cols[c] < 0;
      buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"#333\"/>\n",
                 1 + c * cw, top + r * ch, cw, ch, dots ? "#ffffff" : svg_colors[color[r * nc + c] % 12]);
      buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" dominant-baseline=\"middle\">",
                 1 + c * cw + cw / 2, top + r * ch + ch / 2);
      svg_text(b, buf_cstr(l), l->n);
      buf_puts(b, "</text>\n");
    }
  err_undefer(color);
  mem_free(color);
  *width = (int)(nc * cw) + 2;
  int capw = (int)strlen(L->caption) * SVG_CHAR;
  if (capw > *width) *width = capw;
  err_undefer(&lab);
  labels_free(&lab);
  err_undefer(&C);
  cells_free(&C);
  return SVG_CAPTION + (int)(nr * ch) + 2;
}

bool pic_svg(Buf *b, const char *title, const PicLayout *layouts, int n) {
  for (int i = 0; i < n; i++)
    if (layouts[i].rank > 2) return false;
  Buf body = {0};
  err_defer(buf_release, &body);
  int y = 0, width = 0;
  if (title) {
    buf_puts(&body, "<text x=\"0\" y=\"15\" class=\"title\">");
    svg_text(&body, title, strlen(title));
    buf_puts(&body, "</text>\n");
    y = SVG_CAPTION + 4;
    width = (int)strlen(title) * SVG_CHAR;
  }
  for (int i = 0; i < n; i++) {
    int w = 0;
    y += svg_layout(&body, &layouts[i], y, &w) + (i + 1 < n ? SVG_GAP : 0);
    if (w > width) width = w;
  }
  buf_printf(b,
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
             "font-family=\"monospace\" font-size=\"12\">\n<style>.title { font-weight: bold; font-size: 14px; } .cap { font-weight: bold; }</style>\n",
             width, y, width, y);
  buf_put(b, buf_cstr(&body), body.n);
  buf_puts(b, "</svg>\n");
  err_undefer(&body);
  buf_free(&body);
  return true;
}
