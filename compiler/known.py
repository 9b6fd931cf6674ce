"""Known bugs and by-design deviations of the compilers behind our backends (IREE's in
``compiler.iree_known``, XLA's in ``compiler.xla``), and the check they share: does a case's
answer depend on subnormals (``depends_on_subnormals``), which IREE's and XLA's CPU runtimes
flush to zero?
"""

from __future__ import annotations

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


def depends_on_subnormals(graph: Graph, inputs: list[np.ndarray]) -> bool:
    """Does the graph's answer on ``inputs`` change when every subnormal input and result is
    flushed to zero, as IREE's and XLA's CPU runtimes do? Evaluated by NumPy."""
    from .interpret import evaluate_graph, evaluate_values

    plain = evaluate_graph(graph, list(inputs))
    values = evaluate_values(graph, list(inputs), each=flushed)
    for want, got in zip(plain, (values[id(n)] for n in graph.outputs), strict=True):
        want, got = np.asarray(want), np.asarray(got)
        if is_float(want.dtype):
            a, b = want.astype(np.float64), got.astype(np.float64)
            same = (a == b) | (np.isnan(a) & np.isnan(b))
            ulp = float(finfo(want.dtype).eps) * np.abs(a)
            with np.errstate(invalid="ignore"):
                close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= 4 * ulp)
            if not np.all(same | close):
                return True
        elif not np.array_equal(want, got):
            return True
    return False


def _near(a: np.ndarray, b: np.ndarray, relative: float, tiny: float) -> np.ndarray:
    """Elementwise: equal (NaN with NaN, an infinity with itself), or finite and within
    ``relative`` of ``b`` (or ``tiny`` of it, near zero)."""
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= relative * np.abs(b) + tiny)
    return (a == b) | (np.isnan(a) & np.isnan(b)) | close


def explained_by_flushing(graph: Graph, inputs: list[np.ndarray], outputs: list[Any]) -> bool:
    """Is every element of ``outputs`` (a backend's answer on ``inputs``) that is not NumPy's
    answer the answer NumPy gives with subnormals flushed (within 1%)? A wrong answer that
    flushing predicts is the flushing; one it merely could touch (a case that holds a subnormal
    and fails elsewhere) may be a new bug."""
    from .interpret import evaluate_graph, evaluate_values

    plain = evaluate_graph(graph, list(inputs))
    values = evaluate_values(graph, list(inputs), each=flushed)
    alternatives = [values[id(n)] for n in graph.outputs]
    if len(outputs) != len(plain):
        return False
    for want, alt, got in zip(plain, alternatives, outputs, strict=True):
        want, alt, got = np.asarray(want), np.asarray(alt), np.asarray(got)
        if got.shape != want.shape:
            return False
        if not is_float(want.dtype):
            if np.any((got != want) & (got != alt)):
                return False
            continue
        a, w, f = (v.astype(np.float64) for v in (got, want, alt))
        info = finfo(want.dtype)
        tiny = 2 * float(info.tiny)
        off = ~_near(a, w, 4 * float(info.eps), tiny)
        if np.any(off & ~_near(a, f, 1e-2, tiny)):
            return False
    return True


__all__ = ["KnownIssue", "depends_on_subnormals", "explained_by_flushing", "flushed"]
