"""Replay gates CI: every entry gets a state, a regression fails the command, the tox env, the
pytest corpus test and the JUnit XML, and nothing that was not run is ever called fixed.

The planted regression is a real finding: a toy backend (a harness plugin, as a user would add
one) that answers one too much, judged by the differential oracle; its entry is marked fixed.
"""

from __future__ import annotations

import configparser
import importlib
import importlib.util
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from harness.case import Case
from harness.corpus import atomic_write, load
from harness.replay import STATES, replay
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

ROOT = Path(__file__).resolve().parents[2]

TOYS = '''"""Toy backends for the replay tests: one with a planted bug, one never available."""

import numpy as np

from compiler import backends
from compiler.driver import Artifacts
from compiler.interpret import evaluate_graph


class OffByOne:
    name = "toy-off-by-one"
    description = "the traced graph interpreted by NumPy, plus one: a planted bug"

    def unavailable(self):
        return None

    def compile(self, graph):
        return Artifacts(self.name, {"module": ""}, native=graph)

    def run(self, artifacts, arrays):
        outputs = [np.asarray(o) for o in evaluate_graph(artifacts.native, arrays)]
        return [o + np.ones((), o.dtype) for o in outputs]


class Missing(OffByOne):
    name = "toy-missing"
    description = "a backend that never runs here"

    def unavailable(self):
        return "the toy device is not plugged in"


class CompileOnly(OffByOne):
    name = "toy-compile-only"
    description = "compiles here, runs only where its device is (as gpu-nvptx without a GPU)"

    def run(self, artifacts, arrays):
        from compiler import UnsupportedFeature

        raise UnsupportedFeature("running toy-compile-only needs a toy device")


class Slow(OffByOne):
    name = "toy-slow"
    description = "right, after a second"

    def run(self, artifacts, arrays):
        import time

        time.sleep(1.0)
        return [np.asarray(o) for o in evaluate_graph(artifacts.native, arrays)]


for _backend in (OffByOne(), Missing(), CompileOnly(), Slow()):
    if _backend.name not in backends.BACKENDS:
        backends.register(_backend)
'''

#: file -> what replay must call it (``unknown-*``: a backend this harness has never heard of).
EXPECTED = {
    "regressed.json": "regressed",
    "still-open.json": "still-open",
    "still-fixed.json": "still-fixed",
    "fixed-now.json": "fixed-now",
    "unknown-open.json": "not-run",
    "unknown-fixed.json": "not-run",
    "unavailable-fixed.json": "not-run",
    "compile-only-fixed.json": "not-run",
    "unreadable.json": "unreadable",
}


@pytest.fixture(scope="module")
def toys(tmp_path_factory: pytest.TempPathFactory):
    """The toy backends, registered here and (``HARNESS_PLUGINS``) in every worker."""
    from compiler import backends

    directory = tmp_path_factory.mktemp("toys")
    (directory / "replay_toys.py").write_text(TOYS)
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(directory))
        patch.setenv("HARNESS_PLUGINS", "replay_toys")
        importlib.import_module("replay_toys")
        yield directory
    for name in ("toy-off-by-one", "toy-missing", "toy-compile-only", "toy-slow"):
        backends.unregister(name)
    sys.modules.pop("replay_toys", None)


@pytest.fixture(scope="module")
def runner(toys):
    with Runner(None, use_jax=False) as r:
        yield r


