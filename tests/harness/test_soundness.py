"""Oracle soundness: no false positive where the compiler's error equals a reference's, bugs that
every reference shares are still caught, the repeat check sees reused output buffers, and a fixed
bug that comes back is reported by a fuzz session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from planted_reproducer import last_line_with

from harness.case import Case
from harness.run.runner import Runner
from harness.selftest import Mutation, apply, fuzz_command, scratch_environment
from strategies.model import ProgramBuilder


def _attend_case(seed: int) -> Case:
    length, width, heads = 5, 6, 3
    shapes = [(length, width), (width,), (width,), (width, 3 * width), (3 * width,)]
    shapes += [(width, width), (width,)]
    b = ProgramBuilder()
    refs = [b.input(s, "float32") for s in shapes]
    program = b.build(b.node("attend", *refs, heads=heads))
    rng = np.random.default_rng(seed)
    inputs = [(rng.standard_normal(s) * 0.5).astype(np.float32) for s in shapes]
    inputs[0] = np.repeat(rng.standard_normal((length, 1)), width, axis=1).astype(np.float32)
    return Case(program, inputs, ("cpu-loops", "cpu-blas-unfused"))


def test_constant_row_attend_passes_the_head_permutation_relation() -> None:
    """The clean compiler's error on these cases equals JAX's while NumPy happens to be exact;
    the relation's bound includes every reference's error, so this is not a finding."""
    with Runner(None, use_jax=True) as runner:
        for seed in range(6):
            judgement = runner.evaluate(_attend_case(seed), ("metamorphic:head-permutation",))
            assert "metamorphic:head-permutation" in judgement.oracles
            assert judgement.findings == [], [f.detail for f in judgement.findings]


# Mistakes in the composites' shared definition (compiler/ops.py), which every reference
# evaluates: only the spec oracle (independent implementations) or a relation can see them.
SHARED_DEFINITION_BUGS = (
    Mutation(
        "layer-norm-eps-outside-sqrt",
        "ops.py",
        "return centered / xp.sqrt(variance + eps) * gain + bias",
        "return centered / (xp.sqrt(variance) + eps) * gain + bias",
        "layer norm adds eps after the square root",
    ),
    Mutation(
        "layer-norm-plus-mean",
        "ops.py",
        "return centered / xp.sqrt(variance + eps) * gain + bias",
        "return (2 * x - centered) / xp.sqrt(variance + eps) * gain + bias",
        "layer norm adds the mean",
    ),
    Mutation(
        "gelu-constant",
        "ops.py",
        "(x + 0.044715 * x**3)",
        "(x + 0.0447 * x**3)",
        "GELU's cubic coefficient is off",
    ),
    Mutation(
        "attention-scale",
        "ops.py",
        "/ np.sqrt(depth)",
        "/ np.sqrt(depth + 1)",
        "attention scores scaled by the wrong depth",
    ),
    Mutation(  # exact in real arithmetic: cancels where |mean| >> std (a held-out plant)
        "layer-norm-one-pass-variance",
        "ops.py",
        "variance = xp.mean(centered * centered, axis=-1, keepdims=True)",
        "variance = xp.mean(x * x, axis=-1, keepdims=True)"
        " - xp.mean(x, axis=-1, keepdims=True) ** 2",
        "layer norm's variance as E[x^2] - E[x]^2",
    ),
    Mutation(  # a definition that raises on valid shapes stopped case generation (mutant m07)
        "attention-heads-merged-transposed",
        "ops.py",
        "(1, 0, 2)), (length, width))",
        "(1, 0, 2)), (width, length))",
        "attention merges its heads into a (width, length) context",
    ),
)

_EVALUATE = """
import json, sys
import numpy as np
from harness.case import Case
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

op, shapes, attrs, *values = json.loads(sys.argv[1])
dtype, offset = values or ("float64", 0.0)  # the first input's values: offset + N(0, 1)
b = ProgramBuilder()
refs = [b.input(tuple(s), dtype) for s in shapes]
program = b.build(b.node(op, *refs, **attrs))
rng = np.random.default_rng(3)
inputs = [rng.standard_normal(tuple(s)).astype(dtype) for s in shapes]
inputs[0] = (inputs[0] + offset).astype(dtype)
with Runner(None, use_jax=True) as runner:
    judgement = runner.evaluate(Case(program, inputs, ("cpu-loops",)))
