"""Transform-dialect schedules of ``cpu-vector``, written into the module they transform.

A planning stage (Python) tags the ops it schedules with discardable attributes and appends the
schedule as a private nested module (``SCHEDULE``); the next stage is a plain ``mlir-opt`` pass
pipeline, ``transform-interpreter`` followed by ``symbol-dce`` (which erases the schedule). So the
schedule is part of the saved text of the planning stage, and every stage that transforms IR is
reproduced by ``mlir-opt`` alone. Each op gets its own ``failures(suppress)`` sequence: an op the
vectorizer refuses keeps its ``vec.id`` tag and goes to loops later, it never fails the compile.

Tile policy (``plan``), for 512-bit vectors (AVX-512; narrower hardware splits them):
- lanes = 512 bits / the widest element type the op touches (16 for f32/i32, 8 for f64, 64 for
  i8 booleans);
- innermost dim parallel: tiles of ``lanes``, masked when the extent is not a multiple;
- innermost dim a reduction: the whole row in one vector up to ``REDUCTION_MAX``, else chunks;
- every other dim: tile 1; matmuls that do not go to BLAS (ints): ``MATMUL_TILES``;
- an op on bfloat16 gets vector sizes that are powers of two (masked past the extent): LLVM 22
  aborts on bfloat16 vector arithmetic, compares and selects of 9-15, 17, 31, 33... lanes where
  the CPU has BF16 conversions (``workarounds``: ``bf16-power-of-two-vectors``);
- a max or min reduction is never masked: its row goes in chunks that divide it, since MLIR
  22.1.8 gives a masked ``vector.reduction <maximumf>`` the neutral -1.4e-45 instead of -inf
  (a float32 max of 300 negative numbers was -1e-45; ``unmasked-minmax``, llvm PR #222275);
- nor is a gather whose ids have rank 2 or more (a ``tensor.extract`` from a table of fewer
  dims than the loops): masked, its contiguous read got a mask of the loop rank and failed
  verification (``unmasked-nd-extract``, llvm-project #206209);
- only static, non-zero extents are planned (a zero or negative vector size aborts the process
  in MLIR's vectorizer, an assertion rather than an error).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import workarounds
from . import fusion

VECTOR_BITS = 512
REDUCTION_MAX = 256  # innermost reductions up to this extent: one vector per row
REDUCTION_CHUNK = 256  # longer ones: chunks of this many elements (masked tail)
MATMUL_TILES = (8, 32, 1)  # M, N, K tile of a vectorized (non-BLAS) matmul
SCHEDULE = "__vector_schedule"
VECTOR_TAG, ROW_TAG, ROW_PRODUCER_TAG = "vec.id", "vec.row", "vec.rowp"

_STRUCTURED = frozenset(
    "linalg.generic linalg.reduce linalg.transpose linalg.fill linalg.matmul "
    "linalg.batch_matmul linalg.map linalg.broadcast".split()
)
_MATMULS = ("linalg.matmul", "linalg.batch_matmul")


def _element(ty: Any) -> str:
    """The element type of a shaped type (the type itself otherwise), as text."""
    from mlir import ir

    return str(ir.ShapedType(ty).element_type) if isinstance(ty, ir.ShapedType) else str(ty)


def _bits(ty: Any) -> int:
    text = _element(ty)
    if text in ("f32", "i32"):
        return 32
    if text in ("i8", "i1"):
        return 8
    if text in ("f16", "bf16", "i16"):
        return 16
    return 64  # f64, i64, index and anything unexpected: the narrowest vector


def _shape(value: Any) -> list[int]:
    from mlir import ir

    return list(ir.ShapedType(value.type).shape)


def domain(op: Any) -> tuple[list[int | None], list[str]]:
    """Loop extents (None where no operand tells) and iterator kinds of a structured op."""
    from mlir import ir

    name = op.name
    if name == "linalg.generic":
        maps = [a.value for a in op.attributes["indexing_maps"]]
        iters = [
            "reduction" if "reduction" in str(a) else "parallel"
            for a in op.attributes["iterator_types"]
        ]
        extents: list[int | None] = [None] * maps[0].n_dims
        for operand, amap in zip(op.operands, maps, strict=False):
            if not isinstance(operand.type, ir.ShapedType):
                continue
            shape = _shape(operand)
            for pos, expr in enumerate(amap.results):
                if isinstance(expr, ir.AffineDimExpr):
                    extents[expr.position] = shape[pos]
        return extents, iters
    if name == "linalg.reduce":
        shape = _shape(op.operands[0])
        dims = set(op.attributes["dimensions"])
        return list(shape), ["reduction" if i in dims else "parallel" for i in range(len(shape))]
    if name in ("linalg.transpose", "linalg.fill", "linalg.map", "linalg.broadcast"):
        shape = _shape(op.operands[len(op.operands) - 1])
        return list(shape), ["parallel"] * len(shape)
    if name == "linalg.matmul":
        (m, k), (_, n) = _shape(op.operands[0]), _shape(op.operands[1])
        return [m, n, k], ["parallel", "parallel", "reduction"]
    if name == "linalg.batch_matmul":
        (b, m, k), (_, _, n) = _shape(op.operands[0]), _shape(op.operands[1])
        return [b, m, n, k], ["parallel", "parallel", "parallel", "reduction"]
    raise ValueError(f"no iteration domain for {name}")


def lanes(op: Any) -> int:
    """Vector lanes for ``op``: the vector width over its widest element type."""
    bits = max([_bits(v.type) for v in op.operands] + [8])
    return max(1, VECTOR_BITS // bits)


def _positive(expr: Any) -> bool:
    """No product by a constant <= 0 anywhere in ``expr``."""
    from mlir import ir

    if isinstance(expr, ir.AffineMulExpr):
        for side in (expr.lhs, expr.rhs):
            if isinstance(side, ir.AffineConstantExpr) and side.value <= 0:
                return False
    if isinstance(expr, ir.AffineBinaryExpr):
        return _positive(expr.lhs) and _positive(expr.rhs)
    return True


def tileable(op: Any) -> bool:
    """Whether tiling ``op`` is safe: an indexing map with a negative coefficient (NumPy's
    negative-step slices, ``x[::-2]``) aborts the process in linalg's tiling (an assertion,
    ``nonpositive multiplying coefficient``; llvm-project #113021), so such ops run as loops."""
    if op.name != "linalg.generic":
        return True
    maps = [a.value for a in op.attributes["indexing_maps"]]
    return all(_positive(e) for m in maps for e in m.results)


