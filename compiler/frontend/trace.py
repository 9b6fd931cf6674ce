"""Tracing context: the inputs of one specialization and the NumPy arrays it captures."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from ..dtypes import check_dtype
from ..errors import UnsupportedFeature
from .graph import Node

if TYPE_CHECKING:
    from .tensor import Tensor


class Trace:
    """Collects the inputs of one specialization while its Python function runs."""

    def __init__(self) -> None:
        self.inputs: list[Node] = []
        self.captured: dict[int, tuple[np.ndarray, Node]] = {}

    def input(self, shape: tuple[int, ...], dtype: np.dtype, name: str) -> Tensor:
        from .tensor import Tensor

        if any(d == 0 for d in shape):
            raise UnsupportedFeature(f"zero-size array argument {name} of shape {shape}")
        node = Node("input", (), tuple(shape), dtype, {"index": len(self.inputs), "name": name})
        self.inputs.append(node)
        return Tensor(node)

    def capture(self, array: np.ndarray) -> Tensor:
        """A NumPy array from the enclosing scope becomes an extra kernel argument."""
        from .tensor import Tensor

        key = id(array)
        if key not in self.captured:
            dtype = check_dtype(array.dtype, "captured array")
            tensor = self.input(array.shape, dtype, f"captured{len(self.captured)}")
            tensor.node.attrs["captured"] = True
            self.captured[key] = (array, tensor.node)
        return Tensor(self.captured[key][1])


# One stack per thread: two threads tracing at once must each capture into their own trace.
_LOCAL = threading.local()


def _stack() -> list[Trace]:
    if not hasattr(_LOCAL, "traces"):
        _LOCAL.traces = []
    return _LOCAL.traces


def current_trace() -> Trace:
    stack = _stack()
    if not stack:
        raise RuntimeError("traced tensors exist only while a @jit function is being traced")
    return stack[-1]


class tracing:  # noqa: N801 - used as a context manager
    """Makes ``trace`` the one that captured arrays join while the function runs."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    def __enter__(self) -> Trace:
        _stack().append(self.trace)
        return self.trace

    def __exit__(self, *exc: object) -> None:
        _stack().pop()


__all__ = ["Trace", "current_trace", "tracing"]
