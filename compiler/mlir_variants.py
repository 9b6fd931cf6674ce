"""``mlir:<variant>`` backends: upstream MLIR pass pipelines around our own stages.

A variant is an ordered list of catalog entries; its name spells them, ``mlir:`` + the entry ids
joined by ``.`` (``mlir:fold-unit-extent-dims.fuse-elementwise.to-affine-loops.affine-loop-fusion``;
``.`` because ``+`` already joins backend names in signatures and ``+mlir-runtime``). Each entry
is a pass-pipeline fragment (or a transform-dialect script) and the point where it runs:

    built module --[tensor entries]--> bufferized (one-shot-bufferize options may be replaced by a
    "bufferize" entry) --[buffer entries]--> [one "lower" entry --[loops entries]]
    --> vector-fixup (only when a vectorizing entry is in the variant) --> lowered

``bufferized`` and ``lowered`` are our own stages (``compiler.pipelines``). Every entry is one
stage named after it, so a crash or a wrong answer is attributed to the entry by the harness.
An entry's precondition (IR features: op names, ``unit-dim``, ``dynamic``...) is checked on the
IR the stage receives; where it does not hold the stage passes its input through and the reason
is kept in ``Artifacts.notes["skipped"]``. ``known_broken`` notes name the upstream bugs an entry
hits on some IR (found by the research campaign, see ``tests/upstream/``): such IR skips the
entry unless the variant is spelled ``mlir:known-broken:...``, which confirms they still occur.

Stage commands are plain ``mlir-opt --pass-pipeline=...`` runs on the previous stage's saved
text; a transform script is written next to the module by the command itself (a here-document)
and applied with ``transform-preload-library`` + ``transform-interpreter``; a skipped entry's
command copies its input. ``python -m compiler.mlir_variants`` prints the catalog.

The variants JIT at LLVM -O0 by default (``@O3`` asks for more): they test MLIR's passes, and
LLVM's optimizer is covered by the shipped targets.
"""

from __future__ import annotations

import functools
import re
import shlex
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import backends, pipelines, tools
from .driver import Artifacts
from .frontend.graph import Graph
from .pipelines import BUFFERIZE, BUFFERIZED, LOWERED, OPTIMIZE, Stage, Target

PREFIX = "mlir:"
KNOWN_BROKEN = "known-broken:"
SEPARATOR = "."
#: ``mlir:*`` in ``--backends``: a variant drawn per case (the harness draws it).
DRAW = PREFIX + "*"
RUNTIME_SUFFIX = "+mlir-runtime"
#: Where entries run, in pipeline order.
STAGES = ("tensor", "bufferize", "buffer", "lower", "loops")
DEFAULT_LEVEL = 0

# Lowers what vectorizing entries leave (LOWER has no vector conversion): masks and
# multi-reductions first, transfers to loops of loads, then the vector dialect to LLVM.
VECTOR_FIXUP = (
    "builtin.module(func.func(lower-vector-mask, lower-vector-multi-reduction), "
    "convert-vector-to-scf{full-unroll=true}, canonicalize, "
    "convert-vector-to-llvm, convert-ub-to-llvm, canonicalize)"
)
# pipelines.COMPLETE plus vectors: what finishes a prefix of a variant (attribution).
VARIANT_COMPLETE = (
    "builtin.module(one-shot-bufferize, bufferization-lower-deallocations, "
    "convert-bufferization-to-memref, func.func(lower-vector-mask, lower-vector-multi-reduction), "
    "convert-vector-to-scf{full-unroll=true}, func.func(convert-linalg-to-loops), "
    "expand-strided-metadata, lower-affine, convert-scf-to-cf, convert-vector-to-llvm, "
    "finalize-memref-to-llvm, convert-math-to-llvm, convert-math-to-libm, convert-arith-to-llvm, "
    "convert-ub-to-llvm, convert-index-to-llvm, convert-func-to-llvm, convert-cf-to-llvm, "
    "reconcile-unrealized-casts)"
)
VARIANT_COMPLETED = Stage("complete", VARIANT_COMPLETE, description="completion of a variant")


# --------------------------------------------------------------------------------------------
# IR features: what preconditions test (coarse, by text; checked where the entry runs)

_OP = re.compile(r"\b((?:linalg|tensor|math|memref|vector|affine|scf|bufferization)\.[a-z_]+)")
_MINMAX = re.compile(r"arith\.(?:maximumf|minimumf|maxnumf|minnumf)")