print(json.dumps([[f.kind, f.oracle] for f in judgement.findings]))
"""

_COMPOSITE_CASES = {
    "layer-norm-eps-outside-sqrt": ("layer_norm", [[4, 6], [6], [6]], {}),
    "layer-norm-plus-mean": ("layer_norm", [[4, 6], [6], [6]], {}),
    "layer-norm-one-pass-variance": ("layer_norm", [[4, 6], [6], [6]], {}, "float32", 8.0),
    "gelu-constant": ("gelu", [[3, 5]], {}),
    "attention-scale": ("attention", [[5, 6], [6, 18], [18], [6, 6], [6]], {"heads": 3}),
    "attention-heads-merged-transposed": (
        "attention",
        [[5, 6], [6, 18], [18], [6, 6], [6]],
        {"heads": 3},
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("mutation", SHARED_DEFINITION_BUGS, ids=lambda m: m.name)
def test_a_bug_in_the_shared_definition_is_caught(mutation: Mutation, tmp_path: Path) -> None:
    case = json.dumps(_COMPOSITE_CASES[mutation.name])
    findings = json.loads(last_line_with(mutation, tmp_path, _EVALUATE, case))
    assert findings, f"{mutation.name} went unseen"
    assert {oracle for _, oracle in findings} <= {"spec", "metamorphic:layer-norm-shift"}


def test_spec_reference_computes_integer_means_in_float64() -> None:
    """mean of int32 is float64 in NumPy and float32 in JAX: the independent reference must not
    report its own float32 rounding as a bug of the shared definition (a clean-compiler false
    positive found by a session)."""
    from harness.oracles.spec import definition_verdict
    from harness.run.references import references

    b = ProgramBuilder()
    x = b.input((5,), "int32")
    program = b.build(b.node("gelu", b.node("mean", x, axis=-1, keepdims=False)))
    case = Case(program, [np.array([-1, 0, 3, -2, 3], np.int32)])
    assert definition_verdict(case, references(case, False)) is None


_SPEC_REPRODUCER = """
import json, sys
import numpy as np
from harness.case import Case
from harness.oracles.base import Finding
from harness.report.reproducer import reproducer
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x = b.input((3, 5), "float64")
case = Case(b.build(b.node("gelu", x)), [np.random.default_rng(3).standard_normal((3, 5))])
source = reproducer(case, Finding("spec", ("definition",), "spec", "planted", case))
exec(compile(source, "<reproducer>", "exec"), {"__name__": "__main__"})
"""


@pytest.mark.slow
def test_spec_reproducer_fails_exactly_when_the_definition_is_wrong(tmp_path: Path) -> None:
    clean = subprocess.run(
        [sys.executable, "-c", _SPEC_REPRODUCER], capture_output=True, text=True, timeout=300
    )
    assert clean.returncode == 0 and "ok:" in clean.stdout, clean.stderr[-2000:]
    mutation = next(m for m in SHARED_DEFINITION_BUGS if m.name == "gelu-constant")
    scratch = apply(mutation, tmp_path / mutation.name)
    planted = subprocess.run(
        [sys.executable, "-c", _SPEC_REPRODUCER],
        cwd=tmp_path,
        env=scratch_environment(scratch),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert planted.returncode == 1, (planted.stdout, planted.stderr[-2000:])
    assert "FAILS the spec oracle" in planted.stderr


_REPEAT = """
import json
import numpy as np
from harness.case import Case
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x = b.input((3, 4), "float32")
program = b.build(b.node("exp", x))
case = Case(program, [np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)], ("cpu-loops",))
with Runner(None, use_jax=False) as runner:
    found = [runner.evaluate(case, (name,)).findings for name in ("determinism", "tupled")]
