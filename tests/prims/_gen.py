#!/usr/bin/python3
"""Writes the golden tests of tests/prims/: each .shm with its expected
.out, computed here with NumPy (never copied from shmapi), or its expected
.err diagnostic.  Run with a Python that has NumPy, from anywhere:

    /usr/bin/python3 tests/prims/_gen.py

Float32 transcendental results are computed in float64 and rounded once to
float32 (shmapi's choice: correctly rounded f32 results).  Not a test
itself (the leading underscore); random_vs_numpy.test.py is the
randomized counterpart.
"""
import os, re, sys
import numpy as np

D = os.path.dirname(os.path.abspath(__file__))
os.makedirs(D, exist_ok=True)
f32, f64, i32, i64, b_ = np.float32, np.float64, np.int32, np.int64, np.bool_
np.seterr(all='ignore')
written = []


def A(v, dt):
    return np.array(v, dtype=dt)


def fmt(x):
    if isinstance(x, str):
        return x
    return str(np.asarray(x))


def P(*items):
    return ' '.join(fmt(x) for x in items)


def T(name, src, *lines):
    """A test whose stdout is `lines` (each a P(...) string)."""
    src = src.strip('\n') + '\n'
    src = '\n'.join(l[4:] if l.startswith('    ') else l for l in src.split('\n'))
    with open(f'{D}/{name}.shm', 'w') as f:
        f.write(src)
    with open(f'{D}/{name}.out', 'w') as f:
        f.write(''.join(l + '\n' for l in lines))
    for ext in ('.err',):
        if os.path.exists(f'{D}/{name}{ext}'):
            os.remove(f'{D}/{name}{ext}')
    written.append(name)


def value_end(line, start):
    """End (exclusive) of a parameter value starting at `start`."""
    depth = 0
    i = start
    while i < len(line):
        c = line[i]
        if c in '([':
            depth += 1
        elif c in ')]':
            if depth == 0:
                return i
            depth -= 1
            if depth == 0:
                return i + 1
        elif depth == 0 and c in ' ,':
            return i
        i += 1
    return i


def E(name, src, msg, param=None, at=None):
    """A test that fails to check: `msg` reported on the line marked `#!`
    (the mark is removed); the caret spans the callee name, or the
    parameter `param` (key through value), or the text `at`."""
    src = src.strip('\n') + '\n'
    lines = [l[4:] if l.startswith('    ') else l for l in src.split('\n')]
    lineno = None
    for k, l in enumerate(lines):
        if l.rstrip().endswith('#!'):
            lineno = k + 1
            lines[k] = l.rstrip()[:-2].rstrip()
    assert lineno, name
    text = lines[lineno - 1]
    if param:
        c0 = text.index(param + '=')
        c1 = value_end(text, c0 + len(param) + 1)
    elif at:
        c0 = text.index(at)
        c1 = c0 + len(at)
    else:
        m = re.search(r'=\s*([A-Za-z_][A-Za-z0-9_]*)', text)
        c0, c1 = m.start(1), m.end(1)
    path = f'tests/prims/{name}.shm'
    err = f'{path}:{lineno}:{c0 + 1}: error: {msg}\n'
    err += f'{lineno:5d} | {text}\n'
    err += '      | ' + ' ' * c0 + '^' + '~' * (c1 - c0 - 1) + '\n'
    with open(f'{D}/{name}.shm', 'w') as f:
        f.write('\n'.join(lines))
    with open(f'{D}/{name}.err', 'w') as f:
        f.write(err)
    if os.path.exists(f'{D}/{name}.out'):
        os.remove(f'{D}/{name}.out')
    written.append(name)


def cr(x, fn, dt=f32):
    """fn computed in float64, rounded once to dt."""
    return fn(np.asarray(x, dtype=dt).astype(f64)).astype(dt)


def trunc_div(a, b, dt):
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    out = []
    for x, y in zip(a.ravel(), b.ravel()):
        if y == 0:
            out.append(-1)
        else:
            q = abs(int(x)) // abs(int(y))
            out.append(q if (x < 0) == (y < 0) else -q)
    return np.array(out, dtype=np.int64).astype(dt).reshape(a.shape)


def trunc_rem(a, b, dt):
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    out = []
    for x, y in zip(a.ravel(), b.ravel()):
        if y == 0:
            out.append(int(x))
        else:
            r = abs(int(x)) % abs(int(y))
            out.append(r if x >= 0 else -r)
    return np.array(out, dtype=np.int64).astype(dt).reshape(a.shape)


M23 = A([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]], f32)
M23S = '[[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]]'

# ============================================================ binary
T('add_f32', '''
    a = [1.5, 2.0, -3.0]
    b = [0.25, 4.0, 1.0]
    c = add a b
    print c
''', P(A([1.5, 2, -3], f32) + A([.25, 4, 1], f32)))

T('add_scalar_literal', f'''
    x = {M23S}
    y = add x 1.0
    z = add 2 x
    print y
    print z
''', P(M23 + f32(1)), P(M23 + f32(2)))

T('add_scalar_var', '''
    s = 10.0
    x = [[1.0, 2.0], [3.0, 4.0]]
    y = add s x
    z = add x s
    print y
    print z
''', P(A([[11, 12], [13, 14]], f32)), P(A([[11, 12], [13, 14]], f32)))

T('add_scalars', '''
    a = add 2 3
    b = add 2.5 1
    print a, b
''', P(A(5, i32), A(3.5, f32)))

T('add_i32_wrap', '''
    x = [2147483647, -2147483648, 5]
    y = add x 1
    print y
''', P(A([-2147483648, -2147483647, 6], i32)))

T('add_i64', '''
    x:i64[3] = [9000000000, -5, 7]
    y:i64[3] = [1, 2, 3]
    z = add x y
    print z
''', P(A([9000000001, -3, 10], i64)))

T('add_f64', '''
    x:f64[3] = [0.1, 0.2, 1e300]
    y = add x x
    print y
''', P(A([0.1, 0.2, 1e300], f64) * 2))

T('add_any_alias', '''
    x = [1, 2, 3]
    y = add_any x x
    print y
''', P(A([2, 4, 6], i32)))

T('sub_mul_f32', f'''
    x = {M23S}
    y = sub x 0.5
    z = mul x x
    w = mul x -2
    print y
    print z
    print w
''', P(M23 - f32(.5)), P(M23 * M23), P(M23 * f32(-2)))

T('mul_i32_wrap', '''
    x = [65536, 3, -7]
    y = mul x x
    print y
''', P(A([0, 9, 49], i32)))

T('sub_i64', '''
    x:i64[2] = [10, -10]
    y = sub 1 x
    print y
''', P(A([-9, 11], i64)))

T('div_f32', '''
    a = [1.0, -1.0, 0.0, 7.0]
    b = [0.0, 0.0, 0.0, 2.0]
    c = div a b
    print c
''', P(A([1.0, -1.0, 0.0, 7.0], f32) / A([0.0, 0.0, 0.0, 2.0], f32)))

T('div_i32_trunc', '''
    a = [7, -7, 7, -7, 1]
    b = [2, 2, -2, -2, 3]
    c = div a b
    print c
''', P(trunc_div([7, -7, 7, -7, 1], [2, 2, -2, -2, 3], i32)))

T('div_i32_by_zero', '''
    a = [5, -5, 0, -2147483648]
    b = [0, 0, 0, -1]
    c = div a b
    print c
''', P(A([-1, -1, -1, -2147483648], i32)))

T('div_i64', '''
    a:i64[3] = [9000000000, -9, 9]
    b:i64[3] = [2, 4, 0]
    c = div a b
    print c
''', P(A([4500000000, -2, -1], i64)))

T('rem_f32', '''
    a = [5.5, -5.5, 5.5, 1.0]
    b = [2.0, 2.0, -2.0, 0.0]
    c = rem a b
    print c
''', P(np.fmod(A([5.5, -5.5, 5.5, 1.0], f32), A([2, 2, -2, 0], f32))))

T('rem_i32', '''
    a = [7, -7, 7, -7, 5, -2147483648]
    b = [3, 3, -3, -3, 0, -1]
    c = rem a b
    print c
''', P(trunc_rem([7, -7, 7, -7, 5, -2147483648], [3, 3, -3, -3, 0, -1], i32)))

