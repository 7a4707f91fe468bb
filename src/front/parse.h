/*
** parse.h — reading a file into a syntax tree (lexer + Lemon parser).
*/
#ifndef SHM_PARSE_H
#define SHM_PARSE_H

#include "ast.h"
#include "mem.h"

/* Load a file from disk into the diag file table; -1 (and a message on
   stderr) if it cannot be read. */
int parse_load(const char *path, Span from);
/* Register in-memory text (`-c CODE`, REPL input) as a file. */
int parse_load_text(const char *name, const char *text, size_t len);
/* Parse a registered file: statements that parsed, syntax errors recorded
   with diag_error.  The tree lives in `arena`. */
AstList *parse_file(Arena *arena, int file);

#endif
