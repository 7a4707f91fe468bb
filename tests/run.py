#!/usr/bin/env python3
"""Golden-test runner for shmapi.

    tests/run.py [options] SHMAPI [FILTER...]

Runs every test under tests/ and docs/examples/ against the interpreter
SHMAPI and prints the results as TAP version 13 (meson's test() uses
protocol 'tap').

A test is either

  * a golden test, tests/<dir>/<name>.shm (or docs/examples/<name>.shm):
    run as `SHMAPI [ARGS] <path>` from the repository root, with stdin
    from /dev/null; its stdout must equal <name>.out, its stderr <name>.err
    (a missing file means "empty"), and its exit status must be 1 if
    <name>.err exists, else 0; or
  * a test script, tests/<dir>/<name>.test.py or .test.sh: run with the
    environment variable SHMAPI set to the interpreter; exit status 0 passes,
    77 skips, anything else fails.

Comment lines in a test set its directives:

    # args: --stats        extra arguments, placed before the file; a literal
                           {file} stands for the file, which is then not
                           appended a second time
    # argv: -c 'print 1'   the whole argument list; the file is passed only
                           where {file} appears
    # stdin: name.in       feed tests/<dir>/name.in as standard input
    # exit: N              expected exit status
    # timeout: N           seconds before the test is killed (default 30)
    # skip: reason         do not run the test

Files and directories whose names start with '_' or '.' are not tests
(helpers that other tests import).  Python standard library only.
See tests/README.md.
"""

import argparse
import concurrent.futures
import difflib
import fnmatch
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The documentation's example programs (docs/examples/) are golden tests too.
TEST_ROOTS = ('tests', 'docs/examples')
DEFAULT_TIMEOUT = 30.0
MAX_DIAG_LINES = 60
SKIP_STATUS = 77
SCRIPT_SUFFIXES = ('.test.py', '.test.sh')
DIRECTIVE = re.compile(
    r'^\s*#\s*(args|argv|stdin|exit|timeout|skip)\s*:\s*(.*?)\s*$')
VALGRIND = ['valgrind', '-q', '--error-exitcode=99', '--leak-check=full',
            '--show-leak-kinds=definite', '--errors-for-leak-kinds=definite']


class Result:
    """The outcome of one test: status is 'ok', 'fail' or 'skip'."""

    def __init__(self, status, diag=None, reason='', notes=None):
        self.status = status
        self.diag = diag or []       # lines to print as '# ' comments
        self.reason = reason         # the skip reason
        self.notes = notes or []     # '# ' lines printed before the result


# ---------------------------------------------------------------- discovery


def default_python():
    """Test scripts compare against NumPy: prefer Debian's python3, which has
    python3-numpy, over whatever python3 runs this runner."""
    deb = '/usr/bin/python3'
    return deb if os.access(deb, os.X_OK) else sys.executable

def is_script(path):
    return path.endswith(SCRIPT_SUFFIXES)


def find_tests(filters):
    """Every test file under TEST_ROOTS, as sorted paths relative to ROOT."""
    found = []
    for top in TEST_ROOTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if not d.startswith(('_', '.'))]
            rel = os.path.relpath(dirpath, ROOT)
            for name in filenames:
                if name.startswith(('_', '.')):
                    continue
                if name.endswith('.shm') or name.endswith(SCRIPT_SUFFIXES):
                    found.append(os.path.join(rel, name).replace(os.sep, '/'))
    found.sort()
    if filters:
        found = [t for t in found if any(matches(t, f) for f in filters)]
    return found


def matches(test, pattern):
    """A filter selects a test by substring, or by glob if it has one."""
    if any(c in pattern for c in '*?['):
        return fnmatch.fnmatchcase(test, pattern) or \
            fnmatch.fnmatchcase(test, '*' + pattern + '*')
    return pattern in test


def read_directives(path):
    """The directives of a test, as a dict; 'args' accumulates."""
    found = {}
    with open(os.path.join(ROOT, path), encoding='utf-8',
              errors='replace') as f:
        for line in f:
            m = DIRECTIVE.match(line)
            if not m:
                continue
            key, value = m.group(1), m.group(2)
            if key in ('args', 'argv'):
                found[key] = found.get(key, '') + ' ' + value
            else:
                found[key] = value
    return found


# ---------------------------------------------------------------- running

