#!/usr/bin/env python3
"""Make docs/cookbook.md and its pictures (docs/img/cookbook_*.svg) from
the recipes in examples/parallel/, by running them under the cost model.

    docs/gen_cookbook.py                 rewrite docs/cookbook.md and the pictures
    docs/gen_cookbook.py --check         exit 1 if any of them differs
    docs/gen_cookbook.py --stdout        print the chapter instead

SHMAPI (default build/shmapi) is the interpreter.  Every number in the
chapter comes from a run made here: nothing is typed in but the sizes,
the hardware chosen and the published figures quoted (with their
sources), so a change to the cost model or to a recipe changes the
chapter, and tests/docs/cookbook.test.py fails until it is made again.

A recipe is a file examples/parallel/NAME.shm with a header line

    # cookbook: recipe=N order=K title="..."

and, when it can be modelled at real sizes, a line

    # cookbook-call: FN[STATIC=EXPR, ...] x tgt w1 w2

whose {EXPR}s are Python expressions of the chapter's sizes (B, T, D,
F, L: model.shm's; N: the devices; M: the microbatches of a data
replica); "# cookbook-picture: L=8" changes the sizes of the run its
picture is drawn from, when --abstract cannot draw it (see PICTURE), and
"# cookbook-picture: none" draws none (a run whose timeline has too many
events for a picture in the repository).  The chapter models the recipe's definitions (the file above
its line "# ---- the recipe at small sizes") with model.shm's make_data
at those sizes and that call, under --abstract.  Recipes without a
cookbook-call line are modelled as they stand (their own small sizes).
examples/parallel/README.md must list every recipe.  Python standard
library only.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARALLEL = "examples/parallel"
OUTPUT = "docs/cookbook.md"
IMG = "docs/img"
MARKER = "# ---- the recipe at small sizes"

# The chapter's model: model.shm's residual MLP stack at these sizes.
MODEL = dict(B=64, T=1024, D=2048, F=8192, L=16)
# Where it runs: (preset, devices, how the chapter names it).
TARGETS = [("tpu-v5e", 16, "TPU v5e, 16 chips"),
           ("h100", 8, "H100, one node of 8"),
           ("h100", 32, "H100, 4 nodes of 8")]
# The sweeps: one size changed at a time, on the first target.
SWEEP = [("B", [16, 64, 256], "global batch (sequences)"),
         ("T", [256, 1024, 4096], "sequence length"),
         ("N", [8, 16, 64], "devices")]
# A recipe whose --abstract run models a cond by its costliest branch
# (a pipeline's schedule depends on the stage) is drawn from a real run
# at these sizes instead, where every device takes its own branch.
# A recipe's header line "# cookbook-picture: L=8" changes some of them.
# (--abstract evaluates the stage index per device since #33, so pipelines
# are drawn from --abstract too, at PICTURE_ABSTRACT's sizes with the
# recipe's picture L when larger: the circular schedule needs L >= 8.)
PICTURE = dict(B=8, T=64, D=32, F=256, L=4, N=4, M=4)
# The other pictures: the chapter's sizes on 4 devices, 4 layers (a
# picture of every event of 16 layers on 16 devices would be megabytes).
PICTURE_ABSTRACT = dict(MODEL, L=4, N=4)
# The scaling book's compute-bound threshold for data parallelism on a
# TPU v5p axis, and the sweep that finds the model's.
V5P_DP_TOKENS = [512, 1024, 2048, 4096, 8192, 16384]


def microbatches(B, N):
    """Microbatches per data replica (pipelines use 4 stages, N/4 replicas)."""
    per = B // max(1, N // 4)
    return max(1, min(8, per))


# ---- recipes ---------------------------------------------------------------------

def readme_rows():
    """The recipes examples/parallel/README.md lists: {name: (recipe, strategy)},
    from each table row whose file column is a `NAME.shm`."""
    rows = {}
    with open(os.path.join(ROOT, PARALLEL, "README.md")) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and re.fullmatch(r"`[A-Za-z0-9_]+\.shm`", cells[1]):
                num = re.match(r"\d+", cells[0])
                rows[cells[1][1:-5]] = (int(num.group(0)) if num else 0, cells[2])
    return rows


def recipes():
    """Every recipe: the files README.md lists and those with a
    `# cookbook:` header line (either is enough; the header, when there is
    one, gives the title and the order)."""
    listed = readme_rows()
    out = []
    for fn in sorted(os.listdir(os.path.join(ROOT, PARALLEL))):
        if not fn.endswith(".shm"):
            continue
        name = fn[:-4]
        with open(os.path.join(ROOT, PARALLEL, fn)) as f:
            text = f.read()
        m = re.search(r'^# cookbook: recipe=(\d+) order=(\d+) title="([^"]+)"', text, re.M)
        if not m and name not in listed:
            continue
        if m:
            recipe, order, title = int(m.group(1)), int(m.group(2)), m.group(3)
        else:
            recipe, order = listed[name][0], 0
            title = listed[name][1].split(":")[0]
        call = re.search(r"^# cookbook-call: (.+)$", text, re.M)
        pic = re.search(r"^# cookbook-picture: (.+)$", text, re.M)
        picture = dict(PICTURE)
        if pic and pic.group(1).strip() == "none":
            picture = None
        elif pic:
            for kv in pic.group(1).split(","):
                k, v = kv.split("=")
                picture[k.strip()] = int(v)
        head = []
        for line in text.splitlines():
            if not line.startswith("#") or line.startswith("# cookbook") or line.startswith("#   build/"):
                break
            head.append(line[1:].strip())
        summary = " ".join(head).split(". ")[0].rstrip(".") + "." if head else listed.get(name, (0, ""))[1]
        out.append(dict(name=name, recipe=recipe, order=order, title=title, picture=picture,
                        call=call.group(1) if call else None, text=text, summary=summary))
    out.sort(key=lambda r: (r["recipe"], r["order"], r["name"]))
    return out


def check_readme(rs):
    listed = readme_rows()
    missing = [r["name"] for r in rs if r["name"] not in listed]
    if missing:
        raise SystemExit("examples/parallel/README.md does not list: " + ", ".join(missing))


def definitions(text):
    cut = text.find(MARKER)
    return text if cut < 0 else text[:cut]


def fill(call, sizes):
    env = dict(sizes)
    return re.sub(r"\{([^}]+)\}", lambda m: str(eval(m.group(1), {}, env)), call)


# ---- running -------------------------------------------------------------------------

class Runner:
    def __init__(self, shmapi):
        self.shmapi = shmapi
        self.dir = tempfile.mkdtemp(prefix="cookbook_")
        for fn in os.listdir(os.path.join(ROOT, PARALLEL)):
            if fn.endswith(".shm"):
                with open(os.path.join(ROOT, PARALLEL, fn)) as f:
                    text = f.read()
                with open(os.path.join(self.dir, fn), "w") as f:
                    f.write(definitions(text))

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run(self, args, program=None, path=None, name="run.shm"):
        """Run program (written as NAME in the scratch folder, which a
        picture's title shows) or the file path (relative to the root)."""
        cwd = ROOT
        if program is not None:
            cwd, path = self.dir, name
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(program)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", LC_ALL="C")
        p = subprocess.run([self.shmapi] + list(args) + [path], capture_output=True, text=True,
                           env=env, cwd=cwd, timeout=900)
        if p.returncode != 0:
            raise SystemExit("%s %s failed:\n%s" % (self.shmapi, " ".join(args), p.stderr))
        return p.stdout

    def hardware(self, name):
        path = os.path.join(self.dir, name + ".json")
        self.run(["--hardware", name, "--save-hardware", path], program="x = 1\n")
        with open(path) as f:
            return json.load(f)


def real_size_program(r, sizes):
    return ('import "%s.shm"\n' % r["name"]
            + "x, tgt, w1, w2 = make_data[B={B}, T={T}, D={D}, F={F}, L={L}]\n".format(**sizes)
            + "l, d1, d2 = %s\n" % fill(r["call"], sizes))


# ---- the report ------------------------------------------------------------------------

UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
BYTES = {"B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
NUM = r"(0|[-+0-9.e]+ (?:s|ms|us|ns))"


def seconds(s):
    if s == "0":
        return 0.0
    v, u = s.split()
    return float(v) * UNITS[u]


def nbytes(s):
    if s == "0":
        return 0.0
    v, u = s.split()
    return float(v) * BYTES[u]


def parse(text):
    """The numbers of a --time report: the worst device of each column."""
    r = dict(time=None, compute=0.0, comm=0.0, exposed=0.0, idle=0.0, hbm=0.0, sent=0.0,
             devices=0, notes=0, fits=True, mesh="")
    row = re.compile(r"^\s+(\d+)(?:-(\d+))?\s+" + NUM + r"\s+" + NUM + r"\s+" + NUM + r"\s+" + NUM
                     + r"\s+(0|[0-9.]+ (?:B|kB|MB|GB|TB))$")
    for line in text.splitlines():
        m = re.match(r"modelled on \S+: (.+)$", line)
        if m:
            r["time"] = seconds(m.group(1))
        m = re.match(r"mesh (.+)$", line)
        if m and not r["mesh"]:
            r["mesh"] = m.group(1)
        m = row.match(line)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            r["devices"] = max(r["devices"], hi + 1)
            for k, g in zip(("compute", "comm", "exposed", "idle"), m.groups()[2:6]):
                r[k] = max(r[k], seconds(g))
            r["hbm"] = max(r["hbm"], nbytes(m.group(7)))
        m = re.match(r"collective bytes sent, all devices: (\d+)", line)
        if m:
            r["sent"] = float(m.group(1))
        if line.startswith("data-dependent:"):
            r["notes"] += 1
        if line.startswith("does not fit:"):
            r["fits"] = False
    if r["time"] is None:
        raise SystemExit("no modelled time in:\n" + text)
    return r


def ftime(s):
    for u, k in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if s >= k or u == "ns":
            return "%.4g %s" % (s / k, u) if s else "0"
    return "0"


def fbytes(b):
    for u, k in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0)):
        if b >= k or u == "B":
            return "%.4g %s" % (b / k, u) if b else "0"
    return "0"


