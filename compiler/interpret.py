"""A reference interpreter of the traced graph over an array namespace (NumPy or ``jax.numpy``).

It evaluates the graph node by node with the namespace's own operations, in the dtypes the graph
says, without MLIR. Uses: telling a frontend bug (the graph is already wrong) from a lowering bug
(the graph is right, the compiled code is not), and backends that hand the same graph to another
array library (``jax.jit`` of this interpreter is the ``xla-cpu`` backend).

NumPy's semantics over any namespace: the trace already made every promotion an explicit cast
node, so each operation's operands arrive in the dtypes NumPy computes it in (the table's
``Primitive.numpy_dtypes``, the rule the harness's JAX reference follows too); operands that do
not are cast to them here (a guard for namespaces that promote on their own, such as JAX's
weak types), and every result is cast to its node's dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .frontend.graph import Graph, Node, topological

_REDUCE = {"add": "sum", "maximum": "max", "minimum": "min"}


def _in_numpy_dtypes(node: Node, args: list[Any]) -> list[Any]:
    """``args`` cast where they are not in the dtypes NumPy computes ``node``'s op in."""
    wanted = node.prim.numpy_dtypes([a for a in node.args], node)
    return [
        a if d is None or np.dtype(a.dtype) == d else a.astype(d)
        for a, d in zip(args, wanted, strict=True)
    ]


def _elementwise(xp: Any, node: Node, args: list[Any]) -> Any:
    prim, dtype = node.prim, node.dtype
    kind = prim.kind
    args = _in_numpy_dtypes(node, args)
    if kind == "cast":
        return args[0].astype(dtype)
    if kind == "copy":
        return xp.broadcast_to(args[0], node.shape)
    if kind == "select":
        return xp.where(args[0], args[1], args[2]).astype(dtype)
    ufunc = getattr(xp, prim.ufunc.__name__, None) if prim.ufunc is not None else None
    if ufunc is None:
        ufunc = getattr(xp, prim.name)
    result = ufunc(*args)
    return xp.asarray(result).astype(dtype)


def evaluate_node(xp: Any, node: Node, args: list[Any], errors: list[Any] | None = None) -> Any:
    """The value of ``node`` given its arguments' values. Out-of-range gather ids raise
    ValueError under NumPy; under a namespace that traces (``errors`` given), each gather
    appends a flag that is true when an id was out of range, for the caller to check."""
    op = node.op
    if op == "const":
        return xp.asarray(node.attrs["value"], dtype=node.dtype)
    if op == "elementwise":
        return _elementwise(xp, node, args)
    if op == "reduce":
        name = _REDUCE[node.prim.name]
        reducer = getattr(xp, name)
        axes = tuple(node.attrs["axes"])
        if name in ("max", "min"):
            # From the node's own identity, as the compiled loop starts: a wrong identity is
            # the graph's (the frontend's), not the lowering's (a bfloat16 max that started from
            # int32's least value was blamed on the built module).
            return reducer(args[0], axis=axes, initial=node.attrs["identity"]).astype(node.dtype)
        return reducer(args[0], axis=axes).astype(node.dtype)
    if op in ("matmul", "batch_matmul"):
        return xp.matmul(args[0], args[1]).astype(node.dtype)
    if op == "reshape":
        return xp.reshape(args[0], node.shape)
    if op == "transpose":
        return xp.transpose(args[0], node.attrs["perm"])
    if op == "slice":
        a = node.attrs
        index = tuple(
            slice(o, (o + s * st) if o + s * st >= 0 else None, st)
            for o, s, st in zip(a["offsets"], a["sizes"], a["strides"], strict=True)
        )
        return xp.reshape(args[0][index], node.shape)
    if op == "mask":
        size = node.shape[0]
        rows = xp.arange(size)[:, None]
        cols = xp.arange(size)[None, :]
        zero = xp.zeros(node.shape, dtype=node.dtype)
        return xp.where(cols <= rows, zero, xp.full(node.shape, node.attrs["value"], node.dtype))
    if op == "gather":
        table, ids = args
        rows = node.args[0].shape[0]
        if errors is not None:
            errors.append(xp.any((ids < 0) | (ids >= rows)))
        elif xp is np and ids.size and (ids.min() < 0 or ids.max() >= rows):
            raise ValueError("gather ids out of range for the table")
        return xp.take(table, xp.clip(ids, 0, rows - 1), axis=0)
    raise AssertionError(f"no interpretation of graph op {op!r}")


def evaluate_values(
    graph: Graph,
    arrays: list[Any],
    xp: Any = np,
    errors: list[Any] | None = None,
    each: Callable[[Any], Any] | None = None,
    at: Callable[[Any, Any], Any] | None = None,
) -> dict[int, Any]:
    """Every node's value (by ``id``) of ``graph`` on ``arrays``; ``each`` maps each input and
    each result as it is made (IREE's known issues flush subnormals with it), ``at`` each
    result with its node (they replace a wrong trig result with it)."""
    each = each or (lambda value: value)
    values: dict[int, Any] = {}
    for node in graph.inputs:
        values[id(node)] = each(arrays[node.attrs["index"]])
    with np.errstate(all="ignore"):
        for node in topological(graph.outputs):
            if id(node) not in values:
                args = [values[id(a)] for a in node.args]
                value = each(evaluate_node(xp, node, args, errors))
                values[id(node)] = at(node, value) if at is not None else value
    return values


def evaluate_graph(
    graph: Graph,
    arrays: list[Any],
    xp: Any = np,
    errors: list[Any] | None = None,
    at: Callable[[Any, Any], Any] | None = None,
) -> list[Any]:
    """The outputs of ``graph`` on ``arrays`` (in the graph's input order); ``errors`` collects
    the gathers' out-of-range flags instead of raising (see ``evaluate_node``); ``at`` as for
    ``evaluate_values``."""
    values = evaluate_values(graph, arrays, xp, errors, at=at)
    return [values[id(node)] for node in graph.outputs]


__all__ = ["evaluate_graph", "evaluate_node", "evaluate_values"]
