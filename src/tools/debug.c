/*
** debug.c — the debugger (see debug.h): the trace, the stop, stepping,
** the stack, and the commands of both prompts.
**
** The debugger is a trace function (eval_set_hook) plus a command loop.
** The trace decides at each event whether to stop: a breakpoint whose
** line or function matches and whose condition holds on some instance
** (dbg_break.c), a pending `step`/`next`/`until`/`return`, or Ctrl-C.  At
** a stop it prints where the run is, what a collective is about to send,
** the displays that changed, and reads commands until one resumes the
** run.  `quit`, `run` and `restart` abandon the running statement
** (eval_abandon); the caller of dbg_run_main sees why.
**
** A frame of the run (eval.h) is shown to the user unless it is the
** wrapper that a decorated shard_map function makes (its one statement is
** the shard_map equation) or the function the debugger compiled for
** `debug f a b`.  Depth counts every frame, shown or not.
**
** A command is a row of commands.def and a handler here.  A handler gets
** the rest of the line and says what the prompt does next: stay, resume
** the run, or take the line for something else after all (`whos x` at
** (shdb) is an expression to print, at shm> a statement).
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include "dbg_break.h"
#include "debug.h"
#include "diag.h"
#include "err.h"
#include "npprint.h"
#include "inspect.h"
#include "valprint.h"
#include "state.h"
#include "show.h"

typedef enum { M_RUN, M_STEP, M_NEXT, M_UNTIL, M_RETURN } Mode;
typedef enum { REQ_NONE, REQ_QUIT, REQ_RUN, REQ_RESTART } Request;

struct Dbg {
  Insp in;                   /* where the run stands, the selected frame, the focus */
  Brk *brk;                  /* breakpoints and displays */
  DbgHooks hooks;
  int prog_file, prog_n;     /* the program file and its statements */
  int at;                    /* the prompt of the command running (DBG_SHM, DBG_SHDB) */
  DbgResult res;             /* what a command at shm> ran */
  Mode mode;
  int target;                /* depth that next/until/return watch */
  int until_file, until_line;
  IrFunc *skip_fn;           /* the function compiled for `debug f a b` */
  bool engaged;              /* stopping was asked for: Ctrl-C stops too */
  Request req;
  EvalEvent ev;              /* the event of the stop */
  char *last_cmd;
  int list_next;             /* where a repeated `list` goes on (0: around the line) */
  /* a collective stepped over: report what was received */
  Frame *coll_frame;
  IrStmt *coll_stmt;
  char **pool;               /* the names dbg_visible_names handed out */
  int npool, cappool;
  char **alias;              /* pdb's aliases: name, then its command, in pairs */
  int nalias, capalias;
  bool expanding;            /* running an alias's command: no alias expands within it */
  int sandbox;               /* `interact`: the first of the variables it made */
  bool jumped;               /* `jump`: the next stop is where it went, not a breakpoint's */
};

/* ---- frames -------------------------------------------------------------------------- */

static int depth_of(Frame *F) {
  int d = 0;
  for (; F && F->caller; F = F->caller) d++;
  return d;
}

/* Is frame G one the user sees (in `where`, `up`, `down`)? */
static bool shown(Dbg *D, Frame *G) {
  if (G->fn == D->skip_fn) return false;
  if (ir_is_wrapper(G->fn)) return G == D->in.frame;
  if (!G->caller && !D->in.main_running) return false;
  return true;
}

/* Shown frames from innermost to outermost. */
static int shown_frames(Dbg *D, Frame **out, int max) {
  int n = 0;
  for (Frame *G = D->in.frame; G && n < max; G = G->caller)
    if (shown(D, G)) out[n++] = G;
  return n;
}

/* The file `break LINE` means: the selected frame's, else the program's. */
static int default_file(Dbg *D) {
  int file, line;
  if (D->in.stopped && insp_frame_pos(&D->in, D->in.sel, &file, &line)) return file;
  return D->prog_file;
}

/* ---- where the run stands ------------------------------------------------------------ */

/* Why some running instances are not on G's path. */
static void put_path_note(Buf *b, Frame *G) {
  Frame *c = G;
  while (c->caller && c->caller->space.active == c->space.active) c = c->caller;
  Frame *p = c->caller;
  if (!p || !c->space.active || !p->cur) return;
  const Space *sp = &p->space;
  const Mesh *m = sp->mesh;
  IrStmt *st = p->cur;
  int64_t n = m->ndev;
  uint8_t *other = mem_calloc((size_t)n);
  int64_t cnt = 0;
  for (int64_t d = 0; d < n; d++)
    if (insp_on_path(sp, d) && !c->space.active[d]) { other[d] = 1; cnt++; }
  if (cnt && st->k == IS_EQN && st->prim == P_COND && st->in[0].var) {
    Val *idx = eval_lookup(p, st->in[0].var);
    int nb = st->at->nfns;
    bool first = true;
    buf_puts(b, " (");
    for (int k = 0; k < nb && idx; k++) {
      uint8_t *set = mem_calloc((size_t)n);
      int64_t here = 0;
      for (int64_t d = 0; d < n; d++) {
        if (!other[d]) continue;
        int64_t x = arr_geti(idx->blk[til_block_of(m, idx->mask, d)], 0);
        if (x < 0) x = 0;
        if (x >= nb) x = nb - 1;
        if (x == k) { set[d] = 1; here++; }
      }
      if (here) {
        if (!first) buf_puts(b, "; ");
        first = false;
        vp_devset(b, set, n);
        buf_printf(b, " take%s branch %d", here == 1 ? "s" : "", k);
        const char *nm = st->at->fns[k]->name;
        if (nm && strcmp(nm, "lambda")) buf_printf(b, " (%s)", nm);
      }
      mem_free(set);
    }
    buf_putc(b, ')');
  } else if (cnt && st->k == IS_EQN && st->prim == P_WHILE) {
    buf_puts(b, " (");
    vp_devset(b, other, n);
    buf_printf(b, " %s left the loop)", cnt == 1 ? "has" : "have");
  } else if (cnt) {
    buf_puts(b, " (");
    vp_devset(b, other, n);
    buf_printf(b, " wait%s at line %d)", cnt == 1 ? "s" : "", st->line);
  }
  mem_free(other);
}

/* `> file:line in f on devices ...` and `-> source`. */
/* In a fori_loop's body: ", iteration i = 3" (the loop index, its first
   parameter; when devices differ, the first running device's, noted). */
static void put_iteration(Buf *b, Frame *G) {
  IrStmt *call = G->caller ? G->caller->cur : NULL;
  if (!call || call->k != IS_EQN || call->prim != P_FORI_LOOP || !call->at || call->at->fns[0] != G->fn ||
      !G->fn->nparams)
    return;
  IrVar *p = G->fn->params[0];
  Val *v = eval_lookup(G, p);
  if (!v) return;
  int64_t d = 0;
  while (G->space.active && d < G->space.ninst && !G->space.active[d]) d++;
  Array *a = v->blk[G->space.mesh ? til_block_of(G->space.mesh, v->mask, d) : 0];
  if (!a || a->size != 1) return;
  buf_printf(b, ", iteration %.*s = %lld", p->name.n, p->name.p, (long long)arr_geti(a, 0));
  if (v->mask) buf_printf(b, " on device %lld (it differs between devices)", (long long)d);
}