print(json.dumps([[[f.kind, f.oracle] for f in findings] for findings in found]))
"""

OUTPUT_REUSE = Mutation(
    "reused-output-buffers",
    "runtime.py",
    "        outputs = output_buffers(self.signature, self.instrumented)\n"
    "        errors = [np.zeros((), INT32) for _ in range(self.signature.error_outputs)]\n"
    "        buffers = arrays + outputs + errors\n",
    "        outputs = self.__dict__.setdefault(\n"
    "            '_kept', output_buffers(self.signature, self.instrumented)\n"
    "        )\n"
    "        errors = [np.zeros((), INT32) for _ in range(self.signature.error_outputs)]\n"
    "        buffers = arrays + outputs + errors\n",
    "every call returns the same output arrays, overwritten",
)


@pytest.mark.slow
def test_reused_output_buffers_are_caught_by_the_oracle_whose_call_overwrote(
    tmp_path: Path,
) -> None:
    """Each call's answer is judged on a copy taken right after it: a held-out plant that
    returns one output array from every call had its answer replaced by the repeat check's, and
    the session stored that as a wrong answer (``differential``), which no replay of the
    differential oracle alone reproduced. Now the finding is ``aliasing``, named after the
    oracle whose call wrote over the answer (so that replaying it makes that call again). The
    determinism oracle's concurrent calls, sharing that one array, may also overwrite each
    other's answers: a ``race`` beside the ``aliasing`` (a CI run met one), also true of this
    plant; never a ``differential`` mismatch."""
    repeat, tupled = json.loads(last_line_with(OUTPUT_REUSE, tmp_path, _REPEAT))
    assert ["aliasing", "determinism"] in repeat, repeat
    assert all(oracle == "determinism" and kind in ("aliasing", "race") for kind, oracle in repeat)
    assert tupled == [["aliasing", "tupled"]], tupled


_SAVE_FIXED = """
import sys
from pathlib import Path
import numpy as np
from harness.case import Case
from harness.corpus import Corpus
from harness.run.runner import Runner
from harness.session.fuzz import finding_entry
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x, y = b.input((3, 1), "float32"), b.input((4,), "float32")
program = b.build(b.node("add", x, y))
rng = np.random.default_rng(0)
case = Case(program, [rng.standard_normal((3, 1)).astype(np.float32),
                      rng.standard_normal((4,)).astype(np.float32)], ("cpu-loops",))
with Runner(None, use_jax=False) as runner:
    (finding,) = runner.evaluate(case).findings
print(Corpus(Path(sys.argv[1])).save(finding_entry(case, finding, status="fixed"))[1])
"""

BROADCAST = Mutation(
    "wrong-broadcast-map",
    "lower/emit.py",
    "    lead = len(result) - len(operand)\n",
    "    lead = 0\n",
    "broadcast operands aligned left instead of right",
)


@pytest.mark.slow
def test_a_fuzz_session_reports_a_regression_of_a_fixed_entry(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    saved = Path(last_line_with(BROADCAST, tmp_path, _SAVE_FIXED, str(corpus)))
    assert json.loads(saved.read_text())["status"] == "fixed"
    scratch = tmp_path / BROADCAST.name  # the bug is back in this copy of the compiler
    command = fuzz_command(corpus, 3, 1, "--no-database", "--no-jax", "--backends", "cpu-loops")
    proc = subprocess.run(
        command, cwd=tmp_path, env=scratch_environment(scratch), capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "REGRESSION" in proc.stderr
    assert json.loads(saved.read_text())["status"] == "regressed"


def test_attention_masks_scores_beyond_1e10() -> None:
    """A clean-compiler session's spec finding (seed 9004): float32 inputs near 5e36 give scores
    near 1e73, which GPT-2's additive -1e10 mask no longer masks; the shared definition now masks
    with -inf, agrees with the independent attention, and stays causal."""
    from harness.oracles.spec import definition_verdict
    from harness.run.references import references

    data = json.loads(
        (Path(__file__).parent / "fixtures" / "attention_huge_scores_case.json").read_text()
    )
    case = Case.from_dict(data)
    assert definition_verdict(case, references(case, False)) is None
    from compiler import ops

    x, *weights = (np.asarray(a, np.float64) for a in case.inputs)
    before = ops.attention(x, *weights, heads=1)
    later = x.copy()
    later[-1] *= -3.0  # the last token changes: every earlier output must not
    after = ops.attention(later, *weights, heads=1)
    np.testing.assert_array_equal(before[:-1], after[:-1])


def test_spec_leaves_float64_overflow_to_float64() -> None:
    """A fresh-clone session's spec finding: linear of values near 1e306 overflows in float64
    (JAX gives nan, NumPy inf, by summation order) while the extended-precision truth is 0.0;
    float64's range, not a definition bug."""
    from harness.oracles.spec import definition_verdict
    from harness.run.references import references

    data = json.loads(
        (Path(__file__).parent / "fixtures" / "linear_overflow_case.json").read_text()
    )
    case = Case.from_dict(data)
    assert definition_verdict(case, references(case, False)) is None


def test_spec_leaves_float64_overflow_to_float64_when_the_truth_is_infinite() -> None:
    """The README command's session on a fresh clone: ``attend`` of values near 2.8e306. Both
    float64 evaluations give nan (inf - inf), the extended-precision truth is inf (the exact
    result is beyond float64's range): float64's range again, not a definition bug."""
    from harness.oracles.spec import definition_verdict
    from harness.run.references import references

    data = json.loads(
        (Path(__file__).parent / "fixtures" / "attend_overflow_case.json").read_text()
    )
    case = Case.from_dict(data)
    assert definition_verdict(case, references(case, False)) is None


