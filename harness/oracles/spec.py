"""The ``spec`` oracle: the composites' shared definition against implementations written by
someone else.

Every reference (NumPy, the truth, JAX) evaluates the composites from the same source,
``compiler/ops.py``, so a wrong constant or a wrong scale there is invisible to the differential
oracle. Here the program is evaluated once more in float64, with each composite replaced by an
independent implementation, in NumPy: GELU and softmax as ``jax.nn.gelu(approximate=True)`` and
``jax.nn.softmax`` write them, attention by ``einsum`` per head (a softmax over causally masked
scores), and the textbook formulas for layer norm (``(x - mean) / sqrt(mean((x - mean) ** 2) +
1e-5) * g + b``), linear and the residual blocks. The shared definition's extended-precision
truth must agree with it within the differential oracle's error model; if not, the finding is of
kind ``spec``: the definition under test is wrong, whatever every backend computes.

The primitive table's elementwise rules are shared the same way (the compiler traces through
them, every reference evaluates them): each is checked against NumPy's own ufunc, and every
rule against its other spellings (the compiler traces the case's, the references evaluate the
default), on the values a case gives it (``table_verdict``), a cheap check on every valid case.
"""

from __future__ import annotations

import math
import os
import traceback
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from strategies.model import is_float

from ..run.references import perturbed_outputs
from . import tolerance
from .base import Finding, Observation, Oracle, register
from .differential import reference_outputs, yardstick

LAYER_NORM_EPS = 1e-5  # GPT-2's, and the textbook's
COMPOSITES = ("gelu", "softmax", "layer_norm", "linear", "attention", "attend", "feedforward")


def gelu(x: Any) -> Any:
    """GPT-2's tanh approximation, as ``jax.nn.gelu(approximate=True)`` writes it (its constant
    in ``x``'s dtype: as ``np.sqrt(2.0 / np.pi)``, a float64 NumPy scalar, it made a float32
    gelu float64, and its subnormal results nonzero where float32's round to zero)."""
    cdf = 0.5 * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x**3))))
    return x * cdf


def softmax(x: Any, axis: int = -1) -> Any:
    """As ``jax.nn.softmax`` computes it."""
    unnormalized = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return unnormalized / np.sum(unnormalized, axis=axis, keepdims=True)


def layer_norm(x: Any, gain: Any, bias: Any) -> Any:
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LAYER_NORM_EPS) * gain + bias


def linear(x: Any, weight: Any, bias: Any) -> Any:
    return np.matmul(x, weight) + bias


def attention(x: Any, qkv_w: Any, qkv_b: Any, out_w: Any, out_b: Any, heads: int) -> Any:
    """Per head, by ``einsum``: causally masked scores, their softmax, the weighted values."""
    length, width = x.shape
    depth = width // heads
    packed = np.matmul(x, qkv_w) + qkv_b
    q, k, v = (
        packed[:, i * width : (i + 1) * width].reshape(length, heads, depth) for i in range(3)
    )
    scores = np.einsum("tnh,snh->nts", q, k) / np.sqrt(np.asarray(depth, packed.dtype))
    causal = np.tril(np.ones((length, length), dtype=bool))
    probabilities = softmax(np.where(causal, scores, -np.inf), axis=-1)
    context = np.einsum("nts,snh->tnh", probabilities, v)
    return np.matmul(context.reshape(length, width), out_w) + out_b


def attend(
    x: Any, gain: Any, bias: Any, qkv_w: Any, qkv_b: Any, out_w: Any, out_b: Any, *, heads: int
) -> Any:
    return x + attention(layer_norm(x, gain, bias), qkv_w, qkv_b, out_w, out_b, heads)


def feedforward(
    x: Any, gain: Any, bias: Any, up_w: Any, up_b: Any, down_w: Any, down_b: Any
) -> Any:
    hidden = gelu(linear(layer_norm(x, gain, bias), up_w, up_b))
    return x + linear(hidden, down_w, down_b)


INDEPENDENT = {
    "gelu": lambda xp, a, attrs: gelu(a[0]),
    "softmax": lambda xp, a, attrs: softmax(a[0], attrs["axis"]),
    "layer_norm": lambda xp, a, attrs: layer_norm(*a),
    "linear": lambda xp, a, attrs: linear(*a),
    "attention": lambda xp, a, attrs: attention(*a, attrs["heads"]),
    "attend": lambda xp, a, attrs: attend(*a, heads=attrs["heads"]),
    "feedforward": lambda xp, a, attrs: feedforward(*a),
}


