"""Generation speed of the fuzzing strategies: programs/s for ``programs()`` and ``cases()``.

Run from the repository root: ``python bench/strategies.py [--examples N]``. Each figure times a
Hypothesis test that only draws (generate phase, no shrinking, no database), so it includes the
engine's own overhead, which is what a fuzzing campaign pays per case.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from harness.session.generate import cases  # noqa: E402
from strategies import invalid_programs, programs  # noqa: E402


def measure(strategy: st.SearchStrategy[Any], examples: int) -> tuple[float, Counter[int]]:
    """(examples per second, tally of node counts) for drawing ``examples`` values."""
    nodes: Counter[int] = Counter()

    @settings(
        max_examples=examples,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def draw(value: Any) -> None:
        program = getattr(value, "program", value)
        nodes[len(program.nodes)] += 1

    start = time.perf_counter()
    draw()
    elapsed = time.perf_counter() - start
    return sum(nodes.values()) / elapsed, nodes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="values drawn per strategy")
    args = parser.parse_args(argv)
    benches: list[tuple[str, Callable[[], st.SearchStrategy[Any]]]] = [
        ("programs()", programs),
        ("programs(max_nodes=16)", lambda: programs(max_nodes=16)),
        ("programs(min_nodes=4, max_nodes=12)", lambda: programs(min_nodes=4, max_nodes=12)),
        ("cases()", cases),
        ("cases(max_nodes=16)", lambda: cases(max_nodes=16)),
        ("invalid_programs()", invalid_programs),
    ]
    print(f"{'strategy':40} {'per second':>12} {'mean nodes':>11}")
    for name, make in benches:
        rate, nodes = measure(make(), args.examples)
        mean = sum(k * v for k, v in nodes.items()) / max(1, sum(nodes.values()))
        print(f"{name:40} {rate:12.1f} {mean:11.2f}")


if __name__ == "__main__":
    main()
