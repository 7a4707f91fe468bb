/*
** unred.h — unreduced and reduced values in the variance rule (unred.c).
*/
#ifndef SHM_UNRED_H
#define SHM_UNRED_H

#include "ir.h"

/* Why an equation cannot take an operand: msg is a format with three %s
   (the primitive, the operand, the axes), operand its index (-1: a
   literal), axes the axes in question. */
typedef struct UnredErr {
  int operand;
  uint32_t axes;
  char msg[400];
} UnredErr;

/* Set the unreduced and reduced axes (and kind) of the results of
   primitive `prim`, whose variance rule is vr and whose results vary over
   `res`; false with *e when an operand is in a state the primitive
   cannot take. */
bool unred_rule(int prim, VarRule vr, const Type *in, int nin, const bool *lit, const Attrs *at, uint32_t res,
                Type *out, int nout, UnredErr *e);

#endif
