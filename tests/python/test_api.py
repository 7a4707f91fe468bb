"""The Python package shmapi: arrays in and out, errors, threads, copies,
pasted jaxprs, the cost model and the notebook magic (run by
tests/python/pytest.test.sh, with the package of the build under test)."""

import gc
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import shmapi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHMAPI = os.environ.get("SHMAPI", os.path.join(ROOT, "build", "shmapi"))

PSUM = """
mesh m = {i: 4}
@shard_map[mesh=m, in_specs=(P(i),), out_specs=P()]
def total(x) {
  s = psum[axes=i] x
  return s
}
@shard_map[mesh=m, in_specs=(P(i),), out_specs=P(i)]
def rank(x) {
  r = axis_index[axes=i]
  f = convert_element_type[new_dtype=f32] r
  y = add x f
  return y
}
def twice(a) {
  b = add a a
  return b, a
}
"""

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float16, np.float32, np.float64, np.complex64, np.complex128]


def test_every_dtype_in_and_out():
    prog = shmapi.load("def ident(a) {\n  b = copy a\n  return b\n}\n")
    rng = np.random.default_rng(1)
    for dt in DTYPES:
        x = (rng.standard_normal((3, 4)) * 50).astype(dt)
        if np.issubdtype(dt, np.complexfloating):
            x = x + 1j * x[::-1]
        y = prog.ident(x)
        assert y.dtype == np.dtype(dt) and y.shape == x.shape, dt
        assert y.tobytes() == np.ascontiguousarray(x).tobytes(), dt
    # a strided (non-contiguous) view and a scalar
    x = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    assert np.array_equal(prog.ident(x), x)
    assert prog.ident(np.int64(7)) == 7


def test_python_numbers_take_jax_defaults():
    prog = shmapi.load("def ident(a) {\n  b = copy a\n  return b\n}\n")
    assert prog.ident(1.5).dtype == np.float32
    assert prog.ident(3).dtype == np.int32
    assert prog.ident(np.float64(1.5)).dtype == np.float64


def test_bfloat16_without_ml_dtypes_is_a_clear_error():
    try:
        import ml_dtypes  # noqa: F401
        pytest.skip("ml_dtypes is installed")
    except ImportError:
        pass
    prog = shmapi.load("def f(a) {\n  b = convert_element_type[new_dtype=bf16] a\n  return b\n}\n")
    with pytest.raises(TypeError, match="ml_dtypes"):
        prog.f(np.ones(3, np.float32))


def test_results_and_functions():
    prog = shmapi.load(PSUM)
    x = np.arange(8, dtype=np.float32)
    assert np.array_equal(prog.total(x), x.reshape(4, 2).sum(0))
    assert np.array_equal(prog["rank"](x), x + np.repeat(np.arange(4), 2))
    a, b = prog.twice(np.float64(2.0))
    assert a == 4.0 and b == 2.0
    with pytest.raises(AttributeError):
        prog.nothing
    with pytest.raises(KeyError):
        prog["nothing"]


def test_results_are_read_only_views():
    prog = shmapi.load(PSUM)
    y = prog.total(np.ones(8, np.float32))
    assert not y.flags.writeable
    with pytest.raises(ValueError):
        y[0] = 1


def test_errors_are_exceptions_with_the_diagnostic():
    with pytest.raises(shmapi.Error) as e:
        shmapi.load("x = 1\ny = add x\n")
    err = e.value
    assert (err.file, err.line, err.col) == ("<string>", 2, 5)
    assert err.message == "add takes 2 operands, but 1 was given"
    assert err.text.splitlines() == ["<string>:2:5: error: add takes 2 operands, but 1 was given",
                                     "    2 | y = add x", "      |     ^~~"]
    assert len(err.diagnostics) == 1 and err.diagnostics[0].kind == "error"
    # a runtime error, and the program goes on working
    prog = shmapi.load("def f(a) {\n  b = dynamic_slice[slice_sizes=(2,)] a 0\n  return b\n}\n")
    with pytest.raises(shmapi.Error):
        prog.f(np.ones(1, np.float32))
    assert np.array_equal(prog.f(np.arange(3, dtype=np.float32)), [0, 1])
    # a wrong call is the checker's error at the call
    with pytest.raises(shmapi.Error, match="takes 1"):
        shmapi.load(PSUM).total(np.ones(8, np.float32), np.ones(8, np.float32))


