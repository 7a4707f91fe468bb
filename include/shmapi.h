/*
** shmapi.h — embedding shmapi in C.
**
** A shmapi_State is one interpreter: the program loaded into it, its
** top-level variables, its memory limit and accounting, its diagnostics.
** States are independent: a process may hold several, use them one after
** the other, or run them side by side in different threads.  One state is
** used by one thread at a time (the library takes no lock around it); only
** shmapi_interrupt may be called from another thread while it runs.
**
** The library never writes to standard output or standard error and never
** exits the process: `print` output goes to the writer set by
** shmapi_set_print (dropped until one is set), and every error — a syntax or
** type error while loading, a runtime error, a limit reached — is returned
** as a status and kept as diagnostics (shmapi_diag), each with its file, line,
** column, message and the text the shmapi program would print for it.
**
** Ownership: strings and arrays the caller passes in are read during the
** call and not kept, except an array given with SHMAPI_BORROW (see
** shmapi_set_global).  What the library hands out is owned by the state: a
** shmapi_Diag until the next call on the state; a shmapi_Array, shmapi_Devices or
** shmapi_Cost until the caller releases it with its free function, which must
** happen before shmapi_close (shmapi_close releases what is left, after which
** those pointers must not be used, not even to free them).
**
** Status codes: every function that can fail returns SHMAPI_OK (0), SHMAPI_ERROR
** (the program failed: diagnostics say why) or SHMAPI_MISUSE (a bad argument:
** a NULL state, an unknown name, a dtype out of range; one diagnostic says
** which).
*/
#ifndef SHMAPI_H
#define SHMAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SHMAPI_API __attribute__((visibility("default")))
#else
#define SHMAPI_API
#endif

#define SHMAPI_OK 0
#define SHMAPI_ERROR 1
#define SHMAPI_MISUSE 2

/* The most dimensions an array has, and the most axes a mesh has. */
#define SHMAPI_MAX_NDIM 16

/* The version of the library, "0.1.0". */
SHMAPI_API const char *shmapi_version(void);

typedef struct shmapi_State shmapi_State;

/* ---- states -------------------------------------------------------------- */

/* Limits of a state; 0 means none. */
typedef struct shmapi_Limits {
  size_t max_memory;          /* bytes the program may hold at once */
  long long max_steps;        /* loop iterations in one statement or call */
  long fail_alloc_after;      /* a test switch: the Nth allocation from now fails */
} shmapi_Limits;

/* A new state with those limits (NULL: none).  Returns NULL only when the
   system has no memory for it. */
SHMAPI_API shmapi_State *shmapi_open(const shmapi_Limits *limits);
/* Release the state and everything it holds, arrays handed out included.
   Returns the bytes that were still counted in use once everything was
   released: 0, unless the library leaks (a check for tests). */
SHMAPI_API size_t shmapi_close(shmapi_State *S);
/* Change the limits; they apply from the next call on. */
SHMAPI_API int shmapi_set_limits(shmapi_State *S, const shmapi_Limits *limits);
/* Bytes the state holds now (its program, values and arrays handed out). */
SHMAPI_API size_t shmapi_memory_in_use(shmapi_State *S);

/* Where `print` and `show` output goes: fn(ud, text, n) for each piece of
   text (n bytes, not NUL-terminated), called from the thread running the
   state.  NULL drops the output (the default). */
typedef void (*shmapi_Writer)(void *ud, const char *text, size_t n);
SHMAPI_API int shmapi_set_print(shmapi_State *S, shmapi_Writer fn, void *ud);

/* Where pictures go: a `visualize` statement hands fn(ud, text, svg) its
   picture as the text it prints and as an SVG document (for notebooks),
   instead of printing the text.  NULL (the default): printed. */
typedef void (*shmapi_PictureWriter)(void *ud, const char *text, const char *svg);
SHMAPI_API int shmapi_set_pictures(shmapi_State *S, shmapi_PictureWriter fn, void *ud);

/* Where warnings and notes go as they arise (a pasted custom_jvp_call whose
   rule is not known, a debug_callback that cannot run): fn(ud, text, n)
   with the text the shmapi program prints for each (file:line:col, the
   source line and a caret), once per place.  They are not errors and do not
   change a status.  NULL drops them (the default). */
SHMAPI_API int shmapi_set_warnings(shmapi_State *S, shmapi_Writer fn, void *ud);