class Runner:
    def __init__(self, shmapi, wrapper, timeout_scale, update, python):
        self.shmapi = shmapi
        self.wrapper = wrapper
        self.timeout_scale = timeout_scale
        self.update = update
        self.python = python
        self.lock = threading.Lock()
        self.running = set()
        self.stopping = False

    def env(self):
        env = dict(os.environ)
        env['OPENBLAS_NUM_THREADS'] = '1'
        env['LC_ALL'] = 'C'
        env['SHMAPI'] = self.shmapi
        return env

    def execute(self, argv, stdin_path, timeout, merge_stderr=False):
        """Run argv from ROOT; return (stdout, stderr, status, timed_out)."""
        stdin = open(stdin_path, 'rb') if stdin_path else subprocess.DEVNULL
        try:
            with self.lock:
                if self.stopping:
                    raise KeyboardInterrupt
                proc = subprocess.Popen(
                    argv, cwd=ROOT, env=self.env(), stdin=stdin,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT if merge_stderr
                    else subprocess.PIPE,
                    start_new_session=True)
                self.running.add(proc)
            timed_out = False
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(proc)
                out, err = proc.communicate()
            finally:
                with self.lock:
                    self.running.discard(proc)
            return out, err or b'', proc.returncode, timed_out
        finally:
            if stdin_path:
                stdin.close()

    def stop(self):
        with self.lock:
            self.stopping = True
            for proc in self.running:
                kill_group(proc)

    def run(self, path):
        try:
            directives = read_directives(path)
        except OSError as e:
            return Result('fail', ['cannot read test: %s' % e])
        if 'skip' in directives:
            return Result('skip', reason=directives['skip'] or 'skipped')
        try:
            timeout = float(directives.get('timeout', DEFAULT_TIMEOUT))
            expected_exit = (int(directives['exit'])
                             if 'exit' in directives else None)
        except ValueError as e:
            return Result('fail', ['bad directive: %s' % e])
        timeout *= self.timeout_scale
        try:
            if is_script(path):
                return self.run_script(path, timeout, expected_exit)
            return self.run_golden(path, directives, timeout, expected_exit)
        except OSError as e:
            return Result('fail', ['cannot run test: %s' % e])

    def run_script(self, path, timeout, expected_exit):
        interp = [self.python] if path.endswith('.py') else ['bash']
        out, _, status, timed_out = self.execute(
            interp + [path], None, timeout, merge_stderr=True)
        if timed_out:
            return Result('fail', ['timed out after %g s' % timeout] +
                          tail(out))
        if status == SKIP_STATUS and expected_exit != SKIP_STATUS:
            text = decode(out).strip().splitlines()
            return Result('skip', reason=text[-1] if text else 'skipped')
        want = 0 if expected_exit is None else expected_exit
        if status == want:
            return Result('ok')
        return Result('fail', ['exit status: expected %d, got %s'
                               % (want, describe_status(status))] + tail(out))

    def run_golden(self, path, directives, timeout, expected_exit):
        base = path[:-len('.shm')]
        if 'argv' in directives:
            argv = substitute(directives['argv'], path, append=False)
        else:
            argv = substitute(directives.get('args', ''), path, append=True)
        if isinstance(argv, str):
            return Result('fail', ['bad directive: ' + argv])
        stdin_path = None
        if 'stdin' in directives:
            stdin_path = os.path.join(ROOT, os.path.dirname(path),
                                      directives['stdin'])
            if not os.path.isfile(stdin_path):
                return Result('fail', ['stdin file not found: %s' % os.path.
                                       relpath(stdin_path, ROOT)])
        out, err, status, timed_out = self.execute(
            self.wrapper + [self.shmapi] + argv, stdin_path, timeout)

        out_file, err_file = base + '.out', base + '.err'
        want_out = read_bytes(out_file)
        want_err = read_bytes(err_file)
        if timed_out:
            return Result('fail', ['timed out after %g s' % timeout] +
                          diff(out_file, want_out or b'', out, 'stdout') +
                          diff(err_file, want_err or b'', err, 'stderr'))

        notes = []
        if self.update and status >= 0 and \
                (out != (want_out or b'') or err != (want_err or b'')):
            notes += write_expected(out_file, want_out, out)
            notes += write_expected(err_file, want_err, err)
            want_out = out or None
            want_err = err or None

        want_status = expected_exit
        if want_status is None:
            want_status = 1 if want_err is not None else 0
        diag = diff(out_file, want_out or b'', out, 'stdout') + \
            diff(err_file, want_err or b'', err, 'stderr')
        if status != want_status:
            diag.append('exit status: expected %d, got %s'
                        % (want_status, describe_status(status)))
            if self.update and status >= 0:
                diag.append("(add '# exit: %d' to %s if that is right)"
                            % (status, path))
        return Result('fail' if diag else 'ok', diag, notes=notes)


