/*
** primdoc.c — the table of primdoc.def, indexed by PrimId.
**
** A primitive of prims.def without its DOC row, or with two, fails the
** build: the rows are counted against P_COUNT, and a second designated
** initializer for one PrimId is an error under -Werror (-Woverride-init).
*/
#include "primdoc.h"

#define SECTION(title, text)
#define PARAM(tag, name, type, dflt, meaning)
#define DOC(tag, summary, variance, example) [P_##tag] = {summary, variance, example},
static const PrimDoc docs[P_COUNT] = {
#include "primdoc.def"
};
#undef DOC

#define DOC(tag, summary, variance, example) +1
enum { NDOCS = 0
#include "primdoc.def"
};
#undef DOC
_Static_assert((int)NDOCS == (int)P_COUNT, "every row of prims.def needs exactly one DOC row in primdoc.def");

#undef PARAM
#define DOC(tag, summary, variance, example)
#define PARAM(tag, name, type, dflt, meaning) {P_##tag, name, type, dflt, meaning},
static const PrimParamDoc params[] = {
#include "primdoc.def"
};
#undef DOC
#undef PARAM
#undef SECTION

const PrimDoc *primdoc(int prim) {
  return prim >= 0 && prim < P_COUNT ? &docs[prim] : NULL;
}

const PrimParamDoc *primdoc_params(int prim, int *n) {
  const int total = (int)(sizeof params / sizeof params[0]);
  int first = 0;
  while (first < total && params[first].prim != prim) first++;
  int last = first;
  while (last < total && params[last].prim == prim) last++;
  *n = last - first;
  return params + first;
}
