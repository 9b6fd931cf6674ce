"""Ctrl-C and SIGTERM stop the commands that drive children (``harness.interrupt``) at once, with
no orphaned child left running, even when the child was started from a worker thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.interrupt import Interrupted, run_child, signals_interrupt
from harness.selftest import ROOT


def _processes_with(marker: str) -> list[int]:
    """Live processes whose environment carries ``marker`` (a test's own children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in environ and state != "Z":
            found.append(int(entry.name))
    return found


def _sleeper(marker: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, INTERRUPT_TEST=marker)
    return run_child([sys.executable, "-c", "import time; time.sleep(60)"], env=env, timeout=120)


def test_run_child_captures_like_subprocess_run() -> None:
    proc = run_child([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"])
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "out\n", "")


def test_a_timeout_reaps_the_child() -> None:
    marker = uuid.uuid4().hex
    env = dict(os.environ, INTERRUPT_TEST=marker)
    with pytest.raises(subprocess.TimeoutExpired):
        run_child([sys.executable, "-c", "import time; time.sleep(60)"], env=env, timeout=0.5)
    assert _processes_with(marker) == []


@pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="signals need the main thread"
)
def test_sigint_stops_children_of_worker_threads() -> None:
    """The case ``subprocess.run`` gets wrong: a pool thread's child ignores the main thread's
    KeyboardInterrupt, and the pool waits for it on the way out."""
    marker = uuid.uuid4().hex
    before = signal.getsignal(signal.SIGINT)
    start = time.perf_counter()
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    with signals_interrupt(), pytest.raises(Interrupted) as stop:
        timer.start()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(_sleeper, (marker, marker)))
    assert stop.value.exit_status == 130 and stop.value.name == "SIGINT"
    assert time.perf_counter() - start < 20, "the pool waited for its children"
    assert _processes_with(marker) == []
    assert signal.getsignal(signal.SIGINT) is before, "the previous handler is restored"


@pytest.mark.slow
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_mutate_stops_during_its_reference_probes(tmp_path: Path, number: int) -> None:
    """``python -m harness mutate`` went on to its first mutant after a SIGINT, with its two
    probes of the original compiler still running."""
    marker = uuid.uuid4().hex
    env = dict(os.environ, INTERRUPT_TEST=marker, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "harness", "mutate", "--count", "2", "--seconds", "5"]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # "N mutants of M files ...": the sample comes next
        assert "mutants of" in first, first
        deadline = time.time() + 120
        while time.time() < deadline and len(_processes_with(marker)) < 3:
            time.sleep(0.2)  # the run itself and its two probes
        assert len(_processes_with(marker)) >= 3, "the reference probes started"
        proc.send_signal(number)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + number, stderr
    assert "stopped by" in stderr
    assert "equivalence sample" not in stderr, "it went on after the signal"
    time.sleep(0.5)
    assert _processes_with(marker) == [], "an orphaned probe is still running"
