"""The references a backend is judged against, all evaluating the *same* program definition.

- ``numpy``: eager NumPy in the program's own dtypes (the semantics we promise);
- ``truth``: the program evaluated by NumPy in extended precision (``np.longdouble``: every float
  input and float cast widened), rounded to float64 — the yardstick of the error model; integer
  parts stay exact;
- ``perturbed:1`` .. ``perturbed:4``: NumPy in the program's own dtypes with every float result
  of every operation moved one ulp up or down at random, sums in other orders: four correct
  evaluations that round differently, whose spread from the truth says how ill-conditioned
  each element is (``perturbed_reference``); ``perturbed:flip``, the other side of every
  decision no evaluation settles (``decisions``), and ``perturbed:coupled``, the runs' largest
  spread over every output element an undetermined value reaches (``undetermined``);
- ``jax``: ``jax.jit`` of the program over ``jax.numpy`` with x64 enabled (an independent
  implementation; XLA's backend optimizations off, ``XLA_OPTIONS``). Where JAX promotes
  differently from NumPy 2 (int32 meeting float32 is float64 in NumPy, float32 in JAX; the
  float results of int inputs), each operation's operands are cast to the dtype NumPy computes
  it in, so JAX computes in NumPy's dtypes; such a reference is marked ``adapted``.
"""

from __future__ import annotations

import ctypes
import hashlib
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from strategies.model import finfo, is_float

if TYPE_CHECKING:
    from ..case import Case


@dataclass
class Reference:
    """A reference's answer: an array, or the exception it raised."""

    name: str
    output: np.ndarray | None = None
    error_type: str = ""
    message: str = ""
    error: BaseException | None = None
    adapted: bool = False  # JAX given NumPy's dtypes where its own promotion differs
    # NumPy cast a NaN, an infinity or an out-of-range float to an integer ("invalid value
    # encountered in cast"): that element is undefined (NumPy gives INT_MIN on x86, JAX 0).
    undefined_cast: bool = False
    #: ``perturbed:coupled``'s: the output elements any value may take, nan and inf included
    #: (``undetermined.coupled_reference``); None: none.
    unbounded: np.ndarray | None = None
    #: JAX's: is its answer right by the error model without it, judged as ``xla-cpu`` is
    #: (``differential.judge_jax``)? None: not judged yet.
    within_model: bool | None = None

    @property
    def ok(self) -> bool:
        return self.output is not None


def _evaluate(name: str, fn: Any, inputs: list[Any], watch_casts: bool = False) -> Reference:
    """``fn(*inputs)`` as a reference, floating-point warnings silenced; ``watch_casts``: they
    are recorded instead, to tell an undefined cast to an integer (``undefined_cast``)."""
    try:
        with warnings.catch_warnings(record=watch_casts) as caught:
            warnings.simplefilter("always" if watch_casts else "ignore")
            with np.errstate(all="warn" if watch_casts else "ignore"):
                out = fn(*inputs)
        reference = Reference(name, np.asarray(out))
        reference.undefined_cast = any("in cast" in str(w.message) for w in caught or ())
        return reference
    except Exception as error:  # noqa: BLE001 - a reference's failure is data for the oracles
        return Reference(name, None, type(error).__name__, str(error)[:2000], error)


