"""What a session tries: a mix of the strategies package's generators, as harness cases.

Random programs (about a third of the cases), gathers, transformer structures with the
causality check, the composites on their own so the metamorphic relations that need them
(softmax shift, layer norm shift, head permutation) get exercised often, matmuls of strided
views (the layouts the BLAS substitution must get right), invalid programs, a few jit sequences
(one jitted function called in sequence) and fewer GPT-2 models (the compiler's model code):
``MIX_PERCENT``. A session also passes the (op, dtype) pairs it has not exercised yet;
``FOCUS_SHARE`` of its cases then start from one of them (``focus``).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from compiler import primitives
from strategies import (
    VIOLATIONS,
    coin,
    invalid_programs,
    programs,
    samples,
    uniform,
    violations_of,
)  # fmt: skip
from strategies.gen.makers import special_base
from strategies.gen.programs import generation_order, ops_reading_views
from strategies.gen.sequences import jit_sequences
from strategies.gen.shapes import attention_configs
from strategies.gen.values import (
    ANY_OP_EDGES,
    REGIMES,
    cast_edge_regimes,
    edge_regimes,
    input_values,
    values,
)
from strategies.model import DTYPES, Const, ProgramBuilder
from strategies.model.gpt2 import ALL_INVALID, STORED, ModelSpec

from ..case import (
    CPU_BACKENDS,
    GATEWAY_SAMPLED,
    GPU_SAMPLED,
    GPU_SHARE,
    SAMPLED_BACKENDS,
    SAMPLED_SHARE,
    SIBLINGS,
    TRIAGE_SAMPLED,
    TRIAGE_SHARE,
    Case,
    generated_array,
)
from .focus import FOCUS_SHARE, focus_cases, is_out_of_range, out_of_range_siblings

#: The longest side of a long-row program (``program_cases``): past ``cpu-vector``'s 256-element
#: whole-row reductions (``compiler/vector/schedule.py``), into its chunked, masked ones.
LONG_SIDE = 600


#: The rows of a long-row reduction (``long_reduction_cases``): past ``cpu-vector``'s
#: 256-element whole-row reductions, into its chunked ones, most not a multiple of a chunk (its
#: masked tail), one a multiple.
LONG_ROWS = (257, 300, 383, 512, 600, 1001)
#: The ops that reduce along a row (the table's reductions, and the composites that do).
ROW_REDUCTIONS = ("sum", "max", "min", "mean", "var", "std", "softmax")


@st.composite
def long_reduction_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """One reduction along rows of ``LONG_ROWS`` (1 to 3 of them), in any dtype it takes, on
    values of a regime at its edges or any: the long-row programs held 15 inputs past 256 in
    1500 default cases and not one max or min over them, so a planner that masked a max's
    chunks again (-1e-45 for a row of negatives) went unseen by 60 s sessions."""
    op = uniform(draw, ROW_REDUCTIONS)
    rows, side = 1 + draw(coin(3)), uniform(draw, LONG_ROWS)
    dtypes = [d for d in DTYPES if _reduces(op, d)]
    dtype = uniform(draw, dtypes)
    regime = uniform(draw, (*edge_regimes(op), "ordinary", "dense"))
    b = ProgramBuilder()
    program = b.build(b.node(op, b.input((rows, side), dtype), axis=-1))
    inputs = [draw(values((rows, side), dtype, regime))]
    event(f"origin:long-rows:{op}")
    return Case(program, inputs, backends, origin=f"programs/{regime}")


@functools.cache
def _reduces(op: str, dtype: str) -> bool:
    """Does ``op`` along rows build in ``dtype`` (the program model's rules)?"""
    b = ProgramBuilder()
    try:
        b.build(b.node(op, b.input((2, 3), dtype), axis=-1))
    except (TypeError, ValueError, NotImplementedError):
        return False
    return True


@st.composite
def program_cases(draw: st.DrawFn, backends: tuple[str, ...], max_nodes: int = 6) -> Case:
    """A random program: small (up to ``max_nodes``), bigger, or one case in eight a long-row
    one (rank 1, sides up to ``LONG_SIDE``), three in four of those one reduction along long
    rows (``long_reduction_cases``): sides of at most 6 (65 in the ``vector`` shape regime) never
    reached the vector planner's chunked reductions, where a masked max of 300 negative float32
    numbers gave -1e-45 (MLIR's wrong neutral, llvm PR #222275)."""
    size = draw(st.integers(0, 7))
    if size == 7 and draw(coin(4)) != 3:
        return draw(long_reduction_cases(backends))
    if size == 7:
        strategy = programs(max_nodes=min(max_nodes, 4), max_rank=1, max_side=LONG_SIDE)
        event("shape:long-rows")
    elif size < 4:
        strategy = programs(max_nodes=max_nodes)
    else:
        strategy = programs(min_nodes=3, max_nodes=max_nodes + 4)
    drawn = draw(samples(strategy))
    event("origin:program")
    return Case(drawn.program, list(drawn.inputs), backends, origin=f"programs/{drawn.regime}")


@st.composite
def attention_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """attention / attend / a whole block on (T, C) with T, C, D distinct; checked for causality."""
    config = draw(attention_configs())
    kind = draw(st.sampled_from(["attention", "attend", "block"]))
    event(f"origin:structure:{kind}")
    T, C, H, dtype = config.length, config.width, config.heads, config.dtype
    b = ProgramBuilder()
    shapes: list[tuple[int, ...]] = [(T, C)]
    x = b.input((T, C), dtype)
    scales = [1.0]

    def weight(*shape: int, scale: float = config.weight_scale) -> object:
        shapes.append(shape)
        scales.append(scale)
        return b.input(shape, dtype)

    if kind == "attention":
        out = b.node(
            "attention", x, weight(C, 3 * C), weight(3 * C), weight(C, C), weight(C), heads=H
        )
    else:
        out = b.node(
            "attend",
            x,
            weight(C),
            weight(C),
            weight(C, 3 * C),
            weight(3 * C),
            weight(C, C),
            weight(C),
            heads=H,
        )
        if kind == "block":
            out = b.node(
                "feedforward",
                out,
                weight(C),
                weight(C),
                weight(C, 4 * C),
                weight(4 * C),
                weight(4 * C, C),
                weight(C),
            )
    program = b.build(out)
    seed = draw(st.integers(0, 2**31 - 1))
    # One recipe per input: a corpus file stores large inputs as the recipe, not the bytes.
    recipes = [{"seed": seed + i, "scale": sc} for i, sc in enumerate(scales)]
    inputs = [
        generated_array(s, dtype, r["seed"], r["scale"])
        for s, r in zip(shapes, recipes, strict=True)
    ]
    return Case(
        program, inputs, backends, checks=("causal",), origin=f"structure/{kind}", recipes=recipes
    )


@st.composite
def composite_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """softmax / layer_norm / gelu on one input, with the value regimes that stress them."""
    op = draw(st.sampled_from(["softmax", "layer_norm", "gelu"]))
    event(f"origin:composite:{op}")
    drawn = draw(samples(programs(ops=[op], max_nodes=1)))
    return Case(drawn.program, list(drawn.inputs), backends, origin=f"composite/{op}")


#: How a strided-matmul operand reaches the matmul (each but "contiguous" a view of a larger
#: input), and the path it took through the BLAS stage (``compiler/lower/blas.py``; measured on
#: the bufferized modules): a view the lowering passes on as it is reaches gemm with a leading
#: dimension or the loop fallback; one it copies first reaches a plain gemm on the copy.
OPERAND_LAYOUTS = (
    "leading-dimension",  # rows padded: gemm with lda > columns
    "transposed",  # a transposed view: copied (a plain gemm)
    "inner-step",  # x[:, ::2]: no gemm layout, the loop fallback
    "negative-step",  # x[::-1] or x[:, ::-2]: copied (a plain gemm)
    "offset",  # a view starting inside its input, unit strides: gemm with a leading dimension
    "contiguous",
)


def _operand_view(
    draw: st.DrawFn,
    b: ProgramBuilder,
    batch: tuple[int, ...],
    shape: tuple[int, int],
    dtype: str,
    layouts: tuple[str, ...] = OPERAND_LAYOUTS,
) -> tuple[Any, str]:
    """A (batch +) ``shape`` operand in one of ``layouts``: an input and the index (and
    transposition) that view it so."""
    # Uniform: with ``sampled_from`` the right operand often repeated the left's layout (of 40
    # cases, 3 reached the loop fallback).
    layout = uniform(draw, layouts)
    # A transposed view is copied before the BLAS stage (a plain gemm): one in eight.
    transposed = layout == "transposed" or (layout != "contiguous" and draw(st.integers(0, 7)) == 0)
    rows, cols = shape[::-1] if transposed else shape
    steps = [1, 1]
    if layout == "inner-step":
        steps[1] = draw(st.integers(2, 3))
    elif layout == "negative-step":
        steps = [draw(st.sampled_from([-1, 1, -2])), draw(st.sampled_from([-1, 1, -2]))]
        steps[draw(st.integers(0, 1))] = -draw(st.integers(1, 2))  # one at least
    pads = [0, 0]
    if layout in ("leading-dimension", "offset", "negative-step", "inner-step"):
        pads = [draw(st.integers(0, 2)), draw(st.integers(1, 3))]
    if layout == "offset":
        pads[0] = draw(st.integers(1, 2))
    extents = (rows, cols)
    base = tuple((e - 1) * abs(st_) + 1 + p for e, st_, p in zip(extents, steps, pads, strict=True))
    x = b.input(batch + base, dtype)
    if layout == "contiguous":
        view = x
    else:
        key = []
        for extent, step, pad, n in zip(extents, steps, pads, base, strict=True):
            start = pad if layout == "offset" else draw(st.integers(0, pad))
            if step > 0:
                key.append(slice(start, start + (extent - 1) * step + 1, step))
            else:
                first = n - 1 - start
                stop = first + extent * step
                key.append(slice(first, stop if stop >= 0 else None, step))
        view = b.node("index", x, key=(slice(None),) * len(batch) + tuple(key))
    if transposed:
        view = b.node("permute_dims", view, axes=(0, 2, 1)) if batch else b.node("transpose", view)
    return view, layout + ("+T" if transposed and layout != "transposed" else "")


@st.composite
def strided_matmul_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """matmul of views in the layouts of ``OPERAND_LAYOUTS`` (rows padded, transposed, inner and
    negative steps, offsets), so the BLAS substitution must pass leading dimensions, or fall
    back to loops, correctly on each operand, and the lowering copy the views it must copy. At
    least one operand is not a plain input. A third of them multiply operands of two dtypes
    (``MIXED_MATMUL_DTYPES``, of values that are not integers), which NumPy computes in the
    wider one."""
    dtype = draw(st.sampled_from(["float32", "float64"]))
    dtypes = (dtype, dtype)
    if draw(coin(3)) == 2:
        dtypes = uniform(draw, MIXED_MATMUL_DTYPES)
        event(f"strided-matmul-dtypes:{dtypes[0]}@{dtypes[1]}")
    sides = draw(st.lists(st.integers(2, 7), min_size=3, max_size=3, unique=True))
    # Half of them have a unit extent (m, k or n is 1; the coin shrinks toward none): a (1, K)
    # row or a (K, 1) column, whose stride along it is never read, is where the BLAS helper's
    # one-row and one-column layout tests decide (a planted test of the row count instead of
    # the column count sent x[1:2, ::2] to gemm as contiguous; with extents from 2 no case
    # could show it).
    unit = draw(st.integers(0, 5))
    if unit >= 3:
        sides[unit - 3] = 1
    m, k, n = sides
    batch = draw(st.sampled_from([(), (2,)]))
    b = ProgramBuilder()
    left, left_layout = _operand_view(draw, b, batch, (m, k), dtypes[0])
    views = OPERAND_LAYOUTS if left_layout != "contiguous" else OPERAND_LAYOUTS[:-1]
    right, right_layout = _operand_view(draw, b, batch, (k, n), dtypes[1], views)
    out = b.node("matmul", left, right)
    event(f"origin:strided-matmul:rank{len(batch) + 2}")
    event(f"strided-matmul:{left_layout}@{right_layout}")
    program = b.build(out)
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    # Integers (exact in every dtype: a sum's order changes no bit), but where the dtypes differ:
    # there a value the narrower dtype cannot hold is what an operand cast to it would change.
    inputs = [
        (
            (rng.standard_normal(i.shape) * 4).astype(i.dtype)
            if dtypes[0] != dtypes[1] and np.dtype(i.dtype).kind != "i"
            else np.round(rng.standard_normal(i.shape) * 4).astype(i.dtype)
        )
        for i in program.inputs
    ]
    return Case(program, inputs, backends, origin="strided-matmul")


#: The (left, right) operand dtypes of a mixed strided-matmul case: each narrower than NumPy's
#: result on one side or the other (a trace rule that cast the right operand to the left one's
#: dtype, not to the result's, made float32 @ float64 a float32 product, unseen in 60 s
#: sessions: 1 case in 80 had a matmul of two dtypes whose left one was the narrower).
MIXED_MATMUL_DTYPES = (
    ("float32", "float64"), ("float64", "float32"), ("int32", "float32"),
    ("float32", "int32"), ("int32", "float64"), ("float64", "int32"),
    ("float16", "float32"), ("float32", "float16"), ("bfloat16", "float32"),
    ("float32", "bfloat16"), ("float16", "float64"), ("bfloat16", "float64"),
)  # fmt: skip


#: The ops a strided-op case applies to views (gather in five of eighteen: cpu-vector's
#: ``gathers`` stage exists for a table that is a strided view, random programs almost never
#: make one, and only some views and shapes become a vector.gather).
STRIDED_OPS = (
    "gather", "gather", "gather", "gather", "gather", "sum", "max", "mean", "var", "softmax",
    "layer_norm", "gelu", "exp", "tanh", "add", "maximum", "where", "astype",
)  # fmt: skip


@st.composite
def strided_op_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """One op other than matmul on operands that are all strided views of larger inputs
    (``programs(views=1)``: every fresh operand, with the values of every regime), so each op's
    kernel reads strided, offset, reversed and transposed memrefs; in random programs a view
    is one fresh operand in eight, and most of them met a matmul or a layout op."""
    known = set(generation_order())  # the table's (a plugin's or a mutant's may lack one)
    op = draw(st.sampled_from([op for op in STRIDED_OPS if op in known]))
    # Half of them: a binary op's second operand of one more leading dim, so the first, a view,
    # is broadcast (a GPU reversed read mapped through too few loops failed there alone).
    broadcasts = draw(coin(2)) == 1
    drawn = draw(samples(programs(ops=[op], max_nodes=3, views=1, broadcasts=broadcasts)))
    event(f"origin:strided-op:{op}")
    return Case(drawn.program, list(drawn.inputs), backends, origin=f"strided-op/{op}")


#: The dtypes of a gather's table (``gather_cases``), each as often: a random program's tables
#: were float16 in 2% of its gathers.
GATHER_DTYPES = ("float32", "float64", "float16", "bfloat16", "int32")
#: (longest side, highest rank) of a gather case's shapes: a program's sides of up to 6 give
#: vectors of a few lanes, never the long masked gathers that LLVM's code generation for 16-bit
#: lanes at -O0 meets (a held-out plant that marked such a kernel optnone aborted on 545 ids).
GATHER_SIZES = ((6, 3), (40, 3), (300, 2))


@st.composite
def gather_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """Gathers (and what follows them, up to three steps) from tables of one drawn dtype, half
    of their fresh operands strided views, sides of up to 6, 40 or 300 (``GATHER_SIZES``): the
    lookup's lowerings (cpu-vector's masked and strided gathers, ids of rank 2 from tables of
    rank 2, unit dims of a view, 16-bit tables at -O0) were a gather in 14 of 1000 default cases
    each; three held-out plants there went unseen by 60 s sessions."""
    dtype = uniform(draw, GATHER_DTYPES)
    side, rank = uniform(draw, GATHER_SIZES)
    strategy = programs(
        ops=["gather"], dtypes=[dtype], max_nodes=3, views=2, max_side=side, max_rank=rank
    )
    drawn = draw(samples(strategy))
    event(f"origin:gathers:{dtype}")
    return Case(drawn.program, list(drawn.inputs), backends, origin=f"gathers/{drawn.regime}")


@st.composite
def invalid_cases(
    draw: st.DrawFn, backends: tuple[str, ...], violations: tuple[str, ...] | None = None
) -> Case:
    """A valid program plus exactly one violation (of ``violations``, any if None), for the
    error-path oracle."""
    invalid = draw(invalid_programs(violations))
    inputs = draw(input_values(invalid.inputs))
    event(f"origin:invalid:{invalid.violation}")
    return Case(invalid, list(inputs), backends, origin=f"invalid/{invalid.violation}")


#: The share of a default session's cases (percent) that are jit sequences: one jitted function
#: called in sequence (its specialization cache, static arguments, argument trees, captured
#: arrays). Each costs a few compiles, so the share stays small.
SEQUENCE_PERCENT = 10

#: The share (percent) of GPT-2 models (``gpt2_cases``): the compiler's model code, above the
#: ops (checkpoint loader, the forward pass's composition, generation, input checks), which no
#: program reaches. Each compiles five sublayer kernels on its backend, a few seconds. At 2, a
#: 60 s session held about 3 (a forward pass refusing a sequence as long as its context, drawn
#: in a quarter to a half of them, survived one; a session of models alone found it in 2 s).
GPT2_PERCENT = 3

#: The session's mix, in percent of the cases (``MIX_PERCENT``). Random programs get the most:
#: they reach every op, dtype, operand kind and layout; the others target one structure each.
#: Invalid programs are rejected before any MLIR is built, so they cost little, and 16
#: violations with their variants need the cases (at 10%, one in three 60 s sessions missed a
#: planted bound check that took ``x[n]`` of n rows for valid). Drawn
#: as one integer (shrinking toward random programs), not ``st.one_of``, which gave random
#: programs a fifth of the cases (90 of 400 draws) where they were listed as a third.
MIX_PERCENT = {
    "programs": 35,
    "composite": 13,
    "structure": 6,
    "gathers": 4,
    "invalid": 15,
    "strided-matmul": 9,
    "strided-op": 5,
    "jit-sequence": SEQUENCE_PERCENT,
    "gpt2": GPT2_PERCENT,
}
assert sum(MIX_PERCENT.values()) == 100


@st.composite
def sequence_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """A jit sequence on one of ``backends`` (cache bugs do not depend on the target; the
    first call is also an ordinary case for the other oracles)."""
    sequence = draw(jit_sequences())
    backend = draw(st.sampled_from(backends))
    event("origin:jit-sequence")
    return Case.from_sequence(sequence, (backend,), origin="jit-sequence")


@st.composite
def gpt2_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """A small GPT-2 model on one of ``backends`` (``strategies.model.gpt2.ModelSpec``): one to
    three blocks, or eleven or twelve (block numbers of two digits), heads and head depths of
    one to four, up to six tokens, a vocabulary of 2 to 24; the checkpoint written in every
    layout HuggingFace's are found in; three in four of them also making every call the model
    must refuse (``INVALID``: a refusal costs no compile), and a quarter with token embeddings
    in equal pairs (tied logits). Generation keeps the window at one or two lengths (each
    length is a compile)."""
    layers = uniform(draw, (1, 1, 2, 2, 3, 11, 12))
    heads = uniform(draw, (1, 2, 3, 4))
    width = heads * uniform(draw, (1, 2, 3, 4))
    length = 1 + draw(coin(6))
    steps = uniform(draw, (0, 0, 1, 2, 3))
    context = length + draw(coin(2 if steps else 4))
    vocab = 2 + draw(coin(23))
    prefix, lm_head, buffers, file = (draw(coin(2)) == 1 for _ in range(4))
    invalid = ALL_INVALID if draw(coin(4)) else ""
    spec = ModelSpec(
        layers, heads, width, context, vocab, length, steps,
        prefix=prefix, lm_head=lm_head, buffers=buffers, file=file,
        stored=uniform(draw, STORED),
        order=draw(coin(4)) and draw(st.integers(1, 2**31 - 1)),
        invalid=invalid,
        ties=draw(coin(4)) == 3,
    )  # fmt: skip
    seed = draw(st.integers(0, 2**31 - 1))
    backend = uniform(draw, backends)
    event("origin:gpt2")
    if layers > 10:
        event("gpt2:two-digit-blocks")
    return Case.from_gpt2(spec, seed, (backend,), origin="gpt2")


@st.composite
def _mixed(draw: st.DrawFn, kinds: dict[str, st.SearchStrategy[Case]]) -> Case:
    """One case of the kind a percent draw lands on (``MIX_PERCENT``, over the kinds given)."""
    shares = [(kind, MIX_PERCENT[kind]) for kind in MIX_PERCENT if kind in kinds]
    point = draw(st.integers(0, sum(percent for _, percent in shares) - 1))
    for kind, percent in shares:
        if point < percent:
            return draw(kinds[kind])
        point -= percent
    raise AssertionError("the shares cover the draw")


#: How many cases a kind may run ahead of its share of the cases judged so far (``MixBalance``).
MIX_SLACK = 3


def mix_kind(case: Case) -> str | None:
    """The ``MIX_PERCENT`` kind ``case`` was drawn as (None: a focused case, outside the mix)."""
    kind = case.origin.split("/", 1)[0]
    return kind if kind in MIX_PERCENT else None


class MixBalance:
    """Keeps the kinds of the cases a session judges at ``MIX_PERCENT``.

    The percent draw is uniform, but Hypothesis follows each fresh example with up to five
    mutants of it (spans of one label copied over each other), which keep its kind; kinds with
    more such spans got more mutants, and one process's 300 cases came out 39% random programs
    and 24% composites (46% and 14% drawn), another's 29% programs. A case whose kind is more
    than ``MIX_SLACK`` cases ahead of its share is skipped before it compiles (a generation lost,
    not a compile and run on every backend). Focused cases are outside the mix.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = dict.fromkeys(MIX_PERCENT, 0)

    def ahead(self) -> tuple[str, ...]:
        """The kinds whose next case would be skipped now (``admit``): a round's strategy leaves
        them out (``cases(held_back=...)``), so its generations go to the kinds that are behind.
        In a 10-minute two-driver session, 4762 drawn cases were skipped as ahead of their share
        (and 3352 as repeats) for 2608 judged: Hypothesis's mutants keep their example's kind."""
        return tuple(kind for kind in self.counts if self._over(kind))

    def admit(self, case: Case) -> bool:
        """Whether to judge ``case``; an admitted case is counted."""
        kind = mix_kind(case)
        if kind is None:
            return True
        if self._over(kind):
            return False
        self.counts[kind] += 1
        return True

    def _over(self, kind: str) -> bool:
        """Would one more case of ``kind`` put it past its share (with ``MIX_SLACK``)?"""
        total = sum(self.counts.values()) + 1
        return self.counts[kind] + 1 > MIX_PERCENT[kind] / 100 * total + MIX_SLACK


def cases(
    backends: tuple[str, ...] = CPU_BACKENDS,
    max_nodes: int = 6,
    mix: str = "all",
    sampled: tuple[str, ...] | None = None,
    focus: tuple[tuple[str, str], ...] = (),
    focus_regimes: tuple[str, ...] = (),
    held_back: tuple[str, ...] = (),
) -> st.SearchStrategy[Case]:
    """The session's mix (``all``, less the ``held_back`` kinds: ``MixBalance.ahead``), or
    random programs only (``programs``), or jit sequences only (``sequences``), or GPT-2 models
    only (``models``); random programs
    come first so shrinking heads towards them.
    ``sampled`` backends (by default the targets as shipped, ``SAMPLED_BACKENDS``, when
    ``backends`` are the default ones) join a share of the cases, and every case whose int32
    arithmetic may wrap (``wraps``). ``focus``: (op, dtype) pairs a share of the cases
    (``FOCUS_SHARE``) start from (``focus_cases``, with values from ``focus_regimes``, any if
    empty; the coin shrinks toward the mix)."""
    default = sampled is None and tuple(backends) == CPU_BACKENDS
    if sampled is None:
        sampled = SAMPLED_BACKENDS if default else ()
    mixed = _mix(backends, max_nodes, mix, held_back)
    if focus and mix in ("all", "programs"):
        # Its own name: the lambda reads it when drawing, after ``last`` below is rebound (with
        # FOCUS_SHARE at 0.5 no case was focused, the coin compared with the sampled share's).
        focus_last = round(1 / FOCUS_SHARE) - 1
        focused, plain = focus_cases(backends, tuple(focus), tuple(focus_regimes)), mixed
        mixed = coin(focus_last + 1).flatmap(lambda face: focused if face == focus_last else plain)
    if default:
        mixed = _sampled_gateways(mixed)
    strategy = with_layouts(with_spellings(with_mlir_variants(mixed, backends)))
    if default and _gpu_available():
        strategy = _sampled_gpu(strategy)
    if default:
        strategy = _sampled_triage(strategy)
    if not sampled:
        return strategy
    last = round(1 / SAMPLED_SHARE) - 1  # the coin shrinks toward 0: without them

    def sample(pair: tuple[Case, int]) -> Case:
        case, face = pair
        missing = tuple(b for b in sampled if b not in case.backends)
        always = wraps(case) or at_the_edges(case) or rewritten_call(case)
        if not missing or (face != last and not always):
            return case
        if face != last:
            kind = "int32-wraps" if wraps(case) else "edge-sweep" if at_the_edges(case) else None
            event(f"sampled:{kind or 'rewritten-call'}")
        return case.on(tuple(case.backends) + missing)

    return st.tuples(strategy, coin(last + 1)).map(sample)


def _one_program(case: Case) -> bool:
    """May a sampled backend join ``case``? Not a jit sequence or a GPT-2 model (they run on one
    backend) nor an invalid program: their oracles call the CPU targets only."""
    return not case.carries_run and case.invalid is None


def _gpu_available() -> bool:
    """Can ``GPU_SAMPLED`` run here (this MLIR has the passes of its pipeline)?"""
    from compiler import backends as registry

    return registry.get(GPU_SAMPLED).unavailable() is None


def _triage_variants() -> tuple[str, ...]:
    """The triage variants (``TRIAGE_SAMPLED``) this machine runs (``+generic-cpu`` is x86's)."""
    from compiler.backends import why_not

    return tuple(name for name in TRIAGE_SAMPLED if why_not(name) is None)


def _sampled_triage(strategy: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    """``strategy``'s cases, ``TRIAGE_SHARE`` of them (and every conversion sweep to integers,
    and every case whose int32 arithmetic may wrap) also on one triage variant, drawn (jit
    sequences and invalid programs aside: their oracles call the CPU targets only). The coin
    shrinks toward without."""
    from compiler.pipelines import parse_variant

    variants = _triage_variants()
    if not variants:
        return strategy
    last = round(1 / TRIAGE_SHARE) - 1
    # A conversion to integers at its range's ends (the "truncation" sweeps) is what the poison
    # checks judge: each such case runs one (drawn a sixteenth of the time, a plant in them was
    # met by no 60 s session). So is int32 arithmetic that may wrap (``wraps``): an op whose
    # lowering claims no signed wrap (``sub nsw``) computes poison where NumPy wraps, whether
    # or not LLVM then exploits it (a planted nsw negation showed only as ``-x < 0`` folded to
    # ``x > 0`` at -O3, and survived a 60 s session).
    poison = [v for v in variants if parse_variant(v)[4] == "poison-checks"]

    def sample(drawn: tuple[Case, int, int]) -> Case:
        case, face, which = drawn
        if not _one_program(case):
            return case
        if poison and (case.origin == "sweep/truncation" or wraps(case)):
            variant = poison[which % len(poison)]
        elif face != last:
            return case
        else:
            variant = variants[which]
        event(f"sampled:triage-{parse_variant(variant)[4]}")
        return case.on((*case.backends, variant))

    return st.tuples(strategy, coin(last + 1), coin(len(variants))).map(sample)


def _gateways() -> tuple[str, ...]:
    """The ``GATEWAY_SAMPLED`` backends this machine runs."""
    from compiler import backends as registry
    from compiler import mlir_variants

    return tuple(
        name
        for name in GATEWAY_SAMPLED
        if mlir_variants.is_draw(name) or registry.get(name).unavailable() is None
    )


def _sampled_gateways(strategy: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    """``strategy``'s cases, each ``GATEWAY_SAMPLED`` backend joining its share of them (a
    coin each, shrinking toward without; jit sequences and invalid programs aside: their
    oracles call the CPU targets only); an ``mlir:*`` draw joins as a drawn concrete variant
    (``mlir_variant_names``). Only the cases that may take one draw their coins, and only those
    that take a variant draw its name: choices drawn for every case (a variant name each) had
    the targets as shipped on 17% of the cases where a quarter is meant."""
    from compiler import mlir_variants
    from compiler.pipelines import split_level

    gateways = _gateways()
    if not gateways:
        return strategy

    @st.composite
    def sampled(draw: st.DrawFn) -> Case:
        case = draw(strategy)
        if not _one_program(case):
            return case
        joining = []
        # A gather's out-of-range id is refused when the kernel runs, by each backend's own
        # check: graph-numpy joins every case that has one (a few ms), not a quarter (its check
        # taking -1 for a row survived a 60 s session).
        checked = any(
            primitives.get(op).kind in primitives.RUN_TIME_CHECKED_KINDS for op in case.program.ops
        )
        for name in gateways:
            last = round(1 / GATEWAY_SAMPLED[name]) - 1
            drawn = draw(coin(last + 1)) == last or (checked and name == "graph-numpy")
            if not drawn or name in case.backends:
                continue
            event(f"sampled:{name.partition('@')[0]}")
            if mlir_variants.is_draw(name):
                name = draw(mlir_variant_names(False, split_level(name)[1]))
            joining.append(name)
        return case.on((*case.backends, *joining)) if joining else case

    return sampled()


def reads_reversed(case: Case) -> bool:
    """Does ``case``'s program read a reversed view of an input (``x[::-1]``)?"""
    return bool(ops_reading_views(case.program, "reversed"))


def _sampled_gpu(strategy: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    """``strategy``'s cases, ``GPU_SHARE`` of them also on ``GPU_SAMPLED`` (jit sequences and
    invalid programs aside: their oracles call the CPU targets only), and every case focused
    on a view's layout (``focus._view_cases``), of one op on views (``strided_op_cases``) or
    reading a reversed view (``reads_reversed``): a layout is a code path of its own in the GPU
    lowering too (a reversed read is a ``memref.load`` there), and at its share the view items'
    few cases held about three GPU cases a session (a planted bug of the GPU's reversed reads
    survived 4 of 4 60 s sessions, and 7 of 10 with half of those cases on the GPU; another,
    whose reversed reads failed only where the view was broadcast, survived 60 s sessions with
    every view case on the GPU).
    The coin shrinks toward without."""
    last = round(1 / GPU_SHARE) - 1

    def sample(pair: tuple[Case, int]) -> Case:
        case, face = pair
        if not _one_program(case):
            return case
        gpu = face == last or case.origin.startswith(("focus/views/", "strided-op/"))
        gpu = gpu or reads_reversed(case)
        if not gpu:
            return case
        event("sampled:gpu")
        return case.on((*case.backends, GPU_SAMPLED))

    return st.tuples(strategy, st.integers(0, last)).map(sample)


#: int32 ops whose result wraps around in NumPy where it does not fit (abs(-2**31) included;
#: an int32 sum or mean, given dtype=np.int32, adds modulo 2**32).
WRAPPING = ("add", "subtract", "multiply", "negative", "unary_minus", "abs", "sum", "mean")


def wraps(case: Case) -> bool:
    """Whether ``case``'s program has an int32 op that wraps around where its result does not
    fit (``WRAPPING``). Such cases (about one in twenty) run the sampled shipped targets every
    time: LLVM reasons from what integer ops claim about overflow (no-signed-wrap flags,
    poison), so only optimized code can be wrong where NumPy wraps (an int32 ``+`` marked nsw
    made ``(x + y) > x`` into ``y > 0`` at -O3, right at -O0). The values that wrap come from
    the case's regime or from its siblings', which run on the case's kernels: ``extreme`` is
    an edge regime of every binary op; requiring them in the case's own inputs left 4 cases
    in 1500."""
    nodes = getattr(case.subject, "nodes", ())
    return any(n.op in WRAPPING and n.type.dtype == "int32" for n in nodes)


def rewritten_call(case: Case) -> bool:
    """Whether ``case``'s program raises a constant base that LLVM's library call simplifier
    rewrites the power for (``makers.SPECIAL_BASES``: pow(8.0, x) as exp2(3.0 * x), 355 ulps
    off at -O3 in float64). Such cases run the sampled shipped targets every time: only an
    optimized pipeline rewrites a call, and a focused ``8.0 ** x`` met one a quarter of the
    time."""
    return any(
        node.op == "power"
        and isinstance(node.args[0], Const)
        and special_base(node.args[0].value) is not None
        for node in getattr(case.subject, "nodes", ())
    )


def at_the_edges(case: Case) -> bool:
    """Whether ``case`` is an accuracy sweep at its op's edges (subnormals, infinities, one-signed
    rows, ties: ``focus.sweep_cases``' "extreme" and "tails" sweeps). They run the sampled shipped
    targets every time, as users' kernels: LLVM's optimizer rewrites what it can prove about
    values (a float32 minimum of two extended bfloat16 values narrowed to a bfloat16 one, whose
    conversion flushed a subnormal) only there."""
    return case.origin.startswith(("sweep/extreme", "sweep/tails"))


#: The share of cases in each spelling but the default (``compiler.primitives.SPELLINGS``):
#: "numpy" (``np.add(a, b)``, ``np.sum(a)``: the frontend's ``__array_ufunc__`` and
#: ``__array_function__`` dispatch, which NumPy-style user code goes through) and "methods"
#: (``a @ b``, ``x.sum(axis=0)``, ``x.reshape(2, 3)``: the traced tensor's methods), which the
#: array-namespace spelling never reaches.
SPELLING_SHARE = {"numpy": 1 / 3, "methods": 1 / 3}


def with_spellings(strategy: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    """Shares of the cases (``SPELLING_SHARE``; not jit sequences, which spell their own calls,
    nor cases already spelled) respelled; the draw shrinks toward the default spelling."""
    slots = round(1 / min(SPELLING_SHARE.values()))
    spelled = {slots - 1 - i: name for i, name in enumerate(SPELLING_SHARE)}

    def spell(pair: tuple[Case, int]) -> Case:
        case, face = pair
        if face not in spelled or case.carries_run or "spelling" in case.extra:
            return case  # a focused case keeps the spelling it was drawn for
        respelled = case.respelled(spelled[face])
        if case.invalid is not None and not _rejected_alike(case, respelled):
            return case  # the violation does not survive this spelling in NumPy itself
        event(f"spelling:{spelled[face]}")
        return respelled

    return st.tuples(strategy, coin(slots)).map(spell)


#: The share of cases whose inputs reach the compiler in other memory layouts (Fortran order,
#: negative strides, strided views, unaligned starts, read-only: ``run/layouts.py``).
LAYOUT_SHARE = 0.25


def with_layouts(strategy: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    """A share of the valid program cases (``LAYOUT_SHARE``) with a layout drawn per input (the
    default among the choices: each shrinks toward a plain array)."""
    from ..run.layouts import DEFAULT, applicable

    last = round(1 / LAYOUT_SHARE) - 1

    @st.composite
    def laid_out(draw: st.DrawFn) -> Case:
        case = draw(strategy)
        if draw(coin(last + 1)) != last or case.carries_run or case.invalid:
            return case
        names = [draw(st.sampled_from([DEFAULT, *applicable(a)])) for a in case.inputs]
        if all(name == DEFAULT for name in names):
            return case
        for name in set(names) - {DEFAULT}:
            event(f"input-layout:{name}")
        return case.with_layouts(names)

    return laid_out()


def _case_regime(case: Case) -> str:
    """The value regime a case's origin names (``programs/ties``, ``focus/special``), or ""."""
    regime = case.origin.rpartition("/")[2]
    return regime if regime in REGIMES else ""


def _edges_by_step(program: Any) -> dict[str, tuple[str, ...]]:
    """The regimes at the edges of each step of ``program``: its op's (``edge_regimes``), and a
    cast's own conversion's (``cast_edge_regimes``: "astype float32->bool" is at NaN)."""
    edges = {op: edge_regimes(op) for op in set(program.ops) if op != "astype"}
    for node in program.nodes:
        if node.op == "astype":
            pair = (program.arg_types(node)[0].dtype, node.type.dtype)
            edges["astype " + "->".join(pair)] = cast_edge_regimes(*pair)
    return edges


@st.composite
def siblings(draw: st.DrawFn, case: Case, count: int = SIBLINGS) -> tuple[Case, ...]:
    """Up to ``count`` siblings of ``case`` (none for a jit sequence, an accuracy sweep, whose
    hundreds of dense values are its point, or a program without inputs): each draws one of the
    program's steps and one regime at its edges (``_edges_by_step``) other than the case's own
    and the other siblings', and values for every input from it (ids in range, inputs of a
    float -> int cast ordinary, as for any case); origin "<case's>+<regime>". An invalid
    program's siblings are its valid part with other violations (``_invalid_siblings``); an
    out-of-range case's, its program with an id past an end in its other gathers' ids
    (``focus.out_of_range_siblings``)."""
    program = case.program
    if case.invalid is not None:
        return draw(_invalid_siblings(case, count))
    if is_out_of_range(case):
        return draw(out_of_range_siblings(case, count))
    if (
        case.carries_run or not program.inputs
        or case.origin.startswith("sweep/") or not program.nodes
    ):  # fmt: skip
        return ()
    edges = _edges_by_step(program)
    taken = {_case_regime(case)}
    # A case whose int32 arithmetic may wrap (``wraps``) has the dtype's ends in its first
    # sibling: they are what wraps, on every backend it runs (the shipped targets, the poison
    # checks); drawn as any sibling, a planted nsw negation (``-x < 0`` folded at -O3, poison
    # at INT32_MIN) met them in no 60 s session.
    forced = ["extreme"] if wraps(case) and "extreme" not in taken else []
    found = []
    for index in range(count):
        if index < len(forced):
            regime = forced[index]
        else:
            step = draw(st.sampled_from(sorted(edges)))
            choices = [r for r in edges[step] if r not in taken]
            choices = choices or [r for r in ANY_OP_EDGES if r not in taken]
            if not choices:
                break
            regime = draw(st.sampled_from(choices))
        taken.add(regime)
        inputs = draw(input_values(program, regime))
        found.append(
            replace(case, inputs=list(inputs), recipes=[], origin=f"{case.origin}+{regime}")
        )
    return tuple(found)


@st.composite
def _invalid_siblings(draw: st.DrawFn, case: Case, count: int) -> tuple[Case, ...]:
    """Up to ``count`` invalid programs with the case's valid part and a violation other than
    the case's and the other siblings' (not an unsupported input dtype: that one's inputs are
    not the program's), each on values drawn for its inputs; origin "<case's>+<violation>".
    Rejected while tracing, each costs a trip to the worker and no compile: at one violation a
    case, 16 violations and their variants waited for the mix's tenth of the cases, and a bound
    check that took ``x[n]`` of n rows for valid survived 60 s sessions."""
    invalid = case.invalid
    base, _ = invalid.program.drop_unused_inputs()
    taken = {invalid.violation, "unsupported_dtype"}
    found = []
    for _ in range(count):
        choices = [name for name in VIOLATIONS if name not in taken]
        if not choices:
            break
        other = draw(violations_of(base, choices))
        taken.add(other.violation)
        inputs = draw(input_values(other.inputs))
        origin = f"{case.origin}+{other.violation}"
        found.append(Case(other, list(inputs), case.backends, origin=origin))
    return tuple(found)


def with_siblings(
    strategy: st.SearchStrategy[Case], count: int = SIBLINGS
) -> st.SearchStrategy[tuple[Case, tuple[Case, ...]]]:
    """Each case of ``strategy`` with its ``siblings`` (a fuzz session judges them after it)."""

    @st.composite
    def pair(draw: st.DrawFn) -> tuple[Case, tuple[Case, ...]]:
        case = draw(strategy)
        return case, draw(siblings(case, count))

    return pair()


def _rejected_alike(case: Case, respelled: Case) -> bool:
    """Does NumPy reject an invalid program written in ``respelled``'s spelling as it does in
    the default one (the error-path oracle asks NumPy in the default spelling)?"""

    def outcome(subject_case: Case) -> str:
        function = subject_case.subject.as_function(np, subject_case.spelling)
        try:
            with np.errstate(all="ignore"):
                function(*subject_case.inputs)
        except (ValueError, TypeError, IndexError) as error:
            return type(error).__name__
        except Exception:  # noqa: BLE001 - anything else: not a rejection to compare
            return "other"
        return "accepted"

    return outcome(case) == outcome(respelled)


def _mix(
    backends: tuple[str, ...], max_nodes: int, mix: str, held_back: tuple[str, ...] = ()
) -> st.SearchStrategy[Case]:
    if mix == "programs":
        return program_cases(backends, max_nodes)
    if mix == "sequences":
        return sequence_cases(backends)
    if mix == "models":
        return gpt2_cases(backends)
    if mix != "all":
        raise ValueError(f"unknown case mix {mix!r} (all, programs, sequences, models)")
    kinds = {
        "programs": program_cases(backends, max_nodes),
        "invalid": invalid_cases(backends),
        "structure": attention_cases(backends),
        "composite": composite_cases(backends),
        "strided-matmul": strided_matmul_cases(backends),
        "strided-op": strided_op_cases(backends),
        "gathers": gather_cases(backends),
        "jit-sequence": sequence_cases(backends),
        "gpt2": gpt2_cases(backends),
    }
    kept = {kind: strategy for kind, strategy in kinds.items() if kind not in held_back}
    return _mixed(kept or kinds)


# --------------------------------------------------------------------------------------------
# mlir:<variant> backends (compiler/mlir_variants/): ``mlir:*`` draws one per case


def mlir_variant_names(
    known_broken: bool = False, level: int | None = None
) -> st.SearchStrategy[str]:
    """A valid ordered subset of the catalog as a backend name: up to 3 tensor entries, maybe a
    bufferization option, up to 2 buffer entries, maybe one lowering entry with up to 3 loop
    entries that follow it. Shrinks towards fewer entries and earlier ones in catalog order
    (the catalog is read when drawing: a plugin's entries take part)."""
    from compiler import mlir_variants

    @st.composite
    def draw_name(draw: st.DrawFn) -> str:
        catalog = mlir_variants.drawable()

        def of(stage: str) -> list[str]:
            return [e.id for e in catalog if e.stage == stage]

        def some(stage: str, most: int) -> list[str]:
            ids = of(stage)
            return draw(st.lists(st.sampled_from(ids), unique=True, max_size=most)) if ids else []

        chosen = some("tensor", 3)
        if of("bufferize") and draw(st.integers(0, 4)) == 4:  # a fifth of the variants
            chosen.append(draw(st.sampled_from(of("bufferize"))))
        chosen += some("buffer", 2)
        if of("lower") and draw(st.booleans()):
            lower = draw(st.sampled_from(of("lower")))
            loops = [e.id for e in catalog if e.stage == "loops" and lower in e.after]
            chosen.append(lower)
            if loops:
                chosen += draw(st.lists(st.sampled_from(loops), unique=True, max_size=3))
        if not chosen and of("tensor"):
            chosen.append(draw(st.sampled_from(of("tensor"))))
        event(f"mlir-variant entries: {len(chosen)}")
        name = mlir_variants.Variant(tuple(chosen), known_broken).name
        return name if level is None else f"{name}@O{level}"

    return draw_name()


def with_mlir_variants(
    strategy: st.SearchStrategy[Case], backends: tuple[str, ...]
) -> st.SearchStrategy[Case]:
    """Each ``mlir:*`` (``mlir:known-broken:*``, maybe ``@O<n>``) in a case's backends replaced
    by a drawn variant: the case carries the concrete name, so replay, minimization and the
    reproducer see an ordinary backend."""
    from compiler import mlir_variants
    from compiler.pipelines import split_level

    draws = [b for b in dict.fromkeys(backends) if mlir_variants.is_draw(b)]
    if not draws:
        return strategy
    names = [
        mlir_variant_names(b.startswith(mlir_variants.PREFIX + mlir_variants.KNOWN_BROKEN),
                           split_level(b)[1])
        for b in draws
    ]  # fmt: skip

    def place(pair: tuple[Case, tuple[str, ...]]) -> Case:
        case, drawn = pair
        chosen = dict(zip(draws, drawn, strict=True))
        return case.on(tuple(dict.fromkeys(chosen.get(b, b) for b in case.backends)))

    return st.tuples(strategy, st.tuples(*names)).map(place)
