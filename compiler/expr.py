"""The traced tensor language: a typed expression graph with NumPy 2's shape, dtype and error rules.

Every frontend check lives here, so an invalid program fails with NumPy's error class and a
message that says what is wrong *before* any MLIR is built. Result dtypes are not re-derived by
hand: each operation asks NumPy itself, on 0-d stand-ins of the operand dtypes (Python scalars
stay weak, NumPy scalars and arrays stay strong), so NEP 50 promotion is NumPy's by construction.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

FLOAT32 = np.dtype(np.float32)
FLOAT64 = np.dtype(np.float64)
INT32 = np.dtype(np.int32)
BOOL = np.dtype(np.bool_)
SUPPORTED_DTYPES = (FLOAT32, FLOAT64, INT32, BOOL)
FLOATS = (FLOAT32, FLOAT64)


class UnsupportedFeature(NotImplementedError):
    """A program NumPy accepts but this compiler does not support yet (a known limitation)."""

    def __init__(self, feature: str) -> None:
        super().__init__(f"not supported by the compiler yet: {feature}")
        self.feature = feature

    def __reduce__(self) -> tuple:  # pickles (across worker processes) as it was raised
        return (type(self), (self.feature,))


class InvalidIndex(IndexError, ValueError):
    """NumPy raises IndexError for a bad index; we are also a ValueError, like NumPy's AxisError."""


def check_dtype(dtype: Any, what: str) -> np.dtype:
    """The NumPy dtype for ``dtype`` if the compiler handles it, else a TypeError naming it."""
    try:
        dt = np.dtype(dtype)
    except TypeError as error:
        raise TypeError(f"{what}: {dtype!r} is not a dtype") from error
    if dt not in SUPPORTED_DTYPES:
        names = ", ".join(str(d) for d in SUPPORTED_DTYPES)
        raise TypeError(f"{what}: unsupported dtype {dt} (supported: {names})")
    return dt


@dataclass(eq=False)
class Node:
    """One value of the graph. ``op`` names the operation; ``attrs`` hold its static data."""

    op: str
    args: tuple[Node, ...]
    shape: tuple[int, ...]
    dtype: np.dtype
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return math.prod(self.shape)


# --------------------------------------------------------------------------------------------
# Tracing context: inputs, captured NumPy arrays


class Trace:
    """Collects the inputs of one specialization while its Python function runs."""

    def __init__(self) -> None:
        self.inputs: list[Node] = []
        self.captured: dict[int, tuple[np.ndarray, Node]] = {}

    def input(self, shape: tuple[int, ...], dtype: np.dtype, name: str) -> Tensor:
        if any(d == 0 for d in shape):
            raise UnsupportedFeature(f"zero-size array argument {name} of shape {shape}")
        node = Node("input", (), tuple(shape), dtype, {"index": len(self.inputs), "name": name})
        self.inputs.append(node)
        return Tensor(node)

    def capture(self, array: np.ndarray) -> Tensor:
        """A NumPy array from the enclosing scope becomes an extra kernel argument."""
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


# --------------------------------------------------------------------------------------------
# Operands: tensors, captured arrays and scalars


def _as_operand(value: Any, what: str) -> Tensor | Any:
    """A Tensor, or a scalar kept as-is (Python scalars weak, NumPy scalars strong)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        return current_trace().capture(value)
    if isinstance(value, (bool, int, float, np.generic)):
        if isinstance(value, np.generic) and np.dtype(value.dtype).kind not in "biuf":
            raise TypeError(f"{what}: unsupported scalar {value!r} of dtype {value.dtype}")
        return value
    if isinstance(value, complex):
        raise UnsupportedFeature(f"complex numbers ({what})")
    if isinstance(value, (list, tuple)):
        raise UnsupportedFeature(f"nested Python sequences as operands ({what}); use a NumPy array")
    raise TypeError(f"{what}: unsupported operand of type {type(value).__name__}")


def _stand_in(value: Tensor | Any) -> Any:
    """What NumPy sees when it decides a result dtype: a 0-d array of a tensor's dtype."""
    if isinstance(value, Tensor):
        return np.empty((), value.dtype)
    return value


