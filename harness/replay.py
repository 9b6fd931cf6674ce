"""Replaying corpus entries: does each failure still happen, or has it been fixed?"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .case import Case
from .corpus import Corpus, CorpusError, Entry, load
from .oracles import ORACLES
from .oracles.base import Finding
from .run.runner import Runner
from .triage.signature import Signature


@dataclass
class Replayed:
    entry: Entry | None
    path: Path
    outcome: str  # "still fails" | "fixed" | "error"
    detail: str = ""
    finding: Finding | None = None


def entry_case(entry: Entry) -> Case:
    return Case.from_dict(entry.case["case"])


def oracles_of(signature: Signature) -> tuple[str, ...]:
    """The non-primary oracles to force when replaying a finding of ``signature``."""
    if signature.kind in ("nondeterministic", "retrace", "aliasing"):
        return ("determinism",)
    oracle = signature.oracle.split("[")[0]
    if oracle in ORACLES and not ORACLES[oracle].primary:
        return (oracle,)
    return ()


def reproduce(entry: Entry, runner: Runner) -> Finding | None:
    """Run the entry's case with its oracle; the same failure, if it recurs."""
    case = entry_case(entry)
    signature = Signature.from_dict(entry.signature)
    judgement = runner.evaluate(case, oracles_of(signature))
    for finding in judgement.findings:
        if finding.signature.matches(signature):
            return finding
    return None


def replay(paths: list[Path], runner: Runner, update_status: bool = False) -> list[Replayed]:
    """Replay corpus files (directories expand to their entries). A file that cannot be read or
    run is one "error" result naming it; the others still replay."""
    files: list[tuple[Path, Path | None]] = []
    for path in paths:
        if path.is_dir():
            files.extend((file, path) for file in Corpus(path).files())
        else:
            files.append((path, None))
    results = []
    for path, root in files:
        try:
            entry = load(path, root)
        except CorpusError as error:
            results.append(Replayed(None, path, "error", error.problem))
            continue
        try:
            finding = reproduce(entry, runner)
        except Exception as error:  # noqa: BLE001 - one bad entry must not stop the others
            results.append(Replayed(entry, path, "error", f"{type(error).__name__}: {error}"))
            continue
        outcome = "still fails" if finding is not None else "fixed"
        result = Replayed(entry, path, outcome, finding.detail if finding else "", finding)
        results.append(result)
        if update_status:
            status = "open" if finding is not None else "fixed"
            if entry.status != status:
                entry.status = status
                try:
                    Corpus(path.parent).update(entry)
                except OSError as error:
                    result.outcome = "error"
                    result.detail = f"{path}: status not updated to {status} ({error})"
    return results
