"""Values no evaluation determines widen every output element they reach, by the largest spread
the perturbed runs show there (``run.undetermined``); elements they do not reach keep their
own bound, and a wrong answer far outside the spread is still a finding."""

from __future__ import annotations

import numpy as np
from planted_reproducer import exported_status

from harness.case import Case
from harness.oracles import tolerance
from harness.oracles.differential import reference_outputs, yardstick
from harness.run.references import references
from harness.run.undetermined import COUPLED
from strategies.model import ProgramBuilder


def _softmax_of_sines(rows: np.ndarray, seed: int = 0) -> Case:
    """``cos(softmax(sin(x * x) @ w))``: where ``x * x`` is ~1e12 in float32 (an ulp of 65536),
    its sine is anything in [-1, 1], and weights of a few hundred make each softmax row one-hot
    on whichever column the rounding favoured."""
    rng = np.random.default_rng(seed)
    b = ProgramBuilder()
    x, w = b.input(rows.shape, "float32"), b.input((rows.shape[1], 4), "float32")
    logits = b.node("matmul", b.node("sin", b.node("multiply", x, x)), w)
    program = b.build(b.node("cos", b.node("softmax", logits, axis=-1)))
    weights = rng.uniform(-300, 300, (rows.shape[1], 4)).astype(np.float32)
    return Case(program, [rows.astype(np.float32), weights], ("cpu-loops",))


def _judge(refs: dict, case: Case, got: np.ndarray, coupled: bool = True) -> tolerance.Verdict:
    shape = refs["numpy"].output.shape
    local = [
        r.output
        for name, r in refs.items()
        if name.startswith("perturbed:") and r.ok and (coupled or name != COUPLED)
    ]
    return tolerance.compare(
        np.asarray(got, np.float32),
        yardstick(refs),
        reference_outputs(refs, shape),
        tolerance.error_steps(case.program),
        tolerance.working_dtype(case.program),
        local=local,
    )


def _other_winner(numpy_row: np.ndarray) -> np.ndarray:
    """A one-hot row (through cos) whose winner is a column NumPy's row did not pick."""
    column = (int(np.argmin(numpy_row)) + 1) % numpy_row.size
    return np.cos(np.eye(numpy_row.size, dtype=np.float32)[column])


def test_a_softmax_row_of_undetermined_logits_may_pick_any_winner() -> None:
    rng = np.random.default_rng(1)
    rejected_before = 0
    for seed in range(6):
        case = _softmax_of_sines(rng.uniform(3e5, 1e6, (3, 4)), seed)
        refs = references(case, use_jax=False)
        assert COUPLED in refs
        numpy = refs["numpy"].output
        for row in range(3):
            got = numpy.copy()
            got[row] = _other_winner(numpy[row])
            assert _judge(refs, case, got)
            rejected_before += not _judge(refs, case, got, coupled=False)
            got[row, 0] = 10.0  # cos of anything is no 10
            assert not _judge(refs, case, got)
    # Element by element, the perturbed runs missed some of those winners: the false finding.
    assert rejected_before > 0


def test_rows_an_undetermined_value_does_not_reach_keep_their_own_bound() -> None:
    rows = np.array([[4e5, 7e5, 9e5, 5e5], [0.3, -0.2, 0.1, 0.4]])
    case = _softmax_of_sines(rows)
    refs = references(case, use_jax=False)
    assert COUPLED in refs
    numpy, coupled = refs["numpy"].output, refs[COUPLED].output
    assert np.all(coupled[0] != numpy[0]) and np.array_equal(coupled[1], numpy[1])

    def allowed(names: list[str]) -> np.ndarray:
        local = [refs[n].output for n in names]
        truth = yardstick(refs)
        steps, dtype = tolerance.error_steps(case.program), tolerance.working_dtype(case.program)
        return tolerance.bound(truth, [numpy], steps, dtype, local=local)

    runs = [n for n in refs if n.startswith("perturbed:") and n != COUPLED]
    without, with_coupled = allowed(runs), allowed([*runs, COUPLED])
    assert np.array_equal(with_coupled[1], without[1])
    assert np.all(with_coupled[0] >= without[0]) and np.any(with_coupled[0] > without[0])
    got = numpy.copy()
    got[0] = _other_winner(numpy[0])
    assert _judge(refs, case, got)


def test_well_conditioned_programs_have_no_undetermined_value() -> None:
    case = _softmax_of_sines(np.array([[0.3, -0.2, 0.1, 0.4], [1.5, 0.5, -1.0, 2.0]]))
    refs = references(case, use_jax=False)
    assert COUPLED not in refs


def _sine_plus(decided: bool) -> Case:
    """``sin(y * y) + z`` with ``y * y`` ~5e11 (its sine undetermined), ``z`` either ``x`` or
    ``float32(x + 0 == x)``."""
    b = ProgramBuilder()
    x, y = b.input((4,), "float32"), b.input((4,), "float32")
    z = x
    if decided:
        z = b.node("astype", b.node("equal", b.node("add", x, 0.0), x), dtype="float32")
    program = b.build(b.node("add", z, b.node("sin", b.node("multiply", y, y))))
    inputs = [np.array([1.0, 2.0, 3.0, 4.0], np.float32), np.full(4, 7e5, np.float32)]
    return Case(program, inputs, ("cpu-loops",))


