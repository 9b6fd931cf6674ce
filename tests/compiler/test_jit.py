"""jit behaviour: specialization and reuse, nested jit, aliasing and strided inputs, outputs that
never alias inputs, flat memory over many calls, and releasing specializations."""

from __future__ import annotations

import functools
import gc
import importlib
import threading
import weakref

import numpy as np
import psutil
import pytest
from compiler_checks import F32, F64, I32, assert_like_numpy, isolated, matmul_atol, rand

import compiler
from compiler import jit, ops

# --------------------------------------------------------------------------------------------
# Specialization


def _scaled():
    @jit
    def scaled(x, y, *, factor=2.0):
        return x * factor + y

    return scaled


def test_same_shapes_reuse_the_specialization(rng):
    f = _scaled()
    x, y = rand(rng, (3, 4)), rand(rng, (4,))
    first = f.compile(x, y, target="cpu-loops")
    assert f.traces == 1
    again = f.compile(rand(rng, (3, 4)), rand(rng, (4,)), target="cpu-loops")
    assert again is first and f.traces == 1
    for _ in range(3):
        f(x, y, target="cpu-loops")
    assert f.traces == 1
    # Layout and contiguity are not part of the key: a transposed view of the same shape reuses it.
    f(np.asfortranarray(x), y, target="cpu-loops")
    f(rand(rng, (4, 3)).T, y, target="cpu-loops")
    assert f.traces == 1


def test_new_dtype_shape_static_kwarg_or_target_specializes(rng):
    f = _scaled()
    x, y = rand(rng, (3, 4)), rand(rng, (4,))
    base = f.compile(x, y, target="cpu-loops")
    variants = [
        f.compile(x.astype(F64), y, target="cpu-loops"),  # dtype
        f.compile(rand(rng, (5, 4)), y, target="cpu-loops"),  # shape
        f.compile(x, rand(rng, (3, 4)), target="cpu-loops"),  # shape of the other argument
        f.compile(x, y, factor=3.0, target="cpu-loops"),  # static kwarg value
        f.compile(x, y, factor=3, target="cpu-loops"),  # static kwarg type (3 vs 3.0)
        f.compile(x, y, target="cpu-loops-unfused"),  # target
    ]
    # Every variant compiles anew; a new target alone reuses the traced graph (no retrace).
    assert f.traces == len(variants)
    assert variants[-1].graph is base.graph
    assert len({id(c) for c in [base, *variants]}) == 1 + len(variants)
    assert f.compile(x, y, factor=3.0, target="cpu-loops") is variants[3]  # reused
    np.testing.assert_allclose(f(x, y, factor=3.0, target="cpu-loops"), x * 3.0 + y, rtol=1e-6)


def test_static_positional_argument_and_tree_structure(rng):
    @jit
    def f(x, power, pair):
        return x**power + pair[0] * pair[1]

    x = rand(rng, (3, 4), F32, 0.5, 2)
    a, b = rand(rng, (4,)), rand(rng, (3, 1))
    f(x, 2.0, (a, b), target="cpu-loops")
    f(x, 2.0, (a, b), target="cpu-loops")
    assert f.traces == 1
    f(x, 3.0, (a, b), target="cpu-loops")  # a new static value
    f(x, 2.0, [a, b], target="cpu-loops")  # a list instead of a tuple: a new tree
    assert f.traces == 3
    np.testing.assert_allclose(f(x, 3.0, (a, b), target="cpu-loops"), x**3.0 + a * b, rtol=1e-6)


def test_static_signed_zeros_are_different_programs(rng):
    # -0.0 == 0.0 in Python, but x * -0.0 and x * 0.0 differ in the sign of zero (1/x: -inf/inf).
    f = jit(lambda x, scale: x * scale)
    x = rand(rng, (3, 4), F32, 0.5, 2.0)
    negative, positive = f(x, -0.0, target="cpu-loops"), f(x, 0.0, target="cpu-loops")
    assert np.all(np.signbit(negative)), "x * -0.0 must be -0.0"
    assert not np.any(np.signbit(positive)), "x * 0.0 reused the x * -0.0 specialization"


def test_static_nan_does_not_retrace_every_call(rng):
    f = jit(lambda x, fill: np.where(x > 0, x, fill))
    x = rand(rng, (3, 4))
    for _ in range(3):
        got = f(x, float("nan"), target="cpu-loops")  # a new NaN object each time
    assert_like_numpy(got, np.where(x > 0, x, np.nan))
    assert f.traces == 1


