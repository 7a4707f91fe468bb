/*
** drops.h — when a function's frame lets go of each value (eval.c).
**
** A frame releases a variable's value after the last statement that
** reads it, or after the statement that sets it if none does.  Planned
** once per function, before its first run: each of its variables' `last`
** (-1 for a parameter no statement reads, INT_MAX for a result: kept to
** the end), and each statement's list of the slots released after it
** (IrStmt.drop), variables a nested function reads (captured) left out.
*/
#ifndef SHM_DROPS_H
#define SHM_DROPS_H

#include "ir.h"

/* Plan fn's releases; sets fn->drops_planned. */
void drops_plan(IrFunc *fn);

#endif
