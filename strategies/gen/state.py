"""The state of one program being generated: its configuration, the values made so far and
what is known of them, and the drawing helpers every maker uses."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import event, reject
from hypothesis import strategies as st

from compiler import primitives

from ..model import (
    DTYPES,
    FLOAT_DTYPES,
    LOW_PRECISION_DTYPES,
    REJECTIONS,
    Const,
    ProgramBuilder,
    Ref,
    TensorType,
)
from ..model.program import BOOL_ARITHMETIC, numpy_result, result_type
from ..model.types import INT32_MAX, SCALAR_DTYPES
from .shapes import VECTOR_SIDES, broadcastable_shapes, coin, reshape_sources, uniform
from .shapes import shapes as shapes_strategy

Shape = tuple[int, ...]

#: Operand dtypes a 16-bit NumPy scalar may meet in any program (the result keeps their dtype).
WIDE_FLOATS = ("float32", "float64")


def of_kind(*kinds: str) -> tuple[str, ...]:
    return tuple(p.name for p in primitives.of_kind(*kinds) if p.generate)


def generation_order() -> tuple[str, ...]:
    """Every generated op, in table order: the shrinker prefers ops earlier in it."""
    return tuple(name for name, p in primitives.PRIMITIVES.items() if p.generate)


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast (not the compiler's rule: the generator must not share its bugs)."""
    return tuple(np.broadcast_shapes(*shapes))


@functools.cache
def _accepts(op: str, dtype: str, given: tuple[tuple[str, Any], ...] = ()) -> bool:
    """Does ``op``'s result rule accept ``dtype`` operands (float-only ops: floats only), its
    attributes at their defaults but for ``given``? Without ``given``: with them, or with the
    ``accumulator`` it then takes."""
    prim = primitives.get(op)
    if prim.float_only:
        return dtype in FLOAT_DTYPES
    if prim.kind not in ("unary", "binary", "compare", "reduction", "matmul", "select"):
        return True  # layout, casts, gathers: any dtype
    stand = TensorType((2, 2), dtype)
    operands = [stand] * prim.arity
    if prim.kind == "select":
        operands = [TensorType((2, 2), "bool"), stand, stand]
    attrs = {**{k: a.default for k, a in prim.attrs.items()}, **dict(given)}
    try:
        result_type(prim, operands, attrs)  # NumPy's verdict, and the declared limitations
    except REJECTIONS:
        return not given and bool(accumulator(op, dtype))
    return True


def accumulator(op: str, dtype: str) -> dict[str, str]:
    """The ``dtype=`` a reduction of ``dtype`` operands needs, its own (an int32 sum: NumPy's
    default one is int64, which the compiler lacks), or none: what a maker, a sweep or a
    focused case passes so that every (op, dtype) the table can compute is drawn."""
    name = _accumulator_name(op, dtype)
    return {} if name is None else {name: dtype}


@functools.cache
def _accumulator_name(op: str, dtype: str) -> str | None:
    for name, attr in primitives.get(op).attrs.items():
        if attr.kind == "result_dtype" and dtype != "bool":
            if not _accepts(op, dtype, ((name, None),)) and _accepts(op, dtype, ((name, dtype),)):
                return name
    return None


@functools.cache
def _meets(op: str, a: str, b: str) -> bool:
    """Does NumPy accept ``op`` with operands of dtypes ``a`` and ``b`` (both orders)?"""
    prim = primitives.get(op)
    if prim.kind not in ("binary", "compare", "select", "matmul"):
        return True
    attrs = {k: v.default for k, v in prim.attrs.items()}
    for x, y in ((a, b), (b, a)):
        operands = [TensorType((2, 2), x), TensorType((2, 2), y)]
        if prim.kind == "select":
            operands = [TensorType((2, 2), "bool"), *operands]
        try:
            numpy_result(prim, operands, attrs)
        except REJECTIONS:
            return False
    return True


@functools.cache
def takes_bool(op: str) -> bool:
    """Does the compiler's rule take ``op`` (arithmetic, a comparison, a reduction or a matmul)
    on boolean operands, which NumPy computes (``np.maximum`` of two is their OR)? The compiler
    refuses most (a documented limitation: ``model.program.DTYPE_LIMITATIONS``); those it
    takes are drawn on booleans too (fresh boolean inputs), so that a rule that lets
    one through gets judged (one that lowered ``np.maximum`` of booleans to signed ``i1``
    arithmetic, AND for OR, went unseen: no op met a boolean but ``where``)."""
    return primitives.get(op).kind in BOOL_ARITHMETIC and _accepts(op, "bool")


def takes_const_left(op: str) -> bool:
    """Can ``op`` be drawn with a constant on its left (``CONST_LEFT``)?"""
    prim = primitives.get(op)
    return prim.kind in ("binary", "compare") and prim.consts


@functools.cache
def _int_to_float(op: str) -> bool:
    """Does ``op`` give a float for int32 operands (NumPy float64, JAX float32)?"""
    prim = primitives.get(op)
    if prim.kind not in ("unary", "binary", "reduction") or not _accepts(op, "int32"):
        return False
    attrs = {k: a.default for k, a in prim.attrs.items()}
    result = numpy_result(prim, [TensorType((2, 2), "int32")] * prim.arity, attrs)
    return result.dtype.kind == "f"


Shape = tuple[int, ...]


def bits(dtype: str) -> int:
    """The width of ``dtype``'s values (bfloat16's 16)."""
    return 16 if dtype == "bfloat16" else np.dtype(dtype).itemsize * 8


