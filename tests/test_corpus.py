"""Every corpus file is a test, judged by ``harness.replay`` as ``python -m harness replay`` judges
it: a regressed entry (fixed, fails again) fails; a still-open one is an xfail with its failure;
one not run here (a backend unknown or unavailable, a case that cannot be rebuilt) is skipped
with the reason; an unreadable file fails its own test and names itself; the others still run.
``pytest tests/test_corpus.py --junit-xml FILE`` gives CI the same verdicts as JUnit XML."""

from __future__ import annotations

import site
import sys
import warnings
from pathlib import Path

import pytest

from harness.corpus import Corpus, CorpusError, load
from harness.replay import classify
from harness.run.runner import Runner

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
FILES = Corpus(CORPUS).files()
IDS = [ascii(p.stem)[1:-1] for p in FILES]


def machine_paths() -> set[str]:
    """Absolute paths of this machine that must not end up in a shared corpus file."""
    found = {"/root/", "site-packages", "dist-packages", "/.pyenv/"}
    found |= {str(Path.home()).rstrip("/") + "/", str(ROOT) + "/", sys.prefix + "/"}
    found |= set(site.getsitepackages())
    return {p for p in found if len(p) > 2}


@pytest.fixture(scope="module")
def runner():
    with Runner(None) as r:
        yield r


def _load(path: Path):
    try:
        return load(path, CORPUS)
    except CorpusError as error:
        pytest.fail(f"unreadable corpus file {path.name}: {error.problem}", pytrace=False)


@pytest.mark.skipif(not FILES, reason="the corpus is empty")
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_corpus_entry(path: Path, runner: Runner) -> None:
    result = classify(_load(path), runner)
    if result.outcome == "regressed":
        pytest.fail(
            f"{path.name} was fixed and fails again ({result.entry.status}): {result.detail[:500]}",
            pytrace=False,
        )
    if result.outcome == "still-open":
        pytest.xfail(f"still open: {result.reason}")
    if result.outcome == "not-run":
        pytest.skip(f"not run here: {result.reason}")
    if result.outcome == "fixed-now":
        warnings.warn(
            f"{path.name} is open but passes now: `python -m harness replay --update` marks it "
            "fixed",
            stacklevel=1,
        )
    assert result.outcome in ("fixed-now", "still-fixed"), result


@pytest.mark.skipif(not FILES, reason="the corpus is empty")
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_corpus_file_is_portable(path: Path) -> None:
    """Schema-valid (loading checks it) and free of this machine's paths: the corpus is shared,
    so a command must say ``python -m compiler tools mlir-opt``, not where mlir-opt lives here."""
    _load(path)
    text = path.read_text(encoding="utf-8")
    found = sorted(p for p in machine_paths() if p in text)
    assert not found, f"{path.name} holds machine paths {found}"
