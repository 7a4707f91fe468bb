/*
** main.c — the shmapi command line.
*/
#include <shmapi.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "state.h"
#include "abstract.h"
#include "check.h"
#include "diag.h"
#include "err.h"
#include "esc.h"
#include "eval.h"
#include "fabmpi.h"
#include "mem.h"
#include "parse.h"
#include "repl.h"
#include "rng.h"
#include "rngkey.h"
#include "suggest.h"
#include "tracefile.h"

/* ---- the options ---------------------------------------------------------------------
** One row per way of calling shmapi: the one source of the parsing below,
** of --help, and of the "did you mean" for an unknown option
** (tests/cli/options_documented.test.py checks that docs/cli.md speaks of
** every row).  A row of the modes is shown as `form`; a row with `arg`
** takes the next argument.  `help` is split into lines at '\n'.  The rows
** are in OptId's order, which is --help's.
*/
typedef enum OptId {
  O_SCRIPT, O_REPL, O_INTERACTIVE, O_CODE, O_CHECK, O_DEBUG, O_VERSION, O_HELP,
  O_STATS, O_MAX_MEMORY, O_MAX_STEPS, O_RANKS, O_JAX, O_THREEFRY_PARTITIONABLE,
  O_JAX_NAMES, O_NO_FUSE, O_TIME, O_HARDWARE, O_PLACE, O_TRACE, O_TRACE_SPAN, O_ABSTRACT, O_MODEL_TOP, O_LIST_HARDWARE,
  O_SAVE_HARDWARE
} OptId;

typedef enum OptGroup { G_MODE, G_RUN, G_MODEL } OptGroup;

typedef struct Opt {
  OptGroup group;
  const char *name, *alias;  /* NULL name: a mode that is no option */
  const char *arg;           /* the argument's name, or NULL */
  const char *form;          /* how --help shows a mode */
  const char *help;
} Opt;

