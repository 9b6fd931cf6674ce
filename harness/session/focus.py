"""Focused cases: the (op, dtype) pairs, casts and spellings of the primitive table that a
session's cases have not exercised yet, and small programs that start from them.

Random programs reach a rare pair seldom (an int32 matmul was 3% of them, int32 ``a > b`` none
of 400), so a session passes the items it has not exercised to ``focus_cases`` (``FOCUS_SHARE``
of its cases, ``generate.cases``) until each is exercised ``FOCUS_REPEATS`` times or a driver
gives up on them (``admission.Admission``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from compiler import primitives
from strategies import cast_pairs, op_dtype_pairs, programs, samples
from strategies.gen.values import edge_regimes

from ..case import Case


def uniform(draw: st.DrawFn, items: Sequence[Any]) -> Any:
    """One of ``items``, near uniformly: ``sampled_from`` favours the first ones and repeats
    recent picks, which starves the tail of a table drawn from; a wide integer modulo the count
    still shrinks toward the first item."""
    return items[draw(st.integers(0, 2**16 - 1)) % len(items)]


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
    if second.startswith(SPELLED):
        return first_dtypes[op], second[len(SPELLED) :]
    return second.partition("->")[0], None  # a cast's source


def _first_step(item: tuple[str, str]) -> str:
    """The first step that exercises a focus item: its op, or "astype->TARGET" for a cast."""
    op, second = item
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
    (``edge_regimes``); if empty, half the cases take the first op's edges, half any regime."""
    # Uniform over the items left: with ``sampled_from`` (int32, ``>``) was met by 150 cases in
    # 1 of 8 simulated drivers, now 6 of 8 (items done: 75 -> 81 of 134).
    first = uniform(draw, pairs)
    first_dtypes = _first_dtypes()
    dtype, spelling = _item_dtype_and_spelling(first, first_dtypes)
    alike = [
        p for p in pairs
        if p != first and _item_dtype_and_spelling(p, first_dtypes) == (dtype, spelling)
    ]  # fmt: skip
    count = min(len(alike), FOCUS_ITEMS_PER_CASE - 1)
    more = (
        draw(st.lists(st.sampled_from(alike), min_size=count, max_size=count, unique=True))
        if count
        else []
    )
    steps = [_first_step(item) for item in (first, *more)]
    # One step beyond what the ops need (a cast to bool takes a consumer): more steps leave the
    # first ones dead more often.
    budget = sum(primitives.get(op).cost for op, _ in (first, *more)) + 1
    budget += sum(step.endswith("->bool") for step in steps)
    strategy = programs(max_nodes=budget, min_nodes=len(steps), dtypes=[dtype], first=steps)
    if regimes:  # those at the first op's edges, where the session asks for edges
        regimes = tuple(r for r in edge_regimes(first[0]) if r in regimes) or regimes
    elif draw(st.integers(0, 1)):  # half the first pass too (a 60 s session on one worker
        regimes = edge_regimes(first[0])  # never reached the second: int32 > as >= unseen)
    drawn = draw(samples(strategy, regime=draw(st.sampled_from(regimes)) if regimes else None))
    event("origin:focus")
    case = Case(drawn.program, list(drawn.inputs), backends, origin=f"focus/{drawn.regime}")
    return case.respelled(spelling) if spelling else case


#: The second member of a focus item that names a spelling instead of a dtype.
SPELLED = "spelling:"


def _first_dtypes() -> dict[str, str]:  # read each time: a plugin's entries take part
    first: dict[str, str] = {}
    for op, dtype in op_dtype_pairs():
        first.setdefault(op, dtype)
    return first


def focus_items() -> tuple[tuple[str, str], ...]:
    """What focused cases start from: every (op, dtype) pair of the table, every cast
    ("astype", "float32->bool"), then (op, "spelling:<name>") for each op a non-default spelling
    reaches another way (NumPy's dispatch of ``np.sum``, the method ``x.sum``): 200 pairs, 25
    casts and 43 spelled ops today."""
    spelled = [
        (op, SPELLED + spelling)
        for spelling in primitives.SPELLINGS[1:]
        for op in _first_dtypes()
        if primitives.get(op).respelled(spelling)
    ]
    return (*op_dtype_pairs(), *cast_pairs(), *spelled)


def exercised_pairs(program: Any) -> set[tuple[str, str]]:
    """The (op, dtype) pairs a program exercises: each node's op with the dtype it computes in
    (``_computed_in``; its result's, for a node without a tensor operand: causal_mask), and
    each cast as ("astype", "SOURCE->TARGET"); not a node of two operands that are one value."""
    from strategies.model.types import Const

    found = set()
    for equation in program.nodes:
        if len(equation.args) == 2 and equation.args[0] == equation.args[1]:
            continue  # x > x, x - x: the op on equal operands only (int32 > as != agrees)
        types = program.arg_types(equation)
        dtypes = [t.dtype for t in types if t.dtype != "bool"]
        found.add((equation.op, _computed_in(program, equation, dtypes) or equation.type.dtype))
        if len(set(dtypes)) == 1 and not any(isinstance(a, Const) for a in equation.args):
            # Tensors of one dtype: what a focused program of that dtype starting with the op
            # draws, whatever it computes in (int32 / int32 divides in float64: the item
            # ("divide", "int32") was never done, and half of a driver's cases were drawn for
            # it, then skipped, for the rest of every session).
            found.add((equation.op, dtypes[0]))
        if equation.op == "astype":
            found.add(("astype", f"{types[0].dtype}->{equation.type.dtype}"))
    return found


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
    found = exercised_pairs(case.program)
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
