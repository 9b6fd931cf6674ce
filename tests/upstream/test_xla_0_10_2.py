"""Upstream XLA bugs the harness found, pinned on the jaxlib it installs (0.10.2), as
``test_mlir_22_1_8.py`` pins MLIR's: each test asserts the *correct* behaviour and is
``xfail(strict=True)`` on that jaxlib (on another it runs plainly, to say whether it holds)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jaxlib = pytest.importorskip("jaxlib")

PINNED = jaxlib.__version__ == "0.10.2"


def _exp_of_a_shifted_product(x, y):
    """``exp(s - max(s))`` of ``s = x * y``: 1 at each row's maximum, whatever ``s`` is."""
    import jax.numpy as jnp

    s = x * y
    return jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))


@pytest.mark.xfail(
    PINNED,
    strict=True,
    raises=AssertionError,
    reason="XLA (jaxlib 0.10.2) CPU: the product x * y is computed in two fusions (the max "
    "reduction's and the subtract-exp one); LLVM contracts x * y - max into an FMA in the "
    "second, so at the maximum the difference is the product's rounding error, not 0, and exp "
    "overflows (openxla/xla#41579 and jax-ml/jax#37234, open; jax-ml/jax#38609)",
)
@pytest.mark.parametrize(
    "dtype, large", [(np.float64, -1e12), (np.float32, 3e5)], ids=["float64", "float32"]
)
def test_a_softmax_shift_of_a_product_is_zero_at_the_maximum(dtype, large) -> None:
    """Found by a 20-minute campaign (seed 1299): float64 causal ``attention`` of (2, 3)
    inputs with weights of 2**42 was nan under ``xla-cpu``, finite under NumPy. In float64 it
    passes with ``xla_backend_optimization_level=0`` (``xla-cpu@O0``, which attribution runs);
    in float32 it fails there too."""
    x = np.array([[large, 1.0]], dtype=dtype)
    with jax.enable_x64(True):
        eager = np.asarray(_exp_of_a_shifted_product(x, x))
        if not np.array_equal(eager, np.array([[1.0, 0.0]], dtype=dtype)):
            raise RuntimeError(f"the eager evaluation is wrong too: {eager}")
        got = np.asarray(jax.jit(_exp_of_a_shifted_product)(x, x))
    assert np.array_equal(got, eager), got


#: float64 values just past a float16 tie: rounded to float32 first they become the tie, which
#: rounds to even; rounded once (NumPy's npy_double_to_half) they do not.
PAST_A_HALF_TIE = np.array([-28744.000000000004, 2049.0000000000005, 1 + 2**-11 + 2**-40])


def _converts_float64_to_float16_natively() -> bool:
    """Does this CPU convert float64 to float16 in one instruction (AVX512-FP16's
    ``vcvtsd2sh``)? There XLA's convert rounds once: on an Intel Xeon with it the test below
    passed (and its strict xfail failed the suite); on an AMD EPYC without it, it rounds twice."""
    try:
        with open("/proc/cpuinfo") as info:
            return any("avx512_fp16" in line.split() for line in info if line.startswith("flags"))
    except OSError:
        return False


@pytest.mark.xfail(
    PINNED and not _converts_float64_to_float16_natively(),
    strict=True,
    raises=AssertionError,
    reason="XLA (jaxlib 0.10.2) CPU without AVX512-FP16: convert f64 -> f16 rounds twice, "
    "through f32 (eager and under jit; no report found)",
)
def test_float64_to_float16_rounds_once() -> None:
    """``convert`` of -28744.000000000004 to f16 is -28736, where the correctly rounded value
    is -28752: the float32 in between is the float16 tie -28744. Found beside IREE's same bug
    (``test_iree_3_13.py``, campaign seed 1299); converting the float32 values rounds right
    (the setup check)."""
    import jax.numpy as jnp

    def narrow(v):
        return v.astype(jnp.float16)

    ties = PAST_A_HALF_TIE.astype(np.float32)
    with jax.enable_x64(True):
        if not np.array_equal(np.asarray(jax.jit(narrow)(ties)), ties.astype(np.float16)):
            raise RuntimeError("setup: float32 -> float16 is wrong too (another bug)")
        got = np.asarray(jax.jit(narrow)(PAST_A_HALF_TIE))
    assert np.array_equal(got, PAST_A_HALF_TIE.astype(np.float16)), got


