"""The ``mapped`` stage of gpu-nvptx run on the CPU: a semantic check without a GPU.

The mapped stage holds everything GPU-specific but outlining and NVVM code generation: the
device-memory model, the tiling, the interchanges, the block/thread mapping and its bound
guards. Here every ``gpu.launch`` becomes a sequential ``scf.for`` nest over (block z, y, x,
thread z, y, x), with the launch's id and size arguments replaced by the loop variables and
bounds (exact while kernels use no barriers nor shared memory, true of this lowering), and
``gpu.alloc``/``memcpy``/``dealloc`` become ``memref`` ops; the CPU targets' LOWER pipeline and
runtime then run it with the kernel ABI. What it cannot see: outlining, NVVM code generation
and libdevice math (the host's libm evaluates math).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import workarounds
from ..driver import Artifacts
from ..pipelines import LOWER, WITHOUT_BF16_CONVERSIONS, drops_bf16_conversions, target_features
from .pipeline import _walk

#: The host CPU features the emulation is compiled without (workaround
#: ``emulation-without-avx512``): with AVX-512, LLVM 22's X86 codegen writes a truncating
#: masked store with one lane set as a store of the whole wide lane, past the buffer's end.
#: The emulation checks the GPU lowering, not this CPU's vector code.
WITHOUT_AVX512 = ("-avx512f",)


def _constant(value: int) -> Any:
    from mlir import ir

    index = ir.IndexType.get()
    attr = ir.IntegerAttr.get(index, value)
    return ir.Operation.create("arith.constant", results=[index], attributes={"value": attr})


def _memory_to_memref(module: Any) -> None:
    from mlir import ir
    from mlir.dialects import memref

    for op in list(_walk(module.operation)):
        if op.name == "gpu.alloc":
            with ir.InsertionPoint(op), op.location:
                new = memref.AllocOp(op.results[0].type, list(op.operands), [])
            op.results[0].replace_all_uses_with(new.result)
            op.erase()
        elif op.name == "gpu.memcpy":
            with ir.InsertionPoint(op), op.location:
                memref.CopyOp(op.operands[1], op.operands[0])
            op.erase()
        elif op.name == "gpu.dealloc":
            with ir.InsertionPoint(op), op.location:
                memref.DeallocOp(op.operands[0])
            op.erase()


def launches_to_loops(module: Any) -> int:
    """Every ``gpu.launch`` as a sequential loop nest, in place; how many there were."""
    from mlir import ir
    from mlir.dialects import scf

    _memory_to_memref(module)
    count = 0
    for op in list(_walk(module.operation)):
        if op.name != "gpu.launch":
            continue
        count += 1
        # operands: [async deps], grid x y z, block x y z, [cluster], [dynamic shared memory]
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        sizes = list(op.operands)[segments[0] : segments[0] + 6]
        body = op.regions[0].blocks[0]
        args = list(body.arguments)  # block ids, thread ids, grid sizes, block sizes (x y z)
        with ir.InsertionPoint(op), op.location:
            c0, c1 = _constant(0).result, _constant(1).result
        point, ivs, innermost = ir.InsertionPoint(op), {}, None
        for dim, level in [(2, 0), (1, 0), (0, 0), (2, 1), (1, 1), (0, 1)]:
            with point, op.location:
                loop = scf.ForOp(c0, sizes[dim + 3 * level], c1)
                with ir.InsertionPoint(loop.body):
                    innermost = scf.YieldOp([])
            ivs[(dim, level)] = loop.induction_variable
            point = ir.InsertionPoint(innermost)
        for dim in range(3):
            args[dim].replace_all_uses_with(ivs[(dim, 0)])
            args[3 + dim].replace_all_uses_with(ivs[(dim, 1)])
            args[6 + dim].replace_all_uses_with(sizes[dim])
            args[9 + dim].replace_all_uses_with(sizes[3 + dim])
        for inner in list(body.operations):
            if inner.operation.name != "gpu.terminator":
                inner.operation.move_before(innermost.operation)
        op.erase()
    return count


class EmulatedKernel:
    """The emulation of one ``mapped`` stage, called as a kernel is: (outputs, error flags) for
    arrays of the graph's inputs (captured constants included, in ABI order). No
    ``runtime.Kernel`` to the harness: its heap is the emulation's (each ``gpu.alloc`` a
    ``memref.alloc``), not the device's, so the memory oracle does not count it."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def __call__(self, arrays: list[np.ndarray]) -> tuple[list, list]:
        return self.kernel([np.require(a, requirements="C") for a in arrays])


def _emulation_features(module: Any) -> None:
    """Every function of the lowered emulation compiled without ``WITHOUT_BF16_CONVERSIONS``
    (``pipelines.drops_bf16_conversions``) and without ``WITHOUT_AVX512`` (workaround
    ``emulation-without-avx512``), where those are on: one ``target_features`` attribute."""
    features = list(WITHOUT_BF16_CONVERSIONS) if drops_bf16_conversions() else []
    if workarounds.enabled("emulation-without-avx512"):
        features += WITHOUT_AVX512
    if features:
        target_features(module, tuple(features))


def emulated_kernel(artifacts: Artifacts) -> EmulatedKernel:
    """The ``mapped`` stage with every launch made a sequential loop nest, lowered by the CPU
    targets' LOWER pipeline and JIT-compiled (``runtime.Kernel``, uninstrumented) at LLVM -O1
    (workaround ``emulation-at-o1``: no SLP or loop vectorizer, whose wide shuffles X86 code
    generation miscompiled; the emulation checks the GPU lowering, not LLVM); without
    ``pipelines.WITHOUT_BF16_CONVERSIONS`` (a GPU's bfloat16 keeps subnormals: PTX's
    ``cvt.rn.bf16.f32`` does) nor ``WITHOUT_AVX512`` (``_emulation_features``)."""
    from mlir import ir, passmanager

    from ..lower import libm
    from ..runtime import Kernel

    context = ir.Context()
    with context:
        module = ir.Module.parse(artifacts.stages["mapped"])
        launches_to_loops(module)
        module.operation.verify()
        libm.replace(module)  # as the CPU targets' libm stage (the GPU's libdevice has expm1)
        passmanager.PassManager.parse(LOWER).run(module.operation)
        _emulation_features(module)
        level = 1 if workarounds.enabled("emulation-at-o1") else 2
        kernel = Kernel(module, artifacts.signature, level, instrument=False)
    kernel.context = context
    return EmulatedKernel(kernel)


def emulate(artifacts: Artifacts, arrays: list[np.ndarray]) -> tuple[list, list]:
    """(outputs, error flags) of the ``mapped`` stage run sequentially on the CPU
    (``EmulatedKernel``)."""
    return emulated_kernel(artifacts)(arrays)


__all__ = ["EmulatedKernel", "emulate", "emulated_kernel", "launches_to_loops"]