def _numpy_dtype(fn: Callable[..., Any], operands: Sequence[Any], what: str) -> np.dtype:
    """Ask NumPy for the result dtype of ``fn`` on stand-ins; its errors are ours."""
    with np.errstate(all="ignore"):
        try:
            result = fn(*[_stand_in(v) for v in operands])
        except np.exceptions.DTypePromotionError as error:
            raise TypeError(f"{what}: {error}") from error
        except (TypeError, OverflowError) as error:
            raise type(error)(f"{what}: {error}") from error
    dtype = np.asarray(result).dtype
    if dtype not in SUPPORTED_DTYPES:
        raise UnsupportedFeature(f"{what} with a result of dtype {dtype} (NumPy's promotion)")
    return dtype


def _constant(value: Any, dtype: np.dtype) -> Node:
    """A scalar converted to ``dtype`` exactly as NumPy converts it."""
    with np.errstate(all="ignore"):
        converted = np.asarray(value).astype(dtype)
    scalar = converted.item()
    return Node("const", (), (), dtype, {"value": scalar})


def _converted(value: Tensor | Any, dtype: np.dtype) -> Node:
    if isinstance(value, Tensor):
        return astype(value, dtype).node
    return _constant(value, dtype)


def broadcast_shapes(*shapes: tuple[int, ...], what: str = "broadcast") -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError as error:
        listing = " ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"{what}: operands could not be broadcast together: {listing}") from error


# --------------------------------------------------------------------------------------------
# Elementwise operations

