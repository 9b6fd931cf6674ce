"""Input layouts: the same values handed to a compiled function in another memory layout.

A user's arrays are not always fresh C-contiguous buffers: a transposed weight is
Fortran-ordered, a slice is strided, a flipped view has negative strides, a field of a record
array starts at an odd address, a broadcast or memory-mapped array is read-only. The compiler
must take each as the values it holds (``compiler/api.py`` copies what its ABI cannot pass), so
a case may name a layout per input (``Case.layouts``, ``extra["layouts"]``); the worker arranges
the inputs so right before each call, the references keep the plain arrays (NumPy's values do
not depend on the layout), and the reproducer prints the same arrangement.

Every layout keeps the values exactly; ``arrange(a, name)`` and ``source(var, a, name)`` (the
Python line that does the same to variable ``var``) are the only definitions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: The default: the array as it is.
DEFAULT = "c"


def _fortran(a: np.ndarray) -> np.ndarray:
    return np.asfortranarray(a)


def _reversed(a: np.ndarray) -> np.ndarray:
    return np.flip(np.flip(a).copy())  # negative strides on every axis, same values


def _strided(a: np.ndarray) -> np.ndarray:
    """Every other element of a buffer twice as long on the last axis; the elements between hold
    a sentinel (NaN for floats, the dtype's maximum otherwise), so reading them shows."""
    buffer = np.full(a.shape[:-1] + (2 * a.shape[-1],), _sentinel(a.dtype), dtype=a.dtype)
    buffer[..., ::2] = a
    return buffer[..., ::2]


def _offset(a: np.ndarray) -> np.ndarray:
    """C-contiguous, starting one element into its allocation: not aligned beyond its dtype."""
    buffer = np.empty(a.size + 1, dtype=a.dtype)
    buffer[1:] = a.ravel()
    return buffer[1:].reshape(a.shape)


def _readonly(a: np.ndarray) -> np.ndarray:
    view = a.copy()
    view.setflags(write=False)
    return view


def _sentinel(dtype: np.dtype) -> object:
    if dtype.kind in "fV":  # float16/32/64 and ml_dtypes' bfloat16
        return np.nan
    if dtype.kind == "b":
        return True
    return np.iinfo(dtype).max


#: name -> (arrange, the smallest rank it changes anything for)
LAYOUTS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], int]] = {
    "fortran": (_fortran, 2),
    "reversed": (_reversed, 1),
    "strided": (_strided, 1),
    "offset": (_offset, 0),
    "readonly": (_readonly, 0),
}

_SOURCE = {
    "fortran": "{v} = np.asfortranarray({v})",
    "reversed": "{v} = np.flip(np.flip({v}).copy())  # negative strides",
    "strided": (
        "_buffer = np.full({v}.shape[:-1] + (2 * {v}.shape[-1],), {sentinel}, dtype={v}.dtype)\n"
        "_buffer[..., ::2] = {v}\n"
        "{v} = _buffer[..., ::2]  # every other element of a larger buffer"
    ),
    "offset": (
        "_buffer = np.empty({v}.size + 1, dtype={v}.dtype)\n"
        "_buffer[1:] = {v}.ravel()\n"
        "{v} = _buffer[1:].reshape({v}.shape)  # one element into its allocation"
    ),
    "readonly": "{v} = {v}.copy()\n{v}.setflags(write=False)",
}


def applicable(array: np.ndarray) -> list[str]:
    """The layouts that change anything for ``array`` (none for an empty one)."""
    if array.size == 0:
        return []
    return [name for name, (_, rank) in LAYOUTS.items() if array.ndim >= rank]


def arrange(array: np.ndarray, name: str) -> np.ndarray:
    """``array``'s values in layout ``name`` (``DEFAULT``, or one that does not apply to it:
    the array itself)."""
    if name == DEFAULT or name not in applicable(array):
        if name != DEFAULT and name not in LAYOUTS:
            raise ValueError(f"unknown input layout {name!r} (one of {[DEFAULT, *LAYOUTS]})")
        return array
    return LAYOUTS[name][0](array)


def arranged(arrays: list[np.ndarray], names: tuple[str, ...]) -> list[np.ndarray]:
    """Each array in its layout (arrays beyond ``names`` as they are)."""
    return [arrange(a, names[i]) if i < len(names) else a for i, a in enumerate(arrays)]


def source(var: str, array: np.ndarray, name: str) -> list[str]:
    """Python lines doing ``arrange`` to variable ``var`` (none for the default)."""
    if name == DEFAULT or name not in applicable(array):
        return []
    sentinel = _sentinel(array.dtype)
    text = _SOURCE[name].format(v=var, sentinel="np.nan" if sentinel is np.nan else repr(sentinel))
    return text.splitlines()


__all__ = ["DEFAULT", "LAYOUTS", "applicable", "arrange", "arranged", "source"]
