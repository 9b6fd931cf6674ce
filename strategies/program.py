"""The program model: a small typed DAG that can be checked, saved, hashed, replayed and printed.

A :class:`Program` is plain data: typed inputs, nodes (op name, argument references, static
attributes) and one output. Every node's result type is inferred with NumPy 2's rules when the
node is added, so an inconsistent program cannot be constructed; the fuzzer therefore only ever
feeds the compiler programs NumPy itself accepts. One definition evaluates under NumPy,
``jax.numpy`` and the compiler's traced namespace through :meth:`Program.as_function`.
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler import ops as cops

FORMAT = "mlir-tensor-fuzz/program"
FORMAT_VERSION = 1

#: Dtypes of inputs, casts and results; ``bool`` exists only as the result of a comparison.
DTYPES = ("float32", "float64", "int32")
FLOAT_DTYPES = ("float32", "float64")
BOOL = "bool"
_VALUE_DTYPES = (*DTYPES, BOOL)
_INT32_MAX = 2**31 - 1


class InvalidIndexError(IndexError, ValueError):
    """A bad static index: an IndexError as in NumPy, and a ValueError like every model check."""


# --------------------------------------------------------------------------------------------
# Plain data


@dataclass(frozen=True)
class TensorType:
    """Static shape and dtype name of one value."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class Input:
    """A program argument. ``bound`` marks int32 ids whose values must lie in ``[0, bound)``."""

    shape: tuple[int, ...]
    dtype: str
    bound: int | None = None

    @property
    def type(self) -> TensorType:
        return TensorType(self.shape, self.dtype)


@dataclass(frozen=True)
class Ref:
    """A reference to an input (``kind="input"``) or an earlier node (``kind="node"``)."""

    kind: str
    index: int

    def __str__(self) -> str:
        return f"{'x' if self.kind == 'input' else 'v'}{self.index}"


@dataclass(frozen=True)
class Const:
    """A scalar operand: weak Python scalar if ``dtype`` is None, else a strong NumPy scalar."""

    value: int | float
    dtype: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            raise TypeError(f"constant must be a Python int or float, got {self.value!r}")
        if not math.isfinite(self.value):
            raise ValueError(f"constant must be finite, got {self.value!r}")
        if isinstance(self.value, int) and abs(self.value) > _INT32_MAX:
            raise ValueError(f"integer constant {self.value} does not fit in int32")
        if self.dtype is not None:
            if self.dtype not in DTYPES:
                raise TypeError(f"constant dtype must be one of {DTYPES}, got {self.dtype!r}")
            if self.dtype == "int32" and not isinstance(self.value, int):
                raise TypeError(f"int32 constant needs an int value, got {self.value!r}")

    def py(self) -> Any:
        """The operand as passed to the array namespace (weak: Python scalar; strong: NumPy)."""
        return self.value if self.dtype is None else np.dtype(self.dtype).type(self.value)

    def __str__(self) -> str:
        if self.dtype is not None:
            return f"np.{self.dtype}({self.value!r})"
        # Parenthesized when negative: ``-2.0 ** x`` would mean ``-(2.0 ** x)``.
        return repr(self.value) if self.value >= 0 else f"({self.value!r})"


Arg = Ref | Const


@dataclass(frozen=True)
class Node:
    """One operation: ``op`` applied to ``args`` with static ``attrs``; ``type`` is inferred."""

    op: str
    args: tuple[Arg, ...]
    attrs: Mapping[str, Any]
    type: TensorType

    def __hash__(self) -> int:
        return hash((self.op, self.args, repr(sorted(self.attrs.items())), self.type))


@dataclass(frozen=True)
class RawNode:
    """An unchecked node (for invalid programs): evaluated as written, never type-checked."""

    op: str
    args: tuple[Arg, ...]
    attrs: Mapping[str, Any]


# --------------------------------------------------------------------------------------------
# Type inference helpers (NumPy 2 rules)


def dtype_name(dtype: Any) -> str:
    """Normalize a dtype-like to its NumPy name."""
    return np.dtype(dtype).name


def _stand_in(arg: TensorType | Const, ndim: int = 0) -> Any:
    """What NumPy sees when deciding a result dtype: arrays are strong, Python scalars weak."""
    if isinstance(arg, Const):
        return arg.py()
    return np.ones((1,) * ndim, arg.dtype)


def _numpy_dtype(fn: Callable[..., Any], operands: Sequence[Any], what: str) -> str:
    with np.errstate(all="ignore"):
        try:
            result = fn(*operands)
        except np.exceptions.DTypePromotionError as error:
            raise TypeError(f"{what}: {error}") from None
    name = np.asarray(result).dtype.name
    if name not in _VALUE_DTYPES:
        raise TypeError(f"{what}: result dtype {name} is not supported (supported: {DTYPES})")
    return name


def broadcast(*shapes: tuple[int, ...], what: str = "broadcast") -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes`` or a ValueError naming them."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listing = ", ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"{what}: shapes {listing} cannot be broadcast together") from None


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """``np.matmul``'s result shape, including 1-D operands and broadcast batch dimensions."""
    if not a or not b:
        raise ValueError(f"matmul: operands must be at least 1-D, got {a} and {b}")
    left = (1, *a) if len(a) == 1 else a
    right = (*b, 1) if len(b) == 1 else b
    if left[-1] != right[-2]:
        raise ValueError(f"matmul: contraction mismatch between {a} and {b}")
    batch = broadcast(left[:-2], right[:-2], what="matmul batch dimensions")
    shape = (*batch, left[-2], right[-1])
    if len(b) == 1:
        shape = shape[:-1]
    if len(a) == 1:
        shape = (*shape[:-2], shape[-1]) if len(b) > 1 else shape[:-1]
    return shape


