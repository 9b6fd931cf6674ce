"""Focused cases: the (op, dtype) pairs, casts and spellings of the primitive table, the
constants left of a binary op, a gather's ids just past its table, a jit sequence, each
violation of an invalid program, that a session's cases have not exercised yet, and small
programs that start from them.

Random programs reach a rare pair seldom (an int32 matmul was 3% of them, int32 ``a > b`` none
of 400), so a session passes the items it has not exercised to ``focus_cases`` (``FOCUS_SHARE``
of its cases, ``generate.cases``) until each is exercised ``FOCUS_REPEATS`` times or a driver
gives up on them (``admission.Admission``).

Accuracy sweeps are focus items too (``sweep_items``, ``sweep_cases``): each op that rounds,
alone, on hundreds of dense values (and once more with the dtype's edges among them), so a
math function a few ulps off on a few percent of its arguments meets a case that shows it in
the first seconds of a session instead of by luck; each narrowing conversion alone, on
hundreds of values at and beside the narrower format's ties, so a cast that rounds a tie the
wrong way, truncates or rounds twice is judged where it is wrong.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import event, reject
from hypothesis import strategies as st

from compiler import primitives
from strategies import (
    CONST_ARBITRARY,
    CONST_FOREIGN,
    CONST_LEFT,
    CONST_WIDE,
    CONST_WIDER,
    VIOLATIONS,
    cast_pairs,
    const_left_ops,
    const_wide_ops,
    on_no_table,
    op_dtype_pairs,
    programs,
    samples,
    uniform,
)
from strategies.gen.makers import (
    COMMON_EXPONENTS,
    RARE_EXPONENTS,
    SMALL,
    SPECIAL_BASES,
    SPECIAL_CONSTANTS,
    small_exponent,
    special_base,
    special_constant,
)
from strategies.gen.programs import VIEW_LAYOUTS, generation_order, ops_reading_views
from strategies.gen.state import (
    BOOLS,
    COMMON_CONSTANTS,
    CONST_BASE,
    CONST_VALUE,
    RARE_CONSTANTS,
    accumulator,
    arbitrary_constant,
    const_base_form,
    const_value_form,
    is_const_form,
    wider_dtypes,
)
from strategies.gen.values import (
    END_REGIMES,
    SPECIALS,
    cast_edge_regimes,
    conversion_values,
    edge_regimes,
    edge_values,
    end_value,
    input_values,
    narrowing_values,
    values,
)
from strategies.model import (
    FLOAT_DTYPES,
    Const,
    Program,
    ProgramBuilder,
    Ref,
    takes_a_dim,
)
from strategies.model.types import INT32_MAX, SCALAR_DTYPES

from ..case import Case

#: The focus items one focused case starts from (its first steps, each joined into the output
#: where its branch would be dead): a 60 s single-driver session met 95 of the 243 items with
#: one a case (on a quarter of the cases), 189 with three (on half). Simulated drivers of two
#: (150 cases, 8 seeds) had 78 of their 134 items done with three, 94 with four, 88 with five;
#: a real one 83 -> 128 in 60 s (seed 1). An item whose step ends up dead stays in focus.
FOCUS_ITEMS_PER_CASE = 4


def _item_dtype_and_spelling(
    item: tuple[str, str], first_dtypes: dict[str, str]
) -> tuple[str, str | None]:
    """The dtype and spelling (None: the default) a focus item's program is drawn in."""
    op, second = item
    if second.startswith(SWEPT):
        return _swept(item)[0], None
    if second == CONST_WIDE:
        return "int32", None
    if is_const_form(second) or second == "bool":
        return "", None  # any dtype the op takes, drawn by the case (a boolean operand: bools)
    if second.startswith(SPELLED):
        return first_dtypes[op], second[len(SPELLED) :]
    return second.partition("->")[0], None  # a cast's source


def _first_step(item: tuple[str, str]) -> str:
    """The first step that exercises a focus item: its op, or "astype->TARGET" for a cast."""
    op, second = item
    if is_const_form(second):  # "OP@const-left", ... "OP@const=VALUE"
        return f"{op}@{second}"
    if second == "bool":  # an op the compiler takes booleans for: "OP@bools"
        return f"{op}@{BOOLS}"
    target = second.partition("->")[2]
    return f"{op}->{target}" if target else op


@st.composite
def focus_cases(
    draw: st.DrawFn,
    backends: tuple[str, ...],
    pairs: tuple[tuple[str, str], ...],
    regimes: tuple[str, ...] = (),
) -> Case:
    """A small program whose first steps are (op, dtype) items of ``pairs`` (up to
    ``FOCUS_ITEMS_PER_CASE`` of one dtype and spelling): the session passes those its cases
    have not exercised yet, so every op meets every dtype it takes early in a session, however
    rarely random programs draw it (an int32 matmul was 3% of them, int32 ``a > b`` none of
    400). ``regimes``: its values come from one of them at the first op's edges
    (``edge_regimes``); if empty, 3 cases in 4 take the first op's edges, the rest any regime."""
    # By kind of item (``item_kind``), not uniform over the items: with ``sampled_from`` over
    # the items (int32, ``>``) was met by 150 cases in 1 of 8 simulated drivers, uniform 6 of 8
    # (items done: 75 -> 81 of 134); but uniform over the items, a kind of few (11 constants
    # left of a binary op, among 280 items) waited half a 60 s session.
    # The dense sweeps take half of the focused cases while any is left (all of them first, a
    # single driver's 34, had delayed a planted float64 promotion bug from 2.1 s to 16.4 s).
    sweeps = [p for p in pairs if is_dense_sweep(p)]
    rest = [p for p in pairs if not is_dense_sweep(p)]
    if sweeps and (not rest or draw(st.integers(0, 1))):
        return draw(sweep_cases(backends, uniform(draw, sweeps)))
    # A family of the kinds left, then one of the family's kinds, each by the square root of
    # its items left (``_by_root``), then the kind's items uniformly: the pairs' ten kinds of
    # primitive are one family (as ten, they took 10 of 16 picks: the constants left of a
    # subtract waited a whole single-driver session).
    kind_of = {p: item_kind(p) for p in rest}
    family = uniform(draw, _by_root(item_family(k) for k in kind_of.values()))
    kind = uniform(draw, _by_root(k for k in kind_of.values() if item_family(k) == family))
    first = uniform(draw, [p for p in rest if kind_of[p] == kind])
    if kind in ("sweep", "tails"):
        return draw(sweep_cases(backends, first))
    if kind == "out-of-range":
        return draw(_out_of_range_cases(backends, first))
    if kind == "identity" and first[1] == NO_AXIS:
        return draw(_no_axis_cases(backends, first))
    if kind == "identity":
        return draw(_identity_cases(backends, first))
    if kind == "view":
        return draw(_view_cases(backends, first))
    if kind == "key":
        return draw(_key_cases(backends, first))
    if kind == "ranks":
        return draw(_rank_cases(backends, first))
    if kind == "layout":
        return draw(_layout_cases(backends, first))
    if kind == INVALID:
        from .generate import invalid_cases  # (generate draws focused cases from here)

        case = draw(invalid_cases(backends, (first[1],)))
        return replace(case, origin=f"focus/invalid/{first[1]}")
    if kind == "jit-sequence":
        from .generate import sequence_cases  # (generate draws focused cases from here)

        case = draw(sequence_cases(backends))
        return replace(case, origin="focus/jit-sequence")
    first_dtypes = _first_dtypes()
    dtype, spelling = _item_dtype_and_spelling(first, first_dtypes)
    alike = [
        p for p in rest
        if p != first and kind_of[p] not in _OWN_CASES + _ALONE
        and _item_dtype_and_spelling(p, first_dtypes) == (dtype, spelling)
    ] if kind not in _ALONE else []  # fmt: skip
    # Of its own kind first (a cast case, more casts from its dtype): drawn from any alike item,
    # a driver's 131 cases held one float -> bool cast, its cast items starved by the pairs.
    same = [p for p in alike if kind_of[p] == kind]
    other = [p for p in alike if p not in same]
    more: list[tuple[str, str]] = []
    for pool, count in ((same, FOCUS_ITEMS_PER_CASE - 1), (other, FOCUS_ITEMS_PER_CASE - 1)):
        count = min(len(pool), count - len(more))
        if count > 0:
            more += draw(
                st.lists(st.sampled_from(pool), min_size=count, max_size=count, unique=True)
            )
    if not dtype:  # a constant's form (or booleans): of any dtype the op takes, uniformly
        taken = [d for op, d in op_dtype_pairs() if op == first[0] and d != "bool"]
        if first[1] == CONST_WIDER:  # (one a NumPy scalar can be wider than)
            taken = [d for d in taken if d != "float64"] or taken
        if first[1] == CONST_FOREIGN:  # (one an integer scalar meets: not ml_dtypes')
            taken = [d for d in taken if d != "bfloat16"] or taken
        if first[1].startswith(CONST_BASE):  # (one whose pow is called in its own dtype: a
            # 16-bit power is a float32 call rounded, which hides the rewrite's ulps)
            taken = [d for d in taken if d in ("float32", "float64")] or taken
        dtype = uniform(draw, taken)
    steps = [_first_step(item) for item in (first, *more)]
    # One step beyond what the ops need (a cast to bool takes a consumer): more steps leave the
    # first ones dead more often.
    budget = sum(primitives.get(op).cost for op, _ in (first, *more)) + 1
    budget += sum(step.endswith(("->bool", f"@{BOOLS}")) for step in steps)  # (and booleans')
    strategy = programs(max_nodes=budget, min_nodes=len(steps), dtypes=[dtype], first=steps)
    if regimes:  # those at the first op's edges, where the session asks for edges
        regimes = tuple(r for r in _item_edges(first) if r in regimes) or regimes
    elif uniform(draw, range(4)):  # 3 in 4 of the first pass too (a 60 s session on one
        # worker never reached the second: int32 > as >= unseen; with half, a cast of NaN to
        # bool as False survived a 60 s session, its NaN drawn in a quarter of its cases).
        # Drawn near uniformly: Hypothesis draws the 0 of st.integers(0, 3) far more often than
        # a quarter of the time (a derandomized run of 38 (less, const-wide) cases had 11 at the
        # edges, not 28), and sampled_from repeats recent picks.
        regimes = _item_edges(first)
    drawn = draw(samples(strategy, regime=uniform(draw, regimes) if regimes else None))
    inputs = list(drawn.inputs)
    if first[0] in identity_ops() and uniform(draw, (False, True)):
        # Half of a max's or min's cases hold a slice at its identity too: its identity
        # items (a kind among the edges) are reached late in a 60 s session.
        inputs = _at_identity(draw, first[0], drawn.program, inputs)
    event("origin:focus")
    case = Case(drawn.program, inputs, backends, origin=f"focus/{drawn.regime}")
    return case.respelled(spelling) if spelling else case