static void put_location(Dbg *D, Buf *b, Frame *G, char mark) {
  int file, line;
  if (!insp_frame_pos(&D->in, G, &file, &line)) {
    buf_printf(b, "%c <no source> in %s\n", mark, G->fn->name);
    return;
  }
  buf_printf(b, "%c %s:%d", mark, diag_file_name(file), line);
  if (G->caller) buf_printf(b, " in %s", G->fn->name);
  if (G->space.mesh) {
    buf_puts(b, " on ");
    vp_devset(b, G->space.active, G->space.mesh->ndev);
    put_path_note(b, G);
  }
  put_iteration(b, G);
  buf_puts(b, "\n-> ");
  IrStmt *st = insp_stmt_of(&D->in, G);
  if (G->fn->ast || !G->caller || !st) {
    Str s = diag_line_text(file, line);
    while (s.n && isspace((unsigned char)*s.p)) { s.p++; s.n--; }
    buf_put(b, s.p, (size_t)s.n);
  } else {
    /* generated code (a transposed function): the equation itself */
    Buf e = {0};
    show_equation(&e, st, G->fn->mesh);
    const char *t = buf_cstr(&e), *nl = strchr(t, '\n');
    buf_put(b, t, nl ? (size_t)(nl - t) : strlen(t));
    if (nl && nl[1]) buf_puts(b, " ...");
    buf_free(&e);
  }
  buf_putc(b, '\n');
}

/* ---- collectives --------------------------------------------------------------------- */

static bool communicates(IrStmt *st) {
  if (st->k != IS_EQN || st->prim < 0) return false;
  switch (st->prim) {
  case P_PSUM: case P_PMAX: case P_PMIN: case P_PMEAN: case P_ALL_GATHER: case P_ALL_GATHER_INVARIANT:
  case P_PSUM_SCATTER: case P_PPERMUTE: case P_PSHUFFLE: case P_ALL_TO_ALL:
    return true;
  default:
    return false;
  }
}

/* Device d's index in its group along the collective's axes. */
static int64_t index_in_group(const Mesh *m, const Attrs *at, int64_t d) {
  int64_t c[SHM_MAXAXES], g = 0;
  til_coords(m, d, c);
  for (int k = 0; k < at->naxes; k++) g = g * m->size[at->axes[k]] + c[at->axes[k]];
  return g;
}

/* The device of index g in device d's group. */
static int64_t dev_in_group(const Mesh *m, const Attrs *at, int64_t d, int64_t g) {
  int64_t c[SHM_MAXAXES];
  til_coords(m, d, c);
  for (int k = at->naxes - 1; k >= 0; k--) {
    int a = at->axes[k];
    c[a] = g % m->size[a];
    g /= m->size[a];
  }
  return insp_dev_of(m, c);
}

/* "j" or "(i, j)": a collective's axes. */
static void put_coll_axes(Buf *b, const Mesh *m, const Attrs *at) {
  if (at->naxes != 1) buf_putc(b, '(');
  for (int k = 0; k < at->naxes; k++) {
    if (k) buf_puts(b, ", ");
    insp_put_axis(b, m, at->axes[k]);
  }
  if (at->naxes != 1) buf_putc(b, ')');
}

/* Listings of many items summarised as NumPy summarises a long array:
   up to LIST_WHOLE items whole, else the first and the last LIST_EDGE
   with "..." between. */
enum { LIST_WHOLE = 8, LIST_EDGE = 3 };
static bool list_shown(int64_t i, int64_t n) { return n <= LIST_WHOLE || i < LIST_EDGE || i >= n - LIST_EDGE; }

/* "{0, 1, 2, 3}" or "{0, 1, 2, ..., 65533, 65534, 65535}": the group of
   p devices device d is in; the devices are marked in `listed`. */
static void put_group(Buf *b, const Mesh *m, const Attrs *at, int64_t d, int64_t p, uint8_t *listed, bool show) {
  if (show) buf_puts(b, " {");
  for (int64_t g = 0; g < p; g++) {
    int64_t e = dev_in_group(m, at, d, g);
    listed[e] = 1;
    if (!show) continue;
    if (list_shown(g, p)) buf_printf(b, "%s%lld", g ? ", " : "", (long long)e);
    else if (g == LIST_EDGE) buf_puts(b, ", ...");
  }
  if (show) buf_putc(b, '}');
}

/* ", groups of 4: {0, 1, 2, 3} {4, 5, 6, 7}": the groups of a collective
   over some axes, of the devices in `send`, summarised. */
static void put_groups(Buf *b, const Mesh *m, const Attrs *at, const uint8_t *send, int64_t p) {
  int64_t n = m->ndev, ngroups = 0;
  buf_printf(b, ", groups of %lld:", (long long)p);
  uint8_t *listed = mem_calloc((size_t)n);
  err_defer(mem_free, listed);
  for (int64_t d = 0; d < n; d++)            /* count them, then list them */
    if (send[d] && !listed[d]) put_group(b, m, at, d, p, listed, false), ngroups++;
  for (int64_t d = 0; d < n; d++) listed[d] = 0;
  for (int64_t d = 0, k = 0; d < n; d++) {
    if (!send[d] || listed[d]) continue;
    if (!list_shown(k, ngroups) && k == LIST_EDGE) buf_puts(b, " ...");
    put_group(b, m, at, d, p, listed, list_shown(k, ngroups));
    k++;
  }
  if (ngroups > LIST_WHOLE) buf_printf(b, " (%lld groups)", (long long)ngroups);
  err_undefer(listed);
  mem_free(listed);
}

/* "0 -> 1, 1 -> 2, ...; device 3 sends nothing": a ppermute's pairs on
   the devices of the path (marked in send), summarised. */
static void put_pairs(Buf *b, const Space *sp, const Attrs *at, uint8_t *send) {
  const Mesh *m = sp->mesh;
  int64_t n = m->ndev, npairs = 0;
  int np = at->l[0].n / 2;
  buf_puts(b, ": ");
  for (int pass = 0; pass < 2; pass++) {       /* count them, then list them */
    int64_t k = 0;
    for (int64_t d = 0; d < n; d++) {
      if (!insp_on_path(sp, d)) continue;
      int64_t g = index_in_group(m, at, d);
      for (int i = 0; i < np; i++) {
        if (at->l[0].v[2 * i] != g) continue;
        send[d] = 1;
        if (pass == 1 && list_shown(k, npairs))
          buf_printf(b, "%s%lld -> %lld", k ? ", " : "", (long long)d,
                     (long long)dev_in_group(m, at, d, at->l[0].v[2 * i + 1]));
        else if (pass == 1 && k == LIST_EDGE)
          buf_puts(b, ", ...");
        k++;
      }
    }
    npairs = k;
  }
  if (npairs > LIST_WHOLE) buf_printf(b, " (%lld pairs)", (long long)npairs);
  uint8_t *idle = mem_calloc((size_t)n);
  int64_t nidle = 0;
  for (int64_t d = 0; d < n; d++)
    if (insp_on_path(sp, d) && !send[d]) { idle[d] = 1; nidle++; }
  if (nidle) {
    buf_puts(b, npairs ? "; " : "");
    err_defer(mem_free, idle);
    vp_devset(b, idle, n);
    err_undefer(idle);
    buf_puts(b, nidle == 1 ? " sends nothing" : " send nothing");
  }
  mem_free(idle);
}

