"""Crash isolation: compiled code runs in a spawned worker process with a timeout.

A segfault, abort or hang inside MLIR/LLVM kills (or stalls) only the worker; the driver sees
``crash`` or ``hang``, starts a fresh worker and goes on. Workers are started with ``spawn``:
JAX is multithreaded, and a ``fork`` after it has run deadlocks the child.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# A worker is retired after this many tasks, so slow leaks in native code cannot accumulate.
RECYCLE_AFTER = 400


@dataclass
class Outcome:
    """What happened to one task: ``ok`` with a value, ``error`` (Python exception in the
    worker, as text), ``crash`` (the worker died; ``detail`` names the signal) or ``hang``."""

    status: str
    value: Any = None
    detail: str = ""
    seconds: float = 0.0


def _serve(connection: Any, function: Callable[[Any], Any]) -> None:
    # The worker ignores ^C: the driver decides when it stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            task = connection.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            result = ("ok", function(task))
        except BaseException as error:  # noqa: BLE001 - everything is reported, nothing lost
            result = ("error", f"{type(error).__name__}: {error}\n{traceback.format_exc()}")
        connection.send(result)


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "worker vanished"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


class Worker:
    """One isolated process running ``function(task)`` for each task it is given."""

    def __init__(self, function: Callable[[Any], Any], timeout: float = 60.0) -> None:
        self.function = function
        self.timeout = timeout
        self.process: Any = None
        self.connection: Any = None
        self.tasks = 0

    def start(self) -> None:
        context = mp.get_context("spawn")
        parent, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, self.function), daemon=True)
        self.process.start()
        child.close()
        self.connection = parent
        self.tasks = 0

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            self.connection.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.process.join(timeout=2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()
        self.process = None

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join()
            self.connection.close()
            self.process = None

    def run(self, task: Any, timeout: float | None = None) -> Outcome:
        """Run one task; never raises for anything the task does."""
        if self.process is None or not self.process.is_alive() or self.tasks >= RECYCLE_AFTER:
            self.stop()
            self.start()
        self.tasks += 1
        limit = self.timeout if timeout is None else timeout
        start = time.perf_counter()
        try:
            self.connection.send(task)
        except (OSError, BrokenPipeError):
            code = self.process.exitcode
            self.kill()
            return Outcome("crash", detail=_describe_exit(code))
        deadline = start + limit
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                self.kill()
                return Outcome(
                    "hang",
                    detail=f"no answer within {limit:.0f} s",
                    seconds=time.perf_counter() - start,
                )
            try:
                ready = self.connection.poll(min(remaining, 0.5))
            except (OSError, EOFError):
                ready = True
            if ready:
                try:
                    status, value = self.connection.recv()
                except (EOFError, OSError):
                    self.process.join(timeout=5)
                    code = self.process.exitcode
                    self.kill()
                    return Outcome(
                        "crash", detail=_describe_exit(code), seconds=time.perf_counter() - start
                    )
                elapsed = time.perf_counter() - start
                if status == "ok":
                    return Outcome("ok", value=value, seconds=elapsed)
                return Outcome("error", detail=value, seconds=elapsed)
            if not self.process.is_alive():
                code = self.process.exitcode
                self.kill()
                return Outcome(
                    "crash", detail=_describe_exit(code), seconds=time.perf_counter() - start
                )

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def fault(kind: str) -> None:
    """Deliberate failures for testing the isolation itself (only reachable from test tasks)."""
    if kind == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif kind == "abort":
        os.abort()
    elif kind == "hang":
        while True:
            time.sleep(1)
    elif kind == "exit":
        os._exit(3)
    raise ValueError(f"unknown fault {kind!r}")
