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
    with pytest.raises(ValueError, match="a .svg path"):
        shmapi.load(PSUM).cost("total", np.ones(8, np.float32), trace=tmp_path / "t.json", timeline=True)
    # a run's timeline: its picture kept, or the trace as --trace writes it for the file
    prog = shmapi.Program()
    prog._load(str(p))
    rep = prog.time("h100", timeline=True)
    assert rep.text == cli and rep.svg.startswith("<svg") and "psum" in rep.svg
    prog = shmapi.Program()
    prog._load(str(p))
    prog.time("h100", trace=tmp_path / "run.svg")
    subprocess.run([SHMAPI, "--hardware", "h100", "--trace", str(tmp_path / "cli.svg"), str(p)], check=True,
                   capture_output=True)
    ours, theirs = open(tmp_path / "run.svg").read(), open(tmp_path / "cli.svg").read()
    assert ours.count("<rect") == theirs.count("<rect") > 4


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


# ---- the cost report as data, abstract models, pictures ------------------------------------

GRAD = """
mesh m = {i: 4}
@shard_map[mesh=m, in_specs=(P(i), P()), out_specs=P()]
def loss(x, w) {
  y = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
  z = tanh y
  s = reduce_sum[axes=(0, 1)] z
  t = psum[axes=i] s
  return t
}
def g = grad[argnums=(1,)] loss
"""


def fmt_time(t):
    """Seconds as --time prints them (src/model/timeline.c's fmt_time)."""
    if t == 0:
        return "0"
    if t < 1e-6:
        return "%.4g ns" % (t * 1e9)
    if t < 1e-3:
        return "%.4g us" % (t * 1e6)
    if t < 1:
        return "%.4g ms" % (t * 1e3)
    return "%.4g s" % t


def fmt_bytes(b):
    if b == 0:
        return "-"
    if b < 1e3:
        return "%.0f B" % b
    for scale, unit in ((1e3, "kB"), (1e6, "MB"), (1e9, "GB")):
        if b < scale * 1e3:
            return "%.4g %s" % (b / scale, unit)
    return "%.4g TB" % (b / 1e12)


def assert_data_is_the_text(rep):
    """Every number of the report's data is the one its text prints."""
    text = rep.text
    assert text.startswith("modelled on %s: %s\n" % (rep.hardware, fmt_time(rep.makespan)))
    # the device table: runs of equal rows merged
    rows, lo = [], 0
    cells = [(fmt_time(d.compute), fmt_time(d.comm), fmt_time(d.exposed), fmt_time(d.idle), fmt_bytes(d.peak_hbm))
             for d in rep.per_device]
    for d in range(1, len(cells) + 1):
        if d == len(cells) or cells[d] != cells[lo]:
            rows.append("  %-9s %11s %11s %11s %11s %11s\n" % (str(lo) if lo == d - 1 else "%d-%d" % (lo, d - 1),
                                                             *cells[lo]))
            lo = d
    assert "".join(rows) in text
    for d in rep.per_device:
        assert abs(d.compute + d.exposed + d.idle - rep.makespan) <= 1e-12 * rep.makespan
    assert rep.compute == max(d.compute for d in rep.per_device)
    assert rep.peak_hbm == max(d.peak_hbm for d in rep.per_device) == rep.per_device[rep.peak_device].peak_hbm
    assert "on device %d (of" % rep.peak_device in text and "at line %s\n" % rep.peak_at in text
    # the per-line table: every row the text shows, hottest first
    table = text[text.index("per line, hottest first:\n"):].split("\n")[2:]
    for k, ln in enumerate(rep.lines[:40]):
        row = "  %5d %7d %11s %5.1f%% %11s %11s %-8s %-9s %s%s" % (
            ln.line, ln.runs, "<1 ns" if 0 < ln.time < 1e-9 else fmt_time(ln.time), 100 * ln.share,
            fmt_bytes(ln.coll_bytes), fmt_time(ln.waited) if ln.waited > 0 else "-", ln.limit, ln.how,
            "(backward) " if ln.backward else "", ln.source)
        assert table[k] == row
        assert ln.time == ln.compute + ln.comm
    assert abs(sum(ln.share for ln in rep.lines) - 1) < 1e-12
    assert sum(ln.coll_bytes for ln in rep.lines) == rep.bytes_sent
    assert "collective bytes sent, all devices: %.0f\n" % rep.bytes_sent in text


