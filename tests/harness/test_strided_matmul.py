"""Strided-matmul cases: views in every layout the BLAS substitution has a path for."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from planted_reproducer import run_with_and_without

from harness.selftest import Mutation


@pytest.mark.slow
def test_strided_matmuls_take_every_blas_path_and_agree_with_numpy() -> None:
    """Drawn strided matmuls reach gemm, gemm with a leading dimension and the loop fallback
    (a view with an inner step); the real compiler agrees with NumPy on each. Before the
    layouts were drawn per operand, no case reached the fallback (0 of 40), so a planted bug in
    its inner-stride test went unseen."""
    from harness.run.runner import Runner
    from harness.session import generate

    paths: Counter[str] = Counter()
    layouts: Counter[str] = Counter()
    mixed: Counter[str] = Counter()
    events = generate.event

    def note(text: str) -> None:
        if text.startswith("strided-matmul:"):
            layouts.update(text.split(":", 1)[1].replace("+T", "").split("@"))
        if text.startswith("strided-matmul-dtypes:"):
            mixed[text.split(":", 1)[1]] += 1

    generate.event = note
    try:
        with Runner(None, use_jax=False) as runner:

            @seed(1)
            @settings(
                max_examples=30, phases=[Phase.generate], database=None, deadline=None,
                suppress_health_check=list(HealthCheck),
            )  # fmt: skip
            @given(generate.strided_matmul_cases(("cpu-blas@O0",)))
            def check(case) -> None:
                assert not runner.evaluate(case).findings, case.program
                paths.update(c for c in runner.last_cells if c.startswith("blas:"))

            check()
    finally:
        generate.event = events
    assert {"blas:gemm", "blas:gemm-ld", "blas:fallback"} <= set(paths), paths
    assert set(layouts) == set(generate.OPERAND_LAYOUTS), layouts
    # A third multiply operands of two dtypes (and agree with NumPy, above).
    assert 5 <= sum(mixed.values()) <= 20 and len(mixed) >= 4, mixed


def test_a_mixed_strided_matmul_finds_a_right_operand_cast_to_the_left_ones_dtype() -> None:
    """A mixed strided matmul's values are not integers where the dtypes differ, so a trace
    rule that cast the right operand to the left one's dtype, not to NumPy's result dtype
    (float32 @ float64 as a float32 product; a held-out plant, unseen in 60 s sessions), is
    wrong on each case whose left operand is the narrower."""
    from harness.session import generate
    from harness.verdict import judge_output

    verdicts = []

    @seed(2)
    @settings(
        max_examples=120, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(generate.strided_matmul_cases(("cpu-blas@O0",)))
    def judge(case) -> None:
        left, right = case.inputs
        if left.dtype == right.dtype or np.result_type(left, right) == left.dtype:
            return
        # The right operand's values as the left one's dtype holds them, in its own dtype.
        narrowed = right.astype(left.dtype).astype(right.dtype)
        if np.array_equal(narrowed, right):  # (small ints: float32 holds them)
            return
        with np.errstate(all="ignore"):
            wrong = case.traced_function()(left, narrowed)
            right_answer = case.traced_function()(left, right)
        verdicts.append(
            (
                judge_output(case, right_answer, use_jax=False).ok,
                judge_output(case, wrong, use_jax=False).ok,
            )
        )

    judge()
    assert len(verdicts) >= 3, verdicts
    assert all(ok for ok, _ in verdicts) and not any(wrong for _, wrong in verdicts), verdicts


_MAKE = """
import sys
from hypothesis import HealthCheck, Phase, given, seed, settings
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from harness.session.generate import strided_matmul_cases

found = []
with Runner(None, use_jax=False) as runner:
    @seed(1)
    @settings(max_examples=40, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strided_matmul_cases(("cpu-blas@O0",)))
    def hunt(case):
        if not found:
            found.extend((case, f) for f in runner.evaluate(case).findings[:1])
    hunt()
case, finding = found[0]
open(sys.argv[1], "w").write(reproducer(case, finding))
"""


@pytest.mark.slow
def test_a_planted_inner_stride_bug_of_the_blas_stage_is_found(tmp_path: Path) -> None:
    """The BLAS helper takes any positive inner stride for a unit one (``x[:, ::2] @ y`` goes to
    gemm as if contiguous: a mutant that survived 60 s sessions); strided matmuls find it and
    the finding's reproducer fails with the bug and passes without it."""
    mutation = Mutation(
        "blas-inner-stride",
        "lower/blas.py",
        "%{p}_s1u = arith.cmpi eq, {s1}, %c1 : index",
        "%{p}_s1u = arith.cmpi sge, {s1}, %c1 : index",
        "a strided row taken for a contiguous one",
    )
    text, with_bug, clean = run_with_and_without(tmp_path, mutation, _MAKE)
    assert "matmul" in text
    assert with_bug.returncode == 1 and "FAILS" in with_bug.stderr, with_bug.stderr[-2000:]
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]
