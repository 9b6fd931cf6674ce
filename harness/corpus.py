"""The corpus: one JSON file per distinct failure, written atomically, replayed forever.

Files are content-addressed: the name carries a hash of the canonical case (program, inputs,
backends, oracle), so two writers of the same content write the same name and two different
findings never share one. Every write goes to a temporary file in the same directory, is
fsynced, then renamed into place, so a crash or ``kill -9`` leaves either the old state or the
new one, never a torn file. Entries are deduplicated by *signature* (kind, backend, op pattern,
dtype, oracle): a new instance replaces an existing one only if it is smaller, and the larger
file is removed only after the smaller one is durable.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strategies.model import canonical, digest

FORMAT = 1
SUFFIX = ".json"
PENDING = ".pending"


class CorpusError(ValueError):
    """A corpus file that cannot be used: corrupt, from a future format, or malformed."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = Path(path)


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers only ever see the old or the whole new file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass
class Entry:
    """One finding as stored. ``case`` is what replays it; the rest documents it."""

    case: dict[str, Any]  # {"program": ..., "inputs": ..., "backends": [...], "oracle": ...}
    signature: dict[str, Any]  # kind, backend, ops, dtype, oracle
    size: int  # smaller is better when deduplicating (program nodes, then elements)
    status: str = "open"
    detail: str = ""
    reproducer: str = ""
    mlir: dict[str, Any] = field(default_factory=dict)  # module text, mlir-opt command
    versions: dict[str, str] = field(default_factory=dict)
    minimization: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)  # stderr, stage of a crash
    path: Path | None = None

    @property
    def content_id(self) -> str:
        return digest(self.case)[:16]

    @property
    def signature_id(self) -> str:
        return digest(self.signature)[:10]

    @property
    def filename(self) -> str:
        return (
            f"{self.signature.get('kind', 'finding')}-{self.signature_id}-{self.content_id}{SUFFIX}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "id": self.content_id,
            "signature_id": self.signature_id,
            "signature": self.signature,
            "status": self.status,
            "size": self.size,
            "case": self.case,
            "detail": self.detail,
            "reproducer": self.reproducer,
            "mlir": self.mlir,
            "versions": self.versions,
            "minimization": self.minimization,
            "evidence": self.evidence,
        }

    @classmethod
    def from_json(cls, data: Any, path: Path | None = None) -> Entry:
        where = path or "<corpus entry>"
        if not isinstance(data, dict):
            raise CorpusError(where, "not a JSON object")
        version = data.get("format")
        if not isinstance(version, int):
            raise CorpusError(where, "missing integer 'format'")
        if version > FORMAT:
            raise CorpusError(
                where, f"format {version} is newer than this harness understands ({FORMAT})"
            )
        try:
            return cls(
                case=data["case"],
                signature=data["signature"],
                size=int(data["size"]),
                status=data.get("status", "open"),
                detail=data.get("detail", ""),
                reproducer=data.get("reproducer", ""),
                mlir=data.get("mlir", {}),
                versions=data.get("versions", {}),
                minimization=data.get("minimization", {}),
                evidence=data.get("evidence", {}),
                path=path,
            )
        except (KeyError, TypeError, ValueError) as error:
            raise CorpusError(where, f"malformed entry ({error!r})") from None


def load(path: Path | str) -> Entry:
    """Read one corpus file; any problem is a CorpusError naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CorpusError(path, f"cannot read ({error})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise CorpusError(path, f"corrupt JSON ({error})") from None
    return Entry.from_json(data, path)


class Corpus:
    """A directory of entries."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def files(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.glob(f"*{SUFFIX}") if not p.name.startswith("."))

    def entries(self) -> Iterator[Entry | CorpusError]:
        """Every entry, or the error for a file that cannot be used (so the rest still load)."""
        for path in self.files():
            try:
                yield load(path)
            except CorpusError as error:
                yield error

    def by_signature(self, signature_id: str) -> list[Entry]:
        found = []
        for item in self.entries():
            if isinstance(item, Entry) and item.signature_id == signature_id:
                found.append(item)
        return found

    def signatures(self) -> set[str]:
        return {e.signature_id for e in self.entries() if isinstance(e, Entry)}

    def save(self, entry: Entry, supersedes: tuple[Path, ...] = ()) -> tuple[bool, Path]:
        """Store ``entry`` unless an entry of the same signature is at least as small.

        ``supersedes`` names files this entry replaces whatever their size (the unminimized
        record of the same finding). Returns (stored, path of the entry that now represents
        this signature).
        """
        rivals = self.by_signature(entry.signature_id)
        key = (entry.size, entry.content_id)
        for rival in rivals:
            if rival.path in supersedes:
                continue
            if rival.path is not None and (rival.size, rival.content_id) <= key:
                return False, rival.path
        path = self.directory / entry.filename
        atomic_write(path, json.dumps(entry.to_json(), indent=1, sort_keys=True) + "\n")
        entry.path = path
        for rival in rivals:
            if rival.path is not None and rival.path != path and rival.path.exists():
                try:
                    rival.path.unlink()
                except FileNotFoundError:
                    pass
        return True, path

    def update(self, entry: Entry) -> None:
        """Rewrite an entry in place (e.g. its status flipped to fixed)."""
        if entry.path is None:
            raise ValueError("entry has no path")
        atomic_write(entry.path, json.dumps(entry.to_json(), indent=1, sort_keys=True) + "\n")

    # Write-ahead log of cases in flight: a crash or kill leaves the case behind to re-run.
    def pending_path(self, worker: str) -> Path:
        return self.directory / PENDING / f"{worker}{SUFFIX}"

    def write_pending(self, worker: str, case: dict[str, Any]) -> Path:
        path = self.pending_path(worker)
        atomic_write(path, canonical(case))
        return path

    def clear_pending(self, worker: str) -> None:
        try:
            self.pending_path(worker).unlink()
        except FileNotFoundError:
            pass

    def leftover_pending(self) -> list[tuple[Path, dict[str, Any]]]:
        """Cases that were in flight when an earlier session died."""
        directory = self.directory / PENDING
        found = []
        if directory.is_dir():
            for path in sorted(directory.glob(f"*{SUFFIX}")):
                try:
                    found.append((path, json.loads(path.read_text(encoding="utf-8"))))
                except (OSError, json.JSONDecodeError):
                    continue
        return found
