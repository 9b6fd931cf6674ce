"""Reproducers are judged like the oracle: a 1e-4 change of one float32 element fails both, and a
standalone reproducer of a planted bug fails where the bug is and passes where it is not."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from planted_reproducer import run_with_and_without

from harness import oracles
from harness.case import Case
from harness.run.references import references
from harness.run.task import BackendResult
from harness.selftest import Mutation
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
import ml_dtypes
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
    text, with_bug, clean = run_with_and_without(tmp_path, mutation, _MAKE)
    assert "harness.verdict" in text
    assert with_bug.returncode == 1 and "FAILS" in with_bug.stderr, with_bug.stderr[-2000:]
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]


_MAKE_GATHER = """
import sys
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

b = ProgramBuilder()
program = b.build(b.node("gather", b.input((4, 3), "float32"), b.input((2,), "int32", bound=4)))
case = Case(
    program, [np.ones((4, 3), np.float32), np.array([1, 4], np.int32)], ("cpu-loops",)
)
with Runner(None, use_jax=False) as runner:
    (finding,) = runner.evaluate(case).findings
    assert (finding.kind, finding.oracle) == ("wrong-error", "error-path"), finding
open(sys.argv[1], "w").write(reproducer(case, finding))
"""


@pytest.mark.slow
def test_a_run_time_error_path_reproducer_fails_exactly_where_the_oracle_does(
    tmp_path: Path,
) -> None:
    """An id equal to the table's row count must make a gather raise, as NumPy's reference
    does: both raise on the real compiler, so the reproducer (which a default one could not be:
    NumPy's evaluation raises first) judges the two outcomes as the oracle does."""
    mutation = Mutation(
        "gather-accepts-the-row-count",
        "lower/emit.py",
        '"%high = arith.cmpi sge, %a0, %rows : i32"',
        '"%high = arith.cmpi sgt, %a0, %rows : i32"',
        "a gather lets an id equal to the table's row count through",
    )
    text, with_bug, clean = run_with_and_without(tmp_path, mutation, _MAKE_GATHER)
    assert "from harness.verdict import error_path" in text
    assert with_bug.returncode == 1 and "FAILS the error-path oracle" in with_bug.stderr, (
        with_bug.stdout + with_bug.stderr[-2000:]
    )
    assert clean.returncode == 0 and "both raised ValueError" in clean.stdout, (
        clean.stdout + clean.stderr[-2000:]
    )


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


_MAKE_SPELLED = """
import sys
import ml_dtypes
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x = b.input((2, 3), "float32")
program = b.build(b.node("where", b.node("greater_equal", x, 0.5), x, 0.0))
case = Case(program, [np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)], ("cpu-loops",))
with Runner(None, use_jax=False) as runner:
    # The operator spelling passes every backend; the spelling oracle traces np.greater_equal.
    (finding,) = runner.evaluate(case).findings
    assert finding.oracle == "spelling[numpy]" and finding.case.spelling == "array-api", finding
    (own,) = runner.evaluate(case.respelled("numpy")).findings
    assert own.kind == finding.kind, (own, finding)
open(sys.argv[1], "w").write(reproducer(case, finding))
"""


@pytest.mark.slow
def test_a_reproducer_calls_the_compiler_as_the_failing_case_did(tmp_path: Path) -> None:
    """A bug in NumPy's dispatch (``np.greater_equal`` on a traced tensor refused) is found by a
    case written with NumPy's functions, and, by the spelling oracle, from the same case written
    with operators; its reproducer is written with NumPy's functions: it fails on the bug and
    passes without it (one printed with ``>=`` passed on the bug)."""
    mutation = Mutation(
        "lost-ufunc-dispatch",
        "frontend/tensor.py",
        "table.setdefault(prim.ufunc.__name__, _elementwise_function(prim.name))",
        "prim.name == 'greater_equal' or table.setdefault(prim.ufunc.__name__, "
        "_elementwise_function(prim.name))",
        "np.greater_equal on a traced tensor is refused",
    )
    text, with_bug, clean = run_with_and_without(tmp_path, mutation, _MAKE_SPELLED)
    assert "xp = np" in text and "xp.greater_equal(x0, 0.5)" in text, text
    assert with_bug.returncode != 0 and "greater_equal" in with_bug.stderr, with_bug.stderr[-2000:]
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]


def test_the_printed_function_is_the_evaluated_one() -> None:
    """For generated cases in every spelling, the reproducer's function (its printed text,
    executed) computes exactly what the references' evaluation (the default spelling) does:
    NumPy's semantics do not depend on the spelling, so neither may the printed program's."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from compiler.primitives import SPELLINGS
    from harness.session.generate import cases
    from strategies.model.printing import function_source

    @settings(max_examples=60, database=None, suppress_health_check=list(HealthCheck))
    @given(cases(("cpu-loops",), mix="programs"), st.sampled_from(SPELLINGS))
    def check(case, spelling):
        case = case.respelled(spelling)
        scope = {"np": np, "ops": __import__("compiler.ops").ops, "ml_dtypes": ml_dtypes}
        exec("\n".join(function_source(case.program, spelling=spelling)), scope)
        with np.errstate(all="ignore"):
            try:
                expected = case.function(np)(*case.inputs)
            except (ValueError, TypeError, FloatingPointError) as error:
                with pytest.raises(type(error)):
                    scope["program"](*case.inputs)
                return
            printed = scope["program"](*case.inputs)
        assert np.asarray(printed).dtype == np.asarray(expected).dtype
        # Bit for bit (NumPy's testing does not take a bfloat16 NaN for a NaN)
        assert np.asarray(printed).tobytes() == np.asarray(expected).tobytes(), (printed, expected)

    check()


@pytest.mark.parametrize("backend,instrumented", [("cpu-vector", False), ("cpu-vector@O0", True)])
def test_a_reproducer_instruments_its_kernel_as_the_worker_did(matmul_case, backend, instrumented):
    """The worker runs the backends named as users run them uninstrumented
    (``case.instrumented_backend``): the reproducer of a finding on one must too, or it runs
    another kernel than the one that failed."""
    from compiler.runtime import INSTRUMENT_ENV
    from harness.oracles.base import Finding
    from harness.report.reproducer import reproducer

    finding = Finding("mismatch", (backend,), "differential", "off", matmul_case)
    text = reproducer(matmul_case, finding)
    assert (f"os.environ[{INSTRUMENT_ENV!r}] = '1'" in text) == instrumented
    assert ("not instrumented, as in the fuzzer" in text) == (not instrumented)
