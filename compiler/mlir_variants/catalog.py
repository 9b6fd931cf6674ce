"""The catalog's table: which upstream passes and transform scripts a variant may use.

Only data (and ``Entry``, its row type); ``compiler.mlir_variants`` registers the rows.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

from ..pipelines import OPTIMIZE
from .scripts import (
    duplicated_reduction,
    huge_vectors,
    lower_pack,
    masked_projected_write,
    odd_bf16_vectors,
    replicated_init,
    strided_gather,
    tile_fuse,
    tile_vectorize,
    vectorize_children,
)

#: Where entries run, in pipeline order.
STAGES = ("tensor", "bufferize", "buffer", "lower", "loops")


@dataclass(frozen=True)
class KnownBroken:
    """IR ``features`` on which an entry hits a known upstream bug, and which bug (``issue``);
    or, with ``symptom`` (no features), the bug's mark on the entry's output: ``symptom(input
    text, output text)`` says whether a run hit it (a trial run decides, where no feature of
    the input tells; only where the input has one of the features ``needs``, if any)."""

    features: tuple[str, ...]
    issue: str
    symptom: Callable[[str, str], bool] | None = None
    needs: tuple[str, ...] = ()

    def tried(self, found: set[str]) -> bool:
        """Is a trial run looking for ``symptom`` worth it on an input with ``found``?"""
        return self.symptom is not None and (not self.needs or any(n in found for n in self.needs))


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

    def broken_output(self, before: str, after: str) -> str:
        """The known bug whose symptom this entry's output ``after`` (from ``before``) shows
        ("" if none)."""
        for broken in self.known_broken:
            if broken.symptom is not None and broken.symptom(before, after):
                return f"known broken (its output shows it): {broken.issue}"
        return ""


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
_FUSION_REDUCTION = KnownBroken(
    (),
    "affine-loop-fusion runs a reduction loop more than once (cloned into its consumer and "
    "also kept, or moved into a loop of more iterations, its accumulator never reset): "
    "x1 * mean(x0) of a (1,) x0 and a (1, 1) x1 was twice the answer "
    "(llvm PR #189236, open: 'Fix double reduction when cyclic loop can't be removed after "
    "fusion', for #174580 and #175111; "
    "tests/upstream/inputs/affine_fusion_double_reduction_*.mlir)",
    symptom=duplicated_reduction,
)
_FUSION_REPLICATED = KnownBroken(
    (),
    "affine-loop-fusion places a producer's stores of fixed cells (an unrolled fill) inside a "
    "loop of the consumer that also writes that memref, so every iteration re-zeroes the cells "
    "earlier ones computed: linear of a (1, 1) by a (1, 2) gave [0, 25] for [35, 25] (llvm PR "
    "#196604, open: 'Refuse affine-loop-fusion when producer writes would replicate onto "
    "consumer-written cells'; tests/upstream/inputs/affine_fusion_replicated_init.mlir)",
    symptom=replicated_init,
)
_FUSION_VECTOR = KnownBroken(
    _VECTOR_MEMORY, "affine-loop-fusion aborts (UNREACHABLE) on vector memory ops (llvm #221141)"
)
_SUPER_VECTORIZE = KnownBroken(
    ("single-iter-loop",),
    "affine-super-vectorize emits an invalid transfer_write for an invariant store in a "
    "1-iteration loop (llvm #131135)",
)
_SUPER_VECTORIZE_STEP = KnownBroken(
    ("affine-nonunit-step",),
    "affine-super-vectorize vectorizes a loop of step s > 1 as contiguous lanes (iv, iv+1, ...) "
    "instead of iv, iv+s, ...: elements the loop never visits are written and its own skipped; "
    "a bfloat16 x1 / x0 of (8,) by (2, 1), unrolled by 4 first, left out[0, 7] unwritten "
    "(llvm #225247, open; tests/upstream/inputs/super_vectorize_step.mlir)",
)


_BF16_VECTORS = KnownBroken(
    (),
    "LLVM 22.1.8's X86 code generation aborts on bfloat16 vector arithmetic of 9-15, 17, 31, "
    "33... lanes ('Do not know how to soft promote this operator's operand!'; "
    "tests/upstream/test_llvm_22_1_8.py; our cpu-vector avoids it, bf16-power-of-two-vectors): "
    "a bfloat16 layer_norm of 33 elements on mlir:buf-vectorize-children",
    symptom=odd_bf16_vectors,
)
_MASKED_PROJECTED_WRITE = KnownBroken(
    (),
    "convert-vector-to-scf (TransferWriteNonPermutationLowering) appends the memref dims a "
    "masked transfer_write skips to its mask, not where the vector gets them: invalid IR "
    "('inferred mask type ... don't match'; llvm PR #144893, open; a float64 gelu of a (3, 1, 3) "
    "on mlir:fold-unit-extent-dims-slices.buf-tile-vectorize-masked.fold-memref-alias-ops, whose "
    "fold made such a write; tests/upstream/inputs/masked_projected_write.mlir)",
    symptom=masked_projected_write,
    needs=("vector",),  # a fold makes one only of a vector write (vectorizers: their own trial)
)
_HUGE_VECTORS = KnownBroken(
    (),
    "a limit, not a bug: vectors of more than 1024 lanes (whole-op vectorization of a large "
    "op) take LLVM's code generation from seconds to minutes (an attend of T = 59 on "
    "mlir:buf-vectorize-children: no answer within 120 s; compiler.mlir_variants.scripts."
    "huge_vectors)",
    symptom=huge_vectors,
)
_STRIDED_GATHER = KnownBroken(
    (),
    "vectorize_nd_extract gives a vector.gather linear indices over the tensor's shape, and "
    "convert-vector-to-llvm takes them for memory offsets of whatever view the tensor "
    "bufferizes to (the indices are logical, not physical: discourse RFC, llvm PR #181357, "
    "open). From a memref whose innermost stride is not 1 the gather is left unconverted and "
    "LLVM translation fails on the casts around it (llvm PR #186990 documents it; a float64 "
    "x[..., 1:12:2] of a (2, 1, 2) then a gather on mlir:vectorize-children); from one whose "
    "rows are apart it reads the wrong elements (a gather from x[..., 2:6] of a float32 (3, 3) "
    "on mlir:tile-vectorize-static, a held-out plant's session; tests/upstream/inputs/"
    "gather_rows_apart.mlir)",
    symptom=strided_gather,
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
_NEGATIVE_MAP = KnownBroken(
    ("negative-map",),
    "Linalg tiling asserts on an indexing map with a negative coefficient, i.e. any reversed "
    'slice ("nonpositive multiplying coefficient"; llvm #113021, PR #114688)',
)
_COPY_FORWARDING = KnownBroken(
    ("copy-into-rank-reducing-subview",),
    "vectorize_children_and_apply_patterns' LinalgCopyVTRForwardingPattern forwards a "
    "transfer_read through a memref.copy into a rank-reducing subview with the wrong rank, and "
    "TransferReadOp::fold asserts (isDynamicDim: invalid index; no upstream report found)",
)
_RANK0_GATHER = KnownBroken(
    ("rank0-extract",),
    "vectorize_nd_extract classifies the tensor.extract of a rank-0 linalg.generic as a gather "
    "and builds a vector.gather with scalar indices, which fails verification (fixed by llvm "
    "PR #187085, after 22.1.8; tests/upstream/inputs/rank0_gather.mlir)",
)
_TENSOR_VECTOR = (_RANK_REDUCING, _ABSI, _RANK0_GATHER)


def entries() -> list[Entry]:
    """The catalog's rows. Bugs and limits of the stages a vectorizing entry's output reaches:
    every entry that leaves vector ops carries ``_BF16_VECTORS``, ``_HUGE_VECTORS`` and
    ``_STRIDED_GATHER``, and
    every one that may make a masked transfer_write the vector fix-up cannot lower (a
    vectorizing entry, or one after bufferization: ``fold-memref-alias-ops`` folds a subview
    into a write's map) carries ``_MASKED_PROJECTED_WRITE``."""
    rows = []
    for e in _entries():
        more = (_BF16_VECTORS, _HUGE_VECTORS, _STRIDED_GATHER) if e.vector else ()
        if e.vector or e.stage in ("buffer", "lower", "loops"):
            more += (_MASKED_PROJECTED_WRITE,)
        rows.append(dataclasses.replace(e, known_broken=(*e.known_broken, *more)) if more else e)
    return rows


def _entries() -> list[Entry]:
    T, Z, B, W, L = STAGES
    affine = ("to-affine-loops",)
    any_lowering = ("to-affine-loops", "to-parallel-loops", "to-loops")
    fusion = (_FUSION_ALIAS, _FUSION_VECTOR, _FUSION_REDUCTION, _FUSION_REPLICATED)
    super_vectorize = (_SUPER_VECTORIZE_VIEWS, _SUPER_VECTORIZE, _SUPER_VECTORIZE_STEP)
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
              requires=("math.tanh",), loose=True,
              note="1 - exp(-2|x|) cancels: small tanh arguments lose every digit (pinned in "
              "tests/upstream/test_mlir_22_1_8.py)"),
        Entry("math-expand-powf", T, "func.func(math-expand-ops{ops=powf})",
              requires=("math.powf",), loose=True,
              note="pow -> exp(y*log x) loses ~|y ln x| ulps, beyond the error model"),
        Entry("math-expand-sinh", T, "func.func(math-expand-ops{ops=sinh})",
              requires=("math.sinh",), loose=True,
              note="(exp(x) - exp(-x)) / 2 cancels: small sinh arguments lose every digit "
              "(pinned in tests/upstream/test_mlir_22_1_8.py)"),
        Entry("math-expand-asinh", T, "func.func(math-expand-ops{ops=asinh})",
              requires=("math.asinh",), loose=True,
              note="log(x + sqrt(x*x + 1)) cancels: -inf below -2**26 (float64), small "
              "arguments lose every digit (pinned in tests/upstream/test_mlir_22_1_8.py)"),
        Entry("tile-vectorize-masked", T, script=masked, vector=True, requires=_LINALG,
              known_broken=(*_TENSOR_VECTOR, _MASKED_MINMAX, _NEGATIVE_MAP),
              note="tile_using_for (sizes from {1,2,4}) + masked vectorize + vector lowering"),
        Entry("tile-vectorize-static", T, script=static, vector=True, requires=_LINALG,
              known_broken=(*_TENSOR_VECTOR, _NEGATIVE_MAP),
              note="tile_using_for (sizes dividing the extents) + vectorize + vector lowering"),
        Entry("vectorize-transpose", T, script=transpose_only, vector=True,
              requires=("linalg.transpose",), known_broken=_TENSOR_VECTOR,
              note="as tile-vectorize-static, linalg.transpose only"),
        Entry("vectorize-children", T, script=vectorize_children, vector=True, requires=_LINALG,
              known_broken=_TENSOR_VECTOR,
              note="vectorize_children_and_apply_patterns {vectorize_nd_extract}"),
        Entry("tile-fuse", T, script=tile_fuse, requires=_LINALG, known_broken=(_NEGATIVE_MAP,),
              note="structured.fuse of the output's op, parallel tile sizes from {1,2,3}"),
        Entry("tile-fuse-vectorize", T, script=functools.partial(tile_fuse, vectorize=True),
              vector=True, requires=_LINALG, known_broken=(*_TENSOR_VECTOR, _NEGATIVE_MAP),
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
              known_broken=(_ABSI, _MASKED_MINMAX, _NEGATIVE_MAP),
              note="as tile-vectorize-masked, on memrefs"),
        Entry("buf-tile-vectorize-static", B, script=static, vector=True, requires=_LINALG,
              known_broken=(_ABSI, _NEGATIVE_MAP), note="as tile-vectorize-static, on memrefs"),
        Entry("buf-vectorize-children", B, script=vectorize_children, vector=True,
              requires=_LINALG, known_broken=(_ABSI, _COPY_FORWARDING),
              note="as vectorize-children, on memrefs"),
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
