"""The references a backend is judged against, all evaluating the *same* program definition.

- ``numpy``: eager NumPy in the program's own dtypes (the semantics we promise);
- ``truth``: the program evaluated by NumPy in extended precision (``np.longdouble``: every float
  input and float cast widened), rounded to float64 — the yardstick of the error model; integer
  parts stay exact;
- ``jax``: ``jax.jit`` of the program over ``jax.numpy`` with x64 enabled (an independent
  implementation in the program's dtypes; NumPy and JAX-x64 agree on NEP 50).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..case import Case


@dataclass
class Reference:
    """A reference's answer: an array, or the exception it raised."""

    name: str
    output: np.ndarray | None = None
    error_type: str = ""
    message: str = ""
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.output is not None


def _evaluate(name: str, fn: Any, inputs: list[Any]) -> Reference:
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = fn(*inputs)
        return Reference(name, np.asarray(out))
    except Exception as error:  # noqa: BLE001 - a reference's failure is data for the oracles
        return Reference(name, None, type(error).__name__, str(error)[:2000], error)


class _Extended:
    """NumPy in extended precision: float casts go to ``np.longdouble`` (the x87 80-bit format
    here, 64-bit mantissa), so the truth of a float64 program is more precise than float64."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def astype(x: Any, dtype: Any, **_: Any) -> Any:
        dtype = np.dtype(dtype)
        return np.asarray(x).astype(np.longdouble if dtype.kind == "f" else dtype)


EXTENDED = _Extended()


def numpy_reference(case: Case) -> Reference:
    return _evaluate("numpy", case.function(np), case.inputs)


def truth_reference(case: Case) -> Reference:
    """The program on extended-precision inputs, rounded to float64 at the end."""
    widened = [a.astype(np.longdouble) if a.dtype.kind == "f" else a for a in case.inputs]
    ref = _evaluate("truth", case.function(EXTENDED), widened)
    if ref.ok and ref.output.dtype.kind == "f":
        with np.errstate(over="ignore"):  # beyond float64's range is inf, as it should be
            ref.output = ref.output.astype(np.float64)
    return ref


_JAX_READY = False


def _jax() -> Any:
    global _JAX_READY
    import jax

    if not _JAX_READY:
        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        _JAX_READY = True
    return jax


def jax_reference(case: Case) -> Reference:
    jax = _jax()
    import jax.numpy as jnp

    fn = jax.jit(case.function(jnp))
    return _evaluate("jax", lambda *a: np.asarray(fn(*a)), case.inputs)


def references(case: Case, use_jax: bool = True) -> dict[str, Reference]:
    """NumPy, the extended-precision truth and (for valid programs) jax.jit."""
    refs = {"numpy": numpy_reference(case), "truth": truth_reference(case)}
    if use_jax and case.invalid is None:
        refs["jax"] = jax_reference(case)
    return refs