def substitute(text, path, append):
    """Split a directive's arguments and put the test's path in."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        return str(e)
    if any('{file}' in w for w in words):
        return [w.replace('{file}', path) for w in words]
    return words + [path] if append else words


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def describe_status(status):
    if status < 0:
        try:
            return 'killed by %s' % signal.Signals(-status).name
        except ValueError:
            return 'killed by signal %d' % -status
    return str(status)


# ---------------------------------------------------------------- expectations

def read_bytes(path):
    try:
        with open(os.path.join(ROOT, path), 'rb') as f:
            return f.read()
    except FileNotFoundError:
        return None


def write_expected(path, old, new):
    """Make the file at path hold new (absent if empty); say what changed."""
    full = os.path.join(ROOT, path)
    if not new:
        if old is None:
            return []
        os.remove(full)
        return ['removed ' + path]
    if new == old:
        return []
    with open(full, 'wb') as f:
        f.write(new)
    return [('created ' if old is None else 'updated ') + path]


def decode(data):
    return data.decode('utf-8', errors='backslashreplace')


def lines_of(data):
    lines = decode(data).splitlines(keepends=True)
    if lines and not lines[-1].endswith('\n'):
        lines[-1] += '\n'
        lines.append('\\ No newline at end of file\n')
    return lines


def diff(path, want, got, what):
    if want == got:
        return []
    if not want:
        header = '%s: expected nothing (%s is empty or absent), got:' % (
            what, path)
        return [header] + ['+' + l for l in lines_of(got)]
    return [l for l in difflib.unified_diff(
        lines_of(want), lines_of(got),
        'expected %s (%s)' % (what, path), 'actual %s' % what)]


def tail(data, n=40):
    lines = decode(data).splitlines()
    if not lines:
        return []
    head = ['output:'] if len(lines) <= n else \
        ['output (last %d of %d lines):' % (n, len(lines))]
    return head + lines[-n:]


# ---------------------------------------------------------------- reporting

def comment(line):
    line = line.rstrip('\n')
    return '#' if not line else '# ' + line


def report(number, path, result):
    out = [comment(n) for n in result.notes]
    if result.status == 'skip':
        out.append('ok %d - %s # SKIP %s' % (number, path, result.reason))
    else:
        out.append('%s %d - %s' % ('ok' if result.status == 'ok'
                                   else 'not ok', number, path))
    diag = result.diag
    if len(diag) > MAX_DIAG_LINES:
        more = len(diag) - (MAX_DIAG_LINES - 1)
        diag = diag[:MAX_DIAG_LINES - 1] + ['... (%d more lines)' % more]
    out += [comment(l) for l in diag]
    print('\n'.join(out), flush=True)


def resolve_binary(name):
    if os.sep not in name:
        found = shutil.which(name)
        if found:
            return found
    return os.path.abspath(name)


def main():
    parser = argparse.ArgumentParser(
        description='Run the shmapi golden tests; print TAP.',
        epilog='See tests/README.md.')
    parser.add_argument('shmapi', metavar='SHMAPI',
                        help='the interpreter to test, e.g. build/shmapi')
    parser.add_argument('filters', metavar='FILTER', nargs='*',
                        help='run only tests whose path contains FILTER '
                             '(or matches it as a glob)')
    parser.add_argument('--update', action='store_true',
                        help='rewrite .out/.err files from actual output')
    parser.add_argument('-j', '--jobs', type=int, default=os.cpu_count() or 1,
                        help='tests to run at once (default: CPU count)')
    parser.add_argument('--list', action='store_true',
                        help='list the selected tests and exit')
    parser.add_argument('--valgrind', action='store_true',
                        help='run golden tests under valgrind, with 10x '
                             'timeouts')
    args = parser.parse_intermixed_args()

    shmapi = resolve_binary(args.shmapi)
    os.chdir(ROOT)
    tests = find_tests(args.filters)
    if args.list:
        print('\n'.join(tests))
        return 0
    if not os.access(shmapi, os.X_OK):
        print('Bail out! %s is not an executable file' % args.shmapi,
              flush=True)
        return 1

    runner = Runner(shmapi,
                    wrapper=VALGRIND if args.valgrind else [],
                    timeout_scale=10.0 if args.valgrind else
                    float(os.environ.get('SHMAPI_TIMEOUT_SCALE', '1')),
                    update=args.update,
                    python=os.environ.get('SHMAPI_PYTHON') or default_python())
    print('TAP version 13')
    print('1..%d' % len(tests), flush=True)
    counts = {'ok': 0, 'fail': 0, 'skip': 0}
    pool = concurrent.futures.ThreadPoolExecutor(max(1, args.jobs))
    try:
        futures = [pool.submit(runner.run, t) for t in tests]
        for number, (path, future) in enumerate(zip(tests, futures), 1):
            result = future.result()
            counts[result.status] += 1
            report(number, path, result)
    except KeyboardInterrupt:
        runner.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        print('Bail out! interrupted', flush=True)
        return 130
    pool.shutdown()
    summary = '# %d passed, %d failed' % (counts['ok'], counts['fail'])
    if counts['skip']:
        summary += ', %d skipped' % counts['skip']
    print(summary, flush=True)
    return 1 if counts['fail'] else 0


if __name__ == '__main__':
    sys.exit(main())
