/*
** ref.c — the C references bench/run measures shmapi against.
**
**   ref config
**       OpenBLAS's build configuration and thread count, one line each.
**   ref gemm M K N NPROD GROUP REPS
**       NPROD independent sgemm products (MxK)·(KxN) with OpenBLAS, then
**       the psum's adds: the products summed in consecutive groups of
**       GROUP into NPROD/GROUP results (one pass per group).  What
**       matmul_basic computes, with no interpreter around it.
**   ref memcpy BYTES REPS
**       memcpy of BYTES between two buffers already faulted in: the memory
**       bandwidth floor.
**   ref memcpy-fresh BYTES REPS
**       the same into a buffer freshly mapped (mmap) each time, page faults
**       included: what first-touching new memory costs.
**   ref sbgemm M K N NPROD GROUP REPS
**       `ref gemm` with bf16 operands (OpenBLAS cblas_sbgemm, f32 products),
**       the psum's adds in f32: the bf16 matmul_basic's reference.  OpenBLAS
**       builds without bf16 lack the function: then it says so on stderr
**       and exits with status 3 (the harness falls back to `ref gemm`).
**   ref matmul-whole THREADS
**       matmul_basic as a C programmer writes it, a whole process: the
**       inputs a = arange(4096*4096) * 5.9604645e-08 and b =
**       arange(4096*1024) * 2.3841858e-07 in f32 (filled on THREADS
**       threads), one sgemm (4096x4096)·(4096x1024), the sum of the
**       result printed.  Nothing timed inside: the harness times the process.
**   ref matmul-expert THREADS
**       matmul_basic as an expert writes it in C, a whole process: the
**       same inputs filled on THREADS threads (OpenMP); for each of the 4
**       row blocks of c, the 2 block products of matmul_basic's mesh
**       (a[i, j] 1024x2048 read in place with its row pitch, b[j]
**       2048x1024) summed by OpenBLAS itself -- the first written, the
**       second accumulated with beta = 1: no temporary, no add loop --
**       and the sum of c on THREADS threads (in double), printed.
**   ref ew-chain N THREADS
**       x = arange(N) * (1/N) in f32, then the 10 elementwise ops of
**       bench/workloads/ew_chain.shm, each a loop over THREADS threads
**       (OpenMP) writing into one result buffer; the sum printed.  A whole
**       process, like matmul-whole.
**   ref ew-fused N THREADS
**       ew-chain with the 10 ops fused by hand: x filled by one OpenMP
**       loop, then one OpenMP loop computing each y[i] from x[i] through
**       all 10 ops in registers, then the sum.  A whole process.
**   ref conv N H W C O REPS
**       a 3x3 convolution, stride 1, SAME padding, of an NHWC image
**       x = arange * 6.1035156e-07 and an HWIO kernel w = arange *
**       2.7126736e-05 (f32), as a C programmer writes it: for each image
**       the im2col matrix (H*W rows of 3*3*C, zeros in the padding), then
**       one OpenBLAS sgemm by w as a (9C x O) matrix.  The reference of
**       bench/workloads/conv_resnet.shm; prints y[0, 0, 0:2, 0:4] once.
**   ref spawn RSSFILE CMD [ARG...]
**       run CMD, wait for it, write its peak RSS in KiB (ru_maxrss) and
**       its minor page faults (ru_minflt) to RSSFILE and exit with its
**       status.  The harness runs shmapi through
**       this small process because a child forked from Python inherits
**       Python's peak RSS into ru_maxrss.
**
** Each timed mode runs one untimed warm-up, then prints REPS lines, the
** seconds each repetition took.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) {
    fprintf(stderr, "ref: out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

static long arg(char **argv, int i) { return strtol(argv[i], NULL, 10); }

/* The psum's adds: S[s] = C[s*group] + ... + C[s*group + group-1], each
   of mn floats, in that order. */
