"""The dtypes the compiler supports and how each is represented in MLIR, in one table.

A boolean is ``i1`` inside generic bodies but *stored* as ``i8`` (in tensors, buffers and at the
ABI, as NumPy stores it): MLIR 22's memref-to-LLVM lowering asserts on ``i1`` buffers, which an
unfused pipeline materializes (found by the harness).

Reduced precision: ``float16`` (NumPy's own) and ``bfloat16`` (``ml_dtypes``, a NumPy extension
dtype whose ``kind`` is ``"V"``, so "is it a float?" is asked here, never with ``dtype.kind``).
Both are *storage* formats with NumPy's semantics: NumPy computes each float16 ufunc in float32
and rounds the result to float16, and ml_dtypes does the same for bfloat16, so the compiler
computes every arithmetic op of these dtypes in ``f32`` (``COMPUTE``) and rounds once per op.
Importing this module imports ``ml_dtypes``, after which ``np.dtype("bfloat16")`` works.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

FLOAT16 = np.dtype(np.float16)
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
FLOAT32 = np.dtype(np.float32)
FLOAT64 = np.dtype(np.float64)
INT32 = np.dtype(np.int32)
BOOL = np.dtype(np.bool_)
SUPPORTED_DTYPES = (FLOAT32, FLOAT64, INT32, BOOL, FLOAT16, BFLOAT16)
FLOATS = (FLOAT16, BFLOAT16, FLOAT32, FLOAT64)
#: Stored in 16 bits, computed in float32 (one rounding per op, as NumPy and ml_dtypes do).
LOW_PRECISION = (FLOAT16, BFLOAT16)
COMPUTE = FLOAT32

# dtype -> (scalar type inside a body, element type in tensors and buffers)
_MLIR = {
    FLOAT16: ("f16", "f16"),
    BFLOAT16: ("bf16", "bf16"),
    FLOAT32: ("f32", "f32"),
    FLOAT64: ("f64", "f64"),
    INT32: ("i32", "i32"),
    BOOL: ("i1", "i8"),
}


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


def is_float(dtype: Any) -> bool:
    """A floating-point dtype, bfloat16 included (its ``kind`` is ``"V"``, not ``"f"``)."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype == BFLOAT16


def is_low_precision(dtype: Any) -> bool:
    """float16 or bfloat16: stored in 16 bits, computed in float32."""
    return np.dtype(dtype) in LOW_PRECISION


def finfo(dtype: Any) -> Any:
    """``np.finfo`` for every float dtype (``ml_dtypes.finfo`` knows bfloat16 too)."""
    return ml_dtypes.finfo(np.dtype(dtype))


def source(dtype: Any) -> str:
    """Python source naming ``dtype`` in a reproducer: ``np.float16``, ``ml_dtypes.bfloat16``
    (NumPy has no ``np.bfloat16``)."""
    dtype = np.dtype(dtype)
    return "ml_dtypes.bfloat16" if dtype == BFLOAT16 else f"np.{dtype.name}"


def element(dtype: np.dtype) -> str:
    """The MLIR scalar type of ``dtype`` inside a body (``i1`` for bool)."""
    return _MLIR[np.dtype(dtype)][0]


def storage(dtype: np.dtype) -> str:
    """The MLIR element type of ``dtype`` in tensors and buffers (``i8`` for bool)."""
    return _MLIR[np.dtype(dtype)][1]


__all__ = [
    "BFLOAT16",
    "BOOL",
    "COMPUTE",
    "FLOAT16",
    "FLOAT32",
    "FLOAT64",
    "FLOATS",
    "INT32",
    "LOW_PRECISION",
    "SUPPORTED_DTYPES",
    "check_dtype",
    "element",
    "finfo",
    "is_float",
    "is_low_precision",
    "source",
    "storage",
]
