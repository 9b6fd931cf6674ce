"""The traced array type, its array namespace, and NumPy's dispatch protocols.

Operators, methods, ``np.<ufunc>(t)``, ``np.<function>(t)`` and ``xp.<name>(t)`` all end in the
trace rules of :mod:`.lang`. The elementwise names come from the primitive table, so a primitive
added there is callable every way at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import primitives
from ..dtypes import BFLOAT16, BOOL, FLOAT16, FLOAT32, FLOAT64, INT32, SUPPORTED_DTYPES
from ..errors import UnsupportedFeature
from .graph import Node


def as_operand(value: Any, what: str) -> Tensor | Any:
    """A Tensor, or a scalar kept as-is (Python scalars weak, NumPy scalars strong); NumPy
    arrays captured from the enclosing scope become kernel arguments."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        from .trace import current_trace

        if value.ndim == 0 and value.dtype.kind in "iu" and value.dtype not in SUPPORTED_DTYPES:
            # NumPy hands a scalar left of a comparison over as a 0-d array (``np.int8(3) <
            # x`` is ``np.less(array(3, int8), x)``): one of an integer dtype no kernel argument
            # has is its value, a strong scalar as NumPy's promotion takes a 0-d array (a 0-d
            # array of such a dtype captured from the enclosing scope is read when traced).
            return value[()]
        return current_trace().capture(value)
    if isinstance(value, (bool, int, float, np.generic)):
        dtype = np.dtype(value.dtype) if isinstance(value, np.generic) else None
        if dtype is not None and dtype.kind not in "biuf" and dtype != BFLOAT16:
            raise TypeError(f"{what}: unsupported scalar {value!r} of dtype {value.dtype}")
        return value
    if isinstance(value, complex):
        raise UnsupportedFeature(f"complex numbers ({what})")
    if isinstance(value, (list, tuple)):
        raise UnsupportedFeature(f"nested Python sequences as operands ({what}); use a NumPy array")
    raise TypeError(f"{what}: unsupported operand of type {type(value).__name__}")


def _control_flow(*_: Any) -> Any:
    raise TypeError(
        "a traced tensor has no concrete value: data-dependent Python control flow "
        "(if/while/bool/int/float on a tensor) is not supported inside @jit; use where()"
    )