def features(text: str) -> set[str]:
    """Op names present (``linalg.generic``...) and shape facts: ``unit-dim`` (a size-1 dim in a
    tensor/memref of numbers), ``rank0``, ``dynamic``, ``vector`` (any vector op),
    ``single-iter-loop`` (``affine.for 0 to 1``), ``affine-nonconst-bound``,
    ``rank-reducing-insert`` (a tensor.insert_slice into a higher rank), ``minmax-reduction``
    (a reduction combining with max/min)."""
    found = set(_OP.findall(text))
    if any(op.startswith("vector.") for op in found):
        found.add("vector")
    if re.search(r"affine\.for %\w+ = 0 to 1 \{", text):
        found.add("single-iter-loop")
    for bound in re.findall(r"affine\.for %[\w#]+ = ([^{]*)\{", text):
        if "%" in bound or "min " in bound or "max " in bound:
            found.add("affine-nonconst-bound")
    pattern = r"tensor\.insert_slice [^:]*: tensor<([^>]*)> into tensor<([^>]*)>"
    for source, destination in re.findall(pattern, text):
        if source.count("x") < destination.count("x"):
            found.add("rank-reducing-insert")
    for match in re.finditer(r"linalg\.(reduce|generic)\b(.*?)linalg\.yield", text, re.S):
        kind, body = match.groups()
        if (kind == "reduce" or '"reduction"' in body) and _MINMAX.search(body):
            found.add("minmax-reduction")
    for body in re.findall(r"\b(?:tensor|memref)<([^<>,]*)", text):
        parts = body.split("x")
        dims, element = parts[:-1], parts[-1].strip()
        if not re.fullmatch(r"[fi]\d+", element):
            continue
        if not dims:
            found.add("rank0")
        if "1" in dims:
            found.add("unit-dim")
        if "?" in dims:
            found.add("dynamic")
    return found


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


# --------------------------------------------------------------------------------------------
# The catalog


@dataclass(frozen=True)
class KnownBroken:
    """IR ``features`` on which an entry hits a known upstream bug, and which bug (``issue``)."""

    features: tuple[str, ...]
    issue: str


@dataclass(frozen=True)
class Entry:
    """One catalog entry.

    ``pipeline`` is the text inside ``builtin.module(...)`` (for a "bufferize" entry: what
    replaces ``one-shot-bufferize`` in our BUFFERIZE); ``script(text, id)`` makes a transform
    library from the IR the entry runs on, applied after ``pipeline``. Preconditions, checked
    on that IR: ``requires`` (at least one of these features; empty: always), ``forbids`` (none
    of these), ``known_broken`` (skipped unless the variant is ``mlir:known-broken:...``);
    ``after``: the "lower" entries one of which must come earlier in the variant. ``vector``:
    leaves vector ops (adds the vector-fixup stage); ``loose``: changes numerics beyond the
    harness's error model (never drawn, only named)."""

    id: str
    stage: str
    pipeline: str = ""
    script: Callable[[str, str], str] | None = None
    requires: tuple[str, ...] = ()
    forbids: tuple[str, ...] = ()
    known_broken: tuple[KnownBroken, ...] = ()
    after: tuple[str, ...] = ()
    vector: bool = False
    loose: bool = False
    note: str = ""

    def fragment(self, stage_name: str) -> str:
        """The pipeline fragment; a script's library is read from ``<stage>.transform.mlir``."""
        if self.script is None:
            return self.pipeline
        load = (
            f"transform-preload-library{{transform-library-paths={stage_name}.transform.mlir}}, "
            "transform-interpreter{entry-point=__transform_main}"
        )
        return f"{self.pipeline}, {load}" if self.pipeline else load

    def precondition(self) -> str:
        """The precondition in words (for the catalog table)."""
        parts = []
        if self.requires:
            parts.append("has one of: " + ", ".join(self.requires))
        if self.forbids:
            parts.append("has none of: " + ", ".join(self.forbids))
        if self.after:
            parts.append("after " + " or ".join(self.after))
        return "; ".join(parts) or "-"

    def check(self, found: set[str], known_broken: bool = False) -> str:
        """Why this entry does not run on IR with features ``found`` ("" if it runs)."""
        if self.requires and not any(r in found for r in self.requires):
            return f"needs one of {', '.join(self.requires[:4])}"
        bad = [f for f in self.forbids if f in found]
        if bad:
            return f"has {', '.join(bad)}"
        if not known_broken:
            for broken in self.known_broken:
                hit = [f for f in broken.features if f in found]
                if hit:
                    return f"known broken with {', '.join(hit)}: {broken.issue}"
        return ""


CATALOG: dict[str, Entry] = {}


def register(entry: Entry) -> Entry:
    """Add an entry (a test plants a broken one this way); ids are unique and plain."""
    if entry.id in CATALOG:
        raise ValueError(f"catalog entry {entry.id!r} is already registered")
    if entry.stage not in STAGES:
        raise ValueError(f"entry {entry.id!r}: stage {entry.stage!r} is not one of {STAGES}")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", entry.id) or entry.id in _RESERVED:
        raise ValueError(f"entry id {entry.id!r}: lower-case letters, digits and '-' only")
    CATALOG[entry.id] = entry
    _backend.cache_clear()
    return entry


def unregister(entry_id: str) -> None:
    CATALOG.pop(entry_id, None)
    _backend.cache_clear()


_RESERVED = {"module", "bufferized", "vector-fixup", "lowered", "llvm", "complete", "trace", "run"}

