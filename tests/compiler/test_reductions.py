"""Reductions (sum, max, min, mean, var, std) against NumPy: every axis, negative axes, tuples,
None, the empty tuple, keepdims; as methods, NumPy functions and array-namespace functions."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from compiler_checks import F32, F64, I32, REAL_TARGETS, check, rand

import compiler
from compiler import jit

AXES = [None, 0, 1, 2, -1, -2, -3, (0, 2), (-1, 0), (2, 1, 0), ()]
FLOAT_OPS = ("sum", "max", "min", "mean", "var", "std")
INT_OPS = ("max", "min", "mean", "var", "std")  # int32 sum is int64 in NumPy: a known limitation


@jit
def reductions(x, *, axis, keepdims, names):
    xp = x.__array_namespace__()
    out = {}
    for name in names:
        out[f"{name}.method"] = getattr(x, name)(axis=axis, keepdims=keepdims)
        out[f"np.{name}"] = getattr(np, name)(x, axis=axis, keepdims=keepdims)
        out[f"xp.{name}"] = getattr(xp, name)(x, axis=axis, keepdims=keepdims)
    return out


def _atol(x: np.ndarray, dtype: np.dtype) -> float:
    # Summation order differs from NumPy's pairwise sums: n ulps of the largest square (var).
    scale = max(1.0, float(np.max(np.abs(x))) ** 2)
    return 2 * x.size * float(np.finfo(dtype).eps) * scale


@pytest.mark.parametrize("keepdims", [False, True], ids=["dropdims", "keepdims"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_reductions_float(rng, dtype, axis, keepdims):
    x = rand(rng, (3, 4, 5), dtype)
    check(reductions, x, axis=axis, keepdims=keepdims, names=FLOAT_OPS, atol=_atol(x, dtype))


@pytest.mark.parametrize("keepdims", [False, True], ids=["dropdims", "keepdims"])
@pytest.mark.parametrize("axis", [None, 1, -1, (0, 2)], ids=str)
def test_reductions_int32(rng, axis, keepdims):
    x = rand(rng, (3, 4, 5), I32, -50, 50)  # max/min stay int32; mean/var are float64
    check(reductions, x, axis=axis, keepdims=keepdims, names=INT_OPS, atol=_atol(x, F64))


@pytest.mark.parametrize("target", REAL_TARGETS)
def test_reductions_every_target(rng, target):
    x = rand(rng, (3, 4, 5), F32)
    check(
        reductions,
        x,
        axis=(0, 2),
        keepdims=True,
        names=FLOAT_OPS,
        targets=[target],
        atol=_atol(x, F32),
    )


@pytest.mark.parametrize("shape, axis", [((6,), 0), ((6,), None), ((2, 3, 4, 5), (1, 3))], ids=str)
def test_reductions_other_ranks(rng, shape, axis):
    x = rand(rng, shape, F64)
    check(reductions, x, axis=axis, keepdims=False, names=FLOAT_OPS, atol=_atol(x, F64))


@pytest.mark.parametrize("axis", [None, ()], ids=str)
def test_reductions_of_rank0(rng, axis):
    x = rand(rng, (), F32)
    check(reductions, x, axis=axis, keepdims=False, names=FLOAT_OPS)


@jit
def reduce_specials(x):
    return x.max(axis=1), x.min(axis=1), x.sum(axis=1), np.mean(x, axis=0)


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_reductions_with_nan_and_inf(dtype):
    x = np.array(
        [[1.0, np.nan, 2.0, 0.5], [-np.inf, 3.0, 1.0, 2.0], [np.inf, -np.inf, 0.0, 1.0]], dtype
    )
    check(reduce_specials, x)


@jit
def reduce_then_broadcast(x):
    # Reductions with keepdims feeding elementwise ops, as softmax / layer norm do.
    centered = x - x.mean(axis=-1, keepdims=True)
    scaled = centered / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    return scaled, np.exp(x - np.max(x, axis=0, keepdims=True)).sum(axis=0)


@jit
def reductions_of_three_arrays(x, y, z):
    return x.sum(axis=-1), y.sum(axis=-1), (x * z).max(axis=0), z.min(axis=0)


@pytest.mark.parametrize("target", REAL_TARGETS)
def test_reductions_of_different_arrays_returned_together(rng, target):
    """Results that share a filled init once CSE merges their fills, each copied to its own
    output: MLIR's empty tensor elimination had one overwritten by another's copy-out
    (workaround ``one-restrict-output``): ``(x.sum(), y.sum())`` returned the first sum twice."""
    x, y, z = (rand(rng, (3, 4), F32) for _ in range(3))
    check(reductions_of_three_arrays, x, y, z, targets=[target])


@pytest.mark.parametrize("target", REAL_TARGETS)
def test_reduction_feeding_elementwise(rng, target):
    x = rand(rng, (3, 4, 5), F32)
    check(reduce_then_broadcast, x, targets=[target], atol=1e-5)


@jit
def variances(x, *, axis, ddof):
    xp = x.__array_namespace__()
    return {
        "method": x.var(axis=axis, ddof=ddof),
        "np": np.var(x, axis=axis, ddof=ddof, keepdims=True),
        "np.correction": np.var(x, axis=axis, correction=ddof),
        "xp": xp.var(x, axis=axis, ddof=ddof),
        "std.method": x.std(axis=axis, ddof=ddof),
        "np.std": np.std(x, axis=axis, correction=ddof, keepdims=True),
        "xp.std": xp.std(x, axis=axis, ddof=ddof),
    }


@pytest.mark.parametrize("ddof", [1, 2, 4, 5, 2.5], ids=str)
@pytest.mark.parametrize("dtype", [F32, F64, I32], ids=str)
def test_var_divides_by_n_minus_ddof(rng, dtype, ddof):
    """``ddof`` (and NumPy 2's ``correction``): the squared deviations' sum over
    ``max(n - ddof, 0)``; rows of at most ``ddof`` elements are inf (NaN where every deviation
    is zero), as in NumPy; ``std`` is its square root. Over axis 1 (4 elements) and all 60."""
    x = rand(rng, (3, 4, 5), dtype, -50, 50) if dtype == I32 else rand(rng, (3, 4, 5), dtype)
    x[1] = x[1, :1]  # all-equal rows along axis 1: 0 / 0 where ddof >= 4
    for axis in (1, None):
        check(variances, x, axis=axis, ddof=ddof, atol=_atol(x, F64 if dtype == I32 else dtype))


@pytest.mark.parametrize("target", REAL_TARGETS)
def test_var_with_ddof_every_target(rng, target):
    x = rand(rng, (3, 4, 5), F32)
    for ddof in (1, 4):
        check(variances, x, axis=1, ddof=ddof, targets=[target], atol=_atol(x, F32))


def test_ddof_belongs_to_var_alone_and_is_a_number():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError, match="unexpected keyword argument 'ddof'"):
        jit(lambda a: a.mean(ddof=1))(x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'correction'"):
        jit(lambda a: a.var(correction=1))(x)  # ndarray.var has no correction
    with pytest.raises(TypeError, match="unexpected keyword argument 'correction'"):
        jit(lambda a: a.std(correction=1))(x)
    with pytest.raises(TypeError, match="ddof must be a real number"):
        jit(lambda a: np.var(a, ddof="1"))(x)
    with pytest.raises(ValueError, match="ddof and correction"):
        jit(lambda a: np.var(a, ddof=1, correction=1))(x)


@pytest.mark.parametrize("ddof", [1, 0.5, 2.5, -1], ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_var_of_a_16_bit_float_keeps_its_dtype_whatever_the_ddof(dtype, ddof):
    """A bfloat16 sum divided by a fractional count is float32 (ml_dtypes promotes bfloat16
    with a Python float); NumPy's var writes the quotient back into bfloat16. Found by a fuzz
    session once ddof was drawn fractional: var(x_bf16, ddof=0.5) was float32."""
    import ml_dtypes

    x = (np.arange(12).reshape(3, 4) * 1.37).astype(getattr(ml_dtypes, dtype, dtype))
    got = jit(lambda a: np.var(a, axis=1, ddof=ddof))(x)
    expected = np.var(x, axis=1, ddof=ddof)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=2**-6)


@pytest.mark.parametrize("target", REAL_TARGETS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_a_sum_over_no_axis_starts_from_zero_as_numpys_does(target, dtype):
    """NumPy adds a sum's identity even over no axis (``axis=()``, or a 0-d array): the sum of
    -0.0 is 0.0, and so is its mean; a max keeps -0.0. The frontend returned the array itself,
    and a 60 s session found it (seed 2) once reductions drew ``axis=()``."""
    import ml_dtypes  # noqa: F401 - registers bfloat16

    x = np.array([[-0.0, 1.0], [-2.0, -0.0]]).astype(dtype)
    cases = {
        "sum": (lambda a: a.sum(axis=()), x),
        "mean": (lambda a: a.mean(axis=()), x),
        "max": (lambda a: a.max(axis=()), x),
        "sum of 0-d": (lambda a: a.sum(), x[0, 0]),
    }
    for name, (fn, value) in cases.items():
        got = np.asarray(jit(fn)(np.asarray(value), target=target))
        want = np.asarray(fn(np.asarray(value)))
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        wide, expected = got.astype(np.float64), want.astype(np.float64)
        assert np.array_equal(wide, expected), (name, got, want)
        assert np.array_equal(np.signbit(wide), np.signbit(expected)), (name, got, want)


@pytest.mark.parametrize("keepdims", [1, 0, 2], ids=repr)
def test_keepdims_is_any_integer_as_in_numpy(rng, keepdims):
    x = rand(rng, (3, 4, 5), F32)
    check(reductions, x, axis=1, keepdims=keepdims, names=FLOAT_OPS, atol=_atol(x, F32))
    got = jit(lambda a: np.max(a, axis=1, keepdims=np.int64(keepdims)))(x)
    np.testing.assert_array_equal(got, np.max(x, axis=1, keepdims=np.int64(keepdims)))


@pytest.mark.parametrize("keepdims", [np.True_, 1.0, "yes"], ids=repr)
def test_keepdims_that_numpy_refuses_is_a_type_error(keepdims):
    x = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError):
        np.sum(x, axis=1, keepdims=keepdims)  # the semantics promised
    for name in FLOAT_OPS:
        with pytest.raises(TypeError, match=f"{name}: keepdims must be an integer or a bool"):
            jit(lambda a, name=name: getattr(np, name)(a, axis=1, keepdims=keepdims))(x)


# --------------------------------------------------------------------------------------------
# NumPy's other keywords: sum's and mean's dtype= computed, the rest refused or unknown

ACCUMULATORS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int32]


@jit
def accumulated(x, *, axis, dtype):
    xp = x.__array_namespace__()
    return {
        "np.sum": np.sum(x, axis=axis, dtype=dtype),
        "sum.method": x.sum(axis, dtype),  # ndarray's order: (axis, dtype, out, keepdims)
        "xp.sum": xp.sum(x, axis=axis, dtype=dtype, keepdims=True),
        "np.mean": np.mean(x, axis=axis, dtype=dtype),
        "mean.method": x.mean(axis=axis, dtype=dtype, keepdims=True),
        "xp.mean": xp.mean(x, axis=axis, dtype=dtype),
    }


@pytest.mark.parametrize("axis", [None, 1, (0, 2), ()], ids=str)
@pytest.mark.parametrize("dtype", ACCUMULATORS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("source", [F32, F64, I32], ids=str)
def test_sum_and_mean_accumulate_in_the_dtype_given(rng, source, dtype, axis):
    """NumPy casts x to ``dtype``, sums (and a mean divides) in it, and returns it. Halves of
    at most 2.5 in magnitude, 24 of them: every partial sum is exact in every dtype (bfloat16
    included), so the one rounding left is a mean's division."""
    if np.dtype(dtype) == I32 and source != I32:
        return  # a float's cast to int32 (undefined for NaN and out-of-range values)
    x = rng.integers(-2, 3, (2, 3, 4)).astype(source)
    if source != I32:
        x += 0.5
    eps = 0.0 if np.dtype(dtype) == I32 else float(ml_dtypes.finfo(dtype).eps)
    check(accumulated, x, axis=axis, dtype=dtype, rtol=eps, atol=0.0)
    got = jit(lambda a: np.sum(a, axis=axis, dtype=dtype))(x)
    assert got.dtype == np.dtype(dtype)


def test_an_int32_sum_wraps_as_numpys_does():
    """The only int32 sum there is (NumPy's default one is int64): modulo 2**32."""
    x = np.full((3, 4), 2**30, np.int32)
    got = jit(lambda a: (np.sum(a, axis=1, dtype=np.int32), np.mean(a, dtype=np.int32)))(x)
    np.testing.assert_array_equal(got[0], np.sum(x, axis=1, dtype=np.int32))  # 2**32: 0
    assert got[1] == np.mean(x, dtype=np.int32) and got[1].dtype == I32


def test_a_float16_mean_in_float16_overflows_as_numpys_does():
    """Without dtype= NumPy sums float16 in float32 (a mean of 60000s is 60000); given
    dtype=np.float16 it sums in float16, and the sum overflows."""
    x = np.full((4, 3), 60000, np.float16)
    got = jit(lambda a: (np.mean(a, axis=0), np.mean(a, axis=0, dtype=np.float16)))(x)
    np.testing.assert_array_equal(got[0], np.mean(x, axis=0))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got[1], np.mean(x, axis=0, dtype=np.float16))  # inf
    assert np.isinf(got[1]).all()