def test_a_decision_the_runs_took_differently_makes_nothing_undetermined() -> None:
    """The perturbed runs move exact results too (``x + 0``), so they flip a tie the truth
    computes exactly; the output's spread is then the flip's, which ``run.decisions`` judges,
    not a rounding's to spread over the coupled elements."""
    assert COUPLED in references(_sine_plus(decided=False), use_jax=False)
    assert COUPLED not in references(_sine_plus(decided=True), use_jax=False)


def test_what_a_value_rounding_puts_on_both_sides_of_zero_reaches_may_be_anything() -> None:
    """``3.0 / mean(x)``, x holding 2.8e306, -2.8e306 and 2**52: 2e-14 in NumPy's pairwise
    order, inf where 2**52 is absorbed before the two cancel (cpu-vector's vectorized sum, a
    60 s session's false finding), about +-1e-289 in the runs. The row's mean is anything in a
    range holding zero, so its quotient may be inf or nan; the other row's stays judged."""
    from harness.oracles.base import Judgement, Observation
    from harness.oracles.differential import Differential
    from harness.run.task import BackendResult
    from harness.verdict import judge_output

    big = 2.8088955232e306
    row = np.array([1.0, -1.0, 709.0, -744.0, big, -big, 0.0, 2.0**52, 3.0, -2.0] * 3 + [4.0])
    calm = np.linspace(1.0, 2.0, row.size)
    b = ProgramBuilder()
    x = b.input((2, row.size), "float64")
    program = b.build(b.node("divide", 3.0, b.node("mean", x, axis=-1, keepdims=True)))
    case = Case(program, [np.stack([row, calm])], ("cpu-vector",))
    refs = references(case, use_jax=False)
    assert refs[COUPLED].unbounded.tolist() == [[True], [False]]
    numpy = refs["numpy"].output

    def findings(got: np.ndarray) -> list:
        result = BackendResult("cpu-vector", "ok", output=got)
        return Differential().judge(Observation(case, [result], refs, Judgement()), [])

    # The reproducers judge alike: ``verdict.judge_output`` and the exported script.
    exported = exported_status(case)

    def agreed(got: np.ndarray) -> bool:
        right = findings(got) == []
        assert judge_output(case, got, use_jax=False, backend="cpu-vector").ok == right
        assert (exported(got) == 0) == right
        return right

    assert agreed(numpy)
    for anything in (np.inf, -np.inf, np.nan, 1e300, -3.0, -0.0):
        assert agreed(np.array([[anything], numpy[1]])), anything
    assert not agreed(np.array([numpy[0], [np.inf]]))
    assert not agreed(np.array([numpy[0], numpy[1] * 1.001]))


def _cancelling_matmul(outer: str) -> Case:
    """``outer(x @ y.T)``, the first row of ``y`` multiplying 2.8e306, -2.8e306 and 2**52 of
    ``x`` by 8, 8 and 2**31 - 1: 9.7e24 in NumPy's order, 0 where 2**52 is absorbed before the
    two cancel, about +-3e291 in the runs; the second row's products are ordinary."""
    big = 2.808895523222368e306
    b = ProgramBuilder()
    x, y = b.input((4,), "float64"), b.input((2, 4), "int32")
    product = b.node("matmul", x, b.node("permute_dims", y, axes=(1, 0)))
    program = b.build(b.node(outer, product))
    inputs = [
        np.array([big, -big, 2.0**52, 3.0]),
        np.array([[8, 8, 2**31 - 1, 0], [2, 1, 3, 4]], np.int32),
    ]
    return Case(program, inputs, ("graph-numpy",))


def test_a_value_whose_sign_the_runs_leave_open_may_be_zero_and_what_zero_makes_is_free() -> None:
    """A README session (60 s) reported graph-numpy's -inf for ``log(x @ y.T)`` where NumPy
    has 57.5: the product's runs straddle zero, yet by the node's own scale (its other elements
    are as large) it is not undetermined. Taken through zero the log is -inf, so that element
    is free; the other stays judged. Where zero makes nothing infinite (a negation), nothing is
    freed: the runs' spread bounds the answer as before."""
    case = _cancelling_matmul("log")
    refs = references(case, use_jax=False)
    assert refs[COUPLED].unbounded.tolist() == [True, False]
    numpy = refs["numpy"].output
    assert np.isfinite(numpy).all()
    for anything in (-np.inf, np.nan, 671.3):
        assert _judge64(refs, case, np.array([anything, numpy[1]])).ok, anything
    assert not _judge64(refs, case, np.array([numpy[0], numpy[1] + 1.0])).ok

    negated = references(_cancelling_matmul("negative"), use_jax=False)
    assert COUPLED not in negated or negated[COUPLED].unbounded is None


def _judge64(refs: dict, case: Case, got: np.ndarray) -> tolerance.Verdict:
    from harness.oracles.differential import against_references

    return against_references(case, refs, np.asarray(got, np.float64), "graph-numpy")