class _Extended:
    """NumPy in extended precision: float casts go to ``np.longdouble`` (the x87 80-bit format
    here, 64-bit mantissa), so the truth of a float64 program is more precise than float64."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def astype(x: Any, dtype: Any, **_: Any) -> Any:
        dtype = np.dtype(dtype)
        return np.asarray(x).astype(np.longdouble if is_float(dtype) else dtype)

    # A reduction's float accumulator (``dtype=``) is extended too, as a float cast is: an
    # np.sum(x, dtype=np.float16) truth summed in float16 would carry float16's rounding.
    @staticmethod
    def sum(x: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        return np.sum(x, *args, dtype=_extended_accumulator(dtype), **kwargs)

    @staticmethod
    def mean(x: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        return np.mean(x, *args, dtype=_extended_accumulator(dtype), **kwargs)


def _extended_accumulator(dtype: Any) -> Any:
    return np.longdouble if dtype is not None and is_float(np.dtype(dtype)) else dtype


EXTENDED = _Extended()


def numpy_reference(case: Case) -> Reference:
    return _evaluate("numpy", case.function(np), case.inputs, watch_casts=True)


def truth_reference(case: Case) -> Reference:
    """The program on extended-precision inputs, rounded to float64 at the end."""
    widened = [a.astype(np.longdouble) if is_float(a.dtype) else a for a in case.inputs]
    ref = _evaluate("truth", case.function(EXTENDED), widened)
    if ref.ok and is_float(ref.output.dtype):
        with np.errstate(over="ignore"):  # beyond float64's range is inf, as it should be
            ref.output = ref.output.astype(np.float64)
    return ref


#: The perturbed evaluations per case (``perturbed_reference``); names ``perturbed:1``...
#: Their sums run first to last, last to first, in four interleaved lanes, and first to last
#: with each matmul product added by a fused multiply-add, as BLAS does (``SUM_ORDERS``); the
#: fifth first to last again, its results not moved (``UNMOVED``).
PERTURBED_RUNS = 5
SUM_ORDERS = ("forward", "reverse", "lanes", "fused")
#: The runs whose results are not moved: the order of their sums alone. Moves can undo what an
#: order does: a float32 ``std`` of 257 values near 8192 (a dense sweep), whose mean first to
#: last is three quarters of an ulp low, was moved an ulp up by the run that added first to last
#: (every move up), so no run had the sequential mean our loops compute, and every backend's
#: answer, 7.1e-6 off, was refused against an allowed 5.1e-6.
UNMOVED = (5,)
#: The runs whose every move goes one way (up: toward +inf), as directed rounding does; the
#: others move each result up or down at random. Random moves can undo each other: a mean moved
#: up by its sum and down by its division lands back on a constant row's value, so x - mean
#: stays 0 where any other order of the sum gives an ulp. A float64 layer norm of a row of five
#: -2.354517007149901 was exact in all four random runs (each ~50%), and cpu-vector's ulp,
#: times 1/sqrt(eps), was 4.7e-13 against an allowed 1.5e-13. Every step of a sum, a mean or a
#: variance is monotone, so a run moved one way moves the mean off the row for certain.
DIRECTED = {1: True, 2: False}


#: Primitive kinds whose evaluation is many roundings: perturbed inside, each arithmetic step.
INTERNALLY_ROUNDED = ("composite", "reduction", "matmul")

#: The largest product tensor (elements) a perturbed matmul materializes (``_unfused_matmul``).
UNFUSED_MATMUL_LIMIT = 1 << 22


def running_dtype(dtype: Any) -> np.dtype:
    """The dtype a sum of ``dtype`` values runs in: float16 and bfloat16 add up in float32 and
    round once, as NumPy's own loops do; every other dtype in itself."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


#: Float dtypes NumPy multiplies matrices of in its own loop (never BLAS), which sums from 0.0 in
#: float and whose products of halves are exact there: a zero it gives is 0.0 unless a negative
#: sum rounds to it, so the signs of its zeros are settled (``tolerance.signs_settled``) and the
#: perturbed matmuls of these dtypes start from 0.0 too.
UNBLASSED = ("float16",)


def _unfused_matmul(a: np.ndarray, b: np.ndarray, order: str = "forward") -> np.ndarray | None:
    """``a @ b`` as products, then their sum in ``order`` (``_sequential_sum``), as a loop nest
    adds them: another correct order, without the fused
    multiply-adds of NumPy's BLAS. Where products overflow to +inf and -inf, BLAS's FMA gives
    inf (the exact product stays finite inside an FMA) and a sum of rounded products nan: a
    float64 feedforward on values near 1e306 gave inf in NumPy and nan on cpu-loops, both
    correct. An integer or boolean operand meeting a float one is cast to the result dtype
    first, as NumPy does (an int32 @ float64 with products of +-inf: NumPy -inf, cpu-loops nan).
    None where NumPy's own matmul should run (no float result, too large)."""
    if a.ndim == 0 or b.ndim == 0:
        return None
    if not (is_float(a.dtype) and is_float(b.dtype)):
        try:
            dtype = np.result_type(a.dtype, b.dtype)
        except TypeError:  # no common dtype (ml_dtypes' bfloat16 with int32)
            return None
        if not is_float(dtype) or not (is_float(a.dtype) or is_float(b.dtype)):
            return None
        a, b = a.astype(dtype), b.astype(dtype)
    left = a[None, :] if a.ndim == 1 else a
    right = b[:, None] if b.ndim == 1 else b
    shape = np.broadcast_shapes(left.shape[:-2], right.shape[:-2])
    size = int(np.prod(shape)) * left.shape[-2] * left.shape[-1] * right.shape[-1]
    if size > UNFUSED_MATMUL_LIMIT or left.shape[-1] != right.shape[-2]:
        return None
    if order == "fused":
        out = _fused_matmul(left, right)
        if out is None:
            return None
    else:
        try:
            products = left[..., :, :, None] * right[..., None, :, :]
        except TypeError:  # a dtype without these loops: NumPy's matmul, unperturbed order
            return None
        out = _sequential_sum(products, order, axis=-2)
        if out is None:
            out = products.sum(axis=-2)
        if out.dtype.name in UNBLASSED:  # from 0.0: a sum of -0.0 products is 0.0 (the
            out = out + out.dtype.type(0)  # products are exact halves: no sum rounds to zero)
    if b.ndim == 1:
        out = out[..., 0]
    if a.ndim == 1:
        out = out[..., 0, :] if b.ndim > 1 else out[..., 0]
    return out