static void add_groups(float *const *C, float *const *S, long nsum, long group, long mn) {
  for (long s = 0; s < nsum; s++) {
    float *o = S[s];
    const float *x = C[s * group], *y = group > 1 ? C[s * group + 1] : NULL;
    if (y)
      for (long i = 0; i < mn; i++) o[i] = x[i] + y[i];
    else
      memcpy(o, x, sizeof(float) * (size_t)mn);
    for (long g = 2; g < group; g++) {
      const float *z = C[s * group + g];
      for (long i = 0; i < mn; i++) o[i] += z[i];
    }
  }
}

/* nsum zeroed result buffers of mn floats. */
static float **sums_new(long nsum, long mn) {
  float **S = xmalloc(sizeof(float *) * (size_t)nsum);
  for (long s = 0; s < nsum; s++) {
    S[s] = xmalloc(sizeof(float) * (size_t)mn);
    memset(S[s], 0, sizeof(float) * (size_t)mn);
  }
  return S;
}

/* Keeps the results observable: a checksum on stderr. */
static void checksum(float *const *S, long nsum, long mn) {
  double cs = 0;
  for (long s = 0; s < nsum; s++) cs += S[s][0] + S[s][mn - 1];
  fprintf(stderr, "checksum %g\n", cs);
}

static int gemm(char **argv) {
  long M = arg(argv, 2), K = arg(argv, 3), N = arg(argv, 4);
  long nprod = arg(argv, 5), group = arg(argv, 6), reps = arg(argv, 7);
  if (M <= 0 || K <= 0 || N <= 0 || nprod <= 0 || group <= 0 || nprod % group || reps <= 0) {
    fprintf(stderr, "ref gemm: bad arguments\n");
    return 2;
  }
  float **A = xmalloc(sizeof(float *) * (size_t)nprod), **B = xmalloc(sizeof(float *) * (size_t)nprod),
        **C = xmalloc(sizeof(float *) * (size_t)nprod);
  long nsum = nprod / group;
  float **S = sums_new(nsum, M * N);
  for (long p = 0; p < nprod; p++) {
    A[p] = xmalloc(sizeof(float) * (size_t)(M * K));
    B[p] = xmalloc(sizeof(float) * (size_t)(K * N));
    C[p] = xmalloc(sizeof(float) * (size_t)(M * N));
    for (long i = 0; i < M * K; i++) A[p][i] = (float)((i + p) % 97) * 0.01f;
    for (long i = 0; i < K * N; i++) B[p][i] = (float)((i * 7 + p) % 89) * 0.01f;
    memset(C[p], 0, sizeof(float) * (size_t)(M * N));
  }
  for (long r = -1; r < reps; r++) {
    double t0 = now();
    for (long p = 0; p < nprod; p++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A[p], (int)K, B[p],
                  (int)N, 0.0f, C[p], (int)N);
    add_groups(C, S, nsum, group, M * N);
    double t1 = now();
    if (r >= 0) printf("%.9f\n", t1 - t0);
  }
  checksum(S, nsum, M * N);
  return 0;
}

/* im2col of one NHWC image (H x W x C) for a 3x3 window, stride 1, padding
   1: row (i, j) holds the 9 positions' C features, zeros outside. */
static void im2col3(const float *x, long H, long W, long C, float *col) {
  for (long i = 0; i < H; i++)
    for (long j = 0; j < W; j++)
      for (long di = -1; di <= 1; di++)
        for (long dj = -1; dj <= 1; dj++) {
          long si = i + di, sj = j + dj;
          if (si < 0 || si >= H || sj < 0 || sj >= W) memset(col, 0, sizeof(float) * (size_t)C);
          else memcpy(col, x + (si * W + sj) * C, sizeof(float) * (size_t)C);
          col += C;
        }
}