T('pow_f32', '''
    a = [2.0, 9.0, 0.5, -8.0]
    b = [10.0, 0.5, -2.0, 0.5]
    c = pow a b
    print c
''', P(np.power(A([2, 9, .5, -8], f64), A([10, .5, -2, .5], f64)).astype(f32)))

T('pow_i32', '''
    a = [2, -3, 5, 1, 2]
    b = [10, 3, 0, -4, -1]
    c = pow a b
    print c
''', P(A([1024, -27, 1, 1, 0], i32)))

T('pow_float_int_exponent', '''
    a = [2.0, 1.5, 4.0]
    n = [3, 2, -1]
    c = pow a n
    print c
''', P(A([8, 2.25, 0.25], f32)))

T('pow_f64', '''
    a:f64[2] = [2.0, 10.0]
    c = pow a 0.5
    print c
''', P(np.power(A([2, 10], f64), 0.5)))

T('max_min_f32', '''
    a = [1.0, -2.0, 3.0, 0.0]
    b = [0.5, -1.0, 4.0, 0.0]
    n = div b b
    hi = max a b
    lo = min a b
    hn = max a n
    ln = min n a
    print hi
    print lo
    print hn
    print ln
''', P(np.maximum(A([1, -2, 3, 0], f32), A([.5, -1, 4, 0], f32))),
   P(np.minimum(A([1, -2, 3, 0], f32), A([.5, -1, 4, 0], f32))),
   P(A([1, 1, 1, np.nan], f32) * 0 + np.maximum(A([1, -2, 3, 0], f32), A([1, 1, 1, np.nan], f32))),
   P(np.minimum(A([1, 1, 1, np.nan], f32), A([1, -2, 3, 0], f32))))

T('max_min_int_bool', '''
    a = [1, -5, 3]
    b = [0, 2, 3]
    c = max a b
    d = min a 0
    p = [True, False, False]
    q = [True, True, False]
    e = max p q
    f = min p q
    print c, d
    print e, f
''', P(A([1, 2, 3], i32), A([0, -5, 0], i32)),
   P(A([True, True, False], b_), A([True, False, False], b_)))

T('maximum_alias', '''
    c = maximum 3 7
    print c
''', P(A(7, i32)))

T('and_or_xor_bool', '''
    p = [True, True, False, False]
    q = [True, False, True, False]
    a = and p q
    o = or p q
    x = xor p q
    print a
    print o
    print x
''', P(A([1, 0, 0, 0], b_)), P(A([1, 1, 1, 0], b_)), P(A([0, 1, 1, 0], b_)))

T('and_or_xor_int', '''
    p = [12, -1, 5]
    q = [10, 7, 0]
    a = and p q
    o = or p q
    x = xor p q
    print a, o, x
''', P(A([8, 7, 0], i32), A([14, -1, 5], i32), A([6, -8, 5], i32)))

T('not_bool_int', '''
    p = [True, False]
    q = not p
    x = [0, 5, -1]
    y = not x
    print q, y
''', P(A([False, True], b_), A([-1, -6, 0], i32)))

T('compare_f32', '''
    a = [1.0, 2.0, 3.0]
    b = [2.0, 2.0, 2.0]
    e = eq a b
    n = ne a b
    l = lt a b
    le1 = le a b
    g = gt a b
    ge1 = ge a b
    print e, n
    print l, le1
    print g, ge1
''', P(A([0, 1, 0], b_), A([1, 0, 1], b_)), P(A([1, 0, 0], b_), A([1, 1, 0], b_)),
   P(A([0, 0, 1], b_), A([0, 1, 1], b_)))

T('compare_nan', '''
    a = [0.0, 1.0]
    n = div a a
    e = eq n n
    d = ne n n
    l = lt n 1.0
    g = ge n 1.0
    print e, d, l, g
''', P(A([0, 1], b_), A([1, 0], b_), A([0, 0], b_), A([0, 1], b_)))

T('compare_int_literal', '''
    x = [[1, 5], [3, 3]]
    y = gt x 3
    z = eq 3 x
    print y
    print z
''', P(A([[0, 1], [0, 0]], b_)), P(A([[0, 0], [1, 1]], b_)))

T('compare_bool_i64', '''
    p = [True, False]
    q = lt p True
    x:i64[2] = [5000000000, 1]
    y = le x 1
    print q, y
''', P(A([False, True], b_), A([False, True], b_)))

T('shift_ops', '''
    x = [1, -8, 255]
    l = shift_left x 4
    a = shift_right_arithmetic x 2
    r = shift_right_logical x 2
    print l, a, r
''', P(A([16, -128, 4080], i32), A([0, -2, 63], i32), A([0, (2**32 - 8) >> 2, 63], i64).astype(i32)))

T('atan2_f32', '''
    y = [1.0, -1.0, 0.0]
    x = [1.0, -1.0, -1.0]
    a = atan2 y x
    print a
''', P(np.arctan2(A([1, -1, 0], f64), A([1, -1, -1], f64)).astype(f32)))

# ============================================================ unary
T('neg_abs_sign_i32', '''
    x = [3, -4, 0, -2147483648]
    a = neg x
    b = abs x
    c = sign x
    print a
    print b
    print c
''', P(A([-3, 4, 0, -2147483648], i32)), P(A([3, 4, 0, -2147483648], i32)), P(A([1, -1, 0, -1], i32)))

T('neg_abs_sign_f32', f'''
    x = {M23S}
    a = neg x
    b = abs x
    c = sign x
    print a
    print b
    print c
''', P(-M23), P(np.abs(M23)), P(np.sign(M23)))

T('neg_f64_i64', '''
    x:f64[2] = [0.1, -2.5]
    y:i64[2] = [9000000000, -1]
    a = neg x
    b = neg y
    print a, b
''', P(A([-0.1, 2.5], f64), A([-9000000000, 1], i64)))

R = A([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.7, -1.2], f32)
RS = '[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.7, -1.2]'
T('floor_ceil', f'''
    x = {RS}
    a = floor x
    b = ceil x
    print a
    print b
''', P(np.floor(R)), P(np.ceil(R)))

T('round_methods', f'''
    x = {RS}
    a = round x
    b = round[rounding_method=1] x
    print a
    print b
''', P(A([-3, -2, -1, 1, 2, 3, 2, -1], f32)), P(np.round(R)))

X = A([0.5, 1.0, 2.0, 10.0], f32)
XS = '[0.5, 1.0, 2.0, 10.0]'
T('exp_log_f32', f'''
    x = {XS}
    a = exp x
    b = log x
    print a
    print b
''', P(cr(X, np.exp)), P(cr(X, np.log)))

T('exp_log_f64', '''
    x:f64[3] = [0.5, 1.0, 3.0]
    a = exp x
    b = log x
    print a
    print b
''', P(np.exp(A([.5, 1, 3], f64))), P(np.log(A([.5, 1, 3], f64))))

T('log_edge', '''
    x = [0.0, -1.0, 1.0]
    a = log x
    print a
''', P(cr(A([0, -1, 1], f32), np.log)))

T('tanh_logistic', f'''
    x = [-3.0, -0.5, 0.0, 0.5, 3.0]
    a = tanh x
    b = logistic x
    print a
    print b
''', P(cr([-3, -.5, 0, .5, 3], np.tanh)), P(cr([-3, -.5, 0, .5, 3], lambda v: 1 / (1 + np.exp(-v)))))

T('sqrt_rsqrt', f'''
    x = [0.25, 2.0, 9.0, 0.0]
    a = sqrt x
    b = rsqrt x
    print a
    print b
''', P(cr([.25, 2, 9, 0], np.sqrt)), P(cr([.25, 2, 9, 0], lambda v: 1 / np.sqrt(v))))

T('sin_cos_tan', f'''
    x = [0.0, 0.5, 1.0, 3.0]
    a = sin x
    b = cos x
    c = tan x
    print a
    print b
    print c
''', P(cr([0, .5, 1, 3], np.sin)), P(cr([0, .5, 1, 3], np.cos)), P(cr([0, .5, 1, 3], np.tan)))

