"""Decisions a float makes: the other side of every one that no evaluation can settle.

A comparison of floats, a ``where`` on a float condition and a cast of a float to bool or to an
integer jump where their operand crosses a threshold (a tie, zero, an integer). Near it, correct
evaluations land on either side: the float64 mean of ``[1.12e-18, -3, 3, -4.9e-275]`` is
2.7e-19 (the truth), -1.2e-275 (NumPy) and exactly 0 in a vectorized order, so
``where(mean, mean, 1.0)`` is 1.0 there on ``cpu-vector``, and right. The error model widens a
float output's bound by what the perturbed runs do (every rounding moved an ulp, sums in other
orders), but those never cancel to an exact zero, nor land exactly on a tie, so such an answer
was reported as a mismatch.

Here, an element of a decision is *ambiguous* when its operand's distance to the threshold is
within ``tolerance.FACTOR`` times that operand's measured error (its largest distance from the
truth over NumPy and the perturbed runs, node by node). One more evaluation,
``perturbed:flip``, takes the other side at every ambiguous element, everything else computed as
NumPy computes it; like a perturbed run, it widens the bound element by element, so either side
passes there and nowhere else. An operand that every evaluation computes exactly (an input, a
constant, integer arithmetic) has no error: its ties and zeros stay decided.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from strategies.model import is_float

if TYPE_CHECKING:
    from ..case import Case
    from .references import Reference

#: The name of the flipped evaluation; it starts like the perturbed runs' (``perturbed_outputs``).
FLIPPED = "perturbed:flip"


def deciding_nodes(program: Any) -> dict[int, str]:
    """Node index -> how it decides: ``compare`` (floats compared), ``where`` (a float
    condition), ``to-bool`` or ``to-int`` (a float cast)."""
    from compiler import primitives

    found: dict[int, str] = {}
    for index, node in enumerate(program.nodes):
        types = program.arg_types(node)
        floats = [is_float(np.dtype(t.dtype)) for t in types]
        kind = primitives.get(node.op).kind
        if kind == "compare" and any(floats):
            found[index] = "compare"
        elif node.op == "where" and floats and _is_ref(node.args[0]) and floats[0]:
            found[index] = "where"
        elif node.op == "astype" and floats and floats[0]:
            target = np.dtype(node.type.dtype)
            if target == np.bool_:
                found[index] = "to-bool"
            elif not is_float(target):
                found[index] = "to-int"
    return found


def _is_ref(arg: Any) -> bool:
    from strategies.model import Const

    return not isinstance(arg, Const)


class Traces:
    """Every node's value in the perturbed runs (of valid programs), NumPy's (``numpy_trace``)
    and the truth's (for programs that decide on floats), and the flipped evaluation built from
    them."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.deciding = deciding_nodes(case.program) if case.invalid is None else {}
        self.runs: list[list[Any]] = []
        self._numpy: list[Any] | None = None

    def numpy_trace(self) -> list[Any]:
        """NumPy's value of every node, in the program's dtypes: evaluated once, though the
        flipped and the coupled evaluation (``run.undetermined``) both ask."""
        if self._numpy is None:
            from .references import _evaluate, adapted, as_numpy

            self._numpy = []
            fn = adapted(self.case.program, np, as_numpy, None, record_into(self._numpy))
            _evaluate("numpy-trace", fn, self.case.inputs)
        return self._numpy

    def recorder(self) -> Callable[[int, list[Any], Any], Any] | None:
        """An ``adapted`` hook recording one evaluation's node values (None for an invalid
        program); the perturbed runs' traces also say which values are undetermined
        (``run.undetermined``)."""
        if self.case.invalid is not None:
            return None
        trace: list[Any] = []
        self.runs.append(trace)
        return record_into(trace)

    def flipped_reference(self) -> Reference | None:
        """``perturbed:flip`` (see the module docstring), or None where no element is ambiguous."""
        if not self.deciding:
            return None
        from .references import EXTENDED, _evaluate, adapted, as_numpy

        program, inputs = self.case.program, self.case.inputs
        truth: list[Any] = []
        widened = [a.astype(np.longdouble) if is_float(a.dtype) else a for a in inputs]
        mine = _evaluate(
            "truth-trace", adapted(program, EXTENDED, as_numpy, None, record_into(truth)), widened
        )
        numpy_trace = self.numpy_trace()
        count = len(program.nodes)
        if not mine.ok or len(truth) != count:
            return None
        numpy_only = [numpy_trace] if len(numpy_trace) == count else []
        others = numpy_only + [t for t in self.runs if len(t) == count]
        ambiguous = _ambiguous(program, self.deciding, truth, (numpy_only, others), inputs)
        if not ambiguous:
            return None

        def flip(index: int, operands: list[Any], value: Any) -> Any:
            if index not in ambiguous:
                return value
            return _other_side(program, index, self.deciding[index], ambiguous[index], truth,
                               inputs, operands, value)  # fmt: skip

        return _evaluate(FLIPPED, adapted(program, np, as_numpy, None, flip), inputs)