/* What a collective about to run sends, device by device. */
static void put_sends(Buf *b, Frame *F, IrStmt *st) {
  const Space *sp = &F->space;
  const Mesh *m = sp->mesh;
  const Attrs *at = st->at;
  Val *in = st->in[0].var ? eval_lookup(F, st->in[0].var) : NULL;
  if (!m || !in) return;
  Str nm = st->in[0].var->name;
  int64_t n = m->ndev;
  int64_t p = 1;
  for (int k = 0; k < at->naxes; k++) p *= m->size[at->axes[k]];
  uint8_t *send = mem_calloc((size_t)n);
  err_defer(mem_free, send);
  buf_printf(b, "%s over ", prim_table[st->prim].name);
  put_coll_axes(b, m, at);
  if (st->prim == P_PPERMUTE || st->prim == P_PSHUFFLE) {
    put_pairs(b, sp, at, send);
  } else {
    for (int64_t d = 0; d < n; d++) send[d] = insp_on_path(sp, d);
    put_groups(b, m, at, send, p);
  }
  buf_printf(b, "\neach device sends %.*s:\n", nm.n, nm.p);
  Space held = {m, n, send};
  vp_value(b, &held, in, true);
  err_undefer(send);
  buf_putc(b, '\n');
  mem_free(send);
}

/* After a collective stepped over: what each device received. */
static void report_received(Dbg *D, Frame *F, IrStmt *st) {
  D->coll_stmt = NULL;
  D->coll_frame = NULL;
  Val *v = st->nout ? eval_lookup(F, st->out[0]) : NULL;
  if (!v) return;
  Buf b = {0};
  Str nm = st->out[0]->name;
  buf_printf(&b, "%s done, each device received %.*s:\n", prim_table[st->prim].name, nm.n ? nm.n : 6,
             nm.n ? nm.p : "result");
  vp_value(&b, &F->space, v, true);
  buf_putc(&b, '\n');
  insp_emit(&b);
  buf_free(&b);
}

/* ---- the commands: stepping ---------------------------------------------------------- */

/* What the prompt does after a command. */
typedef enum { ACT_STAY, ACT_RESUME, ACT_NONE } Act;

typedef Act CmdFn(Dbg *D, const char *args);

/* Resume the run in `mode`, watching the selected frame's depth; a
   collective stepped over reports what each device received. */
static void resume(Dbg *D, Mode mode) {
  D->mode = mode;
  D->target = depth_of(D->in.sel);
  if (mode != M_RUN && mode != M_RETURN && D->ev == EV_LINE && D->in.sel == D->in.frame && D->in.stmt &&
      D->in.frame->space.mesh && communicates(D->in.stmt)) {
    D->coll_frame = D->in.frame;
    D->coll_stmt = D->in.stmt;
  }
}

/* step, next, continue: resume; finish: until this frame returns (at
   the top level, continue); until [LINE]: to a later line of this frame. */
static Act cmd_step(Dbg *D, const char *args) {
  (void)args;
  resume(D, M_STEP);
  return ACT_RESUME;
}

static Act cmd_next(Dbg *D, const char *args) {
  (void)args;
  resume(D, M_NEXT);
  return ACT_RESUME;
}

static Act cmd_continue(Dbg *D, const char *args) {
  (void)args;
  resume(D, M_RUN);
  return ACT_RESUME;
}

static Act cmd_finish(Dbg *D, const char *args) {
  (void)args;
  resume(D, D->in.sel->caller ? M_RETURN : M_RUN);
  return ACT_RESUME;
}

static Act cmd_until(Dbg *D, const char *args) {
  int file, cur;
  insp_frame_pos(&D->in, D->in.sel, &file, &cur);
  int64_t ln = cur + 1;
  if (*args && !insp_int(args, &ln)) { insp_complain("usage: until [LINE]"); return ACT_STAY; }
  if (*args && ln <= cur) {
    insp_complain("\"until\" line number is smaller than current line number");
    return ACT_STAY;
  }
  resume(D, M_UNTIL);
  D->until_file = file;
  D->until_line = (int)ln;
  return ACT_RESUME;
}

/* pdb's jump: the statement at LINE of the current frame's function runs
   next (a later one skips those between; an earlier one runs them again).
   Refused where a statement from LINE on would read a variable of the
   frame that then has no value. */

/* A variable of fn that statement st reads, from fn's own statements or
   from the functions it calls (their captured variables); NULL after
   the last.  *k walks the reads. */
static IrVar *read_of(IrFunc *fn, IrStmt *st, int *k) {
  for (;; (*k)++) {
    int i = *k;
    IrVar *v = NULL;
    if (i < st->nin) v = st->in[i].var;
    else if ((i -= st->nin) < (st->k == IS_PRINT ? st->nitems : 0)) v = st->items[i].atom.var;
    else {
      i -= st->k == IS_PRINT ? st->nitems : 0;
      IrFunc *fs[65];
      int nf = 0;
      if (st->callee) fs[nf++] = st->callee;
      for (int f = 0; st->at && f < st->at->nfns && nf < 65; f++) fs[nf++] = st->at->fns[f];
      for (int f = 0; f < nf && !v; f++) {
        if (i < fs[f]->ncaptured) v = fs[f]->captured[i];
        else i -= fs[f]->ncaptured;
      }
      if (!v) return NULL;
    }
    if (v && v->owner == fn) {
      (*k)++;
      return v;
    }
  }
}

/* Would a run of F's statements from index j on read a variable with no
   value?  Its name and the line reading it, in why. */
static bool jump_reads_unset(Frame *F, int j, char *why, size_t n) {
  IrFunc *fn = F->fn;
  IrVar **set = mem_calloc(sizeof(IrVar *) * (size_t)(fn->nslots + 1));
  bool bad = false;
  for (int s = j; s <= fn->nbody && !bad; s++) {
    IrStmt *st = s < fn->nbody ? fn->body[s] : NULL;
    IrVar *v = NULL;
    if (st) {
      for (int k = 0; !bad && (v = read_of(fn, st, &k));) bad = !eval_lookup(F, v) && !set[v->slot];
    } else {
      for (int k = 0; k < fn->nouts && !bad; k++)
        if ((v = fn->outs[k].var) && v->owner == fn) bad = !eval_lookup(F, v) && !set[v->slot];
    }
    if (bad && st)
      snprintf(why, n, "%.*s, which line %d reads, would have no value", v->name.n, v->name.p, st->line);
    else if (bad)
      snprintf(why, n, "%.*s, which the function returns, would have no value", v->name.n, v->name.p);
    for (int k = 0; st && k < st->nout; k++)
      if (st->out[k] && st->out[k]->slot < fn->nslots) set[st->out[k]->slot] = st->out[k];
  }
  mem_free(set);
  return bad;
}

static Act cmd_jump(Dbg *D, const char *args) {
  Frame *F = D->in.frame;
  int64_t ln;
  if (!insp_int(args, &ln)) { insp_complain("usage: jump LINE"); return ACT_STAY; }
  if (D->in.sel != F) { insp_complain("You can only jump within the bottom frame"); return ACT_STAY; }
  if (D->ev != EV_LINE || !D->in.stmt) { insp_complain("jump works before a statement, not at a return"); return ACT_STAY; }
  int file = D->in.stmt->whole.file, j = -1, lo = 0, hi = 0;
  for (int i = 0; i < F->fn->nbody; i++) {
    IrStmt *st = F->fn->body[i];
    if (st->whole.file != file) continue;
    if (j < 0 && st->line == ln) j = i;
    if (!st->inserted) lo = lo && lo < st->line ? lo : st->line, hi = hi > st->line ? hi : st->line;
  }
  if (j < 0) {
    insp_complain("line %lld is no statement of %s (its statements are on lines %d-%d)", (long long)ln,
                  F->fn->name && *F->fn->name != '<' ? F->fn->name : "the top level", lo, hi);
    return ACT_STAY;
  }
  char why[256];
  if (jump_reads_unset(F, j, why, sizeof why)) {
    insp_complain("jump %lld: %s", (long long)ln, why);
    return ACT_STAY;
  }
  eval_jump(F, j);
  D->mode = M_STEP;
  D->jumped = true;
  return ACT_RESUME;
}