def useful_flops(s):
    """The model's FLOPs of one step: 4 D F per token and layer forward, twice that backward."""
    return 12.0 * s["L"] * s["D"] * s["F"] * s["B"] * s["T"]


# ---- the chapter --------------------------------------------------------------------------

def link(r):
    return "[`%s.shm`](../%s/%s.shm)" % (r["name"], PARALLEL, r["name"])


def table_for(runner, rs, hw, n, peaks):
    sizes = dict(MODEL, N=n)
    sizes["M"] = microbatches(sizes["B"], n)
    rows, marks = [], []
    for r in rs:
        if not r["call"]:
            continue
        rep = parse(runner.run(["--abstract", "--time", "--hardware", hw], real_size_program(r, sizes)))
        mfu = useful_flops(sizes) / (rep["time"] * n * peaks["f32"])
        note = ""
        if rep["notes"]:
            note = " *"
            marks.append(r["title"])
        fit = "" if rep["fits"] else " (does not fit)"
        mesh, _, where = rep["mesh"].partition(" on ")
        rows.append("| %s%s | `%s` on %s | %s | %s | %s | %s%s | %s | %.0f%% |" % (
            r["title"], note, mesh, where.split(":")[0], ftime(rep["time"]), ftime(rep["compute"]),
            ftime(rep["exposed"]), fbytes(rep["hbm"]), fit, fbytes(rep["sent"] / max(1, rep["devices"])),
            100 * mfu))
    head = ("| strategy | mesh | step | compute | exposed comm | peak HBM / device | sent / device | MFU |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- |")
    return head + "\n" + "\n".join(rows), marks