def independent_reference(case: Any) -> np.ndarray:
    """The program in float64 (NumPy) with every composite from ``INDEPENDENT``.

    Integer and boolean operands that NumPy computes in a float dtype are cast to float64
    first, as the float inputs are widened. (This side ran on XLA until it was a quarter of a
    driver's time, a compile of 30-70 ms a case, and XLA's CPU backend flushes subnormals,
    which needed the shared definition run there too to tell apart.)"""
    from ..run.references import adapted

    def widen(value: Any, dtype: np.dtype | None) -> Any:
        numeric = dtype is not None and is_float(dtype) and hasattr(value, "dtype")
        return value.astype(np.float64) if numeric and not is_float(value.dtype) else value

    fn = adapted(case.program, np, widen, overrides=_in_float64(INDEPENDENT))
    return np.asarray(fn(*_widened(case)), dtype=np.float64)


def _in_float64(rules: dict[str, Any], widen: bool = True) -> dict[str, Any]:
    """``rules``, each run on its float operands widened to float64 (unless not ``widen``) and
    its result rounded to the dtype the program gives it: a program that casts to float32
    (``astype``) made the independent side run in float32, where ``1 + tanh`` cancels
    (gelu(-5): -4.47e-07 instead of -2.29e-07; a clean one-hour session's spec finding on
    ``gelu(x.astype(float32))``), while the comparison takes it for a float64 evaluation.
    Without ``widen``: the program's own dtypes, in and out, whatever a rule promotes to."""

    def widened(rule: Any) -> Any:
        def run(xp: Any, operands: list[Any], attrs: dict[str, Any]) -> Any:
            floats = [a.dtype for a in operands if is_float(a.dtype)]
            if widen:
                operands = [a.astype(np.float64) if is_float(a.dtype) else a for a in operands]
            result = rule(xp, operands, attrs)
            return result.astype(np.result_type(*floats)) if floats else result

        return run

    return {name: widened(rule) for name, rule in rules.items()}


#: The pseudo-backend a spec finding names: the shared definition, not any compiler backend.
DEFINITION = "definition"


def _widened(case: Any) -> list[np.ndarray]:
    """The case's inputs, floats widened to float64."""
    return [a.astype(np.float64) if is_float(a.dtype) else a for a in case.inputs]


def shared_in_float64(case: Any) -> np.ndarray:
    """The program with the shared definitions, in float64 (NumPy, float inputs widened)."""
    from strategies.model.evaluate import function

    with np.errstate(all="ignore"):
        return np.asarray(function(case.program, np)(*_widened(case)), dtype=np.float64)


def perturbed_in_float64(case: Any) -> list[np.ndarray]:
    """The perturbed evaluations (``references.perturbed_reference``) of the program on its
    float inputs widened to float64: how far float64 rounding and order alone move it."""
    from dataclasses import replace

    from ..run.references import PERTURBED_RUNS, perturbed_reference

    widened = replace(case, inputs=_widened(case))
    runs = [perturbed_reference(widened, run) for run in range(1, PERTURBED_RUNS + 1)]
    return [np.asarray(r.output, np.float64) for r in runs if r.ok]


def _local_errors(case: Any, refs: dict[str, Any], shared: np.ndarray) -> list[np.ndarray]:
    """Each element's conditioning: the perturbed evaluations (each rounding one ulp off, sums
    in other orders), in the program's dtypes and in float64, against the shared definition's
    truth. Float32 inputs of +-5.3e36 gave attention scores near 1e75 in float64 that tie in
    exact arithmetic, so rounding alone picks the softmax's winner; the independent float64 side
    picked another key than the shared definition's float64 and extended evaluations (a
    clean-compiler session, seed 1301), while the float32 program itself overflowed to nan.
    Measured against the shared definition's own truth: against the independent side they
    would carry the very definition error under test."""
    with np.errstate(invalid="ignore", over="ignore"):
        return [
            np.abs(p - shared)
            for p in perturbed_outputs(refs, shared.shape) + perturbed_in_float64(case)
        ]


