"""Evaluating a jit sequence: the one function its calls call, over any array namespace, and
every call's output as NumPy computes it (the calls' reference)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from compiler import primitives

from .codec import normalize_attr
from .evaluate import namespace_of
from .program import Program
from .sequence import Hole, JitSequence, captured_values, skeleton_text, tree_leaves
from .types import Const


def function(
    sequence: JitSequence, xp: Any = None, captured: np.ndarray | None = None
) -> Callable[..., Any]:
    """The ONE function every call calls: ``f(*args, **statics)`` over namespace ``xp``
    (default: the first leaf's), reading ``captured`` from its enclosing scope."""
    table = sequence.dispatch()
    variants = sequence.variants
    holes = sequence.holes
    defaults = sequence.defaults()
    # The array and its view (made once, here: the function captures both objects)
    closure = [] if captured is None else captured_values(sequence.view, captured)

    def f(*args: Any, **statics: Any) -> Any:
        unknown = set(statics) - set(defaults)
        if unknown:
            raise TypeError(f"unexpected static arguments {sorted(unknown)}")
        program = variants[table[skeleton_text(args)]]
        leaves = tree_leaves(args)
        leaves.extend(closure)
        return _evaluate(program, holes, {**defaults, **statics}, xp, leaves)

    f.__name__ = f.__qualname__ = "f"
    return f


def numpy_outputs(sequence: JitSequence) -> list[Any]:
    """Every call's output as NumPy computes the sequence (None where NumPy raises)."""
    captured = None
    if sequence.captured:
        captured = np.array(sequence.calls[0].captured, copy=True)
    f = function(sequence, np, captured)
    out: list[Any] = []
    previous = None
    for index, call in enumerate(sequence.calls):
        if call.captured is not None and captured is not None:
            captured[...] = call.captured
        args, kwargs = sequence.arguments(index, previous)
        try:
            with np.errstate(all="ignore"):
                previous = np.asarray(f(*args, **kwargs))
        except Exception:  # noqa: BLE001 - NumPy's own rejection: no output
            previous = None
        out.append(previous)
    return out


def _evaluate(
    program: Program, holes: Sequence[Hole], statics: dict[str, Any], xp: Any, leaves: list[Any]
) -> Any:
    """``program`` on ``leaves`` with the holes set from ``statics`` (NumPy's attribute forms)."""
    if xp is None:
        xp = namespace_of(leaves[0])
    values: list[Any] = []

    def get(arg: Any) -> Any:
        if isinstance(arg, Const):
            return arg.py()
        return leaves[arg.index] if arg.kind == "input" else values[arg.index]

    for index, node in enumerate(program.nodes):
        prim = primitives.get(node.op)
        args = [get(a) for a in node.args]
        attrs = dict(node.attrs)
        for hole in holes:
            if hole.node == index:
                if hole.attr:
                    attrs[hole.attr] = normalize_attr(prim.attrs[hole.attr], statics[hole.name])
                else:
                    args[hole.arg] = statics[hole.name]
        values.append(prim.evaluate(xp, args, attrs))
    return get(program.output)
