#!/usr/bin/python3
"""bench/harness.py -- run the shmapi benchmark suite and its references.

bench/run builds shmapi (release) and bench/ref/ref, then calls

    harness.py --shmapi BIN --ref REFBIN [--reps N] [--out RESULTS.md]

Every workload is a .shm program under bench/workloads/.  What is timed
inside a program is marked by lines it prints: `print "@@ begin"` and
`print "@@ end"` (and any other "@@ NAME" pairs).  shmapi runs under
`stdbuf -oL`, so each print reaches the pipe as it happens; the harness
stamps every line the moment it arrives, and a region's time is the gap
between its two stamps.  Input creation, splitting into blocks and output
assembly stay outside the region; start-up is measured on its own.

Each reference is measured in the same run, interleaved with shmapi's
repetitions (shmapi, reference, shmapi, reference, ...), so a ratio holds
on a noisy machine; a first warm-up round of both is dropped.  Medians are
reported; peak RSS is shmapi's ru_maxrss as `ref spawn` reads it from
wait4 (a child forked from Python would inherit Python's peak).

Exit status: 0 when every workload ran and produced the expected values
(whether or not it met its target), 1 otherwise.
"""
import argparse
import os
import platform
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
WL = os.path.join(HERE, "workloads")
MiB = 1 << 20
RESOLUTION = 20e-6      # what "@@" stamps can resolve; shorter regions count as this


class Failure(Exception):
    pass


# ---- running things ---------------------------------------------------------

def run_marked(ref, argv, timeout=300):
    """Run argv with stdout line-buffered into a pipe, through `ref spawn`
    (which reports the peak RSS of argv alone, and its page faults, kept in
    run_marked.faults).  Returns (stamps, text, stderr, rc, maxrss_kib,
    wall): stamps maps each "@@ NAME" line to the
    perf_counter times it arrived, in order (a line printed by a function
    called several times arrives several times)."""
    with tempfile.TemporaryFile() as errf, tempfile.NamedTemporaryFile("r") as rssf:
        t0 = time.perf_counter()
        p = subprocess.Popen([ref, "spawn", rssf.name, "stdbuf", "-oL"] + argv, stdout=subprocess.PIPE,
                             stderr=errf, stdin=subprocess.DEVNULL, bufsize=0, start_new_session=True)
        fd = p.stdout.fileno()
        stamps, chunks, pending = {}, [], b""
        deadline = t0 + timeout
        timed_out = False
        while True:
            left = deadline - time.perf_counter()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                timed_out = True
                os.killpg(p.pid, signal.SIGKILL)
                break
            data = os.read(fd, 1 << 16)
            t = time.perf_counter()
            if not data:
                break
            chunks.append(data)
            pending += data
            *lines, pending = pending.split(b"\n")
            for ln in lines:
                if ln.startswith(b"@@ "):
                    stamps.setdefault(ln[3:].decode().strip(), []).append(t)
        _, status, _ = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        p.stdout.close()
        errf.seek(0)
        err = errf.read().decode(errors="replace")
        rss = rssf.read().strip()
    if timed_out:
        raise Failure(f"{' '.join(argv)}: no end after {timeout} s (killed)")
    text = b"".join(chunks).decode(errors="replace")
    run_marked.faults = int(rss.split()[1]) if rss else None
    return stamps, text, err, p.returncode, int(rss.split()[0]) if rss else None, wall


def run_plain(argv, timeout=300):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise Failure(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()[-500:]}")
    return r.stdout