def test_numpy_scalars_are_traced_and_python_scalars_static(rng):
    f = _scaled()
    y = rand(rng, (4,))
    c1 = f.compile(np.float32(1.0), y, target="cpu-loops")
    c2 = f.compile(np.float32(5.0), y, target="cpu-loops")  # a NumPy scalar is an array leaf
    assert c1 is c2 and f.traces == 1
    f.compile(rand(rng, (4,)), y, factor=1.5, target="cpu-loops")
    f.compile(rand(rng, (4,)), y, factor=2.5, target="cpu-loops")  # a Python float is static
    assert f.traces == 3


def test_array_keyword_arguments_are_traced(rng):
    @jit
    def f(x, *, weight, scale=1.0):
        return x @ weight * scale

    x, w = rand(rng, (3, 4)), rand(rng, (4, 5))
    got = f(x, weight=w, target="cpu-blas")
    got2 = f(x, weight=w + 1, target="cpu-blas")
    assert f.traces == 1
    assert_like_numpy(got, x @ w, atol=matmul_atol(x, w, F32))
    assert_like_numpy(got2, x @ (w + 1), atol=matmul_atol(x, w + 1, F32))


def test_default_target_of_the_decorator(rng):
    @jit(target="cpu-loops-unfused")
    def f(x):
        return np.exp(x)

    x = rand(rng, (3, 4))
    assert f.compile(x).target.name == "cpu-loops-unfused"
    assert "optimized" not in f.compile(x).stages
    assert_like_numpy(f(x), np.exp(x))
    # The alias: cpu-vector at LLVM -O2; a level given with it wins, a prefix runs at -O0.
    assert f.compile(x, target="cpu").target.name == "cpu-vector@O2"
    assert f.compile(x, target="cpu").target.target.opt_level == 2
    assert f.compile(x, target="cpu@O3").target.name == "cpu-vector@O3"
    assert f.compile(x, target="cpu[:bufferized]").target.target.opt_level == 0
    assert f.compile(x, target="cpu+generic-cpu").target.target.opt_level == 0
    assert jit(np.exp).compile(x).target.name == "cpu-vector@O2"  # the default target


def test_optimization_level_suffix(rng):
    f = jit(lambda x, w: np.tanh(x @ w) + 1.0)
    x, w = rand(rng, (3, 4), F64), rand(rng, (4, 5), F64)
    for target in ("cpu-loops@O0", "cpu-blas@O1", "cpu@O2"):
        assert_like_numpy(f(x, w, target=target), np.tanh(x @ w) + 1.0)
    assert f.compile(x, w, target="cpu@O0").backend.target.opt_level == 0
    with pytest.raises(ValueError, match="optimization level"):
        f(x, w, target="cpu-blas@O7")


class _Scale:
    def __init__(self, factor: float) -> None:
        self.factor = factor

    def __call__(self, x):
        return x * self.factor


def test_jit_of_a_partial_and_a_callable_object(rng):
    x = rand(rng, (3, 4))
    from_partial = jit(functools.partial(np.multiply, 2.0))
    assert_like_numpy(from_partial(x, target="cpu-loops"), 2.0 * x)
    from_object = jit(_Scale(3.0))
    assert_like_numpy(from_object(x, target="cpu-loops"), x * 3.0)
    assert repr(from_partial) and repr(from_object)


# --------------------------------------------------------------------------------------------
# Nested jit


@jit
def inner(x, w):
    return np.tanh(x @ w)


@jit
def outer(x, w1, w2):
    return inner(inner(x, w1), w2) + 1.0


def test_nested_jit_inlines(rng):
    x, w1, w2 = rand(rng, (3, 4), F64), rand(rng, (4, 5), F64), rand(rng, (5, 6), F64)
    traces = inner.traces
    compiled = outer.compile(x, w1, w2, target="cpu-blas")
    assert inner.traces == traces  # inlined into the outer trace, never traced on its own
    text = compiled.stages["module"]
    assert text.count("func.func") == 1 and "func.call" not in text
    assert text.count("linalg.matmul") == 2
    want = np.tanh(np.tanh(x @ w1) @ w2) + 1.0
    assert_like_numpy(outer(x, w1, w2, target="cpu-blas"), want)
    assert_like_numpy(inner(x, w1, target="cpu-blas"), np.tanh(x @ w1))  # and still callable


# --------------------------------------------------------------------------------------------
# Aliasing and strided inputs

