"""The jit-sequence oracle: one jitted function called in sequence, each call judged.

A case that carries a jit sequence (``Case.sequence``, drawn by
``strategies.gen.sequences``) runs its calls in order on one ``compiler.jit`` function per
backend (a ``sequence`` task). Each call is judged on its own:

- ``stale-specialization``: a call that did not trace a specialization of its own (the cache
  answered it), or that failed, must give what the same call gives alone on a fresh jit of the
  same function (same bits, or the same failure): the cache confused it with an earlier call
  (same shapes in other dtypes, other statics, another argument tree, a captured array changed
  in place);
- ``overwritten``: no call writes into an array it was given, and no later call writes into an
  earlier call's output (an output passed back in, an array passed twice);
- ``mismatch`` / ``wrong-shape`` / ``wrong-dtype``: each call's output against NumPy evaluating
  that call's own program (its variant, dtypes and statics, checked by the ProgramBuilder) on its
  arrays, through the error model (NumPy and the extended-precision truth; not JAX, to stay
  cheap).

Standalone reproducers replay the calls with the same recorder and call :func:`verdict`, which
applies the same judgement, so they fail exactly when this oracle does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from strategies.model import Program

from ..case import Case
from ..run.task import BackendResult
from .base import Derived, Finding, Observation, Oracle, per_backend, register

NAME = "jit-sequence"


@dataclass
class CallOutcome:
    """One call as judged: its answer in sequence, and alone (where that was run)."""

    ok: bool
    output: Any = None
    error: str = ""
    traced: bool = True
    alone: CallOutcome | None = None
    overwritten: str = ""


def _same(a: Any, b: Any) -> bool:
    """The same bits, NaN payloads aside: the call and the call alone run the same code, so a
    zero of the other sign is a stale kernel's (``x * 0.0`` for ``x * -0.0``)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.tobytes() == b.tobytes():
        return True
    floating = a.dtype.kind == "f"
    if not np.array_equal(a, b, equal_nan=floating):
        return False
    return not floating or _nan_signs(a, b)


def _nan_signs(a: np.ndarray, b: np.ndarray) -> bool:
    """Do ``a`` and ``b`` differ in sign only where both are NaN (a payload, not a value)?"""
    differs = np.signbit(a) != np.signbit(b)
    return bool(np.all(np.isnan(a)[differs] & np.isnan(b)[differs]))


def _describe(outcome: CallOutcome) -> str:
    if not outcome.ok:
        return f"raised {outcome.error}"[:300]
    out = np.asarray(outcome.output)
    flat = np.array2string(out.reshape(-1)[:6], precision=6, threshold=6)
    return f"{out.dtype}{list(out.shape)} {flat}"


def judge_call(program: Program, inputs: list[np.ndarray], actual: Any) -> tuple[str, str] | None:
    """(kind, reason) if ``actual`` is not ``program``'s answer on ``inputs`` by the error model
    (NumPy's shape and dtype, values against the truth); None if it is, or NumPy rejects it."""
    from ..run.references import references
    from .differential import wrong_output

    case = Case(program, list(inputs), ())
    return wrong_output(case, references(case, False), actual)


def problems(
    outcomes: Sequence[CallOutcome],
    programs: Sequence[Program | None],
    inputs: Sequence[list[np.ndarray] | None],
) -> list[tuple[int, str, str]]:
    """(call, kind, detail) for every call that fails (at most one problem per call)."""
    found = []
    for index, outcome in enumerate(outcomes):
        alone = outcome.alone
        if outcome.overwritten:
            found.append((index, "overwritten", outcome.overwritten))
            continue
        if alone is not None and (
            outcome.ok != alone.ok or (outcome.ok and not _same(outcome.output, alone.output))
        ):
            detail = f"in sequence it {_describe(outcome)}; alone on a fresh jit {_describe(alone)}"
            found.append((index, "stale-specialization", detail.replace("it raised", "raised")))
            continue
        if outcome.ok and programs[index] is not None and inputs[index] is not None:
            wrong = judge_call(programs[index], inputs[index], outcome.output)
            if wrong is not None:
                found.append((index, *wrong))
    return found


def _outcome(result: BackendResult) -> CallOutcome:
    error = f"{result.error_type}: {result.message}" if not result.ok else ""
    return CallOutcome(
        result.ok,
        result.output,
        error,
        bool(result.traced),
        None if result.alone is None else _outcome(result.alone),
        "" if result.independent is not False else result.message or "an array was written",
    )


