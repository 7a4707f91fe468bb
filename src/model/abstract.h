/*
** abstract.h — modelling a program without running it (--abstract).
**
** A walk over the checked program that feeds the timeline (timeline.h)
** with shapes and types only: no array is ever made, so a program at real
** model sizes (billions of parameters) is modelled in seconds.  Control
** flow needs values, so the walk keeps the values of integer and boolean
** scalars that follow from literals, shapes and the mesh (loop counters,
** bounds, `psum 1`, axis_size, and axis_index: a value per device, with
** what follows from it by scalar arithmetic and psum/pmax/pmin): a
** fori_loop, a while loop or a cond whose bounds, predicate or index
** follow from those runs as the real program would, each device its own
** number of iterations or its own branch (the devices still looping run
** each step together, as the evaluator runs them).  One that depends on
** array data is data-dependent: a cond is modelled by its costliest
** branch and noted in the report; a loop whose trip count depends on data
** is an error naming it (its number of iterations is unknown).
*/
#ifndef SHM_ABSTRACT_H
#define SHM_ABSTRACT_H

#include "timeline.h"

/* Walk main's statements from `from` to the end into T.  Returns false
   after a diagnostic (to stderr) at the statement that stopped the walk.
   `max_steps`: a bound on loop iterations per top-level statement (0: none). */
bool abstract_run(Timeline *T, IrFunc *main, int from, long max_steps);
/* The same for one call of fn (a function of no parameters whose parent
   is main: the embedding API's glue, `name args...` over variables that
   have types and no values) from the top level; main's statements are
   not walked. */
bool abstract_call(Timeline *T, IrFunc *main, IrFunc *fn, long max_steps);

#endif
