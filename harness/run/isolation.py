"""Crash isolation: compiled code runs in a spawned worker process with a timeout.

A segfault, abort or hang inside MLIR/LLVM kills (or stalls) only the worker; the driver sees
``crash`` or ``hang`` with the worker's stderr (MLIR's assertion text, the first stack frames),
starts a fresh worker and goes on. Workers are started with ``spawn``: JAX is multithreaded, and a
``fork`` after it has run deadlocks the child. A worker dies with its parent (``PR_SET_PDEATHSIG``
on Linux, and an end-of-file on its pipe everywhere), so no orphan keeps running.

The same mechanism isolates the compiler tests (``call``): one process per pytest worker, reused
across tests, replaced after a crash.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

# A worker is retired after this many tasks, so slow leaks in native code cannot accumulate.
RECYCLE_AFTER = 400
STDERR_TAIL = 8000  # characters of a crashed worker's stderr kept as evidence


_STOP = {"requested": False}


#: Signals that end a process from outside, never by a fault of its own.
_TERMINATIONS = {int(signal.SIGTERM), int(signal.SIGINT), int(signal.SIGHUP)}
#: How long a worker's death by one of them waits for this process to be asked to stop too
#: (then the task is ``stopped``, not a crash: the signal went to the whole process group).
STOP_GRACE = 1.0


def request_stop() -> None:
    """Ask every ``Worker.run`` in this process to give up its task now (a signal handler calls
    this): the worker is killed, the task's write-ahead record stays for the next session."""
    _STOP["requested"] = True


def stop_requested() -> bool:
    return _STOP["requested"]


@dataclass
class Outcome:
    """What happened to one task: ``ok`` with a value, ``error`` (Python exception in the
    worker, as text), ``crash`` (the worker died; ``detail`` names the signal), ``hang``, or
    ``stopped`` (this process was asked to stop); ``stderr`` is what the worker wrote to stderr
    during the task."""

    status: str
    value: Any = None
    detail: str = ""
    seconds: float = 0.0
    stderr: str = ""


def die_with_parent() -> None:
    """Ask the kernel to kill this process when its parent dies (Linux); elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no prctl: the pipe EOF still works
        pass


@contextlib.contextmanager
def signals_held(numbers: tuple[int, ...]) -> Iterator[None]:
    """Block ``numbers`` in this thread while a spawned child starts: the child inherits the
    mask, so a ^C to the process group while it is still importing (seconds, on a slow machine)
    stays pending instead of killing it with a KeyboardInterrupt traceback on the session's
    stderr. The child calls ``release_signals`` once its own handlers are in place."""
    from multiprocessing import resource_tracker

    # Launching the resource tracker (on a spawn context's first child) unblocks SIGINT and
    # SIGTERM in the calling thread: launch it first, outside the held mask.
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, numbers)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def release_signals(numbers: tuple[int, ...]) -> None:
    """Unblock what ``signals_held`` held: a signal that came during startup is delivered now,
    to the handler just installed (or discarded, where it is ignored)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, numbers)


#: Held while a worker starts; it ignores them all its life (the driver decides when it stops).
_WORKER_HELD = (signal.SIGINT,)


