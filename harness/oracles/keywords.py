"""The ``keywords`` oracle: a case's reductions, their keywords written another way NumPy defines
alike, are traced too.

NumPy takes one reduction many ways: ``axis=1`` is ``axis=(1,)`` and ``axis=-1`` of a matrix,
``axis=None`` every axis named, a sum's default dtype the same ``dtype=`` given (a mean's too,
but of float16, which the default sums in float32), a max given its dtype's lowest value as
``initial=`` (-inf but for float64) the max without it (a start converted in float64, which
made a float32 max float64, survived a 60 s session while one max in five had one). The
frontend reads each keyword on its own
path, and a case draws one form: a mean that dropped ``keepdims`` when given ``dtype=`` was met
only by the rare case drawn with both (unseen in a 60 s session). Here each case whose program
has a reduction is traced once more with every reduction rewritten so (``rewritten``: its
dropped axes kept, then indexed away, too), in the isolated worker, and its graph evaluated by
NumPy (the ``graph-numpy`` backend: no MLIR, a few milliseconds); the primary oracles judge it
against the case's own references (the program's meaning is NumPy's and unchanged). A failure
is the frontend's, and the finding is the rewritten case's own (its reproducer writes the
keywords that fail; minimizing and replaying it need no other oracle).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from compiler import primitives
from strategies.model import Program, ProgramBuilder, Ref

from ..run.task import Task
from .base import Derived, Finding, Observation, Oracle, register

#: The backend a rewritten program runs on: the traced graph interpreted by NumPy.
BACKEND = "graph-numpy"


def _axis(axis: Any, ndim: int, flip: bool) -> Any:
    """The same axes written another way: an int as a one-tuple (or negative), None as every
    axis, a tuple reversed with negatives (NumPy sorts and normalizes them)."""
    if axis is None:
        every = tuple(range(ndim))
        return tuple(a - ndim for a in reversed(every)) if flip else every
    if isinstance(axis, int):
        return (axis,) if not flip else (axis - ndim if axis >= 0 else axis + ndim)
    return tuple((a - ndim if a >= 0 else a) for a in reversed(tuple(axis)))


#: A float past every float32's range: NumPy converts it to -inf (inf) for an initial= of a
#: float32, float16 or bfloat16 max (min). (Programs are strict JSON: no infinities in them.)
BEYOND_FLOAT32 = 1e308


def _identity(op: str, dtype: str) -> float | int | None:
    """The ``initial=`` that changes no max's (min's) answer of a ``dtype`` operand with an
    element: its dtype's lowest (highest) value, -inf (inf) for a float narrower than float64
    (``BEYOND_FLOAT32``, which NumPy converts to it); None for a float64 (no finite start is
    -inf there), a boolean or another op."""
    if op not in ("max", "min") or dtype in ("float64", "bool"):
        return None
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(np.dtype(dtype))
        return int(info.min if op == "max" else info.max)
    return -BEYOND_FLOAT32 if op == "max" else BEYOND_FLOAT32


def rewritten(program: Program) -> Program | None:
    """``program`` with each reduction's keywords written another way NumPy defines alike
    (``_axis``; ``dtype=`` its default result's where that is NumPy's accumulator too; a max's
    or min's ``initial=`` its dtype's end, which changes no answer: ``_identity``; a
    reduction that drops its axes keeps them, then indexes them away: ``x.sum(1)`` as
    ``x.sum(1, keepdims=True)[:, 0]``), or None if it has no reduction to rewrite."""
    builder = ProgramBuilder()
    for inp in program.inputs:
        builder.input(inp.shape, inp.dtype, bound=inp.bound)
    moved: dict[int, Ref] = {}

    def arg(a: Any) -> Any:
        return moved[a.index] if isinstance(a, Ref) and a.kind == "node" else a

    changed, reductions = False, 0
    for index, node in enumerate(program.nodes):
        attrs = dict(node.attrs)
        prim = primitives.get(node.op)
        dropped: tuple[int, ...] = ()
        if prim.kind == "reduction" and "axis" in attrs:
            ndim = len(program.type_of(node.args[0]).shape)
            if ndim:  # (every other reduction in the second form)
                given = attrs["axis"]
                axes = (
                    tuple(range(ndim))
                    if given is None
                    else np.lib.array_utils.normalize_axis_tuple(given, ndim)
                )
                attrs["axis"] = _axis(attrs["axis"], ndim, flip=bool(reductions % 2))
                if not attrs.get("keepdims") and axes:
                    attrs["keepdims"], dropped = True, axes
                reductions += 1
                changed = True
            source = program.type_of(node.args[0]).dtype
            started = _identity(node.op, source) if "initial" in prim.attrs else None
            if started is not None and attrs.get("initial") is None:
                attrs["initial"] = started  # (np.max(x, initial=-inf) is np.max(x))
                changed = True
            accumulates = "dtype" in prim.attrs and attrs.get("dtype") is None
            # (a float16 mean's default sums in float32: given dtype=float16 it sums in float16)
            if accumulates and not (node.op == "mean" and source == "float16"):
                attrs["dtype"] = node.type.dtype
                changed = True
        ref = builder.node(node.op, *map(arg, node.args), **attrs)
        if dropped:
            kept = builder.nodes[ref.index].type.shape
            key = tuple(0 if i in dropped else slice(None) for i in range(len(kept)))
            ref = builder.node("index", ref, key=key)
        moved[index] = ref
    if not changed:
        return None
    return builder.build(arg(program.output))


class Keywords(Oracle):
    name = "keywords"

    def fits(self, case: Any) -> bool:
        return case.invalid is None and "sequence" not in case.extra and "gpt2" not in case.extra

    def wants(self, case: Any) -> bool:
        return self.fits(case) and any(
            primitives.get(n.op).kind == "reduction" for n in case.program.nodes
        )

    def plan(self, obs: Observation) -> list[Derived]:
        try:
            program = rewritten(obs.case.program)
        except (ValueError, TypeError):  # a rule the rewrite meets (the model's own checks)
            return []
        if program is None:
            return []
        # The rewritten case on the backend it runs on (its findings are its own: replayed or
        # minimized, it must run there, not on the case's backends, where a graph-numpy wrong
        # alone, an int32 sum interpreted unwrapped, passed and read "not reproduced")
        rewrite = obs.case.with_subject(program).on((BACKEND,))
        return [Derived("rewritten", Task(rewrite, (BACKEND,)))]

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        from . import derived_findings

        # (the finding keeps the rewritten case: its reproducer writes the keywords that fail)
        return [
            replace(
                found,
                detail="with its reductions' keywords written another way NumPy defines alike "
                f"(oracle {self.name}): {found.detail}",
            )
            for _, found in derived_findings(obs, derived)
        ]


register(Keywords())

__all__ = ["BACKEND", "Keywords", "rewritten"]
