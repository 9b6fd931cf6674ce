"""The ``gpu-nvptx`` backend: our pipeline down to PTX for sm_90, checked by ptxas, and run
through MLIR's ExecutionEngine with ``libmlir_cuda_runtime.so`` where a CUDA device exists.

Compiling needs no GPU, so every program the harness draws is lowered and assembled here: a
failed stage or PTX that ptxas rejects is a ``CompilerError`` (a finding), while running without
a device is an ``UnsupportedFeature`` (a known limitation, counted, never a finding).

Artifacts: ``stages`` holds the module as built, every stage of ``compiler.gpu.pipeline``, then
one ``kernel<i>.ptx`` per kernel; ``commands`` reproduce each from saved texts (``<stage>.mlir``,
``kernel<i>.ptx``): ``mlir-opt`` for pass stages, ``python -m compiler.gpu`` for Python stages,
and for a PTX stage its extraction from ``binary.mlir`` followed by ``ptxas``.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shlex
import threading
from typing import Any

import numpy as np

from .. import tools
from ..driver import Artifacts, notify, remember, remembered
from ..errors import CompilerError, UnsupportedFeature
from ..frontend.graph import Graph
from ..lower import emit
from ..pipelines import BUILT, LLVM, LOWER
from . import pipeline

NAME = "gpu-nvptx"
EMULATED = "gpu-emulated"
#: The last stage ``EMULATED`` compiles: the one it runs.
EMULATED_STAGE = "mapped"
NO_DEVICE = "running gpu-nvptx needs a CUDA device; compiled and checked with ptxas only"
PTXAS_ARGS = (f"-arch={pipeline.CHIP}",)


# --------------------------------------------------------------------------------------------
# The machine: ptxas, the CUDA driver, MLIR's CUDA runtime


def ptxas(ptx: str) -> tuple[bool, str]:
    """Assemble one PTX module for the chip (output discarded): (accepted, diagnostics)."""
    import subprocess
    import tempfile

    path = tools.require("ptxas")
    with tempfile.TemporaryDirectory(prefix="gpu-nvptx-") as tmp:
        source = os.path.join(tmp, "kernel.ptx")
        with open(source, "w") as handle:
            handle.write(ptx)
        proc = subprocess.run(
            [path, *PTXAS_ARGS, source, "-o", os.path.join(tmp, "kernel.cubin")],
            capture_output=True, text=True, timeout=600,
            start_new_session=True,  # a ^C to the caller's group is not a rejection
        )  # fmt: skip
    return proc.returncode == 0, (proc.stderr + proc.stdout).strip()


def assemble(ptx: dict[str, str]) -> None:
    """ptxas on every kernel (concurrently: it is a process per kernel); the first rejection
    raises CompilerError with stage ``ptxas`` and the rejected PTX as its input text."""
    from concurrent.futures import ThreadPoolExecutor

    workers = max(1, min(len(ptx), os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(ptxas, ptx.values()))
    for (name, text), (ok, message) in zip(ptx.items(), results, strict=True):
        if not ok:
            command = " ".join(["ptxas", *PTXAS_ARGS, name])
            raise CompilerError("ptxas", command, f"{name}: {message}", text)


@functools.cache
def cuda_devices() -> tuple[int, str]:
    """(CUDA devices visible through the driver API, why none): 0 without libcuda.so.1, when
    cuInit fails or when the driver sees no device. Never raises."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        return 0, f"no CUDA driver ({error})"
    try:
        status = cuda.cuInit(0)
        if status != 0:
            return 0, f"cuInit failed (CUresult {status})"
        count = ctypes.c_int(0)
        status = cuda.cuDeviceGetCount(ctypes.byref(count))
        if status != 0:
            return 0, f"cuDeviceGetCount failed (CUresult {status})"
    except (AttributeError, OSError) as error:  # pragma: no cover - a broken driver library
        return 0, f"unusable CUDA driver ({error})"
    return count.value, "" if count.value else "the CUDA driver sees no device"


def _mlir_library(name: str) -> str | None:
    import mlir

    for root in mlir.__path__:
        path = os.path.join(root, "lib", name)
        if os.path.exists(path):
            return path
    return None


@functools.cache
def _probe() -> str | None:
    """Why this MLIR cannot lower our pipelines (a pass it lacks), or None."""
    try:
        from mlir import ir, passmanager
        from mlir.dialects import arith, gpu, linalg, scf, transform  # noqa: F401
    except ImportError as error:
        return f"the MLIR Python bindings lack a needed dialect ({error})"
    with ir.Context():
        for text in pipeline.PIPELINES:
            try:
                passmanager.PassManager.parse(text)
            except (ValueError, ir.MLIRError) as error:
                return f"this MLIR lacks a pass of the GPU pipeline ({error})"
    return None


@functools.cache
def _unavailable() -> str | None:
    reason = _probe()
    if reason is None and tools.tool_path("ptxas") is None:
        reason = "ptxas (the CUDA toolkit) was not found: set CUDA_HOME or put ptxas on PATH"
    return reason


