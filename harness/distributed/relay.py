"""The driver's side of a shard: every write-ahead record and every corpus write, told to the
session as it happens, so that the campaign's client (the corpus's one writer) has them even if
this machine dies the next instant.

A write-ahead record is published and the driver waits for the session's acknowledgement, sent
once the record has left the machine (``session(relay=...)``), before its case runs: a
``kill -9`` of the worker, or the loss of its node, mid-case leaves the record with the client.
The local files are written as well, so the session on its scratch corpus behaves as any other.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..corpus import Corpus, Entry
from ..pending import WriteAhead
from ..run.isolation import stop_requested
from ..run.runner import Stopped

#: How long a driver waits for its record to be acknowledged before it runs the case anyway
#: (the local record still stands; a session that never answers is not worth stopping for).
ACK_SECONDS = 60.0

Publish = Callable[[str, Any], None]


class RelayedCorpus(Corpus):
    """A corpus whose every write is also published as the file's name and text."""

    def __init__(self, directory: Path | str, publish: Publish) -> None:
        super().__init__(directory)
        self.publish = publish

    def save(self, entry: Entry, supersedes: tuple[Path, ...] = ()) -> tuple[bool, Path]:
        stored, path = super().save(entry, supersedes)
        if stored:
            message = {"op": "save", "name": path.name, "text": path.read_text(encoding="utf-8")}
            self.publish("entry", {**message, "supersedes": [p.name for p in supersedes]})
        return stored, path

    def update(self, entry: Entry) -> None:
        super().update(entry)
        assert entry.path is not None
        text = entry.path.read_text(encoding="utf-8")
        self.publish("entry", {"op": "update", "name": entry.path.name, "text": text})


class RelayedWriteAhead(WriteAhead):
    """A write-ahead record that is published, and acknowledged, before its case runs."""

    def __init__(self, corpus_dir: Path | str, name: str, publish: Publish, events: Any) -> None:
        super().__init__(corpus_dir, name)
        self.publish = publish
        self.events = events
        self.held = False

    def write(self, record: dict[str, Any]) -> Path:
        from strategies.model import canonical

        from ..corpus import atomic_write

        text = canonical(record)
        atomic_write(self.path, text)
        self.held = True
        self.publish("ahead", text)
        self._acknowledged()
        return self.path

    def _acknowledged(self) -> None:
        deadline = time.monotonic() + ACK_SECONDS
        while time.monotonic() < deadline:
            if stop_requested():
                raise Stopped()  # the record stays, locally and with the client
            if self.events.poll(0.2):
                self.events.recv()
                return

    def clear(self) -> None:
        super().clear()
        if self.held:
            self.held = False
            self.publish("clear", None)


def relay(driver: Any) -> None:
    """Make ``driver`` (a ``session.fuzz.Driver`` with ``options.relay``) publish its writes."""
    directory = driver.corpus.directory
    driver.corpus = RelayedCorpus(directory, driver.publish)
    driver.runner.corpus = driver.corpus
    driver.runner.ahead = RelayedWriteAhead(
        directory, driver.runner.name, driver.publish, driver.events
    )


__all__ = ["ACK_SECONDS", "RelayedCorpus", "RelayedWriteAhead", "relay"]
