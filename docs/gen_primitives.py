#!/usr/bin/env python3
"""Make docs/primitives.md from src/rules/primdoc.def and src/rules/prims.def.

    docs/gen_primitives.py            rewrite docs/primitives.md
    docs/gen_primitives.py --check    exit 1 if docs/primitives.md differs
    docs/gen_primitives.py --stdout   print what it would write

src/rules/primdoc.def holds the words (summaries, parameters, variance rules,
examples; the REPL's `help NAME` prints the same rows); src/rules/prims.def
holds the facts the interpreter runs on (names, aliases, operand counts,
whether a transpose rule and a derivative rule exist).  tests/docs/primdoc.test.py imports this
file to read both.  Python standard library only.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRIMS_DEF = 'src/rules/prims.def'
# primitives whose differentiated operand or result is complex (refused)
COMPLEX_ONLY = {'complex', 'real', 'imag', 'conj', 'fft'}
# primitives JAX differentiates but shmapi does not (an error)
NOT_WRITTEN = {'pdot', 'xmap'}
# primitives differentiated in forward mode only, and why
FORWARD_ONLY = {'while': 'its trip count is not static (JAX refuses it too)',
                'xla_pmap': 'its transpose is not written (write it as a shard_map)'}
PRIMDOC_DEF = 'src/rules/primdoc.def'
CONTEXT = 'docs/examples/primitives_context.shm'
OUTPUT = 'docs/primitives.md'

TOKEN = re.compile(r'''
    (?P<space>\s+|/\*.*?\*/|//[^\n]*)
  | (?P<define>\#[ \t]*define[ \t]+(?P<dname>\w+)(?P<dbody>(?:\\\n|[^\n])*))
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<word>-?\w+)
  | (?P<punct>[(),])
''', re.S | re.X)


def unquote(lit):
    """A C string literal's text (the escapes primdoc.def uses)."""
    out, i, body = [], 0, lit[1:-1]
    while i < len(body):
        c = body[i]
        if c == '\\' and i + 1 < len(body):
            i += 1
            c = {'n': '\n', 't': '\t'}.get(body[i], body[i])
        out.append(c)
        i += 1
    return ''.join(out)


def tokens(text, defines):
    pos = 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise SyntaxError('cannot read %r' % text[pos:pos + 40])
        pos = m.end()
        if m.group('space'):
            continue
        if m.group('define'):
            body = m.group('dbody').replace('\\\n', ' ')
            defines[m.group('dname')] = ''.join(
                unquote(s) for s in re.findall(r'"(?:\\.|[^"\\])*"', body))
            continue
        kind = m.lastgroup
        yield kind, m.group(kind)


def rows(path, names):
    """The macro rows NAME(arg, ...) of a .def file whose NAME is in names:
    a list of (NAME, [args]); a string argument is its text, #define'd
    names are replaced by their text, anything else stays as written."""
    with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        text = f.read()
    defines = {}
    toks = list(tokens(text, defines))
    out, i = [], 0
    while i < len(toks):
        kind, val = toks[i]
        if kind == 'word' and val in names and i + 1 < len(toks) and toks[i + 1] == ('punct', '('):
            args, cur, depth, i = [], [], 0, i + 2
            while True:
                k, v = toks[i]
                if k == 'punct' and v == '(':
                    depth += 1
                elif k == 'punct' and v == ')':
                    if depth == 0:
                        break
                    depth -= 1
                if k == 'punct' and v == ',' and depth == 0:
                    args.append(cur)
                    cur = []
                else:
                    cur.append((k, v))
                i += 1
            args.append(cur)
            out.append((val, [arg_value(a, defines) for a in args]))
        i += 1
    return out


def arg_value(toks, defines):
    if toks and all(k == 'string' for k, _ in toks):
        return ''.join(unquote(v) for _, v in toks)
    if len(toks) == 1 and toks[0][1] in defines:
        return defines[toks[0][1]]
    return ' '.join(v for _, v in toks)


def read_prims():
    """prims.def: a list of dicts in table order."""
    prims = []
    for _, a in rows(PRIMS_DEF, {'PRIM'}):
        prims.append({
            'tag': a[0], 'name': a[1], 'alias': None if a[2] == 'NULL' else a[2],
            'nin_min': int(a[3]), 'nin_max': int(a[4]), 'nout': -2 if a[5] == 'NOUT_SIZES' else -3 if a[5] == 'NOUT_HALF' else int(a[5]),
            'params': a[6].split('|')[0].split(),   # synonyms after '|' are documented in the meaning
            'synonyms': a[6].split('|')[1].split() if '|' in a[6] else [], 'vrule': a[8], 'transpose': a[11] != 'NULL',
            'jvp': a[12],
        })
    return prims


def read_docs():
    """primdoc.def: (sections, docs, params).  sections is a list of
    (title, text, [tags]) in file order; docs maps a tag to its DOC
    fields; params maps a tag to its PARAM rows, in order."""
    sections, docs, params = [], {}, {}
    for kind, a in rows(PRIMDOC_DEF, {'SECTION', 'DOC', 'PARAM'}):
        if kind == 'SECTION':
            sections.append((a[0], a[1], []))
        elif kind == 'DOC':
            if not sections:
                sections.append(('Primitives', '', []))
            sections[-1][2].append(a[0])
            docs[a[0]] = {'summary': a[1], 'variance': a[2], 'example': a[3],
                          'order': len(docs)}
        else:
            params.setdefault(a[0], []).append(
                {'name': a[1], 'type': a[2], 'default': a[3], 'meaning': a[4]})
    return sections, docs, params


