/*
** main.c — the shmapi command line.
*/
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "abstract.h"
#include "check.h"
#include "diag.h"
#include "err.h"
#include "eval.h"
#include "fabmpi.h"
#include "mem.h"
#include "parse.h"
#include "repl.h"
#include "suggest.h"
#include "tracefile.h"

static const char usage[] =
    "usage: shmapi [options] [FILE.shm]\n"
    "\n"
    "  shmapi FILE.shm          run a script\n"
    "  shmapi                   interactive REPL (prompt \"shm> \")\n"
    "  shmapi -i FILE.shm       run FILE, then stay in the REPL with its definitions\n"
    "  shmapi -c 'CODE'         run CODE\n"
    "  shmapi --check FILE      parse and type-check only\n"
    "  shmapi --debug FILE      run FILE under the debugger, stopped before its first statement\n"
    "  shmapi --version         print the version\n"
    "  shmapi --help            print this help\n"
    "\n"
    "options:\n"
    "  --stats                  after the run, print the communication each collective would take\n"
    "  --max-memory BYTES       limit the memory a program may use (suffixes K, M, G)\n"
    "  --max-steps N            stop after N loop iterations in one statement\n"
    "  --ranks R                run on R processes: mpirun -np R shmapi ... (needs Open MPI;\n"
    "                           README.md, \"Running across machines\")\n"
    "\n"
    "the cost model (docs/cost.md):\n"
    "  --time                   after the run, print its modelled time on real hardware: per device\n"
    "                           compute, communication, exposed communication, idle, peak HBM, and\n"
    "                           a table of the source lines, hottest first\n"
    "  --hardware NAME|FILE     the hardware to model: a preset (tpu-v4, tpu-v5e, tpu-v5p, tpu-v6e,\n"
    "                           a100, h100; default tpu-v5e) or a JSON description\n"
    "  --place SPEC             which mesh axis runs along which torus dimension: i=x,j=yz\n"
    "  --trace FILE             write the modelled timeline: Chrome trace JSON (Perfetto), or an\n"
    "                           SVG picture when FILE ends in .svg\n"
    "  --trace-span SECONDS     an SVG's time axis spans at least SECONDS (two runs to one scale)\n"
    "  --abstract               model without running: shapes and types only, no array data\n"
    "  --list-hardware          print the presets\n"
    "  --save-hardware FILE     write the chosen hardware as JSON (a start for your own)\n"
    "\n"
    "exit status: 0 success, 1 program error, 2 bad usage\n";

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "shmapi: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see shmapi --help)\n");
  return 2;
}

/* An unknown option, with the closest known one. */
static int unknown_option(const char *a) {
  static const char *const known[] = {"--help", "--version", "--check", "--debug", "--stats", "--time",
                                      "--abstract", "--list-hardware", "--hardware", "--place", "--trace",
                                      "--save-hardware", "--trace-span", "--max-memory", "--max-steps", NULL};
  Suggest sg;
  sug_begin(&sg, (Str){a, (int)strlen(a)});
  for (int k = 0; known[k]; k++) sug_offer(&sg, known[k], -1);
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

/* The default --max-memory: half of the machine's physical memory, so a
   program asking for too much gets an error instead of the OOM killer. */
static size_t default_memory_limit(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 2 : 0;
}

/* The cost model's options. */
typedef struct ModelOpts {
  bool time, abstract;
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

/* --ranks R: the value, or -1 when absent (0 after a bad value); the
   option is taken out of argv. */
static int take_ranks(int *argc, char **argv) {
  for (int i = 1; i < *argc; i++) {
    if (strcmp(argv[i], "--ranks")) continue;
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
  int ranks = take_ranks(&argc, argv);
  if (ranks == 0) return bad_usage("%s", "--ranks needs a number of processes from 1 to 4096");
  if (ranks > 1) return fmpi_launch(ranks, argc, argv);
  int st = fmpi_init(&argc, &argv);
  if (st) return st;
  return fmpi_finish(run(argc, argv));
}

static int run(int argc, char **argv) {
  mem_set_limit(default_memory_limit());
  /* Debug switch: make the Nth allocation fail (tests/limits/fail_alloc.test.sh). */
  const char *fail = getenv("SHMAPI_FAIL_ALLOC");
  if (fail && *fail) mem_fail_after(atol(fail));
  const char *file = NULL, *code = NULL;
  bool check_only = false, interactive = false, stats = false, debug = false;
  long long max_steps = 0;
  ModelOpts mo = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage, stdout); return 0; }
    if (!strcmp(a, "--version")) { printf("shmapi %s\n", SHM_VERSION); return 0; }
    if (!strcmp(a, "--check")) check_only = true;
    else if (!strcmp(a, "-i")) interactive = true;
    else if (!strcmp(a, "--debug")) debug = true;
    else if (!strcmp(a, "--stats")) stats = true;
    else if (!strcmp(a, "--time")) mo.time = true;
    else if (!strcmp(a, "--abstract")) mo.abstract = true;
    else if (!strcmp(a, "--list-hardware")) { hw_list(stdout); return 0; }
    else if (!strcmp(a, "--hardware") || !strcmp(a, "--place") || !strcmp(a, "--trace") ||
             !strcmp(a, "--save-hardware")) {
      if (++i >= argc) return bad_usage("%s needs an argument", a);
      if (a[2] == 'h') mo.hardware = argv[i];
      else if (a[2] == 'p') mo.place = argv[i];
      else if (a[2] == 't') mo.trace = argv[i];
      else mo.save = argv[i];
    }
    else if (!strcmp(a, "-c")) {
      if (++i >= argc) return bad_usage("%s needs an argument", a);
      code = argv[i];
    } else if (!strcmp(a, "--trace-span")) {
      if (++i >= argc) return bad_usage("%s needs an argument", a);
      char *end;
      mo.span = strtod(argv[i], &end);
      if (end == argv[i] || *end || !(mo.span >= 0) || mo.span > 1e9) return bad_usage("bad number '%s'", argv[i]);
    } else if (!strcmp(a, "--max-memory") || !strcmp(a, "--max-steps")) {
      if (++i >= argc) return bad_usage("%s needs an argument", a);
      long long v;
      if (!parse_size(argv[i], &v)) return bad_usage("bad number '%s'", argv[i]);
      if (a[6] == 'm') mem_set_limit((size_t)v);
      else max_steps = v;
    } else if (a[0] == '-' && a[1]) {
      return unknown_option(a);
    } else {
      if (file) return bad_usage("more than one file given ('%s')", a);
      file = a;
    }
  }
  if (code && file) return bad_usage("%s", "give either a file or -c CODE, not both");
  bool model = mo.time || mo.abstract || mo.trace || mo.hardware || mo.place || mo.save || mo.span;
  bool save_only = mo.save && !file && !code && !interactive && !debug && !check_only;
  if (model && !save_only && (interactive || debug || check_only || (!file && !code)))
    return bad_usage("%s", "the cost model options need a program run as a script (FILE or -c CODE)");
  if ((check_only || interactive || debug) && !file) return bad_usage("%s", "this mode needs a FILE");
  if (fmpi_size() > 1 && (interactive || debug || (!file && !code)))
    return bad_usage("%s", "the REPL and the debugger run in one process: not under mpirun or --ranks");
  /* (under ranks every rank models the program, rank 0's model is the
     one reported: --abstract walks it alike everywhere; a run's model is
     that of rank 0's walk, which eval.c refuses where it would differ) */

  ReplOptions ro = {stats, max_steps, debug};
  if (!file && !code && !save_only) return repl_main(NULL, &ro);
  if (interactive || debug) return repl_main(file, &ro);

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
