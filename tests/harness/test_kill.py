"""kill -9 in the middle of a session loses no recorded finding and corrupts no file; the case
that was in flight is picked up by the next session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.corpus import Corpus, Entry
from harness.selftest import MUTATIONS, apply, fuzz_command, scratch_environment


@pytest.mark.slow
def test_kill_minus_nine_mid_session(tmp_path: Path) -> None:
    mutation = next(m for m in MUTATIONS if m.name == "inverted-causal-mask")
    scratch = apply(mutation, tmp_path / "src")
    corpus_dir = tmp_path / "corpus"
    env = scratch_environment(scratch)
    command = fuzz_command(corpus_dir, 120, 5, "--no-database", "--no-jax")
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 150
        while time.time() < deadline and not list(corpus_dir.glob("*.json")):
            time.sleep(0.2)
        assert list(corpus_dir.glob("*.json")), "the planted bug was found"
        time.sleep(1.5)  # let it get busy minimizing or running the next case
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    corpus = Corpus(corpus_dir)
    items = list(corpus.entries())
    assert items and all(isinstance(i, Entry) for i in items), items
    # Recovery re-runs whatever was in flight and clears the write-ahead records (a session
    # does it first thing too, but a short one may be stopped before it is through).
    again = [sys.executable, "-m", "harness", "recover", "--corpus", str(corpus_dir), "--no-jax"]
    rerun = subprocess.run(
        again, cwd=tmp_path, env=env, capture_output=True, timeout=300, text=True
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    from harness.pending import orphans

    assert orphans(corpus_dir) == []
    assert all(isinstance(i, Entry) for i in corpus.entries())
    # A kill inside an atomic write leaves its temporary file; recovery sweeps it.
    assert not list(corpus_dir.rglob(".tmp-*"))
