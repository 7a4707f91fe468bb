#!/usr/bin/env python3
"""The source tree is layered: no include cycle, every include goes down.

meson.build lists the sources in layers (base_src, front_src, rules_src,
checker_src, run_src, tools_src), each built as a library of its own.  This
test reads those lists and every `#include "x.h"` of src/, and fails when

  * a file includes a header of a layer above its own, or of a sibling
    layer (the checker and the evaluator stand side by side: neither may
    include the other);
  * the modules' include graph has a cycle (a module is a .c file with its
    header; check_*.c and check_int.h belong to check, jvp_*.c and
    jvp_int.h to jvp);
  * a source file of src/ is in no layer, or a header has no home;
  * a file of src/ is longer than 1,500 lines (LONG below names the ones
    allowed to be, each one algorithm, with the reason).
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, 'src')
# the layers in order; siblings share a rank
LAYERS = [('base_src', 0), ('front_src', 1), ('rules_src', 2), ('checker_src', 3), ('run_src', 3), ('model_src', 4),
          ('tools_src', 4)]
# headers without a .c of their own, and where they stand
HEADER_ONLY = {'common': 'base_src', 'defs': 'base_src', 'types': 'base_src', 'ir': 'rules_src', 'lex': 'front_src',
               'parser': 'front_src'}
TOP = {'main'}                      # the program itself: above every layer
MAX_LINES = 1500
LONG = {}                           # file -> why it may be longer


# subsystems in several files around a private header: check_*.c and
# check_int.h are the checker, jvp_rules.c and jvp_int.h the JVP
MULTI_FILE = ('check', 'jvp')


def module_of(name):
    """check_flow.c, check_int.h -> check; jvp_rules.c -> jvp; prims.h -> prims."""
    base = re.sub(r'\.(c|h|def)$', '', name)
    for m in MULTI_FILE:
        if base == m or base.startswith(m + '_'):
            return m
    return base


def main():
    text = open(os.path.join(ROOT, 'meson.build')).read()
    layer_of = {}
    for var, rank in LAYERS:
        m = re.search(r'^' + var + r' = files\((.*?)\)', text, re.S | re.M)
        if not m:
            print('meson.build has no %s' % var)
            return 1
        for f in re.findall(r"'src/([\w.]+)'", m.group(1)):
            layer_of[module_of(f)] = (var, rank)
    for mod, var in HEADER_ONLY.items():
        layer_of[mod] = (var, dict(LAYERS)[var])
    problems = []
    edges = {}
    for f in sorted(os.listdir(SRC)):
        if not re.search(r'\.(c|h)$', f):
            continue
        path = os.path.join(SRC, f)
        lines = open(path, encoding='utf-8').read().split('\n')
        n = len(lines) - (1 if lines and lines[-1] == '' else 0)
        if n > MAX_LINES and f not in LONG:
            problems.append('%s has %d lines (at most %d, unless it is one algorithm)' % (f, n, MAX_LINES))
        mod = module_of(f)
        if mod in TOP:
            continue
        if mod not in layer_of:
            problems.append('%s belongs to no layer of meson.build' % f)
            continue
        for line in lines:
            m = re.match(r'\s*#\s*include\s+"([\w.]+)"', line)
            if not m or m.group(1).endswith('.def'):
                continue
            dep = module_of(m.group(1))
            if dep == mod:
                continue
            if dep not in layer_of:
                problems.append('%s includes %s, which belongs to no layer' % (f, m.group(1)))
                continue
            edges.setdefault(mod, set()).add(dep)
            (lv, lr), (dv, dr) = layer_of[mod], layer_of[dep]
            if dr > lr or (dr == lr and dv != lv):
                problems.append('%s (%s) includes %s (%s): a layer may include only those below it'
                                % (f, lv, m.group(1), dv))
    # cycles among modules (Tarjan)
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    for comp in sccs:
        problems.append('include cycle among modules: %s' % ', '.join(comp))
    for p in problems:
        print(p)
    print('%d modules, %d include edges, %d problems' % (len(layer_of), sum(len(e) for e in edges.values()),
                                                        len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
