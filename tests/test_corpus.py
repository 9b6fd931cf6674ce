"""Every corpus file is a test: open bugs are strict xfails (a fix is noticed), fixed ones are
regression tests. An unreadable file fails its own test and names itself; the others still run."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpus import Corpus, load
from harness.replay import reproduce
from harness.run.runner import Runner

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
FILES = Corpus(CORPUS).files()


@pytest.fixture(scope="module")
def runner():
    with Runner(None) as r:
        yield r


@pytest.mark.skipif(not FILES, reason="the corpus is empty")
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_corpus_entry(path: Path, runner: Runner, request: pytest.FixtureRequest) -> None:
    entry = load(path)
    if entry.status == "open":
        request.applymarker(
            pytest.mark.xfail(strict=True, reason=f"open: {entry.detail.splitlines()[0][:200]}")
        )
    finding = reproduce(entry, runner)
    assert finding is None, f"{path.name} still fails: {finding.detail[:500]}"
