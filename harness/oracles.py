"""Oracles: turn a case's backend results and references into findings.

- ``differential``: each backend against the float64 truth through the error model, with exact
  shape and dtype checks against NumPy; NumPy-vs-JAX disagreements are *reference ambiguities*,
  kept apart and never counted as compiler bugs;
- error-path agreement: an invalid program must be rejected with ValueError/TypeError (or
  NumPy's IndexError/AxisError) at trace time by the compiler and also fail in NumPy; MLIR
  verifier/pass failures and other exceptions on a valid program are findings;
- structural: causality (changing future rows leaves earlier output rows bit-identical),
  determinism (compiling twice gives identical bits) and specialization reuse;
- metamorphic relations, built as derived cases (see ``relations``).

An oracle never knows which strategy made the case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from strategies.program import Program

from . import tolerance
from .case import BackendResult, Case
from .references import Reference

# Exception names that count as "the same kind of rejection" as NumPy's.
_REJECTIONS = {
    "ValueError": {"ValueError", "AxisError", "InvalidIndex", "InvalidIndexError"},
    "AxisError": {"AxisError", "ValueError", "IndexError"},
    "IndexError": {"IndexError", "InvalidIndex", "InvalidIndexError", "AxisError"},
    "TypeError": {"TypeError"},
    "OverflowError": {"OverflowError"},
    "DTypePromotionError": {"TypeError", "DTypePromotionError"},
    "UFuncTypeError": {"TypeError"},
    "UFuncNoLoopError": {"TypeError"},
}


@dataclass
class Finding:
    """A suspected compiler bug (or a crash/hang), with what is needed to file it."""

    kind: str  # mismatch, wrong-dtype, wrong-shape, wrong-error, verifier-error,
    # internal-error, crash, hang, causality, nondeterministic, retrace, metamorphic
    backends: tuple[str, ...]
    oracle: str
    detail: str
    case: Case
    dtype: str = ""
    result: BackendResult | None = None

    @property
    def signature(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "backend": "+".join(sorted(self.backends)),
            "ops": sorted(set(self.case.program.ops)),
            "dtype": self.dtype or self.case.program.output_type.dtype,
            "oracle": self.oracle,
        }


@dataclass
class Judgement:
    """Everything the oracles concluded about one case."""

    findings: list[Finding] = field(default_factory=list)
    ambiguities: list[str] = field(default_factory=list)  # NumPy vs JAX
    unsupported: list[str] = field(default_factory=list)  # known limitations hit
    errors: dict[str, float] = field(default_factory=dict)  # backend -> worst error in ULPs
    agreed_rejection: bool = False


def error_steps(program: Program) -> float:
    """The program's error depth: one step per op, plus log2 of every contraction length."""
    steps = 0.0
    for node in program.nodes:
        steps += 1.0
        args = [program.type_of(a) for a in node.args if hasattr(a, "kind")]
        if node.op == "matmul" and args:
            steps += math.log2(max(2, args[0].shape[-1]))
        elif node.op in ("sum", "mean", "var", "max", "min") and args:
            shape = args[0].shape
            axis = node.attrs.get("axis")
            axes = (
                range(len(shape))
                if axis is None
                else (axis if isinstance(axis, tuple) else (axis,))
            )
            count = math.prod(shape[a] for a in axes) if shape else 1
            steps += math.log2(max(2, count)) * (2 if node.op == "var" else 1)
        elif node.op in ("softmax", "layer_norm", "gelu", "linear"):
            width = args[0].shape[-1] if args and args[0].shape else 1
            steps += 6 + 2 * math.log2(max(2, width))
        elif node.op in ("attention", "attend", "feedforward"):
            width = args[0].shape[-1] if args and args[0].shape else 1
            steps += 24 + 4 * math.log2(max(2, 4 * width))
    return max(steps, 1.0)


def working_dtype(program: Program) -> np.dtype:
    """The least precise float dtype the program computes in: float32 anywhere inside means
    float32 rounding reaches the output, even when NumPy promotes the result to float64."""
    dtypes = program.dtypes()
    if "float32" in dtypes:
        return np.dtype(np.float32)
    return np.dtype(program.output_type.dtype)


def _rejection_matches(numpy_error: str, compiler_error: str) -> bool:
    return compiler_error in _REJECTIONS.get(numpy_error, {numpy_error})


