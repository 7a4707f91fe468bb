/*
** dbg_break.h — the debugger's breakpoints and displays.
**
** A Brk holds a session's breakpoints and displays; debug.c owns one and
** reaches it only through these functions.  A breakpoint is at a line of
** a loaded file or at a function (its first statement), numbered from 1
** in the order set; it may be temporary (deleted when first hit),
** disabled, passed `ignore` more times, and have a condition.
**
** A condition is an expression (inspect.h) compiled where the run stands
** and run for every instance on the path: it holds on an instance where
** its value, or any element of it, is true, and the stop names those
** instances.  Each breakpoint caches what it compiled per statement (and
** enclosing statement), since a frame's visible variables depend on both.
**
** A display is an expression printed at each stop where what it prints
** changed since the last stop.
**
** The commands print to standard output; complaints start with `***`.
*/
#ifndef SHM_DBG_BREAK_H
#define SHM_DBG_BREAK_H

#include "inspect.h"

typedef struct Brk Brk;

Brk *brk_new(void);
void brk_free(Brk *B);

/* `break ARGS` (`tbreak` when temp): LINE, FILE:LINE or FUNC, then
   optionally `if COND`; with no ARGS, the list.  A LINE alone is a line
   of `file` (-1: none known). */
void brk_set(Brk *B, Insp *in, const char *args, bool temp, int file);
/* `info break`. */
void brk_list(Brk *B);
/* `clear [N... | LOCATION]`, a LINE alone in `file`. */
void brk_clear(Brk *B, const char *args, int file);
/* `enable N...` (on) and `disable N...`. */
void brk_enable(Brk *B, const char *args, bool on);
/* `condition N [COND]` and `ignore N COUNT`. */
void brk_condition(Brk *B, const char *args);
void brk_ignore(Brk *B, const char *args);
/* Is an enabled breakpoint on this line (`list` marks it B)? */
bool brk_on_line(Brk *B, int file, int line);
/* The trace's question: does a breakpoint stop the run at statement st
   of frame F (at F's return when ev is EV_RETURN)?  Counts the hit, and
   deletes a temporary breakpoint, leaving in banner what the stop says
   first ("Breakpoint 2, gt k 2 held on device 3"). */
typedef struct BrkHit {
  char *cmds;                /* the breakpoint's `commands` (mem_free them), or NULL */
  bool silent;               /* they include `silent`: the stop says nothing */
} BrkHit;
bool brk_hit(Brk *B, Insp *in, Frame *F, IrStmt *st, EvalEvent ev, char *banner, size_t n, BrkHit *hit);
/* `commands [N]`: breakpoint N (the last one set when args is empty), or
   -1 after complaining; then the lines read, each ending in a newline,
   set as its commands (none when empty).  `silent` among them keeps the
   stop from saying where it is. */
int brk_number(Brk *B, const char *args);
void brk_set_commands(Brk *B, int no, const char *lines);

/* `display [EXPR]` (with none, the list) and `undisplay [EXPR | N]`. */
void brk_display(Brk *B, Insp *in, const char *args);
void brk_undisplay(Brk *B, const char *args);
/* At a stop: print the displays whose value changed (all when force). */
void brk_show_displays(Brk *B, Insp *in, bool force);

#endif
