"""Corpus files: atomic, content-addressed, deduplicated, robust to bad files and concurrency."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

import pytest

from harness.corpus import FORMAT, Corpus, CorpusError, Entry, atomic_write, load


def entry(size: int, ops: tuple[str, ...] = ("exp",), tag: str = "a") -> Entry:
    return Entry(
        case={"program": {"tag": tag, "size": size}, "oracle": "differential"},
        signature={
            "kind": "mismatch",
            "backend": "cpu-loops",
            "ops": list(ops),
            "dtype": "float32",
            "oracle": "differential",
        },
        size=size,
        detail="planted",
    )


def test_round_trip_and_content_address(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    stored, path = corpus.save(entry(10))
    assert stored and path.exists()
    loaded = load(path)
    assert loaded.case == entry(10).case and loaded.signature == entry(10).signature
    assert loaded.content_id in path.name and loaded.signature_id in path.name


def test_same_signature_keeps_the_smallest(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    corpus.save(entry(10, tag="big"))
    stored, _ = corpus.save(entry(20, tag="bigger"))
    assert not stored
    stored, path = corpus.save(entry(5, tag="small"))
    assert stored
    files = corpus.files()
    assert files == [path] and load(path).size == 5


def test_different_signatures_are_separate_entries(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    corpus.save(entry(10, ("exp",)))
    corpus.save(entry(10, ("log",)))
    assert len(corpus.files()) == 2


def test_corrupt_and_future_files_are_named_and_others_still_load(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    _, good = corpus.save(entry(3))
    (tmp_path / "corrupt.json").write_text("{not json")
    future = entry(4, ("log",)).to_json()
    future["format"] = FORMAT + 1
    (tmp_path / "future.json").write_text(json.dumps(future))
    items = list(corpus.entries())
    errors = [i for i in items if isinstance(i, CorpusError)]
    entries = [i for i in items if isinstance(i, Entry)]
    assert [e.path for e in entries] == [good]
    assert {e.path.name for e in errors} == {"corrupt.json", "future.json"}
    with pytest.raises(CorpusError, match="future.json.*newer"):
        load(tmp_path / "future.json")
    with pytest.raises(CorpusError, match="corrupt.json.*corrupt JSON"):
        load(tmp_path / "corrupt.json")


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    for i in range(20):
        atomic_write(target, json.dumps({"i": i}))
    assert json.loads(target.read_text()) == {"i": 19}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def _writer(directory: str, worker: int) -> None:
    corpus = Corpus(directory)
    for i in range(30):
        corpus.save(entry(100 + (i * 7 + worker) % 50, ("exp", f"op{i % 5}"), f"w{worker}-{i}"))


def test_concurrent_writers_never_tear_or_lose_the_smallest(tmp_path: Path) -> None:
    context = mp.get_context("spawn")
    procs = [context.Process(target=_writer, args=(str(tmp_path), w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    corpus = Corpus(tmp_path)
    by_signature: dict[str, list[Entry]] = {}
    for item in corpus.entries():
        assert isinstance(item, Entry), item  # no torn file
        by_signature.setdefault(item.signature_id, []).append(item)
    assert len(by_signature) == 5
    smallest: dict[str, int] = {}
    for worker in range(3):
        for i in range(30):
            e = entry(100 + (i * 7 + worker) % 50, ("exp", f"op{i % 5}"))
            smallest[e.signature_id] = min(smallest.get(e.signature_id, 10**9), e.size)
    for signature_id, entries in by_signature.items():
        # a file is only removed after a strictly smaller one of its signature is durable
        assert min(e.size for e in entries) == smallest[signature_id]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_pending_records_survive_and_are_listed(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    corpus.write_pending("w0", {"case": {"x": 1}})
    assert [task for _, task in corpus.leftover_pending()] == [{"case": {"x": 1}}]
    corpus.clear_pending("w0")
    assert corpus.leftover_pending() == []
