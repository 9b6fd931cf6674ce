"""One maker per kind of primitive: each adds the op's equation to the program being generated
(plus at most ``cost - 1`` helper equations: the ``abs`` guarding a log, the comparison feeding a
where). Structural choices are drawn first and shape-dependent ones last, so that when the
shrinker lowers a rank the earlier decisions keep their meaning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from compiler import primitives

from ..model import FLOAT_DTYPES, Const, Ref
from .shapes import (
    VECTOR_SIDES,
    attention_configs,
    broadcastable_shapes,
    permutations,
    reductions,
    reshapes,
    uniform,
)
from .shapes import slices as slices_strategy
from .state import (
    ARBITRARY,
    COMMON_COMPARED,
    COMMON_CONSTANTS,
    CONST_ARBITRARY,
    CONST_FOREIGN,
    CONST_LEFT,
    CONST_WIDE,
    CONST_WIDER,
    RARE_COMPARED,
    RARE_CONSTANTS,
    WIDE_COMPARED,
    WIDE_CONSTANTS,
    Gen,
    Shape,
    Value,
    accumulator,
    arbitrary_constant,
    broadcast,
    const_base_value,
    const_form_value,
    of_kind,
    wider_dtypes,
)


def _unary(g: Gen, op: str) -> None:
    p = g.primary(op)
    guard = g.draw(st.integers(0, 3)) != 0  # unguarded: NaN from negatives, on purpose
    if primitives.get(op).domain == "nonnegative" and not p.nonneg and "abs" in g.cfg.ops and guard:
        # A third of the guards (of a float, where the budget allows) send every negative to
        # -0.0, keeping the zeros' signs: abs made every -0.0 a 0.0, so log(-0.0), -inf in
        # NumPy, met only unguarded inputs holding a special value (a polynomial log that told
        # zero by its bits, 72.1 at -0.0, survived 60 s sessions).
        signed = {"less", "where"} <= set(g.cfg.ops) and p.dtype in FLOAT_DTYPES
        if signed and g.budget >= 3 and g.draw(st.integers(0, 2)) == 2:
            negative = g.node("less", p, Const(0.0))
            p = g.node("where", negative, Const(-0.0), p, nonneg=True, bounded=p.bounded)
            event("guard:negatives-to-minus-zero")
        else:
            p = g.node("abs", p)
    g.node(op, p)


#: Exponents and bases a quarter of the time: every small power a lowering may expand into
#: products (4, 0, 1, -2), roots (1/3, -0.5), non-integers, odd and large ones, and bases whose
#: powers are special (a negative base's non-integer power is NaN, 0 ** -x is inf, 1 ** x is 1
#: even for NaN), or rewritten: LLVM turns pow(2**n, x) into exp2(n * x), where n * x rounds
#: first for 8 and 1/8 (n = 3 and -3: ``8.0 ** x`` was 355 ulps off at -O3, XLA's too).
RARE_EXPONENTS: tuple[int | float, ...] = (4, 0, 1, -2, 2.5, 1 / 3, -0.5, 7, 0.0, 10.0)
RARE_BASES: tuple[float, ...] = (-2.0, 0.0, 1.0, 10.0, -0.5, 1.5, 8.0, 0.125)
COMMON_EXPONENTS: tuple[int | float, ...] = (2, 3, 2.0, -1.0, 0.5)
#: Every small integer exponent, either sign, an int or a float (``small_exponent``): lowerings
#: and frontends take them apart (repeated products, a reciprocal of them), and of the tables'
#: a ``x ** -3`` whose fast path defined no result was on none (seen in no 60 s session).
SMALL_EXPONENTS = range(-4, 5)
#: A table's stand-in for one of ``SMALL_EXPONENTS`` (``small_exponent``).
SMALL = "small"
#: The constants a lowering or an algebraic folder takes a step apart for, by op: a power's
#: small integer exponents (products, the reciprocal of one), its halves (a square root and its
#: reciprocal), the identities and absorbing values of the others, zeros of both signs (x + 0.0
#: is not x at -0.0, x + -0.0 is; x * 0.0 is not 0 for inf, NaN or a negative x). Each is a
#: focus item of its own ("OP@const=VALUE", ``harness.session.focus``): random programs draw
#: any one seldom (power is 2% of their steps, and a fast path for ``x ** -3`` that defined no
#: result went unseen in 7 of 10 60 s sessions).
SPECIAL_CONSTANTS: dict[str, tuple[int | float, ...]] = {
    "power": (*SMALL_EXPONENTS, 0.5, -0.5),
    "multiply": (1, -1, 2, 0.0, -0.0),
    "divide": (1, -1, 2, 0.0, -0.0),
    "add": (0.0, -0.0),
    "subtract": (0.0, -0.0),
}
#: The constant bases LLVM's library call simplifier rewrites a power for: pow(2**n, x) as
#: exp2(n * x) (exact for 2 and 1/2; for 8 and 1/8, n * x rounds first: 355 ulps at -O3 in
#: float64, XLA's too); pow(10, x) as exp10(x) where LLVM takes the library to have it (not
#: for Linux in LLVM 22.1.8). Each is a focus item ("power@base=VALUE"): random programs draw
#: a power of a constant base in 1 of 150 steps, of 8.0 in about 1 of 4000 (21,127 drawn).
SPECIAL_BASES: tuple[float, ...] = (2.0, 0.5, 8.0, 0.125, 10.0)


def special_constant(op: str, value: Any) -> int | float | None:
    """The entry of ``SPECIAL_CONSTANTS[op]`` that ``value`` (a constant's) is (equal, and of
    the same sign for a zero: -0.0 is its own), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    for special in SPECIAL_CONSTANTS.get(op, ()):
        if value == special and np.copysign(1.0, value) == np.copysign(1.0, special):
            return special
    return None


