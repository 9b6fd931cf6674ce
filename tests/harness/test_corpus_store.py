"""Corpus files: atomic, content-addressed, deduplicated, robust to bad files and concurrency."""

from __future__ import annotations

import inspect
import json
import multiprocessing as mp
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from harness.case import Case, decode_array, encode_array
from harness.corpus import (
    FORMAT,
    MAX_ARRAY_BYTES,
    Corpus,
    CorpusError,
    Entry,
    atomic_write,
    load,
    portable,
)
from harness.corpus_schema import (
    ANNOTATIONS,
    ENTRY_SCHEMA,
    KEYWORDS,
    first_problem,
    keywords_used,
)
from strategies.model import ProgramBuilder


def case_dict(tag: str, size: int = 2) -> dict:
    """A real (tiny) case: exp of a float32 vector, told apart by its origin."""
    b = ProgramBuilder()
    x = b.input((size,), "float32")
    program = b.build(b.node("exp", x))
    inputs = [np.linspace(-1, 1, size, dtype=np.float32)]
    return Case(program, inputs, ("cpu-loops",), origin=tag).to_dict()


def entry(size: int, ops: tuple[str, ...] = ("exp",), tag: str = "a") -> Entry:
    return Entry(
        case={"case": case_dict(tag), "oracle": "differential"},
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


def test_the_minimized_form_of_the_same_case_replaces_its_record(tmp_path: Path) -> None:
    """Two drivers met one case: the record kept came from one, the minimized entry
    (minimizing changed nothing: the same case, the same file) from the other, which names no
    record to supersede. It was dropped as no smaller, and the finding stayed unminimized."""
    corpus = Corpus(tmp_path)
    raw = entry(10)
    raw.minimization = {"state": "unminimized"}
    assert corpus.save(raw)[0]
    done = entry(10)
    done.minimization = {"state": "minimized", "steps": []}
    stored, path = corpus.save(done)
    assert stored and corpus.files() == [path]
    assert load(path).minimization["state"] == "minimized"
    again = entry(10)
    again.minimization = {"state": "unminimized"}
    assert corpus.save(again) == (False, path), "a record never replaces the minimized entry"
    assert load(path).minimization["state"] == "minimized"


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


def test_pending_records_of_a_live_owner_are_never_taken(tmp_path: Path) -> None:
    from harness.pending import WriteAhead, claim, orphans

    ahead = WriteAhead(tmp_path, "w0")
    ahead.write({"case": {"x": 1}})
    assert orphans(tmp_path) == [] and list(claim(tmp_path)) == []  # this process is alive
    ahead.clear()
    assert not ahead.path.exists()


def _dead_owner_record(tmp_path: Path, name: str, record: dict) -> Path:
    """A record written by a process that has exited."""
    import subprocess
    import sys

    code = (
        "import sys; from harness.pending import WriteAhead; "
        f"WriteAhead(sys.argv[1], {name!r}).write({record!r})"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    (path,) = (tmp_path / ".pending").glob(f"*--{name}.json")
    return path


def test_a_dead_writers_temporary_file_is_swept_and_a_live_ones_kept(tmp_path: Path) -> None:
    """A kill -9 inside atomic_write leaves its temporary file; the next claim removes it, but
    never the file a live writer is filling."""
    import os
    import subprocess
    import sys

    from harness.corpus import TEMPORARY
    from harness.pending import claim, identity

    # A writer that dies between creating its temporary file and renaming it.
    code = (
        "import os, sys; from harness import corpus; "
        "corpus.os.replace = lambda *a: os._exit(9); "
        "corpus.atomic_write(corpus.Path(sys.argv[1]), 'torn')"
    )
    for target in (tmp_path / "entry.json", tmp_path / ".pending" / "rec.json"):
        done = subprocess.run([sys.executable, "-c", code, str(target)])
        assert done.returncode == 9
    dead = sorted(tmp_path.rglob(f"{TEMPORARY}*"))
    assert len(dead) == 2 and all(p.read_text() == "torn" for p in dead)
    live = tmp_path / f"{TEMPORARY}{identity()}--0123abcd.json"
    live.write_text("in progress")
    old_style = tmp_path / f"{TEMPORARY}0123456789abcdef.json"
    old_style.write_text("no owner")
    list(claim(tmp_path))
    assert sorted(tmp_path.rglob(f"{TEMPORARY}*")) == sorted([live, old_style])
    os.utime(old_style, (0, 0))  # an ownerless name is swept once it is an hour old
    list(claim(tmp_path))
    assert list(tmp_path.rglob(f"{TEMPORARY}*")) == [live]


# ---- the schema and the loader's checks


def test_the_validator_implements_every_keyword_the_schema_uses() -> None:
    assert keywords_used(ENTRY_SCHEMA) <= KEYWORDS | ANNOTATIONS
    assert json.loads(json.dumps(ENTRY_SCHEMA)) == ENTRY_SCHEMA  # plain JSON Schema data
    assert first_problem(entry(3).to_json()) is None


def test_every_saved_entry_conforms_to_the_schema(tmp_path: Path) -> None:
    """What the session writes (finding_entry) is what the loader accepts."""
    from harness.oracles.base import Finding
    from harness.session.fuzz import finding_entry

    case = Case.from_dict(case_dict("saved"))
    finding = Finding("mismatch", ("cpu-loops",), "differential", "planted <b>", case)
    raw = finding_entry(case, finding, minimization={"state": "unminimized"})
    assert first_problem(raw.to_json()) is None
    _, path = Corpus(tmp_path).save(raw)
    assert load(path).signature == finding.signature.to_dict()


def test_backend_names_holding_a_plus_survive_the_round_trip(tmp_path: Path) -> None:
    """``iree-cpu+host`` must come back whole (the joined ``backend`` string cannot say where
    one name ends); names without "+" keep the stored form, hence the ids, of older entries."""
    import ml_dtypes

    from harness.oracles.base import Finding
    from harness.session.fuzz import finding_entry
    from harness.triage.signature import Signature

    case = Case.from_dict(case_dict("plus"))
    backends = ("cpu-loops+mlir-runtime", "iree-cpu+host")
    raw = finding_entry(case, Finding("mismatch", backends, "differential", "planted", case))
    assert first_problem(raw.to_json()) is None
    _, path = Corpus(tmp_path).save(raw)
    assert Signature.from_dict(load(path).signature).backends == backends
    plain = Signature("mismatch", "differential", ("cpu-blas", "cpu-loops")).to_dict()
    assert "backends" not in plain and plain["backend"] == "cpu-blas+cpu-loops"
    # bfloat16 inputs are stored and validated like NumPy's own dtypes.
    b = ProgramBuilder()
    program = b.build(b.node("exp", b.input((3,), "bfloat16")))
    low = Case(program, [np.ones(3, ml_dtypes.bfloat16)], ("cpu-loops",))
    stored = finding_entry(low, Finding("mismatch", ("cpu-loops",), "differential", "p", low))
    assert first_problem(stored.to_json()) is None
    _, path = Corpus(tmp_path).save(stored)
    assert Case.from_dict(load(path).case["case"]).inputs[0].dtype == ml_dtypes.bfloat16


def test_a_list_valued_signature_is_an_error_naming_the_file_and_the_field(
    tmp_path: Path,
) -> None:
    corpus = Corpus(tmp_path)
    _, good = corpus.save(entry(3))
    data = entry(4, ("log",)).to_json()
    data["signature"] = ["mismatch", "cpu-loops"]
    (tmp_path / "listed.json").write_text(json.dumps(data))
    with pytest.raises(CorpusError, match=r"listed\.json: malformed entry: signature: expected"):
        load(tmp_path / "listed.json")
    # and the session still saves its findings: the bad file is skipped, not fatal
    stored, path = corpus.save(entry(2, ("log",), "new"))
    assert stored and load(path).size == 2
    assert {type(i).__name__ for i in corpus.entries()} == {"Entry", "CorpusError"}
    assert good.exists()


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("status", "closed", "status: 'closed' is not one of open, fixed, regressed"),
        ("size", -1, "size: -1 is below the minimum 0"),
        ("size", True, "size: expected integer, got boolean"),
        ("detail", ["x"], "detail: expected string, got array"),
        ("extra_field", 1, "extra_field: unknown field"),
    ],
)
def test_each_field_is_type_checked(tmp_path: Path, field: str, value, message: str) -> None:
    data = entry(3).to_json()
    data[field] = value
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(CorpusError) as caught:
        load(tmp_path / "bad.json")
    assert caught.value.path == tmp_path / "bad.json"
    assert message in caught.value.problem


