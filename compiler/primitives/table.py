"""The entries of the primitive table, in generation (and shrink) order.

An elementwise entry is complete on its own: its NumPy function gives the dtype rule, its scalar
lowering the MLIR body, and the frontend, program model, generator, references, error model and
report pick it up from here. Structural entries (reductions, layout, matmul, composites) also name
their result rule here; the frontend's trace rules build their graphs.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import ops as composites
from ..dtypes import BOOL, FLOAT64, INT32, check_dtype, element, is_float
from ..errors import UnsupportedFeature
from . import Attr, Primitive, ScalarCall, contraction_depth, register
from .rules import (
    ArrayType,
    arrays,
    broadcast_shapes,
    index_plan,
    is_scalar,
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
# Scalar lowerings


def _op(float_op: str | None, int_op: str | None = None):
    """``result = <op> args : type``, choosing the float or integer form by the result dtype."""

    def lower(call: ScalarCall) -> list[str]:
        op = float_op if is_float(call.dtype) else int_op
        if op is None:
            raise AssertionError(f"no lowering of {float_op or int_op} on {call.dtype}")
        return [f"{call.result} = {op} {', '.join(call.args)} : {element(call.dtype)}"]

    return lower


def _predicate(float_predicate: str, int_predicate: str):
    """A comparison in the operands' dtype. NumPy: comparisons with NaN are False, except !=."""

    def lower(call: ScalarCall) -> list[str]:
        source = call.arg_dtypes[0]
        a, b = call.args
        if is_float(source):
            return [f"{call.result} = arith.cmpf {float_predicate}, {a}, {b} : {element(source)}"]
        return [f"{call.result} = arith.cmpi {int_predicate}, {a}, {b} : {element(source)}"]

    return lower


def _negative(call: ScalarCall) -> list[str]:
    if is_float(call.dtype):
        return [f"{call.result} = arith.negf {call.args[0]} : {element(call.dtype)}"]
    zero = call.fresh("z")
    return [
        f"{zero} = arith.constant 0 : i32",
        f"{call.result} = arith.subi {zero}, {call.args[0]} : i32",
    ]


def _power(call: ScalarCall) -> list[str]:
    exponent = call.constants[1]
    out = element(call.dtype)
    if exponent is not None and exponent in (2, 3, 4):
        # Small integer powers as products: no libm call per element.
        lines, value = [], call.args[0]
        for i in range(int(exponent) - 1):
            step = call.result if i == int(exponent) - 2 else call.fresh("p")
            lines.append(f"{step} = arith.mulf {value}, {call.args[0]} : {out}")
            value = step
        return lines
    return [f"{call.result} = math.powf {call.args[0]}, {call.args[1]} : {out}"]


def _select(call: ScalarCall) -> list[str]:
    cond, a, b = call.args
    return [f"{call.result} = arith.select {cond}, {a}, {b} : {element(call.dtype)}"]


def _copy(call: ScalarCall) -> list[str]:
    call.result = call.args[0]
    return []


def _cast(call: ScalarCall) -> list[str]:
    """NumPy's C-style conversions: float -> int truncates, x -> bool is x != 0."""
    source, target, arg, result = call.arg_dtypes[0], call.dtype, call.args[0], call.result
    src, dst = element(source), element(target)
    if is_float(source) and is_float(target):
        op = "arith.extf" if target.itemsize > source.itemsize else "arith.truncf"
        return [f"{result} = {op} {arg} : {src} to {dst}"]
    if is_float(source) and target == INT32:
        return [f"{result} = arith.fptosi {arg} : {src} to {dst}"]
    if source == INT32 and is_float(target):
        return [f"{result} = arith.sitofp {arg} : {src} to {dst}"]
    if source == BOOL and is_float(target):
        return [f"{result} = arith.uitofp {arg} : {src} to {dst}"]
    if source == BOOL and target == INT32:
        return [f"{result} = arith.extui {arg} : {src} to {dst}"]
    zero = call.fresh("z")
    if is_float(source) and target == BOOL:
        literal = "0.0"
        return [
            f"{zero} = arith.constant {literal} : {src}",
            f"{result} = arith.cmpf une, {arg}, {zero} : {src}",
        ]
    if source == INT32 and target == BOOL:
        return [
            f"{zero} = arith.constant 0 : i32",
            f"{result} = arith.cmpi ne, {arg}, {zero} : i32",
        ]
    raise AssertionError(f"no cast from {source} to {target}")