_LINALG = (
    "linalg.generic", "linalg.matmul", "linalg.batch_matmul", "linalg.transpose", "linalg.reduce",
    "linalg.fill", "linalg.elementwise", "linalg.broadcast", "linalg.copy", "linalg.map",
    "linalg.add", "linalg.sub", "linalg.mul", "linalg.div", "linalg.max", "linalg.min",
    "linalg.exp", "linalg.log", "linalg.abs", "linalg.negf", "linalg.sqrt", "linalg.tanh",
    "linalg.powf", "linalg.select",
)  # fmt: skip
_NAMED = tuple(n for n in _LINALG if n != "linalg.generic")
# Buffer aliases the affine dependence analysis does not see, and vector memory ops it aborts on.
_VIEWS = (
    "memref.reshape", "memref.expand_shape", "memref.collapse_shape", "memref.subview",
    "memref.cast", "memref.reinterpret_cast",
)  # fmt: skip
_VECTOR_MEMORY = ("vector.transfer_read", "vector.transfer_write", "vector.load", "vector.store")
_LOOPS = ("scf.for", "affine.for", "scf.parallel")

# The upstream bugs behind the known_broken notes (tests/upstream/ pins each of them).
_ABSI = KnownBroken(
    ("math.absi",),
    "math.absi on n-D vectors is not lowered by convert-math-to-llvm (fixed by llvm PR #195360)",
)
_RANK_REDUCING = KnownBroken(
    ("rank-reducing-insert",),
    "rank-reducing tensor.insert_slice vectorized along the unit dim (llvm PR #221293, open)",
)
_MASKED_MINMAX = KnownBroken(
    ("minmax-reduction",),
    "masked vector.reduction <maximumf/minimumf> gets a wrong neutral value in "
    "convert-vector-to-llvm (fixed by llvm PR #222275)",
)
_FUSION_ALIAS = KnownBroken(
    _VIEWS,
    "affine-loop-fusion misses aliases through memref views: wrong code (llvm #218696, "
    "PR #213413)",
)
_FUSION_VECTOR = KnownBroken(
    _VECTOR_MEMORY, "affine-loop-fusion aborts (UNREACHABLE) on vector memory ops (llvm #221141)"
)
_SUPER_VECTORIZE = KnownBroken(
    ("single-iter-loop",),
    "affine-super-vectorize emits an invalid transfer_write for an invariant store in a "
    "1-iteration loop (llvm #131135)",
)
_SUPER_VECTORIZE_VIEWS = KnownBroken(
    _VIEWS, "the affine dependence analysis misses memref view aliases (llvm #218696 family)"
)
_INT_RANGE = KnownBroken(
    ("affine-nonconst-bound",),
    "integer range analysis aborts on affine.for with non-constant bounds (llvm #180312)",
)
_AFFINE_LOOPS = KnownBroken(
    ("dynamic",),
    "convert-linalg-to-affine-loops makes an affine.for with a non-affine bound for a "
    "dynamic-size op inside scf.for (invalid IR; no upstream report found)",
)
_WHEEL_I1 = KnownBroken(
    ("scf.for",),
    "with tensor loops the deallocation's i1 ownership memrefs hit the wheel's MemRefToLLVM "
    "i1 assertion (a wheel patch, not upstream)",
)
_TENSOR_VECTOR = (_RANK_REDUCING, _ABSI)