def test_cost_report_as_data_equals_the_cli(tmp_path):
    p = tmp_path / "g.shm"
    p.write_text(GRAD + "x = iota[dtype=f32, shape=(64, 32), dimension=0]\n"
                 "w = iota[dtype=f32, shape=(32, 16), dimension=1]\ndw = g x w\n")
    cli = subprocess.run([SHMAPI, "--time", str(p)], check=True, capture_output=True, text=True).stdout
    prog = shmapi.Program()
    prog._load(str(p))
    rep = prog.time()
    assert str(rep) == rep.text == cli
    assert_data_is_the_text(rep)
    assert rep.hardware == "tpu-v5e" and rep.devices == 4 and rep.outside == 2
    rows = {(ln.line, ln.backward): ln for ln in rep.lines}
    fwd, bwd = rows[(5, False)], rows[(5, True)]
    assert fwd.primitive == "dot_general" and fwd.runs == 1 and fwd.flops == 2 * 16 * 32 * 16
    # its result stays on chip (the tanh fuses into it), and the 1 us launch bounds a kernel this small
    assert fwd.hbm_bytes == 4 * (16 * 32 + 32 * 16) and fwd.comm == 0 and fwd.limit == "launch"
    assert bwd.backward and bwd.comm > 0 and bwd.coll_bytes > 0       # the transpose's psum of dw
    assert rows[(6, False)].primitive == "tanh" and rows[(6, True)].backward
    d = rep.to_dict()
    assert d["lines"][0] == rep.lines[0].to_dict() and d["per_device"][3] == rep.per_device[3].to_dict()
    assert d["makespan"] == rep.makespan and d["peak_at"] == rep.peak_at
    import json
    json.dumps(d)                                      # plain Python objects
    # a call's report is data too
    call = shmapi.load(GRAD).cost("g", np.ones((64, 32), np.float32), np.ones((32, 16), np.float32))
    assert_data_is_the_text(call)
    def rows(r):
        return [dict(ln.to_dict(), file=None) for ln in r.lines]
    assert rows(call) == rows(rep) and call.lines[0].file == "<string>" and rep.lines[0].file == str(p)
    html = call._repr_html_()
    assert html.count("<tr>") == 1 + 1 + 1 + len(call.lines)    # two heads, one merged device row, the lines
    assert "(backward) " in html and "dot_general" in html


