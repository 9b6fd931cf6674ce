"""The ``gathers`` stage of ``cpu-vector``: gathers from strided buffers read the right elements.

The vectorizer turns ``tensor.extract`` (``take``/``gather``) into ``vector.gather`` on the
tensor with *linear* indices over the tensor's logical shape (``row * width + column``).
One-shot bufferization keeps the op as is on whatever buffer the tensor becomes, and that may be
a strided view (an ``extract_slice`` such as ``x[:, 1::2]``, or an ``expand_shape`` of one), while
``convert-vector-to-llvm`` adds the linear index to the address of ``base[offsets]`` as a
*memory* offset: right only for a contiguous row-major buffer. So a gather from a view read the
wrong elements (innermost stride 1, e.g. ``x[:, 1:3]``) or, innermost stride not 1
(``x[:, ::2]``), was left unconverted and the module failed LLVM translation
(``builtin.unrealized_conversion_cast``).

This stage, right after bufferization, rewrites every ``vector.gather`` whose buffer is not
contiguous: the linear positions are split into coordinates over the buffer's shape
(``divui``/``remui`` on the index vector), dotted with its strides, and the gather reads a flat
1-D view of the underlying allocation (``extract_strided_metadata`` + ``reinterpret_cast``) at
those physical positions. No copy, and the gather stays one masked ``llvm.masked.gather``.

Upstream: the indices are logical, not physical (discourse RFC "semantics of vector.gather
indices with strided memrefs", llvm-project #181357); llvm-project #184706 fixes only the
scalarizing lowering (``Gather1DToConditionalLoads``, not used by ``convert-vector-to-llvm``).
"""

from __future__ import annotations

from typing import Any

_DYNAMIC = -(2**63)  # ShapedType::kDynamic


def contiguous(memref_type: Any) -> bool:
    """Whether a linear index over the shape is a memory offset that ``convert-vector-to-llvm``
    lowers: row-major strides (any offset); a dim of extent 1 may have any stride, except the
    innermost, whose stride the lowering requires to be 1 (``x[2::3, -1]`` is a
    ``memref<1xi32, strided<[3]>>``: its gather was left unconverted and LLVM translation
    failed)."""
    from mlir import ir

    ty = ir.MemRefType(memref_type)
    strides, _ = ty.get_strides_and_offset()
    return linear(list(ty.shape), strides)


def linear(extents: list[int], strides: list[int]) -> bool:
    """``contiguous``'s rule on a shape and its strides (``_DYNAMIC`` where unknown: not
    contiguous); the ``mlir:`` variants' symptom ``scripts.strided_gather`` reads them from
    text."""
    if len(extents) != len(strides):
        return False
    expected = 1
    pairs = zip(reversed(extents), reversed(strides), strict=True)
    for index, (extent, stride) in enumerate(pairs):
        if extent == _DYNAMIC or stride == _DYNAMIC:
            return False
        if (extent != 1 or index == 0) and stride != expected:
            return False
        expected *= extent
    return True


def _gathers(op: Any) -> list[Any]:
    found = []
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                child = child.operation
                if child.name == "vector.gather":
                    found.append(child)
                found.extend(_gathers(child))
    return found


def _value(value: Any) -> Any:
    """An index value for ``value`` (a Python int becomes a constant)."""
    from mlir import ir
    from mlir.dialects import arith

    if isinstance(value, int):
        return arith.ConstantOp(ir.IndexType.get(), value).result
    return value


def _add(a: Any, b: Any) -> Any:
    """a + b on index scalars (ints fold; 0 vanishes)."""
    from mlir.dialects import arith

    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if isinstance(a, int) and a == 0:
        return b
    if isinstance(b, int) and b == 0:
        return a
    return arith.AddIOp(_value(a), _value(b)).result


def _mul(a: Any, b: Any) -> Any:
    """a * b on index scalars (ints fold; 0 and 1 simplify)."""
    from mlir.dialects import arith

    if isinstance(a, int) and isinstance(b, int):
        return a * b
    for x, y in ((a, b), (b, a)):
        if isinstance(x, int) and x in (0, 1):
            return 0 if x == 0 else y
    return arith.MulIOp(_value(a), _value(b)).result


def _splat(vector_type: Any, value: Any) -> Any:
    """``value`` (an index value or an int) as a vector of ``vector_type``."""
    from mlir.dialects import vector

    return vector.BroadcastOp(vector_type, _value(value)).result


