"""The frontend: tracing NumPy-style Python into a typed graph, with NumPy 2's rules.

``graph`` (nodes), ``trace`` (the tracing context), ``tensor`` (the traced array type, its array
namespace and NumPy's dispatch protocols), ``lang`` (the trace rule of each primitive) and
``pytree`` (argument trees). Every check is a primitive's result rule, so errors are NumPy's and
come before any MLIR is built.
"""

from .graph import Graph, Node, topological
from .lang import (
    astype,
    broadcast_to,
    causal_mask,
    elementwise,
    gather,
    getitem,
    matmul,
    reduce,
    reshape,
    transpose,
    where,
)
from .tensor import Namespace, Tensor, xp
from .trace import Trace, current_trace, tracing

__all__ = [
    "Graph",
    "Namespace",
    "Node",
    "Tensor",
    "Trace",
    "astype",
    "broadcast_to",
    "causal_mask",
    "current_trace",
    "elementwise",
    "gather",
    "getitem",
    "matmul",
    "reduce",
    "reshape",
    "topological",
    "tracing",
    "transpose",
    "where",
    "xp",
]
