"""Result rules of the primitives: NumPy's shapes, dtypes and errors for each kind of operation,
built on :mod:`.rules`. Composites find their dtypes by running their own definition on NumPy
stand-ins, so the promotions inside them are NumPy's by construction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import ops as composites
from ..dtypes import BOOL, FLOAT64, INT32, check_dtype, is_float
from ..errors import DefinitionError, UnsupportedFeature
from .rules import (
    ArrayType,
    arrays,
    broadcast_shapes,
    index_plan,
    is_scalar,
    keepdims_flag,
    matmul_dtype,
    matmul_shape,
    normalize_axes,
    numpy_dtype,
    permutation,
    reduced_shape,
    require_array,
    require_one_array,
    reshape_shape,
    result_dtype,
)

# --------------------------------------------------------------------------------------------
# Elementwise


def unary_infer(name: str, ufunc: Any):
    def infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
        x = require_array(operands[0], name)
        dtype = result_dtype(ufunc, [x], name)
        if x.dtype == BOOL:
            raise UnsupportedFeature(f"{name} on boolean tensors")
        return ArrayType(x.shape, dtype)

    return infer


def binary_infer(name: str, ufunc: Any):
    def infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
        tensors = require_one_array(operands, name)
        dtype = result_dtype(ufunc, operands, name)
        if dtype == BOOL:
            raise UnsupportedFeature(f"{name} on boolean tensors")
        if name == "power" and not is_float(dtype):
            raise UnsupportedFeature(f"power on {dtype} tensors")
        return ArrayType(broadcast_shapes(*(t.shape for t in tensors), what=name), dtype)

    return infer


def compare_dtype(operands: Sequence[Any], name: str = "compare") -> np.dtype:
    """The common dtype two operands are compared in."""
    if BOOL in [t.dtype for t in arrays(operands)]:
        raise UnsupportedFeature(f"{name} on boolean tensors")
    try:
        common = result_dtype(np.add, operands, name)
    except OverflowError:
        # NumPy compares int32 with an out-of-range Python int exactly; in float64 the int32
        # side is exact and the big int stays beyond the int32 range, so the order is kept.
        common = FLOAT64
    if common == BOOL:
        raise UnsupportedFeature(f"{name} on boolean tensors")
    return common


def compare_infer(name: str, ufunc: Any):
    def infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
        tensors = require_one_array(operands, name)
        result_dtype(ufunc, operands, name)  # NumPy's own errors first
        compare_dtype(operands, name)
        return ArrayType(broadcast_shapes(*(t.shape for t in tensors), what=name), BOOL)

    return infer


def where_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    tensors = require_one_array(operands, "where")
    dtype = result_dtype(np.where, operands, "where")
    return ArrayType(broadcast_shapes(*(t.shape for t in tensors), what="where"), dtype)


def astype_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "astype")
    return ArrayType(x.shape, check_dtype(attrs["dtype"], "astype"))


def broadcast_to_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "broadcast_to")
    shape = tuple(attrs["shape"])
    if broadcast_shapes(x.shape, shape, what="broadcast_to") != shape:
        raise ValueError(f"broadcast_to: cannot broadcast {x.shape} to {shape}")
    return ArrayType(shape, x.dtype)


# --------------------------------------------------------------------------------------------
# Structural


def reduction_infer(name: str, fn: Any):
    def infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
        x = require_array(operands[0], name)
        keepdims = keepdims_flag(attrs.get("keepdims", False), name)
        axes = normalize_axes(attrs.get("axis"), x.ndim, name)
        # NumPy's verdict on its keywords given (dtype=: any it names, int64 a limitation;
        # initial=: its conversion, an OverflowError past int32)
        given = {k: attrs[k] for k in ("dtype", "initial") if attrs.get(k) is not None}
        dtype = result_dtype(lambda v: fn(v, **given), [x], name)
        if x.dtype == BOOL:
            raise UnsupportedFeature(f"{name} of a boolean tensor")
        return ArrayType(reduced_shape(x.shape, axes, keepdims), dtype)

    return infer


def matmul_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    a, b = operands
    shape = matmul_shape(a, b)
    return ArrayType(shape, matmul_dtype(a, b))


def reshape_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "reshape")
    return ArrayType(reshape_shape(x.shape, attrs["shape"]), x.dtype)


def permute_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "transpose")
    perm = permutation(attrs["axes"], x.ndim)
    return ArrayType(tuple(x.shape[p] for p in perm), x.dtype)


def transpose_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "transpose")
    return ArrayType(x.shape[::-1], x.dtype)


def index_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "index")
    return ArrayType(index_plan(x.shape, attrs["key"]).shape, x.dtype)


def mask_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    size = attrs["size"]
    if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"causal_mask: size must be a static integer, got {size!r}")
    if size <= 0:
        raise ValueError(f"causal_mask: size must be positive, got {size}")
    dtype = check_dtype(attrs["dtype"], "causal_mask")
    if not is_float(dtype):
        raise TypeError(f"causal_mask: dtype must be float32 or float64, got {dtype}")
    return ArrayType((int(size), int(size)), dtype)


def gather_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    table, ids = operands
    if is_scalar(table) or is_scalar(ids):
        raise TypeError("gather: table and ids must be tensors")
    table, ids = require_array(table, "gather"), require_array(ids, "gather")
    if table.ndim == 0:
        raise ValueError("gather: the table must have at least one dimension")
    if ids.dtype != INT32:
        raise TypeError(f"gather: ids must be int32, got {ids.dtype}")
    if table.dtype == BOOL:
        raise UnsupportedFeature("gather from a boolean table")
    return ArrayType(ids.shape + table.shape[1:], table.dtype)


# Composites: shapes by hand, dtypes by running the composite's own definition on minimal NumPy
# stand-ins (so the NEP 50 promotions inside them, e.g. GELU's float64 constant, are NumPy's).


def _composite_type(
    fn: Any, tensors: Sequence[ArrayType], stand_shapes: Sequence, shape: Sequence[int], **kw: Any
) -> ArrayType:
    """``shape`` (the contract's) with the dtype the definition computes on stand-ins of
    ``stand_shapes``. The contract was checked: a definition that fails here other than on a
    promotion (TypeError) is broken, a ``DefinitionError``."""
    stand = [np.ones(s, t.dtype) for t, s in zip(tensors, stand_shapes, strict=True)]
    try:
        dtype = numpy_dtype(lambda *a: fn(*a, **kw), stand, fn.__name__)
    except (TypeError, NotImplementedError):
        raise
    except Exception as error:  # noqa: BLE001 - the definition's own failure
        try:
            common = np.result_type(*(t.dtype for t in tensors), np.float32)
        except Exception:  # noqa: BLE001 - ml_dtypes' pairs without a common type
            common = np.dtype(np.float32)
        raise DefinitionError(
            f"{fn.__name__}: the shared definition (compiler/ops.py) fails on operands its "
            f"shape contract accepts: {type(error).__name__}: {error}",
            tuple(shape),
            np.dtype(common).name,
        ) from error
    return ArrayType(tuple(shape), dtype)


def _exact(t: ArrayType, shape: tuple[int, ...], what: str) -> None:
    if t.shape != shape:
        raise ValueError(f"{what}: expected shape {shape}, got {t.shape}")


def _tensors(operands: Sequence[Any], what: str) -> list[ArrayType]:
    return [require_array(t, what) for t in operands]


def gelu_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    (x,) = _tensors(operands, "gelu")
    return _composite_type(composites.gelu, [x], [()], x.shape)


def softmax_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    (x,) = _tensors(operands, "softmax")
    if x.ndim == 0:
        raise ValueError("softmax: operand must be at least 1-D")
    normalize_axes(attrs.get("axis", -1), x.ndim, "softmax")
    return _composite_type(composites.softmax, [x], [(1,)], x.shape)


def layer_norm_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x, gain, bias = _tensors(operands, "layer_norm")
    if x.ndim == 0:
        raise ValueError("layer_norm: operand must be at least 1-D")
    shape = broadcast_shapes(x.shape, gain.shape, bias.shape, what="layer_norm")
    return _composite_type(composites.layer_norm, [x, gain, bias], [(1,)] * 3, shape)


def linear_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x, w, b = _tensors(operands, "linear")
    shape = broadcast_shapes(matmul_shape(x, w), b.shape, what="linear bias")
    return _composite_type(composites.linear, [x, w, b], [(1,), (1, 1), (1,)], shape)


def _check_attention(ts: Sequence[ArrayType], heads: int, what: str) -> tuple[int, int]:
    x, qkv_w, qkv_b, out_w, out_b = ts
    if x.ndim != 2:
        raise ValueError(f"{what}: x must be (T, C), got {x.shape}")
    length, width = x.shape
    if width % heads:
        raise ValueError(f"{what}: width {width} is not divisible by heads={heads}")
    _exact(qkv_w, (width, 3 * width), f"{what} qkv weight")
    _exact(qkv_b, (3 * width,), f"{what} qkv bias")
    _exact(out_w, (width, width), f"{what} out weight")
    _exact(out_b, (width,), f"{what} out bias")
    return length, width


_ATTENTION_STAND_IN = [(1, 1), (1, 3), (3,), (1, 1), (1,)]


def attention_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    tensors = _tensors(operands, "attention")
    shape = _check_attention(tensors, attrs["heads"], "attention")
    return _composite_type(composites.attention, tensors, _ATTENTION_STAND_IN, shape, heads=1)


def attend_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    tensors = _tensors(operands, "attend")
    x, gain, bias, *rest = tensors
    shape = _check_attention([x, *rest], attrs["heads"], "attend")
    _exact(gain, (shape[1],), "attend gain")
    _exact(bias, (shape[1],), "attend bias")
    stand = [(1, 1), (1,), (1,), *_ATTENTION_STAND_IN[1:]]
    return _composite_type(composites.attend, tensors, stand, shape, heads=1)


def feedforward_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x, gain, bias, up_w, up_b, down_w, down_b = tensors = _tensors(operands, "feedforward")
    if x.ndim == 0:
        raise ValueError("feedforward: x must be at least 1-D")
    width = x.shape[-1]
    _exact(gain, (width,), "feedforward gain")
    _exact(bias, (width,), "feedforward bias")
    if up_w.ndim != 2 or up_w.shape[0] != width:
        raise ValueError(f"feedforward: up weight must be ({width}, F), got {up_w.shape}")
    hidden = up_w.shape[1]
    _exact(up_b, (hidden,), "feedforward up bias")
    _exact(down_w, (hidden, width), "feedforward down weight")
    _exact(down_b, (width,), "feedforward down bias")
    stand = [(1, 1), (1,), (1,), (1, 1), (1,), (1, 1), (1,)]
    return _composite_type(composites.feedforward, tensors, stand, x.shape)


__all__ = [
    "astype_infer",
    "attend_infer",
    "attention_infer",
    "binary_infer",
    "broadcast_to_infer",
    "compare_dtype",
    "compare_infer",
    "feedforward_infer",
    "gather_infer",
    "gelu_infer",
    "index_infer",
    "layer_norm_infer",
    "linear_infer",
    "mask_infer",
    "matmul_infer",
    "permute_infer",
    "reduction_infer",
    "reshape_infer",
    "softmax_infer",
    "transpose_infer",
    "unary_infer",
    "where_infer",
]
