"""The ``temporaries`` stage of ``cpu-vector``: where the bufferized kernel's temporaries live.

Runs between bufferization and the deallocation pipeline:

1. static ``memref.alloc`` in loop bodies (the per-row buffers of a row-fused softmax) move to
   the function's entry block: one buffer reused by every iteration instead of malloc/free per
   iteration (``buffer-loop-hoisting`` does not hoist out of ``scf.forall``). Safe because this
   target runs every loop sequentially (``scf.forall`` becomes ``scf.for``) and a buffer that
   leaves its iteration (yielded, directly or through a view) stays where it is;
2. static entry-block allocations become private, uninitialized, 64-byte aligned
   ``memref.global``s: no malloc/free and no fresh-page faults per call. The kernel is then not
   reentrant; ``runtime.Kernel`` serializes calls with a lock anyway. Up to ``GLOBAL_MAX_BYTES``
   each and ``GLOBAL_BUDGET_BYTES`` per module, because ``@jit`` keeps up to 128
   specializations alive; larger temporaries stay heap allocations.
"""

from __future__ import annotations

from typing import Any

GLOBAL_MAX_BYTES = 4 << 20
GLOBAL_BUDGET_BYTES = 16 << 20
GLOBAL_PREFIX = "__vector_tmp"

_LOOPS = ("scf.for", "scf.forall", "scf.parallel", "scf.while")
_VIEWS = frozenset(
    "memref.subview memref.expand_shape memref.collapse_shape memref.cast "
    "memref.reinterpret_cast memref.transpose memref.view memref.reshape".split()
)
_LEAVES = ("scf.yield", "func.return", "scf.forall.in_parallel", "scf.condition")


def _escapes(value: Any) -> bool:
    """Whether ``value`` (or a view of it) is yielded or returned."""
    for use in value.uses:
        owner = getattr(use.owner, "operation", use.owner)
        if owner.name in _LEAVES:
            return True
        if owner.name in _VIEWS and any(_escapes(r) for r in owner.results):
            return True
    return False


def _functions(module: Any) -> list[Any]:
    return [
        op.operation
        for op in module.body.operations
        if op.operation.name == "func.func" and op.operation.regions[0].blocks
    ]


def _static(op: Any) -> bool:
    return (
        op.name == "memref.alloc"
        and not len(op.operands)
        and op.results[0].type.has_static_shape
        and "strided" not in str(op.results[0].type)
        and "affine_map" not in str(op.results[0].type)
    )


def _hoist(op: Any, first: Any, in_loop: bool) -> int:
    moved = 0
    for region in op.regions:
        for block in region.blocks:
            for child in list(block.operations):
                child = child.operation
                if in_loop and _static(child) and not _escapes(child.results[0]):
                    child.move_before(first)
                    moved += 1
                    continue
                moved += _hoist(child, first, in_loop or child.name in _LOOPS)
    return moved


def hoist_loop_allocs(module: Any) -> int:
    """Step 1; returns how many allocations moved."""
    moved = 0
    for func in _functions(module):
        moved += _hoist(func, func.regions[0].blocks[0].operations[0].operation, False)
    return moved


def _bytes(ty: Any) -> int:
    from mlir import ir

    size = 1
    for extent in ty.shape:
        size *= extent
    element = ty.element_type
    if isinstance(element, ir.IntegerType):
        bits = element.width
    elif isinstance(element, ir.FloatType):
        bits = element.width
    else:
        bits = 64  # index
    return size * max(8, bits) // 8


def globalize_allocs(module: Any) -> int:
    """Step 2; returns the bytes made static."""
    from mlir import ir

    total = count = 0
    taken = {
        str(op.operation.attributes["sym_name"]).strip('"')
        for op in module.body.operations
        if "sym_name" in op.operation.attributes
    }
    for func in _functions(module):
        for op in list(func.regions[0].blocks[0].operations):
            op = op.operation
            if not _static(op):
                continue
            ty = op.results[0].type
            size = _bytes(ty)
            if size > GLOBAL_MAX_BYTES or total + size > GLOBAL_BUDGET_BYTES:
                continue
            name = f"{GLOBAL_PREFIX}{count}"
            while name in taken:
                count += 1
                name = f"{GLOBAL_PREFIX}{count}"
            taken.add(name)
            count += 1
            glob = ir.Operation.parse(
                f'memref.global "private" @{name} : {ty} = uninitialized {{alignment = 64 : i64}}'
            )
            ir.InsertionPoint.at_block_begin(module.body).insert(glob)
            with ir.InsertionPoint(op), op.location:
                get = ir.Operation.create(
                    "memref.get_global",
                    results=[ty],
                    attributes={"name": ir.FlatSymbolRefAttr.get(name)},
                )
            op.results[0].replace_all_uses_with(get.results[0])
            op.erase()
            total += size
    return total


def temporaries(module: Any) -> None:
    """The ``temporaries`` stage (in place)."""
    hoist_loop_allocs(module)
    globalize_allocs(module)


__all__ = [
    "GLOBAL_BUDGET_BYTES",
    "GLOBAL_MAX_BYTES",
    "globalize_allocs",
    "hoist_loop_allocs",
    "temporaries",
]
