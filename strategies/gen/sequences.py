"""Jit sequences: one function called several times through one ``@jit`` cache.

A drawn program becomes the function's template: its reductions' axes and keepdims, reshape
targets, permutations and scalar constants become static keyword arguments (a ``scale`` constant
is added when it has none); optionally a captured array joins the output (``out + W``, ``W``
read from the enclosing scope; sometimes a view of it made outside the function joins too: ``+
V``, ``V = W[:1]``) and a second variant (one more equation) is selected by another argument
tree. The first call uses the drawn dtypes and defaults; each later call changes ONE
thing of an earlier call, so a cache that confuses the two answers the later call with the
earlier call's specialization:

- ``dtype``: the same shapes in other dtypes (every array, or one);
- ``shape``: the same dtypes in other shapes (two extents swapped in every passed array, the
  size kept: (2, 3) as (3, 2); or one extent grown by one), where the program still builds;
- ``static``: another value of one static argument (another axis, keepdims, reshape target,
  permutation, or a constant of another value or another Python type: ``2`` vs ``2.0``);
- ``structure``: another argument tree (tuple, list, dict, a ``None`` leaf, nesting), possibly
  meaning the other variant;
- ``repeat``: the same call with other values (and the captured array changed in place);
- ``alias``: one array passed as two arguments;
- ``feedback``: the previous call's output passed back in.

Every call's own program is checked by the ``ProgramBuilder`` (NumPy decides its types), so a
change NumPy rejects is never drawn. Draws shrink toward fewer calls, positional arguments and
the earlier changes in the list above.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from compiler import primitives

from ..model import DTYPES, REJECTIONS, Const, Program, ProgramBuilder, Ref
from ..model.sequence import (
    CAPTURED_VIEWS,
    LEAF,
    OUTPUT,
    OWN,
    Call,
    Hole,
    JitSequence,
    captured_values,
    skeleton_text,
    view_shape,
)
from .programs import programs
from .shapes import broadcasts_onto, uniform
from .values import input_values

CHANGES = ("dtype", "shape", "static", "structure", "repeat", "alias", "feedback")
SKELETONS = ("positional", "tuple", "list", "dict", "none", "nested")
_NAMES = {"axis": "axis", "keepdims": "keepdims", "shape": "shape", "axes": "axes", "": "scale"}


def skeleton(kind: str, count: int) -> tuple[Any, ...]:
    """The positional-argument tree of ``kind`` for ``count`` arrays."""
    leaves = [LEAF] * count
    if kind == "positional":
        return tuple(leaves)
    if kind == "tuple":
        return (tuple(leaves),)
    if kind == "list":
        return (list(leaves),)
    if kind == "dict":
        # Keys sort in the leaves' order (jit flattens a dict by sorted keys). Ten letters
        # once: a template of two feedforwards (13 arrays) got a 10-key dict, its own first
        # call did not build, and the generator's assertion stopped a 5-minute session.
        keys = (
            "abcdefghijklmnopqrstuvwxyz"[:count]
            if count <= 26
            else [f"x{i:03d}" for i in range(count)]
        )
        # Built in another order than sorted (keys rotated by one), as user code builds dicts:
        # jit flattens by sorted keys, whatever the insertion order; a flattening that walked
        # the keys sorted and the values in insertion order would be right on sorted dicts only.
        keys = list(keys)
        return ({k: LEAF for k in keys[1:] + keys[:1]},)
    if kind == "none":
        return (tuple([LEAF, None, *leaves[1:]]),)
    if kind == "nested":
        return (LEAF, [tuple(leaves[1:])]) if count > 1 else ((tuple(leaves),),)
    raise ValueError(f"unknown skeleton kind {kind!r}")


def hole_candidates(program: Program) -> list[Hole]:
    """Every attribute and weak scalar constant of ``program`` a static argument could set."""
    found = []
    for index, node in enumerate(program.nodes):
        prim = primitives.get(node.op)
        for attr in ("axis", "keepdims", "shape", "axes"):
            if attr in node.attrs and node.op in ("reshape", "permute_dims", "softmax") + tuple(
                p.name for p in primitives.of_kind("reduction")
            ):
                found.append(Hole(_NAMES[attr], index, attr))
        if prim.consts:
            for position, arg in enumerate(node.args):
                if isinstance(arg, Const) and arg.dtype is None:
                    found.append(Hole("scale", index, "", position))
    return found


def static_values(program: Program, hole: Hole, current: Any) -> list[Any]:
    """Other values for ``hole`` than ``current``, the value a call gives it (some may be
    invalid: checked later)."""
    node = program.nodes[hole.node]
    if not hole.attr:
        c = current
        values: list[Any] = [c * 2 if c else 1, -c if c else -1, c + 1]
        if _is_zero(c):
            # The other zero first: equal to c, so a cache keyed by value (not by bits) hands
            # ``x / -0.0`` the kernel compiled for ``x / 0.0`` (+inf for -inf).
            values.insert(0, -c)
        values.append(float(c) if isinstance(c, int) else int(c) if float(c).is_integer() else 0.5)
        if isinstance(c, float) and math.isfinite(c):
            # Its neighbour: equal to c in float32 and in any short printing, so a cache keyed
            # by a narrowed or rounded value hands it c's kernel (a static keyed by its float32
            # bits, 1.0 and 1.0 + 2**-40 one specialization, survived a 60 s session). Only
            # where the answer changes (``_answer_changes``): a float64 program's.
            values.append(math.nextafter(c, math.inf))
    else:
        source = program.type_of(node.args[0]) if node.args else None
        rank = len(source.shape) if source is not None else 0
        if hole.attr == "keepdims":
            values = [not current]
        elif hole.attr == "axis":
            values = [None, *range(-rank, rank)]
        elif hole.attr == "axes":
            values = list(itertools.permutations(range(rank)))
        else:  # a reshape target: the same size in other shapes
            size = int(np.prod(source.shape)) if source is not None else 1
            values = [(size,), tuple(reversed(current)), (1, size), (size, 1), (-1,)]
    return [v for v in values if not _same_static(v, current)]


def _is_zero(value: Any) -> bool:
    return isinstance(value, float) and value == 0.0


def _same_static(a: Any, b: Any) -> bool:
    """Is ``a`` the very static value ``b`` (type and bits: -0.0 is not 0.0)?"""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def _current(program: Program, hole: Hole) -> Any:
    node = program.nodes[hole.node]
    return node.attrs[hole.attr] if hole.attr else node.args[hole.arg].value


class _Draft:
    """The sequence being drawn: a call is added only if its program builds."""

    def __init__(
        self, variants: tuple[Program, ...], holes: tuple[Hole, ...], captured: bool, view: str
    ) -> None:
        self.variants, self.holes, self.captured, self.view = variants, holes, captured, view
        self.calls: list[Call] = []

    def sequence(self, calls: list[Call] | None = None) -> JitSequence:
        calls = tuple(calls or self.calls)
        return JitSequence(self.variants, self.holes, self.captured, calls, self.view)

    def program(self, call: Call) -> Program | None:
        try:
            return self.sequence([*self.calls, call]).program(len(self.calls))
        except (*REJECTIONS, KeyError):
            return None


def _with_values(
    draw: st.DrawFn, draft: _Draft, call: Call, fresh_captured: bool, repeat: bool = False
) -> Call | None:
    """``call`` with values drawn for its own arrays (and the captured array, if asked).

    New captured values must change the call's answer (NumPy's, on its own arrays) from every
    earlier captured value, and a call that repeats the first with other values (``repeat``)
    must answer differently from it: a change that NumPy cannot tell apart cannot show a cache
    that kept the old values (a program that multiplies the captured array by ``var`` of one
    element answers 0 whatever it holds). Hypothesis often draws the same values again (its
    mutator copies one ``input_values`` span over another), so after a few draws the last
    values are shifted (``_shifted``); if NumPy still cannot tell, the captured array stays as
    it was (or the repeat is given up)."""
    program = draft.program(call)
    if program is None:
        return None
    sources = call.sources or (OWN,) * len(call.dtypes)
    built = None
    values: list = []
    for attempt in range(_VALUE_TRIES + 1):
        if attempt < _VALUE_TRIES:
            values = draw(input_values(program))
        else:
            values = [_shifted(v) for v in values]
        arrays = tuple(values[j] if s == OWN else None for j, s in enumerate(sources))
        captured = values[len(sources)] if draft.captured and fresh_captured else None
        built = Call(
            call.variant, call.skeleton, call.dtypes, call.statics, sources, arrays, captured,
            call.note, call.shapes,
        )  # fmt: skip
        try:
            draft.sequence([*draft.calls, built]).validate()
        except (*REJECTIONS, KeyError):
            return None
        if _values_tell(draft, built, repeat):
            return built
    if built is None or repeat:
        return None
    event("jit-sequence:captured-change-invisible")
    return replace(built, captured=None)  # only a captured change can fail to tell


#: Draws of a call's values before they are shifted instead (``_with_values``).
_VALUE_TRIES = 3


def _shifted(values: np.ndarray) -> np.ndarray:
    """Other values of the same dtype and shape: ``2x + 1`` (floats), ``x + 1`` (integers,
    wrapping), ``not x`` (bool)."""
    a = np.asarray(values)
    if a.dtype == np.bool_:
        return ~a
    with np.errstate(all="ignore"):
        if a.dtype.kind in "iu":
            return (a + np.ones((), a.dtype)).astype(a.dtype)
        return (a * np.asarray(2, a.dtype) + np.asarray(1, a.dtype)).astype(a.dtype)


def _values_tell(draft: _Draft, call: Call, repeat: bool) -> bool:
    """Does NumPy answer ``call`` differently from the same call with each earlier captured
    value (where it writes new ones), and, for the repeat of the first call (``repeat``),
    differently from the first call's arrays? True when it cannot tell (an output passed back
    in, an error)."""
    if not draft.calls or OUTPUT in call.sources:
        return True
    index = len(draft.calls)
    sequence = draft.sequence([*draft.calls, call])
    first = draft.calls[0]
    try:
        fn = sequence.program(index).as_function(np)
        own = sequence.inputs(index)
        leaves, rest = own[: len(call.sources)], own[len(call.sources) :]
        alternatives = []
        if call.captured is not None:
            earlier = {id(c.captured): c.captured for c in draft.calls if c.captured is not None}
            alternatives += [
                [*leaves, *captured_values(draft.view, value)] for value in earlier.values()
            ]
        if repeat and first.sources == call.sources:
            alternatives.append(sequence.inputs(0)[: len(first.sources)] + rest)
        with np.errstate(all="ignore"):
            mine = np.asarray(fn(*own))
            return not any(_same_answer(mine, np.asarray(fn(*i))) for i in alternatives)
    except (*REJECTIONS, KeyError, ArithmeticError, TypeError):
        return True


def _answer_changes(draft: _Draft, call: Call, statics: tuple[tuple[str, Any], ...]) -> bool:
    """Does NumPy answer ``call`` differently with ``statics`` instead of its own (on its
    arrays)? A static value that changes nothing (keepdims before a broadcast, a threshold no
    value reaches) cannot show a cache that ignores it."""
    index = len(draft.calls)
    inputs = draft.sequence([*draft.calls, call]).inputs(index)
    try:
        mine = draft.sequence([*draft.calls, call]).program(index)
        other = draft.sequence([*draft.calls, replace(call, statics=statics)]).program(index)
        with np.errstate(all="ignore"):
            a = np.asarray(mine.as_function(np)(*inputs))
            b = np.asarray(other.as_function(np)(*inputs))
    except (*REJECTIONS, KeyError, ArithmeticError):
        return True
    return not _same_answer(a, b)


def _same_answer(a: np.ndarray, b: np.ndarray) -> bool:
    """The same answer, bit for bit (NaN payloads and the sign of zero included)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _template(
    draw: st.DrawFn, max_nodes: int
) -> tuple[tuple[Program, ...], tuple[Hole, ...], bool, str]:
    program = draw(
        programs(max_nodes=max_nodes, max_side=5).filter(
            lambda p: all(i.bound is None for i in p.inputs)
        )
    )
    builder = ProgramBuilder.from_program(program)
    out: Ref = program.output
    candidates = hole_candidates(program)
    if not candidates:
        floats = program.output_type.dtype in ("float32", "float64")
        # Sometimes a division by a zero: a static of 0.0 then -0.0 flips every infinity (a
        # cache keyed by value, not by bits, answers the second with the first's kernel).
        op, one = ("multiply", 2)
        if floats:
            op, one = draw(st.sampled_from([("multiply", 2.0), ("multiply", 2.0), ("divide", 0.0)]))
        out = builder.node(op, out, Const(one))
        candidates = [Hole("scale", out.index, "", 1)]
    captured = draw(st.integers(0, 3)) != 3  # usually (shrinks toward a captured array)
    view = ""
    if captured:
        out_type = builder.type_of(out)
        w = builder.input(out_type.shape, out_type.dtype)
        out = builder.node(draw(st.sampled_from(["add", "multiply", "subtract"])), out, w)
        # One time in three, a view of W made once outside the function is captured too
        # (``V = W[:1]``): two captured arrays at one address (a trace that keyed captured
        # arrays by address made them one argument, and survived 60 s sessions).
        views = [
            name
            for name in CAPTURED_VIEWS
            if out_type.shape and broadcasts_onto(view_shape(name, out_type.shape), out_type.shape)
        ]
        if views and draw(st.integers(0, 2)) == 2:
            view = draw(st.sampled_from(views))
            v = builder.input(view_shape(view, out_type.shape), out_type.dtype)
            out = builder.node(draw(st.sampled_from(["add", "multiply", "subtract"])), out, v)
            event(f"jit-sequence:captured-view-{view}")
    base = builder.build(out)
    chosen = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True))
    holes, names = [], set()
    for hole in chosen:
        name = hole.name
        for n in itertools.count(1):
            if name not in names:
                break
            name = f"{hole.name}{n}"
        names.add(name)
        holes.append(Hole(name, hole.node, hole.attr, hole.arg))
    # Another argument tree may mean another computation (as an options dict does): the
    # second variant, which a minimizer drops when no call uses it.
    extra = ProgramBuilder.from_program(base)
    extra.node("subtract", extra.node("negative", base.output), Const(1))  # never equal to out
    return (base, extra.build()), tuple(holes), captured, view