def test_abstract_cost_models_from_shapes(tmp_path):
    p = tmp_path / "g.shm"
    p.write_text(GRAD + "x = iota[dtype=f32, shape=(64, 32), dimension=0]\n"
                 "w = iota[dtype=f32, shape=(32, 16), dimension=1]\ndw = g x w\nprint dw\n")
    cli = subprocess.run([SHMAPI, "--abstract", "--time", str(p)], check=True, capture_output=True,
                         text=True).stdout
    prog = shmapi.Program()
    prog._load(str(p))
    rep = prog.time(abstract=True)
    assert rep.text == cli and "dw" not in rep.text
    with pytest.raises(shmapi.Error, match="no value"):
        prog.get("dw")                                 # modelled, not run
    # a call from shapes alone: what the run models
    prog = shmapi.load(GRAD)
    x, w = np.ones((64, 32), np.float32), np.ones((32, 16), np.float32)
    real = prog.cost("g", x, w).to_dict()

    class Struct:                                      # as jax.ShapeDtypeStruct
        def __init__(self, shape, dtype):
            self.shape, self.dtype = shape, np.dtype(dtype)
    for args in [(shmapi.ShapeDtype((64, 32), "f32"), shmapi.ShapeDtype((32, 16), np.float32)),
                 (Struct((64, 32), "float32"), w), (x, w)]:
        assert prog.cost("g", *args, abstract=True).to_dict() == real
    # sizes no memory holds
    big = prog.cost("g", shmapi.ShapeDtype((1 << 20, 1 << 16), "bf16"), shmapi.ShapeDtype((1 << 16, 1 << 14), "bf16"),
                    abstract=True, hardware="tpu-v5p")
    dot = [ln for ln in big.lines if ln.primitive == "dot_general" and not ln.backward][0]
    assert dot.flops == 2 * (1 << 18) * (1 << 16) * (1 << 14) and dot.limit == "FLOPs"
    assert big.hardware == "tpu-v5p" and big.peak_hbm > 30e9 and "peak HBM: %s on device" % fmt_bytes(big.peak_hbm) in big.text
    with pytest.raises(TypeError, match="no dtype"):
        shmapi.ShapeDtype((2,), "f7")
    with pytest.raises(TypeError, match="shape and a dtype"):
        prog.cost("g", "x", w, abstract=True)
    # a loop whose trip count is data cannot be modelled from shapes
    loop = shmapi.load("def f(x, n) {\n  r, k = while[cond_jaxpr={ lambda ; a:f32[4] k:i32[]. let p:bool[] = lt k n "
                       "in (p,) },\n    body_jaxpr={ lambda ; a:f32[4] k:i32[]. let b:f32[4] = neg a; "
                       "k2:i32[] = add k 1 in (b, k2) }] x 0\n  return r\n}\n")
    with pytest.raises(shmapi.Error, match="depends on array data") as e:
        loop.f.cost(shmapi.ShapeDtype((4,), "f32"), 3, abstract=True)
    assert e.value.line == 2
    assert loop.f.cost(np.ones(4, np.float32), np.int32(3)).outside == 4 + 3 * 2     # run: 4 tests, 3 steps


VIS = """
mesh m = {i: 2, j: 2}
@shard_map[mesh=m, in_specs=(P(i, j),), out_specs=P(i)]
def f(x) {
  s = psum[axes=j] x
  return s
}
x = iota[dtype=f32, shape=(8, 4), dimension=0]
y = f x
"""


def test_visualize_gives_a_picture(tmp_path, capsys):
    import xml.etree.ElementTree as ET
    p = tmp_path / "v.shm"
    p.write_text(VIS + "visualize f\nvisualize[mesh=m, spec=P(None, j)] x\n")
    cli = subprocess.run([SHMAPI, str(p)], check=True, capture_output=True, text=True).stdout
    prog = shmapi.load(VIS)
    pic = prog.visualize("f")
    col = prog.visualize("x", mesh="m", spec=(None, "j"))
    assert str(pic) + str(col) == cli
    assert prog.visualize("x", mesh="m", spec="P(None, j)").svg == col.svg
    assert prog.f.visualize().svg == pic.svg
    svg = ET.fromstring(pic._repr_svg_())
    ns = "{http://www.w3.org/2000/svg}"
    rects = svg.findall(ns + "rect")
    texts = [t.text for t in svg.findall(ns + "text")]
    assert len(rects) == 4 + 2                          # the input's 4 blocks, the output's 2
    assert texts == ["f: shard_map over mesh m", "input x: f32[8,4] as P(i, j)", "CPU 0", "CPU 1", "CPU 2", "CPU 3",
                     "output s: f32[8,2] as P(i)", "CPU 0,1", "CPU 2,3"]
    fills = [r.get("fill") for r in rects]
    assert len(set(fills[:4])) == 4 and fills[4] != fills[5]
    assert [t.text for t in ET.fromstring(col.svg).findall(ns + "text")] == ["x: f32[8,4] as P(None, j)",
                                                                            "CPU 0,2", "CPU 1,3"]
    # in a program's text, a picture is printed (its text), as the CLI does
    capsys.readouterr()
    shmapi.load(VIS + "visualize f\n")
    assert capsys.readouterr().out == str(pic)