/* `run` and `restart`: at (shdb) they abandon the running statement and
   dbg_run_main starts again; at shm> they run here. */
static Act run_again(Dbg *D, const char *args, bool restart) {
  if (D->at == DBG_SHM && *args) return ACT_NONE;
  if (D->prog_file < 0) {
    insp_complain("no program file to run: start shmapi with -i FILE or --debug FILE");
    return ACT_STAY;
  }
  if (D->at == DBG_SHDB) {
    D->req = restart ? REQ_RESTART : REQ_RUN;
    return ACT_RESUME;
  }
  D->res = dbg_run_main(D, 0, D->prog_n, restart);
  return ACT_STAY;
}

static Act cmd_run(Dbg *D, const char *args) { return run_again(D, args, false); }
static Act cmd_restart(Dbg *D, const char *args) { return run_again(D, args, true); }

/* quit at (shdb): abandon the running statement. */
static Act cmd_quit(Dbg *D, const char *args) {
  (void)args;
  D->req = REQ_QUIT;
  return ACT_RESUME;
}

/* quit at shm>: the REPL leaves. */
static Act cmd_leave(Dbg *D, const char *args) {
  (void)args;
  D->res = DBG_LEAVE;
  return ACT_STAY;
}

/* debug STMT | debug F ARGS: the REPL parses it and runs it here. */
static Act cmd_debug(Dbg *D, const char *args) {
  if (!*args) insp_complain("debug needs a statement or a call: debug y = f x, or debug f x");
  else D->res = D->hooks.debug(D->hooks.ctx, args);
  return ACT_STAY;
}

/* ---- the commands: the stack and the source ------------------------------------------ */

static Act cmd_where(Dbg *D, const char *args) {
  (void)args;
  Frame *fr[512];
  int n = shown_frames(D, fr, 512);
  Buf b = {0};
  for (int i = n - 1; i >= 0; i--) put_location(D, &b, fr[i], fr[i] == D->in.sel ? '>' : ' ');
  insp_emit(&b);
  buf_free(&b);
  return ACT_STAY;
}

/* `up` (dir 1) and `down` (dir -1). */
static Act updown(Dbg *D, const char *args, int dir) {
  int64_t count = 1;
  if (*args && !insp_int(args, &count)) { insp_complain("usage: %s [N]", dir > 0 ? "up" : "down"); return ACT_STAY; }
  Frame *fr[512];
  int n = shown_frames(D, fr, 512);
  int at = 0;
  for (int i = 0; i < n; i++)
    if (fr[i] == D->in.sel) at = i;
  int to = at + (int)(dir * count);
  if (to >= n) {
    if (at == n - 1) { insp_complain("Oldest frame"); return ACT_STAY; }
    to = n - 1;
  }
  if (to < 0) {
    if (at == 0) { insp_complain("Newest frame"); return ACT_STAY; }
    to = 0;
  }
  D->in.sel = fr[to];
  D->list_next = 0;
  Buf b = {0};
  put_location(D, &b, D->in.sel, '>');
  insp_emit(&b);
  buf_free(&b);
  return ACT_STAY;
}

static Act cmd_up(Dbg *D, const char *args) { return updown(D, args, 1); }
static Act cmd_down(Dbg *D, const char *args) { return updown(D, args, -1); }

/* Lines first..last of file, `->` at cur and `B` at breakpoints. */
static void list_lines(Dbg *D, int file, int first, int last, int cur) {
  int nl = insp_file_lines(file);
  if (first < 1) first = 1;
  if (first > nl) { insp_say("[EOF]"); return; }
  if (last > nl) last = nl;
  Buf b = {0};
  for (int l = first; l <= last; l++) {
    Str s = diag_line_text(file, l);
    buf_printf(&b, "%4d %c%s %.*s", l, brk_on_line(D->brk, file, l) ? 'B' : ' ', l == cur ? "->" : "  ", s.n, s.p);
    while (b.n && b.p[b.n - 1] == ' ') b.p[--b.n] = 0;
    buf_putc(&b, '\n');
  }
  insp_emit(&b);
  buf_free(&b);
  D->list_next = last + 1;
}

/* list [FIRST[, LAST] | .]: eleven lines around the line, or on from
   the last list. */
static Act cmd_list(Dbg *D, const char *args) {
  int file, cur;
  if (!insp_frame_pos(&D->in, D->in.sel, &file, &cur)) { insp_complain("no source here"); return ACT_STAY; }
  char *a = insp_trim(args);
  int64_t x, y;
  if (!*a) {
    int first = D->list_next ? D->list_next : cur - 5;
    list_lines(D, file, first < 1 ? 1 : first, (first < 1 ? 1 : first) + 10, cur);
  } else if (!strcmp(a, ".")) {
    list_lines(D, file, cur - 5 < 1 ? 1 : cur - 5, (cur - 5 < 1 ? 1 : cur - 5) + 10, cur);
  } else if (strchr(a, ',')) {
    char *c = strchr(a, ',');
    *c = 0;
    if (!insp_int(a, &x) || !insp_int(c + 1, &y)) insp_complain("usage: list [FIRST[, LAST] | .]");
    else list_lines(D, file, (int)x, (int)(y < x ? x + y : y), cur);
  } else if (insp_int(a, &x)) {
    int first = (int)x - 5 < 1 ? 1 : (int)x - 5;
    list_lines(D, file, first, first + 10, cur);
  } else {
    insp_complain("usage: list [FIRST[, LAST] | .]");
  }
  mem_free(a);
  return ACT_STAY;
}

/* longlist: the selected frame's function, decorator included (at the
   top level, the whole file). */
static Act cmd_longlist(Dbg *D, const char *args) {
  (void)args;
  int file, cur;
  if (!insp_frame_pos(&D->in, D->in.sel, &file, &cur)) { insp_complain("no source here"); return ACT_STAY; }
  IrFunc *fn = D->in.sel->fn;
  if (!D->in.sel->caller || !fn->ast) {
    list_lines(D, file, 1, insp_file_lines(file), cur);
    return ACT_STAY;
  }
  AstFunc *af = fn->ast;
  int first = insp_line_of(af->whole.file >= 0 ? af->whole : af->sp);
  if (af->deco_sp.file == file && af->deco_sp.len) {
    int dl = insp_line_of(af->deco_sp);
    if (dl < first) first = dl;
  }
  int last = af->end_line;
  if (af->whole.file >= 0) {
    Span end = {af->whole.file, af->whole.off + (af->whole.len ? af->whole.len - 1 : 0), 1};
    if (insp_line_of(end) > last) last = insp_line_of(end);
  }
  list_lines(D, file, first, last, cur);
  return ACT_STAY;
}

/* ---- the commands: breakpoints and displays ------------------------------------------ */

/* The breakpoint and display commands, on dbg_break.c; a LINE alone is
   a line of the selected frame's file, else of the program file. */
static Act cmd_break(Dbg *D, const char *args) {
  brk_set(D->brk, &D->in, args, false, default_file(D));
  return ACT_STAY;
}

