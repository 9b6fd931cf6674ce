"""Replaying corpus entries: which known bugs are still open, which are fixed, which came back.

Every entry is judged the way the session found it: its case rebuilt from the file, its oracle
forced by name, its failure recognized by ``Signature.matches``. Each entry gets one state:

- ``still-open``: an open entry that still fails (a known bug; not a failure unless strict);
- ``fixed-now``: an open (or regressed) entry that passes now (``update`` marks it fixed);
- ``still-fixed``: a fixed entry that still passes;
- ``regressed``: a fixed (or regressed) entry that fails again: CI fails;
- ``not-run``: a backend unknown or unavailable here, a run the backend cannot do here (a GPU
  without a device), a case that cannot be rebuilt or a harness error: it was not judged, so it
  is never reported as fixed and never flipped;
- ``unreadable``: a file the loader refuses, named; the others still replay.

The CLI (``python -m harness replay``), ``tests/test_corpus.py`` and the JUnit XML written here
all read these states, so a regression fails the same way everywhere.
"""

from __future__ import annotations

import platform
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .case import Case, Earlier
from .corpus import Corpus, CorpusError, Entry, atomic_write, load, printable
from .oracles import ORACLES
from .oracles.base import Finding, Judgement
from .run.isolation import stop_requested
from .run.runner import Runner, Stopped
from .triage.signature import Signature

#: Every state, most urgent first (the order of the summary).
STATES = ("regressed", "unreadable", "still-open", "fixed-now", "not-run", "still-fixed")
#: The states that fail a replay (exit 1, a failed test): a bug back, or a file CI cannot read.
FAILING = ("regressed", "unreadable")
#: The states of an entry whose case passes here.
PASSING = ("fixed-now", "still-fixed")


@dataclass
class Replayed:
    """One corpus file's replay: its state and why (the failure, or why it was not run)."""

    path: Path
    outcome: str  # one of STATES
    entry: Entry | None = None
    detail: str = ""
    finding: Finding | None = None
    seconds: float = 0.0
    updated: str = ""  # the status an update wrote, or why it could not

    @property
    def reason(self) -> str:
        """The detail's first line, printable and short (for one line of output)."""
        lines = self.detail.strip().splitlines()
        return printable(lines[0][:200]) if lines else ""

    @property
    def group(self) -> str:
        """``kind/backend`` of the entry's signature (the JUnit classname)."""
        if self.entry is None:
            return "unreadable"
        signature = self.entry.signature
        return f"{signature.get('kind', 'finding')}/{signature.get('backend', '') or 'none'}"


def entry_case(entry: Entry) -> Case:
    return Case.from_dict(entry.case["case"])


#: The steps a worker marks (``[stage <backend> <step>]`` in a crash's detail) that only an
#: oracle's task takes: a crash there recurs only with that oracle on.
STEP_ORACLES = {
    "repeat": "determinism",
    "persist": "determinism",
    "configured": "determinism",
    "successor": "determinism",
    "concurrent": "determinism",
    "tupled": "tupled",
    "nested": "tupled",
    "misfit": "arguments",
    "model": "gpt2-model",
}


def oracles_of(signature: Signature, detail: str = "") -> tuple[str, ...]:
    """The non-primary oracles to force when replaying a finding of ``signature`` (its
    ``detail`` names the step a crash died in: one of ``STEP_ORACLES`` brings its oracle)."""
    determinism = signature.oracle == "determinism"  # its stale specializations too
    if determinism or signature.kind in ("nondeterministic", "retrace", "aliasing"):
        return ("determinism",)
    forced = []
    if (step := crashed_at(detail)[1]) in STEP_ORACLES:
        forced.append(STEP_ORACLES[step])
    oracle = signature.oracle.split("[")[0]
    if oracle in ORACLES and not ORACLES[oracle].primary and oracle not in forced:
        forced.append(oracle)
    return tuple(forced)


def crashed_at(detail: str) -> tuple[str, str]:
    """(backend, step) of `` [stage <backend> <step>]`` in a crash's ``detail``, or ("", "")."""
    match = re.search(r" \[stage (\S+) (\S+)\]", detail)
    return (match.group(1), match.group(2)) if match else ("", "")