def _by_root(names: Iterable[str]) -> list[str]:
    """Each distinct name of ``names`` (one per item left) as many times as the square root of
    its count (rounded up), for ``uniform`` to draw a family, then a family's kind, from.
    Uniform over the families, the pairs' (215 of 610 items, most left after a minute) had one
    focused case in ten, as the one boolean item had, and within it each kind of primitive as
    much as the 4 sources: a 60 s session left 66 pairs and 13 of the 30 comparisons
    unexercised (int32 ``x <= y`` planted as ``<`` survived). By the items alone, a family or
    kind of few waits behind the large ones (11 constants left of a binary op among 280 items
    waited half a session)."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return [n for n in sorted(counts) for _ in range(math.isqrt(counts[n] - 1) + 1)]


def _item_edges(item: tuple[str, str]) -> tuple[str, ...]:
    """The regimes at a focus item's edges: its op's (``edge_regimes``), a cast's own
    (``cast_edge_regimes``: with the halfway ties every cast takes, a float -> bool cast drew
    NaN in a third of its edge cases, and an ordered != survived 60 s sessions)."""
    op, second = item
    if item_kind(item) == "cast":
        return cast_edge_regimes(*second.split("->"))
    if second == CONST_WIDE:
        # int32's own ends, next to a constant just past them: ``x < 2**31`` compared in
        # float32 is wrong only for x within 128 of 2**31 (unseen in a 60 s session, when a
        # comparison's edges were ties and NaN only)
        return ("extreme",)
    if second.startswith(CONST_BASE):
        # full significands at ordinary magnitudes: a rewritten call (exp2(3.0 * x) for
        # pow(8.0, x)) rounds otherwise there, where a power's own edges (nan, inf, a huge or
        # a tiny exponent) give inf, 0 or 1 either way (with the workaround libm-calls-kept
        # off, 3 of 12 focused 8.0 ** x cases found the rewrite at a power's edges, 9 of 16 here)
        return ("dense", "ordinary")
    return edge_regimes(op)


#: The focus item of a jit sequence (``generate.sequence_cases``: one jitted function called
#: with other dtypes, statics, argument trees, captured arrays): 10% of the mix, but none of the
#: 78 mix cases a 20 s single-driver session drew was one (Hypothesis's mutants keep their
#: example's kind), and planted cache bugs waited 20 to 37 s for their first sequence.
SEQUENCE_ITEM = ("jit-sequence", "calls")

#: The second members of a gather's focus items for its run-time range check: one id just
#: past each end (the bound itself, -1) of the ids a gather reads. The ``extreme`` and
#: ``special`` regimes put one out-of-range id in half of their cases, but gathers are 4% of
#: the cases: a check that let the bound through survived 60 s sessions on two seeds of three.
OUT_OF_RANGE = ("out-of-range:upper", "out-of-range:lower")
#: ...and the second member of the item of two gathers whose ids are inputs of their own, an id
#: past an end in one of them alone: each gather's check has its own error flag, and a kernel
#: whose flags shared a buffer (the last written won) let 8 of 19 such cases through, the bad
#: id in the first gather or in the second. Random programs' gathers do the edges' items before
#: the focus draws them: that kernel survived 60 s sessions of main (seed 1) and of versions
#: that drew two gathers for a half or three quarters of the edges' cases (seeds 1 and 2).
ONE_OF_TWO = "out-of-range:one-of-two"

#: The first member of an invalid program's item (INVALID, violation): one of the labelled
#: violations (``strategies.VIOLATIONS``) the compiler must reject as NumPy does, before MLIR.
#: Drawn in the mix alone (a tenth of the cases over 16 violations and their variants), a
#: bound check planted away that took ``x[n]`` of n rows for valid survived 60 s sessions.
INVALID = "invalid"

#: The kinds of item whose focused case is drawn whole by its own strategy (a sweep, a gather
#: alone, a jit sequence, an invalid program): no other item joins it as one more step.
_OWN_CASES = (
    "sweep", "tails", "out-of-range", "identity", "jit-sequence", "view", "key", "ranks",
    "layout", INVALID,
)  # fmt: skip
#: The kinds of item whose focused program holds no other item's step: a constant base's power
#: (``8.0 ** x``), whose bits a later step may take away (``x * -0.0``, ``x < 2**40``). With
#: the workaround libm-calls-kept off, LLVM's rewrite was found by 1 of 3 sessions (seeds 1, 2
#: of 120 s, 3 of 300 s: at 157 s) while other items' steps joined it, by 2 of 2 alone (57 s,
#: 60 s).
_ALONE = ("const:base",)

#: The second member of a contraction's rank items ("matmul", "ranks:AxB"): its operands of
#: ranks A and B (each up to ``MAX_CONTRACTION_RANK``), each pair its own rule of NumPy's (a
#: vector's dim inserted and dropped, batch dims broadcast from the other operand alone). Random
#: programs' matmuls were of equal ranks or a vector with a matrix (300 default cases: 23
#: matmuls, none of a vector or a matrix with a stack): a frontend that took every batch as
#: both operands' dims but the last two survived 60 s sessions.
RANKED = "ranks:"
MAX_CONTRACTION_RANK = 3

#: Input layout items ("inputs", "layout:NAME"): a small program whose inputs reach the
#: compiler in layout NAME (``run/layouts.py``: Fortran order, strided, a NumPy scalar...).
#: A quarter of the random cases hand their inputs over in layouts drawn among those that
#: apply, so each layout met few cases (of 300 default cases, 4 had a 0-d input and none handed
#: one over as a NumPy scalar): a frontend that took NumPy scalars for static arguments
#: survived a 60 s session.
LAYOUT_ITEM = "inputs"
LAID_OUT = "layout:"

#: The second member of a basic index's key items ("index", "key:<element>:<place>"): each kind
#: of key element that is not a plain slice (a None, an Ellipsis, an int, a slice of negative
#: or wide step) before, between and after the dims the result keeps, on an array whose result
#: keeps at least two dims of two or more (where a rule that puts a dim in the wrong place
#: shows). Random keys hold a None in 7% of them, mostly in front, on results mostly of ones
#: ((1, 1) and (1, 1, 1) were half of them): every new axis put in front (``x[:, None]`` as
#: ``x[None]``) survived 60 s sessions.
KEYED = "key:"
KEY_ELEMENTS = ("newaxis", "ellipsis", "int", "negative-int", "reversed", "wide-step")
KEY_PLACES = ("first", "inner", "last")

#: The second member of a reduction's identity item (op, "identity:<dtype>"): a max or min (an
#: op with an end of its dtype among its edges, ``END_REGIMES``) on an input one of whose
#: reduced slices is all that end (-inf for a max of floats, INT32_MAX for a min of int32). A
#: wrong identity shows there alone: a float64 max starting from the lowest finite value, or an
#: int32 min from INT32_MAX - 1, survived 60 s sessions, the ``lowest`` and ``highest`` regimes
#: drawn for a fifth of the two cases that exercised their (op, dtype).
IDENTITY = "identity:"
#: ...and of a reduction's item over no axis (op, NO_AXIS): the reduction alone with
#: ``axis=()`` on ``special`` values of a float dtype with a -0.0 among them. NumPy reduces no
#: element yet applies the arithmetic (a sum is 0.0 + x: -0.0 gives 0.0; a var of each element
#: alone is 0, NaN at an inf). Reductions draw ``axis=()`` one time in eight: 11 of 1331 cases
#: had one, none on a -0.0, and a sum over no axis that kept x as it is survived 60 s sessions
#: on three seeds (the compiler's own such bug was found once, by a default session).
NO_AXIS = "no-axis"


def identity_ops() -> tuple[str, ...]:
    """The reductions of the identity items: an end of the dtype among their edges."""
    return tuple(op for op in _first_dtypes() if set(edge_regimes(op)) & set(END_REGIMES))


def _end(op: str, dtype: Any) -> Any:
    """The end of ``dtype`` that ``op``'s identity is (its edges' ``END_REGIMES`` one)."""
    regime = next(r for r in edge_regimes(op) if r in END_REGIMES)
    return end_value(dtype, regime)


def _reduced_inputs(program: Any) -> list[tuple[str, int, tuple[int, ...]]]:
    """(op, input index, reduced axes) for each identity op (``identity_ops``) that reduces an
    input directly, over at least one axis."""
    from compiler.primitives.rules import normalize_axes

    ops, found = identity_ops(), []
    for node in program.nodes:
        source = node.args[0] if node.args else None
        if node.op in ops and isinstance(source, Ref) and source.kind == "input":
            ndim = len(program.inputs[source.index].shape)
            axes = normalize_axes(node.attrs.get("axis"), ndim, node.op)
            if axes:
                found.append((node.op, source.index, axes))
    return found


def _identity_items(case: Case) -> set[tuple[str, str]]:
    """The identity items a case exercises: a max or min reducing an input with a reduced slice
    all at its identity's end."""
    found = set()
    for op, index, axes in _reduced_inputs(case.program):
        values = np.asarray(case.inputs[index])
        dtype = case.program.inputs[index].dtype
        if values.size and np.all(values == _end(op, dtype), axis=axes).any():
            found.add((op, IDENTITY + dtype))
    return found


@st.composite
def _no_axis_cases(draw: st.DrawFn, backends: tuple[str, ...], item: tuple[str, str]) -> Case:
    """``item``'s reduction alone over ``axis=()`` (``NO_AXIS``) on ``special`` values of a
    float dtype, one of them -0.0, an array of rank 0 to 3."""
    op = item[0]
    dtype = uniform(draw, [d for o, d in op_dtype_pairs() if o == op and d in FLOAT_DTYPES])
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    b = ProgramBuilder()
    program = b.build(b.node(op, b.input(shape, dtype), axis=(), keepdims=draw(st.booleans())))
    array = np.array(draw(values(shape, dtype, "special")), copy=True)
    array.reshape(-1)[draw(st.integers(0, array.size - 1))] = -0.0
    event("origin:focus-no-axis")
    return Case(program, [array], backends, origin="focus/no-axis")


def _no_axis_items(case: Case) -> set[tuple[str, str]]:
    """The (op, NO_AXIS) items a case exercises: a reduction over ``axis=()`` of a float input
    that holds a -0.0."""
    reducing = [node for node in case.program.nodes if node.attrs.get("axis") == ()]
    if not reducing:  # (most cases: the op table is not read)
        return set()
    ops, found = set(no_axis_ops()), set()
    for node in reducing:
        source = node.args[0] if node.args else None
        if node.op in ops and isinstance(source, Ref) and source.kind == "input":
            array = np.asarray(case.inputs[source.index])
            if array.dtype.name not in FLOAT_DTYPES:
                continue
            wide = array.astype(np.float64)
            if np.any((wide == 0) & np.signbit(wide)):
                found.add((node.op, NO_AXIS))
    return found


def no_axis_ops() -> tuple[str, ...]:
    """The reductions of the no-axis items: those that take an ``axis`` and a float dtype."""
    return tuple(
        op
        for op in _first_dtypes()
        if primitives.get(op).kind == "reduction"
        and "axis" in primitives.get(op).attrs
        and any(o == op and d in FLOAT_DTYPES for o, d in op_dtype_pairs())
    )


@st.composite
def _identity_cases(draw: st.DrawFn, backends: tuple[str, ...], item: tuple[str, str]) -> Case:
    """``item``'s reduction alone on values of its other edges, one of whose reduced slices is
    then set to the end its identity is (``IDENTITY``): the other slices keep their values, so
    a case holds both what the identity must not change and the slice where it shows. Alone: a
    step after it can hide the slice (an int32 min of INT32_MAX times -0.0)."""
    op, dtype = item[0], item[1][len(IDENTITY) :]
    cost = primitives.get(op).cost
    # Over at least one axis (a reduction over ``axis=()`` reduces nothing to its identity).
    strategy = programs(max_nodes=cost, min_nodes=1, dtypes=[dtype], first=op).filter(
        lambda program: any(found == op for found, _, _ in _reduced_inputs(program))
    )
    others = [r for r in edge_regimes(op) if r not in END_REGIMES]
    drawn = draw(samples(strategy, regime=uniform(draw, others) if others else None))
    inputs = _at_identity(draw, op, drawn.program, list(drawn.inputs))
    event("origin:focus-identity")
    return Case(drawn.program, inputs, backends, origin=f"focus/identity/{drawn.regime}")


def _at_identity(
    draw: st.DrawFn, op: str, program: Any, inputs: list[np.ndarray]
) -> list[np.ndarray]:
    """``inputs`` with one reduced slice of the first input ``op`` reduces set to the end of
    its dtype that ``op``'s identity is (a copy; unchanged if ``op`` reduces no input)."""
    for found, index, axes in _reduced_inputs(program):
        array = inputs[index]
        if found == op and array.size:
            array = inputs[index] = np.array(array, copy=True)
            where = tuple(
                slice(None) if d in axes else draw(st.integers(0, extent - 1))
                for d, extent in enumerate(array.shape)
            )
            array[where] = _end(op, program.inputs[index].dtype)
            break
    return inputs


