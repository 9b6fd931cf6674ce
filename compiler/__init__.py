"""A small tensor compiler: NumPy-style Python traced to MLIR (linalg/tensor/arith/math),
fused, bufferized, lowered to LLVM and run natively through MLIR's ExecutionEngine."""

from . import ops
from .expr import InvalidIndex, Tensor, UnsupportedFeature, xp
from .jit import Compiled, CompilerError, JitFunction, cache_size, clear_cache, jit
from .pipelines import targets

__all__ = [
    "jit",
    "targets",
    "ops",
    "Tensor",
    "Compiled",
    "JitFunction",
    "CompilerError",
    "UnsupportedFeature",
    "InvalidIndex",
    "clear_cache",
    "cache_size",
    "xp",
]
