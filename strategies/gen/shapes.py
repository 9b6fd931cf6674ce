"""Shape-level strategies: dtypes, shapes, broadcasting, matmul operands, reductions, indexing.

Built on ``hypothesis.extra.numpy`` where it has the piece; written by hand where it does not
(distinct dimensions, matmul operand pairs with distinct m/k/n, positive-step non-empty slices,
non-identity permutations, factorizing reshapes, attention configurations).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..model.types import DTYPES, FLOAT_DTYPES, takes_a_dim

Shape = tuple[int, ...]


#: A wide integer: modulo a count, near uniform over it, and shrinking toward 0 (``coin``,
#: ``uniform``).
_WIDE = st.integers(0, 2**16 - 1)


def coin(faces: int) -> st.SearchStrategy[int]:
    """A near fair die of ``faces`` faces (0 .. faces - 1), shrinking toward 0: a wide integer
    modulo the count. Hypothesis's small integer ranges favour 0 (half the draws of
    ``integers(0, 3)``) and starve the last value (16% of them, not 25%), so a share drawn as
    "the last face" of one ran at about two thirds of what it says (the targets as shipped on
    13.5% of the default cases where a quarter was meant); this die gives the last face 11% of
    8 and 6.7% of 16."""
    return _WIDE.map(lambda n: n % faces)


def uniform(draw: st.DrawFn, items: Sequence[Any]) -> Any:
    """One of ``items``, near uniformly (``coin``'s wide integer): ``sampled_from`` favours
    the first ones and repeats recent picks, which starves the tail of a table drawn from; the
    wide integer modulo the count still shrinks toward the first item."""
    return items[draw(_WIDE) % len(items)]


def broadcasts_onto(shape: tuple[int, ...], onto: tuple[int, ...]) -> bool:
    """Does ``shape`` broadcast onto ``onto`` without changing it?"""
    try:
        return np.broadcast_shapes(shape, onto) == tuple(onto)
    except ValueError:
        return False


def dtypes(include: tuple[str, ...] = DTYPES) -> st.SearchStrategy[np.dtype]:
    """A supported dtype; shrinks toward float32 (the dtype the compiler is mostly used with)."""
    return st.sampled_from([np.dtype(d) for d in include])


def float_dtypes() -> st.SearchStrategy[np.dtype]:
    return dtypes(FLOAT_DTYPES)


@st.composite
def shapes(
    draw: st.DrawFn,
    *,
    min_dims: int = 1,
    max_dims: int = 3,
    min_side: int = 2,
    max_side: int = 6,
    distinct: bool = True,
    ones: bool = False,
    inner: tuple[int, ...] = (),
) -> Shape:
    """A rectangular shape: sides distinct wherever the rank allows, since a square shape hides
    a transposed dimension. ``ones=True`` also sets some sides to 1 on purpose (broadcasting,
    unit dimensions in any position, several at once); ``inner`` draws the last side from those
    extents (around vector widths and tile sizes), near uniformly, and sets outer sides to 1
    now and then. Shrinks toward low rank and small sides."""
    rank = draw(st.integers(min_dims, max_dims))
    # Always draw max_dims sides and keep the first ``rank``: lowering the rank while shrinking
    # then leaves every later choice where it was, so smaller ranks are actually reached.
    side = st.integers(min_side, max_side)
    available = max_side - min_side + 1
    n_unique = min(available, max_dims) if distinct else 0
    sides = draw(st.lists(side, min_size=n_unique, max_size=n_unique, unique=True))
    rest = max_dims - n_unique
    sides += draw(st.lists(side, min_size=rest, max_size=rest))
    sides = sides[:rank]
    if inner and sides:
        sides[-1] = uniform(draw, inner)
        if not ones:
            # The outer sides 1 a quarter of the time: one row of a vector-wide extent (a masked
            # row of a one-row table, a lone row of a reduction) is its own case for a vectorizer.
            sides[:-1] = [1 if draw(st.integers(0, 3)) == 3 else s for s in sides[:-1]]
    if ones:
        sides = [1 if draw(st.booleans()) else s for s in sides]
    return tuple(sides)


#: Extents around vector widths and tile sizes (a vectorizing backend peels, masks or unrolls
#: there): the ``vector`` shape regime draws innermost sides from these.
VECTOR_SIDES = (7, 8, 9, 15, 16, 17, 31, 33, 65)
#: Shape regimes of a whole program: plain small sides, size-1 sides anywhere, vector extents.
SHAPE_REGIMES = ("plain", "unit", "vector")


def broadcastable_shapes(
    shape: Shape,
    *,
    min_dims: int = 0,
    max_dims: int | None = None,
    min_side: int = 1,
    max_side: int | None = None,
) -> st.SearchStrategy[Shape]:
    """Shapes that broadcast against ``shape`` (fewer dims, size-1 dims, new leading dims).

    A thin wrapper over ``hypothesis.extra.numpy.broadcastable_shapes`` whose default keeps the
    rank at most ``len(shape)`` (fuzzed programs stay small)."""
    if max_dims is None:
        max_dims = max(len(shape), min_dims)
    if max_side is None:
        max_side = max((*shape, min_side, 2))
    return hnp.broadcastable_shapes(
        shape, min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )


mutually_broadcastable_shapes = hnp.mutually_broadcastable_shapes
valid_tuple_axes = hnp.valid_tuple_axes


class MatmulShapes(NamedTuple):
    """Operand shapes of one ``a @ b`` and the kind of product they make."""

    a: Shape
    b: Shape
    kind: str


MATMUL_KINDS = ("2d", "batched", "broadcast-batch", "vec-mat", "mat-vec", "dot")


def distinct_sides(
    draw: st.DrawFn, count: int, *, min_side: int = 2, max_side: int = 6
) -> list[int]:
    """``count`` sides, distinct when the range allows; shrinks toward 2, 3, 4..."""
    unique = max_side - min_side + 1 >= count
    return draw(
        st.lists(st.integers(min_side, max_side), min_size=count, max_size=count, unique=unique)
    )


@st.composite
def matmul_shapes(
    draw: st.DrawFn,
    *,
    kinds: tuple[str, ...] = MATMUL_KINDS,
    max_batch_dims: int = 2,
    min_side: int = 2,
    max_side: int = 6,
) -> MatmulShapes:
    """Operands of a valid ``matmul``: 2-D, batched, broadcast batch dims, 1-D on either side.
    m, k and n are distinct so a swapped dimension cannot go unnoticed."""
    kind = draw(st.sampled_from(kinds))
    m, k, n = distinct_sides(draw, 3, min_side=min_side, max_side=max_side)
    if kind == "2d":
        a, b = (m, k), (k, n)
    elif kind == "dot":
        a, b = (k,), (k,)
    elif kind == "vec-mat":
        batch = draw(shapes(min_dims=0, max_dims=max_batch_dims, max_side=3, distinct=False))
        a, b = (k,), (*batch, k, n)
    elif kind == "mat-vec":
        batch = draw(shapes(min_dims=0, max_dims=max_batch_dims, max_side=3, distinct=False))
        a, b = (*batch, m, k), (k,)
    elif kind == "batched":
        batch = draw(shapes(min_dims=1, max_dims=max_batch_dims, max_side=3, distinct=False))
        a, b = (*batch, m, k), (*batch, k, n)
    else:
        batches = draw(
            hnp.mutually_broadcastable_shapes(
                num_shapes=2, min_dims=1, max_dims=max_batch_dims, min_side=1, max_side=3
            )
        )
        a, b = (*batches.input_shapes[0], m, k), (*batches.input_shapes[1], k, n)
    event(f"matmul:{kind}")
    return MatmulShapes(a, b, kind)


class Reduction(NamedTuple):
    """Static arguments of one reduction."""

    axis: int | tuple[int, ...] | None
    keepdims: bool


@st.composite
def reductions(draw: st.DrawFn, shape: Shape) -> Reduction:
    """``axis`` (None, int, negative int or tuple) and ``keepdims`` valid for ``shape``. One in
    eight is the empty tuple, which reduces over no axis (NumPy: the array itself, converted;
    ``var`` of one element each): a frontend that read ``axis=()`` as "every axis", as
    PyTorch's ``dim=()`` was, survived 60 s sessions while no reduction drew it. Another one
    in eight, where ``shape`` has extents of 1, reduces over those alone (one element a
    result, nothing to combine, the axes still dropped): a frontend that took such a
    reduction for one over no axis, keeping its unit dims, survived 60 s sessions (1
    reduction in 80 drew it). Half the tuples of a shape of three dims or more reduce two or
    more axes but not all."""
    ndim = len(shape)
    units = [axis for axis, extent in enumerate(shape) if extent == 1]
    kinds = ["int", "none", "tuple"] if ndim else ["none"]
    face = uniform(draw, range(8))
    if face == 7:
        kind = "empty"
    elif face == 6 and units:
        kind = "unit"
    else:
        kind = draw(st.sampled_from(kinds))
    axis: int | tuple[int, ...] | None
    if kind == "none":
        axis = None
    elif kind == "empty":
        axis = ()
    elif kind == "unit":
        axis = units[0] if len(units) == 1 else tuple(units)
    elif kind == "int":
        axis = draw(st.integers(-ndim, ndim - 1))
    elif ndim >= 3 and uniform(draw, (False, True)):
        # Half the tuples of a 3-d or wider shape: two or more axes, not all of them (a mean or
        # var that divided by the whole size, where only the reduced extents count, survived
        # 60 s sessions: of 122 random reductions none reduced such a tuple), each axis written
        # as a negative one time in three.
        size = draw(st.integers(2, ndim - 1))
        chosen = draw(st.permutations(range(ndim)))[:size]
        axis = tuple(a - ndim if uniform(draw, (False, False, True)) else a for a in chosen)
    else:
        axis = draw(hnp.valid_tuple_axes(ndim, min_size=1))
    keepdims = draw(st.booleans())
    named = (axis,) if isinstance(axis, int) else axis or ()
    negative = min(named, default=0) < 0
    event(f"reduce:{kind}{'-negative' if negative else ''}{'-keepdims' if keepdims else ''}")
    return Reduction(axis, keepdims)


def _nonempty(item: slice, extent: int) -> slice:
    """``item``, or the nearest slice with its step selecting something of ``extent``."""
    start, stop, step = item.start, item.stop, item.step
    for candidate in (
        slice(start, stop, step),
        slice(start, None, step),
        slice(None, stop, step),
        slice(None, None, step),
    ):
        if len(range(*candidate.indices(extent))):
            return candidate
    return slice(None)


def _edged(draw: st.DrawFn, index: int, extent: int) -> int:
    """``index``, or (half the time, shrinking toward ``index``) an end of its axis: ``-extent``,
    ``-1``, ``0`` or ``extent - 1``, where a bounds check or the normalization of a negative
    index is off by one (a check that took ``-extent`` for out of bounds rejected ``x[-3]`` of
    3 rows: 11 of 160 programs starting with an index showed it, 14 of 160 with the ends)."""
    choice = draw(st.integers(0, 7))
    if choice < 4:
        return index
    edge = (-extent, -1, 0, extent - 1)[choice - 4]
    if edge != index:
        event("index:edge")
    return edge


def _newaxis_added(
    draw: st.DrawFn, shape: Shape, key: tuple[Any, ...], max_dims: int, allow: bool
) -> tuple[Any, ...]:
    """``key``, or (half the time, where the result has room for an axis) ``key`` with a None
    at a drawn place: Hypothesis's basic indices hold one in 7% of keys, seldom past the
    first place, and the strided keys none, so a new axis put in front of the result
    (``x[:, None]`` as ``x[None]``) went unseen by 60 s sessions. One new axis in three is
    NumPy's other spelling, a Python ``True`` (an index of a 0-d boolean array: with an int
    beyond a slice it is an advanced index, and the two move to the front, ``x[1, :, True]``
    of a (2, 3, 4) is (1, 3, 4), ``x[1, :, None]`` (3, 1, 4)). The compiler refuses it (a
    documented limitation: the program model discards the draw); where its rule takes it, the
    case is judged (a frontend that read ``True`` as the int 1 went unseen: no key held one)."""
    if not allow or np.empty(shape)[key].ndim >= max_dims or not uniform(draw, (False, True)):
        return key
    place = draw(st.integers(0, len(key)))
    new = True if draw(st.integers(0, 2)) == 2 else None  # shrinks toward None
    key = (*key[:place], new, *key[place:])
    np.empty(shape)[key]  # valid in NumPy; raises loudly if not
    if new is True:
        event("index:bool")
    return key


@st.composite
def slices(
    draw: st.DrawFn,
    shape: Shape,
    *,
    max_dims: int | None = None,
    allow_newaxis: bool = True,
    allow_ellipsis: bool = True,
) -> tuple[Any, ...]:
    """A nontrivial static basic index for ``shape``: slices with any steps (negative, and
    extents that are not a multiple of the step), negative indices, ints, None and Ellipsis in
    any position, never selecting an empty array. Always a tuple."""
    if max_dims is None:
        max_dims = len(shape) + 1
    flavour = draw(st.integers(0, 3)) if shape else 3
    if flavour == 0:
        return _newaxis_added(draw, shape, draw(strided_keys(shape)), max_dims, allow_newaxis)
    if flavour == 1 and len(shape) >= 2 and min(shape) >= 1:
        key = draw(unit_step_keys(shape))
        return _newaxis_added(draw, shape, key, max_dims, allow_newaxis)
    raw = draw(
        hnp.basic_indices(
            shape, max_dims=max_dims, allow_newaxis=allow_newaxis, allow_ellipsis=allow_ellipsis
        ).filter(lambda k: k != () and k is not Ellipsis)
    )
    key = raw if isinstance(raw, tuple) else (raw,)
    # Align items with dimensions to repair slices hypothesis may make empty or reversed.
    fixed: list[Any] = []
    consuming = sum(takes_a_dim(i) for i in key)
    dim = 0
    trivial = True
    for item in key:
        if item is Ellipsis:
            dim += len(shape) - consuming
        elif isinstance(item, slice):
            item = _nonempty(item, shape[dim])
            trivial &= item.indices(shape[dim]) == (0, shape[dim], 1)
            dim += 1
        else:
            trivial = False
            if item is not None:  # an int: half of them at an end of the axis
                item = _edged(draw, item, shape[dim])
            dim += takes_a_dim(item)
        fixed.append(item)
    key = tuple(fixed)
    if trivial:
        if not shape:
            key = (None,)
        else:
            # Shrinks to taking the first element of the leading axis.
            key = (draw(st.integers(-shape[0], shape[0] - 1)),)
    np.empty(shape)[key]  # by construction valid in NumPy; raises loudly if not
    key = _newaxis_added(draw, shape, key, max_dims, allow_newaxis)
    kinds = sorted({type(i).__name__ if i is not Ellipsis else "ellipsis" for i in key})
    event(f"index:{'+'.join(kinds)}")
    return key


@st.composite
def unit_step_keys(draw: st.DrawFn, shape: Shape) -> tuple[Any, ...]:
    """Integer indices next to slices that take one element with a step larger than one
    (``x[::3, 0]`` where the first extent is at most 3): rank-reducing views with a non-unit
    step on a size-1 dim, where MLIR cannot always tell which unit dims an index dropped (the
    compiler's workaround ``subview-rank-reduction``). Needs two or more non-empty axes."""
    rank = len(shape)
    one = draw(st.integers(0, rank - 1))  # shrinks towards x[::k, i]
    index = draw(st.integers(0, rank - 2))
    index += index >= one
    kinds = [draw(st.sampled_from(["all", "int", "one"])) for _ in range(rank)]
    kinds[one], kinds[index] = "one", "int"
    key: list[Any] = []
    for extent, kind in zip(shape, kinds, strict=True):
        if kind == "int":
            key.append(draw(st.integers(-extent, extent - 1)))
        elif kind == "all":
            key.append(slice(None))
        else:
            start = draw(st.integers(0, extent - 1))
            backwards = draw(st.booleans())
            least = max(2, start + 1 if backwards else extent - start)  # one element only
            step = draw(st.integers(least, least + 2))
            key.append(slice(start, None, -step) if backwards else slice(start or None, None, step))
    np.empty(shape)[tuple(key)]  # by construction valid in NumPy; raises loudly if not
    negative = any(isinstance(k, slice) and (k.step or 1) < 0 for k in key)
    event("index:unit-step" + ("-negative" if negative else ""))
    return tuple(key)


@st.composite
def strided_keys(draw: st.DrawFn, shape: Shape) -> tuple[slice, ...]:
    """A slice on every axis, with offsets and steps in both directions: what strided and
    reversed views are made of (extents rarely a multiple of the step)."""
    key = []
    for extent in shape:
        step = draw(st.sampled_from([1, 2, -1, 3, -2, -3]))
        offset = draw(st.integers(0, max(0, extent - 1)))
        if step > 0:
            key.append(slice(offset or None, None, step))
        else:
            key.append(slice(extent - 1 - offset if offset else None, None, step))
    if all(k.indices(e) == (0, e, 1) for k, e in zip(key, shape, strict=True)):
        key[-1] = slice(None, None, -1)
    event("index:strided" + ("-negative" if any(k.step < 0 for k in key) else ""))
    return tuple(key)


@st.composite
def permutations(draw: st.DrawFn, rank: int, *, allow_identity: bool = False) -> tuple[int, ...]:
    """A permutation of ``range(rank)``; not the identity unless rank < 2 or allowed.
    Shrinks toward swapping the last two axes."""
    perm = tuple(draw(st.permutations(range(rank))))
    if not allow_identity and rank >= 2 and perm == tuple(range(rank)):
        perm = (*range(rank - 2), rank - 1, rank - 2)
    return perm


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _split_merges(shape: Shape) -> list[Shape]:
    """Reshapes of ``shape`` (same rank) that split one dimension p*q and merge a part with the
    next one: (.., p*q, r, ..) -> (.., p, q*r, ..) or (.., p*q*r/..)."""
    found = []
    for i in range(len(shape) - 1):
        a, b = shape[i], shape[i + 1]
        for p in _divisors(a)[1:-1]:  # a = p * q, both > 1
            found.append((*shape[:i], p, (a // p) * b, *shape[i + 2 :]))
        for q in _divisors(b)[1:-1]:  # b = q * r: (a*q, r)
            found.append((*shape[:i], a * q, b // q, *shape[i + 2 :]))
    return found


def reshape_sources(shape: Shape, max_dims: int = 4) -> dict[str, list[Shape]]:
    """The shapes a reshape to ``shape`` can start from, by what the reshape does: "regroup"
    (as many dims, other extents: (4, 6) -> (2, 12)), "merge" (two neighbours into one),
    "split" (one into two neighbours), "units" (a unit dim in or out); none of more than
    ``max_dims`` dims. A kernel reads a reshaped operand through its own map (a
    fused reshape), so each is a layout of its own: a fusion that took every reshape of one
    rank for the identity, or every unit dim as trailing, is wrong on that form alone."""
    rank = len(shape)
    forms: dict[str, list[Shape]] = {"regroup": _split_merges(shape) if 0 not in shape else []}
    forms["merge"] = [
        (*shape[:i], p, extent // p, *shape[i + 1 :])
        for i, extent in enumerate(shape)
        for p in _divisors(extent)[1:-1]
        if rank < max_dims
    ]
    forms["split"] = [
        (*shape[:i], shape[i] * shape[i + 1], *shape[i + 2 :]) for i in range(rank - 1)
    ]
    units = [(*shape[:i], 1, *shape[i:]) for i in range(rank + 1)] if rank < max_dims else []
    units += [(*shape[:i], *shape[i + 1 :]) for i, e in enumerate(shape) if e == 1 and rank > 1]
    forms["units"] = units
    return {form: sorted(set(found)) for form, found in forms.items() if found}


@st.composite
def reshapes(
    draw: st.DrawFn, shape: Shape, *, max_dims: int = 4, allow_minus_one: bool = True
) -> tuple[int, ...]:
    """A new shape with the same size: a factorization, sometimes one that splits a dimension
    and merges part of it with its neighbour in the same call, sometimes with one unknown
    dimension (-1, or another negative value)."""
    size = math.prod(shape)
    split_merge = _split_merges(shape)
    if split_merge and len(shape) <= max_dims and draw(st.integers(0, 2)) == 0:
        new = draw(st.sampled_from(split_merge))
        event("reshape:split-merge")
        if allow_minus_one and draw(st.booleans()):
            position = draw(st.integers(0, len(new) - 1))
            new = (*new[:position], draw(_unknown()), *new[position + 1 :])
        return new
    rank = draw(st.integers(1, max_dims))
    remaining = size
    sides = []
    for _ in range(rank - 1):
        side = draw(st.sampled_from(_divisors(remaining)))
        sides.append(side)
        remaining //= side
    sides.append(remaining)
    sides = draw(st.permutations(sides))
    new = tuple(sides)
    if new == tuple(shape) and len(shape) != 1:
        new = (size,)
    if allow_minus_one and draw(st.booleans()):
        position = draw(st.integers(0, len(new) - 1))
        new = (*new[:position], draw(_unknown()), *new[position + 1 :])
        event("reshape:minus-one")
    return new


@st.composite
def _unknown(draw: st.DrawFn) -> int:
    """The unknown dimension of a reshape target: -1, or another negative value, which NumPy
    takes as the unknown dimension too (a rule that accepts only -1 rejects a valid program),
    drawn evenly (``uniform``): ``sampled_from([-1, -1, -1, -2, -7])`` leaned to -1, and a rule
    taking -1 alone survived a 60 s session of 190 cases)."""
    return uniform(draw, (-1, -2, -7))


@dataclass(frozen=True)
class AttentionConfig:
    """One attention block's sizes: T tokens, C = H * D channels, H heads of width D."""

    length: int
    width: int
    heads: int
    head_dim: int
    dtype: str
    weight_scale: float


@st.composite
def attention_configs(
    draw: st.DrawFn,
    *,
    max_length: int = 8,
    max_heads: int = 4,
    max_head_dim: int = 6,
    dtypes: tuple[str, ...] = ("float32", "float64"),
) -> AttentionConfig:
    """T, C, H with C % H == 0; T, C and D = C / H pairwise distinct (H >= 2 makes C != D) so a
    confused dimension changes a shape."""
    heads = draw(st.integers(2, max_heads))
    head_dim = draw(st.integers(2, max_head_dim))
    width = heads * head_dim
    lengths = [t for t in range(2, max_length + 1) if t not in (width, head_dim)]
    length = draw(st.sampled_from(lengths))
    dtype = draw(st.sampled_from(dtypes))
    scale = draw(st.sampled_from([0.02, 0.1, 0.5, 1.0]))
    event(f"attention:heads={heads}")
    return AttentionConfig(length, width, heads, head_dim, dtype, scale)


__all__ = [
    "coin",
    "MATMUL_KINDS",
    "SHAPE_REGIMES",
    "VECTOR_SIDES",
    "AttentionConfig",
    "MatmulShapes",
    "Reduction",
    "attention_configs",
    "broadcastable_shapes",
    "broadcasts_onto",
    "distinct_sides",
    "dtypes",
    "float_dtypes",
    "matmul_shapes",
    "mutually_broadcastable_shapes",
    "permutations",
    "reductions",
    "reshape_sources",
    "reshapes",
    "shapes",
    "slices",
    "strided_keys",
    "unit_step_keys",
    "valid_tuple_axes",
]
