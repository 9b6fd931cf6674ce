"""The runtime of the MLIR CPU backends: a lowered module JIT-compiled by MLIR's ExecutionEngine
and called through the C interface with memref descriptors.

Compilation (pass pipelines, the BLAS stage) is the driver's job; this module only turns LLVM
dialect into native code and calls it. Every buffer is C-contiguous with the specialized shape,
so the descriptors' sizes and strides are prepared once; a call writes two pointers per buffer.

Memory the code reads before writing it (an accumulator that was never zero-filled, a copy a
pass dropped) holds whatever the allocator hands out: zeros from a fresh page in one run,
yesterday's values in the next, so such a bug comes and goes with the allocation pattern, and
two variants of one program (another pass order, another runtime) disagree for no reason of
their own. ``poisoned()`` (or ``COMPILER_POISON_MEMORY=1``, for a whole process) makes it the
same every time: the kernels' output buffers and every ``malloc``/``aligned_alloc`` of the
compiled code are filled with 0xFF bytes, NaN in every float type and -1 in every integer one.
The fuzzing harness runs every kernel so; production code does not pay the fill.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import threading
from collections.abc import Iterator
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


#: Set to anything but "" or "0": every kernel of the process runs on poisoned memory.
POISON_ENV = "COMPILER_POISON_MEMORY"
#: The byte poisoned memory holds: NaN in float16/bfloat16/float32/float64, -1 in integers.
POISON_BYTE = 0xFF
_LOCAL = threading.local()


def poisoning() -> bool:
    """Do kernels compiled now run on poisoned memory (``poisoned``, else ``POISON_ENV``)?"""
    on = getattr(_LOCAL, "poison", None)
    if on is None:
        return os.environ.get(POISON_ENV, "") not in ("", "0")
    return bool(on)


@contextlib.contextmanager
def poisoned(on: bool = True) -> Iterator[None]:
    """Kernels compiled in this thread inside the block poison their memory (or, ``on`` false,
    do not, whatever the environment says). A kernel keeps what it was compiled with."""
    saved = getattr(_LOCAL, "poison", None)
    _LOCAL.poison = on
    try:
        yield
    finally:
        _LOCAL.poison = saved


#: Allocation functions that fill what they return, in LLVM dialect; ``addresses`` stores the
#: native address of each wrapper (the engine's lookups give the packed-interface wrappers).
_POISONING_ALLOCATORS = f"""
module {{
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
  llvm.func @poison_malloc(%size: i64) -> !llvm.ptr {{
    %p = llvm.call @malloc(%size) : (i64) -> !llvm.ptr
    %byte = llvm.mlir.constant({POISON_BYTE - 256} : i8) : i8
    "llvm.intr.memset"(%p, %byte, %size) <{{isVolatile = false}}> : (!llvm.ptr, i8, i64) -> ()
    llvm.return %p : !llvm.ptr
  }}
  llvm.func @poison_aligned_alloc(%alignment: i64, %size: i64) -> !llvm.ptr {{
    %p = llvm.call @aligned_alloc(%alignment, %size) : (i64, i64) -> !llvm.ptr
    %byte = llvm.mlir.constant({POISON_BYTE - 256} : i8) : i8
    "llvm.intr.memset"(%p, %byte, %size) <{{isVolatile = false}}> : (!llvm.ptr, i8, i64) -> ()
    llvm.return %p : !llvm.ptr
  }}
  llvm.func @addresses(%out: !llvm.ptr) {{
    %m = llvm.mlir.addressof @poison_malloc : !llvm.ptr
    llvm.store %m, %out : !llvm.ptr, !llvm.ptr
    %a = llvm.mlir.addressof @poison_aligned_alloc : !llvm.ptr
    %second = llvm.getelementptr %out[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
    llvm.store %a, %second : !llvm.ptr, !llvm.ptr
    llvm.return
  }}
}}
"""
_ALLOCATORS: dict[str, Any] = {}
_ALLOCATORS_LOCK = threading.Lock()


def _poisoning_allocators() -> dict[str, int]:
    """``{"malloc": address, "aligned_alloc": address}`` of the poisoning wrappers, JIT-compiled
    once per process (their engine and context are kept for the process's life)."""
    with _ALLOCATORS_LOCK:
        if not _ALLOCATORS:
            from mlir import ir
            from mlir.execution_engine import ExecutionEngine

            context = ir.Context()
            with context:
                engine = ExecutionEngine(ir.Module.parse(_POISONING_ALLOCATORS), opt_level=2)
            found = (ctypes.c_void_p * 2)()
            out = ctypes.c_void_p(ctypes.addressof(found))
            packed = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(out), ctypes.c_void_p))
            ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup("addresses"))(packed)
            if not all(found):
                raise RuntimeError("the poisoning allocators did not JIT")
            _ALLOCATORS.update(keep=(context, engine), malloc=found[0], aligned_alloc=found[1])
        return {name: _ALLOCATORS[name] for name in ("malloc", "aligned_alloc")}


