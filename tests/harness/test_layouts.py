"""Input layouts: the same values in Fortran order, with negative strides, as a strided view, at
an unaligned start, read-only; the compiler must take each as the values it holds."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from planted_reproducer import run_with_and_without

from harness.case import Case
from harness.oracles.base import Finding
from harness.run.layouts import DEFAULT, LAYOUTS, applicable, arrange, source
from harness.selftest import Mutation
from harness.triage.minimize import minimize
from strategies.model import ProgramBuilder

DTYPES = [np.float32, np.float64, np.int32, np.bool_, ml_dtypes.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_layout_keeps_the_values_and_the_reproducer_line_does_the_same(dtype) -> None:
    a = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    for name in LAYOUTS:
        b = arrange(a, name)
        assert b.dtype == a.dtype and b.shape == a.shape
        assert np.array_equal(b.astype(np.float64), a.astype(np.float64)), name
        scope = {"np": np, "x0": a}
        exec("\n".join(source("x0", a, name)), scope)
        printed = scope["x0"]
        assert printed.strides == b.strides and printed.flags.writeable == b.flags.writeable
        assert np.array_equal(printed.astype(np.float64), a.astype(np.float64)), name
    assert np.asfortranarray(a).flags.f_contiguous and not arrange(a, "fortran").flags.c_contiguous
    assert all(s < 0 for s in arrange(a, "reversed").strides)
    assert not arrange(a, "strided").flags.c_contiguous
    assert arrange(a, "offset").ctypes.data % 16 != 0
    assert not arrange(a, "readonly").flags.writeable


def test_layouts_apply_by_rank_and_the_default_is_the_array_itself() -> None:
    scalar, vector = np.float32(2.0).reshape(()), np.arange(3.0)
    assert applicable(scalar) == ["offset", "readonly", "scalar"]
    assert type(arrange(scalar, "scalar")) is np.float32 and "scalar" not in applicable(vector)
    assert "fortran" not in applicable(vector) and "strided" in applicable(vector)
    assert applicable(np.zeros((0, 3))) == []
    assert arrange(vector, DEFAULT) is vector and arrange(vector, "fortran") is vector
    with pytest.raises(ValueError, match="unknown input layout"):
        arrange(vector, "diagonal")


def _case() -> Case:
    b = ProgramBuilder()
    x, y = b.input((3, 4), "float32"), b.input((4, 2), "float32")
    program = b.build(b.node("add", b.node("matmul", x, y), 1.0))
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 2))]
    return Case(program, inputs, ("cpu-loops",))


def test_a_case_keeps_its_layouts_through_storage_and_drops_them_with_other_inputs() -> None:
    case = _case().with_layouts(("fortran", "strided"))
    again = Case.from_dict(case.to_dict())
    assert again.layouts == ("fortran", "strided") and again.digest() == case.digest()
    assert _case().with_layouts(("c", "c")).extra == {} and _case().digest() != case.digest()
    arranged = case.arranged(case.inputs)
    assert arranged[0].flags.f_contiguous and not arranged[1].flags.c_contiguous
    assert case.with_subject(case.subject).layouts == case.layouts
    fewer = case.with_subject(case.subject, case.inputs[:1])
    assert fewer.layouts == ()
    # Told which inputs it keeps, a case keeps their layouts (the minimizer dropping an
    # unused input, the intermediate oracle's smaller program).
    assert case.with_subject(case.subject, case.inputs[1:], (1,)).layouts == ("strided",)
    with pytest.raises(ValueError, match="bad input layouts"):
        _ = Case(case.subject, case.inputs, extra={"layouts": ["sideways", "c"]}).layouts


def test_the_minimizer_keeps_only_the_layout_the_failure_needs() -> None:
    def needs_strided_second(candidate: Case) -> Finding | None:
        if candidate.layouts[1:2] == ("strided",):
            return Finding("mismatch", ("cpu-loops",), "differential", "planted", candidate)
        return None

    case = _case().with_layouts(("fortran", "strided"))
    result = minimize(case, needs_strided_second(case), needs_strided_second, budget_seconds=30)
    assert result.case.layouts == ("c", "strided"), result.steps


@pytest.mark.slow
def test_a_share_of_generated_cases_hand_their_inputs_over_in_other_layouts() -> None:
    from collections import Counter

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.generate import cases

    seen: Counter[str] = Counter()
    for number in (1, 2, 3, 4):  # pooled: one stream's draws are correlated

        @seed(number)
        @settings(
            max_examples=60, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(cases(("cpu-loops",), mix="programs"))
        def collect(case: Case) -> None:
            seen["laid out" if case.layouts else "plain"] += 1
            seen.update(n for n in case.layouts if n != DEFAULT)

        collect()
    share = seen["laid out"] / (seen["laid out"] + seen["plain"])
    # Hypothesis's generate phase mutates earlier examples, so one stream's 200 draws were
    # correlated, and the stream under @seed(3) depended on what ran before in the process:
    # 13-15% alone, 6% after test_soundness, test_relations, test_tolerance and test_minimize,
    # 2.5% in CI's order once the generator drew more per constant, for LAYOUT_SHARE's 25% coin
    # (inputs all drawn in the default layout count as plain); four streams pooled. A bound
    # that holds in any order: layouts did not vanish, nor take over.
    assert 0.03 <= share <= 0.35, seen
    # Which layouts the few laid-out cases drew is that stream's too (CI's order: 11 laid out,
    # no Fortran order among them); each layout is drawn, for a matrix input, on its own:
    from hypothesis import find
    from hypothesis import strategies as st

    from harness.session.generate import with_layouts

    for name in LAYOUTS:
        shape = () if name == "scalar" else (3, 4)  # (a 0-d value's layout only)
        b = ProgramBuilder()
        program = b.build(b.node("exp", b.input(shape, "float32")))
        plain = Case(program, [np.ones(shape, np.float32)], ("cpu-loops",))
        found = find(
            with_layouts(st.just(plain)), lambda c, name=name: name in c.layouts,
            settings=settings(database=None, max_examples=500),
        )  # fmt: skip
        assert found.layouts == (name,)


_MAKE = """
import sys
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x, y = b.input((3, 4), "float32"), b.input((4, 2), "float32")
program = b.build(b.node("add", b.node("matmul", x, y), 1.0))
rng = np.random.default_rng(0)
inputs = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 2))]
case = Case(program, inputs, ("cpu-loops",))
with Runner(None, use_jax=False) as runner:
    assert not runner.evaluate(case).findings  # plain arrays do not reach the bug
    laid_out = case.with_layouts(("fortran", "c"))
    (finding,) = runner.evaluate(laid_out).findings