def _compare(
    case: Any, refs: dict[str, Any], shared: np.ndarray, independent: np.ndarray,
    float64_sides: list[np.ndarray], local: list[np.ndarray],
) -> Any:  # fmt: skip
    """The error model's verdict on ``independent`` against the shared definition's truth,
    with ``float64_sides`` (the shared definition evaluated in float64 ways) as the measure of
    how far float64 evaluation alone moves the result, and ``local`` (``_local_errors``) as
    each element's conditioning."""
    # Each reference's error is measured against its own (shared-definition) truth: measured
    # against the independent one it would carry the very definition error under test.
    with np.errstate(invalid="ignore", over="ignore"):
        errors = [
            np.abs(np.asarray(r, np.float64) - shared)
            for r in reference_outputs(refs, shared.shape)
        ]
        errors += [np.abs(side - shared) for side in float64_sides]
        for side in float64_sides:
            # Where float64 overflows on both sides (products near 1e322 in a matmul: inf or
            # inf - inf = nan by summation order, while extended precision gives the exact
            # value, finite or beyond float64's range), the difference is float64's range, not
            # the definition: those elements are not judged here.
            overflowed = ~np.isfinite(independent) & ~np.isfinite(side) & ~np.isnan(shared)
            # Where the truth alone is non-finite (or alone finite), and float64 agrees with
            # the independent side, the difference is precision: a gelu of -6 is a tiny
            # negative in extended precision, exactly -0.0 in float64 (1 + tanh rounds to 0),
            # and its sqrt nan or -0.0 accordingly (a float16 session's spec finding on a
            # clean compiler).
            precision = (np.isfinite(side) == np.isfinite(independent)) & (
                np.isfinite(shared) != np.isfinite(independent)
            )
            # Where the shared definition, evaluated this float64 way, gives the independent
            # side's very value, the definitions agree and the difference from the truth is
            # the evaluation's: a bool of 2.0 ** attend(...) near 2 ** -1074 was True in NumPy
            # and False on XLA, which flushes the subnormal, when this side ran there (an
            # integer output: no slack).
            same = (side == independent) | (np.isnan(side) & np.isnan(independent))
            independent = np.where(overflowed | precision | same, shared, independent)
    return tolerance.compare(
        shared,
        independent,
        [],
        tolerance.error_steps(case.program),
        tolerance.working_dtype(case.program),
        errors=errors,
        local_errors=local,
        coupled=tolerance.couples(case.program),
    )


def definition_verdict(case: Any, refs: dict[str, Any]) -> str | None:
    """Why the shared definition (its truth, ``refs``) disagrees with the independent
    implementation beyond the error model, or None when it agrees. Raises whatever the
    independent reference raises."""
    if refs["numpy"].undefined_cast:
        # NaN, inf or out of range into an integer: NumPy and JAX may differ, both right (a
        # clean-compiler session's spec finding was ``log`` of a negative cast to int32).
        return None
    with np.errstate(all="ignore"):
        independent = independent_reference(case)
    shared = np.asarray(yardstick(refs), np.float64)
    if shared.shape != independent.shape:
        return f"shared definition's shape {shared.shape}, independent {independent.shape}"
    # The independent side is a float64 evaluation: the shared definition evaluated in
    # float64 too says how far float64 rounding alone moves this program's result (an
    # ill-conditioned softmax of scores near 1e73 picks another winner). A wrong definition
    # is wrong in float64 and in extended precision alike, so this slack does not hide it.
    sides = [shared_in_float64(case)]
    local = _local_errors(case, refs, shared)
    verdict = _compare(case, refs, shared, independent, sides, local)
    if verdict.ok:
        return None
    return (
        f"the shared definition of {', '.join(_composites(case))} (compiler/ops.py) disagrees with "
        f"an independent implementation: {verdict.reason}"
    )


def _float16_root(operands: list[Any]) -> bool:
    """``x ** 0.5`` of a float16 array with a Python float exponent: NumPy's own spellings differ
    there. The operator takes its fast path for a Python scalar exponent (``np.sqrt``: nan at
    -inf, -0.0 at -0.0), while NumPy's float16 power loop (``np.power``, ``np.pow``) has no such
    case (inf and 0.0; the float32 and float64 loops have it). The compiler follows the operator
    in every spelling, as the table's rule does (a known deviation: README, NumPy semantics)."""
    if len(operands) != 2:
        return False
    base, exponent = operands
    return (
        isinstance(base, np.ndarray) and base.dtype == np.float16
        and type(exponent) is float and exponent == 0.5
    )  # fmt: skip