def special_base(value: Any) -> float | None:
    """The entry of ``SPECIAL_BASES`` that ``value`` (a power's constant base) is, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return next((base for base in SPECIAL_BASES if value == base), None)


def small_exponent(draw: st.DrawFn) -> int | float:
    """One of ``SMALL_EXPONENTS``, near uniformly, as an int or a float alike."""
    value = uniform(draw, SMALL_EXPONENTS)
    return float(value) if uniform(draw, (False, True)) else value


def on_no_table(value: Any) -> bool:
    """Is ``value`` (a constant's) on none of the generator's tables, i.e. drawn by
    ``arbitrary_constant`` (``CONST_ARBITRARY``)?"""
    tables = (COMMON_CONSTANTS, COMMON_COMPARED, RARE_CONSTANTS, RARE_COMPARED, RARE_BASES)
    tables += (COMMON_EXPONENTS, RARE_EXPONENTS, SMALL_EXPONENTS, WIDE_COMPARED, WIDE_CONSTANTS)
    return not any(value in table for table in tables)


def _weak_left(g: Gen) -> bool:
    """A focused constant left of a tensor is a Python scalar 3 times in 4: only those reach the
    tensor's reflected operator (a strong one is NumPy's ufunc call: of 12 focused cases for a
    plant that traced ``2.0 / x`` as ``x / 2.0``, the one that passed had ``np.float32(3.0)``
    on the left)."""
    return g.draw(st.integers(0, 3)) != 0


def _scalar(g: Gen, p: Value, value: int | float, wider: bool = False) -> Const:
    """A power's constant: a Python scalar half the time, else a NumPy scalar of a float dtype
    next to ``p`` (``x ** np.float32(0.5)``): the frontend takes the two apart (a weak one
    keeps the array's dtype) and NumPy's scalar power loops see both (a sqrt for 0.5 that
    only a Python float reached went unseen). Of those, one wider than ``p``'s half the time,
    where there is one: the result then takes the scalar's dtype (NEP 50), which a shortcut
    for an exponent (0.5 as sqrt, 2 as a product) must keep (a float32 ``x ** np.float64(0.5)``
    left float32 went unseen in a 60 s session). ``wider``: always one (``CONST_WIDER``), where
    there is one."""
    strong = [d for d in g.strong_dtypes(p.dtype, "power", value) if d in FLOAT_DTYPES]
    widest = wider_dtypes(strong, p.dtype)
    if wider and widest:
        return Const(float(value), uniform(g.draw, widest))
    if not strong or not uniform(g.draw, (False, True)):
        return Const(value)
    dtype = uniform(g.draw, widest if widest and uniform(g.draw, (False, True)) else strong)
    event(f"const:strong-power-{dtype}")
    return Const(float(value), dtype)


def _power_of(g: Gen, p: Value, base: float) -> None:
    """``base ** p``, the constant a Python scalar 3 times in 4 (``_weak_left``: only those
    reach the tensor's ``__rpow__``; a frontend that traced ``2.0 ** x`` as ``x ** 2.0``
    survived 60 s sessions while half the bases were NumPy scalars)."""
    g.node("power", Const(base) if _weak_left(g) else _scalar(g, p, base), p)


def _binary(g: Gen, op: str) -> None:
    form = g.takes_const_form()
    left = form == CONST_LEFT
    p = g.primary(op)
    base = const_base_value(form) if op == "power" else None  # a "power@base=VALUE" step's
    if base is not None:
        _power_of(g, p, base)
        return
    named = const_form_value(form)  # a focused "OP@const=VALUE" step's constant
    if named is not None:
        if isinstance(named, int) and uniform(g.draw, (False, True)):
            named = float(named)  # (an int or a float alike: the frontend sees both)
        if op == "power":
            g.node(op, p, _scalar(g, p, named))
        else:
            g.node(op, *g.ordered(p, g.spelled_const(named, p.dtype, op)))
        return
    if op == "power":
        if left or form in (CONST_ARBITRARY, CONST_WIDER):
            kind = "base" if left else "exponent"
        else:
            kind = g.draw(st.sampled_from(["exponent", "base"]))
        if kind == "base":
            _power_of(g, p, g.draw(st.sampled_from(g.rarely([2.0, 0.5], RARE_BASES))))
            return
        # 0.5 on any sign: NumPy computes it as sqrt, which differs from pow() at -inf and -0.0
        # (a negative base's NaN is NumPy's answer too).
        exponents: list[int | float | str] = list(COMMON_EXPONENTS)
        # each exponent as often (the rarer ones are half the table)
        exponents += RARE_EXPONENTS
        # 0.5 a quarter of the time besides: the only exponent the frontend takes apart (sqrt)
        # and two in seven on no table: a non-integer between -2 and 6 mostly, where a lowering
        # tells small integer exponents apart (``arbitrary_constant``)
        exponents += [ARBITRARY] * 6
        exponents += [SMALL] * 3  # any small integer, either sign, an int or a float
        if form == CONST_ARBITRARY:
            value: int | float | str = ARBITRARY
        elif form == CONST_WIDER and uniform(g.draw, (False, True)):
            value = 0.5  # (half the time: the one exponent the frontend takes apart)
        else:
            value = 0.5 if g.draw(st.integers(0, 3)) == 3 else uniform(g.draw, exponents)
        if value == SMALL:
            value = small_exponent(g.draw)
        if value == ARBITRARY:
            value = arbitrary_constant(g.draw, "float", low=-2, high=5)
            event("const:arbitrary-exponent")
        g.node(op, p, _scalar(g, p, value, wider=form == CONST_WIDER))
        return
    if left:  # (``programs`` takes the form only for an op that takes constants)
        g.node(op, g.const(p.dtype, op, weak=_weak_left(g)), p)
        return
    foreign = g.foreign_const(p.dtype) if form == CONST_FOREIGN else None
    if foreign is not None:
        g.node(op, *g.either_side(p, foreign))
        return
    if form in (CONST_WIDE, CONST_ARBITRARY, CONST_WIDER):
        constant = g.form_const(form, p.dtype, op)
        g.node(op, *g.ordered(p, constant))
        return
    q = g.partner(p, op, consts=primitives.get(op).consts)
    a, b = g.ordered(p, q)
    g.node(op, a, b)


def _condition(g: Gen, op: str) -> tuple[Value, Value]:
    form = g.takes_const_form()
    p = g.primary(op)
    named = const_form_value(form)
    if named is not None:
        return g.node(op, *g.ordered(p, g.spelled_const(named, p.dtype, op))), p
    if form == CONST_LEFT:
        return g.node(op, g.const(p.dtype, op, weak=_weak_left(g)), p), p
    foreign = g.foreign_const(p.dtype) if form == CONST_FOREIGN else None
    if foreign is not None:  # either side (one on the left: NumPy's scalar operator)
        return g.node(op, *g.either_side(p, foreign)), p
    if form in (CONST_WIDE, CONST_ARBITRARY, CONST_WIDER):
        constant = g.form_const(form, p.dtype, op)
        return g.node(op, *g.ordered(p, constant)), p
    q = g.partner(p, op, consts=True)
    a, b = g.ordered(p, q)
    return g.node(op, a, b), p


def _where_on(g: Gen, cond: Value, p: Value) -> None:
    """``where(cond, ...)`` of ``p`` and a partner tensor half the time, else of ``p`` and a
    constant (``where(x > 0, x, 0.0)``) or of two constants (``where(mask, 1.0, 0.0)``), where
    the condition alone sets the result's shape: with tensors only, no 60 s session met a
    where whose shape rule read its values alone (it refused two constants)."""
    form = uniform(g.draw, ("tensors", "tensors", "constant", "constants"))
    if form == "constants":
        event("where:constants")
        first = g.const(p.dtype, "where")
        # (the second one next to the first: a bfloat16 and a float16 scalar have no common dtype)
        second = g.const(first.dtype or p.dtype, "where")
        g.node("where", cond, first, second)
        return
    if form == "constant":
        event("where:constant")
        a, b = g.ordered(p, g.const(p.dtype, "where"))
        g.node("where", cond, a, b)
        return
    shape = broadcast(cond.shape, p.shape)
    other = g.partner(p, "where", consts=False, shape=shape)
    assert not isinstance(other, Const)
    a, b = g.ordered(p, other)
    g.node("where", cond, a, b)


def _where(g: Gen, op: str) -> None:
    if g.draw(st.integers(0, 3)) == 3:
        # A numeric condition: NumPy selects where it is nonzero (NaN is nonzero).
        cond = g.primary(op)
        event(f"where:condition-{cond.dtype}")
        _where_on(g, cond, cond)  # where(x, x, y): x where it is nonzero (NaN included)
        return
    comparisons = of_kind("compare")
    allowed = [c for c in comparisons if c in g.cfg.ops] or list(comparisons)
    cond, p = _condition(g, g.draw(st.sampled_from(allowed)))
    _where_on(g, cond, p)


def _compare(g: Gen, op: str) -> None:
    cond, p = _condition(g, op)
    if g.draw(st.booleans()):
        g.node(
            "astype", cond, dtype=g.draw(st.sampled_from(g.cfg.dtypes)), nonneg=True, bounded=True
        )
    else:
        _where_on(g, cond, p)


def _matmul(g: Gen, op: str) -> None:
    p = g.primary(op, lambda v: v.ndim >= 1)
    # Structural choices first, shape-dependent ones last: when the shrinker lowers a rank, the
    # decisions drawn before it stay aligned with what they meant.
    p_right = g.draw(st.booleans())
    layout = [op for op in ("transpose", "permute_dims") if op in g.cfg.ops]
    # The classic layout bug: a transposed operand (k.T in attention, x @ w.T); and strided or
    # offset views, which a BLAS path passes through leading dimensions or only its fallback.
    # Always the same draws, whatever is feasible (the shrinker keeps later draws aligned).
    form = g.draw(st.sampled_from(["plain", "plain", "transposed", "view"]))
    if (
        g.budget < 2
        or (form == "transposed" and not layout)
        or (form == "view" and "index" not in g.cfg.ops)
    ):
        form = "plain"
    transposed = form == "transposed"
    layout_op = g.draw(st.sampled_from(layout)) if transposed else ""
    allowed = [d for d in g.cfg.dtypes if g.cfg.compatible(d, p.dtype)]

    def fits(v: Value) -> bool:
        if v.ndim == 0 or v.dtype not in allowed:
            return False
        try:
            shape = _matmul_shape(v.shape, p.shape) if p_right else _matmul_shape(p.shape, v.shape)
        except ValueError:
            return False
        return len(shape) <= g.cfg.max_rank

    reuse = [v for v in reversed(g.values) if v.dtype != "bool" and fits(v)][:4]
    if reuse and not transposed and g.draw(st.integers(0, 3)) == 3:
        q = reuse[g.draw(st.integers(0, len(reuse) - 1))]
        event("operand:reused")
    else:
        dtype = g.partner_dtype(p.dtype, allowed)
        shape = _matmul_partner(g, p.shape, p_right, matrix=transposed)
        if transposed:
            q = g.input((*shape[:-2], shape[-1], shape[-2]), dtype)
            if layout_op == "transpose" and len(shape) == 2:
                q = g.node("transpose", q)
            else:
                axes = (*range(len(shape) - 2), len(shape) - 1, len(shape) - 2)
                q = g.node("permute_dims", q, axes=axes)
            event("matmul:transposed-operand")
        elif form == "view":
            q = g.view(shape, dtype)  # strided, offset, reversed or transposed
        else:
            q = g.input(shape, dtype)
    a, b = (q, p) if p_right else (p, q)
    if a.ndim == 1 and b.ndim == 1:
        kind = "dot"
    elif a.ndim == 1 or b.ndim == 1:
        kind = "vec-mat" if a.ndim == 1 else "mat-vec"
    elif a.ndim == b.ndim == 2:
        kind = "2d"
    else:
        kind = "batched" if a.shape[:-2] == b.shape[:-2] else "broadcast-batch"
    event(f"matmul:{kind}")
    g.node("matmul", a, b)


def _matmul_shape(a: Shape, b: Shape) -> Shape:
    """NumPy's result shape of ``a @ b`` (ValueError where NumPy refuses)."""
    return np.matmul(np.empty(a, np.int8), np.empty(b, np.int8)).shape


def _matmul_partner(g: Gen, shape: Shape, p_right: bool, *, matrix: bool = False) -> Shape:
    """The other operand's shape; ``matrix`` asks for at least two dimensions."""
    room = g.cfg.max_rank - 2
    kinds = ["matrix"] + ([] if matrix else ["vector"]) + (["batch"] if room >= 1 else [])
    kind = g.draw(st.sampled_from(kinds))
    k = (shape[-2] if len(shape) >= 2 else shape[0]) if p_right else shape[-1]
    if kind == "vector":
        return (k,)
    # One matrix in six is one row or one column: the strides along an extent-1 axis mean
    # nothing, and a BLAS path decides row- or column-major (and the leading dimension) from
    # extents and strides, special-casing one row and one column. Every partner had two or more
    # (``side``): a plant that took any one-row operand for row-major, whatever its column
    # stride, survived 60 s sessions.
    other = 1 if uniform(g.draw, range(6)) == 0 else g.side(avoid=shape)
    if kind == "matrix":
        return (other, k) if p_right else (k, other)
    q_batch = g.draw(broadcastable_shapes(shape[:-2], min_dims=1, max_dims=room, max_side=3))
    return (*q_batch, other, k) if p_right else (*q_batch, k, other)


#: The values a max's or min's ``initial=`` is drawn from.
INITIAL_VALUES = (0, -0.0, 1, -1, 2.5, -2.5, 1000, -1000, 65504.0)


def _reduction(g: Gen, op: str) -> None:
    accumulators = [k for k, a in primitives.get(op).attrs.items() if a.kind == "result_dtype"]
    # NumPy's dtype= one time in three where the entry takes it: the dtype x is cast to, summed
    # and (a mean) divided in. Of every dtype: an int32 sum modulo 2**32 (the compiler's only
    # int32 sum, as NumPy's default one is int64), a float16 mean summed in float16 (not in
    # float32, as without it), a float64 sum of float32. Never a float's into int32 (an
    # undefined cast for NaN and out-of-range values). Half the time its own dtype, where an
    # int32 mean divides in int32 and truncates; an int32 mean takes one two times in three
    # (int32 means are few: one whose quotient was left float64 survived 60 s sessions at one
    # in three). A dtype= the compiler ignored survived every session before: none wrote it.
    numeric = tuple(d for d in g.cfg.dtypes if d != "bool")
    keyword: dict[str, str] = {}
    if accumulators and numeric:
        p = g.primary(op, dtypes=numeric)  # an int32 sum too: it takes a dtype=
        needed = bool(accumulator(op, p.dtype))
        odds = 1 if p.dtype == "int32" else 2  # (an int32 mean: 2 in 3)
        if needed or g.draw(st.integers(0, 2)) >= odds:  # shrinks toward none
            targets = [d for d in numeric if d != "int32" or p.dtype == "int32"] or [p.dtype]
            own = p.dtype in targets and uniform(g.draw, (True, False))
            keyword[accumulators[0]] = p.dtype if own else uniform(g.draw, targets)
            event(f"reduce:dtype={'same' if own else 'drawn'}")
    else:
        p = g.primary(op)
    red = g.draw(reductions(p.shape))
    counts: dict[str, Any] = dict(keyword)
    for name, attr in primitives.get(op).attrs.items():
        if attr.kind == "initial" and g.draw(st.integers(0, 4)) == 4:  # shrinks toward none
            # max's and min's initial= one time in five: above or below every element, or
            # among them; -0.0 against a 0.0 (an element wins the tie); a half, which an int32
            # max converts to its integer part
            counts[name] = uniform(g.draw, INITIAL_VALUES)
            event(f"reduce:{name}=")
    for name, attr in primitives.get(op).attrs.items():
        if attr.kind == "count":  # var's ddof: a divisor max(n - ddof, 0), n the reduced extent
            axes = range(len(p.shape)) if red.axis is None else np.atleast_1d(red.axis)
            n = int(np.prod([p.shape[a] for a in axes]))
            # n and past it: inf or NaN (NumPy clamps the divisor at 0; past n, a divisor
            # left unclamped is negative). Drawn near uniformly (sampled_from and one_of favour
            # their first items and repeat recent picks), shrinking toward 0, the default. Any
            # real is NumPy's ddof: a half, and -1 (the divisor n + 1; a ddof truncated to an
            # int survived 60 s sessions while every drawn ddof was one).
            choices = (0, 0, 1, 2, max(n - 1, 1), n, n + 1, n + 3, 0.5, n - 0.5, -1)
            counts[name] = uniform(g.draw, choices)
            event(
                f"reduce:{name}{'=0' if not counts[name] else '>=n' if counts[name] >= n else ''}"
            )
    g.node(op, p, axis=red.axis, keepdims=red.keepdims, **counts)


def _layout(g: Gen, op: str) -> None:
    if op == "transpose":
        p = g.primary(op, lambda v: v.ndim == 2, min_dims=2, max_dims=2)
        none = g.draw(st.booleans())  # NumPy's default axes written out, half the time
        event(f"layout:transpose{'(None)' if none else ''}")
        g.node(op, p, none=none)
    elif op == "permute_dims":
        p = g.primary(op, lambda v: v.ndim >= 2, min_dims=2)
        axes = g.draw(permutations(p.ndim))
        event(f"layout:permute{axes}")
        g.node(op, p, axes=axes)
    elif op == "reshape":
        p = g.primary(op)
        new = g.draw(reshapes(p.shape, max_dims=g.cfg.max_rank))
        event(f"layout:reshape-rank{len(p.shape)}to{len(new)}")
        g.node(op, p, shape=new)
    else:
        p = g.primary(op, lambda v: v.ndim >= 1)
        key = g.draw(slices_strategy(p.shape, max_dims=g.cfg.max_rank))
        g.node(op, p, key=key)


def _astype(g: Gen, op: str) -> None:
    # bool too: NumPy's nonzero test (NaN and -0.0 included), which no other op lowers; a bool
    # is no program's output, so that cast takes a second node, where the budget has one.
    to_bool = ("bool",) if g.budget >= 2 else ()

    def targets(v: Value) -> list[str]:
        return [
            d
            for d in (*g.cfg.dtypes, *to_bool)
            if d != v.dtype and (d != "int32" or v.dtype == "int32" or v.bounded)
        ]

    wanted, g.cast_to = g.cast_to, ""  # a focused step's target, where this value takes it
    p = g.primary(op, lambda v: bool(targets(v)))
    # A fresh input can have no target: a one-dtype program (focused) on its last node. Its cast
    # to bool then takes its consumer beyond the budget, as a focused cast does.
    allowed = targets(p) or ["bool"]
    if wanted and wanted != p.dtype and (wanted != "int32" or p.bounded):
        allowed = [wanted]  # to bool too: its consumer may take one node beyond the budget
    dtype = g.draw(st.sampled_from(allowed))
    event(f"cast:{p.dtype}->{dtype}")
    cast = g.node(op, p, dtype=dtype)
    if dtype == "bool":  # a program's output is numeric: consumed as a comparison's result is
        if g.draw(st.booleans()):
            g.node("astype", cast, dtype=g.draw(st.sampled_from(g.cfg.dtypes)), nonneg=True,
                   bounded=True)  # fmt: skip
        else:
            _where_on(g, cast, p)


def _causal_mask(g: Gen, op: str) -> None:
    p = g.primary(op, lambda v: v.ndim >= 1)
    size = p.shape[-1]
    variants = ["matmul"]
    if (p.ndim == 1 and g.cfg.max_rank >= 2) or (p.ndim >= 2 and p.shape[-2] in (1, size)):
        variants.insert(0, "add")
    variant = g.draw(st.sampled_from(variants))
    dtypes = [d for d in g.cfg.floats if g.cfg.compatible(d, p.dtype)]
    dtype = g.draw(st.sampled_from(sorted(dtypes, key=lambda d: d != p.dtype)))
    mask = g.node("causal_mask", size=size, dtype=dtype)
    g.values.remove(mask)  # reused alone, it could leave an output that reads no input
    event(f"mask:{variant}")
    if variant == "add":
        g.node("add", *g.ordered(p, mask))
    else:
        g.node("matmul", p, mask)


def _gather(g: Gen, op: str) -> None:
    # The table is a view of a larger input one time in three (else a fresh table is a view
    # one time in two): a gather from a strided view is its own code path in cpu-vector (the
    # ``gathers`` stage), gathers are few (about 2% of cases), and a table picked from earlier
    # steps is never a view (a planted crash in that stage went unseen for 90 s otherwise).
    odds = min(g.cfg.view_odds, 2)
    if odds and g.may_view() and (odds == 1 or g.draw(st.integers(0, 2)) == 2):
        shape, dtype = g.shape(), g.dtype(g.cfg.op_dtypes(op))
        if g.draw(st.integers(0, 1)):
            # One element, or a column, taken with a step (``x[2::3, -1]`` of 4 rows): an
            # extent-1 innermost dim whose stride is not 1, which the vectorized gather's
            # lowering must not take as contiguous
            shape = (1,) if g.draw(st.integers(0, 1)) or not shape else (*shape[:-1], 1)
            event("gather:strided-unit-table")
            p = g.view(shape, dtype, unit_step=True)
        else:
            p = g.view(shape, dtype)
    elif g.cfg.max_rank >= 2 and g.draw(st.integers(0, 2)) == 2:
        # A table of one row (every id 0, or out of range), vector-wide: the lookup's clamp and
        # the vectorizer's masks meet a unit extent (a masked gather by 2-D ids from a 1 x 17
        # table failed to compile in MLIR 22.1.8 without ``unmasked-nd-extract``).
        event("gather:one-row")
        width = uniform(g.draw, VECTOR_SIDES)
        p = g.input((1, width), g.dtype(g.cfg.op_dtypes(op)))
    else:
        p = g.primary(op, lambda v: 1 <= v.ndim <= g.cfg.max_rank, views=odds)
    room = g.cfg.max_rank - p.ndim + 1
    ids_inputs = [
        Ref("input", i)
        for i, inp in enumerate(g.builder.inputs)
        if inp.bound is not None and inp.bound <= p.shape[0] and len(inp.shape) <= room
    ]
    if ids_inputs and g.draw(st.integers(0, 3)) == 3:
        ref = ids_inputs[g.draw(st.integers(0, len(ids_inputs) - 1))]
        inp = g.builder.inputs[ref.index]
        ids = Value(ref, inp.type, nonneg=True, bounded=True)
    else:
        # ids of rank 2 half the time where they fit: the vectorizer's n-D extract path
        rank = 2 if room >= 2 and g.draw(st.integers(0, 1)) else 1
        ids = g.input(g.shape(min_dims=rank, max_dims=rank), "int32", bound=p.shape[0])
    g.node(op, p, ids)


def _composite(g: Gen, op: str) -> None:
    if op in ("attention", "attend"):
        p = g.pick(
            lambda v: v.dtype in g.cfg.floats and v.ndim == 2,
            lambda: _attention_input(g),
        )
        width = p.shape[1]
        divisors = [h for h in range(1, width + 1) if width % h == 0]
        heads = g.draw(st.sampled_from(sorted(divisors, key=lambda h: (h == 1 or h == width, h))))
        weights = [(width, 3 * width), (3 * width,), (width, width), (width,)]
        if op == "attend":
            weights = [(width,), (width,), *weights]
        args = [g.input(s, p.dtype) for s in weights]
        event(f"attention:heads={heads}")
        g.node(op, p, *args, heads=heads)
        return
    p = g.primary(op, lambda v: v.ndim >= 1 or op == "gelu")
    if op == "gelu":
        g.node(op, p)
    elif op == "softmax":
        axes = [-1, *(a for a in range(-p.ndim, p.ndim) if a != -1)]
        g.node(op, p, axis=g.draw(st.sampled_from(axes)))
    else:
        width = p.shape[-1]
        if op == "layer_norm":
            shapes: list[Shape] = [(width,), (width,)]
        elif op == "linear":
            hidden = g.side(avoid=p.shape)
            shapes = [(width, hidden), (hidden,)]
        else:
            hidden = g.side(avoid=p.shape)
            shapes = [(width,), (width,), (width, hidden), (hidden,), (hidden, width), (width,)]
        g.node(op, p, *(g.input(s, p.dtype) for s in shapes))


def _attention_input(g: Gen) -> Value:
    config = g.draw(attention_configs(max_length=max(g.cfg.max_side, 3), dtypes=g.cfg.floats))
    return g.input((config.length, config.width), config.dtype)


#: One maker per kind of primitive.
MAKERS: dict[str, Callable[[Gen, str], None]] = {
    "unary": _unary,
    "binary": _binary,
    "compare": _compare,
    "select": _where,
    "cast": _astype,
    "matmul": _matmul,
    "reduction": _reduction,
    "layout": _layout,
    "source": _causal_mask,
    "gather": _gather,
    "composite": _composite,
}


__all__ = ["MAKERS"]