@pytest.fixture(scope="module")
def entries(runner) -> dict[str, str]:
    """file name -> its JSON text: the planted finding as fixed, open, on other backends."""
    from harness.session.fuzz import finding_entry

    b = ProgramBuilder()
    x, y = b.input((2, 3), "float32"), b.input((2, 3), "float32")
    rng = np.random.default_rng(0)
    case = Case(
        b.build(b.node("add", x, y)),
        [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)],
        ("toy-off-by-one",),
    )
    [finding] = runner.evaluate(case, ()).findings
    assert (finding.kind, finding.oracle) == ("mismatch", "differential")
    base = finding_entry(case, finding, status="fixed").to_json()

    def variant(status: str, backends: list[str] | None = None, signature: str = "") -> str:
        data = json.loads(json.dumps(base))
        data["status"] = status
        if backends is not None:
            data["case"]["case"]["backends"] = backends
        if signature:
            data["signature"]["backend"] = signature
        return json.dumps(data, indent=1)

    return {
        "regressed.json": variant("fixed"),
        "still-open.json": variant("open"),
        "still-fixed.json": variant("fixed", ["graph-numpy"]),
        "fixed-now.json": variant("open", ["graph-numpy"]),
        "unknown-open.json": variant("open", ["no-such-backend"], "no-such-backend"),
        "unknown-fixed.json": variant("fixed", ["no-such-backend"], "no-such-backend"),
        "unavailable-fixed.json": variant("fixed", ["toy-missing"], "toy-missing"),
        "compile-only-fixed.json": variant("fixed", ["toy-compile-only"], "toy-compile-only"),
        "slow-fixed.json": variant("fixed", ["toy-slow"], "toy-slow"),
        "unreadable.json": '{"format": 1, "status": "fixed", "case": ',
    }


