"""The traced graph: typed nodes the frontend builds and the emitter lowers.

Graph operations are few and structural: ``input``, ``const``, ``elementwise`` (carrying its
:class:`~compiler.primitives.Primitive`, whose scalar lowering the emitter applies), ``reduce``
(carrying the elementwise primitive that combines), ``matmul`` (2-D), ``batch_matmul``,
``reshape``, ``transpose``, ``slice``, ``mask`` and ``gather``. Every user-level primitive traces
into these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

GRAPH_OPS = (
    "input",
    "const",
    "elementwise",
    "reduce",
    "matmul",
    "batch_matmul",
    "reshape",
    "transpose",
    "slice",
    "mask",
    "gather",
)


@dataclass(eq=False)
class Node:
    """One value of the graph. ``op`` is one of ``GRAPH_OPS``; ``attrs`` hold its static data
    (``prim`` for elementwise nodes)."""

    op: str
    args: tuple[Node, ...]
    shape: tuple[int, ...]
    dtype: np.dtype
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def prim(self) -> Any:
        """The primitive of an elementwise or reduce node."""
        return self.attrs.get("prim")


@dataclass
class Graph:
    """A traced program: its inputs (in ABI order) and outputs."""

    inputs: list[Node]
    outputs: list[Node]

    def nodes(self) -> list[Node]:
        return topological(self.outputs)


def topological(outputs: Sequence[Node]) -> list[Node]:
    """Nodes reachable from ``outputs``, each after its arguments (iterative, so deep graphs
    do not hit the recursion limit)."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(node, False) for node in reversed(outputs)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((arg, False) for arg in reversed(node.args) if id(arg) not in seen)
    return order


__all__ = ["GRAPH_OPS", "Graph", "Node", "topological"]
