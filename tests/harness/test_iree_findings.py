"""IREE behind our frontend, judged by the harness (``iree-cpu``, the ``iree`` extra).

A clean case passes the differential oracle on ``iree-cpu``; IREE's known failures (a wrong
answer from the vectorizer, a link failure) are findings of the ``iree`` layer, with the known
issue they are, exported as the tensor-ABI module, the ``.npy`` inputs and IREE's own command
lines, which reproduce them with nothing of this project; and a short fuzz session on
``iree-cpu`` runs and judges cases. Skipped cleanly without IREE.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.runtime", reason="IREE is not installed (pip install -e '.[iree]')")

from compiler import backends, iree  # noqa: E402
from harness.case import Case  # noqa: E402
from harness.run.runner import Runner  # noqa: E402
from harness.run.task import Task  # noqa: E402
from harness.session.fuzz import finding_entry  # noqa: E402
from harness.triage.attribution import Attributor  # noqa: E402
from harness.triage.export import export_report, write_files  # noqa: E402
from strategies.model import ProgramBuilder  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NAME = iree.NAME
pytestmark = pytest.mark.iree  # the slow env runs these (tox.ini)

if backends.get(NAME).unavailable():  # pragma: no cover - the runtime without iree-compile
    pytest.skip(backends.get(NAME).unavailable(), allow_module_level=True)


def _count_case() -> Case:
    """``(x >= x).astype(float32).sum(axis=1)``: IREE folds ``x >= x`` to true, and the
    vectorizer then counts one per vector tile (``iree.VECTORIZED_COUNT``)."""
    b = ProgramBuilder()
    x = b.input((2, 6), "int32")
    ones = b.node("astype", b.node("greater_equal", x, x), dtype="float32")
    program = b.build(b.node("sum", ones, axis=1, keepdims=False))
    return Case(program, [np.arange(12, dtype=np.int32).reshape(2, 6)], (NAME,))


def _tanh_case() -> Case:
    """float64 tanh: a libm call IREE's embedded linker cannot resolve (``F64_LIBM_LINK``)."""
    b = ProgramBuilder()
    x = b.input((3, 2), "float64")
    return Case(b.build(b.node("tanh", x)), [np.linspace(-2, 2, 6).reshape(3, 2)], (NAME,))


def _export(runner: Runner, case: Case, finding, tmp_path: Path) -> tuple[dict, str, Path]:
    """Attribute ``finding``, build its corpus entry as a session does, export it."""
    attribution = Attributor(runner).attribute(case, finding).to_dict()
    outcome = runner.worker.run(Task(case, (NAME,), kind="artifacts"))
    mlir = outcome.value.artifacts if outcome.status == "ok" else {}
    entry = finding_entry(case, finding, mlir=mlir, attribution=attribution)
    report = export_report(entry)
    write_files(entry, tmp_path)
    return attribution, report, tmp_path