def plan(op: Any) -> tuple[list[int], list[int]] | None:
    """(tile sizes, vector sizes) for one op; None leaves it to the loop lowering."""
    if not tileable(op):
        return None
    extents, iters = domain(op)
    n = len(extents)
    if n == 0 or any(e is None or e <= 0 for e in extents):
        return None
    sizes = [int(e) for e in extents if e is not None]
    if op.name in _MATMULS:
        tiles = [1] * (n - 3) + list(MATMUL_TILES)
        tiles = [min(t, e) for t, e in zip(tiles, sizes, strict=True)]
        return tiles, list(tiles)
    width = lanes(op)
    tiles, vectors = [1] * n, [1] * n
    last = n - 1
    if iters[last] == "parallel":
        if sizes[last] > width:
            tiles[last] = vectors[last] = width
        else:
            tiles[last], vectors[last] = 0, sizes[last]
    elif sizes[last] <= REDUCTION_MAX:
        tiles[last], vectors[last] = 0, sizes[last]
    else:
        tiles[last] = vectors[last] = REDUCTION_CHUNK
    for i in range(last):
        if sizes[i] == 1:
            tiles[i] = 0
    bf16 = _touches_bf16(op) and workarounds.enabled("bf16-power-of-two-vectors")
    minmax = iters[last] == "reduction" and _minmax(op) and workarounds.enabled("unmasked-minmax")
    extract = _extract_below_loop_rank(op, n) and workarounds.enabled("unmasked-nd-extract")
    unmasked = minmax or extract
    if unmasked:
        # No mask: chunks that divide the row (of a power of two where bfloat16 is touched:
        # bf16-power-of-two-vectors), at most a vector (a reduction's chunk) long.
        n = sizes[last]
        cap = (REDUCTION_CHUNK if n > REDUCTION_MAX else n) if minmax else min(n, width)
        chunk = max(d for d in range(1, cap + 1) if n % d == 0 and (not bf16 or d & (d - 1) == 0))
        tiles[last], vectors[last] = (0 if chunk == n else chunk), chunk
    if bf16:  # masked past the extent
        vectors = [
            v if unmasked and i == last else 1 << (v - 1).bit_length()
            for i, v in enumerate(vectors)
        ]
    return tiles, vectors


