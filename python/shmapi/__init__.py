"""shmapi from Python: run shm programs and pasted jaxprs on NumPy arrays.

    import shmapi
    prog = shmapi.load("examples/psum.shm")        # or the text of a program
    y = prog.f(x)                                   # a function on NumPy arrays
    per = prog.f.per_device(x)                      # what each device held
    print(prog.show("f"))                           # the checked program
    report = prog.cost("f", x, hardware="h100")     # the cost model, as data

    y = shmapi.run_jaxpr(jax.make_jaxpr(f)(x), x)   # a jaxpr, in one line

Errors raise shmapi.Error, whose diagnostics carry the file, line, column
and the text shmapi prints (with the source line and a caret).  `print`
inside shm writes to sys.stdout (so notebooks capture it).  In IPython,
`%load_ext shmapi` adds the `%%shm` cell magic (shmapi._magic).

Arrays are NumPy arrays of any dtype shmapi has (bool, int8 ... uint64,
float16, float32, float64, complex64, complex128; bfloat16 through the
ml_dtypes package when it is installed).  Results are read-only views of
the interpreter's own buffers: no copy is made.
"""

import os
import re
import sys

import numpy as np

_here = os.path.dirname(os.path.abspath(__file__))
if os.path.isdir(os.path.join(_here, "stdlib")):    # installed: the stdlib comes with the package
    os.environ.setdefault("SHMAPI_STDLIB", os.path.join(_here, "stdlib"))

from . import _shmapi  # noqa: E402

__all__ = ["Error", "Diagnostic", "Program", "Function", "PerDevice", "CostReport", "CostLine", "CostDevice",
           "ShapeDtype", "Picture", "load", "check", "run_jaxpr", "session", "version"]
version = _shmapi.version
__version__ = version


class Diagnostic:
    """One diagnostic: where (file, line, col: 1-based; None and 0 at no
    place), its kind ("error" or "note"), the message alone, and the text
    shmapi prints for it (file:line:col: error: ..., the line, a caret)."""

    __slots__ = ("file", "line", "col", "kind", "message", "text")

    def __init__(self, file, line, col, kind, message, text):
        self.file, self.line, self.col, self.kind, self.message, self.text = file, line, col, kind, message, text

    def __repr__(self):
        where = "%s:%d:%d" % (self.file, self.line, self.col) if self.file else "<no place>"
        return "Diagnostic(%s: %s: %s)" % (where, self.kind, self.message)

    def __str__(self):
        return self.text


class Error(Exception):
    """A program that did not load, check or run: `diagnostics` lists what
    shmapi reported; file, line, col, message and text are the first's."""

    def __init__(self, message, diagnostics=()):
        self.diagnostics = [d if isinstance(d, Diagnostic) else Diagnostic(*d) for d in diagnostics]
        first = self.diagnostics[0] if self.diagnostics else None
        self.file = first.file if first else None
        self.line = first.line if first else 0
        self.col = first.col if first else 0
        self.message = first.message if first else message
        self.text = "".join(d.text for d in self.diagnostics) if self.diagnostics else message
        super().__init__(self.text.rstrip("\n") or message)


_shmapi.set_error_class(Error)
try:                                   # bfloat16, when ml_dtypes is there
    import ml_dtypes
    _shmapi.set_bf16(np.dtype(ml_dtypes.bfloat16))
except ImportError:
    pass


def _with_timeline(run, trace, timeline):
    """A CostReport of run(trace path or None); timeline=True keeps the SVG
    timeline in it (drawn into a temporary file when trace is None)."""
    if timeline and trace is not None and not os.fspath(trace).endswith(".svg"):
        raise ValueError("timeline=True keeps the SVG picture of the timeline: trace is then a .svg path, or None")
    if timeline and trace is None:
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "timeline.svg")
            d = run(path)
            with open(path, encoding="utf-8") as f:
                return CostReport(d, f.read())
    d = run(None if trace is None else os.fspath(trace))
    svg = None
    if timeline:
        with open(trace, encoding="utf-8") as f:
            svg = f.read()
    return CostReport(d, svg)


def _stdout(text):
    sys.stdout.write(text)


def _stderr(text):
    sys.stderr.write(text)


