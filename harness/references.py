"""The references a backend is judged against, all evaluating the *same* program definition.

- ``numpy``: eager NumPy in the program's own dtypes (the semantics we promise);
- ``truth``: the program with every float32 widened to float64, evaluated by NumPy (the yardstick
  of the error model; integer parts stay exact);
- ``jax``: ``jax.jit`` of the program over ``jax.numpy`` with x64 enabled (an independent
  implementation in the program's dtypes; NumPy and JAX-x64 agree on NEP 50).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from strategies.program import Program


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


def widen(program: Program) -> Program:
    """The same program with float32 replaced by float64 everywhere (inputs, casts, constants)."""

    def walk(value: Any) -> Any:
        if value == "float32" and isinstance(value, str):
            return "float64"
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return Program.from_dict(walk(program.to_dict()))


def numpy_reference(program: Program, inputs: list[np.ndarray]) -> Reference:
    return _evaluate("numpy", program.as_function(np), inputs)


def truth_reference(program: Program, inputs: list[np.ndarray]) -> Reference:
    try:
        wide = widen(program)
    except Exception as error:  # noqa: BLE001
        return Reference("truth", None, type(error).__name__, str(error), error)
    widened = [a.astype(np.float64) if a.dtype == np.float32 else a for a in inputs]
    return _evaluate("truth", wide.as_function(np), widened)


_JAX_READY = False


def _jax() -> Any:
    global _JAX_READY
    import jax

    if not _JAX_READY:
        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        _JAX_READY = True
    return jax


def jax_reference(program: Program, inputs: list[np.ndarray]) -> Reference:
    jax = _jax()
    import jax.numpy as jnp

    fn = jax.jit(program.as_function(jnp))
    ref = _evaluate("jax", lambda *a: np.asarray(fn(*a)), inputs)
    return ref


def references(program: Program, inputs: list[np.ndarray], use_jax: bool = True) -> dict[str, Reference]:
    refs = {
        "numpy": numpy_reference(program, inputs),
        "truth": truth_reference(program, inputs),
    }
    if use_jax:
        refs["jax"] = jax_reference(program, inputs)
    return refs
