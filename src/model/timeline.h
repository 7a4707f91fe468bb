/*
** timeline.h — the modelled schedule of a run on real hardware.
**
** A Timeline is fed what a run does, equation by equation, with the
** instances that run each one (the evaluator's observer, eval.h, in a real
** run; abstract.c's walk of the checked program with --abstract), and
** builds what the hardware would do:
**
**   - each device has a compute stream and a communication stream.  A
**     local equation runs on the compute stream when its operands are
**     ready (cost_local); a collective runs on the communication stream as
**     soon as every member of its group has its operand and the stream is
**     free (cost_collective): XLA's async collectives, started as early as
**     the data allows, so that independent compute overlaps them.  An
**     equation that needs a collective's result waits for it: that wait
**     (behind earlier collectives, or for slower members, included) is the
**     exposed communication; a wait for anything else is idle time.
**   - values are tracked per device: when each becomes ready, and the
**     bytes it holds in HBM from the equation that makes it until its last
**     use (a function's results and loop carries pass on; the blocks of a
**     shard_map's arguments stay for the whole body).  The peak per device,
**     and the statement where it peaks, are kept.
**   - per source line: executions, modelled time, collective bytes, and
**     the resource that limits it.
**
** Only shard_map bodies run on the devices; statements outside any
** shard_map are the host's (building inputs, checking results) and cost
** nothing here, unless tl_model_top says they run on the devices too.
**
** The events: tl_call when a function's parameters are bound (site: the
** statement calling it: a call, cond, while, fori_loop or shard_map; the
** timeline knows from it where the parameters come from), tl_return when
** its body has run, tl_before / tl_after around every statement.  Frames
** are identified by opaque keys (the evaluator's Frame pointers).
*/
#ifndef SHM_TIMELINE_H
#define SHM_TIMELINE_H

#include <stdio.h>
#include "cost.h"
#include "eval.h"

typedef struct Timeline Timeline;

/* A timeline on `hw`; `place` is the user's placement (hw_place) or NULL.
   `events`: keep every equation's interval (for tl_trace_*). */
Timeline *tl_new(const Hw *hw, const char *place, bool events);
void tl_free(Timeline *T);

/* The events (see above).  `active` is the running instances (NULL: all)
   of a frame's `ninst`; `mesh` NULL at top level. */
void tl_call(Timeline *T, const void *key, const void *caller, IrFunc *fn, const IrStmt *site, const Mesh *mesh,
             const uint8_t *active);
void tl_return(Timeline *T, const void *key);
void tl_before(Timeline *T, const void *key, const IrStmt *st, int index);
void tl_after(Timeline *T, const void *key, const IrStmt *st, int index);
/* The top level's frame (its key), before its first statement. */
void tl_top(Timeline *T, const void *key, IrFunc *main);

/* --model-top: statements outside any shard_map run on the devices (those
   of the program's largest mesh), replicated, or split as their
   placement says (hostplace.h); the report marks their lines.  Set before
   the first event. */
void tl_model_top(Timeline *T, bool on);

/* The evaluator's observer that feeds T (eval_set_observer). */
EvalObserver tl_observer(Timeline *T);

/* A statement whose control flow depends on data (--abstract): noted
   once per statement, listed by tl_report. */
void tl_note(Timeline *T, const IrStmt *st, const char *what);

/* The report of --time: per device compute, communication, exposed
   communication and idle; peak memory; the per-line table. */
void tl_report(Timeline *T, FILE *out);
/* The report's totals as numbers: the makespan (seconds); the most any
   one device spent computing, communicating, and communicating exposed
   (not hidden behind compute); the highest peak HBM of a device (bytes);
   the bytes collectives sent (all devices); the devices modelled. */
typedef struct TlTotals {
  double makespan, compute, comm, exposed, peak_hbm, bytes_sent;
  int64_t devices;
} TlTotals;
void tl_totals(const Timeline *T, TlTotals *out);

/* The report's numbers one by one (the embedding API hands them out as
   data; tl_report prints the same).  A device: its busy time on each
   stream, its exposed communication and idle time (see tl_totals), its
   peak HBM in bytes. */
typedef struct TlDevice {
  double compute, comm, exposed, idle, peak_hbm;
} TlDevice;
void tl_device(const Timeline *T, int64_t d, TlDevice *out);
/* Every device's numbers, into out[0 .. tl_ndevices) (linear: tl_device
   finds the makespan each time). */
void tl_devices(const Timeline *T, TlDevice *out);
/* The rows of the per-line table, hottest first: every line with time
   or collective bytes (the report folds those past the 40th into one
   line).  Times and FLOPs and HBM bytes (one device's) are summed over
   the line's runs; coll_bytes are all devices'; wait is the report's
   `waited`.  Fills out (NULL: only counts) and returns how many. */
typedef struct TlLine {
  int file, line;
  const IrStmt *first;        /* its first equation modelled (prim, backward, source) */
  long calls;
  double time, compute, comm, wait, flops, hbm_bytes, coll_bytes;
  CostLimit limit;
  CostAlgo algo;              /* how it ran: a kernel, fused, a collective's algorithm */
} TlLine;
int tl_lines(Timeline *T, TlLine *out);
/* The device with the highest peak HBM (*dev) and the statement where it
   peaked (NULL when no device ran). */
const IrStmt *tl_peak(const Timeline *T, int64_t *dev);
/* Equations run outside any shard_map (not modelled). */
long tl_outside(const Timeline *T);
/* The data-dependent notes of --abstract ("line N: what: source"). */
int tl_nnotes(const Timeline *T);
const char *tl_note_text(const Timeline *T, int i);

/* A placement that failed (a mesh too large for the hardware): the
   message, or NULL. */
const char *tl_error(const Timeline *T);

/* ---- what the trace writers read (tracefile.h) ------------------------------------------ */

typedef struct TlEvent {
  double start, dur;          /* seconds */
  int32_t dev;
  uint8_t comm;               /* on the communication stream */
  uint8_t limit;              /* CostLimit */
  const IrStmt *st;
  int32_t flow;               /* ppermute: the flow id of what this device sends, or -1 */
  int32_t flow_in;            /* ppermute: the flow id of what it receives, or -1 */
} TlEvent;

int64_t tl_nevents(const Timeline *T);
/* The ppermute flows (ids 0 .. tl_nflows - 1). */
int64_t tl_nflows(const Timeline *T);
const TlEvent *tl_events(const Timeline *T);
int64_t tl_ndevices(const Timeline *T);
double tl_makespan(const Timeline *T);
const Hw *tl_hw(const Timeline *T);
/* The name of an equation's event: "LINE: source text" (up to n bytes). */
void tl_event_name(const IrStmt *st, char *out, size_t n);
/* The same, "FILE:LINE: source text" when the line is an imported file's
   (the peak HBM's place in the report). */
void tl_place_name(const IrStmt *st, char *out, size_t n);

#endif