static int conv(char **argv) {
  long N = arg(argv, 2), H = arg(argv, 3), W = arg(argv, 4), C = arg(argv, 5), O = arg(argv, 6), reps = arg(argv, 7);
  if (N <= 0 || H <= 0 || W <= 0 || C <= 0 || O <= 0 || reps <= 0) {
    fprintf(stderr, "ref conv: bad arguments\n");
    return 2;
  }
  long nx = N * H * W * C, nw = 9 * C * O, K = 9 * C, P = H * W;
  float *x = xmalloc(sizeof(float) * (size_t)nx), *w = xmalloc(sizeof(float) * (size_t)nw);
  float *col = xmalloc(sizeof(float) * (size_t)(P * K)), *y = xmalloc(sizeof(float) * (size_t)(N * P * O));
  for (long i = 0; i < nx; i++) x[i] = (float)i * 6.1035156e-07f;
  for (long i = 0; i < nw; i++) w[i] = (float)i * 2.7126736e-05f;
  for (long r = -1; r < reps; r++) {
    double t0 = now();
    for (long n = 0; n < N; n++) {
      im2col3(x + n * P * C, H, W, C, col);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)P, (int)O, (int)K, 1.0f, col, (int)K, w, (int)O,
                  0.0f, y + n * P * O, (int)O);
    }
    double t1 = now();
    if (r >= 0) printf("%.9f\n", t1 - t0);
  }
  fprintf(stderr, "corner");
  for (long j = 0; j < 2; j++)
    for (long o = 0; o < 4; o++) fprintf(stderr, " %g", y[j * O + o]);
  fprintf(stderr, "\n");
  return 0;
}

/* An f32 to bf16 conversion, rounding to nearest even (no NaNs here). */
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

typedef void (*SbgemmFn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint, blasint,
                         float, const bfloat16 *, blasint, const bfloat16 *, blasint, float, float *, blasint);

static int sbgemm(char **argv) {
  SbgemmFn fn = (SbgemmFn)dlsym(RTLD_DEFAULT, "cblas_sbgemm");
  if (!fn) {
    fprintf(stderr, "ref sbgemm: this OpenBLAS has no cblas_sbgemm\n");
    return 3;
  }
  long M = arg(argv, 2), K = arg(argv, 3), N = arg(argv, 4);
  long nprod = arg(argv, 5), group = arg(argv, 6), reps = arg(argv, 7);
  if (M <= 0 || K <= 0 || N <= 0 || nprod <= 0 || group <= 0 || nprod % group || reps <= 0) {
    fprintf(stderr, "ref sbgemm: bad arguments\n");
    return 2;
  }
  bfloat16 **A = xmalloc(sizeof(bfloat16 *) * (size_t)nprod), **B = xmalloc(sizeof(bfloat16 *) * (size_t)nprod);
  float **C = xmalloc(sizeof(float *) * (size_t)nprod);
  long nsum = nprod / group;
  float **S = sums_new(nsum, M * N);
  for (long p = 0; p < nprod; p++) {
    A[p] = xmalloc(sizeof(bfloat16) * (size_t)(M * K));
    B[p] = xmalloc(sizeof(bfloat16) * (size_t)(K * N));
    C[p] = xmalloc(sizeof(float) * (size_t)(M * N));
    for (long i = 0; i < M * K; i++) A[p][i] = to_bf16((float)((i + p) % 97) * 0.01f);
    for (long i = 0; i < K * N; i++) B[p][i] = to_bf16((float)((i * 7 + p) % 89) * 0.01f);
    memset(C[p], 0, sizeof(float) * (size_t)(M * N));
  }
  for (long r = -1; r < reps; r++) {
    double t0 = now();
    for (long p = 0; p < nprod; p++)
      fn(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A[p], (int)K, B[p], (int)N, 0.0f, C[p], (int)N);
    add_groups(C, S, nsum, group, M * N);
    double t1 = now();
    if (r >= 0) printf("%.9f\n", t1 - t0);
  }
  checksum(S, nsum, M * N);
  return 0;
}