def wider_dtypes(dtypes: Sequence[str], dtype: str) -> list[str]:
    """Those of ``dtypes`` whose NumPy scalar gives an operation with a ``dtype`` array another
    dtype (NEP 50): a wider one (``np.float64`` next to float32), or one whose kind promotes it
    (``np.int32`` next to float32 or float16 gives float64, ``np.float16`` next to int32 too: a
    frontend that took NumPy's integer scalars for Python's, float32, went unseen while a
    NumPy scalar "wider" than its array had to have more bits)."""
    return [d for d in dtypes if _promoted(dtype, d) not in (None, dtype)]


@functools.cache
def _promoted(array: str, scalar: str) -> str | None:
    """NumPy's result dtype of a ``array`` array with a NumPy scalar of ``scalar`` (None where
    NumPy refuses the pair: bfloat16 with an int32)."""
    try:
        return np.result_type(np.empty(0, np.dtype(array)), np.dtype(scalar).type(0)).name
    except TypeError:
        return None


#: The form of a focused step whose first operand is a boolean ("OP@bools"), for each op the
#: compiler's rule takes booleans for (``takes_bool``): the focus item (op, "bool").
BOOLS = "bools"

#: The form of a focused binary or comparison step with a constant on its left ("OP@const-left"):
#: ``3.0 - x`` or ``2 < x``, which Python evaluates as the tensor's reflected operator
#: (``__rsub__``, ``__gt__``) and NumPy's scalar as a ufunc call. Random programs put a constant
#: on a subtract's left in 7 of 2000 (a mutant tracing ``3.0 - x`` as ``x - 3.0`` survived).
CONST_LEFT = "const-left"
#: The form of a focused step whose constant operand the int32 tensor's dtype cannot represent
#: ("OP@const-wide"): ``x < 2**40`` (NumPy 2 compares exactly) or ``x * 0.5`` (float64). Random
#: programs drew an int beyond int32 next to an int32 comparison in about 1 of 300; a frontend
#: that compared in the tensor's dtype (``x < 2**40`` as ``x < 0``) survived a 60 s session.
CONST_WIDE = "const-wide"
#: The form of a focused step whose constant is on no table ("OP@const-arbitrary",
#: ``arbitrary_constant``; a power's exponent, a non-integer between -2 and 6 mostly): a
#: lowering that switches on a constant's value is wrong only for some values, which no fixed
#: table need hold (``x ** 2.5`` taken for ``x * x`` by a test that truncated the exponent
#: survived 60 s sessions while random programs drew such an exponent in 1 of 500).
CONST_ARBITRARY = "const-arbitrary"
#: The form of a focused step whose constant is a NumPy scalar wider than its tensor operand
#: ("OP@const-wider": ``x * np.float64(3.0)`` of float32, ``x ** np.float32(0.5)`` of
#: float16, ``x + np.int32(3)`` of float32: ``wider_dtypes``): the result takes another dtype
#: than the tensor's (NEP 50), which each shortcut for a constant must keep (a float32
#: ``x ** np.float64(0.5)`` taken as sqrt stayed float32 through 60 s sessions: random programs
#: drew power in 2% of their cases).
CONST_WIDER = "const-wider"
#: The form of a focused step whose constant is a NumPy scalar of an integer dtype no array has
#: (``SCALAR_DTYPES``: ``x * np.uint8(3)``, ``np.int16(-1) < x``), on either side ("OP@const-
#: foreign"): each its own path in a frontend (a 0-d scalar, a kind, a range), and one on the
#: left reaches NumPy's scalar operator, then the tensor's ``__array_ufunc__``. Random
#: programs' constants are of such a dtype one time in eight at most (a quarter of the NumPy
#: scalars), on the left seldom: a frontend that took ``np.uint8(3) < x`` for an array of no
#: supported dtype survived 60 s sessions.
CONST_FOREIGN = "const-foreign"
#: The steps' constant forms (``programs(first="OP@FORM")``).
CONST_FORMS = (CONST_LEFT, CONST_WIDE, CONST_ARBITRARY, CONST_WIDER, CONST_FOREIGN)
#: The values of a ``CONST_FOREIGN`` constant: small ones, and the ends of the narrow integer
#: dtypes (each value takes the dtypes that hold it: ``scalar_only_dtypes``).
FOREIGN_VALUES = (0, 1, 3, -1, 127, 128, 255, -128, 32767, -32768, 65535, 2**31 + 1)
#: The prefix of a focused step's form that names its constant ("OP@const=VALUE": ``x ** -3``,
#: ``x * -0.0``; ``const_value_form``): the values a lowering or a folder takes a step apart
#: for (``makers.SPECIAL_CONSTANTS``), each a focus item of its own.
CONST_VALUE = "const="


def const_value_form(value: int | float) -> str:
    """The form "const=VALUE" of a step whose constant is ``value`` (an int stays an int)."""
    return f"{CONST_VALUE}{value!r}"


def const_form_value(form: str) -> int | float | None:
    """The constant a "const=VALUE" form names (``const_value_form``); None for any other
    form."""
    if not form.startswith(CONST_VALUE):
        return None
    text = form[len(CONST_VALUE) :]
    try:
        return int(text)
    except ValueError:
        return float(text)  # (a ValueError for a form that names no number)


#: The prefix of a focused power step's form that names its base ("power@base=VALUE": ``8.0 **
#: x``; ``const_base_form``): the bases a folder rewrites the power for
#: (``makers.SPECIAL_BASES``), each a focus item of its own.
CONST_BASE = "base="