T('exp2_log1p_expm1', f'''
    x = [-1.0, 0.001, 0.5, 3.0]
    a = exp2 x
    b = log1p x
    c = expm1 x
    print a
    print b
    print c
''', P(cr([-1, .001, .5, 3], np.exp2)), P(cr([-1, .001, .5, 3], np.log1p)), P(cr([-1, .001, .5, 3], np.expm1)))

import math
T('erf_f32', '''
    x = [-1.0, 0.0, 0.5, 2.0]
    a = erf x
    print a
''', P(A([math.erf(v) for v in [-1, 0, .5, 2]], f64).astype(f32)))

T('exp_accuracy_param', '''
    x = [1.0]
    a = exp[accuracy=None] x
    print a
''', P(cr([1.0], np.exp)))

T('square_f32_i32', f'''
    x = {M23S}
    a = square x
    y = [3, -4, 46341]
    b = square y
    print a
    print b
''', P(M23 * M23), P((A([3, -4, 46341], i64) ** 2).astype(i32)))

T('integer_pow_f32', f'''
    x = {M23S}
    a = integer_pow[y=3] x
    b = integer_pow[y=-2] x
    c = integer_pow[y=0] x
    print a
    print b
    print c
''', P(M23 * (M23 * M23)), P(f32(1) / (M23 * M23)), P(np.ones((2, 3), f32)))

T('integer_pow_i32', '''
    x = [2, -3, 10]
    a = integer_pow[y=5] x
    b = integer_pow[y=1] x
    print a, b
''', P(A([32, -243, 100000], i32), A([2, -3, 10], i32)))

T('is_finite', '''
    a = [1.0, 0.0, -1.0]
    z = [0.0, 0.0, 0.0]
    d = div a z
    f = is_finite d
    g = is_finite a
    print f, g
''', P(A([0, 0, 0], b_), A([1, 1, 1], b_)))

T('copy', '''
    x = [[1, 2], [3, 4]]
    y = copy x
    z = copy_p x
    print y
    print z
''', P(A([[1, 2], [3, 4]], i32)), P(A([[1, 2], [3, 4]], i32)))

# ============================================================ convert
T('convert_f32_to_i32', '''
    x = [1.9, -1.9, 3000000000.0, -3000000000.0, 0.0]
    y = convert_element_type[new_dtype=i32] x
    print y
''', P(A([1, -1, 2147483647, -2147483648, 0], i32)))

T('convert_nan_to_int', '''
    x = [0.0, 1.0]
    n = div x x
    y = convert_element_type[new_dtype=int32] n
    print y
''', P(A([0, 1], i32)))

T('convert_int_to_float', '''
    x = [1, -2, 16777217]
    y = convert_element_type[new_dtype=f32] x
    z = convert_element_type[new_dtype=float64, weak_type=False] x
    print y
    print z
''', P(A([1, -2, 16777217], i32).astype(f32)), P(A([1, -2, 16777217], f64)))

T('convert_bool', '''
    x = [0.0, 0.5, -2.0]
    b = convert_element_type[new_dtype=bool] x
    f = convert_element_type[new_dtype=f32] b
    i = convert_element_type[new_dtype=i32] b
    print b, f, i
''', P(A([0, 1, 1], b_), A([0, 1, 1], f32), A([0, 1, 1], i32)))

T('convert_f64_f32_i64', '''
    x:f64[2] = [0.1, 1e40]
    y = convert_element_type[new_dtype=f32] x
    z:i64[2] = [4294967297, -1]
    w = convert_element_type[new_dtype=i32] z
    print y, w
''', P(A([0.1, 1e40], f64).astype(f32), A([1, -1], i32)))

# ============================================================ select_n, clamp, allclose
T('select_n_bool', '''
    p = [True, False, True]
    a = [1.0, 2.0, 3.0]
    b = [10.0, 20.0, 30.0]
    c = select_n p a b
    print c
''', P(A([10, 2, 30], f32)))

T('select_n_int_cases', '''
    w = [0, 1, 2, 1]
    a = [1, 2, 3, 4]
    b = [10, 20, 30, 40]
    c = [100, 200, 300, 400]
    d = select_n w a b c
    print d
''', P(A([1, 20, 300, 40], i32)))

T('select_n_scalar_pred', '''
    a = [[1.0, 2.0], [3.0, 4.0]]
    b = [[5.0, 6.0], [7.0, 8.0]]
    p = True
    c = select_n p a b
    d = select_n False a b
    print c
    print d
''', P(A([[5, 6], [7, 8]], f32)), P(A([[1, 2], [3, 4]], f32)))

T('select_n_scalar_case', '''
    x = [-1.0, 2.0, -3.0]
    p = lt x 0.0
    y = select_n p x 0.0
    print y
''', P(A([0, 2, 0], f32)))

T('clamp_scalar_bounds', '''
    x = [-2.0, 0.5, 3.0, 7.0]
    y = clamp 0.0 x 5.0
    print y
''', P(A([0, .5, 3, 5], f32)))

T('clamp_array_bounds_i32', '''
    lo = [0, 0, 5]
    x = [-1, 3, 9]
    hi = [2, 2, 6]
    y = clamp lo x hi
    print y
''', P(A([0, 2, 6], i32)))

T('allclose_true_false', '''
    a = [1.0, 2.0, 3.0]
    b = [1.0, 2.000001, 3.0]
    c = [1.0, 2.1, 3.0]
    t = allclose a b
    f = allclose a c
    print t, f
''', P(A(True, b_), A(False, b_)))

T('allclose_tolerances', '''
    a = [100.0, 200.0]
    b = [101.0, 200.0]
    t = allclose[rtol=0.01, atol=0.0] a b
    f = allclose[rtol=0.001, atol=0.5] a b
    print t, f
''', P(A(True, b_), A(False, b_)))

T('allclose_nan_inf', '''
    a = [0.0, 1.0]
    z = [0.0, 0.0]
    n = div a a
    i = div a z
    x = allclose n n
    y = allclose i i
    e = allclose[equal_nan=True] n n
    print x, y, e
''', P(A(False, b_), A(False, b_), A(True, b_)))

T('allclose_scalar_int', '''
    a = [[2, 2], [2, 2]]
    t = allclose a 2
    print t
''', P(A(True, b_)))

# ============================================================ reductions
B = np.arange(24, dtype=f32).reshape(2, 3, 4) * f32(0.5) - f32(3)
BS = 'b = arange[stop=24, dtype=f32]\n    c = reshape[new_sizes=(2, 3, 4)] b\n    h = mul c 0.5\n    x = sub h 3.0'
T('reduce_sum_f32', f'''
    {BS}
    a = reduce_sum[axes=(0,)] x
    b2 = reduce_sum[axes=(1, 2)] x
    c2 = reduce_sum[axes=(0, 1, 2)] x
    d = reduce_sum[axes=()] x
    print a
    print b2
    print c2
    print d
''', P(B.sum(0)), P(B.sum((1, 2))), P(B.sum()), P(B))

T('reduce_sum_int', '''
    x = [[1, 2, 3], [4, 5, 2147483647]]
    a = reduce_sum[axes=(1,)] x
    y:i64[2, 2] = [[5000000000, 1], [2, 3]]
    b = reduce_sum[axes=(0, 1)] y
    print a, b
''', P(A([6, (9 + 2147483647) - 2**32], i32), A(5000000006, i64)))

T('reduce_sum_f64', '''
    x:f64[2, 2] = [[0.1, 0.2], [0.3, 0.4]]
    a = reduce_sum[axes=(0,)] x
    b = reduce_sum[axes=1] x
    print a, b
''', P(A([0.1 + 0.3, 0.2 + 0.4], f64), A([0.1 + 0.2, 0.3 + 0.4], f64)))

T('reduce_max_min', f'''
    {BS}
    a = reduce_max[axes=(1,)] x
    b2 = reduce_min[axes=(0, 2)] x
    print a
    print b2
''', P(B.max(1)), P(B.min((0, 2))))

T('reduce_max_nan', '''
    x = [1.0, 0.0, 3.0]
    y = [1.0, 0.0, 1.0]
    n = div x y
    a = reduce_max[axes=(0,)] n
    b = reduce_min[axes=(0,)] n
    print n, a, b
''', P(A([1, np.nan, 3], f32), A(np.nan, f32), A(np.nan, f32)))

