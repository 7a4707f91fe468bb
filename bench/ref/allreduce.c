/*
** allreduce.c — the reference of the psum across ranks (bench/harness.py):
** MPI_Allreduce (sum) of N floats per rank, K times, under mpirun.
**
**   mpirun -np R allreduce N K      prints the seconds of one call (rank 0)
*/
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long n = argc > 1 ? atol(argv[1]) : 1048576, k = argc > 2 ? atol(argv[2]) : 10;
  float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
  if (!x || !y) MPI_Abort(MPI_COMM_WORLD, 1);
  for (long i = 0; i < n; i++) x[i] = (float)rank;
  MPI_Allreduce(x, y, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);      /* warm-up: pages, connections */
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (long r = 0; r < k; r++) MPI_Allreduce(x, y, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double t = (MPI_Wtime() - t0) / (double)k;
  if (rank == 0) printf("%.9f %g\n", t, (double)y[0]);
  free(x);
  free(y);
  MPI_Finalize();
  return 0;
}