@st.composite
def jit_sequences(draw: st.DrawFn, *, max_nodes: int = 3, max_calls: int = 8) -> JitSequence:
    """A first call and up to ``max_calls - 1`` calls that each change one thing (see the
    module docstring); every call's program is valid."""
    variants, holes, captured, view = _template(draw, max_nodes)
    draft = _Draft(variants, holes, captured, view)
    n = len(variants[0].inputs) - int(captured) - int(bool(view))
    first_kind = draw(st.sampled_from(SKELETONS))
    # The first call passes its statics explicitly (unless drawn otherwise): a cache that keeps
    # a static's name but not its value only shows when two calls both pass it.
    defaults = JitSequence(variants, holes, captured, (), view).defaults()
    statics = tuple(sorted((k, v) for k, v in defaults.items() if draw(st.integers(0, 3)) != 3))
    dtypes = tuple(i.dtype for i in variants[0].inputs[:n])

    def first_call(statics: tuple[tuple[str, Any], ...]) -> Call | None:
        call = Call(0, skeleton(first_kind, n), dtypes, statics)
        return _with_values(draw, draft, call, fresh_captured=True)

    first = None
    for name, value in defaults.items():
        if isinstance(value, float) and not _is_zero(value) and uniform(draw, range(3)) == 0:
            # A float static starts at 0.0 a third of the time (the static change then tries
            # -0.0 first): the only float a cache keyed by value takes for another (at one in
            # five, with -0.0 half the time after it, a held-out cache keyed so went unseen in
            # 60 s sessions and was found at 54.5 s once).
            first = first_call(tuple(sorted({**dict(statics), name: 0.0}.items())))
            break
    if first is None:
        first = first_call(statics)
    if first is None:  # pragma: no cover - the template is valid by construction
        raise AssertionError("the template's own call does not build")
    draft.calls.append(first)
    table = {skeleton_text(first.skeleton): 0}
    # Every kind of change once (as many as ``max_calls`` allows), in a drawn order: a session
    # sees few sequences, and each should try everything; a minimizer keeps the calls needed.
    changes = draw(st.permutations(CHANGES))[: max_calls - 1]
    for change in changes:
        call = _change(draw, draft, change, table)
        if call is None:
            event(f"jit-sequence:{change}:none")
            continue
        event(f"jit-sequence:{change}")
        draft.calls.append(call)
        table.setdefault(skeleton_text(call.skeleton), call.variant)
    event(f"jit-sequence:calls:{len(draft.calls)}")
    return draft.sequence()