T('reduce_max_int_bool', '''
    x = [[3, -7], [-1, 2]]
    a = reduce_max[axes=(0,)] x
    b = reduce_min[axes=(1,)] x
    p = [[True, False], [False, False]]
    c = reduce_max[axes=(1,)] p
    d = reduce_min[axes=(0,)] p
    print a, b, c, d
''', P(A([3, 2], i32), A([-7, -1], i32), A([True, False], b_), A([False, False], b_)))

T('reduce_prod', '''
    x = [[1.5, 2.0], [3.0, -4.0]]
    a = reduce_prod[axes=(0,)] x
    y = [[2, 3], [4, 5]]
    b = reduce_prod[axes=(0, 1)] y
    print a, b
''', P(A([4.5, -8], f32), A(120, i32)))

T('reduce_and_or', '''
    p = [[True, True], [True, False]]
    a = reduce_and[axes=(1,)] p
    o = reduce_or[axes=(0,)] p
    x = [12, 10, 9]
    b = reduce_and[axes=(0,)] x
    c = reduce_or[axes=(0,)] x
    print a, o, b, c
''', P(A([True, False], b_), A([True, True], b_), A(8, i32), A(15, i32)))

T('reduce_sum_out_sharding', '''
    x = [[1.0, 2.0], [3.0, 4.0]]
    a = reduce_sum[axes=(0,) out_sharding=None] x
    print a
''', P(A([4, 6], f32)))

T('argmax_argmin', '''
    x = [[1.0, 5.0, 5.0, -2.0], [7.0, 0.0, 7.0, -9.0]]
    a = argmax[axes=(1,), index_dtype=int32] x
    b = argmin[axes=(1,), index_dtype=int32] x
    c = argmax[axes=(0,), index_dtype=int32] x
    print a, b, c
''', P(A([1, 0], i32), A([3, 3], i32), A([1, 0, 1, 0], i32)))

T('argmax_nan', '''
    x = [1.0, 0.0, 3.0, 0.0]
    y = [1.0, 0.0, 1.0, 0.0]
    n = div x y
    a = argmax[axes=(0,), index_dtype=int32] n
    b = argmin[axes=(0,), index_dtype=int32] n
    print a, b
''', P(A(1, i32), A(1, i32)))

T('argmax_int_i64_index', '''
    x = [[3, 9, 9], [-4, -5, -4]]
    a = argmax[axes=(1,), index_dtype=int64] x
    b = argmin[axes=1] x
    print a, b
''', P(A([1, 0], i64), A([0, 1], i32)))

C23 = A([[1, 2, 3], [4, 5, 6]], f32)
T('cumsum_axes', '''
    x = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    a = cumsum[axis=0] x
    b = cumsum[axis=1] x
    c = cumsum[axis=1, reverse=True] x
    d = cumsum x
    print a
    print b
    print c
    print d
''', P(np.cumsum(C23, 0)), P(np.cumsum(C23, 1)), P(np.cumsum(C23[:, ::-1], 1)[:, ::-1]), P(np.cumsum(C23, 0)))

T('cumsum_i32_negative_axis', '''
    x = [[1, 2, 3], [4, 5, 6]]
    a = cumsum[axis=-1] x
    print a
''', P(np.cumsum(A([[1, 2, 3], [4, 5, 6]], i32), 1)))

T('cumprod_cummax_cummin', '''
    x = [3, 1, 4, 1, 5, 9, 2, 6]
    a = cumprod x
    b = cummax x
    c = cummin x
    d = cummax[axis=0, reverse=True] x
    print a
    print b
    print c
    print d
''', P(np.cumprod(A([3, 1, 4, 1, 5, 9, 2, 6], i32))), P(np.maximum.accumulate(A([3, 1, 4, 1, 5, 9, 2, 6], i32))),
   P(np.minimum.accumulate(A([3, 1, 4, 1, 5, 9, 2, 6], i32))),
   P(np.maximum.accumulate(A([3, 1, 4, 1, 5, 9, 2, 6], i32)[::-1])[::-1]))

# ============================================================ shape ops
T('broadcast_in_dim_scalar', '''
    s = 2.5
    x = broadcast_in_dim[shape=(2, 3), broadcast_dimensions=()] s
    print x
''', P(np.full((2, 3), 2.5, f32)))

T('broadcast_in_dim_rows_cols', '''
    v = [1, 2, 3]
    r = broadcast_in_dim[shape=(2, 3), broadcast_dimensions=(1,)] v
    w = [10, 20]
    c = broadcast_in_dim[shape=(2, 3), broadcast_dimensions=(0,)] w
    print r
    print c
''', P(np.broadcast_to(A([1, 2, 3], i32), (2, 3))), P(np.broadcast_to(A([[10], [20]], i32), (2, 3))))

T('broadcast_in_dim_stretch', '''
    x = [[1.0], [2.0]]
    y = broadcast_in_dim[shape=(2, 2, 3), broadcast_dimensions=(0, 2), sharding=None] x
    print y
''', P(np.broadcast_to(A([[1], [2]], f32)[:, None, :], (2, 2, 3))))

T('reshape_basic', '''
    x = arange[stop=12]
    a = reshape[new_sizes=(3, 4)] x
    b = reshape[new_sizes=(2, 3, 2), dimensions=None] a
    c = reshape[new_sizes=(12,)] b
    print a
    print b
    print c
''', P(np.arange(12, dtype=i32).reshape(3, 4)), P(np.arange(12, dtype=i32).reshape(2, 3, 2)), P(np.arange(12, dtype=i32)))

T('reshape_scalar', '''
    x = [7.0]
    s = reshape[new_sizes=()] x
    t = reshape[new_sizes=(1, 1)] s
    print s, t
''', P(A(7, f32), A([[7]], f32)))

T('reshape_dimensions', '''
    x = [[1, 2, 3], [4, 5, 6]]
    y = reshape[new_sizes=(6,), dimensions=(1, 0)] x
    print y
''', P(A([[1, 2, 3], [4, 5, 6]], i32).T.reshape(6)))

T('transpose_2d_3d', '''
    x = [[1, 2, 3], [4, 5, 6]]
    t = transpose[permutation=(1, 0)] x
    a = iota[dtype=int32, shape=(24,), dimension=0]
    b = reshape[new_sizes=(2, 3, 4)] a
    c = transpose[permutation=(2, 0, 1)] b
    print t
    print c
''', P(A([[1, 2, 3], [4, 5, 6]], i32).T), P(np.arange(24, dtype=i32).reshape(2, 3, 4).transpose(2, 0, 1)))

T('squeeze_expand_dims', '''
    x = [[[1.0, 2.0, 3.0]]]
    a = squeeze[dimensions=(0, 1)] x
    b = squeeze[dimensions=(-2,)] x
    c = expand_dims[dimensions=(0, 2)] a
    d = expand_dims[dimensions=(-1,)] a
    print a
    print b
    print c
    print d
''', P(A([1, 2, 3], f32)), P(A([[1, 2, 3]], f32)), P(A([[[1], [2], [3]]], f32)), P(A([[1], [2], [3]], f32)))

T('rev', '''
    x = [[1, 2, 3], [4, 5, 6]]
    a = rev[dimensions=(1,)] x
    b = rev[dimensions=(0, 1)] x
    print a
    print b
''', P(A([[3, 2, 1], [6, 5, 4]], i32)), P(A([[6, 5, 4], [3, 2, 1]], i32)))

T('concatenate', '''
    a = [[1.0, 2.0], [3.0, 4.0]]
    b = [[5.0], [6.0]]
    c = concatenate[dimension=1] a b a
    d = concatenate[dimension=0] a a
    print c
    print d
''', P(A([[1, 2, 5, 1, 2], [3, 4, 6, 3, 4]], f32)), P(A([[1, 2], [3, 4], [1, 2], [3, 4]], f32)))

T('concatenate_1d_i64', '''
    a:i64[2] = [1, 2]
    b:i64[3] = [3, 4, 5]
    c = concatenate[dimension=0] a b
    d = concatenate[dimension=0] a
    print c, d
''', P(A([1, 2, 3, 4, 5], i64), A([1, 2], i64)))

