"""The blas oracle: a backend with a BLAS stage makes the gemm calls its bufferized matmuls
promise, whatever the values say."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from planted_reproducer import verdict_fails_only_with_the_bug

from harness.selftest import Mutation


def _promised(fn, *inputs, target: str = "cpu-blas@O0") -> int | None:
    import compiler
    from harness.oracles.blas import STAGE, promised_calls

    compiled = compiler.jit(fn).compile(*inputs, target=target)
    return promised_calls(compiled.stages[STAGE])


def test_the_contract_counts_each_gemm_readable_matmul_on_the_real_target() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    assert _promised(lambda a, b: a[:, 1:6] @ b, x, w) == 1  # rows 8 apart: a leading dimension
    assert _promised(lambda a, b: a[:, ::2][:, :3] @ b[:3], x, w) == 0  # stride 2: loops
    assert _promised(lambda a, b: (a @ a.T) @ a, x, w) == 2
    batched = rng.standard_normal((4, 6, 5)).astype(np.float64)
    assert _promised(lambda a, b: a @ b, batched, batched.transpose(0, 2, 1).copy()) == 4
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert _promised(lambda a: a @ a.T, ints) == 0  # no integer gemm
    assert _promised(lambda a: a @ a.T, x.astype(np.float16)) == 0  # f16 into f32: loops
    assert _promised(lambda a: np.exp(a), x) == 0
    assert _promised(lambda a, b: a[:, 1:6] @ b, x, w, target="cpu-vector@O0") == 1


def test_the_layout_rules_of_the_contract() -> None:
    from harness.oracles.blas import promised_calls

    def line(a: str, b: str, c: str, op: str = "matmul") -> str:
        return f"linalg.{op} ins(%a, %b : {a}, {b}) outs(%c : {c})"

    plain = "memref<4x5xf32>"
    assert promised_calls(line(plain, "memref<5x3xf32>", "memref<4x3xf32>")) == 1
    # The transpose of a contiguous matrix: column-major.
    transposed = "memref<4x5xf32, strided<[1, 4]>>"
    assert promised_calls(line(transposed, "memref<5x3xf32>", "memref<4x3xf32>")) == 1
    # Rows closer than a row apart, and a stride in both dimensions: loops.
    overlapping = "memref<4x5xf32, strided<[3, 1]>>"
    assert promised_calls(line(overlapping, "memref<5x3xf32>", "memref<4x3xf32>")) == 0
    both = "memref<4x5xf32, strided<[20, 2], offset: 1>>"
    assert promised_calls(line(both, "memref<5x3xf32>", "memref<4x3xf32>")) == 0
    # A transposed output: gemm writes row-major only.
    out = "memref<4x3xf32, strided<[1, 4]>>"
    assert promised_calls(line(plain, "memref<5x3xf32>", out)) == 0
    # One column (any stride) or one row reads both ways.
    column = "memref<5x1xf32, strided<[7, 9]>>"
    assert promised_calls(line(plain, column, "memref<4x1xf32>")) == 1
    # Mixed element types: no gemm; a dynamic stride: unknown.
    assert promised_calls(line(plain, "memref<5x3xf64>", "memref<4x3xf64>")) == 0
    dynamic = "memref<4x5xf32, strided<[?, 1], offset: ?>>"
    assert promised_calls(line(dynamic, "memref<5x3xf32>", "memref<4x3xf32>")) is None
    mapped = "memref<4x5xf32, #map>"  # a layout as an affine map: not judged
    assert promised_calls(line(mapped, "memref<5x3xf32>", "memref<4x3xf32>")) is None
    batch = line("memref<7x4x5xf64>", "memref<7x5x3xf64>", "memref<7x4x3xf64>", "batch_matmul")
    assert promised_calls(batch) == 7


def test_fewer_calls_than_promised_is_a_finding_attributed_to_blas() -> None:
    from harness.case import Case
    from harness.oracles.base import Judgement, Observation
    from harness.oracles.blas import Blas
    from harness.run.task import BackendResult
    from harness.triage.attribution import Attributor
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("matmul", b.input((3, 4), "float32"), b.input((4, 2), "float32")))
    case = Case(program, [np.ones((3, 4), np.float32), np.ones((4, 2), np.float32)])
    results = [
        BackendResult("cpu-blas@O0", "ok", blas=(1, 0)),
        BackendResult("cpu-blas-unfused@O0", "ok", blas=(1, 1)),
        BackendResult("cpu-vector@O0", "ok", blas=(2, 3)),
        BackendResult("cpu-loops@O0", "ok"),
    ]
    (finding,) = Blas().judge(Observation(case, results, {}, Judgement()), [])
    assert (finding.kind, finding.backends, finding.stage) == ("not-blas", ("cpu-blas@O0",), "blas")
    assert "0 gemm call(s) made where 1 were promised" in finding.detail
    assert Attributor(None).attribute(case, finding).layer == "blas"


def test_the_worker_reports_promised_and_made_calls() -> None:
    from harness.case import Case
    from harness.run.task import Task
    from harness.run.worker import execute
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("matmul", b.input((3, 4), "float64"), b.input((4, 2), "float64")))
    inputs = [np.ones((3, 4)), np.ones((4, 2))]
    backends = ("cpu-blas@O0", "cpu-loops@O0", "cpu-vector@O0")
    results = execute(Task(Case(program, inputs, backends))).results
    assert {r.backend: r.blas for r in results} == {
        "cpu-blas@O0": (1, 1),
        "cpu-loops@O0": None,  # no BLAS stage
        "cpu-vector@O0": (1, 1),
    }


_MAKE = """
import sys
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from harness.triage.attribution import Attributor
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x, w = b.input((5, 6), "float32"), b.input((6, 3), "float32")
program = b.build(b.node("matmul", x, w))
inputs = [np.ones((5, 6), np.float32), np.arange(18, dtype=np.float32).reshape(6, 3)]
case = Case(program, inputs, ("cpu-blas@O0", "cpu-loops@O0"))
with Runner(None, use_jax=False) as runner:
    judgement = runner.evaluate(case)
    (finding,) = judgement.findings  # the values are right: only the blas oracle sees it
    assert (finding.kind, finding.oracle, finding.backends) == (
        "not-blas", "blas", ("cpu-blas@O0",)), finding
    assert Attributor(runner).attribute(case, finding).layer == "blas"
open(sys.argv[1], "w").write(reproducer(case, finding))
"""


@pytest.mark.slow
def test_a_helper_that_declines_every_matmul_is_found_and_reproduced(tmp_path: Path) -> None:
    """A planted layout test in the BLAS helper (row-major only with one column: a surviving
    mutant of a mutation run; every answer stays right, through the loop-nest fallback) is a
    ``not-blas`` finding attributed to the BLAS stage, and its reproducer fails with the bug and
    passes without it."""
    mutation = Mutation(
        "helper-row-major-needs-one-column",
        "lower/blas.py",
        "%{p}_unitr = arith.ori %{p}_c1, %{p}_s1u : i1",
        "%{p}_unitr = arith.andi %{p}_c1, %{p}_s1u : i1",
        "the helper takes a matrix as row-major only when it has one column",
    )
    verdict_fails_only_with_the_bug(tmp_path, mutation, _MAKE, "blas")
