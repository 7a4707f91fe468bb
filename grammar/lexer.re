/*
** lexer.re — the tokens of shm (docs/language.md), for re2c.
*/
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "lex.h"
#include "parser.h"

void lex_init(Lexer *L, Arena *arena, int file, const char *src, size_t len) {
  memset(L, 0, sizeof *L);
  L->src = src;
  L->cur = src;
  L->lim = src + len;
  L->file = file;
  L->arena = arena;
  L->at_line_start = true;
}

static const struct { const char *w; int tk; } keywords[] = {
  {"def", TK_DEF}, {"return", TK_RETURN}, {"lambda", TK_LAMBDA},
  {"let", TK_LET}, {"in", TK_IN}, {"import", TK_IMPORT},
  {"print", TK_PRINT}, {"show", TK_SHOW}, {"mesh", TK_MESH},
  {"None", TK_NONE}, {"True", TK_TRUE}, {"False", TK_FALSE},
};

/* Decode a quoted string's escapes into the arena. */
static Str decode_string(Lexer *L, const char *b, const char *e) {
  char *out = arena_alloc(L->arena, (size_t)(e - b) + 1);
  int n = 0;
  for (const char *p = b; p < e; p++) {
    if (*p == '\\' && p + 1 < e) {
      p++;
      switch (*p) {
      case 'n': out[n++] = '\n'; break;
      case 't': out[n++] = '\t'; break;
      default: out[n++] = *p; break;
      }
    } else {
      out[n++] = *p;
    }
  }
  Str s = {out, n};
  return s;
}

static bool newline_significant(const Lexer *L) {
  if (L->depth > LEX_MAXNEST) return false;   /* already an error */
  return L->depth == 0 || L->nest[L->depth - 1] == '{';
}

/* Open a bracket; false (an error token) beyond LEX_MAXNEST levels.  The
   depth still counts it, so the closing brackets stay balanced. */
static bool push(Lexer *L, char c) {
  if (L->depth < LEX_MAXNEST) L->nest[L->depth] = c;
  L->depth++;
  if (L->depth <= LEX_MAXNEST) return true;
  L->error = "brackets nested too deeply (the limit is " LEX_MAXNEST_TEXT " levels)";
  return false;
}

static void pop(Lexer *L) {
  if (L->depth > 0) L->depth--;
}

void lex_next(Lexer *L, Tok *t) {
  const unsigned char *YYCURSOR, *YYMARKER, *start;
  const unsigned char *YYLIMIT = (const unsigned char *)L->lim;
  for (;;) {
    YYCURSOR = (const unsigned char *)L->cur;
    start = YYCURSOR;
    t->text.p = (const char *)start;
    t->sp.file = L->file;
    t->sp.off = (uint32_t)((const char *)start - L->src);
    t->ival = 0;
    t->fval = 0;
#define TOK(k) do { t->type = (k); goto done; } while (0)
    /*!re2c
      re2c:define:YYCTYPE = "unsigned char";
      re2c:yyfill:enable = 0;
      re2c:eof = 0;

      digits = [0-9]+;
      exp = [eE] [+-]? digits;
      ident = [A-Za-z_][A-Za-z0-9_]*;

      $ {
        if (!L->at_line_start) { L->at_line_start = true; t->sp.len = 0; t->type = TK_NL; t->text.n = 0; return; }
        t->type = 0; t->sp.len = 0; t->text.n = 0; return;
      }
      [ \t\r\f\v]+ | "\\" "\r"? "\n" | "#" [^\n\x00]* { L->cur = (const char *)YYCURSOR; continue; }
      "\n" {
        L->cur = (const char *)YYCURSOR;
        if (!newline_significant(L) || L->at_line_start) continue;
        L->at_line_start = true;
        t->type = TK_NL; t->sp.len = 1; t->text.n = 1; return;
      }
      "-"? digits {
        errno = 0;
        t->ival = strtoll((const char *)start, NULL, 10);
        if (errno == ERANGE) { L->error = "integer literal out of range"; TOK(TK_ILLEGAL); }
        TOK(TK_INT);
      }
      "-"? (digits "." [0-9]* exp? | "." digits exp? | digits exp) {
        t->fval = strtod((const char *)start, NULL);
        TOK(TK_FLOAT);
      }
      "nan" { t->fval = NAN; TOK(TK_FLOAT); }
      "inf" { t->fval = INFINITY; TOK(TK_FLOAT); }
      "-inf" { t->fval = -INFINITY; TOK(TK_FLOAT); }
      "P(" | "PartitionSpec(" { TOK(push(L, '(') ? TK_PSPEC : TK_ILLEGAL); }
      ident {
        Str w = {(const char *)start, (int)(YYCURSOR - start)};
        for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
          if (str_eqc(w, keywords[i].w)) TOK(keywords[i].tk);
        TOK(TK_IDENT);
      }
      "'" ([^'\\\n\x00] | "\\" [^\n\x00])* "'" | "\"" ([^"\\\n\x00] | "\\" [^\n\x00])* "\"" {
        t->type = TK_STRING;
        L->cur = (const char *)YYCURSOR;
        t->sp.len = (uint32_t)(YYCURSOR - start);
        L->at_line_start = false;
        t->text = decode_string(L, (const char *)start + 1, (const char *)YYCURSOR - 1);
        return;
      }
      "'" | "\"" { L->error = "unterminated string"; TOK(TK_ILLEGAL); }
      "(" { TOK(push(L, '(') ? TK_LPAREN : TK_ILLEGAL); }
      ")" { pop(L); TOK(TK_RPAREN); }
      "[" { TOK(push(L, '[') ? TK_LBRACK : TK_ILLEGAL); }
      "]" { pop(L); TOK(TK_RBRACK); }
      "{" { TOK(push(L, '{') ? TK_LBRACE : TK_ILLEGAL); }
      "}" { pop(L); TOK(TK_RBRACE); }
      "," { TOK(TK_COMMA); }
      ":" { TOK(TK_COLON); }
      "=" { TOK(TK_EQ); }
      "..." { TOK(TK_ELLIPSIS); }
      "." { TOK(TK_DOT); }
      "<" { TOK(TK_LT); }
      ">" { TOK(TK_GT); }
      "@" { TOK(TK_AT); }
      ";" { TOK(TK_SEMI); }
      * { L->error = "unexpected character"; TOK(TK_ILLEGAL); }
    */
  done:
#undef TOK
    L->cur = (const char *)YYCURSOR;
    t->sp.len = (uint32_t)(YYCURSOR - start);
    t->text.n = (int)(YYCURSOR - start);
    L->at_line_start = t->type == TK_SEMI;
    return;
  }
}