T('pad_lo_hi', '''
    x = [[1, 2], [3, 4]]
    y = pad[padding_config=((1, 0, 0), (0, 2, 0))] x 0
    print y
''', P(np.pad(A([[1, 2], [3, 4]], i32), ((1, 0), (0, 2)))))

T('pad_interior', '''
    x = [1.0, 2.0, 3.0]
    y = pad[padding_config=((1, 1, 2),)] x -1.0
    print y
''', P(A([-1, 1, -1, -1, 2, -1, -1, 3, -1], f32)))

T('pad_negative', '''
    x = [[1, 2, 3], [4, 5, 6]]
    y = pad[padding_config=((0, 0, 0), (-1, 1, 1))] x 9
    z = pad[padding_config=((-1, 0, 0), (-2, -1, 0))] x 9
    print y
    print z
''', P(A([[9, 2, 9, 3, 9], [9, 5, 9, 6, 9]], i32)), P(np.zeros((1, 0), i32)))

T('slice_basic', '''
    x = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    a = slice[start_indices=(1, 1), limit_indices=(3, 3)] x
    b = slice[start_indices=(0, 0), limit_indices=(3, 4), strides=(2, 3)] x
    c = slice[start_indices=(0, 2), limit_indices=(3, 2), strides=None] x
    print a
    print b
    print c
''', P(np.arange(12, dtype=i32).reshape(3, 4)[1:3, 1:3]), P(np.arange(12, dtype=i32).reshape(3, 4)[0:3:2, 0:4:3]),
   P(np.arange(12, dtype=i32).reshape(3, 4)[0:3, 2:2]))

T('slice_1d_f32', '''
    x = arange[start=0.0, stop=5.0, dtype=f32]
    a = slice[start_indices=(1,), limit_indices=(5,), strides=(2,)] x
    print a
''', P(A([1, 3], f32)))

T('dynamic_slice', '''
    x = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    i = 1
    a = dynamic_slice[slice_sizes=(2, 2)] x i 2
    b = dynamic_slice[slice_sizes=(2, 2)] x 5 -3
    print a
    print b
''', P(A([[6, 7], [10, 11]], i32)), P(A([[4, 5], [8, 9]], i32)))

T('dynamic_slice_i64_index', '''
    x = [1.0, 2.0, 3.0, 4.0]
    k:i64[] = 2
    a = dynamic_slice[slice_sizes=(2,)] x k
    print a
''', P(A([3, 4], f32)))

T('dynamic_update_slice', '''
    x = [[0, 0, 0], [0, 0, 0]]
    u = [[1, 2]]
    a = dynamic_update_slice x u 1 0
    b = dynamic_update_slice x u 7 7
    print a
    print b
    print x
''', P(A([[0, 0, 0], [1, 2, 0]], i32)), P(A([[0, 0, 0], [0, 1, 2]], i32)), P(A([[0, 0, 0], [0, 0, 0]], i32)))

# ============================================================ creation
T('iota', '''
    a = iota[dtype=int32, shape=(5,), dimension=0, sharding=None]
    b = iota[dtype=f32, shape=(2, 3), dimension=1]
    c = iota[dtype=i64, shape=(3, 2), dimension=0]
    print a
    print b
    print c
''', P(np.arange(5, dtype=i32)), P(np.broadcast_to(np.arange(3, dtype=f32), (2, 3))),
   P(np.broadcast_to(np.arange(3, dtype=i64)[:, None], (3, 2))))

T('arange_int', '''
    a = arange[stop=6]
    b = arange[start=2, stop=11, step=3]
    c = arange[start=5, stop=0, step=-2]
    d = arange[start=3, stop=3]
    print a
    print b
    print c
    print d
''', P(np.arange(6, dtype=i32)), P(np.arange(2, 11, 3, dtype=i32)), P(np.arange(5, 0, -2, dtype=i32)), P(np.arange(3, 3, dtype=i32)))

T('arange_float', '''
    a = arange[start=0.1, stop=2.0, step=0.3]
    b = arange[stop=6, dtype=f32]
    c = arange[start=0, stop=1, step=0.1, dtype=f32]
    d = arange[start=1.5, stop=3.5, dtype=f64]
    print a
    print b
    print c
    print d
''', P(np.arange(0.1, 2.0, 0.3, dtype=f32)), P(np.arange(6, dtype=f32)), P(np.arange(0, 1, 0.1, dtype=f32)),
   P(np.arange(1.5, 3.5, dtype=f64)))

T('full_default_dtype', '''
    a = full[shape=(2,), value=1.0]
    b = full[shape=(2,), value=3]
    c = full[shape=(2,), value=False]
    print a, b, c
''', P(A([1, 1], f32), A([3, 3], i32), A([False, False], b_)))

T('full', '''
    a = full[shape=(2, 3), value=1.5]
    b = full[shape=(3,), value=7]
    c = full[shape=(2, 2), value=0, dtype=f64]
    d = full[shape=(), value=4.0, dtype=i32]
    e = full[shape=(2,), value=True, dtype=bool]
    print a
    print b
    print c
    print d, e
''', P(np.full((2, 3), 1.5, f32)), P(np.full(3, 7, i32)), P(np.zeros((2, 2), f64)), P(A(4, i32), A([True, True], b_)))

# ============================================================ dot_general
L = np.arange(6, dtype=f32).reshape(2, 3) - f32(2)
Rm = np.arange(12, dtype=f32).reshape(3, 4) * f32(0.5)
LS = 'l0 = arange[stop=6, dtype=f32]\n    l1 = reshape[new_sizes=(2, 3)] l0\n    l = sub l1 2.0'
RS_ = 'r0 = arange[stop=12, dtype=f32]\n    r1 = reshape[new_sizes=(3, 4)] r0\n    r = mul r1 0.5'
T('dot_general_matmul', f'''
    {LS}
    {RS_}
    c = dot_general[dimension_numbers=(([1], [0]), ([], []))] l r
    print c
''', P(L @ Rm))

T('dot_general_jax_form', f'''
    {LS}
    {RS_}
    c = dot_general[dimension_numbers=(([1], [0]), ([], [])), precision=None, preferred_element_type=float32] l r
    print c
''', P(L @ Rm))

T('dot_general_transposed_operands', f'''
    {LS}
    {RS_}
    rt = transpose[permutation=(1, 0)] r
    lt = transpose[permutation=(1, 0)] l
    a = dot_general[dimension_numbers=(([1], [1]), ([], []))] l rt
    b = dot_general[dimension_numbers=(([0], [0]), ([], []))] lt r
    c = dot_general[dimension_numbers=(([0], [0]), ([], []))] r lt
    print a
    print b
    print c
''', P(L @ Rm), P(L @ Rm), P((L @ Rm).T))

T('dot_general_vectors', '''
    v = [1.0, 2.0, 3.0]
    w = [4.0, -5.0, 6.0]
    m = [[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]
    d = dot_general[dimension_numbers=(([0], [0]), ([], []))] v w
    o = dot_general[dimension_numbers=(([], []), ([], []))] v w
    mv = dot_general[dimension_numbers=(([1], [0]), ([], []))] m v
    print d
    print o
    print mv
''', P(A(12, f32)), P(np.outer(A([1, 2, 3], f32), A([4, -5, 6], f32))), P(A([7, -1], f32)))

Bb = np.arange(24, dtype=f64).reshape(2, 3, 4)
Cb = np.arange(16, dtype=f64).reshape(2, 4, 2) - 5
T('dot_general_batch_f64', '''
    a0:f64[24] = arange[stop=24, dtype=f64]
    a = reshape[new_sizes=(2, 3, 4)] a0
    b0 = arange[stop=16, dtype=f64]
    b1 = reshape[new_sizes=(2, 4, 2)] b0
    b = sub b1 5.0
    c = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] a b
    print c
''', P(np.einsum('bik,bkj->bij', Bb, Cb)))

T('dot_general_batch_not_leading', '''
    a0 = arange[stop=24, dtype=f32]
    a = reshape[new_sizes=(3, 2, 4)] a0
    b0 = arange[stop=16, dtype=f32]
    b = reshape[new_sizes=(4, 2, 2)] b0
    c = dot_general[dimension_numbers=(([2], [0]), ([1], [1]))] a b
    print c
''', P(np.einsum('ibk,kbj->bij', np.arange(24, dtype=f32).reshape(3, 2, 4), np.arange(16, dtype=f32).reshape(4, 2, 2))))

