"""Reproducers are judged like the oracle: a 1e-4 change of one float32 element fails both, and a
standalone reproducer of a planted bug fails where the bug is and passes where it is not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness import oracles
from harness.case import Case
from harness.run.references import references
from harness.run.task import BackendResult
from harness.selftest import Mutation, apply, scratch_environment
from harness.verdict import judge_output


def test_a_single_element_perturbation_fails_the_oracle_and_the_verdict(matmul_case) -> None:
    x, w = matmul_case.inputs
    exact = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    off = exact.copy()
    off[1, 2] *= np.float32(1 + 1e-4)
    judged = oracles.judge_results(
        matmul_case, [BackendResult("cpu-loops", "ok", output=off)], references(matmul_case)
    )
    assert [f.kind for f in judged.findings] == ["mismatch"]
    assert not judge_output(matmul_case, off).ok
    assert judge_output(matmul_case, exact).ok


_MAKE = """
import sys
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

b = ProgramBuilder()
program = b.build(b.node("index", b.input((3, 6), "float32"), key=(slice(None), slice(2, 5))))
rng = np.random.default_rng(0)
case = Case(program, [rng.standard_normal((3, 6)).astype(np.float32)], ("cpu-loops",))
with Runner(None, use_jax=True) as runner:
    (finding,) = runner.evaluate(case).findings
open(sys.argv[1], "w").write(reproducer(case, finding))
"""


@pytest.mark.slow
def test_a_reproducer_fails_exactly_where_the_oracle_does(tmp_path: Path) -> None:
    mutation = Mutation(
        "off-by-one-slice",
        "lower/emit.py",
        "{fmt(a['offsets'])}",
        "{fmt(tuple(max(o - 1, 0) for o in a['offsets']))}",
        "extract_slice starts one element early",
    )
    scratch = apply(mutation, tmp_path / "src")
    planted = scratch_environment(scratch)
    script = tmp_path / "reproducer.py"
    made = subprocess.run(
        [sys.executable, "-c", _MAKE, str(script)],
        cwd=tmp_path, env=planted, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    assert "harness.verdict" in script.read_text()
    with_bug = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=planted, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert with_bug.returncode == 1 and "FAILS" in with_bug.stderr, with_bug.stderr[-2000:]
    clean = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]


def test_an_invalid_program_reproducer_prints_the_violation() -> None:
    from hypothesis import HealthCheck, given, settings

    from harness.oracles.base import Finding
    from harness.report.reproducer import reproducer
    from strategies import invalid_programs

    @settings(max_examples=8, database=None, suppress_health_check=list(HealthCheck))
    @given(invalid_programs())
    def check(invalid):
        inputs = [np.zeros(i.shape, i.dtype) for i in invalid.inputs]
        case = Case(invalid, inputs)
        finding = Finding("wrong-error", ("cpu-loops",), "error-path", "accepted", case)
        text = reproducer(case, finding)
        assert f"Invalid program ({invalid.violation})" in text
        if invalid.node is not None:
            assert "# invalid" in text  # the violating equation is printed, not just the program

    check()