def const_base_form(value: float) -> str:
    """The form "base=VALUE" of a power step whose base is the constant ``value``."""
    return f"{CONST_BASE}{float(value)!r}"


def const_base_value(form: str) -> float | None:
    """The base a "base=VALUE" form names (``const_base_form``); None for any other form."""
    if not form.startswith(CONST_BASE):
        return None
    return float(form[len(CONST_BASE) :])  # (a ValueError for a form that names no number)


def is_const_form(form: str) -> bool:
    """Is ``form`` one of a focused step's constant forms (``CONST_FORMS``, "const=VALUE",
    "base=VALUE")?"""
    if form in CONST_FORMS:
        return True
    try:
        return const_form_value(form) is not None or const_base_value(form) is not None
    except ValueError:
        return False


#: Constants a quarter of the time, beside the common ones (exact in every dtype, but pi and e):
#: decimals no binary format holds (0.1 rounds differently in each), many digits, beyond
#: float32's and float16's ranges (3.5e38 and 65520.0 round to inf there), below them (1e-30
#: underflows in float16, 1e-310 is a float64 subnormal and 0 in the rest), ints a float32 or
#: float16 rounds (16777217, 2049) and int32's own ends (an add wraps). A literal printed with
#: too few digits, or converted through the wrong dtype, shows only on such values.
RARE_CONSTANTS: tuple[int | float, ...] = (
    0.1, -0.7, 1 / 3, 2.5, 3.141592653589793, 1e-30, -1e-310, 3.5e38, -65520.0, 1e300,
    16777217, 2049, INT32_MAX, -INT32_MAX - 1, 1, -1, 4,
)  # fmt: skip
#: The same for comparisons: where a value rounds in the operands' dtype, the order changes.
RARE_COMPARED: tuple[int | float, ...] = (
    0.1, -0.7, 1 / 3, 1e-30, -1e-310, 3.5e38, 65520.0, 16777217, 2049, 2**53 + 1, INT32_MAX,
    -INT32_MAX - 1, -1,
)  # fmt: skip


#: The constants drawn 3 times in 4. Both zeros: x + -0.0 is x and x + 0.0 is not (at x =
#: -0.0); x / -0.0 is -x / 0.0; a fold, or a cache keyed by value, that takes one for the other
#: is wrong there. And the two the array namespace names (``xp.pi``, ``xp.e``: the "array-api"
#: spelling takes them from it, ``printing.NAMESPACE_CONSTANTS``), the only ones not exact in
#: every dtype: in 1500 drawn cases no weak pi was written, and a strong float64 ``xp.pi`` in
#: the compiler's namespace went unseen.
COMMON_CONSTANTS: tuple[int | float, ...] = (
    2.0, 0.5, -1.5, 3.0, 2, -3, 1e10, 0.0, -0.0, math.pi, math.e,
)  # fmt: skip
COMMON_COMPARED: tuple[int | float, ...] = (0.0, 0.5, -1.0, 0, 2, 2**40, INT32_MAX + 1, 1e10)
#: What a "const-wide" step draws (``Gen.const``): beside a comparison, just past int32's ends
#: first (twice: what the draw leans to), beside the other ops, floats.
_PAST_INT32 = (INT32_MAX + 1, -INT32_MAX - 2)
WIDE_COMPARED: tuple[int | float, ...] = (*_PAST_INT32, *_PAST_INT32, 2**40, -(2**33), 0.5, -1.5)
WIDE_CONSTANTS: tuple[int | float, ...] = (0.5, -1.5, 1e10)

#: The rare tables' stand-in for a value on no list (``arbitrary_constant``).
ARBITRARY = "arbitrary"


def arbitrary_constant(draw: st.DrawFn, kind: str = "any", low: int = -4, high: int = 8) -> Any:
    """A constant on no table: a float, an integer between ``low`` and ``high`` plus a half, a
    quarter, a drawn thousandth or a hair (2**-20) either side of it, or a drawn magnitude; or
    an int (a drawn one from 5 to a thousand, a power of two or one beside it). ``kind``: "float",
    "int" or "any" (either, half the time). Lowerings switch on constants' values (``x ** c``
    as products for a small integer ``c``, ``x * 2**k`` as a shift), and a switch that asks
    the wrong question (one that truncated the exponent took ``x ** 2.5`` for ``x * x``) is
    met only by values that no table holds: 60 s sessions drawing exponents from a list of
    15 missed it."""
    if kind == "int" or (kind == "any" and draw(st.booleans())):
        form = uniform(draw, ("drawn", "power", "beside"))
        if form == "drawn":  # (from 5: the simplest draw is on no table either)
            return uniform(draw, (1, -1)) * draw(st.integers(5, 1000))
        power = 2 ** draw(st.integers(1, 30))
        sign = uniform(draw, (1, -1))
        return sign * (power if form == "power" else power + uniform(draw, (1, -1)))
    whole = draw(st.integers(low, high))
    # (thousandths first: the simplest draw, 0.001, is on no table either)
    form = uniform(draw, ("thousandths", "half", "quarter", "hair", "magnitude"))
    if form == "half":
        return whole + 0.5
    if form == "quarter":
        return whole + uniform(draw, (0.25, 0.75))
    if form == "thousandths":
        return whole + draw(st.integers(1, 999)) / 1000
    if form == "hair":
        return whole + uniform(draw, (2.0**-20, -(2.0**-20)))
    mantissa = draw(st.integers(1000, 9999)) / 1000
    return uniform(draw, (1, -1)) * mantissa * 10.0 ** draw(st.integers(-6, 12))


