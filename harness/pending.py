"""Write-ahead records of cases in flight, each owned by the process that writes it.

Before a case runs, its record is written to ``corpus/.pending/<owner>--<name>.json``, where the
owner is the writing process's id *and start time* (a reused pid is another owner). After a kill,
a crash or a dead node, the record stays; the next session re-runs it, so nothing in flight is
lost. Recovery takes only records whose owner is dead, and takes each atomically: it renames the
record into its own namespace (``claimed--<owner>--...``) before reading it, so two sessions on
one corpus never run, steal or delete each other's records, and a record that vanishes meanwhile
is simply skipped.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PENDING = ".pending"
SUFFIX = ".json"
_CLAIMED = "claimed--"


def _start_time(pid: int) -> str | None:
    """The process's start time (Linux: clock ticks since boot, from /proc); None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields follow the last ")".
    fields = stat[stat.rfind(")") + 2 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return None  # killed, not yet reaped (kill -9 of a session's process group): dead
    return fields[19] if len(fields) > 19 else None


def identity(pid: int | None = None) -> str:
    """``host.pid.starttime`` of a process (this one by default)."""
    pid = os.getpid() if pid is None else pid
    host = socket.gethostname().replace("--", "-").replace(".", "_") or "host"
    return f"{host}.{pid}.{_start_time(pid) or 'x'}"


def alive(owner: str) -> bool:
    """Is the process named by ``identity`` still running? (Another host's: assumed alive.)"""
    try:
        host, pid, start = owner.rsplit(".", 2)
    except ValueError:
        return False
    if host != identity().rsplit(".", 2)[0]:
        return True  # a process of another machine: never steal its records
    if not pid.isdigit():
        return False
    now = _start_time(int(pid))
    return now is not None and (start == "x" or now == start)


class WriteAhead:
    """The write-ahead record of one runner (one case at a time)."""

    def __init__(self, corpus_dir: Path | str, name: str) -> None:
        self.directory = Path(corpus_dir) / PENDING
        self.owner = identity()
        self.path = self.directory / f"{self.owner}--{name}{SUFFIX}"

    def write(self, record: dict[str, Any]) -> Path:
        from strategies.model import canonical

        from .corpus import atomic_write

        atomic_write(self.path, canonical(record))
        return self.path

    def clear(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def _owner_of(path: Path) -> str:
    name = path.name
    if name.startswith(_CLAIMED):
        name = name[len(_CLAIMED) :]
    return name.split("--", 1)[0]


def orphans(corpus_dir: Path | str) -> list[Path]:
    """Records (claimed or not) whose owner is dead."""
    directory = Path(corpus_dir) / PENDING
    if not directory.is_dir():
        return []
    return sorted(
        p
        for p in directory.glob(f"*{SUFFIX}")
        if not p.name.startswith(".") and not alive(_owner_of(p))
    )


def claim(corpus_dir: Path | str) -> Iterator[tuple[Path, dict[str, Any] | None]]:
    """Take each orphaned record (atomically, by renaming it into this process's namespace) and
    yield (claimed path, record or None if unreadable). The caller deletes the claimed path once
    the case has been re-run (``release``); if this process dies first, the claim is itself an
    orphan for the next session. Dead writers' temporary files (a ``kill -9`` inside
    ``corpus.atomic_write``) in the corpus and its records' directory are removed first."""
    from .corpus import CorpusError, parse_json, read_limited, sweep_temporaries

    for directory in (Path(corpus_dir), Path(corpus_dir) / PENDING):
        sweep_temporaries(directory)
    me = identity()
    for path in orphans(corpus_dir):
        base = path.name
        while base.startswith(_CLAIMED):
            base = base.split("--", 2)[2]
        target = path.with_name(f"{_CLAIMED}{me}--{base}")
        try:
            os.rename(path, target)
        except FileNotFoundError:
            continue  # another session took it first
        try:
            record = parse_json(target, read_limited(target, target.parent))
        except CorpusError:
            record = None
        yield target, record if isinstance(record, dict) else None


def release(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


__all__ = ["PENDING", "WriteAhead", "alive", "claim", "identity", "orphans", "release"]