def _commands(directory: Path) -> subprocess.CompletedProcess:
    """``commands.sh`` with IREE's executables and this Python first on the PATH."""
    folders = [os.path.dirname(iree.tool(t)) for t in ("iree-compile", "iree-run-module")]
    folders.append(os.path.dirname(sys.executable))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_PLUGINS")}
    env["PATH"] = os.pathsep.join([*folders, env.get("PATH", "")])
    return subprocess.run(
        ["sh", "commands.sh"], cwd=directory, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


@pytest.mark.slow
def test_runner_judges_iree_cases(matmul_case: Case) -> None:
    case = matmul_case.on((NAME, "cpu-loops"))
    with Runner(None, use_jax=False) as runner:
        judgement = runner.evaluate(case, only=())
        assert not judgement.findings, [f.detail for f in judgement.findings]
        assert NAME in judgement.errors and "cpu-loops" in judgement.errors
        assert runner.stats.runs == {NAME: 1, "cpu-loops": 1}


@pytest.mark.slow
def test_wrong_answer_is_a_finding_of_the_iree_layer(tmp_path: Path) -> None:
    case = _count_case().on((NAME, "cpu-loops"))
    with Runner(None, use_jax=False) as runner:
        judgement = runner.evaluate(case, only=())
        if not judgement.findings:
            pytest.skip("IREE computes the count reduction right now: the known issue is fixed")
        [finding] = judgement.findings
        assert finding.kind == "mismatch" and finding.backends == (NAME,), finding.detail
        assert "agrees with the references: cpu-loops" in finding.detail
        alone = case.on((NAME,))
        attribution, report, directory = _export(runner, alone, finding, tmp_path)
    assert attribution["layer"] == "iree", attribution
    assert attribution["evidence"] == {
        "graph-numpy": "passes", NAME: "fails", f"{NAME}@O0": "fails"  # not the optimization
    }, attribution  # fmt: skip
    assert attribution["mlir"]["known_issue"]["name"] == iree.VECTORIZED_COUNT.name
    assert report.startswith("# [iree] mismatch") and "iree-org/iree" in report
    assert "## Known issue: vectorized-count-reduction" in report
    assert iree.compile_command(NAME) in report
    names = {p.name for p in directory.iterdir()}
    assert {"module.mlir", "x0.npy", "commands.sh", "iree_check.py", "reproducer.py"} <= names
    # IREE's own tools and the NumPy-only check reproduce it: the check exits 1.
    proc = _commands(directory)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "largest error" in proc.stdout and (directory / "out0.npy").exists()


@pytest.mark.slow
def test_compile_failure_is_a_finding_of_the_iree_layer(tmp_path: Path) -> None:
    case = _tanh_case()
    with Runner(None, use_jax=False) as runner:
        judgement = runner.evaluate(case, only=())
        if not judgement.findings:
            pytest.skip("IREE links float64 tanh now: the known issue is fixed")
        [finding] = judgement.findings
        assert (finding.kind, finding.oracle) == ("pass-failure", "error-path"), finding.detail
        assert "undefined symbol: tanh" in finding.detail
        attribution, report, directory = _export(runner, case, finding, tmp_path)
        # The workaround the known issue names passes the same case.
        assert not runner.evaluate(case.on(("iree-cpu+system-linker",)), only=()).findings
    assert attribution["layer"] == "iree", attribution
    assert attribution["detail"].startswith(f"{NAME} failed in stage 'vmfb'")
    assert attribution["mlir"]["known_issue"] == iree.F64_LIBM_LINK.to_dict()
    assert report.startswith("# [iree] pass-failure") and "iree-org/iree#20165" in report
    proc = _commands(directory)
    assert proc.returncode != 0 and "undefined symbol: tanh" in proc.stderr, proc.stderr
    assert not (directory / "iree_check.py").exists()  # nothing ran: nothing to judge


@pytest.mark.slow
def test_a_known_issue_is_one_corpus_entry_whatever_op_hits_it(tmp_path: Path) -> None:
    """IREE's unlinkable float64 libm calls hit tanh, sin, cos, gelu...: once the corpus has
    an entry attributed to that known issue, a session takes the same failure on another op as
    known (a 30-minute campaign had stored seven entries of it), but not another error."""
    from dataclasses import replace

    from harness.corpus import Corpus
    from harness.session.fuzz import Driver, FuzzOptions

    tanh = _tanh_case()
    b = ProgramBuilder()
    x = b.input((2, 2), "float64")
    sin = Case(b.build(b.node("sin", x)), [np.linspace(-1, 1, 4).reshape(2, 2)], (NAME,))
    with Runner(None, use_jax=False) as runner:
        found = runner.evaluate(tanh, only=()).findings
        if not found:
            pytest.skip("IREE links float64 tanh now: the known issue is fixed")
        [first] = found
        [second] = runner.evaluate(sin, only=()).findings
        attribution = Attributor(runner).attribute(tanh, first).to_dict()
    assert attribution["mlir"]["known_issue"]["name"] == iree.F64_LIBM_LINK.name
    Corpus(tmp_path).save(finding_entry(tanh, first, attribution=attribution))
    assert second.signature.matches(first.signature)
    assert not first.signature.covers(second.signature), "other ops: the signature alone misses"
    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False), 0)
    try:
        assert driver.known_as(second) is not None
        assert not driver.is_new(second)
        assert second.result is not None
        other = replace(second, result=replace(second.result, message="some other failure"))
        assert driver.known_as(other) is None, "an error the known issue does not explain"
    finally:
        driver.close()


