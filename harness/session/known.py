"""What a fuzz driver knows of its corpus: is a finding already an entry (open or fixed)?

A finding is known when an entry's signature covers it (or the signature its record was found
as, when minimizing changed it: a float64 record that ends at a float32 output), or when the
known upstream bug its failure is (``triage.known_issues.known_issue``: IREE's, by message or by
a check of the case) is the bug an entry of the same kind and backend family is attributed to:
one entry per known bug, not one per op it hits. Before a finding is called new, the files that
sibling drivers (or other sessions) saved since are read, each once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from ..corpus import Corpus, CorpusError, Entry, load
from ..oracles.base import Finding
from ..triage import known_issues
from ..triage.signature import Signature, backend_family


def known_issue_name(entry: Entry) -> str:
    """The known upstream bug an entry's attribution names, or (an unminimized record, not yet
    attributed) the one its failure was recognised as when recorded; '' if none."""
    evidence = entry.evidence if isinstance(entry.evidence, dict) else {}
    found = evidence.get("attribution")
    mlir = found.get("mlir") if isinstance(found, dict) else None
    issue = mlir.get("known_issue") if isinstance(mlir, dict) else None
    name = issue.get("name") if isinstance(issue, dict) else evidence.get("known_issue")
    return name if isinstance(name, str) else ""


class Known:
    """The entries a driver knows, as (signature, entry) pairs, and the files it cannot read."""

    def __init__(self, corpus: Corpus, announce: bool = False) -> None:
        self.corpus = corpus
        self.pairs: list[tuple[Signature, Entry]] = []
        self.found_as: list[tuple[Signature, Entry]] = []  # what minimized entries were found as
        self.unreadable: set[Path] = set()
        self._issues: dict[tuple[str, str, str], str] = {}  # (case, backend, message) -> name
        for item in corpus.entries():  # an unreadable file is named once, then left out
            if isinstance(item, Entry):
                self.add(Signature.from_dict(item.signature), item)
                continue
            self.unreadable.add(item.path)
            if announce:
                print(f"skipping unreadable corpus file: {str(item)!r}", file=sys.stderr)

    def __iter__(self) -> Iterator[tuple[Signature, Entry]]:
        return iter(list(self.pairs))

    def __len__(self) -> int:
        return len(self.pairs)

    def add(self, signature: Signature, entry: Entry) -> None:
        self.pairs.append((signature, entry))
        found_as = (
            entry.minimization.get("found_as") if isinstance(entry.minimization, dict) else None
        )
        if isinstance(found_as, dict):  # a record of this signature minimizes into the entry
            self.found_as.append((Signature.from_dict(found_as), entry))

    def forget(self, entry: Entry) -> None:
        self.pairs = [(s, e) for s, e in self.pairs if e is not entry]
        self.found_as = [(s, e) for s, e in self.found_as if e is not entry]

    def entry_of(self, finding: Finding) -> Entry | None:
        """The entry this finding is already known as, if any: among the known entries, then
        among those saved since (``refresh``)."""
        found = self._among(finding)
        if found is None and self.refresh():
            found = self._among(finding)
        return found

    def _among(self, finding: Finding) -> Entry | None:
        signature = finding.signature
        for known, entry in [*self.pairs, *self.found_as]:
            if known.covers(signature):
                return entry
        return self._by_known_issue(finding)

    def saved_before(self, finding: Finding, path: Path) -> Entry | None:
        """Another record covering ``finding`` saved before ours at ``path``, if any. Two drivers
        that meet one bug at the same moment each save it (both first cases of a 30 s session
        met a planted jit key: two entries); each asks after its own save, and the order by
        (modified time, name) is the same for both, so exactly one keeps its record."""
        mine = _saved_at(path)
        if mine is None:
            return None
        self.refresh()
        signature = finding.signature
        for known, entry in self.pairs:
            if entry.path is None or entry.path == path or not known.covers(signature):
                continue
            theirs = _saved_at(entry.path)
            if theirs is not None and theirs < mine:
                return entry
        return None

    def refresh(self) -> bool:
        """Add the entries saved since this driver read the corpus; whether any were. Each
        driver used to know only its own and those present at its start: in a 90 s two-driver
        IREE session, one stored the known f64 libm link failure on ``gelu`` and the other
        stored it again on ``sin``."""
        seen = {entry.path for _, entry in self.pairs if entry.path is not None}
        added = False
        for path in self.corpus.files():
            if path in seen or path in self.unreadable:
                continue  # only new files are read: this runs for every finding not yet known
            try:
                entry = load(path, self.corpus.directory)
            except CorpusError:
                self.unreadable.add(path)  # named by the session's reader; covers nothing
                continue
            self.add(Signature.from_dict(entry.signature), entry)
            added = True
        return added

    def _by_known_issue(self, finding: Finding) -> Entry | None:
        """The entry attributed to the known upstream bug this failure is, for the same kind
        and backend family (a 30-minute IREE campaign stored five entries of one such bug).
        Looked up only when such an entry exists."""
        if finding.case.invalid is not None:
            return None
        named = [
            (known, entry, issue)
            for known, entry in self.pairs
            if known.matches(finding.signature) and (issue := known_issue_name(entry))
        ]
        if not named:
            return None
        for backend, name in self.issue_names(finding):
            for known, entry, issue in named:
                families = {backend_family(b) for b in known.backends}
                if name == issue and backend_family(backend) in families:
                    return entry
        return None

    def issue_names(self, finding: Finding) -> Iterator[tuple[str, str]]:
        """(backend, the known bug its failure is, or ''), for each of the finding's backends,
        once per case, backend and message: an error is judged by its message, a wrong answer
        may cost a compile to dispatch IR (IREE's vectorizer check)."""
        message = finding.result.message if finding.result is not None else ""
        digest = finding.case.digest()
        backends = finding.backends
        if known_issues.failing_outputs(finding, finding.result.backend if finding.result else ""):
            # A wrong answer: judged on the backend whose answer the finding holds (a known
            # issue about values must predict it), not on its siblings without one.
            backends = (finding.result.backend,)
        for backend in backends:
            key = (digest, backend, message)
            if key not in self._issues:
                try:
                    outputs = known_issues.failing_outputs(finding, backend)
                    found = known_issues.known_issue(finding.case, backend, message, outputs)
                except Exception:  # noqa: BLE001 - no diagnosis: judged by its signature alone
                    found = None
                self._issues[key] = found["name"] if found else ""
            yield backend, self._issues[key]

    def issue_name(self, finding: Finding) -> str:
        """The known upstream bug the finding's failure is on any of its backends ('' if
        none)."""
        if finding.case.invalid is not None:
            return ""
        return next((name for _, name in self.issue_names(finding) if name), "")


def _saved_at(path: Path) -> tuple[int, str] | None:
    """A saved file's place in the order of saves (None: it is gone, superseded)."""
    try:
        return path.stat().st_mtime_ns, path.name
    except OSError:
        return None


__all__ = ["Known", "known_issue_name"]
