"""Derivatives through the primitives of JAX's jaxprs, against NumPy: a
scan (grad with respect to its const, its carry's start and its xs, in
both directions, and jvp), JAX's call primitives (pjit, checkpoint,
custom_jvp_call, custom_vjp_call, closed_call: their function is
differentiated), an xla_pmap with a psum inside (jvp), and bf16 and f16
values (tangents and gradients of the same dtype).  The references are
closed forms or central finite differences of the same functions written
in NumPy (f64).

Run by tests/run.py with SHMAPI set; cwd is the repository root.
"""

import os
import re
import sys

import numpy as np

sys.dont_write_bytecode = True       # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'transpose'))
import _batch  # noqa: E402

SHMAPI = os.environ.get('SHMAPI', 'build/shmapi')
XS = [0.1, -0.4, 0.9, 0.3]

SCAN = '''
def step(w, c, x) {
  a = mul c w
  b = sin x
  d = add a b
  e = tanh d
  y = mul e x
  return e, y
}
def f(w:f64[], c0:f64[], xs:f64[4]) {
  c, ys = scan[jaxpr=step, num_consts=1, num_carry=1, reverse=%s] w c0 xs
  s = reduce_sum[axes=(0,)] ys
  t = add s c
  return t
}
def f_grad = grad[argnums=(0, 1, 2)] f
def f_jvp = jvp f
w:f64[] = 0.7
c0:f64[] = -0.2
xs:f64[4] = %s
gw, gc, gx = f_grad w c0 xs
print gw
print gc
print gx
dw:f64[] = 0.3
dc:f64[] = -1.1
dx:f64[4] = [0.5, -0.25, 1.0, 2.0]
y, yd = f_jvp w c0 xs dw dc dx
print y
print yd
'''

CALLS = '''
def g = { lambda ; c:f64[2]. let
    d:f64[2] = pjit[
      name=cube
      jaxpr={ lambda ; e:f64[2]. let
          f:f64[2] = integer_pow[y=3] e
          g:f64[2] = checkpoint[jaxpr={ lambda ; h:f64[2]. let i:f64[2] = sin h in (i,) } prevent_cse=True] f
        in (g,) }
    ] c
    k:f64[2] = custom_jvp_call[name=k call_jaxpr={ lambda ; a:f64[2]. let b:f64[2] = exp a in (b,) } jvp=k_jvp symbolic_zeros=False] d
    m:f64[2] = custom_vjp_call[call_jaxpr={ lambda ; a:f64[2]. let b:f64[2] = log1p a in (b,) } fwd=m_fwd bwd=m_bwd] k
    n:f64[2] = closed_call[call_jaxpr={ lambda ; a:f64[2]. let b:f64[2] = mul a a in (b,) }] m
    s:f64[] = reduce_sum[axes=(0,)] n
  in (s,) }
def g_grad = grad g
x:f64[2] = [0.5, 1.0]
gx = g_grad x
print gx
'''

PMAP = '''
def pm(x) {
  u = sin x
  s = psum[axes=rows] u
  y = mul u s
  return y
}
def f(x:f64[2, 3]) {
  y = xla_pmap[axis_name=rows, axis_size=2, call_jaxpr=pm, in_axes=(0,), out_axes=(0,)] x
  return y
}
def f_jvp = jvp f
x:f64[2, 3] = [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
v:f64[2, 3] = [[1.0, -2.0, 0.5], [0.25, 0.0, 3.0]]
y, yd = f_jvp x v
print yd
'''

HALF = '''
def h(x:%(dt)s[3], y:%(dt)s[3]) {
  a = sin x
  b = mul a y
  s = reduce_sum[axes=(0,)] b
  return s
}
def h_grad = grad[argnums=(0, 1)] h
def h_jvp = jvp h
x0 = [0.5, 1.0, 2.0]
y0 = [1.5, -0.5, 0.25]
x = convert_element_type[new_dtype=%(dt)s] x0
y = convert_element_type[new_dtype=%(dt)s] y0
gx, gy = h_grad x y
print gx
print gy
s, sd = h_jvp x y y x
print sd
show h_grad
'''

NUM = re.compile(r'-?\d+\.?\d*(?:e[-+]?\d+)?')