def plant(directory: Path, entries: dict[str, str], names=None) -> Path:
    """A corpus of the named entries (all by default)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in names or EXPECTED:
        atomic_write(directory / name, entries[name])
    return directory


def status(path: Path) -> str:
    return json.loads(path.read_text())["status"]


def test_every_entry_gets_its_state(entries, runner, tmp_path: Path) -> None:
    corpus = plant(tmp_path / "corpus", entries)
    results = replay([corpus], runner)
    assert {r.path.name: r.outcome for r in results} == EXPECTED
    by_name = {r.path.name: r for r in results}
    assert "toy-off-by-one: error 1" in by_name["regressed.json"].detail
    assert by_name["regressed.json"].finding is not None
    assert "unknown target 'no-such-backend'" in by_name["unknown-fixed.json"].detail
    assert "not plugged in" in by_name["unavailable-fixed.json"].detail
    assert "needs a toy device" in by_name["compile-only-fixed.json"].detail
    assert by_name["unreadable.json"].entry is None and by_name["unreadable.json"].detail
    assert all(r.outcome in STATES for r in results)


def test_cli_fails_on_a_regression_and_writes_junit(entries, toys, tmp_path: Path, capsys) -> None:
    from harness.cli import main

    corpus = plant(tmp_path / "corpus", entries)
    junit = tmp_path / "out" / "replay.xml"
    code = main(["replay", "--no-jax", str(corpus), "--junit-xml", str(junit)])
    out, err = capsys.readouterr()
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == len(EXPECTED) + 1
    for line in lines[:-1]:
        state, path = line.split()[:2]
        assert EXPECTED[Path(path).name] == state, line
    assert lines[-1].startswith(f"{len(EXPECTED)} entries: 1 regressed, 1 unreadable")
    assert "1 regressed: fixed entries failing again" in err and "1 fixed-now: open" in err

    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == str(len(EXPECTED))
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("1", "1", "5")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == set(EXPECTED)
    regressed = cases["regressed.json"]
    assert regressed.get("classname") == "mismatch/toy-off-by-one"
    assert "toy-off-by-one: error 1" in regressed.find("failure").get("message")
    assert cases["unreadable.json"].find("error") is not None
    for name in ("still-open.json", "unknown-open.json", "unknown-fixed.json"):
        assert cases[name].find("skipped").get("message").startswith(EXPECTED[name]), name
    assert "unknown target" in cases["unknown-fixed.json"].find("skipped").get("message")
    for name in ("still-fixed.json", "fixed-now.json"):
        assert cases[name].find("failure") is None and cases[name].find("skipped") is None


def test_exit_status_without_a_regression(entries, toys, tmp_path: Path, capsys) -> None:
    """Known bugs and entries not run here are no failure; --strict makes still-open one."""
    from harness.cli import main

    corpus = plant(tmp_path / "corpus", entries, ["still-open.json", "unknown-fixed.json"])
    assert main(["replay", "--no-jax", str(corpus)]) == 0
    assert main(["replay", "--no-jax", "--strict", str(corpus)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "2 entries: 1 still-open, 1 not-run"


def test_update_flips_only_what_was_judged_fixed(entries, toys, tmp_path: Path, capsys) -> None:
    from harness.cli import main

    corpus = plant(tmp_path / "corpus", entries)
    unreadable = (corpus / "unreadable.json").read_bytes()
    assert main(["replay", "--no-jax", "--update", str(corpus)]) == 1
    after = {name: status(corpus / name) for name in EXPECTED if name != "unreadable.json"}
    assert after == {
        "regressed.json": "fixed",  # a regression is not reopened unless asked
        "still-open.json": "open",
        "still-fixed.json": "fixed",
        "fixed-now.json": "fixed",
        "unknown-open.json": "open",  # not run: never closed
        "unknown-fixed.json": "fixed",
        "unavailable-fixed.json": "fixed",
        "compile-only-fixed.json": "fixed",
    }
    assert (corpus / "unreadable.json").read_bytes() == unreadable
    out = capsys.readouterr().out
    assert "fixed-now" in out and "[marked fixed]" in out
    assert main(["replay", "--no-jax", "--update", "--reopen", str(corpus)]) == 1  # unreadable
    assert status(corpus / "regressed.json") == "open"
    assert load(corpus / "fixed-now.json").status == "fixed"
    out = capsys.readouterr().out
    assert "still-fixed  " + str(corpus / "fixed-now.json") in out


def test_the_pytest_corpus_test_judges_the_same_way(entries, runner, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("corpus_tests", ROOT / "tests/test_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    corpus = plant(tmp_path / "corpus", entries)
    raised = {
        "regressed.json": pytest.fail.Exception,
        "unreadable.json": pytest.fail.Exception,
        "still-open.json": pytest.xfail.Exception,
        "unknown-fixed.json": pytest.skip.Exception,
        "unavailable-fixed.json": pytest.skip.Exception,
    }
    for name, exception in raised.items():
        with pytest.raises(exception) as info:
            module.test_corpus_entry(corpus / name, runner)
        if name != "unreadable.json":
            assert EXPECTED[name].split("-")[0] in str(info.value) or "fails again" in str(
                info.value
            ), (name, info.value)
    module.test_corpus_entry(corpus / "still-fixed.json", runner)
    with pytest.warns(UserWarning, match="--update"):
        module.test_corpus_entry(corpus / "fixed-now.json", runner)


def _replay_command(corpus: Path) -> list[str]:
    """The tox ``replay`` env's command, replaying ``corpus``."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "tox.ini")
    [line] = [c for c in config["testenv:replay"]["commands"].splitlines() if c.strip()]
    words = shlex.split(line)
    words = [str(corpus) if w.startswith("{posargs") else w for w in words]
    assert words[:4] == ["python", "-m", "harness", "replay"], words
    return [sys.executable, *words[1:]]