# --------------------------------------------------------------------------------------------
# Result rules of elementwise primitives


def _unary_infer(name: str, ufunc: Any):
    def infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
        x = require_array(operands[0], name)
        dtype = result_dtype(ufunc, [x], name)
        if x.dtype == BOOL:
            raise UnsupportedFeature(f"{name} on boolean tensors")
        return ArrayType(x.shape, dtype)

    return infer


def _binary_infer(name: str, ufunc: Any):
    def infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
        tensors = require_one_array(operands, name)
        dtype = result_dtype(ufunc, operands, name)
        if dtype == BOOL:
            raise UnsupportedFeature(f"{name} on boolean tensors")
        if name == "power" and dtype.kind != "f":
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


def _compare_infer(name: str, ufunc: Any):
    def infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
        tensors = require_one_array(operands, name)
        result_dtype(ufunc, operands, name)  # NumPy's own errors first
        compare_dtype(operands, name)
        return ArrayType(broadcast_shapes(*(t.shape for t in tensors), what=name), BOOL)

    return infer


def _where_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    tensors = require_one_array(operands, "where")
    dtype = result_dtype(np.where, operands, "where")
    return ArrayType(broadcast_shapes(*(t.shape for t in tensors), what="where"), dtype)


def _astype_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "astype")
    return ArrayType(x.shape, check_dtype(attrs["dtype"], "astype"))


def _broadcast_to_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "broadcast_to")
    shape = tuple(attrs["shape"])
    if broadcast_shapes(x.shape, shape, what="broadcast_to") != shape:
        raise ValueError(f"broadcast_to: cannot broadcast {x.shape} to {shape}")
    return ArrayType(shape, x.dtype)


# --------------------------------------------------------------------------------------------
# Evaluation and printing


def _call(name: str):
    """``xp.name(args)``."""

    def evaluate(xp: Any, args: Sequence[Any], attrs: Mapping[str, Any]) -> Any:
        return getattr(xp, name)(*args)

    def render(args: Sequence[str], attrs: Mapping[str, Any]) -> str:
        return f"xp.{name}({', '.join(args)})"

    return evaluate, render


def _infix(function: Any, symbol: str):
    """``a <symbol> b`` (Python's operator, so reflected operators and scalars work)."""

    def evaluate(xp: Any, args: Sequence[Any], attrs: Mapping[str, Any]) -> Any:
        return function(*args)

    def render(args: Sequence[str], attrs: Mapping[str, Any]) -> str:
        return f"{args[0]} {symbol} {args[1]}"

    return evaluate, render


def _elementwise(
    name: str,
    kind: str,
    ufunc: Any,
    scalar: Any,
    *,
    infix: tuple[Any, str] | None = None,
    **meta: Any,
) -> Primitive:
    infer = {"unary": _unary_infer, "binary": _binary_infer, "compare": _compare_infer}[kind]
    evaluate, render = _infix(*infix) if infix else _call(name)
    arity = 1 if kind == "unary" else 2
    return register(
        Primitive(
            name,
            kind,
            arity,
            infer(name, ufunc),
            evaluate,
            render,
            ufunc=ufunc,
            scalar=scalar,
            consts=meta.pop("consts", infix is not None),
            operand_dtypes=(
                (lambda ops, out: [compare_dtype(ops)] * 2) if kind == "compare" else None
            ),
            **meta,
        )
    )


def _depth_contraction(types: Sequence[ArrayType], attrs: Mapping[str, Any]) -> float:
    """matmul: one step plus the rounding of a K-term sum."""
    a = types[0] if types else None
    return 1.0 + (contraction_depth(a.shape[-1]) if a is not None and a.shape else 0.0)


