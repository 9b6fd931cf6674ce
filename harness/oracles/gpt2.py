"""The gpt2-model oracle: the compiler's GPT-2 code (``compiler/model.py``) on a checkpoint the
harness wrote, against the model written as one program.

A case that carries a GPT-2 model (``Case.gpt2``, drawn by ``session.generate.gpt2_cases``)
runs a ``model`` task per backend (``harness/run/gpt2.py``): the checkpoint, under HuggingFace's
names and in the layout the model says (prefix, tied head, mask buffers, stored dtype, name
order, dict or safetensors file), is loaded by ``compiler.model``; the loaded config and every
tensor must be the checkpoint's; the logits of ``forward_numpy`` and of ``forward`` on the
backend are judged by the error model against the references of the whole forward pass as one
program (``strategies.model.gpt2.program``: NumPy, the extended-precision truth); greedy
generation must pick what each step's forward pass on the backend ranks first; a call the model
must refuse must raise the error class owed. Findings do not depend on the case's program (its
subject is only the embedding): their facet says where they live (``loader``, ``composition``,
``compiled``, ``generation``, or the refused call's name).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strategies.model.gpt2 import INVALID, LEADING, ModelSpec, program, sublayer

from ..case import Case
from ..run.gpt2 import full_inputs, problems, usable
from .base import Derived, Finding, Observation, Oracle, per_backend, register

NAME = "gpt2-model"


def model_case(case: Case) -> tuple[ModelSpec, Case] | None:
    """(spec, the whole forward pass as a case on the model's inputs) of ``case``'s GPT-2
    model, or None where it carries none that its inputs fit."""
    try:
        model = case.gpt2
    except (ValueError, TypeError):
        return None
    if model is None or case.invalid is not None or len(case.inputs) != LEADING:
        return None
    spec, seed = model
    inputs = full_inputs(spec, seed, list(case.inputs))
    if not usable(spec, inputs):
        return None
    return spec, Case(program(spec), inputs, tuple(case.backends), origin="gpt2/forward")


def judge_logits(case: Case, refs: dict[str, Any]) -> Callable[[Any], tuple[str, str] | None]:
    """The error model's judgement of logits as ``case``'s (the forward pass) output: (kind,
    reason) where they are wrong, None where right or where NumPy rejects the program."""
    from .differential import wrong_output

    return lambda logits: wrong_output(case, refs, logits)


def references_of(case: Case) -> dict[str, Any]:
    """The forward pass's references: NumPy and the extended-precision truth (not JAX, to stay
    cheap: the whole model is one program)."""
    from ..run.references import references

    return references(case, False)


class GPT2ModelOracle(Oracle):
    """Runs the case's GPT-2 model per backend and judges it (module docstring)."""

    name = NAME

    def fits(self, case: Case) -> bool:
        return model_case(case) is not None

    def wants(self, case: Case) -> bool:
        return self.fits(case)

    def plan(self, obs: Observation) -> list[Derived]:
        return per_backend(obs, "gpt2 model", "model")

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        made = model_case(obs.case)
        if made is None:
            return []
        spec, forward = made
        judge = judge_logits(forward, references_of(forward))
        refs_of = obs.references or references_of
        findings: list[Finding] = []
        for _, outcome in derived:
            if outcome.status != "ok":
                continue  # the runner made it a crash or hang finding
            for result in outcome.value.results:
                run = result.model
                if run is None:
                    continue
                for kind, facet, detail in problems(spec, run, judge):
                    calls = compiled_calls(spec, run, facet)
                    narrowed = wrong_sublayer(calls, result.backend, refs_of)
                    if narrowed:
                        findings.extend(narrowed)
                        continue
                    findings.append(
                        Finding(
                            kind,
                            (result.backend,),
                            self.name,
                            detail,
                            obs.case,
                            "float64",
                            result,
                            stage="model",
                            program_free=True,
                            facet=facet,
                        )
                    )
        return findings


def compiled_calls(spec: ModelSpec, run: Any, facet: str) -> list[dict[str, Any]]:
    """The recorded sublayer calls a problem of ``facet`` is narrowed to: where only the
    compiled forward pass is wrong (or only it takes a wrong error path, forward_numpy refusing
    as owed), the sublayer call that was wrong is the finding, an ordinary program on its own
    arguments (its layer found like any program's); [] for every other facet."""
    if facet == "compiled":
        return run.calls
    if facet in run.refused and run.refused[facet][1] == INVALID[facet]:
        return run.invalid_calls.get(facet, [])
    return []


def sublayer_case(call: dict[str, Any], backend: str) -> Case | None:
    """A recorded sublayer call (``harness.run.gpt2.ModelRun.calls``) as its own case on
    ``backend``, or None where it is not one (another function's arguments)."""
    try:
        heads = int(call["kwargs"].get("heads", 1))
        subject = sublayer(call["name"], call["args"], heads)
    except (ValueError, TypeError, KeyError, NotImplementedError):
        return None
    return Case(subject, list(call["args"]), (backend,), origin=f"gpt2/{call['name']}")


def wrong_sublayer(
    calls: list[dict[str, Any]], backend: str, refs_of: Callable[[Case], dict[str, Any]]
) -> list[Finding]:
    """The findings of the first recorded sublayer call that the primary oracles (error path,
    differential) reject as its own case, on what the call gave; [] where every call is right
    on its own (the composition is wrong, not a sublayer)."""
    from ..run.task import BackendResult
    from . import judge_results

    for call in calls:
        case = sublayer_case(call, backend)
        if case is None:
            continue
        result = call.get("error") or BackendResult(backend, "ok", output=call.get("output"))
        judgement = judge_results(case, [result], refs_of(case))
        if judgement.findings:
            return judgement.findings
    return []


register(GPT2ModelOracle())

__all__ = [
    "NAME",
    "GPT2ModelOracle",
    "compiled_calls",
    "judge_logits",
    "model_case",
    "references_of",
    "sublayer_case",
    "wrong_sublayer",
]
