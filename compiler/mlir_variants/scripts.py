"""IR features (what entry preconditions test) and the transform scripts of script entries.

Both read only IR text (tile sizes depend on each op's loops); the catalog names them.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from typing import Any

from ..vector.gathers import linear

# --------------------------------------------------------------------------------------------
# IR features (coarse, by text; checked where the entry runs)

_OP = re.compile(r"\b((?:linalg|tensor|math|memref|vector|affine|scf|bufferization)\.[a-z_]+)")
_MINMAX = re.compile(r"arith\.(?:maximumf|minimumf|maxnumf|minnumf)")
_EXTRACT = re.compile(r"\btensor\.extract\s")


def features(text: str) -> set[str]:
    """Op names present (``linalg.generic``...) and shape facts: ``unit-dim`` (a size-1 dim in a
    tensor/memref of numbers), ``rank0``, ``dynamic``, ``vector`` (any vector op),
    ``single-iter-loop`` (``affine.for 0 to 1``), ``affine-nonconst-bound``,
    ``affine-nonunit-step`` (an ``affine.for`` of step 2 or more),
    ``rank-reducing-insert`` (a tensor.insert_slice into a higher rank), ``minmax-reduction``
    (a reduction combining with max/min), ``negative-map`` (an indexing map with a negative
    coefficient: a reversed slice), ``copy-into-rank-reducing-subview`` (a ``memref.copy`` in a
    module with a rank-reducing ``memref.subview``), ``rank0-extract`` (a ``linalg.generic`` of
    no loops whose body has a ``tensor.extract``: a gather of one element)."""
    found = set(_OP.findall(text))
    for results in re.findall(r"affine_map<\([^)]*\)(?:\[[^\]]*\])? -> \(([^>]*)\)>", text):
        if re.search(r"(^|[(,\s])-\s*d\d", results) or "* -" in results:  # -d0, d1 - d0
            found.add("negative-map")
    if any(op.startswith("vector.") for op in found):
        found.add("vector")
    if re.search(r"affine\.for %\w+ = 0 to 1 \{", text):
        found.add("single-iter-loop")
    for bound in re.findall(r"affine\.for %[\w#]+ = ([^{]*)\{", text):
        if "%" in bound or "min " in bound or "max " in bound:
            found.add("affine-nonconst-bound")
        step = re.search(r"\bstep (\d+)\s*$", bound.strip())
        if step and int(step.group(1)) > 1:
            found.add("affine-nonunit-step")
    subviews = r"memref\.subview [^:]*: memref<([^,>]*)[^>]*>+ to memref<([^,>]*)"
    if "memref.copy" in text and any(
        source.count("x") > result.count("x") for source, result in re.findall(subviews, text)
    ):
        found.add("copy-into-rank-reducing-subview")
    pattern = r"tensor\.insert_slice [^:]*: tensor<([^>]*)> into tensor<([^>]*)>"
    for source, destination in re.findall(pattern, text):
        if source.count("x") < destination.count("x"):
            found.add("rank-reducing-insert")
    for match in re.finditer(r"linalg\.(reduce|generic)\b(.*?)linalg\.yield", text, re.S):
        kind, body = match.groups()
        if (kind == "reduce" or '"reduction"' in body) and _MINMAX.search(body):
            found.add("minmax-reduction")
        if kind == "generic" and "iterator_types = []" in body and _EXTRACT.search(body):
            found.add("rank0-extract")
    for body in re.findall(r"\b(?:tensor|memref)<([^<>,]*)", text):
        parts = body.split("x")
        dims, element = parts[:-1], parts[-1].strip()
        if not re.fullmatch(r"(?:[fi]\d+|bf16)", element):  # bf16 is a number too
            continue
        if not dims:
            found.add("rank0")
        if "1" in dims:
            found.add("unit-dim")
        if "?" in dims:
            found.add("dynamic")
    return found


_FOR = re.compile(r"^\s*affine\.for (%[\w#]+) = (-?\d+) to (-?\d+)(?: step (\d+))? \{")
_ANY_FOR = re.compile(r"^\s*affine\.for (%[\w#]+) = ")
_LOAD = re.compile(r"affine\.load (%[\w#]+)\[([^\]]*)\]")
_STORE = re.compile(r"affine\.store %[\w#]+, (%[\w#]+)\[([^\]]*)\]")


def _invariant_stores(text: str) -> list[tuple[str, int, bool]]:
    """Each ``affine.store`` inside a loop to an index that does not use that loop's own
    induction variable: (memref, how many times it runs: once per iteration of its enclosing
    loops of constant bounds, a loop of other bounds counting once, whether it is an in-place
    update: the same loop body loaded that very index)."""
    found: list[tuple[str, int, bool]] = []
    # (induction variable, trip count, loads in the body) per open region
    loops: list[tuple[str | None, int, set[tuple[str, str]]]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("}"):
            if loops:
                loops.pop()
            continue
        if loops:
            for memref, index in _LOAD.findall(line):
                loops[-1][2].add((memref, index.strip()))
            store = _STORE.search(line)
            variable = loops[-1][0]
            if store and variable is not None:
                memref, index = store.group(1), store.group(2).strip()
                if not re.search(re.escape(variable) + r"\b", index):
                    runs = 1
                    for _, trips, _ in loops:
                        runs *= trips
                    found.append((memref, runs, (memref, index) in loops[-1][2]))
        if stripped.endswith("{"):
            bounded, loop = _FOR.match(line), _ANY_FOR.match(line)
            trips = 1
            if bounded:
                low, high, step = int(bounded.group(2)), int(bounded.group(3)), bounded.group(4)
                trips = max(0, -(-(high - low) // int(step or 1)))
            loops.append((loop.group(1) if loop else None, trips, set()))
    return found


def reduction_updates(text: str) -> dict[str, int]:
    """Per memref, how many times its in-place updates run: an ``affine.store`` to an index that
    the same loop body loaded from and that does not use the loop's own induction variable (a
    reduction's accumulator, read and written by every iteration), counted once per iteration
    of its enclosing loops (constant bounds; a loop of other bounds counts once)."""
    counts: dict[str, int] = {}
    for memref, runs, update in _invariant_stores(text):
        if update:
            counts[memref] = counts.get(memref, 0) + runs
    return counts


def replicated_writes(text: str) -> dict[str, int]:
    """Per memref, how many times plain stores run that write the same cell in every iteration
    of their loop (an index without the loop's induction variable, not an update): a fill's
    stores, once ``affine-loop-unroll`` spelled each cell out, put inside a loop."""
    counts: dict[str, int] = {}
    for memref, runs, update in _invariant_stores(text):
        if not update:
            counts[memref] = counts.get(memref, 0) + runs
    return counts


def duplicated_reduction(before: str, after: str) -> bool:
    """Did a pass make an in-place reduction update of a memref run more often (a reduction
    cloned into a consumer while its own loop stayed, or moved into a loop of more iterations
    than its own: its sum then counts elements twice)? Memrefs the pass made are left out."""
    was = reduction_updates(before)
    now = reduction_updates(after)
    return any(count > was[memref] for memref, count in now.items() if memref in was)


def replicated_init(before: str, after: str) -> bool:
    """Did a pass put a producer's stores of fixed cells inside a loop of the consumer, so they
    run more often than before (``affine-loop-fusion`` fusing an unrolled fill into a
    reduction's column loop re-zeroes the columns already computed: llvm PR #196604)? Memrefs
    the pass made are left out."""
    was = replicated_writes(before)
    for memref, count in replicated_writes(after).items():
        if re.search(re.escape(memref) + r"\b", before) and count > was.get(memref, 0):
            return True
    return False


_BF16_VECTOR = re.compile(r"vector<(?:\d+x)*(\d+)xbf16>")
_MASKED_WRITE_MAP = re.compile(
    r"vector\.transfer_write [^\n]*\], %[\w#.]+ \{[^}\n]*permutation_map = "
    r"(#[\w$.]+|affine_map<\([^)]*\) -> \([^)]*\)>)"
)
_MAP_ALIAS = re.compile(r"^(#[\w$.]+) = (affine_map<[^\n]*>)$", re.M)
_MAP = re.compile(r"affine_map<\(([^)]*)\) -> \(([^)]*)\)>")


def masked_projected_writes(text: str) -> int:
    """How many masked ``vector.transfer_write`` of ``text`` have a permutation map that drops
    memref dims other than leading ones (``(d0, d1, d2) -> (d0, d2)``)."""
    aliases = dict(_MAP_ALIAS.findall(text))
    count = 0
    for written in _MASKED_WRITE_MAP.findall(text):
        found = _MAP.fullmatch(aliases.get(written, written))
        if found is None:
            continue
        dims = [d.strip() for d in found.group(1).split(",") if d.strip()]
        results = [r.strip() for r in found.group(2).split(",") if r.strip()]
        if not results or any(r not in dims for r in results) or len(results) >= len(dims):
            continue
        count += results != dims[len(dims) - len(results) :]
    return count


def masked_projected_write(before: str, after: str) -> bool:
    """Did an entry make a masked ``vector.transfer_write`` whose permutation map drops memref
    dims other than leading ones? ``convert-vector-to-scf`` (TransferWriteNonPermutationLowering)
    appends the dropped dims to the mask, not where the vector gets them: invalid IR (llvm PR
    #144893, open)."""
    return masked_projected_writes(after) > masked_projected_writes(before)


#: The most lanes a vector an entry makes may have (``huge_vectors``).
VECTOR_LANES_MAX = 1024
_VECTOR_SHAPE = re.compile(r"vector<((?:\d+x)*\d+)x[a-z]")


def huge_vectors(before: str, after: str) -> bool:
    """Does an entry's output ``after`` hold a vector of more than ``VECTOR_LANES_MAX`` lanes?
    Vectorizing a whole op (no tiling) makes one as large as its iteration space, and LLVM's
    code generation time grows faster than its size: an ``attend`` of T = 8, 16, 24, 32 on
    ``mlir:buf-vectorize-children`` made vectors of 256 to 4096 lanes and compiled in 0.4, 2.7,
    18 and 52 s; T = 59 ran past the harness's 120 s (a hang finding that says nothing)."""
    del before
    return any(
        math.prod(int(d) for d in shape.split("x")) > VECTOR_LANES_MAX
        for shape in _VECTOR_SHAPE.findall(after)
    )


_GATHER_BASE = re.compile(r"vector\.gather (%[\w#.]+)\[")
#: A slice or view: its name, sizes, strides and the source's shape.
_SLICE = re.compile(
    r"(%[\w#.]+) = (?:tensor\.extract_slice|memref\.subview) %[\w#.]+\[[^\]]*\] "
    r"\[([^\]]*)\] \[([^\]]*)\] : (?:tensor|memref)<((?:[0-9?]+x)*)[a-z]\w*[,>]"
)
#: A reshape or cast of a tensor (a gather through it reads the buffer of its source).
_RESHAPE = re.compile(
    r"(%[\w#.]+) = (?:tensor\.(?:expand_shape|collapse_shape|cast)|memref\.(?:expand_shape|"
    r"collapse_shape|cast)) (%[\w#.]+)"
)
_GATHER_MEMREF = re.compile(
    r"vector\.gather [^\n]*: memref<((?:[0-9?]+x)*)[a-z]\w*, strided<\[([^\]]*)\]"
)


def _ints(text: str) -> list[int] | None:
    parts = [p.strip() for p in text.split(",")] if text.strip() else []
    return [int(p) for p in parts] if all(p.lstrip("-").isdigit() for p in parts) else None


def strided_gather(before: str, after: str) -> bool:
    """Does an entry's output ``after`` gather (``vector.gather``) from a slice or a memref whose
    layout is not row-major contiguous? ``vectorize_nd_extract`` gives the gather *linear*
    indices over the tensor's shape (``row * width + column``), and bufferization keeps them
    on whatever view the tensor becomes. ``convert-vector-to-llvm`` adds them to the base
    address as memory offsets, so (upstream: the indices are logical, not physical; discourse
    RFC "semantics of vector.gather indices with strided memrefs", llvm PR #181357, open):
    - an innermost stride other than 1 leaves the gather unconverted, and LLVM translation
      fails on the casts around it (llvm PR #186990 documents it; ``x[..., 1::2]`` then a
      gather);
    - a unit innermost stride with rows apart (``x[..., 2:6]`` of a (3, 3): a
      ``memref<3x1xf32, strided<[3, 1], offset: 2>>``) reads the wrong elements, a silent
      wrong answer (``mlir:tile-vectorize-static``, a 60 s session of held-out set 21).
    ``cpu-vector`` rewrites such gathers itself (``compiler.vector.gathers``); an entry's
    output is upstream's alone. A slice whose sizes or strides are not constants counts as
    not contiguous. The output alone tells."""
    del before
    slices = {name: rest for name, *rest in _SLICE.findall(after)}
    sources = dict(_RESHAPE.findall(after))
    for base in _GATHER_BASE.findall(after):
        seen = set()
        while base in sources and base not in seen:  # through reshapes to the buffer
            seen.add(base)
            base = sources[base]
        if base not in slices:
            continue
        sizes, steps, shape = slices[base]
        dims = _ints(shape.rstrip("x").replace("x", ","))
        extents, strides = _ints(sizes), _ints(steps)
        if extents is None or strides is None or dims is None or len(dims) != len(extents):
            return True
        physical = [step * math.prod(dims[d + 1 :]) for d, step in enumerate(strides)]
        if not linear(extents, physical):
            return True
    for shape, layout in _GATHER_MEMREF.findall(after):
        extents, strides = _ints(shape.rstrip("x").replace("x", ",")), _ints(layout)
        if extents is None or strides is None or not linear(extents, strides):
            return True
    return False


def odd_bf16_vectors(before: str, after: str) -> bool:
    """Does an entry's output ``after`` hold bfloat16 vectors of more than 8 lanes, not a power
    of two (LLVM 22.1.8's X86 code generation aborts on them)? The output alone tells."""
    del before
    return any(n > 8 and n & (n - 1) for n in map(int, _BF16_VECTOR.findall(after)))


# --------------------------------------------------------------------------------------------
# Transform scripts (generated from the IR they run on: tile sizes depend on each op's loops)


@dataclass(frozen=True)
class LinalgOp:
    """A structured op as the transform scripts see it, in ``match interface{LinalgOp}`` order."""

    name: str
    ranges: tuple[int, ...]  # static loop extents; DYNAMIC where unknown
    iterators: tuple[str, ...]
    body: str  # "extract" (a gather on tensors), "load" (on buffers), "combiner", or ""


DYNAMIC = -9223372036854775808
# linalg ops that are not LinalgOp (match interface{LinalgOp} does not return them)
_NOT_LINALG_OP = (
    "linalg.yield", "linalg.index", "linalg.pack", "linalg.unpack", "linalg.softmax",
    "linalg.winograd_filter_transform", "linalg.winograd_input_transform",
    "linalg.winograd_output_transform",
)  # fmt: skip


def linalg_ops(text: str) -> list[LinalgOp]:
    """Every structured op of ``text`` with its loop ranges (from the indexing maps, or the
    named op's type rules), iterator types and what its body needs."""
    from mlir import ir

    found: list[LinalgOp] = []

    def shape(value: Any) -> list[int]:
        return list(value.type.shape) if isinstance(value.type, ir.ShapedType) else []

    def visit(op: Any) -> Any:
        name = op.name
        if not name.startswith("linalg.") or name in _NOT_LINALG_OP:
            return ir.WalkResult.ADVANCE
        printed = str(op)
        body = "load" if "memref.load" in printed else ""
        body = "extract" if "tensor.extract " in printed else body
        try:  # the vectorizer matches a reduction only if its out argument has one use
            block = op.regions[0].blocks[0]
            outs = list(block.arguments)[-max(1, len(op.results)) :]
            if any(len(list(a.uses)) > 1 for a in outs):
                body = body or "combiner"
        except (IndexError, AttributeError):
            pass
        operands = list(op.operands)
        if "indexing_maps" in op.attributes:
            maps = [ir.AffineMapAttr(a).value for a in op.attributes["indexing_maps"]]
            extent = [DYNAMIC] * maps[0].n_dims
            for operand, amap in zip(operands, maps, strict=False):
                dims = shape(operand)
                for k, expr in enumerate(amap.results):
                    if isinstance(expr, ir.AffineDimExpr) and k < len(dims):
                        extent[expr.position] = dims[k]
            if "iterator_types" in op.attributes:
                its = [
                    str(a).split("<")[-1].rstrip(">").strip('"')
                    for a in ir.ArrayAttr(op.attributes["iterator_types"])
                ]
            elif name in ("linalg.matmul", "linalg.batch_matmul"):
                its = ["parallel"] * (len(extent) - 1) + ["reduction"]
            else:
                its = ["parallel"] * len(extent)
            found.append(LinalgOp(name, tuple(extent), tuple(its), body))
        elif name == "linalg.matmul":
            (m, k), (_, n) = shape(operands[0]), shape(operands[1])
            found.append(LinalgOp(name, (m, n, k), ("parallel", "parallel", "reduction"), body))
        elif name == "linalg.batch_matmul":
            (b, m, k), (_, _, n) = shape(operands[0]), shape(operands[1])
            its = ("parallel",) * 3 + ("reduction",)
            found.append(LinalgOp(name, (b, m, n, k), its, body))
        elif name == "linalg.reduce":
            dims = shape(operands[0])
            reduced = {int(x) for x in re.findall(r"-?\d+", str(op.attributes["dimensions"]))}
            its = tuple("reduction" if i in reduced else "parallel" for i in range(len(dims)))
            found.append(LinalgOp(name, tuple(dims), its, body))
        else:  # fill, transpose, broadcast, copy, map, elementwise and named elementwise ops
            dims = shape(operands[-1])
            found.append(LinalgOp(name, tuple(dims), ("parallel",) * len(dims), body))
        return ir.WalkResult.ADVANCE

    with ir.Context():
        ir.Module.parse(text).operation.walk(visit)
    return found


def _rng(entry: str, index: int, op: LinalgOp) -> Any:
    """Tile sizes for op ``index``: a function of the entry and the op alone, so a variant
    compiles the same way every time (and after unrelated entries are dropped)."""
    import numpy as np

    key = f"{entry}|{index}|{op.name}|{op.ranges}".encode()
    return np.random.default_rng(zlib.crc32(key))


_HEADER = (
    "module attributes {transform.with_named_sequence} {\n"
    "  transform.named_sequence @__transform_main(%root: !transform.any_op "
    "{transform.readonly}) {\n"
)
_FOOTER = "    transform.yield\n  }\n}\n"
_ANY = "!transform.any_op"
# Vector lowering inside the script (vector.lower_broadcast is left out: with canonicalization it
# never terminates, tests/upstream/test_lower_broadcast_hang.py).
_VECTOR_PATTERNS = (
    f'    %funcs = transform.structured.match ops{{["func.func"]}} in %root : ({_ANY}) -> {_ANY}\n'
    "    transform.apply_patterns to %funcs {\n"
    "      transform.apply_patterns.vector.lower_masked_transfers\n"
    "      transform.apply_patterns.vector.transfer_permutation_patterns\n"
    "      transform.apply_patterns.vector.reduction_to_contract\n"
    '      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"\n'
    '      transform.apply_patterns.vector.lower_transpose lowering_strategy = "eltwise"\n'
    "      transform.apply_patterns.vector.lower_multi_reduction "
    'lowering_strategy = "innerreduction"\n'
    "      transform.apply_patterns.canonicalization\n"
    f"    }} : {_ANY}\n"
)


def _split_all(ops: list[LinalgOp]) -> list[str]:
    handles = ", ".join(f"%op{i}" for i in range(len(ops)))
    types = ", ".join(_ANY for _ in ops)
    match = "transform.structured.match interface{LinalgOp} in %root"
    return [
        f"    %all = {match} : ({_ANY}) -> {_ANY}\n",
        f"    {handles} = transform.split_handle %all : ({_ANY}) -> ({types})\n",
    ]


def tile_vectorize(text: str, entry: str, masked: bool, only: str | None = None) -> str:
    """Tile every structured op (``tile_using_for``) and vectorize the tile: ``masked`` tiles by
    sizes from {1, 2, 4} and vectorizes with those vector sizes (partial tiles are masked);
    otherwise tile sizes divide the extents and ``vectorize`` needs no sizes. ``only`` keeps one
    op name (``linalg.transpose``). Ops the vectorizer cannot take are left alone."""
    ops = linalg_ops(text)
    lines = [_HEADER, *(_split_all(ops) if ops else [])]
    for i, op in enumerate(ops):
        rng = _rng(entry, i, op)
        if only is not None and op.name != only:
            continue
        if op.body == "load" or (op.body == "combiner" and "reduction" in op.iterators):
            continue  # a gather on buffers, or a combiner the vectorizer does not match
        extra = " {vectorize_nd_extract}" if op.body == "extract" else ""
        if op.name == "linalg.fill" and rng.random() < 0.5:
            continue
        if not op.ranges:
            lines.append(f"    transform.structured.vectorize %op{i}{extra} : {_ANY}\n")
            continue
        if not masked and DYNAMIC in op.ranges:
            continue  # a dynamic extent needs vector sizes: masked only
        sizes = []
        for extent in op.ranges:
            if masked:
                sizes.append(int(rng.choice([1, 2, 4])))
            else:
                divisors = [d for d in (1, 2, 3, 4) if extent % d == 0] + [extent]
                sizes.append(int(rng.choice(divisors)))
        listed = ", ".join(map(str, sizes))
        loops = ", ".join(f"%l{i}_{j}" for j in range(len(sizes)))
        results = ", ".join([_ANY] * (1 + len(sizes)))
        lines.append(
            f"    %t{i}, {loops} = transform.structured.tile_using_for %op{i} "
            f"tile_sizes [{listed}] : ({_ANY}) -> ({results})\n"
        )
        vector_sizes = f" vector_sizes [{listed}]" if masked else ""
        lines.append(f"    transform.structured.vectorize %t{i}{vector_sizes}{extra} : {_ANY}\n")
    return "".join([*lines, _VECTOR_PATTERNS, _FOOTER])


def _vectorize_function() -> str:
    return (
        f'    %f = transform.structured.match ops{{["func.func"]}} in %root : ({_ANY}) -> {_ANY}\n'
        "    %v = transform.structured.vectorize_children_and_apply_patterns %f "
        f"{{vectorize_nd_extract}} : ({_ANY}) -> {_ANY}\n"
    )


def vectorize_children(text: str, entry: str) -> str:
    """``vectorize_children_and_apply_patterns`` on the function: each op with static shapes is
    vectorized whole (no tiling, no masks)."""
    return _HEADER + _vectorize_function() + _VECTOR_PATTERNS + _FOOTER


def tile_fuse(text: str, entry: str, vectorize: bool = False) -> str:
    """``transform.structured.fuse``: tile the last structured op (the output's) along its
    parallel loops (sizes from {1, 2, 3}) and fuse its producers into the loops; then maybe
    vectorize the function."""
    ops = linalg_ops(text)
    lines = [_HEADER]
    if ops:
        lines += _split_all(ops)
        last = len(ops) - 1
        rng = _rng(entry, last, ops[last])
        its = ops[last].iterators
        sizes = [int(rng.choice([1, 2, 3])) if it == "parallel" else 0 for it in its]
        if any(sizes):
            tiled = sum(1 for s in sizes if s)
            loops = ", ".join(f"%l{j}" for j in range(tiled))
            results = ", ".join([_ANY] * (1 + tiled))
            lines.append(
                f"    %fused, {loops} = transform.structured.fuse %op{last} "
                f"tile_sizes [{', '.join(map(str, sizes))}] : ({_ANY}) -> ({results})\n"
            )
    if vectorize:
        lines += [_vectorize_function(), _VECTOR_PATTERNS]
    return "".join([*lines, _FOOTER])


_LOWER_PACK = """\
    %packs = transform.structured.match ops{["linalg.pack"]} in %root : (!transform.any_op) -> !transform.op<"linalg.pack">
    transform.foreach %packs : !transform.op<"linalg.pack"> {
    ^bb0(%p: !transform.op<"linalg.pack">):
      %pad, %expand, %tr = transform.structured.lower_pack %p : (!transform.op<"linalg.pack">) -> (!transform.op<"tensor.pad">, !transform.op<"tensor.expand_shape">, !transform.op<"linalg.transpose">)
    }
    %unpacks = transform.structured.match ops{["linalg.unpack"]} in %root : (!transform.any_op) -> !transform.op<"linalg.unpack">
    transform.foreach %unpacks : !transform.op<"linalg.unpack"> {
    ^bb0(%u: !transform.op<"linalg.unpack">):
      %e, %tr2, %col, %slice = transform.structured.lower_unpack %u : (!transform.op<"linalg.unpack">) -> (!transform.op<"tensor.empty">, !transform.op<"linalg.transpose">, !transform.op<"tensor.collapse_shape">, !transform.op<"tensor.extract_slice">)
    }
"""  # noqa: E501 - transform IR, one op per line


def lower_pack(text: str, entry: str) -> str:
    """Lower every linalg.pack / unpack (one-shot-bufferize does not take a padding pack)."""
    return _HEADER + _LOWER_PACK + _FOOTER