# Crash-free kernels used in-process below.
twice_plus = jit(lambda x, y: x * 2 + y)
difference = jit(lambda x, y: x - y)
product = jit(lambda a, b: a @ b)


@pytest.mark.parametrize("target", ["cpu-loops", "cpu-blas", "cpu-vector"])
def test_same_array_twice(rng, target):
    a = rand(rng, (3, 4))
    before = a.copy()
    assert_like_numpy(twice_plus(a, a, target=target), a * 2 + a)
    b = rand(rng, (4, 4))
    assert_like_numpy(product(b, b, target=target), b @ b, atol=matmul_atol(b, b, F32))
    np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize("target", ["cpu-loops", "cpu-blas", "cpu-vector"])
def test_overlapping_views(rng, target):
    a = rand(rng, (6, 5))
    assert_like_numpy(difference(a[1:], a[:-1], target=target), a[1:] - a[:-1])
    assert_like_numpy(twice_plus(a[:, 1:], a[:, :-1], target=target), a[:, 1:] * 2 + a[:, :-1])


@pytest.mark.parametrize("target", ["cpu-loops", "cpu-blas", "cpu-blas-unfused"])
def test_strided_and_fortran_inputs(rng, target):
    a, b = rand(rng, (4, 3)), rand(rng, (5, 4))
    views = {
        "transposed": (a.T, b.T),  # (3, 4) @ (4, 5), both non-contiguous
        "fortran": (np.asfortranarray(a.T), np.asfortranarray(b.T)),
        "negative strides": (a.T[::-1], b.T[:, ::-1]),
        "step": (rand(rng, (6, 8))[::2, ::2], rand(rng, (4, 10))[:, 1::2]),
        "broadcast view": (np.broadcast_to(rand(rng, (4,)), (3, 4)), b.T),
        "read-only": (a.T.copy(), b.T.copy()),
    }
    views["read-only"][0].setflags(write=False)
    for name, (x, y) in views.items():
        got = product(x, y, target=target)
        try:
            assert_like_numpy(got, x @ y, atol=matmul_atol(x, y, F32))
            assert_like_numpy(twice_plus(x, x, target=target), x * 2 + x)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None


def test_strided_int32_and_float64_inputs(rng):
    x = rand(rng, (5, 8), I32, -9, 9)[:, ::2]
    y = rand(rng, (4, 6), F64)[::-1, 1:5].T
    f = jit(lambda x, y: (x * 3, y @ y.T, x.max(axis=0)))
    got = f(x, y, target="cpu-blas")
    assert_like_numpy(got, (x * 3, y @ y.T, x.max(axis=0)))


# --------------------------------------------------------------------------------------------
# Outputs never alias inputs, each other, or earlier outputs


def _shares(a: np.ndarray, b: np.ndarray) -> bool:
    return np.shares_memory(a, b)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x,
        lambda x: x[...],
        lambda x: x.reshape(-1),
        lambda x: +x,
        lambda x: x.astype(F32),
        lambda x: x[1:, ::2],
        lambda x: x.T,
    ],
    ids=["identity", "x[...]", "reshape", "+x", "astype same dtype", "slice", "transpose"],
)
def test_returning_an_input_returns_a_copy(rng, fn):
    x = rand(rng, (3, 4))
    got = jit(fn)(x, target="cpu-loops")
    assert not _shares(got, x)
    assert_like_numpy(got, fn(x))
    got[...] = 0
    assert np.any(x != 0)


@pytest.mark.parametrize("target", ["cpu-loops", "cpu-loops-unfused"])
def test_same_value_returned_twice(rng, target):
    x = rand(rng, (3, 4))
    f = jit(lambda x: (lambda y: (y, y, {"again": y}))(x + 1))
    first, second, tree = f(x, target=target)
    assert not _shares(first, second) and not _shares(first, tree["again"])
    assert_like_numpy((first, second, tree["again"]), (x + 1, x + 1, x + 1))
    g = jit(lambda x: (x, x))
    a, b = g(x, target=target)
    assert not _shares(a, b) and not _shares(a, x)
    assert_like_numpy((a, b), (x, x))


def test_each_call_returns_fresh_arrays(rng):
    x = rand(rng, (3, 4))
    first = twice_plus(x, x, target="cpu-loops")
    second = twice_plus(x, x, target="cpu-loops")
    assert not _shares(first, second)
    first[...] = 0
    assert_like_numpy(second, x * 3)


