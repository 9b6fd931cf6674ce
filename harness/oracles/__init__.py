"""Oracles, registered by name: each turns what a case did into findings.

``error-path`` and ``differential`` judge every case; ``determinism`` an eighth of them;
``causal`` the attention-like cases that ask for it; ``jit-sequence`` the cases that carry a
sequence of calls of one jitted function; each metamorphic relation
(``metamorphic:<name>``) where it fits; ``spec`` every program with a composite (its shared
definition against independent implementations); ``spelling`` every valid program that another
spelling reaches through other frontend code (that spelling's traced graph, interpreted by
NumPy); ``keywords`` every valid program with a reduction (its reductions' keywords written
another way NumPy defines alike, traced and interpreted by NumPy); ``schedule`` every case on
``cpu-vector`` (its structured ops vectorized); ``blas``
every case on a backend with a BLAS stage (the gemm calls it promises are made); ``memory``
every case (an instrumented kernel frees every heap block it allocates); ``tupled``
an eighth of the programs (called twice in one function, and returning several of their
values: each result as alone); ``intermediate`` an eighth of the programs of two or more
equations (one value inside, as its own program's output, judged by ``differential``);
``arguments`` a quarter of the programs (their specialization called with an array of another
shape or dtype, or one too many: each refused with ``TypeError``); ``gpt2-model`` the cases that
carry a GPT-2 model (the compiler's model code on a checkpoint the harness wrote); ``levels``
every case that runs one of our pipelines at -O0 and as shipped (the same bits at both). A new
oracle is one module that subclasses :class:`~harness.oracles.base.Oracle` and calls
``register``; the runner finds it here.
"""

from . import (  # noqa: F401 - registration
    arguments,
    blas,
    differential,
    error_path,
    gpt2,
    intermediate,
    keywords,
    levels,
    memory,
    metamorphic,
    schedule,
    sequence,
    spec,
    spelling,
    structural,
    tupled,
)
from .base import (
    ORACLES,
    Derived,
    Finding,
    Judgement,
    Observation,
    Oracle,
    get,
    register,
    unregister,
)


def judge_results(case, results, refs, names=("error-path", "differential")) -> Judgement:
    """The judgement of the named primary oracles on results already computed (for tests and
    for tools that have outputs from elsewhere)."""
    judgement = Judgement(oracles=list(names))
    obs = Observation(case, list(results), refs, judgement)
    for name in names:
        judgement.findings.extend(get(name).judge(obs, []))
    return judgement


def derived_findings(obs: Observation, derived: list) -> list[tuple[Derived, Finding]]:
    """The primary oracles' findings on each derived task's own case (a program retraced in
    another spelling or form, on one backend), judged against ``obs``'s references, which
    hold for it unchanged: (the task, a finding) pairs; an invalid program's against NumPy's
    error for the derived case itself (its spelling may reach the violation another way: the
    methods' ``v[:len(v)]`` of a 0-d ``v`` is NumPy's TypeError, ``v[:]`` its IndexError). A
    task that crashed or hung is skipped (the runner's finding, on its case)."""
    from ..run.references import numpy_reference

    found = []
    for item, outcome in derived:
        if outcome.status == "ok":
            refs = obs.refs
            if item.task.case.invalid is not None:
                refs = {**refs, "numpy": numpy_reference(item.task.case)}
            judged = judge_results(item.task.case, outcome.value.results, refs)
            found += [(item, finding) for finding in judged.findings]
    return found


def relations() -> list[Oracle]:
    """The metamorphic relations, as registered."""
    return [o for name, o in ORACLES.items() if name.startswith("metamorphic:")]


__all__ = [
    "derived_findings",
    "judge_results",
    "relations",
    "ORACLES",
    "Derived",
    "Finding",
    "Judgement",
    "Observation",
    "Oracle",
    "get",
    "register",
    "unregister",
]
