"""Ctrl-C and SIGTERM for the commands that drive child processes (replay, selftest, mutate).

Why a module: ``subprocess.run`` kills its child only when the exception reaches the thread that
called it, and SIGTERM's default action kills Python with no cleanup at all. A ``mutate`` run
probes the compiler from a thread pool and fuzzes each mutant in a child session, so either way
children were orphaned and the run went on. Here a signal first stops every child started with
:func:`run_child` (SIGTERM: a fuzz session saves what it has), then raises :class:`Interrupted`
in the main thread, which reports what was done and exits 130 or 143.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from typing import Any

#: Seconds a child has to exit after SIGTERM before it gets SIGKILL.
GRACE_SECONDS = 10.0

_children: set[subprocess.Popen[str]] = set()
_lock = threading.Lock()


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: stop, say what was done, exit 128 + the signal's number."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number

    @property
    def name(self) -> str:
        return signal.Signals(self.number).name

    @property
    def exit_status(self) -> int:
        return 128 + self.number


def _terminate(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        if proc.poll() is None:
            proc.terminate()


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """Turn SIGINT/SIGTERM into :class:`Interrupted` after stopping :func:`run_child`'s children
    (then restore the previous handlers). Off the main thread it does nothing: the caller
    handles signals there."""

    def handle(number: int, frame: object) -> None:
        with _lock:
            children = list(_children)
        for proc in children:
            _terminate(proc)
        raise Interrupted(number)

    previous = {}
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[number] = signal.signal(number, handle)
        except ValueError:  # not the main thread
            pass
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_child(
    command: Sequence[str], *, timeout: float | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, capture_output=True, text=True)`` that leaves no orphan: on a
    timeout, an interruption or any other exception the child gets SIGTERM, then SIGKILL after
    :data:`GRACE_SECONDS`, and is reaped before the exception goes on."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
    ) as proc:
        with _lock:
            _children.add(proc)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except BaseException:
            _terminate(proc)
            try:
                proc.communicate(timeout=GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            raise
        finally:
            with _lock:
                _children.discard(proc)
    return subprocess.CompletedProcess(list(command), proc.returncode, stdout, stderr)


__all__ = ["GRACE_SECONDS", "Interrupted", "run_child", "signals_interrupt"]