#: The second part of a view item: (op, "views:LAYOUT"), the op reading a view of an input of
#: that layout (``strategies.gen.programs.VIEW_LAYOUTS``).
VIEWED = "views"


def viewed(layout: str) -> str:
    """The second part of the view item of ``layout``."""
    return f"{VIEWED}:{layout}"


def view_ops() -> tuple[str, ...]:
    """The ops of the view items: the first of each primitive kind that reads an operand, and
    each composite that runs as rows (softmax, layer_norm: cpu-vector fuses their rows), in
    generation order. A layout is its own code path in a kernel (strided transfers, the gathers
    stage, BLAS's layout tests), and random programs give an op a view rarely: a gather's table
    in none of 1500 cases; three planted bugs of the gathers stage (no strides, a zero stride,
    the view's offset dropped) each survived 30 s sessions."""
    chosen: dict[str, str] = {}
    rows: list[str] = []
    for op in generation_order():
        kind = primitives.get(op).kind
        if kind == "source" or op in ("attention", "attend"):
            continue  # no operand; an input drawn its own way
        if kind == "composite" and _row_composite(op):
            rows.append(op)
        chosen.setdefault(kind, op)
    return tuple(dict.fromkeys([*chosen.values(), *rows]))


#: The kinds of primitive that broadcast their operands (``_view_cases``).
BROADCASTING_KINDS = ("binary", "compare", "select")


@st.composite
def _view_cases(draw: st.DrawFn, backends: tuple[str, ...], item: tuple[str, str]) -> Case:
    """``item``'s op (and at most two steps more) reading a view of a larger input of the
    item's layout (``VIEW_LAYOUTS``), beside plain operands or other views, in any dtype the op
    takes and any regime."""
    op, layout = item[0], item[1].partition(":")[2]
    dtype = uniform(draw, [d for o, d in op_dtype_pairs() if o == op])
    cost = primitives.get(op).cost
    # Only programs whose op reads a view of the item's layout: a later step can take the
    # budget a view needs and leave the viewed one dead (7 of 30 derandomized gathers read
    # plain inputs). One item per layout: drawn from any, a case met a view both past its
    # input's first element and strided 3 times in 10, and a cpu-vector gather that read a
    # strided table from the allocation's start met one in neither of its two focused cases
    # (60 s sessions missed it on 3 seeds of 3). One fresh operand in two is a view, the
    # other plain: with every operand a view, a GPU lowering that rewired a reversed operand's
    # reads into the first operand's was right wherever all were reversed (y + x[::-1] shows it).
    # Half an elementwise op's: a view it broadcasts (of fewer dims, or a unit dim, than its
    # result), whose index map has fewer results than the op's loops (a GPU lowering that made
    # a reversed read's indices from its map's results, not the loops, failed on m + v[::-1]
    # alone, and survived a 60 s session where a view was broadcast in a fifth of these cases).
    # Tried up to 8 times, not filtered (3 tries, then the whole case rejected): a filter's
    # rejections fell on the broadcast draws, which met a broadcast view in 3 cases of 10.
    broadcast = primitives.get(op).kind in BROADCASTING_KINDS and uniform(draw, (False, True))
    strategy = programs(
        ops=[op], max_nodes=cost + 2, dtypes=[dtype], views=2, view_layout=layout,
        broadcasts=broadcast,
    )  # fmt: skip
    for _ in range(8):
        program = draw(strategy)
        if op in ops_reading_views(program, layout, broadcast):
            break
    else:
        reject()
    drawn = draw(samples(st.just(program)))
    event("origin:focus-views")
    return Case(drawn.program, list(drawn.inputs), backends, origin=f"focus/views/{drawn.regime}")


def key_items() -> tuple[tuple[str, str], ...]:
    """("index", "key:<element>:<place>") for each ``KEY_ELEMENTS`` at each ``KEY_PLACES``, where
    the index op is generated (an Ellipsis or a None has no place but among the key's items),
    and for NumPy's ``True`` (a new axis, an advanced index beside an int) where the compiler's
    rule takes it (``_takes_bool_keys``: it refuses it, a documented limitation; one that
    took ``x[True]`` for ``x[1]`` went unseen, random keys holding a True seldom)."""
    if "index" not in _first_dtypes():
        return ()
    elements = (*KEY_ELEMENTS, "bool") if _takes_bool_keys() else KEY_ELEMENTS
    return tuple(
        ("index", f"{KEYED}{element}:{place}") for element in elements for place in KEY_PLACES
    )


@functools.cache
def _takes_bool_keys() -> bool:
    """Does the compiler's rule for ``index`` take a Python ``True`` in a key? Asked as the
    program model asks it: its builder refuses what the rule declares unsupported."""
    b = ProgramBuilder()
    try:
        b.node("index", b.input((2, 3), "float32"), key=(True, slice(None)))
    except NotImplementedError:
        return False
    return True


def _key_element(item: Any) -> str | None:
    """The ``KEY_ELEMENTS`` name of one item of a key (None for a plain slice of step 1)."""
    if item is None:
        return "newaxis"
    if item is Ellipsis:
        return "ellipsis"
    if isinstance(item, bool):
        return "bool"
    if isinstance(item, slice):
        step = 1 if item.step is None else item.step
        return "reversed" if step < 0 else "wide-step" if step > 1 else None
    return "negative-int" if item < 0 else "int"


def _key_features(shape: tuple[int, ...], key: tuple[Any, ...]) -> set[str]:
    """The "<element>:<place>" features of ``key`` on ``shape``: each element that is not a
    plain slice, with its place among the dims the result keeps (before all, between, after
    all); none where the result keeps fewer than two dims of two or more."""
    result = np.empty(shape)[key].shape
    if sum(extent >= 2 for extent in result) < 2:
        return set()
    spanned = len(shape) - sum(takes_a_dim(item) for item in key)
    kept, found = 0, set()  # the result's dims the items so far made
    for item in key:  # (a None or a True makes one, an int none)
        made = (
            spanned if item is Ellipsis else int(isinstance(item, slice) or not takes_a_dim(item))
        )
        element = _key_element(item)
        if element is not None:
            after = len(result) - kept - made
            found.add(f"{element}:{'first' if kept == 0 else 'last' if after == 0 else 'inner'}")
        kept += made
    return found


def _key_items_of(program: Any) -> set[tuple[str, str]]:
    """The key items (``key_items``) a program's index nodes exercise."""
    found = set()
    for node in program.nodes:
        if node.op == "index":
            shape = program.arg_types(node)[0].shape
            key = node.attrs["key"]
            found |= {(node.op, KEYED + f) for f in _key_features(shape, key)}
    return found


@st.composite
def _key_cases(draw: st.DrawFn, backends: tuple[str, ...], item: tuple[str, str]) -> Case:
    """The index op alone, in any dtype it takes, on an array of two or three dims of two to
    five, its key holding ``item``'s element at ``item``'s place among plain and other slices
    and ints, so that the result keeps two dims of two or more."""
    op = item[0]
    element, _, place = item[1][len(KEYED) :].partition(":")
    dtype = uniform(draw, [d for o, d in op_dtype_pairs() if o == op])
    # Three dims where the element drops one, or stands between two (or is an Ellipsis, which
    # another element beside it may take one from: ``_keyed``)
    three = element in ("int", "negative-int", "ellipsis") or place == "inner"
    shape = tuple(draw(st.integers(2, 5)) for _ in range(3 if three else uniform(draw, (2, 3))))
    key = _keyed(draw, shape, element, place)
    if key is None or f"{element}:{place}" not in _key_features(shape, key):
        shape, key = (3, 4, 5), _fallback_key(element, place)  # (not met: a safety net)
    b = ProgramBuilder()
    program = b.build(b.node(op, b.input(shape, dtype), key=key))
    inputs = [draw(values(shape, dtype, uniform(draw, ("ordinary", "ties", "negative"))))]
    event("origin:focus-key")
    return Case(program, inputs, backends, origin="focus/key")


def rank_items() -> tuple[tuple[str, str], ...]:
    """(op, "ranks:AxB") for each contraction the table generates and each pair of operand
    ranks up to ``MAX_CONTRACTION_RANK``."""
    first = _first_dtypes()
    ranks = range(1, MAX_CONTRACTION_RANK + 1)
    return tuple(
        (op, f"{RANKED}{a}x{b}") for op in CONTRACTIONS if op in first for a in ranks for b in ranks
    )


def _rank_items_of(program: Any) -> set[tuple[str, str]]:
    """The rank items (``rank_items``) a program's contractions exercise."""
    return {
        (node.op, f"{RANKED}{'x'.join(str(len(t.shape)) for t in program.arg_types(node))}")
        for node in program.nodes
        if node.op in CONTRACTIONS
    }


@st.composite
def _rank_cases(draw: st.DrawFn, backends: tuple[str, ...], item: tuple[str, str]) -> Case:
    """The contraction alone on operands of the item's ranks, in any dtype it takes: sides of
    one to five (a contracted side of one too), batch dims of one to three broadcast against
    the other's (one of them one, or missing), on ordinary, negative or tie values."""
    op = item[0]
    left, right = (int(r) for r in item[1][len(RANKED) :].split("x"))
    dtype = uniform(draw, [d for o, d in op_dtype_pairs() if o == op])
    k, m, n = (draw(st.integers(1, 5)) for _ in range(3))
    batch = tuple(draw(st.integers(2, 3)) for _ in range(max(left, right) - 2))

    def operand(rank: int, matrix: tuple[int, int], vector: int) -> tuple[int, ...]:
        if rank == 1:
            return (vector,)
        own = batch[len(batch) - (rank - 2) :] if rank > 2 else ()
        own = tuple(1 if uniform(draw, range(3)) == 0 else side for side in own)
        return (*own, *matrix)

    shapes = [operand(left, (m, k), k), operand(right, (k, n), k)]
    b = ProgramBuilder()
    program = b.build(b.node(op, *(b.input(shape, dtype) for shape in shapes)))
    regime = uniform(draw, ("ordinary", "negative", "ties"))
    inputs = [draw(values(shape, dtype, regime)) for shape in shapes]
    event(f"origin:focus-ranks:{left}x{right}")
    return Case(program, inputs, backends, origin=f"focus/ranks/{regime}")


def layout_items() -> tuple[tuple[str, str], ...]:
    """("inputs", "layout:NAME") for each input layout (``run/layouts.LAYOUTS``)."""
    from ..run.layouts import LAYOUTS

    return tuple((LAYOUT_ITEM, LAID_OUT + name) for name in LAYOUTS)


def _layout_items_of(case: Case) -> set[tuple[str, str]]:
    """The layout items a case exercises: each layout one of its inputs is handed over in."""
    from ..run.layouts import DEFAULT, applicable

    return {
        (LAYOUT_ITEM, LAID_OUT + name)
        for name, array in zip(case.layouts, case.inputs, strict=False)
        if name != DEFAULT and name in applicable(array)
    }