open(sys.argv[1], "w").write(reproducer(laid_out, finding))
"""


@pytest.mark.slow
def test_arguments_passed_with_their_own_strides_are_found_and_reproduced(tmp_path: Path) -> None:
    """A planted ABI bug (arguments no longer made C-contiguous before the call: the kernel
    reads a Fortran-ordered array as if it were C-ordered) is invisible to plain inputs; a case
    whose input is Fortran-ordered finds it, and its reproducer orders it so too: it fails on
    the bug and passes without it."""
    mutation = Mutation(
        "abi-no-contiguous",
        "api.py",
        'array = np.require(np.asarray(value), requirements="C")',
        "array = np.asarray(value)",
        "arguments passed with their own strides",
    )
    text, with_bug, clean = run_with_and_without(tmp_path, mutation, _MAKE)
    assert "x0 = np.asfortranarray(x0)" in text
    assert with_bug.returncode == 1 and "FAILS" in with_bug.stderr, with_bug.stderr[-2000:]
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]


_SCALAR = """
import sys
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

b = ProgramBuilder()
program = b.build(b.node("exp", b.input((), "float32")))
case = Case(program, [np.float32(0.5).reshape(())], ("cpu-loops",))
with Runner(None, use_jax=False) as runner:
    assert not runner.evaluate(case).findings  # a 0-d array does not reach the bug
    laid_out = case.with_layouts(("scalar",))
    findings = runner.evaluate(laid_out).findings
    assert findings, "not found"
open(sys.argv[1], "w").write(reproducer(laid_out, findings[0]))
"""


@pytest.mark.slow
def test_a_numpy_scalar_argument_is_taken_as_its_0d_array(tmp_path: Path) -> None:
    """A frontend that takes NumPy scalar arguments (``np.float32(0.5)``) for static values,
    not 0-d inputs (planted: their value baked in, a retrace per value, and a function of them
    alone returning a NumPy scalar): a 0-d input handed over as a NumPy scalar (the ``scalar``
    layout) finds it, and its reproducer hands it over so too."""
    mutation = Mutation(
        "numpy-scalars-static",
        "frontend/pytree.py",
        "    return isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, (str, "
        "bytes))",
        "    return isinstance(value, np.ndarray) and not isinstance(value, (str, bytes))",
        "NumPy scalar arguments taken as static values",
    )
    text, with_bug, clean = run_with_and_without(tmp_path, mutation, _SCALAR)
    assert "x0 = x0[()]" in text
    assert with_bug.returncode == 1, with_bug.stdout[-2000:] + with_bug.stderr[-2000:]
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]
