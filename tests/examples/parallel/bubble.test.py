"""The pipeline bubble, read from the --trace timeline: for each pipeline
recipe of examples/parallel/ and several stage counts p and microbatch
counts m, the step is run and modelled at sizes where the stages' work
dominates, on a TPU v5e whose links, collectives' fixed costs and kernel
launches are made free (so that the timeline shows the schedule, not the
transfers or the launches of the bookkeeping between stages), and the share of the
step each stage spends off its compute stream is compared with the
formula: (p - 1) / (m + p - 1) for GPipe and 1F1B (Huang et al. 2019;
Narayanan et al. 2021), (p - 1) / (v m + p - 1) for the circular
schedule with v chunks per device.  Tolerance: 0.025 absolute, the small
work outside the stages (the last stage's loss, the buffers, the
gradient sums), which the cost model's fusion of elementwise chains made
a larger share of the step: a stage's chains fuse, the buffer copies do
not (at p = 2, m = 1 the bubble reads 0.4875 and 0.4789 for 0.5).
1F1B is checked from below only (no schedule of these ticks idles less
than the formula): the recipe runs one forward or one backward per stage
per tick and exchanges with its neighbours every tick (a ppermute waits
for the two ends of each pair), so each tick where some stages run a
forward and others a backward lasts a backward on every stage, and its
measured bubble is larger than the formula's (printed, not asserted).
(A real run, not --abstract, which models the same schedule: the run's
trace is what a user steps through.)

    SHMAPI=build/shmapi python3 tests/examples/parallel/bubble.test.py
"""
# timeout: 300
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _recipes  # noqa: E402

FAST = {
    "name": "tpu-v5e-free-links",
    "source": "tpu-v5e with links that cost nothing, to see the schedule alone",
    "peak_flops": {"bf16": 1.97e14, "f32": 1.97e14},
    "hbm_bandwidth": 8.1e11, "hbm_capacity": 1.6e13,
    "topology": "torus", "links_per_chip": 4, "link_bandwidth": 1e21,
    "hop_latency": 1e-15, "pod": [16, 16], "wraparound_multiple": 16,
    "kernel_overhead": 0, "collective_overhead": 0,
}

T, D, F, MB = 64, 32, 256, 8


def bubbles(trace):
    """Per device: the share of the step its compute stream is idle."""
    ev = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    end = max(e["ts"] + e["dur"] for e in ev)
    busy = {}
    for e in ev:
        if e["tid"] == 0:
            busy[e["pid"]] = busy.get(e["pid"], 0.0) + e["dur"]
    return {pid: 1.0 - b / end for pid, b in busy.items()}


def main():
    shmapi = os.environ["SHMAPI"]
    d = _recipes.scratch()
    hw = os.path.join(d, "free_links.json")
    with open(hw, "w") as f:
        json.dump(FAST, f)
    cases = [("pp_gpipe", "gpipe_step", p, 1, m) for p, m in ((2, 1), (2, 4), (4, 4), (4, 8), (3, 5), (8, 8))]
    cases += [("pp_1f1b", "pp_1f1b_step", p, 1, m) for p, m in ((2, 4), (4, 4), (4, 8), (3, 5), (8, 16))]
    cases += [("pp_circular", "circular_step", p, v, m) for p, v, m in ((2, 2, 2), (4, 2, 4), (4, 3, 8), (2, 4, 4))]
    bad = 0
    try:
        for k, (name, fn, p, v, m) in enumerate(cases):
            L = p * v * 2
            extra = ", F=%d, L=%d, lc=2" % (F, L) if name == "pp_circular" else ""
            vv = ", v=%d" % v if name == "pp_circular" else ""
            prog = ('import "%s.shm"\n' % name
                    + "x, tgt, w1, w2 = make_data[B=%d, T=%d, D=%d, F=%d, L=%d]\n" % (m * MB, T, D, F, L)
                    + "l, d1, d2 = %s[dn=1, p=%d%s, m=%d, mb=%d, T=%d, D=%d%s] x tgt w1 w2\n"
                    % (fn, p, vv, m, MB, T, D, extra))
            tr = os.path.join(d, "t%d.json" % k)
            status, out, err = _recipes.run(
                shmapi, d, "_bubble%d.shm" % k, prog,
                args=("--time", "--hardware", hw, "--trace", tr))
            if status != 0:
                print(err)
                return 1
            with open(tr) as f:
                got = bubbles(json.load(f))
            want = (p - 1) / (v * m + p - 1)
            if name == "pp_1f1b":
                ok = min(got.values()) >= want - 0.025
            else:
                ok = max(abs(b - want) for b in got.values()) <= 0.025
            bad += not ok
            print("%s %-12s p=%d v=%d m=%d: bubble %s, formula %.4f" % (
                "ok  " if ok else "FAIL", name, p, v, m,
                " ".join("%.4f" % got[i] for i in sorted(got)), want))
    finally:
        _recipes.cleanup(d)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