def _swap_last(ndim: int) -> tuple[int, ...]:
    if ndim < 2:
        raise ValueError("matrix transpose needs at least 2 dimensions")
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def _binary(name: str, reflected: bool = False) -> Callable[..., Tensor]:
    if reflected:
        return lambda self, other: lang.elementwise(name, other, self)
    return lambda self, other: lang.elementwise(name, self, other)


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
    size = property(lambda self: math.prod(self.node.shape))
    T = property(lambda self: lang.transpose(self))
    mT = property(lambda self: lang.transpose(self, _swap_last(self.ndim)))

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

    # arithmetic (the operators of the primitive table's infix entries)
    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("divide"), _binary("divide", True)
    __pow__, __rpow__ = _binary("power"), _binary("power", True)
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")
    __matmul__ = lambda self, o: lang.matmul(self, o)  # noqa: E731
    __rmatmul__ = lambda self, o: lang.matmul(o, self)  # noqa: E731
    __neg__ = lambda self: lang.elementwise("negative", self)  # noqa: E731
    __pos__ = lambda self: self  # noqa: E731
    __abs__ = lambda self: lang.elementwise("abs", self)  # noqa: E731

    def __getitem__(self, index: Any) -> Tensor:
        return lang.getitem(self, index)

    def __floordiv__(self, other: Any) -> Tensor:
        raise UnsupportedFeature("floor division (//)")

    __rfloordiv__ = __mod__ = __rmod__ = __floordiv__

    # methods
    def reshape(self, *shape: Any, order: str = "C", copy: Any = None) -> Tensor:
        return lang.reshape(self, shape[0] if len(shape) == 1 else shape, order=order, copy=copy)

    def transpose(self, *axes: Any) -> Tensor:
        if not axes:  # x.transpose(): every axis reversed
            return lang.transpose(self, None)
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]  # x.transpose((1, 0)), x.transpose(None)
        # An explicit empty permutation is one, as in NumPy: valid on a 0-d tensor only (it
        # was taken for "reverse every axis", so x.transpose(()) of a vector compiled).
        return lang.transpose(self, None if axes is None else tuple(axes))

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Tensor:
        # ndarray.astype(dtype, order, casting, subok, copy): NumPy judges the others
        names = ("order", "casting", "subok", "copy")
        if len(args) > len(names):
            raise TypeError(f"astype() takes at most {len(names) + 1} positional arguments")
        given = dict(zip(names[: len(args)], args, strict=True))
        if set(given) & set(kwargs):
            raise TypeError(f"astype() got multiple values for {sorted(set(given) & set(kwargs))}")
        return lang.astype(self, dtype, **given, **kwargs)

    # ndarray's reductions, positional parameters in its order: (axis, dtype, out, keepdims)
    # for sum and mean (var and std: ddof after out), (axis, out, keepdims) for max and min.
    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, **kw: Any) -> Tensor:
        return _reduction("sum")(self, axis, dtype, out, **kw)

    def max(self, axis: Any = None, out: Any = None, **kw: Any) -> Tensor:
        return _reduction("max")(self, axis, out, **kw)

    def min(self, axis: Any = None, out: Any = None, **kw: Any) -> Tensor:
        return _reduction("min")(self, axis, out, **kw)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, **kw: Any) -> Tensor:
        return _reduction("mean")(self, axis, dtype, out, **kw)

    def var(self, axis: Any = None, dtype: Any = None, out: Any = None, **kw: Any) -> Tensor:
        if "correction" in kw:  # np.var's (the array API's) keyword, not ndarray.var's
            raise TypeError("var() got an unexpected keyword argument 'correction'")
        return _reduction("var")(self, axis, dtype, out, **kw)

    def std(self, axis: Any = None, dtype: Any = None, out: Any = None, **kw: Any) -> Tensor:
        if "correction" in kw:
            raise TypeError("std() got an unexpected keyword argument 'correction'")
        return _reduction("std")(self, axis, dtype, out, **kw)

    # NumPy protocol: np.exp(t), np.add(a, t), np.sum(t, axis=...)
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = ufunc.__name__
        if method != "__call__":
            raise UnsupportedFeature(f"ufunc method np.{name}.{method}")
        if kwargs:
            raise UnsupportedFeature(f"np.{name} with keyword arguments {sorted(kwargs)}")
        handler = _ufuncs().get(name)
        if handler is None:
            raise UnsupportedFeature(f"NumPy ufunc np.{name}")
        return handler(*inputs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        handler = _FUNCTIONS.get(func.__name__)
        if handler is None:
            raise UnsupportedFeature(f"NumPy function np.{func.__name__}")
        return handler(*args, **kwargs)


def _elementwise_function(name: str) -> Callable[..., Tensor]:
    def call(*args: Any) -> Tensor:
        return lang.elementwise(name, *args)

    call.__name__ = name
    return call


def _ufuncs() -> dict[str, Callable[..., Tensor]]:
    """NumPy ufunc name -> trace rule, from the table (the first entry of a ufunc wins)."""
    table: dict[str, Callable[..., Tensor]] = {"matmul": lang.matmul}
    for prim in primitives.PRIMITIVES.values():
        if prim.elementwise and isinstance(prim.ufunc, np.ufunc):
            table.setdefault(prim.ufunc.__name__, _elementwise_function(prim.name))
    return table


def _reduction(name: str) -> Callable[..., Tensor]:
    """``np.sum``-style functions, positional parameters in NumPy's order (``np.max`` has no
    ``dtype``: its third is ``out``)."""

    def with_dtype(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, **kw: Any):
        if out is not None:
            raise UnsupportedFeature(f"{name} with out=")
        keepdims = kw.pop("keepdims", False)
        if dtype is not None:
            kw["dtype"] = dtype
        return lang.reduce(name, x, axis, keepdims, **kw)

    def without_dtype(x: Any, axis: Any = None, out: Any = None, **kw: Any) -> Tensor:
        if out is not None:
            raise UnsupportedFeature(f"{name} with out=")
        keepdims = kw.pop("keepdims", False)
        return lang.reduce(name, x, axis, keepdims, **kw)

    call = without_dtype if name in ("max", "min") else with_dtype
    call.__name__ = name
    return call


def _np_astype(x: Any, dtype: Any, copy: bool = True, device: Any = None) -> Tensor:
    return lang.astype(x, dtype)


def _np_reshape(
    x: Any, shape: Any = None, order: str = "C", newshape: Any = None, copy: Any = None
) -> Tensor:
    return lang.reshape(x, shape if shape is not None else newshape, order, copy)


class Namespace:
    """The array namespace of traced tensors: the array-API names the ops modules use. Every
    elementwise primitive of the table is an attribute under its own name."""

    float32, float64, int32, bool = FLOAT32, FLOAT64, INT32, BOOL
    float16, bfloat16 = FLOAT16, BFLOAT16
    pi, e, inf, nan = math.pi, math.e, math.inf, math.nan

    def __getattr__(self, name: str) -> Any:
        prim = primitives.PRIMITIVES.get(name)
        if prim is not None and prim.elementwise and prim.kind not in ("cast", "copy"):
            return _elementwise_function(name)
        raise UnsupportedFeature(f"array-namespace function {name!r}")

    @staticmethod
    def pow(x: Any, y: Any) -> Tensor:
        return lang.elementwise("power", x, y)

    @staticmethod
    def atan(x: Any) -> Tensor:
        return lang.elementwise("arctan", x)

    @staticmethod
    def asinh(x: Any) -> Tensor:
        return lang.elementwise("arcsinh", x)

    @staticmethod
    def reshape(x: Any, shape: Any, copy: Any = None) -> Tensor:
        return lang.reshape(x, shape, copy=copy)

    @staticmethod
    def astype(x: Any, dtype: Any, copy: bool = True, device: Any = None) -> Tensor:
        return lang.astype(x, dtype)  # (the array API's: no casting, order or subok)


# Structural functions and the reductions, under their array-API names.
_NAMESPACE_FUNCTIONS = {
    "where": lambda *a: lang.where(*a),
    "matmul": lambda a, b: lang.matmul(a, b),
    "permute_dims": lambda x, axes: lang.transpose(x, axes),
    "transpose": lambda x, axes=None: lang.transpose(x, axes),
    "broadcast_to": lambda x, shape: lang.broadcast_to(x, tuple(shape)),
    "causal_mask": lambda size, dtype: lang.causal_mask(size, dtype),
    "gather": lambda table, ids: lang.gather(table, ids),
}
for _name, _fn in _NAMESPACE_FUNCTIONS.items():
    setattr(Namespace, _name, staticmethod(_fn))
for _name in ("sum", "max", "min", "mean", "var", "std"):
    setattr(Namespace, _name, staticmethod(_reduction(_name)))

xp = Namespace()

_FUNCTIONS: dict[str, Callable[..., Tensor]] = {
    "sum": _reduction("sum"),
    "max": _reduction("max"),
    "amax": _reduction("max"),
    "min": _reduction("min"),
    "amin": _reduction("min"),
    "mean": _reduction("mean"),
    "var": _reduction("var"),
    "std": _reduction("std"),
    "reshape": _np_reshape,
    "transpose": lambda x, axes=None: lang.transpose(x, axes),
    "permute_dims": lambda x, axes=None: lang.transpose(x, axes),
    "matmul": lambda a, b: lang.matmul(a, b),
    "where": lambda *a: lang.where(*a),
    "astype": _np_astype,
    "broadcast_to": lambda x, shape: lang.broadcast_to(x, tuple(shape)),
}

from . import lang  # noqa: E402 - the trace rules use Tensor; Tensor's methods use them

__all__ = ["Namespace", "Tensor", "as_operand", "xp"]
