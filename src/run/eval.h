/*
** eval.h — the tree-walking evaluator.
**
** The evaluator runs the checked program.  Outside any shard_map a value
** is one array.  Inside, each equation is walked once for all instances of
** the mesh (they run in lockstep): a local primitive is applied to each
** distinct block (value.h), a collective is handed to the fabric.  When a
** `cond` index or a `while` predicate differs between instances, each
** group of instances runs its own path, in a fixed order.
**
** Runtime errors unwind (err.h) to eval_run, which prints them and releases
** the frames of the failed statement.
*/
#ifndef SHM_EVAL_H
#define SHM_EVAL_H

#include <signal.h>
#include <stdio.h>
#include "buf.h"
#include "fabric.h"
#include "ir.h"
#include "value.h"

typedef struct Interp Interp;

/* A frame of a running function (the debugger walks them). */
typedef struct Frame {
  IrFunc *fn;
  Val **slots;
  int nslots;
  struct Frame *up;          /* static link: the frame of fn->parent */
  struct Frame *caller;      /* dynamic link */
  Space space;
  IrStmt *cur;               /* statement being run */
  int release_at;            /* its index when the frame releases values after
                                their last use (eval.c), else -1 */
  int jump;                  /* eval_jump: the statement to go on at, else -1 */
} Frame;

Interp *eval_new(IrFunc *main);
void eval_free(Interp *I);
/* Run main's statements from index `from` to its current end.  Returns
   false after a runtime error, which has been printed to stderr. */
bool eval_run(Interp *I, int from);
/* The current value of a top-level variable, or NULL. */
Val *eval_global(Interp *I, IrVar *v);
/* The value of a variable as seen from frame F. */
Val *eval_lookup(Frame *F, IrVar *v);

/* The debugger's view of a run: told before and
   after each statement and when a function's body is done. */
typedef enum EvalEvent {
  EV_LINE,                   /* before statement st of frame F */
  EV_DONE,                   /* after statement st of frame F */
  EV_RETURN                  /* F's body has run, its results are set (st NULL) */
} EvalEvent;
typedef void (*EvalHook)(Interp *I, Frame *F, IrStmt *st, EvalEvent ev, void *data);
void eval_set_hook(Interp *I, EvalHook hook, void *data);
/* An observer of the run (the cost model's, timeline.h): told when a
   function's frame has its parameters bound and its body is about to run
   (`site`: the statement calling it -- a call, cond, while, fori_loop or
   shard_map -- or NULL for eval_call), when its body has run (its results
   readable, the frame not yet released), and before and after each
   statement of a body (`index`: its place in the body).  It sees F->space
   for the running instances.  Independent of the hook: the debugger's
   hook and an observer may be set at once, and neither changes what the
   run does. */
typedef struct EvalObserver {
  void (*call)(void *data, Frame *F, IrStmt *site);
  void (*ret)(void *data, Frame *F, IrStmt *site);
  void (*before)(void *data, Frame *F, IrStmt *st, int index);
  void (*after)(void *data, Frame *F, IrStmt *st, int index);
  void *data;
} EvalObserver;
/* Set (a copy of) the observer; NULL removes it. */
void eval_set_observer(Interp *I, const EvalObserver *obs);
/* Run main's statements [from, to) (eval_run runs to the end). */
bool eval_run_to(Interp *I, int from, int to);
/* The frame of main (top-level variables). */
Frame *eval_top(Interp *I);
/* Call fn, a function of no parameters whose parent is F->fn, in a new
   frame called from F and running where F runs; its results go to outs
   (new references).  The hook sees the call only if `traced`.  A runtime
   error is caught here: returns false, err_message() says why and *where
   (when not NULL) names the innermost statement; nothing is printed. */
bool eval_call(Interp *I, Frame *F, IrFunc *fn, Val **outs, bool traced, Span *where);
/* Abandon the running statement (the debugger's quit): unwinds like a
   runtime error, but eval_run and eval_call print nothing. */
SHM_NORETURN void eval_abandon(Interp *I);
/* --max-steps: bound on loop iterations (0: none). */
void eval_set_max_steps(Interp *I, long n);
/* For a script run on its own: the top level too releases each value
   after its last use (no REPL or debugger will read it afterwards).  Call
   once the whole program is checked. */
void eval_release_top(Interp *I);


/* The out_spec through which the shard_map body running in F returns
   variable v (or the in_spec of a parameter v), or NULL (F is no body, or
   v is neither one of its results nor a parameter). */
const Spec *eval_result_spec(Frame *F, const IrVar *v);
/* Set variable v, as seen from frame F, to val (a reference handed
   over), widened to the axes v's type varies over: the debugger's `!`.
   A slot past the frame's (a variable the debugger added to its
   function) is made room for. */
void eval_assign(Frame *F, IrVar *v, Val *val);
/* The debugger's `jump`, at a stop before a statement of F: instead of
   that statement, go on at statement `index` of F's function (the trace
   is told of it, EV_LINE, before it runs). */
void eval_jump(Frame *F, int index);

/* (A request to stop the running statement at its next step is the
   current state's `interrupted`, state.h: set by the REPL's SIGINT handler,
   or by shmapi_interrupt from another thread.) */

#endif