def _environment(toys: Path) -> dict[str, str]:
    path = os.pathsep.join([str(toys), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, PYTHONPATH=path, HARNESS_PLUGINS="replay_toys")


@pytest.mark.slow
def test_the_tox_replay_env_fails_on_a_regression(entries, toys, tmp_path: Path) -> None:
    corpus = plant(tmp_path / "corpus", entries, ["regressed.json", "still-fixed.json"])
    command = _replay_command(corpus)
    env = _environment(toys)
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "2 entries: 1 regressed, 1 still-fixed"
    assert "Traceback" not in proc.stderr
    (corpus / "regressed.json").unlink()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_signal_stops_the_replay_with_its_exit_status(entries, toys, tmp_path: Path) -> None:
    corpus = plant(tmp_path / "corpus", entries, ["regressed.json"])
    for i in range(20):  # a second each: still running when the signal comes
        atomic_write(corpus / f"slow-{i:02}.json", entries["slow-fixed.json"])
    proc = subprocess.Popen(
        _replay_command(corpus) + ["--no-jax"],
        cwd=ROOT,
        env=_environment(toys),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()  # the first entry is done: the worker is up
        assert first, proc.stderr.read()
        proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, (first, out, err)
    assert time.monotonic() - start < 10
    assert "stopped by SIGTERM" in err and "Traceback" not in err
    summary = out.splitlines()[-1]
    assert re.fullmatch(r"\d+ entries(: .*)?", summary) and int(summary.split()[0]) < 21, out


PLANT_SCRIPT = """
import sys
import numpy as np
from harness.case import Case
from harness.corpus import Corpus
from harness.run.runner import Runner
from harness.session.fuzz import finding_entry
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x = b.input((2, 3, 4), "float32")
case = Case(b.build(b.node("permute_dims", x, axes=(1, 2, 0))),
            [np.arange(24, dtype=np.float32).reshape(2, 3, 4)], ("cpu-loops",))
with Runner(None, use_jax=False) as runner:
    [finding] = runner.evaluate(case, ()).findings
print(Corpus(sys.argv[1]).save(finding_entry(case, finding, status="fixed"))[1])
"""


@pytest.mark.slow
def test_a_bug_back_in_the_real_compiler_is_a_regression(tmp_path: Path) -> None:
    """A planted compiler bug (selftest's mutation, in a scratch copy) found, marked fixed: on
    the real compiler the entry is still fixed, on the mutated one it regressed (exit 1)."""
    from harness.selftest import MUTATIONS, apply, scratch_environment

    [mutation] = [m for m in MUTATIONS if m.name == "swapped-transpose-permutation"]
    scratch = apply(mutation, tmp_path / "scratch")
    corpus, work = tmp_path / "corpus", tmp_path / "work"
    work.mkdir()
    env = scratch_environment(scratch)
    env.pop("HARNESS_PLUGINS", None)  # the module's toys (a fixture) are not on these paths
    # cwd outside the repository: ``python -c`` puts it first on sys.path, before the scratch copy
    made = subprocess.run(
        [sys.executable, "-c", PLANT_SCRIPT, str(corpus)], cwd=work, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    replay_command = [sys.executable, "-m", "harness", "replay", "--no-jax", str(corpus)]
    own = {k: v for k, v in os.environ.items() if k != "HARNESS_PLUGINS"}
    real = subprocess.run(
        replay_command, cwd=ROOT, env=own, capture_output=True, text=True, timeout=300
    )
    assert real.returncode == 0 and real.stdout.startswith("still-fixed"), real.stdout + real.stderr
    back = subprocess.run(
        replay_command, cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert back.returncode == 1, back.stdout + back.stderr
    assert back.stdout.startswith("regressed") and "1 regressed: fixed" in back.stderr


def test_a_pass_on_a_cpu_without_the_failures_features_is_not_a_fix(monkeypatch) -> None:
    """The bf16 codegen abort in the corpus (found on an AVX512-BF16 machine, its command asks
    LLVM for ``+avx512bf16``) passes on a CPU without the feature: not run there, never fixed;
    an LLVM failure needs every vector feature of the CPU it was found on, others none."""
    from types import SimpleNamespace

    from harness import replay
    from harness.corpus import load

    root = Path(__file__).resolve().parents[2] / "corpus"
    entry = load(root / "crash-442b5f5548-3e6064793224a169.json", root)
    assert replay.missing_features(entry, ["avx2", "fma"]) == ["avx512bf16"]
    assert replay.missing_features(entry, ["avx2", "avx512bf16"]) == []
    entry.versions = {**entry.versions, "cpu": "avx2 avx512f"}
    assert replay.missing_features(entry, ["avx2"]) == ["avx512bf16", "avx512f"]
    other = SimpleNamespace(evidence={"attribution": {"layer": "builder"}}, versions=entry.versions)
    assert replay.missing_features(other, ["avx2"]) == []
    older = load(root / "metamorphic-3c7602a52f-3c30f9a66ca1be0a.json", root)  # no versions.cpu
    assert "avx512bf16" in replay.missing_features(older, ["avx2", "fma"])
    monkeypatch.setattr(replay, "blocked", lambda entry: None)
    monkeypatch.setattr(
        replay, "entry_case", lambda entry: SimpleNamespace(backends=(), invalid=None)
    )
    monkeypatch.setattr(
        replay, "judge", lambda entry, runner, case: (None, SimpleNamespace(unsupported=[]))
    )
    monkeypatch.setattr(replay, "missing_features", lambda entry: ["avx512bf16"])
    result = replay.classify(entry, runner=None)
    assert result.outcome == "not-run" and "avx512bf16" in result.detail, result
    monkeypatch.setattr(replay, "missing_features", lambda entry: [])
    assert replay.classify(entry, runner=None).outcome == "fixed-now"


def test_a_failure_recurs_or_not_on_the_backends_it_was_found_on() -> None:
    """A finding is minimized on its failing backends and stored on all of the case's; "does
    it recur?" (replay and minimizer alike) runs the signature's backends the case holds, so an
    oracle that picks one backend to call differently picks the same one. Replayed on all of
    them, a planted tupled bug on cpu-vector alone, stored on eight backends, was fixed-now with
    the bug in (the tupled call went to another backend)."""
    from harness.oracles.base import Judgement
    from harness.replay import recurring
    from harness.triage.signature import Signature

    seen: list[tuple[str, ...]] = []

    class Recording:
        def evaluate(self, case: Case, only: tuple[str, ...], probe: bool = False) -> Judgement:
            seen.append(case.backends)
            return Judgement()

    b = ProgramBuilder()
    program = b.build(b.node("exp", b.input((2,), "float32")))
    case = Case(program, [np.ones(2, np.float32)], ("cpu-loops@O0", "cpu-blas", "cpu-vector"))
    for backends, runs in [
        (("cpu-vector",), ("cpu-vector",)),
        (("cpu-vector", "cpu-loops@O0"), ("cpu-loops@O0", "cpu-vector")),
        (("cpu-loops",), case.backends),  # none of them held: all of them
        ((), case.backends),
    ]:
        seen.clear()
        signature = Signature("tupled", "tupled", backends)
        assert recurring(Recording(), case, signature, ("tupled",), 1)[0] is None
        assert seen == [runs]


def _fixture_replayed(runner, tmp_path: Path, fixture: str, name: str):
    """The replay of ``fixtures/<fixture>``, stored as corpus entry ``name`` (a finding made on
    a planted compiler), on this one."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    atomic_write(corpus / name, (Path(__file__).parent / "fixtures" / fixture).read_text())
    [result] = replay([corpus], runner)
    return result


def test_an_invalid_program_the_compiler_refuses_now_is_fixed(runner, tmp_path: Path) -> None:
    """A finding from a planted bug (``np.mean(x, axis=0, keepdims=True, where=True)`` taken,
    the keyword ignored: ``unsupported_keyword``), replayed on the compiler that refuses it
    (UnsupportedFeature, the answer the violation calls for): fixed, not "not runnable here"
    as a limitation hit by a valid program would be."""
    result = _fixture_replayed(
        runner, tmp_path, "refused_keyword_accepted_entry.json",
        "wrong-error-ce53700fdf-aebe4bf6e8125597.json",
    )  # fmt: skip
    assert result.outcome == "fixed-now", result.detail


def test_a_program_the_compiler_refuses_now_is_fixed(runner, tmp_path: Path) -> None:
    """A finding from a planted rule that took ``np.maximum`` of booleans (signed ``i1``: AND
    for NumPy's OR), replayed on the compiler that refuses booleans there: its case cannot be
    built (the rule's NotImplementedError, a documented limitation), and no wrong answer is
    left: fixed, not "cannot be rebuilt"."""
    result = _fixture_replayed(
        runner, tmp_path, "bool_maximum_taken_entry.json",
        "mismatch-e74109b789-6175ae02bd5ec119.json",
    )  # fmt: skip
    assert result.outcome == "fixed-now", result.detail
    assert "refuses the program as unsupported" in result.detail