T('dot_general_two_contracting', '''
    a0 = arange[stop=24, dtype=f32]
    a = reshape[new_sizes=(2, 3, 4)] a0
    b0 = arange[stop=24, dtype=f32]
    b = reshape[new_sizes=(4, 3, 2)] b0
    c = dot_general[dimension_numbers=(([1, 2], [1, 0]), ([], []))] a b
    print c
''', P(np.einsum('ijk,kjl->il', np.arange(24, dtype=f32).reshape(2, 3, 4), np.arange(24, dtype=f32).reshape(4, 3, 2))))

T('dot_general_i32', '''
    a = [[1, 2], [3, 4], [5, 6]]
    b = [[7, 8, 9], [10, 11, 12]]
    c = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b
    big = [[65536, 65536]]
    bt = [[65536], [1]]
    w = dot_general[dimension_numbers=(([1], [0]), ([], []))] big bt
    print c
    print w
''', P(A([[1, 2], [3, 4], [5, 6]], i32) @ A([[7, 8, 9], [10, 11, 12]], i32)), P(A([[65536]], i32)))

T('dot_general_bool', '''
    a = [[True, False], [False, False]]
    b = [[True, True], [False, True]]
    c = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b
    print c
''', P(A([[True, True], [False, False]], b_)))

T('dot_general_preferred', '''
    a = [[1, 2], [3, 4]]
    c = dot_general[dimension_numbers=(([1], [0]), ([], [])), preferred_element_type=f32] a a
    d = dot_general[dimension_numbers=(([1], [0]), ([], [])), preferred_element_type=int64] a a
    x = [[0.1, 0.2]]
    y = [[0.3], [0.4]]
    e = dot_general[dimension_numbers=(([1], [0]), ([], [])), preferred_element_type=f64] x y
    print c
    print d
    print e
''', P(A([[7, 10], [15, 22]], f32)), P(A([[7, 10], [15, 22]], i64)),
   P(A([[f64(f32(0.1)) * f64(f32(0.3)) + f64(f32(0.2)) * f64(f32(0.4))]], f64)))

T('dot_general_empty_contraction', '''
    a = full[shape=(2, 0), value=1.0, dtype=f32]
    b = full[shape=(0, 3), value=1.0, dtype=f32]
    c = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b
    print c
''', P(np.zeros((2, 3), f32)))

big_a = (np.arange(64 * 48, dtype=f32).reshape(64, 48) % 7) - 3
big_b = (np.arange(48 * 40, dtype=f32).reshape(48, 40) % 5) - 2
T('dot_general_larger', '''
    a0 = iota[dtype=f32, shape=(3072,), dimension=0]
    a1 = rem a0 7.0
    a2 = sub a1 3.0
    a = reshape[new_sizes=(64, 48)] a2
    b0 = iota[dtype=f32, shape=(1920,), dimension=0]
    b1 = rem b0 5.0
    b2 = sub b1 2.0
    b = reshape[new_sizes=(48, 40)] b2
    c = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b
    s = reduce_sum[axes=(0, 1)] c
    m = reduce_max[axes=(0, 1)] c
    print s, m
    d = slice[start_indices=(0, 0), limit_indices=(2, 5)] c
    print d
''', P((big_a @ big_b).sum(dtype=f64).astype(f32), (big_a @ big_b).max()), P((big_a @ big_b)[:2, :5]))

# ============================================================ errors
E('add_dtype_mismatch', '''
    x = [1.0, 2.0]
    y = [1, 2]
    z = add x y #!
''', 'add requires arguments of equal dtype, got f32 and i32')

E('add_float_literal_on_int', '''
    x = [1, 2]
    z = add x 1.5 #!
''', 'add requires arguments of equal dtype, got i32 and f32')

E('add_shape_mismatch', '''
    x = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    y = [1.0, 2.0, 3.0]
    z = add x y #!
''', 'add got incompatible shapes for broadcasting: f32[2,3] and f32[3]')

E('add_bool', '''
    p = [True, False]
    z = add p p #!
''', 'add does not accept dtype bool; it accepts numeric dtypes (i32, i64, f32, f64)')

E('exp_int', '''
    x = [1, 2]
    y = exp x #!
''', 'exp does not accept dtype i32; it accepts floating-point dtypes (f32, f64)')

E('and_float', '''
    x = [1.0, 2.0]
    y = and x x #!
''', 'and does not accept dtype f32; it accepts bool and integer dtypes')

E('lt_dtype_mismatch', '''
    x:f64[2] = [1.0, 2.0]
    y = [1.0, 2.0]
    z = lt x y #!
''', 'lt requires arguments of equal dtype, got f64 and f32')

E('integer_pow_negative_int', '''
    x = [1, 2]
    y = integer_pow[y=-1] x #!
''', 'integers cannot be raised to negative powers, got integer_pow(i32, -1)')

E('convert_bad_dtype', '''
    x = [1, 2]
    y = convert_element_type[new_dtype=float16x] x #!
''', "parameter 'new_dtype' of convert_element_type must be a dtype (bool, i32, i64, f32, f64)", param='new_dtype')

E('select_n_float_pred', '''
    p = [1.0, 0.0]
    a = [1, 2]
    y = select_n p a a #!
''', 'select_n which must be boolean or integer, got f32[2]')

E('select_n_bool_three_cases', '''
    p = [True, False]
    a = [1, 2]
    y = select_n p a a a #!
''', 'select_n with a boolean which takes at most two cases, got 3')

E('select_n_pred_shape', '''
    p = [True, False, True]
    a = [1, 2]
    y = select_n p a a #!
''', 'select_n which bool[3] must be a scalar or have the shape of the cases i32[2]')

E('clamp_shape', '''
    x = [1.0, 2.0, 3.0]
    lo = [0.0, 0.0]
    y = clamp lo x 2.0 #!
''', 'clamp min f32[2] must be a scalar or have the shape of the operand f32[3]')

E('reduce_sum_axis_out_of_range', '''
    x = [[1.0, 2.0], [3.0, 4.0]]
    y = reduce_sum[axes=(2,)] x #!
''', 'reduce_sum axes (2,) out of range for f32[2,2]')

E('reduce_sum_repeated_axis', '''
    x = [[1.0, 2.0], [3.0, 4.0]]
    y = reduce_sum[axes=(1, 1)] x #!
''', 'reduce_sum axes (1, 1) repeats axis 1', param='axes')

E('reduce_sum_missing_axes', '''
    x = [1.0, 2.0]
    y = reduce_sum x #!
''', "reduce_sum requires the parameter 'axes'")

E('reduce_and_float', '''
    x = [1.0, 2.0]
    y = reduce_and[axes=(0,)] x #!
''', 'reduce_and does not accept dtype f32; it accepts bool and integer dtypes')

E('argmax_two_axes', '''
    x = [[1.0, 2.0], [3.0, 4.0]]
    y = argmax[axes=(0, 1), index_dtype=int32] x #!
''', 'argmax takes exactly one axis, got axes=(0, 1)', param='axes')

E('argmax_float_index', '''
    x = [1.0, 2.0]
    y = argmax[axes=(0,), index_dtype=f32] x #!
''', 'argmax index_dtype must be an integer dtype, got f32', param='index_dtype')

E('cumsum_bool', '''
    p = [True, False]
    y = cumsum[axis=0] p #!
''', 'cumsum does not accept dtype bool; it accepts numeric dtypes (i32, i64, f32, f64)')

E('cumsum_axis_range', '''
    x = [1.0, 2.0]
    y = cumsum[axis=1] x #!
''', 'cumsum axis 1 out of range for f32[2]')

E('reshape_bad', '''
    x = arange[stop=8, dtype=f32]
    y = reshape[new_sizes=(3, 3)] x #!
''', 'reshape cannot turn f32[8] into f32[3,3]: sizes 8 and 9 differ')

E('transpose_bad', '''
    x = [[1.0, 2.0], [3.0, 4.0]]
    y = transpose[permutation=(0, 0)] x #!
''', 'transpose permutation (0, 0) is not a permutation of 0..1')