static Act cmd_tbreak(Dbg *D, const char *args) {
  brk_set(D->brk, &D->in, args, true, default_file(D));
  return ACT_STAY;
}

static Act cmd_clear(Dbg *D, const char *args) {
  brk_clear(D->brk, args, default_file(D));
  return ACT_STAY;
}

static Act cmd_disable(Dbg *D, const char *args) {
  brk_enable(D->brk, args, false);
  return ACT_STAY;
}

static Act cmd_enable(Dbg *D, const char *args) {
  brk_enable(D->brk, args, true);
  return ACT_STAY;
}

static Act cmd_condition(Dbg *D, const char *args) {
  brk_condition(D->brk, args);
  return ACT_STAY;
}

static Act cmd_ignore(Dbg *D, const char *args) {
  brk_ignore(D->brk, args);
  return ACT_STAY;
}

static Act cmd_display(Dbg *D, const char *args) {
  brk_display(D->brk, &D->in, args);
  return ACT_STAY;
}

static Act cmd_undisplay(Dbg *D, const char *args) {
  brk_undisplay(D->brk, args);
  return ACT_STAY;
}

/* ---- the commands: looking ----------------------------------------------------------- */

/* The looking commands, on inspect.c.  `whos` takes no argument: `whos x`
   is an expression (at (shdb)) or a statement (at shm>). */
static Act cmd_print(Dbg *D, const char *args) {
  insp_print(&D->in, args);
  return ACT_STAY;
}

static void put_returns(Dbg *D, Buf *b, Frame *F, const char *prefix);

/* pdb's args: the selected frame's parameters and their values. */
static Act cmd_args(Dbg *D, const char *args) {
  (void)args;
  Frame *F = D->in.sel;
  if (!F || !F->fn->nparams) {
    insp_say(F && F->fn->nparams == 0 && F->caller ? "(no parameters)" : "(the top level has no arguments)");
    return ACT_STAY;
  }
  Buf b = {0};
  int64_t dev = insp_focus(&D->in, F);
  for (int k = 0; k < F->fn->nparams; k++) {
    IrVar *p = F->fn->params[k];
    Val *v = eval_lookup(F, p);
    if (!v) continue;
    char label[128];
    snprintf(label, sizeof label, "%.*s", p->name.n, p->name.p);
    insp_put_named(&b, label, &F->space, v, dev);
  }
  insp_emit(&b);
  buf_free(&b);
  return ACT_STAY;
}

/* pdb's retval: at a return stop, what the function returns. */
static Act cmd_retval(Dbg *D, const char *args) {
  (void)args;
  if (D->in.stmt || D->in.sel != D->in.frame) {
    insp_complain("not at a return: `finish` runs to the end of this function (the stop shows what it returns)");
    return ACT_STAY;
  }
  Buf b = {0};
  put_returns(D, &b, D->in.frame, "");
  insp_emit(&b);
  buf_free(&b);
  return ACT_STAY;
}

static Act cmd_layout(Dbg *D, const char *args) {
  insp_layout(&D->in, args);
  return ACT_STAY;
}

static Act cmd_device(Dbg *D, const char *args) {
  insp_device(&D->in, args);
  return ACT_STAY;
}

static Act cmd_show(Dbg *D, const char *args) {
  insp_show(&D->in, args);
  return ACT_STAY;
}

static Act cmd_whos(Dbg *D, const char *args) {
  if (*args) return ACT_NONE;
  insp_whos(&D->in);
  return ACT_STAY;
}

static Act cmd_info(Dbg *D, const char *args) {
  char *a = insp_trim(args);
  if (!strcmp(a, "locals")) insp_info_locals(&D->in);
  else if (!strcmp(a, "mesh")) insp_info_mesh(&D->in);
  else if (!strcmp(a, "break") || !strcmp(a, "breakpoints") || !strcmp(a, "b")) brk_list(D->brk);
  else if (!strcmp(a, "display")) brk_display(D->brk, &D->in, "");
  else insp_complain("info what? info locals | mesh | break | display");
  mem_free(a);
  return ACT_STAY;
}

/* A line read at `prompt`, without surrounding white space (mem_free
   it); NULL at the end of the input. */
static char *read_trimmed(Dbg *D, const char *prompt) {
  fflush(stdout);
  char *line = D->hooks.read(D->hooks.ctx, prompt);
  if (!line) return NULL;
  char *t = insp_trim(line);
  free(line);
  return t;
}

/* pdb's interact: a prompt of statements and expressions in the
   selected frame, whose names vanish when it ends (Ctrl-D, quit, exit);
   the frame's own variables do not change. */
static void unmake(void *d) {
  Dbg *D = d;
  insp_unmake(&D->in, D->in.sel, D->sandbox);
}

static Act cmd_interact(Dbg *D, const char *args) {
  if (*args) { insp_complain("usage: interact"); return ACT_STAY; }
  const char *fname = D->in.sel->fn->name;
  insp_say("*interactive* in %s: statements and expressions run here for every device on the path; "
           "names set here end with it (Ctrl-D, quit or exit returns to (shdb))",
           fname && *fname != '<' ? fname : "the top level");
  D->sandbox = D->in.nmade;
  err_defer(unmake, D);
  for (char *t; (t = read_trimmed(D, ">>> "));) {
    bool leave = !strcmp(t, "quit") || !strcmp(t, "exit") || !strcmp(t, "quit()") || !strcmp(t, "exit()");
    if (!leave && *t) insp_exec(&D->in, t, D->sandbox);
    mem_free(t);
    if (leave) break;
  }
  err_undefer(D);
  unmake(D);
  insp_say("now exiting the interactive prompt");
  return ACT_STAY;
}

/* pdb's source: the definition of a function, with its line numbers. */
static Act cmd_source(Dbg *D, const char *args) {
  char *t = insp_trim(args);
  CheckName names[1024];
  int n = check_list_names(D->in.C, names, 1024);
  const CheckName *hit = NULL;
  for (int i = 0; i < n && !hit; i++)
    if (str_eq(names[i].name, str_c(t))) hit = &names[i];
  if (!*t) {
    insp_complain("source what? source FUNC shows a function's definition");
  } else if (!hit && prim_lookup(str_c(t)) >= 0) {
    insp_complain("source: '%s' is a primitive: `help %s` describes it", t, t);
  } else if (!hit || hit->kind != CN_FUNC || !hit->ast || hit->ast->whole.file < 0) {
    insp_complain("source: '%s' is %s: source shows a function's definition", t,
                  !hit ? "not defined" : hit->kind == CN_MESH ? "a mesh (`info mesh` shows it)" : "not a function");
  } else {
    Span w = hit->ast->whole;
    size_t len;
    const char *text = diag_file_text(w.file, &len), *p = text, *end = text + w.off + w.len;
    int line = 1;
    for (const char *q = text; q < text + w.off; q++)
      if (*q == '\n') line++, p = q + 1;           /* from the start of its first line */
    while (p < end && p < text + len) {
      const char *e = memchr(p, '\n', (size_t)(text + len - p));
      if (!e) e = text + len;
      insp_say("%4d  %.*s", line++, (int)(e - p), p);
      p = e + 1;
    }
  }
  mem_free(t);
  return ACT_STAY;
}

/* The alias named w, its command (NULL when none). */
static char **alias_of(Dbg *D, const char *w, size_t n) {
  for (int i = 0; i + 1 < D->nalias; i += 2)
    if (strlen(D->alias[i]) == n && !strncmp(D->alias[i], w, n)) return &D->alias[i + 1];
  return NULL;
}

