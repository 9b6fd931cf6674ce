"""The error model, in one place: when is a backend's answer wrong?

A backend computes in the program's own dtypes, like NumPy does; neither is exact. The float64
evaluation of the same program (the *truth*) is the yardstick, and NumPy's and JAX's own errors
against it measure how hard this case is (cancellation, exp amplification, long sums). A backend
element is accepted when

    |backend - truth| <= FACTOR * max(0, max(|numpy - truth|, |jax - truth|,
                                             |perturbed - truth|) - rounding)
                         + SPREAD * max over the array of the first two + floor

    rounding = eps(dtype) * ROUNDING_ULPS_PER_STEP * steps * |truth|
    floor = eps(dtype) * ULPS_PER_STEP * steps * (max(|truth|, tiny) + RELATIVE_SCALE * max|truth|)

``tiny`` is the dtype's smallest normal number: below it an ulp is the smallest subnormal
(eps * tiny), so a subnormal result is judged in its own ulps (the floor was ``tiny`` itself, and
cpu-vector's float32 exp clamped at -88, giving 6e-39 for exp(-100) = 3.8e-44, passed).
The two terms over the whole array (SPREAD's and RELATIVE_SCALE's) count only where an output
element combines several values (a reduction, a contraction, a composite: ``couples``). In an
elementwise program every element depends on its own operands alone, and the perturbed runs
measure its conditioning element by element: there a share of the array's largest value, or of
the references' largest error, let any error of a small element pass beside a large one (an
``extreme`` array holds both: float32 exp(-100) 6e-39 instead of 3.8e-44 passed beside exp(1)).

``rounding`` is what the references' own rounding moves a well-conditioned element by (an ulp
or two a step); only their error beyond it measures conditioning. Multiplied by FACTOR, that
ulp had let a float32 add 16 ulps off pass, and a float32 exp 12 ulps off.

``perturbed`` are NumPy evaluations whose every operation rounds differently (each float result
one ulp up or down, sums in another order: forward, reversed or in four interleaved lanes;
matmuls as products then sums: ``references.perturbed_reference``): they measure each
element's conditioning where NumPy's single evaluation was close to the truth by luck (sin of a
huge argument, a sum whose small terms survive pairwise addition beside 2**52), and count
element by element only, never in the spread. Where a value no evaluation determines reaches
several output elements (a softmax row of undetermined logits), ``perturbed:coupled`` gives
each of them the largest spread the runs show among them (``run.undetermined``).

``steps`` is the program's error depth: the sum of each equation's depth as the primitive table
gives it (one step per elementwise op, plus log2 of each contraction length; composites declare
theirs). There is no free ``rtol`` to loosen:
FACTOR, ULPS_PER_STEP and RELATIVE_SCALE are fixed here and the tests pin that a 1e-4 relative
change of a single float32 element is caught. Integers and booleans must match exactly (NumPy's,
or, where a float decided them within its measured error, the other side: ``run.decisions``).
Non-finite values must match NumPy's pattern, a perturbed evaluation's or the truth's (nan
where nan, +-inf where +-inf).

``dtype`` is the least precise float dtype the program computes in, and ``eps`` is its own:
2**-23 (float32), 2**-52 (float64), 2**-10 (float16), 2**-7 (bfloat16, ``ml_dtypes.finfo``).
The 16-bit formats follow NumPy's and ml_dtypes' rule: every op is computed in float32 and
rounded once (at most half an ulp; float32's own error is 2**-13 of a float16 ulp and 2**-16 of a
bfloat16 one), float16 sums and matmuls accumulate in float32 and round at the end (NumPy's
pairwise sum and matmul loops), so a step is worth ``LOW_PRECISION_ULPS_PER_STEP`` = 1 ulp
instead of 4 (which covers float32's libm functions): one ulp of float16 on an exact op is
accepted, two are a finding. Where NumPy rounds more (a float16 sum along a strided axis and
every bfloat16 sum round at each addition), its own error against the truth widens the bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler import primitives
from compiler.primitives.rules import ArrayType
from strategies.model import finfo, is_float, is_low_precision

FACTOR = 8.0
SPREAD = 0.5  # a rounding error the references made anywhere is plausible everywhere
ULPS_PER_STEP = 4.0
LOW_PRECISION_ULPS_PER_STEP = 1.0  # float16, bfloat16: one rounding of a float32 result
RELATIVE_SCALE = 1e-3
#: What rounding alone moves a well-conditioned element by, per step, in a reference or a
#: perturbed run: a correctly rounded result (half an ulp; NumPy's float32 libm up to about two)
#: plus the perturbation's one ulp. Below it, a reference's error says nothing about the
#: element's conditioning (the floor already allows the backend's own rounding).
ROUNDING_ULPS_PER_STEP = 2.0


@dataclass(frozen=True)
class Verdict:
    """How one array compares with the truth; ``ok`` is the decision, the rest explains it."""

    ok: bool
    reason: str = ""
    max_error: float = 0.0  # largest |got - truth|
    max_ulps: float = 0.0  # the same in units of eps(dtype) * max(|truth|, tiny)
    worst_index: tuple[int, ...] = ()
    excess: float = 0.0  # largest error / allowed (> 1 means rejected)

    def __bool__(self) -> bool:
        return self.ok


def error_steps(program: Any) -> float:
    """The program's error depth: each equation's depth from its primitive's rule, summed. A
    float16 equation's accumulation (the part of its depth that grows with its extents: a
    sum's, a matmul's, a composite's rows) counts as float32 steps, which is where NumPy adds
    float16 up before rounding once: at float16's own, a sum of 256 float16 values was allowed
    9 steps, and a backend accumulating in 16 bits passed 11 of 12 sum sweeps (now 9)."""
    steps = 0.0
    for node in program.nodes:
        types = [ArrayType(t.shape, np.dtype(t.dtype)) for t in program.arg_types(node)]
        prim = primitives.get(node.op)
        depth = prim.depth(types, node.attrs)
        if types and all(t.dtype == np.float16 for t in types if is_float(t.dtype)):
            depth -= _accumulation(prim, types, node.attrs, depth) * (1.0 - FLOAT32_IN_FLOAT16)
        steps += depth
    return max(steps, 1.0)


#: A float32 rounding step in units of float16's: 2**-23 / 2**-10.
FLOAT32_IN_FLOAT16 = 2.0**-13


def _accumulation(prim: Any, types: list[ArrayType], attrs: Any, depth: float) -> float:
    """The part of ``depth`` that grows with the operands' extents: the depth less the depth
    of the same equation on extents of 1 (which keeps one step of each contraction: a
    contraction's depth is log2 of its length, at least 1)."""
    unit = [ArrayType((1,) * len(t.shape), t.dtype) for t in types]
    try:
        return max(depth - prim.depth(unit, attrs), 0.0)
    except Exception:  # noqa: BLE001 - a rule that needs its real extents: nothing taken off
        return 0.0


#: The kinds of primitive whose result elements each combine several operand elements.
COUPLING = ("reduction", "matmul", "composite")


#: Composites that contract (a matmul inside): see ``signs_settled``.
CONTRACTING = ("linear", "attention", "attend", "feedforward")


def signs_settled(program: Any) -> bool:
    """Are the signs of ``program``'s zero results NumPy's to match (``zero_signs``)? Not after a
    max or min reduction: NumPy's picks between -0.0 and 0.0 by the order of its reduction loop
    (a float32 max of [0.0, -0.0] rows was -0.0 in NumPy, 0.0 on every backend, and no
    perturbed run reorders an exact reduction). Nor after a float32 or float64 matmul: where
    every product is -0.0 (underflowed), NumPy's sign is its kernel's: a float32 (3, 2) @ (2, 2)
    is -0.0 (gemm sums from the first product), a (1, 2) @ (2, 1) 0.0 (from 0.0), as is ours
    (zero-filled). A float16 matmul is NumPy's own loop, which sums from 0.0 and whose products
    of halves are exact in its float accumulator: its zeros are 0.0 (``UNBLASSED``), so a
    kernel that starts from -0.0 is wrong there (where every product is -0.0)."""
    from ..run.references import UNBLASSED, exact_primitive

    for node in program.nodes:
        prim = primitives.get(node.op)
        if prim.kind == "reduction" and exact_primitive(prim):
            return False
        if prim.kind == "matmul" and node.type.dtype in UNBLASSED:
            continue
        if prim.kind == "matmul" or node.op in CONTRACTING:
            return False
    return True


def couples(program: Any) -> bool:
    """Does an output element of ``program`` combine several values (a reduction, a
    contraction, a composite)? Not where every node is elementwise, a layout or a selection:
    there each element's error is its own (``bound``'s ``coupled``)."""
    return any(primitives.get(node.op).kind in COUPLING for node in program.nodes)


def working_dtype(program: Any) -> np.dtype:
    """The least precise float dtype the program computes in: a float32 (or float16, bfloat16)
    result of an equation that rounds means its rounding reaches the output, even when NumPy
    promotes the result to float64. An input of a narrower dtype, or an exact view or selection
    of one, rounds nothing (its conversion to the wider dtype is exact): a float32 @ float64
    is computed and judged in float64 (judged in float32, a trace rule that made it a float32
    product, 1e-8 off, passed). A program with an integer or boolean output is judged exactly."""
    from ..run.references import exact_primitive

    output = np.dtype(program.output_type.dtype)
    if not is_float(output):
        return output
    floats = [
        np.dtype(node.type.dtype)
        for node in program.nodes
        if is_float(node.type.dtype) and not exact_primitive(primitives.get(node.op))
    ]
    return max([*floats, output], key=eps)


def exactly_rounded(program: Any) -> bool:
    """Does ``program`` have one right answer, NumPy's to the bit? Every equation is exact (a
    layout, a selection, a comparison, a maximum: ``references.exact_primitive``) or rounds its
    exact result once (``Primitive.rounding`` "correct": +, -, *, /, sqrt, casts), each in the
    dtype NumPy computes it in, which the compiler follows. No bound of the error model is
    small enough there: float32 ``a + b`` 3 ulps off, a bfloat16 cast rounding half up instead
    of to even (half an ulp from the truth, as NumPy's is) or a division by a reciprocal (an
    ulp) all pass it, and a float16 result one ulp off is within its floor."""
    return all(rounds_at_most_once(primitives.get(node.op)) for node in program.nodes)


def rounds_at_most_once(prim: Any) -> bool:
    """Is every float result of the table entry ``prim`` exact (``references.exact_primitive``)
    or its exact result rounded once (``Primitive.rounding`` "correct")?"""
    from ..run.references import exact_primitive

    return exact_primitive(prim) or prim.rounding == "correct"


def eps(dtype: np.dtype) -> float:
    """The dtype's machine epsilon (bfloat16's from ``ml_dtypes.finfo``); 0 for integers."""
    dtype = np.dtype(dtype)
    return float(finfo(dtype).eps) if is_float(dtype) else 0.0


def ulps_per_step(dtype: np.dtype) -> float:
    """What one rounding step may cost in ulps of ``dtype`` (see the module docstring)."""
    return LOW_PRECISION_ULPS_PER_STEP if is_low_precision(dtype) else ULPS_PER_STEP


def nonfinite_patterns(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The distinct non-finite patterns of ``arrays`` (one shape), stacked: what an exported
    script accepts, as ``compare`` does."""
    found = {p.tobytes(): p for p in (_nonfinite_pattern(a) for a in arrays)}
    return np.stack(list(found.values()))


def _nonfinite_pattern(a: np.ndarray) -> np.ndarray:
    """0 finite, 1 nan, 2 +inf, 3 -inf."""
    a = np.asarray(a, dtype=np.float64)
    pattern = np.zeros(a.shape, np.int8)
    pattern[np.isnan(a)] = 1
    pattern[np.isposinf(a)] = 2
    pattern[np.isneginf(a)] = 3
    return pattern


def bound(
    truth: np.ndarray,
    references: Sequence[np.ndarray],
    steps: float,
    dtype: np.dtype,
    errors: Sequence[np.ndarray] = (),
    finite: np.ndarray | None = None,
    local: Sequence[np.ndarray] = (),
    local_errors: Sequence[np.ndarray] = (),
    coupled: bool = True,
) -> np.ndarray:
    """The allowed ``|got - truth|`` of each element (meaningful where ``finite``, by default
    where the truth and every reference are finite): the formula of the module docstring.
    ``local`` are the perturbed evaluations (element by element only); ``local_errors`` such
    errors already measured against their own truth. An exported reproducer embeds it, so it
    fails exactly where ``compare`` does."""
    truth = np.asarray(truth, np.float64)
    refs = [np.asarray(r, np.float64) for r in references]
    if finite is None:
        finite = np.isfinite(truth)
        for r in refs:
            finite &= np.isfinite(r)
    reference_error = np.zeros(truth.shape)
    measured = []
    for r in refs:
        if r.shape == truth.shape:
            with np.errstate(invalid="ignore"):
                measured.append(np.abs(r - truth))
    measured += [np.asarray(e, np.float64) for e in errors if np.shape(e) == truth.shape]
    for e in measured:
        reference_error = np.maximum(reference_error, np.where(np.isfinite(e), e, 0.0))
    magnitude = np.abs(np.where(finite, truth, 0.0))
    scale = float(magnitude.max()) if magnitude.size else 0.0
    per_step = ulps_per_step(dtype)
    ulp_scale = np.maximum(magnitude, float(finfo(dtype).tiny))  # dtype: least precise computed in
    relative = RELATIVE_SCALE if coupled else 0.0
    floor = eps(dtype) * per_step * max(steps, 1.0) * (ulp_scale + relative * scale)
    conditioning = reference_error
    for p in local:
        p = np.asarray(p, np.float64)
        if p.shape == truth.shape:
            with np.errstate(invalid="ignore", over="ignore"):
                e = np.abs(p - truth)
            # A correct evaluation that overflows where the truth is finite: the element is
            # that ill-conditioned (float32 exp of a mean whose terms cancel, 5.3e36 - 5.3e36:
            # the runs gave 0 and inf, cpu-vector's order 1.0, against an allowed 4e-6 that
            # the run giving 0 set alone). Anything finite is a correct answer there.
            overflowed = np.where(np.isfinite(truth), np.inf, 0.0)
            conditioning = np.maximum(conditioning, np.where(np.isfinite(e), e, overflowed))
    for e in local_errors:
        e = np.asarray(e, np.float64)
        if e.shape == truth.shape:
            conditioning = np.maximum(conditioning, np.where(np.isfinite(e), e, 0.0))
    # Only what the references' errors show beyond their own rounding is conditioning: for
    # exp(x) on exact inputs NumPy's and a perturbed run's errors are an ulp or two, which
    # FACTOR made 8 to 16 ulps allowed, and a float32 exp 12 ulps off (a polynomial of too low
    # a degree) passed. Where rounding is amplified (cancellation, exp of a rounded argument),
    # the errors are far above it and the bound is as before.
    noise = eps(dtype) * ROUNDING_ULPS_PER_STEP * max(steps, 1.0) * magnitude
    conditioning = np.maximum(conditioning - noise, 0.0)
    # Errors near the float64 range (the extreme regime's values) may widen the bound to inf:
    # there the references themselves disagree with the truth by about that much.
    with np.errstate(over="ignore", invalid="ignore"):
        spread = SPREAD * float(reference_error.max(initial=0.0)) if coupled else 0.0
        return FACTOR * conditioning + spread + floor


def compare(
    got: np.ndarray,
    truth: np.ndarray,
    references: list[np.ndarray],
    steps: float = 1.0,
    dtype: np.dtype | None = None,
    errors: Sequence[np.ndarray] = (),
    local: Sequence[np.ndarray] = (),
    local_errors: Sequence[np.ndarray] = (),
    exact: bool = False,
    coupled: bool = True,
    signed_zeros: bool = False,
    numpy: np.ndarray | None = None,
    unbounded: np.ndarray | None = None,
) -> Verdict:
    """Judge ``got`` (a backend's output) against the float64 ``truth`` and the references.

    ``references`` are the other evaluations in the program's dtypes (NumPy, JAX); their errors
    against the truth widen the bound where the problem is ill-conditioned, and they define the
    expected non-finite pattern. ``errors`` are further reference errors, each measured against
    its own truth (a metamorphic relation's derived case): they widen the bound, never excuse a
    nan or inf. ``local`` are the perturbed evaluations: they widen the bound element by
    element only (``bound``); ``local_errors`` are perturbed errors measured against their own
    truth (element by element, never excusing a nan or inf). Integers and booleans must equal
    NumPy's, or a perturbed evaluation's at that element (where a float decided them: a
    comparison of nearly equal values, a cast of a value near an integer). ``exact`` (a program
    ``exactly_rounded``): every element must equal NumPy's (``references[0]``), nan where nan.
    ``coupled``: the program combines elements (``couples``), so the bound's terms over the
    whole array count. ``signed_zeros``: ``references[0]`` is NumPy's answer, whose zeros must
    keep their sign where it is settled (``zero_signs``). ``numpy``: NumPy's own answer, where
    an element equal to it, bit for bit, is right whatever the truth says (the compiler's
    semantics are NumPy's: a float16 ``2.0 ** x`` that overflows to inf before ``<= 1e10``
    flips the comparison in NumPy and in every dtype-faithful run, not in the truth).
    ``unbounded``: the float elements any value is right at, nan and inf included (reached by
    a value rounding leaves anywhere in a range holding zero: ``run.undetermined``).
    """
    got = np.asarray(got)
    dtype = np.dtype(dtype or got.dtype)
    if not is_float(got.dtype):
        dtype = got.dtype
    if got.shape != np.shape(truth):
        return Verdict(False, f"shape {got.shape} != {np.shape(truth)}")
    if not is_float(dtype):
        expected = np.asarray(references[0]) if references else np.asarray(truth)
        wrong = got != expected
        for p in () if exact else local:  # a decision no evaluation settles (``run.decisions``)
            # goes either way; in an ``exactly_rounded`` program every evaluation settles it
            if np.shape(p) == got.shape:
                wrong &= got != np.asarray(p)
        if np.any(wrong):
            index = tuple(int(i) for i in np.argwhere(wrong)[0])
            return Verdict(
                False, f"{int(wrong.sum())} integer elements differ", 1.0, 0.0, index, np.inf
            )
        return Verdict(True)
    truth = np.asarray(truth, np.float64)
    got64 = got.astype(np.float64)
    refs = [np.asarray(r, np.float64) for r in references]
    shaped = [np.asarray(p, np.float64) for p in local if np.shape(p) == got.shape]
    free = np.zeros(got.shape, bool)  # any value right there
    if unbounded is not None and np.shape(unbounded) == got.shape:
        free = np.asarray(unbounded, bool)
    if signed_zeros and refs and refs[0].shape == got.shape:
        signs = zero_signs(refs[0], shaped, exact)
        wrong = (got64 == 0) & (signs != 0) & (np.signbit(got64) != (signs == NEGATIVE_ZERO))
        wrong &= ~free
        if np.any(wrong):
            index = tuple(int(i) for i in np.argwhere(wrong)[0])
            return Verdict(
                False,
                f"zero of the other sign at {index}: got {got64[index]!r}, NumPy "
                f"{float(refs[0][index])!r} ({int(wrong.sum())} such elements)",
                0.0,
                0.0,
                index,
                np.inf,
            )
    if exact and refs and refs[0].shape == got.shape:
        return _exactly(got64, refs[0], dtype)
    # Non-finite values: the backend must reproduce what a dtype-faithful reference produces,
    # NumPy or JAX, or a perturbed evaluation (another correct rounding and order: a product
    # sum with +inf and -inf products is nan, inf under BLAS's fused multiply-adds).
    pattern = _nonfinite_pattern(got64)
    # The truth's own: an inf there is the exact value beyond the dtype's range, rounded (a
    # float64 dot of 2.8e306-sized terms whose products are -inf, -inf, +inf: NumPy nan, a BLAS
    # whose fused multiply-adds keep products exact -inf, the truth -7.9e612, so -inf).
    expected_patterns = [_nonfinite_pattern(r) for r in refs] + [_nonfinite_pattern(truth)]
    expected_patterns += [_nonfinite_pattern(p) for p in shaped]
    agrees = free.copy()
    for p in expected_patterns:
        agrees |= pattern == p
    if not np.all(agrees):
        index = tuple(int(i) for i in np.argwhere(~agrees)[0])
        return Verdict(
            False,
            f"non-finite mismatch at {index}: got {got64[index]!r}, references "
            f"{[float(r[index]) for r in refs]}",
            np.inf,
            np.inf,
            index,
            np.inf,
        )
    finite = (pattern == 0) & np.isfinite(truth) & ~free
    if not np.any(finite):
        return Verdict(True)
    judged = finite  # NumPy's own value is NumPy's semantics: never an error
    if numpy is not None and np.shape(numpy) == got.shape:
        judged = finite & (got64 != np.asarray(numpy, np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.where(finite, np.abs(got64 - truth), 0.0)
    allowed = bound(truth, refs, steps, dtype, errors, finite, local, local_errors, coupled)
    scale = float(np.abs(np.where(finite, truth, 0.0)).max())
    tiny = float(finfo(dtype).tiny)
    # An exact element is right whatever its bound (0 / 0 there was nan, and argmax's first nan
    # would have hidden a larger ratio elsewhere).
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(judged & (error > 0), error / allowed, 0.0)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.size else ()
    worst = tuple(int(i) for i in worst)
    max_error = float(error.max())
    ulps = max_error / (eps(dtype) * max(scale, tiny))
    excess = float(ratio[worst]) if ratio.size else 0.0
    if excess > 1.0:
        return Verdict(
            False,
            f"error {float(error[worst]):.3g} at {worst} exceeds allowed "
            f"{float(allowed[worst]):.3g} (got {got64[worst]!r}, truth {truth[worst]!r})",
            max_error,
            ulps,
            worst,
            excess,
        )
    return Verdict(True, "", max_error, ulps, worst, excess)


#: ``zero_signs``' codes: no sign asked, +0.0, -0.0.
ANY_SIGN, POSITIVE_ZERO, NEGATIVE_ZERO = 0, 1, 2


def zero_signs(numpy_out: Any, local: Sequence[np.ndarray] = (), exact: bool = False) -> np.ndarray:
    """Where NumPy's answer is a zero whose sign is settled, that sign (``POSITIVE_ZERO``,
    ``NEGATIVE_ZERO``; ``ANY_SIGN`` elsewhere): a backend's zero there must have it. IEEE 754
    gives each correctly rounded operation's zero one sign, and NumPy's maximum and minimum
    pick between -0.0 and 0.0 by their loops (float16 keeping the first operand, the others the
    second: a float16 maximum keeping the second survived 60 s sessions, since every error
    model judges -0.0 and 0.0 equal). Settled: every perturbed evaluation (``local``, another
    rounding and order) has a zero of the same sign there, and there is at least one, unless the
    program is ``exact`` (NumPy's answer the only right one); a sum in another order or a BLAS
    that starts from its first product is not a reason to name a sign."""
    numpy64 = np.asarray(numpy_out, np.float64)
    negative = np.signbit(numpy64)
    settled = numpy64 == 0
    if not exact:
        if not local:
            return np.zeros(numpy64.shape, np.int8)
        for p in local:
            p = np.asarray(p, np.float64)
            settled &= (p == 0) & (np.signbit(p) == negative)
    codes = np.where(negative, NEGATIVE_ZERO, POSITIVE_ZERO)
    return np.where(settled, codes, ANY_SIGN).astype(np.int8)


def _exactly(got: np.ndarray, expected: np.ndarray, dtype: np.dtype) -> Verdict:
    """``compare`` for an ``exactly_rounded`` program: every element NumPy's (nan where nan; a
    zero of either sign is a zero)."""
    with np.errstate(invalid="ignore"):
        differs = (got != expected) & ~(np.isnan(got) & np.isnan(expected))
    if not differs.any():
        return Verdict(True)
    index = tuple(int(i) for i in np.argwhere(differs)[0])
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.where(differs, np.abs(got - expected), 0.0)
    finite = error[np.isfinite(error)]
    max_error = float(finite.max()) if finite.size else np.inf
    scale = float(np.abs(np.where(np.isfinite(expected), expected, 0.0)).max(initial=0.0))
    ulps = max_error / (eps(dtype) * max(scale, float(finfo(dtype).tiny)))
    return Verdict(
        False,
        f"error {float(error[index]):.3g} at {index}, allowed 0: {int(differs.sum())} "
        f"elements differ from NumPy's, the only right answer (every operation is exact or "
        f"rounds once; got {got[index]!r}, NumPy {expected[index]!r})",
        max_error,
        ulps,
        index,
        np.inf,
    )
