"""Array values from named numeric regimes, for program inputs.

Each regime targets a known way kernels go wrong:

- ``ordinary``: moderate values of either sign;
- ``large`` drives softmax near +-1e4 (a missing max-subtraction overflows), ``tiny`` probes
  cancellation;
- ``constant_rows`` gives layer norm a zero variance, ``ties`` makes many elements equal (argmax-
  like choices, comparisons at equality) and a float's few NaN (the unordered tie);
- ``mixed_sign`` exercises max/min/abs and comparisons; ``negative`` and ``positive`` make whole
  arrays one sign (a reduction identity that is wrong shows only when every element of a row is
  below it: a max initialized with 0 passes on mixed rows);
- ``special`` puts NaN, +inf, -inf and -0.0 among ordinary values, and rows that are all -inf
  (softmax of a fully masked row, max of -inf); half its cases' NaNs take other bits
  (``nan_bits``: negative, signaling, a payload in the low bits alone) where no power reads
  them;
- ``extreme`` uses the dtype's edges: a 64th of the float maximum (products overflow), its
  epsilon's scale, the smallest normal, subnormals, values either side of exp's overflow and
  underflow thresholds, and for int32 the extremes (NumPy's wrapping
  arithmetic defines every result); gather ids, otherwise in range, sometimes hold one
  out-of-range id (the gather must raise, as NumPy's reference does);
- ``halfway`` holds values exactly halfway between two neighbours of a narrower format (float16
  and bfloat16 for float32; float32 too for float64 and int32), one ulp either side of such, and
  narrower formats' overflow and underflow thresholds: a conversion that rounds a tie up, or
  rounds twice, differs from NumPy's there only, and by less than an ulp, which only an exact
  comparison sees (the differential oracle judges such programs to the bit);
- ``dense`` fills an array from a seeded generator: uniform values with every significand bit
  random over a span of the dtype (``DENSE_SPANS``: [-1, 1], [-4, 4], exp's whole domain,
  log-uniform magnitudes of either sign or positive, or a large offset +- 1; integers small,
  half-width or over the whole range). A math function's approximation (a polynomial of too
  low a degree, a wrong range-reduction constant) is off by a few ulps on a few percent of such
  values and on none of the short, simple values Hypothesis prefers; one draw for the whole
  array, however large.

Values are float32-representable for float32 arrays, free of subnormals outside ``extreme``
and ``halfway`` (where NumPy keeps them and so must every CPU backend; a reference that flushes
them, XLA's, is judged as such), and shrink toward simple numbers. float16 values respect its range
(largest 65504: ``large`` stays below 1e4, ``extreme`` uses its own edges); bfloat16 values are
float32 draws rounded to bfloat16's 8-bit significand (Hypothesis has no bfloat16), with
bfloat16's own edges (largest ~3.4e38, epsilon 2**-7). Inputs that flow into a float ->
int32 cast (undefined in NumPy for NaN, infinities and out-of-range values) only ever get
``ordinary`` values, whatever the regime.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from hypothesis import event, reject
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from compiler import primitives

from ..model import FLOAT_DTYPES, Const, Input, Program, Ref
from .shapes import broadcasts_onto

REGIMES = (
    "ordinary",
    "large",
    "tiny",
    "constant_rows",
    "mixed_sign",
    "negative",
    "positive",
    "ties",
    "special",
    "extreme",
    "dense",
    "halfway",
    "lowest",
    "highest",
)
#: The regimes of whole arrays at one end of their dtype (``end_value``): a max's and a min's
#: edges alone.
END_REGIMES = ("lowest", "highest")
#: Regimes a random program draws its values from (``regimes``): not ``END_REGIMES``.
GENERAL_REGIMES = tuple(r for r in REGIMES if r not in END_REGIMES)
#: Regimes whose values a float -> int32 cast may not see.
UNSAFE_FOR_CASTS = ("special", "extreme", "dense", "halfway", *END_REGIMES)
#: Regimes at an op's edges, where its own mistakes show (NaN, infinities, subnormals and
#: thresholds; equal elements for comparisons; one sign for reduction identities; zero variance;
#: dense full-significand values for an approximation's accuracy; a max's or min's identity).
EDGE_REGIMES = (
    "special", "extreme", "ties", "negative", "positive", "constant_rows", "dense", "halfway",
    *END_REGIMES,
)  # fmt: skip
#: The edges of an op of no listed kind (``edge_regimes``): all but ``END_REGIMES`` (an array
#: of one value hides what a layout op or a cast does with each element).
ANY_OP_EDGES = tuple(r for r in EDGE_REGIMES if r not in END_REGIMES)
SPECIALS = (np.nan, np.inf, -np.inf, -0.0)

#: The edges of each kind of primitive (``edge_regimes``): a comparison's and a max/min's are
#: equal elements and NaN; a reduction's one sign (its identity) and NaN; a math function's
#: thresholds, subnormals and NaN; a cast's out-of-range and non-finite values; a gather's one
#: out-of-range id (``extreme``); a matmul's products of signed zeros (``ties``).
_KIND_EDGES = {
    "compare": ("ties", "special"),
    "select": ("ties", "special"),
    "reduction": ("negative", "special", "extreme"),
    "unary": ("extreme", "special", "dense"),
    "binary": ("extreme", "special", "ties", "dense"),
    "cast": ("extreme", "special", "halfway"),
    # zeros of both signs: where every product is -0.0, a float16 matmul is 0.0 (NumPy's loop
    # sums from 0.0; one summing from -0.0, -0.0, survived 60 s sessions)
    "matmul": ("extreme", "special", "ties"),
    "gather": ("extreme",),
    "composite": ("special", "extreme", "negative", "dense"),
}
_OP_EDGES = {
    "maximum": ("ties", "special", "negative"),
    "minimum": ("ties", "special", "negative"),
    # a max's identity shows in rows of one sign, of -inf, and of the int dtype's least value
    # (``lowest``: the whole array, so every reduced slice, whatever the axes; drawn from
    # ``extreme``'s rows of an end, 28 of 2000 focused int32 max cases reduced a slice of
    # INT32_MIN alone, and a max whose identity was INT32_MIN + 1 survived 60 s sessions)
    "max": ("negative", "ties", "special", "extreme", "lowest"),
    "min": ("positive", "ties", "special", "extreme", "highest"),  # identity: +inf, the int's max
    "layer_norm": ("constant_rows", "special", "extreme", "dense"),
    # what meets a causal mask's entries: zeros of both signs (its visible 0.0 must turn a -0.0
    # into 0.0: a mask of -0.0 entries survived 60 s sessions) and infinities (its -inf)
    "causal_mask": ("ties", "special"),
    # NumPy's scalar powers have their own loops (x ** 0.5 is sqrt: nan at -inf, -0.0 at -0.0,
    # where pow() gives inf and 0.0): they differ from pow() only at a negative or special base
    "power": ("special", "negative", "extreme", "dense"),
}


def edge_regimes(op: str) -> tuple[str, ...]:
    """The regimes at ``op``'s edges, where its own mistakes show (of ``EDGE_REGIMES``;
    ``ANY_OP_EDGES`` for an op of another kind): drawn from these, a focused case on int32
    ``a > b`` has equal elements half the time, not a fifth (a planted ``>`` as ``>=`` went
    unseen in 2 of 3 sessions of 60 s)."""
    if op in _OP_EDGES:
        return _OP_EDGES[op]
    try:
        kind = primitives.get(op).kind
    except (KeyError, ValueError):
        return ANY_OP_EDGES
    return _KIND_EDGES.get(kind, ANY_OP_EDGES)


def cast_edge_regimes(source: str, target: str) -> tuple[str, ...]:
    """The regimes at the edges of one conversion (of ``edge_regimes("astype")``): NaN, -0.0 and
    infinities for a float to bool (NaN is True: an ordered != makes it False); ties of the
    narrower format for a narrowing one (``halfway``: rounding ties up, truncating, rounding
    twice), with its overflow and subnormals; the dtype's extremes otherwise (a float to int32
    sees ordinary values whatever the regime, ``int_cast_inputs``), and for a narrowing one
    ``dense`` values too."""
    if target == "bool":
        return ("special", "ties")
    if source in _NARROWER and target in _NARROWER[source]:
        # ``dense``: every significand bit random, where a cast that truncates is off on half
        # the values (short values, which Hypothesis prefers, narrow exactly)
        return ("halfway", "dense", "special")
    return ("extreme", "special")


def regimes() -> st.SearchStrategy[str]:
    """A regime name of ``GENERAL_REGIMES``; shrinks toward ``ordinary``."""
    return st.sampled_from(GENERAL_REGIMES)


def end_value(dtype: Any, regime: str) -> Any:
    """The one value of a ``lowest`` or ``highest`` array of ``dtype``: its least or greatest
    (-inf or +inf for a float: a max's and a min's identities; False or True for bool)."""
    dt = np.dtype(dtype)
    low = regime == "lowest"
    if dt.kind == "b":
        return not low
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return int(info.min if low else info.max)
    return -np.inf if low else np.inf


BFLOAT16 = "bfloat16"


def _f(value: float, width: int) -> float:
    """``value`` rounded to the float width (bounds must be representable)."""
    return float(np.dtype(f"float{width}").type(value))


def _floats(lo: float, hi: float, width: int) -> st.SearchStrategy[float]:
    return st.floats(_f(lo, width), _f(hi, width), width=width, allow_subnormal=False)


def _stored(values: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Float ``values`` rounded into ``dt`` (bfloat16 through float32, as ml_dtypes and
    Hypothesis's float32 draws of it do)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(np.float32 if dt.name == BFLOAT16 else dt).astype(dt)


def _bfloat16(value: float) -> float:
    """``value`` rounded to the nearest bfloat16 (ml_dtypes rounds to nearest even)."""
    return float(np.asarray(value, np.float32).astype(BFLOAT16))


def _either_sign(magnitude: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.tuples(st.booleans(), magnitude).map(lambda t: -t[1] if t[0] else t[1])


def _float_elements(regime: str, width: int, info: Any = None) -> st.SearchStrategy[float]:
    """Elements of a float of ``width`` bits (``info``: the finfo whose edges ``extreme``
    uses, bfloat16's for bfloat16 drawn as float32)."""
    info = info if info is not None else np.finfo(np.dtype(f"float{width}"))
    ordinary = _floats(-4.0, 4.0, width)
    if regime in ("ordinary", "constant_rows"):
        return ordinary
    if regime == "large":
        return _either_sign(_floats(1e3, 1e4, width))
    if regime == "tiny":
        if width == 16:  # float16's smallest normal is 6.1e-5
            return _either_sign(_floats(2 * float(info.tiny), 1e-2, width))
        return _either_sign(_floats(1e-8, 1e-4, width))
    if regime == "mixed_sign":
        return _either_sign(_floats(1e-2, 1e2, width))
    if regime == "negative":
        return _floats(-8.0, -1e-3, width)
    if regime == "positive":
        return _floats(1e-3, 8.0, width)
    if regime == "ties":
        # Equal elements, and now and then NaN: the unordered tie. A comparison's predicates
        # differ on exactly these (``<`` and ``<=`` on equal operands; ``!=`` as ordered,
        # ``une`` against ``one``, on NaN: a planted ordered ``!=`` survived a 60 s session,
        # its NaN drawn by the ``special`` regime only); one element in eleven. And zeros of
        # both signs, the tie of two different bits: which zero a maximum or minimum of -0.0
        # and 0.0 keeps (float16 keeping the second survived 60 s sessions, -0.0 drawn by
        # ``special`` alone); an element and its operand's are zeros of opposite signs one
        # time in 15.
        return st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, -0.0, 0.0, 1.0, -1.0, 2.5, np.nan])
    if regime == "special":
        return st.one_of(ordinary, st.sampled_from(SPECIALS))
    if regime == "extreme":
        return st.one_of(st.sampled_from(_float_edges(width, info)), ordinary)
    if regime == "dense":  # one element: any value of exp's domain (arrays: ``_dense``)
        return _floats(-_exp_domain(info), _exp_domain(info), width)
    raise ValueError(regime)