static const Opt opts[] = {
  [O_SCRIPT] = {G_MODE, NULL, NULL, NULL, "shmapi FILE.shm", "run a script"},
  [O_REPL] = {G_MODE, NULL, NULL, NULL, "shmapi", "interactive REPL (prompt \"shm> \")"},
  [O_INTERACTIVE] = {G_MODE, "-i", NULL, NULL, "shmapi -i FILE.shm", "run FILE, then stay in the REPL with its definitions"},
  [O_CODE] = {G_MODE, "-c", NULL, "CODE", "shmapi -c 'CODE'", "run CODE"},
  [O_CHECK] = {G_MODE, "--check", NULL, NULL, "shmapi --check FILE", "parse and type-check only"},
  [O_DEBUG] = {G_MODE, "--debug", NULL, NULL, "shmapi --debug FILE",
   "run FILE under the debugger, stopped before its first statement"},
  [O_VERSION] = {G_MODE, "--version", NULL, NULL, "shmapi --version", "print the version"},
  [O_HELP] = {G_MODE, "--help", "-h", NULL, "shmapi --help", "print this help"},
  [O_STATS] = {G_RUN, "--stats", NULL, NULL, NULL, "after the run, print the communication each collective would take"},
  [O_MAX_MEMORY] = {G_RUN, "--max-memory", NULL, "BYTES", NULL, "limit the memory a program may use (suffixes K, M, G)"},
  [O_MAX_STEPS] = {G_RUN, "--max-steps", NULL, "N", NULL, "stop after N loop iterations in one statement"},
  [O_RANKS] = {G_RUN, "--ranks", NULL, "R", NULL,
   "run on R processes: mpirun -np R shmapi ... (needs Open MPI;\nREADME.md, \"Running across machines\")"},
  [O_JAX] = {G_RUN, "--jax", NULL, "VERSION", NULL,
   "the JAX that printed the program (default: a header comment\n`# jax VERSION`, else JAX 0.5 or later): before 0.5.0, random_bits\n"
   "and random_split use the old counters (jax_threefry_partitionable)"},
  [O_THREEFRY_PARTITIONABLE] = {G_RUN, "--threefry-partitionable", NULL, "BOOL", NULL,
   "set jax_threefry_partitionable (True or False) whatever the version"},
  [O_JAX_NAMES] = {G_RUN, "--jax-names", NULL, NULL, NULL,
   "show prints as JAX prints today: types {V:i}, and the variance cast\nas pvary (vary_unreduced_cast_p, reduced_vary_cast_p)"},
  [O_NO_FUSE] = {G_RUN, "--no-fuse", NULL, NULL, NULL,
   "run chains of elementwise equations one equation at a time (by\ndefault a chain runs as one pass over memory: the same results)"},
  [O_TIME] = {G_MODEL, "--time", NULL, NULL, NULL,
   "after the run, print its modelled time on real hardware: per device\ncompute, communication, exposed "
   "communication, idle, peak HBM, and\na table of the source lines, hottest first"},
  [O_HARDWARE] = {G_MODEL, "--hardware", NULL, "NAME|FILE", NULL,
   "the hardware to model: a preset (tpu-v4, tpu-v5e, tpu-v5p, tpu-v6e,\na100, h100; default tpu-v5e) or a JSON "
   "description"},
  [O_PLACE] = {G_MODEL, "--place", NULL, "SPEC", NULL, "which mesh axis runs along which torus dimension: i=x,j=yz"},
  [O_TRACE] = {G_MODEL, "--trace", NULL, "FILE", NULL,
   "write the modelled timeline: Chrome trace JSON (Perfetto), or an\nSVG picture when FILE ends in .svg"},
  [O_TRACE_SPAN] = {G_MODEL, "--trace-span", NULL, "SECONDS", NULL,
   "an SVG's time axis spans at least SECONDS (two runs to one scale)"},
  [O_ABSTRACT] = {G_MODEL, "--abstract", NULL, NULL, NULL, "model without running: shapes and types only, no array data"},
  [O_MODEL_TOP] = {G_MODEL, "--model-top", NULL, NULL, NULL,
   "model the statements outside any shard_map as work on the devices\n(replicated, or split as their sharding "
   "says), as JAX runs them"},
  [O_LIST_HARDWARE] = {G_MODEL, "--list-hardware", NULL, NULL, NULL, "print the presets"},
  [O_SAVE_HARDWARE] = {G_MODEL, "--save-hardware", NULL, "FILE", NULL, "write the chosen hardware as JSON (a start for your own)"},
};
enum { NOPTS = sizeof opts / sizeof opts[0], HELP_COL = 27 };

static const char *const group_title[] = {NULL, "options:", "the cost model (docs/cost.md):"};

/* --help, made from the table. */
static void print_usage(FILE *f) {
  fputs("usage: shmapi [options] [FILE.shm]\n", f);
  int group = -1;
  for (int k = 0; k < NOPTS; k++) {
    const Opt *o = &opts[k];
    if ((int)o->group != group) {
      group = (int)o->group;
      fputs("\n", f);
      if (group_title[group]) fprintf(f, "%s\n", group_title[group]);
    }
    char head[64];
    if (o->form) snprintf(head, sizeof head, "  %s", o->form);
    else snprintf(head, sizeof head, "  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    if (strlen(head) < HELP_COL) fprintf(f, "%-*s", HELP_COL, head);
    else fprintf(f, "%s ", head);
    for (const char *h = o->help; *h; h++) {
      fputc(*h, f);
      if (*h == '\n') fprintf(f, "%*s", HELP_COL, "");
    }
    fputc('\n', f);
  }
  fputs("\nexit status: 0 success, 1 program error, 2 bad usage\n", f);
}

/* The row of an option's name, or NULL. */
static const Opt *find_opt(const char *a) {
  for (int k = 0; k < NOPTS; k++)
    if (opts[k].name && (!strcmp(a, opts[k].name) || (opts[k].alias && !strcmp(a, opts[k].alias)))) return &opts[k];
  return NULL;
}

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "shmapi: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see shmapi --help)\n");
  return 2;
}