def _depth_reduction(factor: float):
    def depth(types: Sequence[ArrayType], attrs: Mapping[str, Any]) -> float:
        shape = types[0].shape if types else ()
        axes = normalize_axes(attrs.get("axis"), len(shape), "reduction")
        count = math.prod(shape[a] for a in axes) if shape else 1
        return 1.0 + factor * contraction_depth(count)

    return depth


def _depth_composite(base: float, per_log: float, width_factor: int = 1):
    """A composite's error depth: ``base`` steps plus ``per_log`` per doubling of its width."""

    def depth(types: Sequence[ArrayType], attrs: Mapping[str, Any]) -> float:
        width = types[0].shape[-1] if types and types[0].shape else 1
        return 1.0 + base + per_log * contraction_depth(width_factor * width)

    return depth


# --------------------------------------------------------------------------------------------
# Result rules of structural primitives


def _reduction_infer(name: str, fn: Any):
    def infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
        x = require_array(operands[0], name)
        keepdims = attrs.get("keepdims", False)
        if not isinstance(keepdims, (bool, np.bool_)):
            raise TypeError(f"{name}: keepdims must be a bool")
        axes = normalize_axes(attrs.get("axis"), x.ndim, name)
        dtype = result_dtype(fn, [x], name)
        if x.dtype == BOOL:
            raise UnsupportedFeature(f"{name} of a boolean tensor")
        return ArrayType(reduced_shape(x.shape, axes, bool(keepdims)), dtype)

    return infer


def _matmul_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    a, b = operands
    shape = matmul_shape(a, b)
    return ArrayType(shape, matmul_dtype(a, b))


def _reshape_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "reshape")
    return ArrayType(reshape_shape(x.shape, attrs["shape"]), x.dtype)


def _permute_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "transpose")
    perm = permutation(attrs["axes"], x.ndim)
    return ArrayType(tuple(x.shape[p] for p in perm), x.dtype)


def _transpose_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "transpose")
    return ArrayType(x.shape[::-1], x.dtype)


def _index_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x = require_array(operands[0], "index")
    return ArrayType(index_plan(x.shape, attrs["key"]).shape, x.dtype)


def _mask_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    size = attrs["size"]
    if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"causal_mask: size must be a static integer, got {size!r}")
    if size <= 0:
        raise ValueError(f"causal_mask: size must be positive, got {size}")
    dtype = check_dtype(attrs["dtype"], "causal_mask")
    if not is_float(dtype):
        raise TypeError(f"causal_mask: dtype must be float32 or float64, got {dtype}")
    return ArrayType((int(size), int(size)), dtype)


def _gather_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
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


def _composite_dtype(fn: Any, tensors: Sequence[ArrayType], shapes: Sequence, **kw: Any):
    stand = [np.ones(s, t.dtype) for t, s in zip(tensors, shapes, strict=True)]
    return numpy_dtype(lambda *a: fn(*a, **kw), stand, fn.__name__)


def _exact(t: ArrayType, shape: tuple[int, ...], what: str) -> None:
    if t.shape != shape:
        raise ValueError(f"{what}: expected shape {shape}, got {t.shape}")


def _tensors(operands: Sequence[Any], what: str) -> list[ArrayType]:
    return [require_array(t, what) for t in operands]


def _gelu_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    (x,) = _tensors(operands, "gelu")
    return ArrayType(x.shape, _composite_dtype(composites.gelu, [x], [()]))


def _softmax_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    (x,) = _tensors(operands, "softmax")
    if x.ndim == 0:
        raise ValueError("softmax: operand must be at least 1-D")
    normalize_axes(attrs.get("axis", -1), x.ndim, "softmax")
    return ArrayType(x.shape, _composite_dtype(composites.softmax, [x], [(1,)]))