# --------------------------------------------------------------------------------------------
# Compile


def _command(stage: Any, source: str, output: str) -> str:
    if stage.transform is not None:
        return " ".join(
            ["python", "-m", "compiler.gpu", stage.name, shlex.quote(source), "-o",
             shlex.quote(output)]
        )  # fmt: skip
    return tools.command("mlir-opt", f"--pass-pipeline={stage.pipeline}", source, "-o", output)


def _ptx_command(index: int, source: str, output: str) -> str:
    extract = " ".join(
        ["python", "-m", "compiler.gpu", "ptx", shlex.quote(source), "--kernel", str(index), "-o",
         shlex.quote(output)]
    )  # fmt: skip
    return f"{extract} && {tools.command('ptxas', *PTXAS_ARGS, output, '-o', '/dev/null')}"


def compile_graph(graph: Graph, until: str | None = None) -> Artifacts:
    """Every stage of the GPU pipeline on ``graph``, then ptxas on every kernel; or the stages
    up to ``until`` only (nothing assembled)."""
    from mlir import ir

    text, signature = emit.build(graph)
    artifacts = Artifacts(NAME, {BUILT: text}, signature=signature)
    reused: list[str] = []

    def parse(source: str) -> Any:
        try:
            return ir.Module.parse(source)
        except ir.MLIRError as error:
            if source is text:  # the module as built: this project's IR does not verify
                raise CompilerError("parse/verify", "", str(error), text) from None
            raise

    with ir.Context():
        notify(NAME, BUILT)
        module = parse(text)
        current, previous = text, BUILT
        names = [stage.name for stage in pipeline.STAGES]
        last = names.index(until) + 1 if until is not None else len(names)
        for stage in pipeline.STAGES[:last]:
            notify(NAME, stage.name)
            # A pass stage no Python check follows (the CPU targets' optimized and bufferized
            # are these very stages) is taken from the driver's cache when it ran on this text.
            shared = stage.transform is None and stage.name not in pipeline.CHECKS
            output = remembered(stage, current) if shared else None
            if output is not None:
                current, module = output, None
                reused.append(stage.name)
            else:
                if module is None:
                    module = parse(current)
                try:
                    stage.run(module)
                    check = pipeline.CHECKS.get(stage.name)
                    if check is not None:
                        check(module)
                except ir.MLIRError as error:
                    raise CompilerError(stage.name, stage.pipeline, str(error), current) from None
                except CompilerError as error:  # an invariant of our lowering, checked in Python
                    raise CompilerError(
                        stage.name, stage.pipeline, error.message, current
                    ) from None
                output = str(module)
                if shared:
                    remember(stage, current, output)
                current = output
            artifacts.stages[stage.name] = current
            artifacts.commands[stage.name] = _command(
                stage, pipeline.stage_file(previous), pipeline.stage_file(stage.name)
            )
            previous = stage.name
        if reused:
            artifacts.notes["shared"] = ",".join(reused)
        if until is not None:
            return artifacts
        if module is None:
            module = parse(current)
        found = pipeline.kernels(module)
    binary = pipeline.stage_file(previous)
    ptx = {}
    for index, (kernel, code) in enumerate(found):
        name = f"kernel{index}.ptx"
        ptx[name] = artifacts.stages[name] = code
        artifacts.commands[name] = _ptx_command(index, binary, name)
        artifacts.notes[name] = f"gpu.binary @{kernel} of {binary}"
    artifacts.commands[LLVM] = tools.command("mlir-translate", "--mlir-to-llvmir", binary)
    notify(NAME, "ptxas")
    assemble(ptx)
    artifacts.notes["ptxas"] = f"{len(ptx)} kernel(s) accepted by ptxas {' '.join(PTXAS_ARGS)}"
    return artifacts


# --------------------------------------------------------------------------------------------
# Run