def test_magic_shows_pictures_and_reports_rich(capsys):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "shmapi")
    with capture_output() as cap:
        ip.run_cell_magic("shm", "--reset", VIS + "visualize f\n")
    assert len(cap.outputs) == 1
    data = cap.outputs[0].data
    assert data["image/svg+xml"].startswith("<svg") and data["text/plain"].startswith("f: shard_map over mesh m")
    with capture_output() as cap:
        ip.run_cell_magic("shm", "--time h100", "z = f x\n")
    rep = cap.outputs[0].data
    assert rep["text/plain"].startswith("modelled on h100:") and "<table>" in rep["text/html"]
    with capture_output() as cap:
        ip.run_cell_magic("shm", "--time tpu-v5e --abstract", "w = f x\nprint w\n")
    assert cap.stdout == "" and "modelled on tpu-v5e" in cap.outputs[0].data["text/plain"]
    with capture_output() as cap:
        ip.run_cell_magic("shm", "--time a100 --timeline", "u = f x\n")
    html = cap.outputs[0].data["text/html"]
    assert "<table>" in html and "<svg" in html and "psum" in html[html.index("<svg"):]
    with capture_output() as cap:
        ip.run_cell_magic("shm", "--timeline", "u = f x\n")
    assert cap.stderr == "%%shm: --timeline goes with --time HW\n" and not cap.outputs


def test_the_stubs_declare_the_api():
    import ast
    import inspect
    stub = ast.parse(open(os.path.join(os.path.dirname(shmapi.__file__), "__init__.pyi")).read())
    top = {n.name: n for n in stub.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    for name in shmapi.__all__:
        assert name in top or any(isinstance(n, ast.AnnAssign) and n.target.id == name for n in stub.body), name
    for cls in ("Program", "Function", "CostReport", "CostLine", "CostDevice", "PerDevice", "Picture",
                "ShapeDtype"):
        declared = {n.name for n in top[cls].body if isinstance(n, ast.FunctionDef)}
        declared |= {n.target.id for n in top[cls].body if isinstance(n, ast.AnnAssign)}
        for name, member in vars(getattr(shmapi, cls)).items():
            if not name.startswith("_") and (inspect.isfunction(member) or name in ("FIELDS",)):
                assert name in declared, "%s.%s" % (cls, name)
        for name in getattr(getattr(shmapi, cls), "FIELDS", ()):
            assert name in declared, "%s.%s" % (cls, name)
        for name, member in vars(getattr(shmapi, cls)).items():
            if inspect.isfunction(member) and not name.startswith("_"):
                params = list(inspect.signature(member).parameters)
                stubbed = [a.arg for a in top[cls].body[[n.name if isinstance(n, ast.FunctionDef) else None
                                                          for n in top[cls].body].index(name)].args.args]
                stubbed += [a.arg for a in [x for x in top[cls].body if isinstance(x, ast.FunctionDef) and
                                            x.name == name][0].args.kwonlyargs]
                assert [p for p in params if p not in ("args",)] == stubbed, "%s.%s" % (cls, name)


def test_no_leak_over_many_cost_reports():
    import tracemalloc
    prog = shmapi.load(GRAD)
    x, w = np.ones((64, 32), np.float32), np.ones((32, 16), np.float32)
    xs, ws = shmapi.ShapeDtype(x.shape, "f32"), shmapi.ShapeDtype(w.shape, "f32")
    for _ in range(50):
        prog.cost("g", x, w).to_dict()
        prog.cost("g", xs, ws, abstract=True)
    gc.collect()
    base_mem, base_ref = prog.memory_in_use(), sys.getrefcount(x)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(1000):
        prog.cost("g", x, w).to_dict()
        prog.cost("g", xs, ws, abstract=True)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 64 * 1024, grown                  # Python objects: a report is a few kB
    assert sys.getrefcount(x) == base_ref
    assert prog.memory_in_use() <= base_mem + 4096
