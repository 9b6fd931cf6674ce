"""Tensor-level rewrites and analyses of ``cpu-vector``: reshapes as views, and row groups.

- ``views`` (a stage): ``tensor.reshape`` that only inserts unit dims and feeds a
  ``linalg.generic`` is folded into the generic's indexing map; every other static
  ``tensor.reshape`` with a reassociation becomes ``tensor.expand_shape``/``collapse_shape``.
  Why: one-shot-bufferize copies a reshaped strided slice into a fresh buffer (``memref.reshape``
  needs the identity layout), which cost attention three strided copies per call; an
  expand_shape of the slice is a view. OPTIMIZE has already run, so these no longer fold into the
  matmuls (the reason the builder emits ``tensor.reshape``).
- ``row_groups``: softmax / layer norm chains that can run one row at a time (``schedule``
  tiles and fuses them).
"""

from __future__ import annotations

from typing import Any


def _walk(module: Any, names: set[str]) -> list[Any]:
    """Ops named ``names``, in program order, not looking inside linalg ops."""
    found = []

    def walk(op: Any) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    child = child.operation
                    if child.name in names:
                        found.append(child)
                    if not child.name.startswith("linalg."):
                        walk(child)

    walk(module.operation)
    return found


def _op(owner: Any) -> Any:
    """The operation owning a value or a use (None for a block argument's block)."""
    from mlir import ir

    if isinstance(owner, ir.Block):
        return None
    return getattr(owner, "operation", owner)


def _unit_insertion(src: list[int], dst: list[int]) -> list[int] | None:
    """If ``dst`` is ``src`` with unit dims inserted, the dst position of each src dim."""
    mapping: list[int] = []
    j = 0
    for extent in src:
        while j < len(dst) and dst[j] == 1 and extent != 1:
            j += 1
        if j < len(dst) and dst[j] == extent:
            mapping.append(j)
            j += 1
        else:
            return None
    if any(d != 1 for d in dst[j:]):
        return None
    return mapping


def fold_unit_reshapes(module: Any) -> int:
    """Generic inputs that are ``tensor.reshape`` inserting unit dims read the source through a
    composed map instead. Only insertions: removing a dim would leave a constant result in the
    input map (``(d0, d1) -> (0, d0, d1)``), which the vectorizer rejects. Returns the count."""
    from mlir import ir

    count = 0
    for reshape in _walk(module, {"tensor.reshape"}):
        src, dst = reshape.operands[0], reshape.results[0]
        mapping = _unit_insertion(list(src.type.shape), list(dst.type.shape))
        if mapping is None:
            continue
        for use in list(dst.uses):
            user = _op(use.owner)
            if user is None or user.name != "linalg.generic":
                continue
            index = use.operand_number
            if index >= len(user.operands) - len(user.results):
                continue
            maps = [a.value for a in user.attributes["indexing_maps"]]
            old = maps[index]
            maps[index] = ir.AffineMap.get(
                old.n_dims, old.n_symbols, [old.results[m] for m in mapping]
            )
            user.attributes["indexing_maps"] = ir.ArrayAttr.get(
                [ir.AffineMapAttr.get(m) for m in maps]
            )
            user.operands[index] = src
            count += 1
    return count


def _reassociation(small: list[int], big: list[int]) -> list[list[int]] | None:
    """Groups of consecutive ``big`` dims whose products are the ``small`` dims, or None."""
    groups, j = [], 0
    for extent in small:
        group, product = [], 1
        while j < len(big) and (product < extent or not group):
            group.append(j)
            product *= big[j]
            j += 1
            if product == extent:
                break
        if product != extent or not group:
            return None
        groups.append(group)
    if j != len(big):
        if groups and all(big[k] == 1 for k in range(j, len(big))):
            groups[-1].extend(range(j, len(big)))  # trailing unit dims join the last group
        else:
            return None
    return groups


def reshapes_to_views(module: Any) -> int:
    """Static ``tensor.reshape`` -> ``tensor.expand_shape`` / ``collapse_shape`` where a
    reassociation exists. Returns the count."""
    from mlir import ir
    from mlir.dialects import tensor

    i64 = ir.IntegerType.get_signless(64)
    count = 0
    for op in _walk(module, {"tensor.reshape"}):
        src, res = op.operands[0], op.results[0]
        if not (src.type.has_static_shape and res.type.has_static_shape):
            continue
        s, d = list(src.type.shape), list(res.type.shape)
        if len(s) == len(d) or not s or not d:
            continue
        groups = _reassociation(s, d) if len(d) > len(s) else _reassociation(d, s)
        if groups is None:
            continue
        attr = ir.ArrayAttr.get(
            [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, k) for k in g]) for g in groups]
        )
        with ir.InsertionPoint(op), op.location:
            if len(d) > len(s):
                new = tensor.expand_shape(res.type, src, attr, [], ir.DenseI64ArrayAttr.get(d))
            else:
                new = tensor.collapse_shape(res.type, src, attr)
        res.replace_all_uses_with(new)
        op.erase()
        count += 1
    return count


