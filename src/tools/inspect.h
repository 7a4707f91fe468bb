/*
** inspect.h — looking at a program's state: values per device, names,
** meshes, source lines; shared by the debugger and the REPL.
**
** An Insp says where inspection looks.  Outside a run (at the shm>
** prompt) that is the top level: the checker's names and the
** interpreter's globals.  While the debugger has a run stopped (or its
** trace is deciding whether to stop) it is also a frame of the run:
**
**   frame   the innermost frame, where the run stands, and stmt its
**           statement (NULL when the frame's body is done: a return);
**   sel     the frame `up` and `down` selected, which `p`, `whos` and
**           `info locals` look at;
**   focus   the device `device N` picked: inside a shard_map body values
**           print for that device only (-1: every device).
**
** A frame has bound its parameters and the results of the statements
** before the one it stands at; the variables visible in it are those of
** its lexical chain (Frame.up), outermost first, later names shadowing.
**
** An expression (after `p`, `display`, `break ... if`) is compiled by the
** checker (check_expr) against the variables visible in a frame and run by
** the evaluator (eval_call) in that frame, for every instance on its path.
**
** Everything is printed to standard output; a complaint starts with
** `*** ` (insp_complain), as pdb's do.
*/
#ifndef SHM_INSPECT_H
#define SHM_INSPECT_H

#include <stdbool.h>
#include "check.h"
#include "eval.h"
#include "valprint.h"

typedef struct Insp {
  Checker *C;
  Interp *I;
  bool stopped;              /* the debugger is at a stop: sel is valid */
  Frame *frame;              /* where the run stands (in the trace and at a stop) */
  IrStmt *stmt;              /* frame's statement; NULL at a return */
  Frame *sel;                /* the frame selected with up/down */
  bool main_running;         /* main's statements are running (not a call) */
  int64_t focus;             /* `device N`; -1: every device */
  struct IrVar **made;       /* the variables `!NAME = EXPR` made at stops,
                                each owned by its frame's function; a frame
                                sees those it holds a value of */
  int nmade, capmade;
} Insp;

/* ---- messages and arguments ---- */

/* printf to standard output, a newline, and flush. */
void insp_say(const char *fmt, ...) SHM_PRINTF(1, 2);
/* The same after "*** ": the debugger's complaint. */
void insp_complain(const char *fmt, ...) SHM_PRINTF(1, 2);
/* Write b to standard output, flush, and empty b. */
void insp_emit(Buf *b);
/* A copy of s without surrounding white space (mem_free it). */
char *insp_trim(const char *s);
/* s as a decimal integer with only white space around it. */
bool insp_int(const char *s, int64_t *out);
/* The diagnostics collected, as "message; message", then forgotten. */
void insp_take_diags(Buf *out);

/* ---- source text ---- */

int insp_file_lines(int file);
int insp_line_of(Span sp);

/* ---- meshes and devices ---- */

/* The device at mesh coordinates c (row-major). */
int64_t insp_dev_of(const Mesh *m, const int64_t *c);
void insp_put_axis(Buf *b, const Mesh *m, int k);
/* "(i, j)" and "(1, 0)": a mesh's axes and device d's coordinates. */
void insp_put_axes(Buf *b, const Mesh *m);
void insp_put_coords(Buf *b, const Mesh *m, int64_t d);
/* Is device d on the path of space sp? */
bool insp_on_path(const Space *sp, int64_t d);

/* ---- values ---- */

/* `label = value` on one line, or `label:` and one block per device (of
   device dev only, when dev >= 0). */
void insp_put_named(Buf *b, const char *label, const Space *sp, Val *v, int64_t dev);
/* The device values print for in frame G: the focus, if G is in a body. */
int64_t insp_focus(const Insp *in, Frame *G);
/* `p x global`: the device argument that asks for the global view. */
enum { INSP_GLOBAL = -2, INSP_LAYOUT = -3 };

/* ---- frames ---- */

/* The statement frame G stands at; NULL when its body is done. */
IrStmt *insp_stmt_of(const Insp *in, Frame *G);
/* File and line of frame G; false when it has no source. */
bool insp_frame_pos(const Insp *in, Frame *G, int *file, int *line);

/* Variables, as the debugger lists them. */
typedef struct InspVars {
  IrVar **v;
  int n, cap;
} InspVars;

/* The variables visible in G, outermost first; only G's own with `own`;
   with `dedupe` only the last of each name. */
void insp_vars(const Insp *in, Frame *G, bool own, bool dedupe, InspVars *L);

/* ---- expressions ---- */

/* Compile EXPR where frame G stands; NULL with the reason in err. */
IrFunc *insp_compile(const Insp *in, Frame *G, const char *text, Buf *err);
/* Run a compiled expression in G; results (new references) in out. */
bool insp_run(const Insp *in, Frame *G, IrFunc *f, Val **out, Buf *err);
/* Evaluate EXPR where G stands and print each result to out, under
   `label` when not NULL; false with the reason in err. */
bool insp_eval(const Insp *in, Frame *G, const char *expr, const char *label, int64_t dev, Buf *out, Buf *err);

/* ---- changing the state ---- */

/* `!STMT` at a stop (and a line at (shdb) that binds names): run
   `NAME, ... = EXPR` in the selected frame, for every instance on its
   path.  A name visible there gets the new value (of its type: dtype,
   shape, and varying over no axis its type does not); a new name becomes
   a variable of that frame until it returns.  A lone EXPR prints, as
   `p` does.  Complains (and changes nothing) when it cannot.
   With sandbox >= 0 (`interact`, begun when nmade was sandbox) every
   name set is one of the sandbox's, shadowing the frame's, and
   insp_unmake(in, G, sandbox) ends them. */
void insp_exec(Insp *in, const char *stmt, int sandbox);
void insp_unmake(Insp *in, Frame *G, int from);
/* Does `line` bind names (`NAME, ... = ...`)? */
bool insp_binds(const char *line);
/* Forget the variables `!` made. */
void insp_free(Insp *in);

/* ---- the commands that look ---- */

/* `p EXPR [@ DEVICE]`. */
/* `layout EXPR`: the picture of where the value's blocks are. */
void insp_layout(Insp *in, const char *args);
void insp_print(Insp *in, const char *args);
/* A line at the (shdb) prompt that is no command: print it as an
   expression, or say it is neither a command nor a name. */
void insp_print_line(Insp *in, const char *line);
/* `device [N | (COORDS) | all]`. */
void insp_device(Insp *in, const char *args);
/* `whos`: the names visible at the selected frame, or the top level's. */
void insp_whos(Insp *in);
/* `info mesh` and `info locals`. */
void insp_info_mesh(Insp *in);
void insp_info_locals(Insp *in);
/* `show F`: a function's checked form. */
void insp_show(Insp *in, const char *args);
/* A bare name at the shm> prompt: print a top-level variable's value, or
   a function's checked form.  1 when printed, 0 when no such name,
   -1 when the variable has no value (its statement failed). */
int insp_name(Insp *in, Str name);

#endif
