"""XLA's deviations are findings: judged without the JAX reference (the same implementation),
attributed to the ``xla`` layer and exported as StableHLO plus a script that needs only JAX and
NumPy. A planted deviation (``tests/toys/xla_planted.py``: ``exp`` off by 1e-3, registered as
the backend ``xla-cpu-planted`` the way any backend is) proves the path end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]
PLANTED = "xla-cpu-planted"


@pytest.fixture(scope="module")
def planted():
    """The planted backend, here and (through HARNESS_PLUGINS) in every worker."""
    if str(ROOT / "tests") not in sys.path:
        sys.path.append(str(ROOT / "tests"))
    previous = os.environ.get("HARNESS_PLUGINS")
    os.environ["HARNESS_PLUGINS"] = "toys.xla_planted"
    import toys.xla_planted  # noqa: F401 - registers xla-cpu-planted

    yield
    from compiler import backends

    backends.unregister(PLANTED)
    if previous is None:
        os.environ.pop("HARNESS_PLUGINS", None)
    else:
        os.environ["HARNESS_PLUGINS"] = previous
    sys.modules.pop("toys.xla_planted", None)


def _exp_program():
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    return b.build(b.node("add", b.node("exp", x), x))


def test_planted_deviation_found_attributed_and_exported(planted, tmp_path: Path) -> None:
    from harness.case import Case
    from harness.run.runner import Runner
    from harness.run.task import Task
    from harness.session.fuzz import finding_entry
    from harness.triage.attribution import Attributor
    from harness.triage.export import export_report, write_files

    program = _exp_program()
    inputs = [np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)]
    with Runner(None, use_jax=True) as runner:
        judgement = runner.evaluate(Case(program, inputs, ("xla-cpu", PLANTED)))
        [finding] = judgement.findings
        assert finding.kind == "mismatch" and finding.backends == (PLANTED,), finding.detail
        assert "xla-cpu" in judgement.errors  # the real XLA passes the same case
        case = Case(program, inputs, (PLANTED,))
        attribution = Attributor(runner).attribute(case, finding).to_dict()
        assert attribution["layer"] == "xla", attribution
        assert attribution["evidence"]["graph-numpy"] == "passes", attribution
        outcome = runner.worker.run(Task(case, (PLANTED,), kind="artifacts"))
        artifacts = outcome.value.artifacts
    assert set(artifacts["stages"]) == {"stablehlo", "hlo"}
    entry = finding_entry(case, finding, mlir=artifacts, attribution=attribution)
    report = export_report(entry)
    assert report.startswith("# [xla] mismatch") and "openxla" in report
    assert "stablehlo.exponential" in report and "jax.extend" in report
    facts = json.loads(export_report(entry, "json"))
    assert facts["layer"] == "xla" and "STABLEHLO" in facts["xla_script"]
    files = {p.name for p in write_files(entry, tmp_path)}
    assert {"stablehlo.mlir", "hlo.txt", "xla_repro.py", "commands.sh"} <= files
    assert "python xla_repro.py" in (tmp_path / "commands.sh").read_text()
    # The script needs nothing of this project, and fails as the oracle does.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_PLUGINS")}
    proc = subprocess.run(
        [sys.executable, "-I", "xla_repro.py"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "largest error" in proc.stdout, proc.stdout + proc.stderr


def _fuzz(
    tmp_path: Path, backends: str, *extra: str, plugins: str = "", seconds: int = 60
) -> tuple:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "tests"), *filter(None, [env.get("PYTHONPATH")])]
    )
    env.pop("HARNESS_PLUGINS", None)
    if plugins:
        env["HARNESS_PLUGINS"] = plugins
    summary = tmp_path / "summary.json"
    command = [
        sys.executable, "-m", "harness", "fuzz", "--backends", backends, "--seconds", str(seconds),
        "--workers", "1", "--no-database", "--corpus", str(tmp_path / "corpus"), "--report", "",
        "--quiet", "--summary-json", str(summary), *extra,
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert summary.exists(), output
    return proc, json.loads(summary.read_text()), env, output


@pytest.mark.long
@pytest.mark.slow
def test_a_thirty_second_xla_session_completes(tmp_path: Path) -> None:
    proc, summary, _, output = _fuzz(tmp_path, "xla-cpu", seconds=30)
    assert proc.returncode in (0, 1), output  # 1: a finding (an XLA deviation) was saved
    assert summary["stats"]["runs"].get("xla-cpu", 0) >= 5, output
    assert not summary["harness_errors"], output


@pytest.mark.slow
def test_planted_session_finds_attributes_and_exports(tmp_path: Path) -> None:
    from harness.corpus import load

    proc, summary, env, output = _fuzz(
        tmp_path, PLANTED, "--mix", "programs", "--stop-on-first", "--seed", "3",
        plugins="toys.xla_planted",
    )  # fmt: skip
    assert proc.returncode == 1, output
    [finding] = [f for f in summary["findings"] if f["new"]]
    entry = load(Path(finding["path"]))
    assert entry.evidence["attribution"]["layer"] == "xla", entry.evidence["attribution"]
    out = tmp_path / "repro"
    subprocess.run(
        [sys.executable, "-m", "harness", "repro", finding["path"], "--mlir", str(out)],
        cwd=ROOT, env=env, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    assert (out / "stablehlo.mlir").exists() and (out / "xla_repro.py").exists()
    proc = subprocess.run(
        [sys.executable, "xla_repro.py"], cwd=out, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr


def _masked_matmul_case(values: list[float], second: list[float] | None = None):
    """``(x @ causal_mask(4)) * 2`` of a bfloat16 (1, 4) ``x`` as a case on xla-cpu; with
    ``second``, a jit sequence whose second call takes those values."""
    import ml_dtypes

    from harness.case import Case
    from strategies.model import Const, ProgramBuilder
    from strategies.model.sequence import OWN, Call, JitSequence

    b = ProgramBuilder()
    x = b.input((1, 4), "bfloat16")
    mask = b.node("causal_mask", size=4, dtype="float64")
    program = b.build(b.node("multiply", b.node("matmul", x, mask), Const(2.0)))
    arrays = [np.array([values], ml_dtypes.bfloat16)]
    if second is None:
        return Case(program, arrays, ("xla-cpu",))
    calls = [
        Call(0, ("*",), ("bfloat16",), (), (OWN,), (np.array([v], ml_dtypes.bfloat16),))
        for v in (values, second)
    ]
    sequence = JitSequence((program,), (), False, tuple(calls)).validate()
    return Case.from_sequence(sequence, ("xla-cpu",))


def test_xla_flushing_a_subnormal_is_its_known_deviation() -> None:
    """A 600 s campaign (seed 2101) stored an xla-cpu jit-sequence mismatch as new: the second
    call's bfloat16 -1.47e-39 times the mask's -inf is inf in NumPy, nan in XLA, whose CPU
    runtime flushes subnormals by design (jax-ml/jax#16200). Such a wrong answer is now the
    known ``denormal-flush``, in a sequence's later call too; the same program on normal values
    is none."""
    from harness.triage.known_issues import known_issue

    subnormal = [-1.4693679385278594e-39, -5.0, 5.0, -0.5]
    normal = [-1.0, -5.0, 5.0, -0.5]
    assert known_issue(_masked_matmul_case(subnormal), "xla-cpu")["name"] == "denormal-flush"
    assert known_issue(_masked_matmul_case(normal), "xla-cpu") is None
    found = known_issue(_masked_matmul_case(normal, subnormal), "xla-cpu")
    assert found is not None and "jax-ml/jax#16200" in found["upstream"]
    assert known_issue(_masked_matmul_case(normal, normal), "xla-cpu") is None
    # A compile error is never the flushing.
    assert known_issue(_masked_matmul_case(subnormal), "xla-cpu", "hlo failed") is None


def test_flushing_is_named_only_where_it_predicts_the_wrong_answer() -> None:
    """With the backend's answer at hand, a case that holds a subnormal is XLA's flushing only
    if flushing gives that answer: XLA's own nan is; a wrong value elsewhere in the same case
    (a new bug the subnormal merely sits next to) is not."""
    import compiler
    from harness.triage.known_issues import known_issue

    case = _masked_matmul_case([-1.4693679385278594e-39, -5.0, 5.0, -0.5])
    got = np.asarray(compiler.jit(case.traced_function())(*case.inputs, target="xla-cpu"))
    with np.errstate(all="ignore"):
        numpy_answer = case.traced_function()(*case.inputs)
    assert np.isnan(got[0, 1]) and np.isinf(numpy_answer[0, 1])  # XLA flushed -1.5e-39
    assert known_issue(case, "xla-cpu", "", [got])["name"] == "denormal-flush"
    elsewhere = got.copy()
    elsewhere[0, 0] += 1.0  # a wrong answer no flushing gives
    assert known_issue(case, "xla-cpu", "", [elsewhere]) is None


def test_float64_to_float16_double_rounding_is_named_where_it_predicts_the_answer() -> None:
    """XLA converts float64 to float16 through float32 (``test_xla_0_10_2.py``): a wrong answer
    that converting so gives is known issue ``f64-f16-double-rounding``; another wrong answer
    of the same case, or a case with no such conversion, is not."""
    import compiler
    from harness.case import Case
    from harness.triage.known_issues import known_issue
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((4,), "float64")
    program = b.build(b.node("multiply", b.node("astype", x, dtype="float16"), 2.0))
    inputs = [np.array([-28744.000000000004, 2049.0000000000005, 1 + 2**-11 + 2**-40, 0.5])]
    case = Case(program, inputs, ("xla-cpu",))
    got = np.asarray(compiler.jit(case.traced_function())(*inputs, target="xla-cpu"))
    twice = (inputs[0].astype(np.float32).astype(np.float16) * 2).astype(np.float16)
    if not np.array_equal(got, twice):
        pytest.skip(f"this XLA rounds float64 -> float16 once now: {got}")
    assert known_issue(case, "xla-cpu", "", [got])["name"] == "f64-f16-double-rounding"
    elsewhere = got.copy()
    elsewhere[3] = 3.0  # a wrong answer no double rounding gives
    assert known_issue(case, "xla-cpu", "", [elsewhere]) is None
    b = ProgramBuilder()
    y = b.input((4,), "float32")
    single = Case(b.build(b.node("astype", y, dtype="float16")), [inputs[0].astype(np.float32)])
    assert known_issue(single, "xla-cpu", "", [got / 2]) is None


def test_a_product_with_a_converted_bool_made_a_select_is_named_where_it_predicts() -> None:
    """XLA rewrites ``x * float(b)`` as ``select(b, x, 0)`` (jax-ml/jax#12233): a wrong 0 where
    NumPy's inf * 0 is nan is known issue ``bool-product-select``; another wrong value is not."""
    import compiler
    from harness.case import Case
    from harness.triage.known_issues import known_issue
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    c, x = b.input((3,), "float32"), b.input((3,), "float32")
    flag = b.node("astype", b.node("equal", c, 0.0), dtype="float32")
    program = b.build(b.node("multiply", x, flag))
    inputs = [np.array([1.0, 0.0, 1.0], np.float32), np.array([np.inf, 2.0, 3.0], np.float32)]
    case = Case(program, inputs, ("xla-cpu",))
    got = np.asarray(compiler.jit(case.traced_function())(*inputs, target="xla-cpu"))
    if np.isnan(got[0]):
        pytest.skip(f"this XLA keeps inf * 0 = nan now: {got}")
    assert known_issue(case, "xla-cpu", "", [got])["name"] == "bool-product-select"
    elsewhere = got.copy()
    elsewhere[1] = 5.0
    assert known_issue(case, "xla-cpu", "", [elsewhere]) is None


def _xla_case(program, inputs):
    """The case, and XLA's answer to it."""
    import compiler
    from harness.case import Case

    case = Case(program, inputs, ("xla-cpu",))
    return case, np.asarray(compiler.jit(case.traced_function())(*inputs, target="xla-cpu"))


def test_a_zero_of_the_other_sign_from_max_or_min_is_named_where_ieee_2019_gives_it() -> None:
    """A 600 s ``cpu-loops@O0,xla-cpu`` campaign (seed 501) stored three "zero of the other
    sign" findings of ``maximum``/``minimum``: XLA's are IEEE 754-2019's (-0 < +0), NumPy's
    ``np.maximum(0.0, -0.0)`` is -0.0. Known issue ``signed-zero-extremum`` where that rule
    gives every wrong element, elementwise and reduced; a wrong value beside it is not."""
    from harness.triage.known_issues import known_issue
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x, y = b.input((3,), "float64"), b.input((3,), "float64")
    program = b.build(b.node("maximum", x, y))
    case, got = _xla_case(program, [np.array([0.0, 1.0, -0.0]), np.array([-0.0, 2.0, -0.0])])
    if np.signbit(got[0]):
        pytest.skip(f"this XLA's maximum returns NumPy's zero now: {got}")
    assert np.signbit(case.traced_function()(*case.inputs)[0])  # NumPy: -0.0
    assert known_issue(case, "xla-cpu", "", [got])["name"] == "signed-zero-extremum"
    assert known_issue(case, "xla-cpu", "", [np.array([0.0, 3.0, -0.0])]) is None
    # +0 of two -0 is no IEEE maximum: only zero signs, the general rewrite's name
    other_zero = known_issue(case, "xla-cpu", "", [np.array([0.0, 2.0, 0.0])])
    assert other_zero["name"] == "zero-sign-rewrite"

    # Reduced: NumPy's max and min of a row of two zeros is its last zero.
    b = ProgramBuilder()
    x = b.input((2, 2), "float32")
    program = b.build(b.node("min", x, axis=1))
    inputs = [np.array([[-0.0, 0.0], [-0.0, 1.0]], np.float32)]
    case, _ = _xla_case(program, inputs)
    numpy_answer = case.traced_function()(*inputs)
    ieee = np.array([-0.0, -0.0], np.float32)
    if np.array_equal(np.signbit(numpy_answer), np.signbit(ieee)):
        pytest.skip(f"NumPy's min of -0 and +0 is IEEE's here: {numpy_answer}")
    assert known_issue(case, "xla-cpu", "", [ieee])["name"] == "signed-zero-extremum"
    assert known_issue(case, "xla-cpu", "", [np.array([-0.0, 1.0], np.float32)]) is None


def test_a_power_of_a_subnormal_base_is_named_where_glibc_under_daz_gives_it() -> None:
    """The seed-501 campaign's ``x ** y`` of float32 1e-45 and 1.073e-4 was 0.988906 under XLA,
    NumPy 0.988979: neither NumPy's answer nor the flushed one (0). XLA's CPU runtime calls
    glibc's ``powf`` with DAZ set, which takes every subnormal base for 2**-150 (a C program
    under ``_MM_SET_DENORMALS_ZERO_MODE`` gives the same): known issue ``daz-pow`` where that
    gives every wrong element, not another wrong value."""
    from harness.triage.known_issues import known_issue
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x, y = b.input((4,), "float32"), b.input((4,), "float32")
    program = b.build(b.node("power", x, y))
    inputs = [np.array([1e-45, 3e-39, 2.0, 3e-39], np.float32)]
    inputs.append(np.array([1.073e-4, 0.5, 2.0, -0.5], np.float32))
    case, got = _xla_case(program, inputs)
    with np.errstate(all="ignore"):
        numpy_answer = case.traced_function()(*inputs)
    if np.allclose(got, numpy_answer, rtol=1e-6):
        pytest.skip(f"this XLA's pow of a subnormal base is NumPy's now: {got}")
    assert got[1] == pytest.approx(2.0**-75, rel=1e-6)  # NumPy: 5.5e-20
    assert known_issue(case, "xla-cpu", "", [got])["name"] == "daz-pow"
    elsewhere = got.copy()
    elsewhere[2] = 5.0
    assert known_issue(case, "xla-cpu", "", [elsewhere]) is None


def test_a_power_of_eight_is_named_where_llvms_exp2_rewrite_gives_it() -> None:
    """XLA's ``8.0 ** x`` under jit is LLVM's ``exp2(3.0 * x)`` (``tests/upstream``: 355 ulps
    at x = 300.33251 in float64): known issue ``exp2-pow`` where that gives every wrong
    element, not another wrong value, nor for a base LLVM leaves alone."""
    from harness.triage.known_issues import known_issue
    from strategies.model import Const, ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("power", Const(8.0), b.input((3,), "float64")))
    inputs = [np.array([300.33251, 100.3, 2.0])]
    case, got = _xla_case(program, inputs)
    numpy_answer = case.traced_function()(*inputs)
    if np.array_equal(got, numpy_answer):
        pytest.skip(f"this XLA's 8.0 ** x is NumPy's now: {got}")
    assert got[2] == 64.0 and got[0] != numpy_answer[0]
    assert known_issue(case, "xla-cpu", "", [got])["name"] == "exp2-pow"
    elsewhere = got.copy()
    elsewhere[2] = 65.0
    assert known_issue(case, "xla-cpu", "", [elsewhere]) is None
    b = ProgramBuilder()
    three = b.build(b.node("power", Const(3.0), b.input((3,), "float64")))
    case, _ = _xla_case(three, inputs)
    assert known_issue(case, "xla-cpu", "", [got]) is None


def test_a_maximum_beside_a_signaling_nan_is_named_where_x86_gives_the_number() -> None:
    """XLA's maximum of an int32 converted to float64 and a signaling NaN is the number (as
    LLVM 22.1.8's X86 code generation of llvm.maximum gives, ``tests/upstream``): known issue
    ``snan-extremum`` where that gives every wrong element, not another wrong value, nor for a
    quiet NaN."""
    from harness.triage.known_issues import known_issue
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x, y = b.input((2, 3), "int32"), b.input((3,), "float64")  # (XLA's code for a broadcast y)
    program = b.build(b.node("maximum", x, y))
    bits = [0x7FF0000000000001, 0x7FF8000000000001, 0x4000000000000000]  # sNaN, qNaN, 2.0
    inputs = [np.array([[-7, 4, 5], [1, 1, 1]], np.int32)]
    inputs.append(np.array(bits, np.uint64).view(np.float64))
    case, got = _xla_case(program, inputs)
    if np.isnan(got[:, 0]).all():
        pytest.skip(f"this XLA's maximum keeps a signaling NaN now: {got}")
    assert np.array_equal(got, [[-7.0, np.nan, 5.0], [1.0, np.nan, 2.0]], equal_nan=True), got
    assert known_issue(case, "xla-cpu", "", [got])["name"] == "snan-extremum"
    qnan = np.array([[-7.0, 4.0, 5.0], [1.0, 1.0, 2.0]])
    assert known_issue(case, "xla-cpu", "", [qnan]) is None
    other = np.array([[3.0, np.nan, 5.0], [1.0, np.nan, 2.0]])
    assert known_issue(case, "xla-cpu", "", [other]) is None


def test_zeros_of_the_other_sign_alone_are_xlas_zero_sign_rewrite() -> None:
    """XLA removes ``x + 0.0`` under jit (``test_xla_0_10_2.py``): -0.0 + 0.0 is -0.0. A wrong
    answer that is only zeros of the other sign is known issue ``zero-sign-rewrite``; one with
    a wrong value too is not; ``x * float(b)`` made ``select(b, x, 0)`` is +0 where NumPy's
    ``-3 * 0.0`` is -0.0, which is that rewrite (``bool-product-select``)."""
    from harness.triage.known_issues import known_issue
    from strategies.model import Const, ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2,), "float32")
    program = b.build(b.node("add", x, Const(0.0, "float32")))
    case, got = _xla_case(program, [np.array([-0.0, 1.0], np.float32)])
    if not np.signbit(got[0]):
        pytest.skip(f"this XLA keeps x + 0.0: {got}")
    assert known_issue(case, "xla-cpu", "", [got])["name"] == "zero-sign-rewrite"
    assert known_issue(case, "xla-cpu", "", [np.array([-0.0, 2.0], np.float32)]) is None

    b = ProgramBuilder()
    c, y = b.input((2,), "float32"), b.input((2,), "float32")
    flag = b.node("astype", b.node("equal", c, 0.0), dtype="float32")
    program = b.build(b.node("multiply", y, flag))
    inputs = [np.array([1.0, 0.0], np.float32), np.array([-3.0, 2.0], np.float32)]
    case, got = _xla_case(program, inputs)
    if np.signbit(got[0]):
        pytest.skip(f"this XLA keeps -3 * 0.0 = -0.0: {got}")
    assert known_issue(case, "xla-cpu", "", [got])["name"] == "bool-product-select"


