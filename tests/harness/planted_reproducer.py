"""Planted bugs for the slow tests: a script run against a scratch compiler with the bug
(``last_line_with``; ``json_with`` reads it as JSON), and a planted bug's reproducer run with
the bug and without it (the tests that check "a reproducer fails exactly where the oracle does"
for one layer each); the exported standalone script's verdict on an answer
(``exported_status``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.selftest import Mutation, apply, scratch_environment


def last_line_with(
    mutation: Mutation, tmp_path: Path, script: str, *args: str, timeout: float = 300
) -> str:
    """Plant ``mutation`` in a scratch compiler under ``tmp_path``, run ``script`` (Python
    source) with ``args`` against it, and return the last line it printed (it must exit 0)."""
    scratch = apply(mutation, tmp_path / mutation.name)
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=tmp_path,
        env=scratch_environment(scratch),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def json_with(mutation: Mutation, tmp_path: Path, script: str, timeout: float = 300) -> Any:
    """``last_line_with``'s last line, read as JSON; ``script`` may import this repository's
    tests (``from tests.harness.test_x import _case``, and the modules they import as pytest
    lets them, ``planted_reproducer``), which come after the scratch compiler on its path (an
    installed package's root is not the repository's)."""
    here = Path(__file__).resolve().parent
    prelude = "import sys\nsys.path += sys.argv[1:]\n"
    paths = (str(here.parents[1]), str(here))
    return json.loads(last_line_with(mutation, tmp_path, prelude + script, *paths, timeout=timeout))


def run_with_and_without(
    tmp_path: Path, mutation: Mutation, make: str
) -> tuple[str, subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """Plant ``mutation`` in a scratch compiler, run ``make`` (Python source that writes a
    reproducer to ``sys.argv[1]``) against it, then run that reproducer with the bug and on the
    real compiler: (its text, the run with the bug, the clean run)."""
    scratch = apply(mutation, tmp_path / "src")
    planted = scratch_environment(scratch)
    script = tmp_path / "reproducer.py"
    made = subprocess.run(
        [sys.executable, "-c", make, str(script)],
        cwd=tmp_path, env=planted, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    with_bug = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=planted, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    clean = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    return script.read_text(), with_bug, clean


def verdict_fails_only_with_the_bug(
    tmp_path: Path, mutation: Mutation, make: str, verdict: str
) -> None:
    """The reproducer ``make`` writes for a planted bug judges as the oracle ``verdict`` does
    (``harness.verdict.<verdict>``, on an instrumented kernel): it fails with the bug and passes
    on the real compiler."""
    text, with_bug, clean = run_with_and_without(tmp_path, mutation, make)
    assert f"from harness.verdict import {verdict}" in text
    assert "COMPILER_INSTRUMENT" in text
    assert with_bug.returncode == 1, with_bug.stdout + with_bug.stderr[-2000:]
    assert f"FAILS the {verdict} oracle" in with_bug.stderr, with_bug.stderr
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]


def exported_status(case: Any) -> Callable[[Any], object]:
    """The exit status the standalone script exported for ``case`` (``triage.export``: its
    embedded bound and its judging lines) gives an answer ``out``."""
    from harness.triage.export import _embedded_verdict, _judged

    lines = _embedded_verdict(case)
    script = "import sys\nimport numpy as np\n" + "\n".join(lines + _judged("out")) + "\n"

    def status(out: Any) -> object:
        with pytest.raises(SystemExit) as stopped:
            exec(script, {"out": out})
        return stopped.value.code

    return status