@st.composite
def _layout_cases(draw: st.DrawFn, backends: tuple[str, ...], item: tuple[str, str]) -> Case:
    """A program of up to three steps whose inputs of a rank the item's layout applies to are
    handed over in it (the others plain); for a NumPy scalar's, an op of a 0-d input, with a
    tensor for a binary op or a comparison, in any dtype the op takes."""
    from ..run.layouts import DEFAULT, LAYOUTS, applicable

    name = item[1][len(LAID_OUT) :]
    if name == "scalar":  # random programs' inputs are seldom 0-d
        op = uniform(draw, [o for o in generation_order() if primitives.get(o).kind in (
            "unary", "binary", "compare")])  # fmt: skip
        dtype = uniform(draw, [d for o, d in op_dtype_pairs() if o == op])
        b = ProgramBuilder()
        args = [b.input((), dtype)]
        if primitives.get(op).arity == 2:
            args.insert(uniform(draw, (0, 1)), b.input((draw(st.integers(1, 4)),), dtype))
        node = b.node(op, *args)
        if primitives.get(op).kind == "compare":
            node = b.node("astype", node, dtype=dtype)  # (a program's output is numeric)
        program = b.build(node)
        regime = uniform(draw, ("ordinary", "negative", "special"))
        inputs = list(draw(input_values(program, regime)))
    else:
        rank = LAYOUTS[name]
        strategy = programs(max_nodes=3).filter(
            lambda p: any(len(i.shape) >= rank and all(i.shape) for i in p.inputs)
        )
        drawn = draw(samples(strategy))
        program, inputs = drawn.program, list(drawn.inputs)
    names = [name if name in applicable(a) else DEFAULT for a in inputs]
    event(f"origin:focus-layout:{name}")
    case = Case(program, inputs, backends, origin="focus/layout")
    return case.with_layouts(names)


