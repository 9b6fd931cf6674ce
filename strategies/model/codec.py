"""JSON for the program model, and the one canonical JSON used for every hash in the project.

Attributes are checked and normalized by their kind (from the primitive table): JSON lists become
tuples, an index key spells ``...`` and slices as ``{"slice": [start, stop, step]}``.
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
from collections.abc import Mapping
from typing import Any

import numpy as np

from compiler.primitives import Attr

from .types import DTYPES, Arg, Const, Ref, dtype_name

FORMAT = "mlir-tensor-fuzz/program"
FORMAT_VERSION = 1


def canonical(data: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, ASCII, no NaN; the basis of every hash."""
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def digest(data: Any) -> str:
    """sha256 hex of the canonical JSON of ``data``."""
    return hashlib.sha256(canonical(data).encode("ascii")).hexdigest()


# --------------------------------------------------------------------------------------------
# Attribute normalization, by kind


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
        elif isinstance(item, (bool, np.bool_)):  # NumPy's x[True]: a new axis of length one
            out.append(bool(item))
        elif isinstance(item, slice):
            parts = [
                None if p is None else _int(p, "slice") for p in (item.start, item.stop, item.step)
            ]
            out.append(slice(*parts))
        else:
            out.append(_int(item, "index"))
    return tuple(out)


def _dtype(value: Any) -> str:
    try:
        name = dtype_name(value)
    except TypeError:
        raise TypeError(f"not a dtype: {value!r}") from None
    if name not in DTYPES and name != "bool":  # bool: a cast's target (x.astype(bool))
        raise TypeError(f"unsupported dtype {name} (supported: {DTYPES} and bool)")
    return name


def _bool(value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"expected a bool, got {value!r}")
    return bool(value)


def _positive(value: Any) -> int:
    value = _int(value, "attribute")
    if value < 1:
        raise ValueError(f"expected a positive int, got {value}")
    return value


def _count(value: Any) -> int | float:
    """var's and std's ``ddof``: any finite real, as NumPy takes it (an int stays an int)."""
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {value}")
        return float(value)
    return _int(value, "attribute")


def _result_dtype(value: Any) -> str | None:
    """A reduction's ``dtype=``: None (NumPy's default) or a numeric dtype of the compiler."""
    if value is None:
        return None
    name = _dtype(value)
    if name == "bool":
        raise TypeError("a reduction's dtype= must be numeric, got bool")
    return name


def _initial(value: Any) -> int | float | None:
    """max's and min's ``initial``: None (NumPy's default) or a finite real (programs are JSON;
    NumPy converts it to the result's dtype)."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"initial must be a real number, got {value!r}")
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"initial must be finite, got {value}")
        return float(value)
    return _int(value, "initial")


_NORMALIZE = {
    "axis": _axis,
    "bool": _bool,
    "shape": lambda v: _ints(v, "shape"),
    "axes": lambda v: _ints(v, "axes"),
    "index": _key,
    "dtype": _dtype,
    "positive": _positive,
    "count": _count,
    "result_dtype": _result_dtype,
    "initial": _initial,
}


def normalize_attr(spec: Attr, value: Any) -> Any:
    return _NORMALIZE[spec.kind](value)


def encode_attr(spec: Attr, value: Any) -> Any:
    if spec.kind == "index":
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


def decode_attr(spec: Attr | None, value: Any) -> Any:
    if spec is not None and spec.kind == "index":
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


def encode_attrs(specs: Mapping[str, Attr], attrs: Mapping[str, Any]) -> dict[str, Any]:
    """``attrs`` as data; a form or late keyword attribute at its default left out (see
    ``Attr.form`` and ``Attr.keyword``)."""
    return {
        k: encode_attr(specs[k], v) if k in specs else v
        for k, v in attrs.items()
        if not (k in specs and (specs[k].form or specs[k].keyword) and v == specs[k].default)
    }


def decode_attrs(specs: Mapping[str, Attr], attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: decode_attr(specs.get(k), v) for k, v in attrs.items()}


def encode_arg(arg: Arg) -> dict[str, Any]:
    if isinstance(arg, Const):
        return (
            {"const": arg.value} if arg.dtype is None else {"const": arg.value, "dtype": arg.dtype}
        )
    return {arg.kind: arg.index}


def decode_arg(data: Mapping[str, Any]) -> Arg:
    if not isinstance(data, Mapping):
        raise ValueError(f"an argument must be an object, got {data!r}")
    if "const" in data:
        return Const(data["const"], data.get("dtype"))
    if len(data) != 1:
        raise ValueError(f"malformed argument {data!r}")
    ((kind, index),) = data.items()
    if kind not in ("input", "node"):
        raise ValueError(f"unknown argument kind {kind!r}")
    return Ref(kind, _int(index, "argument index"))


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "canonical",
    "decode_arg",
    "decode_attr",
    "decode_attrs",
    "digest",
    "encode_arg",
    "encode_attr",
    "encode_attrs",
    "normalize_attr",
]
