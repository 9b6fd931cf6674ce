"""Coverage cells: what a case exercised is data the session counts and the report shows."""

from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler.lower import blas
from harness.case import Case
from harness.coverage import case_cells, novelty, stage_cells, universe
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

A = np.arange(48, dtype=np.float32).reshape(6, 8)
B = np.ones((8, 5), np.float32)


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (lambda a, b: a @ b, ["gemm"]),
        (lambda a, b: a[::2] @ b, ["gemm-ld"]),
        (lambda a, b: a[:, :4] @ b[:4], ["gemm-ld"]),
        (lambda a, b: a[:, ::2] @ b[::2], ["fallback"]),
        (lambda a, b: a.sum(), []),
    ],
)
def test_blas_paths_name_how_each_matmul_is_passed(fn, expected) -> None:
    compiled = compiler.jit(fn).compile(A, B, target="cpu-blas")
    assert blas.paths(compiled.stages["bufferized"]) == expected
    cells = stage_cells(compiled.stages)
    assert {c for c in cells if c.startswith("blas:")} == {f"blas:{p}" for p in expected}


def test_stage_cells_name_the_ops_reaching_each_stage() -> None:
    compiled = compiler.jit(lambda a: np.exp(a).sum(axis=1)).compile(A, target="cpu-loops")
    cells = stage_cells(compiled.stages)
    assert "mlir:optimized|linalg.generic" in cells or "mlir:optimized|linalg.reduce" in cells
    assert "mlir:bufferized|memref.alloc" in cells
    assert any(c.startswith("mlir:lowered|llvm.") for c in cells)
    assert not any(c.startswith("mlir:module|") for c in cells)  # follows from the program
    assert not any(c.startswith("blas:") for c in cells)


def _case(steps, *inputs, backends=("cpu-loops",)):
    """``steps`` is a list of ``(op, attrs)`` applied in turn to the first input (a binary op
    takes the second input as its other operand)."""
    b = ProgramBuilder()
    refs = [b.input(a.shape, str(a.dtype)) for a in inputs]
    out = refs[0]
    for op, attrs in steps:
        args = (out, refs[1]) if op in ("add", "matmul") else (out,)
        out = b.node(op, *args, **attrs)
    return Case(b.build(out), list(inputs), tuple(backends))


def test_case_cells_see_values_and_shape_features() -> None:
    x = np.array([[1.0, np.nan, -0.0], [np.inf, 2.0, 3.0]], np.float32)
    case = _case([("index", {"key": (slice(None), slice(None, None, -2))}), ("exp", {})], x)
    cells = case_cells(case)
    assert {"special:nan|exp", "special:inf|exp", "special:-0.0|exp"} <= cells
    assert "special:-inf|exp" not in cells
    assert "shape:negative-step" in cells
    assert "shape:uneven-step" in cells  # 3 columns, step 2
    assert any(c.startswith("op:exp|float32|cpu-loops") for c in cells)
    plain = case_cells(_case([("exp", {})], np.ones((4, 4), np.float32)))
    assert not any(c.startswith(("special:", "shape:negative")) for c in plain)


def test_case_cells_see_permutations_reshapes_and_broadcasts() -> None:
    x = np.ones((2, 3, 4), np.float32)
    cycle = case_cells(_case([("permute_dims", {"axes": (1, 2, 0)})], x))
    swap = case_cells(_case([("permute_dims", {"axes": (0, 2, 1)})], x))
    assert "shape:cycle-permutation" in cycle and "shape:cycle-permutation" not in swap
    assert "shape:split-merge-reshape" in case_cells(_case([("reshape", {"shape": (6, 4)})], x))
    middle = case_cells(_case([("add", {})], x, np.ones((2, 1, 4), np.float32)))
    assert "shape:middle-broadcast" in middle


def test_universe_includes_cells_never_hit_and_every_hit_op_cell() -> None:
    cells = universe(["cpu-loops", "cpu-blas"], regimes=("ordinary",))
    assert "op:exp|float32|cpu-blas" in cells and "blas:fallback" in cells
    hit = case_cells(_case([("exp", {})], np.ones(3, np.float32)))
    assert {c for c in hit if c.startswith(("op:", "shape:", "regime:"))} <= cells
    spelled = case_cells(_case([("exp", {})], np.ones(3, np.float32)).respelled("numpy"))
    assert "spelling:numpy|exp" in spelled and "spelling:numpy|exp" in cells
    assert not any(c.startswith("spelling:") for c in hit)


def test_novelty_prefers_rare_cells() -> None:
    counts = {"a": 10, "b": 0}
    assert novelty({"b"}, counts) > novelty({"a"}, counts)
    assert novelty({"c"}, counts) == 1.0
    assert novelty(set(), counts) == 0.0


def test_runner_counts_cells_including_the_workers() -> None:
    case = _case([("matmul", {})], A, B, backends=("cpu-blas",))
    with Runner(use_jax=False) as runner:
        runner.evaluate(case)
        cells = runner.stats.cells
    assert cells.get("blas:gemm") == 1
    assert cells.get("op:matmul|float32|cpu-blas") == 1
    assert any(c.startswith("mlir:lowered|") for c in cells)