def _fused_matmul(left: np.ndarray, right: np.ndarray) -> np.ndarray | None:
    """``left @ right`` (both at least 2-D) as BLAS's fused multiply-adds compute it: each
    product kept unrounded (in a wider type: float64 holds a float32 product exactly, the x87
    long double a float64 one's range) and added to the running sum, first to last, with one
    rounding. Where products overflow to -inf and +inf, the FMAs give the sign of the first
    (-inf + 7.9e612 is -inf) where the exact sum is +inf and rounded products give nan: a
    float64 [3] @ [3, 5] of values near 2.8e306 was -inf on cpu-vector (BLAS), nan in NumPy
    and every other order, +inf in the truth (a 5-minute clean session, seed 11)."""
    dtype = np.result_type(left.dtype, right.dtype)
    if not is_float(dtype) or dtype.itemsize > 8:
        return None
    wide = np.dtype(np.longdouble) if dtype.itemsize == 8 else np.dtype(np.float64)
    try:
        lhs, rhs = left.astype(wide), right.astype(wide)
    except TypeError:
        return None
    running = running_dtype(dtype)
    shape = np.broadcast_shapes(left.shape[:-2], right.shape[:-2])
    start = 0.0 if dtype.name in UNBLASSED else -0.0  # NumPy's loop's start, or BLAS's
    acc = np.full((*shape, left.shape[-2], right.shape[-1]), start, running)
    for k in range(left.shape[-1]):
        term = lhs[..., :, k, None] * rhs[..., None, k, :]
        acc = (acc.astype(wide) + term).astype(running)
    return acc.astype(dtype)


def _sequential_sum(
    a: np.ndarray,
    order: str,
    axis: Any = None,
    dtype: Any = None,
    keepdims: bool = False,
    **rest: Any,
) -> np.ndarray | None:
    """``np.add.reduce`` in ``order`` (``SUM_ORDERS``): one running sum along the reduced
    elements, first to last or last to first, or four interleaved ones: another correct order
    than NumPy's pairwise one, whose error a vectorized or looping backend may have. Adding 0.1
    to partial sums of 2**52 loses it in one order and keeps it in another: a float64 mean of
    such values was 0.0012 in NumPy and 0.0 on cpu-vector, both correct. None where NumPy's own
    reduction should run (no float, empty, other arguments)."""
    if rest.get("initial", np._NoValue) is not np._NoValue or rest.get("where", True) is not True:
        return None
    if set(rest) - {"initial", "where"}:
        return None
    a = np.asarray(a)
    work = np.dtype(dtype) if dtype is not None else a.dtype
    if not is_float(work) or a.ndim == 0 or a.size == 0:
        return None
    if axis is None:
        axes = tuple(range(a.ndim))
    else:
        axes = tuple(np.lib.array_utils.normalize_axis_tuple(axis, a.ndim))
    if not axes:
        return None
    running = running_dtype(work)
    moved = np.moveaxis(a.astype(running, copy=False), axes, range(-len(axes), 0))
    flat = moved.reshape(moved.shape[: a.ndim - len(axes)] + (-1,))
    if order == "lanes":
        # Four interleaved running sums, then (0 + 2) + (1 + 3): a vectorized reduction's order.
        # A constant float64 row of five -2.00001 has a mean of exactly -2.00001 in either
        # running order and not in this one, so a layer norm of it was 4e-13 on cpu-vector
        # where the bound, measured on the other orders, allowed 1e-13 (-0.0 pads: exact).
        pad = (-flat.shape[-1]) % 4
        if pad:
            zeros = np.full(flat.shape[:-1] + (pad,), -0.0, flat.dtype)
            flat = np.concatenate([flat, zeros], axis=-1)
        lanes = flat.reshape(flat.shape[:-1] + (-1, 4))
        try:
            acc = np.add.accumulate(lanes, axis=-2)[..., -1, :]
        except TypeError:
            return None
        total = (acc[..., 0] + acc[..., 2]) + (acc[..., 1] + acc[..., 3])
    else:
        if order == "reverse":
            flat = flat[..., ::-1]
        try:
            total = np.add.accumulate(flat, axis=-1)[..., -1]
        except TypeError:  # a dtype without an accumulate loop: NumPy's own order
            return None
    if keepdims:
        total = np.expand_dims(total, tuple(sorted(axes)))
    return np.asarray(total).astype(work)