def _erase_dead(ops: list[Any]) -> None:
    """Erase ops without uses (reshapes whose users now read the source, their shape
    constants), so that use-based analyses (``row_groups``) do not see them."""
    for op in ops:
        if all(not list(r.uses) for r in op.results):
            operands = [_op(v.owner) for v in op.operands]
            op.erase()
            _erase_dead([o for o in operands if o is not None and o.name == "arith.constant"])


def views(module: Any) -> None:
    """The ``views`` stage (in place)."""
    fold_unit_reshapes(module)
    _erase_dead(_walk(module, {"tensor.reshape"}))
    reshapes_to_views(module)


# --------------------------------------------------------------------------------------------
# Row groups

FUSABLE = frozenset({"linalg.generic", "linalg.reduce", "linalg.fill"})
_ORDER = FUSABLE | {"linalg.matmul", "linalg.batch_matmul", "linalg.transpose"}


def _iterators(op: Any) -> list[str]:
    if op.name == "linalg.generic":
        return [
            "reduction" if "reduction" in str(a) else "parallel"
            for a in op.attributes["iterator_types"]
        ]
    if op.name == "linalg.reduce":
        rank = len(op.operands[0].type.shape)
        dims = set(op.attributes["dimensions"])
        return ["reduction" if i in dims else "parallel" for i in range(rank)]
    return ["parallel"] * len(op.results[0].type.shape)


def _row_preserving(consumer: Any, operand_index: int) -> bool:
    """Does a row tile of ``consumer`` (every dim but its last tiled by 1) read a row-shaped,
    row-private slice of this operand (no producer data shared between rows)?"""
    from mlir import ir

    iters = _iterators(consumer)
    rank = len(iters)
    if consumer.name == "linalg.generic":
        amap = [a.value for a in consumer.attributes["indexing_maps"]][operand_index]
        if any(not isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)) for e in amap.results):
            return False
        dims = {e.position for e in amap.results if isinstance(e, ir.AffineDimExpr)}
        return all(d in dims for d in range(rank - 1))
    if consumer.name == "linalg.reduce":
        return iters[-1] == "reduction" and iters[:-1] == ["parallel"] * (rank - 1)
    return consumer.name == "linalg.fill"


def row_groups(module: Any) -> list[tuple[Any, list[Any]]]:
    """(root, producers, nearest first): a rank >= 2 all-parallel ``linalg.generic`` root and
    the generic/reduce/fill producers whose results are used only inside the group and read row
    by row. A group must hold a reduction over the innermost dim (plain elementwise chains are
    already one op after OPTIMIZE)."""
    ops = _walk(module, set(_ORDER))
    taken: set[Any] = set()
    groups = []
    for ri in range(len(ops) - 1, -1, -1):
        root = ops[ri]
        if root.name != "linalg.generic" or root in taken or len(root.results) != 1:
            continue
        iters = _iterators(root)
        if len(iters) < 2 or "reduction" in iters:
            continue
        members = [root]
        member_set = {root}
        for pi in range(ri - 1, -1, -1):
            p = ops[pi]
            if p.name not in FUSABLE or p in taken or not list(p.results[0].uses):
                continue
            uses = [use for result in p.results for use in result.uses]
            if any(_op(use.owner) not in member_set for use in uses):
                continue
            if not all(_row_preserving(_op(u.owner), u.operand_number) for u in uses):
                continue
            if p.name == "linalg.reduce":
                it = _iterators(p)
                if it[-1] != "reduction" or "reduction" in it[:-1]:
                    continue
            members.append(p)
            member_set.add(p)
        reduces = any(m.name == "linalg.reduce" or "reduction" in _iterators(m) for m in members)
        if reduces and len(members) > 1:
            taken.update(members)
            groups.append((root, members[1:]))
    return groups


def fresh_inits(members: list[Any]) -> int:
    """Give each non-root generic of a group its own ``tensor.empty`` init when its payload does
    not read the init. Why: fused into the row loop, an init shared with the root becomes a
    slice of the loop's output, and bufferization copies that (garbage) row into a temporary
    before every use."""
    from mlir import ir

    count = 0
    for op in members:
        if op.name != "linalg.generic":
            continue
        n_inputs = len(op.operands) - len(op.results)
        block = op.regions[0].blocks[0]
        for k, _ in enumerate(op.results):
            if list(block.arguments[n_inputs + k].uses):
                continue
            init = op.operands[n_inputs + k]
            with ir.InsertionPoint(op), op.location:
                empty = ir.Operation.create("tensor.empty", results=[init.type])
            op.operands[n_inputs + k] = empty.results[0]
            count += 1
    return count


__all__ = ["fold_unit_reshapes", "fresh_inits", "reshapes_to_views", "row_groups", "views"]
