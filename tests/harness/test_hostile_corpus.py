"""Every reader of the corpus survives every hostile file (tests/harness/hostile_corpus.py): the
loader, replay, the report, the fuzz session's corpus read and the CLI name each bad file and go
on with the good entry. Each check runs under a time limit, so a hang fails instead of hanging.
"""

from __future__ import annotations

import json
import re
import resource
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import hostile_corpus
import pytest

from harness.corpus import Corpus, CorpusError, Entry

T = TypeVar("T")


def within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``, failing the test (rather than hanging it) past ``seconds``; its exception,
    if any, is raised here."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed to the test thread
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{getattr(call, '__name__', call)} did not finish within {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(corpus directory, the good entry's path, {hostile file name: what it is})."""
    directory = tmp_path_factory.mktemp("hostile") / "corpus"
    good = Entry.from_json(hostile_corpus.good_entry())
    _, good_path = Corpus(directory).save(good)
    made = within(60, lambda: hostile_corpus.generate(directory, good.to_json()))
    assert len(made) >= 80
    return directory, good_path, made


def test_the_loader_names_every_hostile_file_and_loads_the_good_one(hostile) -> None:
    directory, good_path, made = hostile
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    items = within(30, lambda: list(Corpus(directory).entries()))
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    errors = {i.path.name: i for i in items if isinstance(i, CorpusError)}
    entries = [i for i in items if isinstance(i, Entry)]
    assert [e.path for e in entries] == [good_path]
    assert set(errors) == set(made), set(made) ^ set(errors)
    for name, error in errors.items():
        assert str(error).startswith(str(directory / name)), error
    assert grown_mib < 256, f"reading the hostile files took {grown_mib:.0f} MiB"  # no bomb


def test_replay_reports_each_bad_file_and_replays_the_good_one(hostile) -> None:
    from harness.replay import replay
    from harness.run.runner import Runner

    directory, good_path, made = hostile

    def run() -> list:
        with Runner(None, use_jax=False, timeout=60) as runner:
            return replay([directory], runner)

    results = within(180, run)
    by_name = {r.path.name: r for r in results}
    assert set(by_name) == set(made) | {good_path.name}
    for name in made:
        assert by_name[name].outcome == "unreadable" and by_name[name].entry is None, name
        assert by_name[name].detail
    good = by_name[good_path.name].outcome
    assert good in ("still-open", "fixed-now", "still-fixed", "regressed"), good


def test_the_report_escapes_and_lists_every_bad_file(hostile, tmp_path: Path) -> None:
    from harness.report import write_report

    directory, good_path, made = hostile
    evil = "<script>alert(1)</script>"
    summary = {
        "seconds": "soon",
        "stats": {
            "cases": evil,
            "kinds": {evil: evil, "crash": [1]},
            "cells": {f"op:{evil}|{evil}|{evil}": evil, "op:exp|float32|cpu-loops": 3, "x": 1},
            "errors": {evil: [1.0, "x", None, 1e308, float("nan")], "cpu-loops": "x"},
            "backend_runs": {"a": 1},
        },
        "options": {"seed": evil},
    }
    page = within(30, lambda: write_report(summary, Corpus(directory), tmp_path))
    text = page.read_text(encoding="utf-8")
    assert "<script" not in text
    assert text.count("unreadable corpus file:") == len(made)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert good_path.name in text
    compact = json.loads((tmp_path / "summary.json").read_text())
    assert sum("error" in item for item in compact["corpus"]) == len(made)
    for junk in ([], "x", None, {"stats": []}):  # a summary of the wrong shape still reports
        within(30, lambda junk=junk: write_report(junk, Corpus(directory), tmp_path))


def test_the_fuzz_session_reads_the_good_entry_and_names_the_rest(hostile, capsys) -> None:
    from harness.session.fuzz import Driver, FuzzOptions

    directory, good_path, made = hostile
    options = FuzzOptions(corpus=directory, database=None, use_jax=False)
    driver = within(30, lambda: Driver(options, 0))
    try:
        assert [entry.path for _, entry in driver.known] == [good_path]
    finally:
        driver.close()
    lines = capsys.readouterr().err.splitlines()
    assert sum(line.startswith("skipping unreadable corpus file:") for line in lines) == len(made)


def test_the_cli_prints_one_safe_line_per_bad_file(hostile, tmp_path: Path, capsys) -> None:
    from harness.cli import main

    directory, good_path, made = hostile
    files = [directory / name for name in sorted(made)]
    bad = [str(path) for path in files if not path.is_dir()]  # a directory argument expands
    code = within(60, lambda: main(["replay", "--no-jax", *bad]))
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert len(out) == len(bad) + 1 and out[-1].startswith(f"{len(bad)} entries:")
    assert all(line.startswith("unreadable") for line in out[:-1])
    assert not [line for line in out if re.search(r"[\x00-\x1f\x7f]", line)]
    summary = tmp_path / "summary.json"
    summary.write_bytes(b'{"seconds": NaN, "stats": [')
    code = within(60, lambda: main(["report", "--corpus", str(directory), "--out", str(tmp_path),
                                    "--summary", str(summary)]))  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert code == 0 and err[0].startswith("summary left out:")
    assert sum(line.startswith("unreadable corpus file:") for line in err) == len(made)
