"""Values that no evaluation determines, and the output elements they reach.

An element of an intermediate value is *undetermined* when the perturbed runs (every rounding
moved an ulp, sums in other orders) scatter it over its node's whole range: their spread there,
times ``tolerance.FACTOR``, reaches the largest magnitude the node holds (the sine of 1e12 known
to float32 accuracy is anything in [-1, 1]). The error model widens each output element by that
element's own spread over the perturbed runs. Where an output element depends on such a value
alone, that is enough; where an operation couples elements, it is not: a softmax row of
undetermined logits is one-hot, and which column wins is whatever the rounding said, so a column
that no perturbed run picked shows no spread, and a backend that picked it was reported
(``cos(softmax(linear(sin(attend(...)))))`` in the large regime, on ``xla-cpu``, a 10-minute
campaign's one false finding).

``perturbed:coupled`` widens every output element that an undetermined value reaches by the
largest spread the perturbed runs show among those elements: a deviation that rounding produced
at one of them is plausible at all of them. Which elements those are, one more NumPy evaluation
says, with the undetermined values set to NaN: NaN flows through arithmetic, sums, matmuls and
softmax rows, not through a ``where`` that did not take it. Elsewhere the reference is NumPy's
output, so it widens nothing; where the reached elements all agree across the runs (a garbage
value a larger one absorbed), it widens nothing either.

Where the runs put an undetermined value on both sides of zero (or at zero), it is anything in
a range holding zero, and what it reaches is anything, nan and inf included
(``Reference.unbounded``): ``3.0 / mean(x)``, x holding 2.8e306, -2.8e306 and 2**52, is 2e-14
in NumPy's pairwise order, inf where 2**52 was absorbed before the two cancel (a vectorized
sum) and about +-1e-289 in the runs (each moved an ulp); no run had the inf, and a 60 s
session reported cpu-vector's as a mismatch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from strategies.model import is_float

if TYPE_CHECKING:
    from ..case import Case
    from .decisions import Traces
    from .references import Reference

#: The name of the coupled evaluation; it starts like the perturbed runs' (``perturbed_outputs``).
COUPLED = "perturbed:coupled"


def _scattered(values: list[np.ndarray]) -> np.ndarray | None:
    """Where the runs' values of one node scatter: a float element whose spread, times FACTOR,
    reaches the node's largest finite magnitude; a boolean or integer element on which they
    differ at all. None where the runs disagree on the shape."""
    from ..oracles.tolerance import FACTOR

    first = values[0]
    if any(v.shape != first.shape for v in values):
        return None
    if not is_float(first.dtype):
        return np.any([v != first for v in values[1:]], axis=0)
    stack = np.stack([v.astype(np.float64) for v in values])
    finite = np.all(np.isfinite(stack), axis=0)
    if not np.any(finite):
        return np.zeros(first.shape, bool)
    scale = float(np.abs(stack[:, finite]).max())
    spread = np.where(finite, stack.max(axis=0) - stack.min(axis=0), 0.0)
    return (FACTOR * spread >= scale) & (spread > 0)


def undetermined(program: Any, runs: list[list[Any]]) -> dict[int, np.ndarray]:
    """Node index -> the mask of the elements where it makes a value undetermined (nodes
    without any are left out), from the perturbed runs' traces (each every node's value).

    Only a node whose operands the runs agree on can: downstream of a scattered value,
    scattering is inherited (the poisoned evaluation follows it). Where the runs took a decision
    differently (a comparison, a cast to an integer), nothing is: the output's spread is then
    no rounding's alone, since the runs move exact results too and so flip ties the truth
    computes exactly (``run.decisions`` settles those), and widening every coupled element by
    it would excuse what the flip did."""
    runs = _complete(program, runs)
    if len(runs) < 2 or _decided_apart(program, runs):
        return {}  # (decided differently: their spread is no rounding's alone)
    scattered: list[np.ndarray | None] = []
    found: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for index, node in enumerate(program.nodes):
            values = [np.asarray(run[index]) for run in runs]
            mask = _scattered(values) if values[0].size else np.zeros(values[0].shape, bool)
            scattered.append(mask)
            calm = all(
                scattered[j] is not None and not np.any(scattered[j]) for j in _sources(node)
            )
            if calm and mask is not None and is_float(values[0].dtype) and np.any(mask):
                found[index] = mask
    return found


def coupled_reference(
    case: Case, traces: Traces, numpy: Reference, perturbed: list[np.ndarray]
) -> Reference | None:
    """``perturbed:coupled`` (see the module docstring) in float64, or None where no
    undetermined value reaches a float output element. ``traces``: the perturbed runs' (and
    NumPy's) node values; ``perturbed``: the runs' outputs."""
    from .references import Reference

    if case.invalid is not None or not numpy.ok or not is_float(numpy.output.dtype):
        return None
    masks = undetermined(case.program, traces.runs)
    if masks:  # NumPy's own evaluation is one more run (it may decide unlike all of them)
        masks = undetermined(case.program, [traces.numpy_trace(), *traces.runs])

    expected = np.asarray(numpy.output, np.float64)
    runs = _complete(case.program, [traces.numpy_trace(), *traces.runs])
    spans = _spanning(case.program, runs) if len(runs) >= 2 else {}
    zeroed = _through_zero(case, _sign_unsettled(case.program, runs, spans), expected)
    if not masks:
        return None if zeroed is None else Reference(COUPLED, expected, unbounded=zeroed)
    reached = _reached(case, masks, expected.shape)
    if reached is None:
        return None
    reached &= np.isfinite(expected)
    straddling = _straddling(spans, masks)
    for index in _output_values(case.program):
        # The value itself is what the runs' spread measures; what is computed from it is
        # anything (a float64 mean of cancelling +-2.8e306 is about +-4e289 in the runs, and
        # the oracle accepted nan for it: its reproducer, judging alike since, showed that).
        straddling.pop(index, None)
    unbounded = _reached(case, straddling, expected.shape) if straddling else None
    if zeroed is not None:
        unbounded = zeroed if unbounded is None else unbounded | zeroed
    unbounded = unbounded if unbounded is not None and np.any(unbounded) else None
    shaped = [np.asarray(p, np.float64) for p in perturbed if np.shape(p) == expected.shape]
    if not np.any(reached) or not shaped:
        return None if unbounded is None else Reference(COUPLED, expected, unbounded=unbounded)
    with np.errstate(invalid="ignore", over="ignore"):
        deviation = np.max([np.abs(p - expected) for p in shaped], axis=0)
    deviation = np.where(reached & np.isfinite(deviation), deviation, 0.0)
    widest = float(deviation.max())
    if widest == 0.0:
        return None if unbounded is None else Reference(COUPLED, expected, unbounded=unbounded)
    with np.errstate(over="ignore"):
        moved = np.where(np.isfinite(expected + widest), expected + widest, expected - widest)
    return Reference(COUPLED, np.where(reached, moved, expected), unbounded=unbounded)


def _output_values(program: Any) -> list[int]:
    """The nodes whose values the output is, moved (the output's own, and back through ops
    that keep their first operand's values: a reshape, a transpose)."""
    from compiler import primitives

    found, ref = [], program.output
    while ref.kind == "node":
        found.append(ref.index)
        node = program.nodes[ref.index]
        if primitives.get(node.op).keeps != "values" or not node.args:
            break
        ref = node.args[0]
        if not hasattr(ref, "kind"):  # a constant
            break
    return found


def _reached(case: Case, masks: dict[int, np.ndarray], shape: tuple) -> np.ndarray | None:
    """The output elements the masked node elements reach (one NumPy evaluation with them set
    to NaN), or None where that evaluation fails."""
    output = _substituted(case, masks, np.nan, shape)
    return None if output is None else np.isnan(output)


def _complete(program: Any, runs: list[list[Any]]) -> list[list[Any]]:
    """The runs that traced every node of ``program`` (a failed one stops early)."""
    return [run for run in runs if len(run) == len(program.nodes)]


def _decided_apart(program: Any, runs: list[list[Any]]) -> bool:
    """Did the runs take a decision differently: a boolean or integer value (a comparison, a
    cast to an integer) that differs between them?"""
    for index in range(len(program.nodes)):
        values = [np.asarray(run[index]) for run in runs]
        first = values[0]
        if is_float(first.dtype) or not first.size or any(v.shape != first.shape for v in values):
            continue
        if any(np.any(v != first) for v in values[1:]):
            return True
    return False


def _spanning(program: Any, runs: list[list[Any]]) -> dict[int, np.ndarray]:
    """Node index -> the float elements the runs differ on and put on both sides of zero, or
    at zero (nodes without any are left out)."""
    found: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for index in range(len(program.nodes)):
            values = [np.asarray(run[index]) for run in runs]
            first = values[0]
            if not is_float(first.dtype) or not first.size:
                continue
            if any(v.shape != first.shape for v in values):
                continue
            stack = np.stack([v.astype(np.float64) for v in values])
            low, high = stack.min(axis=0), stack.max(axis=0)
            spans = (low <= 0) & (high >= 0) & (high > low)
            if np.any(spans):
                found[index] = spans
    return found


def _sign_unsettled(
    program: Any, runs: list[list[Any]], spans: dict[int, np.ndarray]
) -> dict[int, np.ndarray]:
    """Node index -> the float elements whose sign the runs do not settle (``spans``, their
    ``_spanning``). Only where the node's operands are settled (the first such node on each
    path: what follows inherits it), and nowhere if the runs took a decision differently
    (``run.decisions`` settles those)."""
    if not spans or _decided_apart(program, runs):
        return {}
    return {
        index: mask
        for index, mask in spans.items()
        if not _sources(program.nodes[index]) & spans.keys()
    }


def _sources(node: Any) -> set[int]:
    """The indices of the nodes ``node`` reads."""
    return {a.index for a in node.args if getattr(a, "kind", "") == "node"}


def _through_zero(
    case: Case, masks: dict[int, np.ndarray], expected: np.ndarray
) -> np.ndarray | None:
    """The output elements that are anything because a value whose sign the runs do not settle
    (``masks``: ``_sign_unsettled``) may be zero in a correct evaluation, and the program taken
    through that zero is not finite there: ``log(x @ y)`` of a row of ``x`` holding 2.8e306,
    -2.8e306 and 2**52 is 57.5 in NumPy's order and -inf where 2**52 was absorbed before the two
    cancelled (graph-numpy's matrix-vector order); the runs put the product at about
    +-3e291, and 0 is between. Its value is no larger than the node's other elements, so it
    is not undetermined by ``undetermined``'s measure, and a README session (60 s) reported
    graph-numpy's -inf. Each such element is set to +0.0 and to -0.0 in turn, and an output
    element that comes out nan or inf where NumPy's is finite is free. None: no such element."""
    if not masks:
        return None
    free = np.zeros(expected.shape, bool)
    for zero in (0.0, -0.0):
        output = _substituted(case, masks, zero, expected.shape)
        if output is not None:
            free |= ~np.isfinite(output) & np.isfinite(expected)
    return free if np.any(free) else None


def _substituted(
    case: Case, masks: dict[int, np.ndarray], value: float, shape: tuple
) -> np.ndarray | None:
    """The output (float64) of one NumPy evaluation with the masked node elements set to
    ``value``, or None where it fails or has another shape."""
    from .references import _evaluate, adapted, as_numpy

    def substitute(index: int, operands: list[Any], result: Any) -> Any:
        mask = masks.get(index)
        if mask is None:
            return result
        result = np.array(result, copy=True)
        result[np.broadcast_to(mask, result.shape)] = value
        return result

    with np.errstate(all="ignore"):
        tainted = _evaluate(
            "zeroed", adapted(case.program, np, as_numpy, None, substitute), case.inputs
        )
    if not tainted.ok or tainted.output.shape != shape:
        return None
    return np.asarray(tainted.output, np.float64)


def _straddling(
    spans: dict[int, np.ndarray], masks: dict[int, np.ndarray]
) -> dict[int, np.ndarray]:
    """Of the undetermined elements (``masks``), those the runs put on both sides of zero, or
    at zero (``spans``: the same runs' ``_spanning``)."""
    found = {}
    for index, mask in masks.items():
        both = spans.get(index)
        if both is not None and both.shape == mask.shape and np.any(both & mask):
            found[index] = both & mask
    return found


__all__ = ["COUPLED", "coupled_reference", "undetermined"]