def test_a_kind_cannot_leave_the_corpus_directory(tmp_path: Path) -> None:
    data = entry(3).to_json()
    data["signature"]["kind"] = "../../escape"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(CorpusError, match="signature.kind"):
        load(tmp_path / "bad.json")


def test_symlinks_are_followed_only_inside_the_corpus(tmp_path: Path) -> None:
    inside, outside = tmp_path / "corpus", tmp_path / "elsewhere"
    _, good = Corpus(inside).save(entry(3))
    (inside / "alias.json").symlink_to(good.name)
    _, foreign = Corpus(outside).save(entry(4, ("log",)))
    (inside / "foreign.json").symlink_to(foreign)
    (inside / "zero.json").symlink_to("/dev/zero")
    items = {i.path.name: i for i in Corpus(inside).entries()}
    assert isinstance(items["alias.json"], Entry)
    assert "outside" in items["foreign.json"].problem
    assert "outside" in items["zero.json"].problem


def test_decode_array_caps_and_checks_before_inflating() -> None:
    assert inspect.signature(decode_array).parameters["max_bytes"].default == MAX_ARRAY_BYTES
    stored = encode_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert decode_array(stored).shape == (2, 3)
    bomb = dict(stored, shape=[2], zlib=encode_array(np.zeros(1 << 20, np.float32))["zlib"])
    bad = [
        (bomb, "inflate past"),
        (dict(stored, shape=[7]), "needs 28"),
        (dict(stored, shape=[-6]), "non-negative"),
        (dict(stored, shape=[1 << 40, 1 << 40]), "over"),
        (dict(stored, dtype="O"), "numeric"),
        (dict(stored, dtype=">f4"), "numeric"),
        (dict(stored, zlib=stored["zlib"][:-4]), "truncated"),
        (dict(stored, zlib="!!!!"), "base64"),
        ({"dtype": "float32", "shape": [1 << 30], "generator": {"seed": 0, "scale": 1.0}}, "over"),
    ]
    for data, message in bad:
        with pytest.raises(ValueError, match=message):
            decode_array(data)


