/*
** parse.c — drives the re2c lexer and the Lemon parser over one file.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "diag.h"
#include "err.h"
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
