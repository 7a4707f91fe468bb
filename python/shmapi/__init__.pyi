# Type stubs of the shmapi package (python/shmapi/__init__.py).
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

version: str
__version__: str

ArrayLike = npt.ArrayLike
Source = Union[str, "os.PathLike[str]", Any]
Hardware = str


class Diagnostic:
    file: Optional[str]
    line: int
    col: int
    kind: str
    message: str
    text: str
    def __init__(self, file: Optional[str], line: int, col: int, kind: str, message: str, text: str) -> None: ...


class Error(Exception):
    diagnostics: List[Diagnostic]
    file: Optional[str]
    line: int
    col: int
    message: str
    text: str
    def __init__(self, message: str, diagnostics: Sequence[Union[Diagnostic, tuple]] = ...) -> None: ...


class ShapeDtype:
    shape: Tuple[int, ...]
    dtype: str
    def __init__(self, shape: Sequence[int], dtype: Any) -> None: ...


class Picture:
    text: str
    svg: str
    def __init__(self, text: str, svg: str) -> None: ...
    def _repr_svg_(self) -> str: ...


class CostLine:
    FIELDS: Tuple[str, ...]
    file: str
    line: int
    backward: bool
    primitive: str
    source: str
    runs: int
    time: float
    compute: float
    comm: float
    waited: float
    share: float
    flops: float
    hbm_bytes: float
    coll_bytes: float
    limit: str
    how: str
    def to_dict(self) -> Dict[str, Any]: ...


class CostDevice:
    FIELDS: Tuple[str, ...]
    compute: float
    comm: float
    exposed: float
    idle: float
    peak_hbm: float
    def to_dict(self) -> Dict[str, float]: ...


class CostReport:
    text: str
    svg: Optional[str]
    hardware: str
    makespan: float
    compute: float
    comm: float
    exposed: float
    peak_hbm: float
    bytes_sent: float
    devices: int
    peak_device: int
    peak_at: Optional[str]
    outside: int
    per_device: List[CostDevice]
    lines: List[CostLine]
    notes: List[str]
    def to_dict(self) -> Dict[str, Any]: ...
    def _repr_html_(self) -> str: ...


class Stats(str): ...


class PerDevice:
    mesh: Dict[str, int]
    outputs: Tuple[np.ndarray, ...]
    coords: Dict[int, Tuple[int, ...]]
    ndevices: int
    def __len__(self) -> int: ...
    def block(self, output: int, device: Union[int, Tuple[int, ...], Dict[str, int]]) -> np.ndarray: ...
    def __getitem__(self, device: Union[int, Tuple[int, ...], Dict[str, int]]) -> Tuple[np.ndarray, ...]: ...
    def __iter__(self) -> Iterator[Tuple[Tuple[int, ...], Tuple[np.ndarray, ...]]]: ...


class Function:
    program: "Program"
    name: str
    def __init__(self, program: "Program", name: str) -> None: ...
    def __call__(self, *args: ArrayLike) -> Any: ...
    def per_device(self, *args: ArrayLike) -> PerDevice: ...
    def show(self) -> str: ...
    def visualize(self) -> Picture: ...
    def cost(self, *args: Any, hardware: Hardware = ..., trace: Optional[Union[str, "os.PathLike[str]"]] = ...,
             timeline: bool = ..., abstract: bool = ..., place: Optional[str] = ...) -> CostReport: ...


class Program:
    def __init__(self, max_memory: int = ..., max_steps: int = ...) -> None: ...
    def exec(self, source: Source, name: Optional[str] = ...) -> "Program": ...
    def run(self) -> "Program": ...
    def interrupt(self) -> None: ...
    def has_function(self, name: str) -> bool: ...
    def get(self, name: str) -> np.ndarray: ...
    def set(self, name: str, value: ArrayLike, copy: bool = ...) -> None: ...
    def __getitem__(self, name: str) -> Function: ...
    def __getattr__(self, name: str) -> Function: ...
    def call(self, name: str, *args: ArrayLike) -> Any: ...
    def show(self, name: str) -> str: ...
    def visualize(self, name: str, mesh: Optional[str] = ...,
                  spec: Optional[Union[str, Sequence[Union[None, str, Sequence[str]]]]] = ...) -> Picture: ...
    def cost(self, name: str, *args: Any, hardware: Hardware = ...,
             trace: Optional[Union[str, "os.PathLike[str]"]] = ..., timeline: bool = ..., abstract: bool = ...,
             place: Optional[str] = ...) -> CostReport: ...
    def stats(self, reset: bool = ...) -> Stats: ...
    def time(self, hardware: Hardware = ..., abstract: bool = ..., place: Optional[str] = ...,
             trace: Optional[Union[str, "os.PathLike[str]"]] = ..., timeline: bool = ...) -> CostReport: ...
    def memory_in_use(self) -> int: ...


def load(source: Source, *, max_memory: int = ..., max_steps: int = ...) -> Program: ...
def check(source: Source) -> List[Diagnostic]: ...
def run_jaxpr(jaxpr: Any, *args: ArrayLike, mesh: Optional[Dict[str, int]] = ..., name: str = ...) -> Any: ...
def session(shell: Any = ...) -> Program: ...
def load_ipython_extension(ipython: Any) -> None: ...
