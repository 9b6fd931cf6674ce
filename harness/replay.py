"""Replaying corpus entries: does each failure still happen, or has it been fixed?"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .case import Case
from .corpus import Corpus, CorpusError, Entry, load
from .oracles import Finding
from .runner import Runner


@dataclass
class Replayed:
    entry: Entry | None
    path: Path
    outcome: str  # "still fails" | "fixed" | "error"
    detail: str = ""
    finding: Finding | None = None


def entry_case(entry: Entry) -> Case:
    return Case.from_dict(entry.case["case"])


def reproduce(entry: Entry, runner: Runner) -> Finding | None:
    """Run the entry's case with its oracle; the finding of the same kind, if it recurs."""
    case = entry_case(entry)
    oracle = entry.signature.get("oracle", "")
    kind = entry.signature.get("kind", "")
    names: tuple[str, ...] = ()
    if oracle.startswith("metamorphic:"):
        names = (oracle.split(":", 1)[1].split("[")[0],)
    runner.repeat_checks = kind in ("nondeterministic", "retrace")
    judgement = runner.evaluate(case, names)
    for finding in judgement.findings:
        if finding.kind == kind and finding.oracle == oracle:
            return finding
    return None


def replay(paths: list[Path], runner: Runner, update_status: bool = False) -> list[Replayed]:
    """Replay corpus files (directories expand to their entries)."""
    files: list[Path] = []
    for path in paths:
        files.extend(Corpus(path).files() if path.is_dir() else [path])
    results = []
    for path in files:
        try:
            entry = load(path)
        except CorpusError as error:
            results.append(Replayed(None, path, "error", str(error)))
            continue
        try:
            finding = reproduce(entry, runner)
        except Exception as error:  # noqa: BLE001 - one bad entry must not stop the others
            results.append(Replayed(entry, path, "error", f"{type(error).__name__}: {error}"))
            continue
        outcome = "still fails" if finding is not None else "fixed"
        results.append(Replayed(entry, path, outcome, finding.detail if finding else "", finding))
        if update_status:
            status = "open" if finding is not None else "fixed"
            if entry.status != status:
                entry.status = status
                Corpus(path.parent).update(entry)
    return results