def _layer_norm_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x, gain, bias = _tensors(operands, "layer_norm")
    if x.ndim == 0:
        raise ValueError("layer_norm: operand must be at least 1-D")
    shape = broadcast_shapes(x.shape, gain.shape, bias.shape, what="layer_norm")
    dtype = _composite_dtype(composites.layer_norm, [x, gain, bias], [(1,)] * 3)
    return ArrayType(shape, dtype)


def _linear_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    x, w, b = _tensors(operands, "linear")
    shape = broadcast_shapes(matmul_shape(x, w), b.shape, what="linear bias")
    return ArrayType(shape, _composite_dtype(composites.linear, [x, w, b], [(1,), (1, 1), (1,)]))


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


def _attention_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    tensors = _tensors(operands, "attention")
    shape = _check_attention(tensors, attrs["heads"], "attention")
    dtype = _composite_dtype(composites.attention, tensors, _ATTENTION_STAND_IN, heads=1)
    return ArrayType(shape, dtype)


def _attend_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
    tensors = _tensors(operands, "attend")
    x, gain, bias, *rest = tensors
    shape = _check_attention([x, *rest], attrs["heads"], "attend")
    _exact(gain, (shape[1],), "attend gain")
    _exact(bias, (shape[1],), "attend bias")
    stand = [(1, 1), (1,), (1,), *_ATTENTION_STAND_IN[1:]]
    return ArrayType(shape, _composite_dtype(composites.attend, tensors, stand, heads=1))


def _feedforward_infer(operands: Sequence[Any], attrs: Mapping[str, Any]) -> ArrayType:
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
    return ArrayType(x.shape, _composite_dtype(composites.feedforward, tensors, stand))


# --------------------------------------------------------------------------------------------
# Printing helpers


def format_key(key: tuple[Any, ...]) -> str:
    """``key`` as Python subscript source: ``1:3, ..., None, ::2``."""

    def one(item: Any) -> str:
        if item is Ellipsis:
            return "..."
        if isinstance(item, slice):
            parts = ["" if p is None else str(p) for p in (item.start, item.stop, item.step)]
            return ":".join(parts[:2]) if item.step is None else ":".join(parts)
        return repr(item)

    return ", ".join(one(item) for item in key) if key else "()"


def _kwargs(attrs: Mapping[str, Any], specs: Mapping[str, Attr]) -> str:
    return "".join(f", {k}={attrs[k]!r}" for k, spec in specs.items() if attrs[k] != spec.default)


_REDUCTION_ATTRS = {"axis": Attr("axis", None), "keepdims": Attr("bool", False)}


def _reduction(name: str, fn: Any, depth_factor: float, **meta: Any) -> None:
    register(
        Primitive(
            name,
            "reduction",
            1,
            _reduction_infer(name, fn),
            lambda xp, a, attrs: getattr(xp, name)(
                a[0], axis=attrs["axis"], keepdims=attrs["keepdims"]
            ),
            lambda a, attrs: f"xp.{name}({a[0]}{_kwargs(attrs, _REDUCTION_ATTRS)})",
            attrs=_REDUCTION_ATTRS,
            ufunc=fn,
            error_depth=_depth_reduction(depth_factor),
            **meta,
        )
    )


def _composite(name: str, arity: int, infer: Any, attrs: Mapping[str, Attr], depth: Any, **meta):
    fn = getattr(composites, name)
    keywords = tuple(attrs)

    def evaluate(xp: Any, a: Sequence[Any], values: Mapping[str, Any]) -> Any:
        return fn(*a, **{k: values[k] for k in keywords})

    def render(a: Sequence[str], values: Mapping[str, Any]) -> str:
        kw = "".join(f", {k}={values[k]!r}" for k in keywords)
        return f"ops.{name}({', '.join(a)}{kw})"

    register(
        Primitive(
            name,
            "composite",
            arity,
            infer,
            evaluate,
            render,
            attrs=attrs,
            float_only=True,
            error_depth=depth,
            cost=1,
            **meta,
        )
    )


_LAYOUT = {"keeps": "values"}

# --------------------------------------------------------------------------------------------
# The table, in generation order (the generator's shrinker prefers earlier entries)

