"""The schedule oracle: cpu-vector's structured ops are vectorized, whatever the values say."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from planted_reproducer import run_with_and_without

from harness.selftest import Mutation


def _left(fn, *inputs) -> list[str]:
    import compiler
    from harness.oracles.schedule import STAGE, left_as_loops

    compiled = compiler.jit(fn).compile(*inputs, target="cpu-vector@O0")
    return left_as_loops(compiled.stages[STAGE])


def test_the_contract_holds_on_the_real_target_with_its_exemptions() -> None:
    """Elementwise ops, reductions, transposes and matmuls the BLAS stage does not take
    (int32, float16) are vectorized; a float32 matmul (BLAS), a rank-0 result and a
    negative-step view (run as loops on purpose) are exempt: nothing is reported."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 12)).astype(np.float32)
    ints = np.arange(20, dtype=np.int32).reshape(5, 4)
    assert _left(lambda a: np.exp(a) * 2 + a.sum(axis=1, keepdims=True), x) == []
    assert _left(lambda a: a.T * 3, x) == []
    assert _left(lambda a, b: a @ b, ints, ints.T.copy()) == []  # int32: vectorized
    assert _left(lambda a, b: a @ b, x.astype(np.float16), x.T.astype(np.float16)) == []
    assert _left(lambda a, b: a @ b, x, x.T.copy()) == []  # float32: the BLAS stage's
    assert _left(lambda a: a.sum(), x) == []
    assert _left(lambda a: a[::-2, ::-3] + 1, x) == []


def test_an_op_left_as_loops_is_named_with_its_element_types_and_why() -> None:
    from harness.oracles.schedule import left_as_loops

    text = """#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (-d0 + 4, d1)>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<5x12xf32>) outs(%e : tensor<5x12xf32>) {
  %2 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<5x12xf32>) outs(%e : tensor<5x12xf32>) {
  %3 = linalg.matmul {vec.id = 3 : i64} ins(%a, %b : tensor<5x4xi32>, tensor<4x5xi32>) outs(%c : tensor<5x5xi32>) -> tensor<5x5xi32>
  %4 = linalg.matmul ins(%a, %b : tensor<5x4xf64>, tensor<4x5xf64>) outs(%c : tensor<5x5xf64>) -> tensor<5x5xf64>
  %5 = linalg.reduce ins(%x : tensor<?x4xf32>) outs(%y : tensor<?xf32>) dimensions = [1]
  %6 = linalg.fill ins(%z : f32) outs(%o : tensor<5x5xf32>) -> tensor<5x5xf32>
"""  # noqa: E501 - MLIR as printed
    assert left_as_loops(text) == ["linalg.generic|f32|untagged", "linalg.matmul|i32|refused"]


_MAKE = """
import sys
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from harness.triage.attribution import Attributor
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x, y = b.input((4, 9), "float32"), b.input((4, 9), "float32")
program = b.build(b.node("multiply", b.node("add", x, y), 2.0))
inputs = [np.ones((4, 9), np.float32), np.arange(36, dtype=np.float32).reshape(4, 9)]
case = Case(program, inputs, ("cpu-vector@O0", "cpu-loops@O0"))
with Runner(None, use_jax=False) as runner:
    judgement = runner.evaluate(case)
    (finding,) = judgement.findings  # the values are right: only the schedule oracle sees it
    assert (finding.kind, finding.oracle, finding.backends) == (
        "not-vectorized", "schedule", ("cpu-vector@O0",)), finding
    assert Attributor(runner).attribute(case, finding).layer == "vector-planner"
open(sys.argv[1], "w").write(reproducer(case, finding))
"""


@pytest.mark.slow
def test_a_planner_that_vectorizes_nothing_is_found_and_reproduced(tmp_path: Path) -> None:
    """A planted planner bug (every indexing map judged to have a negative coefficient, so no
    op is tiled: the answers stay right, the target runs scalar loops; a surviving mutant of a
    mutation run) is a ``not-vectorized`` finding attributed to the planner, and its reproducer
    fails with the bug and passes without it."""
    mutation = Mutation(
        "nothing-tileable",
        "vector/schedule.py",
        "        return _positive(expr.lhs) and _positive(expr.rhs)\n    return True\n",
        "        return _positive(expr.lhs) and _positive(expr.rhs)\n    return False\n",
        "no op is tileable",
    )
    text, with_bug, clean = run_with_and_without(tmp_path, mutation, _MAKE)
    assert "from harness.verdict import vectorized" in text
    assert with_bug.returncode == 1 and "FAILS the schedule" in with_bug.stderr, with_bug.stderr
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]


def test_a_finding_names_the_stage_it_lives_in_and_attribution_follows_it() -> None:
    """An op left untagged is the planner's (``vector-planned``), even beside one the vectorizer
    refused; ops only refused are the vectorizer's (``vectorized``)."""
    from harness.case import Case
    from harness.oracles.base import Judgement, Observation
    from harness.oracles.schedule import PREFIX, Schedule
    from harness.run.task import BackendResult
    from harness.triage.attribution import Attributor
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("exp", b.input((4, 9), "float32")))
    case = Case(program, [np.ones((4, 9), np.float32)], ("cpu-vector@O0",))
    expected = {
        ("linalg.generic|f32|untagged", "linalg.matmul|i32|refused"): ("vector-planned", "planner"),
        ("linalg.matmul|i32|refused",): ("vectorized", "vectorizer"),
    }
    for left, (stage, layer) in expected.items():
        result = BackendResult("cpu-vector@O0", "ok", cells=[PREFIX + item for item in left])
        (finding,) = Schedule().judge(Observation(case, [result], {}, Judgement()), [])
        assert finding.stage == stage, finding
        assert Attributor(None).attribute(case, finding).layer.endswith(layer)
