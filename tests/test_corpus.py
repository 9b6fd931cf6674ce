"""Every corpus file is a test: open bugs are strict xfails (a fix is noticed), fixed ones are
regression tests. An unreadable file fails its own test and names itself; the others still run."""

from __future__ import annotations

import site
import sys
from pathlib import Path

import pytest

from harness.corpus import Corpus, CorpusError, load
from harness.replay import reproduce
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
def test_corpus_entry(path: Path, runner: Runner, request: pytest.FixtureRequest) -> None:
    entry = _load(path)
    if entry.status == "open":
        request.applymarker(
            pytest.mark.xfail(strict=True, reason=f"open: {entry.detail.splitlines()[0][:200]}")
        )
    finding = reproduce(entry, runner)
    assert finding is None, f"{path.name} still fails: {finding.detail[:500]}"


@pytest.mark.skipif(not FILES, reason="the corpus is empty")
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_corpus_file_is_portable(path: Path) -> None:
    """Schema-valid (loading checks it) and free of this machine's paths: the corpus is shared,
    so a command must say ``python -m compiler tools mlir-opt``, not where mlir-opt lives here."""
    _load(path)
    text = path.read_text(encoding="utf-8")
    found = sorted(p for p in machine_paths() if p in text)
    assert not found, f"{path.name} holds machine paths {found}"
