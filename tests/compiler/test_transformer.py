"""The transformer building blocks of compiler.ops, compiled, against the same source run by
NumPy: softmax and layer norm at their numerical extremes, GELU's promotion, attention, its
causality (bit for bit), and the attend / feedforward halves of a GPT-2 block."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_checks import F32, F64, MATMUL_TARGETS, REAL_TARGETS, check, isolated, rand, stages

from compiler import jit, ops

T, C, H = 7, 12, 3  # sequence length, width, heads: all distinct

softmax = jit(ops.softmax)
layer_norm = jit(ops.layer_norm)
gelu = jit(ops.gelu)
attention = jit(ops.attention)
attend = jit(ops.attend)
feedforward = jit(ops.feedforward)


def _weights(rng, dtype=F32, scale=0.3):
    def w(*shape):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    return w


# --------------------------------------------------------------------------------------------
# softmax


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_softmax_extremes(dtype):
    x = np.array(
        [
            [1e4, -1e4, 0.0, 1e4 - 1.0, 5.0],  # huge values: exp must not overflow
            [-1e4, -1e4, -1e4, -1e4, -1e4 + 2.0],  # hugely negative: must not underflow to 0/0
            [-np.inf, 0.0, 1.0, -np.inf, 2.0],  # masked entries
            [3.0, 3.0, 3.0, 3.0, 3.0],  # uniform
        ],
        dtype,
    )
    got = check(softmax, x, targets=REAL_TARGETS)  # NumPy agrees; got is NumPy's result
    compiled = isolated(lambda: softmax(x, target="cpu-loops"))
    assert np.all(np.isfinite(compiled))
    np.testing.assert_allclose(compiled.sum(axis=-1), 1.0, rtol=4 * np.finfo(dtype).eps)
    assert compiled[2, 0] == 0.0 and compiled[2, 3] == 0.0
    np.testing.assert_allclose(compiled[3], 0.2, rtol=4 * np.finfo(dtype).eps)
    assert got.dtype == dtype


@pytest.mark.parametrize("axis", [0, 1, -1], ids=str)
def test_softmax_axes(rng, axis):
    x = rand(rng, (3, 4, 5), F64, -30, 30)
    check(softmax, x, axis=axis)


# --------------------------------------------------------------------------------------------
# layer norm


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_layer_norm_constant_row_is_bias(rng, dtype):
    x = rand(rng, (4, C), dtype)
    x[1] = 3.0  # zero variance: (x - mean) is exactly 0, the eps keeps the division finite
    gain, bias = rand(rng, (C,), dtype), rand(rng, (C,), dtype)
    check(layer_norm, x, gain, bias, targets=REAL_TARGETS, atol=1e-5 if dtype == F32 else 1e-12)
    got = isolated(lambda: layer_norm(x, gain, bias, target="cpu-loops"))
    assert np.all(np.isfinite(got))
    np.testing.assert_array_equal(got[1], bias)


def test_float16_layer_norm_survives_a_row_whose_squares_sum_past_65504():
    """The definition's variance is a float16 mean (summed in float32), not NumPy's float16
    ``var``, which summed the squares in float16: a row of 139 values within +-85 (squared
    deviations summing to ~2.2e5) normalized to inf, and every element came out as the bias
    (found by the spec oracle in a default session)."""
    x = (np.arange(139) % 170 - 85).astype(np.float16).reshape(1, 139)
    gain, bias = np.array([0.0296], np.float16), np.array([10.0], np.float16)
    wide = x.astype(F64)
    truth = (wide - wide.mean()) / np.sqrt(wide.var() + ops.LAYER_NORM_EPS) * 0.0296 + 10.0
    for got in (ops.layer_norm(x, gain, bias), isolated(lambda: layer_norm(x, gain, bias))):
        assert got.dtype == np.float16
        assert not np.all(got == bias)  # the normalization is not lost
        np.testing.assert_allclose(got.astype(F64), truth, rtol=0, atol=0.02)


# --------------------------------------------------------------------------------------------
# GELU: the float64 constant is a strong NumPy scalar, so float32 inputs give float64


def test_gelu_float32_promotes_to_float64_like_numpy(rng):
    x = rand(rng, (3, 4, 5), F32, -4, 4)
    # x**3 and its scaling are float32 (like NumPy), only the tanh part is float64: float32
    # rounding, amplified where 1 + tanh(...) cancels, bounds the agreement.
    want = check(gelu, x, targets=REAL_TARGETS, rtol=2e-6, atol=1e-6)
    assert want.dtype == F64
    text = stages(gelu, x, target="cpu-loops")["module"]
    assert "arith.extf" in text and "f32 to f64" in text


def test_gelu_float64(rng):
    check(gelu, rand(rng, (3, 4), F64, -6, 6))


# --------------------------------------------------------------------------------------------
# attention


def _attention_args(rng, dtype):
    w = _weights(rng, dtype)
    return (rand(rng, (T, C), dtype), w(C, 3 * C), w(3 * C), w(C, C), w(C))


@pytest.mark.parametrize("target", REAL_TARGETS)
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_attention_against_numpy(rng, dtype, target):
    args = _attention_args(rng, dtype)
    # np.sqrt(depth) is a strong float64 scalar: the scores, and so the result, are float64.
    want = check(attention, *args, heads=H, targets=[target], rtol=1e-5, atol=1e-5)
    assert want.dtype == F64


def _rows_unchanged(fn, args, target):
    """fn's output rows 0..T-3 for args and for args with x's last two rows perturbed."""
    x = args[0]
    perturbed = x.copy()
    perturbed[-2:] = perturbed[-2:] * 3.0 + 1.0
    before = fn(*args, heads=H, target=target)
    after = fn(perturbed, *args[1:], heads=H, target=target)
    return before, after


@pytest.mark.parametrize("target", MATMUL_TARGETS)
@pytest.mark.parametrize("fn", [attention, attend], ids=["attention", "attend"])
def test_causality_bit_for_bit(rng, fn, target):
    if fn is attention:
        args = _attention_args(rng, F32)
    else:
        w = _weights(rng)
        args = (rand(rng, (T, C)), 1 + w(C), w(C), w(C, 3 * C), w(3 * C), w(C, C), w(C))
    before, after = isolated(_rows_unchanged, fn, args, target)
    np.testing.assert_array_equal(before[:-2], after[:-2])  # the past never sees the future
    assert not np.allclose(before[-2:], after[-2:])  # the perturbation did reach the output


def _overflowing_keys(rng, target):
    """attention's output when the last two positions' keys overflow float32 (their scores
    against every query are +-inf or nan), and when they do not."""
    x, w, b, out_w, out_b = _attention_args(rng, F32)
    w[:, C : 2 * C] *= np.float32(1e30)  # the keys' weights: keys near 1e30, finite
    far = x.copy()
    far[-2:] *= np.float32(1e10)  # their keys overflow; values and queries stay finite
    fn = attention if target is None else (lambda *a, **k: attention(*a, **k, target=target))
    plain = ops.attention if target is None else fn
    return plain(x, w, b, out_w, out_b, heads=H), plain(far, w, b, out_w, out_b, heads=H)


@pytest.mark.parametrize("target", [None, *MATMUL_TARGETS])
def test_a_later_overflowing_score_never_reaches_an_earlier_position(rng, target):
    """The mask selects, it does not add: +inf + -inf is nan, and an added mask let a later
    position's overflowing score make every earlier one nan through the row's maximum (the
    spec oracle's stability check, on float32 inputs near 1e13). None: the shared definition
    in NumPy."""
    before, after = isolated(_overflowing_keys, rng, target)
    assert np.all(np.isfinite(before))
    np.testing.assert_array_equal(before[:-2], after[:-2])


# --------------------------------------------------------------------------------------------
# The two halves of a GPT-2 block


@pytest.mark.parametrize("target", REAL_TARGETS)
def test_attend_against_numpy(rng, target):
    w = _weights(rng)
    args = (rand(rng, (T, C)), 1 + w(C), w(C), w(C, 3 * C), w(3 * C), w(C, C), w(C))
    check(attend, *args, heads=H, targets=[target], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", REAL_TARGETS)
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_feedforward_against_numpy(rng, dtype, target):
    w = _weights(rng, dtype)
    args = (rand(rng, (T, C), dtype), 1 + w(C), w(C), w(C, 4 * C), w(4 * C), w(4 * C, C), w(C))
    want = check(feedforward, *args, targets=[target], rtol=1e-5, atol=1e-5)
    assert want.dtype == F64  # GELU promotes


@jit
def block(x, ln1_g, ln1_b, qkv_w, qkv_b, out_w, out_b, ln2_g, ln2_b, up_w, up_b, down_w, down_b):
    h = ops.attend(x, ln1_g, ln1_b, qkv_w, qkv_b, out_w, out_b, heads=H)
    return ops.feedforward(h, ln2_g, ln2_b, up_w, up_b, down_w, down_b)


@pytest.mark.parametrize("target", MATMUL_TARGETS)
def test_full_block_float64(rng, target):
    w = _weights(rng, F64)
    args = (
        rand(rng, (T, C), F64), 1 + w(C), w(C), w(C, 3 * C), w(3 * C), w(C, C), w(C),
        1 + w(C), w(C), w(C, 4 * C), w(4 * C), w(4 * C, C), w(C),
    )  # fmt: skip
    check(block, *args, targets=[target], rtol=1e-10, atol=1e-10)