def _catalog() -> list[Entry]:
    T, Z, B, W, L = STAGES
    affine = ("to-affine-loops",)
    any_lowering = ("to-affine-loops", "to-parallel-loops", "to-loops")
    fusion = (_FUSION_ALIAS, _FUSION_VECTOR)
    super_vectorize = (_SUPER_VECTORIZE_VIEWS, _SUPER_VECTORIZE)
    inner = OPTIMIZE.removeprefix("builtin.module(").removesuffix(")")
    masked = functools.partial(tile_vectorize, masked=True)
    static = functools.partial(tile_vectorize, masked=False)

    def transpose_only(text: str, entry: str) -> str:
        return tile_vectorize(text, entry, masked=False, only="linalg.transpose")

    return [
        # ---- tensor: the module as built (named linalg ops on tensors) ---------------------
        Entry("canonicalize", T, "canonicalize"),
        Entry("cse", T, "cse"),
        Entry("canonicalize-aggressive", T,
              "canonicalize{region-simplify=aggressive top-down=false}"),
        Entry("sccp", T, "sccp"),
        Entry("licm", T, "func.func(loop-invariant-code-motion)",
              requires=("scf.for", "scf.forall")),
        Entry("optimize", T, inner, note="our own OPTIMIZE stage"),
        Entry("generalize", T, "func.func(linalg-generalize-named-ops)", requires=_NAMED),
        Entry("specialize", T, "func.func(linalg-specialize-generic-ops)",
              requires=("linalg.generic",)),
        Entry("morph-named-to-category", T, "linalg-morph-ops{named-to-category=true}",
              requires=_NAMED),
        Entry("morph-generic-to-named", T, "linalg-morph-ops{generic-to-named=true}",
              requires=("linalg.generic",)),
        Entry("morph-category-to-generic", T, "linalg-morph-ops{category-to-generic=true}",
              requires=("linalg.elementwise",)),
        Entry("fold-unit-extent-dims", T, "func.func(linalg-fold-unit-extent-dims)",
              requires=("unit-dim",)),
        Entry("fold-unit-extent-dims-slices", T,
              "func.func(linalg-fold-unit-extent-dims{use-rank-reducing-slices=true})",
              requires=("unit-dim",)),
        Entry("fuse-elementwise", T, "func.func(linalg-fuse-elementwise-ops)",
              requires=("linalg.generic",), note="the pass has no options in MLIR 22"),
        Entry("inline-scalar-operands", T, "func.func(linalg-inline-scalar-operands)",
              requires=("linalg.generic",)),
        Entry("fold-into-elementwise", T, "func.func(linalg-fold-into-elementwise)",
              requires=("linalg.transpose",)),
        Entry("detensorize", T, "func.func(linalg-detensorize)", requires=("rank0",)),
        Entry("detensorize-aggressive", T, "func.func(linalg-detensorize{aggressive-mode=true})",
              requires=("rank0",)),
        Entry("math-expand-tanh", T, "func.func(math-expand-ops{ops=tanh})",
              requires=("math.tanh",),
              note="math-polynomial-approximation is not in the 22.1.8 wheel; this is the closest"),
        Entry("math-expand-powf", T, "func.func(math-expand-ops{ops=powf})",
              requires=("math.powf",), loose=True,
              note="pow -> exp(y*log x) loses ~|y ln x| ulps, beyond the error model"),
        Entry("tile-vectorize-masked", T, script=masked, vector=True, requires=_LINALG,
              known_broken=(*_TENSOR_VECTOR, _MASKED_MINMAX),
              note="tile_using_for (sizes from {1,2,4}) + masked vectorize + vector lowering"),
        Entry("tile-vectorize-static", T, script=static, vector=True, requires=_LINALG,
              known_broken=_TENSOR_VECTOR,
              note="tile_using_for (sizes dividing the extents) + vectorize + vector lowering"),
        Entry("vectorize-transpose", T, script=transpose_only, vector=True,
              requires=("linalg.transpose",), known_broken=_TENSOR_VECTOR,
              note="as tile-vectorize-static, linalg.transpose only"),
        Entry("vectorize-children", T, script=vectorize_children, vector=True, requires=_LINALG,
              known_broken=_TENSOR_VECTOR,
              note="vectorize_children_and_apply_patterns {vectorize_nd_extract}"),
        Entry("tile-fuse", T, script=tile_fuse, requires=_LINALG,
              note="structured.fuse of the output's op, parallel tile sizes from {1,2,3}"),
        Entry("tile-fuse-vectorize", T, script=functools.partial(tile_fuse, vectorize=True),
              vector=True, requires=_LINALG, known_broken=_TENSOR_VECTOR,
              note="tile-fuse, then vectorize_children_and_apply_patterns"),
        Entry("block-pack-matmul", T, "func.func(linalg-block-pack-matmul{block-factors=2,2,2})",
              script=lower_pack, requires=("linalg.matmul", "linalg.batch_matmul"),
              note="then lower_pack/lower_unpack (a padding pack is not bufferized)"),
        Entry("block-pack-matmul-padded", T,
              "func.func(linalg-block-pack-matmul{block-factors=4,2,3 allow-padding=true})",
              script=lower_pack, requires=("linalg.matmul", "linalg.batch_matmul")),
        Entry("math-uplift-to-fma", T, "func.func(math-uplift-to-fma)",
              requires=("linalg.generic",), note="fma rounds once: within the error model"),
        Entry("arith-expand", T, "func.func(arith-expand)", requires=("linalg.generic",)),
        Entry("remove-dead-values", T, "remove-dead-values"),
        Entry("fold-tensor-subset-ops", T, "fold-tensor-subset-ops",
              requires=("tensor.extract_slice", "tensor.insert_slice")),
        # ---- bufferize: replaces one-shot-bufferize inside our BUFFERIZE --------------------
        Entry("bufferize-copy-before-write", Z, "one-shot-bufferize{copy-before-write=true}",
              known_broken=(_WHEEL_I1,)),
        Entry("bufferize-bottom-up", Z,
              "one-shot-bufferize{analysis-heuristic=bottom-up-from-terminators}"),
        Entry("bufferize-fuzzer-seed", Z, "one-shot-bufferize{analysis-fuzzer-seed=7}",
              note="in-place decisions at random (seeded): more copies, the same result"),
        # ---- buffer: after bufferization, linalg on memrefs ---------------------------------
        Entry("buf-tile-vectorize-masked", B, script=masked, vector=True, requires=_LINALG,
              known_broken=(_ABSI, _MASKED_MINMAX), note="as tile-vectorize-masked, on memrefs"),
        Entry("buf-tile-vectorize-static", B, script=static, vector=True, requires=_LINALG,
              known_broken=(_ABSI,), note="as tile-vectorize-static, on memrefs"),
        Entry("buf-vectorize-children", B, script=vectorize_children, vector=True,
              requires=_LINALG, known_broken=(_ABSI,), note="as vectorize-children, on memrefs"),
        Entry("buf-generalize", B, "func.func(linalg-generalize-named-ops)", requires=_NAMED),
        Entry("buf-canonicalize-cse", B, "canonicalize, cse"),
        Entry("buffer-hoisting", B, "func.func(buffer-hoisting, buffer-loop-hoisting)"),
        Entry("fold-memref-alias-ops", B, "fold-memref-alias-ops", requires=_VIEWS),
        Entry("optimize-allocation-liveness", B, "func.func(optimize-allocation-liveness)",
              requires=("memref.alloc",)),
        Entry("scf-for-loop-peeling", B, "func.func(scf-for-loop-peeling)", requires=("scf.for",)),
        Entry("scf-for-loop-specialization", B, "func.func(scf-for-loop-specialization)",
              requires=("scf.for",)),
        Entry("scf-for-to-while", B, "scf-for-to-while", requires=("scf.for",)),
        Entry("loop-invariant-subset-hoisting", B, "loop-invariant-subset-hoisting",
              requires=("scf.for",)),
        Entry("promote-buffers-to-stack", B,
              "func.func(promote-buffers-to-stack{max-alloc-size-in-bytes=4096})",
              requires=("memref.alloc",)),
        # ---- lower: linalg to loops (at most one) ------------------------------------------
        Entry("to-affine-loops", W, "func.func(convert-linalg-to-affine-loops)",
              known_broken=(_AFFINE_LOOPS,)),
        Entry("to-parallel-loops", W, "func.func(convert-linalg-to-parallel-loops)"),
        Entry("to-loops", W, "func.func(convert-linalg-to-loops)"),
        # ---- loops: after a lower entry -----------------------------------------------------
        Entry("affine-loop-fusion", L, "func.func(affine-loop-fusion)", after=affine,
              requires=("affine.for",), known_broken=fusion),
        Entry("affine-loop-fusion-maximal", L,
              "func.func(affine-loop-fusion{maximal=true mode=greedy})", after=affine,
              requires=("affine.for",), known_broken=fusion),
        Entry("affine-loop-fusion-sibling", L, "func.func(affine-loop-fusion{mode=sibling})",
              after=affine, requires=("affine.for",), known_broken=fusion),
        Entry("affine-super-vectorize", L,
              "func.func(affine-super-vectorize{virtual-vector-size=4})", vector=True,
              after=affine, requires=("affine.for",), known_broken=super_vectorize),
        Entry("affine-super-vectorize-red", L,
              "func.func(affine-super-vectorize{virtual-vector-size=4 vectorize-reductions=true})",
              vector=True, after=affine, requires=("affine.for",), known_broken=super_vectorize),
        Entry("affine-scalrep", L, "func.func(affine-scalrep)", after=affine,
              requires=("affine.for",)),
        Entry("affine-licm", L, "func.func(affine-loop-invariant-code-motion)", after=affine,
              requires=("affine.for",)),
        Entry("affine-loop-unroll", L, "func.func(affine-loop-unroll{unroll-factor=2})",
              after=affine, requires=("affine.for",)),
        Entry("affine-loop-unroll-full", L,
              "func.func(affine-loop-unroll{unroll-full-threshold=8})", after=affine,
              requires=("affine.for",)),
        Entry("affine-loop-tile", L, "func.func(affine-loop-tile{tile-size=2})", after=affine,
              requires=("affine.for",)),
        Entry("affine-loop-normalize", L, "func.func(affine-loop-normalize)", after=affine,
              requires=("affine.for",)),
        Entry("affine-loop-unroll-jam", L,
              "func.func(affine-loop-unroll-jam{unroll-jam-factor=2})", after=affine,
              requires=("affine.for",)),
        Entry("affine-loop-coalescing", L, "func.func(affine-loop-coalescing)", after=affine,
              requires=("affine.for",)),
        Entry("affine-parallelize", L, "func.func(affine-parallelize)", after=affine,
              requires=("affine.for",)),
        Entry("affine-simplify", L,
              "func.func(affine-simplify-structures, affine-simplify-min-max)", after=affine,
              requires=("affine.for",)),
        Entry("affine-data-copy-generate", L,
              "func.func(affine-data-copy-generate{generate-dma=false fast-mem-space=0})",
              after=affine, requires=("affine.for",)),
        Entry("scf-parallel-loop-tiling", L,
              "func.func(scf-parallel-loop-tiling{parallel-loop-tile-sizes=2,2})",
              after=("to-parallel-loops",), requires=("scf.parallel",)),
        Entry("scf-parallel-for-to-nested-fors", L, "func.func(scf-parallel-for-to-nested-fors)",
              after=("to-parallel-loops",), requires=("scf.parallel",)),
        Entry("scf-parallel-loop-fusion", L, "func.func(scf-parallel-loop-fusion)",
              after=("to-parallel-loops",), requires=("scf.parallel",)),
        Entry("int-range-optimizations", L,
              "int-range-optimizations, arith-unsigned-when-equivalent", after=any_lowering,
              requires=_LOOPS, known_broken=(_INT_RANGE,)),
        Entry("arith-int-range-narrowing", L,
              "func.func(arith-int-range-narrowing{int-bitwidths-supported=32})",
              after=any_lowering, requires=_LOOPS, known_broken=(_INT_RANGE,)),
        Entry("scf-for-loop-canonicalization", L, "func.func(scf-for-loop-canonicalization)",
              after=any_lowering, requires=_LOOPS),
        Entry("loops-licm", L, "func.func(loop-invariant-code-motion)", after=any_lowering,
              requires=_LOOPS),
        Entry("loops-canonicalize-cse", L, "canonicalize, cse", after=any_lowering,
              requires=_LOOPS),
    ]  # fmt: skip


