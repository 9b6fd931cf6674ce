"""The levels oracle: one of our pipelines at LLVM -O0 and as shipped (-O2, -O3) owes the same
bits.

LLVM's optimizer keeps IEEE 754 semantics wherever no fast-math flag allows otherwise, and this
project's lowering sets none (its float -> int conversions are guarded, so no poison either);
it keeps C library calls as calls where the caller is marked "no-builtins", as the kernels are
(``libm-calls-kept``: unmarked, ``pow(8.0, x)`` became ``exp2(3.0 * x)`` at -O3): every
rounding, zero and NaN of a kernel at -O0 is the optimized kernel's too. A difference is
a flag that leaked into the IR (``a * b - c`` contracted into one FMA rounds once where NumPy
rounds twice), or the optimizer's wrong code. The error model cannot see it where the answer
has room (an FMA's ulp inside ``exp(a * b - c)``); two levels of one pipeline can. Judged where
a case runs one pipeline at two levels: the sampled targets as shipped (``case.SAMPLED_SHARE``)
beside the default ones at -O0. A NaN matches any NaN; a zero any zero where its sign is a
kernel's (after a matmul: ``tolerance.signs_settled``).
"""

from __future__ import annotations

import functools
from typing import Any

from ..case import Case
from . import tolerance
from .base import Finding, Observation, Oracle, register


def _pipeline(backend: str) -> tuple[tuple[str, str], int] | None:
    """((the pipeline, its variant suffix), its LLVM level) of one of our CPU targets given
    whole (no stage prefix, not an ``mlir:`` variant), or None."""
    from compiler import backends, pipelines

    if backend.startswith("mlir:"):
        return None
    try:
        base, stage, _, given, suffix = pipelines.parse_variant(backend)
        target = getattr(backends.get(backend), "target", None)
    except ValueError:
        return None
    if stage is not None or target is None or not hasattr(target, "opt_level"):
        return None
    key, _ = pipelines.unalias(base, given)
    return (key, suffix), int(target.opt_level)


@functools.lru_cache(maxsize=256)
def pairs(backends: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(the optimized backend, the same pipeline's at -O0) for each optimized one of
    ``backends`` whose pipeline is also among them at -O0. Asked of every case (``fits``,
    ``judge``), of a few backend tuples a session: remembered."""
    low: dict[tuple[str, str], str] = {}
    high: list[tuple[str, tuple[str, str]]] = []
    for backend in backends:
        found = _pipeline(backend)
        if found is None:
            continue
        key, level = found
        if level == 0:
            low.setdefault(key, backend)
        else:
            high.append((backend, key))
    return tuple((backend, low[key]) for backend, key in high if key in low)


def low_partner(backend: str) -> str | None:
    """The -O0 name of ``backend``'s pipeline (``cpu`` -> ``cpu-vector@O0``), or None."""
    found = _pipeline(backend)
    if found is None or found[1] == 0:
        return None
    (key, suffix), _ = found
    return f"{key}{'+' + suffix if suffix else ''}@O0"


class Levels(Oracle):
    name = "levels"

    def fits(self, case: Case) -> bool:
        return case.invalid is None and not case.carries_run and bool(pairs(case.backends))

    def wants(self, case: Case) -> bool:
        return self.fits(case)

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        from ..run.worker import same_bits

        results = {r.backend: r for r in obs.results}
        any_zero = not tolerance.signs_settled(obs.case.program)
        findings = []
        for high, low in pairs(obs.case.backends):
            optimized, unoptimized = results.get(high), results.get(low)
            if optimized is None or unoptimized is None:
                continue
            if not (optimized.ok and unoptimized.ok):
                continue
            got, want = optimized.output, unoptimized.output
            if same_bits(got, want, any_zero):
                continue
            detail = (
                f"{high}: other bits than {low}, the same pipeline at LLVM -O0 (IEEE 754 "
                f"semantics and C library calls kept by both): {_first_difference(got, want)}"
            )
            findings.append(
                Finding("levels", (high, low), self.name, detail, obs.case, result=optimized)
            )
        return findings


def _first_difference(got: Any, want: Any) -> str:
    """Where ``got`` and ``want`` differ first (a NaN matching any NaN), and how many differ."""
    import numpy as np

    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.dtype}{list(got.shape)} vs {want.dtype}{list(want.shape)}"
    if got.dtype.kind in "fV":
        g, w = got.astype(np.float64), want.astype(np.float64)
        differs = ((g != w) | (np.signbit(g) != np.signbit(w))) & ~(np.isnan(g) & np.isnan(w))
    else:
        differs = got != want
    where = np.argwhere(differs)
    if not where.size:
        return "the bits differ"
    index = tuple(int(i) for i in where[0])
    first = f"{got[index]!r} vs {want[index]!r}"
    return f"{int(differs.sum())} elements differ, first at {index}: {first}"


register(Levels())

__all__ = ["Levels", "low_partner", "pairs"]