def _float_edges(width: int, info: Any) -> list[float]:
    """The ``extreme`` regime's values for a float of ``width`` bits with ``info``'s edges."""
    # A 64th of the largest float: products overflow (in any order), while sums of the few
    # dozen elements a program reduces do not, so no answer depends on the order of a
    # reduction (NumPy sums pairwise, the compiled loops in sequence).
    big = _f(float(info.max) / 64, width)
    return [
        big,
        -big,
        float(info.eps),
        -float(info.eps),
        float(info.tiny),
        1 / float(info.eps),
        # Subnormals (a log or a scaling that assumes normal inputs; NumPy keeps them).
        _f(float(info.smallest_subnormal), width),
        -_f(float(info.tiny) / 8, width),
        # Half a unit inside and outside exp's overflow and underflow thresholds (and
        # tanh's saturation, softmax's and gelu's exp): a clamp constant off shows here,
        # while no correctly rounded answer sits near a threshold.
        *(
            _f(edge + side, width)
            for edge in (
                float(np.log(info.max)),
                float(np.log(info.tiny)),
                float(np.log(info.smallest_subnormal)),
            )
            for side in (-0.5, 0.5)
        ),
    ]


def edge_values(dtype: Any) -> list[float]:
    """The ``extreme`` regime's edges of a float dtype (subnormals, exp's thresholds, a 64th of
    the largest value, epsilon's scale, both signs), as its arrays hold them."""
    return _edges_stored(np.dtype(dtype))