def test_inputs_are_not_modified(rng):
    x, w = rand(rng, (3, 4)), rand(rng, (4, 5))
    kept = x.copy(), w.copy()
    f = jit(lambda x, w: (ops.softmax(x @ w), x.T * 2, x[1:] + 1, x.sum(axis=0)))
    for target in ("cpu-loops", "cpu-blas", "cpu-loops-unfused"):
        f(x, w, target=target)
    np.testing.assert_array_equal(x, kept[0])
    np.testing.assert_array_equal(w, kept[1])


def test_concurrent_calls_from_threads(rng):
    x, w = rand(rng, (8, 6), F64), rand(rng, (6, 7), F64)
    f = jit(lambda x, w: np.tanh(x @ w) * 2)
    compiled = f.compile(x, w, target="cpu-blas")
    inputs = [(x + i, w) for i in range(4)]
    wants = [np.tanh((x + i) @ w) * 2 for i in range(4)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(200):
                assert_like_numpy(compiled(*inputs[i]), wants[i])
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def _trace_in_two_threads():
    first_weight = np.full((3, 4), 1.0, np.float32)
    second_weight = np.full((3, 4), 2.0, np.float32)
    both_tracing, both_captured = threading.Barrier(2, timeout=20), threading.Barrier(2, timeout=20)

    @jit
    def first(x):
        both_tracing.wait()  # both functions are being traced at the same time
        y = x + first_weight  # a captured array: it must join *this* trace
        both_captured.wait()
        return y

    @jit
    def second(x):
        both_tracing.wait()
        y = x * second_weight
        both_captured.wait()
        return y

    results: dict[str, object] = {}

    def run(name, fn):
        try:
            results[name] = fn(np.ones((3, 4), np.float32), target="cpu-loops")
        except BaseException as error:  # noqa: BLE001
            results[name] = error

    threads = [threading.Thread(target=run, args=(n, f)) for n, f in [("1", first), ("2", second)]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {k: (v if isinstance(v, np.ndarray) else repr(v)) for k, v in results.items()}


def test_concurrent_tracing_in_two_threads():
    results = isolated(_trace_in_two_threads)
    assert isinstance(results["1"], np.ndarray), results["1"]
    assert isinstance(results["2"], np.ndarray), results["2"]
    np.testing.assert_array_equal(results["1"], np.full((3, 4), 2.0, np.float32))
    np.testing.assert_array_equal(results["2"], np.full((3, 4), 2.0, np.float32))


# --------------------------------------------------------------------------------------------
# Memory stays flat over many calls


def _rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


@pytest.mark.parametrize("target", ["cpu-blas", "cpu-loops-unfused"])
def test_memory_is_flat_over_10000_calls(rng, target):
    # Temporaries of ~10 KB each: leaking one per call would be ~100 MB over 10,000 calls.
    @jit
    def block(x, w, table, ids):
        hidden = ops.softmax(x @ w) * 2.0 - x.mean(axis=-1, keepdims=True)
        return {"hidden": hidden.T[1:], "rows": ops.gather(table, ids), "total": hidden.sum()}

    x, w = rand(rng, (64, 48)), rand(rng, (48, 40))
    table, ids = rand(rng, (50, 40)), rand(rng, (16,), I32, 0, 50)
    for _ in range(300):
        block(x, w, table, ids, target=target)
    before = _rss_mb()
    for _ in range(10_000):
        out = block(x, w, table, ids, target=target)
    growth = _rss_mb() - before
    assert growth < 20, f"RSS grew by {growth:.1f} MB over 10,000 calls"
    assert block.traces == 1
    assert_like_numpy(out["rows"], table[ids])


# --------------------------------------------------------------------------------------------
# Releasing specializations


def test_clear_releases_one_functions_specializations(rng):
    f, g = _scaled(), _scaled()
    x, y = rand(rng, (3, 4)), rand(rng, (4,))
    f.compile(x, y, target="cpu-loops")
    f.compile(x, y, target="cpu-loops-unfused")
    g.compile(x, y, target="cpu-loops")
    size = compiler.cache_size()
    f.clear()
    assert compiler.cache_size() == size - 2
    g.compile(x, y, target="cpu-loops")
    assert g.traces == 1  # g's specialization survived
    f.compile(x, y, target="cpu-loops")
    # f's were released and it had to be traced again (its two targets had shared one trace)
    assert f.traces == 2
    assert compiler.cache_size() == size - 1


def test_clear_cache_releases_everything(rng):
    f = _scaled()
    x, y = rand(rng, (3, 4)), rand(rng, (4,))
    f.compile(x, y, target="cpu-loops")
    assert compiler.cache_size() >= 1
    compiler.clear_cache()
    assert compiler.cache_size() == 0
    np.testing.assert_allclose(f(x, y, target="cpu-loops"), x * 2.0 + y, rtol=1e-6)
    assert f.traces == 2 and compiler.cache_size() == 1


def test_released_specializations_are_garbage(rng):
    f = _scaled()
    x, y = rand(rng, (3, 4)), rand(rng, (4,))
    first = weakref.ref(f.compile(x, y, target="cpu-blas"))
    f.clear()
    gc.collect()
    assert first() is None  # nothing else (engine, ctypes entry point) keeps it alive
    second = weakref.ref(f.compile(x, y, target="cpu-blas"))
    compiler.clear_cache()
    gc.collect()
    assert second() is None


def test_a_collected_function_takes_its_specializations_with_it(rng):
    """Nothing can call a collected jitted function's specializations again: they go with it
    (at the cache's next insertion, or when its size is asked), and its kernels are garbage;
    another function's stay."""
    f, g = _scaled(), _scaled()
    x, y = rand(rng, (3, 4)), rand(rng, (4,))
    kernel = weakref.ref(f.compile(x, y, target="cpu-loops"))
    g.compile(x, y, target="cpu-loops")
    size = compiler.cache_size()
    del f
    gc.collect()
    assert compiler.cache_size() == size - 1 and kernel() is None
    g.compile(x, y, target="cpu-loops")
    assert g.traces == 1


def test_cache_is_bounded(rng, monkeypatch):
    jit_module = importlib.import_module("compiler.api")
    monkeypatch.setattr(jit_module, "MAX_SPECIALIZATIONS", 2)
    compiler.clear_cache()
    f = _scaled()
    y = rand(rng, (4,))
    for rows in (1, 2, 3):
        f.compile(rand(rng, (rows, 4)), y, target="cpu-loops")
    assert compiler.cache_size() == 2
    f.compile(rand(rng, (3, 4)), y, target="cpu-loops")  # the most recent one is kept
    assert f.traces == 3
    f.compile(rand(rng, (1, 4)), y, target="cpu-loops")  # the oldest one was evicted
    assert f.traces == 4


# --------------------------------------------------------------------------------------------
# In-process compile caches (stages and kernels shared across targets and recompiles)


def test_targets_reaching_identical_ir_share_stages_and_the_kernel(rng):
    x = rand(rng, (3, 4))
    first = jit(lambda a: np.exp(a) + 1).compile(x, target="cpu-loops")
    second = jit(lambda a: np.exp(a) + 1).compile(x, target="cpu-blas")  # no matmul for BLAS
    assert first.stages["lowered"] == second.stages["lowered"]
    assert "llvm" in second.artifacts.notes.get("shared", "").split(",")
    assert second.artifacts.native is first.artifacts.native
    # The cached stages keep their texts and reproduce commands.
    assert set(second.stages) == {"module", "optimized", "bufferized", "blas", "libm", "lowered"}
    assert set(second.artifacts.commands) >= {"optimized", "bufferized", "blas", "libm", "lowered"}
    np.testing.assert_allclose(second(x), np.exp(x) + 1, rtol=1e-6)


def test_fresh_compiles_every_stage_and_the_kernel_again(rng):
    from compiler import driver

    x, w = rand(rng, (3, 4)), rand(rng, (4, 5))
    cached = jit(lambda a, b: a @ b).compile(x, w, target="cpu-blas")
    with driver.fresh():
        again = jit(lambda a, b: a @ b).compile(x, w, target="cpu-blas")
    assert "shared" not in again.artifacts.notes
    assert again.artifacts.native is not cached.artifacts.native
    assert again.stages == cached.stages
    np.testing.assert_array_equal(again(x, w), cached(x, w))


def test_a_kept_pass_manager_gives_what_a_new_one_gives(rng):
    """Stages reuse one pass manager per pipeline in the thread's context (``pass_manager``);
    run after other programs, it gives the text a new one gives, and a new context gets new
    ones."""
    from mlir import ir, passmanager

    from compiler import pipelines
    from compiler.pipelines import pass_manager, resolve

    x, w = rand(rng, (3, 4)), rand(rng, (4, 5))
    texts = [
        jit(lambda a, b: np.exp(a @ b).max(axis=1)).emit(x, w),
        jit(lambda a: np.tanh(a).sum(axis=0) - a[1]).emit(x),
        jit(lambda a, b: (a @ b).T * 2.0).emit(x, w),
    ]
    targets = [resolve(name) for name in ("cpu-loops", "cpu-blas", "cpu-vector")]

    def lowered(text, target, new):
        module = ir.Module.parse(text)
        for stage in target.stages:
            if stage.pipeline and new:
                passmanager.PassManager.parse(stage.pipeline).run(module.operation)
            else:
                stage.run(module)
        return str(module)

    with ir.Context() as context:
        runs = [(t, target) for target in targets for t in texts]
        kept = [lowered(t, target, new=False) for t, target in runs * 2]  # after the others
        assert kept[: len(runs)] == kept[len(runs) :]
        assert kept[: len(runs)] == [lowered(t, target, new=True) for t, target in runs]
        one = pass_manager(pipelines.LOWER, context)
        assert pass_manager(pipelines.LOWER, context) is one
    with ir.Context() as other:
        assert pass_manager(pipelines.LOWER, other) is not one


def test_a_different_opt_level_or_program_gets_its_own_kernel(rng):
    x = rand(rng, (3, 4))
    base = jit(lambda a: a * 2).compile(x, target="cpu-loops")
    level = jit(lambda a: a * 2).compile(x, target="cpu-loops@O0")
    other = jit(lambda a: a * 3).compile(x, target="cpu-loops")
    assert level.artifacts.native is not base.artifacts.native
    assert other.artifacts.native is not base.artifacts.native
    np.testing.assert_allclose(other(x), x * 3, rtol=1e-6)


LINKED = ["cpu-loops@O0", "cpu-blas@O0", "cpu-loops-unfused@O0", "cpu-vector@O0", "cpu-vector"]


def _exp_matmul(a, b):
    return np.exp(a @ b) - a.sum(axis=1, keepdims=True)


def test_prepare_links_each_levels_kernels_into_one_jit(rng):
    """A worker compiling one program for several targets JITs their distinct lowered modules
    as one LLVM module per optimization level; each kernel is bit-identical to its own JIT."""
    from compiler import driver

    driver.clear_caches()  # no kernel of an earlier test
    x, w = rand(rng, (3, 4)), rand(rng, (4, 4))
    f = jit(_exp_matmul)
    # cpu-loops, its unfused form and cpu-vector reach three lowered modules at -O0 (cpu-blas
    # takes the matmul: a fourth); cpu-vector alone at -O3 gets its own JIT.
    assert f.prepare(x, w, targets=LINKED) == 4
    compiled = {t: f.compile(x, w, target=t) for t in LINKED}
    assert f.traces == 1  # prepare's trace serves every target
    at_o0 = [compiled[t] for t in LINKED[:4]]
    assert {c.artifacts.notes.get("linked") for c in at_o0} == {"4"}
    assert len({id(c.artifacts.native.engine) for c in at_o0}) == 1
    assert "linked" not in compiled["cpu-vector"].artifacts.notes
    for target, one in compiled.items():
        with driver.fresh():
            alone = jit(_exp_matmul).compile(x, w, target=target)
        assert alone.artifacts.native.engine is not one.artifacts.native.engine
        np.testing.assert_array_equal(one(x, w), alone(x, w))
        np.testing.assert_allclose(one(x, w), _exp_matmul(x, w), rtol=1e-5, atol=1e-6)
    # A second prepare finds every kernel made: nothing to link.
    assert jit(_exp_matmul).prepare(x, w, targets=LINKED) == 0


def test_a_linked_jit_missing_a_symbol_leaves_each_target_to_its_own(rng, monkeypatch):
    """An unresolved symbol fails the whole linked module (its lookups return null): no kernel
    is kept from it, so each target JITs alone, and the one that needs the symbol crashes at
    its call with the JIT's "Symbols not found" on stderr, which triage names it from."""
    from compiler import driver, runtime

    real = runtime.make_engine

    class Unresolved:
        def __init__(self, module, level):
            self.engine = real(module, level)

        def raw_lookup(self, name):
            return 0 if name.endswith("__k1") else self.engine.raw_lookup(name)

    driver.clear_caches()
    x, w = rand(rng, (2, 3)), rand(rng, (3, 2))
    f = jit(lambda a, b: (a @ b) * 3)
    monkeypatch.setattr(runtime, "make_engine", Unresolved)
    assert f.prepare(x, w, targets=["cpu-loops@O0", "cpu-blas@O0"]) == 0
    monkeypatch.undo()
    assert "linked" not in f.compile(x, w, target="cpu-loops@O0").artifacts.notes
    np.testing.assert_allclose(f(x, w, target="cpu-blas@O0"), (x @ w) * 3, rtol=1e-5)


def test_prepare_raises_nothing_and_leaves_failures_to_the_compile():
    f = jit(lambda a, b: a + b)
    x, y = np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)
    assert f.prepare(x, y, targets=LINKED) == 0
    with pytest.raises(ValueError, match="broadcast"):
        f.compile(x, y, target="cpu-loops@O0")
    assert f.prepare(x, x, targets=["cpu-loops@O0", "graph-numpy"]) == 0  # one of ours only


_DEFINES = """module {{
  llvm.func @helper(%arg0: {t}) -> {t} {{ llvm.return %arg0 : {t} }}
  llvm.func @ext(i64) -> {d}
  llvm.func @kernel(%arg0: {t}) -> {t} {{
    %0 = llvm.call @helper(%arg0) : ({t}) -> {t}
    llvm.return %0 : {t}
  }}
}}"""


def test_linking_renames_each_modules_symbols_and_keeps_one_declaration():
    from mlir import ir

    from compiler import driver

    with ir.Context():
        linked = driver._link(
            [_DEFINES.format(t="f32", d="f32"), _DEFINES.format(t="i64", d="f32")]
        )
        names = [ir.StringAttr(op.attributes["sym_name"]).value for op in linked.body.operations]
        assert sorted(names) == sorted(
            ["helper__k0", "ext", "kernel__k0", "helper__k1", "kernel__k1"]
        )
        assert "llvm.call @helper__k1" in str(linked)
        linked.operation.verify()
        # Two declarations of one name that differ: not linkable.
        assert (
            driver._link([_DEFINES.format(t="f32", d="f32"), _DEFINES.format(t="f32", d="i64")])
            is None
        )


def _sixteen_bit_results(dtype_name: str) -> list:
    import ml_dtypes

    dtype = np.dtype(getattr(ml_dtypes, dtype_name, None) or dtype_name)
    x = np.array([1.5, -2.0, 3.0, 0.25, 7.0], dtype)
    results = []
    for fn in (lambda a: a + a, lambda a: np.min(a, axis=0)):
        results.append((jit(fn)(x, target="cpu-loops@O0"), fn(x)))
    return results


@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
def test_sixteen_bit_programs_find_the_conversions_llvm_calls(dtype_name):
    """LLVM lowers float -> bfloat16 truncation to a ``__truncsfbf2`` call that no module
    declares; an engine that loaded the runtime libraries only for declared symbols crashed the
    process on every bfloat16 program (SIGSEGV after 'JIT session error: Symbols not found')."""
    for got, want in isolated(_sixteen_bit_results, dtype_name):
        np.testing.assert_array_equal(got, want)


def test_a_kernel_key_is_shapes_and_dtypes_not_the_graph():
    """The kernel cache was keyed by ``repr`` of the signature, which walked every node's whole
    graph (20% of a fuzz worker's time; a deep chain exceeds the recursion limit)."""
    from compiler.frontend.graph import Node
    from compiler.lower.emit import KernelSignature

    x = node = Node("input", (), (2, 3), np.dtype(np.float32))
    for _ in range(5000):
        node = Node("elementwise", (node,), (2, 3), np.dtype(np.float32))
    deep = KernelSignature([x], [node], 1)
    with pytest.raises(RecursionError):
        repr(deep)
    flag = Node("elementwise", (x,), (2, 3), np.dtype(bool))
    byte = Node("elementwise", (x,), (2, 3), np.dtype(np.int8))
    assert deep.key() == ((((2, 3), "float32"),), (((2, 3), "float32"),), 1)
    assert KernelSignature([x], [flag], 0).key() != KernelSignature([x], [byte], 0).key()


# --------------------------------------------------------------------------------------------
# Verification: once a stage, or after every pass when asked


def test_verifying_a_stage_once_or_after_every_pass_gives_the_same_text(rng):
    """A stage verifies its output once, at its end, unless ``verify_each`` asks for every pass
    (``mlir-opt``'s default): the passes are the same, so every stage's text is too, on every
    CPU target; each mode keeps its own pass manager."""
    from mlir import ir

    from compiler import driver, pipelines
    from compiler.pipelines import pass_manager, resolve, verify_each, verifying_each

    x, w = rand(rng, (3, 4)), rand(rng, (4, 5))
    graphs = [
        jit(lambda a, b: np.exp(a @ b).max(axis=1)).trace(x, w)[1],
        jit(lambda a: np.tanh(a).sum(axis=0) - a[1]).trace(x)[1],
    ]
    for target in ("cpu-loops", "cpu-blas", "cpu-vector@O0"):
        for graph in graphs:
            with driver.fresh():
                once = driver.compile_graph(graph, resolve(target), native=False).stages
                with verify_each():
                    assert verifying_each()
                    each = driver.compile_graph(graph, resolve(target), native=False).stages
            assert not verifying_each()
            assert once == each, target
    with ir.Context() as context:
        plain = pass_manager(pipelines.LOWER, context)
        with verify_each():
            verifying = pass_manager(pipelines.LOWER, context)
            assert verifying is not plain and pass_manager(pipelines.LOWER, context) is verifying
        assert pass_manager(pipelines.LOWER, context) is plain


def test_a_stage_that_fails_reports_the_error_of_a_run_verifying_every_pass(rng):
    """A stage that fails while verifying only its end is run again verifying after every pass,
    and that run's error (the one naming the pass, as ``mlir-opt``'s) is the one reported."""
    from mlir import ir

    from compiler import driver
    from compiler.errors import CompilerError
    from compiler.pipelines import Stage, Target, verifying_each

    graph = jit(lambda a: a * 2.0).trace(rand(rng, (3, 4)))[1]
    seen: list[bool] = []

    def invalid(module):
        """Leaves IR that does not verify, with a mark of how it was run."""
        seen.append(verifying_each())
        mark = "verified-each" if verifying_each() else "verified-once"
        with ir.InsertionPoint(module.body), ir.Location.unknown():
            ir.Operation.create(
                "func.return", operands=[], attributes={mark: ir.UnitAttr.get()}
            )  # a terminator outside any function: the module does not verify

    broken = Target("broken", (Stage("invalid", transform=invalid),), opt_level=0)
    with driver.fresh(), pytest.raises(CompilerError) as failed:
        driver.compile_graph(graph, broken, native=False)
    assert seen == [False, True] and "verified-each" in str(failed.value)
    assert failed.value.stage == "invalid"


def test_the_graph_interpreter_returns_arrays_of_its_own() -> None:
    """``graph-numpy`` keeps a kernel's contract: outputs are fresh arrays. NumPy's value of a
    graph that returns its input (or a view of it) is that array, so the determinism oracle's
    aliasing check failed there too, and a held-out runtime that reused its output buffers was
    attributed to the frontend."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for fn in (lambda a: a, lambda a: a.T, lambda a: a.reshape(3, 2)):
        compiled = jit(fn).compile(x, target="graph-numpy")
        first, again = compiled(x), compiled(x)
        assert not np.shares_memory(first, x) and not np.shares_memory(first, again)
        np.testing.assert_array_equal(first, fn(x))


@pytest.mark.parametrize("target", ["cpu-loops", "cpu-vector"])
def test_numpy_scalars_alone_are_zero_d_arrays_as_in_numpy(target) -> None:
    """A NumPy scalar is a 0-d array to NumPy's ufuncs: ``xp.sqrt(abs(c))`` of a captured 0-d
    array ``c`` (whose ``abs`` NumPy computes, a scalar) raised TypeError inside a trace (the
    fuzzer's nested-call oracle, methods spelling). A Python scalar alone stays an error."""
    import compiler

    c = np.array(-2.0)
    x = np.array([1.0, 2.0], np.float32)

    def f(x, np_or_xp):
        xp = np_or_xp or x.__array_namespace__()
        return (
            xp.maximum(x, xp.sqrt(abs(c))),
            xp.sqrt(np.float32(4)),
            xp.add(np.float64(1), np.float64(2)),
            xp.exp(np.float16(1)),
            xp.negative(np.int32(3)),
        )

    got = compiler.jit(lambda x: f(x, None))(x, target=target)
    for g, want in zip(got, f(x, np), strict=True):
        g, want = np.asarray(g), np.asarray(want)
        assert g.dtype == want.dtype and g.shape == want.shape, (g, want)
        np.testing.assert_allclose(g.astype(np.float64), want.astype(np.float64), rtol=1e-6)
    with pytest.raises(TypeError, match="sqrt: expected a traced tensor, got the scalar 2.0"):
        compiler.jit(lambda x: x.__array_namespace__().sqrt(2.0))(x, target=target)