def test_format_1_entries_stay_readable(tmp_path: Path) -> None:
    """Format 1 wrote one 'check' name instead of 'checks'; such files still load and decode."""
    data = entry(3).to_json()
    data["case"]["case"].pop("checks")
    data["case"]["case"]["check"] = "differential"
    (tmp_path / "old.json").write_text(json.dumps(data))
    loaded = load(tmp_path / "old.json")
    assert data["format"] == FORMAT == 1
    assert Case.from_dict(loaded.case["case"]).checks == ()


# ---- permissions and portability


def test_atomic_write_creates_0644_less_the_umask(tmp_path: Path) -> None:
    if os.name != "posix":
        pytest.skip("POSIX permissions")
    old = os.umask(0o022)
    try:
        target = tmp_path / "x.json"
        atomic_write(target, "{}")
        assert stat.S_IMODE(target.stat().st_mode) == 0o644
        _, path = Corpus(tmp_path / "c").save(entry(3))
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        loaded = load(path)
        loaded.status = "fixed"
        Corpus(path.parent).update(loaded)  # what `replay --update` does
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        os.umask(0o077)
        atomic_write(target, "{}")
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_saved_entries_carry_no_machine_paths(tmp_path: Path) -> None:
    import site
    import sys

    machine = site.getsitepackages()[0] + "/mlir/bin/mlir-opt"
    saved = entry(3)
    saved.mlir = {"commands": {"lowered": f"{machine} in.mlir"}}
    saved.evidence = {"stderr": f'File "{sys.prefix}/lib/x.py", line 1\n{Path.home()}/a'}
    _, path = Corpus(tmp_path).save(saved)
    text = path.read_text()
    assert machine not in text and sys.prefix not in text
    assert "<site-packages>/mlir/bin/mlir-opt in.mlir" in text
    assert portable({"a": [f"{Path.home()}/x"]}) == {"a": ["~/x"]}


def test_orphaned_records_are_claimed_once_and_unreadable_ones_kept_aside(tmp_path: Path) -> None:
    from harness.pending import claim, identity, orphans, release

    _dead_owner_record(tmp_path, "w0", {"case": {"x": 1}})
    pending = tmp_path / ".pending"
    host = identity().rsplit(".", 2)[0]
    dead = f"{host}.1.1"  # pid 1 did not start at tick 1: a dead owner of this machine
    for name, text in (("deep", "[" * 100_000), ("nan", '{"case": NaN}'), ("list", "[1]")):
        (pending / f"{dead}--{name}.json").write_text(text)
    os.mkfifo(pending / f"{dead}--fifo.json")
    (pending / "otherhost.5.5--w9.json").write_text("{}")  # another machine's: never taken
    claimed = list(claim(tmp_path))
    records = [r for _, r in claimed if r is not None]
    assert records == [{"case": {"x": 1}}]
    assert len(claimed) == 5  # the four unreadable ones come back as None, still named
    assert orphans(tmp_path) == []  # claimed by this live process: nobody else takes them
    assert list(claim(tmp_path)) == []
    for path, _ in claimed:
        release(path)
    assert [p.name for p in pending.iterdir()] == ["otherhost.5.5--w9.json"]


def test_a_file_that_cannot_be_opened_is_named(tmp_path: Path, monkeypatch) -> None:
    _, path = Corpus(tmp_path).save(entry(3))
    if os.geteuid() != 0:
        path.chmod(0)
    else:  # root reads through chmod 000: refuse the open instead

        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr("harness.corpus.os.open", refuse)
    with pytest.raises(CorpusError, match=r"cannot read \(Permission denied\)") as caught:
        load(path)
    assert caught.value.path == path


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"spelling": "fortran"}, "extra.spelling: 'fortran' is not one of array-api, numpy"),
        ({"layouts": ["sideways"]}, "extra.layouts[0]: 'sideways' is not one of c, fortran"),
        ({"layouts": "fortran"}, "extra.layouts: expected array"),
    ],
)
def test_a_case_option_is_checked_at_load(tmp_path: Path, extra: dict, message: str) -> None:
    """How the program is written and how its inputs are laid out are part of the case: a
    stored value the harness does not know is the file's error, named at load time."""
    data = entry(3).to_json()
    data["case"]["case"]["extra"] = extra
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(CorpusError) as caught:
        load(tmp_path / "bad.json")
    assert message in caught.value.problem, caught.value.problem