class JitSequenceOracle(Oracle):
    """Runs the case's jit sequence per backend and judges every call (module docstring)."""

    name = NAME

    def fits(self, case: Case) -> bool:
        return case.invalid is None and "sequence" in case.extra

    def wants(self, case: Case) -> bool:
        return self.fits(case)

    def plan(self, obs: Observation) -> list[Derived]:
        return per_backend(obs, "sequence", "sequence")

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        sequence = obs.case.sequence
        findings: list[Finding] = []
        for _, outcome in derived:
            if outcome.status != "ok":
                continue  # the runner made it a crash or hang finding
            results: list[BackendResult] = outcome.value.results
            outcomes = [_outcome(r) for r in results]
            programs, inputs = [], []
            for index in range(len(results)):
                previous = results[index - 1] if index else None
                feeds = any(s == -2 for s in sequence.calls[index].sources)
                if feeds and (previous is None or not previous.ok):
                    programs.append(None)
                    inputs.append(None)
                    continue
                programs.append(sequence.program(index))
                inputs.append(sequence.inputs(index, previous.output if previous else None))
            by_kind: dict[str, list[tuple[int, str]]] = {}
            for index, kind, detail in problems(outcomes, programs, inputs):
                by_kind.setdefault(kind, []).append((index, detail))
            for kind, items in by_kind.items():
                index = items[0][0]
                lines = [
                    f"call {i} ({sequence.calls[i].note or 'first call'}): {d}" for i, d in items
                ]
                result = results[index]
                stale = kind == "stale-specialization"
                findings.append(
                    Finding(
                        kind,
                        (result.backend,),
                        self.name,
                        "\n".join(lines),
                        obs.case,
                        sequence.program(index).output_type.dtype,
                        result,
                        stage=result.stage,
                        # The jit cache's key, whatever the program: one entry per change it
                        # forgets (a key without the dtypes made an entry per program).
                        program_free=stale,
                        facet=change_of(sequence, index) if stale else "",
                    )
                )
        return findings


def change_of(sequence: Any, index: int) -> str:
    """What call ``index`` of ``sequence`` changed from the call before it, as a stale call's
    facet (``Signature.facet``): "dtype", "shape", "static", "structure" (another argument tree or
    variant), "captured" (the captured array written), "alias" (an array passed twice),
    "feedback" (the previous output passed back), joined by "+" where several; "values" where
    only the arrays' values changed; "first" for the first call."""
    from strategies.model.sequence import OUTPUT, skeleton_text

    if index <= 0:
        return "first"
    call, before = sequence.calls[index], sequence.calls[index - 1]
    changed = []
    if call.dtypes != before.dtypes:
        changed.append("dtype")
    if call.shapes != before.shapes:
        changed.append("shape")
    if repr(call.statics) != repr(before.statics):  # -0.0 == 0.0, not as a static
        changed.append("static")
    if call.variant != before.variant or skeleton_text(call.skeleton) != skeleton_text(
        before.skeleton
    ):
        changed.append("structure")
    if call.captured is not None:
        changed.append("captured")
    if any(source >= 0 for source in call.sources):
        changed.append("alias")
    if OUTPUT in call.sources:
        changed.append("feedback")
    return "+".join(changed) or "values"


def verdict(recorder: Any, programs: Sequence[str]) -> int:
    """For reproducers: judge the calls ``recorder`` made as the oracle does (each program is
    that call's own program as JSON); print each call's verdict; 1 if any call fails."""
    parsed = [Program.from_json(p) for p in programs]
    outcomes = []
    inputs = []
    for index, record in enumerate(recorder.records):
        outcome = _recorded(record)
        if not record.ok or not record.traced:
            outcome.alone = _recorded(recorder.alone(index))
        outcome.overwritten = recorder.overwritten(index)
        outcomes.append(outcome)
        inputs.append(list(record.inputs) + recorder.captured_inputs(index))
    found = {index: (kind, detail) for index, kind, detail in problems(outcomes, parsed, inputs)}
    for index, outcome in enumerate(outcomes):
        how = "traced" if recorder.records[index].traced else "from the cache"
        if index in found:
            kind, detail = found[index]
            print(f"call {index} ({how}) FAILS: {kind}: {detail}")
        else:
            print(f"call {index} ({how}): ok, {_describe(outcome)}")
    return 1 if found else 0


def _recorded(record: Any) -> CallOutcome:
    if record.error is not None:
        return CallOutcome(False, error=f"{type(record.error).__name__}: {record.error}")
    return CallOutcome(True, record.snapshot, traced=record.traced)


register(JitSequenceOracle())

__all__ = ["NAME", "CallOutcome", "JitSequenceOracle", "judge_call", "problems", "verdict"]
