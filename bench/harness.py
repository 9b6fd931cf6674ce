"""Throughput of the harness, measured in one run: cases per second per core on small random
programs across every CPU backend, the harness's own share of the time, and 1 -> 2 workers.

Run: ``python bench/harness.py [--seconds 60]``. Each configuration is a real fuzz session
(generation, write-ahead, isolated compile+run on 4 backends, NumPy/truth/JAX references,
oracles), writing to a scratch corpus.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.session.fuzz import FuzzOptions, session  # noqa: E402


def run(seconds: float, workers: int, relations: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        options = FuzzOptions(
            seconds=seconds,
            workers=workers,
            seed=1,
            corpus=Path(tmp),
            mix="programs",
            relations=relations,
            database=None,
        )
        return session(options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    print(
        f"{'configuration':34} {'cases':>6} {'cases/s':>8} {'per core':>8} "
        f"{'worker %':>9} {'refs %':>7} {'other %':>8}"
    )
    rates = {}
    for workers, relations in ((1, False), (1, True), (2, True)):
        summary = run(args.seconds, workers, relations)
        stats = summary["stats"]
        wall = summary["seconds"] * workers  # process-seconds the drivers had
        cases = stats["cases"]
        worker = stats["seconds_worker"] / wall
        refs = stats["seconds_references"] / wall
        name = f"{workers} worker(s), relations {'on' if relations else 'off'}"
        rate = cases / summary["seconds"]
        rates[(workers, relations)] = rate
        print(
            f"{name:34} {cases:6d} {rate:8.2f} {rate / workers:8.2f} {worker:9.1%} "
            f"{refs:7.1%} {1 - worker - refs:8.1%}",
            flush=True,
        )
    print(
        f"\nscaling 1 -> 2 workers (relations on): "
        f"{rates[(2, True)] / rates[(1, True)]:.2f}x on {os.cpu_count()} cores"
    )
    print("worker %: compile + run in the isolated worker (the subject's time, plus IPC);")
    print("refs %: NumPy, extended-precision truth and jax.jit references;")
    print("other %: generation, write-ahead, oracles, relations' bookkeeping (the overhead).")


if __name__ == "__main__":
    main()
