"""Backends behind one protocol, in one registry.

A backend has a ``name``, says whether it can run here (``unavailable()`` gives the reason it
cannot, or None), ``compile``s a traced graph into :class:`~compiler.driver.Artifacts` (every
stage's text and the commands that reproduce it) and ``run``s artifacts on NumPy arrays. The
harness and ``@jit`` know backends only through this protocol, so a new backend is one class and
one ``register`` call. The built-in CPU targets are instances of :class:`MlirCpuBackend`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from . import pipelines
from .driver import Artifacts, compile_graph
from .frontend.graph import Graph


@runtime_checkable
class Backend(Protocol):
    """What the harness and ``@jit`` need of a backend."""

    name: str
    description: str

    def unavailable(self) -> str | None:
        """Why this backend cannot run here (a missing package, no device), or None."""

    def compile(self, graph: Graph) -> Artifacts:
        """Every stage of this backend on ``graph``; raises CompilerError on a failed stage."""

    def run(self, artifacts: Artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The outputs for C-contiguous ``arrays`` of the graph's input types."""


class MlirCpuBackend:
    """Our own pipeline (``compiler.pipelines``) JIT-compiled by MLIR's ExecutionEngine."""

    def __init__(self, target: pipelines.Target) -> None:
        self.target = target
        self.name = target.name
        self.description = target.description

    def __repr__(self) -> str:
        return f"<backend {self.name}>"

    def unavailable(self) -> str | None:
        try:
            import mlir.execution_engine  # noqa: F401
        except ImportError as error:  # pragma: no cover - a dependency of the project
            return f"the MLIR Python bindings are not installed ({error})"
        return None

    def compile(self, graph: Graph) -> Artifacts:
        return compile_graph(graph, self.target)

    def run(self, artifacts: Artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
        outputs, errors = artifacts.native(arrays)
        if any(int(e) for e in errors):
            raise ValueError("gather ids out of range for the table")
        return outputs


BACKENDS: dict[str, Backend] = {}
#: Backends whose names take an ``@O<n>`` suffix: factory(level) -> backend.
_LEVELED: dict[str, Callable[[int], Backend]] = {}


def register(backend: Backend, leveled: Callable[[int], Backend] | None = None) -> Backend:
    """Add ``backend``; ``leveled(n)`` builds its ``NAME@O<n>`` variants."""
    if backend.name in BACKENDS:
        raise ValueError(f"backend {backend.name!r} is already registered")
    BACKENDS[backend.name] = backend
    if leveled is not None:
        _LEVELED[backend.name] = leveled
    return backend


def unregister(name: str) -> None:
    """Remove a backend (for tests that register a toy one)."""
    BACKENDS.pop(name, None)
    _LEVELED.pop(name, None)


def names(include_aliases: bool = True) -> list[str]:
    """Every backend name a user can pass as ``target=``."""
    return list(BACKENDS) + (list(pipelines.ALIASES) if include_aliases else [])


def get(name: str) -> Backend:
    """The backend for ``name`` (aliases and ``NAME@O<n>`` included); a ValueError listing the
    known ones otherwise."""
    base, level = pipelines.split_level(name)
    key = pipelines.ALIASES.get(base, base)
    if key not in BACKENDS:
        raise ValueError(f"unknown target {name!r}; known targets: {', '.join(names())}")
    if level is None:
        return BACKENDS[key]
    if key not in _LEVELED:
        raise ValueError(f"target {key!r} has no optimization levels (got {name!r})")
    return _cached_level(key, level)


_LEVEL_CACHE: dict[tuple[str, int], Backend] = {}


def _cached_level(key: str, level: int) -> Backend:
    if (key, level) not in _LEVEL_CACHE:
        _LEVEL_CACHE[(key, level)] = _LEVELED[key](level)
    return _LEVEL_CACHE[(key, level)]


def describe() -> list[dict[str, Any]]:
    """Every registered backend: name, description, and why it is unavailable (or None)."""
    return [
        {"name": b.name, "description": b.description, "unavailable": b.unavailable()}
        for b in BACKENDS.values()
    ]


for _target in pipelines.TARGETS.values():
    register(
        MlirCpuBackend(_target),
        leveled=lambda level, _t=_target: MlirCpuBackend(_t.with_opt_level(level)),
    )

__all__ = ["BACKENDS", "Backend", "MlirCpuBackend", "describe", "get", "names", "register"]