/* pdb's alias: `alias` lists them, `alias NAME` shows one, `alias NAME
   COMMAND` defines it (%1, %2, ... stand for its arguments, %* for all). */
static Act cmd_alias(Dbg *D, const char *args) {
  const char *p = args;
  while (isspace((unsigned char)*p)) p++;
  size_t n = strcspn(p, " \t");
  const char *cmd = p + n;
  while (isspace((unsigned char)*cmd)) cmd++;
  char **have = n ? alias_of(D, p, n) : NULL;
  if (!n) {
    for (int i = 0; i + 1 < D->nalias; i += 2) insp_say("%s = %s", D->alias[i], D->alias[i + 1]);
    if (!D->nalias) insp_say("No aliases.");
  } else if (!*cmd) {
    if (have) insp_say("%.*s = %s", (int)n, p, *have);
    else insp_complain("no alias '%.*s'", (int)n, p);
  } else if (have) {
    char *c = mem_strndup(cmd, strlen(cmd));
    mem_free(*have);
    *have = c;
  } else {
    VEC_GROW(D->alias, D->capalias, D->nalias + 2);
    D->alias[D->nalias] = mem_strndup(p, n);
    D->alias[D->nalias + 1] = mem_strndup(cmd, strlen(cmd));
    D->nalias += 2;
  }
  return ACT_STAY;
}

static Act cmd_unalias(Dbg *D, const char *args) {
  char *t = insp_trim(args);
  char **have = *t ? alias_of(D, t, strlen(t)) : NULL;
  if (!have) {
    insp_complain(*t ? "no alias '%s'" : "unalias NAME", t);
  } else {
    int i = (int)(have - D->alias) - 1;
    mem_free(D->alias[i]);
    mem_free(D->alias[i + 1]);
    memmove(D->alias + i, D->alias + i + 2, sizeof(char *) * (size_t)(D->nalias - i - 2));
    D->nalias -= 2;
  }
  mem_free(t);
  return ACT_STAY;
}

/* An alias's command is over (an err.h cleanup too). */
static void expanded(void *d) { ((Dbg *)d)->expanding = false; }

/* The command an alias stands for, its arguments put in (a new string):
   %1..%9 the words of args, %* all of them; with no % in the alias, the
   arguments follow it. */
static char *alias_expand(const char *alias, const char *args) {
  Buf b = {0};
  const char *w[9];
  size_t wn[9];
  int nw = 0;
  for (const char *p = args; *p && nw < 9;) {
    while (isspace((unsigned char)*p)) p++;
    if (!*p) break;
    w[nw] = p;
    wn[nw] = strcspn(p, " \t");
    p += wn[nw++];
  }
  bool used = false;
  for (const char *p = alias; *p; p++) {
    if (p[0] == '%' && p[1] == '*') {
      buf_puts(&b, args);
      used = true;
      p++;
    } else if (p[0] == '%' && p[1] >= '1' && p[1] <= '9') {
      int k = p[1] - '1';
      if (k < nw) buf_put(&b, w[k], wn[k]);
      used = true;
      p++;
    } else {
      buf_putc(&b, *p);
    }
  }
  if (!used && *args) {
    buf_putc(&b, ' ');
    buf_puts(&b, args);
  }
  char *r = mem_strndup(buf_cstr(&b), b.n);
  buf_free(&b);
  return r;
}

/* ---- the command table and help ------------------------------------------------------ */

static Act cmd_help(Dbg *D, const char *args);
static Act cmd_commands(Dbg *D, const char *args);

/* commands.def twice: its rows as data (which the REPL reads too) and
   their handlers, in the same order. */
const DbgCmd dbg_cmds[] = {
#define CMD(names, also, at, fn, arg, usage, text, rank, shm_help) \
  {names, also, DBG_##at, DBG_ARG_##arg, usage, text, rank, shm_help},
#include "commands.def"
#undef CMD
  {NULL, NULL, 0, DBG_ARG_ANY, NULL, NULL, 0, NULL}
};

static CmdFn *const handlers[] = {
#define CMD(names, also, at, fn, arg, usage, text, rank, shm_help) fn,
#include "commands.def"
#undef CMD
};

/* Is w (n bytes) one of the space-separated words of list? */
static bool has_word(const char *list, const char *w, size_t n) {
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ' ');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == n && !strncmp(p, w, n)) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

const DbgCmd *dbg_find(const char *word, int at) {
  size_t n = strlen(word);
  if (!n) return NULL;
  for (const DbgCmd *c = dbg_cmds; c->names; c++)
    if ((c->at & at) && (has_word(c->names, word, n) || ((at & DBG_SHDB) && has_word(c->also, word, n))))
      return c;
  return NULL;
}

/* Append to b the words of list that usage does not spell, as
   " (w, w" after the *k words already there. */
static void put_forms(Buf *b, const char *list, const char *usage, int *k) {
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, " ");
    char w[32];
    snprintf(w, sizeof w, "%.*s", (int)n, p);
    const char *u = strstr(usage, w);
    bool spelled = u && (u == usage || u[-1] == ' ') && !isalnum((unsigned char)u[n]);
    if (!spelled) buf_printf(b, (*k)++ ? ", %s" : " (%s", w);
    p += n;
    while (*p == ' ') p++;
  }
}

void dbg_help_list(void) {
  insp_say("Debugger commands (short forms in parentheses):");
  for (const DbgCmd *c = dbg_cmds; c->names; c++) {
    if (!(c->at & DBG_SHDB)) continue;
    Buf b = {0};
    int k = 0;
    buf_printf(&b, "  %s", c->usage);
    put_forms(&b, c->also, c->usage, &k);
    put_forms(&b, c->names, c->usage, &k);
    if (k) buf_putc(&b, ')');
    insp_say("%s", buf_cstr(&b));
    buf_free(&b);
  }
  insp_say("An empty line repeats the last command; `!NAME = EXPR` (or `NAME = EXPR`) sets a variable of the\n"
           "selected frame for every device on its path; anything else is printed as an expression.");
  insp_say("`help COMMAND` explains one; `help primitives`, `help collectives` describe the language.");
}

/* `help [TOPIC]`: alone at (shdb), the debugger's commands; a command's
   usage and text, this prompt's row before the other's (`help quit` is
   not the same at both); the REPL knows the rest: its overview (`help`
   alone at shm>), the language's topics, the primitives. */
static Act cmd_help(Dbg *D, const char *args) {
  char *t = insp_trim(args);
  const DbgCmd *c = NULL;
  int other = D->at == DBG_SHM ? DBG_SHDB : DBG_SHM;
  if (!*t && D->at == DBG_SHDB) {
    dbg_help_list();
  } else if ((c = dbg_find(t, D->at)) || (c = dbg_find(t, other))) {
    insp_say("%s", c->usage);
    insp_say("%s", c->text);
  } else if (!D->hooks.help || !D->hooks.help(D->hooks.ctx, t)) {
    if (D->at == DBG_SHM) insp_complain("no help on '%s' (help lists the topics)", t);
    else insp_complain("no help on '%s'", t);
  }
  mem_free(t);
  return ACT_STAY;
}

/* The command word of a line (empty when longer than n - 1), and its
   arguments. */
static const char *split_word(const char *line, char *word, size_t n) {
  while (isspace((unsigned char)*line)) line++;
  size_t i = 0;
  while (line[i] && !isspace((unsigned char)line[i]) && i + 1 < n) {
    word[i] = line[i];
    i++;
  }
  word[i] = 0;
  if (line[i] && !isspace((unsigned char)line[i])) word[0] = 0;
  line += i;
  while (isspace((unsigned char)*line)) line++;
  return line;
}

