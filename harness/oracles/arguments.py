"""The arguments oracle: a compiled specialization refuses arguments it was not made for.

``compiler.jit(f).compile(*arrays)`` returns one specialization (static shapes and dtypes),
which users call directly, as they call ``jax.jit(f).lower(...).compile()``. A kernel run on an
array of another shape reads and writes by the shapes it was compiled for: the specialization
must refuse it (``TypeError``) before any native code runs. Every case's own calls pass the
arrays the specialization was made for, so that check was never exercised: a mutant that made
it accept any argument whose shape *or* dtype matched (``or`` -> ``and``) was judged likely
equivalent on every sample.

For a quarter of the valid cases, on each of its backends (every backend's specialization is
a ``compiler.api.Compiled``, IREE's and XLA's included; on all of them, a finding keeps its
backend however the case is minimized), the worker calls the case's specialization three more
times, each with one misfit: one of the arrays (drawn from the case's data) with one more row,
or in a wider dtype (itemsize at least the original's, so that a kernel that ran on it anyway
stays within its buffer), and one array more than it takes. Each call must raise
``TypeError``; anything else (a result, another error, a crash of the worker) is a finding,
``unchecked-arguments``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..case import Case
from ..run.task import Task
from .base import Finding, Observation, Oracle, group, overwrites, register

SHARE = 0.25
KIND = "unchecked-arguments"


def _wider(dtype: np.dtype) -> np.dtype:
    """Another dtype whose items are at least as wide (float64 for all but float64 itself)."""
    return np.dtype(np.int64) if dtype == np.float64 else np.dtype(np.float64)


def misfits(inputs: list[np.ndarray], which: int) -> list[tuple[str, list[np.ndarray]]]:
    """(what is wrong, the arrays to pass) for each misfit call: input ``which`` (modulo their
    number) with one more row, the same input in a wider dtype, and one array too many."""
    calls: list[tuple[str, list[np.ndarray]]] = []
    if inputs:
        k = which % len(inputs)
        array = np.asarray(inputs[k])
        shape = (array.shape[0] + 1, *array.shape[1:]) if array.ndim else (2,)
        for what, replacement in (
            (f"input {k} with shape {shape}", np.zeros(shape, array.dtype)),
            (f"input {k} as {_wider(array.dtype)}", np.zeros(array.shape, _wider(array.dtype))),
        ):
            calls.append((what, [*inputs[:k], replacement, *inputs[k + 1 :]]))
    extra = np.zeros((), np.float32) if not inputs else np.asarray(inputs[0]).copy()
    calls.append((f"{len(inputs) + 1} arrays for {len(inputs)}", [*inputs, extra]))
    return calls


def check(compiled: Any, inputs: list[np.ndarray], which: int) -> str:
    """What ``compiled`` did with a misfit call it did not refuse with ``TypeError``; the
    empty string if it refused them all."""
    for what, arrays in misfits(inputs, which):
        try:
            out = compiled(*arrays)
        except TypeError:
            continue
        except Exception as error:  # noqa: BLE001 - another error is the finding
            return f"called with {what}, it raised {type(error).__name__}: {str(error)[:200]}"
        shape = getattr(out, "shape", None)
        returned = f"an array of shape {shape}" if shape is not None else type(out).__name__
        return f"called with {what}, it ran and returned {returned}"
    return ""


class Arguments(Oracle):
    name = "arguments"

    def fits(self, case: Case) -> bool:
        return case.invalid is None and case.sequence is None and bool(case.backends)

    def wants(self, case: Case) -> bool:
        return self.fits(case) and case.toggle(self.name, SHARE)

    def configure(self, case: Case, task: Task) -> None:
        task.misfit = True

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        flagged = [(KIND, r, r.misfit) for r in obs.results if r.ok and r.misfit]
        flagged += overwrites(obs.results, "misfit")
        return group(obs.case, self.name, flagged, obs.case.program.output_type.dtype)


def which_input(case: Case) -> int:
    """The input the misfit calls change, drawn from the case's data (the same every run)."""
    return case.draw("arguments:input")


register(Arguments())

__all__ = ["KIND", "SHARE", "Arguments", "check", "misfits", "which_input"]
