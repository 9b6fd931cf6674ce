"""The error model catches what it must and accepts rounding it must."""

from __future__ import annotations

import numpy as np
import pytest

from harness.oracles import tolerance


@pytest.fixture
def case32():
    """A float32 matmul's float64 truth, NumPy's float32 answer and a float32 'backend'."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((7, 11)).astype(np.float32)
    b = rng.standard_normal((11, 5)).astype(np.float32)
    truth = a.astype(np.float64) @ b.astype(np.float64)
    numpy_out = a @ b
    backend = np.einsum("ik,kj->ij", a, b)  # another summation order, also float32
    return truth, numpy_out, backend


def test_rounding_of_another_summation_order_passes(case32):
    truth, numpy_out, backend = case32
    verdict = tolerance.compare(backend, truth, [numpy_out], steps=5)
    assert verdict.ok, verdict.reason


@pytest.mark.parametrize("index", [(0, 0), (3, 2), (6, 4)])
def test_one_element_off_by_1e4_relative_is_caught(case32, index):
    truth, numpy_out, backend = case32
    bad = backend.copy()
    bad[index] *= np.float32(1 + 1e-4)
    verdict = tolerance.compare(bad, truth, [numpy_out], steps=5)
    assert not verdict.ok
    assert verdict.worst_index == index


def test_nan_where_references_are_finite_is_caught(case32):
    truth, numpy_out, backend = case32
    bad = backend.copy()
    bad[1, 1] = np.nan
    verdict = tolerance.compare(bad, truth, [numpy_out])
    assert not verdict.ok and "non-finite" in verdict.reason


def test_inf_where_numpy_overflows_too_passes():
    got = np.array([np.inf, 1.0], np.float32)
    numpy_out = np.array([np.inf, 1.0], np.float32)
    truth = np.array([1e39, 1.0])
    assert tolerance.compare(got, truth, [numpy_out]).ok


def test_extra_errors_widen_the_bound_but_never_excuse_a_nan():
    truth = np.array([1.0, 2.0])
    got = np.array([np.nan, 2.0])
    verdict = tolerance.compare(got, truth, [truth], errors=[np.array([np.inf, 1.0])])
    assert not verdict.ok
    off = np.array([1.001, 2.0])
    assert not tolerance.compare(off, truth, [truth]).ok
    assert tolerance.compare(off, truth, [truth], errors=[np.array([0.001, 0.0])]).ok


def test_integers_must_match_exactly():
    expected = np.array([1, 2, 3], np.int32)
    assert tolerance.compare(expected.copy(), expected, [expected]).ok
    assert not tolerance.compare(np.array([1, 2, 4], np.int32), expected, [expected]).ok


def test_shape_difference_is_reported():
    verdict = tolerance.compare(np.zeros((3, 2)), np.zeros((2, 3)), [np.zeros((2, 3))])
    assert not verdict.ok and "shape" in verdict.reason


def test_working_precision_sets_the_floor():
    """A float64 output computed from float32 parts is judged at float32 precision."""
    truth = np.array([0.016696528722802046])
    got = truth + 1.4e-10  # ~1e-8 relative: noise at float32 precision, 40000 ulp at float64
    assert tolerance.compare(got, truth, [truth], steps=20, dtype=np.float32).ok
    assert not tolerance.compare(got, truth, [truth], steps=20, dtype=np.float64).ok
