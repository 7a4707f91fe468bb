/*
** _api.c — the embedding API (include/shmapi.h) tested as a user of
** libshmapi.so would use it (run by api.test.sh, also under valgrind).
**
** Checks: two states running different programs at once in two threads,
** arrays of several dtypes in (copied and borrowed) and out against the
** values computed here, a syntax and a type error as values (file, line,
** column, message, text), the memory and step limits as errors that leave
** the state usable, the per-device blocks of a shard_map call with their
** mesh coordinates, print going to the callback, the cost model's report
** (its text, and its tables as data equal to the text's numbers, from a
** run and from an abstract call of types without data),
** and that the library writes nothing to file descriptors 1 and 2 (both
** are redirected to files for the whole run and must stay empty).
**
** Prints "ok N - what" / "not ok N - what" (TAP) to the original stdout;
** SHM_API_ROUNDS sets how many calls each thread makes (default 200).
*/
#include <math.h>
#include <pthread.h>
#include <shmapi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static FILE *tap;
static int ntests, nfailed;

static void check(int ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(tap, "%s %d - ", ok ? "ok" : "not ok", ++ntests);
  vfprintf(tap, fmt, ap);
  fputc('\n', tap);
  va_end(ap);
  fflush(tap);
  if (!ok) nfailed++;
}

static void show_diags(shmapi_State *S) {
  for (int i = 0; i < shmapi_ndiags(S); i++) fprintf(tap, "# %s", shmapi_diag(S, i)->text);
}

static shmapi_Array arr(int dtype, int ndim, const int64_t *shape, void *data) {
  shmapi_Array a;
  memset(&a, 0, sizeof a);
  a.dtype = dtype;
  a.ndim = ndim;
  for (int d = 0; d < ndim; d++) a.shape[d] = shape[d];
  a.data = data;
  return a;
}

/* ---- two states in two threads ------------------------------------------------ */

/* Program A: a matrix product and a scaled sum; program B: a shard_map
   psum over four devices.  Each thread checks every result. */
static const char prog_a[] =
    "def mm(a, b) {\n"
    "  c = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b\n"
    "  return c\n"
    "}\n"
    "def axpy(k, x, y) {\n"
    "  kx = mul k x\n"
    "  r = add kx y\n"
    "  return r\n"
    "}\n";

static const char prog_b[] =
    "mesh m = {i: 4}\n"
    "@shard_map[mesh=m, in_specs=P('i'), out_specs=P(None)]\n"
    "def total(xb) {\n"
    "  s = psum[axes='i'] xb\n"
    "  return s\n"
    "}\n";

typedef struct Job {
  int which, rounds, bad;
  char why[256];
} Job;

static void *run_a(Job *J) {
  shmapi_State *S = shmapi_open(NULL);
  if (!S || shmapi_load_string(S, "a.shm", prog_a, strlen(prog_a))) {
    snprintf(J->why, sizeof J->why, "program A did not load");
    J->bad++;
    shmapi_close(S);
    return NULL;
  }
  for (int r = 0; r < J->rounds && !J->bad; r++) {
    /* a: 3x4, b: 4x2, values depending on r */
    double a[12], b[8];
    for (int i = 0; i < 12; i++) a[i] = (i % 5) - 2 + r;
    for (int i = 0; i < 8; i++) b[i] = 0.5 * i - r;
    int64_t sa[2] = {3, 4}, sb[2] = {4, 2};
    shmapi_Array in[2] = {arr(SHMAPI_F64, 2, sa, a), arr(SHMAPI_F64, 2, sb, b)};
    shmapi_Array *out[1];
    int n = 0;
    if (shmapi_call(S, "mm", in, 2, out, 1, &n) || n != 1 || out[0]->dtype != SHMAPI_F64 || out[0]->ndim != 2 ||
        out[0]->shape[0] != 3 || out[0]->shape[1] != 2) {
      snprintf(J->why, sizeof J->why, "mm failed in round %d", r);
      J->bad++;
      break;
    }
    const double *c = out[0]->data;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 2; j++) {
        double want = 0;
        for (int k = 0; k < 4; k++) want += a[i * 4 + k] * b[k * 2 + j];
        if (c[i * 2 + j] != want) {
          snprintf(J->why, sizeof J->why, "mm[%d,%d] = %g, want %g (round %d)", i, j, c[i * 2 + j], want, r);
          J->bad++;
        }
      }
    shmapi_array_free(out[0]);
    /* axpy on i32 */
    int32_t k = r + 2, x[5], y[5];
    for (int i = 0; i < 5; i++) x[i] = i - r, y[i] = 3 * i;
    int64_t s5[1] = {5};
    shmapi_Array in3[3] = {arr(SHMAPI_I32, 0, NULL, &k), arr(SHMAPI_I32, 1, s5, x), arr(SHMAPI_I32, 1, s5, y)};
    if (shmapi_call(S, "axpy", in3, 3, out, 1, &n) || n != 1 || out[0]->dtype != SHMAPI_I32) {
      snprintf(J->why, sizeof J->why, "axpy failed in round %d", r);
      J->bad++;
      break;
    }
    for (int i = 0; i < 5; i++)
      if (((int32_t *)out[0]->data)[i] != k * x[i] + y[i]) {
        snprintf(J->why, sizeof J->why, "axpy[%d] wrong in round %d", i, r);
        J->bad++;
      }
    shmapi_array_free(out[0]);
  }
  size_t left = shmapi_close(S);
  if (left) {                        /* another thread's allocations counted here */
    snprintf(J->why, sizeof J->why, "%zu bytes left in state A", left);
    J->bad++;
  }
  return NULL;
}