/* Ask the statement or call running in S to stop at its next loop step:
   it fails with the error "interrupted".  Safe from any thread and from a
   signal handler. */
SHMAPI_API void shmapi_interrupt(shmapi_State *S);

/* ---- loading and running ----------------------------------------------------------- */

/* Parse and check program text (len bytes; `name` is the file name its
   diagnostics give, "<string>" when NULL) or a file.  The text's top-level
   statements are added to the program but not run (shmapi_run runs them);
   its functions can be called once loaded.  On SHMAPI_ERROR nothing of the
   text is kept and the diagnostics list every error found; a file that
   cannot be read is SHMAPI_MISUSE (one diagnostic, at no place). */
SHMAPI_API int shmapi_load_string(shmapi_State *S, const char *name, const char *text, size_t len);
SHMAPI_API int shmapi_load_file(shmapi_State *S, const char *path);

/* From now on, each top-level variable's value is released right after
   its last use in the program loaded so far (as the shmapi program does
   when it runs a script): less memory, but shmapi_get_global cannot read a
   variable after its last use.  Call it after the last load. */
SHMAPI_API int shmapi_release_dead(shmapi_State *S);

/* Run the top-level statements loaded and not yet run.  A runtime error
   stops at the failing statement: SHMAPI_ERROR, one diagnostic; the
   statements after it are not run, and are not run again by a later
   shmapi_run. */
SHMAPI_API int shmapi_run(shmapi_State *S);

/* ---- diagnostics -------------------------------------------------------------------- */

typedef struct shmapi_Diag {
  const char *file;           /* the file name, or NULL for an error at no place */
  int line, col;              /* 1-based (col counts bytes); 0 when file is NULL */
  const char *kind;           /* "error", or "note" (about the error before it) */
  const char *message;        /* the message alone */
  const char *text;           /* what shmapi prints: "file:line:col: error: message",
                                 the source line and a caret under the place; for a
                                 runtime error inside calls, its traceback before */
} shmapi_Diag;

/* The diagnostics of the last call on S that returned an error (none after
   a call that succeeded), in source order.  Valid until the next call on
   S other than these two. */
SHMAPI_API int shmapi_ndiags(shmapi_State *S);
SHMAPI_API const shmapi_Diag *shmapi_diag(shmapi_State *S, int i);

/* ---- arrays ----------------------------------------------------------------------------- */

/* Element types; the data of an array is its elements in C (row-major)
   order, each as the C type named (bf16 and f16: the 16 bits of the
   float; c64 and c128: real then imaginary part). */
typedef enum shmapi_DType {
  SHMAPI_BOOL,                   /* uint8_t, 0 or 1 */
  SHMAPI_I8, SHMAPI_I16, SHMAPI_I32, SHMAPI_I64,
  SHMAPI_U8, SHMAPI_U16, SHMAPI_U32, SHMAPI_U64,
  SHMAPI_F32, SHMAPI_F64,
  SHMAPI_BF16, SHMAPI_F16,          /* uint16_t bits */
  SHMAPI_C64, SHMAPI_C128,          /* float[2], double[2] */
  SHMAPI_NDTYPES
} shmapi_DType;

/* The bytes of one element, and the short name ("f32"); 0 and NULL for a
   value out of range. */
SHMAPI_API size_t shmapi_dtype_size(int dtype);
SHMAPI_API const char *shmapi_dtype_name(int dtype);

/* An array.  Passed in, the caller fills dtype, ndim, shape[0..ndim) and
   data (the other fields are ignored).  Handed out, every field is set and
   data points to the elements, valid and unchanged until shmapi_array_free. */
typedef struct shmapi_Array {
  int dtype;                  /* shmapi_DType */
  int ndim;
  int64_t shape[SHMAPI_MAX_NDIM];
  void *data;
  size_t size;                /* elements (handed out) */
  size_t nbytes;              /* bytes of data (handed out) */
  void *priv_;                /* the library's */
} shmapi_Array;

/* Flags of shmapi_set_global. */
#define SHMAPI_COPY 0            /* the elements are copied: the buffer may change after the call */
#define SHMAPI_BORROW 1          /* zero-copy: the caller keeps the buffer alive and unchanged
                                 until shmapi_close; it must be aligned to its element size */

/* Bind the top-level variable `name` to an array: program text loaded
   after it can use it as any variable. */
SHMAPI_API int shmapi_set_global(shmapi_State *S, const char *name, const shmapi_Array *a, int flags);
/* The value of top-level variable `name` (after shmapi_run has set it), in
   a new array (zero-copy: it shares the state's elements). */
