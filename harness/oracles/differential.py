"""The differential oracle: every backend against the references, through the error model.

Shape and dtype must be NumPy's exactly; values are judged against the extended-precision truth
with the bound of ``tolerance`` (widened by NumPy's and JAX's own errors against the truth, and
element by element by the perturbed evaluations').
A backend that *is* a reference's implementation (``xla-cpu`` is ``jax.jit``) is judged without
that reference. NumPy-vs-JAX disagreements are *reference ambiguities*, kept apart and never
counted as compiler bugs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..run.references import Reference, deepen, perturbed_outputs
from ..run.task import BackendResult
from ..run.undetermined import COUPLED
from . import tolerance
from .base import Finding, Observation, Oracle, group, register


def yardstick(refs: dict[str, Reference]) -> np.ndarray:
    """The truth, or NumPy's answer where the truth could not be computed."""
    truth = refs.get("truth")
    return truth.output if truth is not None and truth.ok else refs["numpy"].output


def _declared(backend: str, name: str, default: object) -> object:
    """The attribute ``name`` of the backend named ``backend`` (without its ``@`` level), or
    ``default`` where it has none or the name is none of a backend's."""
    if not backend:
        return default
    from compiler import backends

    try:
        found = backends.get(backend.split("@")[0])
    except (ValueError, TypeError):
        return default
    return getattr(found, name, default)


def shared_with(backend: str) -> tuple[str, ...]:
    """The references computed by ``backend``'s own implementation (its ``shares``: JAX for
    ``xla-cpu``), which must not judge it: their errors would excuse its own."""
    return tuple(_declared(backend, "shares", ()))


def rounds_as_numpy(backend: str) -> bool:
    """Does ``backend`` round each operation as NumPy does, so that an ``exactly_rounded``
    program has NumPy's answer there to the bit (its ``rounds_as_numpy``; ours and IREE's do,
    XLA's does not)?"""
    return bool(_declared(backend, "rounds_as_numpy", True))


def reference_outputs(
    refs: dict[str, Reference], shape: tuple[int, ...], backend: str = ""
) -> list[np.ndarray]:
    """NumPy's and (where it agrees in shape, and is not judged wrong: ``judge_jax``) JAX's
    outputs in the program's dtypes; for ``backend``, without the references it shares an
    implementation with."""
    others = [refs["numpy"].output]
    jax_ref = refs.get("jax")
    usable = jax_ref is not None and jax_ref.ok and jax_ref.output.shape == shape
    if usable and jax_ref.within_model is not False and "jax" not in shared_with(backend):
        others.append(jax_ref.output)
    return others


#: The backend JAX's own answer is judged as (``judge_jax``): XLA's, which rounds otherwise
#: than NumPy and is judged without the JAX reference.
JAX_AS = "xla-cpu"


def judge_jax(case: Any, refs: dict[str, Reference]) -> None:
    """Judge JAX's answer once, as ``xla-cpu``'s would be (NumPy, the truth and the perturbed
    runs; ``Reference.within_model``): one the error model rejects measures no conditioning,
    so it widens no other backend's bound. LLVM rewrites ``pow(8.0, x)`` as ``exp2(3.0 * x)``
    in XLA's kernels as it did in ours, and XLA's 355 ulps had let ours pass the same wrong
    answer, each excusing the other."""
    jax_ref = refs.get("jax")
    if jax_ref is None or not jax_ref.ok or jax_ref.within_model is not None:
        return
    if not refs["numpy"].ok or jax_ref.output.shape != refs["numpy"].output.shape:
        return
    jax_ref.within_model = _against(case, refs, jax_ref.output, JAX_AS).ok


def against_references(
    case: Any, refs: dict[str, Reference], out: np.ndarray, backend: str = ""
) -> tolerance.Verdict:
    """The error model's verdict on ``out`` (of NumPy's shape and dtype) as ``backend``'s
    output of ``case``: the one judgement of a value, for this oracle and any other that asks
    whether an output is right (the tupled oracle's nested call, the jit-sequence oracle's
    calls, the reproducers). Any value is right at the coupled reference's unbounded elements
    (``run.undetermined``). An answer refused is judged again with more perturbed runs
    (``references.deepen``, added to ``refs``): a refusal stands against every run drawn.
    JAX's answer counts as a reference only where it is right itself (``judge_jax``)."""
    judge_jax(case, refs)
    return _against(case, refs, out, backend)