def _change(draw: st.DrawFn, draft: _Draft, change: str, table: dict[str, int]) -> Call | None:
    base = draft.calls[0]
    n = len(base.dtypes)
    plain = Call(base.variant, base.skeleton, base.dtypes, base.statics, note=change)
    changed: bool = draft.captured and draw(st.booleans())
    if change == "dtype":
        options = [(None, d) for d in DTYPES] + [(j, d) for j in range(n) for d in DTYPES]
        for which, dtype in draw(st.permutations(options)):
            dtypes = tuple(
                dtype if which is None or j == which else d for j, d in enumerate(base.dtypes)
            )
            if dtypes == base.dtypes:
                continue
            note = f"{'all arrays' if which is None else f'array {which}'} {dtype}"
            call = Call(base.variant, base.skeleton, dtypes, base.statics, note=note)
            if draft.program(call) is not None:
                return _with_values(draw, draft, call, changed)
        return None
    if change == "shape":
        # Two extents swapped in every passed array (the size kept: a specialization keyed by
        # the element count took (3, 2) for (2, 3), unseen while no call changed a shape), or
        # one extent grown by one; the captured array keeps its shape.
        program = draft.program(plain)
        if program is None:
            return None
        shapes = tuple(i.shape for i in program.inputs[:n])
        extents = sorted({e for shape in shapes for e in shape})
        mappings = [{a: b, b: a} for a, b in itertools.combinations(extents, 2)]
        mappings += [{a: a + 1} for a in extents]
        for mapping in draw(st.permutations(mappings)):
            new = tuple(tuple(mapping.get(e, e) for e in shape) for shape in shapes)
            if new == shapes:
                continue
            note = "shapes " + ", ".join(str(s) for s in new)
            call = Call(
                base.variant, base.skeleton, base.dtypes, base.statics, note=note, shapes=new
            )
            if draft.program(call) is not None:
                return _with_values(draw, draft, call, changed)
        return None
    if change == "static":
        hole = draw(st.sampled_from(draft.holes))
        current = base.kwargs.get(hole.name, _current(draft.variants[0], hole))
        values = static_values(draft.variants[0], hole, current)
        order = draw(st.permutations(values))
        twin = None
        if _is_zero(current):
            twin = -current  # the other zero, first
        elif isinstance(current, float) and math.isfinite(current) and uniform(draw, (0, 1)):
            twin = math.nextafter(current, math.inf)  # half the time, its neighbour first
        if twin is not None:
            order = [twin, *[v for v in order if not _same_static(v, twin)]]
        for value in order:
            statics = tuple(sorted({**base.kwargs, hole.name: value}.items()))
            note = f"{hole.name}={value!r}"
            call = Call(base.variant, base.skeleton, base.dtypes, statics, note=note)
            if draft.program(call) is not None:
                built = _with_values(draw, draft, call, changed)
                if built is not None and _answer_changes(draft, built, base.statics):
                    return built
        return None
    if change == "structure":
        used = skeleton_text(base.skeleton)
        for kind in draw(st.permutations(SKELETONS)):
            tree = skeleton(kind, n)
            text = skeleton_text(tree)
            if text == used:
                continue
            variant = table.get(text)
            if variant is None:  # usually the other variant (the base call uses variant 0)
                other = len(draft.variants) - 1
                variant = 0 if draw(st.integers(0, 3)) == 3 else other
            note = f"arguments as {text}" + (f" (variant {variant})" if variant else "")
            call = Call(variant, tree, base.dtypes, base.statics, note=note)
            return _with_values(draw, draft, call, changed)
        return None
    if change == "repeat":
        return _with_values(draw, draft, replace_note(plain, "other values"), True, repeat=True)
    if change == "alias":
        program = draft.program(plain)
        pairs = [
            (k, j)
            for j in range(n)
            for k in range(j)
            if program is not None and program.inputs[k].type == program.inputs[j].type
        ]
        if not pairs:
            return None
        k, j = draw(st.sampled_from(pairs))
        sources = tuple(k if i == j else OWN for i in range(n))
        call = Call(base.variant, base.skeleton, base.dtypes, base.statics, sources)
        return _with_values(
            draw, draft, replace_note(call, f"array {k} passed again as {j}"), changed
        )
    if change == "feedback":
        last = draft.calls[-1]
        output = draft.sequence().program(len(draft.calls) - 1).output_type
        again = Call(last.variant, last.skeleton, last.dtypes, last.statics, shapes=last.shapes)
        program = draft.program(again)
        slots = [j for j in range(n) if program is not None and program.inputs[j].type == output]
        if not slots:
            return None
        j = draw(st.sampled_from(slots))
        call = replace(again, sources=tuple(OUTPUT if i == j else OWN for i in range(n)))
        note = f"the previous output passed back as array {j}"
        return _with_values(draw, draft, replace_note(call, note), changed)
    raise ValueError(f"unknown change {change!r}")


def replace_note(call: Call, note: str) -> Call:
    return replace(call, note=note)


__all__ = [
    "CHANGES",
    "SKELETONS",
    "hole_candidates",
    "jit_sequences",
    "skeleton",
    "static_values",
]