def test_check_returns_diagnostics():
    assert shmapi.check(PSUM) == []
    d = shmapi.check("y = mul 1.0\nz = neg\n")
    assert [x.line for x in d] == [1, 2]


def test_load_a_file(tmp_path):
    p = tmp_path / "prog.shm"
    p.write_text(PSUM)
    prog = shmapi.load(str(p))
    assert prog.total(np.ones(8, np.float32)).tolist() == [4.0, 4.0]
    prog2 = shmapi.load(p)                      # a PathLike
    assert prog2.has_function("rank")


def test_print_goes_to_sys_stdout(capsys):
    shmapi.load('x = [1, 2]\nprint "x is", x\n')
    assert capsys.readouterr().out == "x is [1 2]\n"


def test_two_programs_side_by_side():
    a = shmapi.load("def f(x) {\n  y = add x 1.0\n  return y\n}\n")
    b = shmapi.load("def f(x) {\n  y = mul x 10.0\n  return y\n}\n")
    x = np.arange(3, dtype=np.float32)
    assert a.f(x).tolist() == [1, 2, 3] and b.f(x).tolist() == [0, 10, 20]


def test_calls_from_two_threads():
    prog = shmapi.load(PSUM)
    other = shmapi.load(PSUM)
    errors, results = [], {}

    def work(tag, p):
        try:
            for k in range(200):
                x = np.full(8, k, np.float32)
                assert np.array_equal(p.total(x), [4 * k, 4 * k])
            results[tag] = True
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i, prog if i < 2 else other)) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and len(results) == 3


def test_large_arrays_are_not_copied():
    prog = shmapi.Program()
    x = np.arange(4 << 20, dtype=np.float32)         # 16 MiB
    prog.set("big", x, copy=False)
    got = prog.get("big")
    assert got.__array_interface__["data"][0] == x.__array_interface__["data"][0]
    # a result handed out is a view of the interpreter's buffer: reading
    # the same value twice gives the same memory
    prog.exec("y = mul big 2.0\n")
    y1, y2 = prog.get("y"), prog.get("y")
    assert y1.__array_interface__["data"][0] == y2.__array_interface__["data"][0]
    assert y1[12345] == 2 * 12345
    # a copy is made when asked (the default)
    prog.set("small", x[:8])
    assert prog.get("small").__array_interface__["data"][0] != x.__array_interface__["data"][0]


def test_results_outlive_the_program():
    y = shmapi.load(PSUM).total(np.ones(8, np.float32))
    gc.collect()
    assert y.tolist() == [4.0, 4.0]


def test_per_device():
    prog = shmapi.load(PSUM)
    x = np.arange(8, dtype=np.float32)
    pd = prog.rank.per_device(x)
    assert pd.mesh == {"i": 4} and len(pd) == 4
    for d in range(4):
        assert pd[d][0].tolist() == [2 * d + d, 2 * d + 1 + d]
        assert pd.coords[d] == (d,)
    assert pd[(2,)][0].tolist() == pd[{"i": 2}][0].tolist() == [6.0, 7.0]
    assert np.array_equal(pd.outputs[0], prog.rank(x))
    assert "device 3 (i=3)" in repr(pd)


def test_show():
    prog = shmapi.load(PSUM)
    prog.total(np.ones(8, np.float32))            # checked for its arguments' types
    text = prog.show("total")
    assert text.startswith("def total = { lambda ; x:f32[8]. let")
    assert "psum[axes=(i,)]" in text


CORPUS = os.path.join(ROOT, "tests", "jaxpr", "_corpus", "v0_3_16_gather_scalar_indexing.shm")


