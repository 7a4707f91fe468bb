"""docs/python.md's example, run as written there (its code block is an
excerpt of this file: tests/docs/code_blocks.test.py checks the text)."""


def test_docs_example(capsys):
    import numpy as np
    import shmapi

    prog = shmapi.load("""
    mesh m = {i: 4}
    @shard_map[mesh=m, in_specs=(P(i),), out_specs=P()]
    def total(x) {
      s = psum[axes=i] x
      return s
    }
    """)
    x = np.arange(8, dtype=np.float32)
    print(prog.total(x))                     # [12. 16.]
    per = prog.total.per_device(x)           # what each device held
    print(per[3])                            # (array([12., 16.], dtype=float32),)
    report = prog.cost("total", x, hardware="h100")
    print(report.devices, report.bytes_sent) # 4 48.0

    jaxpr = "{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0:f32[] in (b,) }"
    print(shmapi.run_jaxpr(jaxpr, np.ones(3, np.float32)))   # [2. 2. 2.]

    assert capsys.readouterr().out == ("[12. 16.]\n(array([12., 16.], dtype=float32),)\n4 48.0\n"
                                       "[2. 2. 2.]\n")


def test_docs_cost_example(capsys):
    import shmapi

    prog = shmapi.load("""
    mesh m = {i: 4}
    @shard_map[mesh=m, in_specs=(P(i), P()), out_specs=P()]
    def step(x, w) {
      y = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
      s = psum[axes=i] y
      return s
    }
    """)
    x = shmapi.ShapeDtype((8192, 8192), "bf16")   # shapes only: no array is made
    w = shmapi.ShapeDtype((8192, 8192), "bf16")   # (jax.ShapeDtypeStruct, arrays: as well)
    report = prog.cost("step", x, w, hardware="tpu-v5e", abstract=True)
    for ln in report.lines:                       # the per-line table, hottest first
        print(ln.line, ln.primitive, "%.3g" % ln.flops, "%.3g" % ln.time, ln.limit)
    # 5 dot_general 2.75e+11 0.0014 FLOPs
    # 6 psum 0 0.00112 link
    print("%.3g" % report.makespan, report.per_device[0].exposed > 0)   # 0.00252 True
    table = report.to_dict()                      # plain dicts and lists
    pic = prog.visualize("step")                  # a notebook shows its SVG
    print(str(pic).splitlines()[1])               # input x: bf16[8192,8192] as P(i)

    assert table["lines"][0]["primitive"] == "dot_general" and str(report) == report.text
    assert capsys.readouterr().out == ("5 dot_general 2.75e+11 0.0014 FLOPs\n6 psum 0 0.00112 link\n"
                                       "0.00252 True\ninput x: bf16[8192,8192] as P(i)\n")