SHMAPI_API int shmapi_get_global(shmapi_State *S, const char *name, shmapi_Array **out);
/* Release an array handed out. */
SHMAPI_API void shmapi_array_free(shmapi_Array *a);

/* ---- functions -------------------------------------------------------------------------- */

/* Whether the program defines a function `name` (1) or not (0). */
SHMAPI_API int shmapi_has_function(shmapi_State *S, const char *name);

/* Call function `name` with nargs arrays (copied in, as with SHMAPI_COPY; a
   function is checked for the argument types of each call, as a call in
   the program is).  Its results go to outs[0..*nouts) (new arrays), at
   most maxouts of them: a function with more results than maxouts is an
   error (SHMAPI_MISUSE) and nothing is run. */
SHMAPI_API int shmapi_call(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs, shmapi_Array **outs,
                     int maxouts, int *nouts);

/* The blocks each device holds at the end of a call of a shard_map
   function (the body's results on each device of its mesh, before its
   out_specs put them together), with the results of the call. */
typedef struct shmapi_Block {
  int output;                 /* which result of the body */
  int64_t device;             /* the device's index in the mesh, row-major */
  int64_t coords[SHMAPI_MAX_NDIM]; /* its coordinates along the mesh axes */
  shmapi_Array *array;           /* the block it holds */
} shmapi_Block;

typedef struct shmapi_Devices {
  int naxes;                  /* the mesh's axes: names and sizes */
  const char *axis[SHMAPI_MAX_NDIM];
  int64_t axis_size[SHMAPI_MAX_NDIM];
  int64_t ndevices;
  int nouts;                  /* results of the call (and of the body) */
  shmapi_Array **outs;           /* the call's results, as shmapi_call gives them */
  int64_t nblocks;            /* nouts * ndevices, output by output, devices in order */
  shmapi_Block *blocks;
  void *priv_;
} shmapi_Devices;

/* Call function `name`, which must run a shard_map (the last one it runs,
   outside any other, is the one described), and describe what each device
   held.  Release with shmapi_devices_free. */
SHMAPI_API int shmapi_call_devices(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs,
                             shmapi_Devices **out);
/* Release the description, its arrays with it (they are not to be freed
   on their own). */
SHMAPI_API void shmapi_devices_free(shmapi_Devices *d);

/* ---- communication statistics ---------------------------------------------------------- */

/* The table `shmapi --stats` prints (every collective run in S since it
   opened or since shmapi_stats_reset: calls, devices, bytes sent per
   device and in all, the totals per set of mesh axes), given to fn in one
   piece. */
SHMAPI_API int shmapi_stats(shmapi_State *S, shmapi_Writer fn, void *ud);
SHMAPI_API int shmapi_stats_reset(shmapi_State *S);

/* ---- the cost model ----------------------------------------------------------------------- */

/* One device of the report's device table. */
typedef struct shmapi_CostDevice {
  double compute;             /* seconds busy on its compute stream */
  double comm;                /* seconds busy on its communication stream */
  double exposed;             /* seconds waiting for communication (not hidden behind compute) */
  double idle;                /* seconds waiting for anything else; compute + exposed + idle = makespan */
  double peak_hbm;            /* bytes, the most it held at once */
} shmapi_CostDevice;

/* One row of the report's per-line table: the equations of a source line
   (those of the backward pass that transposing it made are a row of their
   own).  Times, FLOPs and HBM bytes are summed over the line's runs. */
typedef struct shmapi_CostLine {
  const char *file;           /* the file it is in, as loaded ("<string>", a path) */
  int line;                   /* 1-based */
  int backward;               /* 1: the backward pass's equations of the line (grad, vjp); the
                                 report prints "(backward)" before the source */
  const char *primitive;      /* the primitive of its first equation ("dot_general") */
  const char *source;         /* the line's text (72 bytes at most, no comment), as the report prints it */
  long long runs;             /* times it ran */
  double time;                /* seconds modelled: compute + comm */
  double compute, comm;       /* seconds on the compute stream (local equations), on the
                                 communication stream (collectives), of one device */
  double waited;              /* seconds its equations waited for a collective's result (the
                                 device that waited longest; the report's "waited") */
  double share;               /* time / the sum of every line's time (0 to 1) */
  double flops;               /* one device's FLOPs (local equations) */
  double hbm_bytes;           /* one device's HBM bytes read and written (local equations) */
  double coll_bytes;          /* bytes its collectives sent, all devices */
  const char *limit;          /* what bounds it: "FLOPs", "HBM", "link", "latency", "launch" (a kernel
                                 whose launch costs more than its roofline) or "none" */
  const char *how;            /* how it ran (the report's "how"): "-" (kernels of its own), "fused" (into
                                 its producer's kernel), or a collective's algorithm: "ring", "line",
                                 "torus", "tree", "nvls", "hier+ring", "hier+tree", "nvls+tree",
                                 "direct", "p2p" */
} shmapi_CostLine;

