"""Which known upstream bug a failure on an external compiler's backend is (IREE's and XLA's
``known_issue_of``): asked by attribution for its verdict and by a session before it stores a
finding (``session.known``)."""

from __future__ import annotations

from typing import Any

from compiler import backends

from ..case import Case
from ..oracles.base import Finding


def known_issue(
    case: Case, backend: str, message: str = "", outputs: list[Any] | None = None
) -> dict[str, str] | None:
    """The known bug of the compiler behind ``backend`` that a failure of ``case`` there is
    (``known_issue_of(graph, message, inputs=...)``: IREE's and XLA's), if any; a jit sequence's
    wrong answer is the first such issue of any of its calls. ``outputs``: the backend's
    answer, where known (a known issue may then have to predict it). Raises what tracing
    raises."""
    try:
        explain = getattr(backends.get(backend), "known_issue_of", None)
    except ValueError:
        return None
    if explain is None or case.invalid is not None:
        return None
    sequence = case.sequence
    if sequence is not None and not message:
        # A wrong answer of a jit sequence: each call on its own program and inputs (XLA's
        # flushing showed on the second call, whose values held a subnormal).
        answers = sequence.numpy_outputs()  # a call may take the output of the one before it
        plain = case.without_sequence()
        for index in range(len(sequence.calls)):
            previous = answers[index - 1] if index else None
            try:
                call = plain.with_subject(sequence.program(index), sequence.inputs(index, previous))
            except (ValueError, TypeError):
                continue  # a call NumPy rejects, or one fed a failed call's output
            issue = known_issue(call, backend, message)
            if issue:
                return issue
        return None
    import compiler

    _, graph, _ = compiler.jit(case.traced_function()).trace(*case.inputs)
    if outputs is None:
        return explain(graph, message, inputs=list(case.inputs))
    return explain(graph, message, inputs=list(case.inputs), outputs=outputs)


def failing_outputs(finding: Finding, backend: str) -> list[Any] | None:
    """``backend``'s answer to the case in a differential ``finding`` (its program's outputs),
    where the finding holds it (another oracle's result answers other inputs or programs)."""
    result = finding.result
    if finding.oracle != "differential" or result is None or result.backend != backend:
        return None
    if result.status != "ok":
        return None
    if finding.case.sequence is not None or result.output is None:
        return None
    return [result.output]


__all__ = ["failing_outputs", "known_issue"]