def _edges_stored(dt: np.dtype) -> list[float]:
    """The ``extreme`` edges of the float dtype ``dt`` as its arrays are drawn (bfloat16's
    rounded to bfloat16, held as float32)."""
    if dt.name == BFLOAT16:
        return [_bfloat16(v) for v in _float_edges(32, primitives.finfo(dt))]
    return _float_edges(8 * dt.itemsize, np.finfo(dt))


#: The formats a value of each dtype may be converted to that are narrower in precision or range:
#: where the ``halfway`` regime's ties lie.
_NARROWER = {
    "float64": ("float32", "float16", BFLOAT16),
    "float32": ("float16", BFLOAT16),
    "float16": (BFLOAT16,),
    BFLOAT16: ("float16",),
    "int32": ("float32", "float16", BFLOAT16),
}


def _unsigned(dt: np.dtype) -> np.dtype:
    return np.dtype(f"uint{8 * dt.itemsize}")


@functools.cache
def halfway_groups(dtype: str) -> tuple[tuple[float, ...], ...]:
    """The ``halfway`` regime's values of ``dtype`` (both signs), in groups drawn alike: for each
    narrower format (``_NARROWER``), its values at ~64 places over its whole range and at every
    power of two (one even and one odd neighbour below each, its smallest subnormals, its
    smallest normal, its largest), the values exactly between each and the next (past the
    largest: the overflow threshold), and those one ``dtype`` ulp either side of a middle (a
    conversion that rounds twice, through float32, goes the wrong way there); each only where
    ``dtype`` holds it exactly (for int32: integers, the middles' neighbours one apart)."""
    dt = np.dtype(dtype)
    return tuple(g for name in _NARROWER.get(dt.name, ()) for g in _halfway_groups(dt, name))


@functools.cache
def _halfway_groups(dt: np.dtype, name: str) -> tuple[tuple[float, ...], ...]:
    """``halfway_groups`` of ``dt`` for the one narrower format ``name``."""
    target = np.dtype(name)
    bits = _unsigned(target)
    info = primitives.finfo(target)
    top = int(np.array(np.inf, target).view(bits))  # +inf's bit pattern
    tiny, one = (int(np.array(v, target).view(bits)) for v in (info.tiny, 1.0))
    binades = np.arange(int(info.minexp), int(info.maxexp), dtype=np.float64)
    starts = np.exp2(binades).astype(target).view(bits).astype(np.int64)
    spread = np.linspace(0, top - 2, 64).astype(np.int64)
    base = np.concatenate([starts, spread, [0, 1, tiny - 1, tiny, one, top - 2]])
    k = np.unique(np.concatenate([base, base + 1]))
    k = k[(k >= 0) & (k < top)]
    groups = []
    for found in _rounding_points(k, dt, target):
        kept = _held(np.unique(np.abs(found)), dt)
        if kept.size:
            groups.append(tuple(float(v) for m in kept for v in (m, -m)))
    return tuple(groups)