def through_the_cache(finding: Finding) -> bool:
    """Did ``finding`` come out of the persistent cache's round trip (a crash in its step, or
    other values out of the kernel loaded back: the determinism oracle's)?"""
    from .run.worker import CONFIGURATION

    if finding.kind == "crash":
        return crashed_at(finding.detail)[1] == "persist"
    if CONFIGURATION in finding.detail:  # the configurations' check (``configured``)
        return False
    return finding.kind == "nondeterministic" and "persistent compilation cache" in finding.detail


def judge(
    entry: Entry, runner: Runner, case: Case | None = None
) -> tuple[Finding | None, Judgement]:
    """Run the entry's case with its oracle: the same failure if it recurs, and the judgement.
    An entry that needs earlier cases (``evidence.earlier``: its failure recurred only after
    them, ``triage.history``) runs in a new worker process after them."""
    case = entry_case(entry) if case is None else case
    signature = Signature.from_dict(entry.signature)
    earlier = earlier_of(entry)
    if earlier:
        runner.after(earlier)
    return recurring(runner, case, signature, oracles_of(signature, entry.detail), RACE_RUNS)


def earlier_of(entry: Entry) -> tuple[Earlier, ...]:
    """The earlier cases the entry's failure needs run first in its process (none for most)."""
    evidence = entry.evidence if isinstance(entry.evidence, dict) else {}
    return tuple(Earlier.from_dict(record) for record in evidence.get("earlier") or ())


#: How often the check of a ``race`` (which shows in some runs only) runs before a case is said
#: to pass it: a replay's many, a minimization candidate's few (each candidate pays them).
RACE_RUNS = 20
MINIMIZE_RACE_RUNS = 4


def recurring(
    runner: Runner, case: Case, signature: Signature, only: tuple[str, ...], race_runs: int
) -> tuple[Finding | None, Judgement]:
    """Run ``case`` with the oracles ``only`` (once, or ``race_runs`` times for a race, until
    it recurs): the first finding that is ``signature``'s failure (``matches``), if any, and the
    last judgement. The one test of "does this failure recur?" for replay and minimization.

    It runs on the signature's backends that the case holds (all of its backends where it holds
    none): a finding is minimized there and stored on all of them, and an oracle that picks one
    backend to call differently (the tupled call, the fresh recompile) picks among those it runs
    on: a planted tupled bug on one backend, stored on eight, replayed fixed-now with the bug
    in."""
    failing = tuple(b for b in case.backends if b in signature.backends)
    case = case.on(failing or case.backends)
    for _ in range(race_runs if signature.kind == "race" else 1):
        judgement = runner.evaluate(case, only, probe=True)
        for finding in judgement.findings:
            if finding.signature.matches(signature):
                return finding, judgement
    return None, judgement


def reproduce(entry: Entry, runner: Runner) -> Finding | None:
    """Run the entry's case with its oracle; the same failure, if it recurs."""
    return judge(entry, runner)[0]


def blocked(entry: Entry) -> str | None:
    """Why the entry cannot run here as recorded (a backend unknown or unavailable), or None."""
    from compiler.backends import why_not

    from .oracles.spec import DEFINITION

    wanted = list(entry.case["case"].get("backends", ()))
    signature = Signature.from_dict(entry.signature).backends
    wanted += [b for b in signature if b not in wanted and b != DEFINITION]  # not a backend
    reasons = [reason for reason in map(why_not, dict.fromkeys(wanted)) if reason]
    return "; ".join(reasons) or None


def _unsupported(entry: Entry, case: Case, judgement: Judgement) -> str | None:
    """Whether the failing backends could not do the run here (``UnsupportedFeature``, e.g. no
    GPU device): then a pass proves nothing. Not for an invalid program whose violation a
    conforming compiler refuses that way (``unsupported_keyword``, ``empty_slice``): there the
    refusal is the answer, judged by the error-path oracle (an entry the compiler now refuses
    was replayed as not run, never as fixed)."""
    if case.invalid is not None and NotImplementedError in case.invalid.errors:
        return None
    failing = Signature.from_dict(entry.signature).backends or case.backends
    hits = [text for text in judgement.unsupported if text.split(":", 1)[0] in failing]
    return "; ".join(hits) or None


_MATTR = re.compile(r"-mattr=(\S+)")
_PROBED = re.compile(r"this CPU's features \(([^)]*)\)")


