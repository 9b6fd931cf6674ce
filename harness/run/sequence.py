"""Calling one jitted function in sequence, keeping what each call saw and returned.

The worker runs a case's jit sequence with a :class:`Recorder`, and a standalone reproducer
replays the same calls with one, so both record the same things the same way: each call's
arguments and the values its arrays had, the captured array's values at the call, the output
and its values right after the call, the error it raised, and whether it traced a new
specialization. ``alone`` runs one call again on a fresh jit of the same function (every
compiler cache bypassed): what that call must give whatever came before it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from strategies.model.sequence import captured_values, tree_leaves


@dataclass
class Record:
    """One call: what it was given and what it did."""

    args: tuple[Any, ...]
    statics: dict[str, Any]
    inputs: list[np.ndarray]  # the arrays' values before the call (copies)
    captured: np.ndarray | None  # the captured array's values at the call (a copy)
    output: Any = None  # what the call returned (the object itself)
    snapshot: np.ndarray | None = None  # its values right after the call
    error: BaseException | None = None
    traced: bool = False  # the call traced a new specialization
    seconds: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


class Recorder:
    """``record(*args, **statics)`` calls ``compiler.jit(fn)`` (one function, one cache) on
    ``target`` and records the call; ``captured`` is the array ``fn`` reads from its enclosing
    scope (the caller changes it in place between calls), ``view`` the name of the view of it
    ``fn`` captures too, if any (``strategies.model.sequence.CAPTURED_VIEWS``)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        captured: np.ndarray | None = None,
        target: str | None = None,
        view: str = "",
    ) -> None:
        import compiler

        self.fn = fn
        self.captured = captured
        self.target = target
        self.view = view
        self.jitted = compiler.jit(fn)
        self.records: list[Record] = []

    @property
    def last(self) -> Any:
        """The previous call's output (None if it failed or there is none)."""
        return self.records[-1].output if self.records else None

    def __call__(self, *args: Any, **statics: Any) -> Any:
        record = Record(
            args,
            dict(statics),
            [np.array(leaf, copy=True) for leaf in tree_leaves(args)],
            None if self.captured is None else np.array(self.captured, copy=True),
        )
        before = self.jitted.traces
        start = time.perf_counter()
        try:
            record.output = self.jitted(*args, target=self.target, **statics)
            record.snapshot = np.array(record.output, copy=True)
        except Exception as error:  # noqa: BLE001 - a failing call is recorded, then judged
            record.error = error
        record.seconds = time.perf_counter() - start
        record.traced = self.jitted.traces > before
        self.records.append(record)
        return record.output

    def alone(self, index: int) -> Record:
        """Call ``index`` again on a fresh jit of the same function, the captured array set to
        the values that call saw (then restored), with every compiler cache bypassed."""
        import compiler

        record = self.records[index]
        saved = None
        if self.captured is not None and record.captured is not None:
            saved = np.array(self.captured, copy=True)
            self.captured[...] = record.captured
        fresh = compiler.jit(self.fn)
        again = Record(record.args, record.statics, record.inputs, record.captured)
        start = time.perf_counter()
        try:
            with _uncached():
                again.output = fresh(*record.args, target=self.target, **record.statics)
            again.snapshot = np.array(again.output, copy=True)
        except Exception as error:  # noqa: BLE001 - recorded, then judged
            again.error = error
        finally:
            fresh.clear()
            if saved is not None:
                self.captured[...] = saved
        again.seconds = time.perf_counter() - start
        again.traced = True
        return again

    def captured_inputs(self, index: int) -> list[np.ndarray]:
        """The captured program inputs call ``index`` saw: the array's values, and its view."""
        captured = self.records[index].captured
        return [] if captured is None else captured_values(self.view, captured)

    def overwritten(self, index: int) -> str:
        """What changed that must not have: an array call ``index`` was given (inputs are never
        written) or its output (a later call must not write into it); "" if nothing."""
        record = self.records[index]
        for j, (leaf, before) in enumerate(
            zip(tree_leaves(record.args), record.inputs, strict=False)
        ):
            if not _identical(np.asarray(leaf), before):
                return f"argument array {j} changed"
        if record.ok and record.snapshot is not None:
            if not _identical(np.asarray(record.output), record.snapshot):
                return "its output changed after it was returned"
        return ""

    def clear(self) -> None:
        self.jitted.clear()


def _identical(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _uncached() -> Any:
    """The compiler driver's "no cached stages or kernels" context, where it has one."""
    try:
        from compiler import driver
    except ImportError:  # pragma: no cover - the compiler always has a driver
        return contextlib.nullcontext()
    fresh = getattr(driver, "fresh", None)
    return fresh() if fresh is not None else contextlib.nullcontext()


__all__ = ["Record", "Recorder"]
