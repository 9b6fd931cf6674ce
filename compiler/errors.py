"""The compiler's exceptions, in one place.

Invalid programs raise NumPy's own classes (ValueError, TypeError, ``numpy.exceptions.AxisError``,
``InvalidIndex``) before any MLIR is built; known limitations raise ``UnsupportedFeature``; a
failure inside the pipeline on a module we built raises ``CompilerError`` (always a compiler bug).
"""

from __future__ import annotations


class UnsupportedFeature(NotImplementedError):
    """A program NumPy accepts but this compiler does not support yet (a known limitation)."""

    def __init__(self, feature: str) -> None:
        super().__init__(f"not supported by the compiler yet: {feature}")
        self.feature = feature

    def __reduce__(self) -> tuple:  # pickles (across worker processes) as it was raised
        return (type(self), (self.feature,))


class InvalidIndex(IndexError, ValueError):
    """NumPy raises IndexError for a bad index; we are also a ValueError, like NumPy's AxisError."""


class CompilerError(RuntimeError):
    """MLIR rejected or failed on a module we built: always a compiler bug, never user error.

    ``stage`` names the failing stage (``parse/verify`` for the module as built, a pipeline stage
    such as ``bufferized``, ``blas``, or ``llvm`` for the JIT), ``pipeline`` its pass string and
    ``module_text`` the input of that stage, so the failure reproduces outside Python.
    """

    def __init__(self, stage: str, pipeline: str, message: str, module_text: str) -> None:
        super().__init__(f"{stage} failed: {message}")
        self.stage = stage
        self.pipeline = pipeline
        self.message = message
        self.module_text = module_text

    def __reduce__(self) -> tuple:  # pickles (across worker processes) as it was raised
        return (type(self), (self.stage, self.pipeline, self.message, self.module_text))


class DefinitionError(RuntimeError):
    """A composite's shared definition (``compiler/ops.py``) failed on minimal stand-ins of
    operands its shape contract accepts: the definition is broken, not the program (a compiler
    bug). ``shape`` is the contract's result shape and ``dtype`` the operands' common dtype,
    which a model of NumPy's types falls back to so that such programs are still made."""

    def __init__(self, message: str, shape: tuple[int, ...], dtype: str) -> None:
        super().__init__(message)
        self.shape = tuple(shape)
        self.dtype = dtype

    def __reduce__(self) -> tuple:  # pickles (across worker processes) as it was raised
        return (type(self), (str(self), self.shape, self.dtype))


__all__ = ["UnsupportedFeature", "InvalidIndex", "CompilerError", "DefinitionError"]