def own_size_table(runner, rs):
    """The recipes without a cookbook-call line, run as they stand on each preset."""
    rest = [r for r in rs if not r["call"]]
    if not rest:
        return ""
    hws = sorted({t[0] for t in TARGETS})
    out = ["| strategy | mesh | " + " | ".join("step, exposed comm, peak HBM on %s" % h for h in hws) + " |",
           "| --- | --- |" + " --- |" * len(hws)]
    for r in rest:
        cells, mesh = [], ""
        for hw in hws:
            rep = parse(runner.run(["--time", "--hardware", hw], path="%s/%s.shm" % (PARALLEL, r["name"])))
            mesh = rep["mesh"].split(" on ")[0]
            cells.append("%s, %s, %s" % (ftime(rep["time"]), ftime(rep["exposed"]), fbytes(rep["hbm"])))
        out.append("| %s | `%s` | %s |" % (r["title"], mesh, " | ".join(cells)))
    return "\n".join(out)


def sweep_for(runner, rs, hw, peaks):
    out = []
    for key, values, what in SWEEP:
        head = "| strategy | " + " | ".join("%s = %d" % (key, v) for v in values) + " |"
        out.append("Changing the %s (%s; the rest as above), on %s: step time, and peak HBM per device"
                   % (what, key, hw))
        out.append("")
        out.append(head)
        out.append("| --- |" + " --- |" * len(values))
        for r in rs:
            if not r["call"]:
                continue
            cells = []
            for v in values:
                sizes = dict(MODEL, N=16)
                sizes[key] = v
                sizes["M"] = microbatches(sizes["B"], sizes["N"])
                rep = parse(runner.run(["--abstract", "--time", "--hardware", hw],
                                       real_size_program(r, sizes)))
                cells.append("%s, %s%s" % (ftime(rep["time"]), fbytes(rep["hbm"]),
                                           "" if rep["fits"] else " (does not fit)"))
            out.append("| %s | %s |" % (r["title"], " | ".join(cells)))
        out.append("")
    return "\n".join(out)