def make_engine(module: Any, opt_level: int, poison: bool = False) -> Any:
    """An ExecutionEngine for ``module`` with every runtime library loaded, whatever the module
    declares: LLVM's code generation adds calls of its own (bfloat16 conversions become
    ``__truncsfbf2``), which only the loaded libraries resolve. Loading them only for modules
    that declared a missing symbol saved ~10 ms a JIT and crashed every bfloat16 program.
    ``poison``: the module's ``malloc`` and ``aligned_alloc`` resolve to the poisoning
    wrappers (defined in the engine before its first lookup, so the libraries' are not used)."""
    from mlir.execution_engine import ExecutionEngine

    engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=list(runtime_libraries()))
    if poison:
        poison_engine(engine)
    return engine


def poison_engine(engine: Any) -> None:
    """Resolve ``engine``'s ``malloc`` and ``aligned_alloc`` to the poisoning wrappers (before
    its first lookup: symbols defined in the engine win over the libraries')."""
    for name, address in _poisoning_allocators().items():
        engine.raw_register_runtime(name, ctypes.c_void_p(address))


_UNDEF_GLOBAL = re.compile(
    r"(llvm\.mlir\.global \w+ @[\w$.]+)\(\)( [^\n]*: (!llvm\.array<[^\n]*>)) \{\n"
    r"\s*(%\w+) = llvm\.mlir\.(?:undef|poison) : \3\n\s*llvm\.return \4 : \3\n\s*\}"
)
_ARRAY = re.compile(r"array<(\d+) x ")
_POISON_LITERALS = {"f16": "0xFFFF", "bf16": "0xFFFF", "f32": "0xFFFFFFFF"}
_POISON_LITERALS["f64"] = "0xFFFFFFFFFFFFFFFF"


def _poison_literal(element: str) -> str | None:
    if element in _POISON_LITERALS:
        return _POISON_LITERALS[element]
    if re.fullmatch(r"i\d+", element):
        return "true" if element == "i1" else "-1"
    return None


def poison_globals(lowered: str) -> str:
    """``lowered`` (LLVM dialect) with each global whose initial value is undefined (a
    ``memref.global ... = uninitialized``: cpu-vector's static temporaries) initialized to
    ``POISON_BYTE`` bytes instead of the zeroed page it would get: the JIT's input when
    poisoning, so a first call that reads such a buffer before writing it reads NaN or -1."""

    def initialized(match: re.Match[str]) -> str:
        head, rest, array = match.group(1), match.group(2), match.group(3)
        dims = _ARRAY.findall(array)
        element = _ARRAY.sub("", array.removeprefix("!llvm.")).rstrip(">").strip()
        literal = _poison_literal(element)
        if literal is None or not dims:
            return match.group(0)
        shape = "x".join(dims)
        return f"{head}(dense<{literal}> : tensor<{shape}x{element}>){rest}"

    return _UNDEF_GLOBAL.sub(initialized, lowered) if "llvm.mlir.global" in lowered else lowered


def output_buffers(signature: KernelSignature, poison: bool) -> list[np.ndarray]:
    """Fresh output buffers for a call of a kernel of ``signature``, filled with
    ``POISON_BYTE`` for a poisoning kernel."""
    outputs = [np.empty(n.shape, n.dtype) for n in signature.outputs]
    if poison:
        for output in outputs:
            output.view(np.uint8).fill(POISON_BYTE)
    return outputs


class Kernel:
    """Native code for one lowered module: ``kernel(arrays) -> (outputs, errors)``."""

    def __init__(
        self, module: Any, signature: KernelSignature, opt_level: int, engine: Any = None,
        name: str = KERNEL, poison: bool | None = None,
    ) -> None:  # fmt: skip
        """JIT-compile ``module``, or (``engine``) take the function ``name`` from an engine
        already made for a module that several kernels were linked into (``driver.jit_together``);
        each kernel keeps the engine alive. ``poison`` (default: ``poisoning()``): the memory
        the code gets is poisoned; for an ``engine`` given, it must have been made so."""
        self.signature = signature
        self.poison = poisoning() if poison is None else poison
        self.engine = engine if engine is not None else make_engine(module, opt_level, self.poison)
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
        allocated outputs (poisoned, for a poisoning kernel) and the error flags."""
        outputs = output_buffers(self.signature, self.poison)
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
        self.poison = poisoning()
        self.engine = make_engine(module, opt_level, self.poison)

    def __call__(self, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        from mlir.runtime import get_ranked_memref_descriptor

        outputs = output_buffers(self.signature, self.poison)
        errors = [np.zeros((), INT32) for _ in range(self.signature.error_outputs)]
        descriptors = [get_ranked_memref_descriptor(a) for a in arrays + outputs + errors]
        self.engine.invoke(KERNEL, *[ctypes.pointer(ctypes.pointer(d)) for d in descriptors])
        return outputs, errors


__all__ = [
    "POISON_BYTE",
    "POISON_ENV",
    "Kernel",
    "MlirRuntimeKernel",
    "make_engine",
    "output_buffers",
    "poison_engine",
    "poison_globals",
    "poisoned",
    "poisoning",
    "runtime_libraries",
]
