/*
** fabmpi.h — the fabric across processes: the one place that talks to MPI.
**
** `mpirun -np R shmapi prog.shm` runs the program on R processes (ranks).
** Every rank runs the whole top level (it is cheap and the same
** everywhere); inside a shard_map body rank r owns a contiguous, row-major
** range of the mesh's instances (fmpi_range) and computes only their
** blocks.  The fabric (fabric.c) keeps a collective's groups that lie
** within one rank in memory, and hands groups spanning ranks to
** fmpi_exchange, which moves the member blocks between the ranks of the
** group over a sub-communicator made for that set of ranks (cached).  The
** arithmetic of a reduction stays where it is, in shmapi's fixed member
** order, so results are the bytes of the one-process run.
**
** Output: only rank 0 writes.  Every print (and show) is recorded as an
** event under its place in the run (fmpi_path: statement indices, loop
** iterations and branches, from the top level down), its per-device parts
** apart; at the end of each top-level statement fmpi_sync gathers the
** events to rank 0, which merges equal places, sorts devices and writes.
** The same sync carries runtime errors: a rank that fails tells the others
** (they stop waiting, sync and exit), rank 0 reports the first failure in
** the run's order once, and every rank returns failure.  Every wait polls
** with a time limit (SHMAPI_MPI_TIMEOUT seconds, default 600), so a rank
** that dies makes the others exit with a message instead of hanging.
**
** Without MPI (a build without it, or a run not started by mpirun) there
** is one rank and none of this costs anything.
*/
#ifndef SHM_FABMPI_H
#define SHM_FABMPI_H

#include <stdio.h>
#include "array.h"
#include "buf.h"

/* Start MPI when started by mpirun.  Returns 0, or an exit status after
   printing why not (a build without MPI under mpirun). */
int fmpi_init(int *argc, char ***argv);
/* Release the memory the output log and the place keep (at the end). */
void fmpi_release(void);
/* Leave MPI (when started); returns status. */
int fmpi_finish(int status);
/* `--ranks R`: run this command again under mpirun on R processes,
   watched (superv.h: a rank that dies is named); returns the exit status. */
int fmpi_launch(int ranks, int argc, char **argv);
/* This process's rank and the number of ranks (0 and 1 without MPI). */
int fmpi_rank(void);
int fmpi_size(void);
/* The ranks on this machine, this one included (1 without MPI). */
int fmpi_local_size(void);
/* Whether MPI support is compiled in. */
bool fmpi_built(void);

/* The instances [*lo, *hi) of a mesh of ndev that rank r owns. */
void fmpi_range(int64_t ndev, int r, int64_t *lo, int64_t *hi);
/* The rank owning instance inst. */
int fmpi_owner(int64_t ndev, int64_t inst);
static inline bool fmpi_local(int64_t ndev, int64_t inst) {
  return fmpi_size() == 1 || fmpi_owner(ndev, inst) == fmpi_rank();
}

/* Bytes moving from rank `from` to rank `to`: at `from` they are read at
   `src`, at `to` written at `dst` (each rank fills in only its side). */
typedef struct FmpiMove {
  int from, to;
  const void *src;
  void *dst;
  size_t bytes;
} FmpiMove;
/* Do the moves among the ranks `ranks` (ascending, this one among them),
   one message per pair of ranks, straight from and into place.  Every
   rank of the set calls it with the same moves in the same order. */
void fmpi_exchange(const int *ranks, int nranks, const FmpiMove *mv, int nmv);
/* Bytes this rank has sent to other ranks since the start; on rank 0
   after a sync, the bytes all ranks have sent. */
double fmpi_bytes_sent(void);
double fmpi_bytes_crossed(void);

/* The place in the run (see above): fmpi_path_stmt sets the index of the
   statement running at the current depth; fmpi_path_enter(sub) goes one
   call deeper, `sub` naming which branch or iteration; fmpi_path_leave
   comes back.  fmpi_path_reset: at the top level. */
void fmpi_path_reset(void);
void fmpi_path_stmt(int64_t i);
void fmpi_path_enter(int64_t sub);
void fmpi_path_leave(void);
/* The place as a Buf of int64s (for fabric.c's statistics records). */
void fmpi_path_put(Buf *b);

/* An output event at the current place: shared text parts (the same on
   every rank that records the event) and per-device parts. */
void fmpi_out_begin(void);
void fmpi_out_text(const char *p, size_t n);
void fmpi_out_device(int64_t dev, const char *p, size_t n);
/* A value part: `hdr` describes the value, and the fmpi_out_device parts
   that follow (until the next part) carry its blocks, one per device
   here.  Rank 0 hands the header and every rank's blocks, sorted by
   device, to fmpi_sync's formatter, which writes the text. */
void fmpi_out_value(const char *hdr, size_t n);
void fmpi_out_end(void);

/* A device's part of an event as rank 0 reads it. */
typedef struct FmpiPart {
  int64_t dev, n;
  const char *p;
} FmpiPart;
typedef void (*FmpiFormat)(Buf *out, const char *hdr, size_t n, const FmpiPart *parts, int nparts);
/* The writer of value parts, set once before anything runs. */
void fmpi_set_format(FmpiFormat f);

/* The end of a top-level statement, on every rank.  `err`: this rank's
   runtime error message (diagnostic text) or NULL; `extra`: bytes for
   rank 0's `merge` (called there with every rank's, in rank order).  Returns
   false when some rank failed (rank 0 has printed the error). */
typedef void (*FmpiMerge)(const char *const *p, const size_t *n, int nranks);
bool fmpi_sync(const char *err, const Buf *extra, FmpiMerge merge);
/* Whether this rank stopped waiting because another failed.  (It then
   takes part in the sync from where it waited and exits with status 1:
   what the abandoned exchange reads and writes stays untouched.) */
bool fmpi_abandoned(void);

#endif