def _rounding_points(
    k: np.ndarray, dt: np.dtype, target: np.dtype
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the bit patterns ``k`` of positive finite ``target`` values, as float64: the values,
    the middles between each and the next (past the largest: the overflow threshold), and one
    ``dt`` ulp either side of each middle ``dt`` holds (for an integer ``dt``: one either side);
    not yet filtered for what ``dt`` holds."""
    bits = _unsigned(target)
    low = k.astype(bits).view(target).astype(np.float64)
    high = (k + 1).astype(bits).view(target).astype(np.float64)
    below = np.maximum(k - 1, 0).astype(bits).view(target).astype(np.float64)
    with np.errstate(invalid="ignore"):
        high = np.where(np.isinf(high), low + (low - below), high)
    middle = (low + high) / 2
    if dt.kind in "iu":
        return low, middle, np.concatenate([middle - 1, middle + 1])
    with np.errstate(over="ignore"):
        held = middle.astype(dt)
    exact = held[(held.astype(np.float64) == middle) & (middle > 0)]
    wide = exact.view(_unsigned(dt)).astype(np.int64)
    aside = [(wide + step).astype(_unsigned(dt)).view(dt).astype(np.float64) for step in (-1, 1)]
    return low, middle, np.concatenate(aside)


@st.composite
def narrowing_values(
    draw: st.DrawFn, shape: tuple[int, ...], dtype: Any, target: Any
) -> np.ndarray:
    """``dtype`` values where a conversion to the narrower format ``target`` is hardest to
    round: ``target``'s own values, the middles between neighbours and one ``dtype`` ulp either
    side of a middle, at random places over ``target``'s range (a seeded fill, as ``dense``:
    one draw whatever the size), both signs, a quarter of them ``halfway_groups``' fixed points
    for ``target`` (its subnormals, the overflow threshold). Drawn element by element, a focused
    float64 -> float16 cast met a value beside a middle in about one case of twelve, and a
    conversion that rounds twice, through float32, went unseen in 60 s sessions; here about a
    quarter of the values show it."""
    dt, goal = np.dtype(dtype), np.dtype(target)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = int(np.prod(shape, dtype=np.int64))
    bits = _unsigned(goal)
    top = int(np.array(np.inf, goal).view(bits))
    if dt.kind in "iu":  # middles are integers from 2**(significand bits + 1) up
        least, most = 2.0 ** (primitives.finfo(goal).nmant + 1), float(np.iinfo(dt).max)
    else:
        info = primitives.finfo(dt)
        least, most = float(info.smallest_subnormal), float(info.max)
    with np.errstate(over="ignore"):
        lo, hi = (int(np.array(v, np.float64).astype(goal).view(bits)) for v in (least, most))
    k = rng.integers(min(lo, top - 1), min(hi, top - 1), 4 * size + 16, endpoint=True)
    points = np.concatenate(_rounding_points(k, dt, goal))
    points = points[np.isfinite(points)]
    if dt.kind in "iu":
        keep = points <= most
    else:
        with np.errstate(over="ignore"):
            keep = points.astype(dt).astype(np.float64) == points
    fixed = np.array([v for g in _halfway_groups(dt, goal.name) for v in g], dtype=np.float64)
    points = points[keep] if keep.any() else fixed
    flat = rng.choice(points, size) * np.where(rng.random(size) < 0.5, -1.0, 1.0)
    if fixed.size:  # a quarter from the fixed points (both signs already)
        chosen = rng.random(size) < 0.25
        flat[chosen] = rng.choice(fixed, int(chosen.sum()))
    event(f"narrowing:{dt.name}->{goal.name}")
    out = flat.astype(dt)
    if primitives.is_float(dt) and size >= 32:  # (bfloat16's kind is "V")
        # Each special value once, at random places: NaNs of every bits (``nan_bits``: a
        # conversion that keeps a signaling NaN's high half makes it an infinity), infinities
        # and -0.0, which a conversion done in integers takes apart from the finite values.
        specials = np.concatenate([nan_bits(dt), np.array(SPECIALS, dt)])
        with np.errstate(invalid="ignore"):
            out[rng.choice(size, specials.size, replace=False)] = specials
    return out.reshape(shape)


#: The float -> int32 and float -> bool conversions: NumPy's are exact (truncation toward zero,
#: ``x != 0``), so a wrong one is wrong on some values only, and which ones is the class.
CONVERSION_TARGETS = ("int32", "bool")


def int_range_top(dtype: Any) -> float:
    """The largest ``dtype`` value below 2**31: the top of the range whose conversion to int32
    NumPy defines (truncation toward zero; past it the result is undefined)."""
    info = primitives.finfo(np.dtype(dtype))
    return min(2.0**31 - 2.0 ** (30 - int(info.nmant)), float(info.max))


@st.composite
def conversion_values(
    draw: st.DrawFn, shape: tuple[int, ...], dtype: Any, target: str
) -> np.ndarray:
    """``dtype`` (float) values where a conversion to ``target`` (``CONVERSION_TARGETS``) shows
    its mistakes, a seeded fill as ``dense`` (one draw whatever the size). To int32: fractions of
    both signs around small integers (k +- a quarter step, a half, one ulp short of the next:
    truncation toward zero, not rounding, flooring or an unsigned conversion, which agree on
    the non-negative integers Hypothesis prefers), log-uniform magnitudes of either sign up to
    the range's top (every significand bit random), and the range's ends (-2**31, the largest
    value below 2**31, where a conversion that saturates or wraps early is off); only values
    whose conversion NumPy defines. To bool: zeros of both signs, NaN, infinities, subnormals
    (True: a conversion under denormals-are-zero reads them as 0) and ordinary values."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = int(np.prod(shape, dtype=np.int64))
    info = primitives.finfo(dt)
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    if target == "bool":
        subnormals = float(info.smallest_subnormal) * rng.integers(1, 2 ** int(info.nmant), size)
        choices = [
            np.zeros(size) * sign,  # 0.0 and -0.0
            rng.choice(np.array([np.nan, np.inf, -np.inf]), size),
            subnormals * sign,
            float(info.tiny) * rng.uniform(1, 2, size) * sign,
            rng.uniform(-4, 4, size),
        ]
    elif target == "int32":
        top = int_range_top(dt)
        steps = np.array([0.0, 0.25, 0.5, 0.75, 1 - float(info.eps)])
        near = rng.integers(-9, 10, size) + sign * rng.choice(steps, size)
        magnitude = np.exp2(rng.uniform(-2, np.log2(top), size))
        ends = np.array([-(2.0**31), -top, top, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, -0.0])
        choices = [near, near, magnitude * sign, magnitude * sign, rng.choice(ends, size)]
    else:
        raise ValueError(f"no conversion sweep to {target!r}; choose from {CONVERSION_TARGETS}")
    which = rng.integers(0, len(choices), size)
    flat = np.choose(which, choices)
    array = _stored(flat, dt)
    if target == "int32":  # rounded into the dtype: still in the range NumPy defines
        least = float(_stored(np.array(-(2.0**31)), dt))
        low = least if least == -(2.0**31) else -top
        array = _stored(np.clip(array.astype(np.float64), low, top), dt)
    event(f"conversion:{dt.name}->{target}")
    return array.reshape(shape)


def _held(values: np.ndarray, dt: np.dtype) -> np.ndarray:
    """The finite ``values`` that ``dt`` holds exactly (for an integer dtype: in range)."""
    values = values[np.isfinite(values)]
    if dt.kind in "iu":
        return values[(values == np.round(values)) & (values <= np.iinfo(dt).max)]
    with np.errstate(over="ignore"):
        return values[values.astype(dt).astype(np.float64) == values]


def halfway_values(dtype: str) -> tuple[float, ...]:
    """Every value of the ``halfway`` regime of ``dtype`` (``halfway_groups``), once."""
    return tuple(dict.fromkeys(v for group in halfway_groups(dtype) for v in group))


def _int_elements(dt: np.dtype, regime: str) -> st.SearchStrategy[int]:
    info = np.iinfo(dt)
    if regime in ("ordinary", "constant_rows", "special"):
        strategy = st.integers(-8, 8)
    elif regime == "large":
        strategy = _either_sign(st.integers(1000, 30000))
    elif regime == "tiny":
        strategy = st.integers(-1, 1)
    elif regime == "mixed_sign":
        strategy = _either_sign(st.integers(1, 8))
    elif regime == "negative":
        strategy = st.integers(-9, -1)
    elif regime == "positive":
        strategy = st.integers(1, 9)
    elif regime == "ties":
        strategy = st.sampled_from([0, 1, -1])
    elif regime == "dense":
        strategy = st.integers(int(info.min), int(info.max))
    elif regime == "extreme":
        strategy = st.one_of(
            st.sampled_from([int(info.min), int(info.max), int(info.min) + 1, int(info.max) - 1]),
            st.integers(-8, 8),
        )
    else:
        raise ValueError(regime)
    if info.min == 0:
        strategy = strategy.map(abs)
    return strategy.map(lambda v: int(np.clip(v, info.min, info.max)))


