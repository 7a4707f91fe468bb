/*
** npprint.h — printing arrays exactly as NumPy 1.24's str() does.
**
** NumPy's defaults: precision 8, floats printed with the fewest digits that
** round-trip (up to that precision), a switch to scientific notation when
** the range of magnitudes is too wide, `nan`/`inf`, line width 75, and
** summarisation with `...` (3 items each side) past 1000 elements.
*/
#ifndef SHM_NPPRINT_H
#define SHM_NPPRINT_H

#include "array.h"
#include "buf.h"

/* Append str(a) to b, with no trailing newline. */
void fmt_array(Buf *b, const Array *a);

#endif
