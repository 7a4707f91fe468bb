/*
** pyhint.h — pointers from Python and JAX syntax to the shm form.
**
** Users write what they know: `y = x + x`, `jnp.sum(x)`, `arange(4)`,
** `@shard_map(...)`, `def f(a):`.  On a syntax error the parser asks
** here, with the line the error is on, for a hint naming the shm form
** (`add x x`, `reduce_sum[axes=...] x`, `arange[stop=4]`,
** `@shard_map[...]`, braces), and for the names the broken statement
** meant to bind, so that their later uses raise no second error.
*/
#ifndef SHM_PYHINT_H
#define SHM_PYHINT_H

#include <stdbool.h>
#include <stddef.h>
#include "defs.h"

/* A hint for a syntax error at column `col` (0-based) of `line` (len
   bytes, no newline), as " (in shm: ...)", or "" (out is returned). */
const char *pyhint_syntax(const char *line, int len, int col, char *out, size_t n);
/* A callee written as Python's attribute of a value, `x.T`, `x.sum`,
   `x.astype` (base a value of rank `rank`, or -1 when unknown): the shm
   form, as " (...)", or "" when name has no such attribute. */
const char *pyhint_attr(Str name, int rank, char *out, size_t n);
/* The names bound by a statement `a, b = ...` on the line; how many (at
   most max). */
int pyhint_binders(const char *line, int len, Str *names, int max);
/* Does the line open a Python-style def, `def f(a):`? */
bool pyhint_python_def(const char *line, int len);
/* Does the line open any Python block, `def f(a):`, `for i in r:`,
   `if c:`...?  Its body (the more indented lines after it) is then
   skipped, not parsed: its errors are consequences of the first. */
bool pyhint_python_block(const char *line, int len);

#endif
