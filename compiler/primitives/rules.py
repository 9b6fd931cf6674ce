"""NumPy 2's result rules, implemented once: shapes by NumPy's rules, dtypes by asking NumPy.

Both the compiler's frontend (on traced tensors) and the harness's program model (on declared
types) decide result shapes, dtypes and errors here, so the two can never disagree. Result dtypes
are not re-derived by hand: NumPy itself is asked, on 0-d stand-ins of the operand dtypes (Python
scalars stay weak, NumPy scalars and arrays stay strong), so NEP 50 promotion holds by
construction. Errors carry NumPy's classes and say what is wrong.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..dtypes import BOOL, SUPPORTED_DTYPES
from ..errors import InvalidIndex, UnsupportedFeature

AxisError = np.exceptions.AxisError


@dataclass(frozen=True)
class ArrayType:
    """The static type of an array value: its shape and NumPy dtype."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)


def is_scalar(value: Any) -> bool:
    """A Python number (weak under NEP 50) or a NumPy scalar (strong)."""
    return isinstance(value, (bool, int, float, complex, np.generic))


def array_type(value: Any) -> ArrayType:
    """The ArrayType of anything with ``shape`` and ``dtype`` (a traced tensor, a declared type)."""
    return ArrayType(tuple(value.shape), np.dtype(value.dtype))


Operand = Any  # an ArrayType-like value (``shape``, ``dtype``) or a scalar


def arrays(operands: Sequence[Operand]) -> list[ArrayType]:
    return [array_type(v) for v in operands if not is_scalar(v)]


def stand_in(value: Operand) -> Any:
    """What NumPy sees when it decides a result dtype: a 0-d array of an array's dtype, holding
    0 (an ``np.empty`` one held whatever its memory did: an int32 power of two of them raised
    NumPy's "Integers to negative integer powers" one time in three, instead of the compiler's
    UnsupportedFeature)."""
    if is_scalar(value):
        return value
    return np.zeros((), np.dtype(value.dtype))


def numpy_dtype(fn: Callable[..., Any], operands: Sequence[Any], what: str) -> np.dtype:
    """Ask NumPy for the result dtype of ``fn`` on ``operands`` (stand-ins already made); its
    errors are ours, and a result dtype the compiler lacks is a known limitation."""
    with np.errstate(all="ignore"):
        try:
            result = fn(*operands)
        except np.exceptions.DTypePromotionError as error:
            raise TypeError(f"{what}: {error}") from error
        except (TypeError, OverflowError) as error:
            raise type(error)(f"{what}: {error}") from error
    dtype = np.asarray(result).dtype
    if dtype not in SUPPORTED_DTYPES:
        raise UnsupportedFeature(f"{what} with a result of dtype {dtype} (NumPy's promotion)")
    return dtype


def result_dtype(fn: Callable[..., Any], operands: Sequence[Operand], what: str) -> np.dtype:
    """``numpy_dtype`` of ``fn`` on the stand-ins of ``operands``."""
    return numpy_dtype(fn, [stand_in(v) for v in operands], what)


def broadcast_shapes(*shapes: tuple[int, ...], what: str = "broadcast") -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes``, or NumPy's ValueError naming them."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError as error:
        listing = " ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"{what}: operands could not be broadcast together: {listing}") from error


def require_array(value: Operand, what: str) -> ArrayType:
    if is_scalar(value):
        raise TypeError(f"{what}: expected a traced tensor, got the scalar {value!r}")
    return array_type(value)


def require_one_array(operands: Sequence[Operand], what: str) -> list[ArrayType]:
    found = arrays(operands)
    if not found:
        raise TypeError(f"{what}: at least one operand must be a traced tensor")
    return found


# --------------------------------------------------------------------------------------------
# Static integer arguments: axes, shapes


def static_int(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}: expected an integer, got {value!r}")
    return operator.index(value)


