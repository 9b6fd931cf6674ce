"""Strided-matmul cases: views in every layout the BLAS substitution has a path for."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

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
    events = generate.event

    def note(text: str) -> None:
        if text.startswith("strided-matmul:"):
            layouts.update(text.split(":", 1)[1].replace("+T", "").split("@"))

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