static void *run_b(Job *J) {
  shmapi_State *S = shmapi_open(NULL);
  if (!S || shmapi_load_string(S, "b.shm", prog_b, strlen(prog_b))) {
    snprintf(J->why, sizeof J->why, "program B did not load");
    J->bad++;
    shmapi_close(S);
    return NULL;
  }
  for (int r = 0; r < J->rounds && !J->bad; r++) {
    float x[8];
    for (int i = 0; i < 8; i++) x[i] = (float)(i * (r + 1));
    int64_t s8[1] = {8};
    shmapi_Array in = arr(SHMAPI_F32, 1, s8, x);
    shmapi_Array *out[1];
    int n = 0;
    if (shmapi_call(S, "total", &in, 1, out, 1, &n) || n != 1 || out[0]->shape[0] != 2) {
      snprintf(J->why, sizeof J->why, "total failed in round %d", r);
      J->bad++;
      break;
    }
    const float *s = out[0]->data;
    for (int j = 0; j < 2; j++) {
      float want = 0;
      for (int d = 0; d < 4; d++) want += x[2 * d + j];
      if (s[j] != want) {
        snprintf(J->why, sizeof J->why, "total[%d] = %g, want %g (round %d)", j, s[j], want, r);
        J->bad++;
      }
    }
    shmapi_array_free(out[0]);
  }
  size_t left = shmapi_close(S);
  if (left) {
    snprintf(J->why, sizeof J->why, "%zu bytes left in state B", left);
    J->bad++;
  }
  return NULL;
}

static void *thread_main(void *p) {
  Job *J = p;
  return J->which ? run_b(J) : run_a(J);
}