E('broadcast_in_dim_bad_size', '''
    x = [1.0, 2.0, 3.0]
    y = broadcast_in_dim[shape=(2, 4), broadcast_dimensions=(1,)] x #!
''', 'broadcast_in_dim cannot broadcast f32[3] to f32[2,4]: operand dimension 0 has size 3, result dimension 1 has size 4')

E('broadcast_in_dim_bad_dims', '''
    x = [1.0, 2.0, 3.0]
    y = broadcast_in_dim[shape=(3, 3), broadcast_dimensions=(0, 1)] x #!
''', 'broadcast_in_dim broadcast_dimensions (0, 1) must have one entry per dimension of the operand f32[3]')

E('squeeze_not_one', '''
    x = [[1.0, 2.0]]
    y = squeeze[dimensions=(1,)] x #!
''', 'squeeze cannot remove dimension 1 of f32[1,2]: its size is 2, not 1')

E('expand_dims_range', '''
    x = [1.0, 2.0]
    y = expand_dims[dimensions=(3,)] x #!
''', 'expand_dims dimensions (3,) out of range for rank 2')

E('concatenate_shapes', '''
    a = [[1.0, 2.0], [3.0, 4.0]]
    b = [[5.0, 6.0, 7.0]]
    c = concatenate[dimension=0] a b #!
''', 'concatenate operands must have equal shapes except in dimension 0, got f32[2,2] and f32[1,3]')

E('concatenate_dtypes', '''
    a = [1.0, 2.0]
    b = [1, 2]
    c = concatenate[dimension=0] a b #!
''', 'concatenate requires arguments of equal dtype, got f32 and i32')

E('pad_config_length', '''
    x = [[1.0, 2.0], [3.0, 4.0]]
    y = pad[padding_config=((1, 1, 0),)] x 0.0 #!
''', 'pad padding_config has 1 entries for the operand f32[2,2] of rank 2')

E('pad_value_not_scalar', '''
    x = [1.0, 2.0]
    y = pad[padding_config=((1, 1, 0),)] x x #!
''', 'pad padding_value must be a scalar, got f32[2]')

E('slice_out_of_range', '''
    x = [1.0, 2.0, 3.0, 4.0]
    y = slice[start_indices=(1,), limit_indices=(5,)] x #!
''', 'slice start_indices=(1,), limit_indices=(5,) out of range for f32[4] (need 0 <= start <= limit <= size in every dimension)')

E('slice_zero_stride', '''
    x = [1.0, 2.0, 3.0, 4.0]
    y = slice[start_indices=(0,), limit_indices=(4,), strides=(0,)] x #!
''', 'slice strides must be positive, got (0,)', param='strides')

E('dynamic_slice_index_count', '''
    x = [[1.0, 2.0], [3.0, 4.0]]
    y = dynamic_slice[slice_sizes=(1, 1)] x 0 #!
''', 'dynamic_slice of f32[2,2] needs 2 scalar start indices, got 1')

E('dynamic_slice_float_index', '''
    x = [1.0, 2.0, 3.0]
    y = dynamic_slice[slice_sizes=(1,)] x 1.0 #!
''', 'dynamic_slice start indices must be integer scalars, got f32[]')

E('dynamic_slice_too_big', '''
    x = [1.0, 2.0, 3.0]
    y = dynamic_slice[slice_sizes=(4,)] x 0 #!
''', 'dynamic_slice slice_sizes (4,) do not fit in f32[3]')

E('dynamic_update_slice_too_big', '''
    x = [1.0, 2.0]
    u = [1.0, 2.0, 3.0]
    y = dynamic_update_slice x u 0 #!
''', 'dynamic_update_slice update f32[3] does not fit in the operand f32[2]')

E('iota_bool', '''
    a = iota[dtype=bool, shape=(3,), dimension=0] #!
''', 'iota does not accept dtype bool', param='dtype')

E('iota_dimension', '''
    a = iota[dtype=i32, shape=(3,), dimension=1] #!
''', 'iota dimension 1 out of range for i32[3]', param='dimension')

E('arange_step_zero', '''
    a = arange[start=0, stop=5, step=0] #!
''', 'arange step must not be zero', param='step')

E('full_negative_shape', '''
    a = full[shape=(2, -1), value=1.0] #!
''', 'full shape (2, -1) has a negative size', param='shape')

E('dot_general_contracting_size', '''
    a = full[shape=(2, 3), value=1.0, dtype=f32]
    b = full[shape=(4, 5), value=1.0, dtype=f32]
    c = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b #!
''', 'dot_general contracting dimensions have different sizes: f32[2,3] and f32[4,5] (3 vs 4)')

E('dot_general_batch_size', '''
    a = full[shape=(2, 3, 4), value=1.0, dtype=f32]
    b = full[shape=(3, 4, 5), value=1.0, dtype=f32]
    c = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] a b #!
''', 'dot_general batch dimensions have different sizes: f32[2,3,4] and f32[3,4,5] (2 vs 3)')

E('dot_general_dims_range', '''
    a = full[shape=(2, 3), value=1.0, dtype=f32]
    b = full[shape=(3, 5), value=1.0, dtype=f32]
    c = dot_general[dimension_numbers=(([2], [0]), ([], []))] a b #!
''', 'dot_general lhs contracting dimensions (2,) out of range for f32[2,3]')

E('dot_general_dtypes', '''
    a = full[shape=(2, 3), value=1.0, dtype=f32]
    b = full[shape=(3, 5), value=1, dtype=i32]
    c = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b #!
''', 'dot_general requires arguments of equal dtype, got f32 and i32')

E('dot_general_preferred_narrow', '''
    a:f64[2] = [1.0, 2.0]
    c = dot_general[dimension_numbers=(([0], [0]), ([], [])), preferred_element_type=f32] a a #!
''', 'dot_general preferred_element_type f32 must not be narrower than the input dtype f64',
  param='preferred_element_type')

E('unknown_parameter', '''
    x = [1.0, 2.0]
    y = neg[axis=0] x #!
''', "neg takes no parameters, but 'axis' was given", at='axis')

# ============================================================ more values
import math as _m
V5 = [-0.9, -0.3, 0.0, 0.4, 0.8]
T('inverse_trig_hyperbolic', '''
    x = [-0.9, -0.3, 0.0, 0.4, 0.8]
    a = asin x
    b = acos x
    c = atan x
    d = sinh x
    e = cosh x
    f = asinh x
    g = atanh x
    y = [1.0, 1.5, 10.0]
    h = acosh y
    print a
    print b
    print c
    print d
    print e
    print f
    print g
    print h
''', *[P(cr(V5, fn)) for fn in (np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.arcsinh, np.arctanh)],
   P(cr([1, 1.5, 10], np.arccosh)))

T('cbrt_erfc_lgamma', '''
    x = [0.5, 2.0, 27.0]
    a = cbrt x
    b = erfc x
    c = lgamma x
    print a
    print b
    print c
''', P(cr([.5, 2, 27], np.cbrt)), P(cr([.5, 2, 27], np.vectorize(_m.erfc))), P(cr([.5, 2, 27], np.vectorize(_m.lgamma))))

T('nextafter_f32', '''
    x = [1.0, 1.0, 0.0]
    y = [2.0, 0.0, 1.0]
    a = nextafter x y
    print a
''', P(np.nextafter(A([1, 1, 0], f32), A([2, 0, 1], f32))))

T('reduce_xor', '''
    p = [[True, True, True], [True, False, False]]
    a = reduce_xor[axes=(1,)] p
    x = [12, 10, 6]
    b = reduce_xor[axes=(0,)] x
    print a, b
''', P(A([True, True], b_), A(12 ^ 10 ^ 6, i32)))

T('arange_default_dtype', '''
    a = arange[stop=3.0]
    b = arange[start=1, stop=4]
    c = arange[start=0.5, stop=2]
    print a, b, c
''', P(np.arange(3.0, dtype=f32), np.arange(1, 4, dtype=i32), np.arange(0.5, 2, dtype=f32)))

