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