def elements(
    dtype: Any, regime: str = "ordinary", *, finite: bool = True
) -> st.SearchStrategy[Any]:
    """Scalar strategy for one element of ``dtype`` in ``regime`` (``finite=False`` adds NaN
    and the infinities to any float regime)."""
    dt = np.dtype(dtype)
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; choose from {REGIMES}")
    if regime in END_REGIMES:
        return st.just(end_value(dt, regime))
    if regime == "halfway" and dt.kind != "b":
        groups = halfway_groups(dt.name)
        if not groups:
            return elements(dt, "extreme")
        pool = st.one_of(*(st.sampled_from(group) for group in groups))
        return pool.map(int) if dt.kind in "iu" else pool
    if dt.name == BFLOAT16:
        strategy = _float_elements(regime, 32, primitives.finfo(dt)).map(_bfloat16)
        if not finite:
            strategy = strategy | st.sampled_from([np.nan, np.inf, -np.inf])
        return strategy
    if dt.kind == "f":
        strategy = _float_elements(regime, 8 * dt.itemsize)
        if not finite:
            strategy = strategy | st.sampled_from([np.nan, np.inf, -np.inf])
        return strategy
    if dt.kind in "iu":
        return _int_elements(dt, regime)
    if dt.kind == "b":
        return st.booleans()
    raise TypeError(f"no element strategy for dtype {dt}")


def _a_row(draw: st.DrawFn, array: np.ndarray) -> np.ndarray:
    """One last-axis row of ``array`` (a view, to fill), drawn; shrinks toward the first."""
    rows = array.reshape(-1, array.shape[-1])
    return rows[draw(st.integers(0, max(len(rows) - 1, 0)))]


