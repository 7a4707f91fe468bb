#!/usr/bin/env python3
"""Summarize `meson test` runs from their testlog.json files.

    .ci/summary.py LOG [LOG...]

Each LOG is a meson testlog.json (build/meson-logs/testlog.json) or a
TAP stream saved to a file ending in .tap (tests/valgrind.sh's output).
Prints, for every failing TAP subtest, its line and the '# ' diagnostics
that follow it (the golden runner puts its diffs there, which meson's own
console output leaves out), the output of every other failing test, and
last a line 'N passed, N failed' (', N skipped' when some were skipped),
counting TAP subtests one by one and every other test as one.  With
several logs, a line per log comes first and the last line is the total.
"""

import json
import re
import sys

TAP_RESULT = re.compile(r'^(not )?ok\b')
DIRECTIVE = re.compile(r'#\s*(SKIP|TODO)\b', re.IGNORECASE)
RUNNER_SUMMARY = re.compile(r'^#\s*\d+ passed, \d+ failed')
PASSING = ('OK', 'EXPECTEDFAIL')
TAIL = 60


def summarize_tap(name, text, counts):
    """Count the results in one TAP stream; print its failures."""
    failed = 0
    printing = False
    for line in text.splitlines():
        if TAP_RESULT.match(line):
            directive = DIRECTIVE.search(line)
            kind = directive.group(1).upper() if directive else ''
            printing = False
            if kind == 'SKIP':
                counts['skipped'] += 1
            elif line.startswith('ok') or kind == 'TODO':
                counts['passed'] += 1
            else:
                counts['failed'] += 1
                failed += 1
                printing = True
                print('%s: %s' % (name, line))
        elif line.startswith('Bail out!'):
            counts['failed'] += 1
            failed += 1
            print('%s: %s' % (name, line))
        elif printing and line.startswith('#') and \
                not RUNNER_SUMMARY.match(line):
            print(line)
    return failed


def count_line(counts):
    line = '%d passed, %d failed' % (counts['passed'], counts['failed'])
    if counts['skipped']:
        line += ', %d skipped' % counts['skipped']
    return line


def main():
    logs = sys.argv[1:]
    total = {'passed': 0, 'failed': 0, 'skipped': 0}
    per_log = []
    for log in logs:
        counts = {'passed': 0, 'failed': 0, 'skipped': 0}
        if log.endswith('.tap'):
            summarize_tap_file(log, counts)
        else:
            summarize_log(log, counts)
        per_log.append((log, counts))
        for k in total:
            total[k] += counts[k]
    if len(logs) > 1:
        for log, counts in per_log:
            print('%s: %s' % (log, count_line(counts)))
    print(count_line(total))
    return 1 if total['failed'] else 0


def summarize_tap_file(path, counts):
    """A TAP stream saved to a file: an unreadable or empty one fails."""
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
    except OSError as e:
        print('cannot read %s: %s' % (path, e))
        counts['failed'] += 1
        return
    summarize_tap(path, text, counts)
    if not any(TAP_RESULT.match(l) for l in text.splitlines()) and \
            '# SKIP' not in text:
        print('%s: no test results' % path)
        counts['failed'] += 1


def summarize_log(path, counts):
    """One meson testlog.json."""
    try:
        with open(path, encoding='utf-8') as f:
            tests = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print('cannot read the test log: %s' % e)
        tests = []
        counts['failed'] += 1
    for test in tests:
        name, result = test.get('name', '?'), test.get('result', '?')
        stdout = test.get('stdout') or ''
        stderr = test.get('stderr') or ''
        is_tap = any(TAP_RESULT.match(l) for l in stdout.splitlines())
        failed = summarize_tap(name, stdout, counts) if is_tap else 0
        if result == 'SKIP' and not is_tap:
            counts['skipped'] += 1
        elif result in PASSING:
            counts['passed'] += 0 if is_tap else 1
        elif not failed:
            # A failure that no subtest explains: a crash, a timeout, a
            # plan that does not match, or a test that does not speak TAP.
            counts['failed'] += 1
            print('%s: %s (exit status %s)'
                  % (name, result, test.get('returncode')))
            lines = (stdout + stderr).splitlines()
            if len(lines) > TAIL:
                print('  ... (last %d of %d lines)' % (TAIL, len(lines)))
            for line in lines[-TAIL:]:
                print('  ' + line)


if __name__ == '__main__':
    sys.exit(main())
