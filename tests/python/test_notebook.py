"""examples/notebook.ipynb, executed: every code cell run in order in a
headless IPython shell (as Jupyter's kernel would), with what a user
would check asserted on the shell's namespace and the cells' output."""

import json
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOK = os.path.join(ROOT, "examples", "notebook.ipynb")


def test_the_example_notebook_runs(capsys):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    nb = json.load(open(NOTEBOOK))
    outs = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        capsys.readouterr()
        r = ip.run_cell("".join(cell["source"]), store_history=True)
        assert r.success, (cell["source"], r.error_in_exec or r.error_before_exec)
        outs.append((r.result, capsys.readouterr()))
    ns = ip.user_ns
    a = ns["a"]
    # the %%shm cell printed the column sums of iota's rows
    assert outs[1][1].out == "[28. 28. 28.]\n"
    got, want = outs[2][0]
    assert np.array_equal(got, want)
    assert len(outs[3][0]) == 4 and outs[3][0][2][0].tolist() == a.sum(axis=0).tolist()
    assert outs[4][1].out.startswith("4 devices, 72.0 bytes sent\n") and outs[4][0] is True
    assert ns["report"].svg.startswith("<svg")
    # an error at its line of the cell, then the session still works
    assert outs[5][1].err.startswith("<cell 2>:2:5: error: colsum takes 1 argument, but 0 were given")
    assert outs[6][1].out == "[28. 28. 28.]\n"
