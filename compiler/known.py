"""Known bugs and by-design deviations of the compilers behind our backends (IREE's in
``compiler.iree_known``, XLA's in ``compiler.xla``), and the check they share: is a wrong
answer the subnormal flushing of IREE's and XLA's CPU runtimes (``flushing_explains``)?
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dtypes import finfo, is_float
from .frontend.graph import Graph


@dataclass(frozen=True)
class KnownIssue:
    """A bug (or deviation by design) of another compiler that this project has met: where it
    is reported, where its root cause lives, how to avoid it."""

    name: str
    upstream: str
    cause: str
    workaround: str

    def to_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "upstream": self.upstream,
            "cause": self.cause,
            "workaround": self.workaround,
        }


def flushed(value: Any) -> Any:
    """``value`` with its float subnormals replaced by zeros of the same sign."""
    a = np.asarray(value)
    if not is_float(a.dtype):
        return value
    with np.errstate(invalid="ignore"):
        small = np.abs(a.astype(np.float64)) < float(finfo(a.dtype).tiny)
    return np.where(small, np.copysign(np.zeros((), np.float64), a.astype(np.float64)), a).astype(
        a.dtype
    )


def near(a: np.ndarray, b: np.ndarray, relative: float, tiny: float) -> np.ndarray:
    """Elementwise: equal (NaN with NaN, an infinity with itself), or finite and within
    ``relative`` of ``b`` (or ``tiny`` of it, near zero)."""
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= relative * np.abs(b) + tiny)
    return (a == b) | (np.isnan(a) & np.isnan(b)) | close


def _answers(graph: Graph, inputs: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per output, (NumPy's answer on ``inputs``, NumPy's answer with every subnormal input and
    result flushed to zero)."""
    from .interpret import evaluate_graph, evaluate_values

    plain = evaluate_graph(graph, list(inputs))
    values = evaluate_values(graph, list(inputs), each=flushed)
    return [
        (np.asarray(want), np.asarray(values[id(n)]))
        for want, n in zip(plain, graph.outputs, strict=True)
    ]


def _differ(want: np.ndarray, alt: np.ndarray) -> bool:
    """Does flushing change the answer (beyond 4 ulps of a float)?"""
    if not is_float(want.dtype):
        return not np.array_equal(want, alt)
    a, b = want.astype(np.float64), alt.astype(np.float64)
    return not np.all(near(b, a, 4 * float(finfo(want.dtype).eps), 0.0))


