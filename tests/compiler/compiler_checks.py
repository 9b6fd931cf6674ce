"""Helpers shared by the compiler tests: random inputs, the NumPy reference, and comparisons.

The reference for a ``@jit`` function is the *same Python function* run eagerly on the NumPy
arrays: the compiler claims NumPy semantics, so NumPy itself is the oracle for the result's shape,
dtype, values and error class.

MLIR is built with assertions, so a compiler bug can abort the whole process. ``check`` and
``stages`` therefore compile and run in an isolated process: the harness's own worker
(``harness.run.isolation.call``, spawned, reused across tests, replaced after a crash), so an
abort fails that one test with MLIR's message instead of killing the pytest worker. Set
``COMPILER_TESTS_IN_PROCESS=1`` to run everything in-process (for a debugger).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import compiler
from harness.run.isolation import Crashed, call

F32, F64, I32 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32)

ALL_TARGETS = compiler.backends.cpu_targets()  # every CPU target (aliases included)
FUSED = ["cpu-loops", "cpu-blas", "cpu-vector"]
UNFUSED = ["cpu-loops-unfused", "cpu-blas-unfused"]
MATMUL_TARGETS = FUSED  # the ones that must agree on every matmul case
REAL_TARGETS = FUSED + UNFUSED  # every target once (the aliases resolve to one of these)

RTOL = {F32: 2e-6, F64: 1e-12}

ISOLATE = not os.environ.get("COMPILER_TESTS_IN_PROCESS")
CHILD_TIMEOUT_S = 120.0
CompilerCrashed = Crashed


def isolated(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in the isolated process; its result, or its exception raised here,
    or ``CompilerCrashed`` with the process's stderr (MLIR's assertion text)."""
    __tracebackhide__ = True
    if not ISOLATE:
        return fn(*args, **kwargs)
    return call(fn, *args, timeout=CHILD_TIMEOUT_S, **kwargs)


def rand(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    dtype: Any = np.float32,
    low: float = -2.0,
    high: float = 2.0,
) -> np.ndarray:
    """Uniform values in [low, high) (integers for int32), always an ndarray (also when 0-d)."""
    dtype = np.dtype(dtype)
    if dtype == I32:
        return np.asarray(rng.integers(int(low), int(high), size=shape), dtype=np.int32)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    return np.asarray(rng.uniform(low, high, size=shape)).astype(dtype)


def reference(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn`` run eagerly by NumPy (the oracle); floating-point warnings silenced."""
    fn = getattr(fn, "fn", fn)  # a JitFunction's Python function
    with np.errstate(all="ignore"):
        return fn(*args, **kwargs)


def _leaves(tree: Any, path: str = "") -> Iterable[tuple[str, Any]]:
    if isinstance(tree, dict):  # by key: the compiler rebuilds dicts in sorted-key order
        for key in sorted(tree, key=repr):
            yield from _leaves(tree[key], f"{path}[{key!r}]")
    elif isinstance(tree, (tuple, list)):
        for i, item in enumerate(tree):
            yield from _leaves(item, f"{path}[{i}]")
    else:
        yield path, tree


def _structure(tree: Any) -> Any:
    if isinstance(tree, dict):
        keys = sorted(tree, key=repr)
        return ("dict", tuple(keys), tuple(_structure(tree[k]) for k in keys))
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(_structure(v) for v in tree))
    return "*"


def default_atol(want: np.ndarray) -> float:
    """A few ulps of the largest finite magnitude of the expected result."""
    if want.dtype.kind != "f":
        return 0.0
    finite = np.abs(want[np.isfinite(want)])  # also fine for 0-d arrays
    scale = float(np.max(finite, initial=0.0))
    return 4 * float(np.finfo(want.dtype).eps) * max(1.0, scale)


def assert_leaf(got: Any, want: Any, rtol: float | None, atol: float | None, where: str) -> None:
    want = np.asarray(want)
    assert isinstance(got, np.ndarray), f"{where}: expected an ndarray, got {type(got).__name__}"
    assert got.shape == want.shape, f"{where}: shape {got.shape} != NumPy's {want.shape}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != NumPy's {want.dtype}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    r = RTOL[want.dtype] if rtol is None else rtol
    a = default_atol(want) if atol is None else atol
    np.testing.assert_allclose(got, want, rtol=r, atol=a, equal_nan=True, err_msg=where)


def assert_like_numpy(
    got: Any, want: Any, *, rtol: float | None = None, atol: float | None = None
) -> None:
    """Same tree structure, and per leaf: an ndarray of NumPy's shape, dtype and values.

    ``rtol`` defaults to 2e-6 (float32) / 1e-12 (float64); ``atol`` to a few ulps of the largest
    expected magnitude. Integer and boolean results must be exact; NaN/inf positions must match.
    """
    assert _structure(got) == _structure(want), f"output tree {_structure(got)} != {want!r}"
    for (where, g), (_, w) in zip(_leaves(got), _leaves(want), strict=True):
        assert_leaf(g, w, rtol, atol, where or "result")


def _check_targets(jf, args, kwargs, targets, rtol, atol, want) -> None:
    for target in targets:
        got = jf(*args, target=target, **kwargs)
        try:
            assert_like_numpy(got, want, rtol=rtol, atol=atol)
        except AssertionError as error:
            raise AssertionError(f"target {target}: {error}") from None


def check(
    jf: compiler.JitFunction,
    *args: Any,
    targets: Iterable[str] = ("cpu-loops",),
    rtol: float | None = None,
    atol: float | None = None,
    **kwargs: Any,
) -> Any:
    """Run ``jf`` on every target in ``targets`` (in a forked child) and compare each result
    against NumPy's; returns NumPy's result."""
    __tracebackhide__ = True
    want = reference(jf, *args, **kwargs)
    isolated(_check_targets, jf, args, kwargs, list(targets), rtol, atol, want)
    return want


def matmul_atol(a: np.ndarray, b: np.ndarray, dtype: Any) -> float:
    """Error bound of a dot product of length K: K ulps of max(|a| @ |b|)."""
    a64, b64 = np.abs(a).astype(np.float64), np.abs(b).astype(np.float64)
    k = a.shape[-1]
    bound = float(np.max(np.matmul(a64, b64)))
    return 2 * k * float(np.finfo(dtype).eps) * max(bound, 1.0)


def _stages(jf, args, kwargs) -> dict[str, str]:
    compiled = jf.compile(*args, **kwargs)
    texts = dict(compiled.stages)
    # The parsed modules, as MLIR prints them (the `module` stage is the builder's own text).
    for name in ("module", "optimized", "lowered"):
        texts[f"{name}.printed"] = str(getattr(compiled, name))
    return texts


def stages(jf: compiler.JitFunction, *args: Any, **kwargs: Any) -> dict[str, str]:
    """``Compiled.stages`` (stage name -> MLIR text) for these arguments, compiled in a forked
    child, plus ``module.printed``, ``optimized.printed`` and ``lowered.printed``: ``str()`` of
    the Compiled's ``.module``, ``.optimized`` and ``.lowered``. ``target`` defaults to
    cpu-blas."""
    kwargs.setdefault("target", "cpu-blas")
    return isolated(_stages, jf, args, kwargs)


def ops_in(text: str) -> list[str]:
    """The operation names in MLIR text, in order of appearance (``linalg.matmul``, ...)."""
    return re.findall(r"\b((?:linalg|tensor|arith|math|func|memref|llvm)\.[a-z_]+)\b", text)