/* Run the command of `line` at prompt `at`: ACT_NONE when it is none. */
static Act run_command(Dbg *D, const char *line, int at) {
  char w[32];
  const char *args = split_word(line, w, sizeof w);
  char **alias = *w && !D->expanding ? alias_of(D, w, strlen(w)) : NULL;
  if (alias) {                     /* (one level: an alias's command is not expanded again) */
    char *x = alias_expand(*alias, args);
    err_defer(expanded, D);
    err_defer(mem_free, x);
    D->expanding = true;
    args = split_word(x, w, sizeof w);
    const DbgCmd *c = dbg_find(w, at);
    Act a = ACT_STAY;
    if (c) {
      D->at = at;
      a = handlers[c - dbg_cmds](D, args);
    } else if (at == DBG_SHDB) {
      insp_print_line(&D->in, x);  /* an expression, as a line that is no command */
    } else if (D->hooks.input) {
      D->res = D->hooks.input(D->hooks.ctx, x);   /* at shm>: what the REPL makes of it */
    }
    err_undefer(x);
    mem_free(x);
    err_undefer(D);
    D->expanding = false;
    return a;
  }
  const DbgCmd *c = dbg_find(w, at);
  if (!c) return ACT_NONE;
  D->at = at;
  return handlers[c - dbg_cmds](D, args);
}

bool dbg_command(Dbg *D, const char *line, DbgResult *res) {
  D->res = DBG_OK;
  if (run_command(D, line, DBG_SHM) == ACT_NONE) return false;
  if (res) *res = D->res;
  return true;
}

bool dbg_command_pdb(Dbg *D, const char *line, DbgResult *res) {
  char w[32];
  const char *args = split_word(line, w, sizeof w);
  const DbgCmd *c = dbg_find(w, DBG_SHDB);
  if (!c) return false;
  char canon[32];
  snprintf(canon, sizeof canon, "%.*s", (int)strcspn(c->names, " "), c->names);
  D->res = DBG_OK;
  const DbgCmd *at_shm = dbg_find(canon, DBG_SHM);
  if (at_shm) {                     /* q, b f, cl 1: the shm> command of that name */
    D->at = DBG_SHM;
    handlers[at_shm - dbg_cmds](D, args);
  } else if (handlers[c - dbg_cmds] == cmd_print || handlers[c - dbg_cmds] == cmd_layout) {
    D->at = DBG_SHM;                /* p x, pp x: the top level's values */
    handlers[c - dbg_cmds](D, args);
  } else {
    insp_complain("no program is stopped: `%s` works at a (shdb) stop; `debug STATEMENT` runs one under the "
                  "debugger, `break` sets where it stops", w);
  }
  if (res) *res = D->res;
  return true;
}

/* ---- the stop ------------------------------------------------------------------------ */

/* Run one line at (shdb): a command, a statement, or an expression. */
static Act run_line(Dbg *D, const char *t) {
  Act a = ACT_STAY;
  if (*t == '!' || insp_binds(t)) insp_exec(&D->in, t + (*t == '!'), -1);   /* `!y = f x`, `y = f x` */
  else if ((a = run_command(D, t, DBG_SHDB)) == ACT_NONE) insp_print_line(&D->in, t);   /* an expression */
  return a;
}

/* Read and run commands until one resumes the run. */
static void stop_loop(Dbg *D) {
  for (;;) {
    char *t = read_trimmed(D, "(shdb) ");
    if (!t) {
      D->req = REQ_QUIT;
      break;
    }
    if (!*t) {
      mem_free(t);
      if (!D->last_cmd) continue;
      t = mem_strndup(D->last_cmd, strlen(D->last_cmd));
    } else {
      mem_free(D->last_cmd);
      D->last_cmd = NULL;          /* not left dangling if the copy runs out of memory */
      D->last_cmd = mem_strndup(t, strlen(t));
    }
    Act a = run_line(D, t);
    mem_free(t);
    if (a == ACT_RESUME) break;
  }
}

/* A breakpoint's `commands`, one line after another until one resumes
   the run (true then). */
static bool run_bp_commands(Dbg *D, char *cmds) {
  err_defer(mem_free, cmds);
  bool resumed = false;
  for (char *p = cmds, *nl; !resumed && (nl = strchr(p, '\n')); p = nl + 1) {
    *nl = 0;
    if (strcmp(p, "silent")) resumed = run_line(D, p) == ACT_RESUME;
  }
  err_undefer(cmds);
  mem_free(cmds);
  return resumed;
}

/* pdb's commands: read the lines to run when breakpoint N is hit, up to
   a line `end`. */
static Act cmd_commands(Dbg *D, const char *args) {
  int no = brk_number(D->brk, args);
  if (no < 0) return ACT_STAY;
  Buf b = {0};
  err_defer(buf_release, &b);
  for (char *t; (t = read_trimmed(D, "(com) "));) {
    bool end = !strcmp(t, "end");
    if (!end && *t) buf_printf(&b, "%s\n", t);
    mem_free(t);
    if (end) break;
  }
  brk_set_commands(D->brk, no, buf_cstr(&b));
  err_undefer(&b);
  buf_free(&b);
  return ACT_STAY;
}

/* The values F's function returns, each after `prefix` and its name. */
static void put_returns(Dbg *D, Buf *b, Frame *F, const char *prefix) {
  IrFunc *fn = F->fn;
  int64_t dev = insp_focus(&D->in, F);
  for (int i = 0; i < fn->nouts; i++) {
    const IrAtom *o = &fn->outs[i];
    Val *v = o->lit ? val_of(o->lit) : val_ref(eval_lookup(F, o->var));
    if (!v) continue;
    Buf label = {0};
    buf_puts(&label, prefix);
    if (o->var && o->var->name.n) buf_put(&label, o->var->name.p, (size_t)o->var->name.n);
    else buf_printf(&label, "result %d", i);
    insp_put_named(b, buf_cstr(&label), &F->space, v, dev);
    buf_free(&label);
    val_unref(v);
  }
}

/* Stop at statement st of F (its return when ev is EV_RETURN): say
   where, what a collective sends or what the function returns, the
   displays, then take commands. */
static void do_stop(Dbg *D, Frame *F, IrStmt *st, EvalEvent ev, const char *banner, BrkHit *hit) {
  D->in.stopped = true;
  D->in.frame = F;
  D->in.stmt = st;
  D->ev = ev;
  D->in.sel = F;
  D->list_next = 0;
  D->engaged = true;
  D->coll_stmt = NULL;
  D->coll_frame = NULL;
  char *cmds = hit ? hit->cmds : NULL;
  if (!hit || !hit->silent) {
    Buf b = {0};
    if (banner && *banner) buf_printf(&b, "%s\n", banner);
    if (ev == EV_RETURN) buf_puts(&b, "--Return--\n");
    put_location(D, &b, F, '>');
    if (ev == EV_RETURN) {
      put_returns(D, &b, F, "returns ");
    } else if (st && F->space.mesh && communicates(st)) {
      put_sends(&b, F, st);
    }
    insp_emit(&b);
    buf_free(&b);
    brk_show_displays(D->brk, &D->in, false);
  }
  if (!cmds || !run_bp_commands(D, cmds)) stop_loop(D);
  D->in.stopped = false;
  if (D->req != REQ_NONE) eval_abandon(D->in.I);
}

/* ---- the trace ----------------------------------------------------------------------- */