def _looks_like_path(source):
    return "\n" not in source and source.endswith(".shm") or (
        "\n" not in source and len(source) < 4096 and os.path.isfile(source))


class Program:
    """A loaded shm program: one interpreter of its own.

    prog.NAME / prog["NAME"] is its function NAME (a Function);
    prog.get("x") the value of top-level variable x after it ran;
    prog.exec(text) loads more statements and runs them (a session);
    prog.show("f"), prog.cost("f", *args, hardware=...)."""

    def __init__(self, max_memory=0, max_steps=0):
        self._state = _shmapi.State(max_memory, max_steps)
        self._state.set_output(_stdout, _stderr)
        self._state.set_pictures(self._picture)
        self._picture_sink = None        # where visualize's Pictures go (else their text is printed)
        self._ncell = 0                  # %%shm cells run in it (their names: <cell N>)

    def _picture(self, text, svg):
        if self._picture_sink is not None:
            self._picture_sink(Picture(text, svg))
        else:
            sys.stdout.write(text)

    # -- loading and running --
    def _load(self, source, name=None):
        if isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
            self._state.load_file(os.fspath(source))
        else:
            if not isinstance(source, str):
                source = str(source)                # a ClosedJaxpr prints its text
            self._state.load_string(name or "<string>", source)
        return self

    def exec(self, source, name=None):
        """Load shm text (or a .shm file) into this program and run its
        top-level statements; functions it defines stay callable."""
        self._load(source, name)
        self._state.run()
        return self

    def run(self):
        """Run the top-level statements loaded and not yet run."""
        self._state.run()
        return self

    def interrupt(self):
        """Stop what runs now (from another thread) at its next loop step."""
        self._state.interrupt()

    # -- values and functions --
    def has_function(self, name):
        return self._state.has_function(name)

    def get(self, name):
        """The value of top-level variable `name`, as a read-only array."""
        return self._state.get_global(name)

    def set(self, name, value, copy=True):
        """Bind top-level variable `name` to an array (text loaded after
        uses it).  With copy=False a C-contiguous array of a dtype shmapi
        has is used in place, without a copy: it must not change while
        the program lives (shm arrays are immutable)."""
        self._state.set_global(name, value, bool(copy))

    def __getitem__(self, name):
        if not self._state.has_function(name):
            raise KeyError("the program has no function %r" % name)
        return Function(self, name)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._state.has_function(name):
            return Function(self, name)
        raise AttributeError("the program has no function %r" % name)

    def call(self, name, *args):
        outs = self._state.call(name, args)
        return outs[0] if len(outs) == 1 else outs

    # -- what shmapi prints, as text --
    def _capture(self, text):
        parts = []
        self._state.set_output(parts.append, _stderr)
        try:
            self.exec(text, "<show>")
        finally:
            self._state.set_output(_stdout, _stderr)
        return "".join(parts)

    def show(self, name):
        """The checked form of function `name`, as `show name` prints it."""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
            raise ValueError("not a function name: %r" % name)
        return self._capture("show %s\n" % name)

    def visualize(self, name, mesh=None, spec=None):
        """The picture `visualize` draws, as a Picture (str(): its text; a
        notebook shows its SVG): of shard_map function `name`'s inputs and
        outputs at the shapes of its last call, or, with mesh and spec, of
        top-level array `name` split by spec over mesh (spec: shm's text,
        "P(i, j)", or a tuple as in JAX's P: ("i", None), (("i", "j"),))."""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
            raise ValueError("not a name: %r" % name)
        if (mesh is None) != (spec is None):
            raise ValueError("visualize of an array takes both mesh= and spec=")
        params = ""
        if mesh is not None:
            if not isinstance(spec, str):
                spec = "P(%s)" % ", ".join("None" if d is None else d if isinstance(d, str) else
                                           "(%s)" % ", ".join(d) for d in spec)
            params = "[mesh=%s, spec=%s]" % (mesh, spec)
        pics = []
        self._picture_sink = pics.append
        try:
            self.exec("visualize%s %s\n" % (params, name), "<visualize>")
        finally:
            self._picture_sink = None
        return pics[0]

    def cost(self, name, *args, hardware="tpu-v5e", trace=None, timeline=False, abstract=False, place=None):
        """Call function `name` on args under the cost model of `hardware`
        (a preset: tpu-v4, tpu-v5e, tpu-v5p, tpu-v6e, a100, h100; or a
        JSON description's path): the report of `shmapi --time`, as data
        (a CostReport).
        abstract=True models the call without running it, as --abstract:
        args then need only a shape and a dtype (ShapeDtype((8, 4), "f32"),
        jax.ShapeDtypeStruct, a NumPy array: whatever has .shape and
        .dtype), so sizes far beyond memory model in seconds.
        place: how the meshes lie on a torus, as --place ("i=x,j=yz").
        trace: a path to write the modelled timeline to, as --trace does
        (.svg: a picture; else Chrome's trace JSON).  timeline=True keeps
        the SVG picture in the report (report.svg; a notebook shows it)."""
        if abstract:
            args = [_abstract_arg(a) for a in args]
        place = None if place is None else str(place)
        return _with_timeline(lambda path: self._state.call_cost(name, args, hardware, path, place, bool(abstract)),
                              trace, timeline)

    def stats(self, reset=False):
        """The communication table `shmapi --stats` prints, for every
        collective this program has run (since the last reset=True)."""
        return Stats(self._state.stats(bool(reset)))

    def time(self, hardware="tpu-v5e", abstract=False, place=None, trace=None, timeline=False):
        """Run the statements loaded and not yet run under the cost model of
        `hardware`: the report `shmapi --time` prints for them, as data.
        abstract=True models them without running them (as --abstract):
        they count as done, and the variables they bind have no value.
        place, trace and timeline as for cost()."""
        place = None if place is None else str(place)
        return _with_timeline(lambda path: self._state.run_cost(hardware, place, bool(abstract), path), trace,
                              timeline)

    def memory_in_use(self):
        return self._state.memory_in_use()