def _keyed(draw: st.DrawFn, shape: tuple[int, ...], element: str, place: str) -> tuple | None:
    """A key for ``shape`` with ``element`` at ``place`` (among plain slices that keep two or
    more of each dim, and one drawn int or stepped slice), or None where none was drawn."""
    items: list[Any] = [slice(None)] * len(shape)
    # the element's own dim (an int, a stepped slice): first, a middle one, or last
    dim = {"first": 0, "inner": len(shape) // 2, "last": len(shape) - 1}[place]
    extent = shape[dim]
    if element in ("int", "negative-int"):
        value = draw(st.integers(0, extent - 1))
        items[dim] = value - extent if element == "negative-int" else value
    elif element == "reversed":
        items[dim] = slice(None, None, -uniform(draw, (1, 2)) if extent >= 4 else -1)
    elif element == "wide-step":
        items[dim] = slice(uniform(draw, (0, 1)) if extent >= 4 else 0, None, 2)
    elif element in ("newaxis", "bool"):
        at = {"first": 0, "inner": uniform(draw, range(1, len(shape))), "last": len(shape)}[place]
        items.insert(at, None if element == "newaxis" else True)
    elif element == "ellipsis":
        span = 1 if place == "inner" else uniform(draw, range(1, len(shape)))  # dims it spans
        at = {"first": 0, "inner": 1, "last": len(shape) - span}[place]
        if place == "inner" and at + span >= len(shape):
            return None
        items[at : at + span] = [Ellipsis]
    # Another element elsewhere, half the time: an int or a step where the element is not.
    # Beside an Ellipsis always, a None (which takes no dim) or an int (which takes one) among
    # them: the Ellipsis spans the dims the others leave (a rule that counted the None among
    # them made x[..., None] a malformed slice, and survived 60 s sessions).
    ellipsis = element == "ellipsis"
    if ellipsis or uniform(draw, (False, True)):
        free = [i for i, it in enumerate(items) if it == slice(None)]
        if free:
            i = uniform(draw, free)
            others = (
                (None, 0, slice(None, None, -1))
                if ellipsis
                else (slice(None, None, -1), slice(1, None), None)
            )
            items[i] = uniform(draw, others)
        elif ellipsis:
            items.insert(uniform(draw, (0, len(items))), None)
    key = tuple(items)
    try:
        np.empty(shape)[key]
    except (IndexError, TypeError):
        return None
    return key


def _fallback_key(element: str, place: str) -> tuple:
    """A key of ``element`` at ``place`` on (3, 4, 5), for a draw that found none."""
    middle = {
        "newaxis": None, "ellipsis": Ellipsis, "int": 1, "negative-int": -1,
        "reversed": slice(None, None, -1), "wide-step": slice(None, None, 2), "bool": True,
    }[element]  # fmt: skip
    keep = slice(None)
    if place == "first":
        return (middle, keep, keep)
    if place == "last":
        return (
            (keep, keep, keep, middle) if element in ("newaxis", "bool") else (keep, keep, middle)
        )
    return (keep, middle, keep)


def _out_of_range_id(edge: str, bound: int) -> int:
    """The id an ``OUT_OF_RANGE`` edge names for a table of ``bound`` rows."""
    return bound if edge == OUT_OF_RANGE[0] else -1


#: The second member of a focus item that names a spelling instead of a dtype.
SPELLED = "spelling:"
#: The second member of an accuracy sweep's focus item (``sweep_items``): "sweep:<dtype>" for
#: dense values, "sweep:<dtype>:edges" for dense values with a run of the dtype's edges.
SWEPT = "sweep:"
EDGES = ":edges"
#: An exact reduction's sweep ("sweep:<dtype>:tails", ``tail_ops``): hundreds of values of one
#: regime at its edges (rows of one sign, ties, NaN), rows around vector widths.
TAILS = ":tails"
#: A narrowing conversion's sweep ("sweep:<source>-><target>:halfway", ``narrowing_casts``):
#: hundreds of values where rounding to the narrower format is hardest (``narrowing_values``).
HALFWAY = ":halfway"
#: An exact conversion's sweep ("sweep:<float>->int32:truncation", "sweep:<float>->bool:truth",
#: ``exact_casts``): hundreds of values where truncation toward zero or ``x != 0`` differ from
#: what a wrong conversion computes (``conversion_values``). A float32 -> int32 cast lowered as
#: an unsigned conversion (-1 for every value below -1) went unseen in a 60 s session and took
#: 45.2 and 10.7 s in two others: casts to int32 were 2 of 300 random programs, and each cast
#: item one focused case.
CONVERSIONS = {"int32": ":truncation", "bool": ":truth"}
#: The suffixes of a conversion's sweep items: narrowing ones, exact ones.
CAST_SWEEPS = (HALFWAY, *CONVERSIONS.values())
#: The float dtypes swept: float16 and bfloat16 compute each op in float32 and round once, so a
#: few float32 ulps never show in them (their own rounding is judged to an ulp by any case).
SWEEP_DTYPES = ("float32", "float64")
#: Swept in float16 too, the ops that accumulate (reductions, composites): NumPy adds float16
#: up in float32 and rounds once, so a backend accumulating in 16 bits is a few ulps off on
#: long rows only, and a case's rows are a few elements long (a planted float16 accumulator
#: was 1 ulp off on most cases, which the bound allows, and 952 off on a sum of 3000 ones).
#: Not bfloat16: ml_dtypes' own sums round at each addition, so NumPy's answer has that error.
ACCUMULATING_DTYPES = ("float16",)
#: The lengths of a 16-bit reduction's long sweeps (``sweep_cases``): float16's sums of a few
#: thousand values of one sign pass 2048, where an addend below 1 is half an ulp.
LONG_SIDES = (1024, 2048, 4096)
#: Swept with edges only, the elementwise ops in the 16-bit floats: each op there is float32's
#: rounded once, so dense values show nothing float32's sweep does not, but the edges do (a
#: result in the subnormals, a NaN or a -0.0 that the 16-bit path loses: bfloat16 arithmetic
#: done in bfloat16 flushed subnormal sums to zero, and x ** 0.5 of float16 lowered to pow gave
#: 0.0 for -0.0, each unseen by 60 s sessions).
HALF_DTYPES = ("float16", "bfloat16")
#: The reductions whose result is an average (a sum divided by a count): of large 16-bit values,
#: finite where the sum is not.
AVERAGING = ("mean", "var", "std")
#: The contractions swept in ``ACCUMULATING_DTYPES`` only, with one long contracted extent
#: (``SWEEP_SIDES``): a float16 matmul that adds its products in float16 is within the bound on
#: a case's few-element contractions and 952 ulps off on 3000 of them (unseen in a 60 s session
#: before this sweep). In float32 and float64 every matmul case judges them.
CONTRACTIONS = ("matmul",)
#: The sizes of a sweep: a vector's width and one either side (a masked tail), and past
#: ``cpu-vector``'s 256-element whole-row reductions (into its chunked ones).
SWEEP_SIDES = (64, 65, 127, 128, 255, 256, 257, 600, 1024)
#: The sizes of the other half of an exact reduction's sweeps ("tails"): each one past a multiple
#: of a vector's lanes, so every such sweep has a masked tail, within one whole-row vector (65
#: to 255) or past ``cpu-vector``'s 256-element rows, in its chunked ones (257 to 1001). Drawn
#: from ``SWEEP_SIDES``, where 64, 128, 256 and 1024 have no tail, 1 sweep in 9 had a chunked
#: tail, and a max whose chunks were masked again (-1e-45 for rows of negatives) survived a
#: 60 s session.
TAIL_SIDES = (65, 127, 255, 257, 300, 383, 600, 1001)
#: ...and half of an exact reduction's ("tails"): odd rows shorter than a vector, all of them
#: a tail, which LLVM's optimizer unrolls and rewrites on its own (a bfloat16 min that LLVM
#: narrowed to a conversion that flushes subnormals was wrong on odd rows up to 15 long, 39 for
#: a single row, and at no length of ``SWEEP_SIDES``).
SHORT_SIDES = (3, 5, 7, 9, 11, 15, 17, 31)
#: One reduction sweep (not a long one) in this many is over no axis (``axis=()``): the array
#: itself, converted (``NO_AXIS``'s rule, judged on every element of a sweep).
NO_AXIS_SWEEPS = 8
#: The regimes whose arrays are of one sign (a max's or min's answer is then its least
#: magnitude where one is there).
ONE_SIGNED = ("negative", "positive")
#: The ``dense`` spans two sweeps in three draw from (the third: any span; of a reduction's or a
#: composite's, one in three are ``offset`` values instead).
SWEEP_MODERATE = ("unit", "ordinary")
#: The dtypes the comparisons are swept in: int32 too, where equal and adjacent values and the
#: ends are where a predicate goes wrong (int32 ``<=`` planted as ``<`` survived 60 s sessions:
#: the focus pair one among 215, equal operands a share of its few cases).
COMPARE_SWEEP_DTYPES = (*SWEEP_DTYPES, "int32")
#: An int32 sweep's run of edges (``sweep_cases``): its ends and their neighbours, small values
#: of both signs, the ends of the narrower integers, and ints a float32 rounds (2**24 + 1 ties
#: 2**24 there: a comparison made in float32 shows) or a float16 does.
INT32_EDGES = (
    0, 1, -1, 2, -2, INT32_MAX, -INT32_MAX - 1, INT32_MAX - 1, -INT32_MAX, 127, 128, -129,
    255, 256, 32767, -32768, 65535, 65536, 2049, 2**24, 2**24 + 1, -(2**24) - 1, 46341,
)  # fmt: skip
#: The row widths of a two-dimensional sweep: around vector widths and tile sizes.
SWEEP_ROWS = (7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65, 257)


def sweep_ops() -> tuple[str, ...]:
    """The primitives whose float results are approximations a backend computes its own way:
    every elementwise one that rounds (exp, log, sin, power, divide, add: not abs or maximum,
    exact in every evaluation), every reduction that rounds (sum, mean, var: not max), and every
    composite of one array operand, or of one plus per-row vectors (gelu, softmax, layer_norm;
    not the matmul-based ones, whose accuracy is their contraction's, judged by every matmul
    case)."""
    from ..run.references import exact_primitive

    ops = []
    for prim in primitives.of_kind("unary", "binary", "reduction", "composite"):
        if not prim.generate or exact_primitive(prim):
            continue
        if prim.kind == "composite" and not _row_composite(prim.name):
            continue
        ops.append(prim.name)
    return tuple(ops)


def tie_ops() -> tuple[str, ...]:
    """The exact elementwise binary ops (maximum, minimum): nothing to be accurate about, but
    which of two equal operands they keep (0.0 or -0.0: NumPy's rule, float16's its own), and
    NaN against anything, show only where the two arrays meet at their edges (``_meet_runs``).
    Judged at their edges in focused programs only, where a later op mostly hides a zero's sign,
    a float16 minimum keeping the wrong zero went unseen in 3 of 4 60 s sessions."""
    from ..run.references import exact_primitive

    return tuple(
        prim.name
        for prim in primitives.of_kind("binary")
        if prim.generate and exact_primitive(prim)
    )


def compare_ops() -> tuple[str, ...]:
    """The comparisons: exact, but each predicate is its own answer on NaN (``!=`` alone is
    true: an ordered ``one`` for ``une`` planted in the table survived a 60 s session whose 163
    cases held a handful of ``!=``, none of NaN), on zeros of two signs, on infinities and on
    neighbours one ulp apart (a comparison made in a narrower dtype ties them). Swept like the
    ops that round (``sweep_cases``: dense values, the run of edges met, and three quarters of
    the second array the first's values and their neighbours, ``_neighbours``) in
    ``SWEEP_DTYPES``."""
    return tuple(prim.name for prim in primitives.of_kind("compare") if prim.generate)


def tail_ops() -> tuple[str, ...]:
    """The exact reductions (max, min): nothing to be accurate about, but a vectorized one reads
    its rows in masked vectors past a multiple of the lanes, where the mask's neutral value is
    the result of a row of one sign (MLIR's masked ``maximumf`` took -4.9e-324 for -inf:
    llvm/llvm-project PR #222275, which ``cpu-vector`` works around; that workaround planted out
    went unseen in 60 s sessions, the bfloat16 max of a row of negatives being its case)."""
    from ..run.references import exact_primitive

    return tuple(
        prim.name
        for prim in primitives.of_kind("reduction")
        if prim.generate and exact_primitive(prim)
    )


def narrowing_casts() -> tuple[str, ...]:
    """The conversions ("SOURCE->TARGET") to a format of less precision or range, whose edges
    are the narrower format's ties (``cast_edge_regimes``): where a conversion that rounds a tie
    up, truncates or rounds twice is off, by an ulp, on a few values of all it could meet."""
    return tuple(
        second for _, second in cast_pairs() if "halfway" in cast_edge_regimes(*second.split("->"))
    )


def exact_casts() -> tuple[str, ...]:
    """The conversions ("SOURCE->TARGET") from a float to int32 or bool (``CONVERSIONS``): exact
    in NumPy, so a wrong one is wrong on some values only (``conversion_values``)."""
    return tuple(
        second
        for _, second in cast_pairs()
        if second.partition("->")[2] in CONVERSIONS and second.partition("->")[0] in FLOAT_DTYPES
    )


def _conversion_item(cast: str) -> tuple[str, str]:
    return ("astype", SWEPT + cast + CONVERSIONS[cast.partition("->")[2]])


def _conversion_of(item: tuple[str, str]) -> tuple[str, str] | None:
    """(target, suffix) of a conversion's sweep item (``CAST_SWEEPS``), else None."""
    for suffix in CAST_SWEEPS:
        if item[1].endswith(suffix):
            return item[1][len(SWEPT) : -len(suffix)].partition("->")[2], suffix
    return None


def _row_composite(op: str) -> bool:
    """Does ``op`` take one (rows, n) array and, past it, only (n,) vectors?"""
    prim = primitives.get(op)
    try:
        b = ProgramBuilder()
        x = b.input((2, 3), "float32")
        b.node(op, x, *(b.input((3,), "float32") for _ in range(prim.arity - 1)))
    except (TypeError, ValueError):
        return False
    return True


#: The kinds of primitive each element of whose result is its operands' own: their sweeps hold
#: the run of edges always (``sweep_cases``), so in float32 and float64 they have no sweep "with
#: edges" of its own.
ELEMENTWISE_SWEPT = ("unary", "binary")

#: How a composite sweep's second array meets the first's run of edges at the same place, half the
#: time: turned by a drawn step, as it is, or negated (a binary sweep's meet all three ways,
#: ``_meet_runs``).
MEETINGS = ("turned", "same", "negated")


def sweep_items() -> tuple[tuple[str, str], ...]:
    """(op, "sweep:<dtype>") and (op, "sweep:<dtype>:edges") for every ``sweep_ops`` op and
    ``SWEEP_DTYPES`` dtype (an elementwise op: the first only, which holds the edges), and for
    the accumulating ones (reductions, composites, and without edges the ``CONTRACTIONS``) in
    ``ACCUMULATING_DTYPES`` too; the 16-bit elementwise sweeps with edges, the exact
    reductions' tails, the exact binary ops' edges in every float dtype (``tie_ops``) and the
    conversions'."""
    ops = sweep_ops()
    accumulating = [op for op in ops if primitives.get(op).kind in ("reduction", "composite")]
    accumulating += CONTRACTIONS
    tails = tuple((op, SWEPT + d + TAILS) for op, d in op_dtype_pairs() if op in tail_ops())
    ties = tuple(
        (op, SWEPT + d + EDGES)
        for op, d in op_dtype_pairs()
        if op in tie_ops() and d in FLOAT_DTYPES
    )
    narrowing = tuple(("astype", SWEPT + cast + HALFWAY) for cast in narrowing_casts())
    narrowing += tuple(_conversion_item(cast) for cast in exact_casts())
    elementwise = {op for op in ops if primitives.get(op).kind in ("unary", "binary")}
    halves = tuple(
        (op, SWEPT + d + EDGES)
        for op, d in op_dtype_pairs()
        if op in elementwise and d in HALF_DTYPES
    )
    return (
        tuple(
            (op, SWEPT + dtype + kind)
            for kind in ("", EDGES)
            for dtype in SWEEP_DTYPES + ACCUMULATING_DTYPES
            for op in (accumulating if dtype in ACCUMULATING_DTYPES else ops)
            if not (kind and op in CONTRACTIONS)  # its edges overflow float16's products
            # an elementwise op's dense sweep holds the edges
            and not (kind and primitives.get(op).kind in ELEMENTWISE_SWEPT)
        )
        + tuple((op, SWEPT + d) for d in COMPARE_SWEEP_DTYPES for op in compare_ops())
        + tails
        + ties
        + narrowing
        + halves
    )


def _swept(item: tuple[str, str]) -> tuple[str, bool]:
    """A sweep item's dtype (a conversion's: its source), and whether it is the sweep with
    edges."""
    rest = item[1][len(SWEPT) :]
    swept = rest.removesuffix(EDGES).removesuffix(TAILS)
    for suffix in CAST_SWEEPS:
        swept = swept.removesuffix(suffix)
    return swept.partition("->")[0], rest.endswith(EDGES)


@st.composite
def sweep_cases(draw: st.DrawFn, backends: tuple[str, ...], item: tuple[str, str]) -> Case:
    """An accuracy sweep: ``item``'s op alone on hundreds of ``dense`` values (every significand
    bit random, over a drawn span), so an approximation off by a few ulps on a few percent of
    the values (a float32 exp polynomial of degree 5 instead of 7: 12 ulps at worst, beyond
    the bound on 5% of values) shows in one case. Drawn within a focused case with 4 to 16
    values, that exp was seen by a third of the cases; 6 such cases in a 90 s session saw it in
    none of 3 sessions. A log's or sqrt's dense values are their absolute values (its domain),
    its run of edges keeps its signs; the vectors of a layer norm are dense too. The sweep with
    edges (``item`` "sweep:<dtype>:edges") also holds a run of the dtype's edges
    (``edge_values``: subnormals, exp's thresholds, a 64th of the largest value): a log that
    takes a subnormal for a normal number, a clamp constant off."""
    op = item[0]
    dtype, edges = _swept(item)
    tails = item[1].endswith(TAILS)
    prim = primitives.get(op)
    # An elementwise op's every sweep holds the run of edges: each element is judged by its own
    # error (``tolerance.couples``), so the run hides nothing, and its dense sweep, taken first,
    # then finds what the edges show (a float32 log of subnormals off by ln 2 went unseen in
    # three 60 s sessions of five, its sweep with edges waiting its turn among the items).
    with_edges = edges or prim.kind in (*ELEMENTWISE_SWEPT, "compare")
    # (uniform: sampled_from draws 64 far more often than 600)
    sides = uniform(draw, (SHORT_SIDES, TAIL_SIDES)) if tails else SWEEP_SIDES
    size = uniform(draw, sides)
    b = ProgramBuilder()
    conversion = _conversion_of(item)
    if conversion:  # a conversion alone, on a vector or rows
        target, kind = conversion
        shape = _swept_shape(draw, size)
        converted = b.node(op, b.input(shape, dtype), dtype=target)
        if target == "bool":  # (a program's output is numeric: NumPy's exact bool -> int32)
            converted = b.node(op, converted, dtype="int32")
        program = b.build(converted)
        if kind == HALFWAY:
            inputs = [draw(narrowing_values(shape, dtype, target))]
        else:
            inputs = [draw(conversion_values(shape, dtype, target))]
        event(f"origin:sweep-{kind[1:]}")
        return Case(program, inputs, backends, origin=f"sweep/{kind[1:]}")
    if op in CONTRACTIONS:  # (m, size) @ (size, n): one long contraction, few of them
        m, n = draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([1, 2, 3]))
        program = b.build(b.node(op, b.input((m, size), dtype), b.input((size, n), dtype)))
    else:
        # Half of a 16-bit reduction's sweeps: one long accumulation, the whole array of
        # ``LONG_SIDES`` values, where an accumulator kept in 16 bits drifts (NumPy adds up in
        # float32): along the rows of 7 to 257 a planted one was within the bound in 34 of 40
        # sweeps; over 1024 values it was rejected in 13 of 20, and it stalls past 2048.
        long = prim.kind == "reduction" and dtype in ACCUMULATING_DTYPES
        if long and uniform(draw, (False, True)):
            program = _swept_program(draw, b, prim, dtype, uniform(draw, LONG_SIDES), long=True)
        else:
            program = _swept_program(draw, b, prim, dtype, size)
    # Mostly moderate spans: where an array also holds exp(88), the bound's share of the
    # array's scale hides a few ulps on every element below it (the planted exp was seen by
    # 20 of 30 sweeps over every span). A reduction's, a composite's or a contraction's
    # accuracy depends on the values' offset as much (a one-pass variance), so a third of
    # theirs are offset; a reduction's, or large enough that its sums overflow a narrow
    # accumulator (not a contraction's: the products overflow).
    offset = ("offset",) if prim.kind in ("reduction", "composite", "matmul") else SWEEP_MODERATE
    offset += ("large",) if prim.kind == "reduction" else ()
    if tails:  # an exact reduction: regimes at its edges (rows of one sign, ties, NaN)
        edges = edge_regimes(op)
        if uniform(draw, (False, True)):  # (booleans(): 0 of 10 in a session's first ones)
            # A row of each edge, reduced along the rows: one case sees every edge at the
            # sweep's size (a chunked max reading past its rows' end showed only on rows of
            # negatives, one of the five edges, longer than 256 and not a multiple of it).
            b = ProgramBuilder()
            x = b.input((len(edges), size), dtype)
            program = b.build(b.node(op, x, axis=-1, **accumulator(op, dtype)))
            rows = [draw(values((size,), dtype, r)) for r in edges]
            for row, regime in zip(rows, edges, strict=True):
                if regime in ONE_SIGNED and primitives.is_float(dtype):
                    # Its row's answer is the sign's least magnitude, a subnormal: the value a
                    # conversion that flushes loses (a bfloat16 min of odd rows that LLVM
                    # narrowed to one gave 0 for 9.2e-41; a one-signed row held it 1 in 4).
                    least = float(primitives.finfo(dtype).smallest_subnormal)
                    place = draw(st.integers(0, size - 1))
                    row[place] = -least if regime == "negative" else least
            inputs = [np.stack(rows)]
            event("origin:sweep-tails")
            return Case(program, inputs, backends, origin="sweep/tails+rows")
        regime = uniform(draw, edges)
        inputs = [draw(values(i.shape, i.dtype, regime)) for i in program.inputs]
        event("origin:sweep-tails")
        return Case(program, inputs, backends, origin=f"sweep/tails+{regime}")
    choices = [SWEEP_MODERATE, offset, ()]
    if op in AVERAGING and dtype in ACCUMULATING_DTYPES:
        # A 16-bit average's range on its own too: NumPy adds float16 up in float32, so only
        # large values show a sum that overflows in 16 bits (a float16 mean summing in float16
        # was inf for NumPy's 2582 in 2 of 8 sweeps, and went unseen in three 60 s sessions). Not
        # a sum's: NumPy's own is inf there, and its accuracy is what the sweep must judge.
        choices.append(("large",))
    if op in AVERAGING:
        # An average's accuracy turns on its values' offset (a variance as E[x^2] - E[x]^2 loses
        # every bit of 8192 +- 1 in float32): offset values alone in a choice of their own, and
        # the choices drawn uniformly (a one-pass variance survived a 60 s session whose float32
        # var sweeps drew offset values in one of six, ``sampled_from`` leaning to the first).
        choices.append(("offset",))
    spans = uniform(draw, choices) if op in AVERAGING else draw(st.sampled_from(choices))
    inputs = [draw(values(i.shape, i.dtype, "dense", spans=spans)) for i in program.inputs]
    if prim.domain == "nonnegative":
        # The dense values in its domain, the run of edges below with its signs: an abs node
        # in the program had made every -0.0 a 0.0 and every -inf an inf (a polynomial log that
        # told zero by its bits gave 72.1 for log(-0.0), NumPy's -inf, unseen in 60 s sessions).
        inputs = [np.abs(a) for a in inputs]
    if with_edges and dtype == "int32":  # (an int32 comparison: its own edges)
        run = list(INT32_EDGES)
        _meet_runs(draw, inputs, run, exact=True)
        _neighbours(draw, inputs)  # (after the runs: an end's neighbour, 2**24's)
    elif with_edges:  # a run of every edge, at a drawn place of each array (cyclically)
        run = edge_values(dtype)
        if prim.kind in ("unary", "binary", "compare"):
            # and the specials and 0.0, where each element is its own answer (a reduction's or a
            # composite's row would be all NaN or inf): a polynomial log that dropped its +inf
            # case gave 88.7 for log(inf), unseen in 402 cases of a 60 s session
            run = [*run, *SPECIALS, 0.0]
        if prim.kind == "compare":
            _neighbours(draw, inputs)
        if prim.kind in ("binary", "compare") and len(inputs) == 2:
            _meet_runs(draw, inputs, run, exact=op in (*tie_ops(), *compare_ops()))
        else:
            # Half the time, an array after the first (a composite's weights) holds the run at
            # the first's place, met as ``_meet_runs`` meets them; else at a place of its own.
            met = len(inputs) > 1 and uniform(draw, (False, True))
            first_place = None
            for array in inputs:
                flat = array.reshape(-1)
                place = draw(st.integers(0, flat.size - 1))
                turn, sign = 0, 1.0
                if met and first_place is not None:
                    place, meeting = first_place, uniform(draw, MEETINGS)
                    if meeting == "turned":
                        turn = draw(st.integers(1, len(run) - 1))
                    sign = -1.0 if meeting == "negated" else 1.0
                first_place = place if first_place is None else first_place
                count = min(flat.size, len(run))
                for k in range(count):
                    flat[(place + k) % flat.size] = sign * run[(k + turn) % count]
    if any(node.attrs.get("axis") == () for node in program.nodes) and inputs[0].size:
        # A sum over no axis is x + 0.0 in NumPy (a -0.0 comes out 0.0): one at a drawn place (a
        # sum that added -0.0 instead went unseen, the no-axis items waiting in 60 s sessions).
        inputs[0].reshape(-1)[draw(st.integers(0, inputs[0].size - 1))] = -0.0
        event("sweep:no-axis")
    event("origin:sweep")
    return Case(program, inputs, backends, origin="sweep/extreme" if edges else "sweep/dense")