def operands(p):
    lo, hi = p['nin_min'], p['nin_max']
    if hi < 0:
        return '%d or more operands' % lo
    if lo == hi:
        return '%d operand%s' % (lo, '' if lo == 1 else 's')
    return '%d to %d operands' % (lo, hi)


def results(p):
    if p['nout'] == -2:
        return 'one result per entry of sizes'
    if p['nout'] == -3:
        return 'one result per operand (half the operands: the other half are init values)'
    if p['nout'] < 0:
        return 'as many results as its function returns'
    if p['nout'] == 0:
        return 'one result per operand'
    return '%d result%s' % (p['nout'], '' if p['nout'] == 1 else 's')


def anchor(name):
    return name.lower()


def cell(text):
    return text.replace('|', '\\|')


def generate():
    prims = {p['tag']: p for p in read_prims()}
    sections, docs, params = read_docs()
    with open(os.path.join(ROOT, CONTEXT), encoding='utf-8') as f:
        context = f.read()
    w = []
    w.append('# Primitives\n')
    w.append('<!-- Made by docs/gen_primitives.py from src/rules/primdoc.def and '
             'src/rules/prims.def: edit those and run the script. -->\n')
    w.append('An equation applies a primitive: `outs = name[key=value, ...] '
             'operands`. The brackets hold the parameters, which are '
             'compile-time constants; a parameter with a default may be left '
             'out, and `show` prints every parameter spelled out. The '
             'operands are variable names or scalar literals. The REPL\'s '
             '`help NAME` prints the entry below for NAME.\n')
    w.append('Each entry gives the primitive\'s operands and results, what '
             'it computes, its parameters (type, default, meaning), its '
             '*variance rule*, which says how the variance set of the result '
             '(the mesh axes along which it may differ between devices, see '
             '[shard_map.md](shard_map.md)) follows from the operands\', and '
             'an example. Outside a shard_map body every value is invariant '
             'and the variance rules have nothing to say.\n')
    w.append('The examples use the names this program defines '
             '(`build/shmapi --check` runs each of them in it, in '
             '`tests/docs/primdoc.test.py`): an example of a collective '
             'stands inside `per_device`, any other after the last line.\n')
    w.append('<!-- file: %s -->' % CONTEXT)
    w.append('```\n' + context + '```\n')
    w.append('## Index\n')
    for title, _, tags in sections:
        names = ', '.join('[`%s`](#%s)' % (prims[t]['name'], anchor(prims[t]['name']))
                          for t in tags if t in prims)
        w.append('- %s: %s' % (title, names))
    w.append('')
    for title, text, tags in sections:
        w.append('## %s\n' % title)
        if text:
            w.append(text + '\n')
        for tag in tags:
            p, d = prims[tag], docs[tag]
            w.append('### %s\n' % p['name'])
            sig = p['name'] + ('[' + ', '.join(p['params']) + ']' if p['params'] else '')
            line = '`%s`: %s, %s.' % (sig, operands(p), results(p))
            if p['alias']:
                line += ' Also spelled %s.' % ', '.join('`%s`' % a for a in p['alias'].split())
            if p['transpose']:
                line += ' `linear_transpose` knows its transpose.'
            if p['jvp'] == 'jvp_zero':
                line += ' Its derivative is zero.'
            elif p['jvp'] == 'NULL' and p['name'] in NOT_WRITTEN:
                line += " It cannot be differentiated: JAX's derivative rule for it is not written here."
            elif p['jvp'] == 'NULL':
                line += ' It has no derivative rule (JAX defines none): differentiating through it is an error.'
            elif p['name'] in COMPLEX_ONLY:
                line += (' Its derivative rule is linear, but complex values are not differentiated:'
                         ' differentiating through it is an error.')
            elif p['name'] in FORWARD_ONLY:
                line += (' `jvp` differentiates it; reverse mode (`vjp`, `grad`) is an error: %s.'
                         % FORWARD_ONLY[p['name']])
            else:
                line += ' `jvp` and `grad` differentiate it.'
            w.append(line + '\n')
            w.append(d['summary'] + '\n')
            ps = params.get(tag, [])
            if ps:
                w.append('| parameter | type | default | meaning |')
                w.append('| --- | --- | --- | --- |')
                for q in ps:
                    w.append('| `%s` | %s | %s | %s |' % (
                        q['name'], cell(q['type']), cell(q['default']), cell(q['meaning'])))
                w.append('')
            else:
                w.append('No parameters.\n')
            w.append('Variance: ' + d['variance'] + '\n')
            w.append('Example: `%s`\n' % d['example'])
    return '\n'.join(w).rstrip('\n') + '\n'


def main(argv):
    text = generate()
    path = os.path.join(ROOT, OUTPUT)
    if '--stdout' in argv:
        sys.stdout.write(text)
        return 0
    if '--check' in argv:
        try:
            with open(path, encoding='utf-8') as f:
                old = f.read()
        except FileNotFoundError:
            old = None
        if old != text:
            print('%s is not what docs/gen_primitives.py makes: run it' % OUTPUT)
            return 1
        return 0
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