def shape_argument(shape: Any, what: str) -> tuple[int, ...]:
    """A shape given as an int or a sequence of ints."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        return (int(shape),)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{what}: shape must be a tuple of integers, got {type(shape).__name__}")
    out = []
    for item in shape:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, np.integer)):
            raise TypeError(f"{what}: shape entries must be integers, got {item!r}")
        out.append(int(item))
    return tuple(out)


def keepdims_flag(keepdims: Any, what: str) -> bool:
    """A reduction's ``keepdims`` as NumPy 2 reads it: any integer (``True``, ``1``,
    ``np.int64(2)``: ``operator.index``), not a float nor a NumPy bool, which NumPy refuses."""
    try:
        return bool(operator.index(keepdims))
    except TypeError:
        name = type(keepdims).__name__
        raise TypeError(f"{what}: keepdims must be an integer or a bool, not {name}") from None


def normalize_axes(axis: Any, ndim: int, what: str, ordered: bool = True) -> tuple[int, ...]:
    """Axes as non-negative ints: sorted for reductions (``(1, 0)`` reduces what ``(0, 1)``
    does), in the given order for a permutation. NumPy's AxisError when out of range."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, list):
        raise TypeError(
            f"{what}: axis must be an int or a tuple; "
            "'list' object cannot be interpreted as an integer"
        )
    if not is_scalar(axis) and not isinstance(axis, tuple):
        raise TypeError(f"{what}: axis must be a static integer, not {type(axis).__name__}")
    items = tuple(axis) if isinstance(axis, tuple) else (axis,)
    for item in items:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, np.integer)):
            raise TypeError(f"{what}: axis must be an integer or a tuple of integers, got {axis!r}")
    try:
        axes = normalize_axis_tuple(tuple(int(i) for i in items), ndim, "axis")
    except AxisError as error:
        raise AxisError(f"{what}: {error}") from None
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None
    return tuple(sorted(axes)) if ordered else tuple(axes)


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reshape_shape(shape: tuple[int, ...], new_shape: Any, what: str = "reshape") -> tuple[int, ...]:
    """``np.reshape``'s result shape: at most one unknown dimension, the element count preserved.
    NumPy takes any negative entry as the unknown one, not only ``-1`` (``reshape(-2, 3)`` of a
    (2, 3) array is (2, 3)), and rejects two of them whatever their values."""
    size = math.prod(shape)
    new = list(shape_argument(new_shape, what))
    unknown = [i for i, d in enumerate(new) if d < 0]
    if len(unknown) > 1:
        raise ValueError(f"{what}: can only specify one unknown dimension")
    if unknown:
        known = math.prod(d for i, d in enumerate(new) if i != unknown[0])
        if known == 0 or size % known:
            raise ValueError(f"{what}: cannot reshape array of size {size} into shape {tuple(new)}")
        new[unknown[0]] = size // known
    if math.prod(new) != size:
        raise ValueError(f"{what}: cannot reshape array of size {size} into shape {tuple(new)}")
    if 0 in new:
        raise UnsupportedFeature(f"zero-size result of shape {tuple(new)} ({what})")
    return tuple(new)


def permutation(axes: Any, ndim: int, what: str = "transpose") -> tuple[int, ...]:
    """``np.transpose``'s axes: ``None`` reverses; otherwise a permutation of all the dims."""
    if axes is None:
        return tuple(reversed(range(ndim)))
    items = shape_argument(axes, f"{what} axes")
    if len(items) != ndim:
        raise ValueError(f"{what}: axes {items} don't match array of rank {ndim}")
    perm = normalize_axes(items, ndim, what, ordered=False)
    if len(set(perm)) != len(perm):
        raise ValueError(f"{what}: repeated axis in transpose axes {items}")
    return perm


def matmul_shape(a: Operand, b: Operand) -> tuple[int, ...]:
    """``np.matmul``'s result shape (1-D operands, broadcast batch dimensions), with NumPy's
    errors for scalars, 0-d arrays and mismatched core dimensions."""
    for position, operand in enumerate((a, b)):
        if is_scalar(operand):
            raise ValueError(
                f"matmul: Input operand {position} does not have enough dimensions "
                "(scalars are not allowed; use *)"
            )
        if len(operand.shape) == 0:
            raise ValueError(
                f"matmul: Input operand {position} does not have enough dimensions (it is 0-d)"
            )
    return matmul_result_shape(tuple(a.shape), tuple(b.shape))


def matmul_result_shape(sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, ...]:
    """``np.matmul``'s result shape for operand shapes of rank >= 1."""
    if not sa or not sb:
        raise ValueError(f"matmul: operands must be at least 1-D, got {sa} and {sb}")
    left = (1, *sa) if len(sa) == 1 else sa
    right = (*sb, 1) if len(sb) == 1 else sb
    if left[-1] != right[-2]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
            f"(size {right[-2]} is different from {left[-1]}): shapes {sa} @ {sb}"
        )
    batch = broadcast_shapes(left[:-2], right[:-2], what="matmul batch dimensions")
    return batch + ((left[-2],) if len(sa) > 1 else ()) + ((right[-1],) if len(sb) > 1 else ())


