"""One writer for a corpus that findings from elsewhere enter: a campaign's shards, or corpora
made on other machines (``python -m harness corpus merge``).

Entries are content-addressed, so merging is a set union plus the deduplication a session does:
an entry is a duplicate when a known entry's signature covers it (``Signature.covers``), and of
two instances of one signature the smaller is kept (``Corpus.save``). A shard's minimized entry
names the unminimized file it replaces (``supersedes``), which it replaces whatever the rest of
the corpus holds, exactly as ``Driver.finish`` does on one machine.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..corpus import SUFFIX, Corpus, CorpusError, Entry, parse_json
from ..triage.signature import Signature


def _minimizes(entry: Entry, known: Entry) -> bool:
    """Is ``entry`` a minimized finding that ``known``, an unminimized record, covers?"""
    raw = known.unminimized and known.path is not None
    return raw and entry.minimization.get("state") == "minimized"


@dataclass
class Offered:
    """What the writer did with one entry: ``stored`` (new, or a smaller instance),
    ``duplicate`` (a known entry covers it), ``regression`` (it fails a fixed entry, now marked
    ``regressed``), ``updated`` (a known entry's status rewritten); ``path`` is the file that now
    represents the failure."""

    outcome: str
    path: Path | None
    stored: bool = False


def plain_name(name: str) -> bool:
    """A corpus file name from elsewhere that cannot point outside the corpus directory."""
    return (
        bool(name)
        and Path(name).name == name
        and name.endswith(SUFFIX)
        and not name.startswith(".")
        and "\x00" not in name
    )


class CorpusWriter:
    """The only process that writes ``directory``: it keeps the known signatures in memory and
    decides, for each entry offered, whether it is new, smaller, a duplicate or a regression."""

    def __init__(self, directory: Path | str, regressions: bool = True) -> None:
        self.corpus = Corpus(directory)
        self.corpus.directory.mkdir(parents=True, exist_ok=True)
        self.regressions = regressions  # a campaign marks fixed entries that fail again
        self.known: list[tuple[Signature, Entry]] = []
        self.unreadable: list[str] = []
        for item in self.corpus.entries():
            if isinstance(item, Entry):
                self.known.append((Signature.from_dict(item.signature), item))
            else:
                self.unreadable.append(str(item))

    @property
    def directory(self) -> Path:
        return self.corpus.directory

    def entries(self) -> list[Entry]:
        return [entry for _, entry in self.known]

    def known_as(self, signature: Signature) -> Entry | None:
        for known, entry in self.known:
            if known.covers(signature):
                return entry
        return None

    def offer(self, entry: Entry, supersedes: Iterable[str] = ()) -> Offered:
        """Write ``entry`` unless the corpus already has its failure; ``supersedes`` names (plain
        file names) the unminimized entry it is the minimized form of."""
        replaced = tuple(
            self.directory / name
            for name in supersedes
            if plain_name(name) and (self.directory / name).exists()
        )
        signature = Signature.from_dict(entry.signature)
        if not replaced:
            known = self.known_as(signature)
            if known is not None:
                if known.status == "fixed" and entry.status != "fixed" and self.regressions:
                    known.status = "regressed"
                    known.detail = f"regressed: {entry.detail}\n(was fixed) {known.detail}"
                    self.corpus.update(known)
                    return Offered("regression", known.path)
                if _minimizes(entry, known):
                    # Another shard's record of this failure, left unminimized (that shard was
                    # stopped, or is still at it): this minimized entry replaces it. Dropped as
                    # a duplicate, the finding stayed unminimized (a two-shard --stop-on-first
                    # campaign whose shards met one bug).
                    replaced = (known.path,)
                elif known.signature_id != entry.signature_id or known.status != entry.status:
                    return Offered("duplicate", known.path)
        stored, path = self.corpus.save(entry, supersedes=replaced)
        for raw in replaced:  # the unminimized form goes, as in ``Driver.finish``
            if raw != path and raw.exists():
                raw.unlink()
        gone = {raw for raw in replaced if raw != path}
        if stored:
            gone |= {e.path for _, e in self.known if e.signature_id == entry.signature_id}
            gone.discard(path)
        self.known = [(s, e) for s, e in self.known if e.path not in gone]
        if not stored:
            return Offered("duplicate", path)
        self.known.append((signature, entry))
        return Offered("stored", path, True)

    def update(self, entry: Entry) -> Offered:
        """A shard rewrote an entry it was given (a fixed entry that fails again): rewrite ours,
        or store it if ours is gone."""
        for _, known in self.known:
            if known.content_id == entry.content_id and known.path is not None:
                if (known.status, known.detail) != (entry.status, entry.detail):
                    known.status, known.detail = entry.status, entry.detail
                    self.corpus.update(known)
                return Offered("updated", known.path)
        return self.offer(entry)

    def offer_text(self, name: str, text: str, supersedes: Iterable[str] = ()) -> Offered:
        """An entry received as its file's text (parsed as strictly as a file on disk)."""
        where = name if plain_name(name) else "<received entry>"
        return self.offer(Entry.from_json(parse_json(where, text.encode("utf-8"))), supersedes)


@dataclass
class Merged:
    """What ``merge`` did: counts, and the files it could not read (named, left out)."""

    added: list[str] = field(default_factory=list)
    duplicates: int = 0
    regressions: int = 0
    unreadable: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "added": self.added,
            "duplicates": self.duplicates,
            "regressions": self.regressions,
            "unreadable": self.unreadable,
        }


def merge(target: Path | str, sources: Iterable[Path | str]) -> Merged:
    """Merge corpus directories ``sources`` into ``target``. Smaller entries go first, so the
    result does not depend on the order the sources are named in."""
    writer = CorpusWriter(target, regressions=False)
    result = Merged(unreadable=list(writer.unreadable))
    incoming: list[Entry] = []
    for source in sources:
        source = Path(source)
        if not source.is_dir():
            result.unreadable.append(f"{source}: not a corpus directory")
            continue
        for item in Corpus(source).entries():
            if isinstance(item, CorpusError):
                result.unreadable.append(str(item))
            else:
                incoming.append(item)
    incoming.sort(key=lambda e: (e.size, e.content_id))
    for entry in incoming:
        offered = writer.offer(entry)
        if offered.stored and offered.path is not None:
            result.added.append(offered.path.name)
        elif offered.outcome == "regression":
            result.regressions += 1
        else:
            result.duplicates += 1
    return result


__all__ = ["CorpusWriter", "Merged", "Offered", "merge", "plain_name"]