def table_verdict(case: Any) -> str | None:
    """Each node's rule in the primitive table (the printed form that the compiler's tracing
    and every reference evaluate) against NumPy's own ufunc for it, and against the node's other
    spellings (``np.add(a, b)`` for ``a + b``, ``x.sum(axis=0)`` for ``xp.sum(x, axis=0)``), on
    the values this case gives the node; why they differ, or None. A wrong rule is wrong in the
    compiler and in every reference alike, so no comparison of the two can see it: a mutant that
    made ``unary_minus``'s rule ``a`` instead of ``-a`` survived 60 s of fuzzing."""
    from compiler import primitives

    from ..run.references import adapted, as_numpy

    found: list[str] = []

    def differs(label: str, prim: Any, out: Any, compute: Any) -> None:
        try:
            other = compute()
        except Exception as error:  # noqa: BLE001 - one spelling raising is the difference
            found.append(f"the table's rule for {prim.name} computes, {label} raises {error!r}")
            return
        a, b = np.asarray(out), np.asarray(other)
        same = a.dtype == b.dtype and a.shape == b.shape
        if not (same and np.array_equal(a, b, equal_nan=is_float(a.dtype))):
            found.append(
                f"the table's rule for {prim.name} gives {a.dtype}{list(a.shape)} "
                f"{np.array2string(a.ravel()[:4])}, {label} gives "
                f"{b.dtype}{list(b.shape)} {np.array2string(b.ravel()[:4])}"
            )

    def checked(prim: Any) -> Any:
        rule = prim.evaluate
        ufunc = prim.ufunc if prim.elementwise and isinstance(prim.ufunc, np.ufunc) else None
        others = [(spelling, *prim.spelled(spelling)) for spelling in primitives.SPELLINGS[1:]]
        spelled = [other for other in others if other[2] is not prim.render]
        if ufunc is None and not spelled:
            return rule

        def run(xp: Any, operands: list[Any], attrs: dict[str, Any]) -> Any:
            out = rule(xp, operands, attrs)
            if found:
                return out
            # Compared on arrays: NumPy's scalar arithmetic and its ufunc loops are two
            # implementations, which differ in the last bit of float32 ``0.5 ** x`` on an
            # AVX-512 machine (SVML's powf against libm's: a clean 5-minute session, seed 13).
            scalars = any(isinstance(o, np.generic) for o in operands)
            arrays = [np.asarray(o) if isinstance(o, np.generic) else o for o in operands]
            on_arrays = rule(xp, arrays, attrs) if scalars else out
            if prim.name == "power" and _float16_root(operands):
                return out  # NumPy's own spellings differ here (``_float16_root``)
            if ufunc is not None:
                differs(f"np.{ufunc.__name__}", prim, on_arrays, lambda: ufunc(*arrays))
            for spelling, evaluate, render in spelled:
                if not found:
                    text = render([f"_{i}" for i in range(len(operands))], attrs)
                    label = f"its {spelling} spelling ({text})"
                    differs(label, prim, on_arrays, lambda e=evaluate: e(xp, arrays, attrs))
            return out

        return run

    rules = {n.op: checked(primitives.get(n.op)) for n in case.program.nodes}
    fn = adapted(case.program, np, as_numpy, rules)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*case.inputs)
    except Exception:  # noqa: BLE001 - NumPy rejects the program: the other oracles judge that
        return None
    return found[0] if found else None


def stability_verdict(case: Any, refs: dict[str, Any]) -> str | None:
    """Why the shared definition, evaluated by NumPy in the program's own dtypes, is further from
    its truth than the independent implementation evaluated the same way lets it be, or None.

    A definition can be exact in real arithmetic and still wrong: a layer norm whose variance is
    ``mean(x * x) - mean(x) ** 2`` cancels where ``|mean| >> std`` (a row of 100 + 0.01 N(0, 1)
    in float32 loses every digit of its variance). Its extended-precision truth agrees with the
    independent one (``definition_verdict`` passes) and every reference computes the same
    formula, so the differential oracle's bound widens with it: a held-out session saw it only
    where a vectorized sum order made it worse still, and attributed it to that pass. Here the
    independent implementation, in the same dtypes and perturbed as the references are
    (``perturbed_reference``: each rounding moved an ulp, sums in other orders), measures how
    hard each element is; the shared definition's NumPy evaluation is judged against the truth
    by the error model with that measure. Float outputs only: a comparison of a layer norm's
    output decides within its own error either way."""
    from ..run.references import PERTURBED_RUNS, adapted, as_numpy, perturbed_reference

    numpy_ref = refs["numpy"]
    if not (numpy_ref.ok and is_float(numpy_ref.output.dtype)):
        return None
    own = _in_float64(INDEPENDENT, widen=False)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        native = adapted(case.program, np, as_numpy, overrides=own)(*case.inputs)
    native = np.asarray(native, np.float64)
    runs = [perturbed_reference(case, run, overrides=own) for run in range(1, PERTURBED_RUNS + 1)]
    truth = np.asarray(yardstick(refs), np.float64)
    if native.shape != truth.shape:
        return None  # the independent side's shape is definition_verdict's to judge
    local = [r.output for r in runs if r.ok and r.output.shape == truth.shape]
    # Where the independent side overflows too (any of its evaluations), both are past the
    # dtype's range: inf there and nan here says nothing of the definition.
    overflowing = ~np.isfinite(native)
    for other in local:
        overflowing |= ~np.isfinite(other)
    shared = np.where(overflowing, native, np.asarray(numpy_ref.output, np.float64))
    verdict = tolerance.compare(
        shared,
        truth,
        [native],
        tolerance.error_steps(case.program),
        tolerance.working_dtype(case.program),
        local=local,
        coupled=tolerance.couples(case.program),
    )
    if verdict.ok:
        return None
    return (
        f"the shared definition of {', '.join(_composites(case))} (compiler/ops.py), evaluated by "
        f"NumPy in the program's dtypes, is numerically worse than an independent "
        f"implementation evaluated the same way: {verdict.reason}"
    )


