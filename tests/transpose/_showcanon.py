"""Canonical forms of `show` output, for comparing functions up to names.

canon(text) parses one `def NAME = { lambda ... }` as `show` prints it and
returns a canonical form in which every variable is replaced by what it is:
a parameter by its position and type, an equation's result by its
equation (primitive, parameters with nested functions canonicalised,
canonical operands, result types) and its position among the results.
Two functions have the same canonical form exactly when they have the same
parameters, the same multiset of equations and the same results, whatever
their variable names, the order of independent equations and the order of
the two operands of an `add`.
Python standard library only.
"""

import re

DTYPE = r'(?:f32|f64|i32|i64|bool|bf16|f16|u8|i8|u32)'
TOKEN = re.compile(r'''
    (?P<ws>\s+)
  | (?P<type>''' + DTYPE + r'''\[[0-9,\s]*\](?:\{[^}]*\})?)
  | (?P<lit>(?:[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|-?nan|-?inf|True|False):''' + DTYPE + r'''\[\])
  | (?P<num>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+))
  | (?P<str>'[^']*'|"[^"]*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[{}()\[\],;:.=])
''', re.X)


class ParseError(Exception):
    pass


def tokenize(text):
    toks = []
    pos = 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise ParseError('cannot tokenize at %r' % text[pos:pos + 30])
        pos = m.end()
        kind = m.lastgroup
        if kind == 'ws':
            continue
        toks.append((kind, m.group()))
    return toks


class Parser:
    def __init__(self, toks):
        self.t = toks
        self.i = 0

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else ('eof', '')

    def next(self):
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, val):
        tok = self.next()
        if tok[1] != val:
            raise ParseError('expected %r, got %r' % (val, tok[1]))
        return tok

    def binder(self):
        kind, name = self.next()
        if kind != 'name':
            raise ParseError('expected a binder, got %r' % name)
        self.expect(':')
        kind, typ = self.next()
        if kind != 'type':
            raise ParseError('expected a type, got %r' % typ)
        return name, typ

    def lam(self):
        """{ lambda consts ; params . let eqns in ( outs ) }"""
        self.expect('{')
        self.expect('lambda')
        consts, params = [], []
        while self.peek()[1] != ';':
            consts.append(self.binder())
        self.expect(';')
        while self.peek()[1] != '.':
            params.append(self.binder())
        self.expect('.')
        self.expect('let')
        eqns = []
        while self.peek()[1] != 'in':
            eqns.append(self.eqn())
        self.expect('in')
        self.expect('(')
        outs = []
        while self.peek()[1] != ')':
            kind, v = self.next()
            if v == ',':
                continue
            outs.append((kind, v))
        self.expect(')')
        self.expect('}')
        return {'consts': consts, 'params': params, 'eqns': eqns, 'outs': outs}

    def at_binder(self):
        return self.peek()[0] == 'name' and self.peek(1)[1] == ':' and self.peek(2)[0] == 'type'

    def eqn(self):
        outs = []
        while self.at_binder():
            outs.append(self.binder())
        self.expect('=')
        kind, prim = self.next()
        if kind != 'name':
            raise ParseError('expected a primitive, got %r' % prim)
        params = []
        if self.peek()[1] == '[':
            self.next()
            while self.peek()[1] != ']':
                kind, key = self.next()
                self.expect('=')
                params.append((key, self.value()))
            self.expect(']')
        args = []
        while self.peek()[1] not in ('in', 'eof') and not self.at_binder():
            args.append(self.next())
        return {'outs': outs, 'prim': prim, 'params': params, 'args': args}

    def value(self):
        """A parameter value: a nested function, a bracketed group, or one
        token (a name followed by a group, such as P(...), is one value)."""
        if self.peek()[1] == '{' and self.peek(1)[1] == 'lambda':
            return ('lam', self.lam())
        if self.peek()[1] in '([':
            return ('group', self.group())
        tok = self.next()
        if tok[0] == 'name' and self.peek()[1] == '(':
            return ('call', tok[1], self.group())
        return ('tok', tok[1])

    def group(self):
        open_ = self.next()[1]
        close = ')' if open_ == '(' else ']'
        items = []
        while self.peek()[1] != close:
            if self.peek()[1] == ',':
                self.next()
                continue
            items.append(self.value())
        self.next()
        return (open_, tuple(items))


def parse_def(text):
    """The function of the first `def NAME = { lambda ... }` in text."""
    toks = tokenize(text)
    p = Parser(toks)
    while not (p.peek()[1] == 'def' and p.peek(2)[1] == '='):
        if p.peek()[0] == 'eof':
            raise ParseError('no def in the text')
        p.next()
    p.next()
    name = p.next()[1]
    p.expect('=')
    return name, p.lam()


def canon_value(v, env):
    kind = v[0]
    if kind == 'lam':
        return ('lam', canon_lam(v[1], env))
    if kind == 'group':
        return ('group', v[1][0], tuple(canon_value(x, env) for x in v[1][1]))
    if kind == 'call':
        return ('call', v[1], ('group', v[2][0], tuple(canon_value(x, env) for x in v[2][1])))
    return v


# operands that may come in either order (a transpose sums cotangents in
# the order the backward pass reaches them)
COMMUTATIVE = ('add',)


def canon_lam(lam, outer=None):
    """The canonical form of a parsed function.  outer maps names of the
    enclosing functions (closure constants) to their canonical forms."""
    env = dict(outer or {})
    for i, (name, typ) in enumerate(lam['consts']):
        env[name] = ('const', i, typ)
    for i, (name, typ) in enumerate(lam['params']):
        env[name] = ('param', i, typ)
    keys = []
    for e in lam['eqns']:
        args = []
        for kind, v in e['args']:
            if kind == 'name':
                if v not in env:
                    raise ParseError('unknown variable %r' % v)
                args.append(env[v])
            else:
                args.append(('lit', v))
        if e['prim'] in COMMUTATIVE:
            args.sort(key=repr)
        key = (e['prim'], tuple((k, canon_value(val, env)) for k, val in e['params']),
               tuple(args), tuple(t for _, t in e['outs']))
        keys.append(key)
        for j, (name, typ) in enumerate(e['outs']):
            env[name] = ('res', key, j)
    outs = []
    for kind, v in lam['outs']:
        outs.append(env[v] if kind == 'name' else ('lit', v))
    return (tuple(t for _, t in lam['consts']), tuple(t for _, t in lam['params']),
            tuple(sorted(keys, key=repr)), tuple(outs))


def canon(text):
    name, lam = parse_def(text)
    return canon_lam(lam)


def equations(text):
    """The equations of a def and of every nested function, as one line
    each, with names replaced (for readable difference reports)."""
    name, lam = parse_def(text)
    out = []

    def walk(l, depth):
        for e in l['eqns']:
            out.append('  ' * depth + e['prim'] + ' ' + ' '.join(t for _, t in e['outs']))
            for k, v in e['params']:
                if v[0] == 'lam':
                    walk(v[1], depth + 1)
                elif v[0] == 'group':
                    for x in v[1][1]:
                        if x[0] == 'lam':
                            walk(x[1], depth + 1)
    walk(lam, 0)
    return out


def count_prims(text):
    """How many equations of each primitive a def has (nested included)."""
    counts = {}
    for line in equations(text):
        p = line.split()[0]
        counts[p] = counts.get(p, 0) + 1
    return counts