class Function:
    """A function of a Program, called on NumPy arrays (or Python numbers:
    f32 and i32, as JAX's defaults)."""

    def __init__(self, program, name):
        self.program, self.name = program, name

    def __call__(self, *args):
        return self.program.call(self.name, *args)

    def per_device(self, *args):
        """Call it and return what each device held at the end of its
        (last, outermost) shard_map: a PerDevice."""
        axes, outs, blocks, owner = self.program._state.call_devices(self.name, args)
        return PerDevice(axes, outs, blocks, owner)

    def show(self):
        return self.program.show(self.name)

    def visualize(self):
        """Program.visualize of this function: its layouts at its last call."""
        return self.program.visualize(self.name)

    def cost(self, *args, hardware="tpu-v5e", trace=None, timeline=False, abstract=False, place=None):
        """Program.cost of this function."""
        return self.program.cost(self.name, *args, hardware=hardware, trace=trace, timeline=timeline,
                                 abstract=abstract, place=place)

    def __repr__(self):
        return "<shm function %s>" % self.name


class PerDevice:
    """The blocks each device held after a shard_map call.

    mesh: {axis: size}; outputs: the call's results; len(pd) devices;
    pd[device] (an index, or coordinates as a tuple or {axis: i}) the
    tuple of blocks it held, one per output; pd.block(output, device)."""

    def __init__(self, axes, outs, blocks, owner):
        self.mesh = dict(axes)
        self.outputs = tuple(outs)
        self._owner = owner
        self._by = {}
        self.coords = {}
        for out, dev, coords, arr in blocks:
            self._by[(out, dev)] = arr
            self.coords[dev] = coords
        self.ndevices = len(self.coords)

    def __len__(self):
        return self.ndevices

    def _index(self, device):
        if isinstance(device, dict):
            device = tuple(device[a] for a in self.mesh)
        if isinstance(device, tuple):
            for d, c in self.coords.items():
                if c == device:
                    return d
            raise KeyError("no device at %r in mesh %r" % (device, self.mesh))
        if not 0 <= device < self.ndevices:
            raise IndexError("device %d of %d" % (device, self.ndevices))
        return device

    def block(self, output, device):
        return self._by[(output, self._index(device))]

    def __getitem__(self, device):
        d = self._index(device)
        return tuple(self._by[(k, d)] for k in range(len(self.outputs)))

    def __iter__(self):
        for d in range(self.ndevices):
            yield self.coords[d], self[d]

    def __repr__(self):
        names = list(self.mesh)
        lines = ["PerDevice(mesh=%s, %d output%s)" % (
            "{%s}" % ", ".join("%s: %d" % kv for kv in self.mesh.items()), len(self.outputs),
            "" if len(self.outputs) == 1 else "s")]
        for d in range(min(self.ndevices, 16)):
            where = ", ".join("%s=%d" % (a, c) for a, c in zip(names, self.coords[d]))
            for k in range(len(self.outputs)):
                body = np.array2string(self._by[(k, d)], separator=" ", threshold=32)
                lines.append("  device %d (%s) out %d: %s" % (d, where, k, body.replace("\n", "\n    ")))
        if self.ndevices > 16:
            lines.append("  ... %d more devices" % (self.ndevices - 16))
        return "\n".join(lines)