def _body_ops(op: Any) -> list[Any]:
    return [inner for region in op.regions for block in region.blocks for inner in block]


def _touches_bf16(op: Any) -> bool:
    """Whether ``op`` reads or writes bfloat16. Its body may compute in float32 between
    conversions, but LLVM's InstCombine narrows ``fptrunc(fsub(fpext a, fpext b))`` back to a
    bfloat16 ``fsub``, so any op that touches bfloat16 may compute on bfloat16 vectors."""
    return any(_element(v.type) == "bf16" for v in op.operands)


def _extract_below_loop_rank(op: Any, loops: int) -> bool:
    """A ``tensor.extract`` in the body from a tensor of fewer dims than the op has loops (a
    gather with ids of rank 2 or more): masked, MLIR 22.1.8's vectorizer gives its contiguous
    read a mask of the loop rank, which fails verification (``unmasked-nd-extract``)."""
    from mlir import ir

    return any(
        inner.name == "tensor.extract" and ir.ShapedType(inner.operands[0].type).rank < loops
        for inner in _body_ops(op)
    )


def _minmax(op: Any) -> bool:
    """A float max or min in the body (a reduction's combiner, when the last dim reduces)."""
    names = ("arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf")
    return any(inner.name in names for inner in _body_ops(op))


def blas_bound(op: Any) -> bool:
    """Whether the BLAS stage will take this matmul (the conditions of ``blas.substitute``)."""
    from mlir import ir

    if op.name not in _MATMULS:
        return False
    types = {str(ir.ShapedType(v.type).element_type) for v in op.operands}
    return len(types) == 1 and types <= {"f32", "f64"}


def structured_ops(module: Any) -> list[Any]:
    """The structured linalg ops of the module (none is nested in another), in program order."""
    return [op for op in _walk(module.operation) if op.name in _STRUCTURED]


def _walk(op: Any) -> Iterator[Any]:
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                child = child.operation
                yield child
                if child.name not in _STRUCTURED:
                    yield from _walk(child)


def embed(module: Any, body: str) -> None:
    """Append ``body`` (transform ops on ``%root``) as the module's private schedule."""
    from mlir import ir

    text = (
        f'module @{SCHEDULE} attributes {{sym_visibility = "private", '
        "transform.with_named_sequence} {\n"
        "  transform.named_sequence @__transform_main(%root: !transform.any_op "
        "{transform.readonly}) {\n" + body + "    transform.yield\n  }\n}\n"
    )
    module.body.append(ir.Operation.parse(text))


def _tag(op: Any, key: str, value: int) -> str:
    from mlir import ir

    op.attributes[key] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
    return (
        f'transform.structured.match attributes {{"{key}" = {value} : i64}} in %arg '
        ": (!transform.any_op) -> !transform.any_op"
    )


def _suppressed(body: list[str]) -> str:
    inner = "".join(f"        {line}\n" for line in body)
    return (
        "    transform.sequence %root : !transform.any_op failures(suppress) {\n"
        f"      ^bb0(%arg: !transform.any_op):\n{inner}    }}\n"
    )