/* matmul_basic as one C program: inputs, one sgemm, the sum printed. */
static int matmul_whole(char **argv) {
  int nt = (int)arg(argv, 2);
  long M = 4096, K = 4096, N = 1024;
  if (nt <= 0) {
    fprintf(stderr, "ref matmul-whole: bad arguments\n");
    return 2;
  }
  float *a = xmalloc(sizeof(float) * (size_t)(M * K)), *b = xmalloc(sizeof(float) * (size_t)(K * N)),
        *c = xmalloc(sizeof(float) * (size_t)(M * N));
#pragma omp parallel for num_threads(nt) schedule(static)
  for (long i = 0; i < M * K; i++) a[i] = (float)i * 5.9604645e-08f;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (long i = 0; i < K * N; i++) b[i] = (float)i * 2.3841858e-07f;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)K, b, (int)N, 0.0f,
              c, (int)N);
  double s = 0;
  for (long i = 0; i < M * N; i++) s += c[i];
  printf("%.9g\n", s);
  free(a);
  free(b);
  free(c);
  return 0;
}

/* matmul_basic's mesh {i: 4, j: 2} as an expert writes it: the block
   products of each row block accumulated into c by sgemm (beta = 1). */
static int matmul_expert(char **argv) {
  int nt = (int)arg(argv, 2);
  long M = 4096, K = 4096, N = 1024, mi = 4, mj = 2, bm = M / mi, bk = K / mj;
  if (nt <= 0) {
    fprintf(stderr, "ref matmul-expert: bad arguments\n");
    return 2;
  }
  float *a = xmalloc(sizeof(float) * (size_t)(M * K)), *b = xmalloc(sizeof(float) * (size_t)(K * N)),
        *c = xmalloc(sizeof(float) * (size_t)(M * N));
#pragma omp parallel for num_threads(nt) schedule(static)
  for (long i = 0; i < M * K; i++) a[i] = (float)i * 5.9604645e-08f;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (long i = 0; i < K * N; i++) b[i] = (float)i * 2.3841858e-07f;
  for (long i = 0; i < mi; i++)
    for (long j = 0; j < mj; j++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)bm, (int)N, (int)bk, 1.0f, a + i * bm * K + j * bk,
                  (int)K, b + j * bk * N, (int)N, j ? 1.0f : 0.0f, c + i * bm * N, (int)N);
  double s = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : s)
  for (long i = 0; i < M * N; i++) s += c[i];
  printf("%.9g\n", s);
  free(a);
  free(b);
  free(c);
  return 0;
}

/* x, then the 10 ops of ew_chain.shm into one buffer y, each op a
   parallel loop; the sum printed. */
static int ew_chain(char **argv) {
  long n = arg(argv, 2);
  int nt = (int)arg(argv, 3);
  if (n <= 0 || nt <= 0) {
    fprintf(stderr, "ref ew-chain: bad arguments\n");
    return 2;
  }
  float *x = xmalloc(sizeof(float) * (size_t)n), *y = xmalloc(sizeof(float) * (size_t)n);
  float scale = 1.0f / (float)n;
#pragma omp parallel num_threads(nt)
  {
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) x[i] = (float)i * scale;
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) y[i] = x[i] * 2.0f;
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) y[i] = y[i] + 1.0f;
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) y[i] = tanhf(y[i]);
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) y[i] = y[i] - x[i];
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) y[i] = y[i] * y[i];
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) y[i] = expf(y[i]);
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) y[i] = fmaxf(y[i], 1.5f);
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) y[i] = y[i] / 3.0f;
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) y[i] = sqrtf(y[i]);
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) y[i] = y[i] + x[i];
  }
  double s = 0;
  for (long i = 0; i < n; i++) s += y[i];
  printf("%.9g\n", s);
  free(x);
  free(y);
  return 0;
}