def pictures(runner, rs, write):
    """Draw each recipe's timeline; returns (recipe, path, how) rows."""
    out = []
    for r in rs:
        if r["picture"] is None:
            continue
        path = "%s/cookbook_%s.svg" % (IMG, r["name"])
        tmp = os.path.join(runner.dir, "pic_%s.svg" % r["name"])
        how = ""
        if r["call"]:
            sizes = dict(MODEL, N=16)
            sizes["M"] = microbatches(sizes["B"], sizes["N"])
            rep = parse(runner.run(["--abstract", "--time"], real_size_program(r, sizes)))
            sizes = dict(PICTURE_ABSTRACT, L=max(PICTURE_ABSTRACT["L"], r["picture"]["L"]))
            sizes["M"] = microbatches(sizes["B"], sizes["N"])
            prog = real_size_program(r, sizes)
            if rep["notes"]:
                sizes = dict(r["picture"])
                prog = real_size_program(r, sizes)
                runner.run(["--time", "--trace", tmp], prog, name=r["name"] + "_run.shm")
                how = ("run at B=%(B)d, T=%(T)d, D=%(D)d, F=%(F)d, L=%(L)d on %(N)d devices, M=%(M)d"
                       % sizes)
            else:
                runner.run(["--abstract", "--time", "--trace", tmp], prog, name=r["name"] + "_sized.shm")
                how = "the chapter's sizes but L=%(L)d, on %(N)d devices, --abstract" % sizes
        else:
            runner.run(["--time", "--trace", tmp], path="%s/%s.shm" % (PARALLEL, r["name"]))
            how = "the recipe's own sizes"
        with open(tmp) as f:
            write(path, f.read())
        out.append((r, path, how))
    return out


