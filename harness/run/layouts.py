"""Input layouts: the same values handed to a compiled function in another memory layout.

A user's arrays are not always fresh C-contiguous buffers: a transposed weight is
Fortran-ordered, a slice is strided, a flipped view has negative strides, a field of a record
array starts at an odd address, a broadcast or memory-mapped array is read-only, and a 0-d value
is often a NumPy scalar. The compiler
must take each as the values it holds (``compiler/api.py`` copies what its ABI cannot pass), so
a case may name a layout per input (``Case.layouts``, ``extra["layouts"]``); the worker arranges
the inputs so right before each call, the references keep the plain arrays (NumPy's values do
not depend on the layout), and the reproducer prints the same arrangement.

Every layout keeps the values exactly. Each is defined once, as the Python lines that arrange a
variable (``source``); ``arrange`` runs those lines, so the reproducer prints what ran.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

#: The default: the array as it is.
DEFAULT = "c"


def _sentinel(dtype: np.dtype) -> object:
    """What a strided layout leaves between the elements: NaN for floats, the dtype's maximum
    otherwise, so reading them shows."""
    if dtype.kind in "fV":  # float16/32/64 and ml_dtypes' bfloat16
        return np.nan
    if dtype.kind == "b":
        return True
    return np.iinfo(dtype).max


#: name -> the smallest rank it changes anything for
LAYOUTS: dict[str, int] = {
    "fortran": 2,
    "reversed": 1,
    "strided": 1,
    "offset": 0,
    "readonly": 0,
    "scalar": 0,
}
#: name -> the largest rank it applies to, where it has one: a 0-d array's value as a NumPy
#: scalar (``np.float32(2.5)``), which NumPy takes as it takes the array (a frontend that took
#: NumPy scalars for static arguments, a held-out plant, raised on every such call).
_MAX_RANK = {"scalar": 0}

#: name -> the Python lines that arrange variable ``{v}``: what runs and what is printed.
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
    "scalar": "{v} = {v}[()]  # a NumPy scalar, not a 0-d array",
}


def applicable(array: np.ndarray) -> list[str]:
    """The layouts that change anything for ``array`` (none for an empty one)."""
    if array.size == 0:
        return []
    return [
        name
        for name, rank in LAYOUTS.items()
        if rank <= array.ndim <= _MAX_RANK.get(name, array.ndim)
    ]


def arrange(array: np.ndarray, name: str) -> np.ndarray:
    """``array``'s values in layout ``name`` (``DEFAULT``, or one that does not apply to it:
    the array itself), by running the lines ``source`` prints."""
    if name != DEFAULT and name not in LAYOUTS:
        raise ValueError(f"unknown input layout {name!r} (one of {[DEFAULT, *LAYOUTS]})")
    lines = source("x", array, name)
    if not lines:
        return array
    scope = {"np": np, "x": array}
    exec(_compiled("\n".join(lines)), scope)  # noqa: S102 - our own text
    return scope["x"]


def arranged(arrays: list[np.ndarray], names: tuple[str, ...]) -> list[np.ndarray]:
    """Each array in its layout (arrays beyond ``names`` as they are)."""
    return [arrange(a, names[i]) if i < len(names) else a for i, a in enumerate(arrays)]


@functools.lru_cache(maxsize=256)
def _compiled(text: str) -> Any:
    return compile(text, "<layout>", "exec")


def source(var: str, array: np.ndarray, name: str) -> list[str]:
    """Python lines doing ``arrange`` to variable ``var`` (none for the default)."""
    if name == DEFAULT or name not in applicable(array):
        return []
    sentinel = _sentinel(array.dtype)
    text = _SOURCE[name].format(v=var, sentinel="np.nan" if sentinel is np.nan else repr(sentinel))
    return text.splitlines()


__all__ = ["DEFAULT", "LAYOUTS", "applicable", "arrange", "arranged", "source"]