def test_a_conversion_that_rounds_up_to_the_least_normal_is_flushed_before_rounding() -> None:
    """x86's flush-to-zero detects a tiny result before rounding: XLA converts float64
    1.1754942807573643e-38 (half an ulp below float32's least normal, which NumPy rounds it to)
    to 0.0. The seed-501 campaign stored it as new; it is ``denormal-flush``."""
    from harness.triage.known_issues import known_issue
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2,), "float64")
    program = b.build(b.node("astype", x, dtype="float32"))
    inputs = [np.array([1.1754942807573643e-38, 1.0])]
    case, got = _xla_case(program, inputs)
    assert case.traced_function()(*inputs)[0] == np.finfo(np.float32).tiny
    if got[0] != 0:
        pytest.skip(f"this XLA rounds before flushing now: {got}")
    assert known_issue(case, "xla-cpu", "", [got])["name"] == "denormal-flush"
    assert known_issue(case, "xla-cpu", "", [np.array([0.0, 2.0], np.float32)]) is None


def test_a_wrong_answer_that_disappears_at_level_zero_says_so() -> None:
    """XLA's CPU backend contracts ``x * y - max(x * y)`` into an FMA in one of the two fusions
    that compute the product (``tests/upstream/test_xla_0_10_2.py``): float64 ``exp`` of the
    shifted product is inf at the maximum, where NumPy says 1. The finding is ``xla``'s, and
    attribution runs ``xla-cpu@O0`` (xla_backend_optimization_level=0), which passes: the
    detail names the level and the known class."""
    import jax

    from harness.case import Case
    from harness.run.runner import Runner
    from harness.triage.attribution import Attributor
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((1, 2), "float64")
    s = b.node("multiply", x, x)
    program = b.build(
        b.node("exp", b.node("subtract", s, b.node("max", s, axis=-1, keepdims=True)))
    )
    inputs = [np.array([[-1e12, 1.0]])]
    case = Case(program, inputs, ("xla-cpu",))
    with jax.enable_x64(True):
        contracted = np.asarray(jax.jit(program.as_function())(*inputs))
    if np.isfinite(contracted).all():
        pytest.skip(f"this XLA ({jax.__version__}) no longer contracts the product: {contracted}")
    with Runner(None, use_jax=False) as runner:
        [finding] = runner.evaluate(case).findings
        assert (finding.kind, finding.backends) == ("mismatch", ("xla-cpu",)), finding.detail
        attribution = Attributor(runner).attribute(case, finding)
    assert attribution.layer == "xla", attribution
    assert attribution.evidence == {
        "graph-numpy": "passes", "xla-cpu": "fails", "xla-cpu@O0": "passes"
    }, attribution  # fmt: skip
    assert "xla-cpu@O0 passes" in attribution.detail
    assert "xla_backend_optimization_level=0" in attribution.detail, attribution.detail