def spawn_wall(argv):
    """Wall time of one spawn-to-exit of argv (stdout to /dev/null)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        fa = [(os.POSIX_SPAWN_DUP2, devnull, 1)]
        t0 = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=fa)
        _, status, _ = os.wait4(pid, 0)
        t1 = time.perf_counter()
    finally:
        os.close(devnull)
    if os.waitstatus_to_exitcode(status) != 0:
        raise Failure(f"{' '.join(argv)} failed")
    return t1 - t0


def numbers(text):
    """The numbers of the last printed array: the text after the last "@@" line."""
    tail = text.rsplit("@@ ", 1)[-1].split("\n", 1)[-1] if "@@ " in text else text
    return np.array([float(x) for x in re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", tail)])


# ---- expected values (NumPy, small) -------------------------------------------

f32 = np.float32


def exp_matmul():
    a2 = (np.arange(2 * 4096, dtype=f32) * f32(5.9604645e-08)).reshape(2, 4096)
    b = (np.arange(4194304, dtype=f32) * f32(2.3841858e-07)).reshape(4096, 1024)
    return (a2.astype(np.float64) @ b.astype(np.float64))[:, :4].ravel(), 1e-4


def exp_conv_resnet():
    """y[0, 0, 0:2, 0:4] of bench/workloads/conv_resnet.shm, in float64."""
    x = (np.arange(1605632, dtype=f32) * f32(6.1035156e-07)).reshape(8, 56, 56, 64).astype(np.float64)
    w = (np.arange(36864, dtype=f32) * f32(2.7126736e-05)).reshape(3, 3, 64, 64).astype(np.float64)
    xp = np.pad(x[0, :2, :3], ((1, 0), (1, 0), (0, 0)))          # rows -1..1, columns -1..2
    out = [np.einsum("ijc,ijco->o", xp[:, j:j + 3], w)[:4] for j in range(2)]
    return np.concatenate(out), 1e-4


def exp_matmul_bf16():
    def bf16(x):                  # round f32 to bf16, nearest even
        u = x.astype(f32).view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
        return u.astype(np.uint32).view(f32)
    a2 = bf16((np.arange(2 * 4096, dtype=f32) * f32(5.9604645e-08)).reshape(2, 4096))
    b = bf16((np.arange(4194304, dtype=f32) * f32(2.3841858e-07)).reshape(4096, 1024))
    return (a2.astype(np.float64) @ b.astype(np.float64))[:, :4].ravel(), 1.6e-2


def exp_matmul_whole():
    # sum(a @ b) = colsum(a) . rowsum(b), exactly in f64
    a = (np.arange(16777216, dtype=f32) * f32(5.9604645e-08)).reshape(4096, 4096).astype(np.float64)
    b = (np.arange(4194304, dtype=f32) * f32(2.3841858e-07)).reshape(4096, 1024).astype(np.float64)
    return np.array([a.sum(axis=0) @ b.sum(axis=1)]), 1e-5


def exp_ew_chain():
    x = np.arange(16777216, dtype=f32) * f32(5.9604645e-08)
    r = np.sqrt(np.maximum(np.exp(np.square(np.tanh(x * f32(2) + f32(1)) - x)), f32(1.5)) / f32(3)) + x
    return np.array([r.astype(np.float64).sum()]), 1e-5


def _x():
    return np.arange(33554432, dtype=f32)


def exp_psum():
    blocks = _x().reshape(8, -1)
    return sum(blocks[k, :4] for k in range(8)), 1e-6


def exp_all_gather():
    return np.tile(_x()[4194300:4194304], 8), 0


def exp_psum_scatter():
    tot = sum(_x().reshape(8, -1)[k] for k in range(8))
    return np.concatenate([tot[k * 524288:k * 524288 + 2] for k in range(8)]), 1e-6


def exp_all_to_all():
    xb = _x().reshape(8, 2048, 2048)         # device j's block
    out = []
    for k in range(8):                       # receiver k: concat_j xb[j][:, k*256:(k+1)*256]
        y = np.concatenate([xb[j][:, k * 256:(k + 1) * 256] for j in range(8)], axis=0)
        out.append(y[2047:2049, 0:2])
    return np.concatenate(out).ravel(), 0


def exp_ppermute():
    xb = _x().reshape(8, -1)
    return np.concatenate([xb[(k - 1) % 8][:2] for k in range(8)]), 0


def exp_big_mesh(n=256):
    x = np.arange(n * n * 4, dtype=f32).reshape(n, n, 4)
    y = np.roll(x, 1, axis=1)
    return np.array([(x + y).astype(np.float64).sum()]), 1e-5


def exp_replicated():
    x = np.arange(1048576, dtype=f32) * f32(9.536743e-07)
    a = x * f32(2.0)
    b = a + f32(1.0)
    c = np.tanh(b)
    d = c - x
    e = d * d
    g = np.exp(e)
    h = np.maximum(g, f32(1.5))
    p = h / f32(3.0)
    q = np.sqrt(p)
    r = q + x
    return np.array([r.astype(np.float64).sum()]), 1e-5


# name, program, MiB the collective must read, MiB it must write, expected values
COLLECTIVES = (
    ("psum", "psum.shm", 128, 16, exp_psum),
    ("all_gather", "all_gather.shm", 128, 128, exp_all_gather),
    ("psum_scatter", "psum_scatter.shm", 128, 16, exp_psum_scatter),
    ("all_to_all", "all_to_all.shm", 128, 128, exp_all_to_all),
    ("ppermute", "ppermute.shm", 128, 128, exp_ppermute),
)


def check(name, text, expected):
    want, rtol = expected
    got = numbers(text)
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=0):
        raise Failure(f"{name}: wrong result\n  got  {got[:8]}...\n  want {want[:8]}...")


# ---- the suite ------------------------------------------------------------------

def loads(xs):
    """The machine's load average (1 min) over a row's repetitions."""
    return f"; load {min(xs):.1f}–{max(xs):.1f}" if xs else ""


def med(xs):
    return statistics.median(xs)


def fmt_t(s):
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


class Suite:
    def __init__(self, a):
        self.shm = a.shmapi
        self.ref = a.ref
        self.allreduce = a.allreduce
        self.reps = a.reps
        self.rows = []
        self.failed = []
        self.extra = []
        self.load0 = os.getloadavg()[0]

    def shm_run(self, wl, regions=("begin", "end")):
        """Run workload wl; t maps each region's begin marker to the
        durations of its occurrences, in order."""
        path = os.path.join(WL, wl)
        stamps, text, err, rc, rss, wall = run_marked(self.ref, [self.shm, path])
        if rc != 0:
            raise Failure(f"shmapi {wl} exited {rc}:\n{err.strip()[-800:]}")
        if rss is None:
            raise Failure(f"shmapi {wl}: no peak RSS reported by `ref spawn`")
        t = {}
        for k in range(0, len(regions), 2):
            b, e = regions[k], regions[k + 1]
            if b not in stamps or e not in stamps or len(stamps[b]) != len(stamps[e]):
                raise Failure(f"shmapi {wl}: markers '@@ {b}' / '@@ {e}' not printed in pairs")
            # both lines in one read: the region took less than the
            # harness can resolve (the pipe's wake-up, tens of µs)
            t[b] = [max(te - tb, RESOLUTION) for tb, te in zip(stamps[b], stamps[e])]
        return t, text, rss, wall

    def row(self, workload, shm_t, refname, ref_t, ratio, target, ok, rss_kib, note=""):
        self.rows.append(dict(workload=workload, shm=shm_t, refname=refname, ref=ref_t, ratio=ratio,
                              target=target, ok=ok, rss=rss_kib, note=note))
        flag = "—" if ok is None else ("PASS" if ok else "MISS")
        rs = "—" if ratio is None else f"{ratio:.2f}×"
        print(f"  {workload:<34} shmapi {fmt_t(shm_t):>10}  ref {fmt_t(ref_t):>10}  {rs:>8}  {flag}",
              flush=True)

    def guarded(self, name, fn):
        try:
            fn()
        except (Failure, subprocess.SubprocessError, OSError, ValueError) as e:
            print(f"  {name}: FAILED: {e}", flush=True)
            self.failed.append(f"{name}: {e}")
            self.rows.append(dict(workload=name, shm=None, refname="", ref=None, ratio=None,
                                  target="", ok=False, rss=None, note="failed to run"))

    def rounds(self):
        """One warm-up round (its results are dropped: it pays for first
        touches of memory, the page cache, lazy loading), then `reps`."""
        return [True] + [False] * self.reps

    # -- matmul_basic
    def matmul(self):
        # The workload runs its statement twice: the second call is the
        # steady state the reference measures (after its own warm-up), the
        # first pays for fresh memory.
        shm_body, shm_first, shm_stmt, refs, rss = [], [], [], [], []
        text = ""
        for warm in self.rounds():
            t, text, r, _ = self.shm_run("matmul_basic.shm", ("begin", "end", "stmt-begin", "stmt-end"))
            out = run_plain([self.ref, "gemm", "1024", "2048", "1024", "8", "2", "1"])
            if warm:
                continue
            if len(t["begin"]) != 2 or len(t["stmt-begin"]) != 2:
                raise Failure("matmul_basic.shm: expected two calls of the statement")
            shm_first.append(t["begin"][0])
            shm_body.append(t["begin"][1])
            shm_stmt.append(t["stmt-begin"][1])
            rss.append(r)
            refs.extend(float(x) for x in out.split())
        check("matmul_basic", text, exp_matmul())
        ref = med(refs)
        gflop = 8 * 2 * 1024 * 2048 * 1024 / 1e9
        self.row("matmul_basic 8 dev (4096²·4096×1024)", med(shm_body), "OpenBLAS: 8 sgemm + psum adds", ref,
                 ref / med(shm_body), "≥ 0.9×", ref / med(shm_body) >= 0.9, max(rss),
                 f"{gflop / med(shm_body):.0f} GFLOP/s vs {gflop / ref:.0f}; the second call, as the "
                 "reference times after its warm-up")
        self.row("  └ first call", med(shm_first), "same", ref, ref / med(shm_first), "(info)", None, max(rss),
                 "its 32 MiB of products go to fresh pages: faults included")
        self.row("  └ whole shard_map statement", med(shm_stmt), "same", ref, ref / med(shm_stmt),
                 "(info)", None, max(rss), "second call, splitting a, b into blocks and assembling c included")

    # -- whole processes against C
    def whole(self, label, wl, refs, expected):
        """shmapi running wl and each C reference of refs, (argv, name,
        label of its row or None for the first, t_max, rss_max), each a
        whole process started through `ref spawn` (wall time from spawn to
        exit, peak RSS from wait4), interleaved per repetition: one row
        per reference, the ratios from the same runs."""
        shm, srss, load, sflt = [], [], [], []
        rs = [{"t": [], "rss": [], "flt": [], "text": ""} for _ in refs]
        text = ""
        for warm in self.rounds():
            load.append(os.getloadavg()[0])
            _, text, err, rc, r, w = run_marked(self.ref, [self.shm, os.path.join(WL, wl)])
            sflt.append(run_marked.faults)
            if rc != 0:
                raise Failure(f"shmapi {wl} exited {rc}:\n{err.strip()[-800:]}")
            for (refargv, *_), got in zip(refs, rs):
                _, got["text"], err, rc, rr, rw = run_marked(self.ref, [self.ref] + refargv)
                got["flt"].append(run_marked.faults)
                if rc != 0:
                    raise Failure(f"ref {' '.join(refargv)} exited {rc}:\n{err.strip()[-800:]}")
                if not warm:
                    got["t"].append(rw)
                    got["rss"].append(rr)
            if warm:
                continue
            shm.append(w)
            srss.append(r)
        check(label, text, expected)
        a, ra = med(shm), med(srss)
        for (refargv, refname, rowlabel, t_max, rss_max), got in zip(refs, rs):
            check(label + f" (C reference {refargv[0]})", got["text"], (expected[0], max(expected[1], 1e-5)))
            b, rb = med(got["t"]), med(got["rss"])
            ok = a <= t_max * b and ra <= rss_max * rb
            self.row(rowlabel or label, a, refname, b, b / a,
                     f"wall ≤ {t_max}× (ratio ≥ {1 / t_max:.2f}×), RSS ≤ {rss_max}×", ok, ra,
                     f"time {a / b:.2f}× the reference's; peak RSS {ra / 1024:.0f} MiB vs {rb / 1024:.0f} MiB "
                     f"({ra / rb:.2f}×); {med(sflt[1:]):.0f} page faults vs {med(got['flt'][1:]):.0f}" + loads(load))

    def whole_matmul(self):
        self.whole("whole process: matmul_basic", "matmul_whole.shm", [
            (["matmul-expert", "2"], "expert C: OpenMP fills, block products accumulated by sgemm (beta = 1), "
             "parallel sum (`ref matmul-expert`)", None, 1.0, 1.1),
            (["matmul-whole", "2"], "C + OpenBLAS, one sgemm (`ref matmul-whole`)", "  └ against one sgemm",
             1.05, 1.2)], exp_matmul_whole())

    def whole_ew(self):
        self.whole("whole process: 10 elementwise ops, f32[16M]", "ew_chain.shm", [
            (["ew-fused", "16777216", "2"], "C -O2, OpenMP, 2 threads, the 10 ops fused by hand into one loop "
             "(`ref ew-fused`)", None, 1.2, 1.2),
            (["ew-chain", "16777216", "2"], "C -O2, OpenMP, 2 threads, one loop per op (`ref ew-chain`)",
             "  └ against one loop per op", 1.2, 1.2)], exp_ew_chain())

    # -- bf16 matmul_basic
    def matmul_bf16(self):
        shm, refs, rss, load = [], [], [], []
        text = ""
        refname = "OpenBLAS sbgemm"
        argv = ["sbgemm", "1024", "2048", "1024", "8", "2", "1"]
        probe = subprocess.run([self.ref] + argv, capture_output=True, text=True)
        if probe.returncode == 3:
            refname = "f32 sgemm (this OpenBLAS has no sbgemm)"
            argv[0] = "gemm"
        for warm in self.rounds():
            load.append(os.getloadavg()[0])
            t, text, r, _ = self.shm_run("matmul_bf16.shm", ("begin", "end", "stmt-begin", "stmt-end"))
            out = run_plain([self.ref] + argv)
            if warm:
                continue
            if len(t["begin"]) != 2:
                raise Failure("matmul_bf16.shm: expected two calls of the statement")
            shm.append(t["begin"][1])
            rss.append(r)
            refs.extend(float(x) for x in out.split())
        check("matmul_bf16", text, exp_matmul_bf16())
        a, b = med(shm), med(refs)
        self.row("bf16 matmul_basic, 8 dev", a, refname, b, b / a, "≥ 0.8×", b / a >= 0.8, max(rss),
                 "the second call, as matmul_basic" + loads(load))

    # -- a ResNet-50 3x3 convolution against im2col + sgemm in C
    def conv_resnet(self):
        shm, refs, rss, load = [], [], [], []
        text = rerr = ""
        argv = ["conv", "8", "56", "56", "64", "64", "1"]
        for warm in self.rounds():
            load.append(os.getloadavg()[0])
            t, text, r, _ = self.shm_run("conv_resnet.shm")
            p = subprocess.run([self.ref] + argv, capture_output=True, text=True, timeout=300)
            if p.returncode:
                raise Failure(f"ref {' '.join(argv)} exited {p.returncode}:\n{p.stderr.strip()[-800:]}")
            if warm:
                continue
            if len(t["begin"]) != 2:
                raise Failure("conv_resnet.shm: expected two calls of the layer")
            shm.append(t["begin"][1])
            rss.append(r)
            refs.extend(float(x) for x in p.stdout.split())
            rerr = p.stderr
        check("conv_resnet", text, exp_conv_resnet())
        check("conv_resnet (C reference)", rerr, exp_conv_resnet())
        a, b = med(shm), med(refs)
        self.row("conv 3x3, f32[8,56,56,64] NHWC", a, "im2col + sgemm in C (`ref conv`)", b, b / a, "≥ 0.8×",
                 b / a >= 0.8, max(rss), "the second call of the layer" + loads(load))

    # -- collectives vs the memcpy floor
    def collective(self, name, wl, read_mib, write_mib, expected):
        """The first call of the collective against a memcpy into fresh
        memory, the later calls (the workload makes four) against a memcpy
        into memory already touched.  Workloads called once (ppermute) get
        the one row of the warm floor."""
        copy = (read_mib + write_mib) * MiB // 2
        first, later, refs, fresh, rss, load = [], [], [], [], [], []
        text = ""
        for warm in self.rounds():
            load.append(os.getloadavg()[0])
            t, text, r, _ = self.shm_run(wl)
            out = run_plain([self.ref, "memcpy", str(copy), "3"])
            outf = run_plain([self.ref, "memcpy-fresh", str(copy), "1"])
            if warm:
                continue
            first.append(t["begin"][0])
            later.extend(t["begin"][1:])
            rss.append(r)
            refs.extend(float(x) for x in out.split())
            fresh.extend(float(x) for x in outf.split())
        check(name, text, expected())
        ref, reff = med(refs), med(fresh)
        gbs = (read_mib + write_mib) * MiB / 1e9
        what = f"{copy // MiB} MiB (= {read_mib}R+{write_mib}W)"
        if not later:
            note = f"{gbs / med(first):.1f} GB/s of minimal traffic vs {gbs / ref:.1f}"
            if med(first) < 0.01 * ref:
                note = "nothing copied (the blocks are shared): the time is the harness's resolution"
            self.row(f"{name} 8 × 16 MiB", med(first), f"memcpy {what}", ref, ref / med(first), "≥ 0.6×",
                     ref / med(first) >= 0.6, max(rss), note + loads(load))
            return
        a, b = med(first), med(later)
        self.row(f"{name} 8 × 16 MiB, first call", a, f"memcpy {what} into fresh memory", reff, reff / a, "≥ 0.8×",
                 reff / a >= 0.8, max(rss), f"{gbs / a:.1f} GB/s of minimal traffic vs {gbs / reff:.1f}" + loads(load))
        self.row(f"{name} 8 × 16 MiB, in a loop", b, f"memcpy {what} into touched memory", ref, ref / b, "≥ 0.6×",
                 ref / b >= 0.6, max(rss), f"calls 2-4; {gbs / b:.1f} GB/s vs {gbs / ref:.1f}")

    def page_faults(self):
        fresh, warm = [], []
        for _ in range(3):
            fresh.extend(float(x) for x in run_plain([self.ref, "memcpy-fresh", str(16 * MiB), "3"]).split())
            warm.extend(float(x) for x in run_plain([self.ref, "memcpy", str(16 * MiB), "3"]).split())
        self.extra.append(("memcpy of 16 MiB into memory already touched", med(warm)))
        self.extra.append(("memcpy of 16 MiB into freshly mapped memory (page faults included)", med(fresh)))

    # -- 100,000 small equations vs the NumPy model
    def small(self):
        shm, refs, rss = [], [], []
        text = out = ""
        model = os.path.join(HERE, "ref", "small_numpy.py")
        for warm in self.rounds():
            t, text, r, _ = self.shm_run("small_eqns.shm")
            out = run_plain([sys.executable, model, "10000"])
            if warm:
                continue
            shm.append(t["begin"][0])
            rss.append(r)
            refs.append(float(out.split()[1]))
        want = numbers(out.split("\n", 1)[1])
        check("small_eqns", text, (want, 1e-5))
        ref = med(refs)
        self.row("100k small eqns (f32[16], 8 dev)", med(shm), "NumPy model (per-device lists)", ref,
                 ref / med(shm), "≥ 40×", ref / med(shm) >= 40, max(rss),
                 f"{med(shm) / 1e5 * 1e9:.0f} ns/equation vs {ref / 1e5 * 1e9:.0f}")

    # -- sort of f32[16M] vs np.sort
    def sort_f32(self):
        shm, refs, rss = [], [], []
        text = out = ""
        model = os.path.join(HERE, "ref", "sort_numpy.py")
        for warm in self.rounds():
            t, text, r, _ = self.shm_run("sort_f32.shm")
            out = run_plain([sys.executable, model, "16777216"])
            if warm:
                continue
            shm.append(t["begin"][0])
            rss.append(r)
            refs.append(float(out.split()[1]))
        want = numbers(out.split("\n", 1)[1])
        check("sort_f32", text, (want, 0))
        ref = med(refs)
        self.row("sort f32[16M] (lax.sort)", med(shm), "NumPy np.sort (default kind)", ref, ref / med(shm),
                 "≥ 1×", ref / med(shm) >= 1, max(rss),
                 f"{16777216 / med(shm) / 1e6:.0f} M elements/s vs {16777216 / ref / 1e6:.0f}; a stable LSD "
                 "radix sort on order-preserving keys, one thread")
    # -- an embedding table: gather and scatter-add of 65,536 rows vs NumPy
    def embedding(self):
        g, sa, refg, refs, rss = [], [], [], [], []
        text = out = ""
        model = os.path.join(HERE, "ref", "embedding_numpy.py")
        for warm in self.rounds():
            t, text, r, _ = self.shm_run("embedding.shm", ("begin", "end", "sbegin", "send"))
            out = run_plain([sys.executable, model])
            if warm:
                continue
            g.append(t["begin"][0])
            sa.append(t["sbegin"][0])
            rss.append(r)
            lines = out.split("\n")
            refg.append(float(lines[0].split()[1]))
            refs.append(float(lines[1].split()[1]))
        check("embedding", text, (numbers(out.split("\n", 2)[2]), 1e-5))
        rg, rs = med(refg), med(refs)
        self.row("gather f32[50000,512], 64k rows", med(g), "np.take(table, ids, axis=0)", rg, rg / med(g), "≥ 1×",
                 rg / med(g) >= 1, max(rss), f"{65536 * 512 * 4 / med(g) / 1e9:.1f} GB/s of rows")
        self.row("scatter-add of 64k rows into it", med(sa), "np.add.at on a copy of the table", rs, rs / med(sa),
                 "≥ 1×", rs / med(sa) >= 1, max(rss), "repeated ids add up")

    # -- 65,536 instances
    def big_mesh(self, wl="big_mesh.shm", n=256, label="mesh 256×256, psum+ppermute f32[4]", t_max=2,
                 rss_max=512):
        walls, body, rss = [], [], []
        text = ""
        for warm in self.rounds():
            t, text, r, w = self.shm_run(wl)
            if warm:
                continue
            walls.append(w)
            body.append(t["begin"][0])
            rss.append(r)
        check(label, text, exp_big_mesh(n))
        w, r = med(walls), max(rss)
        self.row(label, w, "—", None, None, f"< {t_max} s, RSS < {rss_max} MiB",
                 w < t_max and r < rss_max * 1024, r, f"whole run; the body alone {fmt_t(med(body))}; "
                 f"{r * 1024 / (n * n):.0f} bytes of peak RSS per instance")

    def big_mesh_1m(self):
        self.big_mesh("big_mesh_1m.shm", 1024, "mesh 1024×1024, psum+ppermute f32[4]", 0.25, 256)

    # -- a million devices' --trace (JSON and SVG) and --time
    def trace_1m(self):
        prog = os.path.join(WL, "trace_1m.shm")
        with tempfile.TemporaryDirectory() as d:
            for kind in ("json", "svg"):
                path = os.path.join(d, "t." + kind)
                walls, rss, sizes = [], [], []
                for warm in self.rounds():
                    _, text, err, rc, r, w = run_marked(self.ref, [self.shm, "--hardware", "a100", "--trace", path, prog])
                    if rc != 0:
                        raise Failure(f"shmapi --trace {path} exited {rc}:\n{err.strip()[-800:]}")
                    if warm:
                        continue
                    walls.append(w)
                    rss.append(r)
                    sizes.append(os.path.getsize(path))
                if text.strip() != "[1000000.]":
                    raise Failure("trace_1m: the psum printed " + text[:200])
                with open(path) as f:
                    head = f.read(4096)
                if "devices 0-999999 (1000000 devices)" not in head:
                    raise Failure(f"trace_1m: no merged track in the {kind} file:\n" + head[:800])
                w, r, z = med(walls), max(rss), max(sizes)
                self.row(f"--trace .{kind}, mesh {{i: 1M}}, one psum", w, "—", None, None, "RSS < 512 MiB, file < 50 MB",
                         r < 512 * 1024 and z < 50e6, r, f"whole run; the file {z} bytes")
        # --time alone, against the same run without it
        timed, plain = [], []
        for warm in self.rounds():
            _, text, err, rc, _, w = run_marked(self.ref, [self.shm, "--hardware", "a100", "--time", prog])
            if rc != 0:
                raise Failure(f"shmapi --time exited {rc}:\n{err.strip()[-800:]}")
            _, _, err, rc, _, w0 = run_marked(self.ref, [self.shm, prog])
            if rc != 0:
                raise Failure(f"shmapi trace_1m.shm exited {rc}:\n{err.strip()[-800:]}")
            if warm:
                continue
            timed.append(w)
            plain.append(w0)
        a, b = med(timed), med(plain)
        self.row("--time, mesh {i: 1M}, one psum", a, "the run without --time", b, b / a, "—", None, None,
                 f"--time adds {fmt_t(a - b)}")

    # -- the cost model at a real model size: --abstract on a 70B step
    def model_70b(self):
        prog = os.path.join(os.path.dirname(HERE), "examples", "fsdp_tp_70b.shm")
        walls, checks, rss = [], [], []
        text = ""
        for warm in self.rounds():
            _, text, err, rc, r, w = run_marked(self.ref, [self.shm, "--abstract", "--time", prog])
            if rc != 0:
                raise Failure(f"shmapi --abstract --time {prog} exited {rc}:\n{err.strip()[-800:]}")
            _, _, err, rc, _, wc = run_marked(self.ref, [self.shm, "--check", prog])
            if rc != 0:
                raise Failure(f"shmapi --check {prog} exited {rc}:\n{err.strip()[-800:]}")
            if warm:
                continue
            walls.append(w)
            checks.append(wc)
            rss.append(r)
        if not text.startswith("modelled on tpu-v5e: ") or "0-255 " not in text:
            raise Failure("model_70b: not the report of 256 devices:\n" + text[:400])
        w, c, r = med(walls), med(checks), max(rss)
        self.row("70B FSDP x TP step, --abstract", w, "--check of it", c, w / c, "< 5 s, RSS < 256 MiB",
                 w < 5 and r < 256 * 1024, r, "whole run: 80 layers forward and backward on 256 devices")

    # -- replicated input on 4096 instances vs 1
    def replicated(self):
        many, one, rss = [], [], []
        text = ""
        for warm in self.rounds():
            t, text, r, _ = self.shm_run("replicated_4096.shm")
            t1, text1, _, _ = self.shm_run("replicated_1.shm")
            if warm:
                continue
            many.append(t["begin"][0])
            rss.append(r)
            one.append(t1["begin"][0])
        check("replicated_4096", text, exp_replicated())
        check("replicated_1", text1, exp_replicated())
        a, b = med(many), med(one)
        self.row("P() f32[1M], 10 ops, 4096 instances", a, "same on 1 instance", b, b / a,
                 "≤ 2× slower (≥ 0.5×)", b / a >= 0.5, max(rss))

    # -- across ranks (mpirun -np 4)
    def mpirun(self):
        if not self.allreduce or not shutil.which("mpirun"):
            raise Failure("needs mpirun and bench/ref/allreduce.c built with mpicc (Open MPI: bench/run installs it)")
        cmd = ["mpirun", "-np", "4", "--quiet", "--oversubscribe", "--bind-to", "none"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        return cmd

    def ranks_rss(self, name, elems, label, note):
        """A row comparing the largest rank's peak RSS under 4 ranks with one
        process, for workload `name`, which prints sum(k*k*elems, k < 8)."""
        mpirun = self.mpirun()
        wl = os.path.join(WL, name)
        _, t1, err1, rc1, rss1, wall1 = run_marked(self.ref, [self.shm, wl])
        _, t4, err4, rc4, rss4, wall4 = run_marked(self.ref, mpirun + [self.shm, wl])
        if rc1 or rc4:
            raise Failure(f"{name} exited {rc1} / {rc4} under 4 ranks:\n{(err1 + err4)[-800:]}")
        want = sum(float(k) * k * elems for k in range(8))
        for who, text in (("one process", t1), ("4 ranks", t4)):
            got = numbers(text)
            if len(got) != 1 or abs(got[0] - want) > 1e-6 * want:
                raise Failure(f"{name} ({who}) printed {text.strip()!r}, want {want:g}")
        self.row(label, wall4, "1 process", wall1, rss1 / rss4, "rank < 1/3 of 1 process", rss4 < rss1 / 3, rss4,
                 f"largest rank (the wait4 peak of mpirun's children) {rss4 / 1024:.0f} MiB vs one process "
                 f"{rss1 / 1024:.0f} MiB = {rss4 / rss1:.2f}{note}; times whole runs")

    def ranks_memory(self):
        self.ranks_rss("ranks_memory.shm", 16777216, "peak RSS, 8 dev × 2 × 64 MiB, 4 ranks", "")

    def ranks_chain(self):
        self.ranks_rss("ranks_chain.shm", 8388608, "peak RSS, 256 MiB P(i) between shard_maps, 4 ranks",
                       ": the value between the two shard_maps is never assembled on a rank")

    def ranks_psum(self):
        mpirun = self.mpirun()
        wl = os.path.join(WL, "ranks_psum.shm")
        shm, refs, rss = [], [], []
        for warm in self.rounds():
            st, text, err, rc, r, _ = run_marked(self.ref, mpirun + [self.shm, wl])
            if rc:
                raise Failure(f"ranks_psum.shm under 4 ranks exited {rc}:\n{err[-800:]}")
            out = run_plain(mpirun + [self.allreduce, "1048576", "10"])
            if warm:
                continue
            if not all(k in st for k in "abc"):
                raise Failure(f"ranks_psum.shm: markers missing in {text[-300:]!r}")
            a, b, c = st["a"][0], st["b"][0], st["c"][0]
            shm.append(max(((c - b) - (b - a)) / 10, RESOLUTION))
            refs.append(float(out.split()[0]))
            rss.append(r)
        if numbers(text).tolist() != [6.0] * 4 + [12.0] * 4:
            raise Failure(f"ranks_psum.shm printed {text[-200:]!r}")
        a, b = med(shm), med(refs)
        self.row("psum 4 MiB f32 across 4 ranks", a, "MPI_Allreduce, same bytes", b, b / a, "≥ 0.5×",
                 b / a >= 0.5, max(rss), "one psum: (statement with ten psums − the same without) / 10")

    # -- start-up
    def startup(self):
        shm, true = [], []
        n = max(30, 6 * self.reps)
        for _ in range(n):
            shm.append(spawn_wall([self.shm, "-c", "print 1"]))
            true.append(spawn_wall(["/bin/true"]))
        a, b = med(shm), med(true)
        self.row("start-up: shmapi -c 'print 1'", a, "/bin/true", b, None, "< 5 ms median", a < 5e-3, None,
                 f"{fmt_t(a - b)} more than /bin/true")

    def run_all(self):
        print(f"bench: {self.reps} repetitions each", flush=True)
        self.guarded("matmul_basic", self.matmul)
        self.guarded("whole matmul_basic", self.whole_matmul)
        self.guarded("whole ew_chain", self.whole_ew)
        self.guarded("matmul_bf16", self.matmul_bf16)
        self.guarded("conv_resnet", self.conv_resnet)
        for name, wl, r, w, e in COLLECTIVES:
            self.guarded(name, lambda: self.collective(name, wl, r, w, e))
        self.guarded("page faults", self.page_faults)
        self.guarded("small_eqns", self.small)
        self.guarded("sort_f32", self.sort_f32)
        self.guarded("embedding", self.embedding)
        self.guarded("big_mesh", self.big_mesh)
        self.guarded("big_mesh_1m", self.big_mesh_1m)
        self.guarded("trace_1m", self.trace_1m)
        self.guarded("replicated", self.replicated)
        self.guarded("model_70b", self.model_70b)
        self.guarded("startup", self.startup)
        self.guarded("ranks_memory", self.ranks_memory)
        self.guarded("ranks_chain", self.ranks_chain)
        self.guarded("ranks_psum", self.ranks_psum)


# ---- the report -------------------------------------------------------------------

def machine(ref):
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    cpu = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    def cmd(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"
    blas = cmd([ref, "config"]).split("\n")
    return [
        ("CPU", cpu),
        ("cores", str(os.cpu_count())),
        ("kernel", platform.release()),
        ("memory", f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB"),
        ("OpenBLAS", f"{cmd(['pkg-config', '--modversion', 'openblas'])} ({blas[0]}; "
                     f"{blas[1] if len(blas) > 1 else '?'} threads)"),
        ("gcc", cmd(["gcc", "-dumpfullversion"])),
        ("NumPy", f"{np.__version__} (Python {platform.python_version()})"),
    ]


def report(s, out, started):
    lines = []
    w = lines.append
    w("# shmapi benchmark results")
    w("")
    w(f"Written by `bench/run` on {time.strftime('%Y-%m-%d %H:%M:%S %Z')} "
      f"({s.reps} repetitions per workload, medians; the run took {time.time() - started:.0f} s).")
    w("")
    w("| | |")
    w("|---|---|")
    for k, v in machine(s.ref):
        w(f"| {k} | {v} |")
    load1 = os.getloadavg()[0]
    w(f"| load average (1 min) | {s.load0:.2f} at the start, {load1:.2f} at the end |")
    w("")
    if max(s.load0, load1) > 0.5 * (os.cpu_count() or 1):
        w(f"**The machine was busy during this run** (load above half its {os.cpu_count()} cores): "
          "the ratios hold better than the absolute times, since each reference ran interleaved "
          "with shmapi, but multi-threaded OpenBLAS suffers most.")
        w("")
    w("Ratio is reference time ÷ shmapi time: above 1, shmapi is faster.")
    w("")
    w("| workload | shmapi median | reference | reference median | ratio | target | result | peak RSS | notes |")
    w("|---|---:|---|---:|---:|---|---|---:|---|")
    for r in s.rows:
        flag = "—" if r["ok"] is None else ("PASS" if r["ok"] else "MISS")
        if r["note"] == "failed to run":
            flag = "FAILED"
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}×"
        rss = "—" if r["rss"] is None else f"{r['rss'] / 1024:.0f} MiB"
        w(f"| {r['workload']} | {fmt_t(r['shm'])} | {r['refname']} | {fmt_t(r['ref'])} | {ratio} | "
          f"{r['target']} | {flag} | {rss} | {r['note']} |")
    w("")
    if s.extra:
        w("Context:")
        w("")
        for k, v in s.extra:
            w(f"- {k}: {fmt_t(v)}")
        w("")
    met = sum(1 for r in s.rows if r["ok"])
    total = sum(1 for r in s.rows if r["ok"] is not None or r["note"] == "failed to run")
    w(f"**{met} of {total} targets met.**")
    w("")
    w("How it is measured: see `bench/README.md`. shmapi times are the marked region of each")
    w("program (`@@ begin` .. `@@ end`), except the rows marked \"whole process\", start-up and")
    w("the big mesh, which time the process from spawn to exit against a C program doing the")
    w("same, interleaved per repetition. Collective floors: the minimal traffic of the")
    w("collective (bytes it must read R + bytes it must write W, with shmapi's shared immutable")
    w("blocks) moved by one memcpy of (R+W)/2 bytes, into fresh memory for a first call and")
    w("into memory already touched for calls in a loop.")
    if s.failed:
        w("")
        w("Failures:")
        w("")
        for f in s.failed:
            w(f"- {f}")
    text = "\n".join(lines) + "\n"
    if out:
        with open(out, "w") as f:
            f.write(text)
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shmapi", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--allreduce", help="bench/ref/allreduce.c built with mpicc (the ranks rows)")
    ap.add_argument("--out", help="where to write the table (default: bench/RESULTS.md for a full run, "
                                  "nowhere with --only)")
    ap.add_argument("--only", help="comma-separated subset: matmul,whole,bf16,conv,collectives,small,sort,indexing,big,trace,replicated,model,startup,ranks")
    a = ap.parse_args()
    started = time.time()
    s = Suite(a)
    if a.only:
        print(f"bench: {a.reps} repetitions each (only {a.only})", flush=True)
        names = a.only.split(",")
        if "matmul" in names:
            s.guarded("matmul_basic", s.matmul)
        if "whole" in names:
            s.guarded("whole matmul_basic", s.whole_matmul)
            s.guarded("whole ew_chain", s.whole_ew)
        if "bf16" in names:
            s.guarded("matmul_bf16", s.matmul_bf16)
        if "conv" in names:
            s.guarded("conv_resnet", s.conv_resnet)
        if "collectives" in names:
            for name, wl, r, w, e in COLLECTIVES:
                s.guarded(name, lambda: s.collective(name, wl, r, w, e))
        if "small" in names:
            s.guarded("small_eqns", s.small)
        if "sort" in names:
            s.guarded("sort_f32", s.sort_f32)
        if "indexing" in names:
            s.guarded("embedding", s.embedding)
        if "big" in names:
            s.guarded("big_mesh", s.big_mesh)
            s.guarded("big_mesh_1m", s.big_mesh_1m)
        if "trace" in names:
            s.guarded("trace_1m", s.trace_1m)
        if "replicated" in names:
            s.guarded("replicated", s.replicated)
        if "model" in names:
            s.guarded("model_70b", s.model_70b)
        if "startup" in names:
            s.guarded("startup", s.startup)
        if "ranks" in names:
            s.guarded("ranks_memory", s.ranks_memory)
            s.guarded("ranks_chain", s.ranks_chain)
            s.guarded("ranks_psum", s.ranks_psum)
    else:
        s.run_all()
    out = a.out or (None if a.only else os.path.join(HERE, "RESULTS.md"))
    text = report(s, out, started)
    print()
    print(text)
    if out:
        print(f"bench: wrote {os.path.relpath(out)}")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