def matmul_dtype(a: Operand, b: Operand) -> np.dtype:
    dtype = numpy_dtype(
        lambda x, y: np.matmul(x[None, None], y[None, None]), [stand_in(a), stand_in(b)], "matmul"
    )
    if dtype == BOOL:
        raise UnsupportedFeature("matmul of boolean tensors")
    return dtype


# --------------------------------------------------------------------------------------------
# Static basic indexing


@dataclass(frozen=True)
class IndexPlan:
    """Static basic indexing as a strided slice of every dim (``offsets`` is the first element
    taken, ``sizes`` how many, ``strides`` the step, negative to walk backwards),
    the dims an integer index drops (``kept`` False), and the final shape with the ``None``s."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    kept: tuple[bool, ...]
    shape: tuple[int, ...]

    def is_identity(self, shape: tuple[int, ...]) -> bool:
        return self.sizes == tuple(shape) and not any(self.offsets) and all(self.kept)

    @property
    def sliced_shape(self) -> tuple[int, ...]:
        """The shape after the slice, before ``None`` dims are inserted."""
        return tuple(s for s, k in zip(self.sizes, self.kept, strict=True) if k)


def index_plan(shape: tuple[int, ...], index: Any) -> IndexPlan:
    """Plan ``x[index]`` for slices (any nonzero step), ints, None and Ellipsis; a negative
    stride walks its dimension backwards from its offset."""
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if isinstance(item, (np.ndarray, list)) or (
            hasattr(item, "shape") and hasattr(item, "dtype") and not is_scalar(item)
        ):
            raise UnsupportedFeature("advanced (array) indexing")
        if isinstance(item, (bool, np.bool_)):
            raise UnsupportedFeature("boolean scalar indexing")
        if not (item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer))):
            raise InvalidIndex(
                "only integers, slices (`:`), ellipsis (`...`) and None are valid indices, "
                f"got {item!r}"
            )
    if sum(item is Ellipsis for item in items) > 1:
        raise InvalidIndex("an index can only have a single ellipsis ('...')")
    ndim = len(shape)
    consuming = sum(item is not None and item is not Ellipsis for item in items)
    if consuming > ndim:
        raise InvalidIndex(
            f"too many indices for array: array is {ndim}-dimensional, "
            f"but {consuming} were indexed"
        )
    expanded: list[Any] = []
    for item in items:
        if item is Ellipsis:
            expanded.extend([slice(None)] * (ndim - consuming))
        else:
            expanded.append(item)
    if not any(item is Ellipsis for item in items):
        expanded.extend([slice(None)] * (ndim - consuming))

    offsets, sizes, strides, kept, final = [], [], [], [], []
    dim = 0
    for item in expanded:
        if item is None:
            final.append(1)
            continue
        extent = shape[dim]
        if isinstance(item, slice):
            for part in (item.start, item.stop, item.step):
                if part is not None and (
                    isinstance(part, (bool, np.bool_)) or not isinstance(part, (int, np.integer))
                ):
                    raise TypeError(f"slice indices must be integers or None, got {part!r}")
            if item.step is not None and item.step == 0:
                raise ValueError("slice step cannot be zero")
            start, stop, step = item.indices(extent)
            count = len(range(start, stop, step))
            if count == 0:
                raise UnsupportedFeature(
                    f"empty slice {item} of a dimension of size {extent} (zero-size result)"
                )
            offsets.append(start)
            sizes.append(count)
            strides.append(step)
            kept.append(True)
            final.append(count)
        else:
            position = int(item)
            if not -extent <= position < extent:
                raise InvalidIndex(
                    f"index {position} is out of bounds for axis {dim} with size {extent}"
                )
            offsets.append(position % extent)
            sizes.append(1)
            strides.append(1)
            kept.append(False)
        dim += 1
    return IndexPlan(tuple(offsets), tuple(sizes), tuple(strides), tuple(kept), tuple(final))


__all__ = [
    "ArrayType",
    "AxisError",
    "IndexPlan",
    "array_type",
    "arrays",
    "broadcast_shapes",
    "index_plan",
    "is_scalar",
    "matmul_dtype",
    "matmul_result_shape",
    "matmul_shape",
    "normalize_axes",
    "numpy_dtype",
    "permutation",
    "reduced_shape",
    "require_array",
    "require_one_array",
    "reshape_shape",
    "result_dtype",
    "shape_argument",
    "stand_in",
    "static_int",
]