def drawable() -> list[Entry]:
    """The entries a random variant may use, in catalog order (``loose`` ones are only named)."""
    return [e for e in CATALOG.values() if not e.loose]


# --------------------------------------------------------------------------------------------
# Variant names


@dataclass(frozen=True)
class Variant:
    """An ordered list of entries (valid: ``validate``) and whether known-broken IR runs."""

    entries: tuple[str, ...]
    known_broken: bool = False

    @property
    def name(self) -> str:
        return PREFIX + (KNOWN_BROKEN if self.known_broken else "") + SEPARATOR.join(self.entries)

    def without(self, index: int) -> Variant:
        """This variant less entry ``index`` (still valid: loops entries lose their lowering
        entry with it)."""
        kept = [e for i, e in enumerate(self.entries) if i != index]
        lowering = [e for e in kept if CATALOG[e].stage == "lower"]
        kept = [e for e in kept if not CATALOG[e].after or set(CATALOG[e].after) & set(lowering)]
        return Variant(tuple(kept), self.known_broken)


def validate(entries: tuple[str, ...] | list[str]) -> None:
    """A ValueError unless ``entries`` are known, distinct, in stage order, with at most one
    bufferize and one lower entry, and every loops entry after a lower entry it names."""
    unknown = [e for e in entries if e not in CATALOG]
    if unknown:
        raise ValueError(
            f"unknown catalog entries {', '.join(unknown)} (python -m compiler.mlir_variants "
            "lists the catalog)"
        )
    if len(set(entries)) != len(entries):
        raise ValueError(f"an entry appears twice in {SEPARATOR.join(entries)}")
    order = [STAGES.index(CATALOG[e].stage) for e in entries]
    if order != sorted(order):
        raise ValueError(f"entries must come in stage order {' < '.join(STAGES)}: {entries}")
    for stage in ("bufferize", "lower"):
        if sum(CATALOG[e].stage == stage for e in entries) > 1:
            raise ValueError(f"at most one {stage} entry in a variant: {entries}")
    lowering = [e for e in entries if CATALOG[e].stage == "lower"]
    for e in entries:
        after = CATALOG[e].after
        if after and not set(after) & set(lowering):
            raise ValueError(f"{e} runs after one of {', '.join(after)}, not in {entries}")