static void test_threads(int rounds) {
  Job jobs[2] = {{0, rounds, 0, ""}, {1, rounds, 0, ""}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, thread_main, &jobs[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  check(!jobs[0].bad, "thread A: %d rounds of mm and axpy in its own state %s", rounds, jobs[0].why);
  check(!jobs[1].bad, "thread B: %d rounds of a shard_map psum in its own state %s", rounds, jobs[1].why);
}

/* ---- dtypes in and out ----------------------------------------------------------- */

static const char prog_dt[] =
    "def twice(x) {\n"
    "  y = add x x\n"
    "  return y\n"
    "}\n"
    "def negate(x) {\n"
    "  y = not x\n"
    "  return y\n"
    "}\n";

static void test_dtypes(void) {
  shmapi_State *S = shmapi_open(NULL);
  int rc = shmapi_load_string(S, "dt.shm", prog_dt, strlen(prog_dt));
  check(rc == SHMAPI_OK, "a program loads");
  int64_t s23[2] = {2, 3};
  /* f32, f64, i8, i64, u16, c64: twice, element by element */
  struct { int dt; } cases[] = {{SHMAPI_F32}, {SHMAPI_F64}, {SHMAPI_I8}, {SHMAPI_I64}, {SHMAPI_U16}, {SHMAPI_C64}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int dt = cases[c].dt;
    unsigned char buf[6 * 16], want[6 * 16];
    size_t es = shmapi_dtype_size(dt);
    for (int i = 0; i < 6; i++) {
      double v = i * 3 - 4 + 0.25 * (dt == SHMAPI_F32 || dt == SHMAPI_F64 || dt == SHMAPI_C64);
      switch (dt) {
      case SHMAPI_F32: ((float *)buf)[i] = (float)v; ((float *)want)[i] = (float)(2 * v); break;
      case SHMAPI_F64: ((double *)buf)[i] = v; ((double *)want)[i] = 2 * v; break;
      case SHMAPI_I8: ((int8_t *)buf)[i] = (int8_t)v; ((int8_t *)want)[i] = (int8_t)(2 * v); break;
      case SHMAPI_I64: ((int64_t *)buf)[i] = (int64_t)v * ((int64_t)1 << 33); ((int64_t *)want)[i] = (int64_t)v * ((int64_t)1 << 34); break;
      case SHMAPI_U16: ((uint16_t *)buf)[i] = (uint16_t)(i * 1000 + 7); ((uint16_t *)want)[i] = (uint16_t)(2 * (i * 1000 + 7)); break;
      case SHMAPI_C64:
        ((float *)buf)[2 * i] = (float)v, ((float *)buf)[2 * i + 1] = (float)-i;
        ((float *)want)[2 * i] = (float)(2 * v), ((float *)want)[2 * i + 1] = (float)(-2 * i);
        break;
      }
    }
    shmapi_Array in = arr(dt, 2, s23, buf), *out[1];
    int n = 0;
    rc = shmapi_call(S, "twice", &in, 1, out, 1, &n);
    int ok = rc == SHMAPI_OK && n == 1 && out[0]->dtype == dt && out[0]->ndim == 2 && out[0]->shape[0] == 2 &&
             out[0]->shape[1] == 3 && out[0]->nbytes == 6 * es && !memcmp(out[0]->data, want, 6 * es);
    check(ok, "twice on %s[2,3]: dtype, shape and every element", shmapi_dtype_name(dt));
    if (!ok) show_diags(S);
    if (rc == SHMAPI_OK) shmapi_array_free(out[0]);
  }
  /* bool: not */
  uint8_t b[4] = {1, 0, 0, 1};
  int64_t s4[1] = {4};
  shmapi_Array in = arr(SHMAPI_BOOL, 1, s4, b), *out[1];
  int n = 0;
  rc = shmapi_call(S, "negate", &in, 1, out, 1, &n);
  int ok = rc == SHMAPI_OK && out[0]->dtype == SHMAPI_BOOL;
  for (int i = 0; ok && i < 4; i++) ok = ((uint8_t *)out[0]->data)[i] == !b[i];
  check(ok, "not on bool[4]");
  if (rc == SHMAPI_OK) shmapi_array_free(out[0]);

  /* a borrowed global and a copied one, used by text loaded after them */
  float w[4] = {1, 2, 3, 4}, v[4] = {10, 20, 30, 40};
  shmapi_Array gw = arr(SHMAPI_F32, 1, s4, w), gv = arr(SHMAPI_F32, 1, s4, v);
  rc = shmapi_set_global(S, "w", &gw, SHMAPI_BORROW);
  rc |= shmapi_set_global(S, "v", &gv, SHMAPI_COPY);
  v[0] = -1;                       /* the copy does not see it */
  const char use[] = "z = mul w v\nprint z\n";
  rc |= shmapi_load_string(S, "use.shm", use, strlen(use));
  rc |= shmapi_run(S);
  shmapi_Array *z = NULL;
  rc |= shmapi_get_global(S, "z", &z);
  ok = rc == SHMAPI_OK && z && z->dtype == SHMAPI_F32 && z->shape[0] == 4;
  for (int i = 0; ok && i < 4; i++) ok = ((float *)z->data)[i] == w[i] * 10 * (i + 1);
  check(ok, "globals in (borrowed and copied), a program over them run, its variable out");
  if (!ok) show_diags(S);
  shmapi_array_free(z);
  rc = shmapi_get_global(S, "nothere", &z);
  check(rc == SHMAPI_MISUSE && z == NULL && shmapi_ndiags(S) == 1 && strstr(shmapi_diag(S, 0)->message, "nothere"),
        "an unknown variable is SHMAPI_MISUSE, named in the diagnostic");
  size_t left = shmapi_close(S);
  check(left == 0, "closed, the state had released every byte (%zu left)", left);
}

/* ---- errors as values ----------------------------------------------------------------- */

static void test_errors(void) {
  shmapi_State *S = shmapi_open(NULL);
  const char syn[] = "x = [1.0, 2.0]\ny = add x x x(\n";
  int rc = shmapi_load_string(S, "syntax.shm", syn, strlen(syn));
  const shmapi_Diag *d = shmapi_diag(S, 0);
  int ok = rc == SHMAPI_ERROR && shmapi_ndiags(S) >= 1 && d && d->file && !strcmp(d->file, "syntax.shm") &&
           d->line == 2 && d->col > 1 && !strcmp(d->kind, "error") && d->message[0] &&
           !strncmp(d->text, "syntax.shm:2:", 13) && strstr(d->text, "y = add x x x(") && strchr(d->text, '^');
  check(ok, "a syntax error: file, line 2, column, message and the caret text");
  if (!ok) show_diags(S);

  const char ty[] = "a = [1.0, 2.0, 3.0]\nb = [1.0, 2.0]\n\nc = add a b\n";
  rc = shmapi_load_string(S, "types.shm", ty, strlen(ty));
  d = shmapi_diag(S, 0);
  ok = rc == SHMAPI_ERROR && shmapi_ndiags(S) >= 1 && d && !strcmp(d->file, "types.shm") && d->line == 4 &&
       d->col >= 1 && strstr(d->message, "f32[3]") && strstr(d->message, "f32[2]");
  check(ok, "a type error: types.shm line 4, the message names both shapes");
  if (!ok) show_diags(S);
  if (d) fprintf(tap, "# %s", d->text);

  /* the state is still usable: what failed was not kept */
  const char good[] = "c = [1, 2]\n";
  rc = shmapi_load_string(S, "good.shm", good, strlen(good));
  rc |= shmapi_run(S);
  check(rc == SHMAPI_OK && shmapi_ndiags(S) == 0, "after the errors the state loads and runs a good program");

  rc = shmapi_load_file(S, "/nonexistent/dir/x.shm");
  check(rc == SHMAPI_MISUSE && shmapi_ndiags(S) == 1 && strstr(shmapi_diag(S, 0)->message, "cannot open"),
        "a missing file is an error value, not output");

  shmapi_close(S);
}

/* ---- limits ------------------------------------------------------------------------------ */

static void test_limits(void) {
  shmapi_Limits lim = {1 << 20, 0, 0};
  shmapi_State *S = shmapi_open(&lim);
  const char big[] =
      "def big(k) {\n"
      "  x = iota[dtype=f32, shape=(1048576,), dimension=0]\n"
      "  y = mul x k\n"
      "  return y\n"
      "}\n"
      "def small(k) {\n"
      "  x = iota[dtype=f32, shape=(4,), dimension=0]\n"
      "  y = mul x k\n"
      "  return y\n"
      "}\n"
      "def more(c) {\n"
      "  r = lt c 1000000\n"
      "  return r\n"
      "}\n"
      "def inc(c) {\n"
      "  d = add c 1\n"
      "  return d\n"
      "}\n"
      "def count(c) {\n"
      "  w = while[cond_jaxpr=more, body_jaxpr=inc] c\n"
      "  return w\n"
      "}\n";
  int rc = shmapi_load_string(S, "limits.shm", big, strlen(big));
  check(rc == SHMAPI_OK, "the limits program loads");
  float k = 2;
  shmapi_Array in = arr(SHMAPI_F32, 0, NULL, &k), *out[1];
  int n = 0;
  rc = shmapi_call(S, "big", &in, 1, out, 1, &n);
  const shmapi_Diag *d = shmapi_diag(S, 0);
  int ok = rc == SHMAPI_ERROR && n == 0 && d && strstr(d->message, "out of memory") && strstr(d->message, "1.0 MiB") &&
           d->file && !strcmp(d->file, "limits.shm") && d->line == 3;
  /* line 3: the iota and the mul run fused, so the one buffer allocated
     is the mul's (x never exists) */
  check(ok, "the memory limit: an error at limits.shm line 3, the process goes on");
  if (!ok) show_diags(S);
  rc = shmapi_call(S, "small", &in, 1, out, 1, &n);
  ok = rc == SHMAPI_OK && ((float *)out[0]->data)[3] == 6;
  check(ok, "after it, the same state calls a small function");
  if (rc == SHMAPI_OK) shmapi_array_free(out[0]);

  shmapi_Limits steps = {1 << 20, 100, 0};
  shmapi_set_limits(S, &steps);
  int32_t c0 = 999950;
  in = arr(SHMAPI_I32, 0, NULL, &c0);
  rc = shmapi_call(S, "count", &in, 1, out, 1, &n);
  ok = rc == SHMAPI_OK && ((int32_t *)out[0]->data)[0] == 1000000;
  check(ok, "50 loop steps under a limit of 100 run");
  if (rc == SHMAPI_OK) shmapi_array_free(out[0]);
  c0 = 0;
  rc = shmapi_call(S, "count", &in, 1, out, 1, &n);
  d = shmapi_diag(S, 0);
  ok = rc == SHMAPI_ERROR && d && strstr(d->message, "100") && strstr(d->message, "step");
  check(ok, "the step limit: a million steps under a limit of 100 is an error");
  if (!ok) show_diags(S);
  if (d) fprintf(tap, "# %s", d->text);
  size_t left = shmapi_close(S);
  check(left == 0, "after the limits' errors, every byte was released (%zu left)", left);
}

/* ---- per-device values -------------------------------------------------------------------- */

static void test_devices(void) {
  shmapi_State *S = shmapi_open(NULL);
  const char prog[] =
      "mesh m = {x: 2, y: 3}\n"
      "@shard_map[mesh=m, in_specs=P('x', 'y'), out_specs=P('x', 'y')]\n"
      "def blocks(a) {\n"
      "  b = mul a 10.0\n"
      "  return b\n"
      "}\n";
  int rc = shmapi_load_string(S, "dev.shm", prog, strlen(prog));
  double a[4 * 6];
  for (int i = 0; i < 24; i++) a[i] = i;
  int64_t s[2] = {4, 6};
  shmapi_Array in = arr(SHMAPI_F64, 2, s, a);
  shmapi_Devices *D = NULL;
  rc |= shmapi_call_devices(S, "blocks", &in, 1, &D);
  int ok = rc == SHMAPI_OK && D && D->naxes == 2 && !strcmp(D->axis[0], "x") && !strcmp(D->axis[1], "y") &&
           D->axis_size[0] == 2 && D->axis_size[1] == 3 && D->ndevices == 6 && D->nouts == 1 && D->nblocks == 6;
  check(ok, "a shard_map call on a 2x3 mesh: 6 devices, axes x and y");
  if (!ok) show_diags(S);
  int good = ok;
  for (int64_t k = 0; ok && k < D->nblocks; k++) {
    const shmapi_Block *b = &D->blocks[k];
    int64_t cx = b->coords[0], cy = b->coords[1];
    good &= b->device == k && cx == k / 3 && cy == k % 3 && b->array && b->array->shape[0] == 2 &&
            b->array->shape[1] == 2;
    for (int i = 0; good && i < 2; i++)
      for (int j = 0; j < 2; j++)
        good &= ((double *)b->array->data)[i * 2 + j] == 10 * a[(cx * 2 + i) * 6 + cy * 2 + j];
  }
  check(ok && good, "each device's block: its coordinates and its 2x2 elements");
  ok = ok && D->outs[0]->shape[0] == 4 && D->outs[0]->shape[1] == 6;
  for (int i = 0; ok && i < 24; i++) ok = ((double *)D->outs[0]->data)[i] == 10 * a[i];
  check(ok, "the call's result put together from the blocks");
  shmapi_devices_free(D);
  shmapi_close(S);
}

/* ---- print, the cost model ------------------------------------------------------------------- */

static void collect(void *ud, const char *text, size_t n) {
  char *b = ud;
  size_t have = strlen(b);
  if (have + n < 4096) memcpy(b + have, text, n), b[have + n] = 0;
}

static void test_print_and_cost(void) {
  shmapi_State *S = shmapi_open(NULL);
  const char prog[] =
      "mesh m = {i: 4}\n"
      "@shard_map[mesh=m, in_specs=P('i'), out_specs=P(None)]\n"
      "def f(xb) {\n"
      "  y = psum[axes='i'] xb\n"
      "  return y\n"
      "}\n"
      "x = iota[dtype=f32, shape=(4096,), dimension=0]\n"
      "y = f x\n"
      "s = reduce_sum[axes=(0,)] y\n"
      "print \"sum:\", s\n";
  static char printed[4096];
  shmapi_load_string(S, "cost.shm", prog, strlen(prog));
  shmapi_run(S);
  check(printed[0] == 0, "print with no writer set goes nowhere");
  shmapi_close(S);

  S = shmapi_open(NULL);
  shmapi_set_print(S, collect, printed);
  shmapi_load_string(S, "cost.shm", prog, strlen(prog));
  shmapi_Cost *c = NULL;
  int rc = shmapi_run_cost(S, "tpu-v5e", &c);
  /* the sum over 1024 positions of the 4 devices' sums: sum of 0..4095 */
  int ok = rc == SHMAPI_OK && !strcmp(printed, "sum: 8386560.0\n");
  check(ok, "print goes to the writer: %s", printed);
  if (!ok) show_diags(S);
  ok = rc == SHMAPI_OK && c && strstr(c->report, "modelled on") && strstr(c->report, "psum") && c->makespan > 0 &&
       c->devices == 4 && c->comm > 0 && c->bytes_sent > 0;
  check(ok, "the cost report: its text, makespan %g s, %lld devices, comm %g s, %g bytes sent", c ? c->makespan : 0,
        c ? (long long)c->devices : 0, c ? c->comm : 0, c ? c->bytes_sent : 0);
  shmapi_cost_free(c);
  rc = shmapi_run_cost(S, "no-such-chip", &c);
  check(rc == SHMAPI_ERROR && c == NULL && strstr(shmapi_diag(S, 0)->message, "no-such-chip"),
        "an unknown hardware is an error value");
  shmapi_close(S);
}

/* ---- the cost report as data ------------------------------------------------------------------ */

/* Seconds and bytes as the report prints them (timeline.c's fmt_time, fmt_bytes). */
static void fmt_time(char *out, size_t n, double t) {
  if (t == 0) snprintf(out, n, "0");
  else if (t < 1e-6) snprintf(out, n, "%.4g ns", t * 1e9);
  else if (t < 1e-3) snprintf(out, n, "%.4g us", t * 1e6);
  else if (t < 1) snprintf(out, n, "%.4g ms", t * 1e3);
  else snprintf(out, n, "%.4g s", t);
}

static void fmt_bytes(char *out, size_t n, double b) {
  if (b == 0) snprintf(out, n, "-");
  else if (b < 1e3) snprintf(out, n, "%.0f B", b);
  else if (b < 1e6) snprintf(out, n, "%.4g kB", b / 1e3);
  else if (b < 1e9) snprintf(out, n, "%.4g MB", b / 1e6);
  else snprintf(out, n, "%.4g GB", b / 1e9);
}

/* Does the report's text have the row of line l, with its numbers? */
static int text_has_line(const char *report, const shmapi_CostLine *l) {
  char t[32], b[32], w[32], row[400];
  fmt_time(t, sizeof t, l->time);
  if (l->time > 0 && l->time < 1e-9) snprintf(t, sizeof t, "<1 ns");     /* a fused equation's share */
  fmt_bytes(b, sizeof b, l->coll_bytes);
  fmt_time(w, sizeof w, l->waited);
  snprintf(row, sizeof row, "  %5d %7lld %11s %5.1f%% %11s %11s %-8s %-9s %s%s\n", l->line, l->runs, t,
           100 * l->share, b, l->waited > 0 ? w : "-", l->limit, l->how, l->backward ? "(backward) " : "", l->source);
  return strstr(report, row) != NULL;
}

static int same_cost(const shmapi_Cost *a, const shmapi_Cost *b) {
  if (strcmp(a->report, b->report) || a->makespan != b->makespan || a->nlines != b->nlines || a->devices != b->devices)
    return 0;
  for (int i = 0; i < a->nlines; i++)
    if (a->lines[i].line != b->lines[i].line || a->lines[i].time != b->lines[i].time ||
        a->lines[i].flops != b->lines[i].flops || a->lines[i].hbm_bytes != b->lines[i].hbm_bytes)
      return 0;
  return 1;
}

static void test_cost_data(void) {
  shmapi_State *S = shmapi_open(NULL);
  const char prog[] =
      "mesh m = {i: 4}\n"
      "@shard_map[mesh=m, in_specs=(P('i'), P()), out_specs=P()]\n"
      "def step(x, w) {\n"
      "  y = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w\n"
      "  s = psum[axes='i'] y\n"
      "  t = fori_loop[lower=0, upper=3, body={ lambda ; k a. let\n"
      "        b = mul a 2.0 in (b,) }] s\n"
      "  return t\n"
      "}\n"
      "def loop(x, n) {\n"
      "  r, j = while[cond_jaxpr={ lambda ; a:f32[8] k:i32[]. let p:bool[] = lt k n in (p,) },\n"
      "            body_jaxpr={ lambda ; a:f32[8] k:i32[]. let b:f32[8] = neg a; k2:i32[] = add k 1 in (b, k2) }] x 0\n"
      "  return r\n"
      "}\n";
  int rc = shmapi_load_string(S, "step.shm", prog, strlen(prog));
  check(rc == SHMAPI_OK, "the cost program loads");
  if (rc) show_diags(S);
  static float x[64 * 128], w[128 * 32];
  for (int i = 0; i < 64 * 128; i++) x[i] = (float)(i % 7);
  for (int i = 0; i < 128 * 32; i++) w[i] = (float)(i % 5);
  int64_t xs[2] = {64, 128}, ws[2] = {128, 32};
  shmapi_Array args[2] = {arr(SHMAPI_F32, 2, xs, x), arr(SHMAPI_F32, 2, ws, w)};
  shmapi_CostOptions o = {"tpu-v5e", NULL, NULL, 0};
  shmapi_Cost *c = NULL, *a = NULL;
  rc = shmapi_call_cost_with(S, "step", args, 2, &o, &c);
  check(rc == SHMAPI_OK && c && c->nlines == 3 && c->devices == 4 && !strcmp(c->hardware, "tpu-v5e"),
        "a call's report as data: %d lines, %lld devices", c ? c->nlines : -1, c ? (long long)c->devices : -1);
  if (rc || !c) {
    show_diags(S);
    shmapi_close(S);
    return;
  }
  /* the rows: the numbers of the text, hottest first */
  int ok = 1, found = 0;
  double sum = 0, sent = 0;
  for (int i = 0; i < c->nlines; i++) {
    const shmapi_CostLine *l = &c->lines[i];
    ok = ok && text_has_line(c->report, l) && !strcmp(l->file, "step.shm") && (i == 0 || l->time <= c->lines[i - 1].time);
    ok = ok && l->time == l->compute + l->comm;
    sum += l->time;
    sent += l->coll_bytes;
    if (!strcmp(l->primitive, "dot_general")) {   /* a 16x128 by 128x32 product per device */
      found++;
      ok = ok && l->line == 4 && l->runs == 1 && l->flops == 2.0 * 16 * 128 * 32 && l->comm == 0 &&
           l->hbm_bytes == 4.0 * (16 * 128 + 128 * 32 + 16 * 32) && !strcmp(l->limit, "launch") && !l->backward;
      /* (13 ns of HBM traffic: the 1 us launch bounds a kernel this small) */
    }
    if (!strcmp(l->primitive, "psum")) {
      found++;
      ok = ok && l->line == 5 && l->compute == 0 && l->comm > 0 && l->coll_bytes > 0 && l->flops == 0;
    }
    if (!strcmp(l->primitive, "mul")) {           /* in the loop body: 3 runs */
      found++;
      ok = ok && l->line == 7 && l->runs == 3 && l->flops == 3.0 * 16 * 32;
    }
  }
  check(ok && found == 3, "every row is the text's row, with its FLOPs, bytes and streams (%d of 3 found)", found);
  ok = c->bytes_sent == sent;
  for (int i = 0; i < c->nlines; i++) ok = ok && fabs(c->lines[i].share - c->lines[i].time / sum) < 1e-15;
  double most = 0;
  for (int64_t d = 0; d < c->devices; d++) {
    const shmapi_CostDevice *v = &c->device[d];
    ok = ok && fabs(v->compute + v->exposed + v->idle - c->makespan) <= 1e-12 * c->makespan && v->peak_hbm > 0;
    if (v->compute > most) most = v->compute;
  }
  ok = ok && most == c->compute && c->peak_at && strstr(c->report, c->peak_at) && c->nnotes == 0 && c->outside == 0;
  check(ok, "totals, shares and devices agree (compute + exposed + idle = makespan on each device)");

  /* abstract: types only, the same model */
  shmapi_Array types[2] = {arr(SHMAPI_F32, 2, xs, NULL), arr(SHMAPI_F32, 2, ws, NULL)};
  o.abstract = 1;
  rc = shmapi_call_cost_with(S, "step", types, 2, &o, &a);
  check(rc == SHMAPI_OK && a && same_cost(a, c), "an abstract call (no data) models what the run does");
  if (rc) show_diags(S);
  shmapi_cost_free(a);
  a = NULL;
  int64_t big[2] = {1 << 20, 1 << 16}, bigw[2] = {1 << 16, 1 << 14};
  shmapi_Array huge[2] = {arr(SHMAPI_F32, 2, big, NULL), arr(SHMAPI_F32, 2, bigw, NULL)};
  rc = shmapi_call_cost_with(S, "step", huge, 2, &o, &a);
  ok = rc == SHMAPI_OK && a;
  int dots = 0;
  for (int i = 0; ok && i < a->nlines; i++)
    if (!strcmp(a->lines[i].primitive, "dot_general")) {
      ok = a->lines[i].flops == 2.0 * (1 << 18) * (1 << 16) * (1 << 14) && !strcmp(a->lines[i].limit, "FLOPs");
      dots++;
    }
  ok = ok && dots == 1;
  check(ok, "an abstract call at sizes no memory holds (a 256 GB operand)");
  shmapi_cost_free(a);
  a = NULL;
  /* a loop whose trip count is data: an error value, as --abstract says */
  int64_t vs[1] = {8};
  shmapi_Array lt[2] = {arr(SHMAPI_F32, 1, vs, NULL), arr(SHMAPI_I32, 0, NULL, NULL)};
  rc = shmapi_call_cost_with(S, "loop", lt, 2, &o, &a);
  check(rc == SHMAPI_ERROR && !a && shmapi_ndiags(S) == 1 && strstr(shmapi_diag(S, 0)->message, "depends on array data") &&
            shmapi_diag(S, 0)->line == 11,
        "an abstract loop whose trip count is data: the error at the loop");
  o.abstract = 0;
  rc = shmapi_call_cost_with(S, "step", types, 2, &o, &a);
  check(rc == SHMAPI_MISUSE && !a, "a run's arguments need data");
  shmapi_cost_free(c);
  shmapi_close(S);
}

/* ---- the program ----------------------------------------------------------------------------- */

int main(void) {
  int out = dup(1);
  tap = fdopen(out, "w");
  char p1[] = "/tmp/shm_api_1_XXXXXX", p2[] = "/tmp/shm_api_2_XXXXXX";
  int f1 = mkstemp(p1), f2 = mkstemp(p2);
  int saved_err = dup(2);
  dup2(f1, 1);
  dup2(f2, 2);
  const char *r = getenv("SHM_API_ROUNDS");
  test_threads(r ? atoi(r) : 200);
  test_dtypes();
  test_errors();
  test_limits();
  test_devices();
  test_print_and_cost();
  test_cost_data();
  fflush(stdout);
  fflush(stderr);
  dup2(saved_err, 2);
  off_t n1 = lseek(f1, 0, SEEK_END), n2 = lseek(f2, 0, SEEK_END);
  check(n1 == 0 && n2 == 0, "the library wrote nothing to stdout (%lld bytes) or stderr (%lld bytes)", (long long)n1,
        (long long)n2);
  if (n1 || n2) {
    char buf[512];
    lseek(f1, 0, SEEK_SET);
    lseek(f2, 0, SEEK_SET);
    ssize_t k = read(n1 ? f1 : f2, buf, sizeof buf - 1);
    buf[k > 0 ? k : 0] = 0;
    fprintf(tap, "# %s\n", buf);
  }
  unlink(p1);
  unlink(p2);
  fprintf(tap, "1..%d\n", ntests);
  fclose(tap);
  return nfailed ? 1 : 0;
}
