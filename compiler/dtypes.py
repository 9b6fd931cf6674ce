"""The dtypes the compiler supports and how each is represented in MLIR, in one table.

A boolean is ``i1`` inside generic bodies but *stored* as ``i8`` (in tensors, buffers and at the
ABI, as NumPy stores it): MLIR 22's memref-to-LLVM lowering asserts on ``i1`` buffers, which an
unfused pipeline materializes (found by the harness).
"""

from __future__ import annotations

from typing import Any

import numpy as np

FLOAT32 = np.dtype(np.float32)
FLOAT64 = np.dtype(np.float64)
INT32 = np.dtype(np.int32)
BOOL = np.dtype(np.bool_)
SUPPORTED_DTYPES = (FLOAT32, FLOAT64, INT32, BOOL)
FLOATS = (FLOAT32, FLOAT64)

# dtype -> (scalar type inside a body, element type in tensors and buffers)
_MLIR = {
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


def is_float(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind == "f"


def element(dtype: np.dtype) -> str:
    """The MLIR scalar type of ``dtype`` inside a body (``i1`` for bool)."""
    return _MLIR[np.dtype(dtype)][0]


def storage(dtype: np.dtype) -> str:
    """The MLIR element type of ``dtype`` in tensors and buffers (``i8`` for bool)."""
    return _MLIR[np.dtype(dtype)][1]


__all__ = [
    "FLOAT32",
    "FLOAT64",
    "INT32",
    "BOOL",
    "SUPPORTED_DTYPES",
    "FLOATS",
    "check_dtype",
    "is_float",
    "element",
    "storage",
]