def _serve(connection: Any, function: Callable[[Any], Any], stderr_path: str, parent: int) -> None:
    die_with_parent()
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(0)
    # The worker ignores ^C: the driver decides when it stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    release_signals(_WORKER_HELD)  # a ^C held during startup is discarded
    if stderr_path:
        fd = os.open(stderr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
    profile = _profile()
    while True:
        try:
            task = connection.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        if profile is not None:
            profile.enable()
        try:
            result = ("ok", function(task))
        except Exception as error:  # noqa: BLE001 - everything is reported, nothing lost
            result = ("error", f"{type(error).__name__}: {error}\n{traceback.format_exc()}")
        if profile is not None:
            profile.disable()
            _dump(profile)
        try:
            connection.send(result)
        except (OSError, BrokenPipeError):
            return


#: Where each worker writes its cProfile statistics (``worker-PID.prof``, rewritten after every
#: task: a worker is killed, never asked to exit), if set; the same variable as the drivers'
#: (``session.fuzz.PROFILE_VARIABLE``), so one session's folder holds where all its time went.
PROFILE_VARIABLE = "HARNESS_PROFILE_DIR"


def _profile() -> Any:
    if not os.environ.get(PROFILE_VARIABLE):
        return None
    import cProfile

    return cProfile.Profile()


def _dump(profile: Any) -> None:
    where = os.path.join(os.environ[PROFILE_VARIABLE], f"worker-{os.getpid()}.prof")
    profile.dump_stats(where + ".tmp")
    os.replace(where + ".tmp", where)


def describe_exit(code: int | None) -> str:
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
        self.starts = 0  # processes started so far
        handle, self.stderr_path = tempfile.mkstemp(prefix="worker-stderr-", suffix=".log")
        os.close(handle)

    def start(self) -> None:
        context = mp.get_context("spawn")
        parent, child = context.Pipe()
        self.process = context.Process(
            target=_serve,
            args=(child, self.function, self.stderr_path, os.getpid()),
            daemon=True,
        )
        with signals_held(_WORKER_HELD):
            self.process.start()
        child.close()
        self.connection = parent
        self.tasks = 0
        self.starts += 1

    def restarts_next(self) -> bool:
        """Does the next task start a new process (none alive, or this one's tasks are up)?"""
        return self.process is None or not self.process.is_alive() or self.tasks >= RECYCLE_AFTER

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

    def close(self) -> None:
        """Stop the process and remove its stderr file."""
        self.stop()
        try:
            os.unlink(self.stderr_path)
        except FileNotFoundError:
            pass

    def _stderr_since(self, offset: int) -> str:
        try:
            with open(self.stderr_path, "rb") as handle:
                handle.seek(offset)
                data = handle.read()
        except OSError:
            return ""
        text = data.decode("utf-8", "replace")
        return text if len(text) <= STDERR_TAIL else text[:2000] + "\n...\n" + text[-6000:]

    def _stderr_offset(self) -> int:
        try:
            return os.path.getsize(self.stderr_path)
        except OSError:
            return 0

    def run(self, task: Any, timeout: float | None = None) -> Outcome:
        """Run one task; never raises for anything the task does."""
        if self.restarts_next():
            self.stop()
            self.start()
        self.tasks += 1
        limit = self.timeout if timeout is None else timeout
        offset = self._stderr_offset()
        start = time.perf_counter()

        def died(status: str, detail: str, code: int | None = None) -> Outcome:
            if code is not None and -code in _TERMINATIONS:
                # A signal to the whole group (a batch system's time limit, ``systemctl stop``,
                # ``docker stop``, ``timeout``) ends the worker and its driver alike; the
                # driver's handler may run a moment after the worker's death is seen.
                grace = time.perf_counter() + STOP_GRACE
                while not stop_requested() and time.perf_counter() < grace:
                    time.sleep(0.02)
            if stop_requested():
                return Outcome("stopped", detail=f"stopped on request ({detail})")
            return Outcome(
                status,
                detail=detail,
                seconds=time.perf_counter() - start,
                stderr=self._stderr_since(offset),
            )

        try:
            self.connection.send(task)
        except (OSError, BrokenPipeError):
            code = self.process.exitcode
            self.kill()
            return died("crash", describe_exit(code), code)
        deadline = start + limit
        while True:
            if stop_requested():
                self.kill()
                return Outcome(
                    "stopped", detail="stopped on request", seconds=time.perf_counter() - start
                )
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                self.kill()
                return died("hang", f"no answer within {limit:.0f} s")
            try:
                ready = self.connection.poll(min(remaining, 0.1))
            except (OSError, EOFError):
                ready = True
            if ready:
                try:
                    status, value = self.connection.recv()
                except (EOFError, OSError):
                    self.process.join(timeout=5)
                    code = self.process.exitcode
                    self.kill()
                    return died("crash", describe_exit(code), code)
                elapsed = time.perf_counter() - start
                if status == "ok":
                    return Outcome("ok", value=value, seconds=elapsed)
                return Outcome(
                    "error", detail=value, seconds=elapsed, stderr=self._stderr_since(offset)
                )
            if not self.process.is_alive():
                code = self.process.exitcode
                self.kill()
                return died("crash", describe_exit(code), code)

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fault(kind: str) -> None:
    """Deliberate failures for testing the isolation itself (only reachable from test tasks)."""
    if kind == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif kind == "abort":
        sys.stderr.write("Assertion `planted' failed.\n")
        sys.stderr.flush()
        os.abort()
    elif kind == "hang":
        while True:
            time.sleep(1)
    elif kind == "exit":
        os._exit(3)
    raise ValueError(f"unknown fault {kind!r}")


# --------------------------------------------------------------------------------------------
# Calling one function in isolation (the compiler tests use this)


def _call(payload: bytes) -> bytes:
    import cloudpickle

    fn, args, kwargs = cloudpickle.loads(payload)
    try:
        return cloudpickle.dumps(("ok", fn(*args, **kwargs)))
    except Exception as error:  # noqa: BLE001 - the exception goes back to the caller
        try:
            return cloudpickle.dumps(("raise", error))
        except Exception:  # noqa: BLE001 - an unpicklable exception: its class and text
            return cloudpickle.dumps(("text", f"{type(error).__qualname__}: {error}"))


class Crashed(AssertionError):
    """The isolated process died (an MLIR assertion abort, a segfault) or hung."""


_CALLER: Worker | None = None


def call(fn: Callable[..., Any], *args: Any, timeout: float = 120.0, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in this process's isolated worker (started on first use, reused,
    replaced after a crash); its result, or its exception raised here, or ``Crashed`` with the
    worker's stderr."""
    import cloudpickle

    global _CALLER
    if _CALLER is None:
        _CALLER = Worker(_call, timeout)
    outcome = _CALLER.run(cloudpickle.dumps((fn, args, kwargs)), timeout)
    if outcome.status == "stopped":
        raise Crashed("the isolated call was stopped: the session is stopping")
    if outcome.status in ("crash", "hang"):
        raise Crashed(f"the isolated process {outcome.detail}:\n{outcome.stderr[-3000:]}")
    if outcome.status == "error":
        raise Crashed(f"the isolated call failed: {outcome.detail}")
    kind, value = cloudpickle.loads(outcome.value)
    if kind == "ok":
        return value
    if kind == "raise":
        raise value
    raise AssertionError(value)


__all__ = [
    "Crashed",
    "Outcome",
    "Worker",
    "call",
    "describe_exit",
    "die_with_parent",
    "fault",
    "request_stop",
    "stop_requested",
]
