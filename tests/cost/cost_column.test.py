#!/usr/bin/env python3
"""The cost column of src/rules/prims.def (its 14th) against the rest of the
row, so that a primitive cannot be priced as what it is not:

  - every row names a rule that src/model/cost.c defines, and
    src/rules/prims.h's column doc names every rule the rows use;
  - cost_coll (a collective, priced by the communication model) exactly
    on the rows whose variance rule communicates (VR_REDUCE, VR_VARY, VR_RAGGED,
    VR_GATHER_INV: cost_is_comm sends those to the communication stream;
    any other row is priced as a local equation by its rule);
  - cost_none (nothing of its own) exactly on the rows without a shape
    rule: control flow and calls, whose bodies' equations are priced.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
COMMUNICATES = {'VR_REDUCE', 'VR_VARY', 'VR_GATHER_INV', 'VR_RAGGED', 'VR_UREDUCE', 'VR_USCATTER', 'VR_GATHER_RED'}


def read(rel):
    with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
        return f.read()


def columns(row):
    """The comma-separated columns of one PRIM(...) row (strings may hold commas)."""
    cols, cur, quoted = [], '', False
    for ch in row:
        if ch == '"':
            quoted = not quoted
        if ch == ',' and not quoted:
            cols.append(cur.strip())
            cur = ''
        else:
            cur += ch
    cols.append(cur.strip())
    return cols


def main():
    rows = re.findall(r'^PRIM\((.*)\)\s*$', read('src/rules/prims.def'), re.M)
    defined = set(re.findall(r'^static Work (cost_\w+)\(const IrStmt \*st\)', read('src/model/cost.c'), re.M))
    doc = read('src/rules/prims.h')
    problems = []
    if len(rows) < 100 or len(defined) < 10:
        print('found only %d rows in prims.def and %d cost rules in cost.c' % (len(rows), len(defined)))
        return 1
    used = set()
    for row in rows:
        c = columns(row)
        if len(c) != 14:
            problems.append('%s: %d columns, not 14' % (c[0], len(c)))
            continue
        tag, shape, vrule, cost = c[0], c[7], c[8], c[13]
        used.add(cost)
        if cost not in defined:
            problems.append('%s: cost rule %s is not one of cost.c\'s (%s)' % (tag, cost, ', '.join(sorted(defined))))
        if (cost == 'cost_coll') != (vrule in COMMUNICATES or tag == 'PBROADCAST_SOURCE'):
            problems.append('%s: variance rule %s with cost rule %s (cost_coll is for exactly the rows that '
                            'communicate)' % (tag, vrule, cost))
        if (cost == 'cost_none') != (shape == 'NULL'):
            problems.append('%s: shape rule %s with cost rule %s (cost_none is for exactly the rows without '
                            'a shape rule)' % (tag, shape, cost))
    for name in sorted(used):
        if not re.search(r'\b%s\b' % name, doc):
            problems.append('src/rules/prims.h does not describe the cost rule %s' % name)
    for p in problems:
        print(p)
    print('%d rows, %d cost rules used of %d' % (len(rows), len(used), len(defined)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
