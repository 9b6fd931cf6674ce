"""Plain data of the program model: types, inputs, references, constants, equations."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler import primitives

#: Dtypes of inputs, casts and results; ``bool`` exists only as the result of a comparison.
#: float16 and bfloat16 (``ml_dtypes``) come last: the shrinker prefers the earlier ones, and
#: the generator gives them a modest share of programs (``gen.programs``).
DTYPES = ("float32", "float64", "int32", "float16", "bfloat16")
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
#: Stored in 16 bits, computed in float32 by NumPy (float16) and ml_dtypes (bfloat16).
LOW_PRECISION_DTYPES = ("float16", "bfloat16")
BOOL = "bool"
VALUE_DTYPES = (*DTYPES, BOOL)
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
#: Integer dtypes a NumPy scalar constant may have besides ``DTYPES``: no array of them is
#: supported, but NumPy takes such a scalar beside an array whose dtype the result keeps
#: (``x * np.uint8(3)`` of float32 is float32, ``i + np.int16(2)`` of int32 is int32).
SCALAR_DTYPES = ("int8", "uint8", "int16", "uint16", "uint32", "int64")


def dtype_name(dtype: Any) -> str:
    """Normalize a dtype-like to its NumPy name."""
    return np.dtype(dtype).name


# The model's own dtype facts, for the oracles too: never the compiler's tables, which are under
# test (a compiler that dropped float16 from its low-precision table once also made the
# tolerance allow float16 four ulps a step, hiding its own float16 accumulation).


def takes_a_dim(item: Any) -> bool:
    """Does a basic index key's ``item`` take one of the array's dims (an int or a slice), not
    add one (None, or NumPy's ``True``) nor span those the others leave (an Ellipsis)?"""
    return item is not None and item is not Ellipsis and not isinstance(item, (bool, np.bool_))


def is_float(dtype: Any) -> bool:
    """A floating-point dtype, bfloat16 included (an ``ml_dtypes`` dtype of ``kind`` "V")."""
    return np.dtype(dtype).kind == "f" or dtype_name(dtype) == "bfloat16"


def is_low_precision(dtype: Any) -> bool:
    """float16 or bfloat16: stored in 16 bits, computed in float32 by NumPy and ml_dtypes."""
    return dtype_name(dtype) in LOW_PRECISION_DTYPES


def finfo(dtype: Any) -> Any:
    """``np.finfo`` for every float dtype (``ml_dtypes.finfo`` knows bfloat16 too)."""
    import ml_dtypes

    return ml_dtypes.finfo(np.dtype(dtype))


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
        if isinstance(self.value, int) and abs(self.value) > INT64_MAX:
            raise ValueError(f"integer constant {self.value} does not fit in int64")
        if self.dtype in SCALAR_DTYPES:
            info = np.iinfo(self.dtype)
            if not isinstance(self.value, int) or not info.min <= self.value <= info.max:
                raise ValueError(f"{self.dtype} constant needs an int in its range: {self.value}")
        elif self.dtype is not None:
            if self.dtype not in DTYPES:
                known = (*DTYPES, *SCALAR_DTYPES)
                raise TypeError(f"constant dtype must be one of {known}, got {self.dtype!r}")
            if self.dtype == "int32" and not isinstance(self.value, int):
                raise TypeError(f"int32 constant needs an int value, got {self.value!r}")
            if self.dtype == "int32" and abs(self.value) > INT32_MAX:
                raise ValueError(f"integer constant {self.value} does not fit in int32")

    def py(self) -> Any:
        """The operand as passed to the array namespace (weak: Python scalar; strong: NumPy)."""
        if self.dtype is None:
            return self.value
        with np.errstate(over="ignore"):  # 1e10 as a float16 is inf, as NumPy converts it
            return np.dtype(self.dtype).type(self.value)

    def __str__(self) -> str:
        if self.dtype is not None:
            return f"{primitives.dtype_source(self.dtype)}({self.value!r})"
        # Parenthesized when negative: ``-2.0 ** x`` would mean ``-(2.0 ** x)``.
        return repr(self.value) if self.value >= 0 else f"({self.value!r})"


Arg = Ref | Const


@dataclass(frozen=True)
class Equation:
    """One operation: primitive ``op`` applied to ``args`` with static ``attrs``; ``type`` is
    inferred by the primitive's result rule."""

    op: str
    args: tuple[Arg, ...]
    attrs: Mapping[str, Any]
    type: TensorType

    def __hash__(self) -> int:
        return hash((self.op, self.args, repr(sorted(self.attrs.items())), self.type))


@dataclass(frozen=True)
class RawEquation:
    """An unchecked equation (for invalid programs): evaluated as written, never type-checked."""

    op: str
    args: tuple[Arg, ...]
    attrs: Mapping[str, Any]


__all__ = [
    "BOOL",
    "DTYPES",
    "FLOAT_DTYPES",
    "INT32_MAX",
    "LOW_PRECISION_DTYPES",
    "VALUE_DTYPES",
    "Arg",
    "Const",
    "Equation",
    "Input",
    "RawEquation",
    "Ref",
    "TensorType",
    "dtype_name",
    "finfo",
    "is_float",
    "is_low_precision",
]
