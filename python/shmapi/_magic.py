"""The IPython extension: `%load_ext shmapi`, then `%%shm` cells.

A %%shm cell is shm code run in one session per shell, kept across cells
(functions and values a cell defines are there for the next).  Its `print`
output appears under the cell, and its `visualize` pictures are shown as
SVG; an error prints shmapi's diagnostic (with the line and a caret; the
line numbers count within the cell) and leaves the session as it was
before the cell.

    %%shm                 run the cell
    %%shm --reset         start a new session first
    %%shm --time HW       also model the cell on hardware HW (a preset or a
                          JSON path) and show the report (as tables)
    %%shm --time HW --abstract
                          model the cell without running it (shapes only,
                          as the CLI's --abstract)
    %%shm --time HW --timeline
                          and draw the modelled timeline (SVG) under it
    %%shm --to NAME       also bind the Python name NAME to the session
                          (a shmapi.Program: call its functions on arrays)

`shmapi.session()` is the shell's session from Python.
"""

import shlex
import sys

from . import Error, Program

_sessions = {}


def session(shell=None):
    """The %%shm session of an IPython shell (the current one by default)."""
    if shell is None:
        from IPython import get_ipython
        shell = get_ipython()
    key = id(shell)
    if key not in _sessions:
        _sessions[key] = Program()
    return _sessions[key]


def _parse(line):
    args = shlex.split(line)
    opts = {"reset": False, "time": None, "to": None, "abstract": False, "timeline": False}
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--reset", "--abstract", "--timeline"):
            opts[a[2:]] = True
        elif a in ("--time", "--to") and i + 1 < len(args):
            opts[a[2:]] = args[i + 1]
            i += 1
        else:
            raise ValueError("%%%%shm: unknown option %r (options: --reset, --time HW, --abstract, --timeline, --to NAME)"
                             % a)
        i += 1
    for o in ("abstract", "timeline"):
        if opts[o] and not opts["time"]:
            raise ValueError("%%%%shm: --%s goes with --time HW" % o)
    return opts


def _display(obj):
    """Show obj under the cell: rich (SVG, HTML) in a notebook."""
    try:
        from IPython.display import display
    except ImportError:
        sys.stdout.write(str(obj))
        return
    display(obj)


def shm_cell(shell, line, cell):
    try:
        opts = _parse(line)
    except ValueError as e:                 # a wrong first line: said as shmapi's errors are
        sys.stderr.write("%s\n" % e)
        return None
    if opts["reset"]:
        _sessions.pop(id(shell), None)
    prog = session(shell)
    prog._ncell += 1
    name = "<cell %d>" % prog._ncell
    prog._picture_sink = _display
    try:
        if opts["time"]:
            prog._load(cell, name)
            _display(prog.time(opts["time"], abstract=opts["abstract"], timeline=opts["timeline"]))
        else:
            prog.exec(cell, name)
    except Error as e:
        sys.stderr.write(e.text)
        return None
    finally:
        prog._picture_sink = None
    if opts["to"]:
        shell.user_ns[opts["to"]] = prog
    return None


def register(shell):
    def magic(line, cell):
        return shm_cell(shell, line, cell)
    shell.register_magic_function(magic, magic_kind="cell", magic_name="shm")
