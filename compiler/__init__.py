"""A small tensor compiler: NumPy-style Python traced to MLIR (linalg/tensor/arith/math),
fused, bufferized, lowered to LLVM and run natively through MLIR's ExecutionEngine.

Layers, each importing only those below it: ``primitives`` (the table of operations and NumPy's
rules) -> ``frontend`` (tracing) -> ``lower`` (MLIR emission, the BLAS stage) -> ``pipelines``
(named stages, targets) -> ``driver`` (compile: every stage's IR and its reproduce command;
``persist``, its optional on-disk cache) ->
``runtime`` (native kernels) -> ``backends`` (one protocol, one registry) -> ``api`` (``@jit``).
Attributes load lazily, so ``import compiler.primitives`` does not load the rest.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "jit": ("api", "jit"),
    "JitFunction": ("api", "JitFunction"),
    "Compiled": ("api", "Compiled"),
    "clear_cache": ("api", "clear_cache"),
    "cache_size": ("api", "cache_size"),
    "set_cache_dir": ("persist", "set_cache_dir"),
    "CompilerError": ("errors", "CompilerError"),
    "UnsupportedFeature": ("errors", "UnsupportedFeature"),
    "InvalidIndex": ("errors", "InvalidIndex"),
    "Tensor": ("frontend.tensor", "Tensor"),
    "xp": ("frontend.tensor", "xp"),
    "Artifacts": ("driver", "Artifacts"),
}
_SUBMODULES = (
    "api",
    "backends",
    "driver",
    "dtypes",
    "errors",
    "frontend",
    "lower",
    "model",
    "ops",
    "persist",
    "pipelines",
    "primitives",
    "runtime",
    "tools",
)


def targets() -> list[str]:
    """Every target (backend) name a user can pass as ``target=`` (aliases included)."""
    from . import backends

    return backends.names()


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, attribute = _EXPORTS[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attribute)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'compiler' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*_EXPORTS, *_SUBMODULES, "targets"])


__all__ = [*_EXPORTS, "targets", "ops"]