def differential(case: Case, results: list[BackendResult], refs: dict[str, Reference]) -> Judgement:
    """Backends vs references, and the error paths."""
    judgement = Judgement()
    numpy_ref = refs["numpy"]
    truth = refs.get("truth")
    jax_ref = refs.get("jax")
    dtype = case.program.output_type.dtype
    by_kind: dict[str, list[tuple[BackendResult, str]]] = {}

    def flag(kind: str, result: BackendResult, detail: str) -> None:
        by_kind.setdefault(kind, []).append((result, detail))

    for result in results:
        if result.status == "unsupported":
            judgement.unsupported.append(f"{result.backend}: {result.message}")
            continue
        if result.status == "compiler-error":
            flag("verifier-error", result, f"{result.stage}: {result.message}")
            continue
        if result.status == "internal-error":
            flag("internal-error", result, f"{result.error_type}: {result.message}")
            continue
        if case.invalid is not None:
            _judge_invalid(case, result, numpy_ref, flag, judgement)
            continue
        if not numpy_ref.ok:
            if result.status == "ok":
                flag(
                    "wrong-error",
                    result,
                    f"compiler accepted a program NumPy rejects ({numpy_ref.error_type}: "
                    f"{numpy_ref.message})",
                )
            elif not _rejection_matches(numpy_ref.error_type, result.error_type):
                flag(
                    "wrong-error",
                    result,
                    f"compiler raised {result.error_type}, NumPy raised {numpy_ref.error_type}",
                )
            else:
                judgement.agreed_rejection = True
            continue
        if result.status == "rejected":
            flag(
                "wrong-error",
                result,
                f"compiler rejected a program NumPy accepts: {result.error_type}: "
                f"{result.message}",
            )
            continue
        out = np.asarray(result.output)
        expected = numpy_ref.output
        if out.shape != expected.shape:
            flag("wrong-shape", result, f"shape {out.shape}, NumPy {expected.shape}")
            continue
        if out.dtype != expected.dtype:
            flag("wrong-dtype", result, f"dtype {out.dtype}, NumPy {expected.dtype}")
            continue
        verdict = _judge_values(case, out, numpy_ref, truth, jax_ref)
        judgement.errors[result.backend] = verdict.max_ulps
        if not verdict.ok:
            flag("mismatch", result, verdict.reason)
        if result.deterministic is False:
            flag("nondeterministic", result, "recompiling the same program changed the bits")
        if result.reused is False:
            flag("retrace", result, "a second call with the same shapes retraced")

    if numpy_ref.ok and jax_ref is not None:
        judgement.ambiguities.extend(_ambiguity(case, numpy_ref, truth, jax_ref))

    for kind, group in by_kind.items():
        oracle = (
            "differential" if kind in ("mismatch", "wrong-shape", "wrong-dtype") else ("error-path")
        )
        detail = "\n".join(f"{r.backend}: {d}" for r, d in group)
        failing = {r.backend for r, _ in group}
        passing = [r.backend for r in results if r.status == "ok" and r.backend not in failing]
        if passing and kind == "mismatch":
            # The backends disagree with each other: name the ones that got it right.
            detail += f"\nagrees with the references: {', '.join(passing)}"
        judgement.findings.append(
            Finding(
                kind, tuple(r.backend for r, _ in group), oracle, detail, case, dtype, group[0][0]
            )
        )
    return judgement


def _judge_invalid(
    case: Case, result: BackendResult, numpy_ref: Reference, flag: Any, judgement: Judgement
) -> None:
    """A program with one planted violation: the compiler must reject it at trace time with one
    of the violation's documented errors (a ValueError/TypeError where NumPy rejects it too)."""
    violation = case.invalid.violation
    allowed = {e.__name__ for e in case.invalid.errors}
    if result.status == "ok":
        flag(
            "wrong-error",
            result,
            f"compiler accepted an invalid program ({violation}); NumPy "
            + (f"raised {numpy_ref.error_type}" if not numpy_ref.ok else "has no such rule"),
        )
        return
    names = {result.error_type, *_REJECTIONS.get(result.error_type, ())}
    if result.status == "unsupported" and "NotImplementedError" in allowed:
        judgement.agreed_rejection = True
    elif result.status == "rejected" and (
        names & allowed
        or (not numpy_ref.ok and _rejection_matches(numpy_ref.error_type, result.error_type))
    ):
        judgement.agreed_rejection = True
    else:
        flag(
            "wrong-error",
            result,
            f"{violation}: compiler raised {result.error_type} ({result.message[:200]}); "
            f"expected one of {sorted(allowed)}",
        )
    if case.invalid.numpy_rejects and numpy_ref.ok:
        judgement.ambiguities.append(f"NumPy accepted a program labelled {violation}")


def _judge_values(
    case: Case,
    out: np.ndarray,
    numpy_ref: Reference,
    truth: Reference | None,
    jax_ref: Reference | None,
) -> tolerance.Verdict:
    others = [numpy_ref.output]
    if jax_ref is not None and jax_ref.ok and jax_ref.output.shape == out.shape:
        others.append(jax_ref.output)
    yardstick = truth.output if truth is not None and truth.ok else numpy_ref.output
    return tolerance.compare(
        out, yardstick, others, error_steps(case.program), working_dtype(case.program)
    )


def _ambiguity(
    case: Case, numpy_ref: Reference, truth: Reference | None, jax_ref: Reference
) -> list[str]:
    if not jax_ref.ok:
        return [f"JAX failed where NumPy did not: {jax_ref.error_type}: {jax_ref.message}"]
    if jax_ref.output.shape != numpy_ref.output.shape:
        return [f"JAX shape {jax_ref.output.shape} != NumPy {numpy_ref.output.shape}"]
    if jax_ref.output.dtype != numpy_ref.output.dtype:
        return [f"JAX dtype {jax_ref.output.dtype} != NumPy {numpy_ref.output.dtype}"]
    yardstick = truth.output if truth is not None and truth.ok else numpy_ref.output
    steps = error_steps(case.program)
    v = tolerance.compare(
        jax_ref.output, yardstick, [numpy_ref.output], steps, working_dtype(case.program)
    )
    return [] if v.ok else [f"JAX vs truth: {v.reason}"]


def causal(
    case: Case, original: list[BackendResult], perturbed: list[BackendResult], keep_rows: int
) -> list[Finding]:
    """Rows before ``keep_rows`` must not change when only later input rows changed."""
    findings = []
    for before, after in zip(original, perturbed, strict=True):
        if before.status != "ok" or after.status != "ok":
            continue
        a = np.asarray(before.output)[:keep_rows]
        b = np.asarray(after.output)[:keep_rows]
        if a.tobytes() != b.tobytes():
            diff = np.argwhere(~((a == b) | (np.isnan(a) & np.isnan(b))))
            where = tuple(int(i) for i in diff[0]) if len(diff) else ()
            findings.append(
                Finding(
                    "causality",
                    (before.backend,),
                    "causality",
                    f"output row {where[:1]} changed when only rows >= {keep_rows} of the "
                    f"input changed (first difference at {where})",
                    case,
                    result=before,
                )
            )
    return findings
