"""Every code block of README.md and docs/*.md is a file that a test runs.

The line right before each fenced block is a tag (docs/README.md, "Code
blocks", explains them):

    <!-- file: PATH -->       the block is the whole file PATH
    <!-- output: PATH -->     the same, and PATH is the .out or .err of a
                              golden test (the .shm beside it)
    <!-- excerpt: PATH -->    the block's lines are consecutive lines of PATH
    <!-- part: PATH -->       the blocks tagged `part: PATH` in one document,
                              joined by one blank line, are the whole of PATH
    <!-- session: PATH.shm --> a transcript: the golden test PATH.shm run with
                              its directives (args, stdin; no stdin directive:
                              /dev/null) and standard error merged into
                              standard output prints the block, after a first
                              line `$ build/shmapi ARGS` if the block has one
    <!-- shell -->            command lines for a shell; not run

and every .shm a tag names is run by a golden test (it is one, or a golden
test's arguments name it), so its output is checked too; tests/run.py runs
those.  This script checks the tags, the texts, and runs the sessions.
"""
import importlib.util
import os
import re
import shlex
import subprocess
import sys

SHMAPI = os.environ['SHMAPI']
ROOT = os.getcwd()
DOCS = ['README.md'] + sorted(
    os.path.join('docs', f) for f in os.listdir('docs') if f.endswith('.md'))
TAG = re.compile(r'^<!--\s*(?:(file|output|excerpt|part|session):\s*(\S+)|(shell))\s*-->\s*$')
FENCE = re.compile(r'^(```+|~~~+)')

spec = importlib.util.spec_from_file_location('runner', 'tests/run.py')
runner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner)


def blocks(path):
    """(tag line or None, tag match or None, line number, text) per block."""
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        text = ''.join(l + '\n' for l in lines[i + 1:j])
        prev = lines[start - 1] if start > 0 else ''
        out.append((prev, TAG.match(prev), start + 1, text))
        i = j + 1
    return out


def read(path):
    try:
        with open(path, encoding='utf-8') as f:
            return f.read()
    except OSError:
        return None


def golden_runs():
    """The .shm files that golden tests run: each golden test, and every
    .shm its arguments name."""
    run = set()
    for t in runner.find_tests([]):
        if runner.is_script(t):
            continue
        run.add(t)
        d = runner.read_directives(t)
        if 'argv' in d:
            argv = runner.substitute(d['argv'], t, append=False)
        else:
            argv = runner.substitute(d.get('args', ''), t, append=True)
        if isinstance(argv, list):
            run.update(os.path.normpath(w) for w in argv if w.endswith('.shm'))
    return run


def session(test):
    """The transcript of a golden test: `$ build/shmapi ARGS` and what it
    prints, standard error merged."""
    d = runner.read_directives(test)
    if 'argv' in d:
        argv = runner.substitute(d['argv'], test, append=False)
    else:
        argv = runner.substitute(d.get('args', ''), test, append=True)
    if isinstance(argv, str):
        return None, None, 'has a bad directive: ' + argv
    stdin = os.path.join(os.path.dirname(test), d['stdin']) if 'stdin' in d else os.devnull
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    with open(stdin, 'rb') as f:
        p = subprocess.run([SHMAPI] + argv, stdin=f, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=env, timeout=60)
    command = '$ ' + ' '.join(['build/shmapi'] + [shlex.quote(a) for a in argv]) + '\n'
    return command, p.stdout.decode(), None


def main():
    problems = []
    run = golden_runs()
    count = 0
    for doc in DOCS:
        parts = {}
        for prev, tag, line, text in blocks(doc):
            count += 1
            where = '%s:%d' % (doc, line)
            if not tag:
                problems.append('%s: a code block without a tag on the line before it (found %r)'
                                % (where, prev))
                continue
            kind, path = tag.group(1), tag.group(2)
            if tag.group(3):
                continue
            if path.endswith('.shm') and os.path.normpath(path) not in run:
                problems.append('%s: no golden test runs %s' % (where, path))
            if path.endswith(('.out', '.err')) and not os.path.isfile(path[:-4] + '.shm'):
                problems.append('%s: %s is not the expectation of a golden test' % (where, path))
            if kind == 'output' and not path.endswith(('.out', '.err')):
                problems.append('%s: output names %s, not a .out or .err file' % (where, path))
            if kind == 'session':
                command, out, err = session(path)
                if err:
                    problems.append('%s: session %s %s' % (where, path, err))
                    continue
                want = text[len(command):] if text.startswith('$ ') else text
                if text.startswith('$ ') and not text.startswith(command):
                    problems.append('%s: the session starts %r, but %s runs %r'
                                    % (where, text.split('\n')[0], path, command.strip()))
                elif want != out:
                    problems.append('%s: the session differs from what %s prints:\n%s'
                                    % (where, path, ''.join(runner.diff(path, want.encode(), out.encode(), 'transcript'))))
                continue
            content = read(path)
            if content is None:
                problems.append('%s: cannot read %s' % (where, path))
                continue
            if kind in ('file', 'output') and text != content:
                problems.append('%s: the block differs from %s:\n%s'
                                % (where, path, ''.join(runner.diff(path, content.encode(), text.encode(), kind))))
            elif kind == 'excerpt':
                have, want = content.split('\n'), text.rstrip('\n').split('\n')
                if not any(have[i:i + len(want)] == want for i in range(len(have))):
                    problems.append('%s: the block is not a run of lines of %s' % (where, path))
            elif kind == 'part':
                parts.setdefault(path, []).append(text)
        for path, texts in parts.items():
            if '\n'.join(texts) != read(path):
                problems.append('%s: the blocks tagged part: %s, joined by blank lines, are not that file:\n%s'
                                % (doc, path, ''.join(runner.diff(path, (read(path) or '').encode(),
                                                                  '\n'.join(texts).encode(), 'parts'))))
    for p in problems:
        print(p)
    print('%d documents, %d code blocks, %d problems' % (len(DOCS), count, len(problems)))
    return 1 if problems else 0


sys.exit(main())
