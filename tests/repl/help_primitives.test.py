# `help primitives` lists every row of the primitive table (src/rules/prims.def)
# with its parameters, and `help NAME` describes each primitive, so the
# REPL's help cannot drift from the table.
import os
import re
import subprocess
import sys

SHMAPI = os.environ['SHMAPI']
ROW = re.compile(r'^PRIM\(\s*\w+\s*,\s*"([^"]+)"\s*,\s*(NULL|"[^"]*")\s*,'
                 r'\s*-?\d+\s*,\s*-?\d+\s*,\s*-?\d+\s*,\s*"([^"]*)"')


def run(text):
    p = subprocess.run([SHMAPI], input=text.encode(), capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def main():
    rows = []
    with open('src/rules/prims.def') as f:
        for line in f:
            m = ROW.match(line)
            if m:
                rows.append((m.group(1), m.group(2).strip('"'), m.group(3).split('|')[0].split()))  # synonyms after '|' are not listed
    if len(rows) < 20:
        print(f'found only {len(rows)} rows in src/rules/prims.def')
        return 1
    rc, out, err = run('help primitives\n')
    if rc != 0 or err:
        print(f'help primitives: exit {rc}, stderr {err!r}')
        return 1
    lines = out.splitlines()
    problems = []
    for name, alias, params in rows:
        sig = name + ('[' + ', '.join(params) + ']' if params else '')
        if not any(l.startswith('  ' + sig + ' ') for l in lines):
            problems.append(f'help primitives has no line for {sig}')
        if alias != 'NULL' and not any(l.startswith('  ' + sig + ' ') and f'(alias {alias})' in l
                                       for l in lines):
            problems.append(f'help primitives does not give {name} its alias {alias}')
    script = ''.join(f'help {name}\n' for name, _, _ in rows)
    rc, out, err = run(script)
    if rc != 0 or err or '*** no help' in out:
        problems.append(f'help NAME: exit {rc}, stderr {err!r}')
    for name, _, params in rows:
        sig = name + ('[' + ', '.join(params) + ']' if params else '')
        if f'\n{sig}    ' not in out:
            problems.append(f'help {name} does not start with {sig}')
    for p in problems:
        print(p)
    print(f'{len(rows)} primitives, {len(problems)} problems')
    return 1 if problems else 0


sys.exit(main())