class Picture:
    """A picture of where an array's blocks are (shm's `visualize`): str()
    is the text shmapi prints, .svg the same as an SVG picture (a notebook
    shows that)."""

    __slots__ = ("text", "svg")

    def __init__(self, text, svg):
        self.text, self.svg = text, svg

    def __str__(self):
        return self.text

    def __repr__(self):
        return self.text.rstrip("\n")

    def _repr_svg_(self):
        return self.svg


class Stats(str):
    """The text of `--stats` (a str; a notebook shows it as it is)."""

    def __repr__(self):
        return str(self)


# ---- types without data (abstract cost models) ---------------------------------

_DTYPE_NUM = {n: k for k, n in enumerate(_shmapi.dtype_names)}
_NUMPY_NAMES = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
                "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "bfloat16": "bf16",
                "float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128"}


def _dtype_name(dtype):
    """shmapi's name of a dtype: one of shmapi's ("f32", "bf16"), a NumPy or
    JAX dtype, or a NumPy/ml_dtypes type (np.float32, jnp.bfloat16)."""
    if isinstance(dtype, str) and dtype in _DTYPE_NUM:
        return dtype
    name = getattr(dtype, "name", None)
    if not isinstance(name, str):
        name = getattr(dtype, "__name__", None)
    if not isinstance(name, str):
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = str(dtype)
    if name in _NUMPY_NAMES:
        return _NUMPY_NAMES[name]
    if name in _DTYPE_NUM:
        return name
    raise TypeError("shmapi has no dtype %r (it has %s)" % (dtype, ", ".join(_shmapi.dtype_names)))


class ShapeDtype:
    """An array's shape and dtype, without data: an argument of an abstract
    cost model (prog.cost(..., abstract=True)), as jax.ShapeDtypeStruct.
    dtype: shmapi's name ("f32", "bf16", "i32", ...) or a NumPy dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in self.shape):
            raise ValueError("a negative dimension in %r" % (self.shape,))
        self.dtype = _dtype_name(dtype)

    def __repr__(self):
        return "ShapeDtype(%s[%s])" % (self.dtype, ",".join(str(s) for s in self.shape))

    def __eq__(self, other):
        return isinstance(other, ShapeDtype) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))


def _abstract_arg(a):
    """(shape, dtype number) of an abstract call's argument."""
    if not isinstance(a, ShapeDtype):
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            a = ShapeDtype(a.shape, a.dtype)
        elif isinstance(a, (bool, int, float, complex)):      # JAX's defaults, as a call takes them
            a = ShapeDtype((), {bool: "bool", int: "i32", float: "f32", complex: "c64"}[type(a)])
        else:
            raise TypeError("an abstract argument has a shape and a dtype (a shmapi.ShapeDtype, a "
                            "jax.ShapeDtypeStruct, an array), not %r" % (a,))
    return a.shape, _DTYPE_NUM[a.dtype]


# ---- the cost model's report -------------------------------------------------------


def _fmt_time(t):
    """Seconds as the report prints them ("1.234 ms")."""
    if t == 0:
        return "0"
    for scale, unit, lim in ((1e9, "ns", 1e-6), (1e6, "us", 1e-3), (1e3, "ms", 1)):
        if t < lim:
            return "%.4g %s" % (t * scale, unit)
    return "%.4g s" % t