def run(text):
    """shmapi's output for shm text; RuntimeError if it fails."""
    r = _batch.run_text(SHMAPI, text, 60)
    if r.returncode != 0:
        raise RuntimeError('shmapi exited %d:\n%s' % (r.returncode, r.stderr))
    return r.stdout


def numbers(line):
    return np.array([float(x) for x in NUM.findall(line)])


def fd(f, x, h=1e-6):
    """Central differences of scalar f at x (an array), one per element."""
    x = np.asarray(x, np.float64)
    g = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def scan_ref(w, c, xs, reverse):
    s = 0.0
    for x in (xs[::-1] if reverse else xs):
        c = np.tanh(c * w + np.sin(x))
        s += c * x
    return s + c


def check(name, got, want, tol, problems):
    got, want = np.atleast_1d(got), np.atleast_1d(np.asarray(want, np.float64))
    if got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol):
        problems.append('%s: got %s, want %s' % (name, got, want))


def check_scan(problems):
    for rev in (False, True):
        lines = run(SCAN % (rev, XS)).splitlines()
        w, c0, xs = 0.7, -0.2, np.array(XS)
        tag = 'scan reverse=%s' % rev
        check(tag + ' d/dw', numbers(lines[0]), fd(lambda v: scan_ref(v[()], c0, xs, rev), w), 1e-7, problems)
        check(tag + ' d/dc0', numbers(lines[1]), fd(lambda v: scan_ref(w, v[()], xs, rev), c0), 1e-7, problems)
        check(tag + ' d/dxs', numbers(lines[2]), fd(lambda v: scan_ref(w, c0, v, rev), xs), 1e-7, problems)
        check(tag + ' value', numbers(lines[3]), scan_ref(w, c0, xs, rev), 1e-12, problems)
        d = (0.3, -1.1, np.array([0.5, -0.25, 1.0, 2.0]))
        jv = (scan_ref(w + 1e-6 * d[0], c0 + 1e-6 * d[1], xs + 1e-6 * d[2], rev)
              - scan_ref(w - 1e-6 * d[0], c0 - 1e-6 * d[1], xs - 1e-6 * d[2], rev)) / 2e-6
        check(tag + ' jvp', numbers(lines[4]), jv, 1e-7, problems)


def check_calls(problems):
    x = np.array([0.5, 1.0])
    k = np.exp(np.sin(x ** 3))
    want = 2 * np.log1p(k) / (1 + k) * k * np.cos(x ** 3) * 3 * x ** 2
    check('pjit checkpoint custom_jvp_call custom_vjp_call closed_call', numbers(run(CALLS)), want, 1e-7, problems)


def check_pmap(problems):
    x = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    v = np.array([[1.0, -2.0, 0.5], [0.25, 0.0, 3.0]])
    u, du = np.sin(x), np.cos(x) * v
    want = du * u.sum(0) + u * du.sum(0)
    check("xla_pmap jvp", numbers(run(PMAP)), want.ravel(), 1e-7, problems)


def check_half(problems):
    for dt, npdt in (('bf16', None), ('f16', np.float16)):
        out = run(HALF % {'dt': dt})
        lines = out.splitlines()
        x, y = np.array([0.5, 1.0, 2.0]), np.array([1.5, -0.5, 0.25])
        if npdt is not None:       # the inputs as the 16-bit dtype holds them
            x, y = x.astype(npdt).astype(np.float64), y.astype(npdt).astype(np.float64)
        # bf16 keeps 8 significant bits, f16 11: judged to their rounding
        tol = 2 ** -7 if dt == 'bf16' else 2 ** -10
        check(dt + ' d/dx', numbers(lines[0]), np.cos(x) * y, tol, problems)
        check(dt + ' d/dy', numbers(lines[1]), np.sin(x), tol, problems)
        check(dt + ' jvp', numbers(lines[2]), (np.cos(x) * y * y + np.sin(x) * x).sum(), 4 * tol, problems)
        if ('xbar:%s[3]' % dt) not in out or ('ybar:%s[3]' % dt) not in out:
            problems.append('%s: the gradients are not %s[3] in show h_grad:\n%s' % (dt, dt, out))


def main():
    problems = []
    for c in (check_scan, check_calls, check_pmap, check_half):
        try:
            c(problems)
        except RuntimeError as e:
            problems.append('%s: %s' % (c.__name__, e))
    for p in problems:
        print(p)
    print('%d problems' % len(problems))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