static bool wants_stop(Dbg *D, Frame *F, IrStmt *st, EvalEvent ev) {
  if (D->mode == M_RUN) return false;
  int depth = depth_of(F);
  switch (D->mode) {
  case M_RUN: return false;
  case M_STEP: return true;
  case M_NEXT: return depth <= D->target;
  case M_RETURN: return ev == EV_RETURN ? depth <= D->target : depth < D->target;
  case M_UNTIL:
    if (ev == EV_RETURN) return depth <= D->target;
    if (depth < D->target) return true;
    return depth == D->target && st->whole.file == D->until_file && st->line >= D->until_line;
  }
  return false;
}

/* The evaluator's trace: before each statement and at each return, stop
   for Ctrl-C, a breakpoint, or the pending step; after a collective
   stepped over, report what was received. */
static void trace(Interp *I, Frame *F, IrStmt *st, EvalEvent ev, void *data) {
  (void)I;
  Dbg *D = data;
  if (ev == EV_DONE) {
    if (st == D->coll_stmt && F == D->coll_frame) report_received(D, F, st);
    return;
  }
  if (F->fn == D->skip_fn) return;
  if (ev == EV_LINE && (st->inserted || st->whole.file < 0)) return;
  D->in.frame = F;
  D->in.stmt = st;
  D->ev = ev;
  if (state_cur()->interrupted) {
    state_cur()->interrupted = 0;
    if (!D->engaged) err_throw("interrupted");
    do_stop(D, F, st, ev, "Program interrupted. (Use 'continue' to resume.)", NULL);
    return;
  }
  bool wrapper = ir_is_wrapper(F->fn);
  /* do_stop may abandon the run: keep nothing allocated across it */
  char banner[2048];
  if (D->jumped) {
    D->jumped = false;
    do_stop(D, F, st, ev, NULL, NULL);
    return;
  }
  BrkHit hit;
  if ((!wrapper || ev == EV_LINE) && brk_hit(D->brk, &D->in, F, st, ev, banner, sizeof banner, &hit)) {
    D->mode = M_RUN;
    do_stop(D, F, st, ev, banner, &hit);
    return;
  }
  if (wrapper) return;
  if (wants_stop(D, F, st, ev)) do_stop(D, F, st, ev, NULL, NULL);
}

/* ---- the REPL's entry points --------------------------------------------------------- */

Dbg *dbg_new(Checker *C, Interp *I, const DbgHooks *hooks) {
  Dbg *D = mem_calloc(sizeof *D);
  D->in.C = C;
  D->in.I = I;
  D->in.focus = -1;
  D->brk = brk_new();
  D->hooks = *hooks;
  D->prog_file = -1;
  eval_set_hook(I, trace, D);
  return D;
}

void dbg_free(Dbg *D) {
  if (!D) return;
  eval_set_hook(D->in.I, NULL, NULL);
  brk_free(D->brk);
  mem_free(D->last_cmd);
  for (int i = 0; i < D->npool; i++) mem_free(D->pool[i]);
  mem_free(D->pool);
  for (int i = 0; i < D->nalias; i++) mem_free(D->alias[i]);
  mem_free(D->alias);
  insp_free(&D->in);
  mem_free(D);
}

void dbg_set_program(Dbg *D, int file, int nstmts) {
  D->prog_file = file;
  D->prog_n = nstmts;
}

int dbg_visible_names(Dbg *D, const char **names, int max) {
  if (!D->in.stopped) return 0;
  InspVars L = {0};
  insp_vars(&D->in, D->in.sel, false, true, &L);
  for (int i = 0; i < D->npool; i++) mem_free(D->pool[i]);
  D->npool = 0;
  int n = 0;
  for (int i = 0; i < L.n && n < max; i++) {
    VEC_GROW(D->pool, D->cappool, D->npool + 1);
    D->pool[D->npool++] = mem_strndup(L.v[i]->name.p, (size_t)L.v[i]->name.n);
    names[n++] = D->pool[D->npool - 1];
  }
  mem_free(L.v);
  return n;
}

/* Before a run: no stop yet, stepping (stop_first) or running. */
static void begin_run(Dbg *D, bool stop_first) {
  D->req = REQ_NONE;
  D->mode = stop_first ? M_STEP : M_RUN;
  D->engaged = stop_first;
  D->coll_stmt = NULL;
  D->coll_frame = NULL;
  D->in.stopped = false;
  D->in.frame = NULL;
  D->in.stmt = NULL;
  state_cur()->interrupted = 0;
}

DbgResult dbg_run_main(Dbg *D, int from, int to, bool stop_first) {
  for (;;) {
    begin_run(D, stop_first);
    D->in.main_running = true;
    bool ok = eval_run_to(D->in.I, from, to);
    D->in.main_running = false;
    D->in.frame = NULL;
    D->in.stopped = false;     /* an error thrown while stopped freed the frames */
    Request r = D->req;
    D->req = REQ_NONE;
    D->mode = M_RUN;
    if (r == REQ_RUN || r == REQ_RESTART) {
      from = 0;
      to = D->prog_n;
      stop_first = r == REQ_RESTART;
      insp_say("Running %s from its start%s.", diag_file_name(D->prog_file),
          stop_first ? ", stopped before its first statement" : "");
      continue;
    }
    if (r == REQ_QUIT) return DBG_QUIT;
    return ok ? DBG_OK : DBG_ERROR;
  }
}

DbgResult dbg_run_call(Dbg *D, const char *call, bool stop_first) {
  diag_clear();
  IrFunc *f = check_expr(D->in.C, "<stdin>", call, check_main(D->in.C), NULL, -1, 0);
  if (!f) {       /* every diagnostic, with its place (in a function called, too) */
    fflush(stdout);
    diag_flush(stderr);
    return DBG_ERROR;
  }
  for (int i = 0; i < f->ncaptured; i++)
    if (!eval_global(D->in.I, f->captured[i])) {
      fflush(stdout);
      fprintf(stderr, "shmapi: error: %.*s has no value yet\n", f->captured[i]->name.n, f->captured[i]->name.p);
      return DBG_ERROR;
    }
  Val **outs = mem_calloc(sizeof(Val *) * (size_t)(f->nouts + 1));
  begin_run(D, stop_first);
  D->skip_fn = f;
  Span where = span_none();
  bool ok = eval_call(D->in.I, eval_top(D->in.I), f, outs, true, &where);
  D->skip_fn = NULL;
  D->in.frame = NULL;
  D->in.stopped = false;
  D->mode = M_RUN;
  Request r = D->req;
  D->req = REQ_NONE;
  DbgResult res = ok ? DBG_OK : r == REQ_QUIT ? DBG_QUIT : DBG_ERROR;
  if (ok) {
    Buf b = {0};
    Space sp = {NULL, 1, NULL};
    for (int i = 0; i < f->nouts; i++) {
      vp_value(&b, &sp, outs[i], true);
      buf_putc(&b, '\n');
      val_unref(outs[i]);
    }
    insp_emit(&b);
    buf_free(&b);
  } else if (r == REQ_RUN || r == REQ_RESTART) {
    int to = D->prog_n;
    insp_say("Running %s from its start%s.", diag_file_name(D->prog_file),
        r == REQ_RESTART ? ", stopped before its first statement" : "");
    res = dbg_run_main(D, 0, to, r == REQ_RESTART);
  } else if (r != REQ_QUIT) {
    fflush(stdout);
    diag_print(stderr, where, "error", err_message());
  }
  mem_free(outs);
  return res;
}
