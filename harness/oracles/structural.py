"""Structural oracles: properties every correct backend has, whatever the values.

- ``causal``: for attention-like programs on a (T, C) input, changing only the last rows of the
  input leaves the earlier output rows bit-identical;
- ``determinism``: on an eighth of the cases (drawn from the case's data), a second call gives
  identical bits without retracing, recompiling (on one backend of the case, drawn from its
  data) gives identical bits, and every call returns its own output arrays (no aliasing of an
  earlier call's output, no overwriting it); there, other functions of the same code are
  served their own specializations (``stale-specialization``), threads calling one new
  jitted function at once each get their own answer (``race``), and every cache of compiled
  code (the jit's, the driver's memos, the persistent one) serves a compile under other
  workarounds its own stages (``worker.other_configuration``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np

from ..case import Case
from ..run.task import Task
from .base import Derived, Finding, Observation, Oracle, group, register

#: The magnitudes the later rows of a causal case's first input also take, for the shared
#: definitions alone, as shares of its float dtype's largest value: where a later key's score
#: overflows to +inf while its value stays finite, a causal mask added (inf + -inf is NaN,
#: through the row's maximum to every earlier position), not selected, shows; on the cases'
#: own values it never did (a held-out plant in ``compiler/ops.py``'s attention, unseen in 227
#: attention cases of every regime).
SCALES = (1e-1, 1e-2, 1e-3, 1e-4, 1e-6)
#: Marks the scale in a definition leak's detail (its reproducer reads it).
SCALE_MARK = "[scale "


def future_perturbations(x: np.ndarray) -> list[tuple[float, np.ndarray]]:
    """(scale, ``x`` with its last two rows changed to values near it): for a float ``x``, one
    for each of ``SCALES`` of its dtype's largest value. Seeded by the row count, so that a
    reproducer makes the same."""
    from strategies.model import finfo, is_float

    if not is_float(x.dtype) or x.ndim < 1 or x.shape[0] < 3:
        return []
    largest = float(finfo(x.dtype).max)
    return [(largest * share, _future_changed(x, largest * share / 4)) for share in SCALES]


def _future_changed(x: np.ndarray, scale: float) -> np.ndarray:
    """``x`` with its last two rows changed to normal noise times ``scale``, seeded by the row
    count (the causal oracle's every perturbation, of one noise)."""
    keep = x.shape[0] - 2
    changed = x.copy()
    noise = np.random.default_rng(x.shape[0]).standard_normal(x[keep:].shape)
    changed[keep:] = (noise * scale).astype(x.dtype)
    return changed


def rows_kept(fn: Any, inputs: list[np.ndarray], perturbed: np.ndarray, keep: int) -> bool:
    """Do ``fn``'s output rows before ``keep`` keep their bits (but zero signs, NaN payloads)
    when its first input is ``perturbed``? (False where ``fn`` raises.)"""
    from ..run.worker import same_bits

    with np.errstate(all="ignore"):
        try:
            before = np.asarray(fn(*inputs))[:keep]
            after = np.asarray(fn(perturbed, *inputs[1:]))[:keep]
        except Exception:  # noqa: BLE001 - nothing to judge by
            return False
    return same_bits(before, after, any_zero=True)


def definition_leak(program: Any, inputs: list[np.ndarray], only: float | None = None) -> str:
    """Why the shared definitions (``compiler/ops.py``, evaluated by NumPy) of a causal
    ``program`` are not causal where the spec oracle's independent ones are: their output rows
    before the last two change when only the first input's last two rows do, to values near a
    share of its dtype's largest value (``future_perturbations``; ``only``: that scale alone),
    while the independent composites' rows keep their bits. "" if none."""
    from strategies.model.evaluate import function

    from ..run.references import adapted
    from .spec import INDEPENDENT

    shared = function(program, np)
    independent = adapted(program, np, lambda value, dtype: value, overrides=INDEPENDENT)
    keep = inputs[0].shape[0] - 2
    for scale, perturbed in future_perturbations(inputs[0]):
        if only is not None and scale != only:
            continue
        if rows_kept(independent, inputs, perturbed, keep) and not rows_kept(
            shared, inputs, perturbed, keep
        ):
            return (
                f"the shared definition (compiler/ops.py) changes output rows before {keep} "
                f"when only later rows of the input change, to values near {scale:.3g} "
                f"{SCALE_MARK}{scale!r}]; the spec oracle's independent composites keep them"
            )
    return ""


class Causal(Oracle):
    name = "causal"

    def fits(self, case: Case) -> bool:
        return "causal" in case.checks and case.invalid is None and case.inputs[0].shape[0] >= 3

    def wants(self, case: Case) -> bool:
        return self.fits(case)

    def plan(self, obs: Observation) -> list[Derived]:
        x = obs.case.inputs[0]
        keep = x.shape[0] - 2
        perturbed = _future_changed(x, 3)
        task = Task(obs.case, input_sets=[[perturbed, *obs.case.inputs[1:]]])
        return [Derived("perturbed-future", task, {"keep": keep})]

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        """The earlier rows must hold the same values: bit for bit, except a NaN's sign and
        payload and a zero's sign, which are the kernel's: a masked future row's 0 * v is -0.0
        where v < 0, and a sum started from -0.0 (addition's identity, as LLVM's vector
        reductions start) keeps it where the row's other terms are -0.0. The differential
        oracle judges those signs on each run; raw bytes reported a NaN's sign as a causality
        leak "at ()"."""
        from ..run.worker import same_bits

        findings = []
        for item, outcome in derived:
            if outcome.status != "ok":
                continue
            keep = item.info["keep"]
            for before, after in zip(obs.results, outcome.value.results, strict=True):
                if not (before.ok and after.ok):
                    continue
                a = np.asarray(before.output)[:keep]
                b = np.asarray(after.output)[:keep]
                if same_bits(a, b, any_zero=True):
                    continue
                diff = np.argwhere(~((a == b) | (np.isnan(a) & np.isnan(b))))
                where = tuple(int(i) for i in diff[0]) if len(diff) else ()
                detail = (
                    f"output row {where[:1]} changed when only rows >= {keep} of the input "
                    f"changed (first difference at {where})"
                )
                findings.append(
                    Finding(
                        "causality", (before.backend,), self.name, detail, obs.case, result=before
                    )
                )
        if obs.refs.get("numpy") is not None and obs.refs["numpy"].ok:
            from .spec import DEFINITION

            leak = definition_leak(obs.case.program, list(obs.case.inputs))
            if leak:
                findings.append(Finding("spec", (DEFINITION,), self.name, leak, obs.case))
        return findings


#: What the determinism oracle says of a second function's wrong answer, by its story
#: (``run.worker.after_another_function``).
SUCCESSORS = {
    "live": "a second function of the same code object and name (another closure, which "
    "returns its first argument), jitted while this program's specialization was cached and "
    "called with arguments of the same types, did not return its first argument: the "
    "specialization cache told the two functions apart by their code or name, not by the "
    "function object",
    "collected": "a new function (it returns its first argument), made where this program's "
    "jitted function lived after that one was collected, jitted and called with arguments of "
    "the same types, did not return its first argument: the specialization cache kept a "
    "collected function's kernel under a key a new function can have (its address: id(fn))",
}


CONCURRENT = (
    "a new jitted function of this program, called from several threads at once (each thread "
    "on its own arguments: the inputs' values rolled), did not give a call what its arguments "
    "give alone: the specialization compiled for racing threads, or a kernel's calls not "
    "serialized (its descriptors, static temporaries)"
)


class Determinism(Oracle):
    name = "determinism"
    primary = True

    def wants(self, case: Case) -> bool:
        return case.toggle(self.name, 0.125)

    def configure(self, case: Case, task: Task) -> None:
        task.repeat = True
        # Every backend is called again (cheap); one, drawn from the case's data, is also
        # recompiled from scratch: on every backend that would double the cost of the case.
        backends = sorted(task.backends)
        task.recompile = case.pick("recompile", backends) if backends else ""

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        flagged = []
        for result in obs.results:
            if not result.ok:
                continue
            if result.deterministic is False:
                flagged.append(
                    (
                        "nondeterministic",
                        result,
                        "calling again or recompiling the same program changed the bits",
                    )
                )
            if result.persisted is False and result.persisted_twin:
                i, j = result.persisted_twin
                flagged.append(
                    (
                        "nondeterministic",
                        result,
                        f"the program with arguments {i} and {j} (one shape and dtype) "
                        "exchanged, called on the exchanged inputs, compiled through the "
                        "persistent compilation cache (compiler.persist, COMPILER_CACHE_DIR) "
                        "right after this one, gave other bits than this program: two modules "
                        "that differ in which argument feeds which operand were served one "
                        "kernel",
                    )
                )
            elif result.persisted is False:
                flagged.append(
                    (
                        "nondeterministic",
                        result,
                        "the kernel stored to and loaded back from the persistent compilation "
                        "cache (compiler.persist, COMPILER_CACHE_DIR) gave other bits than the "
                        "one compiled in this process",
                    )
                )
            if result.configured:
                flagged.append(("nondeterministic", result, result.configured))
            if result.successor:
                flagged.append(("stale-specialization", result, SUCCESSORS[result.successor]))
            if result.concurrent:
                flagged.append(("race", result, f"{CONCURRENT}: {result.concurrent}"))
            if result.reused is False:
                flagged.append(("retrace", result, "a second call with the same shapes retraced"))
            if result.independent is False:
                flagged.append(
                    (
                        "aliasing",
                        result,
                        "a later call's output aliased or overwrote an earlier call's output",
                    )
                )
        findings = group(obs.case, self.name, flagged, obs.case.program.output_type.dtype)
        return [
            replace(f, program_free=True, facet=_facet(f)) if _program_free(f) else f
            for f in findings
        ]


#: The determinism oracle's kinds that are a matter of a layer above what the program computes:
#: another function served this program's kernel (the jit cache's key), threads given each
#: other's answers (the runtime's calls). One entry covers each wherever it shows: a kernel lock
#: planted out made 7 race entries (each dtype and backend family) in a 15 s session.
PROGRAM_FREE = ("stale-specialization", "race")


def _program_free(finding: Any) -> bool:
    """A kind of ``PROGRAM_FREE``, or a cache that served another configuration's stages
    (``run.worker.other_configuration``: a cache's key, whatever the program; its canned probe
    tells where the case's program does not)."""
    from ..run.worker import CONFIGURATION

    return finding.kind in PROGRAM_FREE or (
        finding.kind == "nondeterministic" and finding.detail.count("\n") == 0
        and CONFIGURATION in finding.detail
    )  # fmt: skip


def _facet(finding: Any) -> str:
    """A configurations' finding's facet: the cache that served (``[persist]``)."""
    if finding.kind != "nondeterministic":
        return finding.facet
    match = re.search(r"\[([\w-]+)\]", finding.detail)
    return f"configuration:{match.group(1)}" if match else finding.facet


register(Causal())
register(Determinism())

__all__ = ["SCALES", "Causal", "Determinism", "definition_leak", "future_perturbations"]
