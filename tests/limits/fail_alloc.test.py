# Make the Nth allocation fail (SHMAPI_FAIL_ALLOC=N), for N walking over a
# whole run of a few programs: every failure must give the clean error
# "out of memory (injected failure)" with exit status 1, and release every
# byte (the interpreter itself checks that under the switch and exits 3
# otherwise; under AddressSanitizer, LeakSanitizer checks it too).  No
# crash, no sanitizer report, no swallowed failure.  REPL and debugger
# sessions are walked too, for crashes only.
#
# N takes every value up to 400, then grows by 2% a step
# (SHMAPI_FAIL_ALLOC_STEP=1.0 walks every N), until the run no longer
# reaches an N-th allocation.  Most of these programs make a few hundred
# allocations (every one is tried); the training loop makes thousands.
# timeout: 900
import concurrent.futures
import os
import subprocess
import sys

SHMAPI = os.environ['SHMAPI']
DIR = 'tests/limits/_fail_alloc'
PROGRAMS = [
    ([f'{DIR}/spmd.shm'], 0),
    ([f'{DIR}/maps.shm'], 0),
    (['examples/xmap_named_loss.shm'], 0),
    (['examples/pmap.shm'], 0),
    ([f'{DIR}/../../xmap/err_shared_resource.shm'], 1),
    ([f'{DIR}/errors.shm'], 1),
    (['--max-steps', '20', f'{DIR}/runtime.shm'], 1),
    (['examples/collective_matmul.shm'], 0),
    (['--stats', 'examples/matmul_basic.shm'], 0),
    (['examples/tour.shm'], 0),
    (['examples/train_mlp.shm'], 0),
    ([f'{DIR}/autodiff.shm'], 0),
    (['--check', 'examples/transpose_psum_mapped.shm'], 0),
    (['-c', 'x = [1, 2]\nprint x'], 0),
    # printing at scale, global views, pictures, diagnostics with hints
    (['tests/print/scale_512.shm'], 0),
    (['tests/print/global_body.shm'], 0),
    (['tests/visualize/layouts.shm'], 0),
    (['tests/diag/did_you_mean.shm'], 1),
    (['tests/diag/python_syntax.shm'], 1),
    # the cost model: a run observed, a JSON description read, an abstract walk, a trace written
    (['--time', '--trace', '/dev/null', 'examples/collective_matmul.shm'], 0),
    (['--abstract', '--time', '--hardware', 'docs/examples/my_tpu.json', 'examples/ffn_2d.shm'], 0),
    (['--time', '--hardware', 'h100', 'examples/moe.shm'], 0),
]
# REPL and debugger sessions (stdin from the file): a failure there is
# reported and the session goes on, so only crashes and sanitizer reports
# count (leak checking is off for them).
SESSIONS = [
    (['--max-steps', '5'], 'tests/limits/failed_statement_no_value.in'),
    (['--debug', 'tests/debug/breakpoints.shm'], 'tests/debug/breakpoints.in'),
    (['--debug', 'tests/debug/display.shm'], 'tests/debug/display.in'),
    (['--debug', 'tests/debug/xmap.shm'], 'tests/debug/xmap.in'),
    (['--debug', 'tests/debug/whos_locals.shm'], 'tests/debug/whos_locals.in'),
    (['--debug', 'tests/debug/varying_paths.shm'], 'tests/debug/varying_paths.in'),
    (['--debug', 'tests/debug/scale_512.shm'], 'tests/debug/scale_512.in'),
    (['--debug', 'tests/debug/layout.shm'], 'tests/debug/layout.in'),
]
INJECTED = 'out of memory (injected failure)'
STEP = float(os.environ.get('SHMAPI_FAIL_ALLOC_STEP', '1.02'))
BAD_WORDS = ('Sanitizer', 'runtime error:', 'internal error', 'fatal')


def run(args, n, stdin=None):
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    if n is not None:
        env['SHMAPI_FAIL_ALLOC'] = str(n)
    if stdin:
        env['ASAN_OPTIONS'] = env.get('ASAN_OPTIONS', '') + ':detect_leaks=0'
    with open(stdin or os.devnull, 'rb') as f:
        p = subprocess.run([SHMAPI] + args, env=env, stdin=f,
                           capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')


def walk_session(args, stdin):
    """Walk N for a REPL or debugger session: no crash, no report."""
    if not all(os.path.exists(a) for a in args if a.endswith('.shm')) or not os.path.exists(stdin):
        return 0, []
    problems = []
    runs = 0
    for n in schedule():
        rc, out, err = run(args, n, stdin)
        runs += 1
        # "shmapi: fatal:" is fine here: a failure while the REPL starts,
        # before it has a boundary to report it at, ends it cleanly.
        if any(w in err for w in BAD_WORDS if w != 'fatal') or rc not in (0, 1):
            problems.append(f'{" ".join(args)} < {stdin} with SHMAPI_FAIL_ALLOC={n}: exit {rc}\n{err[-3000:]}')
            break
        if INJECTED not in err:
            break
    return runs, problems


def schedule():
    n = 1
    while True:
        yield n
        n = n + 1 if n < 400 else max(n + 1, int(n * STEP))


def walk(args, want_rc):
    """Walk N for one program; returns (runs, problems)."""
    rc0, out0, err0 = run(args, None)
    if rc0 != want_rc:
        return 0, [f'{args}: exit {rc0} without failures (expected {want_rc}):\n{err0}']
    problems = []
    runs = 0
    for n in schedule():
        rc, out, err = run(args, n)
        runs += 1
        label = f'{" ".join(args)} with SHMAPI_FAIL_ALLOC={n}'
        if any(w in err for w in BAD_WORDS) or rc not in (0, 1):
            problems.append(f'{label}: exit {rc}\n{err[-3000:]}')
            if len(problems) > 5:
                break
            continue
        if INJECTED not in err:
            # The run made fewer than n allocations: it must match the
            # plain run exactly, and the walk is over.
            if (rc, out, err) != (rc0, out0, err0):
                problems.append(f'{label}: no injected failure reported, but the '
                                f'run differs from the plain run (exit {rc}):\n{err[-2000:]}')
            break
        if rc != 1:
            problems.append(f'{label}: the failure was reported but the exit status is {rc}')
    return runs, problems


def main():
    total = 0
    failed = []
    workers = max(1, min(len(PROGRAMS), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        for (args, _), (runs, problems) in zip(PROGRAMS, ex.map(lambda p: walk(*p), PROGRAMS)):
            print(f'{" ".join(args)}: {runs} runs')
            total += runs
            failed += problems
        for (args, stdin), (runs, problems) in zip(SESSIONS, ex.map(lambda p: walk_session(*p), SESSIONS)):
            print(f'{" ".join(args)} < {stdin}: {runs} runs')
            total += runs
            failed += problems
    for p in failed:
        print('FAIL:', p)
    print(f'{total} runs, {len(failed)} problems')
    return 1 if failed else 0


sys.exit(main())