def _descriptor(array: np.ndarray) -> ctypes.Structure:
    """A memref descriptor of a C-contiguous array."""
    fields = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_longlong),
    ]
    if array.ndim:
        rank = ctypes.c_longlong * array.ndim
        fields += [("sizes", rank), ("strides", rank)]
    desc = type(f"MemRef{array.ndim}D", (ctypes.Structure,), {"_fields_": fields})()
    desc.allocated = desc.aligned = array.ctypes.data
    desc.offset = 0
    if array.ndim:
        desc.sizes[:] = array.shape
        desc.strides[:] = [s // array.itemsize for s in array.strides]
    return desc


class GpuKernel:
    """The ``binary`` stage JIT-compiled with MLIR's CUDA runtime: ``kernel(arrays) -> (outputs,
    errors)``. Each call allocates device buffers, copies, launches and copies back."""

    def __init__(self, binary_text: str, signature: emit.KernelSignature) -> None:
        from mlir import ir
        from mlir.execution_engine import ExecutionEngine

        libraries = [_mlir_library("libmlir_cuda_runtime.so")]
        libraries.append(_mlir_library("libmlir_c_runner_utils.so"))
        if None in libraries:
            raise UnsupportedFeature("running gpu-nvptx needs MLIR's libmlir_cuda_runtime.so")
        from ..runtime import instrument_engine, instrumenting

        self.signature = signature
        self.instrumented = instrumenting()
        self.context = ir.Context()  # the engine's module lives in this context
        with self.context:
            module = ir.Module.parse(binary_text)
            self.engine = ExecutionEngine(module, opt_level=2, shared_libs=libraries)
            if self.instrumented:
                instrument_engine(self.engine)  # before initialize(): its first materialization
            # The PTX is loaded by a global constructor (mgpuModuleLoadJIT) that raw_lookup
            # alone never runs: without this every launch gets a null module.
            self.engine.initialize()
        self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
            self.engine.raw_lookup("_mlir_ciface_" + emit.KERNEL)
        )
        self._lock = threading.Lock()

    def __call__(self, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        from ..runtime import output_buffers

        outputs = output_buffers(self.signature, self.instrumented)
        errors = [np.zeros((), np.int32) for _ in range(self.signature.error_outputs)]
        buffers = [np.require(a, requirements="C") for a in arrays] + outputs + errors
        descriptors = [_descriptor(b) for b in buffers]
        pointers = [ctypes.pointer(d) for d in descriptors]
        packed = (ctypes.c_void_p * len(pointers))(
            *[ctypes.cast(ctypes.pointer(p), ctypes.c_void_p) for p in pointers]
        )
        with self._lock:
            self._entry(packed)
        return outputs, errors


class GpuNvptxBackend:
    """Our pipeline lowered to PTX (sm_90) through MLIR's gpu/NVVM dialects."""

    name = NAME
    description = "linalg tiled onto CUDA blocks/threads, PTX for sm_90 (ptxas-checked)"
    # Where its failures live (triage): this project's GPU lowering, past the stages it shares
    # with the CPU targets (harness/triage/attribution.py tells those apart).
    layer = "gpu"

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<backend {self.name}>"

    def unavailable(self) -> str | None:
        """Why this backend cannot compile here (MLIR lacks a pass, ptxas is missing), or None.
        A missing device is not a reason: compiling and ptxas still check every program."""
        return _unavailable()

    def limits(self) -> str | None:
        """What it cannot do here though it compiles: run, without a CUDA device (or None)."""
        count, why = cuda_devices()
        return None if count else f"{NO_DEVICE} ({why})"

    def compile(self, graph: Graph) -> Artifacts:
        return compile_graph(graph)

    def run(self, artifacts: Artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
        if cuda_devices()[0] == 0:
            raise UnsupportedFeature(NO_DEVICE)
        with self._lock:
            if artifacts.native is None:
                notify(self.name, LLVM)
                artifacts.native = GpuKernel(artifacts.stages["binary"], artifacts.signature)
        outputs, errors = artifacts.native(arrays)
        if any(int(e) for e in errors):
            raise ValueError("gather ids out of range for the table")
        return outputs


class GpuEmulatedBackend(GpuNvptxBackend):
    """gpu-nvptx's stages up to ``mapped``, that stage run sequentially on the CPU
    (``compiler.gpu.emulate``): the GPU lowering's device memory, tiling, block/thread mapping
    and bound guards judged against NumPy on any machine. Outlining, NVVM code generation and
    PTX are gpu-nvptx's (ptxas-checked); they are half of its compile time, left out here.
    The memory oracle does not count it (``emulate.EmulatedKernel``)."""

    name = EMULATED
    description = "gpu-nvptx's stages up to gpu.launch, run sequentially on the CPU"

    def __repr__(self) -> str:
        return f"<backend {self.name}>"

    def unavailable(self) -> str | None:
        """Why this MLIR cannot lower our GPU pipeline, or None (no ptxas is needed)."""
        return _probe()

    def limits(self) -> str | None:
        return None

    def compile(self, graph: Graph) -> Artifacts:
        artifacts = compile_graph(graph, until=EMULATED_STAGE)
        artifacts.backend = self.name
        artifacts.notes["run"] = (
            "the mapped stage, each gpu.launch a sequential loop nest, lowered and run on the "
            "CPU (compiler.gpu.emulate.emulate)"
        )
        return artifacts

    def run(self, artifacts: Artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
        from mlir import ir

        from .emulate import emulated_kernel

        with self._lock:
            if artifacts.native is None:
                notify(self.name, LLVM)
                try:
                    artifacts.native = emulated_kernel(artifacts)
                except ir.MLIRError as error:  # the emulation's loops or LOWER on them
                    stage = artifacts.stages[EMULATED_STAGE]
                    raise CompilerError("emulated", LOWER, str(error), stage) from None
        outputs, errors = artifacts.native(arrays)
        if any(int(e) for e in errors):
            raise ValueError("gather ids out of range for the table")
        return outputs


__all__ = [
    "EMULATED",
    "NAME",
    "NO_DEVICE",
    "GpuEmulatedBackend",
    "GpuKernel",
    "GpuNvptxBackend",
    "assemble",
    "compile_graph",
    "cuda_devices",
    "ptxas",
]