def record_into(trace: list[Any]) -> Callable[[int, list[Any], Any], Any]:
    """An ``adapted`` hook appending each node's value to ``trace``."""

    def record(index: int, operands: list[Any], value: Any) -> Any:
        trace.append(value)
        return value

    return record


def _error(truth: list[Any], others: list[list[Any]], arg: Any) -> Any:
    """The measured error of an operand (0 for an input or a constant: exact in every run)."""
    if not _is_ref(arg) or arg.kind != "node":
        return 0.0
    exact = np.asarray(truth[arg.index])
    if not is_float(exact.dtype):
        return 0.0
    error = np.zeros(exact.shape)
    with np.errstate(all="ignore"):
        for trace in others:
            value = np.asarray(trace[arg.index])
            if value.shape != exact.shape:
                continue
            distance = np.abs(value.astype(np.longdouble) - exact).astype(np.float64)
            error = np.maximum(error, np.where(np.isfinite(distance), distance, 0.0))
    return error


def _value(truth: list[Any], arg: Any, inputs: list[Any]) -> Any:
    if not _is_ref(arg):
        return np.longdouble(arg.py())
    if arg.kind == "input":
        a = np.asarray(inputs[arg.index])
        return a.astype(np.longdouble) if is_float(a.dtype) else a
    return np.asarray(truth[arg.index])


def _ambiguous(
    program: Any,
    deciding: dict[int, str],
    truth: list[Any],
    evaluations: tuple[list[list[Any]], list[list[Any]]],
    inputs: list[Any],
) -> dict[int, np.ndarray]:
    """Decision node -> the mask of its ambiguous elements (nodes without any are left out).
    ``evaluations``: NumPy's trace (or none), and it with the perturbed runs' traces.

    A tie or zero the truth computes exactly is ambiguous only where NumPy misses it too: the
    perturbed runs move every result an ulp, exact ones as well (``10 / 4``), so they cannot
    tell an exact tie from a near one, and ``mean([1, 2, 3, 4]) > 2.5`` would go either way."""
    from ..oracles.tolerance import FACTOR

    numpy_only, others = evaluations
    found: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for index, kind in deciding.items():
            node = program.nodes[index]
            operands = node.args[:2] if kind == "compare" else node.args[:1]
            error = sum(_error(truth, others, a) for a in operands)
            missed = sum(_error(truth, numpy_only, a) for a in operands)
            values = [_value(truth, a, inputs) for a in operands]
            if kind == "compare":
                margin = np.abs(values[0] - values[1])
            elif kind in ("where", "to-bool"):
                margin = np.abs(values[0])
            else:  # to-int: truncation jumps at every integer but zero
                nearest = np.rint(values[0])
                margin = np.where(nearest != 0, np.abs(values[0] - nearest), np.inf)
            margin = np.asarray(margin, np.float64)
            error = np.asarray(error, np.float64)
            mask = (error > 0) & (margin <= FACTOR * error)
            mask &= (margin > 0) | (np.asarray(missed) > 0)
            if np.any(mask):
                found[index] = mask
    return found


def _other_side(
    program: Any,
    index: int,
    kind: str,
    mask: np.ndarray,
    truth: list[Any],
    inputs: list[Any],
    operands: list[Any],
    value: Any,
) -> Any:
    """The node's value with every ambiguous element on the side the truth did not take."""
    from compiler import primitives

    node = program.nodes[index]
    value = np.asarray(value)
    with np.errstate(all="ignore"):
        if kind == "where":
            exact = np.asarray(_value(truth, node.args[0], inputs)) != 0
            condition = np.where(mask, ~exact, np.asarray(operands[0]) != 0)
            return primitives.get("where").evaluate(np, [condition, *operands[1:]], node.attrs)
        mask = np.broadcast_to(mask, value.shape)
        if kind in ("compare", "to-bool"):
            return np.where(mask, ~np.asarray(truth[index], bool), value)
        # to-int: the truth truncated lands on the nearest integer k or next to it, toward 0
        x = np.asarray(_value(truth, node.args[0], inputs), np.float64)
        nearest = np.rint(x)
        other = np.where(np.trunc(x) == nearest, nearest - np.sign(nearest), nearest)
        return np.where(mask, other, value).astype(value.dtype)


__all__ = ["FLIPPED", "Traces", "deciding_nodes", "record_into"]
