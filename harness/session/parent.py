"""The session process: it starts the drivers (``fuzz._drive``, one spawned process each),
merges what they report into the summary, and keeps the time box and the signals.

The drivers do the fuzzing (``harness.session.fuzz``); this process only waits on their pipes,
so a stop, a signal or a dead driver never leaves it blocked.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from ..run.isolation import signals_held
from ..run.runner import Stats
from .fuzz import DRIVER_HELD, FuzzOptions, _drive, _send

GRACE_SECONDS = 1.0  # past the deadline, how long a driver may take to finish its case
KILL_AFTER_SECONDS = 0.8  # after asking the drivers to stop, how long before they are killed


class _Signals:
    """SIGINT and SIGTERM in the session process: remembered, then handled as a stop."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        for number in (signal.SIGINT, signal.SIGTERM):
            try:
                self.previous[number] = signal.signal(number, self._handle)
            except ValueError:  # not the main thread: the caller handles signals
                pass
        return self

    def _handle(self, number: int, frame: Any) -> None:
        self.received = self.received or number

    def __exit__(self, *exc: object) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)


def session(options: FuzzOptions, on_event: Any = None, relay: Any = None) -> dict[str, Any]:
    """Run ``options.workers`` drivers for ``options.seconds``; returns the session summary.

    The time box is kept to within two seconds: past the deadline a driver may finish the case in
    hand for ``GRACE_SECONDS``, then it is asked to stop (at once on SIGINT/SIGTERM, which the
    summary names in ``interrupted``), and killed if it has not stopped ``KILL_AFTER_SECONDS``
    later. Whatever was in flight stays in its write-ahead
    record and an unfinished minimization stays ``unminimized``: the next session resumes both.
    Drivers report through pipes (no semaphores: nothing is left in /dev/shm).

    ``relay(driver, kind, payload)``, for a shard of a Dask campaign (``options.relay``), gets
    every driver message in order (write-aheads are acknowledged once it returns) and a ``tick``
    (driver -1) each loop; a true answer to a tick stops the session.
    """
    context = mp.get_context("spawn")
    start = time.perf_counter()
    channels: dict[Any, int] = {}
    processes = []

    def start_driver(i: int, handoff: dict[str, Any] | None = None) -> None:
        receive, send = context.Pipe(duplex=options.relay)  # duplex: write-aheads are acked
        process = context.Process(target=_drive, args=(options, i, send, handoff), daemon=False)
        with signals_held(DRIVER_HELD):
            process.start()
        send.close()
        channels[receive] = i
        processes.append(process)

    for i in range(options.workers):
        start_driver(i)
    handoffs: dict[int, dict[str, Any]] = {}  # a driver's state, sent before it exits
    recycled = 0
    from ..report.data import Throughput

    stats = Stats()
    throughput = Throughput(options.seconds)  # cases and backend runs per interval
    timeline: list[dict[str, Any]] = []  # each finding when found: seconds, kind, backends, path
    findings: list[dict[str, Any]] = []
    regressions: list[dict[str, Any]] = []
    errors: list[str] = []
    ambiguities: list[str] = []
    first: float | None = None
    deadline = start + options.seconds if options.rounds is None else float("inf")
    stopping_since: float | None = None

    def stop() -> None:
        nonlocal stopping_since
        if stopping_since is None:
            stopping_since = time.perf_counter()
            for process in processes:
                if process.is_alive():
                    os.kill(process.pid, signal.SIGTERM)

    with _Signals() as signals:
        while channels:
            now = time.perf_counter()
            # A signal stops at once; at the deadline the drivers finish the case in hand (they
            # watch the deadline too) and are told to stop only if that takes longer than GRACE.
            if signals.received is not None or now >= deadline + GRACE_SECONDS:
                stop()
            if stopping_since is not None and now - stopping_since > KILL_AFTER_SECONDS:
                break
            for channel in wait(list(channels), timeout=0.1):
                try:
                    _, kind, payload = channel.recv()
                except (EOFError, OSError):
                    index = channels.pop(channel)
                    handoff = handoffs.pop(index, None)
                    if handoff is not None and stopping_since is None and now < deadline:
                        start_driver(index, handoff)  # its memory grew: a new process goes on
                        recycled += 1
                    continue
                if relay is not None and kind != "recycle":  # a shard: every message goes on
                    relay(channels[channel], kind, payload)  # to the client, in order
                if kind == "ahead" and options.relay:
                    _send(channel, "ack")  # the record has left this machine: run the case
                if kind == "stats":
                    stats.merge(payload)
                    throughput.add(time.perf_counter() - start, payload, channels[channel])
                elif kind == "found":
                    timeline.append({"seconds": round(time.perf_counter() - start, 3), **payload})
                elif kind == "finding":
                    findings.append(payload)
                    for item in timeline:  # the timeline links the minimized entry
                        if item["path"] in payload.get("raw", ()):
                            item["path"] = payload["path"]
                            item["minimized"], item["kept"] = True, bool(payload.get("new"))
                    if options.stop_on_first:
                        stop()
                elif kind == "regression":
                    regressions.append(payload)
                elif kind == "first-finding":
                    first = payload if first is None else min(first, payload)
                elif kind == "harness-error":
                    errors.append(payload)
                elif kind == "ambiguities":
                    ambiguities.extend(payload)
                elif kind == "recycle":
                    handoffs[channels[channel]] = payload
                if on_event:
                    on_event(kind, stats, findings)
            if on_event:
                on_event("tick", stats, findings)
            if relay is not None and relay(-1, "tick", None):
                stop()  # the campaign asked its shards to stop
        for process in processes:
            if process.is_alive():
                process.kill()
            process.join(timeout=5)
    return {
        "seconds": time.perf_counter() - start,
        "stats": stats.to_dict(),
        "findings": findings,
        "regressions": regressions,
        "harness_errors": errors,
        "ambiguities": ambiguities,
        "first_finding_seconds": first,
        "timeline": timeline,
        **added(timeline),
        "throughput": throughput.to_dict(),
        "interrupted": signal.Signals(signals.received).name if signals.received else None,
        "drivers_recycled": recycled,
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in options.__dict__.items()},
        "python": sys.version.split()[0],
    }


def added(timeline: list[dict[str, Any]]) -> dict[str, int]:
    """The corpus entries a session added: every new finding saved at once (unminimized), less
    those whose minimized form turned out to be a known entry; and how many are still
    unminimized (a stopped session: the next one finishes them). Counted from the timeline,
    not from the minimized findings, which an interrupted session never reports."""
    saved = [t for t in timeline if t.get("new") and not t.get("regression")]
    return {
        "entries_added": sum(1 for t in saved if t.get("kept", True)),
        "entries_unminimized": sum(1 for t in saved if not t.get("minimized")),
    }


__all__ = ["GRACE_SECONDS", "KILL_AFTER_SECONDS", "added", "session"]
