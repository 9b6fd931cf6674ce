"""``mlir:<variant>`` backends in the harness: ``mlir:*`` draws a valid variant per case (and
shrinks toward fewer, earlier entries), the minimizer drops entries, a 60 s session on the
known-good catalog finds nothing, and a deliberately broken entry (``tests/toys/
planted_mlir_entry.py``, loaded through ``HARNESS_PLUGINS``) is found, attributed to its stage,
minimized to it, and re-created by its exported commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings

from compiler import mlir_variants
from harness.case import Case
from harness.corpus import load
from harness.oracles.base import Finding
from harness.session.generate import mlir_variant_names, program_cases, with_mlir_variants
from harness.triage.minimize import minimize
from strategies.model import ProgramBuilder

ROOT = Path(__file__).resolve().parents[2]
PLANTED = "planted-constants"
PLANTED_VARIANT = "mlir:canonicalize.planted-constants.buf-canonicalize-cse.to-loops.loops-licm"


# --------------------------------------------------------------------------------------------
# Drawing and minimizing (fast)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(mlir_variant_names())
def test_drawn_variants_are_valid(name: str) -> None:
    parsed = mlir_variants.parse(name)
    assert parsed.variant.entries and not parsed.variant.known_broken
    assert not any(mlir_variants.CATALOG[e].loose for e in parsed.variant.entries)


def test_draws_shrink_toward_fewer_earlier_entries() -> None:
    first = next(e.id for e in mlir_variants.drawable() if e.stage == "tensor")
    assert find(mlir_variant_names(), lambda name: True) == f"mlir:{first}"
    smallest = find(mlir_variant_names(level=0), lambda n: "affine-loop-fusion" in n)
    assert smallest == "mlir:to-affine-loops.affine-loop-fusion@O0"
    broken = find(mlir_variant_names(known_broken=True), lambda name: True)
    assert broken.startswith("mlir:known-broken:")


def test_placeholders_become_variants_per_case() -> None:
    backends = ("cpu-loops@O0", "mlir:*@O0")
    strategy = with_mlir_variants(program_cases(backends), backends)

    @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def check(case: Case) -> None:
        assert case.backends[0] == "cpu-loops@O0"
        assert mlir_variants.is_variant(case.backends[1]) and case.backends[1].endswith("@O0")
        assert not mlir_variants.is_draw(case.backends[1])

    check()


def test_minimizer_drops_entries() -> None:
    """A failure that needs only ``to-loops`` loses the other entries (each step keeps the
    failure); the case then runs on the smaller variant alone."""
    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    case = Case(b.build(b.node("exp", x)), [np.ones((2, 3), np.float32)], ("mlir:cse.to-loops",))

    def failing(candidate: Case) -> Finding | None:
        [backend] = candidate.backends
        entries = mlir_variants.parse(backend).variant.entries
        if "to-loops" not in entries:
            return None
        return Finding("mismatch", (backend,), "differential", "planted", candidate)

    start = failing(case)
    result = minimize(case, start, failing, budget_seconds=30)
    assert result.case.backends == ("mlir:to-loops",)
    assert result.steps[0] == "mlir:cse.to-loops: drop cse"


# --------------------------------------------------------------------------------------------
# Sessions (slow)


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
        sys.executable, "-m", "harness", "fuzz", "--seconds", str(seconds), "--backends", backends,
        "--corpus", str(tmp_path / "corpus"), "--report", "", "--seed", "3", "--no-database",
        "--quiet", "--summary-json", str(summary), *extra,
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    assert summary.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, json.loads(summary.read_text()), env


@pytest.mark.long
@pytest.mark.slow
def test_known_good_catalog_finds_nothing(tmp_path: Path) -> None:
    proc, summary, _ = _fuzz(tmp_path, "mlir:*", seconds=25)
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, output
    runs = summary["stats"]["runs"]  # the report counts every drawn variant as mlir:*
    assert set(runs) == {"mlir:*"} and runs["mlir:*"] >= 5, output
    assert not summary["findings"] and not summary["harness_errors"], output


@pytest.mark.slow
def test_planted_entry_found_attributed_minimized_reproduced(tmp_path: Path) -> None:
    proc, summary, env = _fuzz(
        tmp_path, PLANTED_VARIANT, "--mix", "programs", "--stop-on-first",
        plugins="toys.planted_mlir_entry",
    )  # fmt: skip
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 1, output
    [finding] = [f for f in summary["findings"] if f["new"]]
    assert finding["kind"] == "mismatch" and finding["oracle"] == "differential", output
    entry = load(Path(finding["path"]))
    # minimized: the other entries dropped, but for one the failure needs (which the minimizer
    # keeps because dropping it loses the failure: a var with ddof=2 on one element divides by
    # a zero that canonicalize folds into the constant the planted entry then changes)
    [backend] = entry.case["case"]["backends"]
    kept = backend.removeprefix("mlir:").split(".")
    assert PLANTED in kept and len(kept) <= 2, backend
    steps = entry.minimization["steps"]
    assert sum("drop" in s for s in steps) == len(PLANTED_VARIANT.split(".")) - len(kept), steps
    # attributed to the entry's stage
    attribution = entry.evidence["attribution"]
    assert attribution["mlir"]["failing_stage"] == PLANTED, attribution
    assert attribution["layer"] == "mlir-pass:transform-interpreter", attribution
    # the exported commands re-create every stage's text; the reproducer fails
    out = tmp_path / "repro"
    subprocess.run(
        [sys.executable, "-m", "harness", "repro", finding["path"], "--mlir", str(out)],
        cwd=ROOT, env=env, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    script = (out / "commands.sh").read_text()
    assert "TRANSFORM_LIBRARY" in script and "transform-interpreter" in script
    subprocess.run(["sh", "commands.sh"], cwd=out, env=env, capture_output=True, timeout=600)
    stages = entry.mlir["stages"]
    assert set(stages) == {"module", *kept, "bufferized", "libm", "lowered"}
    for name, text in stages.items():
        assert (out / f"{name}.mlir").read_text().strip() == text.strip(), name
    assert "1.000000e+00" in (out / f"{PLANTED}.mlir").read_text()
    run = (
        "import runpy, toys.planted_mlir_entry; "
        "runpy.run_path('reproducer.py', run_name='__main__')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", run], cwd=out, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