def missing_features(entry: Entry, host: list[str] | None = None) -> list[str]:
    """The CPU features the entry's failure may need that this CPU (``host``: its features,
    ``llvm_crash.host_features``) lacks: those its reproduction command asks LLVM for
    (``-mattr=+avx512bf16``), and, for a failure attributed to LLVM, every vector feature of the
    CPU it was found on (``versions["cpu"]``). A bf16 codegen abort found on an AVX512-BF16
    machine passes on one without it, where replay used to call it fixed."""
    from .triage.llvm_crash import host_features

    attribution = entry.evidence.get("attribution") if isinstance(entry.evidence, dict) else None
    attribution = attribution if isinstance(attribution, dict) else {}
    mlir = attribution.get("mlir") if isinstance(attribution.get("mlir"), dict) else {}
    needed: set[str] = set()
    for flags in _MATTR.findall(str(mlir.get("command", ""))):
        needed.update(f[1:] for f in flags.split(",") if f.startswith("+"))
    if str(attribution.get("layer", "")).startswith("llvm"):
        versions = entry.versions if isinstance(entry.versions, dict) else {}
        needed.update(str(versions.get("cpu", "")).split())
        # Entries from before ``versions["cpu"]``: the generic-CPU probe's verdict names them.
        for listed in _PROBED.findall(str(attribution.get("detail", ""))):
            needed.update(f.strip() for f in listed.split(",") if f.strip())
    have = set(host_features() if host is None else host)
    return sorted(needed - have)


def classify(entry: Entry, runner: Runner) -> Replayed:
    """Replay one loaded entry (its path is ``entry.path``) and give it its state."""
    path = entry.path or Path("<entry>")
    start = time.perf_counter()

    def done(outcome: str, detail: str = "", finding: Finding | None = None) -> Replayed:
        return Replayed(path, outcome, entry, detail, finding, time.perf_counter() - start)

    reason = blocked(entry)
    if reason is not None:
        return done("not-run", reason)
    try:
        case = entry_case(entry)
    except NotImplementedError as error:
        # The compiler's rules now declare the program a limitation (np.maximum of booleans,
        # x[True]): refused by name, no wrong answer left (it was found where they took it).
        detail = f"the compiler now refuses the program as unsupported: {error}"
        return done("still-fixed" if entry.status == "fixed" else "fixed-now", detail)
    except Exception as error:  # noqa: BLE001 - e.g. a primitive this compiler no longer has
        return done("not-run", f"the case cannot be rebuilt: {type(error).__name__}: {error}")
    try:
        finding, judgement = judge(entry, runner, case)
    except Exception as error:  # noqa: BLE001 - one bad entry must not stop the others
        return done("not-run", f"harness error: {type(error).__name__}: {error}")
    known_fixed = entry.status in ("fixed", "regressed")
    if finding is not None:
        return done("regressed" if known_fixed else "still-open", finding.detail, finding)
    reason = _unsupported(entry, case, judgement)
    if reason is not None:
        return done("not-run", f"not runnable here: {reason}")
    minimization = entry.minimization if isinstance(entry.minimization, dict) else {}
    if entry.status == "open" and minimization.get("reproduced") is False:
        # Its case passed alone when it was found: passing now fixes nothing.
        return done("not-run", "not reproduced alone when found (see its detail)")
    missing = missing_features(entry) if entry.status == "open" else []
    if missing:
        return done(
            "not-run",
            f"passes here, on a CPU without {', '.join(missing)}, which its failure may need: "
            "replay it on a CPU with them before calling it fixed",
        )
    return done("still-fixed" if entry.status == "fixed" else "fixed-now")


def _files(paths: Iterable[Path]) -> list[tuple[Path, Path | None]]:
    files: list[tuple[Path, Path | None]] = []
    for path in paths:
        if Path(path).is_dir():
            files.extend((file, Path(path)) for file in Corpus(path).files())
        else:
            files.append((Path(path), None))
    return files


def _update(result: Replayed, reopen: bool) -> None:
    """``fixed-now`` -> status fixed; ``regressed`` -> open only when ``reopen``; nothing else."""
    entry = result.entry
    status = {"fixed-now": "fixed", "regressed": "open" if reopen else None}.get(result.outcome)
    if entry is None or status is None or entry.status == status:
        return
    previous, entry.status = entry.status, status
    try:
        Corpus(result.path.parent).update(entry)
    except OSError as error:
        entry.status = previous
        result.updated = f"status not updated to {status} ({error})"
    else:
        result.updated = f"marked {status}"


