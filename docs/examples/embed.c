/* Embedding shmapi: load a program, call its shard_map function on an
   array, read the result, and get an error back as a value. */
#include <shmapi.h>
#include <stdio.h>
#include <string.h>

static const char program[] =
    "mesh m = {i: 4}\n"
    "@shard_map[mesh=m, in_specs=P('i'), out_specs=P('i')]\n"
    "def scaled(xb) {\n"
    "  total = psum[axes='i'] xb\n"
    "  y = div xb total\n"
    "  return y\n"
    "}\n";

static void to_stdout(void *ud, const char *text, size_t n) {
  (void)ud;
  fwrite(text, 1, n, stdout);
}

int main(void) {
  shmapi_Limits limits = {.max_memory = 64 << 20, .max_steps = 1000000};
  shmapi_State *S = shmapi_open(&limits);
  shmapi_set_print(S, to_stdout, NULL);
  if (shmapi_load_string(S, "scaled.shm", program, strlen(program)) != SHMAPI_OK) return 1;

  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  shmapi_Array in = {.dtype = SHMAPI_F32, .ndim = 1, .shape = {8}, .data = x};
  shmapi_Array *out[1];
  int n;
  if (shmapi_call(S, "scaled", &in, 1, out, 1, &n) == SHMAPI_OK) {
    const float *y = out[0]->data;
    printf("%s[%lld]:", shmapi_dtype_name(out[0]->dtype), (long long)out[0]->shape[0]);
    for (size_t i = 0; i < out[0]->size; i++) printf(" %.4f", y[i]);
    printf("\n");
    shmapi_array_free(out[0]);
  }

  const char bad[] = "z = add q 1\n";
  if (shmapi_load_string(S, "bad.shm", bad, strlen(bad)) == SHMAPI_ERROR) {
    const shmapi_Diag *d = shmapi_diag(S, 0);
    printf("%s, line %d, column %d: %s\n", d->file, d->line, d->col, d->message);
    fputs(d->text, stdout);
  }

  const char more[] = "x = [1.5, 2.5]\nprint \"from the program:\", x\n";
  int rc = shmapi_load_string(S, "more.shm", more, strlen(more));
  if (rc == SHMAPI_OK) rc = shmapi_run(S);
  shmapi_close(S);
  return rc;
}
