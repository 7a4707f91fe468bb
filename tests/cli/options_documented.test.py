#!/usr/bin/env python3
"""Every option `shmapi --help` lists (made from main.c's table of options)
is one the program accepts, and docs/cli.md speaks of each outside the
help text it shows: a new row of the table without words in the manual
fails here."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    shmapi = os.environ['SHMAPI']
    help_text = subprocess.run([shmapi, '--help'], capture_output=True, text=True, check=True).stdout
    options = sorted(set(re.findall(r'(?<![\w-])(--[a-z][a-z-]*|-[a-z])\b', help_text)))
    with open(os.path.join(ROOT, 'docs', 'cli.md'), encoding='utf-8') as f:
        manual = f.read()
    # the manual's words: without the --help output it shows
    words = re.sub(r'<!-- output: docs/examples/cli_help.out -->\n```\n.*?```\n', '', manual, flags=re.S)
    problems = []
    if len(options) < 15:
        problems.append('--help lists only %d options: %s' % (len(options), ' '.join(options)))
    for opt in options:
        if not re.search(r'(?<![\w-])' + re.escape(opt) + r'(?![\w-])', words):
            problems.append('docs/cli.md does not speak of %s' % opt)
        # an option --help lists is one the parser knows: it is never "unknown"
        r = subprocess.run([shmapi, opt], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
        if 'unknown option' in r.stderr:
            problems.append('%s is in --help but the parser does not know it' % opt)
    for p in problems:
        print(p)
    print('%d options, %d problems' % (len(options), len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