def _fmt_bytes(b):
    if b == 0:
        return "-"
    if b < 1e3:
        return "%.0f B" % b
    for scale, unit, lim in ((1e3, "kB", 1e6), (1e6, "MB", 1e9), (1e9, "GB", 1e12)):
        if b < lim:
            return "%.4g %s" % (b / scale, unit)
    return "%.4g TB" % (b / 1e12)


class CostLine:
    """A row of the report's per-line table: the equations of one source
    line (the backward pass's of a line, from grad or vjp, are a row of
    their own: backward=True).  file, line; primitive (of its first
    equation); source (its text); runs; time = compute + comm (seconds, on
    the compute and communication streams of one device, summed over
    runs); waited (the report's "waited": for a collective's result);
    share (of every line's time, 0 to 1); flops and hbm_bytes (one
    device's, local equations); coll_bytes (its collectives', all
    devices); limit ("FLOPs", "HBM", "link", "latency", "launch" or
    "none"); how (the report's "how": "-", "fused", or a collective's
    algorithm such as "ring", "tree", "nvls")."""

    FIELDS = ("file", "line", "backward", "primitive", "source", "runs", "time", "compute", "comm", "waited",
              "share", "flops", "hbm_bytes", "coll_bytes", "limit", "how")
    __slots__ = FIELDS

    def __init__(self, d):
        for k in self.FIELDS:
            setattr(self, k, d[k])

    def to_dict(self):
        return {k: getattr(self, k) for k in self.FIELDS}

    def __repr__(self):
        return "CostLine(line %d%s: %s, %d runs, %s, %s)" % (self.line, " (backward)" if self.backward else "",
                                                            self.primitive, self.runs, _fmt_time(self.time),
                                                            self.limit)


class CostDevice:
    """A device of the report: compute and comm (seconds busy on its two
    streams), exposed (waiting for communication), idle (waiting for
    anything else; compute + exposed + idle is the makespan), peak_hbm
    (bytes)."""

    FIELDS = ("compute", "comm", "exposed", "idle", "peak_hbm")
    __slots__ = FIELDS

    def __init__(self, d):
        for k in self.FIELDS:
            setattr(self, k, d[k])

    def to_dict(self):
        return {k: getattr(self, k) for k in self.FIELDS}

    def __repr__(self):
        return "CostDevice(%s)" % ", ".join("%s=%s" % (k, _fmt_bytes(self.peak_hbm) if k == "peak_hbm" else
                                                       _fmt_time(getattr(self, k))) for k in self.FIELDS)