/* ew-chain fused by hand: one loop, each element through the 10 ops. */
static int ew_fused(char **argv) {
  long n = arg(argv, 2);
  int nt = (int)arg(argv, 3);
  if (n <= 0 || nt <= 0) {
    fprintf(stderr, "ref ew-fused: bad arguments\n");
    return 2;
  }
  float *x = xmalloc(sizeof(float) * (size_t)n), *y = xmalloc(sizeof(float) * (size_t)n);
  float scale = 1.0f / (float)n;
#pragma omp parallel num_threads(nt)
  {
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) x[i] = (float)i * scale;
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) {
      float v = x[i] * 2.0f;
      v = v + 1.0f;
      v = tanhf(v);
      v = v - x[i];
      v = v * v;
      v = expf(v);
      v = fmaxf(v, 1.5f);
      v = v / 3.0f;
      v = sqrtf(v);
      y[i] = v + x[i];
    }
  }
  double s = 0;
  for (long i = 0; i < n; i++) s += y[i];
  printf("%.9g\n", s);
  free(x);
  free(y);
  return 0;
}

static int copy(char **argv, int fresh) {
  long bytes = arg(argv, 2), reps = arg(argv, 3);
  if (bytes <= 0 || reps <= 0) {
    fprintf(stderr, "ref memcpy: bad arguments\n");
    return 2;
  }
  char *src = xmalloc((size_t)bytes), *dst = fresh ? NULL : xmalloc((size_t)bytes);
  memset(src, 1, (size_t)bytes);
  if (dst) memset(dst, 2, (size_t)bytes);
  long sink = 0;
  for (long r = -1; r < reps; r++) {
    double t0 = now();
    char *d = dst;
    if (fresh) {
      d = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (d == MAP_FAILED) {
        perror("ref: mmap");
        return 1;
      }
    }
    memcpy(d, src, (size_t)bytes);
    double t1 = now();
    sink += d[bytes / 2];
    if (fresh) munmap(d, (size_t)bytes);
    src[r & 1023] = (char)r;
    if (r >= 0) printf("%.9f\n", t1 - t0);
  }
  fprintf(stderr, "sink %ld\n", sink);
  return 0;
}

static int spawn(int argc, char **argv) {
  (void)argc;
  pid_t pid = fork();
  if (pid < 0) {
    perror("ref: fork");
    return 1;
  }
  if (pid == 0) {
    execvp(argv[3], argv + 3);
    perror("ref: exec");
    _exit(127);
  }
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) {
    perror("ref: wait4");
    return 1;
  }
  FILE *f = fopen(argv[2], "w");
  if (f) {
    fprintf(f, "%ld %ld\n", ru.ru_maxrss, ru.ru_minflt);
    fclose(f);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int main(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[1], "spawn")) return spawn(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "config")) {
    printf("%s\n%d\n", openblas_get_config(), openblas_get_num_threads());
    return 0;
  }
  if (argc == 8 && !strcmp(argv[1], "gemm")) return gemm(argv);
  if (argc == 8 && !strcmp(argv[1], "sbgemm")) return sbgemm(argv);
  if (argc == 8 && !strcmp(argv[1], "conv")) return conv(argv);
  if (argc == 3 && !strcmp(argv[1], "matmul-whole")) return matmul_whole(argv);
  if (argc == 3 && !strcmp(argv[1], "matmul-expert")) return matmul_expert(argv);
  if (argc == 4 && !strcmp(argv[1], "ew-chain")) return ew_chain(argv);
  if (argc == 4 && !strcmp(argv[1], "ew-fused")) return ew_fused(argv);
  if (argc == 4 && !strcmp(argv[1], "memcpy")) return copy(argv, 0);
  if (argc == 4 && !strcmp(argv[1], "memcpy-fresh")) return copy(argv, 1);
  fprintf(stderr,
          "usage: ref config | ref gemm M K N NPROD GROUP REPS | ref sbgemm M K N NPROD GROUP REPS | "
          "ref conv N H W C O REPS | "
          "ref matmul-whole THREADS | ref matmul-expert THREADS | ref ew-chain N THREADS | ref ew-fused N THREADS | "
          "ref memcpy BYTES REPS | "
          "ref memcpy-fresh BYTES REPS | ref spawn RSSFILE CMD [ARG...]\n");
  return 2;
}
