/*
** superv.h — watching the ranks of `--ranks R` from outside, so that a
** rank that dies is named.
**
** `--ranks R` does not become mpirun: it starts mpirun as a child
** (sup_run) and listens on a socket of its own (an abstract Unix socket,
** named in SHMAPI_SUPERVISOR, which mpirun passes on to the ranks on this
** machine).  Each rank joins at its start (sup_join: its rank and process
** id), says when it is done (sup_done: its output is all written) and
** when it has left MPI (sup_bye), when
** it stops the run itself after saying why (sup_abort: the MPI timeout,
** an MPI failure), and when mpirun stops it with SIGTERM (a handler says
** so, then lets the signal end the rank).  A rank whose connection ends
** without a word died: killed by the kernel's out-of-memory killer, a
** signal, a crash.  mpirun then stops the other ranks (SIGTERM) and exits
** with the dead rank's status (128 + its signal); the supervisor then
** says which rank died, how, and whether rank 0 had written all of the
** output ("the output above is incomplete" if not), and exits 1.  Should
** mpirun not end within SUP_GRACE_S seconds of the death, the supervisor
** stops it, and SUP_GRACE_S later kills it and every rank left.
**
** A rank started by `mpirun` directly (no supervisor in its environment),
** or on another machine (the socket is this machine's), is not watched:
** mpirun's own report (without --quiet) names a rank that died.
**
** The test hook (tests/mpi/fault_injection.test.py; nothing else sets
** it): SHMAPI_TEST_KILL=R:N[:K] makes rank R kill itself with SIGKILL at
** its Nth fault point of kind K (c: fmpi_exchange with its exchange
** posted, during a collective; s: fmpi_sync with its report posted, at
** the end of a statement; o: on rank 0, a part of the merged output half
** written, during output; no K: any kind, counted together).  R:0 counts
** instead: rank R says at its end how many points of each kind it passed.
*/
#ifndef SHM_SUPERV_H
#define SHM_SUPERV_H

#include <stdbool.h>

enum { SUP_GRACE_S = 5 };

/* The launcher: run av (mpirun ... shmapi ...) for nranks ranks, watch,
   report.  Returns the exit status, or -errno when av[0] cannot start. */
int sup_run(char **av, int nranks);

/* A rank: join the supervisor if there is one; done (before
   MPI_Finalize), or stopping the run itself (before MPI_Abort). */
void sup_join(int rank);
void sup_done(int status);
void sup_abort(void);
/* A rank: MPI left, nothing more to do (after MPI_Finalize). */
void sup_bye(void);

/* The test hook: read SHMAPI_TEST_KILL for this rank; at each fault
   point, sup_point() says whether this is the one to die at, and
   sup_die_here() dies (output flushed first).  With N = 0 the rank counts
   the points it passes instead, which sup_counted gives (true then). */
typedef enum SupPoint { SUP_COLLECTIVE, SUP_SYNC, SUP_OUTPUT } SupPoint;
void sup_hook_init(int rank);
bool sup_point(SupPoint kind);
void sup_die_here(void);
bool sup_counted(long counts[3]);

#endif