# name -> (NumPy function used for dtype rules, category)
_BINARY: dict[str, Callable[..., Any]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.true_divide,
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
_COMPARE: dict[str, Callable[..., Any]] = {
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "equal": np.equal,
    "not_equal": np.not_equal,
}
_UNARY: dict[str, Callable[..., Any]] = {
    "negative": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sqrt": np.sqrt,
}


def _tensors(*values: Any) -> list[Tensor]:
    return [v for v in values if isinstance(v, Tensor)]


def binary(name: str, a: Any, b: Any) -> Tensor:
    """Elementwise binary op with NumPy broadcasting and NEP 50 promotion."""
    a, b = _as_operand(a, name), _as_operand(b, name)
    if not _tensors(a, b):
        raise TypeError(f"{name}: at least one operand must be a traced tensor")
    dtype = _numpy_dtype(_BINARY[name], (a, b), name)
    if dtype == BOOL:
        raise UnsupportedFeature(f"{name} on boolean tensors")
    if name == "power" and dtype.kind != "f":
        raise UnsupportedFeature(f"power on {dtype} tensors")
    shape = broadcast_shapes(*[t.shape for t in _tensors(a, b)], what=name)
    if name == "power" and isinstance(a, Tensor) and not isinstance(b, Tensor) and b == 0.5:
        # NumPy computes a scalar power of 0.5 as sqrt, which differs from pow() at -inf
        # (nan, not inf) and -0.0 (-0.0, not 0.0).
        return unary("sqrt", astype(a, dtype))
    args = (_converted(a, dtype), _converted(b, dtype))
    return Tensor(Node("elementwise", args, shape, dtype, {"fn": name}))


def compare(name: str, a: Any, b: Any) -> Tensor:
    """Comparison in the operands' common dtype, giving a boolean tensor."""
    a, b = _as_operand(a, name), _as_operand(b, name)
    if not _tensors(a, b):
        raise TypeError(f"{name}: at least one operand must be a traced tensor")
    _numpy_dtype(_COMPARE[name], (a, b), name)
    try:
        common = _numpy_dtype(np.add, (a, b), name) if BOOL not in _dtypes(a, b) else None
    except OverflowError:
        # NumPy compares int32 with an out-of-range Python int exactly; in float64 the int32
        # side is exact and the big int stays beyond the int32 range, so the order is kept.
        common = FLOAT64
    if common is None or common == BOOL:
        raise UnsupportedFeature(f"{name} on boolean tensors")
    shape = broadcast_shapes(*[t.shape for t in _tensors(a, b)], what=name)
    args = (_converted(a, common), _converted(b, common))
    return Tensor(Node("elementwise", args, shape, BOOL, {"fn": name}))


def _dtypes(*values: Any) -> list[np.dtype]:
    return [v.dtype for v in values if isinstance(v, Tensor)]


def unary(name: str, x: Any) -> Tensor:
    x = _as_operand(x, name)
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a traced tensor")
    dtype = _numpy_dtype(_UNARY[name], (x,), name)
    if x.dtype == BOOL:
        raise UnsupportedFeature(f"{name} on boolean tensors")
    arg = _converted(x, dtype)
    return Tensor(Node("elementwise", (arg,), x.shape, dtype, {"fn": name}))


_MISSING = object()


def where(condition: Any, a: Any = _MISSING, b: Any = _MISSING) -> Tensor:
    """``np.where(condition, a, b)``: a nonzero condition selects ``a``."""
    if a is _MISSING and b is _MISSING:
        raise UnsupportedFeature("np.where with one argument (nonzero indices)")
    if a is _MISSING or b is _MISSING:
        raise ValueError("where: either both or neither of x and y should be given")
    condition, a, b = (_as_operand(v, "where") for v in (condition, a, b))
    if not _tensors(condition, a, b):
        raise TypeError("where: at least one operand must be a traced tensor")
    dtype = _numpy_dtype(np.where, (condition, a, b), "where")
    shape = broadcast_shapes(*[t.shape for t in _tensors(condition, a, b)], what="where")
    if isinstance(condition, Tensor):
        cond = condition if condition.dtype == BOOL else compare("not_equal", condition, 0)
        cond_node = cond.node
    else:
        cond_node = _constant(bool(condition), BOOL)
    args = (cond_node, _converted(a, dtype), _converted(b, dtype))
    return Tensor(Node("elementwise", args, shape, dtype, {"fn": "select"}))


def astype(x: Any, dtype: Any) -> Tensor:
    """``x.astype(dtype)`` with NumPy's C-style conversions (float -> int truncates)."""
    x = _as_operand(x, "astype")
    if not isinstance(x, Tensor):
        raise TypeError("astype: expected a traced tensor")
    target = check_dtype(dtype, "astype")
    if x.dtype == target:
        return x
    return Tensor(Node("elementwise", (x.node,), x.shape, target, {"fn": "cast"}))


# --------------------------------------------------------------------------------------------
# Reductions

_REDUCE: dict[str, Callable[..., Any]] = {
    "sum": np.sum,
    "max": np.max,
    "min": np.min,
    "mean": np.mean,
    "var": np.var,
}


def _axes(axis: Any, ndim: int, what: str, ordered: bool = True) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, Tensor):
        raise TypeError(f"{what}: axis must be a static integer, not a traced tensor")
    if isinstance(axis, list):
        raise TypeError(
            f"{what}: axis must be an int or a tuple; "
            "'list' object cannot be interpreted as an integer"
        )
    if isinstance(axis, tuple):
        items = tuple(axis)
    else:
        items = (axis,)
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            raise TypeError(f"{what}: axis must be an integer or a tuple of integers, got {axis!r}")
    try:
        axes = normalize_axis_tuple(tuple(int(i) for i in items), ndim, "axis")
        # Sorted for reductions: (1, 0) reduces the same axes as (0, 1), and linalg.reduce
        # wants them in increasing order. A permutation keeps its order.
        return tuple(sorted(axes)) if ordered else tuple(axes)
    except np.exceptions.AxisError as error:
        raise np.exceptions.AxisError(f"{what}: {error}") from None
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None


