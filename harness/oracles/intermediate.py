"""The intermediate oracle: a value inside a program is judged as its own program's output.

The differential oracle sees only a program's output, and a later step can hide what an
earlier one got wrong: a float64 ``log`` that took a subnormal for a normal number (off by 35)
went unseen when its result was cast, compared or multiplied by a causal mask before it was
returned (a planted mutant, ``min_normal`` wrong in ``compiler/vector/vecmath.py``, survived
every 60 s session). For an eighth of the programs of two or more equations, one value the
output depends on, drawn from the case, becomes the output of a program of its own (the
equations it needs, the inputs it reads, the same values), which runs on the case's backends
and is judged like any case by the differential oracle against its own references.

A finding is that smaller program's own differential finding: its case is the program that
fails, so the corpus keeps (and replays, and minimizes) the program whose output is wrong.
"""

from __future__ import annotations

from ..case import Case
from ..run.task import Task
from .base import Derived, Finding, Judgement, Observation, Oracle, get, register

SHARE = 0.125


def intermediate_case(case: Case) -> Case | None:
    """The case whose output is a value ``case``'s output depends on (a numeric equation that
    reads an input: of the nearest ones before the output, one drawn from the case's digest),
    with the equations and inputs it needs and the same values; None where there is none."""
    from strategies.model import REJECTIONS, InvalidProgram, Ref
    from strategies.model.rewrites import drop_unused_subject_inputs, rewrite_subject

    subject, program = case.subject, case.program
    if isinstance(subject, InvalidProgram) or program.output.kind != "node":
        return None

    def operands(indices: set[int]) -> set[int]:
        return {
            a.index for k in indices for a in program.nodes[k].args
            if isinstance(a, Ref) and a.kind == "node"
        }  # fmt: skip

    def fits(k: int) -> bool:  # a program's output is a numeric tensor that reads an input
        return program.nodes[k].type.dtype != "bool" and program.reads_input(Ref("node", k))

    # The nearest values before the output first: the last steps are what hide a wrong value
    # most often (a cast, a comparison, a maximum, a matmul by a mask).
    candidates: list[int] = []
    layer, seen = operands({program.output.index}), set()
    while layer and not candidates:
        candidates = sorted(k for k in layer if fits(k))
        seen |= layer
        layer = operands(layer) - seen
    if not candidates:
        return None
    index = candidates[int(case.digest()[24:32], 16) % len(candidates)]
    try:
        smaller, kept = drop_unused_subject_inputs(rewrite_subject(subject, {}, Ref("node", index)))
    except (*REJECTIONS, KeyError):
        return None
    return case.with_subject(smaller, [case.inputs[i] for i in kept], kept)


class Intermediate(Oracle):
    name = "intermediate"

    def fits(self, case: Case) -> bool:
        return case.invalid is None and case.sequence is None and len(case.program.nodes) >= 2

    def wants(self, case: Case) -> bool:
        return self.fits(case) and case.toggle(self.name, SHARE)

    def plan(self, obs: Observation) -> list[Derived]:
        if not obs.refs["numpy"].ok:
            return []
        smaller = intermediate_case(obs.case)
        if smaller is None:
            return []
        return [Derived(self.name, Task(smaller), {"case": smaller})]

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        differential = get("differential")
        findings: list[Finding] = []
        for item, outcome in derived:
            if outcome.status != "ok" or obs.references is None:
                continue  # the runner reports a derived task that crashed or hung
            smaller: Case = item.info["case"]
            refs = obs.references(smaller)
            own = Observation(smaller, outcome.value.results, refs, Judgement(), obs.references)
            findings.extend(differential.judge(own, []))
        return findings


register(Intermediate())

__all__ = ["SHARE", "Intermediate", "intermediate_case"]
