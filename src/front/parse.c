/*
** parse.c — drives the re2c lexer and the Lemon parser over one file.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "diag.h"
#include "err.h"
#include "esc.h"
#include "lex.h"
#include "parse.h"
#include "parser.h"

void *shmParseAlloc(void *(*alloc)(size_t), Parser *P);
void shmParseFree(void *p, void (*dealloc)(void *));
void shmParse(void *p, int major, Tok minor);

/* Largest source file accepted. */
#define MAX_SOURCE (64u << 20)

/* Cleanups (err.h) for parse_load and parse_file. */
static void close_file(void *f) { fclose(f); }
static void free_at(void *pp) { mem_free(*(void **)pp); }
static void free_parser(void *lp) { shmParseFree(lp, mem_free); }

/* What a file that is not text is, as a phrase ("an ELF executable"), or
   NULL for text: a known signature, or a start (its first 8 KiB) of which
   a quarter or more are bytes no text has (control characters other than
   white space, bytes that are not UTF-8).  Text with a few stray bytes
   stays text: the lexer points at each. */
static const char *binary_kind(const char *text, size_t n) {
  static const struct { const char *magic; size_t len; const char *what; } sig[] = {
    {"\x7f" "ELF", 4, "an ELF executable or library"},
    {"\x93NUMPY", 6, "a NumPy .npy file (read it into an array with load)"},
    {"PK\x03\x04", 4, "a zip archive (an .npz file is read into arrays with load)"},
    {"\x1f\x8b", 2, "a gzip-compressed file"},
    {"\x89PNG", 4, "a PNG image"},
  };
  for (size_t i = 0; i < sizeof sig / sizeof sig[0]; i++)
    if (n >= sig[i].len && !memcmp(text, sig[i].magic, sig[i].len)) return sig[i].what;
  size_t scan = n < 8192 ? n : 8192, odd = 0;
  for (size_t i = 0; i < scan;) {
    char show[9];
    int w, len = esc_char(text + i, scan - i, ESC_KEEP_NL | ESC_KEEP_TAB, show, &w);
    bool plain = !strncmp(show, text + i, (size_t)len) && show[len] == 0;
    unsigned char c = (unsigned char)text[i];
    odd += !plain && c != '\r' && c != '\f' && c != '\v' && (i + (size_t)len < scan || c < 0x80);
    i += (size_t)len;
  }
  return odd >= 16 && odd * 4 >= scan ? "a binary file" : NULL;
}

int parse_load(const char *path, Span from) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    char msg[512];
    snprintf(msg, sizeof msg, "cannot open '%s': %s", path, strerror(errno));
    if (from.file >= 0) diag_error(from, "%s", msg);
    else diag_report(span_none(), NULL, msg);
    return -1;
  }
  size_t cap = 4096, n = 0;
  char *text = NULL;
  err_defer(close_file, f);          /* running out of memory below */
  err_defer(free_at, &text);
  text = mem_alloc(cap);
  for (;;) {
    if (n + 1 >= cap) {
      if (cap >= MAX_SOURCE) {
        err_undefer(&text);
        err_undefer(f);
        fclose(f);
        mem_free(text);
        char msg[512];
        snprintf(msg, sizeof msg, "'%s' is larger than the %u MiB source limit", path, MAX_SOURCE >> 20);
        if (from.file >= 0) diag_error(from, "%s", msg);
        else diag_report(span_none(), NULL, msg);
        return -1;
      }
      cap *= 2;
      text = mem_realloc(text, cap);
    }
    size_t got = fread(text + n, 1, cap - n - 1, f);
    if (got == 0) break;
    n += got;
  }
  err_undefer(&text);
  err_undefer(f);
  fclose(f);
  text[n] = 0;
  const char *kind = binary_kind(text, n);
  if (kind) {
    mem_free(text);
    char msg[512];
    snprintf(msg, sizeof msg, "'%s' is not shm source: it is %s", path, kind);
    if (from.file >= 0) diag_error(from, "%s", msg);
    else diag_report(span_none(), NULL, msg);
    return -1;
  }
  return diag_add_file(path, text, n);
}

int parse_load_text(const char *name, const char *text, size_t len) {
  return diag_add_file(name, mem_strndup(text, len), len);
}

static void *parser_alloc(size_t n) { return mem_alloc(n); }

AstList *parse_file(Arena *arena, int file) {
  size_t len;
  const char *text = diag_file_text(file, &len);
  Parser P;
  memset(&P, 0, sizeof P);
  P.arena = arena;
  P.file = file;
  P.last_error = span_none();
  P.skip_indent = -1;
  P.line_file = -1;
  Lexer L;
  lex_init(&L, arena, file, text, len);
  void *lp = shmParseAlloc(parser_alloc, &P);
  err_defer(free_parser, lp);
  Tok t;
  do {
    lex_next(&L, &t);
    P.lex_error = L.error;
    P.at = t.sp;
    if (L.too_deep) break;
    if (ast_skip_token(&P, &t)) continue;
    shmParse(lp, t.type, t);
  } while (t.type != 0);
  err_undefer(lp);
  shmParseFree(lp, mem_free);
  /* Brackets nested past the limit: that error alone, and nothing of the
     file checked or run, since every later error (statements cut in two,
     functions without their return) would be its consequence.  Reading
     stops there, so no input costs more than its length. */
  if (L.too_deep) {
    diag_error(t.sp, "%s", L.error);
    P.stmts = NULL;
    return ast_list(&P);
  }
  return P.stmts ? P.stmts : ast_list(&P);
}