def is_variant(name: str) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX)


def is_draw(name: str) -> bool:
    """``mlir:*`` or ``mlir:known-broken:*`` (with an optional ``@O<n>``): a variant per case."""
    base = name.partition("@")[0] if isinstance(name, str) else ""
    return base in (DRAW, PREFIX + KNOWN_BROKEN + "*")


@dataclass(frozen=True)
class Name:
    """A backend name of the family, taken apart: the variant and its suffixes (as
    ``compiler.backends`` spells them for our CPU targets)."""

    variant: Variant
    stage: str | None = None
    steps: int | None = None
    level: int | None = None
    runtime: bool = False


def parse(name: str) -> Name:
    """``mlir:[known-broken:]A.B.C[[:stage#k]][+mlir-runtime][@O<n>]``; a ValueError if it is
    not a valid variant."""
    if not is_variant(name):
        raise ValueError(f"{name!r} is not an mlir:<variant> name")
    rest, runtime, level = name, False, None
    for _ in range(2):  # the two suffixes, in either order
        if rest.endswith(RUNTIME_SUFFIX):
            rest, runtime = rest[: -len(RUNTIME_SUFFIX)], True
        match = re.search(r"@O([0-3])$", rest)
        if match:
            rest, level = rest[: match.start()], int(match.group(1))
    if "@" in rest:
        raise ValueError(f"bad optimization level in {name!r} (O0-O3)")
    stage = steps = None
    if rest.endswith("]") and "[:" in rest:
        rest, _, inside = rest[:-1].partition("[:")
        stage, _, count = inside.partition("#")
        if count:
            if not count.isdigit():
                raise ValueError(f"bad step count {count!r} in {name!r}")
            steps = int(count)
    body = rest[len(PREFIX) :]
    known_broken = body.startswith(KNOWN_BROKEN)
    body = body.removeprefix(KNOWN_BROKEN)
    if body == "*":
        raise ValueError(f"{name!r} draws a variant per case (the harness does); name one")
    entries = tuple(e for e in body.split(SEPARATOR)) if body else ()
    validate(entries)
    return Name(Variant(entries, known_broken), stage, steps, level, runtime)


def variant_of(name: str) -> Variant:
    return parse(name).variant


