"""examples/notebook.ipynb, executed: every code cell run in order in a
headless IPython shell (as Jupyter's kernel would), with what a user
would check asserted on the shell's namespace, the cells' results and
what they display (the rich outputs a notebook renders: SVG, HTML)."""

import json
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOK = os.path.join(ROOT, "examples", "notebook.ipynb")


def test_the_example_notebook_runs():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    import shmapi
    ip = InteractiveShell.instance()
    nb = json.load(open(NOTEBOOK))
    outs = {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        with capture_output() as cap:
            r = ip.run_cell("".join(cell["source"]), store_history=True)
        assert r.success, (cell["source"], r.error_in_exec or r.error_before_exec)
        outs[cell["id"]] = (r.result, cap)
    ns = ip.user_ns
    a = ns["a"]
    # the %%shm cell printed the column sums of iota's rows
    assert outs["c2"][1].stdout == "[28. 28. 28.]\n"
    got, want = outs["c3"][0]
    assert np.array_equal(got, want)
    assert len(outs["c4"][0]) == 4 and outs["c4"][0][2][0].tolist() == a.sum(axis=0).tolist()
    assert outs["c5"][1].stdout.startswith("4 devices, 72.0 bytes sent\n") and outs["c5"][0] is True
    # the report, shown as tables and the timeline's picture
    report = outs["c5b"][0]
    assert isinstance(report, shmapi.CostReport) and report is ns["report"]
    html = report._repr_html_()
    assert html.count("<table>") == 2 and "psum" in html and report.svg.startswith("<svg") and report.svg in html
    assert [ln.primitive for ln in report.lines] == ["psum", "reduce_sum"]
    # the abstract model of 16 GiB: the reduction reads it all (HBM-bound), the psum is small
    rows = outs["c6a"][0]
    assert [r[:3] for r in rows] == [(5, "reduce_sum", "HBM"), (6, "psum", "latency")]
    big = ns["big"]
    assert big.lines[0].hbm_bytes == 2 * ((1 << 18) * 8192 + 8192)
    # visualize in a %%shm cell: a picture displayed as SVG
    shown = outs["c6b"][1].outputs
    assert len(shown) == 1 and shown[0].data["image/svg+xml"].startswith("<svg")
    assert shown[0].data["text/plain"].startswith("colsum: shard_map over mesh m")
    pic = outs["c6c"][0]
    assert isinstance(pic, shmapi.Picture) and "CPU 0" in pic._repr_svg_()
    assert str(pic).startswith("x: f32[8,3] as P(i, None)\n")
    # an error at its line of the cell, then the session still works
    assert outs["c6"][1].stderr.startswith("<cell 3>:2:5: error: colsum takes 1 argument, but 0 were given")
    assert outs["c7"][1].stdout == "[28. 28. 28.]\n"
