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

A value that is exactly rounded (``tolerance.exactly_rounded``: casts and arithmetic of the
inputs, no exp or sum on the way) has one right answer, NumPy's, where the program's output,
judged within the error model's bound, does not: a float32 -> bfloat16 cast that truncates (up
to an ulp off) passed any program that went on to an exp. Where the program is not exactly
rounded and such a value rounds on the way (``exact_value``), a quarter of the cases
(``EXACT_SHARE``) judge the nearest one to the output on its own, exactly.
"""

from __future__ import annotations

from typing import Any

from ..case import Case
from ..run.task import Task
from .base import Derived, Finding, Judgement, Observation, Oracle, get, register

SHARE = 0.125
#: The share of the programs with an ``exact_value`` that judge it on its own.
EXACT_SHARE = 0.25


def exact_value(program: Any) -> int | None:
    """The node nearest the output (not the output) whose value is float, reads an input, and
    is computed by exact and correctly rounded equations only, at least one of them rounding;
    None where the whole program is ``exactly_rounded`` (the differential oracle judges its
    output exactly already) or no value is."""
    from compiler import primitives
    from strategies.model import Ref, is_float

    from .tolerance import rounds_at_most_once

    if program.output.kind != "node":
        return None
    exact: list[bool] = []
    rounds: list[bool] = []
    for node in program.nodes:
        prim = primitives.get(node.op)
        nodes = [a.index for a in node.args if isinstance(a, Ref) and a.kind == "node"]
        exact.append(rounds_at_most_once(prim) and all(exact[k] for k in nodes))
        rounds.append(prim.rounding == "correct" or any(rounds[k] for k in nodes))
    if all(exact):  # the program is ``exactly_rounded``: its output is judged to the bit
        return None
    found = [
        k for k, node in enumerate(program.nodes)
        if exact[k] and rounds[k] and k != program.output.index and is_float(node.type.dtype)
        and program.reads_input(Ref("node", k))
    ]  # fmt: skip
    return found[-1] if found else None


def _value_case(case: Case, index: int) -> Case | None:
    """``case`` with the value of node ``index`` as its output (the equations and inputs it
    needs, the same values)."""
    from strategies.model import REJECTIONS, Ref
    from strategies.model.rewrites import drop_unused_subject_inputs, rewrite_subject

    try:
        smaller, kept = drop_unused_subject_inputs(
            rewrite_subject(case.subject, {}, Ref("node", index))
        )
    except (*REJECTIONS, KeyError):
        return None
    return case.with_subject(smaller, [case.inputs[i] for i in kept], kept)


def _judges_exactly(case: Case) -> bool:
    return case.toggle("intermediate:exact", EXACT_SHARE)


def intermediate_case(case: Case) -> Case | None:
    """The case whose output is a value ``case``'s output depends on (a numeric equation that
    reads an input: its ``exact_value`` in ``EXACT_SHARE`` of the cases that have one, else of
    the nearest ones before the output, one drawn from the case's content), with the equations
    and inputs it needs and the same values; None where there is none."""
    from strategies.model import InvalidProgram, Ref

    subject, program = case.subject, case.program
    if isinstance(subject, InvalidProgram) or program.output.kind != "node":
        return None
    exact = exact_value(program)
    if exact is not None and _judges_exactly(case):
        return _value_case(case, exact)

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
    return _value_case(case, candidates[case.draw("intermediate:value") % len(candidates)])


class Intermediate(Oracle):
    name = "intermediate"

    def fits(self, case: Case) -> bool:
        return case.invalid is None and case.sequence is None and len(case.program.nodes) >= 2

    def wants(self, case: Case) -> bool:
        if not self.fits(case):
            return False
        if case.toggle(self.name, SHARE):
            return True
        return _judges_exactly(case) and exact_value(case.program) is not None

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

__all__ = ["EXACT_SHARE", "SHARE", "Intermediate", "exact_value", "intermediate_case"]