/* An unknown option, with the closest known one. */
static int unknown_option(const char *a) {
  Suggest sg;
  sug_begin(&sg, (Str){a, (int)strlen(a)});
  for (int k = 0; k < NOPTS; k++)
    if (opts[k].name && opts[k].name[1] == '-') sug_offer(&sg, opts[k].name, -1);
  char hint[96];
  fprintf(stderr, "shmapi: unknown option '%s'%s\n(see shmapi --help)\n", a, sug_text(&sg, hint, sizeof hint));
  return 2;
}

static bool parse_size(const char *s, long long *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0) return false;
  switch (*end) {
  case 'k': case 'K': v *= 1024; end++; break;
  case 'm': case 'M': v *= 1024.0 * 1024; end++; break;
  case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
  default: break;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return false;
  *out = (long long)v;
  return true;
}

/* The default --max-memory: half of the machine's physical memory,
   shared among the ranks running on it, so a program asking for too much
   gets an error instead of the OOM killer (four ranks each allowed half
   the machine were killed). */
static size_t default_memory_limit(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 2 / (size_t)fmpi_local_size() : 0;
}

/* The cost model's options. */
typedef struct ModelOpts {
  bool time, abstract, model_top;
  const char *hardware, *place, *trace, *save;
  double span;
} ModelOpts;

/* The hardware of --hardware: a preset's name or a JSON file. */
static bool pick_hardware(const ModelOpts *mo, Hw *hw) {
  const char *name = mo->hardware ? mo->hardware : "tpu-v5e";
  const Hw *p = hw_preset(name);
  if (p) {
    *hw = *p;
    return true;
  }
  size_t n = strlen(name);
  if (n < 5 || strcmp(name + n - 5, ".json")) {
    fprintf(stderr, "shmapi: unknown hardware '%s'; the presets:\n", name);
    hw_list(stderr);
    fprintf(stderr, "(or give a JSON description: FILE.json)\n");
    return false;
  }
  bool ok = hw_load(name, hw, stderr);
  diag_reset();
  return ok;
}

/* --save-hardware FILE: the chosen hardware as JSON. */
static bool save_hardware(const Hw *hw, const char *path) {
  if (hw_save(hw, path)) return true;
  fprintf(stderr, "shmapi: cannot write '%s'\n", path);
  return false;
}

/* Before anything runs: an output file the run will write can be written
   (its folder exists and lets us in; the file, if there, is writable), so
   a long run does not end in "cannot write".  Exit status 2 if not. */
static bool output_writable(const char *what, const char *path) {
  const char *slash = strrchr(path, '/');
  char dir[4096];
  if (!slash) snprintf(dir, sizeof dir, ".");
  else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  struct stat sd;
  const char *why = NULL;
  if (stat(dir, &sd)) why = strerror(errno);
  else if (!S_ISDIR(sd.st_mode)) why = "a part of the path is not a folder";
  else if (access(dir, W_OK | X_OK)) why = strerror(errno);
  else if (!access(path, F_OK) && access(path, W_OK)) why = strerror(errno);
  else if (slash && !slash[1]) why = "it names a folder";
  if (!why) return true;
  fprintf(stderr, "shmapi: cannot write the %s '%s': %s\n", what, path, why);
  return false;
}

/* After a modelled run: the report, the trace file. */
static bool model_output(Timeline *T, const ModelOpts *mo, const char *title) {
  fflush(stdout);
  if (mo->time || !mo->trace) tl_report(T, stdout);
  if (mo->trace) {
    size_t n = strlen(mo->trace);
    bool svg = n >= 4 && !strcmp(mo->trace + n - 4, ".svg");
    if (!(svg ? trace_svg(T, title, mo->trace, mo->span) : trace_json(T, title, mo->trace))) {
      fprintf(stderr, "shmapi: cannot write the trace '%s'\n", mo->trace);
      return false;
    }
  }
  return true;
}

static int run(int argc, char **argv);

/* A script run through the embedding API (include/shmapi.h): loading,
   running, print output and the errors, as any client does it. */