def test_spec_leaves_a_sign_that_only_precision_decides() -> None:
    """A clean-compiler session's spec finding (float16, seed 7): ``sqrt(gelu(v))`` with v near
    -6. In extended precision gelu is a tiny negative and its sqrt nan; in float64, for the
    shared definition and the independent one alike, 1 + tanh rounds to 0, gelu is -0.0 and its
    sqrt -0.0. Precision, not a definition bug."""
    from harness.oracles.spec import definition_verdict
    from harness.run.references import references

    data = json.loads(
        (Path(__file__).parent / "fixtures" / "gelu_sqrt_precision_case.json").read_text()
    )
    case = Case.from_dict(data)
    refs = references(case, False)
    assert np.isnan(refs["truth"].output).any()
    assert definition_verdict(case, refs) is None


def test_numpys_own_float16_root_divergence_is_not_a_spec_finding() -> None:
    """A float16 ``x ** 0.5`` (a Python float exponent) is sqrt through NumPy's operator and pow
    through its float16 power loop: NumPy's own spellings differ at -inf and -0.0 (a clean
    10-minute session, seed 31, filed it as the table's rule being wrong). The same program
    on float32, or with a float16 exponent, has no such divergence and is still checked."""
    from harness.oracles.spec import _float16_root, table_verdict
    from strategies.model import Const, ProgramBuilder

    b = ProgramBuilder()
    x = b.input((3,), "float16")
    values = [np.array([-np.inf, -0.0, 4.0], np.float16)]
    case = Case(b.build(b.node("power", x, Const(0.5))), values)
    assert table_verdict(case) is None
    assert _float16_root([values[0], 0.5])
    assert not _float16_root([values[0].astype(np.float32), 0.5])
    assert not _float16_root([values[0], np.float16(0.5)])


def test_a_wrong_rule_in_the_primitive_table_is_a_spec_finding(monkeypatch) -> None:
    """The table's NumPy rule is what the compiler's tracing and every reference evaluate, so a
    wrong one is wrong everywhere alike: a mutant making ``unary_minus``'s rule ``a`` survived
    60 s of fuzzing (harness mutate, m11). Each elementwise rule is checked against NumPy's
    ufunc on the case's own values."""
    import dataclasses

    from compiler import primitives
    from harness.oracles.spec import table_verdict
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    case = Case(b.build(b.node("exp", b.node("unary_minus", x))), [np.ones((2, 3), np.float32)])
    assert table_verdict(case) is None
    # NaN equals NaN in every float dtype, bfloat16's ("V" to NumPy) included.
    import ml_dtypes

    b = ProgramBuilder()
    y = b.input((3,), "bfloat16")
    nan = Case(b.build(b.node("log", y)), [np.array([-1.0, 0.0, 2.0], ml_dtypes.bfloat16)])
    assert table_verdict(nan) is None
    wrong = dataclasses.replace(primitives.get("unary_minus"), evaluate=lambda xp, a, attrs: a[0])
    monkeypatch.setitem(primitives.PRIMITIVES, "unary_minus", wrong)
    detail = table_verdict(case)
    assert detail is not None and "unary_minus" in detail and "np.negative" in detail
    # The spec reproducer's verdict (harness.verdict.spec) fails exactly when the oracle does.
    from harness.verdict import spec

    assert spec(case.program.to_json(), case.inputs) == 1
    monkeypatch.undo()
    assert spec(case.program.to_json(), case.inputs) == 0


def test_a_rule_on_numpy_scalars_is_compared_with_the_ufunc_on_arrays(monkeypatch) -> None:
    """A reduction to 0-d gives the next rule NumPy scalars, whose arithmetic is not the ufunc
    loop's: float32 ``0.5 ** x`` at x = 18.9 is 2.0442462e-06 by scalar math and 2.044246e-06 by
    ``np.power`` on an AVX-512 machine (SVML), and a clean 5-minute session (seed 13) reported
    the table's rule as wrong. Both sides are compared on arrays; a wrong rule still is not."""
    import dataclasses

    from compiler import primitives
    from harness.oracles.spec import table_verdict
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((3,), "float32")
    program = b.build(b.node("power", 0.5, b.node("sum", x, axis=None)))
    case = Case(program, [np.array([8.0, 7.3, 3.6], np.float32)])
    assert table_verdict(case) is None
    swapped = dataclasses.replace(
        primitives.get("power"), evaluate=lambda xp, a, attrs: a[1] ** a[0]
    )
    monkeypatch.setitem(primitives.PRIMITIVES, "power", swapped)
    detail = table_verdict(case)
    assert detail is not None and "power" in detail and "np.power" in detail, detail