def _meet_runs(
    draw: st.DrawFn, inputs: list[np.ndarray], run: list[float], exact: bool = False
) -> None:
    """A binary sweep's two arrays (of one shape) hold, from a drawn place on (cyclically), runs
    of ``run`` in segments of five kinds: each array's run against the other's dense values;
    the runs met, turned by a drawn step (edges meet edges: two subnormals whose sum is one, inf
    and -0.0), as they are (each edge against itself) and negated (each against its negation:
    0.0 and -0.0, inf and -inf). Every element is judged by its own error
    (``tolerance.couples``), so one case holds several: a float16 minimum keeping the wrong
    one of two equal zeros (float16's rule is NumPy's own) was rejected by 10 of 50 sweeps
    whose second array met the first's run one of the three ways, by 23 of 50 with these. As
    many kinds as keep the edges within a third of the array (a drawn subset: one of 64
    values, all five of 600), so the dense values an accuracy sweep is for stay the most. An
    ``exact`` op's (maximum, minimum: ``tie_ops``) has nothing to be accurate about: as many
    kinds as fit, the negated runs always (0.0 against -0.0, where which operand is kept
    shows: held by 6 of 12 float16 maximum/minimum sweeps with edges before, 24 of 24 now)."""
    first, second = (array.reshape(-1) for array in inputs)
    n = len(run)
    turn = draw(st.integers(1, n - 1))
    turned = [run[(k + turn) % n] for k in range(n)]
    negated = [-v for v in run]
    if first.dtype.kind in "iu":  # (the least int32 is its own negation, as it wraps)
        info = np.iinfo(first.dtype)
        negated = [v if info.min <= v <= info.max else w for v, w in zip(negated, run, strict=True)]
    kinds = ((run, None), (None, run), (run, turned), (run, run), (run, negated))
    order = draw(st.permutations(range(len(kinds))))
    count = max(1, min(len(kinds), first.size // (3 * n)))
    if exact:
        order = [len(kinds) - 1, *(k for k in order if k != len(kinds) - 1)]
        count = max(1, min(len(kinds), first.size // n))
    place = draw(st.integers(0, first.size - 1))
    for s, kind in enumerate(order[:count]):
        left, right = kinds[kind]
        for k in range(n):
            i = (place + s * n + k) % first.size
            if left is not None:
                first[i] = left[k]
            if right is not None:
                second[i] = right[k]


def _neighbours(draw: st.DrawFn, inputs: list[np.ndarray]) -> None:
    """A comparison sweep's second array: at a seeded draw of places, a quarter of its elements
    the first's, a quarter the first's next value up, a quarter its next value down
    (``np.nextafter`` in the dtype); the rest stay dense. Dense values never tie, and a
    comparison made in a narrower dtype, or ``<`` for ``<=``, shows on equal and adjacent
    values only."""
    first, second = (array.reshape(-1) for array in inputs)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    which = rng.integers(0, 4, first.size)
    second[which == 0] = first[which == 0]
    if first.dtype.kind in "iu":  # the next integer up and down (at an end: the end itself)
        info = np.iinfo(first.dtype)
        up = np.where(first < info.max, first + (first < info.max), first)
        down = np.where(first > info.min, first - (first > info.min), first)
        second[which == 1], second[which == 2] = up[which == 1], down[which == 2]
        return
    for k, direction in ((1, np.inf), (2, -np.inf)):
        moved = np.nextafter(first, np.asarray(direction, first.dtype))
        second[which == k] = moved[which == k]


def _swept_program(
    draw: st.DrawFn, b: ProgramBuilder, prim: Any, dtype: str, size: int, long: bool = False
) -> Program:
    """``prim`` alone on about ``size`` values of ``dtype``: a vector or rows (a composite's
    row is its unit; a reduction over the whole array, its rows or its columns; ``long``: a
    reduction of a whole vector)."""
    shape = (size,) if long else _swept_shape(draw, size, rows=prim.kind == "composite")
    # A reduction's rows split in three dims one time in four, reduced over two of them: a
    # count, divisor or identity taken from the whole array where only the reduced extents
    # count shows there alone (a mean over (0, 1) of a 3-d array that divided by its size
    # survived 60 s sessions, random programs drawing such a reduction rarely).
    split = (
        prim.kind == "reduction" and not long and len(shape) == 2 and shape[1] >= 4
        and uniform(draw, (False, False, False, True))
    )  # fmt: skip
    if split:
        shape = (shape[0], 2, shape[1] // 2)
    x = b.input(shape, dtype)
    operand = x
    attrs: dict[str, Any] = {}
    if split:
        attrs["axis"] = uniform(draw, [(0, 1), (1, 2), (0, 2), (-1, 0), (2, -2)])
        event("sweep:reduced-over-two-of-three")
    elif prim.kind == "reduction":  # the whole array, its rows or its columns, or (1 in 8) none
        attrs["axis"] = None if long else draw(st.sampled_from([None, -1, 0]))
        if attrs["axis"] is None and len(shape) == 2 and uniform(draw, (False, True)):
            # every axis spelled out, half the time out of order (NumPy sorts them; a rule that
            # kept (1, 0) as given failed in MLIR and went unseen in a 60 s session)
            attrs["axis"] = uniform(draw, [(0, 1), (1, 0), (-1, 0), (1, -2)])
        if not long and draw(st.integers(0, NO_AXIS_SWEEPS - 1)) == NO_AXIS_SWEEPS - 1:
            attrs["axis"] = ()
    if prim.kind == "reduction":
        # an int32 sum in int32 (modulo 2**32), the only one there is; and one time in four a
        # float reduction in its own dtype, given as NumPy's dtype= (a float16 mean then sums
        # in float16, not float32)
        attrs.update(accumulator(prim.name, dtype))
        for name, attr in prim.attrs.items():
            if attr.kind == "result_dtype" and not attrs.get(name):
                if uniform(draw, (False, False, False, True)):
                    attrs[name] = dtype
                    event("sweep:accumulated-in-own-dtype")
        for name, attr in prim.attrs.items():
            if attr.kind == "count":
                # var's and std's ddof, 0 half the time: its quotient is divided and rounded
                # in the result's dtype its own way (a float16 var with ddof 1 that came back
                # float32 went unseen: random programs held few float16 variances)
                attrs[name] = uniform(draw, (0, 0, 0, 1, 2, 0.5))
    if prim.kind == "compare":  # (a program's output is numeric: NumPy's exact bool -> int32)
        compared = b.node(prim.name, operand, b.input(shape, dtype))
        return b.build(b.node("astype", compared, dtype="int32"))
    if prim.kind == "composite":
        others = [b.input((shape[-1],), dtype) for _ in range(prim.arity - 1)]
    elif prim.kind == "binary" and prim.consts and uniform(draw, (False, True)):
        # Half of a binary op's sweeps take a constant on the right, where the frontend and
        # the lowering specialize (x ** 0.5 is NumPy's sqrt: -0.0 at -0.0, nan at -inf; a
        # shortcut taken for a Python float only went unseen, two arrays never reaching it)
        return b.build(b.node(prim.name, operand, _swept_constant(draw, prim.name, dtype)))
    else:
        others = [b.input(shape, dtype) for _ in range(prim.arity - 1)]
    return b.build(b.node(prim.name, operand, *others, **attrs))


def _swept_constant(draw: st.DrawFn, op: str, dtype: str) -> Const:
    """A constant of the generator's tables for the right of ``op`` (an exponent for power, 0.5
    half the time: the one NumPy computes its own way, as sqrt): a Python scalar half the time,
    else a NumPy scalar of the swept dtype, float32 or float64 (NumPy's scalar loops, and the
    frontend, tell them apart; random programs draw Python scalars 3 times in 4, so here the
    two spellings are drawn alike: a sqrt shortcut taken for a Python float only, the NumPy
    scalar going to pow, was missed in 2 of 4 60 s sessions at one in four). Of a float
    dtype, a quarter are on no table (``arbitrary_constant``; exponents mostly non-integers
    between -2 and 6): lowerings switch on constants' values, and a fast path that took any
    exponent from 2 to 4 for a small integer (``x ** 2.5`` as ``x * x``) was found in 2 of 4
    60 s sessions (at 44 and 49 s)."""
    arbitrary = primitives.is_float(dtype) and uniform(draw, (False, False, False, True))
    if op == "power":
        table = [*COMMON_EXPONENTS, *RARE_EXPONENTS, SMALL, SMALL, SMALL]
        if arbitrary:
            value = arbitrary_constant(draw, "float", low=-2, high=5)
        else:
            value = 0.5 if uniform(draw, (False, True)) else uniform(draw, table)
            value = small_exponent(draw) if value == SMALL else value
    elif arbitrary:
        value = arbitrary_constant(draw, "float")
    else:
        value = uniform(draw, [*COMMON_CONSTANTS, *RARE_CONSTANTS])
    if uniform(draw, (False, True)):
        return Const(value)
    # Of the swept dtype half the time (a 16-bit format's own scalar: bfloat16 ** bfloat16(0.5)
    # is pow in ml_dtypes, and a frontend taking it for sqrt went unseen while a sixth of
    # bfloat16's NumPy scalars were bfloat16); else one wider, where there is one (the result
    # then takes its dtype, NEP 50, which a shortcut such as 0.5 as sqrt must keep), or the
    # other of float32 and float64.
    if uniform(draw, (False, True)):
        return Const(float(value), dtype)
    others = wider_dtypes(("float32", "float64"), dtype)
    others = others or sorted({"float32", "float64"} - {dtype})
    return Const(float(value), uniform(draw, others))


def _swept_shape(draw: st.DrawFn, size: int, rows: bool = False) -> tuple[int, ...]:
    """A sweep's shape of about ``size`` values: a vector, or (with ``rows``, always) rows of
    a width around a vector's."""
    if not rows and draw(st.booleans()):
        return (size,)
    width = draw(st.sampled_from(SWEEP_ROWS))
    return (max(2, -(-size // width)), width)


@st.composite
def _out_of_range_cases(draw: st.DrawFn, backends: tuple[str, ...], item: tuple[str, str]) -> Case:
    """``item``'s gather, in any dtype it takes and any regime, one of whose ids is just past
    the table's end the item names (``OUT_OF_RANGE``): NumPy's reference raises, and so must
    the compiled kernel. For ``ONE_OF_TWO``, two such gathers (``_two_gathers``) with ids of
    their own, an id past either end in either one alone."""
    op, edge = item
    dtype = uniform(draw, [d for o, d in op_dtype_pairs() if o == op])
    cost = primitives.get(op).cost
    if edge == ONE_OF_TWO:
        edge = uniform(draw, OUT_OF_RANGE)
        program = _two_gathers(draw, op, dtype)
        # Ids in range but the one set below (``extreme`` and ``special`` put one out of range)
        regime = uniform(draw, ("ordinary", "ties", "negative", "positive"))
        inputs = [np.array(a, copy=True) for a in draw(input_values(program, regime))]
    else:  # the gather alone: a second step could leave it dead (a fresh input is its operand)
        strategy = programs(max_nodes=cost, min_nodes=1, dtypes=[dtype], first=op)
        drawn = draw(samples(strategy))
        program = drawn.program
        inputs = [np.array(a, copy=True) for a in drawn.inputs]
    ids = [(index, bound) for gather, index, bound in _id_inputs(program) if gather == op]
    ids = [(index, bound) for index, bound in ids if inputs[index].size]
    if ids:
        index, bound = uniform(draw, ids)
        flat = inputs[index].reshape(-1)
        flat[draw(st.integers(0, flat.size - 1))] = _out_of_range_id(edge, bound)
    event("origin:focus-out-of-range")
    return Case(program, inputs, backends, origin=f"focus/{item[1]}")


def is_out_of_range(case: Case) -> bool:
    """Is ``case`` an out-of-range item's (``_out_of_range_cases``)?"""
    return case.origin.startswith("focus/") and case.origin[6:] in (*OUT_OF_RANGE, ONE_OF_TWO)


@st.composite
def out_of_range_siblings(draw: st.DrawFn, case: Case, count: int) -> tuple[Case, ...]:
    """Up to ``count`` siblings of an out-of-range case (``is_out_of_range``): the same program
    with an id just past an end of its table in another of its gathers' id inputs alone (the
    case's own input at the other end, where it has one id input), on ordinary values
    otherwise. Of two gathers, which one holds the bad id decides what a wrong check shows (a
    kernel whose two error flags shared a buffer passed wherever the second gather wrote its
    flag last): the case and its siblings hold it in each, on the case's kernels."""
    program = case.program
    ids = [(index, bound) for _, index, bound in _id_inputs(program)]
    ids = [(index, bound) for index, bound in ids if case.inputs[index].size]
    if not ids:
        return ()

    def end_of(index: int, bound: int) -> int | None:
        """Which of ``OUT_OF_RANGE``'s ends input ``index`` holds an id past, or None."""
        values = np.asarray(case.inputs[index])
        if np.any(values >= bound):
            return 0
        return 1 if np.any(values < 0) else None

    held = {index: end for index, bound in ids if (end := end_of(index, bound)) is not None}
    others = [(i, b) for i, b in ids if i not in held] or ids
    first = next(iter(held.values()), 0)  # the case's end, given to the other gathers first
    found = []
    for number, (index, bound) in enumerate(others[:count]):
        inputs = [np.array(a, copy=True) for a in draw(input_values(program, "ordinary"))]
        flat = inputs[index].reshape(-1)
        # its own input at the other end; another gather's at the case's end, then alternating
        edge = OUT_OF_RANGE[1 - held[index] if index in held else (first + number) % 2]
        flat[draw(st.integers(0, flat.size - 1))] = _out_of_range_id(edge, bound)
        origin = f"{case.origin}+input {index} {edge.partition(':')[2]}"
        found.append(replace(case, inputs=inputs, recipes=[], origin=origin))
    return tuple(found)


def _two_gathers(draw: st.DrawFn, op: str, dtype: str) -> Program:
    """Two ``op`` gathers with ids of their own: from two tables, their rows added, or the
    second from the first's rows (by 1-D or 2-D ids)."""
    b = ProgramBuilder()
    width = draw(st.integers(1, 6))
    rows = draw(st.integers(1, 5))
    ids = tuple(draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 2))))
    first = b.node(op, b.input((rows, width), dtype), b.input(ids, "int32", bound=rows))
    if draw(st.booleans()):  # chained: the second reads the first's rows
        more = tuple(draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 2))))
        return b.build(b.node(op, first, b.input(more, "int32", bound=ids[0])))
    other = draw(st.integers(1, 5))
    second = b.node(op, b.input((other, width), dtype), b.input(ids, "int32", bound=other))
    return b.build(b.node("add", first, second))


def _id_inputs(program: Any) -> list[tuple[str, int, int]]:
    """(gather op, input index, bound) for each gather that reads its ids from an input with a
    bound (the table's rows)."""
    found = []
    for node in program.nodes:
        if primitives.get(node.op).kind != "gather":
            continue
        ids = node.args[-1]
        if isinstance(ids, Ref) and ids.kind == "input":
            bound = program.inputs[ids.index].bound
            if bound is not None:
                found.append((node.op, ids.index, bound))
    return found


def _out_of_range_items(case: Case) -> set[tuple[str, str]]:
    """The (op, OUT_OF_RANGE edge) items a case exercises: a gather reading an input of ids
    that holds the bound itself, or -1; and (op, ONE_OF_TWO): two or more gathers reading
    inputs of ids, one input alone holding an id out of range."""
    found = set()
    bad: dict[str, set[int]] = {}
    read: dict[str, set[int]] = {}
    for op, index, bound in _id_inputs(case.program):
        values = np.asarray(case.inputs[index])
        found |= {
            (op, edge) for edge in OUT_OF_RANGE if (values == _out_of_range_id(edge, bound)).any()
        }
        read.setdefault(op, set()).add(index)
        if ((values < 0) | (values >= bound)).any():
            bad.setdefault(op, set()).add(index)
    found |= {(op, ONE_OF_TWO) for op in read if len(read[op]) >= 2 and len(bad.get(op, ())) == 1}
    return found


#: Kinds of item that share a family with another (``item_family``): an exact reduction's sweep
#: is a sweep, a slice at a reduction's identity an edge of a value as an id past a table is.
_FAMILIES = {
    "tails": "sweep", "identity": "out-of-range", INVALID: "out-of-range",
    # a contraction's operand ranks are one more kind of pair, an input layout one more view
    # (families of their own took a share from every other: the constants' family waited)
    "ranks": "pair", "layout": "view",
    # ops on booleans, a family of their own: few (only x / y on the compiler as it is), each
    # an i1 code path; as a kind of the pairs' family, a rule that let np.maximum of booleans
    # through waited past 60 s in two sessions of three (as a family, in the two since too:
    # half the focused cases go to the dense sweeps first, and the families share the rest by
    # the root of their items, ``_by_root``: a family of one item has one pick in 66 at the start)
    "pair:bool": "bool",
}  # fmt: skip


def item_family(kind: str) -> str:
    """The family of a kind of item (``item_kind``): focused cases are drawn uniformly over
    the families left, then over the family's kinds (a new family takes a share from every
    other: with the identity and the tails families of their own, an op's (op, dtype) pairs
    went from an eighth of the focused cases to a tenth)."""
    return _FAMILIES.get(kind, kind.partition(":")[0])


def item_kind(item: tuple[str, str]) -> str:
    """What a focus item exercises: "pair:KIND" (an op of the primitive kind KIND in a
    dtype: "pair:gather" has 5 items, "pair:unary" 45; a gather's range check waited behind the
    unary ops), "cast", "spelling", "const:left", "const:wide", "const:arbitrary",
    "const:wider", "const:foreign", "const:value" or "const:base" (one family: a constant
    operand's forms), "jit-sequence",
    "out-of-range", "identity" and "invalid" (one family: what must be rejected or kept at a
    range's end), "view", "key", "ranks" (a contraction's operand ranks), "layout" (inputs
    handed over in a layout), "sweep" (with edges; the dense sweeps have their own share) or
    "tails" (an exact reduction's sweep: 10 of the 107 sweeps, drawn as any of them, and a
    max's chunked rows went unseen in 60 s sessions; now a kind of the sweeps' family,
    ``item_family``); "pair:bool" an op on booleans where the compiler's rule takes them (a
    kind, and a family, of its own: ``_FAMILIES``)."""
    op, second = item
    if item == SEQUENCE_ITEM:
        return "jit-sequence"
    if op == INVALID:
        return INVALID
    if second in (*OUT_OF_RANGE, ONE_OF_TWO):
        return "out-of-range"
    if second.startswith(IDENTITY) or second == NO_AXIS:
        return "identity"
    if second.startswith(VIEWED):
        return "view"
    if second.startswith(KEYED):
        return "key"
    if second.startswith(RANKED):
        return "ranks"
    if op == LAYOUT_ITEM:
        return "layout"
    if second.startswith(SWEPT):
        return "tails" if second.endswith(TAILS) else "sweep"
    if second.startswith(SPELLED):
        return "spelling"
    if second == CONST_LEFT:
        return "const:left"
    if second == CONST_WIDE:
        return "const:wide"
    if second == CONST_ARBITRARY:
        return "const:arbitrary"
    if second == CONST_WIDER:
        return "const:wider"
    if second == CONST_FOREIGN:
        return "const:foreign"
    if second.startswith(CONST_VALUE):
        return "const:value"
    if second.startswith(CONST_BASE):
        return "const:base"
    if second == "bool":
        return "pair:bool"
    return "cast" if "->" in second else f"pair:{primitives.get(op).kind}"


def is_sweep(item: tuple[str, str]) -> bool:
    """Is ``item`` an accuracy sweep's (``sweep_items``)?"""
    return item[1].startswith(SWEPT)


def is_dense_sweep(item: tuple[str, str]) -> bool:
    """Is ``item`` a dense sweep's? Those take half of the focused cases while any is left
    (``focus_cases``); the sweeps with edges take their turn among the other items."""
    return is_sweep(item) and not item[1].endswith(EDGES)


def _first_dtypes() -> dict[str, str]:  # read each time: a plugin's entries take part
    first: dict[str, str] = {}
    for op, dtype in op_dtype_pairs():
        first.setdefault(op, dtype)
    return first


def focus_items() -> tuple[tuple[str, str], ...]:
    """What focused cases start from: every (op, dtype) pair of the table, every cast
    ("astype", "float32->bool"), then (op, "spelling:<name>") for each op a non-default spelling
    reaches another way (NumPy's dispatch of ``np.sum``, the method ``x.sum``), and (op,
    "const-left") for each binary op and comparison a constant can stand on the left of
    (``3.0 - x``: the reflected operator, in a dtype the case draws), (op, "const-wide") for
    each of those an int32 tensor meets a constant of another range in (``x < 2**40``, ``x *
    0.5``), (op, "const-arbitrary") for each of the first a constant on no table can meet
    (``x ** 2.37``, ``x * 37``: ``CONST_ARBITRARY``), (op, "const-wider") for each a NumPy
    scalar wider than its tensor can meet, (op, "const=VALUE") for each constant a lowering or
    folder may take the op apart for (``x ** -3``, ``x * -0.0``: ``SPECIAL_CONSTANTS``),
    ("power", "base=VALUE") for each constant base one rewrites (``8.0 ** x``: ``SPECIAL_BASES``);
    an id just past each end of a gather's table (``OUT_OF_RANGE``), in one of two gathers
    alone (``ONE_OF_TWO``); a max's or min's identity in each dtype (``IDENTITY``); each
    float reduction over no axis on a -0.0 (``NO_AXIS``); a jit sequence
    (``SEQUENCE_ITEM``); (op, "views:LAYOUT") for an op of each primitive kind on views of
    inputs of each layout (``view_ops``, ``VIEW_LAYOUTS``); each key element at each place
    (``key_items``); a contraction's operands of each pair of ranks (``rank_items``); inputs
    handed over in each layout (``layout_items``); each violation an invalid program is drawn
    with (``INVALID``: rejected as NumPy does); and the accuracy sweeps (``sweep_items``), the
    dense ones of which take half of the focused cases while any is left (``focus_cases``)."""
    first = _first_dtypes()  # the ops with a dtype to draw them in
    spelled = [
        (op, SPELLED + spelling)
        for spelling in primitives.SPELLINGS[1:]
        for op in first
        if primitives.get(op).respelled(spelling)
    ]
    reflected = [(op, CONST_LEFT) for op in const_left_ops() if op in first]
    arbitrary = [(op, CONST_ARBITRARY) for op in const_left_ops() if op in first]
    arbitrary += [(op, CONST_WIDER) for op in const_left_ops() if op in first]
    arbitrary += [(op, CONST_FOREIGN) for op in const_left_ops() if op in first and op != "power"]
    arbitrary += [
        (op, const_value_form(value))
        for op, values in SPECIAL_CONSTANTS.items()
        if op in first
        for value in values
    ]
    arbitrary += [("power", const_base_form(base)) for base in SPECIAL_BASES if "power" in first]
    wide = [(op, CONST_WIDE) for op in const_wide_ops()]
    checked = [
        (op, edge)
        for op in first
        if primitives.get(op).kind == "gather"
        for edge in (*OUT_OF_RANGE, ONE_OF_TWO)
    ]
    checked += [(op, IDENTITY + dtype) for op, dtype in op_dtype_pairs() if op in identity_ops()]
    checked += [(op, NO_AXIS) for op in no_axis_ops()]
    views = [(op, viewed(layout)) for op in view_ops() if op in first for layout in VIEW_LAYOUTS]
    rejected = [(INVALID, name) for name in VIOLATIONS]
    return (
        *sweep_items(), *op_dtype_pairs(), *cast_pairs(), *spelled, *reflected, *wide,
        *arbitrary, *checked, SEQUENCE_ITEM, *views, *key_items(), *rank_items(),
        *layout_items(), *rejected,
    )  # fmt: skip


def exercised_pairs(program: Any) -> set[tuple[str, str]]:
    """The (op, dtype) pairs a program exercises: each node's op with the dtype it computes in
    (``_computed_in``; its result's, for a node without a tensor operand: causal_mask), and
    each cast as ("astype", "SOURCE->TARGET"), each binary op or comparison with a constant on
    its left as (op, "const-left") (a Python scalar: a NumPy one is a ufunc call, not the
    tensor's reflected operator), with an int32 tensor and a constant int32 cannot represent as
    (op, "const-wide"), with a constant on no table as (op, "const-arbitrary"), one wider than
    its tensor as (op, "const-wider"), one of ``SPECIAL_CONSTANTS`` as (op, "const=VALUE") (a
    power's: its exponent), a power of one of ``SPECIAL_BASES`` as ("power", "base=VALUE"); not
    a node of two operands that are one value."""
    from strategies.model.types import Const

    found = set()
    for equation in program.nodes:
        if len(equation.args) == 2 and equation.args[0] == equation.args[1]:
            continue  # x > x, x - x: the op on equal operands only (int32 > as != agrees)
        types = program.arg_types(equation)
        dtypes = [t.dtype for t in types if t.dtype != "bool"]
        found.add((equation.op, _computed_in(program, equation, dtypes) or equation.type.dtype))
        tensors = [program.type_of(a).dtype for a in equation.args if isinstance(a, Ref)]
        if tensors and set(tensors) == {"bool"} and primitives.get(equation.op).kind != "select":
            found.add((equation.op, "bool"))  # booleans only (x / y of two: a float64 divide)
        if len(set(dtypes)) == 1 and not any(isinstance(a, Const) for a in equation.args):
            # Tensors of one dtype: what a focused program of that dtype starting with the op
            # draws, whatever it computes in (int32 / int32 divides in float64: the item
            # ("divide", "int32") was never done, and half of a driver's cases were drawn for
            # it, then skipped, for the rest of every session).
            found.add((equation.op, dtypes[0]))
        if equation.op == "astype":
            found.add(("astype", f"{types[0].dtype}->{equation.type.dtype}"))
        args = equation.args
        if len(args) == 2 and isinstance(args[0], Const) and not isinstance(args[1], Const):
            if args[0].dtype is None:  # a Python scalar: the tensor's reflected operator
                found.add((equation.op, CONST_LEFT))
        if len(args) == 2 and [t.dtype for t in types] == ["int32"] and _wide(args):
            found.add((equation.op, CONST_WIDE))
        if any(isinstance(a, Const) and on_no_table(a.value) for a in args):
            found.add((equation.op, CONST_ARBITRARY))
        if dtypes and any(isinstance(a, Const) and _wider(a, dtypes[0]) for a in args):
            found.add((equation.op, CONST_WIDER))
        if any(isinstance(a, Const) and a.dtype in SCALAR_DTYPES for a in args):
            found.add((equation.op, CONST_FOREIGN))
        for position, arg in enumerate(args):
            if not isinstance(arg, Const) or (equation.op == "power" and position != 1):
                continue  # (a power's: its exponent)
            special = special_constant(equation.op, arg.value)
            if special is not None:
                found.add((equation.op, const_value_form(special)))
        if equation.op == "power" and isinstance(args[0], Const):
            base = special_base(args[0].value)
            if base is not None:
                found.add(("power", const_base_form(base)))
    return found


def _wider(constant: Any, dtype: str) -> bool:
    """Is ``constant`` a NumPy scalar wider than a ``dtype`` tensor (``CONST_WIDER``)?"""
    return constant.dtype is not None and bool(wider_dtypes((constant.dtype,), dtype))


def _wide(args: Any) -> bool:
    """Is one of ``args`` a constant int32 cannot represent (a float, an int past its ends)?"""
    from strategies.model.types import INT32_MAX, Const

    return any(
        isinstance(a, Const)
        and (isinstance(a.value, float) or not -INT32_MAX - 1 <= a.value <= INT32_MAX)
        for a in args
    )


def _computed_in(program: Any, equation: Any, dtypes: list[str]) -> str | None:
    """The dtype an arithmetic or comparison node computes in, NumPy's (the primitive table's
    ``numpy_dtypes``: ``float32_scalar > int32_tensor`` compares floats, it is no int32 ``>``);
    for other nodes their first non-boolean tensor operand's."""
    from strategies.model.types import Const

    if not dtypes:
        return None
    prim = primitives.get(equation.op)
    if prim.kind not in ("binary", "compare"):
        return dtypes[0]
    types = [a.py() if isinstance(a, Const) else program.type_of(a) for a in equation.args]
    return np.dtype(prim.numpy_dtypes(types, equation.type)[0]).name


def exercised_items(case: Case, every_spelling: bool = False) -> set[tuple[str, str]]:
    """The focus items (``focus_items``) a case exercises: its program's (op, dtype) pairs and,
    in a non-default spelling (in each, with ``every_spelling``: the spelling oracle traced the
    case in the others), (op, "spelling:<name>") for each op it writes another way."""
    found = exercised_pairs(case.program) | _out_of_range_items(case) | _identity_items(case)
    found |= _no_axis_items(case)
    if case.invalid is not None:
        found.add((INVALID, case.invalid.violation))
    found |= {
        (op, viewed(layout))
        for layout in VIEW_LAYOUTS
        for op in ops_reading_views(case.program, layout)
    }
    found |= _key_items_of(case.program) | _rank_items_of(case.program) | _layout_items_of(case)
    sequence = case.sequence
    if sequence is not None and len(sequence.calls) > 1:
        found.add(SEQUENCE_ITEM)
    if case.origin.startswith("sweep/"):
        # The dtype swept is the operand's: a float32 gelu's result is float64 (NEP 50), and
        # with the result's dtype its sweeps were never done (they held half of the focused
        # cases for the whole session).
        program = case.program
        kinds = {"sweep/" + suffix[1:]: suffix for suffix in CAST_SWEEPS}
        if case.origin in kinds:
            found |= {
                (
                    node.op,
                    f"{SWEPT}{program.arg_types(node)[0].dtype}->{node.type.dtype}"
                    f"{kinds[case.origin]}",
                )
                for node in program.nodes
                if node.op == "astype"
            }
        else:
            if case.origin.startswith("sweep/tails"):
                swept, kind = set(tail_ops()), TAILS
            else:
                # (a contraction's sweep too: its item was never done, and was given up)
                swept = {*sweep_ops(), *CONTRACTIONS, *tie_ops(), *compare_ops()}
                kind = EDGES if case.origin == "sweep/extreme" else ""
            found |= {
                (node.op, SWEPT + program.arg_types(node)[0].dtype + kind)
                for node in program.nodes
                if node.op in swept
            }
    spellings = primitives.SPELLINGS[1:] if every_spelling else (case.spelling,)
    for spelling in spellings:
        if spelling == primitives.SPELLINGS[0]:
            continue
        found |= {
            (op, SPELLED + spelling)
            for op in set(case.program.ops)
            if primitives.get(op).respelled(spelling)
        }
    return found


#: The share of cases focused on an (op, dtype) not exercised yet, while there is one: half,
#: so that a 60 s session on 2 cores covers the table (none once it is covered).
FOCUS_SHARE = 0.5

#: How many cases exercise a focus item before it leaves the focus: one is often degenerate
#: (int32 ``a > b`` on all-zero inputs, or against -2**31, where ``a != b`` agrees: of 12
#: focused cases, 2 showed that planted bug).
FOCUS_REPEATS = 2

#: Rounds in a row (each ``examples_per_round`` cases, half of them focused) whose focus
#: exercised no new item before a driver gives its focus items up (``Driver._focus_progress``).
FOCUS_IDLE_ROUNDS = 3
