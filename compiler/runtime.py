"""The runtime of the MLIR CPU backends: a lowered module JIT-compiled by MLIR's ExecutionEngine
and called through the C interface with memref descriptors.

Compilation (pass pipelines, the BLAS stage) is the driver's job; this module only turns LLVM
dialect into native code and calls it. Every buffer is C-contiguous with the specialized shape,
so the descriptors' sizes and strides are prepared once; a call writes two pointers per buffer.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from typing import Any

import numpy as np

from .dtypes import INT32
from .lower.emit import KERNEL, KernelSignature


@functools.cache
def _descriptor_class(rank: int) -> type[ctypes.Structure]:
    fields = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_longlong),
    ]
    if rank:
        fields += [("sizes", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def _descriptor(shape: tuple[int, ...]) -> ctypes.Structure:
    """A memref descriptor for a C-contiguous buffer of ``shape`` (pointers set per call)."""
    desc = _descriptor_class(len(shape))()
    desc.offset = 0
    if shape:
        desc.sizes[:] = shape
        desc.strides[:] = [int(np.prod(shape[i + 1 :])) for i in range(len(shape))]
    return desc


@functools.cache
def runtime_libraries() -> tuple[str, ...]:
    """Shared libraries the ExecutionEngine loads: MLIR's C runner utils and OpenBLAS."""
    import mlir

    from .lower.blas import library_path

    libs = []
    for root in mlir.__path__:
        path = os.path.join(root, "lib", "libmlir_c_runner_utils.so")
        if os.path.exists(path):
            libs.append(path)
            break
    libs.append(library_path())
    return tuple(libs)


def make_engine(module: Any, opt_level: int) -> Any:
    """An ExecutionEngine for ``module`` with every runtime library loaded, whatever the module
    declares: LLVM's code generation adds calls of its own (bfloat16 conversions become
    ``__truncsfbf2``), which only the loaded libraries resolve. Loading them only for modules
    that declared a missing symbol saved ~10 ms a JIT and crashed every bfloat16 program."""
    from mlir.execution_engine import ExecutionEngine

    return ExecutionEngine(module, opt_level=opt_level, shared_libs=list(runtime_libraries()))


class Kernel:
    """Native code for one lowered module: ``kernel(arrays) -> (outputs, errors)``."""

    def __init__(
        self, module: Any, signature: KernelSignature, opt_level: int, engine: Any = None,
        name: str = KERNEL,
    ) -> None:  # fmt: skip
        """JIT-compile ``module``, or (``engine``) take the function ``name`` from an engine
        already made for a module that several kernels were linked into (``driver.jit_together``);
        each kernel keeps the engine alive."""
        self.signature = signature
        self.engine = engine if engine is not None else make_engine(module, opt_level)
        # A null address (a symbol the JIT could not resolve) is kept: the call then crashes
        # the process, whose stderr ("JIT session error: Symbols not found: ...") is the evidence
        # the harness's triage names the missing symbols from.
        self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
            self.engine.raw_lookup("_mlir_ciface_" + name)
        )
        self._lock = threading.Lock()
        shapes = [n.shape for n in signature.inputs + signature.outputs]
        shapes += [()] * signature.error_outputs
        self._descriptors = [_descriptor(s) for s in shapes]
        self._pointers = [ctypes.pointer(d) for d in self._descriptors]
        self._packed = (ctypes.c_void_p * len(self._pointers))(
            *[ctypes.cast(ctypes.pointer(p), ctypes.c_void_p) for p in self._pointers]
        )

    def __call__(self, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Run on C-contiguous ``arrays`` of the specialized shapes and dtypes; returns freshly
        allocated outputs and the error flags."""
        outputs = [np.empty(n.shape, n.dtype) for n in self.signature.outputs]
        errors = [np.zeros((), INT32) for _ in range(self.signature.error_outputs)]
        buffers = arrays + outputs + errors
        with self._lock:
            for descriptor, buffer in zip(self._descriptors, buffers, strict=True):
                descriptor.allocated = descriptor.aligned = buffer.ctypes.data
            self._entry(self._packed)
        return outputs, errors


class MlirRuntimeKernel:
    """The same lowered module called through MLIR's own Python runtime helpers
    (``mlir.runtime.get_ranked_memref_descriptor`` and ``ExecutionEngine.invoke``) instead of our
    descriptors: a second way into the native code, so a wrong answer that appears only through
    ``Kernel`` is a bug of this runtime, not of the compiled code."""

    def __init__(self, module: Any, signature: KernelSignature, opt_level: int) -> None:
        self.signature = signature
        self.engine = make_engine(module, opt_level)

    def __call__(self, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        from mlir.runtime import get_ranked_memref_descriptor

        outputs = [np.empty(n.shape, n.dtype) for n in self.signature.outputs]
        errors = [np.zeros((), INT32) for _ in range(self.signature.error_outputs)]
        descriptors = [get_ranked_memref_descriptor(a) for a in arrays + outputs + errors]
        self.engine.invoke(KERNEL, *[ctypes.pointer(ctypes.pointer(d)) for d in descriptors])
        return outputs, errors


__all__ = ["Kernel", "MlirRuntimeKernel", "make_engine", "runtime_libraries"]
