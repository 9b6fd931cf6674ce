"""Memory of a long fuzz session: the RSS of every process of its tree, sampled while it runs.

Run: ``python bench/memory.py [--seconds 3600] [--every 30] [--workers 2]``. It starts ``python -m
harness fuzz`` on a scratch corpus (the default session otherwise: every CPU backend, JAX,
relations, siblings) and prints, for the session process and each driver, the RSS at five
minutes and at the end and the change (the reliability issue's goal: within 10%), the drivers'
together (a driver whose memory grew hands over to a new process: ``fuzz.DRIVER_GROWTH``), and
for the isolated workers, which are replaced every ``RECYCLE_AFTER`` tasks, the largest RSS any
of them had in the first and in the last ten minutes. ``--log FILE`` keeps every sample (JSON
lines).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
MIB = 2**20


def _roles(session: psutil.Process) -> dict[int, tuple[str, int]]:
    """pid -> (role, RSS) for the session's tree: ``session``, ``driver <n>`` (the session's
    spawned children, numbered by start), ``worker`` (their children), ``helper`` (the rest:
    multiprocessing's resource tracker)."""
    found: dict[int, tuple[str, int]] = {}
    try:
        found[session.pid] = ("session", session.memory_info().rss)
        children = sorted(session.children(), key=lambda p: (p.create_time(), p.pid))
    except psutil.Error:
        return found
    drivers = 0
    for child in children:
        try:
            line = " ".join(child.cmdline())
            if "resource_tracker" in line:
                found[child.pid] = ("helper", child.memory_info().rss)
                continue
            found[child.pid] = (f"driver {drivers}", child.memory_info().rss)
            drivers += 1
            for worker in child.children(recursive=True):
                found[worker.pid] = ("worker", worker.memory_info().rss)
        except psutil.Error:
            continue
    return found


def sample(seconds: float, every: float, workers: int, log: Path | None) -> list[dict]:
    """Run the session, sampling its tree every ``every`` seconds; the samples."""
    samples: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable, "-m", "harness", "fuzz", "--seconds", str(seconds),
            "--workers", str(workers), "--corpus", f"{tmp}/corpus", "--report", "",
            "--no-database", "--quiet",
        ]  # fmt: skip
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
        session = psutil.Process(process.pid)
        start = time.monotonic()
        try:
            while process.poll() is None:
                row = {"t": round(time.monotonic() - start, 1), "rss": _roles(session)}
                samples.append(row)
                if log is not None:
                    with open(log, "a") as out:
                        out.write(json.dumps(row) + "\n")
                time.sleep(every)
        finally:
            if process.poll() is None:
                process.terminate()
            process.wait()
    return samples


def summarize(samples: list[dict], at: float = 300.0, window: float = 600.0) -> list[str]:
    """One line per role: RSS at ``at`` seconds and at the end (processes that lived through
    both), and the workers' largest RSS in the first and the last ``window`` seconds."""
    if not samples:
        return ["no sample"]
    end = samples[-1]["t"]
    early = min(samples, key=lambda s: abs(s["t"] - at))
    last = next(s for s in reversed(samples) if len(s["rss"]) > 1)  # before the session exits
    span = f"RSS at {early['t']:.0f} s -> {last['t']:.0f} s"
    lines = [f"{len(samples)} samples over {end:.0f} s; {span}"]
    for pid, (role, rss) in sorted(early["rss"].items(), key=lambda item: item[1]):
        if role in ("worker", "helper") or pid not in last["rss"]:
            continue
        later = last["rss"][pid][1]
        change = f"{(later - rss) / rss:+.1%}"
        lines.append(f"  {role:9} pid {pid}: {rss / MIB:7.1f} -> {later / MIB:7.1f} MiB ({change})")

    def largest(chosen: list[dict]) -> float:
        sizes = [rss for s in chosen for role, rss in s["rss"].values() if role == "worker"]
        return max(sizes, default=0) / MIB

    def drivers(sample: dict) -> list[int]:
        return [rss for role, rss in sample["rss"].values() if role.startswith("driver")]

    seen = {
        pid for s in samples for pid, (role, _) in s["rss"].items() if role.startswith("driver")
    }
    before, after = drivers(early), drivers(last)
    if before and after:  # the drivers' slots, whichever process holds each (recycled drivers)
        total = f"{sum(before) / MIB:.1f} -> {sum(after) / MIB:.1f} MiB"
        change = f"{(sum(after) - sum(before)) / sum(before):+.1%}"
        lines.append(
            f"  drivers together: {total} ({change}); largest {max(before) / MIB:.1f} -> "
            f"{max(after) / MIB:.1f} MiB; {len(seen)} driver processes seen (recycled ones too)"
        )
    first = [s for s in samples if s["t"] <= window]
    final = [s for s in samples if s["t"] >= end - window]
    pids = {pid for s in samples for pid, (role, _) in s["rss"].items() if role == "worker"}
    lines.append(
        f"  workers (recycled; {len(pids)} seen): largest {largest(first):.1f} MiB in the first "
        f"{window:.0f} s, {largest(final):.1f} MiB in the last {window:.0f} s"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--log", type=Path, default=None, help="also append every sample here")
    parser.add_argument("--summarize", type=Path, default=None, help="only summarize this log")
    args = parser.parse_args()
    if args.summarize is not None:
        rows = [json.loads(line) for line in args.summarize.read_text().splitlines() if line]
        rows = [{"t": r["t"], "rss": {int(k): tuple(v) for k, v in r["rss"].items()}} for r in rows]
    else:
        os.environ.setdefault("PYTHONPATH", str(ROOT))
        rows = sample(args.seconds, args.every, args.workers, args.log)
    print("\n".join(summarize(rows)))


if __name__ == "__main__":
    main()