def bubble_rows(runner, rs):
    """Each pipeline's bubble read off a run's trace (4 stages, one data
    replica), beside (p - 1) / (v m + p - 1), v the chunks a device holds
    (its cookbook-call's v=, else 1)."""
    out = []
    for r in rs:
        if not r["name"].startswith("pp_") or not r["call"]:
            continue
        vm = re.search(r"\bv=(\d+)", r["call"])
        v = int(vm.group(1)) if vm else 1
        for m in (1, 4, 16):
            if v > 1 and m % 4:
                continue                       # the circular schedule takes groups of p
            sizes = dict(r["picture"], B=r["picture"]["B"] // r["picture"]["M"] * m, N=4, M=m)
            tr = os.path.join(runner.dir, "bubble.json")
            runner.run(["--time", "--trace", tr], real_size_program(r, sizes))
            with open(tr) as f:
                ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
            end = max(e["ts"] + e["dur"] for e in ev)
            busy = {}
            for e in ev:
                if e["tid"] == 0:
                    busy[e["pid"]] = busy.get(e["pid"], 0.0) + e["dur"]
            idle = [1 - x / end for x in busy.values()]
            out.append("| %s, p = 4, v = %d, m = %d | %.3f | %.3f to %.3f |"
                       % (r["title"], v, m, 3 / (v * m + 3), min(idle), max(idle)))
    return out


def peaks_v5p(runner):
    return runner.hardware("tpu-v5p")["peak_flops"]["f32"]


def dp_threshold(runner, rs):
    """The smallest tokens per device at which DP's communication fits under its compute on a v5p axis."""
    dp = [r for r in rs if r["name"] == "dp" and r["call"]]
    if not dp:
        return None
    rows, first, mesh = [], None, ""
    for tok in V5P_DP_TOKENS:
        sizes = dict(MODEL, N=16, B=16, T=tok)          # one sequence of tok tokens a device
        sizes["M"] = 1
        rep = parse(runner.run(["--abstract", "--time", "--hardware", "tpu-v5p"], real_size_program(dp[0], sizes)))
        rows.append((tok, rep["comm"], rep["compute"], useful_flops(sizes) / 16 / peaks_v5p(runner)))
        mesh = rep["mesh"]
        if first is None and rep["comm"] <= rep["compute"]:
            first = tok
            if len(rows) > 1:                      # where compute meets comm, linearly between rows
                (t0, m0, c0, _), (t1, m1, c1, _) = rows[-2], rows[-1]
                first = t0 + (t1 - t0) * (m0 - c0) / ((c1 - c0) - (m1 - m0))
    return rows, first, mesh


def chapter(runner, write):
    rs = recipes()
    check_readme(rs)
    peaks = {hw: runner.hardware(hw)["peak_flops"] for hw in sorted({t[0] for t in TARGETS} | {"tpu-v5p"})}
    L = []
    L.append("# The parallelism cookbook")
    L.append("")
    L.append("Every strategy people build with `shard_map`, as a program you can run, step")
    L.append("through in the debugger, check against one device, and cost on named")
    L.append("hardware. The recipes are in [examples/parallel/](../examples/parallel/README.md);")
    L.append("each runs a forward and backward pass on inputs from the PRNG and prints")
    L.append("whether its loss and gradients equal the same model's on one device. This")
    L.append("chapter is written by `docs/gen_cookbook.py` from the recipes, by running")
    L.append("them under the cost model ([cost.md](cost.md)); `tests/docs/cookbook.test.py`")
    L.append("fails when it is not what the script makes now.")
    L.append("")
    L.append("| recipe | strategy | file | what it is |")
    L.append("| --- | --- | --- | --- |")
    for r in rs:
        L.append("| %d | %s | %s | %s |" % (r["recipe"], r["title"], link(r), r["summary"]))
    L.append("")
    L.append("## One model, every strategy")
    L.append("")
    L.append("The model is [model.shm](../examples/parallel/model.shm)'s stack of L residual MLP")
    L.append("blocks (`x + gelu(x w1) w2`, a transformer layer's feed-forward half) with a")
    L.append("mean-squared-error loss, in f32, at B = %(B)d sequences of T = %(T)d tokens,"
             % MODEL)
    L.append("D = %d, F = %d, L = %d layers (%.3g parameters). Each recipe's step"
             % (MODEL["D"], MODEL["F"], MODEL["L"], 2.0 * MODEL["L"] * MODEL["D"] * MODEL["F"]))
    L.append("function is called at these sizes and modelled with `--abstract`; pipelines")
    L.append("run 4 stages with N/4 data replicas and M = min(8, B / replicas) microbatches.")
    L.append("*Step* is the modelled time of one step, *compute* and *exposed comm* the")
    L.append("busiest device's compute and the communication it waited for, *sent* the")
    L.append("collective bytes per device, and *MFU* the model's FLOPs (12 D F per token")
    L.append("and layer) over the step time and the devices' f32 peak.")
    L.append("")
    marks = set()
    for hw, n, what in TARGETS:
        L.append("### %s (`--hardware %s`, %d devices)" % (what, hw, n))
        L.append("")
        t, mk = table_for(runner, rs, hw, n, peaks[hw])
        marks.update(mk)
        L.append(t)
        L.append("")
    own = own_size_table(runner, rs)
    if own:
        L.append("### The recipes at their own sizes")
        L.append("")
        L.append("These recipes have no `cookbook-call` line (a step function of the chapter's")
        L.append("sizes): they are run as they stand, at the small sizes they check against")
        L.append("one device, with `--time`.")
        L.append("")
        L.append(own)
        L.append("")
    if marks:
        L.append("\\* `--abstract` models every device alike: a `cond` on the stage index")
        L.append("(which microbatch, forward or backward) is modelled as its costliest branch")
        L.append("on every stage, so the bubble counts as compute. The step time is then that")
        L.append("of a schedule whose every tick costs the costliest stage's work: the step")
        L.append("time of GPipe and of the circular schedule, whose stages all run the same")
        L.append("phase each tick, but an upper bound for 1F1B. The pictures below and the")
        L.append("bubble table come from runs, where each stage takes its own branch.")
        L.append("")
    L.append("## Timelines")
    L.append("")
    L.append("`--trace FILE.svg` draws each device's compute and communication streams.")
    L.append("")
    for r, path, how in pictures(runner, rs, write):
        L.append("%s (%s, %s):" % (r["title"], link(r), how))
        L.append("")
        L.append("![%s](%s)" % (r["title"], os.path.relpath(path, "docs")))
        L.append("")
    rows = bubble_rows(runner, rs)
    if rows:
        L.append("## The pipeline bubble")
        L.append("")
        L.append("The share of the step a stage's compute stream is idle, read off the")
        L.append("`--trace` JSON of runs on a TPU v5e (4 stages, T = %(T)d, D = %(D)d, F = %(F)d),"
                 % PICTURE)
        L.append("beside (p - 1) / (v m + p - 1): Huang et al.'s for GPipe and 1F1B (v = 1),")
        L.append("Narayanan et al.'s for v chunks a device. At these small sizes the")
        L.append("ppermutes' latency adds to every tick, so a stage idles longer than the")
        L.append("formula says; `tests/examples/parallel/bubble.test.py` makes the links free")
        L.append("and finds GPipe's and the circular schedule's formula to 0.025. 1F1B idles")
        L.append("more than its formula: the recipe runs one forward or one backward per stage")
        L.append("per tick, and every tick each stage exchanges with its neighbours (a")
        L.append("ppermute waits for the pair at its two ends, and a wait passes on one stage")
        L.append("per tick), so a tick in which some stages run a backward and others a")
        L.append("forward lasts a backward on all of them. A schedule whose tick runs one")
        L.append("forward and one backward on every stage would not pay this.")
        L.append("")
        L.append("| schedule | (p - 1) / (v m + p - 1) | measured, per stage |")
        L.append("| --- | --- | --- |")
        L.extend(rows)
        L.append("")
    L.append("## When the batch, the sequence or the mesh changes")
    L.append("")
    L.append(sweep_for(runner, rs, TARGETS[0][0], peaks))
    L.append("## Published numbers beside the model's")
    L.append("")
    th = dp_threshold(runner, rs)
    if th:
        rows, first, mesh = th
        L.append("The scaling book (\"How to Parallelize a Transformer for Training\") finds data")
        L.append("parallelism compute-bound on a TPU v5p axis when each device holds more than")
        L.append("C / W_ici = 2550 tokens, for bf16 weights and gradients. The recipes send f32")
        L.append("gradients, twice the bytes, so the same derivation gives 5100. The model, on")
        L.append("16 v5p chips (`dp.shm`, the chapter's D, F and L, one sequence per chip):")
        L.append("")
        L.append("| tokens / device | communication | compute | the matmuls alone at peak |")
        L.append("| --- | --- | --- | --- |")
        for tok, comm, comp, mm in rows:
            L.append("| %d | %s | %s | %s |" % (tok, ftime(comm), ftime(comp), ftime(mm)))
        L.append("")
        L.append("Communication fits under compute from about %s tokens per device"
                 % ("%.0f" % first if first else "none of these"))
        L.append("(interpolated between the rows). Two things of the model move it from the")
        L.append("book's figure: its compute includes the elementwise work (gelu and the")
        L.append("residual adds, unfused, at HBM bandwidth), which the book's count of matmul")
        L.append("FLOPs leaves out (compare the last two columns), and the collective runs")
        L.append("where the model places the mesh: `mesh %s`." % mesh)
        L.append("")
    L.append("Megatron-LM reports, for its tensor-parallel MLP and attention on V100s,")
    L.append("39 TFLOP/s on one GPU (30% of peak) and 76% weak-scaling efficiency on 512")
    L.append("GPUs (Shoeybi et al. 2019); with pipelining, a 1-trillion-parameter GPT on")
    L.append("3072 A100s ran at 52% of peak (Narayanan et al. 2021). The MFU column above")
    L.append("is the model's figure for this chapter's (smaller, f32) model: it has no")
    L.append("kernel launch or memory-layout overheads but runs every equation as its own")
    L.append("kernel, without fusion, so elementwise work costs its full HBM traffic.")
    L.append("")
    L.append("## Making the chapter")
    L.append("")
    L.append("<!-- shell -->")
    L.append("```")
    L.append("docs/gen_cookbook.py            # rewrites docs/cookbook.md and docs/img/cookbook_*.svg")
    L.append("docs/gen_cookbook.py --check    # what tests/docs/cookbook.test.py runs")
    L.append("```")
    L.append("")
    return "\n".join(L)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    shmapi = os.path.abspath(os.environ.get("SHMAPI", os.path.join(ROOT, "build", "shmapi")))
    files = {}

    def write(path, text):
        files[path] = text

    runner = Runner(shmapi)
    try:
        files[OUTPUT] = chapter(runner, write)
    finally:
        runner.close()
    if mode == "--stdout":
        sys.stdout.write(files[OUTPUT])
        return 0
    stale = []
    for fn in sorted(os.listdir(os.path.join(ROOT, IMG))):
        path = "%s/%s" % (IMG, fn)
        if fn.startswith("cookbook_") and path not in files:
            stale.append(path)                     # a picture of a recipe no longer there
            if mode != "--check":
                os.remove(os.path.join(ROOT, path))
    for path, text in sorted(files.items()):
        full = os.path.join(ROOT, path)
        old = open(full).read() if os.path.exists(full) else None
        if old != text:
            stale.append(path)
            if mode != "--check":
                with open(full, "w") as f:
                    f.write(text)
    if mode == "--check":
        for p in stale:
            print("%s is not what docs/gen_cookbook.py makes: run it" % p)
        return 1 if stale else 0
    for p in stale:
        print("wrote", p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