def _rewrite(gather: Any) -> None:
    from mlir import ir
    from mlir.dialects import arith, memref, vector

    base, *rest = gather.operands
    ty = ir.MemRefType(base.type)
    rank = ty.rank
    offsets: list[Any] = list(rest[:rank])
    indices, mask, passthru = rest[rank:]
    strides, offset = ty.get_strides_and_offset()
    with ir.InsertionPoint(gather), gather.location:
        lanes = ir.VectorType(indices.type)
        ivec = ir.VectorType.get(list(lanes.shape), ir.IndexType.get())
        meta = memref.ExtractStridedMetadataOp(base)
        buffer, meta_offset = meta.results[0], meta.results[1]

        def known(static: int, dynamic: Any) -> Any:
            return dynamic if static == _DYNAMIC else static

        size = [known(s, meta.results[2 + k]) for k, s in enumerate(ty.shape)]
        stride = [known(s, meta.results[2 + rank + k]) for k, s in enumerate(strides)]
        start = known(offset, meta_offset)
        # The linear position of base[offsets] over the shape, plus each lane's index.
        linear: Any = 0
        for k in range(rank):
            linear = _add(_mul(linear, size[k]), _constant_or(offsets[k]))
        position = indices
        if str(lanes.element_type) != "index":
            position = arith.IndexCastOp(ivec, indices).result
        if linear != 0:
            position = arith.AddIOp(position, _splat(ivec, linear)).result
        # Coordinates (innermost first; the outermost keeps the rest) dotted with the strides.
        physical = None
        for k in range(rank - 1, -1, -1):
            coordinate = position
            if k and size[k] != 1:
                # A zero extent must not divide (no lane can read from it anyway).
                extent = max(size[k], 1) if isinstance(size[k], int) else _max1(size[k])
                extent = _splat(ivec, extent)
                coordinate = arith.RemUIOp(position, extent).result
                position = arith.DivUIOp(position, extent).result
            elif k:
                continue  # extent 1: coordinate 0
            if stride[k] == 0:
                continue
            if stride[k] != 1:
                coordinate = arith.MulIOp(coordinate, _splat(ivec, stride[k])).result
            physical = coordinate if physical is None else arith.AddIOp(physical, coordinate).result
        if physical is None:
            physical = _splat(ivec, 0)
        # A flat view of the allocation up to the view's last element.
        reach = _add(start, 1)
        for k in range(rank):
            if isinstance(size[k], int):
                last: Any = max(size[k], 1) - 1
            else:
                last = arith.SubIOp(_max1(size[k]), _value(1)).result
            reach = _add(reach, _mul(last, stride[k]))
        flat_type = ir.MemRefType.get([_DYNAMIC], ty.element_type, memory_space=ty.memory_space)
        flat = memref.ReinterpretCastOp(
            flat_type, buffer, [], [_value(reach)], [], [0], [_DYNAMIC], [1]
        )
        new = vector.GatherOp(
            gather.results[0].type, flat.result, [_value(start)], physical, mask, passthru
        ).operation
        for attribute in gather.attributes:
            new.attributes[attribute.name] = attribute.attr
    gather.results[0].replace_all_uses_with(new.results[0])
    gather.erase()


def _constant_or(value: Any) -> Any:
    """The int of an ``arith.constant`` index value, else the value."""
    from mlir import ir

    owner = value.owner
    if isinstance(owner, ir.Block):
        return value
    owner = owner.operation
    if owner.name == "arith.constant" and isinstance(owner.attributes["value"], ir.IntegerAttr):
        return ir.IntegerAttr(owner.attributes["value"]).value
    return value


def _max1(value: Any) -> Any:
    from mlir.dialects import arith

    return arith.MaxUIOp(value, _value(1)).result


def strided_gathers(module: Any) -> int:
    """The ``gathers`` stage (in place); returns how many gathers it rewrote."""
    from mlir import ir

    count = 0
    for gather in _gathers(module.operation):
        base = gather.operands[0]
        if not isinstance(base.type, ir.MemRefType) or contiguous(base.type):
            continue
        _rewrite(gather)
        count += 1
    return count


def copied_gathers(module: Any, free: bool = False) -> int:
    """The ``+copied-gathers`` triage variants' fix-up (in place): each gather from a view that
    is not contiguous reads a contiguous copy of the view (``memref.copy`` into a fresh buffer)
    at its own logical indices, which ``convert-vector-to-llvm`` lowers right. Slow, and simple
    enough to trust: where ``strided_gathers`` and this disagree on a prefix of ``cpu-vector``,
    the fix-up is at fault, not the stage whose gathers it completed (a fix-up that dropped the
    view's offset was blamed on the vectorizer). ``free``: the copy is freed after the gather
    (in a prefix's completion; before cpu-vector's deallocation stage, which rejects an explicit
    free, that stage frees it). Returns the count."""
    from mlir import ir
    from mlir.dialects import memref

    count = 0
    for gather in _gathers(module.operation):
        base = gather.operands[0]
        if not isinstance(base.type, ir.MemRefType) or contiguous(base.type):
            continue
        ty = ir.MemRefType(base.type)
        with ir.InsertionPoint(gather), gather.location:
            plain = ir.MemRefType.get(list(ty.shape), ty.element_type, None, ty.memory_space)
            sizes = [
                memref.DimOp(base, _value(k)).result
                for k, s in enumerate(ty.shape)
                if s == _DYNAMIC
            ]
            copy = memref.AllocOp(plain, sizes, []).result
            memref.CopyOp(base, copy)
        gather.operands[0] = copy
        if free:
            with ir.InsertionPoint.after(gather), gather.location:
                memref.DeallocOp(copy)
        count += 1
    return count


def copied_gathers_freed(module: Any) -> int:
    """``copied_gathers``, each copy freed after its gather (a prefix's completion)."""
    return copied_gathers(module, free=True)


__all__ = ["contiguous", "copied_gathers", "copied_gathers_freed", "linear", "strided_gathers"]