@dataclass(frozen=True)
class Config:
    max_nodes: int
    min_nodes: int
    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    max_rank: int
    max_side: int
    implicit: bool
    # The ops of the first steps, in order (a focused program), each where it can be drawn;
    # "astype->DTYPE" casts to DTYPE, "OP@const-left" puts a constant on OP's left (``3.0 - x``),
    # "OP@const-wide" gives OP an int32 operand's unrepresentable constant (``x < 2**40``).
    first: tuple[str, ...] = ()
    # One fresh operand in this many is a strided view of a larger input (``Gen.operand``);
    # 0: none.
    view_odds: int = 0
    # The layout views lean to (``programs.VIEW_LAYOUTS``), or "": any.
    view_layout: str = ""
    # A binary op's partner is always of another shape that broadcasts with its first
    # operand's, of one more leading dim where the rank allows (else: half the time the same).
    broadcasts: bool = False

    @property
    def floats(self) -> tuple[str, ...]:
        return tuple(d for d in self.dtypes if d in FLOAT_DTYPES)

    def compatible(self, a: str, b: str, op: str = "add") -> bool:
        """May values of dtypes ``a`` and ``b`` meet in ``op`` (NumPy defining a result and, unless
        implicit promotions are allowed, NumPy and JAX agreeing)? NumPy with ml_dtypes has no
        common dtype of bfloat16 and float16 or int32, so ``where`` rejects those pairs though
        ``add`` takes them (through its float32/float64 loops)."""
        if a == b:
            return True
        if not self.implicit and not (
            {a, b} <= set(FLOAT_DTYPES) or {a, b} == {"int32", "float64"}
        ):
            return False
        return _meets(op, a, b)

    def op_dtypes(self, op: str) -> tuple[str, ...]:
        if op == "astype" and len(self.dtypes) < 2:
            if not any(step.startswith("astype->") for step in self.first):  # a focused cast
                return ()
        floats_only = _int_to_float(op) and not self.implicit
        found = tuple(
            d
            for d in self.dtypes
            if _accepts(op, d) and not (floats_only and d not in FLOAT_DTYPES)
        )
        if self.implicit and "bool" not in found and takes_bool(op):
            found += ("bool",)  # (the base dtypes hold no bool: a fresh boolean input)
        return found


@dataclass
class Value:
    ref: Ref
    type: TensorType
    nonneg: bool = False
    bounded: bool = False  # finite and moderate: safe to cast to int32

    @property
    def shape(self) -> Shape:
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return self.type.ndim