@pytest.mark.xfail(
    PINNED,
    strict=True,
    raises=AssertionError,
    reason="XLA (jaxlib 0.10.2): the algebraic simplifier turns x * convert(b) into "
    "select(b, x, 0), so inf * 0 is 0 under jit (jax-ml/jax#12233, open since 2022)",
)
def test_a_product_with_a_converted_bool_keeps_nan() -> None:
    """``x * (c == 0).astype(float32)`` at x = inf, c = 1 is nan (NumPy, eager JAX), 0 under
    ``jit``. Found by a 25-minute campaign (seed 1313) as ``x1 * astype(x0 == 2**40)`` of
    float16 and float32 infinities, minimized to three nodes."""
    import jax.numpy as jnp

    def masked(c, x):
        return x * (c == 0).astype(jnp.float32)

    c, x = np.array([1.0, 0.0], np.float32), np.array([np.inf, np.inf], np.float32)
    eager = np.asarray(masked(jnp.asarray(c), jnp.asarray(x)))
    if not (np.isnan(eager[0]) and eager[1] == np.inf):
        raise RuntimeError(f"the eager evaluation is not IEEE's: {eager}")
    got = np.asarray(jax.jit(masked)(c, x))
    assert np.array_equal(got, eager, equal_nan=True), got


@pytest.mark.xfail(
    PINNED,
    strict=True,
    raises=AssertionError,
    reason="XLA (jaxlib 0.10.2) CPU: pow is glibc's powf/pow, called with XLA's DAZ set; glibc "
    "normalizes a subnormal base by a multiplication DAZ reads as zero, so every subnormal base "
    "is taken for 2**-150 (float32) or 2**-1075 (float64): neither its own power nor the "
    "flushed base's (the class: jax-ml/jax#37762, closed; no report of pow found)",
)
@pytest.mark.parametrize(
    "dtype, base", [(np.float32, [1e-45, 3e-39]), (np.float64, [5e-324, 1e-310])],
    ids=["float32", "float64"],
)  # fmt: skip
def test_a_power_of_a_subnormal_base_is_its_own_or_the_flushed_bases(dtype, base) -> None:
    """Found by a 10-minute ``cpu-loops@O0,xla-cpu`` campaign (seed 501) as ``x0 ** x1`` of
    float32 1e-45 and 1.073e-4: 0.988906 under ``jit``, NumPy 0.988979; ``log`` of the same
    base is -inf (XLA's own flush), so the power is neither. A C program calling ``powf``
    under ``_MM_SET_DENORMALS_ZERO_MODE`` gives the same numbers."""
    import jax.numpy as jnp

    x = np.array(base, dtype)
    y = np.array([1.073e-4, 0.5], dtype)
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(jnp.power)(x, y)).astype(np.float64)
    own = np.power(x.astype(np.float64), y.astype(np.float64))
    flushed = np.power(0.0, y.astype(np.float64))
    ok = np.isclose(got, own, rtol=1e-5, atol=0) | (got == flushed)
    assert ok.all(), (got, own, flushed)


@pytest.mark.xfail(
    PINNED,
    strict=True,
    raises=AssertionError,
    reason="XLA (jaxlib 0.10.2): x + 0.0 is removed under jit (the optimized HLO is a copy of x, "
    "with algsimp off and at backend level 0 too), so -0.0 + 0.0 is -0.0 where IEEE 754, NumPy "
    "and eager JAX give 0.0; no report found",
)
def test_adding_zero_to_minus_zero_is_plus_zero() -> None:
    """Found by a 6-minute ``cpu-loops@O0,xla-cpu`` campaign (seed 502) as ``x + float32(0)``
    of -0.0, one node; ``x - (-0.0)`` is removed the same way."""
    import jax.numpy as jnp

    x = np.array([-0.0, 1.0], np.float32)
    eager = np.asarray(jnp.asarray(x) + jnp.float32(0.0))
    if np.signbit(eager[0]):
        raise RuntimeError(f"eager JAX keeps -0.0 too: {eager}")
    got = np.asarray(jax.jit(lambda v: v + jnp.float32(0.0))(x))
    assert not np.signbit(got).any(), got


@pytest.mark.xfail(
    PINNED,
    strict=True,
    raises=AssertionError,
    reason="XLA (jaxlib 0.10.2) CPU: maximum/minimum of an integer converted to float and a "
    "signaling NaN is the number, eager and under jit (as LLVM 22.1.8's X86 code generation of "
    "llvm.maximum gives: tests/upstream/test_llvm_22_1_8.py); no report found",
)
def test_a_maximum_beside_a_signaling_nan_is_nan() -> None:
    """``jnp.maximum(x, y)`` of an int32 x and a float64 y holding 0x7ff0000000000001: NaN in
    NumPy and IEEE 754-2019's maximum; with a quiet NaN, or with x float64 already, XLA gives
    NaN too. Met while pinning the LLVM bug a clean session (seed 2) found on our own
    ``cpu-loops`` and ``cpu-blas``."""
    import jax.numpy as jnp

    x = np.array([-7, 4], np.int32)
    quiet, signaling = np.array([0x7FF8000000000001, 0x7FF0000000000001], np.uint64).view(
        np.float64
    )
    with jax.enable_x64(True):
        if not np.isnan(np.asarray(jnp.maximum(x, quiet))).all():
            raise RuntimeError("a quiet NaN is not propagated either")
        got = [np.asarray(f(x, signaling)) for f in (jnp.maximum, jnp.minimum)]
        got += [np.asarray(jax.jit(f)(x, signaling)) for f in (jnp.maximum, jnp.minimum)]
    assert all(np.isnan(g).all() for g in got), got


