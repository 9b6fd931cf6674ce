"""Minimization of a failing case, and the pipeline bisection of the minimized case.

Hypothesis shrinks what it generated; this pass works on any case (a crash found outside
Hypothesis, a corpus entry, a leftover write-ahead record). It is greedy delta debugging over the
program model: end the program early, bypass nodes, drop unused inputs, shrink dimensions,
simplify values — keeping each step only if the *same* failure (kind, oracle, and an overlapping
set of backends) still happens. The bisection then names the smallest pipeline change that makes
the failure disappear: fusion off, BLAS off, LLVM at -O0.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from strategies.program import Program

from .case import Case
from .oracles import Finding

Predicate = Callable[[Case], Finding | None]


@dataclass
class Minimized:
    case: Case
    finding: Finding
    steps: list[str] = field(default_factory=list)
    evaluations: int = 0
    seconds: float = 0.0


def same_failure(original: Finding, candidate: Finding) -> bool:
    return (
        candidate.kind == original.kind
        and candidate.oracle == original.oracle
        and bool(set(candidate.backends) & set(original.backends))
    )


def _drop_unused(program: Program, inputs: list[np.ndarray]) -> tuple[Program, list[np.ndarray]]:
    smaller, kept = program.drop_unused_inputs()
    return smaller, [inputs[i] for i in kept]


def _variants_structure(case: Case) -> list[tuple[str, Case]]:
    """Smaller programs: an earlier output, a bypassed node."""
    program = case.program
    found = []
    for index in range(len(program.nodes) - 1):
        try:
            smaller, inputs = _drop_unused(program.subprogram(index), case.inputs)
        except (ValueError, TypeError):
            continue
        found.append((f"output node {index}", _with(case, smaller, inputs)))
    for index in reversed(range(len(program.nodes))):
        try:
            smaller = program.without_node(index).dead_code_eliminated()
            smaller, inputs = _drop_unused(smaller, case.inputs)
        except (ValueError, TypeError, IndexError):
            continue
        found.append(
            (f"bypass node {index} ({program.nodes[index].op})", _with(case, smaller, inputs))
        )
    return found


def _with(case: Case, program: Program, inputs: list[np.ndarray]) -> Case:
    return Case(program, inputs, case.backends, case.check, case.origin, [], dict(case.extra))


def _variants_shapes(case: Case) -> list[tuple[str, Case]]:
    """The same program with one input dimension made smaller (where the program allows it)."""
    found = []
    data = case.program.to_dict()
    for i, inp in enumerate(data["inputs"]):
        for axis, extent in enumerate(inp["shape"]):
            for smaller in sorted({extent // 2, extent - 1, 2, 1}, reverse=True):
                if not 1 <= smaller < extent:
                    continue
                changed = {**data, "inputs": [dict(x) for x in data["inputs"]]}
                shape = list(inp["shape"])
                shape[axis] = smaller
                changed["inputs"][i]["shape"] = shape
                if changed["inputs"][i].get("bound") is not None:
                    continue
                try:
                    program = Program.from_dict(changed)
                except (ValueError, TypeError, IndexError, KeyError):
                    continue
                inputs = list(case.inputs)
                index = tuple(
                    slice(0, smaller) if a == axis else slice(None) for a in range(len(shape))
                )
                inputs[i] = np.require(inputs[i][index], requirements="C")
                found.append(
                    (f"input {i} axis {axis}: {extent} -> {smaller}", _with(case, program, inputs))
                )
                break  # the largest reduction that builds; later rounds shrink further
    return found


def _variants_joint(case: Case) -> list[tuple[str, Case]]:
    """One extent made smaller in every input at once: the dims are distinct (rectangular), so
    an extent names one logical dimension, and shrinking it everywhere keeps the program valid."""
    found = []
    data = case.program.to_dict()
    extents = sorted({d for inp in data["inputs"] for d in inp["shape"] if d > 1}, reverse=True)
    for extent in extents:
        for smaller in sorted({extent // 2, extent - 1, 2, 1}, reverse=True):
            if not 1 <= smaller < extent:
                continue
            changed = {**data, "inputs": [dict(x) for x in data["inputs"]]}
            inputs = list(case.inputs)
            for i, inp in enumerate(changed["inputs"]):
                if extent in inp["shape"] and inp.get("bound") is None:
                    inp["shape"] = [smaller if d == extent else d for d in inp["shape"]]
                    index = tuple(
                        slice(0, smaller) if d == extent else slice(None) for d in inputs[i].shape
                    )
                    inputs[i] = np.require(inputs[i][index], requirements="C")
            try:
                program = Program.from_dict(changed)
            except (ValueError, TypeError, IndexError, KeyError):
                continue
            found.append(
                (f"extent {extent} -> {smaller} in every input", _with(case, program, inputs))
            )
            break
    return found


def _variants_values(case: Case) -> list[tuple[str, Case]]:
    found = []
    for i, array in enumerate(case.inputs):
        if array.dtype.kind != "f":
            continue
        for name, simpler in (
            ("rounded", np.round(array)),
            ("rounded to 1 decimal", np.round(array, 1)),
        ):
            simpler = simpler.astype(array.dtype)
            if np.array_equal(simpler, array):
                continue
            inputs = list(case.inputs)
            inputs[i] = simpler
            found.append((f"input {i} {name}", _with(case, case.program, inputs)))
    return found


def minimize(
    case: Case,
    finding: Finding,
    predicate: Predicate,
    budget_seconds: float = 60.0,
    max_evaluations: int = 200,
) -> Minimized:
    """Greedy fixpoint over the variant generators, within the budget."""
    start = time.perf_counter()
    best = Minimized(case, finding)
    progress = True
    while progress:
        progress = False
        for generator in (_variants_structure, _variants_joint, _variants_shapes, _variants_values):
            for description, candidate in generator(best.case):
                if (
                    time.perf_counter() - start > budget_seconds
                    or best.evaluations >= max_evaluations
                ):
                    best.seconds = time.perf_counter() - start
                    return best
                if candidate.size >= best.case.size and generator is not _variants_values:
                    continue
                best.evaluations += 1
                result = predicate(candidate)
                if result is not None and same_failure(finding, result):
                    best.case, best.finding = candidate, result
                    best.steps.append(description)
                    progress = True
                    break
            if progress:
                break
    best.seconds = time.perf_counter() - start
    return best


def bisect_pipeline(case: Case, finding: Finding, predicate: Predicate) -> dict[str, str]:
    """Which single pipeline change makes the failure disappear, per failing backend."""
    changes = {}
    for backend in sorted(set(finding.backends)):
        base = backend.split("@")[0]
        alternatives = []
        if not base.endswith("-unfused"):
            alternatives.append(("fusion off", f"{base}-unfused"))
        if "blas" in base:
            alternatives.append(("BLAS off", base.replace("blas", "loops")))
        alternatives.append(("LLVM -O0", f"{base}@O0"))
        outcome = {}
        for name, target in alternatives:
            candidate = Case(case.program, case.inputs, (target,), case.check, case.origin)
            result = predicate(candidate)
            outcome[name] = "still fails" if result is not None else "passes"
        fixes = [name for name, verdict in outcome.items() if verdict == "passes"]
        changes[backend] = (
            (
                f"disappears with: {', '.join(fixes)}"
                if fixes
                else "fails under every single change (frontend or builder)"
            )
            + " ["
            + "; ".join(f"{k}: {v}" for k, v in outcome.items())
            + "]"
        )
    return changes