@pytest.mark.parametrize(
    "call",
    [
        lambda a: np.sum(a, where=True),
        lambda a: a.sum(initial=0),
        lambda a: np.max(a, axis=0, where=True),
        lambda a: a.min(where=True),
        lambda a: np.var(a, dtype=np.float64),
        lambda a: a.std(axis=1, where=True),
        lambda a: np.mean(a, axis=0, where=True),
    ],
)
def test_keywords_numpy_takes_and_the_compiler_does_not_are_refused(call):
    x = np.ones((3, 4), np.float32)
    call(x)  # NumPy takes it
    with pytest.raises(compiler.UnsupportedFeature):
        jit(call)(x)


@pytest.mark.parametrize(
    "call",
    [
        lambda a: a.max(dtype=np.float64),
        lambda a: a.__array_namespace__().min(a, dtype=np.float64),
        lambda a: a.sum(ddof=1),
        lambda a: a.mean(initial=0),
        lambda a: a.var(initial=0),
    ],
)
def test_keywords_numpy_lacks_are_type_errors(call):
    x = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError):
        call(x)  # NumPy's function (or ndarray's method) has no such parameter
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        jit(call)(x)


@pytest.mark.parametrize("initial", [0.0, -0.0, 2.5, -2.5, 1000, True], ids=repr)
@pytest.mark.parametrize("dtype", [F32, F64, np.float16, ml_dtypes.bfloat16, I32], ids=str)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_start_from_the_initial_given(name, dtype, initial):
    """NumPy converts ``initial`` to the result's dtype (2.5 is 2 for int32) and starts from it:
    above or below every element it is the answer, and an element equal to it wins the tie
    (max([-0.0], initial=0.0) is -0.0); over no axis it meets each element. (One zero among
    the elements: which of -0.0 and 0.0 a reduction of both gives is its loop order's.)"""
    x = np.array([[-0.0, 3.0, -7.5], [-1.0, -1.0, 2.5]]).astype(dtype)
    fn = getattr(np, name)

    @jit
    def started(a):
        return tuple(fn(a, axis=axis, initial=initial) for axis in (None, 0, 1, ()))

    for got, want in zip(started(x), (fn(x, axis=a, initial=initial) for a in (None, 0, 1, ())),
                         strict=True):  # fmt: skip
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got.astype(F64)), np.signbit(want.astype(F64)))


def test_an_initial_numpy_cannot_convert_is_numpys_error():
    x = np.ones((2, 3), np.int32)
    for initial, error in ((2**31, OverflowError), (float("nan"), ValueError)):
        with pytest.raises(error):
            np.max(x, initial=initial)
        with pytest.raises(error):
            jit(lambda a, c=initial: np.max(a, initial=c))(x)
