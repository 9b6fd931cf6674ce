"""The ``spelling`` oracle: every spelling of the program reaches the frontend, on every case.

A case (a valid program or an invalid one) is traced in one spelling (``Case.spelling``: the
array namespace and Python's operators, NumPy's own functions dispatched to the traced tensor,
or the tensor's methods), so the dispatch
code of the other two sees the program only when a later case happens to draw them: a method
that drops ``keepdims``, or a ufunc the tensor refuses, waited for one rare (op, attribute,
spelling) draw. Here each other spelling that reaches the frontend another way for this program
(``Primitive.respelled``) is traced too, in the isolated worker, and its graph evaluated by
NumPy (the ``graph-numpy`` backend: no MLIR, a few milliseconds); the primary oracles judge it
against the case's own references (NumPy's semantics do not depend on the spelling). The
case's own spelling passed every backend (this oracle runs only then), so a failure is the
other spelling's dispatch, in the frontend.

A finding stays on the case as drawn (minimizing and replaying it run this oracle again) and
names the failing spelling in its oracle, ``spelling[<name>]``; its reproducer prints the
program in that spelling.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from compiler import primitives

from ..run.task import Task
from .base import Derived, Finding, Observation, Oracle, register

#: The backend a respelled program runs on: the traced graph interpreted by NumPy.
BACKEND = "graph-numpy"


def other_spellings(case: Any) -> list[str]:
    """The spellings other than ``case``'s own in which some op of its program is traced
    through other code than in the case's spelling."""
    own = case.spelling
    ops = [primitives.get(op) for op in dict.fromkeys(case.subject.ops)]  # an invalid node's too
    return [
        spelling
        for spelling in primitives.SPELLINGS
        if spelling != own and any(p.respelled(spelling) or p.respelled(own) for p in ops)
    ]


def failing_spelling(oracle: str) -> str | None:
    """The spelling a ``spelling[<name>]`` finding failed in, or None for another oracle."""
    name, bracket, rest = oracle.partition("[")
    if name != Spelling.name or not bracket:
        return None
    return rest.rstrip("]") or None


class Spelling(Oracle):
    name = "spelling"

    def fits(self, case: Any) -> bool:
        # Invalid programs too (their rejection is decided while tracing, a few ms): a method
        # that reversed every axis for x.transpose(()) raised nothing, where NumPy's ValueError
        # was met by the other two spellings; one invalid case in three is written as methods.
        return "sequence" not in case.extra

    def wants(self, case: Any) -> bool:
        return self.fits(case) and bool(other_spellings(case))

    def plan(self, obs: Observation) -> list[Derived]:
        return [
            Derived(spelling, Task(obs.case.respelled(spelling), (BACKEND,)))
            for spelling in other_spellings(obs.case)
        ]

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        from . import derived_findings

        return [
            replace(
                found,
                oracle=f"{self.name}[{item.label}]",
                detail=f"traced in the {item.label} spelling: {found.detail}",
                case=obs.case,
            )
            for item, found in derived_findings(obs, derived)
        ]


register(Spelling())

__all__ = ["BACKEND", "Spelling", "failing_spelling", "other_spellings"]
