"""The gpu-nvptx lowering: our memref-ABI module to host LLVM dialect plus one PTX per kernel.

Stages (``*``: a Python stage; the others are ``mlir-opt`` pass pipelines):

- ``optimized``, ``bufferized``: the CPU targets' OPTIMIZE and BUFFERIZE, unchanged;
- ``prepared`` *: ``memref.copy`` -> ``linalg.copy`` (a kernel; on the device ``memref.copy``
  would call the host's ``memrefCopy``), the explicit device-memory model, reads through a
  negative-coefficient map as ``memref.load`` (tiling asserts on them), ops without a parallel
  loop wrapped in a 1-trip ``scf.parallel``, and a transform-dialect schedule (appended as a
  nested module) that tiles every other linalg op into an ``scf.forall`` of block tiles;
- ``tiled`` *: the transform interpreter runs that schedule, then the schedule is dropped;
- ``mapped``: parallel loops -> ``gpu.launch`` (blocks, then threads), checked afterwards: no
  compute may stay on the host;
- ``outlined``: ``gpu.launch`` -> ``gpu.func`` kernels in ``gpu.module``s with an NVVM target;
- ``device``: the kernels -> NVVM;
- ``binary``: the host -> LLVM dialect (one stream through ``gpu-async-region``), every
  ``gpu.module`` -> a ``gpu.binary`` holding PTX, checked afterwards to be translatable.

Memory model (why: the kernel ABI is NumPy's host buffers, pageable and possibly read-only, and
host registration never unregisters): every memref argument gets a ``gpu.alloc`` twin and a
host->device copy, the body uses only the twins, temporaries are ``gpu.alloc``/``gpu.dealloc``,
and before the return every argument the body writes is copied back and every twin is freed.
The schedules are one thread per output element: a 16x16 output tile per block for (batch)
matmul, up to 256 threads over the innermost parallel dims elsewhere; reductions loop inside a
thread (parallel dims are interchanged to the front first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..errors import CompilerError, UnsupportedFeature
from ..pipelines import BUFFERIZE, OPTIMIZE, Stage

CHIP = "sm_90"
# The bundled gpu-lower-to-nvvm-pipeline defaults to +ptx60, an LLVM fatal error for sm_90.
PTX_FEATURES = "+ptx80"
THREADS_PER_BLOCK = 256
MATMUL_TILE = (16, 16)  # output tile per block (rows, cols); one thread per output element
GRID_LIMITS = (2**31 - 1, 65535, 65535)  # x, y, z

TILE = "builtin.module(transform-interpreter)"
# No canonicalize between tiling and mapping: it folds 1-trip loops, whose ops would then stay
# on the host.
MAP = (
    "builtin.module(func.func(scf-forall-to-parallel), "
    "func.func(convert-linalg-to-parallel-loops), "
    "func.func(gpu-map-parallel-loops{mapping-policy=innermost-first}), "
    "convert-parallel-loops-to-gpu)"
)
OUTLINE = (
    f"builtin.module(gpu-kernel-outlining, nvvm-attach-target{{chip={CHIP} "
    f"features={PTX_FEATURES} O=3}})"
)
DEVICE = (
    "builtin.module(gpu.module(strip-debuginfo), gpu.module(expand-strided-metadata), "
    "gpu.module(lower-affine), gpu.module(convert-scf-to-cf), "
    "gpu.module(convert-gpu-to-nvvm{index-bitwidth=64}), "
    "gpu.module(llvm-optimize-for-nvvm-target), gpu.module(canonicalize), gpu.module(cse), "
    "gpu.module(reconcile-unrealized-casts))"
)
# gpu-async-region first: the gpu.memcpy/gpu.dealloc lowerings need async tokens.
BINARY = (
    "builtin.module(func.func(gpu-async-region), expand-strided-metadata, lower-affine, "
    "convert-scf-to-cf, finalize-memref-to-llvm, convert-arith-to-llvm, convert-index-to-llvm, "
    "convert-func-to-llvm, convert-cf-to-llvm, gpu-to-llvm, gpu-module-to-binary{format=isa}, "
    "reconcile-unrealized-casts, canonicalize, cse)"
)

_VIEW_OPS = frozenset(
    "memref.subview memref.reshape memref.cast memref.expand_shape memref.collapse_shape "
    "memref.reinterpret_cast memref.transpose memref.view".split()
)
# gpu.launch_func stays until translation, which turns it (and gpu.binary) into runtime calls.
_TRANSLATABLE = {"builtin.module", "gpu.binary", "gpu.launch_func"}
_HOST_COMPUTE = frozenset(
    "memref.load memref.store memref.copy scf.for scf.parallel scf.while".split()
)


def _fail(stage: str, message: str) -> CompilerError:
    """A violated invariant of our lowering (the driver fills in the stage's input text)."""
    return CompilerError(stage, "", message, "")


# --------------------------------------------------------------------------------------------
# IR helpers


def _walk(op: Any) -> Iterator[Any]:
    """Every operation nested in ``op`` (``op`` first), pre-order."""
    stack = [op]
    while stack:
        current = stack.pop()
        yield current
        for region in current.regions:
            for block in region.blocks:
                stack.extend(reversed([o.operation for o in block.operations]))


def _is_linalg(op: Any) -> bool:
    return op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index")


def _linalg_inputs(op: Any) -> int:
    """How many operands of a linalg op are DPS inputs (the rest are inits)."""
    if "operandSegmentSizes" in op.attributes:
        from mlir import ir

        return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[0]
    return len(op.operands) - 1


def _written(value: Any, seen: set | None = None) -> bool:
    """Whether anything writes through ``value`` or a view of it (inputs are never copied back:
    they may be read-only NumPy arrays)."""
    seen = seen if seen is not None else set()
    for use in value.uses:
        user = use.owner
        user = user.operation if hasattr(user, "operation") else user
        key = (id(user), use.operand_number)
        if key in seen:
            continue
        seen.add(key)
        if user.name in _VIEW_OPS and use.operand_number == 0:
            if any(_written(r, seen) for r in user.results):
                return True
        elif _is_linalg(user) and use.operand_number >= _linalg_inputs(user):
            return True
        elif user.name == "memref.store" and use.operand_number == 1:
            return True
        elif user.name == "memref.copy" and use.operand_number == 1:
            return True
        elif user.name == "gpu.memcpy" and use.operand_number == 0:
            return True
    return False


def kernel_func(module: Any) -> Any:
    """The ``func.func`` of our module (there is one)."""
    for op in module.body.operations:
        if op.operation.name == "func.func":
            return op.operation
    raise _fail("prepared", "no func.func in the module")


# --------------------------------------------------------------------------------------------
# prepared: copies, device memory, 1-trip wrappers, the schedule


def _copies_to_linalg(func: Any) -> None:
    from mlir import ir
    from mlir.dialects import linalg

    for op in list(_walk(func)):
        if op.name == "memref.copy":
            with ir.InsertionPoint(op), op.location:
                linalg.copy(op.operands[0], outs=[op.operands[1]])
            op.erase()


def _device_memory(func: Any) -> None:
    """Device twins of arguments and read globals, device temporaries, copy-back and frees."""
    from mlir import ir
    from mlir.dialects import gpu

    entry = func.regions[0].blocks[0]
    first = entry.operations[0]
    twins = []  # (host argument, device twin, written by the body)
    with ir.InsertionPoint(first), func.location:
        for arg in list(entry.arguments):
            if isinstance(arg.type, ir.MemRefType):
                twin = gpu.AllocOp(arg.type, None, [], [], []).results[0]
                written = _written(arg)
                arg.replace_all_uses_with(twin)
                twins.append((arg, twin, written))
        for arg, twin, _ in twins:  # outputs too: cheap, and always correct
            gpu.MemcpyOp(None, [], twin, arg)
    global_twins = []
    for op in list(_walk(func)):
        if op.name != "memref.get_global":
            continue
        value = op.results[0]
        # The shape operand of memref.reshape is read on the host, for the descriptor only.
        shape_uses = [
            use.owner
            for use in value.uses
            if use.owner.name == "memref.reshape" and use.operand_number == 1
        ]
        if len(shape_uses) == len(list(value.uses)):
            continue
        with ir.InsertionPoint(first), op.location:
            twin = gpu.AllocOp(value.type, None, [], [], []).results[0]
        op.move_before(twin.owner)
        value.replace_all_uses_with(twin)
        for user in shape_uses:
            user.operands[1] = value
        with ir.InsertionPoint(first), op.location:
            gpu.MemcpyOp(None, [], twin, value)
        global_twins.append(twin)
    for op in list(_walk(func)):
        if op.name == "memref.alloc":
            with ir.InsertionPoint(op), op.location:
                new = gpu.AllocOp(op.results[0].type, None, [], list(op.operands), [])
            op.results[0].replace_all_uses_with(new.results[0])
            op.erase()
        elif op.name == "memref.dealloc":
            with ir.InsertionPoint(op), op.location:
                gpu.DeallocOp(None, [], op.operands[0])
            op.erase()
        elif op.name == "memref.alloca":
            raise _fail("prepared", "memref.alloca on the host")
    for op in list(entry.operations):
        op = op.operation
        if op.name == "func.return":
            with ir.InsertionPoint(op), op.location:
                for arg, twin, written in twins:
                    if written:
                        gpu.MemcpyOp(None, [], arg, twin)
                for twin in [t for _, t, _ in twins] + global_twins:
                    gpu.DeallocOp(None, [], twin)


def _negative(expr: Any) -> bool:
    """Whether an affine expression multiplies by a nonpositive constant (``-d0 + 5``)."""
    from mlir import ir

    if isinstance(expr, ir.AffineMulExpr) and isinstance(expr.rhs, ir.AffineConstantExpr):
        if expr.rhs.value <= 0:
            return True
    if isinstance(expr, ir.AffineBinaryExpr):
        return _negative(expr.lhs) or _negative(expr.rhs)
    return False


def _reversed_reads_to_loads(func: Any) -> None:
    """An input read through a map with a negative coefficient (a negative-step slice) is read
    by ``memref.load`` at the mapped indices instead, and its map becomes all zeros: linalg
    tiling asserts on such maps ("nonpositive multiplying coefficient", llvm-project#113021).
    ``linalg.index`` stays global under tiling, so the load reads the same element."""
    from mlir import ir
    from mlir.dialects import affine, linalg, memref

    for op in list(_walk(func)):
        if op.name != "linalg.generic":
            continue
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        block = op.regions[0].blocks[0]
        reversed_inputs = [
            k for k in range(_linalg_inputs(op)) if any(_negative(e) for e in maps[k].results)
        ]
        for k in reversed_inputs:
            amap = maps[k]
            with ir.InsertionPoint(block.operations[0]), op.location:
                dims = [linalg.IndexOp(d).result for d in range(amap.n_dims)]
                indices = [
                    affine.AffineApplyOp(ir.AffineMap.get(amap.n_dims, 0, [e]), dims).result
                    for e in amap.results
                ]
                value = memref.LoadOp(op.operands[k], indices).result
            block.arguments[k].replace_all_uses_with(value)
            zeros = [ir.AffineConstantExpr.get(0)] * len(amap.results)
            maps[k] = ir.AffineMap.get(amap.n_dims, 0, zeros)
        if reversed_inputs:
            op.attributes["indexing_maps"] = ir.ArrayAttr.get(
                [ir.AffineMapAttr.get(m) for m in maps]
            )


def _loop_info(op: Any) -> tuple[list[int], list[bool]]:
    """(loop ranges, parallel flags) of a linalg op on static memrefs."""
    from mlir import ir
    from mlir.dialects import linalg

    maps = [m.value for m in linalg.get_indexing_maps(op)]
    ranges: list[int | None] = [None] * maps[0].n_dims
    for value, amap in zip(op.operands, maps, strict=False):
        if isinstance(value.type, ir.MemRefType):
            for k, expr in enumerate(amap.results):
                if isinstance(expr, ir.AffineDimExpr) and ranges[expr.position] is None:
                    ranges[expr.position] = value.type.shape[k]
    if "iterator_types" in op.attributes:
        kinds = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        parallel = ["parallel" in k for k in kinds]
    else:
        out_dims = {e.position for e in maps[-1].results if isinstance(e, ir.AffineDimExpr)}
        parallel = [d in out_dims for d in range(len(ranges))]
    if any(r is None or r < 0 for r in ranges):
        raise _fail("prepared", f"no static loop range for {op.name}")
    return [int(r) for r in ranges], parallel  # type: ignore[arg-type]


def _block_tile(ranges: list[int], dims: list[int]) -> dict[int, int]:
    """Block tile sizes of the parallel ``dims``: the innermost gets threads first (<= 256)."""
    budget = THREADS_PER_BLOCK
    sizes = {d: 1 for d in dims}
    for d in list(reversed(dims))[:3]:
        sizes[d] = max(1, min(ranges[d], budget))
        budget = max(1, budget // sizes[d])
    return sizes


def _check_grid(op: Any, ranges: list[int], sizes: list[int]) -> None:
    """gpu-map-parallel-loops{innermost-first} puts the last tiled dim on x, then y, z."""
    extents = [-(-r // s) for r, s in zip(ranges, sizes, strict=True) if s]
    for axis, limit, extent in zip("xyz", GRID_LIMITS, reversed(extents), strict=False):
        if extent > limit:
            raise UnsupportedFeature(
                f"gpu-nvptx: {op.name} needs {extent} blocks along grid {axis} "
                f"(CUDA allows {limit})"
            )


def _wrap_in_one_trip_parallel(op: Any) -> None:
    """Put ``op`` (no parallel loop: rank-0 ops, full reductions) in a 1-iteration scf.parallel,
    so it too becomes a (1 block x 1 thread) kernel instead of host code."""
    from mlir import ir
    from mlir.dialects import arith, scf

    index = ir.IndexType.get()
    with ir.InsertionPoint(op), op.location:
        c0 = arith.ConstantOp(index, 0).result
        c1 = arith.ConstantOp(index, 1).result
        loop = scf.ParallelOp([], [c0], [c1], [c1], [])
    region = loop.regions[0]
    if len(region.blocks) == 0:
        block = region.blocks.append(index, arg_locs=[op.location])
        with ir.InsertionPoint(block), op.location:
            scf.ReduceOp([], 0)
    op.move_before(region.blocks[0].operations[0])


def _match(i: int) -> str:
    return (
        f"    %h{i} = transform.structured.match attributes {{__gpu_tile_id = {i} : i64}} "
        "in %root : (!transform.any_op) -> !transform.any_op"
    )


def _tile(handle: str, i: int, sizes: list[int]) -> str:
    return (
        f"    %t{i}, %f{i} = transform.structured.tile_using_forall {handle} tile_sizes "
        f"[{', '.join(map(str, sizes))}] : (!transform.any_op) -> "
        "(!transform.any_op, !transform.any_op)"
    )


def schedule(func: Any) -> str:
    """Tag every linalg op of ``func`` and return the transform script that tiles each one."""
    from mlir import ir

    lines = []
    i64 = ir.IntegerType.get_signless(64)
    for i, op in enumerate([op for op in _walk(func) if _is_linalg(op)]):
        ranges, parallel = _loop_info(op)
        if op.name in ("linalg.matmul", "linalg.batch_matmul"):
            lead = [1] if op.name == "linalg.batch_matmul" else []
            m, n = ranges[len(lead)], ranges[len(lead) + 1]
            sizes = lead + [min(m, MATMUL_TILE[0]), min(n, MATMUL_TILE[1]), 0]
            _check_grid(op, ranges, sizes)
            op.attributes["__gpu_tile_id"] = ir.IntegerAttr.get(i64, i)
            lines += [_match(i), _tile(f"%h{i}", i, sizes)]
            continue
        pdims = [d for d in range(len(ranges)) if parallel[d]]
        rdims = [d for d in range(len(ranges)) if not parallel[d]]
        if not pdims:
            _wrap_in_one_trip_parallel(op)
            continue
        op.attributes["__gpu_tile_id"] = ir.IntegerAttr.get(i64, i)
        lines.append(_match(i))
        handle, order = f"%h{i}", pdims + rdims
        if order != list(range(len(ranges))):  # a reduction dim first: parallel dims to the front
            if op.name != "linalg.generic":
                lines.append(
                    f"    %g{i} = transform.structured.generalize {handle} "
                    ": (!transform.any_op) -> !transform.any_op"
                )
                handle = f"%g{i}"
            lines.append(
                f"    %x{i} = transform.structured.interchange {handle} iterator_interchange = "
                f"[{', '.join(map(str, order))}] : (!transform.any_op) -> !transform.any_op"
            )
            handle = f"%x{i}"
        ordered = [ranges[d] for d in order]
        tiles = _block_tile(ordered, list(range(len(pdims))))
        sizes = [tiles[k] for k in range(len(pdims))] + [0] * len(rdims)
        _check_grid(op, ordered, sizes)
        lines.append(_tile(handle, i, sizes))
    return (
        "module attributes {transform.with_named_sequence} {\n"
        "  transform.named_sequence @__transform_main(%root: !transform.any_op "
        "{transform.readonly}) {\n" + "\n".join(lines) + "\n    transform.yield\n  }\n}\n"
    )


def prepare(module: Any) -> None:
    """The ``prepared`` stage, in place."""
    from mlir import ir

    func = kernel_func(module)
    _copies_to_linalg(func)
    _device_memory(func)
    _reversed_reads_to_loads(func)
    script = ir.Operation.parse(schedule(func))
    ir.InsertionPoint(module.body).insert(script.operation)


def _is_schedule(op: Any) -> bool:
    return op.name == "builtin.module" and "transform.with_named_sequence" in op.attributes


def tile(module: Any) -> None:
    """The ``tiled`` stage, in place: run the schedule, then drop it."""
    from mlir import passmanager

    passmanager.PassManager.parse(TILE).run(module.operation)
    for op in list(module.body.operations):
        if _is_schedule(op.operation):
            op.operation.erase()


# --------------------------------------------------------------------------------------------
# Checks after a stage (they change nothing)


def check_mapped(module: Any) -> None:
    """No compute left on the host: it would dereference device pointers."""
    for op in _walk(kernel_func(module)):
        parent, inside = op.parent, False
        while parent is not None and not inside:
            inside = parent.name == "gpu.launch"
            parent = parent.parent
        if op.name == "gpu.launch" or inside:
            continue
        if op.name in _HOST_COMPUTE or _is_linalg(op) or op.name.startswith("math."):
            raise _fail("mapped", f"{op.name} left on the host (outside every gpu.launch)")


def check_binary(module: Any) -> None:
    """Everything translatable to LLVM IR: some passes leave casts behind without an error."""
    for op in _walk(module.operation):
        name = op.name
        if name == "builtin.unrealized_conversion_cast" or not (
            name.startswith("llvm.") or name in _TRANSLATABLE
        ):
            raise _fail("binary", f"{name} left in the host module (not translatable to LLVM IR)")


def kernels(module: Any) -> list[tuple[str, str]]:
    """(gpu.binary name, PTX) of every kernel of the ``binary`` stage."""
    from mlir.dialects import gpu

    found = []
    for op in module.body.operations:
        op = op.operation
        if op.name == "gpu.binary":
            name = str(op.attributes["sym_name"]).strip('"')
            for obj in op.attributes["objects"]:
                data = gpu.ObjectAttr(obj).object
                found.append((name, data.decode() if isinstance(data, bytes) else str(data)))
    return found


# --------------------------------------------------------------------------------------------
# The stages

STAGES: tuple[Stage, ...] = (
    Stage("optimized", OPTIMIZE, description="fusion on tensors (as the CPU targets)"),
    Stage("bufferized", BUFFERIZE, description="tensors -> buffers (as the CPU targets)"),
    Stage("prepared", transform=prepare, description="device memory and the tiling schedule"),
    Stage("tiled", TILE, transform=tile, description="the schedule applied, then dropped"),
    Stage("mapped", MAP, description="parallel loops -> gpu.launch"),
    Stage("outlined", OUTLINE, description="gpu.launch -> kernels with an NVVM target"),
    Stage("device", DEVICE, description="kernels -> NVVM"),
    Stage("binary", BINARY, description="host -> LLVM dialect, kernels -> PTX"),
)
CHECKS: dict[str, Callable[[Any], None]] = {"mapped": check_mapped, "binary": check_binary}
#: The pass pipelines this lowering needs (``unavailable()`` parses them).
PIPELINES = (OPTIMIZE, BUFFERIZE, TILE, MAP, OUTLINE, DEVICE, BINARY)


def stage(name: str) -> Stage:
    for candidate in STAGES:
        if candidate.name == name:
            return candidate
    raise ValueError(f"gpu-nvptx has no stage {name!r}: {[s.name for s in STAGES]}")


def stage_file(name: str) -> str:
    """The file a stage's text is saved to in reproduce commands (PTX stages end in .ptx)."""
    return name if name.endswith(".ptx") else f"{name}.mlir"


__all__ = [
    "CHECKS",
    "CHIP",
    "PIPELINES",
    "STAGES",
    "kernel_func",
    "kernels",
    "prepare",
    "schedule",
    "stage",
    "stage_file",
    "tile",
]