#: Ufuncs whose float results are exact in every correct evaluation (no rounding: a maximum, a
#: negation, a comparison): a perturbed run does not move them. A moved maximum made a softmax
#: of scores near 1e147 compute exp(x - max) = exp(+1 ulp of 1e147) = inf, then inf / inf: a
#: nan no correct evaluation gives, which would also have excused a backend's nan there.
EXACT_UFUNCS = frozenset(
    {
        np.maximum, np.minimum, np.fmax, np.fmin, np.negative, np.positive, np.absolute,
        np.sign, np.copysign, np.equal, np.not_equal, np.less, np.less_equal, np.greater,
        np.greater_equal, np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
        np.isnan, np.isinf, np.isfinite, np.floor, np.ceil, np.trunc, np.rint,
    }
)  # fmt: skip


def exact_primitive(prim: Any) -> bool:
    """Is every float result of this table entry exact (a layout op, a selection, a maximum, a
    negation: ``keeps`` "bounds", or values moved as they are)? Casts round, so they are not."""
    if prim.kind in ("layout", "select", "compare", "copy", "gather", "source"):
        return True
    return prim.keeps == "bounds" and prim.kind != "composite"


class _Rounding(np.ndarray):
    """An array whose every rounded ufunc result (arithmetic, matmul, sums; not the exact ones,
    ``EXACT_UFUNCS``) is passed through ``move``: NumPy's own code for a composite, evaluated
    with each rounding step perturbed; sums run in another order than pairwise (``order``:
    ``SUM_ORDERS``)."""

    order = "forward"

    @staticmethod
    def move(value: Any) -> Any:
        return value

    @staticmethod
    def spread(value: np.ndarray, bound: np.ndarray) -> np.ndarray:
        return value

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        plain = [i.view(np.ndarray) if isinstance(i, _Rounding) else i for i in inputs]
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(
                o.view(np.ndarray) if isinstance(o, _Rounding) else o for o in out
            )
        result = None
        if ufunc is np.matmul and method == "__call__" and out is None and len(plain) == 2:
            a, b = np.asarray(plain[0]), np.asarray(plain[1])
            result = _unfused_matmul(a, b, self.order)
            if result is not None and a.ndim and b.ndim:
                with np.errstate(over="ignore", invalid="ignore"):
                    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
                    # Each product's lowest bit is at least the product of its factors'.
                    rows = _lowest_bit(a, axis=-1, keepdims=True)
                    columns = _lowest_bit(b, axis=-2 if b.ndim > 1 else -1, keepdims=True)
                    quantum = rows * columns  # (..., m, n), as a @ b of 2-D operands
                    if b.ndim == 1:
                        quantum = quantum[..., 0]
                    if a.ndim == 1 and b.ndim > 1:
                        quantum = quantum[..., 0, :]
                result = self._reordered(result, magnitude, a.shape[-1], quantum)
        elif ufunc is np.add and method == "reduce" and out is None and len(plain) == 1:
            result = _sequential_sum(plain[0], self.order, **kwargs)
            if result is not None:
                terms = np.asarray(plain[0])
                axis, keepdims = kwargs.get("axis", 0), kwargs.get("keepdims", False)
                with np.errstate(over="ignore"):
                    magnitude = np.add.reduce(
                        np.abs(terms.astype(np.float64)), axis=axis, keepdims=keepdims
                    )
                quantum = _lowest_bit(terms, axis=axis, keepdims=keepdims)
                count = terms.size // max(magnitude.size, 1)
                result = self._reordered(result, magnitude, count, quantum)
        if result is None:
            result = getattr(ufunc, method)(*plain, **kwargs)
        if out is not None:  # moved in place: NumPy's own code may read ``out`` afterwards
            for given in kwargs["out"]:
                if isinstance(given, np.ndarray):
                    given[...] = self.move(given)
            return out[0] if len(out) == 1 else out
        if ufunc in EXACT_UFUNCS:
            return self._wrapped(result, exact=True)
        if isinstance(result, tuple):
            return tuple(self._wrapped(r) for r in result)
        return self._wrapped(result)

    def _reordered(
        self, total: np.ndarray, magnitude: np.ndarray, count: int, quantum: np.ndarray
    ) -> np.ndarray:
        """A sum of ``count`` terms whose absolute values add up to ``magnitude``, moved by up
        to ``spread_bound`` (``spread``): another order of its additions can be that far off.
        Where the terms cancel (by ``CANCELLATION`` or more), every order the runs take can
        agree by luck: the float32 sum
        of [-102.8, 5.3e36, -5.3e36, 1.2e-7, -1.2e-7] is 0 first to last, last to first, in
        NumPy's pairwise order and in four lanes, and 1.2e-7 in four lanes added up in turn
        (cpu-vector's), which a one-hour session reported against an allowed 4.6e-14. Not
        moved: a sum every order computes exactly (``quantum``, the lowest bit any term has:
        every partial sum is a multiple of it no larger than ``magnitude``, so representable
        where that is within the dtype's precision of it, as for [1, -3, 3, -1])."""
        total = np.asarray(total)
        if count < 3 or not is_float(total.dtype):  # two terms: one rounding in any order
            return total
        running = running_dtype(total.dtype)
        bits = int(finfo(running).nmant) + 1
        with np.errstate(over="ignore", invalid="ignore"):
            exact = np.asarray(magnitude <= np.ldexp(np.asarray(quantum, np.float64), bits))
            wide = total.astype(np.float64)
            cancelling = np.asarray(magnitude > CANCELLATION * np.abs(wide))
            bound = spread_bound(total.dtype, magnitude, count)
            keep = exact | ~cancelling | ~(np.isfinite(total) & np.isfinite(bound))
            if np.all(keep):  # nothing drawn: the other roundings' draws stay as they were
                return total
            moved = np.asarray(self.spread(wide, bound)).astype(total.dtype)
        return np.where(keep, total, moved)

    def _wrapped(self, value: Any, exact: bool = False) -> Any:
        moved = value if exact else self.move(value)
        return moved.view(type(self)) if isinstance(moved, np.ndarray) else moved