@st.composite
def values(
    draw: st.DrawFn,
    shape: tuple[int, ...],
    dtype: Any,
    regime: str = "ordinary",
    *,
    finite: bool = True,
    bound: int | None = None,
    spans: Sequence[str] = (),
) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` from ``regime``; ``bound`` gives ids in [0, bound);
    ``spans``: the ``dense`` regime's float spans to draw from (``DEFAULT_SPANS`` if empty)."""
    dt = np.dtype(dtype)
    if bound is not None:
        return draw(_ids(shape, dt, regime, bound))
    # Hypothesis has no bfloat16: its arrays are drawn as float32 holding bfloat16-exact values.
    store = np.dtype(np.float32) if dt.name == BFLOAT16 else dt
    floating = primitives.is_float(dt)
    if regime == "dense":
        return draw(_dense(shape, dt, spans))
    if regime in END_REGIMES:  # every element the same end (``end_value``)
        return np.full(shape, end_value(dt, regime), dtype=dt)
    if regime == "constant_rows" and len(shape) >= 1:
        rows = draw(
            hnp.arrays(
                store,
                (*shape[:-1], 1),
                elements=elements(dt, regime, finite=finite),
                fill=st.nothing(),
            )
        )
        return np.ascontiguousarray(np.broadcast_to(rows, shape)).astype(dt)
    array = draw(_arrays(store, shape, elements(dt, regime, finite=finite)))
    if regime == "mixed_sign" and array.size >= 2 and (floating or dt.kind == "i"):
        flat = array.reshape(-1)
        flat[0] = abs(flat[0])
        flat[-1] = -abs(flat[-1]) if flat[-1] != 0 else -1
    if regime == "extreme" and floating and array.size >= 2 and draw(st.booleans()):
        # Half the time, a run of consecutive edges from a drawn one (all of them where the
        # array is large enough) at a drawn place: element by element, a 6-element array held
        # the one positive subnormal a fifth of the time, and a float64 log that took it for
        # a normal number went unseen.
        edges = _edges_stored(dt)
        start, place = draw(st.integers(0, len(edges) - 1)), draw(st.integers(0, array.size - 1))
        flat = array.reshape(-1)
        for k in range(min(flat.size, len(edges))):
            flat[(place + k) % flat.size] = edges[(start + k) % len(edges)]
        event("extreme:run-of-edges")
    if regime == "extreme" and dt.kind in "iu" and shape and array.size and draw(st.booleans()):
        # Half the time, a whole last-axis row of the dtype's least or greatest value: a max
        # whose identity is -INT32_MAX, not INT32_MIN, is wrong only on a row of INT32_MIN
        # (unseen in a 60 s session while rows held one or two of the ends).
        info = np.iinfo(dt)
        _a_row(draw, array)[...] = draw(st.sampled_from([info.min, info.max]))
        event("extreme:row-of-an-end")
    if regime in ("negative", "positive") and floating and array.size and draw(st.booleans()):
        # Half the time, one element of the dtype's least magnitude of that sign (its smallest
        # subnormal, or its least normal): a one-signed row's max or min is then a subnormal
        # (bfloat16's min reduction on cpu-vector flushed it where LLVM narrowed the minimum to
        # a bfloat16 one, with a conversion that flushes: 0 for 9.2e-41).
        info = primitives.finfo(dt)
        least = draw(st.sampled_from([float(info.smallest_subnormal), float(info.tiny)]))
        flat = array.reshape(-1)
        flat[draw(st.integers(0, flat.size - 1))] = -least if regime == "negative" else least
        event(f"{regime}:least-magnitude")
    if regime == "special" and floating and len(shape) >= 1 and draw(st.booleans()):
        # A whole last-axis row of -inf (a fully masked softmax row, the max of -inf).
        _a_row(draw, array)[...] = -np.inf
        event("special:row-of-minus-inf")
    if regime == "special" and floating and array.size and draw(st.booleans()):
        # Half the time, a NaN at a drawn place: NaN is the special value most conversions and
        # predicates get wrong (a float -> bool cast as ordered !=), and element by element a
        # focused cast's few-element input held one in a sixth of its cases.
        array.reshape(-1)[draw(st.integers(0, array.size - 1))] = np.nan
    if regime == "special" and floating:
        for name, test in (("nan", np.isnan), ("inf", np.isinf)):
            if np.any(test(array)):
                event(f"special:{name}")
        if np.any((array == 0) & np.signbit(array)):
            event("special:-0.0")
    return array.astype(dt) if store != dt else array


#: ``dense``'s spans of a float dtype, by name: (kind, reach), where ``uniform`` draws from
#: [-reach, reach] (``exp`` reaches exp's whole finite domain, the dtype's log(max)) and
#: ``log``/``log+`` draw magnitudes 10**u, u uniform in [-reach, reach] times the decimal
#: exponent of the dtype's largest value (float32: 1e-15 .. 1e15, so products stay finite;
#: float16: 0.012 .. 83), of either sign or positive (the domain of log, sqrt and of a power's
#: base); ``offset`` draws c + [-reach, reach] for c = +-2**(significand bits - 10) (at least
#: 8), so the values share their leading bits (float32: 8192 +- 1; a one-pass variance,
#: E[x^2] - E[x]^2, or a softmax without its max subtracted loses every bit there). ``large``
#: (drawn only where asked: ``DEFAULT_SPANS``) draws magnitudes between a 64th and a 16th of
#: the largest value, all of one sign: every element and a row's mean are finite, but a sum of
#: a few dozen overflows the dtype, so an accumulation kept in it where NumPy's is wider shows
#: (a float16 mean summed in float16, inf for NumPy's 3000, survived 60 s sessions).
DENSE_SPANS = {
    "unit": ("uniform", 1.0),
    "ordinary": ("uniform", 4.0),
    "exp": ("uniform", None),
    "log": ("log", 0.4),
    "log+": ("log+", 0.4),
    "offset": ("offset", 1.0),
    "large": ("large", None),
}
#: The spans ``dense`` draws from unless told: all but ``large`` (whose products and sums
#: overflow: a random program would compute little else than inf).
DEFAULT_SPANS = tuple(name for name in DENSE_SPANS if name != "large")
#: Integer spans: small, half the width (products do not wrap), the whole range (they do; NumPy
#: defines the wrapped result).
DENSE_INT_SPANS = ("small", "half", "full")


def _exp_domain(info: Any) -> float:
    """The largest float32-exact x below log(max): exp(x) is finite for |x| up to it."""
    return float(np.float32(np.log(float(info.max)) * 0.99))


@st.composite
def _dense(
    draw: st.DrawFn, shape: tuple[int, ...], dt: np.dtype, spans: Sequence[str] = ()
) -> np.ndarray:
    """``dense`` values: a seeded generator fills the array, so every element has a random
    significand and the draw costs Hypothesis three choices whatever the size (the minimizer,
    not Hypothesis, then crops the array to the elements that fail). ``spans``: the float
    spans to draw from (``DENSE_SPANS``' names; ``DEFAULT_SPANS`` if empty)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        return rng.random(size).reshape(shape) < 0.5
    if dt.kind in "iu":
        span = draw(st.sampled_from(DENSE_INT_SPANS))
        event(f"dense:{span}")
        info = np.iinfo(dt)
        if span == "small":
            lo, hi = -100, 100
        elif span == "half":
            reach = 2 ** (info.bits // 2 - 1)
            lo, hi = -reach, reach
        else:
            lo, hi = int(info.min), int(info.max)
        lo = max(lo, int(info.min))
        return rng.integers(lo, hi, size, dtype=dt, endpoint=True).reshape(shape)
    name = draw(st.sampled_from(tuple(spans or DEFAULT_SPANS)))
    event(f"dense:{name}")
    kind, reach = DENSE_SPANS[name]
    info = primitives.finfo(dt)
    if kind == "uniform":
        reach = _exp_domain(info) if reach is None else reach
        flat = rng.uniform(-reach, reach, size)
    elif kind == "offset":
        center = 2.0 ** max(int(info.nmant) - 10, 3) * (1 if rng.random() < 0.5 else -1)
        flat = center + rng.uniform(-reach, reach, size)
    elif kind == "large":
        sign = 1.0 if rng.random() < 0.5 else -1.0
        flat = sign * rng.uniform(float(info.max) / 64, float(info.max) / 16, size)
    else:
        decades = reach * float(np.log10(float(info.max)))
        flat = 10.0 ** rng.uniform(-decades, decades, size)
        if kind == "log":
            flat = np.where(rng.random(size) < 0.5, -flat, flat)
    array = _stored(flat.reshape(shape), dt)
    tiny = float(info.tiny)  # no subnormals outside ``extreme``: round them away from zero
    magnitude = np.abs(array.astype(np.float64))
    return np.where((magnitude > 0) & (magnitude < tiny), np.copysign(tiny, array), array).astype(
        dt
    )


#: The most elements of an array Hypothesis draws one by one (``_arrays``); a larger one is a
#: drawn sample of ``SAMPLED`` elements spread over it by a seeded shuffle. Hypothesis gives up
#: a case past 8k choices: element by element, 5 rows of 257 negative floats, 3 of 600 and any
#: array of 1001 were never drawn (every such case abandoned as too large), so the long-row
#: reductions and tail sweeps past ``cpu-vector``'s 256-element rows held only dense values.
ONE_BY_ONE = 256
SAMPLED = 64
#: ...and the most elements of one array that is not ``dense`` (a case with a larger one is
#: rejected, as Hypothesis rejected those past its choices before): sampled, a gather by ids of
#: (300, 300) from a table of 300 columns made 27M-element results, and cut a session's cases
#: per second by a third.
MOST_SAMPLED = 4096


@st.composite
def _arrays(
    draw: st.DrawFn, dtype: np.dtype, shape: tuple[int, ...], elements: st.SearchStrategy
) -> np.ndarray:
    """An array of ``elements``: drawn one by one up to ``ONE_BY_ONE``, else ``SAMPLED`` of them
    drawn and each repeated, shuffled, across the array (every element still of ``elements``)."""
    size = int(np.prod(shape, dtype=np.int64))
    if size <= ONE_BY_ONE:
        return draw(hnp.arrays(dtype, shape, elements=elements, fill=st.nothing()))
    if size > MOST_SAMPLED:
        reject()
    sample = draw(hnp.arrays(dtype, (SAMPLED,), elements=elements, fill=st.nothing()))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    event("values:sampled")
    return rng.permutation(np.resize(sample, size)).reshape(shape)


@st.composite
def _ids(draw: st.DrawFn, shape: tuple[int, ...], dt: np.dtype, regime: str, bound: int) -> Any:
    """Gather ids in [0, bound); in the ``extreme`` and ``special`` regimes (an id's edges),
    half the time one id out of range (negative, the bound itself and past it, the dtype's
    extremes), so the range check that makes a gather raise is tested as well as the lookup
    (NumPy's reference raises too). In ``extreme`` only, 17 gathers of 400 cases held none."""
    # An invalid program's ids may be of another integer dtype (uint8: no -1; int16: no id
    # past 32767), each id within its own range (-1 into uint8 was a harness error).
    info = np.iinfo(dt) if dt.kind in "iu" else np.iinfo(np.int32)
    low, high = int(info.min), int(info.max)
    ids = draw(_arrays(dt, shape, st.integers(0, min(bound - 1, high))))
    if regime in ("extreme", "special") and draw(st.booleans()):
        # Mostly an id just outside (the bound itself, -1: a check off by one); now and then
        # far outside (a check missing, an offset that overflows). The bound was one of five
        # picks: a check letting it through survived a 60 s session.
        def outside(values: tuple[int, ...]) -> list[int]:  # out of range, held by ``dt``
            return [e for e in values if low <= e <= high and not 0 <= e < bound]

        near, edges = outside((bound, -1)), outside((bound, -1, bound + 1, low, high))
        if edges:
            bad = draw(st.sampled_from(near if near and draw(st.integers(0, 2)) else edges))
            ids.reshape(-1)[draw(st.integers(0, ids.size - 1))] = bad
            event("special:id-out-of-range")
    return ids


def int_cast_inputs(program: Program) -> set[int]:
    """Inputs whose values reach a float -> int32 cast (NumPy leaves such casts undefined for
    NaN, infinities and out-of-range values)."""
    nodes = program.nodes
    found: set[int] = set()
    for node in nodes:
        if node.op != "astype" or node.attrs.get("dtype") != "int32":
            continue
        source = node.args[0]
        if program.type_of(source).dtype not in FLOAT_DTYPES:
            continue
        stack, seen = [source], set()
        while stack:
            ref = stack.pop()
            if not isinstance(ref, Ref) or (ref.kind, ref.index) in seen:
                continue
            seen.add((ref.kind, ref.index))
            if ref.kind == "input":
                found.add(ref.index)
            else:
                stack.extend(nodes[ref.index].args)
    return found


#: Ops whose answer on a signaling NaN is not NumPy's to define: ``pow(sNaN, 0)`` is 1 in NumPy's
#: float32 and float64 loops, NaN in its float16 one and in LLVM's ``powf``/``pow`` at -O0.
NAN_BITS_UNSAFE = ("power",)


def nan_bits(dtype: Any) -> np.ndarray:
    """NaNs of ``dtype`` other than NumPy's ``np.nan`` (positive, quiet, no payload): a negative
    quiet one, a signaling one whose payload is the lowest bit alone, and the same quiet. A NaN
    is a NaN whatever its bits in NumPy's semantics, but a conversion that narrows the
    significand in integers (float32 -> bfloat16 keeping the high half) turns a NaN whose
    payload lies in the dropped bits into an infinity unless it sets the quiet bit: a planted one
    that kept the high half as it was went unseen, every NaN drawn being ``np.nan``."""
    dt = np.dtype(dtype)
    width = dt.itemsize * 8
    mantissa = int(primitives.finfo(dt).nmant)
    exponent = ((1 << (width - mantissa - 1)) - 1) << mantissa
    quiet, sign = 1 << (mantissa - 1), 1 << (width - 1)
    bits = [sign | exponent | quiet, exponent | 1, exponent | quiet | 1, sign | exponent | 1]
    return np.array(bits, _unsigned(dt)).view(dt)


def _vary_nans(draw: st.DrawFn, array: np.ndarray) -> np.ndarray:
    """``array`` with each NaN replaced by one of ``nan_bits`` (drawn; shrinks toward the first,
    a negative quiet NaN)."""
    with np.errstate(invalid="ignore"):
        nans = np.flatnonzero(np.isnan(array))
    if not nans.size:
        return array
    array = array.copy()
    choices = nan_bits(array.dtype)
    flat = array.reshape(-1)
    for place in nans:
        flat[place] = choices[draw(st.integers(0, len(choices) - 1))]
    event("special:nan-bits")
    return array


@st.composite
def input_values(
    draw: st.DrawFn,
    inputs: Program | Sequence[Input],
    regime: str | None = None,
    *,
    finite: bool = True,
) -> tuple[np.ndarray, ...]:
    """Values for every input of a program (one regime for all; ids respect their bound; inputs
    reaching a float -> int cast stay ordinary; where two inputs meet in one binary op,
    comparison or select, equal at a quarter of the places: ``_operand_ties``; in half the
    ``special`` cases of a program without a power, NaNs of other bits: ``nan_bits``)."""
    guarded: set[int] = set()
    program = inputs if isinstance(inputs, Program) else None
    if program is not None:
        guarded = int_cast_inputs(program)
        inputs = program.inputs
    if regime is None:
        regime = draw(regimes())
    event(f"regime:{regime}")
    out = []
    for i, inp in enumerate(inputs):
        own = "ordinary" if i in guarded and regime in UNSAFE_FOR_CASTS else regime
        out.append(draw(values(inp.shape, inp.dtype, own, finite=finite, bound=inp.bound)))
    if program is not None:
        out = _operand_ties(draw, program, out, guarded)
        ops = {node.op for node in program.nodes}
        if regime == "special" and not ops & set(NAN_BITS_UNSAFE) and draw(st.booleans()):
            out = [_vary_nans(draw, a) if primitives.is_float(a.dtype) else a for a in out]
    return tuple(out)


#: The share of a tied case's places where the second operand takes the first's value.
TIED_SHARE = 0.25
#: The kinds of op whose operands are tied (``tie_sources``).
TIED_KINDS = ("binary", "compare", "select")


def tie_pairs(program: Program, guarded: Collection[int] = ()) -> list[tuple[int, int]]:
    """(i, j) for the two operands of a binary op, comparison or select that are two distinct
    inputs of one shape and dtype (neither a gather's ids nor guarded for a cast to int): the
    same-shaped pairs of ``tie_sources``."""
    inputs = program.inputs
    return [
        (j, source)
        for j, kind, source in tie_sources(program, guarded)
        if kind == "input" and inputs[j].shape == inputs[source].shape
    ]


def tie_sources(
    program: Program, guarded: Collection[int] = (), kinds: Collection[str] = TIED_KINDS
) -> list[tuple[int, str, Any]]:
    """(j, kind, source) for each operand of a binary op, comparison or select (of ``kinds``)
    that could equal the other at some places: input j (of no gather and not guarded for a cast
    to int), and the other operand: ``("input", i)`` (another input of j's shape and dtype, or
    of j's dtype that broadcasts to j's shape: ``x > y[0]``; one direction per pair),
    ``("constant", value)`` where j's dtype holds it exactly (``x > 2``), else ``("near",
    value)``: j takes the values of its dtype next to it (``near_values``)."""
    found: list[tuple[int, str, Any]] = []
    pairs: set[frozenset[int]] = set()
    for equation in program.nodes:
        kind = primitives.get(equation.op).kind
        args = equation.args[1:] if kind == "select" else equation.args
        if kind not in kinds or len(args) != 2:
            continue
        for a, b in (args, args[::-1]):
            if not (isinstance(a, Ref) and a.kind == "input") or a.index in guarded:
                continue
            x = program.inputs[a.index]
            if x.bound is not None:
                continue
            if isinstance(b, Const):
                value = b.py()
                if x.dtype == "bool" or isinstance(value, bool):
                    continue
                if _holds(x.dtype, value):
                    found.append((a.index, "constant", value))
                elif near_values(value, x.dtype):
                    found.append((a.index, "near", value))
            elif isinstance(b, Ref) and b.kind == "input" and b.index != a.index:
                y = program.inputs[b.index]
                if y.dtype != x.dtype or y.bound is not None or b.index in guarded:
                    continue
                wide = broadcasts_onto(y.shape, x.shape)
                if wide and frozenset((a.index, b.index)) not in pairs:
                    pairs.add(frozenset((a.index, b.index)))
                    found.append((a.index, "input", b.index))
    return list(dict.fromkeys(found))


def near_values(value: Any, dtype: str) -> list[Any]:
    """The values of ``dtype`` next to a finite constant it does not hold exactly, where the
    answer turns on how the constant is converted: an int dtype's floor and ceiling of it
    (clipped to its range), and past the range its ends and the value wrapped around (int32
    ``x < 2.5`` compares in float64 in NumPy: 2 and 3 tell it from a compare in int32; ``x <
    2**31 + 1`` in int64: INT32_MAX tells it from a compare in float32); a float dtype's
    nearest value to it (NEP 50 converts a Python scalar to the tensor's dtype: ``x < 0.1`` of
    float32 compares with float32(0.1)) and that value's two neighbours, the largest finite
    value for one past the range."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return []
    if not np.isfinite(number):
        return []
    kind = np.dtype(dtype)
    if not primitives.is_float(dtype):
        info = np.iinfo(kind)
        low, high = int(info.min), int(info.max)
        exact = int(value) if isinstance(value, (int, np.integer)) else None
        near = {min(max(v, low), high) for v in (math.floor(number), math.ceil(number))}
        if exact is not None and not low <= exact <= high:
            span = high - low + 1
            near |= {low, high, (exact - low) % span + low}
        return sorted(near)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nearest = np.asarray(number).astype(kind)
    if not np.isfinite(nearest.astype(np.float64)):
        nearest = np.asarray(primitives.finfo(kind).max, dtype=kind)
    bits = _unsigned(kind)
    pattern = int(nearest.reshape(1).view(bits)[0])
    sign = 1 << (8 * kind.itemsize - 1)
    neighbours = {pattern, pattern + 1} | ({pattern - 1} if pattern & ~sign else set())
    found = np.array(sorted(neighbours), dtype=bits).view(kind)
    finite = found[np.isfinite(found.astype(np.float64))]
    return sorted({float(v) for v in finite})


def _holds(dtype: str, value: Any) -> bool:
    """Does ``dtype`` hold the Python scalar ``value`` exactly?"""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if np.dtype(dtype).kind in "iu" and not float(value).is_integer():
                return False
            converted = np.asarray(value).astype(dtype)
            return bool(np.isfinite(float(value)) and float(converted) == float(value))
    except (OverflowError, ValueError, TypeError):
        return False


def _operand_ties(
    draw: st.DrawFn, program: Program, arrays: list[np.ndarray], guarded: set[int]
) -> list[np.ndarray]:
    """In every case with ``tie_sources``, an operand takes the other's value at a quarter of
    the places (at least one; a seeded choice: one draw whatever the size): the other input's
    (broadcast to its shape), or the constant it meets; the other places, and every value's
    regime, are kept. Every comparison's operands are tied where there is one (else one binary
    op's or select's, drawn): tying a select's branches as well hides the comparison's ties in
    ``where(x > y, x, y)``-like programs, where either branch is the answer at a tie.
    Independent draws met equal elements at one place only in the ``ties`` regime, and equal
    operands are where a comparison's predicates differ (``<`` against ``<=``, ordered against
    unordered on NaN: a planted ``ole`` -> ``olt`` was first found at 15.6 to 54.3 s over six
    seeds), where ``x - x`` is +0 and a maximum meets a tie. Inputs of one shape only, at first:
    an int32 ``>`` lowered as ``>=`` shows only at a tie, which a focused ``x > 2`` or ``x > y``
    of a row then had only by chance. A tie of zeros takes the other zero at half its places
    (equal, yet the sign a maximum, minimum, select or division keeps is NumPy's own rule)."""
    chosen = tie_sources(program, guarded, ("compare",))
    others = tie_sources(program, guarded)
    if not chosen and not others:
        return arrays
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if not chosen:
        chosen = [others[int(rng.integers(len(others)))]]
    out = list(arrays)
    for j, kind, source in chosen:
        tied = rng.random(out[j].shape) < TIED_SHARE
        if out[j].size and not tied.any():  # (a small array would often have none)
            tied.flat[int(rng.integers(out[j].size))] = True
        second = np.array(out[j], copy=True)
        if kind == "near":  # each tied place one of the values next to the constant
            near = np.asarray(near_values(source, second.dtype.name)).astype(second.dtype)
            value = near[rng.integers(len(near), size=second.shape)]
        elif kind == "input":
            value = out[source]
        else:
            value = np.asarray(source).astype(second.dtype)
        second[tied] = np.broadcast_to(value, second.shape)[tied]
        if primitives.is_float(second.dtype.name):  # a tie of zeros may take the other: 0 == -0
            zeros = tied & (second == 0) & (rng.random(second.shape) < 0.5)
            second[zeros] = -second[zeros]
        out[j] = second
    event("values:operand-ties")
    return out


__all__ = [
    "ANY_OP_EDGES",
    "CONVERSION_TARGETS",
    "DENSE_SPANS",
    "EDGE_REGIMES",
    "END_REGIMES",
    "GENERAL_REGIMES",
    "REGIMES",
    "SPECIALS",
    "TIED_SHARE",
    "cast_edge_regimes",
    "conversion_values",
    "edge_regimes",
    "end_value",
    "edge_values",
    "elements",
    "halfway_groups",
    "halfway_values",
    "input_values",
    "int_cast_inputs",
    "int_range_top",
    "narrowing_values",
    "near_values",
    "regimes",
    "tie_pairs",
    "tie_sources",
    "values",
]
