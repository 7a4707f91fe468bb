/*
** show.h — printing types, parameter values and checked functions in the
** jaxpr form that the parser reads back.
*/
#ifndef SHM_SHOW_H
#define SHM_SHOW_H

#include "buf.h"
#include "ir.h"

/* `f32[2,4]{i,j}` (the variance set omitted when empty, or when mesh is NULL). */
void show_type(Buf *b, const Type *t, const Mesh *mesh);
/* A variable's type: in the lowering of an xmap, the named type of the
   value it holds first, `f32[]<batch:128> as f32[16]{x}`. */
void show_var_type(Buf *b, const IrVar *v);
/* A variance set `{i,j}` (prints `{}` when empty). */
void show_vma(Buf *b, uint32_t vma, const Mesh *mesh);
/* A variance set as messages write it: `{i, j}`. */
void show_vma_message(Buf *b, uint32_t vma, const Mesh *mesh);
/* A parameter value as show prints it (functions excepted). */
void show_param_value(Buf *b, const PVal *v);
/* `def NAME = { lambda ... }` for a checked function, ending in a newline. */
void show_func(Buf *b, const IrFunc *f, const char *name);
/* One statement of a function as show_func prints it, ending in a newline
   (the debugger shows generated code this way). */
void show_equation(Buf *b, const IrStmt *st, const Mesh *mesh);

#endif
