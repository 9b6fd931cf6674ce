"""The trace rules: how each primitive of the table becomes graph nodes.

Every check is the primitive's own result rule (``compiler.primitives``), so an invalid program
fails with NumPy's error class and a message that says what is wrong *before* any MLIR is built.
Elementwise primitives share one rule (convert the operands to the dtypes the primitive computes
in, then one ``elementwise`` node carrying the primitive); the structural ones decompose onto the
graph operations the emitter knows (``matmul`` of any rank onto 2-D ``matmul``/``batch_matmul``
with reshapes and explicit broadcasts, ``mean`` onto ``sum`` and ``divide``, indexing onto a
strided ``slice`` and a ``reshape``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import primitives
from ..dtypes import BFLOAT16, BOOL, FLOAT16, FLOAT32, INT32, check_dtype, is_float
from ..errors import UnsupportedFeature
from ..primitives.rules import index_plan, keepdims_flag, normalize_axes, permutation
from .graph import Node
from .tensor import Tensor, as_operand
from .trace import current_trace  # noqa: F401 - re-exported for the namespace


def _constant(value: Any, dtype: np.dtype) -> Node:
    """A scalar converted to ``dtype`` exactly as NumPy converts it."""
    with np.errstate(all="ignore"):
        converted = np.asarray(value).astype(dtype)
    return Node("const", (), (), dtype, {"value": converted.item()})


def _converted(value: Any, dtype: np.dtype) -> Node:
    if isinstance(value, Tensor):
        return astype(value, dtype).node
    return _constant(value, dtype)


def elementwise(name: str, *values: Any) -> Tensor:
    """The trace rule of every elementwise primitive: NumPy's broadcasting and NEP 50
    promotion (the primitive's result rule), operands converted as the primitive computes."""
    prim = primitives.get(name)
    operands = [as_operand(v, name) for v in values]
    if not any(isinstance(o, Tensor) for o in operands):
        # NumPy scalars alone (``xp.sqrt(abs(c))``: a captured 0-d array's abs is one) are
        # 0-d arrays to NumPy's ufuncs: a 0-d constant here (Python scalars alone stay an error)
        operands = [
            Tensor(_constant(o, np.dtype(o.dtype))) if isinstance(o, np.generic) else o
            for o in operands
        ]
    out = prim.result(operands)
    if name == "power" and isinstance(operands[0], Tensor) and not isinstance(operands[1], Tensor):
        half = out.dtype in (FLOAT16, BFLOAT16)
        if operands[1] == 0.5 and (isinstance(operands[1], float) or not half):
            # NumPy computes a scalar power of 0.5 as sqrt, which differs from pow() at -inf
            # (nan, not inf) and -0.0 (-0.0, not 0.0): the ``**`` operator for a Python float
            # exponent, and the float32/float64 power loops; its float16 loop (a float16
            # exponent) and ml_dtypes' bfloat16 one compute pow. (np.power(x, 0.5) of float16
            # also computes pow in NumPy; the compiler takes sqrt there too: a known
            # deviation, README.)
            return elementwise("sqrt", astype(operands[0], out.dtype))
        if operands[1] == -1 and (out.dtype.kind == "f" or out.dtype == BFLOAT16):
            # ... and a scalar power of -1 as its reciprocal, in every dtype, correctly rounded
            # where pow() is not (an ulp off at 0.7154948425386383: the -O0 call, which LLVM's
            # -O3 folds to the division, so the levels oracle saw the two levels differ)
            return elementwise("divide", 1, astype(operands[0], out.dtype))
    dtypes = prim.converted_dtypes(operands, out)
    args = tuple(_converted(v, d) for v, d in zip(operands, dtypes, strict=True))
    return Tensor(Node("elementwise", args, out.shape, out.dtype, {"prim": prim}))


_MISSING = object()


def where(condition: Any, a: Any = _MISSING, b: Any = _MISSING) -> Tensor:
    """``np.where(condition, a, b)``: a nonzero condition selects ``a``."""
    if a is _MISSING and b is _MISSING:
        raise UnsupportedFeature("np.where with one argument (nonzero indices)")
    if a is _MISSING or b is _MISSING:
        raise ValueError("where: either both or neither of x and y should be given")
    return elementwise("where", condition, a, b)


def astype(x: Any, dtype: Any, **numpy_keywords: Any) -> Tensor:
    """``x.astype(dtype)`` with NumPy's C-style conversions (float -> int truncates).
    ``numpy_keywords``: ndarray.astype's others (``casting``, ``order``, ``subok``, ``copy``),
    judged by NumPy itself on a stand-in of x's dtype: a cast ``casting="safe"`` forbids is its
    TypeError, a bad ``order`` its ValueError; the rest change no value. Only
    ``casting="same_value"`` (NumPy 2.4: the values checked when the kernel runs) is refused."""
    x = as_operand(x, "astype")
    if not isinstance(x, Tensor):
        raise TypeError("astype: expected a traced tensor")
    target = check_dtype(dtype, "astype")
    if numpy_keywords.get("casting") == "same_value":
        raise UnsupportedFeature("astype with casting='same_value' (a check of the values)")
    if numpy_keywords:
        with np.errstate(all="ignore"):
            np.zeros((1,), x.dtype).astype(target, **numpy_keywords)
    if x.dtype == target:
        return x
    prim = primitives.get("astype")
    out = prim.result([x], {"dtype": target})
    return Tensor(Node("elementwise", (x.node,), out.shape, out.dtype, {"prim": prim}))


def broadcast_to(x: Any, shape: Any) -> Tensor:
    """Materialized ``np.broadcast_to`` (a copy: later ops need a real buffer)."""
    x = as_operand(x, "broadcast_to")
    prim = primitives.get("broadcast_to")
    out = prim.result([x], {"shape": tuple(shape)})
    if x.shape == out.shape:
        return x
    return Tensor(Node("elementwise", (x.node,), out.shape, out.dtype, {"prim": prim}))


# --------------------------------------------------------------------------------------------
# Reductions

# The elementwise primitive that combines, and its identity per dtype kind.
_COMBINE = {
    "sum": ("add", 0, 0),
    "max": ("maximum", -np.inf, np.iinfo(np.int32).min),
    "min": ("minimum", np.inf, np.iinfo(np.int32).max),
}


def _degrees_of_freedom(name: str, kwargs: dict[str, Any]) -> Any:
    """``var``'s and ``std``'s ``ddof`` (or the array API's ``correction``: NumPy 2 takes
    either) out of ``kwargs``: 0 by default, any real number, as NumPy takes it."""
    ddof, correction = kwargs.pop("ddof", None), kwargs.pop("correction", None)
    if name not in ("var", "std"):
        if ddof is not None or correction is not None:
            keyword = "ddof" if ddof is not None else "correction"
            raise TypeError(f"{name}() got an unexpected keyword argument {keyword!r}")
        return 0
    if correction is not None:
        if ddof not in (None, 0):
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    ddof = 0 if ddof is None else ddof
    if not isinstance(ddof, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: ddof must be a real number, got {type(ddof).__name__}")
    return ddof


def reduce(name: str, x: Any, axis: Any = None, keepdims: bool = False, **kwargs: Any) -> Tensor:
    """``sum/max/min/mean/var/std`` over ``axis`` (None, int, negative, tuple) with
    ``keepdims``. ``var`` and ``std`` (its square root, as NumPy computes it) take ``ddof``
    (``correction``): the squared deviations' sum is divided by ``max(n - ddof, 0)``, so a row
    of ``ddof`` or fewer elements gives inf or NaN, as in NumPy. ``sum`` and ``mean`` take
    ``dtype``, NumPy's accumulator and result dtype: x is cast to it (NumPy's unsafe casting),
    summed in it (int32 modulo 2**32), and a mean divides in it (an int32 mean truncates)."""
    prim = primitives.get(name)
    for keyword in kwargs:  # NumPy's function has it (as an attribute, or refused), or not
        numpy_has = keyword in prim.attrs or keyword in prim.refused
        if not numpy_has and not (keyword == "correction" and "ddof" in prim.attrs):
            raise TypeError(f"{name}() got an unexpected keyword argument {keyword!r}")
    ddof = _degrees_of_freedom(name, kwargs)
    accumulator = kwargs.pop("dtype", None) if "dtype" in prim.attrs else None
    initial = kwargs.pop("initial", None) if "initial" in prim.attrs else None
    refused = {k: v for k, v in kwargs.items() if v is not None}
    if refused:
        raise UnsupportedFeature(f"{name} with arguments {sorted(refused)}")
    x = as_operand(x, name)
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a traced tensor")
    keepdims = keepdims_flag(keepdims, name)
    attrs = {"axis": axis, "keepdims": keepdims}
    if accumulator is not None:
        attrs["dtype"] = accumulator
    if initial is not None:
        attrs["initial"] = initial
    out = prim.result([x], attrs)
    axes = normalize_axes(axis, x.ndim, name)
    if initial is not None:
        # NumPy's own conversion of the starting value (OverflowError, ValueError for NaN), and
        # its order: np.maximum(initial, max), the element kept where they tie (-0.0 and 0.0)
        combine = _COMBINE[name][0]
        with np.errstate(all="ignore"):
            start = getattr(np, combine).reduce(np.zeros((0,), out.dtype), initial=initial)
        return elementwise(combine, start, reduce(name, x, axes, keepdims))
    if accumulator is not None:
        if name == "mean":
            total = reduce("sum", x, axes, keepdims, dtype=out.dtype)
            quotient = elementwise("divide", total, math.prod(x.shape[a] for a in axes))
            return astype(quotient, out.dtype)  # NumPy divides into the sum (casting="unsafe")
        x = astype(x, out.dtype)
    if name == "mean":
        if out.dtype == FLOAT16:
            # NumPy's mean of float16 sums and divides in float32, then rounds once (a sum
            # beyond 65504 must not overflow a mean that fits).
            wide = reduce("mean", astype(x, FLOAT32), axes, keepdims)
            return astype(wide, FLOAT16)
        total = reduce("sum", astype(x, out.dtype), axes, keepdims)
        return elementwise("divide", total, math.prod(x.shape[a] for a in axes))
    if name == "std":
        return elementwise("sqrt", reduce("var", x, axes, keepdims, ddof=ddof))
    if name == "var":
        xf = astype(x, out.dtype)
        centered = xf - reduce("mean", xf, axes, keepdims=True)
        squares = centered * centered
        if not ddof:
            return reduce("mean", squares, axes, keepdims)
        count = max(math.prod(x.shape[a] for a in axes) - ddof, 0)
        # float16 squares summed in float32, rounded once (as mean does)
        wide = astype(squares, FLOAT32) if out.dtype == FLOAT16 else squares
        total = reduce("sum", wide, axes, keepdims)
        # In the result's dtype: a bfloat16 sum over a fractional count (ddof=0.5) divides
        # into float32 (ml_dtypes promotes bfloat16 with a Python float), NumPy's var writes
        # its quotient back into bfloat16 (found by the fuzzer once ddof was drawn fractional).
        return astype(elementwise("divide", total, count), out.dtype)
    if not axes:
        # Over no axis (``axis=()``, or a 0-d array) NumPy still starts a sum from its
        # identity: 0.0 + -0.0 is +0.0, so the sum of -0.0 is 0.0 (a max keeps -0.0).
        kept_as_is = astype(x, out.dtype)
        if name == "sum" and is_float(out.dtype):  # (bfloat16 + a Python float is float32)
            return astype(elementwise("add", kept_as_is, 0.0), out.dtype)
        return kept_as_is
    combine, float_identity, int_identity = _COMBINE[name]
    kept = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    attrs = {
        "prim": primitives.get(combine),
        "identity": float_identity if is_float(out.dtype) else int_identity,
        "axes": axes,
        "fn": name,
    }
    result = Tensor(Node("reduce", (x.node,), kept, out.dtype, attrs))
    if keepdims:
        result = reshape(result, out.shape)
    return result


# --------------------------------------------------------------------------------------------
# Matmul


def matmul(a: Any, b: Any) -> Tensor:
    """Full ``np.matmul``: 1-D operands, 2-D, and broadcast batch dimensions of any rank.

    Everything lowers onto ``linalg.matmul`` / ``linalg.batch_matmul`` (through reshapes and an
    explicit broadcast of the batch dimensions), never onto a generic that hides the matmul.
    """
    a, b = as_operand(a, "matmul"), as_operand(b, "matmul")
    out = primitives.get("matmul").result([a, b])
    a, b = astype(a, out.dtype), astype(b, out.dtype)
    a2 = reshape(a, (1, a.shape[0])) if a.ndim == 1 else a
    b2 = reshape(b, (b.shape[0], 1)) if b.ndim == 1 else b
    m, k = a2.shape[-2:]
    n = b2.shape[-1]
    batch = out.shape[: len(out.shape) - (a.ndim > 1) - (b.ndim > 1)]
    if not batch:
        result = Tensor(Node("matmul", (a2.node, b2.node), (m, n), out.dtype))
    elif b2.ndim == 2:
        # (..., M, K) @ (K, N): one 2-D matmul over the flattened rows.
        rows = reshape(a2, (math.prod(a2.shape[:-1]), k))
        flat = Tensor(Node("matmul", (rows.node, b2.node), (rows.shape[0], n), out.dtype))
        result = reshape(flat, batch + (m, n))
    else:
        count = math.prod(batch)
        lhs = reshape(broadcast_to(a2, batch + (m, k)), (count, m, k))
        rhs = reshape(broadcast_to(b2, batch + (k, n)), (count, k, n))
        flat = Tensor(Node("batch_matmul", (lhs.node, rhs.node), (count, m, n), out.dtype))
        result = reshape(flat, batch + (m, n))
    return reshape(result, out.shape) if result.shape != out.shape else result


# --------------------------------------------------------------------------------------------
# Layout: reshape, transpose, static basic indexing


def reshape(x: Any, shape: Any, order: str = "C", copy: Any = None) -> Tensor:
    """``np.reshape`` with at most one ``-1``; the element count must be preserved. ``copy``:
    True or None change no value; False (NumPy's ValueError where the input's memory layout
    needs a copy, which tracing does not know) is refused."""
    x = as_operand(x, "reshape")
    if not isinstance(x, Tensor):
        raise TypeError("reshape: expected a traced tensor")
    if order != "C":
        raise UnsupportedFeature(f"reshape with order={order!r}")
    if copy is not None and not copy:
        raise UnsupportedFeature("reshape with copy=False (whether it copies: the memory layout)")
    new = primitives.get("reshape").result([x], {"shape": shape}).shape
    if new == x.shape:
        return x
    return Tensor(Node("reshape", (x.node,), new, x.dtype))


def transpose(x: Any, axes: Any = None) -> Tensor:
    """``np.transpose`` / ``np.permute_dims``: ``axes`` must be a permutation of the dims."""
    x = as_operand(x, "transpose")
    if not isinstance(x, Tensor):
        raise TypeError("transpose: expected a traced tensor")
    # The result type from the primitive table's rule (x.T or permute_dims), like every op.
    if axes is None:
        out = primitives.get("transpose").result([x])
    else:
        out = primitives.get("permute_dims").result([x], {"axes": axes})
    perm = permutation(axes, x.ndim)
    if perm == tuple(range(x.ndim)):
        return x
    if x.node.op == "transpose":  # transpose of a transpose is one transpose
        inner = x.node.attrs["perm"]
        return transpose(Tensor(x.node.args[0]), tuple(inner[p] for p in perm))
    return Tensor(Node("transpose", (x.node,), out.shape, out.dtype, {"perm": perm}))


def getitem(x: Tensor, index: Any) -> Tensor:
    """Static basic indexing: slices (positive steps), ints, None and Ellipsis."""
    out = primitives.get("index").result([x], {"key": index})
    plan = index_plan(x.shape, index)
    result = x
    if not plan.is_identity(x.shape):
        attrs = {"offsets": plan.offsets, "sizes": plan.sizes, "strides": plan.strides}
        result = Tensor(Node("slice", (x.node,), plan.sliced_shape, x.dtype, attrs))
    if result.shape != out.shape:
        result = reshape(result, out.shape)
    return result


# --------------------------------------------------------------------------------------------
# Primitives the transformer needs


def causal_mask(size: int, dtype: Any) -> Tensor:
    """(size, size): 0 where column <= row, -inf above the diagonal; an index-based generic."""
    out = primitives.get("causal_mask").result([], {"size": size, "dtype": dtype})
    return Tensor(Node("mask", (), out.shape, out.dtype, {"value": float("-inf")}))


def gather(table: Any, ids: Any) -> Tensor:
    """``table[ids]`` along axis 0 (an embedding lookup); out-of-range ids raise at call time."""
    table, ids = as_operand(table, "gather"), as_operand(ids, "gather")
    out = primitives.get("gather").result([table, ids])
    return Tensor(Node("gather", (table.node, ids.node), out.shape, out.dtype))


__all__ = [
    "BOOL",
    "INT32",
    "astype",
    "broadcast_to",
    "causal_mask",
    "elementwise",
    "gather",
    "getitem",
    "matmul",
    "reduce",
    "reshape",
    "transpose",
    "where",
]