typedef struct shmapi_Cost {
  char *report;               /* the text `shmapi --time` prints, NUL-terminated */
  double makespan;            /* seconds, the whole run on the modelled hardware */
  double compute, comm, exposed; /* seconds, the most of any one device */
  double peak_hbm;            /* bytes, the most any device held */
  double bytes_sent;          /* bytes collectives sent, all devices */
  int64_t devices;            /* devices modelled */
  void *priv_;
  /* the report's tables as data (the numbers the text prints, unrounded) */
  const char *hardware;       /* the hardware's name ("tpu-v5e") */
  const shmapi_CostDevice *device; /* per device (`devices` of them; a device's index in its mesh, row-major) */
  int nlines;
  const shmapi_CostLine *lines;  /* the per-line table, hottest first: every row (the text folds
                                    the rows past the 40th into one line) */
  int64_t peak_device;        /* the device with the highest peak HBM */
  const char *peak_at;        /* the statement where it peaked, "LINE: source" as the report
                                 prints it ("FILE:LINE: source" in an imported file), or NULL
                                 when no device ran */
  long long outside;          /* equations run outside any shard_map (the host's: not modelled) */
  int nnotes;
  const char *const *notes;   /* abstract runs: conds whose index depends on data, modelled by
                                 their costliest branch ("line N: what: source") */
} shmapi_Cost;

/* How to model (shmapi_call_cost_with, shmapi_run_cost_with); zeros (or a
   NULL pointer) mean the defaults. */
typedef struct shmapi_CostOptions {
  const char *hardware;       /* as shmapi_run_cost names it; NULL: "tpu-v5e" */
  const char *trace;          /* a path to write the modelled timeline to (as shmapi_call_cost), or NULL */
  const char *place;          /* how the meshes lie on a torus, as --place: "i=x,j=yz"; NULL: the default */
  int abstract;               /* 1: model without running, as --abstract: from the arguments' dtypes and
                                 shapes only (their data is not read and may be NULL); no array is made */
} shmapi_CostOptions;

/* Run the top-level statements loaded and not yet run (as shmapi_run) while
   the cost model times them on `hardware`: a preset's name ("tpu-v5e",
   the default when NULL; "tpu-v4", "tpu-v5p", "tpu-v6e", "a100", "h100")
   or a JSON description's path.  Its report goes to *out (released with
   shmapi_cost_free) when the run succeeds. */
SHMAPI_API int shmapi_run_cost(shmapi_State *S, const char *hardware, shmapi_Cost **out);
/* Call function `name` with nargs arrays (as shmapi_call, the results
   dropped) while the cost model times the call on `hardware` (as
   shmapi_run_cost names it): the report of that call alone.  With a
   `trace` path, also write the modelled timeline there, as `--trace`
   does: an SVG picture when the path ends in .svg, else Chrome's trace
   JSON (Perfetto reads it). */
SHMAPI_API int shmapi_call_cost(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs,
                                const char *hardware, const char *trace, shmapi_Cost **out);
/* shmapi_call_cost with options: abstract=1 models the call from its
   arguments' types alone (as --abstract does a program: integer scalars
   that follow from literals are tracked, so loops run as they would; a
   loop whose trip count depends on array data is an error). */
SHMAPI_API int shmapi_call_cost_with(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs,
                                     const shmapi_CostOptions *opts, shmapi_Cost **out);
/* shmapi_run_cost with options (a trace: the timeline of the whole run).
   With abstract=1 the statements are modelled, not run: they count as
   done (a later shmapi_run does not run them) and the variables they bind
   have no value. */
SHMAPI_API int shmapi_run_cost_with(shmapi_State *S, const shmapi_CostOptions *opts, shmapi_Cost **out);
SHMAPI_API void shmapi_cost_free(shmapi_Cost *c);

#ifdef __cplusplus
}
#endif
#endif