@pytest.mark.slow
def test_a_known_wrong_answer_is_one_entry_too(tmp_path: Path) -> None:
    """Wrong answers that IREE's flushing of subnormals explains (by design) are one entry:
    float16 layer_norm of a constant row (nan: its eps is subnormal in float16), then y / (y*y)
    in float16 where y*y is subnormal (inf in IREE). A subnormal result flushed alone is within
    the error model (its floor is the dtype's smallest normal)."""
    from harness.corpus import Corpus
    from harness.session.fuzz import Driver, FuzzOptions

    b = ProgramBuilder()
    x, g, c = b.input((1, 3), "float16"), b.input((3,), "float16"), b.input((3,), "float16")
    norm = Case(
        b.build(b.node("layer_norm", x, g, c)),
        [np.ones((1, 3), np.float16), np.ones(3, np.float16), np.zeros(3, np.float16)],
        (NAME,),
    )
    b = ProgramBuilder()
    y = b.input((3,), "float16")
    quotient = b.node("divide", y, b.node("multiply", y, y))  # 1/y: inf where y*y flushes
    product = Case(b.build(quotient), [np.array([4e-3, 1e-3, 1.0], np.float16)], (NAME,))
    with Runner(None, use_jax=False) as runner:
        found = runner.evaluate(norm, only=()).findings
        if not found:
            pytest.skip("IREE keeps subnormals now")
        [first] = found
        [second] = runner.evaluate(product, only=()).findings
        attribution = Attributor(runner).attribute(norm, first).to_dict()
    assert attribution["mlir"]["known_issue"]["name"] == iree.DENORMAL_FLUSH.name
    assert (first.kind, second.kind) == ("mismatch", "mismatch")
    Corpus(tmp_path).save(finding_entry(norm, first, attribution=attribution))
    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False), 0)
    try:
        assert not first.signature.covers(second.signature)
        assert driver.known_as(second) is not None
    finally:
        driver.close()


@pytest.mark.long
@pytest.mark.slow
def test_short_iree_session_runs_and_judges_cases(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("HARNESS_PLUGINS", None)
    summary = tmp_path / "summary.json"
    command = [
        sys.executable, "-m", "harness", "fuzz", "--backends", NAME, "--seconds", "20",
        "--workers", "1", "--seed", "5", "--no-database", "--corpus", str(tmp_path / "corpus"),
        "--report", "", "--quiet", "--summary-json", str(summary), "--shrink-seconds", "5",
        "--minimize-seconds", "10",
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode in (0, 1), output  # 1: it saved findings (IREE's known bugs)
    stats = json.loads(summary.read_text())
    assert not stats["harness_errors"], output
    assert stats["stats"]["runs"].get(NAME, 0) >= 5, output
    assert stats["stats"]["oracles"].get("differential", 0) >= 5, output
    # A finding made near the deadline is kept unminimized; recovery minimizes and attributes it.
    recover = [sys.executable, "-m", "harness", "recover", "--corpus", str(tmp_path / "corpus")]
    proc = subprocess.run(recover, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for path in (tmp_path / "corpus").glob("*.json"):
        entry = json.loads(path.read_text())
        assert NAME in entry["signature"]["backend"], entry["signature"]
        assert entry["evidence"]["attribution"]["layer"], entry["evidence"]


def test_a_trig_known_issue_is_named_only_where_it_explains_the_wrong_elements() -> None:
    """float32 ``cos(x) + y`` with x = 1607 in one element: IREE's cosine is known to be wrong
    there (``TRIG_RANGE_REDUCTION``), and the finding is named for it with IREE's own answer; an
    answer also wrong in an element whose cosine IREE gets right is not put down to it."""
    from harness.triage.known_issues import failing_outputs, known_issue

    b = ProgramBuilder()
    x, y = b.input((3,), "float32"), b.input((3,), "float32")
    case = Case(
        b.build(b.node("add", b.node("cos", x), y)),
        [np.array([1607.0, 0.5, 0.25], np.float32), np.ones(3, np.float32)],
        (NAME,),
    )
    with Runner(None, use_jax=False) as runner:
        found = runner.evaluate(case, only=()).findings
    if not found:
        pytest.skip("IREE's float32 cosine of 1607 is right now")
    outputs = failing_outputs(found[0], NAME)
    assert outputs is not None
    assert known_issue(case, NAME, "", outputs)["name"] == iree.TRIG_RANGE_REDUCTION.name
    elsewhere = np.array(outputs[0], copy=True)
    elsewhere[2] += 0.5
    assert known_issue(case, NAME, "", [elsewhere]) is None