def test_a_spelling_of_a_table_entry_that_computes_otherwise_is_a_spec_finding(monkeypatch):
    """Each spelling of an entry (``x.sum(axis=0, keepdims=True)`` for ``xp.sum(...)``,
    ``np.add(a, b)`` for ``a + b``) must compute what its default rule does: the compiler traces
    the case's spelling while the references evaluate the default one, so a method render that
    drops ``keepdims`` would otherwise read as the compiler's fault."""
    import dataclasses

    from compiler import primitives
    from harness.oracles.spec import table_verdict
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    program = b.build(b.node("sum", b.node("add", x, 1.0), axis=0, keepdims=True))
    case = Case(program, [np.arange(6, dtype=np.float32).reshape(2, 3)])
    assert table_verdict(case) is None
    dropped = dataclasses.replace(
        primitives.get("sum"), method=lambda a, attrs: f"{a[0]}.sum(axis={attrs['axis']})"
    )
    monkeypatch.setitem(primitives.PRIMITIVES, "sum", dropped)
    detail = table_verdict(case)
    assert detail is not None and "sum" in detail and "methods spelling" in detail, detail
    monkeypatch.undo()
    wrong_call = dataclasses.replace(primitives.get("add"), call="subtract")
    monkeypatch.setitem(primitives.PRIMITIVES, "add", wrong_call)
    detail = table_verdict(case)
    assert detail is not None and "xp.subtract" in detail, detail


def test_only_a_failure_inside_the_shared_definition_blames_it() -> None:
    """The spec oracle calls a NumPy failure the definition's only when a frame of one of the
    program's composites in ``compiler/ops.py`` raised it: a gather of an id out of range in the
    same program raises in ``ops.py`` too, in no composite (an extreme-regime id did, 3 spec
    findings in 579 cases)."""
    from compiler import ops
    from harness.oracles.spec import _raised_in_definition

    def raised(fn) -> BaseException:
        try:
            fn()
        except Exception as error:  # noqa: BLE001
            return error
        raise AssertionError("no error")

    inside = raised(lambda: ops.linear(np.zeros((2, 3)), np.zeros((4, 5)), np.zeros(5)))
    outside = raised(lambda: np.zeros((2, 3)) @ np.zeros((4, 5)))
    gathered = raised(lambda: ops.gather(np.zeros((2, 3)), np.array([2], np.int32)))
    assert _raised_in_definition(inside, ["linear"])
    assert not _raised_in_definition(outside, ["linear"])
    assert not _raised_in_definition(gathered, ["linear", "softmax"])
    assert not _raised_in_definition(inside, ["softmax"])
    assert not _raised_in_definition(None, ["linear"])


def test_spec_leaves_a_cast_of_nan_to_an_integer_alone() -> None:
    """A 10-minute clean-compiler session (seed 1201): ``astype(log(linear(x ** 2, w, b)),
    int32)`` with a negative linear output. NumPy casts the NaN to INT_MIN, JAX to 0: the cast
    is undefined, so the shared and the independent definitions cannot be told apart there."""
    import json
    from pathlib import Path

    from harness.case import Case
    from harness.oracles.spec import spec_verdict
    from harness.run.references import references
    from strategies.model import ProgramBuilder

    fixture = Path(__file__).parent / "fixtures" / "linear_log_nan_to_int32_case.json"
    case = Case.from_dict(json.loads(fixture.read_text()))
    refs = references(case)
    assert refs["numpy"].undefined_cast
    assert spec_verdict(case, refs) is None
    b = ProgramBuilder()
    x = b.input((3,), "float64")
    plain = Case(b.build(b.node("astype", b.node("gelu", x), dtype="int32")), [np.ones(3)])
    assert not references(plain)["numpy"].undefined_cast