static void to_stdout(void *ud, const char *text, size_t n) {
  (void)ud;
  fwrite(text, 1, n, stdout);
}

static void to_stderr(void *ud, const char *text, size_t n) {
  (void)ud;
  fflush(stdout);
  fwrite(text, 1, n, stderr);
}

static int run_script(const char *file, const char *code, const shmapi_Limits *lim) {
  shmapi_Limits open = *lim;
  open.fail_alloc_after = 0;        /* (the switch counts from the state's first use) */
  shmapi_State *S = shmapi_open(&open);
  if (!S) {
    fprintf(stderr, "shmapi: error: out of memory\n");
    return 1;
  }
  shmapi_set_limits(S, lim);
  shmapi_set_print(S, to_stdout, NULL);
  shmapi_set_warnings(S, to_stderr, NULL);
  int rc = code ? shmapi_load_string(S, "<command line>", code, strlen(code)) : shmapi_load_file(S, file);
  if (rc == SHMAPI_OK) rc = shmapi_release_dead(S);
  if (rc == SHMAPI_OK) rc = shmapi_run(S);
  fflush(stdout);
  for (int i = 0; i < shmapi_ndiags(S); i++) fputs(shmapi_diag(S, i)->text, stderr);
  size_t left = shmapi_close(S);
  /* under the allocation-failure switch, everything must be back */
  if (lim->fail_alloc_after && left) {
    fprintf(stderr, "shmapi: internal error: %zu bytes not released\n", left);
    return 3;
  }
  return rc == SHMAPI_OK ? 0 : rc == SHMAPI_MISUSE ? 2 : 1;
}

static bool apply_header(int f);

/* The REPL and the debugger, under a last boundary: running out of memory
   before the REPL has its own ends it with the error.  With `header`, the
   file's `# jax VERSION` comment is read first (rngkey.h). */
static int repl(const char *file, const ReplOptions *ro, bool header) {
  volatile int status = 1;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    int f = header && file ? parse_load(file, span_none()) : 0;
    if (f < 0) status = 2;
    else if (header && file && !apply_header(f)) status = 1;
    else status = repl_main(file, ro);
    err_end(&j);
  } else {
    fflush(stdout);
    diag_report(span_none(), "error", err_message());
  }
  return status;
}

/* --ranks R: the value, or -1 when absent (0 after a bad value); the
   option is taken out of argv. */
static int take_ranks(int *argc, char **argv) {
  for (int i = 1; i < *argc; i++) {
    if (find_opt(argv[i]) != &opts[O_RANKS]) continue;
    int r = 0;
    if (i + 1 < *argc) {
      char *end;
      long v = strtol(argv[i + 1], &end, 10);
      if (end != argv[i + 1] && !*end && v >= 1 && v <= 4096) r = (int)v;
    }
    int k = i + 1 < *argc ? 2 : 1;
    for (int j = i; j + k <= *argc; j++) argv[j] = argv[j + k];
    *argc -= k;
    return r;
  }
  return -1;
}

int main(int argc, char **argv) {
  esc_std_streams();                 /* no raw control byte reaches a terminal (esc.h) */
  int ranks = take_ranks(&argc, argv);
  if (ranks == 0) return bad_usage("%s", "--ranks needs a number of processes from 1 to 4096");
  if (ranks > 1) return fmpi_launch(ranks, argc, argv);
  int st = fmpi_init(&argc, &argv);
  if (st) return st;
  return fmpi_finish(run(argc, argv));
}

/* The header comment `# jax VERSION` of file f (rngk_apply_header); false
   after reporting a VERSION that is not one. */
static bool apply_header(int f) {
  if (rngk_apply_header(f)) return true;
  diag_flush(stderr);
  return false;
}

/* --threefry-partitionable's value: 1, 0, or -1 when it is not a bool. */
static int parse_bool(const char *s) {
  if (!strcmp(s, "True") || !strcmp(s, "true") || !strcmp(s, "1")) return 1;
  if (!strcmp(s, "False") || !strcmp(s, "false") || !strcmp(s, "0")) return 0;
  return -1;
}

