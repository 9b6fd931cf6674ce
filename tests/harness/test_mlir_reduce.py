"""The structural MLIR reducer makes its candidates in the isolated process: the bindings abort
on some mutated modules, and in a fuzz driver that abort killed the driver, its finding left
unminimized for good."""

from __future__ import annotations

import time

import reducer_faults

from harness.triage import mlir_reduce

MODULE = """
func.func @f(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  %1 = arith.mulf %0, %0 : f32
  %2 = arith.subf %1, %a : f32
  return %2 : f32
}
"""


def test_a_candidate_that_aborts_is_skipped_and_the_reduction_goes_on(monkeypatch) -> None:
    monkeypatch.setattr(mlir_reduce, "_candidate", reducer_faults.abort_on_erasing_the_first_op)
    best = mlir_reduce.structural_reduce(
        MODULE, lambda text: "arith.mulf" in text, time.monotonic() + 120
    )
    assert "arith.mulf" in best  # still interesting
    assert "arith.subf" not in best  # and reduced, past the candidate that aborted
    assert len(best) < len(MODULE)