def reduce(name: str, x: Any, axis: Any = None, keepdims: bool = False, **kwargs: Any) -> Tensor:
    """``sum/max/min/mean/var`` over ``axis`` (None, int, negative, tuple) with ``keepdims``."""
    unknown = {k: v for k, v in kwargs.items() if v is not None and not (k == "ddof" and v == 0)}
    if unknown:
        raise UnsupportedFeature(f"{name} with arguments {sorted(unknown)}")
    x = _as_operand(x, name)
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a traced tensor")
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"{name}: keepdims must be a bool")
    axes = _axes(axis, x.ndim, name)
    dtype = _numpy_dtype(_REDUCE[name], (x,), name)
    if x.dtype == BOOL:
        raise UnsupportedFeature(f"{name} of a boolean tensor")
    if name == "mean":
        total = reduce("sum", astype(x, dtype), axes, keepdims)
        count = math.prod(x.shape[a] for a in axes)
        return binary("divide", total, count)
    if name == "var":
        xf = astype(x, dtype)
        centered = xf - reduce("mean", xf, axes, keepdims=True)
        return reduce("mean", centered * centered, axes, keepdims)
    if not axes:
        return astype(x, dtype)
    kept = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    node = Node("reduce", (x.node,), kept, dtype, {"fn": name, "axes": axes})
    result = Tensor(node)
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        result = reshape(result, shape)
    return result


# --------------------------------------------------------------------------------------------
# Matmul


def matmul(a: Any, b: Any) -> Tensor:
    """Full ``np.matmul``: 1-D operands, 2-D, and broadcast batch dimensions of any rank.

    Everything lowers onto ``linalg.matmul`` / ``linalg.batch_matmul`` (through reshapes and an
    explicit broadcast of the batch dimensions), never onto a generic that hides the matmul.
    """
    a, b = _as_operand(a, "matmul"), _as_operand(b, "matmul")
    for position, operand in enumerate((a, b)):
        if not isinstance(operand, Tensor):
            raise ValueError(
                f"matmul: Input operand {position} does not have enough dimensions "
                "(scalars are not allowed; use *)"
            )
        if operand.ndim == 0:
            raise ValueError(
                f"matmul: Input operand {position} does not have enough dimensions (it is 0-d)"
            )
    dtype = _numpy_dtype(lambda x, y: np.matmul(x[None, None], y[None, None]), (a, b), "matmul")
    if dtype == BOOL:
        raise UnsupportedFeature("matmul of boolean tensors")
    a, b = astype(a, dtype), astype(b, dtype)
    a2 = reshape(a, (1, a.shape[0])) if a.ndim == 1 else a
    b2 = reshape(b, (b.shape[0], 1)) if b.ndim == 1 else b
    m, k = a2.shape[-2:]
    k2, n = b2.shape[-2:]
    if k != k2:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
            f"(size {k2} is different from {k}): shapes {a.shape} @ {b.shape}"
        )
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2], what="matmul batch dimensions")
    if not batch:
        out = Tensor(Node("matmul", (a2.node, b2.node), (m, n), dtype))
    elif b2.ndim == 2:
        # (..., M, K) @ (K, N): one 2-D matmul over the flattened rows.
        rows = reshape(a2, (math.prod(a2.shape[:-1]), k))
        flat = Tensor(Node("matmul", (rows.node, b2.node), (rows.shape[0], n), dtype))
        out = reshape(flat, batch + (m, n))
    else:
        count = math.prod(batch)
        lhs = reshape(broadcast_to(a2, batch + (m, k)), (count, m, k))
        rhs = reshape(broadcast_to(b2, batch + (k, n)), (count, k, n))
        flat = Tensor(Node("batch_matmul", (lhs.node, rhs.node), (count, m, n), dtype))
        out = reshape(flat, batch + (m, n))
    final = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    return reshape(out, final) if out.shape != final else out


