"""The ``xla-cpu`` backend: ``jax.jit`` of the traced graph, with NumPy's semantics.

Programs where NumPy and JAX promote differently (int32 meeting float32, bfloat16 meeting a
Python float, ``where`` of bfloat16 and a Python float) must come out in NumPy's dtypes; the
stage texts (StableHLO, XLA's optimized HLO) are kept, and the StableHLO text alone reproduces
the result through XLA's client."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("jax")

from compiler import backends, jit, ops  # noqa: E402
from compiler.xla import NAME, run_text  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)


def _check(fn, *args, rtol: float = 1e-6) -> np.ndarray:
    """``fn`` on xla-cpu: NumPy's dtype and shape, values within ``rtol`` of NumPy's."""
    got = jit(fn)(*args, target=NAME)
    with np.errstate(all="ignore"):
        expected = np.asarray(fn(*args))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol)
    return got


def test_registered_behind_the_protocol() -> None:
    backend = backends.get(NAME)
    assert isinstance(backend, backends.Backend)
    assert backend.unavailable() is None and backends.why_not(NAME) is None
    assert NAME in backends.names() and NAME not in backends.cpu_targets()
    assert backend.shares == ("jax",) and backend.layer == "xla"


def test_int32_meets_float32_as_numpy_promotes(rng) -> None:
    x = rng.standard_normal((3, 4)).astype(np.float32)
    n = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    # NumPy 2: float64 (JAX alone would say float32).
    assert _check(lambda a, b: a + b, x, n).dtype == np.float64
    assert _check(lambda a, b: a * b - 1.5, x, n).dtype == np.float64
    assert _check(lambda b: np.mean(b, axis=0), n).dtype == np.float64
    assert _check(lambda b: np.exp(b), n).dtype == np.float64
    assert _check(lambda a, b: np.where(a > b, b, a), x, n).dtype == np.float64
    assert _check(lambda a, b: np.where(a > b, a, 0.5), x, n).dtype == np.float32


def test_bfloat16_promotions_are_numpys_with_ml_dtypes(rng) -> None:
    x = rng.standard_normal((2, 5)).astype(BF16)
    # bfloat16 with a Python float is float32 in NumPy (JAX keeps bfloat16) ...
    assert _check(lambda a: a + 1.5, x).dtype == np.float32
    # ... where() with a Python float float64, and bfloat16 @ bfloat16 float32.
    assert _check(lambda a: np.where(a > 0, a, 2.0), x).dtype == np.float64
    assert _check(lambda a: a @ a.T, x, rtol=1e-5).dtype == np.float32
    # A Python int keeps bfloat16; bfloat16 with float16 is float32.
    assert _check(lambda a: a * 2, x).dtype == BF16
    h = rng.standard_normal((2, 5)).astype(np.float16)
    assert _check(lambda a, b: a + b, x, h).dtype == np.float32


def test_programs_against_numpy(rng) -> None:
    x = rng.standard_normal((4, 6)).astype(np.float32)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    _check(lambda a, b: np.tanh(a @ b) + 1.0, x, w, rtol=1e-5)
    _check(lambda a: ops.softmax(a), x, rtol=1e-5)
    _check(lambda a: np.sum(a[:, ::-2], axis=1, keepdims=True).T, x, rtol=1e-5)
    _check(lambda a: ops.softmax(a.astype(np.float16)), x, rtol=2e-3)
    _check(lambda a: np.var(a.astype(BF16), axis=0), x, rtol=2e-2)
    _check(lambda a: a.astype(np.int32) * 3, x * 10)


def test_gather_out_of_range_raises(rng) -> None:
    table = rng.standard_normal((4, 3)).astype(np.float32)
    ids = np.array([0, 3, 1], np.int32)
    _check(lambda t, i: ops.gather(t, i), table, ids)
    with pytest.raises(ValueError, match="out of range"):
        jit(lambda t, i: ops.gather(t, i))(table, np.array([0, 4], np.int32), target=NAME)


def test_stage_texts_and_commands(rng) -> None:
    x = rng.standard_normal((3, 4)).astype(np.float16)
    compiled = jit(lambda a: np.exp(a) * 2).compile(x, target=NAME)
    stages = compiled.stages
    assert list(stages) == ["stablehlo", "hlo"]
    assert "stablehlo.exponential" in stages["stablehlo"] and "f16" in stages["stablehlo"]
    assert "HloModule" in stages["hlo"]
    assert compiled.artifacts.commands["hlo"].startswith("python -m compiler.xla compile")
    # The StableHLO text alone, through XLA's client, gives the backend's answer.
    [alone] = run_text(stages["stablehlo"], [x])
    np.testing.assert_array_equal(alone, compiled(x))


def test_levels_are_xla_backend_optimization_levels() -> None:
    """``xla-cpu@O<n>`` compiles with ``xla_backend_optimization_level=n`` (a triage variant:
    float64 ``exp(s - max(s))`` of ``s = x * x`` at 1e24 is inf by default, 1 at level 0, where
    XLA does not contract the product into an FMA); its stored command and ``run_text`` say
    the level; levels past 3 are refused."""
    from compiler import backends

    x = np.array([[-1e12, 1.0]])

    def shifted(a):
        s = a * a
        return np.exp(s - np.max(s, axis=-1, keepdims=True))

    level0 = jit(shifted).compile(x, target=f"{NAME}@O0")
    assert level0.artifacts.commands["hlo"].endswith("-o hlo.txt --level 0")
    np.testing.assert_array_equal(level0(x), [[1.0, 0.0]])
    [alone] = run_text(level0.stages["stablehlo"], [x], level=0)
    np.testing.assert_array_equal(alone, [[1.0, 0.0]])
    assert backends.get(f"{NAME}@O3").name == f"{NAME}@O3"
    with pytest.raises(ValueError, match="O0-O3"):
        backends.get(f"{NAME}@O4")


def test_outputs_are_fresh_arrays(rng) -> None:
    x = rng.standard_normal((3,)).astype(np.float32)
    f = jit(lambda a: a + 1)
    first, second = f(x, target=NAME), f(x, target=NAME)
    assert first.flags.writeable and not np.shares_memory(first, second)


def test_one_casting_rule_for_jax_and_the_graph() -> None:
    """The harness's JAX reference and this backend's graph share ``numpy_dtypes``."""
    from compiler import primitives
    from compiler.primitives.rules import ArrayType

    f32, i32, f64 = (np.dtype(d) for d in ("float32", "int32", "float64"))
    out = ArrayType((2,), f64)
    add = primitives.get("add")
    assert add.numpy_dtypes([ArrayType((2,), f32), ArrayType((2,), i32)], out) == [f64, f64]
    where = primitives.get("where")
    cond = ArrayType((2,), np.dtype(bool))
    assert where.numpy_dtypes([cond, ArrayType((2,), BF16), 2.0], out) == [None, f64, f64]
    assert primitives.get("transpose").numpy_dtypes([ArrayType((2,), f32)], out) == [None]


def test_the_jax_reference_never_judges_xla() -> None:
    from harness.oracles.differential import reference_outputs, shared_with
    from harness.run.references import Reference

    refs = {
        "numpy": Reference("numpy", np.ones(2)),
        "truth": Reference("truth", np.ones(2)),
        "jax": Reference("jax", np.full(2, 3.0)),
    }
    assert shared_with(NAME) == ("jax",) and shared_with("cpu-loops") == ()
    assert len(reference_outputs(refs, (2,), "cpu-loops")) == 2
    [only] = reference_outputs(refs, (2,), NAME)
    np.testing.assert_array_equal(only, np.ones(2))