T('shape_ops_bool', '''
    p = [[True, False, True], [False, False, True]]
    t = transpose[permutation=(1, 0)] p
    r = reshape[new_sizes=(3, 2)] p
    c = concatenate[dimension=0] p p
    q = pad[padding_config=((0, 1, 0), (1, 0, 0))] p False
    print t
    print r
    print c
    print q
''', P(A([[1, 0, 1], [0, 0, 1]], b_).T), P(A([[1, 0, 1], [0, 0, 1]], b_).reshape(3, 2)),
   P(np.concatenate([A([[1, 0, 1], [0, 0, 1]], b_)] * 2)), P(np.pad(A([[1, 0, 1], [0, 0, 1]], b_), ((0, 1), (1, 0)))))

T('shape_ops_f64_i64', '''
    x:f64[2, 2] = [[0.1, 0.2], [0.3, 0.4]]
    a = rev[dimensions=(0,)] x
    b = slice[start_indices=(1, 0), limit_indices=(2, 2)] x
    y:i64[3] = [5000000000, 6, 7]
    c = dynamic_slice[slice_sizes=(2,)] y 1
    d = broadcast_in_dim[shape=(2, 3), broadcast_dimensions=(1,)] y
    print a
    print b
    print c
    print d
''', P(A([[.3, .4], [.1, .2]], f64)), P(A([[.3, .4]], f64)), P(A([6, 7], i64)),
   P(np.broadcast_to(A([5000000000, 6, 7], i64), (2, 3))))

T('transpose_scalar', '''
    s = 3.5
    t = transpose[permutation=()] s
    e = expand_dims[dimensions=(0,)] s
    print t, e
''', P(A(3.5, f32), A([3.5], f32)))

T('rank3_elementwise_f64', '''
    a:f64[24] = arange[stop=24, dtype=f64]
    x = reshape[new_sizes=(2, 3, 4)] a
    y = mul x 0.5
    z = sub y x
    w = max z -3.0
    print w
''', P(np.maximum(np.arange(24, dtype=f64).reshape(2, 3, 4) * 0.5 - np.arange(24, dtype=f64).reshape(2, 3, 4), -3.0)))

T('select_n_scalar_int_which', '''
    a = [1.0, 2.0]
    b = [3.0, 4.0]
    c = [5.0, 6.0]
    x = select_n 2 a b c
    k = 1
    y = select_n k a b c
    print x, y
''', P(A([5, 6], f32), A([3, 4], f32)))

T('integer_pow_f64', '''
    x:f64[3] = [1.1, -2.0, 0.5]
    a = integer_pow[y=4] x
    b = integer_pow[y=-3] x
    print a
    print b
''', P((lambda v: (v * v) * (v * v))(A([1.1, -2, .5], f64))), P((lambda v: 1.0 / (v * (v * v)))(A([1.1, -2, .5], f64))))

T('cumsum_f64_rank3', '''
    a:f64[12] = arange[stop=12, dtype=f64]
    x = reshape[new_sizes=(2, 3, 2)] a
    y = cumsum[axis=1] x
    z = cumprod[axis=2, reverse=True] x
    print y
    print z
''', P(np.cumsum(np.arange(12, dtype=f64).reshape(2, 3, 2), 1)),
   P(np.flip(np.cumprod(np.flip(np.arange(12, dtype=f64).reshape(2, 3, 2), 2), 2), 2)))

T('dot_general_scalars', '''
    a = 3.0
    b = [1.0, 2.0]
    c = dot_general[dimension_numbers=(([], []), ([], []))] a b
    d = dot_general[dimension_numbers=(([], []), ([], []))] a a
    print c, d
''', P(A([3, 6], f32), A(9, f32)))

T('jaxpr_param_spelling', '''
    v = [1.0, 2.0, 3.0]
    a = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3) sharding=None] v
    b = convert_element_type[new_dtype=int32 weak_type=False] a
    c = reshape[dimensions=None new_sizes=(3, 2) sharding=None] b
    d = reduce_max[axes=(0,) out_sharding=None] c
    e = iota[dimension=0 dtype=int32 shape=(2,) sharding=None]
    f = dot_general[dimension_numbers=(([0], [0]), ([], [])) out_sharding=None precision=None preferred_element_type=int32] d e
    g = tanh[accuracy=None] v
    h = cumsum[axis=0 reverse=False] e
    i = argmax[axes=(0,) index_dtype=int32] v
    print d, f
    print g, h, i
''', P(A([3, 3], i32), A(3, i32)), P(cr([1, 2, 3], np.tanh), A([0, 1], i32), A(2, i32)))

T('weak_literals_only', '''
    a = mul 2 3.5
    b = lt 1 2
    c = max 2.5 1
    d = select_n True 1 2
    print a, b, c, d
''', P(A(7, f32), A(True, b_), A(2.5, f32), A(2, i32)))

E('sign_bool', """
    p = [True, False]
    y = sign p #!
""", 'sign does not accept dtype bool; it accepts numeric dtypes (i32, i64, f32, f64)')

E('pow_bool', """
    p = [True, False]
    y = pow p p #!
""", 'pow does not accept dtype bool; it accepts numeric dtypes (i32, i64, f32, f64)')

E('floor_int', """
    x = [1, 2]
    y = floor x #!
""", 'floor does not accept dtype i32; it accepts floating-point dtypes (f32, f64)')

E('is_finite_int', """
    x = [1, 2]
    y = is_finite x #!
""", 'is_finite does not accept dtype i32; it accepts floating-point dtypes (f32, f64)')

E('rev_range', """
    x = [1, 2]
    y = rev[dimensions=(1,)] x #!
""", 'rev dimensions (1,) out of range for i32[2]')

E('transpose_wrong_length', """
    x = [[1, 2], [3, 4]]
    y = transpose[permutation=(0,)] x #!
""", 'transpose permutation (0,) is not a permutation of 0..1')

E('concatenate_scalars', """
    x = 1.0
    y = concatenate[dimension=0] x x #!
""", 'concatenate cannot join scalars (f32[])')

E('reshape_negative', """
    x = [1, 2]
    y = reshape[new_sizes=(-1,)] x #!
""", 'reshape new_sizes (-1,) has a negative size', param='new_sizes')

E('pad_negative_result', """
    x = [1, 2]
    y = pad[padding_config=((-2, -1, 0),)] x 0 #!
""", 'pad would make dimension 0 of i32[2] negative (-1)')

E('argmax_empty_axis', """
    x = full[shape=(2, 0), value=1.0, dtype=f32]
    y = argmax[axes=(1,), index_dtype=int32] x #!
""", 'argmax requires a non-empty reduced dimension, got f32[2,0] and axis 1')

E('cummax_axis_range', """
    x = [1.0, 2.0]
    y = cummax[axis=2] x #!
""", 'cummax axis 2 out of range for f32[2]')

E('clamp_dtypes', """
    x = [1.0, 2.0]
    lo = [0, 0]
    y = clamp lo x 2.0 #!
""", 'clamp requires arguments of equal dtype, got i32 and f32')

E('allclose_shapes', """
    a = [1.0, 2.0]
    b = [1.0, 2.0, 3.0]
    y = allclose a b #!
""", 'allclose got incompatible shapes for broadcasting: f32[2] and f32[3]')

E('dot_general_dim_twice', """
    a = full[shape=(2, 2), value=1.0, dtype=f32]
    c = dot_general[dimension_numbers=(([1], [0]), ([1], [1]))] a a #!
""", 'dot_general lhs dimension 1 of f32[2,2] is named twice in the dimension numbers')

E('dot_general_preferred_kind', """
    a = [1.0, 2.0]
    c = dot_general[dimension_numbers=(([0], [0]), ([], [])), preferred_element_type=i32] a a #!
""", 'dot_general preferred_element_type i32 is incompatible with f32 inputs (integers may go to integers or floats, floats to floats)',
  param='preferred_element_type')

E('round_bad_method', """
    x = [1.5]
    y = round[rounding_method=3] x #!
""", 'round rounding_method must be 0 (away from zero) or 1 (to nearest even), got 3', param='rounding_method')

T('select_n_scalar_cases', '''
    x = [-1.0, 2.0, -3.0]
    p = lt x 0.0
    y = select_n p 1.0 0.0
    print y
''', P(A([0, 1, 0], f32)))

names = sorted(set(written))
print(len(names), 'tests')