@dataclass
class Gen:
    draw: st.DrawFn
    cfg: Config
    builder: ProgramBuilder = field(default_factory=ProgramBuilder)
    values: list[Value] = field(default_factory=list)
    base: str = "float32"
    regime: str = "plain"  # the program's shape regime (shapes.SHAPE_REGIMES)

    reserve: int = 0  # nodes kept back from the steps for joining dead branches at the end
    steps: int = 0  # generation steps taken
    cast_to: str = ""  # the target a focused first step casts to ("astype->bool"), if any
    const_form: str = ""  # a focused first step's constant ("const-left", "const-wide") or ""
    bools: bool = False  # a focused "OP@bools" step: its first operand is a boolean

    @property
    def budget(self) -> int:
        return self.cfg.max_nodes - len(self.builder.nodes) - self.reserve

    # ---- creating values

    def input(self, shape: Shape, dtype: str, *, bound: int | None = None) -> Value:
        ref = self.builder.input(shape, dtype, bound=bound)
        value = Value(ref, TensorType(tuple(shape), dtype), bounded=True)
        self.values.append(value)
        return value

    def operand(self, shape: Shape, dtype: str, odds: int | None = None) -> Value:
        """A fresh operand of ``shape``: an input, or one time in ``odds`` (default: the
        configuration's ``view_odds``; 0 never), while the node budget has room, a strided view
        of a larger input (``view``); never in a focused first step, whose later focused steps
        need the budget. Shrinks toward the input."""
        odds = self.cfg.view_odds if odds is None else odds
        if not shape or odds <= 0 or not self.may_view():
            return self.input(shape, dtype)
        if odds > 1 and self.draw(st.integers(0, odds - 1)) != odds - 1:
            return self.input(shape, dtype)
        return self.view(shape, dtype)

    def may_view(self) -> bool:
        """Is there room for a view (a node more than the op needs), outside a focused first
        step (whose later focused steps need the budget)?"""
        return self.budget >= 2 and self.steps > len(self.cfg.first)

    def view(self, shape: Shape, dtype: str, unit_step: bool = False) -> Value:
        """An operand of ``shape`` that is a view of a larger input, so that every op meets the
        layouts a slice leaves in memory (strided, offset, reversed, transposed), not only
        matmul: the kernels read them through strided memrefs (the vectorizer's transfers and
        gathers, the BLAS layout tests, fusion of the slice into its consumer). A gather from
        a sliced table was in no case of 1500, and cpu-vector's ``gathers`` stage, which exists
        for such tables, ran in none."""
        rank = len(shape)
        units = [a for a, d in enumerate(shape) if d == 1]
        layout = self.cfg.view_layout
        # (another shape of its values: for a view of any layout, or of the reshaped one)
        reshapes = layout in ("", "reshaped")
        sources = reshape_sources(shape, self.cfg.max_rank) if reshapes else {}
        if layout == "reshaped" and sources:
            kind = "reshaped"
        elif layout in ("reversed", "transposed") and (layout == "reversed" or rank >= 2):
            kind = layout  # (a step along an extent-1 axis is neither; each draws its axes)
        elif units and (unit_step or self.draw(st.integers(0, 1))):
            # A step along an extent-1 axis: a dim whose stride is not its contiguous one (a
            # layout test that takes every extent-1 dim as contiguous, whatever its stride, is
            # wrong only here; a gather from such a column went unseen).
            kind, axis = "unit-step", uniform(self.draw, units)
        else:
            kinds = ["inner-step", "offset", "reversed", "picked"]
            if rank >= 2:
                kinds += ["row-step", "transposed"]
            if layout == "offset-strided":  # those that can start past the first element
                kinds = ["inner-step", "picked"]
            elif layout == "padded":  # rows of contiguous elements apart, past the first
                kinds = ["offset", "row-step", "picked"]
            elif sources:
                kinds.append("reshaped")
            kind = self.draw(st.sampled_from(kinds))
            axis = rank - 2 if kind == "row-step" and rank >= 2 else rank - 1
        event(f"operand:view-{kind}")
        if kind == "reshaped":
            # Another shape of the same values, reshaped: 8 of 400 drawn cases held a
            # reshape, none one that keeps its rank, and cpu-vector folds each form into its
            # consumer's map its own way (``reshape_sources``).
            form = uniform(self.draw, sorted(sources))
            base = uniform(self.draw, sources[form])
            target: tuple[int, ...] = shape
            if 0 not in shape and self.draw(st.integers(0, 3)) == 0:  # NumPy infers a -1
                at = self.draw(st.integers(0, rank - 1))
                target = (*shape[:at], -1, *shape[at + 1 :])
            event(f"operand:view-reshaped-{form}")
            return self.node("reshape", self.input(base, dtype), shape=target)
        if kind == "picked":
            # An integer drops an axis of a larger input, negative as often as not (``x[-2]``
            # is row ``extent - 2``), after an Ellipsis or full slices: a rank-reducing view
            # at an offset. Integer indices were in 9 of 400 programs, and a plant reading
            # ``x[-2]`` as row 2 went unseen in 134 session cases.
            axis = self.draw(st.integers(0, rank))
            extent = self.draw(st.integers(2, 4))
            position = self.draw(st.integers(0, extent - 1))
            position -= extent if self.draw(st.booleans()) else 0
            base = (*shape[:axis], extent, *shape[axis:])
            if self.draw(st.booleans()):
                key: tuple[Any, ...] = (Ellipsis, position, *(slice(None),) * (rank - axis))
            else:
                key = (*(slice(None),) * axis, position)
            return self.node("index", self.input(base, dtype), key=key)
        if kind == "transposed":
            axes = (*range(rank - 2), rank - 1, rank - 2)
            base = tuple(shape[a] for a in axes)
            return self.node("permute_dims", self.input(base, dtype), axes=axes)
        if kind == "reversed":
            axis = self.draw(st.integers(0, rank - 1))
            extent, part = shape[axis], slice(None, None, -1)
        elif kind == "offset":
            start = self.draw(st.integers(1, 2))
            extent, part = shape[axis] + start, slice(start, start + shape[axis])
        else:  # a step: every second or third element, from the first or the second
            step = self.draw(st.integers(2, 3))
            start = self.draw(st.integers(int(layout in ("offset-strided", "padded")), 1))
            extent = start + (shape[axis] - 1) * step + 1
            part = slice(start, extent, step)
        base = (*shape[:axis], extent, *shape[axis + 1 :])
        key = (Ellipsis, part, *(slice(None),) * (rank - 1 - axis))
        return self.node("index", self.input(base, dtype), key=key)

    def node(
        self, op: str, *args: Any, nonneg: bool | None = None, bounded: bool | None = None,
        **attrs: Any,
    ) -> Value:  # fmt: skip
        """Add ``op``; what is known of its values (non-negative, bounded) follows the
        primitive's range metadata unless given."""
        refs = [a.ref if isinstance(a, Value) else a for a in args]
        try:
            ref = self.builder.node(op, *refs, **attrs)
        except NotImplementedError:
            # The compiler's rule declares a limitation on a step NumPy accepts (the makers
            # draw only supported steps, so its rule is wrong: a slice's length taken as a
            # floor made x[::2] of one element "empty"): another draw, not a harness error
            # that stops the session's generation; the oracles judge that rule elsewhere.
            event(f"declined-by-rule:{op}")
            reject()
        prim = primitives.get(op)
        tensors = [a for a in args if isinstance(a, Value) and a.dtype != "bool"]
        if nonneg is None:
            nonneg = "nonnegative" in prim.result_range or (
                prim.keeps == "values" and bool(tensors) and tensors[0].nonneg
            )
        if bounded is None:
            if prim.keeps == "values":
                bounded = bool(tensors) and tensors[0].bounded
            elif prim.keeps == "bounds":
                bounded = all(v.bounded for v in tensors)
            bounded = bounded or "bounded" in prim.result_range
        value = Value(ref, self.builder.nodes[ref.index].type, nonneg, bool(bounded))
        if value.dtype != "bool":
            self.values.append(value)
        event(f"op:{op}")
        if value.dtype == "bool" and prim.kind in ("unary", "binary", "reduction", "matmul"):
            return self._bool_consumed(value)
        return value

    def _bool_consumed(self, value: Value) -> Value:
        """A boolean an op computed on booleans (``takes_bool``: ``np.maximum`` of two), cast
        to a dtype a program may return (no program returns a boolean), where the budget has
        a node for it; else another draw."""
        if self.budget < 1:
            reject()
        target = self.draw(st.sampled_from([d for d in self.cfg.dtypes if d != "bool"]))
        return self.node("astype", value, dtype=target)

    # ---- drawing

    def shape(self, *, min_dims: int = 1, max_dims: int | None = None, ones: bool = False) -> Shape:
        max_dims = self.cfg.max_rank if max_dims is None else min(max_dims, self.cfg.max_rank)
        vector = self.regime == "vector" and self.draw(st.booleans())
        return self.draw(
            shapes_strategy(
                min_dims=min_dims,
                max_dims=max(min_dims, max_dims),
                max_side=self.cfg.max_side,
                ones=ones or self.regime == "unit",
                inner=VECTOR_SIDES if vector else (),
            )
        )

    def side(self, avoid: Iterable[int] = ()) -> int:
        """A new dimension size, distinct from ``avoid`` when possible (in the vector regime,
        an extent around a vector width)."""
        all_sides = list(range(2, self.cfg.max_side + 1))
        if self.regime == "vector":
            all_sides = list(VECTOR_SIDES)
        choices = [s for s in all_sides if s not in set(avoid)] or all_sides
        if self.regime == "vector":  # each width as often (``sampled_from`` leans to 7 and 8)
            return uniform(self.draw, choices)
        return self.draw(st.sampled_from(choices))

    def dtype(self, allowed: Sequence[str]) -> str:
        ordered = sorted(allowed, key=lambda d: d != self.base)
        return self.draw(st.sampled_from(ordered))

    def partner_dtype(self, dtype: str, allowed: Sequence[str]) -> str:
        """A second operand's dtype next to a ``dtype`` one: ``dtype`` (if allowed) half the
        time, shrinking toward it, else one of the other ``allowed`` near uniformly. Drawn
        from ``allowed`` ordered with ``dtype`` first, ``sampled_from`` gave the same dtype
        to most partners, and a matmul whose narrower left operand made its right one narrower
        too (float32 @ float64 in float32) survived 60 s sessions: 1 case in 80 met it."""
        others = [d for d in allowed if d != dtype]
        if not others or (dtype in allowed and self.draw(coin(2)) == 0):
            return dtype if dtype in allowed else allowed[0]
        event("operand:other-dtype")
        return uniform(self.draw, others)

    def pick(self, ok: Callable[[Value], bool], fresh: Callable[[], Value]) -> Value:
        """Usually the latest value passing ``ok`` (else a recent one, or ``fresh()``), so that
        the output reads most steps. Shrinks toward ``fresh()``: an operand that is a new input
        cuts the dependency on earlier steps, which then become dead code, so shrunk programs
        lose whole chains."""
        candidates = [v for v in reversed(self.values) if v.dtype != "bool" and ok(v)][:4]
        if not candidates or self.draw(st.integers(0, 7)) == 0:
            return fresh()
        if self.draw(st.integers(0, 2)) != 2:  # the latest: chains, every node of which counts
            return candidates[0]
        return candidates[self.draw(st.integers(0, len(candidates) - 1))]

    def primary(
        self,
        op: str,
        ok: Callable[[Value], bool] = lambda v: True,
        views: int | None = None,
        dtypes: tuple[str, ...] | None = None,
        **shape_kw: Any,
    ) -> Value:
        """An operand for ``op``: of a dtype its result rule accepts (or one of ``dtypes``); a
        boolean for a focused "OP@bools" step (read once)."""
        allowed = self.cfg.op_dtypes(op) if dtypes is None else dtypes
        if self.bools:
            self.bools = False
            allowed = ("bool",) if "bool" in allowed else allowed

        def fresh() -> Value:
            # Now and then size-1 sides on purpose, for a partner to broadcast against.
            ones = shape_kw.pop("ones", self.draw(st.integers(0, 7)) == 7)
            return self.operand(self.shape(ones=ones, **shape_kw), self.dtype(allowed), views)

        return self.pick(lambda v: v.dtype in allowed and ok(v), fresh)

    def partner_shape(self, shape: Shape) -> Shape:
        """Same shape, or one that broadcasts against ``shape`` (labelled by pattern)."""
        if self.cfg.broadcasts and len(shape) < self.cfg.max_rank:
            # One more leading dim: the first operand (a view, where one was drawn) broadcast.
            event("broadcast:expands")
            return (self.draw(st.integers(2, max(2, self.cfg.max_side))), *shape)
        if not self.cfg.broadcasts and not self.draw(st.booleans()):
            event("broadcast:same")
            return shape
        other = self.draw(
            broadcastable_shapes(shape, max_dims=self.cfg.max_rank, max_side=self.cfg.max_side)
        )
        result = broadcast(shape, other)
        if result != shape:
            event("broadcast:expands")
        elif len(other) < len(shape):
            event("broadcast:lower-rank")
        elif other != shape:
            event("broadcast:size-one")
        else:
            event("broadcast:same")
        return other

    def partner(
        self, p: Value, op: str, *, consts: bool, shape: Shape | None = None
    ) -> Value | Const:
        """Second operand for ``op`` next to ``p``: fresh input, constant or existing value."""
        target = p.shape if shape is None else shape
        allowed = [d for d in self.cfg.op_dtypes(op) if self.cfg.compatible(d, p.dtype, op)]
        kinds = ["fresh", "const", "existing"] if consts else ["fresh", "existing"]
        kind = self.draw(st.sampled_from(kinds))
        if kind == "const":
            return self.const(p.dtype, op)
        if kind == "existing":

            def fits(v: Value) -> bool:
                try:
                    return (
                        v.dtype in allowed and len(broadcast(target, v.shape)) <= self.cfg.max_rank
                    )
                except ValueError:
                    return False

            candidates = [
                v for v in reversed(self.values) if v.dtype != "bool" and v is not p and fits(v)
            ][:4]
            if candidates:
                event("operand:reused")
                return candidates[self.draw(st.integers(0, len(candidates) - 1))]
            # ``p`` itself only now and then: on a program's first node it was the only value
            # there is, and ``x > x`` or ``x - x`` hides most of an op (int32 ``>`` compiled as
            # ``!=`` passed every focused case, each comparing an input with itself).
            if fits(p) and self.draw(st.integers(0, 3)) == 0:
                event("operand:self")
                return p
        return self.operand(self.partner_shape(target), self.partner_dtype(p.dtype, allowed))

    def const(
        self,
        dtype: str,
        op: str,
        wide: bool = False,
        weak: bool = False,
        arbitrary: bool = False,
        wider: bool = False,
    ) -> Const:
        """A weak (Python) or strong (NumPy) scalar of every kind NumPy accepts next to a
        ``dtype`` operand: values the operand's dtype cannot represent included (0.5 next to
        int32 promotes to float64; a comparison with an int beyond int32 is exact in NumPy 2).
        ``wide``: only those, weak, next to int32 (``CONST_WIDE``): for a comparison mostly ints
        past int32's ends (just past, too), whose exact comparison a strong scalar (a float64)
        would not ask for. ``weak``: a Python scalar (the only kind left of a tensor that reaches
        its reflected operator: ``np.float32(2) / x`` is NumPy's ufunc call, ``2.0 / x`` is
        ``x.__rtruediv__``). ``arbitrary``: a value on no table (``arbitrary_constant``).
        ``wider``: a NumPy scalar wider than ``dtype`` where there is one (``CONST_WIDER``)."""
        comparison = primitives.get(op).kind == "compare"
        if wide and dtype == "int32" and self.cfg.implicit:
            if comparison:
                # just past int32's ends first (what the draw leans to): only there does a
                # comparison computed in float32 (or any 24-bit significand) round wrong;
                # wrapped to int32, each is the other end (``x < 2**31`` as ``x < -2**31``)
                # (the two just past the ends are half the choices: a draw's path moves with
                # any change to the generator, and a third of them left 4 of 105 focused
                # cases with both an end and its neighbour): ``WIDE_COMPARED``
                value = self.draw(st.sampled_from(WIDE_COMPARED))
            else:
                value = self.draw(st.sampled_from(WIDE_CONSTANTS))
            event("const:weak-wide")
            return Const(value)
        if comparison:
            choices: list[int | float] = list(COMMON_COMPARED)
            rare = RARE_COMPARED
        else:
            choices = list(COMMON_CONSTANTS)
            rare = RARE_CONSTANTS
        if not self.cfg.implicit and dtype == "int32":
            # JAX keeps a weak float next to int32 weak (float32 further on; NumPy: float64),
            # and an int beyond int32 overflows there.
            choices, rare = (
                [c for c in values if isinstance(c, int) and abs(c) <= INT32_MAX]
                for values in (choices, rare)
            )
        # Half of the rare draws are on no table (as many entries as the table's).
        arbitrary_too = (*rare, *[ARBITRARY] * len(rare))
        value = (
            ARBITRARY
            if arbitrary
            else self.draw(st.sampled_from(self.rarely(choices, arbitrary_too)))
        )
        if value == ARBITRARY:
            ints_only = not self.cfg.implicit and dtype == "int32"
            value = arbitrary_constant(self.draw, "int" if ints_only else "any")
            event("const:arbitrary")
        return self.spelled_const(value, dtype, op, weak, wider)

    def spelled_const(
        self, value: int | float, dtype: str, op: str, weak: bool = False, wider: bool = False
    ) -> Const:
        """``value`` next to a ``dtype`` operand of ``op``, as a Python scalar or (not ``weak``,
        half the time) a NumPy scalar of a dtype that may meet it there (``strong_dtypes``),
        one wider than ``dtype``'s half the time where there is one; always a wider one with
        ``wider``, where there is one."""
        strong = self.strong_dtypes(dtype, op, value)
        widest = wider_dtypes(strong, dtype)
        if wider and widest:
            const_dtype = uniform(self.draw, widest)
            event("const:wider")
            return Const(float(value) if const_dtype in FLOAT_DTYPES else int(value), const_dtype)
        if strong and not weak and self.draw(st.booleans()):
            # one wider than the operand's half the time, where there is one: the result takes
            # its dtype (NEP 50), which a shortcut for a constant (x * 1, x ** 0.5) must keep
            if widest and uniform(self.draw, (False, True)):
                strong = widest
            # one time in four, an integer dtype no array has (``scalar_only_dtypes``)
            foreign = self.scalar_only_dtypes(dtype, value)
            if foreign and uniform(self.draw, (False, False, False, True)):
                strong = foreign
            const_dtype = uniform(self.draw, strong)
            event(f"const:strong-{const_dtype}")
            if const_dtype in SCALAR_DTYPES or const_dtype == "int32":
                return Const(int(value), const_dtype)
            return Const(float(value) if const_dtype in FLOAT_DTYPES else value, const_dtype)
        event(
            "const:weak"
            + ("-out-of-range" if isinstance(value, int) and abs(value) > INT32_MAX else "")
        )
        return Const(value)

    def form_const(self, form: str, dtype: str, op: str) -> Const:
        """The constant of a focused step's ``form`` (``CONST_WIDE``, ``CONST_ARBITRARY`` or
        ``CONST_WIDER``) next to a ``dtype`` operand of ``op``."""
        return self.const(
            dtype, op, wide=form == CONST_WIDE, arbitrary=form == CONST_ARBITRARY,
            wider=form == CONST_WIDER,
        )  # fmt: skip

    def strong_dtypes(self, dtype: str, op: str, value: int | float) -> list[str]:
        """The dtypes a NumPy scalar of ``value`` may take next to a ``dtype`` operand of
        ``op``: ones that may meet it there (``compatible``), a low-precision one where the
        program draws it or next to a float32 or float64 operand (the result keeps the
        operand's dtype: ``x * ml_dtypes.bfloat16(2)`` refused as an unknown scalar kind went
        unseen, bfloat16 scalars being drawn in the low-precision programs alone), and a float
        for a float or an int beyond int32."""
        found = [
            d
            for d in DTYPES
            if self.cfg.compatible(d, dtype, op)
            and (d not in LOW_PRECISION_DTYPES or d in self.cfg.dtypes or dtype in WIDE_FLOATS)
        ]
        # (an integral float may be an integer scalar: 2.0 as np.int32(2), whose kind promotes
        # a float32 array to float64; weak, NumPy's integer scalars were taken for Python's and
        # the result left float32 in 322 cases of a 60 s session)
        integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if not integral or abs(value) > INT32_MAX:
            found = [d for d in found if d in FLOAT_DTYPES]
        return found

    def scalar_only_dtypes(self, dtype: str, value: int | float) -> list[str]:
        """The integer dtypes no array has (``SCALAR_DTYPES``) a NumPy scalar of ``value`` may
        take beside a ``dtype`` array, where it holds ``value`` and NumPy's result dtype is one
        of ``DTYPES`` (with implicit promotions only: JAX's differ): ``x * np.uint8(3)``
        refused as a scalar of no supported dtype went unseen, no constant being of one."""
        if isinstance(value, float) and value.is_integer() and abs(value) <= INT32_MAX:
            value = int(value)  # 2.0 as np.uint8(2)
        if not self.cfg.implicit or not isinstance(value, int) or isinstance(value, bool):
            return []
        found = []
        for d in SCALAR_DTYPES:
            info = np.iinfo(d)
            if not info.min <= value <= info.max:
                continue
            try:
                result = np.result_type(np.zeros(2, np.dtype(dtype)), np.dtype(d).type(value))
            except TypeError:
                continue
            if result.name in DTYPES:
                found.append(d)
        return found

    def foreign_const(self, dtype: str) -> Const | None:
        """A NumPy scalar of an integer dtype no array has next to a ``dtype`` operand
        (``CONST_FOREIGN``), or None where none meets it (a bfloat16: ml_dtypes promotes no
        integer scalar)."""
        value = uniform(self.draw, FOREIGN_VALUES)
        found = self.scalar_only_dtypes(dtype, value)
        if not found:
            found = self.scalar_only_dtypes(dtype, 3)
            value = 3
        if not found:
            return None
        event("const:foreign")
        return Const(value, uniform(self.draw, found))

    def rarely(self, common: Sequence[Any], rare: Sequence[Any]) -> Sequence[Any]:
        """``common`` 3 times in 4, else ``rare`` (its items drawn near uniformly, so the end of
        the table is met as often as its start); a shrink goes back to ``common``."""
        if self.draw(st.integers(0, 3)) != 3:
            return common
        return [uniform(self.draw, rare)]

    def takes_const_form(self) -> str:
        """The constant this step's op takes (a focused "OP@const-left" or "OP@const-wide"
        step), or "". Read once, by the op's maker: its helpers' nodes take operands as usual."""
        wanted, self.const_form = self.const_form, ""
        return wanted

    def ordered(self, a: Any, b: Any) -> tuple[Any, Any]:
        """``(a, b)`` or, when drawn, ``(b, a)`` (reflected operators, swapped matmul sides): the
        draw leans to ``(a, b)``, so a focus item (``CONST_LEFT``) asks for the constant on the
        left."""
        return (b, a) if self.draw(st.booleans()) else (a, b)

    def either_side(self, a: Any, b: Any) -> tuple[Any, Any]:
        """``(a, b)`` or ``(b, a)``, near uniformly (``ordered`` leans to ``(a, b)``): a foreign
        scalar (``CONST_FOREIGN``) on the left half the time."""
        return (b, a) if uniform(self.draw, (False, True)) else (a, b)


__all__ = [
    "BOOLS",
    "CONST_ARBITRARY",
    "CONST_BASE",
    "CONST_FORMS",
    "CONST_LEFT",
    "CONST_VALUE",
    "CONST_WIDE",
    "CONST_WIDER",
    "CONST_FOREIGN",
    "Config",
    "Gen",
    "Shape",
    "Value",
    "accumulator",
    "broadcast",
    "const_base_form",
    "const_base_value",
    "const_form_value",
    "const_value_form",
    "generation_order",
    "is_const_form",
    "of_kind",
    "takes_bool",
    "takes_const_left",
]