def _composites(case: Any) -> list[str]:
    """The composites ``case``'s program calls, sorted."""
    return sorted({op for op in case.program.ops if op in COMPOSITES})


def spec_verdict(case: Any, refs: dict[str, Any]) -> str | None:
    """The spec oracle's verdict: the table's elementwise rules against NumPy's ufuncs, then
    (for composites) the shared definition against the independent one, in exact arithmetic
    and then in the program's own dtypes; why they disagree, or None. Raises whatever the
    independent reference raises."""
    detail = table_verdict(case)
    if detail is None and any(op in COMPOSITES for op in case.program.ops):
        detail = definition_verdict(case, refs) or stability_verdict(case, refs)
    return detail


class Spec(Oracle):
    name = "spec"

    def fits(self, case: Any) -> bool:
        return case.invalid is None

    def wants(self, case: Any) -> bool:
        return self.fits(case)

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        refs = obs.refs
        truth = refs.get("truth")
        if not refs["numpy"].ok:
            detail = _definition_fails(obs)
            return [Finding("spec", (DEFINITION,), self.name, detail, obs.case)] if detail else []
        if truth is None or not truth.ok:
            return []
        try:
            detail = spec_verdict(obs.case, refs)
        except Exception as error:  # noqa: BLE001 - an independent reference that cannot run
            obs.judgement.ambiguities.append(f"independent reference failed: {error!r}")
            return []
        if detail is None:
            return []
        return [Finding("spec", (DEFINITION,), self.name, detail, obs.case)]


def _raised_in_definition(error: BaseException | None, composites: Sequence[str]) -> bool:
    """Did ``error`` come out of the shared definition of one of ``composites`` (a frame of that
    function in ``compiler/ops.py``) rather than out of NumPy's rules for the rest of the
    program, or out of a primitive's own check there (a gather's out-of-range ids)?"""
    from compiler import ops

    if error is None:
        return False
    definition = os.path.realpath(ops.__file__)
    frames = traceback.walk_tb(error.__traceback__)
    return any(
        f.f_code.co_name in composites and os.path.realpath(f.f_code.co_filename) == definition
        for f, _ in frames
    )


def _definition_fails(obs: Observation) -> str | None:
    """Why a valid program whose NumPy evaluation raised is the shared definition's fault: the
    program model took a composite's type from its result rule (its shape contract) because the
    definition failed on it, and the independent implementation computes the program."""
    case, numpy_ref = obs.case, obs.refs["numpy"]
    composites = _composites(case)
    if not composites or not _raised_in_definition(numpy_ref.error, composites):
        return None
    try:
        with np.errstate(all="ignore"):
            independent = independent_reference(case)
    except Exception:  # noqa: BLE001 - the program is invalid for the independent side too
        return None
    return (
        f"the shared definition of {', '.join(composites)} (compiler/ops.py) raises "
        f"{numpy_ref.error_type}: {numpy_ref.message[:300]} on a program the composites' result "
        f"rules accept; the independent implementation computes it (shape {independent.shape})"
    )


register(Spec())

__all__ = [
    "DEFINITION",
    "INDEPENDENT",
    "Spec",
    "definition_verdict",
    "independent_reference",
    "spec_verdict",
    "table_verdict",
]
