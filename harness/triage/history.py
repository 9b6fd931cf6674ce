"""The earlier evaluations a failure needs: a case that passes alone, in a new worker process,
may fail again after what its process had run before it (a memo whose key misses what the
kernel depends on, two kernels' symbols resolved to one), the case itself on its other backends
among them (its task compiles every backend in one process; it is judged again on the failing
ones alone). Replayed in a new process after the worker's recorded history (``Runner.history``,
``Finding.before``), the failure is reduced to the fewest earlier evaluations that bring it
back: the entry keeps them, replay runs them first, and the reproducer calls their programs
first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..case import Case, Earlier
from ..run.runner import Runner


def recurs_after(
    runner: Runner, earlier: tuple[Earlier, ...], case: Case, check: Callable[[Case], Any]
) -> bool:
    """Does ``check`` (the minimizer's predicate: the finding again, or None) fail on ``case``
    in a new worker process that has run ``earlier`` first?"""
    runner.after(earlier)
    return check(case) is not None


def needed_earlier(
    runner: Runner,
    case: Case,
    check: Callable[[Case], Any],
    earlier: tuple[Earlier, ...],
    seconds: float,
) -> tuple[Earlier, ...] | None:
    """The fewest of ``earlier`` (oldest first) after which ``case`` fails ``check`` again in a
    new process, or None where even all of them do not bring it back (a flaky failure, or state
    from before the recorded history). The latest ones first (the state is most often the last
    case's), doubling, then each one left out in turn while the failure stays, within
    ``seconds`` (past them, what still fails is kept: larger, still a reproducer); then each
    kept one's backends, each left out in turn while the failure stays."""
    if not earlier or not recurs_after(runner, earlier, case, check):
        return None
    deadline = time.perf_counter() + seconds
    count = 1
    while count < len(earlier) and time.perf_counter() < deadline:
        if recurs_after(runner, earlier[-count:], case, check):
            earlier = earlier[-count:]
            break
        count *= 2
    index = 0
    while len(earlier) > 1 and index < len(earlier) and time.perf_counter() < deadline:
        fewer = earlier[:index] + earlier[index + 1 :]
        if recurs_after(runner, fewer, case, check):
            earlier = fewer
        else:
            index += 1
    # Then each kept one on fewer backends: the compile that leaves the state behind (a
    # cpu-loops compile before the cpu-vector one that fails) is what the reader needs.
    for position in range(len(earlier)):
        record = earlier[position]
        for backend in record.case.backends:
            if time.perf_counter() >= deadline or len(record.case.backends) == 1:
                break
            fewer_backends = tuple(b for b in record.case.backends if b != backend)
            trial = replace(record, case=record.case.on(fewer_backends))
            candidate = (*earlier[:position], trial, *earlier[position + 1 :])
            if recurs_after(runner, candidate, case, check):
                earlier, record = candidate, trial
    return earlier


__all__ = ["needed_earlier", "recurs_after"]