def family(name: str) -> str:
    """What a report groups a backend under: every variant under ``mlir:*`` (or
    ``mlir:known-broken:*``, with its ``@O<n>``), any other backend under its own name."""
    if not is_variant(name):
        return name
    base, at, level = name.partition("@")
    broken = KNOWN_BROKEN if base[len(PREFIX) :].startswith(KNOWN_BROKEN) else ""
    return f"{PREFIX}{broken}*{at}{level}"


# --------------------------------------------------------------------------------------------
# Stages


@dataclass(frozen=True)
class Plan:
    """What a stage does to one input: ``pipeline`` ("" = pass the input through), why the
    entry was skipped (``reason``), and the transform library it reads (``library``)."""

    pipeline: str
    reason: str = ""
    library: str | None = None


def _allow_known_broken(module: Any) -> None:
    """Never called (``EntryStage.run`` decides): as a stage's ``transform`` it keys the
    driver's stage cache apart for ``mlir:known-broken:`` variants."""


_LIBRARY_PATH = re.compile(r"transform-library-paths=[^,}\s]+")


@dataclass(frozen=True)
class EntryStage(Stage):
    """A stage running one catalog entry, where its precondition holds on the stage's input.

    ``pipeline`` is what the stage runs (a prefix ``[:stage#k]`` truncates it, and the stage
    then runs those steps); ``fallback`` runs instead when the entry is skipped."""

    entry: str = ""
    known_broken: bool = False
    fallback: str = ""

    def plan(self, text: str) -> Plan:
        entry = _FIXUP_ENTRY if self.entry == _FIXUP else CATALOG[self.entry]
        reason = entry.check(features(text), self.known_broken)
        if reason:
            return Plan(self.fallback, reason)
        if entry.script is not None and "transform-library-paths=" in self.pipeline:
            return Plan(self.pipeline, library=entry.script(text, entry.id))
        return Plan(self.pipeline)

    def standalone(self, text: str) -> tuple[str, str]:
        """(pipeline, input) that redo this stage on ``text`` in one ``mlir-opt`` run on one
        file, for crash pinning and reduction: a script is nested in the input, as in
        process."""
        plan = self.plan(text)
        if plan.library is None:
            return plan.pipeline, text
        steps = [s for s in pipelines.pipeline_steps(plan.pipeline) if "preload-library" not in s]
        end = text.rstrip().rfind("}")
        return pipelines.join_steps(steps), text[:end] + plan.library + text[end:]

    def run(self, module: Any) -> None:
        """In process, a script is appended to the module for the interpreter and removed
        after: ``transform-preload-library`` would keep it in the (reused) MLIR context, where
        the next script's ``@__transform_main`` is then defined twice."""
        from mlir import ir, passmanager

        plan = self.plan(str(module))
        if not plan.pipeline:
            return
        if plan.library is None:
            passmanager.PassManager.parse(plan.pipeline).run(module.operation)
            return
        steps = [s for s in pipelines.pipeline_steps(plan.pipeline) if "preload-library" not in s]
        if not steps:
            return
        module.body.append(ir.Operation.parse(plan.library))
        try:
            passmanager.PassManager.parse(pipelines.join_steps(steps)).run(module.operation)
        finally:
            for op in list(module.body.operations):
                if "transform.with_named_sequence" in op.operation.attributes:
                    op.operation.erase()


def _vector_fixup(known_broken: bool) -> EntryStage:
    return EntryStage(
        "vector-fixup", VECTOR_FIXUP, description="vector ops left by vectorizing entries -> LLVM",
        entry=_FIXUP, known_broken=known_broken,
    )  # fmt: skip


# The fix-up stage as a (hidden) catalog entry: it runs only when vector ops remain.
_FIXUP = "vector-fixup"
_FIXUP_ENTRY = Entry(_FIXUP, "loops", requires=("vector",))


def stages(variant: Variant) -> tuple[Stage, ...]:
    """The variant's stages: one per entry (named after it), our bufferization (or a bufferize
    entry's), the vector fix-up if a vectorizing entry is in it, our lowering."""
    marker = _allow_known_broken if variant.known_broken else None
    entries = [CATALOG[e] for e in variant.entries]

    def stage_of(entry: Entry, pipeline: str, fallback: str = "") -> EntryStage:
        description = entry.note or f"{entry.stage} entry: {entry.pipeline or 'a transform script'}"
        return EntryStage(
            entry.id, pipeline, marker, description, entry=entry.id,
            known_broken=variant.known_broken, fallback=fallback,
        )  # fmt: skip

    out: list[Stage] = []
    for entry in entries:
        if entry.stage == "tensor":
            out.append(stage_of(entry, f"builtin.module({entry.fragment(entry.id)})"))
    bufferize = [e for e in entries if e.stage == "bufferize"]
    if bufferize:
        replaced = BUFFERIZE.replace("one-shot-bufferize,", bufferize[0].pipeline + ",", 1)
        out.append(stage_of(bufferize[0], replaced, fallback=BUFFERIZE))
    else:
        out.append(BUFFERIZED)
    for entry in entries:
        if entry.stage in ("buffer", "lower", "loops"):
            out.append(stage_of(entry, f"builtin.module({entry.fragment(entry.id)})"))
    if any(e.vector for e in entries):
        out.append(_vector_fixup(variant.known_broken))
    out.append(LOWERED)
    return tuple(out)