class CostReport:
    """The cost model's report of a run or a call, as data.

    str(report) (and report.text) is what `shmapi --time` prints.  The
    totals: hardware (its name), makespan, compute, comm, exposed (seconds;
    compute, comm and exposed are the most of any one device), peak_hbm,
    bytes_sent (bytes), devices (how many); per_device: a CostDevice per
    device; lines: the per-line table, hottest first, every row (the text
    folds those past the 40th into one line), CostLines; peak_device and
    peak_at (where the highest peak HBM is reached), outside (equations
    outside any shard_map: not modelled), notes (an abstract model's conds
    decided by data).  to_dict() gives it all as plain Python objects; a
    notebook shows it as tables (and the timeline's picture, when the
    report keeps one: report.svg)."""

    TOTALS = ("hardware", "makespan", "compute", "comm", "exposed", "peak_hbm", "bytes_sent", "devices",
              "peak_device", "peak_at", "outside")

    def __init__(self, d, svg=None):
        self.text = d["report"]
        self.svg = svg
        for k in self.TOTALS:
            setattr(self, k, d[k])
        self.per_device = [CostDevice(x) for x in d["device"]]
        self.lines = [CostLine(x) for x in d["lines"]]
        self.notes = list(d["notes"])

    def to_dict(self):
        d = {k: getattr(self, k) for k in self.TOTALS}
        d["per_device"] = [x.to_dict() for x in self.per_device]
        d["lines"] = [x.to_dict() for x in self.lines]
        d["notes"] = list(self.notes)
        return d

    def __str__(self):
        return self.text

    def __repr__(self):
        return self.text

    def _device_rows(self):
        """The devices as the text merges them: runs of equal rows."""
        rows = []
        for d, dev in enumerate(self.per_device):
            cells = (_fmt_time(dev.compute), _fmt_time(dev.comm), _fmt_time(dev.exposed), _fmt_time(dev.idle),
                     _fmt_bytes(dev.peak_hbm))
            if rows and rows[-1][2] == cells:
                rows[-1][1] = d
            else:
                rows.append([d, d, cells])
        return rows

    def _repr_html_(self):
        import html
        esc = html.escape
        th = "".join
        out = ['<div class="shmapi-cost"><p><b>modelled on %s: %s</b> &middot; %d device%s &middot; peak HBM %s'
               ' &middot; collective bytes sent %s</p>' % (
                   esc(self.hardware), _fmt_time(self.makespan), self.devices, "" if self.devices == 1 else "s",
                   _fmt_bytes(self.peak_hbm), _fmt_bytes(self.bytes_sent))]
        if self.per_device:
            out.append("<table><thead><tr>%s</tr></thead><tbody>" % th(
                "<th>%s</th>" % h for h in ("device", "compute", "comm", "exposed", "idle", "peak HBM")))
            for lo, hi, cells in self._device_rows():
                out.append("<tr><td>%s</td>%s</tr>" % ("%d" % lo if lo == hi else "%d-%d" % (lo, hi),
                                                       th("<td>%s</td>" % c for c in cells)))
            out.append("</tbody></table>")
        if self.lines:
            out.append("<table><thead><tr>%s</tr></thead><tbody>" % th(
                "<th>%s</th>" % h for h in ("line", "runs", "time", "share", "FLOPs", "HBM bytes", "coll bytes",
                                            "waited", "limit", "primitive", "source")))
            for ln in self.lines:
                out.append("<tr>%s<td><code>%s%s</code></td></tr>" % (th("<td>%s</td>" % esc(str(c)) for c in (
                    ln.line, ln.runs, _fmt_time(ln.time), "%.1f%%" % (100 * ln.share), "%.4g" % ln.flops,
                    _fmt_bytes(ln.hbm_bytes), _fmt_bytes(ln.coll_bytes),
                    _fmt_time(ln.waited) if ln.waited > 0 else "-", ln.limit, ln.primitive)),
                    "(backward) " if ln.backward else "", esc(ln.source)))
            out.append("</tbody></table>")
        for n in self.notes:
            out.append("<p>data-dependent: %s</p>" % esc(n))
        if self.outside:
            out.append("<p>not modelled: %d equation%s outside any shard_map (the host's)</p>" % (
                self.outside, "" if self.outside == 1 else "s"))
        out.append("</div>")
        return "".join(out) + (self.svg or "")


def load(source, *, max_memory=0, max_steps=0):
    """A Program from shm text, a .shm file's path, or any object whose
    str() is program text; its top-level statements are run."""
    return Program(max_memory, max_steps).exec(source)


def check(source):
    """The diagnostics of shm text or a file, without running it: [] when
    it is a correct program."""
    try:
        Program()._load(source)
    except Error as e:
        return e.diagnostics
    return []


_JAXPR_START = re.compile(r"\s*(let\b|\{\s*lambda\b)")


def run_jaxpr(jaxpr, *args, mesh=None, name="jaxpr"):
    """Run what jax.make_jaxpr printed (its text, or the ClosedJaxpr
    itself: anything whose str() is the text) on args.  mesh, a dict
    {axis: size}, declares a mesh for a jaxpr whose collectives name axes
    without a shard_map around them (as make_jaxpr with axis_env)."""
    text = str(jaxpr).strip()
    if not _JAXPR_START.match(text):
        raise ValueError("not a jaxpr: it should start with '{ lambda' (what jax.make_jaxpr prints)")
    prog = Program()
    pre = ""
    if mesh:
        pre = "mesh %s_mesh = {%s}\n" % (name, ", ".join("%s: %d" % (a, n) for a, n in mesh.items()))
    prog.exec("%sdef %s = %s\n" % (pre, name, text), "<jaxpr>")
    return prog.call(name, *args)


def session(shell=None):
    """The %%shm session of an IPython shell (the current one by default):
    a Program."""
    from ._magic import session as shell_session
    return shell_session(shell)


def load_ipython_extension(ipython):
    """%load_ext shmapi: the %%shm cell magic (shmapi._magic)."""
    from ._magic import register
    register(ipython)