@pytest.mark.xfail(
    PINNED,
    strict=True,
    raises=AssertionError,
    reason="XLA (jaxlib 0.10.2) CPU: 8.0 ** x is 355 ulps off in float64, LLVM's library call "
    "simplifier's pow(8.0, x) -> exp2(x * 3.0) (test_llvm_22_1_8.py; no report found)",
)
def test_a_power_of_eight_is_pow() -> None:
    """Under ``jit`` the answer is the one LLVM's rewrite of ``pow(8.0, x)`` as ``exp2(x *
    3.0)`` gives (XLA's CPU kernels go through LLVM; this compiler's were the same before its
    workaround ``libm-calls-kept``), the product rounded first: at x = 300.33251 it is 355 ulps
    off the C library's pow, which NumPy agrees with to an ulp (eagerly, JAX's answer is
    pow's)."""
    import math

    x = np.array([300.33251, 330.0001, 100.3])
    want = np.array([math.pow(8.0, v) for v in x])
    if np.max(np.abs(8.0**x - want) / want) > 2**-51:  # NumPy's answer: a setup problem if not
        raise RuntimeError(f"NumPy's 8.0 ** x is off the C library's: {8.0**x} vs {want}")
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(lambda v: 8.0**v)(x))
    ulps = np.abs(got.view(np.int64) - want.view(np.int64))
    assert ulps.max() <= 2, ulps  # [355 0 82] on 0.10.2


@pytest.mark.xfail(
    PINNED,
    strict=True,
    raises=AssertionError,
    reason="JAX (0.10.2): jnp.exp2(x) is exp(log(2) * x) (its StableHLO: a multiply, then "
    "exponential), the product rounded first: 2**-744 and 2**1000, exact powers of two, come out "
    "205 and 617 ulps off in float64, float32 2**-103 18 (no report found; the same class: "
    "jax-ml/jax#40419, log2 as log / log 2)",
)
def test_exp2_is_not_rounded_through_exp() -> None:
    """Found by a 6-minute session (``--backends 'cpu-loops@O0,xla-cpu,mlir:*' --seed 11``)
    once ``exp2`` was a primitive, each minimized to one node: float64 ``exp2(-744.0)`` on
    ``xla-cpu`` was 1.0806454419566288e-224 for 2**-744 = 1.0806454419566534e-224, float32
    ``exp2(-103.0)`` 18 ulps off. Eagerly the same: the rewrite is JAX's own, not XLA's. NumPy
    gives the C library's answer to the bit (the setup check)."""
    import math

    import jax.numpy as jnp

    x = np.array([-744.0, 1000.0, 700.7, -500.25, 0.3, 10.5])
    want = np.array([math.pow(2.0, v) for v in x])
    if not np.array_equal(np.exp2(x), want):
        raise RuntimeError(f"NumPy's exp2 is off the C library's pow: {np.exp2(x)} vs {want}")
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(jnp.exp2)(x))
    ulps = np.abs(got.view(np.int64) - want.view(np.int64))
    assert ulps.max() <= 2, ulps  # [205 617 280 67 0 0] on 0.10.2


@pytest.mark.xfail(
    PINNED,
    strict=True,
    raises=AssertionError,
    reason="XLA (jaxlib 0.10.2) CPU: float32 cbrt of every subnormal, positive or negative, is "
    "-5.5951735e-16 (float64 subnormals give 0, the flushed input's root); no report found",
)
def test_the_cube_root_of_a_float32_subnormal_is_not_negative() -> None:
    """Found by the same 6-minute session as ``exp2``: ``cbrt`` of the least float32 subnormal,
    1.4e-45, was -5.595e-16 on ``xla-cpu`` (NumPy: 1.119e-15). XLA flushes subnormals by
    design (jax-ml/jax#16200), which would make it 0 (float64 does); a negative root of a
    positive number is no flushing. Eagerly the same (one ``stablehlo.cbrt``)."""
    import jax.numpy as jnp

    normal = np.array([8.0, 1.2e-38, -27.0], np.float32)
    if not np.allclose(np.asarray(jax.jit(jnp.cbrt)(normal)), np.cbrt(normal), rtol=1e-6, atol=0):
        raise RuntimeError("XLA's float32 cbrt of normal numbers is wrong too")
    x = np.array([1.4e-45, 1e-40, 1e-38], np.float32)
    got = np.asarray(jax.jit(jnp.cbrt)(x))
    assert np.all((got == 0) | np.isclose(got, np.cbrt(x), rtol=1e-6, atol=0)), got