def broadcast_to(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Materialized ``np.broadcast_to`` (a copy: later ops need a real buffer)."""
    target = broadcast_shapes(x.shape, shape, what="broadcast_to")
    if target != tuple(shape):
        raise ValueError(f"broadcast_to: cannot broadcast {x.shape} to {tuple(shape)}")
    if x.shape == target:
        return x
    return Tensor(Node("elementwise", (x.node,), target, x.dtype, {"fn": "copy"}))


# --------------------------------------------------------------------------------------------
# Layout: reshape, transpose, static basic indexing


def _shape_argument(shape: Any, what: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return (int(shape),)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{what}: shape must be a tuple of integers, got {type(shape).__name__}")
    out = []
    for item in shape:
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            raise TypeError(f"{what}: shape entries must be integers, got {item!r}")
        out.append(int(item))
    return tuple(out)


def reshape(x: Any, shape: Any, order: str = "C") -> Tensor:
    """``np.reshape`` with at most one ``-1``; the element count must be preserved."""
    x = _as_operand(x, "reshape")
    if not isinstance(x, Tensor):
        raise TypeError("reshape: expected a traced tensor")
    if order != "C":
        raise UnsupportedFeature(f"reshape with order={order!r}")
    new = list(_shape_argument(shape, "reshape"))
    unknown = [i for i, d in enumerate(new) if d == -1]
    if len(unknown) > 1:
        raise ValueError("reshape: can only specify one unknown dimension (-1)")
    if any(d < -1 for d in new):
        raise ValueError(f"reshape: negative dimensions not allowed in {tuple(new)}")
    if unknown:
        known = math.prod(d for d in new if d != -1)
        if known == 0 or x.size % known:
            raise ValueError(
                f"reshape: cannot reshape array of size {x.size} into shape {tuple(new)}"
            )
        new[unknown[0]] = x.size // known
    if math.prod(new) != x.size:
        raise ValueError(f"reshape: cannot reshape array of size {x.size} into shape {tuple(new)}")
    if tuple(new) == x.shape:
        return x
    return Tensor(Node("reshape", (x.node,), tuple(new), x.dtype))


def transpose(x: Any, axes: Any = None) -> Tensor:
    """``np.transpose`` / ``np.permute_dims``: ``axes`` must be a permutation of the dims."""
    x = _as_operand(x, "transpose")
    if not isinstance(x, Tensor):
        raise TypeError("transpose: expected a traced tensor")
    if axes is None:
        perm = tuple(reversed(range(x.ndim)))
    else:
        items = _shape_argument(axes, "transpose axes")
        if len(items) != x.ndim:
            raise ValueError(f"transpose: axes {items} don't match array of rank {x.ndim}")
        perm = _axes(items, x.ndim, "transpose", ordered=False)
        if len(set(perm)) != len(perm):
            raise ValueError(f"transpose: repeated axis in transpose axes {items}")
    if perm == tuple(range(x.ndim)):
        return x
    if x.node.op == "transpose":  # transpose of a transpose is one transpose
        inner = x.node.attrs["perm"]
        return transpose(Tensor(x.node.args[0]), tuple(inner[p] for p in perm))
    shape = tuple(x.shape[p] for p in perm)
    return Tensor(Node("transpose", (x.node,), shape, x.dtype, {"perm": perm}))


def getitem(x: Tensor, index: Any) -> Tensor:
    """Static basic indexing: slices (positive steps), ints, None and Ellipsis."""
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if isinstance(item, Tensor) or isinstance(item, (np.ndarray, list)):
            raise UnsupportedFeature("advanced (array) indexing")
        if isinstance(item, (bool, np.bool_)):
            raise UnsupportedFeature("boolean scalar indexing")
        if not (item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer))):
            raise InvalidIndex(
                "only integers, slices (`:`), ellipsis (`...`) and None are valid indices, "
                f"got {item!r}"
            )
    if sum(item is Ellipsis for item in items) > 1:
        raise InvalidIndex("an index can only have a single ellipsis ('...')")
    consuming = sum(item is not None and item is not Ellipsis for item in items)
    if consuming > x.ndim:
        raise InvalidIndex(
            f"too many indices for array: array is {x.ndim}-dimensional, "
            f"but {consuming} were indexed"
        )
    expanded: list[Any] = []
    for item in items:
        if item is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - consuming))
        else:
            expanded.append(item)
    if Ellipsis not in items:
        expanded.extend([slice(None)] * (x.ndim - consuming))

    offsets, sizes, strides, kept, final = [], [], [], [], []
    dim = 0
    for item in expanded:
        if item is None:
            final.append(1)
            continue
        extent = x.shape[dim]
        if isinstance(item, slice):
            for part in (item.start, item.stop, item.step):
                if part is not None and not isinstance(part, (int, np.integer)):
                    raise TypeError(f"slice indices must be integers or None, got {part!r}")
            if item.step is not None and item.step == 0:
                raise ValueError("slice step cannot be zero")
            if item.step is not None and item.step < 0:
                raise UnsupportedFeature("slices with negative steps")
            start, stop, step = item.indices(extent)
            count = len(range(start, stop, step))
            if count == 0:
                raise UnsupportedFeature(
                    f"empty slice {item} of a dimension of size {extent} (zero-size result)"
                )
            offsets.append(start)
            sizes.append(count)
            strides.append(step)
            kept.append(True)
            final.append(count)
        else:
            position = int(item)
            if not -extent <= position < extent:
                raise InvalidIndex(
                    f"index {position} is out of bounds for axis {dim} with size {extent}"
                )
            offsets.append(position % extent)
            sizes.append(1)
            strides.append(1)
            kept.append(False)
        dim += 1
    result = x
    if tuple(sizes) != x.shape or any(offsets) or not all(kept):
        shape = tuple(s for s, k in zip(sizes, kept, strict=True) if k)
        attrs = {"offsets": tuple(offsets), "sizes": tuple(sizes), "strides": tuple(strides)}
        result = Tensor(Node("slice", (x.node,), shape, x.dtype, attrs))
    if result.shape != tuple(final):
        result = reshape(result, tuple(final))
    return result


# --------------------------------------------------------------------------------------------
# Primitives the transformer needs


def causal_mask(size: int, dtype: Any) -> Tensor:
    """(size, size): 0 where column <= row, -1e10 above the diagonal; an index-based generic."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"causal_mask: size must be a static integer, got {size!r}")
    if size <= 0:
        raise ValueError(f"causal_mask: size must be positive, got {size}")
    dt = check_dtype(dtype, "causal_mask")
    if dt not in FLOATS:
        raise TypeError(f"causal_mask: dtype must be float32 or float64, got {dt}")
    return Tensor(Node("mask", (), (int(size), int(size)), dt, {"value": -1e10}))


def gather(table: Any, ids: Any) -> Tensor:
    """``table[ids]`` along axis 0 (an embedding lookup); out-of-range ids raise at call time."""
    table, ids = _as_operand(table, "gather"), _as_operand(ids, "gather")
    if not isinstance(table, Tensor) or not isinstance(ids, Tensor):
        raise TypeError("gather: table and ids must be tensors")
    if table.ndim == 0:
        raise ValueError("gather: the table must have at least one dimension")
    if ids.dtype != INT32:
        raise TypeError(f"gather: ids must be int32, got {ids.dtype}")
    shape = ids.shape + table.shape[1:]
    return Tensor(Node("gather", (table.node, ids.node), shape, table.dtype))


# --------------------------------------------------------------------------------------------
# The traced tensor type


def _control_flow(*_: Any) -> Any:
    raise TypeError(
        "a traced tensor has no concrete value: data-dependent Python control flow "
        "(if/while/bool/int/float on a tensor) is not supported inside @jit; use where()"
    )


class Tensor:
    """A traced array. Operators, methods and NumPy functions build graph nodes."""

    __slots__ = ("node",)
    __array_priority__ = 1000

    def __init__(self, node: Node) -> None:
        self.node = node

    # metadata
    shape = property(lambda self: self.node.shape)
    dtype = property(lambda self: self.node.dtype)
    ndim = property(lambda self: len(self.node.shape))
    size = property(lambda self: self.node.size)
    T = property(lambda self: transpose(self))
    mT = property(lambda self: transpose(self, _swap_last(self.ndim)))

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.dtype}, op={self.node.op})"

    def __array_namespace__(self, api_version: str | None = None) -> Namespace:
        return xp

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    __bool__ = __int__ = __float__ = __index__ = __complex__ = _control_flow

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError(
            "a traced tensor cannot be converted to a NumPy array: its value is only known "
            "when the compiled kernel runs"
        )

    def __hash__(self) -> int:
        return id(self)

    # arithmetic
    __add__ = lambda self, o: binary("add", self, o)  # noqa: E731
    __radd__ = lambda self, o: binary("add", o, self)  # noqa: E731
    __sub__ = lambda self, o: binary("subtract", self, o)  # noqa: E731
    __rsub__ = lambda self, o: binary("subtract", o, self)  # noqa: E731
    __mul__ = lambda self, o: binary("multiply", self, o)  # noqa: E731
    __rmul__ = lambda self, o: binary("multiply", o, self)  # noqa: E731
    __truediv__ = lambda self, o: binary("divide", self, o)  # noqa: E731
    __rtruediv__ = lambda self, o: binary("divide", o, self)  # noqa: E731
    __pow__ = lambda self, o: binary("power", self, o)  # noqa: E731
    __rpow__ = lambda self, o: binary("power", o, self)  # noqa: E731
    __matmul__ = lambda self, o: matmul(self, o)  # noqa: E731
    __rmatmul__ = lambda self, o: matmul(o, self)  # noqa: E731
    __neg__ = lambda self: unary("negative", self)  # noqa: E731
    __pos__ = lambda self: self  # noqa: E731
    __abs__ = lambda self: unary("abs", self)  # noqa: E731
    __lt__ = lambda self, o: compare("less", self, o)  # noqa: E731
    __le__ = lambda self, o: compare("less_equal", self, o)  # noqa: E731
    __gt__ = lambda self, o: compare("greater", self, o)  # noqa: E731
    __ge__ = lambda self, o: compare("greater_equal", self, o)  # noqa: E731
    __eq__ = lambda self, o: compare("equal", self, o)  # noqa: E731
    __ne__ = lambda self, o: compare("not_equal", self, o)  # noqa: E731
    __getitem__ = getitem

    def __floordiv__(self, other: Any) -> Tensor:
        raise UnsupportedFeature("floor division (//)")

    __rfloordiv__ = __mod__ = __rmod__ = __floordiv__

    # methods
    def reshape(self, *shape: Any, order: str = "C") -> Tensor:
        return reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def transpose(self, *axes: Any) -> Tensor:
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return transpose(self, axes or None)

    def astype(self, dtype: Any, copy: bool = True) -> Tensor:
        return astype(self, dtype)

    def sum(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> Tensor:
        return reduce("sum", self, axis, keepdims, **kw)

    def max(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> Tensor:
        return reduce("max", self, axis, keepdims, **kw)

    def min(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> Tensor:
        return reduce("min", self, axis, keepdims, **kw)

    def mean(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> Tensor:
        return reduce("mean", self, axis, keepdims, **kw)

    def var(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> Tensor:
        return reduce("var", self, axis, keepdims, **kw)

    # NumPy protocol: np.exp(t), np.add(a, t), np.sum(t, axis=...)
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = ufunc.__name__
        if method != "__call__":
            raise UnsupportedFeature(f"ufunc method np.{name}.{method}")
        if kwargs:
            raise UnsupportedFeature(f"np.{name} with keyword arguments {sorted(kwargs)}")
        if name in _UFUNCS:
            return _UFUNCS[name](*inputs)
        raise UnsupportedFeature(f"NumPy ufunc np.{name}")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        name = func.__name__
        handler = _FUNCTIONS.get(name)
        if handler is None:
            raise UnsupportedFeature(f"NumPy function np.{name}")
        return handler(*args, **kwargs)


def _swap_last(ndim: int) -> tuple[int, ...]:
    if ndim < 2:
        raise ValueError("matrix transpose needs at least 2 dimensions")
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def _partial(fn: Callable[..., Tensor], name: str) -> Callable[..., Tensor]:
    def call(*args: Any) -> Tensor:
        return fn(name, *args)

    call.__name__ = name
    return call


_UFUNCS: dict[str, Callable[..., Tensor]] = {
    **{name: _partial(binary, name) for name in _BINARY},
    **{name: _partial(compare, name) for name in _COMPARE},
    **{name: _partial(unary, name) for name in _UNARY},
    "true_divide": _partial(binary, "divide"),
    "absolute": _partial(unary, "abs"),
    "matmul": matmul,
}


def _reduction(name: str) -> Callable[..., Tensor]:
    def call(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, **kw: Any) -> Tensor:
        if dtype is not None or out is not None:
            raise UnsupportedFeature(f"{name} with dtype= or out=")
        keepdims = kw.pop("keepdims", False)
        return reduce(name, x, axis, keepdims, **kw)

    call.__name__ = name
    return call


def _np_astype(x: Any, dtype: Any, copy: bool = True, **_: Any) -> Tensor:
    return astype(x, dtype)


_FUNCTIONS: dict[str, Callable[..., Tensor]] = {
    "sum": _reduction("sum"),
    "max": _reduction("max"),
    "amax": _reduction("max"),
    "min": _reduction("min"),
    "amin": _reduction("min"),
    "mean": _reduction("mean"),
    "var": _reduction("var"),
    "reshape": lambda x, shape=None, order="C", newshape=None: reshape(
        x, shape if shape is not None else newshape, order
    ),
    "transpose": transpose,
    "permute_dims": transpose,
    "matmul": matmul,
    "where": where,
    "astype": _np_astype,
    "broadcast_to": lambda x, shape: broadcast_to(_as_operand(x, "broadcast_to"), tuple(shape)),
}


class Namespace:
    """The array namespace of traced tensors: the array-API names the ops modules use."""

    float32, float64, int32, bool = FLOAT32, FLOAT64, INT32, BOOL
    pi, e, inf, nan = math.pi, math.e, math.inf, math.nan

    exp = staticmethod(_UFUNCS["exp"])
    log = staticmethod(_UFUNCS["log"])
    tanh = staticmethod(_UFUNCS["tanh"])
    sqrt = staticmethod(_UFUNCS["sqrt"])
    abs = staticmethod(_UFUNCS["abs"])
    negative = staticmethod(_UFUNCS["negative"])
    add = staticmethod(_UFUNCS["add"])
    subtract = staticmethod(_UFUNCS["subtract"])
    multiply = staticmethod(_UFUNCS["multiply"])
    divide = staticmethod(_UFUNCS["divide"])
    pow = staticmethod(_UFUNCS["power"])
    maximum = staticmethod(_UFUNCS["maximum"])
    minimum = staticmethod(_UFUNCS["minimum"])
    less = staticmethod(_UFUNCS["less"])
    less_equal = staticmethod(_UFUNCS["less_equal"])
    greater = staticmethod(_UFUNCS["greater"])
    greater_equal = staticmethod(_UFUNCS["greater_equal"])
    equal = staticmethod(_UFUNCS["equal"])
    not_equal = staticmethod(_UFUNCS["not_equal"])
    where = staticmethod(where)
    matmul = staticmethod(matmul)
    sum = staticmethod(_reduction("sum"))
    max = staticmethod(_reduction("max"))
    min = staticmethod(_reduction("min"))
    mean = staticmethod(_reduction("mean"))
    var = staticmethod(_reduction("var"))
    reshape = staticmethod(lambda x, shape, copy=None: reshape(x, shape))
    permute_dims = staticmethod(transpose)
    transpose = staticmethod(transpose)
    astype = staticmethod(_np_astype)
    broadcast_to = staticmethod(_FUNCTIONS["broadcast_to"])
    causal_mask = staticmethod(causal_mask)
    gather = staticmethod(gather)

    def __getattr__(self, name: str) -> Any:
        raise UnsupportedFeature(f"array-namespace function {name!r}")


xp = Namespace()


# --------------------------------------------------------------------------------------------
# Graph utilities


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


__all__ = [
    "Node",
    "Tensor",
    "Trace",
    "UnsupportedFeature",
    "InvalidIndex",
    "xp",
    "tracing",
    "topological",
    "SUPPORTED_DTYPES",
]
