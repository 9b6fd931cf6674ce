"""One shard of a campaign, as a Dask task: an ordinary session (its own driver processes and
isolated compile workers) on a scratch corpus in the worker's local directory, every message of
which travels to the campaign's client through a Dask queue as it happens.

At its start the shard asks the client for its handover: the corpus as the client has it now,
the write-ahead records to re-run (the case a dead predecessor had in flight), and its time. A
shard that Dask reschedules after its worker died therefore re-runs the case that was in flight
and resumes the minimizations its predecessor had begun.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..corpus import atomic_write
from ..pending import PENDING, identity
from ..session.fuzz import FuzzOptions
from ..session.parent import session
from .merge import plain_name

#: How long a starting shard waits for the client's handover.
HANDOVER_SECONDS = 300.0
#: How often buffered messages (stats, clears) are sent; write-aheads and findings go at once.
FLUSH_SECONDS = 0.5
#: How often the shard asks whether the campaign wants it to stop.
STOP_CHECK_SECONDS = 1.0
#: How long a write-ahead is retried when the scheduler does not answer.
AHEAD_RETRY_SECONDS = 10.0
#: How long the scheduler may stay unreachable before the shard gives up (its client is gone).
GIVE_UP_SECONDS = 60.0
URGENT = frozenset(
    {"start", "ahead", "entry", "found", "finding", "regression", "harness-error", "done"}
)

DAEMONIC = (
    "this Dask worker is a daemonic process, which may not start the session's driver and "
    "compile processes: start the workers with distributed.worker.daemon: False (environment "
    "DASK_DISTRIBUTED__WORKER__DAEMON=False)"
)


@dataclass(frozen=True)
class Shard:
    """A slice of a campaign: its own seed, time slice and backends (all in ``options``)."""

    index: int
    options: FuzzOptions
    wave: int = 0


def events_queue(campaign: str) -> str:
    return f"{campaign}-events"


def reply_queue(campaign: str, attempt: str) -> str:
    return f"{campaign}-reply-{attempt}"


def stop_event(campaign: str) -> str:
    return f"{campaign}-stop"


class ShardRelay:
    """The session's messages, batched onto the campaign's queue (``session(relay=...)``)."""

    def __init__(self, events: Any, stop: Any, shard: int, attempt: str) -> None:
        self.events = events
        self.stop = stop
        self.shard = shard
        self.attempt = attempt
        self.buffer: list[list[Any]] = []
        self.last_flush = self.last_check = time.monotonic()
        self.failing_since: float | None = None
        self.stopping = False
        self.put_seconds = 0.0
        self.puts = 0
        self.sent = 0

    def __call__(self, index: int, kind: str, payload: Any) -> bool:
        now = time.monotonic()
        if kind != "tick":
            self.buffer.append([index, kind, payload])
        if kind in URGENT or (self.buffer and now - self.last_flush >= FLUSH_SECONDS):
            self.flush(retry=AHEAD_RETRY_SECONDS if kind == "ahead" else 0.0)
        if now - self.last_check >= STOP_CHECK_SECONDS:
            self.last_check = now
            try:
                self.stopping = self.stopping or bool(self.stop.is_set())
            except Exception:  # noqa: BLE001 - the scheduler is away; flush() keeps count
                pass
        return self.stopping

    def flush(self, retry: float = 0.0) -> bool:
        """Send what is buffered (one queue put); true once it has left this machine."""
        if not self.buffer:
            return True
        message = json.dumps(
            {"shard": self.shard, "attempt": self.attempt, "messages": self.buffer}, default=str
        )
        until = time.monotonic() + retry
        while True:
            begin = time.perf_counter()
            try:
                self.events.put(message, timeout=30)
            except Exception:  # noqa: BLE001 - kept in the buffer, sent with the next flush
                now = time.monotonic()
                self.failing_since = self.failing_since or now
                if now - self.failing_since > GIVE_UP_SECONDS:
                    self.stopping = True  # nobody is listening: stop fuzzing into the void
                if now < until and not self.stopping:
                    time.sleep(0.5)
                    continue
                return False
            self.put_seconds += time.perf_counter() - begin
            self.puts += 1
            self.sent += len(self.buffer)
            self.buffer = []
            self.failing_since = None
            self.last_flush = time.monotonic()
            return True


def seed_scratch(corpus: Path, entries: dict[str, str], records: list[str]) -> None:
    """The scratch corpus a shard starts from: the entries the client sent, and the records to
    re-run as orphans (owner ``<host>.handover.x``, never a live process), which the session's
    first driver re-runs before it fuzzes (``Driver.recover_pending``)."""
    corpus.mkdir(parents=True, exist_ok=True)
    for name, text in entries.items():
        if plain_name(name):
            atomic_write(corpus / name, text)
    host = identity().rsplit(".", 2)[0]
    for number, text in enumerate(records):
        atomic_write(corpus / PENDING / f"{host}.handover.x--inherited{number}.json", text)


def run_shard(shard: Shard, campaign: str) -> dict[str, Any]:
    """The Dask task: ask for the handover, run the session, return what the client cannot
    see in the stream (the shard's overhead)."""
    import multiprocessing

    from distributed import Event, Queue, get_worker

    if multiprocessing.current_process().daemon:
        raise RuntimeError(DAEMONIC)
    worker = get_worker()
    attempt = f"{shard.index}-{secrets.token_hex(4)}"
    began = time.perf_counter()
    events = Queue(events_queue(campaign))
    replies = Queue(reply_queue(campaign, attempt))
    start = {"worker": worker.address, "pid": os.getpid(), "host": socket.gethostname()}
    relay = ShardRelay(events, Event(stop_event(campaign)), shard.index, attempt)
    relay(-1, "start", start)
    try:
        handover = json.loads(replies.get(timeout=HANDOVER_SECONDS))
    finally:
        replies.close()
    handover_seconds = time.perf_counter() - began
    result = {
        "shard": shard.index,
        "attempt": attempt,
        "worker": worker.address,
        "handover_seconds": handover_seconds,
        "session_seconds": 0.0,
        "cases": 0,
    }
    if handover.get("seconds", 0) <= 0:
        return result  # the campaign is over: what it handed stays pending with the client
    scratch = Path(tempfile.mkdtemp(prefix=f"shard{shard.index}-", dir=worker.local_directory))
    try:
        corpus = scratch / "corpus"
        seed_scratch(corpus, handover.get("entries", {}), handover.get("records", []))
        options = dataclasses.replace(
            shard.options, corpus=corpus, seconds=float(handover["seconds"]), relay=True
        )
        summary = session(options, relay=relay)
        relay.flush(retry=AHEAD_RETRY_SECONDS)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result.update(
        session_seconds=summary["seconds"],
        cases=summary["stats"]["cases"],
        relay_seconds=relay.put_seconds,
        relay_puts=relay.puts,
        messages=relay.sent,
        interrupted=summary.get("interrupted"),
        wall_seconds=time.perf_counter() - began,
    )
    return result


__all__ = ["DAEMONIC", "Shard", "ShardRelay", "run_shard", "seed_scratch"]