_elementwise("add", "binary", np.add, _op("arith.addf", "arith.addi"), infix=(operator.add, "+"))
_elementwise(
    "multiply", "binary", np.multiply, _op("arith.mulf", "arith.muli"), infix=(operator.mul, "*")
)
_elementwise("negative", "unary", np.negative, _negative, keeps="bounds")
_elementwise("exp", "unary", np.exp, _op("math.exp"), result_range="nonnegative")
register(
    Primitive(
        "matmul",
        "matmul",
        2,
        _matmul_infer,
        *_call("matmul"),
        ufunc=np.matmul,
        error_depth=_depth_contraction,
        doc="np.matmul: 1-D operands, 2-D, and broadcast batch dimensions of any rank",
    )
)
register(
    Primitive(
        "transpose",
        "layout",
        1,
        _transpose_infer,
        lambda xp, a, attrs: a[0].T,
        lambda a, attrs: f"{a[0]}.T",
        doc="x.T: all axes reversed",
        **_LAYOUT,
    )
)
_reduction("sum", np.sum, 1.0)
_elementwise(
    "subtract", "binary", np.subtract, _op("arith.subf", "arith.subi"), infix=(operator.sub, "-")
)
_elementwise(
    "abs",
    "unary",
    np.abs,
    _op("math.absf", "math.absi"),
    result_range="nonnegative",
    keeps="bounds",
)
_elementwise("tanh", "unary", np.tanh, _op("math.tanh"), result_range="bounded")
_elementwise("maximum", "binary", np.maximum, _op("arith.maximumf", "arith.maxsi"), keeps="bounds")
_elementwise("minimum", "binary", np.minimum, _op("arith.minimumf", "arith.minsi"), keeps="bounds")
register(
    Primitive(
        "permute_dims",
        "layout",
        1,
        _permute_infer,
        lambda xp, a, attrs: xp.permute_dims(a[0], attrs["axes"]),
        lambda a, attrs: f"xp.permute_dims({a[0]}, {attrs['axes']!r})",
        attrs={"axes": Attr("axes")},
        **_LAYOUT,
    )
)
register(
    Primitive(
        "reshape",
        "layout",
        1,
        _reshape_infer,
        lambda xp, a, attrs: xp.reshape(a[0], attrs["shape"]),
        lambda a, attrs: f"xp.reshape({a[0]}, {attrs['shape']!r})",
        attrs={"shape": Attr("shape")},
        **_LAYOUT,
    )
)
register(
    Primitive(
        "index",
        "layout",
        1,
        _index_infer,
        lambda xp, a, attrs: a[0][attrs["key"]],
        lambda a, attrs: f"{a[0]}[{format_key(attrs['key'])}]",
        attrs={"key": Attr("index")},
        doc="static basic indexing: slices (positive steps), ints, None and Ellipsis",
        **_LAYOUT,
    )
)
_reduction("max", np.max, 1.0, keeps="bounds")
_reduction("min", np.min, 1.0, keeps="bounds")
_reduction("mean", np.mean, 1.0)
_reduction("var", np.var, 2.0)
register(
    Primitive(
        "astype",
        "cast",
        1,
        _astype_infer,
        lambda xp, a, attrs: xp.astype(a[0], np.dtype(attrs["dtype"])),
        lambda a, attrs: f"xp.astype({a[0]}, np.{np.dtype(attrs['dtype']).name})",
        attrs={"dtype": Attr("dtype")},
        scalar=_cast,
        operand_dtypes=lambda ops, out: [np.dtype(ops[0].dtype)],
        keeps="values",
        doc="x.astype(dtype) with NumPy's C-style conversions (float -> int truncates)",
    )
)
register(
    Primitive(
        "where",
        "select",
        3,
        _where_infer,
        *_call("where"),
        ufunc=np.where,
        scalar=_select,
        operand_dtypes=lambda ops, out: [BOOL, out.dtype, out.dtype],
        consts=True,
        cost=2,
        keeps="bounds",
        doc="np.where(condition, a, b): a nonzero condition selects a",
    )
)
for _name, _ufunc, _python, _symbol, _float_predicate, _int_predicate in (
    ("greater", np.greater, operator.gt, ">", "ogt", "sgt"),
    ("less", np.less, operator.lt, "<", "olt", "slt"),
    ("greater_equal", np.greater_equal, operator.ge, ">=", "oge", "sge"),
    ("less_equal", np.less_equal, operator.le, "<=", "ole", "sle"),
    ("equal", np.equal, operator.eq, "==", "oeq", "eq"),
    ("not_equal", np.not_equal, operator.ne, "!=", "une", "ne"),
):
    _elementwise(
        _name,
        "compare",
        _ufunc,
        _predicate(_float_predicate, _int_predicate),
        infix=(_python, _symbol),
        cost=2,
    )