def off_answer(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Elementwise: is ``got`` (a backend's answer, of ``want``'s shape) off NumPy's answer
    ``want``: beyond 4 ulps of a float (or twice its smallest normal, near zero), at all for
    integers and booleans? The elements a known issue must explain."""
    if not is_float(want.dtype):
        return got != want
    info = finfo(want.dtype)
    a, w = got.astype(np.float64), want.astype(np.float64)
    return ~near(a, w, 4 * float(info.eps), 2 * float(info.tiny))


def _predicted(want: np.ndarray, alt: np.ndarray, got: np.ndarray) -> bool:
    """Is every element of ``got`` that is not NumPy's answer ``want`` the flushed answer
    ``alt`` (within 1%)?"""
    if got.shape != want.shape:
        return False
    off = off_answer(want, got)
    if not is_float(want.dtype):
        return not np.any(off & (got != alt))
    tiny = 2 * float(finfo(want.dtype).tiny)
    a, f = got.astype(np.float64), alt.astype(np.float64)
    return not np.any(off & ~near(a, f, 1e-2, tiny))


def _explained(answers: list[tuple[np.ndarray, np.ndarray]], outputs: list[Any] | None) -> bool:
    """Is every element of ``outputs`` (None: no answer to check) that is not NumPy's answer
    the alternative answer of ``answers`` (pairs of NumPy's and the alternative, per output)?"""
    if outputs is None:
        return True
    return len(outputs) == len(answers) and all(
        _predicted(want, alt, np.asarray(got))
        for (want, alt), got in zip(answers, outputs, strict=True)
    )


def depends_on_subnormals(graph: Graph, inputs: list[np.ndarray]) -> bool:
    """Does the graph's answer on ``inputs`` change when every subnormal input and result is
    flushed to zero, as IREE's and XLA's CPU runtimes do? Evaluated by NumPy."""
    return any(_differ(want, alt) for want, alt in _answers(graph, inputs))


def flushing_explains(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is a wrong answer on ``inputs`` subnormal flushing? The answer depends on subnormals,
    and ``outputs`` (the backend's, where given) are what flushing gives: every element that is
    not NumPy's answer is NumPy's answer with subnormals flushed (within 1%). A wrong answer
    flushing predicts is the flushing; one it merely could touch (a case that holds a subnormal
    and fails elsewhere) may be a new bug."""
    answers = _answers(graph, inputs)
    if not any(_differ(want, alt) for want, alt in answers):
        return False
    return _explained(answers, outputs)


def _is_conversion(node: Any, source: Any, target: Any = None) -> bool:
    """Is ``node`` an ``astype`` from dtype ``source`` (to ``target``, if given)?"""
    return (
        node.op == "elementwise"
        and node.prim.name == "astype"
        and node.args[0].dtype == source
        and (target is None or node.dtype == target)
    )


def _is_half_of_double(node: Any) -> bool:
    """Is ``node`` a float64 -> float16 conversion?"""
    return _is_conversion(node, np.float64, np.float16)


def _rewrite_explains(
    graph: Graph,
    inputs: list[np.ndarray],
    outputs: list[Any] | None,
    rewrite: Callable[[Any, Callable[[Any], Any]], Any],
) -> bool:
    """Does evaluating ``graph`` with ``rewrite(node, value_of)`` in place of the nodes it
    answers for (None: NumPy's own value) change NumPy's answer on ``inputs``, and is every
    element of ``outputs`` (where given) that is not NumPy's answer that answer (within 1%)?"""
    from .interpret import evaluate_graph, evaluate_values

    made: dict[int, Any] = {}

    def value_of(node: Any) -> Any:
        return inputs[node.attrs["index"]] if node.op == "input" else made[id(node)]

    def at(node: Any, value: Any) -> Any:
        replaced = rewrite(node, value_of)
        made[id(node)] = value if replaced is None else replaced
        return made[id(node)]

    plain = evaluate_graph(graph, list(inputs))
    values = evaluate_values(graph, list(inputs), at=at)
    answers = [
        (np.asarray(want), np.asarray(values[id(n)]))
        for want, n in zip(plain, graph.outputs, strict=True)
    ]
    if all(np.array_equal(want, alt, equal_nan=True) for want, alt in answers):
        return False
    return _explained(answers, outputs)


def double_rounding_explains(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is a wrong answer on ``inputs`` a float64 -> float16 conversion rounded twice, through
    float32 (as IREE's ``truncf`` and XLA's ``convert`` do)? The graph converts float64 to
    float16, doing so through float32 changes its answer, and every element of ``outputs``
    (where given) that is not NumPy's answer is that answer (within 1%)."""

    def twice(node: Any, value_of: Callable[[Any], Any]) -> Any:
        if not _is_half_of_double(node):
            return None
        return np.asarray(value_of(node.args[0])).astype(np.float32).astype(np.float16)

    if not any(_is_half_of_double(n) for n in graph.nodes()):
        return False
    return _rewrite_explains(graph, inputs, outputs, twice)


def _bool_factor(node: Any) -> int | None:
    """Which operand of a float ``multiply`` ``node`` is a bool converted to a float (0 or 1),
    if one is."""
    if node.op != "elementwise" or node.prim.name != "multiply" or not is_float(node.dtype):
        return None
    return next((i for i, arg in enumerate(node.args) if _is_conversion(arg, np.bool_)), None)


def select_rewrite_explains(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is a wrong answer on ``inputs`` XLA's rewrite of ``x * float(b)`` into
    ``select(b, x, 0)``, which makes ``inf * 0`` and ``nan * 0`` zero? The graph multiplies by a
    converted bool, evaluating it so changes the answer, and every element of ``outputs``
    (where given) that is not NumPy's answer is that answer (within 1%)."""

    def select(node: Any, value_of: Callable[[Any], Any]) -> Any:
        which = _bool_factor(node)
        if which is None:
            return None
        picked = np.asarray(value_of(node.args[which].args[0]))
        operand = np.asarray(value_of(node.args[1 - which]))
        return np.where(picked, operand, np.zeros((), node.dtype)).astype(node.dtype)

    if not any(_bool_factor(n) is not None for n in graph.nodes()):
        return False
    return _rewrite_explains(graph, inputs, outputs, select)


__all__ = [
    "KnownIssue",
    "depends_on_subnormals",
    "double_rounding_explains",
    "select_rewrite_explains",
    "flushed",
    "flushing_explains",
    "near",
    "off_answer",
]