def test_references_keep_nan_times_false() -> None:
    """``layer_norm(x) * (x <= y).astype(float64)`` with ``x = -inf``: the layer norm is NaN and
    NaN times 0 is NaN, but XLA's algebraic simplifier turns a product with a converted mask
    into a select (jax-ml/jax#12233), so the jitted independent reference said 0 and the spec
    oracle reported the shared layer norm as wrong (a session on a clean compiler, focused on
    special values). The references compile without that pass."""
    from harness.oracles.spec import spec_verdict
    from harness.run.references import references

    b = ProgramBuilder()
    x, y = b.input((1, 1, 1), "float64"), b.input((2, 1, 1), "float64")
    gain, bias = b.input((1,), "float64"), b.input((1,), "float64")
    mask = b.node("astype", b.node("less_equal", x, y), dtype="float64")
    program = b.build(b.node("multiply", b.node("layer_norm", x, gain, bias), mask))
    inf = np.float64(np.inf)
    inputs = [np.full((1, 1, 1), -inf), np.array([0.0, np.nan]).reshape(2, 1, 1)]
    case = Case(program, inputs + [np.array([-inf]), np.array([-inf])])
    refs = references(case)
    assert np.isnan(refs["jax"].output).all() and np.isnan(refs["numpy"].output).all()
    assert spec_verdict(case, refs) is None


def test_spec_leaves_subnormal_results_alone() -> None:
    """A clean one-hour session's spec finding (seed 21): ``log(0.5 ** feedforward(...))`` with
    the exponent near 1075, 0.5 ** 1074.5 a subnormal (4.9e-324, its log -744.4), when the
    independent side ran on XLA's CPU backend, which flushed it to 0 (log: -inf). Both sides
    keep subnormals now; neither that case nor a bool decided by one is a definition bug."""
    from harness.oracles.spec import definition_verdict, independent_reference, shared_in_float64
    from harness.run.references import references

    data = json.loads(
        (Path(__file__).parent / "fixtures" / "subnormal_flush_case.json").read_text()
    )
    case = Case.from_dict(data)
    with np.errstate(all="ignore"):
        independent, shared = independent_reference(case), shared_in_float64(case)
    assert np.isclose(independent[2, 1], -744.44, rtol=1e-5)  # log of 2 ** -1074, not -inf
    assert np.array_equal(np.isneginf(independent), np.isneginf(shared))
    assert definition_verdict(case, references(case, False)) is None
    # The same subnormal decides an integer: bool(2.0 ** attend(...)) near 2 ** -1074.
    data = json.loads((Path(__file__).parent / "fixtures" / "subnormal_bool_case.json").read_text())
    case = Case.from_dict(data)
    assert definition_verdict(case, references(case, False)) is None


def test_spec_runs_the_independent_composites_in_float64() -> None:
    """A clean one-hour session's spec finding (seed 21): ``gelu(x.astype(float32))`` of -5.
    The cast made the independent side's gelu run in float32, where ``1 + tanh`` cancels
    (-4.47e-07 against the exact -2.29e-07), while the comparison takes that side for a
    float64 evaluation; the independent composites run in float64 and round their result."""
    from harness.oracles.spec import definition_verdict, independent_reference
    from harness.run.references import references

    data = json.loads(
        (Path(__file__).parent / "fixtures" / "gelu_float32_cast_case.json").read_text()
    )
    case = Case.from_dict(data)
    got = independent_reference(case)
    np.testing.assert_allclose(got[0, 0, 1], -2.2917962e-07, rtol=1e-6)
    assert definition_verdict(case, references(case, False)) is None


def test_spec_judges_the_shared_definition_against_the_independent_one_in_the_same_dtype() -> None:
    """A 60 s session's spec finding on a clean compiler (seed 3): ``int32 / gelu(x)`` with
    ``x`` float32's smallest subnormal. float32's gelu of it rounds to 0.0 (0.5 * x is a tie,
    to even) and the quotient is -inf; the independent gelu's constant ``np.sqrt(2 / pi)``, a
    float64 NumPy scalar, had made it float64 (7e-46, a quotient of -3e54), while the verdict
    takes that side for an evaluation in the program's dtypes. It computes in them now."""
    from harness.oracles.spec import gelu, spec_verdict
    from harness.run.references import references

    x = np.array([[[1.401298464324817e-45]]], np.float32)
    assert gelu(x).dtype == np.float32 and gelu(x)[0, 0, 0] == 0.0
    b = ProgramBuilder()
    program = b.build(
        b.node("divide", b.input((1, 1, 1), "int32"), b.node("gelu", b.input((1, 1, 1), "float32")))
    )
    case = Case(program, [np.full((1, 1, 1), -2147483647, np.int32), x])
    assert spec_verdict(case, references(case, False)) is None