def test_run_jaxpr_matches_the_cli(tmp_path):
    text = open(CORPUS).read()
    jaxpr = text[text.index("{ lambda"):]
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    got = shmapi.run_jaxpr(jaxpr, x)
    np.save(tmp_path / "x.npy", x)
    prog = tmp_path / "p.shm"
    prog.write_text('x = load "%s"\ndef f = %s\nr = f x\nsave "%s" r\n' % (tmp_path / "x.npy", jaxpr,
                                                                          tmp_path / "r.npy"))
    subprocess.run([SHMAPI, str(prog)], check=True)
    want = np.load(tmp_path / "r.npy")
    assert got.dtype == want.dtype and np.array_equal(got, want) and got.tolist() == [5, 6]

    class Closed:                     # anything whose str() is the jaxpr
        def __str__(self):
            return jaxpr
    assert np.array_equal(shmapi.run_jaxpr(Closed(), x), want)
    with pytest.raises(ValueError, match="not a jaxpr"):
        shmapi.run_jaxpr("x = 1", x)


def test_cost_report_equals_the_cli(tmp_path):
    p = tmp_path / "c.shm"
    p.write_text(PSUM + "x = arange[stop=8, dtype=f32]\ny = total x\n")
    cli = subprocess.run([SHMAPI, "--time", "--hardware", "h100", str(p)], check=True, capture_output=True,
                         text=True).stdout
    prog = shmapi.Program()
    prog._load(str(p))
    rep = prog.time("h100")
    assert rep.text == cli
    assert rep.devices == 4 and rep.bytes_sent > 0 and rep.makespan > 0
    assert re.search(r"modelled on h100", rep.text)
    # one call: the same model for that call alone
    call = shmapi.load(PSUM).cost("total", np.arange(8, dtype=np.float32), hardware="h100")
    assert call.bytes_sent == rep.bytes_sent and abs(call.makespan - rep.makespan) < 1e-12
    # the timeline, as --trace writes it
    rep = shmapi.load(PSUM).cost("total", np.arange(8, dtype=np.float32), hardware="h100", timeline=True)
    assert rep.svg.startswith("<svg") and "psum" in rep.svg and rep.svg in rep._repr_html_()
    shmapi.load(PSUM).cost("total", np.arange(8, dtype=np.float32), trace=tmp_path / "t.json")
    import json
    events = json.load(open(tmp_path / "t.json"))
    assert any("psum" in e.get("name", "") for e in (events["traceEvents"] if isinstance(events, dict) else events))
    with pytest.raises(shmapi.Error, match="unknown hardware"):
        shmapi.load(PSUM).cost("total", np.ones(8, np.float32), hardware="no-such-chip")


def test_stats_equal_the_cli(tmp_path):
    p = tmp_path / "s.shm"
    p.write_text(PSUM + "x = arange[stop=8, dtype=f32]\ny = total x\nz = total x\n")
    cli = subprocess.run([SHMAPI, "--stats", str(p)], check=True, capture_output=True, text=True).stdout
    prog = shmapi.load(p)
    assert prog.stats() == cli and "psum" in cli
    # calls count too; reset=True starts again
    prog.total(np.ones(8, np.float32))
    assert re.search(r"psum +3 ", prog.stats(reset=True))
    assert "psum" not in prog.stats()


def test_no_leak_over_many_calls():
    prog = shmapi.load(PSUM)
    x = np.arange(8, dtype=np.float32)
    for _ in range(100):
        prog.total(x)
    gc.collect()
    base_mem, base_ref = prog.memory_in_use(), sys.getrefcount(x)
    for _ in range(10000):
        y = prog.total(x)
    del y
    gc.collect()
    assert sys.getrefcount(x) == base_ref
    assert prog.memory_in_use() <= base_mem + 4096


def test_magic_in_a_headless_ipython_shell(capsys):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "shmapi")
    capsys.readouterr()                          # what starting the shell wrote
    ip.run_cell_magic("shm", "--reset", "def sq(a) {\n  b = mul a a\n  return b\n}\nx = sq 3.0\nprint x\n")
    ip.run_cell_magic("shm", "--to session", "y = sq 4.0\nprint y\n")
    out = capsys.readouterr()
    assert out.out == "9.0\n16.0\n"
    assert ip.user_ns["session"].sq(np.float32(5)) == 25
    ip.run_cell_magic("shm", "", "z = sq\n")        # an error: reported, the session kept
    out = capsys.readouterr()
    assert "<cell 3>:1:5: error:" in out.err
    ip.run_cell_magic("shm", "", "print y\n")
    assert capsys.readouterr().out == "16.0\n"