_elementwise("divide", "binary", np.true_divide, _op("arith.divf"), infix=(operator.truediv, "/"))
_elementwise("power", "binary", np.power, _power, infix=(operator.pow, "**"))
_elementwise("log", "unary", np.log, _op("math.log"), domain="nonnegative", cost=2)
_elementwise(
    "sqrt",
    "unary",
    np.sqrt,
    _op("math.sqrt"),
    domain="nonnegative",
    result_range="nonnegative",
    cost=2,
)
register(
    Primitive(
        "unary_minus",
        "unary",
        1,
        _unary_infer("negative", np.negative),
        lambda xp, a, attrs: -a[0],
        lambda a, attrs: f"-{a[0]}",
        ufunc=np.negative,
        scalar=_negative,
        keeps="bounds",
        doc="-x (the operator; the same lowering as negative)",
    )
)
register(
    Primitive(
        "causal_mask",
        "source",
        0,
        _mask_infer,
        lambda xp, a, attrs: composites.causal_mask(attrs["size"], np.dtype(attrs["dtype"]), xp),
        lambda a, attrs: (
            f"ops.causal_mask({attrs['size']}, np.{np.dtype(attrs['dtype']).name}, xp)"
        ),
        attrs={"size": Attr("positive"), "dtype": Attr("dtype")},
        float_only=True,
        cost=2,
        doc="(size, size) additive mask: 0 where column <= row, -1e10 above the diagonal",
    )
)
register(
    Primitive(
        "gather",
        "gather",
        2,
        _gather_infer,
        lambda xp, a, attrs: composites.gather(a[0], a[1]),
        lambda a, attrs: f"ops.gather({a[0]}, {a[1]})",
        keeps="values",
        doc="table[ids] along axis 0 (an embedding lookup); out-of-range ids raise when run",
    )
)
_composite("gelu", 1, _gelu_infer, {}, _depth_composite(6, 2))
_composite(
    "softmax",
    1,
    _softmax_infer,
    {"axis": Attr("axis", -1)},
    _depth_composite(6, 2),
    result_range="nonnegative,bounded",
)
_composite("layer_norm", 3, _layer_norm_infer, {}, _depth_composite(6, 2))
_composite("linear", 3, _linear_infer, {}, _depth_composite(6, 2))
_composite(
    "attention", 5, _attention_infer, {"heads": Attr("positive")}, _depth_composite(24, 4, 4)
)
_composite("attend", 7, _attend_infer, {"heads": Attr("positive")}, _depth_composite(24, 4, 4))
_composite("feedforward", 7, _feedforward_infer, {}, _depth_composite(24, 4, 4))
register(
    Primitive(
        "broadcast_to",
        "copy",
        1,
        _broadcast_to_infer,
        lambda xp, a, attrs: xp.broadcast_to(a[0], attrs["shape"]),
        lambda a, attrs: f"xp.broadcast_to({a[0]}, {attrs['shape']!r})",
        attrs={"shape": Attr("shape")},
        scalar=_copy,
        operand_dtypes=lambda ops, out: [np.dtype(ops[0].dtype)],
        keeps="values",
        generate=False,
        doc="np.broadcast_to, materialized (later ops need a real buffer)",
    )
)

__all__ = ["compare_dtype", "format_key"]