def replay_iter(
    paths: Iterable[Path], runner: Runner, update: bool = False, reopen: bool = False
) -> Iterator[Replayed]:
    """Replay corpus files (directories expand to their entries), one result each, as they
    finish. ``update`` marks ``fixed-now`` entries fixed; ``reopen`` marks ``regressed`` ones
    open again. Raises ``Stopped`` when a signal asked this process to stop."""
    for path, root in _files(paths):
        if stop_requested():
            raise Stopped()
        try:
            entry = load(path, root)
        except CorpusError as error:
            yield Replayed(path, "unreadable", detail=error.problem)
            continue
        result = classify(entry, runner)
        if update:
            _update(result, reopen)
        yield result


def replay(
    paths: list[Path], runner: Runner, update_status: bool = False, reopen: bool = False
) -> list[Replayed]:
    """Every result of ``replay_iter``."""
    return list(replay_iter(paths, runner, update_status, reopen))


def counts(results: list[Replayed]) -> dict[str, int]:
    """How many results are in each state (every state, in ``STATES`` order)."""
    return {state: sum(1 for r in results if r.outcome == state) for state in STATES}


def summary(results: list[Replayed]) -> str:
    """``N entries: 1 regressed, 2 still-open`` (the states that occur)."""
    parts = [f"{n} {state}" for state, n in counts(results).items() if n]
    return f"{len(results)} entries" + (": " + ", ".join(parts) if parts else "")


def exit_status(results: list[Replayed], strict: bool = False) -> int:
    """1 if anything regressed or is unreadable (or, when ``strict``, is still open), else 0."""
    failing = FAILING + (("still-open",) if strict else ())
    return int(any(r.outcome in failing for r in results))


#: What XML 1.0 cannot hold: control characters, lone surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: object) -> str:
    """``text`` that XML 1.0 can hold (a crash's stderr, a hostile file name): what it cannot
    hold written as Python escapes."""
    return _NOT_XML.sub(lambda m: ascii(m.group())[1:-1], str(text))


def junit_xml(results: list[Replayed], name: str = "corpus replay") -> str:
    """JUnit XML, one testcase per entry (classname ``kind/backend``, name the file): a failure
    for a regression, an error for an unreadable file, skipped for still-open and not-run."""
    tally = counts(results)
    suite = ET.Element(
        "testsuite",
        name=name,
        tests=str(len(results)),
        failures=str(tally["regressed"]),
        errors=str(tally["unreadable"]),
        skipped=str(tally["still-open"] + tally["not-run"]),
        time=f"{sum(r.seconds for r in results):.3f}",
        timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
        hostname=_xml_text(platform.node()),
    )
    for r in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=_xml_text(r.group),
            name=_xml_text(printable(r.path.name)),
            file=_xml_text(printable(r.path)),
            time=f"{r.seconds:.3f}",
        )
        message = _xml_text(f"{r.outcome}: {r.reason}" if r.reason else r.outcome)
        if r.outcome == "regressed":
            failure = ET.SubElement(case, "failure", message=message, type="regressed")
            failure.text = _xml_text(r.detail)
        elif r.outcome == "unreadable":
            error = ET.SubElement(case, "error", message=message, type="unreadable")
            error.text = _xml_text(r.detail)
        elif r.outcome in ("still-open", "not-run"):
            ET.SubElement(case, "skipped", message=message)
        if r.outcome == "fixed-now" or r.updated:
            out = ET.SubElement(case, "system-out")
            out.text = _xml_text(r.updated or "passes now: `replay --update` marks it fixed")
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(results: list[Replayed], path: Path) -> Path:
    """Write ``junit_xml(results)`` to ``path`` atomically (CI never reads half a file)."""
    atomic_write(Path(path), junit_xml(results))
    return Path(path)


__all__ = [
    "FAILING",
    "STATES",
    "STEP_ORACLES",
    "Replayed",
    "blocked",
    "classify",
    "counts",
    "crashed_at",
    "entry_case",
    "exit_status",
    "judge",
    "junit_xml",
    "oracles_of",
    "replay",
    "replay_iter",
    "reproduce",
    "summary",
    "through_the_cache",
    "write_junit",
]