def _lowest_bit(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    """The value of the lowest set bit of any nonzero element along ``axis``: every element is
    a multiple of it (inf where all are zero; 0 where one is not finite: nothing is exact)."""
    x = np.asarray(x)
    if not is_float(x.dtype):
        x = x.astype(np.float64)
    wide = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        mantissa, exponent = np.frexp(np.where(np.isfinite(wide), wide, 0.0))
        whole = np.ldexp(mantissa, 53).astype(np.int64)  # the significand as an integer
        lowest = np.ldexp((whole & -whole).astype(np.float64), exponent - 53)
        lowest = np.where(wide == 0, np.inf, np.abs(lowest))
        lowest = np.where(np.isfinite(wide), lowest, 0.0)  # inf, nan: no quantum (never exact)
        return np.min(lowest, axis=axis, keepdims=keepdims)


#: How much a sum's terms must cancel (the sum of their magnitudes over the magnitude of the
#: sum) before a perturbed run moves it by its a priori bound (``_Rounding._reordered``). Below,
#: the runs' own orders are the measure: moving every sum, a layer norm's mean of values near 8
#: moved each deviation from it enough that a one-pass variance (E[x^2] - E[x]^2) passed.
CANCELLATION = 2.0**8


def spread_bound(dtype: np.dtype, magnitude: np.ndarray, count: int) -> np.ndarray:
    """How far another order may move a sum of ``count`` terms whose absolute values add up to
    ``magnitude``, as a perturbed run's share: the a priori bound of a sum in any order
    (``eps * log2(count) * magnitude``, eps of the running dtype: float32 for 16-bit sums) over
    the error model's ``FACTOR``, which multiplies what the runs show. Below a well-conditioned
    sum's rounding noise, where the bound is unchanged; it widens where the terms cancel."""
    from compiler.primitives import contraction_depth

    from ..oracles.tolerance import FACTOR

    running = running_dtype(dtype)
    scale = float(finfo(running).eps) * contraction_depth(count) / FACTOR
    with np.errstate(over="ignore", invalid="ignore"):
        return scale * np.asarray(magnitude, np.float64)


def perturbed_reference(
    case: Case, run: int, hook: Any = None, overrides: dict[str, Any] | None = None
) -> Reference:
    """The program in NumPy in its own dtypes, each finite nonzero float result of each rounding
    operation (inside composites, reductions and matmuls: of each of their steps; not the exact
    ones, a transpose or a maximum) moved one ulp up or down (every one up in run 1, down in
    run 2, ``DIRECTED``; at random in the others, seeded by the inputs and ``run``), every sum
    added up in another order (first to last, last to first, or in four interleaved lanes, by
    ``run``: ``SUM_ORDERS``, ``_sequential_sum``): a correct evaluation that rounds differently
    (``overrides``: as ``adapted``'s). NumPy's own error is the error model's measure of how hard
    an element is, and at one element it can be small by luck: for ``sin(exp(x))`` at ``x = 42.6``,
    ``exp`` is 3.2e18 with an ulp of 512, so any ulp of difference moves the sine anywhere in
    [-1, 1], yet NumPy happened to land near the truth and XLA's answer was rejected. Where an
    element is well-conditioned a perturbed run stays within an ulp or two of NumPy, so it
    widens nothing there. ``hook``: as ``adapted``'s (a trace of each node's value)."""
    from compiler import primitives

    digest = hashlib.sha256(f"perturbed:{run}".encode())
    for a in case.inputs:
        digest.update(np.ascontiguousarray(a).tobytes())
    rng = np.random.default_rng(int.from_bytes(digest.digest()[:8], "little"))

    direction = DIRECTED.get(run)

    def perturb(value: Any) -> Any:
        a = np.asarray(value)
        if not is_float(a.dtype) or a.size == 0 or run in UNMOVED:
            return value
        if direction is None:
            up = rng.integers(0, 2, a.shape).astype(bool)
        else:
            up = np.full(a.shape, direction)
        if a.dtype in (np.float16, np.float32, np.float64):
            moved = np.where(
                up, np.nextafter(a, a.dtype.type(np.inf)), np.nextafter(a, a.dtype.type(-np.inf))
            )
        else:  # bfloat16 (ml_dtypes): no nextafter
            step = np.where(up, 1.0, -1.0) * float(finfo(a.dtype).eps)
            moved = (a.astype(np.float64) * (1.0 + step)).astype(a.dtype)
        # Zeros stay: an exact result is exact in any correct evaluation (x - x is 0, and a
        # moved zero would make log(x - x) finite).
        return np.where(np.isfinite(a) & (a != 0), moved, a).astype(a.dtype)

    def reorder(value: np.ndarray, bound: np.ndarray) -> np.ndarray:
        # Half to all of the bound, either way: the largest of the runs' moves is what counts.
        sign = np.where(rng.integers(0, 2, np.shape(value)).astype(bool), 1.0, -1.0)
        return value + sign * rng.uniform(0.5, 1.0, np.shape(value)) * bound

    def perturbing(prim: Any) -> Any:
        rule = (overrides or {}).get(prim.name) or prim.evaluate
        if exact_primitive(prim):
            return rule  # a transpose, a maximum, a where: no rounding to move
        if prim.kind not in INTERNALLY_ROUNDED:
            return lambda xp, operands, attrs: perturb(rule(xp, operands, attrs))
        # A composite (or a multi-step reduction) is one op of the program but many roundings:
        # every arithmetic result inside it is moved instead (a float32 attention block whose
        # internals moved by an ulp moved one output element by up to 8.8e-5 while NumPy's
        # own error there was 3.2e-7: a correct backend was rejected).
        rounding = type(
            "Rounding",
            (_Rounding,),
            {
                "move": staticmethod(perturb),
                "spread": staticmethod(reorder),
                "order": SUM_ORDERS[(run - 1) % len(SUM_ORDERS)],
            },
        )

        def inside(xp: Any, operands: list[Any], attrs: dict[str, Any]) -> Any:
            wrapped = [o.view(rounding) if type(o) is np.ndarray else o for o in operands]
            return np.asarray(rule(xp, wrapped, attrs))

        return inside

    program = case.program
    rules = {n.op: perturbing(primitives.get(n.op)) for n in program.nodes}
    fn = adapted(program, np, as_numpy, rules, hook)
    return _evaluate(f"perturbed:{run}", fn, case.inputs)


def perturbed_outputs(refs: dict[str, Reference], shape: tuple[int, ...]) -> list[np.ndarray]:
    """The perturbed evaluations' outputs of ``shape`` (for the error model's local bound)."""
    return [
        r.output
        for name, r in refs.items()
        if name.startswith("perturbed:") and r.ok and r.output.shape == shape
    ]


_JAX_READY = False


def _jax() -> Any:
    global _JAX_READY
    import jax

    if not _JAX_READY:
        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        _JAX_READY = True
    return jax


def as_numpy(operand: Any, dtype: Any) -> Any:
    """``adapted``'s operand adapter for NumPy itself: NumPy's own promotion."""
    return operand


def adapted(
    program: Any,
    xp: Any,
    adapt: Any,
    overrides: dict[str, Any] | None = None,
    hook: Any = None,
) -> Any:
    """``fn(*inputs)`` evaluating ``program`` over ``xp``, each operation's operands first passed
    through ``adapt(operand, dtype)`` with the dtype NumPy 2 computes that operand in (the
    primitive table's one rule, ``Primitive.numpy_dtypes``; None where it has none);
    ``overrides`` replace some ops' evaluation (the spec oracle's independent composites);
    ``hook(index, operands, value)``, where given, sees each node's value and returns the one
    kept (``decisions``: traces, flipped decisions)."""
    from compiler import primitives
    from strategies.model import Const

    def fn(*args: Any) -> Any:
        values: list[Any] = []

        def get(arg: Any) -> Any:
            if isinstance(arg, Const):
                return arg.py()
            return args[arg.index] if arg.kind == "input" else values[arg.index]

        for node in program.nodes:
            prim = primitives.get(node.op)
            operands = [get(a) for a in node.args]
            types = [a.py() if isinstance(a, Const) else program.type_of(a) for a in node.args]
            wanted = prim.numpy_dtypes(types, node.type)
            operands = [adapt(o, d) for o, d in zip(operands, wanted, strict=True)]
            rule = (overrides or {}).get(node.op) or prim.evaluate
            value = rule(xp, operands, node.attrs)
            values.append(value if hook is None else hook(len(values), operands, value))
        return get(program.output)

    return fn


def _in_numpy_dtypes(program: Any, xp: Any) -> tuple[Any, list[bool]]:
    """``fn(*inputs)`` evaluating ``program`` over ``xp`` with every operation's operands cast
    to the dtype NumPy 2 computes it in (which the ``xla-cpu`` backend's graph follows too); the
    list says whether any cast changed a dtype."""
    changed: list[bool] = []

    def cast(value: Any, dtype: np.dtype | None) -> Any:
        if dtype is None:
            return value
        if isinstance(value, (bool, int, float)):
            weak = is_float(dtype) and isinstance(value, float)
            return value if weak else xp.asarray(value, dtype)
        if np.dtype(value.dtype) != dtype:
            changed.append(True)
            return value.astype(dtype)
        return value

    return adapted(program, xp, cast), changed


_JAX_CALLS = [0]
#: Every JAX evaluation of a case (this jax.jit reference, the spec oracle's independent
#: reference) compiles executables for its shapes, which JAX keeps; without clearing, a driver
#: grew by about 4 MB a case (200 varied cases: 60 -> 900 MB, measured when the spec oracle
#: still ran eager ops, one executable each; none of it Python objects).
CLEAR_JAX_EVERY = 20  # varied shapes: few cache hits to lose


def jax_for_a_case() -> Any:
    """JAX, ready, for one more case's evaluation: its caches are cleared every
    ``CLEAR_JAX_EVERY`` cases, and the freed memory handed back to the system (glibc keeps it
    otherwise: the driver's RSS stayed at its peak)."""
    jax = _jax()
    _JAX_CALLS[0] += 1
    if _JAX_CALLS[0] % CLEAR_JAX_EVERY == 0:
        jax.clear_caches()
        _trim()
    return jax


def _trim() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


#: How XLA compiles a reference (``compiled_once``): its backend optimizations off. A reference
#: needs correct code, not fast code, and they were about half of each compile (an 8x16
#: attention block: 411 -> 229 ms). The ``xla-cpu`` backend, which is under test, keeps them.
#: XLA's algebraic simplifier is off too: its rewrites are exact in the reals, not in IEEE
#: arithmetic (``x * float(mask)`` becomes ``select(mask, x, 0)``, so NaN times False is 0:
#: jax-ml/jax#12233; ``sqrt(abs(square(x)))`` is ``abs(x)`` past overflow: jax-ml/jax#37919),
#: and the spec oracle's independent reference reported that as a definition bug.
XLA_OPTIONS = {"xla_backend_optimization_level": 0, "xla_disable_hlo_passes": "algsimp"}


#: Executables of the latest programs (``compiled_once``), with what tracing noted.
_EXECUTABLES: OrderedDict[tuple, tuple[Any, list[Any]]] = OrderedDict()
EXECUTABLES_KEPT = 32


def compiled_once(fn: Any, args: Any, key: Any = None, notes: list[Any] | None = None) -> Any:
    """``jax.jit(fn)(*args)``, compiled with ``XLA_OPTIONS``. ``key`` names what ``fn`` computes
    (the program's digest and which evaluation of it): the same key with arguments of the same
    shapes and dtypes runs the executable compiled before, and ``notes``, the list tracing
    ``fn`` appends to, gets what it got then. Hypothesis draws new values for a program it has
    drawn before often (43% of the spec oracle's programs in a default minute), and an XLA
    compile costs 30-70 ms a program."""
    import jax

    signature = tuple((np.shape(a), str(np.asarray(a).dtype)) for a in args)
    found = _EXECUTABLES.get((key, signature)) if key is not None else None
    if found is None:
        noted = notes if notes is not None else []
        before = len(noted)
        executable = jax.jit(fn).lower(*args).compile(compiler_options=XLA_OPTIONS)
        found = (executable, list(noted[before:]))
        if key is not None:
            _EXECUTABLES[(key, signature)] = found
            while len(_EXECUTABLES) > EXECUTABLES_KEPT:
                _EXECUTABLES.popitem(last=False)
    else:
        _EXECUTABLES.move_to_end((key, signature))
        if notes is not None:
            notes.extend(found[1])
    return found[0](*args)


def program_key(program: Any, label: str) -> tuple:
    """``compiled_once``'s key for an evaluation of ``program`` (``label`` says which): its
    digest and the table entries it evaluates (the objects: a test that swaps an entry for a
    wrong one must not run the right one's executable)."""
    from compiler import primitives

    entries = tuple(primitives.get(op) for op in sorted(set(program.ops)))
    return (label, program.digest(), entries)


def jax_reference(case: Case) -> Reference:
    jax_for_a_case()
    import jax.numpy as jnp

    fn, changed = _in_numpy_dtypes(case.program, jnp)
    key = program_key(case.program, "jax")
    reference = _evaluate(
        "jax", lambda *a: np.asarray(compiled_once(fn, a, key, changed)), case.inputs
    )
    reference.adapted = bool(changed)
    return reference


#: The share of cases JAX judges up front (its ambiguity statistics); every other case gets JAX
#: only when an oracle finds something (``Runner`` re-judges it with JAX before believing it):
#: compiling each program with XLA costs more than the rest of the references together.
JAX_SHARE = 0.25


def wants_jax(case: Case) -> bool:
    """Does this case get the JAX reference up front (a deterministic share of cases)?"""
    return case.invalid is None and case.toggle("jax-reference", JAX_SHARE)


def references(case: Case, use_jax: bool = True, perturbed: bool = True) -> dict[str, Reference]:
    """NumPy, the extended-precision truth, the perturbed evaluations (when ``perturbed``: only
    a local error bound uses them; ``deepen`` adds more where an answer is refused) and (for
    valid programs, when ``use_jax``) jax.jit."""
    refs = {"numpy": numpy_reference(case), "truth": truth_reference(case)}
    if perturbed and case.invalid is None and refs["numpy"].ok:
        refs.update(_perturbed(case, refs["numpy"], PERTURBED_RUNS))
    if use_jax and case.invalid is None:
        refs["jax"] = jax_reference(case)
    return refs


def _perturbed(case: Case, numpy_ref: Reference, count: int) -> dict[str, Reference]:
    """The perturbed runs 1 to ``count``, with the flipped and coupled evaluations their
    traces and outputs make (``run.decisions``, ``run.undetermined``)."""
    from . import decisions
    from .undetermined import coupled_reference

    traces = decisions.Traces(case)
    runs = {f"perturbed:{run}": perturbed_reference(case, run, traces.recorder())
            for run in range(1, count + 1)}  # fmt: skip
    found = dict(runs)
    flipped = traces.flipped_reference()
    if flipped is not None:
        found[flipped.name] = flipped
    outputs = [r.output for r in runs.values() if r.ok]
    coupled = coupled_reference(case, traces, numpy_ref, outputs)
    if coupled is not None:
        found[coupled.name] = coupled
    return found


#: Perturbed runs added (``deepen``) where an answer is refused against the first
#: ``PERTURBED_RUNS``. A random run lands where its draws take it, and a near-tie of softmax
#: logits goes either way: a float64 attention whose scores of -2.2e17 stood 7 ulps apart (a
#: layer norm's last bits, amplified by weights of 1e11) kept its order in all five runs, where
#: cpu-vector's layer norm, an ulp off in two places, tied them (weights 1/2 each, not 1 and 0)
#: and was refused 1.7e42 off against an allowed 9.8e38; 16 of 40 random runs broke that order.
#: Twelve more miss a choice that likely (0.6 ** 12 = 0.2%) where five miss it a third of the
#: time. Drawn only for a refused answer: what passes costs nothing more.
DEEPER_RUNS = 12


def deepen(case: Case, refs: dict[str, Reference]) -> bool:
    """Add the ``DEEPER_RUNS`` to ``refs`` (in place: a perturbed set of ``references``), with
    the flipped and coupled evaluations of all the runs; False where there is nothing to add
    (no perturbed runs, or already added)."""
    if case.invalid is not None or "perturbed:1" not in refs:
        return False
    if f"perturbed:{PERTURBED_RUNS + 1}" in refs or not refs["numpy"].ok:
        return False
    deeper = _perturbed(case, refs["numpy"], PERTURBED_RUNS + DEEPER_RUNS)
    for name in [n for n in refs if n.startswith("perturbed:")]:
        del refs[name]
    refs.update(deeper)
    return True
