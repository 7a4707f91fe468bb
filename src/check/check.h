/*
** check.h — the type checker: syntax tree in, checked program (ir.h) out.
**
** The checker computes the dtype, shape and variance set of every binder
** before anything runs, resolves names, applies each primitive's shape and
** variance rules from the primitive table, inserts `pbroadcast` where
** operands disagree in variance, and instantiates functions: a function
** whose parameters are all annotated is checked where it is defined, any
** other at each call, once per distinct list of argument types.
**
** Errors are recorded with diag_error (at most one per statement) and
** checking goes on, so one run reports every static error of a file.
*/
#ifndef SHM_CHECK_H
#define SHM_CHECK_H

#include "ast.h"
#include "buf.h"
#include "ir.h"

typedef struct Checker Checker;

Checker *check_new(void);
void check_free(Checker *C);

/* Parse and check a whole registered file as top-level statements; the
   checked statements are appended to the main function.  Returns the
   number of errors recorded. */
int check_file(Checker *C, int file);

/* The program is all there is (a script, --check, --debug): a function
   never called may use only axis names some mesh of the program has.  (In
   the REPL a mesh may come later.) */
void check_set_whole_program(Checker *C);

/* Undo everything checked since a mark (a REPL input that had errors). */
typedef struct CheckMark {
  void *top;
  int nbody;
} CheckMark;
CheckMark check_mark(Checker *C);
void check_rollback(Checker *C, CheckMark m);

/* The function holding every top-level statement checked so far. */
IrFunc *check_main(Checker *C);

/* Look up a top-level variable or function by name (REPL, debugger). */
IrVar *check_lookup_var(Checker *C, Str name);
bool check_has_func(Checker *C, Str name);
/* Every name bound at top level (variables and functions), newest first. */
int check_names(Checker *C, const char **names, int max, bool *is_func);

/* A debugger expression — a name, a literal, or one equation's right-hand
   side `callee[params] args` (diagnostics name it `source`) — checked as the body of a new function of
   no parameters whose parent is `parent` (the function of the frame the
   debugger looks at; check_main(C) at top level) and whose results are
   the expression's values.  It sees the top-level functions and meshes
   and the variables `vars` (later ones shadow earlier ones), or, when
   nvars < 0, the whole top-level scope.  `ctrl` is the variance of the
   predicates around it (collectives over those axes are refused).  Run
   it with eval_call.  NULL after errors, recorded with diag_error. */
IrFunc *check_expr(Checker *C, const char *source, const char *text, IrFunc *parent, IrVar *const *vars, int nvars,
                   uint32_t ctrl);

/* What the top-level scope binds, newest first, one entry per name. */
typedef enum { CN_VAR, CN_FUNC, CN_MESH } CheckNameKind;
typedef struct CheckName {
  Str name;
  CheckNameKind kind;
  IrVar *var;                 /* CN_VAR */
  IrFunc *fn;                 /* CN_FUNC: the latest checked instance, or NULL */
  AstFunc *ast;               /* CN_FUNC */
  const Mesh *mesh;           /* CN_MESH; CN_FUNC: a shard_map's mesh, or NULL */
} CheckName;
int check_list_names(Checker *C, CheckName *out, int max);

/* A new top-level variable of type t, given its value from outside the
   program (the embedding API's inputs: eval_assign sets it); bound to its
   name in the top-level scope when `bind`, so that later text sees it,
   else reachable only through check_expr's `vars`. */
IrVar *check_new_var(Checker *C, const char *name, const Type *t, bool bind);

/* `show NAME` into out; false when NAME is no function checked yet. */
bool check_show_func(Checker *C, Str name, Buf *out);

#endif
