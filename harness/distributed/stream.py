"""The client's side of the shards' stream (``relay`` is the drivers' side): each batch of
messages recorded, entries offered to the corpus writer, in-flight records mirrored, and a new
attempt's handover answered. Apart from ``client`` (scheduling, recovery, reporting), whose
``Campaign`` holds the state these methods update.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..corpus import CorpusError, Entry, parse_json, read_limited
from ..report.data import Throughput
from ..run.runner import Stats
from ..session.fuzz import FuzzOptions
from .merge import CorpusWriter, Offered
from .shard import Shard, reply_queue


@dataclass
class ShardState:
    """What the client knows of one shard across its attempts."""

    shard: Shard
    submitted: float
    mirror: Path  # the client's copy of the shard's in-flight record
    attempts: list[dict[str, Any]] = field(default_factory=list)
    current: str | None = None
    in_flight: str | None = None  # the record last written ahead and not cleared
    handed: str | None = None  # the in-flight record handed to the current attempt
    inherited: list[str] = field(default_factory=list)  # earlier sessions' records (shard 0)
    raw: set[str] = field(default_factory=set)  # its unminimized entries, by file name
    cases: int = 0
    findings: int = 0
    entries: int = 0
    duplicates: int = 0
    state: str = "queued"  # queued, running, done, failed, abandoned
    result: dict[str, Any] | None = None
    dirty: bool = False


class CampaignStream:
    """The message handling of a campaign (a base of ``client.Campaign``, which sets these)."""

    options: FuzzOptions
    client: Any
    name: str
    shards: list[ShardState]
    writer: CorpusWriter
    start: float
    deadline: float
    stopping: bool
    attempt_worker: dict[str, str]
    resolved: dict[str, Offered]
    stats: Stats
    workers: dict[str, dict[str, Any]]
    findings: list[dict[str, Any]]
    regressions: list[dict[str, Any]]
    errors: list[str]
    ambiguities: list[str]
    timeline: list[dict[str, Any]]
    first: float | None
    rerun: int
    messages: int
    busy: float
    throughput: Throughput

    def stop(self) -> None:  # ``Campaign.stop``: ask every shard to stop
        raise NotImplementedError

    def handle(self, message: str) -> list[str]:
        """One batch from a shard; returns the kinds it held (for the progress line)."""
        began = time.perf_counter()
        batch = json.loads(message)
        index = int(batch["shard"])
        if not 0 <= index < len(self.shards):
            raise ValueError(f"no shard {index}")
        state = self.shards[index]
        attempt = str(batch["attempt"])
        kinds = []
        for index, kind, payload in batch["messages"]:
            self.messages += 1
            kinds.append(kind)
            try:
                self._one(state, attempt, index, kind, payload)
            except (CorpusError, OSError, KeyError, TypeError, ValueError) as error:
                self.errors.append(f"shard {state.shard.index}: {kind} not recorded: {error!r}")
        self.busy += time.perf_counter() - began
        return kinds

    def _one(self, state: ShardState, attempt: str, index: int, kind: str, payload: Any) -> None:
        now = time.perf_counter() - self.start
        current = attempt == state.current
        if kind == "start":
            self._started(state, attempt, payload)
        elif kind == "ahead":
            if current:
                state.in_flight, state.dirty = payload, True
                if state.handed is not None and payload == state.handed:
                    self.rerun += 1  # the case a dead worker had in flight ran again
                    state.handed = None
        elif kind == "clear":
            if current:
                state.in_flight, state.dirty = None, True
        elif kind == "entry":
            self._entry(state, payload)
        elif kind == "stats":
            self.stats.merge(payload)
            cases = int(payload.get("cases", 0))
            state.cases += cases
            worker = self.workers.get(self.attempt_worker.get(attempt, ""))
            if worker is not None:
                worker["cases"] += cases
            self.throughput.add(now, payload, (state.shard.index, attempt, index))
        elif kind == "found":
            self.first = now if self.first is None else min(self.first, now)
            item = {"seconds": round(now, 3), **payload, "shard": state.shard.index}
            item["path"] = self._real_path(payload.get("path"))
            self.timeline.append(item)
            print(
                f"shard {state.shard.index} found {payload.get('kind')} "
                f"({payload.get('oracle')}) on {','.join(payload.get('backends', ()))}: "
                f"{item['path']}",
                file=sys.stderr,
                flush=True,
            )
        elif kind == "first-finding":
            self.first = now if self.first is None else min(self.first, now)
        elif kind == "finding":
            self._finding(state, payload)
        elif kind == "regression":
            self.regressions.append({**payload, "path": self._real_path(payload.get("path"))})
        elif kind == "harness-error":
            self.errors.append(f"shard {state.shard.index}: {payload}")
        elif kind == "ambiguities":
            self.ambiguities.extend(payload[: max(0, 50 - len(self.ambiguities))])

    def _started(self, state: ShardState, attempt: str, payload: dict[str, Any]) -> None:
        """A shard attempt asks for its handover: the corpus now, the records to re-run (what
        a dead predecessor had in flight), the time left."""
        now = time.perf_counter()
        worker = str(payload.get("worker", "?"))
        self.workers.setdefault(
            worker,
            {"pid": payload.get("pid"), "host": payload.get("host"), "cases": 0, "since": now},
        )
        self.workers[worker]["pid"] = payload.get("pid")
        state.attempts.append(
            {
                "attempt": attempt,
                "worker": worker,
                "pid": payload.get("pid"),
                "dispatch_seconds": round(now - state.submitted, 3),
            }
        )
        self.attempt_worker[attempt] = worker
        state.current = attempt
        state.state = "running"
        records = list(state.inherited)
        state.handed = state.in_flight
        if state.in_flight is not None:
            records.append(state.in_flight)
        seconds = min(state.shard.options.seconds, self.deadline - now)
        if self.stopping:
            seconds = 0.0
        handover = {"seconds": seconds, "records": records, "entries": self._entries_for(state)}
        from distributed import Queue

        replies = Queue(reply_queue(self.name, attempt), client=self.client)
        replies.put(json.dumps(handover))
        replies.close()  # the shard holds the queue until it has read the handover
        again = f" (attempt {len(state.attempts)}, {len(records)} case(s) to re-run)"
        print(
            f"shard {state.shard.index} started on {worker} (pid {payload.get('pid')})"
            + (again if len(state.attempts) > 1 else ""),
            file=sys.stderr,
            flush=True,
        )

    def _entries_for(self, state: ShardState) -> dict[str, str]:
        """The corpus a shard starts from. Every shard knows the open entries (it does not
        report them again); the first also gets the fixed ones, which it replays, and the
        earlier sessions' unminimized ones, which it finishes; a shard's own unminimized
        entries go back to its next attempt."""
        others = set().union(*(s.raw for s in self.shards if s is not state))
        first = state.shard.index == 0
        chosen = {}
        for entry in self.writer.entries():
            if entry.path is None or entry.path.name in others:
                continue
            if entry.status == "fixed" and not first:
                continue
            if entry.unminimized and not (first or entry.path.name in state.raw):
                continue
            try:
                chosen[entry.path.name] = read_limited(entry.path).decode("utf-8")
            except (CorpusError, UnicodeDecodeError):
                continue
        return chosen

    def _entry(self, state: ShardState, payload: dict[str, Any]) -> None:
        """A corpus write of a shard, parsed as strictly as a file on disk, then offered."""
        name = str(payload["name"])
        entry = Entry.from_json(parse_json(f"<entry {name[:80]!r}>", payload["text"].encode()))
        if payload.get("op") == "update":
            self.resolved[name] = self.writer.update(entry)
            return
        supersedes = [str(n) for n in payload.get("supersedes", ())]
        offered = self.writer.offer(entry, supersedes)
        self.resolved[name] = offered
        for raw in supersedes:
            state.raw.discard(raw)
            if raw in self.resolved and offered.path is not None:
                self.resolved[raw] = offered
        if offered.stored:
            state.entries += 1
            if offered.path is not None and entry.unminimized:
                state.raw.add(offered.path.name)
        elif offered.outcome == "duplicate":
            state.duplicates += 1

    def _real_path(self, path: Any) -> str:
        if not path:
            return str(path)
        name = Path(str(path)).name
        offered = self.resolved.get(name)
        if offered is not None and offered.path is not None:
            return str(offered.path)
        return str(self.writer.directory / name)

    def _finding(self, state: ShardState, payload: dict[str, Any]) -> None:
        name = Path(str(payload.get("path", ""))).name
        offered = self.resolved.get(name)
        item = dict(payload)
        item["path"] = self._real_path(payload.get("path"))
        item["raw"] = [self._real_path(p) for p in payload.get("raw", ())]
        item["new"] = bool(payload.get("new")) and offered is not None and offered.stored
        item["shard"] = state.shard.index
        state.findings += 1
        self.findings.append(item)
        if self.options.stop_on_first:
            self.stop()

    def _write_mirrors(self) -> None:
        """The client's copy of each shard's in-flight record (rename, no fsync: it must
        survive this process, which the page cache does; the entries themselves are fsynced)."""
        began = time.perf_counter()
        try:
            self._mirror()
        finally:
            self.busy += time.perf_counter() - began

    def _mirror(self) -> None:
        for state in self.shards:
            if not state.dirty:
                continue
            state.dirty = False
            if state.in_flight is None:
                try:
                    state.mirror.unlink()
                except FileNotFoundError:
                    pass
                continue
            state.mirror.parent.mkdir(parents=True, exist_ok=True)
            tmp = state.mirror.with_name(f".tmp-{state.mirror.name}")
            tmp.write_text(state.in_flight, encoding="utf-8")
            os.replace(tmp, state.mirror)