def _against(
    case: Any, refs: dict[str, Reference], out: np.ndarray, backend: str
) -> tolerance.Verdict:
    program = case.program

    def verdict() -> tolerance.Verdict:
        free = getattr(refs.get(COUPLED), "unbounded", None)
        return tolerance.compare(
            out, yardstick(refs), reference_outputs(refs, out.shape, backend),
            tolerance.error_steps(program), tolerance.working_dtype(program),
            local=perturbed_outputs(refs, out.shape),
            exact=tolerance.exactly_rounded(program) and rounds_as_numpy(backend),
            coupled=tolerance.couples(program), signed_zeros=tolerance.signs_settled(program),
            numpy=refs["numpy"].output, unbounded=free,
        )  # fmt: skip

    first = verdict()
    if first.ok or not deepen(case, refs):
        return first
    return verdict()


def misshapen(out: np.ndarray, expected: np.ndarray) -> tuple[str, str] | None:
    """("wrong-shape" or "wrong-dtype", reason) where ``out`` has not NumPy's ``expected`` shape
    and dtype, else None: what is checked before any value is judged."""
    if out.shape != expected.shape:
        return "wrong-shape", f"shape {out.shape}, NumPy {expected.shape}"
    if out.dtype != expected.dtype:
        return "wrong-dtype", f"dtype {out.dtype}, NumPy {expected.dtype}"
    return None


def wrong_output(
    case: Any, refs: dict[str, Reference], out: Any, backend: str = ""
) -> tuple[str, str] | None:
    """(kind, reason) where ``out`` is not ``case``'s output by the error model (NumPy's shape
    and dtype, then ``against_references``); None where it is, or where NumPy rejects the
    program (nothing to judge it by). For oracles that judge an output of their own (a jit
    sequence's call, a GPT-2 model's logits)."""
    if not refs["numpy"].ok:
        return None
    out = np.asarray(out)
    wrong = misshapen(out, refs["numpy"].output)
    if wrong is not None:
        return wrong
    verdict = against_references(case, refs, out, backend)
    return None if verdict.ok else ("mismatch", verdict.reason)


class Differential(Oracle):
    name = "differential"
    primary = True

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        case, refs, judgement = obs.case, obs.refs, obs.judgement
        numpy_ref = refs["numpy"]
        if case.invalid is not None or not numpy_ref.ok:
            return []
        program = case.program
        flagged: list[tuple[str, BackendResult, str]] = []
        for result in obs.results:
            if not result.ok:
                continue
            out = np.asarray(result.output)
            wrong = misshapen(out, numpy_ref.output)
            if wrong is not None:
                flagged.append((wrong[0], result, wrong[1]))
                continue
            verdict = against_references(case, refs, out, result.backend)
            judgement.errors[result.backend] = verdict.max_ulps
            judgement.margins[result.backend] = verdict.excess
            if not verdict.ok:
                flagged.append(("mismatch", result, verdict.reason))
        if "jax" in refs:
            judgement.ambiguities.extend(self._ambiguity(case, refs))
        findings = group(case, self.name, flagged, program.output_type.dtype)
        failing = {r.backend for _, r, _ in flagged}
        passing = [r.backend for r in obs.results if r.ok and r.backend not in failing]
        for finding in findings:
            if finding.kind == "mismatch" and passing:
                # The backends disagree with each other: name the ones that got it right.
                finding.detail += f"\nagrees with the references: {', '.join(passing)}"
        return findings

    @staticmethod
    def _ambiguity(case, refs: dict[str, Reference]) -> list[str]:
        numpy_ref, jax_ref = refs["numpy"], refs["jax"]
        if not jax_ref.ok:
            return [f"JAX failed where NumPy did not: {jax_ref.error_type}: {jax_ref.message}"]
        if jax_ref.output.shape != numpy_ref.output.shape:
            return [f"JAX shape {jax_ref.output.shape} != NumPy {numpy_ref.output.shape}"]
        if jax_ref.output.dtype != numpy_ref.output.dtype:
            return [f"JAX dtype {jax_ref.output.dtype} != NumPy {numpy_ref.output.dtype}"]
        verdict = tolerance.compare(
            jax_ref.output,
            yardstick(refs),
            [numpy_ref.output],
            tolerance.error_steps(case.program),
            tolerance.working_dtype(case.program),
            local=perturbed_outputs(refs, jax_ref.output.shape),
            coupled=tolerance.couples(case.program),
        )
        return [] if verdict.ok else [f"JAX vs truth: {verdict.reason}"]


register(Differential())

__all__ = [
    "Differential",
    "judge_jax",
    "misshapen",
    "reference_outputs",
    "rounds_as_numpy",
    "shared_with",
    "wrong_output",
    "yardstick",
]