def plan_vectors(module: Any) -> None:
    """The ``vector-planned`` stage: tag every structured op except BLAS-bound matmuls (and the
    zero fill before each, which BLAS drops: gemm then overwrites) and schedule its tiling and
    masked vectorization."""
    ops = structured_ops(module)
    blas_outputs = [op.operands[len(op.operands) - 1] for op in ops if blas_bound(op)]
    parts = []
    for index, op in enumerate(ops):
        if blas_bound(op):
            continue
        if op.name == "linalg.fill" and any(op.results[0] == v for v in blas_outputs):
            continue
        planned = plan(op)
        if planned is None:
            continue
        tiles, vectors = planned
        body = [f"%m = {_tag(op, VECTOR_TAG, index)}"]
        target = "%m"
        if any(tiles):
            loops = sum(1 for t in tiles if t)
            names = ", ".join(["%t"] + [f"%l{j}" for j in range(loops)])
            results = ", ".join(["!transform.any_op"] * (loops + 1))
            body.append(
                f"{names} = transform.structured.tile_using_for %m tile_sizes "
                f"[{', '.join(map(str, tiles))}] : (!transform.any_op) -> ({results})"
            )
            target = "%t"
        extract = " {vectorize_nd_extract}" if op.name == "linalg.generic" else ""
        body.append(
            f"transform.structured.vectorize {target} vector_sizes "
            f"[{', '.join(map(str, vectors))}]{extract} : !transform.any_op"
        )
        parts.append(_suppressed(body))
    parts.append(
        '    %funcs = transform.structured.match ops{["func.func"]} in %root '
        ": (!transform.any_op) -> !transform.any_op\n"
        "    transform.apply_patterns to %funcs {\n"
        "      transform.apply_patterns.canonicalization\n"
        "    } : !transform.any_op\n"
    )
    embed(module, "".join(parts))


def plan_rows(module: Any) -> None:
    """The ``rows-planned`` stage: for each row group (softmax, layer norm: ``fusion.row_groups``)
    tile its last op one row per ``scf.forall`` iteration and fuse the producers into that loop,
    so max, exp, sum and divide each run over a row that stays in L1."""
    parts = []
    groups = fusion.row_groups(module)
    groups = [(r, ps) for r, ps in groups if all(tileable(op) for op in (r, *ps))]
    for group, (root, producers) in enumerate(groups):
        fusion.fresh_inits(producers)
        rank = len(root.results[0].type.shape)
        tiles = ", ".join(["1"] * (rank - 1) + ["0"])
        body = [
            f"%r = {_tag(root, ROW_TAG, group)}",
            f"%t, %loop0 = transform.structured.tile_using_forall %r tile_sizes [{tiles}] "
            ": (!transform.any_op) -> (!transform.any_op, !transform.any_op)",
        ]
        for i, producer in enumerate(producers):
            body.append(f"%p{i} = {_tag(producer, ROW_PRODUCER_TAG, group * 1000 + i)}")
            body.append(
                f"%f{i}, %loop{i + 1} = transform.structured.fuse_into_containing_op %p{i} "
                f"into %loop{i} : (!transform.any_op, !transform.any_op) -> "
                "(!transform.any_op, !transform.any_op)"
            )
        parts.append(_suppressed(body))
    embed(module, "".join(parts))


def not_vectorized(text: str) -> list[str]:
    """The ops of a ``vectorized`` stage text that still carry their tag (the vectorizer
    refused them; they run as loops)."""
    import re

    return re.findall(rf'(linalg\.[a-z_]+)[^\n]*"?{VECTOR_TAG}"? = (\d+)', text)


__all__ = [
    "SCHEDULE",
    "blas_bound",
    "domain",
    "embed",
    "lanes",
    "not_vectorized",
    "plan",
    "tileable",
    "plan_rows",
    "plan_vectors",
    "structured_ops",
]