static int run(int argc, char **argv) {
  shmapi_Limits lim = {default_memory_limit(), 0, 0};
  mem_set_limit(lim.max_memory);
  /* Debug switch: make the Nth allocation fail (tests/limits/fail_alloc.test.sh). */
  const char *fail = getenv("SHMAPI_FAIL_ALLOC");
  if (fail && *fail) mem_fail_after(atol(fail));
  const char *file = NULL, *code = NULL;
  bool check_only = false, interactive = false, stats = false, debug = false;
  long long max_steps = 0;
  bool ver_set = false, part_set = false;   /* --jax, --threefry-partitionable */
  bool jax_names = false, no_fuse = false;
  int p;
  ModelOpts mo = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *arg = NULL;
    const Opt *o = find_opt(a);
    if (!o) {
      if (a[0] == '-' && a[1]) return unknown_option(a);
      if (file) return bad_usage("more than one file given ('%s')", a);
      file = a;
      continue;
    }
    if (o->arg) {
      if (++i >= argc) return bad_usage("%s needs an argument", a);
      arg = argv[i];
    }
    long long v;
    char *end;
    switch ((OptId)(o - opts)) {
    case O_HELP: print_usage(stdout); return 0;
    case O_VERSION: printf("shmapi %s\n", SHM_VERSION); return 0;
    case O_LIST_HARDWARE: hw_list(stdout); return 0;
    case O_CHECK: check_only = true; break;
    case O_INTERACTIVE: interactive = true; break;
    case O_DEBUG: debug = true; break;
    case O_STATS: stats = true; break;
    case O_JAX_NAMES: jax_names = state_cur()->jax_names = true; break;
    case O_NO_FUSE: no_fuse = state_cur()->no_fuse = true; break;
    case O_TIME: mo.time = true; break;
    case O_ABSTRACT: mo.abstract = true; break;
    case O_MODEL_TOP: mo.model_top = true; break;
    case O_HARDWARE: mo.hardware = arg; break;
    case O_PLACE: mo.place = arg; break;
    case O_TRACE: mo.trace = arg; break;
    case O_SAVE_HARDWARE: mo.save = arg; break;
    case O_CODE: code = arg; break;
    case O_TRACE_SPAN:
      mo.span = strtod(arg, &end);
      if (end == arg || *end || !(mo.span >= 0) || mo.span > 1e9) return bad_usage("bad number '%s'", arg);
      break;
    case O_MAX_MEMORY: case O_MAX_STEPS:
      if (!parse_size(arg, &v)) return bad_usage("bad number '%s'", arg);
      if (o == &opts[O_MAX_MEMORY]) mem_set_limit(lim.max_memory = (size_t)v);
      else max_steps = v;
      break;
    case O_JAX:
      p = rngk_version_partitionable(arg);
      if (p < 0) return bad_usage("--jax needs a JAX version such as 0.4.30, not '%s'", arg);
      if (!part_set) rng_set_partitionable(p == 1);
      ver_set = true;
      break;
    case O_THREEFRY_PARTITIONABLE:
      p = parse_bool(arg);
      if (p < 0) return bad_usage("--threefry-partitionable needs True or False, not '%s'", arg);
      rng_set_partitionable(p == 1);
      part_set = true;
      break;
    case O_RANKS: case O_SCRIPT: case O_REPL: break;      /* (taken by main; no option) */
    }
  }
  if (code && file) return bad_usage("%s", "give either a file or -c CODE, not both");
  bool model = mo.time || mo.abstract || mo.model_top || mo.trace || mo.hardware || mo.place || mo.save || mo.span;
  bool save_only = mo.save && !file && !code && !interactive && !debug && !check_only;
  if (model && !save_only && (interactive || debug || check_only || (!file && !code)))
    return bad_usage("%s", "the cost model options need a program run as a script (FILE or -c CODE)");
  if ((check_only || interactive || debug) && !file) return bad_usage("%s", "this mode needs a FILE");
  if (mo.trace && !output_writable("trace", mo.trace)) return 2;
  if (mo.save && !output_writable("hardware description", mo.save)) return 2;
  if (fmpi_size() > 1 && (interactive || debug || (!file && !code)))
    return bad_usage("%s", "the REPL and the debugger run in one process: not under mpirun or --ranks");
  /* (under ranks every rank models the program, rank 0's model is the
     one reported: --abstract walks it alike everywhere; a run's model is
     that of rank 0's walk, which eval.c refuses where it would differ) */

  /* A plain script, in one process: a client of the API.  The rest (the
     REPL and the debugger, --check, --stats, the cost model, ranks) uses
     the layers directly. */
  if ((file || code) && !check_only && !interactive && !debug && !stats && !model && !ver_set && !part_set &&
      !jax_names && !no_fuse && fmpi_size() == 1) {
    lim.max_steps = max_steps;
    lim.fail_alloc_after = fail && *fail ? atol(fail) : 0;
    return run_script(file, code, &lim);
  }

  ReplOptions ro = {stats, max_steps, debug};
  if (!file && !code && !save_only) return repl(NULL, &ro, false);
  if (interactive || debug) return repl(file, &ro, !ver_set && !part_set);

  /* eval_run catches runtime errors of the program; this boundary catches
     those of the front end and the set-up (running out of memory). */
  hw_json_init();
  Hw hw;
  Checker *volatile C = NULL;
  Interp *volatile I = NULL;
  Timeline *volatile T = NULL;
  volatile int status = 1;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    int f = -1;
    bool hw_ok = !model || (pick_hardware(&mo, &hw) && (!mo.save || save_hardware(&hw, mo.save)));
    if (hw_ok && (file || code))
      f = code ? parse_load_text("<command line>", code, strlen(code)) : parse_load(file, span_none());
    if (!file && !code) {
      status = hw_ok ? 0 : 2;             /* --save-hardware alone */
    } else if (f < 0) {
      status = 2;
    } else if (!ver_set && !part_set && !apply_header(f)) {
      status = 1;
    } else {
      C = check_new();
      check_set_whole_program(C);
      int errs = check_file(C, f);
      if (errs || diag_count()) {
        diag_flush(stderr);
      } else if (check_only) {
        status = 0;
      } else {
        if (model) T = tl_new(&hw, mo.place, mo.trace != NULL);
        if (T) tl_model_top(T, mo.model_top);
        bool ok;
        if (mo.abstract) {
          ok = abstract_run(T, check_main(C), 0, (long)max_steps);
        } else {
          I = eval_new(check_main(C));
          eval_set_max_steps(I, (long)max_steps);
          eval_release_top(I);
          if (T) {
            EvalObserver ob = tl_observer(T);
            eval_set_observer(I, &ob);
          }
          fab_stats_reset();
          ok = eval_run(I, 0);
          if (ok && stats && fmpi_rank() == 0) fab_stats_print(stdout, true);
        }
        if (ok && T && fmpi_rank() == 0) {
          ok = model_output(T, &mo, file ? file : "<command line>");
          if (ok && fmpi_size() > 1 && !mo.abstract && (mo.time || !mo.trace)) {
            char b[32];
            mem_human(b, sizeof b, fmpi_bytes_crossed());
            printf("across %d ranks, %s crossed between them\n", fmpi_size(), b);
          }
        }
        status = ok ? 0 : 1;
      }
    }
    err_end(&j);
  } else {
    fflush(stdout);
    diag_clear();
    diag_print(stderr, span_none(), "error", err_message());
  }
  tl_free(T);
  eval_free(I);
  check_free(C);
  diag_reset();
  /* Under the allocation-failure switch, everything must be back. */
  fmpi_release();
  fab_stats_release();
  if (fail && mem_in_use()) {
    fprintf(stderr, "shmapi: internal error: %zu bytes not released\n", mem_in_use());
    return 3;
  }
  return status;
}
