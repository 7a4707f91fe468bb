# The documentation of the primitives (src/rules/primdoc.def) against the table
# the interpreter runs on (src/rules/prims.def):
#   (a) every row of prims.def has one DOC row with a summary, a variance
#       rule and an example, every parameter prims.def lists has a PARAM
#       row, and PARAM rows follow their DOC row;
#   (b) docs/primitives.md is what docs/gen_primitives.py makes;
#   (c) every example runs, in docs/examples/primitives_context.shm (a
#       collective's inside its shard_map body), and uses its primitive;
#   (d) the REPL's `help NAME` prints the entry's example.
import importlib.util
import os
import subprocess
import sys

SHMAPI = os.environ['SHMAPI']
COLLECTIVE_RULES_BY_NAME = {'pbroadcast'}
COLLECTIVE_RULES = {'VR_REDUCE', 'VR_PBCAST', 'VR_VARY', 'VR_GATHER_INV', 'VR_PDOT', 'VR_UCAST', 'VR_RCAST',
                    'VR_RVCAST', 'VR_UREDUCE', 'VR_USCATTER', 'VR_GATHER_RED',
                    'VR_PSCATTER', 'VR_AXIS_INDEX', 'VR_RAGGED'}
# local primitives that name mesh axes, run in the body too
IN_BODY = {'axis_size', 'all_gather_done', 'psum_done', 'reduce_scatter_done', 'all_to_all_done', 'ppermute_done'}
MARKER = "  # a collective's example runs here\n"

spec = importlib.util.spec_from_file_location('gen', 'docs/gen_primitives.py')
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)


def run(args, text=None):
    p = subprocess.run([SHMAPI] + args, input=(text or '').encode(),
                       capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def main():
    problems = []
    prims = gen.read_prims()
    sections, docs, params = gen.read_docs()
    if len(prims) < 20:
        print('found only %d rows in src/rules/prims.def' % len(prims))
        return 1
    tags = {p['tag'] for p in prims}

    # (a)
    for p in prims:
        d = docs.get(p['tag'])
        if d is None:
            problems.append('%s (%s) has no DOC row in src/rules/primdoc.def' % (p['tag'], p['name']))
            continue
        for field in ('summary', 'variance', 'example'):
            if not d[field].strip():
                problems.append('%s has no %s in src/rules/primdoc.def' % (p['tag'], field))
        documented = [q['name'] for q in params.get(p['tag'], [])]
        for name in p['params']:
            if name not in documented:
                problems.append('%s: parameter %s (prims.def) has no PARAM row' % (p['tag'], name))
        if len(set(documented)) != len(documented):
            problems.append('%s: a parameter is documented twice' % p['tag'])
        for q in params.get(p['tag'], []):
            for field in ('type', 'default', 'meaning'):
                if not q[field].strip():
                    problems.append('%s: parameter %s has no %s' % (p['tag'], q['name'], field))
    for tag in docs:
        if tag not in tags:
            problems.append('DOC row %s is not a row of src/rules/prims.def' % tag)
    for tag in params:
        if tag not in docs:
            problems.append('PARAM rows for %s, which has no DOC row' % tag)
    last = None
    seen = set()
    for kind, a in gen.rows(gen.PRIMDOC_DEF, {'DOC', 'PARAM'}):
        if kind == 'DOC':
            last = a[0]
        elif a[0] != last:
            problems.append('PARAM %s %s does not follow the DOC row of %s' % (a[0], a[1], a[0]))
        if kind == 'DOC':
            if a[0] in seen:
                problems.append('two DOC rows for %s' % a[0])
            seen.add(a[0])

    # (b)
    with open(gen.OUTPUT, encoding='utf-8') as f:
        if f.read() != gen.generate():
            problems.append('%s is not what docs/gen_primitives.py makes: run it' % gen.OUTPUT)

    # (c)
    with open(gen.CONTEXT, encoding='utf-8') as f:
        context = f.read()
    if MARKER not in context:
        problems.append('%s has no line %r' % (gen.CONTEXT, MARKER))
    for p in prims:
        d = docs.get(p['tag'])
        if d is None or not d['example'].strip():
            continue
        ex = d['example'].strip()
        if '\n' in ex:
            problems.append('%s: the example is more than one line' % p['name'])
            continue
        # one statement, or several joined by `;` (psend's token needs its precv)
        callees = [st.split('=', 1)[1].strip().split('[')[0].split()[0] if '=' in st else ''
                   for st in ex.split(';')]
        if not set(callees) & {p['name'], p['alias']}:
            problems.append('%s: the example %r does not use %s' % (p['name'], ex, p['name']))
        if p['vrule'] in COLLECTIVE_RULES or p['name'] in IN_BODY or p['name'] in COLLECTIVE_RULES_BY_NAME:
            program = context.replace(MARKER, MARKER + '  ' + ex + '\n')
        else:
            program = context + ex + '\n'
        rc, out, err = run(['-c', program])
        if p['name'] == 'debug_callback' and 'note: debug_callback calls a Python function' in err.split('\n')[0]:
            err = '\n'.join(err.split('\n')[3:])   # the note it is documented to print, with its excerpt
        if p['name'] in ('pure_callback', 'io_callback') and rc != 0 and 'which cannot run here' in err:
            rc, err = 0, ''   # documented to be an error naming the callback
        if rc != 0 or err:
            problems.append('%s: the example %r fails:\n%s' % (p['name'], ex, err.rstrip()))

    # (d)
    rc, out, err = run([], ''.join('help %s\n' % p['name'] for p in prims))
    if rc != 0 or err:
        problems.append('help NAME: exit %d, stderr %r' % (rc, err))
    for p in prims:
        d = docs.get(p['tag'])
        if d and 'Example:\n  %s\n' % d['example'] not in out:
            problems.append('help %s does not print its example' % p['name'])

    for line in problems:
        print(line)
    print('%d primitives, %d problems' % (len(prims), len(problems)))
    return 1 if problems else 0


sys.exit(main())
