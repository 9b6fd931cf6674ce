"""The tupled oracle: a program called twice in one jitted function, returning both results,
must give bit for bit what each call gives alone.

Every generated program has one output, so a kernel with several results (a function returning
a tuple, or a gather's out-of-range flags beside its output) was reached only by chance: two
reductions returned together shared one filled init once CSE merged their fills, and the
bufferization that followed copied the first sum out twice (``(x.sum(), y.sum())`` gave the
first sum for both; ``tests/upstream``, workaround ``one-restrict-output``). Here the program
runs on its inputs and, in the same function, on the same inputs reversed (other values in
place, the same values: gather ids stay in range), on one of our backends drawn from the
case's data, for an eighth of the cases. Both results must equal the program's own calls on
that backend exactly: the two halves share no data, so nothing may change a bit.
"""

from __future__ import annotations

from ..case import Case
from ..run.task import Task
from .base import Finding, Observation, Oracle, group, register

SHARE = 0.125


def _ours(backends: tuple[str, ...]) -> list[str]:
    """This project's own pipelines (another compiler may fuse two results differently)."""
    return sorted(b for b in backends if b.startswith("cpu-"))


class Tupled(Oracle):
    name = "tupled"

    def fits(self, case: Case) -> bool:
        return case.invalid is None and case.sequence is None and bool(_ours(case.backends))

    def wants(self, case: Case) -> bool:
        return self.fits(case) and case.toggle(self.name, SHARE)

    def configure(self, case: Case, task: Task) -> None:
        ours = _ours(task.backends)
        if ours:
            task.tupled = ours[int(case.digest()[8:16], 16) % len(ours)]

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        flagged = [("tupled", r, r.tupled) for r in obs.results if r.ok and r.tupled]
        return group(obs.case, self.name, flagged, obs.case.program.output_type.dtype)


register(Tupled())

__all__ = ["SHARE", "Tupled"]