def target(variant: Variant) -> Target:
    described = ", ".join(variant.entries) or "no entries (our bufferization and lowering)"
    return Target(
        variant.name, stages(variant), DEFAULT_LEVEL, f"upstream MLIR passes: {described}",
        completion=VARIANT_COMPLETED,
    )  # fmt: skip


def stage_command(stage: Stage, plan: Plan | None, source: str, output: str) -> str:
    """``mlir-opt`` on ``source`` (a script first written next to it), or a copy (skipped)."""
    pipeline = stage.pipeline if plan is None else plan.pipeline
    if not pipeline:
        reason = plan.reason if plan is not None else ""
        why = f"  # {stage.name} skipped: {reason}".replace("\n", " ") if reason else ""
        return f"cp {shlex.quote(source)} {shlex.quote(output)}{why}"
    if plan is None or plan.library is None:
        return tools.command("mlir-opt", f"--pass-pipeline={pipeline}", source, "-o", output)
    library = f"{stage.name}.transform.mlir"
    pipeline = _LIBRARY_PATH.sub(lambda _: f"transform-library-paths={library}", pipeline)
    text = plan.library if plan.library.endswith("\n") else plan.library + "\n"
    return (
        f"cat > {shlex.quote(library)} <<'TRANSFORM_LIBRARY'\n{text}TRANSFORM_LIBRARY\n"
        + tools.command("mlir-opt", f"--pass-pipeline={pipeline}", source, "-o", output)
    )


def annotate(artifacts: Artifacts, stages_run: tuple[Stage, ...]) -> Artifacts:
    """Each entry stage's real command (its script, or a copy when skipped) and the notes:
    ``applied`` and ``skipped`` entries (with why)."""
    applied, skipped = [], []
    for stage in stages_run:
        if not isinstance(stage, EntryStage) or stage.name not in artifacts.stages:
            continue
        previous = artifacts.previous(stage.name)
        plan = stage.plan(artifacts.stages[previous])
        artifacts.commands[stage.name] = stage_command(
            stage, plan, f"{previous}.mlir", f"{stage.name}.mlir"
        )
        if stage.entry == _FIXUP:
            continue
        (skipped if plan.reason else applied).append(
            f"{stage.entry}: {plan.reason}" if plan.reason else stage.entry
        )
    artifacts.notes["applied"] = ",".join(applied)
    if skipped:
        artifacts.notes["skipped"] = "; ".join(skipped)
    return artifacts


# --------------------------------------------------------------------------------------------
# The backend


class MlirVariantBackend(backends.MlirCpuBackend):
    """Our CPU backend running a variant's stages; commands and notes say what each entry did."""

    def compile(self, graph: Graph) -> Artifacts:
        return annotate(super().compile(graph), self.target.stages)

    def stage_texts(self, graph: Graph, before: str) -> Artifacts:
        return annotate(super().stage_texts(graph, before), self.target.stages)


@functools.lru_cache(maxsize=512)
def _backend(name: str) -> MlirVariantBackend:
    parsed = parse(name)
    made = target(parsed.variant)
    if parsed.stage is not None:
        made = made.prefix(parsed.stage, parsed.steps)
    if parsed.level is not None:
        made = made.with_opt_level(parsed.level)
    return MlirVariantBackend(made, "mlir" if parsed.runtime else "ours")


def backend(name: str) -> MlirVariantBackend:
    """The backend for ``mlir:...`` (with ``[:stage#k]``, ``+mlir-runtime``, ``@O<n>``)."""
    return _backend(name)


# --------------------------------------------------------------------------------------------
# The catalog as a table


def catalog_markdown() -> str:
    rows = [
        "| id | stage | pipeline fragment | precondition | known broken (excluded by default) |",
        "|---|---|---|---|---|",
    ]
    for entry in CATALOG.values():
        fragment = entry.pipeline or ""
        if entry.script is not None:
            fragment = f"{fragment}, transform script" if fragment else "transform script"
        broken = "; ".join(f"{', '.join(b.features)}: {b.issue}" for b in entry.known_broken)
        notes = "; ".join(x for x in (broken, entry.note, "loose: never drawn" * entry.loose) if x)
        rows.append(
            f"| {entry.id} | {entry.stage} | `{fragment.replace('|', '/')}` | "
            f"{entry.precondition()} | {notes or '-'} |"
        )
    return "\n".join(rows)


for _entry in _catalog():
    register(_entry)
CATALOG_SIZE = len(CATALOG)

__all__ = [
    "CATALOG",
    "DRAW",
    "Entry",
    "EntryStage",
    "KnownBroken",
    "MlirVariantBackend",
    "Name",
    "Variant",
    "backend",
    "catalog_markdown",
    "drawable",
    "family",
    "features",
    "is_draw",
    "is_variant",
    "parse",
    "register",
    "stages",
    "target",
    "unregister",
    "validate",
]

if __name__ == "__main__":
    print(catalog_markdown())
