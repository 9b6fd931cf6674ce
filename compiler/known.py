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


__all__ = ["KnownIssue", "depends_on_subnormals", "flushed"]
