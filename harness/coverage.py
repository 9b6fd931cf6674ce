"""Coverage as data: the cells each case exercised, and the universe of cells there are.

A cell is a string ``family:key``. Families:

- ``op``: ``op:<op>|<dtype>|<backend>`` (each op of the program, with the output dtype, on each
  backend that ran it);
- ``regime``: the value regime the inputs were drawn from;
- ``special``: ``special:<value>|<op>``, a special value (nan, inf, -inf, -0.0) present in the
  inputs of a program using ``op``;
- ``shape``: a shape or layout feature of the program (``unit-dim``, ``rank0``,
  ``negative-step``, ``uneven-step``, ``cycle-permutation``, ``split-merge-reshape``,
  ``middle-broadcast``, ``odd-extent``, ``vector-extent``...);
- ``mlir``: ``mlir:<stage>|<op>``, an MLIR operation reaching a pipeline stage (from the worker);
- ``blas``: the path each matmul took through the BLAS stage (``blas:gemm``, ``blas:fallback``);
- ``unvectorized``: a structured op ``cpu-vector`` left as loops (``oracles/schedule.py``).

The session counts cells (``Stats.cells``); the generator is steered toward rare ones
(``hypothesis.target`` on novelty); the report shows the matrices including the cells never hit.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from compiler import primitives
from strategies.model import takes_a_dim

from .case import Case
from .run.layouts import DEFAULT, LAYOUTS

SPECIAL_NAMES = ("nan", "inf", "-inf", "-0.0")
SHAPE_FEATURES = (
    "rank0",
    "unit-dim",
    "several-unit-dims",
    "negative-step",
    "uneven-step",
    "ellipsis-inside",
    "newaxis",
    "cycle-permutation",
    "split-merge-reshape",
    "middle-broadcast",
    "odd-extent",
    "vector-extent",
)
#: Extents around vector widths and tile sizes, where vectorizing backends peel or mask.
VECTOR_EXTENTS = {7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65}


def _specials(array: np.ndarray) -> set[str]:
    if array.dtype.kind != "f":
        return set()
    found = set()
    if np.isnan(array).any():
        found.add("nan")
    if np.isposinf(array).any():
        found.add("inf")
    if np.isneginf(array).any():
        found.add("-inf")
    if ((array == 0) & np.signbit(array)).any():
        found.add("-0.0")
    return found


def _steps(shape: tuple[int, ...], key: tuple[Any, ...]) -> list[tuple[int, int]]:
    """(extent, step) of each sliced dimension of a basic index (NumPy's reading of the key, not
    the compiler's: coverage must not depend on the code under test)."""
    consuming = sum(takes_a_dim(item) for item in key)
    found, dim = [], 0
    for item in key:
        if item is Ellipsis:
            dim += len(shape) - consuming
        elif isinstance(item, slice):
            found.append((shape[dim], item.indices(shape[dim])[2]))
            dim += 1
        elif takes_a_dim(item):
            dim += 1
    return found


def _shape_features(program: Any) -> set[str]:
    found = set()
    shapes = [i.shape for i in program.inputs] + [n.type.shape for n in program.nodes]
    for shape in shapes:
        if not shape:
            found.add("rank0")
        ones = sum(1 for d in shape if d == 1)
        if ones:
            found.add("unit-dim")
        if ones >= 2:
            found.add("several-unit-dims")
        if any(d % 2 == 1 and d > 1 for d in shape):
            found.add("odd-extent")
        if any(d in VECTOR_EXTENTS for d in shape):
            found.add("vector-extent")
    for node in program.nodes:
        args = [program.type_of(a) for a in node.args if hasattr(a, "kind")]
        if node.op == "index":
            key = node.attrs["key"]
            for position, item in enumerate(key):
                if item is None:
                    found.add("newaxis")
                elif item is Ellipsis and 0 < position < len(key) - 1:
                    found.add("ellipsis-inside")
            for extent, step in _steps(args[0].shape, key):
                if step < 0:
                    found.add("negative-step")
                if abs(step) > 1 and extent % abs(step):
                    found.add("uneven-step")
        elif node.op == "permute_dims":
            axes = node.attrs["axes"]
            if any(axes[axes[i]] != i for i in range(len(axes))):
                found.add("cycle-permutation")
        elif node.op == "reshape" and args:
            old, new = args[0].shape, node.type.shape
            if len(old) > 1 and len(new) > 1 and set(old) != set(new):
                found.add("split-merge-reshape")
        elif primitives.PRIMITIVES[node.op].elementwise and len(args) > 1:
            out = node.type.shape
            for t in args:
                lead = len(out) - len(t.shape)
                middle = [i for i, d in enumerate(t.shape) if 0 < lead + i < len(out) - 1]
                if any(t.shape[i] == 1 and out[lead + i] > 1 for i in middle):
                    found.add("middle-broadcast")
    return found


def case_cells(case: Case, backends: list[str] | None = None) -> set[str]:
    """The cells a case exercises (without the MLIR ops, which the worker reports); every
    ``mlir:`` pipeline variant counts as its family (``mlir:*``)."""
    from compiler.mlir_variants import family

    program = case.program
    dtype = program.output_type.dtype
    cells = set()
    for op in set(case.subject.ops):
        for backend in backends if backends is not None else case.backends:
            cells.add(f"op:{op}|{dtype}|{family(backend)}")
    regime = case.extra.get("regime") or case.origin.partition("/")[2] or "ordinary"
    cells.add(f"regime:{regime}")
    specials = (
        set().union(*(_specials(np.asarray(a)) for a in case.inputs)) if case.inputs else set()
    )
    for special in specials:
        for op in set(case.subject.ops):
            cells.add(f"special:{special}|{op}")
    cells.update(f"shape:{feature}" for feature in _shape_features(program))
    cells.update(f"input-layout:{name}" for name in set(case.layouts) - {DEFAULT})
    spelling = case.spelling  # each op the spelling reaches another way (dispatch, a method)
    if spelling != primitives.SPELLINGS[0]:
        cells.update(
            f"spelling:{spelling}|{op}"
            for op in set(case.subject.ops)
            if primitives.get(op).respelled(spelling)
        )
    return cells


_OP = re.compile(r'^\s*(?:%[^=]*=\s*)?"?([a-z_][a-z0-9_]*\.[a-z_][a-z0-9_.]*)"?[\s(<{"]', re.M)
#: Stages whose operations are counted (the module as built follows from the program).
_COUNTED_STAGES = ("optimized", "bufferized", "blas", "lowered")


def stage_cells(stages: dict[str, str]) -> set[str]:
    """``mlir:<stage>|<op>`` for every MLIR operation each stage's text holds, and
    ``blas:<path>`` for each matmul of the bufferized module (the worker calls this on what it
    compiled; a stage that is not MLIR text contributes nothing)."""
    from compiler.lower import blas

    from .oracles.schedule import PREFIX, STAGE, left_as_loops

    cells = set()
    for stage, text in stages.items():
        if stage.split(":")[0] in _COUNTED_STAGES or stage.startswith("stage#"):
            cells.update(f"mlir:{stage}|{op}" for op in _OP.findall(text))
    if "blas" in stages and "bufferized" in stages:
        cells.update(f"blas:{path}" for path in blas.paths(stages["bufferized"]))
    if STAGE in stages:  # cpu-vector: the ops it left as loops (the schedule oracle's)
        cells.update(PREFIX + op for op in left_as_loops(stages[STAGE]))
    return cells


def universe(
    backends: list[str],
    dtypes: tuple[str, ...] = ("float32", "float64", "int32"),
    regimes: tuple[str, ...] = (),
) -> set[str]:
    """Every cell a session could hit, so the report can show the zeros."""
    ops = [name for name, p in primitives.PRIMITIVES.items() if p.generate]
    cells = {f"op:{op}|{d}|{b}" for op in ops for d in dtypes for b in backends}
    cells |= {f"regime:{r}" for r in regimes}
    cells |= {f"special:{s}|{op}" for s in SPECIAL_NAMES for op in ops}
    cells |= {f"shape:{f}" for f in SHAPE_FEATURES}
    cells |= {f"input-layout:{name}" for name in LAYOUTS}
    cells |= {
        f"spelling:{s}|{op}"
        for s in primitives.SPELLINGS[1:]
        for op in ops
        if primitives.get(op).respelled(s)
    }
    if any("blas" in b for b in backends):
        cells |= {f"blas:{p}" for p in ("gemm", "gemm-ld", "gemm-transposed", "fallback")}
    return cells


def novelty(cells: set[str], counts: dict[str, int]) -> float:
    """How rare this case's cells are so far (for ``hypothesis.target``): a never-seen cell
    counts 1, a cell seen n times 1 / (1 + n)."""
    return float(sum(1.0 / (1 + counts.get(c, 0)) for c in cells)) if cells else 0.0


__all__ = ["SHAPE_FEATURES", "SPECIAL_NAMES", "case_cells", "novelty", "stage_cells", "universe"]
