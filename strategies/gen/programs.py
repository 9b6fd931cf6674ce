"""Random valid programs, and (program, values) samples, drawn from the primitive table.

Generation grows a program one step at a time: draw the node count first (small), then per step
an op, a primary operand (usually the latest value, so the output depends on most nodes; else a
fresh input shaped for the op), and whatever else the op needs (broadcast partners, weights,
constants). Every choice shrinks toward fewer nodes, lower rank and smaller sides.

What the generator knows of an op comes from the compiler's primitive table: its kind picks the
maker, its result rule decides which dtypes it takes, and its metadata (cost, value domain and
range) guides the choices. An elementwise primitive added to the table is generated at once.

Programs use every promotion NumPy 2 defines, including those JAX does differently (an int32
operand meeting a float32 one gives float64 in NumPy, float32 in JAX): the harness adapts JAX
to NumPy's dtypes instead. One program in ``LOW_PRECISION_SHARE`` computes in float16 or
bfloat16 (whose promotions are NumPy's with ml_dtypes: bfloat16 with float16 or a Python float
is float32, bfloat16 @ bfloat16 is float32). ``implicit_int_to_float=False`` avoids them, for a
test that compares with unadapted JAX.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from compiler import primitives

from ..model import DTYPES, LOW_PRECISION_DTYPES, Program, Ref
from .makers import MAKERS
from .shapes import SHAPE_REGIMES, uniform
from .state import (
    BOOLS,
    Config,
    Gen,
    broadcast,
    generation_order,
    is_const_form,
    takes_bool,
    takes_const_left,
)
from .values import input_values, regimes

# --------------------------------------------------------------------------------------------
# Public strategies


def programs(
    *,
    max_nodes: int = 8,
    min_nodes: int = 1,
    ops: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
    max_rank: int = 3,
    max_side: int = 6,
    implicit_int_to_float: bool = True,
    first: str | Sequence[str] | None = None,
    views: int | None = None,
    view_layout: str = "",
    broadcasts: bool = False,
) -> st.SearchStrategy[Program]:
    """Valid programs of at most ``max_nodes`` nodes, from at least ``min_nodes`` generation steps
    (dead-code removal can leave fewer nodes; raise ``min_nodes`` for bigger fuzzing programs,
    at the price of shrinking no further than that).

    ``ops`` limits the ops steps are drawn from (indispensable helpers may still appear: the
    comparison feeding a where, the where or astype consuming a comparison, the add or matmul
    consuming a causal mask); ``dtypes`` limits input and cast dtypes
    (promotion, e.g. GELU's float64 constant, can still produce float64). ``first``: the op of
    the first step, or the ops of the first steps in order (a program focused on those ops; the
    shrinker may still delete those steps). ``views``: one fresh operand in this many is a
    strided view of a larger input (an ``index`` node: strided, offset, reversed or transposed);
    by default ``VIEW_ODDS`` where ``index`` is among the ops, else none; 1 makes every fresh
    operand a view while the node budget allows; ``view_layout`` (of ``VIEW_LAYOUTS``) makes
    them lean to that layout (a transposition where the rank allows, a reversal, a step or
    offset from past the first element). ``broadcasts``: a binary op's second operand is
    always of a shape drawn to broadcast with its first's (else half the time the same)."""
    order_all = generation_order()
    op_list = tuple(order_all if ops is None else ops)
    unknown = set(op_list) - set(order_all)
    if unknown:
        raise ValueError(f"unknown ops {sorted(unknown)}; choose from {order_all}")
    dtype_list = tuple(DTYPES if dtypes is None else (np.dtype(d).name for d in dtypes))
    if not implicit_int_to_float:  # ml_dtypes' promotions (composites of bfloat16 to float32)
        dtype_list = tuple(d for d in dtype_list if d not in LOW_PRECISION_DTYPES) or dtype_list
    if set(dtype_list) - set(DTYPES) or not dtype_list:
        raise ValueError(f"dtypes must be a non-empty subset of {DTYPES}, got {dtype_list}")
    if not 1 <= min_nodes <= max_nodes or max_rank < 1 or max_side < 2:
        raise ValueError("need 1 <= min_nodes <= max_nodes, max_rank >= 1 and max_side >= 2")
    order = tuple(op for op in order_all if op in op_list)
    firsts = (first,) if isinstance(first, str) else tuple(first or ())
    for step in firsts:  # an op, "astype->DTYPE" (a cast to that dtype), "OP@const-left",
        # "OP@const-wide"... or "OP@const=VALUE" (``is_const_form``), or "OP@bools" (``BOOLS``)
        op, _, form = step.partition("->")[0].partition("@")
        if op not in order:
            raise ValueError(f"first op {step!r} is not among the ops {order}")
        if form == BOOLS and not takes_bool(op):
            raise ValueError(f"first step {step!r}: the compiler takes no booleans for {op}")
        if form and form != BOOLS and (not is_const_form(form) or not takes_const_left(op)):
            raise ValueError(f"first step {step!r}: {op} takes no @{form} form")
    if views is None:
        views = VIEW_ODDS if "index" in order else 0
    if views < 0:
        raise ValueError(f"views must be >= 0 (0: no views), got {views}")
    if view_layout:
        _check_layout(view_layout)
    cfg = Config(
        max_nodes,
        min_nodes,
        order,
        dtype_list,
        max_rank,
        max_side,
        implicit_int_to_float,
        firsts,
        views,
        view_layout,
        broadcasts,
    )
    if not any(primitives.get(op).cost <= max_nodes and cfg.op_dtypes(op) for op in order):
        raise ValueError(f"no op in {order} can be generated with dtypes {dtype_list}")
    return _programs(cfg)


_JOINS = ("add", "multiply", "subtract", "maximum", "minimum")
#: One fresh operand in this many is a strided view (``programs(views=...)``'s default).
VIEW_ODDS = 8
#: The ops that make an operand a view of a larger input, or of another shape (``Gen.view``).
VIEW_OPS = ("index", "permute_dims", "reshape")


#: The layouts of a view that a kernel reads each its own way (``view_layout``): past its
#: input's first element with positive strides other than its row-major ones, its innermost
#: stride not one element (``x[1::2]``, ``x[2::3, -1]``, ``x[:, 1::2]``), or rows of
#: contiguous elements apart (padded: ``x[:, 1:3]``, ``x[1::2]`` of a matrix, a sub-matrix as
#: BLAS takes one, whose offset and row stride both count: a cpu-vector gather stage that
#: tested the innermost stride alone read such tables wrong, unseen while the two were one
#: layout, 5 of its 30 views), reversed (a negative step, which kernels copy or read element by
#: element) and transposed (permuted strides at offset 0), and reshaped (another shape of the
#: same values: ``reshape_sources``).
VIEW_LAYOUTS = ("offset-strided", "padded", "reversed", "transposed", "reshaped")


def _check_layout(layout: str) -> None:
    if layout not in VIEW_LAYOUTS:
        raise ValueError(f"unknown view layout {layout!r} (one of {VIEW_LAYOUTS})")


def ops_reading_views(
    program: Program, layout: str | None = None, broadcast: bool = False
) -> set[str]:
    """The ops of ``program`` that read a view of an input (an ``index`` or ``permute_dims``
    of an input, as ``Gen.view`` makes them); with ``layout`` (of ``VIEW_LAYOUTS``), only views
    of that layout; with ``broadcast``, only views of another shape than the op's result (an
    elementwise op broadcasts them)."""
    if layout is not None:
        _check_layout(layout)
    nodes = program.nodes
    found = set()
    for node in nodes:
        for arg in node.args:
            if getattr(arg, "kind", None) != "node" or nodes[arg.index].op not in VIEW_OPS:
                continue
            view = nodes[arg.index]
            source = view.args[0]
            if getattr(source, "kind", None) != "input":
                continue
            shape = program.inputs[source.index].shape
            if layout is not None and view_layout(view, shape) != layout:
                continue
            if broadcast and tuple(view.type.shape) == tuple(node.type.shape):
                continue
            found.add(node.op)
    return found


def view_layout(view: Any, shape: tuple[int, ...]) -> str:
    """The layout (``VIEW_LAYOUTS``) of ``view`` (an ``index``, ``permute_dims`` or
    ``reshape`` equation) of an input of ``shape``, or "" for another (a contiguous part, a
    step from the start, a reshape to the same shape)."""
    if view.op == "reshape":
        return "reshaped" if tuple(view.type.shape) != tuple(shape) else ""
    if view.op == "permute_dims":
        return "transposed" if list(view.attrs["axes"]) != sorted(view.attrs["axes"]) else ""
    if 0 in shape:
        return ""
    base = np.empty(shape, np.int8)
    part = base[view.attrs["key"]]
    if min(part.strides, default=0) < 0:
        return "reversed"
    offset = part.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    row_major = np.empty(part.shape, np.int8).strides
    if offset == 0 or part.strides == row_major:
        return ""
    return "padded" if part.ndim >= 2 and part.strides[-1] == part.itemsize else "offset-strided"


def _live(g: Gen) -> set[int]:
    """Node indices the last node depends on."""
    nodes = g.builder.nodes
    live: set[int] = set()
    stack = [len(nodes) - 1]
    while stack:
        i = stack.pop()
        if i not in live:
            live.add(i)
            stack.extend(a.index for a in nodes[i].args if isinstance(a, Ref) and a.kind == "node")
    return live


def _join_dead_branches(g: Gen) -> None:
    """Fold branches the output does not read back into it (a step that needed a fresh input
    cuts everything before it off), while the node budget lasts; shrinks toward not joining."""
    joins = [op for op in _JOINS if op in g.cfg.ops]
    while joins and g.budget >= 1:
        live = _live(g)
        out = next(v for v in reversed(g.values) if v.ref == Ref("node", len(g.builder.nodes) - 1))
        dead = [
            v
            for v in reversed(g.values)
            if v.ref.kind == "node"
            and v.ref.index not in live
            and g.builder.nodes[v.ref.index].op != "causal_mask"
            and g.cfg.compatible(v.dtype, out.dtype)
        ]
        if not dead or g.draw(st.integers(0, 3)) == 0:  # joins 3 in 4; shrinks toward not
            return
        branch = dead[0]
        try:
            fits = len(broadcast(out.shape, branch.shape)) <= g.cfg.max_rank
        except ValueError:
            fits = False
        if not fits:
            reducer = "max" if "max" in g.cfg.ops or branch.dtype == "int32" else "sum"
            if g.budget < 2:
                return
            branch = g.node(reducer, branch)
        event("join")
        g.node(g.draw(st.sampled_from(joins)), *g.ordered(out, branch))


@st.composite
def _step(draw: st.DrawFn, g: Gen) -> str | None:
    """One generation step: an op and everything it needs (one span for the shrinker)."""
    g.draw = draw
    choices = [
        op for op in g.cfg.ops if primitives.get(op).cost <= g.budget and g.cfg.op_dtypes(op)
    ]
    if not choices:
        return None
    first = g.cfg.first[g.steps] if g.steps < len(g.cfg.first) else ""
    first, _, g.cast_to = first.partition("->")
    first, _, form = first.partition("@")
    g.bools = form == BOOLS
    g.const_form = "" if g.bools else form
    if first not in choices:  # not drawable here (the budget): a step like any other
        first = g.cast_to = g.const_form = ""
        g.bools = False
    op = first or draw(st.sampled_from(choices))
    g.steps += 1
    MAKERS[primitives.get(op).kind](g, op)
    return op


@st.composite
def _steps(draw: st.DrawFn, g: Gen) -> list[str | None]:
    """The program's steps: a count drawn uniformly, then that many steps (a list, so the shrinker
    can delete any step). Not ``st.lists`` alone: in 400 draws it gave one step in 193 programs
    (raising its average size changed nothing), and after dead-code removal two thirds of the
    programs were a single node."""
    count = draw(st.integers(g.cfg.min_nodes, g.cfg.max_nodes))
    return draw(st.lists(_step(g), min_size=count, max_size=count))


#: One program in LOW_PRECISION_SHARE (when the dtypes allow a choice) computes in float16 or
#: bfloat16: the rest keep to the 32/64-bit dtypes, as before the 16-bit formats existed.
LOW_PRECISION_SHARE = 6


def _with_precision(draw: st.DrawFn, cfg: Config) -> tuple[Config, str]:
    """The program's configuration and base dtype: a modest share of programs use the 16-bit
    formats (base float16 or bfloat16, every dtype allowed); the others never see them. Shrinks
    toward the 32/64-bit programs."""
    low = tuple(d for d in cfg.dtypes if d in LOW_PRECISION_DTYPES)
    rest = tuple(d for d in cfg.dtypes if d not in LOW_PRECISION_DTYPES)
    if low and rest and draw(st.integers(0, LOW_PRECISION_SHARE - 1)) != LOW_PRECISION_SHARE - 1:
        return replace(cfg, dtypes=rest), draw(st.sampled_from(rest))
    if low and rest:
        event("dtypes:low-precision")
        return cfg, draw(st.sampled_from(low))
    return cfg, draw(st.sampled_from(cfg.dtypes))


@st.composite
def _programs(draw: st.DrawFn, cfg: Config) -> Program:
    cfg, base = _with_precision(draw, cfg)
    g = Gen(draw, cfg)
    g.base = base
    # Half the programs plain; a quarter with size-1 sides anywhere, a quarter with vector-width
    # extents (near uniformly: ``booleans`` then ``sampled_from`` had left 1 program in 6 in the
    # vector regime, and a bfloat16 comparison of 9 lanes that LLVM aborts on went unseen).
    g.regime = uniform(draw, (SHAPE_REGIMES[0], *SHAPE_REGIMES))
    event(f"shape-regime:{g.regime}")
    # The steps, as a list: each step is one list element, so the shrinker can delete any step
    # (not just trailing ones) and programs shrink toward fewer nodes.
    g.reserve = 1 if cfg.max_nodes >= 4 else 0
    draw(_steps(g))
    g.draw = draw
    g.reserve = 0
    _join_dead_branches(g)
    program, _ = g.builder.build().dead_code_eliminated().drop_unused_inputs()
    event(f"nodes:{len(program)}")
    event(f"output:rank{program.output_type.ndim}:{program.output_type.dtype}")
    for dtype in sorted(program.dtypes()):
        event(f"dtype:{dtype}")
    return program


class Sample(NamedTuple):
    """A program and one set of input values for it (drawn from one value regime)."""

    program: Program
    inputs: tuple[np.ndarray, ...]
    regime: str


@st.composite
def samples(
    draw: st.DrawFn,
    programs_strategy: st.SearchStrategy[Program] | None = None,
    *,
    regime: str | None = None,
    finite: bool = True,
) -> Sample:
    """(program, input values): values from one drawn regime unless ``regime`` is given."""
    program = draw(programs() if programs_strategy is None else programs_strategy)
    chosen = draw(regimes()) if regime is None else regime
    inputs = draw(input_values(program, chosen, finite=finite))
    return Sample(program, inputs, chosen)


def const_left_ops() -> tuple[str, ...]:
    """The ops a focused step can put a constant on the left of, every binary op and comparison
    that takes a constant operand: ``programs(first="OP@const-left")``."""
    return tuple(op for op in generation_order() if takes_const_left(op))


def const_wide_ops() -> tuple[str, ...]:
    """The ops a focused step can give an int32 operand's unrepresentable constant (a float, an
    int past int32's ends for a comparison): ``programs(dtypes=["int32"],
    first="OP@const-wide")``, each op of ``const_left_ops`` drawn on int32 tensors."""
    int32 = {op for op, dtype in op_dtype_pairs() if dtype == "int32"}
    return tuple(op for op in const_left_ops() if op in int32)


def cast_pairs() -> tuple[tuple[str, str], ...]:
    """Every cast a focused program can start with, as ("astype", "SOURCE->TARGET"):
    ``programs(dtypes=[SOURCE], first="astype->TARGET")``; bool among the targets."""
    return tuple(
        ("astype", f"{source}->{target}")
        for source in DTYPES
        for target in (*DTYPES, "bool")
        if target != source
    )


def op_dtype_pairs() -> tuple[tuple[str, str], ...]:
    """Every (op, dtype) a focused program can start with: ``programs(dtypes=[dtype],
    first=op)`` (casts need two dtypes: ``cast_pairs``)."""
    found = []
    for dtype in DTYPES:
        cfg = Config(4, 1, generation_order(), (dtype,), 3, 6, True)
        found += [
            (op, dtype)
            for op in cfg.ops
            if op != "astype" and primitives.get(op).cost <= cfg.max_nodes and cfg.op_dtypes(op)
        ]
    # and on booleans, each op the compiler's rule takes them for (``takes_bool``)
    return (*found, *((op, "bool") for op in generation_order() if takes_bool(op)))


__all__ = [
    "Sample",
    "cast_pairs",
    "const_left_ops",
    "const_wide_ops",
    "generation_order",
    "op_dtype_pairs",
    "programs",
    "samples",
]
