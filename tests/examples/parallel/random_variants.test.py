"""The cookbook's recipes (examples/parallel/) on random parameters, each
against the same model on one device: random mesh sizes for the recipes
of part 1, random stage counts p, microbatch counts m, data replicas, layer
counts and (circular) chunks per device v for the pipelines of part 2.  Every case runs the sharded
step and model.shm's one-device reference on the same random inputs and
checks the loss and both weight gradients with allclose (rtol 1e-5,
atol 1e-6); all cases of a run go into one program.

    SHMAPI=build/shmapi python3 tests/examples/parallel/random_variants.test.py [--seed S] [--count N]
"""
# timeout: 300
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _recipes  # noqa: E402


def divisors(n):
    return [k for k in range(1, n + 1) if n % k == 0]


def case(rng, k):
    """One call and its check: (imports, text)."""
    kind = rng.choice(["dp", "fsdp", "tp", "fsdp_tp_sp", "pp_gpipe", "pp_1f1b", "pp_circular"])
    T = rng.choice([2, 4])
    D = rng.choice([4, 8])
    F = rng.choice([8, 16])
    if kind in ("dp", "fsdp", "tp"):
        n = rng.choice([1, 2, 4])
        B = n * rng.choice([1, 2])
        L = rng.choice([1, 2, 3])
        call = {"dp": "dp_step[n=%d]", "fsdp": "fsdp_step[n=%d]", "tp": "tp_step[n=%d]"}[kind] % n
        desc = "%s n=%d" % (kind, n)
    elif kind == "fsdp_tp_sp":
        dn, tn = rng.choice([(1, 2), (2, 1), (2, 2), (4, 2), (2, 4)])
        B = dn * rng.choice([1, 2])
        T = tn * rng.choice([1, 2])
        D = max(D, dn)
        F = max(F, tn * dn)
        L = rng.choice([1, 2])
        call = "fsdp_tp_sp_step[dn=%d, tn=%d]" % (dn, tn)
        desc = "%s dn=%d tn=%d" % (kind, dn, tn)
    else:
        p = rng.choice([1, 2, 3, 4])
        dn = rng.choice([1, 2])
        v = 1
        if kind == "pp_circular":
            v = rng.choice([1, 2, 3])
            m = p * rng.choice([1, 2])
        else:
            m = rng.choice([1, 2, 3, 5, 8])
        mb = rng.choice([1, 2])
        B = dn * m * mb
        L = p * v * rng.choice([1, 2])
        fn = {"pp_gpipe": "gpipe_step", "pp_1f1b": "pp_1f1b_step", "pp_circular": "circular_step"}[kind]
        if kind == "pp_circular":
            call = "%s[dn=%d, p=%d, v=%d, m=%d, mb=%d, T=%d, D=%d, F=%d, L=%d, lc=%d]" % (
                fn, dn, p, v, m, mb, T, D, F, L, L // (p * v))
        else:
            call = "%s[dn=%d, p=%d, m=%d, mb=%d, T=%d, D=%d]" % (fn, dn, p, m, mb, T, D)
        desc = "%s dn=%d p=%d v=%d m=%d mb=%d L=%d" % (kind, dn, p, v, m, mb, L)
    text = """x{k}, t{k}, a{k}, b{k} = make_data[B={B}, T={T}, D={D}, F={F}, L={L}]
l{k}, d{k}, e{k} = {call} x{k} t{k} a{k} b{k}
r{k}, f{k}, g{k} = reference x{k} t{k} a{k} b{k}
c{k}0 = allclose[rtol=1e-5, atol=1e-6] l{k} r{k}
c{k}1 = allclose[rtol=1e-5, atol=1e-6] d{k} f{k}
c{k}2 = allclose[rtol=1e-5, atol=1e-6] e{k} g{k}
print "case {k}:", c{k}0, c{k}1, c{k}2
""".format(k=k, B=B, T=T, D=D, F=F, L=L, call=call)
    return kind, desc, text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--count", type=int, default=200)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    cases = [case(rng, k) for k in range(a.count)]
    kinds = sorted({c[0] for c in cases})
    prog = "".join('import "%s.shm"\n' % k for k in kinds) + "".join(c[2] for c in cases)
    d = _recipes.scratch()
    try:
        status, out, err = _recipes.run(os.environ["SHMAPI"], d, "_variants.shm", prog)
    finally:
        _recipes.cleanup(d)
    if status != 0:
        print(err)
        return 1
    lines = [l for l in out.splitlines() if l.startswith("case ")]
    bad = 0
    for k, (kind, desc, _) in enumerate(cases):
        want = "case %d: True True True" % k
        if k >= len(lines) or lines[k] != want:
            bad += 1
            print("FAIL %s: %s" % (desc, lines[k] if k < len(lines) else "no output"))
    print("%d cases (seed %d), %d wrong" % (len(cases), a.seed, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