def normalize_axes(axis: int | tuple[int, ...] | None, ndim: int, what: str) -> tuple[int, ...]:
    """Reduced axes as sorted non-negative ints; AxisError (a ValueError) when out of range."""
    if axis is None:
        return tuple(range(ndim))
    items = (axis,) if isinstance(axis, int) else axis
    out = []
    for item in items:
        if not -ndim <= item < ndim:
            raise np.exceptions.AxisError(f"{what}: axis {item} is out of bounds for rank {ndim}")
        out.append(item % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: repeated axis in {axis}")
    return tuple(sorted(out))


def reshape_shape(shape: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...]:
    """The concrete shape ``new`` denotes for an array of ``shape`` (at most one -1)."""
    size = math.prod(shape)
    if sum(d == -1 for d in new) > 1:
        raise ValueError(f"reshape: more than one -1 in {new}")
    if any(d < -1 or d == 0 for d in new):
        raise ValueError(f"reshape: dimensions must be positive (or one -1), got {new}")
    known = math.prod(d for d in new if d != -1)
    if -1 in new:
        if size % known:
            raise ValueError(f"reshape: cannot reshape size {size} into {new}")
        new = tuple(size // known if d == -1 else d for d in new)
    elif known != size:
        raise ValueError(f"reshape: cannot reshape size {size} into {new}")
    return new


def index_shape(shape: tuple[int, ...], key: tuple[Any, ...]) -> tuple[int, ...]:
    """Result shape of static basic indexing; rejects negative steps and empty results."""
    if sum(item is Ellipsis for item in key) > 1:
        raise InvalidIndexError("index: at most one Ellipsis")
    consuming = sum(item is not None and item is not Ellipsis for item in key)
    if consuming > len(shape):
        raise InvalidIndexError(f"index: too many indices ({consuming}) for rank {len(shape)}")
    fill = [slice(None)] * (len(shape) - consuming)
    expanded: list[Any] = []
    for item in key:
        expanded.extend(fill if item is Ellipsis else [item])
    if Ellipsis not in key:
        expanded.extend(fill)
    out: list[int] = []
    dim = 0
    for item in expanded:
        if item is None:
            out.append(1)
            continue
        extent = shape[dim]
        dim += 1
        if isinstance(item, slice):
            if item.step is not None and item.step <= 0:
                raise ValueError(f"index: slice steps must be positive, got {item}")
            count = len(range(*item.indices(extent)))
            if count == 0:
                raise ValueError(f"index: slice {item} of a dimension of size {extent} is empty")
            out.append(count)
        elif not -extent <= item < extent:
            raise InvalidIndexError(f"index: {item} is out of bounds for size {extent}")
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Attribute normalization and JSON codecs


def _int(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what}: expected an int, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what}: expected an int, got {value!r}") from None


def _ints(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{what}: expected a tuple of ints, got {value!r}")
    return tuple(_int(v, what) for v in value)


def _axis(value: Any) -> int | tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return _ints(value, "axis")
    return _int(value, "axis")


def _key(value: Any) -> tuple[Any, ...]:
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    out: list[Any] = []
    for item in items:
        if item is None or item is Ellipsis:
            out.append(item)
        elif isinstance(item, slice):
            parts = [
                None if p is None else _int(p, "slice") for p in (item.start, item.stop, item.step)
            ]
            out.append(slice(*parts))
        else:
            out.append(_int(item, "index"))
    return tuple(out)


def _dtype_attr(value: Any) -> str:
    try:
        name = dtype_name(value)
    except TypeError:
        raise TypeError(f"not a dtype: {value!r}") from None
    if name not in DTYPES:
        raise TypeError(f"unsupported dtype {name} (supported: {DTYPES})")
    return name


def _bool_attr(value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"expected a bool, got {value!r}")
    return bool(value)


def _positive(value: Any) -> int:
    value = _int(value, "attribute")
    if value < 1:
        raise ValueError(f"expected a positive int, got {value}")
    return value


_NORMALIZE: dict[str, Callable[[Any], Any]] = {
    "axis": _axis,
    "keepdims": _bool_attr,
    "shape": lambda v: _ints(v, "shape"),
    "axes": lambda v: _ints(v, "axes"),
    "key": _key,
    "dtype": _dtype_attr,
    "heads": _positive,
    "size": _positive,
}


def _encode_attr(name: str, value: Any) -> Any:
    if name == "key":
        out: list[Any] = []
        for item in value:
            if item is Ellipsis:
                out.append("...")
            elif isinstance(item, slice):
                out.append({"slice": [item.start, item.stop, item.step]})
            else:
                out.append(item)
        return out
    if isinstance(value, tuple):
        return list(value)
    return value


def _decode_attr(name: str, value: Any) -> Any:
    if name == "key":
        items: list[Any] = []
        for item in value:
            if item == "...":
                items.append(Ellipsis)
            elif isinstance(item, dict):
                items.append(slice(*item["slice"]))
            else:
                items.append(item)
        return tuple(items)
    return value


def _encode_arg(arg: Arg) -> dict[str, Any]:
    if isinstance(arg, Const):
        return (
            {"const": arg.value} if arg.dtype is None else {"const": arg.value, "dtype": arg.dtype}
        )
    return {arg.kind: arg.index}


def _decode_arg(data: Mapping[str, Any]) -> Arg:
    if "const" in data:
        return Const(data["const"], data.get("dtype"))
    ((kind, index),) = data.items()
    if kind not in ("input", "node"):
        raise ValueError(f"unknown argument kind {kind!r}")
    return Ref(kind, _int(index, "argument index"))


# --------------------------------------------------------------------------------------------
# Operation table: inference, evaluation, printing


Types = list[TensorType | Const]


@dataclass(frozen=True)
class OpSpec:
    """Everything the model knows about one op; one table drives checks, evaluation and printing."""

    name: str
    kind: str
    arity: int
    attrs: Mapping[str, Any]  # attribute name -> default (``REQUIRED`` if none)
    infer: Callable[[Types, Mapping[str, Any]], TensorType]
    evaluate: Callable[[Any, list[Any], Mapping[str, Any]], Any]
    render: Callable[[list[str], Mapping[str, Any]], str]
    consts: bool = False  # may an argument be a scalar constant?
    float_only: bool = False


REQUIRED = object()
OPS: dict[str, OpSpec] = {}


def _register(spec: OpSpec) -> None:
    OPS[spec.name] = spec


def _tensor(arg: TensorType | Const, what: str) -> TensorType:
    if isinstance(arg, Const):
        raise TypeError(f"{what}: expected a tensor operand, got constant {arg}")
    return arg


def _float(t: TensorType, what: str) -> TensorType:
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{what}: expected a float operand, got {t.dtype}")
    return t


def _fmt_kwargs(attrs: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    parts = [f", {k}={attrs[k]!r}" for k in attrs if attrs[k] != defaults.get(k, REQUIRED)]
    return "".join(parts)


_UNARY = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "sqrt": np.sqrt, "abs": np.abs}
_UNARY["negative"] = np.negative
for _name, _ufunc in _UNARY.items():

    def _infer_unary(ts: Types, attrs: Mapping[str, Any], *, _name=_name, _ufunc=_ufunc):
        t = _tensor(ts[0], _name)
        return TensorType(t.shape, _numpy_dtype(_ufunc, [_stand_in(t)], _name))

    _register(
        OpSpec(
            _name,
            "unary",
            1,
            {},
            _infer_unary,
            lambda xp, a, attrs, _name=_name: getattr(xp, _name)(a[0]),
            lambda a, attrs, _name=_name: f"xp.{_name}({a[0]})",
        )
    )

_register(
    OpSpec(
        "unary_minus",
        "unary",
        1,
        {},
        lambda ts, attrs: OPS["negative"].infer(ts, attrs),
        lambda xp, a, attrs: -a[0],
        lambda a, attrs: f"-{a[0]}",
    )
)

# name -> (ufunc for dtype rules, Python operator or None for a namespace function, symbol)
_BINARY: dict[str, tuple[Any, Any, str]] = {
    "add": (np.add, operator.add, "+"),
    "subtract": (np.subtract, operator.sub, "-"),
    "multiply": (np.multiply, operator.mul, "*"),
    "divide": (np.true_divide, operator.truediv, "/"),
    "power": (np.power, operator.pow, "**"),
    "maximum": (np.maximum, None, ""),
    "minimum": (np.minimum, None, ""),
}
_COMPARE: dict[str, tuple[Any, Any, str]] = {
    "less": (np.less, operator.lt, "<"),
    "less_equal": (np.less_equal, operator.le, "<="),
    "greater": (np.greater, operator.gt, ">"),
    "greater_equal": (np.greater_equal, operator.ge, ">="),
    "equal": (np.equal, operator.eq, "=="),
    "not_equal": (np.not_equal, operator.ne, "!="),
}


def _binary_infer(name: str, ufunc: Any) -> Callable[[Types, Mapping[str, Any]], TensorType]:
    def infer(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
        tensors = [t for t in ts if isinstance(t, TensorType)]
        if not tensors:
            raise TypeError(f"{name}: at least one operand must be a tensor")
        shape = broadcast(*(t.shape for t in tensors), what=name)
        return TensorType(shape, _numpy_dtype(ufunc, [_stand_in(t) for t in ts], name))

    return infer


for _table, _kind in ((_BINARY, "binary"), (_COMPARE, "compare")):
    for _name, (_ufunc, _op, _sym) in _table.items():
        if _op is None:
            _eval = lambda xp, a, attrs, _name=_name: getattr(xp, _name)(a[0], a[1])  # noqa: E731
            _render = lambda a, attrs, _name=_name: f"xp.{_name}({a[0]}, {a[1]})"  # noqa: E731
        else:
            _eval = lambda xp, a, attrs, _op=_op: _op(a[0], a[1])  # noqa: E731
            _render = lambda a, attrs, _sym=_sym: f"{a[0]} {_sym} {a[1]}"  # noqa: E731
        _register(
            OpSpec(
                _name,
                _kind,
                2,
                {},
                _binary_infer(_name, _ufunc),
                _eval,
                _render,
                consts=_op is not None,
            )
        )


def _infer_where(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    cond, a, b = (_tensor(t, "where") for t in ts)
    if cond.dtype != BOOL:
        raise TypeError(f"where: the condition must be bool (a comparison), got {cond.dtype}")
    shape = broadcast(cond.shape, a.shape, b.shape, what="where")
    stand = [np.ones((), bool), _stand_in(a), _stand_in(b)]
    return TensorType(shape, _numpy_dtype(np.where, stand, "where"))


_register(
    OpSpec(
        "where",
        "where",
        3,
        {},
        _infer_where,
        lambda xp, a, attrs: xp.where(a[0], a[1], a[2]),
        lambda a, attrs: f"xp.where({a[0]}, {a[1]}, {a[2]})",
    )
)


def _infer_matmul(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    a, b = (_tensor(t, "matmul") for t in ts)
    shape = matmul_shape(a.shape, b.shape)
    return TensorType(shape, _numpy_dtype(np.matmul, [_stand_in(a, 2), _stand_in(b, 2)], "matmul"))


_register(
    OpSpec(
        "matmul",
        "matmul",
        2,
        {},
        _infer_matmul,
        lambda xp, a, attrs: xp.matmul(a[0], a[1]),
        lambda a, attrs: f"xp.matmul({a[0]}, {a[1]})",
    )
)

_REDUCTIONS = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean, "var": np.var}
_REDUCTION_DEFAULTS = {"axis": None, "keepdims": False}
for _name, _fn in _REDUCTIONS.items():

    def _infer_reduction(ts: Types, attrs: Mapping[str, Any], *, _name=_name, _fn=_fn):
        t = _tensor(ts[0], _name)
        axes = normalize_axes(attrs["axis"], t.ndim, _name)
        if attrs["keepdims"]:
            shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
        else:
            shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
        return TensorType(
            shape, _numpy_dtype(lambda x, _fn=_fn: _fn(x, axis=0), [_stand_in(t, 1)], _name)
        )

    _register(
        OpSpec(
            _name,
            "reduction",
            1,
            _REDUCTION_DEFAULTS,
            _infer_reduction,
            lambda xp, a, attrs, _name=_name: getattr(xp, _name)(
                a[0], axis=attrs["axis"], keepdims=attrs["keepdims"]
            ),
            lambda a, attrs, _name=_name: f"xp.{_name}({a[0]}"
            f"{_fmt_kwargs(attrs, _REDUCTION_DEFAULTS)})",
        )
    )


def _infer_reshape(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    t = _tensor(ts[0], "reshape")
    return TensorType(reshape_shape(t.shape, attrs["shape"]), t.dtype)


def _infer_permute(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    t = _tensor(ts[0], "permute_dims")
    axes = attrs["axes"]
    if sorted(axes) != list(range(t.ndim)):
        raise ValueError(f"permute_dims: {axes} is not a permutation of the {t.ndim} axes")
    return TensorType(tuple(t.shape[i] for i in axes), t.dtype)


def _infer_transpose(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    t = _tensor(ts[0], "transpose")
    if t.ndim != 2:
        raise ValueError(f"transpose (.T): expected a 2-D operand, got rank {t.ndim}")
    return TensorType(t.shape[::-1], t.dtype)


def _infer_index(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    t = _tensor(ts[0], "index")
    return TensorType(index_shape(t.shape, attrs["key"]), t.dtype)


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


def _infer_astype(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    t = _tensor(ts[0], "astype")
    return TensorType(t.shape, attrs["dtype"])


_register(
    OpSpec(
        "reshape",
        "layout",
        1,
        {"shape": REQUIRED},
        _infer_reshape,
        lambda xp, a, attrs: xp.reshape(a[0], attrs["shape"]),
        lambda a, attrs: f"xp.reshape({a[0]}, {attrs['shape']!r})",
    )
)
_register(
    OpSpec(
        "permute_dims",
        "layout",
        1,
        {"axes": REQUIRED},
        _infer_permute,
        lambda xp, a, attrs: xp.permute_dims(a[0], attrs["axes"]),
        lambda a, attrs: f"xp.permute_dims({a[0]}, {attrs['axes']!r})",
    )
)
_register(
    OpSpec(
        "transpose",
        "layout",
        1,
        {},
        _infer_transpose,
        lambda xp, a, attrs: a[0].T,
        lambda a, attrs: f"{a[0]}.T",
    )
)
_register(
    OpSpec(
        "index",
        "layout",
        1,
        {"key": REQUIRED},
        _infer_index,
        lambda xp, a, attrs: a[0][attrs["key"]],
        lambda a, attrs: f"{a[0]}[{format_key(attrs['key'])}]",
    )
)
_register(
    OpSpec(
        "astype",
        "cast",
        1,
        {"dtype": REQUIRED},
        _infer_astype,
        lambda xp, a, attrs: xp.astype(a[0], np.dtype(attrs["dtype"])),
        lambda a, attrs: f"xp.astype({a[0]}, np.{attrs['dtype']})",
    )
)


def _infer_mask(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    if attrs["dtype"] not in FLOAT_DTYPES:
        raise TypeError(f"causal_mask: dtype must be float, got {attrs['dtype']}")
    return TensorType((attrs["size"], attrs["size"]), attrs["dtype"])


_register(
    OpSpec(
        "causal_mask",
        "mask",
        0,
        {"size": REQUIRED, "dtype": REQUIRED},
        _infer_mask,
        lambda xp, a, attrs: cops.causal_mask(attrs["size"], np.dtype(attrs["dtype"]), xp),
        lambda a, attrs: f"ops.causal_mask({attrs['size']}, np.{attrs['dtype']}, xp)",
    )
)


def _infer_gather(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    table, ids = (_tensor(t, "gather") for t in ts)
    if table.ndim == 0 or table.dtype == BOOL:
        raise ValueError(f"gather: the table must be a numeric array of rank >= 1, got {table}")
    if ids.dtype != "int32":
        raise TypeError(f"gather: ids must be int32, got {ids.dtype}")
    return TensorType(ids.shape + table.shape[1:], table.dtype)


_register(
    OpSpec(
        "gather",
        "gather",
        2,
        {},
        _infer_gather,
        lambda xp, a, attrs: cops.gather(a[0], a[1]),
        lambda a, attrs: f"ops.gather({a[0]}, {a[1]})",
    )
)


# Composites: shapes by hand, dtypes by running compiler.ops on minimal NumPy stand-ins (so the
# NEP 50 promotions inside them, e.g. GELU's float64 constant, are NumPy's by construction).


def _composite_dtype(
    fn: Callable[..., Any], ts: list[TensorType], shapes: list[tuple[int, ...]], **kw: Any
) -> str:
    arrays = [np.ones(s, t.dtype) for t, s in zip(ts, shapes, strict=True)]
    return _numpy_dtype(lambda *a: fn(*a, **kw), arrays, fn.__name__)


def _exact(t: TensorType, shape: tuple[int, ...], what: str) -> None:
    if t.shape != shape:
        raise ValueError(f"{what}: expected shape {shape}, got {t.shape}")


def _infer_gelu(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    t = _float(_tensor(ts[0], "gelu"), "gelu")
    return TensorType(t.shape, _composite_dtype(cops.gelu, [t], [()]))


def _infer_softmax(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    t = _float(_tensor(ts[0], "softmax"), "softmax")
    if t.ndim == 0:
        raise ValueError("softmax: operand must be at least 1-D")
    normalize_axes(attrs["axis"], t.ndim, "softmax")
    return TensorType(t.shape, _composite_dtype(cops.softmax, [t], [(1,)]))


def _infer_layer_norm(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    x, gain, bias = (_float(_tensor(t, "layer_norm"), "layer_norm") for t in ts)
    if x.ndim == 0:
        raise ValueError("layer_norm: operand must be at least 1-D")
    shape = broadcast(x.shape, gain.shape, bias.shape, what="layer_norm")
    return TensorType(shape, _composite_dtype(cops.layer_norm, [x, gain, bias], [(1,)] * 3))


def _infer_linear(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    x, w, b = (_float(_tensor(t, "linear"), "linear") for t in ts)
    shape = broadcast(matmul_shape(x.shape, w.shape), b.shape, what="linear bias")
    return TensorType(shape, _composite_dtype(cops.linear, [x, w, b], [(1,), (1, 1), (1,)]))


def _check_attention(ts: list[TensorType], heads: int, what: str) -> tuple[int, int]:
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


_ATTN_STAND_IN = [(1, 1), (1, 3), (3,), (1, 1), (1,)]


def _infer_attention(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    tensors = [_float(_tensor(t, "attention"), "attention") for t in ts]
    shape = _check_attention(tensors, attrs["heads"], "attention")
    dtype = _composite_dtype(cops.attention, tensors, _ATTN_STAND_IN, heads=1)
    return TensorType(shape, dtype)


def _infer_attend(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    tensors = [_float(_tensor(t, "attend"), "attend") for t in ts]
    x, gain, bias, *rest = tensors
    shape = _check_attention([x, *rest], attrs["heads"], "attend")
    _exact(gain, (shape[1],), "attend gain")
    _exact(bias, (shape[1],), "attend bias")
    dtype = _composite_dtype(
        cops.attend, tensors, [(1, 1), (1,), (1,), *_ATTN_STAND_IN[1:]], heads=1
    )
    return TensorType(shape, dtype)


def _infer_feedforward(ts: Types, attrs: Mapping[str, Any]) -> TensorType:
    x, gain, bias, up_w, up_b, down_w, down_b = tensors = [
        _float(_tensor(t, "feedforward"), "feedforward") for t in ts
    ]
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
    return TensorType(x.shape, _composite_dtype(cops.feedforward, tensors, stand))


def _ops_call(
    fn: str, keywords: Sequence[str] = ()
) -> tuple[Callable[..., Any], Callable[..., str]]:
    def evaluate(xp: Any, a: list[Any], attrs: Mapping[str, Any]) -> Any:
        return getattr(cops, fn)(*a, **{k: attrs[k] for k in keywords})

    def render(a: list[str], attrs: Mapping[str, Any]) -> str:
        kw = "".join(f", {k}={attrs[k]!r}" for k in keywords)
        return f"ops.{fn}({', '.join(a)}{kw})"

    return evaluate, render


for _name, _arity, _attrs, _infer in (
    ("gelu", 1, {}, _infer_gelu),
    ("softmax", 1, {"axis": -1}, _infer_softmax),
    ("layer_norm", 3, {}, _infer_layer_norm),
    ("linear", 3, {}, _infer_linear),
    ("attention", 5, {"heads": REQUIRED}, _infer_attention),
    ("attend", 7, {"heads": REQUIRED}, _infer_attend),
    ("feedforward", 7, {}, _infer_feedforward),
):
    _evaluate, _render_fn = _ops_call(_name, tuple(_attrs))
    _register(
        OpSpec(_name, "composite", _arity, _attrs, _infer, _evaluate, _render_fn, float_only=True)
    )

#: Every op name a node may carry.
ALL_OPS: tuple[str, ...] = tuple(OPS)


def normalize_attrs(op: str, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """``attrs`` checked against ``op``'s attribute list, defaults filled in, values normalized."""
    spec = OPS[op]
    unknown = set(attrs) - set(spec.attrs)
    if unknown:
        raise TypeError(f"{op}: unknown attributes {sorted(unknown)}")
    out: dict[str, Any] = {}
    for name, default in spec.attrs.items():
        if name in attrs:
            value = attrs[name]
        elif default is REQUIRED:
            raise TypeError(f"{op}: missing attribute {name!r}")
        else:
            value = default
        out[name] = _NORMALIZE[name](value)
    return out


def evaluate_node(xp: Any, op: str, args: list[Any], attrs: Mapping[str, Any]) -> Any:
    """Apply ``op`` with the array namespace ``xp`` (no checks: NumPy's or the backend's own)."""
    return OPS[op].evaluate(xp, args, attrs)


# --------------------------------------------------------------------------------------------
# Building


def _as_arg(value: Any) -> Arg:
    if isinstance(value, (Ref, Const)):
        return value
    if isinstance(value, np.generic):
        return Const(value.item(), dtype_name(value.dtype))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Const(value)
    raise TypeError(f"not a program argument: {value!r}")


class ProgramBuilder:
    """Adds inputs and nodes one at a time, checking each as it is added."""

    def __init__(self) -> None:
        self.inputs: list[Input] = []
        self.nodes: list[Node] = []

    @classmethod
    def from_program(cls, program: Program) -> ProgramBuilder:
        """A builder that continues ``program`` (its nodes are trusted: already checked)."""
        builder = cls()
        builder.inputs = list(program.inputs)
        builder.nodes = list(program.nodes)
        return builder

    def input(self, shape: Sequence[int], dtype: Any, *, bound: int | None = None) -> Ref:
        """A new input of ``shape`` and ``dtype``; ``bound`` makes it int32 ids in [0, bound)."""
        shape = _ints(tuple(shape), "input shape")
        if any(d < 1 for d in shape):
            raise ValueError(f"input shape must have positive dimensions, got {shape}")
        dtype = _dtype_attr(dtype)
        if bound is not None:
            bound = _positive(bound)
            if dtype != "int32":
                raise TypeError("only int32 inputs can carry an index bound")
        self.inputs.append(Input(shape, dtype, bound))
        return Ref("input", len(self.inputs) - 1)

    def type_of(self, ref: Arg) -> TensorType | Const:
        if isinstance(ref, Const):
            return ref
        if ref.kind == "input":
            if not 0 <= ref.index < len(self.inputs):
                raise ValueError(f"no input {ref.index}")
            return self.inputs[ref.index].type
        if ref.kind == "node":
            if not 0 <= ref.index < len(self.nodes):
                raise ValueError(f"no node {ref.index} (nodes may only use earlier nodes)")
            return self.nodes[ref.index].type
        raise ValueError(f"unknown reference kind {ref.kind!r}")

    def node(self, op: str, *args: Any, **attrs: Any) -> Ref:
        """Add ``op(*args, **attrs)``; raises ValueError/TypeError if NumPy (or the model) would."""
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}")
        spec = OPS[op]
        if len(args) != spec.arity:
            raise TypeError(f"{op}: expected {spec.arity} arguments, got {len(args)}")
        refs = tuple(_as_arg(a) for a in args)
        types = [self.type_of(r) for r in refs]
        for position, t in enumerate(types):
            if isinstance(t, Const) and not spec.consts:
                raise TypeError(f"{op}: constants are only allowed as operator operands")
            if (
                isinstance(t, TensorType)
                and t.dtype == BOOL
                and not ((op == "where" and position == 0) or op == "astype")
            ):
                raise TypeError(f"{op}: bool values may only feed where() or astype()")
        if spec.float_only:
            for t in types:
                _float(_tensor(t, op), op)
        normalized = normalize_attrs(op, attrs)
        if op == "gather":
            ids = refs[1]
            if not (isinstance(ids, Ref) and ids.kind == "input"):
                raise TypeError("gather: ids must be a program input (so its values are bounded)")
            bound = self.inputs[ids.index].bound
            table = types[0]
            if bound is None or not isinstance(table, TensorType) or not table.shape:
                raise TypeError("gather: ids input must carry an index bound")
            if bound > table.shape[0]:
                raise ValueError(f"gather: ids bound {bound} exceeds table rows {table.shape[0]}")
        result = spec.infer(types, normalized)
        if result.dtype not in _VALUE_DTYPES:
            raise TypeError(f"{op}: unsupported result dtype {result.dtype}")
        if any(d < 1 for d in result.shape):
            raise ValueError(f"{op}: zero-size result of shape {result.shape}")
        self.nodes.append(Node(op, refs, normalized, result))
        return Ref("node", len(self.nodes) - 1)

    def _reads_input(self, output: Ref) -> bool:
        stack, seen = [output], set()
        while stack:
            ref = stack.pop()
            if ref.kind == "input":
                return True
            if ref.index not in seen:
                seen.add(ref.index)
                stack.extend(a for a in self.nodes[ref.index].args if isinstance(a, Ref))
        return False

    def build(self, output: Ref | None = None) -> Program:
        """The finished program; its output defaults to the last node."""
        if output is None:
            if not self.nodes:
                raise ValueError("a program needs an output")
            output = Ref("node", len(self.nodes) - 1)
        out_type = self.type_of(output)
        if isinstance(out_type, Const) or out_type.dtype == BOOL:
            raise TypeError(f"program output must be a numeric tensor, got {out_type}")
        if not self._reads_input(output):
            # Nothing to trace: the array namespace comes from the inputs.
            raise ValueError("program output does not depend on any input")
        return Program._trusted(tuple(self.inputs), tuple(self.nodes), output)


# --------------------------------------------------------------------------------------------
# Programs


def _json_default(value: Any) -> Any:
    raise TypeError(f"not JSON-serializable in a program: {value!r}")


def _canonical(data: Any) -> str:
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), allow_nan=False, default=_json_default
    )


def _literal(array: np.ndarray) -> str:
    """Exact Python source for ``array``'s values (NaN and infinities spelled via NumPy)."""

    def one(x: Any) -> str:
        if isinstance(x, list):
            return "[" + ", ".join(one(v) for v in x) + "]"
        if isinstance(x, float):
            if math.isnan(x):
                return "np.nan"
            if math.isinf(x):
                return "np.inf" if x > 0 else "-np.inf"
        return repr(x)

    return f"np.array({one(array.tolist())}, dtype=np.{array.dtype.name})"


def default_tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol) a reproducer compares with: loose for float32, tight for float64."""
    return {"float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9)}.get(dtype, (0.0, 0.0))


@dataclass(frozen=True)
class Program:
    """A checked, immutable program. Build one with :class:`ProgramBuilder` or ``from_json``."""

    inputs: tuple[Input, ...]
    nodes: tuple[Node, ...]
    output: Ref

    def __post_init__(self) -> None:
        specs = [(n.op, n.args, n.attrs) for n in self.nodes]
        if _rebuild(self.inputs, specs, self.output).nodes != self.nodes:
            raise ValueError("nodes disagree with inference; build programs with ProgramBuilder")

    @classmethod
    def _trusted(cls, inputs: tuple[Input, ...], nodes: tuple[Node, ...], output: Ref) -> Program:
        program = cls.__new__(cls)
        object.__setattr__(program, "inputs", inputs)
        object.__setattr__(program, "nodes", nodes)
        object.__setattr__(program, "output", output)
        return program

    def __hash__(self) -> int:
        return hash(self.canonical_json())

    # ---- queries

    def type_of(self, ref: Ref) -> TensorType:
        return self.inputs[ref.index].type if ref.kind == "input" else self.nodes[ref.index].type

    @property
    def output_type(self) -> TensorType:
        return self.type_of(self.output)

    @property
    def ops(self) -> tuple[str, ...]:
        """Op names of the nodes, in order."""
        return tuple(n.op for n in self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def dtypes(self) -> set[str]:
        """Every dtype that occurs on an input or node."""
        return {i.dtype for i in self.inputs} | {n.type.dtype for n in self.nodes}

    def users(self, ref: Ref) -> list[int]:
        """Indices of the nodes that take ``ref`` as an argument."""
        return [i for i, n in enumerate(self.nodes) if ref in n.args]

    # ---- serialization

    def to_dict(self) -> dict[str, Any]:
        inputs = []
        for inp in self.inputs:
            entry: dict[str, Any] = {"shape": list(inp.shape), "dtype": inp.dtype}
            if inp.bound is not None:
                entry["bound"] = inp.bound
            inputs.append(entry)
        nodes = [
            {
                "op": n.op,
                "args": [_encode_arg(a) for a in n.args],
                "attrs": {k: _encode_attr(k, v) for k, v in n.attrs.items()},
            }
            for n in self.nodes
        ]
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "inputs": inputs,
            "nodes": nodes,
            "output": _encode_arg(self.output),
        }

    def to_json(self, indent: int | None = None) -> str:
        """JSON text (sorted keys); ``from_json`` gives back an equal program."""
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Program:
        if data.get("format") != FORMAT:
            raise ValueError(
                f"not a program: format is {data.get('format')!r}, expected {FORMAT!r}"
            )
        version = data.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"program JSON has an invalid format version {version!r}")
        if version > FORMAT_VERSION:
            raise ValueError(
                f"program JSON has format version {version}, newer than this reader's "
                f"{FORMAT_VERSION}; update the strategies package to read it"
            )
        builder = ProgramBuilder()
        try:
            for entry in data["inputs"]:
                builder.input(entry["shape"], entry["dtype"], bound=entry.get("bound"))
            for entry in data["nodes"]:
                attrs = {k: _decode_attr(k, v) for k, v in entry.get("attrs", {}).items()}
                builder.node(entry["op"], *(_decode_arg(a) for a in entry["args"]), **attrs)
            output = _decode_arg(data["output"])
        except (KeyError, AttributeError) as error:
            raise ValueError(f"malformed program JSON: missing or misplaced {error}") from None
        if not isinstance(output, Ref):
            raise ValueError("program output must be a reference")
        return builder.build(output)

    @classmethod
    def from_json(cls, text: str | bytes) -> Program:
        return cls.from_dict(json.loads(text))

    def canonical_json(self) -> str:
        """Compact, key-sorted JSON: the bytes the content hash is taken over."""
        return _canonical(self.to_dict())

    def digest(self) -> str:
        """Stable content hash (sha256 hex of the canonical JSON): same program, same hash."""
        return hashlib.sha256(self.canonical_json().encode("ascii")).hexdigest()

    # ---- evaluation

    def as_function(self, namespace: Any = None) -> Callable[..., Any]:
        """``fn(*inputs)`` evaluating the program with ``namespace`` (default: the inputs' own)."""
        return _function(self, namespace, None)

    # ---- printing

    def __str__(self) -> str:
        lines = [f"program {self.digest()[:12]}"]
        for i, inp in enumerate(self.inputs):
            bound = "" if inp.bound is None else f" in [0, {inp.bound})"
            lines.append(f"  x{i}: {inp.type}{bound}")
        for i, node in enumerate(self.nodes):
            expr = OPS[node.op].render([str(a) for a in node.args], node.attrs)
            lines.append(f"  v{i} = {expr}  # {node.type}")
        lines.append(f"  return {self.output}")
        return "\n".join(lines)

    def to_python(
        self,
        values: Sequence[np.ndarray] | None = None,
        *,
        check_compiler: bool = True,
        rtol: float | None = None,
        atol: float | None = None,
        seed: int = 0,
    ) -> str:
        """A standalone reproducer: imports, inputs (``values`` or seeded random), the function,
        the call through ``compiler.jit`` and the comparison with NumPy."""
        return _python_source(self, None, values, self.inputs, check_compiler, rtol, atol, seed)

    # ---- rewriting (for minimizers)

    def _rewrite(self, replacements: Mapping[int, Ref], output: Ref) -> Program:
        def resolve(ref: Arg) -> Arg:
            seen = 0
            while isinstance(ref, Ref) and ref.kind == "node" and ref.index in replacements:
                ref = replacements[ref.index]
                seen += 1
                if seen > len(self.nodes):
                    raise ValueError("cyclic node replacement")
            return ref

        live: set[int] = set()
        stack = [resolve(output)]
        while stack:
            ref = stack.pop()
            if isinstance(ref, Ref) and ref.kind == "node" and ref.index not in live:
                if not 0 <= ref.index < len(self.nodes):
                    raise ValueError(f"no node {ref.index}")
                live.add(ref.index)
                stack.extend(resolve(a) for a in self.nodes[ref.index].args)
        order = sorted(live)
        renumber = {old: new for new, old in enumerate(order)}

        def remap(ref: Arg) -> Arg:
            ref = resolve(ref)
            if isinstance(ref, Ref) and ref.kind == "node":
                return Ref("node", renumber[ref.index])
            return ref

        specs = [
            (self.nodes[i].op, tuple(remap(a) for a in self.nodes[i].args), self.nodes[i].attrs)
            for i in order
        ]
        for (_, args, _), i in zip(specs, order, strict=True):
            for a in args:
                if isinstance(a, Ref) and a.kind == "node" and order[a.index] >= i:
                    raise ValueError("a replacement must refer to an earlier node or an input")
        new_output = remap(output)
        assert isinstance(new_output, Ref)
        return _rebuild(self.inputs, specs, new_output)

    def dead_code_eliminated(self) -> Program:
        """The same program without nodes the output does not depend on."""
        return self._rewrite({}, self.output)

    def subprogram(self, output: Ref | int) -> Program:
        """The program computing ``output`` (a node index or Ref) instead; inputs are kept."""
        ref = Ref("node", output) if isinstance(output, int) else output
        return self._rewrite({}, ref)

    def replace_node(self, index: int, ref: Ref) -> Program:
        """Uses of node ``index`` read ``ref`` instead; re-checked, so it may raise."""
        if not 0 <= index < len(self.nodes):
            raise ValueError(f"no node {index}")
        if ref.kind == "node" and ref.index >= index:
            raise ValueError("a replacement must refer to an earlier node or an input")
        return self._rewrite({index: ref}, self.output)

    def without_node(self, index: int) -> Program:
        """Node ``index`` bypassed by one of its arguments (the first that type-checks)."""
        node = self.nodes[index]
        candidates = [a for a in node.args if isinstance(a, Ref)]
        candidates.sort(key=lambda a: self.type_of(a) != node.type)
        errors = []
        for ref in candidates:
            try:
                return self.replace_node(index, ref)
            except (ValueError, TypeError) as error:
                errors.append(str(error))
        raise ValueError(f"node {index} ({node.op}) cannot be bypassed: {errors or 'no arguments'}")

    def used_inputs(self) -> tuple[int, ...]:
        """Indices of inputs some node (or the output) reads."""
        used = {
            a.index for n in self.nodes for a in n.args if isinstance(a, Ref) and a.kind == "input"
        }
        if self.output.kind == "input":
            used.add(self.output.index)
        return tuple(sorted(used))

    def drop_unused_inputs(self) -> tuple[Program, tuple[int, ...]]:
        """(program without unused inputs, original indices of the inputs kept)."""
        kept = self.used_inputs()
        renumber = {old: new for new, old in enumerate(kept)}

        def remap(ref: Arg) -> Arg:
            if isinstance(ref, Ref) and ref.kind == "input":
                return Ref("input", renumber[ref.index])
            return ref

        specs = [(n.op, tuple(remap(a) for a in n.args), n.attrs) for n in self.nodes]
        output = remap(self.output)
        assert isinstance(output, Ref)
        return _rebuild(tuple(self.inputs[i] for i in kept), specs, output), kept


def _rebuild(
    inputs: Sequence[Input],
    specs: Iterable[tuple[str, tuple[Arg, ...], Mapping[str, Any]]],
    output: Ref,
) -> Program:
    builder = ProgramBuilder()
    for inp in inputs:
        builder.input(inp.shape, inp.dtype, bound=inp.bound)
    for op, args, attrs in specs:
        builder.node(op, *args, **attrs)
    return builder.build(output)


# --------------------------------------------------------------------------------------------
# Evaluation and printing shared with invalid programs


def _function(program: Program, namespace: Any, extra: RawNode | None) -> Callable[..., Any]:
    nodes = program.nodes
    n_inputs = len(program.inputs)
    output = program.output

    def fn(*args: Any) -> Any:
        if len(args) != n_inputs:
            raise TypeError(f"program takes {n_inputs} inputs, got {len(args)}")
        xp = namespace
        if xp is None:
            xp = cops.namespace(args[0]) if args else np
        values: list[Any] = []

        def get(arg: Arg) -> Any:
            if isinstance(arg, Const):
                return arg.py()
            return args[arg.index] if arg.kind == "input" else values[arg.index]

        for node in nodes:
            values.append(OPS[node.op].evaluate(xp, [get(a) for a in node.args], node.attrs))
        if extra is not None:
            return OPS[extra.op].evaluate(xp, [get(a) for a in extra.args], extra.attrs)
        return get(output)

    fn.__name__ = fn.__qualname__ = "program"
    return fn


def _python_source(
    program: Program,
    extra: RawNode | None,
    values: Sequence[np.ndarray] | None,
    inputs: Sequence[Input],
    check_compiler: bool,
    rtol: float | None,
    atol: float | None,
    seed: int,
    header: str | None = None,
    rejects: Sequence[type[BaseException]] | None = None,
) -> str:
    """Reproducer source. ``rejects`` set: the program is invalid and the compiler must raise one
    of those (NumPy may or may not reject it; the snippet reports which)."""
    names = [f"x{i}" for i in range(len(inputs))]
    body: list[str] = []
    for i, node in enumerate(program.nodes):
        expr = OPS[node.op].render([str(a) for a in node.args], node.attrs)
        body.append(f"    v{i} = {expr}  # {node.type}")
    if extra is not None:
        expr = OPS[extra.op].render([str(a) for a in extra.args], extra.attrs)
        body.append(f"    return {expr}  # invalid")
    else:
        body.append(f"    return {program.output}")
    uses_ops = any("ops." in line for line in body)
    uses_xp = any("xp." in line or ", xp)" in line for line in body)
    title = header or f"Reproducer for program {program.digest()[:12]}"
    lines = [f'"""{title} (format v{FORMAT_VERSION})."""']
    lines += ["import numpy as np", ""]
    if check_compiler:
        lines.append("import compiler")
    if uses_ops:
        lines.append("from compiler import ops")
    if check_compiler or uses_ops:
        lines.append("")
    lines += ["", f"def program({', '.join(names)}):"]
    if uses_xp:
        lines.append(f"    xp = {names[0]}.__array_namespace__()" if names else "    xp = np")
    lines += body
    lines += ["", ""]
    if values is None:
        lines.append(f"rng = np.random.default_rng({seed})")
    for i, inp in enumerate(inputs):
        if values is not None:
            lines.append(f"{names[i]} = {_literal(np.asarray(values[i]))}")
        elif inp.bound is not None:
            lines.append(
                f"{names[i]} = rng.integers(0, {inp.bound}, {inp.shape}).astype(np.{inp.dtype})"
            )
        elif np.dtype(inp.dtype).kind in "iu":
            lines.append(f"{names[i]} = rng.integers(-8, 9, {inp.shape}).astype(np.{inp.dtype})")
        else:
            lines.append(f"{names[i]} = rng.standard_normal({inp.shape}).astype(np.{inp.dtype})")
    call = ", ".join(names)
    lines.append("")
    if rejects is not None:
        lines += [
            "try:",
            "    with np.errstate(all='ignore'):",
            f"        result = program({call})",
            "    print('numpy accepted it:', np.asarray(result).dtype, np.shape(result))",
            "except (ValueError, TypeError, IndexError) as error:",
            "    print('numpy rejected it:', type(error).__name__, error)",
        ]
        if check_compiler:
            errors = ", ".join(e.__name__ for e in rejects)
            lines += [
                "try:",
                f"    compiler.jit(program)({call})",
                f"except ({errors}) as error:",
                "    print('compiler rejected it:', type(error).__name__, error)",
                "else:",
                "    raise AssertionError('the compiler accepted an invalid program')",
            ]
        return "\n".join(lines) + "\n"
    lines += ["with np.errstate(all='ignore'):", f"    expected = program({call})"]
    lines.append("print('numpy:', np.asarray(expected).dtype, np.shape(expected))")
    if check_compiler:
        out_dtype = np.asarray(np.ones((), program.output_type.dtype)).dtype.name
        default_rtol, default_atol = default_tolerance(out_dtype)
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
        lines += [
            f"actual = compiler.jit(program)({call})",
            "print('compiler:', np.asarray(actual).dtype, np.shape(actual))",
            "assert np.asarray(actual).dtype == np.asarray(expected).dtype",
            "assert np.shape(actual) == np.shape(expected)",
            "np.testing.assert_allclose(",
            f"    actual, expected, rtol={rtol!r}, atol={atol!r}, equal_nan=True",
            ")",
            "print('ok')",
        ]
    return "\n".join(lines) + "\n"


__all__ = [
    "ALL_OPS",
    "BOOL",
    "DTYPES",
    "FLOAT_DTYPES",
    "FORMAT",
    "FORMAT_VERSION",
    "OPS",
    "Const",
    "Input",
    "InvalidIndexError",
    "Node",
    "OpSpec",
    "Program",
    "ProgramBuilder",
    "RawNode",
    "Ref",
    "TensorType",
    "broadcast",
    "default_tolerance",
    "dtype_name",
    "evaluate_node",
    "format_key",
    "index_shape",
    "matmul_shape",
    "normalize_attrs",
    "normalize_axes",
    "reshape_shape",
]
